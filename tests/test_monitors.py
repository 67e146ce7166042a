#!/usr/bin/env python3
"""test_monitors.py — DeepSpeed's monitors on `zeroc train` (python3 stdlib only).

Usage: test_monitors.py ZEROC_BINARY MPIRUN_SH [test-name ...]   (prints "N passed, N failed")

The TensorBoard event file is read back by a decoder written here (TFRecord framing with every
CRC-32C checked, the Event/Summary protobuf decoded field by field), and by TensorBoard's own
reader when the `tensorboard` Python package is importable; the CSV files with Python's csv
module; the printed lines against the report's numbers and the ZeRO paper's byte counts."""
import csv
import json
import math
import os
import re
import struct
import sys

from harness import Harness

H_ = Harness(sys.argv[1], sys.argv[2])
TMP = H_.tmp
check = H_.check
HID, L, MB, ACC, N, STEPS = 64, 3, 4, 2, 2, 5
UNIT = HID * HID + HID


def run_with(name, cfg, n=N, steps=STEPS, extra=()):
    path = os.path.join(TMP, f"{name}.cfg.json")
    with open(path, "w") as f:
        json.dump({"steps_per_print": 2, "gradient_accumulation_steps": ACC, **cfg}, f)
    report = os.path.join(TMP, f"{name}.report.json")
    p = H_.run(n, "train", "--hidden", HID, "--layers", L, "--micro-batch", MB, "--steps", steps,
               "--stage", 2, "--config", path, "--report", report, *extra)
    with open(report) as f:
        return p, json.load(f)


# ---- CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), bit by bit: independent of zeroc's

def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def masked(data):
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def records(path):
    """The TFRecords of a file, each CRC checked."""
    with open(path, "rb") as f:
        blob = f.read()
    out, i = [], 0
    while i < len(blob):
        check(len(blob) - i >= 12, f"{path}: truncated record header at {i}")
        (n,), (lcrc,) = struct.unpack_from("<Q", blob, i), struct.unpack_from("<I", blob, i + 8)
        check(lcrc == masked(blob[i:i + 8]), f"{path}: length CRC at {i}")
        data = blob[i + 12:i + 12 + n]
        (dcrc,) = struct.unpack_from("<I", blob, i + 12 + n)
        check(dcrc == masked(data), f"{path}: data CRC at {i}")
        out.append(data)
        i += 12 + n + 4
    return out


def fields(msg):
    """Protobuf wire format: [(field number, wire type, value)]."""
    out, i = [], 0

    def varint():
        nonlocal i
        v = shift = 0
        while True:
            b = msg[i]
            i += 1
            v |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return v
    while i < len(msg):
        key = varint()
        num, wire = key >> 3, key & 7
        if wire == 0:
            val = varint()
        elif wire == 1:
            val, i = msg[i:i + 8], i + 8
        elif wire == 2:
            n = varint()
            val, i = msg[i:i + n], i + n
        elif wire == 5:
            val, i = msg[i:i + 4], i + 4
        else:
            raise AssertionError(f"wire type {wire}")
        out.append((num, wire, val))
    return out


def decode_event(data):
    ev = {"scalars": {}}
    for num, wire, val in fields(data):
        if (num, wire) == (1, 1):
            ev["wall_time"] = struct.unpack("<d", val)[0]
        elif (num, wire) == (2, 0):
            ev["step"] = val
        elif (num, wire) == (3, 2):
            ev["file_version"] = val.decode()
        elif (num, wire) == (5, 2):
            for vnum, vwire, value in fields(val):
                check((vnum, vwire) == (1, 2), f"Summary field {vnum}/{vwire}")
                tag = simple = None
                for fnum, fwire, x in fields(value):
                    if (fnum, fwire) == (1, 2):
                        tag = x.decode()
                    elif (fnum, fwire) == (2, 5):
                        simple = struct.unpack("<f", x)[0]
                ev["scalars"][tag] = simple
        else:
            check(False, f"unexpected Event field {num}/{wire}")
    return ev


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def is_f32_of(got, x):
    """Whether `got` is the float32 the run wrote for the double the report prints as `x`. The
    report's JSON (cJSON) prints 15 significant digits, so `x` may be a few double ulps away from
    the run's value; one lying on a float32 rounding midpoint then rounds to either neighbour
    (seen: 0.369497999548912 ms). Any other float32 is a wrong value."""
    return got in (f32(x * (1 - 1e-14)), f32(x), f32(x * (1 + 1e-14)))


def test_tensorboard():
    """output_path/job_name holds one event file (rank 0's) named as TensorBoard's writers name
    it; its first record is the file_version Event, then one Event a step keyed by samples seen
    (DeepSpeed's x axis) with the loss and lr the report has (as float32)."""
    out = os.path.join(TMP, "tb")
    p, rep = run_with("tb", {"tensorboard": {"enabled": True, "output_path": out + "/",
                                             "job_name": "job"}, "wall_clock_breakdown": True})
    d = os.path.join(out, "job")
    files = os.listdir(d)
    check(len(files) == 1 and re.fullmatch(r"events\.out\.tfevents\.\d{10}\.[^/]+", files[0]),
          f"one event file named events.out.tfevents.<time>.<host>: {files}")
    check(f"tensorboard: writing {d}/events.out.tfevents." in p.stdout, "the file is announced")
    evs = [decode_event(r) for r in records(os.path.join(d, files[0]))]
    check(evs[0].get("file_version") == "brain.Event:2" and not evs[0]["scalars"],
          f"first event: {evs[0]}")
    steps = evs[1:]
    check(len(steps) == STEPS, f"{len(steps)} step events, expected {STEPS}")
    batch = MB * ACC * N
    for s, ev in enumerate(steps):
        sc = ev["scalars"]
        check(ev.get("step") == (s + 1) * batch, f"event {s}: step {ev.get('step')}")
        check(abs(ev["wall_time"] - evs[0]["wall_time"]) < 600, f"event {s}: wall_time")
        check(is_f32_of(sc.get("Train/Samples/train_loss"), rep["loss"][s]),
              f"step {s + 1}: loss {sc.get('Train/Samples/train_loss')} vs {rep['loss'][s]}")
        check(is_f32_of(sc.get("Train/Samples/lr"), rep["lr"][s]), f"step {s + 1}: lr")
        check(is_f32_of(sc.get("Train/Samples/elapsed_time_ms_total"), rep["step_ms"][s]),
              f"step {s + 1}: total ms {sc} vs {rep['step_ms'][s]}")
        check(sc["Train/Samples/elapsed_time_ms_forward_backward"] +
              sc["Train/Samples/elapsed_time_ms_step"] <= sc["Train/Samples/elapsed_time_ms_total"] * 1.0001,
              f"step {s + 1}: parts exceed the step: {sc}")
    # a directory that cannot be made stops every rank before the first step, naming it
    with open(os.path.join(TMP, "afile"), "w"):
        pass
    path = os.path.join(TMP, "tbbad.cfg.json")
    with open(path, "w") as f:
        json.dump({"tensorboard": {"enabled": True, "output_path": os.path.join(TMP, "afile"),
                                   "job_name": "j"}}, f)
    p = H_.run(N, "train", "--hidden", HID, "--layers", L, "--steps", 2, "--config", path,
               ok=False)
    check(p.returncode == 1 and "cannot make the directory" in p.stderr and
          "MPI_ABORT" not in p.stderr and "step     1" not in p.stdout,
          f"refused cleanly: {p.returncode} {p.stderr[-600:]}")
    try:  # TensorBoard's own reader, where installed (Debian ships no tensorboard package)
        from tensorboard.backend.event_processing import event_accumulator
    except ImportError:
        print("  (TensorBoard's reader is not installed: checked with this file's decoder only)")
        return
    acc = event_accumulator.EventAccumulator(d)
    acc.Reload()
    got = [(e.step, e.value) for e in acc.Scalars("Train/Samples/train_loss")]
    check(len(got) == STEPS and all(st == (s + 1) * batch and is_f32_of(v, rep["loss"][s])
                                    for s, (st, v) in enumerate(got)),
          f"TensorBoard reads {got}")


def test_csv_monitor():
    """DeepSpeed's layout: output_path/job_name/<tag with '/' as '_'>.csv, a "step,<last part of
    the tag>" header, a row per step (samples seen, the value as Python writes a float); a run
    resumed into the same files appends its rows under the one header."""
    out = os.path.join(TMP, "csvout")
    cfg = {"csv_monitor": {"enabled": True, "output_path": out, "job_name": "job"}}
    p, rep = run_with("csv", cfg, n=1)
    d = os.path.join(out, "job")
    names = sorted(os.listdir(d))
    check(names == ["Train_Samples_lr.csv", "Train_Samples_train_loss.csv"], f"files: {names}")
    with open(os.path.join(d, "Train_Samples_train_loss.csv"), newline="") as f:
        rows = list(csv.reader(f))
    check(rows[0] == ["step", "train_loss"], f"header {rows[0]}")
    check([int(r[0]) for r in rows[1:]] == [(s + 1) * MB * ACC for s in range(STEPS)],
          f"steps {rows[1:]}")
    check(all(abs(float(r[1]) - x) <= 1e-14 * abs(x) for r, x in zip(rows[1:], rep["loss"])),
          f"values {rows[1:]} vs {rep['loss']}")
    check(all(r[1] == repr(float(r[1])) for r in rows[1:]), f"Python's float text: {rows[1:]}")
    with open(os.path.join(d, "Train_Samples_lr.csv"), "rb") as f:
        raw = f.read()
    check(raw.startswith(b"step,lr\r\n") and raw.count(b"\r\n") == STEPS + 1,
          f"CRLF rows as Python's csv module writes them: {raw[:60]!r}")
    run_with("csv", cfg, n=1)  # a second run into the same job: rows appended, one header
    with open(os.path.join(d, "Train_Samples_lr.csv"), newline="") as f:
        rows = list(csv.reader(f))
    check(len(rows) == 2 * STEPS + 1 and rows.count(["step", "lr"]) == 1, f"appended: {rows}")


PHASES = re.compile(r"time \(ms\) step (\d+) \| forward\+backward: ([\d.]+) \(gemm ([\d.]+), "
                    r"collectives ([\d.]+)\) \| engine step: ([\d.]+) \(collectives ([\d.]+)\) \| "
                    r"other: ([\d.]+) \| step: ([\d.]+) \| disk wait: ([\d.]+)")


def test_wall_clock_breakdown():
    """A phase line on every steps_per_print-th step and the last; its parts add up to the step's
    time (the report's step_ms), and the parts within them to no more than their whole."""
    p, rep = run_with("wcb", {"wall_clock_breakdown": True})
    lines = [PHASES.search(l) for l in p.stdout.splitlines() if l.startswith("time (ms)")]
    check(all(lines), f"phase lines parse: {p.stdout}")
    got = [int(m.group(1)) for m in lines if m]
    check(got == [2, 4, 5], f"phase lines at steps {got}")
    for m in filter(None, lines):
        s = int(m.group(1))
        fb, gemm, fbc, eng, engc, other, step, disk = map(float, m.groups()[1:])
        check(abs(step - rep["step_ms"][s - 1]) < 0.006, f"step {s}: {step} vs {rep['step_ms']}")
        check(abs(fb + eng + other - step) < 0.02, f"step {s}: parts sum: {m.group(0)}")
        check(fb + eng <= step + 0.01 and gemm <= fb + 0.01 and fbc <= fb + 0.01 and
              engc <= eng + 0.01 and disk == 0.0, f"step {s}: {m.group(0)}")
    # false (DeepSpeed's default): no line
    p, _ = run_with("wcb0", {"wall_clock_breakdown": False}, n=1)
    check("time (ms)" not in p.stdout, "no phase line when false")


def comms_table(text, title):
    """{op: (count, MiB, total ms, avg ms)} of the table under `comms_logger (rank 0, TITLE`."""
    at = text.index(f"comms_logger (rank 0, {title}")
    rows = {}
    for line in text[at:].splitlines()[2:]:
        parts = line.split()
        if len(parts) != 5 or not line.startswith("  "):
            break
        rows[parts[0]] = (int(parts[1]), *map(float, parts[2:]))
    return rows


def test_comms_logger():
    """The summary at the end: per collective the calls, MiB and ms; at stage 2 on N ranks each
    step reduce-scatters and all-gathers every unit once, (N−1)/N of its padded fp32 bytes each.
    verbose: a table every step; prof_all false: only the ops prof_ops names (DeepSpeed's
    spellings too). With gradient accumulation the reduce-scatter runs every micro-step."""
    p, rep = run_with("comms", {"comms_logger": {"enabled": True}})
    rows = comms_table(p.stdout, "steps 1-5")
    per_unit = -(-UNIT // N) * N * 4 * (N - 1) / N
    for op in ("reduce_scatter", "all_gather"):
        count, mib, total, avg = rows[op]
        check(count == STEPS * ACC * L if op == "reduce_scatter" else count == STEPS * L,
              f"{op}: {count} calls")
        times = STEPS * L * (ACC if op == "reduce_scatter" else 1)  # a reduction per micro-step
        check(abs(mib - times * per_unit / 2**20) < 0.001, f"{op}: {mib} MiB")
        check(total >= 0 and abs(avg - total / count) < 0.002, f"{op}: {total} ms, avg {avg}")
    check(set(rows) == {"reduce_scatter", "all_gather", "all_reduce", "broadcast", "control"},
          f"ops {sorted(rows)}")
    check("comms_logger (rank 0, step" not in p.stdout.replace("steps 1-5", ""),
          "no per-step table without verbose")
    p, _ = run_with("comms_v", {"comms_logger": {"enabled": True, "verbose": True,
                                                 "prof_all": False,
                                                 "prof_ops": ["all_gather_into_tensor", "send"]}})
    for s in range(1, STEPS + 1):
        rows = comms_table(p.stdout, f"step {s})")
        check(list(rows) == ["all_gather"] and rows["all_gather"][0] == L,
              f"step {s}: {rows}")
    p, _ = run_with("comms_off", {"comms_logger": {"enabled": False, "verbose": True}}, n=1)
    check("comms_logger" not in p.stdout, "disabled: nothing printed")


TESTS = [test_tensorboard, test_csv_monitor, test_wall_clock_breakdown, test_comms_logger]

if __name__ == "__main__":
    H_.main(TESTS, sys.argv[3:])
