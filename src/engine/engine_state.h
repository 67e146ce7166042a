/* engine_state.h — what checkpoints (src/ckpt) read and write of the engine: each rank's share
 * of every unit's fp32 weights and optimizer moments, in the unit's logical (unpadded) layout.
 * Internal to the library: a model or a program saves through zeroc/checkpoint.h.
 *
 * A unit's logical layout is its unpadded elements 0..Ψ_u−1. Values may live in RAM or, with
 * offload, in a swap file: the calls that touch values return ZC_EIO when the disk fails. */
#ifndef ZEROC_ENGINE_STATE_H
#define ZEROC_ENGINE_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zeroc/config.h"
#include "zeroc/engine.h"

typedef enum {
    ZC_STATE_WEIGHTS = 0, /* the fp32 weights: the master copy in mixed precision */
    ZC_STATE_M,           /* Adam's first moment (SGD's momentum buffer) */
    ZC_STATE_V,           /* Adam's second moment */
} zc_state_kind;

/* Whether zc_engine_finalize succeeded: the calls below need a finalized engine. */
bool zc_engine_finalized(const zc_engine *e);
/* This rank owns [*first, *first + *n) of the unit's logical elements (r·S_u …, clipped to
 * Ψ_u; n may be 0). */
void zc_engine_owned_range(const zc_engine *e, int unit, size_t *first, size_t *n);
/* AdamW8bit (zc_engine_optim ZC_OPTIM_ADAMW8BIT): its moments as they are, for checkpoints
 * that keep them so. Codes of m (is_signed) or v at logical elements [first, first + n) of the
 * unit, inside this rank's optimizer range (zc_engine_needed_ranges' m range); scales [b, b + n)
 * of the blocks of shard `shard` (its elements shard·S_u …, blocks of ZC_Q8_BLOCK from there),
 * a shard in that range. Read into buf, or written from it (write). ZC_EIO when the disk fails. */
zc_status zc_engine_q8_codes(zc_engine *e, int unit, bool is_signed, size_t first, size_t n,
                             uint8_t *buf, bool write, zc_err *err);
zc_status zc_engine_q8_scales(zc_engine *e, int unit, bool is_signed, size_t shard, size_t b,
                              size_t n, float *buf, bool write, zc_err *err);
/* Copies elements [off, off + n) of this rank's owned range of the unit's `kind` into dst. */
zc_status zc_engine_export_owned(zc_engine *e, int unit, zc_state_kind kind, size_t off, size_t n,
                                 float *dst, zc_err *err);
/* The logical ranges of a unit this rank must be given to restore a checkpoint: parameters
 * (everything in stages 0–2, the owned shard in stage 3) and moments (everything in stage 0,
 * the owned shard otherwise). */
void zc_engine_needed_ranges(const zc_engine *e, int unit, size_t *p_first, size_t *p_n,
                             size_t *m_first, size_t *m_n);
/* Writes logical elements [first, first + n) of the unit's parameters (which must lie in the
 * parameter range above) and, if m/v are given, of its moments (the moment range above). */
zc_status zc_engine_import(zc_engine *e, int unit, size_t first, size_t n, const float *params,
                           const float *m, const float *v, zc_err *err);
/* Number of optimizer moments per parameter (2 Adam, 1 SGD with momentum, 0 plain SGD). */
int zc_engine_moments(const zc_engine *e);
/* Sets the number of optimizer steps done (Adam's bias correction continues from it; with fp16,
 * skipped steps are not optimizer steps). */
void zc_engine_set_steps_done(zc_engine *e, int64_t steps);

/* The optimizer as configured (optimizer.type: AdamW, Adam or SGD), for the manifest. */
zc_optim_type zc_engine_optim(const zc_engine *e);

/* Where the engine's state was loaded from, for zc_ckpt_save's --keep pruning by lineage: the
 * save directory holding the checkpoint (device and inode of the step directory's parent), its
 * step, and the first step this engine then saved into that directory (-1: none yet). `has` is
 * false for an engine not loaded from a checkpoint. */
typedef struct {
    bool has;
    uint64_t dev, ino;
    int64_t step, first_save;
} zc_ckpt_lineage;
zc_ckpt_lineage *zc_engine_lineage(zc_engine *e);

/* Collective. A digest of the frozen units' values (zc_engine_freeze_unit: a LoRA run's base),
 * which checkpoints record instead of holding those units: d[0], d[1] are two independent sums,
 * mod 2^64, over every element of every frozen unit of a 64-bit mix of (the unit's name, the
 * element's logical index, its value rounded to bf16). Each rank adds the elements it owns and
 * the ranks' sums are added, so the digest does not depend on the world size, the stage or the
 * offload; rounded to bf16 it does not depend on the dtype either (a bf16 run's base is its fp32
 * base rounded so). It tells another base from this one (a changed element changes each sum with
 * probability 1 − 2^−64); it is not a cryptographic hash. *any: whether any unit is frozen (d is
 * zeros when none is). Computed once and kept until a frozen unit's values are set again. Every
 * rank gets the same digest and status (ZC_EIO when a rank's disk fails). */
zc_status zc_engine_base_digest(zc_engine *e, uint64_t d[2], bool *any, zc_err *err);

#endif
