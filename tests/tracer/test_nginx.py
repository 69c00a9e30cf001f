#!/usr/bin/env python3
"""test_nginx.py - nginx (master_process on, one worker, daemon off, a
config of ours in a temp dir) serving a known file 10 times: the worker is
a forked child with its own trace file whose parent is the master; in it,
the bytes read or sendfile'd from the served file add up to 10 x its size,
and the bytes sent per connection equal what the client received. The
access log, which the master opens and the worker writes through the
inherited descriptor: the worker's writes add up to the log's size and
name its path in the worker's own trace (interned again after the fork),
and `preplay info` gives it those bytes and gives the served file what
nginx sendfile'd from it as read."""
import json
import os
import signal
import socket
import subprocess
import time

import tracerlib as tl

NGINX = "/usr/sbin/nginx"
if not os.access(NGINX, os.X_OK):
    tl.fail(f"{NGINX} missing (tools/install-deps installs nginx-light)")
    tl.finish()
work = tl.scratch("nginx")
root = os.path.join(work, "www")
os.mkdir(root)
body = os.urandom(150000)
with open(os.path.join(root, "data.bin"), "wb") as f:
    f.write(body)
port = tl.free_port()
conf = tl.write_nginx_conf(work, f"""    access_log {work}/access.log;
    sendfile on;
    server {{
        listen 127.0.0.1:{port};
        root {root};
        keepalive_timeout 5;
    }}""", main="master_process on;\nworker_processes 1;\nuser root;")
out = os.path.join(work, "trace")
srv = tl.spawn(tl.record_args(out, [NGINX, "-c", conf, "-p", work]), stdout=subprocess.DEVNULL,
               stderr=subprocess.PIPE)
if not tl.check(tl.wait_port(port, 30, srv), "nginx listening"):
    tl.finish()
conns = []
for i in range(10):
    sock = socket.create_connection(("127.0.0.1", port), timeout=20)
    state = {"sent": 0, "received": 0, "pending": b""}
    tl.check(tl.http_get(sock, "data.bin", state) == body, f"body of request {i}")
    conns.append((sock.getsockname()[1], state["sent"], state["received"]))
    sock.close()
srv.send_signal(signal.SIGTERM)  # nginx: fast shutdown of master and worker
try:
    srv.wait(timeout=30)
except subprocess.TimeoutExpired:
    tl.fail("nginx under preplay record did not stop after SIGTERM")
    tl.finish()
traces = tl.read_traces(out)
master = [t for t in traces.values() if t.of("control", "fork")]
workers = [t for t in traces.values() if t.of("conn", "accept")]
tl.check_eq(len(workers), 1, "traces with accepted connections (the one worker)")
if workers and master:
    w = workers[0]
    tl.check(w.pid in [e["arg0"] for m in master for e in m.of("control", "fork")],
             "the master recorded forking the worker")
    tl.check(w.ppid in traces, f"the worker's parent {w.ppid} has its own trace")
    opens = [e for e in w.of("file", "open") if e.get("path", "").endswith("/data.bin")
             and e["result"] >= 0]
    tl.check_eq(len(opens), 10, "opens of data.bin in the worker")
    if opens:
        ino = opens[0]["ino"]
        tl.check(all(e["file_size"] == len(body) for e in opens), "size of data.bin at open")
        moved = sum(e["result"] for e in w.events if e["type"] == "file" and e["ino"] == ino and
                    e["op"] in ("read", "pread", "sendfile") and e["result"] > 0)
        tl.check_eq(moved, 10 * len(body), "bytes read or sendfile'd from data.bin")
    accepts = {e["remote_port"]: e["conn_id"] for e in w.of("conn", "accept")}
    for cport, sent, received in conns:
        cid = accepts.get(cport)
        if not tl.check(cid is not None, f"connection from {cport} accepted in the worker"):
            continue
        net = w.of("net", conn_id=cid)
        tl.check_eq(sum(e["result"] for e in net if e["op"] == "send" and e["result"] > 0),
                    received, f"bytes sent on connection {cport}")
        tl.check_eq(sum(e["result"] for e in net if e["op"] == "recv" and e["result"] > 0),
                    sent, f"bytes received on connection {cport}")
        tl.check_eq([e.get("label") for e in w.of("label", conn_id=cid)], ["GET /data.bin"],
                    f"label on connection {cport}")
    log = os.path.join(work, "access.log")
    log_size, log_ino = os.path.getsize(log), os.stat(log).st_ino
    log_writes = tl.file_events(w, log_ino, ["write"])
    tl.check_eq(log_size > 0 and sum(e["result"] for e in log_writes), log_size,
                "bytes the worker wrote to the access log")
    # the path id the worker inherited named a string of the master's trace:
    # the worker interns the path again in its own
    tl.check_eq(sorted({e.get("path") for e in log_writes}), [log],
                "path of the worker's access log writes, in its own trace")
    info = subprocess.run([tl.PREPLAY, "info", "--json", out], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE)
    if tl.check(info.returncode == 0, f"preplay info: {info.stderr.decode()[-300:]}"):
        procs = {p["pid"]: p for p in json.loads(info.stdout)["process_list"]}
        top = [f for f in procs.get(w.pid, {}).get("top_files", []) if f["ino"] == log_ino]
        tl.check_eq([(f["path"], f["bytes_written"]) for f in top], [(log, log_size)],
                    "info: the worker's access log, bytes written")
        served = [f["bytes_read"] for f in procs.get(w.pid, {}).get("top_files", [])
                  if f["path"] == os.path.join(root, "data.bin")]
        tl.check_eq(served, [10 * len(body)], "info: bytes read (sendfile'd) from data.bin")
tl.finish()
