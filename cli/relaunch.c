/* relaunch.c — what an MPI launcher told this process: whether one started it and the rank it
 * gave; and re-executing a command under mpirun when none did (`zeroc analyze` runs on several
 * ranks by default), after checking its flags here. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/relaunch.h"

int cli_launcher_rank(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
        const char *v = getenv(vars[i]);
        char *end;
        long r = v && *v ? strtol(v, &end, 10) : -1;
        if (v && *v && !*end && r >= 0 && r <= INT32_MAX)
            return (int)r;
    }
    return 0;
}

bool cli_launched(void)
{
    /* read once, first from main: a singleton's MPI_Init sets some of these itself */
    static int known = -1;
    if (known < 0) {
        /* any of these means an MPI launcher started us */
        const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"};
        known = 0;
        for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
            if (getenv(vars[i]))
                known = 1;
    }
    return known;
}

/* true when an MPI launcher started this process, or the user asked only for help */
static bool already_launched_or_help(int argc, char **argv)
{
    if (cli_launched())
        return true;
    for (int i = 2; i < argc; i++) /* help needs no ranks */
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            return true;
    return false;
}

void cli_relaunch_under_mpirun(int argc, char **argv, cli_relaunch_check check)
{
    if (already_launched_or_help(argc, argv))
        return;
    int ranks = 0;
    zc_err err = {0};
    if (check(argc, argv, &ranks, &err)) { /* one message, before any rank starts */
        fprintf(stderr, "zeroc: error: %s\n", err.msg);
        exit(1);
    }
    if (ranks <= 1)
        return;
    char np[16];
    snprintf(np, sizeof np, "%d", ranks);
    const char *pre[] = {"mpirun",    "--oversubscribe",
                         "--bind-to", "none",
                         "-np",       np,
                         "-x",        "OPENBLAS_NUM_THREADS=1",
                         "-x",        "OMP_NUM_THREADS=1"};
    size_t npre = sizeof pre / sizeof *pre;
    char **av = calloc(npre + (size_t)argc + 1, sizeof *av); /* NULL-terminated */
    if (!av) {
        fprintf(stderr, "zeroc: out of memory; run: mpirun -np %d %s %s ...\n", ranks, argv[0],
                argv[1]);
        exit(1);
    }
    size_t k = 0;
    for (size_t i = 0; i < npre; i++)
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
    free(av);
    exit(1);
}
