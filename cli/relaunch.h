/* relaunch.h — a command started without an MPI launcher re-executes itself under mpirun. */
#ifndef ZEROC_CLI_RELAUNCH_H
#define ZEROC_CLI_RELAUNCH_H

/* Started without an MPI launcher, re-executes this command under mpirun with the --ranks
 * value of argv (default `ranks`); returns only if it does not (already launched, or 1 rank). */
void cli_relaunch_under_mpirun(int argc, char **argv, int ranks);

#endif
