#!/usr/bin/env bash
# mixed_precision.sh [STEPS_A [STEPS_B]] — what mixed precision buys: trains GPT-2 with zeroc on
# N=2 ranks (mpirun, one BLAS/OpenMP thread per rank) for every ZeRO stage 0–3 with --dtype fp32
# and --dtype bf16, on a random-token llm.c file, for
#   (a) L=4 C=256 H=4 V=50304 T=128 B=4   and   (b) GPT-2 124M (L=12 C=768 H=12 V=50257) T=64 B=4,
# and prints one row per (shape, stage, dtype): median ms/step over the steps after the first 2,
# tokens/s, rank 0's model states (params + grads + optimizer, from the report's memory.ranks[0])
# in MB (1e6 bytes) and MiB, rank 0's peak RSS in MiB, and on bf16 rows the bf16/fp32 ratios of
# tokens/s, model states and peak RSS at the same stage. Steps default to 8 for (a) and 5 for (b);
# STEPS_A sets both unless STEPS_B is given. About 5 minutes on 2 cores.
# Run by hand; not a test. ZEROC=/path/to/zeroc overrides "$root/build/zeroc".
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
zeroc=${ZEROC:-$root/build/zeroc}
steps_a=${1:-8}
steps_b=${2:-${1:-5}}
for s in "$steps_a" "$steps_b"; do
  if ! [[ $s =~ ^[0-9]+$ ]] || ((s < 3)); then
    echo "mixed_precision.sh: steps must be an integer >= 3 (the first 2 are not timed)" >&2
    exit 2
  fi
done
[[ -f $zeroc && -x $zeroc ]] || { echo "mixed_precision.sh: no zeroc at $zeroc (build it, or set ZEROC)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
start=$(date +%s)

/usr/bin/python3 "$root/bench/random_tokens.py" "$tmp/tok.bin"

mpi=(env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  mpirun --oversubscribe --bind-to none -np 2
  -x OPENBLAS_NUM_THREADS=1 -x OMP_NUM_THREADS=1)

printf '%-5s %5s %5s | %9s %9s | %10s %11s | %8s | %-24s\n' shape stage dtype ms/step tok/s \
  "states MB" "states MiB" "RSS MiB" "bf16/fp32 tok/s states RSS"
printf '%s\n' "-------------------+---------------------+-------------------------+----------+---------------------------"

run() { # name L C H V T B steps stage dtype
  local name=$1 L=$2 C=$3 H=$4 V=$5 T=$6 B=$7 steps=$8 stage=$9 dtype=${10}
  local tag="$name-s$stage-$dtype"
  if ! "${mpi[@]}" "$zeroc" train --model gpt2 --data "$tmp/tok.bin" --layers "$L" \
      --channels "$C" --heads "$H" --vocab "$V" --seq-len "$T" --micro-batch "$B" \
      --steps "$steps" --lr 1e-4 --stage "$stage" --dtype "$dtype" \
      --report "$tmp/$tag.json" > "$tmp/$tag.log" 2>&1; then
    echo "mixed_precision.sh: $tag failed; its output:" >&2
    tail -n 30 "$tmp/$tag.log" >&2
    exit 1
  fi
  python3 - "$tmp" "$name" "$stage" "$dtype" <<'PY'
import json, statistics, sys
tmp, name, stage, dtype = sys.argv[1:5]
def row(dt):
    r = json.load(open(f"{tmp}/{name}-s{stage}-{dt}.json"))
    assert r["dtype"] == dt and r["stage"] == int(stage) and r["world_size"] == 2, (r["dtype"], r["stage"])
    ms = statistics.median(r["step_ms"][2:])
    m = r["memory"]["ranks"][0]
    states = m["params"] + m["grads"] + m["optimizer"]
    return ms, r["tokens_per_step"] / (ms / 1e3), states, m["peak_rss"]
ms, tps, states, rss = row(dtype)
ratios = ""
if dtype == "bf16":
    _, tps32, states32, rss32 = row("fp32")
    ratios = f"{tps / tps32:15.2f} {states / states32:6.2f} {rss / rss32:4.2f}"
print(f"{name:<5} {stage:>5} {dtype:>5} | {ms:9.1f} {tps:9.0f} | {states / 1e6:10.1f} "
      f"{states / 2**20:11.1f} | {rss / 2**20:8.1f} | {ratios}", flush=True)
PY
}

for stage in 0 1 2 3; do
  for dtype in fp32 bf16; do
    run a 4 256 4 50304 128 4 "$steps_a" "$stage" "$dtype"
  done
done
for stage in 0 1 2 3; do
  for dtype in fp32 bf16; do
    run b 12 768 12 50257 64 4 "$steps_b" "$stage" "$dtype"
  done
done
echo "total $(($(date +%s) - start)) s; N=2 ranks, steps (a) $steps_a (b) $steps_b, $zeroc"
