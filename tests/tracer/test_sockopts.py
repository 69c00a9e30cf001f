#!/usr/bin/env python3
"""test_sockopts.py - socket options that change timing, as the replay needs
them per connection: a traced server (a small script run by Debian's
/usr/bin/python3) with two listeners, one with TCP_NODELAY set on the
listening socket (Linux hands it to accepted sockets; apache2 relies on
this) and one without; on the second, the accepted socket gets TCP_NODELAY
set explicitly and then TCP_CORK. The trace must carry, per accepted
connection (by the CONN accept's 4-tuple): NODELAY=1 for the inherited one
(an event at accept), nothing inherited for the other, and its explicit
NODELAY=1, CORK=1, SO_SNDBUF, SO_RCVBUF (the values asked for) and CORK=0
in that order, all on the right conn_id, each timed; the CPU time burnt
before CORK=0 is the CPU event right before its record; then a send with
MSG_MORE is flagged msg_more and the one after it is not, and the
send()/recv() records say nmsgs 0."""
import os
import socket
import subprocess

import tracerlib as tl

work = tl.scratch("sockopts")
out = os.path.join(work, "trace")
ports_file = os.path.join(work, "ports")
server_py = os.path.join(work, "server.py")
with open(server_py, "w") as f:
    f.write(r'''
import os, socket, sys, time
inherit = socket.socket(); inherit.bind(("127.0.0.1", 0))
inherit.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1); inherit.listen(4)
plain = socket.socket(); plain.bind(("127.0.0.1", 0)); plain.listen(4)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write("%d %d\n" % (inherit.getsockname()[1], plain.getsockname()[1]))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
a, _ = inherit.accept()
b, _ = plain.accept()
b.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
b.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1)
b.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 65536)
b.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32768)
burn = time.thread_time()
while time.thread_time() - burn < 0.02:
    pass
b.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 0)
b.send(b"head", socket.MSG_MORE)
for s in (a, b):
    s.sendall(b"x"); s.recv(1); s.close()
''')
server = tl.spawn(tl.record_args(out, ["/usr/bin/python3", server_py, ports_file]),
                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
ports = None
for _ in range(300):
    if os.path.exists(ports_file):
        ports = [int(x) for x in open(ports_file).read().split()]
        break
    if server.poll() is not None:
        break
    tl.time.sleep(0.1)
if not tl.check(ports is not None, "server wrote its ports"):
    tl.finish()
clients = []
for port in ports:
    c = socket.create_connection(("127.0.0.1", port), timeout=20)
    clients.append(c)
client_ports = [c.getsockname()[1] for c in clients]
for c in clients:
    c.recv(1); c.sendall(b"y"); c.close()
try:
    server.wait(timeout=60)
except tl.subprocess.TimeoutExpired:
    tl.fail("traced server did not finish")
    tl.finish()
tl.check_eq(server.returncode, 0, "record's exit status")

events = [e for t in tl.read_traces(out).values() for e in t.events]
accepts = {e["remote_port"]: e["conn_id"] for e in events
           if e["type"] == "conn" and e["op"] == "accept"}
inherited_conn = accepts.get(client_ports[0])
plain_conn = accepts.get(client_ports[1])
tl.check(inherited_conn and plain_conn, f"both accepts traced: {accepts} for {client_ports}")
opts = {}
for e in events:
    if e["type"] == "sockopt" and e.get("conn_id"):
        opts.setdefault(e["conn_id"], []).append((e["level"], e["name"], e["value"]))
TCP, NODELAY, CORK = socket.IPPROTO_TCP, socket.TCP_NODELAY, socket.TCP_CORK
tl.check_eq(opts.get(inherited_conn), [(TCP, NODELAY, 1)], "inherited connection's options")
SOCK = socket.SOL_SOCKET
tl.check_eq(opts.get(plain_conn), [(TCP, NODELAY, 1), (TCP, CORK, 1),
                                   (SOCK, socket.SO_SNDBUF, 65536), (SOCK, socket.SO_RCVBUF, 32768),
                                   (TCP, CORK, 0)],
            "plain connection's options (explicit only, in order, values as set)")
# An option is a timed event carrying the CPU time before it: the 20 ms
# burnt before CORK=0 (which sends what the cork held) is the CPU event right
# before that record, not one after it.
for trace in tl.read_traces(out).values():
    evs = trace.events
    for i, e in enumerate(evs):
        if not (e["type"] == "sockopt" and e.get("conn_id") == plain_conn):
            continue
        tl.check(e["dur"] > 0, f"SOCKOPT {e['name']}={e['value']} is timed (dur {e['dur']})")
        if (e["level"], e["name"], e["value"]) != (TCP, CORK, 0):
            continue
        before = next((x for x in reversed(evs[:i]) if x["tid"] == e["tid"]), None)
        after = next((x for x in evs[i + 1:] if x["tid"] == e["tid"]), None)
        tl.check(before is not None and before["type"] == "cpu" and before["dur"] >= 15_000_000,
                 f"the CPU burnt before CORK=0 comes right before it: {before}")
        tl.check(after is None or after["type"] != "cpu" or after["dur"] < 5_000_000,
                 f"no CPU of that burn after CORK=0: {after}")
TRACE_F_MSG_MORE = 0x8
sends = [(e["result"], bool(e["flags"] & TRACE_F_MSG_MORE)) for e in events
         if e["type"] == "net" and e["op"] == "send" and e["conn_id"] == plain_conn]
tl.check_eq(sends, [(4, True), (1, False)], "plain connection's sends (bytes, MSG_MORE)")
# send()/recv() are one message each: nmsgs counts sendmmsg/recvmmsg's only
tl.check_eq(sorted({(e["op"], e["nmsgs"]) for e in events
                    if e["type"] == "net" and e["conn_id"] == plain_conn}),
            [("recv", 0), ("send", 0)], "plain connection's NET records: (op, nmsgs)")
tl.finish()
