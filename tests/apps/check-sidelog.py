#!/usr/bin/env python3
"""tests/apps/check-sidelog.py - checks the sample application's side logs
against what the load generator sent (format of both in README.md).

usage: check-sidelog.py --frontend FILE --apptier FILE [--csv FILE]... [--shared-log FILE]
                        [--allow-status CODE]...

Checks: every line well-formed; ids unique per tier; every request a client
recorded (its X-Request-Id; status 200 unless --allow-status) appears exactly once at the front end
with the same label, and the front end served nothing else; every GET /fanout
has exactly two nested ids, each in the app tier's log with that parent, and no
other request has nested ids; every app-tier request belongs to a fanout;
timestamps nest (client > front end > app tier, the two calls in order);
/log appended exactly one line per /log request to the shared log.
Prints a one-line summary; on failure, each problem on its own line (the first
30), and exits 1. Standard library only; it never modifies its inputs.
"""
import argparse
import csv
import sys

FIELDS = ["tier", "pid", "tid", "id", "parent", "label", "start_ns", "end_ns", "nested"]


def read_sidelog(path, tier, problems):
    rows = {}
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if line.startswith("#"):
                continue
            cols = line.rstrip("\n").split("\t")
            where = f"{path}:{lineno}"
            if len(cols) != len(FIELDS):
                problems.append(f"{where}: {len(cols)} columns, want {len(FIELDS)}")
                continue
            r = dict(zip(FIELDS, cols))
            try:
                for k in ("pid", "tid", "id", "parent", "start_ns", "end_ns"):
                    r[k] = int(r[k])
                r["nested"] = [] if r["nested"] == "-" else [int(x) for x in r["nested"].split(",")]
            except ValueError as e:
                problems.append(f"{where}: bad number ({e})")
                continue
            if r["tier"] != tier:
                problems.append(f"{where}: tier '{r['tier']}', want '{tier}'")
            if not 0 < r["start_ns"] <= r["end_ns"]:
                problems.append(f"{where}: start {r['start_ns']} not before end {r['end_ns']}")
            if r["id"] in rows:
                problems.append(f"{where}: id {r['id']} logged twice")
            rows[r["id"]] = r
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--frontend", required=True)
    ap.add_argument("--apptier", required=True)
    ap.add_argument("--csv", action="append", default=[])
    ap.add_argument("--shared-log")
    ap.add_argument("--allow-status", action="append", default=["200"])
    args = ap.parse_args()
    problems = []
    fe = read_sidelog(args.frontend, "frontend", problems)
    at = read_sidelog(args.apptier, "apptier", problems)

    client = {}
    for path in args.csv:
        with open(path, encoding="utf-8", newline="") as f:
            for lineno, row in enumerate(csv.DictReader(f), 2):
                where = f"{path}:{lineno}"
                if row["status"] not in args.allow_status:
                    problems.append(f"{where}: {row['label']} answered with status {row['status']}")
                    if row["status"] == "0":
                        continue
                rid = int(row["request_id"])
                if rid in client:
                    problems.append(f"{where}: request id {rid} seen by the client twice")
                client[rid] = (row["label"], int(row["start_ns"]), int(row["response_ns"]), where)

    for rid, (label, start, response, where) in client.items():
        r = fe.get(rid)
        if r is None:
            problems.append(f"{where}: request {rid} ({label}) missing from the front end's log")
            continue
        if r["label"] != label:
            problems.append(f"{where}: request {rid} logged as '{r['label']}', client sent '{label}'")
        if start and not (start <= r["start_ns"] and r["end_ns"] <= start + response):
            problems.append(f"{where}: request {rid} served at [{r['start_ns']},{r['end_ns']}] "
                            f"outside the client's [{start},{start + response}]")
    for rid, r in fe.items():
        if rid not in client:
            problems.append(f"front end served request {rid} ({r['label']}) no client recorded")

    nested_seen = set()
    fanouts = 0
    for rid, r in fe.items():
        if r["label"] != "GET /fanout":
            if r["nested"]:
                problems.append(f"front end request {rid} ({r['label']}) has nested ids {r['nested']}")
            continue
        fanouts += 1
        if len(r["nested"]) != 2:
            problems.append(f"fanout {rid} has {len(r['nested'])} nested ids, want 2")
            continue
        prev_end = r["start_ns"]
        for nid, want_label in zip(r["nested"], ("lookup", "render")):
            nested_seen.add(nid)
            n = at.get(nid)
            if n is None:
                problems.append(f"fanout {rid}: nested request {nid} missing from the app tier's log")
                continue
            if n["parent"] != rid:
                problems.append(f"app tier request {nid} has parent {n['parent']}, want {rid}")
            if n["label"] != want_label:
                problems.append(f"app tier request {nid} is '{n['label']}', want '{want_label}'")
            if n["pid"] == r["pid"]:
                problems.append(f"app tier request {nid} logged by the front end's pid {r['pid']}")
            if not (prev_end <= n["start_ns"] and n["end_ns"] <= r["end_ns"]):
                problems.append(f"app tier request {nid} [{n['start_ns']},{n['end_ns']}] does not "
                                f"nest in fanout {rid} [{r['start_ns']},{r['end_ns']}] after "
                                f"its previous call")
            prev_end = n["end_ns"]
    for nid, n in at.items():
        if nid not in nested_seen:
            problems.append(f"app tier request {nid} (parent {n['parent']}) belongs to no fanout")

    log_requests = sum(1 for r in fe.values() if r["label"] == "GET /log")
    if args.shared_log:
        with open(args.shared_log, encoding="utf-8") as f:
            lines = [l for l in f if l.strip()]
        logged = {int(l.split("request=")[1].split()[0]) for l in lines if "request=" in l}
        want = {rid for rid, r in fe.items() if r["label"] == "GET /log"}
        if len(lines) != log_requests or logged != want:
            problems.append(f"shared log has {len(lines)} lines for {log_requests} /log requests"
                            f" ({len(want ^ logged)} ids differ)")
        seqs = [int(l.split()[0].split("=")[1]) for l in lines]
        if seqs != list(range(1, len(seqs) + 1)):
            problems.append("shared log sequence numbers are not 1..N in order (lost mutual exclusion?)")

    threads = {(r["pid"], r["tid"]) for r in fe.values()}
    print(f"check-sidelog: {len(client)} client requests, {len(fe)} front-end lines on "
          f"{len(threads)} threads, {fanouts} fanouts, {len(at)} app-tier lines, "
          f"{log_requests} /log appends: {len(problems)} problems")
    for p in problems[:30]:
        print("  " + p)
    if len(problems) > 30:
        print(f"  ... and {len(problems) - 30} more")
    return 1 if problems or not client else 0


if __name__ == "__main__":
    sys.exit(main())
