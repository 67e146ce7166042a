/* fuzz_hf_encode.c — fuzz target: any bytes as text to a tokenizer.json's encoding (added-token
 * matching, the cut at invalid UTF-8, NFC, and Llama 3's and Qwen2's split patterns: the
 * scanners of bpe_pretok_llama3.c) with a small tokenizer (fuzz/vocab_hf/). The input's first
 * byte picks the pattern (bit 0: Qwen2's), whether special tokens are matched (bit 1) and NFC
 * (bit 2); the rest is the text. Without NFC the ids must decode to exactly the text; with it,
 * and a text of valid UTF-8 without added tokens (where bytes and tokens cannot regroup),
 * decoding and encoding again gives the same ids and bytes; and NFC by stretches (hf_nfc.h)
 * equals libutf8proc's NFC of the whole text (cut at U+11A7 where libutf8proc mishandles it:
 * nfc_reference). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "fuzz/fuzz.h"
#include "models/gpt2/bpe_encode.h"
#include "models/gpt2/bpe_pretok.h"
#include "models/gpt2/hf_nfc.h"
#include "models/gpt2/hf_tokenizer.h"

static bpe_vocab vocab[2]; /* special tokens as text, matched */
static bpe_encoder *encoder[2];

/* libutf8proc before JuliaStrings/utf8proc#317 (November 2025; Debian 12 ships 2.8.0) composes
 * an LV syllable with U+11A7 as if it were a trailing consonant and so deletes it: U+11A7 is
 * T_BASE, T index 0, and Unicode's Hangul composition (§3.12) takes only U+11A8..U+11C2. NFC as
 * Unicode defines it, Hugging Face's normalizer and hf_nfc (U+11A7 is a boundary) keep it. */
static bool drops_11a7;
#define U11A7 "\xe1\x86\xa7"

/* libutf8proc's NFC of text[0..n) (valid UTF-8) in *out (malloc'd), its length returned (< 0:
 * an error). Where the installed libutf8proc drops U+11A7, the text is cut at each one and the
 * pieces between normalized apart: U+11A7 is a starter that composes with nothing before or after
 * it (no canonical decomposition holds it), so NFC(a U+11A7 b) = NFC(a) U+11A7 NFC(b). */
static utf8proc_ssize_t nfc_reference(const uint8_t *text, size_t n, uint8_t **out)
{
    if (!drops_11a7)
        return utf8proc_map(text, (utf8proc_ssize_t)n, out, UTF8PROC_STABLE | UTF8PROC_COMPOSE);
    uint8_t *all = NULL;
    size_t len = 0;
    for (size_t i = 0; i < n;) {
        const uint8_t *t = memmem(text + i, n - i, U11A7, 3); /* a lead byte: a code point */
        size_t end = t ? (size_t)(t - text) : n, m = end - i;
        uint8_t *q = NULL;
        utf8proc_ssize_t r =
            m ? utf8proc_map(text + i, (utf8proc_ssize_t)m, &q, UTF8PROC_STABLE | UTF8PROC_COMPOSE)
              : 0;
        uint8_t *b = r < 0 ? NULL : realloc(all, len + (size_t)r + 3);
        if (!b) {
            free(q);
            free(all);
            return r < 0 ? r : UTF8PROC_ERROR_NOMEM;
        }
        all = b;
        if (r > 0)
            memcpy(all + len, q, (size_t)r);
        len += (size_t)r;
        free(q);
        if (t) {
            memcpy(all + len, U11A7, 3);
            len += 3;
        }
        i = t ? end + 3 : n;
    }
    *out = all;
    return (utf8proc_ssize_t)len;
}

static void finish(void)
{
    for (int k = 0; k < 2; k++) {
        bpe_encoder_destroy(encoder[k]);
        bpe_vocab_free(&vocab[k]);
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    zc_err err;
    for (int k = 0; k < 2; k++) {
        if (hf_tokenizer_load(&vocab[k], ZEROC_SOURCE_DIR "/fuzz/vocab_hf/tokenizer.json", &err))
            abort();
        vocab[k].hf.match_special = k;
        if (bpe_encoder_create(&encoder[k], &vocab[k], &err))
            abort();
    }
    atexit(finish);
    uint8_t *q = NULL; /* U+AC00 U+11A7: NFC keeps both */
    utf8proc_ssize_t r = utf8proc_map((const uint8_t *)"\xea\xb0\x80" U11A7, 6, &q,
                                      UTF8PROC_STABLE | UTF8PROC_COMPOSE);
    drops_11a7 = r == 3;
    free(q);
    return 0;
}

/* ids of text[0..n), decoded into *back (malloc'd, *len bytes); aborts on an error. */
static void round_trip(int k, const uint8_t *text, size_t n, bpe_ids *ids, uint8_t **back,
                       size_t *len)
{
    zc_err err;
    size_t cap = 0;
    *back = NULL;
    *len = 0;
    if (bpe_encode(encoder[k], text, n, ids, &err) ||
        bpe_decode(&vocab[k], ids->id, ids->n, back, len, &cap, &err))
        abort(); /* every byte string is encodable and its ids decodable */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    const int k = (data[0] >> 1) & 1;
    vocab[k].pretok = data[0] & 1 ? BPE_PRETOK_QWEN2 : BPE_PRETOK_LLAMA3;
    vocab[k].hf.nfc = (data[0] >> 2) & 1;
    const uint8_t *text = data + 1;
    const size_t n = size - 1;
    bpe_ids ids = {0}, again = {0};
    uint8_t *back, *back2;
    size_t len, len2;
    round_trip(k, text, n, &ids, &back, &len);
    if (!vocab[k].hf.nfc && (len != n || (n && memcmp(back, text, n))))
        abort();                        /* without a normalizer the bytes come back as they were */
    bool plain = !memchr(text, '<', n); /* valid UTF-8 without an added token's '<' */
    for (size_t i = 0, l = 1; plain && i < n; i += l) {
        int32_t cp;
        l = text[i] < 0x80 ? 1 : (size_t)bpe_utf8_decode(text + i, n - i, &cp);
        plain = l > 0;
    }
    if (plain && n) { /* NFC by stretches (hf_nfc.h) equals libutf8proc's on the whole text */
        uint8_t *buf = NULL, *whole = NULL;
        size_t blen = 0, bcap = 0;
        bool same;
        zc_err err;
        utf8proc_ssize_t r = nfc_reference(text, n, &whole);
        if (r < 0 || hf_nfc(text, n, &buf, &blen, &bcap, &same, &err))
            abort();
        if (same ? (size_t)r != n || memcmp(whole, text, n)
                 : (size_t)r != blen || memcmp(whole, buf, blen))
            abort();
        free(buf);
        free(whole);
    }
    if (vocab[k].hf.nfc && plain) {
        round_trip(k, back, len, &again, &back2, &len2);
        if (again.n != ids.n || (ids.n && memcmp(again.id, ids.id, ids.n * sizeof *ids.id)) ||
            len2 != len || (len && memcmp(back2, back, len)))
            abort(); /* NFC is idempotent: normalized text encodes to the same ids */
        free(back2);
    }
    free(back);
    bpe_ids_free(&ids);
    bpe_ids_free(&again);
    return 0;
}
