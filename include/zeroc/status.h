/* zeroc/status.h — the error channel every zeroc call that can fail shares.
 *
 * Runtime failures the user or the system can cause (bad config, bad file, MPI timeout, a rank
 * out of lockstep) come back as a non-zero status plus a message in a zc_err the caller owns.
 * The library never prints and never exits; the caller (the zeroc CLI, or your program) decides.
 * Calls made in the wrong order (ZC_ESTATE) or with an id that does not exist (ZC_EINVAL) are
 * statuses too, naming the call and what was expected. ZC_ASSERT, which prints file:line and
 * aborts every rank, guards the library's internal invariants only — a state no call sequence
 * should reach.
 *
 *     zc_err err = {0};
 *     if (zc_config_load_file(&cfg, "ds_config.json", &err) != ZC_OK) {
 *         fprintf(stderr, "zeroc: %s\n", err.msg);
 *         return 1;
 *     }
 */
#ifndef ZEROC_STATUS_H
#define ZEROC_STATUS_H

#include "zeroc/api.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    ZC_OK = 0,
    ZC_EINVAL,    /* a value the caller passed (config key, flag, shape) is not acceptable */
    ZC_EIO,       /* a file could not be read or written */
    ZC_ENOMEM,    /* an allocation failed */
    ZC_ECOMM,     /* an MPI call failed */
    ZC_ETIMEOUT,  /* a collective waited longer than comm_timeout_s */
    ZC_ELOCKSTEP, /* ranks disagree on the sequence of engine calls */
    ZC_ESTATE,    /* a call made in the wrong state (e.g. step before grads were handed back) */
} zc_status;

typedef struct {
    zc_status code;
    char msg[1024];
} zc_err;

/* Fills err (if not NULL) with code and a printf-formatted message; returns code. */
ZC_API zc_status zc_err_set(zc_err *err, zc_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Name of a status, e.g. "ZC_ETIMEOUT". */
ZC_API const char *zc_status_name(zc_status s);

/* Always-on assertion for internal invariants: prints file:line and aborts all ranks. */
ZC_API void zc_assert_fail(const char *expr, const char *file, int line) __attribute__((noreturn));
#define ZC_ASSERT(e) ((e) ? (void)0 : zc_assert_fail(#e, __FILE__, __LINE__))

#ifdef __cplusplus
}
#endif

#endif
