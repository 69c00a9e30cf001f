#!/usr/bin/env python3
"""test_stdio.py - buffered stdio (tt_stdio.c): glibc does the read() and
write() behind fwrite/fprintf/fputs/fread/fgets/fflush/fclose through
internal calls LD_PRELOAD cannot see, and the tracer accounts for them
from the FILE buffers. Per file, the events flagged stdio must add up to
exactly the bytes the program wrote and read, at contiguous offsets from
0 (after fseek to 0, from 0 again), between the file's open and close.
That includes fscanf, which returns fields, not bytes (c.txt: a word
longer than the buffer, the GNU vfscanf symbol, a call reading from
glibc's pushback area), and fscanf from a pipe, where no offset can be
asked. Sizing a call is free of system calls unless it refilled the
buffer: run again under strace, the program makes a handful of lseeks,
not one per fscanf (2500 on c.txt)."""
import os

import tracerlib as tl

TRACE_F_STDIO = 0x4
work = tl.scratch("stdio")
out = os.path.join(work, "trace")
rc, stdout, stderr = tl.record(out, [tl.helper("tt_stdio"), work])
if not tl.check(rc == 0, f"tt_stdio exit status {rc} (stderr: {stderr.strip()})"):
    tl.finish()
counts = {l.split()[0]: tuple(int(x) for x in l.split()[1:]) for l in stdout.splitlines()}
(t,) = tl.read_traces(out).values()


for name in ("a", "b", "c"):
    path = os.path.join(work, f"{name}.txt")
    wrote, read = counts[name]
    tl.check_eq(os.path.getsize(path), wrote, f"{name}.txt: size")
    opens = [e for e in t.of("file", "open") if e.get("path") == path]
    if not tl.check(len(opens) == (1 if name == "b" else 2), f"{name}.txt: opens {len(opens)}"):
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
    if not reads or not writes:
        continue  # failed above
    if name in ("a", "c"):
        tl.check(max(e["ts"] for e in writes) < opens[1]["ts"] < min(e["ts"] for e in reads),
                 f"{name}.txt: written, then reopened, then read")
    if name == "c":
        # the word (bytes 10390-16390) was read by one call that refilled
        # the 4 KiB buffer twice, the second time to the file's end: one
        # event holds both reads, sized by the offset
        last = reads[-1]
        tl.check(last["offset"] == 12288 and last["result"] == read - 12288 > 4096,
                 f"c.txt: the word's call read {last['result']} bytes at {last['offset']}")

# the pipe: read events on its inode (no open, no offsets)
wrote, read = counts["pipe"]
(pipe_ino,) = counts["pipe_ino"]
reads = [e for e in t.events if e["type"] == "file" and e.get("ino") == pipe_ino and
         e["op"] == "read"]
tl.check(all(e["flags"] & TRACE_F_STDIO for e in reads), "pipe: every read flagged stdio")
tl.check_eq(sum(e["result"] for e in reads), wrote, "pipe: bytes read")
tl.check_eq(len(reads), -(-wrote // 4096), "pipe: read events")

# the cost: lseeks made in the traced program (its own fseek, the first call
# on a stream and one per refill), not one per fscanf call
log = os.path.join(work, "strace.log")
rc, _, stderr = tl.record_under_strace(os.path.join(work, "trace-strace"),
                                      [tl.helper("tt_stdio"), work], log,
                                      ("-f", "-e", "trace=lseek"))
if tl.check(rc == 0, f"tt_stdio under strace: exit status {rc} ({stderr.strip()[-300:]})"):
    (pid,) = tl.read_traces(os.path.join(work, "trace-strace")).keys()
    with open(log) as fh:
        lseeks = [l for l in fh if l.split()[0] == str(pid) and "lseek(" in l]
    tl.check(len(lseeks) <= 30, f"{len(lseeks)} lseeks in tt_stdio under the tracer")
tl.finish()
