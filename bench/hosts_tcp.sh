#!/usr/bin/env bash
# hosts_tcp.sh [--shape small|124m] [--slots S] [--rates "unlimited 10gbit 1gbit"] [--steps N]
# — what a network between hosts costs, and what ZeRO++ gives back: GPT-2 on 2 hosts × S ranks
# made of network namespaces (tests/netns_hosts.sh: TCP only, tc tbf on every link), for
# stages 0–3 and stage 3 with qwZ, hpZ (S ≥ 2 only: with one rank per host it changes nothing),
# qgZ and all of them. Shapes: small = L=4 C=256 H=4 V=50304 T=128 B=4 (default), 124m = GPT-2
# 124M (L=12 C=768 H=12 V=50304) T=64 B=4. One row per (link, run): median ms/step over the
# steps after the first 2, the bytes rank 0 sends per step and those that leave its host (from
# the report), ms/step over stage 0's on the same link, and rank 0's peak RSS. STEPS defaults
# to 8. Root only. Every rank gets one thread (2 hosts × 2 ranks oversubscribe 2 cores). About
# 5 minutes on 2 cores for the small shape and S = 1, 25 for 124M.
# Run by hand; not a test. ZEROC=/path/to/zeroc overrides "$root/build/zeroc".
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
zeroc=${ZEROC:-$root/build/zeroc}
shape=small slots=1 rates="unlimited 10gbit 1gbit" steps=8
while [ $# -gt 0 ]; do
  case $1 in
    --shape) shape=$2; shift 2 ;;
    --slots) slots=$2; shift 2 ;;
    --rates) rates=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    *) echo "hosts_tcp.sh: unknown option '$1' (see the comment at the top)" >&2; exit 2 ;;
  esac
done
case $shape in
  small) model=(--layers 4 --channels 256 --heads 4 --vocab 50304 --seq-len 128 --micro-batch 4) ;;
  124m) model=(--layers 12 --channels 768 --heads 12 --vocab 50304 --seq-len 64 --micro-batch 4) ;;
  *) echo "hosts_tcp.sh: --shape must be small or 124m, not '$shape'" >&2; exit 2 ;;
esac
if ! [[ $steps =~ ^[0-9]+$ ]] || ((steps < 3)); then
  echo "hosts_tcp.sh: --steps must be an integer >= 3 (the first 2 are not timed)" >&2
  exit 2
fi
if ! [[ $slots =~ ^[1-4]$ ]]; then
  echo "hosts_tcp.sh: --slots must be 1 to 4, not '$slots'" >&2
  exit 2
fi
[[ -f $zeroc && -x $zeroc ]] || { echo "hosts_tcp.sh: no zeroc at $zeroc (build it, or set ZEROC)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 "$root/bench/random_tokens.py" "$tmp/tok.bin"

runs=(stage0 stage1 stage2 stage3 qwZ)
((slots >= 2)) && runs+=(hpZ)
runs+=(qgZ all)
echo "GPT-2 $shape, 2 hosts x $slots rank(s), $steps steps"
printf '%-9s %-8s | %9s %8s | %14s %14s | %8s\n' link run ms/step "vs st.0" "bytes/step" \
  "inter-host" "RSS MiB"
printf '%s\n' "------------------+--------------------+-------------------------------+---------"
for rate in $rates; do
  base=""
  for run in "${runs[@]}"; do
    qw='"zero_quantized_weights": true' qg='"zero_quantized_gradients": true'
    hp="\"zero_hpz_partition_size\": $slots"
    case $run in
      stage*) zero="\"stage\": ${run#stage}" ;;
      qwZ) zero="\"stage\": 3, $qw" ;;
      hpZ) zero="\"stage\": 3, $hp" ;;
      qgZ) zero="\"stage\": 3, $qg" ;;
      all) zero="\"stage\": 3, $qw, $qg"; ((slots >= 2)) && zero+=", $hp" ;;
    esac
    echo "{\"zero_optimization\": {$zero}}" >"$tmp/cfg.json"
    link=()
    [ "$rate" != unlimited ] && link=(--rate "$rate")
    "$root/tests/netns_hosts.sh" --hosts 2 --slots "$slots" "${link[@]}" -- \
      -x OMP_NUM_THREADS=1 -x OPENBLAS_NUM_THREADS=1 \
      -np $((2 * slots)) "$zeroc" train --model gpt2 --data "$tmp/tok.bin" "${model[@]}" \
      --steps "$steps" --config "$tmp/cfg.json" --report "$tmp/r.json" </dev/null >/dev/null
    read -r ms sent inter rss < <(/usr/bin/python3 -c '
import json, statistics, sys
r = json.load(open(sys.argv[1]))
print(statistics.median(r["step_ms"][2:]), r["comm"]["bytes_per_step"]["total"],
      r["comm"]["inter_host_bytes_per_step"]["total"], r["memory"]["ranks"][0]["peak_rss"] / 2**20)' \
      "$tmp/r.json")
    base=${base:-$ms}
    printf '%-9s %-8s | %9.1f %7.2fx | %14.0f %14.0f | %8.0f\n' "$rate" "$run" "$ms" \
      "$(echo "$ms / $base" | bc -l)" "$sent" "$inter" "$rss"
  done
done
