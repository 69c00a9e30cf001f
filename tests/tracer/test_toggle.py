#!/usr/bin/env python3
"""test_toggle.py - tracing switched off and on while the app runs
(SIGUSR1 to `preplay record`, started with --off): tt_toggle's two threads
loop on ~0.3 ms of CPU and a write to /dev/null. The trace must hold the
switches as TRACING_ON, TRACING_OFF, TRACING_ON in that order, writes of
both threads in both windows and none while tracing was off, and no CPU
event that carries CPU time run while tracing was off (each is one loop's
worth: a thread's first event after tracing comes back on once carried
the whole off window)."""
import os
import signal
import statistics
import subprocess
import time

import tracerlib as tl

TRACING_ON, TRACING_OFF = "tracing_on", "tracing_off"
SLACK_NS = 2_000_000  # a write already under way when tracing went off

work = tl.scratch("toggle")
out = os.path.join(work, "trace")
p = tl.spawn(tl.record_args(out, [tl.helper("tt_toggle"), "2.0"], extra=["--off"]),
             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
for pause in (0.4, 0.5, 0.4):  # off 0.4 s, on 0.5 s, off 0.4 s, on until the end
    time.sleep(pause)
    p.send_signal(signal.SIGUSR1)
_, err = tl.wait_end(p, "preplay record")
tl.check_eq(p.returncode, 0, f"preplay record's exit status (stderr: {err.decode()[-300:]})")
(t,) = tl.read_traces(out).values()
switches = [e for e in t.events if e["type"] == "control" and e["op"] in (TRACING_ON, TRACING_OFF)]
if not tl.check([e["op"] for e in switches] == [TRACING_ON, TRACING_OFF, TRACING_ON],
                f"switches in the trace: {[e['op'] for e in switches]}, want on, off, on"):
    tl.finish()
on1, off1, on2 = (e["ts"] for e in switches)
writes = [e for e in t.events if e["type"] == "file" and e["op"] == "write"]
tids = sorted({e["tid"] for e in writes})
tl.check_eq(len(tids), 2, "threads with writes")
for tid in tids:
    mine = [e for e in writes if e["tid"] == tid]
    off = [e["ts"] for e in mine if e["ts"] < on1 or off1 + SLACK_NS < e["ts"] < on2]
    tl.check_eq(off[:3], [], f"thread {tid}: writes timed while tracing was off")
    tl.check(any(on1 <= e["ts"] <= off1 for e in mine), f"thread {tid}: writes in the first window")
    tl.check(any(e["ts"] >= on2 for e in mine), f"thread {tid}: writes in the second window")
    cpu = [e for e in t.events if e["type"] == "cpu" and e["tid"] == tid]
    if not tl.check(len(cpu) >= 20, f"thread {tid}: {len(cpu)} CPU events"):
        continue
    median = statistics.median(e["dur"] for e in cpu)
    big = [(e["ts"], e["dur"]) for e in cpu if e["dur"] > 5 * median]
    print(f"thread {tid}: {len(mine)} writes, {len(cpu)} CPU events, median {median / 1e3:.0f} us, "
          f"largest {max(e['dur'] for e in cpu) / 1e3:.0f} us")
    tl.check_eq(big[:3], [], f"thread {tid}: CPU events over 5x the median ({median} ns): (ts, ns)")
tl.finish()
