#!/usr/bin/env python3
"""test_openstat.py - an OPEN record takes the file's identity from the
app's own fstat when that comes first, so the tracer adds no fstat of its
own to an open (tracer_open_settle). tt_openstat opens files in seven ways
and prints the truth (device, inode, size at open) read by path; strace,
recorded too, logs every stat call the process made. Checked: each OPEN
record's identity and size, no OPEN for a directory, the open before exit()
still recorded, and exactly one stat call per descriptor (the app's where
it made one, else the tracer's)."""
import json
import os
import re

import tracerlib as tl

work = tl.scratch("openstat")
out = os.path.join(work, "trace")
data = os.path.join(work, "data")
log = os.path.join(work, "strace.log")
os.mkdir(data)
helper = tl.helper("tt_openstat")
strace = ["strace", "-f", "-qq", "-o", log, "-e", "trace=openat,close,dup,fstat,newfstatat,statx"]
rc, stdout, stderr = tl.record(out, strace + [helper, data], timeout=120)
tl.check_eq(rc, 0, f"strace tt_openstat exit status (stderr: {stderr.strip()[-500:]})")
want = [json.loads(l) for l in stdout.splitlines()]
tl.check_eq(len(want), 7, "opens tt_openstat reported")

traces = tl.read_traces(out)
opens = {}
for trace in traces.values():
    for e in trace.of("file", "open"):
        if e.get("path", "").startswith(data + "/"):
            opens.setdefault(e["path"], []).append(e)
for w in want:
    got = opens.get(w["path"], [])
    if not w["recorded"]:
        tl.check_eq(len(got), 0, f"OPEN records of the directory {w['path']}")
        continue
    tl.check_eq(len(got), 1, f"OPEN records of {w['path']}")
    for e in got:
        for k in ("fd", "dev", "ino", "file_size"):
            tl.check_eq(e[k], w[k], f"OPEN of {os.path.basename(w['path'])}: {k}")
        tl.check(e["flags"] & 1 == 0, f"OPEN of {w['path']}: error flag set")

# The stat calls on each descriptor between its openat and its close (or
# the process's end), in the process that opened the files.
lines = open(log).read().splitlines()
opened = re.compile(r'^(\d+) +openat\(AT_FDCWD, "([^"]+)", .*\) = (\d+)$')
stat_on = re.compile(r'^(\d+) +(?:fstat\((\d+),|newfstatat\((\d+), "",|statx\((\d+), "",)')
closed = re.compile(r'^(\d+) +close\((\d+)\)')
counts = {}
live = {}  # (pid, fd) -> path
for line in lines:
    m = opened.match(line)
    if m and m.group(2).startswith(data + "/"):
        live[(m.group(1), int(m.group(3)))] = m.group(2)
        counts[m.group(2)] = 0
        continue
    m = stat_on.match(line)
    if m:
        fd = int(next(g for g in m.groups()[1:] if g is not None))
        path = live.get((m.group(1), fd))
        if path:
            counts[path] += 1
        continue
    m = closed.match(line)
    if m:
        live.pop((m.group(1), int(m.group(2))), None)
for w in want:
    tl.check_eq(counts.get(w["path"]), 1,
                f"stat calls on the descriptor of {os.path.basename(w['path'])} (strace log {log})")
tl.finish()
