#!/usr/bin/env python3
"""test_lock_fold.py - lock folding (tracer/preload/lock_fold.h): locks that
cannot have made anyone wait are counted, not recorded, and a lock is
recorded from the moment it is contended.

tt_lockstorm, recorded as usual and with --no-lock-folding (every operation
recorded, the same run's baseline):
- the 1 000 000 uncontended read locks, the mutex only the main thread
  takes and the rwlock two threads only read leave no LOCK event; the
  CONTROL locks_folded records count every one of their holds (and which
  were shared), and `preplay info` shows the count;
- the mutex that becomes contended mid-run: its first 1000 holds (main
  alone) are folded; the hold main has when the second thread starts to
  wait is recorded whole (its acquire dated at main's previous record at
  the latest - a folded acquire reads no clock - and its release after
  the wait began), the wait is recorded with its length, and every
  operation after that is recorded, paired per thread;
- the folded recording has >= 100x fewer lock events than the baseline,
  which has every operation.
With node installed, `node -e` hashing 20 000 strings with createHash
(OpenSSL 3 takes ~82 read locks per hash) is recorded both ways too:
>= 100x fewer lock events, the folded holds counted."""
import json
import os
import shutil
import subprocess

import tracerlib as tl

MS = 1000000


def info_json(out):
    r = subprocess.run([tl.PREPLAY, "info", "--json", out], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=120)
    tl.check_eq(r.returncode, 0, f"preplay info {out} (stderr: {r.stderr.strip()[-300:]})")
    return json.loads(r.stdout) if r.returncode == 0 else None


def record_both(tag, cmd, extra=()):
    """Records cmd folded and with --no-lock-folding; returns the two
    directories and the folded run's stdout."""
    work = tl.scratch(tag)
    outs = []
    stdout = ""
    for opts in ([], ["--no-lock-folding"]):
        out = os.path.join(work, "trace" + ("-all" if opts else ""))
        rc, so, se = tl.record(out, cmd, timeout=90, extra=list(extra) + opts)
        tl.check_eq(rc, 0, f"{tag} {opts}: exit status (stderr: {se.strip()[-300:]})")
        stdout = stdout or so
        outs.append(out)
    return outs[0], outs[1], stdout


folded_out, all_out, stdout = record_both("lockfold", [tl.helper("tt_lockstorm")])
info = json.loads(stdout.strip().splitlines()[-1])
uncontended = info["n_storm"] + info["n_solo"] + 2 * info["n_reads"] + info["prefix"]
late_recorded = 2 + 2 * info["pound"]  # the hold at the switch, the wait, then every one
fi, ai = info_json(folded_out), info_json(all_out)
if fi and ai:
    tl.check_eq(ai["events"]["lock"], 2 * (uncontended + late_recorded),
                "--no-lock-folding: every lock operation recorded")
    tl.check_eq(ai["lock_holds_folded"], 0, "--no-lock-folding: nothing folded")
    tl.check_eq(fi["events"]["lock"], 2 * late_recorded, "lock events when folded")
    tl.check(ai["events"]["lock"] >= 100 * fi["events"]["lock"],
             f"lock events {ai['events']['lock']} -> {fi['events']['lock']}: >= 100x fewer")
    tl.check_eq((fi["lock_holds_folded"], fi["lock_holds_folded_shared"]),
                (uncontended, info["n_storm"] + 2 * info["n_reads"]),
                "folded holds counted (all, shared) in preplay info --json")
    print(f"tt_lockstorm: lock events {ai['events']['lock']} -> {fi['events']['lock']}, "
          f"trace {ai['bytes_on_disk']} -> {fi['bytes_on_disk']} bytes")
text = subprocess.run([tl.PREPLAY, "info", folded_out], stdout=subprocess.PIPE, text=True).stdout
tl.check(f"lock holds folded (uncontended, counted not recorded) {uncontended}" in text,
         f"preplay info shows the folded holds: {text[:600]}")

traces = tl.read_traces(folded_out, skip_types=("cpu", "string"))
tl.check_eq(len(traces), 1, "trace files")
(t,) = traces.values()
locks = t.of("lock")
quiet = {info["storm"], info["solo"], info["readers"]}
tl.check_eq([e for e in locks if e["lock_id"] in quiet][:3], [],
            "no LOCK event of the uncontended locks")
folds = t.of("control", "locks_folded")
tl.check_eq((sum(e["arg0"] for e in folds), sum(e["arg1"] for e in folds)),
            (uncontended, info["n_storm"] + 2 * info["n_reads"]),
            "locks_folded records: holds, shared holds")
late = [e for e in locks if e["lock_id"] == info["late"]]
mtid = t.pid
main = [e for e in late if e["tid"] == mtid]
other = [e for e in late if e["tid"] != mtid]
for who, evs in (("main", main), ("second thread", other)):
    tl.check_eq([e["op"] for e in evs], ["acquire", "release"] * (1 + info["pound"]),
                f"{who}: the contended mutex's events, paired")
    tl.check(all(e["result"] == 0 for e in evs), f"{who}: all succeeded")
if len(main) >= 2 and other:
    hold, wait = (main[0], main[1]), other[0]
    tl.check(wait["dur"] >= info["hold_ms"] * MS // 2,
             f"the second thread's first acquire waited >= {info['hold_ms'] // 2} ms: {wait}")
    tl.check(hold[0]["ts"] < wait["ts"] and hold[1]["ts"] >= wait["ts"] and
             hold[1]["ts"] <= wait["ts"] + wait["dur"] + MS,
             f"main's hold at the switch spans the start of the wait and ends with it: "
             f"{hold} {wait}")
    tl.check(hold[1]["ts"] - hold[0]["ts"] >= info["hold_ms"] * MS,
             f"main's hold at the switch is recorded from its acquire (or before): {hold}")

node = shutil.which("node")
if node:
    script = ('const c=require("crypto"); for (let i = 0; i < 20000; i++) '
              'c.createHash("sha256").update("x" + i).digest("hex")')
    n_folded, n_all, _ = record_both("lockfold-node", [node, "-e", script],
                                     extra=["--only", "lock"])
    fi, ai = info_json(n_folded), info_json(n_all)
    if fi and ai:
        tl.check(ai["events"]["lock"] >= 100 * fi["events"]["lock"],
                 f"node createHash x20000: lock events {ai['events']['lock']} -> "
                 f"{fi['events']['lock']}: >= 100x fewer")
        tl.check(2 * fi["lock_holds_folded"] + fi["events"]["lock"] >= ai["events"]["lock"] // 2,
                 f"node: the folded holds account for the lock operations: "
                 f"{fi['lock_holds_folded']} holds")
        print(f"node createHash x20000: lock events {ai['events']['lock']} -> "
              f"{fi['events']['lock']}, trace {ai['bytes_on_disk']} -> {fi['bytes_on_disk']} "
              f"bytes, {fi['lock_holds_folded']} holds folded")
else:
    print("node not installed: its createHash recording skipped")
tl.finish()
