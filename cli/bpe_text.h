/* bpe_text.h — what the commands that use the GPT-2 tokenizer share (prepare, tokenize,
 * detokenize, sample): reading whole input files, the default thread count, and the progress
 * line shown on a terminal while a large input is encoded. */
#ifndef ZEROC_CLI_BPE_TEXT_H
#define ZEROC_CLI_BPE_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "models/gpt2/bpe_parallel.h"
#include "zeroc/status.h"

/* Inputs at least this large get a progress line when stderr is a terminal. */
#define BPE_PROGRESS_BYTES ((size_t)4 << 20)

/* Reads a whole file ("-" = standard input) into *buf (malloc'd, may be NULL when empty).
 * `what` names the flag for messages ("--text"). */
zc_status bpe_text_read(const char *what, const char *path, uint8_t **buf, size_t *len,
                        zc_err *err);

/* The number of encoding threads: `asked` if > 0, else the online processors. */
int bpe_text_threads(int asked);

/* Encodes docs like bpe_encode_docs, with the progress line on stderr when it is a terminal and
 * the input is at least BPE_PROGRESS_BYTES; *seconds is the encoding time (wall clock). */
zc_status bpe_text_encode(const bpe_vocab *v, const bpe_doc *docs, size_t ndocs, int threads,
                          int before_each, bpe_ids *ids, size_t *doc_start, double *seconds,
                          zc_err *err);

#endif
