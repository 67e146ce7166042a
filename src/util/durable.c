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
 *   created.
 * - But a link is only followed when the user can have meant it. Following is done by hand, one
 *   link at a time, each looked at (fstatat, AT_SYMLINK_NOFOLLOW) and read (readlinkat) through a
 *   descriptor of its directory: a link owned by another user (root aside) in a sticky or
 *   world-writable directory — /tmp, a team scratch — is refused, since anyone there could have
 *   planted it to make this process create or clobber a file elsewhere (the kernel's
 *   fs.protected_symlinks guards open(), not readlink + rename). A dangling link is refused too,
 *   as cp(1) refuses to write through one: creating a file where a link points is never what the
 *   name on the command line said.
 * - A directory on the way that is such a link is refused the same (the kernel follows it
 *   unless fs.protected_symlinks is on); checked by name, as the directory is then opened.
 * - The end of the chain is written relative to the descriptor of its directory, opened once
 *   (openat O_EXCL|O_NOFOLLOW for the temporary, renameat for the commit, the final name looked
 *   at again just before): the directory checked is the directory written, whatever is renamed
 *   meanwhile on the way to it.
 * - The new file gets the mode of the file it replaces (a report kept 0600 stays private, a
 *   group-writable one stays so), else 0666 less the umask as any program's new file. It is
 *   created with the old mode, which the umask can only narrow, then given it exactly: the
 *   bytes are never readable by more than could read the old file.
 * - zc_open_regular opens with O_NONBLOCK and checks the type on the descriptor (no window
 *   between a check by name and the open): a FIFO then opens at once and is refused, where a
 *   plain open would wait forever for a writer. */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zeroc/durable.h"

struct zc_durable {
    int fd;      /* the temporary file */
    int dir;     /* the directory of the name renamed onto (the check and the rename use it) */
    int64_t end; /* bytes appended so far (zc_durable_write's offset) */
    char path[4096], tmp[4200];     /* the name renamed onto and the temporary, whole (messages) */
    char name[4096], tmpname[4200]; /* the same relative to dir */
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

/* Could someone other than this process's user have planted link sb in directory ds? A link
 * owned by another user (root aside: root can write anywhere anyway) in a directory where others
 * may create names: sticky (/tmp) or world-writable. */
static bool planted(const struct stat *sb, const struct stat *ds)
{
    return (ds->st_mode & (S_ISVTX | S_IWOTH)) && sb->st_uid != geteuid() && sb->st_uid != 0;
}

/* A directory of dir's path (dir itself or an ancestor, as written: "a/b" checks "a" and
 * "a/b") that is a symbolic link another user planted (planted()); its name into bad. The
 * kernel follows such a link to the directory written unless fs.protected_symlinks is on. */
static bool planted_ancestor(const char *dir, char bad[4096], struct stat *sb, struct stat *ds)
{
    char prefix[4096], parent[4096];
    const size_t n = strlen(dir);
    for (size_t i = 1; i <= n && n < sizeof prefix; i++) {
        if (i < n && dir[i] != '/')
            continue;
        snprintf(prefix, sizeof prefix, "%.*s", (int)i, dir);
        if (lstat(prefix, sb) || !S_ISLNK(sb->st_mode))
            continue;
        dir_of(prefix, parent, sizeof parent);
        if (!stat(parent, ds) && planted(sb, ds)) {
            snprintf(bad, 4096, "%s", prefix);
            return true;
        }
    }
    return false;
}

/* The name a write of path must rename onto: path itself unless it is a symbolic link, else the
 * end of its chain of links; into out (whole), *dirfd (its directory, open) and name (the last
 * component). Refused, creating nothing: an existing target that is not a regular file, a
 * dangling link, a link planted by another user (planted()), a link loop, a target whose
 * directory does not exist, and a link that opens but names nothing (a /proc/self/fd link to a
 * pipe or a deleted file). */
static zc_status write_target(const char *path, char out[4096], int *dirfd, char name[4096],
                              zc_err *err)
{
    *dirfd = -1;
    struct stat sb, ds;
    const int exists = !stat(path, &sb); /* through any links */
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
    char dir[4096], link[4096];
    for (int hops = 0;; hops++) {
        const char *slash = strrchr(out, '/');
        snprintf(name, 4096, "%s", slash ? slash + 1 : out);
        if (!*name || !strcmp(name, ".") || !strcmp(name, ".."))
            return zc_err_set(err, ZC_EINVAL, "cannot write '%s': it names a directory, not a file",
                              path);
        dir_of(out, dir, sizeof dir);
        if (planted_ancestor(dir, link, &sb, &ds)) {
            dir_of(link, dir, sizeof dir);
            return zc_err_set(err, ZC_EINVAL,
                              "cannot write '%s': the directory '%s' on its way is a symbolic link "
                              "owned by another user (uid %u) in '%s', a %s directory where anyone "
                              "can plant one; zeroc does not write through it (remove it, or "
                              "write elsewhere)",
                              path, link, (unsigned)sb.st_uid, dir,
                              ds.st_mode & S_ISVTX ? "sticky" : "world-writable");
        }
        int d = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (d < 0) {
            int e = errno;
            if (hops && e == ENOENT)
                return zc_err_set(err, ZC_EINVAL,
                                  "cannot write '%s': it is a dangling link to '%s', whose "
                                  "directory does not exist",
                                  path, out);
            return zc_err_set(err, ZC_EIO, "cannot write '%s': %s", path, strerror(e));
        }
        if (fstatat(d, name, &sb, AT_SYMLINK_NOFOLLOW)) {
            int e = errno;
            if (e == ENOENT && !hops) { /* a new file */
                *dirfd = d;
                return ZC_OK;
            }
            close(d);
            if (e != ENOENT)
                return zc_err_set(err, ZC_EIO, "cannot write '%s': %s", path, strerror(e));
            if (exists) /* it opens, yet its name leads nowhere: a magic link of /proc */
                return zc_err_set(err, ZC_EINVAL,
                                  "cannot write '%s': it is a link to '%s', which is no file "
                                  "that can be replaced",
                                  path, out);
            return zc_err_set(err, ZC_EINVAL,
                              "cannot write '%s': it is a dangling symbolic link (to '%s', which "
                              "does not exist); zeroc does not create a file through a link: "
                              "remove the link or give the target's own name",
                              path, out);
        }
        if (!S_ISLNK(sb.st_mode)) {
            if (!S_ISREG(sb.st_mode)) { /* changed since the stat above */
                close(d);
                return zc_err_set(err, ZC_EINVAL,
                                  "cannot write '%s': it is %s%s, not a regular file", path,
                                  hops ? "a link to " : "", zc_file_kind(sb.st_mode));
            }
            *dirfd = d;
            return ZC_OK;
        }
        ssize_t n = -1;
        int e = ELOOP;
        if (fstat(d, &ds))
            e = errno;
        else if (planted(&sb, &ds)) {
            close(d);
            return zc_err_set(err, ZC_EINVAL,
                              "cannot write '%s': %s'%s' is a symbolic link owned by another user "
                              "(uid %u) in '%s', a %s directory where anyone can plant one; zeroc "
                              "does not write through it (remove it, or write elsewhere)",
                              path, hops ? "the link it leads to, " : "", out, (unsigned)sb.st_uid,
                              dir, ds.st_mode & S_ISVTX ? "sticky" : "world-writable");
        } else if (hops < 40) {
            n = readlinkat(d, name, link, sizeof link - 1);
            e = errno;
        }
        close(d);
        if (n < 0)
            return zc_err_set(err, ZC_EINVAL, "cannot write '%s': cannot follow its link%s: %s",
                              path, hops ? "s" : "", strerror(e));
        link[n] = 0;
        int w = link[0] == '/' ? snprintf(out, 4096, "%s", link)
                               : snprintf(out, 4096, "%s/%s", dir, link);
        if (w >= 4096)
            return zc_err_set(err, ZC_EINVAL, "cannot write '%s': its link target is too long",
                              path);
    }
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
    f->fd = -1;
    zc_status st = write_target(path, f->path, &f->dir, f->name, err);
    if (st) {
        free(f);
        return st;
    }
    /* beside the file renamed onto (a link's target), so the rename stays in one directory */
    const unsigned k = atomic_fetch_add(&counter, 1);
    snprintf(f->tmp, sizeof f->tmp, "%s.tmp-%ld-%u", f->path, (long)getpid(), k);
    snprintf(f->tmpname, sizeof f->tmpname, "%s.tmp-%ld-%u", f->name, (long)getpid(), k);
    struct stat old;
    const bool replaces =
        !fstatat(f->dir, f->name, &old, AT_SYMLINK_NOFOLLOW) && S_ISREG(old.st_mode);
    const mode_t mode = replaces ? old.st_mode & 0777 : 0666;
    f->fd = openat(f->dir, f->tmpname, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (f->fd < 0) {
        zc_status st = zc_err_set(err, ZC_EIO, "cannot write '%s': %m", path);
        close(f->dir);
        free(f);
        return st;
    }
    /* best effort: a file system without modes (vfat) refuses, and its files have none */
    if (replaces)
        (void)fchmod(f->fd, mode);
    *out = f;
    return ZC_OK;
}

zc_status zc_durable_probe(const char *path, zc_err *err)
{
    zc_durable *f;
    zc_status st = zc_durable_open(&f, path, err);
    if (!st)
        zc_durable_abort(f);
    return st;
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
    unlinkat(f->dir, f->tmpname, 0);
    close(f->dir);
    free(f);
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
    /* what has the name now (a link or a FIFO put there since the open) is not replaced */
    struct stat sb;
    if (!st && !fstatat(f->dir, f->name, &sb, AT_SYMLINK_NOFOLLOW) && !S_ISREG(sb.st_mode))
        st = zc_err_set(err, ZC_EINVAL,
                        "cannot write '%s': it has become %s since it was opened; not replaced",
                        f->path, zc_file_kind(sb.st_mode));
    if (!st && renameat(f->dir, f->tmpname, f->dir, f->name))
        st = zc_err_set(err, ZC_EIO, "cannot rename '%s' to '%s': %m", f->tmp, f->path);
    if (st) {
        zc_durable_abort(f);
        return st;
    }
    (void)fsync(f->dir); /* best effort: some file systems refuse fsync on a directory */
    close(f->dir);
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
