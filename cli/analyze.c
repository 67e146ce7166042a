/* analyze.c — `zeroc analyze`: the ZeRO memory experiment on the reference MLP, with real ranks,
 * real collectives and real bytes. For each ZeRO stage it trains the model a few steps and
 * records every rank's ledger at the documents' checkpoints (after model creation, optimizer
 * creation, data load, forward, backward, step), the peaks and the peak RSS, next to the
 * estimate (zeroc/estimate.h); prints the tables and writes PREFIX.csv and PREFIX.svg.
 *
 * zeroc allocates the optimizer state together with the parameters (zc_engine_finalize), so
 * "after optimizer creation" equals "after model creation". The peak RSS of each stage is
 * measured alone: VmHWM is reset (/proc/self/clear_refs) before each stage. Started without
 * mpirun, main.c checks the flags (cli_analyze_check) and relaunches the command under mpirun
 * with --ranks processes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/analyze_chart.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/fail.h"
#include "cli/output_paths.h"
#include "cli/units.h"
#include "models/gpt2/gpt2.h"
#include "models/mlp/mlp.h"
#include "zeroc/engine.h"
#include "zeroc/rng.h"

typedef struct {
    const char *model, *out, *dtype;
    int hidden, layers, channels, heads, vocab, seq_len, micro, steps, ranks;
    double lr;
    char csv[4096], svg[4096]; /* OUT.csv, OUT.svg */
} analyze_opts;

static void snapshot(const zc_mem *mem, int64_t out[ANALYZE_NCAT])
{
    for (int k = 0; k < ANALYZE_NCAT; k++)
        out[k] = zc_mem_get(mem, k).current;
}

/* Resets the process's peak RSS so each stage's peak is its own. */
static void reset_peak_rss(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (f) {
        fputs("5", f);
        fclose(f);
    }
}

/* The stage's configuration, through the config's own keys (their ranges and checks apply). */
static zc_status stage_config(zc_config *cfg, const analyze_opts *o, int stage, zc_err *err)
{
    char stage_s[16], lr_s[40], micro_s[16];
    snprintf(stage_s, sizeof stage_s, "%d", stage);
    snprintf(lr_s, sizeof lr_s, "%.17g", o->lr); /* round-trips the double exactly */
    snprintf(micro_s, sizeof micro_s, "%d", o->micro);
    zc_config_defaults(cfg);
    zc_status st = zc_config_set(cfg, "zero_optimization.stage", stage_s, err);
    if (!st)
        st = zc_config_set(cfg, "optimizer.params.lr", lr_s, err);
    if (!st)
        st = zc_config_set(cfg, "train_micro_batch_size_per_gpu", micro_s, err);
    if (!st && strcmp(o->dtype, "fp32")) /* bf16 or fp16: the dtype follows the key */
        st = zc_config_set(cfg, !strcmp(o->dtype, "bf16") ? "bf16.enabled" : "fp16.enabled", "true",
                           err);
    return st;
}

/* One stage: build, train, record. Collective. */
static zc_status run_stage(zc_comm *comm, const analyze_opts *o, int stage, analyze_rank *me,
                           analyze_stage *est, zc_err *err)
{
    const int rank = zc_comm_rank(comm), n = zc_comm_size(comm);
    zc_config cfg;
    zc_status cst = stage_config(&cfg, o, stage, err);
    if (cst)
        return cst;
    memset(me, 0, sizeof *me);
    reset_peak_rss();
    zc_mem *mem = zc_mem_create();
    zc_engine *e = NULL;
    mlp_model *mlp = NULL;
    gpt2_model *gpt = NULL;
    float *x = NULL, *y = NULL;
    int *tok = NULL;
    size_t data_bytes = 0;
    bool is_mlp = !strcmp(o->model, "mlp");
    gpt2_config gc = {.max_seq_len = o->seq_len,
                      .vocab_size = o->vocab,
                      .padded_vocab_size = gpt2_pad_vocab(o->vocab),
                      .num_layers = o->layers,
                      .num_heads = o->heads,
                      .channels = o->channels};
    /* stage 3 prefetches one (the largest) unit ahead: the default ("auto") */
    const mlp_config mc = {.hidden = o->hidden,
                           .layers = o->layers,
                           .batch = o->micro,
                           .compute = cfg.dtype == ZC_BF16 ? ZC_GEMM_BF16 : ZC_GEMM_F32};
    zc_status st = mem ? zc_engine_create(&e, &cfg, comm, mem, err)
                       : zc_err_set(err, ZC_ENOMEM, "out of memory");
    if (!st && is_mlp)
        st = mlp_create(&mlp, e, mem, &mc, err);
    else if (!st)
        st = gpt2_create(&gpt, e, mem, &gc, o->micro, o->seq_len, false, err);
    if (!st)
        st = zc_engine_finalize(e, err);
    if (st)
        goto done;
    snapshot(mem, me->at[CP_MODEL]);
    snapshot(mem, me->at[CP_OPTIMIZER]);
    /* the batch lives with the activations */
    data_bytes = is_mlp ? 2 * (size_t)o->micro * o->hidden * sizeof(float)
                        : ((size_t)o->micro * o->seq_len + 1) * sizeof(int);
    void *data = zc_mem_alloc(mem, ZC_MEM_ACTIVATIONS, data_bytes);
    if (!data) {
        st = zc_err_set(err, ZC_ENOMEM, "out of memory for a batch");
        goto done;
    }
    x = data, y = x + (size_t)o->micro * o->hidden, tok = data;
    snapshot(mem, me->at[CP_DATA]);
    double t0 = 0;
    for (int s = 0; s < o->steps && !st; s++) {
        if (s == 1)
            t0 = now_ms();
        double loss;
        if (is_mlp) {
            mlp_batch(mlp, cfg.seed, s, (int64_t)rank * o->micro, x, y);
            st = mlp_forward(mlp, x, y, &loss, err);
        } else {
            for (size_t i = 0; i < (size_t)o->micro * o->seq_len + 1; i++)
                tok[i] = (int)(zc_rng_uniform(cfg.seed, (uint64_t)s * n + rank, i) * o->vocab);
            st = gpt2_train_forward(gpt, tok, tok + 1, &loss, err);
        }
        if (!st && s == 0)
            snapshot(mem, me->at[CP_FORWARD]);
        if (!st)
            st = is_mlp ? mlp_backward(mlp, y, err) : gpt2_backward(gpt, tok, tok + 1, err);
        if (!st && s == 0)
            snapshot(mem, me->at[CP_BACKWARD]);
        zc_step_info info;
        if (!st)
            st = zc_engine_step(e, &info, err);
        if (!st && s == 0)
            snapshot(mem, me->at[CP_STEP]);
    }
    est->ms_per_step = o->steps > 1 ? (now_ms() - t0) / (o->steps - 1) : 0;
    for (int k = 0; k < ANALYZE_NCAT; k++)
        me->peak[k] = zc_mem_get(mem, k).peak;
    me->states_peak = zc_mem_model_states_peak(mem);
    me->peak_rss = zc_mem_peak_rss();
    const size_t nu = (size_t)zc_engine_num_units(e);
    size_t *numel = malloc(nu * 2 * sizeof(size_t));
    uint8_t *use = malloc(nu);
    ZC_ASSERT(numel && use);
    zc_estimate_in in = zc_engine_estimate_in(e, stage, numel, numel + nu, use);
    zc_state_bytes b = zc_estimate_states(&in);
    est->stage = stage;
    est->est_states = b.params + b.grads + b.optimizer;
    est->est_staging = zc_estimate_comm_staging(&in);
    est->est_working_bound = zc_estimate_working_bound(&in);
    est->est_activations =
        (int64_t)data_bytes +
        (int64_t)(is_mlp ? mlp_activation_bytes(&mc)
                         : gpt2_activation_bytes(&gc, o->micro, o->seq_len, false, mc.compute));
    free(numel);
    free(use);
    zc_mem_free(mem, ZC_MEM_ACTIVATIONS, data, data_bytes);
done:
    mlp_destroy(mlp);
    gpt2_destroy(gpt);
    zc_engine_destroy(e);
    zc_mem_destroy(mem);
    return st;
}

static void print_stage(const analyze_stage *s, int nranks, const analyze_stage *s0)
{
    const analyze_rank *r0 = &s->ranks[0];
    printf("\n== ZeRO stage %d (rank 0; MiB) ==\n%-26s", s->stage, "");
    for (int k = 0; k < ANALYZE_NCAT; k++)
        printf(" %11s", zc_mem_category_name(k));
    printf(" %11s\n", "states");
    for (int c = 0; c < CP_N; c++) {
        printf("%-26s", analyze_checkpoint_names[c]);
        for (int k = 0; k < ANALYZE_NCAT; k++)
            printf(" %11.1f", mib(r0->at[c][k]));
        printf(" %11.1f\n", mib(r0->at[c][ZC_MEM_PARAMS] + r0->at[c][ZC_MEM_GRADS] +
                                r0->at[c][ZC_MEM_OPTIMIZER]));
    }
    printf("%-26s", "peak");
    for (int k = 0; k < ANALYZE_NCAT; k++)
        printf(" %11.1f", mib(r0->peak[k]));
    printf(" %11.1f\n", mib(r0->states_peak));
    printf("estimate: states %.1f, activations %.1f, comm %.1f, working <= %.1f  | measured "
           "states %s the estimate\n",
           mib(s->est_states), mib(s->est_activations), mib(s->est_staging),
           mib(s->est_working_bound),
           r0->states_peak == s->est_states ? "equal to the byte to" : "DIFFER from");
    printf("peak RSS per rank:");
    for (int r = 0; r < nranks; r++)
        printf(" %.1f", mib(s->ranks[r].peak_rss));
    printf(" MiB; %.1f ms/step", s->ms_per_step);
    if (s0 != s) {
        /* a stage can hold more than stage 0 (its RSS, say): "x% more", never "-x% less" */
        double states = 100.0 * (1.0 - (double)r0->states_peak / (double)s0->ranks[0].states_peak);
        double rss = 100.0 * (1.0 - (double)r0->peak_rss / (double)s0->ranks[0].peak_rss);
        printf("; vs stage 0: model states %.1f%% %s, peak RSS %.1f%% %s", fabs(states),
               states <= -0.05 ? "more" : "less", fabs(rss), rss <= -0.05 ? "more" : "less");
    }
    printf("\n");
}

/* Reads and checks the flags (cmd_analyze, and the process that relaunches it under mpirun
 * first: cli_analyze_check); with --help, prints the usage when `print`. */
static zc_status read_opts(int argc, char **argv, analyze_opts *o, bool print, bool *helped,
                           zc_err *err)
{
    *o = (analyze_opts){.model = "mlp",
                        .out = "analyze",
                        .dtype = "fp32",
                        .hidden = MLP_DEFAULT_HIDDEN,
                        .channels = 256,
                        .heads = 4,
                        .vocab = 50257,
                        .seq_len = 128,
                        .steps = 3,
                        .ranks = 4,
                        .lr = 1e-3};
    arg_spec specs[] = {
        {"--model", ARG_STR, &o->model, NULL, "mlp (default) or gpt2 (synthetic tokens)", NULL},
        {"--ranks", ARG_INT, &o->ranks, NULL,
         "ranks to run on when started without mpirun "
         "(default 4)",
         NULL},
        {"--hidden", ARG_INT, &o->hidden, NULL, "mlp: hidden size (default 2048)", NULL},
        {"--layers", ARG_INT, &o->layers, NULL, "mlp: layers (default 12); gpt2: blocks (4)", NULL},
        {"--channels", ARG_INT, &o->channels, NULL, "gpt2: channels (default 256)", NULL},
        {"--heads", ARG_INT, &o->heads, NULL, "gpt2: heads (default 4)", NULL},
        {"--vocab", ARG_INT, &o->vocab, NULL, "gpt2: vocabulary (default 50257)", NULL},
        {"--seq-len", ARG_INT, &o->seq_len, NULL, "gpt2: sequence length (default 128)", NULL},
        {"--micro-batch", ARG_INT, &o->micro, NULL, "per rank (mlp 32, gpt2 4)", NULL},
        {"--steps", ARG_INT, &o->steps, NULL, "steps per stage (default 3)", NULL},
        {"--dtype", ARG_STR, &o->dtype, NULL, "fp32 (default), bf16 or fp16", NULL},
        {"--out", ARG_STR, &o->out, NULL, "writes OUT.csv and OUT.svg (default analyze)", NULL},
    };
    const int nspecs = (int)(sizeof specs / sizeof specs[0]);
    zc_status st = args_parse_command(specs, nspecs, argc, argv, 2,
                                      "zeroc analyze [--model mlp|gpt2] [--ranks N] [flags]", print,
                                      helped, err);
    if (st || *helped)
        return st;
    bool is_mlp = !strcmp(o->model, "mlp");
    if (!args_given(argc, argv, 2, "--layers")) /* the model's defaults; a 0 given is refused */
        o->layers = is_mlp ? MLP_DEFAULT_LAYERS : 4;
    if (!args_given(argc, argv, 2, "--micro-batch"))
        o->micro = is_mlp ? 32 : 4;
    if (strcmp(o->model, "mlp") && strcmp(o->model, "gpt2"))
        return zc_err_set(err, ZC_EINVAL, "--model: unknown model '%s' (known: mlp, gpt2)",
                          o->model);
    if (strcmp(o->dtype, "fp32") && strcmp(o->dtype, "bf16") && strcmp(o->dtype, "fp16"))
        return zc_err_set(err, ZC_EINVAL, "--dtype: expected fp32, bf16 or fp16, got '%s'",
                          o->dtype);
    static const char *const gpt2_only[] = {"--channels", "--heads", "--vocab", "--seq-len"};
    for (size_t i = 0; is_mlp && i < sizeof gpt2_only / sizeof *gpt2_only; i++)
        if (args_given(argc, argv, 2, gpt2_only[i]))
            return zc_err_set(err, ZC_EINVAL, "%s is a gpt2 flag; --model mlp does not use it",
                              gpt2_only[i]);
    if (!is_mlp && args_given(argc, argv, 2, "--hidden"))
        return zc_err_set(err, ZC_EINVAL, "--hidden is an mlp flag; --model gpt2 takes --channels");
    const struct {
        const char *flag;
        int value;
    } counts[] = {{"--hidden", o->hidden}, {"--layers", o->layers}, {"--micro-batch", o->micro},
                  {"--steps", o->steps},   {"--ranks", o->ranks},   {"--channels", o->channels},
                  {"--heads", o->heads},   {"--vocab", o->vocab},   {"--seq-len", o->seq_len}};
    for (size_t i = 0; i < sizeof counts / sizeof *counts; i++)
        if (counts[i].value < 1)
            return zc_err_set(err, ZC_EINVAL, "%s must be >= 1, got %d", counts[i].flag,
                              counts[i].value);
    /* "" would write the hidden files .csv and .svg */
    if ((st = cli_output_named("--out", o->out, sizeof o->csv - 8, err)))
        return st;
    snprintf(o->csv, sizeof o->csv, "%s.csv", o->out);
    snprintf(o->svg, sizeof o->svg, "%s.svg", o->out);
    return ZC_OK;
}

/* The files it writes at the end, checked before the four stages run: not among a
 * checkpoint's files, and writable. */
static zc_status check_files(const analyze_opts *o, zc_err *err)
{
    zc_status st;
    if (!(st = cli_output_not_checkpoint("--out", o->csv, err)) &&
        !(st = cli_output_not_checkpoint("--out", o->svg, err)) &&
        !(st = cli_output_writable("--out", o->csv, err)))
        st = cli_output_writable("--out", o->svg, err);
    return st;
}

zc_status cli_analyze_check(int argc, char **argv, int *ranks, zc_err *err)
{
    analyze_opts o;
    bool helped;
    zc_status st = read_opts(argc, argv, &o, false, &helped, err);
    if (!st)
        st = check_files(&o, err);
    *ranks = o.ranks;
    return st;
}

int cmd_analyze(zc_comm *comm, int argc, char **argv)
{
    analyze_opts o;
    zc_err err = {0};
    bool helped;
    const bool rank0 = zc_comm_rank(comm) == 0; /* rank 0 prints the help, writes the files */
    zc_status st = read_opts(argc, argv, &o, rank0, &helped, &err);
    if (helped)
        return 0;
    if (st) /* the same flags on every rank: the same error */
        return cli_fail(comm, &err, true);
    st = zc_comm_agree(comm, rank0 ? check_files(&o, &err) : ZC_OK, "checking --out", &err);
    if (st)
        return cli_fail(comm, &err, true);
    const bool is_mlp = !strcmp(o.model, "mlp");
    const int rank = zc_comm_rank(comm), n = zc_comm_size(comm);
    analyze_rank *all = calloc(4 * (size_t)n, sizeof *all);
    analyze_stage stages[4];
    for (int s = 0; s < 4 && !st; s++) {
        analyze_rank me;
        st = run_stage(comm, &o, s, &me, &stages[s], &err);
        if (!st)
            st = zc_comm_control_gather(comm, &me, all + (size_t)s * n, sizeof me,
                                        "analyze results", &err);
        stages[s].ranks = all + (size_t)s * n;
        if (!st && rank == 0)
            print_stage(&stages[s], n, &stages[0]);
    }
    if (!st && rank == 0) {
        char title[256];
        if (is_mlp)
            snprintf(title, sizeof title, "MLP %d x Linear(%d), batch %d/rank, %s Adam, %d ranks",
                     o.layers, o.hidden, o.micro, o.dtype, n);
        else
            snprintf(title, sizeof title, "GPT-2 L=%d C=%d V=%d T=%d, batch %d/rank, %s, %d ranks",
                     o.layers, o.channels, o.vocab, o.seq_len, o.micro, o.dtype, n);
        st = analyze_write_csv(o.csv, stages, 4, n, &err);
        if (!st)
            st = analyze_write_svg(o.svg, title, stages, 4, &err);
        if (!st)
            printf("\nwrote %s and %s\n", o.csv, o.svg);
    }
    free(all);
    return st ? cli_fail(comm, &err, st == ZC_EINVAL || st == ZC_ELOCKSTEP) : 0;
}
