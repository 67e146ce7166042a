/* train_args.h — `zeroc train`'s command line and config file, read and checked before anything
 * is built. */
#ifndef ZEROC_CLI_TRAIN_ARGS_H
#define ZEROC_CLI_TRAIN_ARGS_H

#include <stdbool.h>

#include "cli/train_opts.h"
#include "zeroc/comm.h"
#include "zeroc/config.h"
#include "zeroc/status.h"

/* Collective: parses argv, loads --config, applies the flags over it and resolves the batch
 * and the schedule; refuses flags the run would ignore and outputs it could not write (rank 0
 * probes them; every rank learns the verdict). Accepted, rank 0 prints where the config file
 * runs otherwise than DeepSpeed would run it (and DeepSpeed's own warnings about it). With
 * --help, prints the usage on rank 0, sets *helped and returns ZC_OK. An error is every rank's. */
zc_status train_args_read(zc_comm *comm, int argc, char **argv, train_opts *o, zc_config *cfg,
                          bool *helped, zc_err *err);

#endif
