/* svg.c — tick spacing and escaped text for the SVG charts (svg.h).
 *
 * Text comes from file names, which Linux lets hold any bytes but NUL and '/': bytes that are
 * not UTF-8, or control characters XML 1.0 does not allow, would make the SVG ill-formed (a
 * browser then shows an error instead of the chart). Each maximal invalid UTF-8 subpart (as
 * Unicode's "best practice" for U+FFFD substitution counts them: an unexpected byte, or the
 * start of a sequence cut short) and each such character becomes U+FFFD. */
#include <math.h>
#include <stdint.h>

#include "cli/svg.h"

double svg_nice_step(double lo, double hi)
{
    double raw = (hi / 2 - lo / 2) / 3, mag = pow(10, floor(log10(raw))), r = raw / mag;
    return (r <= 1 ? 1 : r <= 2 ? 2 : r <= 5 ? 5 : 10) * mag;
}

/* The length of the valid UTF-8 sequence at s (1-4), or, as a negative number, of the maximal
 * invalid subpart there (at least 1 byte); the code point into *cp when valid. */
static int utf8_at(const unsigned char *s, uint32_t *cp)
{
    const unsigned char c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    int n;
    unsigned char lo = 0x80, hi = 0xBF; /* the second byte's range (excludes overlongs and
                                           surrogates, and code points past U+10FFFF) */
    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c >= 0xE0 && c <= 0xEF)
        n = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    else if (c >= 0xF0 && c <= 0xF4)
        n = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    else
        return -1;
    uint32_t v = c & (n == 2 ? 0x1F : n == 3 ? 0x0F : 0x07);
    for (int i = 1; i < n; i++) {
        if (s[i] < (i == 1 ? lo : 0x80) || s[i] > (i == 1 ? hi : 0xBF))
            return -i; /* the lead and the i-1 good bytes after it (a NUL ends it too) */
        v = v << 6 | (s[i] & 0x3F);
    }
    *cp = v;
    return n;
}

void svg_text(FILE *f, const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    while (*s) {
        uint32_t cp = 0;
        int n = utf8_at(s, &cp);
        /* XML 1.0's Char: tab, newline, carriage return, U+0020 up, not U+FFFE or U+FFFF */
        if (n < 0 || (cp < 0x20 && cp != '\t' && cp != '\n' && cp != '\r') || cp == 0xFFFE ||
            cp == 0xFFFF) {
            fputs("\xEF\xBF\xBD", f); /* U+FFFD */
            s += n < 0 ? -n : n;
            continue;
        }
        switch (cp) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fwrite(s, 1, (size_t)n, f);
        }
        s += n;
    }
}
