#!/usr/bin/env python3
"""test_stdio_fortified.py - buffered stdio as real programs call it.

Debian builds its packages with -O2 -D_FORTIFY_SOURCE=2: printf becomes
__printf_chk, fread __fread_chk, and the inline getc_unlocked/putc_unlocked
reach libc only through __overflow/__uflow; coreutils call the _unlocked
forms and fflush_unlocked; most programs leave stdout for exit() to flush.

1. tt_stdio_fortified (built that way; the test first checks it really
   imports those entry points) writes and reads files through every form:
   the stdio events per file must add up to exactly the bytes it wrote and
   read, at contiguous offsets, including dprintf, fflush(NULL) and the
   flush exit() makes.
2. Real programs nobody here wrote, with stdout redirected to a file:
   mawk (__printf_chk), sort (fread_unlocked, fwrite_unlocked,
   fflush_unlocked) and od (__fread_unlocked_chk, fputs_unlocked): each
   one's recorded writes add up to its output file's size and its reads to
   its input's.
(Programs that read through fscanf and __getdelim, lscpu and lsblk, are
checked against strace in test_strace_oracle.py.)
"""
import os
import subprocess

import tracerlib as tl

TRACE_F_STDIO = 0x4
work = tl.scratch("stdio-fortified")


def transfers(traces, path, op):
    """The events of op ("read"/"write") on the file at path, per pid."""
    ino = os.stat(path).st_ino
    out = {}
    for pid, t in traces.items():
        evs = tl.file_events(t, ino, ("read", "write"))
        evs = [e for e in evs if e["op"] == op]
        if evs:
            out[pid] = evs
    return out


# ---- 1. our fortified program -------------------------------------------
prog = tl.helper("tt_stdio_fortified")
imports = subprocess.run(["nm", "-D", "--undefined-only", prog], stdout=subprocess.PIPE,
                         text=True, check=True).stdout
imported = {l.split()[-1].split("@")[0] for l in imports.splitlines() if l.strip()}
for sym in ("__fprintf_chk", "__vfprintf_chk", "__printf_chk", "__fread_chk", "__fgets_chk",
            "__dprintf_chk", "__overflow", "__uflow", "putc", "fputc", "getc", "fgetc",
            "fwrite_unlocked", "fputs_unlocked", "__fread_unlocked_chk", "fflush_unlocked"):
    tl.check(sym in imported, f"tt_stdio_fortified imports {sym} (built as the test means?)")

out = os.path.join(work, "trace")
rc, stdout, stderr = tl.record(out, [prog, work])
if not tl.check(rc == 0, f"tt_stdio_fortified exit status {rc} (stderr: {stderr.strip()})"):
    tl.finish()
counts = {l.split()[0]: [int(x) for x in l.split()[1:]] for l in stdout.splitlines()}
traces = tl.read_traces(out)
tl.check_eq(len(traces), 1, "traced processes")

c_path = os.path.join(work, "c.txt")
c_written, c_read = counts["c"]
tl.check_eq(os.path.getsize(c_path), c_written, "c.txt: size")
tl.check_eq(c_read, c_written, "c.txt: read back whole")
for name, want_w, want_r in (("c", c_written, c_read), ("e", counts["e"][0], 0),
                             ("f", counts["f"][0], 0)):
    path = os.path.join(work, f"{name}.txt")
    tl.check_eq(os.path.getsize(path), want_w, f"{name}.txt: size")
    writes = sum(transfers(traces, path, "write").values(), [])
    reads = sum(transfers(traces, path, "read").values(), [])
    tl.check(all(e["flags"] & TRACE_F_STDIO for e in writes + reads),
             f"{name}.txt: every transfer flagged stdio")
    tl.check_eq(sum(e["result"] for e in writes), want_w, f"{name}.txt: bytes written")
    tl.check_eq(sum(e["result"] for e in reads), want_r, f"{name}.txt: bytes read")
    tl.check_eq(tl.not_following_on(writes, 0), [], f"{name}.txt: writes not following on")
    tl.check_eq(tl.not_following_on(reads, 0), [], f"{name}.txt: reads not following on")
    if name == "c":
        tl.check(len(writes) >= want_w // 4096, f"c.txt: {len(writes)} writes of a 4 KiB buffer")
        tl.check(len(reads) >= want_r // 4096, f"c.txt: {len(reads)} reads of a 4 KiB buffer")
    if name == "e":
        tl.check_eq(len(writes), 50, "e.txt: one write per dprintf")
    if name == "f":
        # one by fflush(NULL), one by exit(), after the thread's last call
        tl.check_eq([e["result"] for e in writes],
                    [sum(len(f"before fflush(NULL) {i}\n") for i in range(20)),
                     sum(len(f"left for exit {i}\n") for i in range(30))],
                    "f.txt: written by fflush(NULL), then at exit")

# ---- 2. real programs ----------------------------------------------------
src = os.path.join(work, "in.txt")
with open(src, "w") as fh:
    fh.write("".join(f"{(i * 7919) % 30011}\n" for i in range(30000)))
awk_out, sort_out, od_out = (os.path.join(work, n) for n in ("awk.txt", "sort.txt", "od.txt"))
script = (f"mawk 'BEGIN {{ for (i = 0; i < 20000; i++) printf \"%d\\n\", i }}' > {awk_out}; "
          f"sort {src} > {sort_out}; od -An -tx1 -v {src} > {od_out}")
out = os.path.join(work, "trace-real")
rc, _, stderr = tl.record(out, ["/bin/sh", "-c", script])
if not tl.check(rc == 0, f"sh -c '{script}' exit status {rc} (stderr: {stderr.strip()})"):
    tl.finish()
traces = tl.read_traces(out)
for prog_name, path, reads_input in (("mawk", awk_out, False), ("sort", sort_out, True),
                                     ("od", od_out, True)):
    writers = transfers(traces, path, "write")
    if not tl.check(len(writers) == 1, f"{prog_name}: one process writes {path}: {list(writers)}"):
        continue
    (pid, writes), = writers.items()
    tl.check_eq(sum(e["result"] for e in writes), os.path.getsize(path),
                f"{prog_name}: bytes written to its output")
    tl.check_eq(tl.not_following_on(writes, 0), [], f"{prog_name}: writes not following on")
    if reads_input:
        reads = transfers({pid: traces[pid]}, src, "read").get(pid, [])
        tl.check_eq(sum(e["result"] for e in reads), os.path.getsize(src),
                    f"{prog_name}: bytes read from its input")

tl.finish()
