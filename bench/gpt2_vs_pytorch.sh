#!/usr/bin/env bash
# gpt2_vs_pytorch.sh [STEPS] — zeroc against PyTorch (Debian's python3-torch) on the same GPT-2,
# the same initial weights, the same random-token file and the same data order, AdamW, for
#   (a) L=4 C=256 H=4 V=50304 T=128 B=4   and   (b) GPT-2 124M (L=12 C=768 H=12 V=50257) T=64 B=4,
# each as 1 process × 2 threads and as 2 processes × 1 thread (zeroc: mpirun, stage 0;
# PyTorch: gloo DistributedDataParallel), in fp32 and in bf16 (zeroc --dtype bf16; PyTorch
# torch.autocast bf16). Before each shape, zeroc writes its initial weights (one step at --lr 0,
# --save-weights) and the peer loads them (bench/pytorch_gpt2.py --init), so the first losses
# agree to rounding in fp32 and any gap there is a numerical difference, not another draw.
# One row each: median ms/step after two warm-up steps, the speed ratio, zeroc's model GFLOP/s
# against this machine's measured peak (bench_peak: FMA for fp32, the best bf16 unit for bf16),
# the share of zeroc's step outside the models' matrix products (rank 0), both first and last
# losses (2 processes: the mean over the ranks, for both; a peer slowed by bad numerics shows in
# them) and the gap between the first losses (fp32: ~1e-7; bf16: ~1e-4, the two round
# differently). STEPS (at least 3) defaults to 8. About 10 minutes on 2 cores. Run by hand;
# not a test.
# ZEROC=/path/to/zeroc overrides "$root/build/zeroc"; BENCH_PEAK=/path/to/bench_peak overrides
# bench_peak beside it. SHAPES="name L C H V T B;..." replaces the two shapes (e.g.
# SHAPES="tiny 2 64 4 50304 32 2" to try the script in seconds).
# On another host (the AMX machine, where zeroc runs from a relocatable archive and there is no
# mpirun): PROCS="1x2 1x8" picks the process shapes (1xN: one process of N threads; 2x1: two
# processes of one, needs mpirun; default "1x2 2x1"), CPUS=0-7 pins every program (zeroc, the
# peer, bench_peak) with taskset, PYTHON=python3 names the peer's interpreter (default
# /usr/bin/python3, Debian's torch, installed here when missing; another is used as it is).
# DTYPES="bf16" runs one precision (default "fp32 bf16").
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
steps=${1:-8}
if ! [[ $steps =~ ^[0-9]+$ ]] || ((steps < 3)); then
  echo "gpt2_vs_pytorch.sh: STEPS must be an integer >= 3 (the first 2 are not timed), got '$steps'" >&2
  exit 2
fi
zeroc=${ZEROC:-$root/build/zeroc}
peak=${BENCH_PEAK:-$(dirname "$zeroc")/bench_peak}
shapes=${SHAPES:-"a 4 256 4 50304 128 4;b 12 768 12 50257 64 4"}
procs_list=${PROCS:-"1x2 2x1"}
dtypes=${DTYPES:-"fp32 bf16"}
for dtype in $dtypes; do
  [[ $dtype == fp32 || $dtype == bf16 ]] ||
    { echo "gpt2_vs_pytorch.sh: DTYPES entry '$dtype' is not fp32 or bf16" >&2; exit 2; }
done
python=${PYTHON:-/usr/bin/python3}
pin=()
[[ -n ${CPUS:-} ]] && pin=(taskset -c "$CPUS")
for procs in $procs_list; do
  if ! [[ $procs =~ ^(1x[1-9][0-9]*|2x1)$ ]]; then
    echo "gpt2_vs_pytorch.sh: PROCS entry '$procs' is not 1xN (one process of N threads) or 2x1" >&2
    exit 2
  fi
done
IFS=';' read -r -a shape_list <<< "$shapes"
for sh in "${shape_list[@]}"; do
  if ! [[ $sh =~ ^\ *[A-Za-z0-9_]+(\ +[1-9][0-9]*){6}\ *$ ]]; then
    echo "gpt2_vs_pytorch.sh: SHAPES entry '$sh' is not 'name L C H V T B' (positive integers)" >&2
    exit 2
  fi
done
[[ -f $zeroc && -x $zeroc ]] || { echo "gpt2_vs_pytorch.sh: no zeroc at $zeroc (build it, or set ZEROC)" >&2; exit 2; }
[[ -f $peak && -x $peak ]] || { echo "gpt2_vs_pytorch.sh: no bench_peak at $peak (built with zeroc; or set BENCH_PEAK)" >&2; exit 2; }
[[ -z ${PYTHON:-} ]] && "$root/scripts/deps.sh" python3-torch
if ! "$python" -c 'import torch' 2> /dev/null; then
  echo "gpt2_vs_pytorch.sh: $python cannot import torch, which the PyTorch peer needs: install" \
    "Debian's python3-torch (apt-get install python3-torch)" >&2
  exit 2
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Each program runs with the OpenMP wait policy it is fastest with (GPT-2 124M, 1 process x 2
# threads, measured on an AMD EPYC with AVX512_BF16): zeroc and PyTorch's bf16 autocast (both
# oneDNN on OpenMP's threads) with libgomp's default, idle threads spinning briefly (passive made
# them 5-8% and 16% slower); PyTorch's fp32 (OpenBLAS's own threads beside OpenMP's) with
# passive (the default made it 1.8-2x slower). A policy already in the environment applies to all.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# PyTorch's CPU allocator returns every large tensor to the kernel and maps the next one afresh;
# on virtual machines where a page fault is expensive that made it 5-8x slower (x + x on a
# 256 x 50304 tensor: 92 ms, 17 ms with this). glibc's transparent huge pages for malloc (glibc
# >= 2.35) is the peer's counterpart of zeroc's MADV_HUGEPAGE blocks and buffer reuse.
torch_env=(GLIBC_TUNABLES=glibc.malloc.hugetlb=1)
"$python" "$root/bench/random_tokens.py" "$tmp/tok.bin"
"${pin[@]}" "$peak" > "$tmp/peak.txt"
# bench_peak measures 1 thread and every core it may use; a thread count of PROCS between the two
# is measured on its own, on that many cores (the first n)
for procs in $procs_list; do
  n=${procs#1x}; [[ $procs == 2x1 ]] && n=2
  awk -v n="$n" '$3 == n {f = 1} END {exit !f}' "$tmp/peak.txt" ||
    taskset -c "0-$((n - 1))" "$peak" | awk -v n="$n" '$3 == n' >> "$tmp/peak.txt"
done
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-); peaks (GFLOP/s, threads):" \
  "$(awk '$3 > 1 {printf "%s@%s %s  ", $2, $3, $4}' "$tmp/peak.txt")"
printf '%-5s %-5s %-5s | %9s %9s %7s | %22s | %8s | %-33s | %s\n' shape procs dtype "zeroc ms" \
  "torch ms" "speed" "zeroc GFLOP/s (% peak)" "no-GEMM" "loss first→last zeroc / torch" \
  "|first loss zeroc - torch|"

run() { # name L C H V T B procs dtype
  local name=$1 L=$2 C=$3 H=$4 V=$5 T=$6 B=$7 procs=$8 dtype=$9 pl
  local zargs=(train --model gpt2 --data "$tmp/tok.bin" --layers "$L" --channels "$C" --heads "$H"
               --vocab "$V" --seq-len "$T" --micro-batch "$B" --steps "$steps" --lr 1e-4
               --dtype "$dtype" --report "$tmp/z.json")
  local pargs=("$tmp/tok.bin" "$L" "$C" "$H" "$V" "$T" "$B" "$steps" --init "$tmp/$name-init.safetensors")
  local penv=("${torch_env[@]}" "OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}")
  [[ $dtype == bf16 ]] && pargs+=(--autocast) && penv=("${torch_env[@]}")
  if [[ $procs == 1x* ]]; then
    local n=${procs#1x}
    "${pin[@]}" env OMP_NUM_THREADS="$n" OPENBLAS_NUM_THREADS="$n" "$zeroc" "${zargs[@]}" > "$tmp/z.log"
    pl=$("${pin[@]}" env "${penv[@]}" OMP_NUM_THREADS="$n" "$python" "$root/bench/pytorch_gpt2.py" \
      "${pargs[@]}")
  else
    mpirun --oversubscribe --bind-to none -np 2 ${OMP_WAIT_POLICY:+-x OMP_WAIT_POLICY} "$zeroc" "${zargs[@]}" \
      > "$tmp/z.log"
    pl=$(env "${penv[@]}" "$python" "$root/bench/pytorch_gpt2.py" "${pargs[@]}" \
      --ranks 2)
  fi
  python3 - "$tmp" "$name" "$procs" "$dtype" "$L" "$C" "$V" "$T" "$B" "$pl" <<'PY'
import json, statistics, sys
tmp, name, procs, dtype = sys.argv[1:5]
L, C, V, T, B = map(int, sys.argv[5:10])
py = sys.argv[10].split()
r = json.load(open(f"{tmp}/z.json"))
zms, pms = statistics.median(r["step_ms"][2:]), float(py[2])
tl = [float(x) for x in py[py.index("losses") + 1:]]
Vp = (V + 127) // 128 * 128
params = Vp * C + T * C + L * (12 * C * C + 13 * C) + 2 * C
ranks = r["world_size"]
flops = ranks * (6 * params * B * T + L * 6 * 2 * B * T * T * C)  # all ranks, fwd + bwd
threads = 2 if procs == "2x1" else int(procs[2:])
peaks = {l.split()[1]: float(l.split()[3]) for l in open(f"{tmp}/peak.txt")
         if int(l.split()[2]) == threads}
unit = next(k for k in (["bf16_amx_tiles", "bf16_dot_avx512"] if dtype == "bf16" else [])
            + ["fp32_fma_avx512", "fp32_fma_avx2"] if k in peaks)
g = flops / zms / 1e6
outside = 1 - statistics.median(r["gemm"]["ms"][2:]) / zms  # rank 0's share outside products
print(f"{name:<5} {procs:<5} {dtype:<5} | {zms:9.1f} {pms:9.1f} {pms / zms:6.2f}x | "
      f"{g:7.1f} ({g / peaks[unit]:4.0%} {unit}) | {outside:8.0%} | "
      f"{r['loss'][0]:.3f}→{r['loss'][-1]:.3f} / {tl[0]:.3f}→{tl[-1]:.3f} | "
      f"{abs(r['loss'][0] - tl[0]):.1e}", flush=True)
PY
}

init() { # name L C H V T B: zeroc's initial weights, as every run below draws them (a step at
  # learning rate 0 changes no weight; the seed, not the ranks or the dtype, sets them)
  local name=$1 L=$2 C=$3 H=$4 V=$5 T=$6 B=$7
  if ! "${pin[@]}" env OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 "$zeroc" train --model gpt2 --data "$tmp/tok.bin" \
      --layers "$L" --channels "$C" --heads "$H" --vocab "$V" --seq-len "$T" --micro-batch "$B" \
      --steps 1 --lr 0 --save-weights "$tmp/$name-init.safetensors" > "$tmp/init.log" 2>&1; then
    echo "gpt2_vs_pytorch.sh: zeroc could not write the initial weights of shape $name; its output:" >&2
    tail -n 30 "$tmp/init.log" >&2
    exit 1
  fi
}

for shape in "${shape_list[@]}"; do
  read -r -a sh <<< "$shape"
  init "${sh[@]}"
  for procs in $procs_list; do
    for dtype in $dtypes; do
      run "${sh[@]}" "$procs" "$dtype"
    done
  done
done
