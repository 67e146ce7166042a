#!/usr/bin/env python3
"""pytorch_gpt2.py — the PyTorch peer of bench/gpt2_vs_pytorch.sh: the same GPT-2 as zeroc's
(llm.c's architecture, tied head, padded vocabulary excluded from the loss), denormals flushed,
AdamW, the same token file read the same way (each rank takes window (step·ranks + rank) of B·T
tokens). With --init it starts from zeroc's own initial weights (the safetensors file
`zeroc train --steps 1 --lr 0 --save-weights FILE` writes: a step at learning rate 0 leaves every
weight as drawn), so the first losses of the two must agree to rounding; without it, it draws its
own from the same scheme (GPT-2's: N(0, 0.02), residual projections N(0, 0.02/√(2L)), biases 0,
LayerNorm 1 and 0) — the same distribution, other values, so first losses differ by ~0.01–0.1.
A peer started from PyTorch's default initialisation runs into denormals and slows down step
after step for reasons that are not its own: this one is fair. Prints the median ms per step
after the first two and every loss (with --ranks N, each step's mean over the ranks, as zeroc
prints it).

Usage: pytorch_gpt2.py TOKENS.bin L C H V T B STEPS [--init FILE] [--autocast] [--ranks N]
  STEPS        at least 3 (the first two are warm-up, not timed)
  --init FILE  zeroc's weights (safetensors, F32, zeroc's names: wte wpe h.N.qkvw ... lnfw lnfb)
  --autocast   torch.autocast("cpu", dtype=torch.bfloat16) around forward (PyTorch's bf16 path)
  --ranks N    N processes (gloo, DistributedDataParallel), one thread each"""
import argparse
import json
import math
import os
import statistics
import struct
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F


def fail(msg):
    print(f"pytorch_gpt2.py: {msg}", file=sys.stderr)
    sys.exit(2)


def positive(what):
    def parse(v):
        try:
            n = int(v)
        except ValueError:
            n = 0
        if n < 1:
            raise argparse.ArgumentTypeError(f"{what} must be a positive integer, got {v!r}")
        return n
    return parse


ap = argparse.ArgumentParser(prog="pytorch_gpt2.py", description=__doc__.split("\n")[0])
ap.add_argument("tokens")
for name in ("L", "C", "H", "V", "T", "B", "STEPS"):
    ap.add_argument(name, type=positive(name))
ap.add_argument("--init", metavar="FILE")
ap.add_argument("--autocast", action="store_true")
ap.add_argument("--ranks", type=positive("--ranks"), default=1)
opts = ap.parse_args()
path, L, C, H, V, T, B, steps = (opts.tokens, opts.L, opts.C, opts.H, opts.V, opts.T, opts.B,
                                  opts.STEPS)
AUTOCAST, RANKS, INIT = opts.autocast, opts.ranks, opts.init
if steps < 3:
    fail(f"STEPS must be at least 3 (the first two are warm-up, not timed), got {steps}")
if C % H:
    fail(f"C ({C}) must be a multiple of H ({H})")
VP = (V + 127) // 128 * 128


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(C), nn.LayerNorm(C)
        self.qkv, self.proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
        self.fc, self.fcproj = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)
        self.mask = torch.ones(T, T).tril() == 0  # not a buffer: gloo cannot broadcast bools

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, 2)
        q, k, v = (z.view(b, t, H, C // H).transpose(1, 2) for z in (q, k, v))
        a = (q @ k.transpose(-1, -2)) / math.sqrt(C // H)
        a = a.masked_fill(self.mask[:t, :t], float("-inf")).softmax(-1)
        x = x + self.proj((a @ v).transpose(1, 2).reshape(b, t, C))
        return x + self.fcproj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(VP, C), nn.Embedding(T, C)
        self.h = nn.ModuleList(Block() for _ in range(L))
        self.lnf = nn.LayerNorm(C)
        for name, p in self.named_parameters():  # GPT-2's initialisation, as zeroc's
            if name.endswith("bias"):
                nn.init.zeros_(p)
            elif "ln" in name:
                nn.init.ones_(p)
            elif name.endswith(("proj.weight", "fcproj.weight")):
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * L))
            else:
                nn.init.normal_(p, 0.0, 0.02)

    def forward(self, i, t):
        x = self.wte(i) + self.wpe(torch.arange(i.shape[1]))
        for blk in self.h:
            x = blk(x)
        logits = self.lnf(x) @ self.wte.weight.t()
        return F.cross_entropy(logits[..., :V].float().reshape(-1, V), t.reshape(-1))


# zeroc's tensor names → this model's (zeroc's Linear weights are stored [out, in], as PyTorch's)
BLOCK_NAMES = {"ln1w": "ln1.weight", "ln1b": "ln1.bias", "qkvw": "qkv.weight", "qkvb": "qkv.bias",
               "attprojw": "proj.weight", "attprojb": "proj.bias", "ln2w": "ln2.weight",
               "ln2b": "ln2.bias", "fcw": "fc.weight", "fcb": "fc.bias",
               "fcprojw": "fcproj.weight", "fcprojb": "fcproj.bias"}
TOP_NAMES = {"wte": "wte.weight", "wpe": "wpe.weight", "lnfw": "lnf.weight", "lnfb": "lnf.bias"}


def expected():
    """{zeroc's tensor name: (this model's name, shape)} for this shape."""
    d = {"wte": [VP, C], "wpe": [T, C], "lnfw": [C], "lnfb": [C]}
    for l in range(L):
        d.update({f"h.{l}.{k}": v for k, v in (
            ("ln1w", [C]), ("ln1b", [C]), ("qkvw", [3 * C, C]), ("qkvb", [3 * C]),
            ("attprojw", [C, C]), ("attprojb", [C]), ("ln2w", [C]), ("ln2b", [C]),
            ("fcw", [4 * C, C]), ("fcb", [4 * C]), ("fcprojw", [C, 4 * C]), ("fcprojb", [C]))})
    names = {k: TOP_NAMES[k] if k in TOP_NAMES else
             "h.{}.{}".format(k.split(".")[1], BLOCK_NAMES[k.split(".")[2]]) for k in d}
    return {k: (names[k], v) for k, v in d.items()}


def index_zeroc(file):
    """Checks zeroc's safetensors file (8-byte little-endian header length, JSON header, raw
    little-endian data) against this model: refuses any tensor that is missing, extra, not F32,
    of another shape or outside the file. Returns {torch name: (file offset, shape)}."""
    try:
        size = os.path.getsize(file)
        with open(file, "rb") as f:
            head = f.read(8)
            n = struct.unpack("<Q", head)[0] if len(head) == 8 else None
            if n is None:
                fail(f"--init {file}: {size} bytes, too short for a safetensors header")
            if n > size - 8:
                fail(f"--init {file}: header of {n} bytes past the end of the file ({size} bytes)")
            text = f.read(n)
    except OSError as e:
        fail(f"--init {file}: cannot read: {e.strerror}")
    try:
        header = json.loads(text)
    except ValueError as e:
        fail(f"--init {file}: header is not JSON: {e}")
    if not isinstance(header, dict):
        fail(f"--init {file}: header is not a JSON object")
    base, want, got = 8 + n, expected(), {}
    for key, t in header.items():
        if key == "__metadata__":
            continue
        if key not in want:
            fail(f"--init {file}: tensor '{key}' is not in this GPT-2 (L={L}; zeroc's names: "
                 "wte wpe h.N.{" + ",".join(BLOCK_NAMES) + "} lnfw lnfb)")
        if not isinstance(t, dict) or t.get("dtype") != "F32":
            fail(f"--init {file}: tensor '{key}' has dtype "
                 f"{t.get('dtype') if isinstance(t, dict) else t!r}, expected F32")
        name, exp = want[key]
        shape = t.get("shape")
        if shape != exp:
            fail(f"--init {file}: tensor '{key}' has shape {shape}, expected {exp} "
                 f"(L={L} C={C} V={V} padded to {VP}, T={T})")
        off, nbytes = t.get("data_offsets"), 4 * math.prod(exp)
        if (not isinstance(off, list) or len(off) != 2 or not all(isinstance(x, int) for x in off)
                or off[1] - off[0] != nbytes or off[0] < 0 or base + off[1] > size):
            fail(f"--init {file}: tensor '{key}' has data_offsets {off}, expected {nbytes} bytes "
                 f"inside the data ({size - base} bytes)")
        got[name] = (base + off[0], exp)
    missing = [k for k in want if want[k][0] not in got]
    if missing:
        fail(f"--init {file}: no tensor for {', '.join(missing[:4])}"
             f"{' ...' if len(missing) > 4 else ''} ({len(missing)} missing)")
    return got


def load_zeroc(file, model):
    state = {}
    for name, (offset, shape) in index_zeroc(file).items():
        with open(file, "rb") as f:  # little-endian F32, as the host (x86-64) reads it
            f.seek(offset)
            data = bytearray(f.read(4 * math.prod(shape)))
        state[name] = torch.frombuffer(data, dtype=torch.float32).reshape(shape).clone()
    model.load_state_dict(state)


def train(rank, init_file):
    torch.set_flush_denormal(True)
    if RANKS > 1:
        torch.set_num_threads(1)
        dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank,
                                world_size=RANKS)
    torch.manual_seed(0)
    # uint16 tokens (torch 1.13 has no uint16: read as int16, widened, the sign bit masked off)
    tok = torch.frombuffer(bytearray(open(path, "rb").read()[1024:]), dtype=torch.int16) \
        .to(torch.int64) & 0xFFFF
    model = GPT()
    if INIT:
        load_zeroc(INIT, model)
    run = nn.parallel.DistributedDataParallel(model) if RANKS > 1 else model
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.0)
    times, losses = [], []
    for s in range(steps):
        p = (s * RANKS + rank) * B * T % (len(tok) - B * T - 1)
        w = tok[p:p + B * T + 1].clone()
        t0 = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=AUTOCAST):
            loss = run(w[:-1].view(B, T), w[1:].view(B, T))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        times.append(1e3 * (time.perf_counter() - t0))
        losses.append(loss.item())
    losses = torch.tensor(losses, dtype=torch.float64)
    if RANKS > 1:  # each step's mean over the ranks, as zeroc prints it (after the timed steps)
        dist.all_reduce(losses)
        losses /= RANKS
    if rank == 0:
        ms = statistics.median(times[2:])
        print(f"pytorch ms/step {ms:.1f} tokens/s {RANKS * B * T / ms * 1e3:.0f} threads "
              f"{torch.get_num_threads()} ranks {RANKS} autocast {int(AUTOCAST)} init "
              f"{'zeroc' if INIT else 'own'} losses "
              + " ".join(f"{x:.7f}" for x in losses.tolist()), flush=True)
    if RANKS > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    if not os.path.isfile(path):
        fail(f"TOKENS {path}: no such file")
    if (os.path.getsize(path) - 1024) // 2 < B * T + 2:
        fail(f"TOKENS {path}: {max(0, (os.path.getsize(path) - 1024) // 2)} tokens, fewer than "
             f"B·T + 2 = {B * T + 2}")
    if INIT:
        index_zeroc(INIT)  # a bad file is refused here, not in every spawned rank
    if RANKS == 1:
        train(0, None)
    else:
        init = os.path.join(tempfile.mkdtemp(), "init")
        mp.spawn(train, args=(init,), nprocs=RANKS)
