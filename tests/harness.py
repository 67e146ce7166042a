"""harness.py — what the end-to-end test scripts share: running `zeroc` under mpirun, recording
failures without stopping, reading safetensors files, and the closing summary line."""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile


PANGRAMS = ("The quick brown fox jumps over the lazy dog. Pack my box with five dozen liquor "
            "jugs! 0123456789 How vexingly quick daft zebras jump; sphinx of black quartz, judge "
            "my vow.\n")


# zeroc's commands that run as one process without MPI (cli/main.c)
ONE_PROCESS = ("estimate", "ckpt", "prepare", "plot", "tokenize", "detokenize")


def one_process_env(env):
    """env for a command that never starts MPI (ONE_PROCESS): in the sanitizer pass, malloc's
    stacks by the fast frame-pointer unwinder. scripts/test.sh asks for the slow one so that the
    MPI runtime's leaks (its libraries have no frame pointers) show the frames tests/lsan.supp
    names; without MPI there are none to name, and loading a 150k-token tokenizer.json then
    costs 0.8 s instead of 8. Leaks and memory errors are still found, with shorter stacks."""
    env = dict(env)
    for key in ("ASAN_OPTIONS", "LSAN_OPTIONS"):
        if key in env:
            env[key] = env[key].replace("fast_unwind_on_malloc=0", "fast_unwind_on_malloc=1")
    return env


class Harness:
    def __init__(self, zeroc, mpirun):
        self.zeroc, self.mpirun = zeroc, mpirun
        self.tmp = tempfile.mkdtemp(prefix="zeroc-test-")
        self.failures = []

    def path(self, name):
        return os.path.join(self.tmp, name)

    def run(self, n, *args, ok=True, timeout=300, env=None):
        """Runs `zeroc ARGS` on n ranks (with env added to the environment); with ok, a non-zero
        exit raises. In the sanitizer pass a run of one rank that is meant to fail (a refused
        input, most of them) starts without mpirun, as a user's `zeroc train` does, with the
        threads mpirun.sh gives: the refusal's code is the same, and mpirun's own start is
        saved. The commands that never start MPI (ONE_PROCESS) run on one rank
        without mpirun too."""
        cmd = [self.mpirun, str(n), self.zeroc, *map(str, args)]
        env = {**os.environ, **(env or {})}
        if n == 1 and (args[0] in ONE_PROCESS or not ok and self.sanitized):
            cmd = cmd[2:]
            env = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
                   "OMP_WAIT_POLICY": "passive", **env}
        if args[0] in ONE_PROCESS:
            env = one_process_env(env)
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        self.check_sanitizers(cmd, p)
        if ok and p.returncode != 0:
            raise AssertionError(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
        return p

    def text_tokens(self):
        """(train, val) byte-level token files of a short pangram text, made once by `zeroc
        prepare`."""
        prefix = self.path("text")
        if not os.path.exists(prefix + "_train.bin"):
            with open(self.path("text.txt"), "w") as f:
                f.write(PANGRAMS * 40)
            self.run(1, "prepare", "--text", self.path("text.txt"), "--out", prefix)
        return prefix + "_train.bin", prefix + "_val.bin"

    def estimate(self, *args):
        """`zeroc estimate --json ARGS`, parsed."""
        p = subprocess.run([self.zeroc, "estimate", "--json", *map(str, args)],
                           capture_output=True, text=True, timeout=60,
                           env=one_process_env(os.environ))
        if p.returncode != 0:
            raise AssertionError(f"estimate {args} failed: {p.stderr}")
        return json.loads(p.stdout)

    @property
    def sanitized(self):
        """True in the sanitizer pass (scripts/test.sh sets ASAN_OPTIONS): statistical checks
        of training numerics (many seeds of 200 steps) run in the plain pass only — the
        sanitizers check memory and undefined behaviour, not convergence, at 5–10× the time."""
        return "ASAN_OPTIONS" in os.environ

    def trim(self, full, subset):
        """A test's matrix of cases: `full` in the plain pass, `subset` in the sanitizer pass.
        The sanitizers look for memory errors and undefined behaviour in the code a case runs;
        more ranks or stages of the same code add 5–10× time there, not coverage. The subset
        keeps an odd N (padding) and stage 3 (the most code) wherever the full matrix has them."""
        return subset if self.sanitized else full

    def check_sanitizers(self, cmd, p):
        """A sanitizer's report fails the test even when the run was meant to fail: error paths
        (a refused input, a NaN stop) run under AddressSanitizer with leak detection in the
        sanitizer build, and must not leak or touch freed memory either."""
        for mark in ("ERROR: LeakSanitizer", "ERROR: AddressSanitizer", "runtime error:"):
            if mark in p.stderr:
                at = p.stderr.index(mark)
                self.check(False, f"{' '.join(map(str, cmd[:6]))}...: sanitizer report:\n"
                                  f"{p.stderr[at:at + 1500]}")
                return

    def check(self, cond, msg):
        if not cond:
            self.failures.append(msg)
            print("  FAIL:", msg, flush=True)

    def report(self, name):
        with open(self.path(name)) as f:
            return json.load(f)

    def main(self, tests, wanted):
        unknown = sorted(set(wanted) - {t.__name__ for t in tests})
        if unknown:  # a name CMake runs that the file does not list would pass having run nothing
            print(f"no such test in this file's TESTS: {', '.join(unknown)}")
            sys.exit(2)
        passed = 0
        for t in tests:
            if wanted and t.__name__ not in wanted:
                continue
            print(t.__name__, flush=True)
            before = len(self.failures)
            try:
                t()
            except Exception as ex:  # zeroc or the harness crashed: a failure, not a skip
                self.failures.append(f"{t.__name__}: {ex}")
                print("  FAIL:", ex, flush=True)
            if len(self.failures) == before:
                passed += 1
                print("  ok", flush=True)
        failed = sum(1 for t in tests if (not wanted or t.__name__ in wanted)) - passed
        print(f"{passed} passed, {failed} failed")
        # the work files (a 124M checkpoint is 1.9 GB) go, unless a failure needs them looked at
        if failed:
            print(f"work files kept in {self.tmp}")
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)
        sys.exit(1 if failed else 0)


def read_safetensors(path):
    """{name: tuple of floats} of an F32 safetensors file, parsed by hand."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        assert t["dtype"] == "F32"
        b, e = t["data_offsets"]
        out[name] = struct.unpack(f"<{(e - b) // 4}f", body[b:e])
    return out
