#!/usr/bin/env python3
"""test_python_locks.py - a real program's locks that are POSIX semaphores.

CPython's threading.Lock is a semaphore initialised to 1 (sem_trywait,
sem_wait, sem_clockwait, sem_post), not a pthread mutex, so a Python
server's lock contention is in the trace only through the semaphore
wrappers. Debian's /usr/bin/python3 runs a thread that holds a Lock for
200 ms while the main thread first gives up after a 20 ms timeout, then
waits for it (the Event saying it is held is semaphores too, other ones). The trace must show, on that one lock: the holder's
acquire (CPython tries first, so a TRY that succeeded) and release; the
main thread's failed tries, its timed wait that timed out after >= 20 ms,
and its wait that ended after the holder's release.
"""
import os

import tracerlib as tl

TRY, ACQ, TIMED, REL = "try", "acquire", "timed", "release"
SEMAPHORE = 6
EAGAIN, ETIMEDOUT = 11, 110
MS = 1000000
CLOCK_SLACK = 1000

SCRIPT = """
import threading, time
lock = threading.Lock()
held = threading.Event()
def holder():
    with lock:
        held.set()
        time.sleep(0.2)
t = threading.Thread(target=holder)
t.start()
held.wait()
assert not lock.acquire(timeout=0.02)
lock.acquire()
lock.release()
t.join()
print("ok")
"""

PYTHON = "/usr/bin/python3"  # Debian's, a program nobody here built
if not tl.check(os.access(PYTHON, os.X_OK), f"{PYTHON} is not installed (tools/check installs it)"):
    tl.finish()
work = tl.scratch("python-locks")
out = os.path.join(work, "trace")
rc, stdout, stderr = tl.record(out, [PYTHON, "-c", SCRIPT])
if not tl.check(rc == 0 and stdout.strip() == "ok",
                f"python3 exit status {rc}, stdout {stdout!r} (stderr: {stderr.strip()[-500:]})"):
    tl.finish()
traces = tl.read_traces(out, skip_types=("cpu", "file"))
tl.check_eq(len(traces), 1, "traced processes")
(t,) = traces.values()
main = t.pid
sems = [e for e in t.of("lock") if e["kind"] == SEMAPHORE]
timeouts = [e for e in sems if e["tid"] == main and e["op"] == TIMED and e["result"] == ETIMEDOUT]
if not tl.check(len(timeouts) == 1, f"one timed-out semaphore wait in the main thread: {timeouts}"):
    tl.finish()
tl.check(timeouts[0]["dur"] >= 19 * MS, f"the timeout waited >= 20 ms: {timeouts[0]['dur'] / MS} ms")
# the sem_t's address is the lock id, and CPython's allocator hands a freed
# Lock's memory to the next: the Lock is this id from the holder's first use
lock = [e for e in sems if e["lock_id"] == timeouts[0]["lock_id"]]
theirs = [e for e in lock if e["tid"] != main]
start = theirs[0]["ts"] if theirs else 0
mine = [e for e in lock if e["tid"] == main and e["ts"] >= start]
tl.check_eq([(e["op"], e["result"]) for e in mine],
            [(TRY, EAGAIN), (TIMED, ETIMEDOUT), (TRY, EAGAIN), (ACQ, 0), (REL, 0)],
            "the main thread on the Lock")
tl.check_eq([(e["op"], e["result"]) for e in theirs], [(TRY, 0), (REL, 0)], "the holder on the Lock")
if len(mine) == 5 and len(theirs) == 2:
    wait, release = mine[3], theirs[1]
    tl.check(wait["dur"] >= 100 * MS, f"the main thread waited for the holder: {wait['dur'] / MS} ms")
    tl.check(release["ts"] <= wait["ts"] + wait["dur"] + CLOCK_SLACK,
             "the main thread's wait ended after the holder's release")
tl.finish()
