/* hf_nfc.h — Unicode NFC for a tokenizer.json's NFC normalizer (Qwen2.5, Qwen3), fast on text
 * that is mostly NFC already. libutf8proc normalizes (and defines the Unicode version); this
 * module only decides which stretches of the text can change, so that the rest is copied: a
 * code point that is a starter (canonical combining class 0), that NFC leaves as it is, and
 * that is no later part of any canonical decomposition (so it composes with nothing before it)
 * is a boundary — NFC(a b) = NFC(a) NFC(b) when b begins with one (Unicode's NFC_Quick_Check
 * reasoning). Only a stretch from the boundary before a code point that is not one to the next
 * boundary goes through libutf8proc. The table of boundaries below U+20000 is built once, on
 * first use, from libutf8proc's own data; code points above count as not boundaries.
 *
 *     uint8_t *buf = NULL; size_t len = 0, cap = 0; bool same;
 *     if (hf_nfc(text, n, &buf, &len, &cap, &same, &err)) ...
 *     // same: text is NFC (buf untouched); else buf[0..len) = NFC(text)
 */
#ifndef ZEROC_MODELS_GPT2_HF_NFC_H
#define ZEROC_MODELS_GPT2_HF_NFC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zeroc/status.h"

/* p[0..m) must be valid UTF-8. Sets *same when p holds only boundaries (NFC leaves it as it
 * is, buf untouched); else writes NFC(p), which may still equal p, over *buf (realloc'd; *len
 * its length, *cap its capacity, both kept across calls). */
zc_status hf_nfc(const uint8_t *p, size_t m, uint8_t **buf, size_t *len, size_t *cap, bool *same,
                 zc_err *err);

#endif
