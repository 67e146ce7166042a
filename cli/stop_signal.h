/* stop_signal.h — a run told to stop (SIGTERM: a scheduler's preemption or `kill`; SIGINT:
 * Ctrl-C; SIGUSR1: what mpirun passes on to its processes, and Slurm's --signal=USR1@T warning)
 * finishes the step it is in, saves a checkpoint (with --save-dir), writes its report and exits,
 * instead of losing the steps since its last save. The first signal only sets a flag; the
 * handler then gives the signal its default action back, so a second one ends the process at
 * once.
 *
 * Under mpirun, Ctrl-C never reaches the ranks: Open MPI 4.1 starts each rank in a process group
 * of its own, and mpirun answers SIGINT or SIGTERM (measured, and in orte/mca/odls/base) by
 * sending its ranks SIGCONT, then SIGTERM odls_base_sigkill_timeout seconds later (1 by default),
 * then SIGKILL as long again after that: the ranks have that timeout, from the SIGTERM, to end
 * their step and save. The SIGCONT cannot serve as the request: mpirun's `fg` after a Ctrl-Z
 * (which reaches the ranks as an uncatchable SIGSTOP) sends the same SIGCONT from the same
 * parent. Which signal mpirun itself was sent cannot be known here either; a SIGTERM from the
 * parent is named as mpirun's.
 *
 * SIGXFSZ: a write past the file-size limit (`ulimit -f`, RLIMIT_FSIZE) raises it, and its
 * default action kills the process at once, silently (exit 153), leaving a half-written
 * checkpoint directory. Ignored, the write fails with EFBIG instead, and the writers' error paths
 * name the file ("File too large") and remove what they wrote. */
#ifndef ZEROC_CLI_STOP_SIGNAL_H
#define ZEROC_CLI_STOP_SIGNAL_H

#include <stdbool.h>

/* Catches SIGTERM, SIGINT and SIGUSR1 from now on (once each); `launched`: an MPI launcher is
 * the parent, and its SIGTERM is its kill. */
void cli_stop_signal_install(bool launched);
/* SIGXFSZ ignored from now on (at the start of main, for every command). */
void cli_signals_ignore_file_size(void);
/* The signal that asked this process to stop, or 0. */
int cli_stop_signal_received(void);
/* What asked the run to stop, for its message: "SIGINT", …, or "mpirun's SIGTERM (mpirun was sent
 * SIGINT or SIGTERM)". */
const char *cli_stop_signal_name(int sig);
/* The exit code of a run stopped by sig: 128 + sig, what a shell reports for a process the signal
 * ended (after mpirun's own SIGINT or SIGTERM, mpirun returns 1 whatever its ranks do). */
int cli_stop_signal_exit_code(int sig);
/* Open MPI's odls_base_sigkill_timeout as this process sees it (mpirun's --mca reaches its ranks
 * as OMPI_MCA_odls_base_sigkill_timeout; then $HOME/.openmpi/mca-params.conf, then
 * /etc/openmpi/openmpi-mca-params.conf), or 1, Open MPI's default; *set tells whether it was. */
int cli_launcher_kill_timeout(bool *set);

#endif
