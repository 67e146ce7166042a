/* mlp.c — forward and backward of the reference MLP on the ZeRO engine.
 *
 * Activations are one allocation carved into (layers + 1) layer inputs plus two gradient
 * buffers, charged to the ledger's "activations". Each layer is acquired for its forward and
 * released; backward acquires it again (the stage-3 contract: gathered for forward, again for
 * backward), writes dW and db, hands the unit back, and releases it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/mlp/mlp.h"
#include "zeroc/checked.h"
#include "zeroc/gemm.h"
#include "zeroc/rng.h"

struct mlp_model {
    mlp_config cfg;
    zc_engine *e;
    zc_mem *mem;
    int *w, *b;    /* parameter ids per layer */
    float *act;    /* (layers + 1) × batch × hidden: act[l] is layer l's input, act[L] output */
    float *d, *dz; /* batch × hidden each: gradient w.r.t. a layer's output / pre-activation */
    void *ws;      /* the bf16 products' workspace (after the activations), or NULL */
    size_t act_bytes, ws_bytes;
};

static size_t bh(const mlp_model *m)
{
    return (size_t)m->cfg.batch * (size_t)m->cfg.hidden;
}

/* The activation bytes, counted without wrapping (INT64_MAX and *ovf if they do not fit):
 * (layers + 1) layer inputs/outputs plus the two gradient buffers, batch × hidden floats each;
 * in bf16 the products' workspace (zc_gemm_workspace_bytes, 4·(M·K + K·N): forward and dX
 * (M×N×K = B×H×H, B×H×H) take 4·(B·H + H·H), dW (H×H×B) takes 4·(H·B + B·H) — more when the
 * batch exceeds the width). */
static int64_t activation_bytes(const mlp_config *cfg, bool *ovf)
{
    const int64_t B = cfg->batch, H = cfg->hidden;
    const int64_t BH = zc_mul_i64(B, H, ovf), HH = zc_mul_i64(H, H, ovf);
    const int64_t wide = HH > BH ? HH : BH;
    int64_t ws = cfg->compute == ZC_GEMM_BF16 ? zc_mul_i64(4, zc_add_i64(BH, wide, ovf), ovf) : 0;
    int64_t act = zc_mul_i64(zc_mul_i64((int64_t)cfg->layers + 3, BH, ovf), 4, ovf);
    return zc_add_i64(act, ws, ovf);
}

zc_status mlp_check(const mlp_config *cfg, zc_err *err)
{
    if (cfg->hidden < 1 || cfg->layers < 1 || cfg->batch < 1)
        return zc_err_set(err, ZC_EINVAL,
                          "mlp: hidden, layers and batch must be >= 1 (got %d, %d, %d)",
                          cfg->hidden, cfg->layers, cfg->batch);
    if (cfg->layers > ZC_MLP_MAX_LAYERS)
        return zc_err_set(err, ZC_EINVAL, "mlp: --layers %d: at most %d layers", cfg->layers,
                          ZC_MLP_MAX_LAYERS);
    bool ovf = false;
    const int64_t H = cfg->hidden;
    int64_t numel = zc_mul_i64(cfg->layers, zc_add_i64(zc_mul_i64(H, H, &ovf), H, &ovf), &ovf);
    if (ovf || numel > ZC_MAX_NUMEL)
        return zc_err_set(err, ZC_EINVAL,
                          "mlp: --hidden %d and --layers %d make %.0f "
                          "parameters; zeroc holds at most %lld (2^49)",
                          cfg->hidden, cfg->layers,
                          (double)cfg->layers * ((double)H * (double)H + (double)H),
                          (long long)ZC_MAX_NUMEL);
    activation_bytes(cfg, &ovf);
    if (ovf)
        return zc_err_set(err, ZC_EINVAL,
                          "mlp: the activations of --micro-batch %d × --hidden "
                          "%d × (--layers %d + 3) floats do not fit in 64 bits",
                          cfg->batch, cfg->hidden, cfg->layers);
    return ZC_OK;
}

zc_status mlp_create(mlp_model **out, zc_engine *e, zc_mem *mem, const mlp_config *cfg, zc_err *err)
{
    /* the products run in bf16 when the engine stores bf16 parameters */
    mlp_config checked = *cfg;
    checked.compute = zc_engine_dtype(e) == ZC_BF16 ? ZC_GEMM_BF16 : ZC_GEMM_F32;
    zc_status st = mlp_check(&checked, err);
    if (st)
        return st;
    mlp_model *m = calloc(1, sizeof *m);
    if (!m)
        return zc_err_set(err, ZC_ENOMEM, "mlp: out of memory");
    m->cfg = checked;
    m->e = e;
    m->mem = mem;
    m->w = calloc((size_t)cfg->layers, sizeof(int));
    m->b = calloc((size_t)cfg->layers, sizeof(int));
    m->act_bytes = mlp_activation_bytes(&m->cfg);
    m->act = zc_mem_alloc(mem, ZC_MEM_ACTIVATIONS, m->act_bytes);
    if (!m->w || !m->b || !m->act) {
        size_t bytes = m->act_bytes;
        mlp_destroy(m);
        return zc_err_set(err, ZC_ENOMEM, "mlp: out of memory for activations (%zu bytes)", bytes);
    }
    m->d = m->act + ((size_t)cfg->layers + 1) * bh(m);
    m->dz = m->d + bh(m);
    m->ws_bytes = m->act_bytes - ((size_t)cfg->layers + 3) * bh(m) * sizeof(float);
    m->ws = m->ws_bytes ? m->dz + bh(m) : NULL;
    const int64_t H = cfg->hidden, wshape[2] = {H, H}, bshape[1] = {H};
    const zc_init init = {ZC_INIT_UNIFORM, (float)(1.0 / sqrt((double)H))};
    for (int l = 0; l < cfg->layers; l++) {
        char name[32];
        snprintf(name, sizeof name, "fc%d", l);
        int u = zc_engine_add_unit(e, name);
        snprintf(name, sizeof name, "fc%d.weight", l);
        m->w[l] = zc_engine_add_param(e, u, name, 2, wshape, init);
        snprintf(name, sizeof name, "fc%d.bias", l);
        m->b[l] = zc_engine_add_param(e, u, name, 1, bshape, init);
    }
    *out = m;
    return ZC_OK;
}

int mlp_unit_numel(const mlp_config *cfg, size_t *numel)
{
    for (int l = 0; l < cfg->layers; l++)
        numel[l] = (size_t)cfg->hidden * (size_t)cfg->hidden + (size_t)cfg->hidden;
    return cfg->layers;
}

size_t mlp_activation_bytes(const mlp_config *cfg)
{
    bool ovf = false;
    int64_t bytes = activation_bytes(cfg, &ovf);
    return ovf ? SIZE_MAX : (size_t)bytes;
}

/* One product in the model's precision. */
static void product(const mlp_model *m, bool ta, bool tb, int M, int N, int K, const float *A,
                    const float *B, float beta, float *C)
{
    zc_gemm(m->cfg.compute, ta, tb, M, N, K, 1.0f, A, ta ? M : K, B, tb ? K : N, beta, C, N, m->ws,
            m->ws_bytes);
}

void mlp_destroy(mlp_model *m)
{
    if (!m)
        return;
    zc_mem_free(m->mem, ZC_MEM_ACTIVATIONS, m->act, m->act_bytes);
    free(m->w);
    free(m->b);
    free(m);
}

void mlp_batch(const mlp_model *m, uint64_t seed, int64_t step, int64_t first_sample, float *x,
               float *y)
{
    const size_t H = (size_t)m->cfg.hidden;
    const uint64_t stream = 0x4d4c500000000000ULL + 2 * (uint64_t)step; /* "MLP", step, x|y */
    for (int b = 0; b < m->cfg.batch; b++) {
        uint64_t base = (uint64_t)(first_sample + b) * H;
        for (size_t k = 0; k < H; k++) {
            x[b * H + k] = zc_rng_normal(seed, stream, base + k);
            y[b * H + k] = zc_rng_normal(seed, stream + 1, base + k);
        }
    }
}

/* out (B,H) = relu(inp (B,H) · W^T (H,H) + bias (H)) */
static void linear_relu_forward(const mlp_model *m, float *out, const float *inp, const float *W,
                                const float *bias, int B, int H)
{
    for (int b = 0; b < B; b++)
        memcpy(out + (size_t)b * H, bias, (size_t)H * sizeof(float));
    product(m, false, true, B, H, H, inp, W, 1.0f, out);
    for (size_t i = 0; i < (size_t)B * H; i++)
        out[i] = out[i] > 0.0f ? out[i] : 0.0f;
}

static zc_status forward(mlp_model *m, const float *x, zc_err *err)
{
    const int B = m->cfg.batch, H = m->cfg.hidden;
    memcpy(m->act, x, bh(m) * sizeof(float));
    for (int l = 0; l < m->cfg.layers; l++) {
        zc_status st = zc_engine_acquire(m->e, l, err);
        if (st)
            return st;
        const float *w = zc_engine_param(m->e, m->w[l]), *b = zc_engine_param(m->e, m->b[l]);
        if (!w || !b) /* mixed precision: the first fp32 read of a matrix maps its view */
            return zc_err_set(err, ZC_ENOMEM, "mlp: out of memory for layer %d's fp32 weights", l);
        linear_relu_forward(m, m->act + (size_t)(l + 1) * bh(m), m->act + (size_t)l * bh(m), w, b,
                            B, H);
        if ((st = zc_engine_release(m->e, l, err)))
            return st;
    }
    return ZC_OK;
}

static double mse(const mlp_model *m, const float *y)
{
    const float *out = m->act + (size_t)m->cfg.layers * bh(m);
    double s = 0.0;
    for (size_t i = 0; i < bh(m); i++) {
        double diff = (double)out[i] - (double)y[i];
        s += diff * diff;
    }
    return s / (double)bh(m);
}

zc_status mlp_forward(mlp_model *m, const float *x, const float *y, double *loss, zc_err *err)
{
    zc_status st = forward(m, x, err);
    if (!st)
        *loss = mse(m, y);
    return st;
}

zc_status mlp_backward(mlp_model *m, const float *y, zc_err *err)
{
    const int B = m->cfg.batch, H = m->cfg.hidden, L = m->cfg.layers;
    zc_status st;
    /* d = ∂loss/∂out = 2 (out − y) / (B·H) */
    const float *out = m->act + (size_t)L * bh(m);
    const float scale = 2.0f / (float)bh(m);
    for (size_t i = 0; i < bh(m); i++)
        m->d[i] = scale * (out[i] - y[i]);
    for (int l = L - 1; l >= 0; l--) {
        const float *inp = m->act + (size_t)l * bh(m), *outl = m->act + (size_t)(l + 1) * bh(m);
        for (size_t i = 0; i < bh(m); i++) /* through the ReLU */
            m->dz[i] = outl[i] > 0.0f ? m->d[i] : 0.0f;
        if ((st = zc_engine_acquire(m->e, l, err)))
            return st;
        float *dW = zc_engine_grad(m->e, m->w[l]), *db = zc_engine_grad(m->e, m->b[l]);
        if (!dW || !db)
            return zc_err_set(err, ZC_ENOMEM, "mlp: out of memory for the gradients of fc%d", l);
        /* dW (H,H) += dz^T (H,B) · inp (B,H); db += Σ_b dz */
        product(m, true, false, H, H, B, m->dz, inp, 1.0f, dW);
        for (int b = 0; b < B; b++)
            for (int k = 0; k < H; k++)
                db[k] += m->dz[(size_t)b * H + k];
        /* d (B,H) = dz (B,H) · W (H,H); layer 0 needs no input gradient */
        const float *w = l > 0 ? zc_engine_param(m->e, m->w[l]) : NULL;
        if (l > 0 && !w)
            return zc_err_set(err, ZC_ENOMEM, "mlp: out of memory for layer %d's fp32 weights", l);
        if (l > 0)
            product(m, false, false, B, H, H, m->dz, w, 0.0f, m->d);
        if ((st = zc_engine_grads_ready(m->e, l, err)) || (st = zc_engine_release(m->e, l, err)))
            return st;
    }
    return ZC_OK;
}

zc_status mlp_forward_backward(mlp_model *m, const float *x, const float *y, double *loss,
                               zc_err *err)
{
    zc_status st = mlp_forward(m, x, y, loss, err);
    return st ? st : mlp_backward(m, y, err);
}
