/* loss_scale.c — fp16 dynamic loss scaling (loss_scale.h), following DeepSpeed's
 * DynamicLossScaler (runtime/fp16/loss_scaler.py): the same counters and the same tests, so a
 * DeepSpeed user's fp16 block behaves the same here. */
#include <math.h>

#include "engine/loss_scale.h"

void zc_loss_scaler_init(zc_loss_scaler *s, const zc_config *cfg)
{
    *s = (zc_loss_scaler){
        .scale = 1.0, .hysteresis_left = cfg->hysteresis, .last_overflow_iter = -1};
    if (cfg->dtype != ZC_FP16)
        return;
    s->dynamic = cfg->loss_scale == 0;
    s->scale = cfg->loss_scale > 0 ? cfg->loss_scale : ldexp(1.0, cfg->initial_scale_power);
}

zc_status zc_loss_scaler_update(zc_loss_scaler *s, const zc_config *cfg, bool overflow,
                                long long step, zc_err *err)
{
    /* the scaler's own flag, set only for fp16: loss_scale is 0 by default in every run, and
     * a bf16 or fp32 run's scale must stay 1 (it doubled every loss_scale_window steps, until
     * 2^128 made every gradient inf at step 128000) */
    const bool dynamic = s->dynamic;
    if (overflow) {
        s->skipped++;
        if (!dynamic)
            return zc_err_set(err, ZC_ESTATE,
                              "step %lld: the fp16 gradients overflowed (inf/nan) with the static "
                              "fp16.loss_scale %g; lower it, or set it to 0 for dynamic scaling",
                              step, s->scale);
        if (cfg->hysteresis == 1 || s->hysteresis_left == 1) {
            if (s->scale <= cfg->min_loss_scale)
                return zc_err_set(err, ZC_ESTATE,
                                  "step %lld: the fp16 gradients overflowed (inf/nan) at the "
                                  "minimum loss scale fp16.min_loss_scale = %g; training cannot "
                                  "continue in fp16 (%lld steps skipped so far): try bf16, a "
                                  "lower learning rate, or gradient_clipping",
                                  step, cfg->min_loss_scale, (long long)s->skipped);
            s->scale = fmax(s->scale / 2.0, cfg->min_loss_scale);
        } else {
            s->hysteresis_left--;
        }
        s->last_overflow_iter = s->iter;
    } else if (dynamic) {
        if (cfg->consecutive_hysteresis)
            s->hysteresis_left = cfg->hysteresis;
        if ((s->iter - s->last_overflow_iter) % cfg->loss_scale_window == 0) {
            if (!cfg->consecutive_hysteresis)
                s->hysteresis_left = cfg->hysteresis;
            s->scale *= 2.0;
        }
    }
    s->iter++;
    return ZC_OK;
}
