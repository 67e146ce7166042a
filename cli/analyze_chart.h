/* analyze_chart.h — the measurements `zeroc analyze` collects, and their CSV and SVG forms. */
#ifndef ZEROC_CLI_ANALYZE_CHART_H
#define ZEROC_CLI_ANALYZE_CHART_H

#include <stdint.h>

#include "zeroc/mem.h"
#include "zeroc/status.h"

enum { CP_MODEL, CP_OPTIMIZER, CP_DATA, CP_FORWARD, CP_BACKWARD, CP_STEP, CP_N };
/* The ledger categories the experiment shows: RAM without the offload buffers (it offloads
 * nothing). */
enum { ANALYZE_NCAT = ZC_MEM_ACTIVATIONS + 1 };
extern const char *const analyze_checkpoint_names[CP_N];

/* One rank's ledger in one stage: bytes per category at each checkpoint (first step), the
 * peaks over the run, and the process's peak RSS. Gathered to rank 0 as raw int64s. */
typedef struct {
    int64_t at[CP_N][ANALYZE_NCAT];
    int64_t peak[ANALYZE_NCAT];
    int64_t states_peak, peak_rss;
} analyze_rank;

typedef struct {
    int stage;
    int64_t est_states, est_activations, est_staging, est_working_bound;
    double ms_per_step;
    const analyze_rank *ranks; /* nranks */
} analyze_stage;

zc_status analyze_write_csv(const char *path, const analyze_stage *st, int nstages, int nranks,
                            zc_err *err);
/* Grouped, stacked bars: one bar per stage (rank 0's peak per category), the estimate marked. */
zc_status analyze_write_svg(const char *path, const char *title, const analyze_stage *st,
                            int nstages, zc_err *err);

#endif
