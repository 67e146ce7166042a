/* test_config.c — checks src/config/config.c against include/zeroc/config.h and docs/CONFIG.md.
 *
 * Standalone: every check counts, failures print file:line and the message involved, and the
 * last line is "N passed, N failed"; the exit status is 0 only when nothing failed. Errors are
 * checked by substring so the wording may improve, but the key path and the bad value must be
 * in every message: that is what the user needs to fix the file.
 */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */

#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zeroc/config.h"
#include "zeroc/estimate.h"
#include "zeroc/lr_schedule.h"

static int passed, failed;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (cond) {                                                                                \
            passed++;                                                                              \
        } else {                                                                                   \
            failed++;                                                                              \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
        }                                                                                          \
    } while (0)

/* Same, also printing the message under test when the check fails. */
#define CHECK_MSG(cond, msg) record((cond), __FILE__, __LINE__, #cond, (msg))

static char tmpdir[64];

/* ---------------------------------------------------------------------------------------------
 * helpers
 * ------------------------------------------------------------------------------------------- */

static void record(bool ok, const char *file, int line, const char *what, const char *msg)
{
    if (ok) {
        passed++;
    } else {
        failed++;
        fprintf(stderr, "%s:%d: CHECK failed: %s\n    message: %s\n", file, line, what, msg);
    }
}

static bool same_num(double a, double b)
{
    return a == b || (isnan(a) && isnan(b));
}

/* The params of the schedule's type (a file gives only those; to_json writes only those). */
static bool same_schedule(const zc_config *a, const zc_config *b)
{
    const zc_sched_type t = a->sched;
    const bool warm = t == ZC_SCHED_WARMUP_LR || t == ZC_SCHED_WARMUP_DECAY_LR;
    const bool cos = t == ZC_SCHED_WARMUP_COSINE_LR;
    return a->sched == b->sched &&
           (!warm || (a->warmup_min_lr == b->warmup_min_lr &&
                      zc_config_warmup_max_lr(a) == zc_config_warmup_max_lr(b))) &&
           (!(warm || cos) ||
            (a->warmup_num_steps == b->warmup_num_steps && a->warmup_type == b->warmup_type)) &&
           (!(t == ZC_SCHED_WARMUP_DECAY_LR || cos) || a->total_num_steps == b->total_num_steps) &&
           (!cos ||
            (a->warmup_min_ratio == b->warmup_min_ratio && a->cos_min_ratio == b->cos_min_ratio)) &&
           (t != ZC_SCHED_ONE_CYCLE ||
            (same_num(a->cycle_min_lr, b->cycle_min_lr) &&
             same_num(a->cycle_max_lr, b->cycle_max_lr) && a->decay_lr_rate == b->decay_lr_rate &&
             a->cycle_first_step_size == b->cycle_first_step_size &&
             a->cycle_second_step_size == b->cycle_second_step_size &&
             a->decay_step_size == b->decay_step_size && a->cycle_momentum == b->cycle_momentum)) &&
           (t != ZC_SCHED_LR_RANGE_TEST ||
            (a->lr_range_test_min_lr == b->lr_range_test_min_lr &&
             a->lr_range_test_step_size == b->lr_range_test_step_size &&
             a->lr_range_test_step_rate == b->lr_range_test_step_rate &&
             a->lr_range_test_staircase == b->lr_range_test_staircase));
}

/* Value fields only: micro_batch_set / grad_accum_set record where a value came from, and
 * fp16_enabled / bf16_enabled which keys set dtype. */
static bool same_values(const zc_config *a, const zc_config *b)
{
    return a->train_batch_size == b->train_batch_size && a->micro_batch == b->micro_batch &&
           a->grad_accum == b->grad_accum && a->grad_clip == b->grad_clip && a->optim == b->optim &&
           a->lr == b->lr && a->beta1 == b->beta1 && a->beta2 == b->beta2 && a->eps == b->eps &&
           a->weight_decay == b->weight_decay && a->momentum == b->momentum &&
           a->adam_w_mode == b->adam_w_mode && a->stage == b->stage &&
           a->reduce_bucket_size == b->reduce_bucket_size &&
           a->prefetch_bucket_size == b->prefetch_bucket_size &&
           a->max_live_parameters == b->max_live_parameters && a->dtype == b->dtype &&
           a->comm_dtype == b->comm_dtype && a->grad_accum_dtype == b->grad_accum_dtype &&
           a->loss_scale == b->loss_scale && a->initial_scale_power == b->initial_scale_power &&
           a->loss_scale_window == b->loss_scale_window && a->hysteresis == b->hysteresis &&
           a->consecutive_hysteresis == b->consecutive_hysteresis &&
           a->min_loss_scale == b->min_loss_scale && a->seed == b->seed &&
           a->comm_timeout_s == b->comm_timeout_s && a->steps_per_print == b->steps_per_print &&
           a->offload_optimizer == b->offload_optimizer &&
           strcmp(a->optimizer_nvme_path, b->optimizer_nvme_path) == 0 &&
           a->optimizer_buffer_count == b->optimizer_buffer_count &&
           a->optimizer_pin_memory == b->optimizer_pin_memory &&
           a->optimizer_ratio == b->optimizer_ratio && a->pipeline_read == b->pipeline_read &&
           a->pipeline_write == b->pipeline_write && a->fold_update == b->fold_update &&
           a->offload_param == b->offload_param &&
           strcmp(a->param_nvme_path, b->param_nvme_path) == 0 &&
           a->param_buffer_count == b->param_buffer_count &&
           a->param_buffer_size == b->param_buffer_size && a->max_in_cpu == b->max_in_cpu &&
           a->param_pin_memory == b->param_pin_memory && a->sub_group_size == b->sub_group_size &&
           a->aio_block_size == b->aio_block_size && a->aio_queue_depth == b->aio_queue_depth &&
           a->aio_thread_count == b->aio_thread_count &&
           a->aio_single_submit == b->aio_single_submit &&
           a->aio_overlap_events == b->aio_overlap_events && a->aio_engine == b->aio_engine &&
           a->overlap_comm == b->overlap_comm && a->bias_correction == b->bias_correction &&
           a->quantized_weights == b->quantized_weights &&
           a->quantized_gradients == b->quantized_gradients &&
           a->activation_checkpointing == b->activation_checkpointing && a->sched == b->sched &&
           same_schedule(a, b);
}

/* Every field: what "cfg unchanged" means. (memcmp would also compare padding bytes, which
 * struct assignment need not copy and valgrind reports as uninitialised.) */
static bool same_config(const zc_config *a, const zc_config *b)
{
    return same_values(a, b) && a->micro_batch_set == b->micro_batch_set &&
           a->grad_accum_set == b->grad_accum_set && a->fp16_enabled == b->fp16_enabled &&
           a->bf16_enabled == b->bf16_enabled;
}

/* Loads json over defaults (origin "ds.json") and expects failure with `code` and a message
 * containing every one of up to three substrings; also that cfg was left unchanged. */
static void expect_load_err_at(const char *file, int line, const char *json, zc_status code,
                               const char *s1, const char *s2, const char *s3)
{
    zc_config cfg, before;
    zc_err err = {0};
    zc_status rc;
    char what[256];

    zc_config_defaults(&cfg);
    cfg.seed = 7; /* not a default: shows the copy was not committed */
    before = cfg;
    rc = zc_config_load_string(&cfg, json, "ds.json", &err);
    snprintf(what, sizeof what, "load of %.150s fails with %s", json, zc_status_name(code));
    record(rc == code && err.code == code, file, line, what, err.msg);
    record(strncmp(err.msg, "ds.json: ", 9) == 0, file, line, "message starts with origin",
           err.msg);
    const char *subs[3] = {s1, s2, s3};
    for (int i = 0; i < 3; i++) {
        if (!subs[i])
            continue;
        snprintf(what, sizeof what, "message contains '%s'", subs[i]);
        record(strstr(err.msg, subs[i]) != NULL, file, line, what, err.msg);
    }
    record(same_config(&cfg, &before), file, line, "cfg unchanged on error", err.msg);
}
#define EXPECT_LOAD_ERR(json, s1, s2, s3)                                                          \
    expect_load_err_at(__FILE__, __LINE__, json, ZC_EINVAL, s1, s2, s3)

static void expect_set_err_at(const char *file, int line, const char *path, const char *value,
                              const char *s1, const char *s2)
{
    zc_config cfg, before;
    zc_err err = {0};
    zc_status rc;
    char what[256];

    zc_config_defaults(&cfg);
    before = cfg;
    rc = zc_config_set(&cfg, path, value, &err);
    snprintf(what, sizeof what, "set %s=%s fails", path, value);
    record(rc == ZC_EINVAL && err.code == ZC_EINVAL, file, line, what, err.msg);
    record(strncmp(err.msg, "command line: ", 14) == 0, file, line,
           "message starts with 'command line: '", err.msg);
    const char *subs[2] = {s1, s2};
    for (int i = 0; i < 2; i++) {
        if (!subs[i])
            continue;
        snprintf(what, sizeof what, "message contains '%s'", subs[i]);
        record(strstr(err.msg, subs[i]) != NULL, file, line, what, err.msg);
    }
    record(same_config(&cfg, &before), file, line, "cfg unchanged on error", err.msg);
}
#define EXPECT_SET_ERR(path, value, s1, s2)                                                        \
    expect_set_err_at(__FILE__, __LINE__, path, value, s1, s2)

static void expect_set_ok_at(const char *file, int line, zc_config *cfg, const char *path,
                             const char *value)
{
    zc_err err = {0};
    char what[256];
    snprintf(what, sizeof what, "set %s=%s succeeds", path, value);
    record(zc_config_set(cfg, path, value, &err) == ZC_OK, file, line, what, err.msg);
}
#define EXPECT_SET_OK(cfg, path, value) expect_set_ok_at(__FILE__, __LINE__, cfg, path, value)

static zc_status load(zc_config *cfg, const char *json, zc_err *err)
{
    zc_config_defaults(cfg);
    return zc_config_load_string(cfg, json, "ds.json", err);
}

static void write_file(const char *path, const char *text, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f) {
        perror(path);
        exit(2);
    }
    fwrite(text, 1, len, f);
    fclose(f);
}

/* to_json, then load that over defaults: must give the same values. */
static void check_round_trip_at(const char *file, int line, const zc_config *cfg)
{
    zc_config back;
    zc_err err = {0};
    char *json = zc_config_to_json(cfg);
    record(json != NULL, file, line, "to_json returns text", "");
    if (!json)
        return;
    zc_config_defaults(&back);
    record(zc_config_load_string(&back, json, "to_json output", &err) == ZC_OK, file, line,
           "to_json output loads", err.msg);
    record(same_values(cfg, &back), file, line, "to_json round-trips to equal values", json);
    free(json);
}
#define CHECK_ROUND_TRIP(cfg) check_round_trip_at(__FILE__, __LINE__, cfg)

/* ---------------------------------------------------------------------------------------------
 * tests
 * ------------------------------------------------------------------------------------------- */

static void test_defaults(void)
{
    zc_config c;
    zc_err err = {0};
    memset(&c, 0xab, sizeof c);
    zc_config_defaults(&c);
    CHECK(c.train_batch_size == 0);
    CHECK(c.micro_batch == 1);
    CHECK(c.grad_accum == 1);
    CHECK(!c.micro_batch_set && !c.grad_accum_set);
    CHECK(c.grad_clip == 0.0);
    CHECK(c.optim == ZC_OPTIM_ADAMW);
    CHECK(c.lr == 1e-3);
    CHECK(c.beta1 == 0.9 && c.beta2 == 0.999);
    CHECK(c.eps == 1e-8);
    CHECK(c.weight_decay == 0.0);
    CHECK(c.momentum == 0.0);
    CHECK(c.adam_w_mode);
    CHECK(c.stage == 0);
    CHECK(c.reduce_bucket_size == 500000000);
    CHECK(c.prefetch_bucket_size == ZC_AUTO); /* one unit ahead, resolved by the engine */
    CHECK(c.max_live_parameters == 1000000000);
    CHECK(c.seed == 42);
    CHECK(c.comm_timeout_s == 600.0);
    CHECK(c.steps_per_print == 10);
    CHECK(c.dtype == ZC_FP32 && !c.fp16_enabled && !c.bf16_enabled);
    CHECK(c.comm_dtype == ZC_DTYPE_DEFAULT && c.grad_accum_dtype == ZC_DTYPE_DEFAULT);
    CHECK(c.loss_scale == 0.0);
    CHECK(c.initial_scale_power == 16);
    CHECK(c.loss_scale_window == 1000);
    CHECK(c.hysteresis == 2);
    CHECK(!c.consecutive_hysteresis);
    CHECK(c.min_loss_scale == 1.0);
    /* offload (docs/CONFIG.md): DeepSpeed's defaults except pipeline_read/write and
     * sub_group_size */
    CHECK(c.offload_optimizer == ZC_OFFLOAD_NONE && c.optimizer_nvme_path[0] == '\0');
    CHECK(c.optimizer_buffer_count == 4);
    CHECK(!c.optimizer_pin_memory);
    CHECK(c.optimizer_ratio == 1.0);
    CHECK(c.pipeline_read && c.pipeline_write && c.fold_update);
    CHECK(c.offload_param == ZC_OFFLOAD_NONE && c.param_nvme_path[0] == '\0');
    CHECK(c.param_buffer_count == 5);
    CHECK(c.param_buffer_size == 100000000);
    CHECK(c.max_in_cpu == 1000000000);
    CHECK(!c.param_pin_memory);
    CHECK(c.sub_group_size == 4194304);
    CHECK(c.aio_block_size == 1048576);
    CHECK(c.aio_queue_depth == 8);
    CHECK(c.aio_thread_count == 1);
    CHECK(!c.aio_single_submit && c.aio_overlap_events);
    CHECK(c.aio_engine == ZC_AIO_AUTO);
    CHECK(zc_config_comm_dtype(&c) == ZC_FP32 && zc_config_grad_dtype(&c) == ZC_FP32);
    CHECK(zc_config_validate(&c, 1, &err) == ZC_OK);
    CHECK(zc_config_validate(&c, 64, &err) == ZC_OK);

    CHECK(strcmp(zc_optim_name(ZC_OPTIM_ADAMW), "AdamW") == 0);
    CHECK(strcmp(zc_optim_name(ZC_OPTIM_ADAM), "Adam") == 0);
    CHECK(strcmp(zc_optim_name(ZC_OPTIM_SGD), "SGD") == 0);
    CHECK(strcmp(zc_optim_name(ZC_OPTIM_ADAMW8BIT), "AdamW8bit") == 0);
    {
        /* AdamW8bit by name (any case); decoupled only; its moments may go to NVMe */
        zc_config c8;
        zc_err e8 = {0};
        CHECK(load(&c8, "{\"optimizer\": {\"type\": \"adamw8BIT\"}}", &e8) == ZC_OK &&
              c8.optim == ZC_OPTIM_ADAMW8BIT);
        CHECK(load(&c8,
                   "{\"optimizer\": {\"type\": \"AdamW8bit\", \"params\": {\"adam_w_mode\": "
                   "false}}}",
                   &e8) == ZC_OK &&
              zc_config_validate(&c8, 1, &e8) == ZC_EINVAL &&
              strstr(e8.msg, "adam_w_mode is false but optimizer.type is AdamW8bit"));
        CHECK(load(&c8,
                   "{\"optimizer\": {\"type\": \"AdamW8bit\"}, \"zero_optimization\": "
                   "{\"stage\": 2, \"offload_optimizer\": {\"device\": \"nvme\", "
                   "\"nvme_path\": \"/tmp\"}}}",
                   &e8) == ZC_OK &&
              zc_config_validate(&c8, 1, &e8) == ZC_OK);
    }

    CHECK(strcmp(zc_dtype_name(ZC_FP32), "fp32") == 0);
    CHECK(strcmp(zc_dtype_name(ZC_BF16), "bf16") == 0);
    CHECK(strcmp(zc_dtype_name(ZC_FP16), "fp16") == 0);
    CHECK(strcmp(zc_dtype_name(ZC_DTYPE_DEFAULT), "default") == 0);
    CHECK(strcmp(zc_dtype_name((zc_dtype)7), "unknown") == 0);
    CHECK(zc_dtype_size(ZC_FP32) == 4 && zc_dtype_size(ZC_BF16) == 2 &&
          zc_dtype_size(ZC_FP16) == 2);
    CHECK(zc_dtype_size(ZC_DTYPE_DEFAULT) == 0);

    /* an empty object changes nothing */
    zc_config d;
    CHECK(load(&d, "{}", &err) == ZC_OK);
    CHECK(same_values(&c, &d) && !d.micro_batch_set);
}

static const char FULL[] = "{\n"
                           "  \"train_batch_size\": 32,\n"
                           "  \"train_micro_batch_size_per_gpu\": 4,\n"
                           "  \"gradient_accumulation_steps\": 2,\n"
                           "  \"gradient_clipping\": 1.0,\n"
                           "  \"steps_per_print\": 100,\n"
                           "  \"seed\": 18446744073709551615,\n"
                           "  \"comm_timeout_s\": 30.5,\n"
                           "  \"optimizer\": {\n"
                           "    \"type\": \"adam\",\n"
                           "    \"params\": {\n"
                           "      \"lr\": 3e-4,\n"
                           "      \"betas\": [0.8, 0.95],\n"
                           "      \"eps\": 1e-6,\n"
                           "      \"weight_decay\": 0.01,\n"
                           "      \"adam_w_mode\": false,\n"
                           "      \"torch_adam\": true,\n"
                           "      \"amsgrad\": false,\n"
                           "      \"bias_correction\": true\n"
                           "    }\n"
                           "  },\n"
                           "  \"zero_optimization\": {\n"
                           "    \"stage\": 3,\n"
                           "    \"reduce_bucket_size\": 5e8,\n"
                           "    \"stage3_prefetch_bucket_size\": 0,\n"
                           "    \"stage3_max_live_parameters\": 1e9,\n"
                           "    \"overlap_comm\": true,\n"
                           "    \"contiguous_gradients\": true\n"
                           "  }\n"
                           "}\n";

static void test_full_config_file(void)
{
    zc_config c;
    zc_err err = {0};
    char path[128];

    snprintf(path, sizeof path, "%s/ds_config.json", tmpdir);
    write_file(path, FULL, strlen(FULL));
    zc_config_defaults(&c);
    CHECK_MSG(zc_config_load_file(&c, path, &err) == ZC_OK, err.msg);
    CHECK(c.train_batch_size == 32);
    CHECK(c.micro_batch == 4 && c.micro_batch_set);
    CHECK(c.grad_accum == 2 && c.grad_accum_set);
    CHECK(c.grad_clip == 1.0);
    CHECK(c.steps_per_print == 100);
    CHECK(c.seed == UINT64_MAX);
    CHECK(c.comm_timeout_s == 30.5);
    CHECK(c.optim == ZC_OPTIM_ADAM);
    CHECK(c.lr == 3e-4);
    CHECK(c.beta1 == 0.8 && c.beta2 == 0.95);
    CHECK(c.eps == 1e-6);
    CHECK(c.weight_decay == 0.01);
    CHECK(!c.adam_w_mode);
    CHECK(c.stage == 3);
    CHECK(c.reduce_bucket_size == 500000000);
    CHECK(c.prefetch_bucket_size == 0);
    CHECK(c.max_live_parameters == 1000000000);
    CHECK(zc_config_validate(&c, 4, &err) == ZC_OK);
    CHECK(zc_config_validate(&c, 2, &err) == ZC_EINVAL);
    CHECK_ROUND_TRIP(&c);

    /* SGD with the DeepSpeed parameters that match what zeroc does */
    CHECK(load(&c,
               "{\"optimizer\": {\"type\": \"SGD\", \"params\": {\"lr\": 0.1, \"momentum\": 0.9,"
               " \"nesterov\": false, \"dampening\": 0, \"weight_decay\": 1e-4}}}",
               &err) == ZC_OK);
    CHECK(c.optim == ZC_OPTIM_SGD && c.lr == 0.1 && c.momentum == 0.9 && c.weight_decay == 1e-4);
    CHECK_ROUND_TRIP(&c);

    /* type is case-insensitive; a file overlays current values */
    zc_config_defaults(&c);
    c.stage = 2;
    CHECK(zc_config_load_string(&c, "{\"optimizer\": {\"type\": \"ADAMW\"}}", "x", &err) == ZC_OK);
    CHECK(c.optim == ZC_OPTIM_ADAMW && c.stage == 2);

    /* exact integers from their text */
    CHECK(load(&c, "{\"seed\": 9007199254740993}", &err) == ZC_OK);
    CHECK(c.seed == 9007199254740993ull); /* 2^53 + 1: a double would round it */
    CHECK(load(&c, "{\"seed\": 0}", &err) == ZC_OK && c.seed == 0);
    CHECK(load(&c, "{\"seed\": -0}", &err) == ZC_OK && c.seed == 0);
    CHECK(load(&c, "{\"seed\": 1.5e19}", &err) == ZC_OK && c.seed == 15000000000000000000ull);
    CHECK(load(&c, "{\"zero_optimization\": {\"reduce_bucket_size\": 2.5E+3}}", &err) == ZC_OK);
    CHECK(c.reduce_bucket_size == 2500);
    CHECK(load(&c, "{\"zero_optimization\": {\"stage\": 3.0}}", &err) == ZC_OK && c.stage == 3);
    CHECK(load(&c, "{\"zero_optimization\": {\"stage\": 20e-1}}", &err) == ZC_OK && c.stage == 2);
    CHECK(load(&c, "{\"train_batch_size\": 9223372036854775807}", &err) == ZC_OK);
    CHECK(c.train_batch_size == INT64_MAX);
    CHECK(load(&c, "{\"gradient_clipping\": 0}", &err) == ZC_OK && c.grad_clip == 0);
    CHECK(load(&c, "{\"optimizer\": {\"params\": {\"lr\": -0.0}}}", &err) == ZC_OK);
    CHECK(c.lr == 0 && !signbit(c.lr));
    /* a UTF-8 byte order mark and CRLF line ends are fine */
    CHECK(load(&c, "\xef\xbb\xbf{\r\n\"seed\": 5\r\n}\r\n", &err) == ZC_OK && c.seed == 5);
}

static void test_file_errors(void)
{
    zc_config c, before;
    zc_err err = {0};
    char path[128];

    zc_config_defaults(&c);
    before = c;
    snprintf(path, sizeof path, "%s/missing.json", tmpdir);
    CHECK(zc_config_load_file(&c, path, &err) == ZC_EIO);
    CHECK(err.code == ZC_EIO);
    CHECK(strstr(err.msg, "cannot read config file") != NULL);
    CHECK(strstr(err.msg, path) != NULL);
    CHECK(strstr(err.msg, "No such file or directory") != NULL);
    CHECK(same_config(&c, &before));

    /* a directory opens but does not read */
    CHECK(zc_config_load_file(&c, tmpdir, &err) == ZC_EIO);
    CHECK(strstr(err.msg, tmpdir) != NULL);

    static const char bad[] = "{\n  \"seed\": 1,\n  \"stage\" 3\n}\n";
    snprintf(path, sizeof path, "%s/bad.json", tmpdir);
    write_file(path, bad, strlen(bad));
    CHECK(zc_config_load_file(&c, path, &err) == ZC_EINVAL);
    CHECK(strncmp(err.msg, path, strlen(path)) == 0);
    CHECK(strstr(err.msg, "not JSON") != NULL);
    CHECK(strstr(err.msg, "line 3") != NULL);
    CHECK(strstr(err.msg, "3") != NULL);

    snprintf(path, sizeof path, "%s/empty.json", tmpdir);
    write_file(path, "", 0);
    CHECK(zc_config_load_file(&c, path, &err) == ZC_EINVAL);
    CHECK(strstr(err.msg, "not JSON (empty)") != NULL);

    snprintf(path, sizeof path, "%s/nul.json", tmpdir);
    write_file(path, "{}\0{\"seed\": 1}", 14);
    CHECK(zc_config_load_file(&c, path, &err) == ZC_EINVAL);
    CHECK(strstr(err.msg, "NUL byte at offset 2") != NULL);

    snprintf(path, sizeof path, "%s/list.json", tmpdir);
    write_file(path, "[1, 2]", 6);
    CHECK(zc_config_load_file(&c, path, &err) == ZC_EINVAL);
    CHECK(strstr(err.msg, "top level") != NULL && strstr(err.msg, "an array") != NULL);
    CHECK(same_config(&c, &before));
}

/* Loads a file of 200 unknown keys of zero_optimization named by key_fmt (from its %03d), then
 * `trailer` (more top-level members), and expects a refusal: *named counts the needle in the
 * message, *more the message's
 * "; and N more" (-1 without one); returns where that tail starts (NULL without one). */
static const char *many_unknown_keys(const char *key_fmt, const char *trailer, const char *needle,
                                     zc_err *err, int *named, int *more)
{
    char json[8192], key[64];
    size_t n = (size_t)snprintf(json, sizeof json, "{\"zero_optimization\": {");
    for (int i = 0; i < 200; i++) {
        snprintf(key, sizeof key, key_fmt, i);
        n += (size_t)snprintf(json + n, sizeof json - n, "%s\"%s\": 1", i ? ", " : "", key);
    }
    snprintf(json + n, sizeof json - n, "}%s}", trailer);
    zc_config c;
    CHECK(load(&c, json, err) == ZC_EINVAL);
    *named = 0;
    *more = -1;
    for (const char *p = err->msg; (p = strstr(p, needle)); p++)
        ++*named;
    const char *tail = strstr(err->msg, "; and ");
    if (tail && sscanf(tail, "; and %d more", more) != 1)
        *more = -1;
    return tail;
}

static void test_load_errors(void)
{
    /* syntax */
    EXPECT_LOAD_ERR("{\"seed\": 1,}", "not JSON", "line 1", NULL);
    EXPECT_LOAD_ERR("{\n\"seed\": 1\n}\nextra", "not JSON", "line 4", "'extra'");
    EXPECT_LOAD_ERR("{\"seed\": ", "not JSON", "line 1", NULL);
    EXPECT_LOAD_ERR("{\n  \"seed\": 1,\n  \"stage\":", "not JSON", "line 3, at the end",
                    "'  \"stage\":'");
    EXPECT_LOAD_ERR("  \n ", "not JSON (empty)", NULL, NULL);
    EXPECT_LOAD_ERR("// comment\n{}", "not JSON", NULL, NULL);
    EXPECT_LOAD_ERR("3", "top level", "got 3", NULL);
    EXPECT_LOAD_ERR("\"x\"", "top level", "got string \"x\"", NULL);

    /* unknown keys, with their full path; at the top level DeepSpeed reads only the keys it
     * knows, so an unknown one there is ignored, and named for the log */
    {
        zc_config c;
        zc_err err = {0};
        CHECK_MSG(load(&c,
                       "{\"foo\": 1, \"Seed\": 1, \"zero_optimization.stage\": 1, \"a\\nb\": 1, "
                       "\"cuda_visible_devices\": \"0,1\"}",
                       &err) == ZC_OK,
                  err.msg);
        CHECK_MSG(strcmp(c.ignored, "foo, Seed, zero_optimization.stage, a?b, "
                                    "cuda_visible_devices") == 0 &&
                      c.seed == 42 && c.stage == 0,
                  c.ignored);
        CHECK_ROUND_TRIP(&c);
    }
    EXPECT_LOAD_ERR("{\"zero_optimization\": {\"stagee\": 1}}",
                    "ds.json: unknown key: zero_optimization.stagee", NULL, NULL);
    EXPECT_LOAD_ERR("{\"optimizer\": {\"params\": {\"foo\": 1}}}",
                    "unknown key: optimizer.params.foo", NULL, NULL);
    EXPECT_LOAD_ERR("{\"optimizer\": {\"typ\": \"Adam\"}}", "unknown key: optimizer.typ", NULL,
                    NULL);
    EXPECT_LOAD_ERR("{\"zero_optimization\": {\"a\\nb\": 1}}", "unknown key: zero_optimization.a?b",
                    NULL, NULL);

    /* known to DeepSpeed, not implemented */
    EXPECT_LOAD_ERR("{\"amp\": {\"enabled\": false}}", "ds.json: not supported yet: amp", NULL,
                    NULL);
    {
        zc_config c2;
        zc_config_defaults(&c2);
        zc_err e2 = {0};
        /* keys set to what zeroc does anyway are accepted */
        CHECK_MSG(
            zc_config_load_string(&c2,
                                  "{\"wall_clock_breakdown\": false, \"zero_optimization\": "
                                  "{\"allgather_partitions\": true, \"reduce_scatter\": true}}",
                                  "ds.json", &e2) == ZC_OK,
            e2.msg);
        CHECK_MSG(zc_config_load_string(&c2, "{\"zero_optimization\": {\"reduce_scatter\": false}}",
                                        "ds.json", &e2) == ZC_EINVAL &&
                      strstr(e2.msg, "zero_optimization.reduce_scatter"),
                  e2.msg);
    }
    /* DeepSpeed's deprecated cpu_offload / cpu_offload_param: offload sections of device cpu */
    {
        zc_config c;
        zc_err err = {0};
        CHECK_MSG(load(&c,
                       "{\"zero_optimization\": {\"stage\": 3, \"cpu_offload\": true, "
                       "\"cpu_offload_param\": true, \"cpu_offload_use_pin_memory\": true}}",
                       &err) == ZC_OK &&
                      c.offload_optimizer == ZC_OFFLOAD_CPU && c.offload_param == ZC_OFFLOAD_CPU,
                  err.msg);
        CHECK_MSG(strstr(c.no_effect, "zero_optimization.cpu_offload_use_pin_memory (deprecated"),
                  c.no_effect);
        CHECK(load(&c, "{\"zero_optimization\": {\"cpu_offload\": false}}", &err) == ZC_OK &&
              c.offload_optimizer == ZC_OFFLOAD_NONE);
        EXPECT_SET_OK(&c, "zero_optimization.cpu_offload", "true");
        CHECK(c.offload_optimizer == ZC_OFFLOAD_CPU);
    }
    /* beside the section it replaces: DeepSpeed refuses the two together */
    EXPECT_LOAD_ERR("{\"zero_optimization\": {\"offload_optimizer\": {\"device\": \"nvme\"}, "
                    "\"cpu_offload\": false}}",
                    "duplicate key: zero_optimization.cpu_offload",
                    "another name for zero_optimization.offload_optimizer", NULL);
    EXPECT_LOAD_ERR("{\"zero_optimization\": {\"cpu_offload_param\": true, \"offload_param\": "
                    "{\"device\": \"cpu\"}}}",
                    "duplicate key: zero_optimization.offload_param", NULL, NULL);
    /* real DeepSpeed keys, not typos: refused when they would change what runs */
    EXPECT_LOAD_ERR("{\"load_universal_checkpoint\": true}",
                    "not supported yet: load_universal_checkpoint = true", NULL, NULL);
    EXPECT_LOAD_ERR("{\"zero_optimization\": {\"zeropp_loco_param\": {\"err_beta\": 0.8, "
                    "\"reset_T\": 1024}}}",
                    "not supported yet: zero_optimization.zeropp_loco_param", NULL, NULL);
    EXPECT_LOAD_ERR("{\"timers\": {\"throughput\": {\"enabled\": 1}}}",
                    "timers.throughput.enabled: expected true or false", NULL, NULL);
    EXPECT_LOAD_ERR("{\"timers\": {\"throughput\": {\"enable\": true}}}",
                    "unknown key: timers.throughput.enable", NULL, NULL);
    {
        zc_config c2;
        zc_err e2 = {0};
        CHECK_MSG(load(&c2,
                       "{\"load_universal_checkpoint\": false, \"timers\": {\"throughput\": "
                       "{\"enabled\": true, \"synchronized\": false}}}",
                       &e2) == ZC_OK,
                  e2.msg);
        CHECK_MSG(strstr(c2.no_effect, "timers.throughput.enabled (") &&
                      strstr(c2.no_effect, "timers.throughput.synchronized ("),
                  c2.no_effect);
        EXPECT_SET_ERR("load_universal_checkpoint", "true",
                       "not supported yet: load_universal_checkpoint = true", NULL);
        EXPECT_SET_ERR("zero_optimization.zeropp_loco_param", "1",
                       "not supported yet: zero_optimization.zeropp_loco_param", NULL);
    }
    /* DeepSpeed knobs that change nothing here: accepted, validated, listed for the log */
    {
        zc_config c2;
        zc_err e2 = {0};
        zc_config_defaults(&c2);
        CHECK_MSG(zc_config_load_string(&c2,
                                        "{\"zero_optimization\": {\"allgather_bucket_size\": 5e8, "
                                        "\"stage3_max_reuse_distance\": 1e9, "
                                        "\"stage3_gather_16bit_weights_on_model_save\": true, "
                                        "\"stage3_gather_fp16_weights_on_model_save\": false}, "
                                        "\"zero_allow_untested_optimizer\": true}",
                                        "ds.json", &e2) == ZC_OK,
                  e2.msg);
        const char *keys[] = {"zero_optimization.allgather_bucket_size (",
                              "zero_optimization.stage3_max_reuse_distance (",
                              "zero_optimization.stage3_gather_16bit_weights_on_model_save (",
                              "zero_optimization.stage3_gather_fp16_weights_on_model_save (",
                              "zero_allow_untested_optimizer ("};
        for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
            CHECK_MSG(strstr(c2.no_effect, keys[i]) != NULL, c2.no_effect);
        zc_config c3;
        zc_config_defaults(&c3);
        CHECK_MSG(c3.no_effect[0] == 0, c3.no_effect);
    }
    EXPECT_LOAD_ERR("{\"zero_optimization\": {\"allgather_bucket_size\": -1}}",
                    "zero_optimization.allgather_bucket_size must be >= 0, got -1", NULL, NULL);
    EXPECT_LOAD_ERR("{\"zero_allow_untested_optimizer\": 1}",
                    "zero_allow_untested_optimizer: expected true or false", NULL, NULL);
    EXPECT_LOAD_ERR("{\"optimizer\": {\"params\": {\"amsgrad\": true}}}",
                    "not supported yet: optimizer.params.amsgrad = true", NULL, NULL);
    {
        zc_config c2;
        zc_err e2 = {0};
        CHECK(load(&c2, "{\"optimizer\": {\"params\": {\"bias_correction\": false}}}", &e2) ==
                  ZC_OK &&
              !c2.bias_correction);
        CHECK_ROUND_TRIP(&c2);
    }
    EXPECT_LOAD_ERR("{\"optimizer\": {\"params\": {\"bias_correction\": 0}}}",
                    "optimizer.params.bias_correction: expected true or false", NULL, NULL);
    EXPECT_LOAD_ERR("{\"optimizer\": {\"params\": {\"nesterov\": true}}}",
                    "not supported yet: optimizer.params.nesterov = true", NULL, NULL);
    EXPECT_LOAD_ERR("{\"optimizer\": {\"params\": {\"dampening\": 0.1}}}",
                    "not supported yet: optimizer.params.dampening = 0.1", NULL, NULL);
    EXPECT_LOAD_ERR("{\"optimizer\": {\"params\": {\"amsgrad\": 0}}}",
                    "optimizer.params.amsgrad: expected true or false, got 0", NULL, NULL);
    EXPECT_LOAD_ERR("{\"optimizer\": {\"params\": {\"torch_adam\": \"yes\"}}}",
                    "optimizer.params.torch_adam: expected true or false", "string \"yes\"", NULL);

    /* always-on behaviour */
    EXPECT_LOAD_ERR("{\"zero_optimization\": {\"overlap_comm\": 0}}",
                    "zero_optimization.overlap_comm: expected true or false", "got 0", NULL);
    EXPECT_LOAD_ERR("{\"zero_optimization\": {\"contiguous_gradients\": false}}",
                    "zero_optimization.contiguous_gradients: false is not supported", "contiguous",
                    NULL);

    /* ranges, with the value as written */
    EXPECT_LOAD_ERR("{\"optimizer\": {\"params\": {\"lr\": -0.001}}}",
                    "ds.json: optimizer.params.lr must be >= 0, got -0.001", NULL, NULL);
    EXPECT_LOAD_ERR("{\"zero_optimization\": {\"stage\": 4}}",
                    "ds.json: zero_optimization.stage: expected an integer 0..3, got 4", NULL,
                    NULL);
    EXPECT_LOAD_ERR("{\"zero_optimization\": {\"stage\": -1}}", "zero_optimization.stage",
                    "0..3, got -1", NULL);
    EXPECT_LOAD_ERR("{\"zero_optimization\": {\"stage\": 2.5}}",
                    "zero_optimization.stage: expected an integer 0..3, got 2.5", NULL, NULL);
    EXPECT_LOAD_ERR("{\"zero_optimization\": {\"stage\": \"3\"}}", "zero_optimization.stage",
                    "got string \"3\"", NULL);
    EXPECT_LOAD_ERR("{\"optimizer\": {\"params\": {\"lr\": \"abc\"}}}",
                    "ds.json: optimizer.params.lr: expected a number", "got string \"abc\"", NULL);
    EXPECT_LOAD_ERR("{\"optimizer\": {\"params\": {\"lr\": null}}}", "optimizer.params.lr",
                    "got null", NULL);
    EXPECT_LOAD_ERR("{\"optimizer\": {\"params\": {\"lr\": 1e999}}}", "optimizer.params.lr",
                    "finite", "1e999");
    EXPECT_LOAD_ERR("{\"optimizer\": {\"params\": {\"eps\": 0}}}",
                    "optimizer.params.eps must be >= 1.17549e-38, got 0", NULL, NULL);
    /* above a range: the message states the upper bound (it said ">= 0" of 3.5e38) */
    EXPECT_LOAD_ERR("{\"fp16\": {\"loss_scale\": 3.5e38}}",
                    "fp16.loss_scale must be <= 3.40282e+38, got 3.5e38", NULL, NULL);
    EXPECT_LOAD_ERR("{\"fp16\": {\"min_loss_scale\": 1e39}}",
                    "fp16.min_loss_scale must be <= 3.40282e+38, got 1e39", NULL, NULL);
    /* every refused key of a file in the one message, however long the list (it was cut at
     * 511 bytes, mid-word) */
    EXPECT_LOAD_ERR(
        "{\"zero_optimization\": {\"cpu_offload\": false, \"cpu_offload_params\": "
        "false, \"cpu_offload_use_pin_memory\": false, \"round_robin_gradients\": "
        "false, \"elastic_checkpoint\": false, \"load_from_fp32_weights\": false, "
        "\"ignore_unused_parameters\": false, \"mics_shard_size\": -1, "
        "\"mics_hierarchical_params_gather\": false, "
        "\"zero_quantized_nontrainable_weights\": false, \"legacy_stage1\": false, "
        "\"memory_efficient_linear\": false, "
        "\"use_multi_rank_bucket_allreduce\": false, \"zeropp_loco_param\": null}}",
        "ds.json: unknown key: zero_optimization.cpu_offload_params; not supported yet: "
        "zero_optimization.elastic_checkpoint; "
        "zero_optimization.load_from_fp32_weights; ",
        "zero_optimization.zeropp_loco_param", NULL);
    /* DeepSpeed's GPU-only ZeRO knobs and its off values: accepted, named once in the log */
    {
        zc_config c;
        zc_err err = {0};
        CHECK_MSG(load(&c,
                       "{\"zero_optimization\": {\"round_robin_gradients\": true, "
                       "\"ignore_unused_parameters\": true, \"mics_shard_size\": -1, "
                       "\"mics_hierarchical_params_gather\": false, "
                       "\"zero_quantized_nontrainable_weights\": false, \"legacy_stage1\": "
                       "false, \"memory_efficient_linear\": true, "
                       "\"use_multi_rank_bucket_allreduce\": true, "
                       "\"log_trace_cache_warnings\": false, \"override_module_apply\": true}}",
                       &err) == ZC_OK,
                  err.msg);
        CHECK_MSG(strstr(c.no_effect, "zero_optimization.round_robin_gradients (a GPU knob") &&
                      strstr(c.no_effect, "zero_optimization.memory_efficient_linear (") &&
                      strstr(c.no_effect, "zero_optimization.use_multi_rank_bucket_allreduce ("),
                  c.no_effect);
    }
    EXPECT_LOAD_ERR("{\"zero_optimization\": {\"mics_shard_size\": 2, \"legacy_stage1\": true}}",
                    "not supported yet: zero_optimization.mics_shard_size = 2 (",
                    "zero_optimization.legacy_stage1 = true (", NULL);
    /* a double denormal, and a float one: both would be 0 in the update (denormals flushed) */
    EXPECT_LOAD_ERR("{\"optimizer\": {\"params\": {\"eps\": 1e-320}}}",
                    "optimizer.params.eps must be >= 1.17549e-38, got 1e-320", NULL, NULL);
    EXPECT_LOAD_ERR("{\"optimizer\": {\"params\": {\"eps\": 1e-40}}}",
                    "optimizer.params.eps must be >= 1.17549e-38, got 1e-40", NULL, NULL);
    EXPECT_LOAD_ERR("{\"optimizer\": {\"params\": {\"weight_decay\": -1}}}",
                    "optimizer.params.weight_decay must be >= 0, got -1", NULL, NULL);
    EXPECT_LOAD_ERR("{\"optimizer\": {\"params\": {\"momentum\": 1}}}",
                    "optimizer.params.momentum: expected a number in [0, 1), got 1", NULL, NULL);
    EXPECT_LOAD_ERR("{\"optimizer\": {\"params\": {\"adam_w_mode\": 1}}}",
                    "optimizer.params.adam_w_mode: expected true or false, got 1", NULL, NULL);
    EXPECT_LOAD_ERR("{\"optimizer\": {\"params\": {\"betas\": [0.9]}}}",
                    "optimizer.params.betas: expected an array of 2 numbers", "got 1 element",
                    NULL);
    EXPECT_LOAD_ERR("{\"optimizer\": {\"params\": {\"betas\": [0.9, 0.99, 0.999]}}}",
                    "optimizer.params.betas", "got 3 elements", NULL);
    EXPECT_LOAD_ERR("{\"optimizer\": {\"params\": {\"betas\": [0.9, 1.0]}}}",
                    "optimizer.params.betas[1]: expected a number in [0, 1), got 1.0", NULL, NULL);
    EXPECT_LOAD_ERR("{\"optimizer\": {\"params\": {\"betas\": [-0.1, 0.9]}}}",
                    "optimizer.params.betas[0]", "got -0.1", NULL);
    EXPECT_LOAD_ERR("{\"optimizer\": {\"params\": {\"betas\": [\"a\", 0.9]}}}",
                    "optimizer.params.betas[0]", "got string \"a\"", NULL);
    EXPECT_LOAD_ERR("{\"optimizer\": {\"params\": {\"betas\": 0.9}}}", "optimizer.params.betas",
                    "got 0.9", NULL);
    EXPECT_LOAD_ERR("{\"train_batch_size\": 0}", "train_batch_size must be >= 1, got 0", NULL,
                    NULL);
    EXPECT_LOAD_ERR("{\"train_batch_size\": 9223372036854775808}", "train_batch_size",
                    "<= 9223372036854775807", "got 9223372036854775808");
    EXPECT_LOAD_ERR("{\"train_micro_batch_size_per_gpu\": 3e9}",
                    "train_micro_batch_size_per_gpu must be <= 2147483647, got 3e9", NULL, NULL);
    /* "auto" (the Hugging Face Trainer's placeholder): zeroc's default, unless a flag sets it */
    {
        zc_config a, d;
        zc_err e = {0};
        zc_config_defaults(&a);
        zc_config_defaults(&d);
        CHECK_MSG(zc_config_load_string(
                      &a,
                      "{\"train_batch_size\": \"auto\", \"train_micro_batch_size_per_gpu\": "
                      "\"auto\", \"gradient_accumulation_steps\": \"auto\", "
                      "\"gradient_clipping\": \"auto\", \"optimizer\": {\"type\": \"AdamW\", "
                      "\"params\": {\"lr\": \"auto\", \"betas\": \"auto\", \"eps\": \"auto\", "
                      "\"weight_decay\": \"auto\"}}, \"fp16\": {\"enabled\": \"auto\"}, "
                      "\"bf16\": {\"enabled\": \"auto\"}, \"zero_optimization\": {\"stage\": 3, "
                      "\"reduce_bucket_size\": \"auto\", \"stage3_prefetch_bucket_size\": "
                      "\"auto\", \"stage3_param_persistence_threshold\": \"auto\"}}",
                      "hf.json", &e) == ZC_OK,
                  e.msg);
        CHECK(a.train_batch_size == d.train_batch_size && a.micro_batch == d.micro_batch &&
              !a.micro_batch_set && a.grad_accum == d.grad_accum && a.lr == d.lr &&
              a.beta1 == d.beta1 && a.beta2 == d.beta2 && a.eps == d.eps &&
              a.weight_decay == d.weight_decay && a.grad_clip == d.grad_clip &&
              a.dtype == ZC_FP32 && a.reduce_bucket_size == d.reduce_bucket_size &&
              a.prefetch_bucket_size == ZC_AUTO && a.param_persistence_threshold == ZC_AUTO &&
              a.stage == 3);
        CHECK_MSG(strstr(a.auto_keys, "train_micro_batch_size_per_gpu") &&
                      strstr(a.auto_keys, "optimizer.params.lr") &&
                      strstr(a.auto_keys, "bf16.enabled") &&
                      strstr(a.auto_keys, "zero_optimization.reduce_bucket_size") &&
                      !strstr(a.auto_keys, "stage3_prefetch_bucket_size"),
                  a.auto_keys);
        /* a flag applied after the file gives the value */
        CHECK_MSG(zc_config_set(&a, "optimizer.params.lr", "0.0003", &e) == ZC_OK && a.lr == 3e-4,
                  e.msg);
        /* "auto" from the command line is not a placeholder: refused like any other word */
        CHECK(zc_config_set(&a, "optimizer.params.lr", "auto", &e) == ZC_EINVAL);
    }
    EXPECT_LOAD_ERR("{\"gradient_accumulation_steps\": 0}", "gradient_accumulation_steps",
                    ">= 1, got 0", NULL);
    EXPECT_LOAD_ERR("{\"gradient_clipping\": -1}", "gradient_clipping must be >= 0, got -1", NULL,
                    NULL);
    EXPECT_LOAD_ERR("{\"steps_per_print\": 0}", "steps_per_print must be >= 1, got 0", NULL, NULL);
    EXPECT_LOAD_ERR("{\"comm_timeout_s\": 0}", "comm_timeout_s must be > 0, got 0", NULL, NULL);
    EXPECT_LOAD_ERR("{\"comm_timeout_s\": true}", "comm_timeout_s: expected a number > 0",
                    "got true", NULL);
    EXPECT_LOAD_ERR("{\"seed\": -1}", "seed: expected an integer 0..18446744073709551615", "got -1",
                    NULL);
    EXPECT_LOAD_ERR("{\"seed\": 1.5}", "seed: expected an integer", "got 1.5", NULL);
    EXPECT_LOAD_ERR("{\"seed\": 18446744073709551616}", "seed", "got 18446744073709551616", NULL);
    EXPECT_LOAD_ERR("{\"seed\": 1e-3}", "seed", "got 1e-3", NULL);
    EXPECT_LOAD_ERR("{\"zero_optimization\": {\"reduce_bucket_size\": -1}}",
                    "zero_optimization.reduce_bucket_size must be >= 0, got -1", NULL, NULL);
    EXPECT_LOAD_ERR("{\"zero_optimization\": {\"reduce_bucket_size\": 1.5}}",
                    "zero_optimization.reduce_bucket_size: expected an integer >= 0, got 1.5", NULL,
                    NULL);
    EXPECT_LOAD_ERR("{\"zero_optimization\": {\"stage3_prefetch_bucket_size\": -1}}",
                    "zero_optimization.stage3_prefetch_bucket_size must be >= 0, got -1", NULL,
                    NULL);
    EXPECT_LOAD_ERR("{\"zero_optimization\": {\"stage3_max_live_parameters\": 0}}",
                    "zero_optimization.stage3_max_live_parameters must be >= 1", NULL, NULL);

    /* optimizer type and sections */
    EXPECT_LOAD_ERR("{\"optimizer\": {\"type\": \"Lamb\"}}", "optimizer.type", "AdamW, Adam, SGD",
                    "\"Lamb\"");
    EXPECT_LOAD_ERR("{\"optimizer\": {\"type\": 1}}", "optimizer.type", "got 1", NULL);
    EXPECT_LOAD_ERR("{\"optimizer\": \"adam\"}", "optimizer: expected an object",
                    "got string \"adam\"", NULL);
    EXPECT_LOAD_ERR("{\"zero_optimization\": 1}", "zero_optimization: expected an object", "got 1",
                    NULL);
    EXPECT_LOAD_ERR("{\"optimizer\": {\"params\": [1]}}", "optimizer.params: expected an object",
                    "got an array", NULL);

    /* \u0000 in a key or string: cJSON's C string would end there ("seed", "SGD") */
    EXPECT_LOAD_ERR("{\"seed\\u0000x\": 5}", "ds.json: seed\\u0000x: a key", "\\u0000", NULL);
    EXPECT_LOAD_ERR("{\"optimizer\": {\"type\": \"SGD\\u0000 junk\", \"params\": {\"lr\": 0.1}}}",
                    "ds.json: optimizer.type: a string", "\\u0000", NULL);
    EXPECT_LOAD_ERR(
        "{\"zero_optimization\": {\"offload_param\": {\"nvme_path\": \"/a\\u0000/b\"}}}",
        "zero_optimization.offload_param.nvme_path: a string", "\\u0000", NULL);
    EXPECT_LOAD_ERR("{\"zero_optimization\": {\"st\\u0000age\": 3}}",
                    "zero_optimization.st\\u0000age: a key", "\\u0000", NULL);
    {
        zc_config c2;
        zc_err e2 = {0};
        /* an escaped backslash before u0000 is no NUL */
        CHECK_MSG(load(&c2,
                       "{\"zero_optimization\": {\"offload_param\": {\"nvme_path\": "
                       "\"/a\\\\u0000\"}}}",
                       &e2) == ZC_OK &&
                      strcmp(c2.param_nvme_path, "/a\\u0000") == 0,
                  e2.msg);
    }

    /* duplicates */
    EXPECT_LOAD_ERR("{\"seed\": 1, \"seed\": 2}", "duplicate key: seed", NULL, NULL);
    EXPECT_LOAD_ERR("{\"zero_optimization\": {\"stage\": 1, \"stage\": 2}}",
                    "duplicate key: zero_optimization.stage", NULL, NULL);
    EXPECT_LOAD_ERR("{\"optimizer\": {}, \"optimizer\": {}}", "duplicate key: optimizer", NULL,
                    NULL);

    /* every refusal of a file in one message: the problems in document order, then what zeroc
     * lacks, so that one edit makes the file run; nothing is committed (checked inside) */
    EXPECT_LOAD_ERR("{\"seed\": 3, \"zero_optimization\": {\"stage\": 9}, \"amp\": {}}",
                    "ds.json: zero_optimization.stage: expected an integer 0..3, got 9; "
                    "not supported yet: amp",
                    NULL, NULL);
    {
        static const struct {
            const char *json, *msg;
        } all[] = {
            /* it named only zero_optimization.stagee */
            {"{\"zero_optimization\":{\"stage\":2,\"stagee\":1,\"foo\":2},\"bar\":1,"
             "\"amp\":{\"enabled\":true}}",
             "ds.json: unknown key: zero_optimization.stagee; unknown key: zero_optimization.foo; "
             "not supported yet: amp"},
            /* DeepSpeedExamples' training/cifar/ds_config.json with bf16: it named only
             * bf16.loss_scale, a key DeepSpeed ignores (accepted now) */
            {"{\"train_batch_size\": 16, \"steps_per_print\": 250, \"optimizer\": {\"type\": "
             "\"Adam\", \"params\": {\"lr\": 0.001, \"betas\": [0.8, 0.999], \"eps\": 1e-8, "
             "\"weight_decay\": 3e-7}}, \"scheduler\": {\"type\": \"WarmupLR\", \"params\": "
             "{\"warmup_min_lr\": 0, \"warmup_max_lr\": 0.001, \"warmup_num_steps\": 1000}}, "
             "\"gradient_clipping\": 1.0, \"prescale_gradients\": false, \"bf16\": "
             "{\"enabled\": true, \"bf16_master_weights_and_grads\": false, \"loss_scale\": 0, "
             "\"loss_scale_window\": 500, \"hysteresis\": 2, \"min_loss_scale\": 1, "
             "\"initial_scale_power\": 15}, \"fp16\": {\"enabled\": false, "
             "\"fp16_master_weights_and_grads\": false, \"loss_scale\": 0, "
             "\"loss_scale_window\": 500, \"hysteresis\": 2, \"min_loss_scale\": 1, "
             "\"initial_scale_power\": 15}, \"wall_clock_breakdown\": false, "
             "\"zero_optimization\": {\"stage\": 0, \"allgather_partitions\": true, "
             "\"reduce_scatter\": true, \"allgather_bucket_size\": 50000000, "
             "\"reduce_bucket_size\": 50000000, \"overlap_comm\": true, "
             "\"contiguous_gradients\": true, \"cpu_offload\": false}, \"tensorboard\": true}",
             "ds.json: tensorboard: expected an object, got true"},
            /* bad values, a duplicate, a section of the wrong type and a rule between keys, each
             * named; the members of a refused section are not read */
            {"{\"seed\": -1, \"optimizer\": 5, \"zero_optimization\": {\"stage\": \"x\", "
             "\"stage\": 1}, \"scheduler\": {\"params\": {\"warmup_num_steps\": -2}}, "
             "\"fp16\": {\"enabled\": 1, \"foo\": 1}, \"tensorboard\": {}}",
             "ds.json: seed: expected an integer 0..18446744073709551615, got -1; "
             "optimizer: expected an object, got 5; "
             "zero_optimization.stage: expected an integer 0..3, got string \"x\"; "
             "duplicate key: zero_optimization.stage; scheduler.params.warmup_num_steps must be "
             ">= 0, got -2; fp16.enabled: expected true or false, got 1; unknown key: fp16.foo; "
             "scheduler.type: required (WarmupLR, WarmupDecayLR, WarmupCosineLR, OneCycle or "
             "LRRangeTest)"},
        };
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
            zc_config c, before;
            zc_err err = {0};
            zc_config_defaults(&c);
            before = c;
            CHECK_MSG(zc_config_load_string(&c, all[i].json, "ds.json", &err) == ZC_EINVAL &&
                          strcmp(err.msg, all[i].msg) == 0,
                      err.msg);
            CHECK(same_config(&c, &before));
        }
        /* the cifar file once its three keys are removed: runs, naming what changes nothing */
        zc_config c;
        zc_err err = {0};
        /* the cifar file as written: runs (its master-weights keys false are what zeroc does,
         * cpu_offload false is no offload) */
        CHECK_MSG(load(&c, all[1].json, &err) == ZC_EINVAL, err.msg);
        {
            char cifar[2048];
            snprintf(cifar, sizeof cifar, "%.*s}",
                     (int)(strstr(all[1].json, ", \"tensorboard\"") - all[1].json), all[1].json);
            CHECK_MSG(load(&c, cifar, &err) == ZC_OK && c.offload_optimizer == ZC_OFFLOAD_NONE,
                      err.msg);
        }
        CHECK_MSG(load(&c,
                       "{\"bf16\": {\"enabled\": true, \"loss_scale\": 0, "
                       "\"loss_scale_window\": 500, \"hysteresis\": 2, \"min_loss_scale\": 1, "
                       "\"initial_scale_power\": 15}, \"zero_optimization\": {\"stage\": 0, "
                       "\"allgather_bucket_size\": 50000000}}",
                       &err) == ZC_OK,
                  err.msg);
        CHECK_MSG(strstr(c.no_effect, "bf16.loss_scale (") &&
                      strstr(c.no_effect, "bf16.initial_scale_power (") &&
                      strstr(c.no_effect, "zero_optimization.allgather_bucket_size ("),
                  c.no_effect);
    }
    /* more refusals than a message holds: whole ones, then how many more */
    {
        zc_err err = {0};
        int named, more;
        const char *tail =
            many_unknown_keys("unknown_%03d", ", \"amp\": {}",
                              "unknown key: zero_optimization.unknown_", &err, &named, &more);
        CHECK_MSG(tail && more >= 0 && strcmp(tail + strlen(tail) - 5, " more") == 0, err.msg);
        CHECK_MSG(named > 10 && named + more == 201 && !strstr(err.msg, "amp") &&
                      strlen(err.msg) < sizeof err.msg - 1 &&
                      strncmp(err.msg,
                              "ds.json: unknown key: zero_optimization.unknown_000; unknown key: "
                              "zero_optimization.unknown_001; ",
                              84) == 0,
                  err.msg);
    }

    /* keys that hold "; " themselves: the count of the ones left out is still exact, and no
     * key is cut in the middle (the cut was at the message's last ';') */
    {
        zc_err err = {0};
        int named, more;
        const char *tail = many_unknown_keys("k%03d; tail", "", "unknown key: zero_optimization.k",
                                             &err, &named, &more);
        CHECK_MSG(tail && more >= 0 && named + more == 200 && !strncmp(tail - 5, " tail", 5),
                  err.msg);
    }

    /* very long keys and values are cut in messages */
    {
        char json[1200], key[1001];
        memset(key, 'k', 1000);
        key[1000] = '\0';
        snprintf(json, sizeof json, "{\"optimizer\": {\"%s\": 1}}", key);
        EXPECT_LOAD_ERR(json, "unknown key: optimizer.kkkk", "...", NULL);
    }

    /* origin defaults to "config" */
    {
        zc_config c;
        zc_err err = {0};
        zc_config_defaults(&c);
        CHECK(zc_config_load_string(&c, "{\"optimizer\": {\"x\": 1}}", NULL, &err) == ZC_EINVAL);
        CHECK(strcmp(err.msg, "config: unknown key: optimizer.x") == 0);
        CHECK(zc_config_load_string(&c, "{\"optimizer\": {\"x\": 1}}", "ds.json", NULL) ==
              ZC_EINVAL); /* NULL err */
    }
}

static void test_set(void)
{
    zc_config c;
    zc_config_defaults(&c);

    EXPECT_SET_OK(&c, "zero_optimization.stage", "3");
    CHECK(c.stage == 3);
    EXPECT_SET_OK(&c, "optimizer.params.lr", "1e-4");
    CHECK(c.lr == 1e-4);
    EXPECT_SET_OK(&c, "optimizer.params.lr", ".5");
    CHECK(c.lr == 0.5);
    EXPECT_SET_OK(&c, "optimizer.params.betas", "0.9,0.95");
    CHECK(c.beta1 == 0.9 && c.beta2 == 0.95);
    EXPECT_SET_OK(&c, "optimizer.params.betas", "0.8 , 0.9");
    CHECK(c.beta1 == 0.8 && c.beta2 == 0.9);
    EXPECT_SET_OK(&c, "optimizer.type", "sgd");
    CHECK(c.optim == ZC_OPTIM_SGD);
    EXPECT_SET_OK(&c, "optimizer.params.momentum", "0.9");
    CHECK(c.momentum == 0.9);
    EXPECT_SET_OK(&c, "optimizer.params.adam_w_mode", "false");
    CHECK(!c.adam_w_mode);
    EXPECT_SET_OK(&c, "optimizer.params.adam_w_mode", "true");
    CHECK(c.adam_w_mode);
    EXPECT_SET_OK(&c, "seed", "18446744073709551615");
    CHECK(c.seed == UINT64_MAX);
    EXPECT_SET_OK(&c, "seed", "+7");
    CHECK(c.seed == 7);
    CHECK(!c.micro_batch_set);
    EXPECT_SET_OK(&c, "train_micro_batch_size_per_gpu", "8");
    CHECK(c.micro_batch == 8 && c.micro_batch_set && !c.grad_accum_set);
    EXPECT_SET_OK(&c, "gradient_accumulation_steps", "4");
    CHECK(c.grad_accum == 4 && c.grad_accum_set);
    EXPECT_SET_OK(&c, "gradient_clipping", "1.0");
    CHECK(c.grad_clip == 1.0);
    EXPECT_SET_OK(&c, "comm_timeout_s", "2.5");
    CHECK(c.comm_timeout_s == 2.5);
    EXPECT_SET_OK(&c, "zero_optimization.reduce_bucket_size", "5e8");
    CHECK(c.reduce_bucket_size == 500000000);
    EXPECT_SET_OK(&c, "train_batch_size", "64");
    CHECK(c.train_batch_size == 64);
    EXPECT_SET_OK(&c, "zero_optimization.overlap_comm", "true");
    EXPECT_SET_OK(&c, "optimizer.params.dampening", "0");
    EXPECT_SET_OK(&c, "optimizer.params.torch_adam", "false");

    EXPECT_SET_ERR("zero_optimization.stage", "x",
                   "command line: zero_optimization.stage: expected an integer 0..3, got \"x\"",
                   NULL);
    EXPECT_SET_ERR("zero_optimization.stage", "4", "zero_optimization.stage", "got 4");
    EXPECT_SET_ERR("zero_optimization.stage", "", "zero_optimization.stage", "got \"\"");
    EXPECT_SET_ERR("zero_optimization.stage", "3 ", "zero_optimization.stage", "got \"3 \"");
    EXPECT_SET_ERR("zero_optimization.stage", " 3", "zero_optimization.stage", NULL);
    EXPECT_SET_ERR("zero_optimization.stage", "1.5", "expected an integer 0..3", "\"1.5\"");
    EXPECT_SET_ERR("optimizer.params.lr", "1e-3x", "optimizer.params.lr: expected a number",
                   "\"1e-3x\"");
    EXPECT_SET_ERR("optimizer.params.lr", "nan", "optimizer.params.lr", "\"nan\"");
    EXPECT_SET_ERR("optimizer.params.lr", "inf", "optimizer.params.lr", "\"inf\"");
    EXPECT_SET_ERR("optimizer.params.lr", "0x10", "optimizer.params.lr", "\"0x10\"");
    EXPECT_SET_ERR("optimizer.params.lr", "1e999", "finite", NULL);
    EXPECT_SET_ERR("optimizer.params.lr", "-1", "optimizer.params.lr must be >= 0, got -1", NULL);
    EXPECT_SET_ERR("optimizer.params.betas", "0.9", "optimizer.params.betas",
                   "\"0.9,0.999\", got \"0.9\"");
    EXPECT_SET_ERR("optimizer.params.betas", "0.9,0.99,0.999", "optimizer.params.betas", NULL);
    EXPECT_SET_ERR("optimizer.params.betas", "0.9,", "optimizer.params.betas", NULL);
    EXPECT_SET_ERR("optimizer.params.betas", "0.9,1.0", "optimizer.params.betas[1]", "got 1.0");
    EXPECT_SET_ERR("optimizer.params.adam_w_mode", "yes", "expected true or false", "got \"yes\"");
    EXPECT_SET_ERR("optimizer.params.adam_w_mode", "1", "optimizer.params.adam_w_mode", NULL);
    EXPECT_SET_ERR("optimizer.type", "lamb", "optimizer.type", "AdamW, Adam, SGD");
    EXPECT_SET_ERR("seed", "-1", "seed", "got -1");
    EXPECT_SET_ERR("seed", "18446744073709551616", "seed", NULL);
    EXPECT_SET_ERR("train_micro_batch_size_per_gpu", "0",
                   "train_micro_batch_size_per_gpu must be >= 1, got 0", NULL);
    EXPECT_SET_ERR("comm_timeout_s", "0", "comm_timeout_s must be > 0", NULL);
    EXPECT_SET_ERR("stage", "3", "command line: unknown key: stage", NULL);
    EXPECT_SET_ERR("zero_optimization.stagee", "3", "unknown key: zero_optimization.stagee", NULL);
    EXPECT_SET_ERR("seed.x", "3", "unknown key: seed.x", NULL);
    EXPECT_SET_ERR("", "3", "unknown key: ", NULL);
    EXPECT_SET_ERR("amp", "true", "command line: not supported yet: amp", NULL);
    EXPECT_SET_ERR("amp.enabled", "true", "not supported yet: amp", NULL);
    EXPECT_SET_ERR("wandb.enabled", "true", "command line: not supported yet: wandb", NULL);
    EXPECT_SET_ERR("zero_optimization", "3", "zero_optimization is a section",
                   "zero_optimization.stage");
    EXPECT_SET_ERR("optimizer.params", "1", "optimizer.params is a section", "optimizer.params.lr");
    EXPECT_SET_ERR("zero_optimization.overlap_comm", "no",
                   "zero_optimization.overlap_comm: expected true or false", "\"no\"");
    EXPECT_SET_ERR("optimizer.params.amsgrad", "true",
                   "not supported yet: optimizer.params.amsgrad = true", NULL);
    EXPECT_SET_ERR("optimizer.params.dampening", "0.5",
                   "not supported yet: optimizer.params.dampening = \"0.5\"", NULL);

    /* flags after the file */
    zc_err err = {0};
    CHECK(load(&c, FULL, &err) == ZC_OK);
    EXPECT_SET_OK(&c, "zero_optimization.stage", "1");
    CHECK(c.stage == 1 && c.reduce_bucket_size == 500000000 && c.optim == ZC_OPTIM_ADAM);
}

static void test_validate(void)
{
    zc_config c;
    zc_err err = {0};

    zc_config_defaults(&c);
    c.train_batch_size = 64;
    c.micro_batch = 4;
    CHECK(zc_config_validate(&c, 2, &err) == ZC_EINVAL);
    CHECK(err.code == ZC_EINVAL);
    CHECK_MSG(strcmp(err.msg, "train_batch_size 64 (default) != train_micro_batch_size_per_gpu 4 "
                              "(default) \u00d7 gradient_accumulation_steps 1 (default) \u00d7 "
                              "world size 2 = 8") == 0,
              err.msg);
    CHECK(zc_config_validate(&c, 16, &err) == ZC_OK);
    c.grad_accum = 8;
    CHECK(zc_config_validate(&c, 2, &err) == ZC_OK);
    c.train_batch_size = INT64_MAX;
    c.micro_batch = INT_MAX;
    c.grad_accum = INT_MAX;
    CHECK(zc_config_validate(&c, INT_MAX, &err) == ZC_EINVAL); /* product overflows 64 bits */
    CHECK(strstr(err.msg, "train_batch_size 9223372036854775807 (default) !=") != NULL);

    zc_config_defaults(&c);
    CHECK(zc_config_validate(&c, 0, &err) == ZC_EINVAL);
    CHECK(strstr(err.msg, "world size must be >= 1, got 0") != NULL);

    /* ranges are checked again for hand-filled structs, without an origin */
    zc_config_defaults(&c);
    c.stage = 7;
    CHECK(zc_config_validate(&c, 1, &err) == ZC_EINVAL);
    CHECK(strcmp(err.msg, "zero_optimization.stage: expected an integer 0..3, got 7") == 0);
    zc_config_defaults(&c);
    c.lr = -0.5;
    CHECK(zc_config_validate(&c, 1, &err) == ZC_EINVAL);
    CHECK(strcmp(err.msg, "optimizer.params.lr must be >= 0, got -0.5") == 0);
    zc_config_defaults(&c);
    c.lr = NAN;
    CHECK(zc_config_validate(&c, 1, &err) == ZC_EINVAL);
    CHECK(strstr(err.msg, "optimizer.params.lr") && strstr(err.msg, "finite"));
    zc_config_defaults(&c);
    c.eps = 0;
    CHECK(zc_config_validate(&c, 1, &err) == ZC_EINVAL && strstr(err.msg, "optimizer.params.eps"));
    zc_config_defaults(&c);
    c.beta2 = 1.0;
    CHECK(zc_config_validate(&c, 1, &err) == ZC_EINVAL);
    CHECK(strstr(err.msg, "optimizer.params.betas[1]") && strstr(err.msg, "got 1"));
    /* Adam's settings under SGD, which would ignore them: refused by name; defaults pass */
    zc_config_defaults(&c);
    c.optim = ZC_OPTIM_SGD;
    CHECK(zc_config_validate(&c, 1, &err) == ZC_OK);
    c.beta1 = 0.5;
    CHECK(zc_config_validate(&c, 1, &err) == ZC_EINVAL);
    CHECK_MSG(strstr(err.msg, "optimizer.params.betas is set for Adam, but optimizer.type is SGD"),
              err.msg);
    c.beta1 = 0.9;
    c.eps = 0.3;
    CHECK(zc_config_validate(&c, 1, &err) == ZC_EINVAL && strstr(err.msg, "params.eps is set"));
    c.eps = 1e-8;
    c.bias_correction = false;
    CHECK(zc_config_validate(&c, 1, &err) == ZC_EINVAL &&
          strstr(err.msg, "params.bias_correction is set"));
    c.bias_correction = true;
    c.adam_w_mode = false;
    CHECK(zc_config_validate(&c, 1, &err) == ZC_EINVAL &&
          strstr(err.msg, "params.adam_w_mode is set"));
    zc_config_defaults(&c);
    c.micro_batch = 0;
    CHECK(zc_config_validate(&c, 1, &err) == ZC_EINVAL);
    CHECK(strstr(err.msg, "train_micro_batch_size_per_gpu must be >= 1, got 0") != NULL);
    zc_config_defaults(&c);
    c.train_batch_size = -4;
    CHECK(zc_config_validate(&c, 1, &err) == ZC_EINVAL && strstr(err.msg, "train_batch_size"));
    zc_config_defaults(&c);
    c.comm_timeout_s = INFINITY;
    CHECK(zc_config_validate(&c, 1, &err) == ZC_EINVAL && strstr(err.msg, "comm_timeout_s"));
    zc_config_defaults(&c);
    c.optim = (zc_optim_type)9;
    CHECK(zc_config_validate(&c, 1, &err) == ZC_EINVAL && strstr(err.msg, "optimizer.type"));
    CHECK(strcmp(zc_optim_name((zc_optim_type)9), "unknown") == 0);
    zc_config_defaults(&c);
    c.prefetch_bucket_size = -2; /* -1 is ZC_AUTO */
    CHECK(zc_config_validate(&c, 1, &err) == ZC_EINVAL);
    CHECK(strstr(err.msg, "zero_optimization.stage3_prefetch_bucket_size") != NULL);
    /* "auto" from a file and from the command line; a number replaces it; other strings and
     * "auto" on a key without it are refused; to_json prints it back */
    zc_config_defaults(&c);
    CHECK(zc_config_load_string(&c,
                                "{\"zero_optimization\": {\"stage3_prefetch_bucket_size\": "
                                "4096}}",
                                "t", &err) == ZC_OK &&
          c.prefetch_bucket_size == 4096);
    CHECK(zc_config_load_string(&c,
                                "{\"zero_optimization\": {\"stage3_prefetch_bucket_size\": "
                                "\"auto\"}}",
                                "t", &err) == ZC_OK &&
          c.prefetch_bucket_size == ZC_AUTO);
    CHECK(zc_config_set(&c, "zero_optimization.stage3_prefetch_bucket_size", "123", &err) ==
              ZC_OK &&
          c.prefetch_bucket_size == 123);
    CHECK(zc_config_set(&c, "zero_optimization.stage3_prefetch_bucket_size", "auto", &err) ==
              ZC_OK &&
          c.prefetch_bucket_size == ZC_AUTO);
    CHECK(zc_config_set(&c, "zero_optimization.stage3_prefetch_bucket_size", "big", &err) ==
              ZC_EINVAL &&
          strstr(err.msg, "or \"auto\""));
    CHECK(zc_config_set(&c, "zero_optimization.stage3_max_live_parameters", "auto", &err) ==
          ZC_EINVAL);
    {
        char *json = zc_config_to_json(&c);
        CHECK(json && strstr(json, "\"stage3_prefetch_bucket_size\":\t\"auto\""));
        zc_config back;
        zc_config_defaults(&back);
        back.prefetch_bucket_size = 7;
        CHECK(json && zc_config_load_string(&back, json, "json", &err) == ZC_OK &&
              back.prefetch_bucket_size == ZC_AUTO);
        free(json);
    }

    /* AdamW always decouples weight decay: adam_w_mode false contradicts it */
    zc_config_defaults(&c);
    c.adam_w_mode = false;
    CHECK(zc_config_validate(&c, 1, &err) == ZC_EINVAL);
    CHECK(strstr(err.msg, "adam_w_mode") && strstr(err.msg, "AdamW"));
    c.optim = ZC_OPTIM_ADAM;
    CHECK(zc_config_validate(&c, 1, &err) == ZC_OK);
}

static void test_resolve_batch(void)
{
    zc_config c, before;
    zc_err err = {0};

    /* train_batch_size only: micro = train / world, accumulation stays 1 (DeepSpeed) */
    CHECK(load(&c, "{\"train_batch_size\": 64}", &err) == ZC_OK);
    CHECK(!c.micro_batch_set);
    CHECK(zc_config_validate(&c, 4, &err) == ZC_EINVAL); /* 64 != 1 x 1 x 4 before resolving */
    CHECK(zc_config_resolve_batch(&c, 4, &err) == ZC_OK);
    CHECK(c.micro_batch == 16 && c.grad_accum == 1 && c.train_batch_size == 64);
    CHECK(zc_config_validate(&c, 4, &err) == ZC_OK);
    CHECK(zc_config_resolve_batch(&c, 4, &err) == ZC_OK && c.micro_batch == 16); /* idempotent */

    /* train + accumulation: micro = train / (accum x world) */
    CHECK(load(&c, "{\"train_batch_size\": 64, \"gradient_accumulation_steps\": 2}", &err) ==
          ZC_OK);
    CHECK(zc_config_resolve_batch(&c, 4, &err) == ZC_OK);
    CHECK(c.micro_batch == 8 && c.grad_accum == 2);

    /* train + micro: accumulation = train / (micro x world) */
    CHECK(load(&c, "{\"train_batch_size\": 64, \"train_micro_batch_size_per_gpu\": 4}", &err) ==
          ZC_OK);
    CHECK(zc_config_resolve_batch(&c, 4, &err) == ZC_OK);
    CHECK(c.micro_batch == 4 && c.grad_accum == 4);

    /* micro set by a flag counts as given */
    CHECK(load(&c, "{\"train_batch_size\": 64}", &err) == ZC_OK);
    EXPECT_SET_OK(&c, "train_micro_batch_size_per_gpu", "2");
    CHECK(zc_config_resolve_batch(&c, 2, &err) == ZC_OK);
    CHECK(c.micro_batch == 2 && c.grad_accum == 16);

    /* all three given and inconsistent: the cross-check message */
    CHECK(load(&c,
               "{\"train_batch_size\": 64, \"train_micro_batch_size_per_gpu\": 4,"
               " \"gradient_accumulation_steps\": 1}",
               &err) == ZC_OK);
    before = c;
    CHECK(zc_config_resolve_batch(&c, 2, &err) == ZC_EINVAL);
    CHECK_MSG(strcmp(err.msg, "train_batch_size 64 (ds.json) != train_micro_batch_size_per_gpu 4 "
                              "(ds.json) \u00d7 gradient_accumulation_steps 1 (ds.json) \u00d7 "
                              "world size 2 = 8") == 0,
              err.msg);
    CHECK(same_config(&c, &before));
    /* each number names where it came from: the file, a flag, the default */
    CHECK(load(&c, "{\"train_batch_size\": 64, \"gradient_accumulation_steps\": 2}", &err) ==
          ZC_OK);
    EXPECT_SET_OK(&c, "train_micro_batch_size_per_gpu", "4");
    CHECK(zc_config_resolve_batch(&c, 2, &err) == ZC_EINVAL);
    CHECK_MSG(strcmp(err.msg, "train_batch_size 64 (ds.json) != train_micro_batch_size_per_gpu 4 "
                              "(command line) \u00d7 gradient_accumulation_steps 2 (ds.json) "
                              "\u00d7 world size 2 = 16") == 0,
              err.msg);

    /* not divisible: refused, cfg unchanged */
    CHECK(load(&c, "{\"train_batch_size\": 10}", &err) == ZC_OK);
    before = c;
    CHECK(zc_config_resolve_batch(&c, 4, &err) == ZC_EINVAL);
    CHECK(strstr(err.msg, "train_micro_batch_size_per_gpu") && strstr(err.msg, "10") &&
          strstr(err.msg, "world size 4"));
    CHECK(same_config(&c, &before));
    CHECK(load(&c, "{\"train_batch_size\": 10, \"train_micro_batch_size_per_gpu\": 4}", &err) ==
          ZC_OK);
    CHECK(zc_config_resolve_batch(&c, 1, &err) == ZC_EINVAL);
    CHECK(strstr(err.msg, "gradient_accumulation_steps") != NULL);

    /* train_batch_size 0: becomes micro x accum x world */
    zc_config_defaults(&c);
    c.micro_batch = 3;
    c.grad_accum = 2;
    CHECK(zc_config_resolve_batch(&c, 5, &err) == ZC_OK);
    CHECK(c.train_batch_size == 30 && c.micro_batch == 3 && c.grad_accum == 2);

    /* bad input */
    zc_config_defaults(&c);
    CHECK(zc_config_resolve_batch(&c, 0, &err) == ZC_EINVAL && strstr(err.msg, "world size"));
    c.micro_batch = -1;
    CHECK(zc_config_resolve_batch(&c, 1, &err) == ZC_EINVAL &&
          strstr(err.msg, "train_micro_batch_size_per_gpu"));
    zc_config_defaults(&c);
    c.micro_batch = INT_MAX;
    c.grad_accum = INT_MAX;
    CHECK(zc_config_resolve_batch(&c, INT_MAX, &err) == ZC_EINVAL);
    CHECK(strstr(err.msg, "does not fit") != NULL);
}

/* DeepSpeed's fp16 block with every key it has, none at its default, and both data-type keys. */
static const char FP16_FULL[] = "{\n"
                                "  \"fp16\": {\n"
                                "    \"enabled\": true,\n"
                                "    \"auto_cast\": false,\n"
                                "    \"loss_scale\": 0,\n"
                                "    \"initial_scale_power\": 12,\n"
                                "    \"loss_scale_window\": 500,\n"
                                "    \"hysteresis\": 3,\n"
                                "    \"consecutive_hysteresis\": true,\n"
                                "    \"min_loss_scale\": 0.25\n"
                                "  },\n"
                                "  \"communication_data_type\": \"fp32\",\n"
                                "  \"data_types\": {\"grad_accum_dtype\": \"fp32\"}\n"
                                "}\n";

static void test_precision(void)
{
    zc_config c, before;
    zc_err err = {0};

    /* the fp16 block, to exact values; everything else stays at its default */
    CHECK_MSG(load(&c, FP16_FULL, &err) == ZC_OK, err.msg);
    CHECK(c.dtype == ZC_FP16 && c.fp16_enabled && !c.bf16_enabled);
    CHECK(c.loss_scale == 0.0);
    CHECK(c.initial_scale_power == 12);
    CHECK(c.loss_scale_window == 500);
    CHECK(c.hysteresis == 3);
    CHECK(c.consecutive_hysteresis);
    CHECK(c.min_loss_scale == 0.25);
    CHECK(c.comm_dtype == ZC_FP32 && c.grad_accum_dtype == ZC_FP32);
    CHECK(zc_config_comm_dtype(&c) == ZC_FP32 && zc_config_grad_dtype(&c) == ZC_FP32);
    CHECK(c.stage == 0 && c.lr == 1e-3 && c.seed == 42);
    CHECK_MSG(zc_config_validate(&c, 1, &err) == ZC_OK, err.msg);
    CHECK_ROUND_TRIP(&c);

    /* a static scale; the DEFAULT types resolve to the stored type */
    CHECK(load(&c, "{\"fp16\": {\"enabled\": true, \"loss_scale\": 128.5}}", &err) == ZC_OK);
    CHECK(c.dtype == ZC_FP16 && c.loss_scale == 128.5);
    CHECK(c.comm_dtype == ZC_DTYPE_DEFAULT && c.grad_accum_dtype == ZC_DTYPE_DEFAULT);
    CHECK(zc_config_comm_dtype(&c) == ZC_FP16 && zc_config_grad_dtype(&c) == ZC_FP16);
    CHECK(c.initial_scale_power == 16 && c.hysteresis == 2); /* defaults kept */
    CHECK_ROUND_TRIP(&c);

    /* fp16 settings with fp16 off are read, range-checked and kept (DeepSpeed ignores them) */
    CHECK(load(&c, "{\"fp16\": {\"enabled\": false, \"loss_scale\": 1024, \"hysteresis\": 5}}",
               &err) == ZC_OK);
    CHECK(c.dtype == ZC_FP32 && c.loss_scale == 1024 && c.hysteresis == 5);
    CHECK(load(&c, "{\"fp16\": {\"initial_scale_power\": 2, \"min_loss_scale\": 100}}", &err) ==
          ZC_OK);
    CHECK(c.dtype == ZC_FP32 && c.initial_scale_power == 2 && c.min_loss_scale == 100);
    CHECK(zc_config_validate(&c, 1, &err) == ZC_OK); /* min > 2^power matters with fp16 only */

    /* bf16 and its old name bfloat16 */
    CHECK(load(&c, "{\"bf16\": {\"enabled\": true}}", &err) == ZC_OK && c.dtype == ZC_BF16);
    CHECK(zc_config_comm_dtype(&c) == ZC_BF16 && zc_config_grad_dtype(&c) == ZC_BF16);
    CHECK_ROUND_TRIP(&c);
    CHECK(load(&c, "{\"bfloat16\": {\"enabled\": true}}", &err) == ZC_OK && c.dtype == ZC_BF16);
    CHECK(c.bf16_enabled && !c.fp16_enabled);
    CHECK(load(&c, "{\"bfloat16\": {\"enabled\": false}}", &err) == ZC_OK && c.dtype == ZC_FP32);
    CHECK(load(&c, "{\"bf16\": {\"enabled\": false}}", &err) == ZC_OK && c.dtype == ZC_FP32);
    CHECK(load(&c, "{\"bf16\": {}, \"fp16\": {}}", &err) == ZC_OK && c.dtype == ZC_FP32);
    /* one on and the other explicitly off, in either order */
    CHECK(load(&c, "{\"fp16\": {\"enabled\": false}, \"bf16\": {\"enabled\": true}}", &err) ==
              ZC_OK &&
          c.dtype == ZC_BF16);
    CHECK(load(&c, "{\"bf16\": {\"enabled\": true}, \"fp16\": {\"enabled\": false}}", &err) ==
              ZC_OK &&
          c.dtype == ZC_BF16);
    CHECK(load(&c, "{\"fp16\": {\"enabled\": true}, \"bfloat16\": {\"enabled\": false}}", &err) ==
              ZC_OK &&
          c.dtype == ZC_FP16);

    /* communication and accumulation types, any letter case (DeepSpeed lowercases), null */
    CHECK_MSG(load(&c,
                   "{\"bf16\": {\"enabled\": true}, \"communication_data_type\": \"FP32\","
                   " \"data_types\": {\"grad_accum_dtype\": \"fp32\"}}",
                   &err) == ZC_OK,
              err.msg);
    CHECK(c.dtype == ZC_BF16 && c.comm_dtype == ZC_FP32 && c.grad_accum_dtype == ZC_FP32);
    CHECK(zc_config_comm_dtype(&c) == ZC_FP32 && zc_config_grad_dtype(&c) == ZC_FP32);
    CHECK_ROUND_TRIP(&c);
    CHECK(load(&c,
               "{\"communication_data_type\": \"bf16\", \"data_types\": {\"grad_accum_dtype\":"
               " \"Fp16\"}}",
               &err) == ZC_OK);
    CHECK(c.dtype == ZC_FP32 && c.comm_dtype == ZC_BF16 && c.grad_accum_dtype == ZC_FP16);
    CHECK(zc_config_comm_dtype(&c) == ZC_BF16 && zc_config_grad_dtype(&c) == ZC_FP16);
    CHECK_ROUND_TRIP(&c);
    zc_config_defaults(&c);
    c.comm_dtype = ZC_FP16;
    c.grad_accum_dtype = ZC_BF16;
    CHECK(zc_config_load_string(&c,
                                "{\"communication_data_type\": null,"
                                " \"data_types\": {\"grad_accum_dtype\": null}}",
                                "ds.json", &err) == ZC_OK);
    CHECK(c.comm_dtype == ZC_DTYPE_DEFAULT && c.grad_accum_dtype == ZC_DTYPE_DEFAULT);

    /* both 16-bit types on: loads (order must not matter to flags), fails validation naming
     * both keys, whichever spelling of bf16 was used */
    static const char *const both[] = {
        "{\"fp16\": {\"enabled\": true}, \"bf16\": {\"enabled\": true}}",
        "{\"bf16\": {\"enabled\": true}, \"fp16\": {\"enabled\": true}}",
        "{\"fp16\": {\"enabled\": true}, \"bfloat16\": {\"enabled\": true}}",
        "{\"bfloat16\": {\"enabled\": true}, \"fp16\": {\"enabled\": true}}",
    };
    for (size_t i = 0; i < sizeof both / sizeof both[0]; i++) {
        CHECK_MSG(load(&c, both[i], &err) == ZC_OK, err.msg);
        CHECK(c.fp16_enabled && c.bf16_enabled);
        CHECK(zc_config_validate(&c, 1, &err) == ZC_EINVAL);
        CHECK_MSG(strcmp(err.msg, "fp16.enabled and bf16.enabled (or bfloat16.enabled) cannot "
                                  "both be true: bfloat16 and fp16 modes cannot be "
                                  "simultaneously enabled") == 0,
                  err.msg);
        before = c;
        CHECK(zc_config_resolve_batch(&c, 1, &err) == ZC_EINVAL &&
              strstr(err.msg, "cannot both be true"));
        CHECK(same_config(&c, &before));
    }
    /* both names of bf16 in one file: a duplicate, whatever the values */
    EXPECT_LOAD_ERR("{\"bf16\": {\"enabled\": true}, \"bfloat16\": {\"enabled\": false}}",
                    "duplicate key: bfloat16", "bfloat16 is another name for bf16", NULL);
    EXPECT_LOAD_ERR("{\"bfloat16\": {}, \"bf16\": {}}", "duplicate key: bf16",
                    "bfloat16 is another name for bf16", NULL);
    EXPECT_LOAD_ERR("{\"fp16\": {\"enabled\": true, \"enabled\": false}}",
                    "duplicate key: fp16.enabled", NULL, NULL);

    /* ...and by a flag over a file: refused by validation unless the other is switched off,
     * before or after (zeroc train --dtype sets fp16.enabled, then bf16.enabled) */
    CHECK(load(&c, "{\"bf16\": {\"enabled\": true}}", &err) == ZC_OK);
    EXPECT_SET_OK(&c, "fp16.enabled", "true");
    CHECK(c.dtype == ZC_FP16 && c.fp16_enabled && c.bf16_enabled);
    CHECK(zc_config_validate(&c, 1, &err) == ZC_EINVAL);
    CHECK_MSG(strstr(err.msg, "fp16.enabled and bf16.enabled") != NULL, err.msg);
    EXPECT_SET_OK(&c, "bf16.enabled", "false"); /* after */
    CHECK(c.dtype == ZC_FP16 && c.fp16_enabled && !c.bf16_enabled);
    CHECK_MSG(zc_config_validate(&c, 1, &err) == ZC_OK, err.msg);
    CHECK(load(&c, "{\"bf16\": {\"enabled\": true}}", &err) == ZC_OK);
    EXPECT_SET_OK(&c, "bf16.enabled", "false"); /* before */
    CHECK(c.dtype == ZC_FP32);
    EXPECT_SET_OK(&c, "fp16.enabled", "true");
    CHECK(c.dtype == ZC_FP16 && zc_config_validate(&c, 1, &err) == ZC_OK);
    EXPECT_SET_OK(&c, "bf16.enabled", "false"); /* turning off what is off changes nothing */
    CHECK(c.dtype == ZC_FP16);
    /* fp16 file, then --dtype bf16 / --dtype fp32 */
    CHECK(load(&c, FP16_FULL, &err) == ZC_OK && c.dtype == ZC_FP16);
    EXPECT_SET_OK(&c, "fp16.enabled", "false");
    EXPECT_SET_OK(&c, "bf16.enabled", "true");
    CHECK(c.dtype == ZC_BF16 && zc_config_validate(&c, 1, &err) == ZC_OK);
    CHECK(load(&c, FP16_FULL, &err) == ZC_OK);
    EXPECT_SET_OK(&c, "fp16.enabled", "false");
    EXPECT_SET_OK(&c, "bf16.enabled", "false");
    CHECK(c.dtype == ZC_FP32 && zc_config_validate(&c, 1, &err) == ZC_OK);
    /* both on, one turned off: the other is the type */
    CHECK(load(&c, both[0], &err) == ZC_OK);
    EXPECT_SET_OK(&c, "bfloat16.enabled", "false");
    CHECK(c.dtype == ZC_FP16 && zc_config_validate(&c, 1, &err) == ZC_OK);
    CHECK(load(&c, both[1], &err) == ZC_OK);
    EXPECT_SET_OK(&c, "fp16.enabled", "false");
    CHECK(c.dtype == ZC_BF16 && zc_config_validate(&c, 1, &err) == ZC_OK);
    /* a flag turning fp16 off after a file turned it on: back to fp32, the settings stay */
    CHECK(load(&c, FP16_FULL, &err) == ZC_OK && c.dtype == ZC_FP16);
    EXPECT_SET_OK(&c, "fp16.enabled", "false");
    CHECK(c.dtype == ZC_FP32 && !c.fp16_enabled);
    CHECK(c.initial_scale_power == 12 && c.hysteresis == 3);

    /* every key from the command line, strings unquoted */
    zc_config_defaults(&c);
    EXPECT_SET_OK(&c, "bfloat16.enabled", "true");
    CHECK(c.dtype == ZC_BF16);
    EXPECT_SET_OK(&c, "bf16.enabled", "false");
    CHECK(c.dtype == ZC_FP32);
    EXPECT_SET_OK(&c, "communication_data_type", "bf16");
    CHECK(c.comm_dtype == ZC_BF16);
    EXPECT_SET_OK(&c, "communication_data_type", "FP16");
    CHECK(c.comm_dtype == ZC_FP16);
    EXPECT_SET_OK(&c, "communication_data_type", "null");
    CHECK(c.comm_dtype == ZC_DTYPE_DEFAULT);
    EXPECT_SET_OK(&c, "data_types.grad_accum_dtype", "fp32");
    CHECK(c.grad_accum_dtype == ZC_FP32);
    EXPECT_SET_OK(&c, "fp16.loss_scale", "256");
    CHECK(c.loss_scale == 256);
    EXPECT_SET_OK(&c, "fp16.initial_scale_power", "64");
    CHECK(c.initial_scale_power == 64);
    EXPECT_SET_OK(&c, "fp16.loss_scale_window", "1");
    CHECK(c.loss_scale_window == 1);
    EXPECT_SET_OK(&c, "fp16.hysteresis", "7");
    CHECK(c.hysteresis == 7);
    EXPECT_SET_OK(&c, "fp16.consecutive_hysteresis", "true");
    CHECK(c.consecutive_hysteresis);
    EXPECT_SET_OK(&c, "fp16.min_loss_scale", "0.5");
    CHECK(c.min_loss_scale == 0.5);
    EXPECT_SET_OK(&c, "fp16.auto_cast", "false");
    EXPECT_SET_OK(&c, "fp16.enabled", "true");
    CHECK(c.dtype == ZC_FP16 && zc_config_comm_dtype(&c) == ZC_FP16 &&
          zc_config_grad_dtype(&c) == ZC_FP32);
    CHECK_ROUND_TRIP(&c);

    EXPECT_SET_ERR("communication_data_type", "int8",
                   "command line: communication_data_type: expected one of fp32, bf16, fp16",
                   "got \"int8\"");
    EXPECT_SET_ERR("communication_data_type", "", "communication_data_type", "got \"\"");
    EXPECT_SET_ERR("communication_data_type", "NULL", "communication_data_type", "\"NULL\"");
    EXPECT_SET_ERR("data_types.grad_accum_dtype", "fp64", "data_types.grad_accum_dtype",
                   "got \"fp64\"");
    EXPECT_SET_ERR("fp16.enabled", "1", "fp16.enabled: expected true or false", "got \"1\"");
    EXPECT_SET_ERR("bf16.enabled", "yes", "bf16.enabled: expected true or false", "\"yes\"");
    EXPECT_SET_ERR("fp16.hysteresis", "0", "fp16.hysteresis must be >= 1, got 0", NULL);
    EXPECT_SET_ERR("fp16.initial_scale_power", "65",
                   "fp16.initial_scale_power: expected an integer 0..64, got 65", NULL);
    EXPECT_SET_ERR("fp16.loss_scale", "-1", "fp16.loss_scale must be >= 0, got -1", NULL);
    EXPECT_SET_ERR("fp16.loss_scale", "inf", "fp16.loss_scale", "\"inf\"");
    EXPECT_SET_ERR("fp16.min_loss_scale", "0", "fp16.min_loss_scale must be >= 1.17549e-38",
                   "got 0");
    EXPECT_SET_ERR("fp16.min_loss_scale", "1e-50", "fp16.min_loss_scale", "got 1e-50");
    EXPECT_SET_ERR("fp16.fp16_master_weights_and_grads", "true",
                   "fp16.fp16_master_weights_and_grads: true is not supported",
                   "zeroc keeps fp32 master weights");
    EXPECT_SET_ERR("fp16", "true", "fp16 is a section", "fp16.enabled");
    EXPECT_SET_ERR("bf16", "true", "bf16 is a section", "bf16.enabled");
    EXPECT_SET_ERR("bfloat16", "true", "bfloat16 is a section", "bfloat16.enabled");
    EXPECT_SET_ERR("data_types", "fp32", "data_types is a section", "data_types.grad_accum_dtype");
    {
        zc_config c;
        zc_config_defaults(&c);
        EXPECT_SET_OK(&c, "fp16.fp16_master_weights_and_grads", "false");
        EXPECT_SET_OK(&c, "fp16.auto_cast", "true");
        EXPECT_SET_OK(&c, "optimizer.legacy_fusion", "true");
    }
    EXPECT_SET_ERR("bf16.immediate_grad_update", "true",
                   "not supported yet: bf16.immediate_grad_update", NULL);
    EXPECT_SET_ERR("fp16.foo", "1", "unknown key: fp16.foo", NULL);

    /* bad values in a file: the key, the value as written, what was expected */
    EXPECT_LOAD_ERR("{\"communication_data_type\": \"int8\"}",
                    "ds.json: communication_data_type: expected one of fp32, bf16, fp16", "or null",
                    "got string \"int8\"");
    EXPECT_LOAD_ERR("{\"communication_data_type\": \"bfloat16\"}", "communication_data_type",
                    "got string \"bfloat16\"", NULL);
    EXPECT_LOAD_ERR("{\"communication_data_type\": 16}", "communication_data_type", "got 16", NULL);
    EXPECT_LOAD_ERR("{\"data_types\": {\"grad_accum_dtype\": \"int8\"}}",
                    "data_types.grad_accum_dtype: expected one of fp32, bf16, fp16",
                    "got string \"int8\"", NULL);
    EXPECT_LOAD_ERR("{\"data_types\": {\"grad_accum_dtype\": false}}",
                    "data_types.grad_accum_dtype", "got false", NULL);
    EXPECT_LOAD_ERR("{\"data_types\": \"fp32\"}", "data_types: expected an object",
                    "got string \"fp32\"", NULL);
    EXPECT_LOAD_ERR("{\"data_types\": {\"param_dtype\": \"bf16\"}}",
                    "not supported yet: data_types.param_dtype", NULL, NULL);
    EXPECT_LOAD_ERR("{\"fp16\": {\"hysteresis\": 0}}",
                    "ds.json: fp16.hysteresis must be >= 1, got 0", NULL, NULL);
    EXPECT_LOAD_ERR("{\"fp16\": {\"loss_scale\": -1}}", "fp16.loss_scale must be >= 0, got -1",
                    NULL, NULL);
    EXPECT_LOAD_ERR("{\"fp16\": {\"loss_scale\": 1e999}}", "fp16.loss_scale", "finite", "1e999");
    EXPECT_LOAD_ERR("{\"fp16\": {\"loss_scale\": \"dynamic\"}}", "fp16.loss_scale",
                    "got string \"dynamic\"", NULL);
    EXPECT_LOAD_ERR("{\"fp16\": {\"initial_scale_power\": 65}}",
                    "fp16.initial_scale_power: expected an integer 0..64, got 65", NULL, NULL);
    EXPECT_LOAD_ERR("{\"fp16\": {\"initial_scale_power\": -1}}", "fp16.initial_scale_power",
                    "got -1", NULL);
    EXPECT_LOAD_ERR("{\"fp16\": {\"initial_scale_power\": 16.5}}", "fp16.initial_scale_power",
                    "got 16.5", NULL);
    EXPECT_LOAD_ERR("{\"fp16\": {\"min_loss_scale\": 0}}",
                    "fp16.min_loss_scale must be >= 1.17549e-38", "got 0", NULL);
    /* a static scale below the smallest normal float would round to 0 and the update to NaN */
    {
        zc_config t;
        zc_err e2 = {0};
        zc_config_defaults(&t);
        CHECK(zc_config_set(&t, "fp16.loss_scale", "1e-50", &e2) == ZC_OK);
        CHECK(zc_config_validate(&t, 1, &e2) == ZC_EINVAL);
        CHECK_MSG(strstr(e2.msg, "fp16.loss_scale 1e-50: expected 0 (dynamic) or a static scale "
                                 ">= 2^-126"),
                  e2.msg);
    }
    EXPECT_LOAD_ERR("{\"fp16\": {\"loss_scale\": 1e39}}", "fp16.loss_scale", "got 1e39", NULL);
    EXPECT_LOAD_ERR("{\"fp16\": {\"min_loss_scale\": -2}}", "fp16.min_loss_scale", "got -2", NULL);
    EXPECT_LOAD_ERR("{\"fp16\": {\"loss_scale_window\": 0}}",
                    "fp16.loss_scale_window must be >= 1, got 0", NULL, NULL);
    EXPECT_LOAD_ERR("{\"fp16\": {\"consecutive_hysteresis\": 1}}",
                    "fp16.consecutive_hysteresis: expected true or false, got 1", NULL, NULL);
    EXPECT_LOAD_ERR("{\"fp16\": {\"enabled\": \"yes\"}}", "fp16.enabled: expected true or false",
                    NULL, NULL);
    EXPECT_LOAD_ERR("{\"bf16\": {\"enabled\": 1}}", "bf16.enabled: expected true or false, got 1",
                    NULL, NULL);
    EXPECT_LOAD_ERR("{\"fp16\": true}", "fp16: expected an object", "got true", NULL);
    /* auto_cast casts floating-point inputs, and zeroc's are token ids; legacy_fusion picks a
     * GPU kernel's interface; master weights in fp16 are refused (zeroc's are fp32) */
    {
        zc_config c;
        zc_err err = {0};
        CHECK_MSG(load(&c,
                       "{\"fp16\": {\"enabled\": true, \"auto_cast\": true, "
                       "\"fp16_master_weights_and_grads\": false}, \"optimizer\": "
                       "{\"legacy_fusion\": false}}",
                       &err) == ZC_OK,
                  err.msg);
        CHECK_MSG(strstr(c.no_effect, "fp16.auto_cast (it casts floating-point model inputs") &&
                      strstr(c.no_effect, "optimizer.legacy_fusion ("),
                  c.no_effect);
    }
    EXPECT_LOAD_ERR("{\"fp16\": {\"fp16_master_weights_and_grads\": true}, \"bf16\": "
                    "{\"bf16_master_weights_and_grads\": true}}",
                    "ds.json: fp16.fp16_master_weights_and_grads: true is not supported: zeroc "
                    "keeps fp32 master weights and gradients",
                    "; bf16.bf16_master_weights_and_grads: true is not supported", NULL);
    EXPECT_LOAD_ERR("{\"fp16\": {\"auto_cast\": 1}}", "fp16.auto_cast: expected true or false",
                    NULL, NULL);
    EXPECT_LOAD_ERR("{\"bf16\": {\"enabled\": true, \"check_grad_overflow\": false}}",
                    "not supported yet: bf16.check_grad_overflow", NULL, NULL);
    EXPECT_LOAD_ERR("{\"bfloat16\": {\"immediate_grad_update\": false}}",
                    "not supported yet: bfloat16.immediate_grad_update", NULL, NULL);
    EXPECT_LOAD_ERR("{\"bf16\": {\"bf16_optimizer_states\": true}}",
                    "not supported yet: bf16.bf16_optimizer_states", NULL, NULL);
    EXPECT_LOAD_ERR("{\"bf16\": {\"foo\": 1}}", "unknown key: bf16.foo", NULL, NULL);
    EXPECT_LOAD_ERR("{\"fp16\": {\"Enabled\": true}}", "unknown key: fp16.Enabled", NULL, NULL);
    /* fp16's loss-scale keys copied into bf16 (DeepSpeedExamples' cifar bf16 config): DeepSpeed
     * reads only bf16.enabled, so they are accepted, change nothing and are named in the log */
    {
        static const char *const sections[] = {"bf16", "bfloat16"};
        for (int i = 0; i < 2; i++) {
            char json[512];
            snprintf(json, sizeof json,
                     "{\"%s\": {\"enabled\": true, \"loss_scale\": 0, "
                     "\"loss_scale_window\": 500, \"hysteresis\": 2, \"min_loss_scale\": 1, "
                     "\"initial_scale_power\": 15, \"consecutive_hysteresis\": false}}",
                     sections[i]);
            zc_config b;
            CHECK_MSG(load(&b, json, &err) == ZC_OK, err.msg);
            zc_config d;
            zc_config_defaults(&d);
            CHECK(b.dtype == ZC_BF16 && b.loss_scale == d.loss_scale &&
                  b.loss_scale_window == d.loss_scale_window && b.hysteresis == d.hysteresis &&
                  b.initial_scale_power == d.initial_scale_power &&
                  b.min_loss_scale == d.min_loss_scale);
            static const char *const keys[] = {"loss_scale",          "loss_scale_window",
                                               "hysteresis",          "min_loss_scale",
                                               "initial_scale_power", "consecutive_hysteresis"};
            for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
                char item[128];
                snprintf(item, sizeof item, "%s.%s (bf16 has fp32's range and uses no loss scale)",
                         sections[i], keys[k]);
                CHECK_MSG(strstr(b.no_effect, item) != NULL, b.no_effect);
            }
        }
        EXPECT_LOAD_ERR("{\"bf16\": {\"loss_scale\": \"x\"}}", "bf16.loss_scale: expected a number",
                        "got string \"x\"", NULL);
        EXPECT_LOAD_ERR("{\"bf16\": {\"hysteresis\": -1}}", "bf16.hysteresis must be >= 0",
                        "got -1", NULL);
    }

    /* grad_accum_dtype is read through DeepSpeed's DtypeEnum: its other names are accepted
     * (any letter case, as zeroc's own); communication_data_type keeps DeepSpeed's three */
    {
        static const struct {
            const char *name;
            zc_dtype dt;
        } names[] = {{"float32", ZC_FP32},  {"FLOAT", ZC_FP32},          {"torch.float32", ZC_FP32},
                     {"float16", ZC_FP16},  {"Half", ZC_FP16},           {"torch.float16", ZC_FP16},
                     {"bfloat16", ZC_BF16}, {"torch.bfloat16", ZC_BF16}, {"bf16", ZC_BF16},
                     {"fp32", ZC_FP32}};
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
            char json[128];
            snprintf(json, sizeof json, "{\"data_types\": {\"grad_accum_dtype\": \"%s\"}}",
                     names[i].name);
            zc_config g;
            CHECK_MSG(load(&g, json, &err) == ZC_OK && g.grad_accum_dtype == names[i].dt,
                      names[i].name);
            zc_config_defaults(&g);
            CHECK_MSG(zc_config_set(&g, "data_types.grad_accum_dtype", names[i].name, &err) ==
                              ZC_OK &&
                          g.grad_accum_dtype == names[i].dt,
                      err.msg);
        }
        EXPECT_LOAD_ERR("{\"data_types\": {\"grad_accum_dtype\": \"float64\"}}",
                        "data_types.grad_accum_dtype: expected one of fp32, bf16, fp16 (or "
                        "float32, float, torch.float32, float16, half, torch.float16, bfloat16, "
                        "torch.bfloat16; case-insensitive) or null",
                        "got string \"float64\"", NULL);
        EXPECT_LOAD_ERR("{\"communication_data_type\": \"float32\"}",
                        "communication_data_type: expected one of fp32, bf16, fp16 "
                        "(case-insensitive) or null",
                        "got string \"float32\"", NULL);
    }

    /* validate: with dynamic fp16 the minimum cannot exceed the starting scale */
    CHECK(load(&c,
               "{\"fp16\": {\"enabled\": true, \"initial_scale_power\": 4,"
               " \"min_loss_scale\": 32}}",
               &err) == ZC_OK);
    CHECK(zc_config_validate(&c, 1, &err) == ZC_EINVAL);
    CHECK_MSG(strcmp(err.msg, "fp16.min_loss_scale 32 must be <= 2^fp16.initial_scale_power = "
                              "2^4 = 16, where dynamic loss scaling starts") == 0,
              err.msg);
    before = c;
    CHECK(zc_config_resolve_batch(&c, 1, &err) == ZC_EINVAL);
    CHECK(strstr(err.msg, "fp16.min_loss_scale") && strstr(err.msg, "fp16.initial_scale_power"));
    CHECK(same_config(&c, &before));
    c.min_loss_scale = 16; /* equal: fine */
    CHECK(zc_config_validate(&c, 1, &err) == ZC_OK);
    c.min_loss_scale = 32;
    c.loss_scale = 8; /* static: no dynamic range to check */
    CHECK(zc_config_validate(&c, 1, &err) == ZC_OK);
    c.loss_scale = 0;
    EXPECT_SET_OK(&c, "fp16.enabled", "false"); /* fp32: no loss scaling at all */
    CHECK(c.dtype == ZC_FP32 && zc_config_validate(&c, 1, &err) == ZC_OK);
    EXPECT_SET_OK(&c, "bf16.enabled", "true"); /* bf16: neither */
    CHECK(c.dtype == ZC_BF16 && zc_config_validate(&c, 1, &err) == ZC_OK);
    CHECK(load(&c,
               "{\"fp16\": {\"enabled\": true, \"initial_scale_power\": 0, \"min_loss_scale\": 1}}",
               &err) == ZC_OK);
    CHECK(zc_config_validate(&c, 1, &err) == ZC_OK);
    c.min_loss_scale = 1.5;
    CHECK(zc_config_validate(&c, 1, &err) == ZC_EINVAL && strstr(err.msg, "2^0 = 1,"));
    c.initial_scale_power = 64;
    c.min_loss_scale = 1e19; /* < 2^64 */
    CHECK(zc_config_validate(&c, 1, &err) == ZC_OK);

    /* hand-filled structs: ranges and enum values again */
    zc_config_defaults(&c);
    c.dtype = ZC_DTYPE_DEFAULT; /* only the two derived types may be DEFAULT */
    CHECK(zc_config_validate(&c, 1, &err) == ZC_EINVAL);
    CHECK_MSG(strstr(err.msg, "fp16.enabled") && strstr(err.msg, "dtype") &&
                  strstr(err.msg, "enum value -1"),
              err.msg);
    c.dtype = ZC_BF16; /* set by hand, no key enabled: fine */
    CHECK(zc_config_validate(&c, 1, &err) == ZC_OK);
    c.fp16_enabled = true; /* a key that disagrees with dtype */
    CHECK(zc_config_validate(&c, 1, &err) == ZC_EINVAL);
    CHECK_MSG(strcmp(err.msg, "fp16.enabled is true but dtype is bf16") == 0, err.msg);
    c.dtype = (zc_dtype)5;
    CHECK(zc_config_validate(&c, 1, &err) == ZC_EINVAL && strstr(err.msg, "enum value 5"));
    zc_config_defaults(&c);
    c.comm_dtype = (zc_dtype)3;
    CHECK(zc_config_validate(&c, 1, &err) == ZC_EINVAL);
    CHECK_MSG(strcmp(err.msg, "communication_data_type: expected one of fp32, bf16, fp16 or null, "
                              "got enum value 3") == 0,
              err.msg);
    zc_config_defaults(&c);
    c.grad_accum_dtype = (zc_dtype)-2;
    CHECK(zc_config_validate(&c, 1, &err) == ZC_EINVAL &&
          strstr(err.msg, "data_types.grad_accum_dtype"));
    zc_config_defaults(&c);
    c.hysteresis = 0;
    CHECK(zc_config_validate(&c, 1, &err) == ZC_EINVAL);
    CHECK(strcmp(err.msg, "fp16.hysteresis must be >= 1, got 0") == 0);
    zc_config_defaults(&c);
    c.loss_scale = NAN;
    CHECK(zc_config_validate(&c, 1, &err) == ZC_EINVAL && strstr(err.msg, "fp16.loss_scale") &&
          strstr(err.msg, "finite"));
    zc_config_defaults(&c);
    c.min_loss_scale = 0;
    CHECK(zc_config_validate(&c, 1, &err) == ZC_EINVAL && strstr(err.msg, "fp16.min_loss_scale"));
    zc_config_defaults(&c);
    c.initial_scale_power = 65;
    CHECK(zc_config_validate(&c, 1, &err) == ZC_EINVAL &&
          strstr(err.msg, "fp16.initial_scale_power: expected an integer 0..64, got 65"));
}

/* DeepSpeed's ZeRO-Infinity blocks with every key, none at its default. */
static const char OFFLOAD_FULL[] = "{\n"
                                   "  \"zero_optimization\": {\n"
                                   "    \"stage\": 3,\n"
                                   "    \"sub_group_size\": 1e6,\n"
                                   "    \"offload_optimizer\": {\n"
                                   "      \"device\": \"NVMe\",\n"
                                   "      \"nvme_path\": \"/local_nvme/opt\",\n"
                                   "      \"buffer_count\": 8,\n"
                                   "      \"pin_memory\": true,\n"
                                   "      \"ratio\": 0.3,\n"
                                   "      \"pipeline_read\": false,\n"
                                   "      \"pipeline_write\": false,\n"
                                   "      \"fast_init\": true\n"
                                   "    },\n"
                                   "    \"offload_param\": {\n"
                                   "      \"device\": \"nvme\",\n"
                                   "      \"nvme_path\": \"/local_nvme/param\",\n"
                                   "      \"buffer_count\": 6,\n"
                                   "      \"buffer_size\": 2e8,\n"
                                   "      \"max_in_cpu\": 0,\n"
                                   "      \"pin_memory\": true\n"
                                   "    }\n"
                                   "  },\n"
                                   "  \"aio\": {\n"
                                   "    \"block_size\": 262144,\n"
                                   "    \"queue_depth\": 32,\n"
                                   "    \"thread_count\": 4,\n"
                                   "    \"single_submit\": true,\n"
                                   "    \"overlap_events\": false,\n"
                                   "    \"use_gds\": false,\n"
                                   "    \"engine\": \"THREADS\"\n"
                                   "  }\n"
                                   "}\n";

static void check_offload_full(const zc_config *c)
{
    CHECK(c->stage == 3);
    CHECK(c->sub_group_size == 1000000);
    CHECK(c->offload_optimizer == ZC_OFFLOAD_NVME);
    CHECK(strcmp(c->optimizer_nvme_path, "/local_nvme/opt") == 0);
    CHECK(c->optimizer_buffer_count == 8);
    CHECK(c->optimizer_pin_memory);
    CHECK(c->optimizer_ratio == 0.3);
    CHECK(!c->pipeline_read && !c->pipeline_write);
    CHECK(c->offload_param == ZC_OFFLOAD_NVME);
    CHECK(strcmp(c->param_nvme_path, "/local_nvme/param") == 0);
    CHECK(c->param_buffer_count == 6);
    CHECK(c->param_buffer_size == 200000000);
    CHECK(c->max_in_cpu == 0);
    CHECK(c->param_pin_memory);
    CHECK(c->aio_block_size == 262144);
    CHECK(c->aio_queue_depth == 32);
    CHECK(c->aio_thread_count == 4);
    CHECK(c->aio_single_submit && !c->aio_overlap_events);
    CHECK(c->aio_engine == ZC_AIO_THREADS);
}

/* Loads json over defaults and validates it with one rank: expects that to fail with every
 * substring in the message, and the load itself to succeed (the rule is across keys). */
static void expect_validate_err_at(const char *file, int line, const char *json, const char *s1,
                                   const char *s2)
{
    zc_config c, before;
    zc_err err = {0};
    char what[256];

    zc_config_defaults(&c);
    record(zc_config_load_string(&c, json, "ds.json", &err) == ZC_OK, file, line, "loads", err.msg);
    before = c;
    snprintf(what, sizeof what, "validate of %.150s fails", json);
    record(zc_config_validate(&c, 1, &err) == ZC_EINVAL, file, line, what, err.msg);
    const char *subs[2] = {s1, s2};
    for (int i = 0; i < 2; i++) {
        if (!subs[i])
            continue;
        snprintf(what, sizeof what, "message contains '%s'", subs[i]);
        record(strstr(err.msg, subs[i]) != NULL, file, line, what, err.msg);
    }
    /* resolve_batch validates too, and leaves cfg as it was */
    record(zc_config_resolve_batch(&c, 1, &err) == ZC_EINVAL && strstr(err.msg, s1), file, line,
           "resolve_batch fails the same way", err.msg);
    record(same_config(&c, &before), file, line, "cfg unchanged by resolve_batch", err.msg);
}
#define EXPECT_VALIDATE_ERR(json, s1, s2) expect_validate_err_at(__FILE__, __LINE__, json, s1, s2)

static void test_offload(void)
{
    zc_config c;
    zc_err err = {0};
    char path[128];

    /* a path goes into checkpoints' manifest.json: bytes that are not UTF-8 (a Latin-1 name)
     * are refused, from a flag or a file, naming the byte; UTF-8 names are taken as they are */
    EXPECT_SET_ERR("zero_optimization.offload_optimizer.nvme_path", "nv\xe4", "not UTF-8",
                   "byte 0xE4 at offset 2");
    EXPECT_LOAD_ERR(
        "{\"zero_optimization\": {\"offload_param\": {\"nvme_path\": \"/d\xed\xa0\x80\"}}}",
        "offload_param.nvme_path", "not UTF-8", "0xED at offset 2");
    const char *bad_utf8[] = {"\xc0\x80", "\xe0\x80\x80", "\xf4\x90\x80\x80",
                              "\xf8",     "\xe2\x82",     "\x80"};
    for (size_t i = 0; i < sizeof bad_utf8 / sizeof *bad_utf8; i++)
        EXPECT_SET_ERR("zero_optimization.offload_param.nvme_path", bad_utf8[i], "not UTF-8",
                       "at offset 0");
    zc_config_defaults(&c);
    EXPECT_SET_OK(&c, "zero_optimization.offload_param.nvme_path",
                  "/mnt/n\xc3\xa4 \xe2\x82\xac \xf0\x9f\x98\x80"); /* ä € 😀 */
    CHECK(!strcmp(c.param_nvme_path, "/mnt/n\xc3\xa4 \xe2\x82\xac \xf0\x9f\x98\x80"));

    /* every key from a file */
    snprintf(path, sizeof path, "%s/offload.json", tmpdir);
    write_file(path, OFFLOAD_FULL, strlen(OFFLOAD_FULL));
    zc_config_defaults(&c);
    CHECK_MSG(zc_config_load_file(&c, path, &err) == ZC_OK, err.msg);
    check_offload_full(&c);
    CHECK(c.lr == 1e-3 && c.seed == 42); /* the rest keeps its defaults */
    CHECK_MSG(zc_config_validate(&c, 1, &err) == ZC_OK, err.msg);
    CHECK_MSG(zc_config_validate(&c, 8, &err) == ZC_OK, err.msg);
    CHECK_ROUND_TRIP(&c);
    /* with an nvme device every knob acts: none is named as changing nothing */
    CHECK_MSG(zc_config_resolve_batch(&c, 1, &err) == ZC_OK, err.msg);
    CHECK_MSG(!strstr(c.no_effect, "sub_group_size") && !strstr(c.no_effect, "aio") &&
                  !strstr(c.no_effect, "buffer_count"),
              c.no_effect);

    /* the same knobs with nothing offloaded to nvme (device cpu or none) act on nothing: the
     * log names them, once the configuration is final (a flag may still choose nvme) */
    {
        static const char *const idle =
            "{\"zero_optimization\": {\"stage\": 3, \"sub_group_size\": 1e9, "
            "\"offload_optimizer\": {\"device\": \"cpu\", \"pin_memory\": true, "
            "\"buffer_count\": 4, \"pipeline_read\": false, \"pipeline_write\": false, "
            "\"fast_init\": false}, \"offload_param\": {\"device\": \"none\", "
            "\"max_in_cpu\": 1e9}}, \"aio\": {\"block_size\": 1048576, \"queue_depth\": 8}}";
        const char *want = "zero_optimization.sub_group_size, "
                           "zero_optimization.offload_optimizer.pin_memory, "
                           "zero_optimization.offload_optimizer.buffer_count, "
                           "zero_optimization.offload_optimizer.pipeline_read, "
                           "zero_optimization.offload_optimizer.pipeline_write, "
                           "zero_optimization.offload_param.max_in_cpu, aio (they act only with "
                           "an offload to nvme, and neither device is)";
        zc_config d;
        CHECK_MSG(load(&d, idle, &err) == ZC_OK, err.msg);
        CHECK_MSG(!strstr(d.no_effect, "sub_group_size"), d.no_effect); /* not final yet */
        zc_config e = d;
        CHECK_MSG(zc_config_resolve_batch(&d, 1, &err) == ZC_OK, err.msg);
        CHECK_MSG(strstr(d.no_effect, want) != NULL, d.no_effect);
        CHECK_MSG(strstr(d.no_effect, "zero_optimization.offload_optimizer.fast_init (it skips a "
                                      "slower initialisation in DeepSpeed; zeroc has only one)"),
                  d.no_effect);
        const char *once = strstr(d.no_effect, "sub_group_size");
        CHECK_MSG(zc_config_resolve_batch(&d, 1, &err) == ZC_OK && once &&
                      !strstr(once + 1, "sub_group_size"),
                  d.no_effect); /* resolved again: listed once */
        EXPECT_SET_OK(&e, "zero_optimization.offload_param.device", "nvme"); /* a flag */
        EXPECT_SET_OK(&e, "zero_optimization.offload_param.nvme_path", tmpdir);
        CHECK_MSG(zc_config_resolve_batch(&e, 1, &err) == ZC_OK, err.msg);
        CHECK_MSG(!strstr(e.no_effect, "sub_group_size"), e.no_effect);
        CHECK_MSG(load(&d, "{\"zero_optimization\": {\"sub_group_size\": 1e6}}", &err) == ZC_OK &&
                      zc_config_resolve_batch(&d, 1, &err) == ZC_OK &&
                      strcmp(d.no_effect, "zero_optimization.sub_group_size (it acts only with "
                                          "an offload to nvme, and neither device is)") == 0,
                  d.no_effect);
        CHECK_MSG(load(&d, "{\"optimizer\": {\"params\": {\"torch_adam\": true}}}", &err) ==
                          ZC_OK &&
                      strcmp(d.no_effect, "optimizer.params.torch_adam (it picks DeepSpeed's "
                                          "Adam kernel; zeroc has its own)") == 0,
                  d.no_effect);
    }

    /* ...and every key from the command line, strings unquoted */
    zc_config_defaults(&c);
    EXPECT_SET_OK(&c, "zero_optimization.stage", "3");
    EXPECT_SET_OK(&c, "zero_optimization.sub_group_size", "1e6");
    EXPECT_SET_OK(&c, "zero_optimization.offload_optimizer.device", "NVMe");
    EXPECT_SET_OK(&c, "zero_optimization.offload_optimizer.nvme_path", "/local_nvme/opt");
    EXPECT_SET_OK(&c, "zero_optimization.offload_optimizer.buffer_count", "8");
    EXPECT_SET_OK(&c, "zero_optimization.offload_optimizer.pin_memory", "true");
    EXPECT_SET_OK(&c, "zero_optimization.offload_optimizer.ratio", "0.3");
    EXPECT_SET_OK(&c, "zero_optimization.offload_optimizer.pipeline_read", "false");
    EXPECT_SET_OK(&c, "zero_optimization.offload_optimizer.pipeline_write", "false");
    EXPECT_SET_OK(&c, "zero_optimization.offload_optimizer.fast_init", "true");
    EXPECT_SET_OK(&c, "zero_optimization.offload_optimizer.fast_init", "false");
    EXPECT_SET_OK(&c, "zero_optimization.offload_param.device", "nvme");
    EXPECT_SET_OK(&c, "zero_optimization.offload_param.nvme_path", "/local_nvme/param");
    EXPECT_SET_OK(&c, "zero_optimization.offload_param.buffer_count", "6");
    EXPECT_SET_OK(&c, "zero_optimization.offload_param.buffer_size", "2e8");
    EXPECT_SET_OK(&c, "zero_optimization.offload_param.max_in_cpu", "0");
    EXPECT_SET_OK(&c, "zero_optimization.offload_param.pin_memory", "true");
    EXPECT_SET_OK(&c, "aio.block_size", "262144");
    EXPECT_SET_OK(&c, "aio.queue_depth", "32");
    EXPECT_SET_OK(&c, "aio.thread_count", "4");
    EXPECT_SET_OK(&c, "aio.single_submit", "true");
    EXPECT_SET_OK(&c, "aio.overlap_events", "false");
    EXPECT_SET_OK(&c, "aio.use_gds", "false");
    EXPECT_SET_OK(&c, "aio.engine", "threads");
    check_offload_full(&c);
    CHECK_MSG(zc_config_validate(&c, 1, &err) == ZC_OK, err.msg);
    CHECK_ROUND_TRIP(&c);
    /* zeroc's fold_update (docs/CONFIG.md): on by default, a boolean, kept by the round trip */
    EXPECT_SET_OK(&c, "zero_optimization.offload_optimizer.fold_update", "false");
    CHECK(!c.fold_update);
    CHECK_ROUND_TRIP(&c);
    EXPECT_SET_OK(&c, "zero_optimization.offload_optimizer.fold_update", "true");
    CHECK(c.fold_update);
    /* the remaining values of each choice, any letter case */
    EXPECT_SET_OK(&c, "aio.engine", "IO_URING");
    CHECK(c.aio_engine == ZC_AIO_URING);
    EXPECT_SET_OK(&c, "aio.engine", "Auto");
    CHECK(c.aio_engine == ZC_AIO_AUTO);
    EXPECT_SET_OK(&c, "zero_optimization.offload_optimizer.device", "CPU");
    CHECK(c.offload_optimizer == ZC_OFFLOAD_CPU);
    EXPECT_SET_OK(&c, "zero_optimization.offload_param.device", "None");
    CHECK(c.offload_param == ZC_OFFLOAD_NONE);
    EXPECT_SET_OK(&c, "zero_optimization.offload_optimizer.nvme_path", ""); /* unset */
    CHECK(c.optimizer_nvme_path[0] == '\0');
    EXPECT_SET_OK(&c, "zero_optimization.offload_param.nvme_path", "null"); /* a directory */
    CHECK(strcmp(c.param_nvme_path, "null") == 0);
    EXPECT_SET_OK(&c, "zero_optimization.offload_optimizer.ratio", "1");
    CHECK(c.optimizer_ratio == 1.0);
    EXPECT_SET_OK(&c, "aio.block_size", "4096");
    CHECK(c.aio_block_size == 4096);
    EXPECT_SET_OK(&c, "aio.intra_op_parallelism", "3"); /* DeepSpeed's newer name */
    CHECK(c.aio_thread_count == 3);
    CHECK_ROUND_TRIP(&c);

    /* file values that are not defaults' spelling */
    CHECK_MSG(load(&c,
                   "{\"zero_optimization\": {\"offload_optimizer\": {\"device\": \"cpu\","
                   " \"nvme_path\": null}, \"offload_param\": {\"nvme_path\": \"\"}},"
                   " \"aio\": {\"engine\": \"io_uring\", \"intra_op_parallelism\": 2}}",
                   &err) == ZC_OK,
              err.msg);
    CHECK(c.offload_optimizer == ZC_OFFLOAD_CPU && c.optimizer_nvme_path[0] == '\0' &&
          c.param_nvme_path[0] == '\0' && c.aio_engine == ZC_AIO_URING && c.aio_thread_count == 2);
    CHECK(load(&c,
               "{\"zero_optimization\": {\"offload_optimizer\": {}, \"offload_param\": {}},"
               " \"aio\": {}}",
               &err) == ZC_OK);
    {
        zc_config d;
        zc_config_defaults(&d);
        CHECK(same_config(&c, &d));
    }
    /* a file sets the path, a flag the device */
    CHECK(load(&c,
               "{\"zero_optimization\": {\"stage\": 2, \"offload_optimizer\": {\"nvme_path\":"
               " \"/mnt/ssd\"}}}",
               &err) == ZC_OK);
    CHECK(c.offload_optimizer == ZC_OFFLOAD_NONE && zc_config_validate(&c, 1, &err) == ZC_OK);
    EXPECT_SET_OK(&c, "zero_optimization.offload_optimizer.device", "nvme");
    CHECK(c.offload_optimizer == ZC_OFFLOAD_NVME && strcmp(c.optimizer_nvme_path, "/mnt/ssd") == 0);
    CHECK_MSG(zc_config_validate(&c, 1, &err) == ZC_OK, err.msg);

    /* type errors */
    EXPECT_LOAD_ERR("{\"zero_optimization\": {\"offload_optimizer\": {\"buffer_count\": \"4\"}}}",
                    "zero_optimization.offload_optimizer.buffer_count: expected an integer >= 1",
                    "got string \"4\"", NULL);
    EXPECT_LOAD_ERR("{\"zero_optimization\": {\"offload_optimizer\": {\"buffer_count\": 2.5}}}",
                    "zero_optimization.offload_optimizer.buffer_count", "got 2.5", NULL);
    EXPECT_LOAD_ERR("{\"zero_optimization\": {\"offload_optimizer\": {\"pin_memory\": 1}}}",
                    "zero_optimization.offload_optimizer.pin_memory: expected true or false, "
                    "got 1",
                    NULL, NULL);
    EXPECT_LOAD_ERR("{\"zero_optimization\": {\"offload_optimizer\": {\"ratio\": \"half\"}}}",
                    "zero_optimization.offload_optimizer.ratio: expected a number in (0, 1]",
                    "got string \"half\"", NULL);
    EXPECT_LOAD_ERR("{\"zero_optimization\": {\"offload_optimizer\": {\"nvme_path\": 5}}}",
                    "zero_optimization.offload_optimizer.nvme_path: expected a string", "got 5",
                    NULL);
    EXPECT_LOAD_ERR("{\"zero_optimization\": {\"offload_param\": {\"nvme_path\": [\"/a\"]}}}",
                    "zero_optimization.offload_param.nvme_path", "got an array", NULL);
    EXPECT_LOAD_ERR("{\"zero_optimization\": {\"offload_optimizer\": {\"device\": true}}}",
                    "zero_optimization.offload_optimizer.device: expected one of none, cpu, nvme",
                    "got true", NULL);
    EXPECT_LOAD_ERR("{\"zero_optimization\": {\"offload_param\": {\"device\": null}}}",
                    "zero_optimization.offload_param.device", "got null", NULL);
    EXPECT_LOAD_ERR("{\"zero_optimization\": {\"offload_optimizer\": {\"fast_init\": 0}}}",
                    "zero_optimization.offload_optimizer.fast_init: expected true or false",
                    "got 0", NULL);
    EXPECT_LOAD_ERR("{\"zero_optimization\": {\"offload_optimizer\": \"nvme\"}}",
                    "zero_optimization.offload_optimizer: expected an object",
                    "got string \"nvme\"", NULL);
    EXPECT_LOAD_ERR("{\"zero_optimization\": {\"offload_param\": true}}",
                    "zero_optimization.offload_param: expected an object", "got true", NULL);
    EXPECT_LOAD_ERR("{\"zero_optimization\": {\"sub_group_size\": \"1e9\"}}",
                    "zero_optimization.sub_group_size: expected an integer >= 1",
                    "got string \"1e9\"", NULL);
    EXPECT_LOAD_ERR("{\"aio\": {\"block_size\": 4096.5}}",
                    "aio.block_size: expected an integer 4096..1073741824 and a multiple of 4096",
                    "got 4096.5", NULL);
    EXPECT_LOAD_ERR("{\"aio\": {\"engine\": 1}}",
                    "aio.engine: expected one of auto, io_uring, threads (case-insensitive)",
                    "got 1", NULL);
    EXPECT_LOAD_ERR("{\"aio\": {\"single_submit\": \"false\"}}",
                    "aio.single_submit: expected true or false", "got string \"false\"", NULL);
    EXPECT_LOAD_ERR("{\"aio\": {\"overlap_events\": null}}", "aio.overlap_events", "got null",
                    NULL);
    EXPECT_LOAD_ERR("{\"aio\": 1048576}", "aio: expected an object", "got 1048576", NULL);
    EXPECT_LOAD_ERR("{\"zero_optimization\": {\"offload_optimizer\": {\"device\": \"gpu\"}}}",
                    "zero_optimization.offload_optimizer.device", NULL, NULL);
    EXPECT_SET_ERR("zero_optimization.offload_optimizer.buffer_count", "four",
                   "zero_optimization.offload_optimizer.buffer_count: expected an integer >= 1",
                   "got \"four\"");
    EXPECT_SET_ERR("zero_optimization.offload_optimizer.pipeline_read", "1",
                   "zero_optimization.offload_optimizer.pipeline_read: expected true or false",
                   "got \"1\"");
    EXPECT_SET_ERR("zero_optimization.offload_param.buffer_size", "1e8 ",
                   "zero_optimization.offload_param.buffer_size", "got \"1e8 \"");
    EXPECT_SET_ERR("aio.block_size", "1M", "aio.block_size: expected an integer 4096..1073741824",
                   "got \"1M\"");
    EXPECT_SET_ERR("aio.overlap_events", "yes", "aio.overlap_events: expected true or false",
                   "got \"yes\"");

    /* ranges */
    EXPECT_LOAD_ERR("{\"zero_optimization\": {\"offload_optimizer\": {\"buffer_count\": 0}}}",
                    "ds.json: zero_optimization.offload_optimizer.buffer_count must be >= 1, "
                    "got 0",
                    NULL, NULL);
    EXPECT_LOAD_ERR("{\"zero_optimization\": {\"offload_param\": {\"buffer_count\": 0}}}",
                    "zero_optimization.offload_param.buffer_count must be >= 1, got 0", NULL, NULL);
    EXPECT_LOAD_ERR("{\"zero_optimization\": {\"offload_param\": {\"buffer_count\": 3e9}}}",
                    "zero_optimization.offload_param.buffer_count must be <= 2147483647", "got 3e9",
                    NULL);
    EXPECT_LOAD_ERR("{\"zero_optimization\": {\"offload_optimizer\": {\"ratio\": 0}}}",
                    "zero_optimization.offload_optimizer.ratio: expected a number in (0, 1], "
                    "got 0",
                    NULL, NULL);
    EXPECT_LOAD_ERR("{\"zero_optimization\": {\"offload_optimizer\": {\"ratio\": 1.5}}}",
                    "zero_optimization.offload_optimizer.ratio: expected a number in (0, 1], "
                    "got 1.5",
                    NULL, NULL);
    EXPECT_LOAD_ERR("{\"zero_optimization\": {\"offload_optimizer\": {\"ratio\": -0.5}}}",
                    "zero_optimization.offload_optimizer.ratio", "got -0.5", NULL);
    EXPECT_LOAD_ERR("{\"zero_optimization\": {\"offload_param\": {\"buffer_size\": 0}}}",
                    "zero_optimization.offload_param.buffer_size must be >= 1, got 0", NULL, NULL);
    EXPECT_LOAD_ERR("{\"zero_optimization\": {\"offload_param\": {\"max_in_cpu\": -1}}}",
                    "ds.json: zero_optimization.offload_param.max_in_cpu must be >= 0, got -1",
                    NULL, NULL);
    EXPECT_LOAD_ERR("{\"zero_optimization\": {\"sub_group_size\": 0}}",
                    "zero_optimization.sub_group_size must be >= 1, got 0", NULL, NULL);
    EXPECT_LOAD_ERR("{\"aio\": {\"block_size\": 1000}}",
                    "ds.json: aio.block_size: expected an integer 4096..1073741824 and a "
                    "multiple of 4096, got 1000",
                    NULL, NULL);
    EXPECT_LOAD_ERR("{\"aio\": {\"block_size\": 6000}}",
                    "ds.json: aio.block_size: expected an integer 4096..1073741824 and a "
                    "multiple of 4096, got 6000",
                    NULL, NULL);
    EXPECT_LOAD_ERR("{\"aio\": {\"block_size\": 0}}", "aio.block_size", "got 0", NULL);
    /* the aio layer's limits, refused by key when the file is read (they were refused by the
     * aio layer, without the key, and only once something was offloaded) */
    EXPECT_LOAD_ERR("{\"aio\": {\"block_size\": 2147483648}}",
                    "ds.json: aio.block_size: expected an integer 4096..1073741824", NULL, NULL);
    EXPECT_LOAD_ERR("{\"aio\": {\"queue_depth\": 1000000000}}",
                    "ds.json: aio.queue_depth: expected an integer 1..32767, got 1000000000", NULL,
                    NULL);
    EXPECT_LOAD_ERR("{\"aio\": {\"thread_count\": 1025}}",
                    "ds.json: aio.thread_count: expected an integer 1..1024, got 1025", NULL, NULL);
    EXPECT_LOAD_ERR("{\"aio\": {\"intra_op_parallelism\": 1025}}",
                    "aio.intra_op_parallelism: expected an integer 1..1024", NULL, NULL);
    EXPECT_LOAD_ERR("{\"aio\": {\"block_size\": -4096}}", "aio.block_size", "got -4096", NULL);
    EXPECT_LOAD_ERR("{\"aio\": {\"block_size\": 1e30}}", "aio.block_size", "got 1e30", NULL);
    EXPECT_LOAD_ERR("{\"aio\": {\"queue_depth\": 0}}",
                    "aio.queue_depth: expected an integer 1..32767, got 0", NULL, NULL);
    EXPECT_LOAD_ERR("{\"aio\": {\"thread_count\": 0}}",
                    "aio.thread_count: expected an integer 1..1024, got 0", NULL, NULL);
    EXPECT_LOAD_ERR("{\"aio\": {\"intra_op_parallelism\": -2}}",
                    "aio.intra_op_parallelism: expected an integer 1..1024, got -2", NULL, NULL);
    EXPECT_SET_ERR("zero_optimization.offload_optimizer.buffer_count", "0",
                   "command line: zero_optimization.offload_optimizer.buffer_count must be >= 1",
                   "got 0");
    EXPECT_SET_ERR("zero_optimization.offload_optimizer.ratio", "0",
                   "zero_optimization.offload_optimizer.ratio: expected a number in (0, 1]",
                   "got 0");
    EXPECT_SET_ERR("zero_optimization.offload_optimizer.ratio", "1.5",
                   "zero_optimization.offload_optimizer.ratio", "got 1.5");
    EXPECT_SET_ERR("zero_optimization.offload_param.max_in_cpu", "-1",
                   "zero_optimization.offload_param.max_in_cpu must be >= 0", "got -1");
    EXPECT_SET_ERR("zero_optimization.sub_group_size", "0",
                   "zero_optimization.sub_group_size must be >= 1", "got 0");
    EXPECT_SET_ERR("aio.block_size", "1000",
                   "command line: aio.block_size: expected an integer 4096..1073741824 and a "
                   "multiple of 4096",
                   "got 1000");
    EXPECT_SET_ERR("aio.block_size", "6000", "aio.block_size", "a multiple of 4096, got 6000");
    EXPECT_SET_ERR("aio.queue_depth", "0", "aio.queue_depth: expected an integer 1..32767",
                   "got 0");
    EXPECT_SET_ERR("aio.thread_count", "0", "aio.thread_count: expected an integer 1..1024",
                   "got 0");

    /* choices */
    EXPECT_LOAD_ERR("{\"zero_optimization\": {\"offload_optimizer\": {\"device\": \"disk\"}}}",
                    "ds.json: zero_optimization.offload_optimizer.device: expected one of none, "
                    "cpu, nvme (case-insensitive), got string \"disk\"",
                    NULL, NULL);
    EXPECT_LOAD_ERR("{\"zero_optimization\": {\"offload_param\": {\"device\": \"disk\"}}}",
                    "zero_optimization.offload_param.device: expected one of none, cpu, nvme",
                    "got string \"disk\"", NULL);
    EXPECT_LOAD_ERR("{\"zero_optimization\": {\"offload_param\": {\"device\": \"\"}}}",
                    "zero_optimization.offload_param.device", "got string \"\"", NULL);
    EXPECT_SET_ERR("zero_optimization.offload_optimizer.device", "disk",
                   "command line: zero_optimization.offload_optimizer.device: expected one of "
                   "none, cpu, nvme (case-insensitive)",
                   "got \"disk\"");
    EXPECT_SET_ERR("zero_optimization.offload_param.device", "nvme ",
                   "zero_optimization.offload_param.device", "got \"nvme \"");
    EXPECT_LOAD_ERR("{\"aio\": {\"engine\": \"libaio\"}}",
                    "ds.json: aio.engine: expected one of auto, io_uring, threads "
                    "(case-insensitive), got string \"libaio\"",
                    NULL, NULL);
    EXPECT_SET_ERR("aio.engine", "uring", "aio.engine: expected one of auto, io_uring, threads",
                   "got \"uring\"");
    EXPECT_SET_ERR("aio.engine", "", "aio.engine", "got \"\"");

    /* use_gds: only false */
    EXPECT_LOAD_ERR("{\"aio\": {\"use_gds\": true}}",
                    "ds.json: aio.use_gds: true is not supported: zeroc has no GPU", NULL, NULL);
    EXPECT_LOAD_ERR("{\"aio\": {\"use_gds\": \"false\"}}", "aio.use_gds: expected true or false",
                    NULL, NULL);
    EXPECT_SET_ERR("aio.use_gds", "true", "aio.use_gds: true is not supported", "no GPU");
    CHECK_MSG(load(&c, "{\"aio\": {\"use_gds\": false}}", &err) == ZC_OK, err.msg);

    /* fast_init: accepted either way, changes nothing */
    CHECK_MSG(load(&c, "{\"zero_optimization\": {\"offload_optimizer\": {\"fast_init\": true}}}",
                   &err) == ZC_OK,
              err.msg);
    {
        zc_config d;
        zc_config_defaults(&d);
        CHECK(same_config(&c, &d));
    }
    CHECK(load(&c, "{\"zero_optimization\": {\"offload_optimizer\": {\"fast_init\": false}}}",
               &err) == ZC_OK);

    /* nvme_path: at most ZC_MAX_PATH - 1 bytes */
    {
        char long_path[ZC_MAX_PATH + 1], json[ZC_MAX_PATH + 128];
        memset(long_path, 'p', ZC_MAX_PATH - 1);
        long_path[0] = '/';
        long_path[ZC_MAX_PATH - 1] = '\0'; /* 1023 bytes: fits */
        snprintf(json, sizeof json,
                 "{\"zero_optimization\": {\"offload_optimizer\": {\"nvme_path\": \"%s\"}}}",
                 long_path);
        CHECK_MSG(load(&c, json, &err) == ZC_OK, err.msg);
        CHECK(strcmp(c.optimizer_nvme_path, long_path) == 0);
        CHECK_ROUND_TRIP(&c);
        zc_config_defaults(&c);
        EXPECT_SET_OK(&c, "zero_optimization.offload_param.nvme_path", long_path);
        CHECK(strcmp(c.param_nvme_path, long_path) == 0);
        long_path[ZC_MAX_PATH - 1] = 'p'; /* 1024 bytes: one too many */
        long_path[ZC_MAX_PATH] = '\0';
        snprintf(json, sizeof json,
                 "{\"zero_optimization\": {\"offload_optimizer\": {\"nvme_path\": \"%s\"}}}",
                 long_path);
        EXPECT_LOAD_ERR(json, "ds.json: zero_optimization.offload_optimizer.nvme_path",
                        "limit of 1023 bytes", "got 1024 bytes");
        EXPECT_SET_ERR("zero_optimization.offload_param.nvme_path", long_path,
                       "command line: zero_optimization.offload_param.nvme_path",
                       "limit of 1023 bytes");
    }
    /* a path with characters JSON escapes survives the round trip */
    zc_config_defaults(&c);
    EXPECT_SET_OK(&c, "zero_optimization.offload_param.nvme_path", "/mnt/a \"b\"\\c\td\xc3\xa9");
    CHECK_ROUND_TRIP(&c);

    /* unknown and still-refused keys */
    EXPECT_LOAD_ERR("{\"zero_optimization\": {\"offload_optimizer\": {\"devices\": \"cpu\"}}}",
                    "unknown key: zero_optimization.offload_optimizer.devices", NULL, NULL);
    EXPECT_LOAD_ERR("{\"zero_optimization\": {\"offload_param\": {\"ratio\": 1}}}",
                    "unknown key: zero_optimization.offload_param.ratio", NULL, NULL);
    EXPECT_LOAD_ERR("{\"aio\": {\"Block_size\": 4096}}", "unknown key: aio.Block_size", NULL, NULL);
    EXPECT_SET_ERR("aio.foo", "1", "command line: unknown key: aio.foo", NULL);
    EXPECT_SET_ERR("zero_optimization.offload_param.foo", "1",
                   "unknown key: zero_optimization.offload_param.foo", NULL);
    /* DeepSpeed's spelling is cpu_offload_param; its config refuses the plural as unknown */
    EXPECT_LOAD_ERR("{\"zero_optimization\": {\"cpu_offload_params\": false}}",
                    "unknown key: zero_optimization.cpu_offload_params", NULL, NULL);
    EXPECT_SET_ERR("zero_optimization.cpu_offload_params", "true",
                   "unknown key: zero_optimization.cpu_offload_params", NULL);
    EXPECT_SET_ERR("zero_optimization.offload_optimizer", "nvme",
                   "zero_optimization.offload_optimizer is a section",
                   "zero_optimization.offload_optimizer.device");
    EXPECT_SET_ERR("zero_optimization.offload_param", "{}",
                   "zero_optimization.offload_param is a section",
                   "zero_optimization.offload_param.device");
    EXPECT_SET_ERR("aio", "1", "aio is a section", "aio.block_size");
    /* duplicates, also under DeepSpeed's two names of the thread count */
    EXPECT_LOAD_ERR("{\"zero_optimization\": {\"offload_param\": {\"device\": \"cpu\","
                    " \"device\": \"nvme\"}}}",
                    "duplicate key: zero_optimization.offload_param.device", NULL, NULL);
    EXPECT_LOAD_ERR("{\"aio\": {\"thread_count\": 2, \"intra_op_parallelism\": 2}}",
                    "duplicate key: aio.intra_op_parallelism",
                    "aio.intra_op_parallelism is another name for aio.thread_count", NULL);
    EXPECT_LOAD_ERR("{\"aio\": {\"intra_op_parallelism\": 2, \"thread_count\": 2}}",
                    "duplicate key: aio.thread_count", "another name", NULL);

    /* cross-key rules */
    EXPECT_VALIDATE_ERR("{\"zero_optimization\": {\"stage\": 0, \"offload_optimizer\":"
                        " {\"device\": \"nvme\", \"nvme_path\": \"/mnt/ssd\"}}}",
                        "zero_optimization.offload_optimizer.device nvme needs "
                        "zero_optimization.stage 1, 2 or 3",
                        "got stage 0");
    EXPECT_VALIDATE_ERR("{\"zero_optimization\": {\"stage\": 2, \"offload_param\":"
                        " {\"device\": \"nvme\", \"nvme_path\": \"/mnt/ssd\"}}}",
                        "zero_optimization.offload_param.device nvme needs "
                        "zero_optimization.stage 3",
                        "got stage 2");
    EXPECT_VALIDATE_ERR("{\"zero_optimization\": {\"stage\": 1, \"offload_param\":"
                        " {\"device\": \"nvme\", \"nvme_path\": \"/mnt/ssd\"}}}",
                        "zero_optimization.offload_param.device nvme needs "
                        "zero_optimization.stage 3",
                        "got stage 1");
    EXPECT_VALIDATE_ERR("{\"zero_optimization\": {\"stage\": 3, \"offload_param\":"
                        " {\"device\": \"nvme\"}}}",
                        "zero_optimization.offload_param.nvme_path: required when device is nvme",
                        NULL);
    EXPECT_VALIDATE_ERR("{\"zero_optimization\": {\"stage\": 1, \"offload_optimizer\":"
                        " {\"device\": \"nvme\", \"nvme_path\": \"\"}}}",
                        "zero_optimization.offload_optimizer.nvme_path: required when device is "
                        "nvme",
                        NULL);
    EXPECT_VALIDATE_ERR("{\"zero_optimization\": {\"stage\": 3, \"offload_optimizer\":"
                        " {\"device\": \"nvme\", \"nvme_path\": null}}}",
                        "zero_optimization.offload_optimizer.nvme_path: required", NULL);
    /* what is accepted: nvme optimizer at stages 1-3, nvme parameters at 3, cpu anywhere; a
     * path without nvme is kept and unused */
    static const char *const fine[] = {
        "{\"zero_optimization\": {\"stage\": 1, \"offload_optimizer\": {\"device\": \"nvme\","
        " \"nvme_path\": \"/mnt/ssd\"}}}",
        "{\"zero_optimization\": {\"stage\": 2, \"offload_optimizer\": {\"device\": \"nvme\","
        " \"nvme_path\": \"/mnt/ssd\"}}}",
        "{\"zero_optimization\": {\"stage\": 3, \"offload_optimizer\": {\"device\": \"nvme\","
        " \"nvme_path\": \"/mnt/ssd\"}, \"offload_param\": {\"device\": \"nvme\","
        " \"nvme_path\": \"/mnt/ssd\"}}}",
        "{\"zero_optimization\": {\"stage\": 3, \"offload_optimizer\": {\"device\": \"cpu\"},"
        " \"offload_param\": {\"device\": \"nvme\", \"nvme_path\": \"rel/dir\"}}}",
        "{\"zero_optimization\": {\"stage\": 0, \"offload_optimizer\": {\"device\": \"cpu\"},"
        " \"offload_param\": {\"device\": \"cpu\"}}}",
        "{\"zero_optimization\": {\"stage\": 2, \"offload_param\": {\"device\": \"cpu\"}}}",
        "{\"zero_optimization\": {\"stage\": 0, \"offload_optimizer\": {\"nvme_path\": \"/x\"},"
        " \"offload_param\": {\"device\": \"none\", \"nvme_path\": \"/y\"}}}",
    };
    for (size_t i = 0; i < sizeof fine / sizeof fine[0]; i++) {
        CHECK_MSG(load(&c, fine[i], &err) == ZC_OK, err.msg);
        CHECK_MSG(zc_config_validate(&c, 1, &err) == ZC_OK, err.msg);
        CHECK_MSG(zc_config_resolve_batch(&c, 2, &err) == ZC_OK, err.msg);
        CHECK_ROUND_TRIP(&c);
    }
    /* a flag can break the rule after the file: validate catches it */
    CHECK(load(&c, fine[2], &err) == ZC_OK);
    EXPECT_SET_OK(&c, "zero_optimization.stage", "2");
    CHECK(zc_config_validate(&c, 1, &err) == ZC_EINVAL);
    CHECK_MSG(strcmp(err.msg, "zero_optimization.offload_param.device nvme needs "
                              "zero_optimization.stage 3 (the stage that partitions the "
                              "parameters), got stage 2") == 0,
              err.msg);
    EXPECT_SET_OK(&c, "zero_optimization.offload_param.device", "none");
    CHECK_MSG(zc_config_validate(&c, 1, &err) == ZC_OK, err.msg);
    EXPECT_SET_OK(&c, "zero_optimization.stage", "0");
    CHECK(zc_config_validate(&c, 1, &err) == ZC_EINVAL);
    CHECK_MSG(strcmp(err.msg, "zero_optimization.offload_optimizer.device nvme needs "
                              "zero_optimization.stage 1, 2 or 3 (the stages that partition the "
                              "optimizer state), got stage 0") == 0,
              err.msg);

    /* hand-filled structs: ranges, enum values and strings again */
    zc_config_defaults(&c);
    c.offload_optimizer = (zc_offload_device)7;
    CHECK(zc_config_validate(&c, 1, &err) == ZC_EINVAL);
    CHECK_MSG(strcmp(err.msg, "zero_optimization.offload_optimizer.device: expected one of none, "
                              "cpu, nvme (case-insensitive), got enum value 7") == 0,
              err.msg);
    zc_config_defaults(&c);
    c.offload_param = (zc_offload_device)-1;
    CHECK(zc_config_validate(&c, 1, &err) == ZC_EINVAL &&
          strstr(err.msg, "zero_optimization.offload_param.device") &&
          strstr(err.msg, "enum value -1"));
    zc_config_defaults(&c);
    c.aio_engine = (zc_aio_engine)3;
    CHECK(zc_config_validate(&c, 1, &err) == ZC_EINVAL);
    CHECK_MSG(strstr(err.msg, "aio.engine: expected one of auto, io_uring, threads") &&
                  strstr(err.msg, "enum value 3"),
              err.msg);
    zc_config_defaults(&c);
    c.aio_block_size = 5000;
    CHECK(zc_config_validate(&c, 1, &err) == ZC_EINVAL);
    CHECK_MSG(strcmp(err.msg, "aio.block_size: expected an integer 4096..1073741824 and a "
                              "multiple of 4096, got 5000") == 0,
              err.msg);
    zc_config_defaults(&c);
    c.optimizer_ratio = 0;
    CHECK(zc_config_validate(&c, 1, &err) == ZC_EINVAL &&
          strstr(err.msg, "zero_optimization.offload_optimizer.ratio"));
    zc_config_defaults(&c);
    c.optimizer_ratio = NAN;
    CHECK(zc_config_validate(&c, 1, &err) == ZC_EINVAL && strstr(err.msg, "finite"));
    zc_config_defaults(&c);
    c.max_in_cpu = -5;
    CHECK(zc_config_validate(&c, 1, &err) == ZC_EINVAL &&
          strstr(err.msg, "zero_optimization.offload_param.max_in_cpu must be >= 0, got -5"));
    zc_config_defaults(&c);
    c.sub_group_size = 0;
    CHECK(zc_config_validate(&c, 1, &err) == ZC_EINVAL &&
          strstr(err.msg, "zero_optimization.sub_group_size"));
    zc_config_defaults(&c);
    c.aio_queue_depth = 0;
    CHECK(zc_config_validate(&c, 1, &err) == ZC_EINVAL && strstr(err.msg, "aio.queue_depth"));
    zc_config_defaults(&c);
    c.param_buffer_count = 0;
    CHECK(zc_config_validate(&c, 1, &err) == ZC_EINVAL &&
          strstr(err.msg, "zero_optimization.offload_param.buffer_count"));
    zc_config_defaults(&c);
    memset(c.param_nvme_path, 'x', sizeof c.param_nvme_path); /* no NUL */
    CHECK(zc_config_validate(&c, 1, &err) == ZC_EINVAL);
    CHECK_MSG(strstr(err.msg, "zero_optimization.offload_param.nvme_path") &&
                  strstr(err.msg, "1023 bytes"),
              err.msg);
    {
        char *json = zc_config_to_json(&c); /* prints at most the array, not past it */
        CHECK(json != NULL);
        free(json);
    }
}

static void test_to_json(void)
{
    zc_config c;
    zc_err err = {0};
    char *json;

    zc_config_defaults(&c);
    CHECK_ROUND_TRIP(&c);
    json = zc_config_to_json(&c);
    CHECK(json && strstr(json, "\"train_batch_size\"") == NULL); /* 0: not derived yet */
    CHECK(json && strstr(json, "\"AdamW\"") && strstr(json, "\"zero_optimization\"") &&
          strstr(json, "\"overlap_comm\":\ttrue") &&
          strstr(json, "\"reduce_bucket_size\":\t500000000") &&
          strstr(json, "\"comm_timeout_s\":\t600,"));
    free(json);

    CHECK(load(&c, FULL, &err) == ZC_OK);
    json = zc_config_to_json(&c);
    CHECK(json && strstr(json, "\"train_batch_size\":\t32") &&
          strstr(json, "\"seed\":\t18446744073709551615") && strstr(json, "\"lr\":\t0.0003"));
    free(json);
    CHECK_ROUND_TRIP(&c);

    /* doubles that print badly at 15 digits, and odd corners */
    zc_config_defaults(&c);
    c.lr = 0.1 + 0.2;
    c.beta1 = 1.0 / 3.0;
    c.beta2 = 0.9999999999999999;
    c.eps = 1.1754943508222875e-38; /* FLT_MIN: the smallest eps the update can add */
    c.weight_decay = 1e300;
    c.grad_clip = 0.7;
    c.comm_timeout_s = 1e-9;
    c.seed = 9007199254740993ull;
    c.stage = 2;
    c.optim = ZC_OPTIM_SGD;
    c.momentum = 0.99;
    c.reduce_bucket_size = INT64_MAX;
    c.prefetch_bucket_size = 0;
    c.max_live_parameters = 123456789012345;
    c.param_persistence_threshold = 100000;
    c.model_persistence_threshold = INT64_MAX;
    c.train_batch_size = 8;
    c.micro_batch = 2;
    c.grad_accum = 4;
    c.steps_per_print = INT_MAX;
    CHECK_ROUND_TRIP(&c);
    c.optim = ZC_OPTIM_ADAM;
    c.adam_w_mode = false;
    c.param_persistence_threshold = ZC_AUTO;
    c.model_persistence_threshold = 0;
    CHECK_ROUND_TRIP(&c);

    /* offload and aio: every key printed, the paths even when empty */
    zc_config_defaults(&c);
    json = zc_config_to_json(&c);
    CHECK_MSG(json && strstr(json, "\"sub_group_size\":\t4194304,") &&
                  strstr(json, "\"offload_optimizer\":\t{\n\t\t\t\"device\":\t\"none\",\n"
                               "\t\t\t\"nvme_path\":\t\"\",\n\t\t\t\"buffer_count\":\t4,\n"
                               "\t\t\t\"pin_memory\":\tfalse,\n\t\t\t\"ratio\":\t1,\n"
                               "\t\t\t\"pipeline_read\":\ttrue,\n"
                               "\t\t\t\"pipeline_write\":\ttrue,\n"
                               "\t\t\t\"fold_update\":\ttrue\n") &&
                  strstr(json, "\"offload_param\":\t{\n\t\t\t\"device\":\t\"none\",\n"
                               "\t\t\t\"nvme_path\":\t\"\",\n\t\t\t\"buffer_count\":\t5,\n"
                               "\t\t\t\"buffer_size\":\t100000000,\n"
                               "\t\t\t\"max_in_cpu\":\t1000000000,\n"
                               "\t\t\t\"pin_memory\":\tfalse\n") &&
                  strstr(json, "\"aio\":\t{\n\t\t\"block_size\":\t1048576,\n"
                               "\t\t\"queue_depth\":\t8,\n\t\t\"thread_count\":\t1,\n"
                               "\t\t\"single_submit\":\tfalse,\n"
                               "\t\t\"overlap_events\":\ttrue,\n\t\t\"use_gds\":\tfalse,\n"
                               "\t\t\"engine\":\t\"auto\"\n"),
              json ? json : "NULL");
    free(json);
    c.stage = 3;
    c.offload_optimizer = ZC_OFFLOAD_CPU;
    snprintf(c.optimizer_nvme_path, sizeof c.optimizer_nvme_path, "/nvme0/zeroc");
    c.optimizer_buffer_count = INT_MAX;
    c.optimizer_pin_memory = true;
    c.optimizer_ratio = 0.1 + 0.2;
    c.pipeline_read = false;
    c.offload_param = ZC_OFFLOAD_NVME;
    snprintf(c.param_nvme_path, sizeof c.param_nvme_path, "relative dir/\\x");
    c.param_buffer_count = 1;
    c.param_buffer_size = INT64_MAX;
    c.max_in_cpu = 0;
    c.sub_group_size = 9007199254740993;
    c.aio_block_size = 1 << 30;
    c.aio_queue_depth = 32767;
    c.aio_thread_count = 2;
    c.aio_single_submit = true;
    c.aio_overlap_events = false;
    c.aio_engine = ZC_AIO_URING;
    CHECK_MSG(zc_config_validate(&c, 1, &err) == ZC_OK, err.msg);
    CHECK_ROUND_TRIP(&c);
    json = zc_config_to_json(&c);
    CHECK_MSG(json && strstr(json, "\"device\":\t\"cpu\"") &&
                  strstr(json, "\"device\":\t\"nvme\"") &&
                  strstr(json, "\"nvme_path\":\t\"relative dir/\\\\x\"") &&
                  strstr(json, "\"ratio\":\t0.30000000000000004,") &&
                  strstr(json, "\"sub_group_size\":\t9007199254740993,") &&
                  strstr(json, "\"engine\":\t\"io_uring\""),
              json ? json : "NULL");
    free(json);
    c.offload_optimizer = ZC_OFFLOAD_NVME;
    c.aio_engine = ZC_AIO_THREADS;
    CHECK_ROUND_TRIP(&c);

    /* precision: every key printed; the DEFAULT types as null */
    zc_config_defaults(&c);
    json = zc_config_to_json(&c);
    CHECK_MSG(
        json && strstr(json, "\"fp16\":\t{\n\t\t\"enabled\":\tfalse,") &&
            strstr(json, "\"loss_scale\":\t0,") && strstr(json, "\"initial_scale_power\":\t16,") &&
            strstr(json, "\"loss_scale_window\":\t1000,") && strstr(json, "\"hysteresis\":\t2,") &&
            strstr(json, "\"consecutive_hysteresis\":\tfalse,") &&
            strstr(json, "\"min_loss_scale\":\t1,") && strstr(json, "\"auto_cast\":\tfalse") &&
            strstr(json, "\"bf16\":\t{\n\t\t\"enabled\":\tfalse\n") &&
            strstr(json, "\"communication_data_type\":\tnull") &&
            strstr(json, "\"data_types\":\t{\n\t\t\"grad_accum_dtype\":\tnull\n"),
        json ? json : "NULL");
    free(json);
    c.dtype = ZC_BF16;
    c.comm_dtype = ZC_FP32;
    c.grad_accum_dtype = ZC_FP16;
    json = zc_config_to_json(&c);
    CHECK_MSG(json && strstr(json, "\"bf16\":\t{\n\t\t\"enabled\":\ttrue\n") &&
                  strstr(json, "\"communication_data_type\":\t\"fp32\"") &&
                  strstr(json, "\"grad_accum_dtype\":\t\"fp16\""),
              json ? json : "NULL");
    free(json);
    CHECK_ROUND_TRIP(&c);
    zc_config_defaults(&c);
    c.dtype = ZC_FP16;
    c.comm_dtype = ZC_BF16;
    c.loss_scale = 0.1 + 0.2;
    c.initial_scale_power = 0;
    c.loss_scale_window = INT_MAX;
    c.hysteresis = INT_MAX;
    c.consecutive_hysteresis = true;
    c.min_loss_scale = 0x1p-126;
    CHECK_ROUND_TRIP(&c);
    json = zc_config_to_json(&c);
    CHECK(json && strstr(json, "\"fp16\":\t{\n\t\t\"enabled\":\ttrue,") &&
          strstr(json, "\"loss_scale\":\t0.30000000000000004,"));
    free(json);
    c.loss_scale = 0;
    c.initial_scale_power = 64;
    c.min_loss_scale = 65536;
    CHECK_ROUND_TRIP(&c);
    CHECK(load(&c, FP16_FULL, &err) == ZC_OK);
    CHECK_ROUND_TRIP(&c);

    /* after resolve_batch the derived global batch is printed */
    CHECK(load(&c, "{\"train_micro_batch_size_per_gpu\": 4}", &err) == ZC_OK);
    CHECK(zc_config_resolve_batch(&c, 8, &err) == ZC_OK);
    json = zc_config_to_json(&c);
    CHECK(json && strstr(json, "\"train_batch_size\":\t32"));
    free(json);
    CHECK_ROUND_TRIP(&c);
}

/* Keys of real DeepSpeed and Hugging Face configs that earlier versions refused: the legacy
 * boolean zero_optimization, overlap_comm false, reduce_bucket_size 0, max_grad_norm, the
 * activation_checkpointing section (null number_checkpoints as DeepSpeed's docs write it), and
 * every refusal of a file in one message. */
static void test_deepspeed_shapes(void)
{
    zc_config c;
    zc_err err = {0};

    CHECK(load(&c, "{\"zero_optimization\": true}", &err) == ZC_OK && c.stage == 1);
    CHECK(load(&c, "{\"zero_optimization\": false}", &err) == ZC_OK && c.stage == 0);
    CHECK(load(&c,
               "{\"zero_optimization\": {\"stage\": 2, \"overlap_comm\": false, "
               "\"reduce_bucket_size\": 0}}",
               &err) == ZC_OK &&
          c.stage == 2 && !c.overlap_comm && c.reduce_bucket_size == 0);
    CHECK_ROUND_TRIP(&c);
    CHECK(zc_estimate_rs_cols(0, 4, 1000) == 1000 && zc_estimate_rs_cols(100, 4, 1000) == 25 &&
          zc_estimate_rs_cols(1, 4, 1000) == 1 && zc_estimate_rs_cols(1 << 30, 4, 1000) == 1000);

    CHECK(load(&c, "{\"optimizer\": {\"type\": \"Adam\", \"params\": {\"max_grad_norm\": 1.5}}}",
               &err) == ZC_OK &&
          c.grad_clip == 1.5);
    CHECK(load(&c,
               "{\"gradient_clipping\": 2, \"optimizer\": {\"params\": "
               "{\"max_grad_norm\": 2}}}",
               &err) == ZC_OK &&
          c.grad_clip == 2);
    EXPECT_LOAD_ERR("{\"gradient_clipping\": 1, \"optimizer\": {\"params\": "
                    "{\"max_grad_norm\": 2}}}",
                    "optimizer.params.max_grad_norm 2 and gradient_clipping 1 disagree", NULL,
                    NULL);
    EXPECT_LOAD_ERR("{\"optimizer\": {\"params\": {\"max_grad_norm\": -1}}}",
                    "optimizer.params.max_grad_norm must be >= 0, got -1", NULL, NULL);

    CHECK(load(&c, "{}", &err) == ZC_OK && !c.activation_checkpointing);
    CHECK(load(&c,
               "{\"activation_checkpointing\": {\"partition_activations\": false, "
               "\"cpu_checkpointing\": false, \"contiguous_memory_optimization\": false, "
               "\"number_checkpoints\": null, \"synchronize_checkpoint_boundary\": false, "
               "\"profile\": false}}",
               &err) == ZC_OK &&
          c.activation_checkpointing);
    CHECK_MSG(strstr(c.no_effect, "activation_checkpointing.cpu_checkpointing (") &&
                  strstr(c.no_effect, "activation_checkpointing.number_checkpoints ("),
              c.no_effect);
    CHECK_ROUND_TRIP(&c);
    EXPECT_LOAD_ERR("{\"activation_checkpointing\": {\"number_checkpoints\": 0}}",
                    "activation_checkpointing.number_checkpoints must be >= 1, got 0", NULL, NULL);
    EXPECT_LOAD_ERR("{\"activation_checkpointing\": true}",
                    "activation_checkpointing: expected an object", "got true", NULL);

    /* every key zeroc lacks, named in one message, in the file's order; other keys still load
     * in between (a later bad value is reported instead) */
    EXPECT_LOAD_ERR("{\"amp\": {\"enabled\": true}, \"seed\": 3, \"flops_profiler\": "
                    "{\"enabled\": true}, \"scheduler\": {\"type\": \"WarmupCosineLR\", "
                    "\"params\": {\"total_num_steps\": 10, \"cos_min_ratio\": 0.1}}, "
                    "\"optimizer\": {\"params\": {\"amsgrad\": true}}}",
                    "not supported yet: amp; flops_profiler.enabled = true (zeroc has no FLOP "
                    "profiler; wall_clock_breakdown",
                    "; optimizer.params.amsgrad = true (", NULL);
    EXPECT_LOAD_ERR("{\"amp\": {}, \"seed\": -1}", "seed", "got -1", NULL);
    EXPECT_SET_ERR("amp", "1", "not supported yet: amp", NULL);
}

/* DeepSpeed's WarmupCosineLR, OneCycle and LRRangeTest: defaults, refusals, and rates at chosen
 * steps against values worked out independently from DeepSpeed's documented definitions, in
 * float64, by tests/lr_schedule_reference.py (its output, the literals below). Step `a` is the
 * rate after a applied steps; DeepSpeed's last_batch_iteration is a − 1. */
static void test_scheduler_more(void)
{
    zc_config c;
    zc_err err = {0};

    zc_config_defaults(&c); /* DeepSpeed's constructor defaults */
    CHECK(c.warmup_min_ratio == 0 && c.cos_min_ratio == 0.0001 && isnan(c.cycle_min_lr) &&
          isnan(c.cycle_max_lr) && c.decay_lr_rate == 0 && c.cycle_first_step_size == 2000 &&
          c.cycle_second_step_size == 0 && c.decay_step_size == 0 && c.cycle_momentum &&
          c.lr_range_test_min_lr == 1e-3 && c.lr_range_test_step_size == 2000 &&
          c.lr_range_test_step_rate == 1.0 && !c.lr_range_test_staircase);

    /* WarmupCosineLR, lr 0.01, T 20, W 5, warmup_min_ratio 0.1, cos_min_ratio 0.05: a = 3 is
     * it 2, linear 0.01 · (0.1 + 2/5 · 0.9) = 0.0046; a = 6 is 1 step into the cosine,
     * 0.01 · (0.05 + 0.95 · (1 + cos(π/15)) / 2); a = 20 its end, 0.01 · 0.05; a = 30 rises
     * again past T (cos(π · 25/15)), as DeepSpeed's does */
    static const int64_t cos_at[] = {0, 1, 3, 5, 6, 7, 12, 20, 21, 30};
    static const double cos_linear[] = {0.0,
                                        0.001,
                                        0.004600000000000001,
                                        0.0082,
                                        0.009896201103485576,
                                        0.009589340923802354,
                                        0.0057465102005213545,
                                        0.0005,
                                        0.000603798896514423,
                                        0.007625};
    CHECK_MSG(load(&c,
                   "{\"optimizer\": {\"params\": {\"lr\": 0.01}}, \"scheduler\": {\"type\": "
                   "\"WarmupCosineLR\", \"params\": {\"total_num_steps\": 20, "
                   "\"warmup_num_steps\": 5, \"warmup_min_ratio\": 0.1, \"cos_min_ratio\": 0.05, "
                   "\"warmup_type\": \"linear\"}}}",
                   &err) == ZC_OK &&
                  c.sched == ZC_SCHED_WARMUP_COSINE_LR,
              err.msg);
    CHECK_ROUND_TRIP(&c);
    for (size_t i = 0; i < sizeof cos_at / sizeof *cos_at; i++) {
        const double lr = zc_lr_schedule_at(&c, cos_at[i]);
        char what[96];
        snprintf(what, sizeof what, "WarmupCosineLR linear at %d: %.17g", (int)cos_at[i], lr);
        /* the cosine's values within an ulp or two of another libm's cos */
        record(fabs(lr - cos_linear[i]) <= 4e-16 * cos_linear[i], __FILE__, __LINE__, what, "");
    }
    c.warmup_type = ZC_WARMUP_LOG; /* a = 3: 0.01 · (0.1 + ln 3 / ln 5 · 0.9); a = 5: the peak */
    CHECK(fabs(zc_lr_schedule_at(&c, 3) - 0.007143455750373868) <= 1e-18 &&
          zc_lr_schedule_at(&c, 5) == 0.01 && zc_lr_schedule_at(&c, 0) == 0.0);
    CHECK_MSG(zc_config_resolve_batch(&c, 1, &err) == ZC_OK, err.msg);
    /* T equal to the warmup: DeepSpeed's divides by zero after it */
    EXPECT_VALIDATE_ERR("{\"scheduler\": {\"type\": \"WarmupCosineLR\", \"params\": "
                        "{\"total_num_steps\": 5, \"warmup_num_steps\": 5}}}",
                        "scheduler.params.total_num_steps 5 equals the warmup (5", NULL);

    /* OneCycle 0.001..0.01, up over 4 steps, down over 6, then ÷ (1 + 0.5 · steps after / 2):
     * a = 2: 0.001 + 0.009 · (0.2 / 0.4); a = 7: x = 0.7, scale (0.7 − 1) / (0.4 − 1) = 0.5;
     * a = 11: 1 step after, 0.001 / 1.25; a = 15: 0.001 / (1 + 0.5 · 5/2) */
    static const int64_t one_at[] = {0, 2, 4, 5, 7, 10, 11, 12, 15};
    static const double one_lr[] = {0.001,
                                    0.0055,
                                    0.009999999999999998,
                                    0.0085,
                                    0.005500000000000001,
                                    0.001,
                                    0.0008,
                                    0.0006666666666666666,
                                    0.00044444444444444447};
    CHECK_MSG(load(&c,
                   "{\"scheduler\": {\"type\": \"OneCycle\", \"params\": {\"cycle_min_lr\": "
                   "0.001, \"cycle_max_lr\": 0.01, \"cycle_first_step_size\": 4, "
                   "\"cycle_second_step_size\": 6, \"decay_step_size\": 2, \"decay_lr_rate\": "
                   "0.5, \"cycle_momentum\": false, \"cycle_first_stair_count\": 0, "
                   "\"cycle_min_mom\": 0.85, \"cycle_max_mom\": 0.99}}}",
                   &err) == ZC_OK,
              err.msg);
    CHECK_ROUND_TRIP(&c);
    for (size_t i = 0; i < sizeof one_at / sizeof *one_at; i++)
        CHECK_MSG(zc_lr_schedule_at(&c, one_at[i]) == one_lr[i], "OneCycle rate");
    CHECK_MSG(strstr(c.no_effect, "scheduler.params.cycle_first_stair_count (") &&
                  strstr(c.no_effect, "scheduler.params.cycle_min_mom (zeroc cycles no momentum"),
              c.no_effect);
    /* second step size and decay left out: symmetric, then cycle_min_lr for good */
    CHECK_MSG(load(&c,
                   "{\"scheduler\": {\"type\": \"OneCycle\", \"params\": {\"cycle_min_lr\": "
                   "0.001, \"cycle_max_lr\": 0.01, \"cycle_first_step_size\": 3, "
                   "\"cycle_momentum\": false}}}",
                   &err) == ZC_OK,
              err.msg);
    CHECK(zc_lr_schedule_at(&c, 1) == 0.004000000000000002 &&
          zc_lr_schedule_at(&c, 3) == 0.010000000000000002 &&
          zc_lr_schedule_at(&c, 4) == 0.007000000000000004 && zc_lr_schedule_at(&c, 6) == 0.001 &&
          zc_lr_schedule_at(&c, 100) == 0.001);
    CHECK_MSG(zc_config_resolve_batch(&c, 1, &err) == ZC_OK, err.msg);
    /* cycle_momentum true, DeepSpeed's default: beta1 would change every step */
    EXPECT_VALIDATE_ERR("{\"scheduler\": {\"type\": \"OneCycle\", \"params\": {\"cycle_min_lr\": "
                        "0.001, \"cycle_max_lr\": 0.01}}}",
                        "scheduler.params.cycle_momentum: true (DeepSpeed's default when not "
                        "given) is not supported with optimizer.type AdamW",
                        "--lr-schedule cosine");
    EXPECT_VALIDATE_ERR("{\"scheduler\": {\"type\": \"OneCycle\", \"params\": {\"cycle_max_lr\": "
                        "0.01, \"cycle_momentum\": false}}}",
                        "scheduler.params.cycle_min_lr: required by OneCycle", NULL);
    /* under SGD DeepSpeed's OneCycle leaves momentum alone: accepted, said to change nothing */
    CHECK_MSG(load(&c,
                   "{\"optimizer\": {\"type\": \"SGD\"}, \"scheduler\": {\"type\": \"OneCycle\", "
                   "\"params\": {\"cycle_min_lr\": 0.001, \"cycle_max_lr\": 0.01}}}",
                   &err) == ZC_OK &&
                  zc_config_resolve_batch(&c, 1, &err) == ZC_OK,
              err.msg);
    CHECK_MSG(strstr(c.no_effect, "scheduler.params.cycle_momentum (SGD has no betas"),
              c.no_effect);

    /* LRRangeTest 0.002 · (1 + 0.5 · a / 3), the quotient floored with staircase */
    CHECK_MSG(load(&c,
                   "{\"scheduler\": {\"type\": \"LRRangeTest\", \"params\": "
                   "{\"lr_range_test_min_lr\": 0.002, \"lr_range_test_step_size\": 3, "
                   "\"lr_range_test_step_rate\": 0.5}}}",
                   &err) == ZC_OK,
              err.msg);
    CHECK_ROUND_TRIP(&c);
    CHECK(zc_lr_schedule_at(&c, 0) == 0.002 && zc_lr_schedule_at(&c, 1) == 0.0023333333333333335 &&
          zc_lr_schedule_at(&c, 3) == 0.003 && zc_lr_schedule_at(&c, 4) == 0.003333333333333333 &&
          zc_lr_schedule_at(&c, 10) == 0.005333333333333334);
    c.lr_range_test_staircase = true;
    CHECK(zc_lr_schedule_at(&c, 1) == 0.002 && zc_lr_schedule_at(&c, 4) == 0.003 &&
          zc_lr_schedule_at(&c, 10) == 0.005);
    EXPECT_LOAD_ERR("{\"scheduler\": {\"type\": \"LRRangeTest\", \"params\": "
                    "{\"lr_range_test_step_size\": 0}}}",
                    "scheduler.params.lr_range_test_step_size must be >= 1", "got 0", NULL);
    EXPECT_SET_OK(&c, "scheduler.type", "OneCycle");
}

/* Monitors as DeepSpeed names them: a section with "enabled": false (or none: DeepSpeed's
 * default) is accepted; tensorboard, csv_monitor, comms_logger and wall_clock_breakdown are read
 * into the configuration (DeepSpeed's defaults otherwise); wandb and flops_profiler enabled are
 * refused naming what zeroc has instead. */
static void test_monitors(void)
{
    zc_config c;
    zc_err err = {0};
    zc_config_defaults(&c);
    CHECK(!c.tensorboard && !c.csv_monitor && !c.wall_clock_breakdown && !c.comms_logger &&
          !c.comms_verbose && c.comms_prof_all && !c.comms_prof_ops[0] &&
          strcmp(c.tensorboard_job_name, "DeepSpeedJobName") == 0 &&
          strcmp(c.csv_job_name, "DeepSpeedJobName") == 0 && !c.tensorboard_output_path[0]);
    CHECK_MSG(load(&c,
                   "{\"tensorboard\": {\"enabled\": true, \"output_path\": \"tb/\", "
                   "\"job_name\": \"x\"}, \"csv_monitor\": {\"enabled\": true, \"output_path\": "
                   "\"c\"}, \"comms_logger\": {\"enabled\": true, \"verbose\": true, \"prof_all\": "
                   "false, \"debug\": false, \"prof_ops\": [\"all_reduce\", \"all_gather\"]}, "
                   "\"wall_clock_breakdown\": true}",
                   &err) == ZC_OK,
              err.msg);
    CHECK(c.tensorboard && strcmp(c.tensorboard_output_path, "tb/") == 0 &&
          strcmp(c.tensorboard_job_name, "x") == 0 && c.csv_monitor &&
          strcmp(c.csv_output_path, "c") == 0 && strcmp(c.csv_job_name, "DeepSpeedJobName") == 0 &&
          c.comms_logger && c.comms_verbose && !c.comms_prof_all &&
          strcmp(c.comms_prof_ops, "all_reduce,all_gather") == 0 && c.wall_clock_breakdown);
    CHECK(strstr(c.no_effect, "comms_logger.debug") != NULL);
    CHECK(zc_config_set(&c, "comms_logger.prof_ops", "broadcast", &err) == ZC_OK &&
          strcmp(c.comms_prof_ops, "broadcast") == 0);
    CHECK(zc_config_set(&c, "tensorboard.enabled", "false", &err) == ZC_OK && !c.tensorboard);
    EXPECT_LOAD_ERR("{\"comms_logger\": {\"prof_ops\": [\"all_reduce\", 3]}}",
                    "comms_logger.prof_ops: expected an array of names", NULL, NULL);
    EXPECT_LOAD_ERR("{\"comms_logger\": {\"prof_ops\": \"all_reduce\"}}",
                    "comms_logger.prof_ops: expected an array of strings", NULL, NULL);
    /* DeepSpeed's config models forbid other members, enabled or not */
    EXPECT_LOAD_ERR("{\"tensorboard\": {\"enabled\": false, \"outputpath\": \"x\"}}",
                    "unknown key: tensorboard.outputpath", NULL, NULL);
    CHECK_MSG(load(&c,
                   "{\"tensorboard\": {\"enabled\": false, \"output_path\": \"tb/\", "
                   "\"job_name\": \"x\"}, \"csv_monitor\": {\"enabled\": false}, \"wandb\": "
                   "{\"enabled\": false, \"project\": \"p\"}, \"comms_logger\": {\"enabled\": "
                   "false, \"verbose\": false}, \"flops_profiler\": {\"enabled\": false, "
                   "\"profile_step\": 1}, \"wall_clock_breakdown\": false}",
                   &err) == ZC_OK,
              err.msg);
    CHECK_MSG(load(&c, "{\"tensorboard\": {\"output_path\": \"tb/\"}}", &err) == ZC_OK, err.msg);
    EXPECT_LOAD_ERR("{\"tensorboard\": {\"enabled\": true}, \"csv_monitor\": {\"enabled\": true}, "
                    "\"wandb\": {\"enabled\": true}, \"comms_logger\": {\"enabled\": true}, "
                    "\"flops_profiler\": {\"enabled\": true}}",
                    "not supported yet: wandb.enabled = true (zeroc does not talk to Weights & "
                    "Biases; use tensorboard or csv_monitor, or --report FILE",
                    "; flops_profiler.enabled = true (zeroc has no FLOP profiler; "
                    "wall_clock_breakdown",
                    "zeroc analyze");
    EXPECT_LOAD_ERR("{\"csv_monitor\": {\"enabled\": \"yes\"}}",
                    "csv_monitor.enabled: expected true or false, got string \"yes\"", NULL, NULL);
}

/* Every problem of a file in one message: an unknown ZeRO key, a bad value's type, a refused
 * scheduler (OneCycle's momentum cycle) and a conflicting pair (fp16 and bf16 both on) — it took
 * three runs to find four such. Alone, conflicts are all named by validate. */
static void test_all_problems_at_once(void)
{
    EXPECT_LOAD_ERR("{\"zero_optimization\": {\"stage\": 2, \"stagee\": 1}, \"scheduler\": "
                    "{\"type\": \"OneCycle\", \"params\": {\"cycle_min_lr\": 0.0001, "
                    "\"cycle_max_lr\": 0.001}}, \"gradient_clipping\": \"1.0\", \"fp16\": "
                    "{\"enabled\": true}, \"bf16\": {\"enabled\": true}}",
                    "ds.json: unknown key: zero_optimization.stagee; gradient_clipping: expected "
                    "a number >= 0, got string \"1.0\"; ",
                    "; fp16.enabled and bf16.enabled (or bfloat16.enabled) cannot both be true",
                    "; scheduler.params.cycle_momentum: true (DeepSpeed's default when not "
                    "given) is not supported");
    EXPECT_VALIDATE_ERR("{\"optimizer\": {\"params\": {\"adam_w_mode\": false}}, \"fp16\": "
                        "{\"enabled\": true}, \"bf16\": {\"enabled\": true}, \"scheduler\": "
                        "{\"type\": \"OneCycle\", \"params\": {\"cycle_max_lr\": 0.01}}}",
                        "optimizer.params.adam_w_mode is false but optimizer.type is AdamW",
                        "simultaneously enabled; scheduler.params.cycle_min_lr: required by "
                        "OneCycle");
}

/* DeepSpeed's WarmupLR and WarmupDecayLR: keys, defaults, "auto", refusals, and the rates step
 * by step against DeepSpeed's formulas worked out here (lr_schedules.py: W = max(2,
 * warmup_num_steps), the first step at warmup_min_lr, then iteration it = step − 1). */
static void test_scheduler(void)
{
    zc_config c;
    zc_err err = {0};

    zc_config_defaults(&c);
    CHECK(c.sched == ZC_SCHED_NONE && c.warmup_min_lr == 0 && isnan(c.warmup_max_lr) &&
          c.warmup_num_steps == 1000 && c.total_num_steps == 0 && c.warmup_type == ZC_WARMUP_LOG);
    CHECK(load(&c,
               "{\"optimizer\": {\"params\": {\"lr\": 0.02}}, \"scheduler\": "
               "{\"type\": \"WarmupLR\", \"params\": {\"warmup_num_steps\": 10}}}",
               &err) == ZC_OK &&
          c.sched == ZC_SCHED_WARMUP_LR);
    /* DeepSpeed's default for both types, 0.001: its engine builds the scheduler from the
     * scheduler's params alone, so the optimizer's lr plays no part (it was the peak here) */
    CHECK(zc_config_warmup_max_lr(&c) == 0.001);
    CHECK_ROUND_TRIP(&c);
    CHECK(zc_lr_schedule_at(&c, 0) == 0.0 && zc_lr_schedule_at(&c, 1) == 0.0);
    CHECK(fabs(zc_lr_schedule_at(&c, 5) - 0.001 * log(5.0) / log(10.0)) < 1e-18);
    CHECK(zc_lr_schedule_at(&c, 10) < 0.001 && zc_lr_schedule_at(&c, 11) == 0.001 &&
          zc_lr_schedule_at(&c, 1000000) == 0.001);
    /* the log says so once the configuration is final, when the optimizer's lr differs */
    CHECK_MSG(c.no_effect[0] == 0, c.no_effect);
    CHECK_MSG(zc_config_resolve_batch(&c, 1, &err) == ZC_OK, err.msg);
    CHECK_MSG(strstr(c.no_effect, "optimizer.params.lr (the scheduler has no warmup_max_lr, so it "
                                  "peaks at DeepSpeed's default 0.001 and the optimizer's lr is "
                                  "not used)") != NULL,
              c.no_effect);
    {
        static const char *const quiet[] = {
            /* the optimizer's lr is the default peak anyway */
            "{\"optimizer\": {\"params\": {\"lr\": 0.001}}, \"scheduler\": "
            "{\"type\": \"WarmupLR\"}}",
            /* warmup_max_lr given, or "auto" (the optimizer's lr is the peak) */
            "{\"optimizer\": {\"params\": {\"lr\": 0.02}}, \"scheduler\": "
            "{\"type\": \"WarmupDecayLR\", \"params\": {\"warmup_max_lr\": 0.03}}}",
            "{\"optimizer\": {\"params\": {\"lr\": 0.02}}, \"scheduler\": "
            "{\"type\": \"WarmupLR\", \"params\": {\"warmup_max_lr\": \"auto\"}}}",
            /* no scheduler: the optimizer's lr is the rate */
            "{\"optimizer\": {\"params\": {\"lr\": 0.02}}}"};
        for (size_t i = 0; i < sizeof quiet / sizeof quiet[0]; i++) {
            zc_config q;
            zc_config_defaults(&q);
            CHECK_MSG(zc_config_load_string(&q, quiet[i], "ds.json", &err) == ZC_OK &&
                          zc_config_resolve_batch(&q, 1, &err) == ZC_OK,
                      err.msg);
            CHECK_MSG(!strstr(q.no_effect, "optimizer.params.lr"), q.no_effect);
        }
    }

    CHECK(load(&c,
               "{\"scheduler\": {\"type\": \"warmupdecaylr\", \"params\": "
               "{\"warmup_min_lr\": 0.001, \"warmup_num_steps\": 10, "
               "\"total_num_steps\": 30, \"warmup_type\": \"linear\"}}}",
               &err) == ZC_OK &&
          c.sched == ZC_SCHED_WARMUP_DECAY_LR);
    CHECK(zc_config_warmup_max_lr(&c) == 0.001 * 1); /* WarmupDecayLR's default: 0.001 */
    CHECK_ROUND_TRIP(&c);
    c.warmup_max_lr = 0.011;
    CHECK(zc_lr_schedule_at(&c, 0) == 0.001 && zc_lr_schedule_at(&c, 1) == 0.001);
    CHECK(fabs(zc_lr_schedule_at(&c, 6) - (0.001 + 0.01 * 0.5)) < 1e-15);  /* it 5 of W 10 */
    CHECK(fabs(zc_lr_schedule_at(&c, 11) - 0.011) < 1e-15);                /* it 10: T−W / 20 */
    CHECK(fabs(zc_lr_schedule_at(&c, 21) - (0.001 + 0.01 * 0.5)) < 1e-15); /* it 20: 10 / 20 */
    CHECK(zc_lr_schedule_at(&c, 31) == 0.001 && zc_lr_schedule_at(&c, 100) == 0.001);
    c.warmup_num_steps = 0; /* DeepSpeed warms up over at least 2 iterations */
    CHECK(fabs(zc_lr_schedule_at(&c, 2) - (0.001 + 0.01 * 0.5)) < 1e-15);

    /* "auto" (the Hugging Face Trainer's placeholder): warmup_max_lr follows the optimizer's lr,
     * the others keep zeroc's defaults until a flag (the trainer's --warmup, --steps) sets them */
    CHECK(load(&c,
               "{\"optimizer\": {\"params\": {\"lr\": 0.5}}, \"scheduler\": {\"type\": "
               "\"WarmupDecayLR\", \"params\": {\"warmup_min_lr\": \"auto\", "
               "\"warmup_max_lr\": \"auto\", \"warmup_num_steps\": \"auto\", "
               "\"total_num_steps\": \"auto\"}}}",
               &err) == ZC_OK);
    /* warmup_num_steps: the Trainer fills it with its warmup steps, 0 unless set, and the
     * flag's default here is --warmup's 0 (it was the struct's 1000, DeepSpeed's default for a
     * key left out) */
    CHECK(zc_config_warmup_max_lr(&c) == 0.5 && c.warmup_min_lr == 0 && c.warmup_num_steps == 0 &&
          c.total_num_steps == 0);
    CHECK_MSG(strstr(c.auto_keys, "scheduler.params.warmup_max_lr") &&
                  strstr(c.auto_keys, "scheduler.params.total_num_steps") &&
                  strstr(c.auto_keys, "scheduler.params.warmup_num_steps"),
              c.auto_keys);
    CHECK_ROUND_TRIP(&c);
    {
        zc_config w;
        zc_config_defaults(&w);
        CHECK(load(&w,
                   "{\"scheduler\": {\"type\": \"WarmupLR\", \"params\": "
                   "{\"warmup_num_steps\": 30}}}",
                   &err) == ZC_OK &&
              w.warmup_num_steps == 30);
        CHECK(zc_config_load_string(&w,
                                    "{\"scheduler\": {\"type\": \"WarmupLR\", \"params\": "
                                    "{\"warmup_num_steps\": \"auto\"}}}",
                                    "ds.json", &err) == ZC_OK &&
              w.warmup_num_steps == 0);
        EXPECT_SET_OK(&w, "scheduler.params.warmup_num_steps", "7"); /* --warmup 7 */
        CHECK(w.warmup_num_steps == 7);
        EXPECT_SET_ERR("scheduler.params.warmup_num_steps", "auto",
                       "scheduler.params.warmup_num_steps", "got \"auto\"");
    }
    EXPECT_SET_OK(&c, "scheduler.params.total_num_steps", "40");
    EXPECT_SET_OK(&c, "scheduler.params.warmup_max_lr", "auto");
    CHECK(c.total_num_steps == 40 && zc_config_warmup_max_lr(&c) == 0.5);

    EXPECT_LOAD_ERR("{\"scheduler\": {\"params\": {\"warmup_num_steps\": 5}}}",
                    "scheduler.type: required", NULL, NULL);
    /* "auto" would keep the type's current value, no schedule at all: refused, not dropped */
    EXPECT_LOAD_ERR("{\"scheduler\": {\"type\": \"auto\", \"params\": {\"warmup_min_lr\": "
                    "\"auto\", \"warmup_max_lr\": \"auto\", \"warmup_num_steps\": \"auto\"}}}",
                    "scheduler.type: \"auto\" is not supported",
                    "WarmupLR, WarmupDecayLR, WarmupCosineLR, OneCycle or LRRangeTest",
                    "--lr-schedule cosine");
    EXPECT_SET_ERR("scheduler.type", "auto", "scheduler.type", "WarmupLR, WarmupDecayLR");
    EXPECT_LOAD_ERR("{\"scheduler\": {\"type\": \"Cosine\"}}", "scheduler.type",
                    "one of WarmupLR, WarmupDecayLR, WarmupCosineLR, OneCycle, LRRangeTest",
                    "got string \"Cosine\"; or leave the scheduler section out and use zeroc "
                    "train's own --lr-schedule cosine");
    EXPECT_LOAD_ERR("{\"scheduler\": {\"type\": \"WarmupLR\", \"params\": {\"warmup_type\": "
                    "\"cosine\"}}}",
                    "scheduler.params.warmup_type", "one of log, linear", NULL);
    /* another type's param: DeepSpeed's constructor fails on it */
    EXPECT_LOAD_ERR("{\"scheduler\": {\"type\": \"WarmupLR\", \"params\": {\"cycle_min_lr\": 1}}}",
                    "ds.json: scheduler.params.cycle_min_lr: not a parameter of WarmupLR "
                    "(DeepSpeed's WarmupLR would fail on it as an unexpected keyword argument); "
                    "it is one of OneCycle's",
                    NULL, NULL);
    EXPECT_LOAD_ERR("{\"scheduler\": {\"type\": \"WarmupLR\", \"params\": {\"total_num_steps\": "
                    "9}}}",
                    "scheduler.params.total_num_steps: not a parameter of WarmupLR",
                    "WarmupDecayLR's and WarmupCosineLR's", NULL);
    EXPECT_LOAD_ERR("{\"scheduler\": {\"type\": \"WarmupCosineLR\", \"params\": "
                    "{\"warmup_max_lr\": 0.1}}}",
                    "scheduler.params.warmup_max_lr: not a parameter of WarmupCosineLR", NULL,
                    NULL);
    EXPECT_LOAD_ERR("{\"scheduler\": {\"type\": \"Wrong\", \"params\": {\"nope\": 1}}}",
                    "scheduler.type: expected one of", "unknown key: scheduler.params.nope", NULL);
    EXPECT_LOAD_ERR("{\"scheduler\": {\"type\": \"WarmupDecayLR\", \"params\": "
                    "{\"total_num_steps\": 0}}}",
                    "scheduler.params.total_num_steps", "got 0", NULL);
    EXPECT_LOAD_ERR("{\"scheduler\": {\"type\": \"WarmupLR\", \"params\": "
                    "{\"warmup_max_lr\": -1}}}",
                    "scheduler.params.warmup_max_lr must be >= 0", "got -1", NULL);
    EXPECT_SET_ERR("scheduler.type", "Cosine", "scheduler.type: expected one of",
                   "--lr-schedule cosine");

    /* last_batch_iteration: DeepSpeed's -1 is a fresh start; any other is a resumed schedule,
     * which goes through zeroc's checkpoints */
    CHECK_MSG(load(&c,
                   "{\"scheduler\": {\"type\": \"WarmupLR\", \"params\": "
                   "{\"last_batch_iteration\": -1, \"warmup_num_steps\": 10}}}",
                   &err) == ZC_OK,
              err.msg);
    CHECK(zc_lr_schedule_at(&c, 0) == 0.0 && zc_lr_schedule_at(&c, 11) == 0.001);
    CHECK_MSG(load(&c,
                   "{\"scheduler\": {\"type\": \"WarmupDecayLR\", \"params\": "
                   "{\"last_batch_iteration\": -1.0}}}",
                   &err) == ZC_OK,
              err.msg);
    EXPECT_LOAD_ERR("{\"scheduler\": {\"type\": \"WarmupLR\", \"params\": "
                    "{\"last_batch_iteration\": 5}}}",
                    "ds.json: not supported yet: scheduler.params.last_batch_iteration = 5 (",
                    "--resume", NULL);
    EXPECT_LOAD_ERR("{\"scheduler\": {\"type\": \"WarmupLR\", \"params\": "
                    "{\"last_batch_iteration\": \"x\"}}}",
                    "scheduler.params.last_batch_iteration: expected a number", "got string \"x\"",
                    NULL);
    EXPECT_SET_ERR("scheduler.params.last_batch_iteration", "0",
                   "command line: not supported yet: scheduler.params.last_batch_iteration = \"0\"",
                   NULL);
}

int main(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/zeroc_test_config_XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 2;
    }

    test_defaults();
    test_full_config_file();
    test_file_errors();
    test_load_errors();
    test_set();
    test_validate();
    test_resolve_batch();
    test_precision();
    test_offload();
    test_to_json();
    test_deepspeed_shapes();
    test_scheduler();
    test_scheduler_more();
    test_monitors();
    test_all_problems_at_once();

    static const char *const files[] = {"ds_config.json", "bad.json",  "empty.json",
                                        "nul.json",       "list.json", "offload.json"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[128];
        snprintf(path, sizeof path, "%s/%s", tmpdir, files[i]);
        unlink(path);
    }
    rmdir(tmpdir);

    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
