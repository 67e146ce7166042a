/* threads.h — compute threads per rank and denormal handling (threads.c says why). */
#ifndef ZEROC_CLI_THREADS_H
#define ZEROC_CLI_THREADS_H

#include <stddef.h>

#include "zeroc/comm.h"

/* Before anything else in main: with ZEROC_GEMM=portable and no OMP_WAIT_POLICY (or
 * GOMP_SPINCOUNT) in the environment, re-executes this program with OMP_WAIT_POLICY=passive
 * (threads.c says why); otherwise returns at once. */
void cli_threads_wait_policy(char **argv);

/* Sets this rank's OpenMP and OpenBLAS thread counts — each library's to its variable when that
 * holds a valid count, else to the rank's share of its CPUs — and FTZ/DAZ on the compute
 * threads; describes where each count came from (and any value ignored) into desc; returns
 * OpenMP's count. Collective over MPI_COMM_WORLD (the host's ranks gather their CPU masks). */
int cli_threads_setup(const zc_comm *comm, char *desc, size_t cap);

#endif
