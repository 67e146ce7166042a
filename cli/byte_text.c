/* byte_text.c — byte-level tokens to text and back (byte_text.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli/byte_text.h"

void byte_text_print(FILE *f, const int *tok, int n, int vocab)
{
    for (int i = 0; i < n; i++) {
        if (vocab == BYTE_VOCAB) {
            int c = tok[i];
            fputc(c < 32 && c != '\n' && c != '\t' ? '.' : c, f);
        } else {
            fprintf(f, "%s%d", i ? " " : "", tok[i]);
        }
    }
}

void byte_text_escape(const char *s, char *buf, size_t cap)
{
    size_t k = 0;
    for (; *s && k + 8 < cap; s++) { /* room for the longest escape, "..." and the NUL */
        unsigned char c = (unsigned char)*s;
        const char *named = c == '\n'   ? "\\n"
                            : c == '\t' ? "\\t"
                            : c == '\r' ? "\\r"
                            : c == '\\' ? "\\\\"
                                        : NULL;
        if (named)
            k += (size_t)snprintf(buf + k, cap - k, "%s", named);
        else if (c < 32 || c == 127)
            k += (size_t)snprintf(buf + k, cap - k, "\\x%02x", c);
        else
            buf[k++] = (char)c;
    }
    if (*s)
        k += (size_t)snprintf(buf + k, cap - k, "...");
    buf[k] = 0;
}

zc_status byte_text_parse_prompt(const char *prompt, int vocab, int **out, int *n, zc_err *err)
{
    size_t len = strlen(prompt);
    int *t = malloc((len + 1) * sizeof(int));
    if (!t)
        return zc_err_set(err, ZC_ENOMEM, "out of memory");
    int k = 0;
    if (vocab == BYTE_VOCAB) {
        for (size_t i = 0; i < len; i++)
            t[k++] = (unsigned char)prompt[i];
    } else {
        const char *p = prompt;
        while (*p) {
            char *end;
            errno = 0;
            long v = strtol(p, &end, 10);
            if (end == p || errno || v < 0 || v >= vocab || (*end && *end != ',')) {
                char shown[256];
                byte_text_escape(prompt, shown, sizeof shown);
                free(t);
                return zc_err_set(err, ZC_EINVAL,
                                  "--prompt: with vocabulary %d the prompt is "
                                  "comma-separated token ids in [0, %d); got '%s'",
                                  vocab, vocab, shown);
            }
            t[k++] = (int)v;
            p = *end ? end + 1 : end;
        }
    }
    if (k == 0) {
        free(t);
        return zc_err_set(err, ZC_EINVAL, "--prompt: empty prompt");
    }
    *out = t;
    *n = k;
    return ZC_OK;
}
