#!/usr/bin/env python3
"""sft_reference.py — the float64 reference for a masked loss (tests/test_sft.py): an independent
PyTorch GPT-2 (tests/gpt2_reference.py's forward, no zeroc code) on tests/fixtures/gpt2_tiny.bin,
the loss as Hugging Face computes it with labels = -100 where the mask is 0
(CrossEntropyLoss(ignore_index=-100): the mean over the other targets) and its gradient's norm
over every parameter. Its own file because it needs PyTorch, which the test suite does not: the
test runs it with a Python that has torch (Debian's python3-torch) and otherwise compares with
the values it printed once, pinned in the test.

Usage: sft_reference.py TOKENS.bin MASK B T   → prints {"loss": ..., "grad_norm": ...}
The window is the file's tokens 0 .. B·T (inputs the first B·T, targets the same shifted by one);
target j counts when the mask's byte j + 1 is 1."""
import json
import os
import struct
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt2_reference as gr  # noqa: E402


def read(path, fmt_of_magic):
    with open(path, "rb") as f:
        data = f.read()
    magic, _, n = struct.unpack_from("<3i", data)
    return list(struct.unpack_from(f"<{n}{fmt_of_magic(magic)}", data, 1024))


def main():
    tok_path, mask_path, B, T = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    tokens = read(tok_path, lambda m: "H" if m == 20240520 else "I")
    mask = read(mask_path, lambda m: "B")
    torch.set_num_threads(1)
    with open(os.path.join(gr.OUTDIR, "gpt2_tiny.bin"), "rb") as f:
        P = {k: v.double().requires_grad_(True) for k, v in gr.parse_checkpoint(f.read()).items()}
    w = torch.tensor(tokens[:B * T + 1])
    inputs = w[:-1].reshape(B, T)
    labels = torch.where(torch.tensor(mask[1:B * T + 1]) == 1, w[1:], torch.tensor(-100))
    logits, _ = gr.forward(P, inputs, torch.zeros_like(inputs))
    loss = torch.nn.functional.cross_entropy(logits[..., :gr.V].reshape(-1, gr.V),
                                             labels.reshape(-1), ignore_index=-100)
    loss.backward()
    norm = torch.sqrt(sum((p.grad ** 2).sum() for p in P.values()))
    print(json.dumps({"loss": float(loss), "grad_norm": float(norm)}))


if __name__ == "__main__":
    main()
