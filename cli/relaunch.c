/* relaunch.c — what an MPI launcher told this process: whether one started it and the rank it
 * gave; and re-executing a command under mpirun when none did (`zeroc analyze` runs on several
 * ranks by default), after checking its flags here.
 *
 * Slurm: `srun --mpi=pmix` starts each task with PMIx's variables (PMIX_RANK), and MPI_Init joins
 * the tasks into one world, as under mpirun. srun without an MPI plugin (its default, MpiDefault=
 * none) starts tasks that only know SLURM_PROCID: Open MPI then stops in MPI_Init with a
 * paragraph about rebuilding it, and an MPI that made each a singleton would run N separate
 * 1-rank trainings writing the same files. zeroc refuses that before MPI_Init, naming the flag. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/relaunch.h"

int cli_launcher_rank(void)
{
    /* SLURM_PROCID last: srun's task number, the rank when srun ran a one-process command */
    static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK",
                                       "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
        const char *v = getenv(vars[i]);
        char *end;
        long r = v && *v ? strtol(v, &end, 10) : -1;
        if (v && *v && !*end && r >= 0 && r <= INT32_MAX)
            return (int)r;
    }
    return 0;
}

/* read once, first from main: a singleton's MPI_Init sets some of these itself */
static int known = -1;   /* an MPI launcher started us */
static bool srun_task;   /* srun started us as a task of a job step (SLURM_STEP_ID) */
static bool under_orted; /* Open MPI's mpirun (or its daemons) started us */

static void read_launcher(void)
{
    if (known >= 0)
        return;
    /* any of these means an MPI launcher started us */
    const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"};
    known = 0;
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
        if (getenv(vars[i]))
            known = 1;
    /* a batch script's own process has SLURM_PROCID but no step: a singleton there works */
    srun_task = getenv("SLURM_STEP_ID") && getenv("SLURM_PROCID");
    under_orted = getenv("OMPI_COMM_WORLD_SIZE") != NULL;
}

bool cli_launched(void)
{
    read_launcher();
    return known;
}

bool cli_srun_direct(void)
{
    read_launcher();
    return srun_task && !under_orted;
}

/* A non-negative integer environment variable, -1 when unset or not one. */
static long env_long(const char *name)
{
    const char *v = getenv(name);
    char *end;
    long n = v && *v ? strtol(v, &end, 10) : -1;
    return v && *v && !*end && n >= 0 ? n : -1;
}

zc_status cli_srun_check(zc_err *err)
{
    read_launcher();
    if (!srun_task || known)
        return ZC_OK;
    long tasks = env_long("SLURM_STEP_NUM_TASKS");
    if (tasks < 0)
        tasks = env_long("SLURM_NTASKS");
    char n[64] = "";
    if (tasks > 0)
        snprintf(n, sizeof n, " (task %ld of %ld)", env_long("SLURM_PROCID"), tasks);
    return zc_err_set(err, ZC_EINVAL,
                      "srun started this process%s without an MPI plugin, so its tasks cannot form "
                      "one run (each would train alone and write the same files); run srun "
                      "--mpi=pmix zeroc ... (or export SLURM_MPI_TYPE=pmix, or set MpiDefault=pmix "
                      "in slurm.conf; `srun --mpi=list` names the plugins this Slurm has)",
                      n);
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
