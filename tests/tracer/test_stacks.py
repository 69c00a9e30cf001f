#!/usr/bin/env python3
"""test_stacks.py - `preplay record --stacks N`: every file event of
tt_stacks carries the stack it was called from, innermost first, with the
exported functions named (stacks_leaf_write <- stacks_middle <- main), the
same stack deduplicated into one id, depth limited to N; without --stacks
no event has one; a bad N is refused with one line."""
import json
import os
import subprocess

import tracerlib as tl

work = tl.scratch("stacks")
prog = tl.helper("tt_stacks")


def dump(trace_dir):
    (path,) = [os.path.join(trace_dir, f) for f in os.listdir(trace_dir) if f.endswith(".trace")]
    out = subprocess.run([tl.PREPLAY, "dump", "--json", path], stdout=subprocess.PIPE,
                         check=True, timeout=60).stdout.decode()
    return [json.loads(line) for line in out.splitlines()]


trace = os.path.join(work, "with")
rc = subprocess.run([tl.PREPLAY, "record", "-q", "--no-cpu-scores", "--stacks", "4", "-o", trace,
                     "--", prog, os.path.join(work, "data"), "25"], timeout=60).returncode
tl.check_eq(rc, 0, "tt_stacks under --stacks 4")
events = dump(trace)
writes = [e for e in events if e["type"] == "file" and e.get("op") == "write"]
reads = [e for e in events if e["type"] == "file" and e.get("op") == "pread"]
tl.check_eq(len(writes), 25, "writes recorded")
tl.check(all(e.get("stack") for e in writes + reads), "every write and pread has a stack")
if writes and writes[0].get("stack"):
    s = writes[0]["stack"]
    tl.check(len(s) <= 4, f"depth limited to 4: {s}")
    tl.check(s[0].startswith("stacks_leaf_write+"), f"innermost frame is the leaf: {s}")
    tl.check(len(s) > 1 and s[1].startswith("stacks_middle+"), f"then its caller: {s}")
    tl.check(len(s) > 2 and s[2].startswith("main+"), f"then main: {s}")
tl.check_eq(len({e["stack_id"] for e in writes}), 1, "the 25 identical stacks share one id")
if reads and reads[0].get("stack"):
    tl.check(reads[0]["stack"][0].startswith("stacks_leaf_read+"), f"pread's stack: {reads[0]}")
    tl.check(reads[0]["stack_id"] != writes[0]["stack_id"], "a different stack, a different id")

plain = os.path.join(work, "without")
rc = subprocess.run([tl.PREPLAY, "record", "-q", "--no-cpu-scores", "-o", plain, "--", prog,
                     os.path.join(work, "data2"), "3"], timeout=60).returncode
tl.check_eq(rc, 0, "tt_stacks without --stacks")
tl.check(not any("stack_id" in e for e in dump(plain)), "no stacks unless asked")

bad = subprocess.run([tl.PREPLAY, "record", "--stacks", "99", "--", "true"],
                     stderr=subprocess.PIPE, timeout=30)
tl.check_eq(bad.returncode, 2, "--stacks 99 is a usage error")
tl.check("bad --stacks '99' (frames per event, 1-32)" in bad.stderr.decode(),
         f"message: {bad.stderr.decode().strip()}")
tl.finish()
