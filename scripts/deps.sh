#!/usr/bin/env bash
# deps.sh [PACKAGE...] — installs the Debian packages zeroc needs to build, run and test, and
# any PACKAGEs named (a benchmark's peers, e.g. python3-torch), when missing. Run by
# scripts/demo.sh, scripts/test.sh and the benchmarks; safe to run again (installs nothing that
# is already there).
set -euo pipefail
# git: scripts/format.sh lists the tracked sources, the build records the commit in the version;
# iproute2: the multi-host tests make network namespaces (ip, tc); slurmctld, slurmd and
# slurm-client: tests/test_slurm.py starts a one-node cluster of its own (srun --mpi=pmix; the
# services these packages install are not used, and stay stopped where no init system runs)
pkgs=(build-essential cmake pkg-config git openmpi-bin libopenmpi-dev libopenblas-dev
      libcjson-dev liburing-dev libdnnl-dev libutf8proc-dev python3 iproute2 slurmctld slurmd
      slurm-client "$@")
# node + npm run the tokenizer tests' reference (npm's tiktoken); a node that brings its own npm
# (e.g. from another repository) is kept, Debian's are installed only when there is none
command -v npm >/dev/null 2>&1 || pkgs+=(nodejs npm)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "zeroc: installing ${missing[*]}" >&2
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo >/dev/null 2>&1; then
      echo "zeroc: missing packages, and no sudo to install them as $(id -un); as root, run:" >&2
      echo "  apt-get update && apt-get install -y ${missing[*]}" >&2
      exit 1
    fi
    sudo="sudo"
  fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
