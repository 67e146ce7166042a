/* fail.c — how a command ends on an error: prints the message once (or on the rank that hit it)
 * and aborts the job when other ranks may be left waiting in a collective; and the ends every
 * command shares: standard output checked for write errors, a flag's name put before the
 * message of a call that failed on its value. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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

int cli_fail_alone(const zc_err *err)
{
    fprintf(stderr, "zeroc: error: %s\n", err->msg);
    return 1;
}

zc_status cli_stdout_flush(int written, zc_err *err)
{
    if (fflush(stdout) != 0) /* what was buffered: the reason is this errno */
        return zc_err_set(err, ZC_EIO, "standard output: write error: %s", strerror(errno));
    if (ferror(stdout)) /* a write before */
        return zc_err_set(err, ZC_EIO, "standard output: write error: %s",
                          written ? strerror(written) : "an earlier write failed");
    return ZC_OK;
}

int cli_stdout_exit(int rc)
{
    zc_err err = {0};
    if (cli_stdout_flush(0, &err) && rc == 0) { /* errno says nothing of the writes by now */
        fprintf(stderr, "zeroc: error: %s\n", err.msg);
        return 1;
    }
    return rc;
}

void cli_std_streams_guard(void)
{
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) != -1 || errno != EBADF)
            continue;
        /* the lowest free descriptor: fd itself, the ones below being open */
        int got = open("/dev/null", fd == 0 ? O_WRONLY : O_RDONLY);
        if (got >= 0 && got != fd)
            close(got);
    }
}

zc_status cli_err_flag(zc_status st, const char *flag, zc_err *err)
{
    size_t n = strlen(flag);
    if (!st || (!strncmp(err->msg, flag, n) && (err->msg[n] == ' ' || err->msg[n] == ':')))
        return st;
    char msg[sizeof err->msg];
    snprintf(msg, sizeof msg, "%s", err->msg);
    return zc_err_set(err, st, "%s: %s", flag, msg);
}
