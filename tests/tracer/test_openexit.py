#!/usr/bin/env python3
"""test_openexit.py - an open whose thread never makes another traced call
before the process ends still has its OPEN record in the trace: the
tracer stages the deferred record in shared memory and the collector takes
it from a process that is gone. tt_openexit ends by exit() in another
thread, by SIGKILL, and by _exit in the opening thread; each trace must
hold one OPEN of the file with the descriptor the program got, its path,
flags and no error, and the collector must report nothing corrupt."""
import os

import tracerlib as tl

work = tl.scratch("openexit")
target = os.path.join(work, "input.dat")
with open(target, "wb") as f:
    f.write(b"z" * 4096)

for mode, want_status in (("exit", 0), ("kill", 128 + 9), ("_exit", 0)):
    out = os.path.join(work, "trace-" + mode.lstrip("_") + ("-raw" if mode.startswith("_") else ""))
    rc, stdout, err = tl.record(out, [tl.helper("tt_openexit"), mode, target])
    tl.check_eq(rc, want_status, f"{mode}: record's exit status ({err.strip()[-300:]})")
    tl.check("corrupt" not in err, f"{mode}: no corrupt ring reported ({err.strip()[-300:]})")
    words = stdout.split()
    if not tl.check(len(words) == 2 and words[0] == "fd" and words[1].isdigit(),
                    f"{mode}: the program's output {stdout!r}"):
        continue
    fd = int(words[1])
    (t,) = tl.read_traces(out).values()
    opens = [e for e in t.of("file", "open") if e.get("path") == target]
    if not tl.check(len(opens) == 1, f"{mode}: one OPEN of {target} in the trace (got {len(opens)})"):
        continue
    e = opens[0]
    tl.check_eq((e["fd"], e["result"], e.get("open_flags", 0) & 3), (fd, fd, os.O_RDONLY),
                f"{mode}: its fd, result and access mode")
    tl.check(e["dur"] >= 0 and e["ts"] > 0, f"{mode}: its times ({e['ts']}, {e['dur']})")
    tl.check_eq(len(t.of("loss")), 0, f"{mode}: no loss records")
tl.finish()
