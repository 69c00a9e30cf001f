#!/usr/bin/env python3
"""test_ports.py - `record --port`: only TCP/UDP traffic with a listed port
(local or peer) is traced. Debian's python3, traced with --port for one
of its two listening ports (the listed one IPv6, the other IPv4), one UDP
peer and one outgoing connection, serves a client on each listener
(TCP_NODELAY set on each accepted connection), sends a datagram from an
unconnected UDP socket to a listed and to an unlisted peer, connects out
(non-blocking) to a listed and to an unlisted port, and talks over an
AF_UNIX socketpair. The trace must hold the CONN
identities, bytes, SOCKOPT and close records of exactly the listed
connections and of the AF_UNIX pair, with the byte counts both sides saw,
and nothing of the others. Then the option's errors: a port out of range,
a 17th port."""
import os
import socket
import subprocess

import tracerlib as tl

SERVER = r"""
import select, socket, sys
a_port, b_port, udp_in, udp_out, tcp_in, tcp_out = map(int, sys.argv[1:7])
listeners = []
for family, addr, port in ((socket.AF_INET6, "::1", a_port), (socket.AF_INET, "127.0.0.1", b_port)):
    s = socket.socket(family)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    s.listen(4)
    listeners.append(s)
print("ready", flush=True)
for s, size in zip(listeners, (1000, 2000)):
    c, _ = s.accept()
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    got = b""
    while not got.endswith(b"\n"):
        got += c.recv(4096)
    c.sendall(b"r" * size)
    c.close()
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.sendto(b"x" * 100, ("127.0.0.1", udp_in))
u.sendto(b"y" * 200, ("127.0.0.1", udp_out))
for port, size in ((tcp_in, 300), (tcp_out, 400)):
    c = socket.socket()
    c.setblocking(False)  # the filter decides on the address connected to
    c.connect_ex(("127.0.0.1", port))
    select.select([], [c], [], 20)
    c.setblocking(True)
    c.sendall(b"o" * size)
    c.close()
p, q = socket.socketpair()
p.sendall(b"u" * 50)
q.recv(4096)
print("done", flush=True)
"""

# the untraced peers: UDP receivers and TCP listeners the server reaches out to
udp_in, udp_out = (socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(2))
tcp_in, tcp_out = (socket.socket() for _ in range(2))
for s in (udp_in, udp_out, tcp_in, tcp_out):
    s.bind(("127.0.0.1", 0))
    s.settimeout(20)
for s in (tcp_in, tcp_out):
    s.listen(4)


def free_port(family=socket.AF_INET, addr="127.0.0.1"):
    with socket.socket(family) as s:
        s.bind((addr, 0))
        return s.getsockname()[1]


def receive(sock, size):
    """Up to size bytes from sock (fewer when it closes first)."""
    got = b""
    while len(got) < size:
        chunk = sock.recv(65536)
        if not chunk:
            break
        got += chunk
    return got


a_port, b_port = free_port(socket.AF_INET6, "::1"), free_port()
ports = [s.getsockname()[1] for s in (udp_in, udp_out, tcp_in, tcp_out)]
listed = [a_port, ports[0], ports[2]]

work = tl.scratch("ports")
out = os.path.join(work, "trace")
extra = [arg for port in listed for arg in ("--port", str(port))]
server = tl.spawn(tl.record_args(out, ["/usr/bin/python3", "-c", SERVER, str(a_port), str(b_port)] +
                                 [str(p) for p in ports], extra=extra),
                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
line = server.stdout.readline()
if not tl.check(line.strip() == b"ready", f"server's ready line: {line!r}"):
    tl.finish()
client_ports = {}
for addr, port, size in (("::1", a_port, 1000), ("127.0.0.1", b_port, 2000)):
    c = socket.create_connection((addr, port), timeout=20)
    client_ports[port] = c.getsockname()[1]
    c.sendall(b"q" * 20 + b"\n")
    tl.check_eq(len(receive(c, size)), size, f"bytes the client of port {port} received")
    c.close()
for s, size in ((udp_in, 100), (udp_out, 200)):
    tl.check_eq(len(s.recv(4096)), size, "datagram received")
for s, size in ((tcp_in, 300), (tcp_out, 400)):
    c, _ = s.accept()
    c.settimeout(20)
    tl.check_eq(len(receive(c, size)), size, "bytes the server sent out")
    c.close()
_, err = tl.wait_end(server, "the traced server", 30)
tl.check_eq(server.returncode, 0, f"record's exit status ({err.decode()[-300:]})")

(t,) = tl.read_traces(out).values()
conns = {}
for e in t.of("conn"):
    if e.get("op") in ("accept", "connect", "ident"):
        conns.setdefault(e["conn_id"], e)


def conn_with(local=None, remote=None):
    return [cid for cid, e in conns.items()
            if (local is None or e.get("local_port") == local) and
            (remote is None or e.get("remote_port") == remote)]


def net_bytes(cid, op):
    return sum(e["result"] for e in t.of("net", op, conn_id=cid) if e["result"] > 0)


# the listed listener's connection: identity, bytes both ways, TCP_NODELAY, close
a_conns = conn_with(local=a_port)
if tl.check(len(a_conns) == 1, f"one CONN for listed port {a_port} (got {a_conns})"):
    a_conn = a_conns[0]
    tl.check_eq(conns[a_conn]["remote_port"], client_ports[a_port], "its peer port")
    tl.check_eq(conns[a_conn]["family"], socket.AF_INET6, "its family")
    tl.check_eq(net_bytes(a_conn, "recv"), 21, "bytes received on it")
    tl.check_eq(net_bytes(a_conn, "send"), 1000, "bytes sent on it")
    tl.check_eq([(e["level"], e["name"], e["value"]) for e in t.of("sockopt", conn_id=a_conn)],
                [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)], "its SOCKOPT records")
    tl.check_eq(len(t.of("conn", "close", conn_id=a_conn)), 1, "its close")
# the listed UDP peer and outgoing connection
udp = conn_with(remote=ports[0])
if tl.check(len(udp) == 1, f"one CONN for the listed UDP peer {ports[0]} (got {udp})"):
    tl.check_eq(net_bytes(udp[0], "send"), 100, "bytes of the datagram to it")
out_conn = conn_with(remote=ports[2])
if tl.check(len(out_conn) == 1, f"one CONN for the listed outgoing port {ports[2]} (got {out_conn})"):
    tl.check_eq(net_bytes(out_conn[0], "send"), 300, "bytes sent to it")
    tl.check_eq(len(t.of("conn", "connect", conn_id=out_conn[0])), 1, "its CONNECT record")
    tl.check_eq(len(t.of("conn", "close", conn_id=out_conn[0])), 1, "its close")
# the AF_UNIX pair is never filtered
unix = [cid for cid, e in conns.items() if e.get("family") == socket.AF_UNIX]
tl.check_eq(len(unix), 2, "CONNs of the AF_UNIX pair")
tl.check_eq(sum(net_bytes(c, "send") for c in unix), 50, "bytes sent over the AF_UNIX pair")
tl.check_eq(sum(net_bytes(c, "recv") for c in unix), 50, "bytes received over it")
# nothing of the unlisted ones
for port in (b_port, ports[1], ports[3]):
    tl.check_eq(conn_with(local=port) + conn_with(remote=port), [], f"CONNs of unlisted port {port}")
traced = set(conns)
strays = [e for e in t.events if e["type"] in ("net", "sockopt", "conn") and e.get("conn_id") and
          e["conn_id"] not in traced]
tl.check_eq(strays[:3], [], "records of connections without an identity")
sent = sum(net_bytes(c, "send") for c in traced)
tl.check_eq(sent, 1000 + 100 + 300 + 50, "bytes sent in the whole trace")

# errors: one line naming the value, exit 2
for bad, want in ((["--port", "70000"], "bad --port '70000'"),
                  (["--port", "0"], "bad --port '0'"),
                  ([a for p in range(1, 18) for a in ("--port", str(p))], "bad --port '17'")):
    rc, _, err = tl.record(os.path.join(work, "bad"), ["/bin/true"], extra=bad)
    tl.check_eq(rc, 2, f"exit status for {bad[-2:]}")
    tl.check(want in err and err.count("\n") == 1, f"one line naming the value: {err!r}")
tl.finish()
