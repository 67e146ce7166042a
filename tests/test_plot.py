#!/usr/bin/env python3
"""test_plot.py — `zeroc plot` draws what the reports say: every point of the loss, validation,
rate, gradient-norm and learning-rate curves and every memory bar maps back (through the axes
each panel records) to the report's value, the noisy series' smoothed lines are the debiased
moving average of those values drawn over the faint raw ones, and the legend names each run by
its model, stage and dtype; bad reports are refused by name. python3 stdlib only.

Usage: test_plot.py ZEROC_BINARY MPIRUN_SH [test-name ...]"""
import json
import math
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

from harness import Harness

H_ = Harness(sys.argv[1], sys.argv[2])
check = H_.check
NS = "{http://www.w3.org/2000/svg}"


def plot(*args, ok=True, timeout=60):
    p = subprocess.run([H_.zeroc, "plot", *map(str, args)], capture_output=True, text=True,
                       timeout=timeout)
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


def smoothed(values, w):
    """TensorBoard's debiased exponential moving average (cli/plot.c's smooth)."""
    out, last, n = [], 0.0, 0
    for v in values:
        if v is None:
            out.append(None)
            continue
        last, n = last * w + (1 - w) * v, n + 1
        out.append(last / (1 - w ** n))
    return out


def smooth_curve(g, a, kind, run, report, values, first):
    """The run's smoothed line of a series: over the faint raw line, weight 1 - 4/steps (at most
    0.95), every point the moving average of the report's values."""
    raw = [e for e in g.iter(NS + "polyline")
           if e.get("class") == kind and e.get("data-run") == str(run)]
    sm = [e for e in g.iter(NS + "polyline")
          if e.get("class") == kind + "-smooth" and e.get("data-run") == str(run)]
    check(len(raw) == 1 and len(sm) == 1, f"{kind} run {run}: {len(raw)} raw, {len(sm)} smoothed")
    if len(raw) != 1 or len(sm) != 1:
        return
    w = min(0.95, max(0.0, 1 - 4 / report["steps"]))
    check(abs(float(sm[0].get("data-smoothing")) - w) < 1e-12 and
          float(raw[0].get("stroke-opacity", "1")) <= 0.3 and sm[0].get("stroke-opacity") is None,
          f"{kind} run {run}: smoothing {sm[0].get('data-smoothing')} (want {w}), raw opacity "
          f"{raw[0].get('stroke-opacity')}, smoothed {sm[0].get('stroke-opacity')}")
    pts = [tuple(map(float, p.split(","))) for p in sm[0].get("points").split()]
    want = [(first + i + 1, v) for i, v in enumerate(smoothed(values, w)) if v is not None]
    check(len(pts) == len(want), f"{kind}-smooth run {run}: {len(pts)} points, want {len(want)}")
    for (px, py), (step, v) in zip(pts, want):
        x, y = back(a, px, py)
        check(abs(x - step) < 0.01 and close(a, y, v), f"{kind}-smooth run {run} step {step}: "
              f"plotted {y:.6g}, moving average {v:.6g}")
    rawv = [v for v in values if v is not None]
    check(max(rawv) - min(rawv) == 0 or any(abs(s - r) > 1e-9 * max(map(abs, rawv)) for s, r
                                            in zip((v for _, v in want), rawv)),
          f"{kind} run {run}: the smoothed line equals the raw one")


def test_plot_matches_reports():
    """A 2-rank GPT-2 run with validation every 4 steps and a warmup beside a 1-rank MLP run:
    the curves' points, the learning rates and the memory bars equal the reports' numbers; steps
    per second (the MLP has no tokens) is 1000 / step_ms; the loss, rate and gradient norm carry a
    smoothed line; the legend reads each run's model, stage, dtype and ranks. --out=FILE is --out
    FILE."""
    train_tok, val_tok = H_.text_tokens()
    g = H_.path("gpt2.json")
    H_.run(2, "train", "--model", "gpt2", "--data", train_tok, "--val-data", val_tok,
           "--val-every", 4, "--val-windows", 8, "--layers", 2, "--channels", 32, "--heads", 2,
           "--seq-len", 16, "--micro-batch", 2, "--steps", 10, "--stage", 3, "--report", g,
           "--warmup", 4, "--lr-schedule", "cosine")
    m = H_.path("mlp.json")
    H_.run(1, "train", "--hidden", 32, "--layers", 2, "--steps", 6, "--report", m)
    svg = H_.path("both.svg")
    p = plot(g, m, f"--out={svg}")  # --out=FILE as every command takes it
    check(p.stdout.strip() == f"wrote {svg} (2 runs)", p.stdout)
    reps = [json.load(open(g)), json.load(open(m))]
    check(sum(v is not None for v in reps[0]["val_loss"]) == 3,
          f"val_loss: {reps[0]['val_loss']} (validated at steps 4, 8 and the last)")
    root, ps = panels(svg)
    check(set(ps) == {"loss", "rate", "grad_norm", "lr", "memory"}, f"panels {set(ps)}")
    legend = [t.text for e in root.iter(NS + "g") if e.get("class") == "legend"
              for t in e.iter(NS + "text")]
    names = [f"{r['model']} \u00b7 ZeRO-{r['stage']} \u00b7 {r['dtype']} \u00b7 {r['world_size']} "
            f"rank{'s' if r['world_size'] > 1 else ''}" for r in reps]
    check(legend == names == ["gpt2 \u00b7 ZeRO-3 \u00b7 fp32 \u00b7 2 ranks",
                             "mlp \u00b7 ZeRO-0 \u00b7 fp32 \u00b7 1 rank"], f"legend {legend}")
    titles = [t.text for e in root.iter(NS + "g") if e.get("class") == "legend"
              for t in e.iter(NS + "title")]
    check(titles == [g, m], f"legend titles {titles}")
    lrs = reps[0]["lr"]
    check(len(set(lrs)) > 3 and lrs[0] < max(lrs) and lrs[-1] < max(lrs),
          f"gpt2 lr {lrs}: want a warmup and a cosine decay")
    lr_title = [t.text for t in ps["lr"][0].iter(NS + "text")][0]
    check(lr_title == "learning rate", f"lr title {lr_title!r}")
    for run, rep in enumerate(reps):
        curve(*ps["loss"], "loss", run, rep, "loss", rep["first_step"])
        curve(*ps["grad_norm"], "grad_norm", run, rep, "grad_norm", rep["first_step"])
        rate = dict(rep, rate=[1000.0 / ms for ms in rep["step_ms"]])
        curve(*ps["rate"], "rate", run, rate, "rate", rep["first_step"])
        curve(*ps["lr"], "lr", run, rep, "lr", rep["first_step"])
        for pid, values in (("loss", rep["loss"]), ("grad_norm", rep["grad_norm"]),
                            ("rate", rate["rate"])):
            smooth_curve(*ps[pid], pid, run, rep, values, rep["first_step"])
    lr_smooth = [e for e in ps["lr"][0].iter(NS + "polyline") if "smooth" in e.get("class")]
    check(not lr_smooth, "the learning rate is smoothed")
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
    # the same run twice: the legend tells them apart by their files
    g2 = H_.path("gpt2-copy.json")
    with open(g2, "w") as f:
        json.dump(reps[0], f)
    plot(g, g2, "--out", svg)
    root, _ = panels(svg)
    legend = [t.text for e in root.iter(NS + "g") if e.get("class") == "legend"
              for t in e.iter(NS + "text")]
    check(legend == [f"{names[0]} ({g})", f"{names[0]} ({g2})"], f"legend of twins {legend}")
    # a report without model, stage and dtype (an older one) is named by its file; no lr: the
    # panel says so
    old = H_.path("old.json")
    with open(old, "w") as f:
        json.dump({k: v for k, v in reps[1].items() if k not in ("model", "lr")}, f)
    plot(old, "--out", svg)
    root, ps = panels(svg)
    legend = [t.text for e in root.iter(NS + "g") if e.get("class") == "legend"
              for t in e.iter(NS + "text")]
    lr_title = [t.text for t in ps["lr"][0].iter(NS + "text")][0]
    check(legend == [old] and lr_title == "learning rate (not in these reports)",
          f"old report: legend {legend}, lr title {lr_title!r}")


def test_plot_bad_input():
    """Missing, non-JSON and incomplete reports, a bad flag, no report, --out twice, an empty
    --out: exit 1, one message naming the file and key; nothing written. An --out that is one of
    the reports is refused and the report left as it was."""
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
                         ([], "give one or more report files"),
                         ([bad, "--out", out], "--out is given twice")):
        p = plot(*args, "--out", out, ok=False)
        check(p.returncode == 1 and needle in p.stderr and p.stderr.count("zeroc: error") == 1,
              f"{args}: {p.returncode} {p.stderr!r}")
    check(not os.path.exists(out) and not os.path.exists(out + ".tmp"), "a file was written")
    # an empty --out is named (it was a rename error), as --out= is
    for args in (["--out", ""], ["--out="]):
        p = plot(bad, *args, ok=False)
        check(p.returncode == 1 and "--out: the path is empty; give a name" in p.stderr,
              f"{args}: {p.returncode} {p.stderr!r}")
    before = open(bad).read()
    p = plot(bad, "--out", bad, ok=False)
    check(p.returncode == 1 and "is the same file as report" in p.stderr and
          open(bad).read() == before, f"--out over its report: {p.returncode} {p.stderr!r}")


def test_plot_extreme_values():
    """Finite but extreme losses and gradient norms draw: values up to ±DBL_MAX, ranges wider
    than a double (1e308 beside -1e308), flat series (huge, 2.5, -0), denormals, one step. Each
    plot exits 0 within seconds (a 1.7e308 loss used to loop over ticks forever), no coordinate
    or label is nan/inf, every point maps back to its value through the recorded axes, and the
    y ticks are evenly spaced round values inside the axis (the 1.7e308 loss: 0 to 1.5e+308 in
    steps of 5e+307 on [0, DBL_MAX]). A step_ms of 0, or so small the rate overflows, and a
    fractional step count are refused by name, nothing written."""
    m = H_.path("base.json")
    H_.run(1, "train", "--hidden", 16, "--layers", 2, "--micro-batch", 2, "--steps", 3,
           "--report", m)
    base = json.load(open(m))
    big = sys.float_info.max
    one = {"steps": 1, "loss": [2.5], "grad_norm": [7e-310], "step_ms": [4.0],
           "val_loss": [None], "lr": [1e-3]}
    cases = [  # report changes, then the loss panel's tick labels when pinned
        ({"loss": [1e308, -1e308, 1]}, ["-1e+308", "-5e+307", "0", "5e+307", "1e+308"]),
        ({"loss": [1.7e308, 1, 1]}, ["0", "5e+307", "1e+308", "1.5e+308"]),
        ({"grad_norm": [1.7e308, 1, 1]}, None),
        ({"loss": [big, -big, 0], "grad_norm": [-big, big, 1]}, ["-1e+308", "0", "1e+308"]),
        ({"loss": [big] * 3}, ["8e+307", "1e+308", "1.2e+308", "1.4e+308", "1.6e+308"]),
        ({"loss": [-big] * 3, "grad_norm": [big] * 3}, None),
        ({"loss": [1e300] * 3}, None),
        ({"loss": [5e-324, 1e-323, 1.5e-323], "grad_norm": [5e-324] * 3}, None),
        ({"loss": [-0.0] * 3, "grad_norm": [-0.0] * 3}, None),
        ({"loss": [1e-20, 2e-20, 3e-20]}, None),
        ({"loss": [2.5] * 3}, ["1", "1.5", "2", "2.5", "3", "3.5", "4"]),
        (one, ["1", "1.5", "2", "2.5", "3", "3.5", "4"]),
    ]
    for n, (change, want_ticks) in enumerate(cases):
        rep = dict(base, **change)
        path, svg = H_.path(f"extreme{n}.json"), H_.path(f"extreme{n}.svg")
        with open(path, "w") as f:
            json.dump(rep, f)
        try:
            p = plot(path, "--out", svg, ok=False, timeout=10)
        except subprocess.TimeoutExpired:
            check(False, f"{change}: still running after 10 s")
            continue
        check(p.returncode == 0, f"{change}: exit {p.returncode} {p.stderr!r}")
        if p.returncode != 0:
            continue
        text = open(svg).read()
        body = "\n".join(line for line in text.splitlines() if 'class="legend"' not in line)
        bad = re.findall(r"(?i)\b(?:nan|inf|infinity)\b", body)
        check(not bad, f"{change}: {bad[:3]} in the SVG")
        if bad:
            continue
        _, ps = panels(svg)
        for pid, key in (("loss", "loss"), ("grad_norm", "grad_norm")):
            g, a = ps[pid]
            check(all(math.isfinite(v) for v in a.values()) and a["y0"] < a["y1"],
                  f"{change}: {pid} axes {a}")
            far_curve(g, a, key, rep, change)
            labels = [t for t in g.iter(NS + "text") if t.get("text-anchor") == "end"]
            ticks = [float(t.text) for t in labels]
            half = a["y1"] / 2 - a["y0"] / 2
            steps = [t1 / 2 - t0 / 2 for t0, t1 in zip(ticks, ticks[1:])]
            check(2 <= len(ticks) <= 12 and all(a["y0"] <= t <= a["y1"] for t in ticks) and
                  "-0" not in [t.text for t in labels] and
                  all(s > 0 and abs(s - steps[0]) <= 1e-9 * half for s in steps),
                  f"{change}: {pid} ticks {[t.text for t in labels]} on [{a['y0']}, {a['y1']}]")
            for t in labels:  # each label sits where its value maps
                y = far_half(a, float(t.get("y")) - 4)
                check(abs(y - float(t.text) / 2) <= 0.06 / a["ph"] * half,
                      f"{change}: {pid} tick {t.text} drawn at 2 x {y:g}")
            if pid == "loss" and want_ticks:
                check([t.text for t in labels] == want_ticks,
                      f"{change}: loss ticks {[t.text for t in labels]}, want {want_ticks}")
    out = H_.path("never.svg")
    for change, needle in (({"step_ms": [0, 1, 1]},
                            '"step_ms"[0] is 0: expected a positive number of milliseconds'),
                           ({"step_ms": [1, 5e-324, 1]}, '"step_ms"[1] is 4.94066e-324: too small'),
                           ({"steps": 2.5}, '"steps" must be a whole number in [1, 1e+08]')):
        path = H_.path("refused.json")
        with open(path, "w") as f:
            json.dump(dict(base, **change), f)
        p = plot(path, "--out", out, ok=False, timeout=10)
        check(p.returncode == 1 and f"{path}: {needle}" in p.stderr and
              p.stderr.count("zeroc: error") == 1, f"{change}: {p.returncode} {p.stderr!r}")
    check(not os.path.exists(out) and not os.path.exists(out + ".tmp"), "a file was written")


def far_half(a, py):
    """Pixel → half the data value: the axis may span more than a double holds."""
    return a["y0"] / 2 + (a["py"] + a["ph"] - py) / a["ph"] * (a["y1"] / 2 - a["y0"] / 2)


def far_curve(g, a, key, rep, change):
    """The key's polyline: one point per step, each mapping back to the report's value."""
    pts = [tuple(map(float, p.split(","))) for e in g.iter(NS + "polyline")
           if e.get("class") == key for p in e.get("points").split()]
    check(len(pts) == rep["steps"], f"{change}: {key} has {len(pts)} points")
    half = a["y1"] / 2 - a["y0"] / 2
    for (px, py), v, i in zip(pts, rep[key], range(rep["steps"])):
        y = far_half(a, py)
        check(a["y0"] <= v <= a["y1"] and abs(y - v / 2) <= 0.006 / a["ph"] * half,
              f"{change}: {key}[{i}] = {v:g} plotted as 2 x {y:g} on [{a['y0']}, {a['y1']}]")


TESTS = [test_plot_matches_reports, test_plot_bad_input, test_plot_extreme_values]

if __name__ == "__main__":
    H_.main(TESTS, sys.argv[3:])
