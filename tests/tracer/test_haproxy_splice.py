#!/usr/bin/env python3
"""test_haproxy_splice.py - a relay that moves bytes with splice().

HAProxy (Debian's, a TCP proxy with `option splice-request` and
`option splice-response`, one thread, a config of ours) relays 5 requests
to an untraced python3 http.server serving a 1.5 MB file. It forwards most
of each response socket -> pipe -> socket with splice(2), bytes that never
pass through a recv or send. In its trace: per client connection, the bytes
sent equal what the client received and the bytes received what it sent;
over the backend connections, the same totals the other way round; and
pipe transfers carry at least one body (else HAProxy did not splice, and
the test would prove nothing: it says so).
"""
import os
import signal
import socket
import subprocess

import tracerlib as tl

HAPROXY, PYTHON = "/usr/sbin/haproxy", "/usr/bin/python3"
for prog in (HAPROXY, PYTHON):
    if not os.access(prog, os.X_OK):
        tl.fail(f"{prog} missing (tools/install-deps installs haproxy and python3)")
        tl.finish()
REQUESTS = 5
work = tl.scratch("haproxy")
root = os.path.join(work, "www")
os.mkdir(root)
body = os.urandom(1500000)
with open(os.path.join(root, "big.bin"), "wb") as f:
    f.write(body)

backend_port = tl.free_port()
backend = tl.spawn([PYTHON, "-m", "http.server", "--bind", "127.0.0.1", "--directory", root,
                    str(backend_port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
if not tl.check(tl.wait_port(backend_port, 30, backend), "python3 http.server listening"):
    tl.finish()

port = tl.free_port()
conf = os.path.join(work, "haproxy.cfg")
with open(conf, "w") as f:
    f.write(f"""global
    nbthread 1
    maxconn 64
defaults
    mode tcp
    timeout connect 5s
    timeout client 30s
    timeout server 30s
    option splice-request
    option splice-response
listen relay
    bind 127.0.0.1:{port}
    server backend 127.0.0.1:{backend_port}
""")
out = os.path.join(work, "trace")
srv = tl.spawn(tl.record_args(out, [HAPROXY, "-db", "-f", conf]), stdout=subprocess.DEVNULL,
               stderr=subprocess.PIPE)
if not tl.check(tl.wait_port(port, 30, srv), "haproxy listening"):
    tl.finish()
clients = []
for i in range(REQUESTS):
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    state = {"sent": 0, "received": 0, "pending": b""}
    tl.check(tl.http_get(sock, "big.bin", state) == body, f"body of request {i}")
    while True:  # http.server closes after the response; so does the relay
        chunk = sock.recv(65536)
        if not chunk:
            break
        state["received"] += len(chunk)
    clients.append((sock.getsockname()[1], state["sent"], state["received"]))
    sock.close()
srv.send_signal(signal.SIGTERM)
_, err = tl.wait_end(srv, "haproxy under preplay record after SIGTERM", 30)

traces = tl.read_traces(out, skip_types=("cpu",))
if not tl.check(len(traces) == 1, f"one traced process (haproxy -db): {sorted(traces)}"):
    tl.finish()
(t,) = traces.values()
accepted = {e["remote_port"]: e["conn_id"] for e in t.of("conn", "accept")}
to_backend = {e["conn_id"] for e in t.of("conn", "connect") if e.get("remote_port") == backend_port}


def moved(conn_ids, op):
    return sum(e["result"] for e in t.of("net", op) if e["conn_id"] in conn_ids and e["result"] > 0)


# (the test's readiness probe made one more, which carried nothing)
tl.check_eq(len([c for c in to_backend if moved({c}, "recv")]), REQUESTS,
            "connections to the backend that carried a response")


for cport, sent, received in clients:
    cid = accepted.get(cport)
    if not tl.check(cid is not None, f"client connection from port {cport} accepted"):
        continue
    tl.check_eq(moved({cid}, "send"), received, f"bytes sent to client {cport}")
    tl.check_eq(moved({cid}, "recv"), sent, f"bytes received from client {cport}")
tl.check_eq(moved(to_backend, "recv"), sum(c[2] for c in clients),
            "bytes received from the backend (all the clients received)")
tl.check_eq(moved(to_backend, "send"), sum(c[1] for c in clients),
            "bytes sent to the backend (all the clients sent)")
piped = sum(e["result"] for e in t.events if e["type"] == "file" and e.get("path") == "pipe" and
            e["op"] in ("read", "write") and e["result"] > 0)
tl.check(piped >= 2 * len(body),
         f"haproxy spliced through a pipe ({piped} bytes in and out of pipes; "
         "at least a body in and out expected)")
tl.finish()
