/* durable.c — crash-safe file writing: temporary file, fsync, rename, directory fsync
 * (zeroc/durable.h).
 *
 * Why it is shaped this way: the temporary name carries the pid and a per-process counter, so
 * two jobs (or two writers in one job) never share one; the directory fsync makes the rename
 * itself survive a power loss (file systems that refuse fsync on a directory are accepted: the
 * rename is still atomic). Writes retry on EINTR and short counts.
 * - A rename replaces whatever has the target's name: a symbolic link would become a regular file
 *   (a link to /proc/self/fd/1, or /dev/stdout itself as root) and a device or FIFO would be
 *   replaced. So a link is followed to the file it ends at, which is replaced instead (the link
 *   stays), and an existing target that is not a regular file is refused before anything is
 *   created. Links are followed by hand (readlink) rather than realpath so that a dangling link
 *   still yields the name it points at.
 * - The new file gets the mode of the file it replaces (a report kept 0600 stays private, a
 *   group-writable one stays so), else 0666 less the umask as any program's new file. It is
 *   created with the old mode, which the umask can only narrow, then given it exactly: the
 *   bytes are never readable by more than could read the old file.
 * - zc_open_regular opens with O_NONBLOCK and checks the type on the descriptor (no window
 *   between a check by name and the open): a FIFO then opens at once and is refused, where a
 *   plain open would wait forever for a writer. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zeroc/durable.h"

struct zc_durable {
    int fd;
    int64_t end; /* bytes appended so far (zc_durable_write's offset) */
    char path[4096], tmp[4200];
};

static atomic_uint counter;

const char *zc_file_kind(unsigned mode)
{
    mode_t m = (mode_t)mode;
    return S_ISREG(m)    ? "a regular file"
           : S_ISDIR(m)  ? "a directory"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
           : S_ISFIFO(m) ? "a FIFO (named pipe)"
           : S_ISSOCK(m) ? "a socket"
           : S_ISLNK(m)  ? "a symbolic link"
                         : "an unknown kind of file";
}

/* The directory part of path into out (cap bytes); "." when there is none. */
static void dir_of(const char *path, char *out, size_t cap)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(out, cap, ".");
    else if (slash == path)
        snprintf(out, cap, "/");
    else
        snprintf(out, cap, "%.*s", (int)(slash - path), path);
}

/* The name a write of path must rename onto, into out: path itself unless it is a symbolic
 * link, else the end of its chain of links. Refused: an existing target that is not a regular
 * file, a dangling link whose target's directory does not exist, a link loop, and a link that
 * can be opened but names nothing (a /proc/self/fd link to a pipe or a deleted file). */
static zc_status write_target(const char *path, char out[4096], zc_err *err)
{
    struct stat sb;
    int exists = !stat(path, &sb); /* through any links */
    if (exists && !S_ISREG(sb.st_mode)) {
        const char *kind = zc_file_kind(sb.st_mode);
        int link = !lstat(path, &sb) && S_ISLNK(sb.st_mode);
        return zc_err_set(err, ZC_EINVAL,
                          "cannot write '%s': it is %s%s, not a regular file (zeroc writes its "
                          "outputs to a new file renamed over the old one, which would replace it)",
                          path, link ? "a link to " : "", kind);
    }
    if (snprintf(out, 4096, "%s", path) >= 4096)
        return zc_err_set(err, ZC_EINVAL, "path too long: %.200s...", path);
    int hops = 0;
    while (!lstat(out, &sb) && S_ISLNK(sb.st_mode)) {
        char link[4096], dir[4096];
        ssize_t n = ++hops > 40 ? -1 : readlink(out, link, sizeof link - 1);
        if (n < 0)
            return zc_err_set(err, ZC_EINVAL, "cannot write '%s': cannot follow its link%s: %s",
                              path, hops > 1 ? "s" : "",
                              hops > 40 ? strerror(ELOOP) : strerror(errno));
        link[n] = 0;
        dir_of(out, dir, sizeof dir);
        int w = link[0] == '/' ? snprintf(out, 4096, "%s", link)
                               : snprintf(out, 4096, "%s/%s", dir, link);
        if (w >= 4096)
            return zc_err_set(err, ZC_EINVAL, "cannot write '%s': its link target is too long",
                              path);
    }
    if (!hops || !lstat(out, &sb))
        return ZC_OK; /* not a link (created if missing), or a link to an existing regular file */
    char dir[4096];
    dir_of(out, dir, sizeof dir);
    if (exists) /* it opens, yet its name leads nowhere: a magic link of /proc */
        return zc_err_set(err, ZC_EINVAL,
                          "cannot write '%s': it is a link to '%s', which is no file that can be "
                          "replaced",
                          path, out);
    if (stat(dir, &sb) || !S_ISDIR(sb.st_mode))
        return zc_err_set(err, ZC_EINVAL,
                          "cannot write '%s': it is a dangling link to '%s', whose directory "
                          "does not exist",
                          path, out);
    return ZC_OK; /* a dangling link: its target is created */
}

zc_status zc_open_regular(const char *path, int *fd, int64_t *size, zc_err *err)
{
    *fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (*fd < 0) {
        int e = errno;
        zc_err_set(err, ZC_EIO, "cannot open %s: %s", path, strerror(e));
        errno = e;
        return ZC_EIO;
    }
    struct stat sb;
    int failed = fstat(*fd, &sb), e = errno;
    if (failed || !S_ISREG(sb.st_mode)) {
        close(*fd);
        *fd = -1;
        if (!failed)
            return zc_err_set(err, ZC_EINVAL, "%s is %s, not a regular file", path,
                              zc_file_kind(sb.st_mode));
        zc_err_set(err, ZC_EIO, "cannot open %s: %s", path, strerror(e));
        errno = e;
        return ZC_EIO;
    }
    /* a regular file ignores O_NONBLOCK; cleared all the same so the descriptor is ordinary */
    (void)fcntl(*fd, F_SETFL, fcntl(*fd, F_GETFL) & ~O_NONBLOCK);
    if (size)
        *size = (int64_t)sb.st_size;
    return ZC_OK;
}

FILE *zc_fopen_regular(const char *path, zc_err *err)
{
    int fd;
    if (zc_open_regular(path, &fd, NULL, err))
        return NULL;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        int e = errno;
        zc_err_set(err, ZC_ENOMEM, "cannot open %s: %s", path, strerror(e));
        close(fd);
        errno = e;
    }
    return f;
}

zc_status zc_durable_open(zc_durable **out, const char *path, zc_err *err)
{
    *out = NULL;
    zc_durable *f = calloc(1, sizeof *f);
    if (!f)
        return zc_err_set(err, ZC_ENOMEM, "out of memory opening %s", path);
    zc_status st = write_target(path, f->path, err);
    if (st) {
        free(f);
        return st;
    }
    /* beside the file renamed onto (a link's target), so the rename stays in one directory */
    snprintf(f->tmp, sizeof f->tmp, "%s.tmp-%ld-%u", f->path, (long)getpid(),
             atomic_fetch_add(&counter, 1));
    struct stat old;
    const bool replaces = !stat(f->path, &old) && S_ISREG(old.st_mode);
    const mode_t mode = replaces ? old.st_mode & 0777 : 0666;
    f->fd = open(f->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (f->fd < 0) {
        zc_status st = zc_err_set(err, ZC_EIO, "cannot write '%s': %m", path);
        free(f);
        return st;
    }
    /* best effort: a file system without modes (vfat) refuses, and its files have none */
    if (replaces)
        (void)fchmod(f->fd, mode);
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
