#!/usr/bin/env python3
"""test_unix.py - AF_UNIX stream connections (Debian's python3 as the traced
server): the accepted connection's CONN identity carries the server-side
socket's inode and its peer's (the untraced client's socket inode, which
the client reads with fstat), proto unix_stream, and the bytes the server
received and sent on it are what the client sent and received."""
import os
import socket
import subprocess

import tracerlib as tl

SERVER = r"""
import os, socket, sys
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); srv.bind(sys.argv[1]); srv.listen(1)
print("ready", flush=True)
conn, _ = srv.accept()
print(os.fstat(conn.fileno()).st_ino, flush=True)
got = 0
while got < 100:
    got += len(conn.recv(4096))
conn.sendall(b"y" * 50)
conn.close()
"""
TRACE_PROTO_UNIX_STREAM = 3

work = tl.scratch("unix")
out = os.path.join(work, "trace")
path = os.path.join(work, "sock")
srv = tl.spawn(tl.record_args(out, ["/usr/bin/python3", "-c", SERVER, path]),
               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
if not tl.check(srv.stdout.readline().strip() == b"ready", "server ready"):
    tl.finish()
c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
c.settimeout(20)
c.connect(path)
client_ino = os.fstat(c.fileno()).st_ino
server_ino = int(srv.stdout.readline())
c.sendall(b"x" * 60)
c.sendall(b"x" * 40)
got = b""
while len(got) < 50:
    chunk = c.recv(4096)
    if not chunk:
        break
    got += chunk
tl.check_eq(len(got), 50, "bytes the client received")
c.close()
tl.wait_end(srv, "the server", 30)
tl.check_eq(srv.returncode, 0, "preplay record's exit status")
(t,) = tl.read_traces(out).values()
accepts = t.of("conn", "accept")
if tl.check(len(accepts) == 1, f"one accept: {accepts}"):
    a = accepts[0]
    tl.check_eq((a["proto"], a["unix_inode"], a["unix_peer_inode"]),
                (TRACE_PROTO_UNIX_STREAM, server_ino, client_ino),
                "accepted connection's (proto, inode, peer inode)")
    net = t.of("net", conn_id=a["conn_id"])
    tl.check_eq(sum(e["result"] for e in net if e["op"] == "recv" and e["result"] > 0), 100,
                "bytes the server received")
    tl.check_eq(sum(e["result"] for e in net if e["op"] == "send" and e["result"] > 0), 50,
                "bytes the server sent")
tl.finish()
