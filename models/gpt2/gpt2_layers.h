/* gpt2_layers.h — the GPT-2 layer kernels: forward/backward pairs over plain float buffers.
 *
 * Pure math, no engine and no allocation: the caller owns and passes every buffer, so gpt2.c can
 * carve activations from one size table and the kernels can be tested alone against finite
 * differences (tests/test_gpt2_layers.c). Signatures mirror llm.c's train_gpt2.c: outputs first,
 * each backward takes the forward's arguments plus the gradient buffers, and every tensor carries
 * its shape. Weights are [out, in] row-major (llm.c's layout). Vp is the padded vocabulary.
 *
 * Conventions a caller must know:
 *   - Every backward ACCUMULATES (+=) into its parameter gradients and input gradients (dinp,
 *     dqkv, dwte, ...); the caller zeroes them once per step. Exceptions, which OVERWRITE:
 *     softmax_crossentropy_backward's dlogits, and attention_backward's datt and dpreatt (pure
 *     scratch, nothing else contributes to them; they need no zeroing).
 *   - No buffer may overlap another argument of the same call (pointers are restrict).
 *   - Results are deterministic for a fixed OpenMP/OpenBLAS thread count: no atomics, every
 *     reduction has a fixed order (the reductions over rows written here — LayerNorm and bias
 *     gradients, the embedding scatter-add — do not even depend on the thread count; the
 *     products' results follow oneDNN's, or on the portable path OpenBLAS's, partitioning).
 *   - Products (zc_gemm*) are only called outside OpenMP parallel regions (the portable path's
 *     OpenBLAS is the pthread build); call these kernels from a serial context.
 *   - Preconditions (not checked): token ids in [0, Vp) (encoder) and targets in [0, V) (loss);
 *     T ≤ maxT; C divisible by NH; all dimensions ≥ 1.
 */
#ifndef ZEROC_MODELS_GPT2_LAYERS_H
#define ZEROC_MODELS_GPT2_LAYERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zeroc/gemm.h"

/* out[b,t,:] = wte[inp[b,t],:] + wpe[t,:] (wpe and wpe16 NULL: rotary positions, the row alone).
 * In bf16 mode wte and wpe may come as bf16 bits (wte16, wpe16: the engine's stored parameters,
 * only the rows used widened, not the whole tables; wte / wpe are then unused and may be NULL);
 * otherwise wte16 and wpe16 are NULL. */
void gpt2_encoder_forward(float *restrict out,            // (B,T,C)
                          const int *restrict inp,        // (B,T) token ids in [0, Vp)
                          const float *restrict wte,      // (Vp,C)
                          const uint16_t *restrict wte16, // (Vp,C) bf16, or NULL
                          const float *restrict wpe,      // (maxT,C)
                          const uint16_t *restrict wpe16, // (maxT,C) bf16, or NULL
                          int B, int T, int C);
/* Scatter-add of dout into the rows of dwte named by inp, and into dwpe (position order; NULL
 * when the model has no learned positions). */
void gpt2_encoder_backward(float *restrict dwte,       // (Vp,C) accumulated
                           float *restrict dwpe,       // (maxT,C) accumulated (rows < T)
                           const float *restrict dout, // (B,T,C)
                           const int *restrict inp,    // (B,T)
                           int B, int T, int C);

/* The same over a tile of the vocabulary (rotary positions: no wpe): the positions whose token
 * lies in [row0, row0 + rows) get that row of the tile (wte or wte16: rows × C, the tile's first
 * row first); the others are left as they are. */
void gpt2_encoder_forward_rows(float *restrict out, const int *restrict inp, int row0, int rows,
                               const float *restrict wte, const uint16_t *restrict wte16, int BT,
                               int C);
/* Learned positions added to what gpt2_encoder_forward_rows wrote: out[b,t,:] += wpe[t,:] (wpe
 * as fp32, or wpe16 as bf16 bits) — with the rows, the bits of gpt2_encoder_forward (one fp32
 * add of the two). */
void gpt2_encoder_forward_pos(float *restrict out, const float *restrict wpe,
                              const uint16_t *restrict wpe16, int B, int T, int C);
/* Their gradient added into dwpe (T × C, fp32): for each position the batch's dout in batch
 * order — the adds gpt2_encoder_backward gives dwpe. */
void gpt2_encoder_backward_pos(float *restrict dwpe, const float *restrict dout, int B, int T,
                               int C);
/* The tile's scatter-add: the rows of dwte (rows × C) named by the tokens in its range, positions
 * in order — each row receives exactly the adds gpt2_encoder_backward gives it. */
void gpt2_encoder_backward_rows(float *restrict dwte, const float *restrict dout,
                                const int *restrict inp, int row0, int rows, int BT, int C);
/* The same rounded to bf16, for an engine that takes a gradient in bf16 (zc_engine_grad16): every
 * element of dwte16 (rows × C) is written — each row named by a token in the range gets the fp32
 * sum of its positions' dout in position order, rounded nearest even, every other row zeros: the
 * bits of gpt2_encoder_backward_rows into a zeroed fp32 buffer, rounded, without the fp32 buffer
 * of the whole table. order: room for BT elements (scratch; 8 bytes each, 4-byte aligned). */
typedef struct {
    uint32_t row, pos;
} gpt2_row_pos;
void gpt2_encoder_backward_rows16(uint16_t *restrict dwte16, const float *restrict dout,
                                  const int *restrict inp, int row0, int rows, int BT, int C,
                                  gpt2_row_pos *restrict order);
/* A tied table's rows added to the gradient the head's product wrote in bf16 (dwte16, rows × C):
 * each row named by a token in the range becomes its value widened plus its positions' dout in
 * position order (fp32), rounded once — the adds of gpt2_encoder_backward_rows onto the head's
 * gradient rounded to bf16; every other row is left as the head wrote it. order: as above. */
void gpt2_encoder_backward_rows16_add(uint16_t *restrict dwte16, const float *restrict dout,
                                      const int *restrict inp, int row0, int rows, int BT, int C,
                                      gpt2_row_pos *restrict order);
/* Learned positions' gradient in bf16 (dwpe16: T × C, overwritten): position t gets the fp32 sum
 * over the batch of dout[b, t] in batch order from zero, rounded once — the bits of
 * gpt2_encoder_backward's dwpe into a zeroed fp32 buffer, rounded. */
void gpt2_encoder_backward_pos16(uint16_t *restrict dwpe16, const float *restrict dout, int B,
                                 int T, int C);

/* Per row: out = (inp - mean) * rstd * weight + bias, biased variance, eps 1e-5. mean and rstd
 * are saved for the backward. */
void gpt2_layernorm_forward(float *restrict out,          // (N,C)
                            float *restrict mean,         // (N)
                            float *restrict rstd,         // (N)
                            const float *restrict inp,    // (N,C)
                            const float *restrict weight, // (C)
                            const float *restrict bias,   // (C)
                            int N, int C);
void gpt2_layernorm_backward(float *restrict dinp,         // (N,C) accumulated
                             float *restrict dweight,      // (C) accumulated, NULL: frozen
                             float *restrict dbias,        // (C) accumulated (with dweight)
                             const float *restrict dout,   // (N,C)
                             const float *restrict inp,    // (N,C)
                             const float *restrict weight, // (C)
                             const float *restrict mean,   // (N) from the forward
                             const float *restrict rstd,   // (N) from the forward
                             int N, int C);

/* How a linear layer's products run: fp32, or bf16 (operands rounded to bf16, fp32
 * accumulation; zeroc/gemm.h) with a workspace of gpt2_matmul_workspace_bytes. NULL: fp32. */
typedef struct {
    zc_gemm_type type;
    void *ws;
    size_t ws_bytes;
} gpt2_gemm;

/* Workspace bytes the bf16 products of a linear layer C → OC over N rows need. */
size_t gpt2_matmul_workspace_bytes(int N, int C, int OC);

/* out = inp · weightᵀ + bias (one product). In bf16 mode the weight may come as bf16 bits
 * (weight16, e.g. the engine's stored parameters: not rounded again; weight is then unused and
 * may be NULL); otherwise weight16 is NULL. */
void gpt2_matmul_forward(float *restrict out,          // (N,OC)
                         const float *restrict inp,    // (N,C)
                         const float *restrict weight, // (OC,C)
                         const uint16_t *weight16,     // (OC,C) bf16, or NULL
                         const float *restrict bias,   // (OC) or NULL
                         int N, int C, int OC, const gpt2_gemm *g);
/* A block of an untied head: out's columns [0, OC) with leading dimension ldo (the logits' row
 * of the whole vocabulary) = inp · weightᵀ, no bias. */
void gpt2_matmul_forward_ld(float *restrict out, int ldo, const float *restrict inp,
                            const float *restrict weight, const uint16_t *weight16, int N, int C,
                            int OC, const gpt2_gemm *g);
/* Its backward: dinp += dout · weight and dweight (over)written as gpt2_matmul_backward does,
 * dout's columns [0, OC) with leading dimension ldd. In bf16 dout's block is rounded to bf16
 * row by row: the same bits as rounding the whole matrix. */
void gpt2_matmul_backward_ld(float *restrict dinp, float *restrict dweight, uint16_t *dweight16,
                             const float *restrict dout, int ldd, const float *restrict inp,
                             const float *restrict weight, const uint16_t *weight16, int N, int C,
                             int OC, bool dweight_fresh, const gpt2_gemm *g);

/* The same products with every operand strided (a column block of a wider matrix, as the
 * Llama family's MLP runs in blocks of its hidden width): out (N,OC; ldo) = inp (N,C; ldi) ·
 * weight (OC,C; ldw)ᵀ, added to out when accumulate (no bias); and the backward, dinp (N,C;
 * lddi) += dout (N,OC; ldd) · weight, dweight / dweight16 (OC,C; ldw) written as
 * gpt2_matmul_backward does. The same bits as the whole matrices' products of these shapes. */
void gpt2_matmul_forward_strided(float *restrict out, int ldo, const float *restrict inp, int ldi,
                                 const float *restrict weight, const uint16_t *weight16, int ldw,
                                 int N, int C, int OC, bool accumulate, const gpt2_gemm *g);
void gpt2_matmul_backward_strided(float *restrict dinp, int lddi, float *restrict dweight,
                                  uint16_t *dweight16, const float *restrict dout, int ldd,
                                  const float *restrict inp, int ldi, const float *restrict weight,
                                  const uint16_t *weight16, int ldw, int N, int C, int OC,
                                  bool dweight_fresh, const gpt2_gemm *g);

/* dweight is accumulated into, or overwritten when dweight_fresh (its buffer then need not hold
 * anything: zc_engine_grad_fresh); dweight and dweight16 both NULL: a frozen weight, whose
 * gradient is not computed. In bf16 (weight16 given) the gradient may instead be written
 * as bf16 bits, overwritten, into dweight16 (zc_engine_grad16; dweight is then unused). */
void gpt2_matmul_backward(float *restrict dinp,         // (N,C) accumulated
                          float *restrict dweight,      // (OC,C) accumulated or overwritten
                          uint16_t *dweight16,          // (OC,C) bf16 overwritten, or NULL
                          float *restrict dbias,        // (OC) accumulated, or NULL
                          const float *restrict dout,   // (N,OC)
                          const float *restrict inp,    // (N,C)
                          const float *restrict weight, // (OC,C)
                          const uint16_t *weight16,     // (OC,C) bf16, or NULL
                          int N, int C, int OC, bool dweight_fresh, const gpt2_gemm *g);

/* Causal multi-head self-attention over a fused QKV projection. Row (b,t) of qkv is
 * [q | k | v], each C wide; head h uses channels [h·hs, (h+1)·hs) of each, hs = C/NH.
 * preatt = q·kᵀ/√hs and att = softmax(preatt) over t2 ≤ t; out[b,t,h·hs:] = Σ att·v.
 * Entries above the diagonal (t2 > t) of preatt and att are written as 0. The products are fp32
 * (g NULL or fp32), or bf16 with fp32 accumulation (g bf16, its workspace at least
 * gpt2_attention_workspace_bytes); the softmax is fp32 in both. */
void gpt2_attention_forward(float *restrict out,       // (B,T,C)
                            float *restrict preatt,    // (B,NH,T,T)
                            float *restrict att,       // (B,NH,T,T)
                            const float *restrict qkv, // (B,T,3C)
                            int B, int T, int C, int NH, const gpt2_gemm *g);
/* Workspace bytes attention's bf16 products need. */
size_t gpt2_attention_workspace_bytes(int B, int T, int C, int NH);
/* dqkv is accumulated. datt and dpreatt are scratch, OVERWRITTEN (0 above the diagonal). att
 * must be the forward's (zero above the diagonal). */
void gpt2_attention_backward(float *restrict dqkv,       // (B,T,3C) accumulated
                             float *restrict dpreatt,    // (B,NH,T,T) scratch, overwritten
                             float *restrict datt,       // (B,NH,T,T) scratch, overwritten
                             const float *restrict dout, // (B,T,C)
                             const float *restrict qkv,  // (B,T,3C)
                             const float *restrict att,  // (B,NH,T,T) from the forward
                             int B, int T, int C, int NH, const gpt2_gemm *g);

/* Attention of M new rows over a key/value cache (incremental decoding). Row i is position
 * p0 + i; q holds the M queries (row i at q + i·ldq, head h at columns h·hs), k and v the keys and
 * values of positions 0 … p0+M−1 (n = p0 + M rows of C, the new rows' included, head h at
 * columns h·hs). out row i is gpt2_attention_forward's row p0 + i over those positions:
 * att = causal softmax(q·kᵀ/√hs), out = att·v — the same products and softmax on other shapes
 * (M × n instead of T × T), so equal up to summation order. fp32 (g NULL or fp32): k and v are
 * fp32. bf16: k and v are bf16 bits (qkv rounded once, as the forward rounds it), q is rounded
 * here into q16 and att into att16, and g's workspace holds at least
 * gpt2_attention_cached_workspace_bytes. att (NH·M·n) is scratch; so are q16 (M·C) and att16
 * (NH·M·n), NULL in fp32. */
void gpt2_attention_cached(float *restrict out,      // (M,C)
                           float *restrict att,      // (NH,M,n) scratch
                           uint16_t *restrict q16,   // (M,C) bf16 scratch, or NULL
                           uint16_t *restrict att16, // (NH,M,n) bf16 scratch, or NULL
                           const float *restrict q,  // (M, ldq ≥ C)
                           int ldq,
                           const void *k, // (n,C) fp32, or bf16 bits
                           const void *v, // (n,C) fp32, or bf16 bits
                           int p0, int M, int C, int NH, const gpt2_gemm *g);
size_t gpt2_attention_cached_workspace_bytes(int M, int n, int C, int NH);

/* Grouped-query attention (the general form of the three above; those are it with KV = NH,
 * hd = C/NH). Row (b,t) of qkv is [q | k | v]: NH query heads, then KV key heads and KV value
 * heads, each hd wide (W = (NH + 2·KV)·hd); query head h attends with key/value head h/(NH/KV).
 * out is (B,T,NH·hd). NH must be a multiple of KV. Same contracts otherwise. */
void gpt2_attention_gqa_forward(float *restrict out,       // (B,T,NH·hd)
                                float *restrict preatt,    // (B,NH,T,T)
                                float *restrict att,       // (B,NH,T,T)
                                const float *restrict qkv, // (B,T,W)
                                int B, int T, int NH, int KV, int hd, const gpt2_gemm *g);
void gpt2_attention_gqa_backward(float *restrict dqkv,       // (B,T,W) accumulated
                                 float *restrict dpreatt,    // (B,NH,T,T) scratch
                                 float *restrict datt,       // (B,NH,T,T) scratch
                                 const float *restrict dout, // (B,T,NH·hd)
                                 const float *restrict qkv,  // (B,T,W)
                                 const float *restrict att,  // (B,NH,T,T)
                                 int B, int T, int NH, int KV, int hd, const gpt2_gemm *g);
size_t gpt2_attention_gqa_workspace_bytes(int B, int T, int NH, int KV, int hd);
/* gpt2_attention_cached with grouped-query heads: q (M, ldq ≥ NH·hd), k and v (n, KV·hd) fp32 or
 * bf16 bits, out (M, NH·hd); q16 (M, NH·hd) and att16 (NH,M,n) bf16 scratch, NULL in fp32. */
void gpt2_attention_cached_gqa(float *restrict out, float *restrict att, uint16_t *restrict q16,
                               uint16_t *restrict att16, const float *restrict q, int ldq,
                               const void *k, const void *v, int p0, int M, int NH, int KV, int hd,
                               const gpt2_gemm *g);
size_t gpt2_attention_cached_gqa_workspace_bytes(int M, int n, int hd);

/* RMSNorm (Llama): per row out = x·rstd·weight, rstd = 1/√(mean(x²) + eps) (saved). */
void gpt2_rmsnorm_forward(float *restrict out,          // (N,C)
                          float *restrict rstd,         // (N)
                          const float *restrict inp,    // (N,C)
                          const float *restrict weight, // (C)
                          int N, int C, float eps);
void gpt2_rmsnorm_backward(float *restrict dinp,         // (N,C) accumulated
                           float *restrict dweight,      // (C) accumulated, NULL: frozen
                           const float *restrict dout,   // (N,C)
                           const float *restrict inp,    // (N,C)
                           const float *restrict weight, // (C)
                           const float *restrict rstd,   // (N) from the forward
                           int N, int C);

/* SwiGLU: row n of inp is [gate | up] (width each), out = silu(gate)·up (silu(x) = x·σ(x)). */
void gpt2_swiglu_forward(float *restrict out,       // (N,width)
                         const float *restrict inp, // (N,2·width)
                         int N, int width);
void gpt2_swiglu_backward(float *restrict dinp,       // (N,2·width) accumulated
                          const float *restrict inp,  // (N,2·width)
                          const float *restrict dout, // (N,width)
                          int N, int width);

/* The same over columns [c0, c0 + width) of a wider SwiGLU (the Llama family's MLP block by
 * block): inp points at the block's first gate column of rows ldi floats apart, whose up column
 * is I floats on; out (and dout) at the block's first column of rows ldo apart. The same bits
 * as the whole's columns. */
void gpt2_swiglu_forward_cols(float *out, int ldo, const float *inp, int ldi, int hidden, int N,
                              int width);
void gpt2_swiglu_backward_cols(float *dinp, const float *inp, int ldi, int hidden,
                               const float *dout, int ldo, int N, int width);

/* Rotary positions in place (transformers' rotate-half layout): in each of the first `heads`
 * heads (hd wide) of row (b,t) (rows W floats apart), x[i] and x[i + hd/2] turn by the angle
 * whose cos and sin are cosv/sinv[t·hd/2 + i]. The backward turns the gradient back (the
 * rotation's transpose), in place. */
void gpt2_rope_forward(float *restrict x,          // (B,T,W) in place
                       const float *restrict cosv, // (T,hd/2)
                       const float *restrict sinv, // (T,hd/2)
                       int B, int T, int W, int heads, int hd);
void gpt2_rope_backward(float *restrict dx,         // (B,T,W) in place
                        const float *restrict cosv, // (T,hd/2)
                        const float *restrict sinv, // (T,hd/2)
                        int B, int T, int W, int heads, int hd);

/* out = 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), elementwise. */
void gpt2_gelu_forward(float *restrict out,       // (N)
                       const float *restrict inp, // (N)
                       size_t N);
void gpt2_gelu_backward(float *restrict dinp,       // (N) accumulated
                        const float *restrict inp,  // (N)
                        const float *restrict dout, // (N)
                        size_t N);

/* out = inp1 + inp2, elementwise. */
void gpt2_residual_forward(float *restrict out,        // (N)
                           const float *restrict inp1, // (N)
                           const float *restrict inp2, // (N)
                           size_t N);
void gpt2_residual_backward(float *restrict dinp1,      // (N) accumulated
                            float *restrict dinp2,      // (N) accumulated
                            const float *restrict dout, // (N)
                            size_t N);

/* Per row: probs = softmax(logits[0:V]) (max-subtracted), probs[V:Vp] = 0, and
 * losses = −log probs[target]. The padded logits [V, Vp) are never read. */
void gpt2_softmax_crossentropy_forward(float *restrict losses,       // (BT)
                                       float *restrict probs,        // (BT,Vp)
                                       const float *restrict logits, // (BT,Vp)
                                       const int *restrict targets,  // (BT) in [0, V), or
                                                                     // < 0: ignored, loss 0
                                       int BT, int V, int Vp);
/* dlogits = (probs − onehot(target))·dlosses, 0 in [V, Vp). OVERWRITES dlogits. For a mean
 * loss pass dlosses = 1/BT each. */
void gpt2_softmax_crossentropy_backward(float *restrict dlogits,       // (BT,Vp) overwritten
                                        const float *restrict dlosses, // (BT)
                                        const float *restrict probs,   // (BT,Vp)
                                        const int *restrict targets,   // (BT)
                                        int BT, int V, int Vp);
/* The two above in one buffer x (BT,Vp): the forward turns the logits into the probabilities,
 * the backward those into dlogits — the same bits as the out-of-place pair, without a second
 * (BT,Vp) buffer (the largest activation of a big vocabulary). */
void gpt2_softmax_crossentropy_forward_inplace(float *restrict losses, float *x,
                                               const int *restrict targets, int BT, int V, int Vp);
void gpt2_softmax_crossentropy_backward_inplace(float *x, const float *restrict dlosses,
                                                const int *restrict targets, int BT, int V, int Vp);

#endif
