/* zeroc/engine.h — the ZeRO engine: sharded parameters, gradients and optimizer state.
 *
 * A model registers its parameters in units (a layer, a block, the embeddings). Each unit is one
 * flat fp32 buffer of Ψ_u elements padded to N·S_u (S_u = ceil(Ψ_u / N)); rank r owns elements
 * [r·S_u, (r+1)·S_u). What a rank keeps depends on the ZeRO stage:
 *
 *   stage 0: all params, all grads, all optimizer state (plain data parallel)
 *   stage 1: all params, all grads, optimizer state of its shard
 *   stage 2: all params, grads and optimizer state of its shard
 *   stage 3: params, grads and optimizer state of its shard; a unit is gathered at acquire
 *            and dropped at release
 *
 * Every stage reduces a unit's gradients with the same reduce-scatter and updates its shard with
 * the same kernel, so all stages produce bitwise-identical weights for the same N with gradient
 * accumulation 1. (With accumulation, stages 0–1 sum each rank's micro-batches before reducing
 * once per step while stages 2–3 reduce every micro-batch into their shard: the same sum in
 * another order, equal within fp32 rounding.)
 *
 * Mixed precision, see zc_engine_loss_scaler below.
 *
 * Errors: a call made in the wrong state (acquire before finalize, a unit acquired twice, released
 * without acquire, handed back twice in a micro-batch; finalize twice) returns ZC_ESTATE, and one
 * naming a unit or parameter that does not exist ZC_EINVAL, each naming the call, the unit and
 * the state; such a refusal changes nothing. (They are refused on the calling rank without any
 * communication: if only some ranks make the mistake, the others meet a lockstep violation or a
 * timeout at their next collective.) After any other error from acquire, release, grads_ready,
 * step or end_pass the engine's state is unspecified: destroy it. ZC_ETIMEOUT is fatal for the
 * whole job (a collective is still in flight): the caller should report it and call
 * zc_comm_abort. Calls that return a pointer return NULL instead of an error, and
 * zc_engine_add_unit / zc_engine_add_param return −1 (see there).
 *
 * Threads: an engine, and the zc_comm it borrows, are driven from one thread — the one that
 * called zc_comm_init (MPI is initialised with MPI_THREAD_FUNNELED). Two engines on one zc_comm
 * used from two threads at once are not supported (their collectives would interleave on one
 * communicator); two engines used in turn from the same thread are. The engine's own helper
 * threads (OpenMP kernels, the disk tier's I/O) never call MPI.
 *
 * A training step, for a model of units u = 0..U−1 (forward in order, backward in reverse):
 *
 *     for (u = 0; u < U; u++) {                 // forward
 *         zc_engine_acquire(e, u, &err);        // stage 3: all-gather (or wait for a prefetch)
 *         float *w = zc_engine_param(e, p_w);   // full parameters of the unit
 *         ...forward...
 *         zc_engine_release(e, u, &err);        // stage 3: drop the gathered copy
 *     }
 *     for (u = U - 1; u >= 0; u--) {            // backward
 *         zc_engine_acquire(e, u, &err);
 *         float *dw = zc_engine_grad(e, p_w);   // accumulate into it (+=); zeroed each step
 *         ...backward...
 *         zc_engine_grads_ready(e, u, &err);    // starts the reduce-scatter, overlapping the rest
 *         zc_engine_release(e, u, &err);
 *     }
 *     zc_engine_step(e, &info, &err);           // every micro-batch; updates at the boundary
 *
 * Collectives follow a static order fixed at registration (reduce-scatters in reverse
 * registration order), never the order gradients arrive in. Before every collective the ranks
 * compare a hash of their acquire/release/grads_ready call sequence; a rank out of step stops
 * every rank with ZC_ELOCKSTEP naming the step, the rank and the unit.
 */
#ifndef ZEROC_ENGINE_H
#define ZEROC_ENGINE_H

#include "zeroc/api.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zeroc/comm.h"
#include "zeroc/config.h"
#include "zeroc/estimate.h"
#include "zeroc/mem.h"
#include "zeroc/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How a parameter's elements are initialised. Every element's value is a pure function of
 * (seed, parameter index, element index), so a rank can initialise only what it owns. */
typedef enum {
    ZC_INIT_CONST,   /* every element = a */
    ZC_INIT_UNIFORM, /* U(−a, a) */
    ZC_INIT_NORMAL,  /* N(0, a²) */
} zc_init_kind;

typedef struct {
    zc_init_kind kind;
    float a;
} zc_init;

#define ZC_MAX_DIMS 4
#define ZC_MAX_NAME 96

typedef struct {
    char name[ZC_MAX_NAME];
    int unit;
    int ndim;
    int64_t shape[ZC_MAX_DIMS];
    size_t numel;
    size_t offset; /* within the unit's flat buffer */
} zc_param_info;

typedef struct {
    char name[ZC_MAX_NAME];
    int first_param, nparams;
    size_t numel;  /* Ψ_u, unpadded */
    size_t shard;  /* S_u = ceil(Ψ_u / N) */
    size_t padded; /* N·S_u */
    bool frozen;   /* zc_engine_freeze_unit: stored and gathered, never trained */
} zc_unit_info;

typedef struct {
    bool stepped;      /* the weights were updated (at the accumulation boundary) */
    bool skipped;      /* fp16: the boundary found inf/nan gradients; no update, scale lowered */
    int64_t step;      /* optimizer steps completed (skipped steps do not count) */
    double grad_norm;  /* global L2 norm of the mean unscaled gradient, before clipping */
    double clip_coef;  /* factor applied to the gradient (1 when not clipped) */
    double lr;         /* learning rate used by this step */
    double loss_scale; /* fp16: the scaler's scale for this step (1 otherwise); each micro-step's
                          gradients carried it / gradient_accumulation_steps, as in DeepSpeed */
    int64_t prefetch_hits, prefetch_misses; /* stage 3, since the last optimizer step (after
                                             * the first micro-batch): acquires whose all-gather
                                             * had been started ahead / had to start then */
} zc_step_info;

/* fp16 dynamic loss scaling state (DeepSpeed's DynamicLossScaler counters). */
typedef struct {
    double scale;               /* the loss scale: each micro-step's gradients of the next step
                                   are multiplied by it / gradient_accumulation_steps */
    int hysteresis_left;        /* overflows still tolerated before the scale is halved */
    int64_t iter;               /* boundaries seen */
    int64_t last_overflow_iter; /* iter of the last overflow, −1 if none */
    int64_t skipped;            /* steps skipped because of an overflow */
    bool dynamic;               /* fp16 with fp16.loss_scale 0 */
} zc_loss_scaler;

typedef struct zc_engine zc_engine;

/* The engine borrows comm and mem; they must outlive it (destroy the engine first, then
 * zc_mem_destroy and zc_comm_finalize, in either order). cfg is copied, and checked
 * (zc_config_validate); NULL arguments are ZC_EINVAL. Sets *out to NULL on every failure. Not
 * collective, but it sets comm's timeout and hpZ groups (zc_comm_set_group_size, collective at
 * stage 3 with zero_hpz_partition_size > 1). */
ZC_API zc_status zc_engine_create(zc_engine **out, const zc_config *cfg, zc_comm *comm, zc_mem *mem,
                                  zc_err *err);
/* Frees the engine (NULL: nothing), on every rank and after any error too, once per engine.
 * Starts no communication, but first waits for the collectives still in flight (a reduce-scatter,
 * stage-3 prefetches: up to comm_timeout_s each) and the disk transfers to land in the buffers it
 * frees. */
ZC_API void zc_engine_destroy(zc_engine *e);

/* Registration, before zc_engine_finalize: units in model order, each unit's parameters right
 * after it (a parameter goes into the newest unit). Returns the new unit's / parameter's id, or
 * −1 when the registration is refused: after zc_engine_finalize, a NULL or over-long name (at
 * most ZC_MAX_NAME − 1 bytes), a unit other than the newest, ndim outside 1..ZC_MAX_DIMS, a NULL
 * shape, a size below 1, more than ZC_MAX_NUMEL elements (in the parameter, its unit or the
 * model), an unknown init kind, or out of memory. The first refusal's reason (naming the call,
 * the parameter and its shape) is kept: zc_engine_finalize then fails with it, on every rank. */
ZC_API int zc_engine_add_unit(zc_engine *e, const char *name);
ZC_API int zc_engine_add_param(zc_engine *e, int unit, const char *name, int ndim,
                               const int64_t *shape, zc_init init);
/* Before zc_engine_finalize: offload_param.max_in_cpu (parameter elements of this rank's shards
 * kept in RAM) and offload_optimizer.ratio (the share of the optimizer state on disk) in place of
 * the configuration's — how `zeroc train` sizes their "auto" from the host's free memory. Every
 * rank must set the same values (finalize compares the ranks' configurations). An "auto" left
 * unset is DeepSpeed's default at finalize (1e9, 1). ZC_ESTATE once finalize has been called,
 * ZC_EINVAL for max_in_cpu < 0 or a ratio outside (0, 1]. */
ZC_API zc_status zc_engine_set_offload_sizes(zc_engine *e, int64_t max_in_cpu, double ratio,
                                             zc_err *err);
/* Registration: how the model will use unit `unit`'s matrices (ZC_USE_* of zeroc/estimate.h;
 * ZC_USE_ANY until said), for the memory estimate's working bound (zc_engine_estimate_in) and
 * the reuse of working buffers within it. A declaration that leaves out what the model then does
 * is not refused: the engine serves the fp32 view or gradient and adds the flag (the bound was
 * too low until then). Returns 0, or −1 for a call refused (after finalize, a unit that does not
 * exist, unknown flags; reported by zc_engine_finalize, as add_param's). */
ZC_API int zc_engine_unit_use(zc_engine *e, int unit, unsigned use);
/* Registration: unit `unit` is frozen — its parameters are not trained (LoRA's base model). They
 * are stored, partitioned at stage 3, offloaded (offload_param) and gathered as any unit's; the
 * unit has no gradients, no optimizer state, no reduce-scatter and no update, and the memory
 * estimate counts none (zc_estimate_in.unit_frozen). The model acquires and releases it as any
 * unit but never asks its gradients (zc_engine_grad* return NULL) nor hands them back
 * (zc_engine_grads_ready is ZC_ESTATE). Its stored parameters are its values: in bf16 they are
 * bf16, with no fp32 master. A checkpoint saves its weights and zero moments. Returns 0, or −1
 * for a call refused (reported by zc_engine_finalize, as add_param's). */
ZC_API int zc_engine_freeze_unit(zc_engine *e, int unit);
/* Registration: parameter `param` (registered, before finalize) draws the random initial values
 * of another registration — element i takes the value that element first + i of parameter
 * number `as` would take. A model that registers one tensor as several parameters (the tiles of
 * a vocabulary matrix) starts from the values of the whole, and keeps the numbers of the
 * parameters after it. Returns 0, or −1 for a call refused (reported by zc_engine_finalize, as
 * add_param's). */
ZC_API int zc_engine_param_init_as(zc_engine *e, int param, int as, int64_t first);
/* The same for a block of columns of another registration's matrix (the tiles of a matrix split
 * across its width): element (r, c) of the parameter, rows of `row` elements, takes the value of
 * element first + r·stride + c of parameter number `as` (stride: the whole's row length). */
ZC_API int zc_engine_param_init_as_cols(zc_engine *e, int param, int as, int64_t first, int64_t row,
                                        int64_t stride);

/* Allocates this rank's states and initialises the parameters. Collective: fails on every rank
 * if any rank refused a registration, has no unit or a unit without parameters (ZC_EINVAL, or the
 * refusal's status), has another configuration (ZC_EINVAL naming the first key that differs and
 * both values) or registered another model (naming the first unit and parameter that differ,
 * with their sizes). Once per engine: a second call is ZC_ESTATE (after a failed one, destroy the
 * engine). */
ZC_API zc_status zc_engine_finalize(zc_engine *e, zc_err *err);
/* Before zc_engine_finalize, when every state is about to be loaded (a checkpoint: zc_ckpt_load):
 * finalize leaves the parameters zero instead of drawing their initial values, which the load
 * would overwrite (about a quarter of a GPT-2 124M resume's CPU time; it grows with the model).
 * Frozen units (zc_engine_freeze_unit) are drawn still: a checkpoint does not hold them. No effect
 * once finalize has run. */
ZC_API void zc_engine_skip_init(zc_engine *e);

ZC_API int zc_engine_num_units(const zc_engine *e);
ZC_API int zc_engine_num_params(const zc_engine *e);
/* A unit's / parameter's description; NULL for an id that does not exist. The pointer is valid
 * until the next zc_engine_add_unit / zc_engine_add_param (registration may move the records:
 * copy what you need) and, once finalized, until zc_engine_destroy. */
ZC_API const zc_unit_info *zc_engine_unit_info(const zc_engine *e, int unit);
ZC_API const zc_param_info *zc_engine_param_info(const zc_engine *e, int param);
ZC_API size_t zc_engine_total_numel(const zc_engine *e);  /* Ψ, unpadded */
ZC_API size_t zc_engine_total_padded(const zc_engine *e); /* Σ padded unit sizes; 0 before
                                                           * finalize */
ZC_API int zc_engine_stage(const zc_engine *e);
ZC_API zc_dtype zc_engine_dtype(const zc_engine *e); /* of the stored parameters */
ZC_API int zc_engine_rank(const zc_engine *e);
ZC_API int zc_engine_world_size(const zc_engine *e);

/* Makes the unit's full parameters usable until release. After finalize; ZC_ESTATE if the unit
 * is already acquired (acquire) or not acquired (release), ZC_EINVAL for a unit that does not
 * exist. */
ZC_API zc_status zc_engine_acquire(zc_engine *e, int unit, zc_err *err);
ZC_API zc_status zc_engine_release(zc_engine *e, int unit, zc_err *err);
/* Full parameters of an acquired unit's parameter (numel floats), valid until release. NULL for
 * a parameter that does not exist or whose unit is not acquired. With 16-bit parameters the fp32
 * values are widened on the first call: a unit's 1-D parameters into room made at acquire, its
 * matrices into a view of the whole unit made at the first such call (NULL when out of memory)
 * and from then on at every acquire of the unit — a model that feeds the stored matrices to its
 * products (zc_engine_param_stored) never pays the 4 bytes per parameter of that view. */
ZC_API float *zc_engine_param(zc_engine *e, int param);
/* The same elements as stored (zc_engine_dtype: fp32, or bf16/fp16 bits), without a conversion:
 * for a product that takes 16-bit operands. Valid until release; NULL as zc_engine_param. */
ZC_API const void *zc_engine_param_stored(zc_engine *e, int param);
/* The parameter's gradient buffer for this micro-batch; accumulate into it. NULL if out of
 * memory, before finalize, for a parameter that does not exist, after its unit's grads_ready in
 * this micro-batch, or after zc_engine_grad16 handed out its 16-bit gradient. The same holds for
 * zc_engine_grad_fresh (fresh must not be NULL) and zc_engine_grad16. */
ZC_API float *zc_engine_grad(zc_engine *e, int param);
/* The same buffer, for a model whose first write to this gradient can set every element (a
 * product with beta 0) instead of adding. *fresh says which it must do: true — the buffer is this
 * micro-batch's own and was not zeroed, so the first write must overwrite all numel elements;
 * false — add, as with zc_engine_grad (the gradients accumulate across micro-batches in place,
 * or the parameter's buffer was already handed out this micro-batch). Saves zeroing the buffer
 * and reading the zeros back. NULL if out of memory. */
ZC_API float *zc_engine_grad_fresh(zc_engine *e, int param, bool *fresh);
/* For a model that can write the parameter's gradient rounded to bf16 itself (a product with a
 * bf16 output, or an fp32 sum it rounds): the numel bf16 elements to overwrite, every one of them,
 * nearest even — where the engine would round an fp32 buffer to bf16 anyway before using it:
 * bf16 gradients not under fp16 (no loss scale), and at stages 0–1 a step's first micro-batch
 * (later ones add to the stored gradients in fp32), at stages 2–3 any micro-batch (each is
 * reduce-scattered on its own; the unit's gradient then costs 2 bytes per parameter, not an fp32
 * buffer's 4). NULL otherwise (or when the parameter's fp32 buffer was handed out this
 * micro-batch): then use zc_engine_grad or zc_engine_grad_fresh. Not both for one parameter in one
 * micro-batch. */
ZC_API uint16_t *zc_engine_grad16(zc_engine *e, int param);
/* Backward has finished with the unit for this micro-batch: once per unit and micro-batch
 * (ZC_ESTATE the second time). */
ZC_API zc_status zc_engine_grads_ready(zc_engine *e, int unit, zc_err *err);
/* Ends a micro-batch; at the accumulation boundary reduces, clips and updates. Gradients holding
 * inf/NaN skip the step under dynamic fp16 loss scaling (info->skipped); otherwise (fp32, bf16,
 * a static fp16 scale, or the scale at its minimum) they fail with ZC_ESTATE before any weight
 * is touched — except with the update folded into the backward (below), which has run by then.
 * A unit still acquired, or not handed back, is ZC_ESTATE. info may be NULL. */
ZC_API zc_status zc_engine_step(zc_engine *e, zc_step_info *info, zc_err *err);
/* Folded update (zero_optimization.offload_optimizer.fold_update, stage 3 with a state on disk):
 * zc_engine_step takes the step's decisions (norm, clipping, the learning rate) but updates no
 * unit; the next pass updates each unit just before it gathers it, and gathers the shard the
 * update produced instead of reading it back from disk. The bits are those of the unfolded
 * update. A weight left inf or NaN then fails the call that finished the update (acquire,
 * grads_ready, step) with the step's number. Collective: finishes whatever of the last step's
 * update is still pending (gather_unit, weights_sha256, a checkpoint and step call it first;
 * the calls that read or write one rank's states refuse while it is pending). ZC_OK at once
 * when nothing is pending.
 * Without gradient_clipping and fp16's loss scale the update needs no look at every gradient
 * first, so it folds into the backward instead: at the step's last micro-batch each unit is
 * updated as soon as its reduced gradient shard lands (the learning rate is the one set before
 * that micro-batch's backward), and no gradient shard goes to disk and back; zc_engine_step then
 * only waits for the last writes and reports the norm. The same bits again; gradients holding
 * inf or NaN then fail the step after the weights were updated. From that micro-batch's first
 * reduce-scatter until zc_engine_step, a unit whose gradients were handed back cannot be
 * acquired, and finish_update and the calls that read or write the states refuse (ZC_ESTATE). */
ZC_API zc_status zc_engine_finish_update(zc_engine *e, zc_err *err);

/* Ends a forward-only pass (evaluation, sampling): stage 3 lets the gathers it prefetched for
 * units the pass will not use land and frees them, so the next training micro-batch starts
 * clean. No unit may be acquired or handed back (ZC_ESTATE naming it). */
ZC_API zc_status zc_engine_end_pass(zc_engine *e, zc_err *err);

/* Mixed precision (bf16.enabled / fp16.enabled): parameters and gradients are stored in 16 bits,
 * each rank keeps an fp32 master copy of the parameters it updates, and the model still sees
 * fp32: zc_engine_param is an fp32 copy of the unit's 16-bit parameters made at acquire (working
 * memory; each parameter widened on its first zc_engine_param), zc_engine_grad an fp32 buffer
 * that is rounded to the gradient type when the unit is handed back. With fp16 those gradients are
 * multiplied by the loss scale over gradient_accumulation_steps A first (as DeepSpeed scales the
 * loss divided by A: the sum over the micro-steps holds scale × mean; with a dynamic scale and A
 * a power of two, the same bits as scaling the loss, since the model computes in fp32); the step
 * divides it out, so norms and clipping see unscaled values. */
ZC_API const zc_loss_scaler *zc_engine_loss_scaler(const zc_engine *e);
ZC_API void zc_engine_set_loss_scaler(zc_engine *e, const zc_loss_scaler *s);

/* The learning rate of the next optimizer step (default: the config's); with the update folded
 * into the backward, set it before that step's last micro-batch's backward. */
ZC_API void zc_engine_set_lr(zc_engine *e, double lr);
ZC_API int64_t zc_engine_steps_done(const zc_engine *e);

/* Offload (ZeRO-Infinity): with offload_optimizer / offload_param on device "nvme", the states
 * zc_estimate_offload places on disk live in this rank's swap files: one per setting, created by
 * zc_engine_finalize in its nvme_path (zeroc-<host>-<pid>-rank<r>-<n>.swap, O_DIRECT), fully
 * preallocated there — so a disk too small fails at finalize, naming the key, the bytes needed
 * and the bytes free — and unlinked at once, so the space returns to the file system when the
 * process ends, however it ends, and nothing is left behind. The
 * optimizer step streams them through RAM in sub-groups; stage 3 reads parameter shards from
 * disk ahead of their gather, along the recorded acquire order, and writes reduced gradient
 * shards to disk as they land. Values are the same bits as in RAM. A disk failure during
 * training (I/O error, a truncated swap file) returns ZC_EIO from acquire, release,
 * grads_ready, step or end_pass on the rank that saw it, naming the file, offset and error: only
 * that rank knows, so — like ZC_ETIMEOUT — report it and call zc_comm_abort. */
typedef struct {
    bool active;                /* something lives on disk */
    const char *aio_engine;     /* "io_uring" or "threads" (NULL when not active) */
    const char *optimizer_swap; /* paths the swap files had (NULL: none) */
    const char *param_swap;
    int64_t nvme_bytes;          /* both files */
    int64_t param_elems_on_disk; /* of this rank's parameter shards (stage 3) */
    int64_t param_elems_in_ram;
    int64_t bytes_read, bytes_written; /* since finalize */
    double wait_seconds;               /* the training thread blocked on disk I/O, since finalize */
    double update_seconds;             /* in the steps' updates (streaming the optimizer state) */
    int64_t update_bytes_read, update_bytes_written; /* the updates' share of the traffic */
    int64_t io_buffers_mapped;    /* parameter-read and gradient-staging buffers mapped since
                                   * finalize: freed ones are kept for reuse within the offload
                                   * plan's bounds, so with units of one size this stops growing
                                   * after the first step */
    int64_t param_bytes_read;     /* stage 3: parameter shards read from disk (started reads) */
    int64_t shards_from_update;   /* folded update: stage-3 gathers fed by the update, not a read */
    int64_t updates_in_backward;  /* folded update without clipping: units updated in the
                                   * backward, as their gradients landed */
    int64_t shards_read_in_place; /* stage 3: shards a gather read from disk itself, straight
                                   * into its place in the gathered buffer (no read ahead of
                                   * it; that place and the shard whole 4 KiB blocks) */
} zc_offload_stats;
ZC_API void zc_engine_offload_stats(const zc_engine *e, zc_offload_stats *out);

/* Loading values (e.g. from a file), after finalize: the elements of `param` this rank stores
 * are [*first, *first + *n) (all of them in stages 0–2, the part inside this rank's shard in
 * stage 3; 0, 0 before finalize or for a parameter that does not exist);
 * zc_engine_set_param_values writes elements [first, first + n) of the parameter, which must lie
 * within that range (ZC_EINVAL naming both ranges otherwise; ZC_ESTATE before finalize; ZC_EIO
 * only when the values live in a swap file that failed). Not collective: every rank loads what
 * it stores. */
ZC_API void zc_engine_param_owned(const zc_engine *e, int param, size_t *first, size_t *n);
ZC_API zc_status zc_engine_set_param_values(zc_engine *e, int param, size_t first, size_t n,
                                            const float *src, zc_err *err);

/* Collective: the unit's full parameters (padded numel floats) into dst on every rank: the fp32
 * master values in mixed precision. Before finalize ZC_ESTATE, a unit that does not exist or a
 * NULL dst ZC_EINVAL (refused on the calling rank, before any communication). */
ZC_API zc_status zc_engine_gather_unit(zc_engine *e, int unit, float *dst, zc_err *err);
/* Collective: SHA-256 of the full fp32 weights (unpadded, units in registration order,
 * little-endian) as 64 hex digits, on every rank; ZC_ESTATE if the ranks' replicas differ, or
 * before finalize. */
ZC_API zc_status zc_engine_weights_sha256(zc_engine *e, char hex[65], zc_err *err);

/* The estimator's input describing this engine's model and configuration at `stage`; numel,
 * vec_numel and use must hold zc_engine_num_units entries each and outlive the result (vec_numel
 * and use may be NULL: the working bound then counts every element as a 1-D parameter's and every
 * unit as ZC_USE_ANY, an upper bound).
 * use holds what the model declared (zc_engine_unit_use) and what it has done since. */
ZC_API zc_estimate_in zc_engine_estimate_in(const zc_engine *e, int stage, size_t *numel,
                                            size_t *vec_numel, uint8_t *use);
/* The ZeRO paper's per-rank model-state bytes for `stage` at this engine's world size and dtype. */
ZC_API zc_state_bytes zc_engine_state_bytes_for_stage(const zc_engine *e, int stage);

#ifdef __cplusplus
}
#endif

#endif
