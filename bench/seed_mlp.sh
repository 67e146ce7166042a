#!/usr/bin/env bash
# seed_mlp.sh [N] [STEPS] — the reference MLP scenario: MLP 12 × Linear(2048) + ReLU,
# batch 32 per rank, Adam lr 1e-3, on N ranks (default 4) for stages 0–3. Prints, per stage,
# rank 0's model-state bytes (ledger), the expected value (the ZeRO paper's formula), peak RSS per rank, comm
# per step, and the median ms per step (steps after the first). Run by hand; not a test.
# ZEROC=/path/to/zeroc overrides "$root/build/zeroc".
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
zeroc=${ZEROC:-$root/build/zeroc}
n=${1:-4}; steps=${2:-10}
if ! [[ $n =~ ^[1-9][0-9]*$ ]]; then
  echo "seed_mlp.sh: N must be a positive integer (ranks), got '$n'" >&2; exit 2
fi
if ! [[ $steps =~ ^[1-9][0-9]*$ ]]; then
  echo "seed_mlp.sh: STEPS must be a positive integer, got '$steps'" >&2; exit 2
fi
[[ -f $zeroc && -x $zeroc ]] || { echo "seed_mlp.sh: no zeroc at $zeroc (build it, or set ZEROC)" >&2; exit 2; }
out=$(mktemp -d)
cfg=$out/ds.json
# Prefetch one unit (4,196,352 elements) ahead: DeepSpeed's default 5e7 would prefetch the
# whole 50 M-parameter model and hide stage 3's saving in working memory.
echo '{"zero_optimization": {"stage3_prefetch_bucket_size": 4200000}}' > "$cfg"
for s in 0 1 2 3; do
  "$root/tests/mpirun.sh" "$n" "$zeroc" train --model mlp --stage "$s" --steps "$steps" \
    --config "$cfg" --report "$out/s$s.json" > "$out/s$s.log"
done
python3 - "$out" "$n" <<'PY'
import json, statistics, sys
out, n = sys.argv[1], int(sys.argv[2])
print(f"seed MLP, N = {n}: 12 x Linear(2048), batch 32/rank, fp32 Adam")
print(f"{'stage':>5} {'states MB':>10} {'expected MB':>12} {'working pk MB':>13} {'peak RSS MB (per rank)':>30} {'comm MB/step':>12} {'ms/step':>8}")
base = None
for s in range(4):
    r = json.load(open(f"{out}/s{s}.json"))
    m = r["memory"]["ranks"]
    states = m[0]["params"] + m[0]["grads"] + m[0]["optimizer"]
    psi = r["params_padded"]
    exp = {0: 16 * psi, 1: 8 * psi + 8 * psi // n, 2: 4 * psi + 12 * psi // n, 3: 16 * psi // n}[s]
    rss = " ".join(f"{x['peak_rss'] / 1e6:.0f}" for x in m)
    ms = statistics.median(r["step_ms"][1:]) if len(r["step_ms"]) > 1 else r["step_ms"][0]
    print(f"{s:>5} {states / 1e6:>10.1f} {exp / 1e6:>12.1f} {m[0]['working_peak'] / 1e6:>13.1f} {rss:>30} "
          f"{r['comm']['bytes_per_step']['total'] / 1e6:>12.1f} {ms:>8.1f}")
PY
