/* hf_decoder.c — Llama-family files of Hugging Face transformers (hf_decoder.h): config.json
 * read into the decoder's architecture record, the safetensors file or shards loaded into the
 * engine (q|k|v and gate|up fused by rows on the way in), and checkpoints exported back to them.
 * The safetensors and JSON readers are hf_safetensors.c's; GPT-2's names are hf_files.c's. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "models/gpt2/lora_merge.h"
#include "models/gpt2/hf_decoder.h"
#include "models/gpt2/hf_files.h"
#include "models/gpt2/hf_safetensors.h"
#include "zeroc/checkpoint.h"
#include "zeroc/durable.h"
#include "zeroc/safetensors.h"

enum { PATH_CAP = 4096, MAX_SHARDS = 4096 };

/* ---------- config.json ---------- */

static const char *const FAMILIES[] = {"llama", "qwen2", "mistral"};

static const char *family_of(const cJSON *c)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(c, "model_type");
    for (size_t i = 0; cJSON_IsString(t) && i < sizeof FAMILIES / sizeof *FAMILIES; i++)
        if (!strcmp(t->valuestring, FAMILIES[i]))
            return FAMILIES[i];
    return NULL;
}

bool hf_decoder_config_is_family(const char *config_json)
{
    cJSON *c = NULL;
    zc_err ignored;
    if (hf_read_json(config_json, &c, &ignored))
        return false;
    bool yes = family_of(c) != NULL;
    cJSON_Delete(c);
    return yes;
}

/* An integer dimension key (1 .. INT_MAX); `def` when absent or null (0: required). */
static zc_status dim(const cJSON *c, const char *path, const char *key, int def, int *out,
                     zc_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, key);
    uint64_t u;
    if ((!v || cJSON_IsNull(v)) && def) {
        *out = def;
        return ZC_OK;
    }
    if (!v)
        return zc_err_set(err, ZC_EINVAL, "%s: %s is missing (an integer from 1 to %d)", path, key,
                          INT_MAX);
    if (!hf_json_u64(v, &u) || u < 1 || u > INT_MAX)
        return zc_err_set(err, ZC_EINVAL, "%s: %s must be an integer from 1 to %d", path, key,
                          INT_MAX);
    *out = (int)u;
    return ZC_OK;
}

/* A positive number key; `def` when absent or null. */
static zc_status num(const cJSON *c, const char *path, const char *key, double def, double *out,
                     zc_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, key);
    if (!v || cJSON_IsNull(v)) {
        *out = def;
        return ZC_OK;
    }
    if (!cJSON_IsNumber(v) || !(v->valuedouble > 0) || !isfinite(v->valuedouble))
        return zc_err_set(err, ZC_EINVAL, "%s: %s must be a positive number", path, key);
    *out = v->valuedouble;
    return ZC_OK;
}

/* A boolean key that must have the value `want` for zeroc to compute what transformers does. */
static zc_status must_be(const cJSON *c, const char *path, const char *key, bool want,
                         const char *why, zc_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, key);
    if (!v || cJSON_IsNull(v) || (cJSON_IsBool(v) && cJSON_IsTrue(v) == want))
        return ZC_OK;
    return zc_err_set(err, ZC_EINVAL, "%s: %s must be %s: %s", path, key, want ? "true" : "false",
                      why);
}

/* rope_scaling (or the newer rope_parameters): none, "default", or "llama3" with its four keys;
 * rope_parameters may carry rope_theta itself. */
static zc_status rope_config(const cJSON *c, const char *path, gpt2_config *g, zc_err *err)
{
    const char *key = "rope_scaling";
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(c, key);
    if (!r || cJSON_IsNull(r)) {
        key = "rope_parameters";
        r = cJSON_GetObjectItemCaseSensitive(c, key);
    }
    zc_status st = num(c, path, "rope_theta", 10000.0, &g->rope_theta, err);
    if (st || !r || cJSON_IsNull(r))
        return st;
    if (!cJSON_IsObject(r))
        return zc_err_set(err, ZC_EINVAL, "%s: %s must be an object or null", path, key);
    if (cJSON_GetObjectItemCaseSensitive(r, "rope_theta") &&
        (st = num(r, path, "rope_theta", 0, &g->rope_theta, err)))
        return st;
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(r, "rope_type");
    if (!t)
        t = cJSON_GetObjectItemCaseSensitive(r, "type");
    const char *type = cJSON_IsString(t) ? t->valuestring : t ? "(not a string)" : "default";
    if (!strcmp(type, "default"))
        return ZC_OK;
    if (strcmp(type, "llama3"))
        return zc_err_set(err, ZC_EINVAL,
                          "%s: %s.rope_type \"%s\": zeroc computes the default rotary positions "
                          "and Llama 3's (\"llama3\") only",
                          path, key, type);
    double orig;
    if ((st = num(r, path, "factor", 0, &g->rope_factor, err)) ||
        (st = num(r, path, "low_freq_factor", 0, &g->rope_low_freq, err)) ||
        (st = num(r, path, "high_freq_factor", 0, &g->rope_high_freq, err)) ||
        (st = num(r, path, "original_max_position_embeddings", 0, &orig, err)))
        return st;
    if (!(g->rope_factor > 0) || !(g->rope_low_freq > 0) || !(g->rope_high_freq > 0) ||
        !(orig >= 1) || orig > INT_MAX || orig != floor(orig))
        return zc_err_set(err, ZC_EINVAL,
                          "%s: %s of type llama3 needs factor, low_freq_factor, high_freq_factor "
                          "(positive numbers) and original_max_position_embeddings (an integer)",
                          path, key);
    if (!(g->rope_high_freq > g->rope_low_freq))
        return zc_err_set(err, ZC_EINVAL,
                          "%s: %s.high_freq_factor %g must be above low_freq_factor %g", path, key,
                          g->rope_high_freq, g->rope_low_freq);
    g->rope_orig_max = (int)orig;
    return ZC_OK;
}

/* The keys that would make transformers compute something else than this decoder. */
static zc_status config_same_model(const cJSON *c, const char *path, const char *fam, zc_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, "hidden_act");
    if (v && !(cJSON_IsString(v) && !strcmp(v->valuestring, "silu")))
        return zc_err_set(
            err, ZC_EINVAL, "%s: hidden_act %s%s%s: zeroc's %s MLP is SwiGLU with silu", path,
            cJSON_IsString(v) ? "\"" : "", cJSON_IsString(v) ? v->valuestring : "(not a string)",
            cJSON_IsString(v) ? "\"" : "", fam);
    static const char *const moe[] = {"num_local_experts", "num_experts", "num_experts_per_tok",
                                      "moe_intermediate_size"};
    for (size_t i = 0; i < sizeof moe / sizeof *moe; i++)
        if ((v = cJSON_GetObjectItemCaseSensitive(c, moe[i])) && !cJSON_IsNull(v) &&
            !(cJSON_IsNumber(v) && v->valuedouble == 0))
            return zc_err_set(err, ZC_EINVAL,
                              "%s: %s: a mixture of experts, which zeroc's decoder is not", path,
                              moe[i]);
    zc_status st;
    if ((st = must_be(c, path, "attention_bias", false,
                      "zeroc's Llama has no attention biases (Qwen2's q/k/v biases come with "
                      "model_type qwen2)",
                      err)) ||
        (st = must_be(c, path, "mlp_bias", false, "zeroc's Llama-family MLP has no biases", err)) ||
        (st = must_be(c, path, "use_sliding_window", false,
                      "zeroc attends over the whole window (no sliding-window attention)", err)))
        return st;
    /* Mistral's sliding_window applies whenever it is set; Qwen2's only with use_sliding_window */
    v = cJSON_GetObjectItemCaseSensitive(c, "sliding_window");
    if (!strcmp(fam, "mistral") && v && !cJSON_IsNull(v))
        return zc_err_set(err, ZC_EINVAL,
                          "%s: sliding_window %g: zeroc attends over the whole window (set it to "
                          "null for a model trained without one)",
                          path, cJSON_IsNumber(v) ? v->valuedouble : NAN);
    return ZC_OK;
}

static zc_status parse_config(const cJSON *c, const char *path, gpt2_config *g, zc_err *err)
{
    const char *fam = family_of(c);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(c, "model_type");
    if (!fam)
        return zc_err_set(err, ZC_EINVAL,
                          "%s: model_type %s%s%s: zeroc's decoder reads gpt2, llama, qwen2 and "
                          "mistral",
                          path, cJSON_IsString(t) ? "\"" : "",
                          cJSON_IsString(t) ? t->valuestring : "(missing)",
                          cJSON_IsString(t) ? "\"" : "");
    *g = (gpt2_config){.norm = GPT2_NORM_RMSNORM,
                       .mlp = GPT2_MLP_SWIGLU,
                       .pos = GPT2_POS_ROPE,
                       .bias = strcmp(fam, "qwen2") ? GPT2_BIAS_NONE : GPT2_BIAS_QKV};
    snprintf(g->family, sizeof g->family, "%s", fam);
    zc_status st;
    if ((st = dim(c, path, "hidden_size", 0, &g->channels, err)) ||
        (st = dim(c, path, "intermediate_size", 0, &g->hidden, err)) ||
        (st = dim(c, path, "num_hidden_layers", 0, &g->num_layers, err)) ||
        (st = dim(c, path, "num_attention_heads", 0, &g->num_heads, err)) ||
        (st = dim(c, path, "num_key_value_heads", g->num_heads, &g->kv_heads, err)) ||
        (st = dim(c, path, "max_position_embeddings", 0, &g->max_seq_len, err)) ||
        (st = dim(c, path, "vocab_size", 0, &g->vocab_size, err)))
        return st;
    if (g->channels % g->num_heads && !cJSON_GetObjectItemCaseSensitive(c, "head_dim"))
        return zc_err_set(err, ZC_EINVAL,
                          "%s: num_attention_heads %d does not divide hidden_size %d (and no "
                          "head_dim is given)",
                          path, g->num_heads, g->channels);
    if ((st = dim(c, path, "head_dim", g->channels / g->num_heads ? g->channels / g->num_heads : 1,
                  &g->head_dim, err)))
        return st;
    if (g->num_heads % g->kv_heads)
        return zc_err_set(err, ZC_EINVAL,
                          "%s: num_key_value_heads %d does not divide num_attention_heads %d", path,
                          g->kv_heads, g->num_heads);
    double eps;
    if ((st = num(c, path, "rms_norm_eps", 1e-6, &eps, err)) ||
        (st = rope_config(c, path, g, err)) || (st = config_same_model(c, path, fam, err)))
        return st;
    g->norm_eps = eps;
    const cJSON *tie = cJSON_GetObjectItemCaseSensitive(c, "tie_word_embeddings");
    if (tie && !cJSON_IsBool(tie))
        return zc_err_set(err, ZC_EINVAL, "%s: tie_word_embeddings must be true or false", path);
    g->untied = !cJSON_IsTrue(tie); /* transformers' default for these families: untied */
    g->padded_vocab_size = gpt2_pad_vocab(g->vocab_size);
    return ZC_OK;
}

/* ---------- the safetensors file, or its shards ---------- */

typedef struct {
    const char *dir;
    int n;
    char (*names)[PATH_CAP]; /* file names inside dir */
    hf_st_file *files;
    cJSON *map; /* index.json's weight_map, or NULL (one file) */
    cJSON *index;
} st_set;

static void set_close(st_set *s)
{
    for (int i = 0; s->files && i < s->n; i++)
        hf_st_close(&s->files[i]);
    free(s->files);
    free(s->names);
    cJSON_Delete(s->index);
    *s = (st_set){0};
}

/* A shard's file name from the index: a plain name inside the directory. */
static bool plain_name(const char *name)
{
    return name[0] && name[0] != '.' && !strchr(name, '/') && strlen(name) < 256;
}

static zc_status set_open(st_set *s, const char *dir, zc_err *err)
{
    *s = (st_set){.dir = dir};
    char path[PATH_CAP];
    struct stat sb;
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    zc_status st = ZC_OK;
    if (!stat(path, &sb)) {
        if ((st = hf_read_json(path, &s->index, err)))
            return st;
        s->map = cJSON_GetObjectItemCaseSensitive(s->index, "weight_map");
        if (!cJSON_IsObject(s->map) || !s->map->child)
            st = zc_err_set(err, ZC_EINVAL,
                            "%s: weight_map must be an object naming each tensor's file", path);
        int cap = 0;
        for (const cJSON *e = st ? NULL : s->map->child; e && !st; e = e->next) {
            if (!cJSON_IsString(e) || !plain_name(e->valuestring)) {
                st = zc_err_set(err, ZC_EINVAL, "%s: weight_map[\"%s\"] must be a file name in %s",
                                path, e->string, dir);
                break;
            }
            int k = 0;
            while (k < s->n && strcmp(s->names[k], e->valuestring))
                k++;
            if (k < s->n)
                continue;
            if (s->n == MAX_SHARDS) {
                st = zc_err_set(err, ZC_EINVAL, "%s: more than %d files", path, MAX_SHARDS);
                break;
            }
            if (s->n == cap) {
                cap = cap ? 2 * cap : 8;
                void *nn = realloc(s->names, (size_t)cap * sizeof *s->names);
                if (!nn) {
                    st = zc_err_set(err, ZC_ENOMEM, "out of memory reading %s", path);
                    break;
                }
                s->names = nn;
            }
            snprintf(s->names[s->n++], PATH_CAP, "%s", e->valuestring);
        }
    } else {
        s->names = malloc(sizeof *s->names);
        if (!s->names)
            return zc_err_set(err, ZC_ENOMEM, "out of memory");
        snprintf(s->names[0], PATH_CAP, "model.safetensors");
        s->n = 1;
    }
    if (!st && !(s->files = calloc((size_t)s->n, sizeof *s->files)))
        st = zc_err_set(err, ZC_ENOMEM, "out of memory");
    for (int i = 0; !st && i < s->n; i++)
        s->files[i].fd = -1;
    for (int i = 0; !st && i < s->n; i++) {
        char full[PATH_CAP]; /* the names become the files' paths */
        if ((size_t)snprintf(full, sizeof full, "%s/%s", dir, s->names[i]) >= sizeof full)
            st = zc_err_set(err, ZC_EINVAL, "%s: path too long", dir);
        snprintf(s->names[i], PATH_CAP, "%s", full);
        if (!st && !(st = hf_st_open(&s->files[i], s->names[i], err)))
            s->files[i].who = "the model's config.json";
    }
    if (st)
        set_close(s); /* the files not opened have fd −1 */
    return st;
}

/* The file holding tensor `name`, or NULL (not in the index, or not in that file's header). */
static const hf_st_file *set_find(const st_set *s, const char *name)
{
    if (!s->map)
        return cJSON_GetObjectItemCaseSensitive(s->files[0].h, name) ? &s->files[0] : NULL;
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(s->map, name);
    if (!cJSON_IsString(f))
        return NULL;
    for (int i = 0; i < s->n; i++) {
        const char *base = strrchr(s->names[i], '/') + 1;
        if (!strcmp(base, f->valuestring))
            return cJSON_GetObjectItemCaseSensitive(s->files[i].h, name) ? &s->files[i] : NULL;
    }
    return NULL;
}

/* ---------- names: zeroc's parameters as transformers' tensors ---------- */

/* A zeroc parameter is up to three transformers tensors stacked by rows — or, for a tile of the
 * vocabulary (wte.<k>, lm_head.<k>: gpt2_config.tile_params) or of the MLP's gate and up
 * (h.<l>.gate.<t>, h.<l>.up.<t>), rows [row0, row0 + rows[0]) of one tensor of `total` rows (no
 * piece at all for a tile of padding rows only); for a tile of the MLP's down (h.<l>.down.<t>),
 * columns [col0, col0 + cols) of one tensor of `tcols` columns. */
typedef struct {
    int n;
    char name[3][HF_NAME_CAP];
    int64_t rows[3], cols; /* cols 0: a 1-D tensor */
    int64_t row0, total;   /* total 0: not a tile (piece k is the whole tensor, rows[k] rows) */
    int64_t col0, tcols;   /* tcols 0: not a tile of columns */
} pieces;

/* The tensor rows piece k of p has in its file, and its columns. */
static int64_t tensor_rows(const pieces *p, int k)
{
    return p->total ? p->total : p->rows[k];
}
static int64_t tensor_cols(const pieces *p)
{
    return p->tcols ? p->tcols : p->cols;
}

/* Tile t of block l's MLP (gpt2_mlp_tiles): gate's or up's rows, or down's columns. */
static bool mlp_tile(const gpt2_config *g, int l, const char *what, int t, pieces *p)
{
    int cols, nmt = gpt2_mlp_tiles(g, &cols);
    if (t < 0 || t >= nmt || nmt == 1 || l < 0 || l >= g->num_layers)
        return false;
    const int64_t I = gpt2_hidden(g), c0 = (int64_t)t * cols, w = t == nmt - 1 ? I - c0 : cols;
    const bool down = !strcmp(what, "down");
    snprintf(p->name[0], HF_NAME_CAP, "model.layers.%d.mlp.%s_proj.weight", l, what);
    if (down)
        p->rows[0] = g->channels, p->cols = w, p->col0 = c0, p->tcols = I;
    else
        p->rows[0] = w, p->row0 = c0, p->total = I;
    return true;
}

/* Tile t of a vocabulary matrix named `hf`: its rows of the vocabulary V. */
static bool vocab_tile(const gpt2_config *g, const char *hf, int t, pieces *p)
{
    int rows, nt = gpt2_vocab_tiles(g, &rows);
    if (t < 0 || t >= nt || nt == 1)
        return false;
    const int64_t V = g->vocab_size, r0 = (int64_t)t * rows, r1 = r0 + rows < V ? r0 + rows : V;
    snprintf(p->name[0], HF_NAME_CAP, "%s", hf);
    p->row0 = r0, p->total = V;
    p->rows[0] = r1 > r0 ? r1 - r0 : 0;
    p->n = p->rows[0] > 0;
    return true;
}

static bool pieces_of(const gpt2_config *g, const char *zc, pieces *p)
{
    const int64_t C = g->channels, hd = gpt2_head_dim(g), H = g->num_heads, KV = gpt2_kv_heads(g),
                  I = gpt2_hidden(g), V = g->vocab_size;
    *p = (pieces){.n = 1, .cols = C};
    int l, t;
    char rest[ZC_MAX_NAME], end;
    if (sscanf(zc, "wte.%d%c", &t, &end) == 1)
        return vocab_tile(g, "model.embed_tokens.weight", t, p);
    if (sscanf(zc, "lm_head.%d%c", &t, &end) == 1)
        return vocab_tile(g, "lm_head.weight", t, p);
    if (!strcmp(zc, "wte")) {
        snprintf(p->name[0], HF_NAME_CAP, "model.embed_tokens.weight");
        p->rows[0] = V;
        return true;
    }
    if (!strcmp(zc, "lm_head")) {
        snprintf(p->name[0], HF_NAME_CAP, "lm_head.weight");
        p->rows[0] = V;
        return true;
    }
    if (!strcmp(zc, "lnfw")) {
        snprintf(p->name[0], HF_NAME_CAP, "model.norm.weight");
        p->rows[0] = C, p->cols = 0;
        return true;
    }
    if (sscanf(zc, "h.%d.%95s", &l, rest) != 2)
        return false;
    char what[8];
    if (sscanf(rest, "%4[a-z].%d%c", what, &t, &end) == 2 &&
        (!strcmp(what, "gate") || !strcmp(what, "up") || !strcmp(what, "down")))
        return mlp_tile(g, l, what, t, p);
    const char *pre = "model.layers";
    if (!strcmp(rest, "ln1w") || !strcmp(rest, "ln2w")) {
        snprintf(p->name[0], HF_NAME_CAP, "%s.%d.%s.weight", pre, l,
                 rest[2] == '1' ? "input_layernorm" : "post_attention_layernorm");
        p->rows[0] = C, p->cols = 0;
        return true;
    }
    if (!strcmp(rest, "qkvw") || !strcmp(rest, "qkvb")) {
        const bool b = rest[3] == 'b';
        static const char qkv[3] = {'q', 'k', 'v'};
        p->n = 3;
        for (int i = 0; i < 3; i++) {
            snprintf(p->name[i], HF_NAME_CAP, "%s.%d.self_attn.%c_proj.%s", pre, l, qkv[i],
                     b ? "bias" : "weight");
            p->rows[i] = (i ? KV : H) * hd;
        }
        p->cols = b ? 0 : C;
        return true;
    }
    if (!strcmp(rest, "attprojw")) {
        snprintf(p->name[0], HF_NAME_CAP, "%s.%d.self_attn.o_proj.weight", pre, l);
        p->rows[0] = C, p->cols = H * hd;
        return true;
    }
    if (!strcmp(rest, "fcw")) {
        p->n = 2;
        snprintf(p->name[0], HF_NAME_CAP, "%s.%d.mlp.gate_proj.weight", pre, l);
        snprintf(p->name[1], HF_NAME_CAP, "%s.%d.mlp.up_proj.weight", pre, l);
        p->rows[0] = p->rows[1] = I;
        return true;
    }
    if (!strcmp(rest, "fcprojw")) {
        snprintf(p->name[0], HF_NAME_CAP, "%s.%d.mlp.down_proj.weight", pre, l);
        p->rows[0] = C, p->cols = I;
        return true;
    }
    return false;
}

static const char *shape_text(char *buf, size_t cap, int ndim, int64_t d0, int64_t d1)
{
    if (ndim > 1)
        snprintf(buf, cap, "[%lld, %lld]", (long long)d0, (long long)d1);
    else
        snprintf(buf, cap, "[%lld]", (long long)d0);
    return buf;
}

/* Tensor `name` of the set with the shape [rows, cols] (cols 0: [rows]). */
static zc_status tensor_of(const st_set *s, const char *name, int64_t rows, int64_t cols,
                           const hf_st_file **f, hf_st_tensor *t, zc_err *err)
{
    if (!(*f = set_find(s, name)))
        return zc_err_set(err, ZC_EINVAL, "%s: no tensor '%s' (config.json's model has it)",
                          s->n > 1 ? s->dir : s->names[0], name);
    zc_status st = hf_st_tensor_get(*f, name, t, err);
    const int ndim = cols ? 2 : 1;
    if (!st && (t->ndim != ndim || t->shape[0] != rows || (cols && t->shape[1] != cols))) {
        char have[48], want[48];
        return zc_err_set(
            err, ZC_EINVAL, "%s: tensor '%s' has shape %s, expected %s (from config.json)",
            (*f)->path, name, shape_text(have, sizeof have, t->ndim, t->shape[0], t->shape[1]),
            shape_text(want, sizeof want, ndim, rows, cols));
    }
    return st;
}

/* The rotary frequencies older files carry per layer: transformers recomputes them, so do we. */
static const char INV_FREQ[] = ".rotary_emb.inv_freq";

/* Every tensor of every file is one the model reads, or one transformers also ignores. */
static zc_status check_names(const st_set *s, zc_engine *e, const gpt2_config *g, zc_err *err)
{
    for (int i = 0; i < s->n; i++)
        for (const cJSON *t = s->files[i].h->child; t; t = t->next) {
            const char *name = t->string;
            const size_t n = strlen(name);
            if (!strcmp(name, "__metadata__") ||
                (n > sizeof INV_FREQ - 1 && !strcmp(name + n - (sizeof INV_FREQ - 1), INV_FREQ)) ||
                (!g->untied && !strcmp(name, "lm_head.weight")))
                continue;
            bool found = false;
            pieces p;
            for (int q = 0; !found && q < zc_engine_num_params(e); q++)
                if (pieces_of(g, zc_engine_param_info(e, q)->name, &p))
                    for (int k = 0; k < p.n && !found; k++)
                        found = !strcmp(p.name[k], name);
            if (!found)
                return zc_err_set(err, ZC_EINVAL,
                                  "%s: tensor '%s' is not part of this %s (%d layers; "
                                  "transformers' names)",
                                  s->files[i].path, name, g->family, g->num_layers);
            if (s->map && set_find(s, name) != &s->files[i])
                return zc_err_set(err, ZC_EINVAL,
                                  "%s: tensor '%s' is not where model.safetensors.index.json "
                                  "says it is",
                                  s->files[i].path, name);
        }
    return ZC_OK;
}

/* ---------- loading ---------- */

/* Elements [first, first + n) of parameter pi (zeroc's layout) from its transformers tensors. */
static zc_status read_param(const st_set *s, const gpt2_config *g, const zc_param_info *pi,
                            size_t first, size_t n, float *buf, zc_err *err)
{
    pieces p;
    if (!pieces_of(g, pi->name, &p))
        return zc_err_set(err, ZC_EINVAL, "parameter '%s' is not a %s's", pi->name, g->family);
    const hf_st_file *f[3];
    hf_st_tensor t[3];
    zc_status st = ZC_OK;
    for (int k = 0; k < p.n && !st; k++)
        st = tensor_of(s, p.name[k], tensor_rows(&p, k), tensor_cols(&p), &f[k], &t[k], err);
    if (st || n == 0)
        return st;
    for (size_t e = first; p.tcols && !st && e < first + n;) { /* columns: row by row */
        const size_t r = e / (size_t)p.cols, c = e % (size_t)p.cols;
        const size_t len = (size_t)p.cols - c < first + n - e ? (size_t)p.cols - c : first + n - e;
        st = hf_st_read(f[0], p.name[0], &t[0], r * (size_t)p.tcols + (size_t)p.col0 + c, len,
                        buf + (e - first), err);
        e += len;
    }
    for (size_t i = 0; p.tcols && !st && i < n; i++)
        if (!isfinite(buf[i]))
            st = zc_err_set(err, ZC_EINVAL,
                            "%s: tensor '%s' holds %g: initial weights must be finite", f[0]->path,
                            p.name[0], (double)buf[i]);
    if (p.tcols)
        return st;
    const size_t cols = (size_t)(p.cols ? p.cols : 1);
    size_t at = 0;                     /* the first element of piece k in the parameter */
    memset(buf, 0, n * sizeof(float)); /* past the pieces: wte's and lm_head's padded rows */
    for (int k = 0; k < p.n && !st; k++) {
        const size_t len = (size_t)p.rows[k] * cols;
        const size_t lo = first > at ? first : at, hi = first + n < at + len ? first + n : at + len;
        if (lo < hi) /* a tile's rows start at its row0 in the tensor */
            st = hf_st_read(f[k], p.name[k], &t[k], (size_t)p.row0 * cols + (lo - at), hi - lo,
                            buf + (lo - first), err);
        for (size_t i = lo; !st && i < hi; i++) /* a NaN would train on, unseen */
            if (!isfinite(buf[i - first]))
                st = zc_err_set(err, ZC_EINVAL,
                                "%s: tensor '%s' holds %g: initial weights must be finite",
                                f[k]->path, p.name[k], (double)buf[i - first]);
        at += len;
    }
    return st;
}

static zc_status load_param(const st_set *s, zc_engine *e, const gpt2_config *g, int q, zc_err *err)
{
    size_t first, n;
    zc_engine_param_owned(e, q, &first, &n);
    float *buf = malloc(n * sizeof(float) + 1);
    if (!buf)
        return zc_err_set(err, ZC_ENOMEM, "out of memory reading %s", s->dir);
    zc_status st = read_param(s, g, zc_engine_param_info(e, q), first, n, buf, err);
    if (!st && n)
        st = zc_engine_set_param_values(e, q, first, n, buf, err);
    free(buf);
    return st;
}

struct hf_decoder_base {
    st_set s;
    char dir[PATH_CAP]; /* s.dir points here */
};

void hf_decoder_base_close(hf_decoder_base *b)
{
    if (b)
        set_close(&b->s);
    free(b);
}

zc_status hf_decoder_base_open(const char *dir, hf_decoder_base **out, zc_err *err)
{
    hf_decoder_base *b = calloc(1, sizeof *b);
    if (!b)
        return zc_err_set(err, ZC_ENOMEM, "out of memory");
    snprintf(b->dir, sizeof b->dir, "%s", dir);
    zc_status st = set_open(&b->s, b->dir, err); /* on error it holds nothing */
    if (st) {
        free(b);
        return st;
    }
    for (int i = 0; !st && i < b->s.n; i++)
        st = zc_safetensors_check_layout(b->s.files[i].path, err);
    if (st) {
        hf_decoder_base_close(b);
        return st;
    }
    *out = b;
    return ZC_OK;
}

zc_status hf_decoder_base_read(const hf_decoder_base *b, const gpt2_config *gc,
                               const zc_param_info *pi, size_t first, size_t n, float *dst,
                               zc_err *err)
{
    return read_param(&b->s, gc, pi, first, n, dst, err);
}

zc_status hf_decoder_read_config(const char *dir, gpt2_config *cfg, zc_err *err)
{
    char path[PATH_CAP];
    if ((size_t)snprintf(path, sizeof path, "%s/config.json", dir) >= sizeof path)
        return zc_err_set(err, ZC_EINVAL, "%s: path too long", dir);
    cJSON *c = NULL;
    zc_status st = hf_read_json(path, &c, err);
    if (!st)
        st = parse_config(c, path, cfg, err);
    cJSON_Delete(c);
    if (st)
        return st;
    /* the embedding's shape now, before anything is sized from config.json; a directory of
     * config.json alone (estimating before a download) has no weights to hold it to: loading
     * them names the missing file */
    char weights[PATH_CAP], index[PATH_CAP];
    struct stat sb;
    snprintf(weights, sizeof weights, "%s/model.safetensors", dir);
    snprintf(index, sizeof index, "%s/model.safetensors.index.json", dir);
    if (stat(weights, &sb) && stat(index, &sb))
        return ZC_OK;
    st_set s;
    if ((st = set_open(&s, dir, err)))
        return st;
    const hf_st_file *f;
    hf_st_tensor t;
    st = tensor_of(&s, "model.embed_tokens.weight", cfg->vocab_size, cfg->channels, &f, &t, err);
    char name[HF_NAME_CAP];
    snprintf(name, sizeof name, "model.layers.%d.input_layernorm.weight", cfg->num_layers - 1);
    if (!st && !set_find(&s, name))
        st = zc_err_set(err, ZC_EINVAL, "%s: num_hidden_layers %d, but the files have no '%s'",
                        path, cfg->num_layers, name);
    snprintf(name, sizeof name, "model.layers.%d.input_layernorm.weight", cfg->num_layers);
    if (!st && set_find(&s, name))
        st = zc_err_set(err, ZC_EINVAL,
                        "%s: num_hidden_layers %d, but the files have a layer more "
                        "('%s')",
                        path, cfg->num_layers, name);
    set_close(&s);
    return st;
}

zc_status hf_decoder_load(zc_engine *e, const char *dir, const gpt2_config *cfg, zc_err *err)
{
    st_set s;
    zc_status st = set_open(&s, dir, err);
    if (st)
        return st;
    if (!(st = check_names(&s, e, cfg, err)))
        for (int i = 0; !st && i < s.n; i++)
            st = zc_safetensors_check_layout(s.files[i].path, err);
    for (int q = 0; !st && q < zc_engine_num_params(e); q++) /* adapters: as initialised */
        if (!lora_is_param(zc_engine_param_info(e, q)->name))
            st = load_param(&s, e, cfg, q, err);
    set_close(&s);
    return st;
}

/* ---------- export ---------- */

/* One transformers tensor of the export: rows [row0, row0 + rows) of checkpoint parameter p. */
typedef struct {
    char name[HF_NAME_CAP];
    int p;
    int64_t row0, rows, cols; /* cols 0: 1-D */
    uint64_t bytes;
    bool cont;     /* the next rows of the tensor before it (a vocabulary tile after the first) —
                    * or, with tcols, its next columns (an MLP tile of down after the first) */
    int64_t tcols; /* a tile of columns: the tensor's columns (0: rows, as above) */
} out_tensor;

/* The parameter named h.<l>.<what>.<t> in the checkpoint, or −1. */
static int param_named(zc_ckpt_reader *r, int l, const char *what, int t)
{
    char name[ZC_MAX_NAME];
    snprintf(name, sizeof name, "h.%d.%s.%d", l, what, t);
    for (int p = 0; p < zc_ckpt_reader_num_params(r); p++)
        if (!strcmp(zc_ckpt_reader_param(r, p)->name, name))
            return p;
    return -1;
}

/* The export's tensors in the checkpoint's parameter order (q, k, v and gate, up split out of
 * their fused rows; the embedding's and head's padded rows left out). */
static zc_status plan_tensors(zc_ckpt_reader *r, const gpt2_config *g, out_tensor **out, int *n,
                              zc_err *err)
{
    const int np = zc_ckpt_reader_num_params(r);
    out_tensor *t = calloc((size_t)np * 3, sizeof *t);
    if (!t)
        return zc_err_set(err, ZC_ENOMEM, "out of memory");
    int k = 0, cols, nmt = gpt2_mlp_tiles(g, &cols), l, tile;
    const int ntiles = np * 3; /* an MLP's tiles are each one piece */
    for (int p = 0; p < np; p++) {
        pieces ps;
        const zc_param_info *pi = zc_ckpt_reader_param(r, p);
        if (lora_is_param(pi->name)) /* LoRA's adapters: merged into their weights */
            continue;
        char what[8], end;
        if (nmt > 1 && sscanf(pi->name, "h.%d.%4[a-z].%d%c", &l, what, &tile, &end) == 3) {
            /* the MLP's tiles: at the first, gate's, up's and down's, each tensor whole */
            if (tile || strcmp(what, "gate")) /* at gate.0, all three tensors */
                continue;
            static const char *const parts[3] = {"gate", "up", "down"};
            for (int q = 0; q < 3; q++)
                for (int j = 0; j < nmt && k < ntiles; j++, k++) {
                    const int pj = param_named(r, l, parts[q], j);
                    if (pj < 0 || !pieces_of(g, zc_ckpt_reader_param(r, pj)->name, &ps)) {
                        free(t);
                        return zc_err_set(err, ZC_EINVAL,
                                          "the checkpoint has no parameter h.%d.%s.%d of the "
                                          "%s's %d MLP tiles",
                                          l, parts[q], j, g->family, nmt);
                    }
                    const zc_param_info *pq = zc_ckpt_reader_param(r, pj);
                    if (pq->ndim != 2 || pq->shape[0] != ps.rows[0] || pq->shape[1] != ps.cols) {
                        free(t);
                        return zc_err_set(err, ZC_EINVAL,
                                          "parameter '%s' has %lld rows of %lld, but the "
                                          "checkpoint's record of the %s's architecture makes "
                                          "%lld rows of %lld",
                                          pq->name, (long long)pq->shape[0],
                                          (long long)pq->shape[1], g->family, (long long)ps.rows[0],
                                          (long long)ps.cols);
                    }
                    snprintf(t[k].name, sizeof t[k].name, "%s", ps.name[0]);
                    t[k].p = pj, t[k].row0 = 0, t[k].rows = ps.rows[0], t[k].cols = ps.cols;
                    t[k].bytes = 4 * (uint64_t)ps.rows[0] * (uint64_t)ps.cols;
                    t[k].cont = j > 0, t[k].tcols = ps.tcols;
                }
            continue;
        }
        if (!pieces_of(g, pi->name, &ps)) {
            free(t);
            return zc_err_set(err, ZC_EINVAL, "parameter '%s' is not part of a %s", pi->name,
                              g->family);
        }
        int64_t row = 0;
        for (int i = 0; i < ps.n; i++, k++) {
            snprintf(t[k].name, sizeof t[k].name, "%s", ps.name[i]);
            t[k].p = p, t[k].row0 = row, t[k].rows = ps.rows[i], t[k].cols = ps.cols;
            t[k].bytes = 4 * (uint64_t)ps.rows[i] * (uint64_t)(ps.cols ? ps.cols : 1);
            t[k].cont = ps.total && ps.row0 > 0;
            row += ps.rows[i];
        }
        /* the record's widths against the stored parameter (only the vocabulary's rows may be
         * fewer: zeroc pads them): a manifest edited out of step with its shards is refused,
         * not split at the wrong rows */
        const bool vocab = !strcmp(pi->name, "wte") || !strcmp(pi->name, "lm_head") || ps.total;
        const int64_t cols = pi->ndim > 1 ? pi->shape[1] : 0;
        if (pi->ndim != (ps.cols ? 2 : 1) || cols != ps.cols ||
            (vocab ? row > pi->shape[0] : row != pi->shape[0])) {
            free(t);
            return zc_err_set(err, ZC_EINVAL,
                              "parameter '%s' has %lld rows of %lld, but the checkpoint's "
                              "record of the %s's architecture makes %lld rows of %lld",
                              pi->name, (long long)pi->shape[0], (long long)cols, g->family,
                              (long long)row, (long long)ps.cols);
        }
    }
    *out = t;
    *n = k;
    return ZC_OK;
}

/* A safetensors header for tensors [a, b): F32, offsets in order, __metadata__ format pt,
 * padded with spaces to a multiple of 8. */
static char *shard_header(const out_tensor *t, int a, int b, uint64_t *hlen)
{
    cJSON *h = cJSON_CreateObject();
    uint64_t off = 0;
    for (int i = a; h && i < b; i++) {
        if (t[i].cont)
            continue; /* counted with the tensor's first tile */
        int64_t rows = t[i].rows;
        uint64_t bytes = t[i].bytes;
        for (int j = i + 1; j < b && t[j].cont; j++)
            rows += t[i].tcols ? 0 : t[j].rows, bytes += t[j].bytes;
        cJSON *o = cJSON_AddObjectToObject(h, t[i].name);
        cJSON_AddStringToObject(o, "dtype", "F32");
        cJSON *s = cJSON_AddArrayToObject(o, "shape");
        cJSON_AddItemToArray(s, cJSON_CreateNumber((double)rows));
        if (t[i].cols)
            cJSON_AddItemToArray(s,
                                 cJSON_CreateNumber((double)(t[i].tcols ? t[i].tcols : t[i].cols)));
        cJSON *d = cJSON_AddArrayToObject(o, "data_offsets");
        cJSON_AddItemToArray(d, cJSON_CreateNumber((double)off));
        cJSON_AddItemToArray(d, cJSON_CreateNumber((double)(off + bytes)));
        off += bytes;
    }
    return h ? hf_st_header_text(h, hlen) : NULL;
}

/* Tensors [a, b) as one safetensors file at path, streamed a chunk at a time. */
static zc_status write_shard(zc_ckpt_reader *r, const gpt2_config *g, const out_tensor *t, int a,
                             int b, const char *path, zc_err *err)
{
    uint64_t hlen = 0;
    char *header = shard_header(t, a, b, &hlen);
    if (!header)
        return zc_err_set(err, ZC_ENOMEM, "out of memory writing %s", path);
    zc_durable *f = NULL;
    zc_status st = zc_durable_open(&f, path, err);
    if (!st)
        st = hf_st_write_header(f, header, hlen, err);
    enum { CAP = 1 << 20 };
    float *buf = st ? NULL : malloc(CAP * sizeof(float));
    if (!st && !buf)
        st = zc_err_set(err, ZC_ENOMEM, "out of memory writing %s", path);
    for (int i = a; !st && i < b; i++) {
        if (t[i].tcols) { /* tiles of columns: row by row, each tile's part of the row */
            if (t[i].cont)
                continue;
            int e = i + 1;
            while (e < b && t[e].cont)
                e++;
            for (int64_t row = 0; !st && row < t[i].rows; row++)
                for (int j = i; !st && j < e; j++) {
                    const size_t c = (size_t)t[j].cols;
                    for (size_t at = 0; !st && at < c; at += CAP) {
                        const size_t k = c - at < CAP ? c - at : CAP;
                        if (!(st = lora_merged_read(r, g, t[j].p, (size_t)row * c + at, k, buf,
                                                    err)))
                            st = zc_durable_write(f, buf, k * sizeof(float), err);
                    }
                }
            continue;
        }
        const size_t cols = (size_t)(t[i].cols ? t[i].cols : 1), n = (size_t)t[i].rows * cols;
        const size_t first = (size_t)t[i].row0 * cols;
        for (size_t at = 0; !st && at < n; at += CAP) {
            const size_t k = n - at < CAP ? n - at : CAP;
            if (!(st = lora_merged_read(r, g, t[i].p, first + at, k, buf, err)))
                st = zc_durable_write(f, buf, k * sizeof(float), err);
        }
    }
    if (f) {
        if (st)
            zc_durable_abort(f);
        else
            st = zc_durable_commit(f, err);
    }
    free(buf);
    free(header);
    return st;
}

static const char *architecture(const char *fam)
{
    return !strcmp(fam, "qwen2")     ? "Qwen2ForCausalLM"
           : !strcmp(fam, "mistral") ? "MistralForCausalLM"
                                     : "LlamaForCausalLM";
}

static zc_status write_config(const char *path, const gpt2_config *g, zc_err *err)
{
    cJSON *c = cJSON_CreateObject();
    cJSON *arch = cJSON_AddArrayToObject(c, "architectures");
    cJSON_AddItemToArray(arch, cJSON_CreateString(architecture(g->family)));
    cJSON_AddStringToObject(c, "model_type", g->family);
    cJSON_AddNumberToObject(c, "hidden_size", g->channels);
    cJSON_AddNumberToObject(c, "intermediate_size", gpt2_hidden(g));
    cJSON_AddNumberToObject(c, "num_hidden_layers", g->num_layers);
    cJSON_AddNumberToObject(c, "num_attention_heads", g->num_heads);
    cJSON_AddNumberToObject(c, "num_key_value_heads", gpt2_kv_heads(g));
    cJSON_AddNumberToObject(c, "head_dim", gpt2_head_dim(g));
    cJSON_AddNumberToObject(c, "max_position_embeddings", g->max_seq_len);
    cJSON_AddNumberToObject(c, "vocab_size", g->vocab_size);
    cJSON_AddNumberToObject(c, "rms_norm_eps", g->norm_eps);
    cJSON_AddNumberToObject(c, "rope_theta", g->rope_theta);
    if (g->rope_factor > 0) {
        cJSON *s = cJSON_AddObjectToObject(c, "rope_scaling");
        cJSON_AddStringToObject(s, "rope_type", "llama3");
        cJSON_AddNumberToObject(s, "factor", g->rope_factor);
        cJSON_AddNumberToObject(s, "low_freq_factor", g->rope_low_freq);
        cJSON_AddNumberToObject(s, "high_freq_factor", g->rope_high_freq);
        cJSON_AddNumberToObject(s, "original_max_position_embeddings", g->rope_orig_max);
    } else
        cJSON_AddNullToObject(c, "rope_scaling");
    cJSON_AddBoolToObject(c, "tie_word_embeddings", !g->untied);
    cJSON_AddStringToObject(c, "hidden_act", "silu");
    if (!strcmp(g->family, "llama")) {
        cJSON_AddFalseToObject(c, "attention_bias");
        cJSON_AddFalseToObject(c, "mlp_bias");
    } else if (!strcmp(g->family, "qwen2"))
        cJSON_AddFalseToObject(c, "use_sliding_window");
    else
        cJSON_AddNullToObject(c, "sliding_window");
    cJSON_AddStringToObject(c, "torch_dtype", "float32");
    return hf_write_json(path, c, err);
}

/* Whether name is one of a model's weight files: model.safetensors, its index, or a shard
 * model-KKKKK-of-NNNNN.safetensors (*k and *n set). */
static bool weights_file(const char *name, int *k, int *n)
{
    int used = 0;
    *k = *n = 0;
    if (!strcmp(name, "model.safetensors") || !strcmp(name, "model.safetensors.index.json"))
        return true;
    return sscanf(name, "model-%5d-of-%5d.safetensors%n", k, n, &used) == 2 && used > 0 &&
           !name[used];
}

/* After an export of nsh files into outdir: the weight files an earlier export left there that
 * this one did not write are removed, as save_pretrained does — else a stale index (which the
 * reader prefers) or stale shards would load instead of what was just written. */
static zc_status remove_stale(const char *outdir, int nsh, zc_err *err)
{
    DIR *d = opendir(outdir);
    if (!d)
        return zc_err_set(err, ZC_EIO, "cannot list %s: %m", outdir);
    zc_status st = ZC_OK;
    char path[PATH_CAP];
    for (struct dirent *e; !st && (e = readdir(d));) {
        int k, n;
        if (!weights_file(e->d_name, &k, &n))
            continue;
        const bool index = !strcmp(e->d_name, "model.safetensors.index.json"),
                   single = !strcmp(e->d_name, "model.safetensors");
        const bool ours = nsh > 1 ? index || (!single && n == nsh && k >= 1 && k <= nsh) : single;
        if (ours)
            continue;
        snprintf(path, sizeof path, "%s/%s", outdir, e->d_name);
        if (unlink(path) && errno != ENOENT)
            st = zc_err_set(err, ZC_EIO, "cannot remove %s, left by an earlier export: %m", path);
    }
    closedir(d);
    return st;
}

/* transformers' save_pretrained default: shards of at most 5 GB (10^9 bytes a GB) */
#define MAX_SHARD_BYTES 5000000000ULL

zc_status hf_decoder_export(const char *ckdir, const gpt2_config *gc, const char *base,
                            const char *outdir, zc_err *err)
{
    const char *env = getenv("ZEROC_HF_MAX_SHARD_BYTES"); /* tests: sharding on small models */
    const uint64_t cap =
        env && strtoull(env, NULL, 10) > 0 ? strtoull(env, NULL, 10) : MAX_SHARD_BYTES;
    zc_ckpt_reader *r;
    zc_status st = zc_ckpt_reader_open(ckdir, &r, err);
    if (st)
        return st;
    out_tensor *t = NULL;
    int n = 0;
    hf_base *hb = NULL;
    if (base)
        st = hf_base_attach(base, gc, r, &hb, err);
    if (!st)
        st = plan_tensors(r, gc, &t, &n, err);
    if (!st && mkdir(outdir, 0777) && errno != EEXIST)
        st = zc_err_set(err, ZC_EIO, "cannot create %s: %m", outdir);
    /* shards: tensors in order, a new file when the next would pass the cap */
    int *start = st ? NULL : calloc((size_t)n + 2, sizeof *start), nsh = 0;
    if (!st && !start)
        st = zc_err_set(err, ZC_ENOMEM, "out of memory");
    uint64_t in = 0, total = 0;
    for (int i = 0; !st && i < n; i++) {
        if (t[i].cont)
            continue; /* counted with its tensor's first tile: a tensor stays whole */
        uint64_t bytes = t[i].bytes;
        for (int j = i + 1; j < n && t[j].cont; j++)
            bytes += t[j].bytes;
        if (i == 0 || (in + bytes > cap && in > 0))
            start[nsh++] = i, in = 0;
        in += bytes;
        total += bytes;
    }
    if (start)
        start[nsh] = n;
    char path[PATH_CAP], file[64];
    cJSON *index = nsh > 1 ? cJSON_CreateObject() : NULL, *map = NULL;
    if (!st && nsh > 1 && !index)
        st = zc_err_set(err, ZC_ENOMEM, "out of memory");
    if (index) {
        cJSON *meta = cJSON_AddObjectToObject(index, "metadata");
        cJSON_AddNumberToObject(meta, "total_size", (double)total);
        map = cJSON_AddObjectToObject(index, "weight_map");
    }
    for (int k = 0; !st && k < nsh; k++) {
        if (nsh > 1)
            snprintf(file, sizeof file, "model-%05d-of-%05d.safetensors", k + 1, nsh);
        else
            snprintf(file, sizeof file, "model.safetensors");
        if ((size_t)snprintf(path, sizeof path, "%s/%s", outdir, file) >= sizeof path)
            st = zc_err_set(err, ZC_EINVAL, "%s: path too long", outdir);
        if (!st)
            st = write_shard(r, gc, t, start[k], start[k + 1], path, err);
        for (int i = start[k]; !st && map && i < start[k + 1]; i++)
            if (!t[i].cont)
                cJSON_AddStringToObject(map, t[i].name, file);
    }
    if (!st && index) {
        snprintf(path, sizeof path, "%s/model.safetensors.index.json", outdir);
        st = hf_write_json(path, index, err);
        index = NULL; /* taken */
    }
    if (!st && (size_t)snprintf(path, sizeof path, "%s/config.json", outdir) < sizeof path)
        st = write_config(path, gc, err);
    if (!st)
        st = remove_stale(outdir, nsh, err);
    cJSON_Delete(index);
    free(start);
    free(t);
    zc_ckpt_reader_close(r);
    hf_base_close(hb);
    return st;
}
