/* train_ckpt.h — what `zeroc train` keeps of itself in a checkpoint (the manifest's client
 * object), and what a resumed run takes from a checkpoint's manifest: the check that it trains
 * the model the checkpoint was written for, where its data continues, and where its
 * learning-rate schedule stands. Manifests of format 2 (an earlier zeroc) are read as that zeroc
 * wrote them: what they lack is derived from what they record, or the resume is refused. */
#ifndef ZEROC_CLI_TRAIN_CKPT_H
#define ZEROC_CLI_TRAIN_CKPT_H

#include <stddef.h>
#include <stdint.h>

#include "cli/train_model.h"
#include "cli/train_opts.h"
#include "zeroc/status.h"

/* The version of --shuffle's window order a checkpoint's client record names: 2 is the keyed
 * Feistel permutation, a new order every epoch; records without it come from the first version
 * (one affine cycle, rotated each epoch). */
#define SHUFFLE_ORDER 2

/* Where the trainer stands after `steps_done` optimizer steps, as a JSON object: the model and
 * its shape (train_model's describe), the planned steps, the learning-rate schedule (its name,
 * warmup steps, its position — the steps it has advanced over, fp16 steps skipped for overflow
 * not counted — and the next step's rate) and the data read: micro-batches, tokens of the
 * training file (the position a resume continues from), the tokens of one sequence (0:
 * generated data), its order and the seed of a shuffled one (as decimal text, a string: a JSON
 * number is a double to cJSON). malloc'd; NULL when out of memory. */
char *train_ckpt_client(const train_opts *o, const train_model *m, const char *schedule,
                        int64_t warmup, int64_t position, double next_lr, int64_t micro_steps,
                        uint64_t tokens, int seq_len, uint64_t seed);

/* The checkpoint in dir (its client object `client`, may be NULL) was written for the model
 * this run builds: every field the model describes itself by must match, since some shapes
 * (GPT-2's head count) change no size the loader could check. The same verdict on every rank. */
/* After a load refused as another model's (ZC_EINVAL): if the checkpoint's record shows which
 * of this run's flags made its units differ, *err says so instead (else left as it is). */
zc_status train_ckpt_explain_model(const char *dir, const train_opts *o, const train_model *m,
                                   zc_err *err);
zc_status train_ckpt_same_model(const char *dir, const char *client, const train_opts *o,
                                const train_model *m, zc_err *err);

/* Whether the checkpoint `resume` names records no MLP tiles (client.mlp_tile_cols: written
 * before they existed), so its MLP is one unit whatever --tile-params says now; false when it
 * cannot tell (the resume itself then says why). */
bool train_ckpt_mlp_untiled(const char *resume);

/* The trainer's record in the manifest of the checkpoint in dir (its JSON text) range-checked
 * against itself, by `ckpt verify` and `ckpt inspect` and before a resume uses it: optimizer_steps
 * = step - loss_scaler.skipped; steps_planned from step to 2^31 - 1; a finite next_lr >= 0;
 * integer counters (tokens and micro-steps consumed from 0 to 2^53, seq_len >= 1 for a model of
 * sequences); shuffle a boolean; the seed the decimal text of one (or, an earlier zeroc's, a
 * number). ZC_EINVAL naming the file, the field, its value and what was expected. A manifest
 * without the trainer's record (client.model: a program's own checkpoint) passes. */
zc_status train_ckpt_check_record(const char *dir, const char *manifest, zc_err *err);

/* Who wrote the checkpoint, for the resume's line: "" when it is this zeroc, else " (written by
 * zeroc VERSION)" or, format 2, " (written by an earlier zeroc: manifest format 2)". */
void train_ckpt_producer(const char *manifest, char *out, size_t n);

/* How this run reads its training data, for the checks of a resume. */
typedef struct {
    bool shuffle;
    uint64_t seed;
    int micro_batch, accum, ranks; /* sequences a micro-step per rank, micro-steps, ranks */
    int seq_len;                   /* tokens of one sequence; 0: generated data (no file) */
    uint64_t epoch_windows;        /* windows (micro-batch × seq_len tokens) per pass over the
                                    * file, as --shuffle counts them; 0: unknown */
} train_ckpt_data;

/* Where a resumed run's data continues, from the checkpoint's manifest (its JSON text, as
 * zc_ckpt_manifest_json gives it; dir names it in messages) after step `step`. The same order
 * is required; shuffled, the same seed (exactly; one an earlier zeroc recorded as a double, to
 * its precision, with a note), micro-batch, sequence length and windows a step (the
 * order depends on them) and this zeroc's window order — an earlier zeroc's is continued only
 * from the end of an epoch (the refusal says at which step its epoch ends). In order, a run with
 * another global batch continues at the token where the checkpoint's run stopped
 * (m->resume_data; *tokens says where, 0: where its own steps put it): the checkpoint records
 * it, or for an earlier zeroc's it is derived from the global batch its config records (refused,
 * naming both batches, where it cannot be). `note` gets rank 0's line about it ("" for none).
 * Checkpoints without a data record are taken as they are. The same verdict on every rank. */
zc_status train_ckpt_resume_data(const char *dir, const char *manifest, const train_ckpt_data *d,
                                 int64_t step, train_model *m, uint64_t *tokens, char *note,
                                 size_t note_len, zc_err *err);

/* The learning-rate schedule as the checkpoint recorded it. */
typedef struct {
    bool recorded;        /* false: the record has no schedule (the step's own position holds) */
    int64_t position;     /* the steps the schedule had advanced over: its next step's position */
    int64_t other;        /* a format-2 record whose writer cannot be told (it counted fp16
                           * skipped steps in --warmup/--lr-schedule or not): the other reading,
                           * taken when it alone gives next_lr; −1: none */
    double next_lr;       /* the rate its next step would have had; NAN: not recorded */
    int64_t skipped;      /* fp16 steps its run skipped */
    bool counted_skipped; /* `position` counts skipped steps (an earlier zeroc's --warmup and
                           * --lr-schedule advanced on them) */
} train_ckpt_lr;

/* Reads the schedule's record from the manifest: format 3 records its position; format 2 its
 * step, from which the position is what that zeroc computed (DeepSpeed's scheduler never
 * counted skipped steps, the trainer's own did before data.shuffle_order was recorded). A
 * position outside 0..step is refused naming the field. */
zc_status train_ckpt_lr_record(const char *dir, const char *manifest, train_ckpt_lr *lr,
                               zc_err *err);

/* The learning-rate settings the checkpoint recorded that differ from this run's (config_json:
 * this run's effective configuration; schedule and warmup as train_ckpt_client gets them), each
 * as "KEY A there, B here (to keep the checkpoint's: HOW)" joined by "; ", into out ("" when
 * none differs). */
void train_ckpt_lr_changes(const char *manifest, const char *config_json, const train_opts *o,
                           const char *schedule, int64_t warmup, char *out, size_t n);

#endif
