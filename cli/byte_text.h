/* byte_text.h — the byte-level "tokenizer" of zeroc's own data (vocabulary 256: a token is a
 * byte), and how token sequences are shown: as text when the vocabulary is byte-level, as
 * token ids otherwise (GPT-2's BPE tokenizer, for `sample --vocab`, is models/gpt2/bpe_*.h). */
#ifndef ZEROC_CLI_BYTE_TEXT_H
#define ZEROC_CLI_BYTE_TEXT_H

#include <stdio.h>

#include "zeroc/status.h"

#define BYTE_VOCAB 256

/* Writes tokens to f: bytes (control characters other than \n and \t shown as '.') when
 * vocab == 256, else space-separated ids. */
void byte_text_print(FILE *f, const int *tok, int n, int vocab);

/* Writes s into buf (cap bytes, NUL-terminated) as it may be quoted in a message: control
 * characters, DEL and backslash escaped (\n, \t, \r, \\, \xNN); cut with "..." when too long. */
void byte_text_escape(const char *s, char *buf, size_t cap);

/* Parses a prompt into tokens: its bytes when vocab == 256, else comma-separated ids < vocab.
 * *out is malloc'd. */
zc_status byte_text_parse_prompt(const char *prompt, int vocab, int **out, int *n, zc_err *err);

#endif
