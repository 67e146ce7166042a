/* bpe_encode.c — the BPE merge loop, the per-encoder piece cache, and decoding (bpe_encode.h).
 * Pieces up to SHORT_PIECE bytes merge in an array scanned for the lowest rank (fast for words);
 * longer ones (long runs of spaces, digits-free symbol strings, ...) in a linked list with a
 * binary heap keyed by (rank, position), so a piece of m bytes costs O(m log m), not O(m²).
 * A tokenizer.json's vocabulary (hf_tokenizer.h) first has its added tokens matched, its text cut
 * at invalid UTF-8 and NFC-normalized, then split with its own pattern (encode_hf). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "models/gpt2/bpe_encode.h"
#include "models/gpt2/bpe_pretok.h"
#include "models/gpt2/hf_nfc.h"

#define SHORT_PIECE 128 /* array merge up to this many bytes; also the longest piece cached */
#define CACHE_SLOTS (1u << 16)
#define CACHE_MAX (CACHE_SLOTS / 2) /* entries before the cache is emptied */
#define CACHE_KEY_BYTES ((size_t)CACHE_MAX * 16)
#define CACHE_IDS ((size_t)CACHE_MAX * 8)

typedef struct {
    uint64_t hash;
    uint32_t key_off, ids_off;
    uint16_t key_len; /* 0: empty slot */
    uint16_t nids;
} cache_slot;

struct bpe_encoder {
    const bpe_vocab *v;
    cache_slot *slot;
    uint8_t *keys;
    uint32_t *ids;
    size_t nentries, keys_used, ids_used;
    /* scratch for one piece */
    uint32_t *sym, *rk;
    int32_t *rs, *nxt, *prv;
    uint64_t *heap;
    size_t scratch_cap;
    bool added_first[256]; /* a byte some matchable added token starts with */
    bool any_added;        /* some added token is matched in the text */
    uint8_t *norm;         /* the NFC-normalized text of a run (encode_run) */
    size_t norm_len, norm_cap;
};

zc_status bpe_ids_reserve(bpe_ids *ids, size_t more, zc_err *err)
{
    if (more <= ids->cap - ids->n)
        return ZC_OK;
    size_t cap = ids->cap ? ids->cap : 4096;
    while (cap - ids->n < more) {
        if (cap > SIZE_MAX / 2 / sizeof *ids->id)
            return zc_err_set(err, ZC_ENOMEM, "out of memory after %zu tokens", ids->n);
        cap *= 2;
    }
    uint32_t *p = realloc(ids->id, cap * sizeof *p);
    if (!p)
        return zc_err_set(err, ZC_ENOMEM, "out of memory after %zu tokens", ids->n);
    ids->id = p;
    ids->cap = cap;
    return ZC_OK;
}

void bpe_ids_free(bpe_ids *ids)
{
    free(ids->id);
    memset(ids, 0, sizeof *ids);
}

zc_status bpe_encoder_create(bpe_encoder **out, const bpe_vocab *v, zc_err *err)
{
    ZC_ASSERT(v && v->can_encode);
    bpe_encoder *e = calloc(1, sizeof *e);
    if (e) {
        e->v = v;
        e->slot = calloc(CACHE_SLOTS, sizeof *e->slot);
        e->keys = malloc(CACHE_KEY_BYTES);
        e->ids = malloc(CACHE_IDS * sizeof *e->ids);
    }
    if (!e || !e->slot || !e->keys || !e->ids) {
        bpe_encoder_destroy(e);
        return zc_err_set(err, ZC_ENOMEM, "out of memory creating a BPE encoder");
    }
    for (int i = 0; i < v->hf.nadded; i++) {
        const bpe_added *a = &v->hf.added[i];
        if (!a->special || v->hf.match_special) {
            e->added_first[v->bytes[a->off]] = true;
            e->any_added = true;
        }
    }
    *out = e;
    return ZC_OK;
}

void bpe_encoder_destroy(bpe_encoder *e)
{
    if (!e)
        return;
    free(e->slot);
    free(e->keys);
    free(e->ids);
    free(e->sym);
    free(e->rk);
    free(e->rs);
    free(e->nxt);
    free(e->prv);
    free(e->heap);
    free(e->norm);
    free(e);
}

static zc_status scratch(bpe_encoder *e, size_t m, zc_err *err)
{
    if (m <= e->scratch_cap)
        return ZC_OK;
    size_t cap = m < 256 ? 256 : m;
    free(e->sym);
    free(e->rk);
    free(e->rs);
    free(e->nxt);
    free(e->prv);
    free(e->heap);
    e->sym = malloc(cap * sizeof *e->sym);
    e->rk = malloc(cap * sizeof *e->rk);
    e->rs = malloc(cap * sizeof *e->rs);
    e->nxt = malloc(cap * sizeof *e->nxt);
    e->prv = malloc(cap * sizeof *e->prv);
    e->heap = malloc(cap * 3 * sizeof *e->heap); /* m initial pairs + 2 per merge */
    e->scratch_cap = cap;
    if (!e->sym || !e->rk || !e->rs || !e->nxt || !e->prv || !e->heap) {
        e->scratch_cap = 0;
        return zc_err_set(err, ZC_ENOMEM, "out of memory merging a piece of %zu bytes", m);
    }
    return ZC_OK;
}

/* Merges sym[0..m) (byte tokens) in place; returns the token count left in sym. */
static size_t merge_short(const bpe_vocab *v, uint32_t *sym, uint32_t *rk, int32_t *rs, size_t m)
{
    for (size_t k = 0; k + 1 < m; k++)
        rk[k] = bpe_vocab_merge(v, sym[k], sym[k + 1], &rs[k]);
    size_t cnt = m;
    while (cnt > 1) {
        size_t best = 0;
        for (size_t k = 1; k + 1 < cnt; k++)
            if (rk[k] < rk[best])
                best = k;
        if (rk[best] == BPE_NO_MERGE)
            break;
        sym[best] = (uint32_t)rs[best];
        for (size_t j = best + 1; j + 1 < cnt; j++)
            sym[j] = sym[j + 1];
        for (size_t j = best + 1; j + 2 < cnt; j++) {
            rk[j] = rk[j + 1];
            rs[j] = rs[j + 1];
        }
        cnt--;
        if (best > 0)
            rk[best - 1] = bpe_vocab_merge(v, sym[best - 1], sym[best], &rs[best - 1]);
        if (best + 1 < cnt)
            rk[best] = bpe_vocab_merge(v, sym[best], sym[best + 1], &rs[best]);
    }
    return cnt;
}

static void heap_push(uint64_t *h, size_t *n, uint64_t key)
{
    size_t i = (*n)++;
    while (i > 0 && h[(i - 1) / 2] > key) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = key;
}

static uint64_t heap_pop(uint64_t *h, size_t *n)
{
    uint64_t top = h[0], last = h[--(*n)];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && h[c + 1] < h[c])
            c++;
        if (h[c] >= last)
            break;
        h[i] = h[c];
        i = c;
    }
    if (*n)
        h[i] = last;
    return top;
}

/* The same merge as merge_short for long pieces: symbols are linked by position, the heap holds
 * (rank << 32 | left position) of every adjacent pair as it forms; an entry whose pair has since
 * changed is recognised by its rank (ranks name pairs) and dropped. Compacts sym; returns the
 * count. */
static size_t merge_long(bpe_encoder *e, size_t m)
{
    const bpe_vocab *v = e->v;
    uint32_t *sym = e->sym;
    int32_t *nxt = e->nxt, *prv = e->prv, res;
    uint64_t *heap = e->heap;
    size_t nh = 0;
    for (size_t k = 0; k < m; k++) {
        nxt[k] = k + 1 < m ? (int32_t)k + 1 : -1;
        prv[k] = (int32_t)k - 1;
        if (k + 1 < m) {
            uint32_t r = bpe_vocab_merge(v, sym[k], sym[k + 1], &res);
            if (r != BPE_NO_MERGE)
                heap_push(heap, &nh, (uint64_t)r << 32 | k);
        }
    }
    while (nh) {
        uint64_t top = heap_pop(heap, &nh);
        uint32_t rank = (uint32_t)(top >> 32);
        int32_t k = (int32_t)(uint32_t)top;
        if (prv[k] == -2 || nxt[k] < 0)
            continue; /* k was merged into its left neighbour, or is last */
        int32_t r = nxt[k];
        if (bpe_vocab_merge(v, sym[k], sym[r], &res) != rank)
            continue; /* stale */
        sym[k] = (uint32_t)res;
        nxt[k] = nxt[r];
        if (nxt[r] >= 0)
            prv[nxt[r]] = k;
        prv[r] = -2;
        int32_t p = prv[k];
        uint32_t rr;
        if (p >= 0 && (rr = bpe_vocab_merge(v, sym[p], sym[k], &res)) != BPE_NO_MERGE)
            heap_push(heap, &nh, (uint64_t)rr << 32 | (uint32_t)p);
        if (nxt[k] >= 0 && (rr = bpe_vocab_merge(v, sym[k], sym[nxt[k]], &res)) != BPE_NO_MERGE)
            heap_push(heap, &nh, (uint64_t)rr << 32 | (uint32_t)k);
    }
    size_t cnt = 0;
    for (int32_t k = 0; k >= 0; k = nxt[k])
        sym[cnt++] = sym[k];
    return cnt;
}

static void cache_clear(bpe_encoder *e)
{
    memset(e->slot, 0, CACHE_SLOTS * sizeof *e->slot);
    e->nentries = e->keys_used = e->ids_used = 0;
}

/* Encodes one piece of m ≥ 2 bytes, appending to ids. */
static zc_status encode_piece(bpe_encoder *e, const uint8_t *p, size_t m, bpe_ids *ids, zc_err *err)
{
    const bpe_vocab *v = e->v;
    int whole = v->hf.merges_only ? -1 : bpe_vocab_find(v, p, m);
    if (whole >= 0) {
        ids->id[ids->n++] = (uint32_t)whole;
        return ZC_OK;
    }
    uint64_t h = 0;
    size_t si = 0;
    if (m <= SHORT_PIECE) {
        h = bpe_hash(p, m);
        for (si = h & (CACHE_SLOTS - 1); e->slot[si].key_len; si = (si + 1) & (CACHE_SLOTS - 1)) {
            const cache_slot *s = &e->slot[si];
            if (s->hash == h && s->key_len == m && !memcmp(e->keys + s->key_off, p, m)) {
                memcpy(ids->id + ids->n, e->ids + s->ids_off, s->nids * sizeof *ids->id);
                ids->n += s->nids;
                return ZC_OK;
            }
        }
    }
    if (m > INT32_MAX) /* merge_long links positions as int32 */
        return zc_err_set(err, ZC_EINVAL,
                          "a piece of %zu bytes (one run of white space or of "
                          "one class) is more than the 2 GiB BPE can merge",
                          m);
    zc_status st = scratch(e, m, err);
    if (st)
        return st;
    for (size_t k = 0; k < m; k++)
        e->sym[k] = (uint32_t)v->byte_tok[p[k]];
    size_t cnt = m <= SHORT_PIECE ? merge_short(v, e->sym, e->rk, e->rs, m) : merge_long(e, m);
    memcpy(ids->id + ids->n, e->sym, cnt * sizeof *ids->id);
    ids->n += cnt;
    if (m <= SHORT_PIECE) {
        if (e->nentries >= CACHE_MAX || e->keys_used + m > CACHE_KEY_BYTES ||
            e->ids_used + cnt > CACHE_IDS) {
            cache_clear(e);
            for (si = h & (CACHE_SLOTS - 1); e->slot[si].key_len;)
                si = (si + 1) & (CACHE_SLOTS - 1);
        }
        cache_slot *s = &e->slot[si];
        s->hash = h;
        s->key_off = (uint32_t)e->keys_used;
        s->key_len = (uint16_t)m;
        s->ids_off = (uint32_t)e->ids_used;
        s->nids = (uint16_t)cnt;
        memcpy(e->keys + e->keys_used, p, m);
        memcpy(e->ids + e->ids_used, e->sym, cnt * sizeof *e->ids);
        e->keys_used += m;
        e->ids_used += cnt;
        e->nentries++;
    }
    return ZC_OK;
}

/* Appends the tokens of the piece p[0..m). */
static zc_status push_piece(bpe_encoder *e, const uint8_t *p, size_t m, bpe_ids *ids, zc_err *err)
{
    zc_status st = bpe_ids_reserve(ids, m, err); /* a piece of m bytes is at most m tokens */
    if (st)
        return st;
    if (m == 1) {
        ids->id[ids->n++] = (uint32_t)e->v->byte_tok[p[0]];
        return ZC_OK;
    }
    return encode_piece(e, p, m, ids, err);
}

/* Valid UTF-8 p[0..m), split with the vocabulary's pattern. */
static zc_status encode_valid(bpe_encoder *e, const uint8_t *p, size_t m, bpe_ids *ids, zc_err *err)
{
    const bpe_pretok_kind kind = e->v->pretok;
    const int digits = kind == BPE_PRETOK_LLAMA3 ? 3 : 1;
    for (size_t i = 0, end; i < m; i = end) {
        bool invalid;
        end = kind == BPE_PRETOK_GPT2 ? bpe_pretok_next(p, m, i, &invalid)
                                      : bpe_pretok_llama3_next(p, m, i, digits);
        zc_status st = push_piece(e, p + i, end - i, ids, err);
        if (st)
            return st;
    }
    return ZC_OK;
}

/* Valid UTF-8 p[0..m), NFC-normalized first when the vocabulary says so (hf_nfc.h: only the
 * stretches that can change go through libutf8proc). */
static zc_status encode_run(bpe_encoder *e, const uint8_t *p, size_t m, bpe_ids *ids, zc_err *err)
{
    bool same = true;
    zc_status st =
        e->v->hf.nfc ? hf_nfc(p, m, &e->norm, &e->norm_len, &e->norm_cap, &same, err) : ZC_OK;
    if (st)
        return st;
    return same ? encode_valid(e, p, m, ids, err) : encode_valid(e, e->norm, e->norm_len, ids, err);
}

/* p[0..m) cut at each byte that does not begin well-formed UTF-8: the valid runs encoded, each
 * such byte its byte token. */
static zc_status encode_text(bpe_encoder *e, const uint8_t *p, size_t m, bpe_ids *ids, zc_err *err)
{
    for (size_t i = 0; i < m;) {
        size_t j = i;
        while (j < m) {
            if (p[j] < 0x80) {
                j++;
                continue;
            }
            int32_t cp;
            int len = bpe_utf8_decode(p + j, m - j, &cp);
            if (!len)
                break;
            j += (size_t)len;
        }
        zc_status st = j > i ? encode_run(e, p + i, j - i, ids, err) : ZC_OK;
        if (!st && j < m)
            st = push_piece(e, p + j, 1, ids, err);
        if (st)
            return st;
        i = j + 1;
    }
    return ZC_OK;
}

/* The length of the longest matchable added token at p[0..m), its id in *id; 0 if none. */
static size_t match_added(const bpe_encoder *e, const uint8_t *p, size_t m, int *id)
{
    const bpe_vocab *v = e->v;
    size_t best = 0;
    for (int i = 0; i < v->hf.nadded; i++) {
        const bpe_added *a = &v->hf.added[i];
        if (a->len > best && a->len <= m && (!a->special || v->hf.match_special) &&
            !memcmp(v->bytes + a->off, p, a->len)) {
            best = a->len;
            *id = a->id;
        }
    }
    return best;
}

/* A tokenizer.json's encoding: the added tokens found leftmost-longest, the text between them
 * encoded by encode_text. */
static zc_status encode_hf(bpe_encoder *e, const uint8_t *text, size_t n, bpe_ids *ids, zc_err *err)
{
    if (n == 0) /* no tokens; text may be NULL (an empty input), not to be offset */
        return ZC_OK;
    if (!e->any_added)
        return encode_text(e, text, n, ids, err);
    size_t start = 0;
    for (size_t i = 0; i < n;) {
        int id = -1;
        size_t len = e->added_first[text[i]] ? match_added(e, text + i, n - i, &id) : 0;
        if (!len) {
            i++;
            continue;
        }
        zc_status st = encode_text(e, text + start, i - start, ids, err);
        if (!st)
            st = bpe_ids_reserve(ids, 1, err);
        if (st)
            return st;
        ids->id[ids->n++] = (uint32_t)id;
        i += len;
        start = i;
    }
    return encode_text(e, text + start, n - start, ids, err);
}

zc_status bpe_encode(bpe_encoder *e, const uint8_t *text, size_t n, bpe_ids *ids, zc_err *err)
{
    const bpe_vocab *v = e->v;
    if (v->hf.on)
        return encode_hf(e, text, n, ids, err);
    size_t i = 0;
    while (i < n) {
        bool invalid;
        size_t end = bpe_pretok_next(text, n, i, &invalid);
        size_t m = end - i;
        /* a piece of m bytes is at most m tokens */
        zc_status st = bpe_ids_reserve(ids, m, err);
        if (st)
            return st;
        if (m == 1)
            ids->id[ids->n++] = (uint32_t)v->byte_tok[text[i]];
        else if ((st = encode_piece(e, text + i, m, ids, err)))
            return st;
        i = end;
    }
    return ZC_OK;
}

zc_status bpe_decode(const bpe_vocab *v, const uint32_t *ids, size_t n, uint8_t **buf, size_t *len,
                     size_t *cap, zc_err *err)
{
    for (size_t i = 0; i < n; i++) {
        if (ids[i] >= (uint32_t)v->n)
            return zc_err_set(err, ZC_EINVAL,
                              "token %zu is %u, outside the vocabulary of %s "
                              "(ids 0..%d)",
                              i, ids[i], v->source, v->n - 1);
        size_t tl;
        const uint8_t *t = bpe_vocab_token(v, (int)ids[i], &tl);
        if (tl == 0)
            return zc_err_set(err, ZC_EINVAL, "token %zu is %u, an id no token of %s has", i,
                              ids[i], v->source);
        if (tl > *cap - *len) {
            size_t c = *cap ? *cap : 4096;
            while (c - *len < tl)
                c *= 2;
            uint8_t *nb = realloc(*buf, c);
            if (!nb)
                return zc_err_set(err, ZC_ENOMEM, "out of memory decoding %zu tokens", n);
            *buf = nb;
            *cap = c;
        }
        memcpy(*buf + *len, t, tl);
        *len += tl;
    }
    return ZC_OK;
}
