#!/usr/bin/python3
"""lemp_verdict.py - the verdict check and table of lemp-verdict.sh: per
emulated type, does `preplay compare --slo`'s verdict (compare.json, its
"instances"[].meets_slo) agree with the real app's (every real run's p95
per label below the SLO's limit = meets; none = does not; some =
undecided)? Prints a markdown table per type (real runs pooled vs
predicted median and p95 per label, the noise floor: the largest relative
difference between two real runs' values) and one verdict line per type,
then the load averages. Exit 1 when a type's verdicts disagree or the real
one is undecided. Real runs: WORK/real-TYPE-K.tsv (keepalive_load.py
lines: client, label, sent, received, seconds, status); predictions:
WORK/pred-TYPE.json (preplay run). Never writes outside stdout.

usage: lemp_verdict.py --work DIR --types "small medium" --runs N --slo SLO
                       [--recorded TSV]
       lemp_verdict.py --choose-slo --work DIR --types "small medium" --runs N
The second form picks a p95 SLO where the types differ, from the real runs
only (never from a prediction): per type, the range over its real runs of
the worst label's p95 (the SLO applies to every label); where the ranges of
two types ordered by speed leave a gap, the limit is the gap's geometric
middle (the widest gap, relative, when several). Prints the SLO
("p95<X.XXms") and why on stderr; exit 1 when no gap exists (every SLO
would be undecided on some type)."""
import argparse
import collections
import json
import re
import sys


def pct(v, q):
    """Linear interpolation (numpy's default), as the results file."""
    v = sorted(v)
    if not v:
        return float("nan")
    pos = (len(v) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def times(path):
    out = collections.defaultdict(list)
    for line in open(path):
        f = line.rstrip("\n").split("\t")
        if len(f) >= 6 and f[5] == "200":
            out[f[1]].append(float(f[4]))
    return out


def slo_parse(text):
    m = re.fullmatch(r"(median|p50|p95|p99)(<=?)([0-9.]+)(us|ms|s)", text)
    if not m:
        raise SystemExit("lemp_verdict: --slo '%s': METRIC<LIMIT with us, ms or s" % text)
    q = {"median": 0.5, "p50": 0.5, "p95": 0.95, "p99": 0.99}[m.group(1)]
    limit = float(m.group(3)) * {"us": 1e-6, "ms": 1e-3, "s": 1.0}[m.group(4)]
    return q, m.group(2), limit


def choose_slo(a):
    ranges = []
    for t in a.types.split():
        worst = []
        for k in range(1, a.runs + 1):
            r = times("%s/real-%s-%d.tsv" % (a.work, t, k))
            worst.append(max(pct(v, 0.95) for v in r.values()))
        ranges.append((min(worst), max(worst), t))
    ranges.sort()
    best = None
    for (lo1, hi1, t1), (lo2, hi2, t2) in zip(ranges, ranges[1:]):
        if hi1 < lo2 and (best is None or lo2 / hi1 > best[0]):
            best = (lo2 / hi1, (hi1 * lo2) ** 0.5, t1, hi1, t2, lo2)
    for lo, hi, t in ranges:
        print("lemp_verdict: %s: worst label's p95 over the real runs %.2f-%.2f ms" % (t, lo * 1e3, hi * 1e3),
              file=sys.stderr)
    if not best:
        print("lemp_verdict: the types' real p95 ranges overlap: no SLO separates them", file=sys.stderr)
        sys.exit(1)
    print("lemp_verdict: SLO between %s (at most %.2f ms) and %s (at least %.2f ms)" % (
        best[2], best[3] * 1e3, best[4], best[5] * 1e3), file=sys.stderr)
    print("p95<%.2fms" % (best[1] * 1e3))


def main():
    if "--choose-slo" in sys.argv:
        ap = argparse.ArgumentParser()
        ap.add_argument("--choose-slo", action="store_true")
        ap.add_argument("--work", required=True)
        ap.add_argument("--types", required=True)
        ap.add_argument("--runs", type=int, required=True)
        choose_slo(ap.parse_args())
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--types", required=True)
    ap.add_argument("--runs", type=int, required=True)
    ap.add_argument("--slo", required=True)
    ap.add_argument("--recorded")
    a = ap.parse_args()
    q, op, limit = slo_parse(a.slo)
    ok = lambda v: v < limit if op == "<" else v <= limit
    comp = json.load(open("%s/compare.json" % a.work))
    predicted = {i["name"]: i for i in comp["instances"]}
    status = 0
    if a.recorded:
        rec = times(a.recorded)
        print("recorded on this host (traced): " + ", ".join(
            "%s %.2f/%.2f ms" % (l, pct(v, 0.5) * 1e3, pct(v, 0.95) * 1e3) for l, v in sorted(rec.items())))
        print()
    lines = []
    for t in a.types.split():
        runs = [times("%s/real-%s-%d.tsv" % (a.work, t, k)) for k in range(1, a.runs + 1)]
        pred = json.load(open("%s/pred-%s.json" % (a.work, t)))["labels"]
        print("**%s** (%d real runs pooled; floor: largest difference between two real runs)\n" % (t, a.runs))
        print("| label | n real/pred | real p50 ms | pred p50 ms | p50 err | floor p50 | real p95 ms | "
              "pred p95 ms | p95 err | floor p95 | real runs' %s ms |" % a.slo.split("<")[0])
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        labels = sorted(set(l for r in runs for l in r))
        run_meets = []
        for l in labels:
            pooled = [x for r in runs for x in r.get(l, [])]
            row = ["%s" % l, "%d/%d" % (len(pooled), pred.get(l, {}).get("count", 0))]
            for qq, key in ((0.5, "median_s"), (0.95, "p95_s")):
                per = [pct(r[l], qq) for r in runs if r.get(l)]
                real, got = pct(pooled, qq), pred.get(l, {}).get(key, float("nan"))
                floor = (max(per) - min(per)) / min(per)
                row += ["%.3f" % (real * 1e3), "%.3f" % (got * 1e3), "%+.1f%%" % ((got - real) / real * 100),
                        "%.1f%%" % (floor * 100)]
            slo_vals = [pct(r[l], q) for r in runs if r.get(l)]
            run_meets.append([ok(v) for v in slo_vals])
            row.append("/".join("%.2f" % (v * 1e3) for v in slo_vals))
            print("| " + " | ".join(row) + " |")
        per_run = [all(m[k] for m in run_meets) for k in range(a.runs)]
        real = "meets" if all(per_run) else ("does not meet" if not any(per_run) else "undecided")
        p = predicted.get(t)
        pv = "meets" if p and p["meets_slo"] else "does not meet"
        why = (" (%s)" % p["slo_failure"]) if p and p.get("slo_failure") else ""
        agree = real == pv
        if not agree:
            status = 1
        lines.append("%s: real %s (runs: %s), predicted %s%s: %s" % (
            t, real, " ".join("meets" if m else "fails" for m in per_run), pv, why,
            "AGREE" if agree else "DISAGREE"))
        print()
    for line in lines:
        print("verdict %s %s" % (a.slo, line))
    print()
    for line in open("%s/loadavg.txt" % a.work):
        print("load average (1/5/15 min) at %s" % line.rstrip())
    sys.exit(status)


if __name__ == "__main__":
    main()
