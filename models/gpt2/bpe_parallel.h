/* bpe_parallel.h — BPE-encodes many documents on several threads (one encoder and cache each).
 * Work is handed out in chunks: a document is one chunk, and a long one is cut into chunks of
 * about chunk_bytes at places where GPT-2's pre-tokenizer is known to start a piece whatever
 * comes before or after — a newline with a printable ASCII character on each side ("x\ny"): the
 * newline alone is a piece whether or not the text ends after it — so the tokens are the same
 * as encoding the document whole, on any number of threads. The same holds for a tokenizer.json's
 * patterns (Llama 3's, Qwen2's: the newline ends its piece there too) and its NFC normalizer
 * (which never joins across an ASCII character); a vocabulary whose matched added tokens hold a
 * newline is not cut at all.
 *
 *     bpe_doc docs[2] = {{a, na}, {b, nb}};
 *     bpe_ids ids = {0};
 *     size_t start[3];
 *     bpe_encode_docs(&vocab, docs, 2, threads, vocab.eot, 0, &ids, start, NULL, NULL, &err);
 *     // document d is ids.id[start[d] .. start[d + 1]), beginning with <|endoftext|>
 */
#ifndef ZEROC_MODELS_GPT2_BPE_PARALLEL_H
#define ZEROC_MODELS_GPT2_BPE_PARALLEL_H

#include <stddef.h>
#include <stdint.h>

#include "models/gpt2/bpe_encode.h"

typedef struct {
    const uint8_t *text;
    size_t n;
} bpe_doc;

/* Called on the calling thread about 4 times a second while the others work, and once at the
 * end: bytes encoded so far, of total. */
typedef void (*bpe_progress_fn)(size_t done, size_t total, void *arg);

/* Encodes docs[0..ndocs) with `threads` threads (≥ 1) into ids (appended); doc_start[d] is where
 * document d's tokens begin and doc_start[ndocs] the end. When before_each ≥ 0, that token is
 * put before each document (llm.c puts <|endoftext|> there). chunk_bytes 0 means 1 MiB. */
zc_status bpe_encode_docs(const bpe_vocab *v, const bpe_doc *docs, size_t ndocs, int threads,
                          int before_each, size_t chunk_bytes, bpe_ids *ids, size_t *doc_start,
                          bpe_progress_fn progress, void *arg, zc_err *err);

#endif
