#!/usr/bin/python3
"""gpt2_reference.py — golden reference for zeroc's GPT-2 (models/gpt2).

What it is for
--------------
An implementation of GPT-2 written from scratch in PyTorch (no `transformers`, no zeroc code)
that produces the fixture files the C test suite compares against:

  tests/fixtures/gpt2_tiny.bin      an llm.c GPT-2 checkpoint (version 3, fp32, padded vocab)
  tests/fixtures/gpt2_tiny_ref.bin  inputs, targets, logits, loss, every parameter gradient and
                                    the losses of 5 AdamW steps on that model and batch
  tests/fixtures/README.md          byte layout of both files (generated, so it never drifts)

The fixtures are committed; the test suite never needs PyTorch. Only this script does.

How to regenerate
-----------------
    cd <repo root> && /usr/bin/python3 tests/gpt2_reference.py

(Debian's python3-torch, 1.13, was used; no pip packages.) The script is deterministic: a fixed
seed, float32, one CPU thread. A different torch build or CPU may change the last bits of the
float outputs (not the weights, inputs or targets, which come from torch's CPU generator), which
is harmless because the C side compares with a tolerance anyway.

Model (llm.c conventions)
-------------------------
token + learned position embeddings; L pre-LayerNorm blocks
    x = x + attproj(attn(ln1(x)))        causal MHA, fused qkv Linear C -> 3C, q|k|v thirds,
                                         head h = channels [h*hs, (h+1)*hs), scale 1/sqrt(hs)
    x = x + fcproj(gelu_tanh(fc(ln2(x))))   fc C -> 4C
final LayerNorm (eps 1e-5 everywhere); logits = x . wte^T over all Vp rows; the loss is the mean
cross-entropy over the first V logits only (padded vocabulary excluded from the softmax).
Linear weights are stored [out, in] row-major; per-layer tensors are stacked (layer 0 first).

Self-checks (asserts, before anything is written)
-------------------------------------------------
 * the checkpoint bytes are re-parsed, the model rebuilt from them, and the logits must be
   bitwise identical;
 * float64 autograd gradients agree with float64 central finite differences on a spread of
   elements (model sanity);
 * forward() agrees (logits, loss, gradients; float64) with a second, differently written
   forward built on torch's LayerNorm/GELU/softmax/cross-entropy and a per-head loop;
 * the written gpt2_tiny_ref.bin is parsed back and every section checked;
 * the float32 gradients/logits/loss agree with the float64 ones to float32 accuracy;
 * the float64 AdamW trajectory matches the float32 one.
"""

import math
import os
import struct
import sys

import torch

# ----------------------------------------------------------------------------------------------
# configuration

MAX_T, V, VP, L, NH, C = 16, 100, 128, 2, 4, 32
B, T = 2, 8
NSTEPS = 5
LR, BETA1, BETA2, EPS, WD = 1e-3, 0.9, 0.999, 1e-8, 0.1
SEED = 1234
LN_EPS = 1e-5

CKPT_MAGIC, CKPT_VERSION = 20240326, 3
REF_MAGIC, REF_VERSION = 20241122, 1

HERE = os.path.dirname(os.path.abspath(__file__))
OUTDIR = os.path.join(HERE, "fixtures")

# the 16 llm.c parameter tensors, in file order: (name, shape, kind)
PARAM_SPECS = [
    ("wte", (VP, C), "w"),
    ("wpe", (MAX_T, C), "w"),
    ("ln1w", (L, C), "lnw"),
    ("ln1b", (L, C), "b"),
    ("qkvw", (L, 3 * C, C), "w"),
    ("qkvb", (L, 3 * C), "b"),
    ("attprojw", (L, C, C), "w"),
    ("attprojb", (L, C), "b"),
    ("ln2w", (L, C), "lnw"),
    ("ln2b", (L, C), "b"),
    ("fcw", (L, 4 * C, C), "w"),
    ("fcb", (L, 4 * C), "b"),
    ("fcprojw", (L, C, 4 * C), "w"),
    ("fcprojb", (L, C), "b"),
    ("lnfw", (C,), "lnw"),
    ("lnfb", (C,), "b"),
]
NAMES = [n for n, _, _ in PARAM_SPECS]


def numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


# ----------------------------------------------------------------------------------------------
# the model, as a pure function of the 16 parameter tensors


def layernorm(x, w, b):
    mean = x.mean(dim=-1, keepdim=True)
    xc = x - mean
    var = (xc * xc).mean(dim=-1, keepdim=True)  # biased variance, as in GPT-2 / llm.c
    return xc * torch.rsqrt(var + LN_EPS) * w + b


def gelu_tanh(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)))


def linear(x, w, b):
    # w is [out, in] row-major (llm.c / nn.Linear layout)
    return x @ w.t() + b


def attention(qkv):
    Bq, Tq, C3 = qkv.shape
    hs = C // NH
    q, k, v = qkv[..., 0:C], qkv[..., C:2 * C], qkv[..., 2 * C:3 * C]
    # head h owns channels [h*hs, (h+1)*hs) of each third
    q = q.reshape(Bq, Tq, NH, hs).transpose(1, 2)  # (B, NH, T, hs)
    k = k.reshape(Bq, Tq, NH, hs).transpose(1, 2)
    v = v.reshape(Bq, Tq, NH, hs).transpose(1, 2)
    scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))  # (B, NH, T, T)
    causal = torch.ones(Tq, Tq, dtype=torch.bool).tril()
    scores = scores.masked_fill(~causal, float("-inf"))
    scores = scores - scores.max(dim=-1, keepdim=True).values
    e = torch.exp(scores)
    att = e / e.sum(dim=-1, keepdim=True)
    y = att @ v  # (B, NH, T, hs)
    return y.transpose(1, 2).reshape(Bq, Tq, C)


def forward(P, inputs, targets):
    """Returns (logits over all Vp columns (B,T,Vp), mean cross-entropy over the first V)."""
    Bq, Tq = inputs.shape
    x = P["wte"][inputs] + P["wpe"][:Tq]
    for l in range(L):
        h = layernorm(x, P["ln1w"][l], P["ln1b"][l])
        qkv = linear(h, P["qkvw"][l], P["qkvb"][l])
        x = x + linear(attention(qkv), P["attprojw"][l], P["attprojb"][l])
        h = layernorm(x, P["ln2w"][l], P["ln2b"][l])
        h = gelu_tanh(linear(h, P["fcw"][l], P["fcb"][l]))
        x = x + linear(h, P["fcprojw"][l], P["fcprojb"][l])
    x = layernorm(x, P["lnfw"], P["lnfb"])
    logits = x @ P["wte"].t()  # tied head, all Vp rows
    lv = logits[..., :V]  # padded vocabulary excluded from the softmax
    m = lv.max(dim=-1, keepdim=True).values
    logz = m + torch.log(torch.exp(lv - m).sum(dim=-1, keepdim=True))
    logp = lv - logz
    nll = -logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    return logits, nll.mean()


def forward_alt(P, inputs, targets):
    """A second, differently written forward (torch's built-in LayerNorm/GELU/softmax/
    cross-entropy and an explicit loop over heads) used only to cross-check forward()."""
    F = torch.nn.functional
    Bq, Tq = inputs.shape
    hs = C // NH
    x = F.embedding(inputs, P["wte"]) + P["wpe"][:Tq].unsqueeze(0)
    mask = torch.triu(torch.full((Tq, Tq), float("-inf"), dtype=x.dtype), diagonal=1)
    for l in range(L):
        h = F.layer_norm(x, (C,), P["ln1w"][l], P["ln1b"][l], eps=LN_EPS)
        qkv = F.linear(h, P["qkvw"][l], P["qkvb"][l])
        heads = []
        for hd in range(NH):
            q = qkv[:, :, hd * hs:(hd + 1) * hs]
            k = qkv[:, :, C + hd * hs:C + (hd + 1) * hs]
            v = qkv[:, :, 2 * C + hd * hs:2 * C + (hd + 1) * hs]
            a = F.softmax(torch.bmm(q, k.transpose(1, 2)) / math.sqrt(hs) + mask, dim=-1)
            heads.append(torch.bmm(a, v))
        x = x + F.linear(torch.cat(heads, dim=-1), P["attprojw"][l], P["attprojb"][l])
        h = F.layer_norm(x, (C,), P["ln2w"][l], P["ln2b"][l], eps=LN_EPS)
        h = F.gelu(F.linear(h, P["fcw"][l], P["fcb"][l]), approximate="tanh")
        x = x + F.linear(h, P["fcprojw"][l], P["fcprojb"][l])
    x = F.layer_norm(x, (C,), P["lnfw"], P["lnfb"], eps=LN_EPS)
    logits = F.linear(x, P["wte"])
    loss = F.cross_entropy(logits[..., :V].reshape(-1, V), targets.reshape(-1))
    return logits, loss


def loss_and_grads(P, inputs, targets):
    for t in P.values():
        t.grad = None
    logits, loss = forward(P, inputs, targets)
    loss.backward()
    grads = {n: P[n].grad.detach().clone() for n in NAMES}
    return logits.detach(), loss.detach(), grads


def make_leaves(P, dtype):
    return {n: P[n].detach().clone().to(dtype).requires_grad_(True) for n in NAMES}


def train(P0, inputs, targets, dtype):
    P = make_leaves(P0, dtype)
    opt = torch.optim.AdamW([P[n] for n in NAMES], lr=LR, betas=(BETA1, BETA2), eps=EPS,
                            weight_decay=WD, foreach=False)
    losses = []
    for _ in range(NSTEPS):
        opt.zero_grad(set_to_none=True)
        _, loss = forward(P, inputs, targets)
        loss.backward()
        losses.append(loss.item())  # the loss *before* this step's update
        opt.step()
    return losses


# ----------------------------------------------------------------------------------------------
# files


def checkpoint_bytes(P):
    header = [0] * 256
    header[0:8] = [CKPT_MAGIC, CKPT_VERSION, MAX_T, V, L, NH, C, VP]
    out = bytearray(struct.pack("<256i", *header))
    for n, shape, _ in PARAM_SPECS:
        t = P[n].detach().to(torch.float32).contiguous()
        assert tuple(t.shape) == shape
        out += t.numpy().astype("<f4").tobytes()
    return bytes(out)


def parse_checkpoint(data):
    header = struct.unpack_from("<256i", data, 0)
    assert header[0] == CKPT_MAGIC and header[1] == CKPT_VERSION
    maxT, v, l, nh, c, vp = header[2:8]
    assert (maxT, v, l, nh, c, vp) == (MAX_T, V, L, NH, C, VP)
    assert all(h == 0 for h in header[8:])
    off = 256 * 4
    P = {}
    for n, shape, _ in PARAM_SPECS:
        cnt = numel(shape)
        vals = struct.unpack_from("<%df" % cnt, data, off)
        P[n] = torch.tensor(vals, dtype=torch.float32).reshape(shape)
        off += cnt * 4
    assert off == len(data), "trailing bytes in checkpoint"
    return P


def f32(t):
    return t.detach().to(torch.float32).contiguous().numpy().astype("<f4").tobytes()


def i32(t):
    return t.detach().to(torch.int32).contiguous().numpy().astype("<i4").tobytes()


def ref_layout():
    """(offset, size_bytes, description) rows of gpt2_tiny_ref.bin, also used to write it."""
    rows, off = [], 0

    def add(size, desc):
        nonlocal off
        rows.append((off, size, desc))
        off += size

    add(32 * 4, "int32[32] header: magic %d, version %d, B, T, V, Vp, L, NH, C, maxT, "
                "nsteps, then zeros" % (REF_MAGIC, REF_VERSION))
    add(5 * 4, "float32[5] AdamW hyperparameters: lr, beta1, beta2, eps, weight_decay")
    add(B * T * 4, "int32[B*T] inputs (token ids in [0, V))")
    add(B * T * 4, "int32[B*T] targets (token ids in [0, V))")
    add(B * T * V * 4, "float32[B*T*V] logits, first V columns of each (b,t) row only")
    add(4, "float32 loss: mean cross-entropy over the B*T positions")
    for n, shape, _ in PARAM_SPECS:
        dims = "*".join(str(s) for s in shape)
        add(numel(shape) * 4, "float32[%s] d loss / d %s" % (dims, n))
    add(NSTEPS * 4, "float32[nsteps] AdamW losses; losses[i] is computed before step i's "
                    "update (losses[0] == loss)")
    return rows, off


def ref_bytes(inputs, targets, logits, loss, grads, losses):
    header = [0] * 32
    header[0:11] = [REF_MAGIC, REF_VERSION, B, T, V, VP, L, NH, C, MAX_T, NSTEPS]
    parts = [struct.pack("<32i", *header),
             struct.pack("<5f", LR, BETA1, BETA2, EPS, WD),
             i32(inputs), i32(targets),
             f32(logits[..., :V]),
             struct.pack("<f", loss.item())]
    parts += [f32(grads[n]) for n in NAMES]
    parts.append(struct.pack("<%df" % NSTEPS, *losses))
    rows, total = ref_layout()
    assert [len(p) for p in parts] == [r[1] for r in rows]
    data = b"".join(parts)
    assert len(data) == total
    return data


def readme_text(ckpt_size, ref_size):
    lines = []
    w = lines.append
    w("# Test fixtures")
    w("")
    w("Generated by `tests/gpt2_reference.py`, an independent from-scratch PyTorch GPT-2 (no")
    w("zeroc code, no `transformers`). Regenerate (also rewrites this file) from the repo root:")
    w("")
    w("    /usr/bin/python3 tests/gpt2_reference.py")
    w("")
    w("(Debian python3-torch 1.13; seed %d; float32; one CPU thread.) The test suite itself" % SEED)
    w("only reads these files and never needs PyTorch. All values are little-endian.")
    w("")
    w("Tiny config: max_seq_len %d, vocab_size V %d, padded_vocab_size Vp %d, layers L %d, "
      "heads NH %d," % (MAX_T, V, VP, L, NH))
    w("channels C %d; batch B %d, T %d. Weights N(0, 0.1), biases N(0, 0.05), LayerNorm weights" %
      (C, B, T))
    w("1 + N(0, 0.1), LayerNorm biases N(0, 0.05); the padded wte rows V..Vp-1 are random too")
    w("(they never reach the loss, so their gradient is exactly 0).")
    w("")
    w("## gpt2_tiny.bin (%d bytes)" % ckpt_size)
    w("")
    w("An llm.c GPT-2 checkpoint, version 3 (fp32, padded vocab): `int32[256]` header")
    w("`[%d, 3, maxT, V, L, NH, C, Vp, 0...]`, then the 16 float32 tensors, each row-major," %
      CKPT_MAGIC)
    w("per-layer tensors stacked layer 0 first, Linear weights `[out, in]`:")
    w("")
    w("| tensor | shape | elements |")
    w("|---|---|---|")
    for n, shape, _ in PARAM_SPECS:
        w("| %s | %s | %d |" % (n, " x ".join(str(s) for s in shape), numel(shape)))
    w("")
    w("Total %d parameters." % sum(numel(s) for _, s, _ in PARAM_SPECS))
    w("")
    w("## gpt2_tiny_ref.bin (%d bytes)" % ref_size)
    w("")
    w("The reference forward/backward on the checkpoint above and a short AdamW run.")
    w("")
    w("| OFFSET | SIZE | DESCRIPTION |")
    w("|---:|---:|---|")
    rows, _ = ref_layout()
    for off, size, desc in rows:
        w("| %d | %d | %s |" % (off, size, desc))
    w("")
    w("Semantics the C side must match:")
    w("")
    w("* logits = lnf(x) . wte^T over all Vp rows; the file keeps only the first V columns of")
    w("  each (b,t) row (row stride V, not Vp). The softmax/cross-entropy uses those V columns.")
    w("* The gradients are those of the *mean* loss over B*T positions, in checkpoint order.")
    w("  wte's gradient is the sum of the embedding and the tied-head contributions; its padded")
    w("  rows and wpe rows >= T are exactly 0.")
    w("* The key-bias gradient, qkvb[l][C:2C], is mathematically 0 (adding a constant to every")
    w("  score of a query leaves its softmax unchanged); the stored values are float32 rounding")
    w("  noise (|g| < 1e-8; some may be exactly 0). Compare gradients with an absolute")
    w("  tolerance (or one relative to the tensor's max |g|), never elementwise-relative. Adam's")
    w("  first step turns that noise into updates of up to ~lr, so parameters after AdamW differ")
    w("  there between implementations; the loss is exactly invariant to the key bias, so the")
    w("  loss sequence is not affected.")
    w("* The losses come from `torch.optim.AdamW(lr, betas, eps, weight_decay, foreach=False)`,")
    w("  one param group, so weight decay applies to *every* parameter (biases, LayerNorm")
    w("  weights, wpe, and the padded wte rows too), on this same batch each step. Per element:")
    w("  `p *= 1 - lr*wd; m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g*g;")
    w("  p -= (lr / (1-b1^t)) * m / (sqrt(v) / sqrt(1-b2^t) + eps)` (t is 1-based).")
    w("")
    w("## Llama-family fixtures")
    w("")
    w("`llama_tiny/`, `qwen2_tiny/` (Hugging Face directories: config.json + F32 safetensors, the")
    w("second sharded with its index), `llama_tokens.bin` and `llama_reference.json` (the float64")
    w("losses of 5 AdamW steps and the `zeroc train` flags that give them) are written by")
    w("`tests/llama_reference.py`, a from-scratch float64 PyTorch Llama/Qwen2 decoder, and read by")
    w("`tests/test_llama.py`. `llama_reference.md`, generated beside them, gives their shapes, the")
    w("expected losses and the data and AdamW semantics the numbers assume.")
    w("")
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------------
# main


def main():
    torch.set_num_threads(1)
    torch.manual_seed(SEED)
    g = torch.Generator().manual_seed(SEED)

    # parameters (drawn in checkpoint order from one generator)
    P0 = {}
    for n, shape, kind in PARAM_SPECS:
        if kind == "w":
            t = torch.randn(shape, generator=g) * 0.1
        elif kind == "b":
            t = torch.randn(shape, generator=g) * 0.05
        else:  # LayerNorm weight
            t = 1.0 + torch.randn(shape, generator=g) * 0.1
        P0[n] = t.to(torch.float32)
    inputs = torch.randint(0, V, (B, T), generator=g, dtype=torch.int64)
    targets = torch.randint(0, V, (B, T), generator=g, dtype=torch.int64)

    # float32 reference forward/backward
    P32 = make_leaves(P0, torch.float32)
    logits32, loss32, grads32 = loss_and_grads(P32, inputs, targets)
    assert logits32.shape == (B, T, VP)

    # --- self-check 1: checkpoint round trip gives bitwise-identical logits
    ckpt = checkpoint_bytes(P0)
    Pr = parse_checkpoint(ckpt)
    for n in NAMES:
        assert torch.equal(Pr[n], P0[n]), n
    with torch.no_grad():
        logits_rt, loss_rt = forward(Pr, inputs, targets)
    assert torch.equal(logits_rt, logits32), "checkpoint round trip changed the logits"
    assert torch.equal(loss_rt, loss32)

    # --- self-check 2: float64 autograd vs float64 central finite differences.
    # With h = 1e-6 in float64, the truncation error of a central difference is ~h^2*|f'''|/6
    # (~1e-12 for O(1..100) third derivatives) and the rounding error is ~ulp(f)*k/h with
    # f ~ 4.6, ulp ~ 1e-15 and k ~ tens of accumulated ops: ~1e-8. So |fd - autograd| <= 1e-7 +
    # 1e-5*|g| can only fail if the backward pass disagrees with the forward pass (a model bug
    # or a non-differentiable point, which the smooth model here has none of).
    P64 = make_leaves(P0, torch.float64)
    logits64, loss64, grads64 = loss_and_grads(P64, inputs, targets)
    probes = [("wte", (int(inputs[0, 3]), 5)),   # used both as embedding and in the head
              ("wte", (int(targets[1, 2]), 0)),
              ("wte", (VP - 1, 7)),                # padded row: exactly zero gradient
              ("wpe", (2, 11)), ("wpe", (MAX_T - 1, 0)),
              ("ln1w", (0, 3)), ("ln1b", (1, 30)),
              ("qkvw", (0, 5, 9)), ("qkvw", (1, C + 17, 2)), ("qkvw", (1, 2 * C + 31, 31)),
              ("qkvb", (0, C + 4)),
              ("attprojw", (1, 7, 8)), ("attprojb", (0, 1)),
              ("ln2w", (1, 12)), ("ln2b", (0, 0)),
              ("fcw", (0, 100, 3)), ("fcb", (1, 77)),
              ("fcprojw", (1, 20, 127)), ("fcprojb", (0, 31)),
              ("lnfw", (9,)), ("lnfb", (22,))]
    h = 1e-6
    worst_fd = 0.0
    with torch.no_grad():
        base = {n: P64[n].detach().clone() for n in NAMES}
        for n, idx in probes:
            Pp = dict(base)
            Pp[n] = base[n].clone()
            Pp[n][idx] += h
            _, lp = forward(Pp, inputs, targets)
            Pp[n][idx] -= 2 * h
            _, lm = forward(Pp, inputs, targets)
            fd = (lp.item() - lm.item()) / (2 * h)
            ag = grads64[n][idx].item()
            err = abs(fd - ag)
            worst_fd = max(worst_fd, err)
            assert err <= 1e-7 + 1e-5 * abs(ag), (n, idx, fd, ag)
    assert grads64["wte"][V:].abs().max().item() == 0.0

    # --- self-check 2b: forward() agrees with the differently written forward_alt() (float64,
    # so any difference beyond ~1e-13 would be a real formula or layout mismatch), and so do
    # the gradients of the two.
    P64b = make_leaves(P0, torch.float64)
    lg_alt, ls_alt = forward_alt(P64b, inputs, targets)
    ls_alt.backward()
    alt_err = (lg_alt.detach() - logits64).abs().max().item()
    assert alt_err < 1e-12 and abs(ls_alt.item() - loss64.item()) < 1e-12, alt_err
    for n in NAMES:
        assert (P64b[n].grad - grads64[n]).abs().max().item() < 1e-12, n
    assert grads64["wpe"][T:].abs().max().item() == 0.0
    assert grads64["qkvb"][:, C:2 * C].abs().max().item() < 1e-12  # key bias: exactly 0 in theory

    # --- self-check 3: float32 results are float32-accurate against float64
    def rel_err(a, b):
        return ((a.double() - b.double()).abs().max() / b.double().abs().max()).item()

    logit_err = rel_err(logits32, logits64)
    loss_err = abs(loss32.item() - loss64.item()) / abs(loss64.item())
    grad_errs = {n: rel_err(grads32[n], grads64[n]) if grads64[n].abs().max() > 0 else 0.0
                 for n in NAMES}
    elem_err = {n: (grads32[n].double() - grads64[n]).abs().max().item() for n in NAMES}
    assert logit_err < 1e-5 and loss_err < 1e-6, (logit_err, loss_err)
    assert max(grad_errs.values()) < 1e-4, grad_errs
    assert grads32["wte"][V:].abs().max().item() == 0.0
    assert grads32["qkvb"][:, C:2 * C].abs().max().item() < 1e-8  # documented in the README

    # AdamW run (float32 is the fixture; float64 only to see how far float32 drifts)
    losses32 = train(P0, inputs, targets, torch.float32)
    losses64 = train(P0, inputs, targets, torch.float64)
    assert losses32[0] == loss32.item()
    traj_err = max(abs(a - b) for a, b in zip(losses32, losses64))
    assert traj_err < 1e-4, (losses32, losses64)
    assert losses32[-1] < losses32[0] - 0.05, "training should make visible progress"

    ref = ref_bytes(inputs, targets, logits32, loss32, grads32, losses32)

    # --- self-check 4: parse the reference file back, section by section
    hdr = struct.unpack_from("<32i", ref, 0)
    assert list(hdr[:11]) == [REF_MAGIC, REF_VERSION, B, T, V, VP, L, NH, C, MAX_T, NSTEPS]
    assert not any(hdr[11:])
    rows, _ = ref_layout()
    sec = [ref[o:o + s] for o, s, _ in rows]
    assert struct.unpack("<5f", sec[1]) == struct.unpack("<5f", struct.pack(
        "<5f", LR, BETA1, BETA2, EPS, WD))
    assert list(struct.unpack("<%di" % (B * T), sec[2])) == inputs.flatten().tolist()
    assert list(struct.unpack("<%di" % (B * T), sec[3])) == targets.flatten().tolist()
    lg = torch.tensor(struct.unpack("<%df" % (B * T * V), sec[4])).reshape(B, T, V)
    assert torch.equal(lg, logits32[..., :V])
    assert struct.unpack("<f", sec[5])[0] == loss32.item()
    for k, (n, shape, _) in enumerate(PARAM_SPECS):
        gk = torch.tensor(struct.unpack("<%df" % numel(shape), sec[6 + k])).reshape(shape)
        assert torch.equal(gk, grads32[n]), n
    assert list(struct.unpack("<%df" % NSTEPS, sec[-1])) == losses32

    os.makedirs(OUTDIR, exist_ok=True)
    files = {"gpt2_tiny.bin": ckpt, "gpt2_tiny_ref.bin": ref,
             "README.md": readme_text(len(ckpt), len(ref)).encode()}
    for fname, data in files.items():
        with open(os.path.join(OUTDIR, fname), "wb") as f:
            f.write(data)

    # report
    gmax = max(grads32[n].abs().max().item() for n in NAMES)
    print("torch %s, seed %d" % (torch.__version__, SEED))
    print("parameters: %d" % sum(P0[n].numel() for n in NAMES))
    print("inputs : %s" % inputs.flatten().tolist())
    print("targets: %s" % targets.flatten().tolist())
    print("loss (float32) = %.9g   (float64: %.12g; ln V = %.6g)" %
          (loss32.item(), loss64.item(), math.log(V)))
    print("max |grad| = %.6g" % gmax)
    for n in NAMES:
        print("  %-9s max|g| %.4e   float32-vs-float64 max abs %.2e (rel to max|g| %.2e)" %
              (n, grads32[n].abs().max().item(), elem_err[n], grad_errs[n]))
    print("max |logit| = %.6g; float32-vs-float64 logits rel err %.2e, loss rel err %.2e" %
          (logits32[..., :V].abs().max().item(), logit_err, loss_err))
    print("finite differences (float64, %d probes): max |fd - autograd| = %.2e" %
          (len(probes), worst_fd))
    print("forward vs forward_alt (float64) max |logit diff| = %.2e" % alt_err)
    print("AdamW losses (float32): %s" % ", ".join("%.9g" % x for x in losses32))
    print("AdamW losses (float64): %s" % ", ".join("%.9g" % x for x in losses64))
    print("float32-vs-float64 loss trajectory max abs diff: %.2e" % traj_err)
    for fname, data in files.items():
        print("wrote %s (%d bytes)" % (os.path.join(OUTDIR, fname), len(data)))


if __name__ == "__main__":
    sys.exit(main())
