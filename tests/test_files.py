#!/usr/bin/env python3
"""test_files.py — what zeroc does with files that are not plain files (python3 stdlib): inputs
that are FIFOs (a checkpoint's latest, manifest.json or manifest.sha256, a plot report, --init
safetensors or llm.c files, --data, a --vocab directory's files) are refused at once, naming the path and what it is, instead
of blocking forever; outputs through a symbolic link replace the file it points at and leave the
link a link, but a dangling link, or one another user planted in a sticky directory, is refused
with its target untouched; outputs onto a device or a FIFO are refused with nothing written; a manifest with a
parameter name twice is refused; manifest.sha256 as any sha256sum writes it is accepted; `zeroc
plot DIR` says DIR is a directory; standard output that cannot be written fails the command, and
the exit codes of a usage error. Prints "N passed, N failed".

Usage: test_files.py ZEROC_BINARY MPIRUN_SH [test-name ...]"""
import hashlib
import json
import os
import shlex
import shutil
import signal
import stat
import struct
import subprocess
import sys

from harness import Harness

H_ = Harness(sys.argv[1], sys.argv[2])
check = H_.check
M = ["--model", "mlp", "--hidden", 64, "--layers", 3]
QUICK = 15  # seconds: a refusal is immediate; a reader blocked on a FIFO never returns


class Result:
    def __init__(self, cmd, returncode, stdout, stderr):
        self.cmd, self.returncode, self.stdout, self.stderr = cmd, returncode, stdout, stderr
        self.hung = returncode is None


def run(*args, n=None, timeout=QUICK):
    """`zeroc ARGS` (under mpirun on n ranks when n is given) in its own session: on a timeout
    the whole tree is killed (a reader blocked in open() on a FIFO would outlive its parent) and
    the result has hung set and returncode None."""
    cmd = ([H_.mpirun, str(n)] if n else []) + [H_.zeroc, *map(str, args)]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
        r = Result(cmd, p.returncode, out, err)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGTERM)  # mpirun passes it on to its ranks
        try:
            out, err = p.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, err = p.communicate()
        r = Result(cmd, None, out, err)
    H_.check_sanitizers(cmd, r)
    return r


def refused(r, *needles):
    """r exited non-zero in time, and its message holds every needle."""
    what = " ".join(map(str, r.cmd[-6:]))
    if r.hung:
        check(False, f"{what}: still running after {QUICK} s (blocked on a FIFO?)")
        return
    check(r.returncode not in (0, None), f"{what}: exit {r.returncode}, expected a refusal")
    for s in needles:
        check(s in r.stderr, f"{what}: message lacks {s!r}: {r.stderr!r}")


def fifo(path):
    if os.path.lexists(path):
        os.remove(path)
    os.mkfifo(path)
    return path


def save_dir():
    """A save directory of 2 MLP steps (latest -> step-000002), made once."""
    d = H_.path("ck")
    if not os.path.exists(d):
        H_.run(1, "train", *M, "--steps", 2, "--save-dir", d)
    return d


def copy_step(name):
    """A copy of the saved checkpoint directory, under a step-N name as the original."""
    dst = H_.path(name)
    shutil.rmtree(dst, ignore_errors=True)
    os.makedirs(dst)
    dst = os.path.join(dst, "step-000002")
    shutil.copytree(os.path.join(save_dir(), "step-000002"), dst)
    return dst


def write_digest(ck, line):
    with open(os.path.join(ck, "manifest.sha256"), "w") as f:
        f.write(line)


def digest(ck):
    return hashlib.sha256(open(os.path.join(ck, "manifest.json"), "rb").read()).hexdigest()


def gpt2_tokens():
    """A small llm.c token file (the harness's pangram text)."""
    return H_.text_tokens()[0]


def gpt2_args(data):
    return ["--model", "gpt2", "--data", data, "--layers", 1, "--channels", 32, "--heads", 2,
            "--seq-len", 16, "--micro-batch", 2, "--steps", 1]


def test_fifo_manifest_files():
    """A FIFO as a checkpoint's manifest.json or manifest.sha256: inspect, verify, export and
    --resume exit non-zero at once, naming the file and that it is a FIFO."""
    for name in ("manifest.json", "manifest.sha256"):
        ck = copy_step("fifo-" + name)
        path = fifo(os.path.join(ck, name))
        for args in (["ckpt", "inspect", ck], ["ckpt", "verify", ck],
                     ["ckpt", "export", ck, "--out", H_.path("never.safetensors")]):
            refused(run(*args), path, "FIFO")
        refused(run("train", *M, "--steps", 3, "--resume", ck, n=1), path, "FIFO")
        check(not os.path.exists(H_.path("never.safetensors")), "an export was written")


def test_fifo_latest():
    """A FIFO as a save directory's `latest`: inspect, verify and --resume exit non-zero at once,
    naming it and that it is a FIFO (they said the directory had no latest)."""
    d = H_.path("fifo-latest")
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(save_dir(), d)
    fifo(os.path.join(d, "latest"))
    refused(run("ckpt", "inspect", d), d, "latest", "FIFO")
    refused(run("ckpt", "verify", d), d, "latest", "FIFO")
    refused(run("train", *M, "--steps", 3, "--resume", d, n=1), d, "latest", "FIFO")


def test_fifo_plot_report():
    """`zeroc plot FIFO.json` exits non-zero at once, naming the file and that it is a FIFO."""
    path = fifo(H_.path("report-fifo.json"))
    refused(run("plot", path, "--out", H_.path("never.svg")), path, "FIFO")
    check(not os.path.exists(H_.path("never.svg")), "a plot was written")


def test_fifo_init_and_data():
    """A FIFO as --init (a .safetensors for the MLP and for GPT-2, an llm.c .bin for GPT-2), as
    --data or --val-data: the run exits non-zero at once, naming the file."""
    st = fifo(H_.path("init-fifo.safetensors"))
    refused(run("train", *M, "--steps", 1, "--init", st, n=1), st, "FIFO")
    data = gpt2_tokens()
    refused(run("train", *gpt2_args(data), "--init", st, n=1), st, "FIFO")
    binf = fifo(H_.path("init-fifo.bin"))
    refused(run("train", *gpt2_args(data), "--init", binf, n=1), binf, "FIFO")
    tok = fifo(H_.path("data-fifo.bin"))
    refused(run("train", *gpt2_args(tok), n=1), tok, "FIFO")
    refused(run("train", *gpt2_args(data), "--val-data", tok, "--val-every", 1, n=1), tok,
            "FIFO")


def test_output_through_symlink():
    """An export, a --report and a --save-weights written to a symbolic link replace the file the
    link points at (relative or absolute, through a chain of links) and leave the link a link; a
    dangling link is refused, naming it, and its target is not created (as cp refuses to write
    through one; it was created), as is one whose target's directory is missing."""
    d = save_dir()
    plain = H_.path("plain.safetensors")
    run("ckpt", "export", d, "--out", plain)
    want = open(plain, "rb").read()
    os.makedirs(H_.path("targets"), exist_ok=True)
    cases = (("rel", "targets/rel.safetensors", True),      # relative, existing
             ("abs", H_.path("targets/abs.safetensors"), True))  # absolute, existing
    for tag, target, existing in cases:
        tpath = target if os.path.isabs(target) else H_.path(target)
        if existing:
            with open(tpath, "w") as f:
                f.write("old")
        link = H_.path(f"link-{tag}.safetensors")
        os.symlink(target, link)
        r = run("ckpt", "export", d, "--out", link)
        check(r.returncode == 0, f"{tag}: export through a link failed: {r.stderr!r}")
        check(os.path.islink(link) and os.readlink(link) == target,
              f"{tag}: the link was replaced")
        check(os.path.isfile(tpath) and open(tpath, "rb").read() == want,
              f"{tag}: the link's target does not hold the export")
    chain = H_.path("link-chain.safetensors")
    os.symlink("link-rel.safetensors", chain)
    r = run("ckpt", "export", d, "--out", chain)
    check(r.returncode == 0 and os.path.islink(chain) and
          os.path.islink(H_.path("link-rel.safetensors")) and
          open(H_.path("targets/rel.safetensors"), "rb").read() == want,
          f"a chain of links: {r.stderr!r}")
    dangling = H_.path("link-dangling.safetensors")
    os.symlink("targets/new.safetensors", dangling)
    refused(run("ckpt", "export", d, "--out", dangling), dangling, "dangling")
    check(not os.path.lexists(H_.path("targets/new.safetensors")),
          "a dangling link's target was created")
    # train's early check says why (it said "cannot write there: File exists")
    r = run("train", *M, "--steps", 1, "--report", dangling, n=1, timeout=300)
    refused(r, dangling, "dangling")
    check("File exists" not in r.stderr, f"train --report onto a dangling link: {r.stderr!r}")
    nodir = H_.path("link-nodir.safetensors")
    os.symlink("no-such-dir/x.safetensors", nodir)
    refused(run("ckpt", "export", d, "--out", nodir), nodir, "no-such-dir")
    check(os.path.islink(nodir) and not os.path.exists(H_.path("no-such-dir")),
          "a link into a missing directory was written")
    # train's outputs go through the same writer
    for flag in ("--report", "--save-weights"):
        target = H_.path(f"targets/train{flag}")
        link = H_.path(f"link{flag}")
        with open(target, "w") as f:
            f.write("old")
        os.symlink(target, link)
        r = run("train", *M, "--steps", 1, flag, link, n=1, timeout=300)
        check(r.returncode == 0, f"train {flag} through a link: {r.stderr!r}")
        check(os.path.islink(link) and os.path.getsize(target) > 3,
              f"train {flag}: the link was replaced or its target not written")
    check(not [f for f in os.listdir(H_.path("targets")) if ".tmp-" in f],
          f"temporary files left: {os.listdir(H_.path('targets'))}")


def as_nobody(*cmd):
    """Runs cmd as uid/gid 65534 (nobody), with no supplementary groups."""
    subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *cmd],
                   check=True, capture_output=True, text=True, timeout=QUICK)


def byte_vocab(d):
    """A GPT-2-format vocabulary in directory d: the 256 byte tokens and one merge ("h i")."""
    os.makedirs(d, exist_ok=True)
    bs = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAC + 1), *range(0xAE, 0xFF + 1)]
    cs = bs[:]
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + len(cs) - 188)
    enc = {chr(c): b for b, c in zip(bs, cs)}
    enc["hi"] = 256
    with open(os.path.join(d, "encoder.json"), "w") as f:
        json.dump(enc, f)
    with open(os.path.join(d, "vocab.bpe"), "w") as f:
        f.write("#version: 0.2\nh i\n")
    return d


def test_planted_links_refused():
    """In a sticky world-writable directory (as /tmp), a symbolic link another user planted at an
    output path — dangling, or pointing at an existing file of ours — is refused by every writer
    (train --report, --save-dir's latest, ckpt export --out, plot --out, tokenize --out, prepare
    --out), or as a directory on the way to it: exit non-zero, a message naming the link and that
    another user owns it; the target is neither created nor changed (each was written through the
    link, exit 0). Our own link there to our own file is still written through. Needs root (to plant as uid 65534): skipped otherwise."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        print("  skipped: needs root and setpriv to plant links as another user")
        return
    os.chmod(H_.tmp, 0o711)  # nobody may reach the shared directories, not list ours
    shared = H_.path("shared")
    shutil.rmtree(shared, ignore_errors=True)
    os.makedirs(shared)
    os.chmod(shared, 0o1777)
    victim = H_.path("victim")
    shutil.rmtree(victim, ignore_errors=True)
    os.makedirs(victim)
    report = H_.path("planted-report.json")
    H_.run(1, "train", *M, "--steps", 2, "--report", report)
    text = H_.path("planted.txt")
    with open(text, "w") as f:
        f.write("hi there, " * 50)
    vocab = byte_vocab(H_.path("byte-vocab"))
    ck = save_dir()

    def plant(name, target):
        link = os.path.join(shared, name)
        if os.path.lexists(link):
            os.remove(link)
        as_nobody("ln", "-s", target, link)
        check(os.lstat(link).st_uid == 65534, f"{link}: not planted as uid 65534")
        return link

    def outputs():
        """(tag, output name in shared, command given the output path, name the command writes)"""
        return (("report", "r.json", lambda o: ["train", *M, "--steps", 1, "--report", o], None),
                ("export", "e.safetensors", lambda o: ["ckpt", "export", ck, "--out", o], None),
                ("plot", "p.svg", lambda o: ["plot", report, "--out", o], None),
                ("tokenize", "t.txt", lambda o: ["tokenize", "--vocab", vocab, "--text", text,
                                                 "--out", o], None),
                ("prepare", "d", lambda o: ["prepare", "--text", text, "--out", o], "d_train.bin"))

    for existing in (False, True):
        for tag, name, cmd, written in outputs():
            target = os.path.join(victim, f"{tag}-{existing}")
            if existing:
                with open(target, "w") as f:
                    f.write("precious")
            out = os.path.join(shared, name)
            link = plant(written or name, target)
            r = run(*cmd(out), n=1 if tag == "report" else None, timeout=300)
            refused(r, link, "another user", "sticky")
            if existing:
                check(open(target, "rb").read() == b"precious",
                      f"{tag}: the link's target was changed")
            else:
                check(not os.path.lexists(target), f"{tag}: the link's target was created")
            check(os.path.islink(link), f"{tag}: the planted link was replaced")
            os.remove(link)
            if os.path.lexists(target):
                os.remove(target)
    # --save-dir's latest: a save directory in the shared directory, latest planted there
    sd = os.path.join(shared, "ck")
    os.makedirs(sd)
    os.chmod(sd, 0o1777)
    for existing in (False, True):
        target = os.path.join(victim, f"latest-{existing}")
        if existing:
            with open(target, "w") as f:
                f.write("precious")
        link = plant("ck/latest", target)
        r = run("train", *M, "--steps", 1, "--save-dir", sd, n=1, timeout=300)
        refused(r, link, "another user")
        check(open(target, "rb").read() == b"precious" if existing
              else not os.path.lexists(target),
              f"--save-dir latest (existing {existing}): the link's target was written")
        check(not [e for e in os.listdir(sd) if e.startswith("step-")],
              f"--save-dir: a checkpoint was saved: {os.listdir(sd)}")
        os.remove(link)
    # a directory on the way that is a planted link (followed by the kernel unless
    # fs.protected_symlinks is on): shared/d -> victim, the output shared/d/NAME
    dlink = plant("dirlink", victim)
    for tag, name, cmd, written in outputs():
        out = os.path.join(dlink, name)
        r = run(*cmd(out), n=1 if tag == "report" else None, timeout=300)
        refused(r, dlink, "another user")
        check(not os.path.lexists(os.path.join(victim, written or name)),
              f"{tag}: written through the planted directory link")
    before = sorted(os.listdir(victim))
    r = run("train", *M, "--steps", 1, "--save-dir", dlink, n=1, timeout=300)
    refused(r, dlink, "another user")
    check(sorted(os.listdir(victim)) == before,
          f"--save-dir through a planted link wrote {sorted(os.listdir(victim))}")
    os.remove(dlink)
    # our own link in the shared directory, to our own file: written through as before
    mine = os.path.join(victim, "mine.svg")
    with open(mine, "w") as f:
        f.write("old")
    own = os.path.join(shared, "own.svg")
    os.symlink(mine, own)
    r = run("plot", report, "--out", own)
    check(r.returncode == 0 and os.path.islink(own) and open(mine).read().startswith("<"),
          f"our own link in a sticky directory: {r.returncode} {r.stderr!r}")


def test_fifo_vocab():
    """A FIFO in a --vocab directory, named as a vocabulary file (encoder.json, vocab.bpe,
    vocab.json, merges.txt, gpt2_tokenizer.bin): tokenize and detokenize exit non-zero at once,
    naming the file and that it is a FIFO (tokenize waited on encoder.json forever)."""
    good = byte_vocab(H_.path("fifo-vocab-good"))
    for name, cmd in (("encoder.json", "tokenize"), ("vocab.bpe", "tokenize"),
                      ("vocab.json", "tokenize"), ("merges.txt", "tokenize"),
                      ("gpt2_tokenizer.bin", "detokenize")):
        d = H_.path(f"fifo-vocab-{name}")
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        if name in ("encoder.json", "vocab.bpe"):  # its partner a regular file
            shutil.copy(os.path.join(good, "vocab.bpe" if name == "encoder.json" else
                                     "encoder.json"), d)
        elif name in ("vocab.json", "merges.txt"):
            shutil.copy(os.path.join(good, "vocab.bpe" if name == "vocab.json" else
                                     "encoder.json"),
                        os.path.join(d, "merges.txt" if name == "vocab.json" else "vocab.json"))
        path = fifo(os.path.join(d, name))
        p = subprocess.Popen([H_.zeroc, cmd, "--vocab", d], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
        try:
            _, err = p.communicate("hi\n" if cmd == "tokenize" else "1 2\n", timeout=QUICK)
            r = Result([cmd, "--vocab", d], p.returncode, "", err)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
            r = Result([cmd, "--vocab", d], None, "", "")
        refused(r, path, "FIFO")


def test_output_not_regular_refused():
    """An export or a plot onto a character device (mknod, as /dev/null), a FIFO, or a link to
    either, and train's --report and --save-weights onto each, are refused naming the path
    and what it is; the node stays as it was and no temporary file is left beside it."""
    d = save_dir()
    odir = H_.path("nodes")
    shutil.rmtree(odir, ignore_errors=True)
    os.makedirs(odir)
    nodes = [(fifo(os.path.join(odir, "out-fifo")), "FIFO", stat.S_ISFIFO)]
    dev = os.path.join(odir, "out-dev")
    try:
        os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        nodes.append((dev, "character device", stat.S_ISCHR))
    except PermissionError:  # not root: the FIFO alone
        pass
    for node, kind, is_kind in list(nodes):
        link = node + "-link"
        os.symlink(os.path.basename(node), link)
        nodes.append((link, kind, is_kind))
    H_.run(1, "train", *M, "--steps", 2, "--report", H_.path("rep.json"))
    for node, kind, is_kind in nodes:
        refused(run("ckpt", "export", d, "--out", node), node, kind)
        refused(run("plot", H_.path("rep.json"), "--out", node), node, kind)
        check(is_kind(os.stat(node).st_mode), f"{node} was replaced")
    # train's outputs too (its writability probe opened a FIFO for writing before the run and
    # waited for a reader forever: cli/output_paths.c)
    for node, kind, is_kind in nodes:
        for flag in ("--report", "--save-weights"):
            refused(run("train", *M, "--steps", 1, flag, node, n=1, timeout=300), node, kind)
            check(is_kind(os.stat(node).st_mode), f"train {flag}: {node} was replaced")
    for node, _, _ in nodes:
        if os.path.islink(node):
            check(os.path.islink(node), f"{node}: the link was replaced")
    check(sorted(os.listdir(odir)) == sorted(os.path.basename(n) for n, _, _ in nodes),
          f"files left beside the nodes: {os.listdir(odir)}")


def test_duplicate_param_name():
    """A re-hashed manifest naming one parameter twice is refused by verify and export, naming
    the file, the name and both indices; nothing is exported."""
    ck = copy_step("dup")
    mpath = os.path.join(ck, "manifest.json")
    m = json.load(open(mpath))
    name = m["params"][0]["name"]
    m["params"][1]["name"] = name
    json.dump(m, open(mpath, "w"), indent=1)
    write_digest(ck, f"{digest(ck)}  manifest.json\n")
    out = H_.path("dup.safetensors")
    for args in (["ckpt", "verify", ck], ["ckpt", "export", ck, "--out", out]):
        refused(run(*args), mpath, f"'{name}'", "params[0]", "params[1]")
    check(not os.path.exists(out), "an export with a repeated name was written")


def test_sha256sum_formats():
    """manifest.sha256 as sha256sum writes it — text mode, binary mode (-b: ' *'), the digest in
    capitals, without the trailing newline, the digest alone — verifies; a line that is not a
    digest is refused showing what is there."""
    ck = copy_step("sums")
    h = digest(ck)
    for line in (f"{h}  manifest.json\n", f"{h} *manifest.json\n", f"{h}  manifest.json",
                 f"{h} *manifest.json", f"{h.upper()}  manifest.json\n", f"{h}\n", h):
        write_digest(ck, line)
        r = run("ckpt", "verify", ck)
        check(r.returncode == 0, f"{line!r} refused: {r.stderr!r}")
    if shutil.which("sha256sum"):
        for flag in ("-b", "-t"):
            p = subprocess.run(["sha256sum", flag, "manifest.json"], cwd=ck, capture_output=True,
                               text=True, check=True)
            write_digest(ck, p.stdout)
            r = run("ckpt", "verify", ck)
            check(r.returncode == 0, f"sha256sum {flag}: {p.stdout!r} refused: {r.stderr!r}")
    for line, shown in (("hello world\n", "hello world"),
                        (f"{h}  other.json\n", "other.json"),
                        (f"{h}  manifest.json\nextra\n", "extra"),
                        (f"{h[:-1]}  manifest.json\n", h[:-1])):
        write_digest(ck, line)
        refused(run("ckpt", "verify", ck), "manifest.sha256", shown)
    write_digest(ck, f"{'0' * 64}  manifest.json\n")
    refused(run("ckpt", "verify", ck), "edited or is corrupt", "0" * 64, h)


def test_plot_directory():
    """`zeroc plot DIR` says DIR is a directory."""
    d = H_.path("a-dir.json")
    os.makedirs(d, exist_ok=True)
    r = run("plot", d, "--out", H_.path("never.svg"))
    refused(r, d, "is a directory")
    check("9223372036854775807" not in r.stderr, f"message: {r.stderr!r}")


def test_standard_streams():
    """Standard output is a file too: when it cannot be written (/dev/full, a closed descriptor)
    a command that printed exits 1 saying so (they exited 0), an MPI command and one without MPI
    alike; `zeroc` alone prints its usage to standard error and exits 2, an unknown command 2;
    the top-level help lists every command aligned, each with its --help; `train --help` starts
    with its usage (the threads line came first)."""
    ck = save_dir()
    report = H_.path("streams.json")
    H_.run(1, "train", *M, "--steps", 2, "--report", report)
    for args in (["estimate", "--json", "--params", "1M"], ["ckpt", "inspect", ck],
                 ["plot", report, "--out", H_.path("streams.svg")], ["--help"]):
        for redirect, reason in ((">/dev/full", "No space left on device"),
                                 (">&-", "Bad file descriptor")):
            cmd = " ".join(map(shlex.quote, [H_.zeroc, *map(str, args)])) + " " + redirect
            p = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, timeout=QUICK)
            H_.check_sanitizers(cmd.split(), p)
            # the last line zeroc writes (LeakSanitizer's suppression summary may follow it)
            mine = [l for l in p.stderr.splitlines() if l.startswith("zeroc")]
            check(p.returncode == 1 and mine and
                  mine[-1] == f"zeroc: error: standard output: write error: {reason}",
                  f"{cmd}: {p.returncode} {p.stderr!r}")
    p = subprocess.run([H_.zeroc], capture_output=True, text=True, timeout=QUICK)
    check(p.returncode == 2 and p.stdout == "" and p.stderr.startswith("usage: zeroc <command>"),
          f"zeroc alone: {p.returncode} {p.stdout!r} {p.stderr[:80]!r}")
    p = subprocess.run([H_.zeroc, "frobnicate"], capture_output=True, text=True, timeout=QUICK)
    check(p.returncode == 2 and "unknown command 'frobnicate'" in p.stderr,
          f"zeroc frobnicate: {p.returncode} {p.stderr!r}")
    p = subprocess.run([H_.zeroc, "--help"], capture_output=True, text=True, timeout=QUICK)
    rows = [line for line in p.stdout.splitlines() if line.startswith("  ")]
    names = [line.split()[0] for line in rows]
    check(names == ["train", "prepare", "sample", "estimate", "analyze", "ckpt", "plot",
                    "tokenize", "detokenize"], f"--help lists {names}")
    starts = {len(line) - len(line[2:].split(None, 1)[1]) for line in rows}
    check(len(starts) == 1, f"--help descriptions start at columns {sorted(starts)}")
    for line in rows:
        check(line.endswith(f"(zeroc {line.split()[0]} --help)"), f"--help row {line!r}")
    p = subprocess.run([H_.zeroc, "train", "--help"], capture_output=True, text=True,
                       timeout=QUICK)
    check(p.returncode == 0 and p.stdout.startswith("usage: zeroc train"),
          f"train --help begins {p.stdout[:120]!r}")


TESTS = [test_fifo_manifest_files, test_fifo_latest, test_fifo_plot_report,
         test_fifo_init_and_data, test_output_through_symlink, test_planted_links_refused,
         test_fifo_vocab, test_output_not_regular_refused,
         test_duplicate_param_name, test_sha256sum_formats, test_plot_directory,
         test_standard_streams]

if __name__ == "__main__":
    H_.main(TESTS, sys.argv[3:])
