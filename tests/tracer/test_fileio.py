#!/usr/bin/env python3
"""test_fileio.py - offsets, sizes, results, file size before each operation
and device+inode of every FILE event of tt_fileio must equal what the kernel
said (tt_fileio prints the truth it read with raw syscalls); each dup is a
DUP record naming the new descriptor, and every CLOSE pairs with an OPEN or
a DUP. A copy_file_range and a sendfile between two files are a record of
their read side on the source (fd2 the destination) and a write on the
destination. Every event's
time lies within the recording's CLOCK_MONOTONIC span (the rings carry raw
TSC ticks the collector converts; STRING definitions carry no time).
Descriptors made where LD_PRELOAD cannot see are named as the kernel names
them: the raw-opened files by their paths (also one unlinked before its
first use), a shell pipeline's pipe "pipe"; and
`info` lists the images the pipeline's processes exec'd."""
import json
import os
import subprocess
import time

import tracerlib as tl

work = tl.scratch("fileio")
out = os.path.join(work, "trace")
data = os.path.join(work, "data")
os.mkdir(data)
started = time.monotonic_ns()
rc, stdout, stderr = tl.record(out, [tl.helper("tt_fileio"), data], timeout=60)
ended = time.monotonic_ns()
tl.check_eq(rc, 0, f"tt_fileio exit status (stderr: {stderr.strip()})")
lines = [json.loads(l) for l in stdout.splitlines()]
opens = [l for l in lines if "open" in l]
tl.check_eq(len(opens), 2, "files tt_fileio opened")
traces = tl.read_traces(out)
tl.check_eq(len(traces), 1, "trace files")
(trace,) = traces.values()
untimed = [e for e in trace.events if e["ts"] == 0]
tl.check(all(e["type"] == "string" for e in untimed), "only STRING definitions carry no time")
outside = [e for e in trace.events
           if e["ts"] and not started <= e["ts"] <= e["ts"] + e["dur"] <= ended]
tl.check_eq(outside[:3], [], f"events outside the recording's span [{started}, {ended}] ns")

DATA_OPS = {"read", "write", "pread", "pwrite", "truncate", "fsync", "fdatasync", "close", "dup",
            "fallocate", "sync_range", "syncfs"}
FIELDS = ("op", "fd", "offset", "size", "result", "file_size", "dev", "ino")
raw_opens = [l for l in lines if "raw_open" in l]
tl.check_eq(len(raw_opens), 2, "files tt_fileio opened with a raw openat")
for o in opens + raw_opens:
    want = []
    seen = False
    for l in lines:
        if "open" in l or "raw_open" in l:
            seen = l is o
        elif seen and "copy" not in l:
            want.append(l)
    name = o.get("open") or o["raw_open"]
    if "open" in o:
        opened = [e for e in trace.of("file", "open") if e.get("path") == name and e["fd"] == o["fd"]]
        tl.check(len(opened) >= 1, f"an OPEN event for {name} on fd {o['fd']}")
        for e in opened:
            tl.check_eq((e["dev"], e["ino"]), (o["dev"], o["ino"]), f"dev/ino of open of {name}")
    o = dict(o, open=name)
    got = [e for e in tl.file_events(trace, o["ino"], DATA_OPS)]
    tl.check_eq(len(got), len(want), f"data events on {o['open']}")
    for i, (g, w) in enumerate(zip(got, want)):
        for k in FIELDS:
            tl.check_eq(g[k], w[k], f"{o['open']} event {i} ({w['op']}) field {k}")
        tl.check(g["flags"] & 1 == 0, f"{o['open']} event {i}: error flag set")
        if "flags" in w:  # fallocate's mode, sync_file_range's flags
            tl.check_eq(g["open_flags"], w["flags"], f"{o['open']} event {i} ({w['op']}) mode")
        # fd2: the new descriptor of a DUP, -1 (none) for every other op
        tl.check_eq(g["fd2"], w["result"] if w["op"] == "dup" else -1,
                    f"{o['open']} event {i} ({w['op']}) field fd2")
        tl.check_eq(g.get("path"), name, f"{name} event {i} ({w['op']}): path")
# The read sides of the copies, on the source file.
for c in [l for l in lines if "copy" in l]:
    got = [e for e in tl.file_events(trace, c["ino"], [c["copy"]]) if e["fd"] == c["fd"]]
    tl.check_eq(len(got), 1, f"{c['copy']} records on the source's fd {c['fd']}")
    for g in got:
        for k in ("fd", "fd2", "offset", "size", "result", "file_size", "dev", "ino"):
            tl.check_eq(g[k], c[k], f"{c['copy']} field {k}")
# Every CLOSE names a descriptor an OPEN or a DUP made.
made = set()
for e in trace.of("file"):
    if e["op"] == "open" and e["result"] >= 0:
        made.add(e["fd"])
    elif e["op"] == "dup" and e["result"] >= 0:
        made.add(e["result"])
    elif e["op"] == "close":
        tl.check(e["fd"] in made, f"CLOSE of fd {e['fd']} with no OPEN or DUP before it")
        made.discard(e["fd"])

# A pipe the (traced) shell made with pipe(2): dd reads it as its stdin,
# head writes it as its stdout; neither opened it.
out = os.path.join(work, "pipe")
rc, _, stderr = tl.record(out, ["sh", "-c", "head -c 300 /dev/zero | "
                                "dd status=none bs=100 count=3 iflag=fullblock of=/dev/null"])
tl.check_eq(rc, 0, f"pipeline exit status (stderr: {stderr.strip()})")
ev = [e for t in tl.read_traces(out).values() for e in t.of("file") if e["result"] > 0]
for what, op, fd in (("dd", "read", 0), ("head", "write", 1)):
    on_pipe = [e for e in ev if e["op"] == op and e.get("path") == "pipe"]
    tl.check_eq(sum(e["result"] for e in on_pipe), 300, f"{what}: bytes of its {op}s on the pipe")
    tl.check_eq({e["fd"] for e in on_pipe}, {fd}, f"{what}: the pipe's descriptor")
tl.check_eq([e for e in ev if not e.get("path")][:3], [], "file events with no path")
# the shell's children exec'd head and dd: their traces keep the shell's
# name (a process keeps its file across exec), and `info` says what they ran
info = json.loads(subprocess.run([tl.PREPLAY, "info", "--json", out], stdout=subprocess.PIPE,
                                 check=True).stdout)
tl.check_eq(sorted(os.path.basename(x) for p in info["process_list"] for x in p["exec"]),
            ["dd", "head"], "info: the images the shell's children exec'd")
tl.finish()
