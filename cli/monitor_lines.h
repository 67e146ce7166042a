/* monitor_lines.h — the printed monitors: wall_clock_breakdown's phase line and comms_logger's
 * per-collective table (cli/monitors.c calls them on rank 0). */
#ifndef ZEROC_CLI_MONITOR_LINES_H
#define ZEROC_CLI_MONITOR_LINES_H

#include "cli/monitors.h"

/* "time (ms) step N | forward+backward … | engine step … | other … | step …" */
void monitor_print_phases(int step, const step_phases *ph);
/* Each collective comms_logger profiles (prof_all, or those named in prof_ops) with calls,
 * MiB sent and ms in its calls between counters a and b; title names what they cover. */
void monitor_print_comms(const zc_config *cfg, const char *title, const zc_comm_counters *a,
                         const zc_comm_counters *b);
/* Whether comms_logger.prof_ops names an op zeroc runs (DeepSpeed's spellings accepted); an
 * unknown name is none of zeroc's collectives, and so never printed. */
bool monitor_op_profiled(const zc_config *cfg, zc_comm_op op);

#endif
