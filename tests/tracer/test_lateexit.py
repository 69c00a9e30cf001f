#!/usr/bin/env python3
"""test_lateexit.py - a thread's traced work after the tracer's hooks for
its end were first called (tt_lateexit.c) is in the trace before the
thread's THREAD_EXIT, in its one ring, never after it: `preplay dump`
lists, per tid, one thread_start first and one thread_exit last, and no
event of the tid dated after its exit.

  key    an app key destructor that runs after ours writes: the write is
         the worker's, before its exit (it used to come after a second
         thread_start and a second thread_exit)
  exit   an atexit handler and a linked library's destructor (run after the
         tracer's destructor) write after main's last call: both before
         main's exit (the library's write used to follow it)
  rearm  an app key destructor that re-arms itself in every round: its
         writes of the first three rounds are traced, the one of the last
         round (after everything the tracer can hook) is counted lost
         (LOSS no_ring, `preplay info`'s lost_events), not recorded after
         the exit"""
import json
import os
import subprocess

import tracerlib as tl

WANT = {"key": (b"worker.\nkeydtor\n", {"worker": 2}, 0),
        "rearm": (b"worker.\n" + b"keydtor\n" * 4, {"worker": 4}, 1),
        "exit": (b"main...\natexit.\nlibfini\n", {"main": 3}, 0)}

work = tl.scratch("lateexit")
for mode, (content, writes_of, lost_want) in WANT.items():
    out = os.path.join(work, "trace-" + mode)
    target = os.path.join(work, mode + ".out")
    rc, stdout, err = tl.record(out, [tl.helper("tt_lateexit"), mode, target])
    if not tl.check(rc == 0, f"{mode}: exit status {rc} ({err.strip()[-300:]})"):
        continue
    tids = json.loads(stdout.strip().splitlines()[-1])
    with open(target, "rb") as f:
        tl.check_eq(f.read(), content, f"{mode}: what the program wrote")
    (path,) = [os.path.join(out, n) for n in os.listdir(out) if n.endswith(".trace")]
    d = subprocess.run([tl.PREPLAY, "dump", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if not tl.check(d.returncode == 0, f"{mode}: preplay dump: {d.stderr.decode()[-300:]}"):
        continue
    by_tid = {}
    for line in d.stdout.decode().splitlines():
        f = line.split()
        if len(f) >= 3 and f[1].isdigit() and f[1] != "0" and f[2] != "string":
            by_tid.setdefault(int(f[1]), []).append((int(f[0]), f[2], line))
    for tid, evs in by_tid.items():
        kinds = [k for _, k, _ in evs]
        tl.check_eq((kinds.count("thread_start"), kinds.count("thread_exit")), (1, 1),
                    f"{mode}: tid {tid}: thread_start and thread_exit records")
        tl.check_eq((kinds[0], kinds[-1]), ("thread_start", "thread_exit"),
                    f"{mode}: tid {tid}: first and last record in the trace")
        end = max(ts for ts, k, _ in evs if k == "thread_exit")
        late = [l for ts, k, l in evs if ts > end]
        tl.check_eq(late, [], f"{mode}: tid {tid}: events dated after its exit")
    ino = os.stat(target).st_ino
    (t,) = tl.read_traces(out).values()
    for who, n in writes_of.items():
        got = [e for e in tl.file_events(t, ino, ["write"]) if e["tid"] == tids[who]]
        tl.check_eq(len(got), n, f"{mode}: traced writes of the {who} thread")
    lost = sum(e["count"] for e in t.of("loss"))
    tl.check_eq(lost, lost_want, f"{mode}: calls counted lost")
    info = subprocess.run([tl.PREPLAY, "info", "--json", out], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE)
    if tl.check(info.returncode == 0, f"{mode}: preplay info: {info.stderr.decode()[-300:]}"):
        tl.check_eq(json.loads(info.stdout)["lost_events"], lost_want, f"{mode}: info's lost_events")
tl.finish()
