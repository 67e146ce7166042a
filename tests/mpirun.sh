#!/usr/bin/env bash
# mpirun.sh N CMD... — runs CMD on N ranks of this machine the way the tests need: allowed as
# root, oversubscribed (2 cores, up to 4 ranks), one BLAS/OpenMP thread per rank, and a time
# limit so a hang fails the test instead of stalling CI.
set -euo pipefail
n=$1; shift
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive
fwd=(-x OPENBLAS_NUM_THREADS -x OMP_NUM_THREADS -x OMP_WAIT_POLICY)
for v in ASAN_OPTIONS LSAN_OPTIONS UBSAN_OPTIONS; do [ -n "${!v:-}" ] && fwd+=(-x "$v"); done
exec timeout --signal=KILL "${ZEROC_TEST_TIMEOUT:-300}" \
  mpirun --oversubscribe --bind-to none -np "$n" "${fwd[@]}" "$@"
