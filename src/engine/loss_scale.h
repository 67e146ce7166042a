/* loss_scale.h — fp16's dynamic loss scaling, DeepSpeed's DynamicLossScaler rule for rule.
 *
 * Each optimizer-step boundary reports whether the gradients overflowed (inf/nan on any rank).
 * An overflow skips the step; with hysteresis h, the first h−1 overflows only use up the
 * hysteresis and the h-th halves the scale (never below min_loss_scale). loss_scale_window
 * clean steps since the last overflow double it. An overflow at the minimum scale is an error:
 * training cannot make progress. A static scale (fp16.loss_scale > 0) never changes; an overflow
 * with it is an error too (DeepSpeed would apply inf/nan to the weights). */
#ifndef ZEROC_LOSS_SCALE_H
#define ZEROC_LOSS_SCALE_H

#include <stdbool.h>

#include "zeroc/config.h"
#include "zeroc/engine.h"
#include "zeroc/status.h"

/* The scaler for cfg: scale 1 and inactive unless fp16 is enabled. */
void zc_loss_scaler_init(zc_loss_scaler *s, const zc_config *cfg);
/* One boundary: overflow or not. Returns ZC_ESTATE (message naming step and scale) when an
 * overflow cannot be answered by lowering the scale. `step` (the boundary's number,
 * counting skipped steps) names it in the message. */
zc_status zc_loss_scaler_update(zc_loss_scaler *s, const zc_config *cfg, bool overflow,
                                long long step, zc_err *err);

#endif
