/* zeroc/optim.h — optimizer kernels over a contiguous shard of parameters.
 *
 * Each kernel updates elements independently with the same float operations whatever the
 * element's position, so an element gets the same bits whether it sits in a vector body or a
 * scalar tail, in a full replica (stage 0) or in a 1/N shard (stages 1–3). That is what lets
 * all ZeRO stages agree bitwise. Every optimised kernel has a plain scalar reference beside it
 * (`_ref`); tests hold them equal to the bit.
 *
 * The gradient passed in is the raw sum over ranks and micro-steps; `gscale` (1/(N·accum),
 * times the clipping coefficient) turns it into the mean gradient inside the kernel.
 *
 *     zc_adam_hparams h = {.lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8,
 *                          .weight_decay = 0.01, .decoupled = true, .step = 1};
 *     zc_adam_update(p, g, ZC_FP32, m, v, n, 0.5f, &h, ZC_FP32, NULL);
 */
#ifndef ZEROC_OPTIM_H
#define ZEROC_OPTIM_H

#include "zeroc/api.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zeroc/dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    double lr, beta1, beta2, eps, weight_decay;
    bool decoupled;   /* true: AdamW (decay applied to the weights); false: L2 added to the grad */
    bool uncorrected; /* DeepSpeed's bias_correction false: the moments are used uncorrected */
    int64_t step;     /* 1-based step number, for bias correction */
} zc_adam_hparams;

typedef struct {
    double lr, momentum, weight_decay;
} zc_sgd_hparams;

/* PyTorch/DeepSpeed Adam(W): m, v are this shard's moments (zero before step 1). The gradient
 * g holds n elements of type gt (fp32, or bf16/fp16 bits widened exactly on the way in).
 * When `out` is not NULL, the updated weights are also rounded into it as n elements of type ot
 * (mixed precision's 16-bit model copy of the fp32 master p): the same bits as
 * zc_dtype_narrow(ot, p, out, n) afterwards, written block by block while the block is still in
 * cache instead of in a second sweep over p. Returns how many updated weights are not finite
 * (inf or NaN) — in out when it is 16-bit, where a finite weight past the type's range (fp16:
 * ±65504) is inf, else in p: 0 in a healthy run. */
ZC_API int64_t zc_adam_update(float *p, const void *g, zc_dtype gt, float *m, float *v, size_t n,
                              float gscale, const zc_adam_hparams *h, zc_dtype ot, void *out);
ZC_API void zc_adam_update_ref(float *p, const float *g, float *m, float *v, size_t n, float gscale,
                               const zc_adam_hparams *h);

/* PyTorch SGD with momentum (dampening 0, no Nesterov); buf may be NULL when momentum is 0.
 * g, ot, out and the count returned as for zc_adam_update. */
ZC_API int64_t zc_sgd_update(float *p, const void *g, zc_dtype gt, float *buf, size_t n,
                             float gscale, const zc_sgd_hparams *h, zc_dtype ot, void *out);
ZC_API void zc_sgd_update_ref(float *p, const float *g, float *buf, size_t n, float gscale,
                              const zc_sgd_hparams *h);

/* Σ g[i]² in double, blocked so the summation order depends only on n (not on threads). */
ZC_API double zc_sum_squares(const float *g, size_t n);
/* The same of n 16-bit elements of type t (bf16/fp16): each chunk of ZC_SUM_SQUARES_CHUNK
 * elements widened and summed by zc_sum_squares, then the chunks' sums added in order. Threads
 * take whole chunks, so the result depends only on the data. */
enum { ZC_SUM_SQUARES_CHUNK = 2048 };
ZC_API double zc_sum_squares_16(const void *g, zc_dtype t, size_t n);

#ifdef __cplusplus
}
#endif

#endif
