/* direct_file.c — O_DIRECT sequential writes, double-buffered, read back as they land
 * (direct_file.h).
 *
 * Two page-aligned buffers of BUF bytes: append copies into the current one; a full buffer is
 * handed to the aio engine at its file offset and the other becomes current (after its own
 * previous write has landed). A write that has landed is then read back into a third buffer
 * while the next write is in flight; each read-back is CRC'd when the next one starts, so the
 * disk always has a write and a read to serve. The last, partial buffer is written rounded up to
 * whole 4 KiB blocks and the file then cut back to its size with ftruncate, before the fsync;
 * what is not yet read back then (the last one or two buffers, or the whole file when written
 * through the page cache) is read with pread. Offsets of reads are multiples of BUF, so aligned;
 * the last read asks for a whole buffer and gets the bytes up to the end of the file. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "offload/aio.h"
#include "offload/direct_file.h"
#include "util/crc32c.h"

enum { BUF = 8 << 20, REQUEST = 1 << 20 }; /* a buffer; one aio request */

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
    uint32_t crc;    /* of the bytes appended so far */
    void *back;      /* the read-back buffer */
    zc_aio_op back_op;
    size_t back_len;   /* bytes of the read-back in flight (back_op), 0 if none */
    int64_t read;      /* bytes whose read-back has started (or is done) */
    uint32_t crc_back; /* of the bytes read back and checked so far */
    int64_t flip_at;   /* test hook: -1, or the offset of the byte to flip once it has landed */
};

static zc_status io_error(zc_err *err, const zc_direct_file *f, const char *what)
{
    return zc_err_set(err, ZC_EIO, "cannot %s '%s': %s", what, f->path, strerror(errno));
}

static void release(zc_direct_file *f)
{
    if (f->aio) {
        zc_aio_wait(f->aio, &f->op[0], NULL);
        zc_aio_wait(f->aio, &f->op[1], NULL);
        zc_aio_wait(f->aio, &f->back_op, NULL);
        zc_aio_destroy(f->aio);
    }
    if (f->fd >= 0)
        close(f->fd);
    free(f->buf[0]);
    free(f->buf[1]);
    free(f->back);
    free(f);
}

static zc_status open_file(zc_direct_file **out, const char *path, bool try_direct, zc_err *err)
{
    zc_direct_file *f = calloc(1, sizeof *f);
    if (!f)
        return zc_err_set(err, ZC_ENOMEM, "out of memory writing '%s'", path);
    snprintf(f->path, sizeof f->path, "%s", path);
    f->flip_at = -1;
    /* 0666 less the umask, as any program's new file */
    f->fd = try_direct ? open(path, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT | O_CLOEXEC, 0666) : -1;
    f->direct = f->fd >= 0;
    if (f->fd < 0 && (!try_direct || errno == EINVAL)) /* EINVAL: no O_DIRECT on this fs */
        f->fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (f->fd < 0) {
        zc_status st = zc_err_set(err, ZC_EIO, "cannot create '%s': %s", path, strerror(errno));
        release(f);
        return st;
    }
    /* a write and a read of one buffer each in flight */
    zc_aio_config cfg = {.engine = ZC_AIO_AUTO,
                         .block_size = REQUEST,
                         .queue_depth = 2 * BUF / REQUEST,
                         .thread_count = 2,
                         .overlap_events = true};
    zc_status st = ZC_OK;
    if (posix_memalign(&f->buf[0], ZC_AIO_ALIGN, BUF) ||
        posix_memalign(&f->buf[1], ZC_AIO_ALIGN, BUF) ||
        posix_memalign(&f->back, ZC_AIO_ALIGN, BUF))
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

zc_status zc_direct_file_open(zc_direct_file **out, const char *path, zc_err *err)
{
    return open_file(out, path, true, err);
}

zc_status zc_direct_file_open_buffered(zc_direct_file **out, const char *path, zc_err *err)
{
    return open_file(out, path, false, err);
}

void zc_direct_file_flip_after_landing(zc_direct_file *f, int64_t off)
{
    f->flip_at = off;
}

/* The test hook's flip, if its byte is in [off, off + len) — through a descriptor of its own,
 * as another process would write. */
static void flip_if_in(zc_direct_file *f, int64_t off, int64_t len)
{
    if (f->flip_at < off || f->flip_at >= off + len)
        return;
    int fd = open(f->path, O_RDWR | O_CLOEXEC);
    unsigned char b;
    if (fd >= 0 && pread(fd, &b, 1, f->flip_at) == 1) {
        b ^= 1;
        if (pwrite(fd, &b, 1, f->flip_at) != 1 || fsync(fd))
            abort(); /* a test hook that cannot do its damage must not pass silently */
    }
    if (fd >= 0)
        close(fd);
    f->flip_at = -1;
}

/* The read-back in flight, if any, lands and is CRC'd; then the bytes up to `landed` (at most
 * one buffer more) start to be read back. */
static zc_status read_back_upto(zc_direct_file *f, int64_t landed, zc_err *err)
{
    if (f->back_len) {
        zc_status st = zc_aio_wait(f->aio, &f->back_op, err);
        if (st)
            return st;
        f->crc_back = zc_crc32c(f->crc_back, f->back, f->back_len);
        f->back_len = 0;
    }
    if (landed > f->read) {
        f->back_len = (size_t)(landed - f->read);
        flip_if_in(f, f->read, (int64_t)f->back_len);
        zc_aio_read(f->aio, &f->back_op, f->fd, f->path, f->back, f->back_len, f->read);
        f->read = landed;
    }
    return ZC_OK;
}

/* Hands the current buffer's n bytes (rounded up to whole blocks when direct) to the disk; once
 * the other buffer's previous write has landed, starts reading that one back. */
static zc_status flush(zc_direct_file *f, size_t n, zc_err *err)
{
    f->crc = zc_crc32c(f->crc, f->buf[f->cur], n);
    if (!f->direct) {
        for (size_t done = 0; done < n;) {
            ssize_t w = write(f->fd, (char *)f->buf[f->cur] + done, n - done);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                return io_error(err, f, "write");
            done += (size_t)w;
        }
        f->written += (int64_t)n;
        f->fill = 0;
        return ZC_OK;
    }
    size_t len = (n + ZC_AIO_ALIGN - 1) / ZC_AIO_ALIGN * ZC_AIO_ALIGN;
    memset((char *)f->buf[f->cur] + n, 0, len - n);
    zc_aio_write(f->aio, &f->op[f->cur], f->fd, f->path, f->buf[f->cur], len, f->written);
    int64_t start = f->written;
    f->written += (int64_t)len;
    f->cur ^= 1;
    f->fill = 0;
    /* the new current buffer's previous write must land before it is refilled */
    zc_status st = zc_aio_wait(f->aio, &f->op[f->cur], err);
    return st ? st : read_back_upto(f, start, err);
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

/* After the fsync: the rest of the file, from f->read to its end, read and CRC'd in place. */
static zc_status read_back_rest(zc_direct_file *f, int64_t size, zc_err *err)
{
    flip_if_in(f, f->read, size - f->read);
    while (f->read < size) {
        ssize_t r = pread(f->fd, f->back, BUF, f->read);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return io_error(err, f, "read back");
        if (r == 0)
            return zc_err_set(err, ZC_EIO,
                              "'%s': read back, it ends at byte %" PRId64 ", not at the %" PRId64
                              " written (the file changed after it was written)",
                              f->path, f->read, size);
        f->crc_back = zc_crc32c(f->crc_back, f->back, (size_t)r);
        f->read += r;
    }
    return ZC_OK;
}

zc_status zc_direct_file_close(zc_direct_file *f, uint32_t *crc, zc_err *err)
{
    int64_t size = f->written + (int64_t)f->fill;
    zc_status st = f->fill ? flush(f, f->fill, err) : ZC_OK;
    for (int b = 0; !st && f->direct && b < 2; b++) /* both buffers' last writes */
        st = zc_aio_wait(f->aio, &f->op[b], err);
    if (!st && (ftruncate(f->fd, size) || fsync(f->fd)))
        st = io_error(err, f, "write");
    if (!st && f->direct)
        st = read_back_upto(f, f->read, err); /* the one in flight */
    if (!st)
        st = read_back_rest(f, size, err);
    if (!st && f->crc_back != f->crc)
        st = zc_err_set(err, ZC_EIO,
                        "'%s': read back, its CRC32C is %08" PRIx32 ", not the %08" PRIx32
                        " written (the file changed after it was written: another process or "
                        "a failing disk)",
                        f->path, f->crc_back, f->crc);
    if (!st && close(f->fd))
        st = io_error(err, f, "write");
    else if (!st)
        f->fd = -1;
    *crc = f->crc;
    release(f);
    return st;
}

void zc_direct_file_abort(zc_direct_file *f)
{
    if (f)
        release(f);
}
