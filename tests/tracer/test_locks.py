#!/usr/bin/env python3
"""test_locks.py - lock events of tt_locks: every acquire has its release
per thread and lock, lock ids are the mutex addresses (and one id per file
range for file locks), holders of the contended mutex never overlap, and
every contended wait shows the time waited (the holder slept HOLD_MS); an
unlock an error-checking mutex refuses is recorded as a failed release
(the tracer records most releases before the call: not that one)."""
import json
import os

import tracerlib as tl

ACQ, TRY, TIMED, REL = "acquire", "try", "timed", "release"
MUTEX, RWLOCK, FLOCK, FCNTL, OFD, SEMAPHORE = 1, 2, 3, 4, 5, 6
EXCL, SHARED = 1, 2
EPERM, EBUSY, EAGAIN, ETIMEDOUT = 1, 16, 11, 110
MS = 1000000

work = tl.scratch("locks")
out = os.path.join(work, "trace")
rc, stdout, stderr = tl.record(out, [tl.helper("tt_locks"), os.path.join(work, "lockfile")],
                               timeout=90)
tl.check_eq(rc, 0, f"tt_locks exit status (stderr: {stderr.strip()})")
info = json.loads(stdout.strip().splitlines()[-1])
hold = info["hold_ms"] * MS
traces = tl.read_traces(out)
tl.check_eq(len(traces), 2, "trace files (tt_locks and its forked child)")
main = [t for t in traces.values() if t.pid != info["child"]][0]
child = traces.get(info["child"])
tl.check(child is not None and child.ppid == main.pid, "child trace with the parent as ppid")
locks = main.of("lock")
mtid = main.pid


def pairing(trace, what):
    """Acquires (successful) and releases alternate per thread and lock
    (semaphores, which any thread may post, are checked on their own)."""
    held = {}
    for e in trace.of("lock"):
        if e["kind"] == SEMAPHORE:
            continue
        key = (e["tid"], e["kind"], e["lock_id"])
        if e["op"] in (ACQ, TRY, TIMED):
            if e["result"] == 0:
                held[key] = held.get(key, 0) + 1
        elif e["op"] == REL and e["result"] == 0:  # a refused release releases nothing
            held[key] = held.get(key, 0) - 1
            tl.check(held[key] >= 0, f"{what}: release without acquire: {e}")
    for key, n in held.items():
        tl.check_eq(n, 0, f"{what}: locks still held at the end (tid, kind, id) {key}")


pairing(main, "tt_locks")
if child:
    pairing(child, "tt_locks child")

# the contended mutex: exact counts, never two holders at once
on_m = [e for e in locks if e["lock_id"] == info["m"]]
tl.check(all(e["kind"] == MUTEX for e in on_m), "events on m are mutex events")
n_acq = 2 + info["pounders"] * info["iters"]
tl.check_eq(len([e for e in on_m if e["op"] == ACQ]), n_acq, "acquires of m")
tl.check_eq(len([e for e in on_m if e["op"] == REL]), n_acq, "releases of m")
tl.check_eq([(e["tid"], e["result"]) for e in on_m if e["op"] == TRY], [(mtid, EBUSY)],
            "trylock of the held m (EBUSY)")
intervals = []
open_at = {}
for e in on_m:
    if e["op"] == ACQ:
        open_at[e["tid"]] = e["ts"] + e["dur"]
    elif e["op"] == REL and e["tid"] in open_at:
        intervals.append((open_at.pop(e["tid"]), e["ts"], e["tid"]))
intervals.sort()
# Timestamps come from different CPUs: they agree to well under a
# microsecond, not to the nanosecond, so a hold may seem to start a few ns
# before the previous one ended. A real overlap (two holders) lasts at
# least the holder's critical section plus a lock operation.
CLOCK_SLACK = 1000
# A thread's first recorded hold of m may be the one it held, folded,
# when m became recorded: its acquire read no clock and is dated at the
# thread's previous record, at or before the real acquire (docs/tracer.md,
# "folded"), so it may start early and so contain holds of others that
# ended before its real start. Such a hold may contain others whole; its
# end and every other hold are judged as before. (CI, ASan, once in ~10
# runs: a 1.3 us first hold containing another thread's 20 ns hold.)
first_hold = {}
for start, end, tid in sorted(intervals, key=lambda i: i[1]):
    first_hold.setdefault(tid, (start, end, tid))
overlaps = []
widest = None  # the hold ending last so far
for b in intervals:
    if widest and b[0] + CLOCK_SLACK < widest[1]:
        inside_early_start = first_hold.get(widest[2]) == widest and b[1] <= widest[1]
        if not inside_early_start:
            overlaps.append((widest, b))
    if not widest or b[1] > widest[1]:
        widest = b
tl.check_eq(len(overlaps), 0, "overlapping holds of m (first ones: %s)" % overlaps[:3])
tl.check(len(intervals) == n_acq, f"holds of m paired: {len(intervals)} of {n_acq}")
main_m = [e for e in on_m if e["tid"] == mtid and e["op"] == ACQ]
tl.check(main_m and main_m[0]["dur"] >= hold // 2,
         f"main's contended wait on m >= {hold // 2 // MS} ms: {main_m[:1]}")
tl.check(len({e["tid"] for e in on_m}) == 2 + info["pounders"], "threads that used m")

# timedlock: one timeout (>= 10 ms waited), then success after the holder let go
timed = [e for e in locks if e["lock_id"] == info["tm"] and e["op"] == TIMED and e["tid"] == mtid]
tl.check_eq([e["result"] for e in timed], [ETIMEDOUT, 0], "timedlock results")
if len(timed) == 2:
    tl.check(timed[0]["dur"] >= 9 * MS, f"timed-out wait >= 10 ms: {timed[0]['dur']}")
    tl.check(timed[1]["dur"] >= 5 * MS, f"second timedlock waited for the holder: {timed[1]['dur']}")

# rwlock: the reader waited for the writer; then two readers held it together
rw = [e for e in locks if e["lock_id"] == info["rw"]]
tl.check(all(e["kind"] == RWLOCK for e in rw), "events on rw are rwlock events")
wr = [e for e in rw if e["op"] == ACQ and e["mode"] == EXCL]
rd = [e for e in rw if e["op"] == ACQ and e["mode"] == SHARED]
tl.check_eq(len(wr), 1, "exclusive acquires of rw")
tl.check_eq(len(rd), 3, "shared acquires of rw")
if len(rd) == 3:
    tl.check(rd[0]["tid"] == mtid and rd[0]["dur"] >= hold // 2,
             f"reader waited for the writer: {rd[0]}")
    rel = {e["tid"]: e["ts"] for e in rw if e["op"] == REL}
    a, b = rd[1], rd[2]
    tl.check(a["tid"] != b["tid"] and a["ts"] + a["dur"] < rel.get(b["tid"], 0) and
             b["ts"] + b["dur"] < rel.get(a["tid"], 0), "two readers held rw at the same time")

# condition wait: the mutex is released when the wait starts, re-acquired at its end
cm = [e for e in locks if e["lock_id"] == info["cm"] and e["tid"] == mtid]
ops = [e["op"] for e in cm]
tl.check(ops[:2] == [ACQ, REL] and ACQ in ops[2:], f"main's events on the condvar mutex: {ops}")

# file locks: one id per file (flock) or range (fcntl/OFD), waits measured
for kind, name in ((FLOCK, "flock"), (OFD, "OFD")):
    ev = [e for e in locks if e["kind"] == kind]
    tl.check_eq(len({e["lock_id"] for e in ev}), 1, f"{name} lock ids")
    waits = [e for e in ev if e["tid"] == mtid and e["op"] == ACQ]
    tl.check(len(waits) == 1 and waits[0]["dur"] >= hold // 2 and waits[0]["result"] == 0,
             f"{name}: main's blocking acquire waited: {waits}")
    tl.check_eq(len([e for e in ev if e["op"] == ACQ]), 2, f"{name} acquires")
    tl.check_eq(len([e for e in ev if e["op"] == REL]), 2, f"{name} releases")
tl.check_eq([e["result"] for e in locks if e["kind"] == FLOCK and e["op"] == TRY], [EAGAIN],
            "flock LOCK_NB on a held lock")
tl.check(all((e["start"], e["len"]) == (100, 50) for e in locks if e["kind"] == OFD),
         "OFD lock range")
fc = [e for e in locks if e["kind"] == FCNTL]
tl.check_eq([e["op"] for e in fc], [ACQ, REL], "parent's fcntl record lock events")
if child and len(fc) == 2:
    tl.check(fc[0]["dur"] >= hold // 2, f"F_SETLKW waited for the child: {fc[0]['dur']}")
    cfc = child.of("lock", kind=FCNTL)
    tl.check_eq([e["op"] for e in cfc], [ACQ, REL], "child's fcntl record lock events")
    tl.check(all(e["lock_id"] == fc[0]["lock_id"] for e in cfc + fc),
             "parent and child name the same record lock (fcntl from offset 5 with SEEK_CUR, "
             "lockf from 0)")
    tl.check(all((e["start"], e["len"]) == (0, 10) for e in cfc + fc),
             f"record lock ranges in absolute bytes: {[(e['start'], e['len']) for e in cfc + fc]}")
em = [(e["op"], e["result"]) for e in locks if e["lock_id"] == info["em"]]
tl.check_eq(em, [(ACQ, 0), (REL, 0), (REL, EPERM), (ACQ, 0), (REL, 0)],
            "error-checking mutex: a pair, a refused unlock, a pair")
rm = [(e["op"], e["result"]) for e in locks if e["lock_id"] == info["rm"]]
tl.check_eq(rm, [(ACQ, 0), (ACQ, 0), (REL, 0), (REL, 0)], "recursive mutex taken twice")

# the clockid_t forms: timed acquires, and a condition wait that releases
# its mutex for the whole timeout and takes it back
km = [(e["op"], e["kind"], e["result"]) for e in locks if e["lock_id"] == info["km"]]
tl.check_eq(km, [(TIMED, MUTEX, 0), (REL, MUTEX, 0)], "pthread_mutex_clocklock, unlock")
krw = [(e["op"], e["mode"], e["result"]) for e in locks if e["lock_id"] == info["krw"]]
tl.check_eq(krw, [(TIMED, SHARED, 0), (REL, EXCL, 0), (TIMED, EXCL, 0), (REL, EXCL, 0)],
            "pthread_rwlock_clockrdlock, clockwrlock")
kcm = [e for e in locks if e["lock_id"] == info["kcm"]]
ops = [e["op"] for e in kcm]
tl.check(len(ops) >= 4 and ops[0] == ACQ and ops[-1] == REL and
         ops[1:-1] == [REL, ACQ] * ((len(ops) - 2) // 2),
         f"pthread_cond_clockwait releases and re-takes its mutex: {ops}")
if len(kcm) >= 4:
    tl.check(kcm[-2]["ts"] - kcm[1]["ts"] >= hold // 2 - MS,
             f"the clockwait held no mutex for its timeout: {(kcm[-2]['ts'] - kcm[1]['ts']) / MS} ms")

# a semaphore as a lock: the holder's hold, main's failed try, main's wait
sm = [e for e in locks if e["lock_id"] == info["sm"]]
tl.check(all(e["kind"] == SEMAPHORE for e in sm), "events on sm are semaphore events")
main_sm = [(e["op"], e["result"]) for e in sm if e["tid"] == mtid]
tl.check_eq(main_sm, [(TRY, EAGAIN), (ACQ, 0), (REL, 0)], "main's sem_trywait, sem_wait, sem_post")
other_sm = [(e["op"], e["result"]) for e in sm if e["tid"] != mtid]
tl.check_eq(other_sm, [(ACQ, 0), (REL, 0)], "the holder's sem_wait, sem_post")
waits = [e for e in sm if e["tid"] == mtid and e["op"] == ACQ]
held = [e for e in sm if e["tid"] != mtid]
if waits and len(held) == 2:
    tl.check(waits[0]["dur"] >= hold // 2, f"main's sem_wait waited: {waits[0]['dur'] / MS} ms")
    tl.check(held[1]["ts"] <= waits[0]["ts"] + waits[0]["dur"] + CLOCK_SLACK,
             "main's sem_wait ended after the holder's sem_post")
sz = [e for e in locks if e["lock_id"] == info["sz"]]
tl.check_eq([(e["op"], e["result"]) for e in sz],
            [(TIMED, ETIMEDOUT), (TIMED, ETIMEDOUT), (REL, 0), (TIMED, 0)],
            "sem_timedwait and sem_clockwait time out, sem_post, sem_clockwait")
tl.check(all(e["dur"] >= 9 * MS for e in sz if e["result"] == ETIMEDOUT),
         "the semaphore timeouts waited >= 10 ms")
tl.finish()
