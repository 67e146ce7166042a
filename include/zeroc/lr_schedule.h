/* zeroc/lr_schedule.h — DeepSpeed's learning-rate schedules (the config's `scheduler` section):
 * WarmupLR and WarmupDecayLR, step for step as DeepSpeed's lr_schedules.py computes them.
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
 * 0, for WarmupDecayLR). Warmup over W = max(2, warmup_num_steps) iterations: iteration
 * it = applied − 1 has gamma ln(it + 1) / ln(W) (log) or it / W (linear) while it < W, then 1
 * (WarmupLR) or max(0, (T − it) / max(1, T − W)) (WarmupDecayLR, T = total_num_steps);
 * lr = min + (max − min) · gamma. */
ZC_API double zc_lr_schedule_at(const zc_config *cfg, int64_t applied);

#ifdef __cplusplus
}
#endif

#endif
