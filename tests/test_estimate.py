#!/usr/bin/env python3
"""test_estimate.py — `zeroc estimate` agrees with what `zeroc train` measures (model states
per rank and comm staging to the byte, comm bytes per step exactly), for the MLP and GPT-2
(tiny and 124M shapes), N = 1–4, stages 0–3; `zeroc analyze` runs the experiment and its files
hold what it printed; bad input is refused. python3 stdlib only; prints "N passed, N failed".

Usage: test_estimate.py ZEROC_BINARY MPIRUN_SH [test-name ...]"""
import csv
import json
import os
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET

from harness import Harness

H_ = Harness(sys.argv[1], sys.argv[2])
check = H_.check
estimate = H_.estimate



def tokens(path, n, vocab):
    with open(path, "wb") as f:
        f.write(struct.pack("<256i", 20240520, 1, n, *([0] * 253)))
        f.write(struct.pack(f"<{n}H", *((i * 7919) % vocab for i in range(n))))
    return path


def llmc_checkpoint(path, L, C, NH, V, maxT):
    """An llm.c fp32 checkpoint of this shape (zero weights: the estimate reads the header)."""
    Vp = (V + 127) // 128 * 128
    n = Vp * C + maxT * C + L * (12 * C * C + 13 * C) + 2 * C
    with open(path, "wb") as f:
        f.write(struct.pack("<256i", 20240326, 3, maxT, V, L, NH, C, Vp, *([0] * 248)))
        f.write(bytes(4 * n))
    return path


def agree(name, shape_train, shape_est, ranks, stages, steps=2, env=None):
    """Runs `zeroc train` on each n of ranks at each stage and checks its report against
    `zeroc estimate --json --ranks n`: model states in RAM and on disk, comm staging and comm
    bytes per step (also those leaving the host: env may set ZEROC_RANKS_PER_HOST, then
    shape_est gives --ranks-per-node) to the byte, activations exactly, working within the
    bound. Returns {(n, stage): estimate row}."""
    rows = {}
    for n in ranks:
        est = {r["stage"]: r for r in estimate(*shape_est, "--ranks", n)["rows"]}
        for stage in stages:
            rep_path = H_.path(f"{name}-{n}-{stage}.json")
            H_.run(n, "train", *shape_train, "--stage", stage, "--steps", steps,
                   "--report", rep_path, timeout=600, env=env)
            with open(rep_path) as f:
                rep = json.load(f)
            r0 = rep["memory"]["ranks"][0]
            e = rows[n, stage] = est[stage]
            got = (r0["params"], r0["grads"], r0["optimizer"], r0["nvme"], r0["comm"])
            want = (e["params"], e["grads"], e["optimizer"], e["nvme"], e["comm_staging"])
            check(got == want, f"{name} N={n} stage {stage}: measured {got} != estimate {want}")
            if steps > 1:
                check(rep["comm"]["bytes_per_step"]["total"] == e["comm_bytes_per_step"],
                      f"{name} N={n} stage {stage}: comm {rep['comm']['bytes_per_step']['total']}"
                      f" != estimate {e['comm_bytes_per_step']}")
                inter = rep["comm"]["inter_host_bytes_per_step"]["total"]
                check(inter == e["inter_node_comm_bytes_per_step"],
                      f"{name} N={n} stage {stage}: inter-host comm {inter} != estimate "
                      f"{e['inter_node_comm_bytes_per_step']}")
            check(r0["working_peak"] <= e["working_bound"],
                  f"{name} N={n} stage {stage}: working {r0['working_peak']} > bound "
                  f"{e['working_bound']}")
            check(r0["activations_peak"] == e["activations"],
                  f"{name} N={n} stage {stage}: activations {r0['activations_peak']} != "
                  f"{e['activations']}")
    return rows


def test_estimate_matches_mlp():
    """The ledger equals the estimate (agree); and the working bound is never below the buffer
    the final weight digest gathers each unit into, 4 bytes × the largest padded unit — at stage
    0 in fp32 that buffer is all the working memory there is (the memory check admitted runs
    that were then killed after their last step for want of it)."""
    shape = ["--hidden", 65, "--layers", 3, "--micro-batch", 4]
    agree("mlp", ["--model", "mlp", *shape], ["--model", "mlp", *shape],
          H_.trim((1, 2, 3, 4), (3,)), range(4))
    for n in (1, 3):
        rows = {r["stage"]: r for r in estimate("--model", "mlp", *shape, "--ranks", n)["rows"]}
        unit = -(-(65 * 65 + 65) // n) * n
        check(rows[0]["working_bound"] == 4 * unit,
              f"N={n} stage 0: working bound {rows[0]['working_bound']}, want {4 * unit}")
        check(all(r["working_bound"] >= 4 * unit for r in rows.values()),
              f"N={n}: a working bound below the digest's buffer: {rows}")


def test_estimate_matches_persistence():
    """Stage 3 with persistent units (units under stage3_param_persistence_threshold kept whole):
    the estimate counts them whole and all-gathered once a step, as the engine does."""
    shape = ["--hidden", 65, "--layers", 3, "--micro-batch", 4]
    cfg = H_.path("persist.json")
    with open(cfg, "w") as f:
        json.dump({"zero_optimization": {"stage3_param_persistence_threshold": 5000}}, f)
    agree("mlp-persist", ["--model", "mlp", *shape, "--config", cfg],
          ["--model", "mlp", *shape, "--persistence-threshold", 5000], (2, 3), (3,))


def test_estimate_matches_gpt2_tiny():
    data = tokens(H_.path("tok.bin"), 5000, 256)
    shape = ["--layers", 2, "--channels", 32, "--heads", 2, "--vocab", 256, "--seq-len", 16,
             "--micro-batch", 2]
    agree("gpt2", ["--model", "gpt2", "--data", data, *shape], ["--model", "gpt2", *shape],
          H_.trim((1, 2, 3, 4), (3,)), range(4))
    # a config's activation_checkpointing section turns checkpointing on in the estimate as in
    # train (the estimate counted every block's activations), and is refused for an mlp
    ac = H_.path("ac.json")
    with open(ac, "w") as f:
        json.dump({"activation_checkpointing": {}}, f)
    agree("gpt2-ac", ["--model", "gpt2", "--data", data, "--config", ac, *shape],
          ["--model", "gpt2", "--config", ac, *shape], (1,), (0,))
    act = {k: estimate("--model", "gpt2", *shape, "--ranks", 1, *extra)["rows"][0]["activations"]
           for k, extra in (("config", ("--config", ac)), ("flag", ("--activation-checkpointing",)),
                            ("none", ()))}
    check(act["config"] == act["flag"] < act["none"], f"activations {act}")
    p = H_.run(1, "estimate", "--model", "mlp", "--config", ac, ok=False)
    check(p.returncode == 1 and "activation_checkpointing" in p.stderr and "mlp" in p.stderr,
          f"mlp with activation_checkpointing: {p.returncode} {p.stderr!r}")


def test_estimate_matches_mixed():
    """bf16 / fp16, with fp32 gradients or fp32 communication: the estimate's rows equal the
    ledger and the comm counters of real runs, as in fp32."""
    shape = ["--hidden", 65, "--layers", 3, "--micro-batch", 4]
    agree("mlp-bf16", ["--model", "mlp", "--dtype", "bf16", *shape],
          ["--model", "mlp", "--dtype", "bf16", *shape], H_.trim((1, 2, 3, 4), (3,)), range(4))
    cfg = H_.path("mixed.json")
    with open(cfg, "w") as f:
        json.dump({"fp16": {"enabled": True}, "data_types": {"grad_accum_dtype": "fp32"},
                   "communication_data_type": "bf16"}, f)
    data = tokens(H_.path("tok-mixed.bin"), 5000, 256)
    tiny = ["--layers", 2, "--channels", 32, "--heads", 2, "--vocab", 256, "--seq-len", 16,
            "--micro-batch", 2]
    agree("gpt2-fp16", ["--model", "gpt2", "--data", data, "--config", cfg, *tiny],
          ["--model", "gpt2", "--dtype", "fp16", "--grad-accum-dtype", "fp32", "--comm-dtype",
           "bf16", *tiny], H_.trim((2, 3), (3,)), range(4))
    # fp16 with fp32 gradients sent in fp32: stages 0–1 still stage the send (the loss scale
    # comes off on the way); bf16 sent as stored has none (both in the MLP rows above)
    cfg32 = H_.path("fp16-fp32.json")
    with open(cfg32, "w") as f:
        json.dump({"fp16": {"enabled": True}, "data_types": {"grad_accum_dtype": "fp32"},
                   "communication_data_type": "fp32"}, f)
    agree("mlp-fp16", ["--model", "mlp", "--config", cfg32, *shape],
          ["--model", "mlp", "--dtype", "fp16", "--grad-accum-dtype", "fp32", "--comm-dtype",
           "fp32", *shape], (1, 2), (0, 1))


def test_estimate_working_bf16_decoder():
    """In bf16 the decoder feeds its stored matrices to the products and writes their gradients
    in 16 bits (zc_engine_unit_use), so the working bound counts a gathered unit's fp32 view as
    its 1-D parameters only and its stage-2/3 gradient at 2 bytes per element (+ 4 per 1-D
    element), a tied table's too. Real runs stay within it — the tied GPT-2 and the untied Llama
    fixture, accumulating over two micro-batches — and at stage 3 it equals the formula (the old
    bound assumed whole-unit fp32 views and gradients: 3.6× this one here, 6.5× at Llama 3.1 8B's
    vocabulary, so the memory check refused runs that fit). The bf16 gradients are sent from where
    they lie: the comm staging is the receive side only, the other rank's block of the largest
    unit's shard."""
    llama = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "llama_tiny")
    data = tokens(H_.path("tok-bf16.bin"), 5000, 300)
    cfg = H_.path("bf16-accum.json")
    with open(cfg, "w") as f:
        json.dump({"bf16": {"enabled": True}, "gradient_accumulation_steps": 2,
                   "zero_optimization": {"stage3_prefetch_bucket_size": 0}}, f)
    run = ["--seq-len", 16, "--micro-batch", 2, "--config", cfg]
    gpt2 = ["--model", "gpt2", "--layers", 2, "--channels", 32, "--heads", 2, "--vocab", 300]
    stages = H_.trim((0, 1, 2, 3), (3,))
    agree("gpt2-bf16", [*gpt2, "--data", data, *run], [*gpt2, *run], (2,), stages)
    rows = agree("llama-bf16", ["--init", llama, "--data", data, *run], ["--init", llama, *run],
                 (2,), stages)
    # llama_tiny: C 32, 4 heads of 16, 2 key/value heads, intermediate 80, RMSNorm, no biases
    C, qd, kvd, inter = 32, 4 * 16, 2 * 16, 80
    block = 2 * C + (qd + 2 * kvd) * C + C * qd + 2 * inter * C + C * inter  # the largest unit
    U = -(-block // 2) * 2  # padded over 2 ranks
    vec = 2 * C  # its two norms
    # gathered, views, and the gradients of three units: one produced, one still reducing from
    # where it lies, one kept (a tied table)
    want = 2 * 3 * U + 3 * 4 * vec + 3 * (2 * U + 4 * vec)
    check(rows[2, 3]["working_bound"] == want,
          f"llama_tiny bf16 stage 3: working bound {rows[2, 3]['working_bound']}, want {want}")
    for stage in stages:  # stages 2-3: no send staging; 0-1 send the stored gradients in place
        got = rows[2, stage]["comm_staging"]
        check(got == (2 - 1) * (U // 2) * 2,
              f"llama_tiny bf16 stage {stage}: comm staging {got}, want {(U // 2) * 2}")


def test_estimate_matches_gpt2_124m():
    data = tokens(H_.path("tok50k.bin"), 2000, 50257)
    shape = ["--layers", 12, "--channels", 768, "--heads", 12, "--vocab", 50257, "--seq-len", 64,
             "--micro-batch", 1]
    agree("gpt2-124m", ["--model", "gpt2", "--data", data, *shape], ["--model", "gpt2", *shape],
          (2,), H_.trim((0, 3), (3,)), steps=1)


def test_analyze_experiment():
    """The experiment on 2 ranks (--ranks=2), launched without mpirun (zeroc relaunches
    itself)."""
    out = H_.path("an")
    env = dict(os.environ)
    p = subprocess.run([H_.zeroc, "analyze", "--hidden", "64", "--layers", "3", "--micro-batch",
                        "4", "--steps", "2", "--ranks=2", "--out", out],
                       capture_output=True, text=True, timeout=300, env=env)
    check(p.returncode == 0, f"analyze failed: {p.stderr[-2000:]}")
    # --ranks=2 is --ranks 2 (it ran on 4); a stage above stage 0 is "x% more", not "-x% less"
    rss = [line for line in p.stdout.splitlines() if line.startswith("peak RSS per rank:")]
    check(len(rss) == 4 and all(len(line.split(";")[0].split()) == 7 for line in rss),
          f"analyze --ranks=2: {rss}")
    check("-" not in "".join(line.split(";", 1)[-1] for line in rss), f"negative share: {rss}")
    check(p.stdout.count("equal to the byte") == 4, "analyze: estimate differs from measurement")
    rows = list(csv.DictReader(open(out + ".csv")))
    peak = {}
    for r in rows:
        if r["when"] == "peak" and r["category"] == "model_states" and r["rank"] == "0":
            peak[int(r["stage"])] = int(r["bytes"])
        if r["when"] == "estimate" and r["category"] == "model_states":
            check(int(r["bytes"]) == peak.get(int(r["stage"])),
                  f"csv: stage {r['stage']} estimate {r['bytes']} != peak {peak.get(int(r['stage']))}")
    unit = 64 * 64 + 64
    full = 3 * unit * 16
    check(peak == {0: full, 1: full // 2 + full // 4, 2: full // 4 + 3 * full // 8, 3: full // 2},
          f"csv peaks {peak} (stage 0 = {full})")
    svg = ET.parse(out + ".svg").getroot()
    text = " ".join(t.text or "" for t in svg.iter("{http://www.w3.org/2000/svg}text"))
    for needle in ("peak memory per rank (MiB)", "ZeRO stage", "params", "optimizer",
                   "activations", "estimate"):
        check(needle in text, f"svg lacks {needle!r}")
    bars = [r for r in svg.iter("{http://www.w3.org/2000/svg}rect") if r.find(
        "{http://www.w3.org/2000/svg}title") is not None]
    check(len(bars) == 4 * 6, f"svg has {len(bars)} bar segments, want 24")


def write_config(name, cfg):
    path = H_.path(name)
    with open(path, "w") as f:
        json.dump(cfg, f)
    return path


def test_estimate_matches_grad_accum():
    """gradient_accumulation_steps A: stages 0–1 reduce once per step, stages 2–3 reduce-scatter
    every micro-batch and stage 3 gathers for each micro-batch's forward and backward (hpZ: the
    first gather of a step the world's, the later ones the group's; persistent units gathered once
    after the update). `zeroc estimate --grad-accum A`, or --config with the file train reads,
    equals the runs' reports to the byte."""
    shape = ["--model", "mlp", "--hidden", 65, "--layers", 3, "--micro-batch", 4]
    rows = agree("mlp-accum", [*shape, "--grad-accum", 2], [*shape, "--grad-accum", 2],
                 H_.trim((2, 3), (3,)), range(4))
    # Ψp = 3 × 4290 = 12870 floats, (N−1)/N = 1/2 of them sent per byte of element size: stage 2
    # reduce-scatters twice (2 × 4 bytes) and gathers once, stage 3 twice as much as at A = 1
    want = {0: 8 * 6435, 1: 8 * 6435, 2: 12 * 6435, 3: 24 * 6435}
    if (2, 0) in rows:
        got = {s: rows[2, s]["comm_bytes_per_step"] for s in range(4)}
        check(got == want, f"N=2, A=2: comm bytes per step {got}, want {want}")
    # the file's batch triple resolved as train resolves it: A = 24 / (4 × 2) = 3
    batch = write_config("accum-batch.json", {"train_batch_size": 24,
                                               "train_micro_batch_size_per_gpu": 4})
    e = estimate("--model", "mlp", "--hidden", 65, "--layers", 3, "--ranks", 2, "--config", batch)
    check((e["gradient_accumulation_steps"], e["micro_batch"]) == (3, 4),
          f"accumulation, micro-batch {e['gradient_accumulation_steps'], e['micro_batch']}")
    agree("mlp-accum-file", ["--model", "mlp", "--hidden", 65, "--layers", 3, "--config", batch],
          ["--model", "mlp", "--hidden", 65, "--layers", 3, "--config", batch], (2,),
          H_.trim((2, 3), (3,)))
    # stage 3's persistent units and GPT-2 (whose tied embedding unit is used at both ends)
    persist = write_config("accum-persist.json", {
        "gradient_accumulation_steps": 2,
        "zero_optimization": {"stage3_param_persistence_threshold": 5000}})
    agree("mlp-accum-persist", [*shape, "--config", persist], [*shape, "--config", persist],
          (2,), (3,))
    data = tokens(H_.path("tok-accum.bin"), 5000, 256)
    tiny = ["--model", "gpt2", "--layers", 2, "--channels", 32, "--heads", 2, "--vocab", 256,
            "--seq-len", 16, "--micro-batch", 2, "--grad-accum", 3]
    agree("gpt2-accum", [*tiny, "--data", data], tiny, (2,), H_.trim((2, 3), (3,)))
    # hosts of 2 (4 ranks): hpZ's group gathers, qgZ's two hops, qwZ (the sanitizer pass: all
    # three at once, which runs the code of each)
    hosts = (("qwz", {"zero_quantized_weights": True}, ["--quantized-weights"]),
             ("hpz", {"zero_hpz_partition_size": 2}, ["--hpz", 2]),
             ("all", {"zero_quantized_weights": True, "zero_quantized_gradients": True,
                      "zero_hpz_partition_size": 2},
              ["--quantized-weights", "--quantized-gradients", "--hpz", 2]))
    for name, zero, flags in H_.trim(hosts, hosts[2:]):
        cfg = write_config(f"accum-{name}.json", {"zero_optimization": {"stage": 3, **zero}})
        agree(f"mlp-accum-hosts-{name}", [*shape, "--grad-accum", 2, "--config", cfg],
              [*shape, "--grad-accum", 2, "--ranks-per-node", 2, *flags], (4,), (3,),
              env={"ZEROC_RANKS_PER_HOST": "2"})


def test_estimate_matches_reduce_bucket():
    """zero_optimization.reduce_bucket_size sizes the reduce-scatter chunks: the comm staging
    (and with qgZ the bytes sent, one scale per chunk's block) follow it. `--reduce-bucket-size`
    and the same key in --config equal the runs'."""
    shape = ["--model", "mlp", "--hidden", 65, "--layers", 3, "--micro-batch", 4]
    rows = agree("mlp-bucket", [*shape, "--config",
                                write_config("bucket.json",
                                             {"zero_optimization": {"reduce_bucket_size": 100}})],
                 [*shape, "--reduce-bucket-size", 100], H_.trim((2, 3), (3,)), range(4))
    if (2, 2) in rows:  # 50 columns per rank of fp32: N blocks sent, the N - 1 others received
        check(rows[2, 2]["comm_staging"] == (2 + 1) * 50 * 4,
              f"N=2 stage 2: comm staging {rows[2, 2]['comm_staging']}, want 600")
    qgz = write_config("bucket-qgz.json", {"zero_optimization": {
        "reduce_bucket_size": 1000, "zero_quantized_gradients": True}})
    agree("mlp-bucket-qgz", [*shape, "--config", qgz], [*shape, "--config", qgz], (2, 3), (3,))


def test_estimate_matches_offload_ratio():
    """offload_optimizer.ratio puts that share of the optimizer state (the first units') on disk
    and keeps the rest in RAM: `--offload-ratio` and the same key in --config equal the runs'
    RAM and disk bytes."""
    nvme = H_.path("nvme-ratio")
    os.makedirs(nvme, exist_ok=True)
    cfg = write_config("ratio.json", {"zero_optimization": {"offload_optimizer": {
        "device": "nvme", "nvme_path": nvme, "ratio": 0.4}}})
    shape = ["--model", "mlp", "--hidden", 65, "--layers", 3, "--micro-batch", 4]
    rows = agree("mlp-ratio", [*shape, "--config", cfg],
                 [*shape, "--offload-optimizer", "nvme", "--offload-ratio", 0.4], (2,), (1, 2, 3))
    # the first of three equal units' shards (2145 floats: 8580 bytes each of Adam's m and v) on
    # disk, each in whole 4 KiB blocks; the other two units' in RAM
    want = (2 * 2 * 8580, 2 * 12288)
    got = (rows[2, 2]["optimizer"], rows[2, 2]["nvme"])
    check(got == want, f"N=2 stage 2: optimizer in RAM, on disk {got}, want {want}")
    agree("mlp-ratio-file", [*shape, "--config", cfg], [*shape, "--config", cfg], (3,), (2,))


def test_estimate_matches_zero_pp_hosts():
    """`zeroc estimate --ranks-per-node R` with the ZeRO++ flags predicts, to the byte, what a
    stage-3 run on hosts of R ranks measures (ZEROC_RANKS_PER_HOST makes 4 ranks 2 hosts of 2 on
    one machine): params (hpZ's secondary copy included), comm bytes per step and the bytes
    that leave the host, for each option and all three; its ZeRO++ table agrees with the rows."""
    shape = ["--hidden", 65, "--layers", 3, "--micro-batch", 4]
    cases = {"none": ({}, []),
             "qwz": ({"zero_quantized_weights": True}, ["--quantized-weights"]),
             "qgz": ({"zero_quantized_gradients": True}, ["--quantized-gradients"]),
             "hpz": ({"zero_hpz_partition_size": 2}, ["--hpz", 2]),
             "all": ({"zero_quantized_weights": True, "zero_quantized_gradients": True,
                      "zero_hpz_partition_size": 2},
                     ["--quantized-weights", "--quantized-gradients", "--hpz", 2])}
    table = {o["options"]: o for o in estimate("--model", "mlp", *shape, "--ranks", 4,
                                               "--ranks-per-node", 2)["zero_pp_stage3"]}
    names = {"none": "none", "qwz": "qwZ", "qgz": "qgZ", "hpz": "hpZ", "all": "qwZ+hpZ+qgZ"}
    for name, (zero, flags) in cases.items():
        cfg = H_.path(f"zpp-{name}.json")
        with open(cfg, "w") as f:
            json.dump({"zero_optimization": {"stage": 3, **zero}}, f)
        rep_path = H_.path(f"zpp-{name}.r.json")
        H_.run(4, "train", "--model", "mlp", *shape, "--config", cfg, "--steps", 2, "--report",
               rep_path, env={"ZEROC_RANKS_PER_HOST": "2"})
        with open(rep_path) as f:
            rep = json.load(f)
        e = [r for r in estimate("--model", "mlp", *shape, "--ranks", 4, "--ranks-per-node", 2,
                                 *flags)["rows"] if r["stage"] == 3][0]
        got = (rep["memory"]["ranks"][0]["params"], rep["comm"]["bytes_per_step"]["total"],
               rep["comm"]["inter_host_bytes_per_step"]["total"])
        want = (e["params"], e["comm_bytes_per_step"], e["inter_node_comm_bytes_per_step"])
        check(got == want, f"{name}: measured (params, comm, inter-host) {got} != estimate {want}")
        t = table[names[name]]
        check((t["params"], t["comm_bytes_per_step"], t["inter_node_comm_bytes_per_step"]) == want,
              f"{name}: the ZeRO++ table says {t}, the row {want}")


def test_estimate_bad_input():
    bad_batch = write_config("bad-batch.json", {"train_batch_size": 10,
                                                "train_micro_batch_size_per_gpu": 4})
    ck = llmc_checkpoint(H_.path("shape.bin"), L=2, C=32, NH=2, V=256, maxT=32)
    for args, needle in ((["--params", "-1"], "--params"), (["--params", "1M", "--ranks", "0"],
                         "--ranks"), (["--model", "resnet"], "unknown model 'resnet'"),
                         (["--init", H_.path("nothere.bin")], "nothere.bin"),
                         (["--params", "lots"], "--params"), ([], "exactly one of"),
                         (["--params", "1M", "--ranks", 4, "--hpz", 3], "--hpz 3 must divide"),
                         (["--params", "1M", "--hpz", 0], "zero_hpz_partition_size"),
                         (["--params", "1M", "--ranks", 2, "--ranks-per-node", 3],
                          "--ranks-per-node must be between 1 and --ranks (2), got 3"),
                         (["--params", "1M", "--ranks-per-node", 0], "--ranks-per-node must be"),
                         (["--params", "1M", "--ranks", 4, "--ranks-per-node", 3],
                          "--ranks-per-node 3 does not divide --ranks 4: the estimate needs hosts "
                          "that hold equal numbers of ranks (e.g. --ranks-per-node 2)"),
                         (["--model", "gpt2", "--ranks", 6, "--ranks-per-node", 4],
                          "--ranks-per-node 4 does not divide --ranks 6"),
                         (["--params", "1M", "--grad-accum", 0], "--grad-accum must be >= 1, got 0"),
                         (["--params", "1M", "--reduce-bucket-size", -1],
                          "--reduce-bucket-size: command line: zero_optimization.reduce_bucket_size "
                          "must be >= 0, got -1"),
                         (["--params", "1M", "--offload-ratio", 0.5],
                          "--offload-ratio 0.5: it splits the optimizer state between RAM and "
                          "disk, and --offload-optimizer is not nvme"),
                         (["--params", "1M", "--offload-optimizer", "nvme", "--offload-ratio", 2],
                          "--offload-ratio: command line: zero_optimization.offload_optimizer.ratio: "
                          "expected a number in (0, 1], got 2"),
                         (["--params", "1M", "--config", H_.path("nothere.json")],
                          "nothere.json"),
                         (["--params", "1M", "--ranks", 2, "--config", bad_batch],
                          "train_batch_size 10"),
                         (["--model", "mlp", "--micro-batch", 0], "--micro-batch must be >= 1"),
                         (["--params", "1M", "--ranks", 2, "--ranks", 3], "--ranks is given twice"),
                         (["--params", "1M", "--max-in-cpu", 0], "--offload-param is not nvme"),
                         (["--params", "1M", "--offload-param", "nvme", "--sub-group-size",
                           4096], None),
                         (["--params", "1M", "--sub-group-size", 4096],
                          "neither --offload-optimizer nor --offload-param is nvme"),
                         # shape flags the model would not use, refused as train refuses them
                         (["--model", "gpt2", "--hidden", 16],
                          "--hidden is an mlp flag; --model gpt2 takes --channels"),
                         *((["--model", "mlp", flag, *value], f"{flag} is a gpt2 flag; --model "
                           "mlp does not use it")
                           for flag, value in (("--channels", [8]), ("--heads", [2]),
                                               ("--vocab", [256]), ("--seq-len", [16]),
                                               ("--activation-checkpointing", []))),
                         (["--params", "1M", "--hidden", 16], "--hidden is a model shape flag; "
                          "--params N counts the parameters alone"),
                         (["--params", "1M", "--layers", 2], "--layers is a model shape flag"),
                         (["--params", "1M", "--activation-checkpointing"],
                          "--activation-checkpointing is a model shape flag"),
                         (["--init", ck, "--channels", 16],
                          f"--channels 16: --init {ck} has 32 (the shape comes from the file)"),
                         (["--init", ck, "--layers", 3], f"--layers 3: --init {ck} has 2"),
                         (["--init", ck, "--vocab", 300], f"--vocab 300: --init {ck} has 256"),
                         (["--init", ck, "--seq-len", 64],
                          f"--seq-len 64 is longer than the 32 positions of --init {ck}"),
                         (["--init", ck, "--hidden", 16], f"--hidden is an mlp flag; --init {ck}"),
                         (["--init", ck, "--channels", 32, "--layers", 2, "--seq-len", 16], None),
                         # train's `--model gpt2 --init FILE` is taken as it is by train
                         (["--model", "gpt2", "--init", ck], None),
                         (["--model", "mlp", "--init", ck], "--init FILE (a GPT-2: with or without "
                          "--model gpt2)"),
                         (["--model", "mlp", "--layers", 0], "--layers must be >= 1, got 0"),
                         (["--model", "mlp", "--hidden", 0], "--hidden must be >= 1, got 0"),
                         (["--model", "gpt2", "--heads", 5],
                          "--channels 768 must be divisible by --heads 5"),
                         # train's --optimizer: no sgd-momentum (a config's momentum says it)
                         (["--params", "1M", "--optimizer", "sgd-momentum"],
                          "--optimizer: command line: optimizer.type: expected one of AdamW, "
                          "Adam, SGD"),
                         # a whole count of at least 1, decimal, named
                         (["--params", "0.4"], "--params 0.4: not a whole number of parameters"),
                         (["--params", "1.5"], "--params 1.5: not a whole number of parameters"),
                         (["--params", "0x10"], "--params 0x10: expected a decimal count"),
                         (["--params", "0"], "--params 0: expected a count of at least 1"),
                         (["--params", "0.0e3K"], "--params 0.0e3K: expected a count of at least"),
                         (["--params", " 12"], "--params  12: expected a decimal count"),
                         # an integer flag is digits: no white space before it, no '+'
                         (["--params", "1M", "--ranks", " 2"],
                          "--ranks: expected an integer, got ' 2'"),
                         (["--params", "1M", "--ranks", "+2"],
                          "--ranks: expected an integer, got '+2'"),
                         (["--init", H_.path("nothere.bin")],
                          f"--init: {H_.path('nothere.bin')}: cannot open")):
        p = subprocess.run([H_.zeroc, "estimate", *map(str, args)], capture_output=True, text=True,
                           timeout=60)
        if needle is None:  # the same flag where it does something
            check(p.returncode == 0, f"estimate {args}: {p.returncode} {p.stderr!r}")
            continue
        check(p.returncode != 0 and needle in p.stderr, f"estimate {args}: {p.returncode} "
              f"{p.stderr!r}")


    # the model named or not, the same estimate
    check(estimate("--model", "gpt2", "--init", ck) == estimate("--init", ck),
          "estimate --model gpt2 --init differs from --init alone")


def test_analyze_bad_input():
    """analyze refuses the other model's shape flags and an --out it cannot write before any
    stage runs (it ran all four, then failed writing); started without mpirun, before it
    relaunches itself, each refusal one line naming the flag and value."""
    nodir = H_.path("no-such-dir/an")
    for args, needle in ((["--hidden", 16, "--layers", 2, "--channels", 8],
                          "--channels is a gpt2 flag"),
                         (["--model", "gpt2", "--hidden", 16], "--hidden is an mlp flag"),
                         (["--hidden", 16, "--layers", 2, "--out", nodir],
                          f"--out {nodir}.csv: cannot write there")):
        p = subprocess.run([H_.zeroc, "analyze", "--ranks", "1", *map(str, args)],
                           capture_output=True, text=True, timeout=120)
        check(p.returncode == 1 and needle in p.stderr and "stage" not in p.stdout,
              f"analyze {args}: {p.returncode} {p.stderr!r}")
    # started without mpirun (4 ranks by default) a refused flag is one line from the process
    # that would relaunch itself: no ranks start, no mpirun abort banner buries it
    for args, needle in ((["--bogus"], "unknown flag '--bogus'"),
                         (["--ranks", "2abc"], "--ranks: expected an integer, got '2abc'"),
                         (["--ranks=0"], "--ranks must be >= 1, got 0"),
                         (["--steps", 0], "--steps must be >= 1, got 0"),
                         (["--layers", 0], "--layers must be >= 1, got 0"),
                         (["--model", "gpt2", "--heads", 0], "--heads must be >= 1, got 0"),
                         (["--hidden", 16, "--out", nodir], f"--out {nodir}.csv: cannot write")):
        p = subprocess.run([H_.zeroc, "analyze", *map(str, args)], capture_output=True,
                           text=True, timeout=120, cwd=H_.tmp)  # a run that is not refused
        # writes analyze.csv and .svg there
        check(p.returncode == 1 and p.stderr == f"zeroc: error: {p.stderr[14:]}" and
              needle in p.stderr and p.stderr.count("\n") == 1 and p.stdout == "",
              f"analyze {args}: {p.returncode} {p.stderr!r}")


def test_estimate_huge_sizes():
    """Sizes whose byte counts pass 64 bits (or the products' int dimensions) are refused by
    flag and value, promptly, instead of printing wrapped (negative) sizes, dropping the
    activations or recommending a stage that cannot fit."""
    cases = (
        (["--model", "mlp", "--hidden", "2000000000", "--layers", "2", "--ranks", "4",
          "--mem-per-rank", "1G"],
         "mlp: --hidden 2000000000 and --layers 2 make 8000000004000000000 parameters; zeroc "
         "holds at most 562949953421312 (2^49)"),
        (["--model", "gpt2", "--micro-batch", "2000000000", "--seq-len", "1024", "--layers",
          "48", "--mem-per-rank", "1G"],
         "gpt2: --micro-batch 2000000000 × --seq-len 1024 = 2048000000000 tokens per "
         "micro-batch: at most 2147483647 (the products' rows are an int)"),
        (["--model", "mlp", "--layers", "2000000000", "--hidden", "16", "--mem-per-rank", "1G"],
         "mlp: --layers 2000000000: at most 65536 layers"),
        (["--model", "gpt2", "--layers", "2000000000"], "gpt2: --layers 2000000000: at most "
         "65536 blocks"),
        (["--model", "gpt2", "--channels", "2000000000", "--heads", "1"],
         "gpt2: --channels 2000000000: at most 536870911 (the MLP's 4·C columns must fit in an "
         "int)"),
        (["--model", "gpt2", "--vocab", "2147483647"], "gpt2: --vocab 2147483647: at most "
         "2147483520 (llm.c pads the vocabulary to a multiple of 128, an int)"),
        (["--model", "mlp", "--hidden", "50000", "--micro-batch", "2000000000", "--layers",
          "65536"],
         "mlp: the activations of --micro-batch 2000000000 × --hidden 50000 × (--layers "
         "65536 + 3) floats do not fit in 64 bits"),
        (["--params", "1e15"], "--params 1e15: zeroc holds at most 562949953421312 parameters "
         "(2^49)"),
    )
    for args, want in cases:
        # refused before any size-proportional work: the unchecked sizes ran for minutes. The
        # bound is generous (a loaded machine starts a sanitizer build slowly); not a timing test.
        try:
            p = subprocess.run([H_.zeroc, "estimate", *args], capture_output=True, text=True,
                               timeout=90)
        except subprocess.TimeoutExpired:
            check(False, f"estimate {args} still ran after 90 s")
            continue
        # (a sanitizer build appends its summary after the message)
        errs = [l for l in p.stderr.splitlines() if l.startswith("zeroc:")]
        check(p.returncode == 1 and errs == [f"zeroc: error: {want}"] and p.stdout == "" and
              "Sanitizer" not in p.stderr and "runtime error" not in p.stderr,
              f"estimate {args}: {p.returncode} {p.stderr!r} {p.stdout[:300]!r}")
    # the largest shapes that fit still print sizes that add up, all positive, in 64 bits
    e = estimate("--model", "mlp", "--hidden", "16777215", "--layers", "2", "--ranks", "4",
                 "--mem-per-rank", "1G")
    psi = 2 * (16777215 * 16777215 + 16777215)
    check(e["params"] == psi, f"params {e['params']} != {psi}")
    s0 = e["rows"][0]
    check(s0["model_states"] == 16 * psi and s0["total_per_rank"] > 16 * psi,
          f"stage 0: {s0}")
    check(e["recommended_stage"] is None, f"recommended {e['recommended_stage']} for 2^49 bytes")
    # GPT-2: a micro-batch of 2^31 - 1 tokens fits the products; its activations are counted
    e = estimate("--model", "gpt2", "--micro-batch", "2097151", "--seq-len", "1024",
                 "--mem-per-rank", "1T")
    acts = {r["activations"] for r in e["rows"]}
    check(len(acts) == 1 and min(acts) > 2 ** 50 and e["recommended_stage"] is None,
          f"gpt2 huge batch: activations {acts}, recommended {e['recommended_stage']}")


def test_estimate_optimizer_as_train():
    """--optimizer sets the config's optimizer.type as train's does: an SGD config's momentum keeps
    its buffer (4 bytes a parameter; the estimate dropped it), equal to what train measures."""
    sgdm = write_config("sgd-momentum.json", {"optimizer": {"type": "SGD",
                                                            "params": {"momentum": 0.9}}})
    shape = ["--model", "mlp", "--hidden", 32, "--layers", 2, "--micro-batch", 4]
    rows = agree("mlp-sgd-momentum", [*shape, "--optimizer", "SGD", "--config", sgdm],
                 [*shape, "--optimizer", "sgd", "--config", sgdm], (1,), (0,))
    psi = 2 * (32 * 32 + 32)
    check(rows[1, 0]["optimizer"] == 4 * psi, f"SGD momentum: optimizer {rows[1, 0]['optimizer']}, "
          f"want {4 * psi}")
    plain = estimate(*shape, "--optimizer", "SGD")["rows"][0]
    check(plain["optimizer"] == 0, f"SGD without momentum: optimizer {plain['optimizer']}")


def test_estimate_adamw8bit():
    """AdamW8bit's optimizer state, estimated and measured to the byte: per moment 1 byte a
    parameter plus a 4-byte scale per 256-element block of each shard (blocks restart at every
    shard; stage 0 keeps all N shards' blocks), against AdamW's 4 bytes, fp32 and bf16 (+ the fp32
    master); 3 ranks, whose shards are not whole blocks."""
    shape = ["--model", "mlp", "--hidden", 64, "--layers", 2, "--micro-batch", 4,
             "--optimizer", "AdamW8bit"]
    unit = 64 * 64 + 64
    for dt in ("fp32", "bf16"):
        rows = agree(f"mlp-adam8-{dt}", [*shape, "--dtype", dt], [*shape, "--dtype", dt], (3,),
                     (0, 1, 3))
        shard = -(-unit // 3)
        per_shard = 2 * (shard + 4 * -(-shard // 256)) + (4 * shard if dt == "bf16" else 0)
        for stage in (0, 1, 3):
            want = 2 * per_shard * (3 if stage == 0 else 1)
            got = rows[3, stage]["optimizer"]
            check(got == want, f"AdamW8bit {dt} stage {stage}: optimizer {got}, want {want}")
        adamw = estimate(*shape[:-2], "--dtype", dt, "--ranks", 3)["rows"][1]["optimizer"]
        check(rows[3, 1]["optimizer"] < adamw, f"AdamW8bit {dt}: {rows[3, 1]['optimizer']} "
              f"bytes not below AdamW's {adamw}")


def test_cli_flags_named():
    """Errors name the flag and its value: train's --hidden 0, a missing --init (train, estimate,
    sample) or --data, --threads 0 (which meant all processors while the message said >= 1),
    detokenize's item positions (counted from 0, said so)."""
    data = tokens(H_.path("tok-named.bin"), 2000, 256)
    gpt2 = ["--model", "gpt2", "--layers", 1, "--channels", 32, "--heads", 2, "--vocab", 256,
            "--seq-len", 16, "--steps", 1]
    missing = H_.path("missing.bin")
    text = H_.path("named.txt")
    with open(text, "w") as f:
        f.write("some text\n")
    vocab = H_.path("tok3.bin")  # llm.c's tokenizer file: 3 tokens, a b c
    with open(vocab, "wb") as f:
        f.write(struct.pack("<4i", 20240328, 2, 3, 2) + bytes(1008) + b"\x01a\x01b\x01c")
    for cmd, needle, stdin in (
            (["train", "--model", "mlp", "--hidden", 0, "--steps", 1],
             "--hidden must be >= 1, got 0", None),
            (["train", *gpt2, "--data", data, "--init", missing], f"--init: {missing}", None),
            (["train", *gpt2, "--data", missing], f"--data: {missing}", None),
            (["sample", "--init", missing], f"--init: {missing}", None),
            (["estimate", "--init", missing], f"--init: {missing}", None),
            (["tokenize", "--vocab", H_.path("no-vocab"), "--threads", 0],
             "--threads must be >= 1, got 0 (leave it out to use all processors)", None),
            (["prepare", "--tokenizer", "gpt2", "--vocab", H_.path("no-vocab"), "--text", text,
              "--out", H_.path("named"), "--threads", 0],
             "--threads must be >= 1, got 0 (leave it out to use all processors)", None),
            (["detokenize", "--vocab", vocab], "standard input: item 1 ('x') is not a token id "
             "(items are numbered from 0)", b"0 x"),
            (["detokenize", "--vocab", vocab], "standard input: token 2 is 7, outside the "
             "vocabulary of", b"0 1 7")):
        p = subprocess.run([H_.zeroc, *map(str, cmd)], capture_output=True, timeout=120,
                           input=stdin or b"")
        err = p.stderr.decode(errors="replace")
        H_.check_sanitizers(cmd, subprocess.CompletedProcess(cmd, p.returncode, "", err))
        check(p.returncode == 1 and needle in err and err.count("zeroc: error") == 1,
              f"{cmd}: {p.returncode} {err!r}")


def test_one_process_commands():
    """estimate and ckpt run in one process without MPI (they did MPI_Init, whose start was most
    of their time): they work where MPI cannot start (an unknown transport named in the
    environment), and under `mpirun -np 2` only the launcher's rank 0 prints or writes."""
    ck = H_.path("one-process-ck")
    H_.run(1, "train", "--model", "mlp", "--hidden", 16, "--layers", 2, "--steps", 1,
           "--save-dir", ck)
    no_mpi = {**os.environ, "OMPI_MCA_pml": "no_such_transport"}
    out = H_.path("one-process.safetensors")
    for args, needle in ((["estimate", "--params", "1M", "--ranks", 2], "stage"),
                         (["ckpt", "inspect", ck], "step 1"),
                         (["ckpt", "export", ck, "--out", out], f"wrote {out}")):
        p = subprocess.run([H_.zeroc, *map(str, args)], capture_output=True, text=True,
                           timeout=60, env=no_mpi)
        H_.check_sanitizers(args, p)
        check(p.returncode == 0 and needle in p.stdout, f"{args} without MPI: {p.returncode} "
              f"{p.stdout[-300:]!r} {p.stderr[-600:]!r}")
    if os.path.exists(out):
        os.unlink(out)
    for args, needle in ((["estimate", "--params", "1M", "--ranks", 2], "(MiB = 2^20 bytes"),
                         (["ckpt", "export", ck, "--out", out], f"wrote {out}")):
        p = H_.run(2, *args)
        check(p.stdout.count(needle) == 1, f"mpirun -np 2 zeroc {args}: {p.stdout!r}")
    check(os.path.getsize(out) > 0, f"{out} not written")
    # an error (or --help) under mpirun: said once, by rank 0
    p = H_.run(2, "ckpt", "inspect", H_.path("no-such-ck"), ok=False)
    check(p.returncode != 0 and p.stderr.count("zeroc: error:") == 1,
          f"mpirun -np 2 zeroc ckpt inspect of nothing: {p.stderr!r}")
    p = H_.run(2, "ckpt", "--help")
    check(p.stdout.count("zeroc ckpt inspect DIR") == 1, f"ckpt --help on 2 ranks: {p.stdout!r}")


def test_estimate_advice_fits_flags():
    """When no stage fits --mem-per-rank, the advice names only what would shrink a rank's total:
    never --activation-checkpointing when it is given, nor more ranks (or offload) when a rank's
    activations alone exceed the limit; the micro-batch it would lower is named (it advised all
    three whatever the flags)."""
    gpt2 = ["--model", "gpt2", "--layers", 12, "--channels", 768]
    cases = (([*gpt2, "--activation-checkpointing", "--micro-batch", 64, "--mem-per-rank", "4G"],
              ["lower --micro-batch (64)"], ["--activation-checkpointing", "add ranks", "NVMe"]),
             ([*gpt2, "--mem-per-rank", "1G"], ["use --activation-checkpointing"],
              ["add ranks"]),
             (["--params", "10B", "--mem-per-rank", "4G"], ["add ranks", "offload to NVMe"],
              ["--activation-checkpointing", "--micro-batch"]),
             ([*gpt2, "--activation-checkpointing", "--micro-batch", 1, "--mem-per-rank", "1M"],
              ["activations alone exceed it"], ["add ranks", "--micro-batch ("]))
    for args, want, not_want in cases:
        p = subprocess.run([H_.zeroc, "estimate", *map(str, args)], capture_output=True,
                           text=True, timeout=60)
        line = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else ""
        check(p.returncode == 0 and line.startswith("no stage fits") and
              all(w in line for w in want) and not any(w in line for w in not_want),
              f"estimate {args}: {p.returncode} {line!r} {p.stderr[-300:]!r}")


def test_estimate_train_flags():
    """A train line's --stage and --nvme-path work in estimate (they were unknown flags): --stage
    marks its row and, with --mem-per-rank, says whether it fits (--json: stage_given);
    --nvme-path is accepted beside an NVMe offload and refused without one, as train refuses it;
    --stage 4 is refused naming the range."""
    mlp = ["--model", "mlp", "--hidden", 256, "--layers", 2]
    p = subprocess.run([H_.zeroc, "estimate", *map(str, mlp), "--stage", "3",
                        "--offload-optimizer", "nvme", "--nvme-path", H_.tmp, "--mem-per-rank",
                        "1G"],
                       capture_output=True, text=True, timeout=60)
    rows = [line for line in p.stdout.splitlines() if line.endswith("<- --stage")]
    check(p.returncode == 0 and len(rows) == 1 and rows[0].split()[0] == "3" and
          "--stage 3: " in p.stdout and "within --mem-per-rank 1G" in p.stdout,
          f"--stage 3: {p.returncode} {p.stdout[-600:]!r} {p.stderr!r}")
    j = H_.estimate(*mlp, "--stage", 2)
    check(j.get("stage_given") == 2, f"--json: stage_given {j.get('stage_given')}")
    for args, needle in ((["--stage", 4], "--stage must be 0 to 3, got 4"),
                         (["--nvme-path", H_.tmp], "--nvme-path applies only to an offload to "
                                                   "NVMe")):
        p = subprocess.run([H_.zeroc, "estimate", *map(str, mlp), *map(str, args)],
                           capture_output=True, text=True, timeout=60)
        check(p.returncode == 1 and needle in p.stderr, f"{args}: {p.returncode} {p.stderr!r}")


TESTS = [test_estimate_matches_mlp, test_estimate_adamw8bit, test_estimate_matches_persistence, test_estimate_matches_gpt2_tiny, test_estimate_matches_mixed,
         test_estimate_working_bf16_decoder,
         test_estimate_matches_gpt2_124m, test_analyze_experiment, test_estimate_bad_input, test_analyze_bad_input,
         test_estimate_huge_sizes, test_estimate_matches_zero_pp_hosts,
         test_estimate_matches_grad_accum, test_estimate_matches_reduce_bucket,
         test_estimate_matches_offload_ratio, test_estimate_optimizer_as_train,
         test_cli_flags_named, test_one_process_commands, test_estimate_advice_fits_flags,
         test_estimate_train_flags]

if __name__ == "__main__":
    H_.main(TESTS, sys.argv[3:])
