/* estimate.c — DESIGN.md's per-rank formulas over padded unit sizes (zeroc/estimate.h). The
 * engine allocates exactly these sizes (engine.c, zc_engine_finalize), and asks these functions
 * for its own accounting, so estimate and measurement cannot drift apart. */
#include "zeroc/estimate.h"

static int64_t shard(size_t numel, int n) { return (int64_t)((numel + (size_t)n - 1) / (size_t)n); }
static int64_t or4(int bytes) { return bytes ? bytes : 4; }

zc_state_bytes zc_estimate_states(const zc_estimate_in *in)
{
    const int64_t P = or4(in->param_bytes), G = or4(in->grad_bytes);
    const int64_t K = 4 * (int64_t)in->moment_floats + (P == 4 ? 0 : 4); /* + fp32 master */
    zc_state_bytes b = {0, 0, 0};
    for (int u = 0; u < in->nunits; u++) {
        int64_t S = shard(in->unit_numel[u], in->nranks), full = S * in->nranks;
        b.params += P * (in->stage == 3 ? S : full);
        b.grads += G * (in->stage >= 2 ? S : full);
        b.optimizer += K * (in->stage >= 1 ? S : full);
    }
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
    int64_t prefetch = in->prefetch_bucket_size, live = in->max_live_parameters;
    int64_t gathered = 3 * unit + prefetch < live ? 3 * unit + prefetch : live;
    if (gathered < 2 * unit)
        gathered = 2 * unit; /* a unit and its gradient, whatever the caps */
    return P * gathered + views + grads;
}
