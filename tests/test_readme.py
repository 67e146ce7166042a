#!/usr/bin/env python3
"""test_readme.py — the README's quick start works as a newcomer runs it: the block between
`<!-- quickstart -->` and `<!-- /quickstart -->` in README.md is run verbatim by bash (-e, -u,
pipefail: any failing command fails the test) in a fresh directory holding a copy of the
checkout — its tracked files as they stand (`git stash create`, else HEAD, through `git
archive`), so nothing untracked or built helps it — and every file its commands say they write
exists. One substitution, the only one: the block's build line (`./scripts/build.sh`, which
would take minutes on 2 cores) is replaced by a link to the zeroc this test is given as
build/zeroc. Also: every `--config FILE` the README names exists in the checkout, and the same
block without its `mkdir` fails with a message that says to make the directory (so a broken
quick start fails this test). python3 stdlib only.

Usage: test_readme.py ZEROC_BINARY MPIRUN_SH [test-name ...]"""
import json
import os
import re
import shutil
import subprocess
import sys

from harness import Harness

H_ = Harness(sys.argv[1], sys.argv[2])
check = H_.check
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD_LINE = "./scripts/build.sh"


def quickstart(readme):
    """The shell lines of the quick-start block, fences dropped."""
    m = re.search(r"<!-- quickstart -->\s*```sh\n(.*?)```\s*<!-- /quickstart -->", readme, re.S)
    if not m:
        raise AssertionError("README.md has no <!-- quickstart --> ```sh ... ``` "
                             "<!-- /quickstart --> block")
    return m.group(1)


def checkout_copy(name):
    """A directory holding the checkout's tracked files as they stand now."""
    dest = H_.path(name)
    os.makedirs(dest)
    rev = subprocess.run(["git", "-C", ROOT, "stash", "create"], capture_output=True,
                         text=True).stdout.strip() or "HEAD"
    tar = subprocess.run(["git", "-C", ROOT, "archive", "--format=tar", rev],
                         capture_output=True)
    if tar.returncode != 0:  # not a git checkout (a release tarball): its files, builds left out
        shutil.rmtree(dest)
        shutil.copytree(ROOT, dest, ignore=shutil.ignore_patterns("build*", ".git"))
        return dest
    subprocess.run(["tar", "-x", "-C", dest], input=tar.stdout, check=True)
    return dest


def run_block(block, where, timeout=300):
    """Runs the block in `where` with the build line replaced by a link to the given zeroc."""
    zeroc = os.path.abspath(H_.zeroc)
    lines = []
    for line in block.splitlines():
        if line.split("#")[0].strip() == BUILD_LINE:
            line = f"mkdir -p build && ln -sf {zeroc} build/zeroc  # for: {line.strip()}"
        lines.append(line)
    script = "set -euo pipefail\n" + "\n".join(lines) + "\n"
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    p = subprocess.run(["bash", "-c", script], cwd=where, capture_output=True, text=True,
                       errors="replace", timeout=timeout, env=env)  # a sample may cut a UTF-8 char
    H_.check_sanitizers(["quick start"], p)
    return p


def test_quickstart_verbatim():
    """The quick start, as written, on a copy of the checkout: exit 0; it is short (at most 12
    lines, a mkdir among them, its build line the only one replaced); the data, report, model
    and plot it names are written; the run trained the steps it asked for and sample printed
    text."""
    readme = open(os.path.join(ROOT, "README.md")).read()
    block = quickstart(readme)
    lines = [ln for ln in block.splitlines() if ln.strip()]
    check(len(lines) <= 12, f"the quick start is {len(lines)} lines")
    check(any(ln.startswith("mkdir ") for ln in lines), "no mkdir in the quick start")
    check(sum(ln.split("#")[0].strip() == BUILD_LINE for ln in lines) == 1,
          f"want exactly one '{BUILD_LINE}' line to replace")
    where = checkout_copy("clone")
    check(not os.path.exists(os.path.join(where, "build")) and
          not os.path.exists(os.path.join(where, "data")), "the copy is not fresh")
    p = run_block(block, where)
    check(p.returncode == 0, f"the quick start failed ({p.returncode}):\n{p.stdout[-3000:]}\n"
                             f"{p.stderr[-3000:]}")
    if p.returncode != 0:
        return
    outs = re.findall(r"--(?:out|report|save-final)\s+(\S+)", block)
    check(len(outs) >= 3, f"outputs named: {outs}")
    for o in outs:
        if o.startswith("data/"):  # prepare's --out is a prefix
            for suffix in ("_train.bin", "_val.bin"):
                check(os.path.getsize(os.path.join(where, o + suffix)) > 0, f"{o}{suffix}")
        else:
            check(os.path.isfile(os.path.join(where, o)), f"{o} was not written")
    steps = re.search(r"--steps\s+(\d+)", block)
    rep = os.path.join(where, "run.json")
    if steps and os.path.isfile(rep):
        r = json.load(open(rep))
        check(r["steps"] == int(steps.group(1)), f"report: {r['steps']} steps")
    check("wrote run.svg" in p.stdout, f"plot said: {p.stdout[-500:]}")
    check("stage" in p.stdout.lower() and "124" in p.stdout, "estimate printed no table")


def test_quickstart_needs_its_mkdir():
    """Without its mkdir the quick start fails (so this test can fail), at prepare, with a
    message that says to make the directory, before reading any text."""
    readme = open(os.path.join(ROOT, "README.md")).read()
    block = "\n".join(ln for ln in quickstart(readme).splitlines() if not ln.startswith("mkdir "))
    where = checkout_copy("no-mkdir")
    p = run_block(block, where)
    check(p.returncode != 0 and "mkdir -p data" in p.stderr and "does not exist" in p.stderr,
          f"without mkdir: exit {p.returncode}: {p.stderr[-800:]!r}")


def test_configs_named_exist():
    """Every `--config FILE` in README.md (and the docs) names a file the checkout ships, and
    examples/ds_config.json, which the quick start uses, is one zeroc accepts."""
    named = set()
    for doc in ["README.md"] + [os.path.join("docs", f) for f in os.listdir(
            os.path.join(ROOT, "docs")) if f.endswith(".md")]:
        text = open(os.path.join(ROOT, doc)).read()
        for c in re.findall(r"--config\s+([\w./-]+\.json)", text):
            named.add(c)
            check(os.path.isfile(os.path.join(ROOT, c)), f"{doc}: --config {c}: no such file")
    check("examples/ds_config.json" in named, f"configs named: {sorted(named)}")
    H_.run(1, "train", "--model", "mlp", "--hidden", 16, "--layers", 2, "--steps", 2,
           "--config", os.path.join(ROOT, "examples", "ds_config.json"))


# SmolLM2's chat template (ChatML with a default system message), as its tokenizer_config.json
SMOLLM2_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ "
    "'<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
    "Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + "
    "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ "
    "'<|im_start|>assistant\n' }}{% endif %}")


def test_lora_verbatim():
    """The README's LoRA block, as written, with its model directory a tiny Llama (the fixture
    llama_tiny's config.json and weights, a 271-token tokenizer.json with ChatML's markers and
    SmolLM2's template) and chats.jsonl a few conversations: exit 0; train said what LoRA trains;
    the checkpoint, the PEFT adapter (r 16, all seven modules) and a sampled answer are there."""
    readme = open(os.path.join(ROOT, "README.md")).read()
    m = re.search(r"<!-- lora -->\s*```sh\n(.*?)```\s*<!-- /lora -->", readme, re.S)
    check(m is not None, "README.md has no <!-- lora --> ```sh ... ``` <!-- /lora --> block")
    if not m:
        return
    block = m.group(1)
    names = set(re.findall(r"--init\s+(\S+)", block))
    check(len(names) == 1, f"the block names model directories {names}")
    where = H_.path("lora-readme")
    model = os.path.join(where, names.pop())
    os.makedirs(model)
    fix = os.path.join(ROOT, "tests", "fixtures", "llama_tiny")
    for f in ("config.json", "model.safetensors"):
        shutil.copy(os.path.join(fix, f), model)
    shutil.copy(os.path.join(ROOT, "fuzz", "vocab_chat", "tokenizer.json"), model)
    with open(os.path.join(model, "tokenizer_config.json"), "w") as f:
        json.dump({"bos_token": None, "eos_token": "<|im_end|>",
                   "chat_template": SMOLLM2_TEMPLATE}, f)
    with open(os.path.join(where, "chats.jsonl"), "w") as f:
        for i in range(40):
            f.write(json.dumps({"messages": [
                {"role": "user", "content": f"Say yes {i}"},
                {"role": "assistant", "content": "yes" if i % 2 else "Yes, of course."}]}) + "\n")
    os.makedirs(os.path.join(where, "build"))
    os.symlink(os.path.abspath(H_.zeroc), os.path.join(where, "build", "zeroc"))
    p = run_block(block, where)
    check(p.returncode == 0, f"the LoRA block failed ({p.returncode}):\n{p.stdout[-3000:]}\n"
                             f"{p.stderr[-3000:]}")
    if p.returncode != 0:
        return
    check("lora: r 16, lora_alpha 32" in p.stdout, f"train did not say LoRA: {p.stdout[:600]!r}")
    conf = json.load(open(os.path.join(where, "lora-adapter", "adapter_config.json")))
    check(conf["r"] == 16 and len(conf["target_modules"]) == 7, f"adapter_config.json {conf}")
    check(os.path.isfile(os.path.join(where, "lora-adapter", "adapter_model.safetensors")),
          "no adapter_model.safetensors")
    check(p.stdout.strip() and "step    20/20" in p.stdout, f"output: {p.stdout[-600:]!r}")


TESTS = [test_quickstart_verbatim, test_quickstart_needs_its_mkdir, test_configs_named_exist,
         test_lora_verbatim]

if __name__ == "__main__":
    H_.main(TESTS, sys.argv[3:])
