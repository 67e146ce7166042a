/* swap.c — a rank's swap file (contract in swap.h).
 *
 * Why it is shaped this way:
 * - The name is unique by construction (host, pid, rank, a per-process counter) and created
 *   with O_EXCL, so two ranks or two runs sharing nvme_path never share a file; a stale name
 *   (a process killed between create and unlink, its pid reused) only costs another counter.
 * - Space is checked (fstatvfs) before fallocate, not only by fallocate's ENOSPC: on ext4 a
 *   fallocate that fails keeps what it allocated until the file is closed, so asking for more
 *   than is free would fill the disk for every other process for a moment. The check counts
 *   the space unprivileged users may take (f_bavail): a swap file does not eat root's reserve.
 *   fallocate's own ENOSPC gets the same message.
 * - A RAM file system (tmpfs, which takes O_DIRECT since Linux 6.6) is refused: its "disk" is
 *   the RAM that offload is there to free, and a memory cgroup is charged for it. The space
 *   check comes first, so a tmpfs too small still says how much is needed.
 * - Once preallocated the name is unlinked: the space lives as long as the descriptor, so no
 *   way of ending the process leaves anything behind. Every failure after the create unlinks
 *   and closes, in one cleanup path.
 * - The synchronous calls go through one aligned 1 MiB bounce buffer per swap (allocated at
 *   create: they cannot fail for memory), reading the partial blocks at the edges of a write
 *   before rewriting them. They are for initialisation and checkpoints, not the hot path.
 * - Test hook ZEROC_FAULT_IO=read:R@K / write:R@K (several, comma-separated): the K-th
 *   (1-based) asynchronous read / write transfer started on a swap of rank R completes with
 *   EIO, doing no I/O. The count is per swap object (a rank has one swap file). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "offload/swap.h"

enum { BOUNCE = ZC_SWAP_VIEW_MAX + ZC_AIO_ALIGN }; /* any ZC_SWAP_VIEW_MAX bytes fit */

struct zc_swap {
    zc_aio *aio;
    int fd;
    int64_t bytes;
    int64_t reads, writes;           /* asynchronous transfers started */
    int64_t fault_read, fault_write; /* ZEROC_FAULT_IO: the transfer that fails (0: none) */
    char *bounce;                    /* BOUNCE bytes, ZC_AIO_ALIGN-aligned */
    /* zc_swap_stage's blocks, until zc_swap_commit (staged_off −1: none) */
    int64_t staged_off, staged_len;
    char path[PATH_MAX];
};

static unsigned long swap_counter; /* names made by this process (atomic) */

/* ZEROC_FAULT_IO's K for kind ("read"/"write") and rank, or 0. */
static int64_t fault_at(const char *kind, int rank)
{
    const char *f = getenv("ZEROC_FAULT_IO");
    for (const char *p = f; p && *p;) {
        char k[16];
        int r;
        long long at;
        if (sscanf(p, "%15[a-z]:%d@%lld", k, &r, &at) == 3 && !strcmp(k, kind) && r == rank)
            return at;
        p = strchr(p, ',');
        if (p)
            p++;
    }
    return 0;
}

/* bytes for a message: "1.50 GiB", "3.2 MiB" or "264 KiB" */
static const char *human(double bytes, char *buf, size_t cap)
{
    if (bytes >= 1 << 30)
        snprintf(buf, cap, "%.2f GiB", bytes / (1 << 30));
    else if (bytes >= 1 << 20)
        snprintf(buf, cap, "%.1f MiB", bytes / (1 << 20));
    else
        snprintf(buf, cap, "%.0f KiB", bytes / 1024);
    return buf;
}

static zc_status no_space(zc_err *err, const char *key, const char *dir, int rank, int64_t bytes,
                          bool known, uint64_t avail)
{
    char need[32], have[32];
    human((double)bytes, need, sizeof need);
    if (!known)
        return zc_err_set(err, ZC_EIO,
                          "%s '%s': not enough space for rank %d's swap file: needs %lld "
                          "bytes (%s), the file system's free space is unknown",
                          key, dir, rank, (long long)bytes, need);
    return zc_err_set(err, ZC_EIO,
                      "%s '%s': not enough space for rank %d's swap file: needs %lld "
                      "bytes (%s), the file system has %llu bytes (%s) free",
                      key, dir, rank, (long long)bytes, need, (unsigned long long)avail,
                      human((double)avail, have, sizeof have));
}

static zc_status dir_exists(const char *key, const char *dir, zc_err *err)
{
    struct stat st;
    if (stat(dir, &st))
        return errno == ENOENT ? zc_err_set(err, ZC_EIO, "%s '%s' does not exist", key, dir)
                               : zc_err_set(err, ZC_EIO, "%s '%s': %m", key, dir);
    if (!S_ISDIR(st.st_mode))
        return zc_err_set(err, ZC_EIO, "%s '%s' is not a directory", key, dir);
    return ZC_OK;
}

static zc_status on_ram(const char *key, const char *dir, zc_err *err)
{
    return zc_err_set(err, ZC_EIO,
                      "%s '%s' is on a RAM file system (tmpfs): the states offloaded "
                      "there would stay in RAM, taking what offload is meant to free (and "
                      "counted as disk by the memory check); use a directory on a disk",
                      key, dir);
}

static bool ram_fs(const struct statfs *fs)
{
    return fs->f_type == TMPFS_MAGIC || fs->f_type == RAMFS_MAGIC;
}

zc_status zc_swap_check_dir(const char *key, const char *dir, zc_err *err)
{
    ZC_ASSERT(dir != NULL);
    zc_status st = dir_exists(key, dir, err);
    if (st)
        return st;
    if (access(dir, W_OK | X_OK))
        return zc_err_set(err, ZC_EIO, "%s '%s': cannot create files in it: %m", key, dir);
    struct statfs fs;
    if (!statfs(dir, &fs) && ram_fs(&fs))
        return on_ram(key, dir, err);
    return ZC_OK;
}

zc_status zc_swap_create(zc_swap **out, const char *key, const char *dir, int rank, int64_t bytes,
                         zc_aio *aio, zc_err *err)
{
    ZC_ASSERT(out != NULL && dir != NULL && aio != NULL && rank >= 0);
    ZC_ASSERT(bytes > 0 && bytes % ZC_AIO_ALIGN == 0);
    *out = NULL;
    zc_status rc = dir_exists(key, dir, err);
    if (rc)
        return rc;
    zc_swap *s = calloc(1, sizeof *s);
    if (!s)
        return zc_err_set(err, ZC_ENOMEM, "out of memory creating a swap file in '%s'", dir);
    s->aio = aio;
    s->fd = -1;
    s->bytes = bytes;
    bool named = false; /* the name in dir is ours and still there */
    char host[64];
    if (gethostname(host, sizeof host))
        strcpy(host, "host");
    host[sizeof host - 1] = '\0';
    for (char *c = host; *c; c++)
        if (*c == '/')
            *c = '_';

    for (int tries = 0;; tries++) {
        unsigned long n = __atomic_fetch_add(&swap_counter, 1, __ATOMIC_RELAXED);
        int len = snprintf(s->path, sizeof s->path, "%s/zeroc-%s-%ld-rank%d-%lu.swap", dir, host,
                           (long)getpid(), rank, n);
        if (len < 0 || (size_t)len >= sizeof s->path) {
            rc = zc_err_set(err, ZC_EIO, "%s '%s': path too long for a swap file", key, dir);
            goto fail;
        }
        s->fd = open(s->path, O_CREAT | O_EXCL | O_RDWR | O_DIRECT | O_CLOEXEC, 0600);
        if (s->fd >= 0)
            break;
        if (errno == EEXIST && tries < 100)
            continue;
        if (errno == EINVAL) { /* the create may have happened before O_DIRECT was refused */
            unlink(s->path);
            rc = zc_err_set(err, ZC_EIO,
                            "%s '%s': the file system does not support O_DIRECT (e.g. "
                            "tmpfs before Linux 6.6), so swap file '%s' cannot be opened; use a "
                            "directory on a disk file system",
                            key, dir, s->path);
        } else {
            rc = zc_err_set(err, ZC_EIO, "%s '%s': cannot create swap file '%s': %m", key, dir,
                            s->path);
        }
        goto fail;
    }
    named = true;

    struct statvfs vf;
    const bool known = fstatvfs(s->fd, &vf) == 0 && vf.f_blocks > 0;
    const uint64_t avail = known ? (uint64_t)vf.f_bavail * vf.f_frsize : 0;
    if (known && (uint64_t)bytes > avail) {
        rc = no_space(err, key, dir, rank, bytes, true, avail);
        goto fail;
    }
    struct statfs fs; /* tmpfs takes O_DIRECT since Linux 6.6, and keeps its files in RAM */
    if (!fstatfs(s->fd, &fs) && ram_fs(&fs)) {
        rc = on_ram(key, dir, err);
        goto fail;
    }
    if (fallocate(s->fd, 0, 0, (off_t)bytes)) {
        if (errno == ENOSPC)
            rc = no_space(err, key, dir, rank, bytes, known, avail);
        else
            rc = zc_err_set(err, ZC_EIO,
                            "%s '%s': cannot preallocate %lld bytes for swap file '%s' "
                            "(fallocate: %m)",
                            key, dir, (long long)bytes, s->path);
        goto fail;
    }
    if (unlink(s->path)) {
        rc =
            zc_err_set(err, ZC_EIO, "%s '%s': cannot unlink swap file '%s': %m", key, dir, s->path);
        goto fail;
    }
    named = false;
    void *b = NULL;
    if (posix_memalign(&b, ZC_AIO_ALIGN, BOUNCE)) {
        rc = zc_err_set(err, ZC_ENOMEM, "out of memory for swap file '%s'", s->path);
        goto fail;
    }
    s->bounce = b;
    s->staged_off = -1;
    s->fault_read = fault_at("read", rank);
    s->fault_write = fault_at("write", rank);
    *out = s;
    return ZC_OK;
fail:
    if (named)
        unlink(s->path);
    if (s->fd >= 0)
        close(s->fd);
    free(s->bounce);
    free(s);
    return rc;
}

void zc_swap_destroy(zc_swap *s)
{
    if (!s)
        return;
    close(s->fd);
    free(s->bounce);
    free(s);
}

const char *zc_swap_path(const zc_swap *s)
{
    ZC_ASSERT(s != NULL);
    return s->path;
}

int64_t zc_swap_bytes(const zc_swap *s)
{
    ZC_ASSERT(s != NULL);
    return s->bytes;
}

static void check_range(const zc_swap *s, size_t len, int64_t off)
{
    ZC_ASSERT(s != NULL && off >= 0 && off <= s->bytes && len <= (uint64_t)(s->bytes - off));
}

void zc_swap_read(zc_swap *s, zc_aio_op *op, void *buf, size_t len, int64_t off)
{
    check_range(s, len, off);
    ZC_ASSERT(op != NULL);
    op->inject_errno = ++s->reads == s->fault_read ? EIO : 0;
    zc_aio_read(s->aio, op, s->fd, s->path, buf, len, off);
}

void zc_swap_write(zc_swap *s, zc_aio_op *op, const void *buf, size_t len, int64_t off)
{
    check_range(s, len, off);
    ZC_ASSERT(op != NULL);
    op->inject_errno = ++s->writes == s->fault_write ? EIO : 0;
    zc_aio_write(s->aio, op, s->fd, s->path, buf, len, off);
}

zc_status zc_swap_wait(zc_swap *s, zc_aio_op *op, zc_err *err)
{
    ZC_ASSERT(s != NULL);
    return zc_aio_wait(s->aio, op, err);
}

/* ---------- synchronous, any offset and length ---------- */

static int64_t align_down(int64_t x)
{
    return x & ~(int64_t)(ZC_AIO_ALIGN - 1);
}
static int64_t align_up(int64_t x)
{
    return align_down(x + ZC_AIO_ALIGN - 1);
}

/* Bounce bytes [from, to) (file offsets, window starting at a0) from the file. */
static zc_status fill(zc_swap *s, int64_t a0, int64_t from, int64_t to, zc_err *err)
{
    int e = zc_aio_pio(s->fd, false, s->bounce + (from - a0), (size_t)(to - from), from);
    return e ? zc_aio_error(err, s->path, false, (size_t)(to - from), from, e) : ZC_OK;
}

zc_status zc_swap_view(zc_swap *s, size_t len, int64_t off, const void **out, zc_err *err)
{
    check_range(s, len, off);
    const int64_t a0 = align_down(off), a1 = align_up(off + (int64_t)len);
    ZC_ASSERT(out != NULL && a1 - a0 <= BOUNCE); /* ZC_SWAP_VIEW_MAX bytes always fit */
    zc_status st = a1 > a0 ? fill(s, a0, a0, a1, err) : ZC_OK;
    *out = st ? NULL : s->bounce + (off - a0);
    return st;
}

zc_status zc_swap_stage(zc_swap *s, size_t len, int64_t off, void **out, zc_err *err)
{
    check_range(s, len, off);
    const int64_t end = off + (int64_t)len, a0 = align_down(off), a1 = align_up(end);
    ZC_ASSERT(out != NULL && a1 - a0 <= BOUNCE); /* ZC_SWAP_VIEW_MAX bytes always fit */
    const int64_t tail = a1 - ZC_AIO_ALIGN;
    zc_status st = ZC_OK;
    /* partial blocks at the edges keep the bytes around them */
    if (off > a0)
        st = fill(s, a0, a0, a0 + ZC_AIO_ALIGN, err);
    if (!st && end < a1 && !(tail == a0 && off > a0))
        st = fill(s, a0, tail, a1, err);
    s->staged_off = st ? -1 : a0;
    s->staged_len = st ? 0 : a1 - a0;
    *out = st ? NULL : s->bounce + (off - a0);
    return st;
}

zc_status zc_swap_commit(zc_swap *s, zc_err *err)
{
    ZC_ASSERT(s != NULL && s->staged_off >= 0);
    const int64_t a0 = s->staged_off, n = s->staged_len;
    s->staged_off = -1;
    int e = n ? zc_aio_pio(s->fd, true, s->bounce, (size_t)n, a0) : 0;
    return e ? zc_aio_error(err, s->path, true, (size_t)n, a0, e) : ZC_OK;
}

zc_status zc_swap_pread(zc_swap *s, void *dst, size_t len, int64_t off, zc_err *err)
{
    ZC_ASSERT(dst != NULL || len == 0);
    char *d = dst;
    zc_status st = ZC_OK;
    for (size_t o = 0; !st && o < len;) {
        /* up to the window's end: whole 1 MiB reads once off is aligned */
        const int64_t at = off + (int64_t)o;
        size_t n = (size_t)(align_down(at) + BOUNCE - at);
        n = n < len - o ? n : len - o;
        const void *p;
        if (!(st = zc_swap_view(s, n, at, &p, err)))
            memcpy(d + o, p, n);
        o += n;
    }
    return st;
}

zc_status zc_swap_pwrite(zc_swap *s, const void *src, size_t len, int64_t off, zc_err *err)
{
    ZC_ASSERT(src != NULL || len == 0);
    const char *p = src;
    zc_status st = ZC_OK;
    for (size_t o = 0; !st && o < len;) {
        const int64_t at = off + (int64_t)o;
        size_t n = (size_t)(align_down(at) + BOUNCE - at);
        n = n < len - o ? n : len - o;
        void *w;
        if (!(st = zc_swap_stage(s, n, at, &w, err))) {
            memcpy(w, p + o, n);
            st = zc_swap_commit(s, err);
        }
        o += n;
    }
    return st;
}

zc_status zc_swap_check(zc_swap *s, zc_err *err)
{
    ZC_ASSERT(s != NULL);
    struct stat st;
    if (fstat(s->fd, &st))
        return zc_err_set(err, ZC_EIO, "swap file '%s': fstat: %m", s->path);
    if (st.st_size != s->bytes)
        return zc_err_set(err, ZC_EIO,
                          "swap file '%s' was %s to %lld bytes (expected %lld); the file is "
                          "unlinked, so only this process (or one writing through /proc/%ld/fd) "
                          "can have done it, and the states offloaded to it are lost",
                          s->path, st.st_size < s->bytes ? "truncated" : "extended",
                          (long long)st.st_size, (long long)s->bytes, (long)getpid());
    return ZC_OK;
}
