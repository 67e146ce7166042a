/* estimate.c — the ZeRO paper's per-rank formulas over padded unit sizes (zeroc/estimate.h). The
 * engine allocates exactly these sizes (engine.c, zc_engine_finalize), and asks these functions
 * for its own accounting, so estimate and measurement cannot drift apart.
 *
 * Every sum and product is checked: the sizes come from flags and config files, and a wrapped
 * count would print a negative size or recommend a stage that cannot fit. The public functions
 * return INT64_MAX for a count that does not fit; zc_estimate_check says which and why. */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>

#include "zeroc/checked.h"
#include "zeroc/estimate.h"
#include "zeroc/optim.h"
#include "zeroc/status.h"

static int64_t add(int64_t a, int64_t b, bool *ovf)
{
    return zc_add_i64(a, b, ovf);
}
static int64_t mul(int64_t a, int64_t b, bool *ovf)
{
    return zc_mul_i64(a, b, ovf);
}

static int64_t shard(size_t numel, int n, bool *ovf)
{
    size_t s = numel / (size_t)n + (numel % (size_t)n != 0);
    if (s > (size_t)INT64_MAX) {
        *ovf = true;
        return INT64_MAX;
    }
    return (int64_t)s;
}
static int64_t or4(int bytes)
{
    return bytes ? bytes : 4;
}

/* Whether unit u is trained (not frozen): only a trained unit has gradients, optimizer state,
 * a reduce-scatter and an update. */
static bool trained(const zc_estimate_in *in, int u)
{
    return !(in->unit_frozen && in->unit_frozen[u]);
}

/* ---------- stage-3 persistence ---------- */

static int64_t persistence_threshold(const zc_estimate_in *in)
{
    return in->persistence_threshold < 0 ? ZC_PERSISTENCE_AUTO : in->persistence_threshold;
}

int zc_estimate_persistent(const zc_estimate_in *in, bool *persistent)
{
    const int64_t below = persistence_threshold(in);
    const int64_t cap = in->model_persistence_threshold;
    int64_t held = 0;
    int n = 0;
    for (int u = 0; u < in->nunits; u++) {
        const int64_t numel = (int64_t)in->unit_numel[u];
        persistent[u] = in->stage == 3 && numel < below && numel <= cap - held;
        if (persistent[u])
            held += numel, n++;
    }
    return n;
}

/* persistent[] for in, or NULL when no unit is persistent (stages 0–2, threshold 0). */
static bool *persistent_units(const zc_estimate_in *in)
{
    if (in->stage != 3 || persistence_threshold(in) <= 0)
        return NULL;
    bool *p = malloc((size_t)in->nunits * sizeof *p);
    ZC_ASSERT(p);
    if (zc_estimate_persistent(in, p))
        return p;
    free(p);
    return NULL;
}

/* ---------- offload ---------- */

enum { SWAP_ALIGN = 4096, SUB_GROUP_ALIGN = 2048 }; /* a sub-group of 2-byte elements: 4 KiB */

static int64_t round_up(int64_t x, int64_t a, bool *ovf)
{
    return mul(add(x, a - 1, ovf) / a, a, ovf);
}

/* Every region of a swap file starts on a 4 KiB boundary and is whole 4 KiB blocks long. */
static int64_t region(int64_t bytes, bool *ovf)
{
    return round_up(bytes, SWAP_ALIGN, ovf);
}

/* AdamW8bit's moments on disk: a shard's sub-groups as records, one per sub-group of k
 * elements and per moment: its k codes, padding to a whole block (ZC_Q8_BLOCK), then its
 * ceil(k / ZC_Q8_BLOCK) fp32 scales — 260 bytes per block — padded to 4 KiB, so every
 * sub-group's codes and scales are one O_DIRECT transfer at an aligned offset. A sub-group of a
 * multiple of 262144 elements (1024 blocks) needs no padding; the default 4194304 is one. */
int64_t zc_estimate_q8_record(int64_t k)
{
    bool ovf = false;
    int64_t r = region(mul(k / ZC_Q8_BLOCK + (k % ZC_Q8_BLOCK != 0), ZC_Q8_BLOCK + 4, &ovf), &ovf);
    return ovf ? INT64_MAX : r;
}

/* Bytes of one moment's records over a shard of S elements in sub-groups of sg. */
static int64_t q8_records(int64_t S, int64_t sg, bool *ovf)
{
    int64_t full = S / sg, rest = S % sg;
    int64_t b = mul(full, zc_estimate_q8_record(sg), ovf);
    return add(b, rest ? zc_estimate_q8_record(rest) : 0, ovf);
}

static int64_t sub_group_request(const zc_estimate_in *in, bool *ovf)
{
    int64_t sg = in->sub_group_size > 0 ? in->sub_group_size : 4194304;
    return round_up(sg, SUB_GROUP_ALIGN, ovf);
}

/* Bytes per element of a mixed-precision master copy: fp32, or a compact master's remainder (its
 * top half is the stored bf16 parameter). */
static int64_t master_bytes(const zc_estimate_in *in)
{
    return in->compact_master ? 2 : 4;
}

static zc_offload_plan offload_plan(const zc_estimate_in *in, zc_unit_offload *units, bool *ovf)
{
    const int64_t P = or4(in->param_bytes), G = or4(in->grad_bytes);
    const bool mixed = P != 4;
    const int64_t M = master_bytes(in); /* per element of the master copy */
    const int moments = in->moment_floats;
    const bool opt = in->offload_optimizer && in->stage >= 1;
    const bool par = in->offload_params && in->stage == 3;
    const double ratio = in->offload_ratio > 0 ? in->offload_ratio : 1.0;
    zc_offload_plan plan = {0};
    int64_t total = 0, cum_opt = 0, cum_par = 0, max_streamed = 0, max_read = 0, max_grad = 0;
    int64_t jobs = 0; /* the step's sub-groups: a unit's shard in pieces of at most sg */
    const int64_t sg = sub_group_request(in, ovf);
    bool par_spilled = false, streamed[ZC_NSTREAMS] = {false};
    bool *kept = persistent_units(in);   /* whole on every rank: never on disk */
    for (int u = 0; u < in->nunits; u++) /* the optimizer's elements: the trained units' */
        if (trained(in, u))
            total = add(total, shard(in->unit_numel[u], in->nranks, ovf), ovf);
    for (int u = 0; u < in->nunits; u++) {
        const int64_t S = shard(in->unit_numel[u], in->nranks, ovf);
        zc_unit_offload x = {
            .params_off = -1, .grads_off = -1, .master_off = -1, .m_off = -1, .v_off = -1};
        if (trained(in, u)) {
            cum_opt = add(cum_opt, S, ovf);
            x.optimizer = opt && (ratio >= 1.0 || (double)cum_opt <= ratio * (double)total);
        }
        x.grads = x.optimizer && in->stage == 3;
        if (!(kept && kept[u])) {
            cum_par = add(cum_par, S, ovf);
            par_spilled = par_spilled || cum_par > in->max_in_cpu;
            x.params = par && par_spilled;
        }
        if (x.grads) {
            x.grads_off = plan.optimizer_file;
            plan.optimizer_file = add(plan.optimizer_file, region(mul(S, G, ovf), ovf), ovf);
            max_grad = S > max_grad ? S : max_grad;
        }
        if (x.optimizer && mixed) {
            x.master_off = plan.optimizer_file;
            plan.optimizer_file = add(plan.optimizer_file, region(mul(S, M, ovf), ovf), ovf);
        }
        /* a moment's region: S fp32 values, or AdamW8bit's records */
        const int64_t mb = in->moments_8bit ? q8_records(S, sg, ovf) : region(mul(S, 4, ovf), ovf);
        if (x.optimizer && moments >= 1) {
            x.m_off = plan.optimizer_file;
            plan.optimizer_file = add(plan.optimizer_file, mb, ovf);
        }
        if (x.optimizer && moments >= 2) {
            x.v_off = plan.optimizer_file;
            plan.optimizer_file = add(plan.optimizer_file, mb, ovf);
        }
        if (x.params) {
            x.params_off = plan.param_file;
            plan.param_file = add(plan.param_file, region(mul(S, P, ovf), ovf), ovf);
            max_read = S > max_read ? S : max_read;
        }
        const bool updated = trained(in, u);
        streamed[ZC_STREAM_WEIGHTS] |= mixed ? x.optimizer : x.params && updated;
        streamed[ZC_STREAM_GRADS] |= x.grads;
        streamed[ZC_STREAM_M] |= x.optimizer && moments >= 1;
        streamed[ZC_STREAM_V] |= x.optimizer && moments >= 2;
        streamed[ZC_STREAM_PARAMS] |= mixed && x.params && updated;
        if (x.optimizer || (x.params && trained(in, u))) { /* a frozen unit is not updated */
            int64_t r = round_up(S, SUB_GROUP_ALIGN, ovf);
            max_streamed = r > max_streamed ? r : max_streamed;
            jobs = add(jobs, S / sg + (S % sg != 0), ovf);
        }
        if (units)
            units[u] = x;
    }
    free(kept);
    const int64_t es[ZC_NSTREAMS] = {mixed ? M : 4, G, 4, 4, P};
    plan.sub_group = sg < max_streamed ? sg : max_streamed; /* the same pieces as sg's */
    int64_t slot = 0;
    const bool q8 = in->moments_8bit;
    for (int a = 0; a < ZC_NSTREAMS; a++) {
        plan.slot_bytes[a] = !streamed[a] ? 0
                             : q8 && (a == ZC_STREAM_M || a == ZC_STREAM_V)
                                 ? zc_estimate_q8_record(plan.sub_group)
                                 : region(mul(plan.sub_group, es[a], ovf), ovf);
        slot = add(slot, plan.slot_bytes[a], ovf);
    }
    /* a slot beyond the step's sub-groups would never be used */
    plan.nslots = in->buffer_count > 1 ? in->buffer_count : 1;
    plan.nslots = plan.nslots < jobs ? plan.nslots : jobs;
    plan.slots = mul(plan.nslots, slot, ovf);
    if (max_read) { /* reads ahead (at most buffer_count, buffer_size elements unless one) plus
                     * one read on demand */
        int64_t r = region(mul(max_read, P, ovf), ovf),
                count = in->param_buffer_count > 1 ? in->param_buffer_count : 1;
        int64_t by_size =
            add(region(mul(in->param_buffer_size, P, ovf), ovf), mul(count, SWAP_ALIGN, ovf), ovf);
        int64_t cap = by_size > r ? by_size : r, all = mul(count, r, ovf);
        plan.param_reads = add(r, all < cap ? all : cap, ovf);
        /* the reads are of distinct units' shards: never more than the parameter file */
        plan.param_reads = plan.param_reads < plan.param_file ? plan.param_reads : plan.param_file;
    }
    /* the shard being reduced, the one written */
    plan.grad_staging = mul(2, region(mul(max_grad, G, ovf), ovf), ovf);
    return plan;
}

static int64_t moment_bytes(const zc_estimate_in *in, int64_t S, bool *ovf)
{
    if (!in->moments_8bit)
        return mul(S, 4, ovf);
    return add(S, mul(S / ZC_Q8_BLOCK + (S % ZC_Q8_BLOCK != 0), 4, ovf), ovf);
}

int64_t zc_estimate_moment_bytes(const zc_estimate_in *in, int64_t S)
{
    bool ovf = false;
    int64_t b = moment_bytes(in, S, &ovf);
    return ovf ? INT64_MAX : b;
}

static zc_state_bytes states(const zc_estimate_in *in, bool *ovf)
{
    const int64_t P = or4(in->param_bytes), G = or4(in->grad_bytes);
    zc_unit_offload *where = NULL;
    if (in->offload_optimizer || in->offload_params) {
        where = malloc((size_t)in->nunits * sizeof *where);
        ZC_ASSERT(where);
        offload_plan(in, where, ovf);
    }
    bool *kept = persistent_units(in);
    zc_state_bytes b = {0, 0, 0};
    for (int u = 0; u < in->nunits; u++) {
        zc_unit_offload x = where ? where[u] : (zc_unit_offload){0};
        int64_t S = shard(in->unit_numel[u], in->nranks, ovf), full = mul(S, in->nranks, ovf);
        bool sharded = in->stage == 3 && !(kept && kept[u]);
        if (!x.params)
            b.params = add(b.params, mul(P, sharded ? S : full, ovf), ovf);
        if (sharded && in->hpz_partition_size > 1) /* hpZ's secondary copy */
            b.params = add(b.params, mul(P, full / in->hpz_partition_size, ovf), ovf);
        if (!trained(in, u)) /* the parameters alone */
            continue;
        if (!x.grads)
            b.grads = add(b.grads, mul(G, in->stage >= 2 ? S : full, ovf), ovf);
        if (!x.optimizer) { /* per shard: the fp32 master (mixed precision) and the moments */
            int64_t K = add(P == 4 ? 0 : mul(S, master_bytes(in), ovf),
                            mul(in->moment_floats, moment_bytes(in, S, ovf), ovf), ovf);
            b.optimizer = add(b.optimizer, mul(K, in->stage >= 1 ? 1 : in->nranks, ovf), ovf);
        }
    }
    free(where);
    free(kept);
    return b;
}

static int64_t padded_numel(const zc_estimate_in *in, bool *ovf)
{
    int64_t s = 0;
    for (int u = 0; u < in->nunits; u++)
        s = add(s, mul(shard(in->unit_numel[u], in->nranks, ovf), in->nranks, ovf), ovf);
    return s;
}

static int64_t max_shard(const zc_estimate_in *in, bool *ovf);
static int64_t max_reduced_shard(const zc_estimate_in *in, bool *ovf);

/* Stage 3's gathers of unit u a micro-batch: its forward's and its backward's, and a second in
 * the forward for a unit used twice there (ZC_USE_FORWARD_TWICE: a tied vocabulary's tile). */
static int64_t gathers(const zc_estimate_in *in, int u)
{
    return in->unit_use && (in->unit_use[u] & ZC_USE_FORWARD_TWICE) ? 3 : 2;
}

/* Bytes rank 0 sends per step (inter: only those to ranks on other hosts). */
static int64_t comm_bytes(const zc_estimate_in *in, bool inter, bool *ovf)
{
    const int64_t P = or4(in->param_bytes), G = or4(in->grad_bytes);
    const int64_t C = or4(in->comm_elem_bytes);
    const int64_t N = in->nranks;
    /* hosts of R ranks each (zc_estimate_check refuses an R that does not divide N) */
    const int64_t R = in->ranks_per_host > 0 && in->ranks_per_host < N &&
                              N % in->ranks_per_host == 0
                          ? in->ranks_per_host
                          : N,
                  H = N / R;
    const int64_t world_peers = inter ? N - R : N - 1;
    /* stages 0–1 sum the micro-batches' gradients locally and reduce once per step; stages 2–3
     * reduce-scatter each micro-batch's, and stage 3 gathers the parameters for each
     * micro-batch's forward and backward */
    const int64_t A = in->grad_accum > 1 ? in->grad_accum : 1;
    const int64_t rs_times = in->stage >= 2 ? A : 1;
    const int64_t per = add(mul(C, rs_times, ovf),
                            in->stage == 0   ? G
                            : in->stage == 3 ? 0
                                             : P,
                            ovf);
    const bool qwz = in->stage == 3 && in->quantized_weights;
    const bool qgz = in->stage == 3 && in->quantized_gradients;
    const bool two_hops = qgz && H > 1 && R > 1;
    const int64_t g = in->stage == 3 && in->hpz_partition_size > 1 ? in->hpz_partition_size : 1;
    const int64_t group_peers = inter ? g - (g < R ? g : R) : g - 1; /* rank 0's group */
    bool *kept = persistent_units(in);
    if (!kept && !qwz && !qgz && g == 1) {
        /* a frozen unit is only gathered (stage 3: gathers(u) a micro-batch), never reduced */
        int64_t sum = 0;
        for (int u = 0; u < in->nunits; u++) {
            const int64_t ag = in->stage == 3 ? mul(gathers(in, u) * P, A, ovf) : 0;
            sum = add(
                sum,
                mul(trained(in, u) ? add(per, ag, ovf) : ag, shard(in->unit_numel[u], N, ovf), ovf),
                ovf);
        }
        return mul(sum, world_peers, ovf);
    }
    /* a persistent unit is all-gathered once, after its update, as at stages 1–2; with qwZ the
     * gathers of each micro-batch (forward, backward: gathers(u)) carry the quantized segment, with
     * qgZ each reduce-scatter chunk's block (in two hops: H segments to each other rank of the
     * host, then one to each other host); with hpZ only the first gather after an update is the
     * world's, every later one (gathers(u)·A − 1 a step) the group's, unquantized */
    const int64_t cols = zc_estimate_rs_cols(in->reduce_bucket_size, N, max_reduced_shard(in, ovf));
    const int64_t seg_peers = two_hops ? (inter ? 0 : H * (R - 1)) : world_peers;
    const int64_t hop2_peers = two_hops ? H - 1 : 0;
    int64_t sum = 0;
    for (int u = 0; u < in->nunits; u++) {
        int64_t S = shard(in->unit_numel[u], N, ovf);
        int64_t rs;
        if (!trained(in, u)) {
            rs = 0;
        } else if (qgz) {
            int64_t segs = add(mul(S / cols, zc_qwz_segment_bytes(cols), ovf),
                               S % cols ? zc_qwz_segment_bytes(S % cols) : 0, ovf);
            rs = add(mul(segs, seg_peers, ovf), mul(segs, hop2_peers, ovf), ovf);
        } else {
            rs = mul(mul(C, S, ovf), world_peers, ovf);
        }
        rs = mul(rs, A, ovf); /* stage 3: every micro-batch */
        int64_t one = qwz ? zc_qwz_segment_bytes(S) : mul(P, S, ovf); /* one gather */
        const int64_t per_step = mul(gathers(in, u), A, ovf);         /* gathers a step */
        int64_t ag = kept && kept[u] ? (trained(in, u) ? mul(P, S, ovf) : 0)
                     : g > 1         ? one
                                     : mul(per_step, one, ovf);
        sum = add(sum, add(rs, mul(ag, world_peers, ovf), ovf), ovf);
        if (g > 1 && !(kept && kept[u]))
            sum = add(
                sum, mul(mul(mul(P, mul(S, N, ovf) / g, ovf), group_peers, ovf), per_step - 1, ovf),
                ovf);
    }
    free(kept);
    return sum;
}

static int64_t max_shard(const zc_estimate_in *in, bool *ovf)
{
    int64_t m = 0;
    for (int u = 0; u < in->nunits; u++) {
        int64_t S = shard(in->unit_numel[u], in->nranks, ovf);
        m = S > m ? S : m;
    }
    return m;
}

/* The largest shard a reduce-scatter carries: a trained unit's (0 when every unit is frozen). */
static int64_t max_reduced_shard(const zc_estimate_in *in, bool *ovf)
{
    int64_t m = 0;
    for (int u = 0; u < in->nunits; u++) {
        int64_t S = trained(in, u) ? shard(in->unit_numel[u], in->nranks, ovf) : 0;
        m = S > m ? S : m;
    }
    return m;
}

int64_t zc_estimate_reduced_shard(const zc_estimate_in *in)
{
    bool ovf = false;
    int64_t m = max_reduced_shard(in, &ovf);
    return ovf ? INT64_MAX : m;
}

int64_t zc_estimate_rs_cols(int64_t reduce_bucket_size, int64_t nranks, int64_t max_shard)
{
    if (reduce_bucket_size == 0) /* DeepSpeed accepts 0: here, each unit's shard in one piece */
        return max_shard;
    int64_t cols = reduce_bucket_size / nranks;
    return cols < 1 ? 1 : cols < max_shard ? cols : max_shard;
}

/* Stages 2–3 whose bf16 gradients go to the reduce-scatter from where they lie (the engine's
 * sends_w16): bf16 gradients sent as stored, no qgZ, no trained unit taking an fp32 matrix
 * gradient (ZC_USE_GRAD32, packed into the staging), no unit's blocks past MPI's int
 * displacements. */
static bool sends_in_place16(const zc_estimate_in *in, bool *ovf)
{
    if (in->stage < 2 || !in->grads_bf16 || or4(in->grad_bytes) != 2 || !in->grads_sent_as_stored ||
        (in->stage == 3 && in->quantized_gradients) ||
        mul(max_reduced_shard(in, ovf), in->nranks, ovf) > INT_MAX)
        return false;
    for (int u = 0; u < in->nunits; u++)
        if (trained(in, u) && (!in->unit_use || (in->unit_use[u] & ZC_USE_GRAD32)))
            return false;
    return true;
}

static int64_t comm_staging(const zc_estimate_in *in, bool *ovf)
{
    int64_t cols =
        zc_estimate_rs_cols(in->reduce_bucket_size, in->nranks, max_reduced_shard(in, ovf));
    if (in->stage == 3 && in->quantized_gradients) /* segments, and one block in fp32 */
        return add(mul(2 * in->nranks, zc_qwz_segment_bytes(cols), ovf), mul(4, cols, ovf), ovf);
    /* send staging, N blocks, and receive staging, the N − 1 other ranks' blocks (a rank's own
     * is summed where it lies in send). Gradients sent as stored go from where they lie (unless a
     * unit's blocks pass MPI's int displacements): stages 0–1's stored gradients, and at stages
     * 2–3 each unit's bf16 gradient — unless a trained unit takes an fp32 matrix gradient
     * (ZC_USE_GRAD32), packed into the staging. One rank receives nothing. */
    const bool sends = in->stage >= 2 ? !sends_in_place16(in, ovf)
                                      : !in->grads_sent_as_stored || mul(max_reduced_shard(in, ovf),
                                                                         in->nranks, ovf) > INT_MAX;
    const int64_t blocks = add(sends ? in->nranks : 0, in->nranks - 1, ovf);
    return mul(mul(blocks, or4(in->comm_elem_bytes), ovf), cols, ovf);
}

static int64_t prefetch_elems(const zc_estimate_in *in, bool *ovf)
{
    return in->prefetch_bucket_size >= 0 ? in->prefetch_bucket_size
                                         : mul(max_shard(in, ovf), in->nranks, ovf); /* one
                                                                    (largest) unit */
}

/* Working bytes of one acquired unit's fp32 views (16-bit parameters) and of its gradient
 * buffers, as the engine allocates them (engine.c: make_view, zc_engine_param, grad_buffer,
 * zc_engine_grad16). */
static void unit_work(const zc_estimate_in *in, int u, bool *ovf, int64_t *view, int64_t *grad)
{
    const int64_t P = or4(in->param_bytes), G = or4(in->grad_bytes);
    const int64_t padded = mul(shard(in->unit_numel[u], in->nranks, ovf), in->nranks, ovf);
    /* not known: as if every element were a 1-D parameter's (an upper bound) */
    const int64_t vec = (int64_t)(in->unit_vec_numel ? in->unit_vec_numel : in->unit_numel)[u];
    const unsigned use = in->unit_use ? in->unit_use[u] : ZC_USE_ANY;
    /* the 1-D parameters' room, made at acquire, and the whole unit's once a matrix is read in
     * fp32 */
    *view = P == 4 ? 0 : add(mul(4, vec, ovf), use & ZC_USE_VIEW32 ? mul(4, padded, ovf) : 0, ovf);
    if (!trained(in, u))
        *grad = 0; /* no gradient */
    else if (in->stage >= 2 && in->grads_bf16 && G == 2) {
        /* the 16-bit gradient and the 1-D parameters' fp32 sums; a unit whose matrix gradient is
         * asked in fp32 has the fp32 buffer too, the 16-bit parts widened into it at the end */
        *grad = add(mul(2, padded, ovf), mul(4, vec, ovf), ovf);
        if (use & ZC_USE_GRAD32)
            *grad = add(*grad, mul(4, padded, ovf), ovf);
    } else /* the model's fp32 gradients, rounded when handed back */
        *grad = in->stage >= 2 || G != 4 ? mul(4, padded, ovf) : 0;
}

static int64_t working_bound(const zc_estimate_in *in, bool *ovf)
{
    const int64_t P = or4(in->param_bytes);
    int64_t unit = mul(max_shard(in, ovf), in->nranks, ovf);
    int64_t view = 0, grad = 0, tied = 0;
    for (int u = 0; u < in->nunits; u++) {
        int64_t v, g;
        unit_work(in, u, ovf, &v, &g);
        view = v > view ? v : view;
        grad = g > grad ? g : grad;
        /* a tied table's tiles: each one's gradient, written by the head's backward at its
         * start, is kept until the embedding's backward at its end — all of them at once */
        if (in->unit_use && in->unit_use[u] & ZC_USE_FORWARD_TWICE)
            tied = add(tied, g, ovf);
    }
    /* fp32 views of the acquired units (a tied unit held across a pass, the current one, and
     * one more while a model hands over between them) */
    int64_t views = mul(3, view, ovf);
    /* the gradients being produced + a tied unit's kept across backward, or the last unit's
     * still being reduced — and both where the gradients are reduced from where they lie
     * (sends_in_place16: the last unit's stays until its reduce-scatter lands); a tied table's
     * tiles' kept gradients besides */
    int64_t grads = add(mul(sends_in_place16(in, ovf) ? 3 : 2, grad, ovf), tied, ovf);
    /* after the last step the weight digest (and the exports) gather one unit at a time in fp32,
     * in place of all of the above */
    const int64_t end_of_run = mul(4, unit, ovf);
    if (in->stage < 3) {
        int64_t during = add(views, grads, ovf);
        return during > end_of_run ? during : end_of_run;
    }
    /* 3 units + the prefetch allowance, capped by max_live_parameters: the sum may pass
     * INT64_MAX only when the cap is below it, so it saturates instead of overflowing */
    int64_t three = mul(3, unit, ovf), prefetch = prefetch_elems(in, ovf), live;
    int64_t ahead = prefetch > INT64_MAX - three ? INT64_MAX : three + prefetch;
    live = in->max_live_parameters;
    int64_t gathered = ahead < live ? ahead : live;
    if (gathered < 2 * unit)
        gathered = mul(2, unit, ovf); /* a unit and its gradient, whatever the caps */
    int64_t during = add(add(mul(P, gathered, ovf), views, ovf), grads, ovf);
    return during > end_of_run ? during : end_of_run;
}

/* ---------- the public functions: INT64_MAX where a count does not fit ---------- */

zc_offload_plan zc_estimate_offload(const zc_estimate_in *in, zc_unit_offload *units)
{
    bool ovf = false;
    return offload_plan(in, units, &ovf);
}

int64_t zc_estimate_nvme_bytes(const zc_estimate_in *in)
{
    bool ovf = false;
    zc_offload_plan p = offload_plan(in, NULL, &ovf);
    return add(p.optimizer_file, p.param_file, &ovf);
}

int64_t zc_estimate_offload_bound(const zc_estimate_in *in)
{
    bool ovf = false;
    zc_offload_plan p = offload_plan(in, NULL, &ovf);
    return add(add(p.slots, p.param_reads, &ovf), p.grad_staging, &ovf);
}

zc_state_bytes zc_estimate_states(const zc_estimate_in *in)
{
    bool ovf = false;
    return states(in, &ovf);
}

int64_t zc_estimate_padded_numel(const zc_estimate_in *in)
{
    bool ovf = false;
    return padded_numel(in, &ovf);
}

int64_t zc_estimate_comm_bytes(const zc_estimate_in *in)
{
    bool ovf = false;
    return comm_bytes(in, false, &ovf);
}

int64_t zc_estimate_inter_host_bytes(const zc_estimate_in *in)
{
    bool ovf = false;
    return comm_bytes(in, true, &ovf);
}

int64_t zc_estimate_comm_staging(const zc_estimate_in *in)
{
    bool ovf = false;
    return comm_staging(in, &ovf);
}

int64_t zc_estimate_prefetch_elems(const zc_estimate_in *in)
{
    bool ovf = false;
    return prefetch_elems(in, &ovf);
}

int64_t zc_estimate_working_bound(const zc_estimate_in *in)
{
    bool ovf = false;
    return working_bound(in, &ovf);
}

zc_status zc_estimate_check(const zc_estimate_in *in, zc_err *err)
{
    if (in->nranks < 1 || in->nunits < 1 || in->nunits > ZC_MAX_UNITS)
        return zc_err_set(err, ZC_EINVAL,
                          "a model of %d units on %d ranks: need 1 to %d units "
                          "and at least 1 rank",
                          in->nunits, in->nranks, ZC_MAX_UNITS);
    if (in->ranks_per_host < 0 || (in->ranks_per_host > 0 && in->nranks % in->ranks_per_host))
        return zc_err_set(err, ZC_EINVAL,
                          "hosts of %d ranks for %d ranks: the estimate needs hosts that hold "
                          "equal numbers of ranks (a number that divides the ranks)",
                          in->ranks_per_host, in->nranks);
    if (in->hpz_partition_size < 0 ||
        (in->hpz_partition_size > 1 && in->nranks % in->hpz_partition_size))
        return zc_err_set(err, ZC_EINVAL,
                          "zero_hpz_partition_size %d must divide the number of ranks, %d",
                          in->hpz_partition_size, in->nranks);
    if (in->grad_accum < 0)
        return zc_err_set(err, ZC_EINVAL, "gradient_accumulation_steps must be >= 1, got %d",
                          in->grad_accum);
    bool ovf = false;
    int64_t padded = padded_numel(in, &ovf);
    if (ovf || padded > ZC_MAX_NUMEL)
        return zc_err_set(err, ZC_EINVAL,
                          "a model of %s%lld parameters (padded over %d ranks): "
                          "zeroc holds at most %lld (2^49)",
                          ovf ? "more than " : "", (long long)padded, in->nranks,
                          (long long)ZC_MAX_NUMEL);
    for (int k = 0; k <= 3; k++) { /* in's own stage first: the one a run names */
        const int stage = k == 0 ? in->stage : k - 1 < in->stage ? k - 1 : k;
        zc_estimate_in s = *in;
        s.stage = stage;
        bool o[5] = {false, false, false, false, false};
        zc_state_bytes b = states(&s, &o[0]);
        add(add(b.params, b.grads, &o[0]), b.optimizer, &o[0]);
        comm_bytes(&s, false, &o[4]);
        comm_staging(&s, &o[1]);
        working_bound(&s, &o[2]);
        zc_offload_plan p = offload_plan(&s, NULL, &o[3]);
        add(p.optimizer_file, p.param_file, &o[3]);
        add(add(p.slots, p.param_reads, &o[3]), p.grad_staging, &o[3]);
        /* a model within ZC_MAX_NUMEL fits: what overflows is a configured size */
        if (o[0] || o[1] || o[2] || o[3] || o[4])
            return zc_err_set(
                err, ZC_EINVAL, "at ZeRO stage %d, the bytes of %s do not fit in 64 bits; lower %s",
                stage,
                o[1]   ? "the reduce-scatter staging"
                : o[2] ? "the gathered parameters (stage3_prefetch_bucket_size "
                         "and stage3_max_live_parameters)"
                : o[3] ? "the NVMe offload buffers"
                : o[0] ? "the model states"
                       : "the communication of a step",
                o[1]   ? "zero_optimization.reduce_bucket_size"
                : o[2] ? "zero_optimization.stage3_prefetch_bucket_size"
                : o[3] ? "zero_optimization.sub_group_size, offload_optimizer.buffer_count, "
                         "offload_param.buffer_size or offload_param.buffer_count"
                : o[0] ? "the model size"
                       : "gradient_accumulation_steps or the model size");
    }
    return ZC_OK;
}
