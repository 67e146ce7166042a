#!/usr/bin/env python3
"""pytorch_gpt2.py — the PyTorch side of bench/gpt2_vs_pytorch.sh: the same GPT-2 (llm.c's
architecture, tied head, padded vocab excluded from the loss), AdamW, the same shapes and token
file, one process. Prints the median ms per step over the steps after the first two.
Usage: pytorch_gpt2.py TOKENS.bin L C H V T B STEPS"""
import math
import statistics
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

path, L, C, H, V, T, B, steps = sys.argv[1], *map(int, sys.argv[2:9])
VP = (V + 127) // 128 * 128
torch.manual_seed(0)
tok = np.frombuffer(open(path, "rb").read()[1024:], dtype=np.uint16).astype(np.int64)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(C), nn.LayerNorm(C)
        self.qkv, self.proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
        self.fc, self.fcproj = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, 2)
        q, k, v = (z.view(b, t, H, C // H).transpose(1, 2) for z in (q, k, v))
        a = (q @ k.transpose(-1, -2)) / math.sqrt(C // H)
        a = a.masked_fill(torch.ones(t, t).tril() == 0, float("-inf")).softmax(-1)
        x = x + self.proj((a @ v).transpose(1, 2).reshape(b, t, C))
        return x + self.fcproj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(VP, C), nn.Embedding(T, C)
        self.h = nn.ModuleList(Block() for _ in range(L))
        self.lnf = nn.LayerNorm(C)

    def forward(self, i, t):
        x = self.wte(i) + self.wpe(torch.arange(i.shape[1]))
        for blk in self.h:
            x = blk(x)
        logits = self.lnf(x) @ self.wte.weight.t()
        return F.cross_entropy(logits[..., :V].reshape(-1, V), t.reshape(-1))


model = GPT()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.0)
times = []
for s in range(steps):
    p = s * B * T % (len(tok) - B * T - 1)
    w = torch.tensor(tok[p:p + B * T + 1])
    t0 = time.perf_counter()
    loss = model(w[:-1].view(B, T), w[1:].view(B, T))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    times.append(1e3 * (time.perf_counter() - t0))
print(f"pytorch ms/step {statistics.median(times[2:]):.1f} tokens/s "
      f"{B * T / statistics.median(times[2:]) * 1e3:.0f} threads {torch.get_num_threads()}")
