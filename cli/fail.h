/* fail.h — how a command ends on an error: the message, on which ranks, and the exit code. */
#ifndef ZEROC_CLI_FAIL_H
#define ZEROC_CLI_FAIL_H

#include <stdbool.h>

#include "zeroc/comm.h"
#include "zeroc/status.h"

/* Prints err (rank 0, or every rank when the error is not known to be shared) and returns the
 * exit code. `collective`: every rank hit the same error, so they can all return and finalise;
 * otherwise the other ranks may be waiting in a collective and the job is aborted. */
int cli_fail(zc_comm *comm, const zc_err *err, bool collective);

#endif
