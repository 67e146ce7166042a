/* train_model.c — picks the model adaptor of `zeroc train`, and the MLP's adaptor. The MLP's
 * samples of micro-step k on rank r are the global samples (k·N + r)·B … (k·N + r + 1)·B − 1 of
 * the step, so the global batch of a step does not depend on N. */
#include <stdlib.h>
#include <string.h>

#include "cli/train_model.h"
#include "models/mlp/mlp.h"

zc_status train_model_create(train_model *m, const train_opts *o, zc_engine *e, zc_mem *mem,
                             zc_comm *comm, const zc_config *cfg, zc_err *err)
{
    memset(m, 0, sizeof *m);
    if (!strcmp(o->model, "mlp"))
        return train_model_mlp(m, o, e, mem, comm, cfg, err);
    if (!strcmp(o->model, "gpt2"))
        return train_model_gpt2(m, o, e, mem, comm, cfg, err);
    return zc_err_set(err, ZC_EINVAL, "--model: unknown model '%s' (known: mlp, gpt2)", o->model);
}

zc_status train_model_agree_data(const train_model *m, zc_comm *comm, zc_err *err)
{
    enum { W = sizeof m->data / sizeof m->data[0] };
    const int n = zc_comm_size(comm);
    uint64_t *all = malloc(sizeof m->data * (size_t)n);
    if (!all)
        return zc_err_set(err, ZC_ENOMEM, "out of memory in the data check");
    zc_status st = zc_comm_control_gather(comm, m->data, all, sizeof m->data, "data check", err);
    for (int r = 1; !st && r < n; r++) {
        const uint64_t *a = all, *b = all + (size_t)r * W;
        if (a[0] != b[0] || a[1] != b[1])
            st = zc_err_set(err, ZC_EINVAL,
                            "rank %d reads other training data than rank 0 "
                            "(--data: %llu tokens, digest %016llx on rank 0; %llu tokens, digest "
                            "%016llx on rank %d): give every rank the same --data",
                            r, (unsigned long long)a[0], (unsigned long long)a[1],
                            (unsigned long long)b[0], (unsigned long long)b[1], r);
        else if (a[2] != b[2] || a[3] != b[3])
            st = zc_err_set(err, ZC_EINVAL,
                            "rank %d reads other validation data than rank 0 "
                            "(--val-data: %llu tokens, digest %016llx on rank 0; %llu tokens, "
                            "digest %016llx on rank %d): give every rank the same --val-data",
                            r, (unsigned long long)a[2], (unsigned long long)a[3],
                            (unsigned long long)b[2], (unsigned long long)b[3], r);
        else if (a[4] != b[4])
            st = zc_err_set(err, ZC_EINVAL,
                            "rank %d reads its data in another order than rank "
                            "0 (--shuffle %s on rank 0, %s on rank %d)",
                            r, a[4] ? "given" : "not given", b[4] ? "given" : "not given", r);
    }
    free(all);
    return st;
}

typedef struct {
    mlp_model *mlp;
    float *x, *y;
    uint64_t seed;
    int rank, nranks, batch;
} mlp_state;

static zc_status mlp_micro_step(train_model *m, int64_t s, int k, double *loss, zc_err *err)
{
    mlp_state *st = m->state;
    int64_t first = ((int64_t)k * st->nranks + st->rank) * st->batch;
    mlp_batch(st->mlp, st->seed, s, first, st->x, st->y);
    return mlp_forward_backward(st->mlp, st->x, st->y, loss, err);
}

static void train_mlp_destroy(train_model *m)
{
    mlp_state *st = m->state;
    if (!st)
        return;
    mlp_destroy(st->mlp);
    free(st->x);
    free(st->y);
    free(st);
    m->state = NULL;
}

zc_status train_model_mlp(train_model *m, const train_opts *o, zc_engine *e, zc_mem *mem,
                          zc_comm *comm, const zc_config *cfg, zc_err *err)
{
    /* named by flag here: the model's own check knows no flags (--layers: cli/train_args.c) */
    if (o->hidden < 1)
        return zc_err_set(err, ZC_EINVAL, "--hidden must be >= 1, got %d", o->hidden);
    mlp_state *st = calloc(1, sizeof *st);
    if (!st)
        return zc_err_set(err, ZC_ENOMEM, "out of memory");
    m->state = st;
    m->micro_step = mlp_micro_step;
    m->destroy = train_mlp_destroy;
    st->seed = cfg->seed;
    st->rank = zc_comm_rank(comm);
    st->nranks = zc_comm_size(comm);
    st->batch = cfg->micro_batch;
    mlp_config mc = {.hidden = o->hidden,
                     .layers = o->layers ? o->layers : MLP_DEFAULT_LAYERS,
                     .batch = cfg->micro_batch};
    zc_status rc = mlp_create(&st->mlp, e, mem, &mc, err);
    size_t n = (size_t)o->hidden * (size_t)cfg->micro_batch;
    if (!rc) {
        st->x = malloc(n * sizeof(float));
        st->y = malloc(n * sizeof(float));
        if (!st->x || !st->y)
            rc = zc_err_set(err, ZC_ENOMEM, "out of memory for a batch of %zu floats", n);
    }
    if (rc)
        train_mlp_destroy(m);
    return rc;
}
