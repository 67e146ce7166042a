/* test_llmc_files.c — the llm.c checkpoint and token file module (models/gpt2/llmc_files.h):
 * tensor sizes against llm.c's GPT-2 124M parameter count, fp32 write → ranged read round trips,
 * bf16 (version 5) reading from a file written by hand, the temp-file + rename guarantee, token
 * reads with wrap-around, a glob of shard files read as one stream (boundaries, wrap, errors
 * naming the shard), uint32 token files (llm.c's Llama 3 header) beside the uint16 ones, and the
 * error for every kind of bad file. Files live in a mkdtemp
 * directory that is removed at the end. */
#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "models/gpt2/llmc_files.h"
#include "check.h"

static char dir[64];

static const char *in_dir(const char *name)
{
    static char buf[4][64 + 512];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

/* Number of directory entries (besides . and ..) and whether any is a leftover temp file. */
static int count_entries(bool *tmp_left)
{
    DIR *d = opendir(dir);
    int n = 0;
    *tmp_left = false;
    for (struct dirent *e; d && (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        n++;
        if (strstr(e->d_name, ".tmp"))
            *tmp_left = true;
    }
    if (d)
        closedir(d);
    return n;
}

static void remove_dir(void)
{
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            unlink(in_dir(e->d_name));
    if (d)
        closedir(d);
    rmdir(dir);
}

static void write_raw(const char *path, const int32_t hdr[256], const void *data, size_t bytes)
{
    FILE *f = fopen(path, "wb");
    if (!f) {
        perror(path);
        exit(2);
    }
    fwrite(hdr, 4, 256, f);
    if (bytes)
        fwrite(data, 1, bytes, f);
    fclose(f);
}

static long long file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (long long)sb.st_size : -1;
}

/* Reads a whole file into a malloc'd buffer. */
static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    long long n = file_size(path);
    unsigned char *b = malloc(n > 0 ? (size_t)n : 1);
    *len = f && b ? fread(b, 1, (size_t)n, f) : 0;
    if (f)
        fclose(f);
    return b;
}

static void spit(const char *path, const unsigned char *b, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(b, 1, len, f);
        fclose(f);
    }
}

#define CHECK_ERR(st, err, code, sub)                                                              \
    CHECK((st) == (code) && strstr((err).msg, (sub)), "expected %s containing '%s', got %s: %s",   \
          zc_status_name(code), sub, zc_status_name(st), (err).msg)

static float val(int t, size_t i, float salt)
{
    return (float)t * 1000.0f + (float)i * 0.5f + salt;
}

static const llmc_header tiny = {.version = 3,
                                 .max_seq_len = 8,
                                 .vocab_size = 10,
                                 .padded_vocab_size = 16,
                                 .num_layers = 2,
                                 .num_heads = 2,
                                 .channels = 4};

/* Writes every tensor of `tiny` (values val(t, i, salt)) in three pieces, last piece first. */
static zc_status write_tiny(const char *path, float salt, zc_err *err)
{
    llmc_ckpt_writer *w = malloc(sizeof *w);
    size_t sizes[LLMC_NTENSORS];
    llmc_tensor_sizes(&tiny, sizes);
    zc_status st = llmc_ckpt_create(w, path, &tiny, err);
    for (int t = LLMC_NTENSORS - 1; t >= 0 && !st; t--) {
        float *buf = malloc(sizes[t] * sizeof *buf);
        for (size_t i = 0; i < sizes[t]; i++)
            buf[i] = val(t, i, salt);
        size_t a = sizes[t] / 3, b = 2 * sizes[t] / 3;
        st = llmc_ckpt_write(w, t, b, sizes[t] - b, buf + b, err);
        if (!st)
            st = llmc_ckpt_write(w, t, 0, a, buf, err);
        if (!st)
            st = llmc_ckpt_write(w, t, a, b - a, buf + a, err);
        free(buf);
    }
    if (!st)
        st = llmc_ckpt_finish(w, err);
    else
        llmc_ckpt_abort(w);
    free(w);
    return st;
}

/* Reads tensor t's elements [first, first+n) and compares with val(t, ·, salt). */
static bool range_ok(const char *path, const llmc_header *h, int t, size_t first, size_t n,
                     float salt)
{
    zc_err err = {0};
    float *buf = malloc((n ? n : 1) * sizeof *buf);
    bool ok = llmc_ckpt_read(path, h, t, first, n, buf, &err) == ZC_OK;
    for (size_t i = 0; i < n && ok; i++)
        ok = buf[i] == val(t, first + i, salt);
    if (!ok)
        fprintf(stderr, "  tensor %s [%zu, %zu): %s\n", llmc_tensor_name(t), first, first + n,
                err.msg);
    free(buf);
    return ok;
}

static void test_names_and_sizes(void)
{
    CHECK(!strcmp(llmc_tensor_name(0), "wte") && !strcmp(llmc_tensor_name(4), "qkvw") &&
              !strcmp(llmc_tensor_name(12), "fcprojw") && !strcmp(llmc_tensor_name(15), "lnfb"),
          "tensor names");
    CHECK(llmc_tensor_name(16) == NULL && llmc_tensor_name(-1) == NULL, "name out of range");
    /* llm.c prints "num_parameters: 124475904" for gpt2_124M.bin */
    llmc_header g = {.version = 3,
                     .max_seq_len = 1024,
                     .vocab_size = 50257,
                     .padded_vocab_size = 50304,
                     .num_layers = 12,
                     .num_heads = 12,
                     .channels = 768};
    size_t s[LLMC_NTENSORS];
    llmc_tensor_sizes(&g, s);
    CHECK(llmc_num_params(&g) == 124475904, "124M params: %zu", llmc_num_params(&g));
    CHECK(s[0] == 50304u * 768 && s[1] == 1024u * 768 && s[4] == 12u * 3 * 768 * 768 &&
              s[5] == 12u * 3 * 768 && s[10] == 12u * 4 * 768 * 768 && s[12] == s[10] &&
              s[14] == 768 && s[15] == 768,
          "124M tensor sizes");
}

static void test_round_trip(void)
{
    zc_err err = {0};
    const char *path = in_dir("a.bin");
    zc_status st = write_tiny(path, 0.0f, &err);
    CHECK(st == ZC_OK, "write tiny checkpoint: %s", err.msg);
    bool tmp_left;
    CHECK(count_entries(&tmp_left) == 1 && !tmp_left, "only a.bin in the directory");
    CHECK(file_size(path) == 1024 + 4 * (long long)llmc_num_params(&tiny), "file size %lld",
          file_size(path));

    llmc_header h;
    st = llmc_ckpt_read_header(path, &h, &err);
    CHECK(st == ZC_OK && h.version == 3 && h.max_seq_len == 8 && h.vocab_size == 10 &&
              h.padded_vocab_size == 16 && h.num_layers == 2 && h.num_heads == 2 && h.channels == 4,
          "header round trip: %s", err.msg);
    size_t sizes[LLMC_NTENSORS];
    llmc_tensor_sizes(&h, sizes);
    bool full = true, part = true;
    for (int t = 0; t < LLMC_NTENSORS; t++) {
        full = full && range_ok(path, &h, t, 0, sizes[t], 0.0f);
        part = part && range_ok(path, &h, t, 1, sizes[t] - 2, 0.0f) &&
               range_ok(path, &h, t, sizes[t] - 1, 1, 0.0f) && range_ok(path, &h, t, 2, 0, 0.0f);
    }
    CHECK(full, "every tensor reads back in full");
    CHECK(part, "partial ranges read back");
    /* layer 1's slab of qkvw is elements [3C·C, 2·3C·C) */
    CHECK(range_ok(path, &h, 4, 3 * 4 * 4, 3 * 4 * 4, 0.0f), "qkvw layer 1 slab");
}

static void test_replace_only_when_complete(void)
{
    zc_err err = {0};
    const char *path = in_dir("a.bin");
    llmc_header h;
    bool tmp_left;
    /* a writer that misses one element: finish refuses and a.bin keeps its old contents */
    llmc_ckpt_writer *w = malloc(sizeof *w);
    size_t sizes[LLMC_NTENSORS];
    llmc_tensor_sizes(&tiny, sizes);
    zc_status st = llmc_ckpt_create(w, path, &tiny, &err);
    float buf[256];
    for (int t = 0; t < LLMC_NTENSORS && !st; t++) {
        size_t n = t == 15 ? sizes[t] - 1 : sizes[t];
        for (size_t i = 0; i < n; i++)
            buf[i] = -1.0f;
        st = llmc_ckpt_write(w, t, 0, n, buf, &err);
    }
    CHECK(st == ZC_OK, "partial writes: %s", err.msg);
    st = llmc_ckpt_finish(w, &err);
    CHECK_ERR(st, err, ZC_ESTATE, "tensor lnfb has 3 of 4 elements written");
    CHECK(count_entries(&tmp_left) == 1 && !tmp_left, "no temp file after a refused finish");
    CHECK(llmc_ckpt_read_header(path, &h, &err) == ZC_OK && range_ok(path, &h, 0, 0, 64, 0.0f),
          "a.bin unchanged after a refused finish");

    /* abort: the temp file goes, a.bin stays; a second abort is harmless */
    st = llmc_ckpt_create(w, path, &tiny, &err);
    CHECK(st == ZC_OK && count_entries(&tmp_left) == 2 && tmp_left, "create makes a temp file");
    if (!st)
        st = llmc_ckpt_write(w, 0, 0, 4, buf, &err);
    llmc_ckpt_abort(w);
    llmc_ckpt_abort(w);
    CHECK(count_entries(&tmp_left) == 1 && !tmp_left, "abort removes the temp file");
    CHECK(range_ok(path, &h, 0, 0, 64, 0.0f), "a.bin unchanged after abort");
    free(w);

    /* a complete writer replaces it */
    st = write_tiny(path, 0.25f, &err);
    CHECK(st == ZC_OK && range_ok(path, &h, 0, 0, 64, 0.25f) && range_ok(path, &h, 15, 0, 4, 0.25f),
          "a complete writer replaces the file: %s", err.msg);

    /* shapes the writer refuses */
    llmc_header bad = tiny;
    bad.channels = 5;
    st = llmc_ckpt_create(w = malloc(sizeof *w), in_dir("b.bin"), &bad, &err);
    CHECK_ERR(st, err, ZC_EINVAL, "channels 5 is not a multiple of num_heads 2");
    bad = tiny;
    bad.version = 5;
    st = llmc_ckpt_create(w, in_dir("b.bin"), &bad, &err);
    CHECK_ERR(st, err, ZC_EINVAL, "only 3 = fp32");
    llmc_ckpt_abort(w); /* no-op after a failed create */
    free(w);
    st = llmc_ckpt_create(w = malloc(sizeof *w), in_dir("no/such/dir/c.bin"), &tiny, &err);
    CHECK_ERR(st, err, ZC_EIO, "cannot write");
    free(w);
    CHECK(count_entries(&tmp_left) == 1, "refused creates leave nothing");
}

/* bf16 of k/4 for |k| < 256 is exact; the file holds the fp32's top 16 bits */
static float bval(int t, size_t i)
{
    return (float)((int)(t * 7 + i % 97) - 100) * 0.25f;
}

static void test_bf16(void)
{
    zc_err err = {0};
    /* wte is 256·64 = 16384 elements, more than the reader's bounce buffer */
    const llmc_header h5 = {.version = 5,
                            .max_seq_len = 4,
                            .vocab_size = 200,
                            .padded_vocab_size = 256,
                            .num_layers = 1,
                            .num_heads = 4,
                            .channels = 64};
    size_t sizes[LLMC_NTENSORS], total = llmc_num_params(&h5);
    llmc_tensor_sizes(&h5, sizes);
    uint16_t *data = malloc(total * 2);
    size_t k = 0;
    for (int t = 0; t < LLMC_NTENSORS; t++)
        for (size_t i = 0; i < sizes[t]; i++) {
            float f = bval(t, i);
            uint32_t u;
            memcpy(&u, &f, 4);
            data[k++] = (uint16_t)(u >> 16);
        }
    int32_t hdr[256] = {20240326, 5, 4, 200, 1, 4, 64, 256};
    const char *path = in_dir("v5.bin");
    write_raw(path, hdr, data, total * 2);
    free(data);

    llmc_header h;
    zc_status st = llmc_ckpt_read_header(path, &h, &err);
    CHECK(st == ZC_OK && h.version == 5 && h.channels == 64 && h.padded_vocab_size == 256,
          "v5 header: %s", err.msg);
    bool ok = st == ZC_OK;
    float *buf = malloc(sizes[0] * sizeof *buf);
    for (int t = 0; t < LLMC_NTENSORS && ok; t++) {
        size_t first = t == 0 ? 100 : 1, n = t == 0 ? 10000 : sizes[t] - 2;
        ok = llmc_ckpt_read(path, &h, t, 0, sizes[t], buf, &err) == ZC_OK;
        for (size_t i = 0; i < sizes[t] && ok; i++)
            ok = buf[i] == bval(t, i);
        ok = ok && llmc_ckpt_read(path, &h, t, first, n, buf, &err) == ZC_OK;
        for (size_t i = 0; i < n && ok; i++)
            ok = buf[i] == bval(t, first + i);
        if (!ok)
            fprintf(stderr, "  bf16 tensor %s: %s\n", llmc_tensor_name(t), err.msg);
    }
    CHECK(ok, "v5 (bf16) tensors read back as fp32, in full and in ranges");
    free(buf);

    /* bf16 0x4049 is 3.140625: the widened value is those bits followed by 16 zeros */
    uint16_t one = 0x4049;
    int32_t hdr1[256] = {20240326, 5, 1, 1, 1, 1, 1, 1};
    uint16_t all[29]; /* L = C = 1: 29 elements */
    for (int i = 0; i < 29; i++)
        all[i] = one;
    write_raw(in_dir("pi.bin"), hdr1, all, sizeof all);
    float f = 0;
    st = llmc_ckpt_read_header(in_dir("pi.bin"), &h, &err);
    if (!st)
        st = llmc_ckpt_read(in_dir("pi.bin"), &h, 6, 0, 1, &f, &err);
    CHECK(st == ZC_OK && f == 3.140625f, "bf16 widening: %g (%s)", (double)f, err.msg);
}

static void test_bad_checkpoints(void)
{
    zc_err err = {0};
    llmc_header h;
    size_t len;
    unsigned char *good = slurp(in_dir("a.bin"), &len);
    const char *p = in_dir("bad.bin");
    int32_t w;

    memcpy(good, &(int32_t){12345}, 4);
    spit(p, good, len);
    zc_status st = llmc_ckpt_read_header(p, &h, &err);
    CHECK_ERR(st, err, ZC_EINVAL, "bad.bin: bad magic 12345 (expected 20240326: not an llm.c");
    memcpy(good, &(int32_t){20240326}, 4);

    memcpy(good + 4, &(int32_t){4}, 4);
    spit(p, good, len);
    st = llmc_ckpt_read_header(p, &h, &err);
    CHECK_ERR(st, err, ZC_EINVAL, "bad.bin: unsupported version 4 (expected 3 = fp32 or 5 = bf16");
    memcpy(good + 4, &(int32_t){3}, 4);

    spit(p, good, len - 8);
    st = llmc_ckpt_read_header(p, &h, &err);
    char want[160];
    snprintf(want, sizeof want, "bad.bin: truncated: %zu bytes, expected %zu for version 3 (",
             len - 8, len);
    CHECK_ERR(st, err, ZC_EINVAL, want);
    CHECK(strstr(err.msg, "L=2, NH=2, C=4"), "truncation message gives the shape: %s", err.msg);

    spit(p, good, 100);
    st = llmc_ckpt_read_header(p, &h, &err);
    CHECK_ERR(st, err, ZC_EINVAL, "truncated: 100 bytes, shorter than the 1024-byte");

    unsigned char *longer = malloc(len + 2);
    memcpy(longer, good, len);
    longer[len] = longer[len + 1] = 0;
    spit(p, longer, len + 2);
    free(longer);
    st = llmc_ckpt_read_header(p, &h, &err);
    CHECK_ERR(st, err, ZC_EINVAL, "2 bytes of trailing data");

    w = 3; /* channels 4, heads 3 */
    memcpy(good + 20, &w, 4);
    spit(p, good, len);
    st = llmc_ckpt_read_header(p, &h, &err);
    CHECK_ERR(st, err, ZC_EINVAL, "channels 4 is not a multiple of num_heads 3");
    w = 2;
    memcpy(good + 20, &w, 4);

    w = 9; /* Vp 9 < V 10 */
    memcpy(good + 28, &w, 4);
    spit(p, good, len);
    st = llmc_ckpt_read_header(p, &h, &err);
    CHECK_ERR(st, err, ZC_EINVAL, "padded_vocab_size 9 < vocab_size 10");

    int32_t hdr[256] = {20240326, 3, 8, 10, 0, 2, 4, 16};
    write_raw(p, hdr, NULL, 0);
    st = llmc_ckpt_read_header(p, &h, &err);
    CHECK_ERR(st, err, ZC_EINVAL, "num_layers = 0 (must be > 0)");

    int32_t huge[256] = {20240326, 3, 1 << 30, 1 << 30, 1 << 30, 1, 1 << 30, 1 << 30};
    write_raw(p, huge, NULL, 0);
    st = llmc_ckpt_read_header(p, &h, &err);
    CHECK_ERR(st, err, ZC_EINVAL, "tensor sizes overflow");

    int32_t tokhdr[256] = {20240520, 1, 1};
    write_raw(p, tokhdr, "ab", 2);
    st = llmc_ckpt_read_header(p, &h, &err);
    CHECK_ERR(st, err, ZC_EINVAL, "it is an llm.c token file");

    st = llmc_ckpt_read_header(in_dir("missing.bin"), &h, &err);
    CHECK_ERR(st, err, ZC_EIO, "missing.bin: cannot open");
    st = llmc_ckpt_read_header(dir, &h, &err);
    CHECK_ERR(st, err, ZC_EIO, "not a regular file");
    free(good);
    unlink(p);
}

/* Reads of a token stream: n tokens from `first`, each read in one call into got. */
typedef struct {
    size_t first, n;
} read_case;

/* Each case read from t must be tok[(first + i) mod N], the stream's tokens wrapping. */
static void check_reads(const llmc_tokens *t, const uint16_t *tok, size_t N, const read_case *cases,
                        size_t ncases, int *got, const char *what)
{
    for (size_t c = 0; c < ncases; c++) {
        zc_err err = {0};
        zc_status r = llmc_tokens_read(t, cases[c].first, cases[c].n, got, 256, &err);
        bool ok = r == ZC_OK;
        for (size_t i = 0; i < cases[c].n && ok; i++)
            ok = got[i] == tok[(cases[c].first + i) % N];
        CHECK(ok, "%s first=%zu n=%zu: %s", what, cases[c].first, cases[c].n, err.msg);
    }
}

static void test_tokens(void)
{
    zc_err err = {0};
    enum { N = 20000 }; /* more than the reader's bounce buffer */
    uint16_t *tok = malloc(N * sizeof *tok);
    for (size_t i = 0; i < N; i++)
        tok[i] = (uint16_t)((i * 7 + i / 256) % 256);
    const char *path = in_dir("tok.bin");
    zc_status st = llmc_tokens_write(path, tok, 2, N, &err);
    CHECK(st == ZC_OK && file_size(path) == 1024 + 2 * N, "write tokens: %s", err.msg);

    llmc_tokens t;
    st = llmc_tokens_open(path, &t, &err);
    CHECK(st == ZC_OK && t.ntok == N, "open tokens: %s", err.msg);
    int *got = malloc(3 * N * sizeof *got);
    const read_case cases[] = {{0, N}, {N - 3, 10}, {5, 1}, {2 * N + 500, 2 * N + 100}, {N - 1, 1}};
    if (!st)
        check_reads(&t, tok, N, cases, sizeof cases / sizeof cases[0], got,
                    "token read (wrapping modulo ntok)");
    llmc_tokens_close(&t);
    llmc_tokens_close(&t);
    CHECK(t.nshards == 0 && !t.shard, "close is idempotent");

    /* an out-of-vocabulary token is refused with its position, also when reached by wrapping */
    tok[17] = 300;
    st = llmc_tokens_write(path, tok, 2, N, &err);
    if (!st)
        st = llmc_tokens_open(path, &t, &err);
    CHECK(st == ZC_OK, "rewrite tokens: %s", err.msg);
    if (!st) {
        st = llmc_tokens_read(&t, 0, 20, got, 256, &err);
        CHECK_ERR(st, err, ZC_EINVAL, "tok.bin: token id 300 at position 17 is out of range");
        st = llmc_tokens_read(&t, N - 2, 25, got, 256, &err);
        CHECK_ERR(st, err, ZC_EINVAL, "at position 17");
        st = llmc_tokens_read(&t, 18, 100, got, 256, &err);
        CHECK(st == ZC_OK, "a range without the bad token reads: %s", err.msg);
        st = llmc_tokens_read(&t, 0, 20, got, 301, &err);
        CHECK(st == ZC_OK && got[17] == 300, "a larger vocabulary accepts it: %s", err.msg);
        llmc_tokens_close(&t);
    }

    /* bad files */
    size_t len;
    unsigned char *good = slurp(path, &len);
    const char *p = in_dir("badtok.bin");
    spit(p, good, len - 1);
    st = llmc_tokens_open(p, &t, &err);
    CHECK_ERR(st, err, ZC_EINVAL, "badtok.bin: truncated: 41023 bytes, expected 41024 for 20000");
    CHECK(t.nshards == 0 && !t.shard, "no descriptor after a failed open");
    int32_t hdr0[256] = {20240520, 1, 0};
    write_raw(p, hdr0, NULL, 0);
    st = llmc_tokens_open(p, &t, &err);
    CHECK_ERR(st, err, ZC_EINVAL, "header claims 0 tokens");
    int32_t hdrm[256] = {777, 1, 1};
    write_raw(p, hdrm, "ab", 2);
    st = llmc_tokens_open(p, &t, &err);
    CHECK_ERR(st, err, ZC_EINVAL,
              "bad magic 777 (expected 20240520 or 20240801: not an llm.c token file");
    int32_t hdrv[256] = {20240520, 2, 1};
    write_raw(p, hdrv, "ab", 2);
    st = llmc_tokens_open(p, &t, &err);
    CHECK_ERR(st, err, ZC_EINVAL, "unsupported version 2 for magic 20240520 (expected 1 = uint16");
    st = llmc_tokens_open(in_dir("a.bin"), &t, &err);
    CHECK_ERR(st, err, ZC_EINVAL, "it is an llm.c GPT-2 checkpoint");
    st = llmc_tokens_open(in_dir("nope.bin"), &t, &err);
    CHECK_ERR(st, err, ZC_EIO, "nope.bin: cannot open");
    st = llmc_tokens_write(p, tok, 2, 0, &err);
    CHECK_ERR(st, err, ZC_EINVAL, "a token file holds 1 to");
    st = llmc_tokens_write(in_dir("no/dir/x.bin"), tok, 2, 1, &err);
    CHECK_ERR(st, err, ZC_EIO, "cannot write");
    bool tmp_left;
    count_entries(&tmp_left);
    CHECK(!tmp_left, "no temp files left behind");
    free(good);
    free(got);
    free(tok);
}

/* A glob of shards reads as one stream: their concatenation in byte order of the names, crossing
 * from file to file and wrapping from the last to the first, as the single file it was cut from;
 * errors name the shard file and the position in it. */
static void test_token_shards(void)
{
    zc_err err = {0};
    enum { N = 20000 };
    uint16_t *tok = malloc(N * sizeof *tok);
    for (size_t i = 0; i < N; i++)
        tok[i] = (uint16_t)((i * 13 + i / 300) % 256);
    /* cut at arbitrary tokens, one shard of a single token; written last-first so the directory
     * order is not the name order; "sh_B" sorts before "sh_a" in byte order */
    const size_t cut[] = {0, 7001, 7002, 16555, N};
    const char *names[] = {"sh_B.bin", "sh_a.bin", "sh_b.bin", "sh_c.bin"};
    zc_status st = ZC_OK;
    for (int i = 3; i >= 0 && !st; i--)
        st = llmc_tokens_write(in_dir(names[i]), tok + cut[i], 2, cut[i + 1] - cut[i], &err);
    CHECK(st == ZC_OK, "write shards: %s", err.msg);
    llmc_tokens t;
    st = llmc_tokens_open(in_dir("sh_*.bin"), &t, &err);
    CHECK(st == ZC_OK && t.ntok == N && t.nshards == 4, "open the glob: %s (%zu tokens, %d files)",
          err.msg, st ? 0 : t.ntok, st ? 0 : t.nshards);
    CHECK(!st && strstr(t.path, "sh_*.bin") && strstr(t.shard[0].path, "sh_B.bin") &&
              strstr(t.shard[3].path, "sh_c.bin") && t.shard[2].first == 7002,
          "shards in byte order of their names, with their stream offsets");
    int *got = malloc(3 * N * sizeof *got);
    const read_case cases[] = {{0, N},        {6990, 20},     {7001, 1},
                               {7000, 3},     {7002, 9553},   {16550, 3460},
                               {N - 5, 7010}, {N + 7001, 2},  {2 * N + 500, 2 * N + 100},
                               {N - 1, 1},    {3 * N - 1, 3}, {16554, 2}};
    if (!st)
        check_reads(&t, tok, N, cases, sizeof cases / sizeof cases[0], got,
                    "shard read (across files, wrapping)");
    llmc_tokens_close(&t);
    llmc_tokens_close(&t);
    CHECK(t.nshards == 0 && !t.shard, "close is idempotent");

    /* an out-of-vocabulary token: named by its shard and its position in that shard */
    tok[16555 + 42] = 999;
    st = llmc_tokens_write(in_dir("sh_c.bin"), tok + 16555, 2, N - 16555, &err);
    if (!st)
        st = llmc_tokens_open(in_dir("sh_*.bin"), &t, &err);
    CHECK(st == ZC_OK, "rewrite a shard: %s", err.msg);
    if (!st) {
        st = llmc_tokens_read(&t, 16000, 1000, got, 256, &err);
        CHECK_ERR(st, err, ZC_EINVAL, "sh_c.bin: token id 999 at position 42 is out of range");
        llmc_tokens_close(&t);
    }

    /* one bad shard fails the whole set, naming it; nothing stays open */
    int32_t hdr0[256] = {20240520, 1, 0};
    write_raw(in_dir("sh_b.bin"), hdr0, NULL, 0);
    st = llmc_tokens_open(in_dir("sh_*.bin"), &t, &err);
    CHECK_ERR(st, err, ZC_EINVAL, "sh_b.bin: header claims 0 tokens");
    CHECK(t.nshards == 0 && !t.shard, "no descriptor after a failed glob open");
    st = llmc_tokens_open(in_dir("none_*.bin"), &t, &err);
    CHECK_ERR(st, err, ZC_EINVAL, "none_*.bin: no file matches this pattern");
    /* a plain path with a glob character that exists is that file */
    st = llmc_tokens_write(in_dir("odd[1].bin"), tok, 2, 5, &err);
    if (!st)
        st = llmc_tokens_open(in_dir("odd[1].bin"), &t, &err);
    CHECK(st == ZC_OK && t.nshards == 1 && t.ntok == 5, "an existing odd[1].bin opens: %s",
          err.msg);
    if (!st)
        llmc_tokens_close(&t);

    /* more tokens than an int32 count holds (sparse files: no disk cost): say so, and the way out
     */
    const struct {
        const char *name;
        uint64_t n;
        const char *want;
    } big[] = {{"neg.bin", (1ULL << 31) + 5, "neg.bin: 2147483653 tokens by its size"},
               {"wrap.bin", (1ULL << 32) + 100, "wrap.bin: 4294967396 tokens by its size"}};
    for (size_t i = 0; i < 2; i++) {
        int32_t h[256] = {20240520, 1, (int32_t)(uint32_t)big[i].n};
        write_raw(in_dir(big[i].name), h, NULL, 0);
        CHECK(truncate(in_dir(big[i].name), (off_t)(1024 + 2 * big[i].n)) == 0, "truncate %s",
              big[i].name);
        st = llmc_tokens_open(in_dir(big[i].name), &t, &err);
        CHECK_ERR(st, err, ZC_EINVAL, big[i].want);
        CHECK(strstr(err.msg, "more than an llm.c token file's int32 count (2147483647) can hold; "
                              "split it into shards (train --data takes a glob of shards)"),
              "the way out: %s", err.msg);
        unlink(in_dir(big[i].name));
    }
    free(got);
    free(tok);
}

/* uint32 token files (llm.c's "llama-3" flavour of data_common.py: magic 20240801, version 7),
 * for vocabularies whose ids pass 65,535: the header and bytes as llm.c writes them (checked
 * against a file written by hand, not by the module), reads of ids up to Qwen2.5's 151,935, a
 * glob mixing the two widths, bad pairings of magic and version, and the width chosen by
 * vocabulary size (GPT-2's files stay uint16, byte for byte). */
static void test_tokens32(void)
{
    zc_err err = {0};
    CHECK(llmc_tokens_width(256) == 2 && llmc_tokens_width(50257) == 2 &&
              llmc_tokens_width(65536) == 2 && llmc_tokens_width(65537) == 4 &&
              llmc_tokens_width(128256) == 4 && llmc_tokens_width(151936) == 4,
          "width by vocabulary: uint16 up to 65536 tokens, uint32 above");
    enum { N = 20000, V = 151936 };
    uint32_t *tok = malloc(N * sizeof *tok);
    for (size_t i = 0; i < N; i++)
        tok[i] = (uint32_t)((i * 7919 + i / 3) % V);
    tok[1] = V - 1;
    tok[2] = 65535;
    tok[3] = 65536;
    tok[4] = 128000; /* Llama 3's <|begin_of_text|> */
    const char *path = in_dir("tok32.bin");
    zc_status st = llmc_tokens_write(path, tok, 4, N, &err);
    CHECK(st == ZC_OK && file_size(path) == 1024 + 4 * N, "write uint32 tokens: %s", err.msg);
    /* the same bytes as llm.c's write_datafile(..., "llama-3") */
    int32_t hdr[256] = {20240801, 7, N};
    write_raw(in_dir("hand32.bin"), hdr, tok, 4 * (size_t)N);
    size_t la, lb;
    unsigned char *a = slurp(path, &la), *b = slurp(in_dir("hand32.bin"), &lb);
    CHECK(la == lb && !memcmp(a, b, la), "uint32 file is llm.c's layout byte for byte");
    free(a);
    free(b);

    int *got = malloc(3 * N * sizeof *got);
    llmc_tokens t;
    st = llmc_tokens_open(in_dir("hand32.bin"), &t, &err);
    CHECK(st == ZC_OK && t.ntok == N && t.shard[0].width == 4, "open a uint32 file: %s", err.msg);
    if (!st) {
        bool ok = true;
        for (size_t c = 0; c < 3 && ok; c++) { /* whole, wrapped, in bounce-buffer pieces */
            const size_t first[] = {0, N - 3, 2 * N + 17}, n[] = {N, 10, 2 * N + 100};
            st = llmc_tokens_read(&t, first[c], n[c], got, V, &err);
            for (size_t i = 0; !st && i < n[c]; i++)
                ok = ok && got[i] == (int)tok[(first[c] + i) % N];
            ok = ok && !st;
        }
        CHECK(ok, "uint32 reads give every id, wrapping: %s", err.msg);
        st = llmc_tokens_read(&t, 0, 5, got, 128256, &err);
        CHECK_ERR(st, err, ZC_EINVAL,
                  "hand32.bin: token id 151935 at position 1 is out of range for vocab_size "
                  "128256");
        llmc_tokens_close(&t);
    }

    /* GPT-2's width: the uint16 file exactly as before (magic 20240520, version 1) */
    uint16_t t16[3] = {50256, 15496, 995};
    st = llmc_tokens_write(in_dir("gpt2.bin"), t16, llmc_tokens_width(50257), 3, &err);
    int32_t h16[256] = {20240520, 1, 3};
    write_raw(in_dir("hand16.bin"), h16, t16, sizeof t16);
    a = slurp(in_dir("gpt2.bin"), &la);
    b = slurp(in_dir("hand16.bin"), &lb);
    CHECK(!st && la == 1030 && la == lb && !memcmp(a, b, la), "uint16 file unchanged: %s", err.msg);
    free(a);
    free(b);

    /* a glob may mix the widths: one stream, each shard read at its own width */
    st = llmc_tokens_write(in_dir("mix_0.bin"), t16, 2, 3, &err);
    if (!st)
        st = llmc_tokens_write(in_dir("mix_1.bin"), tok, 4, 5, &err);
    if (!st)
        st = llmc_tokens_open(in_dir("mix_*.bin"), &t, &err);
    CHECK(st == ZC_OK && t.ntok == 8 && t.nshards == 2, "open a mixed glob: %s", err.msg);
    if (!st) {
        st = llmc_tokens_read(&t, 1, 8, got, V, &err);
        const int want[8] = {15496, 995, (int)tok[0], V - 1, 65535, 65536, 128000, 50256};
        CHECK(!st && !memcmp(got, want, sizeof want), "mixed glob reads across widths: %s",
              err.msg);
        llmc_tokens_close(&t);
    }

    /* bad files: the magic and version must pair; the size counts 4 bytes a token */
    const char *p = in_dir("bad32.bin");
    int32_t hv1[256] = {20240801, 1, 1};
    write_raw(p, hv1, tok, 4);
    st = llmc_tokens_open(p, &t, &err);
    CHECK_ERR(st, err, ZC_EINVAL,
              "bad32.bin: unsupported version 1 for magic 20240801 (expected 7 = uint32 tokens)");
    int32_t hv7[256] = {20240520, 7, 2};
    write_raw(p, hv7, tok, 4);
    st = llmc_tokens_open(p, &t, &err);
    CHECK_ERR(st, err, ZC_EINVAL, "unsupported version 7 for magic 20240520 (expected 1 = uint16");
    int32_t h2[256] = {20240801, 7, 2};
    write_raw(p, h2, tok, 6);
    st = llmc_tokens_open(p, &t, &err);
    CHECK_ERR(st, err, ZC_EINVAL, "bad32.bin: truncated: 1030 bytes, expected 1032 for 2 uint32");
    write_raw(p, h2, tok, 10);
    st = llmc_tokens_open(p, &t, &err);
    CHECK_ERR(st, err, ZC_EINVAL, "expected 1032 for 2 uint32 tokens: 2 bytes of trailing data");
    /* an int32 count's worth of uint32 tokens by size (sparse: no disk cost) */
    int32_t hb[256] = {20240801, 7, 5};
    write_raw(p, hb, NULL, 0);
    CHECK(truncate(p, (off_t)(1024 + 4 * ((1ULL << 31) + 1))) == 0, "truncate");
    st = llmc_tokens_open(p, &t, &err);
    CHECK_ERR(st, err, ZC_EINVAL, "bad32.bin: 2147483649 tokens by its size");
    unlink(p);
    free(got);
    free(tok);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/zc_llmc_XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 2;
    }
    test_names_and_sizes();
    test_round_trip();
    test_replace_only_when_complete();
    test_bf16();
    test_bad_checkpoints();
    test_tokens();
    test_token_shards();
    test_tokens32();
    remove_dir();
    return check_summary();
}
