/* durable.c — crash-safe file writing: temporary file, fsync, rename, directory fsync
 * (zeroc/durable.h).
 *
 * Why it is shaped this way: the temporary name carries the pid and a per-process counter, so
 * two jobs (or two writers in one job) never share one; the directory fsync makes the rename
 * itself survive a power loss (file systems that refuse fsync on a directory are accepted: the
 * rename is still atomic). Writes retry on EINTR and short counts. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zeroc/durable.h"

struct zc_durable {
    int fd;
    int64_t end; /* bytes appended so far (zc_durable_write's offset) */
    char path[4096], tmp[4200];
};

static atomic_uint counter;

zc_status zc_durable_open(zc_durable **out, const char *path, zc_err *err)
{
    *out = NULL;
    zc_durable *f = calloc(1, sizeof *f);
    if (!f)
        return zc_err_set(err, ZC_ENOMEM, "out of memory opening %s", path);
    if (snprintf(f->path, sizeof f->path, "%s", path) >= (int)sizeof f->path) {
        free(f);
        return zc_err_set(err, ZC_EINVAL, "path too long: %.200s...", path);
    }
    snprintf(f->tmp, sizeof f->tmp, "%s.tmp-%ld-%u", path, (long)getpid(),
             atomic_fetch_add(&counter, 1));
    f->fd = open(f->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (f->fd < 0) {
        zc_status st = zc_err_set(err, ZC_EIO, "cannot write '%s': %m", path);
        free(f);
        return st;
    }
    *out = f;
    return ZC_OK;
}

zc_status zc_durable_pwrite(zc_durable *f, const void *buf, size_t n, int64_t off, zc_err *err)
{
    const char *p = buf;
    while (n) {
        ssize_t r = pwrite(f->fd, p, n, (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return zc_err_set(err, ZC_EIO, "cannot write '%s': %s", f->path,
                              r < 0 ? strerror(errno) : "no progress");
        p += r, n -= (size_t)r, off += r;
    }
    if (off > f->end)
        f->end = off;
    return ZC_OK;
}

zc_status zc_durable_write(zc_durable *f, const void *buf, size_t n, zc_err *err)
{
    return zc_durable_pwrite(f, buf, n, f->end, err);
}

int zc_durable_fd(const zc_durable *f)
{
    return f->fd;
}

void zc_durable_abort(zc_durable *f)
{
    if (!f)
        return;
    if (f->fd >= 0)
        close(f->fd);
    unlink(f->tmp);
    free(f);
}

/* Best effort: some file systems refuse fsync on a directory. */
static void fsync_dir_of(const char *path)
{
    char copy[4096];
    snprintf(copy, sizeof copy, "%s", path);
    int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

zc_status zc_durable_commit(zc_durable *f, zc_err *err)
{
    zc_status st = ZC_OK;
    if (fsync(f->fd))
        st = zc_err_set(err, ZC_EIO, "cannot write '%s' (fsync): %m", f->path);
    int rc = close(f->fd);
    f->fd = -1;
    if (!st && rc)
        st = zc_err_set(err, ZC_EIO, "cannot write '%s' (close): %m", f->path);
    if (!st && rename(f->tmp, f->path))
        st = zc_err_set(err, ZC_EIO, "cannot rename '%s' to '%s': %m", f->tmp, f->path);
    if (st) {
        zc_durable_abort(f);
        return st;
    }
    fsync_dir_of(f->path);
    free(f);
    return ZC_OK;
}

zc_status zc_durable_write_file(const char *path, const void *buf, size_t n, zc_err *err)
{
    zc_durable *f;
    zc_status st = zc_durable_open(&f, path, err);
    if (st)
        return st;
    if ((st = zc_durable_write(f, buf, n, err))) {
        zc_durable_abort(f);
        return st;
    }
    return zc_durable_commit(f, err);
}
