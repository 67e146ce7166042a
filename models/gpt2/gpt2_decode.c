/* gpt2_decode.c — incremental decoding with a key/value cache (gpt2_decode.h).
 *
 * One pass (run) takes M tokens at positions p0 … p0+M−1 through the model on one row: the
 * prefill (p0 = 0, M = the context) or one decoding step (M = 1 at the next position). Each
 * block's keys and values of those positions go into the cache, stored as the attention's
 * products take them (fp32, or bf16 bits where the products are bf16 — the forward rounds qkv to
 * bf16 the same way), and the block's attention reads positions 0 … p0+M−1 from there
 * (gpt2_attention_cached). Only the last position goes through ln_f and the LM head. The layer
 * kernels and the parameters are the ordinary forward's (gpt2_layers.h; gpt2.h hands out the
 * parameters as gpt2_forward uses them: fp32, bf16 bits for the products, fp16 widened), and the
 * units are acquired in its order — embeddings (held to the head when it is tied; released after
 * the lookup when the head is ln_f's lm_head), h.0 … h.L−1, ln_f — so every rank of a stage-3
 * run gathers the same units in the same order.
 *
 * The architecture's choices are the ordinary forward's (RMSNorm, rotary positions turned at
 * each position's angle before the keys enter the cache, SwiGLU, an untied head read from ln_f's
 * unit); a grouped-query cache holds the key/value heads only, KV·hd values per position.
 *
 * Memory: the cache, 2·L·T·KV·hd values; working rows for M ≤ T positions (as one block of the
 * ordinary forward on one row: the residual stream, the norm, qkv, attention, the MLP's widths);
 * the attention scores, NH·T·T floats; the logits, Vp floats; in bf16 the rounded queries and
 * scores and the products' workspace. They are carved from the model's own activation memory,
 * unused between passes, whenever it is large enough (gpt2_activation_scratch: without activation
 * checkpointing the model keeps every block's activations of B·T rows, ~9× one row's cache plus one
 * block's working rows, so it is large enough but for toy shapes; with checkpointing, unless the
 * model is very deep for its width and vocabulary, e.g. beyond ~200 blocks for GPT-2 124M's):
 * sampling then needs no memory beyond what the model, and its estimate, already count. Otherwise
 * they are one more allocation on the ledger's "activations". */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "models/gpt2/gpt2_decode.h"
#include "zeroc/checked.h"
#include "zeroc/dtype.h"

/* The pieces of a decoder's allocation, each rounded up to 64 bytes. */
enum {
    S_K,       /* (L,T,KV·hd) keys */
    S_V,       /* (L,T,KV·hd) values */
    S_X0,      /* (T,C) residual stream */
    S_X1,      /* (T,C) */
    S_LN,      /* (T,C) a LayerNorm's output */
    S_QKV,     /* (T,W): W = (NH + 2·KV)·hd */
    S_ATTY,    /* (T,NH·hd) */
    S_ATTPROJ, /* (T,C) */
    S_RES2,    /* (T,C) */
    S_FCH,     /* (T,F): the MLP's first product (F = I, or 2·I for SwiGLU) */
    S_GELU,    /* (T,I) */
    S_FCPROJ,  /* (T,C) */
    S_MEAN,    /* (T) */
    S_RSTD,    /* (T) */
    S_ATT,     /* (NH,T,T) scores */
    S_LNF,     /* (C) the last position after ln_f */
    S_LOGITS,  /* (Vp) */
    S_Q16,     /* (T,NH·hd) bf16 queries (bf16 only) */
    S_ATT16,   /* (NH,T,T) bf16 scores (bf16 only) */
    S_WS,      /* the products' workspace (bf16 only) */
    S_LORA,    /* (T,r) an adapter's product (LoRA only) */
    S_N
};

struct gpt2_decoder {
    gpt2_model *m;
    zc_mem *mem;
    gpt2_config cfg;
    int T;
    gpt2_gemm g;
    size_t es; /* bytes of a cached key or value: 4 (fp32) or 2 (bf16 bits) */
    char *arena;
    size_t bytes;
    bool owned; /* arena is this decoder's allocation (else the model's activation memory) */
    void *piece[S_N];
    int cached; /* positions 0 … cached−1 of the context seq[0 .. cached) are in the cache */
};

/* Each piece's bytes, without wrapping (*ovf past 64 bits). */
static void piece_bytes(const gpt2_config *c, int T, zc_gemm_type compute, int64_t out[S_N],
                        bool *ovf)
{
    const int64_t C = c->channels, TC = zc_mul_i64(T, C, ovf), f = sizeof(float);
    const int64_t hd = gpt2_head_dim(c), QD = (int64_t)c->num_heads * hd,
                  KD = (int64_t)gpt2_kv_heads(c) * hd, W = QD + 2 * KD, I = gpt2_hidden(c),
                  F = c->mlp == GPT2_MLP_SWIGLU ? 2 * I : I;
    const bool bf16 = compute == ZC_GEMM_BF16;
    const int64_t es = bf16 ? 2 : 4, TT = zc_mul_i64(zc_mul_i64(T, T, ovf), c->num_heads, ovf);
    const int64_t cache =
        zc_mul_i64(zc_mul_i64(c->num_layers, zc_mul_i64(T, KD, ovf), ovf), es, ovf);
    int64_t ws = 0;
    if (bf16 && !*ovf && TC <= INT32_MAX && W <= INT32_MAX && F <= INT32_MAX &&
        c->padded_vocab_size > 0) {
        const int N = T, IC[] = {(int)C, (int)QD, (int)C, (int)I},
                  OC[] = {(int)W, (int)C, (int)F, (int)C};
        size_t w = gpt2_attention_cached_gqa_workspace_bytes(T, T, (int)hd),
               head = zc_gemm_workspace_need(ZC_GEMM_OPS_B16, 1, c->padded_vocab_size, (int)C);
        w = head > w ? head : w;
        for (int i = 0; i < 4; i++) {
            size_t l = zc_gemm_workspace_need(ZC_GEMM_OPS_B16, N, OC[i], IC[i]);
            w = l > w ? l : w;
        }
        ws = w > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)w;
    }
    const int64_t sz[S_N] = {cache,
                             cache,
                             zc_mul_i64(TC, f, ovf),
                             zc_mul_i64(TC, f, ovf),
                             zc_mul_i64(TC, f, ovf),
                             zc_mul_i64(zc_mul_i64(T, W, ovf), f, ovf),
                             zc_mul_i64(zc_mul_i64(T, QD, ovf), f, ovf),
                             zc_mul_i64(TC, f, ovf),
                             zc_mul_i64(TC, f, ovf),
                             zc_mul_i64(zc_mul_i64(T, F, ovf), f, ovf),
                             zc_mul_i64(zc_mul_i64(T, I, ovf), f, ovf),
                             zc_mul_i64(TC, f, ovf),
                             (int64_t)T * f,
                             (int64_t)T * f,
                             zc_mul_i64(TT, f, ovf),
                             C * f,
                             (int64_t)c->padded_vocab_size * f,
                             bf16 ? zc_mul_i64(zc_mul_i64(T, QD, ovf), 2, ovf) : 0,
                             bf16 ? zc_mul_i64(TT, 2, ovf) : 0,
                             ws,
                             c->lora.r > 0 ? zc_mul_i64((int64_t)T * c->lora.r, f, ovf) : 0};
    for (int i = 0; i < S_N; i++)
        out[i] = zc_mul_i64(zc_add_i64(sz[i], 63, ovf) / 64, 64, ovf);
}

size_t gpt2_decoder_bytes(const gpt2_config *c, int T, zc_gemm_type compute)
{
    bool ovf = false;
    int64_t sz[S_N], total = 0;
    piece_bytes(c, T, compute, sz, &ovf);
    for (int i = 0; i < S_N; i++)
        total = zc_add_i64(total, sz[i], &ovf);
    return ovf || (uint64_t)total > SIZE_MAX ? SIZE_MAX : (size_t)total;
}

zc_status gpt2_decoder_create(gpt2_decoder **out, gpt2_model *m, zc_err *err)
{
    gpt2_decoder *d = calloc(1, sizeof *d);
    if (!d)
        return zc_err_set(err, ZC_ENOMEM, "sample: out of memory");
    int B;
    d->m = m, d->mem = gpt2_mem(m), d->cfg = *gpt2_get_config(m);
    gpt2_batch_shape(m, &B, &d->T);
    const zc_gemm_type compute = gpt2_compute_type(m);
    d->es = compute == ZC_GEMM_BF16 ? 2 : 4;
    d->bytes = gpt2_decoder_bytes(&d->cfg, d->T, compute);
    size_t have;
    d->arena = gpt2_activation_scratch(m, &have);
    if (d->bytes > have) {
        d->owned = true;
        d->arena = d->bytes == SIZE_MAX ? NULL : zc_mem_alloc(d->mem, ZC_MEM_ACTIVATIONS, d->bytes);
    }
    if (!d->arena) {
        zc_status st = zc_err_set(err, ZC_ENOMEM,
                                  "sample: out of memory for the key/value cache and working "
                                  "rows of context %d (%zu bytes)",
                                  d->T, d->bytes);
        free(d);
        return st;
    }
    bool ovf = false; /* gpt2_check passed for (B, T): the sizes fit */
    int64_t sz[S_N];
    piece_bytes(&d->cfg, d->T, compute, sz, &ovf);
    char *p = d->arena;
    for (int i = 0; i < S_N; i++) {
        d->piece[i] = sz[i] ? p : NULL;
        p += sz[i];
    }
    ZC_ASSERT(!ovf && p == d->arena + d->bytes && (uintptr_t)d->arena % 64 == 0);
    d->g = (gpt2_gemm){.type = compute, .ws = d->piece[S_WS], .ws_bytes = (size_t)sz[S_WS]};
    *out = d;
    return ZC_OK;
}

void gpt2_decoder_destroy(gpt2_decoder *d)
{
    if (!d)
        return;
    if (d->owned)
        zc_mem_free(d->mem, ZC_MEM_ACTIVATIONS, d->arena, d->bytes);
    free(d);
}

static float *F(gpt2_decoder *d, int piece)
{
    return d->piece[piece];
}

/* The keys (kv 0) or values (kv 1) of block l from position pos on: rows of KV·hd. */
static void *cache_at(gpt2_decoder *d, int kv, int l, int pos)
{
    const size_t KD = (size_t)gpt2_kv_heads(&d->cfg) * (size_t)gpt2_head_dim(&d->cfg);
    return (char *)d->piece[kv ? S_V : S_K] + (((size_t)l * d->T + pos) * KD) * d->es;
}

/* The block's norm, as the ordinary forward's: LayerNorm, or RMSNorm (mean unused). */
static void norm(const gpt2_decoder *d, float *out, float *mean, float *rstd, const float *x,
                 const float *w, const float *b, int M)
{
    if (d->cfg.norm == GPT2_NORM_RMSNORM)
        gpt2_rmsnorm_forward(out, rstd, x, w, M, d->cfg.channels, (float)d->cfg.norm_eps);
    else
        gpt2_layernorm_forward(out, mean, rstd, x, w, b, M, d->cfg.channels);
}

/* Block l over positions p0 … p0+M−1 from the residual stream x into y; its unit is acquired.
 * A tiled MLP is left to mlp_tiles (S_LN holds its input, S_RES2 the residual). */
static void block(gpt2_decoder *d, int l, const float *x, float *y, int p0, int M)
{
    const gpt2_config *c = &d->cfg;
    const int C = c->channels, NH = c->num_heads, KV = gpt2_kv_heads(c), hd = gpt2_head_dim(c);
    const int QD = NH * hd, KD = KV * hd, W = QD + 2 * KD, I = gpt2_hidden(c);
    const int FW = c->mlp == GPT2_MLP_SWIGLU ? 2 * I : I;
    gpt2_block_weights w;
    gpt2_get_block_weights(d->m, l, &w);
    float *ln = F(d, S_LN), *qkv = F(d, S_QKV), *atty = F(d, S_ATTY), *res2 = F(d, S_RES2);
    float *mean = F(d, S_MEAN), *rstd = F(d, S_RSTD);
    norm(d, ln, mean, rstd, x, w.ln1w, w.ln1b, M);
    gpt2_matmul_forward(qkv, ln, w.qkvw.w, w.qkvw.w16, w.qkvb, M, C, W, &d->g);
    float *u = F(d, S_LORA); /* LoRA's adapters after each product (none: nothing) */
    gpt2_lora_forward(d->m, l, LORA_QKV, ln, qkv, W, M, u);
    const float *cosv, *sinv;
    if (gpt2_rope_tables(d->m, &cosv, &sinv)) /* positions p0 … p0+M−1 */
        gpt2_rope_forward(qkv, cosv + (size_t)p0 * (hd / 2), sinv + (size_t)p0 * (hd / 2), 1, M, W,
                          NH + KV, hd);
    for (int i = 0; i < M; i++) /* the new positions' keys and values into the cache */
        for (int kv = 0; kv < 2; kv++) {
            const float *src = qkv + (size_t)i * W + QD + (size_t)kv * KD;
            void *dst = cache_at(d, kv, l, p0 + i);
            if (d->es == 2)
                zc_f32_to_bf16(src, dst, (size_t)KD);
            else
                memcpy(dst, src, (size_t)KD * sizeof(float));
        }
    gpt2_attention_cached_gqa(atty, F(d, S_ATT), d->piece[S_Q16], d->piece[S_ATT16], qkv, W,
                              cache_at(d, 0, l, 0), cache_at(d, 1, l, 0), p0, M, NH, KV, hd, &d->g);
    gpt2_matmul_forward(F(d, S_ATTPROJ), atty, w.attprojw.w, w.attprojw.w16, w.attprojb, M, QD, C,
                        &d->g);
    gpt2_lora_forward(d->m, l, LORA_ATTPROJ, atty, F(d, S_ATTPROJ), C, M, u);
    gpt2_residual_forward(res2, x, F(d, S_ATTPROJ), (size_t)M * C);
    norm(d, ln, mean, rstd, res2, w.ln2w, w.ln2b, M);
    int cols;
    if (gpt2_mlp_tiles(c, &cols) > 1)
        return;
    /* the forward's column blocks; with LoRA the one product below (the adapters add to its
     * whole output): the same math in another summation order than the forward's */
    if (gpt2_mlp_block_cols(c) && gpt2_lora_unit(d->m, l) < 0) {
        gpt2_mlp_tile_forward(d->m, l, 0, ln, F(d, S_FCH), F(d, S_GELU), F(d, S_FCPROJ), M, &d->g);
        gpt2_residual_forward(y, res2, F(d, S_FCPROJ), (size_t)M * C);
        return;
    }
    gpt2_matmul_forward(F(d, S_FCH), ln, w.fcw.w, w.fcw.w16, w.fcb, M, C, FW, &d->g);
    gpt2_lora_forward(d->m, l, LORA_FC, ln, F(d, S_FCH), FW, M, u);
    if (c->mlp == GPT2_MLP_SWIGLU)
        gpt2_swiglu_forward(F(d, S_GELU), F(d, S_FCH), M, I);
    else
        gpt2_gelu_forward(F(d, S_GELU), F(d, S_FCH), (size_t)M * I);
    gpt2_matmul_forward(F(d, S_FCPROJ), F(d, S_GELU), w.fcprojw.w, w.fcprojw.w16, w.fcprojb, M, I,
                        C, &d->g);
    gpt2_lora_forward(d->m, l, LORA_FCPROJ, F(d, S_GELU), F(d, S_FCPROJ), C, M, u);
    gpt2_residual_forward(y, res2, F(d, S_FCPROJ), (size_t)M * C);
}

/* Block l's tiled MLP after block(): tile by tile, each gathered alone, then the residual. */
static zc_status mlp_tiles(gpt2_decoder *d, int l, float *y, int M, int nmt, zc_err *err)
{
    zc_engine *e = gpt2_engine(d->m);
    for (int t = 0; t < nmt; t++) {
        const int u = gpt2_mlp_tile_unit(d->m, l, t);
        zc_status st = zc_engine_acquire(e, u, err);
        if (st)
            return st;
        gpt2_mlp_tile_forward(d->m, l, t, F(d, S_LN), F(d, S_FCH), F(d, S_GELU), F(d, S_FCPROJ), M,
                              &d->g);
        if ((st = zc_engine_release(e, u, err)))
            return st;
    }
    gpt2_residual_forward(y, F(d, S_RES2), F(d, S_FCPROJ), (size_t)M * d->cfg.channels);
    return ZC_OK;
}

/* One pass over tokens tok[0..M) at positions p0 … p0+M−1 (the cache holding positions below
 * p0 of the same context): the cache gets their keys and values, S_LOGITS the logits after the
 * last of them. Acquires the units in gpt2_forward's order and ends the pass. */
static zc_status run(gpt2_decoder *d, const int *tok, int p0, int M, zc_err *err)
{
    gpt2_model *m = d->m;
    zc_engine *e = gpt2_engine(m);
    const int C = d->cfg.channels, L = d->cfg.num_layers, Vp = d->cfg.padded_vocab_size;
    const bool untied = d->cfg.untied;
    int rows, nt = gpt2_vocab_tiles(&d->cfg, &rows), cols, nmt = gpt2_mlp_tiles(&d->cfg, &cols);
    float *x = F(d, S_X0), *y = F(d, S_X1);
    zc_status st = ZC_OK;
    if (nt > 1) /* the embedding's tiles, one at a time */
        for (int k = 0; k < nt; k++) {
            int u, r0;
            gpt2_weight w;
            gpt2_vocab_tile(m, false, k, &u, &r0, &rows);
            if ((st = zc_engine_acquire(e, u, err)))
                return st;
            gpt2_get_vocab_tile(m, false, k, &w);
            gpt2_encoder_forward_rows(x, tok, r0, rows, w.w, w.w16, M, C);
            gpt2_weight wte, wpe = {NULL, NULL}; /* learned positions: in the last tile's unit */
            if (k == nt - 1)
                gpt2_get_embeddings(m, &wte, &wpe);
            if (wpe.w || wpe.w16)
                gpt2_encoder_forward_pos(x, wpe.w ? wpe.w + (size_t)p0 * C : NULL,
                                         wpe.w16 ? wpe.w16 + (size_t)p0 * C : NULL, 1, M, C);
            if ((st = zc_engine_release(e, u, err)))
                return st;
        }
    else { /* tied: held until the head is done */
        if ((st = zc_engine_acquire(e, gpt2_unit(m, -1), err)))
            return st;
        gpt2_weight wte, wpe;
        gpt2_get_embeddings(m, &wte, &wpe);
        gpt2_encoder_forward(x, tok, wte.w, wte.w16, wpe.w ? wpe.w + (size_t)p0 * C : NULL,
                             wpe.w16 ? wpe.w16 + (size_t)p0 * C : NULL, 1, M, C);
        if (untied && (st = zc_engine_release(e, gpt2_unit(m, -1), err)))
            return st;
    }
    for (int l = 0; l < L; l++) {
        const int ul = gpt2_lora_unit(m, l); /* LoRA's adapters, with their block */
        if ((st = zc_engine_acquire(e, gpt2_unit(m, l), err)) ||
            (ul >= 0 && (st = zc_engine_acquire(e, ul, err))))
            return st;
        block(d, l, x, y, p0, M);
        if ((ul >= 0 && (st = zc_engine_release(e, ul, err))) ||
            (st = zc_engine_release(e, gpt2_unit(m, l), err)) ||
            (nmt > 1 && (st = mlp_tiles(d, l, y, M, nmt, err))))
            return st;
        float *t = x;
        x = y, y = t;
    }
    if ((st = zc_engine_acquire(e, gpt2_unit(m, L), err)))
        return st;
    const float *lnfw, *lnfb;
    gpt2_get_lnf(m, &lnfw, &lnfb);
    norm(d, F(d, S_LNF), F(d, S_MEAN), F(d, S_RSTD), x + (size_t)(M - 1) * C, lnfw, lnfb, 1);
    /* the head block by block as the forward: untiled, lm_head in ln_f's unit or the held tied
     * wte; tiled, its tiles (a tied head's: the embedding's, gathered again) */
    if ((nt > 1 || !untied) && (st = zc_engine_release(e, gpt2_unit(m, L), err)))
        return st;
    const int blk = gpt2_head_block_rows(&d->cfg);
    for (int k = 0; k < nt; k++) {
        int u, r0;
        gpt2_weight w;
        gpt2_vocab_tile(m, true, k, &u, &r0, &rows);
        if (nt > 1 && (st = zc_engine_acquire(e, u, err)))
            return st;
        gpt2_get_vocab_tile(m, true, k, &w);
        for (int r = 0; r < rows; r += blk) {
            const size_t o = (size_t)r * C;
            gpt2_matmul_forward_ld(F(d, S_LOGITS) + r0 + r, Vp, F(d, S_LNF), w.w ? w.w + o : NULL,
                                   w.w16 ? w.w16 + o : NULL, 1, C, r + blk < rows ? blk : rows - r,
                                   &d->g);
        }
        if ((st = zc_engine_release(e, u, err)))
            return st;
    }
    return zc_engine_end_pass(e, err);
}

zc_status gpt2_decoder_logits(gpt2_decoder *d, const int *seq, int t, const float **logits,
                              zc_err *err)
{
    ZC_ASSERT(t >= 1);
    const int start = t > d->T ? t - d->T : 0, n = t - start;
    zc_status st;
    if (start == 0 && d->cached == n - 1 && n > 1) {
        st = run(d, seq + n - 1, n - 1, 1, err); /* one new position over the cache */
    } else {
        /* the prefill; past T tokens the window slides, every position of the context changes,
         * and each token re-runs its whole context (positions restart at 0 as in the ordinary
         * forward over the last T tokens) */
        st = run(d, seq + start, 0, n, err);
    }
    d->cached = !st && start == 0 ? n : 0;
    *logits = F(d, S_LOGITS);
    return st;
}
