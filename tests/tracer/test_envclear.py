#!/usr/bin/env python3
"""test_envclear.py - apps that clear their environment: execve with an
empty environment, exec after clearenv(), fork after clearenv(), and the
real `env -i`. The exec wrappers put LD_PRELOAD, PREPLAY_COLLECTOR and
PREPLAY_COMPONENT back (plus PREPLAY_EXEC_PID, which marks the new image
of the same process), so each leaf is traced and its environment holds
exactly those variables; fork needs no variables (the library is loaded)."""
import os

import tracerlib as tl

work = tl.scratch("envclear")
out = os.path.join(work, "trace")
data = os.path.join(work, "data")
os.mkdir(data)
rc, stdout, stderr = tl.record(out, ["env", "-i", tl.helper("tt_procs"), "envclear", data],
                               component="envtest", timeout=60)
tl.check_eq(rc, 0, f"env -i tt_procs envclear (stderr: {stderr.strip()})")
traces = tl.read_traces(out)
for tag in ("execve-empty", "clearenv-exec", "clearenv-fork"):
    leaf = os.path.join(data, f"leaf-{tag}.out")
    if not tl.check(os.path.exists(leaf), f"{tag}: leaf ran"):
        continue
    pid = int(open(leaf).read().split()[0])
    env = sorted(l.split("=", 1)[0] for l in open(os.path.join(data, f"env-{tag}.out")).read().split("\n") if l)
    t = traces.get(pid)
    if not tl.check(t is not None, f"{tag}: leaf pid {pid} traced"):
        continue
    tl.check_eq(t.header["component"], "envtest", f"{tag}: component kept")
    tl.check(any(e.get("path") == leaf for e in t.of("file", "open")), f"{tag}: leaf's open traced")
    if tag == "clearenv-fork":
        tl.check_eq(env, [], f"{tag}: environment stays empty (no exec)")
    else:
        tl.check_eq(env, ["LD_PRELOAD", "PREPLAY_COLLECTOR", "PREPLAY_COMPONENT",
                          "PREPLAY_EXEC_PID"], f"{tag}: variables put back by the exec wrapper")
main = [t for t in traces.values() if t.header["argv"][:1] == ["env"] or
        t.header["exe"].endswith("tt_procs") and t.header["argv"][1:2] == ["envclear"]]
tl.check(len(main) >= 1, "env -i itself exec'd tt_procs inside one traced process")
tl.finish()
