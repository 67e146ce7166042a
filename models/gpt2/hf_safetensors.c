/* hf_safetensors.c — reading Hugging Face files for any decoder family: a safetensors file's
 * header (held to the format's rules: '{' first, strict JSON, spaces to its length) and its
 * tensors' bytes widened to fp32, and config.json read as Python's json reads it. What the names
 * mean is the caller's (hf_files.c for GPT-2, hf_decoder.c for the Llama family). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "models/gpt2/hf_safetensors.h"
#include "src/util/json_strict.h"
#include "zeroc/dtype.h"
#include "zeroc/durable.h"

void hf_st_close(hf_st_file *f)
{
    cJSON_Delete(f->h);
    if (f->fd >= 0)
        close(f->fd);
    f->h = NULL;
    f->fd = -1;
}

zc_status hf_st_open(hf_st_file *f, const char *path, zc_err *err)
{
    *f = (hf_st_file){
        .path = path, .fd = -1, .prefix = "", .who = "the model in transformers' layout"};
    int64_t size;
    /* a regular file only, opened without blocking: a FIFO given to --init hung the run */
    zc_status st = zc_open_regular(path, &f->fd, &size, err);
    if (st)
        return st;
    unsigned char le[8];
    uint64_t hlen = 0;
    if (pread(f->fd, le, 8, 0) != 8)
        st = zc_err_set(err, ZC_EINVAL, "%s: too short for a safetensors file", path);
    for (int i = 0; i < 8; i++)
        hlen |= (uint64_t)le[i] << (8 * i);
    f->size = (uint64_t)size;
    if (!st && (hlen < 2 || hlen > (100u << 20) || 8 + hlen > f->size))
        st = zc_err_set(err, ZC_EINVAL,
                        "%s: header length %llu does not fit the file (not a "
                        "safetensors file, or truncated)",
                        path, (unsigned long long)hlen);
    char *text = st ? NULL : malloc(hlen + 1);
    if (!st && !text)
        st = zc_err_set(err, ZC_ENOMEM, "out of memory reading %s", path);
    if (!st && pread(f->fd, text, hlen, 8) != (ssize_t)hlen)
        st = zc_err_set(err, ZC_EIO, "%s: cannot read the header: %m", path);
    if (!st) { /* the format's rule: '{' first, spaces (only) after the JSON, to hlen */
        char why[320];
        text[hlen] = 0;
        if (text[0] != '{')
            snprintf(why, sizeof why,
                     "expected '{' at offset 8 (the header is a JSON object), got byte 0x%02x",
                     (unsigned char)text[0]);
        else
            f->h = zc_json_parse_strict(text, hlen, 8, " ", "spaces", 2, why, sizeof why);
        if (!f->h)
            st = zc_err_set(err, ZC_EINVAL, "%s: bad header: %s", path, why);
        else if (!cJSON_IsObject(f->h))
            st = zc_err_set(err, ZC_EINVAL, "%s: the header is not a JSON object", path);
    }
    free(text);
    f->data0 = 8 + hlen;
    if (st)
        hf_st_close(f);
    return st;
}

bool hf_json_u64(const cJSON *v, uint64_t *out)
{
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 9007199254740992.0 ||
        v->valuedouble != floor(v->valuedouble))
        return false;
    *out = (uint64_t)v->valuedouble;
    return true;
}

/* Tensor `name` (prefixed as the file is); its dtype, shape and bytes checked against the file. */
zc_status hf_st_tensor_get(const hf_st_file *f, const char *name, hf_st_tensor *t, zc_err *err)
{
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(f->h, name);
    if (!o)
        return zc_err_set(err, ZC_EINVAL, "%s: no tensor '%s' (%s has it)", f->path, name, f->who);
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(o, "dtype");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(o, "shape");
    const cJSON *offs = cJSON_GetObjectItemCaseSensitive(o, "data_offsets");
    const char *d = cJSON_IsString(dt) ? dt->valuestring : "?";
    t->dt = !strcmp(d, "F32")    ? ZC_FP32
            : !strcmp(d, "BF16") ? ZC_BF16
            : !strcmp(d, "F16")  ? ZC_FP16
                                 : ZC_NDTYPES;
    if (t->dt == ZC_NDTYPES)
        return zc_err_set(err, ZC_EINVAL, "%s: tensor '%s' is %s, expected F32, BF16 or F16",
                          f->path, name, d);
    t->ndim = cJSON_IsArray(shape) ? cJSON_GetArraySize(shape) : -1;
    t->shape[0] = t->shape[1] = 0;
    uint64_t numel = 1, dim = 0, b, e;
    bool ok = t->ndim >= 1 && t->ndim <= 2;
    for (int k = 0; ok && k < t->ndim; k++) {
        ok = hf_json_u64(cJSON_GetArrayItem(shape, k), &dim) && dim <= INT32_MAX;
        t->shape[k] = (int64_t)dim;
        numel *= ok ? dim : 1;
    }
    if (!ok)
        return zc_err_set(err, ZC_EINVAL,
                          "%s: tensor '%s' has no valid shape of 1 or 2 "
                          "dimensions",
                          f->path, name);
    if (!cJSON_IsArray(offs) || cJSON_GetArraySize(offs) != 2 ||
        !hf_json_u64(cJSON_GetArrayItem(offs, 0), &b) ||
        !hf_json_u64(cJSON_GetArrayItem(offs, 1), &e) || e < b ||
        e - b != numel * (uint64_t)zc_dtype_size(t->dt) || f->data0 + e > f->size)
        return zc_err_set(err, ZC_EINVAL,
                          "%s: tensor '%s' has data_offsets that do not fit its "
                          "shape or the file (truncated?)",
                          f->path, name);
    t->off = b;
    return ZC_OK;
}

/* Elements [first, first + n) of t as fp32 into dst. */
zc_status hf_st_read(const hf_st_file *f, const char *name, const hf_st_tensor *t, size_t first,
                     size_t n, float *dst, zc_err *err)
{
    const size_t es = (size_t)zc_dtype_size(t->dt);
    char *p = (char *)dst;
    size_t bytes = n * es, got = 0;
    off_t at = (off_t)(f->data0 + t->off + first * es);
    while (got < bytes) {
        ssize_t r = pread(f->fd, p + got, bytes - got, at + (off_t)got);
        if (r <= 0)
            return zc_err_set(err, ZC_EIO, "%s: cannot read tensor '%s': %s", f->path, name,
                              r < 0 ? strerror(errno) : "unexpected end of file");
        got += (size_t)r;
    }
    if (es == 2) /* widen in place, from the end */
        for (size_t i = n; i-- > 0;) {
            uint16_t h;
            memcpy(&h, p + 2 * i, 2);
            uint32_t u = (uint32_t)h << 16;
            float x;
            memcpy(&x, &u, 4);
            dst[i] = t->dt == ZC_BF16 ? x : zc_f16_to_f32_ref(h);
        }
    return ZC_OK;
}

zc_status hf_read_json(const char *path, cJSON **out, zc_err *err)
{
    zc_err oerr = {0};
    FILE *f = zc_fopen_regular(path, &oerr); /* not blocking on a FIFO */
    if (!f && oerr.code == ZC_EIO)
        return zc_err_set(err, ZC_EIO,
                          "cannot open %s: %m (a Hugging Face model needs its "
                          "config.json beside model.safetensors)",
                          path);
    if (!f)
        return zc_err_set(err, oerr.code, "%s", oerr.msg);
    char *text = malloc((1 << 20) + 1);
    size_t n = text ? fread(text, 1, 1 << 20, f) : 0;
    bool more = text && fgetc(f) != EOF;
    fclose(f);
    if (!text)
        return zc_err_set(err, ZC_ENOMEM, "out of memory reading %s", path);
    text[n] = 0;
    /* as Python's json reads it (transformers does): one value, then white space only; no key
     * twice (cJSON would keep the first value, Python keeps the last) */
    char why[320] = "";
    *out = more ? NULL
                : zc_json_parse_strict(text, n, 0, " \t\n\r", "white space", 1, why, sizeof why);
    free(text);
    if (!cJSON_IsObject(*out)) {
        cJSON_Delete(*out);
        *out = NULL;
        if (why[0])
            return zc_err_set(err, ZC_EINVAL, "%s: %s", path, why);
        return zc_err_set(err, ZC_EINVAL, "%s: not a JSON object%s", path,
                          more ? " of at most 1 MiB" : "");
    }
    return ZC_OK;
}

char *hf_st_header_text(cJSON *h, uint64_t *hlen)
{
    cJSON *meta = cJSON_AddObjectToObject(h, "__metadata__");
    cJSON_AddStringToObject(meta, "format", "pt");
    char *text = cJSON_PrintUnformatted(h);
    cJSON_Delete(h);
    size_t n = text ? strlen(text) : 0, padded = (n + 7) / 8 * 8;
    char *out = text ? realloc(text, padded + 1) : NULL;
    if (!out) {
        free(text);
        return NULL;
    }
    memset(out + n, ' ', padded - n);
    out[padded] = 0;
    *hlen = padded;
    return out;
}

zc_status hf_st_write_header(zc_durable *f, const char *text, uint64_t hlen, zc_err *err)
{
    unsigned char le[8];
    for (int i = 0; i < 8; i++)
        le[i] = (unsigned char)(hlen >> (8 * i));
    zc_status st = zc_durable_write(f, le, 8, err);
    return st ? st : zc_durable_write(f, text, hlen, err);
}

zc_status hf_write_json(const char *path, cJSON *c, zc_err *err)
{
    char *text = c ? cJSON_Print(c) : NULL;
    cJSON_Delete(c);
    if (!text)
        return zc_err_set(err, ZC_ENOMEM, "out of memory writing %s", path);
    zc_status st = zc_durable_write_file(path, text, strlen(text), err);
    free(text);
    return st;
}
