/* train_args.c — `zeroc train`'s flags and config file: the flag table, the configuration they
 * make (file first, then flags), every check that can refuse the run before anything is built —
 * flags that would be ignored, the schedule, and the outputs it will write — and the lines the
 * log gives about a config file that runs otherwise than DeepSpeed would run it. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/output_paths.h"
#include "cli/train_args.h"
#include "models/gpt2/gpt2_sample.h"
#include "models/gpt2/hf_files.h"
#include "models/gpt2/init_files.h"
#include "models/mlp/mlp.h"

/* The save directory: an existing one must be a directory the run can create files in; a new
 * one is made (*made), so that outputs placed in it (--report DIR/report.json) can be probed
 * too. The caller removes a made one when the run is refused. */
static zc_status probe_dir(const char *flag, const char *dir, bool *made, zc_err *err)
{
    char probe[4200];
    *made = mkdir(dir, 0777) == 0; /* the umask decides, as for mkdir(1) */
    if (!*made && errno != EEXIST)
        return zc_err_set(err, ZC_EINVAL, "%s %s: cannot create it: %s", flag, dir,
                          strerror(errno));
    snprintf(probe, sizeof probe, "%s/.zeroc-probe-%d", dir, (int)getpid());
    zc_status st = cli_output_writable(flag, probe, err);
    if (st) { /* the reason kept: a planted link on the way, no permission, ... */
        char why[sizeof err->msg];
        const char *c = strstr(err->msg, ": cannot write");
        snprintf(why, sizeof why, "%s", c ? c + 2 : err->msg);
        zc_err_set(err, st, "%s %s: not a directory zeroc can write in (%.700s)", flag, dir, why);
    }
    return st;
}

/* The config.json a gpt2 --init FILE.safetensors of Hugging Face's layout is read with: the one
 * beside the file (as models/gpt2/hf_files.c finds it), into path; NULL for any other --init
 * (a directory's config.json is already one of --init's files). */
static const char *init_config(const train_opts *o, char *path, size_t cap)
{
    struct stat sb;
    if (!o->init || strcmp(o->model, "gpt2") || stat(o->init, &sb) || S_ISDIR(sb.st_mode) ||
        !hf_is_checkpoint(o->init))
        return NULL;
    const char *slash = strrchr(o->init, '/');
    int dir = slash ? (int)(slash - o->init) : 1;
    snprintf(path, cap, "%.*s/config.json", dir, slash ? o->init : ".");
    return path;
}

/* Every output the run will write at its end, checked before its first step (rank 0 writes
 * them; every rank learns the outcome): writable, and not over an input or a checkpoint. */
static zc_status check_outputs(zc_comm *comm, train_opts *o, zc_err *err)
{
    zc_status st = ZC_OK;
    if (o->save_final && strcmp(o->model, "gpt2"))
        st = zc_err_set(err, ZC_EINVAL,
                        "--save-final: model '%s' has no own file format (use "
                        "--save-weights)",
                        o->model);
    else if (o->save_final && o->init && !o->init_file.st && o->init_file.cfg.family[0])
        st = zc_err_set(err, ZC_EINVAL,
                        "--save-final writes llm.c's format, which holds GPT-2 only, not this %s "
                        "(save with --save-dir, then zeroc ckpt export DIR --format hf)",
                        o->init_file.cfg.family);
    if (zc_comm_rank(comm) == 0) {
        const char *const outs[][2] = {{"--report", o->report},
                                       {"--save-weights", o->save_weights},
                                       {"--save-final", o->save_final}};
        const size_t nouts = sizeof outs / sizeof *outs;
        /* the save directory's files are made below it (DIR/.tmp-step-N-PID-HOST/rank-N.bin) */
        if (!st)
            st = cli_output_named("--save-dir", o->save_dir, PATH_MAX - 256, err);
        for (size_t i = 0; !st && i < nouts; i++)
            st = cli_output_named(outs[i][0], outs[i][1], PATH_MAX - 64, err);
        if (!st)
            st = cli_save_dir_not_in_checkpoint("--save-dir", o->save_dir, err);
        bool made = false; /* the save directory, first: outputs may lie in it */
        if (!st && o->save_dir)
            st = probe_dir("--save-dir", o->save_dir, &made, err);
        /* `latest`, rewritten by every save: a link there is checked as any output's (one
         * another user planted in a shared directory is refused), a FIFO refused */
        char latest[PATH_MAX + 16];
        struct stat lsb;
        if (!st && o->save_dir &&
            snprintf(latest, sizeof latest, "%s/latest", o->save_dir) < (int)sizeof latest &&
            !lstat(latest, &lsb) && !S_ISREG(lsb.st_mode))
            st = cli_output_writable("--save-dir", latest, err);
        for (size_t i = 0; !st && i < nouts; i++)
            for (size_t j = i + 1; !st && j < nouts; j++)
                st = cli_outputs_distinct(outs[i][0], outs[i][1], outs[j][0], outs[j][1], err);
        char beside[4200];
        const char *const ins[][2] = {{"--config", o->config},
                                      {"--init", o->init},
                                      {"--init", init_config(o, beside, sizeof beside)},
                                      {"--data", o->data},
                                      {"--val-data", o->val_data}};
        for (size_t i = 0; !st && i < nouts; i++) {
            st = cli_output_outside_checkpoint(outs[i][0], outs[i][1], "--resume", o->resume, err);
            if (!st)
                st = cli_output_outside_checkpoint(outs[i][0], outs[i][1], "--save-dir",
                                                   o->save_dir, err);
            for (size_t j = 0; !st && j < sizeof ins / sizeof *ins; j++)
                st = cli_output_not_input(outs[i][0], outs[i][1], ins[j][0], ins[j][1], err);
            if (!st) /* each file a glob of shards reads */
                st = cli_output_not_token_files(outs[i][0], outs[i][1], "--data", o->data, err);
            if (!st)
                st = cli_output_not_token_files(outs[i][0], outs[i][1], "--val-data", o->val_data,
                                                err);
            if (!st) /* also when no input is given */
                st = cli_output_not_checkpoint(outs[i][0], outs[i][1], err);
        }
        /* a fresh run would replace (or, with --keep, prune) another run's checkpoints */
        if (!st && !o->resume)
            st = cli_save_dir_unused("--save-dir", o->save_dir, err);
        if (!st && o->report)
            st = cli_output_writable("--report", o->report, err);
        if (!st && o->save_weights)
            st = cli_output_writable("--save-weights", o->save_weights, err);
        if (!st && o->save_final)
            st = cli_output_writable("--save-final", o->save_final, err);
        if (st && made) /* refused: nothing left behind */
            rmdir(o->save_dir);
        o->save_dir_made = made && !st; /* a later refusal removes it too (cmd_train) */
    }
    return zc_comm_agree(comm, st, "checking the output paths", err);
}

/* The model an --init file holds decides --model: an llm.c checkpoint or a Hugging Face GPT-2
 * is gpt2, a Hugging Face Llama-family directory is the decoder configured by its config.json
 * (trained through the gpt2 adaptor: one decoder) — --model may then be left out, or name the
 * file's family (llama, qwen2, mistral); one that disagrees is refused. A file that cannot be
 * read is named when the model is built. */
static zc_status resolve_model(int argc, char **argv, train_opts *o, zc_err *err)
{
    const bool given = args_given(argc, argv, 2, "--model");
    const gpt2_init *in = &o->init_file;
    if (o->init)
        gpt2_init_resolve(o->init, &o->init_file);
    if (o->init && in->hf && in->st) {
        if (given && !strcmp(o->model, "mlp"))
            return ZC_OK;  /* refused as an mlp's --init below */
        o->model = "gpt2"; /* a Hugging Face model that cannot be built: say why now */
        return zc_err_set(err, in->err.code, "--init %s: %s", o->init, in->err.msg);
    }
    const gpt2_config file = in->cfg;
    if (!o->init || !in->decoder || in->st) {
        if (given && (!strcmp(o->model, "llama") || !strcmp(o->model, "qwen2") ||
                      !strcmp(o->model, "mistral")))
            return zc_err_set(err, ZC_EINVAL,
                              "--model %s: a Llama-family model comes from its Hugging Face "
                              "directory (--init DIR with config.json); from flags zeroc builds "
                              "mlp or gpt2",
                              o->model);
        return ZC_OK;
    }
    const char *fam = file.family[0] ? file.family : "gpt2";
    if (given && strcmp(o->model, fam) && (strcmp(o->model, "mlp") || file.family[0]))
        return zc_err_set(err, ZC_EINVAL,
                          "--model %s: --init %s holds a %s (its model_type); leave --model out "
                          "(the architecture comes from the file)",
                          o->model, o->init, fam);
    if (!given || strcmp(o->model, "mlp"))
        o->model = "gpt2"; /* the decoder's adaptor, whatever the family */
    return ZC_OK;
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
    static const char *const gpt2_only[] = {"--channels",
                                            "--heads",
                                            "--seq-len",
                                            "--max-seq-len",
                                            "--vocab",
                                            "--data",
                                            "--shuffle",
                                            "--val-data",
                                            "--val-every",
                                            "--val-windows",
                                            "--activation-checkpointing",
                                            "--tile-params",
                                            "--lora-r",
                                            "--lora-alpha",
                                            "--lora-dropout",
                                            "--lora-targets",
                                            "--lora-init",
                                            "--sample-every",
                                            "--sample-length",
                                            "--save-final"};
    const bool gpt2 = !strcmp(o->model, "gpt2");
    for (size_t i = 0; !gpt2 && i < sizeof gpt2_only / sizeof *gpt2_only; i++)
        if (args_given(argc, argv, 2, gpt2_only[i]))
            return zc_err_set(err, ZC_EINVAL, "%s is a gpt2 flag; --model %s does not use it",
                              gpt2_only[i], o->model);
    if (gpt2 && args_given(argc, argv, 2, "--hidden"))
        return zc_err_set(err, ZC_EINVAL,
                          "--hidden is an mlp flag; --model gpt2 takes "
                          "--channels");
    if (args_given(argc, argv, 2, "--layers") && o->layers < 1)
        return zc_err_set(err, ZC_EINVAL, "--layers must be >= 1, got %d", o->layers);
    bool shape_from_init = gpt2 && o->init && o->init_file.decoder;
    if (gpt2 && !shape_from_init && o->max_seq_len && o->seq_len > o->max_seq_len)
        return zc_err_set(err, ZC_EINVAL, "--seq-len %d is longer than --max-seq-len %d",
                          o->seq_len, o->max_seq_len);
    /* a --seq-len given beside such a file must fit its positions (the default takes the
     * file's when it has fewer); a file that cannot be read is named when the model is built */
    const gpt2_config *file = &o->init_file.cfg;
    if (shape_from_init && args_given(argc, argv, 2, "--seq-len") && !o->init_file.st &&
        o->seq_len > file->max_seq_len)
        return zc_err_set(err, ZC_EINVAL,
                          "--seq-len %d is longer than the %d positions of --init %s (the shape "
                          "comes from the file)",
                          o->seq_len, file->max_seq_len, o->init);
    if (!o->val_data &&
        (args_given(argc, argv, 2, "--val-every") || args_given(argc, argv, 2, "--val-windows")))
        return zc_err_set(err, ZC_EINVAL, "--val-every and --val-windows need --val-data");
    if (!o->sample_every && args_given(argc, argv, 2, "--sample-length"))
        return zc_err_set(err, ZC_EINVAL, "--sample-length needs --sample-every");
    if (!o->save_dir && args_given(argc, argv, 2, "--keep"))
        return zc_err_set(err, ZC_EINVAL, "--keep needs --save-dir (it prunes its checkpoints)");
    return ZC_OK;
}

/* The offload flags do nothing unless something is offloaded to NVMe: refused then, like any
 * flag that would be ignored (the config file's keys stay accepted, as DeepSpeed's are). */
static zc_status refuse_unused_offload(int argc, char **argv, const zc_config *cfg, zc_err *err)
{
    static const char *const nvme_only[] = {"--nvme-path", "--sub-group-size", "--aio-engine"};
    if (cfg->offload_optimizer == ZC_OFFLOAD_NVME || cfg->offload_param == ZC_OFFLOAD_NVME)
        return ZC_OK;
    for (size_t i = 0; i < sizeof nvme_only / sizeof *nvme_only; i++)
        if (args_given(argc, argv, 2, nvme_only[i]))
            return zc_err_set(err, ZC_EINVAL,
                              "%s applies only to an offload to NVMe (--offload-optimizer nvme or "
                              "--offload-param nvme); nothing is offloaded there",
                              nvme_only[i]);
    return ZC_OK;
}

/* The config's scheduler section and the schedule flags: --warmup fills its warmup_num_steps
 * (over the file, like every flag; a file's "auto" is --warmup's default, 0), --steps a
 * WarmupDecayLR's or WarmupCosineLR's total_num_steps the file left out or gave as "auto";
 * --lr-schedule names the trainer's own schedule and cannot join it, and --lr does nothing under
 * WarmupLR / WarmupDecayLR unless warmup_max_lr is "auto" (WarmupCosineLR's peak is the lr);
 * OneCycle and LRRangeTest take neither --lr nor --warmup. The activation_checkpointing section
 * turns on the flag of that name. */
static zc_status resolve_schedule(int argc, char **argv, train_opts *o, zc_config *cfg, zc_err *err)
{
    char n[32];
    if (cfg->activation_checkpointing && strcmp(o->model, "gpt2"))
        return zc_err_set(err, ZC_EINVAL,
                          "%s: activation_checkpointing: --model %s keeps no "
                          "activations to recompute (gpt2 does)",
                          o->config, o->model);
    o->activation_checkpointing |= cfg->activation_checkpointing;
    if (cfg->sched == ZC_SCHED_NONE)
        return ZC_OK;
    if (args_given(argc, argv, 2, "--lr-schedule"))
        return zc_err_set(err, ZC_EINVAL,
                          "--lr-schedule %s: %s has a scheduler (%s); give one "
                          "or the other",
                          o->lr_schedule, o->config, zc_sched_name(cfg->sched));
    /* OneCycle and LRRangeTest set the rate from their own params and have no warmup */
    const bool own_rate = cfg->sched == ZC_SCHED_ONE_CYCLE || cfg->sched == ZC_SCHED_LR_RANGE_TEST;
    if (own_rate && (args_given(argc, argv, 2, "--lr") || args_given(argc, argv, 2, "--warmup")))
        return zc_err_set(err, ZC_EINVAL,
                          "%s: %s's scheduler %s sets the rate from its own params (%s) and has no "
                          "warmup: the flag would change nothing",
                          args_given(argc, argv, 2, "--lr") ? "--lr" : "--warmup", o->config,
                          zc_sched_name(cfg->sched),
                          cfg->sched == ZC_SCHED_ONE_CYCLE ? "cycle_min_lr, cycle_max_lr"
                                                           : "lr_range_test_min_lr");
    /* the scheduler's own peak replaces the optimizer's lr (DeepSpeed's rule), given or not:
     * --lr beside it would do nothing */
    /* WarmupCosineLR's peak is the optimizer's lr, which --lr sets */
    const bool warmup_peak =
        cfg->sched == ZC_SCHED_WARMUP_LR || cfg->sched == ZC_SCHED_WARMUP_DECAY_LR;
    if (warmup_peak && args_given(argc, argv, 2, "--lr") && isnan(cfg->warmup_max_lr))
        return zc_err_set(err, ZC_EINVAL,
                          "--lr: %s's scheduler gives no warmup_max_lr, so it peaks at "
                          "DeepSpeed's default %g and the optimizer's lr is not used; set "
                          "warmup_max_lr in the file (\"auto\" takes --lr)",
                          o->config, ZC_WARMUP_MAX_LR);
    if (warmup_peak && args_given(argc, argv, 2, "--lr") && cfg->warmup_max_lr != ZC_AUTO)
        return zc_err_set(err, ZC_EINVAL,
                          "--lr: %s's scheduler sets warmup_max_lr %g, the peak the run follows; "
                          "give one or the other (or warmup_max_lr \"auto\")",
                          o->config, cfg->warmup_max_lr);
    zc_status st = ZC_OK;
    if (args_given(argc, argv, 2, "--warmup")) {
        snprintf(n, sizeof n, "%d", o->warmup);
        st = zc_config_set(cfg, "scheduler.params.warmup_num_steps", n, err);
    }
    if (!st &&
        (cfg->sched == ZC_SCHED_WARMUP_DECAY_LR || cfg->sched == ZC_SCHED_WARMUP_COSINE_LR) &&
        cfg->total_num_steps == 0) {
        snprintf(n, sizeof n, "%d", o->steps);
        st = zc_config_set(cfg, "scheduler.params.total_num_steps", n, err);
    }
    return st;
}

/* Rank 0 says where a config file's run differs from DeepSpeed's run of it, and warns as
 * DeepSpeed warns; nothing is refused here. */
static void announce_differences(const train_opts *o, const zc_config *cfg)
{
    /* DeepSpeed's WarmupDecayLR compares with its warmup of max(2, warmup_num_steps) */
    const int64_t w = cfg->warmup_num_steps < 2 ? 2 : cfg->warmup_num_steps;
    const char *after = cfg->sched == ZC_SCHED_WARMUP_DECAY_LR
                            ? "the rate rises through the whole warmup, then drops at once to "
                              "warmup_min_lr"
                        : cfg->sched == ZC_SCHED_WARMUP_COSINE_LR
                            ? "after the warmup the cosine runs over a negative span, as "
                              "DeepSpeed's does"
                            : NULL;
    if (after && cfg->total_num_steps < w)
        printf("warning: scheduler.params.total_num_steps %lld is less than warmup_num_steps "
               "%lld%s (DeepSpeed's %s warns too): %s\n",
               (long long)cfg->total_num_steps, (long long)cfg->warmup_num_steps,
               cfg->warmup_num_steps < 2 ? ", taken as 2 as DeepSpeed takes it" : "",
               zc_sched_name(cfg->sched), after);
    /* DeepSpeed's engine (get_data_types) accumulates bf16 gradients in fp32 without ZeRO;
     * zeroc keeps one rule at every stage, so that the stages stay bitwise equal */
    if (o->config && cfg->dtype == ZC_BF16 && cfg->stage == 0 &&
        cfg->grad_accum_dtype == ZC_DTYPE_DEFAULT)
        printf("bf16 at stage 0: zeroc accumulates the gradients in bf16, where DeepSpeed's "
               "stage-0 bf16 optimizer uses fp32; \"data_types\": {\"grad_accum_dtype\": "
               "\"fp32\"} in %s gives DeepSpeed's behaviour\n",
               o->config);
}

/* The configuration: the file, then the flags over it (--nvme-path and --dtype set two keys
 * each); the model's default micro-batch unless the file or a flag gives one; the batch triple
 * resolved as DeepSpeed does. */
static zc_status apply_flags(const arg_spec *specs, int nspecs, int nranks, const train_opts *o,
                             zc_config *cfg, zc_err *err)
{
    zc_status st = ZC_OK;
    if (!st && o->config)
        st = zc_config_load_file(cfg, o->config, err);
    if (!st)
        st = args_apply_config(specs, nspecs, cfg, err);
    if (!st && o->nvme_path)
        st = zc_config_set(cfg, "zero_optimization.offload_optimizer.nvme_path", o->nvme_path, err);
    if (!st && o->nvme_path)
        st = zc_config_set(cfg, "zero_optimization.offload_param.nvme_path", o->nvme_path, err);
    if (!st && o->dtype && strcmp(o->dtype, "fp32") && strcmp(o->dtype, "bf16") &&
        strcmp(o->dtype, "fp16"))
        st = zc_err_set(err, ZC_EINVAL, "--dtype: expected fp32, bf16 or fp16, got '%s'", o->dtype);
    if (!st && o->dtype) /* over the file's bf16/fp16 blocks, like any flag */
        st = zc_config_set(cfg, "fp16.enabled", !strcmp(o->dtype, "fp16") ? "true" : "false", err);
    if (!st && o->dtype)
        st = zc_config_set(cfg, "bf16.enabled", !strcmp(o->dtype, "bf16") ? "true" : "false", err);
    if (!st && cfg->lora_r && strcmp(o->model, "gpt2"))
        st = zc_err_set(err, ZC_EINVAL,
                        "lora.r %lld: LoRA adapts the decoder's linear layers (gpt2 and the Llama "
                        "family); --model %s has none",
                        (long long)cfg->lora_r, o->model);
    if (!st && !cfg->micro_batch_set && cfg->train_batch_size == 0) /* unless config or flag say */
        cfg->micro_batch = !strcmp(o->model, "gpt2") ? 4 : 32; /* MLP: the experiment's batch */
    if (!st)
        st = zc_config_resolve_batch(cfg, nranks, err);
    return st;
}

/* The trainer's own flags' ranges and pairings. */
static zc_status check_flags(const train_opts *o, zc_err *err)
{
    zc_status st = ZC_OK;
    if (!st && o->steps < 1)
        st = zc_err_set(err, ZC_EINVAL, "--steps must be >= 1, got %d", o->steps);
    if (!st && o->warmup < 0)
        st = zc_err_set(err, ZC_EINVAL, "--warmup must be >= 0, got %d", o->warmup);
    if (!st && strcmp(o->lr_schedule, "constant") && strcmp(o->lr_schedule, "cosine"))
        st = zc_err_set(err, ZC_EINVAL, "--lr-schedule: expected constant or cosine, got '%s'",
                        o->lr_schedule);
    if (!st && o->save_every < 0)
        st = zc_err_set(err, ZC_EINVAL, "--save-every must be >= 0, got %d", o->save_every);
    if (!st && o->keep < 0)
        st = zc_err_set(err, ZC_EINVAL, "--keep must be >= 0 (0 keeps all), got %d", o->keep);
    if (!st && o->save_every > 0 && !o->save_dir)
        st = zc_err_set(err, ZC_EINVAL, "--save-every needs --save-dir");
    if (!st && (o->val_every < 0 || o->sample_every < 0 || o->sample_length < 1))
        st = zc_err_set(err, ZC_EINVAL,
                        "--val-every and --sample-every must be >= 0, "
                        "--sample-length >= 1");
    if (!st && o->val_windows < 0)
        st = zc_err_set(err, ZC_EINVAL,
                        "--val-windows must be >= 0 (0: every window of --val-data), got %d",
                        o->val_windows);
    if (!st && !strcmp(o->lr_schedule, "cosine") && o->steps <= o->warmup + 1)
        st = zc_err_set(err, ZC_EINVAL,
                        "--lr-schedule cosine decays over the steps after --warmup, and --steps %d "
                        "leaves none (--warmup %d): needs --steps > --warmup + 1",
                        o->steps, o->warmup);
    if (!st && o->sample_length > GPT2_MAX_GENERATE)
        st = zc_err_set(err, ZC_EINVAL, "--sample-length must be at most %d, got %d",
                        GPT2_MAX_GENERATE, o->sample_length);
    return st;
}

/* Every rank meets here, also one whose flags were refused (ranks launched with other command
 * lines), so that none waits for another in a collective it will never make. Refused on every
 * rank (the same command line): each keeps its own message, printed once as it is; on some: the
 * others learn the first refusal, naming its rank. */
static zc_status command_line_agree(zc_comm *comm, zc_status st, zc_err *err)
{
    const int n = zc_comm_size(comm);
    if (n == 1)
        return st;
    int mine = st != ZC_OK, *all = malloc(sizeof(int) * (size_t)n);
    if (!all) /* the others then meet a failed collective, or their timeout */
        return st ? st : zc_err_set(err, ZC_ENOMEM, "out of memory reading the command line");
    zc_err gather_err = {0};
    zc_status g =
        zc_comm_control_gather(comm, &mine, all, sizeof mine, "the command line", &gather_err);
    int refused = 0;
    for (int r = 0; !g && r < n; r++)
        refused += all[r];
    free(all);
    if (g) {
        *err = gather_err;
        return g;
    }
    return refused == 0 || refused == n ? st
                                        : zc_comm_agree(comm, st, "reading the command line", err);
}

zc_status train_args_read(zc_comm *comm, int argc, char **argv, train_opts *o, zc_config *cfg,
                          bool *helped, zc_err *err)
{
    *o = (train_opts){.model = "mlp",
                      .steps = 10,
                      .hidden = MLP_DEFAULT_HIDDEN,
                      .channels = 128,
                      .heads = 4,
                      .seq_len = 128,
                      .vocab = 256,
                      .lr_schedule = "constant",
                      .sample_length = 128};
    zc_config_defaults(cfg);
    arg_spec specs[] = {
        {"--model", ARG_STR, &o->model, NULL,
         "model to train: mlp (default) or gpt2; with a Llama-family --init DIR, the file's "
         "(leave it out)",
         NULL},
        {"--dtype", ARG_STR, &o->dtype, NULL,
         "fp32, bf16 or fp16: stored parameters and gradients (sets bf16/fp16.enabled)", NULL},
        {"--config", ARG_STR, &o->config, NULL, "DeepSpeed-style JSON config file", NULL},
        {"--steps", ARG_INT, &o->steps, NULL,
         "the optimizer step to train to, counting a resumed checkpoint's steps (default 10)",
         NULL},
        {"--report", ARG_STR, &o->report, NULL, "write the run's JSON report here (rank 0)", NULL},
        {"--save-weights", ARG_STR, &o->save_weights, NULL,
         "write the final weights as safetensors (fp32)", NULL},
        {"--hidden", ARG_INT, &o->hidden, NULL, "mlp: hidden size (default 2048)", NULL},
        {"--layers", ARG_INT, &o->layers, NULL,
         "mlp: Linear+ReLU layers (default 12); gpt2: blocks (default 4)", NULL},
        {"--channels", ARG_INT, &o->channels, NULL, "gpt2: channels C (default 128)", NULL},
        {"--heads", ARG_INT, &o->heads, NULL, "gpt2: attention heads (default 4)", NULL},
        {"--seq-len", ARG_INT, &o->seq_len, NULL,
         "gpt2: tokens per sequence T (default 128, or fewer: an --init file's positions)", NULL},
        {"--max-seq-len", ARG_INT, &o->max_seq_len, NULL,
         "gpt2: position embeddings (default: --seq-len)", NULL},
        {"--vocab", ARG_INT, &o->vocab, NULL, "gpt2: vocabulary (default 256, byte-level)", NULL},
        {"--init", ARG_STR, &o->init, NULL,
         "start from FILE.safetensors (any model), or (gpt2; sets the shape) an llm.c checkpoint "
         "or a Hugging Face GPT-2 (a directory with config.json and model.safetensors)",
         NULL},
        {"--data", ARG_STR, &o->data, NULL,
         "gpt2: llm.c token file to train on, or a quoted glob of shards ('train_*.bin')", NULL},
        {"--shuffle", ARG_BOOL, &o->shuffle, NULL,
         "gpt2: visit whole windows in a seeded order each epoch (default: sequential)", NULL},
        {"--val-data", ARG_STR, &o->val_data, NULL,
         "gpt2: llm.c token file for validation, or a quoted glob of shards", NULL},
        {"--val-every", ARG_INT, &o->val_every, NULL,
         "gpt2: validate every N steps and at the end (default 0: at the end only)", NULL},
        {"--val-windows", ARG_INT, &o->val_windows, NULL,
         "gpt2: validate on the first N windows of --seq-len + 1 tokens of --val-data (default "
         "0: all of them), the same for any --micro-batch, --grad-accum and ranks",
         NULL},
        {"--activation-checkpointing", ARG_BOOL, &o->activation_checkpointing, NULL,
         "gpt2: keep only block inputs, recompute blocks in backward", NULL},
        {"--tile-params", ARG_I64, &o->tile_params, NULL,
         "gpt2: register the embedding and the head as tiles of at most N parameters (whole "
         "blocks of 1024 rows), and with N below a block's size each block's MLP as tiles of its "
         "width (whole blocks of 1024 columns of gate, up and down; MLPs 4096 wide or more, "
         "without LoRA), so a gather, its working memory and its disk reads stay near N; the "
         "same bits as untiled (default 0: the size of one transformer block, for the Llama "
         "family; GPT-2's learned positions tile only under a positive N; -1: never)",
         NULL},
        {"--lora-r", ARG_CONFIG, NULL, "lora.r",
         "gpt2: fine-tune with LoRA adapters of rank R on the linear layers --lora-targets names; "
         "the base model is frozen (no gradients, no optimizer state; still sharded at stage 3 "
         "and offloadable) (default 0: train every parameter)",
         NULL},
        {"--lora-alpha", ARG_CONFIG, NULL, "lora.lora_alpha",
         "gpt2: LoRA's lora_alpha: the adapters' output is scaled by alpha / r (default 8, as "
         "PEFT's)",
         NULL},
        {"--lora-dropout", ARG_CONFIG, NULL, "lora.lora_dropout",
         "gpt2: LoRA's lora_dropout on the adapters' input while training (default 0)", NULL},
        {"--lora-targets", ARG_CONFIG, NULL, "lora.target_modules",
         "gpt2: LoRA's target_modules, Hugging Face's module names comma-separated: q_proj, "
         "k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj (Llama, Qwen2, Mistral), c_attn, "
         "c_proj, c_fc (GPT-2), or all-linear (default: PEFT's, q_proj,v_proj; GPT-2 c_attn)",
         NULL},
        {"--lora-init", ARG_STR, &o->lora_init, NULL,
         "gpt2: start LoRA from a PEFT adapter directory (adapter_config.json and "
         "adapter_model.safetensors, as PeftModel.save_pretrained writes): its r, lora_alpha, "
         "lora_dropout, target_modules and weights; the base model comes from --init",
         NULL},
        {"--no-memory-check", ARG_BOOL, &o->no_memory_check, NULL,
         "run even if the estimated memory per rank exceeds what the host can give", NULL},
        {"--sample-every", ARG_INT, &o->sample_every, NULL,
         "gpt2: print a generated sample every N steps and at the end (default 0: none)", NULL},
        {"--sample-length", ARG_INT, &o->sample_length, NULL,
         "gpt2: tokens per sample (default 128)", NULL},
        {"--save-final", ARG_STR, &o->save_final, NULL,
         "gpt2: write the final weights as an llm.c checkpoint (fp32)", NULL},
        {"--warmup", ARG_INT, &o->warmup, NULL, "linear learning-rate warmup steps (default 0)",
         NULL},
        {"--lr-schedule", ARG_STR, &o->lr_schedule, NULL,
         "constant (default) or cosine (to 10% of --lr at the last step)", NULL},
        {"--save-dir", ARG_STR, &o->save_dir, NULL, "write sharded checkpoints under DIR", NULL},
        {"--save-every", ARG_INT, &o->save_every, NULL,
         "checkpoint every N steps (with --save-dir)", NULL},
        {"--keep", ARG_INT, &o->keep, NULL, "keep only the newest N checkpoints (default: all)",
         NULL},
        {"--resume", ARG_STR, &o->resume, NULL,
         "continue from DIR (its latest checkpoint) or DIR/step-N, on any ranks and stage", NULL},
        {"--stage", ARG_CONFIG, NULL, "zero_optimization.stage", "ZeRO stage 0-3", NULL},
        {"--micro-batch", ARG_CONFIG, NULL, "train_micro_batch_size_per_gpu",
         "samples per rank per micro-step (mlp default 32, gpt2 default 4)", NULL},
        {"--grad-accum", ARG_CONFIG, NULL, "gradient_accumulation_steps",
         "micro-steps per optimizer step", NULL},
        {"--lr", ARG_CONFIG, NULL, "optimizer.params.lr", "peak learning rate", NULL},
        {"--optimizer", ARG_CONFIG, NULL, "optimizer.type", "AdamW, Adam, SGD or AdamW8bit", NULL},
        {"--weight-decay", ARG_CONFIG, NULL, "optimizer.params.weight_decay", "weight decay", NULL},
        {"--clip", ARG_CONFIG, NULL, "gradient_clipping", "max global gradient norm, 0 = off",
         NULL},
        {"--seed", ARG_CONFIG, NULL, "seed", "seed of initial weights and data", NULL},
        {"--comm-timeout", ARG_CONFIG, NULL, "comm_timeout_s",
         "seconds a collective may wait before all ranks stop", NULL},
        {"--offload-optimizer", ARG_CONFIG, NULL, "zero_optimization.offload_optimizer.device",
         "none, cpu or nvme: optimizer state (and stage-3 gradients) in swap files", NULL},
        {"--offload-param", ARG_CONFIG, NULL, "zero_optimization.offload_param.device",
         "none, cpu or nvme: stage-3 parameter shards in swap files", NULL},
        {"--nvme-path", ARG_STR, &o->nvme_path, NULL,
         "directory of the swap files (sets both offload sections' nvme_path)", NULL},
        {"--sub-group-size", ARG_CONFIG, NULL, "zero_optimization.sub_group_size",
         "elements the optimizer step streams through RAM at a time", NULL},
        {"--aio-engine", ARG_CONFIG, NULL, "aio.engine",
         "auto (io_uring if the kernel allows), io_uring or threads", NULL},
    };
    const int nspecs = (int)(sizeof specs / sizeof specs[0]);
    zc_status st =
        args_parse_command(specs, nspecs, argc, argv, 2, "zeroc train [--model mlp|gpt2] [flags]",
                           zc_comm_rank(comm) == 0, helped, err);
    if (*helped)
        return ZC_OK;
    if (args_given(argc, argv, 2, "--val-batches")) /* refused before any other complaint */
        st = zc_err_set(err, ZC_EINVAL,
                        "--val-batches is gone: it counted micro-batches per rank, so what was "
                        "validated changed with --micro-batch and the ranks; use --val-windows N "
                        "(the first N windows of --val-data; default: all of them)");
    if (!st) /* first: the model decides defaults (the micro-batch) */
        st = resolve_model(argc, argv, o, err);
    if (!st)
        st = apply_flags(specs, nspecs, zc_comm_size(comm), o, cfg, err);
    if (!st) /* the collectives from here on, before the engine, wait as long as it will */
        zc_comm_set_timeout(comm, cfg->comm_timeout_s);
    if (!st)
        st = check_flags(o, err);
    if (!st)
        st = refuse_unused(argc, argv, o, err);
    if (!st)
        st = refuse_unused_offload(argc, argv, cfg, err);
    if (!st)
        st = resolve_schedule(argc, argv, o, cfg, err);
    st = command_line_agree(comm, st, err);
    if (!st)
        st = check_outputs(comm, o, err);
    if (!st && zc_comm_rank(comm) == 0)
        announce_differences(o, cfg);
    return st;
}
