/* loss_mask.c — the loss-mask file beside a token file (format in loss_mask.h): validation with
 * messages naming the file and what was expected, ranged reads that follow a token stream's
 * shards and wrap as llmc_tokens_read does, and writing through a temporary file. A file of its
 * own because the mask is instruction data's concern, not llm.c's token format's. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "models/gpt2/loss_mask.h"
#include "zeroc/durable.h"

#define HDR_INTS (LLMC_HEADER_BYTES / 4)
#define CHUNK 65536

bool loss_mask_path(const char *token_path, char *out, size_t cap)
{
    size_t n = strlen(token_path);
    if (n > 4 && !strcmp(token_path + n - 4, ".bin"))
        n -= 4;
    return snprintf(out, cap, "%.*s.mask", (int)n, token_path) < (int)cap;
}

static zc_status pread_all(int fd, void *buf, size_t len, off_t off, const char *path, zc_err *err)
{
    char *p = buf;
    while (len > 0) {
        ssize_t r = pread(fd, p, len, off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return zc_err_set(err, ZC_EIO, "%s: reading the loss mask: %s", path,
                              r < 0 ? strerror(errno) : "unexpected end of file");
        p += r;
        off += r;
        len -= (size_t)r;
    }
    return ZC_OK;
}

/* Opens and validates the mask at path for a token file of ntok tokens (tok_path). */
static zc_status open_one(const char *path, const char *tok_path, size_t ntok, int *fd_out,
                          zc_err *err)
{
    int fd;
    int64_t size;
    zc_err why = {0};
    zc_status st = zc_open_regular(path, &fd, &size, &why);
    if (st)
        return zc_err_set(err, st, "%s", why.msg);
    int32_t hdr[HDR_INTS] = {0};
    size_t got = size < LLMC_HEADER_BYTES ? (size_t)size : LLMC_HEADER_BYTES;
    st = pread_all(fd, hdr, got, 0, path, err);
    if (!st && (size < LLMC_HEADER_BYTES || hdr[0] != LOSS_MASK_MAGIC))
        st = zc_err_set(err, ZC_EINVAL,
                        "%s: not a loss-mask file: expected magic %d in the first 4 bytes of a "
                        "1024-byte header, got %d (%lld bytes in all)",
                        path, LOSS_MASK_MAGIC, hdr[0], (long long)size);
    else if (!st && hdr[1] != LOSS_MASK_VERSION)
        st = zc_err_set(err, ZC_EINVAL, "%s: loss-mask version %d; expected %d", path, hdr[1],
                        LOSS_MASK_VERSION);
    else if (!st && (hdr[2] < 0 || (size_t)hdr[2] != ntok))
        st = zc_err_set(err, ZC_EINVAL,
                        "%s: the mask holds %d entries but its token file %s holds %zu tokens "
                        "(the mask must have one byte per token: prepare both again)",
                        path, hdr[2], tok_path, ntok);
    else if (!st && (uint64_t)size != LLMC_HEADER_BYTES + (uint64_t)ntok)
        st = zc_err_set(err, ZC_EINVAL,
                        "%s: %lld bytes; a loss mask of %zu entries is 1024 + %zu bytes "
                        "(truncated or padded)",
                        path, (long long)size, ntok, ntok);
    if (st) {
        close(fd);
        return st;
    }
    *fd_out = fd;
    return ZC_OK;
}

zc_status loss_mask_open(const llmc_tokens *t, loss_mask *m, zc_err *err)
{
    *m = (loss_mask){0};
    int have = -1; /* the first shard with a mask */
    int first_without = -1;
    char path[4200];
    for (int i = 0; i < t->nshards; i++) {
        struct stat sb;
        if (!loss_mask_path(t->shard[i].path, path, sizeof path))
            return zc_err_set(err, ZC_EINVAL, "%s: path too long for its mask's name",
                              t->shard[i].path);
        bool there = stat(path, &sb) == 0;
        if (there && have < 0)
            have = i;
        if (!there && first_without < 0)
            first_without = i;
    }
    if (have < 0)
        return ZC_OK;
    if (first_without >= 0) {
        loss_mask_path(t->shard[have].path, path, sizeof path);
        char missing[4200];
        loss_mask_path(t->shard[first_without].path, missing, sizeof missing);
        return zc_err_set(err, ZC_EINVAL,
                          "%s: no loss mask beside this token file, while %s has one (%s): every "
                          "file of a glob needs its mask, or none does (expected %s)",
                          t->shard[first_without].path, t->shard[have].path, path, missing);
    }
    m->fd = calloc((size_t)t->nshards, sizeof *m->fd);
    m->path = calloc((size_t)t->nshards, sizeof *m->path);
    if (!m->fd || !m->path) {
        loss_mask_close(m);
        return zc_err_set(err, ZC_ENOMEM, "out of memory");
    }
    m->tokens = t;
    m->nshards = t->nshards;
    for (int i = 0; i < t->nshards; i++)
        m->fd[i] = -1;
    zc_status st = ZC_OK;
    for (int i = 0; i < t->nshards && !st; i++) {
        loss_mask_path(t->shard[i].path, path, sizeof path);
        if (!(m->path[i] = strdup(path)))
            st = zc_err_set(err, ZC_ENOMEM, "out of memory");
        if (!st)
            st = open_one(path, t->shard[i].path, t->shard[i].ntok, &m->fd[i], err);
    }
    if (st)
        loss_mask_close(m);
    return st;
}

zc_status loss_mask_read(const loss_mask *m, size_t first, size_t n, uint8_t *dst, zc_err *err)
{
    const llmc_tokens *t = m->tokens;
    size_t pos = first % t->ntok;
    int s = 0;
    while (s + 1 < t->nshards && t->shard[s + 1].first <= pos)
        s++;
    size_t at = pos - t->shard[s].first;
    for (size_t done = 0; done < n;) {
        size_t k = n - done;
        if (k > t->shard[s].ntok - at)
            k = t->shard[s].ntok - at;
        zc_status st =
            pread_all(m->fd[s], dst + done, k, (off_t)(LLMC_HEADER_BYTES + at), m->path[s], err);
        if (st)
            return st;
        for (size_t i = 0; i < k; i++)
            if (dst[done + i] > 1)
                return zc_err_set(err, ZC_EINVAL,
                                  "%s: byte %u for token %zu; a loss mask holds 0 (not counted) "
                                  "or 1 (counted)",
                                  m->path[s], (unsigned)dst[done + i], at + i);
        done += k;
        at += k;
        if (at == t->shard[s].ntok) {
            s = (s + 1) % t->nshards;
            at = 0;
        }
    }
    return ZC_OK;
}

void loss_mask_close(loss_mask *m)
{
    for (int i = 0; m->fd && i < m->nshards; i++)
        if (m->fd[i] >= 0)
            close(m->fd[i]);
    for (int i = 0; m->path && i < m->nshards; i++)
        free(m->path[i]);
    free(m->fd);
    free(m->path);
    *m = (loss_mask){0};
}

zc_status loss_mask_write(const char *path, const uint8_t *mask, size_t n, zc_err *err)
{
    if (n < 1 || n > INT32_MAX)
        return zc_err_set(err, ZC_EINVAL, "%s: a loss mask holds 1 to %d entries, not %zu", path,
                          INT32_MAX, n);
    zc_durable *f;
    zc_status st = zc_durable_open(&f, path, err);
    if (st)
        return st;
    int32_t hdr[HDR_INTS] = {LOSS_MASK_MAGIC, LOSS_MASK_VERSION, (int32_t)n};
    st = zc_durable_write(f, hdr, sizeof hdr, err);
    if (!st)
        st = zc_durable_write(f, mask, n, err);
    if (st) {
        zc_durable_abort(f);
        return st;
    }
    return zc_durable_commit(f, err);
}
