#!/usr/bin/env python3
"""test_threads.py - how many threads of one process the tracer takes at
once (tt_threads.c: N threads alive together, each writing 8 bytes before
and after a barrier that all of them and the main thread wait on).

1000 threads (the limit was 256): each has its THREAD_START and both
writes, nothing is lost. 1100 threads: the main thread and 1023 of them
hold the 1024 thread rings through the barrier and are traced whole; the
others run untraced, and every write of theirs that the trace lacks is
counted in a LOSS event of the process (reason no_ring), never silently
missing. (After the barrier, rings of threads that ended are free again,
so some of those may have their second write traced.)"""
import json
import os
import subprocess

import tracerlib as tl

RINGS = 1024  # thread rings per process: TRACER_RING_COUNT - 1 (tracer/shm_layout.h)


def run(n):
    work = tl.scratch(f"threads-{n}")
    out = os.path.join(work, "trace")
    target = os.path.join(work, "words")
    rc, stdout, stderr = tl.record(out, [tl.helper("tt_threads"), str(n), target], timeout=90)
    tl.check_eq(rc, 0, f"{n} threads: exit status of tt_threads (stderr: {stderr.strip()[-300:]})")
    if rc != 0:
        return
    tids = json.loads(stdout.strip().splitlines()[-1])["tids"]
    tl.check_eq(len(set(tids)), n, f"{n} threads: distinct tids")
    traces = tl.read_traces(out)
    tl.check_eq(len(traces), 1, f"{n} threads: trace files")
    if len(traces) != 1:
        return
    trace = list(traces.values())[0]
    ino = os.stat(target).st_ino
    writes = {}
    for e in tl.file_events(trace, ino, ["write"]):
        writes[e["tid"]] = writes.get(e["tid"], 0) + 1
        tl.check_eq(e["result"], 8, f"{n} threads: bytes of a write")
    tl.check_eq(sorted(set(writes) - set(tids)), [], f"{n} threads: writes of unknown threads")
    whole = [t for t in tids if writes.get(t) == 2]
    second_only = [t for t in tids if writes.get(t) == 1]
    started = {e["tid"] for e in trace.of("thread_start")}
    tl.check_eq(sorted(t for t in writes if t not in started), [],
                f"{n} threads: traced threads without THREAD_START")
    losses = trace.of("loss")
    for e in losses:
        tl.check_eq((e["reason"], e["tid"]), (5, 0), f"{n} threads: LOSS reason and tid ({e})")
    lost = sum(e["count"] for e in losses)
    missing = 2 * n - sum(writes.values())
    if n + 1 <= RINGS:
        tl.check_eq(len(whole), n, f"{n} threads: threads with both writes traced")
        tl.check_eq(lost, 0, f"{n} threads: events counted lost")
    else:
        tl.check_eq(len(whole), RINGS - 1,
                    f"{n} threads: threads traced through the barrier (main holds a ring)")
        tl.check(len(whole) + len(second_only) < n, f"{n} threads: some threads untraced")
    print(f"{n} threads: {len(whole)} whole, {len(second_only)} second write only, {lost} lost")
    tl.check_eq(lost, missing, f"{n} threads: writes counted lost = writes the trace lacks")
    info = subprocess.run([tl.PREPLAY, "info", "--json", out], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE)
    if tl.check(info.returncode == 0, f"{n} threads: preplay info: {info.stderr.decode()[-300:]}"):
        tl.check_eq(json.loads(info.stdout)["lost_events"], lost, f"{n} threads: info's lost_events")


run(1000)
run(1100)
tl.finish()
