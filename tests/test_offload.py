#!/usr/bin/env python3
"""test_offload.py — offload to NVMe (ZeRO-Infinity) end to end (python3 stdlib only):
offloaded training is bitwise-equal to training in RAM (optimizer offload at stages 1–3,
parameter offload at stage 3, fp32 and bf16, MLP and GPT-2, N = 1 and 2, both I/O engines,
across save and resume); the RAM the states need stops growing with the model; the estimator
equals what a run holds on disk; bad paths, I/O errors and a truncated swap file end the run
with a clear error; nothing is left on disk.

Usage: test_offload.py ZEROC_BINARY MPIRUN_SH [test-name ...]   (prints "N passed, N failed")

Expected byte counts are computed here from the unit sizes the models register and the layout
the offload documents (every swap region a whole number of 4 KiB blocks), never from zeroc's own
earlier output. The swap directory lives beside the binary (the build tree: a real disk)."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

from harness import Harness

H_ = Harness(sys.argv[1], sys.argv[2])
check = H_.check
NVME = os.path.join(os.path.dirname(os.path.abspath(H_.zeroc)), f"offload-test-{os.getpid()}")
SIZE = {"fp32": 4, "bf16": 2}
# Runs that measure RSS: under AddressSanitizer, freed heap blocks wait in a 256 MB quarantine
# and would count as the model's; a 1 MB quarantine keeps the sanitizer's own memory small.
LEAN = {"ASAN_OPTIONS": os.environ["ASAN_OPTIONS"] + ":quarantine_size_mb=1"} \
    if "ASAN_OPTIONS" in os.environ else {}
TINY = ["--model", "gpt2", "--layers", 2, "--channels", 32, "--heads", 2, "--seq-len", 16,
        "--micro-batch", 2]


def region(b):
    return -(-b // 4096) * 4096


def shard(u, n):
    return -(-u // n)


def nvme_bytes(units, n, stage, dtype, opt, par, moments=2):
    """This rank's swap bytes: per unit on disk, the gradient shard (stage 3), the fp32 master
    (mixed), m and v in the optimizer file; the parameter shard in the parameter file."""
    P = G = SIZE[dtype]
    total = 0
    for u in units:
        S = shard(u, n)
        if opt:
            total += (region(S * G) if stage == 3 else 0) + (region(S * 4) if P == 2 else 0)
            total += moments * region(S * 4)
        if par:
            total += region(S * P)
    return total


def config(name, stage=None, opt=False, par=False, engine="auto", sub_group=2048, buffers=3,
           prefetch=None, par_buffers=2, fold=None, **extra):
    zo = {"sub_group_size": sub_group}
    if stage is not None:
        zo["stage"] = stage
    if prefetch is not None:
        zo["stage3_prefetch_bucket_size"] = prefetch
    if opt:
        zo["offload_optimizer"] = {"device": "nvme", "nvme_path": NVME, "buffer_count": buffers}
        if fold is not None:
            zo["offload_optimizer"]["fold_update"] = fold
    if par:
        zo["offload_param"] = {"device": "nvme", "nvme_path": NVME, "max_in_cpu": 0,
                               "buffer_count": par_buffers, "buffer_size": 100000}
    cfg = {"zero_optimization": zo, "aio": {"engine": engine}, **extra}
    path = H_.path(name + ".cfg.json")
    with open(path, "w") as f:
        json.dump(cfg, f)
    return path


def train(n, name, *args, ok=True, env=None, timeout=300):
    rep = H_.path(name + ".json")
    cmd = [H_.mpirun, str(n), H_.zeroc, "train", *map(str, args), "--report", rep]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                       env={**os.environ, **(env or {})})
    if ok and p.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return (H_.report(name + ".json") if ok else None), p


def swap_files():
    return [f for f in os.listdir(NVME) if f.endswith(".swap")] if os.path.isdir(NVME) else []


def mlp_units(h, layers):
    return [h * h + h] * layers


def offloaded_runs(prefix, args, cases):
    """The offload matrix of a model's flags `args`: N = 1 and 2 (2 under the sanitizers), fp32
    and bf16, each (stage, optimizer offloaded, parameters offloaded) of `cases`, io_uring and the
    thread pool in turn; each run's weights and losses are checked equal to the same stage's run
    in RAM bit for bit, and it is yielded with that run's report for further checks:
    (n, dtype, stage, opt, par, engine, tag, report, process, in-RAM report)."""
    k = 0
    for n in H_.trim((1, 2), (2,)):
        for dtype in ("fp32", "bf16"):
            base = {s: train(n, f"{prefix}-ram-{n}-{dtype}-{s}", *args, "--stage", s, "--dtype",
                             dtype)[0] for s in sorted({c[0] for c in cases})}
            for stage, opt, par in cases:
                engine = ("io_uring", "threads")[k % 2]
                k += 1
                tag = f"{prefix}-{n}-{dtype}-s{stage}-o{opt}p{par}-{engine}"
                rep, p = train(n, tag, *args, "--stage", stage, "--dtype", dtype, "--config",
                               config(tag, opt=opt, par=par, engine=engine))
                check(rep["weights_sha256"] == base[stage]["weights_sha256"],
                      f"{tag}: weights differ from the in-RAM run")
                check(rep["loss"] == base[stage]["loss"], f"{tag}: losses differ")
                yield n, dtype, stage, opt, par, engine, tag, rep, p, base[stage]


def test_mlp_bitwise():
    """MLP, N = 1 and 2, fp32 and bf16: optimizer offload at stages 1, 2, 3, parameter offload
    and both at stage 3, two sub-groups per unit and 3 slots, io_uring and the thread pool in
    turn: the final weights equal the in-RAM run's bit for bit; RAM states are what is not on
    disk; the swap bytes are the documented layout's."""
    h, layers = 64, 3
    units = mlp_units(h, layers)
    args = ["--hidden", h, "--layers", layers, "--micro-batch", 4, "--steps", 4]
    for n, dtype, stage, opt, par, engine, tag, rep, p, b in offloaded_runs(
            "mlp", args, ((1, 1, 0), (2, 1, 0), (3, 1, 0), (3, 0, 1), (3, 1, 1))):
        P = SIZE[dtype]
        check(f"offload: {engine} I/O" in p.stdout, f"{tag}: engine not reported")
        r0, b0 = rep["memory"]["ranks"][0], b["memory"]["ranks"][0]
        want_nvme = nvme_bytes(units, n, stage, dtype, opt, par)
        check(r0["nvme"] == want_nvme, f"{tag}: nvme {r0['nvme']} != {want_nvme}")
        S = sum(shard(u, n) for u in units)
        want = (0 if par else b0["params"], 0 if opt and stage == 3 else b0["grads"],
                0 if opt else b0["optimizer"])
        got = (r0["params"], r0["grads"], r0["optimizer"])
        check(got == want, f"{tag}: RAM states {got} != {want} (S = {S}, P = {P})")
        check(r0["offload_peak"] > 0, f"{tag}: no offload buffers counted")
        check(swap_files() == [], f"{tag}: swap files left: {swap_files()}")


def q8_record(k):
    """AdamW8bit on disk: one moment's record for a sub-group of k elements — k codes padded to
    whole 256-element blocks, then a 4-byte scale per block (260 bytes a block), in 4 KiB."""
    return region(-(-k // 256) * 260)


def pieces(S, sg):
    return [min(sg, S - o) for o in range(0, S, sg)]


def test_adamw8bit():
    """optimizer.type AdamW8bit with offload_optimizer nvme: MLP, N = 1 and 2, fp32 and bf16,
    stages 1–3 (and stage 3 with the parameters on disk too), two and more sub-groups per unit:
    the weights and losses equal AdamW8bit's in RAM bit for bit; the swap bytes are the records'
    (q8_record per sub-group and moment); RAM holds no moment; and per step the update reads and
    writes, per moment, the records instead of 4 bytes an element — the exact difference."""
    h, layers = 64, 3
    units = mlp_units(h, layers)
    args = ["--hidden", h, "--layers", layers, "--micro-batch", 4, "--steps", 3,
            "--optimizer", "AdamW8bit"]
    for n, dtype, stage, opt, par, engine, tag, rep, p, b in offloaded_runs(
            "a8", args, H_.trim(((1, 1, 0), (2, 1, 0), (3, 1, 0), (3, 1, 1)), ((3, 1, 1),))):
        P = SIZE[dtype]
        want = 0
        for u in units:
            S = shard(u, n)
            want += (region(S * P) if stage == 3 else 0) + \
                (region(S * 4) if P == 2 else 0) + \
                2 * sum(q8_record(x) for x in pieces(S, 2048)) + \
                (region(S * P) if par else 0)
        r0 = rep["memory"]["ranks"][0]
        check(r0["nvme"] == want, f"{tag}: nvme {r0['nvme']} != {want}")
        check(r0["optimizer"] == 0, f"{tag}: {r0['optimizer']} optimizer bytes in RAM")
        check(swap_files() == [], f"{tag}: swap files left: {swap_files()}")
    # the update's disk bytes per step, AdamW vs AdamW8bit (N = 2, bf16, stage 3): only the
    # moments differ — per sub-group of k elements and per moment region(4k) vs q8_record(k).
    # Unfolded, so that each step's figures are its own update's (folded, a step's update runs
    # in the next step's forward, and the last one only when something reads the weights)
    n = 2
    for sg in H_.trim((2048, 262144), (2048,)):  # sanitizers: the many-sub-group case
        reps = {}
        for opt in ("AdamW", "AdamW8bit"):
            tag = f"a8-bytes-{opt}-{sg}"
            reps[opt], _ = train(n, tag, *args[:-1], opt, "--stage", 3, "--dtype", "bf16",
                                 "--config", config(tag, opt=True, sub_group=sg, fold=False))
        saved = 2 * sum(region(4 * x) - q8_record(x) for u in units
                        for x in pieces(shard(u, n), sg))
        a, b = reps["AdamW"]["offload"], reps["AdamW8bit"]["offload"]
        for key in ("update_read_bytes", "update_written_bytes"):
            for step, (x, y) in enumerate(zip(a[key], b[key])):
                check(x - y == saved, f"sub_group {sg} step {step}: {key} AdamW {x} - "
                      f"AdamW8bit {y} = {x - y}, want {saved}")
        # the read itself: per sub-group the fp32 master, the bf16 gradients and two records
        want = sum(region(4 * x) + region(2 * x) + 2 * q8_record(x) for u in units
                   for x in pieces(shard(u, n), sg))
        check(all(y == want for y in b["update_read_bytes"]),
              f"sub_group {sg}: AdamW8bit update reads {b['update_read_bytes']}, want {want}")
    # checkpoints read and write the records: saved at step 2 and resumed, with the moments on
    # disk both times or on disk only in the resumed run, equals the uninterrupted run
    a4 = ["--hidden", h, "--layers", layers, "--micro-batch", 4, "--optimizer", "AdamW8bit",
          "--dtype", "bf16"]
    for stage, par in ((1, 0), (3, 1)):
        tag = f"a8-ck-{stage}"
        cfg = config(tag, opt=True, par=par)
        full, _ = train(2, tag + "-full", *a4, "--stage", stage, "--steps", 4, "--config", cfg)
        for saved_on_disk in (True, False):
            d = H_.path(f"{tag}-{saved_on_disk}")
            train(2, tag + "-half", *a4, "--stage", stage, "--steps", 2, "--save-dir", d,
                  *(["--config", cfg] if saved_on_disk else []))
            res, _ = train(2, tag + "-res", *a4, "--stage", stage, "--steps", 4, "--resume", d,
                           "--config", cfg)
            check(res["weights_sha256"] == full["weights_sha256"] and
                  res["loss"] == full["loss"][2:],
                  f"{tag}: resumed (saved on disk: {saved_on_disk}) differs from uninterrupted")
    # the estimate: RAM states, disk bytes and the offload buffers' bound equal the run's
    for stage in (1, 2, 3):
        par = stage == 3
        est = {r["stage"]: r for r in H_.estimate(
            "--model", "mlp", "--hidden", h, "--layers", layers, "--micro-batch", 4,
            "--ranks", 2, "--dtype", "bf16", "--optimizer", "AdamW8bit",
            "--offload-optimizer", "nvme",
            *(["--offload-param", "nvme", "--max-in-cpu", 0] if par else []),
            "--sub-group-size", 2048)["rows"]}
        tag = f"a8-est-{stage}"
        rep, _ = train(2, tag, *args, "--stage", stage, "--dtype", "bf16", "--config",
                       config(tag, opt=True, par=par))
        r0, e = rep["memory"]["ranks"][0], est[stage]
        got = (r0["params"], r0["grads"], r0["optimizer"], r0["nvme"])
        want = (e["params"], e["grads"], e["optimizer"], e["nvme"])
        check(got == want, f"{tag}: measured {got} != estimate {want}")
        check(r0["offload_peak"] <= e["offload_buffers_bound"],
              f"{tag}: offload peak {r0['offload_peak']} > bound {e['offload_buffers_bound']}")


def compact_matrix(base, ns, cases, args, units):
    """compact_master with optimizer `base` (AdamW8bit's moments in 8-bit records, AdamW's in
    fp32): on each of `ns` ranks, stages 0 and the cases' in RAM and every case of `cases`
    (stage, optimizer on disk, parameters on disk, fold) end on the same weights and losses bit
    for bit, the rank's disk bytes equal the formula (and the estimate's, stage 3 with both
    offloads); against `base` with an fp32 master, 2 bytes per optimizer element fewer in RAM and
    losses within 1e-5; unfolded with both offloads on 2 ranks, the update reads as many bytes and
    writes a 4-byte less a 2-byte region fewer per sub-group."""
    q8 = base == "AdamW8bit"
    fp32m = {"type": base, "params": {"lr": 1e-3}}
    compact = {"type": base, "params": {"lr": 1e-3, "compact_master": True}}
    for n in ns:
        ram = {}
        for stage in sorted({0} | {c[0] for c in cases}):
            tag = f"cm-{base}-ram-{n}-{stage}"
            ram[stage], _ = train(n, tag, *args, "--steps", 3, "--stage", stage,
                                  "--config", config(tag, optimizer=compact))
            check((ram[stage]["weights_sha256"], ram[stage]["loss"]) ==
                  (ram[0]["weights_sha256"], ram[0]["loss"]), f"{tag}: differs from stage 0")
        tag = f"cm-{base}-fp32-master-{n}"
        fp32, _ = train(n, tag, *args, "--steps", 3, "--stage", 3,
                        "--config", config(tag, optimizer=fp32m))
        # a tie moves a weight by one bf16 ulp; the losses agree to 1e-5 relative (measured
        # 6e-9 at step 1). The first ones differ: initial values on ties round away from zero
        # into the weights the forward reads
        check(fp32["loss"][0] != ram[3]["loss"][0] and
              all(abs(a - b) <= 1e-5 * abs(b) for a, b in zip(ram[3]["loss"], fp32["loss"])),
              f"{tag}: losses {ram[3]['loss']} against the fp32 master's {fp32['loss']}")
        saved = sum(2 * shard(u, n) for u in units)
        got = fp32["memory"]["ranks"][0]["optimizer"] - ram[3]["memory"]["ranks"][0]["optimizer"]
        check(got == saved, f"{tag}: {got} optimizer bytes fewer in RAM, want {saved}")
        for stage, opt, par, fold in cases:
            tag = f"cm-{base}-{n}-s{stage}-o{opt}p{par}-f{fold}"
            cfg = config(tag, opt=opt, par=par, fold=fold, optimizer=compact)
            rep, _ = train(n, tag, *args, "--steps", 3, "--stage", stage, "--config", cfg)
            check((rep["weights_sha256"], rep["loss"]) ==
                  (ram[stage]["weights_sha256"], ram[stage]["loss"]),
                  f"{tag}: differs from the run in RAM")
            want = 0
            for u in units:
                S = shard(u, n)
                # stage 3's gradient shard, the remainders, the two moments (8-bit records or
                # fp32 regions)
                moments = (2 * sum(q8_record(x) for x in pieces(S, 2048)) if q8
                           else 2 * region(S * 4))
                want += ((region(S * 2) if stage == 3 else 0) + region(S * 2) + moments
                         if opt else 0) + (region(S * 2) if par else 0)
            r0 = rep["memory"]["ranks"][0]
            check(r0["nvme"] == want, f"{tag}: nvme {r0['nvme']} != {want}")
            if stage == 3 and opt and par and fold is None:
                est = {r["stage"]: r for r in H_.estimate(
                    "--model", "mlp", *args, "--ranks", n, "--config", cfg)["rows"]}[3]
                got = (r0["params"], r0["grads"], r0["optimizer"], r0["nvme"])
                want = (est["params"], est["grads"], est["optimizer"], est["nvme"])
                check(got == want, f"{tag}: measured {got} != estimate {want}")
    # the update's bytes, unfolded, both offloads, 2 ranks: compact against the fp32 master
    reps = {}
    for name, o in (("fp32", fp32m), ("compact", compact)):
        tag = f"cm-{base}-bytes-{name}"
        reps[name], _ = train(2, tag, *args, "--steps", 3, "--stage", 3, "--config",
                              config(tag, opt=True, par=True, fold=False, optimizer=o))
    a, b = reps["fp32"]["offload"], reps["compact"]["offload"]
    xs = [x for u in units for x in pieces(shard(u, 2), 2048)]
    fewer = {"update_read_bytes": sum(region(4 * x) - 2 * region(2 * x) for x in xs),
             "update_written_bytes": sum(region(4 * x) - region(2 * x) for x in xs)}
    for key, want in fewer.items():
        got = [x - y for x, y in zip(a[key], b[key])]
        check(got and all(d == want for d in got), f"{base} {key}: fp32 master - compact = "
              f"{got}, want {want} a step")


def test_compact_master():
    """optimizer.params.compact_master (the fp32 master kept as the bf16 weights plus 16-bit
    remainders) with AdamW8bit and with AdamW, MLP wide enough that masters fall on exact bf16
    ties (compact_matrix: stages 0–3 in RAM and the offload cases on the same bits, 2 bytes per
    optimizer element fewer in RAM or on disk, as the estimate says, the update's bytes); a
    checkpoint saved in RAM resumes with both offloads to the uninterrupted run's bits; a LoRA
    run's frozen base stays rounded to nearest even (a checkpoint saved without the key resumes
    with it). Against the fp32 master it differs (ties round away from zero, not to even), by far
    less than a step moves the loss. Refused with SGD or without bf16, naming the key."""
    h, layers = 256, 3
    units = mlp_units(h, layers)
    compact = {"type": "AdamW8bit", "params": {"lr": 1e-3, "compact_master": True}}
    args = ["--hidden", h, "--layers", layers, "--micro-batch", 4, "--dtype", "bf16"]
    # sanitizers: stage 1 and stage 3 with both offloads, folded and not
    compact_matrix("AdamW8bit", H_.trim((1, 2), (2,)),
                   H_.trim(((1, 1, 0, None), (2, 1, 0, None), (3, 1, 0, None), (3, 0, 1, None),
                            (3, 1, 1, None), (3, 1, 1, False)),
                           ((1, 1, 0, None), (3, 1, 1, None), (3, 1, 1, False))), args, units)
    # AdamW: the same code around another kernel (zc_adam_update_split)
    compact_matrix("AdamW", (2,), H_.trim(((3, 1, 1, None), (3, 1, 1, False)),
                                          ((3, 1, 1, None),)), args, units)
    # a checkpoint saved in RAM resumes with both offloads
    full, _ = train(2, "cm-ck-full", *args, "--steps", 4, "--stage", 3,
                    "--config", config("cm-ck-full", optimizer=compact))
    d = H_.path("cm-ck")
    train(2, "cm-ck-half", *args, "--steps", 2, "--stage", 3, "--save-dir", d,
          "--config", config("cm-ck-half", optimizer=compact))
    res, _ = train(2, "cm-ck-res", *args, "--steps", 4, "--stage", 3, "--resume", d,
                   "--config", config("cm-ck-res", opt=True, par=True, optimizer=compact))
    check((res["weights_sha256"], res["loss"]) == (full["weights_sha256"], full["loss"][2:]),
          "compact master: resumed with both offloads differs from the uninterrupted run")
    # AdamW's, with clipping (the update folded into the next forward, which takes the shards it
    # wrote): saved in RAM, resumed with both offloads, the uninterrupted run's bits
    adamw = {"type": "AdamW", "params": {"lr": 1e-3, "compact_master": True}}
    clip = [*args, "--clip", 1.0, "--stage", 3]
    full, _ = train(2, "cm-aw-full", *clip, "--steps", 4,
                    "--config", config("cm-aw-full", optimizer=adamw))
    d = H_.path("cm-aw-ck")
    train(2, "cm-aw-half", *clip, "--steps", 2, "--save-dir", d,
          "--config", config("cm-aw-half", optimizer=adamw))
    res, _ = train(2, "cm-aw-res", *clip, "--steps", 4, "--resume", d,
                   "--config", config("cm-aw-res", opt=True, par=True, optimizer=adamw))
    check((res["weights_sha256"], res["loss"]) == (full["weights_sha256"], full["loss"][2:]) and
          res["offload"]["shards_from_update"][-1] == layers,
          f"AdamW compact master, clipped: resumed with both offloads differs from the "
          f"uninterrupted run, or no gather took its shard from the update "
          f"({res['offload']['shards_from_update']})")
    # the estimate refuses what train refuses: the key with the optimizer switched by a flag
    p = subprocess.run([H_.zeroc, "estimate", "--model", "mlp", *map(str, args), "--optimizer",
                        "SGD", "--config", config("cm-est", optimizer=compact)],
                       capture_output=True, text=True, timeout=60)
    check(p.returncode != 0 and "optimizer.params.compact_master" in p.stderr,
          f"estimate with compact_master and SGD: rc {p.returncode}, {p.stderr[-300:]}")
    # a LoRA run's frozen base (no master) keeps nearest-even weights, so its digest does not
    # depend on the key: saved without it, a resume with it is not refused as another base
    # (256 channels: a base of 1.6 M values, about 24 of them on ties)
    lora = ["--model", "gpt2", "--layers", 2, "--channels", 256, "--heads", 2, "--seq-len", 16,
            "--micro-batch", 2, "--data", H_.text_tokens()[0], "--lora-r", 4, "--dtype", "bf16",
            "--optimizer", "AdamW8bit", "--stage", 3]
    d = H_.path("cm-lora")
    train(2, "cm-lora-half", *lora, "--steps", 2, "--save-dir", d)
    train(2, "cm-lora-res", *lora, "--steps", 3, "--resume", d,
          "--config", config("cm-lora-res", optimizer=compact))
    # refused without an Adam in bf16, naming the key
    for extra, opt in ((["--dtype", "fp32"], compact),
                       ([], {"type": "SGD", "params": {"compact_master": True}})):
        _, p = train(1, "cm-bad", "--hidden", 16, "--layers", 1, *args[4:6], *extra,
                     "--config", config("cm-bad", optimizer=opt), ok=False)
        check(p.returncode != 0 and "optimizer.params.compact_master" in p.stderr,
              f"compact_master {extra} {opt['type']}: rc {p.returncode}, {p.stderr[-300:]}")


def test_fp16_overflow_with_offload():
    """fp16 with a loss scale that overflows at first (2^40): the skipped steps and the scale's
    descent are the same with both offloads as in RAM, and so are the final weights."""
    args = ["--hidden", 64, "--layers", 3, "--micro-batch", 4, "--steps", 6, "--stage", 3]
    fp16 = {"fp16": {"enabled": True, "initial_scale_power": 40, "hysteresis": 1}}
    base, _ = train(2, "fp16-ram", *args, "--config", config("fp16-ram", **fp16))
    rep, _ = train(2, "fp16-nvme", *args,
                   "--config", config("fp16-nvme", opt=True, par=True, **fp16))
    check(base["skipped_steps"] >= 1, f"no step was skipped: {base['skipped_steps']}")
    check((rep["skipped_steps"], rep["loss_scale"]) == (base["skipped_steps"], base["loss_scale"]),
          "offloaded fp16 skipped other steps or scaled otherwise than in RAM")
    check(rep["weights_sha256"] == base["weights_sha256"], "fp16 offloaded weights differ")


def test_partial_offload():
    """offload_optimizer.ratio 0.5 puts the optimizer state of the first units holding half of
    it on disk (stage 2, 4 equal units: the first 2), offload_param.max_in_cpu of one unit's
    shard keeps the first unit's parameters in RAM (stage 3): the disk and RAM bytes are those
    units', and the weights equal the in-RAM run's."""
    h, layers, n = 64, 4, 2
    units = mlp_units(h, layers)
    S = shard(units[0], n)
    args = ["--hidden", h, "--layers", layers, "--micro-batch", 4, "--steps", 3, "--dtype", "bf16"]
    for stage, extra, disk_units, keys in ((2, {"ratio": 0.5}, 2, "optimizer"),
                                            (3, {"max_in_cpu": S}, 3, "params")):
        tag = f"partial-{stage}"
        base, _ = train(n, tag + "-ram", *args, "--stage", stage)
        cfg = config(tag, opt=stage == 2, par=stage == 3)
        with open(cfg) as f:
            c = json.load(f)
        section = "offload_optimizer" if stage == 2 else "offload_param"
        c["zero_optimization"][section].update(extra)
        with open(cfg, "w") as f:
            json.dump(c, f)
        rep, _ = train(n, tag, *args, "--stage", stage, "--config", cfg)
        r0, b0 = rep["memory"]["ranks"][0], base["memory"]["ranks"][0]
        check(rep["weights_sha256"] == base["weights_sha256"], f"{tag}: weights differ")
        if stage == 2:  # fp32 master + m + v of 2 units on disk, 12 bytes each in RAM for 2
            want_disk = disk_units * 3 * region(S * 4)
            want_ram = (b0["params"], b0["grads"], b0["optimizer"] // 2)
        else:           # the 16-bit shards of units 2–4 on disk, unit 1's in RAM
            want_disk = disk_units * region(S * 2)
            want_ram = (b0["params"] // 4, b0["grads"], b0["optimizer"])
        check(r0["nvme"] == want_disk, f"{tag}: nvme {r0['nvme']} != {want_disk}")
        got = (r0["params"], r0["grads"], r0["optimizer"])
        check(got == want_ram, f"{tag}: RAM states {got} != {want_ram}")


def test_gpt2_bitwise():
    """GPT-2 (tiny) with gradient accumulation 2, clipping and activation checkpointing: stage 3
    with both offloads (N = 1 and 2, fp32 and bf16) and stage 2 with optimizer offload equal
    the in-RAM runs bit for bit."""
    data = H_.text_tokens()[0]
    args = [*TINY, "--data", data, "--steps", 4, "--grad-accum", 2, "--clip", 0.5,
            "--activation-checkpointing"]
    for n, dtype, stage, opt, par in ((2, "bf16", 3, 1, 1), (2, "fp32", 3, 1, 1),
                                      (1, "bf16", 3, 1, 1), (2, "bf16", 2, 1, 0)):
        tag = f"gpt2-{n}-{dtype}-s{stage}"
        base, _ = train(n, tag + "-ram", *args, "--stage", stage, "--dtype", dtype)
        cfg = config(tag, opt=opt, par=par, engine="io_uring" if n == 2 else "threads")
        rep, _ = train(n, tag + "-nvme", *args, "--stage", stage, "--dtype", dtype, "--config",
                       cfg)
        check(rep["weights_sha256"] == base["weights_sha256"], f"{tag}: weights differ")
        check(rep["loss"] == base["loss"], f"{tag}: losses differ")
        check(rep["memory"]["ranks"][0]["nvme"] > 0, f"{tag}: nothing on disk")


def test_resume_with_offload():
    """8 steps in RAM equal 4 offloaded steps + a save + 4 offloaded steps after resuming, bit
    for bit; the offloaded run's checkpoint shards are byte-identical to the in-RAM run's; an
    in-RAM checkpoint resumes into an offloaded run on another rank count exactly as it does in
    RAM."""
    args = ["--hidden", 64, "--layers", 3, "--micro-batch", 4, "--dtype", "bf16", "--stage", 3]
    full, _ = train(2, "res-full", *args, "--steps", 8)
    cfg = config("res", opt=True, par=True)
    d_ram, d_nvme = H_.path("ck-ram"), H_.path("ck-nvme")
    train(2, "res-a-ram", *args, "--steps", 4, "--save-dir", d_ram, "--save-every", 4)
    train(2, "res-a-nvme", *args, "--steps", 4, "--save-dir", d_nvme, "--save-every", 4,
          "--config", cfg)
    for r in range(2):
        name = f"step-000004/rank-{r:05d}.bin"
        a = open(os.path.join(d_ram, name), "rb").read()
        b = open(os.path.join(d_nvme, name), "rb").read()
        check(a == b, f"{name}: offloaded shard differs from the in-RAM one")
    b, _ = train(2, "res-b-nvme", *args, "--steps", 8, "--resume", d_nvme, "--config", cfg)
    check(b["weights_sha256"] == full["weights_sha256"], "resumed offloaded run differs")
    check(b["loss"] == full["loss"][4:], "resumed offloaded losses differ")
    one_ram, _ = train(1, "res-1-ram", *args, "--steps", 6, "--resume", d_ram)
    one_nvme, _ = train(1, "res-1-nvme", *args, "--steps", 6, "--resume", d_ram, "--config",
                        config("res1", opt=True, par=True, engine="threads"))
    check(one_nvme["weights_sha256"] == one_ram["weights_sha256"],
          "resharded resume into an offloaded run differs from the same in RAM")


def test_ram_flat_in_model_size():
    """Stage 3, both offloads, nothing kept in RAM (max_in_cpu 0), a prefetch of one unit, MLP
    of 2 and of 8 layers of 1024 (4x the parameters, the same unit size): RAM model states are 0,
    the offload and working peaks stay within the estimator's bounds — flat once the read-ahead
    is full (8 and 32 layers alike; 2 layers hold fewer shards than it reads) — while the disk
    holds 4x; peak RSS grows by less than a quarter of what the same two
    models add in RAM (a margin for allocator and MPI noise, which is a few MiB)."""
    h = 1024
    unit = h * h + h
    rss, bounds = {}, {}
    for mode in ("ram", "nvme"):
        for layers in (2, 8):
            tag = f"flat-{mode}-{layers}"
            extra = ["--config", config(tag, opt=True, par=True, sub_group=65536,
                                        prefetch=unit)] if mode == "nvme" else []
            rep, _ = train(2, tag, "--hidden", h, "--layers", layers, "--micro-batch", 4,
                           "--steps", 3, "--stage", 3, "--dtype", "bf16", *extra, env=LEAN)
            r0 = rep["memory"]["ranks"][0]
            rss[mode, layers] = max(r["peak_rss"] for r in rep["memory"]["ranks"])
            if mode == "ram":
                continue
            check((r0["params"], r0["grads"], r0["optimizer"]) == (0, 0, 0),
                  f"{tag}: RAM states {(r0['params'], r0['grads'], r0['optimizer'])}")
            want = nvme_bytes(mlp_units(h, layers), 2, 3, "bf16", True, True)
            check(r0["nvme"] == want, f"{tag}: nvme {r0['nvme']} != {want}")
            e = {r["stage"]: r for r in H_.estimate(
                "--model", "mlp", "--hidden", h, "--layers", layers, "--ranks", 2,
                "--micro-batch", 4, "--dtype", "bf16", "--offload-optimizer", "nvme",
                "--offload-param", "nvme", "--max-in-cpu", 0, "--sub-group-size", 65536,
                "--prefetch-bucket-size", unit)["rows"]}[3]
            bounds[layers] = (e["offload_buffers_bound"], e["working_bound"])
            check(r0["offload_peak"] <= e["offload_buffers_bound"],
                  f"{tag}: offload peak {r0['offload_peak']} > bound {e['offload_buffers_bound']}")
            check(r0["working_peak"] <= e["working_bound"],
                  f"{tag}: working peak {r0['working_peak']} > bound {e['working_bound']}")
            rss[tag] = r0["nvme"]
    # the read-ahead is bounded by its count, and by the shards on disk: 2 layers hold fewer
    # shards than the default 5 reads ahead, 8 layers fill it, and from there the bounds are flat
    e32 = {r["stage"]: r for r in H_.estimate(
        "--model", "mlp", "--hidden", h, "--layers", 32, "--ranks", 2, "--micro-batch", 4,
        "--dtype", "bf16", "--offload-optimizer", "nvme", "--offload-param", "nvme",
        "--max-in-cpu", 0, "--sub-group-size", 65536, "--prefetch-bucket-size", unit)["rows"]}[3]
    bounds[32] = (e32["offload_buffers_bound"], e32["working_bound"])
    check(bounds[2] <= bounds[8] == bounds[32], f"the RAM bounds grow with the model: {bounds}")
    check(rss["flat-nvme-8"] == 4 * rss["flat-nvme-2"], "disk bytes are not 4x")
    grow_ram = rss["ram", 8] - rss["ram", 2]
    grow_nvme = rss["nvme", 8] - rss["nvme", 2]
    check(grow_ram > 40 << 20, f"in RAM, 6 more layers added only {grow_ram} bytes of RSS")
    check(grow_nvme < grow_ram / 4,
          f"offloaded RSS grew {grow_nvme} bytes with the model (in RAM: {grow_ram})")


def test_estimate_matches():
    """`zeroc estimate` with the offload flags: RAM states and disk bytes per rank equal what a
    run holds (MLP at stages 1–3, GPT-2 tiny at stage 3, N = 2, bf16), and the offload buffers
    stay within the printed bound."""
    cases = [("mlp", ["--hidden", 64, "--layers", 3, "--micro-batch", 4], s) for s in (1, 2, 3)]
    cases.append(("gpt2", TINY, 3))
    for model, shape, stage in cases:
        est_shape = [a for a in shape if a != "gpt2" and a != "--model"]
        est_shape = ["--model", model, *est_shape] if model == "mlp" else \
            ["--model", "gpt2", "--layers", 2, "--channels", 32, "--heads", 2, "--seq-len", 16,
             "--micro-batch", 2, "--vocab", 256]
        par = stage == 3
        est = {r["stage"]: r for r in H_.estimate(
            *est_shape, "--ranks", 2, "--dtype", "bf16", "--offload-optimizer", "nvme",
            *(["--offload-param", "nvme", "--max-in-cpu", 0] if par else []),
            "--sub-group-size", 2048)["rows"]}
        tag = f"est-{model}-{stage}"
        data = ["--data", H_.text_tokens()[0]] if model == "gpt2" else []
        rep, _ = train(2, tag, *shape, *data, "--steps", 2, "--stage", stage, "--dtype", "bf16",
                       "--config", config(tag, opt=True, par=par))
        r0, e = rep["memory"]["ranks"][0], est[stage]
        got = (r0["params"], r0["grads"], r0["optimizer"], r0["nvme"])
        want = (e["params"], e["grads"], e["optimizer"], e["nvme"])
        check(got == want, f"{tag}: measured {got} != estimate {want}")
        check(r0["offload_peak"] <= e["offload_buffers_bound"],
              f"{tag}: offload peak {r0['offload_peak']} > bound {e['offload_buffers_bound']}")


def test_buffer_count_bounded():
    """offload_optimizer.buffer_count beyond the step's sub-groups allocates no slot that would
    never be used: buffer_count 200 and 10^9 hold the same RAM buffers (the ledger's peak) and
    train to the same weights (10^9 was refused as needing 572204 GiB, and 200 made 200 slots);
    offload_param.buffer_count 10^9 is bounded by the parameter file."""
    args = ["--hidden", 64, "--layers", 3, "--micro-batch", 4, "--steps", 2, "--stage", 2,
            "--dtype", "bf16"]
    a, _ = train(1, "bc-200", *args, "--config", config("bc-200", opt=True, buffers=200))
    b, _ = train(1, "bc-1e9", *args, "--config", config("bc-1e9", opt=True, buffers=10**9))
    pa, pb = a["memory"]["ranks"][0]["offload_peak"], b["memory"]["ranks"][0]["offload_peak"]
    check(pa == pb and 0 < pa < 64 << 20, f"offload buffers: {pa} (200) vs {pb} (10^9)")
    check(a["weights_sha256"] == b["weights_sha256"], "buffer_count changed the weights")
    # offload_param.buffer_count: reads ahead are of distinct units' shards, so the bound is at
    # most the parameter file (10^9 was refused as needing 3814 GiB for a 3 KiB model)
    args[args.index("--stage") + 1] = 3
    c, _ = train(1, "pbc-2", *args, "--config", config("pbc-2", opt=True, par=True))
    d, _ = train(1, "pbc-1e9", *args, "--config",
                 config("pbc-1e9", opt=True, par=True, par_buffers=10**9))
    pc, pd = c["memory"]["ranks"][0]["offload_peak"], d["memory"]["ranks"][0]["offload_peak"]
    check(c["weights_sha256"] == d["weights_sha256"], "param buffer_count changed the weights")
    bound = {r["stage"]: r for r in H_.estimate(
        "--model", "mlp", "--hidden", 64, "--layers", 3, "--micro-batch", 4, "--ranks", 1,
        "--dtype", "bf16", "--config", config("pbc-1e9", opt=True, par=True, par_buffers=10**9)
    )["rows"]}[3]["offload_buffers_bound"]
    check(pd <= bound < 64 << 20, f"param buffer_count 10^9: peak {pd} (2: {pc}), bound {bound}")


def test_io_buffers_reused():
    """Parameter-read and gradient-staging buffers are mapped in the first step and reused after
    (they were mapped afresh for every shard of every step: 6.7 GB of page faults per rank per
    step at 2.2 B parameters): with blocks of one size no step after the first maps one, pinned
    (kept locked) or not, on 1 and 2 ranks, while the offload peak stays within the plan's bound
    and the weights are those of the run in RAM."""
    args = ["--hidden", 128, "--layers", 4, "--micro-batch", 4, "--steps", 4, "--stage", 3,
            "--dtype", "bf16", "--grad-accum", 2]
    ram, _ = train(2, "io-ram", *args)
    for n, pin in ((1, False), (2, False), (2, True)):
        tag = f"io-{n}-{int(pin)}"
        path = config(tag, opt=True, par=True)
        with open(path) as f:
            cfg = json.load(f)
        for key in ("offload_optimizer", "offload_param"):
            cfg["zero_optimization"][key]["pin_memory"] = pin
        with open(path, "w") as f:
            json.dump(cfg, f)
        rep, _ = train(n, tag, *args, "--config", path)
        mapped = rep["offload"]["buffers_mapped"]
        check(mapped[0] > 0 and not any(mapped[1:]),
              f"{tag}: buffers mapped per step {mapped}: expected some in step 1, none after")
        bound = {r["stage"]: r for r in H_.estimate(
            "--model", "mlp", "--hidden", 128, "--layers", 4, "--micro-batch", 4, "--ranks", n,
            "--dtype", "bf16", "--config", path)["rows"]}[3]["offload_buffers_bound"]
        peak = rep["memory"]["ranks"][0]["offload_peak"]
        check(0 < peak <= bound, f"{tag}: offload peak {peak} > bound {bound}")
        if n == 2:
            check(rep["weights_sha256"] == ram["weights_sha256"],
                  f"{tag}: weights differ from the run in RAM")


def test_reads_in_place():
    """A stage-3 gather that finds no read of its shard ahead of it reads the shard from disk
    straight into its place in the gathered buffer when that place starts on a 4 KiB boundary
    and the shard is whole 4 KiB blocks (no buffer between, no copy): a 2048-wide MLP in fp32
    (2048 × 2049 parameters a unit: each rank's shard 4096 × 2049 bytes on 2 ranks) reads some
    shards so, on 1 and 2 ranks, with the update folded and not, under both I/O engines, and
    ends on the weights of the run in RAM bit for bit; a 64-wide one, whose shards are odd
    sizes, reads none so (the copy it keeps is the same bits)."""
    for h, n, fold, engine in ((2048, 1, True, "io_uring"), (2048, 2, True, "threads"),
                               (2048, 2, False, "io_uring"), (64, 2, False, "io_uring")):
        args = ["--hidden", h, "--layers", 2, "--micro-batch", 2, "--steps", 3, "--stage", 3]
        ram, _ = train(n, f"inplace-ram-{h}-{n}", *args)
        tag = f"inplace-{h}-{n}-{fold}-{engine}"
        rep, _ = train(n, tag, *args, "--config",
                       config(tag, opt=True, par=True, engine=engine, fold=fold, par_buffers=1,
                              sub_group=1 << 20))
        got = rep["offload"]["shards_read_in_place"]
        check(rep["weights_sha256"] == ram["weights_sha256"],
              f"{tag}: weights differ from the run in RAM")
        check(sum(got) > 0 if h == 2048 else sum(got) == 0,
              f"{tag}: shards read in place per step {got}")


def test_pin_memory_limit():
    """pin_memory's locked buffers are compared with RLIMIT_MEMLOCK before step 1 (for a process
    without CAP_IPC_LOCK, dropped here with setpriv): below the bound the run is refused, naming
    pin_memory, the limit and the `ulimit -l` that fits — it failed mid-step as "out of memory"
    — and at that ulimit it trains to the weights of the unpinned run."""
    args = ["--hidden", 256, "--layers", 3, "--micro-batch", 4, "--steps", 2, "--stage", 3,
            "--dtype", "bf16"]
    plain, _ = train(1, "pin-off", *args, "--config", config("pin-off", opt=True, par=True))
    with open(config("pin", opt=True, par=True)) as f:
        cfg = json.load(f)
    for key in ("offload_optimizer", "offload_param"):
        cfg["zero_optimization"][key]["pin_memory"] = True
    pinned = H_.path("pin.cfg.json")
    with open(pinned, "w") as f:
        json.dump(cfg, f)

    def run(kib):
        rep = H_.path(f"pin-{kib}.json")
        cmd = ["setpriv", "--bounding-set", "-ipc_lock", "bash", "-c",
               f'ulimit -l {kib} && exec "$@"', "zeroc", H_.zeroc, "train", *map(str, args),
               "--config", pinned, "--report", rep]
        return rep, subprocess.run(cmd, capture_output=True, text=True, timeout=120)

    _, p = run(64)
    m = re.search(r"RLIMIT_MEMLOCK allows 65536 bytes: raise it \(ulimit -l (\d+)", p.stderr)
    check(p.returncode == 1 and "pin_memory" in p.stderr and m and "step " not in p.stdout,
          f"ulimit -l 64: not refused before step 1: {p.returncode} {p.stderr[-600:]}")
    if m:
        rep, p = run(int(m.group(1)))
        check(p.returncode == 0, f"ulimit -l {m.group(1)} (the one suggested): {p.stderr[-600:]}")
        if p.returncode == 0:
            got = json.load(open(rep))["weights_sha256"]
            check(got == plain["weights_sha256"], "pinned buffers changed the weights")


def mount_tmpfs(path, opts):
    os.makedirs(path, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", path], check=True)


def test_bad_nvme_path():
    """A missing nvme_path, a regular file, a read-only file system, one too small for the
    swap files and a RAM file system (tmpfs, which takes O_DIRECT since Linux 6.6: the states
    would stay in RAM) are refused at start (before step 1) with the path and the reason, on
    every rank count; nothing is left behind — also when the configuration puts nothing there.
    nvme without a path, and parameter offload below stage 3, are
    refused by key."""
    args = ["--hidden", 256, "--layers", 4, "--micro-batch", 4, "--steps", 2, "--stage", 3]
    plain = H_.path("not-a-dir")
    open(plain, "w").close()
    small, ro, ram = H_.path("small-fs"), H_.path("ro-fs"), H_.path("ram-fs")
    mount_tmpfs(small, "size=256k")
    mount_tmpfs(ro, "ro,size=1m")
    mount_tmpfs(ram, "size=64m")
    try:
        for path, words in ((H_.path("missing"), ["missing", "does not exist"]),
                            (plain, ["not-a-dir", "not a directory"]),
                            (ro, ["ro-fs", "Read-only"]),
                            (small, ["small-fs", "needs", "free"]),
                            (ram, ["ram-fs", "tmpfs"])):
            for n in (1, 2):
                _, p = train(n, "bad", *args, "--offload-optimizer", "nvme", "--offload-param",
                             "nvme", "--nvme-path", path, ok=False)
                err = p.stderr
                check(p.returncode != 0, f"{path} N={n}: exit 0")
                check(all(w in err for w in words), f"{path} N={n}: message lacks {words}: {err}")
                check("step " not in p.stdout, f"{path} N={n}: training started")
        check(os.listdir(small) == [] and os.listdir(ram) == [],
              f"files left: {os.listdir(small)} {os.listdir(ram)}")
    finally:
        for mnt in (small, ro, ram):
            subprocess.run(["umount", mnt])
    # configured, but nothing goes there (max_in_cpu keeps this model in RAM): still checked
    _, p = train(1, "bad", *args, "--offload-param", "nvme", "--nvme-path", H_.path("missing"),
                 ok=False)
    check(p.returncode != 0 and "zero_optimization.offload_param.nvme_path '" in p.stderr
          and "does not exist" in p.stderr and "step " not in p.stdout,
          f"an unused nvme_path that does not exist: {p.returncode} {p.stderr[-300:]}")
    _, p = train(1, "bad", *args, "--offload-optimizer", "nvme", ok=False)
    check(p.returncode != 0 and "zero_optimization.offload_optimizer.nvme_path" in p.stderr,
          f"nvme without a path: {p.stderr}")
    _, p = train(1, "bad", *args[:-1], "2", "--offload-param", "nvme", "--nvme-path", NVME,
                 ok=False)
    check(p.returncode != 0 and "offload_param" in p.stderr and "stage" in p.stderr,
          f"parameter offload at stage 2: {p.stderr}")


def test_io_errors():
    """An injected I/O error on one rank's swap file (a read, then a write) ends the job with a
    non-zero exit and a message naming the swap file, the offset and the error — no hang of the
    other rank — and the checkpoint saved before still verifies; the disk space is returned."""
    args = ["--hidden", 64, "--layers", 3, "--micro-batch", 4, "--steps", 8, "--stage", 3,
            "--dtype", "bf16"]
    for fault in ("read:1@100", "write:0@90"):  # ~30 reads and writes a step: in step 4
        d = H_.path("ck-fault-" + fault.replace(":", "").replace("@", "-"))
        t0 = time.time()
        _, p = train(2, "fault", *args, "--config", config("fault", opt=True, par=True),
                     "--save-dir", d, "--save-every", 2, ok=False,
                     env={"ZEROC_FAULT_IO": fault}, timeout=120)
        check(p.returncode != 0, f"{fault}: exit 0")
        check(".swap" in p.stderr and "offset" in p.stderr and "Input/output error" in p.stderr,
              f"{fault}: message: {p.stderr[-600:]}")
        check(time.time() - t0 < 60, f"{fault}: took {time.time() - t0:.0f} s (a hang?)")
        v = subprocess.run([H_.zeroc, "ckpt", "verify", d], capture_output=True, text=True)
        check(v.returncode == 0, f"{fault}: the last checkpoint does not verify: {v.stdout}"
                                 f"{v.stderr}")
        check(swap_files() == [], f"{fault}: swap files left")


def zeroc_swap_fds():
    """(pid, fd) of every open swap file of a zeroc process (unlinked: '... (deleted)')."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if "zeroc" not in open(f"/proc/{pid}/comm").read():
                continue
            for fd in os.listdir(f"/proc/{pid}/fd"):
                t = os.readlink(f"/proc/{pid}/fd/{fd}")
                if ".swap" in t and NVME in t:
                    out.append((pid, fd, t))
        except OSError:
            pass
    return out


def interrupt_run(name, hidden, layers, at, act):
    """Starts a long offloaded training (stage 3, both offloads) on 2 ranks, calls act() once step
    `at` has printed, lets the job end, and returns (exit code, stderr, free bytes on the swap
    file system before the run, and a moment after it ended)."""
    free0 = shutil.disk_usage(NVME).free
    cmd = [H_.mpirun, "2", H_.zeroc, "train", "--hidden", hidden, "--layers", layers,
           "--micro-batch", 4, "--steps", 100000, "--stage", 3,
           "--config", config(name, opt=True, par=True)]
    p = subprocess.Popen(list(map(str, cmd)), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    try:
        for line in p.stdout:
            if line.startswith(f"step {at:5d}/"):
                break
        act(free0)
        _, err = p.communicate(timeout=120)
    except Exception:
        p.kill()
        raise
    time.sleep(1)
    return p.returncode, err, free0, shutil.disk_usage(NVME).free


def test_truncated_swap_file():
    """A swap file cut to nothing in the middle of a run (through /proc/PID/fd: its name is gone
    from the directory from the start) ends the run with an error naming the file; the swap
    files are unlinked while the run lives, and the disk space is back after it ends."""
    def truncate(_):
        fds = zeroc_swap_fds()
        check(len(fds) == 4, f"expected 4 open swap files (2 ranks x 2), found {fds}")
        check(swap_files() == [], f"swap files visible in the directory: {swap_files()}")
        check(all(t.endswith("(deleted)") for _, _, t in fds), f"not unlinked: {fds}")
        os.truncate(f"/proc/{fds[0][0]}/fd/{fds[0][1]}", 0)
    rc, err, free0, free1 = interrupt_run("trunc", 512, 6, 3, truncate)
    check(rc != 0, "a truncated swap file did not stop the run")
    check("truncated" in err or "end of file" in err, f"message: {err[-600:]}")
    check(abs(free1 - free0) < 64 << 20, f"disk space not returned: {free0} -> {free1}")


def test_killed_rank_frees_disk():
    """kill -9 of a rank: the job ends and the disk space of every swap file is back (the files
    were unlinked at creation, so nothing can be left or reused)."""
    def kill(free0):
        held = free0 - shutil.disk_usage(NVME).free
        check(held > 50 << 20, f"the swap files hold only {held} bytes")
        os.kill(int(zeroc_swap_fds()[0][0]), signal.SIGKILL)
    rc, _, free0, free1 = interrupt_run("kill", 1024, 8, 2, kill)
    check(rc != 0, "the job survived a killed rank")
    check(abs(free1 - free0) < 64 << 20, f"disk space not returned: {free0} -> {free1}")
    check(swap_files() == [], f"swap files left: {swap_files()}")


def test_trains_beyond_memory_cap():
    """The job (mpirun and both ranks) in a cgroup capped at 450 MB of RAM: an MLP of 16 layers
    of 2048 whose bf16 model states are 1.07 GB is refused in RAM at stage 3 before it
    allocates, naming the cgroup and the offload settings that fit — the least change first:
    the optimizer alone on disk, in smaller sub-groups through one slot, which trained there at
    168 MiB peak RSS per rank (test_memory_check_advice runs the settings it names) — and is
    killed with --no-memory-check, and trains with both offloads to the same weights, bit for
    bit, as the uncapped in-RAM run."""
    cap = 450 << 20
    args = ["--hidden", 2048, "--layers", 16, "--micro-batch", 4, "--steps", 3, "--stage", 3,
            "--dtype", "bf16"]
    states = 16 * 16 * (2048 * 2048 + 2048)
    check(states > 2 * cap, f"the model's states ({states}) do not exceed the cap twice")
    capped = os.path.join(os.path.dirname(os.path.abspath(__file__)), "memcap.sh")
    free, _ = train(2, "cap-free", *args)
    rep = H_.path("cap-ram.json")
    p = subprocess.run([capped, str(cap), H_.mpirun, "2", H_.zeroc, "train", *map(str, args),
                        "--report", rep], capture_output=True, text=True, timeout=300,
                       env={**os.environ, **LEAN})
    errs = [l for l in p.stderr.splitlines() if "zeroc: error" in l]
    check(p.returncode == 1 and len(errs) == 1 and "memory cgroup's limit" in errs[0] and
          "Settings that fit: --stage 3 --offload-optimizer nvme" in errs[0]
          and "step " not in p.stdout,
          f"in RAM, the capped job was not refused before allocating: {p.returncode} {errs}")
    p = subprocess.run([capped, str(cap), H_.mpirun, "2", H_.zeroc, "train", *map(str, args),
                        "--no-memory-check", "--report", rep], capture_output=True, text=True,
                       timeout=300, env={**os.environ, **LEAN})
    check(p.returncode != 0 and "the memory check" not in p.stderr,
          "in RAM with --no-memory-check, the capped job was not stopped")
    cfg = config("cap", opt=True, par=True, sub_group=262144, prefetch=2048 * 2048 + 2048)
    rep = H_.path("cap-nvme.json")
    p = subprocess.run([capped, str(cap), H_.mpirun, "2", H_.zeroc, "train", *map(str, args),
                        "--config", cfg, "--report", rep], capture_output=True, text=True,
                       timeout=300, env={**os.environ, **LEAN})
    check(p.returncode == 0, f"offloaded, the capped job failed: {p.stderr[-800:]}")
    if p.returncode == 0:
        got = H_.report("cap-nvme.json")
        check(got["weights_sha256"] == free["weights_sha256"],
              "the capped offloaded run's weights differ from the in-RAM run's")
        rss = sum(r["peak_rss"] for r in got["memory"]["ranks"])
        check(rss < cap, f"the ranks' peak RSS ({rss}) is not below the cap")


def test_memory_check_cgroups():
    """The memory check reads every cgroup above the process, and counts reclaimable file cache
    as free. A limit on a parent cgroup (a systemd slice, a Slurm job over its steps) refuses an
    in-RAM run that cannot fit under it, naming the parent's limit file; 300 MB of a file just
    read inside a 450 MB cgroup — clean cache the kernel reclaims before it kills anything — does
    not refuse an offloaded run that needs 0.18 GiB (it was refused: 450 − 300 MB in use)."""
    capped = os.path.join(os.path.dirname(os.path.abspath(__file__)), "memcap.sh")
    cap = 450 << 20
    args = ["--hidden", 2048, "--layers", 16, "--micro-batch", 4, "--steps", 2, "--stage", 3,
            "--dtype", "bf16"]
    p = subprocess.run([capped, "--parent", str(cap), H_.zeroc, "train", *map(str, args)],
                       capture_output=True, text=True, timeout=300, env={**os.environ, **LEAN})
    errs = [l for l in p.stderr.splitlines() if "zeroc: error" in l]
    check(p.returncode == 1 and len(errs) == 1 and "memory cgroup's limit" in errs[0]
          and re.search(r"zeroc-memcap-\d+/memory\.(max|limit_in_bytes)", errs[0])
          and "step " not in p.stdout,
          f"a parent cgroup's limit was not seen: {p.returncode} {errs}")
    big = H_.path("file-cache.bin")
    with open(big, "wb") as f:
        f.write(bytes(300 << 20))
        f.flush()
        os.fsync(f.fileno())
        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)  # read again: charged here
    cfg = config("cache", opt=True, par=True, sub_group=262144, prefetch=2048 * 2048 + 2048)
    try:
        p = subprocess.run([capped, str(cap), "bash", "-c", 'cat "$0" > /dev/null && exec "$@"',
                            big, H_.zeroc, "train", *map(str, args), "--config", cfg],
                           capture_output=True, text=True, timeout=300,
                           env={**os.environ, **LEAN})
    finally:
        os.remove(big)
    check(p.returncode == 0, f"refused or failed beside 300 MB of file cache: {p.stderr[-800:]}")


def advised(err):
    """The settings a refusal's advice names, each as (its flags, its zero_optimization keys, its
    GiB per rank): "--stage 3 ... --sub-group-size N with zero_optimization's "offload_param":
    {...} (0.33 GiB per rank)", joined by "; "."""
    m = re.search(r"Settings that fit: (.*)\. \(--no-memory-check", err)
    out = []
    for part in (m.group(1).split("; ") if m else []):
        s = re.fullmatch(r"(--stage [^(]*?)(?: with zero_optimization's (.*))? "
                         r"\(([0-9.]+) GiB per rank[^)]*\)", part)
        if s:
            out.append((s.group(1).split(), json.loads("{" + s.group(2) + "}") if s.group(2)
                        else {}, float(s.group(3))))
    return out


def test_memory_check_advice():
    """Issue 33: the memory check's advice names the offload knobs. An MLP of 16 × 2048 in bf16
    on one rank at stage 3 with both offloads and DeepSpeed's default offload knobs (max_in_cpu
    1e9 keeps every parameter in RAM, 5 shards of up to 1e8 elements read ahead, 4 slots of
    4194304-element sub-groups) needs an estimated 0.49 GiB; in a 400 MB memory cgroup it is
    refused, and the advice names settings of those knobs that fit, not "none" and not "add
    ranks" (which shrinks no working memory; it said both). Each setting named, given exactly as
    written, passes the check and trains a step in the same cgroup, below its cap. Needs root
    (tests/memcap.sh): skipped otherwise."""
    if os.geteuid() != 0:
        print("  skipped: needs root for a memory cgroup")
        return
    capped = os.path.join(os.path.dirname(os.path.abspath(__file__)), "memcap.sh")
    cap = 400 * 1000 * 1000
    args = ["--hidden", 2048, "--layers", 16, "--micro-batch", 4, "--steps", 1, "--dtype", "bf16"]
    nvme = {"device": "nvme", "nvme_path": NVME}

    def run(name, flags, keys):
        zo = {"stage": 3, "offload_optimizer": dict(nvme), "offload_param": dict(nvme)}
        for section, values in keys.items():
            zo[section].update(values)
        cfg = H_.path(name + ".cfg.json")
        with open(cfg, "w") as f:
            json.dump({"zero_optimization": zo}, f)
        return subprocess.run([capped, str(cap), H_.zeroc, "train", *map(str, args), "--config",
                               cfg, *flags, "--report", H_.path(name + ".json")],
                              capture_output=True, text=True, timeout=300,
                              env={**os.environ, **LEAN})

    p = run("advice-defaults", [], {})
    errs = [l for l in p.stderr.splitlines() if "zeroc: error" in l]
    settings = advised(errs[0]) if len(errs) == 1 else []
    check(p.returncode == 1 and len(errs) == 1 and "memory cgroup's limit" in errs[0]
          and "step " not in p.stdout,
          f"the default offload knobs were not refused: {p.returncode} {errs}")
    check(settings and "none of" not in errs[0] and "add ranks" not in errs[0]
          and "ranks, those added" not in errs[0],
          f"the advice names no setting, or says to add ranks: {errs}")
    for i, (flags, keys, gib) in enumerate(settings):
        check(keys or "--sub-group-size" in flags,
              f"setting {i + 1} changes no offload knob: {flags} {keys}")
        p = run(f"advice-{i}", flags, keys)
        check(p.returncode == 0 and "step     1/1" in p.stdout
              and "the memory check" not in p.stderr,
              f"setting {i + 1} ({' '.join(flags)} {keys}, {gib} GiB) did not train in the cgroup: "
              f"{p.returncode} {p.stderr[-800:]}")
        if p.returncode == 0:
            rss = H_.report(f"advice-{i}.json")["memory"]["ranks"][0]["peak_rss"]
            check(rss < cap, f"setting {i + 1}: peak RSS {rss} is not below the cap {cap}")


def test_auto_cache():
    """Issue 33: offload_param.max_in_cpu and offload_optimizer.ratio "auto" use the RAM a rank can
    spare as a cache of what is offloaded, sized at start and said. The 16 × 2048 MLP in bf16 at
    stage 3 with both offloads: with the host's memory it keeps everything in RAM; under a 1000 MiB
    memory cgroup (root) it keeps all its parameters and the optimizer state of some units in RAM
    and the rest on disk, stays below the cap, and ends on the weights of the run with everything
    on disk. `zeroc estimate --mem-per-rank` sizes the same knobs the same way: its stage-3 row
    fits the limit less the reserve, and one more unit's optimizer state in RAM would not."""
    args = ["--hidden", 2048, "--layers", 16, "--micro-batch", 4, "--steps", 2, "--stage", 3,
            "--dtype", "bf16"]
    nvme = {"device": "nvme", "nvme_path": NVME}

    def cfg(name, max_in_cpu, ratio):
        path = H_.path(name + ".cfg.json")
        with open(path, "w") as f:
            json.dump({"zero_optimization": {
                "sub_group_size": 262144,
                "offload_optimizer": {**nvme, "ratio": ratio},
                "offload_param": {**nvme, "max_in_cpu": max_in_cpu}}}, f)
        return path

    said_re = (r'offload "auto": (\d+) of rank 0\'s 67141632 parameter-shard elements in RAM '
               r'\(offload_param.max_in_cpu (\d+)\); the optimizer state of (\d+) of its 16 units '
               r'on disk, the rest in RAM \(offload_optimizer.ratio ([0-9.e-]+)\)')
    auto = cfg("auto", "auto", "auto")
    disk, _ = train(1, "auto-disk", *args, "--config", cfg("auto-zero", 0, 1))
    if not H_.sanitized:  # the sanitizer pass: the cgroup's run below takes the same path
        _, p = train(1, "auto-host", *args, "--config", auto)
        m = re.search(said_re, p.stdout)
        check(m and m.group(1) == "67141632" and m.group(3) == "0",
              f"with the host's memory not everything stayed in RAM: {p.stdout[-1500:]}")
        check(re.search(r'"max_in_cpu":"auto".*"ratio":"auto"|"ratio":"auto".*"max_in_cpu":"auto"',
                        p.stdout), "the config line does not say \"auto\"")
    limit = 1000 << 20
    if os.geteuid() == 0:
        capped = os.path.join(os.path.dirname(os.path.abspath(__file__)), "memcap.sh")
        rep = H_.path("auto-cap.json")
        p = subprocess.run([capped, str(limit), H_.zeroc, "train", *map(str, args), "--config",
                            auto, "--report", rep], capture_output=True, text=True, timeout=300,
                           env={**os.environ, **LEAN})
        m = re.search(said_re, p.stdout)
        check(p.returncode == 0 and m, f"auto under a 1000 MiB cgroup: {p.returncode} "
                                       f"{p.stdout[-1500:]} {p.stderr[-800:]}")
        if p.returncode == 0 and m:
            r = H_.report("auto-cap.json")
            check(m.group(1) == "67141632" and 0 < int(m.group(3)) < 16,
                  f"under 1000 MiB: expected every parameter and some optimizer state in RAM: "
                  f"{m.group(0)}")
            check(r["offload"]["param_elems_in_ram"] == 67141632
                  and r["offload"]["param_elems_on_disk"] == 0, f"report: {r['offload']}")
            check(r["memory"]["ranks"][0]["peak_rss"] < limit,
                  f"peak RSS {r['memory']['ranks'][0]['peak_rss']} not below the cap")
            check(r["weights_sha256"] == disk["weights_sha256"],
                  "the cache changed the weights")
    else:
        print("  skipped the cgroup part: needs root")
    est = ["--model", "mlp", "--hidden", 2048, "--layers", 16, "--micro-batch", 4, "--dtype",
           "bf16", "--ranks", 1]
    row = H_.estimate(*est, "--config", auto, "--mem-per-rank", f"{limit >> 20}MiB")["rows"][3]
    target = limit - max(limit // 10, 256 << 20)
    k = round(row["offload_ratio"] * 16 - 0.5)  # units on disk: the ratio is their midpoint
    check(row["total_per_rank"] <= target and 0 < k < 16 and row["max_in_cpu"] == 67141632,
          f"estimate's auto at {limit >> 20} MiB: {row}")
    fewer = H_.estimate(*est, "--config", cfg("auto-fewer", row["max_in_cpu"], (k - 0.5) / 16),
                        "--mem-per-rank", f"{limit >> 20}MiB")["rows"][3]
    check(fewer["total_per_rank"] > target,
          f"{k - 1} units' optimizer state on disk fits too ({fewer['total_per_rank']} <= "
          f"{target}): auto did not keep the most in RAM")


def test_cpu_device():
    """device "cpu" trains exactly as without offload and says once that nothing moves."""
    args = ["--hidden", 64, "--layers", 3, "--micro-batch", 4, "--steps", 3, "--stage", 2]
    base, _ = train(2, "cpu-base", *args)
    rep, p = train(2, "cpu", *args, "--offload-optimizer", "cpu", "--offload-param", "cpu")
    check(rep["weights_sha256"] == base["weights_sha256"], "device cpu changed the weights")
    check(p.stdout.count("nothing moves") == 2, f"device cpu note: {p.stdout[:400]}")
    check(rep["memory"]["ranks"][0]["nvme"] == 0, "device cpu put something on disk")


def unfolded_and_folded(n, prefix, args, saves=(), **cfg):
    """The runs of `args` (stage 3, both offloads, config extras cfg) with fold_update false and
    true, checked equal bit for bit: weights, losses, validation losses (when reported), and the
    checkpoints of the steps in `saves` (each run saving into its own directory). Returns the
    unfolded run's report, the folded run's, and the folded run's checkpoint directory."""
    reps, dirs = {}, {}
    for fold in (False, True):
        tag = f"{prefix}-{fold}"
        dirs[fold] = H_.path("ck-" + tag)
        save = ["--save-dir", dirs[fold]] if saves else []
        reps[fold], _ = train(n, tag, *args, *save, "--config",
                              config(tag, opt=True, par=True, fold=fold, **cfg))
    a, b = reps[False], reps[True]
    for key in ("weights_sha256", "loss", "val_loss"):
        check(b.get(key) == a.get(key),
              f"{prefix}: folded {key} differs: {b.get(key)} != {a.get(key)}")
    for step in saves:
        for r in range(n):
            name = f"step-{step:06d}/rank-{r:05d}.bin"
            x, y = (open(os.path.join(dirs[f], name), "rb").read() for f in (False, True))
            check(x == y, f"{prefix} {name}: the folded run's checkpoint differs")
    return a, b, dirs[True]


def test_fold_update():
    """fold_update (stage 3, both offloads) with gradient clipping: each unit's update runs in the
    next forward, just before its gather, which takes the shard the update produced. Against the
    unfolded update: the same weights and losses bit for bit (MLP fp32 and bf16 on 2 ranks; GPT-2 bf16 with
    accumulation, clipping, validation every step — whose forward is then the one that updates —
    and checkpoints saved while an update is pending, whose shards are byte-identical); in the MLP
    every unit's gather fed by the update from the second step on, each of those steps starting
    exactly one parameter shard read per unit fewer (the 4 KiB-rounded regions the forward no
    longer reads back)."""
    n, h, layers = 2, 64, 3
    units = mlp_units(h, layers)
    args = ["--hidden", h, "--layers", layers, "--micro-batch", 4, "--steps", 4, "--stage", 3,
            "--clip", 1.0]
    for dtype in ("fp32", "bf16"):
        a, b, _ = unfolded_and_folded(n, f"fold-mlp-{dtype}", [*args, "--dtype", dtype])
        check(a["offload"]["shards_from_update"] == [0] * 4,
              f"MLP {dtype}: unfolded shards_from_update {a['offload']['shards_from_update']}")
        check(b["offload"]["shards_from_update"] == [0] + [layers] * 3,
              f"MLP {dtype}: shards_from_update {b['offload']['shards_from_update']}")
        saved = sum(region(shard(u, n) * SIZE[dtype]) for u in units)
        for step in range(1, 4):
            x, y = (r["offload"]["param_read_bytes"][step] for r in (a, b))
            check(x - y == saved, f"MLP {dtype} step {step}: parameter reads {x} unfolded, {y} "
                  f"folded: {x - y} fewer, want {saved}")
    train_tok, val_tok = H_.text_tokens()
    gargs = [*TINY, "--data", train_tok, "--val-data", val_tok, "--val-every", 1, "--steps", 4,
             "--grad-accum", 2, "--clip", 0.5, "--stage", 3, "--dtype", "bf16",
             "--save-every", 2]
    unfolded_and_folded(n, "fold-gpt2", gargs, saves=(2, 4))


def test_fold_into_backward():
    """fold_update without gradient clipping (stage 3, both offloads): each unit's update runs in
    the backward as soon as its reduced gradient shard lands, so no gradient shard goes to disk
    and back at the step's last micro-batch. Against the unfolded update: the same weights and
    losses bit for bit; every unit updated in the backward at every step; each step reads and
    writes exactly the 4 KiB-rounded gradient regions fewer (MLP fp32 and bf16 on 2 ranks; the
    update's own bytes fewer by the regions it no longer reads). GPT-2 in bf16 with
    accumulation (the first micro-batch's shards still go to disk and back), validation every
    step, checkpoints (byte-identical) and a resume, with AdamW and with AdamW8bit's compact
    master: the same bits as unfolded."""
    n, h, layers = 2, 64, 3
    units = mlp_units(h, layers)
    args = ["--hidden", h, "--layers", layers, "--micro-batch", 4, "--steps", 4, "--stage", 3]
    for dtype in H_.trim(("fp32", "bf16"), ("bf16",)):
        a, b, _ = unfolded_and_folded(n, f"bwd-mlp-{dtype}", [*args, "--dtype", dtype])
        check(a["offload"]["updates_in_backward"] == [0] * 4 and
              b["offload"]["updates_in_backward"] == [layers] * 4,
              f"MLP {dtype}: updates in the backward {a['offload']['updates_in_backward']}, "
              f"{b['offload']['updates_in_backward']}")
        saved = sum(region(shard(u, n) * SIZE[dtype]) for u in units)
        # (the reads in all are not compared: a read counts when it completes, and the shards
        # read ahead of a forward that never comes may or may not have landed by the report)
        for step in range(4):
            for key in ("written_bytes", "update_read_bytes"):
                x, y = (r["offload"][key][step] for r in (a, b))
                check(x - y == saved, f"MLP {dtype} step {step}: {key} {x} unfolded, {y} in the "
                      f"backward: {x - y} fewer, want {saved}")
        x, y = (r["offload"]["param_read_bytes"] for r in (a, b))
        check(x == y, f"MLP {dtype}: parameter shard reads {x} unfolded, {y} in the backward")
    # AdamW8bit's compact master: its update needs the old bf16 weights too, kept from the
    # backward's gather (from the second step, once the order of the gathers is recorded) while
    # the shard buffers allow: the update reads the gradient regions and the kept shards' fewer,
    # more of them with 5 shard buffers (at most 4 kept) than with 2 (1 at a time); the same
    # bits, and the offload buffers within the estimate's bound for that config
    compact = {"type": "AdamW8bit", "params": {"lr": 1e-3, "compact_master": True}}
    layers6 = ["--hidden", h, "--layers", 6, "--micro-batch", 4, "--steps", 4, "--stage", 3,
               "--dtype", "bf16"]
    region6 = region(shard(h * h + h, n) * 2)
    reps, kept = {}, {}
    for fold, bufs in ((False, 5), (True, 5), (True, 2)):
        tag = f"bwd-mlp-compact-{fold}-{bufs}"
        cfg = config(tag, opt=True, par=True, fold=fold, par_buffers=bufs, optimizer=compact)
        reps[fold, bufs], _ = train(n, tag, *layers6, "--config", cfg)
        bound = {r["stage"]: r for r in H_.estimate(
            "--model", "mlp", *layers6[:6], "--ranks", n, "--dtype", "bf16", "--config",
            cfg)["rows"]}[3]["offload_buffers_bound"]
        for m in reps[fold, bufs]["memory"]["ranks"]:
            check(0 < m["offload_peak"] <= bound, f"compact, fold {fold}, {bufs} buffers: rank "
                  f"{m['rank']} offload peak {m['offload_peak']}, bound {bound}")
    a = reps[False, 5]
    for bufs in (5, 2):
        b = reps[True, bufs]
        check(b["weights_sha256"] == a["weights_sha256"], f"compact, {bufs} buffers: weights differ")
        fewer = {(x - y) // region6 - 6 for x, y in zip(a["offload"]["update_read_bytes"][1:],
                                                        b["offload"]["update_read_bytes"][1:])}
        check(len(fewer) == 1 and 0 < min(fewer) <= 6,
              f"compact, {bufs} buffers: shards kept per step {fewer} (6 units)")
        kept[bufs] = min(fewer)
    check(kept[5] > kept[2], f"shards kept: {kept[5]} with 5 buffers, {kept[2]} with 2")
    train_tok, val_tok = H_.text_tokens()
    gargs = [*TINY, "--data", train_tok, "--val-data", val_tok, "--val-every", 1, "--steps", 4,
             "--grad-accum", 2, "--stage", 3, "--dtype", "bf16", "--save-every", 2]
    compact = {"type": "AdamW8bit", "params": {"lr": 1e-3, "compact_master": True}}
    for name, extra in H_.trim((("AdamW", {}), ("compact", {"optimizer": compact})),
                               (("compact", {"optimizer": compact}),)):
        a, b, folded = unfolded_and_folded(n, f"bwd-gpt2-{name}", gargs, saves=(2, 4), **extra)
        check(min(b["offload"]["updates_in_backward"]) > 0,
              f"GPT-2 {name}: updates in the backward {b['offload']['updates_in_backward']}")
        tag = f"bwd-gpt2-{name}-resumed"
        res, _ = train(n, tag, *gargs, "--save-dir", H_.path("ck-" + tag), "--resume",
                       os.path.join(folded, "step-000002"),
                       "--config", config(tag, opt=True, par=True, **extra))
        check(res["weights_sha256"] == a["weights_sha256"],
              f"GPT-2 {name}: resumed at step 2, weights {res['weights_sha256']} != "
              f"{a['weights_sha256']}")


if __name__ == "__main__":
    os.makedirs(NVME, exist_ok=True)
    try:
        H_.main([test_mlp_bitwise, test_adamw8bit, test_compact_master,
                 test_fp16_overflow_with_offload, test_partial_offload,
                 test_gpt2_bitwise, test_resume_with_offload,
                 test_ram_flat_in_model_size, test_estimate_matches, test_buffer_count_bounded,
                 test_io_buffers_reused, test_reads_in_place,
                 test_pin_memory_limit, test_bad_nvme_path,
                 test_io_errors, test_truncated_swap_file, test_killed_rank_frees_disk,
                 test_trains_beyond_memory_cap, test_memory_check_cgroups,
                 test_memory_check_advice, test_auto_cache, test_cpu_device, test_fold_update,
                 test_fold_into_backward],
                sys.argv[3:])
    finally:
        shutil.rmtree(NVME, ignore_errors=True)
