/* gpt2_sample.h — text generation with a GPT-2 on the engine: temperature and top-k sampling,
 * with draws from the counter-based generator (seed, position), so every rank draws the same
 * token and a run is reproducible. The logits come from the key/value-cached decoder
 * (gpt2_decode.h). Collective in stage 3 (each token is a pass over every unit). */
#ifndef ZEROC_MODELS_GPT2_SAMPLE_H
#define ZEROC_MODELS_GPT2_SAMPLE_H

#include <stdint.h>

#include "models/gpt2/gpt2.h"

typedef struct {
    float temperature; /* > 0; 1 = the model's distribution */
    int top_k;         /* 0 = no top-k filter */
    uint64_t seed;
} gpt2_sampling;

/* The most tokens one generation makes; the prompt and what is generated are then held as ints.
 * Cost per token, GPT-2 124M in fp32 on one core (measured): ~30 ms while the sequence fits in
 * the context T (one position through every block over the cache: 28 ms at context 64, 34 ms at
 * 1024; the full forward per token this replaced took 150 ms at T = 64 and 3 s at T = 1024).
 * Past T the window slides and every token re-runs its T-token context: 1.1–1.5 s at T = 1024, so
 * a million tokens past the context would take weeks. */
enum { GPT2_MAX_GENERATE = 1 << 20 };

/* Generates `length` (at most GPT2_MAX_GENERATE) tokens after the `nprompt` prompt tokens (nprompt
 * ≥ 1) into out[0..length). The context is the last T tokens (the model's sequence length) at
 * positions 0 … T−1, as the ordinary forward over them; top-k keeps every logit ≥ the k-th
 * largest (ties included). The decoder works in the model's activation memory, or, when that
 * is too small (gpt2_decoder_bytes), in an allocation charged to the ledger's "activations"
 * for the call. */
zc_status gpt2_generate(gpt2_model *m, const int *prompt, int nprompt, int length,
                        const gpt2_sampling *s, int *out, zc_err *err);
/* The same, ending after the first `stop` token drawn (its last token; stop < 0: never, as
 * gpt2_generate): *ngen tokens into out[0..*ngen), *ngen ≤ length — a chat answer ends at its
 * end-of-turn token without a pass more. */
zc_status gpt2_generate_until(gpt2_model *m, const int *prompt, int nprompt, int length,
                              const gpt2_sampling *s, int stop, int *out, int *ngen, zc_err *err);

#endif
