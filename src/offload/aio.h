/* aio.h — asynchronous block I/O on O_DIRECT files, through io_uring or a pthread pool.
 *
 * The engine streams model states to and from swap files while it computes, so every transfer
 * is started, then waited for later. A transfer (zc_aio_op, owned by the caller) of len bytes is
 * split into requests of at most block_size bytes; at most queue_depth requests are in the
 * kernel (io_uring) or being served (pool) at once, the rest wait in a queue. The engine is
 * chosen at create (ZC_AIO_AUTO: io_uring when io_uring_queue_init succeeds, else the pool) and
 * reported by zc_aio_engine_used, so both can be tested on one machine.
 *
 * io_uring: the caller's thread fills and submits SQEs under the engine's mutex; one reaper
 * thread sleeps in io_uring_wait_cqe, retries short transfers, hands queued requests to the
 * kernel as slots free up and wakes the waiter. Pool: thread_count workers take requests and do
 * pread/pwrite. Either way the I/O goes on while the caller computes, and a wait sleeps on a
 * condition variable (no spinning, no polling by the caller).
 *
 * Short reads and writes are retried for the remainder; EINTR/EAGAIN retried; a read that hits
 * the end of the file (0 bytes) is an error ("unexpected end of file") — a swap file is
 * preallocated, so that means someone truncated it. The first error of a transfer is kept and
 * reported by zc_aio_wait with the file, the operation, the offset and errno.
 *
 * Buffers, offsets and lengths must be multiples of ZC_AIO_ALIGN (O_DIRECT). Not thread-safe on
 * the caller's side: one thread (the one driving training) submits and waits.
 *
 *     zc_aio *a;
 *     zc_aio_config cfg = {.engine = ZC_AIO_AUTO, .block_size = 1 << 20, .queue_depth = 8,
 *                          .thread_count = 1, .overlap_events = true};
 *     zc_aio_create(&a, &cfg, &err);
 *     zc_aio_op op = {0};                                       // idle
 *     zc_aio_read(a, &op, fd, "swap.bin", buf, 8 << 20, 0);   // starts
 *     ...compute...
 *     if (zc_aio_wait(a, &op, &err)) ...                       // done, or why not
 */
#ifndef ZEROC_OFFLOAD_AIO_H
#define ZEROC_OFFLOAD_AIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zeroc/config.h"
#include "zeroc/status.h"

enum { ZC_AIO_ALIGN = 4096 };
enum { ZC_AIO_EOF = -1 }; /* zc_aio_op.error: a read found the end of the file */

typedef struct {
    zc_aio_engine engine;
    int64_t block_size;  /* bytes per request, a multiple of ZC_AIO_ALIGN, at most 1 GiB */
    int queue_depth;     /* requests in flight at most, 1 ... 32767 */
    int thread_count;    /* threads of the pool engine, 1 ... 1024 */
    bool single_submit;  /* io_uring: one submit call per request instead of per batch */
    bool overlap_events; /* submit queued requests as earlier ones complete (else only once all
                          * in flight have completed) */
} zc_aio_config;

/* One transfer. The fields are aio.c's; the caller only owns the storage, which must stay put
 * from start to wait. A zeroed op is "idle": waiting for it returns at once. A transfer may only
 * be started on an idle op (zeroed, or waited for): ZC_ASSERT(pending == 0). */
typedef struct zc_aio_op {
    int pending; /* requests not yet completed */
    bool write;
    int error;         /* first errno (or ZC_AIO_EOF); 0 if none */
    int64_t error_off; /* file offset of the failed request */
    int64_t off;       /* the transfer's start, and its length */
    size_t len;
    const char *path; /* for messages; must outlive the transfer */
    int inject_errno; /* tests: set on the idle op before the start to complete every request
                       * with this errno, doing no I/O; the wait clears it with the rest */
    /* the queue's */
    int fd;
    char *buf;
    size_t issued;          /* bytes handed to requests so far */
    struct zc_aio_op *next; /* in the queue of transfers with requests not yet issued */
} zc_aio_op;

typedef struct {
    int64_t bytes_read, bytes_written; /* completed */
    double wait_seconds;               /* time the caller spent blocked in zc_aio_wait */
} zc_aio_counters;

typedef struct zc_aio zc_aio;

/* Errors: ZC_EINVAL for a config value out of range, or io_uring asked for and unavailable;
 * ZC_ENOMEM when memory or a thread cannot be had. */
zc_status zc_aio_create(zc_aio **out, const zc_aio_config *cfg, zc_err *err);
/* Waits for every transfer still in flight, then frees. NULL is a no-op. */
void zc_aio_destroy(zc_aio *a);
zc_aio_engine zc_aio_engine_used(const zc_aio *a);
const char *zc_aio_engine_name(zc_aio_engine e); /* "auto", "io_uring", "threads" */

/* Start a transfer of len bytes between buf and file offset off of fd (opened O_DIRECT). */
void zc_aio_read(zc_aio *a, zc_aio_op *op, int fd, const char *path, void *buf, size_t len,
                 int64_t off);
void zc_aio_write(zc_aio *a, zc_aio_op *op, int fd, const char *path, const void *buf, size_t len,
                  int64_t off);
/* Has the transfer completed (successfully or not)? Never waits for I/O (only for the mutex). */
bool zc_aio_done(zc_aio *a, const zc_aio_op *op);
/* Blocks until the transfer has completed; ZC_EIO names the file, read/write, the failed
 * request's length and offset, and the error. The op is idle afterwards. */
zc_status zc_aio_wait(zc_aio *a, zc_aio_op *op, zc_err *err);

zc_aio_counters zc_aio_get_counters(const zc_aio *a);

/* For src/offload's synchronous paths: all len bytes, with the engines' retry rules (short
 * transfers, EINTR, EAGAIN) and alignment. Returns 0, an errno, or ZC_AIO_EOF. */
int zc_aio_pio(int fd, bool write, void *buf, size_t len, int64_t off);
/* The message zc_aio_wait gives for error (an errno or ZC_AIO_EOF) on len bytes at off, e.g.
 * "swap file 'P': read of 1048576 bytes at offset 4096: Input/output error". Returns ZC_EIO. */
zc_status zc_aio_error(zc_err *err, const char *path, bool write, size_t len, int64_t off,
                       int error);

#endif
