#!/usr/bin/python3
"""tests/bench/stats/accuracy.py - PT4Cloud accuracy harness (the paper's
§5.3-5.4 methodology on generated data). For each cloud-like process:
PT4Cloud (week intervals, p0 = 0.9) runs interval by interval until it stops;
its final distribution is compared (the similarity p, the paper's
"accuracy") with a ground truth from an independent long run of six
intervals. The same with `--log` (the estimate on ln of the values, stop rule
and accuracy alike). Side by side: the short-interval variant (12 h start,
validation, hourly sampling 0.5), a CI-width rule (stop when the 99%
bootstrap CI of every percentile 1..99 is within +-5% of it, checked every
6 h) and a fixed-count rule (1000 runs). Two diagnostic columns: the paper's
stopped set judged on the ln scale (is the stop too early, or the yardstick
unstable?) and the similarity of the ground truth with a second independent
ground truth (the best accuracy any rule can show with that yardstick).
Prints a markdown table (docs/stats-accuracy.md). The generator never
changes to make a number pass; the oracle test imports it to check the
statistics on these very processes.
Usage: accuracy.py [PREPLAY_BIN] [TRIALS]"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

PREPLAY = os.environ.get("PREPLAY_BIN", "preplay")
TRIALS = 5
STEP = 300.0                      # one test run every 5 minutes
WEEK = 7 * 86400.0
MAX_WEEKS = 8


def contention(t, rng, daily, weekly):
    """Multiplicative slowdown from daily and weekly cycles."""
    day = np.sin(2 * np.pi * (t % 86400) / 86400 - np.pi / 2) * 0.5 + 0.5
    weekend = ((t // 86400) % 7 >= 5).astype(float)
    return 1 + daily * day + weekly * weekend


def process(name, t, rng):
    n = len(t)
    if name == "steady-cpu":
        return rng.lognormal(np.log(10), 0.05, n) * contention(t, rng, 0.03, 0.0)
    if name == "daily-cycle":
        return rng.gamma(20, 0.5, n) * contention(t, rng, 0.35, 0.0)
    if name == "weekly-cycle":
        return rng.gamma(30, 0.3, n) * contention(t, rng, 0.15, 0.4)
    if name == "bursts":
        base = rng.lognormal(np.log(5), 0.1, n)
        hour = (t // 3600).astype(int)
        burst_hours = rng.random(hour.max() + 1) < 0.04  # ~1 hour in 25 is contended
        return base * np.where(burst_hours[hour], rng.uniform(1.8, 2.6, n), 1.0)
    if name == "bimodal":
        miss = rng.random(n) < 0.25 + 0.2 * np.sin(2 * np.pi * t / 86400)
        return np.where(miss, rng.normal(30, 3, n), rng.normal(12, 1.5, n)) * contention(t, rng, 0.1, 0.1)
    if name == "heavy-tail":
        body = rng.lognormal(np.log(20), 0.25, n)
        outlier = rng.random(n) < 0.003
        return np.where(outlier, body * (1 + rng.pareto(1.5, n) * 3), body) * contention(t, rng, 0.1, 0.05)
    raise ValueError(name)


PROCESSES = ["steady-cpu", "daily-cycle", "weekly-cycle", "bursts", "bimodal", "heavy-tail"]


def write_csv(path, t, v):
    with open(path, "w") as f:
        f.write("value,timestamp\n")
        for a, b in zip(v, t):
            f.write(f"{a:.9g},{b:.1f}\n")


def preplay(args):
    r = subprocess.run([PREPLAY, "stats"] + args + ["--json"], capture_output=True, text=True)
    if r.returncode not in (0,):
        raise SystemExit(f"preplay stats {' '.join(args)}: exit {r.returncode}: {r.stderr}")
    return json.loads(r.stdout)


def similarity(tmp, a, b, log=False):
    fa, fb = os.path.join(tmp, "sa.txt"), os.path.join(tmp, "sb.txt")
    np.savetxt(fa, a, fmt="%.9g")
    np.savetxt(fb, b, fmt="%.9g")
    return preplay(["similarity"] + (["--log"] if log else []) + [fa, fb])["p"]


def ci_width_stop(t, v, rng):
    """Samples until the 99% bootstrap CI of every percentile is within +-5%."""
    pct = np.arange(1, 100)
    for end_t in np.arange(6 * 3600, t[-1] + 1, 6 * 3600):
        x = v[t < end_t]
        if len(x) < 20:
            continue
        boot = np.percentile(x[rng.integers(0, len(x), (300, len(x)))], pct, axis=1)
        lo, hi = np.percentile(boot, [0.5, 99.5], axis=1)
        if np.all(hi - lo <= 0.10 * np.percentile(x, pct)):
            return len(x)
    return len(v)


RULES = ("pt", "log", "short", "ci", "fixed", "pt_on_log", "truth", "truth_log")


def main():
    global PREPLAY, TRIALS
    if len(sys.argv) > 1:
        PREPLAY = sys.argv[1]
    if len(sys.argv) > 2:
        TRIALS = int(sys.argv[2])
    rows = []
    truth_runs = len(np.arange(0, 6 * WEEK, STEP))
    with tempfile.TemporaryDirectory() as tmp:
        for name in PROCESSES:
            acc = {k: [] for k in RULES}
            runs = {k: [] for k in RULES}
            weeks = {"pt": [], "log": []}
            for trial in range(TRIALS):
                seed = 1000 * PROCESSES.index(name) + trial
                rng = np.random.default_rng(seed)
                t = np.arange(0, MAX_WEEKS * WEEK, STEP)
                v = process(name, t, rng)
                truth_t = np.arange(0, 6 * WEEK, STEP)
                truth = process(name, truth_t, np.random.default_rng(99999 + seed))
                truth2 = process(name, truth_t, np.random.default_rng(555555 + seed))
                acc["truth"].append(similarity(tmp, truth2, truth))
                acc["truth_log"].append(similarity(tmp, truth2, truth, log=True))
                path = os.path.join(tmp, "run.csv")
                write_csv(path, t, v)
                for key, extra in (("pt", []), ("log", ["--log"])):
                    o = preplay(["pt4cloud", "--interval", "7d", "--bootstrap", "100"] + extra + [path])
                    n = o["final_samples"]
                    weeks[key].append(o["stopped_at_interval"] or MAX_WEEKS)
                    runs[key].append(n)
                    acc[key].append(similarity(tmp, v[:n], truth, log=key == "log"))
                    if key == "pt":
                        acc["pt_on_log"].append(similarity(tmp, v[:n], truth, log=True))
                o = preplay(["pt4cloud", "--interval", "12h", "--short", "--hourly", "0.5",
                             "--bootstrap", "100", path])
                # Runs executed = every sample fed to the machine (rounds that were discarded too).
                executed = 0
                prev = 0
                for s in o["steps"]:
                    executed += s["samples"] - prev if s["action"] != "lengthen" else s["samples"]
                    prev = 0 if s["action"] == "lengthen" else s["samples"]
                final = o["final_samples"]
                runs["short"].append(executed)
                # Its final set: the kept (hourly-sampled) samples of the last round, which
                # starts after the discarded rounds and ends before any validation intervals.
                keep = (t % 3600) < 1800
                kept_v = v[keep]
                discarded = executed - final - (sum(s["samples"] for s in o["steps"][-2:])
                                                if o["steps"][-1]["validation"] else 0)
                start = max(0, discarded)
                acc["short"].append(similarity(tmp, kept_v[start:start + final], truth))
                nci = ci_width_stop(t, v, rng)
                runs["ci"].append(nci)
                acc["ci"].append(similarity(tmp, v[:nci], truth))
                runs["fixed"].append(1000)
                acc["fixed"].append(similarity(tmp, v[:1000], truth))
            rows.append(dict(name=name, weeks={k: np.mean(w) for k, w in weeks.items()},
                             acc={k: 100 * np.mean(a) for k, a in acc.items()},
                             min={k: 100 * np.min(a) for k, a in acc.items()},
                             fewer={k: 100 * (1 - np.mean(r) / truth_runs) for k, r in runs.items() if r}))
            print(f"done {name}", file=sys.stderr)

    print("| process | PT4Cloud weeks | PT4Cloud accuracy (min) | fewer runs | PT4Cloud --log weeks | "
          "--log accuracy (min) | --log fewer runs | short+hourly accuracy | short fewer runs | "
          "CI-width accuracy | CI-width fewer runs | fixed 1000 accuracy | paper's stop judged on ln scale (min) | "
          "truth vs truth: linear / ln (min) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")

    def line(name, wk, a, mn, fw):
        return (f"| {name} | {wk['pt']:.1f} | {a['pt']:.1f}% ({mn['pt']:.1f}%) | {fw['pt']:.0f}% | "
                f"{wk['log']:.1f} | {a['log']:.1f}% ({mn['log']:.1f}%) | {fw['log']:.0f}% | "
                f"{a['short']:.1f}% | {fw['short']:.0f}% | {a['ci']:.1f}% | {fw['ci']:.0f}% | "
                f"{a['fixed']:.1f}% | {a['pt_on_log']:.1f}% ({mn['pt_on_log']:.1f}%) | "
                f"{a['truth']:.1f}% / {a['truth_log']:.1f}% ({mn['truth']:.1f}% / {mn['truth_log']:.1f}%) |")
    for r in rows:
        print(line(r["name"], r["weeks"], r["acc"], r["min"], r["fewer"]))
    avg = lambda field: {k: np.mean([r[field][k] for r in rows]) for k in rows[0][field]}
    worst = {k: np.min([r["min"][k] for r in rows]) for k in rows[0]["min"]}
    print(line("**average** (worst trial)", avg("weeks"), avg("acc"), worst, avg("fewer")))
    print(f"\n{TRIALS} trials per process; ground truth = an independent run of six week-long "
          f"intervals ({truth_runs} runs, one every {STEP:.0f} s); accuracy in the --log and "
          f"ln-scale columns is the --log similarity, elsewhere the paper's.")


if __name__ == "__main__":
    main()
