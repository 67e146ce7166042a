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
#include "cli/offload_cache.h"
#include "cli/relaunch.h"
#include "cli/units.h"
#include "models/gpt2/peft_files.h"
#include "models/gpt2/gpt2.h"
#include "models/gpt2/init_files.h"
#include "models/mlp/mlp.h"
#include "zeroc/checked.h"
#include "zeroc/estimate.h"

/* "1.5e9", "1.5B", "350M", "124m", "12K", "2T", "124439808" → count (decimal suffixes), read as
 * the decimal it is written as (no rounding through a double): 0 when it is, with the suffix,
 * a whole number from 1 to max; -1 when it is not a decimal number with an optional suffix
 * (hexadecimal, white space and signs too); -2 when it is not a whole number ("0.4", "1.5");
 * -3 when it is 0; -4 when it is above max. */
static int parse_count(const char *s, int64_t max, int64_t *out)
{
    char digits[64]; /* the significant digits, integer and fraction parts together */
    int nd = 0, exp10 = 0;
    bool any = false, dot = false;
    const char *p = s;
    for (;; p++) {
        if (*p >= '0' && *p <= '9') {
            any = true;
            if (nd == 0 && *p == '0') { /* a leading zero adds no digit */
                exp10 -= dot;
                continue;
            }
            if (nd == (int)sizeof digits) /* past any count zeroc holds */
                return -4;
            digits[nd++] = *p;
            exp10 -= dot;
        } else if (*p == '.' && !dot) {
            dot = true;
        } else {
            break;
        }
    }
    if (!any)
        return -1;
    if (*p == 'e' || *p == 'E') {
        char *end;
        long e = strtol(p + 1, &end, 10);
        if (end == p + 1 || !(p[1] == '-' || p[1] == '+' || (p[1] >= '0' && p[1] <= '9')) ||
            e < -1000 || e > 1000)
            return -1;
        exp10 += (int)e;
        p = end;
    }
    static const struct {
        char suffix;
        int exp10;
    } suffixes[] = {{'K', 3}, {'M', 6}, {'B', 9}, {'G', 9}, {'T', 12}};
    if (*p) {
        size_t k = 0;
        while (k < sizeof suffixes / sizeof *suffixes &&
               suffixes[k].suffix != toupper((unsigned char)*p))
            k++;
        if (k == sizeof suffixes / sizeof *suffixes || p[1])
            return -1;
        exp10 += suffixes[k].exp10;
    }
    /* digits × 10^exp10: a whole number when the digits below 10^0 are zeros */
    while (nd > 0 && exp10 < 0 && digits[nd - 1] == '0')
        nd--, exp10++;
    if (nd == 0)
        return -3; /* zero */
    if (exp10 < 0)
        return -2;
    if (nd + exp10 > 18) /* >= 10^18 */
        return -4;
    int64_t v = 0;
    for (int i = 0; i < nd; i++)
        v = v * 10 + (digits[i] - '0');
    for (int i = 0; i < exp10; i++)
        v *= 10;
    if (v > max)
        return -4;
    *out = v;
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

/* The model shape flags (their defaults do not say whether they were given). */
enum {
    SHAPE_HIDDEN,
    SHAPE_LAYERS,
    SHAPE_CHANNELS,
    SHAPE_HEADS,
    SHAPE_VOCAB,
    SHAPE_SEQ_LEN,
    SHAPE_CKPT,
    NSHAPE
};
static const char *const shape_flags[NSHAPE] = {"--hidden",
                                                "--layers",
                                                "--channels",
                                                "--heads",
                                                "--vocab",
                                                "--seq-len",
                                                "--activation-checkpointing"};

/* The command's flags, as given. */
typedef struct {
    const char *params, *model, *init, *mem_per_rank, *config;
    int ranks, ranks_per_node, micro, grad_accum, hidden, layers, channels, heads, vocab, seq_len,
        hpz;
    const char *dtype, *grad_dtype, *comm_dtype, *optim; /* NULL: the config's (or default) */
    const char *off_opt, *off_par, *max_in_cpu, *sub_group, *prefetch, *persist, *bucket, *ratio;
    int stage;             /* train's --stage, its row marked (-1: not given) */
    const char *nvme_path; /* train's --nvme-path: accepted, nothing is written there */
    bool ckpt, json, qwz, qgz;
    int64_t tile_params;      /* train's --tile-params */
    const char *lora_r;       /* train's --lora-r (lora.r): the base frozen, adapters of rank r */
    const char *lora_targets; /* train's --lora-targets (lora.target_modules) */
    const char *lora_alpha, *lora_dropout; /* train's: checked, no byte depends on them */
    int64_t lora_rank;                     /* the config's lora.r with the flags over it */
    const char *lora_modules; /* the config's lora.target_modules (NULL: PEFT's default) */
    const char *lora_init;    /* train's --lora-init: r and the targets from the adapter */
    bool ranks_per_node_given, micro_given, grad_accum_given, hpz_given; /* set by the flag */
    bool given[NSHAPE]; /* which shape flags were given */
} estimate_flags;

/* The model estimated: its units' sizes and one micro-batch's activations. */
typedef struct {
    size_t *units;
    size_t *vec;  /* the units' 1-D parameter elements (NULL: a bare --params) */
    uint8_t *use; /* how the model uses their matrices, ZC_USE_* (NULL: a bare --params) */
    bool *frozen; /* the units LoRA freezes (NULL: none) */
    int nunits;
    size_t psi;          /* parameters in all */
    int64_t activations; /* -1: unknown (a bare --params) */
} estimate_model;

/* One stage's row: bytes per rank (RAM, and disk with offload) and per step on the network. */
typedef struct {
    zc_state_bytes in_ram;
    int64_t states, staging, working, buffers, disk, total, sent, inter;
    const char *offload;
    int64_t max_in_cpu; /* the offload knobs the row was estimated at ("auto": as sized) */
    double ratio;
} stage_row;

/* One ZeRO++ option set at stage 3 on the given hosts. */
typedef struct {
    const char *name;
    bool qwz, qgz, hpz;
} zero_pp_option;

static const zero_pp_option zero_pp_options[] = {{"none", false, false, false},
                                                 {"qwZ", true, false, false},
                                                 {"hpZ", false, false, true},
                                                 {"qgZ", false, true, false},
                                                 {"qwZ+hpZ+qgZ", true, true, true}};
enum { NZERO_PP = sizeof zero_pp_options / sizeof *zero_pp_options };

typedef struct {
    int64_t sent, inter, params;
} zero_pp_row;

/* Everything the command prints, table or JSON. */
typedef struct {
    stage_row stage[4];
    zero_pp_row zero_pp[NZERO_PP];
    int best; /* the recommended stage under --mem-per-rank, or -1 */
    int64_t best_comm;
} estimate_result;

/* zc_config_set for a flag: a refused value is named by the flag, then the key's message
 * (which gives the value), as train's config flags are (args_apply_config). */
static zc_status set_flag(zc_config *cfg, const char *flag, const char *key, const char *value,
                          zc_err *err)
{
    zc_status st = zc_config_set(cfg, key, value, err);
    if (st) {
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err->msg);
        zc_err_set(err, st, "%s: %s", flag, msg);
    }
    return st;
}

/* The ranks' flags: their ranges, and hosts of equal rank counts. */
static zc_status check_ranks(const estimate_flags *f, zc_err *err)
{
    if (f->ranks < 1)
        return zc_err_set(err, ZC_EINVAL, "--ranks must be >= 1, got %d", f->ranks);
    if (f->ranks_per_node_given && !(f->ranks_per_node >= 1 && f->ranks_per_node <= f->ranks))
        return zc_err_set(err, ZC_EINVAL,
                          "--ranks-per-node must be between 1 and --ranks (%d), got %d", f->ranks,
                          f->ranks_per_node);
    /* ranks fill hosts of R in order: with a smaller last host the ranks would send different
     * bytes off their hosts (the last host's all of them), and qgZ would take one hop */
    if (f->ranks_per_node_given && f->ranks % f->ranks_per_node) {
        int fits = f->ranks_per_node; /* the most ranks per host below it that divide --ranks */
        while (f->ranks % fits)
            fits--;
        return zc_err_set(err, ZC_EINVAL,
                          "--ranks-per-node %d does not divide --ranks %d: the estimate needs "
                          "hosts that hold equal numbers of ranks (e.g. --ranks-per-node %d)",
                          f->ranks_per_node, f->ranks, fits);
    }
    if (f->hpz_given && f->hpz >= 1 && f->ranks % f->hpz)
        return zc_err_set(err, ZC_EINVAL, "--hpz %d must divide --ranks %d", f->hpz, f->ranks);
    if (f->micro_given && f->micro < 1)
        return zc_err_set(err, ZC_EINVAL, "--micro-batch must be >= 1, got %d", f->micro);
    if (f->grad_accum_given && f->grad_accum < 1)
        return zc_err_set(err, ZC_EINVAL, "--grad-accum must be >= 1, got %d", f->grad_accum);
    return ZC_OK;
}

/* The batch triple as train resolves it on --ranks ranks (the model's micro-batch unless the
 * file or a flag gives one), with the cross-key checks train makes. Every stage is estimated,
 * so they are made as at stage 3, which allows every setting; the swap files' directory does
 * not change a size. */
static zc_status resolve_batch(const estimate_flags *f, zc_config *cfg, zc_err *err)
{
    if (!cfg->micro_batch_set && cfg->train_batch_size == 0 && !f->params)
        cfg->micro_batch = f->model && !strcmp(f->model, "mlp") ? 32 : 4; /* gpt2, --init */
    zc_config v = *cfg;
    v.stage = 3;
    if (!v.optimizer_nvme_path[0])
        snprintf(v.optimizer_nvme_path, sizeof v.optimizer_nvme_path, ".");
    if (!v.param_nvme_path[0])
        snprintf(v.param_nvme_path, sizeof v.param_nvme_path, ".");
    zc_status st = zc_config_resolve_batch(&v, f->ranks, err);
    if (!st) {
        cfg->micro_batch = v.micro_batch;
        cfg->grad_accum = v.grad_accum;
        cfg->train_batch_size = v.train_batch_size;
    }
    return st;
}

/* The configuration: --config's file, then the flags over it with the trainer's key names and
 * checks; `limit` gets --mem-per-rank in bytes (0: none). */
static zc_status flags_to_config(const estimate_flags *f, zc_config *cfg, double *limit,
                                 zc_err *err)
{
    zc_config_defaults(cfg);
    zc_status st = ZC_OK;
    if ((st = check_ranks(f, err)))
        return st;
    if (f->dtype && strcmp(f->dtype, "fp32") && strcmp(f->dtype, "bf16") &&
        strcmp(f->dtype, "fp16"))
        return zc_err_set(err, ZC_EINVAL, "--dtype: expected fp32, bf16 or fp16, got '%s'",
                          f->dtype);
    if (f->config && (st = zc_config_load_file(cfg, f->config, err)))
        return st;
    char micro[16], accum[16], hpz[16];
    snprintf(micro, sizeof micro, "%d", f->micro);
    snprintf(accum, sizeof accum, "%d", f->grad_accum);
    snprintf(hpz, sizeof hpz, "%d", f->hpz);
    const struct {
        const char *flag, *key, *value;
    } keys[] = {
        /* over the file's bf16/fp16 blocks, as train's --dtype */
        {"--dtype", "fp16.enabled",
         !f->dtype                   ? NULL
         : !strcmp(f->dtype, "fp16") ? "true"
                                     : "false"},
        {"--dtype", "bf16.enabled",
         !f->dtype                   ? NULL
         : !strcmp(f->dtype, "bf16") ? "true"
                                     : "false"},
        /* as train's: the type alone, over the file's (its SGD momentum stays) */
        {"--optimizer", "optimizer.type", f->optim},
        {"--micro-batch", "train_micro_batch_size_per_gpu", f->micro_given ? micro : NULL},
        {"--grad-accum", "gradient_accumulation_steps", f->grad_accum_given ? accum : NULL},
        {"--grad-accum-dtype", "data_types.grad_accum_dtype", f->grad_dtype},
        {"--comm-dtype", "communication_data_type", f->comm_dtype},
        {"--reduce-bucket-size", "zero_optimization.reduce_bucket_size", f->bucket},
        {"--offload-optimizer", "zero_optimization.offload_optimizer.device", f->off_opt},
        {"--offload-ratio", "zero_optimization.offload_optimizer.ratio", f->ratio},
        {"--offload-param", "zero_optimization.offload_param.device", f->off_par},
        {"--max-in-cpu", "zero_optimization.offload_param.max_in_cpu", f->max_in_cpu},
        {"--sub-group-size", "zero_optimization.sub_group_size", f->sub_group},
        {"--prefetch-bucket-size", "zero_optimization.stage3_prefetch_bucket_size", f->prefetch},
        {"--persistence-threshold", "zero_optimization.stage3_param_persistence_threshold",
         f->persist},
        {"--quantized-weights", "zero_optimization.zero_quantized_weights", f->qwz ? "true" : NULL},
        {"--quantized-gradients", "zero_optimization.zero_quantized_gradients",
         f->qgz ? "true" : NULL},
        {"--hpz", "zero_optimization.zero_hpz_partition_size", f->hpz_given ? hpz : NULL},
        {"--lora-r", "lora.r", f->lora_r},
        {"--lora-targets", "lora.target_modules", f->lora_targets},
        {"--lora-alpha", "lora.lora_alpha", f->lora_alpha},
        {"--lora-dropout", "lora.lora_dropout", f->lora_dropout},
    };
    for (size_t k = 0; !st && k < sizeof keys / sizeof *keys; k++)
        if (keys[k].value)
            st = set_flag(cfg, keys[k].flag, keys[k].key, keys[k].value, err);
    if (!st)
        st = resolve_batch(f, cfg, err);
    /* as train refuses them: flags of an offload that nothing asks for would change nothing */
    if (!st && f->max_in_cpu && cfg->offload_param != ZC_OFFLOAD_NVME)
        st = zc_err_set(err, ZC_EINVAL,
                        "--max-in-cpu %s: it places parameters between RAM and disk, and "
                        "--offload-param is not nvme",
                        f->max_in_cpu);
    if (!st && f->sub_group && cfg->offload_param != ZC_OFFLOAD_NVME &&
        cfg->offload_optimizer != ZC_OFFLOAD_NVME)
        st = zc_err_set(err, ZC_EINVAL,
                        "--sub-group-size %s: it sizes the NVMe offload's RAM slots, and neither "
                        "--offload-optimizer nor --offload-param is nvme",
                        f->sub_group);
    if (!st && f->ratio && cfg->offload_optimizer != ZC_OFFLOAD_NVME)
        st = zc_err_set(err, ZC_EINVAL,
                        "--offload-ratio %s: it splits the optimizer state between RAM and disk, "
                        "and --offload-optimizer is not nvme",
                        f->ratio);
    if (!st && f->mem_per_rank && parse_bytes(f->mem_per_rank, limit))
        st = zc_err_set(err, ZC_EINVAL,
                        "--mem-per-rank: expected a size like 24G or 512M, got "
                        "'%s'",
                        f->mem_per_rank);
    return st;
}

/* --params N: one unit of N parameters, activations unknown. */
static zc_status bare_model(const estimate_flags *f, estimate_model *m, zc_err *err)
{
    int64_t count = 0;
    switch (parse_count(f->params, ZC_MAX_NUMEL, &count)) {
    case 0: break;
    case -2:
        return zc_err_set(err, ZC_EINVAL,
                          "--params %s: not a whole number of parameters; give a count like "
                          "1.5e9, 1.5B, 350M or 124439808",
                          f->params);
    case -3:
        return zc_err_set(err, ZC_EINVAL, "--params %s: expected a count of at least 1", f->params);
    case -4:
        return zc_err_set(err, ZC_EINVAL, "--params %s: zeroc holds at most %lld parameters (2^49)",
                          f->params, (long long)ZC_MAX_NUMEL);
    default:
        return zc_err_set(err, ZC_EINVAL,
                          "--params %s: expected a decimal count like 1.5e9, 1.5B, 350M or "
                          "124439808 (suffixes K, M, B or G, T)",
                          f->params);
    }
    if (!(m->units = malloc(sizeof *m->units)))
        return zc_err_set(err, ZC_ENOMEM, "out of memory");
    m->units[m->nunits++] = (size_t)count;
    return ZC_OK;
}

/* Shape flags that would be ignored are refused, as train and analyze refuse them: the estimate
 * would be of another model than the command line says. */
static zc_status refuse_unused_shape(const estimate_flags *f, zc_err *err)
{
    for (int k = 0; k < NSHAPE; k++) {
        if (!f->given[k])
            continue;
        if (f->params)
            return zc_err_set(err, ZC_EINVAL,
                              "%s is a model shape flag; --params N counts the parameters "
                              "alone (give --model mlp|gpt2 and its shape instead)",
                              shape_flags[k]);
        if (f->model && !strcmp(f->model, "mlp") && k != SHAPE_HIDDEN && k != SHAPE_LAYERS)
            return zc_err_set(err, ZC_EINVAL, "%s is a gpt2 flag; --model mlp does not use it",
                              shape_flags[k]);
        if (k == SHAPE_HIDDEN && f->init)
            return zc_err_set(err, ZC_EINVAL,
                              "--hidden is an mlp flag; --init %s is a GPT-2 (its shape comes "
                              "from the file)",
                              f->init);
        if (k == SHAPE_HIDDEN && f->model && !strcmp(f->model, "gpt2"))
            return zc_err_set(err, ZC_EINVAL,
                              "--hidden is an mlp flag; --model gpt2 takes --channels");
    }
    return ZC_OK;
}

static zc_status mlp_units(const estimate_flags *f, int B, zc_gemm_type compute, estimate_model *m,
                           zc_err *err)
{
    int L = f->given[SHAPE_LAYERS] ? f->layers : MLP_DEFAULT_LAYERS;
    mlp_config mc = {.hidden = f->hidden, .layers = L, .batch = B, .compute = compute};
    if (f->hidden < 1)
        return zc_err_set(err, ZC_EINVAL, "--hidden must be >= 1, got %d", f->hidden);
    if (L < 1)
        return zc_err_set(err, ZC_EINVAL, "--layers must be >= 1, got %d", L);
    zc_status st = mlp_check(&mc, err);
    if (st)
        return st;
    m->units = malloc((size_t)L * sizeof *m->units);
    m->vec = malloc((size_t)L * sizeof *m->vec);
    m->use = malloc((size_t)L);
    if (!m->units || !m->vec || !m->use)
        return zc_err_set(err, ZC_ENOMEM, "out of memory");
    m->nunits = mlp_unit_numel(&mc, m->units);
    for (int u = 0; u < m->nunits; u++) /* its products read and write fp32 */
        m->vec[u] = (size_t)mc.hidden, m->use[u] = ZC_USE_ANY;
    m->activations = (int64_t)mlp_activation_bytes(&mc);
    return ZC_OK;
}

/* The shape of --init's file: shape flags beside it must say what the file says (they cannot
 * change it), and --seq-len fit its positions, as train refuses them. */
static zc_status init_shape(const estimate_flags *f, gpt2_config *gc, zc_err *err)
{
    zc_status st = cli_err_flag(gpt2_init_shape(f->init, gc, err), "--init", err);
    if (st)
        return st;
    const struct {
        int flag, want, file;
    } shape[] = {{SHAPE_LAYERS, f->layers, gc->num_layers},
                 {SHAPE_CHANNELS, f->channels, gc->channels},
                 {SHAPE_HEADS, f->heads, gc->num_heads},
                 {SHAPE_VOCAB, f->vocab, gc->vocab_size}};
    for (size_t i = 0; i < sizeof shape / sizeof *shape; i++)
        if (f->given[shape[i].flag] && shape[i].want != shape[i].file)
            return zc_err_set(err, ZC_EINVAL,
                              "%s %d: --init %s has %d (the shape comes from the file)",
                              shape_flags[shape[i].flag], shape[i].want, f->init, shape[i].file);
    if (f->given[SHAPE_SEQ_LEN] && f->seq_len > gc->max_seq_len)
        return zc_err_set(err, ZC_EINVAL,
                          "--seq-len %d is longer than the %d positions of --init %s (the shape "
                          "comes from the file)",
                          f->seq_len, gc->max_seq_len, f->init);
    return ZC_OK;
}

/* GPT-2 from the shape flags, or from --init's file. */
static zc_status gpt2_units(const estimate_flags *f, int B, zc_gemm_type compute, estimate_model *m,
                            zc_err *err)
{
    gpt2_config gc = {.max_seq_len = f->seq_len,
                      .vocab_size = f->vocab,
                      .padded_vocab_size = gpt2_pad_vocab(f->vocab),
                      .num_layers = f->given[SHAPE_LAYERS] ? f->layers : 12,
                      .num_heads = f->heads,
                      .channels = f->channels};
    zc_status st = f->init ? init_shape(f, &gc, err) : ZC_OK;
    if (st)
        return st;
    gc.tile_params = f->tile_params;
    if (f->lora_init && (f->lora_rank || f->lora_modules))
        return zc_err_set(err, ZC_EINVAL,
                          "--lora-init %s: r and target_modules come from its adapter_config.json; "
                          "drop --lora-r and --lora-targets",
                          f->lora_init);
    if (f->lora_init &&
        (st = cli_err_flag(peft_read_config(f->lora_init, !gc.family[0], &gc.lora, err),
                           "--lora-init", err)))
        return st;
    if (f->lora_rank) { /* train's LoRA: its adapters' units, the base frozen */
        gc.lora = (gpt2_lora){.r = (int)f->lora_rank, .alpha = 8.0};
        if (!f->lora_modules)
            gc.lora.targets = lora_default_targets(!gc.family[0]);
        else if ((st = lora_parse_targets(f->lora_modules, !gc.family[0], &gc.lora.targets, err)))
            return st;
    }
    /* the default --seq-len takes the file's positions when it has fewer */
    int T = f->seq_len < gc.max_seq_len ? f->seq_len : gc.max_seq_len;
    const struct {
        const char *flag;
        int value;
    } counts[] = {{"--layers", gc.num_layers},
                  {"--channels", gc.channels},
                  {"--heads", gc.num_heads},
                  {"--vocab", gc.vocab_size},
                  {"--seq-len", T}};
    for (size_t i = 0; i < sizeof counts / sizeof *counts; i++) /* a file's are > 0 (its reader) */
        if (counts[i].value < 1)
            return zc_err_set(err, ZC_EINVAL, "%s must be >= 1, got %d", counts[i].flag,
                              counts[i].value);
    if (!f->init && gc.channels % gc.num_heads)
        return zc_err_set(err, ZC_EINVAL, "--channels %d must be divisible by --heads %d",
                          gc.channels, gc.num_heads);
    if ((st = gpt2_check(&gc, B, T, f->ckpt, compute, err)))
        return st;
    const size_t nu = (size_t)gpt2_num_units(&gc);
    m->units = malloc(nu * sizeof *m->units);
    m->vec = malloc(nu * sizeof *m->vec);
    m->use = malloc(nu);
    if (!m->units || !m->vec || !m->use)
        return zc_err_set(err, ZC_ENOMEM, "out of memory");
    m->nunits = gpt2_unit_numel(&gc, m->units);
    gpt2_unit_work(&gc, compute, m->vec, m->use);
    if (gc.lora.r > 0) {
        if (!(m->frozen = malloc(nu * sizeof *m->frozen)))
            return zc_err_set(err, ZC_ENOMEM, "out of memory");
        gpt2_unit_frozen(&gc, m->frozen);
    }
    m->activations = (int64_t)gpt2_activation_bytes(&gc, B, T, f->ckpt, compute);
    return ZC_OK;
}

/* The units of the model named by --params, --model or --init. */
static zc_status model_units(const estimate_flags *f, const zc_config *cfg, estimate_model *m,
                             zc_err *err)
{
    /* --init FILE is a GPT-2 (train's `--model gpt2 --init FILE`, the model named or not) */
    const bool gpt2_init = f->init && f->model && !strcmp(f->model, "gpt2");
    if (!!f->params + !!f->model + !!f->init != 1 + gpt2_init)
        return zc_err_set(err, ZC_EINVAL,
                          "give exactly one of --params N, --model mlp|gpt2, "
                          "--init FILE (a GPT-2: with or without --model gpt2)");
    if (f->model && strcmp(f->model, "mlp") && strcmp(f->model, "gpt2"))
        return zc_err_set(err, ZC_EINVAL, "--model: unknown model '%s' (known: mlp, gpt2)",
                          f->model);
    zc_status st = refuse_unused_shape(f, err);
    if (st)
        return st;
    if ((cfg->lora_r || cfg->lora_target_modules[0] || f->lora_init) &&
        (f->params || (f->model && strcmp(f->model, "gpt2"))))
        return zc_err_set(err, ZC_EINVAL,
                          "LoRA (lora.r, --lora-r) adapts the decoder's linear layers (gpt2 and "
                          "the Llama family); %s has none",
                          f->params ? "--params" : "--model mlp");
    /* --config's activation_checkpointing section turns the flag on, as in train */
    if (cfg->activation_checkpointing && !f->init && (f->params || strcmp(f->model, "gpt2")))
        return zc_err_set(err, ZC_EINVAL,
                          "%s: activation_checkpointing: %s keeps no activations to recompute "
                          "(gpt2 does)",
                          f->config, f->params ? "--params" : "--model mlp");
    estimate_flags g = *f;
    g.ckpt |= cfg->activation_checkpointing;
    g.lora_rank = cfg->lora_r; /* the config's lora section, the flags over it */
    g.lora_modules = cfg->lora_target_modules[0] ? cfg->lora_target_modules : NULL;
    /* the models' products run in bf16 when the parameters are stored in bf16 */
    const zc_gemm_type compute = cfg->dtype == ZC_BF16 ? ZC_GEMM_BF16 : ZC_GEMM_F32;
    if (f->params)
        st = bare_model(f, m, err);
    else if (f->init || !strcmp(f->model, "gpt2"))
        st = gpt2_units(&g, cfg->micro_batch, compute, m, err);
    else
        st = mlp_units(f, cfg->micro_batch, compute, m, err);
    for (int u = 0; !st && u < m->nunits; u++)
        m->psi += m->units[u];
    return st;
}

/* Optimizer state floats per parameter, as the engine counts them: Adam's two moments; SGD's
 * momentum buffer unless its momentum is 0. */
static int optimizer_moments(const zc_config *cfg)
{
    return cfg->optim != ZC_OPTIM_SGD ? 2 : cfg->momentum != 0.0;
}

static int ranks_per_node(const estimate_flags *f)
{
    return f->ranks_per_node ? f->ranks_per_node : f->ranks;
}

/* The estimator's input for these flags, this config and this model (the stage left 0). */
static zc_estimate_in estimate_input(const estimate_flags *f, const zc_config *cfg,
                                     const estimate_model *m)
{
    return (zc_estimate_in){.unit_numel = m->units,
                            .unit_vec_numel = m->vec,
                            .unit_use = m->use,
                            .unit_frozen = m->frozen,
                            .grads_bf16 = zc_config_grads_bf16(cfg),
                            .nunits = m->nunits,
                            .nranks = f->ranks,
                            .moment_floats = optimizer_moments(cfg),
                            .moments_8bit = cfg->optim == ZC_OPTIM_ADAMW8BIT,
                            .compact_master = cfg->compact_master,
                            .param_bytes = zc_dtype_size(cfg->dtype),
                            .grad_bytes = zc_dtype_size(zc_config_grad_dtype(cfg)),
                            .comm_elem_bytes = zc_dtype_size(zc_config_comm_dtype(cfg)),
                            .grads_sent_as_stored = zc_config_grads_sent_as_stored(cfg),
                            .reduce_bucket_size = cfg->reduce_bucket_size,
                            .prefetch_bucket_size = cfg->prefetch_bucket_size,
                            .max_live_parameters = cfg->max_live_parameters,
                            .persistence_threshold = cfg->param_persistence_threshold,
                            .model_persistence_threshold = cfg->model_persistence_threshold,
                            .offload_optimizer = cfg->offload_optimizer == ZC_OFFLOAD_NVME,
                            .offload_params = cfg->offload_param == ZC_OFFLOAD_NVME,
                            .offload_ratio = cfg->optimizer_ratio,
                            .max_in_cpu = cfg->max_in_cpu,
                            .sub_group_size = cfg->sub_group_size,
                            .buffer_count = cfg->optimizer_buffer_count,
                            .param_buffer_count = cfg->param_buffer_count,
                            .param_buffer_size = cfg->param_buffer_size,
                            .quantized_weights = cfg->quantized_weights,
                            .quantized_gradients = cfg->quantized_gradients,
                            .hpz_partition_size = cfg->hpz_partition_size,
                            .ranks_per_host = ranks_per_node(f),
                            .grad_accum = cfg->grad_accum};
}

/* One stage: model states in RAM and on disk, the buffers, the total, the bytes sent. */
static zc_status stage_estimate(const zc_estimate_in *in, const estimate_model *m, bool bare,
                                stage_row *r, zc_err *err)
{
    r->in_ram = zc_estimate_states(in);
    r->states = r->in_ram.params + r->in_ram.grads + r->in_ram.optimizer;
    r->disk = zc_estimate_nvme_bytes(in);
    r->buffers = zc_estimate_offload_bound(in);
    /* Per-unit buffers need the model's units: unknown for a bare --params. */
    r->staging = bare ? -1 : zc_estimate_comm_staging(in);
    r->working = bare ? -1 : zc_estimate_working_bound(in);
    bool ovf = false; /* each part fits (zc_estimate_check, the models' checks) */
    int64_t total = zc_add_i64(r->states, r->staging > 0 ? r->staging : 0, &ovf);
    total = zc_add_i64(total, r->working > 0 ? r->working : 0, &ovf);
    total = zc_add_i64(total, m->activations > 0 ? m->activations : 0, &ovf);
    r->total = zc_add_i64(total, r->buffers, &ovf);
    if (ovf)
        return zc_err_set(err, ZC_EINVAL,
                          "stage %d: model states %lld, activations %lld and "
                          "buffers per rank sum past 2^63 bytes: lower --micro-batch or the "
                          "model's size",
                          in->stage, (long long)r->states, (long long)m->activations);
    const bool opt = in->offload_optimizer && in->stage >= 1;
    const bool par = in->offload_params && in->stage == 3;
    r->offload = r->disk == 0 ? "none"
                 : opt && par ? "optimizer+params"
                 : par        ? "params"
                              : "optimizer";
    r->sent = zc_estimate_comm_bytes(in);
    r->inter = zc_estimate_inter_host_bytes(in);
    return ZC_OK;
}

/* Every stage, the ZeRO++ options at stage 3 when the ranks span nodes, and the recommended
 * stage: the least communication that fits `limit` bytes per rank. */
static zc_status estimate_all(const estimate_flags *f, const zc_estimate_in *base,
                              const estimate_model *m, double limit, estimate_result *res,
                              zc_err *err)
{
    res->best = -1;
    for (int stage = 0; stage <= 3; stage++) {
        zc_estimate_in in = *base;
        in.stage = stage;
        stage_row *r = &res->stage[stage];
        /* offload "auto": sized to --mem-per-rank as train sizes it to the host (less the same
         * reserve); without a limit DeepSpeed's defaults */
        const bool par = in.max_in_cpu == ZC_AUTO, opt = in.offload_ratio == ZC_AUTO;
        if (par)
            in.max_in_cpu = ZC_MAX_IN_CPU_DEFAULT;
        if (opt)
            in.offload_ratio = 1.0;
        /* (a bare --params: its rows count no working memory to size against) */
        const int64_t lim = limit < 9.2e18 ? (int64_t)limit : INT64_MAX;
        if ((par || opt) && limit > 0 && !f->params)
            offload_cache_size(
                &in, m->activations > 0 ? m->activations : 0, lim - offload_cache_reserve(lim),
                par && in.offload_params && stage == 3, opt && in.offload_optimizer && stage >= 1,
                &in.max_in_cpu, &in.offload_ratio);
        r->max_in_cpu = in.max_in_cpu;
        r->ratio = in.offload_ratio;
        zc_status st = stage_estimate(&in, m, f->params != NULL, r, err);
        if (st)
            return st;
        if (limit > 0 && (double)r->total <= limit && (res->best < 0 || r->sent < res->best_comm)) {
            res->best = stage;
            res->best_comm = r->sent;
        }
    }
    for (int k = 0; ranks_per_node(f) < f->ranks && k < NZERO_PP; k++) {
        zc_estimate_in in = *base;
        in.stage = 3;
        in.quantized_weights = zero_pp_options[k].qwz;
        in.quantized_gradients = zero_pp_options[k].qgz;
        in.hpz_partition_size = zero_pp_options[k].hpz ? ranks_per_node(f) : 1;
        in.max_in_cpu = res->stage[3].max_in_cpu; /* offload "auto" as sized for stage 3 */
        in.offload_ratio = res->stage[3].ratio;
        res->zero_pp[k] =
            (zero_pp_row){zc_estimate_comm_bytes(&in), zc_estimate_inter_host_bytes(&in),
                          zc_estimate_states(&in).params};
    }
    return ZC_OK;
}

static void print_json(const estimate_flags *f, const zc_config *cfg, const estimate_model *m,
                       const estimate_result *res, double limit)
{
    const int per_node = ranks_per_node(f);
    cJSON *root = cJSON_CreateObject();
    cJSON_AddNumberToObject(root, "params", (double)m->psi);
    cJSON_AddNumberToObject(root, "units", m->nunits);
    if (m->frozen) { /* LoRA: the parameters trained (the adapters') */
        size_t trained = 0;
        for (int u = 0; u < m->nunits; u++)
            trained += m->frozen[u] ? 0 : m->units[u];
        cJSON_AddNumberToObject(root, "trained_params", (double)trained);
    }
    cJSON_AddNumberToObject(root, "ranks", f->ranks);
    cJSON_AddNumberToObject(root, "ranks_per_node", per_node);
    cJSON_AddStringToObject(root, "dtype", zc_dtype_name(cfg->dtype));
    if (!f->params) /* a bare --params has no activations to size */
        cJSON_AddNumberToObject(root, "micro_batch", cfg->micro_batch);
    cJSON_AddNumberToObject(root, "gradient_accumulation_steps", cfg->grad_accum);
    cJSON_AddStringToObject(root, "grad_accum_dtype", zc_dtype_name(zc_config_grad_dtype(cfg)));
    cJSON_AddStringToObject(root, "communication_data_type",
                            zc_dtype_name(zc_config_comm_dtype(cfg)));
    if (f->stage >= 0)
        cJSON_AddNumberToObject(root, "stage_given", f->stage);
    cJSON *rows = cJSON_AddArrayToObject(root, "rows");
    for (int stage = 0; stage <= 3; stage++) {
        const stage_row *s = &res->stage[stage];
        cJSON *r = cJSON_CreateObject();
        cJSON_AddNumberToObject(r, "stage", stage);
        cJSON_AddStringToObject(r, "offload", s->offload);
        cJSON_AddNumberToObject(r, "nvme", (double)s->disk);
        cJSON_AddNumberToObject(r, "offload_buffers_bound", (double)s->buffers);
        cJSON_AddNumberToObject(r, "max_in_cpu", (double)s->max_in_cpu);
        cJSON_AddNumberToObject(r, "offload_ratio", s->ratio);
        cJSON_AddNumberToObject(r, "params", (double)s->in_ram.params);
        cJSON_AddNumberToObject(r, "grads", (double)s->in_ram.grads);
        cJSON_AddNumberToObject(r, "optimizer", (double)s->in_ram.optimizer);
        cJSON_AddNumberToObject(r, "model_states", (double)s->states);
        if (m->activations >= 0)
            cJSON_AddNumberToObject(r, "activations", (double)m->activations);
        if (s->staging >= 0) {
            cJSON_AddNumberToObject(r, "comm_staging", (double)s->staging);
            cJSON_AddNumberToObject(r, "working_bound", (double)s->working);
        }
        cJSON_AddNumberToObject(r, "total_per_rank", (double)s->total);
        cJSON_AddNumberToObject(r, "total_per_node", (double)s->total * per_node);
        cJSON_AddNumberToObject(r, "comm_bytes_per_step", (double)s->sent);
        cJSON_AddNumberToObject(r, "inter_node_comm_bytes_per_step", (double)s->inter);
        cJSON_AddItemToArray(rows, r);
    }
    if (per_node < f->ranks) {
        cJSON *zpp = cJSON_AddArrayToObject(root, "zero_pp_stage3");
        for (int k = 0; k < NZERO_PP; k++) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "options", zero_pp_options[k].name);
            cJSON_AddNumberToObject(o, "comm_bytes_per_step", (double)res->zero_pp[k].sent);
            cJSON_AddNumberToObject(o, "inter_node_comm_bytes_per_step",
                                    (double)res->zero_pp[k].inter);
            cJSON_AddNumberToObject(o, "params", (double)res->zero_pp[k].params);
            cJSON_AddItemToArray(zpp, o);
        }
    }
    if (limit > 0) {
        if (res->best >= 0)
            cJSON_AddNumberToObject(root, "recommended_stage", res->best);
        else
            cJSON_AddNullToObject(root, "recommended_stage");
    }
    char *text = cJSON_Print(root);
    puts(text);
    free(text);
    cJSON_Delete(root);
}

static void print_table(const estimate_flags *f, const zc_config *cfg, const zc_estimate_in *base,
                        const estimate_model *m, const estimate_result *res, double limit)
{
    const int per_node = ranks_per_node(f);
    const bool hosts = per_node < f->ranks; /* the bytes that leave a host are worth a column */
    const bool nvme_opt = base->offload_optimizer, nvme_par = base->offload_params;
    const bool offload = nvme_opt || nvme_par;
    const int pbytes = base->param_bytes, gbytes = base->grad_bytes;
    char accum[64] = "", lora[96] = "";
    if (cfg->grad_accum > 1)
        snprintf(accum, sizeof accum, ", %d micro-batches per step", cfg->grad_accum);
    size_t trained = 0;
    for (int u = 0; m->frozen && u < m->nunits; u++)
        trained += m->frozen[u] ? 0 : m->units[u];
    if (m->frozen) /* LoRA */
        snprintf(lora, sizeof lora, " (LoRA: %zu trained, the rest frozen)", trained);
    printf("%zu parameters%s in %d units, %d ranks (%d per node)%s, %s%s, %s%s%s\n"
           "%5s %10s %10s %10s %10s %12s %8s %12s%s %12s %12s %12s%s%s\n",
           m->psi, lora, m->nunits, f->ranks, per_node, accum, zc_dtype_name(cfg->dtype),
           pbytes == 4   ? ""
           : gbytes == 2 ? " (P = G = 2, K = 12 with Adam)"
                         : " (P = 2, fp32 gradients)",
           base->moment_floats == 2   ? "Adam"
           : base->moment_floats == 1 ? "SGD with momentum"
                                      : "SGD",
           f->params ? "; activations and per-unit buffers need a model shape (--model)" : "",
           !offload               ? ""
           : nvme_opt && nvme_par ? "; optimizer (stages 1-3) and parameters "
                                    "(stage 3) offloaded to NVMe"
           : nvme_opt             ? "; optimizer offloaded to NVMe (stages 1-3)"
                                  : "; parameters offloaded to NVMe (stage 3)",
           "stage", "params", "grads", "optimizer", "states", "activations", "comm",
           "working<=", offload ? "   offload<=" : "", "total/rank", "total/node", "comm/step",
           hosts ? " inter-node/step" : "", offload ? "    disk/rank" : "");
    for (int stage = 0; stage <= 3; stage++) {
        const stage_row *s = &res->stage[stage];
        char act[32] = "-", stg[32] = "-", wrk[32] = "-";
        if (m->activations >= 0)
            snprintf(act, sizeof act, "%.1fMi", mib(m->activations));
        if (s->staging >= 0) {
            snprintf(stg, sizeof stg, "%.1fMi", mib(s->staging));
            snprintf(wrk, sizeof wrk, "%.1fMi", mib(s->working));
        }
        char buf[32] = "", dsk[32] = "", far[32] = "";
        if (hosts)
            snprintf(far, sizeof far, " %13.1fMi", mib(s->inter));
        if (offload) {
            snprintf(buf, sizeof buf, " %10.1fMi", mib(s->buffers));
            snprintf(dsk, sizeof dsk, " %10.1fMi", mib(s->disk));
        }
        printf("%5d %8.1fMi %8.1fMi %8.1fMi %8.1fMi %12s %8s %12s%s %10.1fMi %10.1fMi "
               "%10.1fMi%s%s%s\n",
               stage, mib(s->in_ram.params), mib(s->in_ram.grads), mib(s->in_ram.optimizer),
               mib(s->states), act, stg, wrk, buf, mib(s->total), mib(s->total) * per_node,
               mib(s->sent), far, dsk, stage == f->stage ? "  <- --stage" : "");
    }
    if (hosts) { /* ZeRO++ at stage 3 on these hosts: what each option leaves on the network */
        printf("stage 3 with ZeRO++ (hosts of %d ranks)   comm/step  inter-node/step  "
               "inter vs none  params/rank\n",
               per_node);
        for (int k = 0; k < NZERO_PP; k++) {
            const zero_pp_row *z = &res->zero_pp[k];
            printf("  %-34s %8.1fMi %14.1fMi %13.2fx %10.1fMi\n", zero_pp_options[k].name,
                   mib(z->sent), mib(z->inter),
                   z->inter ? (double)res->zero_pp[0].inter / (double)z->inter : 0.0,
                   mib(z->params));
        }
    }
    printf("(MiB = 2^20 bytes; model states, disk and comm are exact for zeroc's unit "
           "layout; working and offload buffers are upper bounds; totals are RAM)\n");
    if (cfg->max_in_cpu == ZC_AUTO || cfg->optimizer_ratio == ZC_AUTO) {
        if (limit > 0 && !f->params) {
            const int64_t lim = limit < 9.2e18 ? (int64_t)limit : INT64_MAX;
            printf("offload \"auto\", sized to --mem-per-rank %s less %.1f MiB kept back (as train "
                   "sizes it to the host):",
                   f->mem_per_rank, mib(offload_cache_reserve(lim)));
            for (int stage = 1; stage <= 3; stage++)
                printf("%s stage %d: ratio %.6g", stage > 1 ? ";" : "", stage,
                       res->stage[stage].ratio);
            printf(", max_in_cpu %lld", (long long)res->stage[3].max_in_cpu);
            printf("\n");
        } else
            printf("offload \"auto\": DeepSpeed's defaults here (max_in_cpu 1e9, ratio 1); %s\n",
                   f->params ? "a bare --params has no units to size them by (--model or --init "
                               "has)"
                             : "--mem-per-rank sizes them, as train sizes them to the host's "
                               "free memory");
    }
    if (limit > 0 && f->stage >= 0)
        printf("--stage %d: %.1f MiB per rank, %s --mem-per-rank %s\n", f->stage,
               mib(res->stage[f->stage].total),
               (double)res->stage[f->stage].total <= limit ? "within" : "over", f->mem_per_rank);
    if (limit > 0 && res->best >= 0)
        printf("recommended: stage %d — the least communication (%.1f MiB/step) that fits "
               "%s per rank\n",
               res->best, mib(res->best_comm), f->mem_per_rank);
    else if (limit > 0) { /* only what would shrink this table's per-rank totals */
        char how[512] = "";
        size_t n = 0;
        const bool gpt2 = f->model && !strcmp(f->model, "gpt2");
        /* ranks divide the model states (stages 1-3) and offload moves them, never a rank's
         * activations: not advised where those alone are over the limit */
        const bool acts_over = m->activations >= 0 && (double)m->activations >= limit;
        if (!acts_over)
            n += (size_t)snprintf(how + n, sizeof how - n,
                                  "add ranks (stage 3 divides the model "
                                  "states among them; a rank's "
                                  "activations stay)");
        if (m->activations > 0 && cfg->micro_batch > 1)
            n += (size_t)snprintf(how + n, sizeof how - n, "%slower --micro-batch (%d)",
                                  n ? ", " : "", cfg->micro_batch);
        if (gpt2 && !f->ckpt)
            n += (size_t)snprintf(how + n, sizeof how - n, "%suse --activation-checkpointing",
                                  n ? ", " : "");
        if (!offload && !acts_over)
            n += (size_t)snprintf(how + n, sizeof how - n,
                                  "%soffload to NVMe (--offload-optimizer nvme, --offload-param "
                                  "nvme)",
                                  n ? ", " : "");
        if (!n)
            n = (size_t)snprintf(how, sizeof how,
                                 "a rank's activations alone exceed it: a shorter --seq-len or a "
                                 "smaller model");
        printf("no stage fits %s per rank%s%s\n", f->mem_per_rank, n ? ": " : "", how);
    }
}

int cmd_estimate(int argc, char **argv)
{
    estimate_flags f = {.ranks = 1,
                        .hidden = MLP_DEFAULT_HIDDEN,
                        .channels = 768,
                        .heads = 12,
                        .vocab = 50257,
                        .seq_len = 1024,
                        .hpz = 1};
    arg_spec specs[] = {
        {"--params", ARG_STR, &f.params, NULL, "parameter count: 1.5e9, 1.5B, 350M (one unit)",
         NULL},
        {"--model", ARG_STR, &f.model, NULL, "mlp or gpt2: use the model's real units", NULL},
        {"--init", ARG_STR, &f.init, NULL,
         "gpt2: read the shape from an llm.c checkpoint or a Hugging Face GPT-2", NULL},
        {"--hidden", ARG_INT, &f.hidden, NULL, "mlp: hidden size (default 2048)", NULL},
        {"--layers", ARG_INT, &f.layers, NULL,
         "mlp: layers (default 12); gpt2: blocks (default 12)", NULL},
        {"--channels", ARG_INT, &f.channels, NULL, "gpt2: channels (default 768)", NULL},
        {"--heads", ARG_INT, &f.heads, NULL, "gpt2: heads (default 12)", NULL},
        {"--vocab", ARG_INT, &f.vocab, NULL, "gpt2: vocabulary (default 50257)", NULL},
        {"--seq-len", ARG_INT, &f.seq_len, NULL, "gpt2: sequence length (default 1024)", NULL},
        {"--config", ARG_STR, &f.config, NULL,
         "DeepSpeed JSON config as train reads it, flags over it (its stage unused: all shown)",
         NULL},
        {"--micro-batch", ARG_INT, &f.micro, NULL,
         "train_micro_batch_size_per_gpu: per rank (mlp default 32, gpt2 default 4)", NULL},
        {"--grad-accum", ARG_INT, &f.grad_accum, NULL,
         "gradient_accumulation_steps: micro-batches per step (stages 2-3 reduce each)", NULL},
        {"--activation-checkpointing", ARG_BOOL, &f.ckpt, NULL, "gpt2: recompute blocks", NULL},
        {"--tile-params", ARG_I64, &f.tile_params, NULL,
         "gpt2, the Llama family: embedding, head and (below a block's size) MLP tiles of at "
         "most N parameters, as train (default 0: a block's size, GPT-2's learned positions "
         "only under a positive N; -1: never)",
         NULL},
        {"--lora-r", ARG_STR, &f.lora_r, NULL,
         "gpt2: LoRA of rank R as train --lora-r: the base frozen (no gradients, no optimizer "
         "state), adapters' units trained (default 0: every parameter trained)",
         NULL},
        {"--lora-targets", ARG_STR, &f.lora_targets, NULL,
         "gpt2: with --lora-r, train's --lora-targets (default: PEFT's for the family)", NULL},
        {"--lora-alpha", ARG_STR, &f.lora_alpha, NULL,
         "gpt2: train's --lora-alpha (accepted and checked; the bytes do not depend on it)", NULL},
        {"--lora-dropout", ARG_STR, &f.lora_dropout, NULL,
         "gpt2: train's --lora-dropout (accepted and checked; the bytes do not depend on it)",
         NULL},
        {"--lora-init", ARG_STR, &f.lora_init, NULL,
         "gpt2: train's --lora-init: r and target_modules from a PEFT adapter directory", NULL},
        {"--ranks", ARG_INT, &f.ranks, NULL, "data-parallel ranks N (default 1)", NULL},
        {"--ranks-per-node", ARG_INT, &f.ranks_per_node, NULL,
         "ranks per host, dividing N: per-node totals, bytes leaving the host (default N)", NULL},
        {"--quantized-weights", ARG_BOOL, &f.qwz, NULL,
         "stage 3, ZeRO++ qwZ: int8 parameter all-gathers (zero_quantized_weights)", NULL},
        {"--quantized-gradients", ARG_BOOL, &f.qgz, NULL,
         "stage 3, ZeRO++ qgZ: int8 gradient reduce-scatters (zero_quantized_gradients)", NULL},
        {"--hpz", ARG_INT, &f.hpz, NULL,
         "stage 3, ZeRO++ hpZ: ranks sharing a secondary parameter copy "
         "(zero_hpz_partition_size, default 1: none)",
         NULL},
        {"--dtype", ARG_STR, &f.dtype, NULL,
         "parameters: fp32 (default), bf16 or fp16 (mixed "
         "precision: 16-bit params and grads, fp32 master + moments)",
         NULL},
        {"--grad-accum-dtype", ARG_STR, &f.grad_dtype, NULL,
         "stored gradients: fp32, bf16 or fp16 (default: --dtype)", NULL},
        {"--comm-dtype", ARG_STR, &f.comm_dtype, NULL,
         "reduce-scatter elements: fp32, bf16 or fp16 (default: --dtype)", NULL},
        {"--optimizer", ARG_STR, &f.optim, NULL,
         "AdamW, Adam, SGD or AdamW8bit, as train's: the config's optimizer.type (default AdamW; "
         "SGD keeps "
         "a momentum buffer when the config's momentum is not 0)",
         NULL},
        {"--reduce-bucket-size", ARG_STR, &f.bucket, NULL,
         "reduce_bucket_size: elements per reduce-scatter chunk (default 5e8)", NULL},
        {"--offload-optimizer", ARG_STR, &f.off_opt, NULL,
         "nvme: optimizer state (and stage-3 gradients) on disk, stages 1-3 (none, cpu: in RAM)",
         NULL},
        {"--offload-ratio", ARG_STR, &f.ratio, NULL,
         "offload_optimizer.ratio: share of the optimizer state on disk (default 1)", NULL},
        {"--offload-param", ARG_STR, &f.off_par, NULL,
         "nvme: stage-3 parameter shards on disk (none, cpu: in RAM)", NULL},
        {"--max-in-cpu", ARG_STR, &f.max_in_cpu, NULL,
         "offload_param.max_in_cpu: parameter elements kept in RAM (default 1e9)", NULL},
        {"--prefetch-bucket-size", ARG_STR, &f.prefetch, NULL,
         "stage3_prefetch_bucket_size: elements gathered ahead (default auto: one unit)", NULL},
        {"--persistence-threshold", ARG_STR, &f.persist, NULL,
         "stage3_param_persistence_threshold: units smaller stay whole (default auto: 0)", NULL},
        {"--sub-group-size", ARG_STR, &f.sub_group, NULL,
         "elements the optimizer step streams at a time (default 4194304)", NULL},
        {"--mem-per-rank", ARG_STR, &f.mem_per_rank, NULL,
         "memory a rank may use (24G, 512M): recommend a stage", NULL},
        {"--json", ARG_BOOL, &f.json, NULL, "print JSON instead of a table", NULL},
        {"--stage", ARG_INT, &f.stage, NULL,
         "train's ZeRO stage (a train line as is): its row is marked; every stage is estimated",
         NULL},
        {"--nvme-path", ARG_STR, &f.nvme_path, NULL,
         "train's swap directory (with an NVMe offload): accepted, nothing is written there", NULL},
    };
    const int nspecs = (int)(sizeof specs / sizeof specs[0]);
    zc_err err = {0};
    bool helped;
    const bool printer = cli_launcher_rank() == 0; /* one process: no MPI; under mpirun, rank 0 */
    zc_status st =
        args_parse_command(specs, nspecs, argc, argv, 2,
                           "zeroc estimate (--params N | --model mlp|gpt2 [shape] | --init FILE) "
                           "--ranks N [flags]",
                           printer, &helped, &err);
    if (helped)
        return 0;
    if (!printer)
        return st ? 1 : 0;
    f.ranks_per_node_given = args_given(argc, argv, 2, "--ranks-per-node");
    f.micro_given = args_given(argc, argv, 2, "--micro-batch");
    f.grad_accum_given = args_given(argc, argv, 2, "--grad-accum");
    f.hpz_given = args_given(argc, argv, 2, "--hpz");
    for (int k = 0; k < NSHAPE; k++)
        f.given[k] = args_given(argc, argv, 2, shape_flags[k]);
    zc_config cfg;
    double limit = 0;
    estimate_model m = {.activations = -1};
    zc_estimate_in base = {0};
    estimate_result res = {0};
    if (!args_given(argc, argv, 2, "--stage"))
        f.stage = -1;
    else if (!st && (f.stage < 0 || f.stage > 3))
        st = zc_err_set(&err, ZC_EINVAL, "--stage must be 0 to 3, got %d", f.stage);
    if (!st)
        st = flags_to_config(&f, &cfg, &limit, &err);
    if (!st && f.nvme_path && cfg.offload_optimizer != ZC_OFFLOAD_NVME &&
        cfg.offload_param != ZC_OFFLOAD_NVME) /* as train refuses it: it would be ignored */
        st = zc_err_set(&err, ZC_EINVAL,
                        "--nvme-path applies only to an offload to NVMe (--offload-optimizer nvme "
                        "or --offload-param nvme)");
    if (!st)
        st = model_units(&f, &cfg, &m, &err);
    if (!st) {
        base = estimate_input(&f, &cfg, &m);
        st = zc_estimate_check(&base, &err);
    }
    if (!st)
        st = estimate_all(&f, &base, &m, limit, &res, &err);
    if (!st && f.json)
        print_json(&f, &cfg, &m, &res, limit);
    else if (!st)
        print_table(&f, &cfg, &base, &m, &res, limit);
    free(m.units);
    free(m.vec);
    free(m.frozen);
    free(m.use);
    return st ? cli_fail_alone(&err) : 0;
}
