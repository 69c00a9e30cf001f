#!/usr/bin/env python3
"""knee.py - where an application's response times bend (its knee) on an
emulated type, from open-loop load steps at rising rates (the load
clients' CSVs: label,start_ns,response_ns,status,...; apps/app-bench.sh
--find-knee and matrix.sh run the steps). Reads its inputs only.

Usage: knee.py RATE=CSV [RATE=CSV ...]   (steps in rising rate order)

A step is past the knee when fewer than 95 % of its requests succeed
(2xx or 3xx), or the share that failed is more than 1 point above the
lowest share of the steps before it (an app that starts dropping requests
as the load rises is overloaded, whatever its times: the sample app's
240/s step on `large` dropped 4.8 %, and a recording at 90 % of it timed
out requests), or its median response time is over 4x, or its p95 over
10x, the lowest median (p95) of the steps before it: a single queue's
response time is 1/(1 - utilization) times its service time, so 4x is
75 % busy; 2x (50 % busy) put the sample app's knee on `small` at 15/s,
where a closed loop reaches 180/s. Prints one line per step
(rate, requests, succeeded, p50 ms, p95 ms, "ok" or why it is past), then
"knee RATE": the last rate before the first step past the knee. Exit 0
when a step was past the knee (the knee is found), 3 when every step was
fine (load higher to find it; "knee RATE" names the last), 1 when the
first step was already past it or a CSV cannot be read (nothing to take),
2 on bad usage."""
import csv
import sys

MIN_OK, MAX_FAILED_RISE, P50_FACTOR, P95_FACTOR = 0.95, 0.01, 4.0, 10.0


def quantile(v, q):
    return v[min(len(v) - 1, int(q * len(v)))] if v else float("nan")


def step(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    ok = sorted(int(r["response_ns"]) / 1e6 for r in rows
                if r.get("status", "").isdigit() and 200 <= int(r["status"]) < 400)
    return len(rows), len(ok), quantile(ok, 0.5), quantile(ok, 0.95)


def main(args):
    if not args or any("=" not in a for a in args):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    knee, low50, low95, low_failed = None, None, None, None
    for a in args:
        rate, path = a.split("=", 1)
        try:
            float(rate)
            n, ok, p50, p95 = step(path)
        except (OSError, ValueError, KeyError) as e:
            print("knee: %s: %s" % (a, e), file=sys.stderr)
            return 1
        why = []
        failed = (n - ok) / n if n else 1.0
        if n == 0 or ok < MIN_OK * n:
            why.append("%d of %d succeeded" % (ok, n))
        elif low_failed is not None and failed > low_failed + MAX_FAILED_RISE:
            why.append("%.1f %% failed, %.1f %% at best before" % (100 * failed, 100 * low_failed))
        if ok and low50 is not None and p50 > P50_FACTOR * low50:
            why.append("p50 %.1fx the lowest" % (p50 / low50))
        if ok and low95 is not None and p95 > P95_FACTOR * low95:
            why.append("p95 %.1fx the lowest" % (p95 / low95))
        print("%s %d %d %.3f %.3f %s" % (rate, n, ok, p50, p95, "past: " + ", ".join(why) if why else "ok"))
        if why:
            if knee is None:
                print("knee none: the first step is past it")
                return 1
            print("knee %s" % knee)
            return 0
        knee = rate
        low50 = p50 if low50 is None else min(low50, p50)
        low95 = p95 if low95 is None else min(low95, p95)
        low_failed = failed if low_failed is None else min(low_failed, failed)
    print("knee %s" % knee)
    return 3


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
