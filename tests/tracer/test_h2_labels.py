#!/usr/bin/env python3
"""test_h2_labels.py - request labels of HTTP/2 servers.

HTTP/2 has no request line: a request's method and path are the :method
and :path fields of its HEADERS frame, HPACK-compressed against a dynamic
table the client builds over the whole connection, with Huffman-coded
strings. The tracer follows every byte such a connection receives
(tracer/preload/h2_label.c).
1. Debian's nginx with http2 on a plain port (prior knowledge, "h2c") and
   on a TLS port (ALPN "h2": the frames come from SSL_read's plaintext).
   Node.js's http2 client sends 40 requests on one connection, each with a
   header value of its own (300 bytes: the client's 4096-byte dynamic table
   evicts all along), paths with a query string and one longer than a
   label; curl sends one request per connection. Each connection's labels
   must be its requests' paths in order, query dropped, at most 95 bytes.
2. Node.js's own http2 server, recorded with --keep-query: queries kept.
3. A connection that opens with the preface and then sends an HPACK block
   the parser cannot decode gets no label, and the next connection is
   labelled again.
"""
import os
import signal
import socket
import subprocess

import tracerlib as tl

NGINX, NODE, CURL, OPENSSL = "/usr/sbin/nginx", "/usr/bin/node", "/usr/bin/curl", "/usr/bin/openssl"
for prog in (NGINX, NODE, CURL, OPENSSL):
    if not os.access(prog, os.X_OK):
        tl.fail(f"{prog} missing (tools/install-deps installs it)")
        tl.finish()
work = tl.scratch("h2")
os.chmod(work, 0o755)  # nginx's worker runs as nobody
root = os.path.join(work, "www")
os.mkdir(root)
os.chmod(root, 0o755)
for name in ("a.txt", "b.txt"):
    with open(os.path.join(root, name), "w") as f:
        f.write(name + "\n")
    os.chmod(os.path.join(root, name), 0o644)
key, cert = os.path.join(work, "key.pem"), os.path.join(work, "cert.pem")
subprocess.run([OPENSSL, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
                "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1"], check=True,
               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
os.chmod(key, 0o644)

PATHS = [("/" + "p" * 120) if i == 20 else "/a.txt" if i % 3 == 0 else
         f"/b.txt?session={i}" if i % 3 == 1 else f"/missing/{i}" for i in range(40)]


def label_of(path, keep_query=False):
    return ("GET " + (path if keep_query else path.split("?")[0]))[:95]


client = os.path.join(work, "client.js")
with open(client, "w") as f:
    f.write("""// one connection, the paths one after another, a header value of its own each
const http2 = require('http2');
const [url, ...paths] = process.argv.slice(2);
const session = http2.connect(url, {rejectUnauthorized: false});
session.on('error', (e) => { console.error(e.message); process.exit(1); });
const statuses = [];
let i = 0;
function next() {
  if (i >= paths.length) { session.close(); console.log(statuses.join(' ')); return; }
  const n = i++;
  const req = session.request({':path': paths[n], 'x-unique': n + '-' + 'v'.repeat(300)});
  req.on('response', (h) => statuses.push(h[':status']));
  req.on('error', (e) => { console.error(e.message); process.exit(1); });
  req.resume();
  req.on('end', next);
}
next();
""")


def run_client(url, paths):
    r = subprocess.run([NODE, client, url] + paths, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=60)
    tl.check_eq(r.returncode, 0, f"node http2 client against {url} ({r.stderr.strip()[-300:]})")
    return r.stdout.split()


def labels_per_connection(traces):
    """The labels of each accepted connection that has some (a readiness
    probe sends nothing), over every trace."""
    out = []
    for t in traces:
        for c in [e["conn_id"] for e in t.of("conn", "accept")]:
            labels = [e["label"] for e in t.of("label", conn_id=c)]
            if labels:
                out.append(labels)
    return out


def stop(srv, what):
    srv.send_signal(signal.SIGTERM)
    tl.wait_end(srv, f"{what} under preplay record after SIGTERM", 30)


# ---- 1. nginx, h2c and h2 over TLS -----------------------------------------
plain, tls = tl.free_port(), tl.free_port()
conf = tl.write_nginx_conf(work, f"""    access_log off;
    server {{ listen 127.0.0.1:{plain} http2; root {root}; }}
    server {{
        listen 127.0.0.1:{tls} ssl http2;
        ssl_certificate {cert};
        ssl_certificate_key {key};
        root {root};
    }}""", main="worker_processes 1;")
out = os.path.join(work, "trace-nginx")
srv = tl.spawn(tl.record_args(out, [NGINX, "-p", work, "-e", f"{work}/error.log", "-c", conf],
                              extra=("--only", "net")),
               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
if tl.check(tl.wait_port(plain, 30, srv) and tl.wait_port(tls, 30, srv), "nginx listening"):
    want_status = ["404" if p.startswith("/missing") or p.startswith("/pp") else "200"
                   for p in PATHS]
    tl.check_eq(run_client(f"http://127.0.0.1:{plain}", PATHS), want_status, "h2c statuses")
    tl.check_eq(run_client(f"https://127.0.0.1:{tls}", PATHS[:10]), want_status[:10],
                "h2 over TLS statuses")
    for args in (["--http2-prior-knowledge", f"http://127.0.0.1:{plain}/a.txt"],
                 ["-k", "--http2", f"https://127.0.0.1:{tls}/b.txt?x=1"]):
        r = subprocess.run([CURL, "-s", "-o", "/dev/null", "-w", "%{http_version}",
                            "--max-time", "20"] + args, stdout=subprocess.PIPE, text=True,
                           timeout=60)
        tl.check_eq(r.stdout, "2", f"curl {' '.join(args)}: HTTP version")
stop(srv, "nginx")
got = labels_per_connection(tl.read_traces(out).values())
tl.check_eq(got, [[label_of(p) for p in PATHS], [label_of(p) for p in PATHS[:10]],
                  ["GET /a.txt"], ["GET /b.txt"]],
            "nginx: labels per connection (h2c x40, TLS x10, curl h2c, curl TLS)")

# ---- 2. Node.js's http2 server, --keep-query; 3. a block it cannot decode ---
port = tl.free_port()
server_js = (f"const http2 = require('http2');"
             f"const s = http2.createServer((req, res) => res.end('ok'));"
             f"s.on('sessionError', () => {{}});"
             f"s.listen({port}, '127.0.0.1');"
             f"process.on('SIGTERM', () => process.exit(0));")
out = os.path.join(work, "trace-node")
srv = tl.spawn(tl.record_args(out, [NODE, "-e", server_js],
                              extra=("--only", "net", "--keep-query")),
               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
if tl.check(tl.wait_port(port, 30, srv), "node http2 server listening"):
    tl.check_eq(run_client(f"http://127.0.0.1:{port}", PATHS[:6]), ["200"] * 6,
                "node server statuses")
    # the preface, an empty SETTINGS, then HEADERS whose block is an indexed
    # field of index 0 (invalid); then a good connection
    bad = (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00" +
           b"\x00\x00\x01\x01\x05\x00\x00\x00\x01\x80")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(bad)
        s.settimeout(2)
        try:
            while s.recv(4096):
                pass
        except OSError:
            pass
    tl.check_eq(run_client(f"http://127.0.0.1:{port}", PATHS[:2]), ["200"] * 2,
                "node server statuses after the bad connection")
stop(srv, "node http2 server")
got = labels_per_connection(tl.read_traces(out).values())
tl.check_eq(got, [[label_of(p, True) for p in PATHS[:6]], [label_of(p, True) for p in PATHS[:2]]],
            "node: labels per connection with --keep-query (none for the undecodable block)")
tl.finish()
