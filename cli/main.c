/* main.c — the `zeroc` command: sets up MPI through the communicator, dispatches the
 * subcommand, and turns errors into messages and exit codes (the library never prints). */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"

static void usage(void)
{
    printf("usage: zeroc <command> [flags]\n\n"
           "commands:\n"
           "  train    train a model with ZeRO stage 0-3 (zeroc train --help)\n"
           "  prepare  turn text files into byte-level llm.c token files (zeroc prepare --help)\n"
           "  sample   generate text from an llm.c GPT-2 checkpoint (zeroc sample --help)\n"
           "  estimate per-rank memory and communication of each stage (zeroc estimate --help)\n\n"
           "Run on N ranks with: mpirun -np N zeroc train ...\n");
}

int cli_fail(zc_comm *comm, const zc_err *err, bool collective)
{
    int rank = zc_comm_rank(comm);
    if (rank == 0 || !collective) {
        if (zc_comm_size(comm) > 1)
            fprintf(stderr, "zeroc: error (rank %d): %s\n", rank, err->msg);
        else
            fprintf(stderr, "zeroc: error: %s\n", err->msg);
        fflush(stderr);
    }
    if (!collective)
        zc_comm_abort(comm, 1);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage();
        return argc < 2 ? 2 : 0;
    }
    zc_comm *comm;
    zc_err err = {0};
    if (zc_comm_init(&comm, &argc, &argv, &err)) {
        fprintf(stderr, "zeroc: error: %s\n", err.msg);
        return 1;
    }
    int rc;
    if (!strcmp(argv[1], "train")) {
        rc = cmd_train(comm, argc, argv);
    } else if (!strcmp(argv[1], "prepare")) {
        rc = cmd_prepare(comm, argc, argv);
    } else if (!strcmp(argv[1], "sample")) {
        rc = cmd_sample(comm, argc, argv);
    } else if (!strcmp(argv[1], "estimate")) {
        rc = cmd_estimate(comm, argc, argv);
    } else {
        if (zc_comm_rank(comm) == 0)
            fprintf(stderr, "zeroc: error: unknown command '%s' (try: zeroc --help)\n", argv[1]);
        rc = 2;
    }
    zc_comm_finalize(comm);
    return rc;
}
