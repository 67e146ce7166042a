/* gpt2.c — GPT-2 forward and backward on the ZeRO engine (model contract in gpt2.h).
 *
 * The math lives in gpt2_layers.c (llm.c-style forward/backward pairs); this file decides which
 * unit is acquired when, where activations live, and what is recomputed:
 *
 * - Activations are one allocation carved by a size table (ACT_SIZES), charged to the ledger's
 *   "activations". Without checkpointing each block has its own set; with checkpointing every
 *   block shares one scratch set and only each block's output (the residual stream) is kept, the
 *   block being recomputed in backward from its input — the same kernels on the same inputs,
 *   so gradients are identical to the bit. The recompute skips what the backward never reads
 *   (the MLP's output product), and the forward's last block is not recomputed at all: the
 *   shared set still holds it when its backward comes (gpt2_backward follows its own forward,
 *   the pass open between them).
 * - What no backward reads (the attention's raw scores, the two output products: only their
 *   residual sums are read) is one buffer for all blocks either way, and so is the MLP's
 *   activation, which each block's backward redoes from its kept input (mlp_act_forward: an
 *   elementwise pass, the forward's own calls, the same bits): per token, 6 of a GPT-2 block's
 *   20 C-wide rows and the raw scores' heads·T (at GPT-2 124M, T = 1024, B = 4: 9.0 → 6.1 GiB).
 * - Gradients of activations need only one block at a time: one scratch set, zeroed per block.
 * - The Llama family's wide MLP runs in column blocks, and with a bound below a block's size its
 *   tiles are units of their own, gathered one at a time after the block's attention
 *   (mlp_tiles_forward / mlp_tiles_backward); the same products either way.
 * - The head runs over blocks of vocabulary rows for every model, so a vocabulary past
 *   tile_params (GPT-2's too, its learned positions in the last tile) is units of whole blocks,
 *   gathered tile by tile, with the untiled run's bits.
 * - The tied wte: the "embeddings" unit is acquired once for the whole forward (encoder ...
 *   head), acquired again for the head's backward, and handed back after the encoder backward,
 *   its last use. Every unit is therefore gathered once for forward and once for backward in
 *   stage 3, which keeps the 3·Ψ communication formula exact.
 * - Inference outside this file (gpt2_decode.c's key/value-cached decoding) gets the unit ids,
 *   the parameters as the forward hands them to the kernels, and the activation memory as
 *   scratch between passes, through the accessors at the end of the forward section. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/gpt2/gpt2.h"
#include "models/gpt2/gpt2_layers.h"
#include "models/gpt2/llmc_files.h"
#include "zeroc/checked.h"

/* Per-block parameters, in llm.c's tensor order (tensors 2..13 of a checkpoint). */
enum {
    P_LN1W,
    P_LN1B,
    P_QKVW,
    P_QKVB,
    P_ATTPROJW,
    P_ATTPROJB,
    P_LN2W,
    P_LN2B,
    P_FCW,
    P_FCB,
    P_FCPROJW,
    P_FCPROJB,
    P_NBLOCK
};
static const char *const BLOCK_PARAM[P_NBLOCK] = {"ln1w",     "ln1b",     "qkvw",    "qkvb",
                                                  "attprojw", "attprojb", "ln2w",    "ln2b",
                                                  "fcw",      "fcb",      "fcprojw", "fcprojb"};

/* Per-block activations. */
enum {
    A_LN1,
    A_LN1_MEAN,
    A_LN1_RSTD,
    A_QKV,
    A_ATTY,
    A_PREATT,
    A_ATT,
    A_ATTPROJ,
    A_RES2,
    A_LN2,
    A_LN2_MEAN,
    A_LN2_RSTD,
    A_FCH,
    A_FCH_GELU,
    A_FCPROJ,
    A_RES3,
    A_NBLOCK
};
/* Activations no backward reads, or reads only after redoing them (mlp_act_forward): one buffer
 * for all blocks, with or without checkpointing — the attention's scores before the softmax, the
 * two output products (only their residual sums are read), the MLP's activation (redone from its
 * kept input, elementwise: the same bits). */
static bool act_shared(int k)
{
    return k == A_PREATT || k == A_ATTPROJ || k == A_FCPROJ || k == A_FCH_GELU;
}
/* Gradients of per-block activations (one scratch set). */
enum {
    D_LN1,
    D_QKV,
    D_ATTY,
    D_PREATT,
    D_ATT,
    D_ATTPROJ,
    D_RES2,
    D_LN2,
    D_FCH,
    D_FCH_GELU,
    D_FCPROJ,
    D_NBLOCK
};

/* The architecture's resolved widths (gpt2_config's zeros made explicit). */
typedef struct {
    int64_t C, NH, KV, hd;
    int64_t QD; /* attention's output: NH·hd */
    int64_t W;  /* a qkv row: (NH + 2·KV)·hd */
    int64_t I;  /* the MLP's width */
    int64_t F;  /* the MLP's first product: I (GELU), 2·I (SwiGLU: gate | up) */
} dims;

int gpt2_kv_heads(const gpt2_config *c)
{
    return c->kv_heads ? c->kv_heads : c->num_heads;
}
int gpt2_head_dim(const gpt2_config *c)
{
    return c->head_dim ? c->head_dim : c->num_heads ? c->channels / c->num_heads : 0;
}
int gpt2_hidden(const gpt2_config *c)
{
    return c->hidden ? c->hidden : c->channels > INT_MAX / 4 ? INT_MAX : 4 * c->channels;
}
bool gpt2_is_plain(const gpt2_config *c)
{
    const gpt2_config g = {.channels = c->channels};
    return gpt2_kv_heads(c) == c->num_heads && gpt2_head_dim(c) * c->num_heads == c->channels &&
           gpt2_hidden(c) == gpt2_hidden(&g) && c->norm == g.norm && c->mlp == g.mlp &&
           c->bias == g.bias && c->untied == g.untied && c->pos == g.pos && !c->family[0];
}

static dims dims_of(const gpt2_config *c)
{
    dims d = {.C = c->channels, .NH = c->num_heads, .KV = gpt2_kv_heads(c), .hd = gpt2_head_dim(c)};
    d.QD = d.NH * d.hd;
    d.W = (d.NH + 2 * d.KV) * d.hd;
    d.I = gpt2_hidden(c);
    d.F = c->mlp == GPT2_MLP_SWIGLU ? 2 * d.I : d.I;
    return d;
}

/* The widths LoRA's slots need. */
static lora_dims lora_dims_of(const gpt2_config *c)
{
    const dims d = dims_of(c);
    return (lora_dims){.C = d.C,
                       .QD = d.QD,
                       .KVD = d.KV * d.hd,
                       .hidden = d.I,
                       .swiglu = c->mlp == GPT2_MLP_SWIGLU,
                       .gpt2 = !c->family[0]};
}

int gpt2_lora_slots(const gpt2_config *c, lora_slot *out)
{
    const lora_dims ld = lora_dims_of(c);
    return lora_slots(&c->lora, &ld, out);
}

/* The LoRA adapters' parameters of one block (0 without LoRA). */
static int64_t lora_numel(const gpt2_config *c)
{
    if (c->lora.r < 1)
        return 0;
    const lora_dims ld = lora_dims_of(c);
    return lora_block_numel(&c->lora, &ld);
}

/* Whether block parameter k exists in this architecture (biases and LayerNorm's shifts may not). */
static bool has_block_param(const gpt2_config *c, int k)
{
    switch (k) {
    case P_LN1B:
    case P_LN2B: return c->norm == GPT2_NORM_LAYERNORM;
    case P_QKVB: return c->bias != GPT2_BIAS_NONE;
    case P_ATTPROJB:
    case P_FCB:
    case P_FCPROJB: return c->bias == GPT2_BIAS_ALL;
    default: return true;
    }
}

struct gpt2_model {
    gpt2_config cfg;
    dims d;
    zc_engine *e;
    zc_mem *mem;
    int B, T;
    bool checkpointing;
    int u_emb, u_lnf, *u_block; /* unit ids (u_emb: the first embedding tile when tiled) */
    /* the untied vocabulary matrices' tiles (gpt2_vocab_tiles; one when untiled: the whole wte
     * in "embeddings", the whole lm_head in "ln_f") */
    int ntiles;
    struct vocab_tile {
        int unit, param, row0, rows;
        /* a tied table's (emb_tiles): the gradient the head's product wrote in bf16
         * (zc_engine_grad16), until the embedding's backward adds its rows to it; else NULL */
        uint16_t *tied16;
    } * emb_tiles, *head_tiles;
    /* param ids; p_block[l * P_NBLOCK + k]; −1 where the architecture has no such parameter
     * (wpe with rotary positions, lnfb with RMSNorm, lm_head when tied, absent biases; wte and
     * lm_head when tiled: their tiles' are in emb_tiles, head_tiles) */
    int p_wte, p_wpe, p_lnfw, p_lnfb, p_head, *p_block;
    /* The MLP in column blocks of mlp_bw (gpt2_mlp_block_cols; 0: one product each, as GPT-2),
     * as nmt tiles a block (gpt2_mlp_tiles): mlp[l · nmt + t]. Untiled, tile 0 is the block's
     * own fcw (gate rows, then up rows I·C on) and fcprojw; a tile of its own unit holds gate
     * (cols × C), up (cols × C) and down (C × cols) for the columns [c0, c0 + cols). */
    int mlp_bw, nmt;
    float *mlp_stage; /* mlp_stage_floats: down's block and its gradient, dense */
    struct mlp_tile {
        int unit, p_gate, p_up, p_down;
        size_t gate_off, up_off; /* where the tile's first gate and up rows start */
        int ld_down;             /* down's row length: I untiled, cols tiled */
        int c0, cols;
    } * mlp;
    float *arena;
    size_t arena_floats;
    float *rope_cos, *rope_sin; /* (T, hd/2) each, at the arena's end; NULL with wpe */
    float **act;                /* act[l * A_NBLOCK + k] */
    float *dact[D_NBLOCK];
    float *encoded, *lnf, *lnf_mean, *lnf_rstd, *logits, *losses, *dlnf, *dres[2];
    gpt2_gemm gemm; /* the linear layers' products: fp32, or bf16 + workspace */
    /* LoRA (cfg.lora.r > 0): the adapters' units, their A and B parameters
     * (p_lora[(l · nslots + k) · 2 + {0: A, 1: B}]), the slots of a block, what each keeps for the
     * backward (lora_u: BT × r per slot, per block or one set with checkpointing) and the shared
     * scratch; the training forwards counted (the dropout masks' stream) */
    int *u_lora, *p_lora;
    lora_slot slots[LORA_NTARGETS];
    int nslots;
    float *lora_u, *lora_du, *lora_scratch;
    bool training;
    uint64_t passes;
};

/* The size table: floats of each per-block activation for micro-batches of B × T. Counted
 * without wrapping (INT64_MAX and *ovf past 64 bits): gpt2_check refuses such shapes. */
static int64_t act_size(const gpt2_config *c, int B, int T, int k, bool *ovf)
{
    const int64_t BT = zc_mul_i64(B, T, ovf);
    const dims d = dims_of(c);
    switch (k) {
    case A_LN1_MEAN:
    case A_LN1_RSTD:
    case A_LN2_MEAN:
    case A_LN2_RSTD: return BT;
    case A_QKV: return zc_mul_i64(BT, d.W, ovf);
    case A_ATTY: return zc_mul_i64(BT, d.QD, ovf);
    case A_PREATT:
    case A_ATT: /* B × heads × T × T */
        return zc_mul_i64(zc_mul_i64(BT, c->num_heads, ovf), T, ovf);
    case A_FCH: return zc_mul_i64(BT, d.F, ovf);
    case A_FCH_GELU: return zc_mul_i64(BT, d.I, ovf);
    default: return zc_mul_i64(BT, d.C, ovf);
    }
}

static int64_t grad_size(const gpt2_config *c, int B, int T, int k, bool *ovf)
{
    static const int as_act[D_NBLOCK] = {A_LN1,  A_QKV, A_ATTY, A_PREATT,   A_ATT,   A_ATTPROJ,
                                         A_RES2, A_LN2, A_FCH,  A_FCH_GELU, A_FCPROJ};
    return act_size(c, B, T, as_act[k], ovf);
}

/* Floats of the model-level buffers, in the order gpt2_create carves them: encoded, lnf,
 * lnf_mean, lnf_rstd, logits, losses, dlnf, dres[0], dres[1]. The logits become the
 * probabilities, then dlogits, in place: no second (B·T, Vp) buffer. */
enum { N_TOP = 9 };
static void top_sizes(const gpt2_config *c, int B, int T, int64_t out[N_TOP], bool *ovf)
{
    const int64_t BT = zc_mul_i64(B, T, ovf), BTC = zc_mul_i64(BT, c->channels, ovf),
                  BTV = zc_mul_i64(BT, c->padded_vocab_size, ovf);
    const int64_t sz[N_TOP] = {BTC, BTC, BT, BT, BTV, BT, BTC, BTC, BTC};
    memcpy(out, sz, sizeof sz);
}

/* Floats of the dense copies of one column block of the MLP's down and of its gradient (C ×
 * GPT2_MLP_BLOCK each; 0 unblocked), at the arena's end with the rotary tables. */
static int64_t mlp_stage_floats(const gpt2_config *c, bool *ovf)
{
    const int bw = gpt2_mlp_block_cols(c);
    return bw ? zc_mul_i64(2 * (int64_t)bw, c->channels, ovf) : 0;
}

/* Floats of the rotary tables (cos and sin, T × hd/2 each); 0 with learned positions. */
static int64_t rope_floats(const gpt2_config *c, int T, bool *ovf)
{
    return c->pos == GPT2_POS_ROPE ? zc_mul_i64(T, gpt2_head_dim(c) / 2 * 2, ovf) : 0;
}

/* The elements of parameter shapes, per unit (without wrapping): the embeddings, one block,
 * ln_f (with lm_head when untied). */
static void unit_sizes(const gpt2_config *c, int64_t *emb, int64_t *block, int64_t *lnf, bool *ovf)
{
    const dims d = dims_of(c);
    const int64_t C = d.C, V = c->padded_vocab_size;
    *emb = zc_mul_i64(V, C, ovf);
    if (c->pos == GPT2_POS_LEARNED)
        *emb = zc_add_i64(*emb, zc_mul_i64(c->max_seq_len, C, ovf), ovf);
    const int64_t norm = c->norm == GPT2_NORM_LAYERNORM ? 2 * C : C;
    int64_t b = 2 * norm;
    b = zc_add_i64(b, zc_mul_i64(d.W, C, ovf), ovf);  /* qkvw */
    b = zc_add_i64(b, zc_mul_i64(C, d.QD, ovf), ovf); /* attprojw */
    b = zc_add_i64(b, zc_mul_i64(d.F, C, ovf), ovf);  /* fcw */
    b = zc_add_i64(b, zc_mul_i64(C, d.I, ovf), ovf);  /* fcprojw */
    if (c->bias != GPT2_BIAS_NONE)
        b = zc_add_i64(b, d.W, ovf); /* qkvb */
    if (c->bias == GPT2_BIAS_ALL)
        b = zc_add_i64(b, zc_add_i64(2 * C, d.F, ovf), ovf); /* attprojb, fcprojb, fcb */
    *block = b;
    *lnf = c->untied ? zc_add_i64(norm, zc_mul_i64(V, C, ovf), ovf) : norm;
}

int gpt2_head_block_rows(const gpt2_config *c)
{
    return c->padded_vocab_size < 8192 ? 128 : 1024;
}

int gpt2_vocab_tiles(const gpt2_config *c, int *rows)
{
    const int64_t Vp = c->padded_vocab_size, blk = gpt2_head_block_rows(c);
    *rows = (int)Vp;
    if (c->tile_params < 0 || Vp < 1 || c->channels < 1 ||
        (c->pos == GPT2_POS_LEARNED && c->tile_params == 0))
        return 1;
    int64_t bound = c->tile_params;
    if (!bound) { /* the size of one block unit */
        bool ovf = false;
        int64_t emb, lnf;
        unit_sizes(c, &emb, &bound, &lnf, &ovf);
        if (ovf)
            return 1; /* gpt2_check refuses the shape */
    }
    const int64_t per = bound / c->channels / blk * blk; /* whole blocks of rows */
    if (per >= Vp)
        return 1;
    *rows = (int)(per < blk ? blk : per);
    return (int)((Vp + *rows - 1) / *rows);
}

bool gpt2_vocab_tile_of(const gpt2_config *c, const char *name, char whole[8], int *row0, int *rows)
{
    int t, per, nt = gpt2_vocab_tiles(c, &per);
    char end;
    if (sscanf(name, "wte.%d%c", &t, &end) == 1)
        snprintf(whole, 8, "wte");
    else if (sscanf(name, "lm_head.%d%c", &t, &end) == 1)
        snprintf(whole, 8, "lm_head");
    else
        return false;
    if (nt == 1 || t < 0 || t >= nt)
        return false;
    *row0 = t * per;
    *rows = t == nt - 1 ? c->padded_vocab_size - *row0 : per;
    return true;
}

int gpt2_mlp_block_cols(const gpt2_config *c)
{
    return c->mlp == GPT2_MLP_SWIGLU && c->bias != GPT2_BIAS_ALL &&
                   gpt2_hidden(c) >= 4 * GPT2_MLP_BLOCK
               ? GPT2_MLP_BLOCK
               : 0;
}

int gpt2_mlp_tiles(const gpt2_config *c, int *cols)
{
    const int I = gpt2_hidden(c), bw = gpt2_mlp_block_cols(c);
    *cols = I;
    if (!bw || c->channels < 1 || c->lora.r > 0) /* LoRA's adapters take the whole MLP's input */
        return 1;
    int64_t per = c->mlp_tile_cols;
    if (per <= 0) { /* from the bound, when the block passes it */
        bool ovf = false;
        int64_t emb, block, lnf;
        unit_sizes(c, &emb, &block, &lnf, &ovf);
        if (c->tile_params <= 0 || ovf || block <= c->tile_params)
            return 1;
        per = c->tile_params / (3 * (int64_t)c->channels) / bw * bw; /* whole column blocks */
        if (per < bw)
            per = bw;
    }
    if (per >= I)
        return 1;
    *cols = (int)per;
    return (int)((I + per - 1) / per);
}

/* The units of the base model: the embeddings (or tiles), the blocks (each followed by its MLP's
 * tiles), ln_f, the untied head's tiles; INT_MAX past an int. */
static int base_units(const gpt2_config *c)
{
    int rows, nt = gpt2_vocab_tiles(c, &rows), cols, nmt = gpt2_mlp_tiles(c, &cols);
    const int64_t blocks = (int64_t)c->num_layers * (nmt > 1 ? 1 + nmt : 1);
    const int64_t n = blocks + (nt == 1 ? 2 : 1 + (c->untied ? 2 : 1) * (int64_t)nt);
    return n > INT_MAX ? INT_MAX : (int)n;
}

int gpt2_num_units(const gpt2_config *c)
{
    const int64_t n = (int64_t)base_units(c) + (c->lora.r > 0 ? c->num_layers : 0);
    return n > INT_MAX ? INT_MAX : (int)n;
}

void gpt2_unit_frozen(const gpt2_config *c, bool *frozen)
{
    const int base = base_units(c), n = gpt2_num_units(c);
    for (int u = 0; u < n; u++)
        frozen[u] = c->lora.r > 0 && u < base;
}

int gpt2_unit_numel(const gpt2_config *c, size_t *numel)
{
    bool ovf = false; /* gpt2_check passed */
    int64_t emb, block, lnf;
    unit_sizes(c, &emb, &block, &lnf, &ovf);
    int rows, nt = gpt2_vocab_tiles(c, &rows), k = 0;
    const int64_t Vp = c->padded_vocab_size, C = c->channels;
    for (int t = 0; nt > 1 && t < nt; t++) /* the last with the learned positions, if any */
        numel[k++] = (size_t)(t == nt - 1 ? emb - (int64_t)t * rows * C : rows * C);
    if (nt == 1)
        numel[k++] = (size_t)emb;
    int cols, nmt = gpt2_mlp_tiles(c, &cols);
    const int64_t I = gpt2_hidden(c);
    for (int l = 0; l < c->num_layers; l++) {
        numel[k++] = (size_t)(nmt > 1 ? block - 3 * I * C : block); /* gate, up, down: tiles */
        for (int t = 0; nmt > 1 && t < nmt; t++)
            numel[k++] = (size_t)(3 * C * (t == nmt - 1 ? I - (int64_t)t * cols : cols));
    }
    numel[k++] = (size_t)(nt == 1 || !c->untied ? lnf : lnf - Vp * C);
    for (int t = 0; nt > 1 && c->untied && t < nt; t++)
        numel[k++] = (size_t)((t == nt - 1 ? Vp - (int64_t)t * rows : rows) * C);
    for (int l = 0; c->lora.r > 0 && l < c->num_layers; l++)
        numel[k++] = (size_t)lora_numel(c);
    return k;
}

void gpt2_unit_work(const gpt2_config *c, zc_gemm_type compute, size_t *vec_numel, uint8_t *use)
{
    int rows, k = 0;
    const int nt = gpt2_vocab_tiles(c, &rows);
    const dims d = dims_of(c);
    const size_t norm = c->norm == GPT2_NORM_LAYERNORM ? 2 * (size_t)d.C : (size_t)d.C;
    size_t block = 2 * norm;
    for (int p = 0; p < P_NBLOCK; p++)
        if (has_block_param(c, p) &&
            (p == P_QKVB || p == P_ATTPROJB || p == P_FCB || p == P_FCPROJB))
            block += (size_t)(p == P_QKVB ? d.W : p == P_FCB ? d.F : d.C);
    /* bf16 products read the stored matrices and write their gradients in 16 bits; so does a
     * tied head's product (the embedding's backward adds its rows to that, rounded once a row,
     * and learned positions' sums are rounded once; with C ≥ 2, tied16_sortable), but an untied
     * table with learned positions takes fp32 matrix gradients (its backward scatter-adds into
     * both) */
    const uint8_t mats = compute == ZC_GEMM_BF16 ? 0 : ZC_USE_ANY;
    const bool grad32 = c->untied ? c->pos == GPT2_POS_LEARNED : c->channels < 2;
    const uint8_t emb = grad32 ? mats | ZC_USE_GRAD32 : mats;
    /* a tied head's tiles: gathered for the embedding, again for the head */
    const uint8_t tile = c->untied ? mats : emb | ZC_USE_FORWARD_TWICE;
    for (int t = 0; t < nt; t++, k++) /* the embeddings, or their tiles (an untied table's last
                                       * with learned positions: their fp32 gradient) */
        vec_numel[k] = 0, use[k] = nt == 1 ? emb
                                   : t == nt - 1 && c->untied && c->pos == GPT2_POS_LEARNED
                                       ? tile | ZC_USE_GRAD32
                                       : tile;
    int cols;
    const int nmt = gpt2_mlp_tiles(c, &cols);
    for (int l = 0; l < c->num_layers; l++) {
        vec_numel[k] = block, use[k++] = mats;
        for (int t = 0; nmt > 1 && t < nmt; t++, k++) /* the MLP's tiles: matrices only */
            vec_numel[k] = 0, use[k] = mats;
    }
    vec_numel[k] = norm, use[k++] = mats; /* ln_f (with the untiled head) */
    for (int t = 0; nt > 1 && c->untied && t < nt; t++, k++)
        vec_numel[k] = 0, use[k] = mats;
    for (int l = 0; c->lora.r > 0 && l < c->num_layers; l++, k++) /* fp32 adapters */
        vec_numel[k] = 0, use[k] = ZC_USE_ANY;
}

/* Parameters of the model (the units above, summed), without wrapping. */
static int64_t total_numel(const gpt2_config *c, bool *ovf)
{
    int64_t emb, block, lnf;
    unit_sizes(c, &emb, &block, &lnf, ovf);
    block = zc_add_i64(block, lora_numel(c), ovf);
    return zc_add_i64(zc_add_i64(emb, zc_mul_i64(c->num_layers, block, ovf), ovf), lnf, ovf);
}

/* Bytes of workspace the bf16 products need: the largest of the linear layers'
 * (gpt2_matmul_workspace_bytes) and attention's (gpt2_attention_workspace_bytes), computed once
 * the sizes are known to fit: a linear layer (B·T rows, IC → OC, one of IC and OC being C, both
 * at most W = max(4C, Vp)) takes at most 16·W·(B·T + 4C) bytes for its operands, staging and
 * results; attention at most 16 bytes per element of (B, NH, T, max(T, hs)). Sizes past that
 * set *ovf. */
static int64_t gemm_workspace(const gpt2_config *c, int B, int T, zc_gemm_type compute, bool *ovf)
{
    if (compute != ZC_GEMM_BF16)
        return 0;
    const dims d = dims_of(c);
    const int64_t BT = zc_mul_i64(B, T, ovf), C = d.C, Vp = c->padded_vocab_size;
    int64_t W = Vp;
    const int64_t widths[] = {C, d.W, d.QD, d.F, d.I};
    for (size_t i = 0; i < sizeof widths / sizeof *widths; i++)
        W = widths[i] > W ? widths[i] : W;
    (void)zc_mul_i64(32, zc_mul_i64(W, zc_add_i64(BT, W, ovf), ovf), ovf);
    const int64_t nb = zc_mul_i64(B, c->num_heads, ovf);
    const int64_t span = T > d.hd ? T : d.hd;
    (void)zc_mul_i64(zc_mul_i64(nb, 16, ovf), zc_mul_i64(T, zc_add_i64(span, d.W, ovf), ovf), ovf);
    if (BT > INT_MAX || W > INT_MAX || nb > INT_MAX)
        *ovf = true;
    if (*ovf)
        return INT64_MAX;
    const int N = (int)BT, IC[] = {(int)C, (int)d.QD, (int)C, (int)d.I, (int)C},
              OC[] = {(int)d.W, (int)C, (int)d.F, (int)C, (int)Vp};
    size_t ws = gpt2_attention_gqa_workspace_bytes(B, T, c->num_heads, (int)d.KV, (int)d.hd);
    for (size_t i = 0; i < sizeof IC / sizeof *IC; i++) {
        size_t layer = gpt2_matmul_workspace_bytes(N, IC[i], OC[i]);
        ws = layer > ws ? layer : ws;
    }
    return (int64_t)ws;
}

/* Floats of the LoRA adapters' activations (per block, or one set with checkpointing) and
 * their scratch; 0 without LoRA. */
static int64_t lora_floats(const gpt2_config *c, int B, int T, bool activation_checkpointing,
                           bool *ovf)
{
    if (c->lora.r < 1)
        return 0;
    const lora_dims ld = lora_dims_of(c);
    const int64_t BT = zc_mul_i64(B, T, ovf), sets = activation_checkpointing ? 1 : c->num_layers;
    if (*ovf || BT > INT_MAX)
        return INT64_MAX;
    return zc_add_i64(zc_mul_i64(lora_block_act_floats(&c->lora, &ld, BT), sets, ovf),
                      lora_scratch_floats(&c->lora, &ld, BT), ovf);
}

/* gpt2_activation_bytes, without wrapping. */
static int64_t activation_bytes(const gpt2_config *c, int B, int T, bool activation_checkpointing,
                                zc_gemm_type compute, bool *ovf)
{
    const int64_t L = c->num_layers, sets = activation_checkpointing ? 1 : L;
    int64_t total = 0, top[N_TOP];
    for (int k = 0; k < A_NBLOCK; k++)
        total = zc_add_i64(total,
                           zc_mul_i64(act_size(c, B, T, k, ovf),
                                      k == A_RES3     ? L
                                      : act_shared(k) ? 1
                                                      : sets,
                                      ovf),
                           ovf);
    for (int k = 0; k < D_NBLOCK; k++)
        total = zc_add_i64(total, grad_size(c, B, T, k, ovf), ovf);
    top_sizes(c, B, T, top, ovf);
    for (int i = 0; i < N_TOP; i++)
        total = zc_add_i64(total, top[i], ovf);
    total = zc_add_i64(total, rope_floats(c, T, ovf), ovf);
    total = zc_add_i64(total, mlp_stage_floats(c, ovf), ovf);
    total = zc_add_i64(total, lora_floats(c, B, T, activation_checkpointing, ovf), ovf);
    return zc_add_i64(zc_mul_i64(total, sizeof(float), ovf), gemm_workspace(c, B, T, compute, ovf),
                      ovf);
}

size_t gpt2_activation_bytes(const gpt2_config *c, int B, int T, bool activation_checkpointing,
                             zc_gemm_type compute)
{
    bool ovf = false;
    int64_t bytes = activation_bytes(c, B, T, activation_checkpointing, compute, &ovf);
    return ovf ? SIZE_MAX : (size_t)bytes;
}

static size_t block_act_size(const gpt2_model *m, int k)
{
    bool ovf = false; /* gpt2_check passed */
    return (size_t)act_size(&m->cfg, m->B, m->T, k, &ovf);
}
static size_t block_grad_size(const gpt2_model *m, int k)
{
    bool ovf = false;
    return (size_t)grad_size(&m->cfg, m->B, m->T, k, &ovf);
}

/* How messages name the model: its family, or gpt2. */
static const char *family_name(const gpt2_config *c)
{
    return c->family[0] ? c->family : "gpt2";
}

static bool num_heads_kv_bad(const gpt2_config *c)
{
    const int kv = gpt2_kv_heads(c);
    return kv < 1 || c->num_heads % kv || gpt2_head_dim(c) < 1 || gpt2_hidden(c) < 1;
}

int gpt2_pad_vocab(int vocab)
{
    int64_t padded = ((int64_t)vocab + 127) / 128 * 128;
    return padded > INT_MAX ? 0 : (int)padded;
}

zc_status gpt2_check(const gpt2_config *c, int B, int T, bool activation_checkpointing,
                     zc_gemm_type compute, zc_err *err)
{
    zc_status st;
    if (c->num_layers < 1 || c->num_heads < 1 || c->channels < 1 || c->vocab_size < 1 ||
        c->max_seq_len < 1)
        return zc_err_set(err, ZC_EINVAL,
                          "gpt2: layers, heads, channels, vocab and sequence "
                          "length must be >= 1 (got L=%d H=%d C=%d V=%d maxT=%d)",
                          c->num_layers, c->num_heads, c->channels, c->vocab_size, c->max_seq_len);
    if (!c->head_dim && c->channels % c->num_heads)
        return zc_err_set(err, ZC_EINVAL, "gpt2: channels %d is not divisible by heads %d",
                          c->channels, c->num_heads);
    if (c->padded_vocab_size == 0)
        return zc_err_set(err, ZC_EINVAL,
                          "gpt2: --vocab %d: at most %d (llm.c pads the "
                          "vocabulary to a multiple of 128, an int)",
                          c->vocab_size, INT_MAX / 128 * 128);
    if (c->padded_vocab_size < c->vocab_size)
        return zc_err_set(err, ZC_EINVAL, "gpt2: padded vocabulary %d < vocabulary %d",
                          c->padded_vocab_size, c->vocab_size);
    if (B < 1 || T < 1 || T > c->max_seq_len)
        return zc_err_set(err, ZC_EINVAL,
                          "gpt2: batch %d × sequence %d: need batch >= 1 and "
                          "1 <= sequence <= max_seq_len %d",
                          B, T, c->max_seq_len);
    /* the products' dimensions are ints (zeroc/gemm.h): B·T rows, up to 4·C columns */
    if (c->num_layers > ZC_GPT2_MAX_LAYERS)
        return zc_err_set(err, ZC_EINVAL, "gpt2: --layers %d: at most %d blocks", c->num_layers,
                          ZC_GPT2_MAX_LAYERS);
    if (c->channels > INT_MAX / 4)
        return zc_err_set(err, ZC_EINVAL,
                          "gpt2: --channels %d: at most %d (the MLP's 4·C "
                          "columns must fit in an int)",
                          c->channels, INT_MAX / 4);
    if (c->kv_heads < 0 || c->head_dim < 0 || c->hidden < 0 || num_heads_kv_bad(c))
        return zc_err_set(err, ZC_EINVAL,
                          "%s: key/value heads %d must divide the %d attention heads; head_dim "
                          "%d and the MLP's width %d must be >= 1",
                          family_name(c), gpt2_kv_heads(c), c->num_heads, gpt2_head_dim(c),
                          gpt2_hidden(c));
    if (c->pos == GPT2_POS_ROPE && (gpt2_head_dim(c) % 2 || !(c->rope_theta > 0)))
        return zc_err_set(err, ZC_EINVAL,
                          "%s: rotary positions need an even head_dim (got %d) and rope_theta > 0 "
                          "(got %g)",
                          family_name(c), gpt2_head_dim(c), c->rope_theta);
    if (c->norm == GPT2_NORM_RMSNORM && !(c->norm_eps > 0))
        return zc_err_set(err, ZC_EINVAL, "%s: rms_norm_eps must be > 0 (got %g)", family_name(c),
                          (double)c->norm_eps);
    if ((int64_t)(c->num_heads + 2 * (int64_t)gpt2_kv_heads(c)) * gpt2_head_dim(c) > INT_MAX ||
        (c->mlp == GPT2_MLP_SWIGLU && gpt2_hidden(c) > INT_MAX / 2))
        return zc_err_set(err, ZC_EINVAL,
                          "%s: the attention's %d + 2 × %d heads of %d, or the MLP's width %d, "
                          "pass an int",
                          family_name(c), c->num_heads, gpt2_kv_heads(c), gpt2_head_dim(c),
                          gpt2_hidden(c));
    if ((int64_t)B * T > INT_MAX)
        return zc_err_set(err, ZC_EINVAL,
                          "gpt2: --micro-batch %d × --seq-len %d = %lld tokens "
                          "per micro-batch: at most %d (the products' rows are an int)",
                          B, T, (long long)B * T, INT_MAX);
    if (c->lora.r != 0 && (st = lora_check(&c->lora, err)))
        return st;
    if (c->lora.r > 0 && gpt2_num_units(c) > ZC_MAX_UNITS)
        return zc_err_set(err, ZC_EINVAL,
                          "%s: %d blocks with LoRA make %d units (a unit of adapters per block); "
                          "zeroc holds at most %d",
                          family_name(c), c->num_layers, gpt2_num_units(c), ZC_MAX_UNITS);
    int mlp_cols;
    const int nmt = gpt2_mlp_tiles(c, &mlp_cols);
    if ((c->tile_params > 0 || nmt > 1) && gpt2_num_units(c) > ZC_MAX_UNITS) {
        int rows, nt = gpt2_vocab_tiles(c, &rows);
        return zc_err_set(err, ZC_EINVAL,
                          "%s: --tile-params %lld splits the vocabulary into %d tiles of %d rows "
                          "each way and each of the %d blocks' MLP into %d tiles of %d columns; "
                          "zeroc holds at most %d units: raise it",
                          family_name(c), (long long)c->tile_params, nt, rows, c->num_layers, nmt,
                          mlp_cols, ZC_MAX_UNITS);
    }
    bool ovf = false;
    int64_t numel = total_numel(c, &ovf);
    if ((ovf || numel > ZC_MAX_NUMEL) && c->family[0])
        return zc_err_set(err, ZC_EINVAL,
                          "%s: num_hidden_layers %d, hidden_size %d, intermediate_size %d, "
                          "num_key_value_heads %d and vocab_size %d make %s%lld parameters; "
                          "zeroc holds at most %lld (2^49)",
                          c->family, c->num_layers, c->channels, gpt2_hidden(c), gpt2_kv_heads(c),
                          c->vocab_size, ovf ? "more than " : "", (long long)numel,
                          (long long)ZC_MAX_NUMEL);
    if (ovf || numel > ZC_MAX_NUMEL)
        return zc_err_set(err, ZC_EINVAL,
                          "gpt2: --layers %d, --channels %d, --vocab %d "
                          "(padded %d) and --max-seq-len %d make %s%lld parameters; zeroc holds "
                          "at most %lld (2^49)",
                          c->num_layers, c->channels, c->vocab_size, c->padded_vocab_size,
                          c->max_seq_len, ovf ? "more than " : "", (long long)numel,
                          (long long)ZC_MAX_NUMEL);
    activation_bytes(c, B, T, activation_checkpointing, compute, &ovf);
    if (ovf)
        return zc_err_set(err, ZC_EINVAL,
                          "gpt2: the activations of --micro-batch %d × --seq-len "
                          "%d (%d blocks, %d channels, %d heads, vocabulary %d) do not fit in 64 "
                          "bits",
                          B, T, c->num_layers, c->channels, c->num_heads, c->padded_vocab_size);
    return ZC_OK;
}

/* The rotary angles of positions 0 … T−1: θ(t, i) = t · f_i with f_i = theta^(−2i/hd) (i < hd/2),
 * or Llama 3.1's banded frequencies (rope_scaling "llama3": wavelengths longer than
 * original_max / low_freq_factor slowed by factor, shorter than original_max / high_freq_factor
 * kept, those between blended), computed in double and rounded once. */
static void rope_tables(const gpt2_config *c, int T, float *cosv, float *sinv)
{
    const int hd = gpt2_head_dim(c), half = hd / 2;
    for (int i = 0; i < half; i++) {
        double f = pow(c->rope_theta, -2.0 * i / hd);
        if (c->rope_factor > 0) {
            const double wavelen = 2.0 * M_PI / f, old = c->rope_orig_max;
            const double low = old / c->rope_low_freq, high = old / c->rope_high_freq;
            if (wavelen > low)
                f /= c->rope_factor;
            else if (wavelen >= high) {
                const double s =
                    (old / wavelen - c->rope_low_freq) / (c->rope_high_freq - c->rope_low_freq);
                f = (1.0 - s) * f / c->rope_factor + s * f;
            }
        }
        for (int t = 0; t < T; t++) {
            cosv[(size_t)t * half + i] = (float)cos(t * f);
            sinv[(size_t)t * half + i] = (float)sin(t * f);
        }
    }
}

/* LoRA: block l's adapters as unit "h.<l>.lora", after every unit of the base (whose parameter
 * numbers, and so initial values, stay those of the model without adapters), and the base
 * frozen. A as PEFT draws it (kaiming_uniform with a = √5: U(±1/√in)), B zero. */
/* lp: with vocabulary tiles, the number the first adapter parameter has untiled (its random
 * stream, zc_engine_param_init_as), so that tiling changes no adapter's values; −1 untiled. */
static zc_status register_lora(gpt2_model *m, int lp, zc_err *err)
{
    const gpt2_config *c = &m->cfg;
    const int L = c->num_layers, end = zc_engine_num_units(m->e), first = end - base_units(c);
    m->nslots = gpt2_lora_slots(c, m->slots);
    m->u_lora = malloc((size_t)L * sizeof *m->u_lora);
    m->p_lora = malloc((size_t)L * (size_t)m->nslots * 2 * sizeof *m->p_lora);
    if (!m->u_lora || !m->p_lora)
        return zc_err_set(err, ZC_ENOMEM, "gpt2: out of memory");
    const int64_t r = c->lora.r;
    for (int l = 0; l < L; l++) {
        char name[ZC_MAX_NAME];
        snprintf(name, sizeof name, "h.%d.lora", l);
        m->u_lora[l] = zc_engine_add_unit(m->e, name);
        for (int k = 0; k < m->nslots; k++) {
            const lora_slot *sl = &m->slots[k];
            const char *t = lora_target_name(sl->target);
            int *p = &m->p_lora[((size_t)l * m->nslots + k) * 2];
            snprintf(name, sizeof name, "h.%d.lora.%s.A", l, t);
            p[0] = zc_engine_add_param(m->e, m->u_lora[l], name, 2, (int64_t[]){r, sl->in},
                                       (zc_init){ZC_INIT_UNIFORM, (float)(1.0 / sqrt(sl->in))});
            snprintf(name, sizeof name, "h.%d.lora.%s.B", l, t);
            p[1] = zc_engine_add_param(m->e, m->u_lora[l], name, 2, (int64_t[]){sl->out_n, r},
                                       (zc_init){ZC_INIT_CONST, 0.0f});
            for (int i = 0; lp >= 0 && i < 2; i++)
                if (p[i] >= 0)
                    zc_engine_param_init_as(m->e, p[i], lp++, 0);
        }
    }
    for (int u = first < 0 ? 0 : first; u < end; u++) /* a refusal: finalize reports it */
        zc_engine_freeze_unit(m->e, u);
    return ZC_OK;
}

zc_status gpt2_create(gpt2_model **out, zc_engine *e, zc_mem *mem, const gpt2_config *cfg, int B,
                      int T, bool activation_checkpointing, zc_err *err)
{
    /* The products run in bf16 when the parameters are stored in bf16. */
    const zc_gemm_type compute = zc_engine_dtype(e) == ZC_BF16 ? ZC_GEMM_BF16 : ZC_GEMM_F32;
    zc_status st = gpt2_check(cfg, B, T, activation_checkpointing, compute, err);
    if (st)
        return st;
    gpt2_model *m = calloc(1, sizeof *m);
    if (!m)
        return zc_err_set(err, ZC_ENOMEM, "gpt2: out of memory");
    const int L = cfg->num_layers;
    m->cfg = *cfg, m->e = e, m->mem = mem, m->B = B, m->T = T;
    m->d = dims_of(cfg);
    m->checkpointing = activation_checkpointing;
    m->u_block = calloc((size_t)L, sizeof(int));
    m->p_block = calloc((size_t)L * P_NBLOCK, sizeof(int));
    m->act = calloc((size_t)L * A_NBLOCK, sizeof(float *));
    if (!m->u_block || !m->p_block || !m->act) {
        gpt2_destroy(m);
        return zc_err_set(err, ZC_ENOMEM, "gpt2: out of memory");
    }

    /* Units and parameters, llm.c's names and layouts; the architecture's absent parameters
     * are not registered (their ids −1). */
    const dims d = m->d;
    const int64_t C = d.C, Vp = cfg->padded_vocab_size, maxT = cfg->max_seq_len;
    const bool plain = gpt2_is_plain(cfg);
    /* GPT-2 scales its residual projections by 1/√(2L); transformers' Llama family draws every
     * matrix from N(0, initializer_range 0.02) */
    const zc_init w02 = {ZC_INIT_NORMAL, 0.02f}, zero = {ZC_INIT_CONST, 0.0f},
                  one = {ZC_INIT_CONST, 1.0f},
                  wres = plain ? (zc_init){ZC_INIT_NORMAL, (float)(0.02 / sqrt(2.0 * L))} : w02;
    /* Tiled, each parameter draws the initial values it would have untiled: its number there
     * (lp, counted as the untiled model registers them), a tile from its first row's element. */
    int tile_rows, lp = 0, mlp_cols;
    const int nt = gpt2_vocab_tiles(cfg, &tile_rows), nmt = gpt2_mlp_tiles(cfg, &mlp_cols);
#define AS(param, first)                                                                           \
    ((void)((nt > 1 || nmt > 1) && (param) >= 0 &&                                                 \
            zc_engine_param_init_as(e, (param), lp, (first))))
    m->mlp_bw = gpt2_mlp_block_cols(cfg);
    m->nmt = nmt;
    m->mlp = m->mlp_bw ? calloc((size_t)L * (size_t)nmt, sizeof *m->mlp) : NULL;
    if (m->mlp_bw && !m->mlp) {
        gpt2_destroy(m);
        return zc_err_set(err, ZC_ENOMEM, "gpt2: out of memory");
    }
    m->ntiles = nt;
    m->emb_tiles = calloc((size_t)nt, sizeof *m->emb_tiles);
    m->head_tiles = calloc((size_t)nt, sizeof *m->head_tiles);
    if (!m->emb_tiles || !m->head_tiles) {
        gpt2_destroy(m);
        return zc_err_set(err, ZC_ENOMEM, "gpt2: out of memory");
    }
    for (int t = 0; t < nt; t++) { /* the same rows for the embedding's and the head's tiles */
        const int r0 = t * tile_rows, rows = t == nt - 1 ? (int)Vp - r0 : tile_rows;
        m->emb_tiles[t] = m->head_tiles[t] = (struct vocab_tile){-1, -1, r0, rows, NULL};
    }
    if (nt == 1) {
        m->u_emb = zc_engine_add_unit(e, "embeddings");
        m->p_wte = zc_engine_add_param(e, m->u_emb, "wte", 2, (int64_t[]){Vp, C}, w02);
        m->p_wpe = cfg->pos == GPT2_POS_LEARNED
                       ? zc_engine_add_param(e, m->u_emb, "wpe", 2, (int64_t[]){maxT, C}, w02)
                       : -1;
        m->emb_tiles[0].unit = m->u_emb, m->emb_tiles[0].param = m->p_wte;
        lp += 1 + (m->p_wpe >= 0);
    } else { /* learned positions in the last tile's unit, after its rows */
        m->p_wte = -1;
        for (int t = 0; t < nt; t++) {
            struct vocab_tile *v = &m->emb_tiles[t];
            char name[ZC_MAX_NAME];
            snprintf(name, sizeof name, "embeddings.%d", t);
            v->unit = zc_engine_add_unit(e, name);
            snprintf(name, sizeof name, "wte.%d", t);
            v->param = zc_engine_add_param(e, v->unit, name, 2, (int64_t[]){v->rows, C}, w02);
            AS(v->param, (int64_t)v->row0 * C);
        }
        m->u_emb = m->emb_tiles[0].unit;
        lp++;
        m->p_wpe = cfg->pos == GPT2_POS_LEARNED
                       ? zc_engine_add_param(e, m->emb_tiles[nt - 1].unit, "wpe", 2,
                                             (int64_t[]){maxT, C}, w02)
                       : -1;
        AS(m->p_wpe, 0);
        lp += m->p_wpe >= 0;
    }
    for (int l = 0; l < L; l++) {
        char name[ZC_MAX_NAME];
        snprintf(name, sizeof name, "h.%d", l);
        m->u_block[l] = zc_engine_add_unit(e, name);
        const struct {
            int ndim;
            int64_t d0, d1;
            zc_init init;
        } shape[P_NBLOCK] = {{1, C, 0, one},    {1, C, 0, zero},    {2, d.W, C, w02},
                             {1, d.W, 0, zero}, {2, C, d.QD, wres}, {1, C, 0, zero},
                             {1, C, 0, one},    {1, C, 0, zero},    {2, d.F, C, w02},
                             {1, d.F, 0, zero}, {2, C, d.I, wres},  {1, C, 0, zero}};
        int lp_fc = -1, lp_fcproj = -1; /* their numbers untiled */
        for (int k = 0; k < P_NBLOCK; k++) {
            m->p_block[l * P_NBLOCK + k] = -1;
            if (!has_block_param(cfg, k))
                continue;
            if (nmt > 1 && (k == P_FCW || k == P_FCPROJW)) { /* in the MLP's tiles, below */
                *(k == P_FCW ? &lp_fc : &lp_fcproj) = lp++;
                continue;
            }
            snprintf(name, sizeof name, "h.%d.%s", l, BLOCK_PARAM[k]);
            m->p_block[l * P_NBLOCK + k] =
                zc_engine_add_param(e, m->u_block[l], name, shape[k].ndim,
                                    (int64_t[]){shape[k].d0, shape[k].d1}, shape[k].init);
            AS(m->p_block[l * P_NBLOCK + k], 0);
            lp++;
        }
        const int64_t I = d.I;
        for (int t = 0; m->mlp && t < nmt; t++) {
            struct mlp_tile *mt = &m->mlp[(size_t)l * nmt + t];
            if (nmt == 1) { /* the block's own matrices */
                const int fc = m->p_block[l * P_NBLOCK + P_FCW];
                *mt = (struct mlp_tile){m->u_block[l],
                                        fc,
                                        fc,
                                        m->p_block[l * P_NBLOCK + P_FCPROJW],
                                        0,
                                        (size_t)(I * C),
                                        (int)I,
                                        0,
                                        (int)I};
                break;
            }
            const int c0 = t * mlp_cols, cols = t == nmt - 1 ? (int)I - c0 : mlp_cols;
            snprintf(name, sizeof name, "h.%d.mlp.%d", l, t);
            *mt = (struct mlp_tile){zc_engine_add_unit(e, name), -1, -1, -1, 0, 0, cols, c0, cols};
            snprintf(name, sizeof name, "h.%d.gate.%d", l, t);
            mt->p_gate = zc_engine_add_param(e, mt->unit, name, 2, (int64_t[]){cols, C}, w02);
            snprintf(name, sizeof name, "h.%d.up.%d", l, t);
            mt->p_up = zc_engine_add_param(e, mt->unit, name, 2, (int64_t[]){cols, C}, w02);
            snprintf(name, sizeof name, "h.%d.down.%d", l, t);
            mt->p_down = zc_engine_add_param(e, mt->unit, name, 2, (int64_t[]){C, cols}, wres);
            /* the values the whole would have: gate's and up's rows of fcw, down's columns */
            if (mt->p_gate >= 0)
                zc_engine_param_init_as(e, mt->p_gate, lp_fc, (int64_t)c0 * C);
            if (mt->p_up >= 0)
                zc_engine_param_init_as(e, mt->p_up, lp_fc, (I + c0) * C);
            if (mt->p_down >= 0)
                zc_engine_param_init_as_cols(e, mt->p_down, lp_fcproj, c0, cols, I);
        }
    }
    m->u_lnf = zc_engine_add_unit(e, "ln_f");
    m->p_lnfw = zc_engine_add_param(e, m->u_lnf, "lnfw", 1, (int64_t[]){C}, one);
    AS(m->p_lnfw, 0);
    lp++;
    m->p_lnfb = cfg->norm == GPT2_NORM_LAYERNORM
                    ? zc_engine_add_param(e, m->u_lnf, "lnfb", 1, (int64_t[]){C}, zero)
                    : -1;
    AS(m->p_lnfb, 0);
    lp += m->p_lnfb >= 0;
    m->p_head = cfg->untied && nt == 1
                    ? zc_engine_add_param(e, m->u_lnf, "lm_head", 2, (int64_t[]){Vp, C}, w02)
                    : -1;
    AS(m->p_head, 0);
    if (nt == 1) /* untied, in ln_f's unit; tied, the embeddings' */
        m->head_tiles[0] = cfg->untied ? (struct vocab_tile){m->u_lnf, m->p_head, 0, (int)Vp, NULL}
                                       : m->emb_tiles[0];
    for (int t = 0; nt > 1 && !cfg->untied && t < nt; t++) /* tied: the embedding's tiles */
        m->head_tiles[t] = m->emb_tiles[t];
    for (int t = 0; nt > 1 && cfg->untied && t < nt; t++) {
        struct vocab_tile *v = &m->head_tiles[t];
        char name[ZC_MAX_NAME];
        snprintf(name, sizeof name, "lm_head.%d", t);
        v->unit = zc_engine_add_unit(e, name);
        v->param = zc_engine_add_param(e, v->unit, name, 2, (int64_t[]){v->rows, C}, w02);
        AS(v->param, (int64_t)v->row0 * C);
    }
#undef AS
    /* the adapters' untiled numbers follow the base's (lm_head's, untied) */
    if (cfg->lora.r > 0 && (st = register_lora(m, nt > 1 ? lp + (cfg->untied ? 1 : 0) : -1, err))) {
        gpt2_destroy(m);
        return st;
    }
    /* how the products use each unit, for the memory estimate */
    const int nunits = gpt2_num_units(cfg), first = zc_engine_num_units(e) - nunits;
    size_t *vec = malloc((size_t)nunits * sizeof *vec);
    uint8_t *use = malloc((size_t)nunits);
    if (!vec || !use) {
        free(vec);
        free(use);
        gpt2_destroy(m);
        return zc_err_set(err, ZC_ENOMEM, "gpt2: out of memory");
    }
    gpt2_unit_work(cfg, compute, vec, use);
    for (int u = 0; first >= 0 && u < nunits; u++) /* a refused registration: finalize says */
        zc_engine_unit_use(e, first + u, use[u]);
    free(vec);
    free(use);

    /* Activations: one arena, carved by the size table; in bf16 mode the products' workspace
     * at its end. */
    size_t total =
        gpt2_activation_bytes(cfg, B, T, activation_checkpointing, compute) / sizeof(float);
    int64_t top[N_TOP];
    bool ovf = false; /* checked above */
    top_sizes(cfg, B, T, top, &ovf);
    m->arena_floats = total;
    m->arena = zc_mem_alloc(mem, ZC_MEM_ACTIVATIONS, total * sizeof(float));
    if (!m->arena) {
        gpt2_destroy(m);
        return zc_err_set(err, ZC_ENOMEM, "gpt2: out of memory for activations (%zu bytes)",
                          total * sizeof(float));
    }
    float *p = m->arena;
    for (int k = 0; k < A_NBLOCK; k++)
        for (int l = 0; l < L; l++) {
            bool own = k == A_RES3 || (!activation_checkpointing && !act_shared(k)) || l == 0;
            m->act[l * A_NBLOCK + k] = own ? p : m->act[k];
            if (own)
                p += block_act_size(m, k);
        }
    for (int k = 0; k < D_NBLOCK; k++) {
        m->dact[k] = p;
        p += block_grad_size(m, k);
    }
    float **tops[] = {&m->encoded, &m->lnf,  &m->lnf_mean, &m->lnf_rstd, &m->logits,
                      &m->losses,  &m->dlnf, &m->dres[0],  &m->dres[1]};
    for (int i = 0; i < N_TOP; i++) {
        *tops[i] = p;
        p += top[i];
    }
    if (cfg->lora.r > 0) { /* the adapters' kept products, dU, the dropped input */
        const lora_dims ld = lora_dims_of(cfg);
        const int64_t BT = (int64_t)B * T, sets = activation_checkpointing ? 1 : L;
        m->lora_u = p;
        p += lora_block_act_floats(&cfg->lora, &ld, BT) * sets;
        m->lora_du = p;
        m->lora_scratch = cfg->lora.dropout > 0 ? p + BT * cfg->lora.r : NULL;
        p += lora_scratch_floats(&cfg->lora, &ld, BT);
    }
    m->gemm =
        (gpt2_gemm){.type = compute, .ws_bytes = (size_t)gemm_workspace(cfg, B, T, compute, &ovf)};
    m->gemm.ws = m->gemm.ws_bytes ? p : NULL;
    p += m->gemm.ws_bytes / sizeof(float);
    if (cfg->pos == GPT2_POS_ROPE) {
        m->rope_cos = p;
        m->rope_sin = p + (size_t)T * (size_t)(d.hd / 2);
        p += rope_floats(cfg, T, &ovf);
        rope_tables(cfg, T, m->rope_cos, m->rope_sin);
    }
    m->mlp_stage = p;
    p += mlp_stage_floats(cfg, &ovf);
    ZC_ASSERT(p == m->arena + total);
    *out = m;
    return ZC_OK;
}

void gpt2_destroy(gpt2_model *m)
{
    if (!m)
        return;
    zc_mem_free(m->mem, ZC_MEM_ACTIVATIONS, m->arena, m->arena_floats * sizeof(float));
    free(m->mlp);
    free(m->u_block);
    free(m->p_block);
    free(m->act);
    free(m->emb_tiles);
    free(m->head_tiles);
    free(m->u_lora);
    free(m->p_lora);
    free(m);
}

const gpt2_config *gpt2_get_config(const gpt2_model *m)
{
    return &m->cfg;
}
zc_engine *gpt2_engine(const gpt2_model *m)
{
    return m->e;
}
const float *gpt2_logits(const gpt2_model *m)
{
    return m->logits;
}

void gpt2_batch_shape(const gpt2_model *m, int *B, int *T)
{
    *B = m->B;
    *T = m->T;
}

/* ---------- forward ---------- */

/* A parameter's fp32 values; NULL for one the architecture does not have (id −1). */
static float *P(gpt2_model *m, int param)
{
    return param < 0 ? NULL : zc_engine_param(m->e, param);
}
static float *W(gpt2_model *m, int l, int k)
{
    return P(m, m->p_block[l * P_NBLOCK + k]);
}

/* A weight matrix for a product (or the embedding lookup), as the two arguments the matmul and
 * encoder layers take: in bf16 mode the engine's stored bf16 bits (never widened to fp32 as a
 * whole), else the fp32 values. */
static const float *mat32(gpt2_model *m, int param)
{
    return m->gemm.type == ZC_GEMM_BF16 ? NULL : zc_engine_param(m->e, param);
}
static const uint16_t *mat16(gpt2_model *m, int param)
{
    return m->gemm.type == ZC_GEMM_BF16 ? zc_engine_param_stored(m->e, param) : NULL;
}
#define MAT(m, param) mat32(m, param), mat16(m, param)
/* The learned positions (none: NULL, NULL) as the encoder takes them: in bf16 mode read as
 * stored, so that the embeddings' unit never needs an fp32 view of a whole matrix (at 2.2 B, the
 * 386 MB of a fp32 copy of wte beside wpe's). */
#define POS(m, param) ((param) < 0 ? NULL : mat32(m, param)), ((param) < 0 ? NULL : mat16(m, param))
#define BMAT(m, l, k) MAT(m, (m)->p_block[(l)*P_NBLOCK + (k)])
static float *A(gpt2_model *m, int l, int k)
{
    return m->act[l * A_NBLOCK + k];
}
static float *block_input(gpt2_model *m, int l)
{
    return l == 0 ? m->encoded : A(m, l - 1, A_RES3);
}

/* A norm's forward: LayerNorm (mean, rstd saved) or RMSNorm (rstd saved). */
static void norm_forward(const gpt2_model *m, float *out, float *mean, float *rstd,
                         const float *inp, const float *w, const float *b, int N)
{
    const int C = m->cfg.channels;
    if (m->cfg.norm == GPT2_NORM_RMSNORM)
        gpt2_rmsnorm_forward(out, rstd, inp, w, N, C, (float)m->cfg.norm_eps);
    else
        gpt2_layernorm_forward(out, mean, rstd, inp, w, b, N, C);
}
static void norm_backward(const gpt2_model *m, float *dinp, float *dw, float *db, const float *dout,
                          const float *inp, const float *w, const float *mean, const float *rstd,
                          int N)
{
    const int C = m->cfg.channels;
    if (m->cfg.norm == GPT2_NORM_RMSNORM)
        gpt2_rmsnorm_backward(dinp, dw, dout, inp, w, rstd, N, C);
    else
        gpt2_layernorm_backward(dinp, dw, db, dout, inp, w, mean, rstd, N, C);
}

/* LoRA: what slot k of block l kept for the backward (BT × r). */
static float *lora_kept(gpt2_model *m, int l, int k)
{
    const size_t set = m->checkpointing ? 0 : (size_t)l, BT = (size_t)m->B * (size_t)m->T;
    return m->lora_u + (set * (size_t)m->nslots + (size_t)k) * BT * (size_t)m->cfg.lora.r;
}
/* The dropout masks' stream of slot k of block l in this training forward. */
static uint64_t lora_stream(const gpt2_model *m, int l, int k)
{
    return (m->passes * (uint64_t)m->cfg.num_layers + (uint64_t)l) * LORA_NTARGETS +
           (uint64_t)m->slots[k].target;
}
static int lora_param(const gpt2_model *m, int l, int k, int which)
{
    return m->p_lora[((size_t)l * m->nslots + k) * 2 + which];
}

/* LoRA: the adapters of product p of block l (acquired with it) add to its output y (ld_y
 * columns) from its input x (NULL y: only what they keep for the backward). */
static void lora_block_forward(gpt2_model *m, int l, lora_product p, const float *x, float *y,
                               int ld_y)
{
    for (int k = 0; k < m->nslots; k++)
        if (m->slots[k].product == p)
            lora_forward(&m->cfg.lora, &m->slots[k], m->B * m->T, x,
                         zc_engine_param(m->e, lora_param(m, l, k, 0)),
                         zc_engine_param(m->e, lora_param(m, l, k, 1)), lora_kept(m, l, k), y, ld_y,
                         m->training, lora_stream(m, l, k), m->lora_scratch);
}

/* Their backward from dy, adding to dx and to the adapters' gradients. */
static zc_status lora_block_backward(gpt2_model *m, int l, lora_product p, const float *x,
                                     const float *dy, int ld_y, float *dx, zc_err *err)
{
    for (int k = 0; k < m->nslots; k++) {
        if (m->slots[k].product != p)
            continue;
        const int pa = lora_param(m, l, k, 0), pb = lora_param(m, l, k, 1);
        float *dA = zc_engine_grad(m->e, pa), *dB = zc_engine_grad(m->e, pb);
        if (!dA || !dB)
            return zc_err_set(err, ZC_ENOMEM, "%s: out of memory for the LoRA gradients of h.%d",
                              family_name(&m->cfg), l);
        lora_backward(&m->cfg.lora, &m->slots[k], m->B * m->T, x, zc_engine_param(m->e, pa),
                      zc_engine_param(m->e, pb), lora_kept(m, l, k), dy, ld_y, dx, dA, dB,
                      m->training, lora_stream(m, l, k), m->lora_du, m->lora_scratch);
    }
    return ZC_OK;
}

/* Part of a weight from element off on, as the products take it (mat32 / mat16). */
static gpt2_weight weight_part(gpt2_model *m, int param, size_t off)
{
    const float *w = mat32(m, param);
    const uint16_t *w16 = mat16(m, param);
    return (gpt2_weight){w ? w + off : NULL, w16 ? w16 + off : NULL};
}

/* Down's columns [b, b + w) of tile mt, copied dense (C × w) into the staging: its products then
 * take the same operands tiled or not (oneDNN's kernels differ with a matrix's row length). */
static gpt2_weight down_dense(gpt2_model *m, const struct mlp_tile *mt, int b, int w)
{
    const int C = m->cfg.channels;
    const gpt2_weight src = weight_part(m, mt->p_down, (size_t)b);
    float *dst = src.w ? m->mlp_stage : NULL;
    uint16_t *dst16 = src.w16 ? (uint16_t *)(void *)m->mlp_stage : NULL;
    for (int r = 0; r < C; r++) {
        const size_t from = (size_t)r * mt->ld_down, to = (size_t)r * w;
        if (dst)
            memcpy(dst + to, src.w + from, (size_t)w * sizeof *dst);
        if (dst16)
            memcpy(dst16 + to, src.w16 + from, (size_t)w * sizeof *dst16);
    }
    return (gpt2_weight){dst, dst16};
}

/* The MLP's tile t of block l (its unit acquired) over N rows of x (N × C), block of columns by
 * block: with gate_up, the gate and up products into fch's columns (N × F); with act, their
 * SwiGLU into h's (N × I); with down, also the output product into y (N × C), written by the
 * MLP's first column block and added to by each block after it — the same products in the same
 * order tiled or not. */
static void mlp_tile_forward(gpt2_model *m, int l, int t, const float *x, float *fch, float *h,
                             float *y, int N, bool gate_up, bool act, bool down, const gpt2_gemm *g)
{
    const struct mlp_tile *mt = &m->mlp[(size_t)l * m->nmt + t];
    const int C = m->cfg.channels, I = (int)m->d.I, F = (int)m->d.F, bw = m->mlp_bw;
    for (int b = 0; gate_up && b < mt->cols; b += bw) {
        const int w = mt->cols - b < bw ? mt->cols - b : bw, c = mt->c0 + b;
        const gpt2_weight wg = weight_part(m, mt->p_gate, mt->gate_off + (size_t)b * C),
                          wu = weight_part(m, mt->p_up, mt->up_off + (size_t)b * C);
        gpt2_matmul_forward_strided(fch + c, F, x, C, wg.w, wg.w16, C, N, C, w, false, g);
        gpt2_matmul_forward_strided(fch + I + c, F, x, C, wu.w, wu.w16, C, N, C, w, false, g);
    }
    for (int b = 0; act && b < mt->cols; b += bw) {
        const int w = mt->cols - b < bw ? mt->cols - b : bw, c = mt->c0 + b;
        gpt2_swiglu_forward_cols(h + c, I, fch + c, F, I, N, w);
        if (!down)
            continue;
        const gpt2_weight wd = down_dense(m, mt, b, w);
        gpt2_matmul_forward_strided(y, C, h + c, I, wd.w, wd.w16, w, N, w, C, c > 0, g);
    }
}

/* Block l's MLP activation h (A_FCH_GELU, one buffer for all blocks: act_shared) from its kept
 * input fch, by the forward's own calls (in column blocks where the forward takes them): the
 * same bits for the backward's products. */
static void mlp_act_forward(gpt2_model *m, int l)
{
    const int BT = m->B * m->T;
    float *fch = A(m, l, A_FCH), *h = A(m, l, A_FCH_GELU);
    if (m->mlp_bw)
        for (int t = 0; t < m->nmt; t++)
            mlp_tile_forward(m, l, t, NULL, fch, h, NULL, BT, false, true, false, &m->gemm);
    else if (m->cfg.mlp == GPT2_MLP_SWIGLU)
        gpt2_swiglu_forward(h, fch, BT, (int)m->d.I);
    else
        gpt2_gelu_forward(h, fch, (size_t)BT * m->d.I);
}

/* A matrix's gradient buffer as G hands it out: *g16 (bf16, written by the product) or *g
 * (fp32, *fresh: to be overwritten); both NULL when frozen (LoRA). false: out of memory. */
static bool matrix_grad(gpt2_model *m, int param, float **g, uint16_t **g16, bool *fresh)
{
    *fresh = false;
    *g16 = NULL;
    *g = NULL;
    if (param < 0 || m->cfg.lora.r > 0) /* not in this architecture, or frozen */
        return true;
    if (m->gemm.type == ZC_GEMM_BF16 && mat16(m, param) && (*g16 = zc_engine_grad16(m->e, param)))
        return true;
    return (*g = zc_engine_grad_fresh(m->e, param, fresh)) != NULL;
}

/* The backward of mlp_tile_forward (blocks last to first): with down, the output product's
 * (the gradient of h's columns and of down); with rest, the SwiGLU's and the gate and up
 * products' (their gradients, and the second norm's output's, added to block after block). */
static zc_status mlp_tile_backward(gpt2_model *m, int l, int t, bool down, bool rest, zc_err *err)
{
    const struct mlp_tile *mt = &m->mlp[(size_t)l * m->nmt + t];
    const int BT = m->B * m->T, C = m->cfg.channels, I = (int)m->d.I, F = (int)m->d.F;
    const int bw = m->mlp_bw, nb = (mt->cols + bw - 1) / bw;
    float *gg, *gu, *gd;
    uint16_t *gg16, *gu16, *gd16;
    bool fg, fu, fd;
    if (!matrix_grad(m, mt->p_gate, &gg, &gg16, &fg) ||
        !matrix_grad(m, mt->p_down, &gd, &gd16, &fd))
        return zc_err_set(err, ZC_ENOMEM, "%s: out of memory for the gradients of h.%d's MLP",
                          family_name(&m->cfg), l);
    if (mt->p_up == mt->p_gate) /* untiled: fcw, gate rows then up rows */
        gu = gg, gu16 = gg16, fu = fg;
    else if (!matrix_grad(m, mt->p_up, &gu, &gu16, &fu))
        return zc_err_set(err, ZC_ENOMEM, "%s: out of memory for the gradients of h.%d's MLP",
                          family_name(&m->cfg), l);
    float **d = m->dact;
    const float *x = A(m, l, A_LN2), *fch = A(m, l, A_FCH), *h = A(m, l, A_FCH_GELU);
    for (int j = nb - 1; down && j >= 0; j--) { /* down's block and gradient dense, as above */
        const int b = j * bw, w = mt->cols - b < bw ? mt->cols - b : bw, c = mt->c0 + b;
        const gpt2_weight wd = down_dense(m, mt, b, w);
        float *sg = m->mlp_stage + (size_t)C * bw; /* the gradient's dense block */
        uint16_t *sg16 = (uint16_t *)(void *)sg;
        const size_t ld = (size_t)mt->ld_down, wb = (size_t)w;
        for (int r = 0; gd && !fd && r < C; r++) /* added to: its values first */
            memcpy(sg + r * wb, gd + r * ld + b, wb * sizeof *sg);
        gpt2_matmul_backward_strided(d[D_FCH_GELU] + c, I, gd ? sg : NULL, gd16 ? sg16 : NULL,
                                     d[D_FCPROJ], C, h + c, I, wd.w, wd.w16, w, BT, w, C, fd,
                                     &m->gemm);
        for (int r = 0; (gd || gd16) && r < C; r++)
            if (gd)
                memcpy(gd + r * ld + b, sg + r * wb, wb * sizeof *sg);
            else
                memcpy(gd16 + r * ld + b, sg16 + r * wb, wb * sizeof *sg16);
    }
    for (int j = nb - 1; rest && j >= 0; j--) {
        const int b = j * bw, w = mt->cols - b < bw ? mt->cols - b : bw, c = mt->c0 + b;
        const size_t og = mt->gate_off + (size_t)b * C, ou = mt->up_off + (size_t)b * C;
        const gpt2_weight wg = weight_part(m, mt->p_gate, og), wu = weight_part(m, mt->p_up, ou);
        gpt2_swiglu_backward_cols(d[D_FCH] + c, fch + c, F, I, d[D_FCH_GELU] + c, I, BT, w);
        gpt2_matmul_backward_strided(d[D_LN2], C, gg ? gg + og : NULL, gg16 ? gg16 + og : NULL,
                                     d[D_FCH] + c, F, x, C, wg.w, wg.w16, C, BT, C, w, fg,
                                     &m->gemm);
        gpt2_matmul_backward_strided(d[D_LN2], C, gu ? gu + ou : NULL, gu16 ? gu16 + ou : NULL,
                                     d[D_FCH] + I + c, F, x, C, wu.w, wu.w16, C, BT, C, w, fu,
                                     &m->gemm);
    }
    return ZC_OK;
}

/* Block l's forward from its input; the unit must be acquired. A recompute (checkpointing's, in
 * the backward) stops before the MLP's output product: the backward reads that product's input
 * and the block's kept output, never the product itself, so a third of the MLP's work is not
 * redone (the adapters on it still keep what their backward reads). */
static void block_forward(gpt2_model *m, int l, bool recompute)
{
    const int B = m->B, T = m->T, C = m->cfg.channels, NH = m->cfg.num_heads;
    const int BT = B * T, KV = (int)m->d.KV, hd = (int)m->d.hd, QD = (int)m->d.QD;
    const int Wd = (int)m->d.W, I = (int)m->d.I, F = (int)m->d.F;
    float *res = block_input(m, l);
    norm_forward(m, A(m, l, A_LN1), A(m, l, A_LN1_MEAN), A(m, l, A_LN1_RSTD), res, W(m, l, P_LN1W),
                 W(m, l, P_LN1B), BT);
    gpt2_matmul_forward(A(m, l, A_QKV), A(m, l, A_LN1), BMAT(m, l, P_QKVW), W(m, l, P_QKVB), BT, C,
                        Wd, &m->gemm);
    lora_block_forward(m, l, LORA_QKV, A(m, l, A_LN1), A(m, l, A_QKV), Wd);
    if (m->rope_cos) /* q and k heads turn; v's do not */
        gpt2_rope_forward(A(m, l, A_QKV), m->rope_cos, m->rope_sin, B, T, Wd, NH + KV, hd);
    gpt2_attention_gqa_forward(A(m, l, A_ATTY), A(m, l, A_PREATT), A(m, l, A_ATT), A(m, l, A_QKV),
                               B, T, NH, KV, hd, &m->gemm);
    gpt2_matmul_forward(A(m, l, A_ATTPROJ), A(m, l, A_ATTY), BMAT(m, l, P_ATTPROJW),
                        W(m, l, P_ATTPROJB), BT, QD, C, &m->gemm);
    lora_block_forward(m, l, LORA_ATTPROJ, A(m, l, A_ATTY), A(m, l, A_ATTPROJ), C);
    gpt2_residual_forward(A(m, l, A_RES2), res, A(m, l, A_ATTPROJ), (size_t)BT * C);
    norm_forward(m, A(m, l, A_LN2), A(m, l, A_LN2_MEAN), A(m, l, A_LN2_RSTD), A(m, l, A_RES2),
                 W(m, l, P_LN2W), W(m, l, P_LN2B), BT);
    if (m->nmt > 1) /* the MLP's tiles follow, each in its own unit (mlp_tiles_forward) */
        return;
    if (m->mlp_bw) { /* in column blocks; the adapters after the products, as below */
        float *fch = A(m, l, A_FCH), *h = A(m, l, A_FCH_GELU), *y = A(m, l, A_FCPROJ);
        mlp_tile_forward(m, l, 0, A(m, l, A_LN2), fch, h, y, BT, true, false, false, &m->gemm);
        lora_block_forward(m, l, LORA_FC, A(m, l, A_LN2), fch, F);
        mlp_tile_forward(m, l, 0, A(m, l, A_LN2), fch, h, y, BT, false, true, !recompute, &m->gemm);
        lora_block_forward(m, l, LORA_FCPROJ, h, recompute ? NULL : y, C);
        if (!recompute)
            gpt2_residual_forward(A(m, l, A_RES3), A(m, l, A_RES2), y, (size_t)BT * C);
        return;
    }
    gpt2_matmul_forward(A(m, l, A_FCH), A(m, l, A_LN2), BMAT(m, l, P_FCW), W(m, l, P_FCB), BT, C, F,
                        &m->gemm);
    lora_block_forward(m, l, LORA_FC, A(m, l, A_LN2), A(m, l, A_FCH), F);
    if (m->cfg.mlp == GPT2_MLP_SWIGLU)
        gpt2_swiglu_forward(A(m, l, A_FCH_GELU), A(m, l, A_FCH), BT, I);
    else
        gpt2_gelu_forward(A(m, l, A_FCH_GELU), A(m, l, A_FCH), (size_t)BT * I);
    if (recompute) {
        lora_block_forward(m, l, LORA_FCPROJ, A(m, l, A_FCH_GELU), NULL, C);
        return;
    }
    gpt2_matmul_forward(A(m, l, A_FCPROJ), A(m, l, A_FCH_GELU), BMAT(m, l, P_FCPROJW),
                        W(m, l, P_FCPROJB), BT, I, C, &m->gemm);
    lora_block_forward(m, l, LORA_FCPROJ, A(m, l, A_FCH_GELU), A(m, l, A_FCPROJ), C);
    gpt2_residual_forward(A(m, l, A_RES3), A(m, l, A_RES2), A(m, l, A_FCPROJ), (size_t)BT * C);
}

/* The targets of BT that count in the loss (not GPT2_IGNORE_INDEX). */
static int counted_targets(const int *targets, int BT)
{
    int n = 0;
    for (int i = 0; i < BT; i++)
        n += targets[i] != GPT2_IGNORE_INDEX;
    return n;
}

static zc_status check_tokens(const gpt2_model *m, const int *tok, const char *what, zc_err *err)
{
    const bool target = !strcmp(what, "target"); /* a target may be ignored (-100) */
    for (size_t i = 0; i < (size_t)m->B * m->T; i++)
        if ((tok[i] < 0 && !(target && tok[i] == GPT2_IGNORE_INDEX)) || tok[i] >= m->cfg.vocab_size)
            return zc_err_set(err, ZC_EINVAL,
                              "gpt2: %s token %d at position %zu is outside the "
                              "vocabulary [0, %d)",
                              what, tok[i], i, m->cfg.vocab_size);
    return ZC_OK;
}

/* Whether dlnf (BT × C floats), free by the embedding's backward, holds the row sort's scratch
 * (BT pairs of 4-byte values): a tied table's gradient can then be taken in bf16 by the head and
 * added to by the embedding (C = 1: fp32, as gpt2_unit_work declares). */
static bool tied16_sortable(const gpt2_model *m)
{
    return m->cfg.channels >= 2;
}

/* The head's tile k (untiled: the whole): its logits' columns, 1024-row block by block
 * (gpt2_head_block_rows), so that tiled and untiled runs do the same products. Its unit must be
 * acquired. */
static void head_forward(gpt2_model *m, int k)
{
    const struct vocab_tile *v = &m->head_tiles[k];
    const int C = m->cfg.channels, BT = m->B * m->T, Vp = m->cfg.padded_vocab_size,
              blk = gpt2_head_block_rows(&m->cfg);
    const float *w = mat32(m, v->param);
    const uint16_t *w16 = mat16(m, v->param);
    for (int r = 0; r < v->rows; r += blk)
        gpt2_matmul_forward_ld(m->logits + v->row0 + r, Vp, m->lnf, w ? w + (size_t)r * C : NULL,
                               w16 ? w16 + (size_t)r * C : NULL, BT, C,
                               r + blk < v->rows ? blk : v->rows - r, &m->gemm);
}

/* Its backward: dlnf gets the blocks' products from the last block to the first (the same order
 * tiled, the tiles taken last to first), and the tile's gradient. */
static zc_status head_backward(gpt2_model *m, int k, zc_err *err)
{
    const struct vocab_tile *v = &m->head_tiles[k];
    const int C = m->cfg.channels, BT = m->B * m->T, Vp = m->cfg.padded_vocab_size,
              blk = gpt2_head_block_rows(&m->cfg);
    bool fresh = false;
    const float *w = mat32(m, v->param);
    const uint16_t *w16 = mat16(m, v->param);
    const bool frozen = m->cfg.lora.r > 0; /* dlnf only */
    /* tied, the embedding's backward adds its rows to the gradient later: to the bf16 one
     * (tied16), or else to the fp32 one written fresh here */
    uint16_t *dh16 =
        !frozen && m->gemm.type == ZC_GEMM_BF16 && w16 && (m->cfg.untied || tied16_sortable(m))
            ? zc_engine_grad16(m->e, v->param)
            : NULL;
    if (!m->cfg.untied)
        m->emb_tiles[k].tied16 = dh16;
    float *dh = dh16 || frozen ? NULL : zc_engine_grad_fresh(m->e, v->param, &fresh);
    if (!frozen && !dh16 && !dh)
        return zc_err_set(err, ZC_ENOMEM, "%s: out of memory for the lm_head gradient",
                          family_name(&m->cfg));
    for (int r = (v->rows - 1) / blk * blk; r >= 0; r -= blk) {
        const size_t o = (size_t)r * C;
        gpt2_matmul_backward_ld(m->dlnf, dh ? dh + o : NULL, dh16 ? dh16 + o : NULL,
                                m->logits + v->row0 + r, Vp, m->lnf, w ? w + o : NULL,
                                w16 ? w16 + o : NULL, BT, C, r + blk < v->rows ? blk : v->rows - r,
                                fresh, &m->gemm);
    }
    return ZC_OK;
}

/* A tiled MLP's forward after its block's (which ends at the second norm): tile by tile, each
 * gathered alone, then the residual. */
static zc_status mlp_tiles_forward(gpt2_model *m, int l, zc_err *err)
{
    const int BT = m->B * m->T;
    float *y = A(m, l, A_FCPROJ);
    for (int t = 0; t < m->nmt; t++) {
        const int u = m->mlp[(size_t)l * m->nmt + t].unit;
        zc_status st = zc_engine_acquire(m->e, u, err);
        if (st)
            return st;
        mlp_tile_forward(m, l, t, A(m, l, A_LN2), A(m, l, A_FCH), A(m, l, A_FCH_GELU), y, BT, true,
                         true, true, &m->gemm);
        if ((st = zc_engine_release(m->e, u, err)))
            return st;
    }
    gpt2_residual_forward(A(m, l, A_RES3), A(m, l, A_RES2), y, (size_t)BT * m->cfg.channels);
    return ZC_OK;
}

static zc_status forward(gpt2_model *m, const int *inputs, const int *targets, double *loss,
                         zc_err *err)
{
    const int B = m->B, T = m->T, C = m->cfg.channels, L = m->cfg.num_layers;
    const int BT = B * T, V = m->cfg.vocab_size, Vp = m->cfg.padded_vocab_size;
    zc_status st = check_tokens(m, inputs, "input", err);
    if (!st && targets)
        st = check_tokens(m, targets, "target", err);
    if (st)
        return st;
    if (m->ntiles > 1) /* tile by tile (a tied head gathers them again at the end), the
                        * learned positions added with the last */
        for (int k = 0; k < m->ntiles; k++) {
            const struct vocab_tile *v = &m->emb_tiles[k];
            if ((st = zc_engine_acquire(m->e, v->unit, err)))
                return st;
            gpt2_encoder_forward_rows(m->encoded, inputs, v->row0, v->rows, MAT(m, v->param), BT,
                                      C);
            if (k == m->ntiles - 1 && m->p_wpe >= 0)
                gpt2_encoder_forward_pos(m->encoded, POS(m, m->p_wpe), B, T, C);
            if ((st = zc_engine_release(m->e, v->unit, err)))
                return st;
        }
    else { /* tied: held until the head is done */
        if ((st = zc_engine_acquire(m->e, m->u_emb, err)))
            return st;
        gpt2_encoder_forward(m->encoded, inputs, MAT(m, m->p_wte), POS(m, m->p_wpe), B, T, C);
        if (m->cfg.untied && (st = zc_engine_release(m->e, m->u_emb, err)))
            return st;
    }
    for (int l = 0; l < L; l++) {
        if ((st = zc_engine_acquire(m->e, m->u_block[l], err)) ||
            (m->u_lora && (st = zc_engine_acquire(m->e, m->u_lora[l], err))))
            return st;
        block_forward(m, l, false);
        if ((m->u_lora && (st = zc_engine_release(m->e, m->u_lora[l], err))) ||
            (st = zc_engine_release(m->e, m->u_block[l], err)) ||
            (m->nmt > 1 && (st = mlp_tiles_forward(m, l, err))))
            return st;
    }
    if ((st = zc_engine_acquire(m->e, m->u_lnf, err)))
        return st;
    norm_forward(m, m->lnf, m->lnf_mean, m->lnf_rstd, A(m, L - 1, A_RES3), P(m, m->p_lnfw),
                 P(m, m->p_lnfb), BT);
    /* the head: ln_f's unit's lm_head, the held wte, or the tiles */
    if (m->ntiles == 1 && m->cfg.untied)
        head_forward(m, 0);
    if ((st = zc_engine_release(m->e, m->u_lnf, err)))
        return st;
    if (m->ntiles == 1 && !m->cfg.untied) {
        head_forward(m, 0);
        if ((st = zc_engine_release(m->e, m->u_emb, err)))
            return st;
    }
    for (int k = 0; m->ntiles > 1 && k < m->ntiles; k++) {
        if ((st = zc_engine_acquire(m->e, m->head_tiles[k].unit, err)))
            return st;
        head_forward(m, k);
        if ((st = zc_engine_release(m->e, m->head_tiles[k].unit, err)))
            return st;
    }
    if (targets && loss) {
        /* the logits become the probabilities (the backward's input), in place */
        gpt2_softmax_crossentropy_forward_inplace(m->losses, m->logits, targets, BT, V, Vp);
        double s = 0.0; /* the mean over the counted targets; none counted: 0 */
        for (int i = 0; i < BT; i++)
            s += m->losses[i];
        const int n = counted_targets(targets, BT);
        *loss = n ? s / n : 0.0;
    }
    return ZC_OK;
}

zc_status gpt2_forward(gpt2_model *m, const int *inputs, const int *targets, double *loss,
                       zc_err *err)
{
    m->training = false; /* evaluation: no dropout */
    zc_status st = forward(m, inputs, targets, loss, err);
    return st ? st : zc_engine_end_pass(m->e, err); /* no backward follows */
}

/* ---------- for inference outside this file (gpt2.h) ---------- */

int gpt2_unit(const gpt2_model *m, int l)
{
    return l < 0 ? m->u_emb : l >= m->cfg.num_layers ? m->u_lnf : m->u_block[l];
}

static gpt2_weight weight_of(gpt2_model *m, int param)
{
    return param < 0 ? (gpt2_weight){NULL, NULL} : (gpt2_weight){mat32(m, param), mat16(m, param)};
}

int gpt2_mlp_tile_unit(const gpt2_model *m, int l, int t)
{
    return m->mlp[(size_t)l * m->nmt + t].unit;
}

void gpt2_mlp_tile_forward(gpt2_model *m, int l, int t, const float *x, float *fch, float *h,
                           float *y, int M, const gpt2_gemm *g)
{
    mlp_tile_forward(m, l, t, x, fch, h, y, M, true, true, true, g);
}

void gpt2_vocab_tile(const gpt2_model *m, bool head, int k, int *unit, int *row0, int *rows)
{
    const struct vocab_tile *v = head ? &m->head_tiles[k] : &m->emb_tiles[k];
    *unit = v->unit, *row0 = v->row0, *rows = v->rows;
}

void gpt2_get_vocab_tile(gpt2_model *m, bool head, int k, gpt2_weight *w)
{
    *w = weight_of(m, (head ? m->head_tiles : m->emb_tiles)[k].param);
}

int gpt2_lora_unit(const gpt2_model *m, int l)
{
    return m->u_lora ? m->u_lora[l] : -1;
}

void gpt2_lora_forward(gpt2_model *m, int l, lora_product p, const float *x, float *y, int ld_y,
                       int M, float *u)
{
    for (int k = 0; m->u_lora && k < m->nslots; k++)
        if (m->slots[k].product == p)
            lora_forward(&m->cfg.lora, &m->slots[k], M, x,
                         zc_engine_param(m->e, lora_param(m, l, k, 0)),
                         zc_engine_param(m->e, lora_param(m, l, k, 1)), u, y, ld_y, false, 0, NULL);
}

void gpt2_get_block_weights(gpt2_model *m, int l, gpt2_block_weights *out)
{
    const int *p = m->p_block + (size_t)l * P_NBLOCK;
    *out = (gpt2_block_weights){.ln1w = W(m, l, P_LN1W),
                                .ln1b = W(m, l, P_LN1B),
                                .qkvb = W(m, l, P_QKVB),
                                .attprojb = W(m, l, P_ATTPROJB),
                                .ln2w = W(m, l, P_LN2W),
                                .ln2b = W(m, l, P_LN2B),
                                .fcb = W(m, l, P_FCB),
                                .fcprojb = W(m, l, P_FCPROJB),
                                .qkvw = weight_of(m, p[P_QKVW]),
                                .attprojw = weight_of(m, p[P_ATTPROJW]),
                                .fcw = weight_of(m, p[P_FCW]),
                                .fcprojw = weight_of(m, p[P_FCPROJW])};
}

void gpt2_get_embeddings(gpt2_model *m, gpt2_weight *wte, gpt2_weight *wpe)
{
    *wte = weight_of(m, m->p_wte);
    *wpe = m->p_wpe < 0 ? (gpt2_weight){NULL, NULL} : weight_of(m, m->p_wpe);
}

void gpt2_get_lnf(gpt2_model *m, const float **lnfw, const float **lnfb)
{
    *lnfw = P(m, m->p_lnfw);
    *lnfb = P(m, m->p_lnfb);
}

void gpt2_get_head(gpt2_model *m, gpt2_weight *head)
{
    *head = weight_of(m, m->p_head);
}

bool gpt2_rope_tables(const gpt2_model *m, const float **cosv, const float **sinv)
{
    *cosv = m->rope_cos;
    *sinv = m->rope_sin;
    return m->rope_cos != NULL;
}

zc_gemm_type gpt2_compute_type(const gpt2_model *m)
{
    return m->gemm.type;
}
zc_mem *gpt2_mem(const gpt2_model *m)
{
    return m->mem;
}
void *gpt2_activation_scratch(gpt2_model *m, size_t *bytes)
{
    bool ovf = false; /* the rotary tables and the MLP's staging at the arena's end are kept */
    *bytes = (m->arena_floats - (size_t)rope_floats(&m->cfg, m->T, &ovf) -
              (size_t)mlp_stage_floats(&m->cfg, &ovf)) *
             sizeof(float);
    return m->arena;
}

/* ---------- backward ---------- */

/* Block l's parameter k's gradient buffer *g; a weight matrix's product writes its gradient
 * rounded to bf16 itself into *g16 where the engine takes that (bf16 weights and products; *g is
 * then NULL), or its buffer comes through zc_engine_grad_fresh, and *fresh then says whether its
 * product must overwrite it (else every gradient is added to). false: out of memory. */
static bool G(gpt2_model *m, int l, int k, float **g, uint16_t **g16, bool *fresh)
{
    const int param = m->p_block[l * P_NBLOCK + k];
    if (k == P_QKVW || k == P_ATTPROJW || k == P_FCW || k == P_FCPROJW)
        return matrix_grad(m, param, g, g16, fresh);
    *fresh = false;
    *g16 = NULL;
    *g = NULL;
    if (param < 0 || m->cfg.lora.r > 0) /* not in this architecture, or frozen */
        return true;
    return (*g = zc_engine_grad(m->e, param)) != NULL;
}

/* Hands back a base unit's gradients: none when the base is frozen (LoRA). */
static zc_status base_grads_ready(gpt2_model *m, int unit, zc_err *err)
{
    return m->cfg.lora.r > 0 ? ZC_OK : zc_engine_grads_ready(m->e, unit, err);
}

/* The gradient of the embedding rows [row0, row0 + rows) (param: the table or its tile) from
 * dres, ∂loss/∂(encoder output): rounded to bf16 by the model where the engine takes it so — no
 * fp32 buffer of the table, the same bits (dlnf, free by then, is the sort's scratch) — else
 * added into its fp32 buffer. A tied table's rows whose head wrote its gradient in bf16 (tied16)
 * are added to that, rounded once a row. */
static zc_status embedding_backward(gpt2_model *m, int param, int row0, int rows, uint16_t *tied16,
                                    const float *dres, const int *inputs, zc_err *err)
{
    const int BT = m->B * m->T, C = m->cfg.channels;
    if (tied16) { /* tied16_sortable: dlnf holds the sort's scratch */
        gpt2_encoder_backward_rows16_add(tied16, dres, inputs, row0, rows, BT, C,
                                         (gpt2_row_pos *)(void *)m->dlnf);
        return ZC_OK;
    }
    uint16_t *g16 = C >= 2 ? zc_engine_grad16(m->e, param) : NULL; /* dlnf holds 2 BT floats */
    if (g16) {
        gpt2_encoder_backward_rows16(g16, dres, inputs, row0, rows, BT, C,
                                     (gpt2_row_pos *)(void *)m->dlnf);
        return ZC_OK;
    }
    float *g = zc_engine_grad(m->e, param);
    if (!g)
        return zc_err_set(err, ZC_ENOMEM, "%s: out of memory for the embedding gradients",
                          family_name(&m->cfg));
    gpt2_encoder_backward_rows(g, dres, inputs, row0, rows, BT, C);
    return ZC_OK;
}

/* The learned positions' gradient (none: nothing) from dres: in bf16 beside a tied table's bf16
 * gradient (bf16), else added into its fp32 buffer — the adds gpt2_encoder_backward gives it. */
static zc_status positions_backward(gpt2_model *m, bool bf16, const float *dres, zc_err *err)
{
    if (m->p_wpe < 0)
        return ZC_OK;
    uint16_t *g16 = bf16 ? zc_engine_grad16(m->e, m->p_wpe) : NULL;
    float *g = bf16 ? NULL : zc_engine_grad(m->e, m->p_wpe);
    if (!g16 && !g)
        return zc_err_set(err, ZC_ENOMEM, "gpt2: out of memory for the embedding gradients");
    if (g16)
        gpt2_encoder_backward_pos16(g16, dres, m->B, m->T, m->cfg.channels);
    else
        gpt2_encoder_backward_pos(g, dres, m->B, m->T, m->cfg.channels);
    return ZC_OK;
}

/* A tiled MLP's backward, tile by tile from the last, each gathered alone (and, recompute,
 * its products redone first), its gradients handed back as it ends. */
static zc_status mlp_tiles_backward(gpt2_model *m, int l, bool recompute, zc_err *err)
{
    const int BT = m->B * m->T;
    for (int t = m->nmt - 1; t >= 0; t--) {
        const int u = m->mlp[(size_t)l * m->nmt + t].unit;
        zc_status st = zc_engine_acquire(m->e, u, err);
        if (st)
            return st;
        if (recompute)
            mlp_tile_forward(m, l, t, A(m, l, A_LN2), A(m, l, A_FCH), A(m, l, A_FCH_GELU), NULL, BT,
                             true, true, false, &m->gemm);
        if ((st = mlp_tile_backward(m, l, t, true, true, err)) ||
            (st = base_grads_ready(m, u, err)) || (st = zc_engine_release(m->e, u, err)))
            return st;
    }
    return ZC_OK;
}

/* Block l's backward: dres_out is ∂loss/∂(block output); accumulates ∂loss/∂(block input)
 * into dres_in (zeroed by the caller) and the block's parameter gradients into the engine (a
 * tiled MLP's through its tiles; recompute: theirs are redone there). */
static zc_status block_backward(gpt2_model *m, int l, const float *dres_out, float *dres_in,
                                bool recompute, zc_err *err)
{
    const int B = m->B, T = m->T, C = m->cfg.channels, NH = m->cfg.num_heads;
    const int BT = B * T;
    float *g[P_NBLOCK];
    uint16_t *g16[P_NBLOCK];
    bool fresh[P_NBLOCK];
    for (int k = 0; k < P_NBLOCK; k++) {
        g[k] = NULL, g16[k] = NULL, fresh[k] = false;
        if (m->mlp_bw && (k == P_FCW || k == P_FCPROJW)) /* mlp_tile_backward asks for them */
            continue;
        if (!G(m, l, k, &g[k], &g16[k], &fresh[k]))
            return zc_err_set(err, ZC_ENOMEM, "gpt2: out of memory for the gradients of h.%d", l);
    }
    for (int k = 0; k < D_NBLOCK; k++) /* the attention backward overwrites its own scratch */
        if (k != D_PREATT && k != D_ATT)
            memset(m->dact[k], 0, block_grad_size(m, k) * sizeof(float));
    float **d = m->dact;
    float *res = block_input(m, l);
    const int KV = (int)m->d.KV, hd = (int)m->d.hd, QD = (int)m->d.QD, Wd = (int)m->d.W;
    const int I = (int)m->d.I, F = (int)m->d.F;
    gpt2_residual_backward(d[D_RES2], d[D_FCPROJ], dres_out, (size_t)BT * C);
    zc_status st;
    if (m->nmt > 1) { /* the tiles (no adapters: gpt2_check) */
        if ((st = mlp_tiles_backward(m, l, recompute, err)))
            return st;
    } else if (m->mlp_bw && !m->u_lora) { /* in column blocks */
        if ((st = mlp_tile_backward(m, l, 0, true, true, err)))
            return st;
    } else if (m->mlp_bw) { /* the adapters after the products, as below (the base frozen) */
        if ((st = mlp_tile_backward(m, l, 0, true, false, err)) ||
            (st = lora_block_backward(m, l, LORA_FCPROJ, A(m, l, A_FCH_GELU), d[D_FCPROJ], C,
                                      d[D_FCH_GELU], err)) ||
            (st = mlp_tile_backward(m, l, 0, false, true, err)) ||
            (st = lora_block_backward(m, l, LORA_FC, A(m, l, A_LN2), d[D_FCH], F, d[D_LN2], err)))
            return st;
    } else {
        gpt2_matmul_backward(d[D_FCH_GELU], g[P_FCPROJW], g16[P_FCPROJW], g[P_FCPROJB], d[D_FCPROJ],
                             A(m, l, A_FCH_GELU), BMAT(m, l, P_FCPROJW), BT, I, C, fresh[P_FCPROJW],
                             &m->gemm);
        if ((st = lora_block_backward(m, l, LORA_FCPROJ, A(m, l, A_FCH_GELU), d[D_FCPROJ], C,
                                      d[D_FCH_GELU], err)))
            return st;
        if (m->cfg.mlp == GPT2_MLP_SWIGLU)
            gpt2_swiglu_backward(d[D_FCH], A(m, l, A_FCH), d[D_FCH_GELU], BT, I);
        else
            gpt2_gelu_backward(d[D_FCH], A(m, l, A_FCH), d[D_FCH_GELU], (size_t)BT * I);
        gpt2_matmul_backward(d[D_LN2], g[P_FCW], g16[P_FCW], g[P_FCB], d[D_FCH], A(m, l, A_LN2),
                             BMAT(m, l, P_FCW), BT, C, F, fresh[P_FCW], &m->gemm);
        if ((st = lora_block_backward(m, l, LORA_FC, A(m, l, A_LN2), d[D_FCH], F, d[D_LN2], err)))
            return st;
    }
    norm_backward(m, d[D_RES2], g[P_LN2W], g[P_LN2B], d[D_LN2], A(m, l, A_RES2), W(m, l, P_LN2W),
                  A(m, l, A_LN2_MEAN), A(m, l, A_LN2_RSTD), BT);
    gpt2_residual_backward(dres_in, d[D_ATTPROJ], d[D_RES2], (size_t)BT * C);
    gpt2_matmul_backward(d[D_ATTY], g[P_ATTPROJW], g16[P_ATTPROJW], g[P_ATTPROJB], d[D_ATTPROJ],
                         A(m, l, A_ATTY), BMAT(m, l, P_ATTPROJW), BT, QD, C, fresh[P_ATTPROJW],
                         &m->gemm);
    if ((st = lora_block_backward(m, l, LORA_ATTPROJ, A(m, l, A_ATTY), d[D_ATTPROJ], C, d[D_ATTY],
                                  err)))
        return st;
    gpt2_attention_gqa_backward(d[D_QKV], d[D_PREATT], d[D_ATT], d[D_ATTY], A(m, l, A_QKV),
                                A(m, l, A_ATT), B, T, NH, KV, hd, &m->gemm);
    if (m->rope_cos) /* back through the rotation: the gradient of the unrotated q and k */
        gpt2_rope_backward(d[D_QKV], m->rope_cos, m->rope_sin, B, T, Wd, NH + KV, hd);
    gpt2_matmul_backward(d[D_LN1], g[P_QKVW], g16[P_QKVW], g[P_QKVB], d[D_QKV], A(m, l, A_LN1),
                         BMAT(m, l, P_QKVW), BT, C, Wd, fresh[P_QKVW], &m->gemm);
    if ((st = lora_block_backward(m, l, LORA_QKV, A(m, l, A_LN1), d[D_QKV], Wd, d[D_LN1], err)))
        return st;
    norm_backward(m, dres_in, g[P_LN1W], g[P_LN1B], d[D_LN1], res, W(m, l, P_LN1W),
                  A(m, l, A_LN1_MEAN), A(m, l, A_LN1_RSTD), BT);
    return ZC_OK;
}

zc_status gpt2_train_forward(gpt2_model *m, const int *inputs, const int *targets, double *loss,
                             zc_err *err)
{
    m->training = true;
    m->passes++; /* a new dropout mask (the backward's recompute takes this one again) */
    return forward(m, inputs, targets, loss, err);
}

zc_status gpt2_forward_backward(gpt2_model *m, const int *inputs, const int *targets, double *loss,
                                zc_err *err)
{
    zc_status st = gpt2_train_forward(m, inputs, targets, loss, err);
    return st ? st : gpt2_backward(m, inputs, targets, err);
}

zc_status gpt2_backward(gpt2_model *m, const int *inputs, const int *targets, zc_err *err)
{
    const int B = m->B, T = m->T, C = m->cfg.channels, L = m->cfg.num_layers;
    const int BT = B * T, V = m->cfg.vocab_size, Vp = m->cfg.padded_vocab_size;
    zc_status st;
    /* Head: dlogits (in the logits buffer, which the forward left holding the probabilities),
     * then through the tied wte. */
    float *dlogits = m->logits;
    const int n = counted_targets(targets, BT); /* ∂mean/∂loss_i, in place of the losses */
    for (int i = 0; i < BT; i++)
        m->losses[i] = targets[i] == GPT2_IGNORE_INDEX ? 0.0f : 1.0f / (float)n;
    gpt2_softmax_crossentropy_backward_inplace(dlogits, m->losses, targets, BT, V, Vp);
    memset(m->dlnf, 0, (size_t)BT * C * sizeof(float));
    const bool frozen = m->cfg.lora.r > 0; /* LoRA: the base takes no gradient */
    /* A tied head untiled: the held wte's gradient written first, the encoder adds. */
    if (!m->cfg.untied && m->ntiles == 1 &&
        ((st = zc_engine_acquire(m->e, m->u_emb, err)) || (st = head_backward(m, 0, err)) ||
         (st = zc_engine_release(m->e, m->u_emb, err))))
        return st;
    /* The head's tiles, last to first, then the final norm (untiled untied, the head is in its
     * unit); a tied tile's gradient is ready after the embedding's backward adds to it. */
    for (int k = m->ntiles - 1; m->ntiles > 1 && k >= 0; k--) {
        const int u = m->head_tiles[k].unit;
        if ((st = zc_engine_acquire(m->e, u, err)) || (st = head_backward(m, k, err)) ||
            (m->cfg.untied && (st = base_grads_ready(m, u, err))) ||
            (st = zc_engine_release(m->e, u, err)))
            return st;
    }
    float *dres = m->dres[0];
    memset(dres, 0, (size_t)BT * C * sizeof(float));
    if ((st = zc_engine_acquire(m->e, m->u_lnf, err)))
        return st;
    if (m->cfg.untied && m->ntiles == 1 && (st = head_backward(m, 0, err)))
        return st;
    float *dlnfw = frozen ? NULL : zc_engine_grad(m->e, m->p_lnfw),
          *dlnfb = m->p_lnfb < 0 || frozen ? NULL : zc_engine_grad(m->e, m->p_lnfb);
    if (!frozen && (!dlnfw || (m->p_lnfb >= 0 && !dlnfb)))
        return zc_err_set(err, ZC_ENOMEM, "gpt2: out of memory for the ln_f gradients");
    norm_backward(m, dres, dlnfw, dlnfb, m->dlnf, A(m, L - 1, A_RES3), P(m, m->p_lnfw), m->lnf_mean,
                  m->lnf_rstd, BT);
    if ((st = base_grads_ready(m, m->u_lnf, err)) || (st = zc_engine_release(m->e, m->u_lnf, err)))
        return st;
    /* Blocks, last to first. */
    for (int l = L - 1; l >= 0; l--) {
        float *dres_in = m->dres[(L - l) & 1];
        memset(dres_in, 0, (size_t)BT * C * sizeof(float));
        if ((st = zc_engine_acquire(m->e, m->u_block[l], err)) ||
            (m->u_lora && (st = zc_engine_acquire(m->e, m->u_lora[l], err))))
            return st;
        /* recompute from the kept input; the last block's activations are still those of the
         * forward this backward follows (the pass is open: nothing ran between) */
        const bool recompute = m->checkpointing && l != L - 1;
        if (recompute)
            block_forward(m, l, true);
        else if (l != L - 1) /* the shared MLP activation holds a later block's */
            mlp_act_forward(m, l);
        if ((st = block_backward(m, l, dres, dres_in, recompute, err)) ||
            (st = base_grads_ready(m, m->u_block[l], err)) ||
            (m->u_lora && ((st = zc_engine_grads_ready(m->e, m->u_lora[l], err)) ||
                           (st = zc_engine_release(m->e, m->u_lora[l], err)))) ||
            (st = zc_engine_release(m->e, m->u_block[l], err)))
            return st;
        dres = dres_in;
    }
    /* Embeddings: the last use of wte's gradient (untied: gathered again, as every unit is for
     * the backward at stage 3; tiled, tile by tile, last to first). Frozen (LoRA), nothing to
     * compute: an untied unit is still gathered, as the memory and traffic formulas count. */
    if (frozen) {
        for (int k = m->ntiles - 1; m->cfg.untied && k >= 0; k--)
            if ((st = zc_engine_acquire(m->e, m->emb_tiles[k].unit, err)) ||
                (st = zc_engine_release(m->e, m->emb_tiles[k].unit, err)))
                return st;
        return ZC_OK;
    }
    if (m->cfg.untied && m->p_wpe >= 0 && m->ntiles == 1) { /* both tables' fp32 gradients */
        if ((st = zc_engine_acquire(m->e, m->u_emb, err)))
            return st;
        float *dwte = zc_engine_grad(m->e, m->p_wte), *dwpe = zc_engine_grad(m->e, m->p_wpe);
        if (!dwte || !dwpe)
            return zc_err_set(err, ZC_ENOMEM, "gpt2: out of memory for the embedding gradients");
        gpt2_encoder_backward(dwte, dwpe, dres, inputs, B, T, C);
        if ((st = zc_engine_grads_ready(m->e, m->u_emb, err)))
            return st;
        return zc_engine_release(m->e, m->u_emb, err);
    }
    /* untied tiles are gathered for their backward; tied ones were for the head's, and the rows'
     * gradients need no values; learned positions, in the last tile's unit, with it */
    const bool gather = m->cfg.untied;
    for (int k = m->ntiles - 1; k >= 0; k--) {
        struct vocab_tile *v = &m->emb_tiles[k];
        if (gather && (st = zc_engine_acquire(m->e, v->unit, err)))
            return st;
        uint16_t *tied16 = v->tied16;
        v->tied16 = NULL;
        if ((st = embedding_backward(m, v->param, v->row0, v->rows, tied16, dres, inputs, err)) ||
            (k == m->ntiles - 1 && (st = positions_backward(m, tied16 != NULL, dres, err))) ||
            (st = zc_engine_grads_ready(m->e, v->unit, err)) ||
            (gather && (st = zc_engine_release(m->e, v->unit, err))))
            return st;
    }
    return ZC_OK;
}

/* ---------- llm.c checkpoints ---------- */

/* Which checkpoint tensor (0..15) a parameter is, and where in it the parameter starts (in
 * elements: its layer's slab, or a vocabulary tile's first row). */
static void llmc_place(const gpt2_model *m, int param, int *tensor, size_t *first)
{
    *first = 0;
    for (int k = 0; k < m->ntiles; k++)
        if (param == m->emb_tiles[k].param) { /* the table, or its tile */
            *tensor = 0;
            *first = (size_t)m->emb_tiles[k].row0 * (size_t)m->cfg.channels;
            return;
        }
    if (param == m->p_wpe) {
        *tensor = 1;
        return;
    }
    if (param == m->p_lnfw) {
        *tensor = 14;
        return;
    }
    if (param == m->p_lnfb) {
        *tensor = 15;
        return;
    }
    for (int l = 0; l < m->cfg.num_layers; l++)
        for (int k = 0; k < P_NBLOCK; k++)
            if (m->p_block[l * P_NBLOCK + k] == param) {
                *tensor = 2 + k;
                *first = (size_t)l * zc_engine_param_info(m->e, param)->numel;
                return;
            }
    ZC_ASSERT(!"parameter not in the model");
}

/* llm.c's files hold GPT-2 only: ZC_EINVAL for another architecture, naming it. */
static zc_status llmc_plain(const gpt2_model *m, const char *path, zc_err *err)
{
    return gpt2_is_plain(&m->cfg) ? ZC_OK
                                  : zc_err_set(err, ZC_EINVAL,
                                               "%s: llm.c's checkpoint format holds GPT-2 only, "
                                               "not this %s (use --save-weights, or ckpt export "
                                               "--format hf)",
                                               path, family_name(&m->cfg));
}

zc_status gpt2_load_llmc(gpt2_model *m, const char *path, zc_err *err)
{
    zc_status pst = llmc_plain(m, path, err);
    if (pst)
        return pst;
    llmc_header h;
    zc_status st = llmc_ckpt_read_header(path, &h, err);
    if (st)
        return st;
    const gpt2_config *c = &m->cfg;
    if (h.max_seq_len != c->max_seq_len || h.vocab_size != c->vocab_size ||
        h.padded_vocab_size != c->padded_vocab_size || h.num_layers != c->num_layers ||
        h.num_heads != c->num_heads || h.channels != c->channels)
        return zc_err_set(err, ZC_EINVAL,
                          "%s: shape maxT=%d V=%d Vp=%d L=%d H=%d C=%d does not "
                          "match the model's maxT=%d V=%d Vp=%d L=%d H=%d C=%d",
                          path, h.max_seq_len, h.vocab_size, h.padded_vocab_size, h.num_layers,
                          h.num_heads, h.channels, c->max_seq_len, c->vocab_size,
                          c->padded_vocab_size, c->num_layers, c->num_heads, c->channels);
    size_t chunk = 1 << 20;
    float *buf = malloc(chunk * sizeof(float));
    if (!buf)
        return zc_err_set(err, ZC_ENOMEM, "out of memory reading %s", path);
    for (int p = 0; p < zc_engine_num_params(m->e) && !st; p++) {
        if (lora_is_param(zc_engine_param_info(m->e, p)->name)) /* adapters: as initialised */
            continue;
        int tensor;
        size_t at, first, n;
        llmc_place(m, p, &tensor, &at);
        zc_engine_param_owned(m->e, p, &first, &n);
        for (size_t done = 0; done < n && !st; done += chunk) {
            size_t k = n - done < chunk ? n - done : chunk;
            st = llmc_ckpt_read(path, &h, tensor, at + first + done, k, buf, err);
            for (size_t i = 0; i < k && !st; i++) /* a NaN would train on, unseen */
                if (!isfinite(buf[i]))
                    st = zc_err_set(err, ZC_EINVAL,
                                    "%s: tensor '%s' holds %g at element %zu: "
                                    "initial weights must be finite",
                                    path, zc_engine_param_info(m->e, p)->name, (double)buf[i],
                                    first + done + i);
            if (!st)
                st = zc_engine_set_param_values(m->e, p, first + done, k, buf, err);
        }
    }
    free(buf);
    return st;
}

zc_status gpt2_save_llmc(gpt2_model *m, const char *path, zc_err *err)
{
    zc_status pst = llmc_plain(m, path, err);
    if (pst)
        return pst;
    /* Every rank takes part in every gather (stage 3); rank 0 writes. A write error on rank 0
     * does not stop the gathers, so no rank is left waiting in one. */
    const gpt2_config *c = &m->cfg;
    const bool writer = zc_engine_rank(m->e) == 0;
    llmc_header h = {.version = 3,
                     .max_seq_len = c->max_seq_len,
                     .vocab_size = c->vocab_size,
                     .padded_vocab_size = c->padded_vocab_size,
                     .num_layers = c->num_layers,
                     .num_heads = c->num_heads,
                     .channels = c->channels};
    llmc_ckpt_writer w;
    zc_status wst = writer ? llmc_ckpt_create(&w, path, &h, err) : ZC_OK;
    bool open = writer && !wst;
    size_t max_padded = 0;
    for (int u = 0; u < zc_engine_num_units(m->e); u++)
        if (zc_engine_unit_info(m->e, u)->padded > max_padded)
            max_padded = zc_engine_unit_info(m->e, u)->padded;
    float *buf = malloc(max_padded * sizeof(float));
    zc_status st = buf ? ZC_OK : zc_err_set(err, ZC_ENOMEM, "out of memory writing %s", path);
    for (int u = 0; u < zc_engine_num_units(m->e) && !st; u++) {
        if ((st = zc_engine_gather_unit(m->e, u, buf, err)) || !open || wst)
            continue;
        const zc_unit_info *ui = zc_engine_unit_info(m->e, u);
        for (int p = ui->first_param; p < ui->first_param + ui->nparams && !wst; p++) {
            const zc_param_info *pi = zc_engine_param_info(m->e, p);
            int tensor;
            size_t at;
            llmc_place(m, p, &tensor, &at);
            wst = llmc_ckpt_write(&w, tensor, at, pi->numel, buf + pi->offset, err);
        }
    }
    free(buf);
    if (open) {
        if (st || wst)
            llmc_ckpt_abort(&w);
        else
            wst = llmc_ckpt_finish(&w, err);
    }
    return st ? st : wst;
}
