#!/usr/bin/env python3
"""test_labels.py - the request labels of accepted connections, for the
ways a request line can arrive: whole in one recv (query string dropped),
one byte per recv (the line gathered across calls), across the two buffers
of one recvmsg, longer than the label holds (what fits is kept), with no
HTTP version (ends at CR), two requests on one keep-alive connection, and
bytes that are not HTTP (no label). The server is Debian's python3 reading
exactly as each case says; the client knows the order."""
import os
import signal
import socket
import subprocess

import tracerlib as tl

SERVER = r"""
import socket, sys
plan = sys.argv[1].split(",")
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
s.listen(8)
print(s.getsockname()[1], flush=True)
for mode in plan:
    c, _ = s.accept()
    for _ in range(2 if mode == "keepalive" else 1):
        data = b""
        while b"\r\n\r\n" not in data:
            if mode == "bytes":
                got = c.recv(1)
            elif mode == "iov":
                a, b = bytearray(6), bytearray(4096)
                n, _, _, _ = c.recvmsg_into([a, b])
                got = (bytes(a) + bytes(b))[:n]
            else:
                got = c.recv(4096)
            if not got:
                break
            data += got
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
    c.close()
"""

LONG = "/" + "a" * 200
# (how the server reads, [request lines sent], [labels expected])
CASES = [
    ("recv", ["GET /query?x=1 HTTP/1.1"], ["GET /query"]),
    ("bytes", ["POST /split/path?q=2 HTTP/1.1"], ["POST /split/path"]),
    ("iov", ["GET /two-iov HTTP/1.1"], ["GET /two-iov"]),
    ("recv", [f"GET {LONG} HTTP/1.1"], [f"GET {LONG}"[:95]]),
    ("recv", ["GET /nine"], ["GET /nine"]),
    ("keepalive", ["GET /first HTTP/1.1", "PUT /second?z HTTP/1.1"], ["GET /first", "PUT /second"]),
    ("recv", ["HELLO world"], []),
]

work = tl.scratch("labels")
out = os.path.join(work, "trace")
plan = ",".join(mode for mode, _, _ in CASES)
server = tl.spawn(tl.record_args(out, ["/usr/bin/python3", "-c", SERVER, plan]),
                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
line = server.stdout.readline()
if not tl.check(line.strip().isdigit(), f"server's port line: {line!r}"):
    tl.finish()
port = int(line)

client_ports = []
for mode, lines, _ in CASES:
    sock = socket.create_connection(("127.0.0.1", port), timeout=20)
    client_ports.append(sock.getsockname()[1])
    for request_line in lines:
        sock.sendall(f"{request_line}\r\nHost: x\r\n\r\n".encode())
        answer = b""
        while not answer.endswith(b"ok"):
            chunk = sock.recv(4096)
            if not chunk:
                break
            answer += chunk
        tl.check(answer.endswith(b"ok"), f"answer to {request_line[:40]!r}")
    sock.close()

try:
    server.wait(timeout=30)
except subprocess.TimeoutExpired:
    server.send_signal(signal.SIGINT)
    tl.fail("the label server did not end after its last connection")
    tl.finish()
tl.check_eq(server.returncode, 0, "server exit status")
(t,) = tl.read_traces(out).values()
accepts = {e["remote_port"]: e for e in t.of("conn", "accept")}
for (mode, lines, want), cport in zip(CASES, client_ports):
    a = accepts.get(cport)
    if not tl.check(a is not None, f"accepted connection from client port {cport}"):
        continue
    got = [e.get("label") for e in t.of("label", conn_id=a["conn_id"])]
    tl.check_eq(got, want, f"labels of {mode} {lines[0][:30]!r}")
tl.finish()
