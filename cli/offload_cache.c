/* offload_cache.c — offload_param.max_in_cpu and offload_optimizer.ratio "auto": a rank's spare
 * RAM used as a cache of the states offloaded to NVMe, sized at start from what the host can give.
 *
 * Why it is shaped this way:
 * - The swap files are read and written with O_DIRECT, so the kernel's page cache keeps none of
 *   them: RAM the run leaves free is wasted, while every parameter element kept in RAM saves its
 *   reads (forward and backward, each step) and every optimizer element its share of the update's
 *   streaming (master, moments and gradient read and written back). DeepSpeed's fixed defaults
 *   (max_in_cpu 1e9, ratio 1) keep too much for a large model (a refused run) or too little for
 *   a host with RAM to spare; "auto" asks zeroc to size them.
 * - Parameters first, then the optimizer state: a parameter shard read from disk stalls the
 *   forward and backward that wait for it, the optimizer's streaming overlaps its own I/O.
 *   Placement is the estimator's (zc_estimate_offload): the parameter shards of the first units
 *   up to max_in_cpu elements stay in RAM; the optimizer state of the first units holding
 *   `ratio` of the elements goes to disk. Sizes are searched on the estimator's need
 *   (memory_check_need), so what is chosen is what the memory check then admits.
 * - A reserve (offload_cache_reserve) is kept back: the estimate does not count the runtime
 *   around the engine (MPI, BLAS, the binary) nor the allocator's slack, and the host's free
 *   memory moves while the run lives.
 * - Every rank must run one configuration: each sizes for its host's budget, and all take the
 *   smallest cache (fewest parameters in RAM, the largest share of optimizer state on disk). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/memory_check.h"
#include "cli/offload_cache.h"

static double gib(int64_t b)
{
    return (double)b / (1 << 30);
}

int64_t offload_cache_reserve(int64_t budget)
{
    const int64_t floor = (int64_t)256 << 20, tenth = budget / 10;
    return tenth > floor ? tenth : floor;
}

static int64_t shard_of(const zc_estimate_in *in, int u)
{
    const int64_t n = (int64_t)in->unit_numel[u], N = in->nranks;
    return n / N + (n % N != 0);
}

/* The ratio that puts the optimizer state of units [0, k) on disk and none of the others: the
 * midpoint between the elements of k and of k + 1 units, clear of rounding either way. */
static double ratio_for(const zc_estimate_in *in, int k, int64_t total)
{
    if (k >= in->nunits)
        return 1.0;
    int64_t before = 0;
    for (int u = 0; u < k; u++)
        before += shard_of(in, u);
    return ((double)before + 0.5 * (double)shard_of(in, k)) / (double)total;
}

void offload_cache_size(const zc_estimate_in *in, int64_t activations, int64_t target, bool par,
                        bool opt, int64_t *max_in_cpu, double *ratio)
{
    zc_estimate_in t = *in;
    int64_t total = 0;
    for (int u = 0; u < in->nunits; u++)
        total += shard_of(in, u);
    if (opt)
        t.offload_ratio = 1.0; /* the parameters are sized with every optimizer state on disk */
    if (par) {
        /* the largest n in [0, total] that fits: lo fits (or is 0), hi does not */
        int64_t lo = 0, hi = total + 1;
        t.max_in_cpu = total;
        if (memory_check_need(&t, activations) <= target)
            lo = total;
        while (hi - lo > 1) {
            t.max_in_cpu = lo + (hi - lo) / 2;
            if (memory_check_need(&t, activations) <= target)
                lo = t.max_in_cpu;
            else
                hi = t.max_in_cpu;
        }
        t.max_in_cpu = lo;
    }
    if (opt) {
        /* the fewest units k whose optimizer state on disk lets the rest fit: hi fits (or is
         * every unit), lo does not. None on disk needs no streaming slots at all, which the
         * search over k >= 1 (slots counted) would not see: tried first. */
        int lo = 0, hi = in->nunits;
        t.offload_ratio = ratio_for(in, 0, total);
        if (memory_check_need(&t, activations) <= target)
            hi = 0;
        while (hi - lo > 1) {
            const int k = lo + (hi - lo) / 2;
            t.offload_ratio = ratio_for(in, k, total);
            if (memory_check_need(&t, activations) <= target)
                hi = k;
            else
                lo = k;
        }
        t.offload_ratio = ratio_for(in, hi, total);
    }
    *max_in_cpu = t.max_in_cpu;
    *ratio = t.offload_ratio;
}

typedef struct {
    int64_t max_in_cpu;
    double ratio;
} cache_sizes;

zc_status offload_cache_resolve(zc_comm *comm, zc_engine *e, const zc_mem *mem,
                                const zc_config *cfg, char *said, size_t cap, zc_err *err)
{
    said[0] = '\0';
    const int stage = zc_engine_stage(e);
    const bool par =
        cfg->max_in_cpu == ZC_AUTO && cfg->offload_param == ZC_OFFLOAD_NVME && stage == 3;
    const bool opt =
        cfg->optimizer_ratio == ZC_AUTO && cfg->offload_optimizer == ZC_OFFLOAD_NVME && stage >= 1;
    if (!par && !opt) /* an "auto" with nothing offloaded: finalize takes the defaults */
        return ZC_OK;
    const int nunits = zc_engine_num_units(e), nranks = zc_engine_world_size(e);
    size_t *numel = malloc((size_t)nunits * 2 * sizeof *numel);
    uint8_t *use = malloc((size_t)nunits);
    memory_check_budget *b = malloc(sizeof *b);
    cache_sizes *all = malloc((size_t)nranks * sizeof *all);
    zc_unit_offload *where = malloc((size_t)nunits * sizeof *where);
    zc_status st = ZC_OK;
    if (!numel || !use || !b || !all || !where)
        st = zc_err_set(err, ZC_ENOMEM, "out of memory sizing the offload cache");
    /* every rank takes part in the gather below, or none does */
    if ((st = zc_comm_agree(comm, st, "sizing the offload cache", err)))
        goto done;
    zc_estimate_in in = zc_engine_estimate_in(e, stage, numel, numel + nunits, use);
    const int64_t activations = zc_mem_get(mem, ZC_MEM_ACTIVATIONS).current;
    const int64_t budget = memory_check_rank_budget(comm, mem, in.param_bytes, b);
    /* unreadable budgets: DeepSpeed's defaults, said */
    cache_sizes mine = {par ? ZC_MAX_IN_CPU_DEFAULT : in.max_in_cpu, opt ? 1.0 : in.offload_ratio};
    const int64_t reserve = budget < 0 ? 0 : offload_cache_reserve(budget);
    if (budget >= 0)
        offload_cache_size(&in, activations, budget - reserve, par, opt, &mine.max_in_cpu,
                           &mine.ratio);
    if ((st = zc_comm_control_gather(comm, &mine, all, sizeof mine, "offload cache sizes", err)))
        goto done;
    cache_sizes use_all = all[0];
    for (int r = 1; r < nranks; r++) {
        use_all.max_in_cpu =
            all[r].max_in_cpu < use_all.max_in_cpu ? all[r].max_in_cpu : use_all.max_in_cpu;
        use_all.ratio = all[r].ratio > use_all.ratio ? all[r].ratio : use_all.ratio;
    }
    if ((st = zc_engine_set_offload_sizes(e, use_all.max_in_cpu, use_all.ratio, err)))
        goto done;
    /* what it comes to on this rank, for the line */
    in.max_in_cpu = use_all.max_in_cpu;
    in.offload_ratio = use_all.ratio;
    const zc_state_bytes s = zc_estimate_states(&in);
    zc_estimate_offload(&in, where);
    int64_t shards = 0, par_ram = 0;
    int opt_disk = 0;
    for (int u = 0; u < nunits; u++) {
        shards += shard_of(&in, u);
        par_ram += where[u].params ? 0 : shard_of(&in, u);
        opt_disk += where[u].optimizer;
    }
    char what[600] = "", *w = what;
    if (par)
        w += snprintf(w, sizeof what,
                      "%lld of rank %d's %lld parameter-shard elements in RAM "
                      "(offload_param.max_in_cpu %lld)",
                      (long long)par_ram, zc_comm_rank(comm), (long long)shards,
                      (long long)use_all.max_in_cpu);
    if (opt)
        snprintf(w, sizeof what - (size_t)(w - what),
                 "%sthe optimizer state of %d of its %d units on disk, the rest in RAM "
                 "(offload_optimizer.ratio %.6g)",
                 par ? "; " : "", opt_disk, nunits, use_all.ratio);
    if (budget < 0)
        snprintf(said, cap,
                 "offload \"auto\": DeepSpeed's default%s, %s (this host's free memory could not "
                 "be read)",
                 par && opt ? "s" : "", what);
    else
        snprintf(said, cap,
                 "offload \"auto\": %s — %.2f GiB of model states in RAM, sized to the %.2f GiB "
                 "the rank may use less %.2f GiB kept back (%s)%s",
                 what, gib(s.params + s.grads + s.optimizer), gib(budget), gib(reserve),
                 b->limited ? b->limit_where : b->where,
                 nranks > 1 ? "; every rank takes the smallest cache any of them can hold" : "");
done:
    free(numel);
    free(use);
    free(b);
    free(all);
    free(where);
    return st;
}
