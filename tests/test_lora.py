#!/usr/bin/env python3
"""test_lora.py — LoRA fine-tuning (`zeroc train --lora-r R` / `--lora-init ADAPTER`): the frozen
base and the trained adapters held to an independent float64 reference, exact across stages, in
memory equal to the formula, and in PEFT's files out and back in (python3 stdlib only; prints
"N passed, N failed").

Usage: test_lora.py ZEROC_BINARY MPIRUN_SH [test-name ...]

The reference is tests/lora_reference.py (float64 PyTorch over tests/llama_reference.py's decoder,
no zeroc code): tests/fixtures/lora_tiny is a PEFT adapter (r 4, lora_alpha 8, all seven linear
modules, B non-zero) over tests/fixtures/llama_tiny, and tests/fixtures/lora_reference.json the 5
AdamW steps' losses of the adapters alone. Every step's loss must be within its relative tolerance
(1e-5) on 1 rank and on 2, at every stage, and the stages must end on the same weights, bit for
bit."""
import json
import os
import re
import shutil
import struct
import subprocess
import sys

from harness import Harness, read_safetensors

H_ = Harness(sys.argv[1], sys.argv[2])
check = H_.check
FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
with open(os.path.join(FIXTURES, "lora_reference.json")) as _f:
    REF = json.load(_f)
BASE = os.path.join(FIXTURES, REF["base"])
ADAPTER = os.path.join(FIXTURES, REF["adapter"])
TOKENS = os.path.join(FIXTURES, REF["tokens"])
TOL = REF["tolerance"]["loss_rel"]
with open(os.path.join(BASE, "config.json")) as _f:
    CFG = json.load(_f)


def run_args(n, **over):
    """The reference's flags for n ranks, the token file's path made absolute, with flags
    replaced (steps=1 sets --steps 1)."""
    run = [r for r in REF["runs"] if r["ranks"] == n][0]
    args = [TOKENS if a == REF["tokens"] else a for a in run["args"]]
    for k, v in over.items():
        args[args.index("--" + k) + 1] = str(v)
    return args


def unit_numels(r, modules):
    """llama_tiny's units as zeroc registers them with LoRA: embeddings, the blocks, ln_f (with
    the untied head), then one unit of adapters per block."""
    C, I, L = CFG["hidden_size"], CFG["intermediate_size"], CFG["num_hidden_layers"]
    nh, nkv = CFG["num_attention_heads"], CFG["num_key_value_heads"]
    hd = CFG.get("head_dim") or C // nh
    V = (CFG["vocab_size"] + 127) // 128 * 128
    q, kv = nh * hd, nkv * hd
    block = 2 * C + (q + 2 * kv) * C + C * q + 2 * I * C + C * I
    shapes = {"q_proj": (C, q), "k_proj": (C, kv), "v_proj": (C, kv), "o_proj": (q, C),
              "gate_proj": (C, I), "up_proj": (C, I), "down_proj": (I, C)}
    lora = sum(r * (shapes[m][0] + shapes[m][1]) for m in modules)
    base = [V * C] + [block] * L + [C + V * C]
    return base, [lora] * L


def expected_states(n, stage, base, lora, pbytes=4):
    """(params, grads, optimizer) bytes per rank: every unit's parameters, the adapters' gradients
    and AdamW state (with an fp32 master in bf16) only."""
    def shard(u):
        return -(-u // n)
    params = sum(pbytes * (shard(u) if stage == 3 else shard(u) * n) for u in base + lora)
    grads = sum(pbytes * (shard(u) if stage >= 2 else shard(u) * n) for u in lora)
    opt = sum((8 + (4 if pbytes == 2 else 0)) * (shard(u) if stage >= 1 else shard(u) * n)
              for u in lora)
    return params, grads, opt


def check_losses(what, rep):
    got, want = rep.get("loss") or [], REF["loss"]
    bad = [(i + 1, g, w) for i, (g, w) in enumerate(zip(got, want)) if not abs(g - w) <= TOL * abs(w)]
    check(len(got) == len(want) and not bad,
          f"{what}: losses (step, zeroc, reference) beyond {TOL:g} relative: {bad or got}")
    gn = rep.get("grad_norm") or []
    bad = [(i + 1, g, w) for i, (g, w) in enumerate(zip(gn, REF["grad_norm"]))
           if not (g is not None and abs(g - w) <= 1e-4 * abs(w))]
    check(len(gn) == len(REF["grad_norm"]) and not bad, f"{what}: grad_norm beyond 1e-4: {bad or gn}")


def test_lora_matches_reference():
    """The PEFT adapter over llama_tiny: every (ranks, stage) follows the float64 reference, the
    stages end on the same bits per number of ranks, the base is frozen (its gradients and
    optimizer state absent from the ledger, which equals the formula to the byte)."""
    base, lora = unit_numels(4, ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                                 "down_proj"])
    runs = H_.trim([(1, 0), (1, 3), (2, 0), (2, 1), (2, 2), (2, 3)], [(2, 0), (2, 3)])
    reps = {}
    for n, stage in runs:
        name = f"lora-n{n}-s{stage}"
        rep = reps[n, stage] = H_.run(n, "train", "--init", BASE, "--lora-init", ADAPTER,
                                      *run_args(n), "--stage", stage, "--report",
                                      H_.path(name + ".json")) and H_.report(name + ".json")
        check_losses(name, rep)
        check(rep["params"] == sum(base) + sum(lora),
              f"{name}: {rep['params']} parameters, want {sum(base) + sum(lora)}")
        want = expected_states(n, stage, base, lora)
        for r in rep["memory"]["ranks"]:
            got = (r["params"], r["grads"], r["optimizer"])
            check(got == want, f"{name}: rank memory (params, grads, optimizer) {got} != {want}")
    for n in sorted({n for n, _ in runs}):  # zeroc estimate says the same bytes
        est = H_.estimate("--init", BASE, "--lora-init", ADAPTER, "--ranks", n, "--micro-batch",
                          4 // n, "--seq-len", 16)
        check(est.get("trained_params") == sum(lora), f"estimate: trained {est.get('trained_params')}"
                                                      f", want {sum(lora)}")
        for row in est["rows"]:
            got = (row["params"], row["grads"], row["optimizer"])
            want = expected_states(n, row["stage"], base, lora)
            check(got == want, f"estimate N={n} stage {row['stage']}: {got} != {want}")
        shas = {s: reps[m, s]["weights_sha256"] for m, s in reps if m == n}
        check(len(set(shas.values())) == 1, f"LoRA on {n} rank(s): stages disagree {shas}")


def test_lora_bf16_offload_bitwise():
    """bf16 LoRA (fresh adapters: A drawn, B zero) on 2 ranks: stages 0-3 and stage 3 with the
    base and the optimizer state offloaded to NVMe end on the same bits; step 1's loss is the
    base model's own (B = 0 adds nothing), bit for bit."""
    args = ["--init", BASE, *run_args(2), "--dtype", "bf16", "--lora-r", "8",
            "--lora-targets", "q_proj,v_proj,down_proj"]
    plain = H_.run(2, "train", "--init", BASE, *run_args(2, steps=1), "--dtype", "bf16",
                   "--report", H_.path("bf16-full.json")) and H_.report("bf16-full.json")
    shas = {}
    for stage in H_.trim((0, 1, 2, 3), (0, 3)):
        rep = H_.run(2, "train", *args, "--stage", stage, "--report",
                     H_.path(f"bf16-s{stage}.json")) and H_.report(f"bf16-s{stage}.json")
        shas[stage] = rep["weights_sha256"]
        check(rep["loss"][0] == plain["loss"][0],
              f"bf16 stage {stage}: step 1 loss {rep['loss'][0]!r} != the base's "
              f"{plain['loss'][0]!r}")
        check(rep["loss"][-1] != rep["loss"][0], f"bf16 stage {stage}: nothing trained")
    swap = H_.path("swap")
    os.makedirs(swap, exist_ok=True)
    conf = H_.path("offload.json")
    with open(conf, "w") as f:
        json.dump({"zero_optimization": {
            "stage": 3,
            "offload_optimizer": {"device": "nvme", "nvme_path": swap},
            "offload_param": {"device": "nvme", "nvme_path": swap, "max_in_cpu": 0}},
            "bf16": {"enabled": True}}, f)
    rep = H_.run(2, "train", *args, "--config", conf, "--report",
                 H_.path("bf16-offload.json")) and H_.report("bf16-offload.json")
    shas["3 offload"] = rep["weights_sha256"]
    check(len(set(shas.values())) == 1, f"bf16 LoRA: stages disagree {shas}")
    # AdamW8bit keeps no moments for the frozen base; its checkpoint resumes to the same bits
    runs = {}
    q8 = ["--init", BASE, *run_args(2, steps=4), "--dtype", "bf16", "--lora-r", "8",
          "--lora-targets", "q_proj,v_proj,down_proj"]
    for name, extra in (("q8-whole", []),
                        ("q8-part", ["--save-dir", H_.path("q8-ck"), "--save-every", "2"]),
                        ("q8-resumed", ["--resume", H_.path("q8-ck/step-000002")])):
        rep = H_.run(2, "train", *q8, "--stage", 3, "--optimizer", "AdamW8bit", *extra,
                     "--report", H_.path(name + ".json")) and H_.report(name + ".json")
        runs[name] = rep["weights_sha256"]
    check(runs["q8-whole"] == runs["q8-resumed"], f"LoRA with AdamW8bit: resumed {runs}")


def test_peft_round_trip():
    """A LoRA run's checkpoint exported as a PEFT adapter holds zeroc's adapter values under PEFT's
    names; read back with --lora-init (learning rate 0) it gives the run's weights bit for bit;
    its adapter_config.json says r, lora_alpha and target_modules; the base-model formats refuse
    to drop the adapters. The checkpoint holds the adapters alone (format 4: the base's units
    "stored": false, its digest), so the merged export reads the base from --base, checked
    against that digest."""
    sv, ad, mine = H_.path("rt-save"), H_.path("rt-adapter"), H_.path("rt-all.safetensors")
    H_.run(1, "train", "--init", BASE, *run_args(1), "--lora-r", "4", "--lora-alpha", "16",
           "--lora-targets", "all-linear", "--save-dir", sv, "--save-every", "5", "--report",
           H_.path("rt.json"), "--save-weights", mine)
    rep = H_.report("rt.json")
    H_.run(1, "ckpt", "export", sv, "--format", "peft", "--out", ad)
    conf = json.load(open(os.path.join(ad, "adapter_config.json")))
    check(conf["r"] == 4 and conf["lora_alpha"] == 16 and conf["peft_type"] == "LORA" and
          sorted(conf["target_modules"]) == sorted(["q_proj", "k_proj", "v_proj", "o_proj",
                                                    "gate_proj", "up_proj", "down_proj"]),
          f"adapter_config.json: {conf}")
    p = H_.run(1, "ckpt", "export", sv, "--out", H_.path("rt-x.safetensors"), ok=False)
    check(p.returncode == 1 and "not every parameter" in p.stderr and "--format peft" in p.stderr,
          f"export of every parameter from an adapters-only checkpoint: {p.stderr.strip()!r}")
    ours, peft = read_safetensors(mine), read_safetensors(os.path.join(ad,
                                                                       "adapter_model.safetensors"))
    want = {}
    for name, t in ours.items():
        if ".lora." not in name:
            continue
        layer, module, which = name.split(".")[1], name.split(".")[3], name.split(".")[4]
        sect = "self_attn" if module in ("q_proj", "k_proj", "v_proj", "o_proj") else "mlp"
        want[f"base_model.model.model.layers.{layer}.{sect}.{module}.lora_{which}.weight"] = t
    check(set(peft) == set(want) and len(want) == 2 * 7 * CFG["num_hidden_layers"],
          f"PEFT tensors {sorted(peft)[:3]}... != {sorted(want)[:3]}...")
    check(all(peft[k] == want[k] for k in want if k in peft), "PEFT tensors differ from zeroc's")
    back = H_.run(1, "train", "--init", BASE, "--lora-init", ad, *run_args(1, lr=0, steps=1),
                  "--report", H_.path("rt-back.json")) and H_.report("rt-back.json")
    check(back["initial_weights_sha256"] == rep["weights_sha256"],
          f"--lora-init of the export: weights {back['initial_weights_sha256']} != the run's "
          f"{rep['weights_sha256']}")
    for fmt in ("hf", "llmc"):
        p = H_.run(1, "ckpt", "export", sv, "--format", fmt, "--out", H_.path("rt-" + fmt),
                   ok=False)
        check(p.returncode != 0 and "--merge-lora" in p.stderr and "--format peft" in p.stderr,
              f"export --format {fmt} of a LoRA run: rc {p.returncode} {p.stderr.strip()!r}")
    # merged: each adapted weight W + (alpha/r) B A within one fp32 rounding, the rest as stored
    mg = H_.path("rt-merged")
    p = H_.run(1, "ckpt", "export", sv, "--format", "hf", "--merge-lora", "--out", mg, ok=False)
    check(p.returncode == 1 and "needs --base" in p.stderr, f"merge without --base: {p.stderr!r}")
    H_.run(1, "ckpt", "export", sv, "--format", "hf", "--merge-lora", "--base", BASE, "--out", mg)
    merged = read_safetensors(os.path.join(mg, "model.safetensors"))
    C, nh = CFG["hidden_size"], CFG["num_attention_heads"]
    hd = CFG.get("head_dim") or C // nh
    q = nh * hd
    worst, moved = 0.0, 0
    for layer in range(CFG["num_hidden_layers"]):
        for module, zname, row0, rows in (("self_attn.q_proj", "qkvw", 0, q),
                                          ("mlp.down_proj", "fcprojw", 0, C)):
            w = ours[f"h.{layer}.{zname}"]
            short = module.split(".")[1]
            A, B = ours[f"h.{layer}.lora.{short}.A"], ours[f"h.{layer}.lora.{short}.B"]
            cols = len(A) // 4
            got = merged[f"model.layers.{layer}.{module}.weight"]
            for i in range(rows):
                for j in range(cols):
                    want = w[(row0 + i) * cols + j] + (16 / 4) * sum(
                        B[i * 4 + c] * A[c * cols + j] for c in range(4))
                    worst = max(worst, abs(got[i * cols + j] - want) / max(abs(want), 1e-30))
                    moved += got[i * cols + j] != w[(row0 + i) * cols + j]
    check(worst < 2 ** -22 and moved > 0, f"merged weights: worst relative error {worst:.3g}, "
                                           f"{moved} moved")
    check(merged["model.norm.weight"] == ours["lnfw"], "merged export: model.norm changed")
    # the merged model and the base with the exported adapter sample the same greedy tokens
    outs = [H_.run(1, "sample", *init, "--prompt", "1,2,3", "--length", "12", "--top-k", "1")
            .stdout.strip().splitlines()[-1]
            for init in (["--init", mg], ["--init", BASE, "--lora-init", ad])]
    check(outs[0] == outs[1], f"greedy samples: merged {outs[0]!r} != base + adapter {outs[1]!r}")


def test_lora_config_section():
    """The config's lora section (PEFT's LoraConfig names; target_modules a list or one string)
    trains what the flags do, and the flags win over it; its settings are in the logged
    config."""
    flags = H_.run(1, "train", "--init", BASE, *run_args(1, steps=2), "--lora-r", "4",
                   "--lora-alpha", "16", "--lora-targets", "q_proj,down_proj", "--report",
                   H_.path("cf-flags.json"))
    shas = [H_.report("cf-flags.json")["weights_sha256"]]
    for tm, over in ((["q_proj", "down_proj"], []), ("all-linear", ["--lora-targets",
                                                                    "q_proj,down_proj"])):
        conf = H_.path("cf.json")
        with open(conf, "w") as f:
            json.dump({"lora": {"r": 4, "lora_alpha": 16, "lora_dropout": 0.0,
                                "target_modules": tm, "bias": "none"}}, f)
        p = H_.run(1, "train", "--init", BASE, *run_args(1, steps=2), "--config", conf, *over,
                   "--report", H_.path("cf.json.out"))
        shas.append(H_.report("cf.json.out")["weights_sha256"])
        check('"lora":{"r":4,"lora_alpha":16,"lora_dropout":0,"target_modules":' in p.stdout,
              f"the logged config has no lora section: {p.stdout[:400]!r}")
    check(len(set(shas)) == 1, f"config section against flags: {shas}")
    check("lora: r 4, lora_alpha 16" in flags.stdout and "q_proj, down_proj" in flags.stdout,
          f"train did not say what LoRA trains: {flags.stdout[:300]!r}")
    # estimate takes train's LoRA flags: the same bytes whatever alpha and dropout, both checked
    ests = [H_.estimate("--init", BASE, "--seq-len", 16, "--lora-r", 4, *extra)["rows"]
            for extra in ([], ["--lora-alpha", 16, "--lora-dropout", 0.1])]
    check(ests[0] == ests[1], "estimate: --lora-alpha or --lora-dropout changed the bytes")
    p = subprocess.run([H_.zeroc, "estimate", "--init", BASE, "--lora-r", "4", "--lora-dropout",
                        "1"], capture_output=True, text=True, timeout=60)
    check(p.returncode != 0 and "lora.lora_dropout must be < 1" in p.stderr,
          f"estimate --lora-dropout 1: {p.returncode} {p.stderr!r}")


def write_adapter(d, config, tensors=None):
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "adapter_config.json"), "w") as f:
        json.dump(config, f)
    src = os.path.join(ADAPTER, "adapter_model.safetensors")
    data = open(src, "rb").read()
    if tensors:
        data = tensors(data)
    with open(os.path.join(d, "adapter_model.safetensors"), "wb") as f:
        f.write(data)


def test_lora_refused():
    """Each bad LoRA input is refused before a step, naming the flag, key or tensor."""
    good = json.load(open(os.path.join(ADAPTER, "adapter_config.json")))

    def refused(what, want, *args):  # as a user runs one process: no mpirun (its abort: 2.5 s)
        cmd = [H_.zeroc, "train", *map(str, args)]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                           env={**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"})
        H_.check_sanitizers(cmd, p)
        check(p.returncode != 0 and want in p.stderr and "step " not in p.stdout,
              f"{what}: rc {p.returncode}, stderr {p.stderr.strip()[-300:]!r}")

    base = ["--init", BASE, *run_args(1)]
    refused("unknown module", "'qkv_proj' is not a linear layer", *base, "--lora-r", "4",
            "--lora-targets", "q_proj,qkv_proj")
    refused("GPT-2 name on Llama", "'c_attn'", *base, "--lora-r", "4", "--lora-targets", "c_attn")
    refused("r -1", "lora.r must be >= 0, got -1", *base, "--lora-r", "-1")
    refused("dropout 1", "lora.lora_dropout must be < 1", *base, "--lora-r", "4",
            "--lora-dropout", "1")
    refused("mlp model", "--model mlp has none", "--model", "mlp", "--lora-r", "4")
    conf = H_.path("mlp-lora.json")
    with open(conf, "w") as f:
        json.dump({"lora": {"r": 4}}, f)
    refused("mlp model, config", "--model mlp has none", "--model", "mlp", "--config", conf)
    with open(conf, "w") as f:
        json.dump({"lora": {"r": 4, "bias": "all"}}, f)
    refused("lora.bias all", "lora.bias is \"all\"", *base, "--config", conf)
    refused("flags beside --lora-init", "drop --lora-r", *base, "--lora-init", ADAPTER,
            "--lora-r", "4")
    for key, value, want in (("use_dora", True, "use_dora"), ("bias", "all", "bias"),
                             ("r", 0, "r must be"), ("target_modules", ["c_fc"], "'c_fc'"),
                             ("rank_pattern", {"q_proj": 8}, "rank_pattern"),
                             ("peft_type", "IA3", "peft_type")):
        d = H_.path(f"bad-{key}")
        write_adapter(d, {**good, key: value})
        refused(f"adapter_config {key}", want, *base, "--lora-init", d)
    d = H_.path("bad-r")  # r 8 in the config: every tensor's shape is wrong
    write_adapter(d, {**good, "r": 8})
    refused("tensor shapes", "expected [8,", *base, "--lora-init", d)
    d = H_.path("bad-module")  # the file has o_proj's adapters, the config leaves o_proj out
    write_adapter(d, {**good, "target_modules": ["q_proj", "k_proj", "v_proj", "gate_proj",
                                                 "up_proj", "down_proj"]})
    refused("tensor of a module not targeted", "o_proj.lora_A.weight' is not an adapter", *base,
            "--lora-init", d)


def test_gpt2_lora():
    """GPT-2 with adapters on c_attn, c_proj and c_fc over a base from an llm.c file: stages 0
    and 3 on 2 ranks, and stage 3 with activation checkpointing, end on the same bits, with
    dropout (its masks keyed by step, block and module); PEFT's names are GPT-2's; the merged model in Hugging Face's (Conv1D, transposed)
    and llm.c's formats and the base with the adapter sample the same greedy tokens."""
    data = H_.text_tokens()[0]
    shape = ["--model", "gpt2", "--layers", "2", "--channels", "32", "--heads", "4", "--vocab",
             "256", "--seq-len", "16", "--data", data, "--micro-batch", "2"]
    base = H_.path("g-base.bin")
    H_.run(1, "train", *shape, "--steps", "2", "--save-final", base, "--save-dir",
           H_.path("g-base-ck"), "--save-every", "2")
    args = [*shape, "--init", base, "--steps", "4", "--lora-r", "2", "--lora-targets",
            "c_attn,c_proj,c_fc", "--lora-dropout", "0.1", "--lr", "0.05"]
    shas = []
    ours = H_.path("g-all.safetensors")
    for stage, extra in ((0, []), (3, ["--save-weights", ours]),
                         (3, ["--activation-checkpointing"])):
        name = f"g-s{stage}{'-ck' if '--activation-checkpointing' in extra else ''}"
        rep = H_.run(2, "train", *args, "--stage", stage, *extra, "--save-dir", H_.path(name),
                     "--save-every", "4", "--report", H_.path(name + ".json")) and \
            H_.report(name + ".json")
        shas.append(rep["weights_sha256"])
    check(len(set(shas)) == 1, f"GPT-2 LoRA with dropout: stage 0, stage 3 and stage 3 with "
                               f"activation checkpointing (the recompute redraws the same masks) "
                               f"disagree: {shas}")
    ad = H_.path("g-adapter")
    H_.run(1, "ckpt", "export", H_.path("g-s3"), "--format", "peft", "--out", ad)
    names = sorted(read_safetensors(os.path.join(ad, "adapter_model.safetensors")))
    want = sorted(f"base_model.model.transformer.h.{l}.{m}.lora_{w}.weight" for l in range(2)
                  for m in ("attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj") for w in "AB")
    check(names == want, f"GPT-2 PEFT names {names} != {want}")
    conf = json.load(open(os.path.join(ad, "adapter_config.json")))
    check(conf["fan_in_fan_out"] is True and conf["lora_dropout"] == 0.1,
          f"GPT-2 adapter_config.json {conf}")
    # the checkpoint holds the adapters: the merge reads the base from --base, a Hugging Face
    # model (the llm.c base exported as one: the same values, so the same digest)
    hf, llmc, hf_base = H_.path("g-merged-hf"), H_.path("g-merged.bin"), H_.path("g-base-hf")
    H_.run(1, "ckpt", "export", H_.path("g-base-ck"), "--format", "hf", "--out", hf_base)
    p = H_.run(1, "ckpt", "export", H_.path("g-s3"), "--format", "hf", "--merge-lora", "--base",
               base, "--out", hf, ok=False)
    check(p.returncode == 1 and "expected a Hugging Face model" in p.stderr,
          f"--base of an llm.c file: {p.stderr.strip()!r}")
    H_.run(1, "ckpt", "export", H_.path("g-s3"), "--format", "hf", "--merge-lora", "--base",
           hf_base, "--out", hf)
    # Conv1D's [in, out]: the merged c_attn is (W + (alpha/r) B A) transposed
    ours = read_safetensors(ours)
    merged = read_safetensors(os.path.join(hf, "model.safetensors"))
    key = [k for k in merged if k.endswith("h.1.attn.c_attn.weight")][0]
    W, A, B = ours["h.1.qkvw"], ours["h.1.lora.c_attn.A"], ours["h.1.lora.c_attn.B"]
    C, r = 32, 2
    worst = max(abs(merged[key][j * 3 * C + i] - (W[i * C + j] + (8 / r) * sum(
        B[i * r + c] * A[c * C + j] for c in range(r)))) for i in range(3 * C) for j in range(C))
    check(worst < 1e-6, f"GPT-2 merged c_attn: worst |error| {worst:.3g}")
    H_.run(1, "ckpt", "export", H_.path("g-s3"), "--format", "llmc", "--merge-lora", "--base",
           hf_base, "--out", llmc)
    outs = [subprocess.run([H_.zeroc, "sample", *init, "--prompt", "the", "--length", "24",
                            "--top-k", "1"], capture_output=True, check=True).stdout
            for init in (["--init", hf], ["--init", llmc], ["--init", base, "--lora-init", ad],
                         ["--init", base])]
    check(outs[0] == outs[1] == outs[2], f"greedy samples: merged hf {outs[0]!r}, merged llmc "
                                         f"{outs[1]!r}, base + adapter {outs[2]!r}")
    check(outs[3] != outs[2], f"the adapter changed no greedy token: {outs[3]!r}")
    p = H_.run(1, "ckpt", "export", H_.path("g-base-ck"), "--format", "hf", "--merge-lora",
               "--out", H_.path("x"), ok=False)
    check(p.returncode != 0 and "has no LoRA adapters" in p.stderr,
          f"--merge-lora of a run without adapters: rc {p.returncode} {p.stderr.strip()!r}")


def test_lora_checkpoint_holds_adapters():
    """A LoRA run's checkpoint holds what was trained: the base's units are "stored": false
    (format 4) and the shard files hold the adapters' parameters and AdamW moments only, to the
    byte; base_digest records the base. A resume on the same base (at another stage) ends on the
    uninterrupted run's bits; a base one bf16 step away in one element is refused, by resume
    and by the merged export's --base, naming both digests."""
    ck = H_.path("ad-ck")
    whole = H_.run(2, "train", "--init", BASE, *run_args(2), "--lora-r", "2", "--stage", "3",
                   "--report", H_.path("ad-whole.json")) and H_.report("ad-whole.json")
    H_.run(2, "train", "--init", BASE, *run_args(2, steps=2), "--lora-r", "2", "--stage", "3",
           "--save-dir", ck, "--save-every", "2")
    step = os.path.join(ck, "step-000002")
    man = json.load(open(os.path.join(step, "manifest.json")))
    base, lora = unit_numels(2, ["q_proj", "v_proj"])
    units = man["units"]
    check(man["format_version"] == 4 and len(units) == len(base) + len(lora) and
          all(u.get("stored") is False for u in units[:len(base)]) and
          all("stored" not in u for u in units[len(base):]) and
          re.fullmatch("[0-9a-f]{32}", man.get("base_digest", "")),
          f"manifest of a LoRA checkpoint: format {man['format_version']}, units "
          f"{[(u['name'], u.get('stored')) for u in units]}, digest {man.get('base_digest')!r}")
    for r in range(2):  # rank r owns [r·S, min((r+1)·S, Ψ)) of each adapter unit: 3 fp32 arrays
        owned = sum(max(0, min((r + 1) * -(-u // 2), u) - r * -(-u // 2)) for u in lora)
        size = os.path.getsize(os.path.join(step, f"rank-{r:05d}.bin"))
        check(size == 32 + 3 * 4 * owned, f"rank {r}'s shard: {size} bytes, the adapters' "
                                          f"parameters and moments are {32 + 12 * owned}")
    res = H_.run(2, "train", "--init", BASE, *run_args(2), "--lora-r", "2", "--stage", "1",
                 "--resume", step, "--report", H_.path("ad-res.json")) and \
        H_.report("ad-res.json")
    check(res["weights_sha256"] == whole["weights_sha256"],
          f"resumed at stage 1 on the same base: {res['weights_sha256']} != the uninterrupted "
          f"run's {whole['weights_sha256']}")
    # another base: one element of the file one bf16 step away
    other = H_.path("ad-other")
    shutil.copytree(BASE, other)
    path = os.path.join(other, "model.safetensors")
    with open(path, "r+b") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        f.seek(8 + n + 2)  # the first value's bits 16..23: bit 16 is bf16's last mantissa bit
        b = f.read(1)[0]
        f.seek(8 + n + 2)
        f.write(bytes([b ^ 1]))
    p = H_.run(2, "train", "--init", other, *run_args(2), "--lora-r", "2", "--resume", step,
               ok=False)
    check(p.returncode == 1 and "another base" in p.stderr and man["base_digest"] in p.stderr,
          f"resume on another base: rc {p.returncode} {p.stderr.strip()[-400:]!r}")
    p = H_.run(1, "ckpt", "export", step, "--format", "hf", "--merge-lora", "--base", other,
               "--out", H_.path("ad-merged"), ok=False)
    check(p.returncode == 1 and "another base" in p.stderr and man["base_digest"] in p.stderr,
          f"merged export on another base: rc {p.returncode} {p.stderr.strip()!r}")
    p = H_.run(1, "ckpt", "export", step, "--format", "peft", "--base", BASE,
               "--out", H_.path("ad-peft"), ok=False)
    check(p.returncode == 1 and "--base is for --merge-lora" in p.stderr, f"--base: {p.stderr!r}")


TESTS = [test_lora_matches_reference, test_lora_bf16_offload_bitwise, test_peft_round_trip,
         test_lora_refused, test_gpt2_lora, test_lora_config_section,
         test_lora_checkpoint_holds_adapters]

if __name__ == "__main__":
    H_.main(TESTS, sys.argv[3:])
