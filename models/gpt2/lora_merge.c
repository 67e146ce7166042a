/* lora_merge.c — the merged model of a LoRA checkpoint, read a range at a time (contract in
 * lora_merge.h). The delta is computed in double from the stored fp32 A and B and added once to
 * the fp32 weight, so the merged weight is W + (alpha/r)·B·A within one rounding. */
#include "models/gpt2/lora_merge.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The product a block parameter's name is the weight of ("h.<l>.qkvw" …), and its block. */
static bool block_product(const char *name, int *l, lora_product *p)
{
    static const struct {
        const char *suffix;
        lora_product p;
    } w[] = {
        {"qkvw", LORA_QKV}, {"attprojw", LORA_ATTPROJ}, {"fcw", LORA_FC}, {"fcprojw", LORA_FCPROJ}};
    int n = 0;
    if (sscanf(name, "h.%d.%n", l, &n) != 1 || n == 0)
        return false;
    for (size_t i = 0; i < sizeof w / sizeof *w; i++)
        if (!strcmp(name + n, w[i].suffix)) {
            *p = w[i].p;
            return true;
        }
    return false;
}

static int param_named(zc_ckpt_reader *r, const char *name)
{
    for (int q = 0; q < zc_ckpt_reader_num_params(r); q++)
        if (!strcmp(zc_ckpt_reader_param(r, q)->name, name))
            return q;
    return -1;
}

/* Reads adapter k's A or B of block l whole into a fresh buffer (*out), checking its shape. */
static zc_status read_adapter(zc_ckpt_reader *r, int l, const lora_slot *s, int rank, bool a,
                              float **out, zc_err *err)
{
    char name[ZC_MAX_NAME];
    snprintf(name, sizeof name, "h.%d.lora.%s.%s", l, lora_target_name(s->target), a ? "A" : "B");
    const int q = param_named(r, name);
    const zc_param_info *pi = q < 0 ? NULL : zc_ckpt_reader_param(r, q);
    const int64_t rows = a ? rank : s->out_n, cols = a ? s->in : rank;
    if (!pi || pi->ndim != 2 || pi->shape[0] != rows || pi->shape[1] != cols)
        return zc_err_set(err, ZC_EINVAL,
                          "the checkpoint has no parameter %s [%lld, %lld] (its manifest's client "
                          "record names these adapters)",
                          name, (long long)rows, (long long)cols);
    if (!(*out = malloc(pi->numel * sizeof(float))))
        return zc_err_set(err, ZC_ENOMEM, "out of memory merging %s", name);
    return zc_ckpt_reader_read(r, q, 0, pi->numel, *out, err);
}

zc_status lora_merged_read(zc_ckpt_reader *r, const gpt2_config *gc, int p, size_t first, size_t n,
                           float *dst, zc_err *err)
{
    zc_status st = zc_ckpt_reader_read(r, p, first, n, dst, err);
    const zc_param_info *pi = zc_ckpt_reader_param(r, p);
    int l;
    lora_product prod;
    if (st || gc->lora.r < 1 || !n || pi->ndim != 2 || !block_product(pi->name, &l, &prod))
        return st;
    lora_slot s[LORA_NTARGETS];
    const int ns = gpt2_lora_slots(gc, s), rank = gc->lora.r;
    const size_t cols = (size_t)pi->shape[1];
    const double scale = gc->lora.alpha / gc->lora.r;
    for (int k = 0; !st && k < ns; k++) {
        if (s[k].product != prod || (size_t)s[k].in != cols)
            continue;
        const size_t lo = (size_t)s[k].out_off * cols, hi = lo + (size_t)s[k].out_n * cols;
        const size_t a0 = first > lo ? first : lo, a1 = first + n < hi ? first + n : hi;
        if (a0 >= a1) /* the range holds none of this adapter's rows */
            continue;
        float *A = NULL, *B = NULL;
        st = read_adapter(r, l, &s[k], rank, true, &A, err);
        if (!st)
            st = read_adapter(r, l, &s[k], rank, false, &B, err);
        for (size_t e = a0; !st && e < a1; e++) { /* element (row i of the slot, column j) */
            const size_t i = e / cols - (size_t)s[k].out_off, j = e % cols;
            double acc = 0.0;
            for (int c = 0; c < rank; c++)
                acc += (double)B[i * (size_t)rank + (size_t)c] * A[(size_t)c * cols + j];
            dst[e - first] = (float)((double)dst[e - first] + scale * acc);
        }
        free(A);
        free(B);
    }
    return st;
}
