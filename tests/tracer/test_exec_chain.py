#!/usr/bin/env python3
"""test_exec_chain.py - a threaded server started the way version managers
(pyenv's shims), container entry points and init scripts start one: through
a chain of exec'ing shells, `sh -c "exec bash -c 'exec SHIM ...'"`, where
SHIM is a bash script that forks a command substitution (as a shim does)
and then execs Debian's `python3 -m http.server` (ThreadingHTTPServer: a
thread per connection), under load from 4 clients with think times.

Every image of the chain writes into one trace file. No event of a thread
may end before an earlier event of that thread in the file (the CPU slices
and connection definitions aside, which the analyzer keys differently):
the collector used to write the new image's EXEC marker as soon as it
registered, ahead of the old image's last records still in its rings, so
those came out up to milliseconds "in the past" and `preplay analyze`
warned that the recording's clock went backwards. Checked in the trace
and by analyze's warning; the chain and the threads are checked to be
there, so the test cannot pass on an empty recording."""
import os
import random
import signal
import socket
import subprocess
import threading
import time

import tracerlib as tl

CLIENTS, REQUESTS = 4, 30

work = tl.scratch("execchain")
root = os.path.join(work, "www")
os.mkdir(root)
body = os.urandom(3000)
with open(os.path.join(root, "page.bin"), "wb") as f:
    f.write(body)
shim = os.path.join(work, "python3-shim")
with open(shim, "w") as f:
    f.write('#!/bin/bash\nset -e\nhere="$(dirname "$0")"\ncd "$here"\n'
            'exec /usr/bin/python3 "$@"\n')
os.chmod(shim, 0o755)

out = os.path.join(work, "trace")
port = tl.free_port()
server_cmd = (f"exec {shim} -m http.server --bind 127.0.0.1 --protocol HTTP/1.1 "
              f"--directory {root} {port}")
chain = ["sh", "-c", "exec bash -c 'exec sh -c \"" + server_cmd + "\"'"]
server = tl.spawn(tl.record_args(out, chain, component="web"), stdout=subprocess.DEVNULL,
                  stderr=subprocess.PIPE)
if not tl.check(tl.wait_port(port, 30, server), "server started through the exec chain listening"):
    tl.finish()

failures = []


def client(seed):
    rnd = random.Random(seed)
    for _ in range(REQUESTS):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
                state = {"sent": 0, "received": 0, "pending": b""}
                if tl.http_get(sock, "page.bin", state) != body:
                    failures.append("wrong body")
        except OSError as e:
            failures.append(str(e))
        time.sleep(rnd.uniform(0.001, 0.02))  # think time


clients = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
for c in clients:
    c.start()
for c in clients:
    c.join()
tl.check_eq(failures, [], "requests answered")
time.sleep(0.3)
server.send_signal(signal.SIGINT)
tl.wait_end(server, "preplay record of the exec chain", 30)

traces = tl.read_traces(out, skip_types=("string",))
tl.check_eq(len(traces), 2, "trace files: the chain's process and the shim's command substitution")
main = [t for t in traces.values() if t.header["argv"][:1] == ["sh"]]
if tl.check_eq(len(main), 1, "one trace of the exec chain"):
    t = main[0]
    registered = [e for e in t.events if e["type"] == "control" and e["op"] == "exec" and
                  e["arg0"] == -1]
    tl.check_eq(len(registered), 4, "images registered after exec (bash, sh, the shim, python3)")
    net_threads = {e["tid"] for e in t.events if e["type"] == "net"}
    tl.check(len(net_threads) >= 2, f"requests served on several threads: {len(net_threads)}")
for t in traces.values():
    last_end, backwards = {}, []
    for e in t.events:
        if e["type"] in ("cpu", "conn") or "tid" not in e:
            continue
        end = e["ts"] + e["dur"]
        if end < last_end.get(e["tid"], 0):
            backwards.append((e["type"], e.get("op"), last_end[e["tid"]] - end))
        last_end[e["tid"]] = max(end, last_end.get(e["tid"], 0))
    tl.check_eq(backwards[:5], [], f"{os.path.basename(t.path)}: events ending before an earlier "
                f"event of their thread ({len(backwards)} of them; type, op, ns back)")

r = subprocess.run([tl.PREPLAY, "analyze", out, "-o", os.path.join(work, "plan")],
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
tl.check_eq(r.returncode, 0, f"preplay analyze ran (stderr: {r.stderr.strip()[-300:]})")
tl.check_eq([line for line in r.stderr.splitlines() if "clock went backwards" in line], [],
            "analyze: no event of a thread ended before an earlier one")
tl.finish()
