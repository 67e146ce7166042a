/* train_report.h — what `zeroc train` measures about a run, and the JSON report rank 0 writes
 * (format in docs/REPORT.md). */
#ifndef ZEROC_CLI_TRAIN_REPORT_H
#define ZEROC_CLI_TRAIN_REPORT_H

#include <stdint.h>

#include "zeroc/status.h"

/* One rank's memory, bytes; gathered to rank 0 in this order. */
typedef struct {
    int64_t params, grads, optimizer, comm, working_peak, activations_peak, model_states_peak,
        peak_rss, offload_peak, nvme;
} rank_memory;

/* Rank 0's disk traffic in one step (offload to NVMe): bytes, ms blocked on the disk, and the
 * update phase's time and bytes (the optimizer state streamed through RAM). */
typedef struct {
    double read, written, wait_ms, update_ms, update_read, update_written;
    double buffers_mapped; /* parameter-read and gradient-staging buffers mapped in the step */
    double param_read;     /* stage-3 parameter shards read from disk (reads started in the step) */
    double shards_from_update;   /* folded update: gathers fed by the update, not a disk read */
    double updates_in_backward;  /* folded into the backward: units updated there */
    double shards_read_in_place; /* gathers that read their shard straight into their buffer */
} disk_step;

typedef struct {
    const char *model;
    int world_size, stage, first_step, steps; /* steps run: first_step … first_step+steps−1 */
    int64_t params;                           /* Ψ, unpadded */
    int64_t params_padded;                    /* Σ padded unit sizes */
    const double *loss;                       /* per step */
    const double *grad_norm;                  /* per step */
    const double *lr;                         /* per step: the learning rate the step applied */
    const double *step_ms;                    /* per step */
    const double *loss_scale; /* per step: the fp16 loss scale its gradients carried (1 else) */
    const double *prefetch_hits, *prefetch_misses; /* stage 3 (else NULL), per step */
    const double *gemm_ms;  /* per step: rank 0's time in the models' matrix products */
    const double *val_loss; /* per step: the validation loss, NaN where none ran */
    const double *val_ms;   /* per step: rank 0's wall time in it, NaN where none ran */
    const char *gemm_path_fp32, *gemm_path_bf16;
    const char *simd; /* the elementwise kernels' vector level (zeroc/simd.h) */
    const char *dtype, *grad_dtype, *comm_dtype; /* "fp32", "bf16", "fp16" */
    int64_t skipped_steps; /* fp16: steps skipped on overflow, whole run (incl. resumed) */
    char initial_sha[65], final_sha[65];
    const rank_memory *ranks;                           /* world_size entries */
    int64_t stage0_states;                              /* what stage 0 would hold per rank */
    double rs_bytes, ag_bytes, ar_bytes, control_bytes; /* per step, rank 0 */
    double rs_inter, ag_inter, ar_inter;                /* of those, sent to ranks on other hosts */
    double tokens_per_step;                             /* 0 when not a language model */
    /* offload (NULL when nothing lives on disk): rank 0's disk traffic per step */
    const disk_step *disk; /* per step */
    const char *aio_engine;
    int64_t param_elems_on_disk, param_elems_in_ram; /* rank 0's parameter shards (stage 3) */
} train_report;

/* Writes the report to path (through a temporary file and a rename). */
zc_status train_report_write(const train_report *r, const char *path, zc_err *err);

#endif
