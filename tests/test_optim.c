/* test_optim.c — the optimizer kernels equal their scalar references to the bit, for lengths
 * that are not multiples of any vector width and at any shard offset (an element's result must
 * not depend on where it sits), with several threads; and the references match hand-computed
 * PyTorch formulas on a few elements (tolerance: one float rounding per operation). */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "zeroc/dtype.h"
#include "zeroc/optim.h"
#include "zeroc/rng.h"

static void fill(float *x, size_t n, uint64_t stream, float scale)
{
    for (size_t i = 0; i < n; i++)
        x[i] = zc_rng_normal(7, stream, i) * scale;
}

/* How many of the n values (|v| <= 1; unsigned map: their magnitudes) zc_q8_quantize codes
 * otherwise than the count of midpoints thr below them: up to 255 values to a block whose first
 * element, 1, is its absmax, so each is quantized as it is. Prints the first five. */
static int q8_codes_wrong(const float *v, size_t n, bool sg, const float *thr)
{
    int bad = 0;
    for (size_t lo = 0; lo < n; lo += ZC_Q8_BLOCK - 1) {
        const size_t len = n - lo < ZC_Q8_BLOCK - 1 ? n - lo : ZC_Q8_BLOCK - 1;
        float blk[ZC_Q8_BLOCK], bsc;
        uint8_t code[ZC_Q8_BLOCK];
        blk[0] = 1.0f;
        for (size_t i = 0; i < len; i++)
            blk[1 + i] = sg ? v[lo + i] : fabsf(v[lo + i]);
        zc_q8_quantize(blk, len + 1, sg, code, &bsc);
        for (size_t i = 1; i <= len; i++) {
            int want = 0;
            for (int c = 0; c < 255; c++)
                want += blk[i] > thr[c];
            if (code[i] != want && bad++ < 5)
                fprintf(stderr, "q8 code of %.9g (signed %d): %d, want %d\n", (double)blk[i], sg,
                        code[i], want);
        }
    }
    return bad;
}

/* Fresh AdamW8bit state for n elements: every code the zero code, every block's scale 0. */
static void q8_fresh(uint8_t *mq, float *ms, uint8_t *vq, float *vs, size_t n)
{
    const size_t nb = (n + ZC_Q8_BLOCK - 1) / ZC_Q8_BLOCK;
    memset(mq, zc_q8_zero_code(true), n), memset(vq, zc_q8_zero_code(false), n);
    memset(ms, 0, nb * 4), memset(vs, 0, nb * 4);
}

int main(void)
{
    const size_t N = 70001;
    float *p0 = malloc(N * 4), *g = malloc(N * 4), *m0 = malloc(N * 4), *v0 = malloc(N * 4);
    float *p1 = malloc(N * 4), *m1 = malloc(N * 4), *v1 = malloc(N * 4);
    float *p2 = malloc(N * 4), *m2 = malloc(N * 4), *v2 = malloc(N * 4);
    fill(p0, N, 1, 0.1f);
    fill(g, N, 2, 1e-3f);
    fill(m0, N, 3, 1e-4f);
    for (size_t i = 0; i < N; i++)
        v0[i] = fabsf(zc_rng_normal(7, 4, i)) * 1e-6f;
    g[5] = 0.0f, g[6] = -0.0f, g[7] = 1e-30f; /* zero and subnormal-scale gradients */

    const zc_sgd_hparams sh16 = {0.01, 0.9, 1e-4};
    zc_adam_hparams variants[] = {
        {.lr = 1e-3,
         .beta1 = 0.9,
         .beta2 = 0.999,
         .eps = 1e-8,
         .weight_decay = 0.01,
         .decoupled = true,
         .step = 1},
        {.lr = 3e-4,
         .beta1 = 0.8,
         .beta2 = 0.95,
         .eps = 1e-6,
         .weight_decay = 0.1,
         .decoupled = false,
         .step = 17},
        {.lr = 2e-3,
         .beta1 = 0.9,
         .beta2 = 0.99,
         .eps = 1e-8,
         .weight_decay = 0.01,
         .decoupled = true,
         .uncorrected = true,
         .step = 3},
    };
    for (int t = 1; t <= 2; t++) {
        omp_set_num_threads(t);
        for (int vi = 0; vi < 3; vi++) {
            const zc_adam_hparams *h = &variants[vi];
            size_t lens[] = {1, 7, 15, 16, 17, 33, 1000, N};
            for (size_t li = 0; li < sizeof lens / sizeof *lens; li++) {
                size_t n = lens[li];
                memcpy(p1, p0, N * 4), memcpy(m1, m0, N * 4), memcpy(v1, v0, N * 4);
                memcpy(p2, p0, N * 4), memcpy(m2, m0, N * 4), memcpy(v2, v0, N * 4);
                zc_adam_update(p1, g, ZC_FP32, m1, v1, n, 0.5f, h, ZC_FP32, NULL);
                zc_adam_update_ref(p2, g, m2, v2, n, 0.5f, h);
                CHECK(!memcmp(p1, p2, n * 4) && !memcmp(m1, m2, n * 4) && !memcmp(v1, v2, n * 4),
                      "adam threads %d variant %d n %zu: kernel != reference", t, vi, n);
            }
            /* Shard offsets: updating [off, N) as its own shard gives the same bits as the
             * whole vector. */
            memcpy(p1, p0, N * 4), memcpy(m1, m0, N * 4), memcpy(v1, v0, N * 4);
            zc_adam_update(p1, g, ZC_FP32, m1, v1, N, 0.5f, h, ZC_FP32, NULL);
            size_t offs[] = {1, 3, 5, 13, 4097, 65537};
            for (size_t oi = 0; oi < sizeof offs / sizeof *offs; oi++) {
                size_t off = offs[oi];
                memcpy(p2, p0, N * 4), memcpy(m2, m0, N * 4), memcpy(v2, v0, N * 4);
                zc_adam_update(p2 + off, g + off, ZC_FP32, m2 + off, v2 + off, N - off, 0.5f, h,
                               ZC_FP32, NULL);
                CHECK(!memcmp(p1 + off, p2 + off, (N - off) * 4),
                      "adam variant %d: shard at offset %zu differs from the full update", vi, off);
            }
        }
        zc_sgd_hparams sh[] = {{0.01, 0.9, 0.0}, {0.1, 0.0, 1e-4}};
        for (int vi = 0; vi < 2; vi++) {
            size_t lens[] = {1, 9, 31, N};
            for (size_t li = 0; li < sizeof lens / sizeof *lens; li++) {
                size_t n = lens[li];
                memcpy(p1, p0, N * 4), memcpy(m1, m0, N * 4);
                memcpy(p2, p0, N * 4), memcpy(m2, m0, N * 4);
                zc_sgd_update(p1, g, ZC_FP32, m1, n, 0.25f, &sh[vi], ZC_FP32, NULL);
                zc_sgd_update_ref(p2, g, m2, n, 0.25f, &sh[vi]);
                CHECK(!memcmp(p1, p2, n * 4) && !memcmp(m1, m2, n * 4),
                      "sgd threads %d variant %d n %zu: kernel != reference", t, vi, n);
            }
        }
    }

    /* 16-bit gradients: the kernel widens them itself, block by block; the result equals the
     * reference on the widened fp32 values, bit for bit, for any length and thread count. */
    {
        uint16_t *g16 = malloc(N * 2);
        float *gw = malloc(N * 4);
        for (int t = 1; t <= 2; t++) {
            omp_set_num_threads(t);
            for (zc_dtype gt = ZC_BF16; gt <= ZC_FP16; gt++) {
                zc_dtype_narrow(gt, g, g16, N);
                zc_dtype_widen(gt, g16, gw, N);
                size_t lens[] = {1, 17, 16384, 16385, N};
                for (size_t li = 0; li < sizeof lens / sizeof *lens; li++) {
                    size_t n = lens[li];
                    memcpy(p1, p0, N * 4), memcpy(m1, m0, N * 4), memcpy(v1, v0, N * 4);
                    memcpy(p2, p0, N * 4), memcpy(m2, m0, N * 4), memcpy(v2, v0, N * 4);
                    zc_adam_update(p1, g16, gt, m1, v1, n, 0.5f, &variants[0], ZC_FP32, NULL);
                    zc_adam_update_ref(p2, gw, m2, v2, n, 0.5f, &variants[0]);
                    CHECK(!memcmp(p1, p2, n * 4) && !memcmp(m1, m2, n * 4) &&
                              !memcmp(v1, v2, n * 4),
                          "adam %s gradients, threads %d, n %zu: kernel != reference",
                          zc_dtype_name(gt), t, n);
                    memcpy(p1, p0, N * 4), memcpy(m1, m0, N * 4);
                    memcpy(p2, p0, N * 4), memcpy(m2, m0, N * 4);
                    zc_sgd_update(p1, g16, gt, m1, n, 0.25f, &sh16, ZC_FP32, NULL);
                    zc_sgd_update_ref(p2, gw, m2, n, 0.25f, &sh16);
                    CHECK(!memcmp(p1, p2, n * 4) && !memcmp(m1, m2, n * 4),
                          "sgd %s gradients, threads %d, n %zu: kernel != reference",
                          zc_dtype_name(gt), t, n);
                }
            }
        }
        free(g16), free(gw);
    }

    /* Mixed precision's model copy: rounded inside the kernel, block by block, it equals
     * zc_dtype_narrow of the updated weights to the bit, and the update itself is unchanged —
     * for both 16-bit types, lengths around the kernel's 16384-element block, and any thread
     * count. Every element of the copy is checked (it starts as a pattern no rounding gives). */
    {
        uint16_t *out = malloc((N + 1) * 2), *want = malloc(N * 2);
        for (int t = 1; t <= 2; t++) {
            omp_set_num_threads(t);
            for (zc_dtype ot = ZC_BF16; ot <= ZC_FP16; ot++) {
                size_t lens[] = {1, 17, 16384, 16385, 3 * 16384 + 5, N};
                for (size_t li = 0; li < sizeof lens / sizeof *lens; li++) {
                    size_t n = lens[li];
                    for (int opt = 0; opt < 2; opt++) { /* Adam, then SGD */
                        memcpy(p1, p0, N * 4), memcpy(m1, m0, N * 4), memcpy(v1, v0, N * 4);
                        memcpy(p2, p0, N * 4), memcpy(m2, m0, N * 4), memcpy(v2, v0, N * 4);
                        memset(out, 0xff, (N + 1) * 2);
                        if (opt == 0) {
                            zc_adam_update(p1, g, ZC_FP32, m1, v1, n, 0.5f, &variants[1], ot, out);
                            zc_adam_update(p2, g, ZC_FP32, m2, v2, n, 0.5f, &variants[1], ZC_FP32,
                                           NULL);
                        } else {
                            zc_sgd_update(p1, g, ZC_FP32, m1, n, 0.25f, &sh16, ot, out);
                            zc_sgd_update(p2, g, ZC_FP32, m2, n, 0.25f, &sh16, ZC_FP32, NULL);
                        }
                        zc_dtype_narrow(ot, p2, want, n);
                        CHECK(!memcmp(p1, p2, n * 4) && !memcmp(m1, m2, n * 4) &&
                                  !memcmp(v1, v2, n * 4),
                              "%s with a %s copy, threads %d, n %zu: the update changed",
                              opt ? "sgd" : "adam", zc_dtype_name(ot), t, n);
                        CHECK(!memcmp(out, want, n * 2) && out[n] == 0xffff,
                              "%s with a %s copy, threads %d, n %zu: the copy is not the "
                              "rounded weights (or was written past n)",
                              opt ? "sgd" : "adam", zc_dtype_name(ot), t, n);
                    }
                }
            }
        }
        free(out), free(want);
    }

    /* Both at once (Adam with bf16 gradients and a bf16 copy: widen, update and round in one
     * loop): the update equals the reference on the widened gradients and the copy equals
     * zc_f32_to_bf16 of the updated weights, bit for bit, with nothing written past n; the
     * gradients include ±inf and NaN, whose weights count as not finite. */
    {
        uint16_t *g16 = malloc(N * 2), *out = malloc((N + 1) * 2), *want = malloc(N * 2);
        float *gw = malloc(N * 4);
        zc_f32_to_bf16(g, g16, N);
        g16[5] = 0x7f80, g16[16390] = 0xff80, g16[N - 1] = 0x7fc1; /* +inf, -inf, NaN */
        zc_bf16_to_f32(g16, gw, N);
        for (int t = 1; t <= 2; t++) {
            omp_set_num_threads(t);
            size_t lens[] = {1, 17, 16384, 16385, 3 * 16384 + 5, N};
            for (size_t li = 0; li < sizeof lens / sizeof *lens; li++) {
                size_t n = lens[li];
                memcpy(p1, p0, N * 4), memcpy(m1, m0, N * 4), memcpy(v1, v0, N * 4);
                memcpy(p2, p0, N * 4), memcpy(m2, m0, N * 4), memcpy(v2, v0, N * 4);
                memset(out, 0xff, (N + 1) * 2);
                int64_t bad =
                    zc_adam_update(p1, g16, ZC_BF16, m1, v1, n, 0.5f, &variants[1], ZC_BF16, out);
                zc_adam_update_ref(p2, gw, m2, v2, n, 0.5f, &variants[1]);
                zc_f32_to_bf16(p2, want, n);
                int64_t want_bad = 0;
                for (size_t i = 0; i < n; i++)
                    want_bad += !isfinite(p2[i]);
                CHECK(!memcmp(p1, p2, n * 4) && !memcmp(m1, m2, n * 4) && !memcmp(v1, v2, n * 4) &&
                          bad == want_bad,
                      "adam bf16 gradients and copy, threads %d, n %zu: kernel != reference "
                      "(%lld not finite, want %lld)",
                      t, n, (long long)bad, (long long)want_bad);
                CHECK(!memcmp(out, want, n * 2) && out[n] == 0xffff,
                      "adam bf16 gradients and copy, threads %d, n %zu: the copy is not the "
                      "rounded weights (or was written past n)",
                      t, n);
            }
        }
        free(g16), free(out), free(want), free(gw);
    }

    /* The reference against the formulas of torch.optim.AdamW (and, uncorrected, DeepSpeed's
     * FusedAdam with bias_correction false at step 3), evaluated in double. */
    for (int vi = 0; vi < 3; vi += 2) {
        const zc_adam_hparams *h = &variants[vi];
        memcpy(p2, p0, N * 4), memcpy(m2, m0, N * 4), memcpy(v2, v0, N * 4);
        zc_adam_update_ref(p2, g, m2, v2, 100, 0.5f, h);
        double worst = 0;
        for (int i = 0; i < 100; i++) {
            double gi = 0.5 * g[i], w = p0[i] * (1 - h->lr * h->weight_decay);
            double m = h->beta1 * m0[i] + (1 - h->beta1) * gi;
            double v = h->beta2 * v0[i] + (1 - h->beta2) * gi * gi;
            double bc1 = h->uncorrected ? 1 : 1 - h->beta1, bc2 = h->uncorrected ? 1 : 1 - h->beta2;
            double want = w - h->lr / bc1 * m / (sqrt(v) / sqrt(bc2) + h->eps);
            double rel = fabs(p2[i] - want) / fabs(want);
            if (rel > worst)
                worst = rel;
        }
        CHECK(worst < 1e-6, "adam variant %d reference vs double formula: rel %g", vi, worst);
    }
    /* AdamW8bit: the maps; quantize/dequantize within half the widest gap of the map times the
     * block's absmax, and idempotent (what a checkpoint relies on); the kernel equal to its scalar
     * reference to the bit over several steps (state evolving), at any thread count, with fp32
     * or bf16 gradients and a bf16 copy; a call split at a block boundary equal to one call; and
     * close to fp32 AdamW over a few steps. */
    for (int sg = 0; sg < 2; sg++) {
        const float *map = zc_q8_map(sg);
        bool sorted = true;
        double gap = 0;
        for (int c = 0; c < 255; c++) {
            sorted = sorted && map[c] < map[c + 1];
            if ((map[c + 1] - map[c]) / 2.0 > gap)
                gap = (map[c + 1] - map[c]) / 2.0;
        }
        CHECK(sorted && map[255] == 1.0f && map[0] == (sg ? -1.0f : 0.0f),
              "q8 map (signed %d): ascending from %g to %g", sg, map[0], map[255]);
        CHECK(map[zc_q8_zero_code(sg)] == 0.0f, "q8 zero code (signed %d)", sg);
        CHECK(gap < (sg ? 0.0072 : 0.0036), "q8 map (signed %d): widest half gap %g", sg, gap);
        const size_t n = 5 * ZC_Q8_BLOCK + 77, nb = (n + ZC_Q8_BLOCK - 1) / ZC_Q8_BLOCK;
        float *x = malloc(n * 4), *y = malloc(n * 4), sc[8], sc2[8];
        uint8_t *q = malloc(n), *q2 = malloc(n);
        for (size_t i = 0; i < n; i++) /* blocks of very different magnitudes */
            x[i] = zc_rng_normal(7, 20 + (uint64_t)sg, i) * powf(10.0f, -(float)(i / 256) * 2);
        if (!sg)
            for (size_t i = 0; i < n; i++)
                x[i] = fabsf(x[i]);
        for (size_t i = 2 * ZC_Q8_BLOCK; i < 3 * ZC_Q8_BLOCK; i++)
            x[i] = 0.0f;                                   /* a zero block */
        x[10] = (sg ? -fabsf(x[10]) : fabsf(x[10])) * 100; /* block 0's absmax (signed: < 0) */
        zc_q8_quantize(x, n, sg, q, sc);
        zc_q8_dequantize(q, sc, sg, 0, n, y);
        double worst = 0;
        for (size_t i = 0; i < n; i++) {
            double e = fabs((double)y[i] - x[i]) / (sc[i / ZC_Q8_BLOCK] > 0 ? sc[i / 256] : 1);
            worst = e > worst ? e : worst;
        }
        CHECK(worst <= gap * (1 + 1e-6) && sc[2] == 0.0f,
              "q8 round trip (signed %d): error %g of absmax, bound %g", sg, worst, gap);
        CHECK(y[10] == x[10], "q8 keeps a block's extreme exactly (signed %d)", sg);
        zc_q8_quantize(y, n, sg, q2, sc2);
        CHECK(!memcmp(q, q2, n) && !memcmp(sc, sc2, nb * 4),
              "q8: quantize(dequantize(q)) != q (signed %d)", sg);
        zc_q8_dequantize(q, sc, sg, 300, 500, x);
        CHECK(!memcmp(x, y + 300, 500 * 4), "q8 dequantize of a range (signed %d)", sg);
        free(x), free(y), free(q), free(q2);
        /* The codes at and around every midpoint (the quantizer looks them up by the value's
         * top 16 bits, then compares): blocks whose absmax is 1 (the first element), the rest
         * each midpoint, its float neighbours, and small and special values, against the count
         * of midpoints below each value, computed here from the map. */
        float thr[255];
        for (int c = 0; c < 255; c++)
            thr[c] = (float)(((double)map[c] + map[c + 1]) / 2);
        enum { NV = 255 * 5 + 9 };
        float v[NV];
        int nv = 0;
        for (int c = 0; c < 255; c++) {
            const float t = thr[c];
            v[nv++] = t, v[nv++] = nextafterf(t, -2.0f), v[nv++] = nextafterf(t, 2.0f);
            v[nv++] = nextafterf(nextafterf(t, 2.0f), 2.0f), v[nv++] = t * (1 - 1.0f / 256);
        }
        const float special[9] = {0.0f, -0.0f,     1e-40f, -1e-40f,   1e-30f,
                                  1.0f, 0.999999f, -1.0f,  -0.999999f};
        for (int i = 0; i < 9; i++)
            v[nv++] = special[i];
        const int bad = q8_codes_wrong(v, (size_t)nv, sg, thr);
        CHECK(!bad, "q8 codes around the midpoints (signed %d): %d differ", sg, bad);
        /* Inside the buckets too: every 4099th float of [-1, 1] by its bits (about a million,
         * in every bucket of the range, both signs). */
        float *sw = malloc(((1ull << 32) / 4099 + 1) * sizeof *sw);
        size_t swn = 0;
        for (uint64_t b = 0; sw && b < (1ull << 32); b += 4099) {
            const uint32_t bits = (uint32_t)b;
            float f;
            memcpy(&f, &bits, sizeof f);
            if (f == f && f >= -1.0f && f <= 1.0f)
                sw[swn++] = f;
        }
        const int swbad = sw ? q8_codes_wrong(sw, swn, sg, thr) : -1;
        free(sw);
        CHECK(!swbad, "q8 codes across [-1, 1] (signed %d): %d differ", sg, swbad);
    }
    {
        const size_t lens[] = {1, 255, 256, 257, 16384 + 300, N};
        const size_t nbmax = (N + ZC_Q8_BLOCK - 1) / ZC_Q8_BLOCK;
        uint8_t *mq1 = malloc(N), *vq1 = malloc(N), *mq2 = malloc(N), *vq2 = malloc(N);
        float *ms1 = malloc(nbmax * 4), *vs1 = malloc(nbmax * 4), *ms2 = malloc(nbmax * 4),
              *vs2 = malloc(nbmax * 4), *gw = malloc(N * 4);
        uint16_t *g16 = malloc(N * 2), *out = malloc(N * 2), *want = malloc(N * 2);
        zc_dtype_narrow(ZC_BF16, g, g16, N);
        zc_dtype_widen(ZC_BF16, g16, gw, N);
        for (int bf = 0; bf < 2; bf++)
            for (int t = 1; t <= 2; t++)
                for (size_t li = 0; li < sizeof lens / sizeof *lens; li++) {
                    omp_set_num_threads(t);
                    size_t n = lens[li], nb = (n + ZC_Q8_BLOCK - 1) / ZC_Q8_BLOCK;
                    memcpy(p1, p0, n * 4), memcpy(p2, p0, n * 4);
                    q8_fresh(mq1, ms1, vq1, vs1, n), q8_fresh(mq2, ms2, vq2, vs2, n);
                    bool same = true;
                    for (int step = 1; step <= 3; step++) {
                        zc_adam_hparams h = variants[step == 2];
                        h.step = step;
                        if (bf)
                            zc_adam8_update(p1, g16, ZC_BF16, mq1, ms1, vq1, vs1, n, 0.5f, &h,
                                            ZC_BF16, out);
                        else
                            zc_adam8_update(p1, g, ZC_FP32, mq1, ms1, vq1, vs1, n, 0.5f, &h,
                                            ZC_FP32, NULL);
                        zc_adam8_update_ref(p2, bf ? gw : g, mq2, ms2, vq2, vs2, n, 0.5f, &h);
                        same = same && !memcmp(p1, p2, n * 4) && !memcmp(mq1, mq2, n) &&
                               !memcmp(vq1, vq2, n) && !memcmp(ms1, ms2, nb * 4) &&
                               !memcmp(vs1, vs2, nb * 4);
                    }
                    CHECK(same, "adam8 %s gradients, threads %d, n %zu: kernel != reference",
                          bf ? "bf16" : "fp32", t, n);
                    if (bf) {
                        zc_dtype_narrow(ZC_BF16, p2, want, n);
                        CHECK(!memcmp(out, want, n * 2), "adam8 bf16 copy, n %zu", n);
                    }
                }
        /* one call, and the same elements in two calls split at a block boundary */
        memcpy(p1, p0, N * 4), memcpy(p2, p0, N * 4);
        q8_fresh(mq1, ms1, vq1, vs1, N), q8_fresh(mq2, ms2, vq2, vs2, N);
        const size_t cut = 40 * ZC_Q8_BLOCK, cb = cut / ZC_Q8_BLOCK;
        zc_adam8_update(p1, g, ZC_FP32, mq1, ms1, vq1, vs1, N, 0.5f, &variants[0], ZC_FP32, NULL);
        zc_adam8_update(p2, g, ZC_FP32, mq2, ms2, vq2, vs2, cut, 0.5f, &variants[0], ZC_FP32, NULL);
        zc_adam8_update(p2 + cut, g + cut, ZC_FP32, mq2 + cut, ms2 + cb, vq2 + cut, vs2 + cb,
                        N - cut, 0.5f, &variants[0], ZC_FP32, NULL);
        CHECK(!memcmp(p1, p2, N * 4) && !memcmp(mq1, mq2, N) && !memcmp(ms1, ms2, nbmax * 4),
              "adam8: a call split at a block boundary differs from one call");
        /* against fp32 AdamW: ten steps on a steady gradient with noise move the weights by
         * about 10·lr; the 8-bit moments' weights stay near (measured: mean |difference| 8.9% of
         * the mean move — Adam moves elements whose gradient is 1% of its block's largest as far
         * as the largest, and their v = g² sits where the map is coarse; the training bench,
         * bench/adam8bit_accuracy.sh, is the evidence that matters) */
        memcpy(p1, p0, N * 4), memcpy(p2, p0, N * 4), memset(m2, 0, N * 4), memset(v2, 0, N * 4);
        for (int step = 1; step <= 10; step++) {
            zc_adam_hparams h = variants[0];
            h.step = step;
            fill(gw, N, 100 + (uint64_t)step, 3e-4f);
            for (size_t i = 0; i < N; i++)
                gw[i] += g[i];
            zc_adam8_update(p1, gw, ZC_FP32, mq1, ms1, vq1, vs1, N, 1.0f, &h, ZC_FP32, NULL);
            zc_adam_update(p2, gw, ZC_FP32, m2, v2, N, 1.0f, &h, ZC_FP32, NULL);
        }
        double diff = 0, move = 0;
        for (size_t i = 0; i < N; i++) {
            diff += fabs((double)p1[i] - p2[i]);
            move += fabs((double)p2[i] - p0[i]);
        }
        CHECK(diff < 0.12 * move, "adam8 vs adamw after 10 steps: mean |diff| %g, mean move %g",
              diff / N, move / N);
        free(mq1), free(vq1), free(mq2), free(vq2), free(ms1), free(vs1), free(ms2), free(vs2);
        free(gw), free(g16), free(out), free(want);
    }
    { /* The compact master: split and joined back, every tested fp32 value is itself (NaN stays
       * NaN); the weights are nearest-even's except at exact ties, which round away from zero.
       * Tested: every 4099th bit pattern, and each of the 65,536 top halves with the low halves
       * 0, 0x7fff, 0x8000 (the tie), 0x8001 and 0xffff. */
        int bad = 0, ties = 0;
        for (uint64_t k = 0; k < (1ull << 32) / 4099 + 65536 * 5; k++) {
            static const uint32_t lows[5] = {0, 0x7fff, 0x8000, 0x8001, 0xffff};
            const uint32_t u = k < (1ull << 32) / 4099
                                   ? (uint32_t)(k * 4099)
                                   : (uint32_t)((k - (1ull << 32) / 4099) / 5) << 16 |
                                         lows[(k - (1ull << 32) / 4099) % 5];
            float w, back;
            memcpy(&w, &u, 4);
            uint16_t h, r, rne;
            zc_master_split(&w, 1, &h, &r);
            zc_master_join(&h, &r, 1, &back);
            zc_dtype_narrow(ZC_BF16, &w, &rne, 1);
            const bool tie = (u & 0xffff) == 0x8000 && !isnan(w);
            const uint16_t want = tie ? (uint16_t)((u >> 16) + 1) : rne;
            ties += tie;
            if ((isnan(w) ? !isnan(back) : memcmp(&w, &back, 4) != 0 || h != want) && bad++ < 5)
                fprintf(stderr, "master split of 0x%08x: weight 0x%04x (want 0x%04x), back %.9g\n",
                        u, h, want, (double)back);
        }
        CHECK(!bad && ties > 60000, "compact master split/join: %d wrong (%d ties)", bad, ties);
    }
    { /* zc_adam8_update_split against zc_adam8_update, and zc_adam_update_split against
       * zc_adam_update (AdamW and Adam's L2 decay), on the fp32 master the pair stands for: the
       * same master bits and moments (codes and scales) each step, its weights the master split */
        const size_t lens[] = {1, 257, 16384 + 300, N};
        const size_t nbmax = (N + ZC_Q8_BLOCK - 1) / ZC_Q8_BLOCK;
        uint8_t *mq1 = malloc(N), *vq1 = malloc(N), *mq2 = malloc(N), *vq2 = malloc(N);
        float *ms1 = malloc(nbmax * 4), *vs1 = malloc(nbmax * 4), *ms2 = malloc(nbmax * 4),
              *vs2 = malloc(nbmax * 4), *joined = malloc(N * 4);
        float *m1 = malloc(N * 4), *v1 = malloc(N * 4), *m2 = malloc(N * 4), *v2 = malloc(N * 4);
        uint16_t *g16 = malloc(N * 2), *w16 = malloc(N * 2), *rem = malloc(N * 2),
                 *want = malloc(N * 2), *out = malloc(N * 2);
        zc_dtype_narrow(ZC_BF16, g, g16, N);
        for (int q8 = 1; q8 >= 0; q8--)
            for (int bf = 0; bf < 2; bf++)
                for (int t = 1; t <= 2; t++)
                    for (size_t li = 0; li < sizeof lens / sizeof *lens; li++) {
                        omp_set_num_threads(t);
                        size_t n = lens[li], nb = (n + ZC_Q8_BLOCK - 1) / ZC_Q8_BLOCK;
                        memcpy(p1, p0, n * 4);
                        p1[0] = 0x1.01p-4f; /* a tie: weight 0x3d81 (away), not 0x3d80 (even) */
                        zc_master_split(p1, n, w16, rem);
                        q8_fresh(mq1, ms1, vq1, vs1, n), q8_fresh(mq2, ms2, vq2, vs2, n);
                        memset(m1, 0, n * 4), memset(v1, 0, n * 4);
                        memset(m2, 0, n * 4), memset(v2, 0, n * 4);
                        bool same = w16[0] == 0x3d81;
                        for (int step = 1; step <= 3; step++) {
                            zc_adam_hparams h = variants[step == 2];
                            h.step = step;
                            const void *gg = bf ? (const void *)g16 : (const void *)g;
                            const zc_dtype gt = bf ? ZC_BF16 : ZC_FP32;
                            int64_t b1 =
                                q8 ? zc_adam8_update(p1, gg, gt, mq1, ms1, vq1, vs1, n, 0.5f, &h,
                                                     ZC_BF16, out)
                                   : zc_adam_update(p1, gg, gt, m1, v1, n, 0.5f, &h, ZC_BF16, out);
                            int64_t b2 =
                                q8 ? zc_adam8_update_split(rem, w16, gg, gt, mq2, ms2, vq2, vs2, n,
                                                           0.5f, &h)
                                   : zc_adam_update_split(rem, w16, gg, gt, m2, v2, n, 0.5f, &h);
                            zc_master_join(w16, rem, n, joined);
                            zc_master_split(p1, n, want, NULL);
                            same = same && b1 == b2 && !memcmp(joined, p1, n * 4) &&
                                   !memcmp(w16, want, n * 2) &&
                                   (q8 ? !memcmp(mq1, mq2, n) && !memcmp(vq1, vq2, n) &&
                                             !memcmp(ms1, ms2, nb * 4) && !memcmp(vs1, vs2, nb * 4)
                                       : !memcmp(m1, m2, n * 4) && !memcmp(v1, v2, n * 4));
                        }
                        CHECK(same, "%s split master, %s gradients, threads %d, n %zu",
                              q8 ? "adam8" : "adam", bf ? "bf16" : "fp32", t, n);
                    }
        /* a NaN gradient: one weight not finite, counted as zc_adam_update counts it */
        for (int bf = 0; bf < 2; bf++) {
            const size_t n = 16384 + 300;
            float *gn = malloc(n * 4);
            memcpy(gn, g, n * 4);
            gn[16384 + 7] = NAN;
            zc_dtype_narrow(ZC_BF16, gn, g16, n);
            memcpy(p1, p0, n * 4);
            zc_master_split(p1, n, w16, rem);
            memset(m1, 0, n * 4), memset(v1, 0, n * 4), memset(m2, 0, n * 4), memset(v2, 0, n * 4);
            zc_adam_hparams h = variants[0];
            const void *gg = bf ? (const void *)g16 : (const void *)gn;
            const zc_dtype gt = bf ? ZC_BF16 : ZC_FP32;
            int64_t b1 = zc_adam_update(p1, gg, gt, m1, v1, n, 0.5f, &h, ZC_BF16, out);
            int64_t b2 = zc_adam_update_split(rem, w16, gg, gt, m2, v2, n, 0.5f, &h);
            CHECK(b1 == 1 && b2 == 1,
                  "adam split master, NaN %s gradient: %lld and %lld not finite",
                  bf ? "bf16" : "fp32", (long long)b1, (long long)b2);
            free(gn);
        }
        free(mq1), free(vq1), free(mq2), free(vq2), free(ms1), free(vs1), free(ms2), free(vs2);
        free(m1), free(v1), free(m2), free(v2), free(joined);
        free(g16), free(w16), free(rem), free(want), free(out);
    }
    /* Squared norm of 16-bit gradients: the chunks' sums added in order, to the bit, whatever
     * the thread count; lengths around a chunk and past one batch of 512 chunks. */
    {
        const size_t NB = 512 * 2048 * 2 + 77;
        float *big = malloc(NB * 4), x[2048];
        uint16_t *h = malloc(NB * 2);
        fill(big, NB, 9, 1e-2f);
        for (zc_dtype t = ZC_BF16; t <= ZC_FP16; t++) {
            zc_dtype_narrow(t, big, h, NB);
            size_t lens[] = {1, 2047, 2048, 2049, 512 * 2048, 512 * 2048 + 1, NB};
            for (size_t li = 0; li < sizeof lens / sizeof *lens; li++) {
                size_t n = lens[li];
                double want = 0.0;
                for (size_t o = 0; o < n; o += 2048) {
                    size_t k = n - o < 2048 ? n - o : 2048;
                    zc_dtype_widen(t, h + o, x, k);
                    want += zc_sum_squares(x, k);
                }
                for (int th = 1; th <= 2; th++) {
                    omp_set_num_threads(th);
                    double got = zc_sum_squares_16(h, t, n);
                    CHECK(!memcmp(&got, &want, sizeof got),
                          "sum of squares of %zu %s elements, %d threads: %.17g, want %.17g", n,
                          zc_dtype_name(t), th, got, want);
                }
            }
        }
        free(big), free(h);
    }

    /* Squared norm: independent of nothing but the data, and close to the double sum. */
    {
        double s = zc_sum_squares(g, N), want = 0;
        for (size_t i = 0; i < N; i++)
            want += (double)g[i] * g[i];
        CHECK(fabs(s - want) <= 1e-12 * want, "sum of squares %g vs %g", s, want);
    }
    free(p0), free(g), free(m0), free(v0), free(p1), free(m1), free(v1), free(p2), free(m2),
        free(v2);
    return check_summary();
}
