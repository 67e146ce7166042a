/* hf_files.c — GPT-2 weights in Hugging Face transformers' layout: config.json's shape, loading
 * model.safetensors into the engine (its tensors' bytes held to the format's layout first: no
 * overlap, gap or trailing data), and exporting a checkpoint to it (hf_files.h). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "models/gpt2/lora_merge.h"
#include "models/gpt2/ckpt_shape.h"
#include "models/gpt2/hf_decoder.h"
#include "models/gpt2/hf_files.h"
#include "models/gpt2/hf_safetensors.h"
#include "src/util/json_strict.h"
#include "zeroc/checkpoint.h"
#include "zeroc/dtype.h"
#include "zeroc/durable.h"
#include "zeroc/safetensors.h"

enum { PATH_CAP = 4096, NAME_CAP = HF_NAME_CAP };

/* zeroc's block parameters and transformers' names; t: the matrix is stored [in, out] there */
static const struct {
    const char *zc, *hf;
    bool t;
} BLOCK[] = {{"ln1w", "ln_1.weight", false},           {"ln1b", "ln_1.bias", false},
             {"qkvw", "attn.c_attn.weight", true},     {"qkvb", "attn.c_attn.bias", false},
             {"attprojw", "attn.c_proj.weight", true}, {"attprojb", "attn.c_proj.bias", false},
             {"ln2w", "ln_2.weight", false},           {"ln2b", "ln_2.bias", false},
             {"fcw", "mlp.c_fc.weight", true},         {"fcb", "mlp.c_fc.bias", false},
             {"fcprojw", "mlp.c_proj.weight", true},   {"fcprojb", "mlp.c_proj.bias", false}};
static const struct {
    const char *zc, *hf;
} TOP[] = {
    {"wte", "wte.weight"}, {"wpe", "wpe.weight"}, {"lnfw", "ln_f.weight"}, {"lnfb", "ln_f.bias"}};

/* The transformers name (without prefix) of zeroc's parameter `name`; false if it has none. */
static bool hf_name(const char *name, char *out, size_t cap, bool *transposed)
{
    *transposed = false;
    int t;
    char end;
    if (sscanf(name, "wte.%d%c", &t, &end) == 1 && t >= 0) { /* a tile of it (--tile-params) */
        snprintf(out, cap, "wte.weight");
        return true;
    }
    for (size_t i = 0; i < sizeof TOP / sizeof *TOP; i++)
        if (!strcmp(name, TOP[i].zc)) {
            snprintf(out, cap, "%s", TOP[i].hf);
            return true;
        }
    int l;
    char rest[ZC_MAX_NAME];
    if (sscanf(name, "h.%d.%95s", &l, rest) == 2)
        for (size_t k = 0; k < sizeof BLOCK / sizeof *BLOCK; k++)
            if (!strcmp(rest, BLOCK[k].zc)) {
                snprintf(out, cap, "h.%d.%s", l, BLOCK[k].hf);
                *transposed = BLOCK[k].t;
                return true;
            }
    return false;
}

/* The shape transformers stores zeroc's parameter in (V: the real vocabulary; a tile's: the
 * whole table's). */
static void hf_shape(const zc_param_info *pi, bool transposed, int vocab, int64_t shape[2])
{
    shape[0] = pi->shape[0];
    shape[1] = pi->ndim > 1 ? pi->shape[1] : 0;
    if (!strncmp(pi->name, "wte", 3))
        shape[0] = vocab;
    if (transposed) {
        shape[0] = pi->shape[1];
        shape[1] = pi->shape[0];
    }
}

/* ---------- the files ---------- */

typedef struct {
    char st[PATH_CAP], cfg[PATH_CAP];
} hf_paths;

static zc_status find_paths(const char *path, hf_paths *p, zc_err *err)
{
    struct stat sb;
    if (stat(path, &sb))
        return zc_err_set(err, ZC_EIO, "cannot open %s: %m", path);
    int a, b;
    if (S_ISDIR(sb.st_mode)) {
        a = snprintf(p->st, sizeof p->st, "%s/model.safetensors", path);
        b = snprintf(p->cfg, sizeof p->cfg, "%s/config.json", path);
    } else {
        const char *slash = strrchr(path, '/');
        int dir = slash ? (int)(slash - path) : 1;
        a = snprintf(p->st, sizeof p->st, "%s", path);
        b = snprintf(p->cfg, sizeof p->cfg, "%.*s/config.json", dir, slash ? path : ".");
    }
    if (a < 0 || b < 0 || (size_t)a >= sizeof p->st || (size_t)b >= sizeof p->cfg)
        return zc_err_set(err, ZC_EINVAL, "%s: path too long", path);
    return ZC_OK;
}

/* Whether header h holds transformers' GPT-2 names under prefix: an embedding, the final
 * LayerNorm or the first block. Not wte.weight alone: safetensors.torch.save_model keeps one name
 * of a tied pair (the one that sorts first), so a GPT2LMHeadModel saved by it holds
 * lm_head.weight and transformer.wpe.weight, transformer.h.*, … but no transformer.wte.weight. */
static bool has_gpt2_names(const cJSON *h, const char *prefix)
{
    static const char *const names[] = {"wte.weight", "wpe.weight", "ln_f.weight",
                                        "h.0.ln_1.weight"};
    char name[NAME_CAP];
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        snprintf(name, sizeof name, "%s%s", prefix, names[i]);
        if (cJSON_GetObjectItemCaseSensitive(h, name))
            return true;
    }
    return false;
}

/* A GPT-2's safetensors file: its names' prefix, and which tensor holds the embedding. */
static zc_status st_open(hf_st_file *f, const char *path, zc_err *err)
{
    zc_status st = hf_st_open(f, path, err);
    if (st)
        return st;
    f->who = "a GPT-2 in transformers' layout";
    if (has_gpt2_names(f->h, "transformer."))
        f->prefix = "transformer.";
    /* GPT-2 ties the output layer to the token embedding (config_same_model holds
     * tie_word_embeddings to it): a file with lm_head.weight only holds the embedding there */
    snprintf(f->wte, sizeof f->wte, "%swte.weight", f->prefix);
    if (!cJSON_GetObjectItemCaseSensitive(f->h, f->wte) &&
        cJSON_GetObjectItemCaseSensitive(f->h, "lm_head.weight"))
        snprintf(f->wte, sizeof f->wte, "lm_head.weight");
    return ZC_OK;
}

bool hf_is_checkpoint(const char *path)
{
    struct stat sb;
    if (stat(path, &sb))
        return false;
    if (S_ISDIR(sb.st_mode))
        return true;
    size_t n = strlen(path);
    if (n < 12 || strcmp(path + n - 12, ".safetensors"))
        return false;
    hf_st_file f;
    zc_err ignored;
    if (st_open(&f, path, &ignored))
        return false;
    bool hf = has_gpt2_names(f.h, f.prefix);
    hf_st_close(&f);
    return hf;
}

bool hf_is_zeroc_weights(const char *path)
{
    size_t n = strlen(path);
    hf_st_file f;
    zc_err ignored;
    if (n < 12 || strcmp(path + n - 12, ".safetensors") || st_open(&f, path, &ignored))
        return false;
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(f.h, "__metadata__"),
                *producer = cJSON_GetObjectItemCaseSensitive(meta, "producer");
    bool zeroc = ((cJSON_IsString(producer) && !strcmp(producer->valuestring, "zeroc")) ||
                  cJSON_GetObjectItemCaseSensitive(f.h, "wte")) &&
                 !has_gpt2_names(f.h, f.prefix);
    hf_st_close(&f);
    return zeroc;
}

/* ---------- config.json ---------- */

/* v as a dimension: an integer from 1 to INT_MAX. */
static bool json_dim(const cJSON *v, int *out)
{
    uint64_t u;
    if (!hf_json_u64(v, &u) || u < 1 || u > INT_MAX)
        return false;
    *out = (int)u;
    return true;
}

/* A dimension of config.json: key, or its other name (GPT2Config's attribute_map:
 * num_hidden_layers for n_layer, …), or fallback (n_ctx for n_positions) when neither is given;
 * *used: the name read. transformers sets the other name after key, so it would win: both given
 * with different values are refused, naming both, rather than one taken silently. */
static zc_status config_int(const cJSON *c, const char *path, const char *key, const char *alias,
                            const char *fallback, int *out, const char **used, zc_err *err)
{
    const char *names[] = {key, alias, fallback};
    const cJSON *v[3] = {NULL, NULL, NULL};
    int got[3] = {0, 0, 0};
    for (int i = 0; i < 3; i++) {
        if (!names[i] || (i == 2 && (v[0] || v[1])))
            continue; /* the fallback only when neither name is given */
        v[i] = cJSON_GetObjectItemCaseSensitive(c, names[i]);
        if (v[i] && !json_dim(v[i], &got[i]))
            return zc_err_set(err, ZC_EINVAL, "%s: %s must be an integer from 1 to %d", path,
                              names[i], INT_MAX);
    }
    if (v[0] && v[1] && got[0] != got[1])
        return zc_err_set(err, ZC_EINVAL,
                          "%s: %s %d and %s %d disagree: two names of one dimension "
                          "(transformers would take %s's value); give one of them",
                          path, key, got[0], alias, got[1], alias);
    const int i = v[1] ? 1 : v[0] ? 0 : 2; /* transformers' winner */
    if (!v[i])
        return zc_err_set(err, ZC_EINVAL,
                          "%s: %s%s%s%s%s%s must be an integer from 1 to %d (missing)", path, key,
                          alias ? " (or " : "", alias ? alias : "", fallback ? ", or " : "",
                          fallback ? fallback : "", alias ? ")" : "", INT_MAX);
    *out = got[i];
    *used = names[i];
    return ZC_OK;
}

/* Keys that would describe another model than zeroc's GPT-2: the value each must have. */
static zc_status config_same_model(const cJSON *c, const char *path, int C, zc_err *err)
{
    const cJSON *v;
    if ((v = cJSON_GetObjectItemCaseSensitive(c, "model_type")) &&
        !(cJSON_IsString(v) && !strcmp(v->valuestring, "gpt2")))
        return zc_err_set(err, ZC_EINVAL,
                          "%s: model_type %s%s%s: zeroc's decoder reads gpt2, llama, qwen2 and "
                          "mistral",
                          path, cJSON_IsString(v) ? "\"" : "",
                          cJSON_IsString(v) ? v->valuestring : "(not a string)",
                          cJSON_IsString(v) ? "\"" : "");
    if ((v = cJSON_GetObjectItemCaseSensitive(c, "activation_function")) &&
        !(cJSON_IsString(v) &&
          (!strcmp(v->valuestring, "gelu_new") || !strcmp(v->valuestring, "gelu_pytorch_tanh"))))
        return zc_err_set(err, ZC_EINVAL,
                          "%s: activation_function %s%s%s: zeroc's GPT-2 uses "
                          "GPT-2's tanh GELU (gelu_new)",
                          path, cJSON_IsString(v) ? "\"" : "",
                          cJSON_IsString(v) ? v->valuestring : "(not a string)",
                          cJSON_IsString(v) ? "\"" : "");
    if ((v = cJSON_GetObjectItemCaseSensitive(c, "layer_norm_epsilon")) &&
        !(cJSON_IsNumber(v) && fabs(v->valuedouble - 1e-5) <= 1e-12))
        return zc_err_set(err, ZC_EINVAL,
                          "%s: layer_norm_epsilon must be 1e-05 (zeroc's "
                          "LayerNorm)",
                          path);
    if ((v = cJSON_GetObjectItemCaseSensitive(c, "n_inner")) && !cJSON_IsNull(v) &&
        !(cJSON_IsNumber(v) && v->valuedouble == 4.0 * C))
        return zc_err_set(err, ZC_EINVAL,
                          "%s: n_inner must be null or 4 × n_embd = %d (zeroc's "
                          "MLP)",
                          path, 4 * C);
    static const struct {
        const char *key;
        bool want;
    } flags[] = {{"tie_word_embeddings", true},
                 {"scale_attn_weights", true},
                 {"scale_attn_by_inverse_layer_idx", false},
                 {"add_cross_attention", false}};
    for (size_t i = 0; i < sizeof flags / sizeof *flags; i++)
        if ((v = cJSON_GetObjectItemCaseSensitive(c, flags[i].key)) &&
            !(cJSON_IsBool(v) && cJSON_IsTrue(v) == flags[i].want))
            return zc_err_set(err, ZC_EINVAL, "%s: %s must be %s for zeroc's GPT-2", path,
                              flags[i].key, flags[i].want ? "true" : "false");
    return ZC_OK;
}

/* "[a]" or "[a, b]": a shape of 1 or 2 dimensions. */
static const char *shape_text(char *buf, size_t cap, int ndim, const int64_t shape[2])
{
    if (ndim > 1)
        snprintf(buf, cap, "[%lld, %lld]", (long long)shape[0], (long long)shape[1]);
    else
        snprintf(buf, cap, "[%lld]", (long long)shape[0]);
    return buf;
}

/* config.json's dimensions against the file's own tensors, before anything is sized from them:
 * a config.json that claims a longer context or more blocks than the file holds was refused
 * only by the memory check (as a model of 97 GiB) or by the first missing tensor. */
static zc_status config_matches_file(const char *cfgpath, const char *stpath, int L, int C, int T,
                                     int V, zc_err *err)
{
    hf_st_file f;
    zc_status st = st_open(&f, stpath, err);
    if (st)
        return st;
    char name[NAME_CAP], got[64];
    const struct {
        const char *tensor, *keys;
        int64_t rows;
    } two[] = {{f.wte, "vocab_size and n_embd", V}, {"wpe.weight", "n_positions and n_embd", T}};
    for (size_t k = 0; !st && k < sizeof two / sizeof *two; k++) {
        snprintf(name, sizeof name, "%s%s", k ? f.prefix : "", two[k].tensor);
        /* the shape only: a missing tensor, or a bad shape or offsets, is named by the load */
        const cJSON *o = cJSON_GetObjectItemCaseSensitive(f.h, name);
        const cJSON *sh = o ? cJSON_GetObjectItemCaseSensitive(o, "shape") : NULL;
        const int ndim = cJSON_IsArray(sh) ? cJSON_GetArraySize(sh) : 0;
        int64_t dims[2] = {0, 0};
        uint64_t d = 0;
        bool ok = ndim == 1 || ndim == 2;
        for (int i = 0; ok && i < ndim; i++)
            ok = hf_json_u64(cJSON_GetArrayItem(sh, i), &d) && d <= INT32_MAX, dims[i] = (int64_t)d;
        if (ok && (ndim != 2 || dims[0] != two[k].rows || dims[1] != C))
            st = zc_err_set(err, ZC_EINVAL, "%s: %s say [%lld, %d], but %s's %s has shape %s",
                            cfgpath, two[k].keys, (long long)two[k].rows, C, stpath, name,
                            shape_text(got, sizeof got, ndim, dims));
    }
    snprintf(name, sizeof name, "%sh.%d.ln_1.weight", f.prefix, L - 1);
    if (!st && !cJSON_GetObjectItemCaseSensitive(f.h, name))
        st = zc_err_set(err, ZC_EINVAL, "%s: n_layer %d, but %s has no tensor '%s'", cfgpath, L,
                        stpath, name);
    snprintf(name, sizeof name, "%sh.%d.ln_1.weight", f.prefix, L);
    if (!st && cJSON_GetObjectItemCaseSensitive(f.h, name))
        st = zc_err_set(err, ZC_EINVAL, "%s: n_layer %d, but %s has a block more ('%s')", cfgpath,
                        L, stpath, name);
    hf_st_close(&f);
    return st;
}

/* The directory a Llama-family config.json at cfgpath stands in. */
static void config_dir(const char *cfgpath, char *dir, size_t cap)
{
    const char *slash = strrchr(cfgpath, '/');
    snprintf(dir, cap, "%.*s", slash ? (int)(slash - cfgpath) : 1, slash ? cfgpath : ".");
}

zc_status hf_read_config(const char *path, gpt2_config *cfg, zc_err *err)
{
    hf_paths p;
    cJSON *c = NULL;
    zc_status st = find_paths(path, &p, err);
    if (!st && hf_decoder_config_is_family(p.cfg)) { /* Llama, Qwen2, Mistral */
        char dir[PATH_CAP];
        config_dir(p.cfg, dir, sizeof dir);
        return hf_decoder_read_config(dir, cfg, err);
    }
    if (!st)
        st = hf_read_json(p.cfg, &c, err);
    int L = 0, H = 0, C = 0, T = 0, V = 0;
    const char *hkey = "", *ckey = "", *unused;
    if (!st)
        st = config_int(c, p.cfg, "n_layer", "num_hidden_layers", NULL, &L, &unused, err);
    if (!st)
        st = config_int(c, p.cfg, "n_head", "num_attention_heads", NULL, &H, &hkey, err);
    if (!st)
        st = config_int(c, p.cfg, "n_embd", "hidden_size", NULL, &C, &ckey, err);
    if (!st)
        st = config_int(c, p.cfg, "n_positions", "max_position_embeddings", "n_ctx", &T, &unused,
                        err);
    if (!st)
        st = config_int(c, p.cfg, "vocab_size", NULL, NULL, &V, &unused, err);
    if (!st && C % H) /* each head attends over an equal share of the channels */
        st = zc_err_set(err, ZC_EINVAL, "%s: %s %d does not divide %s %d", p.cfg, hkey, H, ckey, C);
    if (!st)
        st = config_same_model(c, p.cfg, C, err);
    cJSON_Delete(c);
    if (!st && L > 0 && C > 0 && T > 0 && V > 0) /* (gpt2_check names values below 1) */
        st = config_matches_file(p.cfg, p.st, L, C, T, V, err);
    if (!st)
        *cfg = (gpt2_config){.max_seq_len = T,
                             .vocab_size = V,
                             .padded_vocab_size = gpt2_pad_vocab(V),
                             .num_layers = L,
                             .num_heads = H,
                             .channels = C};
    return st;
}

/* ---------- loading ---------- */

/* Every tensor of the file must be one the model reads, lm_head.weight or a mask buffer. */
static zc_status check_names(const hf_st_file *f, zc_engine *e, int blocks, zc_err *err)
{
    const size_t pl = strlen(f->prefix);
    for (const cJSON *t = f->h->child; t; t = t->next) {
        const char *name = t->string;
        if (!strcmp(name, "__metadata__") || !strcmp(name, "lm_head.weight"))
            continue;
        bool known = !strncmp(name, f->prefix, pl);
        const char *bare = name + (known ? pl : 0);
        size_t n = strlen(bare);
        if (known && !strncmp(bare, "h.", 2) &&
            ((n > 10 && !strcmp(bare + n - 10, ".attn.bias")) ||
             (n > 17 && !strcmp(bare + n - 17, ".attn.masked_bias"))))
            continue;
        bool found = false, tr;
        char hf[NAME_CAP];
        for (int p = 0; known && !found && p < zc_engine_num_params(e); p++)
            found =
                hf_name(zc_engine_param_info(e, p)->name, hf, sizeof hf, &tr) && !strcmp(hf, bare);
        if (!found)
            return zc_err_set(err, ZC_EINVAL,
                              "%s: tensor '%s' is not part of this GPT-2 (%d "
                              "blocks; transformers' GPT2LMHeadModel names)",
                              f->path, name, blocks);
    }
    return ZC_OK;
}

/* lm_head.weight, if the file has it beside wte.weight, must be the token embedding (GPT-2 ties
 * them); without wte.weight it is the embedding (st_open). */
static zc_status check_tied(const hf_st_file *f, zc_err *err)
{
    if (!cJSON_GetObjectItemCaseSensitive(f->h, "lm_head.weight") ||
        !strcmp(f->wte, "lm_head.weight"))
        return ZC_OK;
    const char *wte = f->wte;
    hf_st_tensor a, b;
    zc_status st = hf_st_tensor_get(f, "lm_head.weight", &a, err);
    if (!st)
        st = hf_st_tensor_get(f, wte, &b, err);
    if (!st && (a.ndim != b.ndim || a.shape[0] != b.shape[0] || a.shape[1] != b.shape[1]))
        return zc_err_set(err, ZC_EINVAL,
                          "%s: lm_head.weight's shape differs from %s's: "
                          "zeroc's GPT-2 ties them",
                          f->path, wte);
    enum { CHUNK = 1 << 18 };
    size_t n = st ? 0 : (size_t)a.shape[0] * (size_t)a.shape[1];
    float *x = st ? NULL : malloc(2 * CHUNK * sizeof(float));
    if (!st && !x)
        st = zc_err_set(err, ZC_ENOMEM, "out of memory reading %s", f->path);
    for (size_t at = 0; !st && at < n; at += CHUNK) {
        size_t k = n - at < CHUNK ? n - at : CHUNK;
        if (!(st = hf_st_read(f, "lm_head.weight", &a, at, k, x, err)) &&
            !(st = hf_st_read(f, wte, &b, at, k, x + CHUNK, err)) &&
            memcmp(x, x + CHUNK, k * sizeof(float)))
            st = zc_err_set(err, ZC_EINVAL,
                            "%s: lm_head.weight differs from %s: zeroc's GPT-2 "
                            "ties the output layer to the token embedding",
                            f->path, wte);
    }
    free(x);
    return st;
}

/* Elements [first, first + n) of parameter pi (zeroc's layout) from its transformers tensor. */
static zc_status read_param(const hf_st_file *f, const gpt2_config *gc, const zc_param_info *pi,
                            size_t first, size_t n, float *buf, zc_err *err)
{
    const int vocab = gc->vocab_size;
    char bare[NAME_CAP], name[NAME_CAP + 16], mat[8];
    bool tr;
    if (!hf_name(pi->name, bare, sizeof bare, &tr))
        return zc_err_set(err, ZC_EINVAL, "parameter '%s' is not a GPT-2's", pi->name);
    int row0 = 0, rows;
    const bool tile = gpt2_vocab_tile_of(gc, pi->name, mat, &row0, &rows);
    if (!tile && strcmp(pi->name, "wte") && !strncmp(pi->name, "wte.", 4))
        return zc_err_set(err, ZC_EINVAL, "parameter '%s' is not a tile of this GPT-2's wte",
                          pi->name);
    first += (size_t)row0 * (size_t)gc->channels; /* a tile: its elements of the whole */
    const bool wte = tile || !strcmp(pi->name, "wte");
    snprintf(name, sizeof name, "%s%s", wte ? "" : f->prefix, wte ? f->wte : bare);
    hf_st_tensor t;
    int64_t want[2];
    hf_shape(pi, tr, vocab, want);
    if (wte && !cJSON_GetObjectItemCaseSensitive(f->h, name))
        return zc_err_set(err, ZC_EINVAL,
                          "%s: no tensor '%s' nor lm_head.weight: no token embedding (a GPT-2 "
                          "in transformers' layout has one of them; GPT-2 ties the two)",
                          f->path, name);
    zc_status st = hf_st_tensor_get(f, name, &t, err);
    if (!st &&
        (t.ndim != pi->ndim || t.shape[0] != want[0] || (pi->ndim > 1 && t.shape[1] != want[1]))) {
        char have_s[48], want_s[48];
        return zc_err_set(err, ZC_EINVAL,
                          "%s: tensor '%s' has shape %s, expected %s (from config.json)", f->path,
                          name, shape_text(have_s, sizeof have_s, t.ndim, t.shape),
                          shape_text(want_s, sizeof want_s, pi->ndim, want));
    }
    if (st || n == 0)
        return st;
    const size_t real = (size_t)want[0] * (size_t)(pi->ndim > 1 ? want[1] : 1); /* wte: V rows */
    float *whole = tr ? malloc(pi->numel * sizeof(float)) : NULL;
    if (tr && !whole)
        st = zc_err_set(err, ZC_ENOMEM, "out of memory reading %s", f->path);
    if (!st && tr) { /* [in, out] there, [out, in] here */
        const size_t out = (size_t)pi->shape[0], in = (size_t)pi->shape[1];
        if (!(st = hf_st_read(f, name, &t, 0, pi->numel, whole, err)))
            for (size_t k = 0; k < n; k++) {
                size_t idx = first + k, o = idx / in, i = idx % in;
                buf[k] = whole[i * out + o];
            }
    } else if (!st) {
        size_t have = first >= real ? 0 : real - first < n ? real - first : n;
        st = have ? hf_st_read(f, name, &t, first, have, buf, err) : ZC_OK;
        memset(buf + have, 0, (n - have) * sizeof(float)); /* wte's padded rows */
    }
    for (size_t k = 0; !st && k < n; k++) /* a NaN would train on, unseen */
        if (!isfinite(buf[k]))
            st = zc_err_set(err, ZC_EINVAL,
                            "%s: tensor '%s' holds %g: initial weights must be "
                            "finite",
                            f->path, name, (double)buf[k]);
    free(whole);
    return st;
}

/* Parameter p's elements this rank holds, from its transformers tensor. */
static zc_status load_param(const hf_st_file *f, zc_engine *e, int p, const gpt2_config *gc,
                            zc_err *err)
{
    size_t first, n;
    zc_engine_param_owned(e, p, &first, &n);
    float *buf = malloc(n * sizeof(float) + 1);
    if (!buf)
        return zc_err_set(err, ZC_ENOMEM, "out of memory reading %s", f->path);
    zc_status st = read_param(f, gc, zc_engine_param_info(e, p), first, n, buf, err);
    if (!st && n)
        st = zc_engine_set_param_values(e, p, first, n, buf, err);
    free(buf);
    return st;
}

zc_status hf_load(zc_engine *e, const char *path, const gpt2_config *cfg, zc_err *err)
{
    hf_paths p;
    hf_st_file f;
    zc_status st = find_paths(path, &p, err);
    if (!st && cfg->family[0]) {
        char dir[PATH_CAP];
        config_dir(p.cfg, dir, sizeof dir);
        return hf_decoder_load(e, dir, cfg, err);
    }
    if (st || (st = st_open(&f, p.st, err)))
        return st;
    if (!(st = check_names(&f, e, cfg->num_layers, err)) &&
        !(st = zc_safetensors_check_layout(f.path, err)))
        st = check_tied(&f, err);
    for (int q = 0; !st && q < zc_engine_num_params(e); q++) /* adapters: as initialised */
        if (!lora_is_param(zc_engine_param_info(e, q)->name))
            st = load_param(&f, e, q, cfg, err);
    hf_st_close(&f);
    return st;
}

/* ---------- a LoRA checkpoint's base ---------- */

struct hf_base {
    const gpt2_config *gc;
    zc_ckpt_reader *r;
    hf_decoder_base *decoder; /* a Llama-family directory, or */
    hf_st_file f;             /* a GPT-2's file */
    bool open;
    char path[PATH_CAP]; /* f.path points here */
};

static zc_status hf_base_read(void *ctx, int p, size_t first, size_t n, float *dst, zc_err *err)
{
    const hf_base *b = ctx;
    const zc_param_info *pi = zc_ckpt_reader_param(b->r, p);
    return b->decoder ? hf_decoder_base_read(b->decoder, b->gc, pi, first, n, dst, err)
                      : read_param(&b->f, b->gc, pi, first, n, dst, err);
}

void hf_base_close(hf_base *b)
{
    if (!b)
        return;
    hf_decoder_base_close(b->decoder);
    if (b->open)
        hf_st_close(&b->f);
    free(b);
}

zc_status hf_base_attach(const char *path, const gpt2_config *gc, zc_ckpt_reader *r, hf_base **out,
                         zc_err *err)
{
    *out = NULL;
    if (!hf_is_checkpoint(path))
        return zc_err_set(err, ZC_EINVAL,
                          "--base %s: expected a Hugging Face model (a directory with config.json "
                          "and its safetensors, or a .safetensors file of transformers' names); "
                          "an llm.c file converts to one by training it 0 steps with --save-final "
                          "and ckpt export --format hf",
                          path);
    hf_paths p;
    zc_status st = find_paths(path, &p, err);
    hf_base *b = st ? NULL : calloc(1, sizeof *b);
    if (!st && !b)
        st = zc_err_set(err, ZC_ENOMEM, "out of memory");
    if (st)
        return st;
    *b = (hf_base){.gc = gc, .r = r};
    const bool decoder = hf_decoder_config_is_family(p.cfg);
    if (decoder != (gc->family[0] != 0))
        st = zc_err_set(err, ZC_EINVAL, "%s: a %s, but the checkpoint is of a %s", path,
                        decoder ? "Llama-family model" : "GPT-2",
                        gc->family[0] ? gc->family : "GPT-2");
    else if (decoder) {
        char dir[PATH_CAP];
        config_dir(p.cfg, dir, sizeof dir);
        st = hf_decoder_base_open(dir, &b->decoder, err);
    } else {
        snprintf(b->path, sizeof b->path, "%s", p.st);
        if (!(st = st_open(&b->f, b->path, err))) {
            b->open = true;
            st = zc_safetensors_check_layout(b->f.path, err);
        }
    }
    if (!st)
        st = zc_ckpt_reader_set_base(r, hf_base_read, b, path, err);
    if (st) {
        hf_base_close(b);
        return st;
    }
    *out = b;
    return ZC_OK;
}

/* ---------- export ---------- */

static zc_status write_config(const char *path, const gpt2_config *gc, zc_err *err)
{
    cJSON *c = cJSON_CreateObject();
    cJSON *arch = cJSON_AddArrayToObject(c, "architectures");
    cJSON_AddItemToArray(arch, cJSON_CreateString("GPT2LMHeadModel"));
    cJSON_AddStringToObject(c, "model_type", "gpt2");
    cJSON_AddStringToObject(c, "activation_function", "gelu_new");
    cJSON_AddNumberToObject(c, "n_layer", gc->num_layers);
    cJSON_AddNumberToObject(c, "n_head", gc->num_heads);
    cJSON_AddNumberToObject(c, "n_embd", gc->channels);
    cJSON_AddNumberToObject(c, "n_positions", gc->max_seq_len);
    cJSON_AddNumberToObject(c, "n_ctx", gc->max_seq_len);
    cJSON_AddNumberToObject(c, "vocab_size", gc->vocab_size);
    cJSON_AddNumberToObject(c, "layer_norm_epsilon", 1e-5);
    cJSON_AddTrueToObject(c, "tie_word_embeddings");
    cJSON_AddStringToObject(c, "torch_dtype", "float32");
    return hf_write_json(path, c, err);
}

/* The safetensors header: every parameter under its transformers name, in the checkpoint's
 * order, F32; padded with spaces to a multiple of 8. */
static char *export_header(zc_ckpt_reader *r, const gpt2_config *gc, uint64_t *hlen, zc_err *err)
{
    const int vocab = gc->vocab_size;
    cJSON *h = cJSON_CreateObject();
    uint64_t off = 0;
    for (int p = 0; h && p < zc_ckpt_reader_num_params(r); p++) {
        const zc_param_info *pi = zc_ckpt_reader_param(r, p);
        char name[NAME_CAP], mat[8];
        bool tr;
        int64_t shape[2];
        int row0, rows;
        if (lora_is_param(pi->name)) /* LoRA's adapters: merged into their weights */
            continue;
        if (gpt2_vocab_tile_of(gc, pi->name, mat, &row0, &rows) && row0 > 0)
            continue; /* the table is its first tile's entry; the tiles follow it, in order */
        if (!hf_name(pi->name, name, sizeof name, &tr)) {
            cJSON_Delete(h);
            zc_err_set(err, ZC_EINVAL, "parameter '%s' is not part of a GPT-2", pi->name);
            return NULL;
        }
        hf_shape(pi, tr, vocab, shape);
        uint64_t bytes = 4 * (uint64_t)shape[0] * (uint64_t)(pi->ndim > 1 ? shape[1] : 1);
        cJSON *t = cJSON_AddObjectToObject(h, name);
        cJSON_AddStringToObject(t, "dtype", "F32");
        cJSON *s = cJSON_AddArrayToObject(t, "shape");
        for (int d = 0; d < pi->ndim; d++)
            cJSON_AddItemToArray(s, cJSON_CreateNumber((double)shape[d]));
        cJSON *o = cJSON_AddArrayToObject(t, "data_offsets");
        cJSON_AddItemToArray(o, cJSON_CreateNumber((double)off));
        cJSON_AddItemToArray(o, cJSON_CreateNumber((double)(off + bytes)));
        off += bytes;
    }
    char *out = h ? hf_st_header_text(h, hlen) : NULL;
    if (!out)
        zc_err_set(err, ZC_ENOMEM, "out of memory writing the header");
    return out;
}

/* Parameter p as transformers stores it, appended to f. */
static zc_status export_param(zc_ckpt_reader *r, const gpt2_config *gc, int p, zc_durable *f,
                              float *buf, size_t cap, zc_err *err)
{
    const int vocab = gc->vocab_size;
    const zc_param_info *pi = zc_ckpt_reader_param(r, p);
    char name[NAME_CAP];
    bool tr;
    int64_t shape[2];
    hf_name(pi->name, name, sizeof name, &tr);
    hf_shape(pi, tr, vocab, shape);
    size_t n = (size_t)shape[0] * (size_t)(pi->ndim > 1 ? shape[1] : 1);
    char mat[8];
    int row0, rows;
    if (gpt2_vocab_tile_of(gc, pi->name, mat, &row0, &rows)) { /* its rows of the real table */
        const int end = row0 + rows < vocab ? row0 + rows : vocab;
        n = end > row0 ? (size_t)(end - row0) * (size_t)gc->channels : 0;
    }
    zc_status st = ZC_OK;
    if (!tr) {
        for (size_t at = 0; !st && at < n; at += cap) {
            size_t k = n - at < cap ? n - at : cap;
            if (!(st = lora_merged_read(r, gc, p, at, k, buf, err)))
                st = zc_durable_write(f, buf, k * sizeof(float), err);
        }
        return st;
    }
    float *whole = malloc(2 * n * sizeof(float)); /* [out, in], then [in, out] */
    if (!whole)
        return zc_err_set(err, ZC_ENOMEM, "out of memory exporting '%s'", pi->name);
    const size_t out = (size_t)pi->shape[0], in = (size_t)pi->shape[1];
    if (!(st = lora_merged_read(r, gc, p, 0, n, whole, err))) {
        for (size_t o = 0; o < out; o++)
            for (size_t i = 0; i < in; i++)
                whole[n + i * out + o] = whole[o * in + i];
        st = zc_durable_write(f, whole + n, n * sizeof(float), err);
    }
    free(whole);
    return st;
}

zc_status hf_export_checkpoint(const char *ckdir, const char *base, const char *outdir, zc_err *err)
{
    zc_ckpt_reader *r;
    zc_status st = zc_ckpt_reader_open(ckdir, &r, err);
    if (st)
        return st;
    gpt2_config gc;
    st = gpt2_checkpoint_shape(r, ckdir, &gc, err);
    if (!st && gc.family[0]) { /* the Llama family's names and files */
        zc_ckpt_reader_close(r);
        return hf_decoder_export(ckdir, &gc, base, outdir, err);
    }
    hf_base *hb = NULL;
    if (!st && base)
        st = hf_base_attach(base, &gc, r, &hb, err);
    if (!st && mkdir(outdir, 0777) && errno != EEXIST)
        st = zc_err_set(err, ZC_EIO, "cannot create %s: %m", outdir);
    char path[PATH_CAP];
    if (!st && (size_t)snprintf(path, sizeof path, "%s/model.safetensors", outdir) >= sizeof path)
        st = zc_err_set(err, ZC_EINVAL, "%s: path too long", outdir);
    uint64_t hlen = 0;
    char *header = st ? NULL : export_header(r, &gc, &hlen, err);
    if (!st && !header)
        st = err->code;
    zc_durable *f = NULL;
    if (!st)
        st = zc_durable_open(&f, path, err);
    if (!st)
        st = hf_st_write_header(f, header, hlen, err);
    enum { CAP = 1 << 20 };
    float *buf = st ? NULL : malloc(CAP * sizeof(float));
    if (!st && !buf)
        st = zc_err_set(err, ZC_ENOMEM, "out of memory exporting %s", ckdir);
    for (int p = 0; !st && p < zc_ckpt_reader_num_params(r); p++)
        if (!lora_is_param(zc_ckpt_reader_param(r, p)->name)) /* adapters: merged */
            st = export_param(r, &gc, p, f, buf, CAP, err);
    if (f) {
        if (st)
            zc_durable_abort(f);
        else
            st = zc_durable_commit(f, err);
    }
    if (!st && (size_t)snprintf(path, sizeof path, "%s/config.json", outdir) < sizeof path)
        st = write_config(path, &gc, err);
    free(buf);
    free(header);
    zc_ckpt_reader_close(r);
    hf_base_close(hb);
    return st;
}
