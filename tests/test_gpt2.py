#!/usr/bin/env python3
"""test_gpt2.py — end-to-end GPT-2 through `zeroc prepare`, `zeroc train --model gpt2` and
`zeroc sample` on 1–4 ranks (python3 stdlib only; prints "N passed, N failed").

Usage: test_gpt2.py ZEROC_BINARY MPIRUN_SH [test-name ...]

Expected values are computed here from first principles: the ZeRO paper's formulas (docs/ARCHITECTURE.md) over the unit
sizes GPT-2 registers, SHA-256 of weights laid out by hand from an llm.c file, byte counts."""
import hashlib
import os
import struct
import sys

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
    """--val-batches is cut to the windows --val-data holds (said once), so a validation never
    wraps onto the file's start: on a file of exactly one window of 2 × 16 + 1 tokens, 8
    batches give the loss of 1 (they gave the mean of that window and 7 wrapped, stitched ones);
    a file with fewer windows than ranks is refused."""
    import struct
    _, val = prepared()
    raw = open(val, "rb").read()
    one = H_.path("val-one-window.bin")
    header = bytearray(raw[:1024])
    struct.pack_into("<i", header, 8, 33)
    open(one, "wb").write(bytes(header) + raw[1024:1024 + 66])
    losses = {}
    for vb in (1, 8):
        rep = train(1, f"val-once-{vb}", *TINY, "--val-data", one, "--val-every", 1,
                    "--val-batches", vb, steps=2)
        losses[vb] = rep["val_loss"]
    check(losses[1] == losses[8], f"8 batches over one window: {losses}")
    data, _ = prepared()
    p = H_.run(1, "train", "--model", "gpt2", "--data", data, *TINY, "--steps", 1,
               "--val-data", one, "--val-every", 1)
    check("holds 1 windows of 2 × 16 + 1 tokens: 1 a rank, not the 8 of --val-batches" in p.stdout,
          f"the cut is not said: {p.stdout[-300:]!r}")
    p = H_.run(2, "train", "--model", "gpt2", "--data", data, *TINY, "--steps", 1,
               "--val-data", one, "--val-every", 1, ok=False)
    check(p.returncode == 1 and "fewer than the 2 ranks" in p.stderr, f"2 ranks: {p.stderr!r}")


TESTS = [test_gpt2_stages_bitwise_memory_comm, test_gpt2_124m_checkpoint, test_gpt2_bad_files,
         test_prepare_train_sample, test_validation_reads_each_window_once]

if __name__ == "__main__":
    H_.main(TESTS, sys.argv[3:])
