/* ckpt_shape.c — a decoder's shape in a zeroc checkpoint's manifest, written and read back
 * (ckpt_shape.h). */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "models/gpt2/ckpt_shape.h"

static void describe_arch(const gpt2_config *c, char *out, size_t cap);

/* The vocabulary's tiles (gpt2_config.tile_params) as the run registered them: absent in
 * checkpoints from before tiling, which are untiled. */
static zc_status vocab_tiles_shape(zc_ckpt_reader *r, const char *dir, gpt2_config *gc, zc_err *err)
{
    int64_t rows;
    gc->tile_params = -1;
    if (zc_ckpt_reader_client_int(r, "vocab_tile_rows", &rows))
        return ZC_OK;
    const int blk = gpt2_head_block_rows(gc), Vp = gc->padded_vocab_size;
    if (rows < 1 || rows > Vp || (rows < Vp && rows % blk))
        return zc_err_set(err, ZC_EINVAL,
                          "%s/manifest.json: client.vocab_tile_rows is %lld, expected the padded "
                          "vocabulary %d or a multiple of %d below it",
                          dir, (long long)rows, Vp, blk);
    if (rows < Vp)
        gc->tile_params = rows * (int64_t)gc->channels;
    return ZC_OK;
}

static zc_status base_shape(zc_ckpt_reader *r, const char *dir, gpt2_config *gc, zc_err *err)
{
    *gc = (gpt2_config){0}; /* GPT-2 unless the record says otherwise */
    struct {
        const char *key;
        int *field;
    } fields[] = {{"max_seq_len", &gc->max_seq_len},
                  {"vocab_size", &gc->vocab_size},
                  {"padded_vocab_size", &gc->padded_vocab_size},
                  {"num_layers", &gc->num_layers},
                  {"num_heads", &gc->num_heads},
                  {"channels", &gc->channels}};
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
        int64_t v;
        if (zc_ckpt_reader_client_int(r, fields[i].key, &v))
            return zc_err_set(err, ZC_EINVAL,
                              "%s: not a GPT-2 checkpoint of zeroc train (the manifest's client "
                              "has no integer %s)",
                              dir, fields[i].key);
        if (v < 1 || v > INT_MAX)
            return zc_err_set(err, ZC_EINVAL,
                              "%s/manifest.json: client.%s is %lld, expected 1 to %d", dir,
                              fields[i].key, (long long)v, INT_MAX);
        *fields[i].field = (int)v;
    }
    /* the architecture beyond GPT-2's, when recorded (checkpoints of GPT-2 have none of it) */
    char fam[sizeof gc->family];
    int64_t unused;
    double unused_d;
    if (zc_ckpt_reader_client_string(r, "family", fam, sizeof fam)) {
        if (zc_ckpt_reader_client_int(r, "kv_heads", &unused) && /* GPT-2: no record beyond */
            zc_ckpt_reader_client_number(r, "rope_theta", &unused_d))
            return vocab_tiles_shape(r, dir, gc, err);
        return zc_err_set(err, ZC_EINVAL,
                          "%s/manifest.json: client.family must be llama, qwen2 or mistral "
                          "beside the architecture's fields",
                          dir);
    }
    if (strcmp(fam, "llama") && strcmp(fam, "qwen2") && strcmp(fam, "mistral"))
        return zc_err_set(err, ZC_EINVAL,
                          "%s/manifest.json: client.family \"%s\": expected llama, qwen2 or "
                          "mistral",
                          dir, fam);
    snprintf(gc->family, sizeof gc->family, "%s", fam);
    struct {
        const char *key;
        int *field;
        int lo, hi;
    } arch[] = {{"kv_heads", &gc->kv_heads, 1, INT_MAX},
                {"head_dim", &gc->head_dim, 1, INT_MAX},
                {"hidden", &gc->hidden, 1, INT_MAX},
                {"norm", (int *)&gc->norm, 0, GPT2_NORM_RMSNORM},
                {"mlp", (int *)&gc->mlp, 0, GPT2_MLP_SWIGLU},
                {"bias", (int *)&gc->bias, 0, GPT2_BIAS_NONE},
                {"pos", (int *)&gc->pos, 0, GPT2_POS_ROPE},
                {"rope_orig_max", &gc->rope_orig_max, 0, INT_MAX}};
    for (size_t i = 0; i < sizeof arch / sizeof *arch; i++) {
        int64_t v;
        if (zc_ckpt_reader_client_int(r, arch[i].key, &v) || v < arch[i].lo || v > arch[i].hi)
            return zc_err_set(err, ZC_EINVAL,
                              "%s/manifest.json: client.%s must be an integer from %d to %d", dir,
                              arch[i].key, arch[i].lo, arch[i].hi);
        *arch[i].field = (int)v;
    }
    int64_t untied;
    double eps;
    const struct {
        const char *key;
        double *field;
    } real[] = {{"norm_eps", &eps},
                {"rope_theta", &gc->rope_theta},
                {"rope_factor", &gc->rope_factor},
                {"rope_low_freq", &gc->rope_low_freq},
                {"rope_high_freq", &gc->rope_high_freq}};
    for (size_t i = 0; i < sizeof real / sizeof *real; i++)
        if (zc_ckpt_reader_client_number(r, real[i].key, real[i].field) || *real[i].field < 0)
            return zc_err_set(err, ZC_EINVAL, "%s/manifest.json: client.%s must be a number >= 0",
                              dir, real[i].key);
    if (zc_ckpt_reader_client_int(r, "untied", &untied) || untied < 0 || untied > 1)
        return zc_err_set(err, ZC_EINVAL, "%s/manifest.json: client.untied must be 0 or 1", dir);
    gc->norm_eps = eps;
    gc->untied = untied;
    int64_t cols;
    /* the MLP's tiles as the run registered them (absent: untiled) */
    gc->mlp_tile_cols = gpt2_hidden(gc);
    if (!zc_ckpt_reader_client_int(r, "mlp_tile_cols", &cols)) {
        const int I = gpt2_hidden(gc), bw = gpt2_mlp_block_cols(gc);
        if (cols < 1 || (cols < I && (!bw || cols % bw)) || cols > I)
            return zc_err_set(err, ZC_EINVAL,
                              "%s/manifest.json: client.mlp_tile_cols is %lld, expected the "
                              "MLP's width %d or a multiple of %d below it",
                              dir, (long long)cols, I, bw ? bw : I);
        gc->mlp_tile_cols = (int)cols;
    }
    return vocab_tiles_shape(r, dir, gc, err);
}

/* LoRA's settings, when the run had adapters (client.lora_r absent: none). */
static zc_status lora_shape(zc_ckpt_reader *r, const char *dir, gpt2_lora *l, zc_err *err)
{
    int64_t rank, targets, seed;
    *l = (gpt2_lora){0};
    if (zc_ckpt_reader_client_int(r, "lora_r", &rank))
        return ZC_OK;
    if (rank < 1 || rank > 65536 || zc_ckpt_reader_client_int(r, "lora_targets", &targets) ||
        targets < 1 || targets >= (1 << LORA_NTARGETS) ||
        zc_ckpt_reader_client_number(r, "lora_alpha", &l->alpha) ||
        zc_ckpt_reader_client_number(r, "lora_dropout", &l->dropout) ||
        zc_ckpt_reader_client_int(r, "lora_seed", &seed))
        return zc_err_set(err, ZC_EINVAL,
                          "%s/manifest.json: client.lora_r must be 1 to 65536 beside lora_targets "
                          "(a bit set), lora_alpha, lora_dropout and lora_seed",
                          dir);
    l->r = (int)rank, l->targets = (unsigned)targets, l->seed = (uint64_t)seed;
    return lora_check(l, err);
}

zc_status gpt2_checkpoint_shape(zc_ckpt_reader *r, const char *dir, gpt2_config *gc, zc_err *err)
{
    zc_status st = base_shape(r, dir, gc, err);
    return st ? st : lora_shape(r, dir, &gc->lora, err);
}

/* The LoRA members of the record (none without adapters). */
static void describe_lora(const gpt2_lora *l, char *out, size_t cap)
{
    if (l->r > 0)
        snprintf(out, cap,
                 ", \"lora_r\": %d, \"lora_alpha\": %.17g, \"lora_dropout\": %.17g, "
                 "\"lora_targets\": %u, \"lora_seed\": %lld",
                 l->r, l->alpha, l->dropout, l->targets, (long long)(l->seed & INT64_MAX));
}

void gpt2_describe(const gpt2_config *c, char *out, size_t cap)
{
    describe_arch(c, out, cap);
    const size_t n = strlen(out);
    describe_lora(&c->lora, out + n, cap - n);
}

static void describe_arch(const gpt2_config *c, char *out, size_t cap)
{
    int n = snprintf(out, cap,
                     "\"max_seq_len\": %d, \"vocab_size\": %d, \"padded_vocab_size\": %d, "
                     "\"num_layers\": %d, \"num_heads\": %d, \"channels\": %d",
                     c->max_seq_len, c->vocab_size, c->padded_vocab_size, c->num_layers,
                     c->num_heads, c->channels);
    int rows, cols;
    gpt2_vocab_tiles(c, &rows);
    if (!c->family[0] && n >= 0 && (size_t)n < cap) /* GPT-2: its vocabulary's tiles */
        snprintf(out + n, cap - (size_t)n, ", \"vocab_tile_rows\": %d", rows);
    if (!c->family[0] || n < 0 || (size_t)n >= cap)
        return;
    gpt2_mlp_tiles(c, &cols);
    snprintf(out + n, cap - (size_t)n,
             ", \"family\": \"%s\", \"kv_heads\": %d, \"head_dim\": %d, \"hidden\": %d, "
             "\"norm\": %d, \"mlp\": %d, \"bias\": %d, \"pos\": %d, \"untied\": %d, "
             "\"norm_eps\": %.17g, \"rope_theta\": %.17g, \"rope_factor\": %.17g, "
             "\"rope_low_freq\": %.17g, \"rope_high_freq\": %.17g, \"rope_orig_max\": %d, "
             "\"vocab_tile_rows\": %d, \"mlp_tile_cols\": %d",
             c->family, gpt2_kv_heads(c), gpt2_head_dim(c), gpt2_hidden(c), (int)c->norm,
             (int)c->mlp, (int)c->bias, (int)c->pos, (int)c->untied, (double)c->norm_eps,
             c->rope_theta, c->rope_factor, c->rope_low_freq, c->rope_high_freq, c->rope_orig_max,
             rows, cols);
}
