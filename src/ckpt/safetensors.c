/* safetensors.c — writes the engine's fp32 weights as safetensors (format table in
 * zeroc/safetensors.h). Collective; rank 0 writes. The header is built first from the parameter
 * table (shapes and offsets are known without touching data), then each unit is gathered and
 * its parameters appended, so memory stays at one unit. Reading holds a file to the format's
 * layout (the tensors' bytes tile the data: no overlap, gap or trailing bytes) before it sets
 * any value. */
#include <math.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ckpt/safetensors_header.h"
#include "util/json_strict.h"
#include "zeroc/durable.h"
#include "zeroc/safetensors.h"

char *zc_safetensors_header(const zc_param_info *params, int nparams, int elem_bytes, size_t *len)
{
    cJSON *root = cJSON_CreateObject();
    size_t off = 0;
    for (int p = 0; p < nparams; p++) {
        const zc_param_info *pi = &params[p];
        cJSON *t = cJSON_AddObjectToObject(root, pi->name);
        cJSON_AddStringToObject(t, "dtype", elem_bytes == 2 ? "BF16" : "F32");
        cJSON *shape = cJSON_AddArrayToObject(t, "shape");
        for (int d = 0; d < pi->ndim; d++)
            cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)pi->shape[d]));
        cJSON *offs = cJSON_AddArrayToObject(t, "data_offsets");
        cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)off));
        off += pi->numel * (size_t)elem_bytes;
        cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)off));
    }
    cJSON *meta = cJSON_AddObjectToObject(root, "__metadata__");
    cJSON_AddStringToObject(meta, "format", "pt");
    cJSON_AddStringToObject(meta, "producer", "zeroc");
    char *json = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (!json)
        return NULL;
    size_t n = strlen(json), padded = (n + 7) / 8 * 8;
    char *h = realloc(json, padded + 1);
    if (!h) {
        free(json);
        return NULL;
    }
    memset(h + n, ' ', padded - n);
    h[padded] = 0;
    *len = padded;
    return h;
}

zc_status zc_safetensors_save(zc_engine *e, const char *path, zc_err *err)
{
    /* Every rank takes part in the gathers; only rank 0 opens and writes the file. */
    const bool writer = zc_engine_rank(e) == 0;
    size_t max_padded = 0;
    for (int u = 0; u < zc_engine_num_units(e); u++)
        if (zc_engine_unit_info(e, u)->padded > max_padded)
            max_padded = zc_engine_unit_info(e, u)->padded;
    float *buf = malloc(max_padded * sizeof(float));
    size_t hlen = 0;
    int np = zc_engine_num_params(e);
    zc_param_info *infos = malloc((size_t)np * sizeof *infos);
    for (int p = 0; infos && p < np; p++)
        infos[p] = *zc_engine_param_info(e, p);
    char *header = infos ? zc_safetensors_header(infos, np, 4, &hlen) : NULL;
    free(infos);
    zc_durable *f = NULL;
    zc_status st = ZC_OK;
    if (!buf || !header)
        st = zc_err_set(err, ZC_ENOMEM, "out of memory exporting '%s'", path);
    else if (writer)
        st = zc_durable_open(&f, path, err);
    if (!st && f) {
        unsigned char le[8];
        for (int i = 0; i < 8; i++)
            le[i] = (unsigned char)((uint64_t)hlen >> (8 * i));
        if (!(st = zc_durable_write(f, le, 8, err)))
            st = zc_durable_write(f, header, hlen, err);
    }
    /* Every rank runs every gather even after a local write error, so no rank is left waiting. */
    zc_status write_st = st;
    st = ZC_OK;
    for (int u = 0; u < zc_engine_num_units(e) && !st && buf && header; u++) {
        st = zc_engine_gather_unit(e, u, buf, err);
        const zc_unit_info *ui = zc_engine_unit_info(e, u);
        if (!st && f && !write_st)
            write_st = zc_durable_write(f, buf, ui->numel * sizeof(float), err);
    }
    if (f && (st || write_st))
        zc_durable_abort(f);
    else if (f)
        write_st = zc_durable_commit(f, err);
    free(buf);
    free(header);
    return st ? st : write_st;
}

/* ---------- reading ---------- */

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

bool zc_safetensors_is_path(const char *path)
{
    return ends_with(path, ".safetensors");
}

/* A data offset: an integral JSON number in [0, 2^53] (exact in a double). */
/* An offset's JSON value for a message: a number as %.17g (infinity as "inf"), else its kind. */
static const char *offset_text(const cJSON *it, char out[48])
{
    if (cJSON_IsNumber(it))
        snprintf(out, 48, "%.17g", it->valuedouble);
    else
        snprintf(out, 48, "%s", cJSON_IsString(it) ? "a string" : "not a number");
    return out;
}

static bool json_offset(const cJSON *it, uint64_t *out)
{
    if (!cJSON_IsNumber(it))
        return false;
    double v = it->valuedouble;
    if (!(v >= 0 && v <= 9007199254740992.0) || v != floor(v))
        return false;
    *out = (uint64_t)v;
    return true;
}

/* One tensor's bytes in the data after the header; i: its place in the header. */
typedef struct {
    const char *name;
    uint64_t b, e;
    int i;
} st_span;

/* By begin; at one begin the empty tensors first, then header order (so of two tensors on the
 * same bytes, the one listed later is named). */
static int span_order(const void *pa, const void *pb)
{
    const st_span *a = pa, *b = pb;
    if (a->b != b->b)
        return a->b < b->b ? -1 : 1;
    if ((a->e > a->b) != (b->e > b->b))
        return a->e > a->b ? 1 : -1;
    return a->i - b->i;
}

static int span_name(const void *pa, const void *pb)
{
    return strcmp(((const st_span *)pa)->name, ((const st_span *)pb)->name);
}

/* The format's rule for the `bytes` bytes after the header: the tensors' data_offsets, in order
 * of begin, tile them exactly — the first begins at 0, each where the one before ends, the last
 * at the end of the file — so no two tensors share bytes and none is left over (a gap, trailing
 * data). Names are unique too: cJSON would read a repeated one's first entry, other readers may
 * take its last. (zc_safetensors_check_layout gives models/gpt2/hf_files.c the same rule for
 * transformers' files.) */
static zc_status check_layout(const char *path, const cJSON *h, uint64_t bytes, zc_err *err)
{
    int n = 0;
    for (const cJSON *t = h->child; t; t = t->next)
        n += strcmp(t->string, "__metadata__") != 0;
    st_span *s = malloc((size_t)n * sizeof *s + 1);
    if (!s)
        return zc_err_set(err, ZC_ENOMEM, "out of memory reading %s", path);
    zc_status st = ZC_OK;
    int k = 0;
    for (const cJSON *t = h->child; t && !st; t = t->next) {
        if (!strcmp(t->string, "__metadata__"))
            continue;
        const cJSON *offs = cJSON_GetObjectItemCaseSensitive(t, "data_offsets");
        st_span *x = &s[k];
        *x = (st_span){.name = t->string, .i = k++};
        if (!cJSON_IsArray(offs) || cJSON_GetArraySize(offs) != 2)
            st = zc_err_set(err, ZC_EINVAL,
                            "%s: tensor '%s' has no data_offsets [begin, end] of byte offsets",
                            path, x->name);
        else if (!json_offset(cJSON_GetArrayItem(offs, 0), &x->b) ||
                 !json_offset(cJSON_GetArrayItem(offs, 1), &x->e)) {
            char a[48], b[48]; /* there, but out of range (1e400 reads as infinity) or no number */
            st = zc_err_set(err, ZC_EINVAL,
                            "%s: tensor '%s' has data_offsets [%s, %s], expected two integer byte "
                            "offsets from 0 to 2^53",
                            path, x->name, offset_text(cJSON_GetArrayItem(offs, 0), a),
                            offset_text(cJSON_GetArrayItem(offs, 1), b));
        } else if (x->e < x->b)
            st = zc_err_set(err, ZC_EINVAL,
                            "%s: tensor '%s' has data_offsets [%llu, %llu], expected begin <= end",
                            path, x->name, (unsigned long long)x->b, (unsigned long long)x->e);
        else if (x->e > bytes)
            st = zc_err_set(err, ZC_EINVAL,
                            "%s: tensor '%s' has data_offsets [%llu, %llu] past the end of the "
                            "file's %llu bytes of tensor data (truncated?)",
                            path, x->name, (unsigned long long)x->b, (unsigned long long)x->e,
                            (unsigned long long)bytes);
    }
    if (!st && n > 1)
        qsort(s, (size_t)n, sizeof *s, span_name);
    for (int j = 1; !st && j < n; j++)
        if (!strcmp(s[j - 1].name, s[j].name))
            st = zc_err_set(err, ZC_EINVAL,
                            "%s: tensor '%s' appears twice in the header, expected once", path,
                            s[j].name);
    if (!st && n > 1)
        qsort(s, (size_t)n, sizeof *s, span_order);
    uint64_t at = 0;
    for (int j = 0; !st && j < n; at = s[j++].e) {
        const st_span *x = &s[j], *prev = j ? &s[j - 1] : NULL;
        if (x->b < at)
            st = zc_err_set(err, ZC_EINVAL,
                            "%s: tensor '%s' has data_offsets [%llu, %llu], expected a begin of "
                            "%llu: it overlaps tensor '%s' [%llu, %llu]",
                            path, x->name, (unsigned long long)x->b, (unsigned long long)x->e,
                            (unsigned long long)at, prev->name, (unsigned long long)prev->b,
                            (unsigned long long)prev->e);
        else if (x->b > at)
            st = zc_err_set(err, ZC_EINVAL,
                            "%s: tensor '%s' has data_offsets [%llu, %llu], expected a begin of "
                            "%llu: it leaves a gap of %llu bytes after %s%s%s that no tensor holds",
                            path, x->name, (unsigned long long)x->b, (unsigned long long)x->e,
                            (unsigned long long)at, (unsigned long long)(x->b - at),
                            prev ? "tensor '" : "the header", prev ? prev->name : "",
                            prev ? "'" : "");
    }
    if (!st && at != bytes)
        st = zc_err_set(err, ZC_EINVAL,
                        "%s: the tensors end at byte %llu of the file's %llu bytes of tensor "
                        "data: %llu bytes of trailing data after the last tensor%s%s%s",
                        path, (unsigned long long)at, (unsigned long long)bytes,
                        (unsigned long long)(bytes - at), n ? " ('" : "", n ? s[n - 1].name : "",
                        n ? "')" : "");
    free(s);
    return st;
}

/* Opens a safetensors file and parses its header: *h the JSON object (NULL on error), *data0
 * where the tensor data begins, *size the file's size. The caller closes *fp (when not NULL)
 * and deletes *h. */
static zc_status read_header(const char *path, FILE **fp, cJSON **h, uint64_t *data0,
                             uint64_t *size, zc_err *err)
{
    *h = NULL;
    /* only a regular file, opened without blocking: a FIFO given to --init hung the run */
    FILE *f = *fp = zc_fopen_regular(path, err);
    if (!f)
        return err ? err->code : ZC_EIO;
    unsigned char le[8];
    uint64_t hlen = 0;
    zc_status st = ZC_OK;
    if (fread(le, 1, 8, f) != 8)
        st = zc_err_set(err, ZC_EINVAL, "%s: too short for a safetensors file", path);
    for (int i = 0; i < 8; i++)
        hlen |= (uint64_t)le[i] << (8 * i);
    if (!st && (hlen == 0 || hlen > (100u << 20)))
        st = zc_err_set(err, ZC_EINVAL,
                        "%s: header length %llu is not plausible (not a "
                        "safetensors file?)",
                        path, (unsigned long long)hlen);
    char *text = st ? NULL : malloc(hlen + 1);
    if (!st && (!text || fread(text, 1, hlen, f) != hlen))
        st = zc_err_set(err, ZC_EINVAL, "%s: truncated header", path);
    if (text)
        text[st ? 0 : hlen] = 0;
    /* the format's rule: the JSON object first, then spaces (only) to the declared length;
     * python's safetensors (serde_json) refuses anything else there, and what cJSON lets
     * through (control bytes, \u0000, a tensor's field given twice) too */
    char why[320];
    if (!st && text[0] != '{')
        st = zc_err_set(err, ZC_EINVAL,
                        "%s: bad header: expected '{' at offset 8 (the header is a JSON object), "
                        "got byte 0x%02x",
                        path, (unsigned char)text[0]);
    *h = st ? NULL : zc_json_parse_strict(text, hlen, 8, " ", "spaces", 2, why, sizeof why);
    free(text);
    if (!st && !*h)
        st = zc_err_set(err, ZC_EINVAL, "%s: bad header: %s", path, why);
    else if (!st && !cJSON_IsObject(*h))
        st = zc_err_set(err, ZC_EINVAL, "%s: the header is not JSON", path);
    struct stat sb;
    if (!st && fstat(fileno(f), &sb))
        st = zc_err_set(err, ZC_EIO, "%s: %m", path);
    *data0 = 8 + hlen, *size = st ? 0 : (uint64_t)sb.st_size;
    return st;
}

zc_status zc_safetensors_check_layout(const char *path, zc_err *err)
{
    FILE *f;
    cJSON *h;
    uint64_t data0, size;
    zc_status st = read_header(path, &f, &h, &data0, &size, err);
    if (!st)
        st = check_layout(path, h, size - data0, err);
    cJSON_Delete(h);
    if (f)
        fclose(f);
    return st;
}

/* "[a, b]" of a header's shape array (numbers as they are; "(none)" when it is not an array),
 * and of a parameter's shape, for messages. */
static const char *shape_text(const cJSON *shape, char *buf, size_t cap)
{
    if (!cJSON_IsArray(shape)) {
        snprintf(buf, cap, "(none)");
        return buf;
    }
    size_t n = (size_t)snprintf(buf, cap, "[");
    for (const cJSON *d = shape->child; d && n < cap; d = d->next)
        n += (size_t)snprintf(buf + n, cap - n, "%s%.17g", d == shape->child ? "" : ", ",
                              cJSON_IsNumber(d) ? d->valuedouble : NAN);
    if (n < cap)
        snprintf(buf + n, cap - n, "]");
    return buf;
}

static const char *param_shape_text(const zc_param_info *pi, char *buf, size_t cap)
{
    size_t n = (size_t)snprintf(buf, cap, "[");
    for (int d = 0; d < pi->ndim && n < cap; d++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%lld", d ? ", " : "", (long long)pi->shape[d]);
    if (n < cap)
        snprintf(buf + n, cap - n, "]");
    return buf;
}

zc_status zc_safetensors_load(zc_engine *e, const char *path, zc_err *err)
{
    FILE *f;
    cJSON *h;
    uint64_t data0, file_size;
    zc_status st = read_header(path, &f, &h, &data0, &file_size, err);
    if (!f)
        return st;
    const int fd = fileno(f);
    /* every tensor must be a parameter of the model, with its shape */
    for (const cJSON *t = h ? h->child : NULL; !st && t; t = t->next) {
        if (!strcmp(t->string, "__metadata__"))
            continue;
        int p = -1;
        for (int q = 0; q < zc_engine_num_params(e) && p < 0; q++)
            if (!strcmp(zc_engine_param_info(e, q)->name, t->string))
                p = q;
        if (p < 0)
            st = zc_err_set(err, ZC_EINVAL, "%s: tensor '%s' is not a parameter of the model", path,
                            t->string);
    }
    /* before any value is set: how the tensors share out the data */
    if (!st)
        st = check_layout(path, h, file_size - data0, err);
    for (int p = 0; !st && p < zc_engine_num_params(e); p++) {
        const zc_param_info *pi = zc_engine_param_info(e, p);
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(h, pi->name);
        const cJSON *dt = cJSON_GetObjectItemCaseSensitive(t, "dtype");
        const cJSON *shape = cJSON_GetObjectItemCaseSensitive(t, "shape");
        const cJSON *offs = cJSON_GetObjectItemCaseSensitive(t, "data_offsets");
        if (!t) {
            st = zc_err_set(err, ZC_EINVAL, "%s: no tensor '%s'", path, pi->name);
            break;
        }
        int es = cJSON_IsString(dt) && !strcmp(dt->valuestring, "F32")    ? 4
                 : cJSON_IsString(dt) && !strcmp(dt->valuestring, "BF16") ? 2
                                                                          : 0;
        bool shape_ok = cJSON_IsArray(shape) && cJSON_GetArraySize(shape) == pi->ndim;
        for (int d = 0; shape_ok && d < pi->ndim; d++)
            shape_ok = cJSON_GetArrayItem(shape, d)->valuedouble == (double)pi->shape[d];
        if (!es) {
            st = zc_err_set(err, ZC_EINVAL, "%s: tensor '%s' has dtype %s, expected F32 or BF16",
                            path, pi->name, cJSON_IsString(dt) ? dt->valuestring : "(none)");
            break;
        }
        if (!shape_ok) {
            char got[96], want[96];
            st = zc_err_set(err, ZC_EINVAL,
                            "%s: tensor '%s' has shape %s, the model's is %s (the file holds "
                            "a model of another shape)",
                            path, pi->name, shape_text(shape, got, sizeof got),
                            param_shape_text(pi, want, sizeof want));
            break;
        }
        if (!cJSON_IsArray(offs) || cJSON_GetArraySize(offs) != 2) {
            st = zc_err_set(err, ZC_EINVAL, "%s: tensor '%s' has no data_offsets pair", path,
                            pi->name);
            break;
        }
        uint64_t b = 0, e2 = 0;
        bool offs_ok = json_offset(cJSON_GetArrayItem(offs, 0), &b) &&
                       json_offset(cJSON_GetArrayItem(offs, 1), &e2) && b <= e2;
        if (!offs_ok || e2 - b != pi->numel * (uint64_t)es || data0 + e2 > file_size) {
            st = zc_err_set(err, ZC_EINVAL,
                            "%s: tensor '%s' has data_offsets [%llu, %llu] that "
                            "do not fit its shape or the file (truncated?)",
                            path, pi->name, (unsigned long long)b, (unsigned long long)e2);
            break;
        }
        size_t first, n; /* only what this rank holds */
        zc_engine_param_owned(e, p, &first, &n);
        float *buf = malloc(n * sizeof(float) + 1);
        if (!buf) {
            st = zc_err_set(err, ZC_ENOMEM, "out of memory reading %s", path);
            break;
        }
        off_t off = (off_t)(data0 + b + first * (uint64_t)es);
        size_t bytes = n * (size_t)es;
        if (pread(fd, buf, bytes, off) != (ssize_t)bytes) {
            st = zc_err_set(err, ZC_EIO, "%s: cannot read tensor '%s': %m", path, pi->name);
        } else {
            if (es == 2) { /* widen bf16 in place, from the end */
                const uint16_t *hb = (const uint16_t *)buf;
                for (size_t i = n; i-- > 0;) {
                    uint32_t u = (uint32_t)hb[i] << 16;
                    memcpy(&buf[i], &u, 4);
                }
            }
            for (size_t i = 0; i < n && !st; i++) /* a NaN would train on, unseen */
                if (!isfinite(buf[i]))
                    st = zc_err_set(err, ZC_EINVAL,
                                    "%s: tensor '%s' holds %g at element %zu: "
                                    "initial weights must be finite",
                                    path, pi->name, (double)buf[i], first + i);
            if (!st)
                st = zc_engine_set_param_values(e, p, first, n, buf, err);
        }
        free(buf);
    }
    cJSON_Delete(h);
    fclose(f);
    return st;
}
