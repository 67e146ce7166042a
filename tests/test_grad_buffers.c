/* test_grad_buffers.c — the engine's gradient buffers as a model sees them: zc_engine_grad hands
 * out zeros to add into; zc_engine_grad_fresh says whether the model must overwrite (the buffer
 * is this micro-batch's own and was not zeroed) or add; a parameter the model never asks for
 * contributes zeros, and so does a unit whose gradients it never asks for in a step;
 * zc_engine_grad16 hands out the stored bf16 gradient to overwrite only where it stands for the
 * fp32 buffer (bf16 stage 0), once, and not after that parameter's fp32 buffer. Checked
 * through the update itself: SGD with lr 1 from zero weights makes each weight minus its reduced
 * gradient, exactly (small integers are exact in bf16 too). Run in the three ways gradients are
 * kept: fp32 stage 0 (the model adds into the stored gradients: never fresh), bf16 stage 0 (an fp32
 * buffer folded into bf16) and fp32 stage 2 (an fp32 buffer reduce-scattered into the shard). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "zeroc/engine.h"

enum { NA = 5, NB = 7, NC = 11, NP = 3 };
static const int numel[NP] = {NA, NB, NC};

/* The unit's weights, a row per parameter. */
static void weights(zc_engine *e, float w[NP][NC])
{
    zc_err err = {0};
    const zc_unit_info *ui = zc_engine_unit_info(e, 0);
    float *buf = malloc(ui->padded * sizeof *buf);
    CHECK(!zc_engine_gather_unit(e, 0, buf, &err), "gather: %s", err.msg);
    for (int p = 0; p < NP; p++)
        for (int i = 0; i < numel[p]; i++)
            w[p][i] = buf[zc_engine_param_info(e, p)->offset + i];
    free(buf);
}

/* Step s's gradients: parameter pf overwritten (or added to) with g and asked again (no longer
 * fresh, same buffer); pa asked to add into (zeros), g added. With as16, pf is written as bf16
 * where the engine takes that (with16), and pa is asked for only if with_pa. */
static void give(zc_engine *e, const char *name, int s, int pf, int pa, float g, bool own_buffer,
                 bool as16, bool with16, bool with_pa)
{
    uint16_t *h = as16 ? zc_engine_grad16(e, pf) : NULL;
    CHECK(!as16 || !h == !with16, "%s: step %d: grad16 %s", name, s, h ? "given" : "refused");
    if (h) {
        uint32_t bits;
        memcpy(&bits, &g, 4); /* a small integer: exact in bf16 */
        for (int i = 0; i < numel[pf]; i++)
            h[i] = (uint16_t)(bits >> 16);
        CHECK(!zc_engine_grad16(e, pf), "%s: step %d: grad16 given twice", name, s);
    }
    if (with_pa) {
        float *a = zc_engine_grad(e, pa);
        CHECK(!zc_engine_grad16(e, pa), "%s: step %d: grad16 after the fp32 buffer", name, s);
        for (int i = 0; i < numel[pa]; i++) {
            CHECK(a[i] == 0.0f, "%s: step %d: param %d's gradient [%d] = %g, want zeros", name, s,
                  pa, i, (double)a[i]);
            a[i] += g;
        }
    }
    if (h)
        return;
    bool fresh, again;
    float *f = zc_engine_grad_fresh(e, pf, &fresh);
    CHECK(fresh == own_buffer, "%s: step %d: fresh %d, want %d", name, s, fresh, own_buffer);
    for (int i = 0; i < numel[pf]; i++)
        f[i] = fresh ? g : f[i] + g;
    CHECK(zc_engine_grad_fresh(e, pf, &again) == f && !again,
          "%s: step %d: asked twice: another buffer, or fresh again", name, s);
}

static void run(const char *name, int stage, zc_dtype dtype, zc_comm *c)
{
    zc_err err = {0};
    zc_config cfg;
    zc_config_defaults(&cfg);
    cfg.stage = stage;
    cfg.dtype = dtype;
    cfg.bf16_enabled = dtype == ZC_BF16;
    cfg.optim = ZC_OPTIM_SGD;
    cfg.lr = 1.0;
    cfg.momentum = 0.0;
    cfg.weight_decay = 0.0;
    zc_mem *mem = zc_mem_create();
    zc_engine *e;
    CHECK(!zc_engine_create(&e, &cfg, c, mem, &err), "%s: create: %s", name, err.msg);
    int unit = zc_engine_add_unit(e, "u");
    for (int p = 0; p < NP; p++)
        zc_engine_add_param(e, unit, (const char *[]){"a", "b", "c"}[p], 1, (int64_t[]){numel[p]},
                            (zc_init){ZC_INIT_CONST, 0.0f});
    CHECK(!zc_engine_finalize(e, &err), "%s: finalize: %s", name, err.msg);
    const bool own_buffer = !(stage <= 1 && dtype == ZC_FP32); /* else never fresh */

    /* Step s: parameter s % 3 overwritten (or added to) with s + 1 and asked again (no longer
     * fresh, same buffer); (s + 1) % 3 asked to add into (zeros), s + 1 added; (s + 2) % 3
     * never asked. Every parameter is read in fp32 first, so in mixed precision the unit's
     * fp32 view is written too: the engine recycles it and the gradient buffers into each
     * other, and a region it forgot to zero holds earlier weights or gradients. */
    float w[NP][NC], want[NP][NC] = {{0}};
    for (int s = 0; s < 6; s++) {
        const int pf = s % NP, pa = (s + 1) % NP;
        const float g = (float)(s + 1);
        CHECK(!zc_engine_acquire(e, unit, &err), "%s: acquire: %s", name, err.msg);
        for (int p = 0; p < NP; p++)
            CHECK(zc_engine_param(e, p)[0] == want[p][0], "%s: step %d: param %d reads %g", name, s,
                  p, (double)zc_engine_param(e, p)[0]);
        /* Steps 3 and 4 write pf as bf16 where the engine takes that (bf16 stage 0); step 4 asks
         * for nothing else (no fp32 buffer at all); step 5 asks for no gradient of the unit at
         * all. The update must see zeros where nothing was written, not the step before's. */
        const bool none = s == 5, as16 = s == 3 || s == 4, with_pa = s != 4;
        for (int i = 0; i < NC && !none; i++)
            want[pf][i] -= g, want[pa][i] -= with_pa ? g : 0.0f;
        if (!none)
            give(e, name, s, pf, pa, g, own_buffer, as16, stage <= 1 && dtype == ZC_BF16, with_pa);
        CHECK(!zc_engine_grads_ready(e, unit, &err) && !zc_engine_release(e, unit, &err),
              "%s: step %d: %s", name, s, err.msg);
        zc_step_info info;
        CHECK(!zc_engine_step(e, &info, &err), "%s: step %d: %s", name, s, err.msg);
        weights(e, w);
        for (int p = 0; p < NP; p++)
            for (int i = 0; i < numel[p]; i++)
                CHECK(w[p][i] == want[p][i], "%s: after step %d, param %d [%d] = %g, want %g", name,
                      s, p, i, (double)w[p][i], (double)want[p][i]);
    }
    zc_engine_destroy(e);
    zc_mem_destroy(mem);
}

int main(int argc, char **argv)
{
    zc_comm *c;
    zc_err err = {0};
    if (zc_comm_init(&c, &argc, &argv, &err))
        return 1;
    run("fp32 stage 0", 0, ZC_FP32, c);
    run("bf16 stage 0", 0, ZC_BF16, c);
    run("fp32 stage 2", 2, ZC_FP32, c);
    int rc = check_summary();
    zc_comm_finalize(c);
    return rc;
}
