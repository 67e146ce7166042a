/* zeroc/config.h — the run configuration: DeepSpeed's JSON schema, validated key by key.
 *
 * One struct holds every setting; zc_config_defaults() is the single place defaults live.
 * A DeepSpeed ds_config.json either loads or is refused with the offending key's JSON path:
 * keys DeepSpeed knows that zeroc does not implement yet are refused as "not supported yet: KEY",
 * unknown keys as "unknown key: PATH" (at the top level DeepSpeed reads only the keys it knows, so
 * an unknown one there is ignored and named in `ignored` instead) — all of a file's refusals, and
 * when there are some, the conflicts between its keys, in one message. Command-line flags
 * are applied after the file with zc_config_set(), which takes the same dotted paths the file uses.
 * Every key, default and range is listed in docs/CONFIG.md.
 *
 *     zc_config cfg;
 *     zc_config_defaults(&cfg);
 *     if (zc_config_load_file(&cfg, "ds_config.json", &err)) ...      // file first
 *     if (zc_config_set(&cfg, "zero_optimization.stage", "3", &err)) ... // then flags
 *     if (zc_config_resolve_batch(&cfg, world_size, &err)) ...   // derive, then validate
 *     char *json = zc_config_to_json(&cfg);  // effective configuration, for rank 0 to print
 */
#ifndef ZEROC_CONFIG_H
#define ZEROC_CONFIG_H

#include "zeroc/api.h"

#include <stdbool.h>
#include <stdint.h>

#include "zeroc/dtype.h"
#include "zeroc/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* optimizer.type. ADAMW8BIT ("AdamW8bit", a zeroc type: DeepSpeed has none) is AdamW with its
 * moments kept blockwise in 8 bits (zc_adam8_update): 2 bytes per parameter and a scale per
 * block instead of 8 bytes; opt-in only. */
typedef enum { ZC_OPTIM_ADAMW = 0, ZC_OPTIM_ADAM, ZC_OPTIM_SGD, ZC_OPTIM_ADAMW8BIT } zc_optim_type;

/* offload_optimizer.device / offload_param.device. On a CPU machine the states already live in
 * RAM, so "cpu" is accepted and changes nothing; "nvme" puts them in swap files on disk. */
typedef enum { ZC_OFFLOAD_NONE = 0, ZC_OFFLOAD_CPU, ZC_OFFLOAD_NVME } zc_offload_device;

/* aio.engine (a zeroc key): how swap-file I/O is done. AUTO takes io_uring when the kernel
 * allows it, else the thread pool. */
typedef enum { ZC_AIO_AUTO = 0, ZC_AIO_URING, ZC_AIO_THREADS } zc_aio_engine;

/* scheduler.type: DeepSpeed's learning-rate schedules (zeroc/lr_schedule.h), all five.
 * NONE: the file has no scheduler (the trainer's own --warmup / --lr-schedule apply). */
typedef enum {
    ZC_SCHED_NONE = 0,
    ZC_SCHED_WARMUP_LR,
    ZC_SCHED_WARMUP_DECAY_LR,
    ZC_SCHED_WARMUP_COSINE_LR,
    ZC_SCHED_ONE_CYCLE,
    ZC_SCHED_LR_RANGE_TEST
} zc_sched_type;

/* scheduler.params.warmup_type: how the warmup rises from warmup_min_lr to warmup_max_lr. */
typedef enum { ZC_WARMUP_LOG = 0, ZC_WARMUP_LINEAR } zc_warmup_type;

#define ZC_MAX_PATH 1024  /* bytes of a path in the configuration, with its NUL */
#define ZC_ORIGIN_LEN 160 /* bytes of a value's origin (a file name, cut) with its NUL */
#define ZC_AUTO (-1)      /* an integer key given as "auto": zeroc chooses (documented per key) */
/* DeepSpeed's offload_param.max_in_cpu default: parameter elements kept in RAM */
#define ZC_MAX_IN_CPU_DEFAULT ((int64_t)1000000000)
#define ZC_WARMUP_MAX_LR 0.001 /* DeepSpeed's scheduler.params.warmup_max_lr when not given */

typedef struct {
    /* batch */
    int64_t train_batch_size; /* 0 = derived: micro × accumulation × world size */
    int micro_batch;          /* train_micro_batch_size_per_gpu */
    int grad_accum;           /* gradient_accumulation_steps */
    bool micro_batch_set;     /* micro_batch was given (file or flag), not defaulted */
    bool grad_accum_set;      /* grad_accum was given (file or flag), not defaulted */
    /* where each batch value came from, for messages: the config file's name, "command line"
     * (zc_config_set) or "derived"; empty: the default */
    char origin_train_batch[ZC_ORIGIN_LEN], origin_micro_batch[ZC_ORIGIN_LEN],
        origin_grad_accum[ZC_ORIGIN_LEN];
    double grad_clip; /* gradient_clipping; 0 = off */
    /* optimizer */
    zc_optim_type optim; /* optimizer.type: AdamW | Adam | SGD */
    double lr, beta1, beta2, eps, weight_decay, momentum;
    bool adam_w_mode;     /* optimizer.params.adam_w_mode (Adam only) */
    bool bias_correction; /* optimizer.params.bias_correction (Adam, AdamW) */
    bool compact_master;  /* optimizer.params.compact_master (Adam(W), AdamW8bit; bf16): the fp32
                           * master kept as the bf16 weights plus 16-bit remainders */
    /* scheduler: DeepSpeed's WarmupLR / WarmupDecayLR, with DeepSpeed's defaults */
    zc_sched_type sched;        /* scheduler.type */
    double warmup_min_lr;       /* scheduler.params.warmup_min_lr */
    double warmup_max_lr;       /* .warmup_max_lr; NAN: not given (DeepSpeed's default,
                                 * ZC_WARMUP_MAX_LR, whatever optimizer.params.lr is),
                                 * ZC_AUTO: optimizer.params.lr */
    int64_t warmup_num_steps;   /* .warmup_num_steps; a file's "auto": 0 (--warmup's default) */
    int64_t total_num_steps;    /* .total_num_steps (WarmupDecayLR); 0: the run's steps */
    zc_warmup_type warmup_type; /* .warmup_type */
    double warmup_min_ratio;    /* .warmup_min_ratio (WarmupCosineLR): the warmup's start,
                                 * a fraction of optimizer.params.lr */
    double cos_min_ratio;       /* .cos_min_ratio (WarmupCosineLR): the cosine's end, likewise */
    double cycle_min_lr, cycle_max_lr; /* OneCycle's bounds; NAN: not given (required) */
    double decay_lr_rate;              /* OneCycle: lr ÷ (1 + rate · decay intervals) after it */
    int64_t cycle_first_step_size;     /* OneCycle: steps of the rising half */
    int64_t cycle_second_step_size;    /* OneCycle: of the falling half; 0: the first's */
    int64_t decay_step_size;           /* OneCycle: steps per decay interval; 0: no decay */
    bool cycle_momentum;               /* OneCycle: cycle beta1 too (refused but under SGD) */
    double lr_range_test_min_lr;       /* LRRangeTest: the start */
    int64_t lr_range_test_step_size;   /* LRRangeTest: steps per interval */
    double lr_range_test_step_rate;    /* LRRangeTest: growth per interval */
    bool lr_range_test_staircase;      /* LRRangeTest: whole intervals only */
    /* ZeRO */
    int stage;                    /* zero_optimization.stage: 0..3 */
    int64_t reduce_bucket_size;   /* elements per reduce-scatter chunk; 0: a unit's
                                   * gradients in one piece (DeepSpeed accepts 0) */
    bool quantized_weights;       /* zero_optimization.zero_quantized_weights (ZeRO++
                                   * qwZ, stage 3): parameter all-gathers in int8 blocks */
    bool quantized_gradients;     /* .zero_quantized_gradients (ZeRO++ qgZ, stage 3):
                                   * gradient reduce-scatters in int8 blocks */
    int hpz_partition_size;       /* .zero_hpz_partition_size (ZeRO++ hpZ, stage 3):
                                   * ranks (consecutive, a host's) that share a secondary
                                   * copy of the parameters; 1: none */
    bool overlap_comm;            /* zero_optimization.overlap_comm: reduce-scatters run
                                   * behind the backward pass; false: each is waited for */
    int64_t prefetch_bucket_size; /* stage3_prefetch_bucket_size: elements prefetched ahead;
                                   * ZC_AUTO (the default, or "auto"): the largest unit */
    int64_t max_live_parameters;  /* stage3_max_live_parameters: elements gathered at once */
    /* Stage 3: a unit of fewer elements than stage3_param_persistence_threshold (ZC_AUTO:
     * ZC_PERSISTENCE_AUTO, zeroc/estimate.h) stays whole on every rank (never gathered), as long
     * as the persistent units hold at most stage3_model_persistence_threshold elements in all
     * (registration order). */
    int64_t param_persistence_threshold, model_persistence_threshold;
    /* precision */
    zc_dtype dtype;                  /* bf16.enabled / fp16.enabled: stored params and grads */
    bool fp16_enabled, bf16_enabled; /* those keys as given (dtype follows them); both true is
                                      * refused by zc_config_validate */
    zc_dtype comm_dtype;             /* communication_data_type (DEFAULT: dtype) */
    zc_dtype grad_accum_dtype;       /* data_types.grad_accum_dtype (DEFAULT: dtype) */
    double loss_scale;               /* fp16.loss_scale: 0 = dynamic */
    int initial_scale_power;         /* fp16.initial_scale_power: dynamic start 2^power */
    int loss_scale_window;           /* fp16.loss_scale_window: clean steps before ×2 */
    int hysteresis;                  /* fp16.hysteresis: overflows tolerated before ÷2 */
    bool consecutive_hysteresis;     /* fp16.consecutive_hysteresis */
    double min_loss_scale;           /* fp16.min_loss_scale */
    /* offload to NVMe (ZeRO-Infinity): zero_optimization.offload_optimizer / offload_param */
    zc_offload_device offload_optimizer;   /* .device */
    char optimizer_nvme_path[ZC_MAX_PATH]; /* .nvme_path: directory of the swap files */
    int optimizer_buffer_count;            /* .buffer_count: sub-group slots streamed through RAM */
    bool optimizer_pin_memory;             /* .pin_memory: lock the slots in RAM (mlock) */
    double optimizer_ratio; /* .ratio: share of the optimizer state on disk; ZC_AUTO ("auto",
                               zeroc's): the least share that lets the rest fit in RAM, sized by
                               `zeroc train` from the host's free memory (the engine alone: 1) */
    bool pipeline_read, pipeline_write; /* .pipeline_read / .pipeline_write: overlap the
                                         * sub-group reads / writes with the update */
    bool fold_update; /* .fold_update (zeroc's): at stage 3, each unit's update waits for the next
                       * forward's gather of it (zc_engine_finish_update) */
    zc_offload_device offload_param;   /* .device (stage 3) */
    char param_nvme_path[ZC_MAX_PATH]; /* .nvme_path */
    int param_buffer_count;            /* .buffer_count: shard reads ahead at most */
    int64_t param_buffer_size;         /* .buffer_size: elements read ahead at most */
    int64_t max_in_cpu;     /* .max_in_cpu: parameter elements kept in RAM; ZC_AUTO ("auto",
                               zeroc's): as many as fit, sized by `zeroc train` from the host's free
                               memory (the engine alone: DeepSpeed's default 1e9) */
    bool param_pin_memory;  /* .pin_memory */
    int64_t sub_group_size; /* zero_optimization.sub_group_size: elements */
    /* aio: the swap files' I/O */
    int64_t aio_block_size;   /* bytes per request, a multiple of 4096 */
    int aio_queue_depth;      /* requests in flight */
    int aio_thread_count;     /* threads of the thread-pool engine */
    bool aio_single_submit;   /* submit requests one at a time */
    bool aio_overlap_events;  /* submit new requests while earlier ones complete */
    zc_aio_engine aio_engine; /* aio.engine (zeroc's key) */
    /* run */
    uint64_t seed;
    double comm_timeout_s; /* zeroc extension: collective wait limit, seconds */
    int steps_per_print;
    /* the activation_checkpointing section is present: the model keeps only each block's input
     * and recomputes the block in backward (its knobs tune GPU memory and change nothing) */
    bool activation_checkpointing;
    /* monitors, as DeepSpeed names them; rank 0 writes them during training (cli/monitors.c) */
    bool tensorboard;                          /* tensorboard.enabled: event files */
    char tensorboard_output_path[ZC_MAX_PATH]; /* tensorboard.output_path ("": the working dir) */
    char tensorboard_job_name[ZC_MAX_PATH];    /* tensorboard.job_name: a directory in it */
    bool csv_monitor;                          /* csv_monitor.enabled: a CSV file per series */
    char csv_output_path[ZC_MAX_PATH];         /* csv_monitor.output_path */
    char csv_job_name[ZC_MAX_PATH];            /* csv_monitor.job_name */
    bool wall_clock_breakdown;                 /* each printed step's time split by phase */
    bool comms_logger;                         /* comms_logger.enabled: per-collective table */
    bool comms_verbose;                        /* comms_logger.verbose: a table every step */
    bool comms_prof_all;                       /* comms_logger.prof_all: every collective */
    char comms_prof_ops[ZC_MAX_PATH];          /* comms_logger.prof_ops: the ones named, joined by
                                                * ","; read when prof_all is false */
    /* LoRA fine-tuning (a zeroc section named after PEFT's LoraConfig; DeepSpeed has none): the
     * model's base frozen, adapters of rank lora_r trained (0: every parameter trained) */
    int64_t lora_r;                        /* lora.r */
    double lora_alpha;                     /* lora.lora_alpha (PEFT's default 8) */
    double lora_dropout;                   /* lora.lora_dropout */
    char lora_target_modules[ZC_MAX_PATH]; /* lora.target_modules joined by "," ("": PEFT's
                                            * default for the model's family) */
    char lora_bias[ZC_MAX_PATH];           /* lora.bias: "none" (or ""), the only one */
    /* DeepSpeed keys the file gave that change nothing here (GPU-memory knobs and the like),
     * "path (why)" joined by "; ", for the log; not part of the effective configuration */
    char no_effect[2048];
    /* keys the file gave that act only on an offload to NVMe (sub_group_size, the offload
     * sections' knobs, the aio section), joined by ", ": zc_config_resolve_batch lists them in
     * no_effect when neither device is nvme */
    char nvme_only[1024];
    /* keys the file gave as "auto" (the Hugging Face Trainer's placeholder), joined by "; ":
     * each keeps zeroc's default unless a command-line flag sets it */
    char auto_keys[1024];
    /* top-level keys the file gave that neither zeroc nor DeepSpeed reads (DeepSpeed ignores an
     * unknown top-level key), joined by ", ", for the log */
    char ignored[1024];
} zc_config;

/* The defaults, in one place (documented in docs/CONFIG.md). */
ZC_API void zc_config_defaults(zc_config *cfg);

/* Reads a JSON file over the current values; keys not in the file keep theirs. On error cfg is
 * unchanged. */
ZC_API zc_status zc_config_load_file(zc_config *cfg, const char *path, zc_err *err);

/* Same, from a string; `origin` names the source in messages (e.g. a file name; NULL: "config"). */
ZC_API zc_status zc_config_load_string(zc_config *cfg, const char *json, const char *origin,
                                       zc_err *err);

/* Sets one key by its dotted JSON path, e.g. ("optimizer.params.lr", "1e-3"); the string is parsed
 * by the key's type ("0.9,0.95" for optimizer.params.betas, true/false for booleans). On error
 * cfg is unchanged and the message starts with "command line: ". */
ZC_API zc_status zc_config_set(zc_config *cfg, const char *path, const char *value, zc_err *err);

/* Checks ranges and cross-key consistency (train_batch_size vs micro × accum × world_size). */
ZC_API zc_status zc_config_validate(const zc_config *cfg, int world_size, zc_err *err);

/* Completes the batch triple the way DeepSpeed does, then validates. With train_batch_size set,
 * whichever of micro_batch / grad_accum was not given is derived from it (micro first, as
 * DeepSpeed); with train_batch_size 0 it becomes micro × accum × world_size. The derivation must
 * divide exactly. On error cfg is unchanged. Call it last, once the flags are applied: it also
 * lists in no_effect what changes nothing in the final configuration (cfg->nvme_only when no
 * device is nvme; optimizer.params.lr beside a scheduler without warmup_max_lr). */
ZC_API zc_status zc_config_resolve_batch(zc_config *cfg, int world_size, zc_err *err);

/* The effective configuration as DeepSpeed-style JSON that zc_config_load_string reads back to
 * the same values; train_batch_size is left out while it is 0 (not derived yet). malloc'd,
 * caller frees; NULL if out of memory. */
ZC_API char *zc_config_to_json(const zc_config *cfg);

/* scheduler.params.warmup_max_lr as it applies: the number given, optimizer.params.lr for
 * "auto", and DeepSpeed's default ZC_WARMUP_MAX_LR (0.001) when not given, for both types:
 * DeepSpeed builds the scheduler from its params alone, so optimizer.params.lr plays no part. */
ZC_API double zc_config_warmup_max_lr(const zc_config *cfg);

/* scheduler.type's name: "WarmupLR", "WarmupDecayLR", "WarmupCosineLR", "OneCycle",
 * "LRRangeTest"; "none" for ZC_SCHED_NONE. */
ZC_API const char *zc_sched_name(zc_sched_type t);

/* "AdamW", "Adam", "SGD". */
ZC_API const char *zc_optim_name(zc_optim_type t);

/* The effective communication / gradient-accumulation types (DEFAULT resolved to cfg->dtype). */
ZC_API zc_dtype zc_config_comm_dtype(const zc_config *cfg);
ZC_API zc_dtype zc_config_grad_dtype(const zc_config *cfg);
/* Whether stages 0–1 send the stored gradients as they are in their reduce-scatter: the
 * communication type is the stored gradients' and no fp16 loss scale has to be taken off fp32
 * gradients on the way. Then the ranks' blocks go from the gradients in place, and no send
 * staging is allocated. */
ZC_API bool zc_config_grads_sent_as_stored(const zc_config *cfg);
/* Whether the stored gradients are bf16 and never carry a loss scale (not fp16): then a model
 * may write them in 16 bits itself (zc_engine_grad16), the same bits the engine would round. */
ZC_API bool zc_config_grads_bf16(const zc_config *cfg);

#ifdef __cplusplus
}
#endif

#endif
