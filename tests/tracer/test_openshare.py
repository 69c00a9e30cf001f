#!/usr/bin/env python3
"""test_openshare.py - deferred OPEN records (tracer_open_settle) when the
descriptor does not stay the opener's alone (tt_openshare.c): another
thread closes it and opens another file on the same number before the
opener's next traced call; dup2 replaces it; a raw syscall closes it; the
process forks right after the open. Checked against the truth read by
path: an OPEN never carries another file's identity (when the opener
cannot know it any more, the record has none: device and inode 0), every
OPEN is written, a CLOSE by another thread or by a forked child carries the
file's identity, and dup2 and fork take the identity before the entry
changes."""
import json
import os

import tracerlib as tl

work = tl.scratch("openshare")
out = os.path.join(work, "trace")
data = os.path.join(work, "data")
os.mkdir(data)
rc, stdout, stderr = tl.record(out, [tl.helper("tt_openshare"), data], timeout=60)
tl.check_eq(rc, 0, f"tt_openshare exit status (stderr: {stderr.strip()[-500:]})")
want = {w["case"]: w for w in (json.loads(l) for l in stdout.splitlines())}
tl.check_eq(sorted(want), ["dup2", "fork", "hidden", "other", "reused"], "cases reported")

traces = tl.read_traces(out)
tl.check_eq(len(traces), 2, "trace files (the process and its forked child)")
parent = next((t for t in traces.values() if t.of("file", "open")), None)
if not parent:
    tl.fail("no trace holds OPEN records")
    tl.finish()
child = next((t for t in traces.values() if t is not parent), None)


def opens(path):
    return parent.of("file", "open", path=path)


def closes(trace, ino):
    return [e for e in trace.of("file", "close") if e.get("ino") == ino]


def same_file(e, w, what):
    for k in ("fd", "dev", "ino"):
        tl.check_eq(e.get(k), w[k], f"{what}: {k}")


def unknown_file(e, w, what):
    tl.check_eq(e.get("fd"), w["fd"], f"{what}: fd")
    tl.check_eq((e.get("dev"), e.get("ino")), (0, 0), f"{what}: identity (must be unknown)")


# reused: the opener's record says where it opened, without identity; the
# second thread's close carries the first file's identity, its own open the
# second file's
w, o = want["reused"], want["other"]
got = opens(w["path"])
if tl.check_eq(len(got), 1, "OPEN records of reused.dat"):
    unknown_file(got[0], w, "OPEN of reused.dat")
    c = closes(parent, w["ino"])
    if tl.check_eq(len(c), 1, "CLOSE records of reused.dat"):
        tl.check(c[0]["tid"] != got[0]["tid"], "reused.dat closed by the second thread")
got = opens(o["path"])
if tl.check_eq(len(got), 1, "OPEN records of other.dat"):
    same_file(got[0], o, "OPEN of other.dat")
tl.check_eq(len(closes(parent, o["ino"])), 1, "CLOSE records of other.dat")

w = want["dup2"]
got = opens(w["path"])
if tl.check_eq(len(got), 1, "OPEN records of dup2.dat"):
    same_file(got[0], w, "OPEN of dup2.dat (settled before dup2)")

w = want["hidden"]
got = opens(w["path"])
if tl.check_eq(len(got), 1, "OPEN records of hidden.dat (closed by a raw syscall)"):
    unknown_file(got[0], w, "OPEN of hidden.dat")

w = want["fork"]
got = opens(w["path"])
if tl.check_eq(len(got), 1, "OPEN records of fork.dat"):
    same_file(got[0], w, "OPEN of fork.dat (settled before fork)")
tl.check_eq(len(closes(parent, w["ino"])), 1, "CLOSE records of fork.dat in the parent")
if child:
    tl.check_eq(len(closes(child, w["ino"])), 1, "CLOSE records of fork.dat in the child")
tl.finish()
