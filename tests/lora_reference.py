#!/usr/bin/python3
"""lora_reference.py — golden reference for zeroc's LoRA fine-tuning (`zeroc train --init DIR
--lora-init ADAPTER`): the float64 losses of AdamW on the adapters alone over a frozen Llama base.

What it writes
--------------
  tests/fixtures/lora_tiny/adapter_config.json        a PEFT LoraConfig: r 4, lora_alpha 8,
  tests/fixtures/lora_tiny/adapter_model.safetensors  dropout 0, all seven linear modules; A drawn
                                                      as PEFT draws it (U(±1/sqrt(in))), B
                                                      N(0, 0.05) rather than PEFT's zeros, so
                                                      the adapters change the very first loss
  tests/fixtures/lora_reference.json                  the float64 losses and gradient norms of 5
                                                      AdamW steps on the adapters, with the flags

The base is the committed tests/fixtures/llama_tiny (tests/llama_reference.py) and the tokens its
llama_tokens.bin: this script reads them, so the two references cannot drift apart. The test suite
never needs PyTorch; only this script does.

How to regenerate
-----------------
    cd <repo root> && /usr/bin/python3 tests/lora_reference.py

Model
-----
llama_reference.forward with every adapted weight W (out x in) replaced by W + (alpha/r) B A —
the same function as PEFT's y = x W^T + (alpha/r) (x A^T) B^T, in float64 — the base tensors
frozen (no gradient, no update), AdamW (torch.optim.AdamW, weight decay on A and B) on the
adapters. Self-checks (asserts): PEFT's unmerged form gives the same logits (float64, ~1e-13);
autograd's dA, dB agree with central finite differences; B = 0 gives the base model's loss; the
loss is sensitive to alpha, to swapping A's and B's roles (a transposed layout) and to leaving a
module out.
"""

import json
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llama_reference as ref  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.join(HERE, "fixtures")
R, ALPHA, SEED = 4, 8.0, 20261128
MODULES = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def module_path(l, m):
    return "model.layers.%d.%s.%s" % (l, "self_attn" if m.endswith(("q_proj", "k_proj", "v_proj",
                                                                     "o_proj")) else "mlp", m)


def adapter_names(shape):
    """[(PEFT tensor name, base weight name, 'A' | 'B')] for every adapted module."""
    out = []
    for l in range(shape.L):
        for m in MODULES:
            p = module_path(l, m)
            out += [("base_model.model.%s.lora_A.weight" % p, p + ".weight", "A"),
                    ("base_model.model.%s.lora_B.weight" % p, p + ".weight", "B")]
    return out


def draw_adapters(shape, base):
    g = torch.Generator().manual_seed(SEED)
    ad = {}
    for name, w, kind in adapter_names(shape):
        out_n, in_n = base[w].shape
        if kind == "A":
            b = 1.0 / math.sqrt(in_n)
            ad[name] = (torch.rand(R, in_n, generator=g, dtype=torch.float64) * 2 - 1) * b
        else:
            ad[name] = torch.randn(out_n, R, generator=g, dtype=torch.float64) * 0.5
    # what the file holds: float32
    return {n: t.to(torch.float32).to(torch.float64) for n, t in ad.items()}


def merged(shape, base, ad, alpha=ALPHA, skip=None, swap=False):
    """The base tensors with each adapted weight W + (alpha/r) B A."""
    P = dict(base)
    for l in range(shape.L):
        for m in MODULES:
            if m == skip:
                continue
            p = module_path(l, m)
            A = ad["base_model.model.%s.lora_A.weight" % p]
            B = ad["base_model.model.%s.lora_B.weight" % p]
            delta = (alpha / R) * (B @ A)
            if swap:  # a layout mistake: A's columns read as its rows
                delta = (alpha / R) * (B @ A.reshape(A.shape[1], A.shape[0]).t())
            P[p + ".weight"] = base[p + ".weight"] + delta
    return P


def unmerged_logits(shape, base, ad, x):
    """PEFT's form: each adapted product x W^T + (alpha/r) (x A^T) B^T, via a forward whose
    products see the adapters (llama_reference.forward on tensors that add them)."""
    P = dict(base)
    hooks = {}
    for l in range(shape.L):
        for m in MODULES:
            p = module_path(l, m)
            hooks[p + ".weight"] = (ad["base_model.model.%s.lora_A.weight" % p],
                                    ad["base_model.model.%s.lora_B.weight" % p])
    orig_t = torch.Tensor.t

    class W:
        def __init__(self, w, a, b):
            self.w, self.a, self.b = w, a, b

        def t(self):
            return self

        def __rmatmul__(self, h):
            return h @ orig_t(self.w) + (ALPHA / R) * ((h @ orig_t(self.a)) @ orig_t(self.b))

    for k, (a, b) in hooks.items():
        P[k] = W(base[k], a, b)
    logits, _ = ref.forward(shape, P, x, torch.zeros_like(x))
    return logits


def train(shape, base, ad0, tokens):
    A = {n: t.clone().requires_grad_(True) for n, t in ad0.items()}
    names = list(A)
    opt = torch.optim.AdamW([A[n] for n in names], lr=ref.LR, betas=(ref.BETA1, ref.BETA2),
                            eps=ref.EPS, weight_decay=ref.WD, foreach=False)
    losses, norms = [], []
    for s in range(ref.NSTEPS):
        x, y = ref.global_batch(tokens, s, 1)
        for n in names:
            A[n].grad = None
        _, loss = ref.forward(shape, merged(shape, base, A), x, y)
        loss.backward()
        losses.append(loss.item())
        norms.append(math.sqrt(sum(float((A[n].grad ** 2).sum()) for n in names)))
        opt.step()
    return losses, norms


def main():
    torch.set_num_threads(1)
    cfg = json.load(open(os.path.join(FIX, "llama_tiny", "config.json")))
    shape = ref.Shape(cfg)
    base = {n: t.to(torch.float64) for n, t in ref.read_safetensors(
        open(os.path.join(FIX, "llama_tiny", "model.safetensors"), "rb").read()).items()}
    tokens = ref.read_tokens(open(os.path.join(FIX, "llama_tokens.bin"), "rb").read())
    ad = draw_adapters(shape, base)
    x, y = ref.global_batch(tokens, 0, 1)

    # --- self-checks
    lm, loss0 = ref.forward(shape, merged(shape, base, ad), x, y)
    lu = unmerged_logits(shape, base, ad, x)
    unmerged_err = float((lm - lu).abs().max())
    assert unmerged_err < 1e-10, unmerged_err
    zero = {n: (t * 0 if n.endswith("lora_B.weight") else t) for n, t in ad.items()}
    _, lz = ref.forward(shape, merged(shape, base, zero), x, y)
    _, lb = ref.forward(shape, base, x, y)
    assert abs(lz.item() - lb.item()) < 1e-13
    Ag = {n: t.clone().requires_grad_(True) for n, t in ad.items()}
    _, l = ref.forward(shape, merged(shape, base, Ag), x, y)
    l.backward()
    worst = 0.0
    for n in list(Ag)[:6] + list(Ag)[-4:]:
        for idx in ((0, 0), (Ag[n].shape[0] - 1, Ag[n].shape[1] - 1)):
            h = 1e-6
            p, m = dict(ad), dict(ad)
            p[n] = ad[n].clone()
            p[n][idx] += h
            m[n] = ad[n].clone()
            m[n][idx] -= h
            fd = (ref.forward(shape, merged(shape, base, p), x, y)[1] -
                  ref.forward(shape, merged(shape, base, m), x, y)[1]).item() / (2 * h)
            worst = max(worst, abs(fd - Ag[n].grad[idx].item()))
    assert worst < 1e-7, worst
    sens = {
        "alpha 16 instead of 8": ref.forward(shape, merged(shape, base, ad, alpha=16), x, y)[1],
        "A transposed": ref.forward(shape, merged(shape, base, ad, swap=True), x, y)[1],
        "down_proj left out": ref.forward(shape, merged(shape, base, ad, skip="down_proj"), x,
                                          y)[1],
        "no adapters (the base)": lb,
    }
    sens = {k: abs(v.item() - loss0.item()) / abs(loss0.item()) for k, v in sens.items()}
    assert all(v > 10 * ref.TOL for v in sens.values()), sens

    losses, norms = train(shape, base, ad, tokens)
    assert abs(losses[0] - loss0.item()) < 1e-12

    # --- files
    os.makedirs(os.path.join(FIX, "lora_tiny"), exist_ok=True)
    config = {"peft_type": "LORA", "task_type": "CAUSAL_LM", "base_model_name_or_path": None,
              "r": R, "lora_alpha": ALPHA, "lora_dropout": 0.0, "target_modules": MODULES,
              "bias": "none", "fan_in_fan_out": False, "inference_mode": True,
              "init_lora_weights": True, "use_rslora": False, "use_dora": False,
              "modules_to_save": None, "layers_to_transform": None, "rank_pattern": {},
              "alpha_pattern": {}}
    with open(os.path.join(FIX, "lora_tiny", "adapter_config.json"), "w") as f:
        f.write(json.dumps(config, indent=2) + "\n")
    data = ref.safetensors_bytes([(n, t) for n, t in ad.items()])
    with open(os.path.join(FIX, "lora_tiny", "adapter_model.safetensors"), "wb") as f:
        f.write(data)
    back = ref.read_safetensors(data)
    assert all(torch.equal(back[n].to(torch.float64), ad[n]) for n in ad)
    runs = [{"ranks": n, "micro_batch": B,
             "args": ["--data", "llama_tokens.bin", *ref.FLAGS, "--micro-batch", str(B)]}
            for n, B in ((1, ref.GLOBAL_B), (2, ref.GLOBAL_B // 2))]
    expected = {
        "generated_by": "tests/lora_reference.py (float64 PyTorch; regenerate with "
                        "/usr/bin/python3 tests/lora_reference.py)",
        "base": "llama_tiny", "adapter": "lora_tiny", "tokens": "llama_tokens.bin",
        "runs": runs, "tolerance": {"loss_rel": ref.TOL},
        "loss": losses, "grad_norm": norms,
    }
    with open(os.path.join(FIX, "lora_reference.json"), "w") as f:
        f.write(json.dumps(expected, indent=1) + "\n")
    print("torch %s" % torch.__version__)
    print("unmerged vs merged logits %.2e; finite differences max |fd - autograd| %.2e" % (
        unmerged_err, worst))
    for k, v in sens.items():
        print("sensitivity: %-24s rel loss change %.2e" % (k, v))
    print("losses (float64): %s" % ", ".join("%.12f" % v for v in losses))
    print("grad norms      : %s" % ", ".join("%.9f" % v for v in norms))


if __name__ == "__main__":
    sys.exit(main())
