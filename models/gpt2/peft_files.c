/* peft_files.c — LoRA adapters read from and written as PEFT's adapter directory (contract in
 * peft_files.h). */
#include "models/gpt2/peft_files.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "models/gpt2/hf_safetensors.h"
#include "zeroc/checkpoint.h"
#include "zeroc/durable.h"
#include "zeroc/safetensors.h"

enum { NAME_CAP = 192, PATH_CAP = 4096 };

static const char *const CONFIG = "adapter_config.json", *const WEIGHTS =
                                                             "adapter_model.safetensors";

bool peft_is_adapter(const char *dir)
{
    char path[PATH_CAP];
    struct stat sb;
    return (size_t)snprintf(path, sizeof path, "%s/%s", dir, CONFIG) < sizeof path &&
           !stat(path, &sb) && S_ISREG(sb.st_mode);
}

/* The module's name in transformers for target t of block l. */
static void module_name(bool gpt2, int l, lora_target t, char *out, size_t cap)
{
    if (gpt2) {
        const char *m = t == LORA_QKV_FUSED ? "attn.c_attn"
                        : t == LORA_O       ? "attn.c_proj"
                        : t == LORA_UP      ? "mlp.c_fc"
                                            : "mlp.c_proj";
        snprintf(out, cap, "transformer.h.%d.%s", l, m);
        return;
    }
    const bool attn = t == LORA_Q || t == LORA_K || t == LORA_V || t == LORA_O;
    snprintf(out, cap, "model.layers.%d.%s.%s", l, attn ? "self_attn" : "mlp", lora_target_name(t));
}

void peft_tensor_name(bool gpt2, int l, lora_target t, bool a, char *out, size_t cap)
{
    char m[NAME_CAP];
    module_name(gpt2, l, t, m, sizeof m);
    snprintf(out, cap, "base_model.model.%s.lora_%s.weight", m, a ? "A" : "B");
}

/* ---------- adapter_config.json ---------- */

/* Keys that would change what the adapters compute, and are refused unless at their default. */
static zc_status refuse_key(const char *path, const cJSON *c, zc_err *err)
{
    static const char *const falsy[] = {"use_rslora", "use_dora"};
    static const char *const nulls[] = {"modules_to_save", "layers_to_transform",
                                        "layer_replication"};
    static const char *const empty[] = {"rank_pattern", "alpha_pattern"};
    for (size_t i = 0; i < sizeof falsy / sizeof *falsy; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, falsy[i]);
        if (v && !cJSON_IsFalse(v) && !cJSON_IsNull(v))
            return zc_err_set(err, ZC_EINVAL, "%s: %s is not supported by zeroc (expected false)",
                              path, falsy[i]);
    }
    for (size_t i = 0; i < sizeof nulls / sizeof *nulls; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, nulls[i]);
        if (v && !cJSON_IsNull(v) && !(cJSON_IsArray(v) && !cJSON_GetArraySize(v)))
            return zc_err_set(err, ZC_EINVAL, "%s: %s is not supported by zeroc (expected null)",
                              path, nulls[i]);
    }
    for (size_t i = 0; i < sizeof empty / sizeof *empty; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, empty[i]);
        if (v && !cJSON_IsNull(v) && !(cJSON_IsObject(v) && !v->child))
            return zc_err_set(err, ZC_EINVAL,
                              "%s: %s is not supported by zeroc (expected {}: one r and one "
                              "lora_alpha for every module)",
                              path, empty[i]);
    }
    const cJSON *bias = cJSON_GetObjectItemCaseSensitive(c, "bias");
    if (bias && !(cJSON_IsString(bias) && !strcmp(bias->valuestring, "none")))
        return zc_err_set(err, ZC_EINVAL,
                          "%s: bias must be \"none\" (zeroc trains no bias with LoRA)", path);
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(c, "peft_type");
    if (type && !(cJSON_IsString(type) && !strcmp(type->valuestring, "LORA")))
        return zc_err_set(err, ZC_EINVAL, "%s: peft_type must be \"LORA\"", path);
    return ZC_OK;
}

zc_status peft_read_config(const char *dir, bool gpt2, gpt2_lora *l, zc_err *err)
{
    char path[PATH_CAP];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, CONFIG) >= sizeof path)
        return zc_err_set(err, ZC_EINVAL, "%s: path too long", dir);
    cJSON *c;
    zc_status st = hf_read_json(path, &c, err);
    if (st)
        return st;
    st = refuse_key(path, c, err);
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(c, "r"),
                *alpha = cJSON_GetObjectItemCaseSensitive(c, "lora_alpha"),
                *drop = cJSON_GetObjectItemCaseSensitive(c, "lora_dropout"),
                *tm = cJSON_GetObjectItemCaseSensitive(c, "target_modules");
    uint64_t rank = 0;
    if (!st && (!r || !hf_json_u64(r, &rank) || rank < 1 || rank > 65536))
        st = zc_err_set(err, ZC_EINVAL, "%s: r must be an integer from 1 to 65536", path);
    if (!st && alpha && !cJSON_IsNumber(alpha))
        st = zc_err_set(err, ZC_EINVAL, "%s: lora_alpha must be a number", path);
    if (!st && drop && !cJSON_IsNumber(drop))
        st = zc_err_set(err, ZC_EINVAL, "%s: lora_dropout must be a number", path);
    l->r = (int)rank;
    l->alpha = alpha ? alpha->valuedouble : 8.0; /* LoraConfig's defaults */
    l->dropout = drop ? drop->valuedouble : 0.0;
    l->targets = 0;
    if (!st && (!tm || cJSON_IsNull(tm)))
        l->targets = lora_default_targets(gpt2);
    else if (!st && cJSON_IsString(tm))
        st = lora_parse_targets(tm->valuestring, gpt2, &l->targets, err);
    else if (!st && cJSON_IsArray(tm)) {
        for (const cJSON *x = tm->child; !st && x; x = x->next) {
            unsigned t;
            if (!cJSON_IsString(x))
                st = zc_err_set(err, ZC_EINVAL, "%s: target_modules must hold strings", path);
            else if (!(st = lora_parse_targets(x->valuestring, gpt2, &t, err)))
                l->targets |= t;
        }
    } else if (!st)
        st = zc_err_set(err, ZC_EINVAL, "%s: target_modules must be a list of names or a string",
                        path);
    if (!st)
        st = lora_check(l, err);
    if (st && !strstr(err->msg, path)) { /* name the file */
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err->msg);
        zc_err_set(err, st, "%s: %s", path, msg);
    }
    cJSON_Delete(c);
    return st;
}

/* ---------- reading the weights ---------- */

/* The engine parameter named name, or −1. */
static int param_named(zc_engine *e, const char *name)
{
    for (int q = 0; q < zc_engine_num_params(e); q++)
        if (!strcmp(zc_engine_param_info(e, q)->name, name))
            return q;
    return -1;
}

zc_status peft_load(zc_engine *e, const char *dir, const gpt2_config *cfg, zc_err *err)
{
    char path[PATH_CAP];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, WEIGHTS) >= sizeof path)
        return zc_err_set(err, ZC_EINVAL, "%s: path too long", dir);
    hf_st_file f;
    zc_status st = hf_st_open(&f, path, err);
    if (st)
        return st;
    const bool gpt2 = !cfg->family[0];
    lora_slot s[LORA_NTARGETS];
    const int ns = gpt2_lora_slots(cfg, s), L = cfg->num_layers;
    /* every tensor of the file is one of the adapters */
    for (const cJSON *t = f.h->child; !st && t; t = t->next) {
        bool found = !strcmp(t->string, "__metadata__");
        char want[NAME_CAP];
        for (int l = 0; !found && l < L; l++)
            for (int k = 0; !found && k < 2 * ns; k++) {
                peft_tensor_name(gpt2, l, s[k / 2].target, !(k & 1), want, sizeof want);
                found = !strcmp(want, t->string);
            }
        if (!found)
            st = zc_err_set(err, ZC_EINVAL,
                            "%s: tensor '%s' is not an adapter of this model's target_modules (%d "
                            "layers; PEFT's names)",
                            path, t->string, L);
    }
    if (!st)
        st = zc_safetensors_check_layout(path, err);
    float *buf = NULL;
    for (int l = 0; !st && l < L; l++)
        for (int k = 0; !st && k < 2 * ns; k++) {
            const bool a = !(k & 1);
            const lora_slot *sl = &s[k / 2];
            char name[NAME_CAP], mine[ZC_MAX_NAME];
            peft_tensor_name(gpt2, l, sl->target, a, name, sizeof name);
            snprintf(mine, sizeof mine, "h.%d.lora.%s.%s", l, lora_target_name(sl->target),
                     a ? "A" : "B");
            const int q = param_named(e, mine);
            hf_st_tensor t;
            if (q < 0) {
                st = zc_err_set(err, ZC_EINVAL, "%s: the model has no parameter %s", path, mine);
                break;
            }
            if ((st = hf_st_tensor_get(&f, name, &t, err)))
                break;
            const int64_t rows = a ? cfg->lora.r : sl->out_n, cols = a ? sl->in : cfg->lora.r;
            if (t.ndim != 2 || t.shape[0] != rows || t.shape[1] != cols) {
                st = zc_err_set(err, ZC_EINVAL,
                                "%s: tensor '%s' has shape [%lld%s%lld], expected [%lld, %lld] "
                                "(r %d)",
                                path, name, (long long)t.shape[0], t.ndim == 2 ? ", " : "",
                                t.ndim == 2 ? (long long)t.shape[1] : 0LL, (long long)rows,
                                (long long)cols, cfg->lora.r);
                break;
            }
            size_t first, n;
            zc_engine_param_owned(e, q, &first, &n);
            if (!n)
                continue;
            float *nb = realloc(buf, n * sizeof *buf);
            if (!nb) {
                st = zc_err_set(err, ZC_ENOMEM, "out of memory reading %s", path);
                break;
            }
            buf = nb;
            st = hf_st_read(&f, name, &t, first, n, buf, err);
            for (size_t i = 0; !st && i < n; i++)
                if (!isfinite(buf[i]))
                    st = zc_err_set(err, ZC_EINVAL,
                                    "%s: tensor '%s' holds %g: adapters must be "
                                    "finite",
                                    path, name, (double)buf[i]);
            if (!st)
                st = zc_engine_set_param_values(e, q, first, n, buf, err);
        }
    free(buf);
    hf_st_close(&f);
    return st;
}

/* ---------- export ---------- */

static zc_status write_config(const char *path, const gpt2_config *gc, const char *base,
                              zc_err *err)
{
    const bool gpt2 = !gc->family[0];
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "peft_type", "LORA");
    cJSON_AddStringToObject(c, "task_type", "CAUSAL_LM");
    if (base)
        cJSON_AddStringToObject(c, "base_model_name_or_path", base);
    else
        cJSON_AddNullToObject(c, "base_model_name_or_path");
    cJSON_AddNumberToObject(c, "r", gc->lora.r);
    cJSON_AddNumberToObject(c, "lora_alpha", gc->lora.alpha);
    cJSON_AddNumberToObject(c, "lora_dropout", gc->lora.dropout);
    cJSON *tm = cJSON_AddArrayToObject(c, "target_modules");
    if (gpt2) { /* c_proj stands for both of GPT-2's */
        static const struct {
            unsigned bits;
            const char *name;
        } g[] = {{1u << LORA_QKV_FUSED, "c_attn"},
                 {(1u << LORA_O) | (1u << LORA_DOWN), "c_proj"},
                 {1u << LORA_UP, "c_fc"}};
        for (size_t i = 0; i < sizeof g / sizeof *g; i++)
            if (gc->lora.targets & g[i].bits)
                cJSON_AddItemToArray(tm, cJSON_CreateString(g[i].name));
    } else
        for (int t = LORA_Q; t <= LORA_DOWN; t++)
            if (gc->lora.targets & (1u << t))
                cJSON_AddItemToArray(tm, cJSON_CreateString(lora_target_name((lora_target)t)));
    cJSON_AddStringToObject(c, "bias", "none");
    cJSON_AddBoolToObject(c, "fan_in_fan_out", gpt2); /* GPT-2's Conv1D */
    cJSON_AddBoolToObject(c, "inference_mode", true);
    cJSON_AddBoolToObject(c, "init_lora_weights", true);
    cJSON_AddBoolToObject(c, "use_rslora", false);
    cJSON_AddBoolToObject(c, "use_dora", false);
    cJSON_AddNullToObject(c, "modules_to_save");
    cJSON_AddNullToObject(c, "layers_to_transform");
    cJSON_AddObjectToObject(c, "rank_pattern");
    cJSON_AddObjectToObject(c, "alpha_pattern");
    return hf_write_json(path, c, err);
}

zc_status peft_export(const char *ckdir, const gpt2_config *gc, const char *base,
                      const char *outdir, zc_err *err)
{
    if (gc->lora.r < 1)
        return zc_err_set(err, ZC_EINVAL,
                          "%s: the run had no LoRA adapters (train --lora-r R): nothing to write "
                          "in PEFT's format",
                          ckdir);
    zc_ckpt_reader *r;
    zc_status st = zc_ckpt_reader_open(ckdir, &r, err);
    if (st)
        return st;
    const bool gpt2 = !gc->family[0];
    lora_slot s[LORA_NTARGETS];
    const int ns = gpt2_lora_slots(gc, s), L = gc->num_layers, np = zc_ckpt_reader_num_params(r);
    const int nt = 2 * ns * L;
    int *pid = malloc((size_t)nt * sizeof *pid);
    cJSON *h = cJSON_CreateObject();
    if (!pid || !h)
        st = zc_err_set(err, ZC_ENOMEM, "out of memory");
    uint64_t off = 0;
    for (int i = 0; !st && i < nt; i++) { /* block by block, A then B of each module */
        const int l = i / (2 * ns), k = i % (2 * ns) / 2;
        const bool a = !(i & 1);
        char mine[ZC_MAX_NAME], name[NAME_CAP];
        snprintf(mine, sizeof mine, "h.%d.lora.%s.%s", l, lora_target_name(s[k].target),
                 a ? "A" : "B");
        pid[i] = -1;
        for (int p = 0; p < np && pid[i] < 0; p++)
            if (!strcmp(zc_ckpt_reader_param(r, p)->name, mine))
                pid[i] = p;
        const int64_t rows = a ? gc->lora.r : s[k].out_n, cols = a ? s[k].in : gc->lora.r;
        const zc_param_info *pi = pid[i] < 0 ? NULL : zc_ckpt_reader_param(r, pid[i]);
        if (!pi || pi->ndim != 2 || pi->shape[0] != rows || pi->shape[1] != cols) {
            st = zc_err_set(err, ZC_EINVAL,
                            "%s: parameter %s [%lld, %lld] is %s the checkpoint as its manifest's "
                            "client record says",
                            ckdir, mine, (long long)rows, (long long)cols,
                            pi ? "not shaped in" : "not in");
            break;
        }
        peft_tensor_name(gpt2, l, s[k].target, a, name, sizeof name);
        const uint64_t bytes = 4 * (uint64_t)rows * (uint64_t)cols;
        cJSON *o = cJSON_AddObjectToObject(h, name);
        cJSON_AddStringToObject(o, "dtype", "F32");
        cJSON *sh = cJSON_AddArrayToObject(o, "shape");
        cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)rows));
        cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)cols));
        cJSON *d = cJSON_AddArrayToObject(o, "data_offsets");
        cJSON_AddItemToArray(d, cJSON_CreateNumber((double)off));
        cJSON_AddItemToArray(d, cJSON_CreateNumber((double)(off + bytes)));
        off += bytes;
    }
    if (!st && mkdir(outdir, 0777) && errno != EEXIST)
        st = zc_err_set(err, ZC_EIO, "cannot create %s: %m", outdir);
    char path[PATH_CAP];
    if (!st && (size_t)snprintf(path, sizeof path, "%s/%s", outdir, WEIGHTS) >= sizeof path)
        st = zc_err_set(err, ZC_EINVAL, "%s: path too long", outdir);
    uint64_t hlen = 0;
    char *header = NULL;
    if (!st) {
        header = hf_st_header_text(h, &hlen);
        h = NULL; /* taken */
    }
    if (!st && !header)
        st = zc_err_set(err, ZC_ENOMEM, "out of memory");
    zc_durable *f = NULL;
    if (!st)
        st = zc_durable_open(&f, path, err);
    if (!st)
        st = hf_st_write_header(f, header, hlen, err);
    float *buf = NULL;
    for (int i = 0; !st && i < nt; i++) {
        const zc_param_info *pi = zc_ckpt_reader_param(r, pid[i]);
        float *nb = realloc(buf, pi->numel * sizeof *buf);
        if (!nb) {
            st = zc_err_set(err, ZC_ENOMEM, "out of memory");
            break;
        }
        buf = nb;
        if (!(st = zc_ckpt_reader_read(r, pid[i], 0, pi->numel, buf, err)))
            st = zc_durable_write(f, buf, pi->numel * sizeof(float), err);
    }
    if (f) {
        if (st)
            zc_durable_abort(f);
        else
            st = zc_durable_commit(f, err);
    }
    if (!st && (size_t)snprintf(path, sizeof path, "%s/%s", outdir, CONFIG) < sizeof path)
        st = write_config(path, gc, base, err);
    free(buf);
    free(header);
    cJSON_Delete(h);
    free(pid);
    zc_ckpt_reader_close(r);
    return st;
}
