/* optim.c — Adam(W) and SGD kernels over one shard, plus the squared-norm reduction.
 *
 * Built with -ffp-contract=off (no fused multiply-adds the scalar tail would not also get) and
 * -fno-math-errno (so sqrtf vectorises to the correctly rounded vsqrtps instead of a libm call
 * per element — the 4–6× of MACHINE-FACTS). All constants are rounded to float once, outside the
 * loop, in one helper shared by the fast kernel and its reference, so both do the same float
 * operations in the same order. Threads split the shard into static blocks; elements are
 * independent, so the thread count never changes a bit. Gradients may be 16-bit: each block is
 * widened (exactly) on the thread that updates it. */
#include <math.h>

#include "zeroc/dtype.h"
#include "zeroc/optim.h"

typedef struct {
    float decay, b1, one_minus_b1, b2, one_minus_b2, bc2_sqrt, eps, step_size, l2;
} adam_consts;

static adam_consts adam_prepare(const zc_adam_hparams *h)
{
    adam_consts k;
    double bc1 = 1.0 - pow(h->beta1, (double)h->step);
    double bc2 = 1.0 - pow(h->beta2, (double)h->step);
    k.decay = h->decoupled ? (float)(1.0 - h->lr * h->weight_decay) : 1.0f;
    k.l2 = h->decoupled ? 0.0f : (float)h->weight_decay;
    k.b1 = (float)h->beta1;
    k.one_minus_b1 = (float)(1.0 - h->beta1);
    k.b2 = (float)h->beta2;
    k.one_minus_b2 = (float)(1.0 - h->beta2);
    k.bc2_sqrt = (float)sqrt(bc2);
    k.eps = (float)h->eps;
    k.step_size = (float)(h->lr / bc1);
    return k;
}

/* The per-element update, written once: both kernels below inline it. */
static inline void adam_element(float *p, float g, float *m, float *v, const adam_consts *k)
{
    float w = *p;
    g = g + k->l2 * w;
    w = w * k->decay;
    float mi = *m * k->b1 + k->one_minus_b1 * g;
    float vi = *v * k->b2 + k->one_minus_b2 * (g * g);
    float denom = sqrtf(vi) / k->bc2_sqrt + k->eps;
    *m = mi;
    *v = vi;
    *p = w - k->step_size * (mi / denom);
}

/* Elements [lo, hi) of the gradient g (of type gt) as fp32: g itself when it is fp32, else
 * widened (exactly) into buf. */
static const float *grad_block(const void *g, zc_dtype gt, size_t lo, size_t hi, float *buf)
{
    if (gt == ZC_FP32)
        return (const float *)g + lo;
    zc_dtype_widen(gt, (const char *)g + lo * (size_t)zc_dtype_size(gt), buf, hi - lo);
    return buf;
}

/* Threads split the shard into blocks of BLOCK elements, in one parallel region (none for a
 * single block): a region per small call costs more than the update (measured: 2048-element
 * calls spent a third of a bf16 step in futex and scheduler code). */
enum { BLOCK = 16384 };

int64_t zc_adam_update(float *restrict p, const void *restrict g, zc_dtype gt, float *restrict m,
                       float *restrict v, size_t n, float gscale, const zc_adam_hparams *h)
{
    const adam_consts k = adam_prepare(h);
    long nblocks = (long)((n + BLOCK - 1) / BLOCK);
    int64_t bad = 0;
#pragma omp parallel for schedule(static) reduction(+ : bad) if (nblocks > 1)
    for (long b = 0; b < nblocks; b++) {
        size_t lo = (size_t)b * BLOCK, hi = lo + BLOCK < n ? lo + BLOCK : n;
        float buf[BLOCK];
        const float *gb = grad_block(g, gt, lo, hi, buf) - lo;
        int64_t nb = 0;
#pragma omp simd reduction(+ : nb)
        for (size_t i = lo; i < hi; i++) {
            adam_element(&p[i], gb[i] * gscale, &m[i], &v[i], &k);
            nb += !isfinite(p[i]);
        }
        bad += nb;
    }
    return bad;
}

void zc_adam_update_ref(float *p, const float *g, float *m, float *v, size_t n, float gscale,
                        const zc_adam_hparams *h)
{
    const adam_consts k = adam_prepare(h);
    for (size_t i = 0; i < n; i++) {
        volatile float gi = g[i] * gscale; /* volatile: keep the reference scalar */
        adam_element(&p[i], gi, &m[i], &v[i], &k);
    }
}

static inline void sgd_element(float *p, float g, float *buf, float lr, float mom, float wd)
{
    float d = g + wd * *p;
    if (buf) {
        d = *buf * mom + d;
        *buf = d;
    }
    *p = *p - lr * d;
}

int64_t zc_sgd_update(float *restrict p, const void *restrict g, zc_dtype gt,
                      float *restrict buf, size_t n, float gscale, const zc_sgd_hparams *h)
{
    const float lr = (float)h->lr, mom = (float)h->momentum, wd = (float)h->weight_decay;
    if (h->momentum == 0.0)
        buf = NULL;
    long nblocks = (long)((n + BLOCK - 1) / BLOCK);
    int64_t bad = 0;
#pragma omp parallel for schedule(static) reduction(+ : bad) if (nblocks > 1)
    for (long b = 0; b < nblocks; b++) {
        size_t lo = (size_t)b * BLOCK, hi = lo + BLOCK < n ? lo + BLOCK : n;
        float wide[BLOCK];
        const float *gb = grad_block(g, gt, lo, hi, wide) - lo;
        int64_t nb = 0;
        if (buf) {
#pragma omp simd reduction(+ : nb)
            for (size_t i = lo; i < hi; i++) {
                sgd_element(&p[i], gb[i] * gscale, &buf[i], lr, mom, wd);
                nb += !isfinite(p[i]);
            }
        } else {
#pragma omp simd reduction(+ : nb)
            for (size_t i = lo; i < hi; i++) {
                sgd_element(&p[i], gb[i] * gscale, NULL, lr, mom, wd);
                nb += !isfinite(p[i]);
            }
        }
        bad += nb;
    }
    return bad;
}

void zc_sgd_update_ref(float *p, const float *g, float *buf, size_t n, float gscale,
                       const zc_sgd_hparams *h)
{
    const float lr = (float)h->lr, mom = (float)h->momentum, wd = (float)h->weight_decay;
    if (h->momentum == 0.0)
        buf = NULL;
    for (size_t i = 0; i < n; i++) {
        volatile float gi = g[i] * gscale;
        sgd_element(&p[i], gi, buf ? &buf[i] : NULL, lr, mom, wd);
    }
}

double zc_sum_squares(const float *g, size_t n)
{
    /* Eight running sums (element i goes to sum i mod 8) for instruction-level parallelism;
     * the order depends only on n. */
    double acc[8] = {0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++)
            acc[j] += (double)g[i + j] * (double)g[i + j];
    for (int j = 0; i < n; i++, j++)
        acc[j] += (double)g[i] * (double)g[i];
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}
