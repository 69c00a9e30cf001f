#!/usr/bin/env python3
"""test_tls_labels.py - request labels of HTTPS servers.

On a TLS connection the request line is encrypted on the wire; the tracer
reads it from the plaintext OpenSSL's SSL_read/SSL_read_ex return.
1. Debian's nginx (SSL_read), a self-signed certificate made by openssl,
   three requests on one kept-alive connection: its LABELs are the three
   request lines in order, query string dropped.
1b. Debian's apache2 with mod_ssl, the same: mod_ssl reads through a BIO of
   its own (SSL_get_rfd is -1), so the line is taken on the TLS connection
   the thread last received encrypted bytes on.
2. Debian's python3 serving HTTPS with http.server and its ssl module
   (SSL_read_ex, from an extension module loaded RTLD_LOCAL: the tracer
   finds libssl there), one connection per request: one LABEL each.
Both servers' traces still hold the encrypted bytes as NET events (what the
replay moves), and no label comes from ciphertext.
3. A program that calls SSL_read by name with no libssl loaded reaches our
   wrapper, which aborts naming the function.
"""
import os
import signal
import subprocess

import tracerlib as tl

NGINX, PYTHON, OPENSSL, CURL = "/usr/sbin/nginx", "/usr/bin/python3", "/usr/bin/openssl", \
    "/usr/bin/curl"
APACHE = "/usr/sbin/apache2"
for prog in (NGINX, PYTHON, OPENSSL, CURL, APACHE):
    if not os.access(prog, os.X_OK):
        tl.fail(f"{prog} missing (tools/install-deps installs it)")
        tl.finish()
work = tl.scratch("tls")
os.chmod(work, 0o755)  # apache2's workers run as www-data
root = os.path.join(work, "www")
os.mkdir(root)
os.chmod(root, 0o755)
for name, text in (("a.txt", "alpha\n"), ("b.txt", "bravo\n")):
    with open(os.path.join(root, name), "w") as f:
        f.write(text)
    os.chmod(os.path.join(root, name), 0o644)
key, cert = os.path.join(work, "key.pem"), os.path.join(work, "cert.pem")
subprocess.run([OPENSSL, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
                "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1"], check=True,
               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
PATHS = ["/a.txt?session=42", "/b.txt", "/a.txt"]
LABELS = ["GET /a.txt", "GET /b.txt", "GET /a.txt"]


def fetch(port, paths):
    """curl, one invocation: a kept-alive connection when the server allows."""
    urls = [f"https://127.0.0.1:{port}{p}" for p in paths]
    r = subprocess.run([CURL, "-sk", "--max-time", "20"] + urls, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    tl.check_eq(r.stdout.decode(), "alpha\nbravo\nalpha\n", f"bodies fetched from port {port}")


def labels_per_connection(t):
    accepted = [e["conn_id"] for e in t.of("conn", "accept")]
    return [[e["label"] for e in t.of("label", conn_id=c)] for c in accepted]


def serve(what, out, argv, port):
    """Records argv (a server on port) under `preplay record` into out, runs
    fetch on it, stops it; returns the labels of each accepted connection
    that has some (a readiness probe sends nothing), over every trace, and
    the traces."""
    srv = tl.spawn(tl.record_args(out, argv), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if tl.check(tl.wait_port(port, 30, srv), f"{what} listening"):
        fetch(port, PATHS)
    srv.send_signal(signal.SIGTERM)
    tl.wait_end(srv, f"{what} under preplay record after SIGTERM", 30)
    traces = list(tl.read_traces(out, skip_types=("cpu", "file", "lock")).values())
    return [l for t in traces for l in labels_per_connection(t) if l], traces


def check_wire(t, what):
    recvd = sum(e["result"] for e in t.of("net", "recv") if e["result"] > 0)
    tl.check(recvd > 500, f"{what}: the encrypted bytes received are NET events ({recvd} B)")


# ---- 1. nginx -------------------------------------------------------------
port = tl.free_port()
conf = tl.write_nginx_conf(work, f"""    access_log off;
    server {{
        listen 127.0.0.1:{port} ssl;
        ssl_certificate {cert};
        ssl_certificate_key {key};
        root {root};
        keepalive_timeout 10;
    }}""", main="master_process off;")
got, (t,) = serve("nginx", os.path.join(work, "trace-nginx"), [NGINX, "-c", conf, "-p", work],
                  port)
tl.check_eq(got, [LABELS], "nginx: labels of the kept-alive TLS connection")
check_wire(t, "nginx")

# ---- 1b. apache2 with mod_ssl ---------------------------------------------
port = tl.free_port()
adir = os.path.join(work, "apache")
os.mkdir(adir)
conf = tl.write_apache_conf(adir, port, root, mpm="worker", modules=("ssl",),
                            extra=f"SSLEngine on\nSSLCertificateFile {cert}\n"
                                  f"SSLCertificateKeyFile {key}\nKeepAlive On")
got, _ = serve("apache2", os.path.join(work, "trace-apache"), [APACHE, "-DFOREGROUND", "-f", conf],
               port)
tl.check_eq(got, [LABELS], "apache2: labels of the kept-alive TLS connection")

# ---- 2. python3's http.server over TLS ----------------------------------
port = tl.free_port()
script = f"""
import http.server, ssl, functools
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain({cert!r}, {key!r})
handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory={root!r})
httpd = http.server.HTTPServer(("127.0.0.1", {port}), handler)
httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True)
httpd.serve_forever()
"""
got, (t,) = serve("python3 https server", os.path.join(work, "trace-python"),
                  [PYTHON, "-c", script], port)
tl.check_eq(got, [[l] for l in LABELS], "python3: one label per TLS connection")
check_wire(t, "python3")

# ---- 3. a wrapper whose library is not loaded ----------------------------
# tt_tls_missing finds SSL_read by name with no libssl in the process: our
# wrapper, which must abort naming the function rather than call nothing
rc, _, stderr = tl.record(os.path.join(work, "trace-missing"), [tl.helper("tt_tls_missing")])
tl.check(rc != 0 and "preplay: cannot find SSL_read, which the app called; aborting" in stderr,
         f"SSL_read without libssl: exit status {rc}, stderr {stderr.strip()[-300:]!r}")
tl.finish()
