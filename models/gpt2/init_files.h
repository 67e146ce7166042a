/* init_files.h — the weight files a GPT-2 can start from, whichever format: an llm.c checkpoint
 * (models/gpt2/llmc_files.h) or a Hugging Face GPT-2 (models/gpt2/hf_files.h). zeroc's own
 * .safetensors files (any model) are not these: the library loads them (zeroc/safetensors.h). */
#ifndef ZEROC_MODELS_GPT2_INIT_FILES_H
#define ZEROC_MODELS_GPT2_INIT_FILES_H

#include <stdbool.h>

#include "models/gpt2/gpt2.h"

/* Whether path is a GPT-2 file of these formats (an llm.c checkpoint: anything that is not a
 * .safetensors file; a Hugging Face GPT-2: hf_is_checkpoint). */
bool gpt2_is_init_file(const char *path);
/* ZC_EINVAL, saying what it is and how to export it to an llm.c checkpoint, when path is one of
 * zeroc's own outputs given where a GPT-2 init file is expected: a checkpoint directory (it has
 * manifest.json), a save directory (latest or step-N entries), its `latest` file, a checkpoint's
 * own file, or a zeroc .safetensors weights file (hf_is_zeroc_weights); ZC_OK otherwise. */
zc_status gpt2_init_not_zeroc_output(const char *path, zc_err *err);
/* The shape the file holds (an llm.c header, or config.json); zeroc's own outputs are refused
 * by gpt2_init_not_zeroc_output first. */
zc_status gpt2_init_shape(const char *path, gpt2_config *cfg, zc_err *err);
/* What an --init path is, found once (gpt2_init_resolve) and then asked: whether it is one of
 * the decoder's files, and if so its architecture, or why it cannot be built. */
typedef struct {
    bool decoder; /* an llm.c checkpoint or a Hugging Face directory / .safetensors of the
                   * decoder (GPT-2, Llama, Qwen2, Mistral); false: zeroc's own .safetensors
                   * (any model) */
    bool hf;      /* of those, a Hugging Face one */
    zc_status st; /* ZC_OK, or why the file's shape cannot be had (err says it); for a file
                   * not the decoder's, why, when it is a zeroc output given in the wrong
                   * place (gpt2_init_not_zeroc_output) */
    zc_err err;
    gpt2_config cfg; /* the shape, when st is ZC_OK */
} gpt2_init;
/* Resolves path: the one place that tells llm.c's, Hugging Face's and zeroc's files apart. The
 * commands call it once and keep the answer (train: in train_opts). */
void gpt2_init_resolve(const char *path, gpt2_init *out);

/* After zc_engine_finalize: the weights from the file (each rank what it holds). */
zc_status gpt2_load_init(gpt2_model *m, const char *path, zc_err *err);

#endif
