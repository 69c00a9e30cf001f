#!/usr/bin/env python3
"""netrate.py - measures TCP throughput for the tools/emulate test, bounded
in bytes and time (30 s socket timeouts).

  netrate.py serve PORTFILE    one connection at a time, two of them: the
                               first uploads (we read N bytes, answer 1 byte),
                               the second downloads N bytes from us
  netrate.py up HOST PORT N    prints upload Mbit/s
  netrate.py down HOST PORT N  prints download Mbit/s
"""
import socket, sys, time

def serve(portfile):
    s = socket.socket()
    s.bind(("0.0.0.0", 0))
    s.listen(2)
    s.settimeout(60)
    with open(portfile + ".tmp", "w") as f:
        f.write(str(s.getsockname()[1]))
    import os
    os.rename(portfile + ".tmp", portfile)
    for mode in ("up", "down"):
        c, _ = s.accept()
        c.settimeout(30)
        n = int(c.recv(32).split(b"\n")[0])
        c.sendall(b"r")
        if mode == "up":
            got = 0
            while got < n:
                b = c.recv(1 << 16)
                if not b:
                    sys.exit("serve: upload ended early")
                got += len(b)
            c.sendall(b"k")
        else:
            chunk = b"\xa5" * (1 << 16)
            left = n
            while left:
                left -= c.send(chunk[: min(left, len(chunk))])
        c.close()

def client(mode, host, port, n):
    c = socket.create_connection((host, int(port)), timeout=30)
    c.sendall(b"%d\n" % n)
    if c.recv(1) != b"r":
        sys.exit("client: no ready byte")
    if mode == "up":
        chunk = b"\x5a" * (1 << 16)
        t0 = time.monotonic()
        left = n
        while left:
            left -= c.send(chunk[: min(left, len(chunk))])
        if c.recv(1) != b"k":
            sys.exit("client: no ack")
        dt = time.monotonic() - t0
    else:
        got, t0 = 0, None
        while got < n:
            b = c.recv(1 << 16)
            if not b:
                sys.exit("client: download ended early")
            if t0 is None:
                t0 = time.monotonic()
            got += len(b)
        dt = time.monotonic() - t0
    print("%.3f" % (n * 8 / dt / 1e6))

if sys.argv[1] == "serve":
    serve(sys.argv[2])
else:
    client(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))
