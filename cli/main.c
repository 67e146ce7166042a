/* main.c — the `zeroc` command: dispatches the subcommand (or prints the usage, or the version
 * with `--version`), setting up MPI through the communicator for those that run on ranks (train,
 * sample, analyze; the others run in one process), and turns errors into messages and exit
 * codes (the library never prints): 0 on success, 1 on any error (a refused flag or value
 * included, and standard output that could not be written), 2 when no command or an unknown one
 * is given; a training run stopped by a signal after its checkpoint exits with 128 + the signal
 * (cli/train.c). */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/fail.h"
#include "cli/kernel_env.h"
#include "cli/relaunch.h"
#include "cli/stop_signal.h"
#include "cli/threads.h"
#include "zeroc/checkpoint.h"
#include "zeroc/simd.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: zeroc <command> [flags]\n\n"
               "commands:\n"
               "  train      train a model with ZeRO stage 0-3 (zeroc train --help)\n"
               "  prepare    turn text files into llm.c token files, byte-level or GPT-2 BPE "
               "(zeroc prepare --help)\n"
               "  sample     generate text from an llm.c GPT-2 checkpoint (zeroc sample --help)\n"
               "  estimate   per-rank memory and communication of each stage "
               "(zeroc estimate --help)\n"
               "  analyze    measure every stage's memory per rank on real ranks "
               "(zeroc analyze --help)\n"
               "  ckpt       inspect, verify or export a sharded checkpoint (zeroc ckpt --help)\n"
               "  plot       draw training reports (loss, tokens/s, memory per rank) as SVG "
               "(zeroc plot --help)\n"
               "  tokenize   text to GPT-2 BPE token ids (zeroc tokenize --help)\n"
               "  detokenize GPT-2 BPE token ids to text (zeroc detokenize --help)\n\n"
               "Run on N ranks with: mpirun -np N zeroc train ...\n"
               "zeroc --version prints the version (checkpoints record the one that wrote "
               "them).\n"
               "Exit codes: 0 success, 1 any error (a refused flag or value too), 2 no or an "
               "unknown command.\n");
}

static bool wants_help(int argc, char **argv)
{
    for (int i = 2; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            return true;
    return false;
}

/* The command's exit code. */
static int run(int argc, char **argv)
{
    cli_threads_wait_policy(argv);
    if (!strcmp(argv[1], "plot")) /* reads reports, writes an SVG: no MPI */
        return cmd_plot(argc, argv);
    if (!strcmp(argv[1], "estimate")) /* a calculation: no MPI (its start-up is most of the time) */
        return cmd_estimate(argc, argv);
    if (!strcmp(argv[1], "ckpt")) /* reads and writes files: no MPI */
        return cmd_ckpt(argc, argv);
    if (!strcmp(argv[1], "prepare")) /* one process: no MPI (thousands of file names) */
        return cmd_prepare(argc, argv);
    if (!strcmp(argv[1], "tokenize")) /* scripts' tools: no MPI */
        return cmd_tokenize(argc, argv);
    if (!strcmp(argv[1], "detokenize"))
        return cmd_detokenize(argc, argv);
    static const char *const mpi_commands[] = {"train", "sample", "analyze"};
    bool known = false;
    for (size_t i = 0; i < sizeof mpi_commands / sizeof *mpi_commands; i++)
        known |= !strcmp(argv[1], mpi_commands[i]);
    if (!known) {
        fprintf(stderr, "zeroc: error: unknown command '%s' (try: zeroc --help)\n", argv[1]);
        return 2;
    }
    zc_err err = {0};
    if (cli_kernel_env_check(&err)) { /* before any rank starts: a typo ran the defaults */
        fprintf(stderr, "zeroc: error: %s\n", err.msg);
        return 1;
    }
    /* srun's tasks with no MPI plugin: not one world (analyze would start an mpirun in each);
     * task 0 says so */
    if (!wants_help(argc, argv) && cli_srun_check(&err)) {
        if (cli_launcher_rank() == 0)
            fprintf(stderr, "zeroc: error: %s\n", err.msg);
        return 1;
    }
    if (!strcmp(argv[1], "analyze")) /* its flags are checked here, before any rank starts */
        cli_relaunch_under_mpirun(argc, argv, cli_analyze_check);
    zc_comm *comm;
    if (zc_comm_init(&comm, &argc, &argv, &err)) {
        fprintf(stderr, "zeroc: error: %s\n", err.msg);
        return 1;
    }
    char threads[512];
    cli_threads_setup(comm, threads, sizeof threads);
    if (zc_comm_rank(comm) == 0 && !strcmp(argv[1], "train") && !wants_help(argc, argv))
        printf("threads: %s; elementwise kernels: %s\n", threads, zc_simd_name(zc_simd_level()));
    int rc = !strcmp(argv[1], "train")    ? cmd_train(comm, argc, argv)
             : !strcmp(argv[1], "sample") ? cmd_sample(comm, argc, argv)
                                          : cmd_analyze(comm, argc, argv);
    zc_comm_finalize(comm);
    return rc;
}

int main(int argc, char **argv)
{
    cli_std_streams_guard();        /* before anything opens a file */
    cli_signals_ignore_file_size(); /* a write past `ulimit -f` fails with EFBIG, not a kill */
    cli_launched();                 /* what the launcher said, before MPI_Init adds to it */
    if (argc < 2) {                 /* a usage error: the usage goes where errors go */
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(stdout);
        return cli_stdout_exit(0);
    }
    if (!strcmp(argv[1], "--version")) {
        printf("zeroc %s\n", zc_version());
        return cli_stdout_exit(0);
    }
    return cli_stdout_exit(run(argc, argv));
}
