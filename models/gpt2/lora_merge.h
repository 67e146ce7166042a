/* lora_merge.h — a LoRA run's checkpoint read as the merged model: each adapted base weight W
 * read as W + (alpha/r)·B·A over the rows its adapters cover (PEFT's merge_and_unload), so the
 * exporters of the base model's formats (Hugging Face's, llm.c's) write a model that computes
 * what the base and its adapters computed together, without adapters. */
#ifndef ZEROC_MODELS_GPT2_LORA_MERGE_H
#define ZEROC_MODELS_GPT2_LORA_MERGE_H

#include <stddef.h>

#include "models/gpt2/gpt2.h"
#include "zeroc/checkpoint.h"

/* Elements [first, first + n) of checkpoint parameter p (zeroc's layout: [out, in] row-major),
 * with the adapters of gc (gc->lora.r > 0) added where p is an adapted block weight; other
 * parameters as stored. The adapters' own parameters (lora_is_param) are not asked for. */
zc_status lora_merged_read(zc_ckpt_reader *r, const gpt2_config *gc, int p, size_t first, size_t n,
                           float *dst, zc_err *err);

#endif
