/* gpt2_layers.c — the GPT-2 layer kernels (see gpt2_layers.h for the contract).
 *
 * Shaped for a 2-core CPU against PyTorch. Every matrix product goes through zeroc/gemm.h
 * (oneDNN; in bf16 mode on the CPU's bf16 units, as PyTorch's CPU autocast runs linear and bmm).
 * Attention's six products are each one zc_gemm_batch call over all (batch, head) pairs, reading
 * q, k and v in place through a leading dimension of 3C (bf16: from one rounded copy of qkv),
 * full T × T products whose masked part is zeros, on all threads. The per-head OpenBLAS sgemms
 * this replaced, in row blocks that skipped part of the masked triangle, were too small for
 * OpenBLAS to thread at T = 64 (one thread worked, the other waited); measured on GPT-2 124M at
 * T = 64 and L4 C256 at T = 1024, the batch is as fast or faster in fp32 and bf16, on 1 × 2
 * threads and 2 × 1 (docs/BENCHMARKS.md).
 *
 * Determinism without atomics: row-wise work is split by rows; a reduction over rows (parameter
 * gradients: LayerNorm's dweight/dbias, a bias gradient, the embedding scatter-add) is split by
 * column chunks, and each chunk walks the rows in order — the same sums in the same order
 * whatever the thread count. exp goes through exp_approx below (glibc's expf/tanhf do not
 * vectorise). What this file does not do: allocate, check shapes, or know about the engine.
 */
#include "models/gpt2/gpt2_layers.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "zeroc/dtype.h"
#include "zeroc/simd.h"
#include "zeroc/status.h"

#include "src/util/asan_range.h"

/* Loops with less work than this (in elements) run on one thread: an OpenMP fork costs a few
 * microseconds, more than the loop. */
#define PAR_MIN 32768
/* Columns per chunk for reductions over rows (a multiple of the vector width; 256 B). */
#define COL_CHUNK 64
ZC_SIMD_INLINE int imin(int a, int b)
{
    return a < b ? a : b;
}

/* exp(x) that vectorises: glibc's expf and tanhf are scalar calls (~5 and ~14 ns here), which
 * made the loss softmax (B·T·V exps) cost as much as the LM-head matmul. Cephes' expf: Cody–Waite
 * reduction x = n·ln2 + r (n by the 1.5·2²³ rounding trick, read from the bits so no float→int
 * conversion), a degree-6 polynomial for e^r, 2ⁿ built in the exponent bits: < 1 ulp from the
 * correctly rounded e^x on [−87.3, 88] (checked against double exp on 1/64 of all floats).
 * Inputs above 88 are clamped (e^88 ≈ 1.7e38; callers pass x ≤ 0 or only need a huge value),
 * inputs below −87.3 give 0, NaN stays NaN. Pure arithmetic, so `omp simd` loops vectorise it
 * and every lane computes the same bits as scalar code: results do not depend on vector width. */
ZC_SIMD_INLINE float exp_approx(float x)
{
    typedef union {
        float f;
        uint32_t u;
    } bits;
    const float lo = -87.3f, hi = 88.0f, magic = 12582912.0f; /* 1.5·2²³ */
    /* Clamp with bit masks rather than ?: — gcc turns a float select into a branch, and then
     * will not vectorise the loop (it may not speculate float ops under -ftrapping-math). */
    const uint32_t above = -(uint32_t)(x > hi), below = -(uint32_t)(x < lo);
    const bits xb = {.f = x}, hb = {.f = hi}, lb = {.f = lo}, mb = {.f = magic};
    const bits xc = {.u = (xb.u & ~(above | below)) | (hb.u & above) | (lb.u & below)};
    const bits t = {.f = xc.f * 1.44269504088896341f + magic}; /* round(x·log2 e) + magic */
    const float n = t.f - magic;
    float r = xc.f - n * 0.693359375f; /* ln2 = 0.693359375 − 2.12194440e-4, first part exact */
    r = r + n * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * (r * r) + r + 1.0f;
    const bits scale = {.u = (t.u - mb.u + 127u) << 23}; /* 2ⁿ, n ∈ [−126, 127] */
    const bits y = {.f = p * scale.f};
    const bits out = {.u = y.u & ~below}; /* below −87.3: 0 */
    return out.f;
}

/* max of x[0, n), n ≥ 1, in 16 running maxima combined at the end. The obvious `omp simd
 * reduction(max)` compiled at -O2 to one vector maximum carried through memory from step to
 * step, a third of the loss's time; 16 independent lanes measured ~5× faster. NaN is skipped
 * unless x[0] is NaN (either way the exp sum then turns NaN). */
ZC_SIMD_INLINE float row_max(const float *restrict x, int n)
{
    enum { L = 16 };
    float m[L];
    for (int j = 0; j < L; j++)
        m[j] = x[0];
    int i = 0;
    for (; i + L <= n; i += L)
        for (int j = 0; j < L; j++)
            m[j] = x[i + j] > m[j] ? x[i + j] : m[j];
    float r = x[0];
    for (; i < n; i++)
        r = x[i] > r ? x[i] : r;
    for (int j = 0; j < L; j++)
        r = m[j] > r ? m[j] : r;
    return r;
}

/* x[i] = exp(x[i] − mx) for i < n, returning Σ x[i] in double (V ~ 50k terms, and the loss is
 * compared with PyTorch's), summed in 8 interleaved lanes and then the lanes in order: the order
 * is fixed by this code, not by the vector width the compiler happens to pick. Both
 * cross-entropy kernels use it (the out-of-place one on a copy), so they agree bit for bit. */
ZC_SIMD_INLINE double exp_inplace_sum(float *x, float mx, int n)
{
    enum { L = 8 };
    double acc[L] = {0};
    int i = 0;
    for (; i + L <= n; i += L)
        for (int j = 0; j < L; j++) {
            const float e = exp_approx(x[i + j] - mx);
            x[i + j] = e;
            acc[j] += e;
        }
    double s = 0.0;
    for (; i < n; i++) {
        const float e = exp_approx(x[i] - mx);
        x[i] = e;
        s += e;
    }
    for (int j = 0; j < L; j++)
        s += acc[j];
    return s;
}

/* The fp32 value of bf16 bits (exact: they are its top half). */
ZC_SIMD_INLINE float bf16_value(uint16_t h)
{
    union {
        uint32_t u;
        float f;
    } b = {.u = (uint32_t)h << 16};
    return b.f;
}

/* GELU's tanh approximation; 0.5·(1 + tanh(u)) = 1 / (1 + e^(−2u)): one exp and no
 * cancellation in either tail. */
#define GELU_SCALE 0.7978845608028654f /* √(2/π) */
#define GELU_CUBE 0.044715f

/* The kernels, once per vector level (zeroc/simd.h). */
#define ZC_SIMD_KERNELS "models/gpt2/gpt2_kernels.inc"
#include "zeroc/simd_expand.h"

/* The ranges the vector kernels touch, for the whole-range checks of a sanitizer build
 * (util/asan_range.h). rows_out: N rows of C written; strided_bytes: N rows of width floats,
 * ld apart (the last row ends at its width); rope_ranges: the heads of every row, and the
 * tables' T rows of hd/2. */
static void rows_out(const float *out, size_t N, int C)
{
    zc_asan_write(out, 4 * N * (size_t)C);
}

static size_t strided_bytes(int N, int ld, int width)
{
    return N > 0 && width > 0 ? 4 * ((size_t)(N - 1) * (size_t)ld + (size_t)width) : 0;
}

static void rope_ranges(const float *x, const float *cosv, const float *sinv, int B, int T, int W,
                        int heads, int hd)
{
    zc_asan_write(x, strided_bytes(B * T, W, heads * hd));
    zc_asan_read(cosv, 4 * (size_t)T * (size_t)(hd / 2));
    zc_asan_read(sinv, 4 * (size_t)T * (size_t)(hd / 2));
}

/* ------------------------------------------------------------------------------------------ */
/* encoder: token + position embedding                                                        */

void gpt2_encoder_forward(float *restrict out, const int *restrict inp, const float *restrict wte,
                          const uint16_t *restrict wte16, const float *restrict wpe,
                          const uint16_t *restrict wpe16, int B, int T, int C)
{
    rows_out(out, (size_t)B * T, C);
    zc_asan_read(inp, sizeof *inp * B * T);
    zc_asan_read(wpe, wpe ? 4 * (size_t)T * C : 0);
    zc_asan_read(wpe16, wpe16 ? 2 * (size_t)T * C : 0);
    ZC_SIMD_DISPATCH(encoder_forward, out, inp, wte, wte16, wpe, wpe16, B, T, C);
}

void gpt2_encoder_backward(float *restrict dwte, float *restrict dwpe, const float *restrict dout,
                           const int *restrict inp, int B, int T, int C)
{
    zc_asan_read(dout, 4 * (size_t)B * T * C);
    zc_asan_read(inp, sizeof *inp * B * T);
    zc_asan_write(dwpe, dwpe ? 4 * (size_t)T * C : 0);
    ZC_SIMD_DISPATCH(encoder_backward, dwte, dwpe, dout, inp, B, T, C);
}

void gpt2_encoder_forward_rows(float *restrict out, const int *restrict inp, int row0, int rows,
                               const float *restrict wte, const uint16_t *restrict wte16, int BT,
                               int C)
{
    zc_asan_read(inp, sizeof *inp * BT);
    zc_asan_read(wte, wte16 ? 0 : 4 * (size_t)rows * C);
    zc_asan_read(wte16, 2 * (size_t)rows * C);
    ZC_SIMD_DISPATCH(encoder_forward_rows, out, inp, row0, rows, wte, wte16, BT, C);
}

void gpt2_encoder_backward_rows(float *restrict dwte, const float *restrict dout,
                                const int *restrict inp, int row0, int rows, int BT, int C)
{
    zc_asan_write(dwte, 4 * (size_t)rows * C);
    zc_asan_read(dout, 4 * (size_t)BT * C);
    zc_asan_read(inp, sizeof *inp * BT);
    ZC_SIMD_DISPATCH(encoder_backward_rows, dwte, dout, inp, row0, rows, BT, C);
}

void gpt2_encoder_forward_pos(float *restrict out, const float *restrict wpe,
                              const uint16_t *restrict wpe16, int B, int T, int C)
{
    const int BT = B * T;
#pragma omp parallel for schedule(static) if ((size_t)BT * (size_t)C >= PAR_MIN)
    for (int bt = 0; bt < BT; bt++) {
        float *o = out + (size_t)bt * C;
        const size_t t = (size_t)(bt % T) * C;
        if (wpe16)
            for (int c = 0; c < C; c++)
                o[c] += bf16_value(wpe16[t + c]);
        else
            for (int c = 0; c < C; c++)
                o[c] += wpe[t + c];
    }
}

void gpt2_encoder_backward_pos(float *restrict dwpe, const float *restrict dout, int B, int T,
                               int C)
{
#pragma omp parallel for schedule(static) if ((size_t)B * T * C >= PAR_MIN)
    for (int t = 0; t < T; t++)
        for (int b = 0; b < B; b++) {
            const float *d = dout + ((size_t)b * T + (size_t)t) * C;
            float *w = dwpe + (size_t)t * C;
            for (int c = 0; c < C; c++)
                w[c] += d[c];
        }
}

static int cmp_row_pos(const void *a, const void *b)
{
    const gpt2_row_pos *x = a, *y = b;
    return x->row != y->row ? (x->row > y->row) - (x->row < y->row)
                            : (x->pos > y->pos) - (x->pos < y->pos);
}

/* The rows of dwte16 named by tokens in [row0, row0 + rows), each from zero (add false) or from
 * its bf16 value widened (add true) plus its positions' dout in position order, rounded once. */
static void rows16(uint16_t *restrict dwte16, const float *restrict dout, const int *restrict inp,
                   int row0, int rows, int BT, int C, gpt2_row_pos *restrict order, bool add)
{
    /* the positions of each row, in order: (row, position) pairs sorted */
    int n = 0;
    for (int bt = 0; bt < BT; bt++) {
        const int r = inp[bt] - row0;
        if (r >= 0 && r < rows)
            order[n++] = (gpt2_row_pos){(uint32_t)r, (uint32_t)bt};
    }
    qsort(order, (size_t)n, sizeof *order, cmp_row_pos);
    if (!add)
        memset(dwte16, 0, (size_t)rows * (size_t)C * sizeof *dwte16);
        /* channel chunks in parallel; each row's sum starts from 0 (or the row's value) and adds
         * its positions in order, as encoder_backward_rows into a zeroed (or the head's) buffer
         * does, then is rounded once */
#pragma omp parallel for schedule(static) if ((size_t)n * C >= PAR_MIN)
    for (int c0 = 0; c0 < C; c0 += COL_CHUNK) {
        const int c1 = imin(c0 + COL_CHUNK, C);
        float acc[COL_CHUNK];
        for (int i = 0; i < n;) {
            const uint32_t r = order[i].row;
            uint16_t *row = dwte16 + (size_t)r * C + c0;
            if (add)
                zc_bf16_to_f32(row, acc, (size_t)(c1 - c0));
            else
                for (int c = c0; c < c1; c++)
                    acc[c - c0] = 0.0f;
            for (; i < n && order[i].row == r; i++) {
                const float *d = dout + (size_t)order[i].pos * C;
                for (int c = c0; c < c1; c++)
                    acc[c - c0] += d[c];
            }
            zc_f32_to_bf16(acc, row, (size_t)(c1 - c0));
        }
    }
}

void gpt2_encoder_backward_rows16(uint16_t *restrict dwte16, const float *restrict dout,
                                  const int *restrict inp, int row0, int rows, int BT, int C,
                                  gpt2_row_pos *restrict order)
{
    rows16(dwte16, dout, inp, row0, rows, BT, C, order, false);
}

void gpt2_encoder_backward_rows16_add(uint16_t *restrict dwte16, const float *restrict dout,
                                      const int *restrict inp, int row0, int rows, int BT, int C,
                                      gpt2_row_pos *restrict order)
{
    rows16(dwte16, dout, inp, row0, rows, BT, C, order, true);
}

void gpt2_encoder_backward_pos16(uint16_t *restrict dwpe16, const float *restrict dout, int B,
                                 int T, int C)
{
#pragma omp parallel for schedule(static) if ((size_t)B * T * C >= PAR_MIN)
    for (int t = 0; t < T; t++)
        for (int c0 = 0; c0 < C; c0 += COL_CHUNK) {
            const int c1 = imin(c0 + COL_CHUNK, C);
            float acc[COL_CHUNK];
            for (int c = c0; c < c1; c++)
                acc[c - c0] = 0.0f;
            for (int b = 0; b < B; b++) {
                const float *d = dout + ((size_t)b * T + (size_t)t) * C;
                for (int c = c0; c < c1; c++)
                    acc[c - c0] += d[c];
            }
            zc_f32_to_bf16(acc, dwpe16 + (size_t)t * C + c0, (size_t)(c1 - c0));
        }
}

/* ------------------------------------------------------------------------------------------ */
/* layernorm                                                                                   */

void gpt2_layernorm_forward(float *restrict out, float *restrict mean, float *restrict rstd,
                            const float *restrict inp, const float *restrict weight,
                            const float *restrict bias, int N, int C)
{
    rows_out(out, (size_t)N, C);
    zc_asan_read(inp, 4 * (size_t)N * C);
    zc_asan_write(mean, 4 * (size_t)N);
    zc_asan_write(rstd, 4 * (size_t)N);
    zc_asan_read(weight, 4 * (size_t)C);
    zc_asan_read(bias, 4 * (size_t)C);
    ZC_SIMD_DISPATCH(layernorm_forward, out, mean, rstd, inp, weight, bias, N, C);
}

void gpt2_layernorm_backward(float *restrict dinp, float *restrict dweight, float *restrict dbias,
                             const float *restrict dout, const float *restrict inp,
                             const float *restrict weight, const float *restrict mean,
                             const float *restrict rstd, int N, int C)
{
    zc_asan_write(dinp, 4 * (size_t)N * C);
    zc_asan_write(dweight, 4 * (size_t)C);
    zc_asan_write(dbias, 4 * (size_t)C);
    zc_asan_read(dout, 4 * (size_t)N * C);
    zc_asan_read(inp, 4 * (size_t)N * C);
    zc_asan_read(weight, 4 * (size_t)C);
    zc_asan_read(mean, 4 * (size_t)N);
    zc_asan_read(rstd, 4 * (size_t)N);
    ZC_SIMD_DISPATCH(layernorm_backward, dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C);
}

/* ------------------------------------------------------------------------------------------ */
/* matmul (linear layer)                                                                       */

/* The bf16 backward's staging at the start of the workspace: dout (N,OC) and inp (N,C) rounded
 * to bf16 once each, for both products, each 64-byte aligned. */
static size_t align64(size_t bytes)
{
    return (bytes + 63) / 64 * 64;
}
static size_t staged_bytes(int N, int C, int OC)
{
    return align64((size_t)N * (size_t)OC * 2) + align64((size_t)N * (size_t)C * 2);
}

size_t gpt2_matmul_workspace_bytes(int N, int C, int OC)
{
    /* forward: the bf16 weights as they are; backward: dout and inp staged in bf16 */
    size_t f = zc_gemm_workspace_need(ZC_GEMM_OPS_B16, N, OC, C),
           dx = zc_gemm_workspace_need(ZC_GEMM_OPS_AB16, N, C, OC),
           dw = zc_gemm_workspace_need(ZC_GEMM_OPS_AB16_C16, OC, C, N);
    size_t back = staged_bytes(N, C, OC) + (dx > dw ? dx : dw);
    return f > back ? f : back;
}

/* One product through zeroc/gemm.h, in the layer's precision; B16, when given, is B as bf16. */
static void product(const gpt2_gemm *g, bool ta, bool tb, int M, int N, int K, const float *A,
                    int lda, const float *B, const uint16_t *B16, int ldb, float beta, float *C,
                    int ldc)
{
    if (B16) {
        ZC_ASSERT(g && g->type == ZC_GEMM_BF16);
        zc_gemm_bf16_b16(ta, tb, M, N, K, 1.0f, A, lda, B16, ldb, beta, C, ldc, g->ws, g->ws_bytes);
        return;
    }
    zc_gemm(g ? g->type : ZC_GEMM_F32, ta, tb, M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc,
            g ? g->ws : NULL, g ? g->ws_bytes : 0);
}

void gpt2_matmul_forward(float *restrict out, const float *restrict inp,
                         const float *restrict weight, const uint16_t *weight16,
                         const float *restrict bias, int N, int C, int OC, const gpt2_gemm *g)
{
    float beta = 0.0f; /* the product zero-fills out for beta 0 (never reads it) */
    if (bias) {
#pragma omp parallel for schedule(static) if ((size_t)N * OC >= PAR_MIN)
        for (int n = 0; n < N; n++)
            memcpy(out + (size_t)n * OC, bias, (size_t)OC * sizeof *out);
        beta = 1.0f;
    }
    product(g, false, true, N, OC, C, inp, C, weight, weight16, C, beta, out, OC);
}

void gpt2_matmul_forward_ld(float *restrict out, int ldo, const float *restrict inp,
                            const float *restrict weight, const uint16_t *weight16, int N, int C,
                            int OC, const gpt2_gemm *g)
{
    gpt2_matmul_forward_strided(out, ldo, inp, C, weight, weight16, C, N, C, OC, false, g);
}

void gpt2_matmul_forward_strided(float *restrict out, int ldo, const float *restrict inp, int ldi,
                                 const float *restrict weight, const uint16_t *weight16, int ldw,
                                 int N, int C, int OC, bool accumulate, const gpt2_gemm *g)
{
    product(g, false, true, N, OC, C, inp, ldi, weight, weight16, ldw, accumulate ? 1.0f : 0.0f,
            out, ldo);
}

void gpt2_matmul_backward_ld(float *restrict dinp, float *restrict dweight, uint16_t *dweight16,
                             const float *restrict dout, int ldd, const float *restrict inp,
                             const float *restrict weight, const uint16_t *weight16, int N, int C,
                             int OC, bool dweight_fresh, const gpt2_gemm *g)
{
    gpt2_matmul_backward_strided(dinp, C, dweight, dweight16, dout, ldd, inp, C, weight, weight16,
                                 C, N, C, OC, dweight_fresh, g);
}

void gpt2_matmul_backward_strided(float *restrict dinp, int lddi, float *restrict dweight,
                                  uint16_t *dweight16, const float *restrict dout, int ldd,
                                  const float *restrict inp, int ldi, const float *restrict weight,
                                  const uint16_t *weight16, int ldw, int N, int C, int OC,
                                  bool dweight_fresh, const gpt2_gemm *g)
{
    const float dw_beta = dweight_fresh ? 0.0f : 1.0f;
    if (weight16) {
        ZC_ASSERT(g && g->type == ZC_GEMM_BF16 &&
                  g->ws_bytes >= gpt2_matmul_workspace_bytes(N, C, OC));
        uint16_t *dout16 = g->ws, *inp16 = dout16 + align64((size_t)N * (size_t)OC * 2) / 2;
        void *ws = (char *)g->ws + staged_bytes(N, C, OC);
        size_t ws_bytes = g->ws_bytes - staged_bytes(N, C, OC);
        /* dout feeds both products and is rounded once (row by row: the same bits), inp with
         * it */
        if (ldd == OC)
            zc_f32_to_bf16(dout, dout16, (size_t)N * (size_t)OC);
        else
            for (int n = 0; n < N; n++)
                zc_f32_to_bf16(dout + (size_t)n * ldd, dout16 + (size_t)n * OC, (size_t)OC);
        zc_gemm_bf16_ab16(false, false, N, C, OC, 1.0f, dout16, OC, weight16, ldw, 1.0f, dinp, lddi,
                          ws, ws_bytes);
        if (!dweight && !dweight16) /* a frozen weight (LoRA's base): no gradient */
            return;
        if (ldi == C)
            zc_f32_to_bf16(inp, inp16, (size_t)N * (size_t)C);
        else
            for (int n = 0; n < N; n++)
                zc_f32_to_bf16(inp + (size_t)n * ldi, inp16 + (size_t)n * C, (size_t)C);
        if (dweight16)
            zc_gemm_bf16_ab16_c16(true, false, OC, C, N, 1.0f, dout16, OC, inp16, C, dweight16, ldw,
                                  ws, ws_bytes);
        else
            zc_gemm_bf16_ab16(true, false, OC, C, N, 1.0f, dout16, OC, inp16, C, dw_beta, dweight,
                              ldw, ws, ws_bytes);
        return;
    }
    ZC_ASSERT(!dweight16);
    /* dinp (N,C) += dout (N,OC) · weight (OC,C) */
    product(g, false, false, N, C, OC, dout, ldd, weight, NULL, ldw, 1.0f, dinp, lddi);
    if (!dweight) /* frozen */
        return;
    /* dweight (OC,C) (+)= doutᵀ (OC,N) · inp (N,C) */
    product(g, true, false, OC, C, N, dout, ldd, inp, NULL, ldi, dw_beta, dweight, ldw);
}

void gpt2_matmul_backward(float *restrict dinp, float *restrict dweight, uint16_t *dweight16,
                          float *restrict dbias, const float *restrict dout,
                          const float *restrict inp, const float *restrict weight,
                          const uint16_t *weight16, int N, int C, int OC, bool dweight_fresh,
                          const gpt2_gemm *g)
{
    gpt2_matmul_backward_ld(dinp, dweight, dweight16, dout, OC, inp, weight, weight16, N, C, OC,
                            dweight_fresh, g);
    if (dbias) {
        zc_asan_write(dbias, 4 * (size_t)OC);
        zc_asan_read(dout, 4 * (size_t)N * OC);
        ZC_SIMD_DISPATCH(bias_backward, dbias, dout, N, OC);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* attention                                                                                   */
/* Per (b,h) the head's q, k, v are (T,hs) matrices inside qkv with leading dimension 3C, and its
 * output is a (T,hs) matrix inside out with leading dimension C; preatt/att are (T,T) blocks:
 * a batch over (b,h) has strides T·3C and hs in qkv, T·C and hs in out, NH·T² and T² in att. */

/* The bf16 products' workspace: qkv (B,T,W), att or dpreatt (B,NH,T,T) and dout (B,T,NH·hd)
 * rounded to bf16 once each (64-byte aligned), then the portable path's fp32 copies. */
typedef struct {
    uint16_t *qkv, *att, *dout;
    void *ws;
    size_t ws_bytes;
} att16;

/* Bytes of the three bf16 copies, each 64-byte aligned: qkv, att (or dpreatt), dout. */
static void att16_sizes(int B, int T, int NH, int KV, int hd, size_t bytes[3])
{
    const size_t BT = (size_t)B * (size_t)T;
    bytes[0] = align64(BT * (size_t)(NH + 2 * KV) * hd * 2);
    bytes[1] = align64((size_t)B * NH * T * T * 2);
    bytes[2] = align64(BT * (size_t)NH * hd * 2);
}

size_t gpt2_attention_gqa_workspace_bytes(int B, int T, int NH, int KV, int hd)
{
    size_t n[3], qk = zc_gemm_workspace_need(ZC_GEMM_OPS_AB16, T, T, hd),
                 av = zc_gemm_workspace_need(ZC_GEMM_OPS_AB16, T, hd, T);
    att16_sizes(B, T, NH, KV, hd, n);
    return n[0] + n[1] + n[2] + (qk > av ? qk : av);
}

size_t gpt2_attention_workspace_bytes(int B, int T, int C, int NH)
{
    return gpt2_attention_gqa_workspace_bytes(B, T, NH, NH, C / NH);
}

static att16 att16_carve(const gpt2_gemm *g, int B, int T, int NH, int KV, int hd)
{
    ZC_ASSERT(g->ws_bytes >= gpt2_attention_gqa_workspace_bytes(B, T, NH, KV, hd));
    size_t n[3];
    att16_sizes(B, T, NH, KV, hd, n);
    char *p = g->ws;
    return (att16){(uint16_t *)p, (uint16_t *)(p + n[0]), (uint16_t *)(p + n[0] + n[1]),
                   p + n[0] + n[1] + n[2], g->ws_bytes - (n[0] + n[1] + n[2])};
}

/* Element off of X, of the batch's operand type (fp32, or bf16 bits). */
static const void *at(const void *X, int64_t off, zc_gemm_type t)
{
    return (const char *)X + off * (t == ZC_GEMM_BF16 ? 2 : 4);
}

/* fp32 products when the caller passes no gpt2_gemm */
static const gpt2_gemm fp32_products = {.type = ZC_GEMM_F32};

/* Grouped-query heads: head h reads key/value head h / G (G = NH/KV). One batch per member g of
 * a group covers heads g, G + g, 2G + g, … (strides G·hd in q and out, G·T² in att) against key
 * heads 0, 1, … (stride hd): G batches of (B, KV). With G = 1 it is one batch over all heads,
 * the plain multi-head attention. */
void gpt2_attention_gqa_forward(float *restrict out, float *restrict preatt, float *restrict att,
                                const float *restrict qkv, int B, int T, int NH, int KV, int hd,
                                const gpt2_gemm *g)
{
    if (!g)
        g = &fp32_products;
    const int G = NH / KV, QD = NH * hd, W = (NH + 2 * KV) * hd;
    const int64_t TW = (int64_t)T * W, TT = (int64_t)T * T, TQ = (int64_t)T * QD;
    const zc_gemm_type t = g->type;
    att16 w = {0};
    const void *x = qkv, *a = att;
    if (t == ZC_GEMM_BF16) {
        w = att16_carve(g, B, T, NH, KV, hd);
        zc_f32_to_bf16(qkv, w.qkv, (size_t)B * T * W);
        x = w.qkv, a = w.att;
    }
    for (int j = 0; j < G; j++)
        zc_gemm_batch(t, B, KV, false, true, T, T, hd, 1.0f / sqrtf((float)hd), at(x, j * hd, t), W,
                      TW, (int64_t)G * hd, at(x, QD, t), W, TW, hd, 0.0f, preatt + j * TT, T,
                      NH * TT, G * TT, w.ws, w.ws_bytes);
    zc_asan_write(preatt, 4 * (size_t)B * NH * T * T);
    zc_asan_write(att, 4 * (size_t)B * NH * T * T);
    ZC_SIMD_DISPATCH(attention_softmax_forward, preatt, att, (size_t)B * NH * T, T);
    if (t == ZC_GEMM_BF16)
        zc_f32_to_bf16(att, w.att, (size_t)B * NH * TT);
    for (int j = 0; j < G; j++)
        zc_gemm_batch(t, B, KV, false, false, T, hd, T, 1.0f, at(a, j * TT, t), T, NH * TT, G * TT,
                      at(x, QD + KV * hd, t), W, TW, hd, 0.0f, out + j * hd, QD, TQ,
                      (int64_t)G * hd, w.ws, w.ws_bytes);
}

void gpt2_attention_forward(float *restrict out, float *restrict preatt, float *restrict att,
                            const float *restrict qkv, int B, int T, int C, int NH,
                            const gpt2_gemm *g)
{
    gpt2_attention_gqa_forward(out, preatt, att, qkv, B, T, NH, NH, C / NH, g);
}

/* The backward: datt = dout·vᵀ, dv += attᵀ·dout, the softmax's backward, then
 * dq += scale · dpreatt·k and dk += scale · dpreattᵀ·q (a key/value head's gradients summed
 * over its group's heads in order g = 0, 1, …). */
void gpt2_attention_gqa_backward(float *restrict dqkv, float *restrict dpreatt,
                                 float *restrict datt, const float *restrict dout,
                                 const float *restrict qkv, const float *restrict att, int B, int T,
                                 int NH, int KV, int hd, const gpt2_gemm *g)
{
    if (!g)
        g = &fp32_products;
    const int G = NH / KV, QD = NH * hd, W = (NH + 2 * KV) * hd;
    const int64_t TW = (int64_t)T * W, TT = (int64_t)T * T, TQ = (int64_t)T * QD;
    const int64_t Gh = (int64_t)G * hd, GT = G * TT;
    const float scale = 1.0f / sqrtf((float)hd);
    const zc_gemm_type t = g->type;
    att16 w = {0};
    const void *x = qkv, *dy = dout, *a = att, *dp = dpreatt;
    if (t == ZC_GEMM_BF16) {
        w = att16_carve(g, B, T, NH, KV, hd);
        zc_f32_to_bf16(qkv, w.qkv, (size_t)B * T * W);
        zc_f32_to_bf16(dout, w.dout, (size_t)B * TQ);
        zc_f32_to_bf16(att, w.att, (size_t)B * NH * TT);
        x = w.qkv, dy = w.dout, a = dp = w.att; /* dpreatt's copy replaces att's, used by then */
    }
    const int vo = QD + KV * hd;
    for (int j = 0; j < G; j++) {
        zc_gemm_batch(t, B, KV, false, true, T, T, hd, 1.0f, at(dy, j * hd, t), QD, TQ, Gh,
                      at(x, vo, t), W, TW, hd, 0.0f, datt + j * TT, T, NH * TT, GT, w.ws,
                      w.ws_bytes);
        zc_gemm_batch(t, B, KV, true, false, T, hd, T, 1.0f, at(a, j * TT, t), T, NH * TT, GT,
                      at(dy, j * hd, t), QD, TQ, Gh, 1.0f, dqkv + vo, W, TW, hd, w.ws, w.ws_bytes);
    }
    zc_asan_write(dpreatt, 4 * (size_t)B * NH * T * T);
    zc_asan_write(datt, 4 * (size_t)B * NH * T * T);
    zc_asan_read(att, 4 * (size_t)B * NH * T * T);
    ZC_SIMD_DISPATCH(attention_softmax_backward, dpreatt, datt, att, (size_t)B * NH * T, T);
    if (t == ZC_GEMM_BF16)
        zc_f32_to_bf16(dpreatt, w.att, (size_t)B * NH * TT);
    for (int j = 0; j < G; j++)
        zc_gemm_batch(t, B, KV, false, false, T, hd, T, scale, at(dp, j * TT, t), T, NH * TT, GT,
                      at(x, QD, t), W, TW, hd, 1.0f, dqkv + j * hd, W, TW, Gh, w.ws, w.ws_bytes);
    for (int j = 0; j < G; j++)
        zc_gemm_batch(t, B, KV, true, false, T, hd, T, scale, at(dp, j * TT, t), T, NH * TT, GT,
                      at(x, j * hd, t), W, TW, Gh, 1.0f, dqkv + QD, W, TW, hd, w.ws, w.ws_bytes);
}

void gpt2_attention_backward(float *restrict dqkv, float *restrict dpreatt, float *restrict datt,
                             const float *restrict dout, const float *restrict qkv,
                             const float *restrict att, int B, int T, int C, int NH,
                             const gpt2_gemm *g)
{
    gpt2_attention_gqa_backward(dqkv, dpreatt, datt, dout, qkv, att, B, T, NH, NH, C / NH, g);
}

/* Incremental decoding: M query rows against n = p0 + M cached rows, one zc_gemm_batch over the
 * heads for each product (k and v read in place with leading dimension KV·hd); grouped-query
 * heads as in the training forward, G batches over the key/value heads. */
size_t gpt2_attention_cached_gqa_workspace_bytes(int M, int n, int hd)
{
    size_t qk = zc_gemm_workspace_need(ZC_GEMM_OPS_AB16, M, n, hd),
           av = zc_gemm_workspace_need(ZC_GEMM_OPS_AB16, M, hd, n);
    return qk > av ? qk : av;
}

size_t gpt2_attention_cached_workspace_bytes(int M, int n, int C, int NH)
{
    return gpt2_attention_cached_gqa_workspace_bytes(M, n, C / NH);
}

void gpt2_attention_cached_gqa(float *restrict out, float *restrict att, uint16_t *restrict q16,
                               uint16_t *restrict att16, const float *restrict q, int ldq,
                               const void *k, const void *v, int p0, int M, int NH, int KV, int hd,
                               const gpt2_gemm *g)
{
    if (!g)
        g = &fp32_products;
    const int n = p0 + M, G = NH / KV, QD = NH * hd, KD = KV * hd;
    const int64_t Mn = (int64_t)M * n;
    const zc_gemm_type t = g->type;
    const void *x = q, *a = att;
    int ldx = ldq;
    if (t == ZC_GEMM_BF16) {
        for (int i = 0; i < M; i++)
            zc_f32_to_bf16(q + (size_t)i * ldq, q16 + (size_t)i * QD, (size_t)QD);
        x = q16, ldx = QD, a = att16;
    }
    /* the batch's first dimension has one entry; its strides are still those of an outermost
     * dimension (with 0 oneDNN falls back to its reference matmul, ~50× slower) */
    const int64_t sq = (int64_t)M * ldx, skv = (int64_t)n * KD, satt = NH * Mn;
    for (int j = 0; j < G; j++)
        zc_gemm_batch(t, 1, KV, false, true, M, n, hd, 1.0f / sqrtf((float)hd), at(x, j * hd, t),
                      ldx, sq, (int64_t)G * hd, k, KD, skv, hd, 0.0f, att + j * Mn, n, satt, G * Mn,
                      g->ws, g->ws_bytes);
    /* the causal softmax of each (head, row), as attention_softmax_forward's row p0 + i */
    const int64_t rows = (int64_t)NH * M;
#pragma omp parallel for schedule(static) if (rows * n >= PAR_MIN)
    for (int64_t hi = 0; hi < rows; hi++) {
        const int i = (int)(hi % M);
        float *r = att + hi * n;
        const int len = p0 + i + 1;
        const float mx = row_max(r, len);
        float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
        for (int j = 0; j < len; j++) {
            const float e = exp_approx(r[j] - mx);
            r[j] = e;
            sum += e;
        }
        const float inv = 1.0f / sum;
#pragma omp simd
        for (int j = 0; j < len; j++)
            r[j] *= inv;
        for (int j = len; j < n; j++)
            r[j] = 0.0f;
    }
    if (t == ZC_GEMM_BF16)
        zc_f32_to_bf16(att, att16, (size_t)NH * (size_t)Mn);
    for (int j = 0; j < G; j++)
        zc_gemm_batch(t, 1, KV, false, false, M, hd, n, 1.0f, at(a, j * Mn, t), n, satt, G * Mn, v,
                      KD, skv, hd, 0.0f, out + j * hd, QD, (int64_t)M * QD, (int64_t)G * hd, g->ws,
                      g->ws_bytes);
}

void gpt2_attention_cached(float *restrict out, float *restrict att, uint16_t *restrict q16,
                           uint16_t *restrict att16, const float *restrict q, int ldq,
                           const void *k, const void *v, int p0, int M, int C, int NH,
                           const gpt2_gemm *g)
{
    gpt2_attention_cached_gqa(out, att, q16, att16, q, ldq, k, v, p0, M, NH, NH, C / NH, g);
}

/* ------------------------------------------------------------------------------------------ */
/* RMSNorm, SwiGLU and rotary positions (the Llama family's layers)                           */

void gpt2_rmsnorm_forward(float *restrict out, float *restrict rstd, const float *restrict inp,
                          const float *restrict weight, int N, int C, float eps)
{
    rows_out(out, (size_t)N, C);
    zc_asan_write(rstd, 4 * (size_t)N);
    zc_asan_read(inp, 4 * (size_t)N * C);
    zc_asan_read(weight, 4 * (size_t)C);
    ZC_SIMD_DISPATCH(rmsnorm_forward, out, rstd, inp, weight, N, C, eps);
}

void gpt2_rmsnorm_backward(float *restrict dinp, float *restrict dweight,
                           const float *restrict dout, const float *restrict inp,
                           const float *restrict weight, const float *restrict rstd, int N, int C)
{
    zc_asan_write(dinp, 4 * (size_t)N * C);
    zc_asan_write(dweight, 4 * (size_t)C);
    zc_asan_read(dout, 4 * (size_t)N * C);
    zc_asan_read(inp, 4 * (size_t)N * C);
    zc_asan_read(weight, 4 * (size_t)C);
    zc_asan_read(rstd, 4 * (size_t)N);
    ZC_SIMD_DISPATCH(rmsnorm_backward, dinp, dweight, dout, inp, weight, rstd, N, C);
}

void gpt2_swiglu_forward(float *restrict out, const float *restrict inp, int N, int I)
{
    zc_asan_write(out, 4 * (size_t)N * I);
    zc_asan_read(inp, 4 * (size_t)N * 2 * I);
    ZC_SIMD_DISPATCH(swiglu_forward, out, I, inp, inp + I, 2 * I, N, I);
}

void gpt2_swiglu_backward(float *restrict dinp, const float *restrict inp,
                          const float *restrict dout, int N, int I)
{
    zc_asan_write(dinp, 4 * (size_t)N * 2 * I);
    zc_asan_read(inp, 4 * (size_t)N * 2 * I);
    zc_asan_read(dout, 4 * (size_t)N * I);
    ZC_SIMD_DISPATCH(swiglu_backward, dinp, dinp + I, inp, inp + I, 2 * I, dout, I, N, I);
}

void gpt2_swiglu_forward_cols(float *out, int ldo, const float *inp, int ldi, int hidden, int N,
                              int width)
{
    zc_asan_write(out, strided_bytes(N, ldo, width));
    zc_asan_read(inp, strided_bytes(N, ldi, width));
    zc_asan_read(inp + hidden, strided_bytes(N, ldi, width));
    ZC_SIMD_DISPATCH(swiglu_forward, out, ldo, inp, inp + hidden, ldi, N, width);
}

void gpt2_swiglu_backward_cols(float *dinp, const float *inp, int ldi, int hidden,
                               const float *dout, int ldo, int N, int width)
{
    zc_asan_write(dinp, strided_bytes(N, ldi, width));
    zc_asan_write(dinp + hidden, strided_bytes(N, ldi, width));
    zc_asan_read(inp, strided_bytes(N, ldi, width));
    zc_asan_read(inp + hidden, strided_bytes(N, ldi, width));
    zc_asan_read(dout, strided_bytes(N, ldo, width));
    ZC_SIMD_DISPATCH(swiglu_backward, dinp, dinp + hidden, inp, inp + hidden, ldi, dout, ldo, N,
                     width);
}

void gpt2_rope_forward(float *restrict x, const float *restrict cosv, const float *restrict sinv,
                       int B, int T, int W, int heads, int hd)
{
    rope_ranges(x, cosv, sinv, B, T, W, heads, hd);
    ZC_SIMD_DISPATCH(rope_apply, x, cosv, sinv, B, T, W, heads, hd, 1.0f);
}

void gpt2_rope_backward(float *restrict dx, const float *restrict cosv, const float *restrict sinv,
                        int B, int T, int W, int heads, int hd)
{
    rope_ranges(dx, cosv, sinv, B, T, W, heads, hd);
    ZC_SIMD_DISPATCH(rope_apply, dx, cosv, sinv, B, T, W, heads, hd, -1.0f);
}

/* ------------------------------------------------------------------------------------------ */
/* gelu (tanh approximation)                                                                   */

void gpt2_gelu_forward(float *restrict out, const float *restrict inp, size_t N)
{
    zc_asan_write(out, 4 * N);
    zc_asan_read(inp, 4 * N);
    ZC_SIMD_DISPATCH(gelu_forward, out, inp, N);
}

void gpt2_gelu_backward(float *restrict dinp, const float *restrict inp, const float *restrict dout,
                        size_t N)
{
    zc_asan_write(dinp, 4 * N);
    zc_asan_read(inp, 4 * N);
    zc_asan_read(dout, 4 * N);
    ZC_SIMD_DISPATCH(gelu_backward, dinp, inp, dout, N);
}

/* ------------------------------------------------------------------------------------------ */
/* residual                                                                                    */

void gpt2_residual_forward(float *restrict out, const float *restrict inp1,
                           const float *restrict inp2, size_t N)
{
    zc_asan_write(out, 4 * N);
    zc_asan_read(inp1, 4 * N);
    zc_asan_read(inp2, 4 * N);
    ZC_SIMD_DISPATCH(residual_forward, out, inp1, inp2, N);
}

void gpt2_residual_backward(float *restrict dinp1, float *restrict dinp2,
                            const float *restrict dout, size_t N)
{
    zc_asan_write(dinp1, 4 * N);
    zc_asan_write(dinp2, 4 * N);
    zc_asan_read(dout, 4 * N);
    ZC_SIMD_DISPATCH(residual_backward, dinp1, dinp2, dout, N);
}

/* ------------------------------------------------------------------------------------------ */
/* softmax + cross-entropy over a padded vocabulary                                            */

void gpt2_softmax_crossentropy_forward(float *restrict losses, float *restrict probs,
                                       const float *restrict logits, const int *restrict targets,
                                       int BT, int V, int Vp)
{
    zc_asan_write(losses, 4 * (size_t)BT);
    zc_asan_write(probs, 4 * (size_t)BT * Vp);
    zc_asan_read(logits, 4 * (size_t)BT * Vp);
    zc_asan_read(targets, sizeof *targets * BT);
    ZC_SIMD_DISPATCH(softmax_crossentropy_forward, losses, probs, logits, targets, BT, V, Vp);
}

void gpt2_softmax_crossentropy_backward(float *restrict dlogits, const float *restrict dlosses,
                                        const float *restrict probs, const int *restrict targets,
                                        int BT, int V, int Vp)
{
    zc_asan_write(dlogits, 4 * (size_t)BT * Vp);
    zc_asan_read(dlosses, 4 * (size_t)BT);
    zc_asan_read(probs, 4 * (size_t)BT * Vp);
    zc_asan_read(targets, sizeof *targets * BT);
    ZC_SIMD_DISPATCH(softmax_crossentropy_backward, dlogits, dlosses, probs, targets, BT, V, Vp);
}

void gpt2_softmax_crossentropy_forward_inplace(float *restrict losses, float *x,
                                               const int *restrict targets, int BT, int V, int Vp)
{
    zc_asan_write(losses, 4 * (size_t)BT);
    zc_asan_write(x, 4 * (size_t)BT * Vp);
    zc_asan_read(targets, sizeof *targets * BT);
    ZC_SIMD_DISPATCH(softmax_crossentropy_forward_inplace, losses, x, targets, BT, V, Vp);
}

void gpt2_softmax_crossentropy_backward_inplace(float *x, const float *restrict dlosses,
                                                const int *restrict targets, int BT, int V, int Vp)
{
    zc_asan_write(x, 4 * (size_t)BT * Vp);
    zc_asan_read(dlosses, 4 * (size_t)BT);
    zc_asan_read(targets, sizeof *targets * BT);
    ZC_SIMD_DISPATCH(softmax_crossentropy_backward_inplace, x, dlosses, targets, BT, V, Vp);
}
