#!/usr/bin/env python3
"""test_collect.py - `preplay collect`, the standalone collector, with
programs started apart from it the way a service manager starts them
(LD_PRELOAD + PREPLAY_COLLECTOR + PREPLAY_COMPONENT in their environment):
coreutils' dd, twice, each traced into its own 0600 file named after the
component, its writes at the offsets and sizes dd's arguments imply; a
program whose collector name nobody listens on runs normally, untraced;
with the collector stopped (SIGSTOP) a new program does not wait for it
longer than the tracer's patience (5 s) and runs untraced, and the
collector says so when it ends (SIGINT, exit 0)."""
import os
import signal
import stat
import subprocess
import time

import tracerlib as tl

PATIENCE_S = 5  # TRACER_COLLECTOR_PATIENCE_MS (tracer/shm_layout.h)
name = f"test-collect-{os.getpid()}"
lib = os.path.join(tl.BUILD, "libpreplay_trace.so")
work = tl.scratch("collect")
out = os.path.join(work, "traces")
col = tl.spawn([tl.PREPLAY, "collect", "-q", "--no-cpu-scores", "-o", out, "--name", name],
               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
deadline = time.monotonic() + 20
listening = False
while time.monotonic() < deadline and not listening and col.poll() is None:
    with open("/proc/net/unix") as f:
        listening = any(line.rstrip().endswith(f"@preplay-{name}") for line in f)
    time.sleep(0.05)
if not tl.check(listening, f"preplay collect listens as @preplay-{name}"):
    tl.finish()
env = dict(os.environ, LD_PRELOAD=lib, PREPLAY_COLLECTOR=name, PREPLAY_COMPONENT="batch")


def dd(target, blocks, environ, timeout=60):
    try:
        r = subprocess.run(["dd", "if=/dev/zero", f"of={target}", "bs=1024", f"count={blocks}",
                            "status=none"], env=environ, stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired:
        tl.fail(f"dd of={target} did not end within {timeout} s")
        return
    tl.check_eq(r.returncode, 0, f"dd of={target}: exit status (stderr: {r.stderr.decode()})")
    tl.check_eq(os.path.getsize(target), 1024 * blocks, f"{target}: size")


targets = {os.path.join(work, f"out{i}.dat"): 30 + i for i in range(2)}
for target, blocks in targets.items():
    dd(target, blocks, env)
absent = os.path.join(work, "absent.dat")
dd(absent, 5, dict(env, PREPLAY_COLLECTOR=name + "-nobody"))

col.send_signal(signal.SIGSTOP)
stopped = os.path.join(work, "stopped.dat")
t0 = time.monotonic()
dd(stopped, 5, env, timeout=PATIENCE_S + 10)
waited = time.monotonic() - t0
col.send_signal(signal.SIGCONT)
print(f"dd with the collector stopped ran in {waited:.1f} s")
tl.check(waited < PATIENCE_S + 5, f"dd with the collector stopped took {waited:.1f} s")

time.sleep(0.5)  # the collector takes the late registration and finds its sender gone
col.send_signal(signal.SIGINT)
err = tl.wait_end(col, "preplay collect after SIGINT")[1].decode()
tl.check_eq(col.returncode, 0, f"preplay collect's exit status (stderr: {err.strip()})")
tl.check("1 process(es) ran untraced" in err, f"collect reports the untraced process: {err!r}")
tl.check("could not map" not in err, f"... once, not also as a process that could not map: {err!r}")

traces = tl.read_traces(out)
with_events = {pid: t for pid, t in traces.items() if t.events}
tl.check_eq(len(traces), 3, "trace files (two dd runs, one that gave up waiting)")
tl.check_eq(len(with_events), 2, "traces with events")
counters = [p for p in os.listdir(out) if p.endswith(".counters")]
tl.check_eq(counters, [f"machine-{col.pid}.counters"], "the collector's counter windows")
for path in os.listdir(out):
    mode = stat.S_IMODE(os.stat(os.path.join(out, path)).st_mode)
    tl.check_eq(oct(mode), oct(0o600), f"{path}: mode")
    tl.check(path.startswith("batch-") or path in counters, f"{path}: named after the component")
seen = set()
for pid, t in with_events.items():
    tl.check_eq((t.header["component"], os.path.basename(t.header["exe"])), ("batch", "dd"),
                f"pid {pid}: component and executable")
    opened = [e for e in t.of("file", "open") if e.get("path") in targets]
    if not tl.check(len(opened) == 1, f"pid {pid}: one open of an output file"):
        continue
    target = opened[0]["path"]
    seen.add(target)
    writes = tl.file_events(t, opened[0]["ino"], {"write"})
    tl.check_eq([(e["offset"], e["result"]) for e in writes],
                [(1024 * i, 1024) for i in range(targets[target])], f"{target}: writes")
    tl.check(not [e for e in t.of("file", "open") if e.get("path") in (absent, stopped)],
             f"pid {pid}: no untraced run's file in this trace")
tl.check_eq(sorted(seen), sorted(targets), "output files traced")
tl.finish()
