#!/usr/bin/python3
"""make_llama_dir.py SHAPE OUT [--layers N] [--seed S] — writes a Hugging Face Llama directory
(config.json + model.safetensors, F32) of a real model's shape with random weights, for
benchmarks whose weights do not matter but whose shapes must be the real ones.

SHAPE is one of the names in SHAPES below; their values are the public config.json files'
(HuggingFaceTB/SmolLM2-135M, meta-llama/Llama-3.2-1B, meta-llama/Llama-3.1-8B). --layers keeps only the first N decoder
layers (the rest of the shape as it is: the same embedding, head and widths), for a shape whose
states do not fit the machine. Weights N(0, 0.02) (config.json's initializer_range is not used:
every matrix gets the same 0.02, as the brief for the benchmark asks), norms 1. Deterministic
(torch's CPU generator, --seed, default 0). Tensors are drawn and written one at a time, so a
1 B-parameter model needs ~1 GB of RAM, not 5.

safetensors, as written here:
  OFFSET  SIZE  DESCRIPTION
  0       8     N, the header's length, uint64 little-endian
  8       N     JSON: {name: {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]}},
                offsets relative to byte 8 + N; padded with spaces to a multiple of 8
  8 + N   ...   the tensors' raw little-endian data, in the header's order

Debian's python3-torch (1.13); no transformers."""
import argparse
import json
import os
import struct
import sys

import torch

SHAPES = {
    "smollm2-135m": {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu",
        "hidden_size": 576, "intermediate_size": 1536, "num_hidden_layers": 30,
        "num_attention_heads": 9, "num_key_value_heads": 3, "head_dim": 64,
        "vocab_size": 49152, "tie_word_embeddings": True, "rope_theta": 100000.0,
        "rope_scaling": None, "rms_norm_eps": 1e-5, "max_position_embeddings": 8192,
        "attention_bias": False, "mlp_bias": False, "bos_token_id": 0, "eos_token_id": 0,
        "initializer_range": 0.041666666666666664, "torch_dtype": "float32",
    },
    "llama-3.1-8b": {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu",
        "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
        "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
        "vocab_size": 128256, "tie_word_embeddings": False, "rope_theta": 500000.0,
        "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                         "original_max_position_embeddings": 8192, "rope_type": "llama3"},
        "rms_norm_eps": 1e-5, "max_position_embeddings": 131072, "attention_bias": False,
        "mlp_bias": False, "bos_token_id": 128000, "eos_token_id": 128001,
        "initializer_range": 0.02, "torch_dtype": "float32",
    },
    "llama-3.2-1b": {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu",
        "hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 16,
        "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 64,
        "vocab_size": 128256, "tie_word_embeddings": True, "rope_theta": 500000.0,
        "rope_scaling": {"factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                         "original_max_position_embeddings": 8192, "rope_type": "llama3"},
        "rms_norm_eps": 1e-5, "max_position_embeddings": 131072, "attention_bias": False,
        "mlp_bias": False, "bos_token_id": 128000, "eos_token_id": 128001,
        "initializer_range": 0.02, "torch_dtype": "float32",
    },
}


def tensors(cfg):
    """[(name, shape, kind)] in transformers' order; kind "w" N(0, 0.02), "norm" ones."""
    C, F, hd = cfg["hidden_size"], cfg["intermediate_size"], cfg["head_dim"]
    q, kv = cfg["num_attention_heads"] * hd, cfg["num_key_value_heads"] * hd
    out = [("model.embed_tokens.weight", (cfg["vocab_size"], C), "w")]
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        out += [(p + "input_layernorm.weight", (C,), "norm"),
                (p + "self_attn.q_proj.weight", (q, C), "w"),
                (p + "self_attn.k_proj.weight", (kv, C), "w"),
                (p + "self_attn.v_proj.weight", (kv, C), "w"),
                (p + "self_attn.o_proj.weight", (C, q), "w"),
                (p + "post_attention_layernorm.weight", (C,), "norm"),
                (p + "mlp.gate_proj.weight", (F, C), "w"),
                (p + "mlp.up_proj.weight", (F, C), "w"),
                (p + "mlp.down_proj.weight", (C, F), "w")]
    out.append(("model.norm.weight", (C,), "norm"))
    if not cfg["tie_word_embeddings"]:
        out.append(("lm_head.weight", (cfg["vocab_size"], C), "w"))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("shape", choices=sorted(SHAPES))
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=0, help="keep the first N layers (default all)")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    cfg = dict(SHAPES[a.shape])
    if a.layers:
        if not 1 <= a.layers <= cfg["num_hidden_layers"]:
            sys.exit(f"make_llama_dir.py: --layers {a.layers} outside 1..{cfg['num_hidden_layers']}")
        cfg["num_hidden_layers"] = a.layers
    specs = tensors(cfg)
    header, at = {}, 0
    for name, shape, _ in specs:
        n = 4 * torch.Size(shape).numel()
        header[name] = {"dtype": "F32", "shape": list(shape), "data_offsets": [at, at + n]}
        at += n
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    os.makedirs(a.out, exist_ok=True)
    torch.manual_seed(a.seed)
    with open(os.path.join(a.out, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for name, shape, kind in specs:
            t = torch.ones(shape) if kind == "norm" else torch.empty(shape).normal_(0.0, 0.02)
            f.write(t.numpy().astype("<f4", copy=False).tobytes())
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    n = sum(torch.Size(s).numel() for _, s, _ in specs)
    print(f"wrote {a.out}: {a.shape}, {cfg['num_hidden_layers']} layers, {n} parameters")


if __name__ == "__main__":
    main()
