/* ckpt_shape.h — a GPT-2's shape from a zeroc checkpoint: what `zeroc train` records in the
 * manifest's client fields (max_seq_len, vocab_size, padded_vocab_size, num_layers, num_heads,
 * channels), which the weights alone do not tell (heads, the real vocabulary). Read by the
 * exporters to llm.c's and Hugging Face's formats.
 *
 *     gpt2_config gc;
 *     if (gpt2_checkpoint_shape(reader, "ckpt/step-000100", &gc, &err)) ...
 */
#ifndef ZEROC_MODELS_GPT2_CKPT_SHAPE_H
#define ZEROC_MODELS_GPT2_CKPT_SHAPE_H

#include "models/gpt2/gpt2.h"
#include "zeroc/checkpoint.h"

/* Fills *gc from the open checkpoint `r` of directory `dir` (named in messages). ZC_EINVAL
 * naming the field when one is missing, not an integer, or outside 1..INT_MAX; whether the
 * fields describe a GPT-2 zeroc can build is the caller's check. */
zc_status gpt2_checkpoint_shape(zc_ckpt_reader *r, const char *dir, gpt2_config *gc, zc_err *err);
/* The JSON members (no braces) that record cfg in a checkpoint's client object: GPT-2's six
 * dimensions, and for another family its architecture (family, kv_heads, head_dim, hidden, norm,
 * mlp, bias, pos, untied, norm_eps, rope_*), LoRA's (lora_r, lora_alpha, lora_dropout,
 * lora_targets, lora_seed) when it has adapters, read back by gpt2_checkpoint_shape. */
void gpt2_describe(const gpt2_config *cfg, char *out, size_t cap);

#endif
