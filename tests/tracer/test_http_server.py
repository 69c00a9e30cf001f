#!/usr/bin/env python3
"""test_http_server.py - Debian's `python3 -m http.server` (threaded, HTTP/1.1
keep-alive), then a Node.js static file server (Debian's nodejs: llhttp over
libuv, fs.readFile on libuv's worker threads), each serving known files
under a bounded load of 20 requests, some
on one keep-alive connection and some on new connections: per connection,
the bytes the trace says the server received and sent equal what the
client sent and received; the CONN 4-tuple is the client's; every request
has its LABEL ("GET /file.txt", the query string dropped); the served
files' reads add up to their sizes. Then, recorded with --keep-query, the
labels keep the query string."""
import os
import signal
import socket
import subprocess
import time

import tracerlib as tl

work = tl.scratch("httpserver")
root = os.path.join(work, "www")
os.mkdir(root)
files = {"file.txt": b"hello preplay\n" * 300, "big.bin": os.urandom(200000),
         "empty.txt": b""}
for name, body in files.items():
    with open(os.path.join(root, name), "wb") as f:
        f.write(body)
# A static file server in Node.js (llhttp over libuv's sockets; the files
# read by fs.readFile on libuv's worker threads), beside Python's.
NODE_SERVER = r"""
const http = require("http"), fs = require("fs"), path = require("path");
const [root, port] = process.argv.slice(2);
http.createServer((req, res) => {
    const name = path.basename(new URL(req.url, "http://host").pathname);
    fs.readFile(path.join(root, name), (err, body) => {
        if (err) {
            res.writeHead(404, {"Content-Length": 0});
            res.end();
            return;
        }
        res.writeHead(200, {"Content-Length": body.length});
        res.end(body);
    });
}).on("connection", (socket) => {
    // the client's shutdown ends the connection now, not after the
    // keep-alive timeout (5 s) node would otherwise wait for
    socket.on("end", () => socket.end());
}).listen(Number(port), "127.0.0.1");
"""


def serve_and_check(name, command, component, several_threads, extra=()):
    """Records `command` (a server taking its port last), sends the 20
    requests and checks the trace; `several_threads`: requests are handled
    on more than one thread; `extra`: more `preplay record` options."""
    out = os.path.join(work, "trace-" + name)
    port = tl.free_port()
    server = tl.spawn(tl.record_args(out, command + [str(port)], component=component,
                                     extra=extra),
                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if not tl.check(tl.wait_port(port, 30, server), f"{name} listening"):
        return
    conns = []  # (client port, bytes sent, bytes received, [paths])
    requests = [["file.txt", "big.bin", "file.txt", "empty.txt", "big.bin"],  # keep-alive
                ["big.bin", "file.txt", "file.txt", "file.txt", "empty.txt"]]  # keep-alive
    requests += [[p] for p in ["file.txt", "big.bin", "empty.txt", "file.txt", "big.bin",
                               "file.txt", "file.txt", "big.bin", "empty.txt", "file.txt"]]
    for paths in requests:
        sock = socket.create_connection(("127.0.0.1", port), timeout=20)
        state = {"sent": 0, "received": 0, "pending": b""}
        for path in paths:
            tl.check(tl.http_get(sock, path, state) == files[path], f"{name}: body of /{path}")
        sock.shutdown(socket.SHUT_WR)
        while True:  # the server closes its side after our shutdown: drain to EOF
            chunk = sock.recv(65536)
            if not chunk:
                break
            state["received"] += len(chunk)
        conns.append((sock.getsockname()[1], state["sent"], state["received"], paths))
        sock.close()
    nreq = sum(len(p) for _, _, _, p in conns)
    tl.check_eq(nreq, 20, f"{name}: requests sent")
    # the server closes the socket just after the client saw EOF: give it
    # a moment before stopping the server, so the close is part of the run
    time.sleep(0.5)
    server.send_signal(signal.SIGINT)
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        tl.fail(f"preplay record with {name} did not end after SIGINT")
        return
    traces = tl.read_traces(out)
    tl.check_eq(len(traces), 1, f"{name}: trace files (the server does not fork)")
    (t,) = traces.values()
    tl.check_eq(t.header["component"], component, f"{name}: component name")
    tl.check(os.path.basename(t.path).startswith(component + "-"),
             f"{name}: file named after the component: {t.path}")
    accepts = {e["remote_port"]: e for e in t.of("conn", "accept")}
    threads = {e["tid"] for e in t.events if e["type"] == "net"}
    if several_threads:
        tl.check(len(threads) >= 2, f"{name}: requests handled on several threads: {len(threads)}")
    for cport, sent, received, paths in conns:
        a = accepts.get(cport)
        if not tl.check(a is not None, f"{name}: accepted connection from client port {cport}"):
            continue
        tl.check_eq((a["local_addr"], a["local_port"], a["remote_addr"]),
                    ("127.0.0.1", port, "127.0.0.1"), f"{name}: 4-tuple of connection {cport}")
        cid = a["conn_id"]
        net = t.of("net", conn_id=cid)
        got_in = sum(e["result"] for e in net if e["op"] == "recv" and e["result"] > 0)
        got_out = sum(e["result"] for e in net if e["op"] == "send" and e["result"] > 0)
        tl.check_eq(got_in, sent, f"{name}: bytes received by the server on connection {cport}")
        tl.check_eq(got_out, received, f"{name}: bytes sent by the server on connection {cport}")
        labels = [e.get("label") for e in t.of("label", conn_id=cid)]
        tl.check_eq(labels, ["GET /" + p for p in paths], f"{name}: labels on connection {cport}")
        tl.check(any(e["conn_id"] == cid for e in t.of("conn", "close")) or
                 any(e["conn_id"] == cid for e in t.of("conn", "shutdown")),
                 f"{name}: connection {cport} closed in the trace")
    for cport in tl.probe_ports:
        a = accepts.get(cport)
        if a:
            tl.check_eq([e["result"] for e in t.of("net", conn_id=a["conn_id"])
                         if e["result"] > 0], [],
                        f"{name}: no bytes on the readiness probe's connection")
    tl.check_eq(len(accepts), len(conns) + len([p for p in tl.probe_ports if p in accepts]),
                f"{name}: accepted connections")
    for fname, body in files.items():
        opens = [e for e in t.of("file", "open") if e.get("path", "").endswith("/" + fname) and
                 e["result"] >= 0]
        served = sum(1 for _, _, _, p in conns for x in p if x == fname)
        tl.check_eq(len(opens), served, f"{name}: opens of {fname}")
        if opens:
            ino = opens[0]["ino"]
            tl.check(all(e["file_size"] == len(body) for e in opens),
                     f"{name}: size of {fname} at open")
            read = sum(e["result"] for e in tl.file_events(t, ino, {"read", "pread"})
                       if e["result"] > 0)
            tl.check_eq(read, served * len(body), f"{name}: bytes read from {fname}")


serve_and_check("http.server", ["/usr/bin/python3", "-m", "http.server", "--bind", "127.0.0.1",
                                "--protocol", "HTTP/1.1", "--directory", root], "web", True)
node_script = os.path.join(work, "server.js")
with open(node_script, "w") as f:
    f.write(NODE_SERVER)
# --only file,net: node's start-up alone takes ~800 000 uncontended read
# locks (its OpenSSL 3 setting up key decoders: CRYPTO_THREAD_read_lock under
# OSSL_DECODER_CTX_new_for_pkey, by --stacks), which this test does not look
# at and which would take Python a minute to read
serve_and_check("node", ["node", node_script, root], "node-web", False,
                extra=["--only", "file,net"])

# --keep-query: the labels keep the query string
out_q = os.path.join(work, "trace-query")
port = tl.free_port()
server = tl.spawn(tl.record_args(out_q, ["/usr/bin/python3", "-m", "http.server", "--bind",
                                         "127.0.0.1", "--protocol", "HTTP/1.1", "--directory",
                                         root, str(port)], extra=["--keep-query"]),
                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
if tl.check(tl.wait_port(port, 30, server), "http.server (--keep-query) listening"):
    sock = socket.create_connection(("127.0.0.1", port), timeout=20)
    state = {"sent": 0, "received": 0, "pending": b""}
    for path in ("file.txt", "empty.txt"):
        tl.check(tl.http_get(sock, path, state) == files[path], f"--keep-query: body of /{path}")
    sock.close()
    time.sleep(0.5)
    server.send_signal(signal.SIGINT)
    server.wait(timeout=30)
    (t,) = tl.read_traces(out_q).values()
    tl.check_eq([e.get("label") for e in t.of("label")],
                ["GET /file.txt?x=1", "GET /empty.txt?x=1"], "--keep-query: labels")
tl.finish()
