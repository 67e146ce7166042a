/* mlp.h — the reference MLP experiment (Linear + ReLU layers), trained through the ZeRO engine:
 * `layers` × (Linear(hidden, hidden) + ReLU), MSE loss against random targets.
 *
 * Each Linear is one engine unit ("fc<i>": weight [hidden, hidden] row-major [out, in], bias
 * [hidden]), initialised like PyTorch's nn.Linear (U(−1/√in, 1/√in)). Data is synthetic and
 * keyed by (seed, step, global sample index), so N ranks with micro-batch B see exactly the
 * samples one rank with micro-batch N·B sees. Uses only the public zeroc headers.
 *
 *     mlp_model *m;
 *     mlp_create(&m, engine, mem, &(mlp_config){.hidden = 256, .layers = 4, .batch = 8}, &err);
 *     zc_engine_finalize(engine, &err);
 *     mlp_batch(m, seed, step, first_sample, x, y);
 *     mlp_forward_backward(m, x, y, &loss, &err);
 *     zc_engine_step(engine, &info, &err);
 */
#ifndef ZEROC_MODELS_MLP_H
#define ZEROC_MODELS_MLP_H

#include <stdint.h>

#include "zeroc/engine.h"
#include "zeroc/gemm.h"

typedef struct {
    int hidden, layers, batch;
    /* the products' precision (zeroc/gemm.h): mlp_create sets it from the engine — bf16 when
     * the parameters are stored in bf16 — and the activation bytes include its workspace */
    zc_gemm_type compute;
} mlp_config;

typedef struct mlp_model mlp_model;

/* The reference experiment's shape, the commands' defaults: 12 Linear+ReLU layers of 2048. */
#define MLP_DEFAULT_HIDDEN 2048
#define MLP_DEFAULT_LAYERS 12

/* The most layers an MLP may have (each layer is an engine unit). */
#define ZC_MLP_MAX_LAYERS 65536
_Static_assert(ZC_MLP_MAX_LAYERS <= ZC_MAX_UNITS, "every layer is a unit");

/* Refuses (ZC_EINVAL, naming the flags and values) a shape zeroc cannot build: sizes below 1,
 * more than ZC_MLP_MAX_LAYERS layers, more than ZC_MAX_NUMEL parameters, activations (with
 * cfg->compute's workspace) past 64 bits. mlp_create checks it; estimates call it first. */
zc_status mlp_check(const mlp_config *cfg, zc_err *err);

/* Registers the model's units with the (not yet finalized) engine and allocates activations. */
zc_status mlp_create(mlp_model **out, zc_engine *e, zc_mem *mem, const mlp_config *cfg,
                     zc_err *err);
void mlp_destroy(mlp_model *m);
/* The elements of each unit mlp_create registers (fc0 … fc<layers−1>: weight + bias) into
 * numel[0 .. layers); returns layers. */
int mlp_unit_numel(const mlp_config *cfg, size_t *numel);
/* Bytes of activations mlp_create allocates for cfg (the ledger's "activations"); SIZE_MAX
 * for a shape mlp_check refuses. */
size_t mlp_activation_bytes(const mlp_config *cfg);

/* Fills x and y (batch × hidden each) with samples first_sample … first_sample+batch−1 of
 * optimizer step `step`. */
void mlp_batch(const mlp_model *m, uint64_t seed, int64_t step, int64_t first_sample, float *x,
               float *y);

/* Forward: keeps the activations for the backward; *loss = this micro-batch's mean squared
 * error. Alone (no backward after it) it is an evaluation. */
zc_status mlp_forward(mlp_model *m, const float *x, const float *y, double *loss, zc_err *err);
/* Backward of the last forward: accumulates gradients into the engine and hands each unit
 * back as soon as it is done. */
zc_status mlp_backward(mlp_model *m, const float *y, zc_err *err);
/* Both. */
zc_status mlp_forward_backward(mlp_model *m, const float *x, const float *y, double *loss,
                               zc_err *err);

#endif
