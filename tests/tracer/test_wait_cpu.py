#!/usr/bin/env python3
"""test_wait_cpu.py - a readiness wait's own CPU is none of the app's
(tracer/preload/interpose_wait.c): a server waits for its next request in
poll, select or epoll_wait, and a replayer waits its own way, so what the
kernel spends in the wait must not come back as a burn. tt_waitcpu spends
~40 ms of CPU in waits (costly non-blocking ones, then one blocking 2 ms)
and then ~30 ms in a burn, between two traced writes, for each of poll,
select and epoll_wait. The CPU events between the two writes must hold
the burn (at least 90 % of it) and at most a fifth of the waits' CPU
beyond it (the tracer's own two clock stamps per wait are in it), with
the default CPU clock, the thread clock and (as root) the BPF clock.
Then a wait interrupted by a signal whose handler writes (a record inside
the wait): that record carries the burn before the wait (B1, 2x), so the
record after the wait must carry the burn after it (B2) alone, within
10 % each; carrying B1 again would make it 3x. Before the waits were
wrapped all of it was there (leak 1.0: traced = burn + waits)."""
import os

import tracerlib as tl

MIN_BURN = 0.90  # of the burn, at least
MAX_LEAK = 0.20  # of the waits' CPU, at most
SIGNAL_LIMIT = 0.10  # each burn of the signal case against its record


def measure(label, extra=()):
    work = tl.scratch(f"waitcpu-{label}")
    out = os.path.join(work, "trace")
    rc, stdout, stderr = tl.record(out, [tl.helper("tt_waitcpu"), os.path.join(work, "out.dat")],
                                   timeout=120, extra=extra)
    if rc != 0:
        return [f"{label}: tt_waitcpu exit status {rc} (stderr: {stderr.strip()})"]
    lines = stdout.split("\n")
    try:
        tid = int(lines[0])
        truth = {f[0]: (int(f[1]), int(f[2])) for f in (ln.split() for ln in lines[1:] if ln)}
    except (ValueError, IndexError):
        return [f"{label}: tt_waitcpu printed {stdout!r}"]
    evs = [e for t in tl.read_traces(out).values() for e in t.events if e["tid"] == tid]
    writes = [i for i, e in enumerate(evs) if e["type"] == "file" and e.get("op") == "write"
              and str(e.get("path", "")).endswith("out.dat")]
    if len(writes) != 9 or sorted(truth) != ["epoll", "poll", "select", "signal"]:
        return [f"{label}: {len(writes)} traced writes and cases {sorted(truth)}, want 9 and "
                f"epoll, poll, select, signal"]
    misses = []
    for k, kind in enumerate(("poll", "select", "epoll")):
        a, b = writes[2 * k], writes[2 * k + 1]
        traced = sum(e["dur"] for e in evs[a + 1:b + 1] if e["type"] == "cpu")
        wait_ns, burn_ns = truth[kind]
        leak = (traced - burn_ns) / wait_ns
        print(f"{label} {kind}: waits {wait_ns / 1e6:.2f} ms, burn {burn_ns / 1e6:.2f} ms, "
              f"traced {traced / 1e6:.2f} ms (leak {leak:+.3f} of the waits)")
        if wait_ns < 20e6 or burn_ns < 10e6:
            misses.append(f"{label} {kind}: waits {wait_ns} ns and burn {burn_ns} ns: too little "
                          f"to tell them apart")
        if traced < MIN_BURN * burn_ns:
            misses.append(f"{label} {kind}: the CPU events between the writes add up to {traced} "
                          f"ns, less than {MIN_BURN:.0%} of the burn ({burn_ns} ns)")
        if leak > MAX_LEAK:
            misses.append(f"{label} {kind}: the CPU events between the writes add up to {traced} "
                          f"ns, the burn was {burn_ns} ns: {leak:.2f} of the waits' {wait_ns} ns "
                          f"came in (at most {MAX_LEAK})")
    # the signal case: writes a, h (the handler's, inside the wait), b
    a, h, b = writes[6:9]
    b1_ns, b2_ns = truth["signal"]
    for name, lo, hi, want in (("before the wait", a, h, b1_ns), ("after it", h, b, b2_ns)):
        traced = sum(e["dur"] for e in evs[lo + 1:hi + 1] if e["type"] == "cpu")
        err = (traced - want) / want
        print(f"{label} signal: {name}: burn {want / 1e6:.2f} ms, traced {traced / 1e6:.2f} ms "
              f"({err * 100:+.1f}%)")
        if abs(err) > SIGNAL_LIMIT:
            misses.append(f"{label} signal: the CPU events {name} add up to {traced} ns, the burn "
                          f"was {want} ns ({err * 100:+.1f}%, limit {SIGNAL_LIMIT:.0%}): the "
                          f"handler's record took the CPU before the wait, which the wait must "
                          f"not carry again")
    return misses


misses = measure("gap") + measure("thread", ("--cpu-clock", "thread"))
if os.geteuid() == 0:  # the BPF clock loads for root only
    misses += measure("bpf", ("--cpu-clock", "bpf"))
for m in misses:
    tl.fail(m)
tl.finish()
