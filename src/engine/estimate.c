/* estimate.c — DESIGN.md's per-rank formulas over padded unit sizes (zeroc/estimate.h). The
 * engine allocates exactly these sizes (engine.c, zc_engine_finalize), and asks these functions
 * for its own accounting, so estimate and measurement cannot drift apart. */
#include <stdlib.h>

#include "zeroc/estimate.h"
#include "zeroc/status.h"

static int64_t shard(size_t numel, int n) { return (int64_t)((numel + (size_t)n - 1) / (size_t)n); }
static int64_t or4(int bytes) { return bytes ? bytes : 4; }

/* ---------- offload ---------- */

enum { SWAP_ALIGN = 4096, SUB_GROUP_ALIGN = 2048 }; /* a sub-group of 2-byte elements: 4 KiB */

static int64_t round_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

/* Every region of a swap file starts on a 4 KiB boundary and is whole 4 KiB blocks long. */
static int64_t region(int64_t bytes) { return round_up(bytes, SWAP_ALIGN); }

static int64_t sub_group_request(const zc_estimate_in *in)
{
    int64_t sg = in->sub_group_size > 0 ? in->sub_group_size : 4194304;
    return round_up(sg, SUB_GROUP_ALIGN);
}

zc_offload_plan zc_estimate_offload(const zc_estimate_in *in, zc_unit_offload *units)
{
    const int64_t P = or4(in->param_bytes), G = or4(in->grad_bytes);
    const bool mixed = P != 4;
    const int moments = in->moment_floats;
    const bool opt = in->offload_optimizer && in->stage >= 1;
    const bool par = in->offload_params && in->stage == 3;
    const double ratio = in->offload_ratio > 0 ? in->offload_ratio : 1.0;
    zc_offload_plan plan = {0};
    int64_t total = 0, cum_opt = 0, cum_par = 0, max_streamed = 0, max_read = 0, max_grad = 0;
    bool par_spilled = false, streamed[ZC_NSTREAMS] = {false};
    for (int u = 0; u < in->nunits; u++)
        total += shard(in->unit_numel[u], in->nranks);
    for (int u = 0; u < in->nunits; u++) {
        const int64_t S = shard(in->unit_numel[u], in->nranks);
        zc_unit_offload x = {.params_off = -1, .grads_off = -1, .master_off = -1, .m_off = -1,
                             .v_off = -1};
        cum_opt += S;
        x.optimizer = opt && (ratio >= 1.0 || (double)cum_opt <= ratio * (double)total);
        x.grads = x.optimizer && in->stage == 3;
        cum_par += S;
        par_spilled = par_spilled || cum_par > in->max_in_cpu;
        x.params = par && par_spilled;
        if (x.grads) {
            x.grads_off = plan.optimizer_file;
            plan.optimizer_file += region(S * G);
            max_grad = S > max_grad ? S : max_grad;
        }
        if (x.optimizer && mixed) {
            x.master_off = plan.optimizer_file;
            plan.optimizer_file += region(S * 4);
        }
        if (x.optimizer && moments >= 1) {
            x.m_off = plan.optimizer_file;
            plan.optimizer_file += region(S * 4);
        }
        if (x.optimizer && moments >= 2) {
            x.v_off = plan.optimizer_file;
            plan.optimizer_file += region(S * 4);
        }
        if (x.params) {
            x.params_off = plan.param_file;
            plan.param_file += region(S * P);
            max_read = S > max_read ? S : max_read;
        }
        streamed[ZC_STREAM_WEIGHTS] |= mixed ? x.optimizer : x.params;
        streamed[ZC_STREAM_GRADS] |= x.grads;
        streamed[ZC_STREAM_M] |= x.optimizer && moments >= 1;
        streamed[ZC_STREAM_V] |= x.optimizer && moments >= 2;
        streamed[ZC_STREAM_PARAMS] |= mixed && x.params;
        if ((x.optimizer || x.params) && round_up(S, SUB_GROUP_ALIGN) > max_streamed)
            max_streamed = round_up(S, SUB_GROUP_ALIGN);
        if (units)
            units[u] = x;
    }
    const int64_t es[ZC_NSTREAMS] = {4, G, 4, 4, P};
    int64_t sg = sub_group_request(in);
    plan.sub_group = sg < max_streamed ? sg : max_streamed;
    int64_t slot = 0;
    for (int a = 0; a < ZC_NSTREAMS; a++) {
        plan.slot_bytes[a] = streamed[a] ? region(plan.sub_group * es[a]) : 0;
        slot += plan.slot_bytes[a];
    }
    plan.slots = (in->buffer_count > 1 ? in->buffer_count : 1) * slot;
    if (max_read) { /* reads ahead (at most buffer_count, buffer_size elements unless one) plus
                     * one read on demand */
        int64_t r = region(max_read * P), count = in->param_buffer_count > 1
                                                      ? in->param_buffer_count : 1;
        int64_t by_size = region(in->param_buffer_size * P) + count * SWAP_ALIGN;
        int64_t ahead = count * r < (by_size > r ? by_size : r) ? count * r
                                                                : (by_size > r ? by_size : r);
        plan.param_reads = r + ahead;
    }
    plan.grad_staging = 2 * region(max_grad * G); /* the shard being reduced, the one written */
    return plan;
}

int64_t zc_estimate_nvme_bytes(const zc_estimate_in *in)
{
    zc_offload_plan p = zc_estimate_offload(in, NULL);
    return p.optimizer_file + p.param_file;
}

int64_t zc_estimate_offload_bound(const zc_estimate_in *in)
{
    zc_offload_plan p = zc_estimate_offload(in, NULL);
    return p.slots + p.param_reads + p.grad_staging;
}

zc_state_bytes zc_estimate_states(const zc_estimate_in *in)
{
    const int64_t P = or4(in->param_bytes), G = or4(in->grad_bytes);
    const int64_t K = 4 * (int64_t)in->moment_floats + (P == 4 ? 0 : 4); /* + fp32 master */
    zc_unit_offload *where = NULL;
    if (in->offload_optimizer || in->offload_params) {
        where = malloc((size_t)in->nunits * sizeof *where);
        ZC_ASSERT(where);
        zc_estimate_offload(in, where);
    }
    zc_state_bytes b = {0, 0, 0};
    for (int u = 0; u < in->nunits; u++) {
        zc_unit_offload x = where ? where[u] : (zc_unit_offload){0};
        int64_t S = shard(in->unit_numel[u], in->nranks), full = S * in->nranks;
        b.params += x.params ? 0 : P * (in->stage == 3 ? S : full);
        b.grads += x.grads ? 0 : G * (in->stage >= 2 ? S : full);
        b.optimizer += x.optimizer ? 0 : K * (in->stage >= 1 ? S : full);
    }
    free(where);
    return b;
}

int64_t zc_estimate_padded_numel(const zc_estimate_in *in)
{
    int64_t s = 0;
    for (int u = 0; u < in->nunits; u++)
        s += shard(in->unit_numel[u], in->nranks) * in->nranks;
    return s;
}

int64_t zc_estimate_comm_bytes(const zc_estimate_in *in)
{
    const int64_t P = or4(in->param_bytes), G = or4(in->grad_bytes);
    const int64_t C = or4(in->comm_elem_bytes);
    int64_t per = C + (in->stage == 0 ? G : in->stage == 3 ? 2 * P : P);
    return per * (zc_estimate_padded_numel(in) / in->nranks) * (in->nranks - 1);
}

static int64_t max_shard(const zc_estimate_in *in)
{
    int64_t m = 0;
    for (int u = 0; u < in->nunits; u++)
        if (shard(in->unit_numel[u], in->nranks) > m)
            m = shard(in->unit_numel[u], in->nranks);
    return m;
}

int64_t zc_estimate_comm_staging(const zc_estimate_in *in)
{
    int64_t cols = in->reduce_bucket_size / in->nranks, S = max_shard(in);
    cols = cols < 1 ? 1 : cols < S ? cols : S;
    return 2 * or4(in->comm_elem_bytes) * (int64_t)in->nranks * cols;
}

int64_t zc_estimate_prefetch_elems(const zc_estimate_in *in)
{
    return in->prefetch_bucket_size >= 0 ? in->prefetch_bucket_size
                                         : max_shard(in) * in->nranks; /* one (largest) unit */
}

int64_t zc_estimate_working_bound(const zc_estimate_in *in)
{
    const int64_t P = or4(in->param_bytes), G = or4(in->grad_bytes);
    int64_t unit = max_shard(in) * in->nranks;
    /* fp32 views of the acquired units (a tied unit held across a pass, the current one, and
     * one more while a model hands over between them) */
    int64_t views = P == 4 ? 0 : 4 * 3 * unit;
    /* the fp32 gradients being produced + a tied unit's, kept across backward */
    int64_t grads = in->stage >= 2 || G != 4 ? 4 * 2 * unit : 0;
    if (in->stage < 3)
        return views + grads;
    int64_t prefetch = zc_estimate_prefetch_elems(in), live = in->max_live_parameters;
    int64_t gathered = 3 * unit + prefetch < live ? 3 * unit + prefetch : live;
    if (gathered < 2 * unit)
        gathered = 2 * unit; /* a unit and its gradient, whatever the caps */
    return P * gathered + views + grads;
}
