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
so some or all of those may have their second write traced.)

The rings are 1 GiB of address space. Under an RLIMIT_AS of 600 MB
(prlimit) the process maps a prefix of 256 rings instead: 255 of 300
threads are traced through the barrier, the rest counted lost, and record
says so; under 25 MB not even 16 rings fit (`cat` runs untraced) and
record says that."""
import json
import os
import subprocess

import tracerlib as tl

RINGS = 1024  # thread rings per process: TRACER_RING_COUNT - 1 (tracer/shm_layout.h)


def run(n, rings=RINGS, as_limit=None):
    work = tl.scratch(f"threads-{n}")
    out = os.path.join(work, "trace")
    target = os.path.join(work, "words")
    limit = ["prlimit", f"--as={as_limit}"] if as_limit else []
    rc, stdout, stderr = tl.record(out, limit + [tl.helper("tt_threads"), str(n), target],
                                   timeout=90, quiet=not as_limit)
    if as_limit:
        tl.check("had room for fewer trace buffers (RLIMIT_AS)" in stderr,
                 f"{n} threads under RLIMIT_AS: record says so (stderr: {stderr.strip()[-300:]})")
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
    if as_limit:  # prlimit's image, then tt_threads': only the latter's events count
        execs = [e for e in trace.events if e["type"] == "control" and e.get("op") == "exec"]
        tl.check(execs, f"{n} threads under RLIMIT_AS: the exec of tt_threads")
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
    if n + 1 <= rings:
        tl.check_eq(len(whole), n, f"{n} threads: threads with both writes traced")
        tl.check_eq(lost, 0, f"{n} threads: events counted lost")
    else:
        tl.check_eq(len(whole), rings - 1,
                    f"{n} threads: threads traced through the barrier (main holds a ring)")
        # Each thread that found no ring at the barrier lost at least its first
        # write; its second may be traced on a ring freed by a thread that ended.
        tl.check(missing >= n - (rings - 1),
                 f"{n} threads: {missing} writes lacking, at least one per thread without a ring")
    print(f"{n} threads: {len(whole)} whole, {len(second_only)} second write only, {lost} lost")
    tl.check_eq(lost, missing, f"{n} threads: writes counted lost = writes the trace lacks")
    info = subprocess.run([tl.PREPLAY, "info", "--json", out], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE)
    if tl.check(info.returncode == 0, f"{n} threads: preplay info: {info.stderr.decode()[-300:]}"):
        tl.check_eq(json.loads(info.stdout)["lost_events"], lost, f"{n} threads: info's lost_events")


run(1000)
run(1100)
run(300, rings=256, as_limit=600 * 1024 * 1024)
work = tl.scratch("threads-untraced")
rc, stdout, stderr = tl.record(os.path.join(work, "trace"),
                               ["prlimit", f"--as={25 * 1024 * 1024}", "/bin/cat", "/etc/hostname"])
tl.check_eq(rc, 0, f"cat under a 25 MB RLIMIT_AS: exit status (stderr: {stderr.strip()[-300:]})")
tl.check("could not map their trace buffers" in stderr and "ran untraced" in stderr,
         f"cat under a 25 MB RLIMIT_AS: record says it ran untraced (stderr: {stderr.strip()[-300:]})")
tl.finish()
