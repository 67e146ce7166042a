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
/* Adam(W) with a compact master (optimizer.params.compact_master): the fp32 master is not
 * stored, it is the bf16 weights p16 and 16-bit remainders rem (zc_master_join). Each block's
 * master is joined, takes zc_adam_update's step (the same bits as on an fp32 master), and is
 * split back (zc_master_split). The count returned is of non-finite weights in p16. */
ZC_API int64_t zc_adam_update_split(uint16_t *rem, uint16_t *p16, const void *g, zc_dtype gt,
                                    float *m, float *v, size_t n, float gscale,
                                    const zc_adam_hparams *h);

/* AdamW8bit: AdamW whose moments are kept blockwise in 8 bits (as bitsandbytes' 8-bit Adam).
 * Each element's m is one uint8 code into the signed 256-entry dynamic map, its v one code into
 * the unsigned map (zc_q8_map), times one fp32 scale per block of ZC_Q8_BLOCK elements: the
 * block's largest magnitude. Blocks start at element 0 of the call (the engine calls it per
 * shard, so blocks never straddle ranks), the last one possibly short: ceil(n / ZC_Q8_BLOCK)
 * scales per moment. A step dequantizes a block's m and v, takes zc_adam_update's element step
 * on them in fp32 (the weights get the exact fp32 moments of this step), and stores the new m, v
 * requantized: each scale the block's new absmax, each code the nearest map value of x / scale
 * (ties to the lower code; a zero block keeps scale 0 and the zero code). Fresh state is the
 * zero code with scale 0 (zc_q8_zero_code). g, gt, ot, out and the count returned as for
 * zc_adam_update. The reference is the same arithmetic written as one scalar loop. */
enum { ZC_Q8_BLOCK = 256 };
ZC_API int64_t zc_adam8_update(float *p, const void *g, zc_dtype gt, uint8_t *mq, float *ms,
                               uint8_t *vq, float *vs, size_t n, float gscale,
                               const zc_adam_hparams *h, zc_dtype ot, void *out);
ZC_API void zc_adam8_update_ref(float *p, const float *g, uint8_t *mq, float *ms, uint8_t *vq,
                                float *vs, size_t n, float gscale, const zc_adam_hparams *h);
/* AdamW8bit with a compact master (optimizer.params.compact_master): the fp32 master is not
 * stored, it is the bf16 weights p16 and 16-bit remainders rem (zc_master_join). Each block's
 * master is joined, takes zc_adam8_update's step (the same bits as on an fp32 master), and is
 * split back (zc_master_split). The count returned is of non-finite weights in p16. */
ZC_API int64_t zc_adam8_update_split(uint16_t *rem, uint16_t *p16, const void *g, zc_dtype gt,
                                     uint8_t *mq, float *ms, uint8_t *vq, float *vs, size_t n,
                                     float gscale, const zc_adam_hparams *h);
/* The compact master: fp32 values w as their bf16 weights rounded half away from zero (p16) and
 * their low 16 bits (rem), either output NULL to skip it. Half away, not nearest even: then every
 * bf16 weight stands for exactly 65,536 fp32 values, which its remainder tells apart, so joining
 * gives w back bit for bit (nearest even maps 65,537 values to an even weight). The weights
 * differ from nearest-even rounding only at exact ties. */
ZC_API void zc_master_split(const float *w, size_t n, uint16_t *p16, uint16_t *rem);
ZC_API void zc_master_join(const uint16_t *p16, const uint16_t *rem, size_t n, float *w);
/* The 256 map values in ascending order (code c means map[c] · scale). Signed (m): bitsandbytes'
 * dynamic tree map — ±10^(i−6) times the midpoints of 2^i + 1 points spaced evenly over
 * [0.1, 1], i = 0..6, with 0 and 1 — except that its smallest negative value (−5.5e−7) is −1,
 * so a block whose largest magnitude is negative keeps it exactly, as a positive one does
 * (bitsandbytes' map stops at −0.9965 there). Unsigned (v): bitsandbytes' unsigned map
 * (10^(i−6) times the midpoints of 2^(i+1) + 1 points, with 0 and 1), as it is. Both hold 0 and
 * ±1, so dequantizing a block and quantizing it again gives back the same codes and scale
 * (checkpoints rely on it; tests check it). */
ZC_API const float *zc_q8_map(bool is_signed);
ZC_API uint8_t zc_q8_zero_code(bool is_signed);
/* x[0..n) into codes q[0..n) and ceil(n / ZC_Q8_BLOCK) scales, blocks from element 0. */
ZC_API void zc_q8_quantize(const float *x, size_t n, bool is_signed, uint8_t *q, float *scales);
/* Elements [first, first + n) of a quantized array (q, scales from its element 0) into x. */
ZC_API void zc_q8_dequantize(const uint8_t *q, const float *scales, bool is_signed, size_t first,
                             size_t n, float *x);

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
