/* train_gpt2.c — the GPT-2 adaptor of `zeroc train`: shape from flags or an llm.c checkpoint,
 * data from llm.c token files (one, or a glob of shards read as one stream: llmc_tokens),
 * validation, samples, and the llm.c export.
 *
 * Data order follows llm.c's loader so runs compare with other implementations: global
 * micro-step g (= step·accumulation + k) on rank r of N takes the B·T + 1 tokens starting at
 * (g·N + r)·B·T, wrapping at the end of the file (of the last shard: a window may span several
 * shards, where llm.c drops each shard's remainder); inputs are the first B·T, targets the same
 * shifted by one. The global batch of a step therefore does not depend on N. With --shuffle the
 * file is cut into its W whole windows and epoch e (global windows e·W .. e·W + W − 1) visits
 * each once, in the order of a keyed pseudo-random permutation of [0, W) drawn afresh for every
 * (seed, epoch): a Feistel network over the smallest power of four ≥ W, cycle-walked into
 * [0, W) (shuffle_window). It is a pure function of (seed, global window index) in O(1) memory,
 * so still independent of N. A run resumed under another global batch reads in order from where
 * the checkpoint's run stopped: a fixed token skip on every training window (gpt2_resume_data).
 * A validation covers the first --val-windows windows of T + 1 tokens of its file (default:
 * all), the same set and the same loss whatever B, N and the accumulation (plan_validation). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/byte_text.h"
#include "cli/fail.h"
#include "cli/train_ckpt.h"
#include "cli/train_model.h"
#include "models/gpt2/ckpt_shape.h"
#include "models/gpt2/gpt2.h"
#include "models/gpt2/gpt2_layers.h"
#include "models/gpt2/gpt2_sample.h"
#include "models/gpt2/init_files.h"
#include "models/gpt2/peft_files.h"
#include "models/gpt2/llmc_files.h"
#include "models/gpt2/loss_mask.h"

typedef struct {
    gpt2_model *gpt;
    zc_comm *comm;
    train_opts o;
    llmc_tokens train, val;
    bool train_open, val_open;
    loss_mask train_mask, val_mask; /* beside --data / --val-data; nshards 0: none */
    int *window;                    /* B·T + 1 tokens */
    int *targets;                   /* B·T: window + 1 with GPT2_IGNORE_INDEX where masked */
    uint8_t *mask_bytes;            /* B·T + 1 */
    uint64_t val_counted;           /* targets counted in the K validation windows */
    int rank, nranks, B, T, accum, vocab;
    uint64_t seed;
    uint64_t skip; /* tokens added to every training window's start (mod the file): a resume */
    /* validation (plan_validation): K windows in val_rounds rounds, gathered every val_flush */
    uint64_t val_windows, val_rounds;
    int val_flush, val_chunk;   /* val_chunk: positions per loss call (val_probs holds them) */
    int *val_targets;           /* B·T */
    float *val_tok_loss;        /* B·T per-token losses */
    float *val_probs;           /* val_chunk × Vp */
    double *val_mine, *val_all; /* val_flush·B window sums; N times that, gathered */
} gpt2_state;

/* Windows a validation gathers at a time (8 bytes each, times the ranks), and the floats of
 * probabilities its loss takes at a time: bounded scratch, however large --val-data is. */
enum { VAL_FLUSH_WINDOWS = 1 << 16, VAL_PROBS_FLOATS = 1 << 20 };
/* A whole-file validation predicting more tokens than VAL_LARGE_TOKENS is said to be large, with
 * --val-windows for about VAL_SUGGEST_TOKENS (plan_validation). */
#define VAL_LARGE_TOKENS 10000000ULL
#define VAL_SUGGEST_TOKENS 1000000ULL

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

/* targets[0..n) = window[1..n] with GPT2_IGNORE_INDEX where the mask (of the stream's tokens
 * first + 1 ..) says the target does not count. */
static zc_status masked_targets(gpt2_state *st, const loss_mask *m, size_t first, size_t n,
                                int *targets, zc_err *err)
{
    zc_status rc = loss_mask_read(m, first, n + 1, st->mask_bytes, err);
    for (size_t i = 0; !rc && i < n; i++)
        targets[i] = st->mask_bytes[i + 1] ? st->window[i + 1] : GPT2_IGNORE_INDEX;
    return rc;
}

/* Training window `index` (global over ranks), shuffled or sequential; a sequential one starts
 * `skip` tokens later. (Validation reads its windows itself: validate_batch.) */
static zc_status read_window(gpt2_state *st, const llmc_tokens *t, uint64_t index, bool shuffle,
                             uint64_t skip, zc_err *err)
{
    uint64_t BT = (uint64_t)st->B * st->T, j = index * (uint64_t)st->nranks + (uint64_t)st->rank;
    uint64_t first = (j * BT % t->ntok + skip % t->ntok) % t->ntok;
    uint64_t W = (t->ntok - 1) / BT; /* whole windows (each needs BT + 1 tokens) */
    if (shuffle && W > 1)
        first = shuffle_window(st->seed, j / W, j % W, W) * BT;
    zc_status rc = llmc_tokens_read(t, (size_t)first, (size_t)BT + 1, st->window, st->vocab, err);
    if (!rc && st->train_mask.nshards)
        rc = masked_targets(st, &st->train_mask, (size_t)first, (size_t)BT, st->targets, err);
    return rc;
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

/* Every byte of the mask is 0 or 1: checked once at the start, as scan_tokens does for the
 * tokens; folded into the data's digest (the ranks compare it). */
static zc_status scan_mask(const loss_mask *m, size_t ntok, uint64_t *digest, zc_err *err)
{
    enum { CHUNK = 1 << 20 };
    uint8_t *buf = malloc(CHUNK);
    if (!buf)
        return zc_err_set(err, ZC_ENOMEM, "out of memory");
    zc_status rc = ZC_OK;
    uint64_t h = *digest;
    for (size_t at = 0; at < ntok && !rc; at += CHUNK) {
        size_t n = ntok - at < CHUNK ? ntok - at : CHUNK;
        rc = loss_mask_read(m, at, n, buf, err);
        for (size_t i = 0; !rc && i < n; i++)
            h = (h ^ (uint64_t)(buf[i] + 0x100)) * 0x100000001b3ULL;
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
    const int *targets = st->train_mask.nshards ? st->targets : st->window + 1;
    return rc ? rc : gpt2_forward_backward(st->gpt, st->window, targets, loss, err);
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

/* st->val_counted: the targets the first K validation windows count, K·T without a mask (the
 * loss is their mean). With a mask that leaves none of them counted, refused. */
static zc_status count_val_targets(gpt2_state *st, uint64_t K, const char *path, zc_err *err)
{
    const uint64_t n = K * (uint64_t)st->T; /* targets: the stream's tokens 1 .. n */
    st->val_counted = n;
    if (!st->val_mask.nshards)
        return ZC_OK;
    enum { CHUNK = 1 << 20 };
    uint8_t *buf = malloc(CHUNK);
    if (!buf)
        return zc_err_set(err, ZC_ENOMEM, "out of memory");
    zc_status rc = ZC_OK;
    uint64_t c = 0;
    for (uint64_t at = 1; at <= n && !rc; at += CHUNK) {
        size_t k = n + 1 - at < CHUNK ? (size_t)(n + 1 - at) : CHUNK;
        rc = loss_mask_read(&st->val_mask, (size_t)at, k, buf, err);
        for (size_t i = 0; !rc && i < k; i++)
            c += buf[i];
    }
    free(buf);
    st->val_counted = c;
    if (!rc && c == 0)
        rc = zc_err_set(err, ZC_EINVAL,
                        "%s: its loss mask %s counts no target in the %llu validation windows "
                        "(no assistant token): nothing to validate on",
                        path, st->val_mask.path[0], (unsigned long long)K);
    return rc;
}

/* The validation set: the first K windows of --val-data (all W = (ntok − 1)/T unless
 * --val-windows cuts them), window w the T + 1 tokens from w·T — the training's rows cut the
 * file the same way. K and the loss do not depend on B, N or the accumulation: round i's
 * micro-batch on rank r holds windows (i·N + r)·B .. + B − 1 (those ≥ K are padding rows: their
 * inputs are token 0 and they are not counted), each window's loss is the double sum of its T
 * per-token losses (the model's own kernel, per position), the ranks' sums are gathered every
 * `flush` rounds, and every rank adds them in window order into one double. Rows are
 * independent in the forward, so where the products give a row the same bits whatever rows sit
 * beside it (oneDNN, the default path) the mean — that sum over K·T — has the same bits for any
 * split; OpenBLAS's portable path (ZEROC_GEMM=portable) blocks its products by their row count,
 * and there the splits agree to about 1e-9. Every rank runs the same number of forwards
 * (stage 3 gathers in them), padding only when K is not a multiple of N·B. Said once on rank 0,
 * with what a validation costs. */
static zc_status plan_validation(gpt2_state *st, const char *path, zc_err *err)
{
    const uint64_t W = (st->val.ntok - 1) / (uint64_t)st->T, NB = (uint64_t)st->nranks * st->B;
    if (W == 0)
        return zc_err_set(err, ZC_EINVAL,
                          "%s: %zu tokens is shorter than one validation window (%d + 1 tokens)",
                          path, st->val.ntok, st->T);
    const uint64_t want = (uint64_t)st->o.val_windows, K = want && want < W ? want : W;
    st->val_windows = K;
    zc_status rc = count_val_targets(st, K, path, err);
    if (rc)
        return rc;
    st->val_rounds = (K + NB - 1) / NB;
    st->val_flush = (int)(VAL_FLUSH_WINDOWS / NB > 0 ? VAL_FLUSH_WINDOWS / NB : 1);
    if ((uint64_t)st->val_flush > st->val_rounds)
        st->val_flush = (int)st->val_rounds;
    const int Vp = gpt2_get_config(st->gpt)->padded_vocab_size;
    const size_t BT = (size_t)st->B * st->T, fl = (size_t)st->val_flush * st->B;
    st->val_chunk = VAL_PROBS_FLOATS / Vp > 0 ? (int)(VAL_PROBS_FLOATS / Vp) : 1;
    if ((size_t)st->val_chunk > BT)
        st->val_chunk = (int)BT;
    st->val_targets = malloc(BT * sizeof(int));
    st->val_tok_loss = malloc(BT * sizeof(float));
    st->val_probs = malloc((size_t)st->val_chunk * Vp * sizeof(float));
    st->val_mine = malloc(fl * sizeof(double));
    st->val_all = malloc(fl * (size_t)st->nranks * sizeof(double));
    if (!st->val_targets || !st->val_tok_loss || !st->val_probs || !st->val_mine || !st->val_all)
        return zc_err_set(err, ZC_ENOMEM, "out of memory for validation buffers");
    if (st->rank == 0) {
        if (want > W)
            printf("validation: %s holds %llu windows of %d + 1 tokens, fewer than the %llu of "
                   "--val-windows: all of them\n",
                   path, (unsigned long long)W, st->T, (unsigned long long)want);
        /* a whole file by default may be far more than the user meant to pay each --val-every:
         * said when it predicts over VAL_LARGE_TOKENS (tokens, not micro-batches: the forward's
         * work is per token, while the micro-batches per rank move with --micro-batch and the
         * ranks; 10M tokens at 2 x params FLOPs each is 2.5 PFLOP for GPT-2 124M, hours on a
         * CPU node, every validation; prepare's files from text are far smaller) */
        const uint64_t predicted = K * (uint64_t)st->T,
                       few = VAL_SUGGEST_TOKENS / (uint64_t)st->T
                                 ? VAL_SUGGEST_TOKENS / (uint64_t)st->T
                                 : 1;
        char large[256] = "";
        if (want == 0 && predicted > VAL_LARGE_TOKENS)
            snprintf(large, sizeof large,
                     "; note: the whole file is a large validation, run at every --val-every and "
                     "the last step: limit it with --val-windows N (the first N windows; "
                     "--val-windows %llu predicts %llu tokens)",
                     (unsigned long long)few, (unsigned long long)(few * (uint64_t)st->T));
        printf("validation: %llu %s of %d + 1 tokens (%llu tokens predicted) of %s%s; each "
               "validation runs %llu forward micro-batches of %d per rank%s\n",
               (unsigned long long)K, K == 1 ? "window" : "windows", st->T,
               (unsigned long long)predicted, path,
               K < W ? " (the first, --val-windows)" : " (the whole file)",
               (unsigned long long)st->val_rounds, st->B, large);
    }
    return ZC_OK;
}

/* One validation micro-batch: windows first .. first + nb − 1 (nb ≤ B, may be 0) in its first
 * rows, padding after; sums[b] = window b's summed token losses (0 for padding rows). */
static zc_status validate_batch(gpt2_state *st, uint64_t first, int nb, double *sums, zc_err *err)
{
    const size_t BT = (size_t)st->B * st->T, real = (size_t)nb * st->T;
    const gpt2_config *gc = gpt2_get_config(st->gpt);
    zc_status rc = ZC_OK;
    if (nb > 0) { /* nb·T + 1 tokens: consecutive windows share their boundary token */
        rc = llmc_tokens_read(&st->val, (size_t)(first * (uint64_t)st->T), real + 1, st->window,
                              st->vocab, err);
        if (!rc && st->val_mask.nshards)
            rc = masked_targets(st, &st->val_mask, (size_t)(first * (uint64_t)st->T), real,
                                st->val_targets, err);
        else if (!rc)
            memcpy(st->val_targets, st->window + 1, real * sizeof(int));
    }
    memset(st->window + real, 0, (BT - real) * sizeof(int));
    if (!rc)
        rc = gpt2_forward(st->gpt, st->window, NULL, NULL, err);
    const float *logits = rc ? NULL : gpt2_logits(st->gpt);
    for (size_t p = 0; !rc && p < real; p += (size_t)st->val_chunk) {
        const size_t n = real - p < (size_t)st->val_chunk ? real - p : (size_t)st->val_chunk;
        gpt2_softmax_crossentropy_forward(
            st->val_tok_loss + p, st->val_probs, logits + p * (size_t)gc->padded_vocab_size,
            st->val_targets + p, (int)n, gc->vocab_size, gc->padded_vocab_size);
    }
    for (int b = 0; b < st->B; b++) {
        double s = 0.0;
        for (int t = 0; !rc && b < nb && t < st->T; t++)
            s += st->val_tok_loss[(size_t)b * st->T + (size_t)t];
        sums[b] = s;
    }
    return rc;
}

static zc_status gpt2_validate(train_model *m, int64_t step, double *loss, zc_err *err)
{
    gpt2_state *st = m->state;
    const uint64_t K = st->val_windows, B = (uint64_t)st->B, N = (uint64_t)st->nranks;
    double total = 0.0; /* window sums, added in window order */
    char what[64];      /* a collective's error names its step */
    snprintf(what, sizeof what, "validation losses, step %lld", (long long)step);
    zc_status rc = ZC_OK;
    for (uint64_t i0 = 0; i0 < st->val_rounds && !rc; i0 += (uint64_t)st->val_flush) {
        const uint64_t rounds = st->val_rounds - i0 < (uint64_t)st->val_flush
                                    ? st->val_rounds - i0
                                    : (uint64_t)st->val_flush;
        for (uint64_t q = 0; q < rounds && !rc; q++) {
            const uint64_t first = ((i0 + q) * N + (uint64_t)st->rank) * B;
            const int nb = first >= K ? 0 : K - first < B ? (int)(K - first) : (int)B;
            rc = validate_batch(st, first, nb, st->val_mine + q * B, err);
        }
        if (!rc)
            rc = zc_comm_control_gather(st->comm, st->val_mine, st->val_all,
                                        rounds * B * sizeof(double), what, err);
        for (uint64_t q = 0; !rc && q < rounds; q++) /* rank j's block: its rounds of B */
            for (uint64_t j = 0; j < N; j++)
                for (uint64_t b = 0; b < B && ((i0 + q) * N + j) * B + b < K; b++)
                    total += st->val_all[(j * rounds + q) * B + b];
    }
    *loss = st->val_counted ? total / (double)st->val_counted : 0.0;
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

/* "lora: r R, lora_alpha A, lora_dropout P on q_proj, v_proj: N parameters trained, the base's
 * M frozen". */
static void announce_lora(const gpt2_config *gc)
{
    size_t *numel = malloc((size_t)gpt2_num_units(gc) * sizeof *numel);
    bool *frozen = malloc((size_t)gpt2_num_units(gc) * sizeof *frozen);
    if (!numel || !frozen) {
        free(numel);
        free(frozen);
        return;
    }
    const int n = gpt2_unit_numel(gc, numel);
    gpt2_unit_frozen(gc, frozen);
    size_t trained = 0, base = 0;
    for (int u = 0; u < n; u++)
        *(frozen[u] ? &base : &trained) += numel[u];
    printf("lora: r %d, lora_alpha %g, lora_dropout %g on", gc->lora.r, gc->lora.alpha,
           gc->lora.dropout);
    for (int t = 0, first = 1; t < LORA_NTARGETS; t++)
        if (gc->lora.targets & (1u << t))
            printf("%s %s", first ? "" : ",",
                   gc->family[0]    ? lora_target_name((lora_target)t) /* GPT-2's modules: */
                   : t == LORA_O    ? "attn.c_proj"
                   : t == LORA_UP   ? "c_fc"
                   : t == LORA_DOWN ? "mlp.c_proj"
                                    : "c_attn"),
                first = 0;
    printf(": %zu parameters trained, the base's %zu frozen (no gradients, no optimizer state)\n",
           trained, base);
    free(numel);
    free(frozen);
}

static zc_status gpt2_load(train_model *m, zc_err *err)
{
    gpt2_state *st = m->state;
    /* zeroc's safetensors files are loaded by the trainer for every model */
    zc_status rc = m->owns_init
                       ? cli_err_flag(gpt2_load_init(st->gpt, st->o.init, err), "--init", err)
                       : ZC_OK;
    if (!rc && st->o.lora_init) /* the adapters, over their initial values */
        rc = cli_err_flag(
            peft_load(gpt2_engine(st->gpt), st->o.lora_init, gpt2_get_config(st->gpt), err),
            "--lora-init", err);
    return rc;
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
    loss_mask_close(&st->train_mask);
    loss_mask_close(&st->val_mask);
    free(st->window);
    free(st->targets);
    free(st->mask_bytes);
    free(st->val_targets);
    free(st->val_tok_loss);
    free(st->val_probs);
    free(st->val_mine);
    free(st->val_all);
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
    m->owns_init = o->init && o->init_file.decoder; /* resolved by cli/train_args.c */
    if (m->owns_init) {
        if (o->init_file.st) {
            *err = o->init_file.err;
            rc = cli_err_flag(o->init_file.st, "--init", err);
            goto fail;
        }
        gc = o->init_file.cfg;
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
        gc = (gpt2_config){.max_seq_len = o->max_seq_len ? o->max_seq_len : o->seq_len,
                           .vocab_size = V,
                           .padded_vocab_size = gpt2_pad_vocab(V),
                           .num_layers = o->layers ? o->layers : 4,
                           .num_heads = o->heads,
                           .channels = o->channels};
    }
    if (o->tile_params < -1) {
        rc = zc_err_set(err, ZC_EINVAL,
                        "--tile-params %lld: expected parameters per tile (>= 1), 0 (the size of "
                        "one transformer block) or -1 (never tile)",
                        (long long)o->tile_params);
        goto fail;
    }
    gc.tile_params = o->tile_params;
    if (o->resume && train_ckpt_mlp_untiled(o->resume)) /* written before MLP tiles */
        gc.mlp_tile_cols = gpt2_hidden(&gc);
    if (o->lora_init) { /* a PEFT adapter's settings; its weights at load */
        if (cfg->lora_r || cfg->lora_target_modules[0] || cfg->lora_alpha != 8.0 ||
            cfg->lora_dropout != 0.0) {
            rc = zc_err_set(err, ZC_EINVAL,
                            "--lora-init %s: r, lora_alpha, lora_dropout and target_modules come "
                            "from its adapter_config.json; drop --lora-r, --lora-alpha, "
                            "--lora-dropout and --lora-targets (and the config's lora section)",
                            o->lora_init);
            goto fail;
        }
        gc.lora.seed = cfg->seed;
        if ((rc = cli_err_flag(peft_read_config(o->lora_init, !gc.family[0], &gc.lora, err),
                               "--lora-init", err)))
            goto fail;
    } else if (cfg->lora_r) { /* LoRA: the config's lora section and the flags over it */
        gc.lora = (gpt2_lora){.r = (int)cfg->lora_r,
                              .alpha = cfg->lora_alpha,
                              .dropout = cfg->lora_dropout,
                              .seed = cfg->seed};
        if (!cfg->lora_target_modules[0])
            gc.lora.targets = lora_default_targets(!gc.family[0]);
        else if ((rc = lora_parse_targets(cfg->lora_target_modules, !gc.family[0], &gc.lora.targets,
                                          err)))
            goto fail; /* the message names lora.target_modules (--lora-targets) */
    }
    gpt2_describe(&gc, m->describe, sizeof m->describe);
    snprintf(m->name, sizeof m->name, "%s", gc.family[0] ? gc.family : "gpt2");
    /* the default --seq-len takes an --init file's positions when it has fewer; a --seq-len
     * given longer than them was refused (cli/train_args.c) */
    st->T = o->seq_len < gc.max_seq_len ? o->seq_len : gc.max_seq_len;
    st->vocab = gc.vocab_size;
    /* the model first: it validates the shape before any file is scanned against it */
    if ((rc = gpt2_create(&st->gpt, e, mem, &gc, st->B, st->T, o->activation_checkpointing, err)))
        goto fail;
    if (gc.lora.r > 0 && st->rank == 0) /* what LoRA trains */
        announce_lora(&gc);
    if (!o->data) {
        rc = zc_err_set(err, ZC_EINVAL,
                        "--model gpt2 needs --data FILE (an llm.c token file, or a quoted "
                        "glob of them such as 'fineweb_train_*.bin'; make one with zeroc "
                        "prepare)");
        goto fail;
    }
    if ((rc = cli_err_flag(llmc_tokens_open(o->data, &st->train, err), "--data", err)))
        goto fail;
    st->train_open = true;
    if (st->rank == 0 && st->train.nshards > 1)
        printf("data: %s: %d files, %zu tokens, read as one stream in name order\n", o->data,
               st->train.nshards, st->train.ntok);
    m->data[0] = st->train.ntok;
    m->data[4] = o->shuffle;
    if ((rc = scan_tokens(&st->train, st->vocab, &m->data[1], err)))
        goto fail;
    if ((rc = cli_err_flag(loss_mask_open(&st->train, &st->train_mask, err), "--data", err)) ||
        (st->train_mask.nshards &&
         (rc = scan_mask(&st->train_mask, st->train.ntok, &m->data[1], err))))
        goto fail;
    if (st->rank == 0 && st->train_mask.nshards)
        printf("loss mask: %s%s: only the targets it marks count in the loss (the mean over them "
               "per micro-batch)\n",
               st->train_mask.path[0], st->train_mask.nshards > 1 ? " and the other shards'" : "");
    if (o->val_data) {
        if ((rc = cli_err_flag(llmc_tokens_open(o->val_data, &st->val, err), "--val-data", err)))
            goto fail;
        st->val_open = true;
        if (st->rank == 0 && st->val.nshards > 1)
            printf("validation data: %s: %d files, %zu tokens, read as one stream in name "
                   "order\n",
                   o->val_data, st->val.nshards, st->val.ntok);
        m->data[2] = st->val.ntok;
        if ((rc = scan_tokens(&st->val, st->vocab, &m->data[3], err)))
            goto fail;
        if ((rc = cli_err_flag(loss_mask_open(&st->val, &st->val_mask, err), "--val-data", err)) ||
            (st->val_mask.nshards &&
             (rc = scan_mask(&st->val_mask, st->val.ntok, &m->data[3], err))))
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
    if (st->val_open && (rc = plan_validation(st, o->val_data, err)))
        goto fail;
    if (!(st->window = malloc(need * sizeof(int))) ||
        !(st->targets = malloc((need - 1) * sizeof(int))) || !(st->mask_bytes = malloc(need))) {
        rc = zc_err_set(err, ZC_ENOMEM, "out of memory");
        goto fail;
    }
    m->tokens_per_micro_step = (double)st->B * st->T;
    return ZC_OK;
fail:
    train_gpt2_destroy(m);
    return rc;
}
