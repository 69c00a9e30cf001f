#!/usr/bin/python3
"""check-event-loop.py - checks a plan of test-analyze-event-loop.sh against
what its load clients saw (keepalive_load.py's lines).
Usage: check-event-loop.py NAME INFO_JSON BLOCKS_TSV LOAD_TSV FRONT BACK [MIN_COVERAGE]
  - no violation, no flagged block, coverage >= MIN_COVERAGE (0.99), the front end (FRONT)
    marked as an event loop, the back end (BACK) not;
  - one front-end request per client request, per label;
  - each request's events in its own block: the (received, sent) bytes of
    the front-end blocks are, as a multiset, the (sent, received) bytes of
    the clients' requests;
  - every back-end block is called by exactly one front-end block, every
    front-end block calls at most one, of its own label when the back end
    has labels.
Prints one summary line; exits 1 with one line per failed check.

check-event-loop.py --replay NAME [--one-sided=LABEL,...] REPLAY_TSV REAL_TSV REAL_TSV...: the
replay (one run fewer than the real ones, pooled in REPLAY_TSV) against the real stack measured in
the same run, by the same client under the same load (keepalive_load.py,
real runs before, between and after the replay runs). Per label, the real runs' spread is the noise floor: the largest
relative difference between two real runs' medians (p95s). The replayed
median must lie within max(10%, median floor) of the real runs' pooled
median, the replayed p95 within max(50%, p95 floor) of their pooled p95
(the median the accuracy benchmark's goal, the p95 wider: P95_GOAL), plus RESOLUTION_S: a
difference under half a millisecond is below what a shared 2-core VM's
scheduler resolves (a sub-millisecond p95 moved +112% between runs of one
test, 0.32 -> 0.68 ms) and far below the stalls this test exists to catch
(a 40 ms Nagle wait, 200 ms delayed ACKs); every label must come
back with as many requests as the real runs sent, all answered. A
--one-sided label has a known reason to replay faster than the real stack:
only a replay slower than the bound fails it (a stall), a faster one is
printed as such. Prints one line per label with the margin (error /
bound: above 1 fails)."""
import collections
import json
import os
import sys

RESOLUTION_S = 0.5e-3
# A label's p95 here comes from 32 rounds of 1 or 4 clients (32-256 samples
# a run: the 2nd-13th highest); the accuracy benchmark judges the 20 % goal
# on thousands. This test's stated p95 bound is 50 %: a stall (the 40 ms
# Nagle wait it was written for, +2000 %) or a 2x tail fails it. Measured
# on a quiet machine (load 1.6): GET /item.php with 4 clients replayed
# at p95 3.0 ms against 2.0 ms real (+48 %), the replay's tail longer.
P95_GOAL = 0.50
# Under ASan+UBSan the replayer is sanitized and the real stack is not:
# times say nothing, so only completeness is judged (as short.sh does).
SANITIZED = os.environ.get("PREPLAY_SANITIZE") == "1"


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))]


def replay_main(name, *args):
    one_sided = set()
    if args and args[0].startswith("--one-sided="):
        one_sided = set(args[0].split("=", 1)[1].split(","))
        args = args[1:]
    replay, reals = args[0], args[1:]
    def times(path):
        out = collections.defaultdict(list)
        for line in open(path):
            if line.strip():
                f = line.split("\t")
                out[f[1]].append(float(f[4]))
        return out
    rep, runs = times(replay), [times(r) for r in reals]
    errors = []
    if len(runs) < 2:
        errors.append("%d real runs: the noise floor needs at least 2" % len(runs))
    labels = sorted(runs[0])
    if sorted(rep) != labels or any(sorted(r) != labels for r in runs):
        errors.append("labels: replay %s, real runs %s" % (sorted(rep), [sorted(r) for r in runs]))
    worst = 0.0
    for label in labels:
        if label not in rep or any(label not in r for r in runs):
            continue
        pooled = [t for r in runs for t in r[label]]
        if any(len(rep[label]) != (len(runs) - 1) * len(r[label]) for r in runs):
            errors.append("%s: %d replayed requests (one run fewer than the real), real runs %s" % (
                label, len(rep[label]), [len(r[label]) for r in runs]))
        line = "%s replay: %-16s" % (name, label)
        for q, goal in ((0.5, 0.10), (0.95, P95_GOAL)):
            per = [pct(r[label], q) for r in runs]
            floor = (max(per) - min(per)) / min(per)
            ref, got = pct(pooled, q), pct(rep[label], q)
            err = (got - ref) / ref
            bound = max(goal, floor) + RESOLUTION_S / ref
            judged = err if label in one_sided else abs(err)
            worst = max(worst, judged / bound)
            line += " %s %7.3f ms real %7.3f (runs %s) %+6.1f%% of max(%d%%, floor %.1f%%) + 0.5 ms" % (
                "p50" if q == 0.5 else "p95", got * 1e3, ref * 1e3,
                "/".join("%.3f" % (v * 1e3) for v in per), err * 100, goal * 100, floor * 100)
            if judged > bound and not SANITIZED:
                errors.append("%s: replayed %s %+.1f%% off the real runs' (bound %.1f%%)" % (
                    label, "median" if q == 0.5 else "p95", err * 100, bound * 100))
        print(line + (" (one-sided)" if label in one_sided else ""))
    print("%s replay: worst margin %.2f (error / bound; above 1 fails)%s" % (
        name, worst, " - not judged: sanitizer build, completeness only" if SANITIZED else ""))
    for e in errors:
        print("%s replay: %s" % (name, e))
    sys.exit(1 if errors else 0)


def main():
    if sys.argv[1] == "--replay":
        replay_main(*sys.argv[2:])
    name, info, tsv, load, front, back = sys.argv[1:7]
    j = json.load(open(info))
    errors = []
    blocks = {}
    for line in open(tsv):
        p = line.rstrip("\n").split("\t")
        if p[0] == "B":
            blocks[int(p[1])] = dict(comp=p[2], flags=int(p[7]),
                                     callees=[] if p[8] == "-" else [int(x) for x in p[8].split(",")],
                                     label=p[9], recv=int(p[14]), sent=int(p[15]))
    reqs = [l.rstrip("\n").split("\t") for l in open(load) if l.strip()]
    sent_by_clients = collections.Counter((int(r[2]), int(r[3])) for r in reqs)
    labels = collections.Counter(r[1] for r in reqs)
    if j["violations"] or any(b["flags"] for b in blocks.values()):
        errors.append("violations %d, flagged blocks %d: %s" % (
            j["violations"], sum(1 for b in blocks.values() if b["flags"]), j.get("violations_text")))
    min_cov = float(sys.argv[7]) if len(sys.argv) > 7 else 0.99
    if j["coverage"] < min_cov:
        errors.append("coverage %.4f < %.2f" % (j["coverage"], min_cov))
    comps = {c["name"]: c for c in j["components"]}
    if not comps.get(front, {}).get("event_loop") or comps.get(back, {}).get("event_loop", True):
        errors.append("event loop marks: %s" % j["components"])
    if j["labels"] != dict(labels) or j["requests"] != len(reqs):
        errors.append("requests %d %s, the clients sent %d %s" % (j["requests"], j["labels"], len(reqs), dict(labels)))
    fe = [b for b in blocks.values() if b["comp"] == front]
    be = sorted(i for i, b in blocks.items() if b["comp"] == back)
    got = collections.Counter((b["recv"], b["sent"]) for b in fe)
    if got != sent_by_clients:
        diff = (got - sent_by_clients) + (sent_by_clients - got)
        errors.append("front-end blocks' (received, sent) bytes differ from the clients' in %d "
                      "requests, e.g. %s" % (sum(diff.values()), list(diff.items())[:4]))
    called = sorted(c for b in fe for c in b["callees"])
    if called != be:
        errors.append("back-end blocks not called exactly once each (%d called, %d blocks)" % (len(called), len(be)))
    if any(len(b["callees"]) > 1 for b in fe):
        errors.append("a front-end block calls more than one back-end block")
    for b in fe:
        for c in b["callees"]:
            if blocks[c]["label"] not in ("-", b["label"]):
                errors.append("back-end block %d (%s) called by a %s block" % (c, blocks[c]["label"], b["label"]))
                break
    print("%s: %d requests, %d+%d blocks, coverage %.4f, %d flagged, %d byte mismatches" % (
        name, j["requests"], len(fe), len(be), j["coverage"],
        sum(1 for b in blocks.values() if b["flags"]), sum(((got - sent_by_clients) + (sent_by_clients - got)).values())))
    for e in errors:
        print("%s: %s" % (name, e))
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
