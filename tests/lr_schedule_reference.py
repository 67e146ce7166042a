#!/usr/bin/python3
"""lr_schedule_reference.py — DeepSpeed's WarmupCosineLR, OneCycle and LRRangeTest rates worked out
from their documented definitions (DeepSpeed's lr_schedules.py docstrings and formulas), in
float64, independently of zeroc's C. test_config.c's test_scheduler_more holds the values this
prints, as literals; run it to see where they come from.

The rate of the optimizer step after `applied` applied steps: DeepSpeed's scheduler sets one when
built (applied 0) and then steps once per applied step, to last_batch_iteration = applied - 1.
"""
import math


def warmup_cosine(applied, lr, total, warmup, min_ratio, cos_min, log_type):
    if applied == 0:
        return 0.0  # get_lr before the first step: 0.0
    it, w = applied - 1, max(2, warmup)
    if it < w:
        r = (1.0 / math.log(w)) * math.log(it + 1) if log_type else it / w
        return lr * (min_ratio + r * (1.0 - min_ratio))
    r = (1 + math.cos(math.pi * (it - w + 1) / (total - w))) / 2
    return lr * max(0.0, cos_min + (1.0 - cos_min) * r)


def one_cycle(applied, lo, hi, first, second, decay_steps, decay_rate):
    first = float(first)
    second = float(second) if second is not None else first
    total = first + second
    ratio = first / total
    if applied == 0 or applied - 1 < total:
        i = applied
        cycle = math.floor(1 + i / total)
        x = 1.0 + i / total - cycle
        scale = x / ratio if x <= ratio else (x - 1) / (ratio - 1)
        return lo + (hi - lo) * scale
    if decay_steps == 0 or decay_rate == 0:
        return lo
    return lo / (1 + decay_rate * ((applied - 1 - total + 1) / decay_steps))


def range_test(applied, lo, step_size, rate, staircase):
    q = applied / step_size
    return lo * (1 + rate * (math.floor(q) if staircase else q))


if __name__ == "__main__":
    for log_type in (False, True):
        print("cosine", "log" if log_type else "linear",
              [f"{warmup_cosine(a, 0.01, 20, 5, 0.1, 0.05, log_type)!r}"
               for a in (0, 1, 3, 5, 6, 7, 12, 20, 21, 30)])
    print("onecycle", [f"{one_cycle(a, 0.001, 0.01, 4, 6, 2, 0.5)!r}"
                       for a in (0, 2, 4, 5, 7, 10, 11, 12, 15)])
    print("onecycle-sym", [f"{one_cycle(a, 0.001, 0.01, 3, None, 0, 0.0)!r}"
                           for a in (0, 1, 3, 4, 6, 7, 100)])
    for st in (False, True):
        print("rangetest", st, [f"{range_test(a, 0.002, 3, 0.5, st)!r}" for a in (0, 1, 3, 4, 10)])
