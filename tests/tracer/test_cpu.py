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
of its CPU events were estimated (gap clock) rather than read.

The run is made with each CPU clock (`record --cpu-clock`): gap (the
default: a span rseq shows had no switch charged as wall time whatever its
length, the thread clock read after every switch; once more with glibc's
rseq switched off: read only after a wall gap over 20 us, shorter gaps
charged as wall time),
bpf (the sched_switch program) and thread (the
clock read at every event), each under the same 5% bound; the CPU events
the gap clock estimated instead of reading carry TRACE_F_CPU_ESTIMATED (the
bpf and thread runs have none). Once more as an unprivileged user asking
for bpf, which the kernel refuses: record says so and the gap clock runs.

And once on the ring clock the machine's default did not use: with the
kernel's clocksource switched away from the TSC (to kvm-clock or hpet,
restored after) the kernel no longer vouches for the TSC, so records are
timed with clock_gettime, `record` says so, and the BPF clock keeps the
same 5% bound on that ring clock; on a kernel booted on kvm-clock (which
offers no tsc clocksource), `record` says so in a plain run and
`--ring-clock tsc` times the records with the TSC, same bound."""
import ctypes
import os

import tracerlib as tl

TRACE_F_CPU_ESTIMATED = 0x10

# The unprivileged pass (the kernel refuses it BPF) runs as this uid/gid
# (nobody/nogroup); setpriv is util-linux's.
UNPRIVILEGED_ID = 65534
ROUNDS = 100  # tt_cpuburn's rounds per thread
GAP_NS = 20000  # TRACER_CPU_GAP_DEFAULT_NS (tracer/shm_layout.h)


CLOCKSOURCE = "/sys/devices/system/clocksource/clocksource0/"


def glibc_rseq():
    """glibc registers rseq for every thread (>= 2.35, unless its tunable
    says no): then the gap clock uses it as its switch detector."""
    try:
        return ctypes.c_uint.in_dll(ctypes.CDLL(None), "__rseq_size").value >= 16
    except (OSError, ValueError):
        return False


NO_RSEQ = {"GLIBC_TUNABLES": "glibc.pthread.rseq=0"}


def measure(label, gap, note=None, extra=(), absent=None, unprivileged=False, env=None):
    """One recording of tt_cpuburn; a list of failure lines (empty: all ok).
    gap: the gap clock runs, so the tracer estimates short gaps
    (docs/cpu-time.md, "The gap clock"); else the clock is read at every
    slice. note: what record must say; absent: what it must not say (both
    mean record runs without -q); extra: more options for record (the CPU
    clock). unprivileged: record as UNPRIVILEGED_ID, whom the kernel
    refuses BPF. env: the app's environment on top of ours (NO_RSEQ: the
    gap clock without its switch detector).
    The gap clock with rseq charges a span with no switch in it as exact,
    so the slice before the last write (a clock_gettime before it) is
    exact unless the thread was switched out there; without rseq it is an
    estimate unless the thread was switched out there."""
    plain_gap = gap and (env == NO_RSEQ or not glibc_rseq())
    work = tl.scratch(f"cpu-{label}")
    out = os.path.join(work, "trace")
    prefix = ()
    if unprivileged:
        os.chmod(work, 0o777)
        prefix = ("setpriv", f"--reuid={UNPRIVILEGED_ID}", f"--regid={UNPRIVILEGED_ID}",
                  "--clear-groups")
    rc, stdout, stderr = tl.record(out, [tl.helper("tt_cpuburn")], timeout=120, prefix=prefix,
                                   quiet=note is None and absent is None, extra=extra,
                                   env=dict(os.environ, **env) if env else None)
    if rc != 0:
        return [f"{label}: tt_cpuburn exit status {rc} (stderr: {stderr.strip()})"]
    if note and note not in stderr:
        return [f"{label}: record did not say '{note}' (stderr: {stderr.strip()})"]
    if absent and absent in stderr:
        return [f"{label}: record said '{absent}' (stderr: {stderr.strip()})"]
    measured = {int(a): int(b) for a, b in (l.split() for l in stdout.splitlines())}
    last_estimated = []  # threads whose slice before the last write is an estimate
    last_exact = []  # ... is not
    if len(measured) != 4:
        return [f"{label}: threads reported: {len(measured)}, want 4"]
    (t,) = tl.read_traces(out).values()
    # the header names the CPU clock that ran when it is not the default
    ran = "" if gap else extra[extra.index("--cpu-clock") + 1]
    options = t.header["record_options"]
    if (f"--cpu-clock {ran}" not in options) if ran else ("--cpu-clock" in options):
        return [f"{label}: record_options {options!r} do not name the CPU clock that ran"]
    misses = []
    for tid, cpu_ns in sorted(measured.items()):
        evs = [e for e in t.events if e["tid"] == tid]
        cpu = [e for e in evs if e["type"] == "cpu"]
        # CPU recorded up to (and including the segment before) the thread's last write
        writes = [i for i, e in enumerate(evs) if e["type"] == "file" and e["op"] == "write"]
        if len(writes) != ROUNDS + 1:
            misses.append(f"{label}: thread {tid}: {ROUNDS + 1} writes traced ({len(writes)})")
            continue
        upto = sum(e["dur"] for e in evs[:writes[-1]] if e["type"] == "cpu")
        total = sum(e["dur"] for e in cpu)
        estimated = [e for e in cpu if e["flags"] & TRACE_F_CPU_ESTIMATED]
        err = abs(upto - cpu_ns) / cpu_ns
        print(f"{label}: thread {tid}: measured {cpu_ns / 1e6:.2f} ms, traced "
              f"{upto / 1e6:.2f} ms ({err * 100:.2f}%), all CPU events {total / 1e6:.2f} ms, "
              f"{len(estimated)} of {len(cpu)} CPU events estimated")
        if cpu_ns <= 50e6:
            misses.append(f"{label}: thread {tid} did no real work: {cpu_ns} ns")
        if err > 0.05:
            misses.append(f"{label}: thread {tid}: traced CPU {upto} ns vs measured {cpu_ns} ns "
                          f"({err * 100:.1f}% off, limit 5%)")
        # The bpf and thread clocks are read, never estimated. The gap clock
        # reads the thread clock when more than 20 us passed since the
        # thread's previous record: the work between the rounds' events is
        # longer, so those slices are read; the last write comes a
        # clock_gettime after the one before it, so the slice before it is
        # the gap clock's estimate and says so.
        # The thread's CPU from its start to its first record (3/4 of a
        # round's work, the EAGAIN read leaves no record) is its first CPU
        # event, which starts where the thread did (THREAD_START is dated
        # at the thread's start, not at its first traced call).
        start = [e for e in evs if e["type"] == "thread_start"]
        if not start or not cpu or abs(cpu[0]["ts"] - start[0]["ts"]) > 1000 \
                or cpu[0]["dur"] < cpu_ns / ROUNDS / 4:
            misses.append(f"{label}: thread {tid}: the CPU before its first record is not "
                          f"its first CPU event from its start: {start[:1]} {cpu[:1]}")
        last_slice = [e for e in evs[:writes[-1]] if e["type"] == "cpu"][-1:]
        if not gap and estimated:
            misses.append(f"{label}: thread {tid}: {len(estimated)} CPU events flagged "
                          "estimated with a clock read at every slice")
        if last_slice and last_slice[0] is evs[writes[-1] - 1]:
            if last_slice[0]["flags"] & TRACE_F_CPU_ESTIMATED:
                last_estimated.append(tid)
            else:
                last_exact.append(tid)
        # an estimate covers no more than the gap clock's threshold of wall time
        long_estimates = [e for e in estimated if e["dur"] > GAP_NS]
        if long_estimates:
            misses.append(f"{label}: thread {tid}: CPU events longer than the gap clock's "
                          f"threshold flagged estimated: {long_estimates[:3]}")
        if gap and len(estimated) > len(cpu) // 2:
            misses.append(f"{label}: thread {tid}: {len(estimated)} of {len(cpu)} CPU events "
                          "estimated; the rounds' long slices must be read")
    # The slice before the last write is short, so the gap clock without
    # rseq estimates it, unless the thread was preempted right there (4
    # threads on 2 cores; more often under ASan): then its clock was read.
    # With rseq it is exact unless the thread was switched out there. One
    # thread of four suffices.
    if plain_gap and not last_estimated:
        misses.append(f"{label}: no thread's CPU slice just before its last write is flagged "
                      "estimated (the gap clock without rseq)")
    if gap and not plain_gap and not last_exact:
        misses.append(f"{label}: every thread's CPU slice just before its last write is "
                      "flagged estimated: the gap clock did not use rseq")
    return misses


NOT_TSC_NOTE = "records are timed with clock_gettime, not the TSC"


def tsc_is_invariant():
    with open("/proc/cpuinfo") as f:
        flags = next((l.split(":", 1)[1].split() for l in f if l.startswith("flags")), [])
    return "constant_tsc" in flags and "nonstop_tsc" in flags


def measure_other_ring_clock():
    """The ring clock the machine's default did not exercise. On a kernel
    that keeps time with the TSC: measure() with the clocksource switched
    to another one (records timed with clock_gettime). On a kernel that
    does not (a VM booted with clocksource=kvm-clock, tsc=unstable, where
    the passes above ran on clock_gettime): measure() with --ring-clock tsc,
    which needs an invariant TSC."""
    with open(CLOCKSOURCE + "current_clocksource") as f:
        current = f.read().strip()
    with open(CLOCKSOURCE + "available_clocksource") as f:
        others = [c for c in f.read().split() if c != "tsc"]
    if current != "tsc":
        if not tsc_is_invariant():
            return [f"the kernel's clocksource is {current} and the TSC is not invariant "
                    "(constant_tsc, nonstop_tsc): the TSC ring clock cannot be tested here"]
        return (measure(f"{current}", gap=True,
                        note=f"the kernel's clocksource is {current}, not tsc")
                + measure("forced-tsc", gap=True, extra=("--ring-clock", "tsc"),
                          absent=NOT_TSC_NOTE))
    if not others:
        return ["no clocksource but tsc on this machine: the clock_gettime ring clock pass "
                "cannot run here"]
    try:
        with open(CLOCKSOURCE + "current_clocksource", "w") as f:
            f.write(others[0])
        return measure(f"{others[0]}", gap=True,
                       note=f"the kernel's clocksource is {others[0]}, not tsc")
    finally:
        with open(CLOCKSOURCE + "current_clocksource", "w") as f:
            f.write(current)


for m in (measure("gap", gap=True)
          + measure("gap-no-rseq", gap=True, env=NO_RSEQ)
          + measure("bpf", gap=False, extra=("--cpu-clock", "bpf"))
          + measure("thread", gap=False, extra=("--cpu-clock", "thread"))
          + measure("unprivileged-bpf", gap=True, extra=("--cpu-clock", "bpf"),
                    note="--cpu-clock bpf is not available", unprivileged=True)
          + measure_other_ring_clock()):
    tl.fail(m)
tl.finish()
