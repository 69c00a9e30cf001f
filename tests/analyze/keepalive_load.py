#!/usr/bin/python3
"""keepalive_load.py - a bounded concurrent HTTP/1.1 load for the event-loop
tests (test-analyze-event-loop.sh): CLIENTS threads, each on one keep-alive
connection to 127.0.0.1:PORT, sends ROUNDS x the given requests in turn and
reads each answer whole (Content-Length only: the servers under test must
send one). Raw sockets, so the bytes each request put on the wire and each
answer took off it are exact; they go to OUT, one line per request:
"client label sent received seconds status". Exits 1 when any answer is
not 200 or a connection had to be reopened; never retries, never runs
longer than --timeout seconds per request.
Usage: keepalive_load.py PORT CLIENTS ROUNDS OUT REQ... where REQ is
"GET /path" or "POST /path BODYBYTES"."""
import socket
import sys
import threading
import time


def build(port, spec):
    parts = spec.split()
    method, path = parts[0], parts[1]
    body = b""
    if method == "POST":
        n = int(parts[2])
        body = (b"order=" + b"x" * n)[:n]
    head = "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n" % (method, path, port)
    if method == "POST":
        head += "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\n" % len(body)
    return "%s %s" % (method, path.split("?")[0]), (head + "\r\n").encode() + body


def read_answer(sock):
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            raise IOError("connection closed in the headers")
        buf += chunk
    head, rest = buf.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    length = None
    for line in lines[1:]:
        k, _, v = line.partition(":")
        if k.strip().lower() == "content-length":
            length = int(v.strip())
        if k.strip().lower() == "transfer-encoding":
            raise IOError("chunked answer: the test needs Content-Length")
    if length is None:
        raise IOError("answer without Content-Length")
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise IOError("connection closed in the body")
        rest += chunk
    if len(rest) != length:
        raise IOError("more bytes than Content-Length (pipelining is not used)")
    return status, len(head) + 4 + length


def client(port, idx, rounds, reqs, out, errors, timeout):
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        for _ in range(rounds):
            for label, raw in reqs:
                t0 = time.monotonic()
                s.sendall(raw)
                status, got = read_answer(s)
                dt = time.monotonic() - t0
                out.append("%d\t%s\t%d\t%d\t%.6f\t%d" % (idx, label, len(raw), got, dt, status))
                if status != 200:
                    errors.append("client %d: %s answered %d" % (idx, label, status))
        s.close()
    except Exception as e:  # reported, the test fails
        errors.append("client %d: %s" % (idx, e))


def main():
    port, clients, rounds, path = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    reqs = [build(port, r) for r in sys.argv[5:]]
    out, errors = [], []
    ts = [threading.Thread(target=client, args=(port, c, rounds, reqs, out, errors, 20))
          for c in range(clients)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
    for e in errors:
        print("keepalive_load: " + e, file=sys.stderr)
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
