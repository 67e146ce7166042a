#!/usr/bin/env python3
"""test_checkpoint.py — sharded checkpoints end to end (python3 stdlib; numpy if present):
exact resume, a crash in the middle of a save, resharding to other rank counts and stages,
safetensors export, corruption, and a full disk. Prints "N passed, N failed".

Usage: test_checkpoint.py ZEROC_BINARY MPIRUN_SH [test-name ...]"""
import hashlib
import json
import os
import signal
import shutil
import socket
import struct
import subprocess
import sys

from harness import Harness, read_safetensors

H_ = Harness(sys.argv[1], sys.argv[2])
check = H_.check
MLP = ["--hidden", 48, "--layers", 3, "--micro-batch", 4]


def gpt2_args():
    data = H_.path("tok.bin")
    if not os.path.exists(data):
        with open(data, "wb") as f:
            f.write(struct.pack("<256i", 20240520, 1, 6000, *([0] * 253)))
            f.write(struct.pack("<6000H", *((i * 7919 + i // 7) % 256 for i in range(6000))))
    return ["--model", "gpt2", "--data", data, "--layers", 2, "--channels", 32, "--heads", 2,
            "--seq-len", 16, "--micro-batch", 2]


def train(n, name, *args, ok=True, env=None):
    rep = H_.path(name + ".json")
    cmd = [H_.mpirun, str(n), H_.zeroc, "train", *map(str, args), "--report", rep]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                       env={**os.environ, **(env or {})})
    if ok and p.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)}: {p.stderr}")
    return (json.load(open(rep)) if p.returncode == 0 else None), p


def tree_digest(path):
    h = hashlib.sha256()
    for root, dirs, files in sorted(os.walk(path)):
        dirs.sort()
        for f in sorted(files):
            h.update(f.encode())
            h.update(open(os.path.join(root, f), "rb").read())
    return h.hexdigest()


def test_exact_resume():
    """20 steps equal 10 steps + save + a new job resuming for 10, bit for bit (weights and
    losses), for stages 0–3 on 2 ranks, MLP and GPT-2."""
    for model, args, stages in (("mlp", MLP, range(4)),
                                ("gpt2", gpt2_args(), H_.trim(range(4), (3,)))):
        for stage in stages:
            tag = f"{model}-s{stage}"
            full, _ = train(2, f"full-{tag}", *args, "--stage", stage, "--steps", 20)
            d = H_.path(f"ck-{tag}")
            train(2, f"a-{tag}", *args, "--stage", stage, "--steps", 10, "--save-dir", d,
                  "--save-every", 10)
            b, _ = train(2, f"b-{tag}", *args, "--stage", stage, "--steps", 20, "--resume", d)
            check(b["weights_sha256"] == full["weights_sha256"], f"{tag}: resumed weights differ")
            check(b["first_step"] == 10 and b["loss"] == full["loss"][10:],
                  f"{tag}: resumed losses differ")


def test_crash_during_save():
    """A rank killed (SIGKILL) in the middle of a later save — after writing its shard, or rank 0
    after writing the manifest — leaves the previous checkpoint intact and `latest` on it; the
    resumed run ends exactly where an uninterrupted one does."""
    full, _ = train(2, "crash-full", *MLP, "--stage", 3, "--steps", 12)
    for fault in ("shard:1@8", "publish@8"):
        d = H_.path(f"ck-crash-{fault.replace(':', '').replace('@', '')}")
        _, p = train(2, f"crash-{fault}", *MLP, "--stage", 3, "--steps", 12, "--save-dir", d,
                     "--save-every", 4, ok=False, env={"ZEROC_FAULT_KILL_IN_SAVE": fault})
        check(p.returncode != 0, f"{fault}: the job was not killed")
        latest = open(os.path.join(d, "latest")).read().strip()
        check(latest == "step-000004", f"{fault}: latest is {latest}")
        v = subprocess.run([H_.zeroc, "ckpt", "verify", d], capture_output=True, text=True)
        check(v.returncode == 0 and "step 4" in v.stdout, f"{fault}: verify: {v.stdout}{v.stderr}")
        r, _ = train(2, f"crash-resume-{fault}", *MLP, "--stage", 3, "--steps", 12, "--resume", d)
        check(r["first_step"] == 4 and r["weights_sha256"] == full["weights_sha256"],
              f"{fault}: resumed run differs from the uninterrupted one")


def test_crash_resaving_a_step():
    """A step saved again (a resume from an earlier step into the same --save-dir, while `latest`
    names that step) and killed between replacing the old copy and rewriting `latest` — with
    RENAME_EXCHANGE, and on the path of a file system without it — never leaves `latest` naming a
    missing checkpoint for the next run: it goes on, and ends where an uninterrupted run does (it
    refused: `latest` named a step-6 that had been moved aside, and the new copy was swept). A
    crash while --keep removes an old checkpoint leaves nothing the next run does not remove
    (a step-N whose manifest went first was never deleted). A symbolic link planted as the
    save directory's .lock is refused, not followed."""
    full, _ = train(1, "resave-full", *MLP, "--steps", 8)
    base = H_.path("ck-resave")
    train(1, "resave-base", *MLP, "--steps", 6, "--save-dir", base, "--save-every", 1,
          "--keep", 2)
    for mode, env in (("exchange", {}), ("aside", {"ZEROC_FAULT_NO_RENAME_EXCHANGE": "1"})):
        d = H_.path(f"ck-resave-{mode}")
        shutil.copytree(base, d)
        _, p = train(1, f"resave-kill-{mode}", *MLP, "--steps", 6, "--save-every", 1,
                     "--resume", os.path.join(d, "step-000005"), "--save-dir", d, ok=False,
                     env={"ZEROC_FAULT_KILL_IN_SAVE": "swap@6", **env})
        check(p.returncode != 0, f"{mode}: the job was not killed")
        r, p = train(1, f"resave-resume-{mode}", *MLP, "--steps", 8, "--resume", d,
                     "--save-dir", d, ok=False)
        check(p.returncode == 0 and r and r["first_step"] == 6 and
              r["weights_sha256"] == full["weights_sha256"],
              f"{mode}: the next run after the crash: {p.returncode} {p.stderr[-400:]}")
        left = sorted(x for x in os.listdir(d) if x.startswith("."))
        check(left == [], f"{mode}: left behind: {left}")
    # a symbolic link planted as the lock file is refused, its target untouched (it was
    # followed and overwritten with the holder's pid)
    d = H_.path("ck-lock-link")
    os.makedirs(d)
    victim = H_.path("lock-victim.txt")
    with open(victim, "w") as f:
        f.write("important data\n")
    os.symlink(victim, os.path.join(d, ".lock"))
    _, p = train(1, "lock-link", *MLP, "--steps", 1, "--save-dir", d, ok=False)
    check(p.returncode != 0 and "is a symbolic link" in p.stderr,
          f"a .lock symlink: {p.returncode} {p.stderr[-300:]}")
    check(open(victim).read() == "important data\n", "the lock link's target was overwritten")
    d = H_.path("ck-prune-kill")
    _, p = train(1, "prune-kill", *MLP, "--steps", 4, "--save-every", 1, "--keep", 1,
                 "--save-dir", d, ok=False, env={"ZEROC_FAULT_KILL_IN_SAVE": "prune@3"})
    check(p.returncode != 0, "prune: the job was not killed")
    train(1, "prune-next", *MLP, "--steps", 6, "--save-every", 1, "--keep", 1, "--resume", d,
          "--save-dir", d)
    names = sorted(x for x in os.listdir(d) if x != ".lock")
    check(names == ["latest", "step-000006"], f"prune: the directory holds {names}")


def test_reshard():
    """Saved on 4 ranks at stage 3; resumed on 1, 2 and 3 ranks at every stage: the loaded
    weights are exactly the saved ones, and the losses of the next steps are within 1e-5
    relative of the uninterrupted 4-rank run (the same 12 samples per step: micro-batch 12/N;
    another N only reorders fp32 sums)."""
    d = H_.path("ck-reshard")
    shape = MLP[:-2]  # the micro-batch is given per run
    full, _ = train(4, "rs-full", *shape, "--micro-batch", 3, "--stage", 3, "--steps", 10)
    saved, _ = train(4, "rs-save", *shape, "--micro-batch", 3, "--stage", 3, "--steps", 5,
                     "--save-dir", d, "--save-every", 5)
    for n in (1, 2, 3):
        for stage in range(4):
            r, _ = train(n, f"rs-{n}-{stage}", *shape, "--micro-batch", 12 // n, "--stage", stage,
                         "--steps", 10, "--resume", d)
            check(r["initial_weights_sha256"] == saved["weights_sha256"],
                  f"N={n} stage {stage}: loaded weights differ from the saved ones")
            worst = max(abs(a - b) / abs(b) for a, b in zip(r["loss"], full["loss"][5:]))
            check(worst <= 1e-5, f"N={n} stage {stage}: loss rel diff {worst:.3g}")


def test_export_safetensors():
    """`zeroc ckpt export` gives the model's weights (digest), readable by hand and by numpy; its
    flags may stand before the checkpoint; DIR/step-3 for DIR/step-000003 is told the name."""
    d = H_.path("ck-export")
    a, _ = train(3, "ex", *MLP, "--stage", 2, "--steps", 3, "--save-dir", d, "--save-every", 3)
    out = H_.path("ex.safetensors")
    H_.run(1, "ckpt", "export", d, "--out", out)
    # the flags may come before the checkpoint: the same export
    out2 = H_.path("ex2.safetensors")
    H_.run(1, "ckpt", "export", "--out", out2, d)
    check(open(out2, "rb").read() == open(out, "rb").read(), "export --out FILE DIR differs")
    # a step directory named without the zeros of its name is told the name that exists
    p = H_.run(1, "ckpt", "verify", os.path.join(d, "step-3"), ok=False)
    check(p.returncode == 1 and f"did you mean {os.path.join(d, 'step-000003')}?" in p.stderr,
          f"ckpt verify DIR/step-3: {p.returncode} {p.stderr!r}")
    t = read_safetensors(out)
    h = hashlib.sha256()
    for k in t:
        h.update(struct.pack(f"<{len(t[k])}f", *t[k]))
    check(h.hexdigest() == a["weights_sha256"], "export: tensors differ from the weights")
    p = subprocess.run(["/usr/bin/python3", "-c", f"""
import json, struct, numpy as np
b = open({out!r}, 'rb').read(); n = struct.unpack('<Q', b[:8])[0]; h = json.loads(b[8:8 + n])
w = h['fc1.weight']; s, e = w['data_offsets']
a = np.frombuffer(b[8 + n + s:8 + n + e], dtype='<f4').reshape(w['shape'])
print(a.shape, float(a.sum()))"""], capture_output=True, text=True)
    if "No module named" in p.stderr or not os.path.exists("/usr/bin/python3"):
        print("  (numpy absent: by-hand reader only)")
    else:
        want = sum(t["fc1.weight"])
        got = float(p.stdout.split(")")[1]) if p.returncode == 0 else None
        check(got is not None and abs(got - want) <= 1e-3 * max(1, abs(want)),
              f"numpy read {p.stdout!r} {p.stderr!r}")


def test_export_formats_and_init():
    """GPT-2: `export --format llmc` is byte-identical to `train --save-final` (which says what it
    wrote); `--dtype bf16`
    halves the data with round-to-nearest-even; `train --init FILE.safetensors` starts from
    exactly the exported weights (on other ranks and another stage); --keep keeps the newest."""
    d = H_.path("ck-g")
    final = H_.path("g-final.bin")
    g, gp = train(2, "g", *gpt2_args(), "--stage", 3, "--steps", 6, "--save-dir", d,
                  "--save-every", 2, "--keep", 2, "--save-final", final)
    check(f"wrote {final} (an llm.c GPT-2 checkpoint" in gp.stdout,
          f"--save-final says nothing of what it wrote: {gp.stdout[-500:]!r}")
    check(sorted(f for f in os.listdir(d) if f.startswith("step-")) ==
          ["step-000004", "step-000006"], f"--keep 2 left {os.listdir(d)}")
    H_.run(1, "ckpt", "export", d, "--format", "llmc", "--out", H_.path("g-exp.bin"))
    check(open(H_.path("g-exp.bin"), "rb").read() == open(final, "rb").read(),
          "llmc export differs from --save-final")
    st32, st16 = H_.path("g32.safetensors"), H_.path("g16.safetensors")
    H_.run(1, "ckpt", "export", d, "--out", st32)
    H_.run(1, "ckpt", "export", d, "--dtype", "bf16", "--out", st16)
    f32, raw16 = read_safetensors(st32), open(st16, "rb").read()
    (n,) = struct.unpack("<Q", raw16[:8])
    h16 = json.loads(raw16[8:8 + n])
    b, e = h16["wte"]["data_offsets"]
    vals = struct.unpack(f"<{(e - b) // 2}H", raw16[8 + n + b:8 + n + e])
    def rne(x):
        u = struct.unpack("<I", struct.pack("<f", x))[0]
        return (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    check(h16["wte"]["dtype"] == "BF16" and list(vals) == [rne(x) for x in f32["wte"]],
          "bf16 export is not the round-to-nearest-even of the fp32 weights")
    i, _ = train(3, "g-init", *gpt2_args(), "--stage", 1, "--steps", 1, "--init", st32)
    check(i["initial_weights_sha256"] == g["weights_sha256"],
          "--init FILE.safetensors did not give the exported weights")


def test_init_offsets_out_of_range():
    """--init FILE.safetensors whose data_offsets hold a number past a double's range (1e400,
    which reads as infinity) or a string is refused naming the tensor and the values as out of
    range (it said the tensor had no data_offsets)."""
    d = H_.path("ck-offsets")
    train(1, "offsets", *MLP, "--steps", 1, "--save-dir", d)
    src = H_.path("offsets.safetensors")
    H_.run(1, "ckpt", "export", d, "--out", src)
    raw = open(src, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    header, body = json.loads(raw[8:8 + n]), raw[8 + n:]
    name = next(k for k in header if k != "__metadata__")
    end = header[name]["data_offsets"][1]
    for tag, first, shown in (("inf", "1e400", "[inf, "), ("str", '"0"', "[a string, ")):
        h = dict(header)
        h[name] = dict(header[name], data_offsets=["FIRST", end])
        text = json.dumps(h).replace('"FIRST"', first).encode()
        text += b" " * (-len(text) % 8)
        bad = H_.path(f"offsets-{tag}.safetensors")
        with open(bad, "wb") as f:
            f.write(struct.pack("<Q", len(text)) + text + body)
        _, p = train(1, f"offsets-{tag}", *MLP, "--steps", 1, "--init", bad, ok=False)
        check(p.returncode == 1 and f"tensor '{name}' has data_offsets {shown}" in p.stderr and
              "expected two integer byte offsets" in p.stderr, f"{tag}: {p.stderr[-400:]!r}")


def test_export_memory_124m():
    """Exporting a 124M-shape checkpoint streams: peak RSS under 1.5 × the largest tensor
    (wte, 50304 × 768 fp32 = 154.5 MB) + 64 MB."""
    data = H_.path("tok50k.bin")
    with open(data, "wb") as f:
        f.write(struct.pack("<256i", 20240520, 1, 2000, *([0] * 253)))
        f.write(struct.pack("<2000H", *((i * 7919) % 50257 for i in range(2000))))
    d = H_.path("ck-124m")
    rep, _ = train(2, "g124", "--model", "gpt2", "--data", data, "--layers", 12, "--channels",
                   768, "--heads", 12, "--vocab", 50257, "--seq-len", 64, "--micro-batch", 1,
                   "--stage", 3, "--steps", 1, "--save-dir", d, "--save-every", 1)
    out = H_.path("g124.safetensors")
    # a fresh process whose only child is the export, so its peak RSS is the export's own
    p = subprocess.run([sys.executable, "-c", f"""
import resource, subprocess, sys
p = subprocess.run([{H_.zeroc!r}, "ckpt", "export", {d!r}, "--out", {out!r}],
                   capture_output=True, text=True)
sys.stderr.write(p.stderr)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)
sys.exit(p.returncode)"""], capture_output=True, text=True, timeout=600)
    check(p.returncode == 0, f"export failed: {p.stderr}")
    peak = int(p.stdout.strip() or 0)
    limit = 1.5 * 50304 * 768 * 4 + 64e6
    check(peak <= limit, f"export peak RSS {peak / 1e6:.1f} MB > {limit / 1e6:.1f} MB")
    check(os.path.getsize(out) > rep["params"] * 4, "export is too small")
    print(f"  export of 124M: peak RSS {peak / 1e6:.1f} MB (limit {limit / 1e6:.1f} MB)")


def test_corruption():
    """verify and --resume both refuse a damaged checkpoint, naming the file and the problem,
    and modify nothing; the 2-rank --resume prints its refusal once (it printed one per rank
    and MPI's abort notice)."""
    base = H_.path("ck-good")
    train(2, "good", *MLP, "--stage", 1, "--steps", 2, "--save-dir", base, "--save-every", 2)
    ck = os.path.join(base, "step-000002")

    def damaged(name, fn):
        d = H_.path("ck-bad-" + name)
        shutil.copytree(base, d)
        fn(os.path.join(d, "step-000002"))
        return d

    def flip(c):
        p = os.path.join(c, "rank-00001.bin")
        b = bytearray(open(p, "rb").read())
        b[100] ^= 1
        open(p, "wb").write(bytes(b))

    def truncate(c):
        p = os.path.join(c, "rank-00000.bin")
        os.truncate(p, os.path.getsize(p) - 4)

    def manifest(text):
        return lambda c: open(os.path.join(c, "manifest.json"), "w").write(text)

    def newer(c):
        m = json.load(open(os.path.join(c, "manifest.json")))
        m["format_version"] = 99
        json.dump(m, open(os.path.join(c, "manifest.json"), "w"))

    cases = [("flip", flip, ["rank-00001.bin", "CRC32C"]),
             ("trunc", truncate, ["rank-00000.bin", "bytes"]),
             ("missing", lambda c: os.remove(os.path.join(c, "rank-00001.bin")),
              ["rank-00001.bin", "missing"]),
             ("notjson", manifest("{ not json"), ["manifest.json", "not JSON"]),
             ("newer", newer, ["manifest.json", "newer"])]
    for name, fn, needles in cases:
        d = damaged(name, fn)
        before = tree_digest(d)
        v = subprocess.run([H_.zeroc, "ckpt", "verify", d], capture_output=True, text=True)
        _, r = train(2, "bad-" + name, *MLP, "--stage", 1, "--steps", 4, "--resume", d, ok=False)
        for what, p in (("verify", v), ("--resume", r)):
            check(p.returncode != 0, f"{name}: {what} succeeded")
            for s in needles:
                check(s in p.stderr, f"{name}: {what} message lacks {s!r}: {p.stderr!r}")
        errs = [l for l in r.stderr.splitlines() if "zeroc: error" in l]
        check(len(errs) == 1 and "MPI_ABORT" not in r.stderr,
              f"{name}: --resume on 2 ranks printed {len(errs)} errors: {r.stderr!r}")
        check(tree_digest(d) == before, f"{name}: the checkpoint was modified")
    nd = H_.path("not-a-checkpoint")
    os.makedirs(nd, exist_ok=True)
    v = subprocess.run([H_.zeroc, "ckpt", "verify", nd], capture_output=True, text=True)
    check(v.returncode != 0 and "not a checkpoint" in v.stderr, f"plain dir: {v.stderr!r}")
    check(tree_digest(base) == tree_digest(base), "")
    check(os.path.exists(os.path.join(ck, "manifest.json")), "the good checkpoint vanished")


def test_full_disk():
    """A save that runs out of space fails with a clear error, stops training (non-zero exit),
    and leaves the previous checkpoint intact and loadable. Needs root for a small tmpfs."""
    mnt = H_.path("tiny")
    os.makedirs(mnt, exist_ok=True)
    m = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=600k", "tmpfs", mnt],
                       capture_output=True, text=True)
    if m.returncode != 0:
        print(f"  (cannot mount a tmpfs here: {m.stderr.strip()}; skipped)")
        return
    try:
        # each checkpoint of this MLP is ~270 KB: the second fits, the third does not
        _, p = train(2, "full", "--hidden", 64, "--layers", 4, "--micro-batch", 2, "--stage", 0,
                     "--steps", 9, "--save-dir", mnt, "--save-every", 3, ok=False)
        check(p.returncode != 0, "a save into a full disk did not stop training")
        check("No space left" in p.stderr or "cannot write" in p.stderr,
              f"full disk message: {p.stderr!r}")
        v = subprocess.run([H_.zeroc, "ckpt", "verify", mnt], capture_output=True, text=True)
        check(v.returncode == 0, f"previous checkpoint not intact: {v.stderr!r}")
        check(not [f for f in os.listdir(mnt) if f.startswith(".tmp")],
              f"temporary directory left behind: {os.listdir(mnt)}")
    finally:
        subprocess.run(["umount", mnt])


def test_resume_other_shape():
    """A GPT-2 checkpoint of 2 heads does not resume into a model of 4 heads (the same unit
    sizes, another model): refused naming the field and both values, before any step."""
    args = gpt2_args()
    d = H_.path("ck-shape")
    train(1, "shape-a", *args, "--steps", 2, "--save-dir", d)
    heads4 = list(args)
    heads4[heads4.index("--heads") + 1] = 4
    _, p = train(1, "shape-b", *heads4, "--steps", 4, "--resume", d, ok=False)
    check(p.returncode != 0 and "num_heads 2" in p.stderr and "has 4" in p.stderr,
          f"--heads 4 resumed a 2-head checkpoint: {p.stderr!r}")
    check("step " not in p.stdout, "training started")


def descendants(pid, name):
    """The pids of the processes below pid whose command is name (from /proc)."""
    children = {}
    for p in os.listdir("/proc"):
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{p}/comm") as f:
                comm = f.read().strip()
        except (OSError, IndexError, ValueError):
            continue
        if p.isdigit():
            children.setdefault(int(fields[1]), []).append((int(p), comm))
    out, todo = [], [pid]
    while todo:
        for child, comm in children.get(todo.pop(), []):
            todo.append(child)
            if comm == name:
                out.append(child)
    return out


def test_save_dir_locked():
    """A second job on a --save-dir in use is refused before its first step, naming the
    directory and the holder (pid, host) from the lock file; the first job's checkpoints are
    untouched and verify; once it ends the directory is free again."""
    d = H_.path("ck-locked")
    steps = H_.trim(8000, 1000)  # long enough to be running when the second job starts
    a = subprocess.Popen([H_.mpirun, "1", H_.zeroc, "train", "--hidden", "256", "--layers", "4",
                          "--micro-batch", "4", "--steps", str(steps), "--save-dir", d,
                          "--save-every", str(steps // 4)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stopped = []
    try:
        for line in a.stdout:  # the first step: the job holds the directory by now
            if line.startswith("step "):
                break
        # hold the first job still (SIGSTOP; it keeps its lock) while the second one tries, so
        # the test does not depend on how fast either runs
        stopped = descendants(a.pid, "zeroc")
        for pid in stopped:
            os.kill(pid, signal.SIGSTOP)
        _, b = train(1, "locked-b", *MLP, "--steps", 3, "--save-dir", d, ok=False)
        still = a.poll() is None and stopped != []
    finally:
        for pid in stopped:
            os.kill(pid, signal.SIGCONT)
        out, err = a.communicate(timeout=600)
    check(still, "the first job ended before the second started (the test proves nothing)")
    check(b.returncode == 1, f"second job on a locked --save-dir: exit {b.returncode}")
    check(d in b.stderr and "in use" in b.stderr and "pid " in b.stderr and
          socket.gethostname() in b.stderr, f"message does not name the holder: {b.stderr!r}")
    check("step " not in b.stdout, "the second job trained")
    check(a.returncode == 0, f"the first job failed: {err!r}")
    v = subprocess.run([H_.zeroc, "ckpt", "verify", d], capture_output=True, text=True)
    check(v.returncode == 0 and f"step {steps}" in v.stdout, f"verify: {v.stdout}{v.stderr}")
    check(not [f for f in os.listdir(d) if f.startswith(".")],
          f"lock or temporary files left behind: {os.listdir(d)}")
    _, c = train(1, "locked-c", "--hidden", 256, "--layers", 4, "--micro-batch", 4,
                 "--steps", steps + 1, "--save-dir", d, "--resume", d, ok=False)
    check(c.returncode == 0, f"the directory stayed locked after the job: {c.stderr!r}")


def test_save_dir_not_shared():
    """A --save-dir that is another directory on some rank (hosts without a shared file system;
    here rank 1 runs in its own mount namespace with a private directory bound over the path) is
    refused before step 1, naming the rank, its host and the reason; neither directory gets a
    file. It trained until the first save, then failed on a shard path."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        print("  (skipped: needs root and unshare for a private mount)")
        return
    d, priv = H_.path("ck-shared"), H_.path("ck-private")
    os.makedirs(d), os.makedirs(priv)
    args = [H_.zeroc, "train", *map(str, MLP), "--steps", "2", "--save-dir", d]
    private = ["unshare", "-m", "sh", "-c", f'mount --bind "{priv}" "{d}" && exec "$0" "$@"']
    p = subprocess.run([H_.mpirun, "1", *args, ":", "-np", "1", *private, *args],
                       capture_output=True, text=True, timeout=120)
    H_.check_sanitizers(args, p)
    check(p.returncode == 1 and f"--save-dir '{d}' is not the same directory on every host: "
          f"rank 1 (host {socket.gethostname()}) reads no lock file" in p.stderr,
          f"exit {p.returncode}: {p.stderr[-600:]!r}")
    check("step " not in p.stdout, "the job trained")
    check(os.listdir(d) == [] and os.listdir(priv) == [],
          f"files left: {os.listdir(d)} {os.listdir(priv)}")


def test_resume_without_latest():
    """A first save killed (or out of space) after it published step-N and before it wrote
    `latest` leaves a complete checkpoint and no `latest`: verify, inspect and --resume take the
    save directory's newest step-N (they refused it as 'not a save directory', while a fresh run
    was told to --resume it: a circle), and the continued run has the bits of one never stopped.
    A run resumed at exactly --steps (killed after its last save, run again by a requeue) has no
    step to run: it exits 0 and writes its report and weights from the checkpoint."""
    d = H_.path("ck-no-latest")
    train(1, "nl-first", *MLP, "--steps", 3, "--save-dir", d)
    os.remove(os.path.join(d, "latest"))
    v = subprocess.run([H_.zeroc, "ckpt", "verify", d], capture_output=True, text=True)
    check(v.returncode == 0 and "step-000003: step 3" in v.stdout, f"verify: {v.stdout}{v.stderr}")
    _, p = train(1, "nl-fresh", *MLP, "--steps", 6, "--save-dir", d, ok=False)
    check(p.returncode == 1 and f"--resume {d}" in p.stderr, f"fresh run: {p.stderr!r}")
    rep, p = train(1, "nl-resumed", *MLP, "--steps", 6, "--save-dir", d, "--resume", d)
    check(f"resumed from {d}/step-000003 at step 3" in p.stdout, f"resume: {p.stdout[-400:]!r}")
    straight, _ = train(1, "nl-straight", *MLP, "--steps", 6)
    check(rep["weights_sha256"] == straight["weights_sha256"], "the continued run differs")
    w = H_.path("nl-again.safetensors")
    again, p = train(1, "nl-again", *MLP, "--steps", 6, "--save-dir", d, "--resume", d,
                     "--save-weights", w)
    check(p.returncode == 0 and "no step to run" in p.stdout and again["loss"] == [] and
          again["weights_sha256"] == straight["weights_sha256"] and os.path.exists(w),
          f"resumed at --steps: exit {p.returncode}, {p.stdout[-300:]!r} {p.stderr[-300:]!r}")
    _, p = train(1, "nl-past", *MLP, "--steps", 5, "--resume", d, ok=False)
    check(p.returncode == 1 and "at step 6, past --steps 5" in p.stderr, f"past: {p.stderr!r}")


def test_resume_keeping_nothing_warns():
    """--resume without --save-dir, --save-final or --save-weights trains and keeps nothing: the
    run says so in a warning line before step 1 (it said nothing) and still exits 0; with any of
    them, or at --steps (no step to run), there is no warning."""
    d = H_.path("ck-keep-nothing")
    train(1, "kn-first", *MLP, "--steps", 2, "--save-dir", d)
    want = ("warning: no --save-dir, --save-final or --save-weights: steps 3 to 5 will train and "
            "nothing of them will be kept")
    _, p = train(1, "kn-bare", *MLP, "--steps", 5, "--resume", d)
    lines = p.stdout.splitlines()
    at = [i for i, line in enumerate(lines) if line.startswith(want)]
    first = [i for i, line in enumerate(lines) if line.startswith("step ")]
    check(p.returncode == 0 and at and first and at[0] < first[0],
          f"resumed keeping nothing: exit {p.returncode}, {p.stdout[-600:]!r}")
    for extra in (["--save-weights", H_.path("kn.safetensors")], ["--save-dir", d]):
        _, p = train(1, "kn-kept", *MLP, "--steps", 5, "--resume", d, *extra)
        check(p.returncode == 0 and "warning: no --save-dir" not in p.stdout,
              f"resumed with {extra[0]}: exit {p.returncode}, {p.stdout[-400:]!r}")
    _, p = train(1, "kn-done", *MLP, "--steps", 5, "--resume", d)
    check(p.returncode == 0 and "no step to run" in p.stdout and "warning: no --save-dir" not in
          p.stdout, f"resumed at --steps: {p.stdout[-400:]!r}")


def test_keep_after_rollback():
    """--keep prunes by lineage: a run saving every step to 10, rolled back to step 3 into the
    same directory with --keep 3, keeps steps 3, 4 and 5 of the live run once it has saved 4 and
    5 (the old rule deleted 3, 4 and 5 and kept the abandoned 8-10: no rolling back again); the
    abandoned future (steps 4-10 of the first run) is named at the start and pruned at the first
    save, and the kept steps resume. With --save-every 5 the abandoned step 4 between the resume
    point and the first save goes too: step 3 and the run's step 5 stay."""
    d = H_.path("ck-rollback")
    train(1, "rb-first", *MLP, "--steps", 10, "--save-dir", d, "--save-every", 1)
    _, p = train(1, "rb-back", *MLP, "--steps", 5, "--save-dir", d, "--save-every", 1,
                 "--keep", 3, "--resume", os.path.join(d, "step-000003"))
    steps = sorted(e for e in os.listdir(d) if e.startswith("step-"))
    check(steps == ["step-000003", "step-000004", "step-000005"],
          f"--keep 3 after the rollback left {steps}")
    check("7 checkpoints past it (step-000004 to step-000010), the abandoned run's, pruned at "
          "the first save" in p.stdout, f"the abandoned future was not named: {p.stdout[:800]!r}")
    with open(os.path.join(d, "latest")) as f:
        check(f.read().strip() == "step-000005", "latest is not the live run's step 5")
    _, p = train(1, "rb-again", *MLP, "--steps", 4, "--resume", os.path.join(d, "step-000003"))
    check(p.returncode == 0, f"rolling back again to step 3: {p.stderr[-400:]!r}")
    e = H_.path("ck-rollback-every")
    train(1, "rb-every-first", *MLP, "--steps", 10, "--save-dir", e, "--save-every", 1)
    train(1, "rb-every-back", *MLP, "--steps", 5, "--save-dir", e, "--save-every", 5, "--keep",
          2, "--resume", os.path.join(e, "step-000003"))
    steps = sorted(x for x in os.listdir(e) if x.startswith("step-"))
    check(steps == ["step-000003", "step-000005"], f"--save-every 5 --keep 2 left {steps}")


def test_trainer_record_ranges():
    """The trainer's record in a manifest is range-checked, its checksum recomputed after each
    edit: verify, inspect and --resume refuse (exit 1, naming the field and its value) a
    tokens_consumed of -1 or 1e30, optimizer_steps 1 at step 3 (nothing skipped: Adam's bias
    correction would restart), next_lr 1e999 or "x", seed "abc", seq_len 0 (GPT-2),
    steps_planned -1 or below the step — all were accepted, verify calling them correct. The
    manifest names the optimizer as configured (AdamW; Adam for --optimizer Adam: it said Adam
    for both), inspect shows it, and a manifest of an earlier zeroc saying Adam for an AdamW run
    still verifies and resumes."""
    base = H_.path("ck-ranges")
    train(1, "ranges", *gpt2_args(), "--steps", 3, "--save-dir", base)
    ck = os.path.join(base, "step-000003")
    m0 = json.load(open(os.path.join(ck, "manifest.json")))
    check(m0["optimizer"]["type"] == "AdamW", f"optimizer recorded as {m0['optimizer']}")
    p = subprocess.run([H_.zeroc, "ckpt", "inspect", base], capture_output=True, text=True)
    check(p.returncode == 0 and "optimizer AdamW" in p.stdout, f"inspect: {p.stdout!r}")

    def data(key, v):
        return lambda m: m["client"]["data"].__setitem__(key, v)

    def sched(key, v):
        return lambda m: m["client"]["lr_schedule"].__setitem__(key, v)

    cases = [  # name, edit, needles, resumed too
        ("tokens-neg", data("tokens_consumed", -1), ["client.data.tokens_consumed", "-1"], True),
        ("tokens-huge", data("tokens_consumed", 1e30), ["client.data.tokens_consumed", "1e+30"],
         False),
        ("opt-steps", lambda m: m.__setitem__("optimizer_steps", 1),
         ["optimizer_steps is 1", "expected step 3"], True),
        ("next-lr-inf", sched("next_lr", 1e999), ["client.lr_schedule.next_lr", "1e999"], True),
        ("next-lr-str", sched("next_lr", "x"), ["client.lr_schedule.next_lr", '"x"'], False),
        ("seed", data("seed", "abc"), ["client.data.seed", '"abc"'], True),
        ("seq-len", data("seq_len", 0), ["client.data.seq_len is 0", "gpt2"], True),
        ("planned-neg", lambda m: m["client"].__setitem__("steps_planned", -1),
         ["client.steps_planned", "-1"], True),
        ("planned-low", lambda m: m["client"].__setitem__("steps_planned", 2),
         ["client.steps_planned", "from 3"], False),
    ]
    for name, fn, needles, resumed in cases:
        d = H_.path("ck-ranges-" + name)
        shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(base, d)
        c = os.path.join(d, "step-000003")
        m = json.load(open(os.path.join(c, "manifest.json")))
        fn(m)
        with open(os.path.join(c, "manifest.json"), "w") as f:
            f.write(json.dumps(m, indent=1).replace("Infinity", "1e999"))
        rehash(c)
        runs = [(v, subprocess.run([H_.zeroc, "ckpt", v, d], capture_output=True, text=True))
                for v in ("verify", "inspect")]
        if resumed:
            runs.append(("--resume", train(1, f"ranges-r-{name}", *gpt2_args(), "--steps", 5,
                                           "--resume", d, ok=False)[1]))
        for what, p in runs:
            check(p.returncode == 1 and "manifest.json" in p.stderr and
                  all(n in p.stderr for n in needles) and "step " not in p.stdout,
                  f"{name}: {what}: exit {p.returncode}, {p.stderr!r}")
    # an earlier zeroc's manifest: Adam for an AdamW run
    d = H_.path("ck-ranges-adam-name")
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(base, d)
    c = os.path.join(d, "step-000003")
    m = json.load(open(os.path.join(c, "manifest.json")))
    m["optimizer"]["type"] = "Adam"
    json.dump(m, open(os.path.join(c, "manifest.json"), "w"), indent=1)
    rehash(c)
    p = subprocess.run([H_.zeroc, "ckpt", "verify", d], capture_output=True, text=True)
    check(p.returncode == 0, f"an earlier manifest's Adam: verify {p.stderr!r}")
    _, p = train(1, "ranges-adam-name", *gpt2_args(), "--steps", 4, "--resume", d, ok=False)
    check(p.returncode == 0, f"an earlier manifest's Adam: resume {p.stderr[-400:]!r}")
    adam = H_.path("ck-ranges-adam")
    train(1, "ranges-adam", *gpt2_args(), "--steps", 1, "--optimizer", "Adam", "--save-dir", adam)
    m = json.load(open(os.path.join(adam, "step-000001", "manifest.json")))
    check(m["optimizer"]["type"] == "Adam", f"--optimizer Adam recorded as {m['optimizer']}")


def test_save_verified_before_saved():
    """A shard damaged on the disk after it was written (a fault hook flips a byte of rank 1's
    step-4 shard once it has landed, before it is read back) fails the save naming the file and
    its CRC: "saved" is not printed, the job stops, `latest` stays on step 2, which still
    verifies."""
    d = H_.path("ck-flip")
    _, p = train(2, "flip", *MLP, "--steps", 6, "--save-dir", d, "--save-every", 2, ok=False,
                 env={"ZEROC_FAULT_FLIP_IN_SAVE": "shard:1@4"})
    check(p.returncode == 1, f"a damaged shard was published: exit {p.returncode}")
    check("rank-00001.bin" in p.stderr and "CRC32C" in p.stderr, f"message: {p.stderr!r}")
    check(f"saved {d}/step-000002" in p.stdout and f"saved {d}/step-000004" not in p.stdout,
          f"'saved' printed for the damaged checkpoint: {p.stdout!r}")
    check(open(os.path.join(d, "latest")).read().strip() == "step-000002",
          "latest moved to the damaged checkpoint")
    check(not os.path.exists(os.path.join(d, "step-000004")), "the damaged checkpoint exists")
    v = subprocess.run([H_.zeroc, "ckpt", "verify", d], capture_output=True, text=True)
    check(v.returncode == 0 and "step 2" in v.stdout, f"verify: {v.stdout}{v.stderr}")
    check(not [f for f in os.listdir(d) if f.startswith(".")],
          f"temporary files left behind: {os.listdir(d)}")


def rehash(ck):
    """What an editor who knows the format does: the manifest's checksum recomputed."""
    digest = hashlib.sha256(open(os.path.join(ck, "manifest.json"), "rb").read()).hexdigest()
    with open(os.path.join(ck, "manifest.sha256"), "w") as f:
        f.write(f"{digest}  manifest.json\n")


def test_manifest_edits():
    """An edited manifest is refused by verify, inspect and export with exit 1 (never an
    assertion), naming the file and the field: its checksum first; and, re-hashed, every field a
    reader uses: the step against the directory name and the shards, parameter offsets and
    shapes against the units, files, counts, the trainer's GPT-2 shape. --resume reads through
    the same manifest reader: it is checked on one edit of each kind (checksum, legacy format,
    step, offsets, shapes, files, scaler), since a 2-rank training run per edit is most of this
    test's time. A checkpoint without the checksum (format 1) is refused by name. The original
    still verifies."""
    base = H_.path("ck-edit")
    train(2, "edit", *gpt2_args(), "--stage", 1, "--steps", 2, "--save-dir", base)
    ck = os.path.join(base, "step-000002")

    def edit(fn, sha=True):
        def apply(c):
            m = json.load(open(os.path.join(c, "manifest.json")))
            fn(m)
            json.dump(m, open(os.path.join(c, "manifest.json"), "w"), indent=1)
            if sha:
                rehash(c)
        return apply

    def setp(key, i, v):
        def f(m):
            m["params"][i][key] = v
        return f

    def top(key, v):
        def f(m):
            m[key] = v
        return f

    def client(key, v):
        def f(m):
            m["client"][key] = v
        return f

    def files(i, key, v):
        def f(m):
            m["files"][i][key] = v
        return f

    def same_offset(m):
        m["params"][3]["offset"] = m["params"][2]["offset"]

    def legacy(c):
        os.remove(os.path.join(c, "manifest.sha256"))
        edit(top("format_version", 1), sha=False)(c)

    cases = [  # name, damage, needles, commands that must refuse
        ("step-unhashed", edit(top("step", 3), sha=False), ["manifest.sha256", "SHA-256"], "vier"),
        ("no-sha", lambda c: os.remove(os.path.join(c, "manifest.sha256")),
         ["manifest.sha256"], "vie"),
        ("legacy", legacy, ["format version 1", "manifest.sha256"], "vier"),
        ("step", edit(top("step", 3)), ["manifest.json", "step 3", "step-000002"], "vier"),
        ("step-frac", edit(top("step", 2.5)), ["manifest.json", "step"], "vie"),
        ("stage", edit(top("stage", 7)), ["stage"], "vie"),
        ("world", edit(top("world_size", 1e12)), ["world_size"], "vie"),
        ("opt-steps", edit(top("optimizer_steps", 5)), ["optimizer_steps"], "vie"),
        ("offset", edit(same_offset), ["offset", "overlaps"], "vier"),
        ("offset-far", edit(setp("offset", 3, 1e15)), ["offset"], "vie"),
        ("shape", edit(setp("shape", 3, [-1, 32])), ["shape"], "vier"),
        ("shape-big", edit(setp("shape", 0, [1e300])), ["shape"], "vie"),
        ("unit", edit(setp("unit", 1, "x")), ["unit"], "vie"),
        ("file-name", edit(files(1, "name", "../rank-00001.bin")), ["name", "rank-00001.bin"],
         "vie"),
        ("file-crc", edit(files(0, "crc32c", 17)), ["crc32c"], "vier"),
        ("scaler", edit(lambda m: m["loss_scaler"].update(scale=-1)), ["loss_scaler", "scale"],
         "vier"),
        ("heads-zero", edit(client("num_heads", 0)), ["num_heads", "0"], "l"),
        ("heads-odd", edit(client("num_heads", 3)), ["num_heads", "3"], "l"),
        ("heads-str", edit(client("num_heads", "two")), ["num_heads"], "l"),
        ("layers-huge", edit(client("num_layers", 1e10)), ["num_layers"], "l"),
        ("vocab-big", edit(client("padded_vocab_size", 2 ** 31)), ["padded_vocab_size"], "l"),
    ]
    model = gpt2_args()
    # the sanitizer pass resumes on three kinds of edit (checksum, offsets, scaler): --resume
    # reads through the same manifest reader as verify, and a 2-rank run is 15 s there
    resumed = H_.trim({c[0] for c in cases}, {"step-unhashed", "offset", "scaler"})
    for name, fn, needles, which in cases:
        if name not in resumed:
            which = which.replace("r", "")
        d = H_.path("ck-edit-" + name)
        shutil.copytree(base, d)
        fn(os.path.join(d, "step-000002"))
        before = tree_digest(d)
        runs = []
        for w in which:
            if w == "v":
                runs.append(("verify", subprocess.run([H_.zeroc, "ckpt", "verify", d],
                                                      capture_output=True, text=True)))
            elif w == "i":
                runs.append(("inspect", subprocess.run([H_.zeroc, "ckpt", "inspect", d],
                                                       capture_output=True, text=True)))
            elif w == "e":
                runs.append(("export", subprocess.run(
                    [H_.zeroc, "ckpt", "export", d, "--out", H_.path(f"edit-{name}.st")],
                    capture_output=True, text=True)))
            elif w == "l":
                runs.append(("export llmc", subprocess.run(
                    [H_.zeroc, "ckpt", "export", d, "--format", "llmc", "--out",
                     H_.path(f"edit-{name}.bin")], capture_output=True, text=True)))
            elif w == "r":
                runs.append(("--resume", train(2, f"edit-r-{name}", *model, "--stage", 1,
                                               "--steps", 4, "--resume", d, ok=False)[1]))
        for what, p in runs:
            check(p.returncode == 1, f"{name}: {what} exit {p.returncode}: {p.stderr!r}")
            for s in needles:
                check(s in p.stderr, f"{name}: {what} message lacks {s!r}: {p.stderr!r}")
            check("step " not in p.stdout, f"{name}: {what} trained")
        check(not [f for f in os.listdir(H_.tmp) if f.startswith(f"edit-{name}.")],
              f"{name}: an export was written")
        check(tree_digest(d) == before, f"{name}: the checkpoint was modified")
    v = subprocess.run([H_.zeroc, "ckpt", "verify", base], capture_output=True, text=True)
    check(v.returncode == 0 and "step 2" in v.stdout, f"the original: {v.stdout}{v.stderr}")
    # a copy under another name has no step in its name to compare: it still verifies
    other = H_.path("ck-edit-copy")
    shutil.copytree(ck, other)
    v = subprocess.run([H_.zeroc, "ckpt", "verify", other], capture_output=True, text=True)
    check(v.returncode == 0, f"a renamed copy: {v.stderr!r}")
    # ... but its shards' headers still hold the step: an edited, re-hashed step is refused
    edit(top("step", 3))(other)
    v = subprocess.run([H_.zeroc, "ckpt", "verify", other], capture_output=True, text=True)
    check(v.returncode == 1 and "rank-00000.bin" in v.stderr and "step 3" in v.stderr,
          f"a renamed copy with another step: {v.stderr!r}")
    # the largest model the engine registers (2^49 parameters) is one a manifest may describe:
    # a unit of 2^45 elements reads (its shards are not read by inspect); 2^50 is refused
    big = H_.path("ck-edit-big")
    train(1, "edit-big", "--model", "mlp", "--hidden", 4, "--layers", 1, "--steps", 1,
          "--save-dir", big)
    for numel, ok in ((1 << 45, True), (1 << 50, False)):
        c = os.path.join(big, "step-000001")

        def grow(m, numel=numel):
            m["units"][0].update(numel=numel + 4, shard=numel + 4)
            m["params"][0]["shape"] = [numel // 4, 4]
            m["params"][1]["offset"] = numel
            m["files"][0]["bytes"] += 12 * numel - 12 * 16  # 32 + 12 bytes an element (Adam)
        edit(grow)(c)
        v = subprocess.run([H_.zeroc, "ckpt", "inspect", c], capture_output=True, text=True)
        check((v.returncode == 0 and f"{numel + 4} parameters" in v.stdout) if ok else
              (v.returncode == 1 and "numel" in v.stderr),
              f"a unit of {numel + 4} elements: {v.returncode} {v.stdout!r} {v.stderr!r}")
        shutil.rmtree(big)
        if ok:
            train(1, "edit-big", "--model", "mlp", "--hidden", 4, "--layers", 1, "--steps", 1,
                  "--save-dir", big)


def test_stop_signal_saves():
    """A run with --save-dir told to stop (SIGTERM to its one process; SIGUSR1, which mpirun
    passes on, to one rank of two) finishes its step, saves it on every rank and exits with
    128 + the signal; its --report holds the steps it ran (none was written); the checkpoint
    verifies, and resuming it gives the bits of a run that was never stopped."""
    import re
    import time
    for n, sig, to in ((1, signal.SIGTERM, 0), (2, signal.SIGUSR1, 1)):
        d = H_.path(f"ck-stop-{n}")
        rep = H_.path(f"stop-{n}.json")
        a = subprocess.Popen([H_.mpirun, str(n), H_.zeroc, "train", *map(str, MLP), "--stage",
                              str(n + 1), "--steps", str(10**8), "--save-dir", d, "--report", rep],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            for line in a.stdout:  # training has begun: the handler is in place
                if line.startswith("step "):
                    break
            ranks = []
            for _ in range(100):  # its ranks (any one of them is signalled)
                ranks = sorted(descendants(a.pid, "zeroc"))
                if len(ranks) == n:
                    break
                time.sleep(0.05)
            os.kill(ranks[to], sig)
            out, err = a.communicate(timeout=120)
        finally:
            if a.poll() is None:
                a.kill()
        m = re.search(r"stopped by (\w+) after step (\d+) \(checkpoint saved\); continue with "
                      r"--resume (\S+) --save-dir (\S+) ", out)
        check(a.returncode == 128 + sig and m and m.group(1) == sig.name and
              m.group(3) == m.group(4) == d,
              f"{n} ranks, {sig.name}: exit {a.returncode}, {out[-300:]!r} {err[-300:]!r}")
        if not m:
            continue
        step = int(m.group(2))
        r = json.load(open(rep)) if os.path.exists(rep) else {}
        check(len(r.get("loss", [])) == step and r.get("steps") == step,
              f"{n} ranks: the stopped run's report: {str(r)[:200]}")
        v = subprocess.run([H_.zeroc, "ckpt", "verify", d], capture_output=True, text=True)
        check(v.returncode == 0 and f"step {step}, written by {n} ranks" in v.stdout,
              f"{n} ranks: verify {v.stdout!r} {v.stderr!r}")
        resumed, _ = train(n, f"stop-resumed-{n}", *MLP, "--stage", n + 1, "--steps", step + 2,
                           "--resume", d)
        straight, _ = train(n, f"stop-straight-{n}", *MLP, "--stage", n + 1, "--steps", step + 2)
        check(resumed["weights_sha256"] == straight["weights_sha256"],
              f"{n} ranks: resumed after the stop at step {step} differs from a straight run")


def test_stop_under_mpirun_saves():
    """Ctrl-C (SIGINT to the process group of `mpirun -np 2 zeroc train`) and SIGTERM to mpirun
    alone, at a size where the save takes seconds (100 M parameters, 1.2 GB of checkpoint; Open
    MPI's default odls_base_sigkill_timeout of 1 s would kill it half-way): mpirun gives its ranks
    SIGCONT, SIGTERM T s later and SIGKILL T s after that; with T set, every rank ends its step,
    saves it (`latest` names it, `ckpt verify` passes, nothing half-written is left), writes the
    report and says it was stopped by mpirun's SIGTERM; mpirun returns 1 (its code after a SIGINT
    or SIGTERM, whatever its ranks return). Without --save-dir a stop (SIGINT to one process) ends
    the run at the step's end with its report and exit 130."""
    import re
    import time
    # the sanitizer pass: a 12.6 M-parameter MLP (150 MB saved, seconds there too) and T = 20 s
    t_kill = 20 if H_.sanitized else 10
    env = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "OMP_WAIT_POLICY": "passive",
           "OMPI_MCA_odls_base_sigkill_timeout": str(t_kill)}
    fwd = [a for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "OMP_WAIT_POLICY",
                       "ASAN_OPTIONS", "LSAN_OPTIONS", "UBSAN_OPTIONS") if v in env
           for a in ("-x", v)]
    big = ["--model", "mlp", "--hidden", H_.trim(2048, 1024), "--layers", H_.trim(24, 12),
           "--stage", 3, "--micro-batch", 8]

    def started(cmd, environ):
        """cmd in a session of its own (the signal to its group is not this script's), once it
        prints its first step (the handlers are in place)."""
        a = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=environ, start_new_session=True)
        first = ""
        for line in a.stdout:
            first += line
            if line.startswith("step "):
                break
        return a, first

    # mpirun is run here, not through mpirun.sh: its `timeout` would pass the group's SIGINT on
    # to mpirun a second time, and a second SIGINT within 5 s makes mpirun kill its ranks at once
    # the sanitizer pass: the group's SIGINT (the same rank code; mpirun's own wait makes a case
    # take ~25 s, 60 there)
    for how, sig in H_.trim((("group", signal.SIGINT), ("mpirun", signal.SIGTERM)),
                            (("group", signal.SIGINT),)):
        d, rep = H_.path(f"ck-mpirun-stop-{how}"), H_.path(f"mpirun-stop-{how}.json")
        a, first = started(["mpirun", "--oversubscribe", "--bind-to", "none", "-np", "2", *fwd,
                            H_.zeroc, "train", *map(str, big), "--steps", str(10**6),
                            "--save-dir", d, "--report", rep], env)
        t0 = time.monotonic()
        try:
            if how == "group":
                os.killpg(a.pid, sig)
            else:
                os.kill(a.pid, sig)
            out, err = a.communicate(timeout=4 * t_kill + 120)
        finally:
            if a.poll() is None:
                os.killpg(a.pid, signal.SIGKILL)
                a.wait()
        took = time.monotonic() - t0
        out = first + out
        m = re.search(r"stopped by mpirun's SIGTERM \(mpirun was sent SIGINT or SIGTERM\) after "
                      r"step (\d+) \(checkpoint saved\); continue with --resume (\S+) --save-dir",
                      out)
        saved = re.search(r"saved \S+/step-(\d+) in ([\d.]+) s", out)
        what = (f"{sig.name} to {how}: exit {a.returncode} after {took:.1f} s, "
                f"{out[-600:]!r} {err[-600:]!r}")
        check(a.returncode == 1 and m and m.group(2) == d and saved and
              saved.group(1) == f"{int(m.group(1)):06d}", what)
        if not m:
            continue
        step = int(m.group(1))
        latest = open(os.path.join(d, "latest")).read().strip() \
            if os.path.exists(os.path.join(d, "latest")) else None
        left = [f for f in os.listdir(d) if f.startswith(".tmp")]
        check(latest == f"step-{step:06d}" and not left,
              f"{how}: latest {latest!r}, expected step-{step:06d}; half-written: {left}")
        v = subprocess.run([H_.zeroc, "ckpt", "verify", d], capture_output=True, text=True)
        check(v.returncode == 0 and f"step {step}, written by 2 ranks" in v.stdout,
              f"{how}: verify {v.stdout!r} {v.stderr!r} (the save took {saved.group(2)} s)")
        r = json.load(open(rep)) if os.path.exists(rep) else {}
        check(r.get("steps") == step and len(r.get("loss", [])) == step,
              f"{how}: the report of {step} steps: {str(r)[:200]}")
        shutil.rmtree(d)

    # without --save-dir: the stop ends the run at the step's end, and its report is written
    rep = H_.path("stop-no-save-dir.json")
    one = {k: v for k, v in env.items() if not k.startswith("OMPI_")}
    a, first = started([H_.zeroc, "train", *map(str, MLP), "--steps", str(10**8), "--report", rep],
                       one)
    try:
        os.killpg(a.pid, signal.SIGINT)
        out, err = a.communicate(timeout=120)
    finally:
        if a.poll() is None:
            os.killpg(a.pid, signal.SIGKILL)
            a.wait()
    m = re.search(r"stopped by SIGINT after step (\d+) \(nothing saved: no --save-dir\)", out)
    r = json.load(open(rep)) if os.path.exists(rep) else {}
    check(a.returncode == 130 and m and r.get("steps") == int(m.group(1)),
          f"no --save-dir: exit {a.returncode}, {out[-300:]!r} {err[-300:]!r}, report "
          f"{str(r)[:200]}")


def test_resume_data_position():
    """A resume under another global batch reads the training file on from where the
    checkpoint's run stopped (it restarted at step x its own batch, skipping or repeating
    windows): 3 steps of 32 tokens, then 2 of 64 read exactly tokens 96..224 — a change there
    changes the weights, one before or after does not — and the next checkpoint records 224. A
    shuffled order is resumed only as it was (same order, seed and batch; the seed recorded as
    text and compared exactly from 2^52 on); a checkpoint of the first shuffle order is
    refused."""
    base = H_.text_tokens()[0]
    raw = open(base, "rb").read()

    def altered(name, lo, hi):  # tokens [lo, hi) replaced by 'x'
        b = bytearray(raw)
        for i in range(lo, hi):
            struct.pack_into("<H", b, 1024 + 2 * i, ord("x"))
        path = H_.path(name)
        open(path, "wb").write(bytes(b))
        return path

    g = ["--model", "gpt2", "--layers", 1, "--channels", 32, "--heads", 2, "--seq-len", 16]
    ck = H_.path("ck-data")
    train(1, "data-a", *g, "--micro-batch", 2, "--data", base, "--steps", 3, "--save-dir", ck)
    shas = {}
    for name, data in (("same", base), ("inside", altered("in.bin", 220, 225)),
                       ("before", altered("before.bin", 0, 96)),
                       ("after", altered("after.bin", 225, 260))):
        d2 = H_.path(f"ck-data-{name}")
        shutil.copytree(ck, d2)
        rep, p = train(1, f"data-b-{name}", *g, "--micro-batch", 4, "--data", data, "--steps", 5,
                       "--resume", d2, "--save-dir", d2)
        shas[name] = rep["weights_sha256"]
        if name == "same":
            check("had read 96 tokens of --data; this run reads 64 a step" in p.stdout,
                  f"no word of where the data goes on: {p.stdout[-400:]!r}")
            m = json.load(open(os.path.join(d2, "step-000005", "manifest.json")))
            check(m["client"]["data"]["tokens_consumed"] == 224,
                  f"tokens recorded after the resume: {m['client']['data']}")
    check(shas["inside"] != shas["same"], "a change at token 220 did not reach the resumed run")
    check(shas["before"] == shas["same"] == shas["after"],
          f"the resumed run read tokens outside 96..224: {shas}")
    sck = H_.path("ck-data-shuffled")
    train(1, "data-s", *g, "--micro-batch", 2, "--data", base, "--steps", 3, "--save-dir", sck,
          "--shuffle")
    for args, needle in ((["--micro-batch", 2], "its run read the data shuffled"),
                         (["--micro-batch", 4, "--shuffle"], "a shuffled order cannot continue"),
                         (["--micro-batch", 2, "--shuffle", "--seed", 7], "with seed 42")):
        _, p = train(1, "data-refused", *g, "--data", base, "--steps", 5, "--resume", sck, *args,
                     ok=False)
        check(p.returncode == 1 and needle in p.stderr, f"{args}: {p.stderr!r}")
    rep, _ = train(1, "data-s-ok", *g, "--micro-batch", 2, "--data", base, "--steps", 5,
                   "--resume", sck, "--shuffle")
    straight, _ = train(1, "data-s-straight", *g, "--micro-batch", 2, "--data", base, "--steps", 5,
                        "--shuffle")
    check(rep["weights_sha256"] == straight["weights_sha256"], "shuffled resume differs")
    # a seed of 2^53 on is recorded as its decimal text and compared exactly: a double's record
    # (9.00719925474099e+15) refused the seed against itself and took 9007199254740990 for it
    big, seed = H_.path("ck-data-bigseed"), 9007199254740993
    sb = [*g, "--micro-batch", 2, "--data", base, "--shuffle"]
    train(1, "data-big", *sb, "--steps", 2, "--seed", seed, "--save-dir", big)
    m = json.load(open(os.path.join(big, "step-000002", "manifest.json")))
    check(m["client"]["data"]["seed"] == str(seed), f"seed record: {m['client']['data']}")
    rep, _ = train(1, "data-big-ok", *sb, "--steps", 3, "--seed", seed, "--resume", big)
    straight, _ = train(1, "data-big-straight", *sb, "--steps", 3, "--seed", seed)
    check(rep["weights_sha256"] == straight["weights_sha256"], "resume at seed 2^53 + 1 differs")
    _, p = train(1, "data-big-near", *sb, "--steps", 3, "--seed", seed - 3, "--resume", big,
                 ok=False)
    check(p.returncode == 1 and f"with seed {seed}, this one has seed {seed - 3}" in p.stderr,
          f"a seed 3 below: {p.returncode} {p.stderr!r}")
    # an earlier zeroc's record, a JSON number: exact below 2^52 (seed 42 above); from there on
    # (cJSON prints it to 15 digits: 9.00719925474099e+15) taken to a double's precision, with a
    # note; a text that is no seed is refused naming it
    for name, value, s_arg, needle in (
            ("num", seed, seed, "agrees with it to a double's precision"),
            ("num-far", seed, 7, "seed 9007199254740990 (its manifest, of an earlier zeroc, "
             "holds the seed as a double"),
            ("text", "12x", seed, 'client.data.seed is "12x", not the decimal text of a seed')):
        d2 = H_.path(f"ck-data-bigseed-{name}")
        shutil.copytree(big, d2)
        c2 = os.path.join(d2, "step-000002")
        m["client"]["data"]["seed"] = value
        json.dump(m, open(os.path.join(c2, "manifest.json"), "w"), indent=1)
        rehash(c2)
        _, p = train(1, f"data-big-{name}", *sb, "--steps", 3, "--seed", s_arg, "--resume", d2,
                     ok=name == "num")
        check(p.returncode == (0 if name == "num" else 1) and needle in p.stdout + p.stderr,
              f"{name}: {p.returncode} {p.stderr!r}")
    # the record names the shuffle's order; a checkpoint of the first order (no shuffle_order)
    # is refused (it went on in this version's order with a note, exit 0), naming the order and
    # the step where the zeroc that wrote it ends its epoch
    m = json.load(open(os.path.join(sck, "step-000003", "manifest.json")))
    check(m["client"]["data"].get("shuffle_order") == 2, f"record: {m['client']['data']}")
    old = H_.path("ck-data-shuffled-v1")
    shutil.copytree(sck, old)
    del m["client"]["data"]["shuffle_order"]
    json.dump(m, open(os.path.join(old, "step-000003", "manifest.json"), "w"), indent=1)
    rehash(os.path.join(old, "step-000003"))
    p = H_.run(1, "train", *g, "--micro-batch", 2, "--data", base, "--steps", 5, "--resume", old,
               "--shuffle", ok=False)
    check(p.returncode == 1 and "in an earlier zeroc's window order" in p.stderr and
          "finish that epoch with the zeroc that wrote it" in p.stderr and "--steps " in p.stderr,
          f"resume of a first-order checkpoint: {p.returncode} {p.stderr!r}")

def earlier_zeroc(ck, *edits, drop=("tokens_consumed", "seq_len", "shuffle_order", "seed")):
    """One of this zeroc's checkpoints made into what an earlier zeroc wrote: manifest format 2
    without producer_version, its data record without `drop` (format 2 before 299564d had none of
    them), lr_schedule.position the step (every earlier zeroc wrote the step there), then `edits`
    (functions of the manifest); re-hashed, as that zeroc hashed it."""
    path = os.path.join(ck, "manifest.json")
    m = json.load(open(path))
    m["format_version"] = 2
    m.pop("producer_version", None)
    for k in drop:
        m["client"]["data"].pop(k, None)
    m["client"]["lr_schedule"]["position"] = m["step"]
    for fn in edits:
        fn(m)
    json.dump(m, open(path, "w"), indent=1)
    rehash(ck)
    return m


def test_resume_earlier_format():
    """Checkpoints are format 3 and name the zeroc that wrote them (`zeroc --version`, the
    manifest's producer_version, inspect, the report); format 2 — what earlier zerocs wrote, made
    here by editing format-3 checkpoints — is read as they wrote it:
    - no data.tokens_consumed: a resume under another global batch goes on where the run stopped
      (derived: step x train_batch_size x max_seq_len; it went on at step x the new batch), the
      same bits as from the format-3 original; with --seq-len shorter than max_seq_len it cannot
      be derived and is refused naming both batches;
    - no shuffle_order (the first shuffle): refused naming the step that ends its epoch (it went
      on in this zeroc's order, exit 0); taken at the end of an epoch; no data.seed: the
      config's seed is checked; a shuffled run under another micro-batch x accumulation of as
      many tokens a step is refused (another order);
    - the learning rate goes on from the recorded position: an earlier zeroc's --warmup counted
      fp16-skipped steps, so step 7 of a checkpoint at 6 with k skipped runs at warmup 7/8 (it ran
      at (7 - k)/8), unless next_lr says its writer did not count them;
    - a schedule whose settings differ from the checkpoint's (warmup_max_lr left out: 0.001, not
      the recorded 0.003; another --lr) says so naming both values, and trains;
    - verify, inspect and export read format 2; format 5 is refused naming its producer; format
      4's keys (units not stored, base_digest) are refused in format 3 and checked in format 4."""
    v = subprocess.run([H_.zeroc, "--version"], capture_output=True, text=True)
    check(v.returncode == 0 and v.stdout.startswith("zeroc ") and v.stdout.count("\n") == 1,
          f"--version: {v.returncode} {v.stdout!r}")
    version = v.stdout.strip()[len("zeroc "):]
    g = ["--model", "gpt2", "--layers", 1, "--channels", 32, "--heads", 2, "--seq-len", 16,
         "--data", H_.text_tokens()[0]]
    ck = H_.path("ck-f2")
    rep, _ = train(1, "f2-a", *g, "--micro-batch", 2, "--steps", 3, "--save-dir", ck)
    check(rep.get("zeroc_version") == version, f"report: zeroc_version {rep.get('zeroc_version')}")
    c3 = os.path.join(ck, "step-000003")
    m = json.load(open(os.path.join(c3, "manifest.json")))
    check(m["format_version"] == 3 and m["producer_version"] == version,
          f"manifest: format {m['format_version']}, producer {m.get('producer_version')}")
    p = H_.run(1, "ckpt", "inspect", c3)
    check(f"manifest format 3, written by zeroc {version}" in p.stdout, f"inspect: {p.stdout!r}")

    # the data position of a format-2 checkpoint under another global batch
    old = H_.path("ck-f2-old")
    shutil.copytree(ck, old)
    earlier_zeroc(os.path.join(old, "step-000003"))
    for what, args in (("verify", ["verify", old]), ("inspect", ["inspect", old]),
                       ("export", ["export", old, "--out", H_.path("f2.safetensors")])):
        p = H_.run(1, "ckpt", *args, ok=False)
        check(p.returncode == 0, f"{what} of format 2: {p.stderr!r}")
    p = H_.run(1, "ckpt", "inspect", old)
    check("manifest format 2, written by an earlier zeroc" in p.stdout, f"inspect: {p.stdout!r}")
    mine, p = train(1, "f2-b3", *g, "--micro-batch", 4, "--steps", 5, "--resume", ck)
    # a resumed run prints its first steps, as a fresh one does (it printed none until the next
    # multiple of steps_per_print)
    check("step     4/5 |" in p.stdout, f"resumed at step 3: {p.stdout[-400:]!r}")
    theirs, p = train(1, "f2-b2", *g, "--micro-batch", 4, "--steps", 5, "--resume", old)
    check(theirs["weights_sha256"] == mine["weights_sha256"] and theirs["loss"] == mine["loss"],
          f"format 2 under another batch: losses {theirs['loss']} != {mine['loss']}")
    check("had read 96 tokens of --data (its manifest, of an earlier zeroc, records no "
          "data.tokens_consumed: 3 steps x train_batch_size 2 sequences x 16 tokens" in p.stdout and
          "(written by an earlier zeroc: manifest format 2)" in p.stdout and "lr: " not in p.stdout,
          f"format 2 resume says: {p.stdout[-700:]!r}")
    short = H_.path("ck-f2-short")
    train(1, "f2-short", *g, "--max-seq-len", 32, "--micro-batch", 2, "--steps", 1,
          "--save-dir", short)
    earlier_zeroc(os.path.join(short, "step-000001"))
    p = H_.run(1, "train", *g, "--max-seq-len", 32, "--micro-batch", 4, "--steps", 2, "--resume",
               short, ok=False)
    check(p.returncode == 1 and "does not record how many tokens of --data" in p.stderr and
          "--seq-len 16 shorter than the model's max_seq_len 32" in p.stderr and
          "its run read 2 sequences a step (micro-batch 2 x accumulation 1 x 1 rank), this one "
          "reads 4 (micro-batch 4 x accumulation 1 x 1 rank)" in p.stderr,
          f"format 2, --seq-len < max_seq_len, another batch: {p.returncode} {p.stderr!r}")
    # the same sequences a step, their length unknown: it goes on, saying what it assumes
    _, p = train(1, "f2-short-same", *g, "--max-seq-len", 32, "--micro-batch", 2, "--steps", 2,
                 "--resume", short)
    check("records neither the tokens its run read nor its sequence length (max_seq_len 32); "
          "this run goes on from step 1 x 2 sequences x its --seq-len 16" in p.stdout,
          f"format 2, --seq-len < max_seq_len, the same batch: {p.stdout[-600:]!r}")

    # the first shuffle order; seeds and windows of a shuffled resume
    data = H_.path("epoch6.bin")  # 6 windows of 2 x 16 tokens (+ 1): an epoch is 6 steps
    with open(data, "wb") as f:
        f.write(struct.pack("<256i", 20240520, 1, 193, *([0] * 253)))
        f.write(struct.pack("<193H", *((i * 7919 + i // 7) % 256 for i in range(193))))
    s = [*g[:-1], data, "--shuffle"]
    sck = H_.path("ck-f2-shuf")
    train(1, "f2-s", *s, "--micro-batch", 2, "--steps", 6, "--save-every", 3, "--save-dir", sck)
    for step in ("step-000003", "step-000006"):
        earlier_zeroc(os.path.join(sck, step))
    for extra in (["--shuffle"], []):
        p = H_.run(1, "train", *s[:-1], *extra, "--micro-batch", 2, "--steps", 8, "--resume",
                   os.path.join(sck, "step-000003"), ok=False)
        check(p.returncode == 1 and "in an earlier zeroc's window order" in p.stderr and
              "it stopped 3 windows into an epoch of 6" in p.stderr and
              "train it on to --steps 6, the first step that ends an epoch" in p.stderr,
              f"first order, {extra}: {p.returncode} {p.stderr!r}")
    _, p = train(1, "f2-s-end", *s, "--micro-batch", 2, "--steps", 7, "--resume",
                 os.path.join(sck, "step-000006"))
    check("stopped at the end of an epoch; this run shuffles the next epochs in this zeroc's "
          "order" in p.stdout, f"first order at an epoch's end: {p.stdout[-500:]!r}")
    seeded = H_.path("ck-f2-seed")
    shutil.copytree(sck, seeded)
    earlier_zeroc(os.path.join(seeded, "step-000003"),
                  lambda m: m["client"]["data"].update(shuffle_order=2), drop=("seed",))
    p = H_.run(1, "train", *s, "--micro-batch", 2, "--seed", 7, "--steps", 8, "--resume",
               os.path.join(seeded, "step-000003"), ok=False)
    check(p.returncode == 1 and "shuffled the data with seed 42, this one has seed 7" in p.stderr,
          f"format 2 without data.seed: {p.returncode} {p.stderr!r}")
    acc = H_.path("ck-f2-accum")
    train(1, "f2-acc", *s, "--micro-batch", 2, "--grad-accum", 2, "--steps", 1, "--save-dir", acc)
    p = H_.run(1, "train", *s, "--micro-batch", 4, "--steps", 2, "--resume", acc, ok=False)
    check(p.returncode == 1 and "a shuffled order cannot continue under another micro-batch" in
          p.stderr and "micro-batch 2 x accumulation 2 x 1 rank" in p.stderr,
          f"shuffled, 1 x 4 after 2 x 2 (as many tokens): {p.returncode} {p.stderr!r}")

    # the learning rate: fp16 steps skipped under an earlier zeroc's --warmup
    fp16 = H_.path("f2-fp16-config.json")
    json.dump({"fp16": {"enabled": True, "initial_scale_power": 24}}, open(fp16, "w"))
    sched = ["--config", fp16, "--lr", "1e-2", "--warmup", 8]
    fck = H_.path("ck-f2-fp16")
    a, _ = train(1, "f2-fp16", *MLP, *sched, "--steps", 6, "--save-dir", fck)
    k = a["skipped_steps"]
    check(k >= 2, f"only {k} steps skipped: the test proves nothing")
    m = json.load(open(os.path.join(fck, "step-000006", "manifest.json")))
    check(m["client"]["lr_schedule"]["position"] == 6 - k, f"format 3 position: {m['client']}")
    # (the sanitizer pass runs the reading that differs from format 3's)
    for name, next_lr in H_.trim((("counted", 1e-2 * 7 / 8), ("not-counted", 1e-2 * (7 - k) / 8)),
                                 (("counted", 1e-2 * 7 / 8),)):
        d = H_.path(f"ck-f2-fp16-{name}")
        shutil.copytree(fck, d)
        earlier_zeroc(os.path.join(d, "step-000006"),
                      lambda m: m["client"]["lr_schedule"].update(next_lr=next_lr))
        r, p = train(1, f"f2-fp16-{name}", *MLP, *sched, "--steps", 7, "--resume", d)
        check(abs(r["lr"][0] - next_lr) <= 1e-15, f"{name}: step 7's lr {r['lr'][0]} != {next_lr}")
        check(("had also advanced over its" in p.stdout) == (name == "counted") and
              "lr: step" not in p.stdout, f"{name}: {p.stdout[-500:]!r}")

    # the schedule's settings changed: said, naming both values, and trained
    wl = {"type": "WarmupLR", "params": {"warmup_num_steps": 4}}
    then, now = H_.path("f2-then-config.json"), H_.path("f2-now-config.json")
    json.dump({"scheduler": {**wl, "params": {**wl["params"], "warmup_max_lr": 0.003}}},
              open(then, "w"))
    json.dump({"scheduler": wl}, open(now, "w"))
    wck = H_.path("ck-f2-wl")
    train(1, "f2-wl", *MLP, "--config", then, "--steps", 2, "--save-dir", wck)
    r, p = train(1, "f2-wl-now", *MLP, "--config", now, "--steps", 3, "--resume", wck)
    check("scheduler.params.warmup_max_lr 0.003 there, 0.001 here (to keep the checkpoint's, set "
          "scheduler.params.warmup_max_lr to 0.003 in the config" in p.stdout and
          "step 3 runs at 0.0005 where the checkpoint's run would have gone on at 0.0015 " in
          p.stdout, f"warmup_max_lr left out: {p.stdout[-700:]!r}")
    if not H_.sanitized:  # the same code as warmup_max_lr's, for the trainer's schedule
        r, p = train(1, "f2-lr", *g, "--micro-batch", 2, "--lr", "2e-3", "--steps", 4, "--resume",
                     ck)
        check("--lr 0.001 there, 0.002 here (to keep the checkpoint's, give --lr 0.001)" in
              p.stdout, f"another --lr: {p.stdout[-600:]!r}")

    # a newer format names the zeroc that wrote it; format 3 must name one
    for name, edit, needles in (
            ("f5", lambda m: m.update(format_version=5, producer_version="9.9.9+gfeed"),
             ["format version 5 is newer", "written by zeroc 9.9.9+gfeed"]),
            # format 4's keys (a LoRA run's checkpoint) in a format-3 manifest
            ("f3-stored", lambda m: m["units"][0].update(stored=False),
             ["units[0].stored is false, expected no such key before format 4"]),
            ("f4-nodigest", lambda m: (m.update(format_version=4), m["units"][0].update(stored=False)),
             ["base_digest is missing, expected 32 lowercase hex digits"]),
            ("f3-anon", lambda m: m.pop("producer_version"), ["producer_version is missing"])):
        d = H_.path(f"ck-{name}")
        shutil.copytree(ck, d)
        path = os.path.join(d, "step-000003", "manifest.json")
        mm = json.load(open(path))
        edit(mm)
        json.dump(mm, open(path, "w"), indent=1)
        rehash(os.path.join(d, "step-000003"))
        p = H_.run(1, "ckpt", "verify", d, ok=False)
        check(p.returncode == 1 and all(n in p.stderr for n in needles), f"{name}: {p.stderr!r}")


TESTS = [test_exact_resume, test_crash_during_save, test_crash_resaving_a_step, test_reshard, test_export_safetensors,
         test_export_formats_and_init, test_export_memory_124m, test_corruption, test_full_disk,
         test_resume_other_shape, test_save_dir_locked, test_save_dir_not_shared,
         test_resume_without_latest, test_resume_keeping_nothing_warns, test_keep_after_rollback,
         test_trainer_record_ranges, test_init_offsets_out_of_range,
         test_save_verified_before_saved, test_manifest_edits, test_stop_signal_saves,
         test_stop_under_mpirun_saves,
         test_resume_data_position, test_resume_earlier_format]

if __name__ == "__main__":
    H_.main(TESTS, sys.argv[3:])
