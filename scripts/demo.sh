#!/usr/bin/env bash
# demo.sh — the main job on its built-in default: installs what is missing, builds, and trains
# the starting documents' MLP (12 × Linear(2048) + ReLU, batch 32 per rank, Adam lr 1e-3) with
# ZeRO stage 3 on 2 ranks, printing per-rank memory next to what stage 0 would need.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/deps.sh"
"$root/scripts/build.sh" "$root/build"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
exec mpirun --oversubscribe --bind-to none -np 2 -x OPENBLAS_NUM_THREADS -x OMP_NUM_THREADS \
  "$root/build/zeroc" train --model mlp --stage 3 --steps 20 \
  --config "$root/examples/mlp_stage3.json" "$@"
