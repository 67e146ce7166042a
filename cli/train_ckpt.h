/* train_ckpt.h — what `zeroc train` keeps of itself in a checkpoint (the manifest's client
 * object), and the check that a resumed run trains the model the checkpoint was written for. */
#ifndef ZEROC_CLI_TRAIN_CKPT_H
#define ZEROC_CLI_TRAIN_CKPT_H

#include <stdint.h>

#include "cli/train_model.h"
#include "cli/train_opts.h"
#include "zeroc/status.h"

/* Where the trainer stands after `steps_done` optimizer steps, as a JSON object: the model and
 * its shape (train_model's describe), the planned steps, the learning-rate schedule (its name,
 * warmup steps, position and the next step's rate) and the data read: micro-batches, tokens of
 * the training file (the position a resume continues from), its order and the seed of a
 * shuffled one. malloc'd; NULL when out of memory. */
char *train_ckpt_client(const train_opts *o, const train_model *m, const char *schedule,
                        int64_t warmup, int64_t steps_done, double next_lr, int64_t micro_steps,
                        uint64_t tokens, uint64_t seed);

/* The checkpoint in dir (its client object `client`, may be NULL) was written for the model
 * this run builds: every field the model describes itself by must match, since some shapes
 * (GPT-2's head count) change no size the loader could check. The same verdict on every rank. */
zc_status train_ckpt_same_model(const char *dir, const char *client, const train_opts *o,
                                const train_model *m, zc_err *err);

/* Where a resumed run's data continues: the checkpoint's run read `tokens` (its client object's
 * data) after step `step`; this run reads tokens_per_step a step. The same order and, shuffled,
 * the same seed and position are required (a shuffled order cannot continue under another
 * batch); in order, a run with another global batch continues at the checkpoint's token
 * (m->resume_data) and *tokens says where (0: where its own steps put it). Checkpoints
 * without the record are taken as they are. The same verdict on every rank. */
/* The version of --shuffle's window order a checkpoint's client record names: 2 is the keyed
 * Feistel permutation, a new order every epoch; records without it come from the first version
 * (one affine cycle, rotated each epoch). */
#define SHUFFLE_ORDER 2
/* True when the record's run shuffled in an order other than this version's. */
bool train_ckpt_earlier_shuffle(const char *client);

zc_status train_ckpt_resume_data(const char *dir, const char *client, const train_opts *o,
                                 uint64_t seed, double tokens_per_step, int64_t step,
                                 train_model *m, uint64_t *tokens, zc_err *err);

#endif
