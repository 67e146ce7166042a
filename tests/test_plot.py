#!/usr/bin/env python3
"""test_plot.py — `zeroc plot` draws what the reports say: every point of the loss, validation,
rate and gradient-norm curves and every memory bar maps back (through the axes each panel
records) to the report's value; bad reports are refused by name. python3 stdlib only.

Usage: test_plot.py ZEROC_BINARY MPIRUN_SH [test-name ...]"""
import json
import math
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

from harness import Harness

H_ = Harness(sys.argv[1], sys.argv[2])
check = H_.check
NS = "{http://www.w3.org/2000/svg}"


def plot(*args, ok=True):
    p = subprocess.run([H_.zeroc, "plot", *map(str, args)], capture_output=True, text=True,
                       timeout=60)
    H_.check_sanitizers(["zeroc", "plot", *map(str, args)], p)
    if ok and p.returncode != 0:
        raise AssertionError(f"plot {args} failed: {p.stderr}")
    return p


def panels(svg):
    root = ET.parse(svg).getroot()
    out = {}
    for g in root.iter(NS + "g"):
        if g.get("id"):
            a = {k: float(g.get("data-" + k)) for k in
                 ("x0", "x1", "y0", "y1", "px", "py", "pw", "ph")}
            out[g.get("id")] = (g, a)
    return root, out


def back(a, px, py):
    """Pixel → data through the panel's recorded axes."""
    x = a["x0"] + (px - a["px"]) / a["pw"] * (a["x1"] - a["x0"])
    y = a["y0"] + (a["py"] + a["ph"] - py) / a["ph"] * (a["y1"] - a["y0"])
    return x, y


def close(a, got, want):
    # coordinates are written with 2 decimals: half a hundredth of a pixel, in data units
    tol = 0.006 * (a["y1"] - a["y0"]) / a["ph"]
    return abs(got - want) <= tol


def curve(g, a, cls, run, report, key, first):
    pts = [tuple(map(float, p.split(","))) for e in g.iter(NS + "polyline")
           if e.get("class") == cls and e.get("data-run") == str(run)
           for p in e.get("points").split()]
    want = [(first + i + 1, v) for i, v in enumerate(report[key]) if v is not None]
    check(len(pts) == len(want), f"{cls} run {run}: {len(pts)} points, report has {len(want)}")
    for (px, py), (step, v) in zip(pts, want):
        x, y = back(a, px, py)
        check(abs(x - step) < 0.01 and close(a, y, v), f"{cls} run {run} step {step}: "
              f"plotted {y:.6g}, report {v:.6g}")


def test_plot_matches_reports():
    """A 2-rank GPT-2 run with validation every 4 steps beside a 1-rank MLP run: the curves'
    points and the memory bars equal the reports' numbers; steps per second (the MLP has no
    tokens) is 1000 / step_ms."""
    train_tok, val_tok = H_.text_tokens()
    g = H_.path("gpt2.json")
    H_.run(2, "train", "--model", "gpt2", "--data", train_tok, "--val-data", val_tok,
           "--val-every", 4, "--val-batches", 2, "--layers", 2, "--channels", 32, "--heads", 2,
           "--seq-len", 16, "--micro-batch", 2, "--steps", 10, "--stage", 3, "--report", g)
    m = H_.path("mlp.json")
    H_.run(1, "train", "--hidden", 32, "--layers", 2, "--steps", 6, "--report", m)
    svg = H_.path("both.svg")
    p = plot(g, m, "--out", svg)
    check(p.stdout.strip() == f"wrote {svg} (2 runs)", p.stdout)
    reps = [json.load(open(g)), json.load(open(m))]
    check(sum(v is not None for v in reps[0]["val_loss"]) == 3,
          f"val_loss: {reps[0]['val_loss']} (validated at steps 4, 8 and the last)")
    root, ps = panels(svg)
    check(set(ps) == {"loss", "rate", "grad_norm", "memory"}, f"panels {set(ps)}")
    legend = [t.text for t in root.iter(NS + "text") if t.text in (g, m)]
    check(legend == [g, m], f"legend {legend}")
    for run, rep in enumerate(reps):
        curve(*ps["loss"], "loss", run, rep, "loss", rep["first_step"])
        curve(*ps["grad_norm"], "grad_norm", run, rep, "grad_norm", rep["first_step"])
        rate = dict(rep, rate=[1000.0 / ms for ms in rep["step_ms"]])
        curve(*ps["rate"], "rate", run, rate, "rate", rep["first_step"])
    curve(*ps["loss"], "val", 0, reps[0], "val_loss", 0)
    title = [t.text for t in ps["rate"][0].iter(NS + "text")][0]
    check(title == "steps per second", f"rate title {title!r}")
    gm, a = ps["memory"]
    rects = [r for r in gm.iter(NS + "rect") if r.get("class") == "mem"]
    check(len(rects) == 5 * (2 + 1), f"{len(rects)} memory bars, want 5 categories x 3 ranks")
    for r in rects:
        rep = reps[int(r.get("data-run"))]
        want = rep["memory"]["ranks"][int(r.get("data-rank"))][r.get("data-category")] / 2**20
        got = float(r.get("height")) / a["ph"] * (a["y1"] - a["y0"])
        check(close(a, got, want) or abs(got - want) <= 0.012 * (a["y1"] - a["y0"]) / a["ph"],
              f"bar {r.attrib}: {got} MiB, report {want}")
    # one GPT-2 report alone: tokens per second, default output name
    p = plot(g)
    root, ps = panels(H_.path("gpt2.svg"))
    title = [t.text for t in ps["rate"][0].iter(NS + "text")][0]
    check(title == "tokens per second", f"rate title {title!r}")
    rate = dict(reps[0], rate=[reps[0]["tokens_per_step"] * 1000.0 / ms
                               for ms in reps[0]["step_ms"]])
    curve(*ps["rate"], "rate", 0, rate, "rate", 0)


def test_plot_bad_input():
    """Missing, non-JSON and incomplete reports, a bad flag and no report: exit 1, one message
    naming the file and key; nothing written."""
    bad = H_.path("bad.json")
    with open(bad, "w") as f:
        json.dump({"steps": 2, "first_step": 0, "tokens_per_step": 0, "loss": [1.0]}, f)
    junk = H_.path("junk.json")
    with open(junk, "w") as f:
        f.write("step 1 | loss 2.0")
    out = H_.path("never.svg")
    for args, needle in (([H_.path("missing.json")], "cannot read report"),
                         ([junk], "not JSON"),
                         ([bad], '"loss" must be an array of 2 numbers'),
                         (["--frob"], "unknown flag '--frob'"),
                         ([], "give one or more report files")):
        p = plot(*args, "--out", out, ok=False)
        check(p.returncode == 1 and needle in p.stderr and p.stderr.count("zeroc: error") == 1,
              f"{args}: {p.returncode} {p.stderr!r}")
    check(not os.path.exists(out) and not os.path.exists(out + ".tmp"), "a file was written")


TESTS = [test_plot_matches_reports, test_plot_bad_input]

if __name__ == "__main__":
    H_.main(TESTS, sys.argv[3:])
