#!/usr/bin/env bash
# llama_vs_pytorch.sh [STEPS] [ROUNDS] — zeroc against plain PyTorch (Debian's python3-torch,
# bench/pytorch_llama.py) on Llama-family shapes with random weights, both starting from the
# SAME Hugging Face directory (bench/make_llama_dir.py: config.json + model.safetensors, the
# real config values, weights N(0, 0.02), norms 1) and reading the same windows of one random
# llm.c token file, AdamW lr 1e-4 (betas 0.9/0.999, eps 1e-8, no decay, no clipping).
#
# Per shape and round, for fp32 and bf16 in turn, the runs alternate between the peers (RUNS,
# default "s0-1x2 torch s3-1x2 s0-2x1 s3-2x1"; DTYPES, default "fp32 bf16"):
#   zeroc stage 0, 1 process x 2 threads;  PyTorch 1 process x 2 threads (bf16: torch.autocast);
#   zeroc stage 3, 1 x 2;  zeroc stage 0, 2 ranks x 1 thread (mpirun);  zeroc stage 3, 2 x 1.
# zeroc's bf16 is `--dtype bf16`. Micro-batch MB per rank (default 1): 1 x 2 steps on MB
# sequences, 2 x 1 on 2·MB; tokens/s counts all ranks. The table gives, per configuration,
# tokens/s at the median of its runs' median ms/step (steps after the first two) and at its best
# step (the machine is shared: the best step is the nearest to what it can do), the ratio to
# PyTorch's (same precision, same statistic), the share of zeroc's step outside the linear
# layers' products (rank 0, the report's gemm.ms) and first → last loss (2 x 1: the mean over the
# ranks, over a global batch twice 1 x 2's, so compare PyTorch's losses with 1 x 2's).
#
# SHAPES="name:layers ..." (default "smollm2-135m:0 llama-3.2-1b:2"; layers 0 = all the
# shape's layers; the 1B shape's 16 layers hold ~19.8 GB of fp32 model states in one process,
# too much beside PyTorch's copy on a 24 GiB machine, so by default it runs its first 2 layers
# with the full 128,256-row tied embedding/head). T (default 256), MB (default 1). STEPS (>= 3,
# default 5), ROUNDS (default 2). Token ids are below min(vocabulary, 65,536): llm.c's uint16
# token files cannot hold Llama 3's larger ids. ZEROC=/path/to/zeroc overrides build/zeroc;
# KEEP_RESULTS=FILE keeps the per-run rows (TSV). A zeroc run that fails (e.g. refused by the
# memory check when the host's MemAvailable is short) prints why and leaves its row out.
# About 40 minutes on 2 busy cores with the defaults (STEPS 5: more). Run by hand; not a test.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
steps=${1:-5}
rounds=${2:-2}
T=${T:-256}
MB=${MB:-1}
shapes=${SHAPES:-"smollm2-135m:0 llama-3.2-1b:2"}
runs=${RUNS:-"s0-1x2 torch s3-1x2 s0-2x1 s3-2x1"}
dtypes=${DTYPES:-"fp32 bf16"}
for run in $runs; do
  [[ $run =~ ^(torch|s[03]-(1x2|2x1))$ ]] || { echo "llama_vs_pytorch.sh: RUNS entry '$run' is not torch, s0-1x2, s3-1x2, s0-2x1 or s3-2x1" >&2; exit 2; }
done
for dtype in $dtypes; do
  [[ $dtype =~ ^(fp32|bf16)$ ]] || { echo "llama_vs_pytorch.sh: DTYPES entry '$dtype' is not fp32 or bf16" >&2; exit 2; }
done
if ! [[ $steps =~ ^[0-9]+$ ]] || ((steps < 3)); then
  echo "llama_vs_pytorch.sh: STEPS must be an integer >= 3 (the first 2 are not timed), got '$steps'" >&2
  exit 2
fi
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "llama_vs_pytorch.sh: ROUNDS must be a positive integer, got '$rounds'" >&2; exit 2; }
zeroc=${ZEROC:-$root/build/zeroc}
[[ -f $zeroc && -x $zeroc ]] || { echo "llama_vs_pytorch.sh: no zeroc at $zeroc (build it, or set ZEROC)" >&2; exit 2; }
"$root/scripts/deps.sh" python3-torch python3-numpy
if ! /usr/bin/python3 -c 'import torch, numpy' 2> /dev/null; then
  echo "llama_vs_pytorch.sh: /usr/bin/python3 cannot import torch and numpy, which the PyTorch peer" \
    "and the model writer need (apt-get install python3-torch python3-numpy)" >&2
  exit 2
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/llama_bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# The peer's environment as bench/gpt2_vs_pytorch.sh gives it, for the same reasons (see there):
# glibc's huge pages for malloc (PyTorch maps every large tensor afresh), OpenMP's passive wait
# for its fp32 (OpenBLAS's threads beside OpenMP's), libgomp's default for autocast (oneDNN).
torch_env=(GLIBC_TUNABLES=glibc.malloc.hugetlb=1)
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), family" \
  "$(grep -m1 'cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' ') model" \
  "$(grep -m1 '^model' /proc/cpuinfo | cut -d: -f2 | tr -d ' '); T=$T, micro-batch $MB per rank," \
  "$steps steps per run (median of steps 3-$steps), $rounds rounds; $(date -u '+%Y-%m-%d %H:%M UTC')"
res=$tmp/results.tsv
: > "$res"

zeroc_run() { # shape dir tok procs stage dtype round
  local shape=$1 dir=$2 tok=$3 procs=$4 stage=$5 dtype=$6 round=$7 rc=0
  local args=(train --init "$dir" --data "$tok" --seq-len "$T" --micro-batch "$MB" --steps "$steps"
              --lr 1e-4 --stage "$stage" --dtype "$dtype" --report "$tmp/z.json")
  if [[ $procs == 1x2 ]]; then
    env OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 "$zeroc" "${args[@]}" > "$tmp/z.log" 2>&1 || rc=$?
  else
    mpirun --oversubscribe --bind-to none -np 2 -x OMP_NUM_THREADS=1 -x OPENBLAS_NUM_THREADS=1 \
      "$zeroc" "${args[@]}" > "$tmp/z.log" 2>&1 || rc=$?
  fi
  if ((rc)); then
    echo "  zeroc $shape $procs stage $stage $dtype failed (exit $rc):" >&2
    grep -v -e '^config:' -e '^model:' -e '^step ' -e '^-----' "$tmp/z.log" | head -n 8 >&2
    return
  fi
  python3 - "$tmp/z.json" "$shape" "zeroc-s$stage" "$procs" "$dtype" "$round" >> "$res" <<'PY'
import json, statistics, sys
r = json.load(open(sys.argv[1]))
ms = r["step_ms"][2:]
g = statistics.median(r["gemm"]["ms"][2:])
med = statistics.median(ms)
print("\t".join(sys.argv[2:7] + [f"{med:.1f}", f"{min(ms):.1f}", str(r["tokens_per_step"]),
      f"{1 - g / med:.3f}", f"{r['loss'][0]:.4f}", f"{r['loss'][-1]:.4f}",
      f'{r["memory"]["ranks"][0]["peak_rss"] / 2**30:.2f}']))
PY
  tail -n 1 "$res" | awk -F'\t' '{printf "  %-13s %-8s %-4s %-4s round %s: %8.1f ms/step (min %.1f), %6.0f tok/s, outside products %s, loss %s -> %s\n", $1, $2, $3, $4, $5, $6, $7, $8 / $6 * 1000, $9, $10, $11}'
}

torch_run() { # shape dir tok dtype round
  local shape=$1 dir=$2 tok=$3 dtype=$4 round=$5 out rc=0
  local penv=("${torch_env[@]}" "OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}") pargs=()
  [[ $dtype == bf16 ]] && pargs=(--autocast) && penv=("${torch_env[@]}")
  out=$(env "${penv[@]}" OMP_NUM_THREADS=2 /usr/bin/python3 "$root/bench/pytorch_llama.py" "$dir" \
    "$tok" "$T" "$MB" "$steps" "${pargs[@]}" 2>&1) || rc=$?
  if ((rc)); then
    echo "  pytorch $shape $dtype failed (exit $rc): $(tail -n 3 <<< "$out")" >&2
    return
  fi
  python3 - "$shape" "$dtype" "$round" "$MB" "$T" "$(tail -n 1 <<< "$out")" >> "$res" <<'PY'
import sys
shape, dtype, round_, mb, T, line = sys.argv[1:7]
w = line.split()
loss = w[w.index("losses") + 1:]
print("\t".join([shape, "pytorch", "1x2", dtype, round_, w[2], w[4], str(int(mb) * int(T)), "",
                 f"{float(loss[0]):.4f}", f"{float(loss[-1]):.4f}", ""]))
PY
  tail -n 1 "$res" | awk -F'\t' '{printf "  %-13s %-8s %-4s %-4s round %s: %8.1f ms/step (min %.1f), %6.0f tok/s, loss %s -> %s\n", $1, $2, $3, $4, $5, $6, $7, $8 / $6 * 1000, $10, $11}'
}

for spec in $shapes; do
  shape=${spec%%:*} layers=${spec#*:}
  dir=$tmp/$shape
  /usr/bin/python3 "$root/bench/make_llama_dir.py" "$shape" "$dir" --layers "$layers"
  vocab=$(python3 -c 'import json,sys; print(min(json.load(open(sys.argv[1]))["vocab_size"], 65536))' "$dir/config.json")
  python3 "$root/bench/random_tokens.py" "$tmp/tok.bin" $((1 << 20)) "$vocab"
  for ((round = 1; round <= rounds; round++)); do
    for dtype in $dtypes; do
      for run in $runs; do
        case $run in
          torch) torch_run "$shape" "$dir" "$tmp/tok.bin" "$dtype" "$round" ;;
          s[03]-[12]x[12]) zeroc_run "$shape" "$dir" "$tmp/tok.bin" "${run#*-}" "${run:1:1}" "$dtype" "$round" ;;
        esac
      done
    done
  done
  rm -rf "$dir"
done

[[ -n ${KEEP_RESULTS:-} ]] && cp "$res" "$KEEP_RESULTS"
python3 - "$res" <<'PY'
import collections, statistics, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.rstrip("\n").split("\t")
    rows[tuple(f[:4])].append(f)
def tps(fs, stat):  # tokens/s at the median of the runs' median ms/step, or at the best step
    ms = statistics.median(float(f[5]) for f in fs) if stat is statistics.median else \
        min(float(f[6]) for f in fs)
    return float(fs[0][7]) / ms * 1e3
print(f"\n{'shape':<13} {'run':<8} {'procs':<5} {'dtype':<5} | {'tok/s med':>9} {'best step':>10} | "
      f"{'vs torch med':>12} {'best':>6} | {'outside GEMM':>12} | loss first -> last")
for key in sorted(rows, key=lambda k: (k[0], k[3], k[1] != "pytorch", k[2], k[1])):
    shape, run, procs, dtype = key
    fs = rows[key]
    med, best = tps(fs, statistics.median), tps(fs, min)
    peer = rows.get((shape, "pytorch", "1x2", dtype))
    r = (f"{med / tps(peer, statistics.median):11.2f}x {best / tps(peer, min):5.2f}x"
         if peer and run != "pytorch" else f"{'':12} {'':6}")
    out = statistics.median(float(f[8]) for f in fs) if fs[0][8] else None
    print(f"{shape:<13} {run:<8} {procs:<5} {dtype:<5} | {med:9.0f} {best:10.0f} | {r} | "
          f"{(f'{out:.0%}' if out is not None else ''):>12} | {fs[0][9]} -> {fs[0][10]}"
          f" ({len(fs)} runs)")
PY
