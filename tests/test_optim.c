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
