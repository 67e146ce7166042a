/* lr_schedule.c — DeepSpeed's WarmupLR and WarmupDecayLR (zeroc/lr_schedule.h), with DeepSpeed's
 * arithmetic (the log warmup multiplies by 1 / ln W, as it does) so rates agree to the bit. */
#include <math.h>

#include "zeroc/lr_schedule.h"

double zc_lr_schedule_at(const zc_config *cfg, int64_t applied)
{
    ZC_ASSERT(cfg && cfg->sched != ZC_SCHED_NONE && applied >= 0);
    ZC_ASSERT(cfg->sched != ZC_SCHED_WARMUP_DECAY_LR || cfg->total_num_steps > 0);
    const double lo = cfg->warmup_min_lr, hi = zc_config_warmup_max_lr(cfg);
    if (applied == 0) /* set when the scheduler is built, before any step */
        return lo;
    const double it = (double)(applied - 1);
    const double w = cfg->warmup_num_steps < 2 ? 2.0 : (double)cfg->warmup_num_steps;
    double gamma;
    if (it < w)
        gamma = cfg->warmup_type == ZC_WARMUP_LOG ? (1.0 / log(w)) * log(it + 1.0) : it / w;
    else if (cfg->sched == ZC_SCHED_WARMUP_LR)
        gamma = 1.0;
    else {
        const double t = (double)cfg->total_num_steps;
        gamma = fmax(0.0, (t - it) / fmax(1.0, t - w));
    }
    return lo + (hi - lo) * gamma;
}
