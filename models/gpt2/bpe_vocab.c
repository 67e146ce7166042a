/* bpe_vocab.c — loading and validating GPT-2 BPE vocabularies (bpe_vocab.h): encoder.json with
 * cJSON, vocab.bpe line by line, llm.c's gpt2_tokenizer.bin, and the two hash tables (token
 * bytes → id, merge pair → rank and result). A tokenizer.json is hf_tokenizer.c's, which fills
 * the same tables through the helpers exported here; tokenizer_files.c tells the two apart. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "models/gpt2/bpe_pretok.h"
#include "models/gpt2/bpe_vocab.h"
#include "zeroc/durable.h"

#define MAX_TOKENS (1 << 24)

uint64_t bpe_hash(const uint8_t *s, size_t n)
{
    uint64_t h = 0x243F6A8885A308D3ull ^ n;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0x9E3779B97F4A7C15ull;
        h ^= h >> 29;
        s += 8;
        n -= 8;
    }
    uint64_t w = 0;
    for (size_t k = 0; k < n; k++)
        w |= (uint64_t)s[k] << (8 * k);
    h = (h ^ w) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 32;
    return h;
}

int bpe_vocab_find(const bpe_vocab *v, const uint8_t *s, size_t n)
{
    for (size_t i = bpe_hash(s, n) & v->tok_mask;; i = (i + 1) & v->tok_mask) {
        uint32_t slot = v->tok_slot[i];
        if (!slot)
            return -1;
        int id = (int)slot - 1;
        if (v->off[id + 1] - v->off[id] == n && !memcmp(v->bytes + v->off[id], s, n))
            return id;
    }
}

void bpe_vocab_free(bpe_vocab *v)
{
    free(v->hf.added);
    free(v->hf.is_added);
    free(v->off);
    free(v->bytes);
    free(v->tok_slot);
    free(v->merge_key);
    free(v->merge_rank);
    free(v->merge_res);
    memset(v, 0, sizeof *v);
}

static size_t pow2_at_least(size_t n)
{
    size_t p = 1024;
    while (p < n)
        p *= 2;
    return p;
}

/* Reads a whole file (NUL-terminated, *len without the NUL). Opened without blocking
 * (zc_fopen_regular): a FIFO named encoder.json is refused by name, where fopen waited for a
 * writer forever. */
zc_status bpe_read_file(const char *path, char **buf, size_t *len, zc_err *err)
{
    FILE *f = zc_fopen_regular(path, err);
    if (!f)
        return err && err->code ? err->code : ZC_EIO;
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0) {
        fclose(f);
        return zc_err_set(err, ZC_EIO, "%s: cannot open: %s", path, strerror(errno));
    }
    char *b = malloc((size_t)sb.st_size + 1);
    if (!b) {
        fclose(f);
        return zc_err_set(err, ZC_ENOMEM, "%s: out of memory reading %lld bytes", path,
                          (long long)sb.st_size);
    }
    size_t got = fread(b, 1, (size_t)sb.st_size, f);
    int bad = ferror(f);
    fclose(f);
    if (bad || got != (size_t)sb.st_size) {
        free(b);
        return zc_err_set(err, ZC_EIO, "%s: read error", path);
    }
    b[got] = 0;
    *buf = b;
    *len = got;
    return ZC_OK;
}

/* GPT-2's byte-to-unicode map: the code point standing for byte b, and back (-1: none). */
void bpe_byte_unicode_maps(int32_t to_cp[256], int16_t from_cp[512])
{
    for (int i = 0; i < 512; i++)
        from_cp[i] = -1;
    int extra = 0;
    for (int b = 0; b < 256; b++) {
        bool self = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
        to_cp[b] = self ? b : 256 + extra++;
        from_cp[to_cp[b]] = (int16_t)b;
    }
}

/* Decodes a token written through the byte-to-unicode map (UTF-8 s[0..n)) into out (n bytes
 * at most); returns the byte count, or -1 if a character is not one of the map's 256. */
long bpe_unmap_token(const int16_t from_cp[512], const char *s, size_t n, uint8_t *out)
{
    size_t i = 0, k = 0;
    while (i < n) {
        int32_t cp;
        int len = bpe_utf8_decode((const uint8_t *)s + i, n - i, &cp);
        if (!len || cp >= 512 || from_cp[cp] < 0)
            return -1;
        out[k++] = (uint8_t)from_cp[cp];
        i += (size_t)len;
    }
    return (long)k;
}

/* Prints up to 40 bytes of s for a message (control bytes as '?'). */
const char *bpe_shown(const char *s, size_t n, char buf[64])
{
    size_t k = 0;
    for (size_t i = 0; i < n && k < 40; i++)
        buf[k++] = (unsigned char)s[i] < 0x20 ? '?' : s[i];
    if (n > 40) {
        memcpy(buf + k, "...", 3);
        k += 3;
    }
    buf[k] = 0;
    return buf;
}

zc_status bpe_vocab_index(bpe_vocab *v, const char *file, zc_err *err)
{
    size_t cap = pow2_at_least(2 * (size_t)v->n);
    v->tok_slot = calloc(cap, sizeof *v->tok_slot);
    if (!v->tok_slot)
        return zc_err_set(err, ZC_ENOMEM, "out of memory indexing %d tokens", v->n);
    v->tok_mask = cap - 1;
    for (int b = 0; b < 256; b++)
        v->byte_tok[b] = -1;
    for (int id = 0; id < v->n; id++) {
        size_t len;
        const uint8_t *s = bpe_vocab_token(v, id, &len);
        if (len == 0 || (v->hf.is_added && v->hf.is_added[id]))
            continue; /* an id no token has, or an added token: never a BPE result */
        int other = bpe_vocab_find(v, s, len);
        if (other >= 0) {
            char b1[64];
            return zc_err_set(err, ZC_EINVAL, "%s: tokens %d and %d are the same bytes '%s'", file,
                              other, id, bpe_shown((const char *)s, len, b1));
        }
        size_t i = bpe_hash(s, len) & v->tok_mask;
        while (v->tok_slot[i])
            i = (i + 1) & v->tok_mask;
        v->tok_slot[i] = (uint32_t)id + 1;
        if (len == 1)
            v->byte_tok[s[0]] = id;
    }
    const uint8_t eot[] = "<|endoftext|>";
    if (v->eot < 0)
        v->eot = bpe_vocab_find(v, eot, sizeof eot - 1);
    return ZC_OK;
}

zc_status bpe_read_json(const char *path, cJSON **root, zc_err *err)
{
    char *text;
    size_t len;
    zc_status st = bpe_read_file(path, &text, &len, err);
    if (st)
        return st;
    *root = cJSON_ParseWithLength(text, len);
    if (!*root) {
        const char *at = cJSON_GetErrorPtr();
        long pos = at && at >= text && at <= text + len ? (long)(at - text) : -1;
        free(text);
        return zc_err_set(err, ZC_EINVAL, "%s: not valid JSON (near byte %ld)", path, pos);
    }
    free(text);
    return ZC_OK;
}

/* --- encoder.json --- */

static zc_status load_encoder(bpe_vocab *v, const char *path, const int16_t from_cp[512],
                              zc_err *err)
{
    cJSON *root;
    zc_status st = bpe_read_json(path, &root, err);
    if (st)
        return st;
    int n = cJSON_IsObject(root) ? cJSON_GetArraySize(root) : -1;
    if (n < 256 || n > MAX_TOKENS) {
        cJSON_Delete(root);
        if (n < 0)
            return zc_err_set(err, ZC_EINVAL, "%s: expected a JSON object {token: id, ...}", path);
        return zc_err_set(err, ZC_EINVAL, "%s: %d tokens; a byte-level vocabulary has 256 to %d",
                          path, n, MAX_TOKENS);
    }
    /* first pass: sizes and ids */
    uint32_t *tlen = calloc((size_t)n, sizeof *tlen);
    const cJSON **by_id = calloc((size_t)n, sizeof *by_id);
    if (!tlen || !by_id) {
        st = zc_err_set(err, ZC_ENOMEM, "%s: out of memory", path);
        goto out;
    }
    char b1[64], b2[64];
    const cJSON *it;
    cJSON_ArrayForEach(it, root)
    {
        const char *key = it->string;
        double d = cJSON_IsNumber(it) ? it->valuedouble : -1;
        if (!cJSON_IsNumber(it) || d < 0 || d >= n || d != (double)(long)d) {
            st = zc_err_set(err, ZC_EINVAL,
                            "%s: token '%s' has id %s%s; ids must be integers 0..%d (the file "
                            "has %d tokens)",
                            path, bpe_shown(key, strlen(key), b1),
                            cJSON_IsNumber(it) ? "" : "of JSON type ",
                            cJSON_IsNumber(it) ? (snprintf(b2, sizeof b2, "%g", d), b2)
                                               : (cJSON_IsString(it) ? "string" : "non-number"),
                            n - 1, n);
            goto out;
        }
        int id = (int)d;
        if (by_id[id]) {
            st = zc_err_set(err, ZC_EINVAL, "%s: id %d is given to both '%s' and '%s'", path, id,
                            bpe_shown(by_id[id]->string, strlen(by_id[id]->string), b1),
                            bpe_shown(key, strlen(key), b2));
            goto out;
        }
        by_id[id] = it;
        tlen[id] = (uint32_t)strlen(key);
        if (!tlen[id]) {
            st = zc_err_set(err, ZC_EINVAL, "%s: id %d has an empty token", path, id);
            goto out;
        }
    }
    /* second pass, in id order: the bytes */
    size_t total = 0;
    for (int id = 0; id < n; id++)
        total += tlen[id];
    v->n = n;
    v->off = malloc(((size_t)n + 1) * sizeof *v->off);
    v->bytes = malloc(total + 1);
    if (!v->off || !v->bytes || total > UINT32_MAX) {
        st = zc_err_set(err, ZC_ENOMEM, "%s: out of memory", path);
        goto out;
    }
    uint32_t o = 0;
    for (int id = 0; id < n; id++) {
        v->off[id] = o;
        const char *key = by_id[id]->string;
        long got = bpe_unmap_token(from_cp, key, tlen[id], v->bytes + o);
        if (got < 0) {
            st =
                zc_err_set(err, ZC_EINVAL,
                           "%s: token '%s' (id %d) has a character outside GPT-2's byte-to-unicode "
                           "map",
                           path, bpe_shown(key, tlen[id], b1), id);
            goto out;
        }
        o += (uint32_t)got;
    }
    v->off[n] = o;
    st = bpe_vocab_index(v, path, err);
    for (int b = 0; !st && b < 256; b++)
        if (v->byte_tok[b] < 0)
            st = zc_err_set(err, ZC_EINVAL,
                            "%s: byte 0x%02X has no token of its own (a "
                            "byte-level vocabulary needs all 256)",
                            path, b);
out:
    free(tlen);
    free(by_id);
    cJSON_Delete(root);
    return st;
}

/* --- vocab.bpe --- */

bool bpe_vocab_merge_add(bpe_vocab *v, uint32_t left, uint32_t right, int32_t res,
                         uint32_t *dup_rank)
{
    uint64_t key = (uint64_t)left << 32 | right;
    size_t i = (size_t)((key * 0x9E3779B97F4A7C15ull) >> 20) & v->merge_mask;
    for (; v->merge_rank[i] != BPE_NO_MERGE; i = (i + 1) & v->merge_mask)
        if (v->merge_key[i] == key) {
            *dup_rank = v->merge_rank[i];
            return false;
        }
    v->merge_key[i] = key;
    v->merge_rank[i] = (uint32_t)v->nmerges++;
    v->merge_res[i] = res;
    return true;
}

zc_status bpe_vocab_merges_init(bpe_vocab *v, size_t count, const char *file, zc_err *err)
{
    size_t cap = pow2_at_least(2 * count);
    v->merge_key = malloc(cap * sizeof *v->merge_key);
    v->merge_rank = malloc(cap * sizeof *v->merge_rank);
    v->merge_res = malloc(cap * sizeof *v->merge_res);
    if (!v->merge_key || !v->merge_rank || !v->merge_res)
        return zc_err_set(err, ZC_ENOMEM, "%s: out of memory for %zu merges", file, count);
    memset(v->merge_rank, 0xFF, cap * sizeof *v->merge_rank);
    v->merge_mask = cap - 1;
    v->nmerges = 0;
    return ZC_OK;
}

static zc_status load_merges(bpe_vocab *v, const char *path, const int16_t from_cp[512],
                             zc_err *err)
{
    char *text;
    size_t len;
    zc_status st = bpe_read_file(path, &text, &len, err);
    if (st)
        return st;
    size_t lines = 1;
    for (size_t i = 0; i < len; i++)
        lines += text[i] == '\n';
    /* a merged token is at most the two sides: tokens are < 4 GiB together */
    uint8_t *buf = malloc(2 * (size_t)(v->off[v->n]) + 2);
    if ((st = bpe_vocab_merges_init(v, lines, path, err)) || !buf) {
        free(text);
        free(buf);
        return st ? st : zc_err_set(err, ZC_ENOMEM, "%s: out of memory", path);
    }
    char b1[64], b2[64];
    size_t lineno = 0;
    for (char *p = text; p < text + len && !st;) {
        char *eol = memchr(p, '\n', (size_t)(text + len - p));
        if (!eol)
            eol = text + len;
        char *next = eol + 1;
        lineno++;
        if (eol > p && eol[-1] == '\r')
            eol--;
        size_t ll = (size_t)(eol - p);
        if (ll == 0 || (lineno == 1 && ll >= 8 && !memcmp(p, "#version", 8))) {
            p = next;
            continue;
        }
        char *sp = memchr(p, ' ', ll);
        if (!sp || sp == p || sp == eol - 1 || memchr(sp + 1, ' ', (size_t)(eol - sp - 1))) {
            st = zc_err_set(err, ZC_EINVAL,
                            "%s line %zu: expected two tokens separated by one "
                            "space, got '%s'",
                            path, lineno, bpe_shown(p, ll, b1));
            break;
        }
        size_t l1 = (size_t)(sp - p), l2 = (size_t)(eol - sp - 1);
        long n1 = bpe_unmap_token(from_cp, p, l1, buf);
        long n2 = n1 < 0 ? -1 : bpe_unmap_token(from_cp, sp + 1, l2, buf + n1);
        if (n1 < 0 || n2 < 0) {
            st = zc_err_set(err, ZC_EINVAL,
                            "%s line %zu: '%s' has a character outside GPT-2's "
                            "byte-to-unicode map",
                            path, lineno, bpe_shown(p, ll, b1));
            break;
        }
        int left = bpe_vocab_find(v, buf, (size_t)n1);
        int right = bpe_vocab_find(v, buf + n1, (size_t)n2);
        int res = bpe_vocab_find(v, buf, (size_t)(n1 + n2));
        if (left < 0 || right < 0) {
            bool l_bad = left < 0;
            st = zc_err_set(err, ZC_EINVAL,
                            "%s line %zu: merge '%s': '%s' is not a token of the "
                            "vocabulary",
                            path, lineno, bpe_shown(p, ll, b1),
                            l_bad ? bpe_shown(p, l1, b2) : bpe_shown(sp + 1, l2, b2));
            break;
        }
        if (res < 0) {
            st = zc_err_set(err, ZC_EINVAL,
                            "%s line %zu: merge '%s': the joined token is not a "
                            "token of the vocabulary",
                            path, lineno, bpe_shown(p, ll, b1));
            break;
        }
        uint32_t dup = 0;
        if (!bpe_vocab_merge_add(v, (uint32_t)left, (uint32_t)right, res, &dup)) {
            st = zc_err_set(err, ZC_EINVAL, "%s line %zu: merge '%s' repeats merge number %u", path,
                            lineno, bpe_shown(p, ll, b1), dup + 1);
            break;
        }
        p = next;
    }
    if (!st && v->nmerges == 0)
        st = zc_err_set(err, ZC_EINVAL, "%s: no merges", path);
    free(text);
    free(buf);
    return st;
}

/* --- llm.c gpt2_tokenizer.bin --- */

static zc_status load_llmc(bpe_vocab *v, const char *path, zc_err *err)
{
    char *text;
    size_t len;
    zc_status st = bpe_read_file(path, &text, &len, err);
    if (st)
        return st;
    const uint8_t *b = (const uint8_t *)text;
    int32_t hdr[256];
    if (len < sizeof hdr) {
        free(text);
        return zc_err_set(err, ZC_EINVAL,
                          "%s: %zu bytes, shorter than the 1024-byte header of "
                          "an llm.c tokenizer file",
                          path, len);
    }
    memcpy(hdr, b, sizeof hdr);
    if (hdr[0] != BPE_LLMC_MAGIC)
        st = zc_err_set(err, ZC_EINVAL, "%s: magic %d, expected %d (llm.c gpt2_tokenizer.bin)",
                        path, hdr[0], BPE_LLMC_MAGIC);
    else if (hdr[1] != 1 && hdr[1] != 2)
        st = zc_err_set(err, ZC_EINVAL, "%s: version %d, expected 1 or 2", path, hdr[1]);
    else if (hdr[2] < 1 || hdr[2] > MAX_TOKENS)
        st = zc_err_set(err, ZC_EINVAL, "%s: vocabulary size %d, expected 1..%d", path, hdr[2],
                        MAX_TOKENS);
    else if (hdr[1] == 2 && (hdr[3] < 0 || hdr[3] >= hdr[2]))
        st = zc_err_set(err, ZC_EINVAL, "%s: end-of-text token %d outside the vocabulary 0..%d",
                        path, hdr[3], hdr[2] - 1);
    if (st) {
        free(text);
        return st;
    }
    int n = hdr[2];
    v->n = n;
    v->eot = hdr[1] == 2 ? hdr[3] : (n > 50256 ? 50256 : -1);
    v->off = malloc(((size_t)n + 1) * sizeof *v->off);
    v->bytes = malloc(len);
    if (!v->off || !v->bytes) {
        free(text);
        return zc_err_set(err, ZC_ENOMEM, "%s: out of memory", path);
    }
    size_t pos = sizeof hdr;
    uint32_t o = 0;
    for (int id = 0; id < n && !st; id++) {
        if (pos >= len || pos + 1 + b[pos] > len)
            st = zc_err_set(err, ZC_EINVAL, "%s: truncated at token %d of %d (byte %zu)", path, id,
                            n, pos);
        else if (b[pos] == 0)
            st = zc_err_set(err, ZC_EINVAL, "%s: token %d has length 0 (byte %zu)", path, id, pos);
        if (st)
            break;
        v->off[id] = o;
        memcpy(v->bytes + o, b + pos + 1, b[pos]);
        o += b[pos];
        pos += 1 + (size_t)b[pos];
    }
    if (!st && pos != len)
        st = zc_err_set(err, ZC_EINVAL, "%s: %zu bytes after the last of its %d tokens", path,
                        len - pos, n);
    free(text);
    if (st)
        return st;
    v->off[n] = o;
    return bpe_vocab_index(v, path, err);
}

static bool is_file(const char *dir, const char *name, char *out, size_t cap)
{
    snprintf(out, cap, "%s/%s", dir, name);
    struct stat sb;
    return stat(out, &sb) == 0;
}

zc_status bpe_vocab_load(bpe_vocab *v, const char *path, bool need_encode, zc_err *err)
{
    memset(v, 0, sizeof *v);
    v->eot = -1;
    struct stat sb;
    if (stat(path, &sb) != 0)
        return zc_err_set(err, ZC_EIO,
                          "--vocab %s: %s (give a directory with encoder.json and "
                          "vocab.bpe, or vocab.json and merges.txt)",
                          path, strerror(errno));
    zc_status st;
    char a[4200], b[4200];
    if (!S_ISDIR(sb.st_mode)) {
        if (need_encode)
            return zc_err_set(err, ZC_EINVAL,
                              "--vocab %s is a file: encoding needs a directory with "
                              "encoder.json and vocab.bpe (or vocab.json and merges.txt); a "
                              "file (llm.c's gpt2_tokenizer.bin) only decodes",
                              path);
        snprintf(v->source, sizeof v->source, "%s", path);
        st = load_llmc(v, path, err);
    } else if (is_file(path, "encoder.json", a, sizeof a) ||
               is_file(path, "vocab.json", a, sizeof a)) {
        const char *merges = strstr(a, "encoder.json") ? "vocab.bpe" : "merges.txt";
        if (!is_file(path, merges, b, sizeof b))
            return zc_err_set(err, ZC_EIO, "--vocab %s: %s is there but not %s (the merges)", path,
                              a, merges);
        snprintf(v->source, sizeof v->source, "%s + %s", a, merges);
        int16_t from_cp[512];
        int32_t to_cp[256];
        bpe_byte_unicode_maps(to_cp, from_cp);
        st = load_encoder(v, a, from_cp, err);
        if (!st)
            st = load_merges(v, b, from_cp, err);
        v->can_encode = !st;
    } else if (is_file(path, "gpt2_tokenizer.bin", a, sizeof a)) {
        if (need_encode)
            return zc_err_set(err, ZC_EINVAL,
                              "--vocab %s: holds only gpt2_tokenizer.bin, which "
                              "decodes only (no merges); encoding needs "
                              "encoder.json and vocab.bpe",
                              path);
        snprintf(v->source, sizeof v->source, "%s", a);
        st = load_llmc(v, a, err);
    } else {
        return zc_err_set(err, ZC_EIO,
                          "--vocab %s: no encoder.json + vocab.bpe, vocab.json + "
                          "merges.txt or gpt2_tokenizer.bin in this directory (nor a Hugging "
                          "Face tokenizer.json)",
                          path);
    }
    if (st)
        bpe_vocab_free(v);
    return st;
}
