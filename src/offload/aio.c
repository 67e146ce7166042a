/* aio.c — asynchronous block I/O through io_uring or a pthread pool (contract in aio.h).
 *
 * Why it is shaped this way:
 * - Both engines share one scheduler, under one mutex: a FIFO of transfers whose requests have
 *   not all been issued, and queue_depth request slots allocated at create. A request is a slot;
 *   starting a transfer allocates nothing, so zc_aio_read/write cannot fail (they return void)
 *   and no request count is limited by memory. pump() moves requests from the FIFO into free
 *   slots — at once when overlap_events is set, else only when nothing is in flight — and is run
 *   by the caller on start and by whoever completes a request.
 * - io_uring: the SQ ring is touched only under the mutex (the caller's start, the reaper's
 *   retries and refills); the CQ ring only by the reaper thread, which sleeps in
 *   io_uring_wait_cqe and retires CQEs before taking the mutex, so the CQ never waits for a
 *   submitter. At most queue_depth requests are in the kernel and the rings have queue_depth + 1
 *   entries (the +1 is the NOP that stops the reaper), so an SQE is always at hand and the CQ
 *   cannot overflow. single_submit calls io_uring_submit after every SQE, else once per pump.
 * - Pool: thread_count workers take slots from a ready list and run pread/pwrite to completion.
 * - The threads block asynchronous signals: a program's handlers run on its own threads, and a
 *   signal meant to interrupt the program is not swallowed by an I/O thread.
 * - A short transfer is retried from the last aligned position it reached (O_DIRECT refuses an
 *   unaligned remainder); rewriting or rereading a few bytes is harmless, and a retry that gets
 *   no further is the end of the file (read) or an error (write).
 * - Completion is a counter per transfer (pending requests) and one condition variable; the
 *   library never touches an op after its last request completes, so the caller may reuse it
 *   as soon as zc_aio_wait returns.
 * Programmer errors (NULL, misalignment, a pthread call failing on a valid object) ZC_ASSERT. */
#include <errno.h>
#include <liburing.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "offload/aio.h"

#define STOP_TAG UINT64_MAX /* user_data of the NOP that stops the reaper */

enum { MAX_QUEUE_DEPTH = 32767, MAX_THREADS = 1024 };
static const int64_t MAX_BLOCK = (int64_t)1 << 30;
static const int sync_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT, SIGSYS};

/* One request: a block of one transfer, from issue to completion. */
typedef struct {
    zc_aio_op *op;
    int fd;
    bool write;
    char *buf; /* the request's first byte, at file offset off */
    int64_t off;
    size_t len;
    size_t done; /* bytes known transferred (from the start of the request) */
    size_t pos;  /* where the attempt in progress starts: done, aligned down */
    int next;    /* free list or ready list */
} aio_slot;

typedef struct {
    uint64_t data;
    int res;
} reaped_cqe;

struct zc_aio {
    zc_aio_config cfg;
    zc_aio_engine used;
    pthread_mutex_t mu;
    pthread_cond_t done_cv; /* a transfer completed, or nothing is in flight any more */
    pthread_cond_t work_cv; /* pool: a request is ready, or stop */
    bool mu_ok, done_cv_ok, work_cv_ok, ring_ok;
    struct io_uring ring;
    int unsubmitted; /* io_uring: SQEs prepared, not yet taken by the kernel */
    pthread_t *threads;
    int nthreads; /* started */
    aio_slot *slots;
    int free_head;              /* free slots */
    int ready_head, ready_tail; /* pool: issued requests no worker has taken yet */
    int inflight;               /* slots in use */
    zc_aio_op *qhead, *qtail;
    bool stop;
    struct io_uring_cqe **cqes; /* the reaper's: one batch */
    reaped_cqe *reaped;
    zc_aio_counters ctr;
};

static void lock(zc_aio *a)
{
    int r = pthread_mutex_lock(&a->mu);
    ZC_ASSERT(r == 0);
}

static void unlock(zc_aio *a)
{
    int r = pthread_mutex_unlock(&a->mu);
    ZC_ASSERT(r == 0);
}

static void cv_wait(pthread_cond_t *cv, zc_aio *a)
{
    int r = pthread_cond_wait(cv, &a->mu);
    ZC_ASSERT(r == 0);
}

static void cv_signal(pthread_cond_t *cv, bool all)
{
    int r = all ? pthread_cond_broadcast(cv) : pthread_cond_signal(cv);
    ZC_ASSERT(r == 0);
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ---------- one request's progress (both engines and zc_aio_pio) ---------- */

enum { STEP_DONE, STEP_AGAIN, STEP_FAIL };

/* An attempt of s (from s->pos to the end of the request) returned res: bytes, or -errno. */
static int slot_step(aio_slot *s, long long res, int *error)
{
    if (res == -EINTR || res == -EAGAIN)
        return STEP_AGAIN;
    if (res < 0) {
        *error = (int)-res;
        return STEP_FAIL;
    }
    size_t reached = s->pos + (size_t)res;
    if (reached <= s->done) { /* no progress: the end of the file, or a write that wrote nothing */
        *error = s->write ? EIO : ZC_AIO_EOF;
        return STEP_FAIL;
    }
    s->done = reached;
    if (reached >= s->len)
        return STEP_DONE;
    s->pos = reached & ~(size_t)(ZC_AIO_ALIGN - 1);
    return STEP_AGAIN;
}

/* The whole request with blocking calls: 0 or an error. */
static int slot_run(aio_slot *s)
{
    for (;;) {
        char *p = s->buf + s->pos;
        size_t n = s->len - s->pos;
        off_t at = (off_t)(s->off + (int64_t)s->pos);
        ssize_t r = s->write ? pwrite(s->fd, p, n, at) : pread(s->fd, p, n, at);
        int error = 0;
        switch (slot_step(s, r < 0 ? -(long long)errno : (long long)r, &error)) {
        case STEP_DONE: return 0;
        case STEP_FAIL: return error;
        default: break;
        }
    }
}

static void check_aligned(const void *buf, size_t len, int64_t off)
{
    ZC_ASSERT(buf != NULL || len == 0);
    ZC_ASSERT((uintptr_t)buf % ZC_AIO_ALIGN == 0);
    ZC_ASSERT(len % ZC_AIO_ALIGN == 0);
    ZC_ASSERT(off >= 0 && off % ZC_AIO_ALIGN == 0);
}

int zc_aio_pio(int fd, bool write, void *buf, size_t len, int64_t off)
{
    check_aligned(buf, len, off);
    aio_slot s = {.fd = fd, .write = write, .buf = buf, .off = off, .len = len};
    return len ? slot_run(&s) : 0;
}

zc_status zc_aio_error(zc_err *err, const char *path, bool write, size_t len, int64_t off,
                       int error)
{
    char buf[128];
    const char *why = error == ZC_AIO_EOF ? "unexpected end of file (was the file truncated?)"
                                          : strerror_r(error, buf, sizeof buf);
    return zc_err_set(err, ZC_EIO, "file '%s': %s of %zu bytes at offset %lld: %s",
                      path ? path : "(unnamed)", write ? "write" : "read", len, (long long)off,
                      why);
}

/* ---------- the scheduler (all under a->mu) ---------- */

/* io_uring: hands every prepared SQE to the kernel. EINTR/EAGAIN/EBUSY are the kernel's "try
 * again" (EBUSY cannot happen while the CQ has room, which it always has); anything else means
 * the ring itself is broken, a programmer error. */
static void uring_flush(zc_aio *a)
{
    while (a->unsubmitted > 0) {
        int r = io_uring_submit(&a->ring);
        if (r > 0) {
            a->unsubmitted -= r < a->unsubmitted ? r : a->unsubmitted;
            continue;
        }
        ZC_ASSERT(r == 0 || r == -EINTR || r == -EAGAIN || r == -EBUSY);
        if (r != -EINTR)
            nanosleep(&(struct timespec){.tv_nsec = 100000}, NULL);
    }
}

/* io_uring: one SQE for slot i's next attempt. */
static void uring_prep(zc_aio *a, int i)
{
    aio_slot *s = &a->slots[i];
    struct io_uring_sqe *sqe = io_uring_get_sqe(&a->ring);
    ZC_ASSERT(sqe != NULL); /* rings have queue_depth + 1 entries */
    char *p = s->buf + s->pos;
    unsigned n = (unsigned)(s->len - s->pos);
    uint64_t at = (uint64_t)(s->off + (int64_t)s->pos);
    if (s->write)
        io_uring_prep_write(sqe, s->fd, p, n, at);
    else
        io_uring_prep_read(sqe, s->fd, p, n, at);
    io_uring_sqe_set_data64(sqe, (uint64_t)i);
    a->unsubmitted++;
    if (a->cfg.single_submit)
        uring_flush(a);
}

/* Hands a filled slot to the engine. */
static void issue(zc_aio *a, int i)
{
    if (a->used == ZC_AIO_URING) {
        uring_prep(a, i);
        return;
    }
    a->slots[i].next = -1;
    if (a->ready_tail >= 0)
        a->slots[a->ready_tail].next = i;
    else
        a->ready_head = i;
    a->ready_tail = i;
    cv_signal(&a->work_cv, false);
}

/* Moves requests from the queue into free slots. */
static void pump(zc_aio *a)
{
    if (!a->cfg.overlap_events && a->inflight > 0)
        return;
    while (a->qhead && a->free_head >= 0) {
        zc_aio_op *op = a->qhead;
        int i = a->free_head;
        aio_slot *s = &a->slots[i];
        a->free_head = s->next;
        size_t left = op->len - op->issued;
        size_t n = left < (size_t)a->cfg.block_size ? left : (size_t)a->cfg.block_size;
        *s = (aio_slot){.op = op,
                        .fd = op->fd,
                        .write = op->write,
                        .buf = op->buf + op->issued,
                        .off = op->off + (int64_t)op->issued,
                        .len = n,
                        .next = -1};
        op->issued += n;
        if (op->issued == op->len) {
            a->qhead = op->next;
            if (!a->qhead)
                a->qtail = NULL;
            op->next = NULL;
        }
        a->inflight++;
        issue(a, i);
    }
}

/* Slot i's request is over (error 0: all of it transferred). */
static void finish(zc_aio *a, int i, int error)
{
    aio_slot *s = &a->slots[i];
    zc_aio_op *op = s->op;
    if (error) {
        if (!op->error) {
            op->error = error;
            op->error_off = s->off;
        }
    } else if (s->write) {
        a->ctr.bytes_written += (int64_t)s->len;
    } else {
        a->ctr.bytes_read += (int64_t)s->len;
    }
    s->op = NULL;
    s->next = a->free_head;
    a->free_head = i;
    a->inflight--;
    /* after this the op is the caller's again: not touched any more */
    if (--op->pending == 0 || a->inflight == 0)
        cv_signal(&a->done_cv, true);
}

/* ---------- threads ---------- */

static void *reaper_main(void *arg)
{
    zc_aio *a = arg;
    const unsigned cap = (unsigned)a->cfg.queue_depth + 1;
    for (bool stop = false; !stop;) {
        struct io_uring_cqe *cqe;
        int r = io_uring_wait_cqe(&a->ring, &cqe);
        if (r == -EINTR || r == -EAGAIN)
            continue;
        ZC_ASSERT(r == 0);
        unsigned n = io_uring_peek_batch_cqe(&a->ring, a->cqes, cap);
        for (unsigned k = 0; k < n; k++)
            a->reaped[k] = (reaped_cqe){io_uring_cqe_get_data64(a->cqes[k]), a->cqes[k]->res};
        io_uring_cq_advance(&a->ring, n);
        lock(a);
        for (unsigned k = 0; k < n; k++) {
            if (a->reaped[k].data == STOP_TAG) {
                stop = true;
                continue;
            }
            int i = (int)a->reaped[k].data, error = 0;
            switch (slot_step(&a->slots[i], a->reaped[k].res, &error)) {
            case STEP_AGAIN:
                uring_prep(a, i); /* the rest of a short transfer: keeps its slot */
                break;
            case STEP_DONE: finish(a, i, 0); break;
            default: finish(a, i, error);
            }
        }
        pump(a);
        uring_flush(a);
        unlock(a);
    }
    return NULL;
}

static void *pool_main(void *arg)
{
    zc_aio *a = arg;
    lock(a);
    for (;;) {
        while (a->ready_head < 0 && !a->stop)
            cv_wait(&a->work_cv, a);
        if (a->ready_head < 0)
            break;
        int i = a->ready_head;
        a->ready_head = a->slots[i].next;
        if (a->ready_head < 0)
            a->ready_tail = -1;
        unlock(a);
        int error = slot_run(&a->slots[i]); /* the slot is this worker's until finish */
        lock(a);
        finish(a, i, error);
        pump(a);
    }
    unlock(a);
    return NULL;
}

/* ---------- life cycle ---------- */

/* Stops and joins the threads started so far; nothing may be in flight. */
static void stop_threads(zc_aio *a)
{
    if (a->nthreads == 0)
        return;
    lock(a);
    a->stop = true;
    if (a->used == ZC_AIO_URING) {
        struct io_uring_sqe *sqe = io_uring_get_sqe(&a->ring);
        ZC_ASSERT(sqe != NULL);
        io_uring_prep_nop(sqe);
        io_uring_sqe_set_data64(sqe, STOP_TAG);
        a->unsubmitted++;
        uring_flush(a);
    } else {
        cv_signal(&a->work_cv, true);
    }
    unlock(a);
    for (int t = 0; t < a->nthreads; t++) {
        int r = pthread_join(a->threads[t], NULL);
        ZC_ASSERT(r == 0);
    }
    a->nthreads = 0;
}

/* Frees what create got; threads already stopped. */
static void teardown(zc_aio *a)
{
    if (a->ring_ok)
        io_uring_queue_exit(&a->ring);
    int r = 0;
    if (a->work_cv_ok)
        r |= pthread_cond_destroy(&a->work_cv);
    if (a->done_cv_ok)
        r |= pthread_cond_destroy(&a->done_cv);
    if (a->mu_ok)
        r |= pthread_mutex_destroy(&a->mu);
    ZC_ASSERT(r == 0); /* nobody holds or waits on them any more */
    free(a->threads);
    free(a->slots);
    free(a->cqes);
    free(a->reaped);
    free(a);
}

static zc_status check_config(const zc_aio_config *c, zc_err *err)
{
    if (c->engine != ZC_AIO_AUTO && c->engine != ZC_AIO_URING && c->engine != ZC_AIO_THREADS)
        return zc_err_set(err, ZC_EINVAL, "aio: unknown engine %d", (int)c->engine);
    if (c->block_size <= 0 || c->block_size % ZC_AIO_ALIGN || c->block_size > MAX_BLOCK)
        return zc_err_set(err, ZC_EINVAL,
                          "aio: block_size %lld must be a positive multiple of %d, at most %lld",
                          (long long)c->block_size, ZC_AIO_ALIGN, (long long)MAX_BLOCK);
    if (c->queue_depth < 1 || c->queue_depth > MAX_QUEUE_DEPTH)
        return zc_err_set(err, ZC_EINVAL, "aio: queue_depth %d must be between 1 and %d",
                          c->queue_depth, MAX_QUEUE_DEPTH);
    if (c->thread_count < 1 || c->thread_count > MAX_THREADS)
        return zc_err_set(err, ZC_EINVAL, "aio: thread_count %d must be between 1 and %d",
                          c->thread_count, MAX_THREADS);
    return ZC_OK;
}

zc_status zc_aio_create(zc_aio **out, const zc_aio_config *cfg, zc_err *err)
{
    ZC_ASSERT(out != NULL && cfg != NULL);
    *out = NULL;
    zc_status st = check_config(cfg, err);
    if (st)
        return st;
    zc_aio *a = calloc(1, sizeof *a);
    if (!a)
        return zc_err_set(err, ZC_ENOMEM, "aio: out of memory");
    a->cfg = *cfg;
    a->free_head = a->ready_head = a->ready_tail = -1;
    const int qd = cfg->queue_depth;
    st = zc_err_set(err, ZC_ENOMEM, "aio: out of memory");
    if (pthread_mutex_init(&a->mu, NULL))
        goto fail;
    a->mu_ok = true;
    if (pthread_cond_init(&a->done_cv, NULL))
        goto fail;
    a->done_cv_ok = true;
    if (pthread_cond_init(&a->work_cv, NULL))
        goto fail;
    a->work_cv_ok = true;
    if (!(a->slots = calloc((size_t)qd, sizeof *a->slots)))
        goto fail;
    for (int i = qd - 1; i >= 0; i--) {
        a->slots[i].next = a->free_head;
        a->free_head = i;
    }

    a->used = ZC_AIO_THREADS;
    if (cfg->engine != ZC_AIO_THREADS) {
        int r = io_uring_queue_init((unsigned)qd + 1, &a->ring, 0);
        if (r == 0) {
            a->ring_ok = true;
            a->used = ZC_AIO_URING;
        } else if (cfg->engine == ZC_AIO_URING) {
            char buf[128];
            st = zc_err_set(err, ZC_EINVAL,
                            "aio engine io_uring is not available here (io_uring_queue_init: "
                            "%s); use \"threads\" or \"auto\"",
                            strerror_r(-r, buf, sizeof buf));
            goto fail;
        }
    }
    const int want = a->used == ZC_AIO_URING ? 1 : cfg->thread_count;
    if (!(a->threads = calloc((size_t)want, sizeof *a->threads)))
        goto fail;
    if (a->used == ZC_AIO_URING && (!(a->cqes = calloc((size_t)qd + 1, sizeof *a->cqes)) ||
                                    !(a->reaped = calloc((size_t)qd + 1, sizeof *a->reaped))))
        goto fail;
    /* the threads take no asynchronous signals: those are the program's (its handlers run
     * on its own threads); faults still reach the thread that caused them */
    sigset_t mask, old;
    sigfillset(&mask);
    for (int k = 0; k < (int)(sizeof sync_signals / sizeof sync_signals[0]); k++)
        sigdelset(&mask, sync_signals[k]);
    int r = pthread_sigmask(SIG_SETMASK, &mask, &old);
    ZC_ASSERT(r == 0);
    for (int t = 0; t < want && !r; t++) {
        r = pthread_create(&a->threads[t], NULL, a->used == ZC_AIO_URING ? reaper_main : pool_main,
                           a);
        a->nthreads += !r;
    }
    int r2 = pthread_sigmask(SIG_SETMASK, &old, NULL);
    ZC_ASSERT(r2 == 0);
    if (r) {
        char buf[128];
        st = zc_err_set(err, ZC_ENOMEM, "aio: cannot start an I/O thread: %s",
                        strerror_r(r, buf, sizeof buf));
        goto fail;
    }
    *out = a;
    return ZC_OK;
fail:
    stop_threads(a);
    teardown(a);
    return st;
}

void zc_aio_destroy(zc_aio *a)
{
    if (!a)
        return;
    lock(a);
    while (a->inflight > 0 || a->qhead)
        cv_wait(&a->done_cv, a);
    unlock(a);
    stop_threads(a);
    teardown(a);
}

zc_aio_engine zc_aio_engine_used(const zc_aio *a)
{
    ZC_ASSERT(a != NULL);
    return a->used;
}

const char *zc_aio_engine_name(zc_aio_engine e)
{
    switch (e) {
    case ZC_AIO_AUTO: return "auto";
    case ZC_AIO_URING: return "io_uring";
    case ZC_AIO_THREADS: return "threads";
    }
    return "unknown";
}

/* ---------- transfers ---------- */

static void start(zc_aio *a, zc_aio_op *op, int fd, const char *path, const void *buf, size_t len,
                  int64_t off, bool write)
{
    ZC_ASSERT(a != NULL && op != NULL);
    check_aligned(buf, len, off);
    const size_t bs = (size_t)a->cfg.block_size, nreq = (len + bs - 1) / bs;
    ZC_ASSERT(nreq <= INT32_MAX);
    lock(a);
    ZC_ASSERT(op->pending == 0); /* started on an idle op */
    const int inject = op->inject_errno;
    *op = (zc_aio_op){.write = write,
                      .off = off,
                      .len = len,
                      .path = path,
                      .inject_errno = inject,
                      .fd = fd,
                      .buf = (char *)buf};
    if (inject) { /* every request fails with it at once; the first is at off */
        op->error = inject;
        op->error_off = off;
    } else if (len) {
        op->pending = (int)nreq;
        if (a->qtail)
            a->qtail->next = op;
        else
            a->qhead = op;
        a->qtail = op;
        pump(a);
        if (a->used == ZC_AIO_URING)
            uring_flush(a);
    }
    unlock(a);
}

void zc_aio_read(zc_aio *a, zc_aio_op *op, int fd, const char *path, void *buf, size_t len,
                 int64_t off)
{
    start(a, op, fd, path, buf, len, off, false);
}

void zc_aio_write(zc_aio *a, zc_aio_op *op, int fd, const char *path, const void *buf, size_t len,
                  int64_t off)
{
    start(a, op, fd, path, buf, len, off, true);
}

bool zc_aio_done(zc_aio *a, const zc_aio_op *op)
{
    ZC_ASSERT(a != NULL && op != NULL);
    lock(a);
    bool done = op->pending == 0;
    unlock(a);
    return done;
}

zc_status zc_aio_wait(zc_aio *a, zc_aio_op *op, zc_err *err)
{
    ZC_ASSERT(a != NULL && op != NULL);
    lock(a);
    if (op->pending > 0) {
        const double t0 = now();
        while (op->pending > 0)
            cv_wait(&a->done_cv, a);
        a->ctr.wait_seconds += now() - t0;
    }
    const zc_aio_op o = *op;
    *op = (zc_aio_op){0};
    const size_t bs = (size_t)a->cfg.block_size;
    unlock(a);
    if (!o.error)
        return ZC_OK;
    /* requests start at off + k·block_size: the failed one's length */
    const size_t rest = (size_t)(o.off + (int64_t)o.len - o.error_off);
    return zc_aio_error(err, o.path, o.write, rest < bs ? rest : bs, o.error_off, o.error);
}

zc_aio_counters zc_aio_get_counters(const zc_aio *a)
{
    ZC_ASSERT(a != NULL);
    zc_aio *m = (zc_aio *)a; /* the mutex only; a is never a const object */
    lock(m);
    zc_aio_counters c = m->ctr;
    unlock(m);
    return c;
}
