#!/usr/bin/env bash
# gpt2_vs_pytorch.sh [STEPS] — trains the same GPT-2 with zeroc (one process, stage 0, 2 BLAS /
# OpenMP threads) and with Debian's PyTorch (one process, 2 threads), same shapes, AdamW, same
# random-token file, and prints tokens/s of both and the ratio, for
#   (a) L=4 C=256 H=4 V=50304 T=128 B=4   and   (b) GPT-2 124M (L=12 C=768 H=12 V=50257) T=64 B=4.
# Also prints zeroc's model FLOPs utilisation against the machine's sgemm peak (MACHINE-FACTS:
# ~200 GFLOP/s AVX2 on 2 threads). Run by hand; not a test. Needs python3-torch and numpy.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
steps=${1:-12}
tmp=$(mktemp -d)
# passive: idle OpenMP threads must not spin on the cores OpenBLAS needs (5–10x on mixed kernels)
export OPENBLAS_NUM_THREADS=2 OMP_NUM_THREADS=2 OMP_WAIT_POLICY=passive
/usr/bin/python3 "$root/bench/random_tokens.py" "$tmp/tok.bin"
run() { # name L C H V T B
  local name=$1 L=$2 C=$3 H=$4 V=$5 T=$6 B=$7
  "$root/build/zeroc" train --model gpt2 --data "$tmp/tok.bin" --layers "$L" --channels "$C" \
    --heads "$H" --vocab "$V" --seq-len "$T" --micro-batch "$B" --steps "$steps" --lr 1e-4 \
    --report "$tmp/$name.json" > "$tmp/$name.log"
  local zms
  zms=$(python3 -c "import json,statistics;r=json.load(open('$tmp/$name.json'));print(statistics.median(r['step_ms'][2:]))")
  local py
  py=$(/usr/bin/python3 "$root/bench/pytorch_gpt2.py" "$tmp/tok.bin" "$L" "$C" "$H" "$V" "$T" "$B" "$steps")
  local pms
  pms=$(echo "$py" | awk '{print $3}')
  python3 - "$name" "$zms" "$pms" "$L" "$C" "$V" "$T" "$B" <<'PY'
import sys
name, zms, pms = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
L, C, V, T, B = map(int, sys.argv[4:9])
Vp = (V + 127) // 128 * 128
params = Vp * C + T * C + L * (12 * C * C + 13 * C) + 2 * C
flops = 6 * params * B * T + L * 6 * 2 * B * T * T * C  # matmuls + attention, fwd+bwd
tok = B * T
print(f"{name}: zeroc {zms:.1f} ms/step ({tok / zms * 1e3:.0f} tok/s), pytorch {pms:.1f} ms/step "
      f"({tok / pms * 1e3:.0f} tok/s), zeroc/pytorch speed {pms / zms:.2f}x, "
      f"zeroc {flops / zms / 1e6:.1f} GFLOP/s = {flops / zms / 1e6 / 200 * 100:.0f}% of the AVX2 "
      f"2-thread sgemm peak")
PY
}
run a 4 256 4 50304 128 4
run b 12 768 12 50257 64 4
