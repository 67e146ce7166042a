#!/usr/bin/env bash
# memcap.sh BYTES CMD... — runs CMD in a new memory cgroup capped at BYTES (RAM; swap is not
# allowed to stand in for it), below this process's own cgroup, and removes the cgroup after.
# Needs root. Works with cgroup v2 (memory.max) and v1 (memory.limit_in_bytes).
set -euo pipefail
limit=$1; shift
name=zeroc-memcap-$$
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then             # v2
  parent=/sys/fs/cgroup$(awk -F: '$1 == "0" {print $3}' /proc/self/cgroup)
  dir=$parent/$name
  mkdir "$dir"
  echo "$limit" > "$dir/memory.max"
  echo 0 > "$dir/memory.swap.max" 2>/dev/null || true
else                                                          # v1
  parent=/sys/fs/cgroup/memory$(awk -F: '$2 == "memory" {print $3}' /proc/self/cgroup)
  dir=$parent/$name
  mkdir "$dir"
  echo "$limit" > "$dir/memory.limit_in_bytes"
  echo "$limit" > "$dir/memory.memsw.limit_in_bytes" 2>/dev/null || true
fi
cleanup() { rmdir "$dir" 2>/dev/null || true; }
trap cleanup EXIT
# the command runs in a child that joins the cgroup; this shell stays outside to remove it
( echo $BASHPID > "$dir/cgroup.procs"; exec "$@" ) && rc=0 || rc=$?
exit $rc
