/* safetensors.c — writes the engine's fp32 weights as safetensors (format table in
 * zeroc/safetensors.h). Collective; rank 0 writes. The header is built first from the parameter
 * table (shapes and offsets are known without touching data), then each unit is gathered and
 * its parameters appended, so memory stays at one unit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ckpt/safetensors_header.h"
#include "zeroc/safetensors.h"

char *zc_safetensors_header(const zc_param_info *params, int nparams, size_t *len)
{
    cJSON *root = cJSON_CreateObject();
    size_t off = 0;
    for (int p = 0; p < nparams; p++) {
        const zc_param_info *pi = &params[p];
        cJSON *t = cJSON_AddObjectToObject(root, pi->name);
        cJSON_AddStringToObject(t, "dtype", "F32");
        cJSON *shape = cJSON_AddArrayToObject(t, "shape");
        for (int d = 0; d < pi->ndim; d++)
            cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)pi->shape[d]));
        cJSON *offs = cJSON_AddArrayToObject(t, "data_offsets");
        cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)off));
        off += pi->numel * sizeof(float);
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
    char *header = infos ? zc_safetensors_header(infos, np, &hlen) : NULL;
    free(infos);
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = NULL;
    zc_status st = ZC_OK;
    if (!buf || !header)
        st = zc_err_set(err, ZC_ENOMEM, "out of memory exporting '%s'", path);
    else if (writer && !(f = fopen(tmp, "wb")))
        st = zc_err_set(err, ZC_EIO, "cannot write '%s': %m", tmp);
    if (!st && f) {
        unsigned char le[8];
        for (int i = 0; i < 8; i++)
            le[i] = (unsigned char)((uint64_t)hlen >> (8 * i));
        if (fwrite(le, 1, 8, f) != 8 || fwrite(header, 1, hlen, f) != hlen)
            st = zc_err_set(err, ZC_EIO, "cannot write '%s': %m", tmp);
    }
    /* Every rank runs every gather even after a local write error, so no rank is left waiting. */
    zc_status write_st = st;
    st = ZC_OK;
    for (int u = 0; u < zc_engine_num_units(e) && !st && buf && header; u++) {
        st = zc_engine_gather_unit(e, u, buf, err);
        const zc_unit_info *ui = zc_engine_unit_info(e, u);
        if (!st && f && !write_st &&
            fwrite(buf, sizeof(float), ui->numel, f) != ui->numel)
            write_st = zc_err_set(err, ZC_EIO, "cannot write '%s': %m", tmp);
    }
    if (f) {
        if (fclose(f) != 0 && !write_st)
            write_st = zc_err_set(err, ZC_EIO, "cannot write '%s': %m", tmp);
        if (!st && !write_st && rename(tmp, path) != 0)
            write_st = zc_err_set(err, ZC_EIO, "cannot rename '%s' to '%s': %m", tmp, path);
        if (st || write_st)
            remove(tmp);
    }
    free(buf);
    free(header);
    return st ? st : write_st;
}
