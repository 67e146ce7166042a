/* linear_regression.c — the smallest program that trains with the zeroc engine through its
 * installed headers and pkg-config file: y = w·x + b fitted to y = 3x − 1 by SGD with ZeRO
 * stage 3 (run it on any number of ranks). Built by tests/test_install.sh against an install.
 *
 *     cc linear_regression.c $(pkg-config --cflags --libs zeroc) -o linreg
 *     mpirun -np 2 ./linreg
 */
#include <stdio.h>

#include <zeroc/engine.h>

int main(int argc, char **argv)
{
    zc_comm *comm;
    zc_err err = {0};
    if (zc_comm_init(&comm, &argc, &argv, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    zc_config cfg;
    zc_config_defaults(&cfg);
    cfg.stage = 3;
    cfg.optim = ZC_OPTIM_SGD;
    cfg.lr = 0.5;
    zc_mem *mem = zc_mem_create();
    zc_engine *e = NULL; /* NULL if zc_engine_create fails: zc_engine_destroy takes NULL */
    int w = -1, b = -1;
    zc_status st = zc_engine_create(&e, &cfg, comm, mem, &err);
    if (!st) {
        int u = zc_engine_add_unit(e, "linear");
        w = zc_engine_add_param(e, u, "w", 1, (int64_t[]){1}, (zc_init){ZC_INIT_CONST, 0.0f});
        b = zc_engine_add_param(e, u, "b", 1, (int64_t[]){1}, (zc_init){ZC_INIT_CONST, 0.0f});
        st = zc_engine_finalize(e, &err);
    }
    const int rank = zc_comm_rank(comm), n = zc_comm_size(comm);
    for (int step = 0; step < 1000 && !st; step++) {
        if ((st = zc_engine_acquire(e, 0, &err)))
            break;
        for (int j = 0; j < 2; j++) { /* rank r of n sees x = (2r + j + 1) / 2n, j = 0, 1 */
            float x = (float)(2 * rank + j + 1) / (float)(2 * n), y = 3.0f * x - 1.0f;
            float pred = zc_engine_param(e, w)[0] * x + zc_engine_param(e, b)[0];
            zc_engine_grad(e, w)[0] += (pred - y) * x; /* d/dw of (pred − y)² / 2 */
            zc_engine_grad(e, b)[0] += pred - y;
        }
        zc_step_info info;
        if (!(st = zc_engine_grads_ready(e, 0, &err)) && !(st = zc_engine_release(e, 0, &err)))
            st = zc_engine_step(e, &info, &err);
    }
    float wb[2 * 64];
    if (!st)
        st = zc_engine_gather_unit(e, 0, wb, &err);
    if (st)
        fprintf(stderr, "rank %d: %s\n", rank, err.msg);
    else if (rank == 0)
        printf("w = %.4f, b = %.4f (want 3, -1) on %d ranks\n", wb[0], wb[1], n);
    zc_engine_destroy(e);
    zc_mem_destroy(mem);
    zc_comm_finalize(comm);
    return st ? 1 : 0;
}
