/* train_ckpt.c — the trainer's record in a checkpoint's manifest and what a resume takes from a
 * manifest (train_ckpt.h): the model check, the data position and order, the learning-rate
 * schedule's position and settings. Built with cJSON, from the model's own description of its
 * shape and the manifest's text.
 *
 * A format-2 manifest comes from an earlier zeroc, whose record meant other things (checkpoint.h
 * says which) and lacks fields:
 * - no data.tokens_consumed (before 299564d): that zeroc read optimizer step s's windows from
 *   token s × train_batch_size × sequence length on (window j = (s·A + k)·N + r starts at
 *   j·B·T), so the tokens read are the step × the sequences of its global batch (its config's
 *   train_batch_size = micro-batch × accumulation × world_size) × the sequence length. The
 *   length is not recorded: it is the model's max_seq_len unless --seq-len was shorter, so it is
 *   taken as that when this run's sequences are max_seq_len long and is unknown otherwise;
 * - no data.shuffle_order: the first shuffle (an affine cycle), which this zeroc cannot
 *   continue except from the end of an epoch;
 * - no data.seed: the config's seed (the shuffle's seed was always it);
 * - data.seed (or the config's seed) a JSON number: a double, which cJSON prints to 15 digits
 *   when those read back within its epsilon, so exact below 2^52 only (this zeroc writes the
 *   decimal text, a string); a larger one is known only to a double's precision;
 * - lr_schedule.position is the step; the schedule's position is the step less the fp16 steps
 *   skipped for DeepSpeed's scheduler, and for the trainer's --warmup/--lr-schedule the step
 *   itself before e24c65d (it advanced on skipped steps) and the step less the skipped ones
 *   after. Records with shuffle_order (32f63be on) are after; of those without, the ones of the
 *   commits between e24c65d and 32f63be are told apart by next_lr (train.c, resume_lr). */
#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli/train_ckpt.h"
#include "zeroc/checkpoint.h"

#define MAX_EXACT 9007199254740992.0 /* 2^53: counters and sizes exact in a double */

static const cJSON *item(const cJSON *o, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(o, key);
}

/* o[key] as an integer in [lo, 2^53], or -1 when it is not one. */
static int64_t int_at(const cJSON *o, const char *key, int64_t lo)
{
    const cJSON *it = item(o, key);
    double v = cJSON_IsNumber(it) ? it->valuedouble : NAN;
    return v >= (double)lo && v <= MAX_EXACT && v == floor(v) ? (int64_t)v : -1;
}

/* Appends to out (n bytes, NUL-terminated), cutting at the end. */
static void appendf(char *out, size_t n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void appendf(char *out, size_t n, const char *fmt, ...)
{
    size_t len = strlen(out);
    if (len + 1 >= n)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out + len, n - len, fmt, ap);
    va_end(ap);
}

/* {"model": NAME, <the members of m->describe>}, or NULL when out of memory. */
static cJSON *model_record(const train_opts *o, const train_model *m)
{
    char text[sizeof m->describe + 2];
    snprintf(text, sizeof text, "{%s}", m->describe);
    cJSON *shape = cJSON_Parse(text), *rec = cJSON_CreateObject();
    if (!shape || !rec || !cJSON_AddStringToObject(rec, "model", o->model)) {
        cJSON_Delete(shape);
        cJSON_Delete(rec);
        return NULL;
    }
    while (shape->child) { /* moved, in order */
        cJSON *it = cJSON_DetachItemViaPointer(shape, shape->child);
        cJSON_AddItemToObject(rec, it->string, it);
    }
    cJSON_Delete(shape);
    return rec;
}

char *train_ckpt_client(const train_opts *o, const train_model *m, const char *schedule,
                        int64_t warmup, int64_t position, double next_lr, int64_t micro_steps,
                        uint64_t tokens, int seq_len, uint64_t seed)
{
    cJSON *rec = model_record(o, m), *lr = NULL, *data = NULL;
    char seed_text[24]; /* decimal text: cJSON rounds a number (a double) from 2^52 on */
    snprintf(seed_text, sizeof seed_text, "%" PRIu64, seed);
    bool ok = rec && cJSON_AddNumberToObject(rec, "steps_planned", o->steps) &&
              (lr = cJSON_AddObjectToObject(rec, "lr_schedule")) &&
              cJSON_AddStringToObject(lr, "type", schedule) &&
              cJSON_AddNumberToObject(lr, "warmup", (double)warmup) &&
              cJSON_AddNumberToObject(lr, "position", (double)position) &&
              cJSON_AddNumberToObject(lr, "next_lr", next_lr) &&
              (data = cJSON_AddObjectToObject(rec, "data")) &&
              cJSON_AddNumberToObject(data, "micro_steps_consumed", (double)micro_steps) &&
              cJSON_AddNumberToObject(data, "tokens_consumed", (double)tokens) &&
              cJSON_AddNumberToObject(data, "seq_len", seq_len) &&
              cJSON_AddBoolToObject(data, "shuffle", o->shuffle) &&
              cJSON_AddNumberToObject(data, "shuffle_order", SHUFFLE_ORDER) &&
              cJSON_AddStringToObject(data, "seed", seed_text);
    char *text = ok ? cJSON_PrintUnformatted(rec) : NULL;
    cJSON_Delete(rec);
    return text;
}

zc_status train_ckpt_same_model(const char *dir, const char *client, const train_opts *o,
                                const train_model *m, zc_err *err)
{
    cJSON *have = client ? cJSON_Parse(client) : NULL, *want = model_record(o, m);
    zc_status st = want ? ZC_OK : zc_err_set(err, ZC_ENOMEM, "out of memory");
    for (const cJSON *w = want ? want->child : NULL; w && !st; w = w->next) {
        const cJSON *h = item(have, w->string), *hidden = item(want, "hidden"),
                    *vp = item(want, "padded_vocab_size");
        const bool tiles = !strcmp(w->string, "vocab_tile_rows"),
                   mlp_tiles = !strcmp(w->string, "mlp_tile_cols");
        /* untiled (tiles as wide as the whole), from before these tiles were recorded: the
         * MLP's, or GPT-2's vocabulary's */
        const cJSON *whole = mlp_tiles ? hidden : tiles ? vp : NULL;
        if (!h && whole && cJSON_IsNumber(w) && w->valuedouble == whole->valuedouble)
            continue;
        char *hs = h ? cJSON_PrintUnformatted(h) : NULL, *ws = cJSON_PrintUnformatted(w);
        if (!h || !hs || !ws || strcmp(hs, ws))
            st = zc_err_set(err, ZC_EINVAL,
                            "--resume %s: the checkpoint was written for %s %s, "
                            "this run has %s (resume with the same model shape%s)",
                            dir, w->string, hs ? hs : "(not recorded)", ws ? ws : "?",
                            tiles ? ": the vocabulary's tiles come from --tile-params, rows × "
                                    "hidden_size parameters each"
                            : mlp_tiles ? ": the MLP's tiles come from --tile-params, 3 × columns "
                                          "× hidden_size parameters each"
                                        : "");
        free(hs);
        free(ws);
    }
    cJSON_Delete(have);
    cJSON_Delete(want);
    return st;
}

bool train_ckpt_mlp_untiled(const char *resume)
{
    char dir[4096], *manifest = NULL;
    zc_err err = {0};
    if (zc_ckpt_resolve(resume, dir, sizeof dir, &err) ||
        zc_ckpt_manifest_json(dir, &manifest, &err))
        return false;
    cJSON *root = cJSON_Parse(manifest);
    free(manifest);
    const cJSON *client = item(root, "client");
    const bool untiled = client && !item(client, "mlp_tile_cols");
    cJSON_Delete(root);
    return untiled;
}

zc_status train_ckpt_explain_model(const char *dir, const train_opts *o, const train_model *m,
                                   zc_err *err)
{
    char *manifest = NULL, *client = NULL;
    zc_err ignored;
    if (zc_ckpt_manifest_json(dir, &manifest, &ignored))
        return ZC_OK;
    cJSON *root = cJSON_Parse(manifest);
    const cJSON *c = item(root, "client");
    client = c ? cJSON_PrintUnformatted(c) : NULL;
    zc_status st = client ? train_ckpt_same_model(dir, client, o, m, err) : ZC_OK;
    free(client);
    cJSON_Delete(root);
    free(manifest);
    return st;
}

void train_ckpt_producer(const char *manifest, char *out, size_t n)
{
    cJSON *root = cJSON_Parse(manifest);
    const cJSON *pv = item(root, "producer_version");
    out[0] = 0;
    if (cJSON_IsString(pv) && strcmp(pv->valuestring, zc_version()))
        snprintf(out, n, " (written by zeroc %s)", pv->valuestring);
    else if (!cJSON_IsString(pv))
        snprintf(out, n, " (written by an earlier zeroc: manifest format %lld)",
                 (long long)int_at(root, "format_version", 0));
    cJSON_Delete(root);
}

/* ---------- the data ---------- */

/* How the checkpoint's run read its data, from its manifest; 0 for what it does not record. */
typedef struct {
    int64_t B, A, N, G;  /* micro-batch, accumulation, ranks, sequences a step */
    bool batch_known;    /* all four recorded and G = B·A·N */
    int64_t T;           /* tokens of one sequence: recorded or derived; 0: unknown */
    bool T_assumed;      /* T is the model's max_seq_len, taken for this run's length */
    int64_t max_seq_len; /* the model's (client record), 0: none */
} ck_layout;

static ck_layout ck_read_layout(const cJSON *root, const train_ckpt_data *d)
{
    const cJSON *cfg = item(root, "config"), *client = item(root, "client"),
                *data = item(client, "data");
    ck_layout L = {.B = int_at(cfg, "train_micro_batch_size_per_gpu", 1),
                   .A = int_at(cfg, "gradient_accumulation_steps", 1),
                   .N = int_at(root, "world_size", 1),
                   .G = int_at(cfg, "train_batch_size", 1),
                   .max_seq_len = int_at(client, "max_seq_len", 1)};
    L.batch_known = L.B > 0 && L.A > 0 && L.N > 0 && L.G > 0 && L.B <= (1 << 30) &&
                    L.A <= (1 << 30) && L.N <= (1 << 20) && L.G == L.B * L.A * L.N;
    int64_t t = int_at(data, "seq_len", 1);
    if (t > 0)
        L.T = t;
    else if (L.max_seq_len > 0 && d->seq_len == L.max_seq_len)
        L.T = L.max_seq_len, L.T_assumed = true;
    return L;
}

/* "micro-batch B x accumulation A x N ranks" into out. */
static const char *batch_words(int64_t B, int64_t A, int64_t N, char out[96])
{
    snprintf(out, 96, "micro-batch %lld x accumulation %lld x %lld rank%s", (long long)B,
             (long long)A, (long long)N, N == 1 ? "" : "s");
    return out;
}

static uint64_t gcd64(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* The refusal of a checkpoint shuffled in an earlier zeroc's order: where its epoch stands and
 * the step that ends it, when they can be told (windows_read: windows its run read, per_step:
 * windows a step; W: windows an epoch, 0 unknown). */
static zc_status refuse_earlier_order(const char *dir, bool shuffle, uint64_t windows_read,
                                      uint64_t per_step, uint64_t W, int64_t step, zc_err *err)
{
    char where[320] = "";
    if (W >= 2 && per_step > 0) {
        const uint64_t period = W / gcd64(per_step, W),
                       end = ((uint64_t)step / period + 1) * period;
        snprintf(where, sizeof where,
                 "it stopped %llu windows into an epoch of %llu; finish that epoch with the zeroc "
                 "that wrote it (train it on to --steps %llu, the first step that ends an epoch) "
                 "and resume that checkpoint here with --shuffle",
                 (unsigned long long)(windows_read % W), (unsigned long long)W,
                 (unsigned long long)end);
    } else
        snprintf(where, sizeof where,
                 "finish its epoch with the zeroc that wrote it and resume the checkpoint of the "
                 "step that ends it here with --shuffle");
    return zc_err_set(err, ZC_EINVAL,
                      "--resume %s: its run shuffled the data in an earlier zeroc's window order "
                      "(its record has no data.shuffle_order: one affine cycle over the file's "
                      "windows, rotated each epoch), which this zeroc does not reproduce (it "
                      "shuffles with a keyed permutation, a new one every epoch: shuffle_order "
                      "%d); going on here %s would repeat or miss windows of the epoch under way: "
                      "%s",
                      dir, SHUFFLE_ORDER, shuffle ? "in this order" : "in order, as this run asks,",
                      where);
}

/* The shuffle's seed a record holds (data.seed, else the config's seed; *have false when
 * neither), in *exact when it is known exactly: this zeroc writes it as decimal text; earlier ones
 * as a JSON number, which cJSON reads into a double and prints to 15 digits when they read back
 * within |v| x DBL_EPSILON (else 17), so a number of 2^52 on (where that is 1 or more) is the seed
 * only to a double's precision (*is_exact false, *approx the number). A data.seed neither text of
 * a seed nor a number is refused naming it. */
static zc_status recorded_seed(const char *dir, const cJSON *root, bool *have, uint64_t *exact,
                               bool *is_exact, double *approx, zc_err *err)
{
    *have = true;
    const cJSON *seed = item(item(item(root, "client"), "data"), "seed");
    if (cJSON_IsString(seed)) {
        const char *t = seed->valuestring;
        size_t n = strspn(t, "0123456789");
        errno = 0;
        unsigned long long v = n > 0 && n <= 20 && t[n] == 0 ? strtoull(t, NULL, 10) : 0;
        if (n == 0 || n > 20 || t[n] != 0 || errno == ERANGE)
            return zc_err_set(err, ZC_EINVAL,
                              "--resume %s: its manifest's client.data.seed is \"%.40s\", not "
                              "the decimal text of a seed in [0, 18446744073709551615]",
                              dir, t);
        *exact = (uint64_t)v;
        *is_exact = true;
        return ZC_OK;
    }
    if (!cJSON_IsNumber(seed)) /* an earlier zeroc's: the config's seed is the shuffle's */
        seed = item(item(root, "config"), "seed");
    if (!cJSON_IsNumber(seed)) {
        *have = false;
        return ZC_OK;
    }
    *approx = seed->valuedouble;
    *is_exact = *approx >= 0 && *approx < MAX_EXACT / 2 && *approx == floor(*approx);
    *exact = *is_exact ? (uint64_t)*approx : 0;
    return ZC_OK;
}

/* The value of it for a message: a number as %.17g, a string quoted, else its JSON kind (the
 * manifest comes reprinted by cJSON, which writes a number out of a double's range as null). */
static const char *shown_value(const cJSON *it, char out[96])
{
    if (cJSON_IsNumber(it))
        snprintf(out, 96, "%.17g", it->valuedouble);
    else if (cJSON_IsString(it))
        snprintf(out, 96, "\"%.40s\"", it->valuestring);
    else
        snprintf(out, 96, "%s",
                 cJSON_IsBool(it)     ? "a boolean"
                 : cJSON_IsNull(it)   ? "null (or a number past a double's range, as 1e999)"
                 : cJSON_IsArray(it)  ? "an array"
                 : cJSON_IsObject(it) ? "an object"
                                      : "missing");
    return out;
}

/* o[key], when present, an integer in [lo, hi]; *v its value (-1 when absent). */
static zc_status check_int(const char *path, const char *where, const cJSON *o, const char *key,
                           double lo, double hi, int64_t *v, zc_err *err)
{
    const cJSON *it = item(o, key);
    *v = -1;
    if (!it)
        return ZC_OK;
    const double x = cJSON_IsNumber(it) ? it->valuedouble : NAN;
    char b[96];
    if (!(x >= lo && x <= hi && x == floor(x)))
        return zc_err_set(err, ZC_EINVAL, "%s: %s%s is %s, expected an integer from %.0f to %.0f",
                          path, where, key, shown_value(it, b), lo, hi);
    *v = (int64_t)x;
    return ZC_OK;
}

zc_status train_ckpt_check_record(const char *dir, const char *manifest, zc_err *err)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    cJSON *root = cJSON_Parse(manifest);
    if (!root)
        return zc_err_set(err, ZC_EINVAL, "%s: not valid JSON", path);
    const cJSON *client = item(root, "client"), *model = item(client, "model");
    const cJSON *sched = item(client, "lr_schedule"), *data = item(client, "data");
    zc_status st = ZC_OK;
    int64_t step = int_at(root, "step", 0), opt = int_at(root, "optimizer_steps", 0),
            skipped = int_at(item(root, "loss_scaler"), "skipped", 0), v, tokens, seq_len;
    char b[96];
    if (!cJSON_IsString(model)) /* not the trainer's record (a program's own): not ours to judge */
        goto out;
    /* the manifest reader checked these three; the trainer counts every step not skipped */
    if (step >= 0 && opt >= 0 && skipped >= 0 && opt != step - skipped) {
        st = zc_err_set(err, ZC_EINVAL,
                        "%s: optimizer_steps is %lld, expected step %lld - loss_scaler.skipped "
                        "%lld = %lld (the optimizer steps a run of %lld steps took; Adam's bias "
                        "correction continues from it)",
                        path, (long long)opt, (long long)step, (long long)skipped,
                        (long long)(step - skipped), (long long)step);
        goto out;
    }
    if ((st = check_int(path, "client.", client, "steps_planned", step < 0 ? 0 : (double)step,
                        INT32_MAX, &v, err)))
        goto out;
    if (sched && !cJSON_IsObject(sched)) {
        st = zc_err_set(err, ZC_EINVAL, "%s: client.lr_schedule is %s, expected an object", path,
                        shown_value(sched, b));
        goto out;
    }
    const cJSON *next = item(sched, "next_lr");
    if (next && !(cJSON_IsNumber(next) && isfinite(next->valuedouble) && next->valuedouble >= 0)) {
        st = zc_err_set(err, ZC_EINVAL,
                        "%s: client.lr_schedule.next_lr is %s, expected a finite learning rate "
                        ">= 0",
                        path, shown_value(next, b));
        goto out;
    }
    if ((st = check_int(path, "client.lr_schedule.", sched, "warmup", 0, MAX_EXACT, &v, err)) ||
        (st = check_int(path, "client.lr_schedule.", sched, "position", -MAX_EXACT, MAX_EXACT, &v,
                        err)))
        goto out;
    if (data && !cJSON_IsObject(data)) {
        st = zc_err_set(err, ZC_EINVAL, "%s: client.data is %s, expected an object", path,
                        shown_value(data, b));
        goto out;
    }
    if ((st = check_int(path, "client.data.", data, "micro_steps_consumed", 0, MAX_EXACT, &v,
                        err)) ||
        (st = check_int(path, "client.data.", data, "tokens_consumed", 0, MAX_EXACT, &tokens,
                        err)) ||
        (st = check_int(path, "client.data.", data, "seq_len", 0, INT32_MAX, &seq_len, err)) ||
        (st = check_int(path, "client.data.", data, "shuffle_order", 0, INT32_MAX, &v, err)))
        goto out;
    /* a model of sequences reads seq_len tokens a window (generated data, the MLP's, none) */
    if (seq_len == 0 && (strcmp(model->valuestring, "mlp") || tokens > 0)) {
        st = zc_err_set(err, ZC_EINVAL,
                        "%s: client.data.seq_len is 0, expected the tokens of one sequence (>= 1) "
                        "for model %s%s",
                        path, model->valuestring, tokens > 0 ? " that read tokens" : "");
        goto out;
    }
    const cJSON *shuffle = item(data, "shuffle"), *seed = item(data, "seed");
    if (shuffle && !cJSON_IsBool(shuffle)) {
        st = zc_err_set(err, ZC_EINVAL, "%s: client.data.shuffle is %s, expected true or false",
                        path, shown_value(shuffle, b));
        goto out;
    }
    const char *t = cJSON_IsString(seed) ? seed->valuestring : "";
    const size_t n = strspn(t, "0123456789");
    errno = 0;
    if (cJSON_IsString(seed) && n > 0 && n <= 20 && !t[n])
        (void)strtoull(t, NULL, 10);
    if (seed && !(cJSON_IsString(seed) && n > 0 && n <= 20 && !t[n] && errno != ERANGE) &&
        !(cJSON_IsNumber(seed) && seed->valuedouble >= 0 &&
          seed->valuedouble <= 18446744073709551615.0 &&
          seed->valuedouble == floor(seed->valuedouble)))
        st = zc_err_set(err, ZC_EINVAL,
                        "%s: client.data.seed is %s, not the decimal text of a seed in [0, "
                        "18446744073709551615]",
                        path, shown_value(seed, b));
out:
    cJSON_Delete(root);
    return st;
}

/* A shuffled resume: the same seed and the same micro-batch, sequence length and windows a step,
 * on which the order depends (the global batch in tokens is not enough: 2 × 2 windows of 2
 * sequences and 1 × 4 of 4 read as many tokens in other orders). A seed recorded only to a
 * double's precision is taken when this one agrees with it to that precision, with a note
 * (note_len bytes) saying so. */
static zc_status check_shuffled(const char *dir, const cJSON *root, const train_ckpt_data *d,
                                const ck_layout *L, int64_t step, char *note, size_t note_len,
                                zc_err *err)
{
    const cJSON *data = item(item(root, "client"), "data");
    const cJSON *used = item(data, "tokens_consumed");
    uint64_t seed = 0;
    bool have = false, exact = false;
    double approx = NAN;
    zc_status st = recorded_seed(dir, root, &have, &seed, &exact, &approx, err);
    if (st)
        return st;
    /* the seed was rounded to a double (half an ulp: up to |v| x DBL_EPSILON), then printed to 15
     * digits within |v| x DBL_EPSILON, and a reader may have printed it so again: 3 epsilons */
    const double mine_d = (double)d->seed;
    if (have && exact && seed != d->seed)
        return zc_err_set(err, ZC_EINVAL,
                          "--resume %s: its run shuffled the data with seed %" PRIu64
                          ", this one has seed %" PRIu64 " (resume with the same seed)",
                          dir, seed, d->seed);
    if (have && !exact && !(fabs(approx - mine_d) <= 3 * DBL_EPSILON * fabs(approx)))
        return zc_err_set(err, ZC_EINVAL,
                          "--resume %s: its run shuffled the data with seed %.17g (its manifest, "
                          "of an earlier zeroc, holds the seed as a double, exact only below "
                          "2^52), this one has seed %" PRIu64 " (resume with the same seed)",
                          dir, approx, d->seed);
    if (have && !exact)
        snprintf(note, note_len,
                 "data: %s records the shuffle's seed as a double (%.17g, an earlier zeroc's "
                 "manifest), exact only below 2^52; this run's seed %" PRIu64 " agrees with it "
                 "to a double's precision, all it can be checked to\n",
                 dir, approx, d->seed);
    if (d->seq_len <= 0)
        return ZC_OK;
    const int64_t AN = (int64_t)d->accum * d->ranks;
    const double mine = (double)step * d->micro_batch * (double)AN * d->seq_len;
    /* the sequence length: recorded; else from tokens_consumed (a shuffled run kept one global
     * batch all along); else taken as max_seq_len, or unknown (ck_read_layout) */
    int64_t T = L->T;
    if (int_at(data, "seq_len", 1) < 0 && cJSON_IsNumber(used) && L->batch_known &&
        fmod(used->valuedouble, (double)step * (double)L->G) == 0)
        T = (int64_t)(used->valuedouble / ((double)step * (double)L->G));
    bool same = L->batch_known
                    ? L->B == d->micro_batch && L->A * L->N == AN && (T <= 0 || T == d->seq_len)
                    : !cJSON_IsNumber(used) || used->valuedouble == mine;
    if (same)
        return ZC_OK;
    char had[96], has[96], len[48] = "";
    if (T > 0)
        snprintf(len, sizeof len, " of %lld-token sequences", (long long)T);
    if (L->batch_known)
        return zc_err_set(err, ZC_EINVAL,
                          "--resume %s: a shuffled order cannot continue under another "
                          "micro-batch, sequence length or number of windows a step (the order "
                          "depends on each): its run read %s%s, this one reads %s of %d-token "
                          "sequences (resume with micro-batch %lld, accumulation x ranks = %lld%s)",
                          dir, batch_words(L->B, L->A, L->N, had), len,
                          batch_words(d->micro_batch, d->accum, d->ranks, has), d->seq_len,
                          (long long)L->B, (long long)(L->A * L->N),
                          T > 0 ? " and that length" : "");
    return zc_err_set(err, ZC_EINVAL,
                      "--resume %s: its run read %.0f tokens in %lld steps; this one reads %.0f a "
                      "step, and a shuffled order cannot continue under another global batch "
                      "(resume with its micro-batch x accumulation x ranks and sequence length)",
                      dir, used->valuedouble, (long long)step, mine / (double)step);
}

zc_status train_ckpt_resume_data(const char *dir, const char *manifest, const train_ckpt_data *d,
                                 int64_t step, train_model *m, uint64_t *tokens, char *note,
                                 size_t note_len, zc_err *err)
{
    *tokens = 0;
    note[0] = 0;
    cJSON *root = cJSON_Parse(manifest);
    const cJSON *data = item(item(root, "client"), "data"), *shuffle = item(data, "shuffle"),
                *order = item(data, "shuffle_order"), *used = item(data, "tokens_consumed");
    if (!cJSON_IsBool(shuffle) || step <= 0) { /* no record: taken as it is */
        cJSON_Delete(root);
        return ZC_OK;
    }
    const bool shuffled = cJSON_IsTrue(shuffle),
               earlier =
                   shuffled && !(cJSON_IsNumber(order) && order->valuedouble == SHUFFLE_ORDER);
    const ck_layout L = ck_read_layout(root, d);
    const int64_t G = (int64_t)d->micro_batch * d->accum * d->ranks; /* sequences a step */
    const double per_step = (double)G * d->seq_len, mine = (double)step * per_step;
    /* windows (micro-batches of one rank) the checkpoint's run read, as its shuffle counted */
    const uint64_t ck_per_step =
                       L.batch_known ? (uint64_t)(L.A * L.N) : (uint64_t)d->accum * d->ranks,
                   read = (uint64_t)step * ck_per_step;
    /* where an earlier zeroc's shuffled epoch stands: at its end nothing of the next epoch is
     * read yet, and this zeroc's order may begin it (one window an epoch: no order to keep) */
    const uint64_t W = d->epoch_windows;
    const bool epoch_end = W == 1 || (W >= 2 && read % W == 0);
    zc_status st = ZC_OK;
    if (shuffled != d->shuffle && earlier && !epoch_end)
        st = refuse_earlier_order(dir, false, read, ck_per_step, W, step, err);
    else if (shuffled != d->shuffle)
        st = zc_err_set(err, ZC_EINVAL,
                        "--resume %s: its run read the data %s; this one would read it %s, and "
                        "the windows it has seen would not follow (resume %s --shuffle)",
                        dir, d->shuffle ? "in order" : "shuffled",
                        d->shuffle ? "shuffled" : "in order", d->shuffle ? "without" : "with");
    else if (d->shuffle) {
        st = check_shuffled(dir, root, d, &L, step, note, note_len, err);
        if (!st && earlier && !epoch_end)
            st = refuse_earlier_order(dir, true, read, ck_per_step, W, step, err);
        else if (!st && earlier && W >= 2)
            appendf(note, note_len,
                    "data: %s was shuffled in an earlier zeroc's window order and stopped at the "
                    "end of an epoch; this run shuffles the next epochs in this zeroc's order "
                    "(shuffle_order %d)\n",
                    dir, SHUFFLE_ORDER);
    } else if (d->seq_len > 0) { /* in order, from a file */
        double have = NAN;
        char how[320] = "";
        if (cJSON_IsNumber(used))
            have = used->valuedouble;
        else if (L.batch_known && L.T > 0) { /* an earlier zeroc's: step × its batch */
            have = (double)step * (double)L.G * (double)L.T;
            snprintf(how, sizeof how,
                     " (its manifest, of an earlier zeroc, records no data.tokens_consumed: "
                     "%lld steps x train_batch_size %lld sequences x %lld tokens%s)",
                     (long long)step, (long long)L.G, (long long)L.T,
                     L.T_assumed ? ", its max_seq_len, the length of its sequences unless "
                                   "--seq-len was shorter"
                                 : "");
        }
        if (!isnan(have) && have != mine && m->resume_data) {
            m->resume_data(m, (uint64_t)have, step);
            *tokens = (uint64_t)have;
            snprintf(note, note_len,
                     "data: the checkpoint's run had read %.0f tokens of --data%s; this run reads "
                     "%.0f a step and goes on from there\n",
                     have, how, per_step);
        } else if (isnan(have) && !(L.batch_known && L.G == G)) {
            char had[160], has[96], why[200];
            if (L.T <= 0 && L.max_seq_len > 0)
                snprintf(why, sizeof why,
                         "and with --seq-len %d shorter than the model's max_seq_len %lld the "
                         "length of its sequences is not known either",
                         d->seq_len, (long long)L.max_seq_len);
            else
                snprintf(why, sizeof why, "and its global batch is not recorded either");
            char words[96];
            if (L.batch_known)
                snprintf(had, sizeof had, "%lld sequences a step (%s)", (long long)L.G,
                         batch_words(L.B, L.A, L.N, words));
            else
                snprintf(had, sizeof had, "an unrecorded number of sequences a step");
            st = zc_err_set(err, ZC_EINVAL,
                            "--resume %s: the checkpoint, written by an earlier zeroc, does not "
                            "record how many tokens of --data its run read, %s: its run read %s, "
                            "this one reads %lld (%s), so where it stopped in the file cannot be "
                            "found (resume with its global batch, or finish with the zeroc that "
                            "wrote it)",
                            dir, why, had, (long long)G,
                            batch_words(d->micro_batch, d->accum, d->ranks, has));
        } else if (isnan(have) && L.T <= 0 && L.max_seq_len > 0)
            /* the same sequences a step, their length unknown: the step's own position is
             * right only if the checkpoint's run used this run's --seq-len */
            snprintf(note, note_len,
                     "data: %s (an earlier zeroc's) records neither the tokens its run read nor "
                     "its sequence length (max_seq_len %lld); this run goes on from step %lld x "
                     "%lld sequences x its --seq-len %d, which is where that run stopped only if "
                     "it used --seq-len %d too\n",
                     dir, (long long)L.max_seq_len, (long long)step, (long long)G, d->seq_len,
                     d->seq_len);
    }
    cJSON_Delete(root);
    return st;
}

/* ---------- the learning-rate schedule ---------- */

zc_status train_ckpt_lr_record(const char *dir, const char *manifest, train_ckpt_lr *lr,
                               zc_err *err)
{
    cJSON *root = cJSON_Parse(manifest);
    const cJSON *client = item(root, "client"), *sched = item(client, "lr_schedule"),
                *next = item(sched, "next_lr"), *type = item(sched, "type");
    const int64_t format = int_at(root, "format_version", 0), step = int_at(root, "step", 0),
                  skipped = int_at(item(root, "loss_scaler"), "skipped", 0);
    *lr = (train_ckpt_lr){.other = -1, .next_lr = NAN, .skipped = skipped > 0 ? skipped : 0};
    zc_status st = ZC_OK;
    if (cJSON_IsObject(sched)) {
        const int64_t pos = int_at(sched, "position", 0);
        lr->recorded = true;
        lr->next_lr = cJSON_IsNumber(next) ? next->valuedouble : NAN;
        const bool deepspeed =
            cJSON_IsString(type) &&
            (!strcmp(type->valuestring, "WarmupLR") || !strcmp(type->valuestring, "WarmupDecayLR"));
        const bool after_e24c65d = item(item(client, "data"), "shuffle_order") != NULL;
        if (pos < 0 || pos > step)
            st = zc_err_set(err, ZC_EINVAL,
                            "--resume %s: the manifest's client.lr_schedule.position is not an "
                            "integer from 0 to its step %lld",
                            dir, (long long)step);
        else if (format >= 3)
            lr->position = pos;
        else if (pos < lr->skipped)
            st = zc_err_set(err, ZC_EINVAL,
                            "--resume %s: the manifest's loss_scaler.skipped %lld exceeds its "
                            "client.lr_schedule.position %lld",
                            dir, (long long)lr->skipped, (long long)pos);
        else if (deepspeed || after_e24c65d || !lr->skipped)
            lr->position = pos - lr->skipped;
        else /* the trainer's own schedule, before shuffle_order: it counted skipped steps */
            lr->position = pos, lr->other = pos - lr->skipped, lr->counted_skipped = true;
    }
    cJSON_Delete(root);
    return st;
}

/* Adds "what A there, B here (to keep the checkpoint's, KEEP A WHERE; EXTRA)" to out when the
 * JSON values A and B differ (numbers by value). keep, where and extra may be NULL. */
static void add_change(char *out, size_t n, const char *what, const cJSON *there, const cJSON *here,
                       const char *keep, const char *where, const char *extra)
{
    /* strings as they are, anything else as JSON */
    char *a = cJSON_IsString(there) ? strdup(there->valuestring)
              : there               ? cJSON_PrintUnformatted(there)
                                    : NULL,
         *b = cJSON_IsString(here) ? strdup(here->valuestring)
              : here               ? cJSON_PrintUnformatted(here)
                                   : NULL;
    const bool differ = cJSON_IsNumber(there) && cJSON_IsNumber(here)
                            ? there->valuedouble != here->valuedouble
                            : strcmp(a ? a : "none", b ? b : "none") != 0;
    if (differ) {
        appendf(out, n, "%s%s %s there, %s here", out[0] ? "; " : "", what, a ? a : "none",
                b ? b : "none");
        if (keep && a)
            appendf(out, n, " (to keep the checkpoint's, %s %s%s%s%s)", keep, a, where ? where : "",
                    extra ? "; " : "", extra ? extra : "");
        else if (extra)
            appendf(out, n, " (%s)", extra);
    }
    free(a);
    free(b);
}

/* "the config's scheduler WarmupLR" or "--lr-schedule cosine" into out. */
static const char *schedule_words(const cJSON *sched, const char *trainers, char out[96])
{
    const cJSON *t = item(sched, "type");
    if (cJSON_IsObject(sched))
        snprintf(out, 96, "the config's scheduler %s", cJSON_IsString(t) ? t->valuestring : "?");
    else
        snprintf(out, 96, "--lr-schedule %s", trainers ? trainers : "?");
    return out;
}

void train_ckpt_lr_changes(const char *manifest, const char *config_json, const train_opts *o,
                           const char *schedule, int64_t warmup, char *out, size_t n)
{
    cJSON *root = cJSON_Parse(manifest), *mine = cJSON_Parse(config_json);
    const cJSON *client = item(root, "client"), *rec = item(client, "lr_schedule"),
                *ck_cfg = item(root, "config"), *ck_sched = item(ck_cfg, "scheduler"),
                *my_sched = item(mine, "scheduler");
    out[0] = 0;
    if (cJSON_IsObject(ck_sched) && cJSON_IsObject(my_sched)) {
        add_change(out, n, "scheduler.type", item(ck_sched, "type"), item(my_sched, "type"),
                   "set scheduler.type to", " in the config", NULL);
        static const char *const keys[] = {"warmup_min_lr", "warmup_max_lr", "warmup_num_steps",
                                           "total_num_steps", "warmup_type"};
        for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
            char what[64], keep[96];
            snprintf(what, sizeof what, "scheduler.params.%s", keys[i]);
            snprintf(keep, sizeof keep, "set %s to", what);
            add_change(out, n, what, item(item(ck_sched, "params"), keys[i]),
                       item(item(my_sched, "params"), keys[i]), keep, " in the config",
                       !strcmp(keys[i], "warmup_max_lr")
                           ? "left out, it is DeepSpeed's default 0.001"
                       : !strcmp(keys[i], "total_num_steps") ? "left out, it is --steps"
                                                             : NULL);
        }
    } else if (cJSON_IsObject(ck_sched) || cJSON_IsObject(my_sched)) {
        const cJSON *type = item(rec, "type");
        char there[96], here[96];
        appendf(out, n, "%s there, %s here (to keep the checkpoint's, %s)",
                schedule_words(ck_sched, cJSON_IsString(type) ? type->valuestring : NULL, there),
                schedule_words(my_sched, schedule, here),
                cJSON_IsObject(ck_sched) ? "give the config the checkpoint's scheduler section"
                                         : "leave the scheduler section out of the config");
    } else {
        cJSON *w = cJSON_CreateNumber((double)warmup), *s = cJSON_CreateString(schedule),
              *steps = cJSON_CreateNumber(o->steps);
        add_change(out, n, "--lr", item(item(item(ck_cfg, "optimizer"), "params"), "lr"),
                   item(item(item(mine, "optimizer"), "params"), "lr"), "give --lr", NULL, NULL);
        add_change(out, n, "--lr-schedule", item(rec, "type"), s, "give --lr-schedule", NULL, NULL);
        add_change(out, n, "--warmup", item(rec, "warmup"), w, "give --warmup", NULL, NULL);
        if (!strcmp(schedule, "cosine")) /* it decays to --steps */
            add_change(out, n, "--steps", item(client, "steps_planned"), steps, NULL, NULL,
                       "the cosine decays to 10% of the peak at the last step");
        cJSON_Delete(w);
        cJSON_Delete(s);
        cJSON_Delete(steps);
    }
    cJSON_Delete(root);
    cJSON_Delete(mine);
}
