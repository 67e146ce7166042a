/* relaunch.h — what an MPI launcher told this process (the rank it gave), and a command started
 * without one that checks its flags, then re-executes itself under mpirun. */
#ifndef ZEROC_CLI_RELAUNCH_H
#define ZEROC_CLI_RELAUNCH_H

#include <stdbool.h>

#include "zeroc/status.h"

/* Reads and checks a command's flags (argv as main has it) before any rank starts, giving the
 * ranks to run on; ZC_EINVAL (or the error of a file its flags name) when one is refused. */
typedef zc_status (*cli_relaunch_check)(int argc, char **argv, int *ranks, zc_err *err);

/* Started without an MPI launcher and without --help: checks the flags with `check` — a refusal
 * is printed once and the process exits 1, before mpirun starts ranks that would each refuse
 * them under its abort banner — then re-executes this command under mpirun on the ranks the
 * check gives. Returns when already launched, for --help, or on 1 rank (the command then runs
 * in this process, a world of 1). */
void cli_relaunch_under_mpirun(int argc, char **argv, cli_relaunch_check check);

/* The rank an MPI launcher (Open MPI, PMIx, MPICH/Hydra, else srun's SLURM_PROCID) gave this
 * process, 0 when none did:
 * the one-process commands (prepare, estimate, ckpt) run without MPI, and under `mpirun -np N`
 * only launcher rank 0 acts. */
int cli_launcher_rank(void);

/* Whether an MPI launcher started this process (as the environment said at the first call: main
 * makes it before MPI_Init, which sets some of the same variables in a singleton). Its standard
 * output is then the launcher's (Open MPI hands each rank a pseudo-terminal whatever mpirun's
 * own output is): whether the user sees a terminal is unknown here. */
bool cli_launched(void);

/* Whether srun started this process directly as a task of a job step (not through mpirun, and
 * not a batch script's own process), as the environment said at the first call: the task's
 * Slurm variables (SLURM_CPUS_PER_TASK) are then this rank's. */
bool cli_srun_direct(void);

/* ZC_EINVAL, naming `srun --mpi=pmix`, when srun started this process as a task without an MPI
 * plugin (SLURM_STEP_ID and SLURM_PROCID, no PMIx or PMI variables): MPI_Init cannot join the
 * tasks into one world there. ZC_OK otherwise, and outside Slurm. */
zc_status cli_srun_check(zc_err *err);

/* zeroc analyze's check (cli/analyze.c): its flags as cmd_analyze reads them, the files --out
 * names, and --ranks (default 4). */
zc_status cli_analyze_check(int argc, char **argv, int *ranks, zc_err *err);

#endif
