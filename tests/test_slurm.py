#!/usr/bin/env python3
"""test_slurm.py — zeroc launched by Slurm as HPC centres launch it (srun, sbatch; no mpirun, no
ssh), on a one-node cluster of Debian's slurm-wlm that this test starts and stops itself
(python3 stdlib only; prints "N passed, N failed"). Exits 77 (skipped) where Slurm is not
installed (scripts/deps.sh installs it), the test is not root, or the daemons do not start.

Usage: test_slurm.py ZEROC_BINARY MPIRUN_SH [test-name ...]

The cluster: slurmctld and slurmd in the foreground (-D), each in a session of its own, with a
slurm.conf, state, spool and logs in a temporary directory, free ports, no accounting, no
cgroups (proctrack/linuxproc), auth/none where this Slurm still has it (else munged with a key
of its own; ZEROC_TEST_SLURM_AUTH=munge takes that path here too). Everything is torn down whatever happens — every process whose environment names
this test's SLURM_CONF (daemons, slurmstepd, srun, the tasks) is killed — and the last test
checks that nothing of it is left running."""
import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from harness import Harness

H_ = Harness(os.path.abspath(sys.argv[1]), sys.argv[2])  # the tasks start in the cluster's dir
check = H_.check
MLP = ["--model", "mlp", "--hidden", 64, "--layers", 3, "--micro-batch", 4, "--steps", 3]
CPUS = os.cpu_count() or 1
PLUGIN_DIRS = ["/usr/lib/x86_64-linux-gnu/slurm-wlm", "/usr/lib/*/slurm-wlm", "/usr/lib*/slurm"]


def has_plugin(name):
    return any(glob.glob(os.path.join(d, name + ".so")) for d in PLUGIN_DIRS)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """A one-node Slurm cluster in dir: start() raises RuntimeError (with the logs) when it does
    not come up; stop() leaves no process of it behind, whatever state it is in."""

    def __init__(self, dir, task_plugin="task/affinity"):
        self.dir, self.task_plugin = dir, task_plugin
        self.conf = os.path.join(dir, "slurm.conf")
        self.procs = []
        self.env = {**os.environ, "SLURM_CONF": self.conf}
        for v in ("SLURM_MPI_TYPE", "SLURM_CPUS_PER_TASK", "SLURM_JOB_ID"):  # an outer job's
            self.env.pop(v, None)

    def _start(self, *cmd):
        log = open(os.path.join(self.dir, "log", os.path.basename(cmd[0]) + ".out"), "w")
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                             env=self.env, start_new_session=True)
        log.close()
        self.procs.append(p)
        return p

    def start(self):
        for d in ("state", "spool", "log", "munge"):
            os.makedirs(os.path.join(self.dir, d), exist_ok=True)
        auth = "none" if has_plugin("auth_none") and has_plugin("cred_none") else "munge"
        auth = os.environ.get("ZEROC_TEST_SLURM_AUTH", auth)  # "munge": the fallback, tested
        lines = [
            "ClusterName=zeroctest", "SlurmctldHost=localhost", "SlurmUser=root",
            "SlurmdUser=root", f"SlurmctldPort={free_port()}", f"SlurmdPort={free_port()}",
            f"AuthType=auth/{auth}", f"CredType=cred/{auth}",
            f"StateSaveLocation={self.dir}/state", f"SlurmdSpoolDir={self.dir}/spool",
            f"SlurmctldPidFile={self.dir}/slurmctld.pid", f"SlurmdPidFile={self.dir}/slurmd.pid",
            f"SlurmctldLogFile={self.dir}/log/slurmctld.log",
            f"SlurmdLogFile={self.dir}/log/slurmd.log",
            "ProctrackType=proctrack/linuxproc", f"TaskPlugin={self.task_plugin}",
            "SelectType=select/cons_tres", "SelectTypeParameters=CR_CPU", "MpiDefault=none",
            "ReturnToService=2", "SchedulerType=sched/builtin",
            "AccountingStorageType=accounting_storage/none", "JobCompType=jobcomp/none",
            f"NodeName=localhost CPUs={CPUS} State=UNKNOWN",
            "PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP"]
        if auth == "munge":  # a munged of our own: its key, socket and files in dir
            sock = os.path.join(self.dir, "munge", "munge.socket")
            key = os.path.join(self.dir, "munge", "munge.key")
            with open(key, "wb") as f:
                f.write(os.urandom(128))
            os.chmod(key, 0o400)
            os.chmod(os.path.join(self.dir, "munge"), 0o700)
            lines.append(f"AuthInfo=socket={sock}")
            self._start("munged", "--foreground", "--force", f"--key-file={key}",
                        f"--socket={sock}", f"--pid-file={self.dir}/munge/munged.pid",
                        f"--log-file={self.dir}/log/munged.log",
                        f"--seed-file={self.dir}/munge/munged.seed")
            time.sleep(1)
        with open(self.conf, "w") as f:
            f.write("\n".join(lines) + "\n")
        self._start("slurmctld", "-D", "-i")
        self._start("slurmd", "-D", "-N", "localhost")
        deadline = time.time() + 60
        while time.time() < deadline:
            if any(p.poll() is not None for p in self.procs):
                break
            s = self.run(["sinfo", "-h", "-n", "localhost", "-o", "%T"], timeout=20)
            if s.returncode == 0 and s.stdout.strip() == "idle":
                return auth
            time.sleep(0.5)
        raise RuntimeError(f"the node did not become idle (auth/{auth}):\n{self.logs()}")

    def logs(self):
        out = []
        for f in sorted(glob.glob(os.path.join(self.dir, "log", "*"))):
            with open(f, errors="replace") as g:
                out.append(f"--- {os.path.basename(f)}\n" + "".join(g.readlines()[-15:]))
        return "\n".join(out)

    def run(self, cmd, timeout=300):
        try:
            return subprocess.run(list(map(str, cmd)), capture_output=True, text=True,
                                  timeout=timeout, env=self.env, cwd=self.dir)
        except subprocess.TimeoutExpired as e:
            raise AssertionError(f"{' '.join(map(str, cmd))} timed out after {timeout} s:\n"
                                 f"{e.stdout}\n{e.stderr}\n{self.logs()}")

    def leftovers(self):
        """Pids of every process whose environment holds this cluster's SLURM_CONF or whose
        command line names its directory (the daemons, slurmstepd, srun, the tasks)."""
        mark, conf, me = f"SLURM_CONF={self.conf}".encode(), self.dir.encode(), os.getpid()
        pids = []
        for d in glob.glob("/proc/[0-9]*"):
            pid = int(d[6:])
            if pid == me:
                continue
            try:
                with open(d + "/environ", "rb") as f:
                    env = f.read().split(b"\0")
                with open(d + "/cmdline", "rb") as f:
                    cmd = f.read()
                with open(d + "/stat", "rb") as f:
                    zombie = f.read().rsplit(b")", 1)[1].split()[0] == b"Z"
            except OSError:
                continue
            if not zombie and (mark in env or conf in cmd):
                pids.append(pid)
        return pids

    def stop(self):
        for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
            for p in self.procs:
                try:
                    os.killpg(p.pid, sig)  # each daemon leads a session and group of its own
                except ProcessLookupError:
                    pass
            for pid in self.leftovers():
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
            deadline = time.time() + wait
            while time.time() < deadline and (self.leftovers() or
                                              any(p.poll() is None for p in self.procs)):
                time.sleep(0.2)
            if not self.leftovers() and all(p.poll() is not None for p in self.procs):
                break
        for p in self.procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass


C_ = None  # the cluster the tests share


def threads_line(out):
    return next((l for l in out.splitlines() if l.startswith("threads:")), "")


def srun_train(name, *srun_args, ok=True):
    rep = H_.path(name + ".json")
    p = C_.run(["srun", *srun_args, H_.zeroc, "train", *MLP, "--report", rep])
    if ok and p.returncode != 0:
        raise AssertionError(f"srun {' '.join(map(str, srun_args))} failed ({p.returncode}):\n"
                             f"{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    return p, rep


def test_srun_pmix_one_rank_per_task():
    """srun --mpi=pmix -n 2: one world of 2 ranks (not 2 runs of 1), each rank one thread on the
    one CPU Slurm bound its task to."""
    if CPUS < 2:
        print("  (skipped: needs 2 CPUs for 2 tasks)")
        return
    p, rep = srun_train("pmix2", "--mpi=pmix", "-n", 2, "-c", 1)
    check(H_.report("pmix2.json")["world_size"] == 2, f"world_size not 2:\n{p.stdout[-1500:]}")
    t = threads_line(p.stdout)
    check(t.startswith("threads: 1 compute thread per rank") and
          "shared with no other rank" in t, f"threads: {t!r}")
    check(p.stdout.count("step     3/3") == 1, f"not one run:\n{p.stdout[-1500:]}")


def test_srun_cpus_per_task_threads():
    """srun -n 1 -c N: the rank runs N threads, the CPUs of its task."""
    p, _ = srun_train("c", "--mpi=pmix", "-n", 1, "-c", CPUS)
    t = threads_line(p.stdout)
    check(t.startswith(f"threads: {CPUS} compute thread{'s' if CPUS > 1 else ''} per rank"),
          f"-c {CPUS}: {t!r}")


def test_srun_without_mpi_plugin_refused():
    """srun without --mpi (MpiDefault=none): one message, from task 0, naming --mpi=pmix; no
    rank trains, no report is written — not N runs of one rank writing the same files, nor
    Open MPI's abort about rebuilding it."""
    p, rep = srun_train("nompi", "-n", 2 if CPUS >= 2 else 1, ok=False)
    check(p.returncode != 0, "srun without an MPI plugin ran")
    check(p.stderr.count("zeroc: error:") == 1 and "srun --mpi=pmix" in p.stderr,
          f"the refusal: {p.stderr[-1500:]}")
    check("MPI_Init" not in p.stderr and "step " not in p.stdout,
          f"MPI started or a rank trained:\n{p.stdout[-800:]}\n{p.stderr[-800:]}")
    check(not os.path.exists(rep), "a report was written")
    if CPUS >= 2:  # analyze too (it would start an mpirun in each task); estimate acts on task 0
        a = C_.run(["srun", "-n", 2, H_.zeroc, "analyze", "--ranks", 2])
        check(a.returncode != 0 and a.stderr.count("zeroc: error:") == 1 and
              "--mpi=pmix" in a.stderr and "mpirun" not in a.stderr, f"analyze: {a.stderr[-800:]}")
        e = C_.run(["srun", "-n", 2, H_.zeroc, "estimate", "--model", "mlp", "--json"])
        check(e.returncode == 0 and e.stdout.count('"units"') == 1,
              f"estimate on 2 tasks ({e.returncode}):\n{e.stdout[-800:]}\n{e.stderr[-800:]}")
    # the same srun with the plugin named by the environment, as the message says, runs
    e = C_.env
    C_.env = {**e, "SLURM_MPI_TYPE": "pmix"}
    try:
        p, _ = srun_train("mpitype", "-n", 1)
    finally:
        C_.env = e
    check(H_.report("mpitype.json")["world_size"] == 1, "SLURM_MPI_TYPE=pmix did not run")


SBATCH = """#!/bin/bash
#SBATCH --job-name=zeroc
#SBATCH --nodes=1
#SBATCH --ntasks-per-node={tasks}
#SBATCH --cpus-per-task=1
#SBATCH --output={out}
srun --mpi=pmix {zeroc} train {args} --report {rep}
"""


def test_sbatch_script():
    """The README's shape of batch script: sbatch --wait runs it, srun inside it starts the
    ranks of one run, and the output file holds the run."""
    tasks = 2 if CPUS >= 2 else 1
    out, rep, script = H_.path("sbatch.out"), H_.path("sbatch.json"), H_.path("job.sh")
    with open(script, "w") as f:
        f.write(SBATCH.format(tasks=tasks, out=out, zeroc=H_.zeroc,
                              args=" ".join(map(str, MLP)), rep=rep))
    p = C_.run(["sbatch", "--wait", script])
    log = open(out).read() if os.path.exists(out) else "(no output file)"
    check(p.returncode == 0, f"sbatch: {p.returncode}\n{p.stdout}\n{p.stderr}\n{log[-1500:]}")
    check(os.path.exists(rep) and H_.report("sbatch.json")["world_size"] == tasks,
          f"the batch job's run:\n{log[-1500:]}")
    check("step     3/3" in log and threads_line(log).startswith("threads: 1 compute thread"),
          f"the output file: {log[-1500:]}")


def test_cpus_per_task_caps_unbound_tasks():
    """Where Slurm does not bind its tasks (TaskPlugin=task/none) a task's mask is the whole node:
    a rank takes no more threads than srun's --cpus-per-task. Its own cluster, stopped after."""
    if CPUS < 2:
        print("  (skipped: needs 2 CPUs)")
        return
    global C_
    shared = C_
    C_ = Cluster(H_.path("unbound"), task_plugin="task/none")
    os.makedirs(C_.dir)
    try:
        C_.start()
        p, _ = srun_train("unbound", "--mpi=pmix", "-n", 1, "-c", 1)
        t = threads_line(p.stdout)
        check(t.startswith("threads: 1 compute thread per rank") and
              "SLURM_CPUS_PER_TASK=1" in t and f"the {CPUS} CPUs it may run on" in t,
              f"-c 1 unbound: {t!r}")
    finally:
        C_.stop()
        left = C_.leftovers()
        C_ = shared
    check(not left, f"processes of the second cluster left: {left}")


def test_nothing_left_behind():
    """Stopping the cluster leaves no daemon, slurmstepd or task of it running (checked again by
    main after the tests)."""
    C_.stop()
    check(not C_.leftovers(), f"left running: {C_.leftovers()}")


TESTS = [test_srun_pmix_one_rank_per_task, test_srun_cpus_per_task_threads,
         test_srun_without_mpi_plugin_refused, test_sbatch_script,
         test_cpus_per_task_caps_unbound_tasks, test_nothing_left_behind]

def skip(why):
    print(f"skipped: {why}")
    shutil.rmtree(H_.tmp, ignore_errors=True)
    sys.exit(77)


if __name__ == "__main__":
    if H_.sanitized:  # zeroc's part under srun is launcher detection and thread counts, which
        # the environment tests run under the sanitizers; here the daemons' start-up is the cost
        skip("the sanitizer pass (Slurm's launch is tested in the plain pass)")
    missing = [c for c in ("slurmctld", "slurmd", "srun", "sbatch", "sinfo") if not shutil.which(c)]
    if missing:
        skip(f"{', '.join(missing)} missing (Debian's slurmctld, slurmd and slurm-client; "
             "scripts/deps.sh installs them)")
    if os.geteuid() != 0:
        skip("needs root to run slurmd (it starts tasks as their job's user)")
    if not has_plugin("mpi_pmix") and not has_plugin("mpi_pmix_v4") and \
            not has_plugin("mpi_pmix_v5"):
        skip("this Slurm has no PMIx plugin (srun --mpi=list)")
    # its own directory, outside the harness's (which goes when the tests pass): removed last
    C_ = Cluster(tempfile.mkdtemp(prefix="zeroc-slurm-"))
    try:
        try:
            auth = C_.start()
        except RuntimeError as e:
            C_.stop()
            shutil.rmtree(C_.dir, ignore_errors=True)
            if C_.leftovers():
                print(f"FAIL: left running after a failed start: {C_.leftovers()}")
                sys.exit(1)
            skip(f"Slurm's daemons did not start here: {e}")
        print(f"cluster up: 1 node, {CPUS} CPUs, auth/{auth}, "
              f"{C_.run(['srun', '--version']).stdout.strip()}", flush=True)
        try:
            H_.main(TESTS, sys.argv[3:])
        except SystemExit as e:
            code = e.code
        else:
            code = 0
    finally:
        C_.stop()
        shutil.rmtree(C_.dir, ignore_errors=True)
    left = C_.leftovers()
    if left:
        print(f"FAIL: processes of the test's cluster left running: {left}")
        sys.exit(1)
    sys.exit(code)
