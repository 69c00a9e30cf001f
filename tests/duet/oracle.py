#!/usr/bin/python3
"""oracle.py DUET.json - redoes the statistics of a duet.json with numpy,
independently of stats/stats_duet.c, from the raw per-iteration ratios the
document carries (formats/DUET.md):
  - winsorization (§IV.A as DUET.md states it) per run, checked against the
    document's `winsorized` indices;
  - the gm per run and over runs: equal to the document's to 1e-8 relative
    (the document prints 9 significant digits);
  - the bootstrap percentile interval: the exact bootstrap distribution of
    the gm of R run gms drawn with replacement (every multiset of R runs,
    with its multinomial probability; for R <= 10) or, for more runs, a
    numpy Monte Carlo of 200 000 replicates; the document's interval ends
    must lie between the distribution's quantiles at p -/+ 0.003 for p =
    (1-cl)/2 and (1+cl)/2 (its 10 000 replicates put a quantile within
    about 0.0007 of p: 0.003 is more than four standard errors);
  - `equal` is the interval containing 1;
  - overall ratios: the gm of the iteration's label ratios, where every
    label has a ratio in every iteration.
Prints one line per metric checked; exits 1 with the reason on a mismatch."""
import itertools
import json
import math
import sys

import numpy as np


def winsorize(x, pct):
    x = list(x)
    if len(x) < 3 or pct <= 0:
        return x, -1
    imin = int(np.argmin(x))
    imax = int(np.argmax(x))
    others_hi = max(v for i, v in enumerate(x) if i != imax)
    others_lo = min(v for i, v in enumerate(x) if i != imin)
    out_hi = (x[imax] - others_hi) / others_hi
    out_lo = (others_lo - x[imin]) / others_lo
    f = pct / 100.0
    if out_hi > f and out_hi >= out_lo:
        x[imax] = others_hi
        return x, imax
    if out_lo > f:
        x[imin] = others_lo
        return x, imin
    return x, -1


def gm(v):
    return float(np.exp(np.mean(np.log(np.asarray(v, dtype=float)))))


def bootstrap_distribution(gms):
    """(values, probabilities) of the gm of len(gms) draws with replacement."""
    r = len(gms)
    logs = np.log(np.asarray(gms, dtype=float))
    if r <= 10:
        vals, probs = [], []
        for combo in itertools.combinations_with_replacement(range(r), r):
            counts = np.bincount(combo, minlength=r)
            coef = math.factorial(r)
            for c in counts:
                coef //= math.factorial(int(c))
            vals.append(math.exp(float(np.dot(counts, logs)) / r))
            probs.append(coef / r**r)
        return np.asarray(vals), np.asarray(probs)
    rng = np.random.default_rng(12345)
    idx = rng.integers(0, r, size=(200000, r))
    vals = np.exp(logs[idx].mean(axis=1))
    return vals, np.full(len(vals), 1.0 / len(vals))


def quantile(vals, probs, p):
    order = np.argsort(vals)
    cum = np.cumsum(probs[order])
    i = int(np.searchsorted(cum, min(max(p, 0.0), 1.0) - 1e-12))
    return float(vals[order][min(i, len(vals) - 1)])


def check_metric(name, m, doc):
    cl, pct = doc["confidence"], doc["winsorize_pct"]
    run_gms = []
    for r, ratios in enumerate(m["ratios"]):
        w, idx = winsorize(ratios, pct)
        if idx != m["winsorized"][r]:
            raise SystemExit(f"{name}: run {r + 1}: winsorized index {m['winsorized'][r]}, oracle {idx}")
        g = gm(w)
        if abs(g / m["run_gms"][r] - 1) > 1e-8:
            raise SystemExit(f"{name}: run {r + 1}: gm {m['run_gms'][r]}, oracle {g}")
        run_gms.append(g)
    g = gm(run_gms)
    if abs(g / m["gms"] - 1) > 1e-8:
        raise SystemExit(f"{name}: gms {m['gms']}, oracle {g}")
    if m["runs"] != len(run_gms) or m["iterations"] != sum(len(x) for x in m["ratios"]):
        raise SystemExit(f"{name}: runs/iterations counts do not match the ratios")
    vals, probs = bootstrap_distribution(run_gms)
    d = 0.003
    for key, p in (("ci_low", (1 - cl) / 2), ("ci_high", (1 + cl) / 2)):
        lo, hi = quantile(vals, probs, p - d), quantile(vals, probs, p + d)
        v = m[key]
        if not (lo * (1 - 1e-8) <= v <= hi * (1 + 1e-8)):
            raise SystemExit(f"{name}: {key} {v} outside the oracle's [{lo}, {hi}] (p {p})")
    if m["equal"] != (m["ci_low"] <= 1 <= m["ci_high"]):
        raise SystemExit(f"{name}: equal is {m['equal']} for [{m['ci_low']}, {m['ci_high']}]")
    print(f"oracle: {name}: gms {g:.6f}, interval [{m['ci_low']:.6f}, {m['ci_high']:.6f}] agrees")


def check_overall(doc):
    labels = doc["labels"]
    ov = doc["overall"]
    if doc["labels_skipped"] or not labels:
        return
    full = all(len(x) == doc["iterations"] for m in labels.values() for x in m["ratios"])
    if not full:
        return
    for r in range(doc["runs"]):
        for i in range(doc["iterations"]):
            want = gm([m["ratios"][r][i] for m in labels.values()])
            if abs(want / ov["ratios"][r][i] - 1) > 1e-8:
                raise SystemExit(f"overall: run {r + 1} iteration {i + 1}: {ov['ratios'][r][i]}, oracle {want}")
    print("oracle: overall ratios are the gm of the label ratios")


def main():
    doc = json.load(open(sys.argv[1]))
    check_metric("(overall)", doc["overall"], doc)
    for name, m in doc["labels"].items():
        check_metric(name, m, doc)
    check_overall(doc)


main()
