/* status.c — the zc_err error channel and the always-on assertion (see zeroc/status.h).
 * The assertion calls the abort hook that src/comm installs once MPI is up, so one rank's
 * programmer error stops all ranks instead of leaving the others waiting in a collective.
 * (Only src/comm calls MPI; this file only knows the hook.) */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "zeroc/status.h"
#include "util/abort_hook.h"

static void (*abort_hook)(int code);

void zc_set_abort_hook(void (*hook)(int code))
{
    abort_hook = hook;
}

zc_status zc_err_set(zc_err *err, zc_status code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        err->code = code;
    }
    return code;
}

const char *zc_status_name(zc_status s)
{
    static const char *const names[] = {"ZC_OK",    "ZC_EINVAL",   "ZC_EIO",       "ZC_ENOMEM",
                                        "ZC_ECOMM", "ZC_ETIMEOUT", "ZC_ELOCKSTEP", "ZC_ESTATE"};
    _Static_assert(sizeof names / sizeof names[0] == ZC_ESTATE + 1, "status names out of sync");
    return (unsigned)s <= ZC_ESTATE ? names[s] : "ZC_UNKNOWN";
}

void zc_assert_fail(const char *expr, const char *file, int line)
{
    fprintf(stderr, "zeroc: assertion failed: %s (%s:%d)\n", expr, file, line);
    fflush(stderr);
    if (abort_hook)
        abort_hook(134);
    abort();
}
