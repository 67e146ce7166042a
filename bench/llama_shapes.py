#!/usr/bin/env python3
"""llama_shapes.py — what the Llama-family models people bring cost per rank under zeroc: the
table in docs/BENCHMARKS.md ("Llama-family shapes"), made by `zeroc estimate --init DIR` on a
directory holding only each model's config.json (zeroc reads the architecture from it; the
weights are not needed to estimate). The config values are those of the public config.json
files on the Hugging Face hub (architecture keys only).

Usage: bench/llama_shapes.py ZEROC [--ranks N] [--seq-len T] [--micro-batch B]
Prints a Markdown table: parameters, then RAM per rank at stages 0-3 and at stage 3 with both
NVMe offloads (with its disk per rank), bf16 mixed precision with activation checkpointing."""
import json
import os
import subprocess
import sys
import tempfile

LLAMA3_ROPE = {"rope_type": "llama3", "low_freq_factor": 1.0, "high_freq_factor": 4.0,
               "original_max_position_embeddings": 8192}
MODELS = {
    "SmolLM2-135M": dict(model_type="llama", hidden_size=576, intermediate_size=1536,
                         num_hidden_layers=30, num_attention_heads=9, num_key_value_heads=3,
                         vocab_size=49152, max_position_embeddings=8192, rope_theta=100000.0,
                         rms_norm_eps=1e-5, tie_word_embeddings=True),
    "SmolLM2-360M": dict(model_type="llama", hidden_size=960, intermediate_size=2560,
                         num_hidden_layers=32, num_attention_heads=15, num_key_value_heads=5,
                         vocab_size=49152, max_position_embeddings=8192, rope_theta=100000.0,
                         rms_norm_eps=1e-5, tie_word_embeddings=True),
    "SmolLM2-1.7B": dict(model_type="llama", hidden_size=2048, intermediate_size=8192,
                         num_hidden_layers=24, num_attention_heads=32, num_key_value_heads=32,
                         vocab_size=49152, max_position_embeddings=8192, rope_theta=130000.0,
                         rms_norm_eps=1e-5, tie_word_embeddings=True),
    "Qwen2.5-0.5B": dict(model_type="qwen2", hidden_size=896, intermediate_size=4864,
                         num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2,
                         vocab_size=151936, max_position_embeddings=32768, rope_theta=1e6,
                         rms_norm_eps=1e-6, tie_word_embeddings=True),
    "Qwen2.5-1.5B": dict(model_type="qwen2", hidden_size=1536, intermediate_size=8960,
                         num_hidden_layers=28, num_attention_heads=12, num_key_value_heads=2,
                         vocab_size=151936, max_position_embeddings=32768, rope_theta=1e6,
                         rms_norm_eps=1e-6, tie_word_embeddings=True),
    "Qwen2.5-7B": dict(model_type="qwen2", hidden_size=3584, intermediate_size=18944,
                       num_hidden_layers=28, num_attention_heads=28, num_key_value_heads=4,
                       vocab_size=152064, max_position_embeddings=32768, rope_theta=1e6,
                       rms_norm_eps=1e-6, tie_word_embeddings=False),
    "Llama-3.2-1B": dict(model_type="llama", hidden_size=2048, intermediate_size=8192,
                         num_hidden_layers=16, num_attention_heads=32, num_key_value_heads=8,
                         head_dim=64, vocab_size=128256, max_position_embeddings=131072,
                         rope_theta=500000.0, rope_scaling={**LLAMA3_ROPE, "factor": 32.0},
                         rms_norm_eps=1e-5, tie_word_embeddings=True),
    "Llama-3.2-3B": dict(model_type="llama", hidden_size=3072, intermediate_size=8192,
                         num_hidden_layers=28, num_attention_heads=24, num_key_value_heads=8,
                         head_dim=128, vocab_size=128256, max_position_embeddings=131072,
                         rope_theta=500000.0, rope_scaling={**LLAMA3_ROPE, "factor": 32.0},
                         rms_norm_eps=1e-5, tie_word_embeddings=True),
    "Llama-3.1-8B": dict(model_type="llama", hidden_size=4096, intermediate_size=14336,
                         num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
                         vocab_size=128256, max_position_embeddings=131072, rope_theta=500000.0,
                         rope_scaling={**LLAMA3_ROPE, "factor": 8.0}, rms_norm_eps=1e-5,
                         tie_word_embeddings=False),
}


def gib(b):
    return f"{b / 2**30:.1f}"


def main():
    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    zeroc, opts = args[0], dict(zip(args[1::2], args[2::2]))
    ranks, T, B = opts.get("--ranks", "2"), opts.get("--seq-len", "2048"), \
        opts.get("--micro-batch", "1")
    tmp = tempfile.mkdtemp(prefix="zeroc-shapes-")
    print(f"| model | parameters | stage 0 | stage 1 | stage 2 | stage 3 | stage 3 + NVMe: RAM "
          f"| disk |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, cfg in MODELS.items():
        d = os.path.join(tmp, name)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump({"hidden_act": "silu", **cfg}, f)
        base = [zeroc, "estimate", "--init", d, "--ranks", ranks, "--seq-len", T,
                "--micro-batch", B, "--dtype", "bf16", "--activation-checkpointing", "--json"]
        plain = json.loads(subprocess.run(base, check=True, capture_output=True,
                                          text=True).stdout)
        off = json.loads(subprocess.run(base + ["--offload-optimizer", "nvme", "--offload-param",
                                                "nvme"], check=True, capture_output=True,
                                        text=True).stdout)
        rows = {r["stage"]: r for r in plain["rows"]}
        o3 = [r for r in off["rows"] if r["stage"] == 3][0]
        cells = [gib(rows[s]["total_per_rank"]) for s in range(4)]
        print(f"| {name} | {plain['params'] / 1e9:.2f} B | " + " | ".join(cells) +
              f" | {gib(o3['total_per_rank'])} | {gib(o3['nvme'])} |")
    print(f"\n(GiB per rank; {ranks} ranks, sequence {T}, micro-batch {B}, bf16 with fp32 master "
          "weights and Adam moments, activation checkpointing; parameters with the vocabulary "
          "padded to a multiple of 128)")


if __name__ == "__main__":
    main()
