#!/usr/bin/env python3
"""test_gpt2.py — end-to-end GPT-2 through `zeroc prepare`, `zeroc train --model gpt2` and
`zeroc sample` on 1–4 ranks (python3 stdlib only; prints "N passed, N failed").

Usage: test_gpt2.py ZEROC_BINARY MPIRUN_SH [test-name ...]

Expected values are computed here from first principles: the ZeRO paper's formulas (docs/ARCHITECTURE.md) over the unit
sizes GPT-2 registers, SHA-256 of weights laid out by hand from an llm.c file, byte counts."""
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import time

from harness import Harness

H_ = Harness(sys.argv[1], sys.argv[2])
check = H_.check
# tiny shape: L=2 C=32 H=2 T=16 V=256 (byte level)
TINY = ["--layers", 2, "--channels", 32, "--heads", 2, "--seq-len", 16, "--micro-batch", 2]


def prepared():
    return H_.text_tokens()


def train(n, name, *extra, steps=10):
    data, _ = prepared()
    H_.run(n, "train", "--model", "gpt2", "--data", data, "--steps", steps,
           "--report", H_.path(name + ".json"), *extra)
    return H_.report(name + ".json")


def gpt2_units(L, C, V, maxT):
    Vp = (V + 127) // 128 * 128
    return [Vp * C + maxT * C] + [12 * C * C + 13 * C] * L + [2 * C]


def test_gpt2_stages_bitwise_memory_comm():
    """Stages 0–3 identical per N (N = 1, 2, 4); activation checkpointing changes no bit but
    lowers activations; model-state bytes and comm per step equal the ZeRO paper's formulas (docs/ARCHITECTURE.md) (stage 3:
    every unit, the tied embedding included, gathered once for forward and once for backward)."""
    units = gpt2_units(2, 32, 256, 16)
    for n in H_.trim((1, 2, 4), (2,)):
        padded = [-(-u // n) * n for u in units]
        psi = sum(padded)
        shas = {}
        for stage in range(4):
            rep = train(n, f"g-n{n}-s{stage}", "--stage", stage, *TINY)
            shas[stage] = rep["weights_sha256"]
            full, part = 4 * psi, 4 * psi // n
            want = {0: (full, full, 2 * full), 1: (full, full, 2 * part),
                    2: (full, part, 2 * part), 3: (part, part, 2 * part)}[stage]
            for r in rep["memory"]["ranks"]:
                got = (r["params"], r["grads"], r["optimizer"])
                check(got == want, f"gpt2 N={n} stage {stage}: memory {got} != {want}")
            want_comm = (3 if stage == 3 else 2) * (n - 1) * 4 * psi // n
            got_comm = rep["comm"]["bytes_per_step"]["total"]
            check(got_comm == want_comm, f"gpt2 N={n} stage {stage}: comm {got_comm} != {want_comm}")
            if stage in (0, 3):
                ck = train(n, f"gc-n{n}-s{stage}", "--stage", stage, "--activation-checkpointing",
                           *TINY)
                check(ck["weights_sha256"] == rep["weights_sha256"],
                      f"gpt2 N={n} stage {stage}: activation checkpointing changed the weights")
                a, b = ck["memory"]["ranks"][0], rep["memory"]["ranks"][0]
                check(a["activations_peak"] < b["activations_peak"],
                      f"checkpointing did not lower activations: {a['activations_peak']} vs "
                      f"{b['activations_peak']}")
        check(len(set(shas.values())) == 1, f"gpt2 N={n}: stages disagree {shas}")


def write_llmc_checkpoint(path, L, C, NH, V, maxT, version=3, truncate=0, magic=20240326):
    """An llm.c checkpoint with deterministic small weights (LayerNorm weights 1); returns the
    SHA-256 zeroc must report for it: parameters in zeroc's registration order (wte, wpe, each
    block's 12 tensors, lnfw, lnfb)."""
    Vp = (V + 127) // 128 * 128
    sizes = [Vp * C, maxT * C] + [s * L for s in (C, C, 3 * C * C, 3 * C, C * C, C, C, C,
                                                  4 * C * C, 4 * C, 4 * C * C, C)] + [C, C]
    block = struct.pack("<4096f", *(((i * 7919) % 2001 - 1000) * 2e-5 for i in range(4096)))

    def tensor(i, n):
        if i in (2, 8, 14):  # ln1w, ln2w, lnfw
            return struct.pack("<f", 1.0) * n
        reps, rest = divmod(n, 4096)
        return block * reps + block[:4 * rest]

    data = [tensor(i, n) for i, n in enumerate(sizes)]
    header = struct.pack("<256i", magic, version, maxT, V, L, NH, C, Vp, *([0] * 248))
    with open(path, "wb") as f:
        f.write(header)
        blob = b"".join(data)
        f.write(blob[:len(blob) - truncate] if truncate else blob)
    h = hashlib.sha256()
    h.update(data[0])
    h.update(data[1])
    for layer in range(L):
        for i in range(2, 14):
            per = sizes[i] // L * 4
            h.update(data[i][layer * per:(layer + 1) * per])
    h.update(data[14])
    h.update(data[15])
    return h.hexdigest()


def write_tokens(path, tokens, magic=20240520, count=None):
    with open(path, "wb") as f:
        f.write(struct.pack("<256i", magic, 1, len(tokens) if count is None else count,
                            *([0] * 253)))
        f.write(struct.pack(f"<{len(tokens)}H", *tokens))


def test_gpt2_124m_checkpoint():
    """An llm.c checkpoint of GPT-2 124M's shape loads (each rank reading only its bytes) with
    exactly the file's weights, and 3 steps train at stage 3 on 2 ranks."""
    ckpt, data = H_.path("g124m.bin"), H_.path("tok50k.bin")
    want = write_llmc_checkpoint(ckpt, 12, 768, 12, 50257, 1024)
    write_tokens(data, [(i * 7919) % 50257 for i in range(4096)])
    H_.run(2, "train", "--model", "gpt2", "--init", ckpt, "--data", data, "--stage", 3,
           "--steps", 3, "--micro-batch", 1, "--seq-len", 64, "--report", H_.path("g124m.json"),
           timeout=600)
    rep = H_.report("g124m.json")
    check(rep["params"] == 124475904, f"124M: params {rep['params']}")
    check(rep["initial_weights_sha256"] == want, "124M: loaded weights differ from the file's")
    check(all(x == x and 0 < x < 20 for x in rep["loss"]), f"124M: losses {rep['loss']}")
    check(rep["weights_sha256"] != want, "124M: training did not change the weights")


def test_gpt2_bad_files():
    """Bad checkpoints and token files: non-zero exit, a message naming the file and problem."""
    data, _ = prepared()
    good_tok = H_.path("tok.bin")
    write_tokens(good_tok, [i % 256 for i in range(2000)])
    cases = []
    for name, kw, needle in (("magic.bin", {"magic": 12345}, "magic"),
                             ("version.bin", {"version": 4}, "version"),
                             ("trunc.bin", {"truncate": 100}, "truncated")):
        write_llmc_checkpoint(H_.path(name), 1, 32, 2, 256, 16, **kw)
        cases.append((["--init", H_.path(name), "--data", good_tok], [name, needle]))
    big = H_.path("bigid.bin")
    write_tokens(big, [5] * 100 + [300] + [5] * 100)
    cases.append((["--data", big], ["bigid.bin", "300"]))
    short = H_.path("short.bin")
    write_tokens(short, [1, 2, 3])
    cases.append((["--data", short], ["short.bin", "shorter than one batch"]))
    notok = H_.path("notok.bin")
    write_tokens(notok, [1] * 100, magic=1)
    cases.append((["--data", notok], ["notok.bin", "magic"]))
    cases.append((["--data", H_.path("missing.bin")], ["missing.bin"]))
    for extra, needles in cases:
        for n in (1, 2):
            p = H_.run(n, "train", "--model", "gpt2", "--steps", 2, *TINY, *extra, ok=False,
                       timeout=120)
            check(p.returncode != 0, f"{extra} on {n} ranks: exit code 0")
            for s in needles:
                check(s in p.stderr, f"{extra} on {n} ranks: message lacks {s!r}: {p.stderr!r}")


def test_prepare_train_sample():
    """prepare → train (loss falls, --save-final) → sample (prompt continued, same seed gives the
    same text) → train again from the saved file (same weights)."""
    data, val = prepared()
    final = H_.path("final.bin")
    rep = train(2, "e2e", "--stage", 3, *TINY, "--val-data", val, "--save-final", final,
                "--sample-every", 30, "--lr", 3e-3, steps=30)
    check(rep["loss"][-1] < rep["loss"][0] - 0.5, f"loss did not fall: {rep['loss'][:3]}…"
          f"{rep['loss'][-3:]}")
    a = H_.run(1, "sample", "--init", final, "--prompt", "The quick", "--length", 40, "--seed", 7)
    b = H_.run(1, "sample", "--init", final, "--prompt", "The quick", "--length", 40, "--seed", 7)
    check(a.stdout.startswith("The quick") and len(a.stdout) >= len("The quick") + 40,
          f"sample output {a.stdout!r}")
    check(a.stdout == b.stdout, "sampling with the same seed differs")
    again = train(1, "reload", "--init", final, *TINY, steps=1)
    check(again["initial_weights_sha256"] == rep["weights_sha256"],
          "--save-final then --init does not give the same weights")
    # shape flags beside an llm.c --init must say what the file says: they cannot change it
    heads4 = list(TINY)
    heads4[heads4.index("--heads") + 1] = 4
    p = H_.run(1, "train", "--model", "gpt2", "--data", H_.text_tokens()[0], "--steps", 1,
               "--init", final, *heads4, ok=False)
    check(p.returncode != 0 and "--heads 4" in p.stderr and "has 2" in p.stderr,
          f"--heads 4 beside a 2-head --init: {p.stderr!r}")
    # lengths past int (prompt + length overflowed) and temperatures beyond a float: refused by
    # flag, before anything runs
    for args, needle in ((["--length", 2147483647], "--length must be in [1, 1048576]"),
                         (["--temperature", "1e-300"], "--temperature must be a normal float"),
                         (["--temperature", "1e-40"], "--temperature must be a normal float"),
                         (["--temperature", "1e300"], "--temperature must be a normal float")):
        p = H_.run(1, "sample", "--init", final, *args, ok=False)
        check(p.returncode == 1 and needle in p.stderr, f"sample {args}: {p.stderr!r}")
    p = H_.run(1, "train", "--model", "gpt2", "--data", data, *TINY, "--steps", 2,
               "--sample-every", 1, "--sample-length", 2147483647, ok=False)
    check(p.returncode == 1 and "--sample-length must be at most 1048576" in p.stderr and
          "step " not in p.stdout, f"--sample-length 2^31-1: {p.stderr!r}")


def test_validation_reads_each_window_once():
    """A validation covers every window of T + 1 tokens of --val-data (or the first
    --val-windows K), whatever the split: with the same --init weights (--lr 0) the validation
    loss has the same bits for --micro-batch 16, 8, 5 and 4, 8 × --grad-accum 2, and 2 or 3
    ranks (stage 3, a rank with only padding rows) — the file's 42 windows fill no micro-batch
    evenly, and padding rows are not counted. It equals the mean of the training losses of a
    --micro-batch 1 run over the same file, which reads those windows one per step (the old
    validation read 8 micro-batches per rank from the file's start: another prefix for every
    micro-batch and rank count). --val-windows K takes the first K, more than the file holds is
    cut (said once), a file of one window validates on 2 ranks; --val-batches is refused, naming
    --val-windows; a file shorter than one window is refused. Each validation's wall time is on
    its step line and in the report's val_ms (step_ms has none of it); a whole file of more than
    10M tokens predicted is said to be large at the start, naming --val-windows."""
    data, val = prepared()
    init = H_.path("val-init.bin")
    write_llmc_checkpoint(init, 2, 32, 2, 256, 16)
    ntok = struct.unpack("<i", open(val, "rb").read()[8:12])[0]
    K = (ntok - 1) // 16
    check(K == 42, f"the test's validation file holds {K} windows, not 42")
    shape = ["--init", init, "--seq-len", 16, "--lr", 0]

    def val_loss(n, name, *extra):
        rep = train(n, name, *shape, "--val-data", val, *extra, steps=1)
        return rep["val_loss"][0]

    splits = H_.trim([(1, "--micro-batch", 16), (1, "--micro-batch", 8), (1, "--micro-batch", 5),
                      (1, "--micro-batch", 4), (1, "--micro-batch", 8, "--grad-accum", 2),
                      (2, "--micro-batch", 8), (3, "--micro-batch", 4, "--stage", 3)],
                     [(1, "--micro-batch", 16), (3, "--micro-batch", 4, "--stage", 3)])
    got = {s: val_loss(s[0], f"val-split-{k}", *s[1:]) for k, s in enumerate(splits)}
    check(len(set(got.values())) == 1, f"validation losses differ with the split: {got}")
    # the same windows one per training step: micro-batch 1 reads window g at step g
    H_.run(1, "train", "--model", "gpt2", "--data", val, *shape, "--micro-batch", 1, "--steps", K,
           "--report", H_.path("val-as-train.json"))
    per_window = H_.report("val-as-train.json")["loss"]
    whole = sum(per_window) / K
    first = got[splits[0]]
    check(abs(first - whole) <= 1e-9 * whole,
          f"validation {first!r} is not the mean of the {K} windows' losses {whole!r}")
    part = val_loss(1, "val-first-10", "--micro-batch", 4, "--val-windows", 10)
    check(abs(part - sum(per_window[:10]) / 10) <= 1e-9 * part,
          f"--val-windows 10: {part!r}, the first 10 windows' mean {sum(per_window[:10]) / 10!r}")
    t0 = time.monotonic()
    p = H_.run(1, "train", "--model", "gpt2", "--data", data, *shape, "--micro-batch", 16,
               "--steps", 3, "--val-every", 2, "--val-data", val, "--val-windows", 100,
               "--report", H_.path("val-cut.json"))
    wall_ms = (time.monotonic() - t0) * 1e3
    cut = H_.report("val-cut.json")
    check(cut["val_loss"][1] == first, "--val-windows 100 of 42 differs")
    # each validation's wall time: in the report beside val_loss (null where none ran), on the
    # step line, and not in step_ms
    vms = cut.get("val_ms")
    check(isinstance(vms, list) and vms[0] is None and all(0 < v < wall_ms for v in vms[1:]),
          f"val_ms {vms} (the run took {wall_ms:.0f} ms)")
    for k in (1, 2):
        line = [x for x in p.stdout.splitlines() if x.startswith(f"step {k + 1:5d}/3 ")]
        check(len(line) == 1 and f"| val {cut['val_loss'][k]:.4f} ({vms[k] / 1e3:.2f} s) |"
              in line[0], f"step {k + 1}'s line: {line}")
    check(f"{val} holds 42 windows of 16 + 1 tokens, fewer than the 100 of --val-windows: all "
          f"of them" in p.stdout and
          f"validation: 42 windows of 16 + 1 tokens (672 tokens predicted) of {val} (the whole "
          f"file); each validation runs 3 forward micro-batches of 16 per rank" in p.stdout,
          f"the validation set is not said: {p.stdout[-500:]!r}")
    raw = open(val, "rb").read()
    one = H_.path("val-one-window.bin")
    header = bytearray(raw[:1024])
    struct.pack_into("<i", header, 8, 17)
    open(one, "wb").write(bytes(header) + raw[1024:1024 + 34])
    # a whole file predicting more than 10M tokens is said to be large at the start, naming
    # --val-windows (a sparse file of 10000017 zeros: the refused --resume stops the run before
    # any validation); not when --val-windows chose it
    big = H_.path("val-big.bin")
    with open(big, "wb") as f:
        f.write(struct.pack("<256I", 20240520, 1, 10000017, *([0] * 253)))
        f.truncate(1024 + 2 * 10000017)
    for extra in ([], ["--val-windows", 625001]):
        p = H_.run(1, "train", "--model", "gpt2", "--data", data, *shape, "--micro-batch", 16,
                   "--steps", 1, "--val-data", big, *extra, "--resume", H_.path("no-ck"),
                   ok=False)
        said = ("(10000016 tokens predicted) of " + big) in p.stdout and (
            "; note: the whole file is a large validation, run at every --val-every and the last "
            "step: limit it with --val-windows N (the first N windows; --val-windows 62500 "
            "predicts 1000000 tokens)") in p.stdout
        check(p.returncode == 1 and said == (not extra), f"{extra}: {p.stdout[-600:]!r}")
    os.remove(big)
    ones = [train(n, f"val-one-{n}", *shape, "--micro-batch", 2, "--val-data", one,
                  steps=1)["val_loss"][0] for n in (1, 2)]
    check(ones[0] == ones[1] and abs(ones[0] - per_window[0]) <= 1e-9 * ones[0],
          f"one window on 1 and 2 ranks: {ones}, its training loss {per_window[0]!r}")
    short = H_.path("val-short.bin")
    struct.pack_into("<i", header, 8, 16)
    open(short, "wb").write(bytes(header) + raw[1024:1024 + 32])
    for extra, needle in ((["--val-data", val, "--val-batches", 8],
                           "--val-batches is gone: it counted micro-batches per rank"),
                          (["--val-data", val, "--val-windows", -1],
                           "--val-windows must be >= 0"),
                          (["--val-windows", 5], "--val-every and --val-windows need --val-data"),
                          (["--val-data", short],
                           "val-short.bin: 16 tokens is shorter than one validation window "
                           "(16 + 1 tokens)")):
        p = H_.run(1, "train", "--model", "gpt2", "--data", data, *shape, "--steps", 1, *extra,
                   ok=False)
        check(p.returncode == 1 and needle in p.stderr, f"{extra}: {p.stderr!r}")
    p = H_.run(1, "train", "--val-batches", 8, ok=False)  # before any other complaint
    check(p.returncode == 1 and "use --val-windows N (the first N windows of --val-data" in
          p.stderr, f"--val-batches alone: {p.stderr!r}")


def window_losses(n, name, data, *extra, steps):
    """--lr 0 losses of `steps` steps on n ranks of a 1-layer model of TINY's width (B = 2,
    T = 16) reading `data`: the weights never change, so each step's loss names the windows it
    read."""
    H_.run(n, "train", "--model", "gpt2", "--data", data, "--layers", 1, "--channels", 32,
           "--heads", 2, "--seq-len", 16, "--micro-batch", 2, "--lr", 0, "--steps", steps,
           "--report", H_.path(name + ".json"), *extra)
    return H_.report(name + ".json")["loss"]


def test_shuffle_permutes_windows():
    """--shuffle on a file of exactly W = 10 windows (10·32 + 1 tokens), 8 seeds × 3 epochs,
    windows told apart by their --lr 0 losses: each epoch visits every window once, and the
    epochs are unrelated orders. The old order, (a·j + c_epoch) mod W, passed the first check but
    every epoch had one constant step a between consecutive windows, later epochs were the first
    rotated by a constant, and some seeds read in order. For a uniform random permutation of 10
    the chance of any of these is at most 40/10! ≈ 1e-5 per epoch (4 steps a coprime to 10 × 10
    offsets), so over 24 epochs one such epoch is allowed as a margin, not expected; the
    permutation is fixed by (seed, epoch), so the counts are deterministic. 2 ranks read the
    same global windows as 1 rank accumulating 2 micro-steps."""
    import random
    W, rng = 10, random.Random(20240520)
    data = H_.path("w10.bin")
    write_tokens(data, [rng.randrange(256) for _ in range(W * 32 + 1)])
    orders = {}
    seeds = H_.trim(range(1, 9), range(1, 3))  # the sanitizer pass: the same code, 2 seeds
    for seed in seeds:
        seq = window_losses(1, f"w10-s{seed}", data, "--seed", seed, steps=W)
        check(len(set(seq)) == W, f"seed {seed}: losses do not tell the windows apart: {seq}")
        shuf = window_losses(1, f"w10-shuf-s{seed}", data, "--seed", seed, "--shuffle",
                             steps=3 * W)
        ids = [seq.index(x) if x in seq else -1 for x in shuf]
        for e in range(3):
            orders[seed, e] = ids[e * W:(e + 1) * W]
            check(sorted(orders[seed, e]) == list(range(W)),
                  f"seed {seed} epoch {e}: not a permutation of the {W} windows: {orders[seed, e]}")

    def steps(o):  # the steps between consecutive windows, mod W
        return {(b - a) % W for a, b in zip(o, o[1:])}

    def shifts(o, p):  # the offsets between two orders, place by place, mod W
        return {(b - a) % W for a, b in zip(o, p)}

    sequential = sum(o == list(range(W)) for o in orders.values())
    affine = sum(len(steps(o)) == 1 for o in orders.values())
    rotated = sum(len(shifts(orders[s, e], orders[s, f])) == 1
                  for s in seeds for e in range(3) for f in range(e + 1, 3))
    distinct, n = len({tuple(o) for o in orders.values()}), len(orders)
    check(sequential <= 1, f"{sequential} of {n} epochs read the windows in order: {orders}")
    check(affine <= 1, f"{affine} of {n} epochs step by one constant: {orders}")
    check(rotated <= 1, f"{rotated} of {n} epoch pairs are rotations of each other: {orders}")
    check(distinct >= n - 1, f"only {distinct} distinct orders in {n} epochs: {orders}")
    two = window_losses(2, "w10-n2", data, "--seed", 3, "--shuffle", steps=W)
    one = window_losses(1, "w10-a2", data, "--seed", 3, "--shuffle", "--grad-accum", 2, steps=W)
    check(all(abs(a - b) <= 1e-6 * abs(b) for a, b in zip(two, one)),
          f"2 ranks read other windows than 1 rank accumulating 2: {two} vs {one}")


def test_prepare_many_files():
    """prepare takes a directory for --text: its regular files, recursively, sorted by path
    (byte order: a-b.txt before a/…), hidden ones skipped; 9000 files through a directory and
    through 9000 arguments (more than 128 KiB of names: MPI's singleton start failed on them)
    give the very files one file of the same text, joined by newlines, gives. prepare runs
    without MPI; under mpirun on 2 ranks rank 0 alone writes, rank 1 says it does nothing."""
    import subprocess
    top = H_.path("many")
    os.makedirs(os.path.join(top, "a"))
    os.makedirs(os.path.join(top, ".git"))
    texts = {}
    for i in range(9000):
        texts[os.path.join(top, f"f{i}.txt")] = f"doc {i}: " + "xyz"[:i % 3 + 1]
    texts[os.path.join(top, "a-b.txt")] = "dash file"
    texts[os.path.join(top, "a", "x.txt")] = "file in a subdirectory"
    for path, text in texts.items():
        open(path, "w").write(text)
    for hidden in (os.path.join(top, ".hidden.txt"), os.path.join(top, ".git", "x.txt")):
        open(hidden, "w").write("HIDDEN")
    order = sorted(texts)
    check(order.index(os.path.join(top, "a-b.txt")) < order.index(os.path.join(top, "a", "x.txt")),
          "the test's order is not byte order")
    one = H_.path("many-one.txt")
    open(one, "w").write("\n".join(texts[p] for p in order))

    def outputs(prefix):
        return [open(prefix + s, "rb").read() for s in ("_train.bin", "_val.bin")]

    def prepare(prefix, *text, mpi=0):
        args = ["prepare", "--text", *text, "--out", H_.path(prefix)]
        if mpi:
            return H_.run(mpi, *args, ok=False)
        return subprocess.run([H_.zeroc, *args], capture_output=True, text=True, timeout=300)

    p = prepare("one", one)
    check(p.returncode == 0, f"prepare of one file: {p.stderr!r}")
    want = outputs(H_.path("one"))
    check(struct.unpack("<i", want[0][8:12])[0] + struct.unpack("<i", want[1][8:12])[0] ==
          os.path.getsize(one), "one file's tokens are not its bytes")
    check(sum(map(len, order)) > 128 << 10, "the file names total less than 128 KiB")
    cases = [("args", order, 0), ("dir", [top], 0), ("dir-slash", [top + "/"], 0),
             ("dir-np1", [top], 1), ("dir-np2", [top], 2)]
    for name, text, mpi in cases:
        p = prepare(name, *text, mpi=mpi)
        check(p.returncode == 0, f"{name}: exit {p.returncode}: {p.stderr[-600:]!r}")
        check(p.stdout.count("prepared 9002 files") == 1, f"{name}: {p.stdout[-400:]!r}")
        if p.returncode == 0:
            check(outputs(H_.path(name)) == want, f"{name}: other token files than one file's")
    check("rank 1 of an MPI launch; rank 0 prepares the files, this process does nothing" in
          p.stdout, f"2 ranks: rank 1 said {p.stdout!r}")
    os.makedirs(H_.path("empty/.dot"))
    open(H_.path("empty/.dot/x.txt"), "w").write("hidden")
    p = prepare("empty", H_.path("empty"))
    check(p.returncode == 1 and f"--text {H_.path('empty')}: the directory holds no regular file"
          in p.stderr, f"a directory of hidden files only: {p.stderr!r}")


def test_bpe_sample_ids():
    """A BPE model's samples (vocabulary 50257) print token ids apart: train --sample-every
    prints <|endoftext|> (50256) and then the generated ids (they were glued: 5025635784), and
    sample without --prompt or --vocab starts from 50256 too (its default newline was refused
    as a malformed id list); a prompt quoted in an error shows its control characters
    escaped."""
    data, final = H_.path("bpe-ids.bin"), H_.path("bpe-final.bin")
    write_tokens(data, [(i * 7919) % 50257 for i in range(600)])
    p = H_.run(1, "train", "--model", "gpt2", "--vocab", 50257, "--layers", 1, "--channels", 32,
               "--heads", 2, "--seq-len", 16, "--micro-batch", 2, "--data", data, "--steps", 1,
               "--sample-every", 1, "--sample-length", 5, "--save-final", final)
    head = "---- sample after step 1 ----\n"
    block = p.stdout.split(head, 1)[1].split("\n----", 1)[0] if head in p.stdout else ""
    ids = [int(x) for x in block.split()]
    check(len(ids) == 6 and ids[0] == 50256 and all(0 <= x < 50257 for x in ids),
          f"train's sample: {block!r}")
    p = H_.run(1, "sample", "--init", final, "--length", 5, ok=False)
    ids = [int(x) for x in p.stdout.split()] if p.returncode == 0 else []
    check(p.returncode == 0 and len(ids) == 6 and ids[0] == 50256 and
          all(0 <= x < 50257 for x in ids), f"sample's default prompt: {p.stdout!r} {p.stderr!r}")
    p = H_.run(1, "sample", "--init", final, "--prompt", "1,x\n\x01", ok=False)
    check(p.returncode == 1 and "got '1,x\\n\\x01'" in p.stderr, f"a bad prompt: {p.stderr!r}")


def test_sample_zeroc_outputs():
    """sample --init given zeroc's own outputs — a save directory, a step checkpoint, the
    save directory's latest file, a --save-weights file — says what it is and the export that
    makes it samplable; that very command, run, gives a file sample reads."""
    import subprocess
    data, _ = prepared()
    ck, weights = H_.path("ck-own"), H_.path("own.safetensors")
    H_.run(1, "train", "--model", "gpt2", "--data", data, "--layers", 1, "--channels", 32,
           "--heads", 2, "--seq-len", 16, "--micro-batch", 2, "--steps", 2, "--save-dir", ck,
           "--save-every", 2, "--save-weights", weights)
    step = os.path.join(ck, "step-000002")
    cases = ((ck, "a save directory of zeroc train", ck),
             (step, "a checkpoint of zeroc train (it holds manifest.json)", step),
             (os.path.join(ck, "latest"), "the file that names the newest checkpoint of zeroc "
              f"train's save directory {ck}", ck),
             (weights, "a weights file of zeroc (train --save-weights", "CKPT_DIR"))
    for k, (init, what, export) in enumerate(cases):
        p = H_.run(1, "sample", "--init", init, "--length", 4, ok=False)
        hint = f"`zeroc ckpt export {export} --format llmc --out FILE.bin`, then --init FILE.bin"
        check(p.returncode == 1 and f"--init {init}: {what}" in p.stderr and hint in p.stderr,
              f"--init {init}: {p.stderr!r}")
        out = H_.path(f"exported-{k}.bin")
        H_.run(1, *hint.split("`")[1].replace("CKPT_DIR", ck).replace("FILE.bin", out)
               .split()[1:])
        q = subprocess.run([H_.zeroc, "sample", "--init", out, "--length", "4"],
                           capture_output=True, timeout=120)  # bytes: any may come out
        check(q.returncode == 0 and len(q.stdout) >= 5, f"sample of the export: {q.stderr!r}")


def split_tokens(src, prefix, cuts):
    """Cuts the token file src at the token positions `cuts` into shard files prefix_000.bin,
    prefix_001.bin, ... (written last first, so directory order is not name order); returns the
    glob that names them."""
    with open(src, "rb") as f:
        f.seek(1024)
        raw = f.read()
    tok = list(struct.unpack(f"<{len(raw) // 2}H", raw))
    bounds = [0, *cuts, len(tok)]
    for i in reversed(range(len(bounds) - 1)):
        write_tokens(f"{prefix}_{i:03d}.bin", tok[bounds[i]:bounds[i + 1]])
    return prefix + "_*.bin"


def test_gpt2_shards():
    """--data and --val-data take a glob of llm.c token files (shards) read as one stream, their
    concatenation in name order: the training file and the validation file cut at arbitrary
    tokens (a window spans each cut; one shard is a single token) give bit-identical losses,
    validation losses and final weights to the files they were cut from, in order and with
    --shuffle, on 1 and 2 ranks; a run resumed across a shard boundary ends where an
    uninterrupted one does; no match and a file too large for an int32 count are refused saying
    what to do, and so is a byte-level prepare of too much text, before it reads any."""
    data, val = prepared()
    # step 6 of one rank reads tokens 192..224 (B·T = 32), across the cut at 200
    glob = split_tokens(data, H_.path("tr"), [200, 1237, 1238, 3001])
    vglob = split_tokens(val, H_.path("va"), [17, 50])
    common = [*TINY, "--val-every", 5]
    runs = H_.trim([(1, ()), (1, ("--shuffle",)), (2, ()), (2, ("--shuffle",))],
                   [(1, ()), (2, ("--shuffle",))])
    for n, extra in runs:
        tag = f"n{n}{'-shuf' if extra else ''}"
        one = train(n, f"sh-one-{tag}", *common, "--val-data", val, *extra)
        H_.run(n, "train", "--model", "gpt2", "--data", glob, "--val-data", vglob, "--steps", 10,
               *common, *extra, "--report", H_.path(f"sh-glob-{tag}.json"))
        sh = H_.report(f"sh-glob-{tag}.json")
        for key in ("loss", "val_loss", "weights_sha256"):
            check(sh[key] == one[key], f"{tag}: {key} of the shards differs from the file's: "
                  f"{sh[key]} vs {one[key]}")
    # resume at step 5 with the glob, across the boundary at token 200 (step 6)
    d = H_.path("sh-ck")
    H_.run(1, "train", "--model", "gpt2", "--data", glob, *TINY, "--steps", 5, "--save-dir", d,
           "--save-every", 5)
    H_.run(1, "train", "--model", "gpt2", "--data", glob, *TINY, "--steps", 10, "--resume", d,
           "--report", H_.path("sh-resumed.json"))
    full = train(1, "sh-full", *TINY)
    got = H_.report("sh-resumed.json")
    check(got["weights_sha256"] == full["weights_sha256"],
          "a resume across a shard boundary ends elsewhere than an uninterrupted run")
    p = H_.run(1, "train", "--model", "gpt2", "--data", H_.path("nope_*.bin"), *TINY, ok=False)
    check(p.returncode != 0 and "nope_*.bin: no file matches this pattern" in p.stderr,
          f"no match: {p.stderr!r}")
    # the glob unquoted: the shell gives --data the first shard and leaves the others
    p = H_.run(1, "train", "--model", "gpt2", "--data", H_.path("tr_000.bin"),
               H_.path("tr_001.bin"), *TINY, ok=False)
    check(p.returncode == 1 and f"unexpected argument '{H_.path('tr_001.bin')}' after --data "
          f"{H_.path('tr_000.bin')}: a flag takes one value (a glob of files must be quoted"
          in p.stderr, f"an unquoted glob: {p.stderr!r}")
    # an output that is one of the shards a glob reads is refused, as for a single --data file
    shard = H_.path("tr_002.bin")
    before = open(shard, "rb").read()
    p = H_.run(1, "train", "--model", "gpt2", "--data", glob, *TINY, "--save-final", shard,
               ok=False)
    check(p.returncode == 1 and f"--save-final {shard} is the same file as --data {shard}, "
          "which the run reads" in p.stderr and open(shard, "rb").read() == before,
          f"--save-final over a shard: {p.returncode} {p.stderr!r}")
    p = H_.run(1, "detokenize", "--vocab", H_.path("no-vocab"), "--tokens", glob, "--out", shard,
               ok=False)
    check(p.returncode == 1 and f"--out {shard} is the same file as --tokens {shard}" in p.stderr
          and open(shard, "rb").read() == before, f"detokenize over a shard: {p.stderr!r}")
    # every shard stays open: 1100 of them under a soft limit of 1024 open files (a common
    # default, FineWeb-100B has ~1000 shards) train, the soft limit raised toward the hard one
    many = H_.path("many")
    os.makedirs(many)
    for i in range(1100):
        write_tokens(os.path.join(many, f"s_{i:04d}.bin"), [(i * 7 + j) % 256 for j in range(40)])
    import resource

    def nofile():
        resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 8192))
    p = subprocess.run([H_.zeroc, "train", "--model", "gpt2", "--data",
                        os.path.join(many, "s_*.bin"), *map(str, TINY), "--steps", "1"],
                       capture_output=True, text=True, timeout=300, preexec_fn=nofile,
                       env={**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"})
    H_.check_sanitizers(["train", "1100 shards"], p)
    check(p.returncode == 0 and "1100 files, 44000 tokens" in p.stdout,
          f"1100 shards under ulimit -n 1024: {p.returncode} {p.stderr[-500:]!r}")
    shutil.rmtree(many)
    for name, n in (("neg.bin", 2**31 + 5), ("wrap.bin", 2**32 + 100)):  # sparse: no disk cost
        with open(H_.path(name), "wb") as f:
            f.write(struct.pack("<256I", 20240520, 1, n & 0xffffffff, *([0] * 253)))
            f.truncate(1024 + 2 * n)
        p = H_.run(1, "train", "--model", "gpt2", "--data", H_.path(name), *TINY, ok=False)
        check(p.returncode != 0 and f"{name}: {n} tokens by its size: more than an llm.c token "
              "file's int32 count (2147483647) can hold; split it into shards (train --data "
              "takes a glob of shards)" in p.stderr, f"{name}: {p.stderr!r}")
        os.remove(H_.path(name))
    # prepare refuses a byte-level corpus too large from its size, before reading it (reading
    # 2.4 GB took 6.5 s and 4.7 GB of memory before the refusal): a sparse file, no disk cost,
    # and 1 GiB of address space, in which reading it first fails otherwise (not under the
    # sanitizers, whose shadow memory needs more)
    big = H_.path("big.txt")
    with open(big, "wb") as f:
        f.truncate(2_400_000_000)
    import resource

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
    p = subprocess.run([H_.zeroc, "prepare", "--text", big, "--out", H_.path("big")],
                       capture_output=True, text=True, timeout=120,
                       preexec_fn=None if H_.sanitized else cap)
    H_.check_sanitizers(["prepare"], p)
    os.remove(big)
    check(p.returncode == 1 and "--text: 1 file of 2400000000 bytes (byte-level: one token a "
          "byte): 2160000000 training and 240000000 validation tokens; a split of more than an "
          "llm.c token file's int32 count (2147483647) cannot be written: prepare the corpus in "
          "parts" in p.stderr and "--data 'data/part*_train.bin'" in p.stderr,
          f"prepare of 2.4 GB: {p.stderr!r}")
    check(not os.path.exists(H_.path("big_train.bin")), "prepare wrote a split of 2.4 GB")


def test_gpt2_vocab_tiles():
    """GPT-2's tied table in tiles (--tile-params, positive: ZeRO-Infinity's tiling of the
    vocabulary): at V = 1000 (1024 padded rows in head blocks of 128) × 32 channels, 12288
    parameters a tile make 3 tiles of 384, 384 and 256 rows (units embeddings.0-2, the learned
    positions in the last; 3 + 2 blocks + ln_f = 6 units), gathered tile by tile for the embedding
    and again for the head. It changes no bit: the head runs in the same 128-row blocks tiled or
    not, so the initial weights, the losses and the final weights are the untiled run's, in fp32
    and bf16, at stages 0 and 3, with both offloads, activation checkpointing and gradient
    accumulation; the exports (transformers', llm.c's, --save-final) are the same bytes and load
    back into tiles; the samples are the untiled run's; the largest gathered unit shrinks; the
    traffic is the estimate's, and the working peak within its bound. The
    tokens are drawn over the whole vocabulary, so every tile has rows in use."""
    import random
    rng = random.Random(5)
    data = H_.path("vt-tokens.bin")
    toks = [rng.randrange(1000) for _ in range(4096)]
    with open(data, "wb") as f:  # llm.c's token file: 256 int32 of header, then uint16 ids
        f.write(struct.pack("<256i", 20240520, 1, len(toks), *([0] * 253)))
        f.write(struct.pack(f"<{len(toks)}H", *toks))
    nvme = H_.path("vt-nvme")
    os.makedirs(nvme, exist_ok=True)
    offload = ["--offload-optimizer", "nvme", "--offload-param", "nvme", "--nvme-path", nvme]
    shape = ["--layers", 2, "--channels", 32, "--heads", 2, "--seq-len", 16, "--micro-batch", 2,
             "--vocab", 1000]
    tiles = 3 * 128 * 32
    runs = [("fp32", "untiled", -1, 3, []), ("fp32", "tiled", tiles, 3, []),
            ("fp32", "tiled-s0", tiles, 0, []), ("bf16", "untiled", -1, 3, []),
            ("bf16", "tiled", tiles, 3, []),
            ("bf16", "tiled-offload-ckpt-acc", tiles, 3,
             offload + ["--activation-checkpointing", "--grad-accum", 2]),
            ("bf16", "untiled-offload-ckpt-acc", -1, 3,
             offload + ["--activation-checkpointing", "--grad-accum", 2])]
    runs = [r for r in runs if r[0] == "bf16" or not H_.sanitized]
    reps = {}
    for dtype, name, t, stage, extra in runs:
        tag = f"vt-{dtype}-{name}"
        save = ["--save-dir", H_.path(tag + "-ck"), "--save-final", H_.path(tag + ".bin")]
        p = H_.run(2, "train", "--model", "gpt2", "--data", data, "--steps", 4, "--report",
                   H_.path(tag + ".json"), "--dtype", dtype, "--stage", stage, "--tile-params", t,
                   *shape, *extra, *save)
        reps[(dtype, name)] = rep = H_.report(tag + ".json")
        units = 6 if t > 0 else 4
        check(f"{units} units" in p.stdout, f"{tag}: {units} units? {p.stdout[:300]!r}")
    for (dtype, name), rep in reps.items():
        base = "untiled-offload-ckpt-acc" if "acc" in name else "untiled"
        if name == base:
            continue
        other = reps[(dtype, base)]
        for key in ("initial_weights_sha256", "weights_sha256", "loss"):
            check(rep[key] == other[key],
                  f"gpt2 tiles {dtype} {name}: {key} {rep[key]} != {base}'s {other[key]}")
        a = open(H_.path(f"vt-{dtype}-{name}.bin"), "rb").read()
        b = open(H_.path(f"vt-{dtype}-{base}.bin"), "rb").read()
        check(a == b, f"gpt2 tiles {dtype} {name}: --save-final differs from {base}'s")
        if name not in ("tiled", "tiled-offload-ckpt-acc"):
            continue
        for fmt in ("hf", "llmc"):
            outs = []
            for n in (name, base):
                out = H_.path(f"vt-{dtype}-{n}-{fmt}")
                H_.run(1, "ckpt", "export", H_.path(f"vt-{dtype}-{n}-ck"), "--format", fmt,
                       "--out", out + (".bin" if fmt == "llmc" else ""))
                if fmt == "llmc":
                    outs.append(open(out + ".bin", "rb").read())
                else:
                    outs.append({f: open(os.path.join(out, f), "rb").read()
                                 for f in sorted(os.listdir(out))})
            check(outs[0] == outs[1], f"gpt2 tiles {dtype} {name}: the {fmt} export differs")
    # resumes: a tiled checkpoint tiled (the uninterrupted weights), and refused untiled naming
    # --tile-params; one from before GPT-2 recorded its tiles (no client.vocab_tile_rows) untiled
    if ("bf16", "tiled") in reps:
        want = reps[("bf16", "untiled")]["weights_sha256"]
        common = ["--model", "gpt2", "--data", data, "--dtype", "bf16", "--stage", 3, *shape]
        for t, old in ((tiles, False), (-1, True)):
            ck = H_.path(f"vt-resume-{t}")
            H_.run(2, "train", *common, "--steps", 2, "--tile-params", t, "--save-dir", ck)
            step2 = os.path.join(ck, "step-000002")
            if old:
                mpath = os.path.join(step2, "manifest.json")
                with open(mpath) as f:
                    m = json.load(f)
                del m["client"]["vocab_tile_rows"]
                with open(mpath, "w") as f:
                    json.dump(m, f)
                with open(mpath, "rb") as f:  # the checksum recomputed, as an editor would
                    digest = hashlib.sha256(f.read()).hexdigest()
                with open(os.path.join(step2, "manifest.sha256"), "w") as f:
                    f.write(f"{digest}  manifest.json\n")
            tag = f"vt-resumed-{t}"
            H_.run(2, "train", *common, "--steps", 4, "--tile-params", t, "--resume", step2,
                   "--report", H_.path(tag + ".json"))
            got = H_.report(tag + ".json")["weights_sha256"]
            check(got == want, f"gpt2 tiles: resumed ({'old' if old else 'tiled'}) {got} != {want}")
        p = H_.run(2, "train", *common, "--steps", 4, "--resume",
                   os.path.join(H_.path(f"vt-resume-{tiles}"), "step-000002"), ok=False)
        check(p.returncode != 0 and "vocab_tile_rows 384, this run has 1024" in p.stderr and
              "--tile-params" in p.stderr, f"gpt2 tiles resumed untiled: {p.stderr[-400:]}")
    # the exports load back into tiles: the untiled run's initial weights from either file
    for init in (H_.path("vt-bf16-untiled.bin"), H_.path("vt-bf16-untiled-hf")):
        if not os.path.exists(init):
            continue
        shas = []
        for t in (-1, tiles):
            tag = f"vt-init-{t}-{os.path.basename(init)}"
            H_.run(2, "train", "--model", "gpt2", "--data", data, "--steps", 1, "--init", init,
                   "--report", H_.path(tag + ".json"), "--tile-params", t, *shape[:-2])
            shas.append(H_.report(tag + ".json")["initial_weights_sha256"])
        check(shas[0] == shas[1], f"gpt2 tiles: --init {init} into tiles: {shas}")
    # the largest gathered unit shrinks: the working peak at stage 3; the traffic (the tiles'
    # third gather) is the estimate's to the byte
    if ("bf16", "tiled") in reps:
        w = [reps[("bf16", n)]["memory"]["ranks"][0]["working_peak"] for n in ("tiled", "untiled")]
        check(w[0] < w[1], f"gpt2 tiles: working peak {w[0]} not below untiled {w[1]}")
        est = H_.estimate("--model", "gpt2", *shape, "--ranks", 2, "--dtype", "bf16",
                          "--tile-params", tiles)
        row = [r for r in est["rows"] if r["stage"] == 3 and r["offload"] == "none"][0]
        got = reps[("bf16", "tiled")]["comm"]["bytes_per_step"]["total"]
        check(row["comm_bytes_per_step"] == got,
              f"gpt2 tiles: estimate {row['comm_bytes_per_step']} != measured {got}")
        # every tile's gradient is kept from the head's backward to the embedding's: the
        # working bound counts them all (with one, the memory check admitted runs past it)
        for stage in (2, 3):
            tag = f"vt-bf16-tiled-bound-s{stage}"
            H_.run(2, "train", "--model", "gpt2", "--data", data, "--steps", 2, "--report",
                   H_.path(tag + ".json"), "--dtype", "bf16", "--stage", stage, "--tile-params",
                   tiles, *shape)
            peak = max(r["working_peak"] for r in H_.report(tag + ".json")["memory"]["ranks"])
            row = [r for r in est["rows"] if r["stage"] == stage and r["offload"] == "none"][0]
            check(peak <= row["working_bound"],
                  f"gpt2 tiles stage {stage}: working peak {peak} > bound {row['working_bound']}")
    # generation reads the tiles for the embedding (the positions with the last) and the head
    if not H_.sanitized:
        samples = []
        for t in (-1, tiles):
            p = H_.run(2, "train", "--model", "gpt2", "--data", data, "--steps", 5,
                       "--tile-params", t, *shape, "--sample-every", 5, "--sample-length", 12)
            samples.append(p.stdout[p.stdout.find("---- sample"):p.stdout.find("\n----\n")])
        check(samples[0] == samples[1] and len(samples[0]) > 30,
              f"gpt2 tiles samples: untiled {samples[0]!r}, tiled {samples[1]!r}")


TESTS = [test_gpt2_stages_bitwise_memory_comm, test_gpt2_vocab_tiles, test_gpt2_124m_checkpoint, test_gpt2_bad_files,
         test_prepare_train_sample, test_validation_reads_each_window_once,
         test_shuffle_permutes_windows, test_prepare_many_files, test_bpe_sample_ids,
         test_sample_zeroc_outputs, test_gpt2_shards]

if __name__ == "__main__":
    H_.main(TESTS, sys.argv[3:])
