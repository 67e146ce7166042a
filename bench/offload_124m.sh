#!/usr/bin/env bash
# offload_124m.sh [DIR [STEPS]] — what offload to NVMe costs: GPT-2 124M (L=12 C=768 H=12
# V=50257) T=64 B=4, bf16, ZeRO stage 3, trained in RAM, with the optimizer offloaded, and with
# the optimizer and the parameters offloaded (max_in_cpu 0), each as 2 ranks × 1 thread and as
# 1 process × 2 threads, swap files in DIR (default build/bench-offload: the disk the build is
# on). One row per run: median ms/step over the steps after the first 2, rank 0's RAM model
# states, bytes on disk and peak RSS, its disk read/write MB/s over the step and the time the
# training thread waited on the disk. Before the runs, dd with O_DIRECT writes and reads 4 GiB
# in 1 MiB blocks on the same path (two files at once for the 2-rank shape) — the yardstick of
# the achieved rates. A last run switches the sub-group overlap off (pipeline_read/write false):
# its extra time is what the overlap hides. "disk" is the ms the step's traffic (all ranks) takes
# at dd's rates, "hidden" the share of it the training thread did not wait for. STEPS defaults
# to 6. About 5 minutes on 2 cores. Run by hand; not a test.
# ZEROC=/path/to/zeroc overrides "$root/build/zeroc".
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
zeroc=${ZEROC:-$root/build/zeroc}
dir=${1:-$root/build/bench-offload}
steps=${2:-6}
if ! [[ $steps =~ ^[0-9]+$ ]] || ((steps < 3)); then
  echo "offload_124m.sh: STEPS must be an integer >= 3 (the first 2 are not timed), got '$steps'" >&2
  exit 2
fi
[[ -f $zeroc && -x $zeroc ]] || { echo "offload_124m.sh: no zeroc at $zeroc (build it, or set ZEROC)" >&2; exit 2; }
rm -rf "$dir"; mkdir -p "$dir"
trap 'rm -rf "$dir"' EXIT
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) cores; disk: $(df -h "$dir" | awk 'NR==2 {print $1, $2}')"

# dd, O_DIRECT, 1 MiB blocks: one stream, and two at once (what two ranks do)
dd_rate() { # files... → MB/s of the writes, then of the reads
  local t0 t1 t2 n=$#
  t0=$(date +%s.%N)
  for f in "$@"; do dd if=/dev/zero of="$f" bs=1M count=$((4096 / n)) oflag=direct conv=fsync status=none & done
  wait; t1=$(date +%s.%N)
  for f in "$@"; do dd if="$f" of=/dev/null bs=1M iflag=direct status=none & done
  wait; t2=$(date +%s.%N)
  rm -f "$@"
  python3 -c "print(f'{4096 * 1.048576 / ($t1 - $t0):.0f} {4096 * 1.048576 / ($t2 - $t1):.0f}')"
}
read -r dd1w dd1r < <(dd_rate "$dir/dd0")
read -r dd2w dd2r < <(dd_rate "$dir/dd0" "$dir/dd1")
echo "dd O_DIRECT 4 GiB: 1 stream write $dd1w MB/s read $dd1r MB/s; 2 streams write $dd2w read $dd2r MB/s"

/usr/bin/python3 "$root/bench/random_tokens.py" "$dir/tok.bin"
cat > "$dir/opt.json" <<EOF
{"zero_optimization": {"offload_optimizer": {"device": "nvme", "nvme_path": "$dir"}}}
EOF
cat > "$dir/both.json" <<EOF
{"zero_optimization": {"offload_optimizer": {"device": "nvme", "nvme_path": "$dir"},
                       "offload_param": {"device": "nvme", "nvme_path": "$dir", "max_in_cpu": 0}}}
EOF
cat > "$dir/serial.json" <<EOF
{"zero_optimization": {"offload_optimizer": {"device": "nvme", "nvme_path": "$dir",
                                             "pipeline_read": false, "pipeline_write": false},
                       "offload_param": {"device": "nvme", "nvme_path": "$dir", "max_in_cpu": 0}}}
EOF
echo '{}' > "$dir/ram.json"

printf '%-10s %-6s | %8s | %10s %10s %9s | %8s %8s %8s | %9s %-49s | %5s %7s\n' shape mode \
  ms/step "RAM states" "disk MiB" "RSS MiB" "read MB/s" "write" "wait ms" "update ms" \
  "update r+w MB/s (vs dd)" "disk" "hidden"
run() { # shape mode
  local shape=$1 mode=$2 tag="$1-$2"
  local launch
  if [[ $shape == 2x1 ]]; then
    launch=(env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe
            --bind-to none -np 2 -x OPENBLAS_NUM_THREADS=1 -x OMP_NUM_THREADS=1)
  else
    launch=(env OPENBLAS_NUM_THREADS=2 OMP_NUM_THREADS=2)
  fi
  if ! "${launch[@]}" "$zeroc" train --model gpt2 --data "$dir/tok.bin" --layers 12 \
      --channels 768 --heads 12 --vocab 50257 --seq-len 64 --micro-batch 4 --steps "$steps" \
      --lr 1e-4 --stage 3 --dtype bf16 --config "$dir/$mode.json" --report "$dir/$tag.json" \
      > "$dir/$tag.log" 2>&1; then
    echo "offload_124m.sh: $tag failed; its output:" >&2
    tail -n 30 "$dir/$tag.log" >&2
    exit 1
  fi
  python3 - "$dir/$tag.json" "$shape" "$mode" "$dd2w" "$dd2r" "$dd1w" "$dd1r" <<'PY'
import json, statistics, sys
r = json.load(open(sys.argv[1]))
ms = r["step_ms"][2:]
m = r["memory"]["ranks"][0]
states = m["params"] + m["grads"] + m["optimizer"]
row = f"{sys.argv[2]:<10} {sys.argv[3]:<6} | {statistics.median(ms):8.0f} | {states / 2**20:10.1f} " \
      f"{m['nvme'] / 2**20:10.1f} {m['peak_rss'] / 2**20:9.1f} |"
if "offload" in r:
    o = r["offload"]
    rd = statistics.median(b / t / 1e3 for b, t in zip(o["read_bytes"][2:], ms))
    wr = statistics.median(b / t / 1e3 for b, t in zip(o["written_bytes"][2:], ms))
    wait = statistics.median(o["wait_ms"][2:])
    um = statistics.median(o["update_ms"][2:])
    # the ranks stream their updates at the same time: the device sees N times rank 0's rate
    n = r["world_size"]
    ur = n * sum(o["update_read_bytes"][2:]) / sum(o["update_ms"][2:]) / 1e3
    uw = n * sum(o["update_written_bytes"][2:]) / sum(o["update_ms"][2:]) / 1e3
    dd = dict(zip(("w2", "r2", "w1", "r1"), map(float, sys.argv[4:8])))
    ddr, ddw = (dd["r2"], dd["w2"]) if n == 2 else (dd["r1"], dd["w1"])
    # hidden: the share of the step's disk work (all ranks' bytes at dd's rates) that the
    # training thread did not wait for
    busy = n * (rd / ddr + wr / ddw) * statistics.median(ms)
    hidden = 1 - wait / busy if busy else 0
    row += (f" {rd:8.0f} {wr:8.0f} {wait:8.0f} | {um:9.0f} {ur:5.0f} + {uw:4.0f} "
            f"({ur / ddr:.0%} of dd read, {uw / ddw:.0%} of dd write) | {busy:5.0f} {hidden:7.0%}"
            f"  [{o['aio_engine']}]")
print(row, flush=True)
PY
}
for shape in 2x1 1x2; do
  for mode in ram opt both; do
    run "$shape" "$mode"
  done
done
run 2x1 serial # both offloads, the optimizer's sub-groups not overlapped: what the overlap hides
