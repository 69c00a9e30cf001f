#!/usr/bin/env python3
"""test_procs.py - fork, fork+exec, a daemon (double fork, setsid, every
descriptor 0..1023 closed), posix_spawn, vfork+exec and system() under the
tracer: every process gets its own trace file whose header names its real
parent, the parent records the fork, exec'd images continue their
process's file, and each leaf's open/write/close of its file is there with
the exact byte count."""
import os

import tracerlib as tl

work = tl.scratch("procs")
out = os.path.join(work, "trace")
data = os.path.join(work, "data")
os.mkdir(data)
rc, stdout, stderr = tl.record(out, [tl.helper("tt_procs"), "all", data], timeout=60)
tl.check_eq(rc, 0, f"tt_procs exit status (stderr: {stderr.strip()})")
main_pid = int(stdout.split()[-1])
names = [n for n in os.listdir(out) if n.endswith(".trace")]
traces = tl.read_traces(out)
tl.check_eq(len(traces), len(names), "trace files per pid (one file per process)")
main = traces.get(main_pid)
if not tl.check(main is not None, f"trace of tt_procs itself (pid {main_pid}) in {names}"):
    tl.finish()
forks = [e["arg0"] for e in main.of("control", "fork")]

leaves = {}
for n in os.listdir(data):
    if n.startswith("leaf-"):
        text = open(os.path.join(data, n)).read()
        pid, ppid, tag = text.split()
        leaves[tag.split("-")[0]] = (int(pid), int(ppid), tag, os.path.join(data, n), len(text))
tl.check_eq(sorted(leaves), ["daemon", "exec", "fork", "spawn", "system", "vfork"], "leaves")

for kind, (pid, ppid, tag, path, nbytes) in sorted(leaves.items()):
    t = traces.get(pid)
    if not tl.check(t is not None, f"{kind}: a trace for leaf pid {pid}"):
        continue
    want_ppid = int(tag.split("-")[1]) if kind == "daemon" else ppid
    tl.check_eq(t.ppid, want_ppid, f"{kind}: ppid in the trace header")
    opened = [e for e in t.of("file", "open") if e.get("path") == path]
    if not tl.check(len(opened) == 1 and opened[0]["result"] >= 0, f"{kind}: open of {path}"):
        continue
    ino = opened[0]["ino"]
    ev = [(e["op"], e["offset"], e["size"], e["result"])
          for e in tl.file_events(t, ino, {"write", "close"})]
    tl.check_eq(ev, [("write", 0, nbytes, nbytes), ("close", -1, 0, 0)],
                f"{kind}: leaf's write and close")
    if kind in ("exec", "vfork"):
        tl.check(pid in forks, f"{kind}: main recorded forking {pid} ({forks})")
        tl.check_eq(t.ppid, main_pid, f"{kind}: parent is tt_procs")
        execs = t.of("control", "exec")
        tl.check(any(e.get("path", "").endswith("tt_procs") for e in execs) and
                 any(e["arg0"] == -1 for e in execs),
                 f"{kind}: exec recorded before and after in the same file: {execs}")
    if kind == "fork":
        tl.check(pid in forks, f"fork: main recorded forking {pid}")
    if kind == "spawn":
        tl.check(pid in forks, f"posix_spawn: main recorded spawning {pid}")
        tl.check_eq(t.ppid, main_pid, "posix_spawn: parent is tt_procs")
    if kind == "daemon":
        mid = traces.get(want_ppid)
        if tl.check(mid is not None, "daemon: trace of the intermediate process"):
            tl.check_eq(mid.ppid, main_pid, "daemon: intermediate's parent")
            tl.check(want_ppid in forks, "daemon: main recorded forking the intermediate")
            tl.check([e["arg0"] for e in mid.of("control", "fork")] == [pid],
                     "daemon: intermediate recorded forking the daemon")
        closes = [e for e in t.of("file", "close") if e["ino"] != ino]
        tl.check(all(e["fd"] < 1024 for e in closes), "daemon: closes of inherited descriptors")
    if kind == "system":
        # system() runs /bin/sh -c; the leaf is the shell's child or the shell itself
        chain = pid
        seen = set()
        while chain in traces and chain != main_pid and chain not in seen:
            seen.add(chain)
            chain = traces[chain].ppid
        tl.check_eq(chain, main_pid, "system: the leaf's ancestry leads to tt_procs in traces")
tl.finish()
