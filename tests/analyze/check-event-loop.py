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

check-event-loop.py --replay NAME RESULTS_JSON LOAD1_TSV LOAD2_TSV [--stall-only]: the
replay (`preplay run` results) against the recorded load, whose two runs
(LOAD1, LOAD2: the same clients and requests, one after the other) give
the noise floor: per label, the relative difference of their medians (of
their p95s). Each label's replayed median must be within max(10%, that
floor) of the recorded one (both runs together), its p95 within max(20%,
the p95 floor); a stall the recording did not have fails the p95 check.
With --stall-only, only that: each label's replayed p95 at most 3 times
the recorded one plus 5 ms (scheduling noise of sub-millisecond requests
on a loaded machine; the stall of issue 27 was 40 ms) (where the goal cannot be held: a noisy machine, or other
tiers that do not replay within it)."""
import collections
import json
import sys


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))]


def replay_main(name, results, load1, load2, mode=""):
    def times(path):
        out = collections.defaultdict(list)
        for line in open(path):
            if line.strip():
                f = line.split("\t")
                out[f[1]].append(float(f[4]))
        return out
    r1, r2 = times(load1), times(load2)
    d = json.load(open(results))
    errors = []
    if set(d["labels"]) != set(r1):
        errors.append("labels %s, recorded %s" % (sorted(d["labels"]), sorted(r1)))
    if any(i["failed"] for i in d["intervals"]):
        errors.append("failed requests: %s" % d["intervals"])
    for label in sorted(r1):
        rec = r1[label] + r2[label]
        rep = d["labels"].get(label)
        if not rep:
            continue
        m1, m2, mrec = pct(r1[label], 0.5), pct(r2[label], 0.5), pct(rec, 0.5)
        q1, q2, qrec = pct(r1[label], 0.95), pct(r2[label], 0.95), pct(rec, 0.95)
        floor_m = abs(m1 - m2) / min(m1, m2)
        floor_q = abs(q1 - q2) / min(q1, q2)
        dm = (rep["median_s"] - mrec) / mrec
        dq = (rep["p95_s"] - qrec) / qrec
        ok_m = abs(dm) <= max(0.10, floor_m) or mode == "--stall-only"
        ok_q = abs(dq) <= max(0.20, floor_q) or (
            mode == "--stall-only" and rep["p95_s"] <= 3 * qrec + 0.005)
        print("%s replay: %-18s median %7.2f ms recorded %7.2f (%+5.1f%%, floor %4.1f%%) p95 %7.2f ms "
              "recorded %7.2f (%+5.1f%%, floor %4.1f%%), %d requests" % (
                  name, label, rep["median_s"] * 1e3, mrec * 1e3, dm * 100, floor_m * 100,
                  rep["p95_s"] * 1e3, qrec * 1e3, dq * 100, floor_q * 100, rep["count"]))
        if not ok_m:
            errors.append("%s: median %+.1f%% off the recording" % (label, dm * 100))
        if not ok_q:
            errors.append("%s: p95 %+.1f%% off the recording" % (label, dq * 100))
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
