/* gpt2_decode.h — incremental decoding of a GPT-2 on the engine with a key/value cache: the
 * logits of the next token of a growing sequence, for gpt2_sample.c's generation.
 *
 * The context is the model's: the last T tokens (T = its batch sequence length, gpt2_batch_shape)
 * at positions 0 … T−1 (nanoGPT-style cropping). While the sequence fits in T, each new token
 * runs one position through every block, attending over the keys and values kept from the
 * earlier positions (2·L·T·C values). Once it is longer than T, every token shifts the window
 * and so every position of the context: the cache cannot be reused, and each token re-runs the
 * T tokens of its context (a full forward over one row). The logits equal the ordinary forward's
 * (gpt2_forward) for that context up to summation order (products of other shapes).
 *
 *     gpt2_decoder *d;
 *     gpt2_decoder_create(&d, model, &err);          // charges the ledger's "activations"
 *     for (t = nprompt; t < total; t++) {
 *         gpt2_decoder_logits(d, seq, t, &logits, &err); // logits of seq[t] given seq[0..t)
 *         seq[t] = choose(logits);
 *     }
 *     gpt2_decoder_destroy(d);
 */
#ifndef ZEROC_MODELS_GPT2_DECODE_H
#define ZEROC_MODELS_GPT2_DECODE_H

#include <stddef.h>

#include "models/gpt2/gpt2.h"

typedef struct gpt2_decoder gpt2_decoder;

/* Bytes a decoder for context T works in (the cache, the working rows of a T-token prefill,
 * its products' workspace) for a model of this shape and products' precision; SIZE_MAX past 64
 * bits. */
size_t gpt2_decoder_bytes(const gpt2_config *c, int T, zc_gemm_type compute);
/* A decoder for the model (after zc_engine_finalize), with the model's T as context. It works in
 * the model's activation memory when that holds gpt2_decoder_bytes (without activation
 * checkpointing it does but for toy shapes), allocating nothing: while it is in use run no forward
 * or backward on the model (each overwrites the other's memory: the cache, gpt2_logits). Otherwise
 * it allocates that much, charged to the model's ledger as "activations" until
 * gpt2_decoder_destroy. */
zc_status gpt2_decoder_create(gpt2_decoder **out, gpt2_model *m, zc_err *err);
void gpt2_decoder_destroy(gpt2_decoder *d);
/* *logits (the padded vocabulary, Vp floats, the first V real; valid until the next call) of the
 * token after seq[0 .. t), t ≥ 1, from the context seq[max(0, t−T) .. t). The cache is used when
 * the previous call was for t − 1 (same seq, extended by one token) and t ≤ T; any other call
 * recomputes the context. Tokens must be in [0, V) (not checked here). Collective in stage 3:
 * every rank makes the same calls (units are acquired in the forward's order, and each call ends
 * the engine pass). */
zc_status gpt2_decoder_logits(gpt2_decoder *d, const int *seq, int t, const float **logits,
                              zc_err *err);

#endif
