/* hf_nfc.c — NFC by stretches (hf_nfc.h): the boundary table, the scan for code points that are
 * not boundaries, libutf8proc on the stretches around them. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "models/gpt2/bpe_pretok.h"
#include "models/gpt2/hf_nfc.h"

#define TABLE_CP 0x20000
static uint8_t boundary[TABLE_CP / 8]; /* bit set: a boundary code point */
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void table_init(void)
{
    static uint8_t later[TABLE_CP / 8]; /* a later part of some canonical decomposition */
    utf8proc_int32_t d[32];
    int bc;
    for (utf8proc_int32_t cp = 0; cp < TABLE_CP; cp++) {
        bc = 0;
        utf8proc_ssize_t n = utf8proc_decompose_char(cp, d, 32, UTF8PROC_DECOMPOSE, &bc);
        for (utf8proc_ssize_t i = 1; i < n && i < 32; i++)
            if (d[i] < TABLE_CP)
                later[d[i] / 8] |= (uint8_t)(1u << (d[i] % 8));
    }
    for (utf8proc_int32_t cp = 0; cp < TABLE_CP; cp++) {
        if ((cp >= 0xD800 && cp <= 0xDFFF) || (later[cp / 8] >> (cp % 8) & 1) ||
            utf8proc_get_property(cp)->combining_class != 0)
            continue;
        bc = 0;
        utf8proc_ssize_t n = utf8proc_decompose_char(cp, d, 32, UTF8PROC_DECOMPOSE, &bc);
        bool stable = n == 1 && d[0] == cp;
        if (!stable && n > 0) { /* a composite: NFC keeps it unless excluded or a singleton */
            uint8_t s[4], *q = NULL;
            utf8proc_ssize_t len = utf8proc_encode_char(cp, s);
            utf8proc_ssize_t r = utf8proc_map(s, len, &q, UTF8PROC_STABLE | UTF8PROC_COMPOSE);
            stable = r == len && !memcmp(q, s, (size_t)len);
            free(q);
        }
        if (stable)
            boundary[cp / 8] |= (uint8_t)(1u << (cp % 8));
    }
}

/* Whether the code point at p[i] (of *l bytes) is a boundary. */
static inline bool at_boundary(const uint8_t *p, size_t m, size_t i, size_t *l)
{
    if (p[i] < 0xCC) { /* below U+0300: every one a boundary */
        *l = p[i] < 0x80 ? 1 : 2;
        return true;
    }
    int32_t cp;
    int n = bpe_utf8_decode(p + i, m - i, &cp);
    *l = n > 0 ? (size_t)n : 1;
    return n > 0 && cp < TABLE_CP && (boundary[cp / 8] >> (cp % 8) & 1);
}

static zc_status append(const uint8_t *q, size_t n, uint8_t **buf, size_t *len, size_t *cap,
                        zc_err *err)
{
    if (n == 0)
        return ZC_OK; /* the buffer may not exist yet: memcpy's pointers must be valid */
    if (n > *cap - *len) {
        size_t c = *cap ? *cap : 4096;
        while (c - *len < n)
            c *= 2;
        uint8_t *b = realloc(*buf, c);
        if (!b)
            return zc_err_set(err, ZC_ENOMEM, "out of memory normalizing %zu bytes", n);
        *buf = b;
        *cap = c;
    }
    memcpy(*buf + *len, q, n);
    *len += n;
    return ZC_OK;
}

zc_status hf_nfc(const uint8_t *p, size_t m, uint8_t **buf, size_t *len, size_t *cap, bool *same,
                 zc_err *err)
{
    size_t k = 0, l = 1, last = 0;    /* last: where the last boundary seen starts */
    for (; k < m && p[k] < 0xCC; k++) /* below U+0300, byte by byte */
        if ((p[k] & 0xC0) != 0x80)
            last = k;
    *same = k == m;
    if (*same)
        return ZC_OK;
    pthread_once(&table_once, table_init);
    for (; k < m && at_boundary(p, m, k, &l); k += l)
        last = k;
    *same = k == m;
    if (*same)
        return ZC_OK;
    *len = 0;
    size_t copied = 0; /* p[0..copied) is in buf, normalized */
    while (k < m) {
        /* p[k] is not a boundary: its stretch runs from the boundary before it to the next */
        size_t a = last > copied ? last : copied, j = k;
        while (j < m && !at_boundary(p, m, j, &l))
            j += l;
        zc_status st = append(p + copied, a - copied, buf, len, cap, err);
        if (st)
            return st;
        utf8proc_uint8_t *q = NULL;
        utf8proc_ssize_t r = j - a > (size_t)PTRDIFF_MAX
                                 ? UTF8PROC_ERROR_OVERFLOW
                                 : utf8proc_map(p + a, (utf8proc_ssize_t)(j - a), &q,
                                                UTF8PROC_STABLE | UTF8PROC_COMPOSE);
        if (r < 0)
            return zc_err_set(err, r == UTF8PROC_ERROR_NOMEM ? ZC_ENOMEM : ZC_EINVAL,
                              "NFC normalization of %zu bytes failed: %s", j - a,
                              utf8proc_errmsg(r));
        st = append(q, (size_t)r, buf, len, cap, err);
        free(q);
        if (st)
            return st;
        copied = last = j;
        for (k = j; k < m && at_boundary(p, m, k, &l); k += l)
            last = k;
    }
    return append(p + copied, m - copied, buf, len, cap, err);
}
