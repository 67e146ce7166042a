#!/usr/bin/env python3
"""test_hosts.py — zeroc across hosts: ranks in separate network namespaces joined by a bridge
(tests/netns_hosts.sh), talking TCP only, no shared memory between hosts (python3 stdlib only;
prints "N passed, N failed"). Exits 77 (skipped) where network namespaces cannot be made.

Usage: test_hosts.py ZEROC_BINARY MPIRUN_SH [test-name ...]

What must hold on real hosts holds here: the stages' bitwise equality, the comm formulas —
every byte and the bytes that leave a host, as `zeroc estimate --ranks-per-node` predicts,
ZeRO++ included (hpZ's backward gathers stay on the host, qgZ takes two hops) — checkpoints
saved on one layout of hosts resumed on another, and a host cut off mid-step ending every rank
with an error naming the collective, never a hang; and the test bed leaves nothing behind."""
import json
import os
import re
import shutil
import subprocess
import sys
import time

from harness import Harness

H_ = Harness(sys.argv[1], sys.argv[2])
check = H_.check
BED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "netns_hosts.sh")
MLP = ["--hidden", 64, "--layers", 3, "--micro-batch", 4]


def hosts_run(hosts, slots, *args, cut=None, env=None, timeout=300):
    """`zeroc ARGS` on `hosts` namespace hosts × `slots` ranks each."""
    fwd = ["-x", "OMP_NUM_THREADS=1", "-x", "OPENBLAS_NUM_THREADS=1",
           "-x", "OMP_WAIT_POLICY=passive"]
    for v in ("ASAN_OPTIONS", "LSAN_OPTIONS", "UBSAN_OPTIONS"):
        if v in os.environ:
            fwd += ["-x", v]
    for k, v in (env or {}).items():
        fwd += ["-x", f"{k}={v}"]
    cmd = [BED, "--hosts", str(hosts), "--slots", str(slots), "--", *fwd, "--oversubscribe",
           "-np", str(hosts * slots), H_.zeroc, *map(str, args)]
    e = dict(os.environ)
    if cut:
        e["NETNS_HOSTS_CUT"] = cut
    # SIGTERM on a timeout, so the test bed tears itself down (SIGKILL would leave it behind)
    q = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=e)
    try:
        out, err = q.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        q.terminate()
        out, err = q.communicate(timeout=120)
        raise AssertionError(f"{' '.join(cmd)} timed out after {timeout} s:\n{out[-1500:]}\n"
                             f"{err[-1500:]}")
    p = subprocess.CompletedProcess(cmd, q.returncode, out, err)
    H_.check_sanitizers(cmd, p)
    return p


def train(hosts, slots, name, *args, ok=True, **kw):
    rep = H_.path(name + ".json")
    p = hosts_run(hosts, slots, "train", *args, "--report", rep, **kw)
    if ok and p.returncode != 0:
        raise AssertionError(f"{name}: exit {p.returncode}\n{p.stdout[-2000:]}\n{p.stderr[-3000:]}")
    return H_.report(name + ".json") if p.returncode == 0 else p


def config(name, **zero):
    path = H_.path(name + ".cfg.json")
    with open(path, "w") as f:
        json.dump({"zero_optimization": zero}, f)
    return path


def leftovers():
    """Namespaces, links and qdiscs of the test bed still present."""
    ns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    qd = subprocess.run(["tc", "qdisc"], capture_output=True, text=True).stdout
    return [line for line in (ns + links + qd).splitlines() if "zc-" in line]


def hosts_test_stages_bitwise_and_bytes():
    """2 hosts × 2 ranks: stages 0–3 give the same weights, bit for bit, as each other and as 4
    ranks on one host; each run's bytes per step and the bytes that leave the host are what
    `zeroc estimate --ranks 4 --ranks-per-node 2` says, for the stages and for stage 3 with qwZ,
    hpZ and two-hop qgZ (whose weights equal the one-machine run that groups ranks the same
    way, ZEROC_RANKS_PER_HOST=2)."""
    one = H_.run(4, "train", *MLP, "--stage", 3, "--steps", 5, "--report", H_.path("one.json"))
    ref = H_.report("one.json")["weights_sha256"]
    cases = [(s, {}, []) for s in range(4)] + [
        (3, {"zero_quantized_weights": True}, ["--quantized-weights"]),
        (3, {"zero_hpz_partition_size": 2}, ["--hpz", 2]),
        (3, {"zero_quantized_gradients": True}, ["--quantized-gradients"])]
    # the sanitizer pass: stage 3 alone and with each ZeRO++ option (stages 0–2 run the same
    # transport code with fewer collectives)
    for stage, zero, flags in H_.trim(cases, cases[3:]):
        name = f"st{stage}-" + "-".join(zero) if zero else f"st{stage}"
        rep = train(2, 2, name, *MLP, "--steps", 5,
                    "--config", config(name, stage=stage, **zero))
        est = [r for r in H_.estimate("--model", "mlp", *MLP, "--ranks", 4, "--ranks-per-node",
                                      2, *flags)["rows"] if r["stage"] == stage][0]
        got = (rep["comm"]["bytes_per_step"]["total"],
               rep["comm"]["inter_host_bytes_per_step"]["total"])
        want = (est["comm_bytes_per_step"], est["inter_node_comm_bytes_per_step"])
        check(got == want, f"{name}: (bytes, inter-host bytes) per step {got}, estimate {want}")
        if "zero_quantized_gradients" in zero:
            H_.run(4, "train", *MLP, "--steps", 5, "--config", config(name, stage=3, **zero),
                   "--report", H_.path("qgz-one.json"), env={"ZEROC_RANKS_PER_HOST": "2"})
            same = H_.report("qgz-one.json")["weights_sha256"]
            check(rep["weights_sha256"] == same, f"{name}: two-hop qgZ across hosts differs "
                                                 "from the same grouping on one machine")
        elif "zero_quantized_weights" not in zero:
            check(rep["weights_sha256"] == ref, f"{name}: weights differ from 4 ranks on one "
                                                f"host: {rep['weights_sha256']} vs {ref}")
    del one


def hosts_test_save_resume_reshard():
    """Saved on 2 hosts × 2 ranks at step 3; resumed there to step 6 it equals the uninterrupted
    run bit for bit; resumed on 1 host × 2 ranks (micro-batch doubled: the same 16 samples a
    step) it starts from exactly the saved weights and its losses stay within 1e-5 relative (a
    different N only reorders fp32 sums, as tests/test_checkpoint.py's reshard test says)."""
    ck = H_.path("hosts-ck")
    full = train(2, 2, "rs-full", *MLP, "--stage", 3, "--steps", 6)
    saved = train(2, 2, "rs-save", *MLP, "--stage", 3, "--steps", 3, "--save-dir", ck)
    back = train(2, 2, "rs-back", *MLP, "--stage", 3, "--steps", 6, "--resume", ck)
    check(back["initial_weights_sha256"] == saved["weights_sha256"] and
          back["weights_sha256"] == full["weights_sha256"],
          "resumed across hosts: not the uninterrupted run's weights")
    shape = ["--hidden", 64, "--layers", 3, "--micro-batch", 8]
    r = train(1, 2, "rs-two", *shape, "--stage", 2, "--steps", 6, "--resume", ck)
    check(r["initial_weights_sha256"] == saved["weights_sha256"],
          "resharded: loaded weights differ from the saved ones")
    worst = max(abs(a - b) / abs(b) for a, b in zip(r["loss"], full["loss"][3:]))
    check(worst <= 1e-5, f"resharded: loss rel diff {worst:.3g}")


def hosts_test_link_cut_ends_every_rank():
    """Host 1's link goes down 4 s into a long run with comm_timeout_s 8: rank 0 stops with an
    error naming the collective, the unit and the step, the job exits non-zero, and every rank
    and daemon on both hosts has ended by itself (the test bed names any that has not) — within
    the timeout plus the runtime's own detection, never a hang."""
    t0 = time.time()
    p = train(2, 1, "cut", "--hidden", 512, "--layers", 4, "--stage", 3, "--steps", 10 ** 6,
              "--comm-timeout", 8, cut="4:1", ok=False, timeout=240)
    took = time.time() - t0
    err = p.stderr
    # a collective names its unit and step; the update's control gather (no unit) its step
    named = re.search(r"(all_gather|reduce_scatter) \(unit '[^']+', step \d+\)|"
                      r"control \([^()]*, step \d+\)", err)
    check(p.returncode != 0 and "waited more than comm_timeout_s = 8 s" in err and named and
          "still running" not in err and took < 150,
          f"cut link: exit {p.returncode} after {took:.0f} s:\n{err[-1500:]}")
    print(f"  the run ended {took:.0f} s after it started (link cut at 4 s, timeout 8 s)")


def hosts_test_testbed_cleans_up():
    """No namespace, link or qdisc of the test bed is left after a passing run, a failing run,
    a run with rate limits, or a run killed by a signal."""
    p = hosts_run(2, 1, "train", *MLP, "--steps", 2)
    check(p.returncode == 0 and not leftovers(), f"after a pass: {leftovers()}")
    p = hosts_run(2, 1, "train", *MLP, "--steps", 2, "--stage", 7)
    check(p.returncode != 0 and not leftovers(), f"after a failure: {leftovers()}")
    p = subprocess.run([BED, "--hosts", "2", "--rate", "1gbit", "--", "-np", "2", "true"],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    check(p.returncode == 0 and not leftovers(), f"after rate limits: {p.stderr} {leftovers()}")
    q = subprocess.Popen([BED, "--hosts", "2", "--", "-np", "2", "sleep", "60"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(5)
    q.terminate()
    q.wait(timeout=120)
    check(not leftovers(), f"after SIGTERM: {leftovers()}")


TESTS = [hosts_test_stages_bitwise_and_bytes, hosts_test_save_resume_reshard,
         hosts_test_link_cut_ends_every_rank, hosts_test_testbed_cleans_up]

if __name__ == "__main__":
    probe = f"zc-probe-{os.getpid()}"
    if not shutil.which("ip"):
        print("skipped: the ip command (Debian's iproute2; scripts/deps.sh installs it) is missing")
        sys.exit(77)
    if os.geteuid() != 0 or subprocess.run(["ip", "netns", "add", probe],
                                           capture_output=True).returncode != 0:
        print("skipped: network namespaces cannot be made here (needs root and CAP_NET_ADMIN)")
        sys.exit(77)
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    H_.main(TESTS, sys.argv[3:])
