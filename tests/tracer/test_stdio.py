#!/usr/bin/env python3
"""test_stdio.py - buffered stdio (tt_stdio.c): glibc does the read() and
write() behind fwrite/fprintf/fputs/fread/fgets/fflush/fclose through
internal calls LD_PRELOAD cannot see, and the tracer accounts for them
from the FILE buffers. Per file, the events flagged stdio must add up to
exactly the bytes the program wrote and read, at contiguous offsets from
0 (after fseek to 0, from 0 again), between the file's open and close."""
import os

import tracerlib as tl

TRACE_F_STDIO = 0x4
work = tl.scratch("stdio")
out = os.path.join(work, "trace")
rc, stdout, stderr = tl.record(out, [tl.helper("tt_stdio"), work])
if not tl.check(rc == 0, f"tt_stdio exit status {rc} (stderr: {stderr.strip()})"):
    tl.finish()
counts = {l.split()[0]: (int(l.split()[1]), int(l.split()[2])) for l in stdout.splitlines()}
(t,) = tl.read_traces(out).values()


for name in ("a", "b"):
    path = os.path.join(work, f"{name}.txt")
    wrote, read = counts[name]
    tl.check_eq(os.path.getsize(path), wrote, f"{name}.txt: size")
    opens = [e for e in t.of("file", "open") if e.get("path") == path]
    if not tl.check(len(opens) == (2 if name == "a" else 1), f"{name}.txt: opens {len(opens)}"):
        continue
    evs = tl.file_events(t, opens[0]["ino"])
    writes = [e for e in evs if e["op"] == "write"]
    reads = [e for e in evs if e["op"] == "read"]
    tl.check(all(e["flags"] & TRACE_F_STDIO for e in writes + reads),
             f"{name}.txt: every transfer flagged stdio")
    tl.check_eq(sum(e["result"] for e in writes), wrote, f"{name}.txt: bytes written")
    tl.check_eq(sum(e["result"] for e in reads), read, f"{name}.txt: bytes read")
    tl.check_eq(tl.not_following_on(writes, 0), [], f"{name}.txt: writes not following on")
    tl.check_eq(tl.not_following_on(reads, 0), [], f"{name}.txt: reads not following on")
    tl.check_eq(len([e for e in evs if e["op"] == "close"]), len(opens), f"{name}.txt: closes")
    if name == "a":
        tl.check(len(writes) >= wrote // 4096, f"a.txt: {len(writes)} write events")
        tl.check(max(e["ts"] for e in writes) < opens[1]["ts"] < min(e["ts"] for e in reads),
                 "a.txt: written, then reopened, then read")
tl.finish()
