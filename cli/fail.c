/* fail.c — how a command ends on an error: prints the message once (or on the rank that hit it)
 * and aborts the job when other ranks may be left waiting in a collective. */
#include <stdio.h>

#include "cli/fail.h"

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
