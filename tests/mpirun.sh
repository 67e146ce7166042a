#!/usr/bin/env bash
# mpirun.sh N CMD... — runs CMD on N ranks of this machine the way the tests need: allowed as
# root, oversubscribed (2 cores, up to 4 ranks), one BLAS/OpenMP thread per rank, and a time
# limit so a hang fails the test instead of stalling CI. odls_base_sigkill_timeout 0 outside the
# sanitizer pass: when a rank exits non-zero (every refusal test) Open MPI 4.1 waits that many
# seconds before its SIGTERM and again before its SIGKILL to the other ranks, 2 s of a refusal's
# 3 by default. The sanitizer pass keeps the default: the other ranks' leak checks at exit need
# that second. The tests that time mpirun's stop themselves (test_stop_under_mpirun_saves) set
# it as a user would.
set -euo pipefail
n=$1; shift
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
[ -n "${ASAN_OPTIONS:-}" ] || export OMPI_MCA_odls_base_sigkill_timeout=${OMPI_MCA_odls_base_sigkill_timeout:-0}
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive
fwd=(-x OPENBLAS_NUM_THREADS -x OMP_NUM_THREADS -x OMP_WAIT_POLICY)
for v in ASAN_OPTIONS LSAN_OPTIONS UBSAN_OPTIONS; do [ -n "${!v:-}" ] && fwd+=(-x "$v"); done
# In the sanitizer pass only rank 0 checks for leaks at exit. The ranks run the same code (rank 0
# the most of it: reports, files, samples), so one check finds a leak they share; a 4-rank test
# runs about 8% faster so. (Each check used to cost about a second, matching the ~3,300
# allocations Open MPI's runtime keeps against tests/lsan.supp; zc_comm_init now starts MPI with
# LeakSanitizer off, so there are none to match.) AddressSanitizer's and UBSan's own checks stay
# on in every rank. A command line with its own app contexts (":") is passed as it is.
apps=(-np "$n" "${fwd[@]}" "$@")
if [ -n "${ASAN_OPTIONS:-}" ] && [ "$n" -gt 1 ] && [[ " $* " != *" : "* ]]; then
  apps=(-np 1 "${fwd[@]}" "$@" : -np $((n - 1)) "${fwd[@]}" -x "ASAN_OPTIONS=$ASAN_OPTIONS:detect_leaks=0" "$@")
fi
exec timeout --signal=KILL "${ZEROC_TEST_TIMEOUT:-300}" \
  mpirun --oversubscribe --bind-to none "${apps[@]}"
