#!/usr/bin/env python3
"""test_cpu_ping.py - the CPU a request handler records when it alternates
CPU work with short blocking round trips and sleeps in calls the tracer
does not wrap (mysqlnd's and apache's polls were such calls until the
tracer wrapped the readiness waits: interpose_wait.c; a nanosleep still
is): tt_cpuping's forked worker makes ROUNDS rounds of TRIPS one-byte
loopback round trips, a 1 ms untraced nanosleep and a burn, and measures
the CPU time of each sleep + burn itself (CLOCK_THREAD_CPUTIME_ID).
The CPU events of that thread must add up to within 10% of it with every
CPU clock that reads the thread's clock after a switch: gap with rseq (the
default), bpf (when it loads: root) and thread; and the gap clock's error
must be within 5 points of the thread clock's, measured in the same run
(thread reads the exact clock at every event: the baseline).

Why a same-run baseline: the CPU events also hold the tracer's own work
between two traced calls, charged to the thread as its CPU, so every
clock comes out a little high, and by how much depends on how fast the
machine is that minute. When this test was written: gap +2.6..+3.0%,
thread +2.9..+3.0%, bpf -1.6..-2.6%; on 28 Nov 2026, a slower day of the
same VM: gap +5.2..+7.1%, thread +4.3..+4.7%, bpf +1.9..+3.3% (6 runs;
stop 34's build alike, 3 runs), so a fixed 5% bound failed every run
while the gap clock was as right as the thread clock (within 0.9..2.1
points of it; up to 2.7 in 9 runs after).

The gap clock's bug (docs/cpu-time.md, "Short switched calls"): a round
trip that blocks and ends within T (20 us) of the previous record was
estimated as if the thread had run through it; no record carries an
event's own time, so the estimate's off-CPU part stayed in the clock the
records imply, and the next exact read (after the untraced sleep's switch)
took it from the records as an overcharge (the mechanism found for
WordPress recording 14-17% less CPU per request with gap than with bpf on
a quiet machine). This program, before the fix: gap -8.1..-9.7% against
thread +2.9..+3.0% and bpf -1.6..-2.6% (gap 11-13 points below thread:
the same-run check fails it); after: gap +2.6..+3.0%. Without rseq the
gap clock still estimates and still loses (-9%): not run here."""
import os

import tracerlib as tl

ARGS = ["300", "4", "200000", "-1", "0", "0", "1"]  # rounds trips work cpu hog wait nap
LIMIT = 0.10  # each clock against the worker's own measurement
GAP_VS_THREAD = 0.05  # the gap clock's error against the thread clock's


def bpf_loads():
    return os.geteuid() == 0


def measure(label, extra=()):
    work = tl.scratch(f"cpuping-{label}")
    out = os.path.join(work, "trace")
    rc, stdout, stderr = tl.record(out, [tl.helper("tt_cpuping")] + ARGS, timeout=120,
                                   extra=extra)
    if rc != 0:
        return None, [f"{label}: tt_cpuping exit status {rc} (stderr: {stderr.strip()})"]
    try:
        tid, truth = (int(v) for v in stdout.split())
    except ValueError:
        return None, [f"{label}: tt_cpuping printed {stdout!r}, want 'tid cpu_ns'"]
    evs = [e for t in tl.read_traces(out).values() for e in t.events if e["tid"] == tid]
    cpu = [e for e in evs if e["type"] == "cpu"]
    closes = [i for i, e in enumerate(evs) if e["type"] == "conn" or e.get("op") == "close"]
    traced = sum(e["dur"] for e in cpu)
    err = (traced - truth) / truth
    print(f"{label}: measured {truth / 1e6:.2f} ms, traced {traced / 1e6:.2f} ms "
          f"({err * 100:+.1f}%) in {len(cpu)} CPU events")
    if not closes:
        return None, [f"{label}: the worker's last call (close) is not in the trace"]
    if truth < 30e6:
        return None, [f"{label}: the worker did no real work: {truth} ns"]
    if abs(err) > LIMIT:
        return err, [f"{label}: traced CPU {traced} ns vs measured {truth} ns "
                     f"({err * 100:+.1f}%, limit {LIMIT * 100:.0f}%)"]
    return err, []


gap, misses = measure("gap")
thread, more = measure("thread", ("--cpu-clock", "thread"))
misses += more
if gap is not None and thread is not None:
    print(f"gap - thread: {(gap - thread) * 100:+.1f} points")
    if abs(gap - thread) > GAP_VS_THREAD:
        misses.append(f"gap: {gap * 100:+.1f}% against thread's {thread * 100:+.1f}% in the same run "
                      f"(at most {GAP_VS_THREAD * 100:.0f} points apart)")
if bpf_loads():
    misses += measure("bpf", ("--cpu-clock", "bpf"))[1]
for m in misses:
    tl.fail(m)
tl.finish()
