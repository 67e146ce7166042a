#!/usr/bin/env bash
# memcap.sh [--parent] BYTES CMD... — runs CMD in a new memory cgroup capped at BYTES (RAM; swap
# is not allowed to stand in for it), below this process's own cgroup, and removes the cgroup
# after. With --parent the cap is on the new cgroup and CMD runs in a child of it that has no
# limit of its own (as under a systemd slice or a Slurm job's step). Needs root. Works with cgroup
# v2 (memory.max) and v1 (memory.limit_in_bytes).
set -euo pipefail
parent_cap=false
if [ "$1" = --parent ]; then parent_cap=true; shift; fi
limit=$1; shift
name=zeroc-memcap-$$
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then             # v2
  dir=/sys/fs/cgroup$(awk -F: '$1 == "0" {print $3}' /proc/self/cgroup)/$name
  mkdir "$dir"
  echo "$limit" > "$dir/memory.max"
  echo 0 > "$dir/memory.swap.max" 2>/dev/null || true
  if $parent_cap; then echo +memory > "$dir/cgroup.subtree_control"; fi
else                                                          # v1
  dir=/sys/fs/cgroup/memory$(awk -F: '$2 == "memory" {print $3}' /proc/self/cgroup)/$name
  mkdir "$dir"
  echo "$limit" > "$dir/memory.limit_in_bytes"
  echo "$limit" > "$dir/memory.memsw.limit_in_bytes" 2>/dev/null || true
fi
run=$dir
if $parent_cap; then run=$dir/inner; mkdir "$run"; fi
# the kernel frees a cgroup some time after its last process exits: rmdir until it lets go
cleanup() {
  for _ in $(seq 50); do
    { [ "$run" = "$dir" ] || rmdir "$run" 2>/dev/null || [ ! -d "$run" ]; } &&
      rmdir "$dir" 2>/dev/null && return
    sleep 0.1
  done
  echo "memcap.sh: could not remove $dir" >&2
}
trap cleanup EXIT
# the command runs in a child that joins the cgroup; this shell stays outside to remove it
( echo $BASHPID > "$run/cgroup.procs"; exec "$@" ) && rc=0 || rc=$?
exit $rc
