/* train_opts.h — the flags of `zeroc train` that are not config keys (those go through
 * zc_config_set), shared by the training loop and the model adaptors. */
#ifndef ZEROC_CLI_TRAIN_OPTS_H
#define ZEROC_CLI_TRAIN_OPTS_H

#include <stdbool.h>

#include "models/gpt2/init_files.h"

typedef struct {
    const char *model, *config, *report, *save_weights, *dtype;
    int steps;
    /* mlp */
    int hidden, layers;
    /* gpt2 (layers shared with mlp) */
    int channels, heads, seq_len, vocab, max_seq_len;
    const char *init, *data, *val_data, *save_final, *lr_schedule;
    const char *save_dir, *resume, *nvme_path;
    int save_every, keep;
    int val_every, val_windows, warmup, sample_every, sample_length; /* val_windows 0: all */
    int64_t tile_params; /* gpt2_config.tile_params: 0 the size of a block, −1 never */
    /* gpt2 LoRA: a PEFT adapter directory, its settings and starting weights (the settings
     * otherwise come from the config's lora section, --lora-r and the like) */
    const char *lora_init;
    bool activation_checkpointing, shuffle, no_memory_check;
    bool save_dir_made;  /* rank 0 made --save-dir for this run: a refused run removes it */
    gpt2_init init_file; /* what --init is, resolved once (cli/train_args.c) */
    struct {             /* gpt2 shape flags given on the command line (not defaulted) */
        bool layers, channels, heads, vocab, max_seq_len;
    } given;
} train_opts;

#endif
