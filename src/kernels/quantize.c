/* quantize.c — ZeRO++'s block-wise int8 quantization (quantize.h). Blocks are independent, so
 * threads split them without changing a bit. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels/quantize.h"

int64_t zc_qwz_segment_bytes(int64_t shard)
{
    int64_t blocks = (shard + ZC_QWZ_BLOCK - 1) / ZC_QWZ_BLOCK;
    return 4 * blocks + (shard + 3) / 4 * 4;
}

static size_t nblocks(size_t S)
{
    return (S + ZC_QWZ_BLOCK - 1) / ZC_QWZ_BLOCK;
}

/* One block of n ≤ ZC_QWZ_BLOCK values: its scale and int8 values. */
static void quantize_block(const float *x, size_t n, float *scale, int8_t *q)
{
    float amax = 0.0f;
    for (size_t i = 0; i < n; i++)
        amax = fmaxf(amax, fabsf(x[i])); /* fmaxf drops NaN: checked below */
    bool finite = amax <= 3.4e38f;
    for (size_t i = 0; finite && i < n; i++)
        finite = x[i] == x[i];
    if (!finite) { /* comes back as NaN: 0 · NaN */
        *scale = NAN;
        memset(q, 0, n);
        return;
    }
    float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
    *scale = amax / 127.0f;
    for (size_t i = 0; i < n; i++) {
        float r = rintf(x[i] * inv);
        q[i] = (int8_t)(r > 127.0f ? 127.0f : r < -127.0f ? -127.0f : r);
    }
}

void zc_qwz_quantize(const void *src, zc_dtype t, size_t S, void *segment)
{
    const long nb = (long)nblocks(S);
    float *scales = segment;
    int8_t *q = (int8_t *)(scales + nb);
    const size_t es = (size_t)zc_dtype_size(t);
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
    for (size_t i = 0; i < n; i++)
        dst[i] = (float)q[lo + i] * scales[(lo + i) / ZC_QWZ_BLOCK];
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
