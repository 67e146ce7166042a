/* quantize.c — ZeRO++'s block-wise int8 quantization (quantize.h). Blocks are independent, so
 * threads split them without changing a bit. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels/quantize.h"
#include "util/asan_range.h"
#include "zeroc/simd.h"

int64_t zc_qwz_segment_bytes(int64_t shard)
{
    int64_t blocks = (shard + ZC_QWZ_BLOCK - 1) / ZC_QWZ_BLOCK;
    return 4 * blocks + (shard + 3) / 4 * 4;
}

static size_t nblocks(size_t S)
{
    return (S + ZC_QWZ_BLOCK - 1) / ZC_QWZ_BLOCK;
}

/* rintf for |v| < 2^22 in the default rounding mode (to nearest, ties to even): adding and
 * taking away 1.5 · 2^23 leaves v rounded to an integer, in a form the compiler vectorises
 * (rintf itself is a library call on the baseline x86-64). Exact: the file is built with
 * -ffp-contract=off, so v is rounded before the addition. */
static inline float round_even(float v)
{
    const float magic = 12582912.0f; /* 1.5 · 2^23 */
    return (v + magic) - magic;
}

/* quantize_block_<level>, dequantize_block_<level> (zeroc/simd.h) */
#define ZC_SIMD_KERNELS "kernels/quantize_kernels.inc"
#include "zeroc/simd_expand.h"

typedef void (*quantize_fn)(const float *x, size_t n, float *scale, int8_t *q);
typedef void (*dequantize_fn)(const int8_t *q, float scale, size_t n, float *dst);

void zc_qwz_quantize(const void *src, zc_dtype t, size_t S, void *segment)
{
    const long nb = (long)nblocks(S);
    float *scales = segment;
    int8_t *q = (int8_t *)(scales + nb);
    const size_t es = (size_t)zc_dtype_size(t);
    zc_asan_write(segment, 4 * (size_t)nb + S);
    const quantize_fn quantize_block = ZC_SIMD_SELECT(quantize_block);
#pragma omp parallel for schedule(static) if (nb > 16)
    for (long b = 0; b < nb; b++) {
        size_t lo = (size_t)b * ZC_QWZ_BLOCK, n = S - lo < ZC_QWZ_BLOCK ? S - lo : ZC_QWZ_BLOCK;
        float x[ZC_QWZ_BLOCK];
        zc_dtype_widen(t, (const char *)src + lo * es, x, n);
        quantize_block(x, n, &scales[b], q + lo);
    }
    memset(q + S, 0, (S + 3) / 4 * 4 - S); /* the padding crosses the network too */
}

void zc_qwz_requantize_sum(const void *const *segs, int nsegs, size_t S, void *out)
{
    const long nb = (long)nblocks(S);
    float *scales = out;
    int8_t *q = (int8_t *)(scales + nb);
    zc_asan_write(out, 4 * (size_t)nb + S);
    const quantize_fn quantize_block = ZC_SIMD_SELECT(quantize_block);
#pragma omp parallel for schedule(static) if (nb > 16)
    for (long b = 0; b < nb; b++) {
        size_t lo = (size_t)b * ZC_QWZ_BLOCK, n = S - lo < ZC_QWZ_BLOCK ? S - lo : ZC_QWZ_BLOCK;
        float acc[ZC_QWZ_BLOCK], x[ZC_QWZ_BLOCK];
        zc_qwz_dequantize_range(segs[0], S, lo, n, acc);
        for (int j = 1; j < nsegs; j++) {
            zc_qwz_dequantize_range(segs[j], S, lo, n, x);
            for (size_t i = 0; i < n; i++)
                acc[i] += x[i];
        }
        quantize_block(acc, n, &scales[b], q + lo);
    }
    memset(q + S, 0, (S + 3) / 4 * 4 - S);
}

void zc_qwz_dequantize_range(const void *segment, size_t S, size_t lo, size_t n, float *dst)
{
    const float *scales = segment;
    const int8_t *q = (const int8_t *)(scales + nblocks(S));
    zc_asan_read(q + lo, n);
    zc_asan_write(dst, 4 * n);
    const dequantize_fn dequantize_block = ZC_SIMD_SELECT(dequantize_block);
    for (size_t i = 0; i < n;) { /* a block at a time: one scale each */
        const size_t b = (lo + i) / ZC_QWZ_BLOCK, end = (b + 1) * ZC_QWZ_BLOCK - lo;
        const size_t stop = end < n ? end : n;
        dequantize_block(q + lo + i, scales[b], stop - i, dst + i);
        i = stop;
    }
}

void zc_qwz_dequantize(const void *segment, size_t S, zc_dtype t, void *dst)
{
    const long nb = (long)nblocks(S);
    const size_t es = (size_t)zc_dtype_size(t);
#pragma omp parallel for schedule(static) if (nb > 16)
    for (long b = 0; b < nb; b++) {
        size_t lo = (size_t)b * ZC_QWZ_BLOCK, n = S - lo < ZC_QWZ_BLOCK ? S - lo : ZC_QWZ_BLOCK;
        float x[ZC_QWZ_BLOCK];
        zc_qwz_dequantize_range(segment, S, lo, n, x);
        zc_dtype_narrow(t, x, (char *)dst + lo * es, n);
    }
}
