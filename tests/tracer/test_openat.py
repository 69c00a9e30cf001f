#!/usr/bin/env python3
"""test_openat.py - openat with a directory descriptor: the OPEN event's
path is the directory's path joined with the relative path (also for a
failed open and for a dirfd that itself came from openat), an absolute path
is kept, and a relative path under AT_FDCWD is joined to the working
directory. Device and
inode of each successful open match the kernel's."""
import json
import os

import tracerlib as tl

work = os.path.realpath(tl.scratch("openat"))
data = os.path.join(work, "data")
os.mkdir(data)
out = os.path.join(work, "trace")
rc, stdout, stderr = tl.record(out, [tl.helper("tt_openat"), data], timeout=60)
tl.check_eq(rc, 0, f"tt_openat exit status (stderr: {stderr.strip()})")
want = [json.loads(l) for l in stdout.splitlines()]
tl.check_eq(len(want), 6, "opens tt_openat reported")
traces = tl.read_traces(out)
tl.check_eq(len(traces), 1, "trace files")
(trace,) = traces.values()
# the program's opens in order, after the directory opens (O_DIRECTORY: not files)
opens = [e for e in trace.of("file", "open") if e.get("path", "").startswith(data)]
opens = [e for e in opens if e.get("path") not in (data, os.path.join(data, "sub"))]
tl.check_eq(len(opens), len(want), f"OPEN events on the test's files: {[e.get('path') for e in opens]}")
for i, (e, w) in enumerate(zip(opens, want)):
    tl.check_eq(e.get("path"), w["path"], f"open {i}: path")
    if w["fd"] >= 0:
        tl.check_eq(e["fd"], w["fd"], f"open {i}: fd")
        tl.check_eq((e["dev"], e["ino"]), (w["dev"], w["ino"]), f"open {i}: dev/ino")
        tl.check(e["flags"] & 1 == 0, f"open {i}: error flag set on a successful open")
    else:
        tl.check_eq(e["result"], -w["errno"], f"open {i}: result of the failed open")
        tl.check(e["flags"] & 1 == 1, f"open {i}: error flag missing on a failed open")
tl.finish()
