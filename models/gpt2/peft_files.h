/* peft_files.h — LoRA adapters in Hugging Face PEFT's files: a directory of adapter_config.json
 * (LoraConfig's keys) and adapter_model.safetensors, as PeftModel.save_pretrained writes them and
 * PeftModel.from_pretrained reads them.
 *
 * Tensor names: "base_model.model." + the adapted module's name in transformers + ".lora_A.weight"
 * [r, in] or ".lora_B.weight" [out, r] —
 *
 *   Llama family  model.layers.<l>.self_attn.{q,k,v,o}_proj,
 * model.layers.<l>.mlp.{gate,up,down}_proj GPT-2         transformer.h.<l>.attn.c_attn,
 * transformer.h.<l>.attn.c_proj (o), transformer.h.<l>.mlp.c_fc (up), transformer.h.<l>.mlp.c_proj
 * (down)
 *
 * (GPT-2's Conv1D stores its base weight transposed, so PEFT marks it fan_in_fan_out; the adapters'
 * own matrices are nn.Linear weights either way). zeroc's parameters h.<l>.lora.<module>.A/.B hold
 * the same matrices (lora.h).
 *
 * Read: r, lora_alpha, lora_dropout, target_modules (a list or one string), bias "none"; refused,
 * naming the key: another peft_type, use_rslora, use_dora, modules_to_save, layers_to_transform,
 * a non-empty rank_pattern or alpha_pattern, a tensor of another name or shape. */
#ifndef ZEROC_MODELS_GPT2_PEFT_FILES_H
#define ZEROC_MODELS_GPT2_PEFT_FILES_H

#include <stdbool.h>

#include "models/gpt2/gpt2.h"
#include "zeroc/engine.h"

/* Whether dir holds adapter_config.json (a PEFT adapter to read). */
bool peft_is_adapter(const char *dir);
/* LoRA's settings from dir/adapter_config.json for a model of the family (gpt2: GPT-2's module
 * names); l->seed is left as it is. */
zc_status peft_read_config(const char *dir, bool gpt2, gpt2_lora *l, zc_err *err);
/* After zc_engine_finalize on a decoder of cfg's shape and LoRA settings: every adapter's A and
 * B from dir/adapter_model.safetensors, each rank the elements it holds. Not collective. */
zc_status peft_load(zc_engine *e, const char *dir, const gpt2_config *cfg, zc_err *err);
/* A checkpoint's adapters (shape and settings gc) as outdir/adapter_config.json and
 * outdir/adapter_model.safetensors (F32), each written durably; `base` names the base model in
 * base_model_name_or_path (NULL: null). One process. */
zc_status peft_export(const char *ckdir, const gpt2_config *gc, const char *base,
                      const char *outdir, zc_err *err);
/* PEFT's name of the tensor holding block l's adapter of target t (lora_A with a, else lora_B),
 * into out (cap bytes). */
void peft_tensor_name(bool gpt2, int l, lora_target t, bool a, char *out, size_t cap);

#endif
