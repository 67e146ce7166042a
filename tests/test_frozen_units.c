/* test_frozen_units.c — a frozen unit (zc_engine_freeze_unit, LoRA's base) is stored and gathered
 * but never trained: its weights stay the bits they started as, it takes no gradient, no optimizer
 * state and no reduce-scatter, and the ledger's model states are the formula's with its gradient
 * and optimizer terms left out — to the byte, at every stage, in fp32 and bf16. The trained units
 * around it (one before, one after, so the reverse-order reduce-scatter passes over it) end on the
 * same bits at stages 0–3 and with both offloads to NVMe (the swap files under argv[1], a disk
 * file system). Run on 1, 2 and 3 ranks (3: shards of uneven units). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "zeroc/comm.h"
#include "zeroc/config.h"
#include "zeroc/engine.h"
#include "zeroc/estimate.h"
#include "zeroc/mem.h"

static zc_comm *comm;
static zc_mem *mem;
static int rank, nranks;
static const char *swap_dir;

/* units: "pre" (trained), "base" (frozen: a matrix and a vector), "post" (trained) */
enum { PRE = 0, BASE, POST, NUNITS };
enum { NPRE = 37, ROWS = 8, COLS = 13, NPOST = 29, STEPS = 3 };

typedef struct {
    float *w[NUNITS]; /* each unit's gathered values after training */
    float *base0;     /* the frozen unit's values before training */
} result;

static size_t numel_of(int u)
{
    return u == PRE ? NPRE : u == BASE ? ROWS * COLS + COLS : NPOST;
}

static float *gather(zc_engine *e, int u)
{
    zc_err err = {0};
    float *buf = calloc(zc_engine_unit_info(e, u)->padded, sizeof *buf);
    CHECK(!zc_engine_gather_unit(e, u, buf, &err), "gather unit %d: %s", u, err.msg);
    return buf;
}

/* One configuration: registers the three units, freezes "base", trains STEPS steps of gradients
 * that depend on the base's values and the rank, and returns every unit's final values. */
static result run(int stage, zc_dtype dtype, bool offload)
{
    char name[64];
    snprintf(name, sizeof name, "stage %d %s%s", stage, dtype == ZC_BF16 ? "bf16" : "fp32",
             offload ? " offload" : "");
    zc_config cfg;
    zc_config_defaults(&cfg);
    cfg.stage = stage;
    cfg.comm_timeout_s = 60;
    cfg.grad_clip = 0.05; /* clipped: the norm must leave the frozen unit out */
    cfg.lr = 0.01;
    if (dtype == ZC_BF16)
        cfg.dtype = ZC_BF16, cfg.bf16_enabled = true;
    if (offload) {
        cfg.offload_optimizer = cfg.offload_param = ZC_OFFLOAD_NVME;
        snprintf(cfg.optimizer_nvme_path, sizeof cfg.optimizer_nvme_path, "%s", swap_dir);
        snprintf(cfg.param_nvme_path, sizeof cfg.param_nvme_path, "%s", swap_dir);
        cfg.max_in_cpu = 0;
        cfg.param_persistence_threshold = 0;
    }
    zc_err err = {0};
    zc_engine *e = NULL;
    CHECK(!zc_engine_create(&e, &cfg, comm, mem, &err), "%s: create: %s", name, err.msg);
    const zc_init normal = {ZC_INIT_NORMAL, 0.5f}, one = {ZC_INIT_CONST, 1.0f};
    int pre = zc_engine_add_unit(e, "pre");
    int p_pre = zc_engine_add_param(e, pre, "a", 1, (int64_t[]){NPRE}, normal);
    int base = zc_engine_add_unit(e, "base");
    int p_w = zc_engine_add_param(e, base, "w", 2, (int64_t[]){ROWS, COLS}, normal);
    int p_b = zc_engine_add_param(e, base, "b", 1, (int64_t[]){COLS}, one);
    int post = zc_engine_add_unit(e, "post");
    int p_post = zc_engine_add_param(e, post, "c", 1, (int64_t[]){NPOST}, normal);
    CHECK(zc_engine_freeze_unit(e, base) == 0, "%s: freeze refused", name);
    CHECK(!zc_engine_finalize(e, &err), "%s: finalize: %s", name, err.msg);
    CHECK(zc_engine_freeze_unit(e, base) == -1, "%s: freeze after finalize accepted", name);
    CHECK(zc_engine_unit_info(e, base)->frozen && !zc_engine_unit_info(e, pre)->frozen,
          "%s: unit_info.frozen wrong", name);

    /* the ledger: the parameters of all three units, gradients and optimizer state of the two
     * trained ones only (no offload: all in RAM) */
    if (!offload) {
        const int64_t P = dtype == ZC_BF16 ? 2 : 4, G = P, N = nranks;
        int64_t params = 0, grads = 0, opt = 0;
        for (int u = 0; u < NUNITS; u++) {
            int64_t S = (int64_t)(numel_of(u) + (size_t)N - 1) / N, full = S * N;
            params += P * (stage == 3 ? S : full);
            if (u == BASE)
                continue;
            grads += G * (stage >= 2 ? S : full);
            opt += ((dtype == ZC_BF16 ? 4 : 0) + 8) * (stage >= 1 ? S : full);
        }
        int64_t got_p = zc_mem_get(mem, ZC_MEM_PARAMS).current,
                got_g = zc_mem_get(mem, ZC_MEM_GRADS).current,
                got_o = zc_mem_get(mem, ZC_MEM_OPTIMIZER).current;
        CHECK(got_p == params && got_g == grads && got_o == opt,
              "%s: ledger params %lld grads %lld optimizer %lld, formula %lld %lld %lld", name,
              (long long)got_p, (long long)got_g, (long long)got_o, (long long)params,
              (long long)grads, (long long)opt);
        size_t numel[NUNITS];
        zc_estimate_in in = zc_engine_estimate_in(e, stage, numel, NULL, NULL);
        zc_state_bytes b = zc_estimate_states(&in);
        CHECK(b.params == params && b.grads == grads && b.optimizer == opt,
              "%s: estimate %lld %lld %lld, formula %lld %lld %lld", name, (long long)b.params,
              (long long)b.grads, (long long)b.optimizer, (long long)params, (long long)grads,
              (long long)opt);
    }
    result r = {.base0 = gather(e, base)};

    for (int s = 0; s < STEPS; s++) {
        CHECK(!zc_engine_acquire(e, pre, &err) && !zc_engine_acquire(e, base, &err) &&
                  !zc_engine_acquire(e, post, &err),
              "%s: acquire: %s", name, err.msg);
        const float *a = zc_engine_param(e, p_pre), *w = zc_engine_param(e, p_w),
                    *bv = zc_engine_param(e, p_b), *c = zc_engine_param(e, p_post);
        CHECK(a && w && bv && c, "%s: step %d: a parameter not readable", name, s);
        CHECK(!zc_engine_grad(e, p_w) && !zc_engine_grad16(e, p_b),
              "%s: a frozen parameter handed out a gradient", name);
        float *ga = zc_engine_grad(e, p_pre), *gc = zc_engine_grad(e, p_post);
        CHECK(ga && gc, "%s: step %d: no gradient buffer", name, s);
        if (!(a && w && bv && c && ga && gc))
            break;
        /* gradients that read the frozen weights: every rank its own */
        for (int i = 0; i < NPRE; i++)
            ga[i] += a[i] - w[i % (ROWS * COLS)] * bv[i % COLS] + 0.25f * (float)(rank + 1);
        for (int i = 0; i < NPOST; i++)
            gc[i] += c[i] * w[(3 * i) % (ROWS * COLS)] - (float)(rank - i % 5);
        zc_status st = zc_engine_grads_ready(e, base, &err);
        CHECK(st == ZC_ESTATE && strstr(err.msg, "frozen"), "%s: grads_ready(frozen) gave %s '%s'",
              name, zc_status_name(st), err.msg);
        CHECK(!zc_engine_grads_ready(e, post, &err) && !zc_engine_release(e, post, &err) &&
                  !zc_engine_release(e, base, &err) && !zc_engine_grads_ready(e, pre, &err) &&
                  !zc_engine_release(e, pre, &err),
              "%s: step %d: %s", name, s, err.msg);
        zc_step_info info;
        CHECK(!zc_engine_step(e, &info, &err) && info.stepped, "%s: step %d: %s", name, s, err.msg);
        CHECK(info.clip_coef < 1.0, "%s: step %d: not clipped (norm %g)", name, s, info.grad_norm);
    }
    for (int u = 0; u < NUNITS; u++)
        r.w[u] = gather(e, u);
    CHECK(!memcmp(r.w[BASE], r.base0, numel_of(BASE) * sizeof(float)),
          "%s: the frozen unit's weights changed", name);
    CHECK(memcmp(r.w[PRE], r.base0, 4) != 0, "%s: nothing trained", name);
    zc_engine_destroy(e);
    CHECK(zc_mem_get(mem, ZC_MEM_PARAMS).current == 0 &&
              zc_mem_get(mem, ZC_MEM_OPTIMIZER).current == 0,
          "%s: the ledger did not return to zero", name);
    return r;
}

static void free_result(result *r)
{
    for (int u = 0; u < NUNITS; u++)
        free(r->w[u]);
    free(r->base0);
}

int main(int argc, char **argv)
{
    zc_err err = {0};
    if (zc_comm_init(&comm, &argc, &argv, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    if (argc < 2) {
        fprintf(stderr, "usage: test_frozen_units SWAP_DIR\n");
        return 2;
    }
    swap_dir = argv[1];
    rank = zc_comm_rank(comm);
    nranks = zc_comm_size(comm);
    mem = zc_mem_create();
    const zc_dtype dtypes[2] = {ZC_FP32, ZC_BF16};
    for (int d = 0; d < 2; d++) {
        result ref = run(0, dtypes[d], false);
        for (int k = 1; k <= 4; k++) { /* stages 1–3, then stage 3 with both offloads */
            result r = run(k < 4 ? k : 3, dtypes[d], k == 4);
            for (int u = 0; u < NUNITS; u++)
                CHECK(!memcmp(r.w[u], ref.w[u], numel_of(u) * sizeof(float)),
                      "%s, %s: unit %d differs from stage 0",
                      dtypes[d] == ZC_BF16 ? "bf16" : "fp32",
                      k < 4 ? (const char *[]){"", "stage 1", "stage 2", "stage 3"}[k]
                            : "stage 3 offload",
                      u);
            free_result(&r);
        }
        free_result(&ref);
    }
    int rc = check_summary();
    zc_mem_destroy(mem);
    zc_comm_finalize(comm);
    return rc;
}
