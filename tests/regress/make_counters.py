#!/usr/bin/python3
"""make_counters.py - writes a small `preplay run` results file with
counters (formats/RESULTS.md 2.2) for the regress CLI tests:
make_counters.py OUT [--windows N] [--window-s S] [--label L] [--no-counters]
[--shift COUNTER=FACTOR]... Values are a fixed pseudo-random pattern
around per-counter levels; --shift multiplies a counter in the second half
of the windows."""
import argparse
import json
import random

p = argparse.ArgumentParser()
p.add_argument("out")
p.add_argument("--windows", type=int, default=40)
p.add_argument("--window-s", type=float, default=10)
p.add_argument("--label", default="GET /")
p.add_argument("--no-counters", action="store_true")
p.add_argument("--seed", type=int, default=1)
p.add_argument("--shift", action="append", default=[])
a = p.parse_args()
rng = random.Random(a.seed)
names = ["cpu_user", "run_queue", "disk_write_bytes_per_s", "throughput_per_s:" + a.label,
         "median_s:" + a.label]
level = [0.3, 1.5, 1e6, 50, 0.01]
shift = {k: float(v) for k, v in (s.split("=") for s in a.shift)}
windows = []
for w in range(a.windows):
    load = rng.choice([0.8, 1.0, 1.2])  # the counters move together, as under a varying load
    vals = []
    for n, l in zip(names, level):
        v = l * load * (1 + rng.uniform(-0.03, 0.03))
        if n in shift and w >= a.windows // 2:
            v *= shift[n]
        vals.append(v)
    windows.append({"interval": 1, "start_s": w * a.window_s, "length_s": a.window_s, "values": vals})
doc = {"format": "preplay-results", "version": 2, "version_minor": 2, "kind": "run",
       "instance": "local", "stopped": True,
       "labels": {a.label: {"count": 10, "mean_s": 0.01, "median_s": 0.01, "p95_s": 0.02,
                            "p99_s": 0.03, "min_s": 0.001, "max_s": 0.04}},
       "intervals": []}
if not a.no_counters:
    doc["counters"] = {"window_s": a.window_s, "tick_s": 1,
                       "environment": {"host": "vm", "cpus": 2, "memory_bytes": 4e9,
                                       "cpu_model": "x", "kernel": "6", "emulated_type": None},
                       "names": names, "windows": windows}
json.dump(doc, open(a.out, "w"))
