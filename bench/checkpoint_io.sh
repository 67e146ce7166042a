#!/usr/bin/env bash
# checkpoint_io.sh [DIR] — save and load time of a GPT-2 124M checkpoint (12 × 768, fp32 weights
# + Adam moments ≈ 1.5 GB) on 2 ranks at stage 3, against dd writing and reading the same bytes
# (two files in parallel, O_DIRECT, fsync'd) on the same disk. Run by hand; not a test.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$root/build/bench-ckpt}
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
save=$("$root/tests/mpirun.sh" 2 "$root/build/zeroc" train "${args[@]}" --steps 1 \
  --save-dir "$dir/ck" --save-every 1 | grep '^saved')
load=$("$root/tests/mpirun.sh" 2 "$root/build/zeroc" train "${args[@]}" --steps 2 \
  --resume "$dir/ck" | grep '^resumed')
bytes=$(du -sb "$dir/ck/step-000001" | cut -f1)
half=$((bytes / 2 / 1048576))
t0=$(date +%s.%N)
dd if=/dev/zero of="$dir/dd0" bs=1M count="$half" oflag=direct conv=fsync status=none &
dd if=/dev/zero of="$dir/dd1" bs=1M count="$half" oflag=direct conv=fsync status=none &
wait
t1=$(date +%s.%N)
sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true
dd if="$dir/dd0" of=/dev/null bs=1M status=none &
dd if="$dir/dd1" of=/dev/null bs=1M status=none &
wait
t2=$(date +%s.%N)
python3 - "$bytes" "$save" "$load" "$t0" "$t1" "$t2" <<'PY'
import re, sys
b = int(sys.argv[1]); save = float(re.search(r"in ([\d.]+) s", sys.argv[2])[1])
load = float(re.search(r"in ([\d.]+) s", sys.argv[3])[1])
t0, t1, t2 = map(float, sys.argv[4:7])
mb = b / 1e6
print(f"checkpoint {mb:.0f} MB: save {save:.2f} s ({mb / save:.0f} MB/s), load {load:.2f} s "
      f"({mb / load:.0f} MB/s, CRC-checked); dd write+fsync {t1 - t0:.2f} s "
      f"({mb / (t1 - t0):.0f} MB/s), dd read {t2 - t1:.2f} s ({mb / (t2 - t1):.0f} MB/s)")
PY
rm -rf "$dir"
