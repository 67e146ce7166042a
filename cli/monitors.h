/* monitors.h — DeepSpeed's monitors on a zeroc run: `tensorboard` (event files), `csv_monitor`
 * (a CSV file per series), `wall_clock_breakdown` (each printed step's time by phase) and
 * `comms_logger` (per-collective counts, bytes and time). Rank 0 writes and prints them. */
#ifndef ZEROC_CLI_MONITORS_H
#define ZEROC_CLI_MONITORS_H

#include <stdint.h>

#include "cli/tfevents.h"
#include "zeroc/comm.h"
#include "zeroc/config.h"
#include "zeroc/status.h"

/* What one optimizer step measured, as train.c times it (ms, this rank). */
typedef struct {
    double step_ms;         /* the whole step: what the step line prints */
    double fwd_bwd_ms;      /* the model's forward + backward over the micro-steps */
    double fwd_bwd_comm_ms; /* of which in collectives (stage 3's gathers, reductions started) */
    double engine_ms;       /* zc_engine_step over the micro-steps: reduction, clipping, update */
    double engine_comm_ms;  /* of which in collectives */
    double gemm_ms;         /* in the models' matrix products (within fwd_bwd) */
    double disk_wait_ms; /* blocked on the swap files' I/O (NVMe offload), anywhere in the step */
} step_phases;

typedef struct {
    const zc_config *cfg;
    int rank;
    tfevents *tb;
    char csv_dir[4096];            /* "" unless csv_monitor writes */
    zc_comm_counters start;        /* the counters when training began (comms_logger) */
    zc_comm_counters prev;         /* the counters after the previous step (comms_logger verbose) */
    int64_t first_step, last_step; /* the steps the comms_logger summary covers, 1-based */
} monitors;

/* Rank 0 makes the monitors' directories and files and says where they are; not collective
 * (the caller agrees on the status). counters: the comm layer's, as training starts. */
zc_status monitors_open(monitors *m, const zc_config *cfg, int rank,
                        const zc_comm_counters *counters, zc_err *err);
/* After optimizer step s (0-based) with `samples` samples seen so far (DeepSpeed's x axis): the
 * scalars to tensorboard and csv_monitor; with wall_clock_breakdown the phase line on the steps
 * the step line prints (print true); with comms_logger.verbose this step's collectives. Rank 0;
 * an error is a file's. */
zc_status monitors_step(monitors *m, int s, int64_t samples, double loss, double lr,
                        double loss_scale, const step_phases *ph, bool print,
                        const zc_comm_counters *counters, zc_err *err);
/* comms_logger's summary of the run's collectives (rank 0), and the files closed. */
void monitors_close(monitors *m, const zc_comm_counters *counters);

#endif
