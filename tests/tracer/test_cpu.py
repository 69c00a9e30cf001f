#!/usr/bin/env python3
"""test_cpu.py - 4 busy threads on 2 cores (oversubscribed), known work
between events: the CPU events of each thread must add up to within 5% of
the CLOCK_THREAD_CPUTIME_ID the thread read itself just before its last
traced call."""
import os

import tracerlib as tl

work = tl.scratch("cpu")
out = os.path.join(work, "trace")
rc, stdout, stderr = tl.record(out, [tl.helper("tt_cpuburn")], timeout=120)
tl.check_eq(rc, 0, f"tt_cpuburn exit status (stderr: {stderr.strip()})")
measured = {int(a): int(b) for a, b in (l.split() for l in stdout.splitlines())}
tl.check_eq(len(measured), 4, "threads reported")
(t,) = tl.read_traces(out).values()
for tid, cpu_ns in sorted(measured.items()):
    evs = [e for e in t.events if e["tid"] == tid]
    cpu = [e for e in evs if e["type"] == "cpu"]
    # CPU recorded up to (and including the segment before) the thread's last write
    writes = [i for i, e in enumerate(evs) if e["type"] == "file" and e["op"] == "write"]
    if not tl.check(len(writes) == 101, f"thread {tid}: 101 writes traced ({len(writes)})"):
        continue
    upto = sum(e["dur"] for e in evs[:writes[-1]] if e["type"] == "cpu")
    total = sum(e["dur"] for e in cpu)
    err = abs(upto - cpu_ns) / cpu_ns
    print(f"thread {tid}: measured {cpu_ns / 1e6:.2f} ms, traced {upto / 1e6:.2f} ms "
          f"({err * 100:.2f}%), all CPU events {total / 1e6:.2f} ms")
    tl.check(cpu_ns > 50e6, f"thread {tid} did real work: {cpu_ns} ns")
    tl.check(err <= 0.05, f"thread {tid}: traced CPU {upto} ns vs measured {cpu_ns} ns "
             f"({err * 100:.1f}% off, limit 5%)")
tl.finish()
