/* train.c — `zeroc train`: reads the configuration, builds a model on the ZeRO engine, trains it,
 * prints one line per optimizer step, and writes the report.
 *
 * The loop knows models only through train_model (cli/train_model.h): a model adaptor fills a
 * micro-batch for (step, micro-step, rank) and runs forward + backward. Everything about ZeRO is
 * the engine's; this file only measures and reports. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/memory_check.h"
#include "cli/train_model.h"
#include "cli/train_opts.h"
#include "cli/train_report.h"
#include "cli/units.h"
#include "zeroc/checkpoint.h"
#include "zeroc/comm.h"
#include "zeroc/config.h"
#include "zeroc/engine.h"
#include "zeroc/gemm.h"
#include "zeroc/lr_schedule.h"
#include "zeroc/simd.h"
#include "zeroc/mem.h"
#include "zeroc/safetensors.h"

/* The effective configuration on one line (the library gives it pretty-printed). */
static void print_config(const zc_config *cfg)
{
    char *json = zc_config_to_json(cfg);
    if (!json)
        return;
    char *w = json;
    bool in_str = false;
    for (const char *r = json; *r; r++) {
        if (*r == '"')
            in_str = !in_str;
        if (!in_str && (*r == '\n' || *r == '\t' || *r == ' '))
            continue;
        *w++ = *r;
    }
    *w = 0;
    printf("config: %s\n", json);
    free(json);
}

static rank_memory my_memory(const zc_mem *mem)
{
    rank_memory m = {
        .params = zc_mem_get(mem, ZC_MEM_PARAMS).current,
        .grads = zc_mem_get(mem, ZC_MEM_GRADS).current,
        .optimizer = zc_mem_get(mem, ZC_MEM_OPTIMIZER).current,
        .comm = zc_mem_get(mem, ZC_MEM_COMM).current,
        .working_peak = zc_mem_get(mem, ZC_MEM_WORKING).peak,
        .activations_peak = zc_mem_get(mem, ZC_MEM_ACTIVATIONS).peak,
        .model_states_peak = zc_mem_model_states_peak(mem),
        .offload_peak = zc_mem_get(mem, ZC_MEM_OFFLOAD).peak,
        .nvme = zc_mem_get(mem, ZC_MEM_NVME).current,
        .peak_rss = zc_mem_peak_rss(),
    };
    return m;
}

static double comm_total(const zc_comm_counters *c, zc_comm_op op) { return (double)c->bytes[op]; }


/* Can the run write `path` when it ends? Probed now, so that a typo costs nothing: an existing
 * file must open for writing (it is not changed), a new one is created and removed again. */
static zc_status probe_file(const char *flag, const char *path, zc_err *err)
{
    int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
    bool created = false;
    if (fd < 0 && errno == ENOENT) {
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        created = fd >= 0;
    }
    if (fd < 0)
        return zc_err_set(err, ZC_EINVAL, "%s %s: cannot write there: %s", flag, path,
                          strerror(errno));
    close(fd);
    if (created)
        unlink(path);
    return ZC_OK;
}

/* The save directory: an existing one must be a directory the run can create files in; a new
 * one is made and removed again (saving makes it). */
static zc_status probe_dir(const char *flag, const char *dir, zc_err *err)
{
    char probe[4200];
    bool made = mkdir(dir, 0755) == 0;
    if (!made && errno != EEXIST)
        return zc_err_set(err, ZC_EINVAL, "%s %s: cannot create it: %s", flag, dir,
                          strerror(errno));
    snprintf(probe, sizeof probe, "%s/.zeroc-probe-%d", dir, (int)getpid());
    zc_status st = probe_file(flag, probe, err);
    if (st)
        snprintf(err->msg, sizeof err->msg, "%s %s: not a directory zeroc can write in", flag,
                 dir);
    if (made)
        rmdir(dir);
    return st;
}

/* Every output the run will write at its end, checked before its first step (rank 0 writes
 * them; every rank learns the outcome). */
static zc_status check_outputs(zc_comm *comm, const train_opts *o, zc_err *err)
{
    zc_status st = ZC_OK;
    if (o->save_final && strcmp(o->model, "gpt2"))
        st = zc_err_set(err, ZC_EINVAL, "--save-final: model '%s' has no own file format (use "
                        "--save-weights)", o->model);
    if (zc_comm_rank(comm) == 0) {
        if (!st && o->report)
            st = probe_file("--report", o->report, err);
        if (!st && o->save_weights)
            st = probe_file("--save-weights", o->save_weights, err);
        if (!st && o->save_final)
            st = probe_file("--save-final", o->save_final, err);
        if (!st && o->save_dir)
            st = probe_dir("--save-dir", o->save_dir, err);
    }
    return zc_comm_agree(comm, st, "checking the output paths", err);
}

/* Flags that would be ignored, or silently replaced, are refused instead: the run would train
 * something else than the command line says. Records which shape flags were given (beside an
 * llm.c --init they must agree with the file: cli/train_gpt2.c). */
static zc_status refuse_unused(int argc, char **argv, train_opts *o, zc_err *err)
{
    o->given.layers = args_given(argc, argv, 2, "--layers");
    o->given.channels = args_given(argc, argv, 2, "--channels");
    o->given.heads = args_given(argc, argv, 2, "--heads");
    o->given.vocab = args_given(argc, argv, 2, "--vocab");
    o->given.max_seq_len = args_given(argc, argv, 2, "--max-seq-len");
    static const char *const gpt2_only[] = {
        "--channels", "--heads", "--seq-len", "--max-seq-len", "--vocab", "--data", "--shuffle",
        "--val-data", "--val-every", "--val-batches", "--activation-checkpointing",
        "--sample-every", "--sample-length", "--save-final"};
    const bool gpt2 = !strcmp(o->model, "gpt2");
    for (size_t i = 0; !gpt2 && i < sizeof gpt2_only / sizeof *gpt2_only; i++)
        if (args_given(argc, argv, 2, gpt2_only[i]))
            return zc_err_set(err, ZC_EINVAL, "%s is a gpt2 flag; --model %s does not use it",
                              gpt2_only[i], o->model);
    if (gpt2 && args_given(argc, argv, 2, "--hidden"))
        return zc_err_set(err, ZC_EINVAL, "--hidden is an mlp flag; --model gpt2 takes "
                          "--channels");
    if (args_given(argc, argv, 2, "--layers") && o->layers < 1)
        return zc_err_set(err, ZC_EINVAL, "--layers must be >= 1, got %d", o->layers);
    bool llmc_init = gpt2 && o->init && !zc_safetensors_is_path(o->init);
    if (gpt2 && !llmc_init && o->max_seq_len && o->seq_len > o->max_seq_len)
        return zc_err_set(err, ZC_EINVAL, "--seq-len %d is longer than --max-seq-len %d",
                          o->seq_len, o->max_seq_len);
    if (!o->val_data && (args_given(argc, argv, 2, "--val-every") ||
                         args_given(argc, argv, 2, "--val-batches")))
        return zc_err_set(err, ZC_EINVAL, "--val-every and --val-batches need --val-data");
    if (!o->sample_every && args_given(argc, argv, 2, "--sample-length"))
        return zc_err_set(err, ZC_EINVAL, "--sample-length needs --sample-every");
    return ZC_OK;
}

/* A checkpoint resumes only into the model it was written for: the units' sizes are checked by
 * the loader, but some shapes (GPT-2's head count) change no size. Every field the model
 * describes itself by must match what the checkpoint's trainer recorded. */
static zc_status same_model(const char *dir, const char *client, const train_opts *o,
                            const train_model *m, zc_err *err)
{
    char want_text[sizeof m->describe + 64];
    snprintf(want_text, sizeof want_text, "{\"model\": \"%s\"%s%s}", o->model,
             m->describe[0] ? ", " : "", m->describe);
    cJSON *have = client ? cJSON_Parse(client) : NULL, *want = cJSON_Parse(want_text);
    zc_status st = ZC_OK;
    if (!want)
        st = zc_err_set(err, ZC_ENOMEM, "out of memory");
    for (const cJSON *w = want ? want->child : NULL; w && !st; w = w->next) {
        const cJSON *h = cJSON_GetObjectItemCaseSensitive(have, w->string);
        char *hs = h ? cJSON_PrintUnformatted(h) : NULL, *ws = cJSON_PrintUnformatted(w);
        if (!h || !hs || !ws || strcmp(hs, ws))
            st = zc_err_set(err, ZC_EINVAL, "--resume %s: the checkpoint was written for %s %s, "
                            "this run has %s (resume with the same model shape)", dir,
                            w->string, hs ? hs : "(not recorded)", ws ? ws : "?");
        free(hs);
        free(ws);
    }
    cJSON_Delete(have);
    cJSON_Delete(want);
    return st;
}

/* The config's scheduler section and the schedule flags: --warmup fills its warmup_num_steps
 * (over the file, like every flag), --steps a WarmupDecayLR's total_num_steps the file left out
 * or gave as "auto"; --lr-schedule names the trainer's own schedule and cannot join it. The
 * activation_checkpointing section turns on the flag of that name. */
static zc_status resolve_schedule(int argc, char **argv, train_opts *o, zc_config *cfg,
                                  zc_err *err)
{
    char n[32];
    if (cfg->activation_checkpointing && strcmp(o->model, "gpt2"))
        return zc_err_set(err, ZC_EINVAL, "%s: activation_checkpointing: --model %s keeps no "
                          "activations to recompute (gpt2 does)", o->config, o->model);
    o->activation_checkpointing |= cfg->activation_checkpointing;
    if (cfg->sched == ZC_SCHED_NONE)
        return ZC_OK;
    if (args_given(argc, argv, 2, "--lr-schedule"))
        return zc_err_set(err, ZC_EINVAL, "--lr-schedule %s: %s has a scheduler (%s); give one "
                          "or the other", o->lr_schedule, o->config,
                          cfg->sched == ZC_SCHED_WARMUP_LR ? "WarmupLR" : "WarmupDecayLR");
    zc_status st = ZC_OK;
    if (args_given(argc, argv, 2, "--warmup")) {
        snprintf(n, sizeof n, "%d", o->warmup);
        st = zc_config_set(cfg, "scheduler.params.warmup_num_steps", n, err);
    }
    if (!st && cfg->sched == ZC_SCHED_WARMUP_DECAY_LR && cfg->total_num_steps == 0) {
        snprintf(n, sizeof n, "%d", o->steps);
        st = zc_config_set(cfg, "scheduler.params.total_num_steps", n, err);
    }
    return st;
}

/* Learning rate of optimizer step s (0-based). With the config's scheduler: DeepSpeed's, which
 * advances only on applied steps (an fp16 step skipped for overflow does not count). Else the
 * trainer's own: linear warmup over `warmup` steps, then constant or a cosine decay to 10% of
 * the peak at the last step. */
static double lr_at(const train_opts *o, const zc_config *cfg, int64_t skipped, int s)
{
    if (cfg->sched != ZC_SCHED_NONE)
        return zc_lr_schedule_at(cfg, s - skipped);
    const double peak = cfg->lr;
    if (s < o->warmup)
        return peak * (double)(s + 1) / (double)o->warmup;
    if (!strcmp(o->lr_schedule, "constant") || o->steps <= o->warmup + 1)
        return peak;
    double t = (double)(s - o->warmup) / (double)(o->steps - o->warmup - 1);
    return peak * (0.1 + 0.9 * 0.5 * (1.0 + cos(3.141592653589793 * t)));
}

/* The schedule's name and warmup steps, for the checkpoint's client record. */
static const char *schedule_name(const train_opts *o, const zc_config *cfg)
{
    return cfg->sched == ZC_SCHED_WARMUP_LR         ? "WarmupLR"
           : cfg->sched == ZC_SCHED_WARMUP_DECAY_LR ? "WarmupDecayLR"
                                                    : o->lr_schedule;
}

static long long schedule_warmup(const train_opts *o, const zc_config *cfg)
{
    return cfg->sched == ZC_SCHED_NONE ? o->warmup : (long long)cfg->warmup_num_steps;
}

/* Stops the run with err: frees what it built, then reports. A rank-local error (collective
 * false, more than one rank) aborts the job instead: that rank must not wait in the engine's
 * teardown for collectives the others may never finish. */
static int stop(zc_comm *comm, const zc_err *err, bool collective, train_model *m, zc_engine *e,
                zc_mem *mem, zc_ckpt_lock *lock)
{
    if (collective || zc_comm_size(comm) == 1) {
        if (m->destroy)
            m->destroy(m);
        zc_engine_destroy(e);
        zc_mem_destroy(mem);
    }
    zc_ckpt_unlock_dir(lock);
    return cli_fail(comm, err, collective);
}

int cmd_train(zc_comm *comm, int argc, char **argv)
{
    const int rank = zc_comm_rank(comm), nranks = zc_comm_size(comm);
    train_opts o = {.model = "mlp", .steps = 10, .hidden = 2048, .channels = 128,
                    .heads = 4, .seq_len = 128, .vocab = 256, .lr_schedule = "constant",
                    .val_batches = 8, .sample_length = 128};
    arg_spec specs[] = {
        {"--model", ARG_STR, &o.model, NULL, "model to train: mlp (default) or gpt2", NULL},
        {"--dtype", ARG_STR, &o.dtype, NULL,
         "fp32, bf16 or fp16: stored parameters and gradients (sets bf16/fp16.enabled)", NULL},
        {"--config", ARG_STR, &o.config, NULL, "DeepSpeed-style JSON config file", NULL},
        {"--steps", ARG_INT, &o.steps, NULL, "optimizer steps to run (default 10)", NULL},
        {"--report", ARG_STR, &o.report, NULL, "write the run's JSON report here (rank 0)", NULL},
        {"--save-weights", ARG_STR, &o.save_weights, NULL,
         "write the final weights as safetensors (fp32)", NULL},
        {"--hidden", ARG_INT, &o.hidden, NULL, "mlp: hidden size (default 2048)", NULL},
        {"--layers", ARG_INT, &o.layers, NULL,
         "mlp: Linear+ReLU layers (default 12); gpt2: blocks (default 4)", NULL},
        {"--channels", ARG_INT, &o.channels, NULL, "gpt2: channels C (default 128)", NULL},
        {"--heads", ARG_INT, &o.heads, NULL, "gpt2: attention heads (default 4)", NULL},
        {"--seq-len", ARG_INT, &o.seq_len, NULL, "gpt2: tokens per sequence T (default 128)",
         NULL},
        {"--max-seq-len", ARG_INT, &o.max_seq_len, NULL,
         "gpt2: position embeddings (default: --seq-len)", NULL},
        {"--vocab", ARG_INT, &o.vocab, NULL, "gpt2: vocabulary (default 256, byte-level)", NULL},
        {"--init", ARG_STR, &o.init, NULL,
         "start from FILE.safetensors (any model), or an llm.c checkpoint (gpt2; sets the shape)",
         NULL},
        {"--data", ARG_STR, &o.data, NULL, "gpt2: llm.c token file to train on", NULL},
        {"--shuffle", ARG_BOOL, &o.shuffle, NULL,
         "gpt2: visit whole windows in a seeded order each epoch (default: sequential)", NULL},
        {"--val-data", ARG_STR, &o.val_data, NULL, "gpt2: llm.c token file for validation", NULL},
        {"--val-every", ARG_INT, &o.val_every, NULL, "gpt2: validate every K steps (and at the end)",
         NULL},
        {"--val-batches", ARG_INT, &o.val_batches, NULL,
         "gpt2: micro-batches per rank in a validation (default 8)", NULL},
        {"--activation-checkpointing", ARG_BOOL, &o.activation_checkpointing, NULL,
         "gpt2: keep only block inputs, recompute blocks in backward", NULL},
        {"--no-memory-check", ARG_BOOL, &o.no_memory_check, NULL,
         "run even if the estimated memory per rank exceeds what the host can give", NULL},
        {"--sample-every", ARG_INT, &o.sample_every, NULL,
         "gpt2: print a generated sample every K steps (and at the end)", NULL},
        {"--sample-length", ARG_INT, &o.sample_length, NULL, "gpt2: tokens per sample (default 128)",
         NULL},
        {"--save-final", ARG_STR, &o.save_final, NULL,
         "gpt2: write the final weights as an llm.c checkpoint (fp32)", NULL},
        {"--warmup", ARG_INT, &o.warmup, NULL, "linear learning-rate warmup steps (default 0)",
         NULL},
        {"--lr-schedule", ARG_STR, &o.lr_schedule, NULL,
         "constant (default) or cosine (to 10% of --lr at the last step)", NULL},
        {"--save-dir", ARG_STR, &o.save_dir, NULL, "write sharded checkpoints under DIR", NULL},
        {"--save-every", ARG_INT, &o.save_every, NULL, "checkpoint every K steps (with --save-dir)",
         NULL},
        {"--keep", ARG_INT, &o.keep, NULL, "keep only the newest M checkpoints (default: all)",
         NULL},
        {"--resume", ARG_STR, &o.resume, NULL,
         "continue from DIR (its latest checkpoint) or DIR/step-N, on any ranks and stage", NULL},
        {"--stage", ARG_CONFIG, NULL, "zero_optimization.stage", "ZeRO stage 0-3", NULL},
        {"--micro-batch", ARG_CONFIG, NULL, "train_micro_batch_size_per_gpu",
         "samples per rank per micro-step (mlp default 32, gpt2 default 4)", NULL},
        {"--grad-accum", ARG_CONFIG, NULL, "gradient_accumulation_steps",
         "micro-steps per optimizer step", NULL},
        {"--lr", ARG_CONFIG, NULL, "optimizer.params.lr", "peak learning rate", NULL},
        {"--optimizer", ARG_CONFIG, NULL, "optimizer.type", "AdamW, Adam or SGD", NULL},
        {"--weight-decay", ARG_CONFIG, NULL, "optimizer.params.weight_decay", "weight decay",
         NULL},
        {"--clip", ARG_CONFIG, NULL, "gradient_clipping", "max global gradient norm, 0 = off",
         NULL},
        {"--seed", ARG_CONFIG, NULL, "seed", "seed of initial weights and data", NULL},
        {"--comm-timeout", ARG_CONFIG, NULL, "comm_timeout_s",
         "seconds a collective may wait before all ranks stop", NULL},
        {"--offload-optimizer", ARG_CONFIG, NULL, "zero_optimization.offload_optimizer.device",
         "none, cpu or nvme: optimizer state (and stage-3 gradients) in swap files", NULL},
        {"--offload-param", ARG_CONFIG, NULL, "zero_optimization.offload_param.device",
         "none, cpu or nvme: stage-3 parameter shards in swap files", NULL},
        {"--nvme-path", ARG_STR, &o.nvme_path, NULL,
         "directory of the swap files (sets both offload sections' nvme_path)", NULL},
        {"--sub-group-size", ARG_CONFIG, NULL, "zero_optimization.sub_group_size",
         "elements the optimizer step streams through RAM at a time", NULL},
        {"--aio-engine", ARG_CONFIG, NULL, "aio.engine",
         "auto (io_uring if the kernel allows), io_uring or threads", NULL},
    };
    const int nspecs = (int)(sizeof specs / sizeof specs[0]);
    zc_err err = {0};
    zc_config cfg;
    zc_config_defaults(&cfg);
    bool helped;
    zc_status st = args_parse_command(specs, nspecs, argc, argv, 2,
                                      "zeroc train [--model mlp|gpt2] [flags]", rank == 0,
                                      &helped, &err);
    if (helped)
        return 0;
    if (!st && o.config)
        st = zc_config_load_file(&cfg, o.config, &err);
    if (!st)
        st = args_apply_config(specs, nspecs, &cfg, &err);
    if (!st && o.nvme_path)
        st = zc_config_set(&cfg, "zero_optimization.offload_optimizer.nvme_path", o.nvme_path,
                           &err);
    if (!st && o.nvme_path)
        st = zc_config_set(&cfg, "zero_optimization.offload_param.nvme_path", o.nvme_path, &err);
    if (!st && o.dtype && strcmp(o.dtype, "fp32") && strcmp(o.dtype, "bf16") &&
        strcmp(o.dtype, "fp16"))
        st = zc_err_set(&err, ZC_EINVAL, "--dtype: expected fp32, bf16 or fp16, got '%s'",
                        o.dtype);
    if (!st && o.dtype) /* over the file's bf16/fp16 blocks, like any flag */
        st = zc_config_set(&cfg, "fp16.enabled", !strcmp(o.dtype, "fp16") ? "true" : "false",
                           &err);
    if (!st && o.dtype)
        st = zc_config_set(&cfg, "bf16.enabled", !strcmp(o.dtype, "bf16") ? "true" : "false",
                           &err);
    if (!st && !cfg.micro_batch_set && cfg.train_batch_size == 0) /* unless config or flag say */
        cfg.micro_batch = !strcmp(o.model, "gpt2") ? 4 : 32; /* MLP: the experiment's batch */
    if (!st)
        st = zc_config_resolve_batch(&cfg, nranks, &err);
    if (!st && o.steps < 1)
        st = zc_err_set(&err, ZC_EINVAL, "--steps must be >= 1, got %d", o.steps);
    if (!st && o.warmup < 0)
        st = zc_err_set(&err, ZC_EINVAL, "--warmup must be >= 0, got %d", o.warmup);
    if (!st && strcmp(o.lr_schedule, "constant") && strcmp(o.lr_schedule, "cosine"))
        st = zc_err_set(&err, ZC_EINVAL, "--lr-schedule: expected constant or cosine, got '%s'",
                        o.lr_schedule);
    if (!st && (o.save_every < 0 || o.keep < 0 || (o.save_every > 0 && !o.save_dir)))
        st = zc_err_set(&err, ZC_EINVAL, "--save-every needs --save-dir; --save-every and --keep "
                        "must be >= 0");
    if (!st && (o.val_every < 0 || o.sample_every < 0 || o.val_batches < 1 ||
                o.sample_length < 1))
        st = zc_err_set(&err, ZC_EINVAL, "--val-every and --sample-every must be >= 0, "
                        "--val-batches and --sample-length >= 1");
    if (!st)
        st = refuse_unused(argc, argv, &o, &err);
    if (!st)
        st = resolve_schedule(argc, argv, &o, &cfg, &err);
    if (!st)
        st = check_outputs(comm, &o, &err);
    /* the save directory is this job's until it ends: a second job is refused here */
    zc_ckpt_lock *save_lock = NULL;
    if (!st && o.save_dir)
        st = zc_ckpt_lock_dir(comm, o.save_dir, &save_lock, &err);
    if (st)
        return cli_fail(comm, &err, true);
    if (rank == 0)
        print_config(&cfg);
    if (rank == 0 && cfg.auto_keys[0]) /* the values they took are in the config line above */
        printf("\"auto\" in %s resolved from the command line, else zeroc's default: %s\n",
               o.config, cfg.auto_keys);
    if (rank == 0 && cfg.no_effect[0]) /* said once: DeepSpeed knobs with nothing to tune here */
        printf("accepted, changes nothing here: %s\n", cfg.no_effect);
    if (rank == 0 && cfg.offload_optimizer == ZC_OFFLOAD_CPU)
        printf("offload_optimizer.device cpu: on a CPU machine the optimizer state already lives "
               "in RAM, so nothing moves (device nvme puts it on disk)\n");
    if (rank == 0 && cfg.offload_param == ZC_OFFLOAD_CPU)
        printf("offload_param.device cpu: on a CPU machine the parameters already live in RAM, "
               "so nothing moves (device nvme puts them on disk)\n");

    zc_mem *mem = zc_mem_create();
    zc_engine *e = NULL;
    train_model model = {0};
    st = zc_engine_create(&e, &cfg, comm, mem, &err);
    if (!st)
        st = train_model_create(&model, &o, e, mem, comm, &cfg, &err);
    /* a rank that could not build the model (memory, a file it cannot read) tells the others,
     * which would otherwise wait for it in the engine's first collective: one message, no abort */
    st = zc_comm_agree(comm, st, "building the model", &err);
    /* before the states are allocated: a run that cannot fit is refused, not OOM-killed */
    if (!st && !o.no_memory_check)
        st = zc_comm_agree(comm, memory_check(comm, e, mem, &err), "the memory check", &err);
    if (!st) /* every rank computes the same verdict */
        st = train_model_agree_data(&model, comm, &err);
    bool agreed = st != ZC_OK; /* every rank has this error (no rank is left waiting) */
    if (!st && (st = zc_engine_finalize(e, &err)))
        agreed = true;
    if (!st && model.load)
        st = model.load(&model, &err);
    if (!st && o.init && zc_safetensors_is_path(o.init))
        st = zc_safetensors_load(e, o.init, &err);
    else if (!st && o.init && !model.load)
        st = zc_err_set(&err, ZC_EINVAL, "--init %s: the %s model starts from a .safetensors "
                        "file", o.init, o.model);
    int64_t first_step = 0;
    if (!st && o.resume) {
        char dir[4096], *client = NULL;
        double t_load = now_ms();
        if (!(st = zc_ckpt_resolve(o.resume, dir, sizeof dir, &err)))
            st = zc_ckpt_load(e, comm, dir, &first_step, &client, &err);
        if (!st) /* the same on every rank: every rank read the same manifest */
            st = same_model(dir, client, &o, &model, &err);
        free(client);
        if (!st && rank == 0)
            printf("resumed from %s at step %lld in %.2f s\n", dir, (long long)first_step,
                   (now_ms() - t_load) / 1e3);
        if (!st && first_step >= o.steps)
            st = zc_err_set(&err, ZC_EINVAL, "--resume: the checkpoint is at step %lld, not "
                            "before --steps %d", (long long)first_step, o.steps);
    }
    if (st)
        return stop(comm, &err, st == ZC_EINVAL || agreed, &model, e, mem, save_lock);

    train_report rep = {.model = o.model, .world_size = nranks, .stage = cfg.stage,
                        .first_step = (int)first_step, .steps = o.steps - (int)first_step};
    rep.tokens_per_step = model.tokens_per_micro_step * nranks * cfg.grad_accum;
    rep.dtype = zc_dtype_name(cfg.dtype);
    rep.grad_dtype = zc_dtype_name(zc_config_grad_dtype(&cfg));
    rep.comm_dtype = zc_dtype_name(zc_config_comm_dtype(&cfg));
    rep.params = (int64_t)zc_engine_total_numel(e);
    rep.params_padded = (int64_t)zc_engine_total_padded(e);
    zc_state_bytes s0 = zc_engine_state_bytes_for_stage(e, 0);
    rep.stage0_states = s0.params + s0.grads + s0.optimizer;
    if (rank == 0)
        printf("model: %s, %lld parameters (%lld padded over %d ranks), %d units; ZeRO stage %d; "
               "%s parameters, %s gradients, %s reduce-scatter\n",
               o.model, (long long)rep.params, (long long)rep.params_padded, nranks,
               zc_engine_num_units(e), cfg.stage, rep.dtype, rep.grad_dtype, rep.comm_dtype);
    zc_offload_stats disk;
    zc_engine_offload_stats(e, &disk);
    if (rank == 0 && disk.active)
        printf("offload: %s I/O; rank 0 keeps %.2f GiB of model states in %s%s%s (unlinked: the "
               "space returns to the file system when the process ends)\n",
               disk.aio_engine, (double)disk.nvme_bytes / (1 << 30),
               disk.optimizer_swap ? disk.optimizer_swap : "",
               disk.optimizer_swap && disk.param_swap ? " and " : "",
               disk.param_swap ? disk.param_swap : "");
    if (rank == 0 && cfg.offload_param == ZC_OFFLOAD_NVME)
        printf("offload_param: rank 0 keeps %lld parameter elements on disk and %lld in RAM "
               "(offload_param.max_in_cpu %lld)\n", (long long)disk.param_elems_on_disk,
               (long long)disk.param_elems_in_ram, (long long)cfg.max_in_cpu);
    if ((st = zc_engine_weights_sha256(e, rep.initial_sha, &err)))
        return stop(comm, &err, st == ZC_ELOCKSTEP, &model, e, mem, save_lock);
    zc_mem_reset_peaks(mem); /* the digest's buffer is not training's working memory */

    /* per-step series, indexed by the step's number (first_step … steps − 1) */
    double *loss = calloc((size_t)o.steps, sizeof(double));
    double *gnorm = calloc((size_t)o.steps, sizeof(double));
    double *lr = calloc((size_t)o.steps, sizeof(double));
    double *ms = calloc((size_t)o.steps, sizeof(double));
    double *scale = calloc((size_t)o.steps, sizeof(double));
    double *gemm_ms = calloc((size_t)o.steps, sizeof(double)); /* in the models' products */
    double *hits = calloc((size_t)o.steps, sizeof(double));   /* stage-3 prefetch */
    double *misses = calloc((size_t)o.steps, sizeof(double));
    double *val_loss = malloc((size_t)o.steps * sizeof(double)); /* NaN: no validation */
    disk_step *disk_steps = calloc((size_t)o.steps, sizeof *disk_steps);
    char *config_json = zc_config_to_json(&cfg);
    if (!loss || !gnorm || !lr || !ms || !scale || !gemm_ms || !hits || !misses || !val_loss ||
        !disk_steps || !config_json)
        st = zc_err_set(&err, ZC_ENOMEM, "out of memory for the per-step series of %d steps",
                        o.steps);
    for (int s = 0; val_loss && s < o.steps; s++)
        val_loss[s] = NAN;
    /* Bytes per op of each step (not of validation or sampling), summed over steps ≥ 2 (or the
     * only step): the report's per-step average. */
    zc_comm_counters prev = *zc_comm_get_counters(comm);
    double step_sum[ZC_COMM_NOPS] = {0};
    bool ckpt_failed = false; /* a failed save is every rank's error; an engine's I/O error is
                               * only its own rank's */
    for (int s = (int)first_step; s < o.steps && !st; s++) {
        double t0 = now_ms(), local = 0.0;
        zc_offload_stats d0;
        zc_engine_offload_stats(e, &d0);
        const double gemm0 = zc_gemm_get_counters().seconds;
        zc_step_info info = {0};
        zc_engine_set_lr(e, lr_at(&o, &cfg, zc_engine_loss_scaler(e)->skipped, s));
        for (int k = 0; k < cfg.grad_accum && !st; k++) {
            double l = 0.0;
            st = model.micro_step(&model, s, k, &l, &err);
            local += l;
            if (!st)
                st = zc_engine_step(e, &info, &err);
        }
        double sum = 0.0;
        if (!st)
            st = zc_comm_sum_f64(comm, local, &sum, "loss", &err);
        if (!st && !isfinite(sum)) /* the same sum on every rank: they all stop here */
            st = zc_err_set(&err, ZC_ESTATE, "step %d: the loss is %g; stopped, nothing saved "
                            "from this run's later steps (a lower --lr or --clip may help)",
                            s + 1, sum);
        if (st)
            break;
        loss[s] = sum / ((double)nranks * cfg.grad_accum);
        gnorm[s] = info.grad_norm;
        lr[s] = info.lr;
        scale[s] = info.loss_scale;
        hits[s] = (double)info.prefetch_hits;
        misses[s] = (double)info.prefetch_misses;
        ms[s] = now_ms() - t0;
        gemm_ms[s] = 1e3 * (zc_gemm_get_counters().seconds - gemm0);
        zc_offload_stats d1;
        zc_engine_offload_stats(e, &d1);
        disk_step *ds = &disk_steps[s];
        *ds = (disk_step){.read = (double)(d1.bytes_read - d0.bytes_read),
                          .written = (double)(d1.bytes_written - d0.bytes_written),
                          .wait_ms = 1e3 * (d1.wait_seconds - d0.wait_seconds),
                          .update_ms = 1e3 * (d1.update_seconds - d0.update_seconds),
                          .update_read = (double)(d1.update_bytes_read - d0.update_bytes_read),
                          .update_written =
                              (double)(d1.update_bytes_written - d0.update_bytes_written)};
        bool last = s == o.steps - 1;
        const zc_comm_counters *c = zc_comm_get_counters(comm);
        double comm_b = 0; /* this step's data bytes */
        for (int op = 0; op < ZC_COMM_NOPS; op++) {
            double d = comm_total(c, op) - comm_total(&prev, op);
            if (s > first_step || o.steps - first_step == 1)
                step_sum[op] += d;
            if (op != ZC_COMM_CONTROL && op != ZC_COMM_BROADCAST)
                comm_b += d;
        }
        double val = NAN;
        if (model.validate && o.val_data && ((o.val_every && (s + 1) % o.val_every == 0) || last))
            if ((st = model.validate(&model, &val, &err)))
                break;
        val_loss[s] = val;
        if (rank == 0 && (s % cfg.steps_per_print == 0 || last || s < 3 || !isnan(val) ||
                          info.skipped)) {
            int64_t states = zc_mem_get(mem, ZC_MEM_PARAMS).current +
                             zc_mem_get(mem, ZC_MEM_GRADS).current +
                             zc_mem_get(mem, ZC_MEM_OPTIMIZER).current;
            char extra[256] = "";
            if (rep.tokens_per_step > 0)
                snprintf(extra, sizeof extra, " | %7.0f tok/s", rep.tokens_per_step / (ms[s] / 1e3));
            if (!isnan(val))
                snprintf(extra + strlen(extra), sizeof extra - strlen(extra), " | val %.4f", val);
            if (disk.active) /* MB/s over the whole step; wait: blocked on the disk */
                snprintf(extra + strlen(extra), sizeof extra - strlen(extra),
                         " | disk r %.0f w %.0f MB/s, wait %.0f ms",
                         disk_steps[s].read / (ms[s] * 1e3),
                         disk_steps[s].written / (ms[s] * 1e3), disk_steps[s].wait_ms);
            if (cfg.dtype == ZC_FP16)
                snprintf(extra + strlen(extra), sizeof extra - strlen(extra),
                         " | scale %g%s (%lld skipped)", info.loss_scale,
                         info.skipped ? ", overflow: step skipped" : "",
                         (long long)zc_engine_loss_scaler(e)->skipped);
            printf("step %5d/%d | loss %.6f | gnorm %.4f | lr %.2e | %8.1f ms%s | states %.1f "
                   "MiB/rank | comm %.1f MiB\n",
                   s + 1, o.steps, loss[s], gnorm[s], info.lr, ms[s], extra, mib(states),
                   mib((int64_t)comm_b));
            fflush(stdout);
        }
        if (model.sample && ((o.sample_every && (s + 1) % o.sample_every == 0) ||
                             (last && o.sample_every)))
            if ((st = model.sample(&model, s + 1, &err)))
                break;
        /* with --save-dir the last step is always saved, whatever --save-every says */
        if (o.save_dir && ((o.save_every && (s + 1) % o.save_every == 0) || last)) {
            /* the trainer's position: the learning-rate schedule and the data order are pure
             * functions of the step (and the seed in the config), so these are for readers */
            char client[768];
            snprintf(client, sizeof client,
                     "{\"model\": \"%s\", \"steps_planned\": %d, \"lr_schedule\": "
                     "{\"type\": \"%s\", \"warmup\": %lld, \"position\": %d, \"next_lr\": %.9g}, "
                     "\"data\": {\"micro_steps_consumed\": %lld, \"shuffle\": %s}%s%s}",
                     o.model, o.steps, schedule_name(&o, &cfg), schedule_warmup(&o, &cfg), s + 1,
                     lr_at(&o, &cfg, zc_engine_loss_scaler(e)->skipped, s + 1),
                     (long long)(s + 1) * cfg.grad_accum,
                     o.shuffle ? "true" : "false", model.describe[0] ? ", " : "",
                     model.describe);
            double t_save = now_ms();
            if ((st = zc_ckpt_save(e, comm, o.save_dir, s + 1, config_json, client, o.keep,
                                   &err))) {
                ckpt_failed = true;
                break;
            }
            if (rank == 0)
                printf("saved %s/step-%06d in %.2f s\n", o.save_dir, s + 1,
                       (now_ms() - t_save) / 1e3);
        }
        prev = *zc_comm_get_counters(comm); /* validation, sampling, saving: not the step's */
    }
    free(config_json);
    if (st) {
        free(loss), free(gnorm), free(lr), free(ms), free(scale), free(hits), free(misses), free(gemm_ms);
        free(val_loss), free(disk_steps);
        return stop(comm, &err,
                    st == ZC_ELOCKSTEP || st == ZC_ESTATE || st == ZC_EINVAL ||
                        (st == ZC_EIO && ckpt_failed),
                    &model, e, mem, save_lock);
    }
    double per = rep.steps > 1 ? (double)(rep.steps - 1) : 1.0;
    rep.rs_bytes = step_sum[ZC_COMM_REDUCE_SCATTER] / per;
    rep.ag_bytes = step_sum[ZC_COMM_ALL_GATHER] / per;
    rep.ar_bytes = step_sum[ZC_COMM_ALL_REDUCE] / per;
    rep.control_bytes = step_sum[ZC_COMM_CONTROL] / per;
    rep.loss = loss + first_step;
    rep.grad_norm = gnorm + first_step;
    rep.lr = lr + first_step;
    rep.step_ms = ms + first_step;
    rep.loss_scale = scale + first_step;
    rep.gemm_ms = gemm_ms + first_step;
    rep.val_loss = val_loss + first_step;
    rep.gemm_path_fp32 = zc_gemm_path(ZC_GEMM_F32);
    rep.gemm_path_bf16 = zc_gemm_path(ZC_GEMM_BF16);
    rep.simd = zc_simd_name(zc_simd_level());
    if (cfg.stage == 3) {
        rep.prefetch_hits = hits + first_step;
        rep.prefetch_misses = misses + first_step;
    }
    if (disk.active) {
        rep.disk = disk_steps + first_step;
        rep.aio_engine = disk.aio_engine;
    }
    rep.skipped_steps = zc_engine_loss_scaler(e)->skipped;

    rank_memory mine = my_memory(mem); /* before the digest and exports borrow memory */
    st = zc_engine_weights_sha256(e, rep.final_sha, &err);
    if (!st && o.save_weights)
        st = zc_safetensors_save(e, o.save_weights, &err);
    if (!st && o.save_final) /* check_outputs refused models without a format of their own */
        st = model.save_final(&model, o.save_final, &err);
    rank_memory *all = calloc((size_t)nranks, sizeof *all);
    if (!st)
        st = zc_comm_control_gather(comm, &mine, all, sizeof mine, "memory report", &err);
    if (!st && rank == 0) {
        int64_t states = mine.params + mine.grads + mine.optimizer;
        printf("memory per rank (rank 0): model states %.1f MiB (params %.1f, grads %.1f, "
               "optimizer %.1f); stage 0 would hold %.1f MiB (%.2fx); working peak %.1f MiB, "
               "activations peak %.1f MiB, peak RSS %.1f MiB\n",
               mib(states), mib(mine.params), mib(mine.grads), mib(mine.optimizer),
               mib(rep.stage0_states), (double)rep.stage0_states / (double)states,
               mib(mine.working_peak), mib(mine.activations_peak), mib(mine.peak_rss));
        if (mine.nvme)
            printf("offload (rank 0): %.1f MiB of model states on disk (nvme), streamed through "
                   "%.1f MiB of RAM buffers (peak)\n", mib(mine.nvme), mib(mine.offload_peak));
        printf("comm per step (rank 0): reduce-scatter %.1f MiB, all-gather %.1f MiB; "
               "final weights sha256 %s\n",
               mib((int64_t)rep.rs_bytes), mib((int64_t)rep.ag_bytes), rep.final_sha);
        rep.ranks = all;
        if (o.report)
            st = train_report_write(&rep, o.report, &err);
    }
    free(all), free(loss), free(gnorm), free(lr), free(ms), free(scale), free(hits), free(misses);
    free(gemm_ms), free(val_loss);
    free(disk_steps);
    model.destroy(&model);
    zc_engine_destroy(e);
    zc_mem_destroy(mem);
    zc_ckpt_unlock_dir(save_lock);
    if (st)
        return cli_fail(comm, &err, false);
    return 0;
}
