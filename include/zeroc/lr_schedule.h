/* zeroc/lr_schedule.h — DeepSpeed's learning-rate schedules (the config's `scheduler` section):
 * WarmupLR, WarmupDecayLR, WarmupCosineLR, OneCycle and LRRangeTest, step for step as DeepSpeed's
 * lr_schedules.py computes them (OneCycle's momentum cycle aside: see docs/CONFIG.md).
 *
 * DeepSpeed sets the warmup's minimum before the first optimizer step and advances the schedule
 * after each step it applies (an fp16 step skipped for overflow does not advance it), so the
 * rate of a step depends on how many steps were applied before it:
 *
 *     zc_engine_set_lr(e, zc_lr_schedule_at(&cfg, steps_applied));
 */
#ifndef ZEROC_LR_SCHEDULE_H
#define ZEROC_LR_SCHEDULE_H

#include "zeroc/api.h"

#include <stdint.h>

#include "zeroc/config.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The learning rate of the optimizer step that follows `applied` applied steps (0: the first
 * step), under cfg's scheduler (cfg->sched not ZC_SCHED_NONE; total_num_steps resolved, i.e. not
 * 0, for WarmupDecayLR and WarmupCosineLR). With it = applied − 1 (DeepSpeed's
 * last_batch_iteration) and W = max(2, warmup_num_steps):
 *
 * - WarmupLR, WarmupDecayLR: applied 0 gives warmup_min_lr. While it < W, gamma = ln(it + 1) /
 *   ln(W) (log) or it / W (linear); then 1 (WarmupLR) or max(0, (T − it) / max(1, T − W))
 *   (WarmupDecayLR, T = total_num_steps); lr = min + (max − min) · gamma.
 * - WarmupCosineLR: applied 0 gives 0. While it < W, r = warmup_min_ratio + gamma · (1 −
 *   warmup_min_ratio); then r = max(0, cos_min_ratio + (1 − cos_min_ratio) · (1 + cos(π · (it −
 *   W + 1) / (T − W))) / 2); lr = optimizer.params.lr · r.
 * - OneCycle: with S = first + second step size and i = applied, while it < S: cycle =
 *   floor(1 + i / S), x = 1 + i / S − cycle, scale = x / (first / S) when x <= first / S, else
 *   (x − 1) / (first / S − 1); lr = cycle_min_lr + (cycle_max_lr − cycle_min_lr) · scale. After:
 *   cycle_min_lr / (1 + decay_lr_rate · (it − S + 1) / decay_step_size), or cycle_min_lr when
 *   either is 0.
 * - LRRangeTest: lr_range_test_min_lr · (1 + step_rate · q), q = applied / step_size (floored
 *   with staircase). */
ZC_API double zc_lr_schedule_at(const zc_config *cfg, int64_t applied);

#ifdef __cplusplus
}
#endif

#endif
