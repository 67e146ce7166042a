/* lora.h — LoRA (Hu et al., 2021, as PEFT's LoraConfig) on the decoder's linear layers: beside a
 * frozen weight W (out × in) a trained pair A (r × in) and B (out × r), y = x·Wᵀ +
 * s·(drop(x)·Aᵀ)·Bᵀ with s = lora_alpha / r, A drawn as PEFT draws it (kaiming_uniform(a=√5):
 * U(±1/√in)) and B zero, so training starts from the base model's outputs.
 *
 * The decoder fuses some of Hugging Face's linear layers into one product (q|k|v rows in qkvw,
 * gate|up rows in fcw): an adapter is a slot of one product — a range of its output columns —
 * named after the Hugging Face module it stands for. Targets are those names (PEFT's
 * target_modules): q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj for the Llama
 * family, c_attn (q|k|v as one module), c_proj (the attention's and the MLP's, as PEFT's suffix
 * match takes both) and c_fc for GPT-2; "all-linear" is every one of them.
 *
 * The adapters' products run in fp32 whatever the base's precision: they are r columns wide. */
#ifndef ZEROC_MODELS_LORA_H
#define ZEROC_MODELS_LORA_H

#include <stdbool.h>
#include <stdint.h>

#include "zeroc/status.h"

/* The decoder's four products, in a block's order. */
typedef enum { LORA_QKV = 0, LORA_ATTPROJ, LORA_FC, LORA_FCPROJ, LORA_NPRODUCTS } lora_product;

/* Hugging Face's module an adapter stands for. */
typedef enum {
    LORA_Q = 0,
    LORA_K,
    LORA_V,
    LORA_O,
    LORA_GATE,
    LORA_UP,
    LORA_DOWN,
    LORA_QKV_FUSED, /* GPT-2's c_attn */
    LORA_NTARGETS
} lora_target;

typedef struct {
    int r;            /* the adapters' rank; 0: no adapters (full training) */
    double alpha;     /* lora_alpha: the adapters' output is scaled by alpha / r */
    double dropout;   /* lora_dropout: on each adapter's input, in training forwards only */
    unsigned targets; /* bit (1u << lora_target) per module adapted */
    uint64_t seed;    /* the dropout masks' random stream */
} gpt2_lora;

/* One adapter of a block: its product, the output columns [out_off, out_off + out_n) of it it
 * adds to, and its input width. */
typedef struct {
    lora_target target;
    lora_product product;
    int64_t out_off, out_n, in;
} lora_slot;

/* The architecture's widths the slots need (gpt2.c's dims). */
typedef struct {
    int64_t C, QD, KVD, hidden; /* channels, attention output, one of k|v, the MLP's width */
    bool swiglu, gpt2;          /* gate | up in the first MLP product; GPT-2's module names */
} lora_dims;

/* Whether a parameter name is an adapter's ("h.<l>.lora.…"): the base model's files (llm.c,
 * Hugging Face) have none of them, and their loaders leave them as initialised. */
bool lora_is_param(const char *name);
/* Hugging Face's name of a target ("q_proj", "c_attn", ...). */
const char *lora_target_name(lora_target t);
/* Parses a comma-separated list of module names (or "all-linear") for a family (gpt2: c_attn,
 * c_proj, c_fc; the Llama family: q_proj ... down_proj) into *targets. ZC_EINVAL naming the
 * name and the family's names. */
zc_status lora_parse_targets(const char *list, bool gpt2, unsigned *targets, zc_err *err);
/* The default target_modules (PEFT's for these families: q_proj and v_proj; GPT-2: c_attn). */
unsigned lora_default_targets(bool gpt2);
/* Checks r, alpha and dropout (r >= 1, alpha > 0, 0 <= dropout < 1, some target). */
zc_status lora_check(const gpt2_lora *l, zc_err *err);
/* The block's adapters in product order, into out[0 .. LORA_NTARGETS); returns how many. */
int lora_slots(const gpt2_lora *l, const lora_dims *d, lora_slot *out);
/* Parameters of one block's adapters (Σ r·(in + out_n)). */
int64_t lora_block_numel(const gpt2_lora *l, const lora_dims *d);
/* Floats of the activations one block's adapters keep for the backward (Σ BT·r), and of the
 * scratch they share (dU: BT·r; with dropout the dropped input, BT·max in). */
int64_t lora_block_act_floats(const gpt2_lora *l, const lora_dims *d, int64_t BT);
int64_t lora_scratch_floats(const gpt2_lora *l, const lora_dims *d, int64_t BT);

/* One adapter's forward over BT rows: u = drop(x)·Aᵀ (kept, BT × r), then
 * y[:, out_off …] += s · u·Bᵀ (y has ld_y columns; NULL y: u alone, for a recompute whose output
 * is not read). stream keys the dropout mask (a pure function of seed, stream and element; NULL
 * scratch or training false: no dropout). */
void lora_forward(const gpt2_lora *l, const lora_slot *s, int BT, const float *x, const float *A,
                  const float *B, float *u, float *y, int ld_y, bool training, uint64_t stream,
                  float *scratch);
/* Its backward from dy (ld_y columns): dB += s·dyᵀ·u, du = s·dy·B, dA += duᵀ·drop(x),
 * dx += drop'(du·A). du and scratch are the shared scratch. */
void lora_backward(const gpt2_lora *l, const lora_slot *s, int BT, const float *x, const float *A,
                   const float *B, const float *u, const float *dy, int ld_y, float *dx, float *dA,
                   float *dB, bool training, uint64_t stream, float *du, float *scratch);

#endif
