/* llmc_files.c — llm.c's GPT-2 checkpoint and token file formats (layouts in llmc_files.h):
 * header validation with messages that name the file and the problem, ranged pread/pwrite of
 * tensor elements (bf16 widened to fp32 on read), token streams (uint16 or uint32 tokens) over one
 * file or a glob of shard files, and temp-file + fsync + rename writing so an existing file is only
 * replaced by a complete one. POSIX + libc only. */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "models/gpt2/llmc_files.h"
#include "zeroc/durable.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "llm.c files are little-endian; this module reads and writes them as host-order words"
#endif
_Static_assert(sizeof(off_t) == 8, "llm.c checkpoints exceed 2 GiB: build with a 64-bit off_t");
_Static_assert(sizeof(float) == 4 && sizeof(int32_t) == 4, "fp32 and int32 must be 4 bytes");

#define HDR_INTS (LLMC_HEADER_BYTES / 4)
#define CHUNK 8192 /* elements per bounce-buffer round (bf16 and token reads) */

static const char *const tensor_names[LLMC_NTENSORS] = {
    "wte",  "wpe",  "ln1w", "ln1b", "qkvw",    "qkvb",    "attprojw", "attprojb",
    "ln2w", "ln2b", "fcw",  "fcb",  "fcprojw", "fcprojb", "lnfw",     "lnfb"};

const char *llmc_tensor_name(int i)
{
    return i >= 0 && i < LLMC_NTENSORS ? tensor_names[i] : NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* shapes */

static bool mul_ok(uint64_t a, uint64_t b, uint64_t *out)
{
    if (a != 0 && b > UINT64_MAX / a)
        return false;
    *out = a * b;
    return true;
}

/* Element counts of the 16 tensors; false on overflow (sizes must be positive already). */
static bool compute_sizes(const llmc_header *h, uint64_t sz[LLMC_NTENSORS], uint64_t *total)
{
    const uint64_t Vp = (uint64_t)h->padded_vocab_size, T = (uint64_t)h->max_seq_len;
    const uint64_t L = (uint64_t)h->num_layers, C = (uint64_t)h->channels;
    uint64_t LC, LCC, LCC3, LCC4, VpC, TC;
    if (!mul_ok(L, C, &LC) || !mul_ok(LC, C, &LCC) || !mul_ok(LCC, 3, &LCC3) ||
        !mul_ok(LCC, 4, &LCC4) || !mul_ok(Vp, C, &VpC) || !mul_ok(T, C, &TC))
        return false;
    /* LC·3 and LC·4 cannot overflow: they are at most LCC·3 and LCC·4 (C ≥ 1) */
    const uint64_t s[LLMC_NTENSORS] = {VpC, TC, LC,   LC,     LCC3, LC * 3, LCC, LC,
                                       LC,  LC, LCC4, LC * 4, LCC4, LC,     C,   C};
    memcpy(sz, s, sizeof s);
    uint64_t sum = 0;
    for (int i = 0; i < LLMC_NTENSORS; i++) {
        if (sz[i] > UINT64_MAX - sum || sz[i] > SIZE_MAX)
            return false;
        sum += sz[i];
    }
    /* the file's byte size, at 4 bytes per element, must be an off_t */
    if (sum > ((uint64_t)INT64_MAX - LLMC_HEADER_BYTES) / 4)
        return false;
    *total = sum;
    return true;
}

static void shape_str(const llmc_header *h, char *buf, size_t cap)
{
    snprintf(buf, cap, "maxT=%d, V=%d, Vp=%d, L=%d, NH=%d, C=%d", h->max_seq_len, h->vocab_size,
             h->padded_vocab_size, h->num_layers, h->num_heads, h->channels);
}

/* Checks the model shape; `path` names the file in messages. */
static zc_status check_shape(const char *path, const llmc_header *h, uint64_t *total, zc_err *err)
{
    const struct {
        const char *name;
        int v;
    } f[] = {{"max_seq_len", h->max_seq_len}, {"vocab_size", h->vocab_size},
             {"num_layers", h->num_layers},   {"num_heads", h->num_heads},
             {"channels", h->channels},       {"padded_vocab_size", h->padded_vocab_size}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (f[i].v <= 0)
            return zc_err_set(err, ZC_EINVAL, "%s: bad header: %s = %d (must be > 0)", path,
                              f[i].name, f[i].v);
    if (h->channels % h->num_heads != 0)
        return zc_err_set(err, ZC_EINVAL,
                          "%s: bad header: channels %d is not a multiple of num_heads %d", path,
                          h->channels, h->num_heads);
    if (h->padded_vocab_size < h->vocab_size)
        return zc_err_set(err, ZC_EINVAL, "%s: bad header: padded_vocab_size %d < vocab_size %d",
                          path, h->padded_vocab_size, h->vocab_size);
    uint64_t sz[LLMC_NTENSORS];
    if (!compute_sizes(h, sz, total)) {
        char s[160];
        shape_str(h, s, sizeof s);
        return zc_err_set(err, ZC_EINVAL, "%s: bad header: tensor sizes overflow (%s)", path, s);
    }
    return ZC_OK;
}

void llmc_tensor_sizes(const llmc_header *h, size_t sizes[LLMC_NTENSORS])
{
    uint64_t sz[LLMC_NTENSORS], total;
    ZC_ASSERT(h && compute_sizes(h, sz, &total));
    for (int i = 0; i < LLMC_NTENSORS; i++)
        sizes[i] = (size_t)sz[i];
}

size_t llmc_num_params(const llmc_header *h)
{
    uint64_t sz[LLMC_NTENSORS], total;
    ZC_ASSERT(h && compute_sizes(h, sz, &total));
    return (size_t)total;
}

/* Element offset of tensor i's first element from the start of the data. */
static uint64_t tensor_start(const llmc_header *h, int tensor, uint64_t *size)
{
    uint64_t sz[LLMC_NTENSORS], total, start = 0;
    ZC_ASSERT(compute_sizes(h, sz, &total));
    for (int i = 0; i < tensor; i++)
        start += sz[i];
    *size = sz[tensor];
    return start;
}

/* ------------------------------------------------------------------------------------------ */
/* I/O helpers: whole-buffer pread, regular-file open (writes: zeroc/durable.h) */

static zc_status pread_full(int fd, void *buf, size_t len, off_t off, const char *path,
                            const char *what, zc_err *err)
{
    char *p = buf;
    while (len > 0) {
        ssize_t r = pread(fd, p, len, off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return zc_err_set(err, ZC_EIO, "%s: reading %s: %s", path, what, strerror(errno));
        if (r == 0)
            return zc_err_set(err, ZC_EIO,
                              "%s: reading %s: unexpected end of file at byte %lld (the file "
                              "changed after it was validated?)",
                              path, what, (long long)off);
        p += r;
        off += r;
        len -= (size_t)r;
    }
    return ZC_OK;
}

/* zc_open_regular: the type is checked on a descriptor opened without blocking — a plain open
 * of a FIFO (standing in for --init, --data or --val-data) waited forever for a writer. */
static zc_status open_regular(const char *path, int *fd_out, off_t *size, zc_err *err)
{
    int64_t n;
    zc_err why = {0};
    zc_status st = zc_open_regular(path, fd_out, &n, &why);
    if (st == ZC_EIO)
        return zc_err_set(err, ZC_EIO, "%s: cannot open: %s%s", path, strerror(errno),
                          errno == EMFILE ? " (every shard of a glob stays open: raise the "
                                            "process's limit, ulimit -n)"
                                          : "");
    if (st)
        return zc_err_set(err, ZC_EIO, "%s", why.msg);
    *size = (off_t)n;
    return ZC_OK;
}

/* Opens path (a regular file) and reads its 256-int header, zero-filled past the end of a short
 * file; on error nothing is left open. */
static zc_status open_with_header(const char *path, int *fd, off_t *size, int32_t hdr[HDR_INTS],
                                  zc_err *err)
{
    zc_status st = open_regular(path, fd, size, err);
    if (st)
        return st;
    memset(hdr, 0, LLMC_HEADER_BYTES);
    size_t got = *size < LLMC_HEADER_BYTES ? (size_t)*size : LLMC_HEADER_BYTES;
    st = pread_full(*fd, hdr, got, 0, path, "the header", err);
    if (st) {
        close(*fd);
        *fd = -1;
    }
    return st;
}

/* ------------------------------------------------------------------------------------------ */
/* checkpoints */

zc_status llmc_ckpt_read_header(const char *path, llmc_header *h, zc_err *err)
{
    ZC_ASSERT(path && h);
    int fd = -1;
    off_t size = 0;
    int32_t hdr[HDR_INTS];
    zc_status st = open_with_header(path, &fd, &size, hdr, err);
    if (st)
        return st;
    close(fd);
    if (size >= 4 && hdr[0] != LLMC_CKPT_MAGIC)
        return zc_err_set(err, ZC_EINVAL,
                          "%s: bad magic %d (expected %d: not an llm.c GPT-2 checkpoint%s)", path,
                          hdr[0], LLMC_CKPT_MAGIC,
                          hdr[0] == LLMC_TOKENS_MAGIC || hdr[0] == LLMC_TOKENS32_MAGIC
                              ? "; it is an llm.c token file"
                              : "");
    if (size < LLMC_HEADER_BYTES)
        return zc_err_set(err, ZC_EINVAL,
                          "%s: truncated: %lld bytes, shorter than the %d-byte llm.c header", path,
                          (long long)size, LLMC_HEADER_BYTES);
    if (hdr[1] != LLMC_CKPT_FP32 && hdr[1] != LLMC_CKPT_BF16)
        return zc_err_set(err, ZC_EINVAL,
                          "%s: unsupported version %d (expected 3 = fp32 or 5 = bf16%s)", path,
                          hdr[1],
                          hdr[1] >= 1 && hdr[1] <= 2
                              ? "; older llm.c checkpoints lack the padded vocabulary: re-export "
                                "with llm.c's train_gpt2.py"
                              : "");
    llmc_header x = {.version = hdr[1],
                     .max_seq_len = hdr[2],
                     .vocab_size = hdr[3],
                     .num_layers = hdr[4],
                     .num_heads = hdr[5],
                     .channels = hdr[6],
                     .padded_vocab_size = hdr[7]};
    uint64_t total;
    st = check_shape(path, &x, &total, err);
    if (st)
        return st;
    const int w = x.version == LLMC_CKPT_FP32 ? 4 : 2;
    const uint64_t expected = LLMC_HEADER_BYTES + total * (uint64_t)w;
    if ((uint64_t)size != expected) {
        char s[160];
        shape_str(&x, s, sizeof s);
        if ((uint64_t)size < expected)
            return zc_err_set(err, ZC_EINVAL,
                              "%s: truncated: %lld bytes, expected %llu for version %d (%s)", path,
                              (long long)size, (unsigned long long)expected, x.version, s);
        return zc_err_set(err, ZC_EINVAL,
                          "%s: %lld bytes, expected %llu for version %d (%s): %llu bytes of "
                          "trailing data after the last tensor",
                          path, (long long)size, (unsigned long long)expected, x.version, s,
                          (unsigned long long)((uint64_t)size - expected));
    }
    *h = x;
    return ZC_OK;
}

zc_status llmc_ckpt_read(const char *path, const llmc_header *h, int tensor, size_t first, size_t n,
                         float *dst, zc_err *err)
{
    ZC_ASSERT(path && h && (dst || n == 0));
    ZC_ASSERT(h->version == LLMC_CKPT_FP32 || h->version == LLMC_CKPT_BF16);
    ZC_ASSERT(tensor >= 0 && tensor < LLMC_NTENSORS);
    uint64_t tsize, start = tensor_start(h, tensor, &tsize);
    ZC_ASSERT(first <= tsize && n <= tsize - first);
    if (n == 0)
        return ZC_OK;
    const int w = h->version == LLMC_CKPT_FP32 ? 4 : 2;
    char what[96];
    snprintf(what, sizeof what, "%s[%zu..%zu)", tensor_names[tensor], first, first + n);
    int fd; /* the file was checked when its header was read; checked again, as it may change */
    off_t fsize;
    zc_status st = open_regular(path, &fd, &fsize, err);
    if (st)
        return st;
    off_t off = (off_t)(LLMC_HEADER_BYTES + (start + first) * (uint64_t)w);
    if (w == 4) {
        st = pread_full(fd, dst, n * sizeof(float), off, path, what, err);
    } else {
        uint16_t buf[CHUNK];
        for (size_t done = 0; done < n && !st;) {
            size_t k = n - done < CHUNK ? n - done : CHUNK;
            st = pread_full(fd, buf, k * 2, off + (off_t)(done * 2), path, what, err);
            for (size_t i = 0; i < k && !st; i++) {
                uint32_t u = (uint32_t)buf[i] << 16; /* bf16 = the top half of an fp32 */
                memcpy(&dst[done + i], &u, sizeof u);
            }
            done += k;
        }
    }
    close(fd);
    return st;
}

zc_status llmc_ckpt_create(llmc_ckpt_writer *w, const char *path, const llmc_header *h, zc_err *err)
{
    ZC_ASSERT(w && path && h);
    memset(w, 0, sizeof *w);
    if (h->version != 0 && h->version != LLMC_CKPT_FP32)
        return zc_err_set(err, ZC_EINVAL, "%s: cannot write checkpoint version %d (only 3 = fp32)",
                          path, h->version);
    uint64_t total;
    zc_status st = check_shape(path, h, &total, err);
    if (st)
        return st;
    if (strlen(path) >= sizeof w->path)
        return zc_err_set(err, ZC_EINVAL, "%s: path too long", path);
    w->h = *h;
    w->h.version = LLMC_CKPT_FP32;
    snprintf(w->path, sizeof w->path, "%s", path);
    if ((st = zc_durable_open(&w->out, path, err)))
        return st;
    int32_t hdr[HDR_INTS] = {0};
    hdr[0] = LLMC_CKPT_MAGIC;
    hdr[1] = LLMC_CKPT_FP32;
    hdr[2] = h->max_seq_len;
    hdr[3] = h->vocab_size;
    hdr[4] = h->num_layers;
    hdr[5] = h->num_heads;
    hdr[6] = h->channels;
    hdr[7] = h->padded_vocab_size;
    st = zc_durable_pwrite(w->out, hdr, sizeof hdr, 0, err);
    if (st)
        llmc_ckpt_abort(w);
    return st;
}

zc_status llmc_ckpt_write(llmc_ckpt_writer *w, int tensor, size_t first, size_t n, const float *src,
                          zc_err *err)
{
    ZC_ASSERT(w && w->out && (src || n == 0));
    ZC_ASSERT(tensor >= 0 && tensor < LLMC_NTENSORS);
    uint64_t tsize, start = tensor_start(&w->h, tensor, &tsize);
    ZC_ASSERT(first <= tsize && n <= tsize - first);
    if (n == 0)
        return ZC_OK;
    int64_t off = (int64_t)(LLMC_HEADER_BYTES + (start + first) * 4);
    zc_status st = zc_durable_pwrite(w->out, src, n * sizeof(float), off, err);
    if (!st)
        w->written[tensor] += n;
    return st;
}

zc_status llmc_ckpt_finish(llmc_ckpt_writer *w, zc_err *err)
{
    ZC_ASSERT(w && w->out);
    size_t sizes[LLMC_NTENSORS];
    llmc_tensor_sizes(&w->h, sizes);
    for (int i = 0; i < LLMC_NTENSORS; i++)
        if (w->written[i] != sizes[i]) {
            zc_err_set(err, ZC_ESTATE,
                       "%s: incomplete checkpoint: tensor %s has %zu of %zu elements written; "
                       "the file was not replaced",
                       w->path, tensor_names[i], w->written[i], sizes[i]);
            llmc_ckpt_abort(w);
            return ZC_ESTATE;
        }
    zc_status st = zc_durable_commit(w->out, err);
    w->out = NULL;
    return st;
}

void llmc_ckpt_abort(llmc_ckpt_writer *w)
{
    if (!w)
        return;
    zc_durable_abort(w->out);
    w->out = NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* token files */

/* The width a token file's magic and version give: 2 or 4 bytes per token, 0 when they are
 * not one of llm.c's two pairs. */
static int token_width(int32_t magic, int32_t version)
{
    if (magic == LLMC_TOKENS_MAGIC && version == LLMC_TOKENS_VERSION)
        return 2;
    if (magic == LLMC_TOKENS32_MAGIC && version == LLMC_TOKENS32_VERSION)
        return 4;
    return 0;
}

/* Opens and validates one token file. */
static zc_status open_shard(const char *path, llmc_token_shard *sh, zc_err *err)
{
    int fd = -1;
    off_t size = 0;
    int32_t hdr[HDR_INTS];
    zc_status st = open_with_header(path, &fd, &size, hdr, err);
    if (st)
        return st;
    const bool magic_ok = hdr[0] == LLMC_TOKENS_MAGIC || hdr[0] == LLMC_TOKENS32_MAGIC;
    const int w = token_width(hdr[0], hdr[1]);
    /* tokens the size holds (rounded down): more than an int32 count is a file to split */
    const int64_t by_size =
        size > LLMC_HEADER_BYTES && w ? (int64_t)(size - LLMC_HEADER_BYTES) / w : 0;
    if (size >= 4 && !magic_ok)
        st = zc_err_set(err, ZC_EINVAL,
                        "%s: bad magic %d (expected %d or %d: not an llm.c token file%s)", path,
                        hdr[0], LLMC_TOKENS_MAGIC, LLMC_TOKENS32_MAGIC,
                        hdr[0] == LLMC_CKPT_MAGIC ? "; it is an llm.c GPT-2 checkpoint" : "");
    else if (size < LLMC_HEADER_BYTES)
        st = zc_err_set(err, ZC_EINVAL,
                        "%s: truncated: %lld bytes, shorter than the %d-byte llm.c header", path,
                        (long long)size, LLMC_HEADER_BYTES);
    else if (!w)
        st = zc_err_set(err, ZC_EINVAL,
                        "%s: unsupported version %d for magic %d (expected %d = %s tokens)", path,
                        hdr[1], hdr[0],
                        hdr[0] == LLMC_TOKENS_MAGIC ? LLMC_TOKENS_VERSION : LLMC_TOKENS32_VERSION,
                        hdr[0] == LLMC_TOKENS_MAGIC ? "uint16" : "uint32");
    else if (by_size > INT32_MAX)
        st = zc_err_set(err, ZC_EINVAL,
                        "%s: %lld tokens by its size: more than an llm.c token file's int32 "
                        "count (%d) can hold; split it into shards (train --data takes a glob "
                        "of shards)",
                        path, (long long)by_size, INT32_MAX);
    else if (hdr[2] <= 0)
        st =
            zc_err_set(err, ZC_EINVAL,
                       "%s: header claims %d tokens (a token file holds at least 1)", path, hdr[2]);
    if (st) {
        close(fd);
        return st;
    }
    const int64_t ntok = hdr[2], expected = LLMC_HEADER_BYTES + w * ntok;
    if ((int64_t)size != expected) {
        if ((int64_t)size < expected)
            st = zc_err_set(err, ZC_EINVAL,
                            "%s: truncated: %lld bytes, expected %lld for %lld uint%d tokens", path,
                            (long long)size, (long long)expected, (long long)ntok, 8 * w);
        else
            st = zc_err_set(err, ZC_EINVAL,
                            "%s: %lld bytes, expected %lld for %lld uint%d tokens: %lld bytes of "
                            "trailing data",
                            path, (long long)size, (long long)expected, (long long)ntok, 8 * w,
                            (long long)(size - expected));
        close(fd);
        return st;
    }
    if (!(sh->path = strdup(path))) {
        close(fd);
        return zc_err_set(err, ZC_ENOMEM, "out of memory");
    }
    sh->fd = fd;
    sh->width = w;
    sh->ntok = (size_t)ntok;
    return ZC_OK;
}

static int name_order(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Every shard stays open: the soft limit on open files (often 1024, while the hard one is far
 * higher) rises to leave room for n more beside what the process has open (MPI's own, the
 * other stream's); as far as the hard limit allows. */
static void raise_open_files(size_t n)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl))
        return;
    const rlim_t want = (rlim_t)n + 1024;
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) {
        rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ? want : rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

zc_status llmc_tokens_open(const char *path, llmc_tokens *t, zc_err *err)
{
    ZC_ASSERT(path && t);
    *t = (llmc_tokens){0};
    snprintf(t->path, sizeof t->path, "%s", path);
    struct stat sb;
    glob_t g = {0};
    bool pattern = strpbrk(path, "*?[") && stat(path, &sb) != 0, globbed = false;
    size_t n = 1;
    if (pattern) {
        int rc = glob(path, GLOB_NOSORT, NULL, &g);
        if (rc == GLOB_NOMATCH)
            return zc_err_set(err, ZC_EINVAL,
                              "%s: no file matches this pattern (a glob of llm.c token files, "
                              "e.g. 'fineweb_train_*.bin', quoted so the shell passes it as is)",
                              path);
        if (rc != 0)
            return zc_err_set(err, rc == GLOB_NOSPACE ? ZC_ENOMEM : ZC_EIO,
                              "%s: cannot expand the pattern (glob: %s)", path,
                              rc == GLOB_NOSPACE ? "out of memory" : "read error");
        globbed = true;
        n = g.gl_pathc;
        raise_open_files(n);
        qsort(g.gl_pathv, n, sizeof *g.gl_pathv, name_order);
        if (n > INT_MAX) {
            globfree(&g);
            return zc_err_set(err, ZC_EINVAL, "%s: %zu files match: too many", path, n);
        }
    }
    zc_status st = ZC_OK;
    if (!(t->shard = calloc(n, sizeof *t->shard)))
        st = zc_err_set(err, ZC_ENOMEM, "out of memory");
    for (size_t i = 0; !st && i < n; i++) {
        st = open_shard(globbed ? g.gl_pathv[i] : path, &t->shard[i], err);
        if (!st) {
            t->shard[i].first = t->ntok;
            t->ntok += t->shard[i].ntok;
            t->nshards = (int)i + 1;
        }
    }
    if (globbed)
        globfree(&g);
    if (st)
        llmc_tokens_close(t);
    return st;
}

zc_status llmc_tokens_read(const llmc_tokens *t, size_t first, size_t n, int *dst, int vocab_size,
                           zc_err *err)
{
    ZC_ASSERT(t && t->nshards > 0 && t->ntok > 0 && (dst || n == 0) && vocab_size > 0);
    uint32_t buf[CHUNK]; /* as uint16_t[CHUNK] for a uint16 file: the first half */
    size_t pos = first % t->ntok;
    int s = 0; /* the shard holding pos: the last whose first is <= pos */
    for (int lo = 0, hi = t->nshards - 1; lo <= hi;) {
        int mid = lo + (hi - lo) / 2;
        if (t->shard[mid].first <= pos) {
            s = mid;
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    size_t at = pos - t->shard[s].first; /* position in shard s */
    for (size_t done = 0; done < n;) {
        const llmc_token_shard *sh = &t->shard[s];
        const size_t w = (size_t)sh->width;
        size_t k = n - done;
        if (k > sh->ntok - at)
            k = sh->ntok - at;
        if (k > CHUNK)
            k = CHUNK;
        zc_status st = pread_full(sh->fd, buf, k * w, (off_t)(LLMC_HEADER_BYTES + w * (uint64_t)at),
                                  sh->path, "tokens", err);
        if (st)
            return st;
        const uint16_t *b16 = (const uint16_t *)buf;
        for (size_t i = 0; i < k; i++) {
            uint32_t id = w == 2 ? b16[i] : buf[i];
            if (id >= (uint32_t)vocab_size)
                return zc_err_set(err, ZC_EINVAL,
                                  "%s: token id %u at position %zu is out of range for "
                                  "vocab_size %d",
                                  sh->path, (unsigned)id, at + i, vocab_size);
            dst[done + i] = (int)id;
        }
        done += k;
        at += k;
        if (at == sh->ntok) {
            at = 0;
            s = s + 1 == t->nshards ? 0 : s + 1;
        }
    }
    return ZC_OK;
}

void llmc_tokens_close(llmc_tokens *t)
{
    if (!t || !t->shard)
        return;
    for (int i = 0; i < t->nshards; i++) {
        close(t->shard[i].fd);
        free(t->shard[i].path);
    }
    free(t->shard);
    t->shard = NULL;
    t->nshards = 0;
}

int llmc_tokens_width(int vocab_size)
{
    return vocab_size <= LLMC_TOKENS16_MAX_VOCAB ? 2 : 4;
}

zc_status llmc_tokens_write(const char *path, const void *tok, int width, size_t n, zc_err *err)
{
    ZC_ASSERT(path && (tok || n == 0) && (width == 2 || width == 4));
    if (n < 1 || n > INT32_MAX)
        return zc_err_set(err, ZC_EINVAL, "%s: a token file holds 1 to %d tokens, not %zu", path,
                          INT32_MAX, n);
    zc_durable *f;
    zc_status st = zc_durable_open(&f, path, err);
    if (st)
        return st;
    int32_t hdr[HDR_INTS] = {0};
    hdr[0] = width == 2 ? LLMC_TOKENS_MAGIC : LLMC_TOKENS32_MAGIC;
    hdr[1] = width == 2 ? LLMC_TOKENS_VERSION : LLMC_TOKENS32_VERSION;
    hdr[2] = (int32_t)n;
    st = zc_durable_write(f, hdr, sizeof hdr, err);
    if (!st)
        st = zc_durable_write(f, tok, n * (size_t)width, err);
    if (st) {
        zc_durable_abort(f);
        return st;
    }
    return zc_durable_commit(f, err);
}
