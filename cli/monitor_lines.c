/* monitor_lines.c — what wall_clock_breakdown and comms_logger print. zeroc's model runs forward
 * and backward in one call and the engine's step does the reduction and the update, so the
 * breakdown names those parts as measured rather than DeepSpeed's forward/backward/allreduce
 * timers; the collectives' time is the comm layer's (time in each op's calls and waits). */
#include "cli/monitor_lines.h"

#include <stdio.h>
#include <string.h>

static const char *const OP_NAMES[ZC_COMM_NOPS] = {
    [ZC_COMM_REDUCE_SCATTER] = "reduce_scatter",
    [ZC_COMM_ALL_GATHER] = "all_gather",
    [ZC_COMM_ALL_REDUCE] = "all_reduce",
    [ZC_COMM_BROADCAST] = "broadcast",
    [ZC_COMM_CONTROL] = "control",
};

void monitor_print_phases(int step, const step_phases *ph)
{
    const double other = ph->step_ms - ph->fwd_bwd_ms - ph->engine_ms;
    printf("time (ms) step %d | forward+backward: %.2f (gemm %.2f, collectives %.2f) | engine "
           "step: %.2f (collectives %.2f) | other: %.2f | step: %.2f | disk wait: %.2f\n",
           step, ph->fwd_bwd_ms, ph->gemm_ms, ph->fwd_bwd_comm_ms, ph->engine_ms,
           ph->engine_comm_ms, other > 0 ? other : 0.0, ph->step_ms, ph->disk_wait_ms);
}

/* DeepSpeed's op names (torch.distributed's) for zeroc's collectives */
static bool names_op(const char *name, size_t n, zc_comm_op op)
{
    static const struct {
        const char *name;
        zc_comm_op op;
    } ALIASES[] = {
        {"reduce_scatter_tensor", ZC_COMM_REDUCE_SCATTER},
        {"reduce_scatter_base", ZC_COMM_REDUCE_SCATTER},
        {"reduce_scatter_fn", ZC_COMM_REDUCE_SCATTER},
        {"all_gather_into_tensor", ZC_COMM_ALL_GATHER},
        {"all_gather_base", ZC_COMM_ALL_GATHER},
        {"allgather_fn", ZC_COMM_ALL_GATHER},
        {"inference_all_reduce", ZC_COMM_ALL_REDUCE},
    };
    if (strlen(OP_NAMES[op]) == n && strncmp(name, OP_NAMES[op], n) == 0)
        return true;
    for (size_t i = 0; i < sizeof ALIASES / sizeof ALIASES[0]; i++)
        if (ALIASES[i].op == op && strlen(ALIASES[i].name) == n &&
            strncmp(name, ALIASES[i].name, n) == 0)
            return true;
    return false;
}

bool monitor_op_profiled(const zc_config *cfg, zc_comm_op op)
{
    if (cfg->comms_prof_all)
        return true;
    for (const char *p = cfg->comms_prof_ops; *p;) {
        size_t n = strcspn(p, ",");
        if (names_op(p, n, op))
            return true;
        p += n + (p[n] == ',');
    }
    return false;
}

void monitor_print_comms(const zc_config *cfg, const char *title, const zc_comm_counters *a,
                         const zc_comm_counters *b)
{
    printf("comms_logger (rank 0, %s):\n", title);
    printf("  %-16s %10s %14s %12s %10s\n", "op", "count", "MiB sent", "total ms", "avg ms");
    for (int op = 0; op < ZC_COMM_NOPS; op++) {
        if (!monitor_op_profiled(cfg, (zc_comm_op)op))
            continue;
        const long long calls = (long long)(b->calls[op] - a->calls[op]);
        const double ms = 1e3 * (b->seconds[op] - a->seconds[op]);
        printf("  %-16s %10lld %14.3f %12.3f %10.3f\n", OP_NAMES[op], calls,
               (double)(b->bytes[op] - a->bytes[op]) / (1024.0 * 1024.0), ms,
               calls ? ms / (double)calls : 0.0);
    }
}
