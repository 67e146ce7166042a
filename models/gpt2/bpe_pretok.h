/* bpe_pretok.h — GPT-2's pre-tokenizer: splits UTF-8 text into the pieces that BPE then merges
 * within, exactly as GPT-2's pattern (the one tiktoken calls "gpt2" / r50k_base) does:
 *
 *     's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 *
 * implemented as a scanner over code points, not a regex engine. The classes come from
 * libutf8proc's general categories: \p{L} = Lu Ll Lt Lm Lo, \p{N} = Nd Nl No, and \s is Unicode's
 * White_Space property as the Rust regex crate under tiktoken defines it (the Z* categories
 * Zs Zl Zp plus U+0009..U+000D and U+0085). The ` ?` prefix is U+0020 only; the contractions are
 * ASCII and case-sensitive, as in GPT-2.
 *
 * Invalid UTF-8: text is cut at every byte that does not begin a well-formed UTF-8 sequence
 * (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF, no truncated sequence).
 * Each such byte is a piece of its own (BPE leaves it as its byte token), and the valid text on
 * either side is split as if it ended, or began, there. So valid UTF-8 gives tiktoken's pieces,
 * and any byte string comes back unchanged from decoding its tokens.
 *
 *     size_t i = 0, end;
 *     bool invalid;
 *     while (i < n) { end = bpe_pretok_next(text, n, i, &invalid); ...; i = end; }
 */
#ifndef ZEROC_MODELS_GPT2_BPE_PRETOK_H
#define ZEROC_MODELS_GPT2_BPE_PRETOK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The class of a code point as the pattern sees it. */
typedef enum { PRETOK_LETTER, PRETOK_NUMBER, PRETOK_SPACE, PRETOK_OTHER } pretok_class;

/* Class of code point cp (0..0x10FFFF), from libutf8proc. */
pretok_class bpe_pretok_class(int32_t cp);

/* Length (1..4) of the well-formed UTF-8 sequence at s[0..n), with its code point in *cp, or 0
 * if s[0] does not begin one (n ≥ 1). */
int bpe_utf8_decode(const uint8_t *s, size_t n, int32_t *cp);

/* End (exclusive) of the piece that starts at s[i] (i < n); *invalid tells whether it is a single
 * byte of invalid UTF-8. */
size_t bpe_pretok_next(const uint8_t *s, size_t n, size_t i, bool *invalid);

/* Llama 3's pattern (Hugging Face's tokenizer.json for Llama 3.x; max_digits 3) and Qwen2's (the
 * same with one digit a piece, max_digits 1; Qwen2.5, Qwen3), in bpe_pretok_llama3.c:
 *
 *     (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|
 *     \s*[\r\n]+|\s+(?!\S)|\s+
 *
 * with the classes above (\s = White_Space, as Oniguruma under Hugging Face's Rust tokenizers
 * and its JavaScript port read it) and the contractions' case folded in ASCII only, as both do.
 * s[0..n) must be valid UTF-8 (the caller cuts out invalid bytes); returns the end (exclusive) of
 * the piece that starts at s[i] (i < n). */
size_t bpe_pretok_llama3_next(const uint8_t *s, size_t n, size_t i, int max_digits);

#endif
