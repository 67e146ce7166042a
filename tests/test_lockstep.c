/* test_lockstep.c — a rank that skips a unit is caught, not hung or silently wrong (run on 2
 * ranks). A toy model of three units trains one good step; in step 2 rank 1 skips unit 'b'
 * (stage 2: no grads_ready for it; stage 3: no acquire/release in forward). Every rank must get
 * ZC_ELOCKSTEP, with a message naming step 2, rank 1 and a unit, and then shut down cleanly. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "zeroc/engine.h"

static zc_status micro_batch(zc_engine *e, const int *param, int stage, int skip, zc_err *err)
{
    zc_status st = ZC_OK;
    for (int u = 0; u < 3 && !st; u++) {
        if (skip && stage == 3 && u == 1)
            continue;
        if (!(st = zc_engine_acquire(e, u, err)))
            st = zc_engine_release(e, u, err);
    }
    for (int u = 2; u >= 0 && !st; u--) {
        if (!(st = zc_engine_acquire(e, u, err))) {
            float *g = zc_engine_grad(e, param[u]);
            for (int i = 0; i < 1000; i++)
                g[i] += 0.001f * (float)(i % 7);
            if (!(skip && stage == 2 && u == 1))
                st = zc_engine_grads_ready(e, u, err);
        }
        if (!st)
            st = zc_engine_release(e, u, err);
    }
    zc_step_info info;
    return st ? st : zc_engine_step(e, &info, err);
}

int main(int argc, char **argv)
{
    zc_comm *c;
    zc_err err = {0};
    if (zc_comm_init(&c, &argc, &argv, &err))
        return 1;
    const int rank = zc_comm_rank(c);
    for (int stage = 2; stage <= 3; stage++) {
        zc_config cfg;
        zc_config_defaults(&cfg);
        cfg.stage = stage;
        cfg.comm_timeout_s = 20;
        cfg.prefetch_bucket_size = 1000;
        zc_mem *mem = zc_mem_create();
        zc_engine *e;
        CHECK(!zc_engine_create(&e, &cfg, c, mem, &err), "create: %s", err.msg);
        const char *names[3] = {"a", "b", "c"};
        int param[3];
        for (int u = 0; u < 3; u++) {
            int id = zc_engine_add_unit(e, names[u]);
            param[u] = zc_engine_add_param(e, id, names[u], 1, (int64_t[]){1000},
                                           (zc_init){ZC_INIT_NORMAL, 1.0f});
        }
        CHECK(!zc_engine_finalize(e, &err), "finalize: %s", err.msg);
        zc_status st = micro_batch(e, param, stage, 0, &err);
        CHECK(st == ZC_OK, "stage %d: the good step failed: %s", stage, err.msg);
        st = micro_batch(e, param, stage, rank == 1, &err);
        CHECK(st == ZC_ELOCKSTEP, "stage %d rank %d: expected ZC_ELOCKSTEP, got %s (%s)", stage,
              rank, zc_status_name(st), err.msg);
        CHECK(strstr(err.msg, "step 2") && strstr(err.msg, "rank 1") && strstr(err.msg, "unit '"),
              "stage %d: message lacks step/rank/unit: %s", stage, err.msg);
        if (rank == 0)
            printf("stage %d: %s\n", stage, err.msg);
        zc_engine_destroy(e);
        zc_mem_destroy(mem);
    }
    int rc = check_summary();
    zc_comm_finalize(c);
    return rc;
}
