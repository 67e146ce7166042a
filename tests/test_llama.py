#!/usr/bin/env python3
"""test_llama.py — `zeroc train --init DIR` on Hugging Face Llama-family directories (config.json
+ safetensors, one file or shards with their index), held to the independent float64 reference
(python3 stdlib only; prints "N passed, N failed").

Usage: test_llama.py ZEROC_BINARY MPIRUN_SH [test-name ...]

The fixtures and the expected numbers come from tests/llama_reference.py, a from-scratch float64
PyTorch decoder (no zeroc code, no transformers): tests/fixtures/llama_tiny (a Llama 3 shape:
grouped-query attention, head_dim != hidden/heads, llama3 RoPE scaling, untied head),
tests/fixtures/qwen2_tiny (a Qwen2 shape: q/k/v biases, tied embeddings, two shards + index),
tests/fixtures/llama_wide (one layer of an MLP 4608 wide, which zeroc computes in column blocks),
tests/fixtures/llama_tokens.bin and tests/fixtures/llama_reference.json (the 5 AdamW steps' losses
and the flags that give them; tests/fixtures/llama_reference.md says what they assume). No
--model: the architecture is config.json's. Every step's loss must be within the reference's
relative tolerance (1e-5) on 1 rank and on 2 (the same global batch), at stages 0 and 3, and the
stages must end on the same weights, bit for bit, on the same number of ranks. What zeroc would
compute differently from transformers (a sliding window in use, another RoPE scaling, another
activation, experts, biases the family does not have, another architecture) is refused naming
the config.json key, before a step."""
import hashlib
import json
import os
import shutil
import struct
import sys

from harness import Harness

H_ = Harness(sys.argv[1], sys.argv[2])
check = H_.check
FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
with open(os.path.join(FIXTURES, "llama_reference.json")) as _f:
    REF = json.load(_f)
TOKENS = os.path.join(FIXTURES, REF["tokens"])
TOL = REF["tolerance"]["loss_rel"]


def run_args(n):
    """The reference's flags for n ranks (llama_reference.json "runs"), the token file's path
    made absolute."""
    run = [r for r in REF["runs"] if r["ranks"] == n][0]
    return [TOKENS if a == REF["tokens"] else a for a in run["args"]]


def train(init, name, n, stage, *extra, ok=True):
    """The reference's run of `init` on n ranks at `stage`; its report (or the process when not
    ok)."""
    p = H_.run(n, "train", "--init", init, *run_args(n), "--stage", stage, "--report",
               H_.path(name + ".json"), *extra, ok=ok)
    return H_.report(name + ".json") if ok else p


def check_losses(what, rep, case):
    want = REF["cases"][case]["loss"]
    got = rep.get("loss") or []
    if len(got) != len(want):
        check(False, f"{what}: {len(got)} losses, want {len(want)}: {got}")
        return
    bad = [(i + 1, g, w) for i, (g, w) in enumerate(zip(got, want))
           if not abs(g - w) <= TOL * abs(w)]
    worst = max(abs(g - w) / abs(w) for g, w in zip(got, want))
    print(f"  {what}: max relative loss difference {worst:.2e}", flush=True)
    check(not bad, f"{what}: steps (step, zeroc, reference) beyond {TOL:g} relative: {bad}")
    # the gradient norms too, looser: float32 gradients against float64 (for the diagnosis of a
    # loss mismatch: a wrong gradient shows here from step 1 on)
    gn, wn = rep.get("grad_norm") or [], REF["cases"][case]["grad_norm"]
    bad = [(i + 1, g, w) for i, (g, w) in enumerate(zip(gn, wn))
           if not (g is not None and abs(g - w) <= 1e-4 * abs(w))]
    check(len(gn) == len(wn) and not bad, f"{what}: grad_norm (step, zeroc, reference) beyond "
                                          f"1e-4 relative: {bad or gn}")
    lr = REF["adamw"]["lr"]
    check(all(x == lr for x in rep.get("lr") or [None]), f"{what}: lr {rep.get('lr')}, want {lr} "
                                                          "every step")


def matches_reference(case):
    """Every (ranks, stage) of the matrix follows the reference; stage 0 and stage 3 end on the
    same weights (and start on the same) on the same number of ranks."""
    d = os.path.join(FIXTURES, REF["cases"][case]["dir"])
    # the sanitizer pass: 2 ranks (the collectives and the shards' code), both stages
    runs = H_.trim([(1, 0), (1, 3), (2, 0), (2, 3)], [(2, 0), (2, 3)])
    reps = {}
    for n, stage in runs:
        name = f"{case}-n{n}-s{stage}"
        reps[n, stage] = rep = train(d, name, n, stage)
        check(rep.get("world_size") == n and rep.get("stage") == stage,
              f"{name}: report says world_size {rep.get('world_size')} stage {rep.get('stage')}")
        check_losses(name, rep, case)
    for n in sorted({n for n, _ in runs}):
        a, b = reps.get((n, 0)), reps.get((n, 3))
        if a and b:
            for key in ("initial_weights_sha256", "weights_sha256"):
                check(a[key] == b[key], f"{case} on {n} rank(s): {key} stage 0 {a[key]} != "
                                        f"stage 3 {b[key]}")


def test_llama_matches_reference():
    """llama_tiny: GQA, explicit head_dim, llama3 RoPE scaling, untied lm_head, one file."""
    matches_reference("llama_tiny")


def test_qwen2_matches_reference():
    """qwen2_tiny: q/k/v biases, tied embeddings, default RoPE, two shards and their index."""
    matches_reference("qwen2_tiny")


def test_wide_mlp_matches_reference():
    """llama_wide: an MLP 4608 wide, which zeroc computes in blocks of 1024 columns (and one of
    512) — gate, up and SwiGLU per block, the output product summed block after block."""
    matches_reference("llama_wide")


def variant(case, name, **over):
    """A copy of fixture `case` (its weight files as they are) with config.json's keys replaced
    by `over` (None: the key removed)."""
    src = os.path.join(FIXTURES, REF["cases"][case]["dir"])
    d = H_.path(name)
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(src):
        if f != "config.json":
            shutil.copy(os.path.join(src, f), d)
    with open(os.path.join(src, "config.json")) as f:
        cfg = json.load(f)
    for k, v in over.items():
        if v is None:
            cfg.pop(k, None)
        else:
            cfg[k] = v
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    return d


def test_rope_spellings():
    """The spellings transformers reads for the same RoPE compute the same run as llama_tiny's,
    bit for bit: the newer `rope_parameters` (rope_theta inside it, no rope_scaling) and the
    older "type" in place of "rope_type"."""
    with open(os.path.join(FIXTURES, "llama_tiny", "config.json")) as f:
        cfg = json.load(f)
    sc = dict(cfg["rope_scaling"])
    params = {**sc, "rope_theta": cfg["rope_theta"]}
    old = {k if k != "rope_type" else "type": v for k, v in sc.items()}
    cases = {"rope-parameters": dict(rope_parameters=params, rope_theta=None, rope_scaling=None),
             "rope-type-key": dict(rope_scaling=old)}
    cases = {k: cases[k] for k in H_.trim(cases, ("rope-parameters",))}
    base = train(os.path.join(FIXTURES, "llama_tiny"), "spell-base", 1, 0)
    for name, over in cases.items():
        rep = train(variant("llama_tiny", name, **over), name, 1, 0)
        check_losses(name, rep, "llama_tiny")
        check(rep["weights_sha256"] == base["weights_sha256"] and rep["loss"] == base["loss"],
              f"{name}: not the same run as config.json's rope_theta + rope_scaling")


def refused(p, want, what):
    """Refused before a step, the error naming every string of want (in any case: a model type
    may be spelled as config.json's model_type or its architecture's name)."""
    err = p.stderr.lower()
    check(p.returncode != 0 and all(w.lower() in err for w in want) and "step " not in p.stdout,
          f"{what}: want {want} in the error, before a step; got {p.returncode}: "
          f"{p.stderr[-500:]}")


def test_model_flag_refused():
    """A --model beside a Llama-family directory is refused (the architecture is config.json's),
    naming the flag and the directory's model type."""
    cases = [("llama_tiny", "gpt2", "llama"), ("qwen2_tiny", "gpt2", "qwen2"),
             ("llama_tiny", "mlp", "llama")]
    for case, model, kind in cases:
        d = os.path.join(FIXTURES, case)
        p = train(d, f"flag-{case}-{model}", 1, 0, "--model", model, ok=False)
        refused(p, ["--model", kind], f"--model {model} --init {case}")


def test_save_final_refused_first():
    """--save-final (llm.c's format: GPT-2 only) beside a Llama-family --init is refused before
    the first step, saying how to save instead (it failed after the last step)."""
    p = train(os.path.join(FIXTURES, "llama_tiny"), "save-final", 1, 0, "--save-final",
              H_.path("final.bin"), ok=False)
    refused(p, ["--save-final", "llama", "--format hf"], "--save-final on a llama")


def test_unsupported_config_refused():
    """config.json keys whose model zeroc does not compute are refused naming the key (and the
    value), before a step: a sliding window in use (Mistral's sliding_window; Qwen2's
    use_sliding_window with layers at or above max_window_layers), a RoPE scaling other than
    llama3 (under either spelling), an activation other than silu, experts, Llama's mlp_bias or
    attention_bias (biases on o_proj / the MLP that Llama-family decoders here do not have), an
    architecture that is not Llama, Qwen2 or Mistral."""
    yarn = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64}
    cases = [
        ("qwen2_tiny", dict(use_sliding_window=True, sliding_window=8, max_window_layers=0),
         ["use_sliding_window"]),
        ("llama_tiny", dict(architectures=["MistralForCausalLM"], model_type="mistral",
                            rope_scaling=None, rope_theta=1e6, sliding_window=8),
         ["sliding_window"]),
        ("llama_tiny", dict(rope_scaling=yarn), ["rope_scaling", "yarn"]),
        ("llama_tiny", dict(rope_scaling=None, rope_theta=None,
                            rope_parameters={**yarn, "rope_theta": 500000.0}),
         ["rope_parameters", "yarn"]),
        ("llama_tiny", dict(hidden_act="gelu_pytorch_tanh"), ["hidden_act", "gelu_pytorch_tanh"]),
        ("llama_tiny", dict(num_local_experts=4, num_experts_per_tok=2), ["num_local_experts"]),
        ("llama_tiny", dict(mlp_bias=True), ["mlp_bias"]),
        ("llama_tiny", dict(attention_bias=True), ["attention_bias"]),
        ("llama_tiny", dict(architectures=["Phi3ForCausalLM"], model_type="phi3"), ["phi3"]),
    ]
    for i, (case, over, want) in enumerate(cases):
        d = variant(case, f"bad{i}", **over)
        p = train(d, f"bad{i}", 1, 0, ok=False)
        refused(p, want, f"case {i} ({case} with {over})")


def safetensors_tensors(d):
    """{name: (shape, raw bytes)} over every .safetensors file of directory d."""
    out = {}
    for fn in sorted(os.listdir(d)):
        if not fn.endswith(".safetensors"):
            continue
        with open(os.path.join(d, fn), "rb") as f:
            raw = f.read()
        n = int.from_bytes(raw[:8], "little")
        for k, v in json.loads(raw[8:8 + n]).items():
            if k != "__metadata__":
                a, b = v["data_offsets"]
                out[k] = (v["shape"], raw[8 + n + a:8 + n + b])
    return out


def test_engine_features_bitwise():
    """Every engine feature on the Llama family, in bf16 on 2 ranks: stages 0 and 3, activation
    checkpointing and NVMe offload of both states end on the same weights bit for bit; a
    checkpoint saved at step 3 resumes to the same final weights, also resharded to stage 0."""
    init = os.path.join(FIXTURES, "qwen2_tiny")
    base = ["--dtype", "bf16"]
    nvme = H_.path("nvme")
    os.makedirs(nvme, exist_ok=True)
    runs = {"s0": (0, []), "s3": (3, []), "ckpt": (3, ["--activation-checkpointing"]),
            "offload": (3, ["--offload-optimizer", "nvme", "--offload-param", "nvme",
                            "--nvme-path", nvme]),
            "saved": (3, ["--save-dir", H_.path("saves"), "--save-every", 3])}
    runs = {k: runs[k] for k in H_.trim(runs, ("s3", "offload", "saved"))}
    got = {k: train(init, "feat-" + k, 2, st, *base, *ex)["weights_sha256"]
           for k, (st, ex) in runs.items()}
    first = got["s3"]
    for k, sha in got.items():
        check(sha == first, f"{k}: weights {sha} != stage 3's {first}")
    for st in H_.trim([3, 0], [0]):
        rep = train(init, f"feat-resume{st}", 2, st, *base, "--resume",
                    os.path.join(H_.path("saves"), "step-000003"))
        check(rep["weights_sha256"] == first,
              f"resumed at stage {st}: {rep['weights_sha256']} != {first}")


def with_tensor(src, name, dst, tensor, values):
    """A copy of directory src whose model.safetensors also holds `tensor` (F32, 1-D)."""
    shutil.copytree(src, dst)
    path = os.path.join(dst, "model.safetensors")
    with open(path, "rb") as f:
        raw = f.read()
    n = int.from_bytes(raw[:8], "little")
    head, data = json.loads(raw[8:8 + n]), raw[8 + n:]
    extra = b"".join(struct.pack("<f", v) for v in values)
    head[tensor] = {"dtype": "F32", "shape": [len(values)],
                    "data_offsets": [len(data), len(data) + len(extra)]}
    text = json.dumps(head).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little") + text + data + extra)
    return dst


def test_rotary_buffers_ignored():
    """Older Llama files carry each layer's rotary frequencies (….self_attn.rotary_emb.inv_freq):
    transformers recomputes them from config.json, and so does zeroc — the same weights load as
    from the file without them (a 20-character suffix compared as 21 refused them)."""
    src = os.path.join(FIXTURES, "llama_tiny")
    d = with_tensor(src, "inv", H_.path("inv-freq"),
                    "model.layers.0.self_attn.rotary_emb.inv_freq", [1.0, 0.5, 0.25, 0.125])
    a, b = lr0(src, "inv-plain"), lr0(d, "inv-freq")
    check(a["initial_weights_sha256"] == b["initial_weights_sha256"],
          "a file with rotary_emb.inv_freq does not load the same weights")


def lr0(init, name, *extra):
    """One step at learning rate 0 (the weights stay those loaded); its report."""
    H_.run(1, "train", "--init", init, "--data", TOKENS, "--seq-len", 16, "--micro-batch", 2,
           "--steps", 1, "--lr", 0,
           "--report", H_.path(name + ".json"), *extra)
    return H_.report(name + ".json")


def test_export_hf_round_trip():
    """`zeroc ckpt export --format hf` of a Llama-family checkpoint trained with lr 0 writes the
    very tensors it was loaded from (transformers' names, q/k/v and gate/up split back out) and
    a config.json of the same architecture, in one file or, past the shard size, in shards with
    an index, as save_pretrained does; each loads back to the same weights."""
    for case in H_.trim(["llama_tiny", "qwen2_tiny"], ["llama_tiny"]):
        src = os.path.join(FIXTURES, case)
        ck = H_.path(f"exp-{case}")
        first = lr0(src, f"exp-{case}", "--save-dir", ck)
        want = safetensors_tensors(src)
        with open(os.path.join(src, "config.json")) as f:
            cfg = json.load(f)
        # sharded, then one file into the same directory: the shards and index of the first
        # export are removed (the reader prefers an index), as save_pretrained does
        out = H_.path(f"exp-{case}-out")
        for shard in (40000, None):
            env = {"ZEROC_HF_MAX_SHARD_BYTES": str(shard)} if shard else None
            H_.run(1, "ckpt", "export", ck, "--format", "hf", "--out", out, env=env)
            got = safetensors_tensors(out)
            names = set(want) - ({"lm_head.weight"} if cfg.get("tie_word_embeddings") else set())
            check(set(got) == names, f"{case}: exported names {sorted(set(got) ^ names)} differ")
            check(all(got[k] == want[k] for k in names & set(got)),
                  f"{case}: exported tensors differ from the imported ones")
            sharded = os.path.exists(os.path.join(out, "model.safetensors.index.json"))
            check(sharded == bool(shard), f"{case}: sharded {sharded}, want {bool(shard)}")
            files = sorted(f for f in os.listdir(out) if f.endswith(".safetensors"))
            check((len(files) > 1) == bool(shard) and (shard or files == ["model.safetensors"]),
                  f"{case}: weight files after the export: {files}")
            with open(os.path.join(out, "config.json")) as f:
                c = json.load(f)
            for key in ("model_type", "hidden_size", "intermediate_size", "num_hidden_layers",
                        "num_attention_heads", "num_key_value_heads", "vocab_size",
                        "rms_norm_eps", "rope_theta", "tie_word_embeddings"):
                check(c.get(key) == cfg.get(key, c.get(key)),
                      f"{case}: config.json {key} {c.get(key)} != {cfg.get(key)}")
            again = lr0(out, f"exp-{case}-{shard}-again")
            check(again["initial_weights_sha256"] == first["initial_weights_sha256"],
                  f"{case}: the export does not load back to the same weights")


def check_tiled_samples(init, tiles, units):
    """A run of `init` with --tile-params `tiles` registers `units` units, and samples (decoding
    tile by tile) the untiled run's text."""
    samples = []
    for tp in (-1, tiles):
        p = H_.run(2, "train", "--init", init, *run_args(2), "--tile-params", tp,
                   "--sample-every", 5, "--sample-length", 12)
        samples.append(p.stdout[p.stdout.find("---- sample"):p.stdout.find("\n----\n")])
    check(f"{units} units" in p.stdout, f"{tiles} parameters per tile: {p.stdout[:600]}")
    check(samples[0] == samples[1] and len(samples[0]) > 30,
          f"samples: untiled {samples[0]!r}, tiled {samples[1]!r}")


def test_vocab_tiles():
    """--tile-params splits an untied vocabulary matrix into units of whole 128-row blocks (1024
    from 8192 rows on) — ZeRO-Infinity's memory-centric tiling, here of llama_tiny's 384 padded
    rows × 32: 4096 parameters make 3 tiles of each of wte and lm_head (9 units for 4), 8192 make
    2 — and changes no bit: the head's products run over the same blocks tiled or not, each tile
    starts from the values of the whole, and ends on the weights of the untiled run in fp32 and
    bf16, at stages 0 and 3, with both offloads, accumulating, resumed from a tiled checkpoint.
    The tiles export to transformers' single tensors, byte for byte the untiled export (one file
    and shards), the samples are the same, and resuming with other tiles names --tile-params."""
    init = os.path.join(FIXTURES, "llama_tiny")
    nvme = H_.path("tiles-nvme")
    os.makedirs(nvme, exist_ok=True)
    offload = ["--offload-optimizer", "nvme", "--offload-param", "nvme", "--nvme-path", nvme]
    base = {}
    for dtype in H_.trim(["fp32", "bf16"], ["bf16"]):
        runs = [("untiled", -1, 3, []), ("3tiles", 4096, 3, []), ("3tiles-s0", 4096, 0, []),
                ("2tiles", 8192, 3, []), ("3tiles-offload", 4096, 3, offload)]
        runs = [r for r in runs if r[0] in H_.trim([r[0] for r in runs],
                                                   ["untiled", "3tiles", "3tiles-offload"])]
        for name, tiles, stage, extra in runs:
            tag = f"tiles-{dtype}-{name}"
            rep = train(init, tag, 2, stage, "--dtype", dtype, "--tile-params", tiles, *extra)
            if name == "untiled":
                base[dtype] = rep
                continue
            for key in ("initial_weights_sha256", "weights_sha256", "loss"):
                check(rep[key] == base[dtype][key],
                      f"{dtype} {name}: {key} {rep[key]} != untiled {base[dtype][key]}")
    # the units: 3 tiles each way; the samples (generation, tile by tile) the untiled run's
    check_tiled_samples(init, 4096, 9)
    # accumulating, saved at step 3 tiled and resumed tiled: the uninterrupted untiled weights
    acc = ["--grad-accum", 2, "--dtype", "bf16"]
    want = train(init, "tiles-acc-untiled", 2, 3, *acc, "--tile-params", -1)["weights_sha256"]
    ck = H_.path("tiles-ckpt")
    got = train(init, "tiles-acc", 2, 3, *acc, "--tile-params", 4096, "--save-dir", ck,
                "--save-every", 3)["weights_sha256"]
    check(got == want, f"accumulating: tiled {got} != untiled {want}")
    again = train(init, "tiles-resumed", 2, 3, *acc, "--tile-params", 4096, "--resume",
                  os.path.join(ck, "step-000003"))["weights_sha256"]
    check(again == want, f"resumed tiled: {again} != {want}")
    p = train(init, "tiles-other", 2, 3, *acc, "--resume", os.path.join(ck, "step-000003"),
              ok=False)
    check(p.returncode != 0 and "vocab_tile_rows 128, this run has 384" in p.stderr and
          "--tile-params" in p.stderr, f"resumed untiled: {p.returncode} {p.stderr[-400:]}")
    # the export joins the tiles: the untiled checkpoint's export, byte for byte
    ck0 = H_.path("tiles-ckpt0")
    train(init, "tiles-acc-untiled-saved", 2, 3, *acc, "--tile-params", -1, "--save-dir", ck0)
    for shard in (None, 40000):
        env = {"ZEROC_HF_MAX_SHARD_BYTES": str(shard)} if shard else None
        outs = []
        for d in (ck, ck0):
            out = H_.path(f"{os.path.basename(d)}-hf-{shard}")
            H_.run(1, "ckpt", "export", d, "--format", "hf", "--out", out, env=env)
            outs.append(out)
        files = sorted(os.listdir(outs[1]))
        same = sorted(os.listdir(outs[0])) == files and all(
            open(os.path.join(outs[0], f), "rb").read() == open(os.path.join(outs[1], f),
                                                                "rb").read() for f in files)
        check(same, f"export (shard {shard}): tiled {sorted(os.listdir(outs[0]))} differs from "
                    f"untiled {files}")


def test_tied_vocab_tiles():
    """A tied vocabulary (qwen2_tiny: 384 padded rows × 32, the head reading the embedding) is
    tiled too: 4096 parameters make 3 tiles (2 + 1 + 3 = 6 units, no head units), which the
    embedding gathers tile by tile and the head gathers again — so at stage 3 each tile is
    gathered three times a micro-batch (forward twice, backward once), its gradient written by
    the head and added to by the embedding. It changes no bit against the untiled run in fp32 and
    bf16, at stages 0 and 3, with both offloads and with LoRA (the base frozen); the traffic is
    the estimate's to the byte, the untiled run's plus the third gather of the tiles; the samples
    (generation reading the tiles for the head) are the untiled run's."""
    init = os.path.join(FIXTURES, "qwen2_tiny")
    nvme = H_.path("tied-nvme")
    os.makedirs(nvme, exist_ok=True)
    offload = ["--offload-optimizer", "nvme", "--offload-param", "nvme", "--nvme-path", nvme]
    lora = ["--lora-r", "2", "--lora-targets", "all-linear"]
    runs = [("fp32", "untiled", -1, 3, []), ("fp32", "3tiles", 4096, 3, []),
            ("fp32", "3tiles-s0", 4096, 0, []), ("bf16", "untiled", -1, 3, []),
            ("bf16", "3tiles", 4096, 3, []), ("bf16", "3tiles-offload", 4096, 3, offload),
            ("bf16", "lora-untiled", -1, 3, lora), ("bf16", "lora-3tiles", 4096, 3, lora)]
    runs = [r for r in runs if r[1] in H_.trim([r[1] for r in runs],
                                               ["untiled", "3tiles", "lora-untiled",
                                                "lora-3tiles"])
            and (r[0] == "bf16" or not H_.sanitized)]
    reps = {}
    for dtype, name, tiles, stage, extra in runs:
        tag = f"tied-{dtype}-{name}"
        p = H_.run(2, "train", "--init", init, *run_args(2), "--stage", stage, "--report",
                   H_.path(tag + ".json"), "--dtype", dtype, "--tile-params", tiles, *extra)
        reps[(dtype, name)] = rep = H_.report(tag + ".json")
        units = 6 + (2 if name.startswith("lora") else 0)  # 3 tiles, 2 blocks, ln_f; adapters
        if tiles > 0:
            check(f"{units} units" in p.stdout, f"{tag}: {units} units? {p.stdout[:300]!r}")
        base = ("lora-untiled" if name.startswith("lora") else "untiled")
        if name == base:
            continue
        for key in ("initial_weights_sha256", "weights_sha256", "loss"):
            check(rep[key] == reps[(dtype, base)][key],
                  f"tied {dtype} {name}: {key} {rep[key]} != untiled {reps[(dtype, base)][key]}")
    # generation reads the tied tiles for the head too: the untiled run's samples
    if not H_.sanitized:
        samples = []
        for tiles in (-1, 4096):
            p = H_.run(2, "train", "--init", init, *run_args(2), "--tile-params", tiles,
                       "--sample-every", 5, "--sample-length", 12)
            samples.append(p.stdout[p.stdout.find("---- sample"):p.stdout.find("\n----\n")])
        check(samples[0] == samples[1] and len(samples[0]) > 30,
              f"tied samples: untiled {samples[0]!r}, tiled {samples[1]!r}")
    # the traffic at stage 3 (2 ranks, P bytes a parameter): the tiles' third gather, exactly,
    # and the estimate's total
    for dtype, P in (("fp32", 4), ("bf16", 2)):
        if (dtype, "3tiles") not in reps:
            continue
        tiled, untiled = reps[(dtype, "3tiles")], reps[(dtype, "untiled")]
        A = tiled.get("gradient_accumulation_steps", 1)
        tiles = [4096 // 32, 4096 // 32, 384 - 2 * (4096 // 32)]
        extra = P * 1 * A * (3 * sum(-(-t * 32 // 2) for t in tiles) - 2 * (384 * 32 // 2))
        got = (tiled["comm"]["bytes_per_step"]["all_gather"] -
               untiled["comm"]["bytes_per_step"]["all_gather"])
        check(got == extra, f"{dtype}: tiled all-gathers {got} bytes more a step, want {extra}")
        est = H_.estimate("--init", init, "--ranks", 2, "--dtype", dtype, "--tile-params", 4096,
                          "--seq-len", run_args(2)[run_args(2).index("--seq-len") + 1],
                          "--micro-batch", run_args(2)[run_args(2).index("--micro-batch") + 1])
        row = [r for r in est["rows"] if r["stage"] == 3 and r["offload"] == "none"][0]
        check(row["comm_bytes_per_step"] == tiled["comm"]["bytes_per_step"]["total"],
              f"{dtype}: estimate {row['comm_bytes_per_step']} != measured "
              f"{tiled['comm']['bytes_per_step']['total']}")


def export_bytes(ck, name):
    """The transformers export of checkpoint ck: {file: bytes}."""
    out = H_.path(name)
    H_.run(1, "ckpt", "export", ck, "--format", "hf", "--out", out)
    return {f: open(os.path.join(out, f), "rb").read() for f in sorted(os.listdir(out))}


def test_mlp_tiles():
    """A block past --tile-params has its MLP split across its width (ZeRO-Infinity's tiling of
    the wide products): llama_wide's 4608-wide MLP (blocks of 1024 columns and one of 512) at
    196608 parameters a tile makes 3 tiles of 2048, 2048 and 512 columns (units h.0.mlp.<t>:
    rows of gate and up, columns of down; 6 units for 3), each gathered alone. It changes no bit: the
    products run over the same column blocks tiled or not, so the transformers export is the
    untiled run's byte for byte, and so are the losses, in fp32 and bf16, at stages 0 and 3,
    with both offloads and with activation checkpointing (each tile redoes its products in the
    backward); the working peak is smaller; the samples (decoding tile by tile) are the untiled
    run's; a tiled checkpoint resumes tiled to the uninterrupted weights and is refused untiled
    naming --tile-params, and one from before MLP tiles resumes with its MLP untiled; with LoRA
    the MLP stays one unit."""
    init = os.path.join(FIXTURES, "llama_wide")
    nvme = H_.path("mlp-tiles-nvme")
    os.makedirs(nvme, exist_ok=True)
    offload = ["--offload-optimizer", "nvme", "--offload-param", "nvme", "--nvme-path", nvme]
    tiles = 196608
    for dtype in H_.trim(["fp32", "bf16"], ["bf16"]):
        runs = [("untiled", -1, 3, []), ("tiled", tiles, 3, []), ("tiled-s0", tiles, 0, []),
                ("tiled-offload", tiles, 3, offload),
                ("tiled-ac", tiles, 3, ["--activation-checkpointing"])]
        runs = [r for r in runs if r[0] in H_.trim([r[0] for r in runs],
                                                   ["untiled", "tiled", "tiled-ac"])]
        base = None
        for name, tp, stage, extra in runs:
            tag = f"mlp-tiles-{dtype}-{name}"
            ck = H_.path(tag + "-ck")
            rep = train(init, tag, 2, stage, "--dtype", dtype, "--tile-params", tp,
                        "--save-dir", ck, *extra)
            files = export_bytes(os.path.join(ck, "step-000005"), tag + "-hf")
            if base is None:
                base = (rep, files)
                continue
            check(rep["loss"] == base[0]["loss"],
                  f"{dtype} {name}: losses {rep['loss']} != untiled {base[0]['loss']}")
            check(files == base[1], f"{dtype} {name}: the export differs from the untiled run's "
                                    f"({sorted(files)} vs {sorted(base[1])})")
            if name == "tiled":
                check(rep["memory"]["ranks"][0]["working_peak"] <
                      base[0]["memory"]["ranks"][0]["working_peak"],
                      f"{dtype}: working peak tiled {rep['memory']['ranks'][0]['working_peak']} >= "
                      f"untiled {base[0]['memory']['ranks'][0]['working_peak']}")
    # the units, and the samples (decoding tile by tile) the untiled run's
    check_tiled_samples(init, tiles, 6)
    # accumulating, saved at step 3 tiled and resumed tiled: the uninterrupted run's export
    acc = ["--grad-accum", 2, "--dtype", "bf16"]
    ck0, ck = H_.path("mlp-tiles-acc-ck0"), H_.path("mlp-tiles-acc-ck")
    train(init, "mlp-tiles-acc", 2, 3, *acc, "--tile-params", tiles, "--save-dir", ck0)
    train(init, "mlp-tiles-acc-saved", 2, 3, *acc, "--tile-params", tiles, "--save-dir", ck,
          "--save-every", 3)
    train(init, "mlp-tiles-acc-resumed", 2, 3, *acc, "--tile-params", tiles, "--resume",
          os.path.join(ck, "step-000003"), "--save-dir", ck)
    want = export_bytes(os.path.join(ck0, "step-000005"), "mlp-tiles-acc-hf0")
    got = export_bytes(os.path.join(ck, "step-000005"), "mlp-tiles-acc-hf")
    check(got == want, "resumed tiled: the export differs from the uninterrupted run's")
    # a checkpoint from before MLP tiles (no client.mlp_tile_cols; its MLP one unit) resumes
    # under a bound that tiles the MLP now, untiled: the uninterrupted run's export again
    ck1 = H_.path("mlp-tiles-old-ck")
    train(init, "mlp-tiles-old", 2, 3, *acc, "--tile-params", -1, "--save-dir", ck1,
          "--save-every", 3)
    mpath = os.path.join(ck1, "step-000003", "manifest.json")
    with open(mpath) as f:
        m = json.load(f)
    del m["client"]["mlp_tile_cols"]
    with open(mpath, "w") as f:
        json.dump(m, f)
    with open(mpath, "rb") as f:  # the checksum recomputed, as a format-aware editor would
        digest = hashlib.sha256(f.read()).hexdigest()
    with open(os.path.join(ck1, "step-000003", "manifest.sha256"), "w") as f:
        f.write(f"{digest}  manifest.json\n")
    train(init, "mlp-tiles-old-resumed", 2, 3, *acc, "--tile-params", tiles, "--resume",
          os.path.join(ck1, "step-000003"), "--save-dir", ck1)
    got = export_bytes(os.path.join(ck1, "step-000005"), "mlp-tiles-old-hf")
    check(got == want, "resumed from before MLP tiles: the export differs")
    p = train(init, "mlp-tiles-other", 2, 3, *acc, "--resume", os.path.join(ck, "step-000003"),
              ok=False)
    check(p.returncode != 0 and "mlp_tile_cols 2048, this run has 4608" in p.stderr and
          "--tile-params" in p.stderr, f"resumed untiled: {p.returncode} {p.stderr[-400:]}")
    # LoRA keeps the MLP one unit (its adapters take the whole product's input): 4 units, the
    # adapters' among them
    p = train(init, "mlp-tiles-lora", 1, 3, "--tile-params", tiles, "--lora-r", 4, ok=False)
    check(p.returncode == 0 and "4 units" in p.stdout,
          f"LoRA with --tile-params {tiles}: {p.returncode} {p.stdout[:600]} {p.stderr[-400:]}")
    # untiled, the blocked MLP takes adapters on gate, up and down between its products: they
    # start at zero (the reference's first loss) and train (the later losses move off the
    # frozen base's path, which the full fine-tune's are not)
    lo = train(init, "mlp-blocks-lora", 1, 3, "--lora-r", 4, "--lora-targets",
               "gate_proj,up_proj,down_proj")["loss"]
    want = REF["cases"]["llama_wide"]["loss"]
    check(len(lo) == len(want) and abs(lo[0] - want[0]) <= TOL * abs(want[0]) and
          all(abs(x) < 100 for x in lo) and any(abs(a - b) > TOL * abs(b)
                                                for a, b in zip(lo[1:], want[1:])),
          f"LoRA on the blocked MLP: losses {lo}, full fine-tune's {want}")


TESTS = [test_llama_matches_reference, test_qwen2_matches_reference, test_rope_spellings,
         test_model_flag_refused, test_save_final_refused_first, test_unsupported_config_refused,
         test_engine_features_bitwise, test_export_hf_round_trip, test_rotary_buffers_ignored,
         test_vocab_tiles, test_tied_vocab_tiles, test_mlp_tiles,
         test_wide_mlp_matches_reference]

if __name__ == "__main__":
    H_.main(TESTS, sys.argv[3:])
