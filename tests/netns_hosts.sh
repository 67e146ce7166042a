#!/usr/bin/env bash
# netns_hosts.sh — runs a command on "hosts" made of Linux network namespaces, so that zeroc's
# ranks talk over a real network stack (TCP, no shared memory) on one machine:
#
#   tests/netns_hosts.sh [--hosts H] [--rate RATE] [--delay MS] [--prefix P] -- \
#       mpirun-args... zeroc train ...
#
# makes H namespaces P-h0..P-h(H−1) (default zc-h*), each with loopback up and one veth whose
# other end joins a bridge P-br in this namespace (10.77.0.1/24; host i is 10.77.0.(10+i)); with
# --rate every link is shaped to RATE (tc tbf, e.g. 1gbit, 10gbit) in both directions; --delay
# adds MS of latency (tc netem: refused with a message when the kernel has no netem). Then it
# runs `mpirun --hostfile F --mca plm_rsh_agent AGENT --mca btl tcp,self ... mpirun-args...`
# where F lists the hosts with --slots ranks each (default 1) and AGENT starts each host's
# daemon inside its namespace (`ip netns exec`). Everything it made is removed on exit — also
# after a failure, or on INT/TERM — and the exit code is the command's.
#
# The environment variable NETNS_HOSTS_CUT="SECONDS:HOST" brings host HOST's link down SECONDS
# after the command starts (a host falling off the network mid-run). After the command, every
# process on the hosts must end by itself within 40 s; any that does not is named on stderr
# (and a command that succeeded then exits 3).
#
# On real hosts the same run is `mpirun --hostfile hosts --mca btl tcp,self ...` (README,
# "Several hosts").
set -euo pipefail
hosts=2 slots=1 rate="" delay="" prefix=zc
while [ $# -gt 0 ]; do
  case $1 in
    --hosts) hosts=$2; shift 2 ;;
    --slots) slots=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --delay) delay=$2; shift 2 ;;
    --prefix) prefix=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "netns_hosts.sh: unknown option '$1' (see the comment at the top)" >&2; exit 2 ;;
  esac
done
[ $# -gt 0 ] || { echo "netns_hosts.sh: no command after --" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "netns_hosts.sh: needs root (network namespaces)" >&2; exit 77; }
command -v ip >/dev/null && command -v tc >/dev/null ||
  { echo "netns_hosts.sh: needs ip and tc (iproute2)" >&2; exit 77; }

work=$(mktemp -d)
br=$prefix-br
cleanup() {
  set +e
  for ((i = 0; i < hosts; i++)); do
    ip netns pids "$prefix-h$i" 2>/dev/null | xargs -r kill -9 2>/dev/null
    ip netns del "$prefix-h$i" 2>/dev/null   # removes its veth, and so the pair
    ip link del "$prefix-v$i" 2>/dev/null
  done
  ip link del "$br" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

shape() { # dev [netns]: rate limit (and delay) on the device's egress
  local dev=$1 ns=${2:-} run=()
  [ -n "$ns" ] && run=(ip netns exec "$ns")
  if [ -n "$delay" ]; then
    "${run[@]}" tc qdisc add dev "$dev" root handle 1: netem delay "${delay}ms" 2>/dev/null || {
      echo "netns_hosts.sh: --delay needs tc netem, which this kernel lacks (sch_netem)" >&2
      exit 77
    }
    [ -n "$rate" ] && "${run[@]}" tc qdisc add dev "$dev" parent 1: handle 2: tbf rate "$rate" \
      burst 256kb latency 50ms
  elif [ -n "$rate" ]; then
    "${run[@]}" tc qdisc add dev "$dev" root tbf rate "$rate" burst 256kb latency 50ms
  fi
}

# what a test bed of this prefix killed without its cleanup (SIGKILL) left behind
for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$prefix-h[0-9]*$"); do
  ip netns pids "$ns" | xargs -r kill -9 2>/dev/null
  ip netns del "$ns" 2>/dev/null
done
ip link del "$br" 2>/dev/null || true
for v in $(ip -o link 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 | grep "^$prefix-v[0-9]*$"); do
  ip link del "$v" 2>/dev/null || true
done
if ! ip netns add "$prefix-h0" 2>/dev/null; then
  echo "netns_hosts.sh: cannot make network namespaces here" >&2
  exit 77
fi
ip link add "$br" type bridge
ip addr add 10.77.0.1/24 dev "$br"
ip link set "$br" up
for ((i = 0; i < hosts; i++)); do
  ns=$prefix-h$i
  [ "$i" -eq 0 ] || ip netns add "$ns"
  ip link add "$prefix-v$i" type veth peer name eth0 netns "$ns"
  ip link set "$prefix-v$i" master "$br" up
  ip netns exec "$ns" ip addr add "10.77.0.$((10 + i))/24" dev eth0
  ip netns exec "$ns" ip link set eth0 up
  ip netns exec "$ns" ip link set lo up
  # a dead peer shows within seconds, not the kernel's 15 minutes of retransmissions
  ip netns exec "$ns" sysctl -qw net.ipv4.tcp_retries2=6 2>/dev/null || true
  shape eth0 "$ns"
  shape "$prefix-v$i"
  echo "$ns slots=$slots" >>"$work/hostfile"
done

cat >"$work/agent" <<EOF
#!/bin/sh
# mpirun's remote shell: "agent HOST CMD..." runs CMD in HOST's network namespace, under the
# host's own name (a UTS namespace) and temporary directory, as on a real host: daemons that
# shared a host name would share OpenMPI's session directories
host=\$1; shift
mkdir -p "$work/tmp-\$host"
export TMPDIR="$work/tmp-\$host"
exec ip netns exec "\$host" unshare --uts sh -c "hostname \$host && exec \$*"
EOF
chmod +x "$work/agent"

if [ -n "${NETNS_HOSTS_CUT:-}" ]; then
  (sleep "${NETNS_HOSTS_CUT%%:*}" && ip link set "$prefix-v${NETNS_HOSTS_CUT##*:}" down) &
fi

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
set +e
# mpirun runs on host 0 too, so its connections to the daemons give up on a dead host as fast
# as the ranks' (tcp_retries2 above) and it ends the job
# (in the background: a signal then runs the cleanup at once instead of after mpirun)
ip netns exec "$prefix-h0" mpirun --hostfile "$work/hostfile" --mca plm_rsh_agent "$work/agent" \
  --mca btl tcp,self --mca btl_tcp_if_include 10.77.0.0/24 \
  --mca oob_tcp_if_include 10.77.0.0/24 --mca plm_rsh_no_tree_spawn 1 \
  --bind-to none "$@" &
wait $!
rc=$?
set -e
# every rank and daemon must end by itself (a cut host's after its comm timeout): wait, then
# name any that did not (cleanup kills them)
left=""
for ((t = 0; t < 40; t++)); do
  left=$(for ((i = 0; i < hosts; i++)); do ip netns pids "$prefix-h$i"; done)
  [ -z "$left" ] && break
  sleep 1
done
if [ -n "$left" ]; then
  echo "netns_hosts.sh: still running on the hosts 40 s after mpirun ended:" \
    "$(ps -o comm= -p "$(echo $left | tr ' ' ',')" | tr '\n' ' ')" >&2
  [ "$rc" -ne 0 ] || rc=3
fi
exit $rc
