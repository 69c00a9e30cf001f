#!/usr/bin/python3
"""backend.py - the threaded Python HTTP/1.1 backend of the apache2 test
(test-analyze-apache.sh): http.server.ThreadingHTTPServer with keep-alive
(protocol_version HTTP/1.1, Content-Length on every answer), a thread per
connection, serving a few paths with bodies known to the test:
/small (64 bytes), /medium (20000 bytes), /large (200000 bytes), /echo
(POST: the request body back). Bodies are deterministic: body(path, n).
With --fork, a process per connection instead (socketserver.ForkingMixIn:
the parent accepts, the child it forks answers); with --nodelay, answers
go out with TCP_NODELAY (no Nagle wait between headers and body).
Usage: backend.py PORT [--fork | --nodelay]. Writes 'listening PORT' on stdout when ready; stops
on SIGTERM. Never logs per request (the test counts events, not log lines)."""
import http.server
import signal
import socketserver
import sys


def body(path, n):
    seed = (path.encode() + b"-") * (n // (len(path) + 1) + 1)
    return seed[:n]


SIZES = {"/small": 64, "/medium": 20000, "/large": 200000}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def answer(self, data):
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        n = SIZES.get(self.path)
        if n is None:
            self.send_error(404)
            return
        self.answer(body(self.path, n))

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        self.answer(self.rfile.read(length))

    def log_message(self, fmt, *args):
        pass


class ForkingHTTPServer(socketserver.ForkingMixIn, http.server.HTTPServer):
    """The parent accepts; a child process per connection answers."""


def main():
    port = int(sys.argv[1])
    if sys.argv[2:] == ["--nodelay"]:
        Handler.disable_nagle_algorithm = True
    if sys.argv[2:] == ["--fork"]:
        srv = ForkingHTTPServer(("127.0.0.1", port), Handler)
    else:
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        srv.daemon_threads = True
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    print("listening", port, flush=True)
    try:
        srv.serve_forever(poll_interval=0.2)
    finally:
        srv.server_close()


if __name__ == "__main__":
    main()
