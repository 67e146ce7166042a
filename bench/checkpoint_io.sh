#!/usr/bin/env bash
# checkpoint_io.sh [DIR] [ROUNDS] — save and load time of a GPT-2 124M checkpoint (12 × 768,
# fp32 weights + Adam moments ≈ 1.5 GB) on 2 ranks at stage 3, against dd writing and reading
# the same bytes (two files in parallel, O_DIRECT, fsync'd; random bytes from RAM, not zeros)
# on the same disk. ROUNDS (default 5) rounds of save, dd write, load, dd read, in turn; before
# each, the previous files are removed and the removal synced (on a disk mounted with `discard`
# the freed blocks are trimmed then, not in the middle of the next measurement) and the page
# cache dropped, so every read comes from the disk. Prints each round and the medians, with
# each measure's share of dd's speed taken round by round. Run by hand; not a test.
# ZEROC=/path/to/zeroc overrides "$root/build/zeroc".
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
zeroc=${ZEROC:-$root/build/zeroc}
dir=${1:-$root/build/bench-ckpt}
rounds=${2:-5}
if ! [[ $rounds =~ ^[1-9][0-9]*$ ]]; then
  echo "checkpoint_io.sh: ROUNDS must be a positive integer, got '$rounds'" >&2; exit 2
fi
[[ -f $zeroc && -x $zeroc ]] || { echo "checkpoint_io.sh: no zeroc at $zeroc (build it, or set ZEROC)" >&2; exit 2; }
rm -rf "$dir"; mkdir -p "$dir"
python3 - "$dir/tok.bin" <<'PY'
import struct, sys
n = 4096
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<256i", 20240520, 1, n, *([0] * 253)))
    f.write(struct.pack(f"<{n}H", *((i * 7919) % 50257 for i in range(n))))
PY
args=(--model gpt2 --data "$dir/tok.bin" --layers 12 --channels 768 --heads 12 --vocab 50257
      --seq-len 64 --micro-batch 1 --stage 3)
settle() { sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true; sleep 1; }
secs() { sed -n 's/^\(saved\|resumed\).* in \([0-9.]*\) s.*/\2/p'; }
since() { python3 -c "import sys, time; print(f'{time.time() - float(sys.argv[1]):.3f}')" "$1"; }
random_half=""
for r in $(seq 1 "$rounds"); do
  rm -rf "$dir/ck" "$dir"/dd?; settle
  save=$("$root/tests/mpirun.sh" 2 "$zeroc" train "${args[@]}" --steps 1 \
    --save-dir "$dir/ck" --save-every 1 | secs)
  bytes=$(du -sb "$dir/ck/step-000001" | cut -f1)
  half=$((bytes / 2 / 1048576))
  if [ -z "$random_half" ]; then
    random_half=/dev/shm/zeroc-bench-random; head -c $((half * 1048576)) /dev/urandom > "$random_half"
  fi
  settle; t=$(date +%s.%N)
  for i in 0 1; do
    dd if="$random_half" of="$dir/dd$i" bs=1M count="$half" oflag=direct conv=fsync status=none &
  done
  wait; ddw=$(since "$t")
  settle
  load=$("$root/tests/mpirun.sh" 2 "$zeroc" train "${args[@]}" --steps 2 \
    --resume "$dir/ck" | secs)
  settle; t=$(date +%s.%N)
  for i in 0 1; do dd if="$dir/dd$i" of=/dev/null bs=1M status=none & done
  wait; ddr=$(since "$t")
  echo "$bytes $save $ddw $load $ddr"
done | python3 -c '
import statistics as st, sys
rows = [list(map(float, l.split())) for l in sys.stdin]
for b, s, w, l, r in rows:
    print(f"round: save {s:.2f} s, dd write {w:.2f} s; load {l:.2f} s, dd read {r:.2f} s")
mb = rows[0][0] / 1e6
med = lambda i: st.median(x[i] for x in rows)
share = lambda i, j: 100 * st.median(x[j] / x[i] for x in rows)
print(f"checkpoint {mb:.0f} MB, median of {len(rows)} rounds: save {med(1):.2f} s "
      f"({mb / med(1):.0f} MB/s, {share(1, 2):.0f}% of dd), dd write+fsync {med(2):.2f} s "
      f"({mb / med(2):.0f} MB/s); load {med(3):.2f} s ({mb / med(3):.0f} MB/s, CRC-checked, "
      f"{share(3, 4):.0f}% of dd), dd read {med(4):.2f} s ({mb / med(4):.0f} MB/s)")'
rm -rf "$dir" /dev/shm/zeroc-bench-random
