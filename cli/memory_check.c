/* memory_check.c — `zeroc train` refuses, before the engine allocates the model states, a run
 * whose estimated memory per rank exceeds what this host can give it, and names the ZeRO stage,
 * offload and offload-knob settings that would fit (the advice: below, before fitting()).
 *
 * Why it is shaped this way:
 * - A run that does not fit is otherwise killed by the kernel's OOM killer minutes later (or
 *   thrashes), with no message from zeroc. The estimator already computes, to the byte, what the
 *   engine will hold (model states, reduce-scatter staging, the working and offload-buffer
 *   bounds); the model's activations are its ledger's (reserved at creation, not yet touched).
 * - What the host can give is the smaller of MemAvailable (/proc/meminfo) and the memory left
 *   under the limit of this process's memory cgroup and of each cgroup above it (v2
 *   memory.max − memory.current, or v1 memory.limit_in_bytes − memory.usage_in_bytes; the
 *   inactive file cache counted as free, as the kernel reclaims it first), divided among the
 *   ranks on the host. Swap is not counted: a run that lives in swap does not train.
 * - The estimate covers the engine and the model, not the runtime around them (MPI, BLAS,
 *   oneDNN, the binary), so a run that passes can still be too large by that much; the check
 *   refuses only what certainly cannot fit.
 * - A limit on the process's own mappings is a budget too, not divided among the ranks (each
 *   has its own): `ulimit -v` (RLIMIT_AS; SGE's h_vmem sets it) and `ulimit -d` (RLIMIT_DATA,
 *   which counts private writable mappings since Linux 4.7). A run over one otherwise passes
 *   the check and segfaults inside oneDNN (its JIT's mmap fails), hangs inside OpenBLAS (on the
 *   portable path its threads retry a failed buffer allocation forever) or fails its save after
 *   training. What is left is the limit less what the process maps already (VmSize or VmData in
 *   /proc/self/status, less the estimate's bytes already allocated: the activations) less a
 *   margin for what a run maps beyond the estimate. Measured on GPT-2 8 × 512, bf16, with a
 *   save, as the smallest limit at which it still runs, less the mapped bytes and the estimate:
 *   under `ulimit -v`, 24 MiB at 1 compute thread, 74 at 2 and 222 at 4 (oneDNN's generated
 *   code, the save's buffers, MPI; and from the second thread on glibc's malloc arena of each
 *   thread that allocates, 64 MiB of address space reserved at once); on the portable path
 *   (OpenBLAS) 132 MiB at 1 thread and 190 at 2 (OpenBLAS maps a 128 MiB buffer for each of
 *   its threads a product runs on; that model's products ran on one); under `ulimit -d`, 27 and
 *   30 MiB at 1 and 4 threads (arenas count only as they are used). So the margin is 32 MiB,
 *   plus under RLIMIT_AS 64 MiB per compute thread beyond the first, plus where OpenBLAS
 *   computes the products 128 MiB per OpenBLAS thread (a large product runs on all of them).
 *   Near the limit the margin decides, and it errs high: it can refuse a run that would just
 *   have fit (by 8-23 MiB on the oneDNN path at 1-2 threads, by up to 128 MiB per OpenBLAS
 *   thread a small model's products leave idle), where a run it passes could otherwise crash.
 * - `--no-memory-check` skips it (a machine whose swap or overcommit the user trusts). */
#include <inttypes.h>
#include <omp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <cblas.h>

#include "cli/memory_check.h"
#include "zeroc/checked.h"
#include "zeroc/estimate.h"
#include "zeroc/gemm.h"

static double gib(int64_t b)
{
    return (double)b / (1 << 30);
}

/* The first integer in a file ("max" and unreadable files give -1). */
static int64_t read_number(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char buf[64] = "";
    int64_t v = -1;
    if (fgets(buf, sizeof buf, f) && buf[0] >= '0' && buf[0] <= '9')
        v = strtoll(buf, NULL, 10);
    fclose(f);
    return v;
}

/* A key's value in a memory.stat file, or -1. */
static int64_t stat_value(const char *path, const char *key)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[256];
    int64_t v = -1;
    const size_t k = strlen(key);
    while (v < 0 && fgets(line, sizeof line, f))
        if (!strncmp(line, key, k) && line[k] == ' ')
            v = strtoll(line + k + 1, NULL, 10);
    fclose(f);
    return v;
}

/* Bytes one cgroup (directory dir) may still charge before its limit, or -1 if it has none: the
 * limit less what is in use, not counting the inactive file cache (clean pages of files read or
 * written, which the kernel reclaims before it kills anything — a `prepare` just before `train`
 * leaves hundreds of MB of them). v1's "no limit" is a huge number, which min() ignores. */
static int64_t level_room(const char *dir, bool v2, char *where, size_t cap)
{
    char limit[4300], usage[4300], stat[4300];
    snprintf(limit, sizeof limit, "%s/%s", dir, v2 ? "memory.max" : "memory.limit_in_bytes");
    snprintf(usage, sizeof usage, "%s/%s", dir, v2 ? "memory.current" : "memory.usage_in_bytes");
    snprintf(stat, sizeof stat, "%s/memory.stat", dir);
    const int64_t l = read_number(limit), u = read_number(usage);
    if (l < 0 || u < 0)
        return -1;
    int64_t cache = stat_value(stat, v2 ? "inactive_file" : "total_inactive_file");
    cache = cache > 0 && cache <= u ? cache : 0;
    snprintf(where, cap,
             "the memory cgroup's limit %.2f GiB less %.2f GiB in use, not counting %.2f GiB "
             "of reclaimable file cache (%s)",
             gib(l), gib(u - cache), gib(cache), limit);
    return l > u - cache ? l - (u - cache) : 0;
}

/* Bytes this process may still charge under its memory cgroup and every cgroup above it (a
 * limit is often set on a parent: a systemd slice, a Slurm job whose steps are its children),
 * the tightest of them; -1 if none has a limit. v2: the line "0::PATH" of /proc/self/cgroup;
 * v1: the line "N:memory:PATH". */
static int64_t cgroup_room(char *where, size_t cap)
{
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (!f)
        return -1;
    char line[4096], dir[4200];
    int64_t room = -1;
    bool found = false;
    while (!found && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c2 = 0;
        const char *controllers = c1 + 1, *path = c2 + 1;
        const bool v2 = !controllers[0] && !strcmp(line, "0");
        if (!v2 && !strstr(controllers, "memory"))
            continue;
        found = true;
        int n = snprintf(dir, sizeof dir, "%s%s", v2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/memory",
                         strcmp(path, "/") ? path : "");
        if (n < 0 || (size_t)n >= sizeof dir)
            break;
        const size_t base = strlen(v2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/memory");
        for (;;) { /* this cgroup, then each parent up to the hierarchy's root */
            char here[4600];
            const int64_t r = level_room(dir, v2, here, sizeof here);
            if (r >= 0 && (room < 0 || r < room)) {
                room = r;
                snprintf(where, cap, "%s", here);
            }
            char *slash = strrchr(dir, '/');
            if (strlen(dir) <= base || !slash || (size_t)(slash - dir) < base)
                break;
            *slash = 0;
        }
    }
    fclose(f);
    return room;
}

/* MemAvailable in bytes, or -1. */
static int64_t mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f)
        return -1;
    char line[256];
    long long kib = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lld kB", &kib) == 1)
            break;
    fclose(f);
    return kib < 0 ? -1 : (int64_t)kib * 1024;
}

int64_t memory_check_host_budget(char *where, size_t cap)
{
    int64_t avail = mem_available();
    char cg[4600] = "";
    int64_t room = cgroup_room(cg, sizeof cg);
    if (room >= 0 && (avail < 0 || room < avail)) {
        snprintf(where, cap, "%s", cg);
        return room;
    }
    if (avail >= 0)
        snprintf(where, cap, "MemAvailable in /proc/meminfo");
    return avail;
}

zc_status memory_check_grow(const char *flag, const char *path, uint64_t read, size_t more,
                            zc_err *err)
{
    enum { MARGIN = 64 << 20 }; /* what the command still allocates beside the buffer */
    char where[4700];
    const int64_t budget = memory_check_host_budget(where, sizeof where);
    if (budget < 0 || (int64_t)more + MARGIN <= budget)
        return ZC_OK;
    return zc_err_set(err, ZC_ENOMEM,
                      "%s %s: %.1f MiB read and not at its end; the next %.1f MiB of it (an "
                      "input is held in memory) and 64 MiB for the rest of the command do not fit "
                      "in the %.1f MiB this host can still give (%s): an endless stream, or one "
                      "too large — write it to a file and give that, or give it in parts",
                      flag, strcmp(path, "-") ? path : "(standard input)", (double)read / (1 << 20),
                      (double)more / (1 << 20), (double)(budget > 0 ? budget : 0) / (1 << 20),
                      where);
}

/* A "Vm...:" field of /proc/self/status in bytes, or -1. */
static int64_t status_bytes(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    char line[256];
    long long kib = -1;
    const size_t k = strlen(key);
    while (kib < 0 && fgets(line, sizeof line, f))
        if (!strncmp(line, key, k) && line[k] == ':')
            sscanf(line + k + 1, "%lld", &kib);
    fclose(f);
    return kib < 0 ? -1 : (int64_t)kib * 1024;
}

/* The limits on what a process may map, and how /proc/self/status counts what it has mapped. */
static const struct {
    int resource;
    const char *name, *ulimit, *field, *what;
} limits[] = {
    {RLIMIT_AS, "RLIMIT_AS; SGE's h_vmem sets it", "ulimit -v", "VmSize", "address-space"},
    {RLIMIT_DATA, "RLIMIT_DATA", "ulimit -d", "VmData", "data-segment"},
};

/* Bytes this process may still map for what the estimate counts under its address-space and
 * data limits, the tighter: the limit less what is mapped already (`counted` bytes of it being
 * the estimate's, allocated already) less the margin for `threads` compute threads' malloc
 * arenas and `blas` OpenBLAS threads' buffers; -1 with neither limit set. The
 * limit and the arithmetic into `where`. */
static int64_t limit_room(int64_t counted, int threads, int blas, char *where, size_t cap)
{
    const int64_t MiB = 1 << 20, arenas = threads > 1 ? threads - 1 : 0;
    int64_t room = -1;
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        struct rlimit rl;
        if (getrlimit(limits[i].resource, &rl) || rl.rlim_cur == RLIM_INFINITY ||
            rl.rlim_cur > (rlim_t)INT64_MAX)
            continue;
        const int64_t used = status_bytes(limits[i].field);
        if (used < 0)
            continue;
        const int64_t limit = (int64_t)rl.rlim_cur, before = used > counted ? used - counted : 0;
        const bool as = limits[i].resource == RLIMIT_AS;
        const int64_t margin = 32 * MiB + (as ? 64 * MiB * arenas : 0) + 128 * MiB * blas;
        const int64_t r = limit > before + margin ? limit - before - margin : 0;
        if (room >= 0 && r >= room)
            continue;
        room = r;
        char kept[300] = "", *k = kept;
        k += snprintf(k, sizeof kept,
                      "32 MiB for oneDNN's generated code, MPI and the save's "
                      "buffers");
        if (as && arenas)
            k += snprintf(k, sizeof kept - (size_t)(k - kept),
                          ", 64 MiB for the malloc arena of each compute thread after the first "
                          "(%d)",
                          (int)arenas);
        if (blas)
            snprintf(k, sizeof kept - (size_t)(k - kept),
                     ", 128 MiB for the buffer of each OpenBLAS thread (%d)", blas);
        snprintf(where, cap,
                 "the %s limit (`%s`, %s) of %.2f GiB, less %.2f GiB mapped before the model "
                 "states (%s in /proc/self/status%s) and %.2f GiB kept for what a run maps "
                 "beyond the estimate: %s",
                 limits[i].what, limits[i].ulimit, limits[i].name, gib(limit), gib(before),
                 limits[i].field, counted ? ", less the activations already allocated" : "",
                 gib(margin), kept);
    }
    return room;
}

/* What one rank needs in RAM at `in`'s settings: the estimator's exact states and staging, its
 * bounds of working memory and offload buffers, and the model's activations. */
static int64_t need_per_rank(const zc_estimate_in *in, int64_t activations)
{
    zc_state_bytes b = zc_estimate_states(in);
    bool ovf = false;
    int64_t t = zc_add_i64(b.params + b.grads, b.optimizer, &ovf);
    t = zc_add_i64(t, zc_estimate_comm_staging(in), &ovf);
    t = zc_add_i64(t, zc_estimate_working_bound(in), &ovf);
    t = zc_add_i64(t, zc_estimate_offload_bound(in), &ovf);
    t = zc_add_i64(t, activations, &ovf);
    return ovf ? INT64_MAX : t;
}

/* ---------- the advice: settings that fit ----------
 *
 * A refused run is told the settings that fit, the least change first: the stage raised, the
 * optimizer offloaded, the parameters offloaded — and, wherever something is offloaded (already
 * or as suggested), the offload knobs the estimator counts in RAM: offload_param.max_in_cpu
 * (parameter elements kept in RAM; DeepSpeed's default 1e9 keeps a small model's all), a lower
 * offload_optimizer.ratio's share kept in RAM, sub_group_size and offload_optimizer.buffer_count
 * (the RAM slots the update streams through), offload_param.buffer_count (the shards read
 * ahead; buffer_size only caps the same reads, so the count is the knob named). Without them a
 * run at stage 3 with both offloads and DeepSpeed's defaults was told that nothing fits, where
 * max_in_cpu 0 and smaller sub-groups and buffers did. More ranks shrink only the model states:
 * they are advised only when the estimate at that many ranks fits, never for working memory,
 * buffers or activations. */

enum { K_MAX_IN_CPU, K_RATIO, K_SUB_GROUP, K_OPT_BUFFERS, K_PAR_BUFFERS, NKNOBS };

/* Smaller values a knob may take, the least change first. */
static const int64_t sub_groups[] = {1048576, 262144, 65536};
static const int64_t buffer_counts[] = {2, 1};

static bool offloads_optimizer(const zc_estimate_in *in)
{
    return in->offload_optimizer && in->stage >= 1;
}

static bool offloads_params(const zc_estimate_in *in)
{
    return in->offload_params && in->stage == 3;
}

/* The sub-group size and slot counts the estimator uses for a configured 0. */
static int64_t sub_group_of(const zc_estimate_in *in)
{
    return in->sub_group_size > 0 ? in->sub_group_size : 4194304;
}

static int64_t at_least_one(int64_t count)
{
    return count > 1 ? count : 1;
}

/* Where in `list` (descending) the values below `now` start: [*first, n) are the choices. */
static int below(const int64_t *list, int n, int64_t now, int *first)
{
    int i = 0;
    while (i < n && list[i] >= now)
        i++;
    *first = i;
    return n - i;
}

/* How many values knob k may take at `in` (1: only its own, the knob does not apply). */
static int knob_choices(const zc_estimate_in *in, int k)
{
    const bool off = offloads_optimizer(in) || offloads_params(in);
    int first;
    switch (k) {
    case K_MAX_IN_CPU: return offloads_params(in) && in->max_in_cpu > 0 ? 2 : 1;
    case K_RATIO:
        return offloads_optimizer(in) && in->offload_ratio > 0 && in->offload_ratio < 1 ? 2 : 1;
    case K_SUB_GROUP: return off ? 1 + below(sub_groups, 3, sub_group_of(in), &first) : 1;
    case K_OPT_BUFFERS:
        return off ? 1 + below(buffer_counts, 2, at_least_one(in->buffer_count), &first) : 1;
    default: /* K_PAR_BUFFERS */
        return offloads_params(in)
                   ? 1 + below(buffer_counts, 2, at_least_one(in->param_buffer_count), &first)
                   : 1;
    }
}

/* Sets knob k of `in` to its choice c (1 ≤ c < knob_choices), counted from `base`'s value. */
static void knob_set(zc_estimate_in *in, const zc_estimate_in *base, int k, int c)
{
    int first;
    switch (k) {
    case K_MAX_IN_CPU: in->max_in_cpu = 0; break;
    case K_RATIO: in->offload_ratio = 1.0; break;
    case K_SUB_GROUP:
        below(sub_groups, 3, sub_group_of(base), &first);
        in->sub_group_size = sub_groups[first + c - 1];
        break;
    case K_OPT_BUFFERS:
        below(buffer_counts, 2, at_least_one(base->buffer_count), &first);
        in->buffer_count = (int)buffer_counts[first + c - 1];
        break;
    default:
        below(buffer_counts, 2, at_least_one(base->param_buffer_count), &first);
        in->param_buffer_count = (int)buffer_counts[first + c - 1];
    }
}

/* `base` with the knobs at choices c[]. */
static zc_estimate_in with_knobs(const zc_estimate_in *base, const int *c)
{
    zc_estimate_in in = *base;
    for (int k = 0; k < NKNOBS; k++)
        if (c[k])
            knob_set(&in, base, k, c[k]);
    return in;
}

/* The knobs of `base` that make it fit `budget` with the least change — the fewest knobs
 * changed, then each by the least — into *out and its need into *need; false if none does. */
static bool least_change(const zc_estimate_in *base, int64_t activations, int64_t budget,
                         zc_estimate_in *out, int64_t *need)
{
    int n[NKNOBS], combos = 1, most = 0;
    for (int k = 0; k < NKNOBS; k++) {
        n[k] = knob_choices(base, k);
        combos *= n[k];
        most += 16 + n[k] - 1;
    }
    for (int cost = 0; cost <= most; cost++)
        for (int i = 0; i < combos; i++) {
            int c[NKNOBS], r = i, this_cost = 0;
            for (int k = 0; k < NKNOBS; k++) {
                c[k] = r % n[k];
                r /= n[k];
                this_cost += c[k] ? 16 + c[k] : 0;
            }
            if (this_cost != cost)
                continue;
            zc_estimate_in in = with_knobs(base, c);
            const int64_t t = need_per_rank(&in, activations);
            if (t <= budget) {
                *out = in;
                *need = t;
                return true;
            }
        }
    return false;
}

/* `base` with every knob at its smallest, less the changes that do not lower the need. */
static zc_estimate_in least_ram(const zc_estimate_in *base, int64_t activations, int64_t *need)
{
    int c[NKNOBS];
    for (int k = 0; k < NKNOBS; k++)
        c[k] = knob_choices(base, k) - 1;
    zc_estimate_in in = with_knobs(base, c);
    *need = need_per_rank(&in, activations);
    for (int k = 0; k < NKNOBS; k++) {
        if (!c[k])
            continue;
        const int kept = c[k];
        c[k] = 0;
        zc_estimate_in back = with_knobs(base, c);
        const int64_t t = need_per_rank(&back, activations);
        if (t <= *need) {
            in = back;
            *need = t;
        } else {
            c[k] = kept;
        }
    }
    return in;
}

/* The stages and offloads to try, the least change from `now` first: `now` itself with its
 * knobs (if it offloads), a higher stage in RAM, the optimizer on NVMe, the parameters too
 * (stage 3). An offload `now` has stays. Returns how many (at most 8). */
static int bases(const zc_estimate_in *now, zc_estimate_in *out)
{
    static const struct {
        int stage;
        bool opt, par;
    } tries[] = {{1, 0, 0}, {2, 0, 0}, {3, 0, 0}, {1, 1, 0}, {2, 1, 0}, {3, 1, 0}, {3, 1, 1}};
    int n = 0;
    if (offloads_optimizer(now) || offloads_params(now))
        out[n++] = *now;
    for (size_t i = 0; i < sizeof tries / sizeof tries[0]; i++) {
        zc_estimate_in in = *now;
        in.stage = tries[i].stage;
        in.offload_optimizer = tries[i].opt || now->offload_optimizer;
        in.offload_params = tries[i].par || (now->offload_params && in.stage == 3);
        bool seen = in.stage < now->stage ||
                    (in.stage == now->stage && in.offload_optimizer == now->offload_optimizer &&
                     in.offload_params == now->offload_params);
        for (int j = 0; j < n && !seen; j++)
            seen = out[j].stage == in.stage && out[j].offload_optimizer == in.offload_optimizer &&
                   out[j].offload_params == in.offload_params;
        if (!seen)
            out[n++] = in;
    }
    return n;
}

/* One setting as the user writes it: the flags, then the keys that have none as a JSON fragment
 * of zero_optimization, then the estimate per rank. */
static void describe(const zc_estimate_in *now, const zc_estimate_in *in, int64_t need, char *out,
                     size_t cap)
{
    const bool opt = offloads_optimizer(in), par = offloads_params(in);
    const bool newly = (opt && !offloads_optimizer(now)) || (par && !offloads_params(now));
    char opt_keys[96] = "", par_keys[96] = "", json[256] = "", group[48] = "";
    if (in->offload_ratio != now->offload_ratio)
        snprintf(opt_keys, sizeof opt_keys, "\"ratio\": 1");
    if (in->buffer_count != now->buffer_count)
        snprintf(opt_keys + strlen(opt_keys), sizeof opt_keys - strlen(opt_keys),
                 "%s\"buffer_count\": %d", opt_keys[0] ? ", " : "", in->buffer_count);
    if (in->max_in_cpu != now->max_in_cpu)
        snprintf(par_keys, sizeof par_keys, "\"max_in_cpu\": %lld", (long long)in->max_in_cpu);
    if (in->param_buffer_count != now->param_buffer_count)
        snprintf(par_keys + strlen(par_keys), sizeof par_keys - strlen(par_keys),
                 "%s\"buffer_count\": %d", par_keys[0] ? ", " : "", in->param_buffer_count);
    if (opt_keys[0] || par_keys[0])
        snprintf(json, sizeof json, " with zero_optimization's %s%s%s%s%s%s%s",
                 opt_keys[0] ? "\"offload_optimizer\": {" : "", opt_keys, opt_keys[0] ? "}" : "",
                 opt_keys[0] && par_keys[0] ? ", " : "", par_keys[0] ? "\"offload_param\": {" : "",
                 par_keys, par_keys[0] ? "}" : "");
    if (in->sub_group_size != now->sub_group_size)
        snprintf(group, sizeof group, " --sub-group-size %lld", (long long)in->sub_group_size);
    snprintf(out, cap, "--stage %d%s%s%s%s (%.2f GiB per rank%s)", in->stage,
             opt ? " --offload-optimizer nvme" : "", par ? " --offload-param nvme" : "", group,
             json, gib(need), newly ? ", + --nvme-path DIR" : "");
}

/* The advice for a run `now` that needs more than `budget` per rank: up to two settings that
 * fit (first[], second[]; second may stay empty), or why none does and what would. */
static void fitting(const zc_estimate_in *now, int64_t activations, int64_t budget, char *first,
                    char *second, size_t cap)
{
    zc_estimate_in base[8], in;
    int64_t need;
    const int nbases = bases(now, base);
    char *out[2] = {first, second};
    int shown = 0, shown_base = 0;
    int64_t shown_need = 0;
    first[0] = second[0] = 0;
    for (int b = 0; b < nbases && shown < 2; b++)
        if (least_change(&base[b], activations, budget, &in, &need)) {
            describe(now, &in, need, out[shown++], cap);
            shown_base = b, shown_need = need;
        }
    if (shown == 1) { /* the other one: the same stage and offloads in the least RAM */
        int64_t least;
        zc_estimate_in small = least_ram(&base[shown_base], activations, &least);
        if (least < shown_need)
            describe(now, &small, least, second, cap);
    }
    if (shown)
        return;
    /* none here: the least any setting needs, and what of it more ranks would not shrink */
    int64_t least = INT64_MAX;
    zc_estimate_in best = *now;
    for (int b = 0; b < nbases; b++) {
        int64_t t;
        zc_estimate_in s = least_ram(&base[b], activations, &t);
        if (t < least)
            least = t, best = s;
    }
    zc_state_bytes sb = zc_estimate_states(&best);
    const int64_t states = sb.params + sb.grads + sb.optimizer;
    size_t len = (size_t)snprintf(
        first, cap,
        "none of stages 1-3 with or without NVMe offload and its knobs: the least is %.2f GiB "
        "per rank, of which %.2f model states, %.2f activations and %.2f working memory and "
        "buffers",
        gib(least), gib(states), gib(activations), gib(least - states - activations));
    /* more ranks, on other hosts like this one (ranks on this host would share its budget) */
    bool ranks = false;
    for (int64_t n = 2 * (int64_t)now->nranks; !ranks && n <= 65536; n *= 2)
        for (int b = 0; b < nbases && !ranks; b++) {
            zc_estimate_in more = base[b];
            more.nranks = (int)n;
            int64_t t;
            least_ram(&more, activations, &t);
            if (t > budget || !least_change(&more, activations, budget, &in, &need))
                continue;
            char setting[400];
            describe(now, &in, need, setting, sizeof setting);
            len += (size_t)snprintf(first + len, len < cap ? cap - len : 0,
                                    "; on %lld ranks, those added on other hosts like this one: "
                                    "%s",
                                    (long long)n, setting);
            ranks = true;
        }
    if (activations > 0 && least - activations <= budget)
        snprintf(first + len, len < cap ? cap - len : 0,
                 "; the activations must shrink by %.2f GiB: lower the micro-batch or use "
                 "--activation-checkpointing (GPT-2)",
                 gib(least - budget));
    else if (!ranks)
        snprintf(first + len, len < cap ? cap - len : 0,
                 "; more ranks shrink only the model states, and without them it still needs "
                 "%.2f (working memory grows with the largest unit, activations with the "
                 "micro-batch)",
                 gib(least - states));
}

int64_t memory_check_rank_budget(zc_comm *comm, const zc_mem *mem, int param_bytes,
                                 memory_check_budget *b)
{
    b->where[0] = b->limit_where[0] = '\0';
    b->host = memory_check_host_budget(b->where, sizeof b->where);
    b->local = zc_comm_local_size(comm);
    /* OpenBLAS computes the products on the portable path (before VmSize is read: naming the
     * path may create a oneDNN primitive, which the run would create anyway) */
    const bool portable = strncmp(zc_gemm_path(ZC_GEMM_F32), "oneDNN", 6) ||
                          (param_bytes == 2 && strncmp(zc_gemm_path(ZC_GEMM_BF16), "oneDNN", 6));
    /* every compute thread may get a malloc arena, OpenMP's and OpenBLAS's alike: the two
     * counts differ when only one library's variable is set (OMP_NUM_THREADS=1 alone leaves
     * OpenBLAS the rank's share), and a thread's arena may or may not be mapped yet */
    const int omp = omp_get_max_threads(), ob = openblas_get_num_threads();
    const int threads = omp > ob ? omp : ob;
    /* OpenBLAS maps a buffer for each of its threads (measured: 142 MB more VmPeak with 2 than
     * with 1, GPT-2 4 × 256 bf16), its own on the portable path, its helpers' even when oneDNN
     * computes */
    const int blas = portable ? ob : ob - 1;
    /* what the estimate counts that is mapped already: the ledger's RAM categories */
    int64_t counted = 0;
    for (int c = 0; c < ZC_MEM_NRAM; c++)
        counted += zc_mem_get(mem, (zc_mem_category)c).current;
    b->room = limit_room(counted, threads, blas, b->limit_where, sizeof b->limit_where);
    const int64_t share = b->host < 0 ? -1 : b->host / b->local;
    b->limited = b->room >= 0 && (share < 0 || b->room < share);
    return b->budget = b->limited ? b->room : share;
}

int64_t memory_check_need(const zc_estimate_in *in, int64_t activations)
{
    return need_per_rank(in, activations);
}

zc_status memory_check(zc_comm *comm, const zc_engine *e, const zc_mem *mem, zc_err *err)
{
    int nunits = zc_engine_num_units(e);
    size_t *numel = malloc((size_t)nunits * 2 * sizeof *numel);
    uint8_t *use = malloc((size_t)nunits);
    memory_check_budget *rb = malloc(sizeof *rb);
    if (!numel || !use || !rb) {
        free(numel);
        free(use);
        free(rb);
        return zc_err_set(err, ZC_ENOMEM, "out of memory");
    }
    zc_estimate_in in = zc_engine_estimate_in(e, zc_engine_stage(e), numel, numel + nunits, use);
    const int64_t activations = zc_mem_get(mem, ZC_MEM_ACTIVATIONS).current;
    const int64_t need = need_per_rank(&in, activations);
    const int64_t budget = memory_check_rank_budget(comm, mem, in.param_bytes, rb);
    const int64_t host = rb->host, room = rb->room;
    const int local = rb->local;
    const bool limited = rb->limited;
    const char *where = rb->where, *limit_where = rb->limit_where;
    zc_status st = ZC_OK;
    if (budget >= 0 && need > budget) {
        zc_state_bytes b = zc_estimate_states(&in);
        char first[700], second[700], fits[1500], over[7000], msg[8000];
        fitting(&in, activations, budget, first, second, sizeof first);
        /* the second setting only where the message holds it whole */
        for (int settings = second[0] ? 2 : 1; settings >= 1; settings--) {
            snprintf(fits, sizeof fits, "%s%s%s", first, settings == 2 ? "; " : "",
                     settings == 2 ? second : "");
            if (limited)
                snprintf(over, sizeof over,
                         "but this process may map only %.2f GiB more (%s), so it would run out "
                         "partway (a segfault inside oneDNN, a hang inside OpenBLAS, or a save "
                         "that fails after training). Raise or remove the limit, or use settings "
                         "that fit: %s.",
                         gib(room), limit_where, fits);
            else
                snprintf(over, sizeof over,
                         "but this host can give %.2f GiB to each of its %d rank%s (%.2f GiB: "
                         "%s), so it would be killed or thrash. Settings that fit: %s.",
                         gib(budget), local, local == 1 ? "" : "s", gib(host), where, fits);
            snprintf(msg, sizeof msg,
                     "this run needs an estimated %.2f GiB per rank (model states %.2f, "
                     "activations %.2f, working memory and buffers up to %.2f) at ZeRO stage "
                     "%d%s, %s (--no-memory-check runs it anyway.)",
                     gib(need), gib(b.params + b.grads + b.optimizer), gib(activations),
                     gib(need - (b.params + b.grads + b.optimizer) - activations), in.stage,
                     in.offload_optimizer && in.offload_params ? " with both offloads"
                     : in.offload_optimizer                    ? " with the optimizer offloaded"
                     : in.offload_params                       ? " with the parameters offloaded"
                                                               : "",
                     over);
            if (strlen(msg) < sizeof err->msg)
                break;
        }
        st = zc_err_set(err, ZC_ENOMEM, "%s", msg);
    }
    free(numel);
    free(use);
    free(rb);
    return st;
}

void memory_check_explain_enomem(zc_status st, zc_err *err)
{
    if (st != ZC_ENOMEM)
        return;
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        struct rlimit rl;
        if (getrlimit(limits[i].resource, &rl) || rl.rlim_cur == RLIM_INFINITY)
            continue;
        size_t n = strlen(err->msg);
        snprintf(err->msg + n, sizeof err->msg - n,
                 " (this process runs under `%s` %.2f GiB: raise it, or lower the micro-batch "
                 "or use --activation-checkpointing)",
                 limits[i].ulimit, (double)rl.rlim_cur / (1 << 30));
        return;
    }
}
