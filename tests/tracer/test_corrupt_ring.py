#!/usr/bin/env python3
"""test_corrupt_ring.py - a traced program that scribbles over its own ring
(tt_corrupt_ring: 500 writes to /dev/null, then a record of size 12 at its
ring's head) must cost it that ring's rest, not the collector: preplay
record exits non-zero and names the damage (`corrupt ring I of pid P at
byte B (record size 12)`), the trace keeps the 500 writes before it, and a
LOSS event marks what was skipped."""
import os
import re

import tracerlib as tl

N = 500
work = tl.scratch("corruptring")
out = os.path.join(work, "trace")
rc, stdout, stderr = tl.record(out, [tl.helper("tt_corrupt_ring"), str(N)])
m = re.search(r"ring (\d+) byte (\d+) pid (\d+)", stdout)
if not tl.check(m is not None, f"tt_corrupt_ring said where it wrote (stdout {stdout!r}, "
                               f"stderr {stderr[-300:]!r})"):
    tl.finish()
ring, byte, pid = m.groups()
tl.check(rc != 0, f"preplay record fails on a corrupt ring (exit {rc})")
want = f"corrupt ring {ring} of pid {pid} at byte {byte} (record size 12); rest of the ring skipped"
tl.check(want in stderr, f"preplay record names the damage: {want!r} in {stderr[-400:]!r}")
traces = tl.read_traces(out)
tl.check_eq(len(traces), 1, "trace files")
(t,) = traces.values()
writes = [e for e in t.of("file", "write") if e["result"] == 1]
tl.check_eq(len(writes), N, "1-byte writes kept from before the damage")
losses = t.of("loss")
TRACE_LOSS_BUFFER_FULL = 1  # formats/trace_event.h: what a skipped ring span is marked as
tl.check(len(losses) == 1 and losses[0]["reason"] == TRACE_LOSS_BUFFER_FULL and
         losses[0]["count"] >= 1 and losses[0]["ts"] >= writes[-1]["ts"],
         f"one LOSS event after the last write: {losses}")
tl.finish()
