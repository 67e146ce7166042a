/* gpt2.h — GPT-2 on the ZeRO engine: the architecture exactly (token + learned position
 * embeddings, L pre-LayerNorm blocks with causal multi-head self-attention (fused QKV) and a
 * 4·C tanh-GELU MLP, final LayerNorm, LM head tied to the token embedding, vocabulary padded to
 * Vp with the padded logits excluded from the softmax, LayerNorm eps 1e-5, cross-entropy).
 *
 * Units: "embeddings" (wte, wpe), "h.<l>" per block, "ln_f" (with an untied "lm_head"); with
 * rotary positions a vocabulary matrix larger than a block is split into tiles: units
 * "embeddings.<k>" (wte.<k>) and, untied, "lm_head.<k>" (lm_head.<k>), rows of the same matrix
 * (gpt2_config.tile_params); a tied head reads the embedding's tiles; below a block's size, a
 * wide MLP is split too: units "h.<l>.mlp.<t>" (h.<l>.gate.<t>, h.<l>.up.<t>, h.<l>.down.<t>).
 * Parameter names and tensor layouts
 * follow llm.c (weights [out, in] row-major): wte, wpe, h.<l>.ln1w, h.<l>.ln1b, h.<l>.qkvw,
 * h.<l>.qkvb, h.<l>.attprojw, h.<l>.attprojb, h.<l>.ln2w, h.<l>.ln2b, h.<l>.fcw, h.<l>.fcb,
 * h.<l>.fcprojw, h.<l>.fcprojb, lnfw, lnfb. The tied wte is acquired again for the head; its
 * gradient is handed back after its last use (the embedding backward). Uses only the public
 * zeroc headers.
 *
 *     gpt2_model *m;
 *     gpt2_create(&m, engine, mem, &cfg, B, T, false, &err);  // registers units
 *     zc_engine_finalize(engine, &err);
 *     gpt2_load_llmc(m, "gpt2_124M.bin", &err);               // optional
 *     gpt2_forward_backward(m, inputs, targets, &loss, &err);  // (B,T) token ids each
 *     zc_engine_step(engine, &info, &err);
 */
#ifndef ZEROC_MODELS_GPT2_H
#define ZEROC_MODELS_GPT2_H

#include <stdbool.h>

#include "models/gpt2/gpt2_layers.h"
#include "models/gpt2/lora.h"
#include "zeroc/engine.h"
#include "zeroc/gemm.h"

/* The decoder's architecture: GPT-2's six dimensions, then what the Llama family chooses
 * otherwise. Every later field's zero value is GPT-2's choice, so a config that names only the
 * six is GPT-2 (models/gpt2/hf_decoder.c fills them from a Llama/Qwen2/Mistral config.json). */
typedef enum { GPT2_NORM_LAYERNORM = 0, GPT2_NORM_RMSNORM } gpt2_norm;
typedef enum { GPT2_MLP_GELU = 0, GPT2_MLP_SWIGLU } gpt2_mlp;
/* Which linear layers carry biases: all of them (GPT-2), q/k/v only (Qwen2), none (Llama). */
typedef enum { GPT2_BIAS_ALL = 0, GPT2_BIAS_QKV, GPT2_BIAS_NONE } gpt2_bias;
typedef enum { GPT2_POS_LEARNED = 0, GPT2_POS_ROPE } gpt2_pos;
typedef struct {
    int max_seq_len, vocab_size, padded_vocab_size, num_layers, num_heads, channels;
    int kv_heads;    /* key/value heads (grouped-query attention); 0: num_heads */
    int head_dim;    /* 0: channels / num_heads */
    int hidden;      /* the MLP's width (intermediate_size); 0: 4 · channels */
    gpt2_norm norm;  /* LayerNorm with bias (eps 1e-5), or RMSNorm without */
    double norm_eps; /* RMSNorm's eps (rms_norm_eps) */
    gpt2_mlp mlp;    /* tanh-GELU, or SwiGLU (gate | up rows in fcw, down in fcprojw) */
    gpt2_bias bias;  /* which products carry biases */
    bool untied;     /* a separate lm_head (in the ln_f unit) instead of wte's transpose */
    gpt2_pos pos;    /* learned wpe, or rotary positions in transformers' rotate-half layout */
    double rope_theta;
    /* rope_scaling of type "llama3" when rope_factor > 0: Llama 3.1's frequency bands */
    double rope_factor, rope_low_freq, rope_high_freq;
    int rope_orig_max;
    char family[16]; /* config.json's model_type ("llama", "qwen2", "mistral"); "" is GPT-2 */
    /* Not architecture but layout: a vocabulary matrix (wte, an untied lm_head) larger than
     * this many parameters is registered as several units ("tiles" of whole 1024-row blocks,
     * ZeRO-Infinity's memory-centric tiling), so a gather, its working memory and its disk reads
     * are bounded by a tile, not the vocabulary. 0: the size of one block unit (h.<l>), so no
     * unit is larger than a block, with rotary positions (GPT-2's learned positions stay one unit
     * unless the bound is positive: its checkpoints keep their layout); −1: never. A bound below a
     * block's size also splits each block's MLP across its width where it runs in column blocks
     * (gpt2_mlp_tiles): units "h.<l>.mlp.<t>" after h.<l>, each the gate, up and down of
     * whole blocks of columns (h.<l>.gate.<t>, h.<l>.up.<t>: rows of gate_proj and up_proj;
     * h.<l>.down.<t>: columns of down_proj), tile by tile, bitwise-equal to the untiled run. */
    int64_t tile_params;
    /* The MLP tiles' columns as a checkpoint records them (≥ the MLP's width: untiled); 0: from
     * tile_params. */
    int mlp_tile_cols;
    /* LoRA (lora.r > 0): adapters on the products lora.targets names; every unit above is
     * frozen (zc_engine_freeze_unit) and one unit "h.<l>.lora" per block, registered after all
     * of them, holds block l's adapters ("h.<l>.lora.<module>.A" r × in, ".B" out × r) */
    gpt2_lora lora;
} gpt2_config;

/* The resolved dimensions of cfg: key/value heads, head width, the MLP's width. */
int gpt2_kv_heads(const gpt2_config *cfg);
int gpt2_head_dim(const gpt2_config *cfg);
int gpt2_hidden(const gpt2_config *cfg);
/* The head's products run over blocks of this many vocabulary rows (1024; 128 below 8192 rows,
 * so small models block too), whatever the tiling: tiled and untiled runs do the same products
 * on the same values, so they end on the same bits. */
int gpt2_head_block_rows(const gpt2_config *cfg);
/* How many tiles each vocabulary matrix is split into (1: one unit), and the rows of each but
 * the last (*rows; the padded vocabulary when 1). Learned positions (GPT-2) tile only under a
 * positive tile_params, and sit in the last embedding tile's unit; a tied head's tiles are the
 * embedding's, gathered again for the head. */
int gpt2_vocab_tiles(const gpt2_config *cfg, int *rows);
/* A vocabulary tile's parameter ("wte.<t>", "lm_head.<t>" as gpt2_create names them): the whole
 * matrix's name ("wte", "lm_head") into whole, and the tile's rows [*row0, *row0 + *rows) of the
 * padded vocabulary under cfg's tiling; false for any other name, or a t cfg has no tile for. */
bool gpt2_vocab_tile_of(const gpt2_config *cfg, const char *name, char whole[8], int *row0,
                        int *rows);
/* The Llama family's MLP (SwiGLU, no biases) at least 4 blocks wide runs in blocks of this many
 * columns of its width (GPT2_MLP_BLOCK; 0: one product each, as GPT-2's and narrower ones):
 * gate, up and their SwiGLU per block, the output product summed block after block, the
 * backward last block first — whatever the tiling, so tiles of whole blocks end on the bits of
 * the untiled run. */
#define GPT2_MLP_BLOCK 1024
int gpt2_mlp_block_cols(const gpt2_config *cfg);
/* How many tiles each block's MLP is split into (1: none; tiled only where it runs in blocks and
 * the block passes tile_params, or a checkpoint's mlp_tile_cols says so, and never with LoRA,
 * whose adapters are added after the whole MLP's products), and the columns of each but the
 * last (*cols; the MLP's width when 1). */
int gpt2_mlp_tiles(const gpt2_config *cfg, int *cols);
/* The units gpt2_create registers: the embeddings (or their tiles), the blocks, ln_f, the head's
 * tiles. */
int gpt2_num_units(const gpt2_config *cfg);
/* LoRA: the adapters of one block of cfg (cfg->lora's targets over its widths), into
 * out[0 .. LORA_NTARGETS); returns how many (lora_slots). */
int gpt2_lora_slots(const gpt2_config *cfg, lora_slot *out);
/* Which of those units are frozen (LoRA's base: all but the adapters' units). */
void gpt2_unit_frozen(const gpt2_config *cfg, bool *frozen);
/* Whether cfg is GPT-2 itself (every later field at its zero value): llm.c's files hold only it. */
bool gpt2_is_plain(const gpt2_config *cfg);

typedef struct gpt2_model gpt2_model;

/* The most blocks a GPT-2 may have (each block is an engine unit, with the embeddings and ln_f). */
#define ZC_GPT2_MAX_LAYERS 65536
_Static_assert(ZC_GPT2_MAX_LAYERS + 2 <= ZC_MAX_UNITS, "every block is a unit");

/* Refuses (ZC_EINVAL, naming the flags and values) a shape zeroc cannot build for micro-batches
 * of B × T: sizes below 1, C not divisible by heads, Vp < V, T > max_seq_len, more than
 * ZC_GPT2_MAX_LAYERS blocks, products whose dimensions pass an int (B·T rows, 4·C columns), more
 * than ZC_MAX_NUMEL parameters, activations past 64 bits. gpt2_create checks it; estimates
 * call it first. */
zc_status gpt2_check(const gpt2_config *cfg, int B, int T, bool activation_checkpointing,
                     zc_gemm_type compute, zc_err *err);
/* llm.c's padded vocabulary: vocab rounded up to a multiple of 128; 0 if that passes INT_MAX
 * (gpt2_check then refuses the shape). */
int gpt2_pad_vocab(int vocab);

/* Checks the shape (C divisible by heads, Vp ≥ V, T ≤ max_seq_len, ...), registers the units
 * with GPT-2's initialisation (N(0, 0.02); residual projections N(0, 0.02/√(2L)); LayerNorm
 * weights 1; biases 0) and allocates activations for micro-batches of B sequences of T tokens.
 * activation_checkpointing: keep only each block's input; recompute the block in backward. */
zc_status gpt2_create(gpt2_model **out, zc_engine *e, zc_mem *mem, const gpt2_config *cfg, int B,
                      int T, bool activation_checkpointing, zc_err *err);
void gpt2_destroy(gpt2_model *m);
/* The elements of each unit gpt2_create registers (embeddings or their tiles, h.0 … h.L−1, ln_f,
 * the head's tiles) into numel[0 .. gpt2_num_units); returns that count. For estimates of a model
 * not built; cfg must pass gpt2_check. */
int gpt2_unit_numel(const gpt2_config *cfg, size_t *numel);
/* For the same units, the elements of their 1-D parameters (norms, biases) and how the model's
 * products use their matrices (ZC_USE_* flags: with `compute` bf16 the stored matrices and
 * 16-bit gradients), for the working bound (zeroc/estimate.h). cfg must pass gpt2_check. */
void gpt2_unit_work(const gpt2_config *cfg, zc_gemm_type compute, size_t *vec_numel, uint8_t *use);
/* Bytes of activations gpt2_create allocates for this shape (the ledger's "activations"):
 * with compute ZC_GEMM_BF16 (the engine stores bf16 parameters) they include the workspace of
 * the bf16 products on the path this process's products take (zc_gemm_workspace_need: oneDNN
 * needs less than the portable path). SIZE_MAX for a shape gpt2_check refuses. */
size_t gpt2_activation_bytes(const gpt2_config *cfg, int B, int T, bool activation_checkpointing,
                             zc_gemm_type compute);
const gpt2_config *gpt2_get_config(const gpt2_model *m);
zc_engine *gpt2_engine(const gpt2_model *m); /* the engine it was created on */
/* The (B, T) every forward works on. */
void gpt2_batch_shape(const gpt2_model *m, int *B, int *T);

/* After zc_engine_finalize: loads the weights of an llm.c checkpoint (shape must match); each
 * rank reads only the bytes of the elements it holds. */
zc_status gpt2_load_llmc(gpt2_model *m, const char *path, zc_err *err);
/* Collective: writes the weights as an llm.c fp32 checkpoint (version 3); rank 0 writes. */
zc_status gpt2_save_llmc(gpt2_model *m, const char *path, zc_err *err);

/* A forward-only pass (evaluation, sampling) over B × T tokens; targets and loss may be NULL.
 * After it, gpt2_logits is (B,T,Vp): the logits, or with targets and loss their softmax (the
 * cross-entropy works in place). Ends the engine pass (zc_engine_end_pass). */
zc_status gpt2_forward(gpt2_model *m, const int *inputs, const int *targets, double *loss,
                       zc_err *err);
const float *gpt2_logits(const gpt2_model *m);
/* The forward of a training micro-batch (the pass stays open for gpt2_backward), and the
 * backward of that forward (same inputs and targets). */
zc_status gpt2_train_forward(gpt2_model *m, const int *inputs, const int *targets, double *loss,
                             zc_err *err);
zc_status gpt2_backward(gpt2_model *m, const int *inputs, const int *targets, zc_err *err);
/* Both: forward and backward over the full (B,T) batch; mean cross-entropy into *loss.
 * A target of GPT2_IGNORE_INDEX (Hugging Face's labels = -100) is not counted: the loss is the
 * mean over the other targets (CrossEntropyLoss(ignore_index=-100)), its gradient 1/count on each
 * of them and 0 on the ignored ones; a micro-batch with no counted target has loss 0 and adds
 * nothing to the gradients (Hugging Face's would be NaN). Inputs may not be ignored. */
#define GPT2_IGNORE_INDEX (-100)
zc_status gpt2_forward_backward(gpt2_model *m, const int *inputs, const int *targets, double *loss,
                                zc_err *err);

/* ---- For inference outside this file (gpt2_decode.c): the units in the order the forward
 * acquires them, and each unit's parameters as the forward hands them to the layer kernels.
 * Pointers are valid while the unit is acquired (zc_engine_acquire on gpt2_unit). ---- */

/* A weight matrix as the products take it: fp32 values (w), or, when the products are bf16,
 * the engine's stored bf16 bits (w16; w is then NULL). */
typedef struct {
    const float *w;
    const uint16_t *w16;
} gpt2_weight;
typedef struct {
    const float *ln1w, *ln1b, *qkvb, *attprojb, *ln2w, *ln2b, *fcb, *fcprojb;
    gpt2_weight qkvw, attprojw, fcw, fcprojw;
} gpt2_block_weights;
/* The unit of block l (0 ≤ l < L); l = −1 is "embeddings" (wte, wpe; its first tile when tiled),
 * l = L is "ln_f". */
int gpt2_unit(const gpt2_model *m, int l);
/* Tile k (0 ≤ k < gpt2_vocab_tiles) of the untied embedding (head false) or head (true): its unit
 * and its vocabulary rows [*row0, *row0 + *rows). Untiled: the "embeddings" / "ln_f" unit and
 * every row. */
void gpt2_vocab_tile(const gpt2_model *m, bool head, int k, int *unit, int *row0, int *rows);
/* That tile's matrix (rows × C, as a product takes it); its unit must be acquired. */
void gpt2_get_vocab_tile(gpt2_model *m, bool head, int k, gpt2_weight *w);
/* Block l's parameters; its unit must be acquired. */
void gpt2_get_block_weights(gpt2_model *m, int l, gpt2_block_weights *out);
/* Tile t (0 ≤ t < gpt2_mlp_tiles) of block l's tiled MLP: its unit; and, that unit acquired,
 * its part of the MLP over M rows as the forward computes it (with g's products and
 * workspace): x (M × C, the second norm's output) → the gate and up columns of fch (M × 2I),
 * their SwiGLU in h's (M × I), and the output y (M × C), written by tile 0 and added to by each
 * tile after it. Untiled, block l's weights hold the whole MLP (fcw, fcprojw). */
int gpt2_mlp_tile_unit(const gpt2_model *m, int l, int t);
void gpt2_mlp_tile_forward(gpt2_model *m, int l, int t, const float *x, float *fch, float *h,
                           float *y, int M, const gpt2_gemm *g);
/* LoRA: block l's adapters' unit (−1 without LoRA), acquired with the block's; and the adapters
 * of product p added to its output y (ld_y columns) from its input x over M rows, as an
 * evaluation forward does them (no dropout), u scratch of M · lora.r floats. */
int gpt2_lora_unit(const gpt2_model *m, int l);
void gpt2_lora_forward(gpt2_model *m, int l, lora_product p, const float *x, float *y, int ld_y,
                       int M, float *u);
/* wte (as a product takes it) and wpe (as the encoder takes it: in bf16 mode the stored bits, so
 * the embeddings' unit never needs an fp32 view; both NULL with rotary positions); the
 * "embeddings" unit must be acquired. */
void gpt2_get_embeddings(gpt2_model *m, gpt2_weight *wte, gpt2_weight *wpe);
/* The untied lm_head (as a product takes it); the "ln_f" unit must be acquired. */
void gpt2_get_head(gpt2_model *m, gpt2_weight *head);
/* The rotary tables (T × head_dim/2 cos and sin, positions 0 … T−1); false with learned
 * positions. */
bool gpt2_rope_tables(const gpt2_model *m, const float **cosv, const float **sinv);
/* lnfw and lnfb; the "ln_f" unit must be acquired. */
void gpt2_get_lnf(gpt2_model *m, const float **lnfw, const float **lnfb);
/* The products' precision (workspace not included: the caller brings its own) and the ledger
 * the model charges its activations to. */
zc_gemm_type gpt2_compute_type(const gpt2_model *m);
zc_mem *gpt2_mem(const gpt2_model *m);
/* The model's activation memory (gpt2_activation_bytes, 64-byte aligned), free between passes,
 * as scratch for inference that runs no forward meanwhile (gpt2_decode.c): a forward or
 * backward overwrites what it holds, and its use overwrites what they left (gpt2_logits). */
void *gpt2_activation_scratch(gpt2_model *m, size_t *bytes);

#endif
