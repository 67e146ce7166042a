#!/usr/bin/env bash
# beyond_ram.sh [DIR [STEPS]] — trains a model whose states do not fit in this machine's RAM:
# GPT-2 L=48 C=1920 H=30 V=50257 (≈ 2.2 B parameters; bf16 model states 16 bytes each ≈ 35 GB)
# at ZeRO stage 3 on 2 ranks (1 thread each) with the optimizer and the parameters offloaded to
# swap files in DIR (default build/bench-beyond-ram), T=64, micro-batch 1, on the license texts
# every Debian system ships (byte-level tokens: the loss has something to learn). Prints the
# model states against MemTotal, the disk the run needs (zeroc estimate) and has free, each
# step's line, and a summary: s/step, peak RSS per rank, disk MB/s. Then runs PyTorch (Debian's
# python3-torch, if installed) on the same shape, capped by a memory cgroup at MemTotal − 1 GiB so
# it cannot take the machine down, and prints how it ended. STEPS (at least 3) defaults to 6;
# the summary's figures are medians of steps 3 on. About 15 minutes on 2 cores and ~40 GB of free
# disk. Run by hand, as root; not a test.
# ZEROC=/path/to/zeroc overrides "$root/build/zeroc". CACHE=auto gives offload_param.max_in_cpu and
# offload_optimizer.ratio "auto" (the RAM the host can spare keeps what fits of the states; the
# default, CACHE=0, keeps none: max_in_cpu 0, ratio 1). FOLD=false runs the update in a phase of
# its own at the step (offload_optimizer.fold_update false; default true: each unit's update
# runs in the next forward, just before its gather); FOLD=omit leaves the key out, for a build from
# before it (the comparison with an older zeroc). OPTIM=AdamW8bit trains with 8-bit moments
# (default AdamW). TORCH=0 skips the PyTorch run. SMALL=1 sets DeepSpeed's knobs for memory
# rather than speed (sub_group_size 1e6, two optimizer slots, one shard read ahead, no unit
# gathered ahead, reduce_bucket_size 2e7); SMALL=2 only the update's (sub_group_size 1e6, two
# optimizer slots), keeping the reads and gathers ahead; EXTRA adds train flags (e.g.
# EXTRA=--activation-checkpointing; the plan printed first follows its --tile-params and
# --activation-checkpointing). RANKS=1 runs the other process shape: 1 process with 2
# threads instead of 2 ranks with 1 thread each. OPT_SLOTS=N sets offload_optimizer.buffer_count
# (the update's slots: how many sub-groups are read ahead), over SMALL's; PAR_SLOTS=N
# offload_param.buffer_count (how many parameter shards are read ahead or kept), PAR_SIZE=N its
# buffer_size (the elements they may hold past the first). COMPACT=1 (AdamW or
# AdamW8bit) keeps the fp32 master as the bf16 weights plus 16-bit remainders
# (optimizer.params.compact_master). CLIP sets --clip (default 1.0; CLIP=0 trains without
# gradient clipping, which folds the update into the backward where fold_update is on). AIO sets
# the config's "aio" keys (e.g. AIO='"queue_depth": 32, "block_size": 4194304').
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
zeroc=${ZEROC:-$root/build/zeroc}
dir=${1:-$root/build/bench-beyond-ram}
cache=${CACHE:-0}
case $cache in
  0) max_in_cpu=0 ratio=1 ;;
  auto) max_in_cpu='"auto"' ratio='"auto"' ;;
  *) echo "beyond_ram.sh: CACHE must be 0 or auto, got '$cache'" >&2; exit 2 ;;
esac
steps=${2:-6}
fold=${FOLD:-true}
case $fold in
  true | false) fold_key=", \"fold_update\": $fold" ;;
  omit) fold_key='' ;;
  *) echo "beyond_ram.sh: FOLD must be true, false or omit, got '$fold'" >&2; exit 2 ;;
esac
optim=${OPTIM:-AdamW}
[[ $optim == AdamW || $optim == AdamW8bit ]] || { echo "beyond_ram.sh: OPTIM must be AdamW or AdamW8bit, got '$optim'" >&2; exit 2; }
compact=${COMPACT:-0}
case $compact in
  0) optimizer_key='' ;;
  1) optimizer_key='"optimizer": {"params": {"compact_master": true}},' ;;
  *) echo "beyond_ram.sh: COMPACT must be 0 or 1, got '$compact'" >&2; exit 2 ;;
esac
torch=${TORCH:-1}
clip=${CLIP:-1.0}
aio_key=''
[[ -n ${AIO:-} ]] && aio_key=", \"aio\": {$AIO}"
[[ $clip =~ ^[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$ ]] || { echo "beyond_ram.sh: CLIP must be a number >= 0, got '$clip'" >&2; exit 2; }
ranks=${RANKS:-2}
[[ $ranks == 1 || $ranks == 2 ]] || { echo "beyond_ram.sh: RANKS must be 1 or 2, got '$ranks'" >&2; exit 2; }
threads=$((2 / ranks))
small=${SMALL:-0}
[[ $small == 0 || $small == 1 || $small == 2 ]] || { echo "beyond_ram.sh: SMALL must be 0, 1 or 2, got '$small'" >&2; exit 2; }
read -r -a extra <<< "${EXTRA:-}"
if ((small == 2)); then
  knobs='"sub_group_size": 1000000,'
  opt_slots=', "buffer_count": 2' par_slots=''
elif ((small)); then
  knobs='"sub_group_size": 1000000, "reduce_bucket_size": 20000000, "stage3_prefetch_bucket_size": 0,'
  opt_slots=', "buffer_count": 2' par_slots=', "buffer_count": 1'
else
  knobs='' opt_slots='' par_slots=''
fi
if [[ -n ${OPT_SLOTS:-} ]]; then
  [[ $OPT_SLOTS =~ ^[1-9][0-9]*$ ]] || { echo "beyond_ram.sh: OPT_SLOTS must be a positive integer, got '$OPT_SLOTS'" >&2; exit 2; }
  opt_slots=", \"buffer_count\": $OPT_SLOTS"
fi
if [[ -n ${PAR_SLOTS:-} ]]; then
  [[ $PAR_SLOTS =~ ^[1-9][0-9]*$ ]] || { echo "beyond_ram.sh: PAR_SLOTS must be a positive integer, got '$PAR_SLOTS'" >&2; exit 2; }
  par_slots=", \"buffer_count\": $PAR_SLOTS"
fi
if [[ -n ${PAR_SIZE:-} ]]; then
  [[ $PAR_SIZE =~ ^[1-9][0-9]*$ ]] || { echo "beyond_ram.sh: PAR_SIZE must be a positive integer, got '$PAR_SIZE'" >&2; exit 2; }
  par_slots+=", \"buffer_size\": $PAR_SIZE"
fi
[[ $torch == 0 || $torch == 1 ]] || { echo "beyond_ram.sh: TORCH must be 0 or 1, got '$torch'" >&2; exit 2; }
if ! [[ $steps =~ ^[0-9]+$ ]] || ((steps < 3)); then
  echo "beyond_ram.sh: STEPS must be an integer >= 3 (the first two are not timed), got '$steps'" >&2
  exit 2
fi
[[ -f $zeroc && -x $zeroc ]] || { echo "beyond_ram.sh: no zeroc at $zeroc (build it, or set ZEROC)" >&2; exit 2; }
has_torch=0
if ((!torch)); then
  :
elif /usr/bin/python3 -c 'import torch, numpy' 2> /dev/null; then
  has_torch=1
else
  echo "beyond_ram.sh: /usr/bin/python3 cannot import torch and numpy (Debian's python3-torch and" \
    "python3-numpy): the PyTorch run at the end is skipped" >&2
fi
rm -rf "$dir"; mkdir -p "$dir"
trap 'rm -rf "$dir"' EXIT
shape=(--model gpt2 --layers 48 --channels 1920 --heads 30 --vocab 50257 --seq-len 64)
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) cores"

"$zeroc" prepare --text /usr/share/common-licenses/* --out "$dir/licenses" > /dev/null
cat > "$dir/ds.json" <<EOF
{$optimizer_key "zero_optimization": {"stage": 3, $knobs
   "offload_optimizer": {"device": "nvme", "nvme_path": "$dir", "ratio": $ratio$fold_key$opt_slots},
   "offload_param": {"device": "nvme", "nvme_path": "$dir", "max_in_cpu": $max_in_cpu$par_slots}},
 "bf16": {"enabled": true}, "steps_per_print": 1$aio_key}
EOF
# the plan of the run below: its optimizer, its config (buffers, compact master, ...) and the
# flags of EXTRA that change what a rank holds (tiles, activation checkpointing)
est_extra=()
for ((k = 0; k < ${#extra[@]}; k++)); do
  case ${extra[k]} in
    --activation-checkpointing) est_extra+=("${extra[k]}") ;;
    --tile-params) est_extra+=("${extra[k]}" "${extra[k + 1]:-}") && ((k += 1)) ;;
  esac
done
est=$("$zeroc" estimate "${shape[@]}" --micro-batch 1 --ranks "$ranks" --dtype bf16 \
  --optimizer "$optim" ${est_extra[@]+"${est_extra[@]}"} --config "$dir/ds.json" --json)
python3 - "$est" "$dir" "$ranks" <<'PY'
import json, os, sys
e, ranks = json.loads(sys.argv[1]), int(sys.argv[3])
row = next(r for r in e["rows"] if r["stage"] == 3)
mem = int(open("/proc/meminfo").read().split("MemTotal:")[1].split()[0]) * 1024
states = 16 * e["params"]
st = os.statvfs(sys.argv[2])
print(f"model: {e['params'] / 1e9:.3f} B parameters; bf16 model states (16 bytes each) "
      f"{states / 1e9:.1f} GB = {states / mem:.2f} x MemTotal ({mem / 1e9:.1f} GB)")
print(f"per rank: {row['nvme'] / 1e9:.2f} GB on disk, RAM bound {row['total_per_rank'] / 2**30:.2f} GiB "
      f"(states in RAM {row['model_states'] / 2**20:.1f} MiB, offload buffers <= "
      f"{row['offload_buffers_bound'] / 2**20:.0f} MiB); disk needed {ranks * row['nvme'] / 1e9:.1f} GB, "
      f"free {st.f_bavail * st.f_frsize / 1e9:.1f} GB")
PY
t0=$(date +%s)
env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe \
  --bind-to none -np "$ranks" -x OPENBLAS_NUM_THREADS="$threads" -x OMP_NUM_THREADS="$threads" \
  "$zeroc" train "${shape[@]}" --data "$dir/licenses_train.bin" --micro-batch 1 --steps "$steps" \
  --lr 2e-5 --warmup "$steps" --clip "$clip" --optimizer "$optim" ${extra[@]+"${extra[@]}"} --config "$dir/ds.json" --report "$dir/report.json" | grep --line-buffered -v '^config:'
echo "wall time $(($(date +%s) - t0)) s (set-up, $steps steps, digests)"
python3 - "$dir/report.json" "$dir" "$ranks" <<'PY'
import json, os, statistics, subprocess, sys, time
r, ranks = json.load(open(sys.argv[1])), int(sys.argv[3])
# Steps 3 on: the first update reads moments never written (holes in the swap files, no disk
# reads); it runs in step 1 unfolded and, folded, in step 2's forward, which it makes look faster.
ms, o = r["step_ms"], r["offload"]
s = statistics.median(ms[2:]) / 1e3
rd = sum(o["read_bytes"][2:]) / sum(ms[2:]) / 1e3
wr = sum(o["written_bytes"][2:]) / sum(ms[2:]) / 1e3
L = r["loss"]
trend = ("falling at every step" if all(b < a for a, b in zip(L, L[1:])) else
         f"falling overall, {L[-1] / L[0] - 1:+.0%}" if L[-1] < L[0] else "NOT falling")
print(f"s/step (median of steps 3 on) {s:.1f}, of which the update phase "
      f"{statistics.median(o['update_ms'][2:]) / 1e3:.1f} s; loss "
      + " -> ".join(f"{x:.3f}" for x in L) + f" ({trend})")
for m in r["memory"]["ranks"]:
    print(f"rank {m['rank']}: peak RSS {m['peak_rss'] / 2**30:.2f} GiB, RAM model states "
          f"{(m['params'] + m['grads'] + m['optimizer']) / 2**20:.1f} MiB, offload buffers peak "
          f"{m['offload_peak'] / 2**20:.0f} MiB, working peak {m['working_peak'] / 2**20:.0f} MiB, "
          f"on disk {m['nvme'] / 1e9:.2f} GB")
print(f"rank 0 disk: read {rd:.0f} MB/s, write {wr:.0f} MB/s, blocked on disk "
      f"{statistics.median(o['wait_ms'][2:]) / 1e3:.1f} s/step ({o['aio_engine']}); per step "
      f"(median of steps 3 on) read {statistics.median(o['read_bytes'][2:]) / 1e9:.2f} GB, "
      f"written {statistics.median(o['written_bytes'][2:]) / 1e9:.2f} GB, parameter shards read "
      + (f"{statistics.median(o['param_read_bytes'][2:]) / 1e9:.2f} GB, gathers fed by the update "
       f"{statistics.median(o['shards_from_update'][2:]):.0f}" if "param_read_bytes" in o else
       "(not reported by this build)")
      + (f", units updated in the backward {statistics.median(o['updates_in_backward'][2:]):.0f}"
         if "updates_in_backward" in o else "")
      + (f", shards read in place {statistics.median(o['shards_read_in_place'][2:]):.0f}"
         if "shards_read_in_place" in o else ""))
print("s/step: " + ", ".join(f"{x / 1e3:.1f}" for x in ms) + "; update phase: "
      + ", ".join(f"{x / 1e3:.1f}" for x in o["update_ms"]) + f"; weights {r['weights_sha256'][:16]}")
# The disk's floor for these bytes: dd with O_DIRECT in the swap files' directory, as the run
# uses it — one reading and one writing stream per rank at once (2 GiB each, 64 MiB blocks). dd
# keeps one request in flight per stream, zeroc aio.queue_depth: a step faster than this floor
# moves more than dd does.
d, mib = sys.argv[2], 2048
dd = lambda *a: ["dd", "bs=64M", "status=none", *a]
for k in range(ranks):
    subprocess.run(dd("if=/dev/zero", f"of={d}/dd-r{k}", f"count={mib // 64}", "oflag=direct"), check=True)
t = time.monotonic()
procs = [(kind, subprocess.Popen(dd(f"if={d}/dd-r{k}", "of=/dev/null", "iflag=direct") if kind == "r"
                                 else dd("if=/dev/zero", f"of={d}/dd-w{k}", f"count={mib // 64}",
                                         "oflag=direct", "conv=fsync")))
         for k in range(ranks) for kind in "rw"]
end = {}
while len(end) < len(procs):
    for i, (kind, p) in enumerate(procs):
        if i not in end and p.poll() is not None:
            end[i] = time.monotonic() - t
    time.sleep(0.01)
for k in range(ranks):
    for kind in "rw":
        os.remove(f"{d}/dd-{kind}{k}")
rate = {kind: ranks * mib * 2**20 / max(s for i, s in end.items() if procs[i][0] == kind) for kind in "rw"}
R, W = (ranks * statistics.median(o[f"{x}_bytes"][2:]) for x in ("read", "written"))
floor = max(R / rate["r"], W / rate["w"])
print(f"disk floor: {ranks} rank(s) read {R / 1e9:.1f} GB and write {W / 1e9:.1f} GB a step; dd at "
      f"once ({ranks} reader(s), {ranks} writer(s)) {rate['r'] / 1e9:.2f} GB/s read, {rate['w'] / 1e9:.2f} GB/s write: "
      f"{floor:.1f} s/step; measured {s:.1f} s/step = {s / floor:.2f} x the floor")
PY

if ((has_torch)); then
  mem=$(awk '/MemTotal/ {printf "%d", $2 * 1024}' /proc/meminfo)
  /usr/bin/python3 "$root/bench/random_tokens.py" "$dir/tok.bin" 65536
  set +e
  "$root/tests/memcap.sh" $((mem - (1 << 30))) /usr/bin/python3 "$root/bench/pytorch_gpt2.py" \
    "$dir/tok.bin" 48 1920 30 50257 64 1 3 > "$dir/torch.log" 2>&1
  rc=$?
  set -e
  echo "PyTorch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)') fp32 AdamW, same shape," \
       "capped at MemTotal - 1 GiB: exit $rc$( ((rc == 137)) && echo ' (killed: out of memory)')"
  tail -n 3 "$dir/torch.log"
fi
