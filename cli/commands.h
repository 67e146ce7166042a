/* commands.h — the zeroc subcommands, and how they end on an error. */
#ifndef ZEROC_CLI_COMMANDS_H
#define ZEROC_CLI_COMMANDS_H

#include <stdbool.h>

#include "zeroc/comm.h"
#include "zeroc/status.h"

int cmd_train(zc_comm *comm, int argc, char **argv);
int cmd_prepare(zc_comm *comm, int argc, char **argv);
int cmd_sample(zc_comm *comm, int argc, char **argv);
int cmd_estimate(zc_comm *comm, int argc, char **argv);
int cmd_analyze(zc_comm *comm, int argc, char **argv);
int cmd_ckpt(zc_comm *comm, int argc, char **argv);
int cmd_plot(int argc, char **argv); /* no MPI: reads reports, writes an SVG */
/* The tokenizer commands run without MPI (cli/tokenize.c). */
int cmd_tokenize(int argc, char **argv);
int cmd_detokenize(int argc, char **argv);
/* Started without an MPI launcher, re-executes this command under mpirun with the --ranks
 * value of argv (default `ranks`); returns only if it does not (already launched, or 1 rank). */
void cli_relaunch_under_mpirun(int argc, char **argv, int ranks);

/* Prints err (rank 0, or every rank when the error is not known to be shared) and returns the
 * exit code. `collective`: every rank hit the same error, so they can all return and finalise;
 * otherwise the other ranks may be waiting in a collective and the job is aborted. */
int cli_fail(zc_comm *comm, const zc_err *err, bool collective);

#endif
