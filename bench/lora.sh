#!/usr/bin/env bash
# lora.sh MODEL_DIR TOKENS [STEPS] — LoRA against full fine-tuning on a Llama-family shape (the
# issue's: Llama-3.2-1B, random weights from bench/make_llama_dir.py llama-3.2-1b DIR, tokens
# from bench/random_tokens.py OUT 65536 128256): bf16, ZeRO stage 3, T = 512, micro-batch 1, in
# both process shapes (2 ranks × 1 thread, 1 process × 2 threads): full fine-tuning, LoRA r 16
# on all seven linear modules, and that LoRA with the base offloaded to NVMe (offload_param,
# max_in_cpu 0; the adapters and their optimizer state in RAM). Prints per run: peak RSS per rank,
# model-state bytes per rank (the ledger's, exact), the median step time of steps 2.. and tokens/s,
# then LoRA's ratios to full fine-tuning. A run the memory check refuses is reported as refused
# with the estimate it gave. STEPS defaults to 4. Run by hand; not a test. About 15 minutes on 2
# cores for the 1.2 B shape; ZEROC=/path/to/zeroc overrides build/zeroc; EXTRA adds train flags
# to every run; SHAPES="ranks" or "procs" runs one process shape (default both).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
zeroc=${ZEROC:-$root/build/zeroc}
model=${1:?usage: lora.sh MODEL_DIR TOKENS [STEPS]}
tokens=${2:?usage: lora.sh MODEL_DIR TOKENS [STEPS]}
steps=${3:-4}
if ! [[ $steps =~ ^[0-9]+$ ]] || ((steps < 2)); then
  echo "lora.sh: STEPS must be an integer >= 2 (the first is not timed), got '$steps'" >&2
  exit 2
fi
read -r -a shapes <<< "${SHAPES:-ranks procs}"
for shape in "${shapes[@]}"; do
  if [[ $shape != ranks && $shape != procs ]]; then
    echo "lora.sh: SHAPES takes ranks and procs, got '$shape'" >&2
    exit 2
  fi
done
work=$(mktemp -d "${TMPDIR:-/tmp}/zeroc-lora-XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/swap"
cat > "$work/offload.json" <<EOF
{"zero_optimization": {"stage": 3,
  "offload_param": {"device": "nvme", "nvme_path": "$work/swap", "max_in_cpu": 0}}}
EOF
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) cores"
# EXTRA: train flags added to every run (e.g. EXTRA=--activation-checkpointing)
read -r -a extra <<< "${EXTRA:-}"
common=(train --init "$model" --data "$tokens" --dtype bf16 --stage 3 --seq-len 512
  --micro-batch 1 --steps "$steps" --lr 1e-4 "${extra[@]}")
lora=(--lora-r 16 --lora-alpha 32 --lora-targets all-linear)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

run() { # run SHAPE NAME ARGS...: one run's summary line
  local shape=$1 name=$2
  shift 2
  local rep="$work/$shape-$name.json" log="$work/$shape-$name.log" rc=0
  if [[ $shape == ranks ]]; then
    mpirun --oversubscribe --bind-to none -np 2 -x OMP_NUM_THREADS=1 -x OPENBLAS_NUM_THREADS=1 \
      "$zeroc" "${common[@]}" "$@" --report "$rep" > "$log" 2>&1 || rc=$?
  else
    OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 "$zeroc" "${common[@]}" "$@" --report "$rep" \
      > "$log" 2>&1 || rc=$?
  fi
  python3 - "$shape" "$name" "$rep" "$log" "$rc" <<'PY'
import json, os, statistics, sys
shape, name, rep, log, rc = sys.argv[1:]
if rc != "0" or not os.path.exists(rep):
    why = [l for l in open(log, errors="replace") if "error" in l.lower()][:1]
    print(f"{shape:6} {name:13} refused/failed (rc {rc}): {why[0].strip()[:200] if why else ''}")
    sys.exit(0)
r = json.load(open(rep))
ranks = r["memory"]["ranks"]
rss = max(x["peak_rss"] for x in ranks) / 2**20
states = max(x["params"] + x["grads"] + x["optimizer"] for x in ranks) / 2**20
ms = statistics.median(r["step_ms"][1:])
tok = r["tokens_per_step"] / (ms / 1000)
print(f"{shape:6} {name:13} peak RSS/rank {rss:8.0f} MiB  states/rank {states:8.1f} MiB  "
      f"step {ms:8.0f} ms  {tok:7.1f} tok/s  loss {r['loss'][0]:.4f} -> {r['loss'][-1]:.4f}")
with open(os.environ["SUMMARY"], "a") as f:
    f.write(json.dumps({"shape": shape, "name": name, "rss": rss, "states": states, "tok": tok})
            + "\n")
PY
}

export SUMMARY="$work/summary.jsonl"
for shape in "${shapes[@]}"; do
  run "$shape" full
  run "$shape" lora "${lora[@]}"
  run "$shape" lora-offload "${lora[@]}" --config "$work/offload.json"
done
python3 - "$SUMMARY" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])] if open(sys.argv[1]).read() else []
for shape in ("ranks", "procs"):
    got = {r["name"]: r for r in rows if r["shape"] == shape}
    if "full" not in got:
        continue
    for name in ("lora", "lora-offload"):
        if name in got:
            f, l = got["full"], got[name]
            print(f"{shape}: {name} / full: peak RSS {l['rss'] / f['rss']:.3f}, states "
                  f"{l['states'] / f['states']:.3f}, tokens/s {l['tok'] / f['tok']:.2f}x")
PY
