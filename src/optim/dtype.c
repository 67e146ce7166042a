/* dtype.c — fp32 ↔ bf16/fp16 conversions (zeroc/dtype.h). The fast kernels are integer bit
 * manipulation (rounding by adding half an ulp minus one plus the kept lsb, as every
 * round-to-nearest-even converter does); the references round in double arithmetic with
 * rint(), a different route to the same answer, so a test of one against the other means
 * something. Special values are handled with selects, not branches, so loops vectorise; the
 * loops are compiled once per vector level (dtype_kernels.inc, zeroc/simd.h). */
#include <math.h>
#include <omp.h>
#include <string.h>

#include "zeroc/dtype.h"
#include "zeroc/simd.h"

#include "bf16_bits.h"
#include "util/asan_range.h"

ZC_SIMD_INLINE uint16_t f16_one(float f)
{
    uint32_t u = bits(f), sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    /* normal results: rebias the exponent (127 → 15) and round 13 mantissa bits away */
    uint32_t normal = (a - (112u << 23) + 0xfffu + ((a >> 13) & 1u)) >> 13;
    /* subnormal results (a < 2^-14): scale by 2^-24 as a float add, which rounds to nearest
     * even in hardware: 0.5f + x puts x's 2^-24-units into the low mantissa bits */
    uint32_t sub = bits(from_bits(a) + 0.5f) - bits(0.5f);
    uint32_t r = a < (113u << 23) ? sub : normal;
    r = a >= 0x477ff000u ? 0x7c00u : r;                       /* ≥ 65520 rounds to inf */
    r = a > 0x7f800000u ? 0x7e00u | ((a >> 13) & 0x1ffu) : r; /* NaN stays (quiet) NaN */
    return (uint16_t)(sign | r);
}

ZC_SIMD_INLINE float f16_to_f32_one(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    /* normal and inf/NaN: rebias; subnormal: m · 2^-24 exactly, as a float multiply */
    uint32_t normal = ((e + 112u) << 23) | (m << 13);
    uint32_t infnan = 0x7f800000u | (m << 13);
    float sub = (float)m * 0x1p-24f;
    uint32_t r = e == 0 ? bits(sub) : e == 31 ? infnan : normal;
    return from_bits(sign | r);
}

/* The loops over [lo, hi): to_bf16_avx512, …, from_f16_portable (zeroc/simd.h). */
#define ZC_SIMD_KERNELS "optim/dtype_kernels.inc"
#include "zeroc/simd_expand.h"

/* Large conversions run in one parallel region, in blocks the threads take statically (each
 * element's result does not depend on the split); small ones — and calls from inside another
 * parallel region, where OpenMP runs the inner one on one thread — stay on the caller's. */
enum { BLOCK = 1 << 16, PAR_MIN = 1 << 18 };
typedef void (*block_fn)(const void *src, void *dst, size_t lo, size_t hi);

static void blocked(block_fn f, const void *src, void *dst, size_t n)
{
    if (n < PAR_MIN || omp_in_parallel()) { /* not even a one-thread region: they cost */
        f(src, dst, 0, n);
        return;
    }
    long nb = (long)((n + BLOCK - 1) / BLOCK);
#pragma omp parallel for schedule(static)
    for (long b = 0; b < nb; b++) {
        size_t lo = (size_t)b * BLOCK, hi = lo + BLOCK < n ? lo + BLOCK : n;
        f(src, dst, lo, hi);
    }
}

void zc_f32_to_bf16(const float *src, uint16_t *dst, size_t n)
{
    zc_asan_read(src, 4 * n);
    zc_asan_write(dst, 2 * n);
    blocked(ZC_SIMD_SELECT(to_bf16), src, dst, n);
}
void zc_bf16_to_f32(const uint16_t *src, float *dst, size_t n)
{
    zc_asan_read(src, 2 * n);
    zc_asan_write(dst, 4 * n);
    blocked(ZC_SIMD_SELECT(from_bf16), src, dst, n);
}
void zc_f32_to_f16(const float *src, uint16_t *dst, size_t n)
{
    zc_asan_read(src, 4 * n);
    zc_asan_write(dst, 2 * n);
    blocked(ZC_SIMD_SELECT(to_f16), src, dst, n);
}
void zc_f16_to_f32(const uint16_t *src, float *dst, size_t n)
{
    zc_asan_read(src, 2 * n);
    zc_asan_write(dst, 4 * n);
    blocked(ZC_SIMD_SELECT(from_f16), src, dst, n);
}

/* ---------- references: rounding in double ---------- */

uint16_t zc_f32_to_bf16_ref(float x)
{
    uint32_t u = bits(x);
    if (isnan(x))
        return (uint16_t)((u >> 16) | 0x40u);
    if (isinf(x) || x == 0.0f)
        return (uint16_t)(u >> 16);
    /* the two bf16 neighbours of x, toward zero and away; pick the nearer, ties to even */
    uint32_t lo = u & 0xffff0000u, hi = lo + 0x10000u;
    /* above the largest bf16 the next value is 2^128 (which is inf): the overflow boundary */
    double hv = (hi & 0x7fffffffu) == 0x7f800000u ? copysign(ldexp(1.0, 128), (double)x)
                                                  : (double)from_bits(hi);
    double dl = fabs((double)x - (double)from_bits(lo));
    double dh = fabs(hv - (double)x);
    if (dl < dh || (dl == dh && !((lo >> 16) & 1u)))
        return (uint16_t)(lo >> 16);
    return (uint16_t)(hi >> 16); /* may carry into the exponent, up to inf: correct */
}

uint16_t zc_f32_to_f16_ref(float x)
{
    uint32_t sign = (bits(x) >> 16) & 0x8000u;
    if (isnan(x))
        return (uint16_t)(sign | 0x7e00u | ((bits(x) >> 13) & 0x1ffu));
    double a = fabs((double)x);
    if (a == 0.0)
        return (uint16_t)sign;
    int e;
    frexp(a, &e);                        /* a = f · 2^e, f in [0.5, 1) */
    int exp = e - 1 < -14 ? -14 : e - 1; /* the binade; subnormals share the lowest */
    double ulp = ldexp(1.0, exp - 10);
    double q = rint(a / ulp) * ulp; /* nearest, ties to even (the default rounding mode) */
    if (q >= 65520.0 || q > 65504.0)
        return (uint16_t)(sign | 0x7c00u);
    if (q < ldexp(1.0, -14)) /* subnormal (or zero after rounding) */
        return (uint16_t)(sign | (uint32_t)(q / ldexp(1.0, -24)));
    frexp(q, &e);
    uint32_t biased = (uint32_t)(e - 1 + 15),
             mant = (uint32_t)(ldexp(q, -(e - 1)) * 1024.0 - 1024.0);
    return (uint16_t)(sign | biased << 10 | mant);
}

float zc_f16_to_f32_ref(uint16_t h)
{
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
    float f = (float)v;
    if (e == 31 && m) /* NaN: keep the payload as the fast path does */
        f = from_bits(0x7f800000u | ((uint32_t)m << 13));
    return (h & 0x8000) ? -f : f;
}

const char *zc_dtype_name(zc_dtype t)
{
    static const char *const names[ZC_NDTYPES] = {"fp32", "bf16", "fp16"};
    if (t == ZC_DTYPE_DEFAULT)
        return "default";
    return (int)t >= 0 && t < ZC_NDTYPES ? names[t] : "unknown";
}

int zc_dtype_size(zc_dtype t)
{
    switch (t) {
    case ZC_FP32: return 4;
    case ZC_BF16:
    case ZC_FP16: return 2;
    default: return 0; /* ZC_DTYPE_DEFAULT has no size of its own: resolve it first */
    }
}

void zc_dtype_widen(zc_dtype t, const void *src, float *dst, size_t n)
{
    switch (t) {
    case ZC_BF16: zc_bf16_to_f32(src, dst, n); break;
    case ZC_FP16: zc_f16_to_f32(src, dst, n); break;
    default: memmove(dst, src, n * sizeof(float)); break;
    }
}

void zc_dtype_narrow(zc_dtype t, const float *src, void *dst, size_t n)
{
    switch (t) {
    case ZC_BF16: zc_f32_to_bf16(src, dst, n); break;
    case ZC_FP16: zc_f32_to_f16(src, dst, n); break;
    default: memmove(dst, src, n * sizeof(float)); break;
    }
}
