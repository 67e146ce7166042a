#!/usr/bin/env python3
"""random_tokens.py OUT [N] [VOCAB] — writes an llm.c token file of N (default 2^20) seeded
random token ids below VOCAB (default 50257, GPT-2's), for benchmarks that need data whose
content does not matter: uint16 ids (llm.c's version 1), or uint32 ids (zeroc's version 7, magic
20240801) for a vocabulary past 65,536 (Llama 3's 128,256). python3 stdlib only."""
import random
import struct
import sys

out = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 1 << 20
vocab = int(sys.argv[3]) if len(sys.argv) > 3 else 50257
random.seed(1)
wide = vocab > 65536
hdr = struct.pack("<256i", 20240801 if wide else 20240520, 7 if wide else 1, n, *([0] * 253))
with open(out, "wb") as f:
    f.write(hdr + struct.pack(f"<{n}{'I' if wide else 'H'}",
                              *(random.randrange(vocab) for _ in range(n))))
