#!/usr/bin/env python3
"""test_passthrough.py - `preplay record` as a wrapper: the app's stdin,
stdout and stderr pass through byte for byte, its exit status becomes
preplay's, SIGTERM sent to preplay reaches the app (default action: 143;
an app that catches it exits with its own status), and a trace is
complete in every case."""
import os
import signal
import subprocess
import time

import tracerlib as tl

work = tl.scratch("passthrough")
payload = bytes(range(256)) * 400  # 100 KiB, every byte value
rc, out, err = None, None, None
p = tl.spawn(tl.record_args(os.path.join(work, "cat"), ["cat"]), stdin=subprocess.PIPE,
             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
o, e = p.communicate(payload, timeout=30)
tl.check_eq(p.returncode, 0, "cat's exit status")
tl.check(o == payload, f"stdout of cat equals its stdin ({len(o)} of {len(payload)} bytes)")
(t,) = tl.read_traces(os.path.join(work, "cat")).values()
tl.check_eq(sum(x["result"] for x in t.of("file", "read") if x["fd"] == 0 and x["result"] > 0),
            len(payload), "bytes cat read from stdin in the trace")
tl.check_eq(sum(x["result"] for x in t.of("file", "write") if x["fd"] == 1), len(payload),
            "bytes cat wrote to stdout in the trace")

rc, out, err = tl.record(os.path.join(work, "status"),
                         ["sh", "-c", "echo to-out; echo to-err >&2; exit 7"])
tl.check_eq(rc, 7, "exit status passed through")
tl.check_eq(out, "to-out\n", "stdout passed through")
tl.check_eq(err, "to-err\n", "stderr passed through")


def term_test(name, cmd, want):
    d = os.path.join(work, name)
    p = tl.spawn(tl.record_args(d, cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 20
    # wait until the app runs (its trace file appears) before signalling preplay
    while time.monotonic() < deadline and not (os.path.isdir(d) and any(
            n.endswith(".trace") for n in os.listdir(d))):
        time.sleep(0.05)
    time.sleep(0.3)
    p.send_signal(signal.SIGTERM)
    try:
        o, e = p.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        tl.fail(f"{name}: preplay record did not end after SIGTERM")
        return None
    tl.check_eq(p.returncode, want, f"{name}: exit status after SIGTERM to preplay")
    traces = tl.read_traces(d)
    tl.check(len(traces) >= 1, f"{name}: trace written")
    return o.decode()


term_test("sleep", ["sleep", "30"], 128 + signal.SIGTERM)
o = term_test("trap", ["sh", "-c", "trap 'kill $!; echo got-term; exit 3' TERM; sleep 30 & wait"], 3)
tl.check_eq(o, "got-term\n", "the app's own handler ran")
tl.finish()
