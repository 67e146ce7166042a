/* train.c — `zeroc train`: builds a model on the ZeRO engine from the checked command line
 * (cli/train_args.c), trains it one optimizer step at a time, prints a line per step, saves
 * checkpoints, and writes the report.
 *
 * The step reads as the algorithm: set the step's learning rate, run each micro-step's forward +
 * backward (the engine reduces the gradients and, at the last micro-step, updates the shards),
 * sum the loss over the ranks. The loop knows models only through train_model
 * (cli/train_model.h); everything about ZeRO is the engine's; this file measures and reports. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli/commands.h"
#include "cli/fail.h"
#include "cli/memory_check.h"
#include "cli/offload_cache.h"
#include "cli/monitors.h"
#include "cli/progress.h"
#include "cli/relaunch.h"
#include "cli/stop_signal.h"
#include "cli/train_agree.h"
#include "cli/train_args.h"
#include "cli/train_ckpt.h"
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
#include "zeroc/mem.h"
#include "zeroc/safetensors.h"
#include "zeroc/simd.h"

/* Per-step series, indexed by the step's number (first_step … steps − 1). */
typedef struct {
    double *loss, *gnorm, *lr, *ms, *scale;
    double *gemm_ms;       /* rank 0's time in the models' products */
    double *hits, *misses; /* stage-3 prefetch */
    double *val_loss;      /* NaN: no validation at that step */
    double *val_ms;        /* this rank's wall time in that validation (NaN: none), not in ms[] */
    disk_step *disk;
} step_series;

/* Everything one run holds; train_free releases it whatever phase it reached. */
typedef struct {
    zc_comm *comm;
    int rank, nranks;
    train_opts o;
    zc_config cfg;
    zc_mem *mem;
    zc_engine *e;
    train_model model;
    zc_ckpt_lock *save_lock;
    int64_t first_step;
    step_series series;
    zc_offload_stats disk; /* the disk tier as set up (active: offload to NVMe) */
    char cache_said[7000]; /* how offload "auto" was sized (offload_cache_resolve), or "" */
    /* bytes per collective of each step (not of validation, sampling or saving), summed over
     * steps ≥ 2 (or the only step): the report's per-step average */
    zc_comm_counters prev;
    double step_bytes[ZC_COMM_NOPS], step_inter[ZC_COMM_NOPS]; /* all, to other hosts */
    /* Set when an error is every rank's: they all tear down and return. Otherwise the error
     * is this rank's alone, and with other ranks the job is aborted (they may be waiting in a
     * collective this rank will never join). */
    bool shared_error;
    int stopped_by;     /* the signal that stopped the run after a save (stop_signal.h), or 0 */
    int64_t stopped_at; /* the step it saved */
    /* the training tokens read after step data_step (a resume that continues where another
     * global batch left off; 0, 0 otherwise): what checkpoints record */
    uint64_t data_tokens;
    int64_t data_step;
    /* the learning-rate schedule's position at step s is s − skipped steps + lr_shift: 0, or
     * where a resumed checkpoint's schedule stood less where this run's count puts it (an
     * earlier zeroc's --warmup/--lr-schedule advanced on fp16-skipped steps) */
    int64_t lr_shift;
    progress prog;  /* elapsed, ETA, the live line (rank 0) */
    monitors mon;   /* tensorboard, csv_monitor, wall_clock_breakdown, comms_logger (rank 0) */
    step_phases ph; /* the step's time by phase (train_step, record_step) */
} train_run;

/* ---------- setup ---------- */

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

/* Rank 0 says what the configuration is and what in it changes nothing here. */
static void announce_config(const train_run *r)
{
    const zc_config *cfg = &r->cfg;
    if (r->rank != 0)
        return;
    print_config(cfg);
    if (cfg->auto_keys[0]) /* the values they took are in the config line above */
        printf("\"auto\" in %s resolved from the command line, else zeroc's default: %s\n",
               r->o.config, cfg->auto_keys);
    if (cfg->ignored[0]) /* DeepSpeed reads no top-level key it does not know */
        printf("ignored, as DeepSpeed ignores them (top-level keys it does not read): %s\n",
               cfg->ignored);
    if (cfg->no_effect[0]) /* said once: DeepSpeed knobs with nothing to tune here */
        printf("accepted, changes nothing here: %s\n", cfg->no_effect);
    if (cfg->offload_optimizer == ZC_OFFLOAD_CPU)
        printf("offload_optimizer.device cpu: on a CPU machine the optimizer state already lives "
               "in RAM, so nothing moves (device nvme puts it on disk)\n");
    if (cfg->offload_param == ZC_OFFLOAD_CPU)
        printf("offload_param.device cpu: on a CPU machine the parameters already live in RAM, "
               "so nothing moves (device nvme puts them on disk)\n");
}

/* Training tokens one optimizer step reads over all ranks (0 for generated data). */
static double tokens_per_step(const train_run *r)
{
    return r->model.tokens_per_micro_step * r->nranks * r->cfg.grad_accum;
}

/* Learning rate of the optimizer step at schedule position s: the steps the schedule advanced
 * over before it. With the config's scheduler: DeepSpeed's. Else the trainer's own: linear
 * warmup over --warmup steps, then constant or a cosine decay to 10% of the peak at the last
 * step. */
static double lr_at_position(const train_run *r, int s)
{
    const train_opts *o = &r->o;
    const zc_config *cfg = &r->cfg;
    if (cfg->sched != ZC_SCHED_NONE)
        return zc_lr_schedule_at(cfg, s);
    const double peak = cfg->lr;
    if (s < o->warmup)
        return peak * (double)(s + 1) / (double)o->warmup;
    if (!strcmp(o->lr_schedule, "constant"))
        return peak;
    ZC_ASSERT(o->steps > o->warmup + 1); /* train_args refuses a cosine with nothing to decay */
    double t = (double)(s - o->warmup) / (double)(o->steps - o->warmup - 1);
    return peak * (0.1 + 0.9 * 0.5 * (1.0 + cos(3.141592653589793 * t)));
}

/* Learning rate of optimizer step s (0-based). Either schedule advances only on applied steps,
 * as DeepSpeed's (and the HF Trainer's) do: an fp16 step skipped for overflow does not count, so
 * a warmup is not spent on steps that changed nothing. A resumed run continues from the
 * position its checkpoint recorded (r->lr_shift). */
static double lr_at(const train_run *r, int s)
{
    return lr_at_position(r, s - (int)zc_engine_loss_scaler(r->e)->skipped + (int)r->lr_shift);
}

/* The schedule's name and warmup steps, as checkpoints record them. */
static const char *schedule_name(const train_run *r)
{
    return r->cfg.sched != ZC_SCHED_NONE ? zc_sched_name(r->cfg.sched) : r->o.lr_schedule;
}

static int64_t schedule_warmup(const train_run *r)
{
    return r->cfg.sched == ZC_SCHED_NONE ? r->o.warmup : r->cfg.warmup_num_steps;
}

/* Two learning rates equal but for rounding (a manifest prints 17 digits, an earlier zeroc's
 * arithmetic may differ in the last ones). */
static bool same_lr(double a, double b)
{
    return fabs(a - b) <= 1e-9 * fmax(fabs(a), fabs(b));
}

/* Where the resumed learning-rate schedule stands (r->lr_shift): at the position the checkpoint
 * recorded, as DeepSpeed restores its scheduler's last_batch_iteration, with this run's
 * settings; rank 0 says so when that is not where this run's count of applied steps puts it,
 * and when the rate of the first step differs from the one the checkpoint's run would have
 * used, naming the settings that differ. */
static zc_status resume_lr(train_run *r, const char *dir, const char *manifest, zc_err *err)
{
    train_ckpt_lr rec;
    zc_status st = train_ckpt_lr_record(dir, manifest, &rec, err);
    if (st || !rec.recorded)
        return st;
    const int64_t counted = r->first_step - zc_engine_loss_scaler(r->e)->skipped;
    int64_t pos = rec.position;
    if (rec.other >= 0 && !isnan(rec.next_lr) && /* the one reading that gives its next rate */
        !same_lr(lr_at_position(r, (int)pos), rec.next_lr) &&
        same_lr(lr_at_position(r, (int)rec.other), rec.next_lr))
        pos = rec.other;
    r->lr_shift = pos - counted;
    if (r->rank != 0)
        return ZC_OK;
    if (rec.counted_skipped && pos == rec.position)
        printf("lr: the checkpoint's --warmup/--lr-schedule had also advanced over its %lld fp16 "
               "steps skipped for overflow (an earlier zeroc counted them): the schedule goes on "
               "from its position %lld, and from here advances on applied steps only\n",
               (long long)rec.skipped, (long long)pos);
    const double lr = lr_at(r, (int)r->first_step);
    if (isnan(rec.next_lr) || same_lr(lr, rec.next_lr) || r->first_step >= r->o.steps)
        return ZC_OK;
    char *config_json = zc_config_to_json(&r->cfg), changes[1536] = "";
    if (config_json)
        train_ckpt_lr_changes(manifest, config_json, &r->o, schedule_name(r), schedule_warmup(r),
                              changes, sizeof changes);
    free(config_json);
    printf("lr: step %lld runs at %.9g where the checkpoint's run would have gone on at %.9g (its "
           "lr_schedule.next_lr): %s%s; the schedule continues from its position %lld with this "
           "run's settings\n",
           (long long)r->first_step + 1, lr, rec.next_lr,
           changes[0] ? "the schedule's settings differ from the checkpoint's: "
                      : "no recorded setting of the schedule differs (the zeroc that wrote it "
                        "computed the schedule otherwise)",
           changes, (long long)pos);
    return ZC_OK;
}

/* After a rollback into the save directory with --keep (--resume DIR/step-R --save-dir DIR),
 * names the checkpoints past step R that the first save will prune: the abandoned run's future
 * (zc_ckpt_save prunes by lineage). dir: the checkpoint resumed, resolved. */
static void announce_abandoned(const train_run *r, const char *dir)
{
    char parent[4200];
    struct stat a, b;
    snprintf(parent, sizeof parent, "%s/..", dir);
    if (r->o.keep <= 0 || !r->o.save_dir || stat(parent, &a) || stat(r->o.save_dir, &b) ||
        a.st_dev != b.st_dev || a.st_ino != b.st_ino)
        return;
    DIR *d = opendir(r->o.save_dir);
    long long lo = -1, hi = -1, n = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        long long s;
        char tail, man[4400];
        if (sscanf(e->d_name, "step-%lld%c", &s, &tail) != 1 || s <= r->first_step)
            continue;
        snprintf(man, sizeof man, "%s/%s/manifest.json", r->o.save_dir, e->d_name);
        if (access(man, F_OK))
            continue;
        lo = lo < 0 || s < lo ? s : lo;
        hi = s > hi ? s : hi;
        n++;
    }
    if (d)
        closedir(d);
    char range[64];
    if (n == 1)
        snprintf(range, sizeof range, "step-%06lld", lo);
    else
        snprintf(range, sizeof range, "step-%06lld to step-%06lld", lo, hi);
    if (n)
        printf("--keep %d after a rollback to step %lld: %lld checkpoint%s past it (%s), the "
               "abandoned run's, pruned at the first save; the %d newest of this run's lineage "
               "(step %lld, the steps before it, and this run's saves) are kept\n",
               r->o.keep, (long long)r->first_step, n, n == 1 ? "" : "s", range, r->o.keep,
               (long long)r->first_step);
}

/* Continues from --resume: the checkpoint's states, its step, a check that it was written for
 * this model, where its data and learning-rate schedule continue. Every rank returns the same
 * status and message (each step agrees, or decides from the manifest every rank read), so one
 * rank prints it. */
static zc_status resume(train_run *r, zc_err *err)
{
    char dir[4096], *client = NULL, *manifest = NULL;
    double t_load = now_ms();
    zc_status st = zc_comm_agree(r->comm, zc_ckpt_resolve(r->o.resume, dir, sizeof dir, err),
                                 "finding the checkpoint", err);
    if (!st)
        st = zc_ckpt_load(r->e, r->comm, dir, &r->first_step, &client, err);
    if (st == ZC_EINVAL) /* another model's units: the record says which flag made them */
        train_ckpt_explain_model(dir, &r->o, &r->model, err);
    if (!st) /* what the load did not give: its format, config and producer (each rank reads) */
        st = zc_comm_agree(r->comm, zc_ckpt_manifest_json(dir, &manifest, err),
                           "reading the checkpoint's manifest", err);
    if (!st) /* the trainer's record range-checked, as `ckpt verify` checks it */
        st = train_ckpt_check_record(dir, manifest, err);
    if (!st) /* the same on every rank: every rank read the same manifest */
        st = train_ckpt_same_model(dir, client, &r->o, &r->model, err);
    uint64_t tokens = 0;
    char note[1024] = "", producer[256] = "";
    if (!st) {
        const int B = r->cfg.micro_batch;
        const int T = B > 0 ? (int)(r->model.tokens_per_micro_step / B) : 0;
        const train_ckpt_data d = {
            .shuffle = r->o.shuffle,
            .seed = (uint64_t)r->cfg.seed,
            .micro_batch = B,
            .accum = r->cfg.grad_accum,
            .ranks = r->nranks,
            .seq_len = T,
            .epoch_windows = r->model.tokens_per_micro_step > 0
                                 ? (r->model.data[0] - 1) / (uint64_t)r->model.tokens_per_micro_step
                                 : 0};
        st = train_ckpt_resume_data(dir, manifest, &d, r->first_step, &r->model, &tokens, note,
                                    sizeof note, err);
    }
    if (!st)
        st = resume_lr(r, dir, manifest, err);
    if (!st)
        train_ckpt_producer(manifest, producer, sizeof producer);
    /* a LoRA run's checkpoint holds the adapters: the base stays as --init gave it */
    cJSON *root = st ? NULL : cJSON_Parse(manifest);
    const bool base_kept = cJSON_GetObjectItemCaseSensitive(root, "base_digest") != NULL;
    cJSON_Delete(root);
    free(client);
    free(manifest);
    if (!st && tokens)
        r->data_tokens = tokens, r->data_step = r->first_step;
    if (!st && r->rank == 0) /* --init beside --resume (Hugging Face's Trainer pattern): said */
        printf("%sresumed from %s at step %lld in %.2f s%s%s%s%s\n", note, dir,
               (long long)r->first_step, (now_ms() - t_load) / 1e3, producer,
               r->o.init ? "; the weights of --init " : "", r->o.init ? r->o.init : "",
               !r->o.init ? ""
               : base_kept
                   ? " are the frozen base (the checkpoint holds the adapters; its digest of the "
                     "base matches)"
                   : " were replaced by the checkpoint's");
    if (!st && r->first_step > r->o.steps)
        st = zc_err_set(err, ZC_EINVAL, "--resume: the checkpoint is at step %lld, past --steps %d",
                        (long long)r->first_step, r->o.steps);
    else if (!st && r->first_step == r->o.steps && r->rank == 0)
        printf("the checkpoint is at step %lld = --steps: no step to run; the final weights and "
               "the report come from it\n",
               (long long)r->first_step);
    else if (!st && r->rank == 0 && r->o.save_dir)
        announce_abandoned(r, dir);
    else if (!st && r->rank == 0 && !r->o.save_final && !r->o.save_weights)
        /* a resumed run is continued to be kept (DeepSpeed and HF's Trainer save by default) */
        printf("warning: no --save-dir, --save-final or --save-weights: steps %lld to %d will "
               "train and nothing of them will be kept (add --save-dir DIR to keep checkpoints)\n",
               (long long)r->first_step + 1, r->o.steps);
    return st;
}

/* Engine and model: registered, checked against the host's memory and the other ranks' data,
 * finalized (the states allocated and initialised), then loaded from --init or --resume. */
static zc_status build(train_run *r, zc_err *err)
{
    const train_opts *o = &r->o;
    r->mem = zc_mem_create();
    zc_status st = zc_engine_create(&r->e, &r->cfg, r->comm, r->mem, err);
    if (!st)
        memory_check_explain_enomem(
            st = train_model_create(&r->model, o, r->e, r->mem, r->comm, &r->cfg, err), err);
    /* a rank that could not build the model (memory, a file it cannot read) tells the others,
     * which would otherwise wait for it in the engine's first collective: one message */
    st = zc_comm_agree(r->comm, st, "building the model", err);
    /* offload "auto": the RAM this host can spare, as a cache of what is on disk */
    if (!st)
        st = zc_comm_agree(r->comm,
                           offload_cache_resolve(r->comm, r->e, r->mem, &r->cfg, r->cache_said,
                                                 sizeof r->cache_said, err),
                           "sizing the offload cache", err);
    /* before the states are allocated: a run that cannot fit is refused, not OOM-killed */
    if (!st && !o->no_memory_check)
        st = zc_comm_agree(r->comm, memory_check(r->comm, r->e, r->mem, err), "the memory check",
                           err);
    if (!st) /* every rank computes the same verdict */
        st = train_model_agree_data(&r->model, r->comm, err);
    if (!st && o->resume) /* the checkpoint replaces every state: drawing them first is waste */
        zc_engine_skip_init(r->e);
    if (!st)
        st = zc_engine_finalize(r->e, err);
    r->shared_error = st != ZC_OK; /* agreed above, or a collective verdict of finalize */
    if (st)
        return st;
    if (r->model.load)
        st = r->model.load(&r->model, err);
    if (!st && o->init && !r->model.owns_init && zc_safetensors_is_path(o->init))
        st = cli_err_flag(zc_safetensors_load(r->e, o->init, err), "--init", err);
    else if (!st && o->init && !r->model.owns_init)
        st = zc_err_set(err, ZC_EINVAL,
                        "--init %s: the %s model starts from a .safetensors "
                        "file",
                        o->init, o->model);
    /* each rank read its own elements: a bad value found by one must stop them all */
    bool agreed = false; /* every rank has st, and its message */
    if (o->init || o->lora_init)
        st = zc_comm_agree(r->comm, st, "loading --init", err), agreed = true;
    if (!st && o->resume)
        st = resume(r, err), agreed = true;
    r->shared_error = st && (agreed || st == ZC_EINVAL);
    return st;
}

/* Rank 0 says what it built: the model, its precision, and where offloaded states live. */
static void announce_model(const train_run *r, const train_report *rep)
{
    const zc_offload_stats *disk = &r->disk;
    if (r->rank != 0)
        return;
    printf("model: %s, %lld parameters (%lld padded over %d ranks), %d units; ZeRO stage %d; "
           "%s parameters, %s gradients, %s reduce-scatter\n",
           r->model.name[0] ? r->model.name : r->o.model, (long long)rep->params,
           (long long)rep->params_padded, r->nranks, zc_engine_num_units(r->e), r->cfg.stage,
           rep->dtype, rep->grad_dtype, rep->comm_dtype);
    if (disk->active)
        printf("offload: %s I/O; rank 0 keeps %.2f GiB of model states in %s%s%s (unlinked: the "
               "space returns to the file system when the process ends)\n",
               disk->aio_engine, (double)disk->nvme_bytes / (1 << 30),
               disk->optimizer_swap ? disk->optimizer_swap : "",
               disk->optimizer_swap && disk->param_swap ? " and " : "",
               disk->param_swap ? disk->param_swap : "");
    if (r->cache_said[0])
        printf("%s\n", r->cache_said);
    int across = zc_comm_groups_across_hosts(r->comm);
    if (r->cfg.hpz_partition_size > 1 && across > 0)
        printf("warning: %d of the %d hpZ groups (zero_hpz_partition_size %d, consecutive ranks) "
               "hold ranks of more than one host, so their secondary gathers cross the network; "
               "place ranks by slot (mpirun --map-by slot) with zero_hpz_partition_size at most "
               "the ranks per host%s\n",
               across, r->nranks / r->cfg.hpz_partition_size, r->cfg.hpz_partition_size,
               zc_comm_host_ranks(r->comm) ? "" : " (these hosts hold unequal rank counts)");
    if (r->cfg.offload_optimizer == ZC_OFFLOAD_NVME && !disk->optimizer_swap)
        printf("offload_optimizer: rank 0 puts none of its optimizer state on disk (%s)\n",
               r->cfg.optimizer_ratio == ZC_AUTO
                   ? "offload_optimizer.ratio \"auto\": it all fits in RAM"
               : r->cfg.optimizer_ratio < 1 ? "offload_optimizer.ratio covers no whole unit"
                                            : "the optimizer keeps no state here");
    char mic[32] = "\"auto\"";
    if (r->cfg.max_in_cpu != ZC_AUTO)
        snprintf(mic, sizeof mic, "%lld", (long long)r->cfg.max_in_cpu);
    if (r->cfg.offload_param == ZC_OFFLOAD_NVME)
        printf("offload_param: rank 0 keeps %lld parameter elements on disk and %lld in RAM "
               "(offload_param.max_in_cpu %s)\n",
               (long long)disk->param_elems_on_disk, (long long)disk->param_elems_in_ram, mic);
}

static zc_status series_alloc(step_series *s, int steps, zc_err *err)
{
    double **cols[] = {&s->loss,    &s->gnorm, &s->lr,     &s->ms,       &s->scale,
                       &s->gemm_ms, &s->hits,  &s->misses, &s->val_loss, &s->val_ms};
    bool ok = true;
    for (size_t i = 0; i < sizeof cols / sizeof *cols; i++)
        ok &= (*cols[i] = calloc((size_t)steps, sizeof(double))) != NULL;
    ok &= (s->disk = calloc((size_t)steps, sizeof *s->disk)) != NULL;
    for (int i = 0; ok && i < steps; i++)
        s->val_loss[i] = s->val_ms[i] = NAN;
    return ok ? ZC_OK
              : zc_err_set(err, ZC_ENOMEM,
                           "out of memory for the per-step series of %d "
                           "steps",
                           steps);
}

static void series_free(step_series *s)
{
    free(s->loss), free(s->gnorm), free(s->lr), free(s->ms), free(s->scale);
    free(s->gemm_ms), free(s->hits), free(s->misses), free(s->val_loss), free(s->val_ms);
    free(s->disk);
}

/* ---------- one step ---------- */

/* Errors of a step that every rank has: the lockstep check, a non-finite loss or state, a
 * refused input. An I/O error of the engine (its swap files) is its own rank's. */
static bool every_ranks(zc_status st)
{
    return st == ZC_ELOCKSTEP || st == ZC_ESTATE || st == ZC_EINVAL;
}

/* This rank's ms in collectives so far (the comm layer's count). */
static double comm_ms(const train_run *r)
{
    const zc_comm_counters *c = zc_comm_get_counters(r->comm);
    double sec = 0;
    for (int op = 0; op < ZC_COMM_NOPS; op++)
        sec += c->seconds[op];
    return 1e3 * sec;
}

/* Optimizer step s: every micro-step's forward + backward through the model, the engine's
 * reduction and update, and the loss averaged over ranks and micro-steps. Each part's time goes
 * to r->ph (wall_clock_breakdown). */
static zc_status train_step(train_run *r, int s, zc_step_info *info, zc_err *err)
{
    double local = 0.0, sum = 0.0;
    zc_status st = ZC_OK;
    step_phases *ph = &r->ph;
    *ph = (step_phases){0};
    zc_engine_set_lr(r->e, lr_at(r, s));
    for (int k = 0; k < r->cfg.grad_accum && !st; k++) {
        double l = 0.0, t = now_ms(), c = comm_ms(r);
        st = r->model.micro_step(&r->model, s, k, &l, err);
        local += l;
        double t1 = now_ms(), c1 = comm_ms(r);
        ph->fwd_bwd_ms += t1 - t, ph->fwd_bwd_comm_ms += c1 - c;
        if (!st)
            st = zc_engine_step(r->e, info, err);
        ph->engine_ms += now_ms() - t1, ph->engine_comm_ms += comm_ms(r) - c1;
    }
    char what[32]; /* a collective's error names its step */
    snprintf(what, sizeof what, "loss, step %d", s + 1);
    if (!st)
        st = zc_comm_sum_f64(r->comm, local, &sum, what, err);
    if (!st && !isfinite(sum)) /* the same sum on every rank: they all stop here */
        st = zc_err_set(err, ZC_ESTATE,
                        "step %d: the loss is %g; stopped, nothing saved from "
                        "this run's later steps (a lower --lr or --clip may help)",
                        s + 1, sum);
    if (!st)
        r->series.loss[s] = sum / ((double)r->nranks * r->cfg.grad_accum);
    r->shared_error = every_ranks(st);
    return st;
}

/* What step s measured, into the series; returns the bytes the step communicated (data
 * collectives) and adds each collective's bytes to the per-step sums. */
static double record_step(train_run *r, int s, const zc_step_info *info, double t0,
                          const zc_offload_stats *d0, double gemm0)
{
    step_series *ser = &r->series;
    ser->gnorm[s] = info->grad_norm;
    ser->lr[s] = info->lr;
    ser->scale[s] = info->loss_scale;
    ser->hits[s] = (double)info->prefetch_hits;
    ser->misses[s] = (double)info->prefetch_misses;
    ser->ms[s] = now_ms() - t0;
    ser->gemm_ms[s] = 1e3 * (zc_gemm_get_counters().seconds - gemm0);
    r->ph.step_ms = ser->ms[s], r->ph.gemm_ms = ser->gemm_ms[s];
    zc_offload_stats d1;
    zc_engine_offload_stats(r->e, &d1);
    ser->disk[s] = (disk_step){
        .read = (double)(d1.bytes_read - d0->bytes_read),
        .written = (double)(d1.bytes_written - d0->bytes_written),
        .wait_ms = 1e3 * (d1.wait_seconds - d0->wait_seconds),
        .update_ms = 1e3 * (d1.update_seconds - d0->update_seconds),
        .update_read = (double)(d1.update_bytes_read - d0->update_bytes_read),
        .update_written = (double)(d1.update_bytes_written - d0->update_bytes_written),
        .buffers_mapped = (double)(d1.io_buffers_mapped - d0->io_buffers_mapped),
        .param_read = (double)(d1.param_bytes_read - d0->param_bytes_read),
        .shards_from_update = (double)(d1.shards_from_update - d0->shards_from_update),
        .updates_in_backward = (double)(d1.updates_in_backward - d0->updates_in_backward),
        .shards_read_in_place = (double)(d1.shards_read_in_place - d0->shards_read_in_place)};
    r->ph.disk_wait_ms = ser->disk[s].wait_ms;
    const zc_comm_counters *c = zc_comm_get_counters(r->comm);
    double bytes = 0;
    for (int op = 0; op < ZC_COMM_NOPS; op++) {
        double d = (double)c->bytes[op] - (double)r->prev.bytes[op];
        if (s > r->first_step || r->o.steps - r->first_step == 1) {
            r->step_bytes[op] += d;
            r->step_inter[op] +=
                (double)c->inter_host_bytes[op] - (double)r->prev.inter_host_bytes[op];
        }
        if (op != ZC_COMM_CONTROL && op != ZC_COMM_BROADCAST)
            bytes += d;
    }
    return bytes;
}

/* Rank 0's line for step s, 0-based (steps steps_per_print, 2·steps_per_print, … counted from 1
 * as DeepSpeed prints them, the first three this run trains — after a resume too, so that it
 * shows it is training —, the last, and any step that validated or skipped). */
static void log_step(train_run *r, int s, const zc_step_info *info, double comm_bytes,
                     double tokens_per_step)
{
    const step_series *ser = &r->series;
    const double val = ser->val_loss[s];
    if (r->rank != 0)
        return;
    if (!((s + 1) % r->cfg.steps_per_print == 0 || s == r->o.steps - 1 || s < r->first_step + 3 ||
          !isnan(val) || info->skipped)) {
        char what[96];
        int k = snprintf(what, sizeof what, "loss %.6f | %8.1f ms", ser->loss[s], ser->ms[s]);
        if (tokens_per_step > 0 && k > 0 && (size_t)k < sizeof what)
            snprintf(what + k, sizeof what - (size_t)k, " | %7.0f tok/s",
                     tokens_per_step / (ser->ms[s] / 1e3));
        progress_live(&r->prog, s, what);
        return;
    }
    char when[96];
    progress_text(&r->prog, s, when, sizeof when);
    progress_clear(&r->prog);
    int64_t states = zc_mem_get(r->mem, ZC_MEM_PARAMS).current +
                     zc_mem_get(r->mem, ZC_MEM_GRADS).current +
                     zc_mem_get(r->mem, ZC_MEM_OPTIMIZER).current;
    char extra[256] = "";
    size_t n = 0;
    if (tokens_per_step > 0)
        n += (size_t)snprintf(extra + n, sizeof extra - n, " | %7.0f tok/s",
                              tokens_per_step / (ser->ms[s] / 1e3));
    if (!isnan(val) && n < sizeof extra)
        n += (size_t)snprintf(extra + n, sizeof extra - n, " | val %.4f (%.2f s)", val,
                              ser->val_ms[s] / 1e3);
    if (r->disk.active && n < sizeof extra) /* MB/s over the whole step; wait: on the disk */
        n += (size_t)snprintf(extra + n, sizeof extra - n,
                              " | disk r %.0f w %.0f MB/s, wait "
                              "%.0f ms",
                              ser->disk[s].read / (ser->ms[s] * 1e3),
                              ser->disk[s].written / (ser->ms[s] * 1e3), ser->disk[s].wait_ms);
    if (r->cfg.dtype == ZC_FP16 && n < sizeof extra)
        snprintf(extra + n, sizeof extra - n, " | scale %g%s (%lld skipped)", info->loss_scale,
                 info->skipped ? ", overflow: step skipped" : "",
                 (long long)zc_engine_loss_scaler(r->e)->skipped);
    printf("step %5d/%d | loss %.6f | gnorm %.4f | lr %.2e | %8.1f ms%s | states %.1f MiB/rank | "
           "comm %.1f MiB | %s\n",
           s + 1, r->o.steps, ser->loss[s], ser->gnorm[s], info->lr, ser->ms[s], extra, mib(states),
           mib((int64_t)comm_bytes), when);
    fflush(stdout);
}

/* Whether --save-every or the last step asks for a checkpoint after step s. */
static bool save_due(const train_opts *o, int s)
{
    return o->save_dir && ((o->save_every && (s + 1) % o->save_every == 0) || s == o->steps - 1);
}

/* A checkpoint after step s (with --save-dir). A failed save is every rank's error. */
static zc_status save_checkpoint(train_run *r, int s, const char *config_json, zc_err *err)
{
    const train_opts *o = &r->o;
    const zc_config *cfg = &r->cfg;
    const uint64_t tokens =
        r->data_tokens + (uint64_t)((double)(s + 1 - r->data_step) * tokens_per_step(r));
    const int64_t position = s + 1 - zc_engine_loss_scaler(r->e)->skipped + r->lr_shift;
    const int seq_len =
        cfg->micro_batch > 0 ? (int)(r->model.tokens_per_micro_step / cfg->micro_batch) : 0;
    char *client = train_ckpt_client(o, &r->model, schedule_name(r), schedule_warmup(r), position,
                                     lr_at(r, s + 1), (int64_t)(s + 1) * cfg->grad_accum, tokens,
                                     seq_len, (uint64_t)cfg->seed);
    double t_save = now_ms();
    zc_status st =
        client ? zc_ckpt_save(r->e, r->comm, o->save_dir, s + 1, config_json, client, o->keep, err)
               : zc_err_set(err, ZC_ENOMEM, "out of memory for the checkpoint record");
    free(client);
    r->shared_error = every_ranks(st) || st == ZC_EIO; /* a failed save is agreed on */
    if (!st && r->rank == 0) {
        progress_clear(&r->prog);
        printf("saved %s/step-%06d in %.2f s\n", o->save_dir, s + 1, (now_ms() - t_save) / 1e3);
    }
    return st;
}

/* Under mpirun, Ctrl-C or SIGTERM to mpirun leaves the ranks odls_base_sigkill_timeout seconds
 * from its SIGTERM to its SIGKILL (stop_signal.h): rank 0 warns once before step 1 when that is
 * Open MPI's default and a save of this run's model states, at 100 MB/s (a slow disk's rate with
 * the checkpoint's fsyncs), would not fit in it with a second to spare for the step. */
static void warn_launcher_kill(const train_run *r)
{
    bool set = false;
    const int t = cli_launcher_kill_timeout(&set);
    if (r->rank != 0 || !r->o.save_dir || !cli_launched() || set)
        return;
    zc_state_bytes b = zc_engine_state_bytes_for_stage(r->e, 3); /* each rank's part, once */
    const double bytes = (double)(b.params + b.optimizer) * r->nranks, secs = bytes / 100e6;
    if (secs + 1 <= t)
        return;
    printf("warning: under mpirun, Ctrl-C or SIGTERM to mpirun gives the ranks %d s from its "
           "SIGTERM to its SIGKILL (Open MPI's odls_base_sigkill_timeout, %d s by default), and "
           "saving %.0f MB may take longer: export OMPI_MCA_odls_base_sigkill_timeout=%d (or "
           "mpirun --mca odls_base_sigkill_timeout %d), or stop the run with SIGUSR1 to mpirun\n",
           t, t, bytes / 1e6, (int)secs + 30, (int)secs + 30);
}

/* After step s: if any rank was asked to stop (SIGTERM, SIGINT, SIGUSR1, the launcher's kill),
 * every rank saves step s with --save-dir (unless it just did) and the run ends there
 * (r->stopped_by), its report written. One small collective a step. */
static zc_status stop_if_asked(train_run *r, int s, const char *config_json, zc_err *err)
{
    int mine = cli_stop_signal_received(), sig = 0;
    int *all = calloc((size_t)r->nranks, sizeof *all);
    char what[64]; /* a timeout names the step, as the engine's collectives do */
    snprintf(what, sizeof what, "the ranks' stop requests, step %d", s + 1);
    zc_status st = all ? zc_comm_control_gather(r->comm, &mine, all, sizeof mine, what, err)
                       : zc_err_set(err, ZC_ENOMEM, "out of memory");
    for (int k = 0; !st && k < r->nranks && !sig; k++)
        sig = all[k];
    free(all);
    if (st || !sig)
        return st;
    if (r->o.save_dir && !save_due(&r->o, s))
        st = save_checkpoint(r, s, config_json, err);
    if (!st)
        r->stopped_by = sig, r->stopped_at = s + 1;
    return st;
}

/* Steps first_step … steps − 1, each followed by its record, line, validation, sample and
 * checkpoint as the flags ask; a stop signal ends them early (after a save, with --save-dir). */
static zc_status train_loop(train_run *r, double tokens_per_step, zc_err *err)
{
    const train_opts *o = &r->o;
    char *config_json = zc_config_to_json(&r->cfg);
    zc_status st = config_json ? ZC_OK : zc_err_set(err, ZC_ENOMEM, "out of memory");
    r->prev = *zc_comm_get_counters(r->comm);
    if (!st) { /* rank 0's directories and files: every rank stops if they cannot be made */
        st = zc_comm_agree(r->comm, monitors_open(&r->mon, &r->cfg, r->rank, &r->prev, err),
                           "opening the monitors", err);
        r->shared_error = st != ZC_OK;
    }
    progress_start(&r->prog, r->first_step, o->steps, r->rank == 0);
    for (int s = (int)r->first_step; s < o->steps && !st; s++) {
        const bool last = s == o->steps - 1;
        const double t0 = now_ms(), gemm0 = zc_gemm_get_counters().seconds;
        zc_offload_stats d0;
        zc_engine_offload_stats(r->e, &d0);
        zc_step_info info = {0};
        if ((st = train_step(r, s, &info, err)))
            break;
        double comm_bytes = record_step(r, s, &info, t0, &d0, gemm0);
        if (r->model.validate && o->val_data &&
            ((o->val_every && (s + 1) % o->val_every == 0) || last)) {
            const double tv = now_ms(); /* the validation's own time: step_ms has none of it */
            st = r->model.validate(&r->model, s + 1, &r->series.val_loss[s], err);
            r->series.val_ms[s] = now_ms() - tv;
        }
        if (st) {
            r->shared_error = every_ranks(st);
            break;
        }
        log_step(r, s, &info, comm_bytes, tokens_per_step);
        if (r->cfg.comms_logger && r->cfg.comms_verbose) /* its table under the live line */
            progress_clear(&r->prog);
        if ((st = monitors_step(
                 &r->mon, s, (int64_t)(s + 1) * r->cfg.micro_batch * r->cfg.grad_accum * r->nranks,
                 r->series.loss[s], info.lr, info.loss_scale, &r->ph,
                 (s + 1) % r->cfg.steps_per_print == 0 || last, zc_comm_get_counters(r->comm),
                 err)))
            break; /* rank 0's file */
        if (r->model.sample && o->sample_every && ((s + 1) % o->sample_every == 0 || last)) {
            progress_clear(&r->prog);
            st = r->model.sample(&r->model, s + 1, err);
        }
        if (st) {
            r->shared_error = every_ranks(st);
            break;
        }
        if (save_due(o, s))
            st = save_checkpoint(r, s, config_json, err);
        if (!st && !last)
            st = stop_if_asked(r, s, config_json, err);
        r->prev = *zc_comm_get_counters(r->comm); /* validation, sampling, saving: not the step's */
        if (r->stopped_by)
            break;
    }
    progress_clear(&r->prog);
    monitors_close(&r->mon, zc_comm_get_counters(r->comm));
    free(config_json);
    return st;
}

/* ---------- the end ---------- */

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

/* The report's series and per-step averages, from what the loop recorded. */
static void fill_report(const train_run *r, train_report *rep)
{
    const step_series *ser = &r->series;
    const int64_t f = r->first_step;
    double per = rep->steps > 1 ? (double)(rep->steps - 1) : 1.0;
    rep->rs_bytes = r->step_bytes[ZC_COMM_REDUCE_SCATTER] / per;
    rep->ag_bytes = r->step_bytes[ZC_COMM_ALL_GATHER] / per;
    rep->ar_bytes = r->step_bytes[ZC_COMM_ALL_REDUCE] / per;
    rep->control_bytes = r->step_bytes[ZC_COMM_CONTROL] / per;
    rep->rs_inter = r->step_inter[ZC_COMM_REDUCE_SCATTER] / per;
    rep->ag_inter = r->step_inter[ZC_COMM_ALL_GATHER] / per;
    rep->ar_inter = r->step_inter[ZC_COMM_ALL_REDUCE] / per;
    rep->loss = ser->loss + f;
    rep->grad_norm = ser->gnorm + f;
    rep->lr = ser->lr + f;
    rep->step_ms = ser->ms + f;
    rep->loss_scale = ser->scale + f;
    rep->gemm_ms = ser->gemm_ms + f;
    rep->val_loss = ser->val_loss + f;
    rep->val_ms = ser->val_ms + f;
    rep->gemm_path_fp32 = zc_gemm_path(ZC_GEMM_F32);
    rep->gemm_path_bf16 = zc_gemm_path(ZC_GEMM_BF16);
    rep->simd = zc_simd_name(zc_simd_level());
    if (r->cfg.stage == 3) {
        rep->prefetch_hits = ser->hits + f;
        rep->prefetch_misses = ser->misses + f;
    }
    if (r->disk.active) {
        rep->disk = ser->disk + f;
        rep->aio_engine = r->disk.aio_engine;
        rep->param_elems_on_disk = r->disk.param_elems_on_disk;
        rep->param_elems_in_ram = r->disk.param_elems_in_ram;
    }
    rep->skipped_steps = zc_engine_loss_scaler(r->e)->skipped;
}

/* The final weights (digest, --save-weights, --save-final), every rank's memory gathered to rank
 * 0, its summary lines and the report. A run stopped by a signal writes its report of the steps
 * it ran, not the final files (its checkpoint holds its work). An error here is this rank's. */
static zc_status finish(train_run *r, train_report *rep, bool stopped, zc_err *err)
{
    const train_opts *o = &r->o;
    fill_report(r, rep);
    rank_memory mine = my_memory(r->mem); /* before the digest and exports borrow memory */
    zc_status st = zc_engine_weights_sha256(r->e, rep->final_sha, err);
    if (!st && o->save_weights && !stopped &&
        !(st = zc_safetensors_save(r->e, o->save_weights, err)) && r->rank == 0)
        printf("wrote %s (the fp32 weights, safetensors)\n", o->save_weights);
    if (!st && o->save_final && !stopped) /* train_args refused models without a format of their
                                           * own */
        st = r->model.save_final(&r->model, o->save_final, err);
    rank_memory *all = calloc((size_t)r->nranks, sizeof *all);
    if (!st && !all)
        st = zc_err_set(err, ZC_ENOMEM, "out of memory");
    if (!st)
        st = zc_comm_control_gather(r->comm, &mine, all, sizeof mine, "memory report", err);
    if (!st && r->rank == 0) {
        int64_t states = mine.params + mine.grads + mine.optimizer;
        char ratio[32] = "none in RAM"; /* everything offloaded */
        if (states > 0)
            snprintf(ratio, sizeof ratio, "%.2fx", (double)rep->stage0_states / (double)states);
        printf("memory per rank (rank 0): model states %.1f MiB (params %.1f, grads %.1f, "
               "optimizer %.1f); stage 0 would hold %.1f MiB (%s); working peak %.1f MiB, "
               "activations peak %.1f MiB, peak RSS %.1f MiB\n",
               mib(states), mib(mine.params), mib(mine.grads), mib(mine.optimizer),
               mib(rep->stage0_states), ratio, mib(mine.working_peak), mib(mine.activations_peak),
               mib(mine.peak_rss));
        if (mine.nvme)
            printf("offload (rank 0): %.1f MiB of model states on disk (nvme), streamed through "
                   "%.1f MiB of RAM buffers (peak)\n",
                   mib(mine.nvme), mib(mine.offload_peak));
        printf("comm per step (rank 0): reduce-scatter %.1f MiB, all-gather %.1f MiB; "
               "final weights sha256 %s\n",
               mib((int64_t)rep->rs_bytes), mib((int64_t)rep->ag_bytes), rep->final_sha);
        rep->ranks = all;
        if (o->report)
            st = train_report_write(rep, o->report, err);
    }
    free(all);
    r->shared_error = false;
    return st;
}

/* Frees what the run built. After an error that is not every rank's, with other ranks, the
 * engine is left alone: its teardown would wait for collectives the others may never finish,
 * and the job is being aborted. */
static void train_free(train_run *r, zc_status st)
{
    if (!st || r->shared_error || r->nranks == 1) {
        if (r->model.destroy)
            r->model.destroy(&r->model);
        zc_engine_destroy(r->e);
        zc_mem_destroy(r->mem);
    }
    series_free(&r->series);
    zc_ckpt_unlock_dir(r->save_lock);
}

int cmd_train(zc_comm *comm, int argc, char **argv)
{
    train_run r = {.comm = comm, .rank = zc_comm_rank(comm), .nranks = zc_comm_size(comm)};
    zc_err err = {0};
    bool helped = false;
    zc_status st = train_args_read(comm, argc, argv, &r.o, &r.cfg, &helped, &err);
    if (helped)
        return 0;
    if (!st) /* before the first collective one rank could make alone */
        st = train_agree_opts(comm, &r.o, &err);
    /* the save directory is this job's until it ends: a second job is refused here */
    if (!st && r.o.save_dir)
        st = zc_ckpt_lock_dir(comm, r.o.save_dir, &r.save_lock, &err);
    if (st) {
        zc_ckpt_unlock_dir(r.save_lock);
        if (r.o.save_dir_made) /* refused before it held anything: nothing left behind */
            rmdir(r.o.save_dir);
        return cli_fail(comm, &err, true);
    }
    announce_config(&r);

    train_report rep = {.model = r.o.model, .world_size = r.nranks, .stage = r.cfg.stage};
    if ((st = build(&r, &err)))
        goto out;
    rep.first_step = (int)r.first_step;
    rep.steps = r.o.steps - (int)r.first_step;
    rep.tokens_per_step = r.model.tokens_per_micro_step * r.nranks * r.cfg.grad_accum;
    rep.dtype = zc_dtype_name(r.cfg.dtype);
    rep.grad_dtype = zc_dtype_name(zc_config_grad_dtype(&r.cfg));
    rep.comm_dtype = zc_dtype_name(zc_config_comm_dtype(&r.cfg));
    rep.params = (int64_t)zc_engine_total_numel(r.e);
    rep.params_padded = (int64_t)zc_engine_total_padded(r.e);
    zc_state_bytes s0 = zc_engine_state_bytes_for_stage(r.e, 0);
    rep.stage0_states = s0.params + s0.grads + s0.optimizer;
    zc_engine_offload_stats(r.e, &r.disk);
    announce_model(&r, &rep);
    if ((st = zc_engine_weights_sha256(r.e, rep.initial_sha, &err))) {
        r.shared_error = st == ZC_ELOCKSTEP;
        goto out;
    }
    zc_mem_reset_peaks(r.mem); /* the digest's buffer is not training's working memory */
    if ((st = series_alloc(&r.series, r.o.steps, &err)))
        goto out;
    warn_launcher_kill(&r);
    cli_stop_signal_install(cli_launched()); /* a stop request ends the loop at a step's end */
    if ((st = train_loop(&r, rep.tokens_per_step, &err)))
        goto out;
    if (r.stopped_by) {
        rep.steps = (int)(r.stopped_at - r.first_step);
        if ((st = finish(&r, &rep, true, &err)))
            goto out;
        if (r.rank == 0 && r.o.save_dir)
            printf("stopped by %s after step %lld (checkpoint saved); continue with --resume "
                   "%s --save-dir %s (without --save-dir the continued run saves nothing)\n",
                   cli_stop_signal_name(r.stopped_by), (long long)r.stopped_at, r.o.save_dir,
                   r.o.save_dir);
        else if (r.rank == 0)
            printf("stopped by %s after step %lld (nothing saved: no --save-dir)\n",
                   cli_stop_signal_name(r.stopped_by), (long long)r.stopped_at);
        fflush(stdout); /* under mpirun's kill, before its SIGKILL can come */
        train_free(&r, ZC_OK);
        return cli_stop_signal_exit_code(r.stopped_by); /* the shell's code for that signal */
    }
    st = finish(&r, &rep, false, &err);
out:
    train_free(&r, st);
    if (st && r.o.save_dir_made) /* removed only if empty: a save before the failure stays */
        rmdir(r.o.save_dir);
    return st ? cli_fail(comm, &err, r.shared_error) : 0;
}
