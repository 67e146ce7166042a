/* engine.c — the ZeRO engine (zeroc/engine.h): what each stage keeps, when it communicates.
 *
 * Layout. Unit u is a flat buffer of padded_u = N·S_u floats; rank r owns [r·S_u, (r+1)·S_u).
 * Per stage, a rank holds (P = params, G = grads, O = optimizer moments):
 *   stage 0: P full, G full, O full      stage 2: P full, G shard, O shard
 *   stage 1: P full, G full, O shard     stage 3: P shard, G shard, O shard
 * Full-unit gradient buffers of stages 2–3 and gathered parameters of stage 3 are "working"
 * memory: they live from first use until the unit's reduce-scatter has copied them out / until
 * release.
 *
 * One arithmetic path for every stage. Gradients are reduce-scattered per unit, in a static order
 * (reverse registration), into the owner's shard: packed into one send buffer (so stage 2–3 can
 * free the full-unit gradient at once) and summed in rank order by src/comm. The norm is each
 * rank's sum of squares over its shard, summed in rank order; the update runs the same kernel on
 * the same shard. Stage 0 then all-gathers the reduced gradients and updates every shard
 * itself; stages 1–2 all-gather the updated parameters; stage 3 gathers at the next acquire.
 * Hence the bitwise agreement of stages 0–3.
 *
 * Lockstep. Every acquire/release/grads_ready call is folded into a running hash. Before each
 * collective the ranks exchange (step, collective, unit, call count, hash); any difference stops
 * all ranks with a message naming step, rank and unit — a mismatched collective would otherwise
 * hang or, worse, silently pair unit A's data on one rank with unit B's on another.
 *
 * Prefetch (stage 3). The first micro-batch records the sequence of acquires; afterwards each
 * acquire starts gathers for the next units of that sequence, up to stage3_prefetch_bucket_size
 * elements in flight and stage3_max_live_parameters gathered in total.
 *
 * Mixed precision. Parameters are stored (and gathered) in pdt, gradients in gdt (stored, and
 * the reduce-scatter's output), sent in cdt; the optimizer range gets an fp32 master copy next to
 * m and v. The model reads fp32 (acquire widens the unit into `view`) or the stored 16-bit
 * values; its gradients go into the fp32 `grad_work`, which is scaled (fp16), rounded to gdt and
 * then to cdt on its way to the reduce-scatter — or, in bf16, the model rounds them itself into
 * the stored type (zc_engine_grad16: the same bits, half the working memory); the reduce-scatter
 * sums in fp32 and rounds once. The step widens gradient
 * chunks for the same optimizer kernels, updates the master, and rounds it into the 16-bit
 * parameters. Every stage applies these roundings to the same elements in the same order, so
 * stages still agree bitwise. */
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "engine/engine_state.h"
#include "util/base_digest.h"
#include "util/clock.h"
#include "engine/init_values.h"
#include "engine/loss_scale.h"
#include "kernels/quantize.h"
#include "offload/aio.h"
#include "offload/stream.h"
#include "offload/swap.h"
#include "util/sha256.h"
#include "zeroc/checked.h"
#include "zeroc/engine.h"
#include "zeroc/optim.h"

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/asan_interface.h>
#else
#define ASAN_POISON_MEMORY_REGION(p, n) ((void)(p), (void)(n))
#define ASAN_UNPOISON_MEMORY_REGION(p, n) ((void)(p), (void)(n))
#endif

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "digests assume little-endian floats");

typedef struct {
    zc_param_info info;
    zc_init init;
    int init_as;       /* the parameter number whose random values it takes (−1: its own) */
    size_t init_first; /* from that parameter's element */
    /* a block of columns (zc_engine_param_init_as_cols): rows of init_row floats, each
     * init_stride elements after the last in the whole; 0: one run of elements */
    size_t init_row, init_stride;
    bool widened;    /* mixed: its fp32 values are filled (while acquired) */
    size_t vec_off;  /* mixed, 1-D: where its fp32 values lie in the unit's view_vec */
    bool grad_given; /* its part of the unit's grad_work was handed to the model (zeroed, or for
                        it to overwrite) this micro-batch */
    bool grad16;     /* its part of grad_full (stages 2–3: grad_w16) was handed to the model to
                        overwrite in the stored 16-bit type this micro-batch (zc_engine_grad16) */
    bool vec_given;  /* stages 2–3 in bf16, 1-D: its fp32 gradient is in the unit's grad_vec this
                        micro-batch (zeroed, or for it to overwrite) */
} param_t;

typedef struct {
    zc_unit_info info;
    void *full;      /* pdt. stages 0–2: params (persistent); stage 3: gathered (working) */
    void *shard_p;   /* pdt. stage 3: this rank's parameter shard */
    bool persistent; /* stage 3: whole on every rank, never gathered (persistence threshold) */
    /* Mixed: the fp32 values the model reads while acquired (working). view_vec holds the 1-D
     * parameters (norms, biases: vec_n elements), allocated at acquire; view the whole unit,
     * allocated only for a unit whose matrices the model reads in fp32 (wants_view: the MLP's
     * fp32 products; the decoder feeds the stored bf16 matrices to its products), so a gathered
     * bf16 unit costs 2 bytes per parameter, not 6. */
    float *view, *view_vec;
    size_t vec_n;
    bool wants_view;
    uint8_t use;      /* ZC_USE_* the model declared (zc_engine_unit_use), widened by what it did */
    void *grad_full;  /* gdt. stages 0–1: gradients (persistent) */
    float *grad_work; /* the model's fp32 gradients, unless it writes grad_full (working) */
    /* Stages 2–3 with bf16 gradients (working, until the reduce-scatter has copied them out):
     * grad_w16 the unit's gradients as stored (padded elements of gdt) — the products write theirs
     * rounded into it (zc_engine_grad16), the 1-D parameters accumulate theirs in the fp32 grad_vec
     * (vec_n elements, at vec_off, as view_vec) and are rounded into it at grads_ready. A unit then
     * costs 2 bytes per parameter of gradient instead of grad_work's 4; grad_work exists only for a
     * unit a model asks an fp32 matrix gradient of (grads_ready then widens the rest into it). */
    void *grad_w16;
    float *grad_vec;
    void *grad_shard; /* gdt. stages 2–3: this rank's reduced gradient shard */
    float *master;    /* mixed: fp32 master copy of the optimizer range */
    uint16_t *rem;    /* compact master instead: the range's 16-bit remainders, which with the
                       * bf16 weights are the master (zc_master_join) */
    float *m, *v;     /* optimizer moments (v unused by SGD) */
    /* AdamW8bit's moments instead of m, v: codes (opt_n bytes each) and one scale per block of
     * ZC_Q8_BLOCK elements of each shard in the range (q8_scales) */
    uint8_t *mq, *vq;
    float *ms, *vs;
    size_t opt_n; /* elements in each of master, m, v */
    bool acquired;
    zc_comm_req *gather; /* stage 3: a gather in flight into full */
    void *qbuf;          /* qwZ: every rank's quantized segment, while the gather is in flight
                          * (comm; zc_qwz_segment_bytes(shard) bytes per rank) */
    void *hpz;           /* hpZ: this rank's slice of the gathered unit within its group,
                          * padded / hpz elements (params), kept from the unit's first gather
                          * after the weights changed; valid while hpz_epoch == e->hpz_epoch */
    int64_t hpz_epoch;
    bool ready;  /* grads_ready called in this micro-batch */
    int ngrad16; /* its parameters handed out by zc_engine_grad16 this micro-batch */
    /* the disk tier (offload): which states live in the swap files, and where */
    zc_unit_offload disk;
    int first_job, njobs; /* its sub-groups in the step's stream; 0 jobs: updated in RAM */
    int first_bjob;       /* fold_bwd: where they start in bjobs */
    void *pread_buf;      /* params on disk: the shard read from disk (ahead of its gather) */
    /* fold_bwd with a compact master: the shard as the last micro-batch's last gather (the
     * backward's) read it — the old bf16 weights, half the master — kept for the unit's update,
     * which then reads no parameter shard (an IO_READ buffer, counted with the reads out) */
    void *oldw;
    /* fold_bwd, compact: none was kept when the update's sub-groups started their reads, so the
     * stream reads the old weights ahead instead (a later gather then keeps none) */
    bool old_in_stream;
    zc_aio_op pread;
    void *gwrite_buf; /* grads on disk: the reduced shard on its way to disk */
    zc_aio_op gwrite;
    double sumsq;      /* grads on disk: Σg² of the shard, taken before it left RAM */
    int64_t nonfinite; /* weights the last update left inf or NaN (this rank's range) */
} unit_t;

enum { CHUNK = 2048 }; /* elements converted at a time through a stack buffer */

enum { EV_ACQUIRE = 1, EV_RELEASE, EV_GRADS_READY };
enum { OP_GATHER = 1, OP_REDUCE_SCATTER, OP_GATHER_GRADS, OP_GATHER_PARAMS, OP_STEP, OP_EXPORT };

typedef struct {
    void *p;
    size_t bytes;
} cached_buf;

/* The two kinds of disk-I/O buffer, each kept within its bound in the offload plan. */
typedef enum {
    IO_READ,    /* a parameter shard read from disk ahead of its gather (plan.param_reads) */
    IO_STAGING, /* a reduced gradient shard on its way to disk (plan.grad_staging) */
    IO_NKINDS
} io_kind;

typedef struct {
    void *p;
    size_t bytes;
    io_kind kind;
} io_buf;

typedef struct {
    int64_t step;
    uint64_t ncalls, hash;
    int32_t op, unit, last_event, last_unit;
} lockstep_rec;

struct zc_engine {
    zc_config cfg;
    zc_ckpt_lineage lineage; /* the checkpoint loaded, for --keep (engine_state.h) */
    bool base_digest_valid;  /* base_digest is the frozen units' digest (set_params clears it) */
    uint64_t base_digest[2];
    zc_comm *comm;
    zc_mem *mem;
    int rank, nranks, stage;
    /* What the stage shards, named once: stage 1 the optimizer state, 2 also the gradients, 3
     * also the parameters. Every stage runs the same arithmetic; these only say where each
     * state lives. */
    bool opt_sharded, grads_sharded, params_sharded;
    bool qwz; /* ZeRO++ qwZ: stage-3 parameter gathers carry int8 blocks (kernels/quantize.h) */
    bool qgz; /* ZeRO++ qgZ: stage-3 gradient reduce-scatters carry int8 blocks */
    int hpz;  /* ZeRO++ hpZ: ranks per group sharing a secondary copy of the parameters, so that
               * every gather of a unit but the first after an update stays within the group
               * (1: off) */
    int64_t hpz_epoch; /* counts the changes of the weights (steps, imports) */
    unit_t *units;
    int nunits, cap_units;
    bool *frozen; /* per unit (cap_units of them): units[u].info.frozen, for the estimate */
    param_t *params;
    int nparams, cap_params;
    bool finalized;
    bool finalize_called; /* finalize ran (it may have failed: then the engine is only destroyed) */
    bool skip_init;       /* the states will be loaded whole: finalize leaves them zero */
    /* the first registration zc_engine_add_unit / add_param refused (they return −1), which
     * zc_engine_finalize then reports on every rank */
    zc_err reg_err;    /* code ZC_OK: none */
    int64_t reg_numel; /* Σ Ψ_u registered so far (each add checked against ZC_MAX_NUMEL) */
    double lr;
    int64_t step; /* optimizer steps completed */
    /* AdamW8bit's import: a block the previous zc_engine_import call left part-filled (its
     * values so far; the rest, past the unit's end, are padding and stay zero) */
    struct {
        int unit;      /* -1: none */
        size_t lo, to; /* the block's first optimizer index, and how far it is filled */
        float m[ZC_Q8_BLOCK], v[ZC_Q8_BLOCK];
    } q8_pend;
    int micro; /* micro-batches completed in the current step */
    /* precision */
    zc_dtype pdt, gdt, cdt; /* stored params, stored grads, reduce-scatter elements */
    size_t ps, gs, cs;      /* their sizes in bytes */
    bool mixed;             /* 16-bit params with an fp32 master copy */
    bool compact;           /* mixed, the master kept as the bf16 weights + remainders (rem) */
    bool direct_grads;      /* the model accumulates straight into grad_full (fp32, stages 0–1) */
    bool grads16;           /* bf16 gradients without a loss scale (zc_config_grads_bf16): the
                             * model may write them in 16 bits (zc_engine_grad16) */
    zc_loss_scaler scaler;
    /* freed working buffers kept for reuse (still counted as working), see work_alloc */
    cached_buf cache[16];
    int ncache;
    /* kept buffers handed out for a slightly smaller request (work_alloc): their mapped size */
    cached_buf lent[16];
    int nlent;
    int64_t cached_bytes; /* their bytes */
    int64_t live_peak;    /* the most working bytes in use at once so far, kept ones not counted */
    /* freed disk-I/O buffers kept for reuse (still counted as offload), see io_alloc */
    io_buf io_cache[16];
    int nio_cache;
    int64_t io_held[IO_NKINDS]; /* live + kept bytes of each kind */
    int64_t io_mapped;          /* disk-I/O buffers mapped since finalize */
    int64_t work_cap;           /* cached + live working bytes stay within the estimator's bound */
    /* reduce-scatter: one slot (send + receive staging, cdt), one chunk in flight */
    void *rs_send, *rs_recv;
    size_t rs_cols;
    size_t rs_bytes;      /* of rs_send: N blocks of rs_cols elements (qgZ: segments) */
    size_t rs_recv_bytes; /* of rs_recv: the N − 1 other ranks' blocks (qgZ: N segments) */
    float *rs_f32;        /* qgZ: one destination's block in fp32, on its way to quantization */
    zc_comm_req *rs_req;
    int rs_next; /* index into the static order (reverse registration) */
    /* lockstep */
    uint64_t hash, ncalls;
    int last_event, last_unit;
    /* stage 3 prefetch */
    int *trace;
    int trace_len, trace_cap, trace_pos;
    bool trace_done;
    int64_t inflight_elems, gathered_elems;
    int64_t prefetch_elems;                 /* stage3_prefetch_bucket_size, "auto" resolved */
    int64_t prefetch_hits, prefetch_misses; /* stage-3 acquires whose gather had started */
    /* the disk tier (offload) */
    bool offload;         /* some state lives in a swap file */
    int64_t nvme_charged; /* bytes of swap files in the ledger */
    zc_offload_plan plan;
    zc_aio *aio;
    zc_swap *swap_opt, *swap_par; /* gradient/optimizer and parameter swap files */
    zc_stream *stream;
    zc_stream_job *jobs; /* the step's sub-groups, units in order */
    int njobs;
    int reads_out; /* parameter shards read from disk, not yet gathered */
    int64_t read_elems_out;
    int rs_last_of;        /* unit whose reduce-scatter's last chunk is in flight, or −1 */
    int gw_last;           /* unit whose gradient write started last, or −1 */
    double update_seconds; /* the steps' update phases, and their disk traffic */
    int64_t update_read, update_written;
    /* The update zc_engine_step started: units are updated in registration order from
     * upd_next, with the step's hyperparameters kept here. Unfolded, the step updates them all
     * before it returns; folded (fold_update: stage 3 with a state on disk), each waits for the
     * next forward, which updates it just before its gather and gathers the shard the update
     * produced instead of reading it back from disk. */
    bool fold;
    /* fold_update without gradient_clipping or fp16's loss scale: the update needs no look at
     * every gradient first, so each unit's runs in the backward, as soon as its reduced
     * gradient shard has landed (units in reverse registration order, the reduce-scatter's; the
     * sub-groups from bjobs). No gradient shard goes to disk and back at the step's last
     * micro-batch. bwd_open: that micro-batch's updates have started (bwd_updated of them run). */
    bool fold_bwd, bwd_open;
    zc_stream_job *bjobs;
    int *bjob_unit; /* the unit of each of bjobs */
    /* fold_bwd, compact: each unit's last position in the recorded acquires (−1: its shard is not
     * kept), and how many acquires were recorded when its gradients were handed back */
    int *last_use, *ready_pos;
    int nold; /* units holding oldw */
    int bwd_updated;
    int64_t updates_in_backward; /* units updated in the backward, all steps */
    bool upd_open;               /* units from upd_next on are not updated yet */
    int upd_next;
    float upd_gscale;
    double upd_lr;
    int64_t upd_step;             /* the optimizer step taken (Adam's bias correction) */
    long long upd_label;          /* its number in messages */
    zc_comm_req *upd_gather;      /* a persistent unit's all-gather after its update */
    int64_t shards_from_update;   /* stage-3 gathers fed by the update, not by a disk read */
    int64_t shards_read_in_place; /* stage-3 shards read straight into the gathered buffer */
    int64_t param_bytes_read;     /* stage-3 shard reads started (param_read_start) */
    char label[192];
};

/* ---------- helpers ---------- */

static const char *event_name(int ev)
{
    return ev == EV_ACQUIRE       ? "acquire"
           : ev == EV_RELEASE     ? "release"
           : ev == EV_GRADS_READY ? "grads_ready"
                                  : "none";
}

static const char *op_name(int op)
{
    switch (op) {
    case OP_GATHER: return "all_gather of parameters";
    case OP_REDUCE_SCATTER: return "reduce_scatter of gradients";
    case OP_GATHER_GRADS: return "all_gather of reduced gradients";
    case OP_GATHER_PARAMS: return "all_gather of updated parameters";
    case OP_STEP: return "zc_engine_step";
    case OP_EXPORT: return "gather for export";
    }
    return "?";
}

static const char *unit_name(const zc_engine *e, int u)
{
    return u >= 0 && u < e->nunits ? e->units[u].info.name : "(none)";
}

/* The step being taken as the trainer numbers it: the optimizer's steps plus the boundaries
 * fp16 skipped (the scaler's count, carried over on resume; no other run skips a step). */
static long long step_number(const zc_engine *e)
{
    return (long long)e->step + (long long)e->scaler.skipped + 1;
}

static const char *label(zc_engine *e, int u)
{
    if (u < 0) /* the end of a micro-batch's lockstep check: no unit to name */
        snprintf(e->label, sizeof e->label, "end of micro-batch, step %lld", step_number(e));
    else
        snprintf(e->label, sizeof e->label, "unit '%s', step %lld", unit_name(e, u),
                 step_number(e));
    return e->label;
}

static void record(zc_engine *e, int ev, int u)
{
    uint64_t h = e->hash ^ ((uint64_t)ev << 32 | (uint32_t)u);
    e->hash = h * 0x100000001b3ULL; /* FNV-1a style fold */
    e->ncalls++;
    e->last_event = ev;
    e->last_unit = u;
}

/* n elements of es bytes, in the ledger under cat */
static void *alloc_b(zc_engine *e, zc_mem_category cat, size_t n, size_t es)
{
    return zc_mem_alloc(e->mem, cat, n * es);
}

static size_t lent_bytes(zc_engine *e, const void *p, size_t bytes);

static void free_b(zc_engine *e, zc_mem_category cat, void *pp, size_t n, size_t es)
{
    void **p = pp;
    zc_mem_free(e->mem, cat, *p, cat == ZC_MEM_WORKING ? lent_bytes(e, *p, n * es) : n * es);
    *p = NULL;
}

static float *alloc_f(zc_engine *e, zc_mem_category cat, size_t n)
{
    return alloc_b(e, cat, n, sizeof(float));
}

static void free_f(zc_engine *e, zc_mem_category cat, float **p, size_t n)
{
    free_b(e, cat, p, n, sizeof(float));
}

/* Working buffers (fp32 views, gradient buffers, gathered units) come and go every micro-batch.
 * Mapping them afresh costs a page fault per 4 KiB on every use (measured at GPT-2 124M: ~2 GB
 * of faults per step, a third of the step), so a freed buffer is kept and handed to the next
 * request of the same size. Kept buffers stay in the ledger's working category, and are only
 * kept while the category stays within zc_estimate_working_bound and within the most working
 * memory the run has had in use at once (live_peak): memory is reused, never hidden, and the
 * kept buffers never raise the working peak above what the run needs — kept buffers of other
 * sizes are given back before a new one is mapped past it (at Llama 3.1 8B's vocabulary, units
 * of two sizes once kept 2.8 GB for a run whose buffers in use never passed 1.7). work_alloc may
 * lend a kept buffer to a slightly smaller request. */
static void uncache(zc_engine *e, int k)
{
    cached_buf c = e->cache[k];
    e->cache[k] = e->cache[--e->ncache];
    e->cached_bytes -= (int64_t)c.bytes;
    ASAN_UNPOISON_MEMORY_REGION(c.p, c.bytes);
    zc_mem_free(e->mem, ZC_MEM_WORKING, c.p, c.bytes);
}

static void note_live(zc_engine *e)
{
    const int64_t live = zc_mem_get(e->mem, ZC_MEM_WORKING).current - e->cached_bytes;
    if (live > e->live_peak)
        e->live_peak = live;
}

/* The mapped size of working buffer p, freed as `bytes`: larger where work_alloc lent it a kept
 * buffer (the entry is dropped). */
static size_t lent_bytes(zc_engine *e, const void *p, size_t bytes)
{
    for (int k = 0; p && k < e->nlent; k++)
        if (e->lent[k].p == p) {
            bytes = e->lent[k].bytes;
            e->lent[k] = e->lent[--e->nlent];
            break;
        }
    return bytes;
}

/* A kept buffer serves a request of its size, or of up to 1/32 less: units of nearly one size
 * (vocabulary tiles bounded by a block's size, and the blocks) would otherwise map afresh at every
 * change from one to the other. The memory is charged at its mapped size throughout. (Lending a
 * much larger buffer was tried: the next request of its size then maps another, and the working
 * peak rose by a block.) */
static void *work_alloc(zc_engine *e, size_t bytes, bool zeroed)
{
    int best = -1;
    for (int k = 0; k < e->ncache; k++) {
        const size_t have = e->cache[k].bytes;
        if (have == bytes) {
            best = k;
            break;
        }
        if (have > bytes && have - bytes <= bytes / 32 &&
            e->nlent < (int)(sizeof e->lent / sizeof e->lent[0]) &&
            (best < 0 || have < e->cache[best].bytes))
            best = k;
    }
    if (best >= 0) {
        const cached_buf c = e->cache[best];
        e->cache[best] = e->cache[--e->ncache];
        e->cached_bytes -= (int64_t)c.bytes;
        if (c.bytes != bytes)
            e->lent[e->nlent++] = c;
        ASAN_UNPOISON_MEMORY_REGION(c.p, c.bytes);
        if (zeroed)
            memset(c.p, 0, bytes);
        note_live(e);
        return c.p;
    }
    const int64_t cur = zc_mem_get(e->mem, ZC_MEM_WORKING).current, live = cur - e->cached_bytes;
    const int64_t need =
        live + (int64_t)bytes > e->live_peak ? live + (int64_t)bytes : e->live_peak;
    while (e->ncache && zc_mem_get(e->mem, ZC_MEM_WORKING).current + (int64_t)bytes > need)
        uncache(e, e->ncache - 1);
    void *p = zc_mem_alloc(e->mem, ZC_MEM_WORKING, bytes);
    note_live(e);
    return p;
}

static void work_free(zc_engine *e, void *pp, size_t bytes)
{
    void **p = pp;
    if (!*p)
        return;
    bytes = lent_bytes(e, *p, bytes);
    int cap = (int)(sizeof e->cache / sizeof e->cache[0]);
    const int64_t cur = zc_mem_get(e->mem, ZC_MEM_WORKING).current;
    if (e->ncache < cap && cur <= e->work_cap && cur <= e->live_peak) {
        /* a model still reading a released unit's view is a use-after-free to ASan */
        ASAN_POISON_MEMORY_REGION(*p, bytes);
        e->cache[e->ncache++] = (cached_buf){*p, bytes};
        e->cached_bytes += (int64_t)bytes;
    } else
        zc_mem_free(e->mem, ZC_MEM_WORKING, *p, bytes);
    *p = NULL;
}

/* element i of a buffer of es-byte elements */
static void *at(void *base, size_t i, size_t es)
{
    return (char *)base + i * es;
}

/* n elements of es bytes as whole 4 KiB blocks: the size of a swap-file region and of the RAM
 * buffer that reads or writes it (O_DIRECT). */
static size_t blocks(size_t n, size_t es)
{
    return (n * es + ZC_AIO_ALIGN - 1) / ZC_AIO_ALIGN * ZC_AIO_ALIGN;
}

static zc_status oom(zc_engine *e, zc_err *err, const char *what, int u, size_t bytes);
static bool sharded16(const zc_engine *e);
static zc_status update_units(zc_engine *e, int through, void *capture, zc_err *err);
static bool update_pending(const zc_engine *e, int i);
static zc_status update_folded(const zc_engine *e, const char *call, zc_err *err);

/* The bound the offload plan sets on the disk-I/O buffers of a kind, live and kept. */
static int64_t io_bound(const zc_engine *e, io_kind kind)
{
    return kind == IO_READ ? e->plan.param_reads : e->plan.grad_staging;
}

/* Whether a kind's buffers are locked in RAM (offload_*.pin_memory). */
static bool io_pinned(const zc_engine *e, io_kind kind)
{
    return kind == IO_READ ? e->cfg.param_pin_memory : e->cfg.optimizer_pin_memory;
}

static void io_unmap(zc_engine *e, void *p, size_t bytes, io_kind kind)
{
    if (io_pinned(e, kind))
        munlock(p, bytes);
    zc_mem_free(e->mem, ZC_MEM_OFFLOAD, p, bytes);
    e->io_held[kind] -= (int64_t)bytes;
}

/* A buffer for disk I/O (page-aligned: a whole number of pages is mmap'd by the ledger), in
 * the offload category, locked in RAM when its kind's pin_memory is set (pin_key names that
 * key). Every parameter read and gradient write of a step needs one, shard after shard: mapping
 * each afresh cost 6.7 GB of page faults per rank per step at 2.2 B parameters (~3.4 s without
 * huge pages), so a freed buffer is kept (locked still, if pinned) and handed to the next
 * request of the same kind and size — the transformer's blocks share one size, so after the
 * first step none is mapped. Kept buffers stay in the ledger's offload category and within the
 * plan's bound of their kind: one of another size is given back before a new one would pass it.
 * A lock refused names the key and the limit (pin_check has compared the bound with
 * RLIMIT_MEMLOCK before step 1, so only what else the process locked can bring this). */
static zc_status io_alloc(zc_engine *e, io_kind kind, void **out, size_t bytes, const char *what,
                          int u, zc_err *err)
{
    for (int k = 0; k < e->nio_cache; k++) {
        io_buf *b = &e->io_cache[k];
        if (b->kind != kind || b->bytes != bytes)
            continue;
        *out = b->p;
        *b = e->io_cache[--e->nio_cache];
        ASAN_UNPOISON_MEMORY_REGION(*out, bytes);
        return ZC_OK;
    }
    for (int k = e->nio_cache - 1; k >= 0 && e->io_held[kind] + (int64_t)bytes > io_bound(e, kind);
         k--) {
        io_buf b = e->io_cache[k];
        if (b.kind != kind)
            continue;
        e->io_cache[k] = e->io_cache[--e->nio_cache];
        ASAN_UNPOISON_MEMORY_REGION(b.p, b.bytes);
        io_unmap(e, b.p, b.bytes, kind);
    }
    void *p = zc_mem_alloc(e->mem, ZC_MEM_OFFLOAD, bytes);
    if (!p)
        return oom(e, err, what, u, bytes);
    if (io_pinned(e, kind) && mlock(p, bytes)) {
        const char *key =
            kind == IO_READ ? "offload_param.pin_memory" : "offload_optimizer.pin_memory";
        zc_status st = zc_err_set(err, ZC_ENOMEM,
                                  "rank %d: %s: cannot lock %s for unit '%s' (%zu bytes) in RAM: "
                                  "%m (raise RLIMIT_MEMLOCK, ulimit -l, or set pin_memory false)",
                                  e->rank, key, what, unit_name(e, u), bytes);
        zc_mem_free(e->mem, ZC_MEM_OFFLOAD, p, bytes);
        return st;
    }
    e->io_held[kind] += (int64_t)bytes;
    e->io_mapped++;
    *out = p;
    return ZC_OK;
}

/* The bytes pin_memory locks at most (the plan's bounds of the buffers each key pins) against
 * RLIMIT_MEMLOCK, before step 1: a lock refused mid-step would stop the run there. Without
 * CAP_IPC_LOCK (root has it) the kernel holds a process to the limit. */
static zc_status pin_check(const zc_engine *e, zc_err *err)
{
    const zc_config *c = &e->cfg;
    const int64_t opt = c->optimizer_pin_memory ? e->plan.slots + e->plan.grad_staging : 0;
    const int64_t par = c->param_pin_memory ? e->plan.param_reads : 0;
    struct rlimit rl;
    if (opt + par == 0 || getrlimit(RLIMIT_MEMLOCK, &rl) || rl.rlim_cur == RLIM_INFINITY ||
        (uint64_t)(opt + par) <= (uint64_t)rl.rlim_cur)
        return ZC_OK;
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    unsigned long long caps = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "CapEff: %llx", &caps) == 1)
            break;
    if (f)
        fclose(f);
    if (caps & (1ull << 14)) /* CAP_IPC_LOCK */
        return ZC_OK;
    return zc_err_set(err, ZC_ENOMEM,
                      "rank %d: pin_memory locks up to %lld bytes of offload buffers in RAM "
                      "(offload_optimizer.pin_memory %lld, offload_param.pin_memory %lld), but "
                      "RLIMIT_MEMLOCK allows %llu bytes: raise it (ulimit -l %lld, in KiB) or "
                      "set pin_memory false",
                      e->rank, (long long)(opt + par), (long long)opt, (long long)par,
                      (unsigned long long)rl.rlim_cur, (long long)((opt + par + 1023) / 1024));
}

/* Hands a disk-I/O buffer back: kept for the next request while its kind stays within the
 * plan's bound (io_alloc), else unmapped. */
static void io_free(zc_engine *e, io_kind kind, void *pp, size_t bytes)
{
    void **p = pp;
    if (!*p)
        return;
    int cap = (int)(sizeof e->io_cache / sizeof e->io_cache[0]);
    if (e->nio_cache < cap && e->io_held[kind] <= io_bound(e, kind)) {
        ASAN_POISON_MEMORY_REGION(*p, bytes); /* a transfer still using it is a bug */
        e->io_cache[e->nio_cache++] = (io_buf){*p, bytes, kind};
    } else
        io_unmap(e, *p, bytes, kind);
    *p = NULL;
}

static zc_status oom(zc_engine *e, zc_err *err, const char *what, int u, size_t bytes)
{
    return zc_err_set(err, ZC_ENOMEM,
                      "rank %d: out of memory allocating %s for unit '%s' (%zu bytes)", e->rank,
                      what, unit_name(e, u), bytes);
}

/* Every rank states where it is; all ranks fail alike if any differs from rank 0. */
static zc_status lockstep_check(zc_engine *e, int op, int u, zc_err *err)
{
    if (e->nranks == 1)
        return ZC_OK;
    lockstep_rec mine = {.step = e->step + 1,
                         .ncalls = e->ncalls,
                         .hash = e->hash,
                         .op = op,
                         .unit = u,
                         .last_event = e->last_event,
                         .last_unit = e->last_unit};
    lockstep_rec stack[16], *all = e->nranks <= 16 ? stack : malloc(sizeof mine * e->nranks);
    if (!all)
        return zc_err_set(err, ZC_ENOMEM, "out of memory in the lockstep check");
    zc_status st = zc_comm_control_gather(e->comm, &mine, all, sizeof mine, label(e, u), err);
    for (int r = 1; !st && r < e->nranks; r++) {
        const lockstep_rec *a = &all[0], *b = &all[r];
        if (a->op == b->op && a->unit == b->unit && a->ncalls == b->ncalls && a->hash == b->hash &&
            a->step == b->step)
            continue;
        st = zc_err_set(
            err, ZC_ELOCKSTEP,
            "lockstep violation at step %lld: rank %d is at %s%s%s%s after %llu engine calls "
            "(last: %s of unit '%s'), but rank 0 is at %s%s%s%s after %llu calls (last: %s of "
            "unit '%s'); every rank must acquire, release and hand back the same units in the "
            "same order",
            (long long)b->step, r, op_name(b->op), b->unit >= 0 ? " of unit '" : "",
            b->unit >= 0 ? unit_name(e, b->unit) : "", b->unit >= 0 ? "'" : "",
            (unsigned long long)b->ncalls, event_name(b->last_event), unit_name(e, b->last_unit),
            op_name(a->op), a->unit >= 0 ? " of unit '" : "",
            a->unit >= 0 ? unit_name(e, a->unit) : "", a->unit >= 0 ? "'" : "",
            (unsigned long long)a->ncalls, event_name(a->last_event), unit_name(e, a->last_unit));
    }
    if (all != stack)
        free(all);
    return st;
}

/* ---------- creation and registration ---------- */

zc_status zc_engine_create(zc_engine **out, const zc_config *cfg, zc_comm *comm, zc_mem *mem,
                           zc_err *err)
{
    if (out)
        *out = NULL;
    if (!out || !cfg || !comm || !mem)
        return zc_err_set(err, ZC_EINVAL, "zc_engine_create: %s is NULL",
                          !out    ? "out"
                          : !cfg  ? "cfg"
                          : !comm ? "comm"
                                  : "mem");
    zc_status st = zc_config_validate(cfg, zc_comm_size(comm), err);
    if (st)
        return st;
    zc_engine *e = calloc(1, sizeof *e);
    if (!e)
        return zc_err_set(err, ZC_ENOMEM, "out of memory creating the engine");
    e->cfg = *cfg;
    e->comm = comm;
    e->mem = mem;
    e->q8_pend.unit = -1;
    e->rank = zc_comm_rank(comm);
    e->nranks = zc_comm_size(comm);
    e->stage = cfg->stage;
    e->opt_sharded = e->stage >= 1;
    e->grads_sharded = e->stage >= 2;
    e->params_sharded = e->stage == 3;
    e->qwz = e->params_sharded && cfg->quantized_weights;
    e->qgz = e->params_sharded && cfg->quantized_gradients;
    e->hpz = e->params_sharded ? cfg->hpz_partition_size : 1;
    e->lr = cfg->lr;
    e->last_unit = -1;
    e->rs_last_of = -1;
    e->gw_last = -1;
    e->pdt = cfg->dtype;
    e->gdt = zc_config_grad_dtype(cfg);
    e->cdt = zc_config_comm_dtype(cfg);
    e->ps = (size_t)zc_dtype_size(e->pdt);
    e->gs = (size_t)zc_dtype_size(e->gdt);
    e->cs = (size_t)zc_dtype_size(e->cdt);
    e->mixed = e->pdt != ZC_FP32;
    e->compact = cfg->compact_master && e->pdt == ZC_BF16 && cfg->optim != ZC_OPTIM_SGD;
    e->direct_grads = !e->grads_sharded && e->gdt == ZC_FP32;
    e->grads16 = zc_config_grads_bf16(cfg);
    zc_loss_scaler_init(&e->scaler, cfg);
    zc_comm_set_timeout(comm, cfg->comm_timeout_s);
    if ((st = zc_comm_set_group_size(comm, e->hpz, err))) {
        free(e);
        return st;
    }
    *out = e;
    return ZC_OK;
}

/* Makes room for one more element in a growing array (registration is rare: doubling); NULL if
 * out of memory (the array is then unchanged). */
static void *grow(void *array, int count, int *cap, size_t elem)
{
    if (count < *cap)
        return array;
    int bigger_cap = *cap ? 2 * *cap : 16;
    void *bigger = realloc(array, (size_t)bigger_cap * elem);
    if (bigger)
        *cap = bigger_cap;
    return bigger;
}

/* A registration refused: keeps the first reason for zc_engine_finalize to report on every rank
 * (add_unit and add_param return −1, and have no error channel of their own). */
static int refuse_registration(zc_engine *e, zc_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int refuse_registration(zc_engine *e, zc_status code, const char *fmt, ...)
{
    if (e->reg_err.code == ZC_OK) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->reg_err.msg, sizeof e->reg_err.msg, fmt, ap);
        va_end(ap);
        e->reg_err.code = code;
    }
    return -1;
}

/* A registration after zc_engine_finalize (or a failed one), or with a bad name: why, or NULL. */
static const char *registration_closed(const zc_engine *e)
{
    return e->finalized         ? "the engine is already finalized; register before "
                                  "zc_engine_finalize"
           : e->finalize_called ? "zc_engine_finalize failed on this engine; destroy it"
                                : NULL;
}

/* "[d0, d1, …]" of a shape, into buf. */
static const char *shape_text(char *buf, size_t cap, int ndim, const int64_t *shape)
{
    size_t k = (size_t)snprintf(buf, cap, "[");
    for (int d = 0; d < ndim && k < cap; d++)
        k += (size_t)snprintf(buf + k, cap - k, "%s%lld", d ? ", " : "", (long long)shape[d]);
    if (k < cap)
        snprintf(buf + k, cap - k, "]");
    return buf;
}

/* A registration's name that is missing or too long: refused, naming the call. */
static int refuse_name(zc_engine *e, const char *call, const char *name)
{
    return refuse_registration(e, ZC_EINVAL,
                               "%s: the name %s%.40s%s is %s; expected a string of at most %d "
                               "bytes",
                               call, name ? "'" : "", name ? name : "NULL", name ? "…'" : "",
                               name ? "too long" : "missing", ZC_MAX_NAME - 1);
}

int zc_engine_add_unit(zc_engine *e, const char *name)
{
    if (!e)
        return -1;
    const char *closed = registration_closed(e);
    if (closed)
        return refuse_registration(e, ZC_ESTATE, "zc_engine_add_unit('%s'): %s",
                                   name ? name : "(NULL)", closed);
    if (!name || strlen(name) >= ZC_MAX_NAME)
        return refuse_name(e, "zc_engine_add_unit", name);
    int cap = e->cap_units;
    unit_t *units = grow(e->units, e->nunits, &cap, sizeof *e->units);
    if (units)
        e->units = units;
    int fcap = e->cap_units;
    bool *frozen = units ? grow(e->frozen, e->nunits, &fcap, sizeof *e->frozen) : NULL;
    if (!frozen)
        return refuse_registration(e, ZC_ENOMEM, "zc_engine_add_unit('%s'): out of memory", name);
    e->frozen = frozen;
    e->cap_units = cap;
    e->frozen[e->nunits] = false;
    unit_t *u = &e->units[e->nunits];
    memset(u, 0, sizeof *u);
    snprintf(u->info.name, sizeof u->info.name, "%s", name);
    u->info.first_param = e->nparams;
    u->use = ZC_USE_ANY;
    return e->nunits++;
}

zc_status zc_engine_set_offload_sizes(zc_engine *e, int64_t max_in_cpu, double ratio, zc_err *err)
{
    if (!e)
        return zc_err_set(err, ZC_EINVAL, "zc_engine_set_offload_sizes: the engine is NULL");
    if (e->finalize_called)
        return zc_err_set(err, ZC_ESTATE,
                          "zc_engine_set_offload_sizes: the engine is finalized (call it before "
                          "zc_engine_finalize)");
    if (max_in_cpu < 0 || !(ratio > 0 && ratio <= 1))
        return zc_err_set(err, ZC_EINVAL,
                          "zc_engine_set_offload_sizes(max_in_cpu %lld, ratio %g): expected "
                          "max_in_cpu >= 0 and 0 < ratio <= 1",
                          (long long)max_in_cpu, ratio);
    e->cfg.max_in_cpu = max_in_cpu;
    e->cfg.optimizer_ratio = ratio;
    return ZC_OK;
}

int zc_engine_freeze_unit(zc_engine *e, int unit)
{
    if (!e)
        return -1;
    const char *closed = registration_closed(e);
    if (closed)
        return refuse_registration(e, ZC_ESTATE, "zc_engine_freeze_unit(unit %d): %s", unit,
                                   closed);
    if (unit < 0 || unit >= e->nunits)
        return refuse_registration(e, ZC_EINVAL,
                                   "zc_engine_freeze_unit(unit %d): no such unit; %d registered",
                                   unit, e->nunits);
    e->units[unit].info.frozen = e->frozen[unit] = true;
    return 0;
}

int zc_engine_unit_use(zc_engine *e, int unit, unsigned use)
{
    if (!e)
        return -1;
    const char *closed = registration_closed(e);
    if (closed)
        return refuse_registration(e, ZC_ESTATE, "zc_engine_unit_use(unit %d): %s", unit, closed);
    if (unit < 0 || unit >= e->nunits || (use & ~(unsigned)(ZC_USE_ANY | ZC_USE_FORWARD_TWICE)))
        return refuse_registration(
            e, ZC_EINVAL, "zc_engine_unit_use(unit %d, 0x%x): %s", unit, use,
            unit < 0 || unit >= e->nunits
                ? "no such unit"
                : "unknown flags (ZC_USE_VIEW32, ZC_USE_GRAD32, ZC_USE_FORWARD_TWICE)");
    e->units[unit].use = (uint8_t)use;
    return 0;
}

int zc_engine_add_param(zc_engine *e, int unit, const char *name, int ndim, const int64_t *shape,
                        zc_init init)
{
    if (!e)
        return -1;
    const char *pname = name ? name : "(NULL)", *closed = registration_closed(e);
    if (closed)
        return refuse_registration(e, ZC_ESTATE, "zc_engine_add_param('%s'): %s", pname, closed);
    if (!name || strlen(name) >= ZC_MAX_NAME)
        return refuse_name(e, "zc_engine_add_param", name);
    if (e->nunits == 0)
        return refuse_registration(e, ZC_ESTATE,
                                   "zc_engine_add_param('%s'): no unit is registered yet; call "
                                   "zc_engine_add_unit first",
                                   name);
    if (unit != e->nunits - 1) /* parameters go into the newest unit */
        return refuse_registration(e, ZC_EINVAL,
                                   "zc_engine_add_param('%s'): unit %d is not the newest unit "
                                   "(unit %d '%s'); a parameter goes into the unit registered last",
                                   name, unit, e->nunits - 1, e->units[e->nunits - 1].info.name);
    const char *uname = e->units[unit].info.name;
    if (ndim < 1 || ndim > ZC_MAX_DIMS)
        return refuse_registration(e, ZC_EINVAL,
                                   "zc_engine_add_param('%s' of unit '%s'): ndim %d; expected 1 "
                                   "to %d dimensions",
                                   name, uname, ndim, ZC_MAX_DIMS);
    if (!shape)
        return refuse_registration(e, ZC_EINVAL,
                                   "zc_engine_add_param('%s' of unit '%s'): shape is NULL; "
                                   "expected %d sizes",
                                   name, uname, ndim);
    char text[160];
    bool ovf = false;
    int64_t numel = 1;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 1)
            return refuse_registration(e, ZC_EINVAL,
                                       "zc_engine_add_param('%s' of unit '%s'): shape %s has "
                                       "size %lld in dimension %d; expected positive sizes",
                                       name, uname, shape_text(text, sizeof text, ndim, shape),
                                       (long long)shape[d], d);
        numel = zc_mul_i64(numel, shape[d], &ovf);
    }
    const int64_t unit_numel = (int64_t)e->units[unit].info.numel;
    if (ovf || numel > ZC_MAX_NUMEL || unit_numel + numel > ZC_MAX_NUMEL ||
        e->reg_numel + numel > ZC_MAX_NUMEL) {
        char count[48];
        snprintf(count, sizeof count, ovf ? "more than 2^63" : "%lld", (long long)numel);
        return refuse_registration(
            e, ZC_EINVAL,
            "zc_engine_add_param('%s' of unit '%s'): shape %s has %s elements, which takes the "
            "%s past %lld (2^49), the most zeroc holds",
            name, uname, shape_text(text, sizeof text, ndim, shape), count,
            ovf || numel > ZC_MAX_NUMEL         ? "parameter"
            : unit_numel + numel > ZC_MAX_NUMEL ? "unit"
                                                : "model",
            (long long)ZC_MAX_NUMEL);
    }
    if ((unsigned)init.kind > ZC_INIT_NORMAL)
        return refuse_registration(e, ZC_EINVAL,
                                   "zc_engine_add_param('%s' of unit '%s'): init.kind %d; "
                                   "expected ZC_INIT_CONST, ZC_INIT_UNIFORM or ZC_INIT_NORMAL",
                                   name, uname, (int)init.kind);
    param_t *params = grow(e->params, e->nparams, &e->cap_params, sizeof *e->params);
    if (!params)
        return refuse_registration(e, ZC_ENOMEM, "zc_engine_add_param('%s'): out of memory", name);
    e->params = params;
    param_t *p = &e->params[e->nparams];
    memset(p, 0, sizeof *p);
    snprintf(p->info.name, sizeof p->info.name, "%s", name);
    p->info.unit = unit;
    p->info.ndim = ndim;
    memcpy(p->info.shape, shape, (size_t)ndim * sizeof *shape);
    p->info.numel = (size_t)numel;
    unit_t *u = &e->units[unit];
    p->info.offset = u->info.numel;
    p->init = init;
    p->init_as = -1;
    p->init_first = 0;
    p->init_row = p->init_stride = 0;
    if (ndim == 1) { /* its fp32 values in the unit's view_vec (mixed precision) */
        p->vec_off = e->units[unit].vec_n;
        e->units[unit].vec_n += (size_t)numel;
    }
    u->info.numel += (size_t)numel;
    u->info.nparams++;
    e->reg_numel += numel;
    return e->nparams++;
}

int zc_engine_param_init_as(zc_engine *e, int param, int as, int64_t first)
{
    const char *closed = registration_closed(e);
    if (closed)
        return refuse_registration(e, ZC_ESTATE, "zc_engine_param_init_as(%d): %s", param, closed);
    if (param < 0 || param >= e->nparams || as < 0 || first < 0 || first > ZC_MAX_NUMEL)
        return refuse_registration(e, ZC_EINVAL,
                                   "zc_engine_param_init_as(%d, as %d, first %lld): expected a "
                                   "registered parameter, as >= 0 and 0 <= first <= %lld",
                                   param, as, (long long)first, (long long)ZC_MAX_NUMEL);
    e->params[param].init_as = as;
    e->params[param].init_first = (size_t)first;
    e->params[param].init_row = e->params[param].init_stride = 0;
    return 0;
}

int zc_engine_param_init_as_cols(zc_engine *e, int param, int as, int64_t first, int64_t row,
                                 int64_t stride)
{
    if (zc_engine_param_init_as(e, param, as, first))
        return -1;
    if (row < 1 || stride < row || stride > ZC_MAX_NUMEL)
        return refuse_registration(e, ZC_EINVAL,
                                   "zc_engine_param_init_as_cols(%d, row %lld, stride %lld): "
                                   "expected 1 <= row <= stride <= %lld",
                                   param, (long long)row, (long long)stride,
                                   (long long)ZC_MAX_NUMEL);
    e->params[param].init_row = (size_t)row;
    e->params[param].init_stride = (size_t)stride;
    return 0;
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}

/* ---------- naming what differs between ranks (a failure path: every rank runs it) ---------- */

enum { DIFF_TEXT = 512 }; /* bytes of the account of one difference */

/* The effective configuration (config keys) of this rank as JSON text, NUL-padded to a multiple
 * of 4 bytes (*bytes) for zc_comm_broadcast; NULL if out of memory. */
static char *config_text(const zc_engine *e, size_t *bytes)
{
    char *json = zc_config_to_json(&e->cfg);
    if (!json)
        return NULL;
    size_t n = (strlen(json) + 4) / 4 * 4;
    char *out = calloc(1, n);
    if (out)
        memcpy(out, json, strlen(json));
    free(json);
    *bytes = n;
    return out;
}

/* This rank's model as registered: int64 unit and parameter counts, then the zc_unit_info and
 * zc_param_info records (a multiple of 4 bytes, *bytes); NULL if out of memory. */
static char *model_blob(const zc_engine *e, size_t *bytes)
{
    const int64_t counts[2] = {e->nunits, e->nparams};
    const size_t ub = (size_t)e->nunits * sizeof(zc_unit_info),
                 pb = (size_t)e->nparams * sizeof(zc_param_info);
    *bytes = (sizeof counts + ub + pb + 3) / 4 * 4;
    char *out = calloc(1, *bytes);
    if (!out)
        return NULL;
    memcpy(out, counts, sizeof counts);
    for (int u = 0; u < e->nunits; u++)
        memcpy(out + sizeof counts + (size_t)u * sizeof(zc_unit_info), &e->units[u].info,
               sizeof(zc_unit_info));
    for (int p = 0; p < e->nparams; p++)
        memcpy(out + sizeof counts + ub + (size_t)p * sizeof(zc_param_info), &e->params[p].info,
               sizeof(zc_param_info));
    return out;
}

/* Unit u / parameter p of a model blob (model_blob's layout), copied out. */
static zc_unit_info blob_unit(const char *blob, int u)
{
    zc_unit_info ui;
    memcpy(&ui, blob + 2 * sizeof(int64_t) + (size_t)u * sizeof ui, sizeof ui);
    return ui;
}

static zc_param_info blob_param(const char *blob, int p)
{
    int64_t counts[2];
    zc_param_info pi;
    memcpy(counts, blob, sizeof counts);
    memcpy(&pi,
           blob + sizeof counts + (size_t)counts[0] * sizeof(zc_unit_info) + (size_t)p * sizeof pi,
           sizeof pi);
    return pi;
}

/* Keys every rank may set its own way: each host's nvme_path (its local disk); and
 * train_batch_size, which is either derived or checked against the keys it derives from. */
static bool rank_local_key(const char *key)
{
    return !strcmp(key, "nvme_path") || !strcmp(key, "train_batch_size");
}

/* Where rank r's configuration object `mine` first differs from rank 0's `zero`, as "KEY is X on
 * rank r, Y on rank 0", into out; false if they agree (rank_local_key excepted). */
static bool json_diff(const cJSON *zero, const cJSON *mine, const char *prefix, int r, char *out,
                      size_t cap)
{
    char path[256];
    for (const cJSON *a = zero->child; a; a = a->next) {
        if (!a->string || rank_local_key(a->string))
            continue;
        snprintf(path, sizeof path, "%s%s%s", prefix, *prefix ? "." : "", a->string);
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(mine, a->string);
        if (cJSON_IsObject(a) && cJSON_IsObject(b)) {
            if (json_diff(a, b, path, r, out, cap))
                return true;
            continue;
        }
        char *va = cJSON_PrintUnformatted(a), *vb = b ? cJSON_PrintUnformatted(b) : NULL;
        const bool differ = !b || !va || !vb || strcmp(va, vb);
        if (differ)
            snprintf(out, cap, "%s is %s on rank %d, %s on rank 0", path, vb ? vb : "not set", r,
                     va ? va : "?");
        free(va);
        free(vb);
        if (differ)
            return true;
    }
    for (const cJSON *b = mine->child; b; b = b->next)
        if (b->string && !rank_local_key(b->string) &&
            !cJSON_GetObjectItemCaseSensitive(zero, b->string)) {
            snprintf(out, cap, "%s%s%s is set on rank %d, not on rank 0", prefix,
                     *prefix ? "." : "", b->string, r);
            return true;
        }
    return false;
}

/* Where this rank's (rank r's) model first differs from rank 0's blob, in the sizes the
 * agreement hash covers: a unit's element count (naming its first parameter that differs), then
 * the numbers of units and parameters. */
static void model_diff(const zc_engine *e, const char *zero, int r, char *out, size_t cap)
{
    int64_t c0[2];
    memcpy(c0, zero, sizeof c0);
    const int nu = e->nunits < (int)c0[0] ? e->nunits : (int)c0[0];
    for (int u = 0; u < nu; u++) {
        const zc_unit_info a = blob_unit(zero, u), *b = &e->units[u].info;
        if (a.numel == b->numel)
            continue;
        int k = 0; /* the unit's first parameter whose name or shape differs */
        char da[ZC_MAX_NAME + 180] = "absent", db[ZC_MAX_NAME + 180] = "absent", shape[160];
        for (; k < a.nparams || k < b->nparams; k++) {
            zc_param_info pa = {0};
            const zc_param_info *pb = k < b->nparams ? &e->params[b->first_param + k].info : NULL;
            if (k < a.nparams)
                pa = blob_param(zero, a.first_param + k);
            bool same = k < a.nparams && pb && !strcmp(pa.name, pb->name) && pa.ndim == pb->ndim;
            for (int d = 0; same && d < pa.ndim; d++)
                same = pa.shape[d] == pb->shape[d];
            if (same)
                continue;
            if (k < a.nparams)
                snprintf(da, sizeof da, "'%s' %s", pa.name,
                         shape_text(shape, sizeof shape, pa.ndim, pa.shape));
            if (pb)
                snprintf(db, sizeof db, "'%s' %s", pb->name,
                         shape_text(shape, sizeof shape, pb->ndim, pb->shape));
            break;
        }
        snprintf(out, cap,
                 "unit %d '%s' has %zu elements on rank %d, %zu on rank 0 (its parameter %d is "
                 "%s on rank %d, %s on rank 0)",
                 u, b->name, b->numel, r, a.numel, k, db, r, da);
        return;
    }
    if (e->nunits != (int)c0[0]) {
        const bool more = e->nunits > (int)c0[0];
        const zc_unit_info extra = more ? e->units[nu].info : blob_unit(zero, nu);
        snprintf(out, cap,
                 "rank %d registered %d units, rank 0 %lld (the first unit only rank %d has is "
                 "unit %d '%s' of %zu elements)",
                 r, e->nunits, (long long)c0[0], more ? r : 0, nu, extra.name, extra.numel);
        return;
    }
    for (int u = 0; u < nu; u++) {
        const zc_unit_info a = blob_unit(zero, u), *b = &e->units[u].info;
        if (a.nparams != b->nparams) {
            snprintf(out, cap,
                     "unit %d '%s' holds %d parameters on rank %d, %d on rank 0 (%zu elements "
                     "on both)",
                     u, b->name, b->nparams, r, a.nparams, b->numel);
            return;
        }
    }
    snprintf(out, cap, "rank %d registered %d parameters, rank 0 %lld", r, e->nparams,
             (long long)c0[1]);
}

/* zc_comm_broadcast moves floats, copied bit for bit: bytes (a multiple of 4) at buf from root. */
static zc_status broadcast_bytes(zc_engine *e, void *buf, size_t bytes, int root, const char *label,
                                 zc_err *err)
{
    return zc_comm_broadcast(e->comm, buf, bytes / 4, root, label, err);
}

/* Rank r's configuration (config) or model differs from rank 0's: every rank fails with one
 * message that names the first key (and both values) or the first unit and parameter (names,
 * sizes) that differ. Rank 0's description is broadcast, rank r compares and broadcasts its
 * account. Collective. */
static zc_status explain_mismatch(zc_engine *e, int r, bool config, zc_err *err)
{
    size_t bytes = 0;
    char *mine = config ? config_text(e, &bytes) : model_blob(e, &bytes), *zero = NULL;
    int64_t len = (int64_t)bytes, *lens = calloc((size_t)e->nranks, sizeof *lens);
    float diff[DIFF_TEXT / 4] = {0};
    char *text = (char *)diff;
    zc_status st = mine && lens ? ZC_OK : zc_err_set(err, ZC_ENOMEM, "out of memory");
    if (!(st = zc_comm_agree(e->comm, st, "comparing the ranks' configurations", err)))
        st = zc_comm_control_gather(e->comm, &len, lens, sizeof len, "configuration check", err);
    if (!st) {
        zero = e->rank == 0 ? mine : calloc(1, (size_t)lens[0]);
        st = zc_comm_agree(e->comm, zero ? ZC_OK : zc_err_set(err, ZC_ENOMEM, "out of memory"),
                           "comparing the ranks' configurations", err);
    }
    if (!st)
        st = broadcast_bytes(e, zero, (size_t)lens[0], 0, "configuration check", err);
    if (!st && e->rank == r) {
        cJSON *a = config ? cJSON_Parse(zero) : NULL, *b = config ? cJSON_Parse(mine) : NULL;
        if (!config)
            model_diff(e, zero, r, text, sizeof diff);
        else if (!a || !b || !json_diff(a, b, "", r, text, sizeof diff))
            snprintf(text, sizeof diff, "%s",
                     "they differ in a value the effective configuration does not print");
        cJSON_Delete(a);
        cJSON_Delete(b);
        text[sizeof diff - 1] = '\0';
    }
    if (!st)
        st = broadcast_bytes(e, diff, sizeof diff, r, "configuration check", err);
    if (zero != mine)
        free(zero);
    free(mine);
    free(lens);
    if (st)
        return st;
    text[sizeof diff - 1] = '\0';
    if (config)
        return zc_err_set(err, ZC_EINVAL,
                          "rank %d runs a different configuration than rank 0: %s (was the same "
                          "config file and were the same flags given to every rank?)",
                          r, text);
    return zc_err_set(err, ZC_EINVAL, "rank %d registered a different model than rank 0: %s", r,
                      text);
}

/* Every rank must run the same configuration on the same model: a rank that read another
 * config file (no shared file system) or registered other units would otherwise train a
 * different replica silently, or die in MPI with a truncation error. */
static zc_status agreement_check(zc_engine *e, zc_err *err)
{
    if (e->nranks == 1)
        return ZC_OK;
    const zc_config *c = &e->cfg;
    uint64_t h[2] = {0xcbf29ce484222325ULL, 0xcbf29ce484222325ULL};
    const double d[] = {c->grad_clip,
                        c->lr,
                        c->beta1,
                        c->beta2,
                        c->eps,
                        c->weight_decay,
                        c->momentum,
                        c->comm_timeout_s,
                        c->loss_scale,
                        c->min_loss_scale,
                        c->optimizer_ratio,
                        c->warmup_min_lr,
                        zc_config_warmup_max_lr(c)};
    /* the offload settings, not the nvme paths: each host may have its own local disk */
    const int64_t i[] = {c->micro_batch,
                         c->grad_accum,
                         c->optim,
                         c->adam_w_mode,
                         c->stage,
                         c->reduce_bucket_size,
                         c->prefetch_bucket_size,
                         c->max_live_parameters,
                         c->param_persistence_threshold,
                         c->model_persistence_threshold,
                         c->steps_per_print,
                         (int64_t)c->seed,
                         e->pdt,
                         e->gdt,
                         e->cdt,
                         c->initial_scale_power,
                         c->loss_scale_window,
                         c->hysteresis,
                         c->consecutive_hysteresis,
                         c->offload_optimizer,
                         c->optimizer_buffer_count,
                         c->optimizer_pin_memory,
                         c->pipeline_read,
                         c->pipeline_write,
                         c->offload_param,
                         c->param_buffer_count,
                         c->param_buffer_size,
                         c->max_in_cpu,
                         c->param_pin_memory,
                         c->sub_group_size,
                         c->aio_block_size,
                         c->aio_queue_depth,
                         c->aio_thread_count,
                         c->aio_single_submit,
                         c->aio_overlap_events,
                         c->aio_engine,
                         c->bias_correction,
                         c->sched,
                         c->warmup_num_steps,
                         c->total_num_steps,
                         c->warmup_type,
                         c->overlap_comm,
                         c->activation_checkpointing,
                         c->quantized_weights,
                         c->quantized_gradients,
                         c->hpz_partition_size};
    h[0] = fnv(fnv(h[0], d, sizeof d), i, sizeof i);
    for (int u = 0; u < e->nunits; u++)
        h[1] = fnv(h[1], &e->units[u].info.numel, sizeof(size_t));
    h[1] = fnv(h[1], &e->nparams, sizeof e->nparams);
    uint64_t stack[2 * 16], *all = e->nranks <= 16 ? stack : malloc(sizeof h * e->nranks);
    if (!all)
        return zc_err_set(err, ZC_ENOMEM, "out of memory in the agreement check");
    zc_status st = zc_comm_control_gather(e->comm, h, all, sizeof h, "configuration check", err);
    int r = 1; /* the first rank that differs from rank 0, in its configuration or its model */
    while (!st && r < e->nranks && all[2 * r] == all[0] && all[2 * r + 1] == all[1])
        r++;
    const bool config = !st && r < e->nranks && all[2 * r] != all[0];
    if (all != stack)
        free(all);
    if (st || r == e->nranks)
        return st;
    return explain_mismatch(e, r, config, err); /* every rank takes this path alike */
}

/* AdamW8bit: the moments are 8-bit codes with a scale per block (zc_adam8_update). */
static bool q8_moments(const zc_engine *e)
{
    return e->cfg.optim == ZC_OPTIM_ADAMW8BIT;
}

/* AdamW8bit's blocks restart at every shard: the scales of one shard of the optimizer range
 * (stage 0's range holds every shard; the others' one). */
static size_t q8_shard_scales(const unit_t *u)
{
    return (u->info.shard + ZC_Q8_BLOCK - 1) / ZC_Q8_BLOCK;
}

static size_t q8_scales(const unit_t *u)
{
    return u->opt_n / u->info.shard * q8_shard_scales(u);
}

static size_t min_z(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* AdamW8bit's codes of m (is_signed) or v at optimizer indices [k, k + n): read into buf, or
 * written from it. In RAM the arrays; on disk (stages 1–3: the range is one shard) the records of
 * zc_estimate_q8_record, one per sub-group, the codes first. */
static zc_status q8_codes_io(zc_engine *e, const unit_t *u, bool is_signed, size_t k, size_t n,
                             uint8_t *buf, bool write, zc_err *err)
{
    if (!u->disk.optimizer) {
        uint8_t *q = (is_signed ? u->mq : u->vq) + k;
        memcpy(write ? q : buf, write ? buf : q, n);
        return ZC_OK;
    }
    const size_t sg = (size_t)e->plan.sub_group;
    const int64_t R = zc_estimate_q8_record((int64_t)sg);
    const int64_t base = is_signed ? u->disk.m_off : u->disk.v_off;
    zc_status st = ZC_OK;
    for (size_t a = 0; !st && a < n;) {
        size_t i = k + a, j = i / sg, in = i % sg, c = min_z(sg - in, n - a);
        int64_t off = base + (int64_t)j * R + (int64_t)in;
        st = write ? zc_swap_pwrite(e->swap_opt, buf + a, c, off, err)
                   : zc_swap_pread(e->swap_opt, buf + a, c, off, err);
        a += c;
    }
    return st;
}

/* Every code of m (is_signed) or v on disk set to `code`, a record's codes written from the
 * swap's buffer in pieces of up to ZC_SWAP_VIEW_MAX bytes. */
static zc_status q8_codes_fill(zc_engine *e, const unit_t *u, bool is_signed, uint8_t code,
                               zc_err *err)
{
    const size_t sg = (size_t)e->plan.sub_group;
    const int64_t R = zc_estimate_q8_record((int64_t)sg);
    const int64_t base = is_signed ? u->disk.m_off : u->disk.v_off;
    zc_status st = ZC_OK;
    for (size_t a = 0, c; !st && a < u->opt_n; a += c) {
        const size_t j = a / sg, in = a % sg;
        c = min_z(min_z(sg - in, u->opt_n - a), ZC_SWAP_VIEW_MAX);
        void *w;
        if (!(st = zc_swap_stage(e->swap_opt, c, base + (int64_t)j * R + (int64_t)in, &w, err))) {
            memset(w, code, c);
            st = zc_swap_commit(e->swap_opt, err);
        }
    }
    return st;
}

/* The same for scales [b, b + n) of the unit's scale array (shard s's blocks from s · its
 * scales): on disk each sub-group's after its codes, padded to whole blocks. */
static zc_status q8_scales_io(zc_engine *e, const unit_t *u, bool is_signed, size_t b, size_t n,
                              float *buf, bool write, zc_err *err)
{
    if (!u->disk.optimizer) {
        float *sc = (is_signed ? u->ms : u->vs) + b;
        memcpy(write ? sc : buf, write ? buf : sc, n * sizeof(float));
        return ZC_OK;
    }
    const size_t sg = (size_t)e->plan.sub_group, per = sg / ZC_Q8_BLOCK, S = u->info.shard;
    const int64_t R = zc_estimate_q8_record((int64_t)sg);
    const int64_t base = is_signed ? u->disk.m_off : u->disk.v_off;
    zc_status st = ZC_OK;
    for (size_t a = 0; !st && a < n;) {
        size_t x = b + a, j = x / per, in = x % per, c = min_z(per - in, n - a);
        size_t kj = min_z(sg, S - j * sg), codes = (kj + ZC_Q8_BLOCK - 1) / ZC_Q8_BLOCK;
        int64_t off = base + (int64_t)j * R + (int64_t)(codes * ZC_Q8_BLOCK + in * sizeof(float));
        st = write ? zc_swap_pwrite(e->swap_opt, buf + a, c * sizeof(float), off, err)
                   : zc_swap_pread(e->swap_opt, buf + a, c * sizeof(float), off, err);
        a += c;
    }
    return st;
}

static size_t opt_moments(const zc_config *cfg)
{
    if (cfg->optim == ZC_OPTIM_SGD)
        return cfg->momentum != 0.0 ? 1 : 0;
    return 2;
}

/* Whether the unit's parameters are sharded: stage 3, unless the unit is persistent. */
static bool sharded_params(const zc_engine *e, const unit_t *u)
{
    return e->params_sharded && !u->persistent;
}

/* hpZ: whether the unit's secondary copy holds the weights as they are now, so its gather can
 * stay within the group. */
static bool hpz_current(const zc_engine *e, const unit_t *u)
{
    return u->hpz && u->hpz_epoch == e->hpz_epoch;
}

/* First logical element of the unit's optimizer range (master, m, v): the whole unit in stage 0,
 * this rank's shard otherwise. */
static size_t opt_lo(const zc_engine *e, const unit_t *u)
{
    return e->opt_sharded ? (size_t)e->rank * u->info.shard : 0;
}

/* Initial values of unit i's elements [lo, lo + n) into dst[0..n) (zero in the padding). */
static void init_values(const zc_engine *e, int i, size_t lo, size_t n, float *dst)
{
    const unit_t *u = &e->units[i];
    size_t hi = lo + n;
    memset(dst, 0, n * sizeof(float));
    for (int pi = u->info.first_param; pi < u->info.first_param + u->info.nparams; pi++) {
        const param_t *p = &e->params[pi];
        size_t a = p->info.offset, b = a + p->info.numel;
        size_t from = a > lo ? a : lo, to = b < hi ? b : hi;
        const int as = p->init_as >= 0 ? p->init_as : pi;
        if (from < to && !p->init_row)
            zc_init_fill(dst + (from - lo), p->init_first + (from - a), to - from, e->cfg.seed, as,
                         p->init);
        for (size_t at = from; from < to && p->init_row && at < to;) { /* row by row */
            const size_t r = (at - a) / p->init_row, c = (at - a) % p->init_row;
            const size_t len = p->init_row - c < to - at ? p->init_row - c : to - at;
            zc_init_fill(dst + (at - lo), p->init_first + r * p->init_stride + c, len, e->cfg.seed,
                         as, p->init);
            at += len;
        }
    }
}

/* Unit i's states that live in RAM (the ledger's params, grads, optimizer). */
static zc_status alloc_unit(zc_engine *e, int i, zc_err *err)
{
    unit_t *u = &e->units[i];
    const zc_unit_offload *d = &u->disk;
    size_t S = u->info.shard, P = u->info.padded, moments = opt_moments(&e->cfg);
    u->opt_n = e->opt_sharded ? S : P;
    if (!sharded_params(e, u) && !(u->full = alloc_b(e, ZC_MEM_PARAMS, P, e->ps)))
        return oom(e, err, "parameters", i, P * e->ps);
    if (sharded_params(e, u) && !d->params && !(u->shard_p = alloc_b(e, ZC_MEM_PARAMS, S, e->ps)))
        return oom(e, err, "parameter shard", i, S * e->ps);
    u->hpz_epoch = -1;
    if (sharded_params(e, u) && e->hpz > 1 &&
        !(u->hpz = alloc_b(e, ZC_MEM_PARAMS, P / (size_t)e->hpz, e->ps)))
        return oom(e, err, "hpZ secondary parameters", i, P / (size_t)e->hpz * e->ps);
    if (u->info.frozen) { /* the parameters alone: no gradients, no optimizer range */
        u->opt_n = 0;
        return ZC_OK;
    }
    if (!e->grads_sharded && !(u->grad_full = alloc_b(e, ZC_MEM_GRADS, P, e->gs)))
        return oom(e, err, "gradients", i, P * e->gs);
    if (e->grads_sharded && !d->grads && !(u->grad_shard = alloc_b(e, ZC_MEM_GRADS, S, e->gs)))
        return oom(e, err, "gradient shard", i, S * e->gs);
    if (e->compact && !d->optimizer && !(u->rem = alloc_b(e, ZC_MEM_OPTIMIZER, u->opt_n, 2)))
        return oom(e, err, "master remainders", i, u->opt_n * 2);
    if (e->mixed && !e->compact && !d->optimizer &&
        !(u->master = alloc_f(e, ZC_MEM_OPTIMIZER, u->opt_n)))
        return oom(e, err, "fp32 master parameters", i, u->opt_n * sizeof(float));
    if (q8_moments(e) && d->optimizer) { /* records on disk: scales 0, the zero codes */
        zc_status st = ZC_OK;
        for (int k = 0; !st && k < 2; k++)
            if (zc_q8_zero_code(k == 0)) /* a fresh swap region reads zeros already */
                st = q8_codes_fill(e, u, k == 0, zc_q8_zero_code(k == 0), err);
        return st;
    }
    if (q8_moments(e)) { /* codes of zero, scales 0 */
        if (!(u->mq = alloc_b(e, ZC_MEM_OPTIMIZER, u->opt_n, 1)) ||
            !(u->vq = alloc_b(e, ZC_MEM_OPTIMIZER, u->opt_n, 1)) ||
            !(u->ms = alloc_f(e, ZC_MEM_OPTIMIZER, q8_scales(u))) ||
            !(u->vs = alloc_f(e, ZC_MEM_OPTIMIZER, q8_scales(u))))
            return oom(e, err, "8-bit optimizer state", i, u->opt_n + 4 * q8_scales(u));
        memset(u->mq, zc_q8_zero_code(true), u->opt_n);
        memset(u->vq, zc_q8_zero_code(false), u->opt_n);
        return ZC_OK;
    }
    if (moments >= 1 && !d->optimizer && !(u->m = alloc_f(e, ZC_MEM_OPTIMIZER, u->opt_n)))
        return oom(e, err, "optimizer state", i, u->opt_n * sizeof(float));
    if (moments >= 2 && !d->optimizer && !(u->v = alloc_f(e, ZC_MEM_OPTIMIZER, u->opt_n)))
        return oom(e, err, "optimizer state", i, u->opt_n * sizeof(float));
    return ZC_OK;
}

/* Where logical element i of unit u's stored parameters lies in the parameter swap file. */
static int64_t param_file_off(const zc_engine *e, const unit_t *u, size_t i)
{
    return u->disk.params_off + (int64_t)((i - (size_t)e->rank * u->info.shard) * e->ps);
}

/* Rounds n fp32 values of unit u into the stored parameter type: to nearest even, or for a
 * trained unit with a compact master half away from zero, the rounding its remainders complete
 * (zc_master_split). A frozen unit has no master: its base stays rounded as in any run (its
 * digest, which a resume checks, must not depend on the optimizer). */
static void narrow_params(const zc_engine *e, const unit_t *u, const float *src, void *dst,
                          size_t n)
{
    if (e->compact && !u->info.frozen)
        zc_master_split(src, n, dst, NULL);
    else
        zc_dtype_narrow(e->pdt, src, dst, n);
}

enum { INIT_CHUNK = 1 << 20 }; /* elements initialised at a time on their way to disk */

/* What init_to_disk writes: the fp32 values (a master), the stored parameters, or a compact
 * master's remainders; where: a swap file from a byte offset. */
typedef enum { INIT_FP32, INIT_PARAMS, INIT_REM } init_as;
typedef struct {
    init_as as;
    zc_swap *sw;
    int64_t off;
} init_target;

/* Initial values of unit i's elements [lo, lo + n) into each of its nt targets (a master and the
 * stored parameters of the same range: drawn once for both, the random draws being most of the
 * set-up's time), a chunk at a time through buf (INIT_CHUNK floats and as many 16-bit values),
 * so nothing model-sized is held in RAM. */
static zc_status init_to_disk(zc_engine *e, int i, size_t lo, size_t n, const init_target *t,
                              int nt, float *buf, zc_err *err)
{
    zc_status st = ZC_OK;
    for (size_t o = 0; !st && o < n; o += INIT_CHUNK) {
        size_t k = n - o < INIT_CHUNK ? n - o : INIT_CHUNK;
        init_values(e, i, lo + o, k, buf);
        for (int x = 0; !st && x < nt; x++) {
            const init_as as = t[x].as;
            const bool fp32 = as == INIT_FP32 || (as == INIT_PARAMS && e->pdt == ZC_FP32);
            const size_t es = fp32 ? 4 : 2;
            void *out = fp32 ? (void *)buf : (void *)(buf + INIT_CHUNK);
            if (as == INIT_REM)
                zc_master_split(buf, k, NULL, out);
            else if (!fp32)
                narrow_params(e, &e->units[i], buf, out, k);
            st = zc_swap_pwrite(t[x].sw, out, k * es, t[x].off + (int64_t)(o * es), err);
        }
    }
    return st;
}

/* Initial values of unit i: stages 0–2 fill the whole unit (every rank computes the same
 * values, no communication), stage 3 only the owned slice; the master copy its range, the 16-bit
 * parameters the same values rounded; in RAM or on disk wherever they live. Padding stays zero
 * (a swap region reads zeros until written). */
static zc_status init_unit(zc_engine *e, int i, float *buf, zc_err *err)
{
    unit_t *u = &e->units[i];
    /* zc_mem_alloc's memory and a fresh swap region read zeros; a frozen unit (a LoRA run's
     * base) is not in a checkpoint, so it is drawn as a fresh run draws it */
    if (e->skip_init && !u->info.frozen)
        return ZC_OK;
    size_t S = u->info.shard, P = u->info.padded;
    const bool sharded = sharded_params(e, u);
    size_t lo = sharded ? (size_t)e->rank * S : 0, hi = sharded ? lo + S : P;
    void *stored = sharded ? u->shard_p : u->full;
    const init_target par = {INIT_PARAMS, e->swap_par, u->disk.params_off};
    if (e->mixed && !u->info.frozen) { /* a frozen unit has no master copy */
        if (u->disk.optimizer) {
            const init_target t[2] = {
                {e->compact ? INIT_REM : INIT_FP32, e->swap_opt, u->disk.master_off}, par};
            /* both on disk over the same range (stage 3's shard): one draw for the two */
            const bool both = u->disk.params && lo == opt_lo(e, u) && S == u->opt_n;
            zc_status st = init_to_disk(e, i, opt_lo(e, u), u->opt_n, t, both ? 2 : 1, buf, err);
            if (st || both)
                return st;
        } else if (e->compact)
            for (size_t o = 0; o < u->opt_n; o += CHUNK) {
                float chunk[CHUNK];
                size_t k = u->opt_n - o < CHUNK ? u->opt_n - o : CHUNK;
                init_values(e, i, opt_lo(e, u) + o, k, chunk);
                zc_master_split(chunk, k, NULL, u->rem + o);
            }
        else
            init_values(e, i, opt_lo(e, u), u->opt_n, u->master);
    }
    if (u->disk.params)
        return init_to_disk(e, i, lo, S, &par, 1, buf, err);
    if (!e->mixed) {
        init_values(e, i, lo, hi - lo, stored);
        return ZC_OK;
    }
    if (!u->info.frozen && u->master && lo == opt_lo(e, u) &&
        hi - lo == u->opt_n) { /* stages 0 and 3 */
        zc_dtype_narrow(e->pdt, u->master, stored, u->opt_n);
        return ZC_OK;
    }
    float chunk[CHUNK];
    for (size_t o = lo; o < hi; o += CHUNK) {
        size_t k = hi - o < CHUNK ? hi - o : CHUNK;
        init_values(e, i, o, k, chunk);
        narrow_params(e, u, chunk, at(stored, o - lo, e->ps), k);
    }
    return ZC_OK;
}

/* The stored parameters (pdt) matching the optimizer range: everything in stage 0, the owned
 * shard otherwise (NULL when they live on disk). */
static void *owned_params(const zc_engine *e, const unit_t *u)
{
    if (sharded_params(e, u))
        return u->shard_p;
    return at(u->full, opt_lo(e, u), e->ps);
}

/* This rank's reduced gradients (gdt), the optimizer range's (in RAM: a staging buffer while a
 * stage-3 shard that lives on disk is being reduced). */
static void *owned_grads(const zc_engine *e, const unit_t *u)
{
    return e->grads_sharded ? u->grad_shard : at(u->grad_full, opt_lo(e, u), e->gs);
}

/* A sub-group's view of one array: RAM at ram + o·es, or the swap region at off + o·es. */
static zc_stream_ref stream_ref(void *ram, zc_swap *sw, int64_t off, size_t o, size_t k, size_t es,
                                bool in, bool out)
{
    if (!sw)
        return (zc_stream_ref){.ram = ram ? at(ram, o, es) : NULL};
    return (zc_stream_ref){.swap = sw,
                           .off = off + (int64_t)(o * es),
                           .bytes = (int64_t)blocks(k, es),
                           .in = in,
                           .out = out};
}

/* The step's sub-groups: every unit with a state on disk, split into plan.sub_group elements. */
static zc_status build_jobs(zc_engine *e, zc_err *err)
{
    const size_t sg = (size_t)e->plan.sub_group;
    const size_t moments = opt_moments(&e->cfg);
    for (int i = 0; i < e->nunits; i++) {
        unit_t *u = &e->units[i];
        u->first_job = e->njobs;
        u->njobs = (u->disk.optimizer || u->disk.params) && !u->info.frozen
                       ? (int)((u->opt_n + sg - 1) / sg)
                       : 0;
        e->njobs += u->njobs;
    }
    if (!e->njobs)
        return ZC_OK;
    if (!(e->jobs = calloc((size_t)e->njobs, sizeof *e->jobs)))
        return zc_err_set(err, ZC_ENOMEM, "out of memory planning the offloaded step");
    for (int i = 0; i < e->nunits; i++) {
        unit_t *u = &e->units[i];
        const zc_unit_offload *d = &u->disk;
        zc_swap *opt = d->optimizer ? e->swap_opt : NULL, *par = d->params ? e->swap_par : NULL;
        for (int j = 0; j < u->njobs; j++) {
            size_t o = (size_t)j * sg, k = u->opt_n - o < sg ? u->opt_n - o : sg;
            zc_stream_ref *r = e->jobs[u->first_job + j].a;
            r[ZC_STREAM_WEIGHTS] =
                e->compact ? stream_ref(u->rem, opt, d->master_off, o, k, 2, true, true)
                : e->mixed
                    ? stream_ref(u->master, opt, d->master_off, o, k, 4, true, true)
                    : stream_ref(owned_params(e, u), par, d->params_off, o, k, 4, true, true);
            r[ZC_STREAM_GRADS] = stream_ref(owned_grads(e, u), d->grads ? e->swap_opt : NULL,
                                            d->grads_off, o, k, e->gs, true, false);
            if (q8_moments(e) && opt) { /* each a sub-group's record: codes, then scales */
                const int64_t R = zc_estimate_q8_record((int64_t)sg);
                for (int a = ZC_STREAM_M; a <= ZC_STREAM_V; a++)
                    r[a] = (zc_stream_ref){.swap = opt,
                                           .off = (a == ZC_STREAM_M ? d->m_off : d->v_off) +
                                                  (int64_t)j * R,
                                           .bytes = zc_estimate_q8_record((int64_t)k),
                                           .in = true,
                                           .out = true};
            } else if (!q8_moments(e)) { /* (AdamW8bit's in RAM: update_span8) */
                if (moments >= 1)
                    r[ZC_STREAM_M] = stream_ref(u->m, opt, d->m_off, o, k, 4, true, true);
                if (moments >= 2)
                    r[ZC_STREAM_V] = stream_ref(u->v, opt, d->v_off, o, k, 4, true, true);
            }
            if (e->mixed) /* a compact master's top halves: read as well */
                r[ZC_STREAM_PARAMS] = stream_ref(owned_params(e, u), par, d->params_off, o, k,
                                                 e->ps, e->compact, true);
        }
    }
    return ZC_OK;
}

/* The stream asks, as an update sub-group's reads start (fold_bwd, compact): read the old
 * weights now unless the unit's backward gather kept them; if it did not yet, the stream reads
 * them and the gather keeps none — so each is read once, ahead of the update, either way. */
static bool old_weights_wanted(void *ctx, int job, int array)
{
    zc_engine *e = ctx;
    unit_t *u = &e->units[e->bjob_unit[job]];
    ZC_ASSERT(array == ZC_STREAM_PARAMS);
    if (u->oldw)
        return false;
    u->old_in_stream = true;
    return true;
}

/* The update in the backward (fold_bwd): the same sub-groups, units in reverse registration
 * order (the order their reduced gradients land in), each gradient taken from the RAM it was
 * reduced into (unit_update) instead of a swap region. */
static zc_status build_bjobs(zc_engine *e, zc_err *err)
{
    if (!(e->bjobs = calloc((size_t)e->njobs, sizeof *e->bjobs)) ||
        !(e->bjob_unit = calloc((size_t)e->njobs, sizeof *e->bjob_unit)))
        return zc_err_set(err, ZC_ENOMEM, "out of memory planning the offloaded step");
    int k = 0;
    for (int i = e->nunits - 1; i >= 0; i--) {
        e->units[i].first_bjob = k;
        for (int j = 0; j < e->units[i].njobs; j++, k++) {
            e->bjobs[k] = e->jobs[e->units[i].first_job + j];
            e->bjob_unit[k] = i;
            e->bjobs[k].a[ZC_STREAM_GRADS] = (zc_stream_ref){0};
            /* a compact master's old weights: kept from the backward's gather (oldw), or else
             * read ahead by the stream (old_weights_wanted) */
            e->bjobs[k].a[ZC_STREAM_PARAMS].in = false;
            e->bjobs[k].a[ZC_STREAM_PARAMS].ask = e->compact;
        }
    }
    if (e->compact)
        zc_stream_set_ask(e->stream, old_weights_wanted, e);
    return ZC_OK;
}

/* The disk tier: where each unit's states go (zc_estimate_offload: the same plan the estimator
 * prints), the I/O engine, the swap files (preallocated: a full disk fails here), the ledger's
 * nvme bytes. */
#define OPT_PATH_KEY "zero_optimization.offload_optimizer.nvme_path"
#define PAR_PATH_KEY "zero_optimization.offload_param.nvme_path"

static zc_status offload_setup(zc_engine *e, zc_err *err)
{
    size_t *numel = malloc((size_t)e->nunits * sizeof(size_t));
    zc_unit_offload *where = malloc((size_t)e->nunits * sizeof *where);
    if (!numel || !where) {
        free(numel);
        free(where);
        return zc_err_set(err, ZC_ENOMEM, "out of memory planning the offload");
    }
    zc_estimate_in in = zc_engine_estimate_in(e, e->stage, numel, NULL, NULL);
    e->plan = zc_estimate_offload(&in, where);
    for (int i = 0; i < e->nunits; i++)
        e->units[i].disk = where[i];
    free(numel);
    free(where);
    e->offload = e->plan.optimizer_file + e->plan.param_file > 0;
    const zc_config *c = &e->cfg;
    if (!e->offload) { /* nothing to hold here (yet): the configured directories must still do */
        zc_status st = ZC_OK;
        if (c->offload_optimizer == ZC_OFFLOAD_NVME && e->stage >= 1)
            st = zc_swap_check_dir(OPT_PATH_KEY, c->optimizer_nvme_path, err);
        if (!st && c->offload_param == ZC_OFFLOAD_NVME && e->stage == 3)
            st = zc_swap_check_dir(PAR_PATH_KEY, c->param_nvme_path, err);
        return st;
    }
    zc_aio_config ac = {.engine = c->aio_engine,
                        .block_size = c->aio_block_size,
                        .queue_depth = c->aio_queue_depth,
                        .thread_count = c->aio_thread_count,
                        .single_submit = c->aio_single_submit,
                        .overlap_events = c->aio_overlap_events};
    zc_status st = pin_check(e, err);
    if (!st)
        st = zc_aio_create(&e->aio, &ac, err);
    if (!st && e->plan.optimizer_file)
        st = zc_swap_create(&e->swap_opt, OPT_PATH_KEY, c->optimizer_nvme_path, e->rank,
                            e->plan.optimizer_file, e->aio, err);
    if (!st && e->plan.param_file)
        st = zc_swap_create(&e->swap_par, PAR_PATH_KEY, c->param_nvme_path, e->rank,
                            e->plan.param_file, e->aio, err);
    if (!st) {
        e->nvme_charged = e->plan.optimizer_file + e->plan.param_file;
        zc_mem_charge(e->mem, ZC_MEM_NVME, e->nvme_charged);
    }
    return st;
}

/* The model and configuration are refused, before anything is allocated, if a size the
 * engine derives from them does not fit in 64 bits (zc_estimate_check). */
static zc_status check_sizes(const zc_engine *e, zc_err *err)
{
    size_t *numel = malloc((size_t)e->nunits * sizeof(size_t));
    if (!numel)
        return zc_err_set(err, ZC_ENOMEM, "out of memory checking the model's sizes");
    zc_estimate_in in = zc_engine_estimate_in(e, e->stage, numel, NULL, NULL);
    zc_status st = zc_estimate_check(&in, err);
    free(numel);
    return st;
}

/* Stage 3's persistent units, as the estimator places them (every rank decides alike). */
static zc_status decide_persistent(zc_engine *e, zc_err *err)
{
    size_t *numel = malloc((size_t)e->nunits * sizeof(size_t));
    bool *p = malloc((size_t)e->nunits * sizeof(bool));
    if (!numel || !p) {
        free(numel);
        free(p);
        return zc_err_set(err, ZC_ENOMEM, "out of memory finalizing the engine");
    }
    zc_estimate_in in = zc_engine_estimate_in(e, e->stage, numel, NULL, NULL);
    zc_estimate_persistent(&in, p);
    for (int i = 0; i < e->nunits; i++)
        e->units[i].persistent = p[i];
    free(numel);
    free(p);
    return ZC_OK;
}

void zc_engine_skip_init(zc_engine *e)
{
    if (e && !e->finalize_called) /* afterwards the values are drawn already: no effect */
        e->skip_init = true;
}

/* The registered model as finalize takes it: the first registration refused, or no unit, or a
 * unit without parameters. */
static zc_status check_registration(const zc_engine *e, zc_err *err)
{
    if (e->reg_err.code)
        return zc_err_set(err, e->reg_err.code, "%s", e->reg_err.msg);
    if (e->nunits == 0)
        return zc_err_set(err, ZC_EINVAL,
                          "zc_engine_finalize: no unit is registered (zc_engine_add_unit, then "
                          "zc_engine_add_param)");
    for (int i = 0; i < e->nunits; i++)
        if (e->units[i].info.numel == 0)
            return zc_err_set(err, ZC_EINVAL,
                              "zc_engine_finalize: unit %d '%s' has no parameters (every unit "
                              "needs at least one zc_engine_add_param)",
                              i, e->units[i].info.name);
    return check_sizes(e, err);
}

zc_status zc_engine_finalize(zc_engine *e, zc_err *err)
{
    if (!e)
        return zc_err_set(err, ZC_EINVAL, "zc_engine_finalize: the engine is NULL");
    if (e->finalize_called)
        return zc_err_set(err, ZC_ESTATE, "zc_engine_finalize: %s",
                          e->finalized ? "the engine is already finalized (once per engine)"
                                       : "an earlier zc_engine_finalize failed; destroy the "
                                         "engine");
    e->finalize_called = true;
    /* "auto" left unsized (zc_engine_set_offload_sizes): DeepSpeed's defaults */
    if (e->cfg.max_in_cpu == ZC_AUTO)
        e->cfg.max_in_cpu = ZC_MAX_IN_CPU_DEFAULT;
    if (e->cfg.optimizer_ratio == ZC_AUTO)
        e->cfg.optimizer_ratio = 1.0;
    zc_status st = zc_comm_agree(e->comm, check_registration(e, err), "registering the model", err);
    if (st)
        return st;
    size_t n = (size_t)e->nranks, max_shard = 0; /* of the units reduce-scattered */
    for (int i = 0; i < e->nunits; i++) {
        zc_unit_info *ui = &e->units[i].info;
        ui->shard = (ui->numel + n - 1) / n;
        ui->padded = ui->shard * n;
        if (ui->shard > max_shard && !ui->frozen)
            max_shard = ui->shard;
    }
    /* Stages 0–1 whose gradients travel as stored send every block from the gradients where
     * they lie (rs_unit): no send staging, unless a unit's blocks lie past MPI's int
     * displacements; so do stages 2–3 in bf16 from each unit's bf16 gradient (sends_w16), unless
     * a unit is declared to take an fp32 matrix gradient (one that takes it undeclared gets the
     * staging then). On one rank nothing is received: the sum reads the rank's own block where
     * it lies (comm.c); qgZ's segments are still copied. */
    bool packs = false; /* stages 2–3: a trained unit declared to take an fp32 matrix gradient */
    for (int i = 0; i < e->nunits; i++)
        packs |= !e->units[i].info.frozen && (e->units[i].use & ZC_USE_GRAD32);
    const bool sends = (e->grads_sharded && (packs || !sharded16(e))) || e->qgz ||
                       !zc_config_grads_sent_as_stored(&e->cfg) || max_shard * n > (size_t)INT_MAX;
    const bool receives = n > 1 || e->qgz;
    if ((st = decide_persistent(e, err)))
        return st;
    e->rs_cols = zc_estimate_rs_cols(e->cfg.reduce_bucket_size, (int64_t)n, (int64_t)max_shard);
    e->rs_bytes =
        n * (e->qgz ? (size_t)zc_qwz_segment_bytes((int64_t)e->rs_cols) : e->rs_cols * e->cs);
    e->rs_recv_bytes = e->qgz ? e->rs_bytes : (n - 1) * e->rs_cols * e->cs;
    e->rs_send = sends ? alloc_b(e, ZC_MEM_COMM, e->rs_bytes, 1) : NULL;
    e->rs_recv = receives ? alloc_b(e, ZC_MEM_COMM, e->rs_recv_bytes, 1) : NULL;
    if (e->qgz)
        e->rs_f32 = alloc_f(e, ZC_MEM_COMM, e->rs_cols);
    if ((sends && !e->rs_send) || (receives && !e->rs_recv) || (e->qgz && !e->rs_f32))
        return oom(e, err, "reduce-scatter staging", -1,
                   sends * e->rs_bytes + receives * e->rs_recv_bytes);
    /* every rank learns whether any rank could not set up its disk tier (e.g. a full disk) */
    st = zc_comm_agree(e->comm, offload_setup(e, err), "setting up the NVMe offload", err);
    if (st)
        return st;

    /* one buffer for every unit's initial values on their way to disk (fp32 + 16-bit) */
    const size_t init_bytes = e->offload ? INIT_CHUNK * (sizeof(float) + e->ps) : 0;
    float *init_buf = init_bytes ? zc_mem_alloc(e->mem, ZC_MEM_WORKING, init_bytes) : NULL;
    if (init_bytes && !init_buf)
        st = oom(e, err, "an initialisation buffer", -1, init_bytes);
    for (int i = 0; !st && i < e->nunits; i++)
        if (!(st = alloc_unit(e, i, err)))
            st = init_unit(e, i, init_buf, err);
    zc_mem_free(e->mem, ZC_MEM_WORKING, init_buf, init_bytes);
    if (!st && e->offload)
        st = build_jobs(e, err);
    ZC_ASSERT(st || !e->njobs || (e->plan.nslots >= 1 && e->plan.nslots <= e->njobs));
    if (!st && e->njobs)
        st = zc_stream_create(&e->stream, e->mem, e->aio, (int)e->plan.nslots, e->plan.slot_bytes,
                              e->cfg.pipeline_read, e->cfg.pipeline_write,
                              e->cfg.optimizer_pin_memory, err);
    e->fold = e->cfg.fold_update && e->stream && e->params_sharded;
    e->fold_bwd = e->fold && !(e->cfg.grad_clip > 0.0) && e->cfg.dtype != ZC_FP16;
    e->fold = e->fold && !e->fold_bwd;
    if (!st && e->fold_bwd)
        st = build_bjobs(e, err);
    if (!st && e->fold_bwd && e->compact) {
        e->last_use = malloc((size_t)e->nunits * sizeof(int));
        e->ready_pos = malloc((size_t)e->nunits * sizeof(int));
        if (!e->last_use || !e->ready_pos)
            st = zc_err_set(err, ZC_ENOMEM, "out of memory planning the offloaded step");
        for (int i = 0; !st && i < e->nunits; i++)
            e->last_use[i] = e->ready_pos[i] = -1; /* known once the acquires are recorded */
    }
    if ((st = zc_comm_agree(e->comm, st, "initialising the model states", err)))
        return st;
    e->finalized = true;
    size_t *numel = malloc((size_t)e->nunits * 2 * sizeof(size_t));
    uint8_t *use = malloc((size_t)e->nunits);
    if (!numel || !use) {
        free(numel);
        free(use);
        return zc_err_set(err, ZC_ENOMEM, "out of memory finalizing the engine");
    }
    zc_estimate_in in = zc_engine_estimate_in(e, e->stage, numel, numel + e->nunits, use);
    e->work_cap = zc_estimate_working_bound(&in);
    e->prefetch_elems = zc_estimate_prefetch_elems(&in);
    free(numel);
    free(use);
    zc_mem_reset_peaks(e->mem);
    if ((st = agreement_check(e, err))) /* the ranks disagree: nothing may run on it */
        e->finalized = false;
    return st;
}

void zc_engine_destroy(zc_engine *e)
{
    if (!e)
        return;
    size_t n = (size_t)e->nranks;
    if (e->rs_req) /* lands in a gradient shard: before anything is freed */
        zc_comm_wait(e->comm, e->rs_req, NULL);
    zc_stream_destroy(e->stream);         /* waits for its transfers */
    for (int i = 0; i < e->nunits; i++) { /* also after a failed finalize: free_f skips NULL */
        unit_t *u = &e->units[i];
        size_t S = u->info.shard, P = u->info.padded;
        if (u->gather) /* a prefetch nobody used: let it land before freeing its buffer */
            zc_comm_wait(e->comm, u->gather, NULL);
        if (u->qbuf)
            free_b(e, ZC_MEM_COMM, &u->qbuf, n, (size_t)zc_qwz_segment_bytes((int64_t)S));
        if (e->aio) { /* disk transfers into or out of RAM buffers */
            zc_aio_wait(e->aio, &u->pread, NULL);
            zc_aio_wait(e->aio, &u->gwrite, NULL);
        }
        io_free(e, IO_READ, &u->pread_buf, blocks(S, e->ps));
        io_free(e, IO_READ, &u->oldw, blocks(S, e->ps));
        io_free(e, IO_STAGING, &u->gwrite_buf, blocks(S, e->gs));
        free_b(e, sharded_params(e, u) ? ZC_MEM_WORKING : ZC_MEM_PARAMS, &u->full, P, e->ps);
        free_b(e, ZC_MEM_PARAMS, &u->shard_p, S, e->ps);
        free_b(e, ZC_MEM_PARAMS, &u->hpz, P / (size_t)e->hpz, e->ps);
        free_f(e, ZC_MEM_WORKING, &u->view, P);
        free_f(e, ZC_MEM_WORKING, &u->view_vec, u->vec_n);
        free_b(e, ZC_MEM_GRADS, &u->grad_full, P, e->gs);
        free_f(e, ZC_MEM_WORKING, &u->grad_work, P);
        free_b(e, ZC_MEM_WORKING, &u->grad_w16, P, e->gs);
        free_f(e, ZC_MEM_WORKING, &u->grad_vec, u->vec_n);
        if (u->disk.grads) /* a staging buffer, if a reduction was cut short */
            io_free(e, IO_STAGING, &u->grad_shard, blocks(S, e->gs));
        else
            free_b(e, ZC_MEM_GRADS, &u->grad_shard, S, e->gs);
        free_f(e, ZC_MEM_OPTIMIZER, &u->master, u->opt_n);
        free_b(e, ZC_MEM_OPTIMIZER, &u->rem, u->opt_n, 2);
        free_f(e, ZC_MEM_OPTIMIZER, &u->m, u->opt_n);
        free_f(e, ZC_MEM_OPTIMIZER, &u->v, u->opt_n);
        free_b(e, ZC_MEM_OPTIMIZER, &u->mq, u->opt_n, 1);
        free_b(e, ZC_MEM_OPTIMIZER, &u->vq, u->opt_n, 1);
        if (u->ms) /* q8_scales needs the shard, which a failed finalize may not have set */
            free_f(e, ZC_MEM_OPTIMIZER, &u->ms, q8_scales(u));
        if (u->vs)
            free_f(e, ZC_MEM_OPTIMIZER, &u->vs, q8_scales(u));
    }
    zc_swap_destroy(e->swap_opt); /* closing them gives the disk space back */
    zc_swap_destroy(e->swap_par);
    zc_mem_release(e->mem, ZC_MEM_NVME, e->nvme_charged);
    zc_aio_destroy(e->aio);
    free(e->jobs);
    free(e->bjobs);
    free(e->bjob_unit);
    free(e->last_use);
    free(e->ready_pos);
    free_b(e, ZC_MEM_COMM, &e->rs_send, e->rs_bytes, 1); /* NULL: nothing freed */
    free_b(e, ZC_MEM_COMM, &e->rs_recv, e->rs_recv_bytes, 1);
    free_f(e, ZC_MEM_COMM, &e->rs_f32, e->rs_cols);
    for (int k = 0; k < e->ncache; k++) {
        ASAN_UNPOISON_MEMORY_REGION(e->cache[k].p, e->cache[k].bytes);
        zc_mem_free(e->mem, ZC_MEM_WORKING, e->cache[k].p, e->cache[k].bytes);
    }
    for (int k = 0; k < e->nio_cache; k++) {
        ASAN_UNPOISON_MEMORY_REGION(e->io_cache[k].p, e->io_cache[k].bytes);
        io_unmap(e, e->io_cache[k].p, e->io_cache[k].bytes, e->io_cache[k].kind);
    }
    free(e->units);
    free(e->frozen);
    free(e->params);
    free(e->trace);
    free(e);
}

/* ---------- queries ---------- */

int zc_engine_num_units(const zc_engine *e)
{
    return e->nunits;
}
int zc_engine_num_params(const zc_engine *e)
{
    return e->nparams;
}
int zc_engine_stage(const zc_engine *e)
{
    return e->stage;
}
zc_dtype zc_engine_dtype(const zc_engine *e)
{
    return e->pdt;
}
int zc_engine_rank(const zc_engine *e)
{
    return e->rank;
}
int zc_engine_world_size(const zc_engine *e)
{
    return e->nranks;
}
int64_t zc_engine_steps_done(const zc_engine *e)
{
    return e->step;
}
void zc_engine_set_lr(zc_engine *e, double lr)
{
    e->lr = lr;
}

void zc_engine_offload_stats(const zc_engine *e, zc_offload_stats *out)
{
    memset(out, 0, sizeof *out);
    for (int i = 0; e->params_sharded && i < e->nunits; i++) {
        const unit_t *u = &e->units[i];
        *(u->disk.params ? &out->param_elems_on_disk : &out->param_elems_in_ram) +=
            (int64_t)(u->persistent ? u->info.padded : u->info.shard);
    }
    if (!e->offload || !e->aio)
        return;
    zc_aio_counters c = zc_aio_get_counters(e->aio);
    out->active = true;
    out->aio_engine = zc_aio_engine_name(zc_aio_engine_used(e->aio));
    out->optimizer_swap = e->swap_opt ? zc_swap_path(e->swap_opt) : NULL;
    out->param_swap = e->swap_par ? zc_swap_path(e->swap_par) : NULL;
    out->nvme_bytes = e->nvme_charged;
    out->bytes_read = c.bytes_read;
    out->bytes_written = c.bytes_written;
    out->wait_seconds = c.wait_seconds;
    out->update_seconds = e->update_seconds;
    out->update_bytes_read = e->update_read;
    out->update_bytes_written = e->update_written;
    out->io_buffers_mapped = e->io_mapped;
    out->shards_from_update = e->shards_from_update;
    out->shards_read_in_place = e->shards_read_in_place;
    out->updates_in_backward = e->updates_in_backward;
    out->param_bytes_read = e->param_bytes_read;
}

const zc_unit_info *zc_engine_unit_info(const zc_engine *e, int unit)
{
    return e && unit >= 0 && unit < e->nunits ? &e->units[unit].info : NULL;
}

const zc_param_info *zc_engine_param_info(const zc_engine *e, int param)
{
    return e && param >= 0 && param < e->nparams ? &e->params[param].info : NULL;
}

size_t zc_engine_total_numel(const zc_engine *e)
{
    size_t s = 0;
    for (int i = 0; i < e->nunits; i++)
        s += e->units[i].info.numel;
    return s;
}

size_t zc_engine_total_padded(const zc_engine *e)
{
    if (!e->finalized) /* finalize computes each unit's padded size */
        return 0;
    size_t s = 0;
    for (int i = 0; i < e->nunits; i++)
        s += e->units[i].info.padded;
    return s;
}

zc_estimate_in zc_engine_estimate_in(const zc_engine *e, int stage, size_t *numel,
                                     size_t *vec_numel, uint8_t *use)
{
    for (int i = 0; i < e->nunits; i++) {
        numel[i] = e->units[i].info.numel;
        if (vec_numel)
            vec_numel[i] = e->units[i].vec_n;
        if (use)
            use[i] = e->units[i].use;
    }
    zc_estimate_in in = {
        .unit_numel = numel,
        .unit_vec_numel = vec_numel,
        .unit_use = use,
        .unit_frozen = e->frozen,
        .nunits = e->nunits,
        .nranks = e->nranks,
        .stage = stage,
        .moment_floats = (int)opt_moments(&e->cfg),
        .moments_8bit = q8_moments(e),
        .compact_master = e->compact,
        .param_bytes = (int)e->ps,
        .grad_bytes = (int)e->gs,
        .grads_bf16 = e->grads16,
        .comm_elem_bytes = (int)e->cs,
        .grads_sent_as_stored = zc_config_grads_sent_as_stored(&e->cfg),
        .reduce_bucket_size = e->cfg.reduce_bucket_size,
        .prefetch_bucket_size = e->cfg.prefetch_bucket_size,
        .max_live_parameters = e->cfg.max_live_parameters,
        .persistence_threshold = e->cfg.param_persistence_threshold,
        .model_persistence_threshold = e->cfg.model_persistence_threshold,
        .offload_optimizer = e->cfg.offload_optimizer == ZC_OFFLOAD_NVME,
        .offload_params = e->cfg.offload_param == ZC_OFFLOAD_NVME,
        .offload_ratio = e->cfg.optimizer_ratio == ZC_AUTO ? 1.0 : e->cfg.optimizer_ratio,
        .max_in_cpu = e->cfg.max_in_cpu == ZC_AUTO ? ZC_MAX_IN_CPU_DEFAULT : e->cfg.max_in_cpu,
        .sub_group_size = e->cfg.sub_group_size,
        .buffer_count = e->cfg.optimizer_buffer_count,
        .param_buffer_count = e->cfg.param_buffer_count,
        .param_buffer_size = e->cfg.param_buffer_size,
        .quantized_weights = e->qwz,
        .quantized_gradients = e->qgz,
        .hpz_partition_size = e->hpz,
        .ranks_per_host = zc_comm_host_ranks(e->comm),
        .grad_accum = e->cfg.grad_accum};
    return in;
}

zc_state_bytes zc_engine_state_bytes_for_stage(const zc_engine *e, int stage)
{
    size_t *numel = malloc((size_t)e->nunits * sizeof(size_t));
    ZC_ASSERT(numel);
    zc_estimate_in in = zc_engine_estimate_in(e, stage, numel, NULL, NULL);
    zc_state_bytes b = zc_estimate_states(&in);
    free(numel);
    return b;
}

/* ---------- reduce-scatter pipeline ---------- */

static bool at_boundary(const zc_engine *e)
{
    return e->micro == e->cfg.grad_accum - 1;
}
static double unit_sum_squares(const zc_engine *e, const unit_t *u);

/* Waits for the gradient shards on their way to disk (all of them, or all but the newest), and
 * frees their buffers. */
static zc_status grad_writes_wait(zc_engine *e, bool keep_newest, zc_err *err)
{
    zc_status st = ZC_OK;
    for (int i = 0; i < e->nunits; i++) {
        unit_t *u = &e->units[i];
        if (!u->gwrite_buf || (keep_newest && i == e->gw_last))
            continue;
        zc_status st2 = zc_swap_wait(e->swap_opt, &u->gwrite, err);
        io_free(e, IO_STAGING, &u->gwrite_buf, blocks(u->info.shard, e->gs));
        if (!st)
            st = st2;
    }
    return st;
}

/* Unit i's reduced gradient shard is complete. Stage 3 with the shard on disk: at the step's
 * last micro-batch take its Σg² for the norm (the step would otherwise read it back just for
 * that), then send it to disk from the staging buffer. */
static zc_status bwd_update(zc_engine *e, int i, zc_err *err);
static zc_status grad_landed(zc_engine *e, int i, zc_err *err)
{
    if (e->bwd_open) /* fold_bwd: the update takes the shard now, in RAM */
        return bwd_update(e, i, err);
    unit_t *u = &e->units[i];
    if (!u->disk.grads)
        return ZC_OK;
    if (at_boundary(e))
        u->sumsq = unit_sum_squares(e, u);
    zc_swap_write(e->swap_opt, &u->gwrite, u->grad_shard, blocks(u->info.shard, e->gs),
                  u->disk.grads_off);
    u->gwrite_buf = u->grad_shard;
    u->grad_shard = NULL;
    e->gw_last = i;
    return ZC_OK;
}

static zc_status rs_finish(zc_engine *e, zc_err *err)
{
    if (!e->rs_req)
        return ZC_OK;
    zc_comm_req *r = e->rs_req;
    int landed = e->rs_last_of; /* the request was that unit's last chunk */
    e->rs_req = NULL;
    e->rs_last_of = -1;
    zc_status st = zc_comm_wait(e->comm, r, err);
    if (landed >= 0) /* sent from where it lay (rs_unit), its bf16 gradient can go now; packed,
                      * it went when copied out */
        work_free(e, &e->units[landed].grad_w16, e->units[landed].info.padded * e->gs);
    if (!st && landed >= 0)
        st = grad_landed(e, landed, err);
    return st;
}

/* Stage 3, unit i's gradient shard lives on disk: a staging buffer to reduce into (holding the
 * shard's earlier micro-batches when accumulating), with at most one other shard still on its
 * way to disk. */
static zc_status grad_staging(zc_engine *e, int i, zc_err *err)
{
    unit_t *u = &e->units[i];
    size_t bytes = blocks(u->info.shard, e->gs);
    zc_status st = rs_finish(e, err);
    if (!st)
        st = grad_writes_wait(e, true, err);
    if (st)
        return st;
    st =
        io_alloc(e, IO_STAGING, &u->grad_shard, bytes, "a gradient shard's staging buffer", i, err);
    if (st)
        return st;
    if (e->micro == 0)
        return ZC_OK;
    zc_swap_read(e->swap_opt, &u->gwrite, u->grad_shard, bytes, u->disk.grads_off);
    return zc_swap_wait(e->swap_opt, &u->gwrite, err);
}

static zc_status progress(zc_engine *e, zc_err *err)
{
    bool done;
    zc_status st = ZC_OK;
    /* a folded update's slots refilled as their writes land */
    if (e->stream && (e->upd_open || e->bwd_open))
        st = zc_stream_poll(e->stream, err);
    if (!st && e->rs_req)
        st = zc_comm_test(e->comm, e->rs_req, &done, err);
    return st;
}

/* What the model's fp32 gradients are multiplied by before they are rounded: fp16's loss scale
 * over the accumulation steps, as DeepSpeed divides the loss by gradient_accumulation_steps before
 * scaling it, so the summed fp16 gradients hold scale × their mean, in range at any accumulation
 * count (and a loss scale means what it means in DeepSpeed). 1 for fp32 and bf16. */
static float grad_scale(const zc_engine *e)
{
    if (e->cfg.dtype != ZC_FP16)
        return 1.0f;
    return (float)(e->scaler.scale / e->cfg.grad_accum);
}

/* Stages 2–3 with bf16 gradients: a unit's gradients are produced in 16 bits (grad_w16, with the
 * 1-D parameters' in grad_vec), not in a whole-unit fp32 grad_work. */
static bool sharded16(const zc_engine *e)
{
    /* decided once (never under fp16, whose loss scale can pass through 1): what the working
     * bound counts, zc_estimate_in.grads_bf16 */
    return e->grads_sharded && e->grads16;
}

/* Stages 2–3 with bf16 gradients sent in bf16, no qgZ: a unit's blocks go to the reduce-scatter
 * from grad_w16 where they lie (rs_unit) — no packing copy, no send staging — unless the model
 * asked the unit's matrix gradient in fp32 (grad_work: packed, rounded) or its blocks pass MPI's
 * int displacements. */
static bool sends_w16(const zc_engine *e, const unit_t *u)
{
    return sharded16(e) && !e->qgz && e->cdt == e->gdt && !u->grad_work &&
           u->info.padded <= (size_t)INT_MAX;
}

/* n ≤ CHUNK of the model's fp32 gradients as the stored gradient type would hold them: scaled
 * by the loss scale, rounded to gdt and widened back (in place). */
static void as_stored(const zc_engine *e, float *x, size_t n)
{
    ZC_ASSERT(n <= CHUNK);
    float scale = grad_scale(e);
    if (scale != 1.0f)
        for (size_t i = 0; i < n; i++)
            x[i] *= scale;
    if (e->gdt != ZC_FP32) {
        uint16_t h[CHUNK];
        zc_dtype_narrow(e->gdt, x, h, n);
        zc_dtype_widen(e->gdt, h, x, n);
    }
}

/* n gradient elements into dst as type `to` (the send staging's cdt; qgZ: fp32 on their way
 * to quantization). From grad_work (from_model: the model's fp32 values, scaled and rounded to
 * gdt first, as stages 0–1 store them) or from stored gdt values (grad_full: already scaled,
 * except when the model wrote it directly in fp32); NULL: zeros. */
static void pack(const zc_engine *e, zc_dtype to, void *dst, const void *src, bool from_model,
                 size_t n)
{
    zc_dtype src_t = from_model ? ZC_FP32 : e->gdt;
    bool unscaled = from_model || e->direct_grads;
    const size_t ts = (size_t)zc_dtype_size(to);
    if (!src) {
        memset(dst, 0, n * ts);
        return;
    }
    if (src_t == to && !(unscaled && grad_scale(e) != 1.0f) && !(from_model && e->gdt != ZC_FP32)) {
        memcpy(dst, src, n * ts);
        return;
    }
    float x[CHUNK];
    for (size_t o = 0; o < n; o += CHUNK) {
        size_t k = n - o < CHUNK ? n - o : CHUNK;
        zc_dtype_widen(src_t, at((void *)src, o, (size_t)zc_dtype_size(src_t)), x, k);
        if (unscaled)
            as_stored(e, x, k);
        zc_dtype_narrow(to, x, at(dst, o, ts), k);
    }
}

static zc_status bwd_begin(zc_engine *e, zc_err *err);

/* Reduce-scatters unit i's gradients into its owner shard, chunk by chunk. */
static zc_status rs_unit(zc_engine *e, int i, zc_err *err)
{
    unit_t *u = &e->units[i];
    size_t S = u->info.shard, n = (size_t)e->nranks;
    /* stages 2–3: the model's fp32 gradients, or the bf16 ones as stored (grad_w16; neither: the
     * model wrote none, zeros); stages 0–1: the stored gradients */
    bool from_model = e->grads_sharded && u->grad_work;
    const void *src = from_model         ? (const void *)u->grad_work
                      : e->grads_sharded ? u->grad_w16
                                         : u->grad_full;
    size_t src_es = from_model ? sizeof(float) : e->gs;
    /* Stages 0–1 whose stored gradients already travel as they are (the type sent, scaled, not
     * quantized): each rank's block is sent from grad_full where it lies, not packed first. */
    const bool in_place = !e->grads_sharded && !e->qgz && e->cdt == e->gdt &&
                          !(e->direct_grads && grad_scale(e) != 1.0f);
    /* On one rank (in RAM) the sum would copy grad_full out and back unchanged — 4% of perf's
     * samples in a bf16 GPT-2 124M step on one process. */
    if (n == 1 && in_place && !u->disk.grads)
        return ZC_OK;
    /* stages 2–3 in bf16: from grad_w16 where it lies (zeros if the model wrote none) */
    const bool w16 = e->grads_sharded && sends_w16(e, u);
    if (w16 && !u->grad_w16 && !(u->grad_w16 = work_alloc(e, u->info.padded * e->gs, true)))
        return oom(e, err, "the bf16 gradients", i, u->info.padded * e->gs);
    /* MPI's displacements are ints: the blocks of a unit past INT_MAX elements are packed. */
    const bool strided = (in_place && u->info.padded <= (size_t)INT_MAX) || w16;
    /* zc_engine_finalize's rule: no send staging where every unit is sent in place; a unit whose
     * matrix gradient came in fp32 undeclared (ZC_USE_GRAD32 added) gets it now */
    if (!strided && !e->rs_send && !(e->rs_send = alloc_b(e, ZC_MEM_COMM, e->rs_bytes, 1)))
        return oom(e, err, "reduce-scatter staging", i, e->rs_bytes);
    /* folded: the update reads the gradient shard the reduction is about to overwrite */
    zc_status st = update_pending(e, i) ? update_units(e, i, NULL, err) : ZC_OK;
    if (!st)
        st = lockstep_check(e, OP_REDUCE_SCATTER, i, err);
    if (!st && e->fold_bwd && at_boundary(e) && !e->bwd_open)
        st = bwd_begin(e, err);
    if (!st && u->disk.grads)
        st = grad_staging(e, i, err);
    for (size_t off = 0; !st && off < S; off += e->rs_cols) {
        size_t len = S - off < e->rs_cols ? S - off : e->rs_cols;
        if ((st = rs_finish(e, err)))
            break;
        /* rank j's block; no gradient written (src NULL): zeros. qgZ: quantized from fp32 */
        const size_t seg = e->qgz ? (size_t)zc_qwz_segment_bytes((int64_t)len) : 0;
        for (size_t j = 0; j < n && !strided; j++) {
            const void *from = src ? at((void *)src, j * S + off, src_es) : NULL;
            if (!seg) {
                pack(e, e->cdt, at(e->rs_send, j * len, e->cs), from, from_model, len);
                continue;
            }
            pack(e, ZC_FP32, e->rs_f32, from, from_model, len);
            zc_qwz_quantize(e->rs_f32, ZC_FP32, len,
                            at(e->rs_send, (size_t)zc_comm_q8_slot(e->comm, (int)j) * seg, 1));
        }
        void *out;
        bool accumulate = false;
        if (!e->grads_sharded) {
            out = at(u->grad_full, (size_t)e->rank * S + off, e->gs);
        } else {
            out = at(u->grad_shard, off, e->gs);
            accumulate = e->micro > 0;
            if (off + len == S && !w16) { /* copied out: the full-unit gradient can go (sent
                                           * where it lies, when the last chunk lands) */
                work_free(e, &u->grad_work, u->info.padded * sizeof(float));
                work_free(e, &u->grad_w16, u->info.padded * e->gs);
                src = NULL;
            }
        }
        if (seg)
            st = zc_comm_reduce_scatter_q8_start(e->comm, e->rs_send, e->rs_recv, len, e->gdt, out,
                                                 accumulate, label(e, i), &e->rs_req, err);
        else if (strided)
            st = zc_comm_reduce_scatter_strided_start(
                e->comm, e->cdt, at(w16 ? u->grad_w16 : u->grad_full, off, e->gs), S, e->rs_recv,
                len, e->gdt, out, accumulate, label(e, i), &e->rs_req, err);
        else
            st = zc_comm_reduce_scatter_start(e->comm, e->cdt, e->rs_send, e->rs_recv, len, e->gdt,
                                              out, accumulate, label(e, i), &e->rs_req, err);
        if (off + len == S)
            e->rs_last_of = i;
        if (!st && !e->cfg.overlap_comm) /* DeepSpeed's overlap_comm false: one at a time */
            st = rs_finish(e, err);
    }
    return st;
}

/* Starts reduce-scatters for ready units in the static order (reverse registration). */
static zc_status rs_pump(zc_engine *e, zc_err *err)
{
    if (!e->grads_sharded && !at_boundary(e))
        return ZC_OK; /* stages 0–1 accumulate locally and reduce once per step */
    zc_status st = ZC_OK;
    while (!st && e->rs_next < e->nunits) {
        int i = e->nunits - 1 - e->rs_next;
        if (!e->units[i].ready && !e->units[i].info.frozen)
            break;
        if (!e->units[i].info.frozen) /* nothing to reduce */
            st = rs_unit(e, i, err);
        e->rs_next++;
    }
    return st;
}

/* ---------- acquire / release ---------- */

/* Folded: what the update wrote of unit u's shard must have landed before it is read back. */
static zc_status shard_landed(zc_engine *e, const unit_t *u, zc_err *err)
{
    zc_status st = ZC_OK;
    for (int j = u->first_job; e->upd_open && !st && j < u->first_job + u->njobs; j++)
        st = zc_stream_landed(e->stream, j, err);
    return st;
}

/* Stage 3, unit i's parameter shard lives on disk: start reading it into a buffer of its own. */
static zc_status param_read_start(zc_engine *e, int i, zc_err *err)
{
    unit_t *u = &e->units[i];
    size_t bytes = blocks(u->info.shard, e->ps);
    ZC_ASSERT(!update_pending(e, i));
    zc_status st = shard_landed(e, u, err);
    if (!st)
        st = io_alloc(e, IO_READ, &u->pread_buf, bytes, "a parameter shard's read buffer", i, err);
    if (st)
        return st;
    zc_swap_read(e->swap_par, &u->pread, u->pread_buf, bytes, u->disk.params_off);
    e->param_bytes_read += (int64_t)bytes;
    e->reads_out++;
    e->read_elems_out += (int64_t)u->info.shard;
    return ZC_OK;
}

/* Unit i's oldw goes: its update has taken it, or the pass ended without one. */
static void oldw_free(zc_engine *e, unit_t *u)
{
    if (!u->oldw)
        return;
    io_free(e, IO_READ, &u->oldw, blocks(u->info.shard, e->ps));
    e->nold--;
    e->reads_out--;
    e->read_elems_out -= (int64_t)u->info.shard;
}

/* Waits for unit i's shard read (if any) and frees its buffer — or, keep, holds it as the
 * unit's oldw; dst (if not NULL) gets the shard. */
static zc_status param_read_end(zc_engine *e, int i, void *dst, bool keep, zc_err *err)
{
    unit_t *u = &e->units[i];
    if (!u->pread_buf)
        return ZC_OK;
    zc_status st = zc_swap_wait(e->swap_par, &u->pread, err);
    if (!st && dst)
        memcpy(dst, u->pread_buf, u->info.shard * e->ps);
    if (!st && keep) { /* still counted among the reads out: the read-ahead's bound holds */
        ZC_ASSERT(!u->oldw);
        u->oldw = u->pread_buf;
        u->pread_buf = NULL;
        e->nold++;
        return ZC_OK;
    }
    io_free(e, IO_READ, &u->pread_buf, blocks(u->info.shard, e->ps));
    e->reads_out--;
    e->read_elems_out -= (int64_t)u->info.shard;
    return st;
}

static zc_status param_read_finish(zc_engine *e, int i, void *dst, zc_err *err)
{
    return param_read_end(e, i, dst, false, err);
}

/* Whether unit i's shard can be read from disk straight into its place in the gathered buffer
 * (O_DIRECT): that place starts on a 4 KiB boundary and the shard is whole 4 KiB blocks, so the
 * read neither starts off a boundary nor runs into the next rank's place (Llama-family blocks on
 * a power-of-two number of ranks; GPT-2's biases make most of its shards odd sizes). */
static bool read_in_place(const zc_engine *e, int i, const void *dst)
{
    const size_t bytes = e->units[i].info.shard * e->ps;
    return (uintptr_t)dst % ZC_AIO_ALIGN == 0 && bytes % ZC_AIO_ALIGN == 0;
}

/* A gather that found no read ahead of it: reads unit i's shard straight into dst, its place in
 * the gathered buffer (read_in_place), with no buffer between and no copy, and waits for it. */
static zc_status param_read_into(zc_engine *e, int i, void *dst, zc_err *err)
{
    unit_t *u = &e->units[i];
    const size_t bytes = u->info.shard * e->ps;
    zc_status st = shard_landed(e, u, err);
    if (st)
        return st;
    zc_swap_read(e->swap_par, &u->pread, dst, bytes, u->disk.params_off);
    e->param_bytes_read += (int64_t)bytes;
    e->shards_read_in_place++;
    return zc_swap_wait(e->swap_par, &u->pread, err);
}

/* Whether `reads` shard reads of `elems` elements in all, outstanding at once, are within what
 * the read-ahead may hold: offload_param.buffer_count reads, buffer_size elements past the
 * first (one read whatever its size). */
static bool reads_fit(const zc_engine *e, int reads, int64_t elems)
{
    return reads <= e->cfg.param_buffer_count && (reads <= 1 || elems <= e->cfg.param_buffer_size);
}

/* fold_bwd with a compact master: whether the gather of unit i at trace position pos (−1: off
 * the recorded order) keeps the shard it reads as the unit's oldw — its last gather of the
 * step's last micro-batch, a shard on disk, while fewer than offload_param.buffer_count − 1 are
 * kept (one at least: the read-ahead keeps a read) and the reads out, this one and the kept ones
 * among them, are within what the read-ahead itself may hold (buffer_count reads, buffer_size
 * elements past the first): a read a gather had to start, beyond that, is not kept, so the
 * buffers stay within the offload plan's bound. */
static bool keep_old(const zc_engine *e, int i, int pos)
{
    const unit_t *u = &e->units[i];
    const int count = e->cfg.param_buffer_count, most = count > 2 ? count - 1 : 1;
    const bool read = u->pread_buf != NULL; /* else the gather starts it: one more */
    return e->last_use && pos >= 0 && e->last_use[i] == pos && at_boundary(e) && u->disk.params &&
           !u->info.frozen && sharded_params(e, u) && !u->old_in_stream && e->nold < most &&
           reads_fit(e, e->reads_out + !read,
                     e->read_elems_out + (read ? 0 : (int64_t)u->info.shard));
}

/* Disk read-ahead along the recorded order: the next units whose shards live on disk and are
 * neither gathered nor read, while at most offload_param.buffer_count reads of at most
 * buffer_size elements in all are outstanding (one read whatever its size). */
static zc_status read_ahead(zc_engine *e, zc_err *err)
{
    for (int k = e->trace_pos; k < e->trace_len; k++) {
        unit_t *w = &e->units[e->trace[k]];
        if (!w->disk.params || w->pread_buf || w->full || w->acquired || hpz_current(e, w) ||
            update_pending(e, e->trace[k])) /* folded: its update will hand its gather the shard */
            continue;
        if (!reads_fit(e, e->reads_out + 1, e->read_elems_out + (int64_t)w->info.shard))
            break;
        zc_status st = param_read_start(e, e->trace[k], err);
        if (st)
            return st;
    }
    return ZC_OK;
}

static zc_status gather_start(zc_engine *e, int i, bool keep, zc_err *err)
{
    unit_t *u = &e->units[i];
    size_t S = u->info.shard, P = u->info.padded;
    zc_status st = lockstep_check(e, OP_GATHER, i, err);
    if (st)
        return st;
    if (!(u->full = work_alloc(e, P * e->ps, false)))
        return oom(e, err, "gathered parameters", i, P * e->ps);
    if (hpz_current(e, u)) { /* hpZ: the group holds the whole unit */
        const size_t H = P / (size_t)e->hpz;
        memcpy(at(u->full, (size_t)zc_comm_group_rank(e->comm) * H, e->ps), u->hpz, H * e->ps);
        if (u->pread_buf) /* read ahead before the copy was made: not needed */
            st = param_read_finish(e, i, NULL, err);
        if (!st)
            st = zc_comm_group_all_gather_start(e->comm, e->pdt, u->full, H, label(e, i),
                                                &u->gather, err);
        if (st)
            work_free(e, &u->full, P * e->ps);
        else
            e->gathered_elems += (int64_t)P;
        return st;
    }
    void *mine = at(u->full, (size_t)e->rank * S, e->ps);
    bool updated = false; /* folded: the update of this unit hands over its shard */
    if (update_pending(e, i)) {
        st = update_units(e, i, u->disk.params ? mine : NULL, err);
        updated = !st && u->disk.params;
        e->shards_from_update += updated;
        if (updated && u->pread_buf) /* read before the update (none is: read_ahead skips it) */
            st = param_read_finish(e, i, NULL, err);
    }
    if (!st && !updated && !u->disk.params)
        memcpy(mine, u->shard_p, S * e->ps);
    else if (!st && !updated && !u->pread_buf && !keep && read_in_place(e, i, mine))
        st = param_read_into(e, i, mine, err);
    else if (!st && !updated && !(st = u->pread_buf ? ZC_OK : param_read_start(e, i, err)))
        st = param_read_end(e, i, mine, keep, err);
    const size_t seg = e->qwz ? (size_t)zc_qwz_segment_bytes((int64_t)S) : 0;
    if (!st && seg && !(u->qbuf = alloc_b(e, ZC_MEM_COMM, (size_t)e->nranks, seg)))
        st = oom(e, err, "quantized parameters (qwZ)", i, (size_t)e->nranks * seg);
    if (!st && seg) { /* every rank's segment, this rank's quantized here; 4-byte elements */
        zc_qwz_quantize(mine, e->pdt, S, at(u->qbuf, (size_t)e->rank * seg, 1));
        st = zc_comm_all_gather_start(e->comm, ZC_FP32, u->qbuf, seg / 4, label(e, i), &u->gather,
                                      err);
    } else if (!st)
        st = zc_comm_all_gather_start(e->comm, e->pdt, u->full, S, label(e, i), &u->gather, err);
    if (st) {
        free_b(e, ZC_MEM_COMM, &u->qbuf, seg, (size_t)e->nranks);
        work_free(e, &u->full, P * e->ps);
    } else
        e->gathered_elems += (int64_t)P;
    return st;
}

static zc_status gather_wait(zc_engine *e, int i, zc_err *err)
{
    unit_t *u = &e->units[i];
    zc_comm_req *r = u->gather;
    u->gather = NULL;
    zc_status st = r ? zc_comm_wait(e->comm, r, err) : ZC_OK;
    if (u->qbuf) { /* qwZ: every rank uses the same dequantized values, its own segment too */
        const size_t S = u->info.shard, seg = (size_t)zc_qwz_segment_bytes((int64_t)S);
        for (int k = 0; !st && k < e->nranks; k++)
            zc_qwz_dequantize(at(u->qbuf, (size_t)k * seg, 1), S, e->pdt,
                              at(u->full, (size_t)k * S, e->ps));
        free_b(e, ZC_MEM_COMM, &u->qbuf, (size_t)e->nranks, seg);
    }
    if (!st && u->hpz && !hpz_current(e, u)) { /* hpZ: keep this rank's slice */
        const size_t H = u->info.padded / (size_t)e->hpz;
        memcpy(u->hpz, at(u->full, (size_t)zc_comm_group_rank(e->comm) * H, e->ps), H * e->ps);
        u->hpz_epoch = e->hpz_epoch;
    }
    return st;
}

static zc_status prefetch(zc_engine *e, zc_err *err)
{
    int64_t inflight = 0;
    for (int i = 0; i < e->nunits; i++)
        if (e->units[i].gather)
            inflight += (int64_t)e->units[i].info.padded;
    for (int k = e->trace_pos; k < e->trace_len; k++) {
        unit_t *w = &e->units[e->trace[k]];
        if (w->full || w->acquired) /* live or already on its way */
            continue;
        int64_t P = (int64_t)w->info.padded;
        if (inflight + P > e->prefetch_elems || e->gathered_elems + P > e->cfg.max_live_parameters)
            break;
        zc_status st = gather_start(e, e->trace[k], keep_old(e, e->trace[k], k), err);
        if (st)
            return st;
        inflight += P;
    }
    return read_ahead(e, err);
}

/* Mixed precision: room for the unit's fp32 view. Each parameter is widened into it when the
 * model first asks for it in fp32 (zc_engine_param); one the model reads only in its stored
 * 16 bits (zc_engine_param_stored, e.g. a weight matrix fed to a bf16 product) never is. */
static zc_status make_view(zc_engine *e, int i, zc_err *err)
{
    unit_t *u = &e->units[i];
    size_t P = u->info.padded;
    if (u->vec_n && !(u->view_vec = work_alloc(e, u->vec_n * sizeof(float), false)))
        return oom(e, err, "the fp32 view of the 1-D parameters", i, u->vec_n * sizeof(float));
    if (u->wants_view && !(u->view = work_alloc(e, P * sizeof(float), false)))
        return oom(e, err, "the fp32 view of the parameters", i, P * sizeof(float));
    return ZC_OK;
}

/* Refuses a call on unit i of an engine that is not finalized (ZC_ESTATE) or a unit that does
 * not exist (ZC_EINVAL), naming the call; ZC_OK otherwise. */
static zc_status unit_call(const zc_engine *e, const char *call, int i, zc_err *err)
{
    if (!e)
        return zc_err_set(err, ZC_EINVAL, "%s(unit %d): the engine is NULL", call, i);
    if (!e->finalized)
        return zc_err_set(err, ZC_ESTATE, "%s(unit %d): the engine is not finalized (%s)", call, i,
                          e->finalize_called ? "zc_engine_finalize failed: destroy it"
                                             : "call zc_engine_finalize first");
    if (i < 0 || i >= e->nunits)
        return zc_err_set(err, ZC_EINVAL, "%s(unit %d): no such unit; the model has units 0 to %d",
                          call, i, e->nunits - 1);
    return ZC_OK;
}

/* Refuses a call on unit i in the wrong state: ZC_ESTATE naming the call, the unit, the step and
 * what is wrong (a printf format of no arguments). */
static zc_status wrong_state(zc_engine *e, const char *call, int i, const char *why, zc_err *err)
{
    return zc_err_set(err, ZC_ESTATE, "%s(unit %d '%s'), step %lld: %s", call, i, unit_name(e, i),
                      step_number(e), why);
}

zc_status zc_engine_acquire(zc_engine *e, int i, zc_err *err)
{
    zc_status st = unit_call(e, "zc_engine_acquire", i, err);
    if (st)
        return st;
    if (e->units[i].acquired)
        return wrong_state(e, "zc_engine_acquire", i,
                           "the unit is already acquired (release it before acquiring it again)",
                           err);
    if (e->fold_bwd && at_boundary(e) && e->units[i].ready)
        return wrong_state(e, "zc_engine_acquire", i,
                           "its gradients were handed back in the step's last micro-batch, and "
                           "without gradient_clipping its update runs then (fold_update): it "
                           "cannot be gathered again before zc_engine_step",
                           err);
    unit_t *u = &e->units[i];
    record(e, EV_ACQUIRE, i); /* after the checks: a refused call changes nothing */
    st = progress(e, err);
    if (!st && !sharded_params(e, u) && update_pending(e, i)) /* folded: a persistent unit */
        st = update_units(e, i, NULL, err);
    if (st || !sharded_params(e, u)) {
        if (!st && e->mixed)
            st = make_view(e, i, err);
        u->acquired = !st;
        return st;
    }
    if (!e->trace_done) { /* first micro-batch: record the order */
        int *trace = grow(e->trace, e->trace_len, &e->trace_cap, sizeof *e->trace);
        if (!trace)
            return zc_err_set(err, ZC_ENOMEM, "rank %d: out of memory recording the acquires",
                              e->rank);
        e->trace = trace;
        e->trace[e->trace_len++] = i;
    } else if (e->trace_pos >= 0) {
        /* Follow the recorded order; a model that leaves it gets no prefetch until the next
         * micro-batch (every rank decides alike: the lockstep check keeps them together). */
        e->trace_pos =
            e->trace_pos < e->trace_len && e->trace[e->trace_pos] == i ? e->trace_pos + 1 : -1;
    }
    if (e->trace_done) /* the gather was started ahead, or must start now */
        *(u->full ? &e->prefetch_hits : &e->prefetch_misses) += 1;
    if (!u->full) /* this acquire's place in the recorded order, if it follows it */
        st = gather_start(
            e, i, keep_old(e, i, e->trace_done && e->trace_pos > 0 ? e->trace_pos - 1 : -1), err);
    if (!st)
        st = gather_wait(e, i, err);
    if (!st && e->mixed) /* beside the gathered 16-bit copy, which stays until release */
        st = make_view(e, i, err);
    if (!st && e->trace_done && e->trace_pos >= 0)
        st = prefetch(e, err);
    u->acquired = !st;
    return st;
}

zc_status zc_engine_release(zc_engine *e, int i, zc_err *err)
{
    zc_status st = unit_call(e, "zc_engine_release", i, err);
    if (st)
        return st;
    if (!e->units[i].acquired)
        return wrong_state(e, "zc_engine_release", i,
                           "the unit is not acquired (zc_engine_acquire it first)", err);
    unit_t *u = &e->units[i];
    record(e, EV_RELEASE, i);
    u->acquired = false;
    work_free(e, &u->view, u->info.padded * sizeof(float));
    work_free(e, &u->view_vec, u->vec_n * sizeof(float));
    for (int p = u->info.first_param; p < u->info.first_param + u->info.nparams; p++)
        e->params[p].widened = false;
    if (sharded_params(e, u)) {
        work_free(e, &u->full, u->info.padded * e->ps);
        e->gathered_elems -= (int64_t)u->info.padded;
    }
    return progress(e, err);
}

/* Parameter `param` of an acquired unit, or NULL (no such parameter, its unit not acquired). */
static param_t *acquired_param(zc_engine *e, int param)
{
    if (!e || param < 0 || param >= e->nparams || !e->units[e->params[param].info.unit].acquired)
        return NULL;
    return &e->params[param];
}

float *zc_engine_param(zc_engine *e, int param)
{
    param_t *pp = acquired_param(e, param);
    if (!pp)
        return NULL;
    const zc_param_info *p = &pp->info;
    const unit_t *u = &e->units[p->unit];
    if (!e->mixed)
        return (float *)u->full + p->offset;
    unit_t *w = &e->units[p->unit];
    float *dst = p->ndim == 1 ? w->view_vec + pp->vec_off : NULL;
    if (!dst && !w->view) { /* the first matrix read in fp32: from now on at every acquire */
        w->wants_view = true;
        w->use |= ZC_USE_VIEW32;
        if (!(w->view = work_alloc(e, u->info.padded * sizeof(float), false)))
            return NULL;
    }
    if (!dst)
        dst = w->view + p->offset;
    if (!pp->widened) {
        zc_dtype_widen(e->pdt, at(u->full, p->offset, e->ps), dst, p->numel);
        pp->widened = true;
    }
    return dst;
}

const void *zc_engine_param_stored(zc_engine *e, int param)
{
    const param_t *pp = acquired_param(e, param);
    if (!pp)
        return NULL;
    const zc_param_info *p = &pp->info;
    const unit_t *u = &e->units[p->unit];
    return at(u->full, p->offset, e->ps);
}

/* A unit's fp32 gradient buffer for this micro-batch comes unzeroed: each parameter's part is
 * zeroed when first handed out to accumulate into (zc_engine_grad), left as it is when handed
 * out to be overwritten (zc_engine_grad_fresh), and zeroed at grads_ready if it never was handed
 * out; the elements between and after the parameters are zeroed here. Zeroing the whole buffer
 * up front, and then having the products add into the zeros, was a memset and a read of the
 * whole model's fp32 gradients every micro-batch. */
static float *grad_work_alloc(zc_engine *e, unit_t *u)
{
    const size_t bytes = u->info.padded * sizeof(float);
    if (!(u->grad_work = work_alloc(e, bytes, false)))
        return NULL;
    if (sharded16(e)) /* a matrix's gradient asked in fp32 where 16 bits would do */
        u->use |= ZC_USE_GRAD32;
    size_t end = 0; /* parameters lie in registration order, without overlap */
    for (int q = u->info.first_param; q < u->info.first_param + u->info.nparams; q++) {
        param_t *pq = &e->params[q];
        ZC_ASSERT(pq->info.offset >= end);
        memset(u->grad_work + end, 0, (pq->info.offset - end) * sizeof(float));
        end = pq->info.offset + pq->info.numel;
        pq->grad_given = pq->grad16 || pq->vec_given; /* written in grad_full, grad_w16 or
                                                         grad_vec instead */
    }
    memset(u->grad_work + end, 0, (u->info.padded - end) * sizeof(float));
    return u->grad_work;
}

/* Zeroes the parts of unit u's gradient buffer the model never asked for this micro-batch. */
static void zero_grads_not_given(zc_engine *e, unit_t *u)
{
    for (int q = u->info.first_param; q < u->info.first_param + u->info.nparams; q++) {
        param_t *pq = &e->params[q];
        if (!pq->grad_given)
            memset(u->grad_work + pq->info.offset, 0, pq->info.numel * sizeof(float));
        pq->grad_given = true;
    }
}

/* Parameter `param` while its gradients may be written: the engine finalized and the unit not
 * handed back in this micro-batch (grads_ready); NULL otherwise. */
static param_t *writable_param(zc_engine *e, int param)
{
    if (!e || !e->finalized || param < 0 || param >= e->nparams ||
        e->units[e->params[param].info.unit].ready ||
        e->units[e->params[param].info.unit].info.frozen) /* no gradient */
        return NULL;
    return &e->params[param];
}

static float *grad_buffer(zc_engine *e, int param, bool overwrite, bool *fresh)
{
    if (fresh)
        *fresh = false;
    param_t *pp = writable_param(e, param);
    /* written in 16 bits this micro-batch (grad16): no fp32 buffer to add to */
    if (!pp || !fresh || pp->grad16)
        return NULL;
    const zc_param_info *p = &pp->info;
    unit_t *u = &e->units[p->unit];
    if (e->direct_grads) /* the stored gradients, accumulating over micro-batches */
        return (float *)u->grad_full + p->offset;
    if (p->ndim == 1 && sharded16(e)) {
        if (!u->grad_vec && !(u->grad_vec = work_alloc(e, u->vec_n * sizeof(float), false)))
            return NULL;
        float *g = u->grad_vec + pp->vec_off;
        if (!pp->vec_given) {
            pp->vec_given = pp->grad_given = true;
            *fresh = overwrite;
            if (!overwrite)
                memset(g, 0, p->numel * sizeof(float));
        }
        return g;
    }
    if (!u->grad_work && !grad_work_alloc(e, u))
        return NULL;
    if (!pp->grad_given) {
        pp->grad_given = true;
        *fresh = overwrite;
        if (!overwrite)
            memset(u->grad_work + p->offset, 0, p->numel * sizeof(float));
    }
    return u->grad_work + p->offset;
}

/* With bf16 gradients, the parameter's part of the unit's gradient as stored, for the model to
 * write rounded itself (a product with a bf16 output): stages 0–1 at the first micro-batch of a
 * step, grad_full's part, which that micro-batch's fold would overwrite with the rounded fp32
 * gradient anyway; stages 2–3 at every micro-batch (each is reduce-scattered on its own), the
 * part of grad_w16 the reduce-scatter would otherwise have rounded grad_work's into. */
uint16_t *zc_engine_grad16(zc_engine *e, int param)
{
    param_t *pp = writable_param(e, param);
    if (!pp)
        return NULL;
    unit_t *u = &e->units[pp->info.unit];
    if (e->direct_grads || !e->grads16 || pp->grad16 || pp->vec_given ||
        (u->grad_work && pp->grad_given))
        return NULL;
    if (e->grads_sharded) {
        if (!u->grad_w16 && !(u->grad_w16 = work_alloc(e, u->info.padded * e->gs, false)))
            return NULL;
    } else if (e->micro != 0)
        return NULL;
    pp->grad16 = pp->grad_given = true;
    u->ngrad16++;
    return at(e->grads_sharded ? u->grad_w16 : u->grad_full, pp->info.offset, e->gs);
}

float *zc_engine_grad(zc_engine *e, int param)
{
    bool fresh;
    return grad_buffer(e, param, false, &fresh);
}

float *zc_engine_grad_fresh(zc_engine *e, int param, bool *fresh)
{
    return grad_buffer(e, param, true, fresh);
}

/* A step's first micro-batch, stages 0–1 with 16-bit gradients: every part of grad_full the
 * model did not write in 16 bits itself (zc_engine_grad16) is grad_work's, rounded, or zeros
 * when the model asked for no fp32 gradient of the unit (grad_work NULL). */
static void fill_not_written(zc_engine *e, unit_t *u)
{
    const int end = u->info.first_param + u->info.nparams;
    size_t lo = 0; /* parameters lie in registration order, without overlap */
    for (int q = u->info.first_param; q <= end; q++) {
        if (q < end && !e->params[q].grad16)
            continue;
        const size_t hi = q < end ? e->params[q].info.offset : u->info.padded;
        if (u->grad_work)
            zc_dtype_narrow(e->gdt, u->grad_work + lo, at(u->grad_full, lo, e->gs), hi - lo);
        else
            memset(at(u->grad_full, lo, e->gs), 0, (hi - lo) * e->gs);
        if (q < end)
            lo = hi + e->params[q].info.numel;
    }
}

/* Stages 0–1 with 16-bit gradients: the micro-batch's fp32 gradients, scaled and rounded, are
 * stored into (first micro-batch) or added to (later ones, in fp32, rounded once) grad_full. */
static void fold_grads(zc_engine *e, unit_t *u)
{
    if (u->ngrad16) { /* first micro-batch, scale 1 */
        fill_not_written(e, u);
        work_free(e, &u->grad_work, u->info.padded * sizeof(float));
        return;
    }
    if (e->micro == 0 && grad_scale(e) == 1.0f) { /* rounding once is all it takes, threaded */
        zc_dtype_narrow(e->gdt, u->grad_work, u->grad_full, u->info.padded);
        work_free(e, &u->grad_work, u->info.padded * sizeof(float));
        return;
    }
    float x[CHUNK], acc[CHUNK];
    for (size_t o = 0; o < u->info.padded; o += CHUNK) {
        size_t k = u->info.padded - o < CHUNK ? u->info.padded - o : CHUNK;
        memcpy(x, u->grad_work + o, k * sizeof(float));
        as_stored(e, x, k);
        if (e->micro > 0) {
            zc_dtype_widen(e->gdt, at(u->grad_full, o, e->gs), acc, k);
            for (size_t j = 0; j < k; j++)
                x[j] = acc[j] + x[j];
        }
        zc_dtype_narrow(e->gdt, x, at(u->grad_full, o, e->gs), k);
    }
    work_free(e, &u->grad_work, u->info.padded * sizeof(float));
}

/* Stages 2–3 in bf16, at grads_ready: the unit's gradient for the reduce-scatter in one buffer —
 * grad_work when the model asked an fp32 matrix gradient (the 16-bit and grad_vec parts widened
 * into it, exactly), else grad_w16 (grad_vec's parts rounded into it, the rest zeros): the bits a
 * reduce-scatter from an fp32 grad_work of the same values would send. false: out of memory. */
static bool merge_sharded_grads(zc_engine *e, unit_t *u)
{
    const int end = u->info.first_param + u->info.nparams;
    if (u->grad_work) {
        for (int q = u->info.first_param; q < end; q++) {
            const param_t *pq = &e->params[q];
            float *dst = u->grad_work + pq->info.offset;
            if (pq->grad16)
                zc_dtype_widen(e->gdt, at(u->grad_w16, pq->info.offset, e->gs), dst,
                               pq->info.numel);
            else if (pq->vec_given)
                memcpy(dst, u->grad_vec + pq->vec_off, pq->info.numel * sizeof(float));
        }
        work_free(e, &u->grad_w16, u->info.padded * e->gs);
    } else if (u->grad_w16 || u->grad_vec) {
        if (!u->grad_w16 && !(u->grad_w16 = work_alloc(e, u->info.padded * e->gs, false)))
            return false;
        size_t lo = 0; /* parameters lie in registration order, without overlap */
        for (int q = u->info.first_param; q <= end; q++) {
            const param_t *pq = q < end ? &e->params[q] : NULL;
            const size_t hi = pq ? pq->info.offset : u->info.padded;
            memset(at(u->grad_w16, lo, e->gs), 0, (hi - lo) * e->gs);
            if (!pq)
                break;
            lo = hi + pq->info.numel;
            if (pq->grad16)
                continue;
            if (pq->vec_given)
                zc_dtype_narrow(e->gdt, u->grad_vec + pq->vec_off, at(u->grad_w16, hi, e->gs),
                                pq->info.numel);
            else
                memset(at(u->grad_w16, hi, e->gs), 0, pq->info.numel * e->gs);
        }
    }
    work_free(e, &u->grad_vec, u->vec_n * sizeof(float));
    for (int q = u->info.first_param; q < end; q++)
        e->params[q].vec_given = false;
    return true;
}

zc_status zc_engine_grads_ready(zc_engine *e, int i, zc_err *err)
{
    zc_status st = unit_call(e, "zc_engine_grads_ready", i, err);
    if (st)
        return st;
    if (e->units[i].info.frozen)
        return wrong_state(e, "zc_engine_grads_ready", i,
                           "the unit is frozen (zc_engine_freeze_unit): it has no gradients", err);
    if (e->units[i].ready)
        return wrong_state(e, "zc_engine_grads_ready", i,
                           "the unit's gradients were already handed back in this micro-batch "
                           "(once per unit; zc_engine_step ends the micro-batch)",
                           err);
    record(e, EV_GRADS_READY, i);
    unit_t *u = &e->units[i];
    u->ready = true;
    if (e->ready_pos && !e->trace_done) /* the first micro-batch: where in the acquires */
        e->ready_pos[i] = e->trace_len;
    if (u->grad_work)
        zero_grads_not_given(e, u);
    if (!e->grads_sharded && u->grad_work)
        fold_grads(e, u);
    else if (!e->grads_sharded && !e->direct_grads && e->micro == 0) /* no fp32 gradient */
        fill_not_written(e, u);
    else if (e->grads_sharded && !merge_sharded_grads(e, u))
        return oom(e, err, "the bf16 gradients", i, u->info.padded * e->gs);
    for (int q = u->info.first_param; u->ngrad16 && q < u->info.first_param + u->info.nparams; q++)
        e->params[q].grad16 = false;
    u->ngrad16 = 0;
    return rs_pump(e, err);
}

/* ---------- the step ---------- */

/* The optimizer over n elements of an optimizer range: on the fp32 weights w (the parameters, or
 * the master copy) from gradients of the stored type; in mixed precision the kernel also rounds
 * w into the 16-bit params as it goes. A compact master: w is its remainders, params its top
 * halves, both written. */
static int64_t update_span(const zc_engine *e, void *w, const void *g, float *m, float *v,
                           void *params, size_t n, float gscale)
{
    int64_t bad;
    if (e->cfg.optim == ZC_OPTIM_SGD) {
        zc_sgd_hparams h = {e->upd_lr, e->cfg.momentum, e->cfg.weight_decay};
        bad = zc_sgd_update(w, g, e->gdt, m, n, gscale, &h, e->pdt, e->mixed ? params : NULL);
    } else {
        zc_adam_hparams h = {.lr = e->upd_lr,
                             .beta1 = e->cfg.beta1,
                             .beta2 = e->cfg.beta2,
                             .eps = e->cfg.eps,
                             .weight_decay = e->cfg.weight_decay,
                             .decoupled = e->cfg.optim == ZC_OPTIM_ADAMW || e->cfg.adam_w_mode,
                             .uncorrected = !e->cfg.bias_correction,
                             .step = e->upd_step};
        bad = e->compact ? zc_adam_update_split(w, params, g, e->gdt, m, v, n, gscale, &h)
                         : zc_adam_update(w, g, e->gdt, m, v, n, gscale, &h, e->pdt,
                                          e->mixed ? params : NULL);
    }
    return bad;
}

/* AdamW8bit over n elements of unit u's optimizer range from its index o (o and, unless the
 * span ends the range, n a whole number of blocks): shard by shard, each shard's blocks from
 * its own start, so stage 0 (every shard) and stages 1–3 (one) compute the same blocks. */
static zc_adam_hparams adam8_hparams(const zc_engine *e)
{
    return (zc_adam_hparams){.lr = e->upd_lr,
                             .beta1 = e->cfg.beta1,
                             .beta2 = e->cfg.beta2,
                             .eps = e->cfg.eps,
                             .weight_decay = e->cfg.weight_decay,
                             .decoupled = true,
                             .uncorrected = !e->cfg.bias_correction,
                             .step = e->upd_step};
}

/* w: the fp32 weights (the parameters, or the master), or a compact master's remainders (its
 * weights are params) */
static int64_t update_span8(const zc_engine *e, const unit_t *u, void *w, const void *g,
                            void *params, size_t o, size_t n, float gscale)
{
    zc_adam_hparams h = adam8_hparams(e);
    const size_t S = u->info.shard, nb = q8_shard_scales(u);
    int64_t bad = 0;
    for (size_t a = 0; a < n;) {
        size_t i = o + a, s = i / S, in = i % S, k = S - in < n - a ? S - in : n - a;
        ZC_ASSERT(in % ZC_Q8_BLOCK == 0);
        size_t sc = s * nb + in / ZC_Q8_BLOCK;
        if (e->compact)
            bad += zc_adam8_update_split((uint16_t *)w + a, (uint16_t *)params + a,
                                         at((void *)g, a, e->gs), e->gdt, u->mq + i, u->ms + sc,
                                         u->vq + i, u->vs + sc, k, gscale, &h);
        else
            bad += zc_adam8_update((float *)w + a, at((void *)g, a, e->gs), e->gdt, u->mq + i,
                                   u->ms + sc, u->vq + i, u->vs + sc, k, gscale, &h, e->pdt,
                                   e->mixed ? at(params, a, e->ps) : NULL);
        a += k;
    }
    return bad;
}

/* The first parameter of unit u holding a non-finite weight, if its weights are in RAM: in
 * mixed precision, in the 16-bit copy the model computes with (as zc_adam_update counts). */
static const char *nonfinite_param(const zc_engine *e, const unit_t *u)
{
    const void *w = owned_params(e, u);
    if (!w) /* on disk */
        return NULL;
    for (size_t i = 0; i < u->opt_n; i++) {
        float x;
        zc_dtype_widen(e->pdt, at((void *)w, i, e->ps), &x, 1);
        if (isfinite(x))
            continue;
        size_t at = opt_lo(e, u) + i; /* logical element of the unit */
        for (int p = u->info.first_param; p < u->info.first_param + u->info.nparams; p++) {
            const zc_param_info *pi = &e->params[p].info;
            if (at >= pi->offset && at < pi->offset + pi->numel)
                return pi->name;
        }
    }
    return NULL;
}

/* The unit's optimizer range: in place when all of it is in RAM, else sub-group by sub-group
 * through the stream (the same kernel on the same elements: the same bits). */
/* Unit u's update with the step's hyperparameters. capture (stage 3, the unit's parameter shard
 * on disk; else NULL) receives the updated shard in the stored type as each sub-group is done,
 * so that its gather needs no read of what the update has just written. */
static zc_status unit_update(zc_engine *e, unit_t *u, void *capture, zc_err *err)
{
    const float gscale = e->upd_gscale;
    ZC_ASSERT(!capture || u->njobs);
    if (!u->njobs && q8_moments(e)) {
        void *w = e->compact ? (void *)u->rem : e->mixed ? (void *)u->master : owned_params(e, u);
        u->nonfinite =
            update_span8(e, u, w, owned_grads(e, u), owned_params(e, u), 0, u->opt_n, gscale);
        return ZC_OK;
    }
    if (!u->njobs) {
        void *w = e->compact ? (void *)u->rem : e->mixed ? (void *)u->master : owned_params(e, u);
        u->nonfinite =
            update_span(e, w, owned_grads(e, u), u->m, u->v, owned_params(e, u), u->opt_n, gscale);
        return ZC_OK;
    }
    u->nonfinite = 0;
    const size_t sg = (size_t)e->plan.sub_group;
    zc_status st = ZC_OK;
    for (int j = 0; !st && j < u->njobs; j++) {
        void *a[ZC_NSTREAMS];
        size_t k = u->opt_n - (size_t)j * sg < sg ? u->opt_n - (size_t)j * sg : sg;
        if ((st = zc_stream_next(e->stream, a, err)))
            break;
        if (e->bwd_open) /* in the backward: the shard just reduced, in RAM */
            a[ZC_STREAM_GRADS] = at(owned_grads(e, u), (size_t)j * sg, e->gs);
        const zc_stream_ref *pr =
            e->bwd_open ? &e->bjobs[u->first_bjob + j].a[ZC_STREAM_PARAMS] : NULL;
        if (pr && e->compact && pr->swap) { /* the old weights (bjobs reads none) */
            if (u->oldw) {
                memcpy(a[ZC_STREAM_PARAMS], at(u->oldw, (size_t)j * sg, e->ps), k * e->ps);
            } else if (zc_stream_read_in(e->stream, ZC_STREAM_PARAMS)) {
                e->update_read += pr->bytes; /* read ahead by the stream (old_weights_wanted) */
            } else { /* not kept (off the recorded order, or the kept ones at their bound) */
                zc_aio_op op = {0};
                zc_swap_read(pr->swap, &op, a[ZC_STREAM_PARAMS], (size_t)pr->bytes, pr->off);
                if ((st = zc_swap_wait(pr->swap, &op, err)))
                    break;
                e->update_read += pr->bytes;
            }
        }
        if (q8_moments(e) && a[ZC_STREAM_M]) {
            /* the sub-group's records (one shard: stages 1–3; its blocks from the sub-group's
             * start, a multiple of 2048 elements, so the shard's own blocks) */
            size_t codes = (k + ZC_Q8_BLOCK - 1) / ZC_Q8_BLOCK * ZC_Q8_BLOCK;
            uint8_t *mr = a[ZC_STREAM_M], *vr = a[ZC_STREAM_V];
            zc_adam_hparams h = adam8_hparams(e);
            if (e->compact) /* the weights: the remainders' slot and the parameters' */
                u->nonfinite += zc_adam8_update_split(
                    a[ZC_STREAM_WEIGHTS], a[ZC_STREAM_PARAMS], a[ZC_STREAM_GRADS], e->gdt, mr,
                    (float *)(mr + codes), vr, (float *)(vr + codes), k, gscale, &h);
            else
                u->nonfinite +=
                    zc_adam8_update(a[ZC_STREAM_WEIGHTS], a[ZC_STREAM_GRADS], e->gdt, mr,
                                    (float *)(mr + codes), vr, (float *)(vr + codes), k, gscale, &h,
                                    e->pdt, e->mixed ? a[ZC_STREAM_PARAMS] : NULL);
        } else if (q8_moments(e)) {
            /* sub-groups are whole blocks (multiples of 2048 elements); moments in RAM */
            u->nonfinite += update_span8(e, u, a[ZC_STREAM_WEIGHTS], a[ZC_STREAM_GRADS],
                                         a[ZC_STREAM_PARAMS], (size_t)j * sg, k, gscale);
        } else {
            u->nonfinite += update_span(e, a[ZC_STREAM_WEIGHTS], a[ZC_STREAM_GRADS], a[ZC_STREAM_M],
                                        a[ZC_STREAM_V], a[ZC_STREAM_PARAMS], k, gscale);
        }
        if (capture) /* the parameters as stored: the 16-bit copy, or the fp32 weights */
            memcpy(at(capture, (size_t)j * sg, e->ps),
                   a[e->mixed ? ZC_STREAM_PARAMS : ZC_STREAM_WEIGHTS], k * e->ps);
        st = zc_stream_done(e->stream, err);
    }
    return st;
}

/* Σ g² over this rank's share of the unit's reduced gradients (its shard: the same elements in
 * every stage), in double. */
static double unit_sum_squares(const zc_engine *e, const unit_t *u)
{
    size_t S = u->info.shard;
    const void *g =
        !e->opt_sharded ? at(u->grad_full, (size_t)e->rank * S, e->gs) : owned_grads(e, u);
    return e->gdt == ZC_FP32 ? zc_sum_squares(g, S) : zc_sum_squares_16(g, e->gdt, S);
}

/* Lets prefetches nobody will use land, frees them, and rewinds the prefetch trace. */
static zc_status drop_prefetches(zc_engine *e, zc_err *err)
{
    zc_status st = ZC_OK;
    for (int i = 0; i < e->nunits; i++) {
        unit_t *u = &e->units[i];
        if (!u->gather)
            continue;
        zc_status st2 = gather_wait(e, i, err);
        work_free(e, &u->full, u->info.padded * e->ps);
        e->gathered_elems -= (int64_t)u->info.padded;
        if (!st)
            st = st2;
    }
    for (int i = 0; i < e->nunits; i++) { /* shards read ahead (stale once the step updates) */
        zc_status st2 = param_read_finish(e, i, NULL, err);
        oldw_free(e, &e->units[i]); /* (an update takes each; none is left after a step) */
        e->units[i].old_in_stream = false;
        if (!st)
            st = st2;
    }
    if (e->params_sharded && !e->trace_done && e->trace_len > 0) {
        e->trace_done = true;
        /* fold_bwd, compact: where each unit's last gather is */
        for (int k = 0; e->last_use && k < e->trace_len; k++)
            e->last_use[e->trace[k]] = k;
        /* a shard is kept only for a unit whose gradients follow its last gather closely (a
         * block's backward); one gathered long before (a tied embedding's head) would hold a
         * buffer through the whole backward: its update reads the shard back instead */
        for (int i = 0; e->last_use && i < e->nunits; i++)
            if (e->ready_pos[i] < 0 || e->ready_pos[i] - e->last_use[i] > 3)
                e->last_use[i] = -1;
    }
    e->trace_pos = 0;
    return st;
}

/* Refuses a call that needs a finalized engine: ZC_EINVAL (NULL) or ZC_ESTATE naming it. */
static zc_status engine_call(const zc_engine *e, const char *call, zc_err *err)
{
    if (!e)
        return zc_err_set(err, ZC_EINVAL, "%s: the engine is NULL", call);
    if (!e->finalized)
        return zc_err_set(err, ZC_ESTATE, "%s: the engine is not finalized (%s)", call,
                          e->finalize_called ? "zc_engine_finalize failed: destroy it"
                                             : "call zc_engine_finalize first");
    return ZC_OK;
}

zc_status zc_engine_end_pass(zc_engine *e, zc_err *err)
{
    zc_status st = engine_call(e, "zc_engine_end_pass", err);
    for (int i = 0; !st && i < e->nunits; i++)
        if (e->units[i].acquired || e->units[i].ready)
            st = wrong_state(e, "zc_engine_end_pass", i,
                             e->units[i].acquired
                                 ? "the unit is still acquired (release every unit first)"
                                 : "the unit's gradients were handed back: a training "
                                   "micro-batch ends with zc_engine_step, not end_pass",
                             err);
    return st ? st : drop_prefetches(e, err);
}

static zc_status end_micro_batch(zc_engine *e, zc_err *err)
{
    zc_status st = lockstep_check(e, OP_STEP, -1, err);
    if (!st)
        st = rs_pump(e, err);
    if (!st && (e->grads_sharded || at_boundary(e)) && e->rs_next < e->nunits)
        st = zc_err_set(err, ZC_ESTATE,
                        "step %lld: unit '%s' was not handed back with zc_engine_grads_ready "
                        "before zc_engine_step",
                        step_number(e), unit_name(e, e->nunits - 1 - e->rs_next));
    if (!st)
        st = rs_finish(e, err);
    if (!st) /* the next micro-batch may add to them; the step reads them */
        st = grad_writes_wait(e, false, err);
    for (int i = 0; !st && i < e->nunits; i++) {
        unit_t *u = &e->units[i];
        if (u->acquired)
            st = zc_err_set(err, ZC_ESTATE, "step %lld: unit '%s' is still acquired at step",
                            step_number(e), u->info.name);
        u->ready = false;
    }
    e->rs_next = 0;
    zc_status st2 = drop_prefetches(e, err); /* prefetches the model did not use */
    return st ? st : st2;
}

static void zero_unit_grads(zc_engine *e, unit_t *u)
{
    /* the model adds into fp32 grad_full; 16-bit ones are overwritten by the first
     * micro-batch's fold (or zeroed at grads_ready if it gave none) */
    if (u->info.frozen)
        return;
    if (e->direct_grads)
        memset(u->grad_full, 0, u->info.padded * e->gs);
    else if (e->grads_sharded && !u->disk.grads) /* on disk: the next reduction overwrites */
        memset(u->grad_shard, 0, u->info.shard * e->gs);
}

static void zero_grads(zc_engine *e)
{
    for (int i = 0; i < e->nunits; i++)
        zero_unit_grads(e, &e->units[i]);
}

/* The update's last unit is done: every write has landed, and an update that overflowed the
 * weights (a learning rate far too high, say) stops every rank — a ReLU would turn the NaNs into
 * zeros and the loss would look fine. */
static zc_status update_end(zc_engine *e, zc_err *err)
{
    e->upd_open = false;
    zc_status st = e->stream ? zc_stream_end(e->stream, err) : ZC_OK;
    zc_status bad = ZC_OK;
    for (int i = 0; !st && !bad && i < e->nunits; i++) {
        const unit_t *u = &e->units[i];
        if (!u->nonfinite)
            continue;
        const char *param = nonfinite_param(e, u);
        bad = zc_err_set(err, ZC_ESTATE,
                         "step %lld: the update left %lld weights of unit '%s'%s%s%s inf or NaN%s; "
                         "training stopped (a lower learning rate or gradient_clipping may help)",
                         e->upd_label, (long long)u->nonfinite, u->info.name,
                         param ? " (first in '" : "", param ? param : "", param ? "')" : "",
                         e->pdt == ZC_FP16 ? " in fp16 (at most ±65504)"
                         : e->mixed        ? " in bf16"
                                           : "");
    }
    if (!st) { /* every rank stops, with the message of the one that found it */
        char what[64];
        snprintf(what, sizeof what, "checking the updated weights, step %lld", e->upd_label);
        st = zc_comm_agree(e->comm, bad, what, err);
    }
    return st;
}

/* Counts the time since t0 and the disk traffic since io0 as the update's. */
static void update_account(zc_engine *e, double t0, zc_aio_counters io0)
{
    if (!e->aio)
        return;
    zc_aio_counters io1 = zc_aio_get_counters(e->aio);
    e->update_seconds += zc_now_s() - t0;
    e->update_read += io1.bytes_read - io0.bytes_read;
    e->update_written += io1.bytes_written - io0.bytes_written;
}

/* Updates the units the step has not updated yet, in order, through unit `through` (its
 * parameter shard into capture when not NULL: unit_update), then (stages 1–3) all-gathers each
 * persistent one, overlapping that with the next unit's update. Rank-symmetric: every rank
 * reaches the same call, so the collectives inside match. Its time and disk traffic are the
 * update's, counted from t0 and io0. */
static zc_status update_units_since(zc_engine *e, int through, void *capture, double t0,
                                    zc_aio_counters io0, zc_err *err)
{
    zc_status st = ZC_OK;
    while (!st && e->upd_open && e->upd_next <= through && e->upd_next < e->nunits) {
        const int i = e->upd_next++;
        unit_t *u = &e->units[i];
        if (u->info.frozen) /* unchanged, on every rank */
            continue;
        st = unit_update(e, u, i == through ? capture : NULL, err);
        if (!st && e->opt_sharded && !sharded_params(e, u)) { /* persistent units */
            if (e->upd_gather) {
                zc_comm_req *r = e->upd_gather;
                e->upd_gather = NULL;
                st = zc_comm_wait(e->comm, r, err);
            }
            if (!st && !(st = lockstep_check(e, OP_GATHER_PARAMS, i, err)))
                st = zc_comm_all_gather_start(e->comm, e->pdt, u->full, u->info.shard, label(e, i),
                                              &e->upd_gather, err);
        }
        zero_unit_grads(e, u);
    }
    if (e->upd_gather) {
        zc_comm_req *r = e->upd_gather;
        e->upd_gather = NULL;
        zc_status st2 = zc_comm_wait(e->comm, r, err);
        if (!st)
            st = st2;
    }
    if (st) /* the engine is unusable now (the caller reports and aborts): nothing resumes it */
        e->upd_open = false;
    else if (e->upd_open && e->upd_next == e->nunits)
        st = update_end(e, err);
    update_account(e, t0, io0);
    return st;
}

/* update_units_since, its time and traffic counted from now. */
static zc_status update_units(zc_engine *e, int through, void *capture, zc_err *err)
{
    return update_units_since(e, through, capture, zc_now_s(),
                              e->aio ? zc_aio_get_counters(e->aio) : (zc_aio_counters){0}, err);
}

static int frozen_units(const zc_engine *e)
{
    int n = 0;
    for (int i = 0; i < e->nunits; i++)
        n += e->units[i].info.frozen;
    return n;
}

/* What the step's gradients are multiplied by in the update: the mean over ranks and
 * micro-batches, fp16's loss scale undone, the clipping coefficient. */
static float step_gscale(const zc_engine *e, double coef)
{
    double inv = 1.0 / ((double)e->nranks * e->cfg.grad_accum * (double)grad_scale(e));
    return (float)(inv * coef);
}

/* The hyperparameters of the update the step takes, kept for whenever its units are updated:
 * the gradients' scale (coef: the clipping coefficient), the learning rate, Adam's step. */
static void take_hparams(zc_engine *e, double coef)
{
    e->upd_gscale = step_gscale(e, coef);
    e->upd_lr = e->lr;
    e->upd_step = e->step + 1;
    e->upd_label = step_number(e);
}

/* fold_bwd, at the first reduce-scatter of the step's last micro-batch: the step's
 * hyperparameters as zc_engine_step would take them (no clipping coefficient, no loss scale),
 * and the first sub-groups' reads start. */
static zc_status bwd_begin(zc_engine *e, zc_err *err)
{
    take_hparams(e, 1.0);
    e->bwd_updated = 0;
    zc_status st = zc_stream_begin(e->stream, e->bjobs, e->njobs, err);
    e->bwd_open = !st;
    return st;
}

/* fold_bwd: unit i's reduced gradient shard has landed in RAM at the step's last micro-batch.
 * Its Σg² for the norm, then its update from it (a shard staged for the disk is freed, not
 * written: nothing reads it back), then (a persistent unit) the all-gather of its new values.
 * The update's time and its sub-groups' bytes count as the update's. */
static zc_status bwd_update(zc_engine *e, int i, zc_err *err)
{
    unit_t *u = &e->units[i];
    const double t0 = zc_now_s();
    u->sumsq = unit_sum_squares(e, u);
    zc_status st = unit_update(e, u, NULL, err);
    oldw_free(e, u);
    u->old_in_stream = false;
    for (int j = u->first_bjob; j < u->first_bjob + u->njobs; j++)
        for (int a = 0; a < ZC_NSTREAMS; a++) { /* (old weights read back: unit_update counts) */
            const zc_stream_ref *r = &e->bjobs[j].a[a];
            e->update_read += r->swap && r->in ? r->bytes : 0;
            e->update_written += r->swap && r->out ? r->bytes : 0;
        }
    if (!st && e->opt_sharded && !sharded_params(e, u) &&
        !(st = lockstep_check(e, OP_GATHER_PARAMS, i, err))) {
        zc_comm_req *r = NULL;
        st =
            zc_comm_all_gather_start(e->comm, e->pdt, u->full, u->info.shard, label(e, i), &r, err);
        if (!st)
            st = zc_comm_wait(e->comm, r, err);
    }
    if (u->disk.grads)
        io_free(e, IO_STAGING, &u->grad_shard, blocks(u->info.shard, e->gs));
    else
        zero_unit_grads(e, u);
    e->bwd_updated++;
    e->updates_in_backward++;
    e->update_seconds += zc_now_s() - t0;
    return st;
}

/* Unit i's update is folded into the coming forward and has not run yet. */
static bool update_pending(const zc_engine *e, int i)
{
    return e->upd_open && i >= e->upd_next && !e->units[i].info.frozen;
}

/* fold_bwd: the step's update is running in the backward — some units updated, their writes
 * perhaps in flight, the rest not yet: nothing may read or write the states until
 * zc_engine_step has ended it (ZC_ESTATE naming the call). */
static zc_status update_in_backward(const zc_engine *e, const char *call, zc_err *err)
{
    if (!e->bwd_open)
        return ZC_OK;
    return zc_err_set(err, ZC_ESTATE,
                      "%s: step %lld's update is running in the backward (fold_update without "
                      "gradient_clipping); zc_engine_step ends it",
                      call, e->upd_label);
}

zc_status zc_engine_finish_update(zc_engine *e, zc_err *err)
{
    zc_status st = engine_call(e, "zc_engine_finish_update", err);
    if (!st)
        st = update_in_backward(e, "zc_engine_finish_update", err);
    if (!st && e->upd_open)
        st = update_units(e, e->nunits - 1, NULL, err);
    return st;
}

/* A call that reads or writes the states on one rank only, while the step's update is still
 * folded into the next forward: refused (ZC_ESTATE), since finishing it is collective. */
static zc_status update_folded(const zc_engine *e, const char *call, zc_err *err)
{
    if (e->bwd_open)
        return update_in_backward(e, call, err);
    if (!e->upd_open)
        return ZC_OK;
    return zc_err_set(err, ZC_ESTATE,
                      "%s: step %lld's update is still folded into the next forward (fold_update); "
                      "call zc_engine_finish_update on every rank first",
                      call, e->upd_label);
}

zc_status zc_engine_step(zc_engine *e, zc_step_info *info, zc_err *err)
{
    zc_status st = engine_call(e, "zc_engine_step", err);
    if (!st && !e->bwd_open) /* folded: a unit the forward never gathered (the next update reads
                                its state) */
        st = zc_engine_finish_update(e, err);
    if (st)
        return st;
    zc_step_info scratch; /* info is optional */
    if (!info)
        info = &scratch;
    bool boundary = at_boundary(e);
    st = end_micro_batch(e, err);
    memset(info, 0, sizeof *info);
    info->step = e->step;
    info->prefetch_hits = e->prefetch_hits;
    info->prefetch_misses = e->prefetch_misses;
    info->lr = e->lr;
    info->clip_coef = 1.0;
    info->loss_scale = e->scaler.scale;
    if (st)
        return st;
    if (!boundary) {
        e->micro++;
        return ZC_OK;
    }
    e->prefetch_hits = e->prefetch_misses = 0; /* counted per optimizer step */
    e->hpz_epoch++; /* the update changes the weights: hpZ's secondary copies are stale */
    /* Stage 0 keeps everything: gather the reduced gradient shards back into full buffers. */
    for (int i = 0; !st && !e->opt_sharded && i < e->nunits; i++)
        if (!e->units[i].info.frozen && !(st = lockstep_check(e, OP_GATHER_GRADS, i, err)))
            st = zc_comm_all_gather(e->comm, e->gdt, e->units[i].grad_full, e->units[i].info.shard,
                                    label(e, i), err);
    /* A swap file cut short behind our back would hand the update zeros or garbage. */
    if (!st && e->swap_opt)
        st = zc_swap_check(e->swap_opt, err);
    if (!st && e->swap_par)
        st = zc_swap_check(e->swap_par, err);
    /* Norm of the summed gradient: own shards, units in order, then ranks in order. */
    double local = 0.0, total = 0.0;
    for (int i = 0; i < e->nunits; i++) {
        const unit_t *u = &e->units[i];
        if (!u->info.frozen) /* fold_bwd: taken before the update freed or zeroed the shard */
            local += u->disk.grads || e->bwd_open ? u->sumsq : unit_sum_squares(e, u);
    }
    char what[48]; /* a collective's error names its step */
    snprintf(what, sizeof what, "gradient norm, step %lld", step_number(e));
    if (!st)
        st = zc_comm_sum_f64(e->comm, local, &total, what, err);
    if (st)
        return st;
    float carried = grad_scale(e); /* what this step's gradients were multiplied by */
    /* inf/nan anywhere makes every rank's total (the same bits everywhere) non-finite */
    bool overflow = !isfinite(total);
    if (overflow && e->bwd_open)
        return zc_err_set(err, ZC_ESTATE,
                          "step %lld: the gradients contain inf or NaN; training stopped (the "
                          "update ran in the backward, fold_update: the weights in the swap files "
                          "are not usable, the checkpoints saved are; a lower learning rate or "
                          "gradient_clipping may help)",
                          step_number(e));
    if (overflow && e->cfg.dtype != ZC_FP16)
        return zc_err_set(err, ZC_ESTATE,
                          "step %lld: the gradients contain inf or NaN; the weights were not "
                          "updated (a lower learning rate or gradient_clipping may help)",
                          step_number(e));
    /* fp16: a dynamic scale is lowered (or gives up at its minimum), a static one gives up */
    if ((st = zc_loss_scaler_update(&e->scaler, &e->cfg, overflow, step_number(e), err)))
        return st;
    if (overflow) {
        zero_grads(e);
        e->micro = 0;
        info->skipped = true;
        info->grad_norm = NAN;
        return ZC_OK;
    }
    double inv = 1.0 / ((double)e->nranks * e->cfg.grad_accum * (double)carried);
    double norm = sqrt(total) * inv, coef = 1.0;
    if (e->cfg.grad_clip > 0.0 && norm > e->cfg.grad_clip)
        coef = e->cfg.grad_clip / (norm + 1e-6);
    if (e->bwd_open) { /* fold_bwd: every unit was updated in the backward; its writes land */
        ZC_ASSERT(e->bwd_updated == e->nunits - frozen_units(e));
        info->lr = e->upd_lr; /* the rate taken at the backward's first reduce-scatter */
        const double t0 = zc_now_s();
        e->bwd_open = false;
        st = update_end(e, err);
        e->update_seconds += zc_now_s() - t0;
    } else {
        /* The update, from the first unit: all of it now, or (folded) each unit just before
         * the next forward gathers it. */
        take_hparams(e, coef);
        /* Its first sub-groups' reads start. Transfers count when they complete, so the
         * unfolded update's window starts before them and ends after its last write: exactly
         * its bytes. */
        const double t0 = zc_now_s();
        const zc_aio_counters io0 = e->aio ? zc_aio_get_counters(e->aio) : (zc_aio_counters){0};
        if (e->stream)
            st = zc_stream_begin(e->stream, e->jobs, e->njobs, err);
        e->upd_open = !st;
        e->upd_next = 0;
        if (!st && !e->fold)
            st = update_units_since(e, e->nunits - 1, NULL, t0, io0, err);
        else /* folded: the call's own time; its reads count in the update call they complete in */
            update_account(e, t0, io0);
    }
    /* the next forward's first shards can come off the disk while the caller goes on (folded:
     * none, the update is their source; the stream reads its first sub-groups ahead instead) */
    if (!st && e->trace_done)
        st = read_ahead(e, err);
    e->step++;
    e->micro = 0;
    info->stepped = true;
    info->step = e->step;
    info->grad_norm = norm;
    info->clip_coef = coef;
    return st;
}

/* ---------- checkpoint state ---------- */

bool zc_engine_finalized(const zc_engine *e)
{
    return e && e->finalized;
}

void zc_engine_owned_range(const zc_engine *e, int unit, size_t *first, size_t *n)
{
    ZC_ASSERT(e->finalized && unit >= 0 && unit < e->nunits);
    const zc_unit_info *ui = &e->units[unit].info;
    size_t lo = (size_t)e->rank * ui->shard, hi = lo + ui->shard;
    hi = hi < ui->numel ? hi : ui->numel;
    *first = lo < hi ? lo : 0;
    *n = lo < hi ? hi - lo : 0;
}

/* n elements of es bytes from element k of an array in RAM (ram) or in a swap file (sw, at
 * byte offset off); and the reverse. */
static zc_status array_read(const void *ram, zc_swap *sw, int64_t off, size_t k, size_t n,
                            size_t es, void *dst, zc_err *err)
{
    if (ram) {
        memcpy(dst, at((void *)ram, k, es), n * es);
        return ZC_OK;
    }
    return zc_swap_pread(sw, dst, n * es, off + (int64_t)(k * es), err);
}

static zc_status array_write(void *ram, zc_swap *sw, int64_t off, size_t k, size_t n, size_t es,
                             const void *src, zc_err *err)
{
    if (ram) {
        memcpy(at(ram, k, es), src, n * es);
        return ZC_OK;
    }
    return zc_swap_pwrite(sw, src, n * es, off + (int64_t)(k * es), err);
}

/* Reads logical elements [first, first + n) of the unit's stored parameters (which this rank
 * holds: all of them, or at stage 3 its shard), widened to fp32 — a frozen unit's values. */
static zc_status read_stored(zc_engine *e, const unit_t *u, size_t first, size_t n, float *dst,
                             zc_err *err)
{
    const bool sharded = sharded_params(e, u);
    if (!sharded || !u->disk.params) {
        size_t k = sharded ? first - (size_t)e->rank * u->info.shard : first;
        zc_dtype_widen(e->pdt, at(sharded ? u->shard_p : u->full, k, e->ps), dst, n);
        return ZC_OK;
    }
    if (e->pdt == ZC_FP32)
        return zc_swap_pread(e->swap_par, dst, n * 4, param_file_off(e, u, first), err);
    zc_status st = ZC_OK;
    for (size_t o = 0, c; !st && o < n; o += c) { /* widened where they were read */
        c = min_z(n - o, ZC_SWAP_VIEW_MAX / e->ps);
        const void *h;
        if (!(st = zc_swap_view(e->swap_par, c * e->ps, param_file_off(e, u, first + o), &h, err)))
            zc_dtype_widen(e->pdt, h, dst + o, c);
    }
    return st;
}

/* Optimizer indices [k, k + n) of unit u's master into dst: its fp32 copy, or a compact master's
 * stored weights joined with their remainders where they lie (in RAM, or read from the two swap
 * files a window of up to ZC_SWAP_VIEW_MAX bytes at a time, not a few kilobytes). */
static zc_status master_read(zc_engine *e, const unit_t *u, size_t k, size_t n, float *dst,
                             zc_err *err)
{
    if (!e->compact)
        return array_read(u->master, e->swap_opt, u->disk.master_off, k, n, 4, dst, err);
    const void *w = owned_params(e, u); /* NULL: on disk */
    zc_status st = ZC_OK;
    ZC_ASSERT(w || u->rem || e->swap_par != e->swap_opt); /* two views at once: two buffers */
    for (size_t o = 0, c; !st && o < n; o += c) {
        c = min_z(n - o, ZC_SWAP_VIEW_MAX / 2);
        const void *h = w ? at((void *)w, k + o, 2) : NULL;
        const void *r = u->rem ? at(u->rem, k + o, 2) : NULL;
        if (!h)
            st = zc_swap_view(e->swap_par, c * 2, param_file_off(e, u, opt_lo(e, u) + k + o), &h,
                              err);
        if (!st && !r)
            st = zc_swap_view(e->swap_opt, c * 2, u->disk.master_off + (int64_t)((k + o) * 2), &r,
                              err);
        if (!st)
            zc_master_join(h, r, c, dst + o);
    }
    return st;
}

/* Writes optimizer indices [k, k + n) of unit u's master from src: a compact master's
 * remainders (its weights are the stored parameters, which store_params rounds to match). */
static zc_status master_write(zc_engine *e, unit_t *u, size_t k, size_t n, const float *src,
                              zc_err *err)
{
    if (!e->compact)
        return array_write(u->master, e->swap_opt, u->disk.master_off, k, n, 4, src, err);
    if (u->rem) {
        zc_master_split(src, n, NULL, at(u->rem, k, 2));
        return ZC_OK;
    }
    zc_status st = ZC_OK;
    for (size_t o = 0, c; !st && o < n; o += c) { /* split where they are written from */
        c = min_z(n - o, ZC_SWAP_VIEW_MAX / 2);
        void *r;
        if (!(st = zc_swap_stage(e->swap_opt, c * 2, u->disk.master_off + (int64_t)((k + o) * 2),
                                 &r, err))) {
            zc_master_split(src + o, c, NULL, r);
            st = zc_swap_commit(e->swap_opt, err);
        }
    }
    return st;
}

/* Writes logical elements [first, first + n) of the unit's stored parameters, rounded to pdt. */
static zc_status store_params(zc_engine *e, unit_t *u, size_t first, size_t n, const float *src,
                              zc_err *err)
{
    const bool sharded = sharded_params(e, u);
    if (!sharded || !u->disk.params) {
        size_t k = sharded ? first - (size_t)e->rank * u->info.shard : first;
        narrow_params(e, u, src, at(sharded ? u->shard_p : u->full, k, e->ps), n);
        return ZC_OK;
    }
    /* a shard read ahead of the next gather (or kept for an update) would hand it the values
     * before these */
    zc_status st = param_read_finish(e, (int)(u - e->units), NULL, err);
    oldw_free(e, u);
    if (st)
        return st;
    if (e->pdt == ZC_FP32)
        return zc_swap_pwrite(e->swap_par, src, n * 4, param_file_off(e, u, first), err);
    for (size_t o = 0, c; !st && o < n; o += c) { /* narrowed where they are written from */
        c = min_z(n - o, ZC_SWAP_VIEW_MAX / e->ps);
        void *h;
        if (!(st = zc_swap_stage(e->swap_par, c * e->ps, param_file_off(e, u, first + o), &h,
                                 err))) {
            narrow_params(e, u, src + o, h, c);
            st = zc_swap_commit(e->swap_par, err);
        }
    }
    return st;
}

/* Sets logical elements [first, first + n) of the unit's parameters: the stored values (rounded
 * in mixed precision) and, where they fall in the optimizer range, the master copy. */
static zc_status set_params(zc_engine *e, unit_t *u, size_t first, size_t n, const float *src,
                            zc_err *err)
{
    e->hpz_epoch++;     /* hpZ's secondary copies are stale */
    if (u->info.frozen) /* the base changes: its digest is computed afresh */
        e->base_digest_valid = false;
    zc_status st = store_params(e, u, first, n, src, err);
    if (st || !e->mixed || u->info.frozen) /* frozen: no master copy */
        return st;
    size_t lo = opt_lo(e, u), hi = lo + u->opt_n;
    size_t a = first > lo ? first : lo, b = first + n < hi ? first + n : hi;
    if (a >= b)
        return ZC_OK;
    return master_write(e, u, a - lo, b - a, src + (a - first), err);
}

/* AdamW8bit's m (is_signed) or v at optimizer indices [k, k + n), dequantized into dst, a few
 * blocks at a time (codes and scales in RAM or on disk: q8_codes_io). */
static zc_status q8_read(zc_engine *e, const unit_t *u, bool is_signed, size_t k, size_t n,
                         float *dst, zc_err *err)
{
    enum { NB = 64 };
    const size_t S = u->info.shard, nb = q8_shard_scales(u);
    uint8_t q[NB * ZC_Q8_BLOCK];
    float sc[NB];
    zc_status st = ZC_OK;
    for (size_t a = 0; !st && a < n;) {
        size_t i = k + a, s = i / S, in = i % S, b = in / ZC_Q8_BLOCK, b0 = b * ZC_Q8_BLOCK;
        size_t c = min_z(min_z(S, b0 + NB * ZC_Q8_BLOCK) - in, n - a);
        size_t nbk = (in + c - 1) / ZC_Q8_BLOCK - b + 1;
        if (!(st = q8_codes_io(e, u, is_signed, i, c, q + (in - b0), false, err)) &&
            !(st = q8_scales_io(e, u, is_signed, s * nb + b, nbk, sc, false, err)))
            zc_q8_dequantize(q, sc, is_signed, in - b0, c, dst + a);
        a += c;
    }
    return st;
}

/* AdamW8bit's m and v at optimizer indices [k, k + n) from fp32 values: each block quantized
 * once it is whole — its elements up to the unit's last (padding stays zero). A block the range
 * ends inside waits in e->q8_pend for the next call, which must continue it (zc_ckpt_load's
 * calls do: consecutive, ascending); a block is never quantized twice, so dequantized moments
 * come back as the very codes and scales they were made from (zc_q8_map). */
static zc_status q8_write(zc_engine *e, int unit, size_t k, size_t n, const float *m,
                          const float *v, zc_err *err)
{
    unit_t *u = &e->units[unit];
    const size_t S = u->info.shard, nb = q8_shard_scales(u), lo = opt_lo(e, u);
    const size_t end = u->info.numel > lo ? u->info.numel - lo : 0; /* past it: padding */
    zc_status st = ZC_OK;
    for (size_t a = 0; !st && a < n;) {
        size_t i = k + a, s = i / S, in = i % S, b0 = i - in % ZC_Q8_BLOCK;
        size_t blen = S - (b0 - s * S) < ZC_Q8_BLOCK ? S - (b0 - s * S) : ZC_Q8_BLOCK;
        size_t fill = b0 + blen < end ? b0 + blen : end; /* the block's elements to import */
        if (i == b0) {
            e->q8_pend.unit = unit;
            e->q8_pend.lo = b0;
            e->q8_pend.to = b0;
            memset(e->q8_pend.m, 0, sizeof e->q8_pend.m);
            memset(e->q8_pend.v, 0, sizeof e->q8_pend.v);
        } else if (e->q8_pend.unit != unit || e->q8_pend.lo != b0 || e->q8_pend.to != i) {
            return zc_err_set(err, ZC_EINVAL,
                              "zc_engine_import: AdamW8bit's moments of unit %d start at "
                              "element %zu, inside a block of %d that the previous call did not "
                              "fill up to there (import a block's moments in order)",
                              unit, lo + i, ZC_Q8_BLOCK);
        }
        size_t c = fill - i < n - a ? fill - i : n - a;
        memcpy(e->q8_pend.m + (i - b0), m + a, c * sizeof(float));
        memcpy(e->q8_pend.v + (i - b0), v + a, c * sizeof(float));
        e->q8_pend.to = i + c;
        a += c;
        if (i + c == fill) { /* whole: quantize it */
            size_t sc = s * nb + (b0 - s * S) / ZC_Q8_BLOCK;
            uint8_t q[ZC_Q8_BLOCK];
            float scale;
            for (int x = 0; !st && x < 2; x++) {
                zc_q8_quantize(x ? e->q8_pend.v : e->q8_pend.m, blen, !x, q, &scale);
                if (!(st = q8_codes_io(e, u, !x, b0, blen, q, true, err)))
                    st = q8_scales_io(e, u, !x, sc, 1, &scale, true, err);
            }
            e->q8_pend.unit = -1;
        }
    }
    return st;
}

zc_status zc_engine_q8_codes(zc_engine *e, int unit, bool is_signed, size_t first, size_t n,
                             uint8_t *buf, bool write, zc_err *err)
{
    zc_status st = update_folded(e, "zc_engine_q8_codes", err);
    if (st)
        return st;
    unit_t *u = &e->units[unit];
    if (u->info.frozen) { /* no moments: a checkpoint holds zero ones (codes of 0, scales 0) */
        if (!write)
            memset(buf, zc_q8_zero_code(is_signed), n);
        return ZC_OK;
    }
    ZC_ASSERT(q8_moments(e) && first >= opt_lo(e, u) && first + n <= opt_lo(e, u) + u->opt_n);
    return q8_codes_io(e, u, is_signed, first - opt_lo(e, u), n, buf, write, err);
}

zc_status zc_engine_q8_scales(zc_engine *e, int unit, bool is_signed, size_t shard, size_t b,
                              size_t n, float *buf, bool write, zc_err *err)
{
    zc_status st = update_folded(e, "zc_engine_q8_scales", err);
    if (st)
        return st;
    unit_t *u = &e->units[unit];
    if (u->info.frozen) { /* no moments (above) */
        if (!write)
            memset(buf, 0, n * sizeof *buf);
        return ZC_OK;
    }
    const size_t S = u->info.shard, nb = q8_shard_scales(u), s0 = opt_lo(e, u) / S;
    ZC_ASSERT(q8_moments(e) && shard >= s0 && (shard - s0) * S < u->opt_n && b + n <= nb);
    return q8_scales_io(e, u, is_signed, (shard - s0) * nb + b, n, buf, write, err);
}

zc_status zc_engine_export_owned(zc_engine *e, int unit, zc_state_kind kind, size_t off, size_t n,
                                 float *dst, zc_err *err)
{
    zc_status fst = update_folded(e, "zc_engine_export_owned", err);
    if (fst)
        return fst;
    size_t first, owned_n;
    zc_engine_owned_range(e, unit, &first, &owned_n);
    ZC_ASSERT(off + n <= owned_n);
    unit_t *u = &e->units[unit];
    size_t i = first + off, k = i - opt_lo(e, u); /* logical element, its optimizer index */
    const zc_unit_offload *d = &u->disk;
    if (!n)
        return ZC_OK;
    if (u->info.frozen && kind != ZC_STATE_WEIGHTS) { /* no optimizer state: zeros */
        memset(dst, 0, n * sizeof(float));
        return ZC_OK;
    }
    switch (kind) {
    case ZC_STATE_WEIGHTS:
        if (u->info.frozen)
            return read_stored(e, u, i, n, dst, err);
        if (e->mixed)
            return master_read(e, u, k, n, dst, err);
        if (!sharded_params(e, u))
            return array_read(u->full, NULL, 0, i, n, 4, dst, err);
        return array_read(u->shard_p, e->swap_par, d->params_off,
                          i - (size_t)e->rank * u->info.shard, n, 4, dst, err);
    case ZC_STATE_M:
        if (q8_moments(e))
            return q8_read(e, u, true, k, n, dst, err);
        ZC_ASSERT(u->m || d->optimizer);
        return array_read(u->m, e->swap_opt, d->m_off, k, n, 4, dst, err);
    case ZC_STATE_V:
        if (q8_moments(e))
            return q8_read(e, u, false, k, n, dst, err);
        ZC_ASSERT(u->v || d->optimizer);
        return array_read(u->v, e->swap_opt, d->v_off, k, n, 4, dst, err);
    }
    ZC_ASSERT(!"unknown state kind");
    return ZC_EINVAL;
}

void zc_engine_needed_ranges(const zc_engine *e, int unit, size_t *p_first, size_t *p_n,
                             size_t *m_first, size_t *m_n)
{
    size_t of, on, numel = e->units[unit].info.numel;
    zc_engine_owned_range(e, unit, &of, &on);
    const bool sharded = sharded_params(e, &e->units[unit]);
    *p_first = sharded ? of : 0;
    *p_n = sharded ? on : numel;
    *m_first = e->opt_sharded ? of : 0;
    *m_n = e->opt_sharded ? on : numel;
    if (e->units[unit].info.frozen) /* no moments to restore */
        *m_first = *m_n = 0;
}

zc_status zc_engine_import(zc_engine *e, int unit, size_t first, size_t n, const float *params,
                           const float *m, const float *v, zc_err *err)
{
    size_t pf, pn, mf, mn;
    zc_engine_needed_ranges(e, unit, &pf, &pn, &mf, &mn);
    unit_t *u = &e->units[unit];
    const zc_unit_offload *d = &u->disk;
    size_t moments = opt_moments(&e->cfg), k = first - opt_lo(e, u);
    zc_status st = update_folded(e, "zc_engine_import", err);
    if (st)
        return st;
    if (params) {
        ZC_ASSERT(first >= pf && first + n <= pf + pn);
        st = set_params(e, u, first, n, params, err);
    }
    if (u->info.frozen) /* no moments: a checkpoint's (zeros) are not kept */
        return st;
    if (m || v)
        ZC_ASSERT(first >= mf && first + n <= mf + mn);
    if (!st && q8_moments(e) && (m || v)) {
        if (!m || !v)
            return zc_err_set(err, ZC_EINVAL,
                              "zc_engine_import: AdamW8bit quantizes m and v block by block; "
                              "import both together");
        return q8_write(e, unit, k, n, m, v, err);
    }
    if (!st && m && moments >= 1)
        st = array_write(u->m, e->swap_opt, d->m_off, k, n, 4, m, err);
    if (!st && v && moments >= 2)
        st = array_write(u->v, e->swap_opt, d->v_off, k, n, 4, v, err);
    return st;
}

int zc_engine_moments(const zc_engine *e)
{
    return (int)opt_moments(&e->cfg);
}
const zc_loss_scaler *zc_engine_loss_scaler(const zc_engine *e)
{
    return &e->scaler;
}
void zc_engine_set_loss_scaler(zc_engine *e, const zc_loss_scaler *s)
{
    e->scaler = *s;
}
void zc_engine_set_steps_done(zc_engine *e, int64_t steps)
{
    e->step = steps;
}

zc_ckpt_lineage *zc_engine_lineage(zc_engine *e)
{
    return &e->lineage;
}

zc_status zc_engine_base_digest(zc_engine *e, uint64_t d[2], bool *any, zc_err *err)
{
    zc_status st = engine_call(e, "zc_engine_base_digest", err);
    if (st)
        return st;
    *any = false;
    for (int i = 0; i < e->nunits; i++)
        *any |= e->units[i].info.frozen;
    d[0] = d[1] = 0;
    if (!*any)
        return ZC_OK;
    if (e->base_digest_valid) { /* the same on every rank: each set the same values */
        d[0] = e->base_digest[0], d[1] = e->base_digest[1];
        return ZC_OK;
    }
    enum { CHUNK = 1 << 16 };
    float *buf = malloc(CHUNK * sizeof(float));
    uint16_t *b16 = malloc(CHUNK * sizeof(uint16_t));
    if (!buf || !b16)
        st = zc_err_set(err, ZC_ENOMEM, "out of memory for the base digest");
    uint64_t mine[3] = {0, 0, 0}; /* the two sums and this rank's status */
    for (int i = 0; !st && i < e->nunits; i++) {
        if (!e->units[i].info.frozen)
            continue;
        const uint64_t key = zc_digest_unit_key(e->units[i].info.name);
        size_t first, n;
        zc_engine_owned_range(e, i, &first, &n);
        for (size_t at = 0; !st && at < n; at += CHUNK) {
            size_t k = n - at < CHUNK ? n - at : CHUNK;
            if ((st = zc_engine_export_owned(e, i, ZC_STATE_WEIGHTS, at, k, buf, err)))
                break;
            zc_f32_to_bf16(buf, b16, k);
            zc_digest_add(key, first + at, b16, k, mine);
        }
    }
    free(buf);
    free(b16);
    mine[2] = (uint64_t)st;
    uint64_t stack[3 * 16], *all = e->nranks <= 16 ? stack : malloc(24 * (size_t)e->nranks);
    zc_status gst =
        all ? zc_comm_control_gather(e->comm, mine, all, sizeof mine, "base digest", err)
            : zc_err_set(err, ZC_ENOMEM, "out of memory for the base digest");
    if (!st)
        st = gst;
    for (int r = 0; !st && r < e->nranks; r++) {
        if (all[3 * r + 2]) /* a rank failed (its disk): each rank says so */
            st = zc_err_set(err, (zc_status)all[3 * r + 2],
                            "rank %d could not read the frozen units for the base digest", r);
        d[0] += all[3 * r], d[1] += all[3 * r + 1];
    }
    if (all && all != stack)
        free(all);
    if (st) {
        d[0] = d[1] = 0;
        return st;
    }
    e->base_digest[0] = d[0], e->base_digest[1] = d[1];
    e->base_digest_valid = true;
    return ZC_OK;
}

zc_optim_type zc_engine_optim(const zc_engine *e)
{
    return e->cfg.optim;
}

/* ---------- import and export ---------- */

void zc_engine_param_owned(const zc_engine *e, int param, size_t *first, size_t *n)
{
    *first = *n = 0;
    if (!e || !e->finalized || param < 0 || param >= e->nparams)
        return;
    const zc_param_info *p = &e->params[param].info;
    if (!sharded_params(e, &e->units[p->unit])) {
        *first = 0;
        *n = p->numel;
        return;
    }
    size_t S = e->units[p->unit].info.shard, lo = (size_t)e->rank * S, hi = lo + S;
    size_t a = p->offset > lo ? p->offset : lo,
           b = p->offset + p->numel < hi ? p->offset + p->numel : hi;
    *first = a < b ? a - p->offset : 0;
    *n = a < b ? b - a : 0;
}

zc_status zc_engine_set_param_values(zc_engine *e, int param, size_t first, size_t n,
                                     const float *src, zc_err *err)
{
    zc_status st = engine_call(e, "zc_engine_set_param_values", err);
    if (!st)
        st = update_folded(e, "zc_engine_set_param_values", err);
    if (st)
        return st;
    if (param < 0 || param >= e->nparams)
        return zc_err_set(err, ZC_EINVAL,
                          "zc_engine_set_param_values(parameter %d): no such parameter; the model "
                          "has parameters 0 to %d",
                          param, e->nparams - 1);
    size_t of, on;
    zc_engine_param_owned(e, param, &of, &on);
    const zc_param_info *p = &e->params[param].info;
    if (first < of || first > of + on || n > of + on - first || (n && !src))
        return zc_err_set(err, ZC_EINVAL,
                          "zc_engine_set_param_values(parameter %d '%s', elements [%zu, %zu)): "
                          "%s; rank %d stores elements [%zu, %zu) of its %zu "
                          "(zc_engine_param_owned)",
                          param, p->name, first, first + n,
                          n && !src ? "src is NULL" : "outside what this rank stores", e->rank, of,
                          of + on, p->numel);
    return set_params(e, &e->units[p->unit], p->offset + first, n, src, err);
}

zc_status zc_engine_gather_unit(zc_engine *e, int i, float *dst, zc_err *err)
{
    zc_status st = unit_call(e, "zc_engine_gather_unit", i, err);
    if (!st && !dst)
        st = zc_err_set(err, ZC_EINVAL, "zc_engine_gather_unit(unit %d '%s'): dst is NULL", i,
                        unit_name(e, i));
    if (!st)
        st = zc_engine_finish_update(e, err);
    if (st)
        return st;
    unit_t *u = &e->units[i];
    size_t S = u->info.shard;
    if (u->info.frozen) { /* the stored values: this rank's all, or its shard and a gather */
        if (!sharded_params(e, u) || (u->full && !u->gather && !e->qwz)) {
            zc_dtype_widen(e->pdt, u->full, dst, u->info.padded);
            return ZC_OK;
        }
        if ((st = lockstep_check(e, OP_EXPORT, i, err)))
            return st;
        st = read_stored(e, u, (size_t)e->rank * S, S, dst + (size_t)e->rank * S, err);
        zc_status st2 = zc_comm_all_gather(e->comm, ZC_FP32, dst, S, label(e, i), err);
        return st ? st : st2;
    }
    /* a gathered unit's values are the shards' own, unless qwZ quantized them on the way */
    if (e->mixed ? !e->opt_sharded : !sharded_params(e, u) || (u->full && !u->gather && !e->qwz)) {
        if (e->mixed) /* stage 0: the whole unit is the optimizer range */
            return master_read(e, u, 0, u->info.padded, dst, err);
        memcpy(dst, u->full, u->info.padded * sizeof(float));
        return ZC_OK;
    }
    st = lockstep_check(e, OP_EXPORT, i, err);
    if (st)
        return st;
    float *mine = dst + (size_t)e->rank * S;
    st = e->mixed ? master_read(e, u, 0, S, mine, err)
                  : array_read(u->shard_p, e->swap_par, u->disk.params_off, 0, S, 4, mine, err);
    /* a rank whose disk failed still joins the gather, so no rank waits for it in vain */
    zc_status st2 = zc_comm_all_gather(e->comm, ZC_FP32, dst, S, label(e, i), err);
    return st ? st : st2;
}

zc_status zc_engine_weights_sha256(zc_engine *e, char hex[65], zc_err *err)
{
    zc_status st = engine_call(e, "zc_engine_weights_sha256", err);
    if (!st)
        st = zc_engine_finish_update(e, err);
    if (st)
        return st;
    size_t max_padded = 0;
    for (int i = 0; i < e->nunits; i++)
        if (e->units[i].info.padded > max_padded)
            max_padded = e->units[i].info.padded;
    /* the working bound counts this buffer in place of the step's buffers, not beside the ones
     * kept for reuse: give those back first */
    while (e->ncache)
        uncache(e, e->ncache - 1);
    float *buf = alloc_f(e, ZC_MEM_WORKING, max_padded);
    if (!buf)
        return oom(e, err, "the weight digest buffer", -1, max_padded);
    zc_sha256 s;
    zc_sha256_init(&s);
    for (int i = 0; !st && i < e->nunits; i++)
        if (!(st = zc_engine_gather_unit(e, i, buf, err)))
            zc_sha256_update(&s, buf, e->units[i].info.numel * sizeof(float));
    free_f(e, ZC_MEM_WORKING, &buf, max_padded);
    uint8_t d[32];
    zc_sha256_final(&s, d);
    zc_sha256_hex(d, hex);
    /* Stages 0–2 hash their own replica: all ranks must agree, or training diverged. */
    uint8_t stack[32 * 16], *all = e->nranks <= 16 ? stack : malloc(32 * (size_t)e->nranks);
    if (!st && !all)
        st = zc_err_set(err, ZC_ENOMEM, "out of memory comparing weight digests");
    if (!st)
        st = zc_comm_control_gather(e->comm, d, all, 32, "weight digest", err);
    for (int r = 1; !st && r < e->nranks; r++)
        if (memcmp(all + 32 * r, all, 32))
            st = zc_err_set(err, ZC_ESTATE, "rank %d holds different weights than rank 0", r);
    if (all && all != stack)
        free(all);
    return st;
}
