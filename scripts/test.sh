#!/usr/bin/env bash
# test.sh — the test suite, exactly as CI runs it: installs what is missing, checks the C
# sources' layout against .clang-format (scripts/format.sh --check), builds with
# warnings as errors and runs every test, then builds again with AddressSanitizer +
# UndefinedBehaviorSanitizer and runs the suite once more, then fuzzes every parser of outside
# bytes for a short while each (scripts/fuzz.sh; ZEROC_FUZZ_SECONDS, default 10).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/deps.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# One test more than cores: many tests spend much of their time waiting (mpirun's start and
# stop, signals and timeouts they provoke, the disk), and a core would idle through it (the plain
# pass on 2 cores: 976 s with 2 at once, 891 s with 3).
jobs=$(($(nproc) + 1))

echo "== layout of the C sources (.clang-format)"
"$root/scripts/format.sh" --check

echo "== build (warnings are errors) and test"
"$root/scripts/build.sh" "$root/build" -DZEROC_WERROR=ON
(cd "$root/build" && ctest --output-on-failure -j "$jobs")

echo "== build with AddressSanitizer + UndefinedBehaviorSanitizer and test"
"$root/scripts/build.sh" "$root/build-asan" -DZEROC_WERROR=ON -DZEROC_SANITIZE=ON
# fast_unwind_on_malloc=0: full stacks, so the MPI runtime's own leaks match tests/lsan.supp.
# print_suppressions=0: a suppressed leak (a pool thread still starting when a refusal exits)
# adds no "Suppressions used" table to stderr, which tests read line by line.
export ASAN_OPTIONS=fast_unwind_on_malloc=0:detect_leaks=1
export LSAN_OPTIONS=suppressions=$root/tests/lsan.supp:fast_unwind_on_malloc=0:print_suppressions=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
(cd "$root/build-asan" && ctest --output-on-failure -j "$jobs")

echo "== fuzz the parsers (libFuzzer, ${ZEROC_FUZZ_SECONDS:-10} s each)"
"$root/scripts/fuzz.sh" "${ZEROC_FUZZ_SECONDS:-10}"
