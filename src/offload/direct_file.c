/* direct_file.c — O_DIRECT sequential writes, double-buffered (direct_file.h).
 *
 * Two page-aligned buffers of BUF bytes: append copies into the current one; a full buffer is
 * handed to the aio engine at its file offset and the other becomes current (after its own
 * previous write has landed). The last, partial buffer is written rounded up to whole 4 KiB
 * blocks and the file then cut back to its size with ftruncate, before the fsync. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "offload/aio.h"
#include "offload/direct_file.h"

enum { BUF = 8 << 20 };

struct zc_direct_file {
    char path[4096];
    int fd;
    bool direct; /* O_DIRECT accepted; else buffered writes */
    zc_aio *aio;
    void *buf[2];
    zc_aio_op op[2];
    int cur;         /* the buffer being filled */
    size_t fill;     /* bytes in it */
    int64_t written; /* bytes handed to the disk (whole buffers) */
};

static zc_status io_error(zc_err *err, const zc_direct_file *f)
{
    return zc_err_set(err, ZC_EIO, "cannot write '%s': %s", f->path, strerror(errno));
}

static void release(zc_direct_file *f)
{
    if (f->aio) {
        zc_aio_wait(f->aio, &f->op[0], NULL);
        zc_aio_wait(f->aio, &f->op[1], NULL);
        zc_aio_destroy(f->aio);
    }
    if (f->fd >= 0)
        close(f->fd);
    free(f->buf[0]);
    free(f->buf[1]);
    free(f);
}

zc_status zc_direct_file_open(zc_direct_file **out, const char *path, zc_err *err)
{
    zc_direct_file *f = calloc(1, sizeof *f);
    if (!f)
        return zc_err_set(err, ZC_ENOMEM, "out of memory writing '%s'", path);
    snprintf(f->path, sizeof f->path, "%s", path);
    f->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT | O_CLOEXEC, 0644);
    f->direct = f->fd >= 0;
    if (f->fd < 0 && errno == EINVAL) /* no O_DIRECT on this file system */
        f->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (f->fd < 0) {
        zc_status st = zc_err_set(err, ZC_EIO, "cannot create '%s': %s", path, strerror(errno));
        release(f);
        return st;
    }
    zc_aio_config cfg = {.engine = ZC_AIO_AUTO,
                         .block_size = 1 << 20,
                         .queue_depth = 8,
                         .thread_count = 1,
                         .overlap_events = true};
    zc_status st = ZC_OK;
    if (posix_memalign(&f->buf[0], ZC_AIO_ALIGN, BUF) ||
        posix_memalign(&f->buf[1], ZC_AIO_ALIGN, BUF))
        st = zc_err_set(err, ZC_ENOMEM, "out of memory writing '%s'", path);
    if (!st && f->direct)
        st = zc_aio_create(&f->aio, &cfg, err);
    if (st) {
        release(f);
        unlink(path);
        return st;
    }
    *out = f;
    return ZC_OK;
}

/* Hands the current buffer (len bytes, a multiple of 4 KiB when direct) to the disk. */
static zc_status flush(zc_direct_file *f, size_t len, zc_err *err)
{
    if (!f->direct) {
        for (size_t done = 0; done < len;) {
            ssize_t w = write(f->fd, (char *)f->buf[f->cur] + done, len - done);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                return io_error(err, f);
            done += (size_t)w;
        }
    } else {
        zc_aio_write(f->aio, &f->op[f->cur], f->fd, f->path, f->buf[f->cur], len, f->written);
    }
    f->written += (int64_t)len;
    f->cur ^= 1;
    f->fill = 0;
    /* the new current buffer's previous write must land before it is refilled */
    return f->direct ? zc_aio_wait(f->aio, &f->op[f->cur], err) : ZC_OK;
}

zc_status zc_direct_file_append(zc_direct_file *f, const void *data, size_t n, zc_err *err)
{
    const char *p = data;
    while (n) {
        size_t k = BUF - f->fill < n ? BUF - f->fill : n;
        memcpy((char *)f->buf[f->cur] + f->fill, p, k);
        f->fill += k, p += k, n -= k;
        if (f->fill == BUF) {
            zc_status st = flush(f, BUF, err);
            if (st)
                return st;
        }
    }
    return ZC_OK;
}

zc_status zc_direct_file_close(zc_direct_file *f, zc_err *err)
{
    int64_t size = f->written + (int64_t)f->fill;
    size_t tail = f->direct ? (f->fill + ZC_AIO_ALIGN - 1) / ZC_AIO_ALIGN * ZC_AIO_ALIGN : f->fill;
    memset((char *)f->buf[f->cur] + f->fill, 0, tail - f->fill);
    zc_status st = tail ? flush(f, tail, err) : ZC_OK;
    for (int b = 0; !st && f->direct && b < 2; b++) /* both buffers' last writes */
        st = zc_aio_wait(f->aio, &f->op[b], err);
    if (!st && (ftruncate(f->fd, size) || fsync(f->fd)))
        st = io_error(err, f);
    if (!st && close(f->fd))
        st = io_error(err, f);
    else if (!st)
        f->fd = -1;
    release(f);
    return st;
}

void zc_direct_file_abort(zc_direct_file *f)
{
    if (f)
        release(f);
}
