#!/usr/bin/env python3
"""test_queued_arrival.py - a request's arrival is when its bytes reached
the server's kernel, not when a busy server got round to reading them.

Node.js's http server (llhttp on one libuv loop: nobody here wrote it)
runs a handler that computes for 120 ms, so a burst of 4 connections,
each sending its request at once, is read one handler later each: the
last ~360 ms after it arrived. Under `preplay record`, three such bursts:
- the receive that began each request carries queued_us (FORMAT.md NET
  field 11), never more than the time from the client's send to that
  receive's end (the same CLOCK_MONOTONIC; 1 ms of slack for the
  microseconds the tracer truncates), and at most two kernel ticks and a
  millisecond less (TCP_INFO counts in ticks, the tracer takes one off);
- `preplay analyze` puts each request's arrival in the plan at the
  client's send, within the same bound, where the receive's end (the
  arrival before 2.7) was up to ~360 ms late: a replay driven by those
  arrivals spread every burst out and queued less than the real server."""
import os
import signal
import socket
import subprocess
import time

import tracerlib as tl

work = tl.scratch("queued")
NODE_SERVER = r"""
const http = require("http");
http.createServer((req, res) => {
    const end = process.hrtime.bigint() + 120000000n;
    while (process.hrtime.bigint() < end) {}
    res.writeHead(200, {"Content-Length": 3, "Connection": "close"});
    res.end("ok\n");
}).listen(Number(process.argv[2]), "127.0.0.1");
"""
server_js = os.path.join(work, "server.js")
with open(server_js, "w") as f:
    f.write(NODE_SERVER)

out = os.path.join(work, "trace")
port = tl.free_port()
server = tl.spawn(tl.record_args(out, ["node", server_js, str(port)], component="front"),
                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
if not tl.check(tl.wait_port(port, 30, server), "node listening"):
    tl.finish()

sent = {}  # client port -> CLOCK_MONOTONIC ns just before its request went out
for burst in range(3):
    socks = [socket.create_connection(("127.0.0.1", port), timeout=20) for _ in range(4)]
    for s in socks:
        sent[s.getsockname()[1]] = time.monotonic_ns()
        s.sendall(b"GET /work HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    for s in socks:
        body = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            body += chunk
        tl.check(body.endswith(b"ok\n"), f"burst {burst}: a response, not {body[-40:]!r}")
        s.close()
    time.sleep(0.4)
time.sleep(0.3)
server.send_signal(signal.SIGINT)
tl.wait_end(server, "preplay record with node", 30)

(t,) = tl.read_traces(out).values()
tick = time.clock_getres(6) * 1e9  # CLOCK_MONOTONIC_COARSE (Linux): the kernel tick
slack = 2 * tick + 1e6
accepts = {e["remote_port"]: e["conn_id"] for e in t.of("conn", "accept")}
waits = []  # (client send ns, true wait ns, queued ns)
for cport, at in sorted(sent.items(), key=lambda kv: kv[1]):
    cid = accepts.get(cport)
    if not tl.check(cid is not None, f"connection from client port {cport} accepted"):
        continue
    recvs = [e for e in t.of("net", "recv", conn_id=cid) if e["result"] > 0]
    if not tl.check(recvs, f"connection {cport}: its request received"):
        continue
    first = recvs[0]
    wait = first["ts"] + first["dur"] - at
    queued = first.get("queued_us", 0) * 1000
    waits.append((at, wait, queued))
    tl.check(queued <= wait + 1e6,
             f"connection {cport}: queued {queued / 1e6:.1f} ms, more than the "
             f"{wait / 1e6:.1f} ms from the client's send to the receive's end")
    tl.check(queued >= wait - slack,
             f"connection {cport}: queued {queued / 1e6:.1f} ms, short of the "
             f"{wait / 1e6:.1f} ms waited by more than two ticks and 1 ms")
    tl.check(all(e.get("queued_us", 0) == 0 for e in recvs[1:]),
             f"connection {cport}: queued_us only on the receive that began the request")
tl.check_eq(len(waits), 12, "requests seen")
tl.check(sum(1 for _, w, _ in waits if w > 200e6) >= 3,
         "each burst queued: a request read more than 200 ms after it was sent "
         f"(waits {sorted(round(w / 1e6) for _, w, _ in waits)} ms)")

blocks = os.path.join(work, "blocks.tsv")
rc = subprocess.run([tl.PREPLAY, "analyze", out, "-o", os.path.join(work, "plan"), "--blocks",
                     blocks, "--quiet"], capture_output=True, text=True, timeout=120)
if tl.check(rc.returncode == 0, f"analyze: exit {rc.returncode}: {rc.stderr[-400:]}"):
    with open(blocks) as f:
        arrivals = sorted(int(line.split("\t")[2]) for line in f if line.startswith("R\t"))
    sends = sorted(at for at, _, _ in waits)
    if tl.check_eq(len(arrivals), len(sends), "requests in the plan"):
        off = [a - (s - sends[0]) for a, s in zip(arrivals, sends)]
        tl.check(max(abs(o) for o in off) <= slack,
                 "the plan's arrivals are the client's sends (ms off: "
                 f"{[round(o / 1e6, 1) for o in off]})")
tl.finish()
