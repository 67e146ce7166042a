/* zeroc/dtype.h — conversions between fp32 and the 16-bit formats of mixed precision.
 *
 * bf16: the top 16 bits of an fp32 (8-bit exponent, 7-bit mantissa); fp16: IEEE binary16
 * (5-bit exponent, 10-bit mantissa, subnormals). fp32 → 16 bits rounds to nearest, ties to
 * even; overflow gives ±inf (fp16); NaN stays NaN (quiet, sign kept); fp16 keeps subnormals.
 * 16 bits → fp32 is exact. Each kernel is elementwise and branch-free so it vectorises, and a
 * scalar reference written differently (rounding in double arithmetic) is held equal to it,
 * bit for bit, by tests/test_dtype.c.
 *
 *     zc_f32_to_bf16(src, dst, n);   // float * → uint16_t *
 *     zc_bf16_to_f32(dst, back, n);
 */
#ifndef ZEROC_DTYPE_H
#define ZEROC_DTYPE_H

#include "zeroc/api.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Element types of stored parameters, gradients and communication. ZC_DTYPE_DEFAULT (only in a
 * configuration's comm_dtype and grad_accum_dtype) means "the parameters' type". */
typedef enum { ZC_DTYPE_DEFAULT = -1, ZC_FP32 = 0, ZC_BF16, ZC_FP16, ZC_NDTYPES } zc_dtype;

/* "fp32", "bf16", "fp16" (the spelling of communication_data_type and --dtype); bytes per
 * element (0 for ZC_DTYPE_DEFAULT: resolve it first). */
ZC_API const char *zc_dtype_name(zc_dtype t);
ZC_API int zc_dtype_size(zc_dtype t);

/* n elements of type t into fp32 (exact) / from fp32 (rounded to nearest even); fp32 copies. */
ZC_API void zc_dtype_widen(zc_dtype t, const void *src, float *dst, size_t n);
ZC_API void zc_dtype_narrow(zc_dtype t, const float *src, void *dst, size_t n);

ZC_API void zc_f32_to_bf16(const float *src, uint16_t *dst, size_t n);
ZC_API void zc_bf16_to_f32(const uint16_t *src, float *dst, size_t n);
ZC_API void zc_f32_to_f16(const float *src, uint16_t *dst, size_t n);
ZC_API void zc_f16_to_f32(const uint16_t *src, float *dst, size_t n);

/* The scalar references. */
ZC_API uint16_t zc_f32_to_bf16_ref(float x);
ZC_API uint16_t zc_f32_to_f16_ref(float x);
ZC_API float zc_f16_to_f32_ref(uint16_t h);

#ifdef __cplusplus
}
#endif

#endif
