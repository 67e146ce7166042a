/* gpt2_sample.h — text generation with a GPT-2 on the engine: temperature and top-k sampling,
 * with draws from the counter-based generator (seed, position), so every rank draws the same
 * token and a run is reproducible. Collective in stage 3 (each step is a forward). */
#ifndef ZEROC_MODELS_GPT2_SAMPLE_H
#define ZEROC_MODELS_GPT2_SAMPLE_H

#include <stdint.h>

#include "models/gpt2/gpt2.h"

typedef struct {
    float temperature; /* > 0; 1 = the model's distribution */
    int top_k;         /* 0 = no top-k filter */
    uint64_t seed;
} gpt2_sampling;

/* The most tokens one generation makes (each is a forward pass: a million passes of GPT-2 124M
 * take about a day on two cores); the prompt and what is generated are then held as ints. */
enum { GPT2_MAX_GENERATE = 1 << 20 };

/* Generates `length` (at most GPT2_MAX_GENERATE) tokens after the `nprompt` prompt tokens (nprompt
 * ≥ 1) into out[0..length). The context is the last T tokens (the model's sequence length). */
zc_status gpt2_generate(gpt2_model *m, const int *prompt, int nprompt, int length,
                        const gpt2_sampling *s, int *out, zc_err *err);

#endif
