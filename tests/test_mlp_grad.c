/* test_mlp_grad.c — the MLP's analytic gradients (through the engine, stage 0, one rank) match
 * central finite differences of its loss. Loss in double, parameters perturbed by ±1e-2 in
 * float: truncation error O(h²) ~1e-4 relative plus float rounding of the forward ~1e-7/h;
 * tolerance 2e-3 relative + 1e-5 absolute. A wrong sign, factor or transpose is off by O(1).
 * A perturbation that moves a ReLU across its kink makes the loss non-smooth there; such
 * elements (one-sided slopes disagree by > 10%) are skipped, and at most 5% may be. */
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "models/mlp/mlp.h"

int main(int argc, char **argv)
{
    zc_comm *c;
    zc_err err = {0};
    if (zc_comm_init(&c, &argc, &argv, &err))
        return 1;
    zc_config cfg;
    zc_config_defaults(&cfg);
    zc_mem *mem = zc_mem_create();
    zc_engine *e;
    mlp_model *m;
    const mlp_config mc = {.hidden = 6, .layers = 3, .batch = 5};
    CHECK(!zc_engine_create(&e, &cfg, c, mem, &err), "%s", err.msg);
    CHECK(!mlp_create(&m, e, mem, &mc, &err), "%s", err.msg);
    CHECK(!zc_engine_finalize(e, &err), "%s", err.msg);
    float x[30], y[30];
    mlp_batch(m, 5, 0, 0, x, y);
    /* Stage 0 keeps each gradient in one persistent buffer: take the pointers before backward
     * (after grads_ready the engine no longer hands them out). */
    float *grads[8];
    for (int p = 0; p < zc_engine_num_params(e); p++)
        grads[p] = zc_engine_grad(e, p);
    double loss;
    CHECK(!mlp_forward_backward(m, x, y, &loss, &err), "%s", err.msg);
    int checked = 0, skipped = 0;
    double worst = 0;
    for (int p = 0; p < zc_engine_num_params(e); p++) {
        const zc_param_info *pi = zc_engine_param_info(e, p);
        const float *g = grads[p];
        for (size_t i = 0; i < pi->numel; i++) {
            zc_engine_acquire(e, pi->unit, &err);
            float *w = zc_engine_param(e, p) + i, saved = *w;
            zc_engine_release(e, pi->unit, &err);
            const float h = 1e-2f;
            double lp, lm, l0;
            *w = saved + h;
            mlp_forward(m, x, y, &lp, &err);
            *w = saved - h;
            mlp_forward(m, x, y, &lm, &err);
            *w = saved;
            mlp_forward(m, x, y, &l0, &err);
            double step = (double)(saved + h) - (double)saved;
            double num = (lp - lm) / (2.0 * step);
            if (fabs((lp - l0) - (l0 - lm)) / step > 0.1 * fabs(num) + 1e-4) {
                skipped++;
                continue;
            }
            double diff = fabs(num - g[i]);
            CHECK(diff <= 2e-3 * fabs(num) + 1e-5, "%s[%zu]: analytic %g vs numeric %g", pi->name,
                  i, g[i], num);
            worst = fmax(worst, diff);
            checked++;
        }
    }
    printf("%d gradients checked, %d skipped at a ReLU kink, worst abs diff %.3g\n", checked,
           skipped, worst);
    CHECK(skipped * 20 <= checked + skipped, "%d of %d elements at a kink", skipped,
          checked + skipped);
    mlp_destroy(m);
    zc_engine_destroy(e);
    zc_mem_destroy(mem);
    int rc = check_summary();
    zc_comm_finalize(c);
    return rc;
}
