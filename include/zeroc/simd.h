/* zeroc/simd.h — which vector instructions the elementwise kernels use, chosen at run time.
 *
 * The library is built for the baseline x86-64 (SSE2), so one binary runs on every machine; the
 * elementwise and row-wise kernels (dtype conversions, the optimizer, the models' layer norms,
 * GELU, softmax, …) are compiled a second and third time for AVX2 (x86-64-v3) and AVX-512
 * (x86-64-v4), and each call runs the widest copy the CPU supports. ZEROC_SIMD=avx512|avx2|
 * portable in the environment caps the choice (tests run every level the CPU offers; a level
 * the CPU lacks falls back to the best it has). Off x86-64, or with a compiler other than GCC,
 * only the portable copy exists.
 *
 * Every copy computes the same bits for elementwise work: no fused multiply-adds are formed (the
 * library is ISO C, where GCC contracts nothing) and the operations are the same, only wider. A
 * sum inside one row (a layer norm's mean, a softmax's denominator) may be added in another
 * order by a wider copy; all ranks of a machine run the same copy, so stages stay bitwise-equal.
 *
 * A kernel file is written once, with ZC_SIMD_FN(name) as its functions' names, and expanded
 * into one copy per level by zeroc/simd_expand.h; the public function calls the running level's
 * copy:
 *
 *     #define ZC_SIMD_KERNELS "scale_kernels.inc"   // defines static void ZC_SIMD_FN(scale)(...)
 *     #include "zeroc/simd_expand.h"                // scale_avx512, scale_avx2, scale_portable
 *     void my_scale(float *x, size_t n) { ZC_SIMD_DISPATCH(scale, x, n); }
 *
 * Helpers the kernels share are defined before the expansion as ZC_SIMD_INLINE: GCC inlines a
 * function built for another target only when it must, and a helper left as a call runs at the
 * baseline (and stops its caller's loop from vectorising).
 */
#ifndef ZEROC_SIMD_H
#define ZEROC_SIMD_H

#include "zeroc/api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { ZC_SIMD_PORTABLE = 0, ZC_SIMD_AVX2, ZC_SIMD_AVX512 } zc_simd;

/* The level the kernels run at: the widest the CPU supports, capped by ZEROC_SIMD (read once). */
ZC_API zc_simd zc_simd_level(void);
/* "avx512", "avx2" or "portable" */
ZC_API const char *zc_simd_name(zc_simd level);

#if defined(__GNUC__)
#define ZC_SIMD_INLINE static inline __attribute__((always_inline))
#else
#define ZC_SIMD_INLINE static inline
#endif

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define ZC_SIMD_MULTI 1
/* Calls the copy of kernel f for the running level. */
#define ZC_SIMD_DISPATCH(f, ...)                                                                   \
    do {                                                                                           \
        switch (zc_simd_level()) {                                                                 \
        case ZC_SIMD_AVX512: f##_avx512(__VA_ARGS__); break;                                       \
        case ZC_SIMD_AVX2: f##_avx2(__VA_ARGS__); break;                                           \
        default: f##_portable(__VA_ARGS__); break;                                                 \
        }                                                                                          \
    } while (0)
/* The same for a kernel that returns a value, into r. */
#define ZC_SIMD_DISPATCH_RET(r, f, ...)                                                            \
    do {                                                                                           \
        switch (zc_simd_level()) {                                                                 \
        case ZC_SIMD_AVX512: r = f##_avx512(__VA_ARGS__); break;                                   \
        case ZC_SIMD_AVX2: r = f##_avx2(__VA_ARGS__); break;                                       \
        default: r = f##_portable(__VA_ARGS__); break;                                             \
        }                                                                                          \
    } while (0)
/* The copy of kernel f for the running level, as a function pointer. */
#define ZC_SIMD_SELECT(f)                                                                          \
    (zc_simd_level() == ZC_SIMD_AVX512 ? f##_avx512                                                \
     : zc_simd_level() == ZC_SIMD_AVX2 ? f##_avx2                                                  \
                                       : f##_portable)
#else
#define ZC_SIMD_MULTI 0
#define ZC_SIMD_SELECT(f) f##_portable
#define ZC_SIMD_DISPATCH(f, ...) f##_portable(__VA_ARGS__)
#define ZC_SIMD_DISPATCH_RET(r, f, ...) (r = f##_portable(__VA_ARGS__))
#endif

#ifdef __cplusplus
}
#endif

#endif
