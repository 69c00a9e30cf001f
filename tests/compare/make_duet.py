#!/usr/bin/python3
"""make_duet.py - writes hand-made `preplay duet` files (formats/DUET.md) for
the compare tests: each metric given as NAME=GMS:LOW:HIGH, with equal and
ci_width derived from the interval, every run's gm and every ratio equal to
GMS (the reader checks shapes and ranges, compare prints what it reads; the
real statistics are tests/duet's).

usage: make_duet.py OUT --overall GMS:LOW:HIGH [--label NAME=GMS:LOW:HIGH]...
                    [--skipped NAME=WHY]... [--aa] [--recording ID]
                    [--runs R] [--iterations I] [--confidence C] [--failed-b N]
"""
import argparse
import json


def metric(spec, runs, iterations):
    gms, low, high = (float(x) for x in spec.split(":"))
    return {"gms": gms, "ci_low": low, "ci_high": high, "ci_width": high - low,
            "equal": low <= 1 <= high, "runs": runs, "iterations": runs * iterations,
            "samples_a": 10 * runs * iterations, "samples_b": 10 * runs * iterations,
            "run_gms": [gms] * runs, "ratios": [[gms] * iterations for _ in range(runs)],
            "winsorized": [-1] * runs}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--overall", required=True)
    ap.add_argument("--label", action="append", default=[])
    ap.add_argument("--skipped", action="append", default=[])
    ap.add_argument("--aa", action="store_true")
    ap.add_argument("--recording", default="hand-built")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--confidence", type=float, default=0.99)
    ap.add_argument("--failed-b", type=int, default=0)
    a = ap.parse_args()
    doc = {"format": "preplay-duet", "kind": "duet", "version": 1, "version_minor": 0,
           "plan_a": "a.plan", "plan_b": "a.plan" if a.aa else "b.plan",
           "recording_a": a.recording, "recording_b": a.recording, "aa": a.aa,
           "same_recording": True, "procedure": "duet", "statistic": "median", "seed": 1,
           "runs": a.runs, "iterations": a.iterations, "warmup": 1,
           "confidence": a.confidence, "winsorize_pct": 20.0, "slice_from_s": 0.0,
           "slice_length_s": 0.0, "cpu_ratio_a": 1.0, "cpu_ratio_b": 1.0, "failed_a": 0,
           "failed_b": a.failed_b,
           "assignments": [{"a_cpu": r % 2, "b_cpu": 1 - r % 2} for r in range(a.runs)],
           "replicates": 10000, "overall": metric(a.overall, a.runs, a.iterations),
           "labels": {}, "labels_skipped": {}}
    for spec in a.label:
        name, m = spec.rsplit("=", 1)
        doc["labels"][name] = metric(m, a.runs, a.iterations)
    for spec in a.skipped:
        name, why = spec.split("=", 1)
        doc["labels_skipped"][name] = why
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
