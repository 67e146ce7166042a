/* threads.h — compute threads per rank and denormal handling (threads.c says why). */
#ifndef ZEROC_CLI_THREADS_H
#define ZEROC_CLI_THREADS_H

#include <stddef.h>

#include "zeroc/comm.h"

/* Before anything else in main: with ZEROC_GEMM=portable and no OMP_WAIT_POLICY (or
 * GOMP_SPINCOUNT) in the environment, re-executes this program with OMP_WAIT_POLICY=passive
 * (threads.c says why); otherwise returns at once. */
void cli_threads_wait_policy(char **argv);

/* Sets this rank's OpenMP and OpenBLAS thread counts (unless the environment does) and FTZ/DAZ
 * on the compute threads; describes the choice into desc; returns the thread count. */
int cli_threads_setup(const zc_comm *comm, char *desc, size_t cap);

#endif
