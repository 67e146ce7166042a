/* lora.c — LoRA adapters' slots, sizes and math (contract in lora.h). The decoder (gpt2.c)
 * registers the parameters and calls the forward after each adapted product and the backward
 * after its backward; everything here is a pure function of its arguments. */
#include "models/gpt2/lora.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "zeroc/gemm.h"
#include "zeroc/rng.h"

static const char *const NAMES[LORA_NTARGETS] = {"q_proj",    "k_proj",  "v_proj",    "o_proj",
                                                 "gate_proj", "up_proj", "down_proj", "c_attn"};

bool lora_is_param(const char *name)
{
    return !strncmp(name, "h.", 2) && strstr(name, ".lora.") != NULL;
}

const char *lora_target_name(lora_target t)
{
    return t >= 0 && t < LORA_NTARGETS ? NAMES[t] : "?";
}

unsigned lora_default_targets(bool gpt2)
{
    return gpt2 ? 1u << LORA_QKV_FUSED : (1u << LORA_Q) | (1u << LORA_V);
}

/* The targets one Hugging Face name selects in a family (0: none). */
static unsigned name_targets(const char *name, size_t n, bool gpt2)
{
#define IS(s) (n == strlen(s) && !strncmp(name, s, n))
    if (IS("all-linear"))
        return gpt2 ? (1u << LORA_QKV_FUSED) | (1u << LORA_O) | (1u << LORA_UP) | (1u << LORA_DOWN)
                    : (1u << LORA_Q) | (1u << LORA_K) | (1u << LORA_V) | (1u << LORA_O) |
                          (1u << LORA_GATE) | (1u << LORA_UP) | (1u << LORA_DOWN);
    if (gpt2) {
        if (IS("c_attn"))
            return 1u << LORA_QKV_FUSED;
        if (IS("c_proj")) /* attn.c_proj and mlp.c_proj */
            return (1u << LORA_O) | (1u << LORA_DOWN);
        if (IS("c_fc"))
            return 1u << LORA_UP;
        return 0;
    }
    for (int t = LORA_Q; t <= LORA_DOWN; t++)
        if (IS(NAMES[t]))
            return 1u << t;
    return 0;
#undef IS
}

zc_status lora_parse_targets(const char *list, bool gpt2, unsigned *targets, zc_err *err)
{
    *targets = 0;
    const char *p = list ? list : "";
    for (;;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        while (n && (*p == ' '))
            p++, n--;
        while (n && p[n - 1] == ' ')
            n--;
        unsigned t = n ? name_targets(p, n, gpt2) : 0;
        if (!t)
            return zc_err_set(err, ZC_EINVAL,
                              "lora.target_modules (--lora-targets): '%.*s' is not a linear "
                              "layer of %s; expected a list of %s, or all-linear",
                              (int)(n > 64 ? 64 : n), p, gpt2 ? "GPT-2" : "the Llama family",
                              gpt2 ? "c_attn, c_proj, c_fc"
                                   : "q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, "
                                     "down_proj");
        *targets |= t;
        if (!end)
            return ZC_OK;
        p = end + 1;
    }
}

zc_status lora_check(const gpt2_lora *l, zc_err *err)
{
    if (l->r < 1 || l->r > 65536)
        return zc_err_set(err, ZC_EINVAL,
                          "LoRA r (lora.r, --lora-r) %d: expected an integer in 1..65536", l->r);
    if (!(l->alpha > 0) || !isfinite(l->alpha))
        return zc_err_set(err, ZC_EINVAL,
                          "LoRA lora_alpha (--lora-alpha) %g: expected a number > 0", l->alpha);
    if (!(l->dropout >= 0 && l->dropout < 1))
        return zc_err_set(err, ZC_EINVAL,
                          "LoRA lora_dropout (--lora-dropout) %g: expected 0 <= p < 1", l->dropout);
    if (!l->targets)
        return zc_err_set(err, ZC_EINVAL, "LoRA target_modules (--lora-targets): empty");
    return ZC_OK;
}

int lora_slots(const gpt2_lora *l, const lora_dims *d, lora_slot *out)
{
    const int64_t W = d->QD + 2 * d->KVD;
    const struct {
        lora_target t;
        lora_product p;
        int64_t off, n, in;
    } all[LORA_NTARGETS] = {
        {LORA_QKV_FUSED, LORA_QKV, 0, W, d->C},
        {LORA_Q, LORA_QKV, 0, d->QD, d->C},
        {LORA_K, LORA_QKV, d->QD, d->KVD, d->C},
        {LORA_V, LORA_QKV, d->QD + d->KVD, d->KVD, d->C},
        {LORA_O, LORA_ATTPROJ, 0, d->C, d->QD},
        {LORA_GATE, LORA_FC, 0, d->hidden, d->C},
        {LORA_UP, LORA_FC, d->swiglu ? d->hidden : 0, d->hidden, d->C},
        {LORA_DOWN, LORA_FCPROJ, 0, d->C, d->hidden},
    };
    int k = 0;
    for (int i = 0; i < LORA_NTARGETS; i++) {
        if (!(l->targets & (1u << all[i].t)))
            continue;
        if (all[i].t == LORA_GATE && !d->swiglu) /* GPT-2 has no gate */
            continue;
        out[k++] = (lora_slot){all[i].t, all[i].p, all[i].off, all[i].n, all[i].in};
    }
    return k;
}

int64_t lora_block_numel(const gpt2_lora *l, const lora_dims *d)
{
    lora_slot s[LORA_NTARGETS];
    int n = lora_slots(l, d, s);
    int64_t sum = 0;
    for (int i = 0; i < n; i++)
        sum += (int64_t)l->r * (s[i].in + s[i].out_n);
    return sum;
}

int64_t lora_block_act_floats(const gpt2_lora *l, const lora_dims *d, int64_t BT)
{
    lora_slot s[LORA_NTARGETS];
    return (int64_t)lora_slots(l, d, s) * BT * l->r;
}

int64_t lora_scratch_floats(const gpt2_lora *l, const lora_dims *d, int64_t BT)
{
    lora_slot s[LORA_NTARGETS];
    int n = lora_slots(l, d, s);
    int64_t in = 0;
    for (int i = 0; i < n; i++)
        in = s[i].in > in ? s[i].in : in;
    return BT * l->r + (l->dropout > 0 ? BT * in : 0);
}

/* The adapter's input as the adapter sees it: x, or (dropout in training) x with each element
 * zeroed with probability p and the rest scaled by 1/(1 − p), into scratch. */
static const float *dropped(const gpt2_lora *l, const lora_slot *s, int BT, const float *x,
                            bool training, uint64_t stream, float *scratch)
{
    if (!training || !(l->dropout > 0) || !scratch)
        return x;
    const size_t n = (size_t)BT * (size_t)s->in;
    const float keep = (float)(1.0 / (1.0 - l->dropout));
    for (size_t i = 0; i < n; i++)
        scratch[i] = zc_rng_uniform(l->seed, stream, i) < l->dropout ? 0.0f : x[i] * keep;
    return scratch;
}

void lora_forward(const gpt2_lora *l, const lora_slot *s, int BT, const float *x, const float *A,
                  const float *B, float *u, float *y, int ld_y, bool training, uint64_t stream,
                  float *scratch)
{
    const int r = l->r, in = (int)s->in, n = (int)s->out_n;
    const float scale = (float)(l->alpha / l->r);
    const float *xd = dropped(l, s, BT, x, training, stream, scratch);
    zc_gemm(ZC_GEMM_F32, false, true, BT, r, in, 1.0f, xd, in, A, in, 0.0f, u, r, NULL, 0);
    if (y)
        zc_gemm(ZC_GEMM_F32, false, true, BT, n, r, scale, u, r, B, r, 1.0f, y + s->out_off, ld_y,
                NULL, 0);
}

void lora_backward(const gpt2_lora *l, const lora_slot *s, int BT, const float *x, const float *A,
                   const float *B, const float *u, const float *dy, int ld_y, float *dx, float *dA,
                   float *dB, bool training, uint64_t stream, float *du, float *scratch)
{
    const int r = l->r, in = (int)s->in, n = (int)s->out_n;
    const float scale = (float)(l->alpha / l->r);
    const float *dys = dy + s->out_off;
    /* dB (n × r) += s · dysᵀ · u; du (BT × r) = s · dys · B */
    zc_gemm(ZC_GEMM_F32, true, false, n, r, BT, scale, dys, ld_y, u, r, 1.0f, dB, r, NULL, 0);
    zc_gemm(ZC_GEMM_F32, false, false, BT, r, n, scale, dys, ld_y, B, r, 0.0f, du, r, NULL, 0);
    /* dA (r × in) += duᵀ · drop(x) */
    const bool drop = training && l->dropout > 0 && scratch;
    const float *xd = dropped(l, s, BT, x, training, stream, scratch);
    zc_gemm(ZC_GEMM_F32, true, false, r, in, BT, 1.0f, du, r, xd, in, 1.0f, dA, in, NULL, 0);
    if (!drop) { /* dx += du · A */
        zc_gemm(ZC_GEMM_F32, false, false, BT, in, r, 1.0f, du, r, A, in, 1.0f, dx, in, NULL, 0);
        return;
    }
    /* through the mask: the dropped input's gradient, then where it was kept, scaled */
    float *g = scratch;
    zc_gemm(ZC_GEMM_F32, false, false, BT, in, r, 1.0f, du, r, A, in, 0.0f, g, in, NULL, 0);
    const size_t total = (size_t)BT * (size_t)in;
    const float keep = (float)(1.0 / (1.0 - l->dropout));
    for (size_t i = 0; i < total; i++)
        if (!(zc_rng_uniform(l->seed, stream, i) < l->dropout))
            dx[i] += g[i] * keep;
}
