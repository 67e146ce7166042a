#!/usr/bin/python3
"""llama_reference.py — golden reference for zeroc's Llama-family decoder (`zeroc train --init
DIR` on a Hugging Face Llama / Qwen2 directory).

What it is for
--------------
A Llama-family decoder written from scratch in PyTorch, float64 (no `transformers`, no zeroc code),
that writes the fixtures tests/test_llama.py holds `zeroc train` to:

  tests/fixtures/llama_tiny/         config.json + model.safetensors (F32): a Llama 3 shape —
                                     grouped-query attention, explicit head_dim != hidden/heads,
                                     rope_scaling "llama3", untied lm_head
  tests/fixtures/qwen2_tiny/         config.json + model-0000{1,2}-of-00002.safetensors +
                                     model.safetensors.index.json (F32): a Qwen2 shape — q/k/v
                                     biases, tied embeddings, default RoPE, GQA, sharded
  tests/fixtures/llama_wide/         config.json + model.safetensors (F32): llama_tiny's shape with
                                     one layer and an MLP 4608 wide (zeroc runs it in column
                                     blocks, and tiles it)
  tests/fixtures/llama_tokens.bin    an llm.c token file (uint16) they all train on
  tests/fixtures/llama_reference.json  the float64 losses (and gradient norms) of 5 AdamW steps of
                                     each model on that file, with the flags that reproduce them
  tests/fixtures/llama_reference.md  what the files hold and the semantics behind the numbers
                                     (generated, so it never drifts)

The fixtures are committed; the test suite never needs PyTorch. Only this script does.

How to regenerate
-----------------
    cd <repo root> && /usr/bin/python3 tests/llama_reference.py

(Debian's python3-torch, 1.13; no pip packages.) Deterministic: fixed seeds, one CPU thread. The
weights and tokens come from torch's CPU generator (bit-stable); the float64 losses may move in
their last bits with another torch build or CPU, far below the test's 1e-5.

Model (as transformers' LlamaForCausalLM / Qwen2ForCausalLM compute it, read from config.json)
------------------------------------------------------------------------------------------------
x = embed_tokens[ids]                                   no learned positions
L blocks:  h = rmsnorm(x, input_layernorm)
           q = h Wq^T (+ bq), k = h Wk^T (+ bk), v = h Wv^T (+ bv)   (biases: Qwen2 only)
           q: nh heads of head_dim, k/v: nkv heads; query head j reads key/value head
           j // (nh / nkv) (transformers' repeat_kv); RoPE on q and k (below), position p = 0..T-1
           in every row; causal softmax(q.k / sqrt(head_dim)); x = x + (heads concatenated) Wo^T
           h = rmsnorm(x, post_attention_layernorm)
           x = x + down(silu(gate(h)) * up(h))          no MLP biases
logits = rmsnorm(x, norm) lm_head^T (lm_head = embed_tokens when tie_word_embeddings)
loss = mean cross-entropy over every position of the global batch
rmsnorm(x, w) = x * rsqrt(mean(x^2) + rms_norm_eps) * w
RoPE, rotate-half layout: channel i < d/2 of a head pairs with channel i + d/2, both turned by the
angle p * inv_freq[i]; inv_freq[i] = rope_theta^(-2i/d), d = head_dim; rope_scaling "llama3"
rescales inv_freq by wavelength 2pi/inv_freq: below original/high_freq_factor kept, above
original/low_freq_factor divided by factor, in between blended with
s = (original/wavelength - low_freq_factor) / (high_freq_factor - low_freq_factor):
(1 - s) * inv_freq / factor + s * inv_freq.

Self-checks (asserts, before anything is written)
-------------------------------------------------
 * the written safetensors files (one, and the two shards with their index) are parsed back by a
   separate reader and hold the generated tensors bit for bit; the token file likewise;
 * float64 autograd gradients agree with central finite differences on a spread of elements;
 * forward() agrees (logits, loss, gradients; float64, ~1e-13) with forward_alt(), written
   differently: a loop over query heads that picks its key/value head by index (no repeat),
   RoPE as complex multiplication (torch.polar) with inv_freq from a scalar loop over the bands,
   torch's softmax / silu / cross_entropy;
 * the RoPE rotation equals the direct formula (x1 + i x2) e^{i p w} element by element, and
   the llama3 inv_freq has channels in each of its three bands;
 * the fixture is sensitive to every choice it pins: the step-0 loss moves by far more than the
   test's tolerance if RoPE scaling is ignored, the layout is interleaved, the rotary dimension
   is hidden/heads, key/value heads are assigned round-robin, the head is tied (Llama), the
   biases are dropped (Qwen2); the 5-step trajectory moves if the learning rate is 0, the weight
   decay 0, or the ranks' windows are read in another order;
 * the 1-rank x B and 2-rank x B/2 windows make the same global batch every step;
 * the float64 AdamW trajectory of torch.optim.AdamW equals a hand-written AdamW (the per-element
   formula of zeroc's src/optim), and a float32 run stays within a small fraction of the test's
   tolerance of the float64 one.
"""

import cmath
import copy
import json
import math
import os
import struct
import sys

import torch

F = torch.nn.functional

# ----------------------------------------------------------------------------------------------
# configuration

HERE = os.path.dirname(os.path.abspath(__file__))
OUTDIR = os.path.join(HERE, "fixtures")

T = 16            # --seq-len
GLOBAL_B = 4      # rows of a step's global batch: 1 rank x --micro-batch 4, 2 ranks x 2
NSTEPS = 5
LR, BETA1, BETA2, EPS, WD, CLIP = 3e-3, 0.9, 0.999, 1e-8, 0.5, 0.0
NTOK = 512        # tokens in the file: the 5 steps read 5 * 4 * 16 + 1 = 321 of them
TOKENS_MAGIC, TOKENS_VERSION = 20240520, 1
TOKENS_SEED = 20240520
TOL = 1e-5        # what the test allows (relative, per step's loss)

LLAMA = {
    "architectures": ["LlamaForCausalLM"],
    "attention_bias": False,
    "attention_dropout": 0.0,
    "bos_token_id": 1,
    "eos_token_id": 2,
    "head_dim": 16,
    "hidden_act": "silu",
    "hidden_size": 32,
    "initializer_range": 0.02,
    "intermediate_size": 80,
    "max_position_embeddings": 512,
    "mlp_bias": False,
    "model_type": "llama",
    "num_attention_heads": 4,
    "num_hidden_layers": 2,
    "num_key_value_heads": 2,
    "pretraining_tp": 1,
    "rms_norm_eps": 1e-05,
    "rope_scaling": {"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                     "original_max_position_embeddings": 64, "rope_type": "llama3"},
    "rope_theta": 500000.0,
    "tie_word_embeddings": False,
    "torch_dtype": "float32",
    "transformers_version": "4.45.0",
    "use_cache": True,
    "vocab_size": 300,
}

QWEN2 = {
    "architectures": ["Qwen2ForCausalLM"],
    "attention_dropout": 0.0,
    "bos_token_id": 1,
    "eos_token_id": 2,
    "hidden_act": "silu",
    "hidden_size": 32,
    "initializer_range": 0.02,
    "intermediate_size": 72,
    "max_position_embeddings": 128,
    "max_window_layers": 2,
    "model_type": "qwen2",
    "num_attention_heads": 4,
    "num_hidden_layers": 2,
    "num_key_value_heads": 2,
    "rms_norm_eps": 1e-06,
    "rope_scaling": None,
    "rope_theta": 1000000.0,
    "sliding_window": 64,
    "tie_word_embeddings": True,
    "torch_dtype": "float32",
    "transformers_version": "4.45.0",
    "use_cache": True,
    "use_sliding_window": False,
    "vocab_size": 272,
}

# name -> (config, weight seed, shard split: None = one model.safetensors, else the layer index
# the second shard starts at)
# llama_wide: llama_tiny with one layer and an MLP 4608 wide, which zeroc computes in blocks of
# 1024 columns of its width (and one of 512) — what its MLP tiles rest on
LLAMA_WIDE = dict(LLAMA, intermediate_size=4608, num_hidden_layers=1)
CASES = {"llama_tiny": (LLAMA, 31, None), "qwen2_tiny": (QWEN2, 32, 1),
         "llama_wide": (LLAMA_WIDE, 33, None)}

# ----------------------------------------------------------------------------------------------
# the shape a config.json says


class Shape:
    def __init__(self, cfg):
        self.cfg = cfg
        self.V = cfg["vocab_size"]
        self.C = cfg["hidden_size"]
        self.I = cfg["intermediate_size"]
        self.L = cfg["num_hidden_layers"]
        self.nh = cfg["num_attention_heads"]
        self.nkv = cfg.get("num_key_value_heads") or self.nh
        self.hd = cfg.get("head_dim") or self.C // self.nh
        self.eps = cfg["rms_norm_eps"]
        self.theta = cfg["rope_theta"]
        self.scaling = cfg.get("rope_scaling")
        self.qkv_bias = cfg["model_type"] == "qwen2" or cfg.get("attention_bias", False)
        self.tied = cfg["tie_word_embeddings"]
        assert self.nh % self.nkv == 0 and self.hd % 2 == 0
        assert cfg["model_type"] != "llama" or not cfg.get("attention_bias")  # no o_proj bias here

    def numel(self):
        return sum(math.prod(shp) for _, shp, _ in self.tensors())

    def tensors(self):
        """[(transformers name, shape, kind)] in module order (the order transformers' state
        dict lists them and its sharding fills the files in)."""
        C, I, q, kv = self.C, self.I, self.nh * self.hd, self.nkv * self.hd
        out = [("model.embed_tokens.weight", (self.V, C), "emb")]
        for l in range(self.L):
            p = "model.layers.%d." % l
            out += [(p + "self_attn.q_proj.weight", (q, C), "wqk"),
                    (p + "self_attn.k_proj.weight", (kv, C), "wqk")]
            if self.qkv_bias:
                out += [(p + "self_attn.q_proj.bias", (q,), "b"),
                        (p + "self_attn.k_proj.bias", (kv,), "b")]
            out.append((p + "self_attn.v_proj.weight", (kv, C), "w"))
            if self.qkv_bias:
                out.append((p + "self_attn.v_proj.bias", (kv,), "b"))
            out += [(p + "self_attn.o_proj.weight", (C, q), "w"),
                    (p + "mlp.gate_proj.weight", (I, C), "w"),
                    (p + "mlp.up_proj.weight", (I, C), "w"),
                    (p + "mlp.down_proj.weight", (C, I), "w"),
                    (p + "input_layernorm.weight", (C,), "norm"),
                    (p + "post_attention_layernorm.weight", (C,), "norm")]
        out.append(("model.norm.weight", (C,), "norm"))
        if not self.tied:
            out.append(("lm_head.weight", (self.V, C), "w"))
        return out


def init_weights(shape, seed):
    """Random weights, drawn in module order from one generator: embeddings N(0, 0.5), q/k
    N(0, 0.25) (attention far from uniform), other matrices N(0, 0.1), biases N(0, 0.1), norm
    weights 1 + N(0, 0.1). Stored as float32 (the file's dtype); the reference computes in
    float64 from exactly those float32 values."""
    g = torch.Generator().manual_seed(seed)
    std = {"emb": 0.5, "wqk": 0.25, "w": 0.1, "b": 0.1}
    P = {}
    for name, shp, kind in shape.tensors():
        t = torch.randn(shp, generator=g, dtype=torch.float32)
        P[name] = 1.0 + 0.1 * t if kind == "norm" else std[kind] * t
    return P


# ----------------------------------------------------------------------------------------------
# RoPE


def inv_freq(shape, opts=None):
    """float64 [hd/2] inverse frequencies (transformers' default or llama3 rope)."""
    opts = opts or {}
    d = opts.get("rope_dim", shape.hd)
    w = 1.0 / (shape.theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    sc = shape.scaling
    if sc is None or opts.get("no_scaling"):
        return w
    kind = sc.get("rope_type", sc.get("type"))
    assert kind == "llama3", kind
    factor, lo, hi = sc["factor"], sc["low_freq_factor"], sc["high_freq_factor"]
    old = sc["original_max_position_embeddings"]
    wavelen = 2 * math.pi / w
    s = (old / wavelen - lo) / (hi - lo)
    blended = (1 - s) * w / factor + s * w
    if opts.get("middle_unscaled"):  # the middle band left as it is (wrong)
        blended = w
    out = torch.where(wavelen > old / lo, w / factor, blended)
    return torch.where(wavelen < old / hi, w, out)


def inv_freq_loop(shape):
    """inv_freq again, one scalar at a time, from the bands' definition (forward_alt's)."""
    out = []
    for i in range(shape.hd // 2):
        w = shape.theta ** (-2.0 * i / shape.hd)
        sc = shape.scaling
        if sc is not None:
            lam = 2 * math.pi / w
            f, old = sc["factor"], sc["original_max_position_embeddings"]
            short, long_ = old / sc["high_freq_factor"], old / sc["low_freq_factor"]
            if lam > long_:
                w = w / f
            elif lam >= short:  # the band in between: s runs from 0 at `long_` to 1 at `short`
                s = (old / lam - sc["low_freq_factor"]) / (
                    sc["high_freq_factor"] - sc["low_freq_factor"])
                w = s * w + (1 - s) * w / f
        out.append(w)
    return torch.tensor(out, dtype=torch.float64)


def rope_bands(shape):
    """How many inv_freq channels fall in the high / middle / low band of llama3 scaling."""
    sc = shape.scaling
    w = inv_freq(shape, {"no_scaling": True})
    lam = 2 * math.pi / w
    old = sc["original_max_position_embeddings"]
    high = int((lam < old / sc["high_freq_factor"]).sum())
    low = int((lam > old / sc["low_freq_factor"]).sum())
    return high, len(w) - high - low, low


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat([-x[..., h:], x[..., :h]], dim=-1)


def apply_rope(x, freqs, opts=None):
    """x (B, heads, T, d); freqs (d/2,) float64. transformers' layout: x*cos + rotate_half(x)*sin
    with cos/sin of [angles, angles]."""
    Tq, d = x.shape[-2], x.shape[-1]
    ang = torch.arange(Tq, dtype=torch.float64)[:, None] * freqs[None, :]  # (T, d/2)
    if opts and opts.get("interleaved"):  # the Meta checkpoints' layout: pairs (2i, 2i+1)
        x2 = x.reshape(*x.shape[:-1], d // 2, 2)
        a, b = x2[..., 0], x2[..., 1]
        c, s = torch.cos(ang).to(x.dtype), torch.sin(ang).to(x.dtype)
        return torch.stack([a * c - b * s, a * s + b * c], dim=-1).reshape(x.shape)
    emb = torch.cat([ang, ang], dim=-1)
    return x * torch.cos(emb).to(x.dtype) + rotate_half(x) * torch.sin(emb).to(x.dtype)


# ----------------------------------------------------------------------------------------------
# the model, as a pure function of the parameter dict


def rmsnorm(x, w, eps):
    return x * torch.rsqrt((x * x).mean(dim=-1, keepdim=True) + eps) * w


def forward(shape, P, inputs, targets, opts=None):
    """(logits (B, T, V), mean cross-entropy). opts: deliberate mistakes for the sensitivity
    checks only (never for the fixture)."""
    opts = opts or {}
    Bq, Tq = inputs.shape
    nh, nkv, hd, C = shape.nh, shape.nkv, shape.hd, shape.C
    group = nh // nkv
    freqs = inv_freq(shape, opts)
    if "rope_dim" in opts:  # a rotary dimension smaller than head_dim: the rest unrotated
        freqs = torch.cat([freqs, torch.zeros(hd // 2 - len(freqs), dtype=freqs.dtype)])
    causal = torch.ones(Tq, Tq, dtype=torch.bool).tril()
    x = P["model.embed_tokens.weight"][inputs]
    for l in range(shape.L):
        p = "model.layers.%d." % l

        def proj(name, h):
            y = h @ P[p + name + ".weight"].t()
            if shape.qkv_bias and not opts.get("no_bias") and p + name + ".bias" in P:
                y = y + P[p + name + ".bias"]
            return y

        h = rmsnorm(x, P[p + "input_layernorm.weight"], shape.eps)
        q = proj("self_attn.q_proj", h).reshape(Bq, Tq, nh, hd).transpose(1, 2)
        k = proj("self_attn.k_proj", h).reshape(Bq, Tq, nkv, hd).transpose(1, 2)
        v = proj("self_attn.v_proj", h).reshape(Bq, Tq, nkv, hd).transpose(1, 2)
        q, k = apply_rope(q, freqs, opts), apply_rope(k, freqs, opts)
        if opts.get("kv_round_robin"):  # query head j -> key/value head j % nkv (wrong)
            k, v = k.repeat(1, group, 1, 1), v.repeat(1, group, 1, 1)
        else:  # query head j -> key/value head j // group (transformers' repeat_kv)
            k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        s = (q @ k.transpose(-2, -1)) / math.sqrt(hd)
        s = s.masked_fill(~causal, float("-inf"))
        s = s - s.max(dim=-1, keepdim=True).values
        e = torch.exp(s)
        y = (e / e.sum(dim=-1, keepdim=True)) @ v  # (B, nh, T, hd)
        x = x + y.transpose(1, 2).reshape(Bq, Tq, nh * hd) @ P[p + "self_attn.o_proj.weight"].t()
        h = rmsnorm(x, P[p + "post_attention_layernorm.weight"], shape.eps)
        gate = h @ P[p + "mlp.gate_proj.weight"].t()
        up = h @ P[p + "mlp.up_proj.weight"].t()
        x = x + (gate * torch.sigmoid(gate) * up) @ P[p + "mlp.down_proj.weight"].t()
    x = rmsnorm(x, P["model.norm.weight"], shape.eps)
    head = P["model.embed_tokens.weight"] if shape.tied or opts.get("tied") else P["lm_head.weight"]
    logits = x @ head.t()
    m = logits.max(dim=-1, keepdim=True).values
    logp = logits - (m + torch.log(torch.exp(logits - m).sum(dim=-1, keepdim=True)))
    return logits, -logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1).mean()


def forward_alt(shape, P, inputs, targets):
    """A second, differently written forward: a loop over query heads, each taking key/value
    head j // group by index; RoPE as complex multiplication; torch's built-ins elsewhere."""
    Bq, Tq = inputs.shape
    nh, nkv, hd = shape.nh, shape.nkv, shape.hd
    group = nh // nkv
    half = hd // 2
    rot = torch.polar(torch.ones(Tq, half, dtype=torch.float64),
                      torch.outer(torch.arange(Tq, dtype=torch.float64), inv_freq_loop(shape)))

    def rope(t):  # (B, T, hd): channel i and i + hd/2 are the real and imaginary parts
        z = torch.complex(t[..., :half], t[..., half:]) * rot
        return torch.cat([z.real, z.imag], dim=-1)

    def norm(t, w):
        return t / torch.sqrt(t.pow(2).mean(-1, keepdim=True) + shape.eps) * w

    mask = torch.triu(torch.full((Tq, Tq), float("-inf"), dtype=torch.float64), diagonal=1)
    x = F.embedding(inputs, P["model.embed_tokens.weight"])
    for l in range(shape.L):
        p = "model.layers.%d.self_attn." % l
        h = norm(x, P["model.layers.%d.input_layernorm.weight" % l])
        b = (lambda n: P.get(p + n + ".bias")) if shape.qkv_bias else (lambda n: None)
        q = F.linear(h, P[p + "q_proj.weight"], b("q_proj"))
        k = F.linear(h, P[p + "k_proj.weight"], b("k_proj"))
        v = F.linear(h, P[p + "v_proj.weight"], b("v_proj"))
        heads = []
        for j in range(nh):
            kv = j // group
            qj = rope(q[..., j * hd:(j + 1) * hd])
            kj = rope(k[..., kv * hd:(kv + 1) * hd])
            vj = v[..., kv * hd:(kv + 1) * hd]
            a = F.softmax(torch.bmm(qj, kj.transpose(1, 2)) / math.sqrt(hd) + mask, dim=-1)
            heads.append(torch.bmm(a, vj))
        x = x + F.linear(torch.cat(heads, dim=-1), P[p + "o_proj.weight"])
        m = "model.layers.%d.mlp." % l
        h = norm(x, P["model.layers.%d.post_attention_layernorm.weight" % l])
        x = x + F.linear(F.silu(F.linear(h, P[m + "gate_proj.weight"])) *
                         F.linear(h, P[m + "up_proj.weight"]), P[m + "down_proj.weight"])
    x = norm(x, P["model.norm.weight"])
    logits = F.linear(x, P["model.embed_tokens.weight" if shape.tied else "lm_head.weight"])
    return logits, F.cross_entropy(logits.reshape(-1, shape.V), targets.reshape(-1))


# ----------------------------------------------------------------------------------------------
# data: the windows `zeroc train` reads (cli/train_gpt2.c read_window, sequential)


def rank_window(tokens, step, rank, nranks, B):
    """Rank r's micro-batch of optimizer step s (no accumulation): the B*T + 1 tokens from
    ((s*N + r) * B*T) mod ntok, wrapping; (inputs (B, T), targets (B, T))."""
    n = len(tokens)
    first = ((step * nranks + rank) * B * T) % n
    w = [tokens[(first + i) % n] for i in range(B * T + 1)]
    x = torch.tensor(w[:-1], dtype=torch.int64).reshape(B, T)
    y = torch.tensor(w[1:], dtype=torch.int64).reshape(B, T)
    return x, y


def global_batch(tokens, step, nranks, order=None):
    """The step's global batch: the ranks' micro-batches stacked in rank order."""
    B = GLOBAL_B // nranks
    parts = [rank_window(tokens, step, r, nranks, B) for r in (order or range(nranks))]
    return torch.cat([a for a, _ in parts]), torch.cat([b for _, b in parts])


# ----------------------------------------------------------------------------------------------
# training


def leaves(P, dtype):
    return {n: t.detach().clone().to(dtype).requires_grad_(True) for n, t in P.items()}


def train(shape, P0, tokens, dtype=torch.float64, lr=LR, wd=WD, batches=None, by_hand=False,
          decay_1d=True, corrected=True):
    """NSTEPS AdamW steps, each on its global batch: ([loss before each update], [global L2
    norm of the mean-loss gradient]). by_hand: zeroc's per-element AdamW written out instead of
    torch.optim.AdamW; with it, for the sensitivity checks only, decay_1d=False leaves 1-D
    tensors (norm weights, biases) undecayed and corrected=False drops the bias correction."""
    by_hand = by_hand or not decay_1d or not corrected
    P = leaves(P0, dtype)
    names = list(P)
    opt = None if by_hand else torch.optim.AdamW(
        [P[n] for n in names], lr=lr, betas=(BETA1, BETA2), eps=EPS, weight_decay=wd,
        foreach=False)
    m = {n: torch.zeros_like(P[n]) for n in names}
    v = {n: torch.zeros_like(P[n]) for n in names}
    losses, norms = [], []
    for s in range(NSTEPS):
        x, y = batches[s] if batches else global_batch(tokens, s, 1)
        for n in names:
            P[n].grad = None
        _, loss = forward(shape, P, x, y)
        loss.backward()
        losses.append(loss.item())
        norms.append(math.sqrt(sum(float((P[n].grad.double() ** 2).sum()) for n in names)))
        assert CLIP == 0.0  # no clipping: the norm is reported, never applied
        if opt:
            opt.step()
            continue
        t = s + 1
        with torch.no_grad():
            for n in names:
                g = P[n].grad
                if decay_1d or P[n].dim() > 1:
                    P[n].mul_(1 - lr * wd)
                m[n].mul_(BETA1).add_((1 - BETA1) * g)
                v[n].mul_(BETA2).add_((1 - BETA2) * g * g)
                bc1, bc2 = (1 - BETA1 ** t, 1 - BETA2 ** t) if corrected else (1.0, 1.0)
                denom = v[n].sqrt() / math.sqrt(bc2) + EPS
                P[n].sub_((lr / bc1) * m[n] / denom)
    return losses, norms


# ----------------------------------------------------------------------------------------------
# files


def safetensors_bytes(tensors):
    """tensors: [(name, float32 tensor)], written in name order (as the safetensors library
    does): u64 LE header length, JSON header padded with spaces to a multiple of 8, raw data."""
    header, blobs, off = {}, [], 0
    for name, t in sorted(tensors, key=lambda nt: nt[0]):
        b = t.detach().to(torch.float32).contiguous().numpy().astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    header["__metadata__"] = {"format": "pt", "generated_by": "tests/llama_reference.py"}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def read_safetensors(data):
    """{name: float32 tensor} of an F32 safetensors file; checks the offsets tile the data."""
    (n,) = struct.unpack_from("<Q", data, 0)
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    out, spans = {}, []
    for name, t in header.items():
        if name == "__metadata__":
            continue
        assert t["dtype"] == "F32", name
        b, e = t["data_offsets"]
        cnt = 1
        for d in t["shape"]:
            cnt *= d
        assert e - b == 4 * cnt, name
        spans.append((b, e))
        out[name] = torch.tensor(struct.unpack_from("<%df" % cnt, body, b),
                                 dtype=torch.float32).reshape(t["shape"])
    spans.sort()
    assert spans[0][0] == 0 and spans[-1][1] == len(body)
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
    return out


def model_files(shape, P, split):
    """{file name: bytes} of the model directory's weights: one model.safetensors, or two shards
    (layers < split and the embedding in the first, the rest in the second) and their index."""
    names = [n for n, _, _ in shape.tensors()]
    if split is None:
        return {"model.safetensors": safetensors_bytes([(n, P[n]) for n in names])}
    first = [n for n in names
             if n == "model.embed_tokens.weight" or
             (n.startswith("model.layers.") and int(n.split(".")[2]) < split)]
    second = [n for n in names if n not in first]
    files = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    out = {files[0]: safetensors_bytes([(n, P[n]) for n in first]),
           files[1]: safetensors_bytes([(n, P[n]) for n in second])}
    index = {"metadata": {"total_size": 4 * sum(P[n].numel() for n in names)},
             "weight_map": {n: files[0] if n in first else files[1] for n in sorted(names)}}
    out["model.safetensors.index.json"] = (json.dumps(index, indent=2) + "\n").encode()
    return out


def read_model_dir(files):
    """The tensors of model_files' output, read back the way a loader does."""
    if "model.safetensors" in files:
        return read_safetensors(files["model.safetensors"])
    index = json.loads(files["model.safetensors.index.json"])
    out = {}
    for f in sorted(set(index["weight_map"].values())):
        part = read_safetensors(files[f])
        for n, t in part.items():
            assert index["weight_map"][n] == f and n not in out
            out[n] = t
    assert set(out) == set(index["weight_map"])
    assert index["metadata"]["total_size"] == 4 * sum(t.numel() for t in out.values())
    return out


def tokens_bytes(ids):
    header = [0] * 256
    header[0:3] = [TOKENS_MAGIC, TOKENS_VERSION, len(ids)]
    return struct.pack("<256i", *header) + struct.pack("<%dH" % len(ids), *ids)


def read_tokens(data):
    h = struct.unpack_from("<256i", data, 0)
    assert h[0] == TOKENS_MAGIC and h[1] == TOKENS_VERSION and not any(h[3:])
    assert len(data) == 1024 + 2 * h[2]
    return list(struct.unpack_from("<%dH" % h[2], data, 1024))


FLAGS = ["--seq-len", str(T), "--steps", str(NSTEPS), "--lr", "%g" % LR, "--weight-decay",
         "%g" % WD, "--clip", "0"]


def flags_text(n, B):
    return "zeroc train --init DIR --data llama_tokens.bin %s --micro-batch %d" % (
        " ".join(FLAGS), B) + ("  (mpirun -np %d)" % n if n > 1 else "")


def readme_text(shapes, results, sizes):
    lines = []
    w = lines.append
    w("# Llama-family fixtures")
    w("")
    w("Generated by `tests/llama_reference.py`, an independent from-scratch float64 PyTorch")
    w("Llama-family decoder (no zeroc code, no `transformers`). Regenerate (also rewrites this")
    w("file) from the repo root:")
    w("")
    w("    /usr/bin/python3 tests/llama_reference.py")
    w("")
    w("(Debian python3-torch 1.13; one CPU thread.) `tests/test_llama.py` holds `zeroc train`")
    w("to these numbers; it needs no PyTorch. All values are little-endian.")
    w("")
    w("## Files")
    w("")
    w("| file | bytes | what |")
    w("|---|---:|---|")
    for f, size in sizes:
        w("| %s | %d | %s |" % (f, size, FILE_WHAT.get(os.path.basename(f), "")))
    w("")
    w("## Shapes")
    w("")
    names = list(shapes)
    w("| | " + " | ".join(names) + " |")
    w("|---|" + "---|" * len(names))

    def row(label, f):
        w("| %s | %s |" % (label, " | ".join(str(f(shapes[n], n)) for n in names)))

    def scaling(a):
        if not a.scaling:
            return "none"
        return ("llama3: factor %g, low %g, high %g, original %d; inv_freq bands high/middle/low "
                "= %d/%d/%d" % (a.scaling["factor"], a.scaling["low_freq_factor"],
                                a.scaling["high_freq_factor"],
                                a.scaling["original_max_position_embeddings"], *rope_bands(a)))

    row("architecture", lambda a, n: a.cfg["architectures"][0])
    row("vocab_size", lambda a, n: a.V)
    row("hidden_size", lambda a, n: a.C)
    row("intermediate_size", lambda a, n: a.I)
    row("layers", lambda a, n: a.L)
    row("heads / key-value heads", lambda a, n: "%d / %d" % (a.nh, a.nkv))
    row("head_dim", lambda a, n: "%d (explicit; hidden/heads = %d)" % (a.hd, a.C // a.nh)
        if a.cfg.get("head_dim") else "%d (hidden/heads)" % a.hd)
    row("rms_norm_eps", lambda a, n: a.eps)
    row("rope_theta", lambda a, n: a.theta)
    row("rope_scaling", lambda a, n: scaling(a))
    row("biases", lambda a, n: "q/k/v" if a.qkv_bias else "none")
    row("lm_head", lambda a, n: "tied (no lm_head.weight)" if a.tied
        else "untied (lm_head.weight)")
    row("files", lambda a, n: "model.safetensors" if CASES[n][2] is None
        else "2 shards + model.safetensors.index.json")
    row("parameters", lambda a, n: a.numel())
    w("")
    w("Weights N(0, 0.5) for the embedding, N(0, 0.25) for q/k projections, N(0, 0.1) for the")
    w("other matrices and the biases, 1 + N(0, 0.1) for RMSNorm weights; F32 in the files; the")
    w("reference computes in float64 from those float32 values.")
    w("")
    w("## The runs (llama_reference.json)")
    w("")
    w("Each model trains %d steps on `llama_tokens.bin` (%d uint16 ids, uniform below %d) with" %
      (NSTEPS, NTOK, min(s.V for s in shapes.values())))
    w("")
    w("    " + flags_text(1, GLOBAL_B))
    w("    " + flags_text(2, GLOBAL_B // 2))
    w("")
    w("at ZeRO stage 0 or 3, fp32 (the default dtype): no `--model` (config.json says it).")
    w("The expected per-step losses (float64; `loss[i]` is the loss before step i's update):")
    w("")
    w("| step | " + " | ".join(names) + " |")
    w("|---:|" + "---:|" * len(names))
    for i in range(NSTEPS):
        w("| %d | %s |" % (i + 1, " | ".join("%.12f" % results[n]["loss"][i] for n in names)))
    w("")
    w("Semantics the numbers assume (`zeroc train` as of this writing):")
    w("")
    w("* Data (cli/train_gpt2.c, sequential, no --shuffle, no accumulation): at step s rank r of")
    w("  N reads the B*T + 1 tokens from ((s*N + r)*B*T) mod ntok (wrapping), rows of T; inputs")
    w("  are the first B*T, targets the same shifted by one. Each row is its own sequence:")
    w("  positions 0..T-1, causal attention within the row. 1 rank x B = %d and 2 ranks x %d" %
      (GLOBAL_B, GLOBAL_B // 2))
    w("  read the same global batch (tokens s*%d .. s*%d + %d)." % (GLOBAL_B * T, GLOBAL_B * T,
                                                                  GLOBAL_B * T))
    w("* Loss: mean cross-entropy over all %d positions of the global batch (the report's" %
      (GLOBAL_B * T))
    w("  `loss` is the mean of the ranks' means); the gradient is that mean's.")
    w("* AdamW (src/optim/optim.c): lr %g constant (no warmup, constant schedule), betas" % LR)
    w("  (%g, %g), eps %g, weight decay %g decoupled and applied to *every* parameter" %
      (BETA1, BETA2, EPS, WD))
    w("  (norm weights, biases and embeddings too), bias-corrected, t 1-based:")
    w("  `p *= 1 - lr*wd; m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g*g;")
    w("  p -= (lr/(1-b1^t)) * m / (sqrt(v)/sqrt(1-b2^t) + eps)`. No gradient clipping")
    w("  (`--clip 0`, also the default). `grad_norm` is the L2 norm of the whole mean gradient")
    w("  (for information: the report's `grad_norm`).")
    w("* Tied embeddings (qwen2_tiny): one tensor, its gradient the sum of the embedding's and the")
    w("  head's; weight decay once.")
    w("")
    return "\n".join(lines)


FILE_WHAT = {
    "config.json": "transformers' config",
    "model.safetensors": "F32 weights, transformers' names",
    "model-00001-of-00002.safetensors": "shard 1: embed_tokens, layer 0",
    "model-00002-of-00002.safetensors": "shard 2: layer 1, norm",
    "model.safetensors.index.json": "the shards' index (metadata.total_size, weight_map)",
    "llama_tokens.bin": "llm.c token file, version 1 (uint16)",
    "llama_reference.json": "expected losses and gradient norms, flags, semantics",
}


# ----------------------------------------------------------------------------------------------
# main


def rel(a, b):
    return abs(a - b) / abs(b)


def max_rel(xs, ys):
    return max(rel(a, b) for a, b in zip(xs, ys))


def check_case(name, cfg, seed, split, tokens, report):
    shape = Shape(cfg)
    P32 = init_weights(shape, seed)
    files = model_files(shape, P32, split)

    # --- files read back bit for bit
    back = read_model_dir(files)
    assert set(back) == set(P32) and all(torch.equal(back[n], P32[n]) for n in P32), name
    assert shape.tied == ("lm_head.weight" not in back)

    P0 = {n: t.to(torch.float64) for n, t in P32.items()}
    x, y = global_batch(tokens, 0, 1)

    # --- RoPE: the rotate-half rotation is the complex rotation (x_i + i x_{i+d/2}) e^{i p w_i}
    freqs = inv_freq(shape)
    assert torch.allclose(freqs, inv_freq_loop(shape), rtol=1e-14, atol=0)
    g = torch.Generator().manual_seed(7)
    q = torch.randn(1, 1, T, shape.hd, generator=g, dtype=torch.float64)
    got = apply_rope(q, freqs)
    half = shape.hd // 2
    worst_rope = 0.0
    for p in range(T):
        for i in range(half):
            z = complex(q[0, 0, p, i].item(), q[0, 0, p, i + half].item()) * cmath.exp(
                1j * p * freqs[i].item())
            worst_rope = max(worst_rope, abs(z.real - got[0, 0, p, i].item()),
                             abs(z.imag - got[0, 0, p, i + half].item()))
    assert worst_rope < 1e-14, worst_rope
    if shape.scaling:
        bands = rope_bands(shape)
        assert all(b > 0 for b in bands), bands  # high, middle and low frequencies all occur

    # --- float64 autograd against central finite differences
    P = leaves(P0, torch.float64)
    logits, loss = forward(shape, P, x, y)
    loss.backward()
    grads = {n: P[n].grad.detach().clone() for n in P}
    tok_in, tok_out = int(x[0, 3]), int(y[1, 5])
    probes = [("model.embed_tokens.weight", (tok_in, 5)),
              ("model.embed_tokens.weight", (tok_out, 1)), ("model.norm.weight", (7,))]
    for l in range(shape.L):
        p = "model.layers.%d." % l
        probes += [(p + "self_attn.q_proj.weight", (shape.nh * shape.hd - 1, 3)),
                   (p + "self_attn.k_proj.weight", (l * 3 + 1, 30)),
                   (p + "self_attn.k_proj.weight", (shape.hd // 2 + 1, 2)),  # second rope half
                   (p + "self_attn.v_proj.weight", (shape.nkv * shape.hd - 2, 11)),
                   (p + "self_attn.o_proj.weight", (5, shape.nh * shape.hd - 1)),
                   (p + "mlp.gate_proj.weight", (shape.I - 1, 0)),
                   (p + "mlp.up_proj.weight", (17, 9)),
                   (p + "mlp.down_proj.weight", (3, shape.I - 3)),
                   (p + "input_layernorm.weight", (4,)),
                   (p + "post_attention_layernorm.weight", (shape.C - 1,))]
        if shape.qkv_bias:
            probes += [(p + "self_attn.q_proj.bias", (2,)), (p + "self_attn.k_proj.bias", (9,)),
                       (p + "self_attn.v_proj.bias", (shape.nkv * shape.hd - 1,))]
    if not shape.tied:
        probes.append(("lm_head.weight", (tok_out, 4)))
    h, worst_fd = 1e-6, 0.0
    with torch.no_grad():
        for n, idx in probes:
            Pp = dict(P0)
            Pp[n] = P0[n].clone()
            Pp[n][idx] += h
            _, lp = forward(shape, Pp, x, y)
            Pp[n][idx] -= 2 * h
            _, lm = forward(shape, Pp, x, y)
            fd = (lp.item() - lm.item()) / (2 * h)
            ag = grads[n][idx].item()
            worst_fd = max(worst_fd, abs(fd - ag))
            assert abs(fd - ag) <= 1e-7 + 1e-5 * abs(ag), (name, n, idx, fd, ag)
            assert ag != 0.0, (name, n, idx)  # every probe reaches the loss

    # --- the differently written forward
    Pb = leaves(P0, torch.float64)
    lg_alt, ls_alt = forward_alt(shape, Pb, x, y)
    ls_alt.backward()
    alt_err = (lg_alt.detach() - logits.detach()).abs().max().item()
    assert alt_err < 1e-12 and abs(ls_alt.item() - loss.item()) < 1e-13, alt_err
    alt_grad = max((Pb[n].grad - grads[n]).abs().max().item() for n in P0)
    assert alt_grad < 1e-12, alt_grad

    # --- the windows: 1 x B and 2 x B/2 are the same global batch every step
    for s in range(NSTEPS):
        a, b = global_batch(tokens, s, 1), global_batch(tokens, s, 2)
        assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
        assert torch.equal(a[1][:, :-1], a[0][:, 1:])
        assert (s + 1) * GLOBAL_B * T + 1 <= len(tokens)  # no wrap within the run

    # --- the trajectory (float64), by torch.optim.AdamW and by hand
    losses, norms = train(shape, P0, tokens)
    losses_hand, norms_hand = train(shape, P0, tokens, by_hand=True)
    hand_err = max_rel(losses_hand, losses)
    assert hand_err < 1e-13 and max_rel(norms_hand, norms) < 1e-12, hand_err
    assert losses[0] == loss.item()
    losses32, norms32 = train(shape, P32, tokens, dtype=torch.float32)
    f32_err = max_rel(losses32, losses)
    assert f32_err < TOL / 10, (losses32, losses)

    # --- sensitivity: each plausible mistake moves the numbers by far more than the tolerance
    def step0(opts):
        with torch.no_grad():
            return forward(shape, P0, x, y, opts)[1].item()

    sens = {}
    if shape.scaling:
        sens["rope_scaling ignored"] = rel(step0({"no_scaling": True}), loss.item())
        sens["llama3 middle band unscaled"] = rel(step0({"middle_unscaled": True}), loss.item())
    sens["interleaved rope"] = rel(step0({"interleaved": True}), loss.item())
    if shape.hd != shape.C // shape.nh:
        sens["rotary dim hidden/heads"] = rel(step0({"rope_dim": shape.C // shape.nh}),
                                              loss.item())
    sens["kv heads round-robin"] = rel(step0({"kv_round_robin": True}), loss.item())
    if not shape.tied:
        sens["head tied"] = rel(step0({"tied": True}), loss.item())
    if shape.qkv_bias:
        sens["biases dropped"] = rel(step0({"no_bias": True}), loss.item())
    sens["lr 0 (5 steps)"] = max_rel(train(shape, P0, tokens, lr=0.0)[0], losses)
    sens["weight decay 0 (5 steps)"] = max_rel(train(shape, P0, tokens, wd=0.0)[0], losses)
    sens["no decay on 1-D (5 steps)"] = max_rel(train(shape, P0, tokens, decay_1d=False)[0],
                                                losses)
    sens["no bias correction (5 st.)"] = max_rel(train(shape, P0, tokens, corrected=False)[0],
                                                 losses)
    swapped = [global_batch(tokens, s, 2, order=[1, 0]) for s in range(NSTEPS)]
    # the rows of a step only permute: the mean loss is the same, so the trajectory too
    assert max_rel(train(shape, P0, tokens, batches=swapped)[0], losses) < 1e-12
    shifted = [global_batch(tokens, s + 1, 1) for s in range(NSTEPS)]
    sens["windows one step late"] = max_rel(train(shape, P0, tokens, batches=shifted)[0], losses)
    for k, v in sens.items():
        assert v > 10 * TOL, (name, k, v)

    report[name] = dict(shape=shape, files=files, losses=losses, norms=norms,
                        losses32=losses32, f32_err=f32_err, worst_fd=worst_fd, nprobes=len(probes),
                        alt_err=alt_err, worst_rope=worst_rope, sens=sens,
                        nparams=sum(t.numel() for t in P32.values()))


def main():
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(TOKENS_SEED)
    vocab = min(c["vocab_size"] for c, _, _ in CASES.values())
    ids = torch.randint(0, vocab, (NTOK,), generator=g).tolist()
    tok_file = tokens_bytes(ids)
    tokens = read_tokens(tok_file)
    assert tokens == ids

    report = {}
    for name, (cfg, seed, split) in CASES.items():
        check_case(name, cfg, seed, split, tokens, report)

    runs = []
    for n, B in ((1, GLOBAL_B), (2, GLOBAL_B // 2)):
        runs.append({"ranks": n, "micro_batch": B,
                     "args": ["--data", "llama_tokens.bin", *FLAGS, "--micro-batch", str(B)]})
    expected = {
        "generated_by": "tests/llama_reference.py (float64 PyTorch, from scratch; regenerate "
                        "with /usr/bin/python3 tests/llama_reference.py)",
        "tokens": "llama_tokens.bin",
        "seq_len": T, "global_batch": GLOBAL_B, "steps": NSTEPS,
        "runs": runs,
        "adamw": {"lr": LR, "betas": [BETA1, BETA2], "eps": EPS, "weight_decay": WD,
                  "clip": CLIP, "bias_correction": True, "decay_applies_to": "every parameter"},
        "tolerance": {"loss_rel": TOL},
        "cases": {name: {"dir": name, "loss": r["losses"], "grad_norm": r["norms"],
                         "loss_float32_torch": r["losses32"]}
                  for name, r in report.items()},
    }

    out = {}
    for name, r in report.items():
        out[os.path.join(name, "config.json")] = (json.dumps(r["shape"].cfg, indent=2) +
                                                  "\n").encode()
        for f, data in r["files"].items():
            out[os.path.join(name, f)] = data
    out["llama_tokens.bin"] = tok_file
    out["llama_reference.json"] = (json.dumps(expected, indent=1) + "\n").encode()
    sizes = [(f, len(d)) for f, d in out.items()]
    shapes = {n: r["shape"] for n, r in report.items()}
    out["llama_reference.md"] = readme_text(shapes, {n: {"loss": r["losses"]}
                                                     for n, r in report.items()}, sizes).encode()

    # --- what was written parses back
    assert json.loads(out["llama_reference.json"])["cases"]["llama_tiny"]["loss"] == \
        report["llama_tiny"]["losses"]

    for f, data in out.items():
        path = os.path.join(OUTDIR, f)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as fh:
            fh.write(data)

    print("torch %s" % torch.__version__)
    for name, r in report.items():
        s = r["shape"]
        print("%s: %d parameters; finite differences (%d probes) max |fd - autograd| %.2e; "
              "forward_alt max |logit diff| %.2e; rope vs complex formula %.2e" % (
                  name, r["nparams"],
                  r["nprobes"], r["worst_fd"], r["alt_err"], r["worst_rope"]))
        if s.scaling:
            print("  llama3 inv_freq bands high/middle/low: %s; inv_freq %s" % (
                rope_bands(s), ["%.4g" % v for v in inv_freq(s).tolist()]))
        print("  losses (float64): %s" % ", ".join("%.12f" % v for v in r["losses"]))
        print("  grad norms      : %s" % ", ".join("%.9f" % v for v in r["norms"]))
        print("  float32 torch run: max rel loss diff %.2e (test tolerance %g)" % (r["f32_err"],
                                                                                   TOL))
        for k, v in r["sens"].items():
            print("  sensitivity: %-27s max rel loss change %.2e" % (k, v))
    for f, size in sizes:
        print("wrote %s (%d bytes)" % (os.path.join(OUTDIR, f), size))


if __name__ == "__main__":
    sys.exit(main())
