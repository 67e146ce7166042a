/* bpe_pretok.c — GPT-2's pre-tokenizing pattern as a scanner over code points (bpe_pretok.h).
 * Code points below U+0800 (one- and two-byte UTF-8) are classified from a table filled once
 * from libutf8proc; the rest ask libutf8proc each time. */
#include <pthread.h>
#include <utf8proc.h>

#include "models/gpt2/bpe_pretok.h"

pretok_class bpe_pretok_class(int32_t cp)
{
    /* White_Space = the separators Z* plus these controls (Unicode's PropList.txt) */
    if ((cp >= 0x09 && cp <= 0x0D) || cp == 0x85)
        return PRETOK_SPACE;
    switch (utf8proc_category(cp)) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO: return PRETOK_LETTER;
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO: return PRETOK_NUMBER;
    case UTF8PROC_CATEGORY_ZS:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP: return PRETOK_SPACE;
    default: return PRETOK_OTHER;
    }
}

#define LOW_CP 0x800
static uint8_t low_class[LOW_CP];
static pthread_once_t low_once = PTHREAD_ONCE_INIT;

static void low_init(void)
{
    for (int32_t cp = 0; cp < LOW_CP; cp++)
        low_class[cp] = (uint8_t)bpe_pretok_class(cp);
}

int bpe_utf8_decode(const uint8_t *s, size_t n, int32_t *cp)
{
    uint8_t b = s[0];
    if (b < 0x80) {
        *cp = b;
        return 1;
    }
    int len;
    int32_t c;
    uint8_t lo = 0x80, hi = 0xBF; /* the allowed range of the second byte */
    if (b >= 0xC2 && b <= 0xDF) {
        len = 2;
        c = b & 0x1F;
    } else if (b >= 0xE0 && b <= 0xEF) {
        len = 3;
        c = b & 0x0F;
        if (b == 0xE0)
            lo = 0xA0; /* overlong below U+0800 */
        else if (b == 0xED)
            hi = 0x9F; /* surrogates U+D800..U+DFFF */
    } else if (b >= 0xF0 && b <= 0xF4) {
        len = 4;
        c = b & 0x07;
        if (b == 0xF0)
            lo = 0x90; /* overlong below U+10000 */
        else if (b == 0xF4)
            hi = 0x8F; /* above U+10FFFF */
    } else {
        return 0; /* a continuation byte, C0/C1 (overlong) or F5..FF */
    }
    if ((size_t)len > n || s[1] < lo || s[1] > hi)
        return 0;
    for (int k = 1; k < len; k++) {
        if ((s[k] & 0xC0) != 0x80)
            return 0;
        c = (c << 6) | (s[k] & 0x3F);
    }
    *cp = c;
    return len;
}

/* The code point at s[i]: its byte length and class, or 0 at the end of the text or at a byte
 * of invalid UTF-8 (both end the valid text the pattern sees). */
static inline int peek(const uint8_t *s, size_t n, size_t i, int32_t *cp, pretok_class *cls)
{
    if (i >= n)
        return 0;
    if (s[i] < 0x80) {
        *cp = s[i];
        *cls = (pretok_class)low_class[s[i]];
        return 1;
    }
    int len = bpe_utf8_decode(s + i, n - i, cp);
    if (len)
        *cls = *cp < LOW_CP ? (pretok_class)low_class[*cp] : bpe_pretok_class(*cp);
    return len;
}

size_t bpe_pretok_next(const uint8_t *s, size_t n, size_t i, bool *invalid)
{
    pthread_once(&low_once, low_init);
    int32_t c, c2;
    pretok_class k, k2, want;
    int len = peek(s, n, i, &c, &k);
    *invalid = len == 0;
    if (!len)
        return i + 1;
    /* 's|'t|'re|'ve|'m|'ll|'d */
    if (c == '\'' && i + 1 < n) {
        uint8_t a = s[i + 1];
        if (a == 's' || a == 't' || a == 'm' || a == 'd')
            return i + 2;
        if (i + 2 < n) {
            uint8_t b = s[i + 2];
            if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l'))
                return i + 3;
        }
    }
    size_t j = i;
    if (k != PRETOK_SPACE) {
        want = k; /* \p{L}+, \p{N}+ or [^\s\p{L}\p{N}]+ */
    } else if (c == ' ' && (len = peek(s, n, i + 1, &c2, &k2)) && k2 != PRETOK_SPACE) {
        want = k2; /* the same three with their optional leading space */
        j = i + 1;
    } else {
        /* a run of white space: \s+(?!\S) gives it all but its last character when a non-space
         * follows (that character then starts the next piece: " ?X" for a space, \s+ alone
         * otherwise); at the end of the text it takes the whole run */
        size_t last = i;
        while ((len = peek(s, n, j, &c2, &k2)) && k2 == PRETOK_SPACE) {
            last = j;
            j += (size_t)len;
        }
        if (!len) /* the end of the (valid) text */
            return j;
        return last > i ? last : j;
    }
    while ((len = peek(s, n, j, &c2, &k2)) && k2 == want)
        j += (size_t)len;
    return j;
}
