/* config.c — reads DeepSpeed's JSON schema into zc_config and refuses whatever it cannot honour.
 *
 * Everything about a key lives in one row of KEYS below: its dotted path, its type, its range and
 * the struct field it fills. The file loader, zc_config_set and zc_config_validate all walk that
 * one table, so a key cannot be accepted through one door and refused through another, and every
 * message names the key by the path the user wrote. Keys DeepSpeed knows but zeroc does not
 * implement are rows too (K_REFUSED): skipping "scheduler" silently would train something other
 * than what the user asked for, so such keys are refused by name instead.
 *
 * cJSON turns every number into a double, which would round a 20-digit seed. So the loader also
 * keeps each number's text as written (paired with the parsed nodes by document order), reads
 * integers exactly from that text (5e8 is the integer 500000000, 2.5 is not an integer), and
 * quotes that text in messages: "got -0.001" shows what is in the file, not a reprinted double.
 *
 * A file is read to its end even when something in it is refused: every unknown or duplicate
 * key, bad value and key for what zeroc lacks is collected, and the one message names them all,
 * so that one edit makes the file run (a flag is refused at once: it is one value). Loads and sets
 * work on a copy that is committed only on success, so a refused file or flag leaves the caller's
 * configuration as it was. Nothing here prints: what the log should say (keys that change nothing
 * here, "auto" keys) is left in the configuration's no_effect and auto_keys.
 */
#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "util/json_strict.h"
#include "zeroc/config.h"

/* ---------------------------------------------------------------------------------------------
 * The key table
 * ------------------------------------------------------------------------------------------- */

typedef enum {
    K_SECTION,   /* an object whose members are rows of their own */
    K_REFUSED,   /* DeepSpeed has it, zeroc does not (yet): "not supported yet: KEY" */
    K_INT,       /* integer in imin..imax, into an int field */
    K_I64,       /* integer in imin..imax, into an int64_t field */
    K_U64,       /* integer 0..2^64-1, into a uint64_t field */
    K_NUM,       /* finite number in the range lo/hi, into a double field */
    K_BOOL,      /* true/false, into a bool field (or accepted and ignored: has_field false) */
    K_FIXED,     /* true/false, accepted only when it equals `fixed`: what zeroc always does */
    K_EQUAL,     /* number, accepted only when it equals `only`: what zeroc always does */
    K_OPTIM,     /* optimizer.type */
    K_BETAS,     /* optimizer.params.betas: two numbers in [0, 1) */
    K_PRECISION, /* true/false into a bool field, and dtype follows: true = `dt`, false undoes */
    K_DTYPE,     /* "fp32" | "bf16" | "fp16" (any letter case; R_DTNAMES: DeepSpeed's other
                  * names too) or null (ZC_DTYPE_DEFAULT) */
    K_STR,       /* a string (null: "") into a char[ZC_MAX_PATH] field; empty means unset */
    K_DEVICE,    /* "none" | "cpu" | "nvme" (any letter case), into a zc_offload_device field */
    K_ENGINE,    /* "auto" | "io_uring" | "threads" (any letter case), into a zc_aio_engine field */
    K_SCHED,     /* scheduler.type: DeepSpeed's five names, into a zc_sched_type field */
    K_WARMUP,    /* "log" | "linear" (any letter case), into a zc_warmup_type field */
    K_CPU_OFFLOAD, /* DeepSpeed's deprecated true/false for an offload section: true is device
                    * cpu, false none, into a zc_offload_device field */
    K_NAMES,       /* an array of strings (command line: joined by ","), joined by "," into a
                    * char[ZC_MAX_PATH] field */
    K_MONITOR,     /* a monitor's section (tensorboard, wandb, ...): accepted while its `enabled`
                    * is false or absent (DeepSpeed's default), its members then unread; `enabled`
                    * true is refused, `why` saying what zeroc has instead */
} key_kind;

enum {
    R_INTERVAL = 1u << 0,  /* range messages read "expected an integer 0..3, got 4" */
    R_LO_OPEN = 1u << 1,   /* K_NUM: value > lo instead of >= lo */
    R_HI_OPEN = 1u << 2,   /* K_NUM: value < hi instead of <= hi */
    R_LATER = 1u << 3,     /* K_FIXED: other values are "not supported yet" (not "never") */
    R_MICRO = 1u << 4,     /* setting it records micro_batch_set */
    R_ACCUM = 1u << 5,     /* setting it records grad_accum_set */
    R_UNSET0 = 1u << 6,    /* 0 in the struct means "derive"; a file or flag cannot say 0 */
    R_AUTO = 1u << 7,      /* K_I64/K_NUM: the string "auto" is accepted, as ZC_AUTO (zeroc
                            * chooses); a K_NUM field may also hold NAN (not given) */
    R_NOEFFECT = 1u << 8,  /* K_BOOL/K_I64 without a field: a DeepSpeed knob that changes nothing
                            * here (`why` says why); accepted and listed in cfg->no_effect */
    R_PRESENT = 1u << 9,   /* K_SECTION with a bool field: giving the section sets it true */
    R_LEGACY = 1u << 10,   /* K_SECTION zero_optimization: DeepSpeed's legacy `true` / `false`
                            * (stage 1 / stage 0) */
    R_NVME = 1u << 11,     /* acts only on an offload to NVMe: giving it lists it in
                            * cfg->nvme_only (zc_config_resolve_batch names it in no_effect when
                            * neither device is nvme); for a section, the whole section */
    R_AUTO0 = 1u << 12,    /* K_I64: a file's "auto" is 0, the default of the flag that sets
                            * the key (warmup_num_steps: --warmup) */
    R_DTNAMES = 1u << 13,  /* K_DTYPE: DeepSpeed's DtypeEnum names are accepted too */
    R_NANUNSET = 1u << 14, /* K_NUM: NAN in the field means not given (a required key) */
    R_ONE_NAME = 1u << 16, /* K_NAMES: a file's single string is accepted too (PEFT's
                            * target_modules: a list of names, or "all-linear") */
    R_SIZED = 1u << 15,    /* with R_AUTO: "auto" is zeroc's, sized by `zeroc train` at start
                            * and said there, not one of the Trainer's placeholders */
};

typedef struct {
    const char *path; /* dotted JSON path */
    key_kind kind;
    bool has_field;
    size_t off; /* offsetof(zc_config, field) when has_field */
    int64_t imin, imax;
    int64_t multiple; /* K_INT/K_I64: when not 0, the value must be a multiple of it */
    double lo, hi;
    unsigned flags;
    bool fixed;           /* K_FIXED: the one accepted value */
    double only;          /* K_EQUAL: the one accepted value */
    const char *why;      /* K_FIXED/K_EQUAL: what zeroc does instead; R_NOEFFECT: why it
                           * changes nothing */
    zc_dtype dt;          /* K_PRECISION: the type `true` selects */
    unsigned scheds;      /* scheduler.params.*: the zc_sched_type values (bits 1 << type) whose
                           * DeepSpeed constructor takes it; another type's is refused, as
                           * DeepSpeed's fails on an unexpected keyword argument */
    const char *alias_of; /* this path is another name for that one; giving both is a duplicate
                           * ("bfloat16" is DeepSpeed's old name for "bf16") */
} key_spec;

/* The key table is laid out by hand, a row to a key (clang-format would put a field to a line). */
// clang-format off
/* The _Generic fails to compile when the row's kind and the field's C type disagree. */
#define FIELD(f, T) \
    .has_field = true, .off = _Generic(((zc_config *)0)->f, T: offsetof(zc_config, f))
/* A K_STR field: the pointer to the array keeps its size, so a char * or a shorter array fails. */
#define FIELD_STR(f)                                                                         \
    .has_field = true,                                                                       \
    .off = _Generic(&((zc_config *)0)->f, char(*)[ZC_MAX_PATH]: offsetof(zc_config, f))
#define REFUSED(p) {.path = p, .kind = K_REFUSED}
/* scheduler.params.*: the types that take the param */
#define S_WARM ((1u << ZC_SCHED_WARMUP_LR) | (1u << ZC_SCHED_WARMUP_DECAY_LR))
#define S_DECAY (1u << ZC_SCHED_WARMUP_DECAY_LR)
#define S_COS (1u << ZC_SCHED_WARMUP_COSINE_LR)
#define S_ONE (1u << ZC_SCHED_ONE_CYCLE)
#define S_RANGE (1u << ZC_SCHED_LR_RANGE_TEST)
#define S_ALL (S_WARM | S_COS | S_ONE | S_RANGE)
#define MOM_UNUSED "zeroc cycles no momentum: cycle_momentum is false, or the optimizer is SGD, " \
                   "which DeepSpeed's OneCycle leaves alone too"
/* fp16's loss-scale keys under a bf16 section: accepted, and listed as changing nothing */
#define BF16_NOSCALE "bf16 has fp32's range and uses no loss scale"
#define BF16_SCALE_KEYS(s)                                                                     \
    {.path = s ".loss_scale", .kind = K_NUM, .lo = 0, .hi = INFINITY, .flags = R_NOEFFECT,      \
     .why = BF16_NOSCALE},                                                                     \
    {.path = s ".initial_scale_power", .kind = K_I64, .imin = 0, .imax = INT64_MAX,            \
     .flags = R_NOEFFECT, .why = BF16_NOSCALE},                                                \
    {.path = s ".loss_scale_window", .kind = K_I64, .imin = 0, .imax = INT64_MAX,              \
     .flags = R_NOEFFECT, .why = BF16_NOSCALE},                                                \
    {.path = s ".hysteresis", .kind = K_I64, .imin = 0, .imax = INT64_MAX, .flags = R_NOEFFECT, \
     .why = BF16_NOSCALE},                                                                     \
    {.path = s ".consecutive_hysteresis", .kind = K_BOOL, .flags = R_NOEFFECT,                 \
     .why = BF16_NOSCALE},                                                                     \
    {.path = s ".min_loss_scale", .kind = K_NUM, .lo = 0, .hi = INFINITY, .flags = R_NOEFFECT,  \
     .why = BF16_NOSCALE}

static const key_spec KEYS[] = {
    /* batch and run */
    {.path = "train_batch_size", .kind = K_I64, FIELD(train_batch_size, int64_t), .imin = 1,
     .imax = INT64_MAX, .flags = R_UNSET0},
    {.path = "train_micro_batch_size_per_gpu", .kind = K_INT, FIELD(micro_batch, int), .imin = 1,
     .imax = INT_MAX, .flags = R_MICRO},
    {.path = "gradient_accumulation_steps", .kind = K_INT, FIELD(grad_accum, int), .imin = 1,
     .imax = INT_MAX, .flags = R_ACCUM},
    {.path = "gradient_clipping", .kind = K_NUM, FIELD(grad_clip, double), .lo = 0, .hi = INFINITY},
    {.path = "seed", .kind = K_U64, FIELD(seed, uint64_t), .flags = R_INTERVAL},
    {.path = "comm_timeout_s", .kind = K_NUM, FIELD(comm_timeout_s, double), .lo = 0,
     .hi = INFINITY, .flags = R_LO_OPEN},
    {.path = "steps_per_print", .kind = K_INT, FIELD(steps_per_print, int), .imin = 1,
     .imax = INT_MAX},

    /* optimizer */
    {.path = "optimizer", .kind = K_SECTION},
    {.path = "optimizer.type", .kind = K_OPTIM, FIELD(optim, zc_optim_type)},
    {.path = "optimizer.params", .kind = K_SECTION},
    {.path = "optimizer.params.lr", .kind = K_NUM, FIELD(lr, double), .lo = 0, .hi = INFINITY},
    {.path = "optimizer.params.betas", .kind = K_BETAS},
    /* the update adds it in float, with denormals flushed to zero: a smaller eps would be 0 */
    {.path = "optimizer.params.eps", .kind = K_NUM, FIELD(eps, double), .lo = FLT_MIN,
     .hi = INFINITY},
    {.path = "optimizer.params.weight_decay", .kind = K_NUM, FIELD(weight_decay, double), .lo = 0,
     .hi = INFINITY},
    {.path = "optimizer.params.momentum", .kind = K_NUM, FIELD(momentum, double), .lo = 0, .hi = 1,
     .flags = R_INTERVAL | R_HI_OPEN},
    {.path = "optimizer.params.adam_w_mode", .kind = K_BOOL, FIELD(adam_w_mode, bool)},
    {.path = "optimizer.params.torch_adam", .kind = K_BOOL, .flags = R_NOEFFECT,
     .why = "it picks DeepSpeed's Adam kernel; zeroc has its own"},
    /* older DeepSpeed configs clip in the optimizer's params (apex FusedAdam / Lamb): the same
     * global-norm clipping as gradient_clipping (both given: they must agree, see load) */
    {.path = "optimizer.params.max_grad_norm", .kind = K_NUM, FIELD(grad_clip, double), .lo = 0,
     .hi = INFINITY},
    {.path = "optimizer.params.amsgrad", .kind = K_FIXED, .fixed = false, .flags = R_LATER,
     .why = "zeroc implements Adam without the AMSGrad variant"},
    {.path = "optimizer.params.bias_correction", .kind = K_BOOL, FIELD(bias_correction, bool)},
    {.path = "optimizer.params.compact_master", .kind = K_BOOL, FIELD(compact_master, bool)},
    {.path = "optimizer.params.nesterov", .kind = K_FIXED, .fixed = false, .flags = R_LATER,
     .why = "zeroc's SGD uses plain momentum"},
    {.path = "optimizer.params.dampening", .kind = K_EQUAL, .only = 0,
     .why = "zeroc's SGD applies no dampening"},
    /* DeepSpeed passes it to its fp16 optimizer as fused_adam_legacy: how it calls apex's fused
     * Adam kernel (the unscaling inside the kernel or before it) */
    {.path = "optimizer.legacy_fusion", .kind = K_BOOL, .flags = R_NOEFFECT,
     .why = "it picks how DeepSpeed's fp16 optimizer calls apex's fused Adam kernel; zeroc has "
            "its own update"},

    /* ZeRO */
    {.path = "zero_optimization", .kind = K_SECTION, .flags = R_LEGACY},
    {.path = "zero_optimization.stage", .kind = K_INT, FIELD(stage, int), .imin = 0, .imax = 3,
     .flags = R_INTERVAL},
    {.path = "zero_optimization.reduce_bucket_size", .kind = K_I64,
     FIELD(reduce_bucket_size, int64_t), .imin = 0, .imax = INT64_MAX},
    {.path = "zero_optimization.stage3_prefetch_bucket_size", .kind = K_I64,
     FIELD(prefetch_bucket_size, int64_t), .imin = 0, .imax = INT64_MAX, .flags = R_AUTO},
    {.path = "zero_optimization.stage3_max_live_parameters", .kind = K_I64,
     FIELD(max_live_parameters, int64_t), .imin = 1, .imax = INT64_MAX},
    {.path = "zero_optimization.stage3_param_persistence_threshold", .kind = K_I64,
     FIELD(param_persistence_threshold, int64_t), .imin = 0, .imax = INT64_MAX,
     .flags = R_AUTO},
    {.path = "zero_optimization.stage3_model_persistence_threshold", .kind = K_I64,
     FIELD(model_persistence_threshold, int64_t), .imin = 0, .imax = INT64_MAX},
    {.path = "zero_optimization.overlap_comm", .kind = K_BOOL, FIELD(overlap_comm, bool)},
    {.path = "zero_optimization.contiguous_gradients", .kind = K_FIXED, .fixed = true,
     .why = "zeroc always keeps gradients in contiguous per-unit buffers"},
    /* ZeRO-Infinity: model states in swap files on a local disk. "cpu" is accepted and changes
     * nothing (they are in RAM already on a CPU machine); the stage rules are in validate. */
    /* The knobs beside `device` (R_NVME) tune the swap files and the RAM slots they stream
     * through, which exist only with an nvme device. */
    {.path = "zero_optimization.offload_optimizer", .kind = K_SECTION},
    {.path = "zero_optimization.offload_optimizer.device", .kind = K_DEVICE,
     FIELD(offload_optimizer, zc_offload_device)},
    {.path = "zero_optimization.offload_optimizer.nvme_path", .kind = K_STR,
     FIELD_STR(optimizer_nvme_path), .flags = R_NVME},
    {.path = "zero_optimization.offload_optimizer.buffer_count", .kind = K_INT,
     FIELD(optimizer_buffer_count, int), .imin = 1, .imax = INT_MAX, .flags = R_NVME},
    {.path = "zero_optimization.offload_optimizer.pin_memory", .kind = K_BOOL,
     FIELD(optimizer_pin_memory, bool), .flags = R_NVME},
    {.path = "zero_optimization.offload_optimizer.ratio", .kind = K_NUM,
     FIELD(optimizer_ratio, double), .lo = 0, .hi = 1,
     .flags = R_INTERVAL | R_LO_OPEN | R_NVME | R_AUTO | R_SIZED},
    {.path = "zero_optimization.offload_optimizer.pipeline_read", .kind = K_BOOL,
     FIELD(pipeline_read, bool), .flags = R_NVME},
    {.path = "zero_optimization.offload_optimizer.pipeline_write", .kind = K_BOOL,
     FIELD(pipeline_write, bool), .flags = R_NVME},
    {.path = "zero_optimization.offload_optimizer.fold_update", .kind = K_BOOL,
     FIELD(fold_update, bool), .flags = R_NVME},
    {.path = "zero_optimization.offload_optimizer.fast_init", .kind = K_BOOL, .flags = R_NOEFFECT,
     .why = "it skips a slower initialisation in DeepSpeed; zeroc has only one"},
    {.path = "zero_optimization.offload_param", .kind = K_SECTION},
    {.path = "zero_optimization.offload_param.device", .kind = K_DEVICE,
     FIELD(offload_param, zc_offload_device)},
    {.path = "zero_optimization.offload_param.nvme_path", .kind = K_STR,
     FIELD_STR(param_nvme_path), .flags = R_NVME},
    {.path = "zero_optimization.offload_param.buffer_count", .kind = K_INT,
     FIELD(param_buffer_count, int), .imin = 1, .imax = INT_MAX, .flags = R_NVME},
    {.path = "zero_optimization.offload_param.buffer_size", .kind = K_I64,
     FIELD(param_buffer_size, int64_t), .imin = 1, .imax = INT64_MAX, .flags = R_NVME},
    {.path = "zero_optimization.offload_param.max_in_cpu", .kind = K_I64,
     FIELD(max_in_cpu, int64_t), .imin = 0, .imax = INT64_MAX,
     .flags = R_NVME | R_AUTO | R_SIZED},
    {.path = "zero_optimization.offload_param.pin_memory", .kind = K_BOOL,
     FIELD(param_pin_memory, bool), .flags = R_NVME},
    /* sizes the pieces the offloaded states stream through RAM in; nothing else uses it */
    {.path = "zero_optimization.sub_group_size", .kind = K_I64, FIELD(sub_group_size, int64_t),
     .imin = 1, .imax = INT64_MAX, .flags = R_NVME},
    /* DeepSpeed's deprecated spellings (zero/config.py): cpu_offload true is offload_optimizer
     * {"device": "cpu"}, cpu_offload_param true offload_param's, false none; giving one beside
     * the section it replaces is refused, as DeepSpeed refuses it ("together") */
    {.path = "zero_optimization.cpu_offload", .kind = K_CPU_OFFLOAD,
     FIELD(offload_optimizer, zc_offload_device),
     .alias_of = "zero_optimization.offload_optimizer"},
    {.path = "zero_optimization.cpu_offload_param", .kind = K_CPU_OFFLOAD,
     FIELD(offload_param, zc_offload_device), .alias_of = "zero_optimization.offload_param"},
    /* deprecated with nothing to set: DeepSpeed warns and reads it into nothing */
    {.path = "zero_optimization.cpu_offload_use_pin_memory", .kind = K_BOOL, .flags = R_NOEFFECT,
     .why = "deprecated; DeepSpeed reads it into nothing (pin_memory of an offload section "
            "replaced it)"},
    {.path = "zero_optimization.allgather_partitions", .kind = K_FIXED, .fixed = true,
     .why = "zeroc always all-gathers the updated partitions"},
    {.path = "zero_optimization.allgather_bucket_size", .kind = K_I64, .imin = 0,
     .imax = INT64_MAX, .flags = R_NOEFFECT,
     .why = "zeroc all-gathers one unit at a time, whatever the bucket"},
    {.path = "zero_optimization.reduce_scatter", .kind = K_FIXED, .fixed = true,
     .why = "zeroc always reduces gradients with a reduce-scatter"},
    {.path = "zero_optimization.round_robin_gradients", .kind = K_BOOL, .flags = R_NOEFFECT,
     .why = "a GPU knob: it spreads the GPU-to-CPU gradient copies of an offload over ranks; "
            "zeroc's gradients are in RAM already"},
    {.path = "zero_optimization.stage3_max_reuse_distance", .kind = K_I64, .imin = 0,
     .imax = INT64_MAX, .flags = R_NOEFFECT,
     .why = "a GPU-memory knob: zeroc releases a unit at release and prefetches it again"},
    {.path = "zero_optimization.stage3_gather_16bit_weights_on_model_save", .kind = K_BOOL,
     .flags = R_NOEFFECT,
     .why = "zeroc's exports always gather the full weights (--save-weights, ckpt export)"},
    {.path = "zero_optimization.stage3_gather_fp16_weights_on_model_save", .kind = K_BOOL,
     .flags = R_NOEFFECT,
     .why = "zeroc's exports always gather the full weights (--save-weights, ckpt export)"},
    REFUSED("zero_optimization.elastic_checkpoint"),
    REFUSED("zero_optimization.load_from_fp32_weights"),
    {.path = "zero_optimization.ignore_unused_parameters", .kind = K_BOOL, .flags = R_NOEFFECT,
     .why = "zeroc's models give every parameter a gradient; none is unused"},
    /* MiCS shards over sub-groups of ranks; -1 / false are DeepSpeed's "off" */
    {.path = "zero_optimization.mics_shard_size", .kind = K_EQUAL, .only = -1,
     .why = "zeroc shards over all ranks; it has no MiCS sub-groups"},
    {.path = "zero_optimization.mics_hierarchical_params_gather", .kind = K_FIXED, .fixed = false,
     .flags = R_LATER, .why = "zeroc has no MiCS sub-groups"},
    {.path = "zero_optimization.zero_hpz_partition_size", .kind = K_INT,
     FIELD(hpz_partition_size, int), .imin = 1, .imax = 1 << 20},
    {.path = "zero_optimization.zero_quantized_weights", .kind = K_BOOL,
     FIELD(quantized_weights, bool)},
    {.path = "zero_optimization.zero_quantized_nontrainable_weights", .kind = K_FIXED,
     .fixed = false, .flags = R_LATER, .why = "zeroc trains every parameter; none is frozen"},
    {.path = "zero_optimization.zero_quantized_gradients", .kind = K_BOOL,
     FIELD(quantized_gradients, bool)},
    {.path = "zero_optimization.legacy_stage1", .kind = K_FIXED, .fixed = false, .flags = R_LATER,
     .why = "zeroc has one stage-1 implementation, the current one"},
    {.path = "zero_optimization.memory_efficient_linear", .kind = K_BOOL, .flags = R_NOEFFECT,
     .why = "a GPU-memory knob of DeepSpeed's stage-3 linear layer; zeroc's models have their "
            "own"},
    {.path = "zero_optimization.use_multi_rank_bucket_allreduce", .kind = K_BOOL,
     .flags = R_NOEFFECT,
     .why = "a bucketing of DeepSpeed's all-reduce; zeroc reduce-scatters unit by unit"},
    {.path = "zero_optimization.log_trace_cache_warnings", .kind = K_BOOL, .flags = R_NOEFFECT,
     .why = "zeroc has no stage-3 trace cache to warn about"},
    {.path = "zero_optimization.override_module_apply", .kind = K_BOOL, .flags = R_NOEFFECT,
     .why = "it hooks torch's Module.apply; zeroc has no torch modules"},
    /* ZeRO++'s LoCo: error feedback on the quantized gradients (qgZ), which zeroc does not do */
    REFUSED("zero_optimization.zeropp_loco_param"),

    /* precision: the stored type (dtype) is fp32 unless fp16 or bf16 is enabled; both enabled
     * is refused by zc_config_validate, so flags may switch one off after the other on */
    {.path = "fp16", .kind = K_SECTION},
    {.path = "fp16.enabled", .kind = K_PRECISION, FIELD(fp16_enabled, bool), .dt = ZC_FP16},
    /* scales are applied as fp32 numbers: they must be normal floats (a scale that rounds to 0
     * or overflows would turn the update into NaN) */
    {.path = "fp16.loss_scale", .kind = K_NUM, FIELD(loss_scale, double), .lo = 0,
     .hi = FLT_MAX},
    {.path = "fp16.initial_scale_power", .kind = K_INT, FIELD(initial_scale_power, int),
     .imin = 0, .imax = 64, .flags = R_INTERVAL},
    {.path = "fp16.loss_scale_window", .kind = K_INT, FIELD(loss_scale_window, int), .imin = 1,
     .imax = INT_MAX},
    {.path = "fp16.hysteresis", .kind = K_INT, FIELD(hysteresis, int), .imin = 1,
     .imax = INT_MAX},
    {.path = "fp16.consecutive_hysteresis", .kind = K_BOOL, FIELD(consecutive_hysteresis, bool)},
    {.path = "fp16.min_loss_scale", .kind = K_NUM, FIELD(min_loss_scale, double), .lo = FLT_MIN,
     .hi = FLT_MAX},
    /* DeepSpeed casts the model's floating-point inputs to fp16 (_cast_inputs_half); zeroc's
     * models take token ids, which it leaves as they are */
    {.path = "fp16.auto_cast", .kind = K_BOOL, .flags = R_NOEFFECT,
     .why = "it casts floating-point model inputs to fp16; zeroc's models take token ids, which "
            "it leaves as they are"},
    {.path = "fp16.fp16_master_weights_and_grads", .kind = K_FIXED, .fixed = false,
     .why = "zeroc keeps fp32 master weights and gradients for the update (fp16 ones would round "
            "every update to fp16)"},
    {.path = "bf16", .kind = K_SECTION},
    {.path = "bf16.enabled", .kind = K_PRECISION, FIELD(bf16_enabled, bool), .dt = ZC_BF16},
    REFUSED("bf16.immediate_grad_update"), REFUSED("bf16.check_grad_overflow"),
    {.path = "bf16.bf16_master_weights_and_grads", .kind = K_FIXED, .fixed = false,
     .why = "zeroc keeps fp32 master weights and gradients for the update"},
    REFUSED("bf16.bf16_optimizer_states"),
    /* fp16's loss-scale keys, as configs copied from an fp16 block write them into bf16's:
     * DeepSpeed reads nothing of bf16 but `enabled` (get_bfloat16_enabled) */
    BF16_SCALE_KEYS("bf16"),
    {.path = "bfloat16", .kind = K_SECTION, .alias_of = "bf16"},
    {.path = "bfloat16.enabled", .kind = K_PRECISION, FIELD(bf16_enabled, bool), .dt = ZC_BF16},
    REFUSED("bfloat16.immediate_grad_update"), REFUSED("bfloat16.check_grad_overflow"),
    {.path = "bfloat16.bf16_master_weights_and_grads", .kind = K_FIXED, .fixed = false,
     .why = "zeroc keeps fp32 master weights and gradients for the update"},
    REFUSED("bfloat16.bf16_optimizer_states"),
    BF16_SCALE_KEYS("bfloat16"),
    /* DeepSpeed limits communication_data_type to fp32, fp16, bf16; grad_accum_dtype is read
     * through its DtypeEnum, which has more names */
    {.path = "communication_data_type", .kind = K_DTYPE, FIELD(comm_dtype, zc_dtype)},
    {.path = "data_types", .kind = K_SECTION},
    {.path = "data_types.grad_accum_dtype", .kind = K_DTYPE, FIELD(grad_accum_dtype, zc_dtype),
     .flags = R_DTNAMES},
    REFUSED("data_types.param_dtype"), REFUSED("data_types.buffer_dtype"),

    /* the swap files' I/O (O_DIRECT: requests are whole 4 KiB blocks); without an nvme device
     * there are none */
    {.path = "aio", .kind = K_SECTION, .flags = R_NVME},
    /* the limits are the aio layer's (src/offload/aio.c), checked here to name the key */
    {.path = "aio.block_size", .kind = K_I64, FIELD(aio_block_size, int64_t), .imin = 4096,
     .imax = 1 << 30, .multiple = 4096},
    {.path = "aio.queue_depth", .kind = K_INT, FIELD(aio_queue_depth, int), .imin = 1,
     .imax = 32767, .flags = R_INTERVAL},
    {.path = "aio.thread_count", .kind = K_INT, FIELD(aio_thread_count, int), .imin = 1,
     .imax = 1024, .flags = R_INTERVAL},
    /* DeepSpeed's newer name for thread_count */
    {.path = "aio.intra_op_parallelism", .kind = K_INT, FIELD(aio_thread_count, int), .imin = 1,
     .imax = 1024, .flags = R_INTERVAL, .alias_of = "aio.thread_count"},
    {.path = "aio.single_submit", .kind = K_BOOL, FIELD(aio_single_submit, bool)},
    {.path = "aio.overlap_events", .kind = K_BOOL, FIELD(aio_overlap_events, bool)},
    {.path = "aio.use_gds", .kind = K_FIXED, .fixed = false, .why = "zeroc has no GPU"},
    {.path = "aio.engine", .kind = K_ENGINE, FIELD(aio_engine, zc_aio_engine)}, /* zeroc's */

    /* the rest of DeepSpeed's top level */
    /* DeepSpeed's learning-rate schedules; each param belongs to the types whose constructor
     * takes it (.scheds), with the constructor's default */
    {.path = "scheduler", .kind = K_SECTION},
    {.path = "scheduler.type", .kind = K_SCHED, FIELD(sched, zc_sched_type)},
    {.path = "scheduler.params", .kind = K_SECTION},
    {.path = "scheduler.params.warmup_min_lr", .kind = K_NUM, FIELD(warmup_min_lr, double),
     .lo = 0, .hi = INFINITY, .scheds = S_WARM},
    {.path = "scheduler.params.warmup_max_lr", .kind = K_NUM, FIELD(warmup_max_lr, double),
     .lo = 0, .hi = INFINITY, .flags = R_AUTO, .scheds = S_WARM},
    {.path = "scheduler.params.warmup_num_steps", .kind = K_I64, FIELD(warmup_num_steps, int64_t),
     .imin = 0, .imax = INT64_MAX, .flags = R_AUTO0, .scheds = S_WARM | S_COS},
    {.path = "scheduler.params.total_num_steps", .kind = K_I64, FIELD(total_num_steps, int64_t),
     .imin = 1, .imax = INT64_MAX, .flags = R_UNSET0, .scheds = S_DECAY | S_COS},
    {.path = "scheduler.params.warmup_type", .kind = K_WARMUP, FIELD(warmup_type, zc_warmup_type),
     .scheds = S_WARM | S_COS},
    {.path = "scheduler.params.warmup_min_ratio", .kind = K_NUM, FIELD(warmup_min_ratio, double),
     .lo = 0, .hi = INFINITY, .scheds = S_COS},
    {.path = "scheduler.params.cos_min_ratio", .kind = K_NUM, FIELD(cos_min_ratio, double),
     .lo = 0, .hi = INFINITY, .scheds = S_COS},
    {.path = "scheduler.params.cycle_min_lr", .kind = K_NUM, FIELD(cycle_min_lr, double), .lo = 0,
     .hi = INFINITY, .flags = R_NANUNSET, .scheds = S_ONE},
    {.path = "scheduler.params.cycle_max_lr", .kind = K_NUM, FIELD(cycle_max_lr, double), .lo = 0,
     .hi = INFINITY, .flags = R_NANUNSET, .scheds = S_ONE},
    {.path = "scheduler.params.decay_lr_rate", .kind = K_NUM, FIELD(decay_lr_rate, double),
     .lo = 0, .hi = INFINITY, .scheds = S_ONE},
    {.path = "scheduler.params.cycle_first_step_size", .kind = K_I64,
     FIELD(cycle_first_step_size, int64_t), .imin = 1, .imax = INT64_MAX, .scheds = S_ONE},
    {.path = "scheduler.params.cycle_second_step_size", .kind = K_I64,
     FIELD(cycle_second_step_size, int64_t), .imin = 1, .imax = INT64_MAX, .flags = R_UNSET0,
     .scheds = S_ONE},
    /* DeepSpeed's OneCycle keeps the stair counts and never reads them */
    {.path = "scheduler.params.cycle_first_stair_count", .kind = K_I64, .imin = 0,
     .imax = INT64_MAX, .flags = R_NOEFFECT, .scheds = S_ONE,
     .why = "DeepSpeed's OneCycle stores it and never uses it: its rate changes every step"},
    {.path = "scheduler.params.cycle_second_stair_count", .kind = K_I64, .imin = 0,
     .imax = INT64_MAX, .flags = R_NOEFFECT, .scheds = S_ONE,
     .why = "DeepSpeed's OneCycle stores it and never uses it: its rate changes every step"},
    {.path = "scheduler.params.decay_step_size", .kind = K_I64, FIELD(decay_step_size, int64_t),
     .imin = 0, .imax = INT64_MAX, .scheds = S_ONE},
    /* true (DeepSpeed's default) cycles beta1: refused in check_rules but under SGD */
    {.path = "scheduler.params.cycle_momentum", .kind = K_BOOL, FIELD(cycle_momentum, bool),
     .scheds = S_ONE},
    {.path = "scheduler.params.cycle_min_mom", .kind = K_NUM, .lo = 0, .hi = 1,
     .flags = R_NOEFFECT | R_INTERVAL, .scheds = S_ONE, .why = MOM_UNUSED},
    {.path = "scheduler.params.cycle_max_mom", .kind = K_NUM, .lo = 0, .hi = 1,
     .flags = R_NOEFFECT | R_INTERVAL, .scheds = S_ONE, .why = MOM_UNUSED},
    {.path = "scheduler.params.decay_mom_rate", .kind = K_NUM, .lo = 0, .hi = INFINITY,
     .flags = R_NOEFFECT, .scheds = S_ONE, .why = MOM_UNUSED},
    {.path = "scheduler.params.lr_range_test_min_lr", .kind = K_NUM,
     FIELD(lr_range_test_min_lr, double), .lo = 0, .hi = INFINITY, .scheds = S_RANGE},
    {.path = "scheduler.params.lr_range_test_step_size", .kind = K_I64,
     FIELD(lr_range_test_step_size, int64_t), .imin = 1, .imax = INT64_MAX, .scheds = S_RANGE},
    {.path = "scheduler.params.lr_range_test_step_rate", .kind = K_NUM,
     FIELD(lr_range_test_step_rate, double), .lo = 0, .hi = INFINITY, .scheds = S_RANGE},
    {.path = "scheduler.params.lr_range_test_staircase", .kind = K_BOOL,
     FIELD(lr_range_test_staircase, bool), .scheds = S_RANGE},
    /* where the schedule starts; DeepSpeed's -1 is a fresh start */
    {.path = "scheduler.params.last_batch_iteration", .kind = K_EQUAL, .only = -1,
     .why = "a schedule continues from zeroc's checkpoints, with --resume", .scheds = S_ALL},
    /* the section turns on the model's activation checkpointing; its knobs place or partition
     * the checkpoints on GPUs and across model-parallel ranks, which a CPU run does not have */
    {.path = "activation_checkpointing", .kind = K_SECTION, FIELD(activation_checkpointing, bool),
     .flags = R_PRESENT},
    {.path = "activation_checkpointing.partition_activations", .kind = K_BOOL,
     .flags = R_NOEFFECT, .why = "no model parallelism to partition the checkpoints across"},
    {.path = "activation_checkpointing.cpu_checkpointing", .kind = K_BOOL, .flags = R_NOEFFECT,
     .why = "the checkpoints are in RAM already"},
    {.path = "activation_checkpointing.contiguous_memory_optimization", .kind = K_BOOL,
     .flags = R_NOEFFECT, .why = "a GPU-memory fragmentation knob"},
    {.path = "activation_checkpointing.number_checkpoints", .kind = K_I64, .imin = 1,
     .imax = INT64_MAX, .flags = R_NOEFFECT,
     .why = "sizes the contiguous GPU buffer; zeroc keeps one input per block"},
    {.path = "activation_checkpointing.synchronize_checkpoint_boundary", .kind = K_BOOL,
     .flags = R_NOEFFECT, .why = "a CUDA synchronisation"},
    {.path = "activation_checkpointing.profile", .kind = K_BOOL, .flags = R_NOEFFECT,
     .why = "zeroc has no per-checkpoint profiler; step times are in the log and report"},
    REFUSED("amp"),
    {.path = "prescale_gradients", .kind = K_FIXED, .fixed = false, .flags = R_LATER,
     .why = "zeroc divides the summed gradients once, in the update"},
    REFUSED("gradient_predivide_factor"), REFUSED("sparse_gradients"),
    {.path = "wall_clock_breakdown", .kind = K_BOOL, FIELD(wall_clock_breakdown, bool)},
    /* DeepSpeed's throughput timer: it logs samples/s, synchronising the GPU first; timing
     * changes nothing of the math, and zeroc's log gives tok/s and the report ms/step anyway */
    {.path = "timers", .kind = K_SECTION},
    {.path = "timers.throughput", .kind = K_SECTION},
    {.path = "timers.throughput.enabled", .kind = K_BOOL, .flags = R_NOEFFECT,
     .why = "zeroc's log and report give the throughput either way"},
    {.path = "timers.throughput.synchronized", .kind = K_BOOL, .flags = R_NOEFFECT,
     .why = "a CUDA synchronisation"},
    /* true would resume from DeepSpeed's universal (reshardable) checkpoint format */
    {.path = "load_universal_checkpoint", .kind = K_FIXED, .fixed = false, .flags = R_LATER,
     .why = "zeroc resumes from its own checkpoints only"},
    REFUSED("memory_breakdown"),
    /* monitors zeroc writes (cli/monitors.c): DeepSpeed's members, no others (its config
     * models forbid extra keys) */
    {.path = "tensorboard", .kind = K_SECTION},
    {.path = "tensorboard.enabled", .kind = K_BOOL, FIELD(tensorboard, bool)},
    {.path = "tensorboard.output_path", .kind = K_STR, FIELD_STR(tensorboard_output_path)},
    {.path = "tensorboard.job_name", .kind = K_STR, FIELD_STR(tensorboard_job_name)},
    {.path = "csv_monitor", .kind = K_SECTION},
    {.path = "csv_monitor.enabled", .kind = K_BOOL, FIELD(csv_monitor, bool)},
    {.path = "csv_monitor.output_path", .kind = K_STR, FIELD_STR(csv_output_path)},
    /* LoRA (zeroc's section, PEFT's LoraConfig names; the model checks the module names) */
    {.path = "lora", .kind = K_SECTION},
    {.path = "lora.r", .kind = K_I64, FIELD(lora_r, int64_t), .imin = 0, .imax = 65536},
    {.path = "lora.lora_alpha", .kind = K_NUM, FIELD(lora_alpha, double), .lo = 0, .hi = INFINITY,
     .flags = R_LO_OPEN},
    {.path = "lora.lora_dropout", .kind = K_NUM, FIELD(lora_dropout, double), .lo = 0, .hi = 1,
     .flags = R_HI_OPEN},
    {.path = "lora.target_modules", .kind = K_NAMES, FIELD_STR(lora_target_modules),
     .flags = R_ONE_NAME},
    {.path = "lora.bias", .kind = K_STR, FIELD_STR(lora_bias)},
    {.path = "csv_monitor.job_name", .kind = K_STR, FIELD_STR(csv_job_name)},
    {.path = "comms_logger", .kind = K_SECTION},
    {.path = "comms_logger.enabled", .kind = K_BOOL, FIELD(comms_logger, bool)},
    {.path = "comms_logger.verbose", .kind = K_BOOL, FIELD(comms_verbose, bool)},
    {.path = "comms_logger.prof_all", .kind = K_BOOL, FIELD(comms_prof_all, bool)},
    {.path = "comms_logger.prof_ops", .kind = K_NAMES, FIELD_STR(comms_prof_ops)},
    {.path = "comms_logger.debug", .kind = K_BOOL, .flags = R_NOEFFECT,
     .why = "it adds the calling Python function to each op's name; zeroc's collectives are "
            "named by their op"},
    {.path = "wandb", .kind = K_MONITOR,
     .why = "zeroc does not talk to Weights & Biases; use tensorboard or csv_monitor, or --report "
            "FILE and zeroc plot FILE to draw it"},
    {.path = "flops_profiler", .kind = K_MONITOR,
     .why = "zeroc has no FLOP profiler; wall_clock_breakdown prints each step's time by phase, "
            "zeroc analyze REPORT shows where a step's time and memory go, and --report FILE has "
            "gemm.ms per step"},
    REFUSED("checkpoint"), REFUSED("elasticity"), REFUSED("autotuning"),
    REFUSED("compression_training"), REFUSED("data_efficiency"),
    REFUSED("curriculum_learning"),
    {.path = "zero_allow_untested_optimizer", .kind = K_BOOL, .flags = R_NOEFFECT,
     .why = "zeroc runs only its own, tested optimizers"},
    REFUSED("zero_force_ds_cpu_optimizer"), REFUSED("dump_state"), REFUSED("pipeline"),
    REFUSED("sparse_attention"), REFUSED("disable_allgather"), REFUSED("dataloader_drop_last"),
    REFUSED("eigenvalue"), REFUSED("progressive_layer_drop"), REFUSED("quantize_training"),
    REFUSED("weight_quantization"), REFUSED("hybrid_engine"), REFUSED("nebula"),
    REFUSED("compile"), REFUSED("sequence_parallel_size"),
};
// clang-format on
#define NKEYS (sizeof KEYS / sizeof KEYS[0])

/* optimizer.params.betas[i], checked like a K_NUM row */
static const key_spec BETA = {.kind = K_NUM, .lo = 0, .hi = 1, .flags = R_INTERVAL | R_HI_OPEN};

static const char *const OPTIM_NAMES[] = {"AdamW", "Adam", "SGD",
                                          "AdamW8bit"};            /* indexed by zc_optim_type */
static const char *const DEVICE_NAMES[] = {"none", "cpu", "nvme"}; /* by zc_offload_device */
static const char *const ENGINE_NAMES[] = {"auto", "io_uring", "threads"}; /* by zc_aio_engine */
/* by zc_sched_type */
static const char *const SCHED_NAMES[] = {"none",           "WarmupLR", "WarmupDecayLR",
                                          "WarmupCosineLR", "OneCycle", "LRRangeTest"};
static const char *const WARMUP_NAMES[] = {"log", "linear"}; /* by zc_warmup_type */
/* DeepSpeed's DtypeEnum names (runtime/config.py) besides zeroc's fp32, bf16, fp16 */
static const struct {
    const char *name;
    zc_dtype dt;
} DTYPE_NAMES[] = {{"float32", ZC_FP32},  {"float", ZC_FP32},         {"torch.float32", ZC_FP32},
                   {"float16", ZC_FP16},  {"half", ZC_FP16},          {"torch.float16", ZC_FP16},
                   {"bfloat16", ZC_BF16}, {"torch.bfloat16", ZC_BF16}};
#define NNAMES(a) (sizeof a / sizeof a[0])

void zc_config_defaults(zc_config *cfg)
{
    ZC_ASSERT(cfg);
    /* DeepSpeed's defaults (runtime/constants.py, runtime/zero/config.py); the optimizer's are
     * torch.optim's, which DeepSpeed passes through. comm_timeout_s is zeroc's own. */
    *cfg = (zc_config){
        .train_batch_size = 0,
        .micro_batch = 1,
        .grad_accum = 1,
        .micro_batch_set = false,
        .grad_accum_set = false,
        .grad_clip = 0.0,
        .optim = ZC_OPTIM_ADAMW,
        .lr = 1e-3,
        .beta1 = 0.9,
        .beta2 = 0.999,
        .eps = 1e-8,
        .weight_decay = 0.0,
        .momentum = 0.0,
        .adam_w_mode = true,
        .bias_correction = true,
        .lora_alpha = 8.0, /* PEFT's LoraConfig */
        /* DeepSpeed's lr_schedules.py defaults (warmup_max_lr's: ZC_WARMUP_MAX_LR) */
        .sched = ZC_SCHED_NONE,
        .warmup_min_lr = 0.0,
        .warmup_max_lr = NAN,
        .warmup_num_steps = 1000,
        .total_num_steps = 0,
        .warmup_type = ZC_WARMUP_LOG,
        .warmup_min_ratio = 0.0,
        .cos_min_ratio = 0.0001,
        .cycle_min_lr = NAN,
        .cycle_max_lr = NAN,
        .decay_lr_rate = 0.0,
        .cycle_first_step_size = 2000,
        .cycle_second_step_size = 0,
        .decay_step_size = 0,
        .cycle_momentum = true,
        .lr_range_test_min_lr = 1e-3,
        .lr_range_test_step_size = 2000,
        .lr_range_test_step_rate = 1.0,
        .lr_range_test_staircase = false,
        .stage = 0,
        .hpz_partition_size = 1,
        .reduce_bucket_size = 500000000,
        .overlap_comm = true,
        .prefetch_bucket_size = ZC_AUTO, /* one unit ahead: see docs/CONFIG.md */
        .max_live_parameters = 1000000000,
        .param_persistence_threshold = ZC_AUTO, /* ZC_PERSISTENCE_AUTO: see docs/CONFIG.md */
        .model_persistence_threshold = INT64_MAX,
        .dtype = ZC_FP32,
        .fp16_enabled = false,
        .bf16_enabled = false,
        .comm_dtype = ZC_DTYPE_DEFAULT,
        .grad_accum_dtype = ZC_DTYPE_DEFAULT,
        .loss_scale = 0.0,
        .initial_scale_power = 16,
        .loss_scale_window = 1000,
        .hysteresis = 2,
        .consecutive_hysteresis = false,
        .min_loss_scale = 1.0,
        /* offload: DeepSpeed's defaults except pipeline_read/write (zeroc overlaps unless told
         * not to) and sub_group_size (1e9 in DeepSpeed: on a CPU a sub-group streams through
         * buffer_count RAM slots, so its size is the RAM bound of optimizer offload) */
        .offload_optimizer = ZC_OFFLOAD_NONE,
        .optimizer_nvme_path = "",
        .optimizer_buffer_count = 4,
        .optimizer_pin_memory = false,
        .optimizer_ratio = 1.0,
        .pipeline_read = true,
        .pipeline_write = true,
        .fold_update = true,
        .offload_param = ZC_OFFLOAD_NONE,
        .param_nvme_path = "",
        .param_buffer_count = 5,
        .param_buffer_size = 100000000,
        .max_in_cpu = ZC_MAX_IN_CPU_DEFAULT,
        .param_pin_memory = false,
        .sub_group_size = 4194304,
        .aio_block_size = 1048576,
        .aio_queue_depth = 8,
        .aio_thread_count = 1,
        .aio_single_submit = false,
        .aio_overlap_events = true,
        .aio_engine = ZC_AIO_AUTO,
        .seed = 42,
        .comm_timeout_s = 600.0,
        .steps_per_print = 10,
        .tensorboard_job_name = "DeepSpeedJobName", /* DeepSpeed's defaults */
        .csv_job_name = "DeepSpeedJobName",
        .comms_prof_all = true,
    };
}

/* The choice kinds (K_DEVICE, K_ENGINE, K_SCHED, K_WARMUP): the names their enum values index.
 * scheduler.type's "none" (index 0) is no value a file can give. */
static const char *const *choice_names(key_kind kind, size_t *n)
{
    switch (kind) {
    case K_DEVICE: *n = NNAMES(DEVICE_NAMES); return DEVICE_NAMES;
    case K_ENGINE: *n = NNAMES(ENGINE_NAMES); return ENGINE_NAMES;
    case K_SCHED: *n = NNAMES(SCHED_NAMES) - 1; return SCHED_NAMES + 1;
    default: *n = NNAMES(WARMUP_NAMES); return WARMUP_NAMES;
    }
}

/* The index into choice_names of the field's value (-1: scheduler.type none). */
static int choice_get(const zc_config *cfg, const key_spec *k)
{
    const void *f = (const char *)cfg + k->off;
    switch (k->kind) {
    case K_DEVICE: return (int)*(const zc_offload_device *)f;
    case K_ENGINE: return (int)*(const zc_aio_engine *)f;
    case K_SCHED: return (int)*(const zc_sched_type *)f - 1;
    default: return (int)*(const zc_warmup_type *)f;
    }
}

static void choice_set(zc_config *cfg, const key_spec *k, int v)
{
    void *f = (char *)cfg + k->off;
    switch (k->kind) {
    case K_DEVICE: *(zc_offload_device *)f = (zc_offload_device)v; break;
    case K_ENGINE: *(zc_aio_engine *)f = (zc_aio_engine)v; break;
    case K_SCHED: *(zc_sched_type *)f = (zc_sched_type)(v + 1); break;
    default: *(zc_warmup_type *)f = (zc_warmup_type)v; break;
    }
}

/* The name of a K_DEVICE / K_ENGINE row's value ("nvme"), or NULL when out of range. */
static const char *choice_name(const zc_config *cfg, const key_spec *k)
{
    size_t n;
    const char *const *names = choice_names(k->kind, &n);
    int v = choice_get(cfg, k);
    return v >= 0 && (size_t)v < n ? names[v] : NULL;
}

const char *zc_sched_name(zc_sched_type t)
{
    return (unsigned)t < NNAMES(SCHED_NAMES) ? SCHED_NAMES[t] : "unknown";
}

const char *zc_optim_name(zc_optim_type t)
{
    return (unsigned)t < sizeof OPTIM_NAMES / sizeof OPTIM_NAMES[0] ? OPTIM_NAMES[t] : "unknown";
}

double zc_config_warmup_max_lr(const zc_config *cfg)
{
    ZC_ASSERT(cfg);
    if (cfg->warmup_max_lr == ZC_AUTO) /* the Hugging Face Trainer's "auto": the peak lr */
        return cfg->lr;
    if (isnan(cfg->warmup_max_lr)) /* not given: DeepSpeed's default (lr_schedules.py); the */
        return ZC_WARMUP_MAX_LR;   /* engine passes only the scheduler's params, not the lr */
    return cfg->warmup_max_lr;
}

zc_dtype zc_config_comm_dtype(const zc_config *cfg)
{
    ZC_ASSERT(cfg);
    return cfg->comm_dtype == ZC_DTYPE_DEFAULT ? cfg->dtype : cfg->comm_dtype;
}

zc_dtype zc_config_grad_dtype(const zc_config *cfg)
{
    ZC_ASSERT(cfg);
    return cfg->grad_accum_dtype == ZC_DTYPE_DEFAULT ? cfg->dtype : cfg->grad_accum_dtype;
}

bool zc_config_grads_bf16(const zc_config *cfg)
{
    return zc_config_grad_dtype(cfg) == ZC_BF16 && cfg->dtype != ZC_FP16;
}

bool zc_config_grads_sent_as_stored(const zc_config *cfg)
{
    const zc_dtype g = zc_config_grad_dtype(cfg);
    /* fp16 with fp32 gradients: the model writes them scaled by the loss scale */
    return zc_config_comm_dtype(cfg) == g && !(cfg->dtype == ZC_FP16 && g == ZC_FP32);
}

/* ---------------------------------------------------------------------------------------------
 * Messages
 * ------------------------------------------------------------------------------------------- */

typedef struct {
    const cJSON *node;
    const char *text;
    size_t len;
} num_text;

/* A file's refusals of one kind, "; "-joined, refused together once the whole file is read;
 * where each item starts (a key or a value's text may hold "; " itself). */
typedef struct {
    char text[sizeof(((zc_err *)0)->msg)];
    int n;   /* items in text */
    int cut; /* items that did not fit */
    unsigned short start[sizeof(((zc_err *)0)->msg) / 2];
} refusals;

typedef struct {
    const char *origin; /* message prefix: the file name, "command line", or NULL (validate) */
    zc_err *err;
    zc_config *cfg; /* the working copy */
    num_text *nums; /* the file's numbers as written, in document order */
    size_t n_nums;
    /* NULL on the command line, where the first refusal is the message. A file's keys for what
     * zeroc lacks (lacking), and its other refusals (unknown keys, bad values: problems), are
     * collected instead, so that one message names every one of them. */
    refusals *lacking, *problems;
} ctx;

static void add_refusal(refusals *r, const char *item)
{
    size_t n = strlen(r->text), need = (n ? 2 : 0) + strlen(item);
    if (n + need >= sizeof r->text || r->n == (int)(sizeof r->start / sizeof *r->start)) {
        r->cut++;
        return;
    }
    if (n)
        memcpy(r->text + n, "; ", 2);
    r->start[r->n++] = (unsigned short)(n + (n ? 2 : 0));
    memcpy(r->text + n + (n ? 2 : 0), item, strlen(item) + 1);
}

static zc_status fail(const ctx *c, zc_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static zc_status fail(const ctx *c, zc_status code, const char *fmt, ...)
{
    char msg[sizeof c->err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (c->origin)
        return zc_err_set(c->err, code, "%s: %s", c->origin, msg);
    return zc_err_set(c->err, code, "%s", msg);
}

/* A key (or "key = value (why)") for a feature zeroc does not have yet: collected while a file is
 * read, so that one message names all of them; refused at once on the command line. */
static zc_status refuse(const ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static zc_status refuse(const ctx *c, const char *fmt, ...)
{
    char item[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(item, sizeof item, fmt, ap);
    va_end(ap);
    if (!c->lacking)
        return fail(c, ZC_EINVAL, "not supported yet: %s", item);
    add_refusal(c->lacking, item);
    return ZC_OK;
}

/* A refusal of a file's key or value (rc, its message in c->err): collected with the others
 * while the file is read, and the reading goes on (ZC_OK); a status that is no refusal (out of
 * memory), and any on the command line, is returned as it is. */
static zc_status collect(const ctx *c, zc_status rc)
{
    if (rc == ZC_OK || rc != ZC_EINVAL || !c->problems)
        return rc;
    const char *msg = c->err->msg;
    size_t n = c->origin ? strlen(c->origin) : 0;
    if (c->origin && strncmp(msg, c->origin, n) == 0 && msg[n] == ':' && msg[n + 1] == ' ')
        msg += n + 2; /* the origin starts the whole message, once */
    add_refusal(c->problems, msg);
    return ZC_OK;
}

/* User text (a key, a value) made fit for a one-line message: control bytes become '?' and text
 * longer than 60 bytes is cut with "...". buf must hold 64 bytes. */
#define EXCERPT_BUF 64
static const char *excerpt(char *buf, const char *s, size_t n)
{
    size_t i, o = 0;
    for (i = 0; i < n && o < EXCERPT_BUF - 4; i++)
        buf[o++] = ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) ? '?' : s[i];
    if (i < n) {
        memcpy(buf + o, "...", 3);
        o += 3;
    }
    buf[o] = '\0';
    return buf;
}

static bool is_digit(char ch)
{
    return ch >= '0' && ch <= '9';
}

static bool ascii_ieq(const char *a, const char *b)
{
    for (; *a && *b; a++, b++) {
        char x = (*a >= 'A' && *a <= 'Z') ? (char)(*a - 'A' + 'a') : *a;
        char y = (*b >= 'A' && *b <= 'Z') ? (char)(*b - 'A' + 'a') : *b;
        if (x != y)
            return false;
    }
    return *a == *b;
}

/* The shortest text that reads back as exactly v: "0.001", not "0.0010000000000000000208";
 * whole numbers below 2^53 in full ("600", not "6e+02"). */
static void fmt_double(char *buf, size_t cap, double v)
{
    if (v == v && v > -9007199254740992.0 && v < 9007199254740992.0 && v == (double)(int64_t)v) {
        snprintf(buf, cap, "%" PRId64, (int64_t)v);
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, cap, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            return;
    }
}

/* ---------------------------------------------------------------------------------------------
 * Values: one shape for a JSON node and a command-line string, so both get the same checks
 * ------------------------------------------------------------------------------------------- */

typedef enum { V_NUMBER, V_STRING, V_BOOL, V_NULL, V_ARRAY, V_OBJECT } val_kind;

typedef struct {
    val_kind kind;
    const char *text; /* V_NUMBER: as written; V_STRING: the string; command line: the argument */
    size_t len;
    double num;        /* V_NUMBER */
    bool b;            /* V_BOOL */
    const cJSON *node; /* V_ARRAY from a file */
    bool cli;          /* from the command line: messages quote the argument as given */
    char own[32];      /* text of a number whose spelling was not found (should not happen) */
} value;

static void value_from_json(const ctx *c, const cJSON *node, value *v)
{
    memset(v, 0, sizeof *v);
    v->node = node;
    if (cJSON_IsNumber(node)) {
        v->kind = V_NUMBER;
        v->num = node->valuedouble;
        for (size_t i = 0; i < c->n_nums; i++) {
            if (c->nums[i].node == node) {
                v->text = c->nums[i].text;
                v->len = c->nums[i].len;
                return;
            }
        }
        snprintf(v->own, sizeof v->own, "%.17g", v->num);
        v->text = v->own;
        v->len = strlen(v->own);
    } else if (cJSON_IsString(node)) {
        v->kind = V_STRING;
        v->text = node->valuestring;
        v->len = strlen(node->valuestring);
    } else if (cJSON_IsBool(node)) {
        v->kind = V_BOOL;
        v->b = cJSON_IsTrue(node);
    } else if (cJSON_IsNull(node)) {
        v->kind = V_NULL;
    } else if (cJSON_IsArray(node)) {
        v->kind = V_ARRAY;
    } else {
        v->kind = V_OBJECT;
    }
}

/* How a value reads in "got ...": 4, string "abc", true, null, an array; "x" from the CLI. */
static const char *describe(char *buf, size_t cap, const value *v)
{
    char ex[EXCERPT_BUF];
    if (v->cli) {
        snprintf(buf, cap, "\"%s\"", excerpt(ex, v->text, v->len));
        return buf;
    }
    switch (v->kind) {
    case V_NUMBER: snprintf(buf, cap, "%s", excerpt(ex, v->text, v->len)); break;
    case V_STRING: snprintf(buf, cap, "string \"%s\"", excerpt(ex, v->text, v->len)); break;
    case V_BOOL: snprintf(buf, cap, "%s", v->b ? "true" : "false"); break;
    case V_NULL: snprintf(buf, cap, "null"); break;
    case V_ARRAY: snprintf(buf, cap, "an array"); break;
    case V_OBJECT: snprintf(buf, cap, "an object"); break;
    }
    return buf;
}

/* What a key wants, as in "expected ...". */
static const char *expect(char *buf, size_t cap, const key_spec *k)
{
    switch (k->kind) {
    case K_INT:
    case K_I64:
        if (k->multiple && k->imax < INT64_MAX)
            snprintf(buf, cap, "an integer %" PRId64 "..%" PRId64 " and a multiple of %" PRId64,
                     k->imin, k->imax, k->multiple);
        else if (k->multiple)
            snprintf(buf, cap, "an integer >= %" PRId64 " and a multiple of %" PRId64, k->imin,
                     k->multiple);
        else if (k->flags & R_INTERVAL)
            snprintf(buf, cap, "an integer %" PRId64 "..%" PRId64, k->imin, k->imax);
        else
            snprintf(buf, cap, "an integer >= %" PRId64 "%s", k->imin,
                     (k->flags & R_AUTO) ? " or \"auto\"" : "");
        break;
    case K_U64: snprintf(buf, cap, "an integer 0..%" PRIu64, UINT64_MAX); break;
    case K_NUM:
        if (k->flags & R_INTERVAL)
            snprintf(buf, cap, "a number in %c%g, %g%c", (k->flags & R_LO_OPEN) ? '(' : '[', k->lo,
                     k->hi, (k->flags & R_HI_OPEN) ? ')' : ']');
        else
            snprintf(buf, cap, "a number %s %g", (k->flags & R_LO_OPEN) ? ">" : ">=", k->lo);
        break;
    case K_EQUAL: snprintf(buf, cap, "a number"); break;
    case K_BOOL:
    case K_FIXED:
    case K_CPU_OFFLOAD:
    case K_PRECISION: snprintf(buf, cap, "true or false"); break;
    case K_OPTIM:
        snprintf(buf, cap, "one of AdamW, Adam, SGD, AdamW8bit (case-insensitive)");
        break;
    case K_DTYPE:
        if (k->flags & R_DTNAMES) {
            size_t o = (size_t)snprintf(buf, cap, "one of fp32, bf16, fp16 (or");
            for (size_t j = 0; j < NNAMES(DTYPE_NAMES) && o < cap; j++)
                o += (size_t)snprintf(buf + o, cap - o, "%s %s", j ? "," : "", DTYPE_NAMES[j].name);
            if (o < cap)
                snprintf(buf + o, cap - o, "; case-insensitive) or null");
        } else
            snprintf(buf, cap, "one of fp32, bf16, fp16 (case-insensitive) or null");
        break;
    case K_STR: snprintf(buf, cap, "a string (a directory path) or null"); break;
    case K_NAMES: snprintf(buf, cap, "an array of strings"); break;
    case K_DEVICE:
    case K_ENGINE:
    case K_SCHED:
    case K_WARMUP: {
        size_t n, o;
        const char *const *names = choice_names(k->kind, &n);
        o = (size_t)snprintf(buf, cap, "one of");
        for (size_t i = 0; i < n && o < cap; i++)
            o += (size_t)snprintf(buf + o, cap - o, "%s %s", i ? "," : "", names[i]);
        if (o < cap)
            snprintf(buf + o, cap - o, " (case-insensitive)");
        break;
    }
    case K_BETAS: snprintf(buf, cap, "an array of 2 numbers in [0, 1)"); break;
    case K_SECTION:
    case K_MONITOR: snprintf(buf, cap, "an object"); break;
    case K_REFUSED: snprintf(buf, cap, "nothing (not supported yet)"); break;
    }
    return buf;
}

/* What a refused scheduler.type can be replaced with besides DeepSpeed's five. */
#define SCHED_HINT                                                                                 \
    "; or leave the scheduler section out and use zeroc train's own --lr-schedule cosine (or "     \
    "constant) with --warmup"

static zc_status type_error(const ctx *c, const key_spec *k, const char *path, const value *v)
{
    char e[256], d[96];
    return fail(c, ZC_EINVAL, "%s: expected %s, got %s%s", path, expect(e, sizeof e, k),
                describe(d, sizeof d, v), k->kind == K_SCHED ? SCHED_HINT : "");
}

/* low: the value is below the range (else above). text: the value as the user wrote it. */
static zc_status range_error(const ctx *c, const key_spec *k, const char *path, bool low,
                             const char *text)
{
    char e[96];
    if ((k->flags & R_INTERVAL) || k->multiple)
        return fail(c, ZC_EINVAL, "%s: expected %s, got %s", path, expect(e, sizeof e, k), text);
    if (k->kind == K_NUM && low)
        return fail(c, ZC_EINVAL, "%s must be %s %g, got %s", path,
                    (k->flags & R_LO_OPEN) ? ">" : ">=", k->lo, text);
    if (k->kind == K_NUM)
        return fail(c, ZC_EINVAL, "%s must be %s %g, got %s", path,
                    (k->flags & R_HI_OPEN) ? "<" : "<=", k->hi, text);
    if (low)
        return fail(c, ZC_EINVAL, "%s must be >= %" PRId64 ", got %s", path, k->imin, text);
    return fail(c, ZC_EINVAL, "%s must be <= %" PRId64 ", got %s", path, k->imax, text);
}

/* ---------------------------------------------------------------------------------------------
 * Numbers
 * ------------------------------------------------------------------------------------------- */

/* [+-] digits [. digits] [(e|E) [+-] digits], with ".5" and "5." allowed as strtod allows them;
 * no whitespace, inf, nan or hex. JSON's number grammar is a subset. */
static bool number_syntax(const char *s, size_t n)
{
    size_t i = 0, digits = 0;
    if (i < n && (s[i] == '+' || s[i] == '-'))
        i++;
    for (; i < n && is_digit(s[i]); i++)
        digits++;
    if (i < n && s[i] == '.')
        for (i++; i < n && is_digit(s[i]); i++)
            digits++;
    if (digits == 0)
        return false;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        size_t exp_digits = 0;
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        for (; i < n && is_digit(s[i]); i++)
            exp_digits++;
        if (exp_digits == 0)
            return false;
    }
    return i == n;
}

typedef enum { INT_OK, INT_FRACTION, INT_HUGE } int_read;

/* Reads number text as an exact integer: sign and magnitude. The value is digits × 10^exp once
 * the decimal point and the trailing zeros are folded into exp; exp < 0 means a fraction. */
static int_read read_integer(const char *s, size_t n, bool *neg, uint64_t *mag)
{
    size_t i = 0, m0, m1, first = SIZE_MAX, last = 0;
    long exp = 0, frac = 0, after_last = 0;
    bool in_frac = false;

    *neg = false;
    *mag = 0;
    if (!number_syntax(s, n))
        return INT_FRACTION;
    if (s[i] == '+' || s[i] == '-')
        *neg = s[i++] == '-';
    for (m0 = i; i < n && (is_digit(s[i]) || s[i] == '.'); i++)
        ;
    m1 = i;
    if (i < n) { /* exponent; clamped, the result overflows long before */
        bool eneg = false;
        i++;
        if (s[i] == '+' || s[i] == '-')
            eneg = s[i++] == '-';
        for (; i < n; i++)
            if (exp < 100000)
                exp = exp * 10 + (s[i] - '0');
        if (eneg)
            exp = -exp;
    }
    for (size_t j = m0; j < m1; j++) {
        if (s[j] == '.') {
            in_frac = true;
            continue;
        }
        if (in_frac)
            frac++;
        if (s[j] != '0') {
            if (first == SIZE_MAX)
                first = j;
            last = j;
        }
    }
    if (first == SIZE_MAX) { /* all zeros: 0, including -0 */
        *neg = false;
        return INT_OK;
    }
    for (size_t j = last + 1; j < m1; j++)
        after_last += s[j] != '.';
    exp += after_last - frac;
    if (exp < 0)
        return INT_FRACTION;
    for (size_t j = first; j <= last; j++) {
        if (s[j] == '.')
            continue;
        unsigned d = (unsigned)(s[j] - '0');
        if (*mag > (UINT64_MAX - d) / 10)
            return INT_HUGE;
        *mag = *mag * 10 + d;
    }
    for (; exp > 0; exp--) {
        if (*mag > UINT64_MAX / 10)
            return INT_HUGE;
        *mag *= 10;
    }
    return INT_OK;
}

static zc_status check_i64(const ctx *c, const key_spec *k, const char *path, int64_t v,
                           const char *text)
{
    if (v < k->imin)
        return range_error(c, k, path, true, text);
    if (v > k->imax)
        return range_error(c, k, path, false, text);
    if (k->multiple && v % k->multiple != 0)
        return range_error(c, k, path, false, text);
    return ZC_OK;
}

static zc_status check_num(const ctx *c, const key_spec *k, const char *path, double v,
                           const char *text)
{
    bool low, high;
    if (!isfinite(v))
        return fail(c, ZC_EINVAL, "%s: expected a finite number, got %s", path, text);
    low = (k->flags & R_LO_OPEN) ? !(v > k->lo) : !(v >= k->lo);
    high = (k->flags & R_HI_OPEN) ? !(v < k->hi) : !(v <= k->hi);
    if (low || high)
        return range_error(c, k, path, low, text);
    return ZC_OK;
}

static zc_status read_int(const ctx *c, const key_spec *k, const char *path, const value *v,
                          int64_t *out)
{
    char ex[EXCERPT_BUF];
    bool neg;
    uint64_t mag;
    int_read r;

    if (v->kind != V_NUMBER)
        return type_error(c, k, path, v);
    r = read_integer(v->text, v->len, &neg, &mag);
    if (r == INT_FRACTION)
        return type_error(c, k, path, v);
    excerpt(ex, v->text, v->len);
    if (r == INT_HUGE || mag > (uint64_t)INT64_MAX + neg)
        return range_error(c, k, path, neg, ex);
    *out = neg ? (int64_t)(0 - mag) : (int64_t)mag; /* two's complement, as on every target */
    return check_i64(c, k, path, *out, ex);
}

static zc_status read_u64(const ctx *c, const key_spec *k, const char *path, const value *v,
                          uint64_t *out)
{
    char ex[EXCERPT_BUF];
    bool neg;
    int_read r;

    if (v->kind != V_NUMBER)
        return type_error(c, k, path, v);
    r = read_integer(v->text, v->len, &neg, out);
    if (r == INT_FRACTION)
        return type_error(c, k, path, v);
    if (r == INT_HUGE || neg)
        return range_error(c, k, path, neg, excerpt(ex, v->text, v->len));
    return ZC_OK;
}

static zc_status read_num(const ctx *c, const key_spec *k, const char *path, const value *v,
                          double *out)
{
    char ex[EXCERPT_BUF];
    zc_status rc;
    if (v->kind != V_NUMBER)
        return type_error(c, k, path, v);
    rc = check_num(c, k, path, v->num, excerpt(ex, v->text, v->len));
    if (rc == ZC_OK)
        *out = v->num + 0.0; /* -0 becomes 0 */
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * Applying one value to one key
 * ------------------------------------------------------------------------------------------- */

static void *field_of(zc_config *cfg, const key_spec *k)
{
    return (char *)cfg + k->off;
}

static zc_status apply_betas(const ctx *c, const key_spec *k, const value elems[2])
{
    double b[2];
    for (int i = 0; i < 2; i++) {
        char path[96];
        zc_status rc;
        snprintf(path, sizeof path, "%s[%d]", k->path, i);
        rc = read_num(c, &BETA, path, &elems[i], &b[i]);
        if (rc)
            return rc;
    }
    c->cfg->beta1 = b[0];
    c->cfg->beta2 = b[1];
    return ZC_OK;
}

/* The 16-bit type another K_PRECISION key has enabled, other than `except`; fp32 if none. */
static zc_dtype precision_enabled(const zc_config *cfg, zc_dtype except)
{
    for (size_t i = 0; i < NKEYS; i++)
        if (KEYS[i].kind == K_PRECISION && KEYS[i].dt != except &&
            *(const bool *)((const char *)cfg + KEYS[i].off))
            return KEYS[i].dt;
    return ZC_FP32;
}

static zc_status apply_value(const ctx *c, const key_spec *k, const value *v);

/* Whether the sep-joined list holds item (whole, not as a part of another item). */
static bool listed(const char *list, const char *item, const char *sep)
{
    const size_t n = strlen(item), sl = strlen(sep);
    for (const char *p = list; *p;) {
        const char *end = strstr(p, sep);
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && strncmp(p, item, n) == 0)
            return true;
        if (!end)
            break;
        p = end + sl;
    }
    return false;
}

/* Appends item to a sep-joined list held in a fixed buffer, once. An item that does not fit is
 * left out, and the list ends with "..." (never an item cut in the middle). */
static void note_sep(char *list, size_t cap, const char *item, const char *sep)
{
    size_t n = strlen(list), need = (n ? strlen(sep) : 0) + strlen(item);
    if (listed(list, item, sep) || (n >= 3 && strcmp(list + n - 3, "...") == 0))
        return;
    if (n + need < cap - 4 - strlen(sep)) /* room for the item and a later sep "..." */
        snprintf(list + n, cap - n, "%s%s", n ? sep : "", item);
    else
        snprintf(list + n, cap - n, "%s...", n ? sep : "");
}

/* A key applied; one that changes nothing here is listed in cfg->no_effect ("path (why)"). */
static void note(char *list, size_t cap, const char *item)
{
    note_sep(list, cap, item, "; ");
}

static zc_status apply(const ctx *c, const key_spec *k, const value *v)
{
    /* scheduler.type's current value is no schedule at all: "auto" would silently keep the lr
     * constant, and which schedule the Trainer would pick is not in the file */
    if (v->kind == V_STRING && !v->cli && strcmp(v->text, "auto") == 0 && k->kind == K_SCHED)
        return fail(c, ZC_EINVAL,
                    "%s: \"auto\" is not supported: zeroc cannot know which schedule the Hugging "
                    "Face Trainer would choose; name it: %s, %s, %s, %s or %s" SCHED_HINT,
                    k->path, SCHED_NAMES[1], SCHED_NAMES[2], SCHED_NAMES[3], SCHED_NAMES[4],
                    SCHED_NAMES[5]);
    /* "auto" in a file (the Hugging Face Trainer's placeholder) resolves as the Trainer does:
     * the command line's value if a flag sets the key after the file, else zeroc's default —
     * so the key keeps its current value. Keys whose own "auto" means something (R_AUTO) and
     * keys zeroc refuses are left to apply_value. */
    if (v->kind == V_STRING && !v->cli && strcmp(v->text, "auto") == 0 && !(k->flags & R_AUTO) &&
        k->kind != K_REFUSED && k->kind != K_SECTION && k->kind != K_MONITOR) {
        note(c->cfg->auto_keys, sizeof c->cfg->auto_keys, k->path);
        if (k->flags & R_AUTO0) /* the flag's default, which the flag may still replace */
            *(int64_t *)field_of(c->cfg, k) = 0;
        return ZC_OK;
    }
    zc_status rc = apply_value(c, k, v);
    if (rc == ZC_OK && (k->flags & R_NOEFFECT)) {
        char item[512];
        snprintf(item, sizeof item, "%s (%s)", k->path, k->why);
        note(c->cfg->no_effect, sizeof c->cfg->no_effect, item);
    }
    if (rc == ZC_OK && (k->flags & R_NVME))
        note_sep(c->cfg->nvme_only, sizeof c->cfg->nvme_only, k->path, ", ");
    return rc;
}

static zc_status apply_value(const ctx *c, const key_spec *k, const value *v)
{
    zc_config *cfg = c->cfg;
    zc_status rc = ZC_OK;
    char d[96];

    switch (k->kind) {
    case K_SECTION:
        if ((k->flags & R_LEGACY) && v->kind == V_BOOL) { /* DeepSpeed reads it as the stage */
            cfg->stage = v->b ? 1 : 0;
            return ZC_OK;
        }
        if (v->kind != V_OBJECT)
            return type_error(c, k, k->path, v);
        if (k->flags & R_PRESENT)
            *(bool *)field_of(cfg, k) = true;
        return ZC_OK; /* the caller walks its members */
    case K_REFUSED: return refuse(c, "%s", k->path);
    case K_MONITOR: {
        if (v->kind != V_OBJECT)
            return type_error(c, k, k->path, v);
        const cJSON *en = cJSON_GetObjectItemCaseSensitive(v->node, "enabled");
        char path[96];
        snprintf(path, sizeof path, "%s.enabled", k->path);
        if (en && !cJSON_IsBool(en)) {
            static const key_spec flag = {.kind = K_BOOL};
            value ev;
            value_from_json(c, en, &ev);
            return type_error(c, &flag, path, &ev);
        }
        if (cJSON_IsTrue(en))
            return refuse(c, "%s = true (%s)", path, k->why);
        return ZC_OK; /* disabled, as DeepSpeed's default is: its settings configure nothing */
    }
    case K_CPU_OFFLOAD:
        if (v->kind != V_BOOL)
            return type_error(c, k, k->path, v);
        *(zc_offload_device *)field_of(cfg, k) = v->b ? ZC_OFFLOAD_CPU : ZC_OFFLOAD_NONE;
        break;
    case K_INT: {
        int64_t x = 0;
        rc = read_int(c, k, k->path, v, &x);
        if (rc == ZC_OK)
            *(int *)field_of(cfg, k) = (int)x;
        break;
    }
    case K_I64: {
        int64_t x = 0;
        if ((k->flags & R_NOEFFECT) && v->kind == V_NULL) /* DeepSpeed's docs write null */
            break;
        if ((k->flags & R_AUTO) && v->kind == V_STRING && strcmp(v->text, "auto") == 0)
            x = ZC_AUTO;
        else
            rc = read_int(c, k, k->path, v, &x);
        if (rc == ZC_OK && k->has_field)
            *(int64_t *)field_of(cfg, k) = x;
        break;
    }
    case K_U64: {
        uint64_t x = 0;
        rc = read_u64(c, k, k->path, v, &x);
        if (rc == ZC_OK)
            *(uint64_t *)field_of(cfg, k) = x;
        break;
    }
    case K_NUM: {
        double x = 0;
        if ((k->flags & R_AUTO) && v->kind == V_STRING && strcmp(v->text, "auto") == 0) {
            x = ZC_AUTO; /* a number in the end (the key's comment says which): listed as auto */
            if (!(k->flags & R_SIZED))
                note(cfg->auto_keys, sizeof cfg->auto_keys, k->path);
        } else
            rc = read_num(c, k, k->path, v, &x);
        if (rc == ZC_OK && k->has_field)
            *(double *)field_of(cfg, k) = x;
        break;
    }
    case K_BOOL:
        if (v->kind != V_BOOL)
            return type_error(c, k, k->path, v);
        if (k->has_field)
            *(bool *)field_of(cfg, k) = v->b;
        break;
    case K_FIXED:
        if (v->kind != V_BOOL)
            return type_error(c, k, k->path, v);
        if (v->b == k->fixed)
            break;
        if (k->flags & R_LATER)
            return refuse(c, "%s = %s (%s)", k->path, v->b ? "true" : "false", k->why);
        return fail(c, ZC_EINVAL, "%s: %s is not supported: %s", k->path, v->b ? "true" : "false",
                    k->why);
    case K_EQUAL:
        if (v->kind != V_NUMBER)
            return type_error(c, k, k->path, v);
        if (v->num != k->only)
            return refuse(c, "%s = %s (%s)", k->path, describe(d, sizeof d, v), k->why);
        break;
    case K_OPTIM: {
        size_t i, n = sizeof OPTIM_NAMES / sizeof OPTIM_NAMES[0];
        if (v->kind != V_STRING)
            return type_error(c, k, k->path, v);
        for (i = 0; i < n && !ascii_ieq(v->text, OPTIM_NAMES[i]); i++)
            ;
        if (i == n)
            return type_error(c, k, k->path, v);
        *(zc_optim_type *)field_of(cfg, k) = (zc_optim_type)i;
        break;
    }
    case K_PRECISION:
        if (v->kind != V_BOOL)
            return type_error(c, k, k->path, v);
        *(bool *)field_of(cfg, k) = v->b;
        if (v->b) /* the last one enabled is the type; two enabled fail validation */
            cfg->dtype = k->dt;
        else if (cfg->dtype == k->dt) /* off: back to fp32, or to the other one still on */
            cfg->dtype = precision_enabled(cfg, k->dt);
        break;
    case K_DTYPE: {
        size_t i;
        if (v->kind == V_NULL) {
            *(zc_dtype *)field_of(cfg, k) = ZC_DTYPE_DEFAULT;
            break;
        }
        if (v->kind != V_STRING)
            return type_error(c, k, k->path, v);
        for (i = ZC_FP32; i < ZC_NDTYPES && !ascii_ieq(v->text, zc_dtype_name((zc_dtype)i)); i++)
            ;
        if (i == ZC_NDTYPES && (k->flags & R_DTNAMES))
            for (size_t j = 0; j < NNAMES(DTYPE_NAMES) && i == ZC_NDTYPES; j++)
                if (ascii_ieq(v->text, DTYPE_NAMES[j].name))
                    i = (size_t)DTYPE_NAMES[j].dt;
        if (i == ZC_NDTYPES)
            return type_error(c, k, k->path, v);
        *(zc_dtype *)field_of(cfg, k) = (zc_dtype)i;
        break;
    }
    case K_STR: {
        char *dst = field_of(cfg, k);
        if (v->kind == V_NULL) {
            dst[0] = '\0';
            break;
        }
        if (v->kind != V_STRING)
            return type_error(c, k, k->path, v);
        if (v->len > ZC_MAX_PATH - 1)
            return fail(c, ZC_EINVAL, "%s: longer than the limit of %d bytes, got %zu bytes",
                        k->path, ZC_MAX_PATH - 1, v->len);
        /* the value goes into checkpoints' manifest.json, which must stay UTF-8 JSON */
        size_t bad = zc_utf8_fault(v->text, v->len);
        if (bad < v->len)
            return fail(c, ZC_EINVAL,
                        "%s: not UTF-8 (byte 0x%02X at offset %zu): a path in another encoding "
                        "would make checkpoints' JSON unreadable elsewhere; use a UTF-8 name or a "
                        "symbolic link with one",
                        k->path, (unsigned char)v->text[bad], bad);
        memcpy(dst, v->text, v->len);
        dst[v->len] = '\0';
        break;
    }
    case K_NAMES: { /* the command line's "a,b" as given; a file's ["a", "b"] joined */
        char *dst = field_of(cfg, k);
        size_t o = 0;
        if (v->kind == V_STRING && (v->cli || (k->flags & R_ONE_NAME))) {
            if (v->len > ZC_MAX_PATH - 1)
                return fail(c, ZC_EINVAL, "%s: longer than the limit of %d bytes", k->path,
                            ZC_MAX_PATH - 1);
            memcpy(dst, v->text, v->len + 1);
            break;
        }
        if (v->kind != V_ARRAY)
            return type_error(c, k, k->path, v);
        char joined[ZC_MAX_PATH];
        const cJSON *item;
        cJSON_ArrayForEach(item, v->node)
        {
            if (!cJSON_IsString(item) || strchr(item->valuestring, ','))
                return fail(c, ZC_EINVAL,
                            "%s: expected an array of names (strings without a "
                            "comma)",
                            k->path);
            size_t n = strlen(item->valuestring);
            if (o + n + 2 > sizeof joined)
                return fail(c, ZC_EINVAL, "%s: longer than the limit of %d bytes", k->path,
                            ZC_MAX_PATH - 1);
            if (o)
                joined[o++] = ',';
            memcpy(joined + o, item->valuestring, n);
            o += n;
        }
        joined[o] = '\0';
        memcpy(dst, joined, o + 1);
        break;
    }
    case K_DEVICE:
    case K_ENGINE:
    case K_SCHED:
    case K_WARMUP: {
        size_t i, n;
        const char *const *names = choice_names(k->kind, &n);
        if (v->kind != V_STRING)
            return type_error(c, k, k->path, v);
        for (i = 0; i < n && !ascii_ieq(v->text, names[i]); i++)
            ;
        if (i == n)
            return type_error(c, k, k->path, v);
        choice_set(cfg, k, (int)i);
        break;
    }
    case K_BETAS: {
        value elems[2];
        int n;
        if (v->kind != V_ARRAY)
            return type_error(c, k, k->path, v);
        n = cJSON_GetArraySize(v->node);
        if (n != 2)
            return fail(c, ZC_EINVAL, "%s: expected an array of 2 numbers in [0, 1), got %d %s",
                        k->path, n, n == 1 ? "element" : "elements");
        value_from_json(c, cJSON_GetArrayItem(v->node, 0), &elems[0]);
        value_from_json(c, cJSON_GetArrayItem(v->node, 1), &elems[1]);
        rc = apply_betas(c, k, elems);
        break;
    }
    }
    if (rc == ZC_OK && (k->flags & R_MICRO))
        cfg->micro_batch_set = true;
    if (rc == ZC_OK && (k->flags & R_ACCUM))
        cfg->grad_accum_set = true;
    char *origin = k->flags & R_MICRO                                ? cfg->origin_micro_batch
                   : k->flags & R_ACCUM                              ? cfg->origin_grad_accum
                   : k->off == offsetof(zc_config, train_batch_size) ? cfg->origin_train_batch
                                                                     : NULL;
    if (rc == ZC_OK && origin)
        snprintf(origin, ZC_ORIGIN_LEN, "%s", c->origin ? c->origin : "config");
    return rc;
}

/* "(FROM)" for a batch value's origin in messages. */
static const char *from(char buf[ZC_ORIGIN_LEN + 8], const char *origin)
{
    snprintf(buf, ZC_ORIGIN_LEN + 8, "(%s)", origin[0] ? origin : "default");
    return buf;
}

/* ---------------------------------------------------------------------------------------------
 * Files and strings
 * ------------------------------------------------------------------------------------------- */

/* The row for member `name` of the object at `section` ("" = top level). A name with a dot is no
 * row: {"zero_optimization.stage": 3} is not the path zero_optimization.stage. */
static const key_spec *key_child(const char *section, const char *name)
{
    size_t sl = strlen(section);
    if (strchr(name, '.'))
        return NULL;
    for (size_t i = 0; i < NKEYS; i++) {
        const char *p = KEYS[i].path;
        if (sl == 0 ? strcmp(p, name) == 0
                    : strncmp(p, section, sl) == 0 && p[sl] == '.' && strcmp(p + sl + 1, name) == 0)
            return &KEYS[i];
    }
    return NULL;
}

static const char *canonical_path(const key_spec *k)
{
    return k->alias_of ? k->alias_of : k->path;
}

/* Duplicate, unknown or refused members are collected (collect) and skipped, with the members of
 * a section whose own value was refused; the walk goes on to name every one of them. */
static zc_status load_object(const ctx *c, const cJSON *obj, const char *section)
{
    for (const cJSON *m = obj->child; m; m = m->next) {
        char path[160], ex[EXCERPT_BUF];
        const key_spec *k;
        value v;
        zc_status rc = ZC_OK;

        excerpt(ex, m->string, strlen(m->string));
        snprintf(path, sizeof path, "%s%s%s", section, *section ? "." : "", ex);
        k = key_child(section, m->string);
        for (const cJSON *p = obj->child; p != m && rc == ZC_OK; p = p->next) {
            const key_spec *q;
            if (strcmp(p->string, m->string) == 0)
                rc = fail(c, ZC_EINVAL, "duplicate key: %s", path);
            /* the rows of a known key's section; an unknown member before m has none */
            q = k && rc == ZC_OK ? key_child(section, p->string) : NULL;
            if (q && strcmp(canonical_path(q), canonical_path(k)) == 0)
                rc = fail(c, ZC_EINVAL, "duplicate key: %s (%s is another name for %s)", path,
                          (k->alias_of ? k : q)->path, canonical_path(k));
        }
        if (rc == ZC_OK && !k && !*section) { /* DeepSpeed reads only the top-level keys it knows */
            note_sep(c->cfg->ignored, sizeof c->cfg->ignored, path, ", ");
            continue;
        }
        if (rc == ZC_OK && !k)
            rc = fail(c, ZC_EINVAL, "unknown key: %s", path);
        if (rc) {
            if ((rc = collect(c, rc)))
                return rc;
            continue;
        }
        value_from_json(c, m, &v);
        rc = apply(c, k, &v);
        if (rc == ZC_OK && k->kind == K_SECTION && cJSON_IsObject(m))
            rc = load_object(c, m, k->path);
        if ((rc = collect(c, rc)))
            return rc;
    }
    return ZC_OK;
}

/* Finds number tokens in (already valid) JSON text, skipping strings; fills out if not NULL. */
static size_t scan_numbers(const char *s, num_text *out)
{
    size_t n = 0, i = 0;
    while (s[i]) {
        if (s[i] == '"') {
            for (i++; s[i] && s[i] != '"'; i++)
                if (s[i] == '\\' && s[i + 1])
                    i++;
            if (s[i])
                i++;
        } else if (s[i] == '-' || is_digit(s[i])) {
            size_t b = i;
            while (s[i] && strchr("+-.eE0123456789", s[i]))
                i++;
            if (out)
                out[n] = (num_text){.node = NULL, .text = s + b, .len = i - b};
            n++;
        } else {
            i++;
        }
    }
    return n;
}

/* cJSON keeps members in document order, so a pre-order walk meets numbers as the text does. */
static void pair_numbers(const cJSON *node, num_text *nums, size_t n, size_t *k)
{
    for (; node; node = node->next) {
        if (cJSON_IsNumber(node) && *k < n)
            nums[(*k)++].node = node;
        if (node->child)
            pair_numbers(node->child, nums, n, k);
    }
}

static zc_status index_numbers(ctx *c, const char *json, const cJSON *root)
{
    size_t n = scan_numbers(json, NULL), k = 0;
    if (n == 0)
        return ZC_OK;
    c->nums = malloc(n * sizeof *c->nums);
    if (!c->nums)
        return fail(c, ZC_ENOMEM, "out of memory");
    c->n_nums = scan_numbers(json, c->nums);
    pair_numbers(root, c->nums, n, &k);
    if (k != n) /* cannot happen for text cJSON accepted; fall back to reprinted doubles */
        c->n_nums = 0;
    return ZC_OK;
}

/* A string of the text, a key or a value, as written, and whether it holds a \u0000 escape. */
typedef struct {
    const char *text;
    size_t len;
    bool nul;
} str_text;

/* The string tokens of (already valid) JSON text, in document order; fills out if not NULL. */
static size_t scan_strings(const char *s, str_text *out)
{
    size_t n = 0, i = 0;
    while (s[i]) {
        if (s[i] != '"') {
            i++;
            continue;
        }
        size_t b = ++i;
        bool nul = false;
        for (; s[i] && s[i] != '"'; i++)
            if (s[i] == '\\' && s[i + 1]) {
                size_t r = 0;
                while (r < 6 && s[i + r])
                    r++;
                nul = nul || zc_json_is_nul_escape(s + i, r);
                i++;
            }
        if (out)
            out[n] = (str_text){.text = s + b, .len = i - b, .nul = nul};
        n++;
        if (s[i])
            i++;
    }
    return n;
}

/* The walk of find_nul: the tokens, the next one's index, and what was found. */
typedef struct {
    const str_text *strs;
    size_t n, k;
    char path[256];
    bool key; /* the token found is a key (else a string value) */
} nul_walk;

/* cJSON keeps members in document order, so a pre-order walk meets each key, then its value,
 * as the text does. 1: w->path names the first key or string holding \u0000 (its own text as
 * written, for a key); 0: none; -1: the tokens did not pair with the nodes. */
static int find_nul(const cJSON *node, nul_walk *w)
{
    const size_t at = strlen(w->path);
    int i = 0;
    for (const cJSON *m = node->child; m; m = m->next, i++) {
        char ex[EXCERPT_BUF];
        w->path[at] = '\0';
        if (cJSON_IsObject(node)) {
            if (w->k >= w->n)
                return -1;
            const str_text *t = &w->strs[w->k++];
            excerpt(ex, t->nul ? t->text : m->string, t->nul ? t->len : strlen(m->string));
            snprintf(w->path + at, sizeof w->path - at, "%s%s", at ? "." : "", ex);
            if (t->nul) {
                w->key = true;
                return 1;
            }
        } else {
            snprintf(w->path + at, sizeof w->path - at, "[%d]", i);
        }
        if (cJSON_IsString(m)) {
            if (w->k >= w->n)
                return -1;
            if (w->strs[w->k++].nul) {
                w->key = false;
                return 1;
            }
        }
        int r = m->child ? find_nul(m, w) : 0;
        if (r)
            return r;
    }
    w->path[at] = '\0';
    return 0;
}

/* cJSON decodes \u0000 into its C string, which then ends there: {"seed\u0000x": 5} would set
 * the seed and "SGD\u0000 junk" would be SGD. A key or string holding it is refused by path. */
static zc_status check_nul_escapes(const ctx *c, const char *json, const cJSON *root)
{
    if (!strstr(json, "\\u0000")) /* a filter only: an escaped backslash before u0000 passes */
        return ZC_OK;
    nul_walk w = {.n = scan_strings(json, NULL)};
    str_text *strs = malloc(w.n * sizeof *strs + 1);
    if (!strs)
        return fail(c, ZC_ENOMEM, "out of memory");
    scan_strings(json, strs);
    w.strs = strs;
    bool any = false;
    for (size_t i = 0; i < w.n; i++)
        any = any || strs[i].nul;
    int r = any ? find_nul(root, &w) : 0;
    free(strs);
    if (r == 0 && !any)
        return ZC_OK;
    if (r <= 0) /* cannot happen for text cJSON accepted */
        return fail(c, ZC_EINVAL, "a key or string holds \\u0000 (a NUL character): not supported");
    if (w.key)
        return fail(c, ZC_EINVAL,
                    "%s: a key holding \\u0000 (a NUL character) is not supported (it would be "
                    "read as the text before it)",
                    w.path);
    return fail(c, ZC_EINVAL,
                "%s: a string holding \\u0000 (a NUL character) is not supported (it would be "
                "read as the text before it)",
                w.path);
}

/* cJSON reports where it gave up, which is sometimes the end of the text even when the mistake
 * is earlier (a trailing comma); then the end of the last non-blank line is shown instead. */
static zc_status parse_error(const ctx *c, const char *json, const char *at)
{
    char ex[EXCERPT_BUF];
    const char *from = at, *to = at, *p;
    int line = 1;

    if (!at)
        return fail(c, ZC_EINVAL, "not JSON");
    if (*at == '\0') {
        while (to > json && (unsigned char)to[-1] <= ' ')
            to--;
        for (from = to; from > json && from[-1] != '\n' && from[-1] != '\r' && to - from < 24;)
            from--;
    } else {
        while (*to && *to != '\n' && *to != '\r' && to - from < 24)
            to++;
    }
    for (p = json; p < from; p++)
        line += *p == '\n';
    return fail(c, ZC_EINVAL, "not JSON (parse error near line %d%s: '%s')", line,
                *at == '\0' ? ", at the end" : "", excerpt(ex, from, (size_t)(to - from)));
}

/* What holds between a file's keys: a scheduler names its type, and its params are the type's
 * (DeepSpeed's constructor fails on another's); gradient_clipping and the older
 * optimizer.params.max_grad_norm (the same clipping) agree when both are given. Refusals are
 * collected with the file's others. */
static void check_file(const ctx *c, const cJSON *root)
{
    const cJSON *sched = cJSON_GetObjectItemCaseSensitive(root, "scheduler");
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(sched, "type");
    if (cJSON_IsObject(sched) && !type)
        collect(c, fail(c, ZC_EINVAL,
                        "scheduler.type: required (WarmupLR, WarmupDecayLR, WarmupCosineLR, "
                        "OneCycle or LRRangeTest)"));
    const cJSON *sp = cJSON_GetObjectItemCaseSensitive(sched, "params");
    const zc_sched_type st = c->cfg->sched;
    if (cJSON_IsString(type) && ascii_ieq(type->valuestring, zc_sched_name(st)) &&
        cJSON_IsObject(sp))
        for (const cJSON *m = sp->child; m; m = m->next) {
            const key_spec *k = key_child("scheduler.params", m->string);
            if (k && k->scheds && !(k->scheds & (1u << st)))
                collect(c, fail(c, ZC_EINVAL,
                                "%s: not a parameter of %s (DeepSpeed's %s would fail on it as an "
                                "unexpected keyword argument); it is one of %s",
                                k->path, zc_sched_name(st), zc_sched_name(st),
                                (k->scheds & S_ONE)                            ? "OneCycle's"
                                : (k->scheds & S_RANGE)                        ? "LRRangeTest's"
                                : (k->scheds & S_COS) && !(k->scheds & S_WARM) ? "WarmupCosineLR's"
                                : (k->scheds & S_COS) ? "WarmupDecayLR's and WarmupCosineLR's"
                                                      : "WarmupLR's and WarmupDecayLR's"));
        }
    const cJSON *clip = cJSON_GetObjectItemCaseSensitive(root, "gradient_clipping");
    const cJSON *opt = cJSON_GetObjectItemCaseSensitive(root, "optimizer");
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(opt, "params");
    const cJSON *mgn = cJSON_GetObjectItemCaseSensitive(params, "max_grad_norm");
    if (cJSON_IsNumber(clip) && cJSON_IsNumber(mgn) && clip->valuedouble != mgn->valuedouble)
        collect(c, fail(c, ZC_EINVAL,
                        "optimizer.params.max_grad_norm %g and gradient_clipping %g "
                        "disagree (both set the global gradient-norm clipping; give one)",
                        mgn->valuedouble, clip->valuedouble));
}

/* The one message for all of a file's refusals: the problems in document order, then the keys
 * for what zeroc lacks. When they do not fit, whole items are left out from the end and counted. */
static zc_status refuse_file(const ctx *c, zc_err *err, const refusals *problems,
                             const refusals *lacking)
{
    const refusals *lists[2] = {problems, lacking};
    const size_t fits = sizeof err->msg - 1 - strlen(c->origin) - 2; /* after "ORIGIN: " */
    char msg[sizeof err->msg];
    size_t len = 0;
    int left = problems->cut + lacking->cut, total = problems->n + lacking->n, shown = 0;
    size_t all = strlen(problems->text) + strlen(lacking->text) + 24;
    /* whole items while they fit, room kept for "; and N more" unless every one fits */
    const size_t room = left || all > fits ? fits - 24 : fits;
    for (int l = 0; l < 2; l++)
        for (int i = 0; i < lists[l]->n; i++) {
            const refusals *r = lists[l];
            const char *item = r->text + r->start[i];
            size_t ilen = i + 1 < r->n ? (size_t)(r->start[i + 1] - 2 - r->start[i]) : strlen(item);
            const char *pre = l == 1 && i == 0 ? "not supported yet: " : "";
            size_t add = (len ? 2 : 0) + strlen(pre) + ilen;
            if (shown < total && len + add > room) {
                left += total - shown;
                goto done;
            }
            len += (size_t)snprintf(msg + len, sizeof msg - len, "%s%s%.*s", len ? "; " : "", pre,
                                    (int)ilen, item);
            shown++;
        }
done:
    msg[len < sizeof msg ? len : sizeof msg - 1] = '\0';
    if (left)
        return zc_err_set(err, ZC_EINVAL, "%s: %s; and %d more", c->origin, msg, left);
    return zc_err_set(err, ZC_EINVAL, "%s: %s", c->origin, msg);
}

static void check_rules(const ctx *c, const zc_config *cfg, int world_size);

zc_status zc_config_load_string(zc_config *cfg, const char *json, const char *origin, zc_err *err)
{
    zc_config work;
    ctx c;
    cJSON *root = NULL;
    const char *end = NULL, *p = json;
    zc_status rc;

    ZC_ASSERT(cfg && json);
    work = *cfg;
    c = (ctx){.origin = origin ? origin : "config", .err = err, .cfg = &work};
    while (*p && (unsigned char)*p <= ' ')
        p++;
    if (*p == '\0')
        return fail(&c, ZC_EINVAL, "not JSON (empty)");

    root = cJSON_ParseWithOpts(json, &end, 1);
    if (!root) {
        rc = parse_error(&c, json, end);
        goto out;
    }
    if (!cJSON_IsObject(root)) {
        char d[96];
        value v;
        value_from_json(&c, root, &v);
        rc = fail(&c, ZC_EINVAL, "expected a JSON object at the top level, got %s",
                  describe(d, sizeof d, &v));
        goto out;
    }
    rc = check_nul_escapes(&c, json, root);
    if (rc == ZC_OK)
        rc = index_numbers(&c, json, root);
    if (rc == ZC_OK) {
        /* each refusal's message is made here, then collected; the caller's err gets one */
        refusals *lists = calloc(2, sizeof *lists);
        zc_err one = {0};
        if (!lists) {
            rc = fail(&c, ZC_ENOMEM, "out of memory");
            goto out;
        }
        c.problems = &lists[0];
        c.lacking = &lists[1];
        c.err = &one;
        rc = load_object(&c, root, "");
        if (rc == ZC_OK)
            check_file(&c, root);
        /* a file refused anyway: its conflicts between keys too, now rather than in the run
         * after the next edit (alone, they wait for validate: a flag may still settle one) */
        if (rc == ZC_OK && lists[0].n + lists[0].cut + lists[1].n + lists[1].cut)
            check_rules(&c, &work, 0);
        c.err = err;
        if (rc) /* not a refusal: out of memory */
            zc_err_set(err, rc, "%s", one.msg);
        else if (lists[0].n + lists[0].cut + lists[1].n + lists[1].cut)
            rc = refuse_file(&c, err, &lists[0], &lists[1]);
        free(lists);
    }
    if (rc == ZC_OK)
        *cfg = work;
out:
    cJSON_Delete(root);
    free(c.nums);
    return rc;
}

#define CONFIG_FILE_MAX (64u << 20) /* no config is this large; something else was passed */

zc_status zc_config_load_file(zc_config *cfg, const char *path, zc_err *err)
{
    FILE *f;
    char *buf = NULL;
    size_t len = 0, cap = 0;
    zc_status rc;

    ZC_ASSERT(cfg && path);
    f = fopen(path, "rb");
    if (!f)
        return zc_err_set(err, ZC_EIO, "cannot read config file '%s': %s", path, strerror(errno));
    /* Read to EOF rather than trusting ftell, so pipes and <(...) work too. */
    for (;;) {
        size_t got;
        if (cap - len < 4096) {
            char *nb;
            cap = cap ? cap * 2 : 8192;
            nb = realloc(buf, cap);
            if (!nb) {
                rc = zc_err_set(err, ZC_ENOMEM, "%s: out of memory reading the file", path);
                goto out;
            }
            buf = nb;
        }
        got = fread(buf + len, 1, cap - len - 1, f);
        len += got;
        if (got == 0)
            break;
        if (len > CONFIG_FILE_MAX) {
            rc = zc_err_set(err, ZC_EIO, "config file '%s' is larger than %u MiB", path,
                            CONFIG_FILE_MAX >> 20);
            goto out;
        }
    }
    if (ferror(f)) {
        rc = zc_err_set(err, ZC_EIO, "cannot read config file '%s': %s", path, strerror(errno));
        goto out;
    }
    buf[len] = '\0';
    if (strlen(buf) != len) {
        rc = zc_err_set(err, ZC_EINVAL, "%s: not JSON (NUL byte at offset %zu)", path, strlen(buf));
        goto out;
    }
    rc = zc_config_load_string(cfg, buf, path, err);
out:
    free(buf);
    fclose(f);
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * Command line
 * ------------------------------------------------------------------------------------------- */

static const key_spec *key_find(const char *path)
{
    for (size_t i = 0; i < NKEYS; i++)
        if (strcmp(KEYS[i].path, path) == 0)
            return &KEYS[i];
    return NULL;
}

/* "zero_optimization.offload_optimizer.device" lies under a refused key. */
static const key_spec *refused_prefix(const char *path)
{
    for (size_t i = 0; i < NKEYS; i++) {
        size_t n = strlen(KEYS[i].path);
        if ((KEYS[i].kind == K_REFUSED || KEYS[i].kind == K_MONITOR) &&
            strncmp(path, KEYS[i].path, n) == 0 && path[n] == '.')
            return &KEYS[i];
    }
    return NULL;
}

/* "0.9,0.95" (spaces around the comma allowed) into two number values. */
static zc_status set_betas(const ctx *c, const key_spec *k, const char *s)
{
    const char *comma = strchr(s, ',');
    const char *b[2] = {NULL, NULL}, *e[2] = {NULL, NULL}; /* [begin, end) of each number */
    value elems[2];
    char ex[EXCERPT_BUF];
    bool ok = comma && !strchr(comma + 1, ',');

    if (ok) {
        b[0] = s;
        e[0] = comma;
        b[1] = comma + 1;
        e[1] = s + strlen(s);
    }
    for (int i = 0; i < 2 && ok; i++) {
        while (b[i] < e[i] && *b[i] == ' ')
            b[i]++;
        while (e[i] > b[i] && e[i][-1] == ' ')
            e[i]--;
        ok = number_syntax(b[i], (size_t)(e[i] - b[i]));
    }
    if (!ok)
        return fail(c, ZC_EINVAL, "%s: expected two numbers like \"0.9,0.999\", got \"%s\"",
                    k->path, excerpt(ex, s, strlen(s)));
    for (int i = 0; i < 2; i++) {
        memset(&elems[i], 0, sizeof elems[i]);
        elems[i].kind = V_NUMBER;
        elems[i].text = b[i];
        elems[i].len = (size_t)(e[i] - b[i]);
        elems[i].num = strtod(b[i], NULL); /* stops at e[i]: a space, the comma or the end */
    }
    return apply_betas(c, k, elems);
}

static zc_status set_value(const ctx *c, const key_spec *k, const char *s)
{
    value v;
    memset(&v, 0, sizeof v);
    v.cli = true;
    v.text = s;
    v.len = strlen(s);
    switch (k->kind) {
    case K_INT:
    case K_I64:
    case K_U64:
    case K_NUM:
    case K_EQUAL:
        if ((k->flags & R_AUTO) && strcmp(s, "auto") == 0) {
            v.kind = V_STRING;
            break;
        }
        if (!number_syntax(s, v.len))
            return type_error(c, k, k->path, &v);
        v.kind = V_NUMBER;
        v.num = strtod(s, NULL);
        break;
    case K_BOOL:
    case K_FIXED:
    case K_CPU_OFFLOAD:
    case K_PRECISION:
        if (strcmp(s, "true") != 0 && strcmp(s, "false") != 0)
            return type_error(c, k, k->path, &v);
        v.kind = V_BOOL;
        v.b = s[0] == 't';
        break;
    case K_OPTIM:
    case K_NAMES: /* the names joined by "," */
    case K_STR:   /* as given: a directory named "null" is a directory */
    case K_DEVICE:
    case K_ENGINE:
    case K_SCHED:
    case K_WARMUP: v.kind = V_STRING; break;
    case K_DTYPE: /* null (JSON's spelling) for the default */
        v.kind = strcmp(s, "null") == 0 ? V_NULL : V_STRING;
        break;
    case K_BETAS: return set_betas(c, k, s);
    case K_SECTION:
    case K_MONITOR:
    case K_REFUSED: break; /* handled by the caller */
    }
    return apply(c, k, &v);
}

zc_status zc_config_set(zc_config *cfg, const char *path, const char *value_str, zc_err *err)
{
    zc_config work;
    ctx c;
    const key_spec *k;
    char ex[EXCERPT_BUF];
    zc_status rc;

    ZC_ASSERT(cfg && path && value_str);
    work = *cfg;
    c = (ctx){.origin = "command line", .err = err, .cfg = &work};
    k = key_find(path);
    if (!k) {
        const key_spec *r = refused_prefix(path);
        if (r)
            return fail(&c, ZC_EINVAL, "not supported yet: %s", r->path);
        return fail(&c, ZC_EINVAL, "unknown key: %s", excerpt(ex, path, strlen(path)));
    }
    if (k->kind == K_REFUSED || k->kind == K_MONITOR)
        return fail(&c, ZC_EINVAL, "not supported yet: %s", k->path);
    if (k->kind == K_SECTION) {
        const char *example = "";
        size_t n = strlen(k->path);
        for (size_t i = 0; i < NKEYS && !*example; i++)
            if (strncmp(KEYS[i].path, k->path, n) == 0 && KEYS[i].path[n] == '.' &&
                KEYS[i].kind != K_SECTION && KEYS[i].kind != K_REFUSED)
                example = KEYS[i].path;
        return fail(&c, ZC_EINVAL, "%s is a section, not a value; set one of its keys, e.g. %s",
                    k->path, example);
    }
    rc = set_value(&c, k, value_str);
    if (rc == ZC_OK)
        *cfg = work;
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * Validation
 * ------------------------------------------------------------------------------------------- */

/* Every row's range again, on values that may have been filled in by hand. */
static zc_status check_fields(const ctx *c, const zc_config *cfg)
{
    char text[40];
    zc_status rc = ZC_OK;

    for (size_t i = 0; i < NKEYS && rc == ZC_OK; i++) {
        const key_spec *k = &KEYS[i];
        const void *f = (const char *)cfg + k->off;
        if (!k->has_field)
            continue;
        switch (k->kind) {
        case K_INT: {
            int v = *(const int *)f;
            snprintf(text, sizeof text, "%d", v);
            rc = check_i64(c, k, k->path, v, text);
            break;
        }
        case K_I64: {
            int64_t v = *(const int64_t *)f;
            if ((v == 0 && (k->flags & R_UNSET0)) || (v == ZC_AUTO && (k->flags & R_AUTO)))
                break;
            snprintf(text, sizeof text, "%" PRId64, v);
            rc = check_i64(c, k, k->path, v, text);
            break;
        }
        case K_NUM: {
            double v = *(const double *)f;
            /* an R_SIZED key's field is never "not given": NaN is a bad value there */
            if (((k->flags & R_AUTO) && (v == ZC_AUTO || (isnan(v) && !(k->flags & R_SIZED)))) ||
                ((k->flags & R_NANUNSET) && isnan(v)))
                break;
            fmt_double(text, sizeof text, v);
            rc = check_num(c, k, k->path, v, text);
            break;
        }
        case K_OPTIM: {
            zc_optim_type t = *(const zc_optim_type *)f;
            if ((unsigned)t >= sizeof OPTIM_NAMES / sizeof OPTIM_NAMES[0])
                rc = fail(c, ZC_EINVAL,
                          "%s: expected one of AdamW, Adam, SGD, AdamW8bit, got enum value %d",
                          k->path, (int)t);
            break;
        }
        case K_DTYPE: {
            zc_dtype t = *(const zc_dtype *)f;
            if (t != ZC_DTYPE_DEFAULT && t != ZC_FP32 && t != ZC_BF16 && t != ZC_FP16)
                rc = fail(c, ZC_EINVAL,
                          "%s: expected one of fp32, bf16, fp16 or null, got enum value %d",
                          k->path, (int)t);
            break;
        }
        case K_STR:
        case K_NAMES:
            if (!memchr(f, '\0', ZC_MAX_PATH))
                rc = fail(c, ZC_EINVAL, "%s: not a string of at most %d bytes (no NUL byte)",
                          k->path, ZC_MAX_PATH - 1);
            break;
        case K_SCHED:
            if (*(const zc_sched_type *)f == ZC_SCHED_NONE)
                break;
            /* fall through */
        case K_DEVICE:
        case K_ENGINE:
        case K_WARMUP:
            if (!choice_name(cfg, k)) {
                char e[96];
                rc = fail(c, ZC_EINVAL, "%s: expected %s, got enum value %d", k->path,
                          expect(e, sizeof e, k), choice_get(cfg, k));
            }
            break;
        default: break; /* K_U64: every value is valid; K_BOOL: likewise */
        }
    }
    for (int i = 0; i < 2 && rc == ZC_OK; i++) {
        double v = i == 0 ? cfg->beta1 : cfg->beta2;
        char path[40];
        snprintf(path, sizeof path, "optimizer.params.betas[%d]", i);
        fmt_double(text, sizeof text, v);
        rc = check_num(c, &BETA, path, v, text);
    }
    return rc;
}

/* The K_PRECISION keys that enable dt, for messages: "bf16.enabled (or bfloat16.enabled)". */
static const char *precision_keys(char *buf, size_t cap, zc_dtype dt)
{
    size_t n = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < NKEYS; i++)
        if (KEYS[i].kind == K_PRECISION && KEYS[i].dt == dt && n < cap)
            n += (size_t)snprintf(buf + n, cap - n, n ? " (or %s)" : "%s", KEYS[i].path);
    return buf;
}

/* dtype is one stored type, and it agrees with the enabled keys; at most one is enabled. */
static zc_status check_precision(const ctx *c, const zc_config *cfg)
{
    char a[96], b[96];
    if (cfg->dtype != ZC_FP32 && cfg->dtype != ZC_BF16 && cfg->dtype != ZC_FP16)
        return fail(c, ZC_EINVAL,
                    "dtype (fp16.enabled / bf16.enabled) must be fp32, bf16 or "
                    "fp16, got enum value %d",
                    (int)cfg->dtype);
    if (cfg->fp16_enabled && cfg->bf16_enabled)
        return fail(c, ZC_EINVAL,
                    "%s and %s cannot both be true: bfloat16 and fp16 modes cannot be "
                    "simultaneously enabled",
                    precision_keys(a, sizeof a, ZC_FP16), precision_keys(b, sizeof b, ZC_BF16));
    for (size_t i = 0; i < NKEYS; i++) {
        const key_spec *k = &KEYS[i];
        if (k->kind == K_PRECISION && *(const bool *)((const char *)cfg + k->off) &&
            cfg->dtype != k->dt) /* only by hand: the loaders keep them in step */
            return fail(c, ZC_EINVAL, "%s is true but dtype is %s", k->path,
                        zc_dtype_name(cfg->dtype));
    }
    return ZC_OK;
}

/* NVMe offload: the stage that partitions what is offloaded, and a directory for the files.
 * "cpu" is accepted at any stage: on a CPU machine the states are in RAM already. */
static zc_status check_offload(const ctx *c, const zc_config *cfg)
{
    if (cfg->offload_optimizer == ZC_OFFLOAD_NVME) {
        if (cfg->stage < 1)
            return fail(c, ZC_EINVAL,
                        "zero_optimization.offload_optimizer.device nvme needs "
                        "zero_optimization.stage 1, 2 or 3 (the stages that partition the "
                        "optimizer state), got stage %d",
                        cfg->stage);
        if (cfg->optimizer_nvme_path[0] == '\0')
            return fail(c, ZC_EINVAL,
                        "zero_optimization.offload_optimizer.nvme_path: required when device is "
                        "nvme");
    }
    if (cfg->offload_param == ZC_OFFLOAD_NVME) {
        if (cfg->stage != 3) /* DeepSpeed's rule */
            return fail(c, ZC_EINVAL,
                        "zero_optimization.offload_param.device nvme needs "
                        "zero_optimization.stage 3 (the stage that partitions the parameters), "
                        "got stage %d",
                        cfg->stage);
        if (cfg->param_nvme_path[0] == '\0')
            return fail(c, ZC_EINVAL,
                        "zero_optimization.offload_param.nvme_path: required when device is "
                        "nvme");
    }
    return ZC_OK;
}

/* Adam's settings away from their defaults under SGD, which would not use them: refused, as
 * torch.optim.SGD (which DeepSpeed hands the params to) refuses the keywords. Defaults pass, so
 * a config written out whole (a checkpoint's) reads back. */
static zc_status sgd_without_adam_params(const ctx *c, const zc_config *cfg)
{
    if (cfg->optim != ZC_OPTIM_SGD)
        return ZC_OK;
    zc_config d;
    zc_config_defaults(&d);
    const char *key = cfg->beta1 != d.beta1 || cfg->beta2 != d.beta2 ? "betas"
                      : cfg->eps != d.eps                            ? "eps"
                      : cfg->bias_correction != d.bias_correction    ? "bias_correction"
                      : cfg->adam_w_mode != d.adam_w_mode            ? "adam_w_mode"
                                                                     : NULL;
    if (!key)
        return ZC_OK;
    return fail(c, ZC_EINVAL,
                "optimizer.params.%s is set for Adam, but optimizer.type is SGD, which does not "
                "use it (torch.optim.SGD refuses it too); remove it or choose Adam or AdamW",
                key);
}

/* OneCycle's bounds have no default in DeepSpeed's constructor; a cosine with no step after its
 * warmup divides by zero in DeepSpeed's; OneCycle's momentum cycle needs per-step betas. */
static zc_status check_schedule(const ctx *c, const zc_config *cfg)
{
    if (cfg->sched == ZC_SCHED_ONE_CYCLE && (isnan(cfg->cycle_min_lr) || isnan(cfg->cycle_max_lr)))
        return fail(c, ZC_EINVAL,
                    "scheduler.params.%s: required by OneCycle (DeepSpeed's has no default for "
                    "cycle_min_lr and cycle_max_lr)",
                    isnan(cfg->cycle_min_lr) ? "cycle_min_lr" : "cycle_max_lr");
    /* DeepSpeed gives its optimizer (betas[0] from cycle_min_mom..cycle_max_mom, betas[1] 0.99)
     * every step; torch's SGD has no betas, and there its OneCycle skips the cycle */
    if (cfg->sched == ZC_SCHED_ONE_CYCLE && cfg->cycle_momentum && cfg->optim != ZC_OPTIM_SGD)
        return fail(c, ZC_EINVAL,
                    "scheduler.params.cycle_momentum: true (DeepSpeed's default when not given) "
                    "is not supported with optimizer.type %s: DeepSpeed's OneCycle would set "
                    "beta1 from cycle_min_mom..cycle_max_mom every step (and beta2 to 0.99), and "
                    "zeroc's optimizer keeps optimizer.params.betas for the whole run; set "
                    "cycle_momentum false" SCHED_HINT,
                    zc_optim_name(cfg->optim));
    const int64_t w = cfg->warmup_num_steps < 2 ? 2 : cfg->warmup_num_steps;
    if (cfg->sched == ZC_SCHED_WARMUP_COSINE_LR && cfg->total_num_steps == w)
        return fail(c, ZC_EINVAL,
                    "scheduler.params.total_num_steps %" PRId64 " equals the warmup (%" PRId64
                    "%s): WarmupCosineLR decays over the steps after it, and DeepSpeed's divides "
                    "by their number (zero); give more steps or a shorter warmup",
                    cfg->total_num_steps, w,
                    cfg->warmup_num_steps < 2 ? ", warmup_num_steps taken as 2 as DeepSpeed does"
                                              : " warmup_num_steps");
    return ZC_OK;
}

/* The rules between keys, each refusal collected (c->problems), so that one message names all
 * of them. world_size 0: the rules that need it are left out (a file, before the run's size). */
static void check_rules(const ctx *c, const zc_config *cfg, int world_size)
{
    /* DeepSpeed silently treats AdamW as decoupled whatever adam_w_mode says; asking for both
     * is a contradiction, so it is refused rather than resolved one way. */
    if ((cfg->optim == ZC_OPTIM_ADAMW || cfg->optim == ZC_OPTIM_ADAMW8BIT) && !cfg->adam_w_mode)
        collect(c, fail(c, ZC_EINVAL,
                        "optimizer.params.adam_w_mode is false but optimizer.type is %s, whose "
                        "weight decay is always decoupled; use type Adam for L2 weight decay",
                        zc_optim_name(cfg->optim)));
    collect(c, sgd_without_adam_params(c, cfg));
    /* the remainders complete bf16 weights to the fp32 master: no other stored type has the
     * master's top half */
    if (cfg->compact_master && (cfg->optim == ZC_OPTIM_SGD || cfg->dtype != ZC_BF16))
        collect(c, fail(c, ZC_EINVAL,
                        "optimizer.params.compact_master is true, which keeps the fp32 master "
                        "as the bf16 weights plus 16-bit remainders: it needs optimizer.type "
                        "Adam, AdamW or AdamW8bit and bf16.enabled true, got type %s with %s "
                        "parameters",
                        zc_optim_name(cfg->optim), zc_dtype_name(cfg->dtype)));
    if (cfg->lora_bias[0] && strcmp(cfg->lora_bias, "none"))
        collect(c, fail(c, ZC_EINVAL,
                        "lora.bias is \"%.40s\"; zeroc trains no bias with LoRA (expected "
                        "\"none\")",
                        cfg->lora_bias));
    if ((cfg->quantized_weights || cfg->quantized_gradients || cfg->hpz_partition_size > 1) &&
        cfg->stage != 3)
        collect(c, fail(c, ZC_EINVAL,
                        "zero_optimization.%s (ZeRO++) needs zero_optimization.stage "
                        "3, got stage %d",
                        cfg->quantized_weights     ? "zero_quantized_weights"
                        : cfg->quantized_gradients ? "zero_quantized_gradients"
                                                   : "zero_hpz_partition_size",
                        cfg->stage));
    if (world_size > 0 && world_size % cfg->hpz_partition_size != 0)
        collect(c, fail(c, ZC_EINVAL,
                        "zero_optimization.zero_hpz_partition_size %d must divide the "
                        "number of ranks, %d (it is the ranks of a host that share the secondary "
                        "copy)",
                        cfg->hpz_partition_size, world_size));
    const zc_status prec = check_precision(c, cfg);
    collect(c, prec);
    collect(c, check_offload(c, cfg));
    collect(c, check_schedule(c, cfg));
    if (cfg->loss_scale != 0 && cfg->loss_scale < FLT_MIN) {
        char v[40];
        fmt_double(v, sizeof v, cfg->loss_scale);
        collect(c, fail(c, ZC_EINVAL,
                        "fp16.loss_scale %s: expected 0 (dynamic) or a static scale "
                        ">= 2^-126 (the smallest normal fp32 number)",
                        v));
    }
    /* Dynamic loss scaling starts at 2^initial_scale_power and never goes below min_loss_scale;
     * a minimum above the start contradicts it. Ignored, as by DeepSpeed, when fp16 is off. */
    if (prec == ZC_OK && cfg->dtype == ZC_FP16 && cfg->loss_scale == 0 &&
        cfg->min_loss_scale > ldexp(1.0, cfg->initial_scale_power)) {
        char min[40], start[40];
        fmt_double(min, sizeof min, cfg->min_loss_scale);
        fmt_double(start, sizeof start, ldexp(1.0, cfg->initial_scale_power));
        collect(c, fail(c, ZC_EINVAL,
                        "fp16.min_loss_scale %s must be <= 2^fp16.initial_scale_power = 2^%d = "
                        "%s, where dynamic loss scaling starts",
                        min, cfg->initial_scale_power, start));
    }
    if (world_size > 0 && cfg->train_batch_size != 0) {
        int64_t per_step = (int64_t)cfg->micro_batch * cfg->grad_accum; /* < 2^62 */
        if (per_step > INT64_MAX / world_size || per_step * world_size != cfg->train_batch_size) {
            char product[40] = "more than 2^63";
            if (per_step <= INT64_MAX / world_size)
                snprintf(product, sizeof product, "%" PRId64, per_step * world_size);
            char ft[ZC_ORIGIN_LEN + 8], fm[ZC_ORIGIN_LEN + 8], fa[ZC_ORIGIN_LEN + 8];
            collect(c, fail(c, ZC_EINVAL,
                            "train_batch_size %" PRId64 " %s != train_micro_batch_size_per_gpu "
                            "%d %s \u00d7 gradient_accumulation_steps %d %s \u00d7 world size %d "
                            "= %s",
                            cfg->train_batch_size, from(ft, cfg->origin_train_batch),
                            cfg->micro_batch, from(fm, cfg->origin_micro_batch), cfg->grad_accum,
                            from(fa, cfg->origin_grad_accum), world_size, product));
        }
    }
}

/* The collected refusals as one message (origin-less: validate's), whole items while they fit. */
static zc_status refuse_rules(zc_err *err, const refusals *r)
{
    if (r->n + r->cut == 0)
        return ZC_OK;
    if (r->cut)
        return zc_err_set(err, ZC_EINVAL, "%s; and %d more", r->text, r->cut);
    return zc_err_set(err, ZC_EINVAL, "%s", r->text);
}

zc_status zc_config_validate(const zc_config *cfg, int world_size, zc_err *err)
{
    ctx c = {.origin = NULL, .err = err};
    zc_status rc;

    ZC_ASSERT(cfg);
    rc = check_fields(&c, cfg);
    if (rc)
        return rc;
    if (world_size < 1)
        return fail(&c, ZC_EINVAL, "world size must be >= 1, got %d", world_size);
    refusals *r = calloc(1, sizeof *r);
    if (!r)
        return fail(&c, ZC_ENOMEM, "out of memory");
    zc_err one = {0};
    c.err = &one;
    c.problems = r;
    check_rules(&c, cfg, world_size);
    rc = refuse_rules(err, r);
    free(r);
    return rc;
}

/* What the log should say about the final configuration (the file's and the flags' values):
 * an optimizer lr the scheduler does not use, and the keys the file gave that act only on an
 * offload to NVMe when nothing is offloaded there. */
static void note_final(zc_config *cfg)
{
    if (((1u << cfg->sched) & S_WARM) && isnan(cfg->warmup_max_lr) && cfg->lr != ZC_WARMUP_MAX_LR)
        note(cfg->no_effect, sizeof cfg->no_effect,
             "optimizer.params.lr (the scheduler has no warmup_max_lr, so it peaks at DeepSpeed's "
             "default 0.001 and the optimizer's lr is not used)");
    if ((cfg->sched == ZC_SCHED_ONE_CYCLE || cfg->sched == ZC_SCHED_LR_RANGE_TEST) &&
        cfg->lr != ZC_WARMUP_MAX_LR) /* 0.001 is also the optimizer's default lr */
        note(cfg->no_effect, sizeof cfg->no_effect,
             cfg->sched == ZC_SCHED_ONE_CYCLE
                 ? "optimizer.params.lr (OneCycle sets the rate from cycle_min_lr and "
                   "cycle_max_lr, as DeepSpeed's does)"
                 : "optimizer.params.lr (LRRangeTest sets the rate from lr_range_test_min_lr, as "
                   "DeepSpeed's does)");
    if (cfg->sched == ZC_SCHED_ONE_CYCLE && cfg->cycle_momentum && cfg->optim == ZC_OPTIM_SGD)
        note(cfg->no_effect, sizeof cfg->no_effect,
             "scheduler.params.cycle_momentum (SGD has no betas to cycle; DeepSpeed's OneCycle "
             "skips it too)");
    if (cfg->nvme_only[0] && cfg->offload_optimizer != ZC_OFFLOAD_NVME &&
        cfg->offload_param != ZC_OFFLOAD_NVME) {
        char item[sizeof cfg->nvme_only + 96];
        snprintf(item, sizeof item, "%s (%s only with an offload to nvme, and neither device is)",
                 cfg->nvme_only, strchr(cfg->nvme_only, ',') ? "they act" : "it acts");
        note(cfg->no_effect, sizeof cfg->no_effect, item);
    }
}

zc_status zc_config_resolve_batch(zc_config *cfg, int world_size, zc_err *err)
{
    ctx c = {.origin = NULL, .err = err};
    zc_config work;
    int64_t world = world_size, train;
    zc_status rc;

    ZC_ASSERT(cfg);
    work = *cfg;
    rc = check_fields(&c, &work); /* the derivation divides by these */
    if (rc)
        return rc;
    if (world_size < 1)
        return fail(&c, ZC_EINVAL, "world size must be >= 1, got %d", world_size);
    train = work.train_batch_size;
    if (train == 0) {
        int64_t per_step = (int64_t)work.micro_batch * work.grad_accum;
        if (per_step > INT64_MAX / world)
            return fail(&c, ZC_EINVAL,
                        "train_micro_batch_size_per_gpu %d \u00d7 gradient_accumulation_steps %d "
                        "\u00d7 world size %d does not fit in 64 bits",
                        work.micro_batch, work.grad_accum, world_size);
        work.train_batch_size = per_step * world;
        snprintf(work.origin_train_batch, ZC_ORIGIN_LEN, "derived");
    } else if (!work.micro_batch_set) { /* DeepSpeed derives micro first */
        int64_t per = (int64_t)work.grad_accum * world;
        char ft[ZC_ORIGIN_LEN + 8], fa[ZC_ORIGIN_LEN + 8];
        if (train % per != 0 || train / per > INT_MAX)
            return fail(&c, ZC_EINVAL,
                        "cannot derive train_micro_batch_size_per_gpu: train_batch_size %" PRId64
                        " %s is not a multiple of gradient_accumulation_steps %d %s \u00d7 world "
                        "size %d with a quotient <= %d",
                        train, from(ft, work.origin_train_batch), work.grad_accum,
                        from(fa, work.origin_grad_accum), world_size, INT_MAX);
        work.micro_batch = (int)(train / per);
        snprintf(work.origin_micro_batch, ZC_ORIGIN_LEN, "derived");
    } else if (!work.grad_accum_set) {
        int64_t per = (int64_t)work.micro_batch * world;
        char ft[ZC_ORIGIN_LEN + 8], fm[ZC_ORIGIN_LEN + 8];
        if (train % per != 0 || train / per > INT_MAX)
            return fail(&c, ZC_EINVAL,
                        "cannot derive gradient_accumulation_steps: train_batch_size %" PRId64
                        " %s is not a multiple of train_micro_batch_size_per_gpu %d %s \u00d7 "
                        "world size %d with a quotient <= %d",
                        train, from(ft, work.origin_train_batch), work.micro_batch,
                        from(fm, work.origin_micro_batch), world_size, INT_MAX);
        work.grad_accum = (int)(train / per);
        snprintf(work.origin_grad_accum, ZC_ORIGIN_LEN, "derived");
    }
    rc = zc_config_validate(&work, world_size, err);
    if (rc == ZC_OK) {
        note_final(&work);
        *cfg = work;
    }
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * Printing
 * ------------------------------------------------------------------------------------------- */

/* Numbers go in as raw text: cJSON would print integers above 2^53 and some doubles rounded. */
static bool add_raw(cJSON *obj, const char *name, const char *text)
{
    return cJSON_AddRawToObject(obj, name, text) != NULL;
}

static bool add_i64(cJSON *obj, const char *name, int64_t v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%" PRId64, v);
    return add_raw(obj, name, buf);
}

static bool add_double(cJSON *obj, const char *name, double v)
{
    char buf[40];
    if (!isfinite(v))
        return cJSON_AddNullToObject(obj, name) != NULL;
    fmt_double(buf, sizeof buf, v);
    return add_raw(obj, name, buf);
}

static bool add_double_item(cJSON *arr, double v)
{
    char buf[40];
    if (!isfinite(v))
        return cJSON_AddItemToArray(arr, cJSON_CreateNull());
    fmt_double(buf, sizeof buf, v);
    return cJSON_AddItemToArray(arr, cJSON_CreateRaw(buf));
}

/* A K_DTYPE value: its name, or null for ZC_DTYPE_DEFAULT (which reads back as the default). */
static bool add_dtype(cJSON *obj, const char *name, zc_dtype t)
{
    if (t == ZC_DTYPE_DEFAULT)
        return cJSON_AddNullToObject(obj, name) != NULL;
    return cJSON_AddStringToObject(obj, name, zc_dtype_name(t)) != NULL;
}

/* A K_STR field, "" when unset; read no further than the array even if it lacks its NUL. */
static bool add_path(cJSON *obj, const char *name, const char field[ZC_MAX_PATH])
{
    char buf[ZC_MAX_PATH];
    const char *nul = memchr(field, '\0', ZC_MAX_PATH);
    size_t n = nul ? (size_t)(nul - field) : ZC_MAX_PATH - 1;
    memcpy(buf, field, n);
    buf[n] = '\0';
    return cJSON_AddStringToObject(obj, name, buf) != NULL;
}

static const char *name_of(const char *const *names, size_t n, int v)
{
    return v >= 0 && (size_t)v < n ? names[v] : "unknown";
}

static bool add_device(cJSON *obj, zc_offload_device d)
{
    return cJSON_AddStringToObject(obj, "device",
                                   name_of(DEVICE_NAMES, NNAMES(DEVICE_NAMES), (int)d)) != NULL;
}

/* The scheduler section with every value resolved (warmup_max_lr as the number it is). */
static bool add_scheduler(cJSON *root, const zc_config *cfg)
{
    cJSON *sched = cJSON_AddObjectToObject(root, "scheduler"), *params = NULL;
    bool ok = sched != NULL;
    ok = ok &&
         cJSON_AddStringToObject(
             sched, "type", name_of(SCHED_NAMES, NNAMES(SCHED_NAMES), (int)cfg->sched)) != NULL;
    ok = ok && (params = cJSON_AddObjectToObject(sched, "params")) != NULL;
    const unsigned t = 1u << cfg->sched; /* only the type's own params: another's is refused */
    if (t & S_WARM) {
        ok = ok && add_double(params, "warmup_min_lr", cfg->warmup_min_lr);
        ok = ok && add_double(params, "warmup_max_lr", zc_config_warmup_max_lr(cfg));
    }
    if (t & (S_WARM | S_COS)) {
        ok = ok && add_i64(params, "warmup_num_steps", cfg->warmup_num_steps);
        ok = ok && (!(t & (S_DECAY | S_COS)) || cfg->total_num_steps == 0 ||
                    add_i64(params, "total_num_steps", cfg->total_num_steps));
        ok = ok && cJSON_AddStringToObject(
                       params, "warmup_type",
                       name_of(WARMUP_NAMES, NNAMES(WARMUP_NAMES), (int)cfg->warmup_type)) != NULL;
    }
    if (t & S_COS) {
        ok = ok && add_double(params, "warmup_min_ratio", cfg->warmup_min_ratio);
        ok = ok && add_double(params, "cos_min_ratio", cfg->cos_min_ratio);
    }
    if (t & S_ONE) { /* bounds not given are left out: they read back as not given */
        ok = ok &&
             (isnan(cfg->cycle_min_lr) || add_double(params, "cycle_min_lr", cfg->cycle_min_lr));
        ok = ok &&
             (isnan(cfg->cycle_max_lr) || add_double(params, "cycle_max_lr", cfg->cycle_max_lr));
        ok = ok && add_double(params, "decay_lr_rate", cfg->decay_lr_rate);
        ok = ok && add_i64(params, "cycle_first_step_size", cfg->cycle_first_step_size);
        ok = ok && (cfg->cycle_second_step_size == 0 ||
                    add_i64(params, "cycle_second_step_size", cfg->cycle_second_step_size));
        ok = ok && add_i64(params, "decay_step_size", cfg->decay_step_size);
        ok = ok && cJSON_AddBoolToObject(params, "cycle_momentum", cfg->cycle_momentum) != NULL;
    }
    if (t & S_RANGE) {
        ok = ok && add_double(params, "lr_range_test_min_lr", cfg->lr_range_test_min_lr);
        ok = ok && add_i64(params, "lr_range_test_step_size", cfg->lr_range_test_step_size);
        ok = ok && add_double(params, "lr_range_test_step_rate", cfg->lr_range_test_step_rate);
        ok = ok && cJSON_AddBoolToObject(params, "lr_range_test_staircase",
                                         cfg->lr_range_test_staircase) != NULL;
    }
    return ok;
}

/* The lora section, when LoRA is on. */
static bool add_lora(cJSON *root, const zc_config *cfg)
{
    cJSON *l = cJSON_AddObjectToObject(root, "lora"), *tm = NULL;
    bool ok = l && add_i64(l, "r", cfg->lora_r) && add_double(l, "lora_alpha", cfg->lora_alpha) &&
              add_double(l, "lora_dropout", cfg->lora_dropout);
    if (ok && !cfg->lora_target_modules[0])
        return cJSON_AddNullToObject(l, "target_modules") != NULL;
    ok = ok && (tm = cJSON_AddArrayToObject(l, "target_modules")) != NULL;
    for (const char *p = cfg->lora_target_modules; ok && *p;) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        char name[ZC_MAX_PATH];
        snprintf(name, sizeof name, "%.*s", (int)n, p);
        ok = cJSON_AddItemToArray(tm, cJSON_CreateString(name));
        p += n + (e != NULL);
    }
    return ok;
}

char *zc_config_to_json(const zc_config *cfg)
{
    cJSON *root, *opt = NULL, *params = NULL, *betas = NULL, *zero = NULL, *fp16 = NULL,
                 *bf16 = NULL, *types = NULL, *oopt = NULL, *oparam = NULL, *aio = NULL;
    char seed[32];
    char *out = NULL;
    bool ok;

    ZC_ASSERT(cfg);
    root = cJSON_CreateObject();
    snprintf(seed, sizeof seed, "%" PRIu64, cfg->seed);
    ok = root != NULL;
    ok = ok &&
         (cfg->train_batch_size == 0 || add_i64(root, "train_batch_size", cfg->train_batch_size));
    ok = ok && add_i64(root, "train_micro_batch_size_per_gpu", cfg->micro_batch);
    ok = ok && add_i64(root, "gradient_accumulation_steps", cfg->grad_accum);
    ok = ok && add_double(root, "gradient_clipping", cfg->grad_clip);
    ok = ok && add_i64(root, "steps_per_print", cfg->steps_per_print);
    ok = ok && (!cfg->activation_checkpointing ||
                cJSON_AddObjectToObject(root, "activation_checkpointing") != NULL);
    ok = ok && (!cfg->lora_r || add_lora(root, cfg));
    ok = ok && add_raw(root, "seed", seed);
    ok = ok && add_double(root, "comm_timeout_s", cfg->comm_timeout_s);

    ok = ok && (opt = cJSON_AddObjectToObject(root, "optimizer")) != NULL;
    ok = ok && cJSON_AddStringToObject(opt, "type", zc_optim_name(cfg->optim)) != NULL;
    ok = ok && (params = cJSON_AddObjectToObject(opt, "params")) != NULL;
    ok = ok && add_double(params, "lr", cfg->lr);
    ok = ok && (betas = cJSON_AddArrayToObject(params, "betas")) != NULL;
    ok = ok && add_double_item(betas, cfg->beta1) && add_double_item(betas, cfg->beta2);
    ok = ok && add_double(params, "eps", cfg->eps);
    ok = ok && add_double(params, "weight_decay", cfg->weight_decay);
    ok = ok && add_double(params, "momentum", cfg->momentum);
    ok = ok && cJSON_AddBoolToObject(params, "adam_w_mode", cfg->adam_w_mode) != NULL;
    ok = ok && cJSON_AddBoolToObject(params, "bias_correction", cfg->bias_correction) != NULL;
    ok = ok &&
         (!cfg->compact_master || cJSON_AddBoolToObject(params, "compact_master", true) != NULL);
    ok = ok && (cfg->sched == ZC_SCHED_NONE || add_scheduler(root, cfg));

    ok = ok && (zero = cJSON_AddObjectToObject(root, "zero_optimization")) != NULL;
    ok = ok && add_i64(zero, "stage", cfg->stage);
    ok = ok && add_i64(zero, "reduce_bucket_size", cfg->reduce_bucket_size);
    ok = ok && (cfg->prefetch_bucket_size == ZC_AUTO
                    ? cJSON_AddStringToObject(zero, "stage3_prefetch_bucket_size", "auto") != NULL
                    : add_i64(zero, "stage3_prefetch_bucket_size", cfg->prefetch_bucket_size));
    ok = ok && add_i64(zero, "stage3_max_live_parameters", cfg->max_live_parameters);
    ok = ok &&
         (cfg->param_persistence_threshold == ZC_AUTO
              ? cJSON_AddStringToObject(zero, "stage3_param_persistence_threshold", "auto") != NULL
              : add_i64(zero, "stage3_param_persistence_threshold",
                        cfg->param_persistence_threshold));
    ok =
        ok && add_i64(zero, "stage3_model_persistence_threshold", cfg->model_persistence_threshold);
    ok = ok && cJSON_AddBoolToObject(zero, "overlap_comm", cfg->overlap_comm) != NULL;
    ok = ok && cJSON_AddBoolToObject(zero, "zero_quantized_weights", cfg->quantized_weights);
    ok = ok && cJSON_AddBoolToObject(zero, "zero_quantized_gradients", cfg->quantized_gradients);
    ok = ok && add_i64(zero, "zero_hpz_partition_size", cfg->hpz_partition_size);
    ok = ok && cJSON_AddTrueToObject(zero, "contiguous_gradients") != NULL;
    ok = ok && add_i64(zero, "sub_group_size", cfg->sub_group_size);
    ok = ok && (oopt = cJSON_AddObjectToObject(zero, "offload_optimizer")) != NULL;
    ok = ok && add_device(oopt, cfg->offload_optimizer);
    ok = ok && add_path(oopt, "nvme_path", cfg->optimizer_nvme_path);
    ok = ok && add_i64(oopt, "buffer_count", cfg->optimizer_buffer_count);
    ok = ok && cJSON_AddBoolToObject(oopt, "pin_memory", cfg->optimizer_pin_memory) != NULL;
    ok = ok &&
         (cfg->optimizer_ratio == ZC_AUTO ? cJSON_AddStringToObject(oopt, "ratio", "auto") != NULL
                                          : add_double(oopt, "ratio", cfg->optimizer_ratio));
    ok = ok && cJSON_AddBoolToObject(oopt, "pipeline_read", cfg->pipeline_read) != NULL;
    ok = ok && cJSON_AddBoolToObject(oopt, "pipeline_write", cfg->pipeline_write) != NULL;
    ok = ok && cJSON_AddBoolToObject(oopt, "fold_update", cfg->fold_update) != NULL;
    ok = ok && (oparam = cJSON_AddObjectToObject(zero, "offload_param")) != NULL;
    ok = ok && add_device(oparam, cfg->offload_param);
    ok = ok && add_path(oparam, "nvme_path", cfg->param_nvme_path);
    ok = ok && add_i64(oparam, "buffer_count", cfg->param_buffer_count);
    ok = ok && add_i64(oparam, "buffer_size", cfg->param_buffer_size);
    ok = ok &&
         (cfg->max_in_cpu == ZC_AUTO ? cJSON_AddStringToObject(oparam, "max_in_cpu", "auto") != NULL
                                     : add_i64(oparam, "max_in_cpu", cfg->max_in_cpu));
    ok = ok && cJSON_AddBoolToObject(oparam, "pin_memory", cfg->param_pin_memory) != NULL;

    ok = ok && (fp16 = cJSON_AddObjectToObject(root, "fp16")) != NULL;
    ok = ok && cJSON_AddBoolToObject(fp16, "enabled", cfg->dtype == ZC_FP16) != NULL;
    ok = ok && add_double(fp16, "loss_scale", cfg->loss_scale);
    ok = ok && add_i64(fp16, "initial_scale_power", cfg->initial_scale_power);
    ok = ok && add_i64(fp16, "loss_scale_window", cfg->loss_scale_window);
    ok = ok && add_i64(fp16, "hysteresis", cfg->hysteresis);
    ok = ok &&
         cJSON_AddBoolToObject(fp16, "consecutive_hysteresis", cfg->consecutive_hysteresis) != NULL;
    ok = ok && add_double(fp16, "min_loss_scale", cfg->min_loss_scale);
    ok = ok && cJSON_AddFalseToObject(fp16, "auto_cast") != NULL;
    ok = ok && (bf16 = cJSON_AddObjectToObject(root, "bf16")) != NULL;
    ok = ok && cJSON_AddBoolToObject(bf16, "enabled", cfg->dtype == ZC_BF16) != NULL;
    ok = ok && add_dtype(root, "communication_data_type", cfg->comm_dtype);
    ok = ok && (types = cJSON_AddObjectToObject(root, "data_types")) != NULL;
    ok = ok && add_dtype(types, "grad_accum_dtype", cfg->grad_accum_dtype);

    ok = ok && (aio = cJSON_AddObjectToObject(root, "aio")) != NULL;
    ok = ok && add_i64(aio, "block_size", cfg->aio_block_size);
    ok = ok && add_i64(aio, "queue_depth", cfg->aio_queue_depth);
    ok = ok && add_i64(aio, "thread_count", cfg->aio_thread_count);
    ok = ok && cJSON_AddBoolToObject(aio, "single_submit", cfg->aio_single_submit) != NULL;
    ok = ok && cJSON_AddBoolToObject(aio, "overlap_events", cfg->aio_overlap_events) != NULL;
    ok = ok && cJSON_AddFalseToObject(aio, "use_gds") != NULL;
    ok = ok && cJSON_AddStringToObject(
                   aio, "engine",
                   name_of(ENGINE_NAMES, NNAMES(ENGINE_NAMES), (int)cfg->aio_engine)) != NULL;

    if (ok)
        out = cJSON_Print(root);
    cJSON_Delete(root);
    return out;
}
