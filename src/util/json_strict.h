/* json_strict.h — internal, header-only (models/gpt2/hf_files.c, src/ckpt/safetensors.c and
 * src/config/config.c use it; libzeroc exports nothing for it): what cJSON lets through that
 * Python's json and safetensors' serde_json refuse, so a file reads the same in both or not at
 * all. cJSON keeps the first of two equal keys (Python the last), skips any byte up to 0x20 as
 * white space, copies control bytes inside strings, decodes \u0000 into the C string (which then
 * ends there) and, unless asked, stops after the first value, whatever follows. */
#ifndef ZEROC_UTIL_JSON_STRICT_H
#define ZEROC_UTIL_JSON_STRICT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

/* s[0, n) starts with the escape \u0000 (a NUL character once decoded). */
static inline bool zc_json_is_nul_escape(const char *s, size_t n)
{
    return n >= 6 && s[0] == '\\' && s[1] == 'u' && !memcmp(s + 2, "0000", 4);
}

/* The first fault of JSON text[0, len) that cJSON lets through: a control byte (below 0x20)
 * outside a string other than JSON's white space (tab, LF, CR, space), a control byte inside a
 * string (JSON wants it escaped), or a \u0000 escape. Its offset, and *why says which; len and
 * *why NULL when there is none. */
static inline size_t zc_json_text_fault(const char *text, size_t len, const char **why)
{
    bool in_str = false;
    *why = NULL;
    for (size_t i = 0; i < len; i++) {
        const unsigned char ch = (unsigned char)text[i];
        if (in_str && ch == '\\') {
            if (zc_json_is_nul_escape(text + i, len - i)) {
                *why = "a \\u0000 escape (a NUL character) in a string";
                return i;
            }
            i++; /* the escaped byte (\" does not end the string) */
        } else if (ch == '"') {
            in_str = !in_str;
        } else if (ch < 0x20 && (in_str || (ch != '\t' && ch != '\n' && ch != '\r'))) {
            *why = ch == 0  ? "a NUL byte"
                   : in_str ? "a control byte in a string (JSON escapes it)"
                            : "a control byte";
            return i;
        }
    }
    return len;
}

/* The offset of the first byte of s[0, n) that does not start or continue a well-formed UTF-8
 * sequence (RFC 3629: no overlong forms, surrogates or code points past U+10FFFF); n if none.
 * JSON text is UTF-8: a string with other bytes makes a file other readers refuse. */
static inline size_t zc_utf8_fault(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        const unsigned char b = u[i];
        size_t len = b < 0x80                 ? 1
                     : b >= 0xC2 && b <= 0xDF ? 2
                     : b >= 0xE0 && b <= 0xEF ? 3
                     : b >= 0xF0 && b <= 0xF4 ? 4
                                              : 0;
        if (!len || i + len > n)
            return i;
        /* the second byte's range narrows for E0 (no overlong), ED (no surrogates), F0, F4 */
        const unsigned char lo = b == 0xE0   ? 0xA0
                                 : b == 0xF0 ? 0x90
                                             : 0x80,
                            hi = b == 0xED   ? 0x9F
                                 : b == 0xF4 ? 0x8F
                                             : 0xBF;
        for (size_t k = 1; k < len; k++)
            if (u[i + k] < (k == 1 ? lo : 0x80) || u[i + k] > (k == 1 ? hi : 0xBF))
                return i;
        i += len;
    }
    return n;
}

/* The offset of the first byte of text[from, len) that is not one of `allowed`; len if none. */
static inline size_t zc_json_trailing(const char *text, size_t len, size_t from,
                                      const char *allowed)
{
    for (size_t i = from; i < len; i++)
        if (!text[i] || !strchr(allowed, text[i]))
            return i;
    return len;
}

static inline int zc_json_name_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Appends ".name" (or "name" at the start) to path, control bytes shown as '?'. */
static inline void zc_json_path_add(char *path, size_t cap, const char *name)
{
    size_t n = strlen(path);
    if (n && n + 1 < cap)
        path[n++] = '.';
    for (; *name && n + 1 < cap; name++)
        path[n++] = (unsigned char)*name < 0x20 ? '?' : *name;
    path[n < cap ? n : cap - 1] = '\0';
}

/* A key given twice in one object anywhere in the tree under node: 1 and its dotted path (array
 * elements as [i]) in path; 0 when every object's keys are distinct; -1 out of memory. path
 * holds the path of node itself on entry ("" for the root). */
static inline int zc_json_duplicate_key(const cJSON *node, char *path, size_t cap)
{
    const size_t at = strlen(path);
    int n = 0, found = 0;
    for (const cJSON *c = node ? node->child : NULL; c; c = c->next)
        n++;
    if (cJSON_IsObject(node) && n > 1) {
        const char **names = malloc((size_t)n * sizeof *names);
        if (!names)
            return -1;
        int k = 0;
        for (const cJSON *c = node->child; c; c = c->next)
            names[k++] = c->string ? c->string : "";
        qsort(names, (size_t)n, sizeof *names, zc_json_name_cmp);
        for (k = 1; k < n && !found; k++)
            if (!strcmp(names[k - 1], names[k])) {
                zc_json_path_add(path, cap, names[k]);
                found = 1;
            }
        free(names);
        if (found)
            return 1;
    }
    int i = 0;
    for (const cJSON *c = node ? node->child : NULL; c && !found; c = c->next, i++) {
        if (!cJSON_IsObject(c) && !cJSON_IsArray(c))
            continue;
        if (cJSON_IsObject(node)) {
            zc_json_path_add(path, cap, c->string ? c->string : "");
        } else {
            size_t m = strlen(path);
            snprintf(path + m, cap - m, "[%d]", i);
        }
        found = zc_json_duplicate_key(c, path, cap);
        if (!found)
            path[at] = '\0';
    }
    return found;
}

/* Parses text[0, len) as one JSON value followed by nothing but bytes of `trail` (trail_name
 * names them in the message), without the faults zc_json_text_fault finds and, when dups is not
 * 0, without a key given twice in one object (dups 2: below the top level only, where the caller
 * checks the top level itself). NULL and a message in msg (no file name; offsets are from the
 * start of text plus base, i.e. of the file) on any of them; the caller deletes the tree. */
static inline cJSON *zc_json_parse_strict(const char *text, size_t len, size_t base,
                                          const char *trail, const char *trail_name, int dups,
                                          char *msg, size_t cap)
{
    const char *end = NULL, *why;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    msg[0] = '\0';
    if (!root) {
        size_t at = end && end >= text && end <= text + len ? (size_t)(end - text) : 0;
        snprintf(msg, cap, "not JSON (parse error at offset %zu)", base + at);
        return NULL;
    }
    const size_t stop = (size_t)(end - text);
    size_t at = zc_json_trailing(text, len, stop, trail);
    if (at < len) {
        snprintf(msg, cap,
                 "byte 0x%02x at offset %zu follows the JSON value that ends at offset %zu "
                 "(only %s may follow it)",
                 (unsigned char)text[at], base + at, base + stop, trail_name);
    } else if ((at = zc_json_text_fault(text, stop, &why)) < stop) {
        snprintf(msg, cap, "not JSON: %s at offset %zu", why, base + at);
    } else if (dups) {
        char path[256] = "";
        int d = 0;
        if (dups == 1)
            d = zc_json_duplicate_key(root, path, sizeof path);
        for (const cJSON *c = root->child; dups == 2 && c && !d; c = c->next) {
            snprintf(path, sizeof path, "%s", "");
            zc_json_path_add(path, sizeof path, c->string ? c->string : "");
            d = cJSON_IsObject(c) || cJSON_IsArray(c) ? zc_json_duplicate_key(c, path, sizeof path)
                                                      : 0;
        }
        if (d < 0)
            snprintf(msg, cap, "out of memory");
        else if (d > 0)
            snprintf(msg, cap, "duplicate key: %s", path);
    }
    if (msg[0]) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}
#endif
