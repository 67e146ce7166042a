/* lr_schedule.c — DeepSpeed's five learning-rate schedules (zeroc/lr_schedule.h), with DeepSpeed's
 * arithmetic, operation for operation in float64 (the log warmup multiplies by 1 / ln W, the
 * cosine takes π · s / S, OneCycle's phase is 1 + i / S − cycle), so rates agree to the bit.
 *
 * Every schedule is a function of `applied`, the optimizer steps applied before this one:
 * DeepSpeed's scheduler sets a rate when it is built (applied 0) and then steps once per applied
 * step, to last_batch_iteration = applied − 1. */
#include <math.h>

#include "zeroc/lr_schedule.h"

/* WarmupLR's and WarmupCosineLR's warmup fraction at iteration it < w. */
static double warmup_gamma(const zc_config *cfg, double it, double w)
{
    return cfg->warmup_type == ZC_WARMUP_LOG ? (1.0 / log(w)) * log(it + 1.0) : it / w;
}

/* WarmupLR / WarmupDecayLR: min + (max − min) · gamma. */
static double warmup_lr(const zc_config *cfg, int64_t applied)
{
    const double lo = cfg->warmup_min_lr, hi = zc_config_warmup_max_lr(cfg);
    if (applied == 0) /* set when the scheduler is built, before any step */
        return lo;
    const double it = (double)(applied - 1);
    const double w = cfg->warmup_num_steps < 2 ? 2.0 : (double)cfg->warmup_num_steps;
    double gamma;
    if (it < w)
        gamma = warmup_gamma(cfg, it, w);
    else if (cfg->sched == ZC_SCHED_WARMUP_LR)
        gamma = 1.0;
    else {
        const double t = (double)cfg->total_num_steps;
        gamma = fmax(0.0, (t - it) / fmax(1.0, t - w));
    }
    return lo + (hi - lo) * gamma;
}

/* WarmupCosineLR: optimizer.params.lr times a ratio. DeepSpeed's sets 0 when built (its
 * get_lr answers 0.0 before the first step), not the ratio's start. */
static double cosine_lr(const zc_config *cfg, int64_t applied)
{
    if (applied == 0)
        return 0.0;
    const int64_t it = applied - 1, wi = cfg->warmup_num_steps < 2 ? 2 : cfg->warmup_num_steps;
    double ratio;
    if (it < wi) {
        ratio = warmup_gamma(cfg, (double)it, (double)wi);
        ratio = cfg->warmup_min_ratio + ratio * (1.0 - cfg->warmup_min_ratio);
    } else {
        /* past total_num_steps the cosine goes on rising again, as DeepSpeed's does */
        const double s = (double)(it - wi + 1), total = (double)(cfg->total_num_steps - wi);
        ratio = (1.0 + cos(M_PI * s / total)) / 2.0;
        ratio = fmax(0.0, cfg->cos_min_ratio + (1.0 - cfg->cos_min_ratio) * ratio);
    }
    return cfg->lr * ratio;
}

/* OneCycle: up from cycle_min_lr to cycle_max_lr over the first step size, down over the
 * second, then cycle_min_lr, divided by 1 + decay_lr_rate · (steps after / decay_step_size). */
static double one_cycle_lr(const zc_config *cfg, int64_t applied)
{
    const double lo = cfg->cycle_min_lr, hi = cfg->cycle_max_lr;
    const double first = (double)cfg->cycle_first_step_size;
    const double second = cfg->cycle_second_step_size ? (double)cfg->cycle_second_step_size : first;
    const double total = first + second, ratio = first / total;
    if (applied == 0 || (double)(applied - 1) < total) { /* built, or within the cycle */
        const double i = (double)applied;
        const double cycle = floor(1.0 + i / total);
        const double x = 1.0 + i / total - cycle;
        const double scale = x <= ratio ? x / ratio : (x - 1.0) / (ratio - 1.0);
        return lo + (hi - lo) * scale;
    }
    if (cfg->decay_step_size == 0 || cfg->decay_lr_rate == 0.0)
        return lo;
    const double after = (double)(applied - 1) - total + 1.0;
    return lo / (1.0 + cfg->decay_lr_rate * (after / (double)cfg->decay_step_size));
}

/* LRRangeTest: min · (1 + rate · applied / step_size), the quotient floored with staircase. */
static double range_test_lr(const zc_config *cfg, int64_t applied)
{
    double interval = (double)applied / (double)cfg->lr_range_test_step_size;
    if (cfg->lr_range_test_staircase)
        interval = floor(interval);
    return cfg->lr_range_test_min_lr * (1.0 + cfg->lr_range_test_step_rate * interval);
}

double zc_lr_schedule_at(const zc_config *cfg, int64_t applied)
{
    ZC_ASSERT(cfg && cfg->sched != ZC_SCHED_NONE && applied >= 0);
    switch (cfg->sched) {
    case ZC_SCHED_WARMUP_COSINE_LR:
        ZC_ASSERT(cfg->total_num_steps > 0);
        return cosine_lr(cfg, applied);
    case ZC_SCHED_ONE_CYCLE:
        ZC_ASSERT(!isnan(cfg->cycle_min_lr) && !isnan(cfg->cycle_max_lr) &&
                  cfg->cycle_first_step_size > 0);
        return one_cycle_lr(cfg, applied);
    case ZC_SCHED_LR_RANGE_TEST:
        ZC_ASSERT(cfg->lr_range_test_step_size > 0);
        return range_test_lr(cfg, applied);
    default:
        ZC_ASSERT(cfg->sched != ZC_SCHED_WARMUP_DECAY_LR || cfg->total_num_steps > 0);
        return warmup_lr(cfg, applied);
    }
}
