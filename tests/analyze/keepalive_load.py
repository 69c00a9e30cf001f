#!/usr/bin/python3
"""keepalive_load.py - a bounded concurrent HTTP/1.1 load for the event-loop
tests (test-analyze-event-loop.sh): CLIENTS threads, each on one keep-alive
connection to 127.0.0.1:PORT, sends ROUNDS x the given requests in turn and
reads each answer whole (Content-Length only: the servers under test must
send one). Raw sockets, so the bytes each request put on the wire and each
answer took off it are exact; they go to OUT, one line per request:
"client label sent received seconds status". Each client is a process of
its own, as users on other machines are: threads of one Python process
would take turns on its interpreter lock, and an answer that arrived while
another client parsed its own would be read late (measured on nginx: a
static file's median 0.1 ms read as 0.3 ms). Exits 1 when any answer is
not 200 or a connection had to be reopened; never retries, never runs
longer than --timeout seconds per request.
Usage: keepalive_load.py PORT CLIENTS ROUNDS OUT REQ... where REQ is
"GET /path" or "POST /path BODYBYTES".

keepalive_load.py --replay TOKEN BLOCKS_TSV [--skip N] [--offset K] PORT CLIENTS ROUNDS OUT REQ...:
the same clients, rounds and timing against a front-end `preplay replay`
(formats/REPLAY-PROTOCOL.md) instead of the real server, so a replay and
the real stack are measured by one client under one load: client c sends
the front-end blocks of the recorded sessions c, c + CLIENTS, ... (the R
lines of `preplay analyze --blocks`; sessions in the order their first
request arrived, each session's blocks in arrival order, cycled), ROUNDS x
len(REQ) of them, each with its recorded request and response sizes and
labelled with its block's label. Status is 200 for a whole answer.
Options right after BLOCKS_TSV: --skip N leaves out the first N recorded
sessions (a recording's first run meets its stack cold: in
test-analyze-event-loop.sh the first GET /item.php of each of its
sessions took 2.5 ms in php-fpm (median of 60; quartiles 1.3-4.9) against
1.0 ms (0.9-1.6) in the next run's,
and replaying it is not a replay of a warm stack's new connection, which
is what the real runs measure after their warm-up round); --offset K
starts client c at session K + c of the rest (so successive replay runs
replay different recorded sessions, as successive real runs are
different samples)."""
import os
import socket
import struct
import sys
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


def replay_requests(token, tsv, clients, count, skip=0, offset=0):
    """Per client, `count` (label, raw bytes, response bytes) from the
    recorded sessions' front-end blocks (see the usage)."""
    blocks, sessions = {}, {}
    for line in open(tsv):
        p = line.rstrip("\n").split("\t")
        if p[0] == "B":
            blocks[int(p[1])] = (p[9], int(p[14]), int(p[15]))
        elif p[0] == "R":
            sessions.setdefault(int(p[3]), []).append((int(p[2]), int(p[1])))
    order = sorted(sorted(v) for v in sessions.values())[skip:]
    if len(order) < clients:
        raise SystemExit("keepalive_load: %s has %d sessions after the first %d, %d clients" % (
            tsv, len(order), skip, clients))
    order = order[offset % len(order):] + order[:offset % len(order)]
    per = []
    for c in range(clients):
        seq = [b for k in range(c, len(order), clients) for _, b in order[k]]
        reqs = []
        for i in range(count):
            b = seq[i % len(seq)]
            label, req, resp = blocks[b]
            head = struct.pack("<IIQII", 0x31505250, b, int(token, 16), req, resp)
            reqs.append((label, head + bytes(req), resp))
        per.append(reqs)
    return per


def read_exact(sock, n):
    got = 0
    while got < n:
        chunk = sock.recv(min(65536, n - got))
        if not chunk:
            raise IOError("the replayer closed the connection")
        got += len(chunk)
    return 200, got


def client(port, idx, rounds, reqs, out, errors, timeout):
    """reqs: (label, raw) sent `rounds` times, HTTP answers; or, when its
    items are (label, raw, response bytes), each sent once, raw answers."""
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        for _ in range(rounds):
            for r in reqs:
                label, raw = r[0], r[1]
                t0 = time.monotonic()
                s.sendall(raw)
                status, got = read_exact(s, r[2]) if len(r) > 2 else read_answer(s)
                dt = time.monotonic() - t0
                out.append("%d\t%s\t%d\t%d\t%.6f\t%d" % (idx, label, len(raw), got, dt, status))
                if status != 200:
                    errors.append("client %d: %s answered %d" % (idx, label, status))
        s.close()
    except Exception as e:  # reported, the test fails
        errors.append("client %d: %s" % (idx, e))


def main():
    args = sys.argv[1:]
    replay, skip, offset = None, 0, 0
    if args[0] == "--replay":
        replay, args = args[1:3], args[3:]
        while args[0] in ("--skip", "--offset"):
            if args[0] == "--skip":
                skip = int(args[1])
            else:
                offset = int(args[1])
            args = args[2:]
    port, clients, rounds, path = int(args[0]), int(args[1]), int(args[2]), args[3]
    reqs = [build(port, r) for r in args[4:]]
    if replay:
        per = replay_requests(replay[0], replay[1], clients, rounds * len(reqs), skip, offset)
        work = [(1, per[c]) for c in range(clients)]
    else:
        work = [(rounds, reqs)] * clients
    out, errors = [], []
    kids = []
    for c in range(clients):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the client: its lines, then its errors, on the pipe
            os.close(r)
            mine, bad = [], []
            client(port, c, work[c][0], work[c][1], mine, bad, 20)
            text = "\n".join(mine) + "\0" + "\n".join(bad)
            with os.fdopen(w, "w") as f:
                f.write(text)
            os._exit(0)
        os.close(w)
        kids.append((pid, r))
    for c, (pid, r) in enumerate(kids):
        with os.fdopen(r) as f:
            text = f.read()
        _, status = os.waitpid(pid, 0)
        lines, _, bad = text.partition("\0")
        out += [x for x in lines.split("\n") if x]
        errors += [x for x in bad.split("\n") if x]
        if status != 0 or "\0" not in text:
            errors.append("client %d: exited with status %d" % (c, status))
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
    for e in errors:
        print("keepalive_load: " + e, file=sys.stderr)
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
