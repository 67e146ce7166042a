/* test_gemm.c — the matrix products (zeroc/gemm.h): fp32 and bf16, every transposition, alpha,
 * beta 0 and 1, leading dimensions wider than the rows, odd and GPT-2-like sizes. Each result is
 * held to a double-precision reference of the same operands (bf16-rounded for bf16) within the
 * bound of fp32 accumulation: |C − ref| ≤ (K + 2) · 2⁻²³ · (|alpha| Σ|a·b| + |beta·C₀|) — each of
 * the K additions and the two scalings rounds once at most by 2⁻²⁴ of a partial sum no larger
 * than that. bf16 must really round: its distance from the unrounded product is above 1e-4 of
 * the product's largest element (bf16 keeps 8 bits; fp32 rounding alone stays near 1e-7).
 * Operands given as bf16 bits give the bits of the product that rounds them itself, and a bf16
 * output those bits rounded once.
 * Run once as it is (oneDNN where the CPU allows) and once with ZEROC_GEMM=portable. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "zeroc/dtype.h"
#include "zeroc/gemm.h"
#include "zeroc/rng.h"

static void fill(float *x, size_t n, uint64_t stream)
{
    for (size_t i = 0; i < n; i++)
        x[i] = zc_rng_normal(11, stream, i);
}

/* Σ|a·b| for C[i][j], of the operands as given (the bound uses them unrounded: bf16 rounding
 * changes each by under 2⁻⁸ relative, inside the slack of the factor below) */
static double abs_dot(bool ta, bool tb, int K, const float *A, int lda, const float *B, int ldb,
                      int i, int j)
{
    double s = 0;
    for (int k = 0; k < K; k++) {
        float a = ta ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k];
        float b = tb ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j];
        s += fabs((double)a * b);
    }
    return s;
}

static void fp32_ref(bool ta, bool tb, int M, int N, int K, float alpha, const float *A, int lda,
                     const float *B, int ldb, float beta, float *C, int ldc)
{
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0;
            for (int k = 0; k < K; k++)
                s += (double)(ta ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k]) *
                     (tb ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j]);
            float *c = &C[(size_t)i * ldc + j];
            *c = (float)(alpha * s + (beta != 0.0f ? (double)beta * *c : 0.0));
        }
}

/* Batches (attention's per-head products): nb0 × nb1 bf16 matrices side by side in wider rows,
 * as the heads sit in qkv, and C either a compact batch or side by side too. Each product within
 * the fp32 accumulation bound of the reference on its operands; the padding after each row
 * untouched; on the portable path, the bits of zc_gemm_bf16_ab16 on each product alone. */
static void test_batch(void)
{
    const int shapes[][3] = {{7, 13, 5}, {33, 17, 65}, {64, 64, 64}};
    const int nb0 = 3, nb1 = 4;
    for (size_t si = 0; si < 2 * sizeof shapes / sizeof *shapes; si++) {
        const zc_gemm_type ty = si % 2 ? ZC_GEMM_BF16 : ZC_GEMM_F32;
        const bool portable = !strncmp(zc_gemm_path(ty), ty ? "portable" : "OpenBLAS", 8);
        const int M = shapes[si / 2][0], N = shapes[si / 2][1], K = shapes[si / 2][2];
        size_t ws_bytes = zc_gemm_workspace_bytes(M, N, K);
        void *ws = malloc(ws_bytes), *one = malloc(ws_bytes);
        for (int layout = 0; layout < 2; layout++)
            for (int ta = 0; ta < 2; ta++)
                for (int tb = 0; tb < 2; tb++)
                    for (int ab = 0; ab < 4; ab++) {
                        const float alpha = ab & 1 ? 0.125f : 1.0f, beta = (float)(ab >> 1);
                        const int ar = ta ? K : M, ac = ta ? M : K, br = tb ? N : K,
                                  bc = tb ? K : N;
                        const int lda = nb1 * ac + 3, ldb = nb1 * bc + 5;
                        const int64_t sa1 = ac, sa0 = (int64_t)ar * lda, sb1 = bc,
                                      sb0 = (int64_t)br * ldb;
                        const int ldc = layout ? nb1 * N + 2 : N;
                        const int64_t sc1 = layout ? N : (int64_t)M * N,
                                      sc0 = layout ? (int64_t)M * ldc : nb1 * sc1;
                        const size_t na = (size_t)nb0 * sa0, nbb = (size_t)nb0 * sb0,
                                     nc = (size_t)nb0 * sc0;
                        float *A = malloc(na * 4), *B = malloc(nbb * 4), *C0 = malloc(nc * 4);
                        float *C = malloc(nc * 4), *R = malloc(nc * 4), *P = malloc(nc * 4);
                        uint16_t *A16 = malloc(na * 2), *B16 = malloc(nbb * 2);
                        fill(A, na, 21 + si), fill(B, nbb, 22 + si), fill(C0, nc, 23 + si);
                        zc_f32_to_bf16(A, A16, na), zc_f32_to_bf16(B, B16, nbb);
                        zc_bf16_to_f32(A16, A, na), zc_bf16_to_f32(B16, B, nbb);
                        memcpy(C, C0, nc * 4), memcpy(R, C0, nc * 4), memcpy(P, C0, nc * 4);
                        zc_gemm_batch(ty, nb0, nb1, ta, tb, M, N, K, alpha,
                                      ty ? (const void *)A16 : A, lda, sa0, sa1,
                                      ty ? (const void *)B16 : B, ldb, sb0, sb1, beta, C, ldc, sc0,
                                      sc1, ws, ws_bytes);
                        double worst = 0;
                        bool bits = true;
                        for (int i = 0; i < nb0; i++)
                            for (int j = 0; j < nb1; j++) {
                                const size_t ao = (size_t)(i * sa0 + j * sa1),
                                             bo = (size_t)(i * sb0 + j * sb1),
                                             co = (size_t)(i * sc0 + j * sc1);
                                const float *a = A + ao, *b = B + bo;
                                zc_gemm_bf16_ref(ta, tb, M, N, K, alpha, a, lda, b, ldb, beta,
                                                 R + co, ldc);
                                if (ty)
                                    zc_gemm_bf16_ab16(ta, tb, M, N, K, alpha, A16 + ao, lda,
                                                      B16 + bo, ldb, beta, P + co, ldc, one,
                                                      ws_bytes);
                                else
                                    zc_gemm(ZC_GEMM_F32, ta, tb, M, N, K, alpha, a, lda, b, ldb,
                                            beta, P + co, ldc, NULL, 0);
                                for (int r = 0; r < M; r++)
                                    for (int c = 0; c < N; c++) {
                                        size_t o = co + (size_t)r * ldc + c;
                                        double bound =
                                            (K + 2) * ldexp(1.0, -23) *
                                                (fabs(alpha) *
                                                     abs_dot(ta, tb, K, a, lda, b, ldb, r, c) *
                                                     1.01 +
                                                 fabs((double)beta * C0[o])) +
                                            1e-30;
                                        double e = fabs((double)C[o] - R[o]) / bound;
                                        worst = e > worst ? e : worst;
                                        bits = bits && !memcmp(&C[o], &P[o], 4);
                                    }
                            }
                        CHECK(worst <= 1.0,
                              "%s batch %dx%d of %dx%dx%d layout %d ta %d tb %d alpha %g beta %g: "
                              "error %.3g of the fp32 accumulation bound",
                              ty ? "bf16" : "fp32", nb0, nb1, M, N, K, layout, ta, tb, alpha, beta,
                              worst);
                        CHECK(!portable || bits,
                              "%s batch %dx%dx%d ta %d tb %d (portable): not the bits of the "
                              "single products",
                              ty ? "bf16" : "fp32", M, N, K, ta, tb);
                        bool pad = true; /* everything that is no product's element: untouched */
                        if (layout)
                            for (int i = 0; i < nb0; i++)
                                for (int r = 0; r < M; r++) {
                                    const size_t o = (size_t)i * sc0 + (size_t)r * ldc;
                                    pad = pad && !memcmp(C + o + nb1 * N, C0 + o + nb1 * N, 8);
                                }
                        CHECK(pad, "batch %dx%dx%d layout %d: wrote past a row's products", M, N, K,
                              layout);
                        free(A), free(B), free(C0), free(C), free(R), free(P), free(A16), free(B16);
                    }
        free(ws), free(one);
    }
}

/* zc_gemm_workspace_need: the documented bytes for the path this run takes (oneDNN: copies of
 * the fp32 operands only; portable: fp32 copies of both, + 4·M·N for a bf16 C), and each bf16
 * entry point given exactly that many bytes (a heap block of that size, so AddressSanitizer sees
 * a write past it), or none at all (the heap makes up the difference), gives the bits it gives
 * with the any-path workspace. */
static void test_workspace_need(void)
{
    const int M = 33, N = 17, K = 65;
    const bool native = !strncmp(zc_gemm_path(ZC_GEMM_BF16), "oneDNN", 6);
    const size_t MK = (size_t)M * K, KN = (size_t)K * N, MN = (size_t)M * N,
                 any = zc_gemm_workspace_bytes(M, N, K);
    const size_t want[4] = {native ? 2 * (MK + KN) : any, native ? 2 * MK : any, native ? 0 : any,
                            native ? 0 : any + 4 * MN};
    for (int o = 0; o < 4; o++)
        CHECK(zc_gemm_workspace_need((zc_gemm_operands)o, M, N, K) == want[o],
              "workspace need of operand form %d: %zu, want %zu (%s path)", o,
              zc_gemm_workspace_need((zc_gemm_operands)o, M, N, K), want[o],
              native ? "oneDNN" : "portable");
    float *A = malloc(MK * 4), *B = malloc(KN * 4), *C[3];
    uint16_t *A16 = malloc(MK * 2), *B16 = malloc(KN * 2), *C16[3];
    fill(A, MK, 40), fill(B, KN, 41);
    zc_dtype_narrow(ZC_BF16, A, A16, MK), zc_dtype_narrow(ZC_BF16, B, B16, KN);
    void *big = malloc(any + 4 * MN);
    for (int o = 0; o < 4; o++) {
        const size_t need = zc_gemm_workspace_need((zc_gemm_operands)o, M, N, K);
        for (int v = 0; v < 3; v++) { /* any-path workspace, exactly `need`, none */
            void *ws = v == 0 ? big : v == 1 ? malloc(need ? need : 1) : NULL;
            size_t wsb = v == 0 ? any + 4 * MN : v == 1 ? need : 0;
            C[v] = calloc(MN, 4), C16[v] = calloc(MN, 2);
            if (o == ZC_GEMM_OPS_F32)
                zc_gemm(ZC_GEMM_BF16, false, false, M, N, K, 1.0f, A, K, B, N, 0.0f, C[v], N, ws,
                        wsb);
            else if (o == ZC_GEMM_OPS_B16)
                zc_gemm_bf16_b16(false, false, M, N, K, 1.0f, A, K, B16, N, 0.0f, C[v], N, ws, wsb);
            else if (o == ZC_GEMM_OPS_AB16)
                zc_gemm_bf16_ab16(false, false, M, N, K, 1.0f, A16, K, B16, N, 0.0f, C[v], N, ws,
                                  wsb);
            else
                zc_gemm_bf16_ab16_c16(false, false, M, N, K, 1.0f, A16, K, B16, N, C16[v], N, ws,
                                      wsb);
            if (v == 1)
                free(ws);
        }
        for (int v = 1; v < 3; v++)
            CHECK(!memcmp(C[v], C[0], MN * 4) && !memcmp(C16[v], C16[0], MN * 2),
                  "operand form %d with %s workspace: other bits than with the any-path one", o,
                  v == 1 ? "exactly the needed" : "no");
        for (int v = 0; v < 3; v++)
            free(C[v]), free(C16[v]);
    }
    free(big), free(A), free(B), free(A16), free(B16);
}

int main(void)
{
    printf("fp32 path: %s; bf16 path: %s\n", zc_gemm_path(ZC_GEMM_F32), zc_gemm_path(ZC_GEMM_BF16));
    const int shapes[][3] = {{1, 1, 1},     {7, 13, 5},     {33, 17, 65},
                             {64, 96, 256}, {96, 384, 192}, {16, 160, 1024}};
    const float alphas[] = {1.0f, 0.125f}, betas[] = {0.0f, 1.0f};
    size_t ws_bytes = zc_gemm_workspace_bytes(96, 384, 1024) + 4 * 96 * 384 + 64;
    void *ws = malloc(ws_bytes);
    for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
        const int M = shapes[si][0], N = shapes[si][1], K = shapes[si][2];
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++)
                for (int ab = 0; ab < 4; ab++) {
                    const float alpha = alphas[ab & 1], beta = betas[ab >> 1];
                    const int lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 5, ldc = N + 2;
                    const size_t na = (size_t)(ta ? K : M) * lda, nb = (size_t)(tb ? N : K) * ldb,
                                 nc = (size_t)M * ldc;
                    float *A = malloc(na * 4), *B = malloc(nb * 4), *C0 = malloc(nc * 4);
                    float *C = malloc(nc * 4), *R = malloc(nc * 4), *U = malloc(nc * 4);
                    fill(A, na, 1 + si), fill(B, nb, 2 + si), fill(C0, nc, 3 + si);
                    for (int t = 0; t < 2; t++) {
                        memcpy(C, C0, nc * 4), memcpy(R, C0, nc * 4), memcpy(U, C0, nc * 4);
                        zc_gemm(t ? ZC_GEMM_BF16 : ZC_GEMM_F32, ta, tb, M, N, K, alpha, A, lda, B,
                                ldb, beta, C, ldc, t ? ws : NULL, t ? ws_bytes : 0);
                        if (t)
                            zc_gemm_bf16_ref(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, R, ldc);
                        fp32_ref(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, U, ldc);
                        if (!t)
                            memcpy(R, U, nc * 4);
                        double worst = 0, apart = 0, umax = 0;
                        for (int i = 0; i < M; i++)
                            for (int j = 0; j < N; j++) {
                                size_t o = (size_t)i * ldc + j;
                                double bound =
                                    (K + 2) * ldexp(1.0, -23) *
                                        (fabs(alpha) * abs_dot(ta, tb, K, A, lda, B, ldb, i, j) *
                                             1.01 +
                                         fabs((double)beta * C0[o])) +
                                    1e-30;
                                double e = fabs((double)C[o] - R[o]) / bound;
                                worst = e > worst ? e : worst;
                                double u = fabs((double)C[o] - U[o]);
                                apart = u > apart ? u : apart;
                                umax = fabs(U[o]) > umax ? fabs(U[o]) : umax;
                            }
                        CHECK(worst <= 1.0,
                              "%s %dx%dx%d ta %d tb %d alpha %g beta %g: error "
                              "%.3g of the fp32 accumulation bound",
                              t ? "bf16" : "fp32", M, N, K, ta, tb, alpha, beta, worst);
                        /* bf16 rounds: ~2⁻⁹ per operand, where fp32 stays near 2⁻²³ */
                        if (t && K >= 5)
                            CHECK(apart > 1e-4 * umax,
                                  "bf16 %dx%dx%d ta %d tb %d: %.3g from the "
                                  "unrounded fp32 product, relative (did it round?)",
                                  M, N, K, ta, tb, apart / umax);
                        /* B given as bf16 bits (a bf16-stored weight): the same bound */
                        if (t) {
                            uint16_t *B16 = malloc(nb * 2);
                            zc_dtype_narrow(ZC_BF16, B, B16, nb);
                            float *W = malloc(nb * 4), *D = malloc(nc * 4);
                            zc_dtype_widen(ZC_BF16, B16, W, nb);
                            memcpy(D, C0, nc * 4);
                            zc_gemm_bf16_b16(ta, tb, M, N, K, alpha, A, lda, B16, ldb, beta, D, ldc,
                                             ws, ws_bytes);
                            double w16 = 0;
                            for (int i = 0; i < M; i++)
                                for (int j = 0; j < N; j++) {
                                    size_t o = (size_t)i * ldc + j;
                                    double bound =
                                        (K + 2) * ldexp(1.0, -23) *
                                            (fabs(alpha) *
                                                 abs_dot(ta, tb, K, A, lda, W, ldb, i, j) * 1.01 +
                                             fabs((double)beta * C0[o])) +
                                        1e-30;
                                    double e = fabs((double)D[o] - R[o]) / bound;
                                    w16 = e > w16 ? e : w16;
                                }
                            CHECK(w16 <= 1.0,
                                  "bf16 with bf16 B %dx%dx%d ta %d tb %d: error %.3g "
                                  "of the bound",
                                  M, N, K, ta, tb, w16);
                            /* both as bf16 bits: the bits of the product above, whose A was
                             * rounded inside (compact leading dimensions, as a caller staging
                             * its operands has them, so both run the same primitive) */
                            const int ar = ta ? K : M, ac = ta ? M : K, br = tb ? N : K,
                                      bc = tb ? K : N;
                            float *Ac = malloc((size_t)ar * ac * 4);
                            uint16_t *A16 = malloc((size_t)ar * ac * 2),
                                     *Bc16 = malloc((size_t)br * bc * 2);
                            for (int r = 0; r < ar; r++)
                                memcpy(Ac + (size_t)r * ac, A + (size_t)r * lda, (size_t)ac * 4);
                            for (int r = 0; r < br; r++)
                                memcpy(Bc16 + (size_t)r * bc, B16 + (size_t)r * ldb,
                                       (size_t)bc * 2);
                            zc_dtype_narrow(ZC_BF16, Ac, A16, (size_t)ar * ac);
                            float *E = malloc(nc * 4);
                            memcpy(D, C0, nc * 4), memcpy(E, C0, nc * 4);
                            zc_gemm_bf16_b16(ta, tb, M, N, K, alpha, Ac, ac, Bc16, bc, beta, D, ldc,
                                             ws, ws_bytes);
                            zc_gemm_bf16_ab16(ta, tb, M, N, K, alpha, A16, ac, Bc16, bc, beta, E,
                                              ldc, ws, ws_bytes);
                            CHECK(!memcmp(D, E, nc * 4),
                                  "bf16 with bf16 A and B %dx%dx%d ta %d tb %d alpha %g "
                                  "beta %g: not the bits of the product rounding A itself",
                                  M, N, K, ta, tb, alpha, beta);
                            /* and written as bf16: those bits (beta 0), rounded once */
                            uint16_t *C16 = calloc(nc, 2), *W16 = calloc(nc, 2);
                            zc_gemm_bf16_ab16(ta, tb, M, N, K, alpha, A16, ac, Bc16, bc, 0.0f, E,
                                              ldc, ws, ws_bytes);
                            zc_dtype_narrow(ZC_BF16, E, W16, nc);
                            zc_gemm_bf16_ab16_c16(ta, tb, M, N, K, alpha, A16, ac, Bc16, bc, C16,
                                                  ldc, ws, ws_bytes);
                            for (int i = 0; i < M; i++)
                                CHECK(!memcmp(C16 + (size_t)i * ldc, W16 + (size_t)i * ldc, 2 * N),
                                      "bf16 out %dx%dx%d ta %d tb %d alpha %g: row %d not the "
                                      "fp32 product's bits rounded",
                                      M, N, K, ta, tb, alpha, i);
                            free(C16), free(W16);
                            free(Ac), free(A16), free(Bc16), free(E);
                            free(B16), free(W), free(D);
                        }
                        /* columns past N in C (ldc padding) are not touched */
                        for (int i = 0; i < M; i++)
                            CHECK(!memcmp(C + (size_t)i * ldc + N, C0 + (size_t)i * ldc + N, 8),
                                  "%s: wrote past column N", t ? "bf16" : "fp32");
                    }
                    free(A), free(B), free(C0), free(C), free(R), free(U);
                }
    }
    free(ws);
    test_batch();
    test_workspace_need();
    return check_summary();
}
