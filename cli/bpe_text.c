/* bpe_text.c — input reading, thread count and the progress line for the tokenizer commands
 * (bpe_text.h). An input is read whole into a buffer that doubles; before each doubling the
 * memory the host (or the cgroup) can still give is checked, so an endless stream (/dev/zero,
 * a pipe that never ends) is refused with a message instead of growing until the OOM killer. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/bpe_text.h"
#include "cli/memory_check.h"
#include "cli/units.h"

zc_status bpe_text_read(const char *what, const char *path, uint8_t **buf, size_t *len, zc_err *err)
{
    bool is_stdin = !strcmp(path, "-");
    FILE *f = is_stdin ? stdin : fopen(path, "rb");
    if (!f)
        return zc_err_set(err, ZC_EIO, "%s %s: cannot open: %s", what, path, strerror(errno));
    uint8_t *b = NULL;
    size_t n = 0, cap = 0, got;
    zc_status st = ZC_OK;
    do {
        if (cap - n < (1 << 16)) {
            size_t c = cap ? cap * 2 : (size_t)1 << 20;
            if ((st = memory_check_grow(what, path, n, c - cap, err)))
                break;
            uint8_t *nb = realloc(b, c);
            if (!nb) {
                st = zc_err_set(err, ZC_ENOMEM, "%s %s: out of memory after %zu bytes", what, path,
                                n);
                break;
            }
            b = nb;
            cap = c;
        }
        got = fread(b + n, 1, cap - n, f);
        n += got;
    } while (got > 0);
    if (!st && ferror(f))
        st = zc_err_set(err, ZC_EIO, "%s %s: read error: %s", what, path, strerror(errno));
    if (!is_stdin)
        fclose(f);
    if (st) {
        free(b);
        return st;
    }
    *buf = b;
    *len = n;
    return ZC_OK;
}

int bpe_text_threads(int asked)
{
    if (asked > 0)
        return asked;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

typedef struct {
    double start;
} progress_state;

static void progress_line(size_t done, size_t total, void *arg)
{
    const progress_state *p = arg;
    double dt = 1e-3 * now_ms() - p->start, mb = 1.0 / (1 << 20);
    fprintf(stderr, "\rtokenizing: %.1f / %.1f MiB (%3.0f%%), %.1f MiB/s ", (double)done * mb,
            (double)total * mb, total ? 100.0 * (double)done / (double)total : 100.0,
            dt > 0 ? (double)done * mb / dt : 0.0);
    if (done == total)
        fputc('\n', stderr);
    fflush(stderr);
}

zc_status bpe_text_encode(const bpe_vocab *v, const bpe_doc *docs, size_t ndocs, int threads,
                          int before_each, bpe_ids *ids, size_t *doc_start, double *seconds,
                          zc_err *err)
{
    size_t total = 0;
    for (size_t d = 0; d < ndocs; d++)
        total += docs[d].n;
    progress_state ps = {1e-3 * now_ms()};
    bool show = total >= BPE_PROGRESS_BYTES && isatty(STDERR_FILENO);
    zc_status st = bpe_encode_docs(v, docs, ndocs, threads, before_each, 0, ids, doc_start,
                                   show ? progress_line : NULL, &ps, err);
    *seconds = 1e-3 * now_ms() - ps.start;
    return st;
}
