/* test_quantize.c — ZeRO++'s block-wise int8 form (src/kernels/quantize.c): the segment's byte
 * layout and size, each value back within half its block's step (max |x| / 127 / 2, plus float
 * rounding; blocks of tiny values too), a bf16 shard as its fp32 values, a block with inf or NaN
 * back as NaN, zeros and a block's maximum exact, the same bits whatever the thread count, and
 * qgZ's requantized sum; every segment and dequantized value equal to the scalar definition's, bit
 * for bit, at each vector level (ctest runs it under ZEROC_SIMD=portable and avx2 too). */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernels/quantize.h"
#include "zeroc/dtype.h"
#include "zeroc/rng.h"

/* The scalar definition: per block, max |x|; a block with a NaN, an inf or a magnitude above
 * 3.4e38 gets a NaN scale and zeros; else scale max/127 and rint(x · (127/max)) clamped to
 * ±127 (both times 2^64 below max 2^-60); the int8 values padded with zeros to 4 bytes. */
static void reference_quantize(const float *x, size_t S, unsigned char *seg)
{
    const size_t nb = (S + ZC_QWZ_BLOCK - 1) / ZC_QWZ_BLOCK;
    float *scales = (float *)seg;
    int8_t *q = (int8_t *)(seg + 4 * nb);
    memset(q, 0, (S + 3) / 4 * 4);
    for (size_t b = 0; b < nb; b++) {
        size_t lo = b * ZC_QWZ_BLOCK, hi = lo + ZC_QWZ_BLOCK < S ? lo + ZC_QWZ_BLOCK : S;
        float amax = 0.0f;
        bool finite = true;
        for (size_t i = lo; i < hi; i++) {
            finite &= isfinite(x[i]) && fabsf(x[i]) <= 3.4e38f;
            amax = fmaxf(amax, fabsf(x[i]));
        }
        if (!finite) {
            scales[b] = NAN;
            continue;
        }
        const float pre = amax < 0x1p-60f ? 0x1p64f : 1.0f; /* 127 / max finite */
        float inv = amax > 0.0f ? 127.0f / (amax * pre) : 0.0f;
        scales[b] = amax / 127.0f;
        for (size_t i = lo; i < hi; i++)
            q[i] = (int8_t)fmaxf(-127.0f, fminf(127.0f, rintf(x[i] * pre * inv)));
    }
}

/* zc_qwz_quantize's segment and its dequantization against the scalar definition. */
static void check_reference(const float *x, size_t S, const char *what)
{
    const size_t seg = (size_t)zc_qwz_segment_bytes((int64_t)S);
    const size_t nb = (S + ZC_QWZ_BLOCK - 1) / ZC_QWZ_BLOCK;
    unsigned char *got = malloc(seg), *want = malloc(seg);
    float *y = malloc(S * 4);
    memset(got, 0xAB, seg);
    zc_qwz_quantize(x, ZC_FP32, S, got);
    reference_quantize(x, S, want);
    CHECK(!memcmp(got, want, seg), "%s, S %zu: the segment differs from the scalar definition",
          what, S);
    zc_qwz_dequantize(got, S, ZC_FP32, y);
    bool same = true;
    for (size_t i = 0; i < S; i++) {
        float v =
            (float)((const int8_t *)(got + 4 * nb))[i] * ((const float *)got)[i / ZC_QWZ_BLOCK];
        same &= memcmp(&v, &y[i], 4) == 0;
    }
    CHECK(same, "%s, S %zu: dequantized values differ from q · scale", what, S);
    free(got), free(want), free(y);
}

int main(void)
{
    CHECK(ZC_QWZ_BLOCK == 256, "the block size is %d", ZC_QWZ_BLOCK);
    { /* halfway values (ties go to even), a block maximum of 127 (scale 1), non-finite and huge
       * values, negative zeros, every magnitude from 1e-30 to 1e30 */
        const size_t S = 70001;
        float *x = malloc(S * 4);
        for (size_t i = 0; i < S; i++)
            x[i] = (float)((int)((i * 7919) % 254) - 127) + 0.5f;
        for (size_t i = 0; i < S; i += 256)
            x[i] = 127.0f;
        check_reference(x, S, "halfway values");
        for (size_t i = 0; i < S; i++)
            x[i] = zc_rng_normal(5, 0, i) * powf(10.0f, (float)((int)(i % 61) - 30));
        x[1000] = NAN, x[3000] = INFINITY, x[5000] = -INFINITY, x[7000] = 3.40001e38f;
        x[9000] = -3.4e38f, x[9001] = -0.0f, x[11000] = 1e-45f;
        for (size_t i = 20000; i < 20512; i++)
            x[i] = i % 2 ? -0.0f : 0.0f;
        check_reference(x, S, "magnitudes");
        free(x);
    }

    CHECK(zc_qwz_segment_bytes(1) == 4 + 4 && zc_qwz_segment_bytes(256) == 4 + 256 &&
              zc_qwz_segment_bytes(257) == 8 + 260 && zc_qwz_segment_bytes(2080) == 36 + 2080,
          "segment sizes %lld %lld %lld %lld", (long long)zc_qwz_segment_bytes(1),
          (long long)zc_qwz_segment_bytes(256), (long long)zc_qwz_segment_bytes(257),
          (long long)zc_qwz_segment_bytes(2080));

    const size_t sizes[] = {1, 255, 256, 257, 5000, 70001};
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
        const size_t S = sizes[si], nb = (S + ZC_QWZ_BLOCK - 1) / ZC_QWZ_BLOCK;
        const size_t seg = (size_t)zc_qwz_segment_bytes((int64_t)S);
        float *x = malloc(S * 4), *y = malloc(S * 4);
        unsigned char *a = malloc(seg), *b = malloc(seg);
        for (size_t i = 0; i < S; i++)
            x[i] = zc_rng_normal(3, 1, i) * (i % 700 < 350 ? 0.02f : 3.0f); /* scales vary */
        if (S > 300)
            for (size_t i = 256; i < 512 && i < S; i++)
                x[i] = 0.0f; /* an all-zero block */
        omp_set_num_threads(1);
        zc_qwz_quantize(x, ZC_FP32, S, a);
        omp_set_num_threads(2);
        memset(b, 0xAB, seg);
        zc_qwz_quantize(x, ZC_FP32, S, b);
        CHECK(!memcmp(a, b, seg), "S %zu: the segment depends on the thread count", S);
        zc_qwz_dequantize(a, S, ZC_FP32, y);
        const float *scales = (const float *)a;
        double worst = 0;
        for (size_t blk = 0; blk < nb; blk++) {
            size_t lo = blk * ZC_QWZ_BLOCK, hi = lo + ZC_QWZ_BLOCK < S ? lo + ZC_QWZ_BLOCK : S;
            float amax = 0;
            for (size_t i = lo; i < hi; i++)
                amax = fmaxf(amax, fabsf(x[i]));
            CHECK(scales[blk] == amax / 127.0f, "S %zu block %zu: scale %g, max/127 %g", S, blk,
                  scales[blk], amax / 127.0f);
            for (size_t i = lo; i < hi; i++) {
                /* half a step, and the float roundings of x·(127/max) and q·s (each relative
                 * 2^-24, at |q| <= 127 under 1e-4 of a step) */
                double err = fabs((double)y[i] - x[i]), tol = scales[blk] * (0.5 + 1e-4);
                if (err > tol)
                    CHECK(0, "S %zu element %zu: %g came back as %g (step %g)", S, i, x[i], y[i],
                          scales[blk]);
                if (x[i] == 0.0f && y[i] != 0.0f)
                    CHECK(0, "S %zu element %zu: zero came back as %g", S, i, y[i]);
                if (fabsf(x[i]) == amax && fabs(fabs(y[i]) - amax) > amax * 1e-6)
                    CHECK(0, "S %zu element %zu: the block maximum %g came back as %g", S, i, x[i],
                          y[i]);
                worst = fmax(worst, err / (amax > 0 ? amax : 1));
            }
        }
        CHECK(worst <= (0.5 + 1e-4) / 127, "S %zu: worst error %g of the block maximum", S, worst);
        for (size_t i = S; i < (S + 3) / 4 * 4; i++)
            CHECK(a[4 * nb + i] == 0, "S %zu: padding byte %zu is %d", S, i, a[4 * nb + i]);
        /* a bf16 shard: widened, quantized, and the dequantized values rounded to bf16 again */
        uint16_t *h = malloc(S * 2), *h2 = malloc(S * 2);
        float *xh = malloc(S * 4), *yh = malloc(S * 4);
        zc_dtype_narrow(ZC_BF16, x, h, S);
        zc_dtype_widen(ZC_BF16, h, xh, S);
        zc_qwz_quantize(h, ZC_BF16, S, b);
        zc_qwz_quantize(xh, ZC_FP32, S, a);
        CHECK(!memcmp(a, b, seg), "S %zu: bf16 input quantizes as its fp32 value", S);
        zc_qwz_dequantize(b, S, ZC_BF16, h2);
        zc_dtype_widen(ZC_BF16, h2, yh, S);
        zc_qwz_dequantize(a, S, ZC_FP32, y);
        zc_dtype_narrow(ZC_BF16, y, h, S);
        CHECK(!memcmp(h, h2, S * 2), "S %zu: bf16 output is the fp32 dequantization rounded", S);
        free(x), free(y), free(a), free(b), free(h), free(h2), free(xh), free(yh);
    }
    /* a block whose largest value is tiny (127 / max overflowed to inf below 3.7e-37: 0 · inf
     * gave NaN, every other value ±127): each value back within half a step, zero exact, at
     * every size down to the smallest denormal (the test thread does not flush denormals).
     * Below max 127 · FLT_MIN the scale is itself denormal, rounded to a multiple of 2^-149:
     * its error, at most 2^-150, times |q| <= 127 adds to the bound. */
    {
        const float tiny[][4] = {{2e-37f, 5e-38f, 0.0f, -1e-37f},
                                 {1e-30f, -3e-31f, 0.0f, 7e-32f},
                                 {1e-40f, 3e-41f, 0.0f, -5e-41f},
                                 {1e-45f, 0.0f, -1e-45f, 0.0f}};
        for (size_t t = 0; t < sizeof tiny / sizeof *tiny; t++) {
            unsigned char seg[4 + 4];
            float y[4];
            check_reference(tiny[t], 4, "a tiny block");
            zc_qwz_quantize(tiny[t], ZC_FP32, 4, seg);
            zc_qwz_dequantize(seg, 4, ZC_FP32, y);
            float s;
            memcpy(&s, seg, 4);
            for (int i = 0; i < 4; i++)
                CHECK(fabs((double)y[i] - tiny[t][i]) <= s * (0.5 + 1e-4) + 127 * 0x1p-150 &&
                          (tiny[t][i] != 0.0f || y[i] == 0.0f),
                      "tiny block %zu element %d: %g came back as %g (step %g)", t, i, tiny[t][i],
                      y[i], s);
        }
    }
    /* a block with inf or NaN (an fp16 overflow in a gradient) comes back as NaN, whole; the
     * other blocks are untouched by it */
    {
        float x[600], y[600];
        unsigned char seg[4 * 3 + 600];
        for (int i = 0; i < 600; i++) /* integers, each block's largest 127: scale 1, exact */
            x[i] = (float)((i * 37) % 255) - 127.0f;
        x[0] = x[512] = 127.0f;
        x[300] = INFINITY;
        zc_qwz_quantize(x, ZC_FP32, 600, seg);
        zc_qwz_dequantize(seg, 600, ZC_FP32, y);
        bool ok = true;
        for (int i = 0; i < 600; i++)
            ok &= (i >= 256 && i < 512) ? isnan(y[i]) : y[i] == x[i];
        x[300] = NAN;
        zc_qwz_quantize(x, ZC_FP32, 600, seg);
        zc_qwz_dequantize(seg, 600, ZC_FP32, y);
        for (int i = 0; i < 600; i++)
            ok &= (i >= 256 && i < 512) ? isnan(y[i]) : y[i] == x[i];
        CHECK(ok, "a non-finite value's block comes back NaN, the others exact");
    }

    { /* qgZ's second hop: the sum of 3 segments in order, quantized again, is the same bits as
       * dequantizing them, adding in that order in fp32 and quantizing the sum */
        const size_t S = 1300, seg = (size_t)zc_qwz_segment_bytes((int64_t)S);
        float *x = malloc(S * 4), *sum = calloc(S, 4), *y = malloc(S * 4);
        unsigned char *in = malloc(3 * seg), *got = malloc(seg), *want = malloc(seg);
        const void *segs[3];
        for (int k = 0; k < 3; k++) {
            for (size_t i = 0; i < S; i++)
                x[i] = zc_rng_normal(11, (uint64_t)k, i) * (k + 1);
            segs[k] = in + (size_t)k * seg;
            zc_qwz_quantize(x, ZC_FP32, S, in + (size_t)k * seg);
            zc_qwz_dequantize(in + (size_t)k * seg, S, ZC_FP32, y);
            for (size_t i = 0; i < S; i++)
                sum[i] += y[i];
        }
        zc_qwz_quantize(sum, ZC_FP32, S, want);
        zc_qwz_requantize_sum(segs, 3, S, got);
        CHECK(!memcmp(got, want, seg), "requantized sum differs from the reference");
        free(x), free(sum), free(y), free(in), free(got), free(want);
    }
    return check_summary();
}
