#!/usr/bin/env bash
# hosts_tcp.sh [STEPS] — what a network between hosts costs, and what ZeRO++ gives back: GPT-2
# L=4 C=256 H=4 V=50304 T=128 B=4 on 2 hosts × 1 rank made of network namespaces
# (tests/netns_hosts.sh: TCP only), with the links unlimited, at 10 Gbit/s and at 1 Gbit/s, for
# stages 0–3 and stage 3 with qwZ, qgZ and both (hpZ needs 2+ ranks per host to change
# anything). One row per (link, run): median ms/step over the steps after the first 2, the
# bytes rank 0 sends per step and those that leave its host (from the report), and ms/step over
# stage 0's on the same link. STEPS defaults to 8. Root only. About 5 minutes on 2 cores.
# Run by hand; not a test. ZEROC=/path/to/zeroc overrides "$root/build/zeroc".
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
zeroc=${ZEROC:-$root/build/zeroc}
steps=${1:-8}
if ! [[ $steps =~ ^[0-9]+$ ]] || ((steps < 3)); then
  echo "hosts_tcp.sh: steps must be an integer >= 3 (the first 2 are not timed)" >&2
  exit 2
fi
[[ -x $zeroc ]] || { echo "hosts_tcp.sh: no zeroc at $zeroc (build it, or set ZEROC)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 "$root/bench/random_tokens.py" "$tmp/tok.bin"

printf '%-9s %-12s | %9s %8s | %14s %14s\n' link run ms/step "vs st.0" "bytes/step" \
  "inter-host"
printf '%s\n' "-----------------------+--------------------+-------------------------------"
for rate in "" 10gbit 1gbit; do
  base=""
  for run in stage0 stage1 stage2 stage3 qwZ qgZ qwZ+qgZ; do
    case $run in
      stage*) zero="\"stage\": ${run#stage}" ;;
      qwZ) zero='"stage": 3, "zero_quantized_weights": true' ;;
      qgZ) zero='"stage": 3, "zero_quantized_gradients": true' ;;
      qwZ+qgZ) zero='"stage": 3, "zero_quantized_weights": true, "zero_quantized_gradients": true' ;;
    esac
    echo "{\"zero_optimization\": {$zero}}" >"$tmp/cfg.json"
    "$root/tests/netns_hosts.sh" --hosts 2 --slots 1 ${rate:+--rate $rate} -- \
      -x OMP_NUM_THREADS=1 -x OPENBLAS_NUM_THREADS=1 -x OMP_WAIT_POLICY=passive -np 2 \
      "$zeroc" train --model gpt2 --data "$tmp/tok.bin" --layers 4 --channels 256 --heads 4 \
      --vocab 50304 --seq-len 128 --micro-batch 4 --steps "$steps" --config "$tmp/cfg.json" \
      --report "$tmp/r.json" </dev/null >/dev/null
    read -r ms sent inter < <(/usr/bin/python3 -c '
import json, statistics, sys
r = json.load(open(sys.argv[1]))
print(statistics.median(r["step_ms"][2:]), r["comm"]["bytes_per_step"]["total"],
      r["comm"]["inter_host_bytes_per_step"]["total"])' "$tmp/r.json")
    base=${base:-$ms}
    printf '%-9s %-12s | %9.1f %7.2fx | %14.0f %14.0f\n' "${rate:-unlimited}" "$run" "$ms" \
      "$(echo "$ms / $base" | bc -l)" "$sent" "$inter"
  done
done
