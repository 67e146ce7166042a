/* fail.h — how a command ends on an error: the message, on which ranks, and the exit code; and
 * the checks every command shares at its ends (standard output written, a flag named). */
#ifndef ZEROC_CLI_FAIL_H
#define ZEROC_CLI_FAIL_H

#include <stdbool.h>

#include "zeroc/comm.h"
#include "zeroc/status.h"

/* Prints err (rank 0, or every rank when the error is not known to be shared) and returns the
 * exit code. `collective`: every rank hit the same error, so they can all return and finalise;
 * otherwise the other ranks may be waiting in a collective and the job is aborted. */
int cli_fail(zc_comm *comm, const zc_err *err, bool collective);

/* The same for a command that runs in one process, without MPI: prints err, returns 1. */
int cli_fail_alone(const zc_err *err);

/* Flushes standard output: ZC_EIO, "standard output: write error: <reason>", when that fails
 * (a full disk, /dev/full, a closed descriptor) or a write before it did. `written`: the errno
 * right after the caller's last write (its reason if that write failed), or 0 when it is not
 * known ("an earlier write failed"). */
zc_status cli_stdout_flush(int written, zc_err *err);

/* The exit code of a command that returned rc: when rc is 0 but standard output could not be
 * written, prints "zeroc: error: standard output: write error: ..." and gives 1 (a command that
 * failed already said why). */
int cli_stdout_exit(int rc);

/* At the start of main: standard input, output or error closed by the caller (`zeroc ... >&-`)
 * gets /dev/null opened the wrong way round in its place, so that no file the process opens
 * later takes descriptor 0, 1 or 2 (output meant for the terminal would land in it) and a write
 * to a closed standard output still fails (EBADF), as cli_stdout_exit reports. */
void cli_std_streams_guard(void);

/* After a call failed with st on the value of `flag` (a file it names, say): prefixes the
 * message with "FLAG: " unless it starts with the flag already. Returns st. */
zc_status cli_err_flag(zc_status st, const char *flag, zc_err *err);

#endif
