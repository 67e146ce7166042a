/* train_model.h — how `zeroc train` drives a model: the adaptor registers the model's units on
 * the engine, then runs micro-steps on the data that (step, micro-step, rank) selects. */
#ifndef ZEROC_CLI_TRAIN_MODEL_H
#define ZEROC_CLI_TRAIN_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "zeroc/config.h"
#include "zeroc/engine.h"
#include "zeroc/mem.h"
#include "cli/train_opts.h"

typedef struct train_model train_model;
struct train_model {
    void *state;
    double tokens_per_micro_step; /* per rank; 0 for models without tokens */
    char describe[1024];          /* JSON members describing the shape, for checkpoints */
    char name[32];                /* what "model:" says: mlp, gpt2, or the decoder's family */
    /* What the model reads, for the ranks' agreement (train_model_agree_data): the training
     * and validation files' token counts and content digests, and whether the order is
     * shuffled; zeros for generated data. Contents, not paths: hosts may keep their own copies. */
    uint64_t data[5];
    /* After zc_engine_finalize: load initial weights (e.g. --init); may be NULL. */
    zc_status (*load)(train_model *m, zc_err *err);
    bool owns_init; /* load reads --init itself (its own formats); else --init is zeroc's
                     * .safetensors, which the trainer loads for any model */
    /* May be NULL (generated data): from optimizer step `step` on, read the training file in
     * order from token `tokens` (mod its length) instead of where `step` falls — a resumed run
     * whose global batch differs from the checkpoint's continues where that run stopped. */
    void (*resume_data)(train_model *m, uint64_t tokens, int64_t step);
    /* Forward + backward of micro-step k of optimizer step s on this rank; *loss = its mean. */
    zc_status (*micro_step)(train_model *m, int64_t s, int k, double *loss, zc_err *err);
    /* Collective, may be NULL: mean validation loss over all ranks after optimizer step `step`
     * (1-based; a collective's error names it). */
    zc_status (*validate)(train_model *m, int64_t step, double *loss, zc_err *err);
    /* Collective, may be NULL: generate a short sample; rank 0 prints it. */
    zc_status (*sample)(train_model *m, int64_t step, zc_err *err);
    /* Collective, may be NULL: write the final weights in the model's own format. */
    zc_status (*save_final)(train_model *m, const char *path, zc_err *err);
    void (*destroy)(train_model *m);
};

/* Registers the model named by o->model with the engine (before zc_engine_finalize). */
zc_status train_model_create(train_model *m, const train_opts *o, zc_engine *e, zc_mem *mem,
                             zc_comm *comm, const zc_config *cfg, zc_err *err);

/* Collective: every rank's m->data equals rank 0's, else an error naming the first rank that
 * reads other data (the same on every rank). */
zc_status train_model_agree_data(const train_model *m, zc_comm *comm, zc_err *err);

/* The adaptors. */
zc_status train_model_mlp(train_model *m, const train_opts *o, zc_engine *e, zc_mem *mem,
                          zc_comm *comm, const zc_config *cfg, zc_err *err);
zc_status train_model_gpt2(train_model *m, const train_opts *o, zc_engine *e, zc_mem *mem,
                           zc_comm *comm, const zc_config *cfg, zc_err *err);

#endif
