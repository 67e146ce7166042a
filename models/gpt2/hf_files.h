/* hf_files.h — GPT-2 weights in Hugging Face transformers' layout, the files everyone has:
 * a directory with `config.json` and `model.safetensors` (GPT2LMHeadModel / GPT2Model), or the
 * .safetensors file itself with its config.json beside it.
 *
 * Tensor names, with or without the `transformer.` prefix, and how each maps to zeroc's (llm.c's)
 * parameters; HF's Conv1D stores a linear layer's weight [in, out], zeroc [out, in] (T:
 * transposed on the way in and out):
 *
 *   wte.weight [V, C]              wte [Vp, C]: rows V..Vp−1 (zeroc's padding) are zero
 *   wpe.weight [n_positions, C]    wpe
 *   h.<l>.ln_1.weight / .bias      h.<l>.ln1w / ln1b
 *   h.<l>.attn.c_attn.weight [C, 3C] / .bias     h.<l>.qkvw (T) / qkvb  (fused q|k|v)
 *   h.<l>.attn.c_proj.weight [C, C] / .bias      h.<l>.attprojw (T) / attprojb
 *   h.<l>.ln_2.weight / .bias      h.<l>.ln2w / ln2b
 *   h.<l>.mlp.c_fc.weight [C, 4C] / .bias        h.<l>.fcw (T) / fcb
 *   h.<l>.mlp.c_proj.weight [4C, C] / .bias      h.<l>.fcprojw (T) / fcprojb
 *   ln_f.weight / .bias            lnfw / lnfb
 *   lm_head.weight [V, C]          tied to wte: accepted when equal to wte.weight, else refused;
 *                                  without wte.weight, the embedding itself (safetensors.torch.
 *                                  save_model keeps one name of a tied pair: a GPT2LMHeadModel's
 *                                  file holds lm_head.weight and no transformer.wte.weight)
 *   h.<l>.attn.bias, .masked_bias  the causal-mask buffers older files carry: ignored
 *
 * Any other tensor is refused by name. Tensors may be F32, BF16 or F16 (widened to fp32). Their
 * data_offsets, in any header order, must tile the data after the header as the format requires:
 * two tensors on the same bytes, a gap, trailing bytes or a name given twice are refused.
 * config.json gives n_layer, n_head, n_embd, n_positions (or n_ctx) and vocab_size, the first
 * four also under GPT2Config's other names (num_hidden_layers, num_attention_heads, hidden_size,
 * max_position_embeddings: transformers takes those when both are given, so both with different
 * values are refused by name); n_head must divide n_embd. Keys that would make a different
 * model (an activation other than GPT-2's tanh GELU, another LayerNorm epsilon, n_inner ≠
 * 4·n_embd, untied embeddings, per-layer attention scaling) are refused by name; dropout rates
 * are ignored (zeroc trains without dropout).
 *
 *     gpt2_config cfg;
 *     if (hf_read_config("gpt2/", &cfg, &err)) ...          // the shape
 *     gpt2_create(&m, e, mem, &cfg, B, T, false, &err); zc_engine_finalize(e, &err);
 *     if (hf_load(e, "gpt2/", &cfg, &err)) ...              // each rank reads what it holds
 *     if (hf_export_checkpoint("ckpt/step-000100", "out/", &err)) ...   // out/model.safetensors
 */
#ifndef ZEROC_MODELS_GPT2_HF_FILES_H
#define ZEROC_MODELS_GPT2_HF_FILES_H

#include <stdbool.h>

#include "models/gpt2/gpt2.h"
#include "zeroc/checkpoint.h"
#include "zeroc/engine.h"

/* Whether path is a Hugging Face GPT-2: a directory (with config.json), or a .safetensors file
 * whose tensors carry transformers' names (wte.weight, wpe.weight, ln_f.weight or
 * h.0.ln_1.weight, with or without the prefix). */
bool hf_is_checkpoint(const char *path);
/* Whether path is a .safetensors file of zeroc's own naming (zeroc train --save-weights, zeroc
 * ckpt export: producer "zeroc" in its metadata, or a tensor named wte) and not of transformers'
 * (none of the names above): weights without the model's shape. */
bool hf_is_zeroc_weights(const char *path);
/* The shape from config.json (the directory's, or the one beside the .safetensors file), with
 * zeroc's padded vocabulary. */
zc_status hf_read_config(const char *path, gpt2_config *cfg, zc_err *err);
/* After zc_engine_finalize on a GPT-2 of cfg's shape: sets every parameter from the file (each
 * rank the elements it holds). Not collective. */
zc_status hf_load(zc_engine *e, const char *path, const gpt2_config *cfg, zc_err *err);
/* A Hugging Face model (path as hf_load takes it: a GPT-2 or a Llama-family directory) as the
 * base of a LoRA run's checkpoint r of shape gc, which records its base by digest only:
 * hf_base_read is a zc_ckpt_base_read (ctx: the hf_base) giving the reader's base parameters
 * from the files. hf_base_attach opens it and gives it to r (zc_ckpt_reader_set_base: read whole
 * and checked against the digest); *out is closed by hf_base_close after r is done. */
typedef struct hf_base hf_base;
zc_status hf_base_attach(const char *path, const gpt2_config *gc, zc_ckpt_reader *r, hf_base **out,
                         zc_err *err);
void hf_base_close(hf_base *b);
/* A GPT-2 checkpoint of zeroc train as outdir/model.safetensors (F32, the names above without
 * the prefix, no lm_head: tied) and outdir/config.json, each written durably; outdir is created
 * if missing. One process, streamed a tensor at a time. base: NULL, or the model a LoRA run's
 * checkpoint was trained on, which it records by digest only (hf_base_attach). */
zc_status hf_export_checkpoint(const char *ckdir, const char *base, const char *outdir,
                               zc_err *err);

#endif
