#!/usr/bin/env python3
"""test_hf.py — Hugging Face GPT-2 weights: `zeroc train|sample|estimate --init` reading
transformers' layout (model.safetensors + config.json) and `zeroc ckpt export --format hf`
writing it, and both safetensors readers (zeroc's own `--init FILE.safetensors` too) held to
the format's data layout (python3 stdlib only; prints "N passed, N failed").

Usage: test_hf.py ZEROC_BINARY MPIRUN_SH [test-name ...]

The files are made here from tests/fixtures/gpt2_tiny.bin — the llm.c checkpoint whose logits,
loss and gradients tests/test_gpt2_reference.c holds to the from-scratch PyTorch GPT-2 that
wrote it (tests/gpt2_reference.py) — by laying its tensors out as transformers does: Conv1D
weights [in, out] (llm.c's transposed), the vocabulary unpadded, optional "transformer." prefix,
lm_head and mask buffers, or the embedding as lm_head.weight alone (safetensors' save_model). A
model loaded from them must hold exactly the llm.c file's weights (its padded embedding rows
zeroed, as HF files have none), so it computes PyTorch's logits."""
import json
import os
import struct
import sys
from array import array

from harness import Harness

H_ = Harness(sys.argv[1], sys.argv[2])
check = H_.check
FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "gpt2_tiny.bin")
BLOCK = [("ln1w", "ln_1.weight", False), ("ln1b", "ln_1.bias", False),
         ("qkvw", "attn.c_attn.weight", True), ("qkvb", "attn.c_attn.bias", False),
         ("attprojw", "attn.c_proj.weight", True), ("attprojb", "attn.c_proj.bias", False),
         ("ln2w", "ln_2.weight", False), ("ln2b", "ln_2.bias", False),
         ("fcw", "mlp.c_fc.weight", True), ("fcb", "mlp.c_fc.bias", False),
         ("fcprojw", "mlp.c_proj.weight", True), ("fcprojb", "mlp.c_proj.bias", False)]


def read_llmc(path):
    """(header ints, {llm.c tensor name: (shape, array of floats)}) with per-layer slabs split."""
    with open(path, "rb") as f:
        raw = f.read()
    h = struct.unpack("<256i", raw[:1024])
    T, V, L, NH, C, Vp = h[2], h[3], h[4], h[5], h[6], h[7]
    sizes = [("wte", (Vp, C)), ("wpe", (T, C))]
    per_layer = {"ln1w": (C,), "ln1b": (C,), "qkvw": (3 * C, C), "qkvb": (3 * C,),
                 "attprojw": (C, C), "attprojb": (C,), "ln2w": (C,), "ln2b": (C,),
                 "fcw": (4 * C, C), "fcb": (4 * C,), "fcprojw": (C, 4 * C), "fcprojb": (C,)}
    out, at = {}, 1024
    vals = array("f")
    vals.frombytes(raw[1024:])
    at = 0
    for name, shape in sizes:
        n = shape[0] * shape[1]
        out[name] = (shape, vals[at:at + n])
        at += n
    for name, shape in per_layer.items():
        n = 1
        for d in shape:
            n *= d
        for l in range(L):
            out[f"h.{l}.{name}"] = (shape, vals[at + l * n:at + (l + 1) * n])
        at += L * n
    for name in ("lnfw", "lnfb"):
        out[name] = ((C,), vals[at:at + C])
        at += C
    return dict(T=T, V=V, L=L, NH=NH, C=C, Vp=Vp), out


def zc_order(hdr):
    """zeroc's parameter order (as it registers them): wte, wpe, each block, ln_f."""
    names = ["wte", "wpe"]
    for l in range(hdr["L"]):
        names += [f"h.{l}.{z}" for z, _, _ in BLOCK]
    return names + ["lnfw", "lnfb"]


def hf_tensors(hdr, llmc):
    """[(transformers name, shape, floats)] in zeroc's order."""
    out = []
    top = {"wte": "wte.weight", "wpe": "wpe.weight", "lnfw": "ln_f.weight",
           "lnfb": "ln_f.bias"}
    for name in zc_order(hdr):
        shape, v = llmc[name]
        if name in top:
            if name == "wte":
                shape, v = (hdr["V"], hdr["C"]), v[:hdr["V"] * hdr["C"]]
            out.append((top[name], shape, v))
            continue
        l, z = name.split(".")[1], name.split(".")[2]
        hf, transposed = [(b, t) for zz, b, t in BLOCK if zz == z][0]
        if transposed:  # [out, in] -> [in, out]
            o, i = shape
            v = array("f", (v[r * i + c] for c in range(i) for r in range(o)))
            shape = (i, o)
        out.append((f"h.{l}.{hf}", shape, v))
    return out


def to_bytes(v, dtype):
    if dtype == "F32":
        return v.tobytes()
    if dtype == "F16":
        return struct.pack(f"<{len(v)}e", *v)
    out = bytearray()  # BF16, rounded to nearest even
    for u in array("I", v.tobytes()):
        out += struct.pack("<H", ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF)
    return bytes(out)


def from_bytes(b, dtype):
    if dtype == "F32":
        a = array("f")
        a.frombytes(b)
        return a
    if dtype == "F16":
        return array("f", struct.unpack(f"<{len(b) // 2}e", b))
    return array("f", array("I", (x << 16 for x in array("H", b))).tobytes())


def write_safetensors(path, tensors, dtype="F32", dtypes=None, meta=None):
    """tensors: [(name, shape, floats or raw bytes)] — the header as zeroc writes it (compact
    JSON, tensor order, metadata last with meta's entries added, spaces to a multiple of 8)."""
    header, blobs, off = {}, [], 0
    for name, shape, v in tensors:
        dt = (dtypes or {}).get(name, dtype)
        b = v if isinstance(v, bytes) else to_bytes(v, dt)
        header[name] = {"dtype": dt, "shape": list(shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    header["__metadata__"] = {"format": "pt", **(meta or {})}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def config_json(hdr, **over):
    c = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2",
         "activation_function": "gelu_new", "n_layer": hdr["L"], "n_head": hdr["NH"],
         "n_embd": hdr["C"], "n_positions": hdr["T"], "n_ctx": hdr["T"],
         "vocab_size": hdr["V"], "layer_norm_epsilon": 1e-05, "tie_word_embeddings": True,
         "resid_pdrop": 0.1, "embd_pdrop": 0.1, "attn_pdrop": 0.1}
    c.update(over)
    return {k: v for k, v in c.items() if v is not None}


def make_hf(name, prefix="", dtype="F32", lm_head=False, buffers=False, edit=None,
            config=None, meta=None):
    """A transformers-style directory from the fixture; edit(list of tensors) may change it."""
    hdr, llmc = read_llmc(FIXTURE)
    d = H_.path(name)
    os.makedirs(d, exist_ok=True)
    tensors = [(prefix + n, s, v) for n, s, v in hf_tensors(hdr, llmc)]
    if lm_head:
        tensors.append(("lm_head.weight", (hdr["V"], hdr["C"]),
                        [v for n, _, v in tensors if n.endswith("wte.weight")][0]))
    if buffers:
        T = hdr["T"]
        mask = array("f", (1.0 if c <= r else 0.0 for r in range(T) for c in range(T)))
        for l in range(hdr["L"]):
            tensors.append((f"{prefix}h.{l}.attn.bias", (T, T), mask))
            tensors.append((f"{prefix}h.{l}.attn.masked_bias", (1,), array("f", [-1e4])))
    if edit:
        tensors = edit(tensors)
    write_safetensors(os.path.join(d, "model.safetensors"), tensors, dtype, meta=meta)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(config if config is not None else config_json(hdr), f)
    return d


def save_model_layout(ts):
    """A GPT2LMHeadModel as safetensors.torch.save_model writes it: of the tied pair it keeps
    the name that sorts first, lm_head.weight, and no transformer.wte.weight (its metadata
    records the dropped name); the tensors in name order."""
    return sorted((("lm_head.weight" if n == "transformer.wte.weight" else n, s, v)
                   for n, s, v in ts), key=lambda t: t[0])


SAVE_MODEL = dict(prefix="transformer.", edit=save_model_layout,
                  meta={"transformer.wte.weight": "lm_head.weight"})


def alias_config(hdr, **over):
    """config.json with GPT2Config's other names of the dimensions (its attribute_map), n_head
    given under both names with one value; over as config_json's."""
    return config_json(hdr, **{**dict(n_layer=None, n_embd=None, n_positions=None, n_ctx=None,
                                      num_hidden_layers=hdr["L"], num_attention_heads=hdr["NH"],
                                      hidden_size=hdr["C"], max_position_embeddings=hdr["T"]),
                               **over})


def reference_llmc(dtype="F32"):
    """The fixture with its padded embedding rows zeroed (and its values rounded to dtype): the
    weights an HF file of it must load to."""
    out = H_.path(f"ref-{dtype}.bin")
    with open(FIXTURE, "rb") as f:
        raw = bytearray(f.read())
    hdr, _ = read_llmc(FIXTURE)
    vals = array("f")
    vals.frombytes(bytes(raw[1024:]))
    for i in range(hdr["V"] * hdr["C"], hdr["Vp"] * hdr["C"]):
        vals[i] = 0.0
    if dtype != "F32":
        vals = from_bytes(to_bytes(vals, dtype), dtype)
    with open(out, "wb") as f:
        f.write(bytes(raw[:1024]) + vals.tobytes())
    return out


def tokens(V=100, n=4000):
    """An llm.c token file of ids below the fixture's vocabulary."""
    path = H_.path("tok.bin")
    if not os.path.exists(path):
        ids = [(i * 37 + (i * i) % 11) % V for i in range(n)]
        head = struct.pack("<3i", 20240520, 1, n) + bytes(1012)
        with open(path, "wb") as f:
            f.write(head + struct.pack(f"<{n}H", *ids))
    return path


def train(init, name, *extra, n=2, ok=True):
    """3 steps of stage 3 on n ranks from --init; the report, or the process when not ok."""
    p = H_.run(n, "train", "--model", "gpt2", "--init", init, "--data", tokens(), "--steps", 3,
               "--seq-len", 16, "--micro-batch", 2, "--stage", 3, "--report",
               H_.path(name + ".json"), *extra, ok=ok)
    return H_.report(name + ".json") if ok else p


def test_hf_init_matches_llmc():
    """Each layout transformers writes — a directory or the .safetensors file, names with and
    without "transformer.", lm_head.weight tied, the mask buffers older files carry, F32, BF16
    and F16, safetensors.torch.save_model's file of a GPT2LMHeadModel (the embedding as
    lm_head.weight only), a config.json giving the dimensions under GPT2Config's other names —
    loads the very weights of the llm.c file it came from (initial and final digests, every
    loss, bit for bit, on 2 ranks of stage 3 where each rank reads its shard of every
    transposed matrix), so it computes what PyTorch computed for that file."""
    hdr, _ = read_llmc(FIXTURE)
    cases = {"dir": dict(), "prefix": dict(prefix="transformer."),
             "lm_head": dict(lm_head=True), "buffers": dict(buffers=True, prefix="transformer."),
             "bf16": dict(dtype="BF16"), "f16": dict(dtype="F16"), "save_model": SAVE_MODEL,
             "aliases": dict(config=alias_config(hdr))}
    # the sanitizer pass: one layout of each reader path (file with prefix, buffers, a 16-bit
    # dtype); the others differ in names only, not in code that touches memory differently
    cases = {k: cases[k] for k in H_.trim(cases, ("prefix", "buffers", "bf16"))}
    dtypes = {kw.get("dtype", "F32") for kw in cases.values()}
    want = {dt: train(reference_llmc(dt), f"ref-{dt}") for dt in dtypes}
    for name, kw in cases.items():
        d = make_hf("hf-" + name, **kw)
        init = os.path.join(d, "model.safetensors") if name in ("prefix", "save_model") else d
        got = train(init, "hf-" + name)
        ref = want[kw.get("dtype", "F32")]
        for key in ("initial_weights_sha256", "weights_sha256", "loss"):
            check(got[key] == ref[key], f"{name}: {key} {got[key]} != llm.c file's {ref[key]}")


def test_hf_export_byte_identical():
    """`zeroc ckpt export --format hf` of a checkpoint trained 0 steps' worth (lr 0) from an HF
    directory writes the same model.safetensors, byte for byte, and a config.json with the same
    shape; the export loads back to the same weights."""
    d = make_hf("hf-src")
    ck = H_.path("hf-ck")
    train(d, "hf-lr0", "--lr", "0", "--save-dir", ck)
    out = H_.path("hf-out")
    H_.run(1, "ckpt", "export", ck, "--format", "hf", "--out", out)
    with open(os.path.join(d, "model.safetensors"), "rb") as a, \
            open(os.path.join(out, "model.safetensors"), "rb") as b:
        x, y = a.read(), b.read()
    check(x == y, f"export differs from the import: {len(x)} vs {len(y)} bytes")
    with open(os.path.join(out, "config.json")) as f:
        c = json.load(f)
    hdr, _ = read_llmc(FIXTURE)
    got = (c["n_layer"], c["n_head"], c["n_embd"], c["n_positions"], c["vocab_size"],
           c["activation_function"])
    want = (hdr["L"], hdr["NH"], hdr["C"], hdr["T"], hdr["V"], "gelu_new")
    check(got == want, f"config.json {got}, want {want}")
    again = train(out, "hf-again")
    first = H_.report("hf-lr0.json")
    check(again["initial_weights_sha256"] == first["initial_weights_sha256"],
          "the export does not load back to the same weights")
    p = H_.run(1, "ckpt", "export", ck, "--format", "hf", "--dtype", "bf16", "--out", out,
               ok=False)
    check(p.returncode != 0 and "fp32 only" in p.stderr, f"hf export in bf16: {p.stderr}")


def test_hf_sample_and_estimate():
    """`zeroc sample` and `zeroc estimate` take the same --init: the sample equals the llm.c
    file's token for token (from safetensors.torch.save_model's layout too), the estimate reads
    the shape from config.json."""
    d = make_hf("hf-s")
    ref = reference_llmc()
    outs = [H_.run(1, "sample", "--init", i, "--length", 12, "--seed", 5, "--prompt",
                   "1,2,3").stdout for i in (d, ref, make_hf("hf-s-save-model", **SAVE_MODEL))]
    check(outs[0] == outs[1] == outs[2] and outs[0].strip(), f"samples differ: {outs}")
    a, b = H_.estimate("--init", d, "--ranks", 2), H_.estimate("--init", ref, "--ranks", 2)
    check(a == b, f"estimates differ:\n{a}\n{b}")


def test_hf_bad_inputs():
    """Every bad file is refused with its name and what was expected, before a step, and a
    file's shape must agree with the shape flags; a dimension given under both of GPT2Config's
    names with two values, or heads that do not divide the width, are refused naming the keys.
    A tensor's wrong shape is shown as declared and as expected, 1-D and 2-D alike; config.json
    is read as Python's json reads it: a key given twice, anything but white space after the
    object, or \\u0000 in a string is refused naming the file (and the key, or the byte's
    offset)."""
    hdr, _ = read_llmc(FIXTURE)

    def drop(name):
        return lambda ts: [t for t in ts if t[0] != name]

    def untransposed(ts):
        return [(n, s[::-1], v) if n == "h.0.attn.c_attn.weight" else (n, s, v)
                for n, s, v in ts]

    def extra(ts):
        return ts + [("h.0.attn.rotary", (4,), array("f", [0, 0, 0, 0]))]

    def nan(ts):
        out = []
        for n, s, v in ts:
            if n == "ln_f.bias":
                v = array("f", v)
                v[3] = float("nan")
            out.append((n, s, v))
        return out

    def other_head(ts):
        wte = [v for n, _, v in ts if n == "wte.weight"][0]
        w = array("f", wte)
        w[7] += 1.0
        return ts + [("lm_head.weight", (hdr["V"], hdr["C"]), w)]

    def int_dtype(ts):
        return [(n, s, bytes(4 * len(v)) if n == "ln_f.weight" else v) for n, s, v in ts]

    def reshaped(name, shape):  # the same bytes declared with another shape
        return lambda ts: [(n, shape if n == name else s, v) for n, s, v in ts]

    cfg = config_json(hdr)
    cases = [
        (dict(edit=drop("h.1.ln_2.bias")), "no tensor 'h.1.ln_2.bias'"),
        (dict(edit=untransposed), "'h.0.attn.c_attn.weight' has shape"),
        (dict(edit=extra), "tensor 'h.0.attn.rotary' is not part"),
        (dict(edit=nan), "'ln_f.bias' holds nan"),
        (dict(edit=other_head), "lm_head.weight differs from wte.weight"),
        (dict(config={**cfg, "activation_function": "relu"}), "activation_function \"relu\""),
        (dict(config={k: v for k, v in cfg.items() if k != "n_layer"}), "n_layer"),
        (dict(config={**cfg, "layer_norm_epsilon": 1e-6}), "layer_norm_epsilon"),
        (dict(config={**cfg, "n_inner": 7}), "n_inner"),
        (dict(config={**cfg, "tie_word_embeddings": False}), "tie_word_embeddings"),
        # shapes in the message as declared, 1-D and 2-D alike
        (dict(edit=reshaped("ln_f.bias", (hdr["C"] // 2, 2))),
         f"'ln_f.bias' has shape [{hdr['C'] // 2}, 2], expected [{hdr['C']}] (from config.json)"),
        (dict(edit=reshaped("h.0.attn.c_proj.weight", (hdr["C"] * hdr["C"],))),
         f"'h.0.attn.c_proj.weight' has shape [{hdr['C'] * hdr['C']}], expected "
         f"[{hdr['C']}, {hdr['C']}]"),
        # config.json's dimensions against the file's tensors, before the model is sized (a
        # longer context or more blocks than the file holds reached the memory check as a model
        # of 97 GiB, or the first missing tensor)
        (dict(config={**cfg, "n_positions": 10 ** 8, "n_ctx": 10 ** 8}),
         f"n_positions and n_embd say [100000000, {hdr['C']}], but"),
        (dict(config={**cfg, "n_layer": 100000}), "n_layer 100000, but"),
        (dict(config={**cfg, "n_layer": hdr["L"] - 1}),
         f"n_layer {hdr['L'] - 1}, but"),
        (dict(edit=reshaped("wpe.weight", (hdr["T"] * hdr["C"],))),
         f"wpe.weight has shape [{hdr['T'] * hdr['C']}]"),
    ]
    # refused as config.json or the file's names are read, the same on any number of ranks: on
    # one (which the sanitizer pass starts without mpirun)
    one_rank = [
        # no token embedding under either name (save_model's layout keeps lm_head.weight)
        (dict(prefix="transformer.", edit=drop("transformer.wte.weight")),
         "no tensor 'transformer.wte.weight' nor lm_head.weight"),
        # a dimension under both of GPT2Config's names, with two values: transformers would take
        # the other name's silently (PretrainedConfig sets it last)
        (dict(config={**cfg, "num_attention_heads": 2 * hdr["NH"]}),
         f"config.json: n_head {hdr['NH']} and num_attention_heads {2 * hdr['NH']} disagree"),
        (dict(config={**cfg, "hidden_size": 2 * hdr["C"]}),
         f"config.json: n_embd {hdr['C']} and hidden_size {2 * hdr['C']} disagree"),
        (dict(config={**cfg, "num_hidden_layers": hdr["L"] + 1}),
         f"config.json: n_layer {hdr['L']} and num_hidden_layers {hdr['L'] + 1} disagree"),
        (dict(config={**cfg, "max_position_embeddings": 2 * hdr["T"]}),
         f"config.json: n_positions {hdr['T']} and max_position_embeddings {2 * hdr['T']} "
         "disagree"),
        # heads that do not divide the width, named by the key read
        (dict(config={**cfg, "n_head": 5}), f"config.json: n_head 5 does not divide n_embd "
                                            f"{hdr['C']}"),
        (dict(config=alias_config(hdr, n_head=None, num_attention_heads=3)),
         f"config.json: num_attention_heads 3 does not divide hidden_size {hdr['C']}"),
    ]
    for i, (kw, want) in enumerate(cases + one_rank):
        d = make_hf(f"hf-bad{i}", **kw)
        # the sanitizer pass: one rank, without mpirun's start and abort (the refusal's code is
        # each rank's own)
        p = train(d, f"hf-bad{i}", n=1 if i >= len(cases) or H_.sanitized else 2, ok=False)
        check(p.returncode != 0 and want in p.stderr and "step " not in p.stdout,
              f"case {i}: want '{want}' in the error, got {p.returncode}: {p.stderr[-400:]}")
    # an I32 tensor, a truncated file, no config.json, a shape flag against the file
    d = make_hf("hf-i32")
    path = os.path.join(d, "model.safetensors")
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    head = raw[8:8 + n].replace(b'"ln_f.weight":{"dtype":"F32"', b'"ln_f.weight":{"dtype":"I32"')
    with open(path, "wb") as f:
        f.write(raw[:8] + head + raw[8 + n:])
    p = train(d, "hf-i32", ok=False)
    check(p.returncode != 0 and "'ln_f.weight' is I32, expected F32, BF16 or F16" in p.stderr,
          f"I32: {p.stderr[-300:]}")
    d = make_hf("hf-trunc")
    path = os.path.join(d, "model.safetensors")
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) - 100)
    p = train(d, "hf-trunc", ok=False)
    check(p.returncode != 0 and "truncated" in p.stderr, f"truncated: {p.stderr[-300:]}")
    d = make_hf("hf-nocfg")
    os.remove(os.path.join(d, "config.json"))
    p = train(d, "hf-nocfg", ok=False)
    check(p.returncode != 0 and "config.json" in p.stderr, f"no config: {p.stderr[-300:]}")
    p = train(make_hf("hf-flag"), "hf-flag", "--layers", hdr["L"] + 1, ok=False)
    check(p.returncode != 0 and "--layers" in p.stderr, f"--layers: {p.stderr[-300:]}")
    # config.json as Python's json reads it: a key given twice (cJSON would keep the first value,
    # Python keeps the last) and anything but white space after the object are refused by name
    good = json.dumps(cfg)
    texts = [
        (good[:-1] + ', "scale_attn_weights": true, "scale_attn_weights": false}',
         ["config.json: duplicate key: scale_attn_weights"]),
        (good + " garbage {", ["config.json: byte 0x67 at offset", f"ends at offset {len(good)}"]),
        (good + "\n\0junk", [f"config.json: byte 0x00 at offset {len(good) + 1}"]),
        (good[:-1] + ', "model_type": "gpt2\\u0000x"}', ["config.json: not JSON", "\\u0000"]),
    ]
    for i, (text, want) in enumerate(texts):
        d = make_hf(f"hf-cfgtext{i}")
        with open(os.path.join(d, "config.json"), "w") as f:
            f.write(text)
        p = train(d, f"hf-cfgtext{i}", ok=False)
        check(p.returncode != 0 and all(w in p.stderr for w in want) and "step " not in p.stdout,
              f"config text {i}: want {want} in the error, got {p.returncode}: {p.stderr[-400:]}")
    d = make_hf("hf-cfgspace")  # trailing white space is JSON
    with open(os.path.join(d, "config.json"), "w") as f:
        f.write(" \n" + good + " \t\r\n ")
    train(d, "hf-cfgspace")


def relayout(src, dst, edit):
    """src copied to dst with edit(header, data) -> (header, or its JSON text; data; what the
    error must say) applied, the header padded to a multiple of 8 again (its length follows)."""
    with open(src, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header, data, want = edit(json.loads(raw[8:8 + n]), raw[8 + n:])
    text = header if isinstance(header, bytes) else json.dumps(header,
                                                                separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(dst, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)
    return want


def data_order(h):
    """The tensor names of header h in the order of their bytes."""
    return sorted((k for k in h if k != "__metadata__"), key=lambda k: h[k]["data_offsets"])


def overlap(h, d):  # the second tensor on the first one's bytes, the right length for its shape
    a, b = data_order(h)[:2]
    size = h[b]["data_offsets"][1] - h[b]["data_offsets"][0]
    h[b]["data_offsets"] = [0, size]
    return h, d, [f"tensor '{b}' has data_offsets [0, {size}]", f"overlaps tensor '{a}'"]


def gap(h, d):  # 4 bytes no tensor holds after the first
    ts = data_order(h)
    cut = h[ts[0]]["data_offsets"][1]
    for k in ts[1:]:
        h[k]["data_offsets"] = [x + 4 for x in h[k]["data_offsets"]]
    return h, d[:cut] + bytes(4) + d[cut:], [
        f"tensor '{ts[1]}' has data_offsets [{cut + 4}, ", f"expected a begin of {cut}",
        f"a gap of 4 bytes after tensor '{ts[0]}'"]


def trailing(h, d):
    return h, d + bytes(8), [f"8 bytes of trailing data after the last tensor "
                             f"('{data_order(h)[-1]}')"]


def reversed_offsets(h, d):  # [end, begin]
    k = data_order(h)[1]
    b, e = h[k]["data_offsets"]
    h[k]["data_offsets"] = [e, b]
    return h, d, [f"tensor '{k}' has data_offsets [{e}, {b}], expected begin <= end"]


def past_end(h, d):
    k = data_order(h)[-1]
    return h, d[:-4], [f"tensor '{k}' has data_offsets", "(truncated?)"]


def twice(h, d):  # the last tensor again, on bytes of its own: which one would a reader take?
    k = data_order(h)[-1]
    b, e = h[k]["data_offsets"]
    again = {**h[k], "data_offsets": [len(d), len(d) + e - b]}
    text = json.dumps(h, separators=(",", ":"))[:-1] + f',"{k}":' + json.dumps(again) + "}"
    return text.encode(), d + d[b:e], [f"tensor '{k}' appears twice in the header"]


def permuted(h, d):  # the bytes in reverse order, the header in its own: still a valid file
    at, parts = 0, []
    for k in reversed(data_order(h)):
        b, e = h[k]["data_offsets"]
        parts.append(d[b:e])
        h[k]["data_offsets"] = [at, at + e - b]
        at += e - b
    return h, b"".join(parts), []


def header_text(h):
    return json.dumps(h, separators=(",", ":")).encode()


def header_garbage(h, d):  # bytes after the header's JSON, within its length: spaces only
    text = header_text(h)
    return text + b"   xx", d, [f"bad header: byte 0x78 at offset {8 + len(text) + 3}",
                                 "only spaces may follow"]


def header_nul(h, d):  # NUL padding instead of spaces
    text = header_text(h)
    return text + bytes(3), d, [f"bad header: byte 0x00 at offset {8 + len(text)}"]


def header_spaced(h, d):  # more spaces than the alignment needs: still a valid file
    return header_text(h) + b" " * 21, d, []


LAYOUTS = [overlap, gap, trailing, reversed_offsets, past_end, twice, header_garbage, header_nul]


def mlp(*args, ok=True):
    return H_.run(1, "train", "--model", "mlp", "--hidden", 16, "--layers", 2, "--micro-batch", 2,
                  "--steps", 1, *args, ok=ok)


def test_init_data_layout():
    """zeroc's own weights files (`train --init FILE.safetensors`) are held to the format's
    rule that the tensors' data_offsets tile the data after the header: two tensors on the
    same bytes, a gap, trailing bytes, an end before its begin, a tensor past the end of the
    file or a name given twice is refused naming the file, the tensor and its offsets, before a
    step and without writing weights; so is anything but spaces between the header's JSON and
    the header's declared end (the format pads with spaces), named by its offset. Tensors
    stored in another order than the header lists them are a valid file (older writers sorted
    names) and load the same weights, as does a header padded with more spaces than needed."""
    w = H_.path("mlp.safetensors")
    mlp("--save-weights", w, "--report", H_.path("mlp.json"))
    for edit in LAYOUTS:
        bad, out = H_.path(f"mlp-{edit.__name__}.safetensors"), H_.path("mlp-out.safetensors")
        want = relayout(w, bad, edit)
        p = mlp("--init", bad, "--save-weights", out, ok=False)
        check(p.returncode != 0 and all(x in p.stderr for x in [bad + ":"] + want) and
              "step " not in p.stdout and not os.path.exists(out),
              f"{edit.__name__}: want {want} in the error, got {p.returncode}: {p.stderr[-400:]}")
    mlp("--init", w, "--report", H_.path("mlp-plain.json"))
    b = H_.report("mlp-plain.json")
    for edit in (permuted, header_spaced):
        ok = H_.path(f"mlp-{edit.__name__}.safetensors")
        relayout(w, ok, edit)
        mlp("--init", ok, "--report", H_.path(f"mlp-{edit.__name__}.json"))
        a = H_.report(f"mlp-{edit.__name__}.json")
        check(a["initial_weights_sha256"] == b["initial_weights_sha256"],
              f"the {edit.__name__} file did not load the same weights")


def test_hf_data_layout():
    """The same rule for transformers' model.safetensors, over every tensor of the file (the
    mask buffers zeroc ignores too): each bad layout is refused by name before a step; a file
    whose bytes lie in another order than its header loads the same weights."""
    src = make_hf("hf-lay", buffers=True)
    with open(os.path.join(src, "config.json")) as f:
        cfg = f.read()

    def copy(name, edit):
        d = H_.path(name)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "config.json"), "w") as f:
            f.write(cfg)
        path = os.path.join(d, "model.safetensors")
        return d, path, relayout(os.path.join(src, "model.safetensors"), path, edit)

    for edit in LAYOUTS:
        d, path, want = copy(f"hf-lay-{edit.__name__}", edit)
        p = train(d, f"hf-lay-{edit.__name__}", ok=False)
        check(p.returncode != 0 and all(x in p.stderr for x in [path + ":"] + want) and
              "step " not in p.stdout,
              f"{edit.__name__}: want {want} in the error, got {p.returncode}: {p.stderr[-400:]}")
    b = train(src, "hf-lay-plain")
    for edit in (permuted, header_spaced):
        d, _, _ = copy(f"hf-lay-{edit.__name__}", edit)
        a = train(d, f"hf-lay-{edit.__name__}")
        check(a["initial_weights_sha256"] == b["initial_weights_sha256"],
              f"the {edit.__name__} file did not load the same weights")


TESTS = [test_hf_init_matches_llmc, test_hf_export_byte_identical, test_hf_sample_and_estimate,
         test_hf_bad_inputs, test_init_data_layout, test_hf_data_layout]

if __name__ == "__main__":
    H_.main(TESTS, sys.argv[3:])
