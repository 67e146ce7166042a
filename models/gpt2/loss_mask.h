/* loss_mask.h — the loss-mask file that sits beside an llm.c token file: which targets count in
 * the loss (instruction data from `zeroc prepare --jsonl`: only the assistant's answer tokens,
 * as Hugging Face's labels = -100 everywhere else). Why a file of its own rather than a new token
 * format: the token file stays an llm.c file every other tool reads, and a run without a mask is
 * unchanged bit for bit.
 *
 * The mask of token file X.bin is X.mask (any other name: the name with ".mask" appended).
 * Little-endian:
 *
 *   OFFSET   SIZE     DESCRIPTION
 *   0        4        magic 20261128
 *   4        4        version 1
 *   8        4        ntok: must equal the token file's token count
 *   12       1012     zero (header slots 3..255)
 *   1024     ntok     one byte per token: 1 = the token counts as a target (predicting it from
 *                     the tokens before it adds to the loss), 0 = it does not; any other byte is
 *                     refused
 *
 * Byte i belongs to token i: a training window of inputs tok[p .. p + T) and targets
 * tok[p + 1 .. p + T + 1) counts target j when mask[p + 1 + j] is 1.
 *
 * For a glob of token shards (llmc_tokens), each shard has its own mask beside it; either every
 * shard has one or none does (a mix is refused, naming the shard without one). */
#ifndef ZEROC_MODELS_GPT2_LOSS_MASK_H
#define ZEROC_MODELS_GPT2_LOSS_MASK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "models/gpt2/llmc_files.h"
#include "zeroc/status.h"

#define LOSS_MASK_MAGIC 20261128
#define LOSS_MASK_VERSION 1

/* The masks of a token stream's shards, in the same order (shard i's mask covers the stream's
 * tokens [t->shard[i].first, + ntok)). */
typedef struct {
    int nshards; /* 0: no mask (every target counts) */
    int *fd;     /* nshards */
    char **path; /* nshards, for messages */
    const llmc_tokens *tokens;
} loss_mask;

/* The mask file's name for token file `token_path` (X.bin → X.mask, else + ".mask"); false when
 * it does not fit cap. */
bool loss_mask_path(const char *token_path, char *out, size_t cap);

/* Opens the masks beside the shards of t (opened, outliving m). None there: m->nshards = 0,
 * ZC_OK. Each mask found is validated: magic, version, ntok equal to its token file's and the
 * file size 1024 + ntok; a wrong one, or a shard without one when another has one, is ZC_EINVAL
 * naming the file and what was expected. */
zc_status loss_mask_open(const llmc_tokens *t, loss_mask *m, zc_err *err);

/* Reads the mask bytes of stream tokens [first, first + n) modulo ntok, as llmc_tokens_read
 * reads the tokens; a byte other than 0 or 1 is ZC_EINVAL naming the file and the position. */
zc_status loss_mask_read(const loss_mask *m, size_t first, size_t n, uint8_t *dst, zc_err *err);

/* Closes the files; safe to call twice and on a zeroed m. */
void loss_mask_close(loss_mask *m);

/* Writes mask[0..n) (bytes 0 or 1) as the mask file at path, through a temporary file renamed
 * into place (as llmc_tokens_write). */
zc_status loss_mask_write(const char *path, const uint8_t *mask, size_t n, zc_err *err);

#endif
