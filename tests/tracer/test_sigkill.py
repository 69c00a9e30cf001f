#!/usr/bin/env python3
"""test_sigkill.py - tt_killme does N known 8-byte writes (more than one
ring holds, so back-pressure is exercised), says "done", and is SIGKILLed:
every one of the N writes must be in the trace, in order, at offsets
0, 8, 16, ..., with no loss recorded; preplay record reports 128+9."""
import os
import select
import signal
import subprocess
import time

import tracerlib as tl

N = 20000
work = tl.scratch("sigkill")
out = os.path.join(work, "trace")
target = os.path.join(work, "records.dat")
p = tl.spawn(tl.record_args(out, [tl.helper("tt_killme"), target, str(N)]),
             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
app_pid = None
deadline = time.monotonic() + 60
buf = b""
while app_pid is None and time.monotonic() < deadline:
    r, _, _ = select.select([p.stdout], [], [], 1)
    if r:
        chunk = os.read(p.stdout.fileno(), 4096)
        if not chunk:
            break
        buf += chunk
        for line in buf.decode().splitlines():
            if line.startswith("done "):
                app_pid = int(line.split()[3])
if not tl.check(app_pid is not None, f"tt_killme reported done (output so far: {buf[-200:]!r})"):
    tl.finish()
os.kill(app_pid, signal.SIGKILL)
try:
    p.wait(timeout=30)
except subprocess.TimeoutExpired:
    tl.fail("preplay record did not end after its app was killed")
    tl.finish()
tl.check_eq(p.returncode, 128 + signal.SIGKILL, "preplay record's exit status")
tl.check_eq(os.path.getsize(target), 8 * N, "bytes tt_killme wrote (its own view)")
traces = tl.read_traces(out)
t = traces.get(app_pid)
if tl.check(t is not None, "trace of the killed process"):
    opened = [e for e in t.of("file", "open") if e.get("path") == target]
    if tl.check(len(opened) == 1, "open of the records file"):
        writes = tl.file_events(t, opened[0]["ino"], {"write"})
        tl.check_eq(len(writes), N, "writes in the trace")
        bad = [i for i, e in enumerate(writes) if (e["offset"], e["result"]) != (8 * i, 8)]
        tl.check_eq(bad[:5], [], "writes not at offset 8*i with 8 bytes (first indexes)")
    tl.check_eq(t.of("loss"), [], "loss records")
    progress = [e for e in t.of("file", "write") if e["fd"] == 1]
    tl.check(len(progress) >= N // 1000, f"progress writes to stdout recorded: {len(progress)}")
tl.finish()
