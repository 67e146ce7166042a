/* hf_decoder.h — the Llama family in Hugging Face transformers' layout: LlamaForCausalLM
 * (Llama 3.x, SmolLM2), Qwen2ForCausalLM (Qwen2.5) and MistralForCausalLM without a sliding
 * window in use, as a directory with config.json and model.safetensors, or the sharded form
 * (model-0000K-of-0000N.safetensors + model.safetensors.index.json). Each is a configuration of
 * the one decoder (gpt2.h's gpt2_config); GPT-2's own files are hf_files.h's.
 *
 * config.json → gpt2_config: hidden_size (C), intermediate_size, num_hidden_layers,
 * num_attention_heads, num_key_value_heads (default: the heads), head_dim (default C / heads),
 * max_position_embeddings, vocab_size, rms_norm_eps, rope_theta (or rope_parameters.rope_theta),
 * rope_scaling / rope_parameters of type default or llama3 (factor, low_freq_factor,
 * high_freq_factor, original_max_position_embeddings), tie_word_embeddings. Refused, naming the
 * key: hidden_act other than silu, attention_bias or mlp_bias true, a sliding window in use,
 * mixture-of-experts keys, another rope type, a model_type other than llama, qwen2, mistral.
 *
 * Tensors (transformers' names) → zeroc's parameters, q|k|v and gate|up fused by rows:
 *
 *   model.embed_tokens.weight [V, C]                      wte [Vp, C] (padded rows zero)
 *   model.layers.<l>.input_layernorm.weight [C]           h.<l>.ln1w
 *   model.layers.<l>.self_attn.q_proj.weight [H·hd, C]    h.<l>.qkvw rows [0, H·hd)
 *   model.layers.<l>.self_attn.k_proj.weight [KV·hd, C]   h.<l>.qkvw rows [H·hd, (H+KV)·hd)
 *   model.layers.<l>.self_attn.v_proj.weight [KV·hd, C]   h.<l>.qkvw rows [(H+KV)·hd, …)
 *   ….{q,k,v}_proj.bias (Qwen2)                           h.<l>.qkvb, the same thirds
 *   model.layers.<l>.self_attn.o_proj.weight [C, H·hd]    h.<l>.attprojw
 *   model.layers.<l>.post_attention_layernorm.weight [C]  h.<l>.ln2w
 *   model.layers.<l>.mlp.gate_proj.weight [I, C]          h.<l>.fcw rows [0, I)
 *   model.layers.<l>.mlp.up_proj.weight [I, C]            h.<l>.fcw rows [I, 2I)
 *   model.layers.<l>.mlp.down_proj.weight [C, I]          h.<l>.fcprojw
 *   model.norm.weight [C]                                 lnfw
 *   lm_head.weight [V, C]                                 lm_head [Vp, C] (untied); tied: may
 *                                                         be present, and is then ignored
 *   ….self_attn.rotary_emb.inv_freq (older files)         ignored (computed from config.json)
 *
 * Any other tensor is refused by name; F32, BF16 and F16 are widened to fp32.
 */
#ifndef ZEROC_MODELS_GPT2_HF_DECODER_H
#define ZEROC_MODELS_GPT2_HF_DECODER_H

#include <stdbool.h>

#include "models/gpt2/gpt2.h"
#include "zeroc/engine.h"

/* Whether config.json (a file) names a Llama-family model_type (llama, qwen2, mistral) — the
 * files this reader takes; false for GPT-2's and for anything unreadable. */
bool hf_decoder_config_is_family(const char *config_json);
/* The architecture from dir/config.json (the model_type's family), checked against the
 * tensors' shapes when the weights are there (a directory of config.json alone is a shape to
 * estimate). */
zc_status hf_decoder_read_config(const char *dir, gpt2_config *cfg, zc_err *err);
/* After zc_engine_finalize on a decoder of cfg's shape: every parameter from the directory's
 * safetensors file(s), each rank the elements it holds. Not collective. */
zc_status hf_decoder_load(zc_engine *e, const char *dir, const gpt2_config *cfg, zc_err *err);
/* The directory's weights read without an engine, as a LoRA checkpoint's base (hf_base_open):
 * elements [first, first + n) of a parameter of shape gc (zeroc's name and layout). */
typedef struct hf_decoder_base hf_decoder_base;
zc_status hf_decoder_base_open(const char *dir, hf_decoder_base **out, zc_err *err);
zc_status hf_decoder_base_read(const hf_decoder_base *b, const gpt2_config *gc,
                               const zc_param_info *pi, size_t first, size_t n, float *dst,
                               zc_err *err);
void hf_decoder_base_close(hf_decoder_base *b);
/* A checkpoint of such a model (shape gc) as outdir/config.json and outdir/model.safetensors
 * (F32, transformers' names; above 5 GB sharded with model.safetensors.index.json, as
 * transformers saves), each written durably. One process, a tensor at a time. base: as
 * hf_export_checkpoint's. */
zc_status hf_decoder_export(const char *ckdir, const gpt2_config *gc, const char *base,
                            const char *outdir, zc_err *err);

#endif
