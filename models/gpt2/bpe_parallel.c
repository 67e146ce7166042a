/* bpe_parallel.c — documents cut into chunks, encoded by a pool of threads that take chunks in
 * order from an atomic counter, then joined in document order (bpe_parallel.h). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "models/gpt2/bpe_parallel.h"

typedef struct {
    size_t doc;
    const uint8_t *text;
    size_t n;
    bpe_ids ids;
} chunk;

typedef struct {
    const bpe_vocab *v;
    chunk *chunks;
    size_t nchunks;
    atomic_size_t next, finished, bytes_done;
    atomic_int failed;
    pthread_mutex_t lock;
    zc_err err; /* the first failure */
} pool;

static bool safe_char(uint8_t c)
{
    return c >= 0x21 && c <= 0x7E;
}

/* The first cut position at or after `from` in s[0..n) ("x\n|y"), or n. */
static size_t next_cut(const uint8_t *s, size_t n, size_t from)
{
    for (size_t i = from < 2 ? 2 : from; i < n;) {
        const uint8_t *nl = memchr(s + i - 1, '\n', n - (i - 1));
        if (!nl)
            return n;
        size_t c = (size_t)(nl - s) + 1;
        if (c >= n)
            return n;
        if (c >= 2 && safe_char(s[c - 2]) && safe_char(s[c]))
            return c;
        i = c + 1;
    }
    return n;
}

static void *worker(void *arg)
{
    pool *p = arg;
    bpe_encoder *e = NULL;
    zc_err err = {0};
    zc_status st = bpe_encoder_create(&e, p->v, &err);
    for (size_t k;
         !st && !atomic_load(&p->failed) && (k = atomic_fetch_add(&p->next, 1)) < p->nchunks;) {
        chunk *c = &p->chunks[k];
        st = bpe_encode(e, c->text, c->n, &c->ids, &err);
        atomic_fetch_add(&p->bytes_done, c->n);
        atomic_fetch_add(&p->finished, 1);
    }
    if (st) {
        pthread_mutex_lock(&p->lock);
        if (!atomic_load(&p->failed))
            p->err = err;
        atomic_store(&p->failed, 1);
        pthread_mutex_unlock(&p->lock);
    }
    bpe_encoder_destroy(e);
    return NULL;
}

zc_status bpe_encode_docs(const bpe_vocab *v, const bpe_doc *docs, size_t ndocs, int threads,
                          int before_each, size_t chunk_bytes, bpe_ids *ids, size_t *doc_start,
                          bpe_progress_fn progress, void *arg, zc_err *err)
{
    if (!chunk_bytes)
        chunk_bytes = (size_t)1 << 20;
    /* an added token matched in the text (a tokenizer.json's) with a newline in it could span a
     * cut: then documents are not cut */
    for (int i = 0; i < v->hf.nadded; i++) {
        const bpe_added *a = &v->hf.added[i];
        if ((!a->special || v->hf.match_special) && memchr(v->bytes + a->off, '\n', a->len))
            chunk_bytes = SIZE_MAX / 2;
    }
    if (threads < 1)
        threads = 1;
    size_t nchunks = 0, total = 0;
    for (size_t d = 0; d < ndocs; d++) {
        total += docs[d].n;
        for (size_t at = 0; at < docs[d].n; nchunks++)
            at = next_cut(docs[d].text, docs[d].n, at + chunk_bytes);
    }
    pool p = {.v = v, .nchunks = nchunks};
    p.chunks = calloc(nchunks ? nchunks : 1, sizeof *p.chunks);
    pthread_t *tid = calloc((size_t)threads, sizeof *tid);
    if (!p.chunks || !tid) {
        free(p.chunks);
        free(tid);
        return zc_err_set(err, ZC_ENOMEM, "out of memory planning %zu chunks", nchunks);
    }
    size_t k = 0;
    for (size_t d = 0; d < ndocs; d++)
        for (size_t at = 0, end; at < docs[d].n; at = end) {
            end = next_cut(docs[d].text, docs[d].n, at + chunk_bytes);
            p.chunks[k++] = (chunk){d, docs[d].text + at, end - at, {0}};
        }
    pthread_mutex_init(&p.lock, NULL);
    int started = 0;
    for (; started < threads && (size_t)started < nchunks; started++)
        if (pthread_create(&tid[started], NULL, worker, &p) != 0)
            break;
    if (started == 0 && nchunks > 0)
        worker(&p); /* no thread could start: this one works */
    if (progress) {
        struct timespec ts = {0, 250 * 1000 * 1000};
        while (started > 0 && atomic_load(&p.finished) < nchunks && !atomic_load(&p.failed)) {
            nanosleep(&ts, NULL);
            progress(atomic_load(&p.bytes_done), total, arg);
        }
    }
    for (int t = 0; t < started; t++)
        pthread_join(tid[t], NULL);
    pthread_mutex_destroy(&p.lock);
    zc_status st = ZC_OK;
    if (atomic_load(&p.failed))
        st = (*err = p.err).code;
    if (!st && progress)
        progress(total, total, arg);
    /* join in document order */
    size_t need = 0;
    for (k = 0; k < nchunks; k++)
        need += p.chunks[k].ids.n;
    if (!st)
        st = bpe_ids_reserve(ids, need + (before_each >= 0 ? ndocs : 0), err);
    for (size_t d = 0, c = 0; !st && d < ndocs; d++) {
        doc_start[d] = ids->n;
        if (before_each >= 0)
            ids->id[ids->n++] = (uint32_t)before_each;
        for (; c < nchunks && p.chunks[c].doc == d; c++) {
            memcpy(ids->id + ids->n, p.chunks[c].ids.id, p.chunks[c].ids.n * sizeof *ids->id);
            ids->n += p.chunks[c].ids.n;
        }
    }
    if (!st)
        doc_start[ndocs] = ids->n;
    for (k = 0; k < nchunks; k++)
        bpe_ids_free(&p.chunks[k].ids);
    free(p.chunks);
    free(tid);
    return st;
}
