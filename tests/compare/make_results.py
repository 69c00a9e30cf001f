#!/usr/bin/python3
"""make_results.py - writes hand-made `preplay run` results files (formats/RESULTS.md)
for the compare tests: reproducible lognormal samples per label, summaries
computed from them (numpy-style linear percentiles), three intervals of
stop-rule history and per-component resource time.

usage: make_results.py OUT INSTANCE PRICE SCALE RECORDING_ID [--stopped 0|1]
                       [--version N] [--labels L1,L2,...] [--seed N]
                       [--counts N1,N2,...] [--failed N] [--db-error COMP:COUNT:MESSAGE]...
--counts: successful samples per label (400 each by default); --failed: N
failed requests of the first label in interval 2; --db-error: a db_errors
entry (repeatable).
Never writes bands: compare computes them from the samples (the statistics
library), which is what the tests exercise.
"""
import argparse
import json
import math
import random


def percentile(sorted_values, q):
    pos = q / 100.0 * (len(sorted_values) - 1)
    lo = int(pos)
    if lo >= len(sorted_values) - 1:
        return sorted_values[-1]
    return sorted_values[lo] + (sorted_values[lo + 1] - sorted_values[lo]) * (pos - lo)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("instance")
    ap.add_argument("price", type=float)
    ap.add_argument("scale", type=float)
    ap.add_argument("recording_id")
    ap.add_argument("--stopped", type=int, default=1)
    ap.add_argument("--version", type=int, default=2)
    ap.add_argument("--labels", default="GET /fast,POST /slow")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--counts", default="")
    ap.add_argument("--failed", type=int, default=0)
    ap.add_argument("--db-error", action="append", default=[])
    ap.add_argument("--db-cut", type=int, default=-1, help="db_cut (omitted when < 0)")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    labels, samples = {}, []
    resources = {"web": {}, "app": {}}
    names = a.labels.split(",")
    counts = [int(c) for c in a.counts.split(",")] if a.counts else [400] * len(names)
    for i, name in enumerate(names):
        base = 0.004 * (i + 1)
        values = [rng.lognormvariate(0, 0.25) * base * a.scale for _ in range(counts[i])]
        for k, v in enumerate(values):
            samples.append({"label": name, "sent_s": k * 0.01, "response_s": v, "late_s": 0.0,
                            "ok": True, "interval": 1 + k * 3 // len(values)})
        s = sorted(values)
        labels[name] = {"count": len(s), "mean_s": sum(s) / len(s), "median_s": percentile(s, 50),
                        "p95_s": percentile(s, 95), "p99_s": percentile(s, 99), "min_s": s[0],
                        "max_s": s[-1]}
        n = len(s)
        resources["web"][name] = {"blocks": n, "cpu_s": n * base * 0.5 * a.scale,
                                  "file_s": n * base * 0.1, "lock_s": n * base * 0.02,
                                  "db_s": n * base * 0.2, "call_s": n * base * 0.1,
                                  "external_s": 0.0, "net_s": n * base * 0.05}
        resources["app"]["app:" + name] = {"blocks": n, "cpu_s": n * base * 0.3 * a.scale,
                                           "file_s": 0.0, "lock_s": 0.0, "db_s": n * base * 0.3,
                                           "call_s": 0.0, "external_s": 0.0, "net_s": 0.0}
    total = len(samples)
    for k in range(a.failed):
        samples.append({"label": names[0], "sent_s": 10.0 + k * 0.01, "response_s": 0.0,
                        "late_s": 0.0, "ok": False, "interval": 2})
    db_errors = []
    for e in a.db_error:
        comp, count, message = e.split(":", 2)
        db_errors.append({"query": "SELECT broken", "count": int(count), "code": 1064,
                          "message": message, "component": comp})
    doc = {"format": "preplay-results", "version": a.version, "kind": "run", "plan": "plan",
           "recording_id": a.recording_id, "instance": a.instance,
           "price": a.price if a.price >= 0 else None, "mode": "independent", "speed": 1.0,
           "cpu_ratio": 1.0, "p0": 0.9, "stopped": bool(a.stopped),
           "error": None if a.stopped else "stopped after --max-intervals 3",
           "labels": labels,
           "intervals": [{"interval": k + 1, "requests": total // 3, "failed": a.failed if k == 1 else 0, "length_s": 10.0,
                          "p": None if k == 0 else round(0.5 + 0.2 * k, 3),
                          "action": "continue", "held_open_by": "(overall)"} for k in range(3)],
           "resources": resources, "db_errors": db_errors, "samples": samples}
    if a.db_cut >= 0:
        doc["db_cut"] = a.db_cut
    with open(a.out, "w") as f:
        json.dump(doc, f)


if __name__ == "__main__":
    main()
