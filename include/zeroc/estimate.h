/* zeroc/estimate.h — what a run will hold and send per rank, before running it: the ZeRO paper's
 * formulas applied to the same padded unit sizes the engine uses, so an estimate equals what
 * the ledger and the comm counters measure, to the byte. The engine's own accounting
 * (zc_engine_state_bytes_for_stage) is computed by these functions.
 *
 *     size_t units[] = {4196352, 4196352};               // Ψ_u of each unit
 *     zc_estimate_in in = {.unit_numel = units, .nunits = 2, .nranks = 4, .stage = 3,
 *                          .moment_floats = 2};           // Adam: m and v
 *     zc_state_bytes b = zc_estimate_states(&in);          // per rank
 *     int64_t sent = zc_estimate_comm_bytes(&in);         // per optimizer step, per rank
 */
#ifndef ZEROC_ESTIMATE_H
#define ZEROC_ESTIMATE_H

#include "zeroc/api.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zeroc/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The largest model zeroc holds: 2^49 parameters (padded). Checkpoint manifests and reports
 * record sizes as JSON numbers, exact to 2^53, and a rank's checkpoint holds up to 16 bytes per
 * parameter. Within it, every per-rank byte count fits in 64 bits. */
#define ZC_MAX_NUMEL ((int64_t)1 << 49)
/* The most units a model may register (GPT-2: its blocks + 2; the MLP: its layers). */
#define ZC_MAX_UNITS 65538

/* Bytes per rank of each model-state category. */
typedef struct {
    int64_t params, grads, optimizer;
} zc_state_bytes;

/* How a model uses a unit's matrices (its parameters of two or more dimensions), for the working
 * bound (zc_estimate_in.unit_use, zc_engine_unit_use). */
enum {
    /* it reads them in fp32 (zc_engine_param): with 16-bit parameters, a whole-unit fp32 view */
    ZC_USE_VIEW32 = 1,
    /* it asks their gradients in fp32 (zc_engine_grad) where a 16-bit one would do: a whole-unit
     * fp32 gradient buffer at stages 2–3 */
    ZC_USE_GRAD32 = 2,
    ZC_USE_ANY = ZC_USE_VIEW32 | ZC_USE_GRAD32, /* what a model that says nothing may do */
    /* it acquires the unit twice in each forward (a tied vocabulary's tile: for the embedding,
     * then for the head): at stage 3, three gathers a micro-batch instead of two (comm bytes) */
    ZC_USE_FORWARD_TWICE = 4,
};

typedef struct {
    const size_t *unit_numel;     /* Ψ_u per unit, unpadded */
    const size_t *unit_vec_numel; /* per unit, the elements of its 1-D parameters (norms, biases),
                                     which a 16-bit model reads widened to fp32 and whose gradients
                                     stages 2–3 keep in fp32; NULL: not known (counted as
                                     if every element were one) */
    const uint8_t *unit_use;      /* per unit, ZC_USE_* flags; NULL: ZC_USE_ANY for every unit */
    const bool *unit_frozen;      /* per unit, frozen (zc_engine_freeze_unit: LoRA's base): its
                                     parameters are stored, partitioned, offloaded and gathered as
                                     any unit's, but it has no gradients, no optimizer state, no
                                     reduce-scatter and no update; NULL: none is */
    int nunits, nranks, stage;
    int moment_floats;         /* optimizer state floats per parameter: 2 Adam(W), 1 SGD with
                                  momentum, 0 plain SGD */
    bool moments_8bit;         /* AdamW8bit: each of the moment_floats moments is 1 byte per
                                  element plus a 4-byte scale per ZC_Q8_BLOCK elements of each
                                  shard (zc_estimate_moment_bytes) instead of 4 bytes */
    int param_bytes;           /* bytes of a stored parameter: 4 fp32, 2 bf16/fp16 (adds an fp32
                                  master copy to the optimizer state); 0 means 4 */
    bool compact_master;       /* optimizer.params.compact_master: the master copy is the bf16
                                  parameters plus 2 bytes of remainder per element, not 4 */
    int grad_bytes;            /* bytes of a stored gradient (grad_accum_dtype); 0 means 4 */
    bool grads_bf16;           /* the stored gradients are bf16 and unscaled (no fp16 loss scale):
                                  a model can write them in 16 bits itself (zc_engine_grad16) */
    int comm_elem_bytes;       /* bytes of a reduce-scatter element (communication_data_type);
                                  0 means 4 */
    bool grads_sent_as_stored; /* stages 0–1 send the gradients from where they lie, with no
                                  send staging (zc_config_grads_sent_as_stored) */
    int64_t reduce_bucket_size, prefetch_bucket_size, max_live_parameters; /* elements;
                                    prefetch_bucket_size may be ZC_AUTO (-1: one unit ahead) */
    /* stage 3: units of fewer elements than persistence_threshold (ZC_AUTO, -1:
     * ZC_PERSISTENCE_AUTO; 0: none) stay whole on every rank, up to model_persistence_threshold
     * elements in all */
    int64_t persistence_threshold, model_persistence_threshold;
    /* offload to NVMe (ZeRO-Infinity); all zero: everything in RAM */
    bool offload_optimizer;    /* offload_optimizer.device nvme (stages 1–3) */
    bool offload_params;       /* offload_param.device nvme (stage 3) */
    double offload_ratio;      /* offload_optimizer.ratio; 0 means 1 */
    int64_t max_in_cpu;        /* offload_param.max_in_cpu: parameter elements kept in RAM */
    int64_t sub_group_size;    /* zero_optimization.sub_group_size, elements */
    int buffer_count;          /* offload_optimizer.buffer_count: sub-group slots */
    int param_buffer_count;    /* offload_param.buffer_count: shard reads ahead */
    int64_t param_buffer_size; /* offload_param.buffer_size: elements read ahead */
    bool quantized_weights;    /* stage 3, ZeRO++ qwZ: parameter all-gathers carry int8 blocks */
    bool quantized_gradients;  /* stage 3, ZeRO++ qgZ: gradient reduce-scatters carry int8 blocks */
    int hpz_partition_size;    /* stage 3, ZeRO++ hpZ: ranks per group keeping a secondary copy of
                                  the parameters (padded / hpz elements of each sharded unit, in
                                  params); a unit's gathers after the step's first stay in
                                  the group. 0 or 1: off */
    int ranks_per_host;        /* ranks fill hosts of this many in order (0: all on one host);
                                  with several hosts of more than one rank, qgZ takes two hops.
                                  It must divide nranks (zc_estimate_check) */
    int grad_accum;            /* gradient_accumulation_steps: micro-batches per optimizer step
                                  (counts only in zc_estimate_comm_bytes); 0 means 1 */
} zc_estimate_in;

/* ZeRO++ qwZ (zero_optimization.zero_quantized_weights): a stage-3 parameter all-gather sends
 * each rank's shard as blocks of ZC_QWZ_BLOCK int8 values with one fp32 scale per block; qgZ
 * (zero_quantized_gradients) sends each reduce-scatter chunk's blocks in the same form. */
#define ZC_QWZ_BLOCK 256

/* Bytes of one rank's quantized shard of S elements: 4 per block of ZC_QWZ_BLOCK (the scale)
 * plus S int8 values padded to a multiple of 4. */
ZC_API int64_t zc_qwz_segment_bytes(int64_t shard);

/* stage3_param_persistence_threshold "auto" (the default), in elements: chosen by measurement
 * (docs/CONFIG.md). */
#define ZC_PERSISTENCE_AUTO ((int64_t)0)

/* Stage 3's persistent units (whole on every rank, never gathered): persistent[u] for each
 * unit; false everywhere at stages 0–2. Returns how many. */
ZC_API int zc_estimate_persistent(const zc_estimate_in *in, bool *persistent);

/* Where one unit's states live on this rank with offload. Units are placed in registration
 * order: the optimizer state (fp32 master, moments; at stage 3 the gradient shard with it) of
 * the first units holding offload_ratio of the optimizer elements goes to disk; the parameter
 * shards of the first units totalling at most max_in_cpu elements stay in RAM, the rest go to
 * disk. Offsets are bytes in this rank's optimizer swap file (grads, master, m, v) or parameter
 * swap file (params), each region starting on a 4 KiB boundary (O_DIRECT); -1: not on disk. */
typedef struct {
    bool params, grads, optimizer; /* on disk */
    int64_t params_off, grads_off, master_off, m_off, v_off;
} zc_unit_offload;

/* The arrays the optimizer step streams through RAM, sub-group by sub-group, when on disk. */
typedef enum {
    ZC_STREAM_WEIGHTS, /* the fp32 values updated: master (mixed) or the parameters (fp32) */
    ZC_STREAM_GRADS,   /* the reduced gradient shard (stage 3) */
    ZC_STREAM_M,
    ZC_STREAM_V,
    ZC_STREAM_PARAMS, /* mixed: the 16-bit parameters rounded from the master (stage 3) */
    ZC_NSTREAMS
} zc_stream_array;

typedef struct {
    int64_t optimizer_file, param_file; /* bytes of this rank's swap files (0: none) */
    int64_t sub_group;                  /* elements per sub-group (a multiple of 2048) */
    int64_t slot_bytes[ZC_NSTREAMS];    /* one slot's buffer per array (0: not streamed) */
    int64_t nslots; /* RAM slots: offload_optimizer.buffer_count, at most the step's sub-groups */
    int64_t slots;  /* bytes of all nslots slots */
    int64_t param_reads;  /* bound of the parameter-read buffers */
    int64_t grad_staging; /* bound of gradient shards on their way to disk */
} zc_offload_plan;

/* Refuses (ZC_EINVAL, naming the quantity and what to lower) a model or configuration whose
 * sizes the functions below cannot count in 64 bits, at any stage: more than ZC_MAX_UNITS
 * units, more than ZC_MAX_NUMEL parameters, or offload and prefetch sizes whose buffers
 * overflow. Call it before the others: for such inputs they return INT64_MAX (saturated). */
ZC_API zc_status zc_estimate_check(const zc_estimate_in *in, zc_err *err);

/* The plan, and (if units is not NULL, nunits entries) each unit's placement. */
ZC_API zc_offload_plan zc_estimate_offload(const zc_estimate_in *in, zc_unit_offload *units);
/* Bytes this rank keeps on disk (both swap files): the ledger's "nvme". */
ZC_API int64_t zc_estimate_nvme_bytes(const zc_estimate_in *in);
/* AdamW8bit on disk: bytes of one moment's record for a sub-group of k elements (its codes,
 * padded to a whole block, then its fp32 scales; padded to 4 KiB). A unit's moment region is its
 * shard's sub-groups' records in order, each sub-group at j · record(sub_group). */
ZC_API int64_t zc_estimate_q8_record(int64_t k);
/* Bound of the ledger's "offload" peak (RAM the disk tier streams through). */
ZC_API int64_t zc_estimate_offload_bound(const zc_estimate_in *in);

/* Bytes of one moment over one shard of S elements: 4·S, or with moments_8bit S codes and
 * 4·ceil(S / ZC_Q8_BLOCK) of scales (blocks start at each shard's start and never straddle
 * ranks: stage 0, which keeps every shard, keeps each shard's blocks). */
ZC_API int64_t zc_estimate_moment_bytes(const zc_estimate_in *in, int64_t S);

/* Model-state bytes this rank keeps in RAM (with offload, what is not on disk). */
ZC_API zc_state_bytes zc_estimate_states(const zc_estimate_in *in);
/* Bytes this rank sends per optimizer step (ring convention), Ψp = Σ padded unit sizes:
 * (C + P)·Ψp·(N−1)/N for stages 1–2 (reduce-scatter of gradients, all-gather of parameters),
 * (C + G)·Ψp·(N−1)/N for stage 0 (it all-gathers the reduced gradients), (C + 2P)·Ψp·(N−1)/N for
 * stage 3 (parameters gathered for forward and for backward); C, G, P the element sizes above:
 * 8·Ψp·(N−1)/N and 12·Ψp·(N−1)/N in fp32. With A = grad_accum micro-batches per step, stages
 * 0–1 still reduce once; stage 2 sends (A·C + P)·Ψp·(N−1)/N and stage 3 A·(C + 2P)·Ψp·(N−1)/N
 * (each micro-batch reduce-scatters, and at stage 3 gathers twice; a unit used twice in the
 * forward, ZC_USE_FORWARD_TWICE, three times: 3P in place of 2P). With hpZ only the first
 * gather after an update is the world's; the 2A − 1 others (3A − 1) move P·Ψp·(g−1)/g each,
 * within groups of g. */
ZC_API int64_t zc_estimate_comm_bytes(const zc_estimate_in *in);
/* Of those, the bytes rank 0 sends to ranks on other hosts (in->ranks_per_host): B/N of a
 * B-byte collective to each of the N − R ranks elsewhere, for hpZ's group gathers to each member
 * of its group that is elsewhere, and for qgZ in two hops a chunk's segment to each other host. */
ZC_API int64_t zc_estimate_inter_host_bytes(const zc_estimate_in *in);
/* Bytes of the reduce-scatter staging (send + receive; send only on one rank, which receives
 * nothing), the ledger's "comm". */
ZC_API int64_t zc_estimate_comm_staging(const zc_estimate_in *in);
/* Columns (elements per rank) of one reduce-scatter chunk: reduce_bucket_size / nranks, at least
 * 1 and at most the largest shard; reduce_bucket_size 0 means a whole shard (DeepSpeed accepts 0).
 */
ZC_API int64_t zc_estimate_rs_cols(int64_t reduce_bucket_size, int64_t nranks, int64_t max_shard);
/* The largest shard of a trained unit (the reduce-scatters' elements per rank; 0 when every unit
 * is frozen): zc_estimate_rs_cols's max_shard. */
ZC_API int64_t zc_estimate_reduced_shard(const zc_estimate_in *in);
/* An upper bound of the ledger's "working" peak: gathered parameters of stage 3 (three units —
 * the tied embedding of a language model can be held across a pass — plus the prefetch
 * allowance, capped by max_live_parameters); with 16-bit parameters the fp32 views of three
 * acquired units (the 1-D parameters' elements, and the whole unit where the model reads its
 * matrices in fp32, ZC_USE_VIEW32); gradient buffers of two units (one being produced, one
 * reducing or a tied unit's kept across backward) — at stages 0–1 with 16-bit gradients a
 * whole-unit fp32 buffer, at stages 2–3 one too unless the gradients are bf16 and the model
 * writes its matrices' in 16 bits (no ZC_USE_GRAD32): then 2 bytes per padded element and 4 per
 * 1-D element; at least the largest unit in fp32, which the weight digest and the exports gather
 * after the last step. */
ZC_API int64_t zc_estimate_working_bound(const zc_estimate_in *in);
/* Elements stage 3 gathers ahead (stage3_prefetch_bucket_size; "auto", ZC_AUTO: the largest
 * unit's padded size — one unit ahead). */
ZC_API int64_t zc_estimate_prefetch_elems(const zc_estimate_in *in);
/* Σ padded unit sizes. */
ZC_API int64_t zc_estimate_padded_numel(const zc_estimate_in *in);

#ifdef __cplusplus
}
#endif

#endif
