/* bpe_vocab.h — a GPT-2 byte-level BPE vocabulary: each token's bytes, the merge ranks, the
 * <|endoftext|> id. Loads the files GPT-2 was released with, or their copies, and validates them
 * (every problem a message naming the file and the line, token or value):
 *
 *   encoder.json + vocab.bpe   OpenAI's release; Hugging Face ships the same content as
 *                              vocab.json + merges.txt (either pair is accepted)
 *   gpt2_tokenizer.bin         llm.c's decode-only file: no merges, so it decodes but cannot
 *                              encode. Little-endian: 256 int32 header (magic 20240328, version
 *                              1 or 2, vocabulary size, and for version 2 the <|endoftext|> id;
 *                              version 1 means 50256), then per token a uint8 length (≥ 1) and
 *                              that many bytes.
 *
 * encoder.json maps each token, written through GPT-2's byte-to-unicode map (every byte becomes
 * one printable code point: '!'..'~', '¡'..'¬' and '®'..'ÿ' stand for themselves, the other 68
 * bytes become U+0100.. in byte order, so a space is 'Ġ'), to its id; the ids must be 0..n-1,
 * each once, and every single byte must be a token. vocab.bpe holds one merge per line, "left
 * right" in the same notation, highest priority first, after an optional "#version" line; both
 * sides and their concatenation must be tokens. A merge's rank is its line order.
 *
 *     bpe_vocab v;
 *     if (bpe_vocab_load(&v, "vocab/", true, &err)) ...   // true: must be able to encode
 *     size_t len; const uint8_t *b = bpe_vocab_token(&v, id, &len);
 *     bpe_vocab_free(&v);
 */
#ifndef ZEROC_MODELS_GPT2_BPE_VOCAB_H
#define ZEROC_MODELS_GPT2_BPE_VOCAB_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zeroc/status.h"

#define BPE_LLMC_MAGIC 20240328
#define BPE_NO_MERGE UINT32_MAX

/* The pre-tokenizer a vocabulary's text is split with (bpe_pretok.h): GPT-2's pattern (GPT-2's
 * files, and a tokenizer.json with GPT-2's regex: SmolLM2), Llama 3's, or Qwen2's (Llama 3's with
 * one digit a piece instead of up to three). */
typedef enum { BPE_PRETOK_GPT2, BPE_PRETOK_LLAMA3, BPE_PRETOK_QWEN2 } bpe_pretok_kind;

/* A Hugging Face added token (tokenizer.json's added_tokens): its text is matched in the input
 * as a whole, before normalization and pre-tokenization, and stands for its id. */
typedef struct {
    uint32_t off, len; /* its text: bpe_vocab.bytes[off .. off + len), the id's own bytes */
    int id;
    bool special; /* matched only when bpe_hf.match_special is set; the others always */
} bpe_added;

/* What a tokenizer.json adds to a byte-level BPE vocabulary (hf_tokenizer.h); all zero for
 * GPT-2's files. */
typedef struct {
    bool on;               /* loaded from a tokenizer.json */
    bool nfc;              /* normalizer NFC: each run of valid text is NFC-normalized first */
    bool merges_only;      /* !model.ignore_merges: a piece that is a token still merges */
    bool match_special;    /* special added tokens in the text are those tokens (HF's encode) */
    int nadded;            /* added tokens, in tokenizer.json's order */
    bpe_added *added;      /* nadded */
    uint8_t *is_added;     /* per id: 1 for an added token's id (not a BPE token), n entries */
    int bos, eos;          /* tokenizer_config.json's bos_token / eos_token ids, -1 if none */
    bool add_bos, add_eos; /* put around each document by prepare (hf_tokenizer.h's rule) */
    char json[4200];       /* the tokenizer.json path, for messages */
} bpe_hf;

typedef struct {
    int n;         /* tokens: ids 0..n-1 */
    uint32_t *off; /* token i is bytes[off[i] .. off[i+1]) */
    uint8_t *bytes;
    int eot;           /* the id of <|endoftext|>, -1 if the vocabulary has none */
    bool can_encode;   /* merges were loaded (not from gpt2_tokenizer.bin) */
    int byte_tok[256]; /* the token of each single byte (encoding vocabularies have all 256) */
    /* token bytes → id, open addressing: slot holds id + 1, 0 = empty */
    uint32_t *tok_slot;
    size_t tok_mask;
    /* merge (left, right) → rank and result, open addressing on the key left << 32 | right */
    uint64_t *merge_key;
    uint32_t *merge_rank; /* BPE_NO_MERGE marks an empty slot */
    int32_t *merge_res;
    size_t merge_mask, nmerges;
    bpe_pretok_kind pretok;
    bpe_hf hf;
    char source[8448]; /* the file(s) loaded, for messages */
} bpe_vocab;

/* Loads GPT-2's vocabulary files from `path`: a directory holding encoder.json + vocab.bpe, or
 * vocab.json + merges.txt, or (decoding only) gpt2_tokenizer.bin; or the path of an llm.c
 * tokenizer file itself. (A Hugging Face tokenizer.json is hf_tokenizer.h's; the commands load
 * either through tokenizer_files.h.) With need_encode, a vocabulary without merges is refused.
 * ZC_EIO for a missing or unreadable file, ZC_EINVAL for malformed content, ZC_ENOMEM. On failure v
 * holds nothing. */
zc_status bpe_vocab_load(bpe_vocab *v, const char *path, bool need_encode, zc_err *err);
void bpe_vocab_free(bpe_vocab *v);

/* The bytes of token id (0 ≤ id < n) and their count. */
static inline const uint8_t *bpe_vocab_token(const bpe_vocab *v, int id, size_t *len)
{
    *len = v->off[id + 1] - v->off[id];
    return v->bytes + v->off[id];
}

/* 64-bit hash of n bytes (the lookups' and the encoder cache's). */
uint64_t bpe_hash(const uint8_t *s, size_t n);

/* The id of the token whose bytes are s[0..n), or -1. */
int bpe_vocab_find(const bpe_vocab *v, const uint8_t *s, size_t n);

/* The rank of merging tokens (left, right), with the merged token in *res; BPE_NO_MERGE if the
 * pair does not merge. */
static inline uint32_t bpe_vocab_merge(const bpe_vocab *v, uint32_t left, uint32_t right,
                                       int32_t *res)
{
    uint64_t key = (uint64_t)left << 32 | right;
    size_t i = (size_t)((key * 0x9E3779B97F4A7C15ull) >> 20) & v->merge_mask;
    for (;; i = (i + 1) & v->merge_mask) {
        if (v->merge_rank[i] == BPE_NO_MERGE)
            return BPE_NO_MERGE;
        if (v->merge_key[i] == key) {
            *res = v->merge_res[i];
            return v->merge_rank[i];
        }
    }
}

/* --- for the loaders (bpe_vocab.c, hf_tokenizer.c) --- */

/* Reads a whole regular file, NUL-terminated (*len without the NUL). */
zc_status bpe_read_file(const char *path, char **buf, size_t *len, zc_err *err);
/* The file parsed as JSON (*root, the caller's to delete); ZC_EINVAL "not valid JSON (near byte
 * N)" naming path. */
zc_status bpe_read_json(const char *path, cJSON **root, zc_err *err);
/* GPT-2's byte-to-unicode map: the code point standing for byte b, and back (-1: none). */
void bpe_byte_unicode_maps(int32_t to_cp[256], int16_t from_cp[512]);
/* Decodes a token written through the byte-to-unicode map (UTF-8 s[0..n)) into out (n bytes at
 * most); returns the byte count, or -1 if a character is not one of the map's 256. */
long bpe_unmap_token(const int16_t from_cp[512], const char *s, size_t n, uint8_t *out);
/* Up to 40 bytes of s for a message (control bytes as '?'), in buf. */
const char *bpe_shown(const char *s, size_t n, char buf[64]);
/* Builds the bytes → id table and byte_tok once off/bytes hold every token: ids with no bytes
 * and the added tokens (hf.is_added) are left out; two tokens of the same bytes are an error
 * naming `file`. Finds <|endoftext|> for eot when it is still -1. */
zc_status bpe_vocab_index(bpe_vocab *v, const char *file, zc_err *err);
/* Allocates the merge table for up to `count` merges (nmerges = 0). */
zc_status bpe_vocab_merges_init(bpe_vocab *v, size_t count, const char *file, zc_err *err);
/* Adds merge (left, right) → res with the next rank; false if the pair is already a merge (its
 * rank in *dup_rank). */
bool bpe_vocab_merge_add(bpe_vocab *v, uint32_t left, uint32_t right, int32_t res,
                         uint32_t *dup_rank);

#endif
