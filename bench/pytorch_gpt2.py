#!/usr/bin/env python3
"""pytorch_gpt2.py — the PyTorch peer of bench/gpt2_vs_pytorch.sh: the same GPT-2 as zeroc's
(llm.c's architecture, tied head, padded vocabulary excluded from the loss), started from the
same initialisation (GPT-2's: N(0, 0.02), residual projections N(0, 0.02/√(2L)), biases 0,
LayerNorm 1 and 0), denormals flushed, AdamW, the same token file read the same way (each rank
takes window (step·ranks + rank) of B·T tokens). A peer started from PyTorch's default
initialisation runs into denormals and slows down step after step for reasons that are not its
own: this one is fair. Prints the median ms per step after the first two, and every loss.

Usage: pytorch_gpt2.py TOKENS.bin L C H V T B STEPS [--autocast] [--ranks N]
  --autocast  torch.autocast("cpu", dtype=torch.bfloat16) around forward (PyTorch's bf16 path)
  --ranks N   N processes (gloo, DistributedDataParallel), one thread each"""
import math
import os
import statistics
import sys
import tempfile
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F

args = [a for a in sys.argv[1:] if not a.startswith("--")]
path, L, C, H, V, T, B, steps = args[0], *map(int, args[1:8])
AUTOCAST = "--autocast" in sys.argv
RANKS = int(sys.argv[sys.argv.index("--ranks") + 1]) if "--ranks" in sys.argv else 1
args = [a for a in args if a != str(RANKS)] if "--ranks" in sys.argv else args
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


def train(rank, init_file):
    torch.set_flush_denormal(True)
    if RANKS > 1:
        torch.set_num_threads(1)
        dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank,
                                world_size=RANKS)
    torch.manual_seed(0)
    tok = np.frombuffer(open(path, "rb").read()[1024:], dtype=np.uint16).astype(np.int64)
    model = GPT()
    run = nn.parallel.DistributedDataParallel(model) if RANKS > 1 else model
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.0)
    times, losses = [], []
    for s in range(steps):
        p = (s * RANKS + rank) * B * T % (len(tok) - B * T - 1)
        w = torch.tensor(tok[p:p + B * T + 1])
        t0 = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=AUTOCAST):
            loss = run(w[:-1].view(B, T), w[1:].view(B, T))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        times.append(1e3 * (time.perf_counter() - t0))
        losses.append(loss.item())
    if rank == 0:
        ms = statistics.median(times[2:])
        print(f"pytorch ms/step {ms:.1f} tokens/s {RANKS * B * T / ms * 1e3:.0f} threads "
              f"{torch.get_num_threads()} ranks {RANKS} autocast {int(AUTOCAST)} losses "
              + " ".join(f"{x:.4f}" for x in losses), flush=True)
    if RANKS > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    if RANKS == 1:
        train(0, None)
    else:
        init = os.path.join(tempfile.mkdtemp(), "init")
        mp.spawn(train, args=(init,), nprocs=RANKS)
