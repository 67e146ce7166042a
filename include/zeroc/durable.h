/* zeroc/durable.h — writing a file so that a crash at any moment leaves either the old file or
 * the new one, never a mix: the bytes go to a temporary file beside the target (a name unique to
 * the process and the call), which is fsync'd, renamed over the target, and the directory
 * fsync'd. Every writer of user data in zeroc (checkpoint manifests and `latest`, exports,
 * --save-weights, llm.c checkpoints and token files, reports, plots) goes through it.
 *
 *     zc_durable *f;
 *     if (zc_durable_open(&f, "weights.bin", &err)) ...
 *     zc_durable_write(f, header, n, &err);            // appends (or zc_durable_pwrite)
 *     zc_durable_commit(f, &err);                      // fsync, rename, fsync the directory
 *
 * On any failure (and zc_durable_abort) the temporary file is removed and the target is left as
 * it was; commit and abort free the handle.
 *
 * A target that is a symbolic link to a regular file is written through: the new file replaces
 * the file the link resolves to, so the link stays a link. Refused with a message naming the
 * path and why, nothing created: a dangling link (as cp(1) refuses one: the file would be made
 * wherever the link points), a link owned by another user (root aside) in a sticky or
 * world-writable directory such as /tmp (anyone there could have planted it, to make this
 * process create or clobber a file elsewhere) — at the path or as a directory on the way to
 * it — and a target (or link target) that exists but is
 * not a regular file — a device, a FIFO, a socket, a directory: renaming over it would replace,
 * say, /dev/stdout. The final name is created and renamed relative to a descriptor of its
 * directory (openat O_NOFOLLOW, renameat), so the directory checked is the one written.
 *
 * The reading side of the same rule: zc_open_regular opens an input without blocking (a FIFO
 * standing in for a file would otherwise hang the reader forever) and refuses anything but a
 * regular file, naming what it is. */
#ifndef ZEROC_DURABLE_H
#define ZEROC_DURABLE_H

#include "zeroc/api.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "zeroc/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zc_durable zc_durable;

/* Creates the temporary file PATH.tmp-PID-N: mode 0666 less the umask, or the mode of the regular
 * file it will replace. */
ZC_API zc_status zc_durable_open(zc_durable **out, const char *path, zc_err *err);
/* Appends n bytes. */
ZC_API zc_status zc_durable_write(zc_durable *f, const void *buf, size_t n, zc_err *err);
/* Writes n bytes at offset off (any order; the file grows as needed). */
ZC_API zc_status zc_durable_pwrite(zc_durable *f, const void *buf, size_t n, int64_t off,
                                   zc_err *err);
/* The temporary file's descriptor (for writers that need one, e.g. O_DIRECT-free streaming). */
ZC_API int zc_durable_fd(const zc_durable *f);
/* fsync, close, rename over the target, fsync its directory. Frees f, success or not. */
ZC_API zc_status zc_durable_commit(zc_durable *f, zc_err *err);
/* Removes the temporary file, leaves the target as it was, frees f. NULL is ignored. */
ZC_API void zc_durable_abort(zc_durable *f);
/* Checks that path could be written now, as zc_durable_open would (the same refusals, the
 * temporary file created and removed again); the target is not touched. */
ZC_API zc_status zc_durable_probe(const char *path, zc_err *err);
/* The whole of buf as the file at path, durably. */
ZC_API zc_status zc_durable_write_file(const char *path, const void *buf, size_t n, zc_err *err);

/* What a file of st_mode mode is, for a message: "a directory", "a FIFO (named pipe)", ... */
ZC_API const char *zc_file_kind(unsigned mode);
/* Opens path read-only (close-on-exec) if it is a regular file; *size (if not NULL) gets its
 * size. Failing to open gives ZC_EIO, "cannot open PATH: REASON", with errno kept for callers
 * that word it their own way; anything but a regular file gives ZC_EINVAL, "PATH is a KIND, not
 * a regular file". Nothing is left open on failure. */
ZC_API zc_status zc_open_regular(const char *path, int *fd, int64_t *size, zc_err *err);
/* zc_open_regular as a stdio stream ("rb"); NULL on failure (err may be NULL). */
ZC_API FILE *zc_fopen_regular(const char *path, zc_err *err);

#ifdef __cplusplus
}
#endif

#endif
