/* bpe_pretok_llama3.c — Llama 3's and Qwen2's split patterns (bpe_pretok.h) as a scanner over
 * code points, not a regex engine: the pattern's alternatives are tried in order at each
 * position, each written out as the loop the regex's backtracking amounts to. Separate from
 * GPT-2's scanner (bpe_pretok.c) because the patterns differ in every alternative; the classes
 * are the same (bpe_pretok_class), cached below U+0800. */
#include <pthread.h>

#include "models/gpt2/bpe_pretok.h"

#define LOW_CP 0x800
static uint8_t low_class[LOW_CP];
static pthread_once_t low_once = PTHREAD_ONCE_INIT;

static void low_init(void)
{
    for (int32_t cp = 0; cp < LOW_CP; cp++)
        low_class[cp] = (uint8_t)bpe_pretok_class(cp);
}

/* The code point at s[i]: its byte length and class, or 0 at the end of the text. */
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
    if (!len) { /* not valid UTF-8 after all: a piece boundary, as the end of the text */
        return 0;
    }
    *cls = *cp < LOW_CP ? (pretok_class)low_class[*cp] : bpe_pretok_class(*cp);
    return len;
}

/* The end of a run of code points of class k from j. */
static inline size_t run_of(const uint8_t *s, size_t n, size_t j, pretok_class k)
{
    int32_t c;
    pretok_class kc;
    int len;
    while ((len = peek(s, n, j, &c, &kc)) && kc == k)
        j += (size_t)len;
    return j;
}

static inline int lower(uint8_t b)
{
    return b >= 'A' && b <= 'Z' ? b + 32 : b;
}

size_t bpe_pretok_llama3_next(const uint8_t *s, size_t n, size_t i, int max_digits)
{
    pthread_once(&low_once, low_init);
    int32_t c, c2;
    pretok_class k, k2;
    int len = peek(s, n, i, &c, &k);
    if (!len)
        return i + 1;
    /* (?i:'s|'t|'re|'ve|'m|'ll|'d) */
    if (c == '\'' && i + 1 < n) {
        int a = lower(s[i + 1]);
        if (a == 's' || a == 't' || a == 'm' || a == 'd')
            return i + 2;
        if (i + 2 < n) {
            int b = lower(s[i + 2]);
            if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l'))
                return i + 3;
        }
    }
    /* [^\r\n\p{L}\p{N}]?\p{L}+ */
    if (k == PRETOK_LETTER)
        return run_of(s, n, i + (size_t)len, PRETOK_LETTER);
    if (c != '\r' && c != '\n' && k != PRETOK_NUMBER && peek(s, n, i + (size_t)len, &c2, &k2) &&
        k2 == PRETOK_LETTER)
        return run_of(s, n, i + (size_t)len, PRETOK_LETTER);
    /* \p{N}{1,max_digits} */
    if (k == PRETOK_NUMBER) {
        size_t j = i + (size_t)len;
        for (int d = 1; d < max_digits && (len = peek(s, n, j, &c2, &k2)) && k2 == PRETOK_NUMBER;
             d++)
            j += (size_t)len;
        return j;
    }
    /*  ?[^\s\p{L}\p{N}]+[\r\n]* */
    size_t j = i;
    if (k == PRETOK_OTHER)
        j = i + (size_t)len;
    else if (c == ' ' && peek(s, n, i + 1, &c2, &k2) && k2 == PRETOK_OTHER)
        j = i + 1;
    if (j > i) {
        j = run_of(s, n, j, PRETOK_OTHER);
        while (j < n && (s[j] == '\r' || s[j] == '\n'))
            j++;
        return j;
    }
    /* white space from here on: \s*[\r\n]+ ends after the run's last \r or \n; else
     * \s+(?!\S) leaves the run's last character to the next piece when a non-space follows
     * (at the end of the text it takes the whole run); else \s+ */
    size_t last = i, after_nl = 0;
    j = i;
    while ((len = peek(s, n, j, &c2, &k2)) && k2 == PRETOK_SPACE) {
        if (c2 == '\r' || c2 == '\n')
            after_nl = j + 1;
        last = j;
        j += (size_t)len;
    }
    if (after_nl)
        return after_nl;
    if (j >= n)
        return j;
    return last > i ? last : j;
}
