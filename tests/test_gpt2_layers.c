/* test_gpt2_layers.c — the GPT-2 layer kernels (models/gpt2/gpt2_layers.c) against finite
 * differences and against plain double-precision references.
 *
 * For every layer: random inputs, a scalar L = Σ w_i·out_i with random w (for the cross-entropy
 * L = mean loss), analytic gradients from the backward with dout = w, and central differences
 * (L(x+h) − L(x−h)) / (2h) with x perturbed in float and L summed in double.
 *
 * Step and tolerance: h = 1e-2 on inputs of magnitude ~1. The kernels are deterministic, so the
 * outputs that do not depend on the perturbed element come out bitwise equal in both
 * evaluations and cancel; the noise is the float rounding of the affected outputs, ~1e-7 each,
 * divided by 2h: ~1e-5. Truncation error is h²/6·|L'''| ~ 2e-5·|L'''| (zero for the linear
 * layers: encoder, matmul, residual). Hence |num − ana| ≤ 1e-3·|num| + 1e-4: about 10× the
 * expected error (measured worst over 60 seeds: a third of the bound; -v prints it per check),
 * while a wrong sign, factor, transpose or index is off by O(1). LayerNorm's dinp has a wider
 * bound, with the reason beside it. Build with -DTEST_SEED=n to try other random inputs.
 *
 * Also checked: forwards against double references (a finite-difference check alone would pass
 * a forward and backward that are wrong together), backward accumulation (two calls give twice
 * the gradients), causality of attention, attention at T = 130 against a naive
 * double-precision forward and backward, bf16 attention within bounds derived from its rounding,
 * and that the padded vocabulary entries get probability and gradient exactly 0 and are never read;
 * and, at wide shapes, the threaded and column-chunked paths against double references.
 *
 * Incremental decoding (gpt2_decode.c, gpt2_sample.c): the cached attention against the
 * forward's rows, and on small models on the engine (fp32, bf16, fp16 storage) the decoder's
 * logits against gpt2_forward's for every context up to and past T, generation against the
 * previous algorithm (a full forward per token, the O(k·V) top-k; kept here as the reference),
 * top-k ties, and the products' FLOPs of a cached generation. */
#include <complex.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "models/gpt2/gpt2.h"
#include "models/gpt2/gpt2_decode.h"
#include "models/gpt2/gpt2_layers.h"
#include "models/gpt2/gpt2_sample.h"
#include "zeroc/dtype.h"
#include "zeroc/rng.h"

static int verbose;
static zc_comm *g_comm; /* for the tests on the engine */

/* ---- helpers ---------------------------------------------------------------------------- */

#ifndef TEST_SEED
#define TEST_SEED 0x9E3779B97F4A7C15ull
#endif
static uint64_t rng = TEST_SEED;

static uint64_t rng_next(void) /* xorshift64* */
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 0x2545F4914F6CDD1Dull;
}

static float urand(void) /* uniform in [-1, 1) */
{
    return (float)((double)(rng_next() >> 40) / 16777216.0 * 2.0 - 1.0);
}

static int irand(int n)
{
    return (int)(rng_next() % (uint64_t)n);
}

static void fill(float *x, size_t n, float scale, float offset)
{
    for (size_t i = 0; i < n; i++)
        x[i] = offset + scale * urand();
}

static float *falloc(size_t n) /* zeroed */
{
    float *p = calloc(n ? n : 1, sizeof *p);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    return p;
}

static double *dalloc(size_t n) /* zeroed */
{
    double *p = calloc(n ? n : 1, sizeof *p);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    return p;
}

static float *fdup(const float *x, size_t n)
{
    float *p = falloc(n);
    memcpy(p, x, n * sizeof *p);
    return p;
}

static double wsum(const float *w, const float *out, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++)
        s += (double)w[i] * (double)out[i];
    return s;
}

/* Every element of got within rtol·|ref| + atol of ref (a double reference). */
static void check_close(const char *what, const float *got, const double *ref, size_t n,
                        double rtol, double atol)
{
    size_t bad = 0, worst_i = 0;
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double tol = rtol * fabs(ref[i]) + atol, err = fabs((double)got[i] - ref[i]);
        const double r = err == 0.0 ? 0.0 : err / tol; /* tol 0: exact */
        if (!(r <= 1.0))
            bad++;
        if (!(r <= worst)) {
            worst = r;
            worst_i = i;
        }
    }
    if (verbose)
        printf("  %-34s worst err/tol %.3g\n", what, worst);
    CHECK(bad == 0, "%s: %zu of %zu off; worst [%zu] got %.9g want %.9g", what, bad, n, worst_i,
          got[worst_i], ref[worst_i]);
}

/* now == 2·first (the second of two backward calls into the same buffers). */
static void check_doubled(const char *what, const float *first, const float *now, size_t n)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        if (!(fabsf(now[i] - 2.0f * first[i]) <= 1e-5f * fabsf(2.0f * first[i]) + 1e-6f))
            bad++;
    CHECK(bad == 0, "%s: second backward did not accumulate (%zu of %zu elements)", what, bad, n);
}

typedef double (*loss_fn)(void *ctx);

/* Central differences of f with respect to x[i] against ana[i], for all n elements or, if
 * sample < n, for `sample` random ones. */
static void grad_check(const char *what, loss_fn f, void *ctx, float *x, const float *ana, size_t n,
                       size_t sample, float h, double rtol, double atol)
{
    size_t bad = 0, worst_i = 0, m = sample < n ? sample : n;
    double worst = 0.0, worst_num = 0.0;
    for (size_t s = 0; s < m; s++) {
        const size_t i = m < n ? (size_t)(rng_next() % n) : s;
        const float saved = x[i], xp = saved + h, xm = saved - h;
        x[i] = xp;
        const double lp = f(ctx);
        x[i] = xm;
        const double lm = f(ctx);
        x[i] = saved;
        const double num = (lp - lm) / ((double)xp - (double)xm);
        const double r = fabs(num - (double)ana[i]) / (rtol * fabs(num) + atol);
        if (!(r <= 1.0))
            bad++;
        if (!(r <= worst)) {
            worst = r;
            worst_i = i;
            worst_num = num;
        }
    }
    f(ctx); /* leave the forward's outputs at the unperturbed point */
    if (verbose)
        printf("  %-34s worst err/tol %.3g\n", what, worst);
    CHECK(bad == 0, "%s: %zu of %zu gradients off; worst [%zu] numeric %.8g analytic %.8g", what,
          bad, m, worst_i, worst_num, ana[worst_i]);
}

/* Sizes shared by the tests. */
enum { B = 2, T = 5, C = 8, NH = 2, V = 7, VP = 8, MAXT = 6, BT = B * T };

static const float H = 1e-2f;
static const double RTOL = 1e-3, ATOL = 1e-4;

/* ---- encoder ---------------------------------------------------------------------------- */

struct enc {
    int *inp;
    float *wte, *wpe, *out, *w;
};

static double enc_loss(void *p)
{
    struct enc *e = p;
    gpt2_encoder_forward(e->out, e->inp, e->wte, NULL, e->wpe, NULL, B, T, C);
    return wsum(e->w, e->out, (size_t)BT * C);
}

static void test_encoder(void)
{
    if (verbose)
        printf("encoder\n");
    struct enc e = {
        .wte = falloc(VP * C), .wpe = falloc(MAXT * C), .out = falloc(BT * C), .w = falloc(BT * C)};
    int inp[BT];
    for (int i = 0; i < BT; i++)
        inp[i] = irand(VP);
    inp[3] = inp[0]; /* repeated tokens, within and across sequences: the scatter-add sums */
    inp[T + 1] = inp[0];
    e.inp = inp;
    fill(e.wte, VP * C, 1.0f, 0.0f);
    fill(e.wpe, MAXT * C, 1.0f, 0.0f);
    fill(e.w, BT * C, 1.0f, 0.0f);

    enc_loss(&e);
    double ref[BT * C];
    for (int bt = 0; bt < BT; bt++)
        for (int c = 0; c < C; c++)
            ref[bt * C + c] = (double)(e.wte[inp[bt] * C + c] + e.wpe[(bt % T) * C + c]);
    check_close("encoder forward", e.out, ref, BT * C, 0.0, 0.0);

    /* From bf16 bits (bf16 mode's stored tables): the same bits as the fp32 path on the widened
     * tables, since widening is exact — wte, wpe or both as bf16. */
    {
        uint16_t *wte16 = malloc((size_t)VP * C * sizeof *wte16);
        uint16_t *wpe16 = malloc((size_t)MAXT * C * sizeof *wpe16);
        float *wide = falloc(VP * C), *wpos = falloc(MAXT * C), *out16 = falloc(BT * C);
        zc_f32_to_bf16(e.wte, wte16, (size_t)VP * C);
        zc_bf16_to_f32(wte16, wide, (size_t)VP * C);
        zc_f32_to_bf16(e.wpe, wpe16, (size_t)MAXT * C);
        zc_bf16_to_f32(wpe16, wpos, (size_t)MAXT * C);
        gpt2_encoder_forward(out16, inp, NULL, wte16, e.wpe, NULL, B, T, C);
        gpt2_encoder_forward(e.out, inp, wide, NULL, e.wpe, NULL, B, T, C);
        CHECK(!memcmp(out16, e.out, sizeof(float) * BT * C),
              "encoder forward from bf16 bits differs from the widened table's");
        gpt2_encoder_forward(out16, inp, NULL, wte16, NULL, wpe16, B, T, C);
        gpt2_encoder_forward(e.out, inp, wide, NULL, wpos, NULL, B, T, C);
        CHECK(!memcmp(out16, e.out, sizeof(float) * BT * C),
              "encoder forward from bf16 wte and wpe differs from the widened tables'");
        gpt2_encoder_forward(out16, inp, wide, NULL, NULL, wpe16, B, T, C);
        CHECK(!memcmp(out16, e.out, sizeof(float) * BT * C),
              "encoder forward from bf16 wpe differs from the widened table's");
        free(wte16), free(wpe16), free(wide), free(wpos), free(out16);
    }

    float *dwte = falloc(VP * C), *dwpe = falloc(MAXT * C);
    gpt2_encoder_backward(dwte, dwpe, e.w, inp, B, T, C);
    float *gwte = fdup(dwte, VP * C), *gwpe = fdup(dwpe, MAXT * C);
    gpt2_encoder_backward(dwte, dwpe, e.w, inp, B, T, C);
    check_doubled("encoder dwte", gwte, dwte, VP * C);
    check_doubled("encoder dwpe", gwpe, dwpe, MAXT * C);

    /* The bf16 scatter-add of a tile (the whole table, and rows [2, 2 + 5)): the bits of the
     * fp32 one into zeros, rounded — every row written, the ones no token names zeros (the
     * output starts as garbage), a -0 gradient summing to +0 as 0 + -0 does. */
    {
        float *d = fdup(e.w, BT * C);
        d[1] = -0.0f, d[(size_t)3 * C + 1] = -0.0f; /* inp[3] == inp[0]: a row's two -0s */
        gpt2_row_pos order[BT];
        for (int tile = 0; tile < 2; tile++) {
            const int row0 = tile ? 2 : 0, rows = tile ? 5 : VP;
            float *g = falloc(rows * C);
            memset(g, 0, sizeof(float) * rows * C);
            gpt2_encoder_backward_rows(g, d, inp, row0, rows, BT, C);
            uint16_t *want = malloc(sizeof(uint16_t) * rows * C),
                     *got = malloc(sizeof(uint16_t) * rows * C);
            zc_f32_to_bf16(g, want, (size_t)rows * C);
            memset(got, 0xA5, sizeof(uint16_t) * rows * C);
            gpt2_encoder_backward_rows16(got, d, inp, row0, rows, BT, C, order);
            CHECK(!memcmp(got, want, sizeof(uint16_t) * rows * C),
                  "bf16 encoder scatter-add (rows %d..%d) differs from the fp32 one rounded", row0,
                  row0 + rows);
            free(g), free(want), free(got);
        }
        /* A tied table's rows added to the head's bf16 gradient: each named row is the fp32
         * scatter-add onto the head's values widened, rounded once; the other rows are the
         * head's bits. Learned positions in bf16: the fp32 sums into zeros, rounded. */
        for (int tile = 0; tile < 2; tile++) {
            const int row0 = tile ? 2 : 0, rows = tile ? 5 : VP;
            uint16_t *head = malloc(sizeof(uint16_t) * rows * C),
                     *got = malloc(sizeof(uint16_t) * rows * C),
                     *want = malloc(sizeof(uint16_t) * rows * C);
            float *g = falloc(rows * C);
            for (int i = 0; i < rows * C; i++)
                g[i] = (float)((i * 7919) % 1013) / 997.0f - 0.5f;
            zc_f32_to_bf16(g, head, (size_t)rows * C);
            zc_bf16_to_f32(head, g, (size_t)rows * C);
            gpt2_encoder_backward_rows(g, d, inp, row0, rows, BT, C);
            zc_f32_to_bf16(g, want, (size_t)rows * C);
            memcpy(got, head, sizeof(uint16_t) * rows * C);
            gpt2_encoder_backward_rows16_add(got, d, inp, row0, rows, BT, C, order);
            CHECK(!memcmp(got, want, sizeof(uint16_t) * rows * C),
                  "bf16 tied rows (rows %d..%d) differ from the fp32 adds onto the head's, rounded",
                  row0, row0 + rows);
            free(head), free(got), free(want), free(g);
        }
        {
            float *gte = falloc(VP * C), *gpe = falloc(MAXT * C);
            memset(gte, 0, sizeof(float) * VP * C);
            memset(gpe, 0, sizeof(float) * MAXT * C);
            gpt2_encoder_backward(gte, gpe, d, inp, B, T, C);
            uint16_t *want = malloc(sizeof(uint16_t) * T * C),
                     *got = malloc(sizeof(uint16_t) * T * C);
            zc_f32_to_bf16(gpe, want, (size_t)T * C);
            memset(got, 0xA5, sizeof(uint16_t) * T * C);
            gpt2_encoder_backward_pos16(got, d, B, T, C);
            CHECK(!memcmp(got, want, sizeof(uint16_t) * T * C),
                  "bf16 positions' gradient differs from the fp32 one into zeros, rounded");
            free(gte), free(gpe), free(want), free(got);
        }
        free(d);
    }

    /* Rows of wpe at t ≥ T and of unused tokens must stay 0: the full check covers them. */
    grad_check("encoder dwte", enc_loss, &e, e.wte, gwte, VP * C, SIZE_MAX, H, RTOL, ATOL);
    grad_check("encoder dwpe", enc_loss, &e, e.wpe, gwpe, MAXT * C, SIZE_MAX, H, RTOL, ATOL);
    free(e.wte), free(e.wpe), free(e.out), free(e.w), free(dwte), free(dwpe), free(gwte),
        free(gwpe);
}

/* ---- layernorm -------------------------------------------------------------------------- */

struct ln {
    float *inp, *weight, *bias, *out, *mean, *rstd, *w;
};

static double ln_loss(void *p)
{
    struct ln *l = p;
    gpt2_layernorm_forward(l->out, l->mean, l->rstd, l->inp, l->weight, l->bias, BT, C);
    return wsum(l->w, l->out, (size_t)BT * C);
}

static void test_layernorm(void)
{
    if (verbose)
        printf("layernorm\n");
    struct ln l = {.inp = falloc(BT * C),
                   .weight = falloc(C),
                   .bias = falloc(C),
                   .out = falloc(BT * C),
                   .mean = falloc(BT),
                   .rstd = falloc(BT),
                   .w = falloc(BT * C)};
    for (int n = 0; n < BT; n++) /* rows with different means and spreads */
        fill(l.inp + n * C, C, 1.0f + 0.2f * (float)n, 0.3f * (float)(n - BT / 2));
    fill(l.weight, C, 0.5f, 1.0f);
    fill(l.bias, C, 1.0f, 0.0f);
    fill(l.w, BT * C, 1.0f, 0.0f);

    ln_loss(&l);
    double ref[BT * C], rmean[BT], rrstd[BT];
    for (int n = 0; n < BT; n++) {
        const float *x = l.inp + n * C;
        double m = 0.0, v = 0.0;
        for (int c = 0; c < C; c++)
            m += x[c];
        m /= C;
        for (int c = 0; c < C; c++)
            v += (x[c] - m) * (x[c] - m);
        v /= C; /* biased, like PyTorch */
        rmean[n] = m;
        rrstd[n] = 1.0 / sqrt(v + 1e-5);
        for (int c = 0; c < C; c++)
            ref[n * C + c] = (x[c] - m) * rrstd[n] * l.weight[c] + l.bias[c];
    }
    /* float vs double over C = 8 terms: a few ulps */
    check_close("layernorm forward out", l.out, ref, BT * C, 1e-5, 1e-6);
    check_close("layernorm forward mean", l.mean, rmean, BT, 1e-5, 1e-6);
    check_close("layernorm forward rstd", l.rstd, rrstd, BT, 1e-5, 1e-6);

    float *dinp = falloc(BT * C), *dw = falloc(C), *db = falloc(C);
    gpt2_layernorm_backward(dinp, dw, db, l.w, l.inp, l.weight, l.mean, l.rstd, BT, C);
    float *ginp = fdup(dinp, BT * C), *gw = fdup(dw, C), *gb = fdup(db, C);
    gpt2_layernorm_backward(dinp, dw, db, l.w, l.inp, l.weight, l.mean, l.rstd, BT, C);
    check_doubled("layernorm dinp", ginp, dinp, BT * C);
    check_doubled("layernorm dweight", gw, dw, C);
    check_doubled("layernorm dbias", gb, db, C);

    /* Normalising divides by σ, so L''' grows like rstd³ (σ ≳ 0.4 here, rstd³ ≲ 15): truncation
     * up to ~3e-4, hence this one bound is 2e-3·|num| + 5e-4. */
    grad_check("layernorm dinp", ln_loss, &l, l.inp, ginp, BT * C, SIZE_MAX, H, 2e-3, 5e-4);
    grad_check("layernorm dweight", ln_loss, &l, l.weight, gw, C, SIZE_MAX, H, RTOL, ATOL);
    grad_check("layernorm dbias", ln_loss, &l, l.bias, gb, C, SIZE_MAX, H, RTOL, ATOL);
    free(l.inp), free(l.weight), free(l.bias), free(l.out), free(l.mean), free(l.rstd), free(l.w),
        free(dinp), free(dw), free(db), free(ginp), free(gw), free(gb);
}

/* ---- matmul ----------------------------------------------------------------------------- */

enum { MM_OC = 12 }; /* OC ≠ C so a transposed weight cannot pass */

struct mm {
    float *inp, *weight, *bias, *out, *w; /* bias may be NULL */
};

static double mm_loss(void *p)
{
    struct mm *m = p;
    gpt2_matmul_forward(m->out, m->inp, m->weight, NULL, m->bias, BT, C, MM_OC, NULL);
    return wsum(m->w, m->out, (size_t)BT * MM_OC);
}

static void test_matmul(int with_bias)
{
    if (verbose)
        printf("matmul %s bias\n", with_bias ? "with" : "without");
    struct mm m = {.inp = falloc(BT * C),
                   .weight = falloc(MM_OC * C),
                   .bias = with_bias ? falloc(MM_OC) : NULL,
                   .out = falloc(BT * MM_OC),
                   .w = falloc(BT * MM_OC)};
    fill(m.inp, BT * C, 1.0f, 0.0f);
    fill(m.weight, MM_OC * C, 1.0f, 0.0f);
    if (m.bias)
        fill(m.bias, MM_OC, 1.0f, 0.0f);
    fill(m.w, BT * MM_OC, 1.0f, 0.0f);
    for (int i = 0; i < BT * MM_OC; i++) /* the forward must not depend on out's contents */
        m.out[i] = NAN;

    mm_loss(&m);
    double ref[BT * MM_OC];
    for (int n = 0; n < BT; n++)
        for (int o = 0; o < MM_OC; o++) {
            double s = m.bias ? m.bias[o] : 0.0;
            for (int c = 0; c < C; c++)
                s += (double)m.inp[n * C + c] * m.weight[o * C + c];
            ref[n * MM_OC + o] = s;
        }
    check_close(with_bias ? "matmul forward (bias)" : "matmul forward (no bias)", m.out, ref,
                BT * MM_OC, 1e-5, 1e-6);

    float *dinp = falloc(BT * C), *dw = falloc(MM_OC * C), *db = with_bias ? falloc(MM_OC) : NULL;
    gpt2_matmul_backward(dinp, dw, NULL, db, m.w, m.inp, m.weight, NULL, BT, C, MM_OC, false, NULL);
    float *ginp = fdup(dinp, BT * C), *gw = fdup(dw, MM_OC * C);
    float *gb = with_bias ? fdup(db, MM_OC) : NULL;
    gpt2_matmul_backward(dinp, dw, NULL, db, m.w, m.inp, m.weight, NULL, BT, C, MM_OC, false, NULL);
    check_doubled("matmul dinp", ginp, dinp, BT * C);
    check_doubled("matmul dweight", gw, dw, MM_OC * C);
    /* dweight_fresh: the product overwrites dweight (here NaN-filled, as an unzeroed buffer may
     * be) and gives the bits accumulating into zeros gave; dinp still accumulates. */
    {
        float *dw2 = falloc(MM_OC * C), *dinp2 = fdup(ginp, BT * C);
        float *db2 = with_bias ? falloc(MM_OC) : NULL;
        for (int i = 0; i < MM_OC * C; i++)
            dw2[i] = NAN;
        gpt2_matmul_backward(dinp2, dw2, NULL, db2, m.w, m.inp, m.weight, NULL, BT, C, MM_OC, true,
                             NULL);
        CHECK(!memcmp(dw2, gw, sizeof(float) * MM_OC * C),
              "matmul dweight_fresh: not the accumulated-into-zeros bits");
        CHECK(!memcmp(dinp2, dinp, sizeof(float) * BT * C),
              "matmul dweight_fresh: dinp no longer accumulates");
        free(dw2), free(dinp2), free(db2);
    }
    /* bf16 with bf16 weights: dout rounded once for both products gives the bits of the products
     * rounding their fp32 operands themselves (zeroc/gemm.h), accumulating, fresh, and fresh
     * written as bf16 (the fresh product's bits rounded once) */
    for (int mode = 0; mode < 3; mode++) {
        const bool fresh = mode > 0, out16 = mode == 2;
        uint16_t *w16 = malloc(sizeof(uint16_t) * MM_OC * C);
        zc_dtype_narrow(ZC_BF16, m.weight, w16, (size_t)MM_OC * C);
        gpt2_gemm g = {.type = ZC_GEMM_BF16, .ws_bytes = gpt2_matmul_workspace_bytes(BT, C, MM_OC)};
        size_t ws_bytes =
            zc_gemm_workspace_bytes(MM_OC, C, BT) + zc_gemm_workspace_bytes(BT, C, MM_OC);
        void *ws = malloc(ws_bytes);
        g.ws = malloc(g.ws_bytes);
        float *dinp3 = fdup(ginp, BT * C), *dw3 = fdup(gw, MM_OC * C), *dinp4 = fdup(ginp, BT * C);
        float *dw4 = fdup(gw, MM_OC * C), *db3 = with_bias ? fdup(gb, MM_OC) : NULL;
        float *db4 = with_bias ? fdup(gb, MM_OC) : NULL;
        uint16_t *dw16 = out16 ? malloc(sizeof(uint16_t) * MM_OC * C) : NULL;
        if (fresh)
            for (int i = 0; i < MM_OC * C; i++)
                dw3[i] = NAN;
        gpt2_matmul_backward(dinp3, out16 ? NULL : dw3, dw16, db3, m.w, m.inp, m.weight, w16, BT, C,
                             MM_OC, fresh, &g);
        if (out16) /* dw3 (NaN) was not written: the bf16 bits, widened, stand for it */
            zc_dtype_widen(ZC_BF16, dw16, dw3, (size_t)MM_OC * C);
        zc_gemm_bf16_b16(false, false, BT, C, MM_OC, 1.0f, m.w, MM_OC, w16, C, 1.0f, dinp4, C, ws,
                         ws_bytes);
        zc_gemm(ZC_GEMM_BF16, true, false, MM_OC, C, BT, 1.0f, m.w, MM_OC, m.inp, C,
                fresh ? 0.0f : 1.0f, dw4, C, ws, ws_bytes);
        if (out16) { /* rounded once, then widened (exact) */
            uint16_t *r = malloc(sizeof(uint16_t) * MM_OC * C);
            zc_dtype_narrow(ZC_BF16, dw4, r, (size_t)MM_OC * C);
            zc_dtype_widen(ZC_BF16, r, dw4, (size_t)MM_OC * C);
            free(r);
        }
        if (with_bias) { /* the fp32 path's bias gradient, from the same start */
            float *sdinp = fdup(ginp, BT * C), *sdw = fdup(gw, MM_OC * C);
            gpt2_matmul_backward(sdinp, sdw, NULL, db4, m.w, m.inp, m.weight, NULL, BT, C, MM_OC,
                                 false, NULL);
            free(sdinp), free(sdw);
        }
        CHECK(!memcmp(dinp3, dinp4, sizeof(float) * BT * C),
              "bf16 matmul dinp (mode %d): not the bits of the product rounding dout itself", mode);
        CHECK(!memcmp(dw3, dw4, sizeof(float) * MM_OC * C),
              "bf16 matmul dweight (mode %d): not the bits of the product rounding dout and inp "
              "itself",
              mode);
        CHECK(!with_bias || !memcmp(db3, db4, sizeof(float) * MM_OC),
              "bf16 matmul dbias (mode %d): not the fp32 sums", mode);
        free(dw16), free(w16), free(ws), free(g.ws), free(dinp3), free(dw3), free(dinp4), free(dw4),
            free(db3), free(db4);
    }
    if (with_bias)
        check_doubled("matmul dbias", gb, db, MM_OC);

    grad_check("matmul dinp", mm_loss, &m, m.inp, ginp, BT * C, SIZE_MAX, H, RTOL, ATOL);
    grad_check("matmul dweight", mm_loss, &m, m.weight, gw, MM_OC * C, SIZE_MAX, H, RTOL, ATOL);
    if (with_bias)
        grad_check("matmul dbias", mm_loss, &m, m.bias, gb, MM_OC, SIZE_MAX, H, RTOL, ATOL);
    free(m.inp), free(m.weight), free(m.bias), free(m.out), free(m.w), free(dinp), free(dw),
        free(db), free(ginp), free(gw), free(gb);
}

/* ---- attention -------------------------------------------------------------------------- */

struct att {
    int b, t, c, nh;
    float *qkv, *out, *preatt, *att, *w;
};

static double att_loss(void *p)
{
    struct att *a = p;
    gpt2_attention_forward(a->out, a->preatt, a->att, a->qkv, a->b, a->t, a->c, a->nh, NULL);
    return wsum(a->w, a->out, (size_t)a->b * a->t * a->c);
}

/* Naive causal attention in double (llm.c's loops): out, att (zero above the diagonal) and, if
 * dout is given, dqkv. */
static void att_reference(double *out, double *att, double *dqkv, const float *qkv,
                          const float *dout, int b_, int t_, int c_, int nh)
{
    const int hs = c_ / nh, c3 = 3 * c_;
    const double scale = 1.0 / sqrt((double)hs);
    double *row = dalloc((size_t)t_), *drow = dalloc((size_t)t_);
    if (dqkv)
        memset(dqkv, 0, sizeof(double) * (size_t)b_ * t_ * c3);
    for (int b = 0; b < b_; b++)
        for (int h = 0; h < nh; h++)
            for (int t = 0; t < t_; t++) {
                const float *q = qkv + ((size_t)b * t_ + t) * c3 + h * hs;
                double mx = -INFINITY, sum = 0.0;
                for (int t2 = 0; t2 <= t; t2++) {
                    const float *k = qkv + ((size_t)b * t_ + t2) * c3 + c_ + h * hs;
                    double s = 0.0;
                    for (int i = 0; i < hs; i++)
                        s += (double)q[i] * k[i];
                    row[t2] = s * scale;
                    mx = fmax(mx, row[t2]);
                }
                for (int t2 = 0; t2 <= t; t2++)
                    sum += row[t2] = exp(row[t2] - mx);
                double *a = att + (((size_t)b * nh + h) * t_ + t) * t_;
                for (int t2 = 0; t2 < t_; t2++)
                    a[t2] = t2 <= t ? row[t2] / sum : 0.0;
                double *o = out + ((size_t)b * t_ + t) * c_ + h * hs;
                for (int i = 0; i < hs; i++) {
                    double s = 0.0;
                    for (int t2 = 0; t2 <= t; t2++)
                        s += a[t2] * qkv[((size_t)b * t_ + t2) * c3 + 2 * c_ + h * hs + i];
                    o[i] = s;
                }
                if (!dqkv)
                    continue;
                const float *dy = dout + ((size_t)b * t_ + t) * c_ + h * hs;
                double dot = 0.0;
                for (int t2 = 0; t2 <= t; t2++) {
                    const size_t r2 = ((size_t)b * t_ + t2) * c3 + h * hs;
                    double s = 0.0;
                    for (int i = 0; i < hs; i++) {
                        s += (double)dy[i] * qkv[r2 + 2 * c_ + i];
                        dqkv[r2 + 2 * c_ + i] += a[t2] * dy[i];
                    }
                    drow[t2] = s;
                    dot += a[t2] * s;
                }
                for (int t2 = 0; t2 <= t; t2++) {
                    const double dp = a[t2] * (drow[t2] - dot) * scale;
                    const size_t r = ((size_t)b * t_ + t) * c3 + h * hs;
                    const size_t r2 = ((size_t)b * t_ + t2) * c3 + h * hs;
                    for (int i = 0; i < hs; i++) {
                        dqkv[r + i] += dp * qkv[r2 + c_ + i];
                        dqkv[r2 + c_ + i] += dp * qkv[r + i];
                    }
                }
            }
    free(row);
    free(drow);
}

static void test_attention(void)
{
    if (verbose)
        printf("attention\n");
    const size_t nqkv = (size_t)BT * 3 * C, natt = (size_t)B * NH * T * T;
    struct att a = {.b = B,
                    .t = T,
                    .c = C,
                    .nh = NH,
                    .qkv = falloc(nqkv),
                    .out = falloc(BT * C),
                    .preatt = falloc(natt),
                    .att = falloc(natt),
                    .w = falloc(BT * C)};
    fill(a.qkv, nqkv, 1.5f, 0.0f);
    fill(a.w, BT * C, 1.0f, 0.0f);
    for (size_t i = 0; i < natt; i++) /* the forward must write every entry */
        a.preatt[i] = a.att[i] = NAN;

    att_loss(&a);
    double rout[BT * C], ratt[B * NH * T * T];
    att_reference(rout, ratt, NULL, a.qkv, NULL, B, T, C, NH);
    check_close("attention forward out", a.out, rout, BT * C, 1e-5, 1e-6);
    check_close("attention forward att", a.att, ratt, natt, 1e-5, 1e-6);
    int pre_ok = 1, rows_ok = 1;
    for (size_t r = 0; r < (size_t)B * NH * T; r++) {
        const int t = (int)(r % T);
        double sum = 0.0;
        for (int t2 = 0; t2 < T; t2++) {
            sum += a.att[r * T + t2];
            if (t2 > t && (a.preatt[r * T + t2] != 0.0f || a.att[r * T + t2] != 0.0f))
                pre_ok = 0;
        }
        rows_ok &= fabs(sum - 1.0) < 1e-6;
    }
    CHECK(pre_ok, "attention: preatt/att not 0 above the diagonal");
    CHECK(rows_ok, "attention: att rows do not sum to 1");

    /* Causal: changing the tokens after t leaves the outputs up to t bitwise unchanged (the
     * masked weights are exact zeros), and changes the output at t + 1. */
    {
        float *out0 = fdup(a.out, BT * C), *qkv0 = fdup(a.qkv, nqkv);
        int causal = 1, sees = 1;
        for (int t = 0; t + 1 < T; t++) {
            for (int b = 0; b < B; b++)
                for (int t2 = t + 1; t2 < T; t2++)
                    fill(a.qkv + ((size_t)b * T + t2) * 3 * C, 3 * C, 1.5f, 0.0f);
            att_loss(&a);
            for (int b = 0; b < B; b++) {
                causal &= memcmp(a.out + (size_t)b * T * C, out0 + (size_t)b * T * C,
                                 sizeof(float) * (size_t)(t + 1) * C) == 0;
                sees &= memcmp(a.out + ((size_t)b * T + t + 1) * C,
                               out0 + ((size_t)b * T + t + 1) * C, sizeof(float) * C) != 0;
            }
            memcpy(a.qkv, qkv0, sizeof(float) * nqkv);
        }
        CHECK(causal, "attention: output at t depends on tokens after t");
        CHECK(sees, "attention: output at t+1 ignores token t+1");
        att_loss(&a);
        free(out0), free(qkv0);
    }

    float *dqkv = falloc(nqkv), *dpre = falloc(natt), *datt = falloc(natt);
    for (size_t i = 0; i < natt; i++) /* scratch: overwritten, need no zeroing */
        dpre[i] = datt[i] = NAN;
    gpt2_attention_backward(dqkv, dpre, datt, a.w, a.qkv, a.att, B, T, C, NH, NULL);
    float *g = fdup(dqkv, nqkv), *gpre = fdup(dpre, natt), *gatt = fdup(datt, natt);
    gpt2_attention_backward(dqkv, dpre, datt, a.w, a.qkv, a.att, B, T, C, NH, NULL);
    check_doubled("attention dqkv", g, dqkv, nqkv);
    CHECK(!memcmp(gpre, dpre, sizeof(float) * natt) && !memcmp(gatt, datt, sizeof(float) * natt),
          "attention: dpreatt/datt are not overwritten");
    double rdqkv[BT * 3 * C];
    att_reference(rout, ratt, rdqkv, a.qkv, a.w, B, T, C, NH);
    check_close("attention backward vs reference", g, rdqkv, nqkv, 1e-4, 1e-5);
    grad_check("attention dqkv", att_loss, &a, a.qkv, g, nqkv, SIZE_MAX, H, RTOL, ATOL);
    free(a.qkv), free(a.out), free(a.preatt), free(a.att), free(a.w), free(dqkv), free(dpre),
        free(datt), free(g), free(gpre), free(gatt);
}

/* bf16 mode: the six products in bf16 (zc_gemm_bf16_batch), the softmax in fp32. Inputs are
 * bf16 values already, so what remains is the rounding of att, dout and dpreatt to bf16 (each
 * by at most 2⁻⁹ relative) and fp32 accumulation. out = Σ att·v with att's rows summing to 1:
 * off by at most 2⁻⁹·max|v| plus accumulation, so 2⁻⁸·max|v| holds it; att itself comes from
 * exact bf16 products summed in fp32, as close to the reference as the fp32 path's. dqkv passes
 * through two such roundings (dout or att, then dpreatt): held to 2⁻⁶ of its largest element.
 * And it must really round: the bf16 results are not the fp32 path's. */
static void test_attention_bf16(void)
{
    if (verbose)
        printf("attention, bf16\n");
    const size_t nqkv = (size_t)BT * 3 * C, natt = (size_t)B * NH * T * T, nout = (size_t)BT * C;
    float *qkv = falloc(nqkv), *w = falloc(nout), *out = falloc(nout), *pre = falloc(natt),
          *att = falloc(natt), *out32 = falloc(nout), *pre32 = falloc(natt), *att32 = falloc(natt);
    fill(qkv, nqkv, 1.5f, 0.0f);
    fill(w, nout, 1.0f, 0.0f);
    uint16_t *h = malloc(nqkv * 2);
    zc_f32_to_bf16(qkv, h, nqkv), zc_bf16_to_f32(h, qkv, nqkv);
    zc_f32_to_bf16(w, h, nout), zc_bf16_to_f32(h, w, nout);
    free(h);
    gpt2_gemm g = {.type = ZC_GEMM_BF16, .ws_bytes = gpt2_attention_workspace_bytes(B, T, C, NH)};
    g.ws = malloc(g.ws_bytes);
    for (size_t i = 0; i < natt; i++)
        pre[i] = att[i] = NAN;
    gpt2_attention_forward(out, pre, att, qkv, B, T, C, NH, &g);
    gpt2_attention_forward(out32, pre32, att32, qkv, B, T, C, NH, NULL);
    double rout[BT * C], ratt[B * NH * T * T], rdqkv[BT * 3 * C];
    att_reference(rout, ratt, rdqkv, qkv, w, B, T, C, NH);
    double vmax = 0.0;
    for (int bt = 0; bt < BT; bt++)
        for (int c = 0; c < C; c++)
            vmax = fmax(vmax, fabs(qkv[(size_t)bt * 3 * C + 2 * C + c]));
    check_close("attention bf16 forward out", out, rout, nout, 0.0, ldexp(vmax, -8));
    check_close("attention bf16 forward att", att, ratt, natt, 1e-5, 1e-6);
    CHECK(memcmp(out, out32, nout * 4) != 0, "attention bf16: out equals fp32's (no rounding?)");

    float *dqkv = falloc(nqkv), *dpre = falloc(natt), *datt = falloc(natt);
    for (size_t i = 0; i < natt; i++)
        dpre[i] = datt[i] = NAN;
    gpt2_attention_backward(dqkv, dpre, datt, w, qkv, att, B, T, C, NH, &g);
    float *first = fdup(dqkv, nqkv);
    gpt2_attention_backward(dqkv, dpre, datt, w, qkv, att, B, T, C, NH, &g);
    check_doubled("attention bf16 dqkv", first, dqkv, nqkv);
    double gmax = 0.0;
    for (size_t i = 0; i < nqkv; i++)
        gmax = fmax(gmax, fabs(rdqkv[i]));
    check_close("attention bf16 backward vs reference", first, rdqkv, nqkv, 0.0, ldexp(gmax, -6));
    float *d32 = falloc(nqkv);
    gpt2_attention_backward(d32, dpre, datt, w, qkv, att32, B, T, C, NH, NULL);
    CHECK(memcmp(first, d32, nqkv * 4) != 0, "attention bf16: dqkv equals fp32's (no rounding?)");
    free(qkv), free(w), free(out), free(pre), free(att), free(out32), free(pre32), free(att32);
    free(dqkv), free(dpre), free(datt), free(first), free(d32), free(g.ws);
}

/* T = 130 (not a multiple of any vector or block width), against the naive double-precision
 * reference. */
static void test_attention_long(void)
{
    if (verbose)
        printf("attention, T = 130\n");
    enum { LB = 2, LT = 130, LC = 8, LNH = 2 };
    const size_t nqkv = (size_t)LB * LT * 3 * LC, nout = (size_t)LB * LT * LC;
    const size_t natt = (size_t)LB * LNH * LT * LT;
    struct att a = {.b = LB,
                    .t = LT,
                    .c = LC,
                    .nh = LNH,
                    .qkv = falloc(nqkv),
                    .out = falloc(nout),
                    .preatt = falloc(natt),
                    .att = falloc(natt),
                    .w = falloc(nout)};
    fill(a.qkv, nqkv, 1.5f, 0.0f);
    fill(a.w, nout, 1.0f, 0.0f);
    for (size_t i = 0; i < natt; i++)
        a.preatt[i] = a.att[i] = NAN;
    att_loss(&a);
    double *rout = dalloc(nout), *ratt = dalloc(natt);
    double *rdqkv = dalloc(nqkv);
    att_reference(rout, ratt, rdqkv, a.qkv, a.w, LB, LT, LC, LNH);
    /* sums over up to 130 terms in float: ~130·6e-8 relative at worst */
    check_close("attention T=130 out", a.out, rout, nout, 1e-4, 1e-5);
    check_close("attention T=130 att", a.att, ratt, natt, 1e-4, 1e-6);

    float *dqkv = falloc(nqkv), *dpre = falloc(natt), *datt = falloc(natt);
    gpt2_attention_backward(dqkv, dpre, datt, a.w, a.qkv, a.att, LB, LT, LC, LNH, NULL);
    check_close("attention T=130 dqkv", dqkv, rdqkv, nqkv, 1e-4, 1e-5);

    /* Deterministic: a second run from zero gives the same bits. */
    float *d2 = falloc(nqkv), *out1 = fdup(a.out, nout);
    att_loss(&a);
    gpt2_attention_backward(d2, dpre, datt, a.w, a.qkv, a.att, LB, LT, LC, LNH, NULL);
    CHECK(!memcmp(d2, dqkv, sizeof(float) * nqkv) && !memcmp(out1, a.out, sizeof(float) * nout),
          "attention: two identical runs differ");

    grad_check("attention T=130 dqkv (200 samples)", att_loss, &a, a.qkv, dqkv, nqkv, 200, H, RTOL,
               ATOL);
    free(a.qkv), free(a.out), free(a.preatt), free(a.att), free(a.w), free(rout), free(ratt),
        free(rdqkv), free(dqkv), free(dpre), free(datt), free(d2), free(out1);
}

/* ---- incremental decoding ------------------------------------------------------------- */

/* gpt2_attention_cached over M rows from position p0 against gpt2_attention_forward's rows
 * p0 … p0+M−1 (B = 1, T = 37). fp32: the same products and softmax on other shapes, so only the
 * summation order differs; both are held to the double reference within the T = 130 test's
 * bound (1e-4 relative + 1e-5) and to each other within the same. bf16: k and v cached as bf16
 * bits, q and att rounded inside, as the forward rounds qkv and att: att differs from the
 * forward's only by fp32 summation order before its rounding, so an element may round to the
 * neighbouring bf16 value (2⁻⁸ relative), moving out by at most 2⁻⁸·max|v| (att rows sum to 1). */
static void test_attention_cached(void)
{
    if (verbose)
        printf("attention over a key/value cache\n");
    enum { KT = 37, KC = 32, KNH = 4 };
    const size_t nqkv = (size_t)KT * 3 * KC, nout = (size_t)KT * KC, natt = (size_t)KNH * KT * KT;
    float *qkv = falloc(nqkv), *fwd = falloc(nout), *pre = falloc(natt), *att = falloc(natt);
    float *k = falloc(nout), *v = falloc(nout), *out = falloc(nout), *sc = falloc(natt);
    uint16_t *k16 = malloc(nout * 2), *v16 = malloc(nout * 2), *q16 = malloc(nout * 2),
             *a16 = malloc(natt * 2);
    fill(qkv, nqkv, 1.5f, 0.0f);
    for (int t = 0; t < KT; t++) {
        memcpy(k + (size_t)t * KC, qkv + (size_t)t * 3 * KC + KC, KC * sizeof(float));
        memcpy(v + (size_t)t * KC, qkv + (size_t)t * 3 * KC + 2 * KC, KC * sizeof(float));
    }
    zc_f32_to_bf16(k, k16, nout), zc_f32_to_bf16(v, v16, nout);
    double *rout = dalloc(nout), *ratt = dalloc(natt), *rfwd = dalloc(nout);
    att_reference(rout, ratt, NULL, qkv, NULL, 1, KT, KC, KNH);
    const int spans[][2] = {{0, KT}, {0, 1}, {5, 1}, {20, 17}, {36, 1}, {3, 9}}; /* p0, M */
    for (int bf = 0; bf < 2; bf++) {
        gpt2_gemm g = {.type = bf ? ZC_GEMM_BF16 : ZC_GEMM_F32};
        if (bf) {
            g.ws_bytes = gpt2_attention_workspace_bytes(1, KT, KC, KNH);
            size_t c = gpt2_attention_cached_workspace_bytes(KT, KT, KC, KNH);
            g.ws_bytes = c > g.ws_bytes ? c : g.ws_bytes;
            g.ws = malloc(g.ws_bytes);
        }
        gpt2_attention_forward(fwd, pre, att, qkv, 1, KT, KC, KNH, &g);
        for (size_t i = 0; i < nout; i++)
            rfwd[i] = fwd[i];
        double vmax = 0.0;
        zc_bf16_to_f32(v16, out, nout); /* v as the bf16 products see it */
        for (size_t i = 0; i < nout; i++)
            vmax = fmax(vmax, fabs(bf ? out[i] : v[i]));
        for (size_t s = 0; s < sizeof spans / sizeof *spans; s++) {
            const int p0 = spans[s][0], M = spans[s][1];
            for (size_t i = 0; i < nout; i++)
                out[i] = NAN;
            for (size_t i = 0; i < natt; i++)
                sc[i] = NAN; /* scratch: every entry read is written first */
            gpt2_attention_cached(out, sc, bf ? q16 : NULL, bf ? a16 : NULL,
                                  qkv + (size_t)p0 * 3 * KC, 3 * KC, bf ? (void *)k16 : k,
                                  bf ? (void *)v16 : v, p0, M, KC, KNH, &g);
            char what[96];
            snprintf(what, sizeof what, "cached attention %s p0=%d M=%d", bf ? "bf16" : "fp32", p0,
                     M);
            if (bf) {
                check_close(what, out, rfwd + (size_t)p0 * KC, (size_t)M * KC, 0.0,
                            ldexp(vmax, -8) + 1e-5);
            } else {
                check_close(what, out, rout + (size_t)p0 * KC, (size_t)M * KC, 1e-4, 1e-5);
                check_close(what, out, rfwd + (size_t)p0 * KC, (size_t)M * KC, 1e-4, 1e-5);
            }
        }
        free(g.ws);
    }
    free(qkv), free(fwd), free(pre), free(att), free(k), free(v), free(out), free(sc), free(k16),
        free(v16), free(q16), free(a16), free(rout), free(ratt), free(rfwd);
}

/* The previous generation's draw, verbatim: the k-th largest logit by k passes of selection
 * (O(k·V)), then the same draw. The reference for gpt2_generate's top-k (ties at the k-th value
 * included) and for its tokens. */
static int old_draw(const float *logits, int V, const gpt2_sampling *s, uint64_t index,
                    double *scratch)
{
    double maxv = -INFINITY;
    for (int i = 0; i < V; i++)
        maxv = fmax(maxv, logits[i]);
    double cutoff = -INFINITY;
    if (s->top_k > 0 && s->top_k < V) {
        for (int i = 0; i < V; i++)
            scratch[i] = logits[i];
        for (int k = 0; k < s->top_k; k++) {
            int best = k;
            for (int i = k + 1; i < V; i++)
                if (scratch[i] > scratch[best])
                    best = i;
            double t = scratch[k];
            scratch[k] = scratch[best];
            scratch[best] = t;
        }
        cutoff = scratch[s->top_k - 1];
    }
    double sum = 0.0;
    for (int i = 0; i < V; i++) {
        scratch[i] = logits[i] >= cutoff ? exp((logits[i] - maxv) / s->temperature) : 0.0;
        sum += scratch[i];
    }
    double u = zc_rng_uniform(s->seed, 0x53414d504c45ULL, index) * sum, acc = 0.0;
    int last = 0;
    for (int i = 0; i < V; i++) {
        if (scratch[i] == 0.0)
            continue;
        last = i;
        acc += scratch[i];
        if (u < acc)
            return i;
    }
    return last;
}

/* The ordinary forward's logits of the token after seq[0..t): the context seq[max(0,t−T)..t)
 * in every one of the B rows (zero-padded), row 0's position n−1 — the previous generation. */
static const float *forward_logits(gpt2_model *m, const int *seq, int t, int *batch, zc_err *err)
{
    int B, T;
    gpt2_batch_shape(m, &B, &T);
    const int start = t > T ? t - T : 0, n = t - start;
    for (int b = 0; b < B; b++) {
        memcpy(batch + (size_t)b * T, seq + start, (size_t)n * sizeof(int));
        memset(batch + (size_t)b * T + n, 0, (size_t)(T - n) * sizeof(int));
    }
    CHECK(!gpt2_forward(m, batch, NULL, NULL, err), "%s", err->msg);
    return gpt2_logits(m) + (size_t)(n - 1) * gpt2_get_config(m)->padded_vocab_size;
}

/* Small GPT-2s on the engine (T = 12 of maxT = 16, B = 2; stored fp32, bf16 — products in
 * bf16 —, fp16 — widened to fp32), random weights scaled up so the logits spread:
 *
 * - the decoder's logits for every context t = 1 … 29 (the cache up to T = 12, the window
 *   sliding after) against gpt2_forward's. Bound: fp32 (and fp16, computed in fp32) differ only
 *   in summation order — products of M = 1 or n rows against M = B·T, and the attention's shapes;
 *   each product is accurate to K·u·Σ|a·b| (K ≤ 4C = 128 terms, u = 2⁻²⁴: 8e-6 of the sum of
 *   magnitudes), and the two blocks, the LayerNorms (dividing by a std ~1) and the head add a
 *   few such steps: 1e-4·max|logit| + 1e-5 is ~10× that. bf16: both paths round the same fp32
 *   values to bf16 before each product; where those values differ by fp32 noise a rounding may
 *   land on the neighbouring bf16 value (2⁻⁸ relative) — held to 2⁻⁶·max|logit|.
 * - gpt2_generate's tokens (greedy --top-k 1, top-k 5, all) from a 3-token prompt past the
 *   context against the previous algorithm (forward_logits + old_draw): identical.
 * - ties: with wte zero every logit is exactly 0, so a top-k of 3 admits all V tokens (ties at
 *   the k-th value included): tokens as the old draw's, and not only the first three.
 * - work: a cached generation within T runs each position through the blocks once and the head
 *   once per generated token: the products' FLOPs are at most P·(24·C²·L + 4·T·C·L) +
 *   n·2·C·Vp for P positions and n tokens (the previous algorithm: B·T rows every token, ~20×). */
/* Parameter `name` of a finalized engine: its values, gathered with its unit (malloc'd). */
static float *param_values(zc_engine *e, const char *name)
{
    for (int p = 0; p < zc_engine_num_params(e); p++) {
        const zc_param_info *pi = zc_engine_param_info(e, p);
        if (strcmp(pi->name, name))
            continue;
        float *unit = falloc(zc_engine_unit_info(e, pi->unit)->padded), *out = falloc(pi->numel);
        zc_err err = {0};
        CHECK(!zc_engine_gather_unit(e, pi->unit, unit, &err), "%s", err.msg);
        memcpy(out, unit + pi->offset, pi->numel * sizeof *out);
        free(unit);
        return out;
    }
    CHECK(0, "no parameter %s", name);
    return falloc(1);
}

/* A Llama-family block whose MLP (4096 wide: 4 column blocks) passes --tile-params registers
 * it as 2 tiles of 2048 columns: drawn from the whole's random values (gate's and up's rows of
 * fcw, down's columns of fcprojw, every other parameter as untiled), and its forward gives the
 * untiled logits, bit for bit. */
/* A Llama-family shape whose MLP runs in column blocks (4096 wide: 4 blocks of 1024), small
 * otherwise, of `layers` blocks. */
enum { WIDE_C = 16, WIDE_I = 4096, WIDE_V = 64, WIDE_T = 8 };
static gpt2_config wide_llama(int layers)
{
    return (gpt2_config){.max_seq_len = WIDE_T,
                         .vocab_size = WIDE_V,
                         .padded_vocab_size = gpt2_pad_vocab(WIDE_V),
                         .num_layers = layers,
                         .num_heads = 2,
                         .channels = WIDE_C,
                         .hidden = WIDE_I,
                         .norm = GPT2_NORM_RMSNORM,
                         .norm_eps = 1e-5,
                         .mlp = GPT2_MLP_SWIGLU,
                         .bias = GPT2_BIAS_NONE,
                         .untied = true,
                         .pos = GPT2_POS_ROPE,
                         .rope_theta = 10000.0,
                         .family = "llama"};
}

static void test_mlp_tiles_model(void)
{
    if (verbose)
        printf("MLP tiles: initial values and forward\n");
    enum { TC = WIDE_C, TI = WIDE_I, TV = WIDE_V, TT = WIDE_T, TB = 2, COLS = 2048 };
    gpt2_config gc = wide_llama(1);
    int tok[TB * TT];
    for (int i = 0; i < TB * TT; i++)
        tok[i] = irand(TV);
    zc_engine *e[2];
    gpt2_model *m[2];
    zc_mem *mem[2];
    double loss[2];
    for (int k = 0; k < 2; k++) {
        zc_err err = {0};
        zc_config cfg;
        zc_config_defaults(&cfg);
        gc.tile_params = k ? 3 * TC * COLS : -1;
        mem[k] = zc_mem_create();
        CHECK(!zc_engine_create(&e[k], &cfg, g_comm, mem[k], &err), "%s", err.msg);
        CHECK(!gpt2_create(&m[k], e[k], mem[k], &gc, TB, TT, false, &err), "%s", err.msg);
        CHECK(!zc_engine_finalize(e[k], &err), "%s", err.msg);
        CHECK(!gpt2_forward(m[k], tok, tok, &loss[k], &err), "%s", err.msg);
    }
    int cols;
    CHECK(gpt2_mlp_tiles(&gc, &cols) == 2 && cols == COLS, "tiles of %d columns", cols);
    CHECK(zc_engine_num_units(e[0]) == 3 && zc_engine_num_units(e[1]) == 5, "units %d, %d",
          zc_engine_num_units(e[0]), zc_engine_num_units(e[1]));
    CHECK(!memcmp(gpt2_logits(m[0]), gpt2_logits(m[1]),
                  sizeof(float) * TB * TT * (size_t)gc.padded_vocab_size) &&
              loss[0] == loss[1],
          "tiled logits differ (loss %.9g, untiled %.9g)", loss[1], loss[0]);
    static const char *const same[] = {"wte",      "h.0.ln1w", "h.0.qkvw", "h.0.attprojw",
                                       "h.0.ln2w", "lnfw",     "lm_head"};
    for (size_t i = 0; i < sizeof same / sizeof *same; i++) {
        float *a = param_values(e[0], same[i]), *b = param_values(e[1], same[i]);
        const zc_param_info *pi = NULL;
        for (int p = 0; p < zc_engine_num_params(e[0]); p++)
            if (!strcmp(zc_engine_param_info(e[0], p)->name, same[i]))
                pi = zc_engine_param_info(e[0], p);
        CHECK(pi && !memcmp(a, b, pi->numel * sizeof *a), "%s: tiled values differ", same[i]);
        free(a), free(b);
    }
    float *fc = param_values(e[0], "h.0.fcw"), *proj = param_values(e[0], "h.0.fcprojw");
    int bad = 0;
    for (int t = 0; t < 2; t++) {
        char name[3][32];
        snprintf(name[0], sizeof name[0], "h.0.gate.%d", t);
        snprintf(name[1], sizeof name[1], "h.0.up.%d", t);
        snprintf(name[2], sizeof name[2], "h.0.down.%d", t);
        float *g = param_values(e[1], name[0]), *u = param_values(e[1], name[1]),
              *d = param_values(e[1], name[2]);
        bad += memcmp(g, fc + (size_t)t * COLS * TC, sizeof(float) * COLS * TC) != 0;
        bad += memcmp(u, fc + ((size_t)TI + (size_t)t * COLS) * TC, sizeof(float) * COLS * TC) != 0;
        for (int r = 0; r < TC; r++)
            bad += memcmp(d + (size_t)r * COLS, proj + (size_t)r * TI + (size_t)t * COLS,
                          sizeof(float) * COLS) != 0;
        free(g), free(u), free(d);
    }
    CHECK(!bad, "%d of the tiles' gate, up and down (rows) differ from the whole's", bad);
    free(fc), free(proj);
    for (int k = 0; k < 2; k++) {
        gpt2_destroy(m[k]);
        zc_engine_destroy(e[k]);
        zc_mem_destroy(mem[k]);
    }
}

/* The MLP activation each block's backward redoes (one buffer for all blocks) is the forward's:
 * a 2-block Llama-family model with an MLP 4096 wide (4 column blocks), untiled and in 2 MLP
 * tiles, takes the same step without activation checkpointing (block 0's backward redoes its
 * activation block by block, mlp_act_forward) as with it (the whole block recomputed by the
 * forward's own code). */
static void test_mlp_act_redone(void)
{
    if (verbose)
        printf("MLP activation redone in the backward\n");
    enum { TC = WIDE_C, TI = WIDE_I, TV = WIDE_V, TT = WIDE_T, TB = 2, COLS = 2048 };
    gpt2_config gc = wide_llama(2);
    int tok[TB * TT], tgt[TB * TT];
    for (int i = 0; i < TB * TT; i++)
        tok[i] = irand(TV), tgt[i] = irand(TV);
    for (int tiled = 0; tiled < 2; tiled++) {
        char sha[2][65];
        gc.tile_params = tiled ? 3 * TC * COLS : -1;
        for (int ck = 0; ck < 2; ck++) {
            zc_err err = {0};
            zc_config cfg;
            zc_config_defaults(&cfg);
            zc_mem *mem = zc_mem_create();
            zc_engine *e = NULL;
            gpt2_model *m = NULL;
            double loss;
            zc_step_info info;
            CHECK(!zc_engine_create(&e, &cfg, g_comm, mem, &err), "%s", err.msg);
            CHECK(!gpt2_create(&m, e, mem, &gc, TB, TT, ck, &err), "%s", err.msg);
            CHECK(!zc_engine_finalize(e, &err), "%s", err.msg);
            CHECK(!gpt2_forward_backward(m, tok, tgt, &loss, &err), "%s", err.msg);
            CHECK(!zc_engine_step(e, &info, &err), "%s", err.msg);
            CHECK(!zc_engine_weights_sha256(e, sha[ck], &err), "%s", err.msg);
            gpt2_destroy(m);
            zc_engine_destroy(e);
            zc_mem_destroy(mem);
        }
        CHECK(!strcmp(sha[0], sha[1]),
              "%s MLP: the step without checkpointing (%.12s) differs from the step with it "
              "(%.12s)",
              tiled ? "tiled" : "untiled", sha[0], sha[1]);
    }
}

static void test_decode_model(void)
{
    if (verbose)
        printf("incremental decoding on the engine\n");
    enum { MT = 12, MAXT = 16, MV = 67, ML = 2, MNH = 2, MC = 32, MB = 2, NSEQ = 30 };
    const char *dtypes[] = {"fp32", "bf16", "fp16"};
    /* GPT-2, then a Llama-family configuration of the decoder: grouped-query heads of a width
     * other than C/NH, rotary positions with llama3 bands, RMSNorm, SwiGLU, q/k/v biases, an
     * untied head; then that one with LoRA adapters on all seven of its linear modules (the
     * decoder adds them after each product, as the forward does) */
    for (int ai = 0; ai < 3; ai++)
        for (int di = 0; di < 3; di++) {
            zc_err err = {0};
            zc_config cfg;
            zc_config_defaults(&cfg);
            if (di == 1)
                CHECK(!zc_config_set(&cfg, "bf16.enabled", "true", &err), "%s", err.msg);
            if (di == 2)
                CHECK(!zc_config_set(&cfg, "fp16.enabled", "true", &err), "%s", err.msg);
            zc_mem *mem = zc_mem_create();
            zc_engine *e = NULL;
            gpt2_model *m = NULL;
            gpt2_config gc = {.max_seq_len = MAXT,
                              .vocab_size = MV,
                              .padded_vocab_size = gpt2_pad_vocab(MV),
                              .num_layers = ML,
                              .num_heads = MNH,
                              .channels = MC};
            if (ai >= 1)
                gc = (gpt2_config){.max_seq_len = MAXT,
                                   .vocab_size = MV,
                                   .padded_vocab_size = gpt2_pad_vocab(MV),
                                   .num_layers = ML,
                                   .num_heads = 4,
                                   .channels = MC,
                                   .kv_heads = 2,
                                   .head_dim = 6,
                                   .hidden = 40,
                                   .norm = GPT2_NORM_RMSNORM,
                                   .norm_eps = 1e-5,
                                   .mlp = GPT2_MLP_SWIGLU,
                                   .bias = GPT2_BIAS_QKV,
                                   .untied = true,
                                   .pos = GPT2_POS_ROPE,
                                   .rope_theta = 10000.0,
                                   .rope_factor = 8.0,
                                   .rope_low_freq = 1.0,
                                   .rope_high_freq = 4.0,
                                   .rope_orig_max = 4,
                                   .family = "llama"};
            if (ai == 2) { /* the adapters' B set non-zero with every weight below */
                CHECK(!lora_parse_targets("all-linear", false, &gc.lora.targets, &err), "%s",
                      err.msg);
                gc.lora.r = 3, gc.lora.alpha = 6.0;
            }
            CHECK(!zc_engine_create(&e, &cfg, g_comm, mem, &err), "%s", err.msg);
            CHECK(!gpt2_create(&m, e, mem, &gc, MB, MT, false, &err), "%s", err.msg);
            CHECK(!zc_engine_finalize(e, &err), "%s", err.msg);
            /* weights ×8 (LayerNorm weights stay 1): logits spread over several units */
            for (int p = 0; p < zc_engine_num_params(e); p++) {
                const zc_param_info *pi = zc_engine_param_info(e, p);
                if (strstr(pi->name, "ln"))
                    continue;
                float *w = falloc(pi->numel);
                fill(w, pi->numel, 0.16f, 0.0f);
                CHECK(!zc_engine_set_param_values(e, p, 0, pi->numel, w, &err), "%s", err.msg);
                free(w);
            }
            const int V = MV, Vp = gc.padded_vocab_size;
            int seq[NSEQ], *batch = calloc((size_t)MB * MT, sizeof(int));
            for (int i = 0; i < NSEQ; i++)
                seq[i] = irand(V);
            /* the decoder works in the model's activation memory (no forward in between): all of
             * its logits first, then the forward's */
            size_t have;
            gpt2_activation_scratch(m, &have);
            CHECK(gpt2_decoder_bytes(&gc, MT, gpt2_compute_type(m)) <= have,
                  "%s: the decoder does not fit in the model's activations", dtypes[di]);
            float *dec = falloc((size_t)NSEQ * Vp);
            gpt2_decoder *d = NULL;
            CHECK(!gpt2_decoder_create(&d, m, &err), "%s", err.msg);
            for (int t = 1; t < NSEQ; t++) {
                const float *dl;
                CHECK(!gpt2_decoder_logits(d, seq, t, &dl, &err), "%s", err.msg);
                memcpy(dec + (size_t)t * Vp, dl, (size_t)Vp * sizeof(float));
            }
            gpt2_decoder_destroy(d);
            double worst = 0.0;
            for (int t = 1; t < NSEQ; t++) {
                const float *got = dec + (size_t)t * Vp;
                const float *ref = forward_logits(m, seq, t, batch, &err);
                double mx = 0.0, diff = 0.0;
                for (int i = 0; i < V; i++) {
                    mx = fmax(mx, fabs(ref[i]));
                    diff = fmax(diff, fabs((double)got[i] - ref[i]));
                }
                const double tol = di == 1 ? ldexp(mx, -6) : 1e-4 * mx + 1e-5;
                worst = fmax(worst, diff / tol);
                CHECK(diff <= tol,
                      "%s decoder logits at t=%d: max |Δ| %.3g > %.3g (max |logit| %.3g)",
                      dtypes[di], t, diff, tol, mx);
            }
            free(dec);
            if (verbose)
                printf("  %s%s decoder logits worst |Δ|/tol %.3g\n",
                       ai == 2 ? "llama LoRA "
                       : ai    ? "llama "
                               : "",
                       dtypes[di], worst);

            /* generation against the previous algorithm */
            const int np = 3, len = NSEQ - np;
            const int topks[] = {1, 5, 0};
            double *scratch = dalloc((size_t)V);
            for (int ki = 0; ki < 3; ki++) {
                gpt2_sampling s = {
                    .temperature = 1.0f, .top_k = topks[ki], .seed = 11 + (uint64_t)ki};
                int out[NSEQ], ref[NSEQ];
                memcpy(ref, seq, np * sizeof(int));
                CHECK(!gpt2_generate(m, seq, np, len, &s, out, &err), "%s", err.msg);
                for (int t = np; t < NSEQ; t++)
                    ref[t] = old_draw(forward_logits(m, ref, t, batch, &err), V, &s, (uint64_t)t,
                                      scratch);
                CHECK(!memcmp(out, ref + np, (size_t)len * sizeof(int)),
                      "%s generate top-k %d: tokens differ from the full-forward path", dtypes[di],
                      topks[ki]);
            }

            /* the work of a cached generation within the context (GPT-2's FLOPs) */
            if (ai == 0) {
                gpt2_sampling s = {.temperature = 1.0f, .top_k = 1, .seed = 1};
                int out[MT];
                const int n = MT - np;
                zc_gemm_counters c0 = zc_gemm_get_counters();
                CHECK(!gpt2_generate(m, seq, np, n, &s, out, &err), "%s", err.msg);
                zc_gemm_counters c1 = zc_gemm_get_counters();
                const double P = np + n - 1, C = MC, L = ML;
                const double bound = P * (24 * C * C * L + 4.0 * MT * C * L) + n * 2 * C * Vp;
                CHECK(c1.flops - c0.flops <= bound,
                      "%s generate: %.0f FLOPs for %d tokens, more than a cached decoding's %.0f",
                      dtypes[di], c1.flops - c0.flops, n, bound);
            }

            /* ties at the k-th logit: wte zero (the tied head), every logit exactly 0 */
            if (ai == 0) {
                const zc_param_info *pi = zc_engine_param_info(e, 0);
                CHECK(!strcmp(pi->name, "wte"), "parameter 0 is %s, not wte", pi->name);
                float *z = falloc(pi->numel);
                CHECK(!zc_engine_set_param_values(e, 0, 0, pi->numel, z, &err), "%s", err.msg);
                free(z);
                gpt2_sampling s = {.temperature = 1.0f, .top_k = 3, .seed = 5};
                int out[NSEQ], ref[NSEQ], past3 = 0;
                memcpy(ref, seq, np * sizeof(int));
                CHECK(!gpt2_generate(m, seq, np, len, &s, out, &err), "%s", err.msg);
                for (int t = np; t < NSEQ; t++) {
                    ref[t] = old_draw(forward_logits(m, ref, t, batch, &err), V, &s, (uint64_t)t,
                                      scratch);
                    past3 += out[t - np] >= 3;
                }
                CHECK(!memcmp(out, ref + np, (size_t)len * sizeof(int)) && past3 > 0,
                      "%s top-k with ties: tokens differ from the old draw's, or only the first 3 "
                      "(%d past them)",
                      dtypes[di], past3);
            }
            free(scratch);
            free(batch);
            gpt2_destroy(m);
            zc_engine_destroy(e);
            zc_mem_destroy(mem);
        }

    /* A deep, narrow model with activation checkpointing keeps too few activations for the
     * cache (80 blocks of 8 channels, T = 4): the decoder allocates its own, charged to the
     * ledger's activations while it lives, with the same logits. */
    {
        enum { DL = 80, DC = 8, DT = 4, DN = 7 };
        zc_err err = {0};
        zc_config cfg;
        zc_config_defaults(&cfg);
        zc_mem *mem = zc_mem_create();
        zc_engine *e = NULL;
        gpt2_model *m = NULL;
        gpt2_config gc = {.max_seq_len = DT,
                          .vocab_size = MV,
                          .padded_vocab_size = gpt2_pad_vocab(MV),
                          .num_layers = DL,
                          .num_heads = 2,
                          .channels = DC};
        CHECK(!zc_engine_create(&e, &cfg, g_comm, mem, &err), "%s", err.msg);
        CHECK(!gpt2_create(&m, e, mem, &gc, 1, DT, true, &err), "%s", err.msg);
        CHECK(!zc_engine_finalize(e, &err), "%s", err.msg);
        size_t have, need = gpt2_decoder_bytes(&gc, DT, ZC_GEMM_F32);
        gpt2_activation_scratch(m, &have);
        CHECK(need > have, "deep model: the decoder (%zu bytes) fits in %zu", need, have);
        const int64_t before = zc_mem_get(mem, ZC_MEM_ACTIVATIONS).current;
        int seq[DN], batch[DT];
        for (int i = 0; i < DN; i++)
            seq[i] = irand(MV);
        gpt2_decoder *d = NULL;
        CHECK(!gpt2_decoder_create(&d, m, &err), "%s", err.msg);
        CHECK(zc_mem_get(mem, ZC_MEM_ACTIVATIONS).current == before + (int64_t)need,
              "deep model: the decoder's %zu bytes are not on the ledger", need);
        for (int t = 1; t < DN; t++) { /* its own memory: a forward in between is harmless */
            const float *dl;
            CHECK(!gpt2_decoder_logits(d, seq, t, &dl, &err), "%s", err.msg);
            float *got = fdup(dl, (size_t)gc.padded_vocab_size);
            const float *ref = forward_logits(m, seq, t, batch, &err);
            double mx = 0.0, diff = 0.0;
            for (int i = 0; i < MV; i++) {
                mx = fmax(mx, fabs(ref[i]));
                diff = fmax(diff, fabs((double)got[i] - ref[i]));
            }
            CHECK(diff <= 1e-4 * mx + 1e-5, "deep model logits at t=%d: max |Δ| %.3g", t, diff);
            free(got);
        }
        gpt2_decoder_destroy(d);
        CHECK(zc_mem_get(mem, ZC_MEM_ACTIVATIONS).current == before,
              "deep model: the decoder's memory is not given back");
        gpt2_destroy(m);
        zc_engine_destroy(e);
        zc_mem_destroy(mem);
    }
}

/* What each block adds to the activations: without checkpointing its kept set — the norms'
 * outputs and statistics, qkv, the attention's output and probabilities, the residual sum
 * between, the MLP's input products (GELU: 4C; SwiGLU: gate and up), the block's output — and
 * nothing of what is one buffer for all blocks (the raw scores, the output products, the MLP's
 * activation, which the backward redoes); with checkpointing its output alone. */
static void test_activation_bytes_per_block(void)
{
    enum { B = 2, T = 16, C = 32, NH = 4 };
    for (int swiglu = 0; swiglu < 2; swiglu++) {
        gpt2_config gc = {.max_seq_len = T,
                          .vocab_size = 300,
                          .padded_vocab_size = gpt2_pad_vocab(300),
                          .num_layers = 1,
                          .num_heads = NH,
                          .channels = C};
        if (swiglu) {
            gc.mlp = GPT2_MLP_SWIGLU;
            gc.norm = GPT2_NORM_RMSNORM;
            gc.pos = GPT2_POS_ROPE;
            gc.bias = GPT2_BIAS_NONE;
            gc.hidden = 3 * C;
        }
        const int64_t BT = B * T, width = swiglu ? 3 * C : 4 * C;
        const int64_t stats = 4; /* two norms' mean and rstd slots (RMSNorm leaves mean unused) */
        const int64_t fch = swiglu ? 2 * width : width;
        const int64_t kept = BT * (C + 3 * C + C + C + C + C + fch) + NH * BT * T + BT * stats;
        for (int ck = 0; ck < 2; ck++) {
            size_t one = gpt2_activation_bytes(&gc, B, T, ck, ZC_GEMM_F32);
            gc.num_layers = 3;
            size_t three = gpt2_activation_bytes(&gc, B, T, ck, ZC_GEMM_F32);
            gc.num_layers = 1;
            const int64_t want = 2 * 4 * (ck ? BT * C : kept);
            CHECK((int64_t)(three - one) == want,
                  "%s, checkpointing %d: two more blocks add %zu activation bytes, expected %lld",
                  swiglu ? "SwiGLU" : "GELU", ck, three - one, (long long)want);
        }
    }
}

/* ---- wide shapes: the threaded, column-chunked reductions ------------------------------- */

/* The small tests above stay under the kernels' threading threshold and within one 64-column
 * chunk. Here C = 72 (a full chunk and a partial one) and N·C > 32768, so the OpenMP loops and
 * the chunked reductions over rows (LayerNorm and bias gradients, the embedding scatter-add)
 * run; results against double references. Float sums over 480 rows: ~1e-5 relative. */
static void test_wide(void)
{
    if (verbose)
        printf("wide shapes (threaded, chunked)\n");
    enum { WB = 4, WT = 120, WN = WB * WT, WC = 72, WVP = 10, WIN = 16 };
    const double rtol = 1e-4, atol = 1e-4;
    float *x = falloc(WN * WC), *dy = falloc(WN * WC), *w = falloc(WC), *b = falloc(WC);
    float *out = falloc(WN * WC), *mean = falloc(WN), *rstd = falloc(WN);
    float *dx = falloc(WN * WC), *dw = falloc(WC), *db = falloc(WC);
    double *rx = dalloc(WN * WC), *rw = dalloc(WC), *rb = dalloc(WC), *rout = dalloc(WN * WC);
    fill(x, WN * WC, 2.0f, 0.5f);
    fill(dy, WN * WC, 1.0f, 0.0f);
    fill(w, WC, 0.5f, 1.0f);
    fill(b, WC, 1.0f, 0.0f);
    gpt2_layernorm_forward(out, mean, rstd, x, w, b, WN, WC);
    gpt2_layernorm_backward(dx, dw, db, dy, x, w, mean, rstd, WN, WC);
    for (int n = 0; n < WN; n++) {
        const float *xr = x + n * WC, *g = dy + n * WC;
        double m = 0.0, v = 0.0, gm = 0.0, gxm = 0.0, xh[WC];
        for (int c = 0; c < WC; c++)
            m += xr[c];
        m /= WC;
        for (int c = 0; c < WC; c++)
            v += (xr[c] - m) * (xr[c] - m);
        const double s = 1.0 / sqrt(v / WC + 1e-5);
        for (int c = 0; c < WC; c++) {
            xh[c] = (xr[c] - m) * s;
            rout[n * WC + c] = xh[c] * w[c] + b[c];
            gm += (double)w[c] * g[c];
            gxm += (double)w[c] * g[c] * xh[c];
            rw[c] += xh[c] * g[c];
            rb[c] += g[c];
        }
        for (int c = 0; c < WC; c++)
            rx[n * WC + c] = ((double)w[c] * g[c] - gm / WC - xh[c] * gxm / WC) * s;
    }
    check_close("wide layernorm out", out, rout, WN * WC, rtol, atol);
    check_close("wide layernorm dinp", dx, rx, WN * WC, rtol, atol);
    check_close("wide layernorm dweight", dw, rw, WC, rtol, atol);
    check_close("wide layernorm dbias", db, rb, WC, rtol, atol);

    /* matmul (N,16)·(72,16)ᵀ + bias: the bias gradient is the chunked column sum */
    float *mi = falloc(WN * WIN), *mw = falloc(WC * WIN), *mb = falloc(WC), *mo = falloc(WN * WC);
    float *dmi = falloc(WN * WIN), *dmw = falloc(WC * WIN), *dmb = falloc(WC);
    double *rmi = dalloc(WN * WIN), *rmw = dalloc(WC * WIN), *rmb = dalloc(WC);
    fill(mi, WN * WIN, 1.0f, 0.0f);
    fill(mw, WC * WIN, 1.0f, 0.0f);
    fill(mb, WC, 1.0f, 0.0f);
    gpt2_matmul_forward(mo, mi, mw, NULL, mb, WN, WIN, WC, NULL);
    gpt2_matmul_backward(dmi, dmw, NULL, dmb, dy, mi, mw, NULL, WN, WIN, WC, false, NULL);
    for (int n = 0; n < WN; n++)
        for (int o = 0; o < WC; o++) {
            double s = mb[o];
            const double g = dy[n * WC + o];
            for (int c = 0; c < WIN; c++) {
                s += (double)mi[n * WIN + c] * mw[o * WIN + c];
                rmi[n * WIN + c] += g * mw[o * WIN + c];
                rmw[o * WIN + c] += g * mi[n * WIN + c];
            }
            rout[n * WC + o] = s;
            rmb[o] += g;
        }
    check_close("wide matmul out", mo, rout, WN * WC, rtol, atol);
    check_close("wide matmul dinp", dmi, rmi, WN * WIN, rtol, atol);
    check_close("wide matmul dweight", dmw, rmw, WC * WIN, rtol, atol);
    check_close("wide matmul dbias", dmb, rmb, WC, rtol, atol);

    /* encoder: a small vocabulary, so every row of dwte collects many positions */
    int tok[WN];
    for (int i = 0; i < WN; i++)
        tok[i] = irand(WVP);
    float *dwte = falloc(WVP * WC), *dwpe = falloc(WT * WC);
    double *rwte = dalloc(WVP * WC), *rwpe = dalloc(WT * WC);
    gpt2_encoder_backward(dwte, dwpe, dy, tok, WB, WT, WC);
    for (int i = 0; i < WN; i++)
        for (int c = 0; c < WC; c++) {
            rwte[tok[i] * WC + c] += dy[i * WC + c];
            rwpe[(i % WT) * WC + c] += dy[i * WC + c];
        }
    check_close("wide encoder dwte", dwte, rwte, WVP * WC, rtol, atol);
    check_close("wide encoder dwpe", dwpe, rwpe, WT * WC, rtol, atol);

    /* gelu and residual over N·C elements, threaded; gelu's derivative in double */
    const size_t ne = (size_t)WN * WC;
    float *gx = falloc(ne), *go = falloc(ne), *gd = falloc(ne), *r1 = falloc(ne), *r2 = falloc(ne);
    double *rgo = dalloc(ne), *rgd = dalloc(ne), *rr = dalloc(ne);
    fill(gx, ne, 5.0f, 0.0f);
    gpt2_gelu_forward(go, gx, ne);
    gpt2_gelu_backward(gd, gx, dy, ne);
    gpt2_residual_forward(out, gx, dy, ne);
    gpt2_residual_backward(r1, r2, dy, ne);
    const double k = sqrt(2.0 / acos(-1.0));
    for (size_t i = 0; i < ne; i++) {
        const double xv = gx[i], th = tanh(k * (xv + 0.044715 * xv * xv * xv));
        rgo[i] = 0.5 * xv * (1.0 + th);
        const double dth = (1.0 - th * th) * k * (1.0 + 3 * 0.044715 * xv * xv);
        rgd[i] = (0.5 * (1.0 + th) + 0.5 * xv * dth) * dy[i];
        rr[i] = (double)(gx[i] + dy[i]);
    }
    check_close("wide gelu out", go, rgo, ne, 1e-5, 1e-6);
    check_close("wide gelu dinp", gd, rgd, ne, 1e-5, 1e-6);
    check_close("wide residual out", out, rr, ne, 0.0, 0.0);
    CHECK(!memcmp(r1, dy, sizeof(float) * ne) && !memcmp(r2, dy, sizeof(float) * ne),
          "wide residual backward");
    free(gx), free(go), free(gd), free(r1), free(r2), free(rgo), free(rgd), free(rr);

    free(x), free(dy), free(w), free(b), free(out), free(mean), free(rstd), free(dx), free(dw),
        free(db), free(rx), free(rw), free(rb), free(rout), free(mi), free(mw), free(mb), free(mo),
        free(dmi), free(dmw), free(dmb), free(rmi), free(rmw), free(rmb), free(dwte), free(dwpe),
        free(rwte), free(rwpe);
}

/* ---- gelu ------------------------------------------------------------------------------- */

enum { EN = BT * 4 * C }; /* elementwise length, the MLP's hidden size */

struct ew {
    float *x, *y, *out, *w;
};

static double gelu_loss(void *p)
{
    struct ew *e = p;
    gpt2_gelu_forward(e->out, e->x, EN);
    return wsum(e->w, e->out, EN);
}

static void test_gelu(void)
{
    if (verbose)
        printf("gelu\n");
    struct ew e = {.x = falloc(EN), .out = falloc(EN), .w = falloc(EN)};
    fill(e.x, EN, 4.0f, 0.0f); /* [-4, 4): both tails and the bend */
    fill(e.w, EN, 1.0f, 0.0f);
    gelu_loss(&e);
    double ref[EN];
    for (int i = 0; i < EN; i++) {
        const double x = e.x[i];
        ref[i] = 0.5 * x * (1.0 + tanh(sqrt(2.0 / acos(-1.0)) * (x + 0.044715 * x * x * x)));
    }
    check_close("gelu forward", e.out, ref, EN, 1e-5, 1e-6);

    float *d = falloc(EN);
    gpt2_gelu_backward(d, e.x, e.w, EN);
    float *g = fdup(d, EN);
    gpt2_gelu_backward(d, e.x, e.w, EN);
    check_doubled("gelu dinp", g, d, EN);
    grad_check("gelu dinp", gelu_loss, &e, e.x, g, EN, SIZE_MAX, H, RTOL, ATOL);
    free(e.x), free(e.out), free(e.w), free(d), free(g);
}

/* ---- residual --------------------------------------------------------------------------- */

static double res_loss(void *p)
{
    struct ew *e = p;
    gpt2_residual_forward(e->out, e->x, e->y, EN);
    return wsum(e->w, e->out, EN);
}

static void test_residual(void)
{
    if (verbose)
        printf("residual\n");
    struct ew e = {.x = falloc(EN), .y = falloc(EN), .out = falloc(EN), .w = falloc(EN)};
    fill(e.x, EN, 1.0f, 0.0f);
    fill(e.y, EN, 1.0f, 0.0f);
    fill(e.w, EN, 1.0f, 0.0f);
    res_loss(&e);
    double ref[EN];
    for (int i = 0; i < EN; i++)
        ref[i] = (double)(e.x[i] + e.y[i]);
    check_close("residual forward", e.out, ref, EN, 0.0, 0.0);

    float *d1 = falloc(EN), *d2 = falloc(EN);
    gpt2_residual_backward(d1, d2, e.w, EN);
    float *g1 = fdup(d1, EN), *g2 = fdup(d2, EN);
    gpt2_residual_backward(d1, d2, e.w, EN);
    check_doubled("residual dinp1", g1, d1, EN);
    check_doubled("residual dinp2", g2, d2, EN);
    grad_check("residual dinp1", res_loss, &e, e.x, g1, EN, SIZE_MAX, H, RTOL, ATOL);
    grad_check("residual dinp2", res_loss, &e, e.y, g2, EN, SIZE_MAX, H, RTOL, ATOL);
    free(e.x), free(e.y), free(e.out), free(e.w), free(d1), free(d2), free(g1), free(g2);
}

/* ---- softmax + cross-entropy ------------------------------------------------------------ */

struct xent {
    int bt, v, vp;
    const int *targets;
    float *logits, *probs, *losses;
};

static double xent_loss(void *p) /* mean loss */
{
    struct xent *x = p;
    gpt2_softmax_crossentropy_forward(x->losses, x->probs, x->logits, x->targets, x->bt, x->v,
                                      x->vp);
    double s = 0.0;
    for (int i = 0; i < x->bt; i++)
        s += x->losses[i];
    return s / x->bt;
}

/* Forward against a double softmax over the first v entries; padded probs exactly 0. */
static void xent_check_forward(const char *what, const struct xent *x)
{
    const size_t n = (size_t)x->bt * x->vp;
    double *rp = dalloc(n), *rl = dalloc((size_t)x->bt);
    int pad_ok = 1;
    for (int i = 0; i < x->bt; i++) {
        const float *lg = x->logits + (size_t)i * x->vp;
        double mx = -INFINITY, sum = 0.0;
        for (int v = 0; v < x->v; v++)
            mx = fmax(mx, lg[v]);
        for (int v = 0; v < x->v; v++)
            sum += exp(lg[v] - mx);
        for (int v = 0; v < x->vp; v++)
            rp[(size_t)i * x->vp + v] = v < x->v ? exp(lg[v] - mx) / sum : 0.0;
        rl[i] = -log(rp[(size_t)i * x->vp + x->targets[i]]);
        for (int v = x->v; v < x->vp; v++)
            pad_ok &= x->probs[(size_t)i * x->vp + v] == 0.0f;
    }
    char name[96];
    snprintf(name, sizeof name, "%s probs", what);
    check_close(name, x->probs, rp, n, 1e-5, 1e-7);
    snprintf(name, sizeof name, "%s losses", what);
    check_close(name, x->losses, rl, (size_t)x->bt, 1e-5, 1e-6);
    CHECK(pad_ok, "%s: padded entries have nonzero probability", what);
    free(rp);
    free(rl);
}

static void test_crossentropy(void)
{
    if (verbose)
        printf("softmax cross-entropy\n");
    int targets[BT];
    for (int i = 0; i < BT; i++)
        targets[i] = irand(V);
    targets[1] = V - 1; /* the last real entry, next to the padding */
    struct xent x = {.bt = BT,
                     .v = V,
                     .vp = VP,
                     .targets = targets,
                     .logits = falloc(BT * VP),
                     .probs = falloc(BT * VP),
                     .losses = falloc(BT)};
    fill(x.logits, BT * VP, 3.0f, 0.0f);
    for (int i = 0; i < BT; i++) /* padded logits large: they would dominate if included */
        for (int v = V; v < VP; v++)
            x.logits[i * VP + v] = 5.0f;
    for (int i = 0; i < BT * VP; i++)
        x.probs[i] = NAN;
    xent_loss(&x);
    xent_check_forward("xent V=7 Vp=8", &x);

    float *dl = falloc(BT), *d = falloc(BT * VP);
    for (int i = 0; i < BT; i++)
        dl[i] = 1.0f / BT;
    for (int i = 0; i < BT * VP; i++)
        d[i] = NAN; /* overwritten */
    gpt2_softmax_crossentropy_backward(d, dl, x.probs, targets, BT, V, VP);
    float *g = fdup(d, BT * VP);
    gpt2_softmax_crossentropy_backward(d, dl, x.probs, targets, BT, V, VP);
    CHECK(!memcmp(g, d, sizeof(float) * BT * VP), "xent: dlogits not overwritten");
    int pad_ok = 1;
    for (int i = 0; i < BT; i++)
        for (int v = V; v < VP; v++)
            pad_ok &= g[i * VP + v] == 0.0f;
    CHECK(pad_ok, "xent: padded entries have nonzero gradient");
    { /* in place (the model's path): the same probabilities, losses and dlogits, bit for bit */
        float *xb = fdup(x.logits, BT * VP), *lb = falloc(BT);
        gpt2_softmax_crossentropy_forward_inplace(lb, xb, targets, BT, V, VP);
        CHECK(!memcmp(xb, x.probs, sizeof(float) * BT * VP) &&
                  !memcmp(lb, x.losses, sizeof(float) * BT),
              "xent in place: probabilities or losses differ from the out-of-place kernel's");
        gpt2_softmax_crossentropy_backward_inplace(xb, dl, targets, BT, V, VP);
        CHECK(!memcmp(xb, g, sizeof(float) * BT * VP),
              "xent in place: dlogits differ from the out-of-place kernel's");
        free(xb), free(lb);
    }
    /* The padded entries are checked too: the loss does not depend on them (numeric slope
     * exactly 0). */
    grad_check("xent dlogits", xent_loss, &x, x.logits, g, BT * VP, SIZE_MAX, H, RTOL, ATOL);

    /* Padded logits are never read: NaN there changes nothing. */
    float *probs0 = fdup(x.probs, BT * VP), *losses0 = fdup(x.losses, BT);
    for (int i = 0; i < BT; i++)
        for (int v = V; v < VP; v++)
            x.logits[i * VP + v] = NAN;
    xent_loss(&x);
    CHECK(!memcmp(probs0, x.probs, sizeof(float) * BT * VP) &&
              !memcmp(losses0, x.losses, sizeof(float) * BT),
          "xent: padded logits are read");
    free(x.logits), free(x.probs), free(x.losses), free(dl), free(d), free(g), free(probs0),
        free(losses0);

    /* A wider row with more padding, a confident target (p near 1) and a hopeless one (p ~
     * e^-120, 0 in float: −log p must come from the logits, not from the rounded prob). */
    enum { XBT = 3, XV = 37, XVP = 48 };
    int t2[XBT] = {5, 36, 0};
    struct xent y = {.bt = XBT,
                     .v = XV,
                     .vp = XVP,
                     .targets = t2,
                     .logits = falloc(XBT * XVP),
                     .probs = falloc(XBT * XVP),
                     .losses = falloc(XBT)};
    fill(y.logits, XBT * XVP, 2.0f, 0.0f);
    y.logits[0 * XVP + 5] = 30.0f;
    y.logits[2 * XVP + 0] = -120.0f;
    xent_loss(&y);
    xent_check_forward("xent V=37 Vp=48", &y);
    { /* in place, rows longer than the 8-lane sums: the same bits */
        float *xb = fdup(y.logits, XBT * XVP), *lb = falloc(XBT), *yd = falloc(XBT * XVP);
        const float ydl[XBT] = {0.25f, 0.5f, 1.0f};
        gpt2_softmax_crossentropy_forward_inplace(lb, xb, t2, XBT, XV, XVP);
        CHECK(!memcmp(xb, y.probs, sizeof(float) * XBT * XVP) &&
                  !memcmp(lb, y.losses, sizeof(float) * XBT),
              "xent V=37 in place: probabilities or losses differ");
        gpt2_softmax_crossentropy_backward(yd, ydl, y.probs, t2, XBT, XV, XVP);
        gpt2_softmax_crossentropy_backward_inplace(xb, ydl, t2, XBT, XV, XVP);
        CHECK(!memcmp(xb, yd, sizeof(float) * XBT * XVP), "xent V=37 in place: dlogits differ");
        free(xb), free(lb), free(yd);
    }
    free(y.logits), free(y.probs), free(y.losses);
}

/* ---- the Llama family's layers: RMSNorm, SwiGLU, rotary positions, grouped-query heads ---- */

struct rms {
    float *x, *w, *out, *rstd, *loss_w;
};

static double rms_loss(void *p)
{
    struct rms *r = p;
    gpt2_rmsnorm_forward(r->out, r->rstd, r->x, r->w, BT, C, 1e-5f);
    return wsum(r->loss_w, r->out, (size_t)BT * C);
}

static void test_rmsnorm(void)
{
    if (verbose)
        printf("rmsnorm\n");
    struct rms r = {.x = falloc(BT * C),
                    .w = falloc(C),
                    .out = falloc(BT * C),
                    .rstd = falloc(BT),
                    .loss_w = falloc(BT * C)};
    fill(r.x, BT * C, 2.0f, 0.5f);
    fill(r.w, C, 0.5f, 1.0f);
    fill(r.loss_w, BT * C, 1.0f, 0.0f);
    rms_loss(&r);
    double ref[BT * C];
    for (int n = 0; n < BT; n++) {
        double ss = 0.0;
        for (int c = 0; c < C; c++)
            ss += (double)r.x[n * C + c] * r.x[n * C + c];
        const double s = 1.0 / sqrt(ss / C + 1e-5);
        for (int c = 0; c < C; c++)
            ref[n * C + c] = r.x[n * C + c] * s * r.w[c];
    }
    check_close("rmsnorm forward", r.out, ref, BT * C, 1e-5, 1e-6);
    float *dx = falloc(BT * C), *dw = falloc(C);
    gpt2_rmsnorm_backward(dx, dw, r.loss_w, r.x, r.w, r.rstd, BT, C);
    float *gx = fdup(dx, BT * C), *gw = fdup(dw, C);
    gpt2_rmsnorm_backward(dx, dw, r.loss_w, r.x, r.w, r.rstd, BT, C);
    check_doubled("rmsnorm dinp", gx, dx, BT * C);
    check_doubled("rmsnorm dweight", gw, dw, C);
    grad_check("rmsnorm dinp", rms_loss, &r, r.x, gx, BT * C, SIZE_MAX, H, RTOL, ATOL);
    grad_check("rmsnorm dweight", rms_loss, &r, r.w, gw, C, SIZE_MAX, H, RTOL, ATOL);
    free(r.x), free(r.w), free(r.out), free(r.rstd), free(r.loss_w), free(dx), free(dw), free(gx),
        free(gw);
}

enum { SI = 12 }; /* SwiGLU's width */

static double swiglu_loss(void *p)
{
    struct ew *e = p;
    gpt2_swiglu_forward(e->out, e->x, BT, SI);
    return wsum(e->w, e->out, (size_t)BT * SI);
}

static void test_swiglu(void)
{
    if (verbose)
        printf("swiglu\n");
    struct ew e = {.x = falloc(BT * 2 * SI), .out = falloc(BT * SI), .w = falloc(BT * SI)};
    fill(e.x, BT * 2 * SI, 4.0f, 0.0f);
    fill(e.w, BT * SI, 1.0f, 0.0f);
    swiglu_loss(&e);
    double ref[BT * SI];
    for (int n = 0; n < BT; n++)
        for (int i = 0; i < SI; i++) {
            const double g = e.x[n * 2 * SI + i], u = e.x[n * 2 * SI + SI + i];
            ref[n * SI + i] = g / (1.0 + exp(-g)) * u;
        }
    check_close("swiglu forward", e.out, ref, BT * SI, 1e-5, 1e-6);
    float *d = falloc(BT * 2 * SI);
    gpt2_swiglu_backward(d, e.x, e.w, BT, SI);
    float *g = fdup(d, BT * 2 * SI);
    gpt2_swiglu_backward(d, e.x, e.w, BT, SI);
    check_doubled("swiglu dinp", g, d, BT * 2 * SI);
    grad_check("swiglu dinp", swiglu_loss, &e, e.x, g, BT * 2 * SI, SIZE_MAX, H, RTOL, ATOL);
    /* in two blocks of columns (the Llama family's MLP block by block): the whole's bits */
    float *o2 = falloc(BT * SI), *d2 = falloc(BT * 2 * SI);
    const int c0[2] = {0, 8}, wd[2] = {8, SI - 8};
    for (int k = 0; k < 2; k++) {
        gpt2_swiglu_forward_cols(o2 + c0[k], SI, e.x + c0[k], 2 * SI, SI, BT, wd[k]);
        gpt2_swiglu_backward_cols(d2 + c0[k], e.x + c0[k], 2 * SI, SI, e.w + c0[k], SI, BT, wd[k]);
    }
    swiglu_loss(&e);
    CHECK(!memcmp(o2, e.out, sizeof(float) * BT * SI), "swiglu in column blocks: forward differs");
    CHECK(!memcmp(d2, g, sizeof(float) * BT * 2 * SI), "swiglu in column blocks: backward differs");
    free(e.x), free(e.out), free(e.w), free(d), free(g), free(o2), free(d2);
}

/* Rotary positions against a complex rotation: (x[i] + j·x[i + hd/2])·e^(j·θ) per pair; the
 * backward is the rotation's transpose (finite differences of a weighted sum). */
enum { RH = 3, RHD = 6, RW = 4 * RHD }; /* 3 rotated heads of 6 in rows of 4 heads */

struct rope {
    float *x, *y, *cosv, *sinv, *w;
};

static double rope_loss(void *p)
{
    struct rope *r = p;
    memcpy(r->y, r->x, sizeof(float) * BT * RW);
    gpt2_rope_forward(r->y, r->cosv, r->sinv, B, T, RW, RH, RHD);
    return wsum(r->w, r->y, (size_t)BT * RW);
}

static void test_rope(void)
{
    if (verbose)
        printf("rope\n");
    const int half = RHD / 2;
    struct rope r = {.x = falloc(BT * RW),
                     .y = falloc(BT * RW),
                     .cosv = falloc(T * half),
                     .sinv = falloc(T * half),
                     .w = falloc(BT * RW)};
    double theta[T * RHD / 2];
    for (int t = 0; t < T; t++)
        for (int i = 0; i < half; i++) {
            theta[t * half + i] = t * pow(10000.0, -2.0 * i / RHD);
            r.cosv[t * half + i] = (float)cos(theta[t * half + i]);
            r.sinv[t * half + i] = (float)sin(theta[t * half + i]);
        }
    fill(r.x, BT * RW, 1.0f, 0.0f);
    fill(r.w, BT * RW, 1.0f, 0.0f);
    rope_loss(&r);
    double ref[BT * RW];
    for (int bt = 0; bt < BT; bt++)
        for (int c = 0; c < RW; c++)
            ref[bt * RW + c] = r.x[bt * RW + c]; /* heads past RH untouched */
    for (int bt = 0; bt < BT; bt++)
        for (int h = 0; h < RH; h++)
            for (int i = 0; i < half; i++) {
                const double complex z =
                    (r.x[bt * RW + h * RHD + i] + I * (double)r.x[bt * RW + h * RHD + half + i]) *
                    cexp(I * theta[(bt % T) * half + i]);
                ref[bt * RW + h * RHD + i] = creal(z);
                ref[bt * RW + h * RHD + half + i] = cimag(z);
            }
    check_close("rope forward", r.y, ref, BT * RW, 1e-5, 1e-6);
    float *d = fdup(r.w, BT * RW);
    gpt2_rope_backward(d, r.cosv, r.sinv, B, T, RW, RH, RHD);
    grad_check("rope backward", rope_loss, &r, r.x, d, BT * RW, SIZE_MAX, H, RTOL, ATOL);
    free(r.x), free(r.y), free(r.cosv), free(r.sinv), free(r.w), free(d);
}

/* Grouped-query attention against the multi-head attention tested above, on each key/value head
 * repeated for its group (transformers' repeat_kv): the same outputs, the query gradients the
 * same, and each key/value head's gradient the sum of its group's. fp32, then bf16 against fp32
 * within bf16's rounding. */
static void test_attention_gqa(void)
{
    if (verbose)
        printf("attention, grouped-query heads\n");
    enum { GH = 4, GKV = 2, GHD = 4, GW = (GH + 2 * GKV) * GHD, GQ = GH * GHD, GR = GH / GKV };
    const size_t nq = (size_t)BT * GW, nfull = (size_t)BT * 3 * GQ, natt = (size_t)B * GH * T * T;
    float *qkv = falloc(nq), *full = falloc(nfull), *out = falloc(BT * GQ), *outf = falloc(BT * GQ),
          *pre = falloc(natt), *att = falloc(natt), *attf = falloc(natt), *dy = falloc(BT * GQ),
          *dq = falloc(nq), *dfull = falloc(nfull), *dpre = falloc(natt), *datt = falloc(natt);
    fill(qkv, nq, 1.5f, 0.0f);
    fill(dy, BT * GQ, 1.0f, 0.0f);
    for (int bt = 0; bt < BT; bt++)
        for (int h = 0; h < GH; h++)
            for (int i = 0; i < GHD; i++) {
                const int kv = h / GR;
                float *f = full + (size_t)bt * 3 * GQ;
                const float *g = qkv + (size_t)bt * GW;
                f[h * GHD + i] = g[h * GHD + i];
                f[GQ + h * GHD + i] = g[GQ + kv * GHD + i];
                f[2 * GQ + h * GHD + i] = g[GQ + GKV * GHD + kv * GHD + i];
            }
    gpt2_attention_gqa_forward(out, pre, att, qkv, B, T, GH, GKV, GHD, NULL);
    gpt2_attention_forward(outf, pre, attf, full, B, T, GQ, GH, NULL);
    double ref[BT * GQ], dref[BT * GW];
    for (size_t i = 0; i < (size_t)BT * GQ; i++)
        ref[i] = outf[i];
    check_close("gqa forward vs repeated heads", out, ref, BT * GQ, 1e-6, 1e-7);
    gpt2_attention_gqa_backward(dq, dpre, datt, dy, qkv, att, B, T, GH, GKV, GHD, NULL);
    gpt2_attention_backward(dfull, dpre, datt, dy, full, attf, B, T, GQ, GH, NULL);
    memset(dref, 0, sizeof dref);
    for (int bt = 0; bt < BT; bt++)
        for (int h = 0; h < GH; h++)
            for (int i = 0; i < GHD; i++) {
                const int kv = h / GR;
                const float *f = dfull + (size_t)bt * 3 * GQ;
                double *g = dref + (size_t)bt * GW;
                g[h * GHD + i] = f[h * GHD + i];
                g[GQ + kv * GHD + i] += f[GQ + h * GHD + i];
                g[GQ + GKV * GHD + kv * GHD + i] += f[2 * GQ + h * GHD + i];
            }
    check_close("gqa backward vs repeated heads", dq, dref, nq, 1e-5, 1e-6);
    /* bf16: the same products on bf16 operands (workspace as the model sizes it) */
    const size_t ws_bytes = gpt2_attention_gqa_workspace_bytes(B, T, GH, GKV, GHD);
    void *ws = malloc(ws_bytes);
    const gpt2_gemm g16 = {.type = ZC_GEMM_BF16, .ws = ws, .ws_bytes = ws_bytes};
    float *out16 = falloc(BT * GQ), *dq16 = falloc(nq);
    gpt2_attention_gqa_forward(out16, pre, att, qkv, B, T, GH, GKV, GHD, &g16);
    gpt2_attention_gqa_backward(dq16, dpre, datt, dy, qkv, att, B, T, GH, GKV, GHD, &g16);
    for (size_t i = 0; i < nq; i++)
        dref[i] = dq[i];
    check_close("gqa bf16 forward vs fp32", out16, ref, BT * GQ, 2e-2, 2e-2);
    check_close("gqa bf16 backward vs fp32", dq16, dref, nq, 5e-2, 5e-2);
    free(qkv), free(full), free(out), free(outf), free(pre), free(att), free(attf), free(dy),
        free(dq), free(dfull), free(dpre), free(datt), free(ws), free(out16), free(dq16);
}

int main(int argc, char **argv)
{
    verbose = argc > 1 && !strcmp(argv[1], "-v");
    zc_err err = {0};
    if (zc_comm_init(&g_comm, &argc, &argv, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    test_encoder();
    test_layernorm();
    test_matmul(1);
    test_matmul(0);
    test_attention();
    test_attention_bf16();
    test_attention_long();
    test_wide();
    test_gelu();
    test_residual();
    test_rmsnorm();
    test_swiglu();
    test_rope();
    test_attention_gqa();
    test_crossentropy();
    test_attention_cached();
    test_decode_model();
    test_mlp_tiles_model();
    test_mlp_act_redone();
    test_activation_bytes_per_block();
    zc_comm_finalize(g_comm);
    return check_summary();
}
