/* stream.c — sub-groups streamed through RAM slots (stream.h).
 *
 * State per slot: the job it holds (or −1), one read and one write transfer per array. The
 * only rule that orders anything: a slot is refilled (reads of job j) only after the writes of
 * the job it held before (j − B) have landed, since they come from the same buffers. Reads of a
 * job are started in job order, so the disk sees one sequential pass over each array region per
 * step. Reading ahead never waits: done(), next() and poll() refill the slots whose writes have
 * already landed, in job order, and stop at the first that has not; only next() waits, and only
 * for the job it hands out (the update cannot go on without it). A refill that waited in done()
 * for the previous job's writes held the caller — in a folded update, the compute thread between
 * two blocks' products — for a write that needed no waiting for yet. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "offload/stream.h"

typedef struct {
    void *buf[ZC_NSTREAMS];
    zc_aio_op rd[ZC_NSTREAMS], wr[ZC_NSTREAMS];
    int job;                /* job whose data the slot holds or is receiving; −1: none */
    bool writing;           /* wr[] may be in flight */
    bool read[ZC_NSTREAMS]; /* the job's array was read into buf[] */
} slot_t;

struct zc_stream {
    zc_mem *mem;
    zc_aio *aio;
    int nslots;
    int64_t slot_bytes[ZC_NSTREAMS];
    bool read_ahead, write_behind, pin;
    zc_stream_ask_fn ask;
    void *ask_ctx;
    slot_t *slots;
    const zc_stream_job *jobs;
    int njobs;
    int cur;       /* the job next() hands out next */
    int next_read; /* the first job whose reads have not been started */
};

static zc_status wait_writes(zc_stream *s, slot_t *sl, zc_err *err)
{
    zc_status st = ZC_OK;
    if (!sl->writing)
        return ZC_OK;
    for (int a = 0; a < ZC_NSTREAMS; a++) {
        zc_status st2 = zc_aio_wait(s->aio, &sl->wr[a], err);
        if (!st)
            st = st2;
    }
    sl->writing = false;
    return st;
}

/* Reads of job j into its slot, once the slot's previous job is written back. */
static zc_status start_reads(zc_stream *s, int j, zc_err *err)
{
    slot_t *sl = &s->slots[j % s->nslots];
    zc_status st = wait_writes(s, sl, err);
    if (st)
        return st;
    sl->job = j;
    for (int a = 0; a < ZC_NSTREAMS; a++) {
        const zc_stream_ref *r = &s->jobs[j].a[a];
        sl->read[a] = r->swap && (r->in || (r->ask && s->ask && s->ask(s->ask_ctx, j, a)));
        if (sl->read[a]) {
            ZC_ASSERT(r->bytes <= s->slot_bytes[a]);
            zc_swap_read(r->swap, &sl->rd[a], sl->buf[a], (size_t)r->bytes, r->off);
        }
    }
    s->next_read = j + 1;
    return ZC_OK;
}

/* Whether the slot's writes have all landed (or it has none in flight); never waits for I/O. */
static bool writes_landed(zc_stream *s, const slot_t *sl)
{
    for (int a = 0; sl->writing && a < ZC_NSTREAMS; a++)
        if (!zc_aio_done(s->aio, &sl->wr[a]))
            return false;
    return true;
}

/* Starts reads, in job order, for jobs up to `last`. A slot whose old writes are still in flight
 * is waited for (wait) or ends the pass there (start_reads' wait then only collects the landed
 * writes' status). */
static zc_status read_ahead(zc_stream *s, int last, bool wait, zc_err *err)
{
    zc_status st = ZC_OK;
    while (!st && s->next_read <= last && s->next_read < s->njobs &&
           (wait || writes_landed(s, &s->slots[s->next_read % s->nslots])))
        st = start_reads(s, s->next_read, err);
    return st;
}

zc_status zc_stream_create(zc_stream **out, zc_mem *mem, zc_aio *aio, int nslots,
                           const int64_t slot_bytes[ZC_NSTREAMS], bool read_ahead,
                           bool write_behind, bool pin, zc_err *err)
{
    ZC_ASSERT(nslots >= 1);
    zc_stream *s = calloc(1, sizeof *s);
    if (!s)
        return zc_err_set(err, ZC_ENOMEM, "out of memory creating the sub-group stream");
    s->mem = mem;
    s->aio = aio;
    s->nslots = nslots;
    s->read_ahead = read_ahead;
    s->write_behind = write_behind;
    s->pin = pin;
    memcpy(s->slot_bytes, slot_bytes, sizeof s->slot_bytes);
    s->slots = calloc((size_t)nslots, sizeof *s->slots);
    zc_status st =
        s->slots ? ZC_OK : zc_err_set(err, ZC_ENOMEM, "out of memory creating the stream");
    for (int k = 0; !st && k < nslots; k++) {
        s->slots[k].job = -1;
        for (int a = 0; !st && a < ZC_NSTREAMS; a++) {
            if (!slot_bytes[a])
                continue;
            void *p = zc_mem_alloc(mem, ZC_MEM_OFFLOAD, (size_t)slot_bytes[a]);
            if (!p)
                st = zc_err_set(err, ZC_ENOMEM,
                                "out of memory allocating a sub-group slot of "
                                "%lld bytes",
                                (long long)slot_bytes[a]);
            else if (pin && mlock(p, (size_t)slot_bytes[a]))
                st = zc_err_set(err, ZC_ENOMEM,
                                "offload_optimizer.pin_memory: cannot lock %lld "
                                "bytes of sub-group slots in RAM: %s (raise RLIMIT_MEMLOCK, or "
                                "set pin_memory false)",
                                (long long)slot_bytes[a], strerror(errno));
            s->slots[k].buf[a] = p;
        }
    }
    if (st) {
        zc_stream_destroy(s);
        return st;
    }
    *out = s;
    return ZC_OK;
}

void zc_stream_destroy(zc_stream *s)
{
    if (!s)
        return;
    for (int k = 0; s->slots && k < s->nslots; k++) {
        slot_t *sl = &s->slots[k];
        for (int a = 0; a < ZC_NSTREAMS; a++) {
            zc_aio_wait(s->aio, &sl->rd[a], NULL);
            zc_aio_wait(s->aio, &sl->wr[a], NULL);
            if (sl->buf[a]) {
                if (s->pin)
                    munlock(sl->buf[a], (size_t)s->slot_bytes[a]);
                zc_mem_free(s->mem, ZC_MEM_OFFLOAD, sl->buf[a], (size_t)s->slot_bytes[a]);
            }
        }
    }
    free(s->slots);
    free(s);
}

void zc_stream_set_ask(zc_stream *s, zc_stream_ask_fn fn, void *ctx)
{
    s->ask = fn;
    s->ask_ctx = ctx;
}

bool zc_stream_read_in(const zc_stream *s, int a)
{
    ZC_ASSERT(s->cur < s->njobs && a >= 0 && a < ZC_NSTREAMS);
    const slot_t *sl = &s->slots[s->cur % s->nslots];
    return sl->job == s->cur && sl->read[a];
}

zc_status zc_stream_begin(zc_stream *s, const zc_stream_job *jobs, int njobs, zc_err *err)
{
    s->jobs = jobs;
    s->njobs = njobs;
    s->cur = 0;
    s->next_read = 0;
    return s->read_ahead ? read_ahead(s, s->nslots - 1, true, err) : ZC_OK;
}

zc_status zc_stream_next(zc_stream *s, void *a[ZC_NSTREAMS], zc_err *err)
{
    ZC_ASSERT(s->cur < s->njobs);
    int j = s->cur;
    zc_status st = s->next_read <= j ? read_ahead(s, j, true, err) : ZC_OK;
    if (!st && s->read_ahead) /* the jobs after it, as far as their slots are free */
        st = read_ahead(s, j + s->nslots - 1, false, err);
    slot_t *sl = &s->slots[j % s->nslots];
    for (int k = 0; k < ZC_NSTREAMS; k++) {
        const zc_stream_ref *r = &s->jobs[j].a[k];
        zc_status st2 = zc_aio_wait(s->aio, &sl->rd[k], err);
        if (!st)
            st = st2;
        a[k] = r->swap ? sl->buf[k] : r->ram;
    }
    return st;
}

zc_status zc_stream_done(zc_stream *s, zc_err *err)
{
    int j = s->cur++;
    slot_t *sl = &s->slots[j % s->nslots];
    for (int a = 0; a < ZC_NSTREAMS; a++) {
        const zc_stream_ref *r = &s->jobs[j].a[a];
        if (r->swap && r->out) {
            zc_swap_write(r->swap, &sl->wr[a], sl->buf[a], (size_t)r->bytes, r->off);
            sl->writing = true;
        }
    }
    zc_status st = s->write_behind ? ZC_OK : wait_writes(s, sl, err);
    /* the slot of job j + B − 1 held job j − 1: refilled now if its writes have landed, else by a
     * later poll() or next() */
    if (!st && s->read_ahead)
        st = read_ahead(s, j + s->nslots - 1, false, err);
    return st;
}

zc_status zc_stream_poll(zc_stream *s, zc_err *err)
{
    if (!s->jobs || !s->read_ahead || s->cur >= s->njobs)
        return ZC_OK;
    /* job cur + B − 1's slot held job cur − 1, done (the job being updated, cur, keeps its own) */
    return read_ahead(s, s->cur + s->nslots - 1, false, err);
}

zc_status zc_stream_landed(zc_stream *s, int j, zc_err *err)
{
    ZC_ASSERT(j < s->cur);
    slot_t *sl = &s->slots[j % s->nslots];
    /* a slot holding a later job was refilled only after j's writes had landed */
    return sl->job == j ? wait_writes(s, sl, err) : ZC_OK;
}

zc_status zc_stream_end(zc_stream *s, zc_err *err)
{
    zc_status st = ZC_OK;
    for (int k = 0; k < s->nslots; k++) {
        zc_status st2 = wait_writes(s, &s->slots[k], err);
        if (!st)
            st = st2;
    }
    return st;
}
