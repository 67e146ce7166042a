#!/usr/bin/env python3
"""random_tokens.py OUT [N] [VOCAB] — writes an llm.c token file of N (default 2^20) seeded
random token ids below VOCAB (default 50257, GPT-2's), for benchmarks that need data whose
content does not matter. python3 stdlib only."""
import random
import struct
import sys

out = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 1 << 20
vocab = int(sys.argv[3]) if len(sys.argv) > 3 else 50257
random.seed(1)
hdr = struct.pack("<256i", 20240520, 1, n, *([0] * 253))
with open(out, "wb") as f:
    f.write(hdr + struct.pack(f"<{n}H", *(random.randrange(vocab) for _ in range(n))))
