#!/usr/bin/env python3
"""test_cpu.py - 4 busy threads on 2 cores (oversubscribed), known work
between events: the CPU events of each thread must add up to within 5% of
the CLOCK_THREAD_CPUTIME_ID the thread read itself just before its last
traced call. Each round also has a call that writes no record (EAGAIN),
a 2 ms sleep every tenth round and a mutex of the thread's own
(tt_cpuburn.c): CPU time before an unrecorded call must reach the next
record, off-CPU time must not.

Issue 2 (one or two threads 5-11% high about one run in ten to twenty on
a loaded machine): a read of the BPF clock answered from a timestamp taken
before a preemption as if the thread had run through it, so a CPU event
carried the off-CPU time; fixed in tracer/cpuclock (docs/cpu-time.md,
"Issue 2", deterministic tests in tests/cpuclock). With 8 busy threads on 2
cores under load: 5 of 60 runs missed before, 0 of 60 after, so the run is
no longer repeated. A failing run prints each thread's numbers and how many
of its CPU events were estimated (fallback clock) rather than exact."""
import os

import tracerlib as tl

TRACE_F_CPU_ESTIMATED = 0x10


def measure(attempt):
    """One recording of tt_cpuburn; a list of failure lines (empty: all ok)."""
    work = tl.scratch(f"cpu{attempt}")
    out = os.path.join(work, "trace")
    rc, stdout, stderr = tl.record(out, [tl.helper("tt_cpuburn")], timeout=120)
    if rc != 0:
        return [f"tt_cpuburn exit status {rc} (stderr: {stderr.strip()})"]
    measured = {int(a): int(b) for a, b in (l.split() for l in stdout.splitlines())}
    if len(measured) != 4:
        return [f"threads reported: {len(measured)}, want 4"]
    (t,) = tl.read_traces(out).values()
    misses = []
    for tid, cpu_ns in sorted(measured.items()):
        evs = [e for e in t.events if e["tid"] == tid]
        cpu = [e for e in evs if e["type"] == "cpu"]
        # CPU recorded up to (and including the segment before) the thread's last write
        writes = [i for i, e in enumerate(evs) if e["type"] == "file" and e["op"] == "write"]
        if len(writes) != 101:
            misses.append(f"thread {tid}: 101 writes traced ({len(writes)})")
            continue
        upto = sum(e["dur"] for e in evs[:writes[-1]] if e["type"] == "cpu")
        total = sum(e["dur"] for e in cpu)
        estimated = sum(1 for e in cpu if e["flags"] & TRACE_F_CPU_ESTIMATED)
        err = abs(upto - cpu_ns) / cpu_ns
        print(f"run {attempt}: thread {tid}: measured {cpu_ns / 1e6:.2f} ms, traced "
              f"{upto / 1e6:.2f} ms ({err * 100:.2f}%), all CPU events {total / 1e6:.2f} ms, "
              f"{estimated} of {len(cpu)} CPU events estimated")
        if cpu_ns <= 50e6:
            misses.append(f"thread {tid} did no real work: {cpu_ns} ns")
        if err > 0.05:
            misses.append(f"thread {tid}: traced CPU {upto} ns vs measured {cpu_ns} ns "
                          f"({err * 100:.1f}% off, limit 5%)")
    return misses


for m in measure(1):
    tl.fail(m)
tl.finish()
