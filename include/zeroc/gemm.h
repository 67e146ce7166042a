/* zeroc/gemm.h — matrix products for the models, in fp32 or in bf16.
 *
 *     C (M×N, row-major, ldc) = alpha · op(A) (M×K) · op(B) (K×N) + beta · C
 *
 * op(X) is X or Xᵀ (ta, tb: X is stored transposed, row-major, with its leading dimension). All
 * operands are fp32 in memory. ZC_GEMM_F32 is oneDNN's f32 matmul (AVX-512 or AVX2 kernels, as
 * the CPU allows; OpenBLAS's sgemm where oneDNN cannot). ZC_GEMM_BF16 rounds A and B to
 * bf16 (nearest even) and accumulates the products in fp32 — what PyTorch's CPU autocast does
 * for a linear layer — through oneDNN's matmul, which picks the CPU's matrix units at run time:
 * AMX tiles, AVX512_BF16 dot products, or AVX-512/AVX2 arithmetic on widened values. Where
 * oneDNN cannot serve a product, or with ZEROC_GEMM=portable in the environment, the portable
 * path rounds the operands into fp32 copies and calls sgemm: the same rounding, another
 * accumulation order (ZEROC_GEMM=portable also sends fp32 products to sgemm).
 * ZEROC_GEMM_ISA=avx2|avx512_core|avx512_core_bf16|avx512_core_amx caps the instructions oneDNN may
 * use (to test each path a CPU offers). The bf16 forms take a caller-owned workspace of
 * zc_gemm_workspace_need bytes (zc_gemm_workspace_bytes: enough on any path).
 *
 * Results are deterministic for a given shape, path and thread count (no atomics in either
 * library's fp32 accumulation). Not thread-safe: call from one thread (each call may use all of
 * OpenMP's / OpenBLAS's threads).
 *
 *     size_t ws = zc_gemm_workspace_bytes(M, N, K);
 *     zc_gemm(ZC_GEMM_BF16, false, true, M, N, K, 1.0f, x, K, w, K, 0.0f, y, N, buf, ws);
 */
#ifndef ZEROC_GEMM_H
#define ZEROC_GEMM_H

#include "zeroc/api.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { ZC_GEMM_F32 = 0, ZC_GEMM_BF16 } zc_gemm_type;

/* Bytes of workspace a bf16 product of this shape may need on any path (the portable path's
 * fp32 copies of both operands; 0 for fp32). zc_gemm_bf16_ab16_c16 needs 4·M·N more. */
ZC_API size_t zc_gemm_workspace_bytes(int M, int N, int K);

/* The bf16 entry points' operand forms. */
typedef enum {
    ZC_GEMM_OPS_F32 = 0,  /* zc_gemm: A and B fp32 */
    ZC_GEMM_OPS_B16,      /* zc_gemm_bf16_b16: B bf16 */
    ZC_GEMM_OPS_AB16,     /* zc_gemm_bf16_ab16, zc_gemm_batch: A and B bf16 */
    ZC_GEMM_OPS_AB16_C16, /* zc_gemm_bf16_ab16_c16: A, B and C bf16 */
} zc_gemm_operands;

/* Bytes of workspace a bf16 product of this shape and operand form needs on the path products
 * take in this process: with oneDNN, the bf16 copies of the fp32 operands only (2·M·K + 2·K·N
 * for zc_gemm, 2·M·K for zc_gemm_bf16_b16, none for bf16 operands); on the portable path,
 * zc_gemm_workspace_bytes (+ 4·M·N for C16). A call given less (a shape oneDNN declines after
 * serving others) takes the difference from the heap for that call. */
ZC_API size_t zc_gemm_workspace_need(zc_gemm_operands ops, int M, int N, int K);

ZC_API void zc_gemm(zc_gemm_type t, bool ta, bool tb, int M, int N, int K, float alpha,
                    const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc,
                    void *workspace, size_t workspace_bytes);

/* A bf16 product whose B is already bf16 (the bits, e.g. a model's bf16-stored weights): used
 * as it is, not rounded again; A is rounded as by zc_gemm. The same result as zc_gemm on B
 * widened to fp32. */
ZC_API void zc_gemm_bf16_b16(bool ta, bool tb, int M, int N, int K, float alpha, const float *A,
                             int lda, const uint16_t *B, int ldb, float beta, float *C, int ldc,
                             void *workspace, size_t workspace_bytes);

/* A bf16 product of two operands already bf16 (e.g. a gradient the caller rounded once to feed
 * both of a linear layer's backward products): neither is rounded again. The same result as
 * zc_gemm_bf16_b16 on A widened to fp32. The workspace (zc_gemm_workspace_bytes) is written by
 * the portable path only: oneDNN reads the operands where they are. */
ZC_API void zc_gemm_bf16_ab16(bool ta, bool tb, int M, int N, int K, float alpha, const uint16_t *A,
                              int lda, const uint16_t *B, int ldb, float beta, float *C, int ldc,
                              void *workspace, size_t workspace_bytes);

/* The same product written as bf16 (beta 0): C = alpha · op(A) · op(B) rounded once to bf16,
 * nearest even — the bits of zc_gemm_bf16_ab16 into fp32 then zc_f32_to_bf16. Workspace:
 * zc_gemm_workspace_bytes(M, N, K) + 4·M·N bytes (the portable path's fp32 result). */
ZC_API void zc_gemm_bf16_ab16_c16(bool ta, bool tb, int M, int N, int K, float alpha,
                                  const uint16_t *A, int lda, const uint16_t *B, int ldb,
                                  uint16_t *C, int ldc, void *workspace, size_t workspace_bytes);

/* nb0 × nb1 products of one shape in one call — attention's (batch, head) products:
 *
 *     C[i,j] = alpha · op(A[i,j]) · op(B[i,j]) + beta · C[i,j],   X[i,j] = X + i·sx0 + j·sx1
 *
 * (offsets in elements; each matrix row-major with its leading dimension). A and B are read
 * where they are (e.g. the heads side by side in qkv): fp32 for ZC_GEMM_F32; for ZC_GEMM_BF16
 * they are bf16 bits already (the caller rounds once), the products accumulate in fp32. C is
 * fp32. The same result as zc_gemm / zc_gemm_bf16_ab16 on each product alone up to the
 * accumulation order; the portable path is exactly that. Workspace: none for fp32; for bf16,
 * zc_gemm_workspace_bytes(M, N, K) (the portable path's copies). */
ZC_API void zc_gemm_batch(zc_gemm_type t, int nb0, int nb1, bool ta, bool tb, int M, int N, int K,
                          float alpha, const void *A, int lda, int64_t sa0, int64_t sa1,
                          const void *B, int ldb, int64_t sb0, int64_t sb1, float beta, float *C,
                          int ldc, int64_t sc0, int64_t sc1, void *workspace,
                          size_t workspace_bytes);
/* Since the process started: products, their FLOPs (2·M·N·K) and the seconds spent in them,
 * operands' rounding included. */
typedef struct {
    int64_t calls;
    double flops, seconds;
} zc_gemm_counters;
ZC_API zc_gemm_counters zc_gemm_get_counters(void);

/* The path products of type t take on this machine: "oneDNN <implementation>" (e.g. "oneDNN
 * brg:avx512_core_bf16", "oneDNN brg:avx512_core_amx"), "OpenBLAS sgemm" or "portable (sgemm
 * on bf16-rounded operands)". */
ZC_API const char *zc_gemm_path(zc_gemm_type t);

/* The reference the tests hold both paths to: op(A)·op(B) of the bf16-rounded operands,
 * accumulated in double, then alpha·(that) + beta·C rounded to fp32. Slow. */
ZC_API void zc_gemm_bf16_ref(bool ta, bool tb, int M, int N, int K, float alpha, const float *A,
                             int lda, const float *B, int ldb, float beta, float *C, int ldc);

#ifdef __cplusplus
}
#endif

#endif
