#!/usr/bin/env python3
"""judge.py - judges a prediction per request label against several real
runs of the same application measured in the same benchmark run (issue 21
item 2/9): the real runs' spread is the noise floor, and a label passes only
when the prediction is as close to the real runs' center as the goal asks or,
where the real app disagrees with itself more than that, as close as two real
runs are to each other.

usage: judge.py --real CSV --real CSV --real CSV [--real CSV...] --pred RESULTS
                [--median-tol 0.10] [--p95-tol 0.20] [--min-count 40]
                [--stall-factor 1.5] [--min-runs 5]
                [--max-floor-median 0.5] [--max-floor-p95 1.0]
                [--min-judged N] [--json OUT] [--title TEXT]

First, the real runs the shared machine stalled are set aside: a run whose
medians are, over all labels (geometric mean of its median / the runs'
median of medians), more than --stall-factor times the others' is a run in
which every request was slow - seen here: 2 or 3 runs of 7 at 3 .. 20x -
which says nothing about the app and must not widen every tolerance.
Setting runs aside can only narrow the floor, never excuse a prediction.
With fewer than --min-runs runs left, no label is judged. Then, per label
L and quantile q (median, p95), over the runs kept:
  center(L, q) = q of the kept runs' samples of L pooled;
  floor(L, q)  = (max - min of q over the kept runs) / center: how far apart
                 two real runs of the same app, same load, same machine, came;
  error(L, q)  = |q of the prediction - center| / center;
  L passes     when error <= max(tolerance of q, floor(L, q)) for both q.
A quantile whose error is within its tolerance (the goal: 10% median, 20%
p95) passes whatever the floor. One whose error is beyond the goal passes
only within its floor, and only when that floor is at most
--max-floor-median / --max-floor-p95 (real runs further apart than that say
the machine was too noisy for a floor to mean anything): beyond the cap it
is NOT JUDGED. A label is judged only when every real run and the
prediction have at least --min-count successful samples of it; a miss on
one quantile (beyond the goal and a meaningful floor) fails the label even
when the other is not judged. NOT JUDGED is never counted as passed. Exit status: 0 when every judged label passed and
at least --min-judged labels were judged; 1 otherwise (each reason named on
stderr); 2 on bad input. There is no second chance: no retry, no forgiving a
miss because two confidence intervals overlap.

Response times on both sides count from the scheduled arrival (loadgen's
response_ns, the results' response_s). Each client's own delay in that time
is printed beside the table, never used in a verdict: the real runs'
loadgen late_ns (when the CSV has it) and the prediction's driver lateness,
medians in us. Percentiles are linear interpolation
(numpy's default, the same as compare.py and the results file). Never edits
its inputs."""
import argparse
import csv
import json
import math
import sys


def judge_percentile(values, q):
    v = sorted(values)
    if not v:
        return float("nan")
    pos = (len(v) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def judge_bad_input(msg):
    """Bad input: one line naming file, place and field; exit status 2."""
    print(f"judge: {msg}", file=sys.stderr)
    sys.exit(2)


def judge_load_real(path):
    """Successful response times per label of one loadgen CSV (seconds),
    and the median of its late_ns in us (None where it has no such column)."""
    out, late = {}, []
    try:
        f = open(path)
    except OSError as e:
        judge_bad_input(f"{path}: {e.strerror}")
    with f:
        for n, row in enumerate(csv.DictReader(f), start=2):
            vals = {}
            for field in ("status", "response_ns", "label"):
                try:
                    vals[field] = row[field] if field == "label" else int(row[field])
                except (KeyError, ValueError, TypeError):
                    judge_bad_input(f"{path}: line {n}: field {field}: "
                                    f"{row.get(field)!r} is not {'a label' if field == 'label' else 'an integer'}")
                if vals[field] is None:
                    judge_bad_input(f"{path}: line {n}: field {field} missing")
            status, rt, label = vals["status"], vals["response_ns"] / 1e9, vals["label"]
            if 200 <= status < 400:
                out.setdefault(label, []).append(rt)
            if (row.get("late_ns") or "").isdigit():
                late.append(int(row["late_ns"]))
    if not out:
        judge_bad_input(f"{path}: no successful request")
    return out, judge_percentile(late, 0.5) / 1e3 if late else None


def judge_load_pred(path):
    """Successful response times per label of a `preplay run` results file,
    and the number of failed samples."""
    try:
        with open(path) as f:
            r = json.load(f)
    except OSError as e:
        judge_bad_input(f"{path}: {e.strerror}")
    except ValueError as e:
        judge_bad_input(f"{path}: not JSON ({e})")
    out, failed = {}, 0
    for i, s in enumerate(r.get("samples", [])):
        try:
            if s["ok"]:
                out.setdefault(s["label"], []).append(float(s["response_s"]))
            else:
                failed += 1
        except (KeyError, TypeError, ValueError) as e:
            judge_bad_input(f"{path}: samples[{i}]: field {e} missing or not a number")
    return out, failed


def judge_driver_lateness(pred_path):
    """The median (us) of each predicted interval's driver lateness."""
    with open(pred_path) as f:
        intervals = json.load(f).get("intervals")
    pred = []
    for i in intervals if isinstance(intervals, list) else []:
        late = i.get("lateness") if isinstance(i, dict) else None
        if isinstance(late, dict) and isinstance(late.get("median_s"), (int, float)):
            pred.append(1e6 * late["median_s"])
    return pred


def judge_stalls(runs, labels):
    """Per real run, how much slower than the runs' typical run it was over
    all labels: the geometric mean over labels of the run's median over the
    median of the runs' medians (1 = typical). runs: per-run dicts label ->
    samples."""
    logs = [[] for _ in runs]
    for L in labels:
        med = [judge_percentile(r.get(L, []), 0.5) for r in runs]
        if not all(m == m and m > 0 for m in med):
            continue
        ref = judge_percentile(med, 0.5)
        for k, m in enumerate(med):
            logs[k].append(math.log(m / ref))
    return [math.exp(sum(v) / len(v)) if v else float("nan") for v in logs]


def judge_label(runs, pred, tols, min_count, kept, max_floor):
    """One label: runs is a list of sample lists (one per real run), pred a
    sample list. Returns a dict with the figures and 'verdict' one of
    'pass', 'FAIL', 'NOT JUDGED' and 'why'."""
    row = {"n_real": [len(r) for r in runs], "n_pred": len(pred)}
    fails, noisy = [], []
    for name, q in (("median", 0.5), ("p95", 0.95)):
        all_runs = [judge_percentile(r, q) for r in runs]
        per_run = [all_runs[i] for i in kept]
        center = judge_percentile([x for i in kept for x in runs[i]], q)
        p = judge_percentile(pred, q)
        if center > 0 and per_run and all(x == x for x in per_run):
            floor = (max(per_run) - min(per_run)) / center
            err = abs(p - center) / center if p == p else float("nan")
        else:
            floor = err = float("nan")
        tol = max(tols[name], floor) if floor == floor else tols[name]
        row[name] = {"real_runs_s": all_runs, "set_aside": sorted(set(range(len(runs))) - set(kept)),
                     "center_s": center, "pred_s": p, "floor": floor, "tolerance": tol,
                     "error": err, "margin": (tol - err) if err == err else None}
        # within the goal itself a metric passes whatever the floor; only a
        # pass that would rest on the floor needs the floor to mean something
        if not err <= tols[name] and not floor <= max_floor[name]:
            noisy.append(f"{name}: the real runs are {100 * floor:.0f}% apart (at most "
                         f"{100 * max_floor[name]:.0f}% to judge)")
        elif not err <= tol:
            fails.append(f"{name} {1e3 * p:.3f} ms is {100 * err:.1f}% from the real center "
                         f"{1e3 * center:.3f} ms (tolerance {100 * tol:.1f}% = max(goal "
                         f"{100 * tols[name]:.0f}%, floor {100 * floor:.1f}%))")
    short = min(row["n_real"] + [row["n_pred"]])
    if short < min_count:
        row["verdict"] = "NOT JUDGED"
        row["why"] = (f"{short} samples on one side (real runs {row['n_real']}, predicted "
                      f"{row['n_pred']}); at least {min_count} needed")
    elif fails:  # a clear miss on one quantile is not hidden by noise on the other
        row["verdict"] = "FAIL"
        row["why"] = "; ".join(fails)
    elif noisy:
        row["verdict"] = "NOT JUDGED"
        row["why"] = "; ".join(noisy)
    else:
        row["verdict"] = "pass"
        row["why"] = ""
    return row


def judge_summary(labels, rows):
    """one short line per label before the wide table: a log excerpt that
    keeps only the first lines (CI's) still shows which label missed"""
    for label in labels:
        r = rows[label]
        q = []
        for name in ("median", "p95"):
            m = r[name]
            if m.get("pred_s") and m.get("center_s"):
                q.append("%s %+.1f%% (tol %.1f%%)" % (name, 100 * (m["pred_s"] / m["center_s"] - 1),
                                                      100 * m["tolerance"]))
        print(f"  {label}: {r['verdict']}: " + ", ".join(q))


def judge_print(title, labels, rows):
    print(f"### {title}" if title else "")
    print("| label | n real runs / pred | real p50 ms per run ((set aside)) | center p50 | pred p50 | err | "
          "floor | tol | real p95 ms per run ((set aside)) | center p95 | pred p95 | err | floor | tol | verdict |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for label in labels:
        r = rows[label]
        cells = [label, "%s / %d" % ("+".join(str(n) for n in r["n_real"]), r["n_pred"])]
        for name in ("median", "p95"):
            m = r[name]
            cells += [" ".join(("(%.3f)" if i in m["set_aside"] else "%.3f") % (1e3 * x)
                               for i, x in enumerate(m["real_runs_s"])),
                      "%.3f" % (1e3 * m["center_s"]), "%.3f" % (1e3 * m["pred_s"]),
                      "%.1f%%" % (100 * m["error"]), "%.1f%%" % (100 * m["floor"]),
                      "%.1f%%" % (100 * m["tolerance"])]
        cells.append(r["verdict"])
        print("| " + " | ".join(cells) + " |")


def main():
    ap = argparse.ArgumentParser(description="judge a prediction against >= 3 real runs")
    ap.add_argument("--real", action="append", required=True, help="a real run's loadgen CSV")
    ap.add_argument("--pred", required=True, help="the prediction's results JSON")
    ap.add_argument("--median-tol", type=float, default=0.10)
    ap.add_argument("--p95-tol", type=float, default=0.20)
    ap.add_argument("--min-count", type=int, default=40)
    ap.add_argument("--min-judged", type=int, default=1)
    ap.add_argument("--stall-factor", type=float, default=1.5)
    ap.add_argument("--min-runs", type=int, default=5, help="real runs left after stalls")
    ap.add_argument("--max-floor-median", type=float, default=0.5)
    ap.add_argument("--max-floor-p95", type=float, default=1.0)
    ap.add_argument("--json")
    ap.add_argument("--title", default="")
    a = ap.parse_args()
    if len(a.real) < 3:
        print(f"judge: {len(a.real)} real runs given; the noise floor needs at least 3",
              file=sys.stderr)
        return 2
    if a.min_count < 2 or a.min_judged < 0:
        print("judge: --min-count must be >= 2 and --min-judged >= 0", file=sys.stderr)
        return 2
    if a.min_runs < 3 or a.stall_factor <= 1:
        print("judge: --min-runs must be >= 3 and --stall-factor > 1", file=sys.stderr)
        return 2
    max_floor = {"median": a.max_floor_median, "p95": a.max_floor_p95}
    runs, late_real = zip(*(judge_load_real(p) for p in a.real))
    pred, failed = judge_load_pred(a.pred)
    tols = {"median": a.median_tol, "p95": a.p95_tol}
    labels = sorted(set().union(*runs))
    stall = judge_stalls(runs, labels)
    kept = [k for k, f in enumerate(stall) if f <= a.stall_factor]
    print("real runs, slowness against the typical run: " + ", ".join(
        "%d: %.2fx%s" % (k + 1, f, "" if k in kept else " (stalled: set aside)")
        for k, f in enumerate(stall)))
    rows = {L: judge_label([r.get(L, []) for r in runs], pred.get(L, []), tols, a.min_count,
                           kept, max_floor) for L in labels}
    if len(kept) < a.min_runs:
        for L in labels:
            rows[L]["verdict"] = "NOT JUDGED"
            rows[L]["why"] = (f"{len(kept)} real runs without a stall, at least {a.min_runs} "
                              "needed (the machine was too busy)")
    judge_summary(labels, rows)
    judge_print(a.title, labels, rows)
    late_pred = judge_driver_lateness(a.pred)
    print("client's own delay, median us (in every response time, not judged): real runs' loadgen "
          + " ".join("n/a" if v is None else "%.0f" % v for v in late_real)
          + "; prediction's driver per interval " + (" ".join("%.0f" % v for v in late_pred) or "n/a"))
    bad = []
    if failed:
        bad.append(f"the prediction has {failed} failed requests")
    for L in sorted(set(pred) - set(labels)):
        bad.append(f"{L}: predicted but never seen in the real runs")
    judged = [L for L in labels if rows[L]["verdict"] != "NOT JUDGED"]
    for L in labels:
        if rows[L]["verdict"] == "FAIL":
            bad.append(f"{L}: FAIL: {rows[L]['why']}")
        elif rows[L]["verdict"] == "NOT JUDGED":
            print(f"judge: {L}: NOT JUDGED: {rows[L]['why']}", file=sys.stderr)
    if len(judged) < a.min_judged:
        bad.append(f"{len(judged)} labels judged ({', '.join(judged) or 'none'}); at least "
                   f"{a.min_judged} required")
    margins = [rows[L][q]["margin"] for L in judged for q in ("median", "p95")]
    print(f"judged {len(judged)} of {len(labels)} labels; "
          f"{sum(rows[L]['verdict'] == 'pass' for L in judged)} passed; smallest margin "
          + ("%.1f points" % (100 * min(margins)) if margins else "n/a"))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"labels": rows, "judged": len(judged), "failed_requests": failed,
                       "run_slowness": stall, "runs_kept": [k + 1 for k in kept],
                       "client_late_us": {"real_runs": list(late_real), "pred_intervals": late_pred},
                       "ok": not bad}, f, indent=1)
    for b in bad:
        print(f"judge: {b}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
