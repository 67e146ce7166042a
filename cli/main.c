/* main.c — the `zeroc` command: sets up MPI through the communicator, dispatches the
 * subcommand, and turns errors into messages and exit codes (the library never prints). */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/relaunch.h"
#include "cli/threads.h"
#include "zeroc/simd.h"

static void usage(void)
{
    printf("usage: zeroc <command> [flags]\n\n"
           "commands:\n"
           "  train    train a model with ZeRO stage 0-3 (zeroc train --help)\n"
           "  prepare  turn text files into llm.c token files, byte-level or GPT-2 BPE "
           "(zeroc prepare --help)\n"
           "  sample   generate text from an llm.c GPT-2 checkpoint (zeroc sample --help)\n"
           "  estimate per-rank memory and communication of each stage (zeroc estimate --help)\n"
           "  analyze  measure every stage's memory per rank on real ranks (zeroc analyze --help)\n"
           "  ckpt     inspect, verify or export a sharded checkpoint (zeroc ckpt --help)\n"
           "  plot       draw training reports (loss, tokens/s, memory per rank) as SVG\n"
           "  tokenize   text to GPT-2 BPE token ids (zeroc tokenize --help)\n"
           "  detokenize GPT-2 BPE token ids to text (zeroc detokenize --help)\n\n"
           "Run on N ranks with: mpirun -np N zeroc train ...\n");
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage();
        return argc < 2 ? 2 : 0;
    }
    cli_threads_wait_policy(argv);
    if (!strcmp(argv[1], "plot")) /* reads reports, writes an SVG: no MPI */
        return cmd_plot(argc, argv);
    if (!strcmp(argv[1], "prepare")) /* one process: no MPI (thousands of file names) */
        return cmd_prepare(argc, argv);
    if (!strcmp(argv[1], "tokenize")) /* scripts' tools: no MPI */
        return cmd_tokenize(argc, argv);
    if (!strcmp(argv[1], "detokenize"))
        return cmd_detokenize(argc, argv);
    if (!strcmp(argv[1], "analyze"))
        cli_relaunch_under_mpirun(argc, argv, 4);
    zc_comm *comm;
    zc_err err = {0};
    if (zc_comm_init(&comm, &argc, &argv, &err)) {
        fprintf(stderr, "zeroc: error: %s\n", err.msg);
        return 1;
    }
    char threads[160];
    cli_threads_setup(comm, threads, sizeof threads);
    if (zc_comm_rank(comm) == 0 && !strcmp(argv[1], "train"))
        printf("threads: %s; elementwise kernels: %s\n", threads, zc_simd_name(zc_simd_level()));
    int rc;
    if (!strcmp(argv[1], "train")) {
        rc = cmd_train(comm, argc, argv);
    } else if (!strcmp(argv[1], "sample")) {
        rc = cmd_sample(comm, argc, argv);
    } else if (!strcmp(argv[1], "estimate")) {
        rc = cmd_estimate(comm, argc, argv);
    } else if (!strcmp(argv[1], "analyze")) {
        rc = cmd_analyze(comm, argc, argv);
    } else if (!strcmp(argv[1], "ckpt")) {
        rc = cmd_ckpt(comm, argc, argv);
    } else {
        if (zc_comm_rank(comm) == 0)
            fprintf(stderr, "zeroc: error: unknown command '%s' (try: zeroc --help)\n", argv[1]);
        rc = 2;
    }
    zc_comm_finalize(comm);
    return rc;
}
