#!/usr/bin/env python3
"""test_udp.py - UDP over IPv4 and IPv6 (Debian's python3 as the traced
server: its recvfrom/sendto are libc's). The server answers each datagram
on unconnected sockets, so every call names its peer; at the end it
connects a UDP socket to one client and sends on it. Three untraced
clients (two IPv4, one IPv6) send interleaved datagrams of known sizes.
In the trace, every datagram received and sent has the byte count the
client saw and a connection id whose CONN identity is that client's
4-tuple (server address and port, client address and port); one id per
(socket, client), the reply to a datagram on the id of its request; the
connected socket's identity names its peer; and the unconnected sockets
write their identity once, not at every call."""
import os
import socket
import subprocess

import tracerlib as tl

SERVER = r"""
import select, socket, sys
s4 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s4.bind(("127.0.0.1", 0))
s6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); s6.bind(("::1", 0))
print(s4.getsockname()[1], s6.getsockname()[1], flush=True)
first = None
while True:
    for s in select.select([s4, s6], [], [], 30)[0]:
        data, addr = s.recvfrom(4096)
        if data == b"quit":
            c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            c.connect(first)
            c.send(b"bye!!")
            sys.exit(0)
        first = first or addr
        s.sendto(data.upper() + b"+", addr)
"""
TRACE_PROTO_UDP = 2

work = tl.scratch("udp")
out = os.path.join(work, "trace")
srv = tl.spawn(tl.record_args(out, ["/usr/bin/python3", "-c", SERVER]), stdout=subprocess.PIPE,
               stderr=subprocess.PIPE)
line = srv.stdout.readline().split()
if not tl.check(len(line) == 2, f"server ports: {line}"):
    tl.finish()
p4, p6 = int(line[0]), int(line[1])
c1 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
c2 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
c3 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
for c in (c1, c2, c3):
    c.settimeout(20)
plan = [(c1, p4, 10), (c2, p4, 21), (c1, p4, 32), (c3, p6, 43), (c2, p4, 54), (c3, p6, 65),
        (c1, p4, 76)]
for c, port, n in plan:
    c.sendto(b"x" * n, ("::1" if c is c3 else "127.0.0.1", port))
    tl.check_eq(len(c.recv(4096)), n + 1, f"answer to a {n}-byte datagram")
c2.sendto(b"quit", ("127.0.0.1", p4))
tl.check_eq(c1.recv(4096), b"bye!!", "the connected socket's datagram")
tl.wait_end(srv, "the server", 30)
tl.check_eq(srv.returncode, 0, "preplay record's exit status")

(t,) = tl.read_traces(out).values()
idents = {}
for e in t.of("conn"):
    if e["proto"] == TRACE_PROTO_UDP and e["op"] in ("ident", "connect", "accept"):
        idents.setdefault(e["conn_id"], []).append(e)
client = {c1.getsockname()[1]: "c1", c2.getsockname()[1]: "c2", c3.getsockname()[1]: "c3"}
# (client, size) of every datagram the server received and sent, and the
# identity each one's connection id names
seen_in, seen_out, conn_of = [], [], {}
for e in t.of("net"):
    defs = idents.get(e["conn_id"], [])
    if not tl.check(len(defs) >= 1, f"net event {e} has a UDP identity"):
        continue
    d = defs[0]
    who = client.get(d["remote_port"])
    if not tl.check(who is not None, f"identity {d} names a client port"):
        continue
    fam, addr, port = (10, "0:0:0:0:0:0:0:1", p6) if who == "c3" else (2, "127.0.0.1", p4)
    if e["op"] == "send" and e["result"] == 5:
        tl.check_eq((d["op"], d["remote_addr"]), ("connect", "127.0.0.1"), "connected socket")
        continue
    tl.check_eq((d["family"], d["local_addr"], d["local_port"], d["remote_addr"]),
                (fam, addr, port, addr), f"4-tuple of {who}'s datagrams")
    (seen_in if e["op"] == "recv" else seen_out).append((who, e["result"]))
    conn_of.setdefault(who, set()).add(e["conn_id"])
want = [({c1: "c1", c2: "c2", c3: "c3"}[c], n) for c, _, n in plan]
tl.check_eq(seen_in, want + [("c2", 4)], "datagrams received (client, bytes)")
tl.check_eq(seen_out, [(w, n + 1) for w, n in want], "datagrams sent (client, bytes)")
tl.check_eq({w: len(ids) for w, ids in conn_of.items()}, {"c1": 1, "c2": 1, "c3": 1},
            "connection ids per client")
tl.check_eq(len(set.union(*conn_of.values())), 3, "distinct ids of the three clients")
# identities: the two bound sockets once each (no peer), one per client,
# the connected socket's
peerless = [d for defs in idents.values() for d in defs if d["remote_port"] == 0]
tl.check_eq(len(peerless), 2, "identities without a peer (one per unconnected socket)")
tl.check_eq(sum(len(v) for v in idents.values()), 2 + 3 + 1, "UDP identities written")
tl.finish()
