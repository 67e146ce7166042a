#!/usr/bin/python3
"""pytorch_llama.py DIR TOKENS T B STEPS [--autocast] — the plain PyTorch peer of `zeroc train
--init DIR` for bench/llama_vs_pytorch.sh: a Llama-family decoder written straight in PyTorch
(embedding, RMSNorm in fp32, RoPE in the rotate-half layout with `llama3` scaling, grouped-query
attention by matmul + causal softmax — torch 1.13 has no scaled_dot_product_attention —, SwiGLU,
tied or untied head), loading the SAME Hugging Face directory (config.json + model.safetensors,
F32) zeroc starts from, trained with torch.optim.AdamW at zeroc's settings (lr 1e-4, betas
0.9/0.999, eps 1e-8, weight decay 0, no clipping) on the windows `zeroc train` reads from the
llm.c token file TOKENS (step s: the B·T + 1 tokens from s·B·T, B rows of T), one process.

--autocast runs forward and loss under torch.autocast("cpu", dtype=torch.bfloat16) (the
products in bf16 on oneDNN, the master weights and AdamW in fp32). Denormals are flushed. Prints
one line: median and minimum ms per step over the steps after the first two (warm-up), tokens/s
at the median, threads, and every step's loss. Debian's python3-torch (1.13) and numpy."""
import argparse
import json
import math
import os
import statistics
import struct
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


def fail(msg):
    sys.exit(f"pytorch_llama.py: {msg}")


ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
ap.add_argument("dir")
ap.add_argument("tokens")
ap.add_argument("T", type=int)
ap.add_argument("B", type=int)
ap.add_argument("steps", type=int)
ap.add_argument("--autocast", action="store_true")
opts = ap.parse_args()
T, B, STEPS = opts.T, opts.B, opts.steps
if STEPS < 3:
    fail(f"STEPS must be at least 3 (the first two are warm-up, not timed), got {STEPS}")
try:
    with open(os.path.join(opts.dir, "config.json")) as f:
        cfg = json.load(f)
except (OSError, ValueError) as e:
    fail(f"{opts.dir}/config.json: {e}")
C, FF, L = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"]
NH, NKV, V = cfg["num_attention_heads"], cfg.get("num_key_value_heads") or cfg["num_attention_heads"], cfg["vocab_size"]
HD = cfg.get("head_dim") or C // NH
EPS, TIED = cfg["rms_norm_eps"], cfg.get("tie_word_embeddings", False)


def inv_freq():
    """RoPE's per-band frequencies, with rope_scaling "llama3" as transformers applies it."""
    f = 1.0 / cfg.get("rope_theta", 10000.0) ** (torch.arange(0, HD, 2, dtype=torch.float64) / HD)
    rs = cfg.get("rope_scaling")
    if rs and rs.get("rope_type", rs.get("type")) == "llama3":
        fac, lo, hi = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
        old = rs["original_max_position_embeddings"]
        wl = 2 * math.pi / f
        s = (old / wl - lo) / (hi - lo)
        f = torch.where(wl > old / lo, f / fac,
                        torch.where(wl < old / hi, f, (1 - s) * f / fac + s * f))
    elif rs:
        fail(f"rope_scaling {rs} not supported by this peer")
    return f


ang = torch.arange(T, dtype=torch.float64)[:, None] * inv_freq()[None, :]  # (T, HD/2)
COS = torch.cat([ang.cos(), ang.cos()], -1).float()  # (T, HD)
SIN = torch.cat([ang.sin(), ang.sin()], -1).float()


def rope(x):  # x (B, heads, T, HD): channel i < HD/2 pairs with i + HD/2
    x1, x2 = x[..., :HD // 2], x[..., HD // 2:]
    return x * COS + torch.cat([-x2, x1], -1) * SIN


class RMSNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(C))

    def forward(self, x):  # in fp32, as transformers' LlamaRMSNorm
        xf = x.float()
        return xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS) * self.weight


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.input_layernorm, self.post_attention_layernorm = RMSNorm(), RMSNorm()
        self.q_proj = nn.Linear(C, NH * HD, bias=False)
        self.k_proj = nn.Linear(C, NKV * HD, bias=False)
        self.v_proj = nn.Linear(C, NKV * HD, bias=False)
        self.o_proj = nn.Linear(NH * HD, C, bias=False)
        self.gate_proj = nn.Linear(C, FF, bias=False)
        self.up_proj = nn.Linear(C, FF, bias=False)
        self.down_proj = nn.Linear(FF, C, bias=False)
        self.mask = torch.ones(T, T).tril() == 0

    def forward(self, x):
        b, t, _ = x.shape
        h = self.input_layernorm(x)
        q = self.q_proj(h).view(b, t, NH, HD).transpose(1, 2)
        k = self.k_proj(h).view(b, t, NKV, HD).transpose(1, 2)
        v = self.v_proj(h).view(b, t, NKV, HD).transpose(1, 2)
        q, k = rope(q), rope(k)
        k, v = (z.repeat_interleave(NH // NKV, dim=1) for z in (k, v))  # transformers' repeat_kv
        a = (q @ k.transpose(-1, -2)) / math.sqrt(HD)
        a = a.float().masked_fill(self.mask[:t, :t], float("-inf")).softmax(-1).to(v.dtype)
        x = x + self.o_proj((a @ v).transpose(1, 2).reshape(b, t, NH * HD))
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


class Llama(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed_tokens = nn.Embedding(V, C)
        self.layers = nn.ModuleList(Block() for _ in range(L))
        self.norm = RMSNorm()
        self.lm_head = None if TIED else nn.Linear(C, V, bias=False)

    def forward(self, i, t):
        x = self.embed_tokens(i)
        for blk in self.layers:
            x = blk(x)
        x = self.norm(x)
        logits = x @ self.embed_tokens.weight.t() if TIED else self.lm_head(x)
        return F.cross_entropy(logits.float().reshape(-1, V), t.reshape(-1))


def hf_name(ours):
    """This model's parameter name → the safetensors file's."""
    if ours.startswith("layers."):
        _, l, rest = ours.split(".", 2)
        sub = ("self_attn." if rest.split(".")[0] in ("q_proj", "k_proj", "v_proj", "o_proj")
               else "mlp." if rest.split(".")[0] in ("gate_proj", "up_proj", "down_proj") else "")
        return f"model.layers.{l}.{sub}{rest}"
    return ours if ours == "lm_head.weight" else "model." + ours


def load(model):
    """Reads DIR/model.safetensors (8-byte header length, JSON header, raw data; F32) into the
    model, refusing a missing, extra or mis-shaped tensor."""
    path = os.path.join(opts.dir, "model.safetensors")
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
    base, state = 8 + n, {}
    want = {hf_name(k): (k, tuple(p.shape)) for k, p in model.state_dict().items()}
    for key, t in header.items():
        if key == "__metadata__":
            continue
        if key not in want:
            fail(f"{path}: tensor '{key}' is not in this model")
        name, shape = want[key]
        if t["dtype"] != "F32" or tuple(t["shape"]) != shape:
            fail(f"{path}: '{key}' is {t['dtype']} {t['shape']}, expected F32 {list(shape)}")
        data = np.fromfile(path, dtype="<f4", count=math.prod(shape), offset=base + t["data_offsets"][0])
        state[name] = torch.from_numpy(data.astype(np.float32).reshape(shape))
    missing = [k for k in want if k not in header]
    if missing:
        fail(f"{path}: no tensor for {', '.join(missing[:4])} ({len(missing)} missing)")
    model.load_state_dict(state)


def main():
    torch.set_flush_denormal(True)
    torch.manual_seed(0)
    with open(opts.tokens, "rb") as f:
        hdr = np.frombuffer(f.read(1024), dtype="<i4")
        if hdr[0] != 20240520 or hdr[1] != 1:
            fail(f"{opts.tokens}: not an llm.c uint16 token file (magic {hdr[0]}, version {hdr[1]})")
        tok = np.frombuffer(f.read(), dtype="<u2").astype(np.int64)
    if len(tok) < B * T + 2:
        fail(f"{opts.tokens}: {len(tok)} tokens, fewer than B·T + 2 = {B * T + 2}")
    if int(tok.max()) >= V:
        fail(f"{opts.tokens}: token id {int(tok.max())} >= vocabulary {V}")
    model = Llama()
    load(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.999), eps=1e-8,
                            weight_decay=0.0)
    times, losses = [], []
    for s in range(STEPS):
        p = s * B * T % len(tok)  # zeroc's sequential window (wrapping)
        w = torch.from_numpy(np.take(tok, np.arange(p, p + B * T + 1), mode="wrap"))
        t0 = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=opts.autocast):
            loss = model(w[:-1].view(B, T), w[1:].view(B, T))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        times.append(1e3 * (time.perf_counter() - t0))
        losses.append(loss.item())
    ms = statistics.median(times[2:])
    print(f"pytorch ms/step {ms:.1f} min {min(times[2:]):.1f} tokens/s {B * T / ms * 1e3:.0f} "
          f"threads {torch.get_num_threads()} autocast {int(opts.autocast)} losses "
          + " ".join(f"{x:.7f}" for x in losses), flush=True)


if __name__ == "__main__":
    main()
