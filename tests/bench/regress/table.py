#!/usr/bin/env python3
"""tests/bench/regress/table.py - the regress benchmarks' table (run.sh,
real-app.sh): precision, recall and F (Foo's thesis Eq. 6-4, 6-5) per
scenario and method, and their average, from WORK/expected.tsv (scenario
TAB expected counters joined by '|', written before any run) and the
regress files WORK/SCENARIO.METHOD.DISC.ALPHA.r.json. A flagged counter
is right when expected and moving up. Must never read an expectation
from anything the runs wrote.

usage: table.py WORK "METHOD DISC ALPHA"... (the last is the default,
whose flagged counters are listed per scenario)"""
import json
import sys


def prf(flagged, expected):
    """Eq. 6-4, 6-5; F their harmonic mean."""
    total = len(flagged)
    right = sum(1 for f in flagged if f["counter"] in expected and f["direction"] == "up")
    p = 1 - (total - right) / total if total else 1.0
    r = right / len(expected) if expected else 1.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return p, r, f


def main():
    work, methods = sys.argv[1], [m.split() for m in sys.argv[2:]]
    exp = {}
    for line in open(work + "/expected.tsv"):
        s, e = line.rstrip("\n").split("\t")
        exp[s] = set(e.split("|")) if e else set()
    names = ["%s %s%s" % (m, d, "" if a == "1" else " a=" + a) for m, d, a in methods]
    print("| scenario | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    sums = [[0, 0, 0] for _ in methods]
    for s, e in exp.items():
        cells = []
        for i, (m, d, a) in enumerate(methods):
            r = json.load(open("%s/%s.%s.%s.%s.r.json" % (work, s, m, d, a)))
            p, rc, f = prf(r["flagged"], e)
            sums[i] = [sums[i][0] + p, sums[i][1] + rc, sums[i][2] + f]
            cells.append("P %.2f R %.2f F %.2f (%d)" % (p, rc, f, len(r["flagged"])))
        print("| %s | %s |" % (s, " | ".join(cells)))
    n = len(exp)
    print("| **average** | " + " | ".join("P %.2f R %.2f F %.2f" % (a / n, b / n, c / n) for a, b, c in sums) + " |")
    m, d, a = methods[-1]
    print("(n): counters flagged. Flagged per scenario with the default (expected ones marked *):")
    for s, e in exp.items():
        r = json.load(open("%s/%s.%s.%s.%s.r.json" % (work, s, m, d, a)))
        print("  %-14s %s" % (s, ", ".join("%s%s %.2f %s" % ("*" if f["counter"] in e else "", f["counter"],
                                                               f["severity"], f["direction"])
                                           for f in r["flagged"]) or "-"))
        missed = sorted(e - {f["counter"] for f in r["flagged"] if f["direction"] == "up"})
        if missed:
            print("  %-14s missed: %s" % ("", ", ".join(missed)))


if __name__ == "__main__":
    main()
