/* train_gpt2.c — the GPT-2 adaptor of `zeroc train`: shape from flags or an llm.c checkpoint,
 * data from llm.c token files, validation, samples, and the llm.c export.
 *
 * Data order follows llm.c's loader so runs compare with other implementations: global
 * micro-step g (= step·accumulation + k) on rank r of N takes the B·T + 1 tokens starting at
 * (g·N + r)·B·T, wrapping at the end of the file; inputs are the first B·T, targets the same
 * shifted by one. The global batch of a step therefore does not depend on N. With --shuffle the
 * file is cut into its W whole windows and epoch e (global windows e·W .. e·W + W − 1) visits
 * each once, in the order of a keyed pseudo-random permutation of [0, W) drawn afresh for every
 * (seed, epoch): a Feistel network over the smallest power of four ≥ W, cycle-walked into
 * [0, W) (shuffle_window). It is a pure function of (seed, global window index) in O(1) memory,
 * so still independent of N. A run resumed under another global
 * batch reads in order from where the checkpoint's run stopped: a fixed token skip on every
 * training window (gpt2_resume_data). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/byte_text.h"
#include "cli/fail.h"
#include "cli/train_model.h"
#include "models/gpt2/gpt2.h"
#include "models/gpt2/gpt2_sample.h"
#include "models/gpt2/init_files.h"
#include "models/gpt2/llmc_files.h"

typedef struct {
    gpt2_model *gpt;
    zc_comm *comm;
    train_opts o;
    llmc_tokens train, val;
    bool train_open, val_open;
    int *window; /* B·T + 1 tokens */
    int rank, nranks, B, T, accum, vocab;
    uint64_t seed;
    uint64_t skip; /* tokens added to every training window's start (mod the file): a resume */
} gpt2_state;

/* splitmix64's finalizer: a bijective 64-bit mixer whose every output bit depends on every input
 * bit; the shuffle's keys and round functions. */
static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

enum { SHUFFLE_ROUNDS = 6 };
#define SHUFFLE_STREAM 0x5348554646ULL /* "SHUFF": the shuffle's keys apart from other draws */

/* One permutation of [0, 2^(2·half)) (half in 1..32): a balanced Feistel network of
 * SHUFFLE_ROUNDS rounds over two half-bit halves, round k's function mix64 keyed by key[k]. */
static uint64_t feistel(uint64_t x, unsigned half, const uint64_t key[SHUFFLE_ROUNDS])
{
    const uint64_t mask = (1ULL << half) - 1;
    uint64_t l = x >> half & mask, r = x & mask;
    for (int k = 0; k < SHUFFLE_ROUNDS; k++) {
        uint64_t t = l ^ (mix64(key[k] ^ r) & mask);
        l = r;
        r = t;
    }
    return l << half | r;
}

/* The window epoch `epoch` of a shuffled pass visits at position i (< W, W ≥ 2): the keyed
 * Feistel permutation of the smallest even-bit domain ≥ W, walked along its cycle until it
 * lands in [0, W): a permutation of [0, W) (the domain is < 4·W, so fewer than 4 passes on
 * average), a pure function of (seed, epoch, i). */
static uint64_t shuffle_window(uint64_t seed, uint64_t epoch, uint64_t i, uint64_t W)
{
    unsigned half = 1;
    while (half < 32 && (1ULL << 2 * half) < W)
        half++;
    uint64_t key[SHUFFLE_ROUNDS], base = mix64(mix64(seed ^ SHUFFLE_STREAM) + epoch);
    for (int k = 0; k < SHUFFLE_ROUNDS; k++)
        key[k] = mix64(base + (uint64_t)k);
    uint64_t x = i;
    do
        x = feistel(x, half, key);
    while (x >= W);
    return x;
}

/* Window `index` (global over ranks) of a training (shuffle) or validation (sequential) pass;
 * a sequential one starts `skip` tokens later. */
static zc_status read_window(gpt2_state *st, const llmc_tokens *t, uint64_t index, bool shuffle,
                             uint64_t skip, zc_err *err)
{
    uint64_t BT = (uint64_t)st->B * st->T, j = index * (uint64_t)st->nranks + (uint64_t)st->rank;
    uint64_t first = (j * BT % t->ntok + skip % t->ntok) % t->ntok;
    uint64_t W = (t->ntok - 1) / BT; /* whole windows (each needs BT + 1 tokens) */
    if (shuffle && W > 1)
        first = shuffle_window(st->seed, j / W, j % W, W) * BT;
    return llmc_tokens_read(t, (size_t)first, (size_t)BT + 1, st->window, st->vocab, err);
}

/* Every token id of the file must be < vocab: checked once at the start (so a bad id fails
 * now, not at step 10 000), by every rank alike so all ranks stop with the same message. */
static zc_status scan_tokens(const llmc_tokens *t, int vocab, uint64_t *digest, zc_err *err)
{
    enum { CHUNK = 1 << 20 };
    int *buf = malloc(CHUNK * sizeof(int));
    if (!buf)
        return zc_err_set(err, ZC_ENOMEM, "out of memory");
    zc_status rc = ZC_OK;
    uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a over the tokens: the ranks compare contents */
    for (size_t at = 0; at < t->ntok && !rc; at += CHUNK) {
        size_t n = t->ntok - at < CHUNK ? t->ntok - at : CHUNK;
        rc = llmc_tokens_read(t, at, n, buf, vocab, err);
        for (size_t i = 0; !rc && i < n; i++)
            h = (h ^ (uint64_t)buf[i]) * 0x100000001b3ULL;
    }
    free(buf);
    *digest = h;
    return rc;
}

static zc_status gpt2_micro_step(train_model *m, int64_t s, int k, double *loss, zc_err *err)
{
    gpt2_state *st = m->state;
    zc_status rc = read_window(st, &st->train, (uint64_t)s * st->accum + (uint64_t)k, st->o.shuffle,
                               st->skip, err);
    return rc ? rc : gpt2_forward_backward(st->gpt, st->window, st->window + 1, loss, err);
}

/* From step `step` on, global micro-step g's windows start at tokens + (g − step·accum)·N·B·T:
 * the skip that moves this run's own position there (mod the file). */
static void gpt2_resume_data(train_model *m, uint64_t tokens, int64_t step)
{
    gpt2_state *st = m->state;
    const uint64_t n = st->train.ntok,
                   own = (uint64_t)step * st->accum % n * st->nranks % n * st->B % n * st->T % n;
    st->skip = (tokens % n + n - own) % n;
}

/* A validation reads each window of the file once at most: --val-batches per rank is cut to
 * what the file holds (said on rank 0), so it never wraps onto the file's start and repeats
 * windows; a file with fewer windows than ranks is refused. */
static zc_status fit_val_batches(gpt2_state *st, const char *path, zc_err *err)
{
    const uint64_t BT = (uint64_t)st->B * st->T, W = (st->val.ntok - 1) / BT,
                   per = W / (uint64_t)st->nranks;
    if (per == 0)
        return zc_err_set(err, ZC_EINVAL,
                          "%s: %llu windows of %d × %d + 1 tokens, fewer than the %d ranks that "
                          "validate on it",
                          path, (unsigned long long)W, st->B, st->T, st->nranks);
    if ((uint64_t)st->o.val_batches <= per)
        return ZC_OK;
    if (st->rank == 0)
        printf("validation: %s holds %llu windows of %d × %d + 1 tokens: %llu a rank, not the "
               "%d of --val-batches\n",
               path, (unsigned long long)W, st->B, st->T, (unsigned long long)per,
               st->o.val_batches);
    st->o.val_batches = (int)per;
    return ZC_OK;
}

static zc_status gpt2_validate(train_model *m, int64_t step, double *loss, zc_err *err)
{
    gpt2_state *st = m->state;
    double local = 0.0, total = 0.0;
    zc_status rc = ZC_OK;
    for (int j = 0; j < st->o.val_batches && !rc; j++) {
        double l = 0.0;
        if (!(rc = read_window(st, &st->val, (uint64_t)j, false, 0, err)))
            rc = gpt2_forward(st->gpt, st->window, st->window + 1, &l, err);
        local += l;
    }
    char what[48]; /* a collective's error names its step */
    snprintf(what, sizeof what, "validation loss, step %lld", (long long)step);
    if (!rc)
        rc = zc_comm_sum_f64(st->comm, local, &total, what, err);
    *loss = total / ((double)st->nranks * st->o.val_batches);
    return rc;
}

static zc_status gpt2_sample(train_model *m, int64_t step, zc_err *err)
{
    gpt2_state *st = m->state;
    int prompt_bytes[] = {'T', 'h', 'e', ' '}, eot = 50256, zero = 0;
    const int *prompt = st->vocab == BYTE_VOCAB ? prompt_bytes : st->vocab > eot ? &eot : &zero;
    int np = st->vocab == BYTE_VOCAB ? 4 : 1, n = st->o.sample_length;
    int *out = malloc((size_t)n * sizeof(int));
    if (!out)
        return zc_err_set(err, ZC_ENOMEM, "out of memory for a sample");
    gpt2_sampling how = {.temperature = 1.0f, .top_k = 40, .seed = st->seed + (uint64_t)step};
    zc_status rc = gpt2_generate(st->gpt, prompt, np, n, &how, out, err);
    if (!rc && st->rank == 0) {
        printf("---- sample after step %lld ----\n", (long long)step);
        byte_text_print(stdout, prompt, np, st->vocab);
        if (st->vocab != BYTE_VOCAB) /* ids: the prompt's last and the first generated apart */
            fputc(' ', stdout);
        byte_text_print(stdout, out, n, st->vocab);
        printf("\n----\n");
        fflush(stdout);
    }
    free(out);
    return rc;
}

static zc_status gpt2_load(train_model *m, zc_err *err)
{
    gpt2_state *st = m->state;
    /* zeroc's safetensors files are loaded by the trainer for every model */
    return m->owns_init ? cli_err_flag(gpt2_load_init(st->gpt, st->o.init, err), "--init", err)
                        : ZC_OK;
}

static zc_status gpt2_save_final(train_model *m, const char *path, zc_err *err)
{
    gpt2_state *st = m->state;
    zc_status rc = gpt2_save_llmc(st->gpt, path, err);
    if (!rc && st->rank == 0) /* rank 0 wrote it */
        printf("wrote %s (an llm.c GPT-2 checkpoint: zeroc sample --init %s)\n", path, path);
    return rc;
}

static void train_gpt2_destroy(train_model *m)
{
    gpt2_state *st = m->state;
    if (!st)
        return;
    gpt2_destroy(st->gpt);
    if (st->train_open)
        llmc_tokens_close(&st->train);
    if (st->val_open)
        llmc_tokens_close(&st->val);
    free(st->window);
    free(st);
    m->state = NULL;
}

zc_status train_model_gpt2(train_model *m, const train_opts *o, zc_engine *e, zc_mem *mem,
                           zc_comm *comm, const zc_config *cfg, zc_err *err)
{
    gpt2_state *st = calloc(1, sizeof *st);
    if (!st)
        return zc_err_set(err, ZC_ENOMEM, "out of memory");
    m->state = st;
    m->load = gpt2_load;
    m->micro_step = gpt2_micro_step;
    m->resume_data = gpt2_resume_data;
    m->validate = gpt2_validate;
    m->sample = gpt2_sample;
    m->save_final = gpt2_save_final;
    m->destroy = train_gpt2_destroy;
    st->o = *o;
    st->comm = comm;
    st->rank = zc_comm_rank(comm);
    st->nranks = zc_comm_size(comm);
    st->B = cfg->micro_batch;
    st->accum = cfg->grad_accum;
    st->seed = cfg->seed;

    gpt2_config gc;
    zc_status rc = ZC_OK;
    m->owns_init = o->init && gpt2_is_init_file(o->init);
    if (m->owns_init) {
        if ((rc = cli_err_flag(gpt2_init_shape(o->init, &gc, err), "--init", err)))
            goto fail;
        /* shape flags beside the file must say what the file says (they cannot change it) */
        const struct {
            bool given;
            const char *flag;
            int want, file;
        } shape[] = {{o->given.layers, "--layers", o->layers, gc.num_layers},
                     {o->given.channels, "--channels", o->channels, gc.channels},
                     {o->given.heads, "--heads", o->heads, gc.num_heads},
                     {o->given.vocab, "--vocab", o->vocab, gc.vocab_size},
                     {o->given.max_seq_len, "--max-seq-len", o->max_seq_len, gc.max_seq_len}};
        for (size_t i = 0; i < sizeof shape / sizeof *shape; i++)
            if (shape[i].given && shape[i].want != shape[i].file) {
                rc = zc_err_set(err, ZC_EINVAL,
                                "%s %d: --init %s has %d (the shape comes from "
                                "the file)",
                                shape[i].flag, shape[i].want, o->init, shape[i].file);
                goto fail;
            }
    } else {
        int V = o->vocab;
        gc = (gpt2_config){o->max_seq_len ? o->max_seq_len : o->seq_len,
                           V,
                           gpt2_pad_vocab(V),
                           o->layers ? o->layers : 4,
                           o->heads,
                           o->channels};
    }
    snprintf(m->describe, sizeof m->describe,
             "\"max_seq_len\": %d, \"vocab_size\": %d, \"padded_vocab_size\": %d, "
             "\"num_layers\": %d, \"num_heads\": %d, \"channels\": %d",
             gc.max_seq_len, gc.vocab_size, gc.padded_vocab_size, gc.num_layers, gc.num_heads,
             gc.channels);
    /* the default --seq-len takes an --init file's positions when it has fewer; a --seq-len
     * given longer than them was refused (cli/train_args.c) */
    st->T = o->seq_len < gc.max_seq_len ? o->seq_len : gc.max_seq_len;
    st->vocab = gc.vocab_size;
    /* the model first: it validates the shape before any file is scanned against it */
    if ((rc = gpt2_create(&st->gpt, e, mem, &gc, st->B, st->T, o->activation_checkpointing, err)))
        goto fail;
    if (!o->data) {
        rc = zc_err_set(err, ZC_EINVAL,
                        "--model gpt2 needs --data FILE (an llm.c token file; "
                        "make one with zeroc prepare)");
        goto fail;
    }
    if ((rc = cli_err_flag(llmc_tokens_open(o->data, &st->train, err), "--data", err)))
        goto fail;
    st->train_open = true;
    m->data[0] = st->train.ntok;
    m->data[4] = o->shuffle;
    if ((rc = scan_tokens(&st->train, st->vocab, &m->data[1], err)))
        goto fail;
    if (o->val_data) {
        if ((rc = cli_err_flag(llmc_tokens_open(o->val_data, &st->val, err), "--val-data", err)))
            goto fail;
        st->val_open = true;
        m->data[2] = st->val.ntok;
        if ((rc = scan_tokens(&st->val, st->vocab, &m->data[3], err)))
            goto fail;
    }
    size_t need = (size_t)st->B * st->T + 1;
    if (st->train.ntok < need) {
        rc = zc_err_set(err, ZC_EINVAL,
                        "%s: %zu tokens is shorter than one batch (%d × %d + 1 = "
                        "%zu tokens)",
                        o->data, st->train.ntok, st->B, st->T, need);
        goto fail;
    }
    if (st->val_open && st->val.ntok < need) {
        rc = zc_err_set(err, ZC_EINVAL,
                        "%s: %zu tokens is shorter than one batch (%d × %d + 1 = "
                        "%zu tokens)",
                        o->val_data, st->val.ntok, st->B, st->T, need);
        goto fail;
    }
    if (st->val_open && (rc = fit_val_batches(st, o->val_data, err)))
        goto fail;
    if (!(st->window = malloc(need * sizeof(int)))) {
        rc = zc_err_set(err, ZC_ENOMEM, "out of memory");
        goto fail;
    }
    m->tokens_per_micro_step = (double)st->B * st->T;
    return ZC_OK;
fail:
    train_gpt2_destroy(m);
    return rc;
}
