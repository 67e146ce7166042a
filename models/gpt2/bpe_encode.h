/* bpe_encode.h — GPT-2 byte-level BPE encoding and decoding with a loaded vocabulary
 * (bpe_vocab.h). Text is split into pieces by the pre-tokenizer (bpe_pretok.h); within each piece
 * the adjacent pair with the lowest merge rank is merged (the leftmost on a tie) until no pair
 * merges — tiktoken's algorithm, which gives GPT-2's tokens. A piece that is itself a token is
 * that token; a byte of invalid UTF-8 is its byte token. An encoder keeps a cache of the pieces it
 * has merged (most words repeat), so use one encoder per thread; the vocabulary is shared
 * read-only.
 *
 *     bpe_encoder *e;
 *     bpe_ids ids = {0};
 *     if (bpe_encoder_create(&e, &vocab, &err) || bpe_encode(e, text, n, &ids, &err)) ...
 *     // ids.id[0 .. ids.n)
 *     bpe_ids_free(&ids);
 *     bpe_encoder_destroy(e);
 */
#ifndef ZEROC_MODELS_GPT2_BPE_ENCODE_H
#define ZEROC_MODELS_GPT2_BPE_ENCODE_H

#include <stddef.h>
#include <stdint.h>

#include "models/gpt2/bpe_vocab.h"
#include "zeroc/status.h"

typedef struct {
    uint32_t *id;
    size_t n, cap;
} bpe_ids;

/* Makes room for `more` ids after the n held. */
zc_status bpe_ids_reserve(bpe_ids *ids, size_t more, zc_err *err);
void bpe_ids_free(bpe_ids *ids);

typedef struct bpe_encoder bpe_encoder;

/* v must be able to encode (v->can_encode) and outlive the encoder. */
zc_status bpe_encoder_create(bpe_encoder **e, const bpe_vocab *v, zc_err *err);
void bpe_encoder_destroy(bpe_encoder *e);

/* Appends the tokens of text[0..n) to ids. */
zc_status bpe_encode(bpe_encoder *e, const uint8_t *text, size_t n, bpe_ids *ids, zc_err *err);

/* Appends the bytes of tokens ids[0..n) to *buf (realloc'd; *len and *cap as in a vector).
 * A token id outside [0, v->n) is an error naming its position and value. */
zc_status bpe_decode(const bpe_vocab *v, const uint32_t *ids, size_t n, uint8_t **buf, size_t *len,
                     size_t *cap, zc_err *err);

#endif
