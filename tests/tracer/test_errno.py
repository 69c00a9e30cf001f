#!/usr/bin/env python3
"""test_errno.py - tt_errno's failing calls (open of a missing file, read on
a bad fd, connect to a closed port, lock misuse, exec of a missing file...)
print the same return values and errno with and without the tracer, and
the traced run's trace holds those failures with the error flag and the
same -errno."""
import os
import subprocess

import tracerlib as tl

work = tl.scratch("errno")
plain_dir = os.path.join(work, "plain")
traced_dir = os.path.join(work, "traced")
os.mkdir(plain_dir)
os.mkdir(traced_dir)
plain = subprocess.run([tl.helper("tt_errno"), plain_dir], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=30)
tl.check_eq(plain.returncode, 0, "tt_errno without the tracer")
rc, out, err = tl.record(os.path.join(work, "trace"), [tl.helper("tt_errno"), traced_dir])
tl.check_eq(rc, 0, f"tt_errno under preplay record (stderr: {err.strip()})")
want = plain.stdout.decode().splitlines()
got = out.splitlines()
tl.check(len(want) >= 45, f"tt_errno printed {len(want)} results")
tl.check_eq(len(got), len(want), "result lines")
for w, g in zip(want, got):
    tl.check_eq(g, w, "result with the tracer")
(trace,) = tl.read_traces(os.path.join(work, "trace")).values()
errors = [e for e in trace.events if e["flags"] & 1]
missing = [e for e in trace.of("file", "open") if e.get("path", "").endswith("no/such/file")]
tl.check(len(missing) == 2 and all(e["result"] == -2 and e["flags"] & 1 for e in missing),
         f"open and creat of the missing file recorded as -ENOENT: {missing}")
bad_reads = [e for e in trace.of("file", "read") if e["fd"] in (9999, -1)]
tl.check_eq(sorted(e["result"] for e in bad_reads), [-9, -9], "reads on bad fds recorded as -EBADF")
tl.check(len(errors) >= 10, f"failed calls flagged as errors in the trace: {len(errors)}")
tl.finish()
