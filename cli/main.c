/* main.c — the `zeroc` command: sets up MPI through the communicator, dispatches the
 * subcommand, and turns errors into messages and exit codes (the library never prints). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
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

int cli_fail(zc_comm *comm, const zc_err *err, bool collective)
{
    int rank = zc_comm_rank(comm);
    if (rank == 0 || !collective) { /* a shared error names the rank it came from itself */
        if (zc_comm_size(comm) > 1 && !collective)
            fprintf(stderr, "zeroc: error (rank %d): %s\n", rank, err->msg);
        else
            fprintf(stderr, "zeroc: error: %s\n", err->msg);
        fflush(stderr);
    }
    /* one rank alone has no one waiting for it: it returns like a collective error, and MPI's
     * abort message does not bury the one line that says what went wrong */
    if (!collective && zc_comm_size(comm) > 1)
        zc_comm_abort(comm, 1);
    return 1;
}

void cli_relaunch_under_mpirun(int argc, char **argv, int ranks)
{
    /* any of these means an MPI launcher started us */
    const char *launched[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"};
    for (size_t i = 0; i < sizeof launched / sizeof *launched; i++)
        if (getenv(launched[i]))
            return;
    for (int i = 2; i < argc; i++) /* help needs no ranks */
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            return;
    for (int i = 2; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--ranks"))
            ranks = atoi(argv[i + 1]);
    if (ranks <= 1)
        return;
    char np[16];
    snprintf(np, sizeof np, "%d", ranks);
    char **av = calloc((size_t)argc + 16, sizeof *av);
    int k = 0;
    const char *pre[] = {"mpirun",    "--oversubscribe",
                         "--bind-to", "none",
                         "-np",       np,
                         "-x",        "OPENBLAS_NUM_THREADS=1",
                         "-x",        "OMP_NUM_THREADS=1",
                         "-x",        "OMP_WAIT_POLICY=passive"};
    for (size_t i = 0; i < sizeof pre / sizeof *pre; i++)
        av[k++] = (char *)pre[i];
    for (int i = 0; i < argc; i++)
        av[k++] = argv[i];
    if (geteuid() == 0) { /* OpenMPI refuses root unless told; the user ran us as root */
        setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
        setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
    }
    fprintf(stderr, "zeroc: running on %d ranks: mpirun -np %d %s ...\n", ranks, ranks, argv[0]);
    execvp("mpirun", av);
    fprintf(stderr, "zeroc: cannot run mpirun (%m); run: mpirun -np %d %s %s ...\n", ranks, argv[0],
            argv[1]);
    exit(1);
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage();
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "plot")) /* reads reports, writes an SVG: no MPI */
        return cmd_plot(argc, argv);
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
    } else if (!strcmp(argv[1], "prepare")) {
        rc = cmd_prepare(comm, argc, argv);
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
