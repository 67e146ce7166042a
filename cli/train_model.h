/* train_model.h — how `zeroc train` drives a model: the adaptor registers the model's units on
 * the engine, then runs micro-steps on the data that (step, micro-step, rank) selects. */
#ifndef ZEROC_CLI_TRAIN_MODEL_H
#define ZEROC_CLI_TRAIN_MODEL_H

#include <stdint.h>

#include "zeroc/config.h"
#include "zeroc/engine.h"
#include "zeroc/mem.h"

typedef struct train_model train_model;
struct train_model {
    void *state;
    /* Forward + backward of micro-step k of optimizer step s on this rank; *loss = its mean. */
    zc_status (*micro_step)(train_model *m, int64_t s, int k, int rank, int nranks, int batch,
                            double *loss, zc_err *err);
    void (*destroy)(train_model *m);
};

zc_status train_model_create(train_model *m, const char *name, zc_engine *e, zc_mem *mem,
                             const zc_config *cfg, int hidden, int layers, zc_err *err);

#endif
