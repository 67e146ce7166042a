#!/usr/bin/env bash
# fuzz.sh [SECONDS] [TARGET...] — builds the libFuzzer targets (clang, with AddressSanitizer and
# UndefinedBehaviorSanitizer; installs clang when missing) in build-fuzz/ and runs each for
# SECONDS (default 20), as many at once as there are cores, from its committed corpus
# (fuzz/corpus/TARGET, read-only: new inputs go to build-fuzz/corpus/TARGET). A crash leaves its
# input in build-fuzz/crashes/ and fails the run: copy it into fuzz/corpus/TARGET/ (so
# fuzz_replay_TARGET tests it from then on) and fix the parser. CI runs it from scripts/test.sh;
# longer runs by hand: ./scripts/fuzz.sh 600 manifest
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-20}; shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(config manifest shard safetensors llmc_model llmc_tokens loss_mask bpe_vocab bpe_tokenizer_bin
                                   bpe_encode hf hf_tokenizer hf_encode jsonl_example)
"$root/scripts/deps.sh" clang libomp-dev
out=$root/build-fuzz
CC=clang cmake -S "$root" -B "$out" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DZEROC_FUZZ=ON >/dev/null
cmake --build "$out" -j "$(nproc)" --target "${targets[@]/#/fuzz_}" >/dev/null
mkdir -p "$out/crashes"
export ASAN_OPTIONS=detect_leaks=1:fast_unwind_on_malloc=0
export LSAN_OPTIONS=suppressions=$root/tests/lsan.supp:fast_unwind_on_malloc=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self OMP_NUM_THREADS=1
# one target: its log in build-fuzz/fuzz_TARGET.log, its verdict in build-fuzz/fuzz_TARGET.result
fuzz_one() {
  local t=$1 log=$out/fuzz_$1.log
  mkdir -p "$out/corpus/$t"
  if "$out/fuzz/fuzz_$t" "$out/corpus/$t" "$root/fuzz/corpus/$t" -max_total_time="$secs" \
       -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
       -artifact_prefix="$out/crashes/$t-" >"$log" 2>&1; then
    local runs cov
    runs=$(grep -m1 'stat::number_of_executed_units' "$log" | awk '{print $2}')
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
    echo "fuzz_$t: ${runs:-?} inputs in ${secs} s, $cov, no crash" >"$out/fuzz_$t.result"
  else
    { echo "fuzz_$t: FAILED — see $log and $out/crashes/"
      grep -m3 -E 'ERROR|runtime error|SUMMARY' "$log" || tail -20 "$log"; } >"$out/fuzz_$t.result"
    return 1
  fi
}
# as many targets at once as there are cores (each fuzzer is one thread)
pids=()
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$(nproc)" ]; do wait -n || true; done
  fuzz_one "$t" &
  pids+=($!)
done
failed=()
for i in "${!targets[@]}"; do
  t=${targets[$i]}
  if wait "${pids[$i]}"; then
    cat "$out/fuzz_$t.result"
  else
    cat "$out/fuzz_$t.result" >&2
    failed+=("$t")
  fi
done
[ ${#failed[@]} -eq 0 ] || { echo "fuzzing found crashes in: ${failed[*]}" >&2; exit 1; }
