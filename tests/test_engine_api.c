/* test_engine_api.c — the engine's and the checkpoint's calling contract, as a program using the
 * installed library meets it (run on 1 and 2 ranks):
 * - a shape whose element count overflows, or any refused registration, comes back from
 *   zc_engine_finalize on every rank naming the parameter and its shape;
 * - calls in the wrong state return ZC_ESTATE, ids that do not exist ZC_EINVAL or NULL, each
 *   naming the call and the unit, and leave the engine usable (no MPI_Abort);
 * - a failed zc_engine_create / zc_ckpt_reader_open leaves *out NULL;
 * - zc_ckpt_save refuses config/client texts that are not one JSON object before writing;
 * - (2 ranks) a configuration or model that differs between ranks is named: the key and both
 *   values, the unit and parameter with both sizes — and every rank fails alike;
 * - the memory ledger (zeroc/mem.h) given a NULL ledger or a category out of range does
 *   nothing, or returns NULL / 0, instead of aborting;
 * - zc_engine_param_init_as: a tensor registered as two parameters (tiles) starts from the values
 *   of the whole, bit for bit, and a call out of range is refused at finalize; so does a tensor
 *   registered as tiles of its columns (zc_engine_param_init_as_cols);
 * - bf16 gradients the model writes in 16 bits (zc_engine_grad16): at stages 2–3 at every
 *   micro-batch, into 2 bytes per element of the unit (a 1-D parameter's fp32 gradient in room
 *   of its own, not a whole-unit fp32 buffer), with the weights of stage 0 bit for bit;
 * - the working buffers the engine keeps for reuse never raise the working peak above the most
 *   it had in use at once: units of two sizes gathered in turn peak at the larger one; a kept
 *   buffer serves a unit up to 1/32 smaller, charged at its own size, and leaves the ledger as
 *   it found it;
 * - zc_engine_unit_use: what a model declares reaches the estimator's input, a bad declaration
 *   is refused at finalize naming the call;
 * - the folded update (fold_update): a one-rank write of the states while an update is pending
 *   is refused naming zc_engine_finish_update, which then finishes it. */
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "zeroc/checkpoint.h"
#include "zeroc/engine.h"
#include "zeroc/mem.h"

static zc_comm *comm;
static zc_mem *mem;
static int rank, nranks;

static zc_engine *make(int stage, zc_err *err)
{
    zc_config cfg;
    zc_config_defaults(&cfg);
    cfg.stage = stage;
    cfg.comm_timeout_s = 30;
    zc_engine *e = NULL;
    CHECK(!zc_engine_create(&e, &cfg, comm, mem, err) && e, "create: %s", err->msg);
    return e;
}

/* Two units: 'u0' holds w [3, 5], 'u1' holds v [7]. */
static zc_engine *make_model(int stage, bool finalize, int *w, int *v, zc_err *err)
{
    zc_engine *e = make(stage, err);
    zc_engine_add_unit(e, "u0");
    *w = zc_engine_add_param(e, 0, "w", 2, (int64_t[]){3, 5}, (zc_init){ZC_INIT_NORMAL, 0.1f});
    zc_engine_add_unit(e, "u1");
    *v = zc_engine_add_param(e, 1, "v", 1, (int64_t[]){7}, (zc_init){ZC_INIT_NORMAL, 0.1f});
    if (finalize)
        CHECK(!zc_engine_finalize(e, err), "finalize: %s", err->msg);
    return e;
}

/* One parameter registered as given must be refused (−1), and finalize must fail on every rank
 * with `status` and a message holding each of the needles. */
static void refused_param(const char *what, int ndim, const int64_t *shape, zc_status status,
                          const char *needle1, const char *needle2)
{
    zc_err err = {0};
    zc_engine *e = make(3, &err);
    CHECK(zc_engine_add_unit(e, "u") == 0, "%s: add_unit", what);
    int id = zc_engine_add_param(e, 0, "w", ndim, shape, (zc_init){ZC_INIT_CONST, 1.0f});
    CHECK(id == -1, "%s: add_param returned %d, expected -1", what, id);
    CHECK(zc_engine_num_params(e) == 0 && zc_engine_param_info(e, 0) == NULL,
          "%s: a refused parameter was registered", what);
    zc_status st = zc_engine_finalize(e, &err);
    CHECK(st == status, "%s: finalize returned %s, expected %s (%s)", what, zc_status_name(st),
          zc_status_name(status), err.msg);
    CHECK(strstr(err.msg, needle1) && strstr(err.msg, needle2), "%s: message '%s' lacks '%s'/'%s'",
          what, err.msg, needle1, needle2);
    CHECK(zc_engine_total_padded(e) == 0, "%s: padded size of an unfinalized engine", what);
    zc_engine_destroy(e);
}

static void test_shapes_refused(void)
{
    /* 4611686018427387907 · 4 wraps to 12 in 64 bits */
    refused_param("overflow", 2, (int64_t[]){4611686018427387907LL, 4}, ZC_EINVAL,
                  "'w' of unit 'u'", "[4611686018427387907, 4]");
    refused_param("2^90", 3, (int64_t[]){1 << 30, 1 << 30, 1 << 30}, ZC_EINVAL, "more than 2^63",
                  "[1073741824, 1073741824, 1073741824]");
    refused_param("over 2^49", 2, (int64_t[]){(int64_t)1 << 25, (int64_t)1 << 25}, ZC_EINVAL,
                  "562949953421312 (2^49)", "[33554432, 33554432]");
    refused_param("negative", 2, (int64_t[]){3, -4}, ZC_EINVAL, "[3, -4]",
                  "size -4 in dimension 1");
    refused_param("zero", 1, (int64_t[]){0}, ZC_EINVAL, "[0]", "expected positive sizes");
    refused_param("shape NULL", 1, NULL, ZC_EINVAL, "'w' of unit 'u'", "shape is NULL");
    refused_param("ndim 5", 5, (int64_t[]){1, 1, 1, 1, 1}, ZC_EINVAL, "ndim 5", "1 to 4");

    /* three parameters of 2^48 elements: the unit's third goes past 2^49 */
    zc_err err = {0};
    zc_engine *e = make(0, &err);
    zc_engine_add_unit(e, "big");
    int ids[3];
    for (int k = 0; k < 3; k++)
        ids[k] = zc_engine_add_param(e, 0, k == 2 ? "third" : "p", 1, (int64_t[]){(int64_t)1 << 48},
                                     (zc_init){ZC_INIT_CONST, 0});
    CHECK(ids[0] == 0 && ids[1] == 1 && ids[2] == -1, "2^48 params: ids %d %d %d", ids[0], ids[1],
          ids[2]);
    CHECK(zc_engine_finalize(e, &err) == ZC_EINVAL && strstr(err.msg, "'third' of unit 'big'") &&
              strstr(err.msg, "the unit past"),
          "unit past 2^49: %s", err.msg);
    zc_engine_destroy(e);

    /* only rank 1 refuses: every rank's finalize fails with rank 1's reason */
    e = make(3, &err);
    zc_engine_add_unit(e, "u");
    zc_engine_add_param(e, 0, "w", 1, (int64_t[]){rank == 1 ? -1 : 4}, (zc_init){ZC_INIT_CONST, 0});
    zc_status st = zc_engine_finalize(e, &err);
    if (nranks > 1)
        CHECK(st == ZC_EINVAL && strstr(err.msg, "failed on rank 1") && strstr(err.msg, "[-1]"),
              "rank %d: one rank's refused registration: %s %s", rank, zc_status_name(st), err.msg);
    else
        CHECK(st == ZC_OK, "one rank: %s", err.msg);
    zc_engine_destroy(e);

    /* the other registrations refused */
    e = make(3, &err);
    CHECK(zc_engine_add_param(e, 0, "w", 1, (int64_t[]){4}, (zc_init){ZC_INIT_CONST, 0}) == -1,
          "a parameter before any unit");
    CHECK(zc_engine_finalize(e, &err) == ZC_ESTATE && strstr(err.msg, "no unit is registered yet"),
          "param before unit: %s", err.msg);
    zc_engine_destroy(e);
    e = make(3, &err);
    zc_engine_add_unit(e, "a");
    zc_engine_add_unit(e, "b");
    CHECK(zc_engine_add_param(e, 0, "w", 1, (int64_t[]){4}, (zc_init){ZC_INIT_CONST, 0}) == -1,
          "a parameter into an older unit");
    CHECK(zc_engine_finalize(e, &err) == ZC_EINVAL &&
              strstr(err.msg, "unit 0 is not the newest unit (unit 1 'b')"),
          "older unit: %s", err.msg);
    zc_engine_destroy(e);
    e = make(3, &err);
    CHECK(zc_engine_add_unit(e, NULL) == -1, "a unit named NULL");
    CHECK(zc_engine_finalize(e, &err) == ZC_EINVAL && strstr(err.msg, "zc_engine_add_unit"),
          "NULL name: %s", err.msg);
    zc_engine_destroy(e);
    e = make(3, &err);
    zc_engine_add_unit(e, "empty");
    CHECK(zc_engine_finalize(e, &err) == ZC_EINVAL && strstr(err.msg, "'empty' has no parameters"),
          "empty unit: %s", err.msg);
    zc_engine_destroy(e);
    e = make(3, &err);
    CHECK(zc_engine_finalize(e, &err) == ZC_EINVAL && strstr(err.msg, "no unit is registered"),
          "no unit: %s", err.msg);
    zc_engine_destroy(e);
}

/* Expects status `want` from a call and a message holding both needles. */
#define EXPECT(call, want, needle1, needle2)                                                       \
    do {                                                                                           \
        memset(&err, 0, sizeof err);                                                               \
        zc_status st_ = (call);                                                                    \
        CHECK(st_ == (want) && strstr(err.msg, needle1) && strstr(err.msg, needle2),               \
              "stage %d: %s returned %s '%s', expected %s with '%s', '%s'", stage, #call,          \
              zc_status_name(st_), err.msg, zc_status_name(want), needle1, needle2);               \
    } while (0)

static void test_wrong_state(int stage)
{
    zc_err err = {0};
    int w, v;
    zc_engine *e = make_model(stage, false, &w, &v, &err);
    char hex[65];
    EXPECT(zc_engine_acquire(e, 0, &err), ZC_ESTATE, "zc_engine_acquire(unit 0)", "not finalized");
    EXPECT(zc_engine_step(e, NULL, &err), ZC_ESTATE, "zc_engine_step", "not finalized");
    EXPECT(zc_engine_weights_sha256(e, hex, &err), ZC_ESTATE, "zc_engine_weights_sha256",
           "not finalized");
    float buf[64] = {0};
    EXPECT(zc_engine_set_param_values(e, w, 0, 1, buf, &err), ZC_ESTATE,
           "zc_engine_set_param_values", "not finalized");
    CHECK(zc_engine_grad(e, w) == NULL, "stage %d: a gradient before finalize", stage);
    CHECK(!zc_engine_finalize(e, &err), "finalize: %s", err.msg);

    EXPECT(zc_engine_finalize(e, &err), ZC_ESTATE, "zc_engine_finalize", "already finalized");
    CHECK(zc_engine_add_unit(e, "late") == -1 && zc_engine_num_units(e) == 2,
          "stage %d: a unit added after finalize", stage);
    CHECK(zc_engine_add_param(e, 1, "late", 1, (int64_t[]){2}, (zc_init){ZC_INIT_CONST, 0}) == -1 &&
              zc_engine_num_params(e) == 2,
          "stage %d: a parameter added after finalize", stage);
    CHECK(zc_engine_unit_info(e, 9) == NULL && zc_engine_unit_info(e, -1) == NULL &&
              zc_engine_param_info(e, 2) == NULL && zc_engine_unit_info(e, 1) != NULL,
          "stage %d: infos of ids that do not exist", stage);

    EXPECT(zc_engine_release(e, 1, &err), ZC_ESTATE, "zc_engine_release(unit 1 'u1')",
           "not acquired");
    EXPECT(zc_engine_acquire(e, 7, &err), ZC_EINVAL, "zc_engine_acquire(unit 7)", "units 0 to 1");
    EXPECT(zc_engine_release(e, -1, &err), ZC_EINVAL, "zc_engine_release(unit -1)", "no such unit");
    EXPECT(zc_engine_grads_ready(e, 2, &err), ZC_EINVAL, "zc_engine_grads_ready(unit 2)",
           "no such unit");
    CHECK(zc_engine_param(e, w) == NULL && zc_engine_param_stored(e, w) == NULL,
          "stage %d: the parameters of a unit not acquired", stage);
    CHECK(!zc_engine_acquire(e, 0, &err), "acquire: %s", err.msg);
    EXPECT(zc_engine_acquire(e, 0, &err), ZC_ESTATE, "zc_engine_acquire(unit 0 'u0'), step 1",
           "already acquired");
    EXPECT(zc_engine_end_pass(e, &err), ZC_ESTATE, "zc_engine_end_pass(unit 0 'u0')",
           "still acquired");
    CHECK(zc_engine_param(e, w) != NULL && zc_engine_param(e, 99) == NULL &&
              zc_engine_param(e, -1) == NULL && zc_engine_param(e, v) == NULL,
          "stage %d: zc_engine_param of ids that do not exist / not acquired", stage);
    CHECK(zc_engine_param(e, w)[0] == zc_engine_param(e, w)[0], "the acquired values");
    CHECK(zc_engine_release(e, 0, &err) == ZC_OK, "release: %s", err.msg);

    /* a training micro-batch around the refused calls: the refusals changed nothing */
    for (int u = 0; u < 2; u++) {
        CHECK(!zc_engine_acquire(e, u, &err), "forward acquire %d: %s", u, err.msg);
        CHECK(!zc_engine_release(e, u, &err), "forward release %d: %s", u, err.msg);
    }
    for (int u = 1; u >= 0; u--) {
        CHECK(!zc_engine_acquire(e, u, &err), "backward acquire %d: %s", u, err.msg);
        float *g = zc_engine_grad(e, u == 0 ? w : v);
        CHECK(g != NULL, "stage %d: grad of unit %d", stage, u);
        if (g)
            g[0] += 1.0f;
        CHECK(!zc_engine_grads_ready(e, u, &err), "grads_ready %d: %s", u, err.msg);
        EXPECT(zc_engine_grads_ready(e, u, &err), ZC_ESTATE, "zc_engine_grads_ready(unit",
               "already handed back");
        CHECK(zc_engine_grad(e, u == 0 ? w : v) == NULL,
              "stage %d: a gradient after grads_ready in the same micro-batch", stage);
        CHECK(!zc_engine_release(e, u, &err), "backward release %d: %s", u, err.msg);
    }
    CHECK(zc_engine_step(e, NULL, &err) == ZC_OK, "stage %d: step with info NULL: %s", stage,
          err.msg);
    CHECK(zc_engine_steps_done(e) == 1, "stage %d: the step was not taken", stage);

    /* loading values and gathering, out of range */
    size_t first, n;
    zc_engine_param_owned(e, w, &first, &n);
    CHECK(n > 0 || stage == 3, "owned range of w");
    EXPECT(zc_engine_set_param_values(e, w, first, n + 5, buf, &err), ZC_EINVAL,
           "zc_engine_set_param_values(parameter 0 'w'", "outside what this rank stores");
    EXPECT(zc_engine_set_param_values(e, 5, 0, 1, buf, &err), ZC_EINVAL,
           "zc_engine_set_param_values(parameter 5)", "no such parameter");
    zc_engine_param_owned(e, 5, &first, &n);
    CHECK(first == 0 && n == 0, "owned range of a parameter that does not exist");
    EXPECT(zc_engine_gather_unit(e, 5, buf, &err), ZC_EINVAL, "zc_engine_gather_unit(unit 5)",
           "no such unit");
    EXPECT(zc_engine_gather_unit(e, 0, NULL, &err), ZC_EINVAL, "zc_engine_gather_unit(unit 0",
           "dst is NULL");
    CHECK(!zc_engine_gather_unit(e, 0, buf, &err), "gather after the refusals: %s", err.msg);
    CHECK(!zc_engine_weights_sha256(e, hex, &err), "digest: %s", err.msg);
    zc_engine_destroy(e);
    zc_engine_destroy(NULL);
}

static void test_create_failure_leaves_null(void)
{
    zc_err err = {0};
    zc_config cfg;
    zc_config_defaults(&cfg);
    cfg.lr = -0.5;                    /* refused by zc_config_validate */
    zc_engine *e = (zc_engine *)&cfg; /* anything but NULL */
    CHECK(zc_engine_create(&e, &cfg, comm, mem, &err) == ZC_EINVAL && e == NULL,
          "a refused create left *out %p (%s)", (void *)e, err.msg);
    e = (zc_engine *)&cfg;
    CHECK(zc_engine_create(&e, NULL, comm, mem, &err) == ZC_EINVAL && e == NULL &&
              strstr(err.msg, "cfg is NULL"),
          "create with cfg NULL: %s", err.msg);
    zc_engine_destroy(e); /* what the example does on that path */
    zc_ckpt_reader *r = (zc_ckpt_reader *)&cfg;
    CHECK(zc_ckpt_reader_open("/nonexistent/zeroc-ck", &r, &err) != ZC_OK && r == NULL,
          "a failed zc_ckpt_reader_open left *out %p", (void *)r);
    zc_ckpt_reader_close(r);
}

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(p);
}

/* A directory every rank names alike: rank 0's mkdtemp of tmpl (…XXXXXX), gathered. */
static void shared_tmpdir(const char *tmpl, char out[64])
{
    char mine[64], all[64 * 16];
    snprintf(mine, sizeof mine, "%s", tmpl);
    zc_err err = {0};
    if (rank == 0 && !mkdtemp(mine))
        mine[0] = '\0';
    CHECK(nranks <= 16 && !zc_comm_control_gather(comm, mine, all, 64, "tmpdir", &err),
          "sharing the directory: %s", err.msg);
    memcpy(out, all, 64);
}

static void test_ckpt_json_refused(void)
{
    zc_err err = {0};
    int w, v;
    char base[64], dir[128];
    shared_tmpdir("/tmp/zeroc-api-XXXXXX", base);
    snprintf(dir, sizeof dir, "%s/ck", base);
    zc_engine *e = make_model(2, true, &w, &v, &err);
    const struct {
        const char *config, *client, *arg, *why;
    } bad[] = {
        {"not json", "{}", "config_json", "not valid JSON"},
        {"{\"a\": 1} trailing", "{}", "config_json", "not valid JSON (at byte 9"},
        {"[1, 2]", "{}", "config_json", "is an array"},
        {NULL, "{}", "config_json", "is NULL"},
        {"{}", "[not json", "client_json", "not valid JSON"},
        {"{}", "[1,2,3]", "client_json", "is an array"},
        {"{}", "\"a string\"", "client_json", "is a string"},
        {"{}", "{\"epoch\": 3} trailing", "client_json", "at byte 13: 'trailing'"},
        {"{}", "7", "client_json", "is a number"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        memset(&err, 0, sizeof err);
        zc_status st = zc_ckpt_save(e, comm, dir, 1, bad[k].config, bad[k].client, 0, &err);
        CHECK(st == ZC_EINVAL && strstr(err.msg, bad[k].arg) && strstr(err.msg, bad[k].why),
              "save config=%s client=%s: %s '%s', expected ZC_EINVAL naming %s (%s)",
              bad[k].config ? bad[k].config : "NULL", bad[k].client, zc_status_name(st), err.msg,
              bad[k].arg, bad[k].why);
        CHECK(access(dir, F_OK) != 0, "save config=%s client=%s: '%s' was written",
              bad[k].config ? bad[k].config : "NULL", bad[k].client, dir);
    }
    zc_status st = zc_ckpt_save(e, comm, dir, -5, "{}", NULL, 0, &err);
    CHECK(st == ZC_EINVAL && strstr(err.msg, "step -5") && access(dir, F_OK) != 0,
          "save at step -5: %s", err.msg);

    /* the texts allowed: one object each, whitespace around it */
    st = zc_ckpt_save(e, comm, dir, 1, " {\"k\": 1}\n", "{\"epoch\": 3}  ", 0, &err);
    CHECK(st == ZC_OK, "a valid save: %s", err.msg);
    char ck[256];
    int64_t step = -1;
    char *client = NULL;
    CHECK(!zc_ckpt_resolve(dir, ck, sizeof ck, &err), "resolve: %s", err.msg);

    /* into an engine not finalized: refused on every rank, not an abort */
    zc_engine *raw = make_model(2, false, &w, &v, &err);
    st = zc_ckpt_load(raw, comm, ck, &step, &client, &err);
    CHECK(st == ZC_ESTATE && strstr(err.msg, "zc_ckpt_load") && strstr(err.msg, "not finalized") &&
              client == NULL,
          "load into an unfinalized engine: %s %s", zc_status_name(st), err.msg);
    zc_engine_destroy(raw);
    st = zc_ckpt_load(e, comm, ck, &step, &client, &err);
    CHECK(st == ZC_OK && step == 1 && client && !strcmp(client, "{\"epoch\":3}"),
          "load: %s, step %lld, client %s", err.msg, (long long)step, client ? client : "NULL");
    free(client);
    zc_engine_destroy(e);
    zc_err scratch;
    zc_comm_agree(comm, ZC_OK, "test barrier", &scratch); /* every rank is done with it */
    if (rank == 0)
        nftw(base, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* (2 ranks and more) finalize on every rank must fail with a message holding both needles; then
 * the ranks are still in step: a matching engine finalizes. */
static void mismatch(const char *what, zc_engine *e, const char *needle1, const char *needle2)
{
    zc_err err = {0};
    zc_status st = zc_engine_finalize(e, &err);
    CHECK(st == ZC_EINVAL && strstr(err.msg, needle1) && strstr(err.msg, needle2),
          "rank %d, %s: finalize returned %s '%s', expected '%s' and '%s'", rank, what,
          zc_status_name(st), err.msg, needle1, needle2);
    if (rank == 0)
        printf("%s: %s\n", what, err.msg);
    CHECK(zc_engine_acquire(e, 0, &err) == ZC_ESTATE && strstr(err.msg, "finalize failed"),
          "rank %d, %s: an engine whose ranks disagree still runs: %s", rank, what, err.msg);
    zc_engine_destroy(e);
    int w, v;
    e = make_model(3, true, &w, &v, &err); /* checks finalize succeeds */
    zc_engine_destroy(e);
}

static void test_ranks_disagree(void)
{
    if (nranks < 2)
        return;
    zc_err err = {0};
    zc_config cfg;
    zc_config_defaults(&cfg);
    cfg.comm_timeout_s = 30;
    cfg.lr = rank == 1 ? 1e-3 : 2e-3;
    zc_engine *e = NULL;
    CHECK(!zc_engine_create(&e, &cfg, comm, mem, &err), "create: %s", err.msg);
    zc_engine_add_unit(e, "u");
    zc_engine_add_param(e, 0, "w", 1, (int64_t[]){5}, (zc_init){ZC_INIT_CONST, 0});
    mismatch("lr", e, "rank 1 runs a different configuration than rank 0",
             "optimizer.params.lr is 0.001 on rank 1, 0.002 on rank 0");

    zc_config_defaults(&cfg);
    cfg.comm_timeout_s = 30;
    cfg.stage = 3;
    cfg.seed = rank == 1 ? 7 : 1234;
    cfg.param_persistence_threshold = rank == 1 ? 100 : ZC_AUTO;
    CHECK(!zc_engine_create(&e, &cfg, comm, mem, &err), "create: %s", err.msg);
    zc_engine_add_unit(e, "u");
    zc_engine_add_param(e, 0, "w", 1, (int64_t[]){5}, (zc_init){ZC_INIT_CONST, 0});
    mismatch("seed", e, "seed is 7 on rank 1, 1234 on rank 0", "(was the same config file");

    e = make(3, &err); /* rank 1's w is [3, 6] */
    zc_engine_add_unit(e, "u0");
    zc_engine_add_param(e, 0, "b", 1, (int64_t[]){4}, (zc_init){ZC_INIT_CONST, 0});
    zc_engine_add_param(e, 0, "w", 2, (int64_t[]){3, rank == 1 ? 6 : 5},
                        (zc_init){ZC_INIT_CONST, 0});
    mismatch("shape", e, "rank 1 registered a different model than rank 0",
             "unit 0 'u0' has 22 elements on rank 1, 19 on rank 0 (its parameter 1 is 'w' [3, 6] "
             "on rank 1, 'w' [3, 5] on rank 0)");

    e = make(3, &err); /* rank 1 has a third unit */
    zc_engine_add_unit(e, "u0");
    zc_engine_add_param(e, 0, "w", 1, (int64_t[]){4}, (zc_init){ZC_INIT_CONST, 0});
    zc_engine_add_unit(e, "u1");
    zc_engine_add_param(e, 1, "v", 1, (int64_t[]){4}, (zc_init){ZC_INIT_CONST, 0});
    if (rank == 1) {
        zc_engine_add_unit(e, "extra");
        zc_engine_add_param(e, 2, "x", 1, (int64_t[]){9}, (zc_init){ZC_INIT_CONST, 0});
    }
    mismatch("units", e, "rank 1 registered 3 units, rank 0 2", "unit 2 'extra' of 9 elements");
}

/* The memory ledger's calls without a status do nothing (or give NULL / 0) for a NULL ledger or
 * a category out of range — they aborted — and leave the ledger's counts as they were. */
static void test_mem_arguments(void)
{
    zc_mem *m = zc_mem_create();
    CHECK(m != NULL, "zc_mem_create");
    const zc_mem_category bad[] = {(zc_mem_category)-1, ZC_MEM_NCATEGORIES, (zc_mem_category)99};
    CHECK(zc_mem_alloc(NULL, ZC_MEM_PARAMS, 64) == NULL, "alloc with a NULL ledger");
    CHECK(zc_mem_alloc(m, ZC_MEM_NVME, 64) == NULL, "alloc in ZC_MEM_NVME (not RAM)");
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        CHECK(zc_mem_alloc(m, bad[i], 64) == NULL, "alloc in category %d", (int)bad[i]);
        zc_mem_stats s = zc_mem_get(m, bad[i]);
        CHECK(s.current == 0 && s.peak == 0, "get of category %d", (int)bad[i]);
        zc_mem_charge(m, bad[i], 10);
        zc_mem_release(m, bad[i], 10);
    }
    zc_mem_stats none = zc_mem_get(NULL, ZC_MEM_PARAMS);
    CHECK(none.current == 0 && none.peak == 0, "get with a NULL ledger");
    CHECK(zc_mem_model_states_peak(NULL) == 0, "states peak of a NULL ledger");
    zc_mem_reset_peaks(NULL);
    zc_mem_charge(NULL, ZC_MEM_NVME, 10);
    zc_mem_release(NULL, ZC_MEM_NVME, 10);
    zc_mem_charge(m, ZC_MEM_NVME, -5); /* negative bytes: nothing counted */
    CHECK(zc_mem_get(m, ZC_MEM_NVME).current == 0, "a negative charge was counted");

    float *p = zc_mem_alloc(m, ZC_MEM_PARAMS, 100 * sizeof(float));
    CHECK(p != NULL && zc_mem_get(m, ZC_MEM_PARAMS).current == 100 * sizeof(float),
          "alloc of 400 bytes");
    zc_mem_free(NULL, ZC_MEM_PARAMS, p, 100 * sizeof(float));    /* ignored */
    zc_mem_free(m, (zc_mem_category)99, p, 100 * sizeof(float)); /* ignored */
    zc_mem_free(m, ZC_MEM_NVME, p, 100 * sizeof(float));         /* not RAM: ignored */
    CHECK(zc_mem_get(m, ZC_MEM_PARAMS).current == 100 * sizeof(float),
          "an ignored free changed the ledger");
    p[99] = 1.0f; /* still the caller's */
    zc_mem_free(m, ZC_MEM_PARAMS, p, 100 * sizeof(float));
    zc_mem_stats params = zc_mem_get(m, ZC_MEM_PARAMS);
    CHECK(params.current == 0 && params.peak == 100 * sizeof(float), "after the free: %lld, %lld",
          (long long)params.current, (long long)params.peak);
    CHECK(zc_mem_model_states_peak(m) == 100 * sizeof(float), "states peak");
    zc_mem_destroy(m);
    zc_mem_destroy(NULL);
}

/* w [6, 4] registered whole (unit "w") or as two tiles of 3 rows (units "w.0", "w.1", each
 * drawing parameter 0's values from its first row's element), then v [5]: the same values,
 * in the same order, gathered unit by unit. */
static void gathered(bool tiled, float *out)
{
    zc_err err = {0};
    zc_engine *e = make(3, &err);
    const zc_init w02 = {ZC_INIT_NORMAL, 0.02f};
    if (tiled)
        for (int t = 0; t < 2; t++) {
            char name[8];
            snprintf(name, sizeof name, "w.%d", t);
            int u = zc_engine_add_unit(e, name);
            int p = zc_engine_add_param(e, u, name, 2, (int64_t[]){3, 4}, w02);
            CHECK(zc_engine_param_init_as(e, p, 0, 12 * t) == 0, "init_as tile %d", t);
        }
    else
        zc_engine_add_param(e, zc_engine_add_unit(e, "w"), "w", 2, (int64_t[]){6, 4}, w02);
    int u = zc_engine_add_unit(e, "v");
    int p = zc_engine_add_param(e, u, "v", 1, (int64_t[]){5}, w02);
    if (tiled) /* v is parameter 1 untiled */
        CHECK(zc_engine_param_init_as(e, p, 1, 0) == 0, "init_as v");
    CHECK(!zc_engine_finalize(e, &err), "finalize: %s", err.msg);
    float buf[64];
    size_t at = 0;
    for (int k = 0; k < zc_engine_num_units(e); k++) {
        CHECK(!zc_engine_gather_unit(e, k, buf, &err), "gather: %s", err.msg);
        size_t n = zc_engine_unit_info(e, k)->numel;
        memcpy(out + at, buf, n * sizeof *buf);
        at += n;
    }
    zc_engine_destroy(e);
}

static void test_init_as(void)
{
    float whole[29], tiles[29];
    gathered(false, whole);
    gathered(true, tiles);
    CHECK(!memcmp(whole, tiles, sizeof whole) && whole[0] != whole[12],
          "tiles drawn as the whole: %g %g vs %g %g", (double)whole[12], (double)whole[24],
          (double)tiles[12], (double)tiles[24]);
    zc_err err = {0};
    zc_engine *e = make(3, &err);
    int u = zc_engine_add_unit(e, "u");
    int p = zc_engine_add_param(e, u, "w", 1, (int64_t[]){4}, (zc_init){ZC_INIT_NORMAL, 1.0f});
    CHECK(zc_engine_param_init_as(e, p, -1, 0) == -1, "init_as(as -1) accepted");
    zc_status st = zc_engine_finalize(e, &err);
    CHECK(st == ZC_EINVAL && strstr(err.msg, "zc_engine_param_init_as(0, as -1"),
          "init_as refused: %s %s", zc_status_name(st), err.msg);
    zc_engine_destroy(e);
}

/* w [4, 6] registered whole, or as two tiles of its columns (w.0: columns 0–3, w.1: 4–5, each
 * drawing parameter 0's values from its first column with zc_engine_param_init_as_cols): the
 * tiles hold the whole's columns bit for bit. An impossible row is refused at finalize. */
static void test_init_as_cols(void)
{
    const zc_init w02 = {ZC_INIT_NORMAL, 0.02f};
    float whole[24], tile[2][16];
    zc_err err = {0};
    zc_engine *e = make(3, &err);
    zc_engine_add_param(e, zc_engine_add_unit(e, "w"), "w", 2, (int64_t[]){4, 6}, w02);
    CHECK(!zc_engine_finalize(e, &err), "finalize: %s", err.msg);
    float buf[64];
    CHECK(!zc_engine_gather_unit(e, 0, buf, &err), "gather: %s", err.msg);
    memcpy(whole, buf, sizeof whole);
    zc_engine_destroy(e);
    e = make(3, &err);
    const int c0[2] = {0, 4}, cols[2] = {4, 2};
    for (int t = 0; t < 2; t++) {
        char name[8];
        snprintf(name, sizeof name, "w.%d", t);
        int p = zc_engine_add_param(e, zc_engine_add_unit(e, name), name, 2,
                                    (int64_t[]){4, cols[t]}, w02);
        CHECK(zc_engine_param_init_as_cols(e, p, 0, c0[t], cols[t], 6) == 0, "init_as_cols %d", t);
    }
    CHECK(!zc_engine_finalize(e, &err), "finalize: %s", err.msg);
    for (int t = 0; t < 2; t++) {
        CHECK(!zc_engine_gather_unit(e, t, buf, &err), "gather: %s", err.msg);
        memcpy(tile[t], buf, (size_t)(4 * cols[t]) * sizeof *buf);
    }
    zc_engine_destroy(e);
    int bad = 0;
    for (int t = 0; t < 2; t++)
        for (int r = 0; r < 4; r++)
            for (int c = 0; c < cols[t]; c++)
                bad += memcmp(&tile[t][r * cols[t] + c], &whole[r * 6 + c0[t] + c], 4) != 0;
    CHECK(!bad && whole[0] != whole[4], "%d elements of the column tiles differ from the whole's",
          bad);
    e = make(3, &err);
    int p = zc_engine_add_param(e, zc_engine_add_unit(e, "u"), "w", 2, (int64_t[]){2, 4}, w02);
    CHECK(zc_engine_param_init_as_cols(e, p, 0, 0, 4, 3) == -1, "stride 3 < row 4 accepted");
    zc_status st = zc_engine_finalize(e, &err);
    CHECK(st == ZC_EINVAL && strstr(err.msg, "zc_engine_param_init_as_cols(0, row 4, stride 3)"),
          "init_as_cols refused: %s %s", zc_status_name(st), err.msg);
    zc_engine_destroy(e);
}

/* Element i of the gradient a rank gives in a micro-batch (any float: the engine rounds it as
 * the model does). */
static float grad_value(size_t i, int micro)
{
    return (float)((int)(i % 7) - 3) * 0.0137f * (float)(rank + 1) + 0.001f * (float)micro;
}

/* Two steps of two micro-batches of unit "u" = w [64, 33] + b [33] in bf16 at `stage`, w's
 * gradient written in bf16 wherever the engine hands it out so (fp32_w: always in fp32), else in
 * fp32; the weights after them (w, b, and the padding zc_engine_gather_unit writes: at most 7
 * more elements on up to 8 ranks) into out. declare: the unit is declared to take its matrix
 * gradient in 16 bits (zc_engine_unit_use 0), so stages 2–3 allocate no send staging and send
 * it from where it lies — the comm ledger then holds the receive staging alone, until a fp32_w
 * run's gradient needs packing (the staging then made, and ZC_USE_GRAD32 reported). */
static void bf16_grads_run(int stage, bool declare, bool fp32_w, float *out)
{
    zc_err err = {0};
    zc_config cfg;
    zc_config_defaults(&cfg);
    cfg.stage = stage;
    cfg.comm_timeout_s = 30;
    cfg.dtype = ZC_BF16, cfg.bf16_enabled = true;
    cfg.grad_accum = 2;
    zc_engine *e = NULL;
    CHECK(!zc_engine_create(&e, &cfg, comm, mem, &err) && e, "create: %s", err.msg);
    int u = zc_engine_add_unit(e, "u");
    const zc_init w02 = {ZC_INIT_NORMAL, 0.02f};
    int w = zc_engine_add_param(e, u, "w", 2, (int64_t[]){64, 33}, w02);
    int b = zc_engine_add_param(e, u, "b", 1, (int64_t[]){33}, w02);
    if (declare)
        CHECK(zc_engine_unit_use(e, u, 0) == 0, "unit_use(u, 0) refused");
    const int64_t comm0 = zc_mem_get(mem, ZC_MEM_COMM).current;
    CHECK(!zc_engine_finalize(e, &err), "finalize: %s", err.msg);
    const size_t W = 64 * 33, padded = zc_engine_unit_info(e, u)->padded;
    const int64_t recv = (int64_t)(padded / (size_t)nranks * (size_t)(nranks - 1) * 2);
    if (declare && stage >= 2)
        CHECK(zc_mem_get(mem, ZC_MEM_COMM).current - comm0 == recv,
              "stage %d, declared 16-bit gradients: comm staging %lld bytes, want %lld (the "
              "receive side only)",
              stage, (long long)(zc_mem_get(mem, ZC_MEM_COMM).current - comm0), (long long)recv);
    for (int step = 0; step < 2; step++)
        for (int micro = 0; micro < 2; micro++) {
            CHECK(!zc_engine_acquire(e, u, &err), "acquire: %s", err.msg);
            const int64_t before = zc_mem_get(mem, ZC_MEM_WORKING).current;
            uint16_t *g16 = fp32_w ? NULL : zc_engine_grad16(e, w);
            CHECK(fp32_w || !g16 == (stage < 2 && micro > 0),
                  "stage %d micro-batch %d: zc_engine_grad16 gave %p", stage, micro, (void *)g16);
            float *gb = zc_engine_grad(e, b);
            CHECK(gb != NULL, "grad of b");
            if (stage >= 2 && step == 0 && micro == 0 && !fp32_w) {
                const int64_t took = zc_mem_get(mem, ZC_MEM_WORKING).current - before;
                CHECK(took == (int64_t)(padded * 2 + 33 * sizeof(float)),
                      "stage %d: the gradients took %lld working bytes, expected %zu (bf16 unit) + "
                      "%zu (b in fp32)",
                      stage, (long long)took, padded * 2, 33 * sizeof(float));
            }
            if (g16) {
                for (size_t i = 0; i < W; i++) {
                    float x = grad_value(i, micro);
                    zc_f32_to_bf16(&x, &g16[i], 1);
                }
            } else {
                float *g = zc_engine_grad(e, w);
                CHECK(g != NULL, "fp32 grad of w");
                for (size_t i = 0; g && i < W; i++)
                    g[i] += grad_value(i, micro);
            }
            for (size_t i = 0; gb && i < 33; i++)
                gb[i] += grad_value(W + i, micro);
            CHECK(!zc_engine_grads_ready(e, u, &err) && !zc_engine_release(e, u, &err) &&
                      !zc_engine_step(e, NULL, &err),
                  "stage %d step %d micro %d: %s", stage, step, micro, err.msg);
        }
    if (declare && stage >= 2) { /* fp32_w: packed after all, the staging made, the use widened */
        size_t numel[1], vec[1];
        uint8_t use[1];
        zc_engine_estimate_in(e, stage, numel, vec, use);
        const int64_t staged = recv + (fp32_w ? (int64_t)(padded * 2) : 0);
        CHECK(zc_mem_get(mem, ZC_MEM_COMM).current - comm0 == staged &&
                  !(use[0] & ZC_USE_GRAD32) == !fp32_w,
              "stage %d, declared 16-bit%s: comm staging %lld bytes after the steps, want %lld; "
              "use %d",
              stage, fp32_w ? ", asked in fp32" : "",
              (long long)(zc_mem_get(mem, ZC_MEM_COMM).current - comm0), (long long)staged, use[0]);
    }
    CHECK(!zc_engine_gather_unit(e, u, out, &err), "gather: %s", err.msg);
    zc_engine_destroy(e);
}

static void test_bf16_grads(void)
{
    enum { NUMEL = 64 * 33 + 33 };
    float want[NUMEL + 8], got[NUMEL + 8]; /* zc_engine_gather_unit writes the padded unit */
    bf16_grads_run(0, false, false, want);
    for (int stage = 1; stage <= 3; stage++) {
        bf16_grads_run(stage, false, false, got);
        CHECK(!memcmp(want, got, NUMEL * sizeof *want),
              "bf16 gradients: stage %d's weights differ from stage 0's", stage);
    }
    /* declared 16-bit: sent from where it lies, the same bits as packed */
    for (int stage = 2; stage <= 3; stage++) {
        bf16_grads_run(stage, true, false, got);
        CHECK(!memcmp(want, got, NUMEL * sizeof *want),
              "bf16 gradients sent in place: stage %d's weights differ from stage 0's", stage);
    }
    /* declared, then asked in fp32: packed as an undeclared unit's, the same bits */
    float fp32w[NUMEL + 8];
    bf16_grads_run(3, false, true, fp32w);
    bf16_grads_run(3, true, true, got);
    CHECK(!memcmp(fp32w, got, NUMEL * sizeof *got),
          "an fp32 gradient of a unit declared 16-bit: weights differ from the undeclared run's");
}

static void test_kept_buffers_within_live_peak(void)
{
    zc_err err = {0};
    zc_engine *e = make(3, &err);
    const zc_init w02 = {ZC_INIT_NORMAL, 0.02f};
    int a = zc_engine_add_unit(e, "a");
    zc_engine_add_param(e, a, "wa", 2, (int64_t[]){64, 64}, w02);
    int b = zc_engine_add_unit(e, "b");
    zc_engine_add_param(e, b, "wb", 2, (int64_t[]){40, 64}, w02);
    CHECK(!zc_engine_finalize(e, &err), "finalize: %s", err.msg);
    const size_t big = zc_engine_unit_info(e, a)->padded * sizeof(float);
    zc_mem_reset_peaks(mem);
    const int64_t base = zc_mem_get(mem, ZC_MEM_WORKING).current;
    for (int round = 0; round < 3; round++)
        for (int u = 0; u < 2; u++)
            CHECK(!zc_engine_acquire(e, u, &err) && zc_engine_param(e, u) &&
                      !zc_engine_release(e, u, &err),
                  "round %d unit %d: %s", round, u, err.msg);
    const int64_t peak = zc_mem_get(mem, ZC_MEM_WORKING).peak - base;
    CHECK(peak == (int64_t)big,
          "units gathered one at a time: working peak %lld bytes, expected the larger unit's %zu",
          (long long)peak, big);
    zc_engine_destroy(e);
}

/* A kept buffer lent to a nearly equal unit: charged at its mapped size while lent, freed at it
 * (the ledger ends where it began), and not lent to a unit of half its size. */
static void test_kept_buffer_lent(void)
{
    zc_err err = {0};
    const int64_t before = zc_mem_get(mem, ZC_MEM_WORKING).current;
    zc_engine *e = make(3, &err);
    const zc_init w02 = {ZC_INIT_NORMAL, 0.02f};
    int a = zc_engine_add_unit(e, "a");
    zc_engine_add_param(e, a, "wa", 2, (int64_t[]){64, 64}, w02);
    int b = zc_engine_add_unit(e, "b");
    zc_engine_add_param(e, b, "wb", 2, (int64_t[]){63, 64}, w02);
    int c = zc_engine_add_unit(e, "c");
    zc_engine_add_param(e, c, "wc", 2, (int64_t[]){32, 64}, w02);
    CHECK(!zc_engine_finalize(e, &err), "finalize: %s", err.msg);
    const int64_t na = (int64_t)(zc_engine_unit_info(e, a)->padded * sizeof(float)),
                  nc = (int64_t)(zc_engine_unit_info(e, c)->padded * sizeof(float));
    const int64_t base = zc_mem_get(mem, ZC_MEM_WORKING).current;
    CHECK(!zc_engine_acquire(e, a, &err) && zc_engine_param(e, a) && !zc_engine_release(e, a, &err),
          "unit a: %s", err.msg);
    CHECK(!zc_engine_acquire(e, b, &err) && zc_engine_param(e, b), "unit b: %s", err.msg);
    const int64_t lent = zc_mem_get(mem, ZC_MEM_WORKING).current - base;
    CHECK(lent == na, "unit b gathered: working %lld bytes, expected a's kept buffer's %lld",
          (long long)lent, (long long)na);
    CHECK(!zc_engine_release(e, b, &err) && !zc_engine_acquire(e, c, &err) && zc_engine_param(e, c),
          "unit c: %s", err.msg);
    const int64_t own = zc_mem_get(mem, ZC_MEM_WORKING).current - base;
    CHECK(own == nc, "unit c gathered: working %lld bytes, expected its own %lld", (long long)own,
          (long long)nc);
    CHECK(!zc_engine_release(e, c, &err), "release c: %s", err.msg);
    zc_engine_destroy(e);
    const int64_t after = zc_mem_get(mem, ZC_MEM_WORKING).current;
    CHECK(after == before, "working bytes %lld after the engine, %lld before", (long long)after,
          (long long)before);
}

/* zc_engine_unit_use: a declaration reaches the estimator's input (with the 1-D elements), a
 * bad one is refused at finalize naming the call, and what the model does beyond it widens it. */
static void test_unit_use(void)
{
    zc_err err = {0};
    zc_engine *e = make(3, &err);
    int u = zc_engine_add_unit(e, "u");
    CHECK(zc_engine_unit_use(e, u + 1, 0) == -1, "unit_use(no such unit) accepted");
    zc_engine_destroy(e);
    e = make(3, &err);
    u = zc_engine_add_unit(e, "u");
    zc_engine_add_param(e, u, "w", 2, (int64_t[]){8, 4}, (zc_init){ZC_INIT_NORMAL, 1.0f});
    CHECK(zc_engine_unit_use(e, u, 0x10) == -1, "unit_use(flags 0x10) accepted");
    zc_status st = zc_engine_finalize(e, &err);
    CHECK(st == ZC_EINVAL && strstr(err.msg, "zc_engine_unit_use(unit 0, 0x10)"),
          "unit_use refused: %s %s", zc_status_name(st), err.msg);
    zc_engine_destroy(e);

    zc_config cfg;
    zc_config_defaults(&cfg);
    cfg.stage = 3;
    cfg.comm_timeout_s = 30;
    cfg.dtype = ZC_BF16, cfg.bf16_enabled = true;
    e = NULL;
    CHECK(!zc_engine_create(&e, &cfg, comm, mem, &err) && e, "create: %s", err.msg);
    u = zc_engine_add_unit(e, "u");
    int w = zc_engine_add_param(e, u, "w", 2, (int64_t[]){8, 4}, (zc_init){ZC_INIT_NORMAL, 1.0f});
    zc_engine_add_param(e, u, "b", 1, (int64_t[]){4}, (zc_init){ZC_INIT_CONST, 0.0f});
    int v = zc_engine_add_unit(e, "v");
    zc_engine_add_param(e, v, "x", 1, (int64_t[]){3}, (zc_init){ZC_INIT_CONST, 0.0f});
    CHECK(zc_engine_unit_use(e, u, 0) == 0, "unit_use(u, 0) refused");
    CHECK(!zc_engine_finalize(e, &err), "finalize: %s", err.msg);
    CHECK(zc_engine_unit_use(e, u, 0) == -1, "unit_use after finalize accepted");
    size_t numel[2], vec[2];
    uint8_t use[2];
    zc_estimate_in in = zc_engine_estimate_in(e, 3, numel, vec, use);
    CHECK(in.unit_vec_numel == vec && in.unit_use == use && vec[0] == 4 && vec[1] == 3 &&
              use[0] == 0 && use[1] == ZC_USE_ANY,
          "estimate_in: vec %zu %zu, use %d %d", vec[0], vec[1], use[0], use[1]);
    CHECK(in.grads_bf16, "bf16 engine: grads_bf16 false");
    /* the matrix read in fp32 after all: the engine serves it and the use says so */
    CHECK(!zc_engine_acquire(e, u, &err) && zc_engine_param(e, w) && !zc_engine_release(e, u, &err),
          "acquire: %s", err.msg);
    zc_engine_estimate_in(e, 3, numel, vec, use);
    CHECK(use[0] == ZC_USE_VIEW32, "an fp32 matrix read: use %d, want ZC_USE_VIEW32", use[0]);
    zc_engine_destroy(e);
}

/* The update folded into the next forward (stage 3, both states on disk, gradient clipping on):
 * after a step that left it pending, a call that writes one rank's states alone is refused
 * naming zc_engine_finish_update; finishing it (collective) lets the call through, and
 * finishing again does nothing. Without clipping the update folds into the backward instead: the
 * unit is updated as its gradients land — until the step it cannot be acquired again, nor the
 * update finished — and nothing is pending after the step. Either way the
 * value set is the one the next acquire sees (not a shard read ahead before it was written). A
 * directory on the build's disk: O_DIRECT swap files refuse tmpfs. */
static void test_fold_update_contract(void)
{
    for (int clip = 1; clip >= 0; clip--) {
        zc_err err = {0};
        char dir[64];
        shared_tmpdir("zeroc-api-fold-XXXXXX", dir);
        zc_config cfg;
        zc_config_defaults(&cfg);
        cfg.stage = 3;
        cfg.comm_timeout_s = 30;
        cfg.grad_clip = clip ? 1.0 : 0.0;
        cfg.offload_optimizer = cfg.offload_param = ZC_OFFLOAD_NVME;
        snprintf(cfg.optimizer_nvme_path, sizeof cfg.optimizer_nvme_path, "%s", dir);
        snprintf(cfg.param_nvme_path, sizeof cfg.param_nvme_path, "%s", dir);
        cfg.max_in_cpu = 0;
        cfg.param_persistence_threshold = 0; /* the unit is gathered, its shard read from disk */
        cfg.sub_group_size = 2048;
        CHECK(cfg.fold_update, "fold_update is not on by default");
        zc_engine *e = NULL;
        CHECK(!zc_engine_create(&e, &cfg, comm, mem, &err) && e, "create: %s", err.msg);
        int u = zc_engine_add_unit(e, "u");
        int w =
            zc_engine_add_param(e, u, "w", 2, (int64_t[]){64, 64}, (zc_init){ZC_INIT_NORMAL, 1.0f});
        CHECK(!zc_engine_finalize(e, &err), "finalize: %s", err.msg);
        CHECK(!zc_engine_acquire(e, u, &err) && !zc_engine_release(e, u, &err), "forward: %s",
              err.msg);
        CHECK(!zc_engine_acquire(e, u, &err), "backward: %s", err.msg);
        float *g = zc_engine_grad(e, w);
        CHECK(g != NULL, "no gradient buffer");
        for (int i = 0; g && i < 64 * 64; i++)
            g[i] = 0.001f * (float)(i % 7);
        CHECK(!zc_engine_grads_ready(e, u, &err) && !zc_engine_release(e, u, &err), "backward: %s",
              err.msg);
        if (!clip) { /* the update runs in the backward: until the step, nothing touches it */
            zc_status a = zc_engine_acquire(e, u, &err);
            CHECK(a == ZC_ESTATE && strstr(err.msg, "zc_engine_step"),
                  "acquire after grads_ready, update in the backward: %s %s", zc_status_name(a),
                  err.msg);
            a = zc_engine_finish_update(e, &err);
            CHECK(a == ZC_ESTATE && strstr(err.msg, "running in the backward"),
                  "finish_update with the update in the backward: %s %s", zc_status_name(a),
                  err.msg);
        }
        CHECK(!zc_engine_step(e, NULL, &err), "step: %s", err.msg);
        zc_offload_stats os;
        zc_engine_offload_stats(e, &os);
        CHECK(os.updates_in_backward == (clip ? 0 : 1),
              "clip %d: %lld units updated in the backward", clip,
              (long long)os.updates_in_backward);
        size_t first, n;
        zc_engine_param_owned(e, w, &first, &n);
        float one = 1.0f;
        err.msg[0] = 0;
        zc_status st = zc_engine_set_param_values(e, w, first, 1, &one, &err);
        if (clip)
            CHECK(st == ZC_ESTATE && strstr(err.msg, "zc_engine_set_param_values") &&
                      strstr(err.msg, "zc_engine_finish_update") && strstr(err.msg, "step 1"),
                  "set_param_values with an update pending: %s %s", zc_status_name(st), err.msg);
        else
            CHECK(st == ZC_OK, "no clipping, nothing pending: set_param_values %s %s",
                  zc_status_name(st), err.msg);
        CHECK(!zc_engine_finish_update(e, &err) && !zc_engine_finish_update(e, &err),
              "finish_update: %s", err.msg);
        CHECK(!zc_engine_set_param_values(e, w, first, 1, &one, &err), "set_param_values: %s",
              err.msg);
        CHECK(!zc_engine_acquire(e, u, &err), "acquire after set_param_values: %s", err.msg);
        const float *pw = zc_engine_param(e, w);
        CHECK(pw && pw[first] == 1.0f, "clip %d: element %zu acquired as %g after setting it to 1",
              clip, first, pw ? (double)pw[first] : -1.0);
        CHECK(!zc_engine_release(e, u, &err), "release: %s", err.msg);
        zc_engine_destroy(e);
        zc_comm_agree(comm, ZC_OK, "test barrier", &err);
        if (rank == 0)
            nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    }
}

int main(int argc, char **argv)
{
    zc_err err = {0};
    if (zc_comm_init(&comm, &argc, &argv, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    rank = zc_comm_rank(comm);
    nranks = zc_comm_size(comm);
    mem = zc_mem_create();
    test_mem_arguments();
    test_shapes_refused();
    for (int stage = 0; stage <= 3; stage++)
        test_wrong_state(stage);
    test_create_failure_leaves_null();
    test_ckpt_json_refused();
    test_ranks_disagree();
    test_init_as();
    test_init_as_cols();
    test_bf16_grads();
    test_kept_buffers_within_live_peak();
    test_kept_buffer_lent();
    test_unit_use();
    test_fold_update_contract();
    int rc = check_summary();
    zc_mem_destroy(mem);
    zc_comm_finalize(comm);
    return rc;
}
