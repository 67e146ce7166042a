/* train_report.c — writes `zeroc train --report FILE` (format in docs/REPORT.md). The file is
 * written durably (zeroc/durable.h), so a reader never sees half a report. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli/train_report.h"
#include "zeroc/checkpoint.h" /* zc_version */
#include "zeroc/durable.h"

static cJSON *num_array(const double *v, int n)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]));
    return a;
}

zc_status train_report_write(const train_report *r, const char *path, zc_err *err)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "model", r->model);
    cJSON_AddStringToObject(root, "zeroc_version", zc_version());
    cJSON_AddNumberToObject(root, "world_size", r->world_size);
    cJSON_AddNumberToObject(root, "stage", r->stage);
    cJSON_AddStringToObject(root, "dtype", r->dtype);
    cJSON_AddStringToObject(root, "grad_accum_dtype", r->grad_dtype);
    cJSON_AddStringToObject(root, "communication_data_type", r->comm_dtype);
    cJSON_AddNumberToObject(root, "params", (double)r->params);
    cJSON_AddNumberToObject(root, "params_padded", (double)r->params_padded);
    cJSON_AddNumberToObject(root, "first_step", r->first_step);
    cJSON_AddNumberToObject(root, "steps", r->steps);
    cJSON_AddItemToObject(root, "loss", num_array(r->loss, r->steps));
    cJSON_AddItemToObject(root, "val_loss", num_array(r->val_loss, r->steps)); /* NaN: null */
    cJSON_AddItemToObject(root, "val_ms", num_array(r->val_ms, r->steps));     /* NaN: null */
    cJSON_AddItemToObject(root, "grad_norm", num_array(r->grad_norm, r->steps));
    cJSON_AddItemToObject(root, "lr", num_array(r->lr, r->steps));
    cJSON_AddItemToObject(root, "step_ms", num_array(r->step_ms, r->steps));
    cJSON_AddItemToObject(root, "loss_scale", num_array(r->loss_scale, r->steps));
    cJSON *g = cJSON_AddObjectToObject(root, "gemm");
    cJSON_AddStringToObject(g, "fp32_path", r->gemm_path_fp32);
    cJSON_AddStringToObject(g, "bf16_path", r->gemm_path_bf16);
    cJSON_AddStringToObject(root, "simd", r->simd);
    cJSON_AddItemToObject(g, "ms", num_array(r->gemm_ms, r->steps));
    if (r->prefetch_hits) {
        cJSON_AddItemToObject(root, "prefetch_hits", num_array(r->prefetch_hits, r->steps));
        cJSON_AddItemToObject(root, "prefetch_misses", num_array(r->prefetch_misses, r->steps));
    }
    cJSON_AddNumberToObject(root, "skipped_steps", (double)r->skipped_steps);
    cJSON_AddStringToObject(root, "initial_weights_sha256", r->initial_sha);
    cJSON_AddStringToObject(root, "weights_sha256", r->final_sha);
    cJSON *mem = cJSON_AddObjectToObject(root, "memory");
    cJSON_AddNumberToObject(mem, "stage0_model_states_per_rank", (double)r->stage0_states);
    cJSON *ranks = cJSON_AddArrayToObject(mem, "ranks");
    for (int i = 0; i < r->world_size; i++) {
        const rank_memory *m = &r->ranks[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "rank", i);
        cJSON_AddNumberToObject(o, "params", (double)m->params);
        cJSON_AddNumberToObject(o, "grads", (double)m->grads);
        cJSON_AddNumberToObject(o, "optimizer", (double)m->optimizer);
        cJSON_AddNumberToObject(o, "comm", (double)m->comm);
        cJSON_AddNumberToObject(o, "working_peak", (double)m->working_peak);
        cJSON_AddNumberToObject(o, "activations_peak", (double)m->activations_peak);
        cJSON_AddNumberToObject(o, "model_states_peak", (double)m->model_states_peak);
        cJSON_AddNumberToObject(o, "peak_rss", (double)m->peak_rss);
        cJSON_AddNumberToObject(o, "offload_peak", (double)m->offload_peak);
        cJSON_AddNumberToObject(o, "nvme", (double)m->nvme);
        cJSON_AddItemToArray(ranks, o);
    }
    cJSON *comm = cJSON_AddObjectToObject(root, "comm");
    cJSON *per = cJSON_AddObjectToObject(comm, "bytes_per_step");
    cJSON_AddNumberToObject(per, "reduce_scatter", r->rs_bytes);
    cJSON_AddNumberToObject(per, "all_gather", r->ag_bytes);
    cJSON_AddNumberToObject(per, "all_reduce", r->ar_bytes);
    cJSON_AddNumberToObject(per, "total", r->rs_bytes + r->ag_bytes + r->ar_bytes);
    cJSON_AddNumberToObject(per, "control", r->control_bytes);
    cJSON *inter = cJSON_AddObjectToObject(comm, "inter_host_bytes_per_step");
    cJSON_AddNumberToObject(inter, "reduce_scatter", r->rs_inter);
    cJSON_AddNumberToObject(inter, "all_gather", r->ag_inter);
    cJSON_AddNumberToObject(inter, "all_reduce", r->ar_inter);
    cJSON_AddNumberToObject(inter, "total", r->rs_inter + r->ag_inter + r->ar_inter);
    if (r->tokens_per_step > 0)
        cJSON_AddNumberToObject(root, "tokens_per_step", r->tokens_per_step);
    if (r->disk) {
        cJSON *d = cJSON_AddObjectToObject(root, "offload");
        cJSON_AddStringToObject(d, "aio_engine", r->aio_engine);
        cJSON_AddNumberToObject(d, "param_elems_on_disk", (double)r->param_elems_on_disk);
        cJSON_AddNumberToObject(d, "param_elems_in_ram", (double)r->param_elems_in_ram);
        const size_t n = (size_t)r->steps;
        double *col = malloc((n ? n : 1) * sizeof *col);
        if (!col || !d) {
            free(col);
            cJSON_Delete(root);
            return zc_err_set(err, ZC_ENOMEM, "out of memory writing the report");
        }
        static const struct {
            const char *key;
            size_t off;
        } fields[] = {{"read_bytes", offsetof(disk_step, read)},
                      {"written_bytes", offsetof(disk_step, written)},
                      {"wait_ms", offsetof(disk_step, wait_ms)},
                      {"update_ms", offsetof(disk_step, update_ms)},
                      {"update_read_bytes", offsetof(disk_step, update_read)},
                      {"update_written_bytes", offsetof(disk_step, update_written)},
                      {"buffers_mapped", offsetof(disk_step, buffers_mapped)},
                      {"param_read_bytes", offsetof(disk_step, param_read)},
                      {"shards_from_update", offsetof(disk_step, shards_from_update)},
                      {"updates_in_backward", offsetof(disk_step, updates_in_backward)},
                      {"shards_read_in_place", offsetof(disk_step, shards_read_in_place)}};
        for (size_t f = 0; f < sizeof fields / sizeof *fields; f++) {
            for (size_t k = 0; k < n; k++)
                memcpy(&col[k], (const char *)&r->disk[k] + fields[f].off, sizeof(double));
            cJSON_AddItemToObject(d, fields[f].key, num_array(col, r->steps));
        }
        free(col);
    }
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text)
        return zc_err_set(err, ZC_ENOMEM, "out of memory writing the report");
    size_t n = strlen(text);
    char *line = realloc(text, n + 2);
    if (!line) {
        free(text);
        return zc_err_set(err, ZC_ENOMEM, "out of memory writing the report");
    }
    line[n] = '\n', line[n + 1] = 0;
    zc_status st = zc_durable_write_file(path, line, n + 1, err);
    free(line);
    return st;
}
