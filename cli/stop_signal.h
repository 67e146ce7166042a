/* stop_signal.h — a run told to stop (SIGTERM: a scheduler's preemption or `kill`; SIGINT:
 * Ctrl-C; SIGUSR1: what mpirun passes on to its processes, and Slurm's --signal=USR1@T warning)
 * finishes the step it is in, saves a checkpoint and exits, instead of losing the steps since
 * its last save. The first signal only sets a flag; the handler then gives the signal its
 * default action back, so a second one ends the process at once.
 *
 * SIGXFSZ: a write past the file-size limit (`ulimit -f`, RLIMIT_FSIZE) raises it, and its
 * default action kills the process at once, silently (exit 153), leaving a half-written
 * checkpoint directory. Ignored, the write fails with EFBIG instead, and the writers' error paths
 * name the file ("File too large") and remove what they wrote. */
#ifndef ZEROC_CLI_STOP_SIGNAL_H
#define ZEROC_CLI_STOP_SIGNAL_H

/* Catches SIGTERM, SIGINT and SIGUSR1 from now on (once each). */
void cli_stop_signal_install(void);
/* SIGXFSZ ignored from now on (at the start of main, for every command). */
void cli_signals_ignore_file_size(void);
/* The signal that asked this process to stop, or 0. */
int cli_stop_signal_received(void);

#endif
