/* gemm.c — matrix products in fp32 or bf16 through oneDNN, or the portable path (OpenBLAS);
 * see zeroc/gemm.h.
 *
 * Why it is shaped this way:
 * - oneDNN computes in bf16 only from bf16 memory, so each product first rounds its two operands
 *   into the caller's workspace (compact copies in the operands' own orientation: the
 *   transposition is left to the memory descriptor's strides). The rounding is our
 *   zc_f32_to_bf16 (nearest even), the same the portable path and the reference use.
 * - Creating a oneDNN primitive costs far more than running one at these sizes, so primitives are
 *   kept in a small cache keyed by everything but the data pointers (a model uses a dozen shapes).
 * - fp32 products go through oneDNN too: measured on the project's machines its f32 matmul is
 *   never slower than OpenBLAS's sgemm and 2× faster where OpenBLAS picks AVX2 kernels on an
 *   AVX-512 CPU (docs/BENCHMARKS.md). The choice is by availability, never by timing, so a run
 *   computes the same bits whichever process or rank runs it.
 * - A primitive oneDNN cannot create (an ISA without any bf16 matmul) sends that shape to the
 *   portable path for good; ZEROC_GEMM=portable sends every shape there (tests, comparisons).
 * - The workspace a caller reserves is what the path this process takes needs
 *   (zc_gemm_workspace_need): oneDNN reads bf16 operands where they are, the portable path
 *   needs fp32 copies of both — for GPT-2's head on long sequences the difference is most of a
 *   GiB, which the memory check would otherwise count against the run. A call whose workspace
 *   falls short (oneDNN declining one shape after serving the probe) takes the rest from the
 *   heap for that call, so the sizes are accounting, never a condition of correctness.
 * - Many small products of one shape (attention's per-head products) are one batched oneDNN
 *   call: its 4-D memory descriptors carry the strides between the matrices, so the operands
 *   are read where they are and the call spreads over all threads.
 * - Conversions run on OpenMP threads only outside any BLAS call: OpenBLAS's pthread build must
 *   not be entered from inside an OpenMP region. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>

#include "zeroc/dtype.h"
#include "util/clock.h"
#include "zeroc/gemm.h"
#include "zeroc/status.h"

enum { CACHE = 64, PAR_MIN = 1 << 16 };

typedef struct {
    int nb0, nb1, M, N, K, ta, tb, lda, ldb, ldc; /* nb0 × nb1 products (1 × 1: one) */
    int64_t sa0, sa1, sb0, sb1, sc0, sc1;         /* a batch's strides (elements) */
    zc_gemm_type type;
    bool out16; /* C is bf16 (beta 0) */
    float alpha, beta;
    dnnl_primitive_t prim; /* NULL: oneDNN cannot; use the portable path */
    bool used;
} entry;

static struct {
    bool init, portable; /* portable: ZEROC_GEMM=portable, or no oneDNN engine */
    dnnl_engine_t eng;
    dnnl_stream_t strm;
    entry cache[CACHE];
    int next;                  /* the entry replaced when the cache is full */
    char path[96], path32[96]; /* what bf16 and fp32 products run on */
    zc_gemm_counters ctr;
} G;

zc_gemm_counters zc_gemm_get_counters(void)
{
    return G.ctr;
}

/* ZEROC_GEMM_ISA caps the instructions oneDNN may use (tests run every path the CPU offers). */
static void cap_isa(void)
{
    static const struct {
        const char *name;
        dnnl_cpu_isa_t isa;
    } caps[] = {{"avx2", dnnl_cpu_isa_avx2},
                {"avx512_core", dnnl_cpu_isa_avx512_core},
                {"avx512_core_bf16", dnnl_cpu_isa_avx512_core_bf16},
                {"avx512_core_amx", dnnl_cpu_isa_avx512_core_amx}};
    const char *env = getenv("ZEROC_GEMM_ISA");
    for (size_t i = 0; env && i < sizeof caps / sizeof *caps; i++)
        if (!strcmp(env, caps[i].name))
            dnnl_set_max_cpu_isa(caps[i].isa);
}

static void init(void)
{
    if (G.init)
        return;
    G.init = true;
    const char *env = getenv("ZEROC_GEMM");
    G.portable = env && !strcmp(env, "portable");
    cap_isa();
    if (!G.portable &&
        (dnnl_engine_create(&G.eng, dnnl_cpu, 0) != dnnl_success ||
         dnnl_stream_create(&G.strm, G.eng, dnnl_stream_default_flags) != dnnl_success))
        G.portable = true;
    snprintf(G.path, sizeof G.path, "portable (sgemm on bf16-rounded operands)");
    snprintf(G.path32, sizeof G.path32, "OpenBLAS sgemm");
}

size_t zc_gemm_workspace_bytes(int M, int N, int K)
{
    /* fp32 copies for the portable path; oneDNN's bf16 copies take half */
    return 4 * ((size_t)M * (size_t)K + (size_t)K * (size_t)N);
}

static dnnl_primitive_t primitive(zc_gemm_type t, bool ta, bool tb, int M, int N, int K, int lda,
                                  int ldb, float alpha, float beta, int ldc);

/* A typical linear layer's primitive of type t (NULL: products of type t take the portable
 * path here); making it names the implementation in G.path / G.path32. */
static dnnl_primitive_t probe(zc_gemm_type t)
{
    init();
    return G.portable ? NULL : primitive(t, false, true, 64, 256, 256, 256, 256, 1.0f, 0.0f, 256);
}

/* Whether bf16 products run on oneDNN here. */
static bool bf16_native(void)
{
    return probe(ZC_GEMM_BF16) != NULL;
}

size_t zc_gemm_workspace_need(zc_gemm_operands ops, int M, int N, int K)
{
    const size_t MK = (size_t)M * (size_t)K, KN = (size_t)K * (size_t)N, MN = (size_t)M * N;
    if (!bf16_native())
        return zc_gemm_workspace_bytes(M, N, K) + (ops == ZC_GEMM_OPS_AB16_C16 ? 4 * MN : 0);
    switch (ops) {
    case ZC_GEMM_OPS_F32: return 2 * (MK + KN); /* both operands' bf16 copies */
    case ZC_GEMM_OPS_B16: return 2 * MK;        /* A's */
    default: return 0;                          /* read where they are; C16 is written by oneDNN */
    }
}

/* The operands' copies: the caller's workspace when it holds `need` bytes, else a heap block
 * for this call, freed by scratch_done. A caller sizes its workspace by zc_gemm_workspace_need,
 * so the heap serves only a shape oneDNN declined after serving the probe (or a caller that
 * sized by another operand form). */
static void *scratch(void *workspace, size_t workspace_bytes, size_t need)
{
    if (workspace && workspace_bytes >= need)
        return workspace;
    void *p = malloc(need);
    if (!p) {
        fprintf(stderr,
                "zeroc: out of memory for a portable bf16 product's copies (%zu bytes): oneDNN "
                "declined this shape\n",
                need);
        abort();
    }
    return p;
}

static void scratch_done(void *p, const void *workspace)
{
    if (p != workspace)
        free(p);
}

/* rows × cols of a row-major matrix with leading dimension ld, rounded to bf16 (compact) or to
 * bf16-and-back (fp32, compact). */
static void round_rows(const float *x, int rows, int cols, int ld, void *out, bool to_fp32)
{
    const size_t n = (size_t)rows * (size_t)cols;
#pragma omp parallel for schedule(static) if (n >= PAR_MIN)
    for (int r = 0; r < rows; r++) {
        const float *src = x + (size_t)r * (size_t)ld;
        if (!to_fp32) {
            zc_f32_to_bf16(src, (uint16_t *)out + (size_t)r * cols, (size_t)cols);
            continue;
        }
        uint16_t h[1024];
        float *dst = (float *)out + (size_t)r * cols;
        for (int c = 0; c < cols; c += 1024) {
            int k = cols - c < 1024 ? cols - c : 1024;
            zc_f32_to_bf16(src + c, h, (size_t)k);
            zc_bf16_to_f32(h, dst + c, (size_t)k);
        }
    }
}

/* rows × cols of bf16 bits with leading dimension ld, widened (exactly) into compact fp32. */
static void widen_rows(const uint16_t *x, int rows, int cols, int ld, float *out)
{
    for (int r = 0; r < rows; r++)
        zc_bf16_to_f32(x + (size_t)r * ld, out + (size_t)r * cols, (size_t)cols);
}

static void sgemm(bool ta, bool tb, int M, int N, int K, float alpha, const float *A, int lda,
                  const float *B, int ldb, float beta, float *C, int ldc)
{
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N,
                K, alpha, A, lda, B, ldb, beta, C, ldc);
}

/* A batch of nb0 × nb1 products and the strides (elements) between its operands' matrices. */
typedef struct {
    int nb0, nb1;
    int64_t sa0, sa1, sb0, sb1, sc0, sc1;
} batch_dims;

/* The oneDNN primitive for this batch of products (created on first use; NULL if oneDNN cannot),
 * with the leading dimensions of the memory it will read: the operands themselves, or their
 * compact bf16 copies; out16: C is bf16 rather than fp32. */
static dnnl_primitive_t primitive_batch(zc_gemm_type t, batch_dims batch, bool ta, bool tb, int M,
                                        int N, int K, int lda, int ldb, float alpha, float beta,
                                        int ldc, bool out16)
{
    const int nb0 = batch.nb0, nb1 = batch.nb1;
    for (int i = 0; i < CACHE; i++) {
        entry *c = &G.cache[i];
        if (c->used && c->type == t && c->out16 == out16 && c->nb0 == nb0 && c->nb1 == nb1 &&
            c->sa0 == batch.sa0 && c->sa1 == batch.sa1 && c->sb0 == batch.sb0 &&
            c->sb1 == batch.sb1 && c->sc0 == batch.sc0 && c->sc1 == batch.sc1 && c->M == M &&
            c->N == N && c->K == K && c->ta == ta && c->tb == tb && c->lda == lda &&
            c->ldb == ldb && c->ldc == ldc && c->alpha == alpha && c->beta == beta)
            return c->prim;
    }
    entry *c = &G.cache[G.next];
    G.next = (G.next + 1) % CACHE;
    if (c->used && c->prim)
        dnnl_primitive_destroy(c->prim);
    *c = (entry){.nb0 = nb0,
                 .nb1 = nb1,
                 .sa0 = batch.sa0,
                 .sa1 = batch.sa1,
                 .sb0 = batch.sb0,
                 .sb1 = batch.sb1,
                 .sc0 = batch.sc0,
                 .sc1 = batch.sc1,
                 .M = M,
                 .N = N,
                 .K = K,
                 .ta = ta,
                 .tb = tb,
                 .lda = lda,
                 .ldb = ldb,
                 .ldc = ldc,
                 .type = t,
                 .out16 = out16,
                 .alpha = alpha,
                 .beta = beta,
                 .used = true};
    const dnnl_data_type_t in = t == ZC_GEMM_BF16 ? dnnl_bf16 : dnnl_f32;
    /* one product: 2-D; a batch: 4-D, the (nb0, nb1) dimensions at the batch's strides */
    const int nd = nb0 * nb1 > 1 ? 4 : 2;
    dnnl_dims_t ad = {nb0, nb1, M, K}, bd = {nb0, nb1, K, N}, cd = {nb0, nb1, M, N};
    dnnl_dims_t as = {batch.sa0, batch.sa1, ta ? 1 : lda, ta ? lda : 1},
                bs = {batch.sb0, batch.sb1, tb ? 1 : ldb, tb ? ldb : 1},
                cs = {batch.sc0, batch.sc1, ldc, 1};
    dnnl_memory_desc_t amd, bmd, cmd;
    dnnl_matmul_desc_t md;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_primitive_desc_t pd = NULL;
    const int o = 4 - nd; /* the 2-D form is the last two dimensions */
    bool ok = dnnl_memory_desc_init_by_strides(&amd, nd, ad + o, in, as + o) == dnnl_success &&
              dnnl_memory_desc_init_by_strides(&bmd, nd, bd + o, in, bs + o) == dnnl_success &&
              dnnl_memory_desc_init_by_strides(&cmd, nd, cd + o, out16 ? dnnl_bf16 : dnnl_f32,
                                               cs + o) == dnnl_success &&
              dnnl_matmul_desc_init(&md, &amd, &bmd, NULL, &cmd) == dnnl_success &&
              dnnl_primitive_attr_create(&attr) == dnnl_success;
    if (ok && alpha != 1.0f)
        ok = dnnl_primitive_attr_set_output_scales(attr, 1, 0, &alpha) == dnnl_success;
    if (ok && beta != 0.0f)
        ok = dnnl_post_ops_create(&po) == dnnl_success &&
             dnnl_post_ops_append_sum(po, beta) == dnnl_success &&
             dnnl_primitive_attr_set_post_ops(attr, po) == dnnl_success;
    if (ok)
        ok = dnnl_primitive_desc_create(&pd, &md, attr, G.eng, NULL) == dnnl_success &&
             dnnl_primitive_create(&c->prim, pd) == dnnl_success;
    if (ok) {
        const char *impl = NULL;
        if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success &&
            impl)
            snprintf(t == ZC_GEMM_BF16 ? G.path : G.path32, sizeof G.path, "oneDNN %s", impl);
    } else {
        c->prim = NULL;
    }
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    if (po)
        dnnl_post_ops_destroy(po);
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    return c->prim;
}

static dnnl_primitive_t primitive_out(zc_gemm_type t, bool ta, bool tb, int M, int N, int K,
                                      int lda, int ldb, float alpha, float beta, int ldc,
                                      bool out16)
{
    return primitive_batch(t, (batch_dims){1, 1, 0, 0, 0, 0, 0, 0}, ta, tb, M, N, K, lda, ldb,
                           alpha, beta, ldc, out16);
}

static dnnl_primitive_t primitive(zc_gemm_type t, bool ta, bool tb, int M, int N, int K, int lda,
                                  int ldb, float alpha, float beta, int ldc)
{
    return primitive_out(t, ta, tb, M, N, K, lda, ldb, alpha, beta, ldc, false);
}

/* Runs a primitive on A, B (as it was created for) and C. */
static void execute(dnnl_primitive_t prim, const void *A, const void *B, void *C)
{
    const dnnl_memory_desc_t *amd, *bmd, *cmd;
    const_dnnl_primitive_desc_t pd;
    dnnl_memory_t am = NULL, bm = NULL, cm = NULL;
    bool ok = dnnl_primitive_get_primitive_desc(prim, &pd) == dnnl_success &&
              (amd = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0)) &&
              (bmd = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0)) &&
              (cmd = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0)) &&
              dnnl_memory_create(&am, amd, G.eng, (void *)A) == dnnl_success &&
              dnnl_memory_create(&bm, bmd, G.eng, (void *)B) == dnnl_success &&
              dnnl_memory_create(&cm, cmd, G.eng, C) == dnnl_success;
    dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}};
    ok = ok && dnnl_primitive_execute(prim, G.strm, 3, args) == dnnl_success &&
         dnnl_stream_wait(G.strm) == dnnl_success;
    ZC_ASSERT(ok); /* a primitive that was created runs: anything else is a programmer error */
    dnnl_memory_destroy(am);
    dnnl_memory_destroy(bm);
    dnnl_memory_destroy(cm);
}

static void gemm(zc_gemm_type t, bool ta, bool tb, int M, int N, int K, float alpha, const float *A,
                 int lda, const float *B, int ldb, float beta, float *C, int ldc, void *workspace,
                 size_t workspace_bytes)
{
    dnnl_primitive_t prim =
        G.portable ? NULL
        : t == ZC_GEMM_F32
            ? primitive(t, ta, tb, M, N, K, lda, ldb, alpha, beta, ldc)
            : primitive(t, ta, tb, M, N, K, ta ? M : K, tb ? K : N, alpha, beta, ldc);
    if (t == ZC_GEMM_F32) {
        if (prim)
            execute(prim, A, B, C);
        else
            sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    const int arows = ta ? K : M, acols = ta ? M : K, brows = tb ? N : K, bcols = tb ? K : N;
    if (!prim) { /* round into fp32 copies, then sgemm */
        float *a = scratch(workspace, workspace_bytes, zc_gemm_workspace_bytes(M, N, K)),
              *b = a + (size_t)M * (size_t)K;
        round_rows(A, arows, acols, lda, a, true);
        round_rows(B, brows, bcols, ldb, b, true);
        sgemm(ta, tb, M, N, K, alpha, a, acols, b, bcols, beta, C, ldc);
        scratch_done(a, workspace);
        return;
    }
    uint16_t *a = scratch(workspace, workspace_bytes,
                          2 * ((size_t)M * (size_t)K + (size_t)K * (size_t)N)),
             *b = a + (size_t)M * (size_t)K;
    round_rows(A, arows, acols, lda, a, false);
    round_rows(B, brows, bcols, ldb, b, false);
    execute(prim, a, b, C);
    scratch_done(a, workspace);
}

static void gemm_b16(bool ta, bool tb, int M, int N, int K, float alpha, const float *A, int lda,
                     const uint16_t *B, int ldb, float beta, float *C, int ldc, void *workspace,
                     size_t workspace_bytes)
{
    const int arows = ta ? K : M, acols = ta ? M : K, brows = tb ? N : K, bcols = tb ? K : N;
    dnnl_primitive_t prim =
        G.portable ? NULL : primitive(ZC_GEMM_BF16, ta, tb, M, N, K, acols, ldb, alpha, beta, ldc);
    if (!prim) { /* A rounded, B widened (exactly), then sgemm */
        float *a = scratch(workspace, workspace_bytes, zc_gemm_workspace_bytes(M, N, K)),
              *b = a + (size_t)M * (size_t)K;
        round_rows(A, arows, acols, lda, a, true);
        widen_rows(B, brows, bcols, ldb, b);
        sgemm(ta, tb, M, N, K, alpha, a, acols, b, bcols, beta, C, ldc);
        scratch_done(a, workspace);
        return;
    }
    uint16_t *a = scratch(workspace, workspace_bytes, 2 * (size_t)M * (size_t)K);
    round_rows(A, arows, acols, lda, a, false);
    execute(prim, a, B, C);
    scratch_done(a, workspace);
}

static void gemm_ab16(bool ta, bool tb, int M, int N, int K, float alpha, const uint16_t *A,
                      int lda, const uint16_t *B, int ldb, float beta, float *C, int ldc,
                      void *workspace, size_t workspace_bytes)
{
    const int arows = ta ? K : M, acols = ta ? M : K, brows = tb ? N : K, bcols = tb ? K : N;
    dnnl_primitive_t prim =
        G.portable ? NULL : primitive(ZC_GEMM_BF16, ta, tb, M, N, K, lda, ldb, alpha, beta, ldc);
    if (prim) {
        execute(prim, A, B, C);
        return;
    }
    /* both widened (exactly), then sgemm */
    float *a = scratch(workspace, workspace_bytes, zc_gemm_workspace_bytes(M, N, K)),
          *b = a + (size_t)M * (size_t)K;
    widen_rows(A, arows, acols, lda, a);
    widen_rows(B, brows, bcols, ldb, b);
    sgemm(ta, tb, M, N, K, alpha, a, acols, b, bcols, beta, C, ldc);
    scratch_done(a, workspace);
}

/* ---- batches of small products (attention's per-head products) ------------------------- */

/* nb0 × nb1 products of operands read in place at the batch's strides (fp32, or bf16 bits). The
 * portable path runs each product alone: sgemm on the fp32 operands, or on bf16 operands widened
 * (exactly) into fp32 copies — zc_gemm_bf16_ab16's portable path. */
static void gemm_batch(zc_gemm_type t, batch_dims d, bool ta, bool tb, int M, int N, int K,
                       float alpha, const void *A, int lda, const void *B, int ldb, float beta,
                       float *C, int ldc, void *workspace, size_t workspace_bytes)
{
    dnnl_primitive_t prim =
        G.portable ? NULL
                   : primitive_batch(t, d, ta, tb, M, N, K, lda, ldb, alpha, beta, ldc, false);
    if (prim) {
        execute(prim, A, B, C);
        return;
    }
    const int arows = ta ? K : M, acols = ta ? M : K, brows = tb ? N : K, bcols = tb ? K : N;
    float *a = t == ZC_GEMM_F32
                   ? NULL
                   : scratch(workspace, workspace_bytes, zc_gemm_workspace_bytes(M, N, K)),
          *b = a ? a + (size_t)M * (size_t)K : NULL;
    for (int i = 0; i < d.nb0; i++)
        for (int j = 0; j < d.nb1; j++) {
            float *c = C + i * d.sc0 + j * d.sc1;
            if (t == ZC_GEMM_F32) {
                sgemm(ta, tb, M, N, K, alpha, (const float *)A + i * d.sa0 + j * d.sa1, lda,
                      (const float *)B + i * d.sb0 + j * d.sb1, ldb, beta, c, ldc);
                continue;
            }
            widen_rows((const uint16_t *)A + i * d.sa0 + j * d.sa1, arows, acols, lda, a);
            widen_rows((const uint16_t *)B + i * d.sb0 + j * d.sb1, brows, bcols, ldb, b);
            sgemm(ta, tb, M, N, K, alpha, a, acols, b, bcols, beta, c, ldc);
        }
    if (a)
        scratch_done(a, workspace);
}

/* The public entries: checks, lazy set-up, and the counters (time includes the rounding). */
static void tally_n(double t0, int n, int M, int N, int K)
{
    G.ctr.seconds += zc_now_s() - t0;
    G.ctr.flops += 2.0 * n * M * N * K;
    G.ctr.calls++;
}

static void tally(double t0, int M, int N, int K)
{
    tally_n(t0, 1, M, N, K);
}

void zc_gemm_batch(zc_gemm_type t, int nb0, int nb1, bool ta, bool tb, int M, int N, int K,
                   float alpha, const void *A, int lda, int64_t sa0, int64_t sa1, const void *B,
                   int ldb, int64_t sb0, int64_t sb1, float beta, float *C, int ldc, int64_t sc0,
                   int64_t sc1, void *workspace, size_t workspace_bytes)
{
    ZC_ASSERT(nb0 > 0 && nb1 > 0 && M > 0 && N > 0 && K > 0);
    init();
    double t0 = zc_now_s();
    gemm_batch(t, (batch_dims){nb0, nb1, sa0, sa1, sb0, sb1, sc0, sc1}, ta, tb, M, N, K, alpha, A,
               lda, B, ldb, beta, C, ldc, workspace, workspace_bytes);
    tally_n(t0, nb0 * nb1, M, N, K);
}

void zc_gemm(zc_gemm_type t, bool ta, bool tb, int M, int N, int K, float alpha, const float *A,
             int lda, const float *B, int ldb, float beta, float *C, int ldc, void *workspace,
             size_t workspace_bytes)
{
    ZC_ASSERT(M > 0 && N > 0 && K > 0);
    init();
    double t0 = zc_now_s();
    gemm(t, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, workspace, workspace_bytes);
    tally(t0, M, N, K);
}

void zc_gemm_bf16_b16(bool ta, bool tb, int M, int N, int K, float alpha, const float *A, int lda,
                      const uint16_t *B, int ldb, float beta, float *C, int ldc, void *workspace,
                      size_t workspace_bytes)
{
    ZC_ASSERT(M > 0 && N > 0 && K > 0);
    init();
    double t0 = zc_now_s();
    gemm_b16(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, workspace, workspace_bytes);
    tally(t0, M, N, K);
}

/* C (bf16) = alpha · op(A) · op(B), rounded once: oneDNN's bf16 output, or the fp32 product
 * (gemm_ab16) into the workspace past its own part, then rounded (nearest even, as
 * zc_f32_to_bf16). */
static void gemm_ab16_c16(bool ta, bool tb, int M, int N, int K, float alpha, const uint16_t *A,
                          int lda, const uint16_t *B, int ldb, uint16_t *C, int ldc,
                          void *workspace, size_t workspace_bytes)
{
    dnnl_primitive_t prim =
        G.portable ? NULL
                   : primitive_out(ZC_GEMM_BF16, ta, tb, M, N, K, lda, ldb, alpha, 0.0f, ldc, true);
    if (prim) {
        execute(prim, A, B, C);
        return;
    }
    const size_t ws = zc_gemm_workspace_bytes(M, N, K);
    void *w = scratch(workspace, workspace_bytes, ws + 4 * (size_t)M * (size_t)N);
    float *c = (float *)((char *)w + ws);
    gemm_ab16(ta, tb, M, N, K, alpha, A, lda, B, ldb, 0.0f, c, N, w, ws);
    for (int r = 0; r < M; r++)
        zc_f32_to_bf16(c + (size_t)r * N, C + (size_t)r * ldc, (size_t)N);
    scratch_done(w, workspace);
}

void zc_gemm_bf16_ab16(bool ta, bool tb, int M, int N, int K, float alpha, const uint16_t *A,
                       int lda, const uint16_t *B, int ldb, float beta, float *C, int ldc,
                       void *workspace, size_t workspace_bytes)
{
    ZC_ASSERT(M > 0 && N > 0 && K > 0);
    init();
    double t0 = zc_now_s();
    gemm_ab16(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, workspace, workspace_bytes);
    tally(t0, M, N, K);
}

void zc_gemm_bf16_ab16_c16(bool ta, bool tb, int M, int N, int K, float alpha, const uint16_t *A,
                           int lda, const uint16_t *B, int ldb, uint16_t *C, int ldc,
                           void *workspace, size_t workspace_bytes)
{
    ZC_ASSERT(M > 0 && N > 0 && K > 0);
    init();
    double t0 = zc_now_s();
    gemm_ab16_c16(ta, tb, M, N, K, alpha, A, lda, B, ldb, C, ldc, workspace, workspace_bytes);
    tally(t0, M, N, K);
}

const char *zc_gemm_path(zc_gemm_type t)
{
    probe(t);
    return t == ZC_GEMM_BF16 ? G.path : G.path32;
}

/* x rounded to bf16 (the scalar reference rounding) and widened back */
static float bf16_round(float x)
{
    uint32_t u = (uint32_t)zc_f32_to_bf16_ref(x) << 16;
    float y;
    memcpy(&y, &u, sizeof y);
    return y;
}

void zc_gemm_bf16_ref(bool ta, bool tb, int M, int N, int K, float alpha, const float *A, int lda,
                      const float *B, int ldb, float beta, float *C, int ldc)
{
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0.0;
            for (int k = 0; k < K; k++) {
                float a = ta ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k];
                float b = tb ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j];
                s += (double)bf16_round(a) * (double)bf16_round(b);
            }
            float *c = &C[(size_t)i * ldc + j];
            *c = (float)((double)alpha * s + (beta != 0.0f ? (double)beta * *c : 0.0));
        }
}
