/* estimate.c — `zeroc estimate`: per-rank memory and per-step communication of every ZeRO
 * stage for a model, before running it. Model states and comm come from zeroc/estimate.h over
 * the unit sizes the real model registers (so they equal what a run measures, to the byte);
 * activations from the model's own size table; working memory is a bound. With offload to NVMe
 * the model states split into RAM and disk (the engine's own placement, zc_estimate_offload),
 * and the RAM the disk tier streams through is a bound. */
#include <ctype.h>
#include <math.h>
#include <strings.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/fail.h"
#include "cli/units.h"
#include "models/gpt2/gpt2.h"
#include "models/gpt2/init_files.h"
#include "models/mlp/mlp.h"
#include "zeroc/checked.h"
#include "zeroc/estimate.h"

/* "1.5e9", "1.5B", "350M", "124m", "12K", "2T" → count (decimal suffixes). */
static int parse_count(const char *s, double *out)
{
    char *end;
    double v = strtod(s, &end);
    double mul = 1;
    if (*end) {
        switch (toupper((unsigned char)*end)) {
        case 'K': mul = 1e3; break;
        case 'M': mul = 1e6; break;
        case 'B': case 'G': mul = 1e9; break;
        case 'T': mul = 1e12; break;
        default: return -1;
        }
        end++;
    }
    if (end == s || *end || !(v > 0) || !isfinite(v))
        return -1;
    *out = v * mul;
    return 0;
}

/* "24G", "24GiB", "512M", "1.5T", "1000000" → bytes (binary suffixes). */
static int parse_bytes(const char *s, double *out)
{
    char *end;
    double v = strtod(s, &end), mul = 1;
    if (*end) {
        switch (toupper((unsigned char)*end)) {
        case 'K': mul = 1024.0; break;
        case 'M': mul = 1024.0 * 1024; break;
        case 'G': mul = 1024.0 * 1024 * 1024; break;
        case 'T': mul = 1024.0 * 1024 * 1024 * 1024; break;
        default: return -1;
        }
        end++;
        if (!strcasecmp(end, "iB") || !strcasecmp(end, "B"))
            end += strlen(end);
    }
    if (end == s || *end || !(v > 0) || !isfinite(v))
        return -1;
    *out = v * mul;
    return 0;
}

int cmd_estimate(zc_comm *comm, int argc, char **argv)
{
    const char *params = NULL, *model = NULL, *init = NULL, *mem_per_rank = NULL;
    int ranks = 1, ranks_per_node = 0, micro = 0, hidden = MLP_DEFAULT_HIDDEN, layers = 0, channels = 768,
        heads = 12, vocab = 50257, seq_len = 1024;
    const char *dtype = "fp32", *grad_dtype = NULL, *comm_dtype = NULL, *optim = "adamw";
    const char *off_opt = NULL, *off_par = NULL, *max_in_cpu = NULL, *sub_group = NULL,
               *prefetch = NULL, *persist = NULL;
    bool ckpt = false, json = false, qwz = false, qgz = false;
    int hpz = 1;
    arg_spec specs[] = {
        {"--params", ARG_STR, &params, NULL, "parameter count: 1.5e9, 1.5B, 350M (one unit)", NULL},
        {"--model", ARG_STR, &model, NULL, "mlp or gpt2: use the model's real units", NULL},
        {"--init", ARG_STR, &init, NULL, "gpt2: read the shape from an llm.c checkpoint or a Hugging Face GPT-2", NULL},
        {"--hidden", ARG_INT, &hidden, NULL, "mlp: hidden size (default 2048)", NULL},
        {"--layers", ARG_INT, &layers, NULL, "mlp: layers (default 12); gpt2: blocks (default 12)",
         NULL},
        {"--channels", ARG_INT, &channels, NULL, "gpt2: channels (default 768)", NULL},
        {"--heads", ARG_INT, &heads, NULL, "gpt2: heads (default 12)", NULL},
        {"--vocab", ARG_INT, &vocab, NULL, "gpt2: vocabulary (default 50257)", NULL},
        {"--seq-len", ARG_INT, &seq_len, NULL, "gpt2: sequence length (default 1024)", NULL},
        {"--micro-batch", ARG_INT, &micro, NULL, "per rank (mlp default 32, gpt2 default 4)", NULL},
        {"--activation-checkpointing", ARG_BOOL, &ckpt, NULL, "gpt2: recompute blocks", NULL},
        {"--ranks", ARG_INT, &ranks, NULL, "data-parallel ranks N (default 1)", NULL},
        {"--ranks-per-node", ARG_INT, &ranks_per_node, NULL,
         "ranks sharing a host: per-node totals, and the bytes that leave the host (default N)",
         NULL},
        {"--quantized-weights", ARG_BOOL, &qwz, NULL,
         "stage 3, ZeRO++ qwZ: int8 parameter all-gathers (zero_quantized_weights)", NULL},
        {"--quantized-gradients", ARG_BOOL, &qgz, NULL,
         "stage 3, ZeRO++ qgZ: int8 gradient reduce-scatters (zero_quantized_gradients)", NULL},
        {"--hpz", ARG_INT, &hpz, NULL,
         "stage 3, ZeRO++ hpZ: ranks sharing a secondary parameter copy "
         "(zero_hpz_partition_size, default 1: none)", NULL},
        {"--dtype", ARG_STR, &dtype, NULL, "parameters: fp32 (default), bf16 or fp16 (mixed "
         "precision: 16-bit params and grads, fp32 master + moments)", NULL},
        {"--grad-accum-dtype", ARG_STR, &grad_dtype, NULL,
         "stored gradients: fp32, bf16 or fp16 (default: --dtype)", NULL},
        {"--comm-dtype", ARG_STR, &comm_dtype, NULL,
         "reduce-scatter elements: fp32, bf16 or fp16 (default: --dtype)", NULL},
        {"--optimizer", ARG_STR, &optim, NULL, "adamw (default), adam, sgd, sgd-momentum", NULL},
        {"--offload-optimizer", ARG_STR, &off_opt, NULL,
         "nvme: optimizer state (and stage-3 gradients) on disk, stages 1-3 (none, cpu: in RAM)",
         NULL},
        {"--offload-param", ARG_STR, &off_par, NULL,
         "nvme: stage-3 parameter shards on disk (none, cpu: in RAM)", NULL},
        {"--max-in-cpu", ARG_STR, &max_in_cpu, NULL,
         "offload_param.max_in_cpu: parameter elements kept in RAM (default 1e9)", NULL},
        {"--prefetch-bucket-size", ARG_STR, &prefetch, NULL,
         "stage3_prefetch_bucket_size: elements gathered ahead (default auto: one unit)", NULL},
        {"--persistence-threshold", ARG_STR, &persist, NULL,
         "stage3_param_persistence_threshold: units smaller stay whole (default auto: 0)", NULL},
        {"--sub-group-size", ARG_STR, &sub_group, NULL,
         "elements the optimizer step streams at a time (default 4194304)", NULL},
        {"--mem-per-rank", ARG_STR, &mem_per_rank, NULL,
         "memory a rank may use (24G, 512M): recommend a stage", NULL},
        {"--json", ARG_BOOL, &json, NULL, "print JSON instead of a table", NULL},
    };
    const int nspecs = (int)(sizeof specs / sizeof specs[0]);
    zc_err err = {0};
    bool helped;
    zc_status st = args_parse_command(specs, nspecs, argc, argv, 2, "zeroc estimate (--params N | --model mlp|gpt2 [shape] | --init FILE) "
                       "--ranks N [flags]", zc_comm_rank(comm) == 0,
                                      &helped, &err);
    if (helped)
        return 0;
    if (zc_comm_rank(comm) != 0)
        return st ? 1 : 0;
    double count = 0, limit = 0;
    size_t *units = NULL;
    int nunits = 0;
    int64_t activations = -1;
    int moments = !strcasecmp(optim, "sgd") ? 0 : !strcasecmp(optim, "sgd-momentum") ? 1 : 2;
    if (!st && strcasecmp(optim, "adamw") && strcasecmp(optim, "adam") &&
        strcasecmp(optim, "sgd") && strcasecmp(optim, "sgd-momentum"))
        st = zc_err_set(&err, ZC_EINVAL, "--optimizer: expected adamw, adam, sgd or "
                        "sgd-momentum, got '%s'", optim);
    if (!st && ranks < 1)
        st = zc_err_set(&err, ZC_EINVAL, "--ranks must be >= 1, got %d", ranks);
    if (!st && (ranks_per_node < 0 || micro < 0))
        st = zc_err_set(&err, ZC_EINVAL, "--ranks-per-node and --micro-batch must be >= 1");
    /* the same keys a config file would set, so the names and checks are the trainer's */
    zc_config defaults;
    zc_config_defaults(&defaults);
    if (!st && strcmp(dtype, "fp32") && strcmp(dtype, "bf16") && strcmp(dtype, "fp16"))
        st = zc_err_set(&err, ZC_EINVAL, "--dtype: expected fp32, bf16 or fp16, got '%s'", dtype);
    if (!st && strcmp(dtype, "fp32"))
        st = zc_config_set(&defaults, !strcmp(dtype, "bf16") ? "bf16.enabled" : "fp16.enabled",
                           "true", &err);
    if (!st && grad_dtype)
        st = zc_config_set(&defaults, "data_types.grad_accum_dtype", grad_dtype, &err);
    if (!st && comm_dtype)
        st = zc_config_set(&defaults, "communication_data_type", comm_dtype, &err);
    if (!st && off_opt)
        st = zc_config_set(&defaults, "zero_optimization.offload_optimizer.device", off_opt, &err);
    if (!st && off_par)
        st = zc_config_set(&defaults, "zero_optimization.offload_param.device", off_par, &err);
    if (!st && max_in_cpu)
        st = zc_config_set(&defaults, "zero_optimization.offload_param.max_in_cpu", max_in_cpu,
                           &err);
    if (!st && sub_group)
        st = zc_config_set(&defaults, "zero_optimization.sub_group_size", sub_group, &err);
    if (!st && prefetch)
        st = zc_config_set(&defaults, "zero_optimization.stage3_prefetch_bucket_size", prefetch,
                           &err);
    if (!st && persist)
        st = zc_config_set(&defaults, "zero_optimization.stage3_param_persistence_threshold",
                           persist, &err);
    if (!st && qwz)
        st = zc_config_set(&defaults, "zero_optimization.zero_quantized_weights", "true", &err);
    if (!st && qgz)
        st = zc_config_set(&defaults, "zero_optimization.zero_quantized_gradients", "true", &err);
    char hpz_text[16];
    snprintf(hpz_text, sizeof hpz_text, "%d", hpz);
    if (!st && hpz != 1)
        st = zc_config_set(&defaults, "zero_optimization.zero_hpz_partition_size", hpz_text, &err);
    if (!st && ranks % hpz)
        st = zc_err_set(&err, ZC_EINVAL, "--hpz %d must divide --ranks %d", hpz, ranks);
    if (!st && mem_per_rank && parse_bytes(mem_per_rank, &limit))
        st = zc_err_set(&err, ZC_EINVAL, "--mem-per-rank: expected a size like 24G or 512M, got "
                        "'%s'", mem_per_rank);
    if (!st && !!params + !!model + !!init != 1)
        st = zc_err_set(&err, ZC_EINVAL, "give exactly one of --params N, --model mlp|gpt2, "
                        "--init FILE");
    if (!st && params) {
        if (parse_count(params, &count))
            st = zc_err_set(&err, ZC_EINVAL, "--params: expected a positive count like 1.5e9, "
                            "1.5B or 350M, got '%s'", params);
        else if (count > (double)ZC_MAX_NUMEL)
            st = zc_err_set(&err, ZC_EINVAL,
                            "--params %s: zeroc holds at most %lld parameters "
                            "(2^49)",
                            params, (long long)ZC_MAX_NUMEL);
        else if (!(units = malloc(sizeof *units)))
            st = zc_err_set(&err, ZC_ENOMEM, "out of memory");
        else
            units[nunits++] = (size_t)llround(count);
    }
    /* the models' products run in bf16 when the parameters are stored in bf16 */
    const zc_gemm_type compute = defaults.dtype == ZC_BF16 ? ZC_GEMM_BF16 : ZC_GEMM_F32;
    gpt2_config gc = {0};
    bool is_gpt2 = init || (model && !strcmp(model, "gpt2"));
    if (!st && model && strcmp(model, "mlp") && strcmp(model, "gpt2"))
        st = zc_err_set(&err, ZC_EINVAL, "--model: unknown model '%s' (known: mlp, gpt2)", model);
    if (!st && model && !strcmp(model, "mlp")) {
        int L = layers ? layers : MLP_DEFAULT_LAYERS, B = micro ? micro : 32;
        mlp_config mc = {.hidden = hidden, .layers = L, .batch = B, .compute = compute};
        if (hidden < 1 || L < 1)
            st = zc_err_set(&err, ZC_EINVAL, "mlp: --hidden and --layers must be >= 1");
        else if (!(st = mlp_check(&mc, &err)) && !(units = malloc((size_t)L * sizeof *units)))
            st = zc_err_set(&err, ZC_ENOMEM, "out of memory");
        if (!st) {
            nunits = mlp_unit_numel(&mc, units);
            activations = (int64_t)mlp_activation_bytes(&mc);
        }
    }
    if (!st && is_gpt2) {
        if (init) {
            st = gpt2_init_shape(init, &gc, &err);
        } else {
            gc = (gpt2_config){seq_len, vocab,   gpt2_pad_vocab(vocab), layers ? layers : 12,
                                  heads,   channels};
        }
        int T = seq_len < gc.max_seq_len ? seq_len : gc.max_seq_len, B = micro ? micro : 4;
        if (!st && (gc.num_layers < 1 || gc.channels < 1 || gc.num_heads < 1 ||
                    gc.vocab_size < 1 || T < 1 || gc.channels % gc.num_heads))
            st = zc_err_set(&err, ZC_EINVAL, "gpt2: layers, channels, heads, vocab and sequence "
                            "length must be >= 1, channels divisible by heads");
        if (!st)
            st = gpt2_check(&gc, B, T, ckpt, compute, &err);
        if (!st && !(units = malloc(((size_t)gc.num_layers + 2) * sizeof *units)))
            st = zc_err_set(&err, ZC_ENOMEM, "out of memory");
        if (!st) {
            nunits = gpt2_unit_numel(&gc, units);
            activations = (int64_t)gpt2_activation_bytes(&gc, B, T, ckpt, compute);
        }
    }
    if (st) {
        free(units);
        return cli_fail(comm, &err, true);
    }
    int pbytes = zc_dtype_size(defaults.dtype), gbytes = zc_dtype_size(zc_config_grad_dtype(&defaults));
    int cbytes = zc_dtype_size(zc_config_comm_dtype(&defaults));
    int per_node = ranks_per_node ? ranks_per_node : ranks;
    cJSON *rows = cJSON_CreateArray();
    int best = -1;
    int64_t best_comm = 0;
    size_t psi = 0;
    for (int u = 0; u < nunits; u++)
        psi += units[u];
    const bool nvme_opt = defaults.offload_optimizer == ZC_OFFLOAD_NVME;
    const bool nvme_par = defaults.offload_param == ZC_OFFLOAD_NVME;
    const bool offload = nvme_opt || nvme_par;
    const zc_estimate_in base = {.unit_numel = units,
                                 .nunits = nunits,
                                 .nranks = ranks,
                                 .moment_floats = moments,
                                 .param_bytes = pbytes,
                                 .grad_bytes = gbytes,
                                 .comm_elem_bytes = cbytes,
                                 .reduce_bucket_size = defaults.reduce_bucket_size,
                                 .prefetch_bucket_size = defaults.prefetch_bucket_size,
                                 .max_live_parameters = defaults.max_live_parameters,
                                 .persistence_threshold = defaults.param_persistence_threshold,
                                 .model_persistence_threshold =
                                     defaults.model_persistence_threshold,
                                 .offload_optimizer = nvme_opt,
                                 .offload_params = nvme_par,
                                 .offload_ratio = defaults.optimizer_ratio,
                                 .max_in_cpu = defaults.max_in_cpu,
                                 .sub_group_size = defaults.sub_group_size,
                                 .buffer_count = defaults.optimizer_buffer_count,
                                 .param_buffer_count = defaults.param_buffer_count,
                                 .param_buffer_size = defaults.param_buffer_size,
                                 .quantized_weights = defaults.quantized_weights,
                                 .quantized_gradients = defaults.quantized_gradients,
                                 .hpz_partition_size = defaults.hpz_partition_size,
                                 .ranks_per_host = per_node};
    const bool hosts = per_node < ranks; /* the bytes that leave a host are worth a column */
    if ((st = zc_estimate_check(&base, &err))) {
        cJSON_Delete(rows);
        free(units);
        return cli_fail(comm, &err, true);
    }
    if (!json)
        printf("%zu parameters in %d units, %d ranks (%d per node), %s%s, %s%s%s\n"
               "%5s %10s %10s %10s %10s %12s %8s %12s%s %12s %12s %12s%s%s\n",
               psi, nunits, ranks, per_node, dtype,
               pbytes == 4 ? "" : gbytes == 2 ? " (P = G = 2, K = 12 with Adam)"
                                              : " (P = 2, fp32 gradients)",
               moments == 2 ? "Adam" : "SGD",
               params ? "; activations and per-unit buffers need a model shape (--model)" : "",
               !offload ? "" : nvme_opt && nvme_par ? "; optimizer (stages 1-3) and parameters "
                                                      "(stage 3) offloaded to NVMe"
                             : nvme_opt ? "; optimizer offloaded to NVMe (stages 1-3)"
                                        : "; parameters offloaded to NVMe (stage 3)",
               "stage", "params", "grads", "optimizer", "states", "activations", "comm",
               "working<=", offload ? "   offload<=" : "", "total/rank", "total/node",
               "comm/step", hosts ? " inter-node/step" : "", offload ? "    disk/rank" : "");
    for (int stage = 0; stage <= 3; stage++) {
        zc_estimate_in in = base;
        in.stage = stage;
        zc_state_bytes b = zc_estimate_states(&in); /* in RAM */
        int64_t states = b.params + b.grads + b.optimizer;
        int64_t disk = zc_estimate_nvme_bytes(&in), buffers = zc_estimate_offload_bound(&in);
        /* Per-unit buffers need the model's units: unknown for a bare --params. */
        int64_t staging = params ? -1 : zc_estimate_comm_staging(&in);
        int64_t working = params ? -1 : zc_estimate_working_bound(&in);
        bool ovf = false; /* each part fits (zc_estimate_check, the models' checks) */
        int64_t total = zc_add_i64(states, staging > 0 ? staging : 0, &ovf);
        total = zc_add_i64(total, working > 0 ? working : 0, &ovf);
        total = zc_add_i64(total, activations > 0 ? activations : 0, &ovf);
        total = zc_add_i64(total, buffers, &ovf);
        if (ovf) {
            st = zc_err_set(&err, ZC_EINVAL,
                            "stage %d: model states %lld, activations %lld and "
                            "buffers per rank sum past 2^63 bytes: lower --micro-batch or the "
                            "model's size",
                            stage, (long long)states, (long long)activations);
            break;
        }
        const char *where = disk == 0 ? "none" : in.offload_optimizer && stage >= 1 &&
                                                         in.offload_params && stage == 3
                                                     ? "optimizer+params"
                                                 : in.offload_params && stage == 3 ? "params"
                                                                                   : "optimizer";
        int64_t sent = zc_estimate_comm_bytes(&in), inter = zc_estimate_inter_host_bytes(&in);
        if (limit > 0 && total <= limit && (best < 0 || sent < best_comm)) {
            best = stage;
            best_comm = sent;
        }
        cJSON *r = cJSON_CreateObject();
        cJSON_AddNumberToObject(r, "stage", stage);
        cJSON_AddStringToObject(r, "offload", where);
        cJSON_AddNumberToObject(r, "nvme", (double)disk);
        cJSON_AddNumberToObject(r, "offload_buffers_bound", (double)buffers);
        cJSON_AddNumberToObject(r, "params", (double)b.params);
        cJSON_AddNumberToObject(r, "grads", (double)b.grads);
        cJSON_AddNumberToObject(r, "optimizer", (double)b.optimizer);
        cJSON_AddNumberToObject(r, "model_states", (double)states);
        if (activations >= 0)
            cJSON_AddNumberToObject(r, "activations", (double)activations);
        if (staging >= 0) {
            cJSON_AddNumberToObject(r, "comm_staging", (double)staging);
            cJSON_AddNumberToObject(r, "working_bound", (double)working);
        }
        cJSON_AddNumberToObject(r, "total_per_rank", (double)total);
        cJSON_AddNumberToObject(r, "total_per_node", (double)total * per_node);
        cJSON_AddNumberToObject(r, "comm_bytes_per_step", (double)sent);
        cJSON_AddNumberToObject(r, "inter_node_comm_bytes_per_step", (double)inter);
        cJSON_AddItemToArray(rows, r);
        if (!json) {
            char act[32] = "-", stg[32] = "-", wrk[32] = "-";
            if (activations >= 0)
                snprintf(act, sizeof act, "%.1fMi", mib(activations));
            if (staging >= 0) {
                snprintf(stg, sizeof stg, "%.1fMi", mib(staging));
                snprintf(wrk, sizeof wrk, "%.1fMi", mib(working));
            }
            char buf[32] = "", dsk[32] = "", far[32] = "";
            if (hosts)
                snprintf(far, sizeof far, " %13.1fMi", mib(inter));
            if (offload) {
                snprintf(buf, sizeof buf, " %10.1fMi", mib(buffers));
                snprintf(dsk, sizeof dsk, " %10.1fMi", mib(disk));
            }
            printf("%5d %8.1fMi %8.1fMi %8.1fMi %8.1fMi %12s %8s %12s%s %10.1fMi %10.1fMi "
                   "%10.1fMi%s%s\n",
                   stage, mib(b.params), mib(b.grads), mib(b.optimizer), mib(states), act, stg,
                   wrk, buf, mib(total), mib(total) * per_node, mib(sent), far, dsk);
        }
    }
    /* ZeRO++ at stage 3 on these hosts: what each option leaves on the network */
    cJSON *zpp = cJSON_CreateArray();
    if (!st && hosts && !json)
        printf("stage 3 with ZeRO++ (hosts of %d ranks)   comm/step  inter-node/step  "
               "inter vs none  params/rank\n", per_node);
    const struct {
        const char *name;
        bool qwz, qgz, hpz;
    } opts[] = {{"none", false, false, false},
                {"qwZ", true, false, false},
                {"hpZ", false, false, true},
                {"qgZ", false, true, false},
                {"qwZ+hpZ+qgZ", true, true, true}};
    int64_t inter_none = 0;
    for (size_t k = 0; !st && hosts && k < sizeof opts / sizeof *opts; k++) {
        zc_estimate_in in = base;
        in.stage = 3;
        in.quantized_weights = opts[k].qwz;
        in.quantized_gradients = opts[k].qgz;
        in.hpz_partition_size = opts[k].hpz ? per_node : 1;
        int64_t sent = zc_estimate_comm_bytes(&in), inter = zc_estimate_inter_host_bytes(&in);
        int64_t par = zc_estimate_states(&in).params;
        inter_none = k == 0 ? inter : inter_none;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "options", opts[k].name);
        cJSON_AddNumberToObject(o, "comm_bytes_per_step", (double)sent);
        cJSON_AddNumberToObject(o, "inter_node_comm_bytes_per_step", (double)inter);
        cJSON_AddNumberToObject(o, "params", (double)par);
        cJSON_AddItemToArray(zpp, o);
        if (!json)
            printf("  %-34s %8.1fMi %14.1fMi %13.2fx %10.1fMi\n", opts[k].name, mib(sent),
                   mib(inter), inter ? (double)inter_none / (double)inter : 0.0, mib(par));
    }
    if (st) {
        cJSON_Delete(zpp);
        cJSON_Delete(rows);
        free(units);
        return cli_fail(comm, &err, true);
    }
    if (json) {
        cJSON *root = cJSON_CreateObject();
        cJSON_AddNumberToObject(root, "params", (double)psi);
        cJSON_AddNumberToObject(root, "units", nunits);
        cJSON_AddNumberToObject(root, "ranks", ranks);
        cJSON_AddNumberToObject(root, "ranks_per_node", per_node);
        cJSON_AddStringToObject(root, "dtype", dtype);
        cJSON_AddStringToObject(root, "grad_accum_dtype", zc_dtype_name(zc_config_grad_dtype(&defaults)));
        cJSON_AddStringToObject(root, "communication_data_type",
                                zc_dtype_name(zc_config_comm_dtype(&defaults)));
        cJSON_AddItemToObject(root, "rows", rows);
        if (hosts)
            cJSON_AddItemToObject(root, "zero_pp_stage3", zpp);
        else
            cJSON_Delete(zpp);
        if (limit > 0) {
            if (best >= 0)
                cJSON_AddNumberToObject(root, "recommended_stage", best);
            else
                cJSON_AddNullToObject(root, "recommended_stage");
        }
        char *text = cJSON_Print(root);
        puts(text);
        free(text);
        cJSON_Delete(root);
    } else {
        cJSON_Delete(zpp);
        cJSON_Delete(rows);
        printf("(MiB = 2^20 bytes; model states, disk and comm are exact for zeroc's unit "
               "layout; working and offload buffers are upper bounds; totals are RAM)\n");
        if (limit > 0 && best >= 0)
            printf("recommended: stage %d — the least communication (%.1f MiB/step) that fits "
                   "%s per rank\n", best, mib(best_comm), mem_per_rank);
        else if (limit > 0)
            printf("no stage fits %s per rank: add ranks, lower --micro-batch or use "
                   "--activation-checkpointing\n", mem_per_rank);
    }
    free(units);
    return 0;
}
