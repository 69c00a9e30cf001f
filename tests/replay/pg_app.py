#!/usr/bin/python3
"""tests/replay/pg_app.py HOST PORT DB LISTEN_PORT - a small two-tier app on
PostgreSQL for test-pg-replay.sh: a threaded http.server whose handlers
query the database, each of a pool of 4 threads with its own connections:

  GET /item?id=N   psycopg2 (libpq, simple Query): SELECT of one row
  POST /add?id=N   psycopg2: INSERT in a transaction (BEGIN ... COMMIT)
  GET /raw?id=N    our own protocol client (tests/tracer-db/pg_clients.py's
                   Raw): the extended protocol, a named statement prepared
                   once per connection, then Bind/Execute/Sync per request

Prints `listening` when ready; SIGTERM ends it."""
import concurrent.futures
import http.server
import os
import signal
import struct
import sys
import threading
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tracer-db"))
import pg_clients  # noqa: E402
import psycopg2  # noqa: E402

host, port, db, listen = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
local = threading.local()


def pg():
    if not hasattr(local, "conn"):
        local.conn = psycopg2.connect(host=host, port=port, user="preplay",
                                      password="preplay-pw", dbname=db)
    return local.conn


def raw():
    if not hasattr(local, "raw"):
        r = pg_clients.Raw(host, port)
        r.login(db)
        r.send(pg_clients.parse("get_score", "SELECT score FROM items WHERE id = $1", (23,)) +
               pg_clients.SYNC)
        r.until_ready()
        local.raw = r
    return local.raw


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def reply(self, body):
        b = body.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)

    def do_GET(self):
        u = urllib.parse.urlparse(self.path)
        n = int(urllib.parse.parse_qs(u.query)["id"][0])
        if u.path == "/item":
            cur = pg().cursor()
            cur.execute("SELECT name, score FROM items WHERE id = %s", (n,))
            row = cur.fetchone()
            pg().commit()
            self.reply(f"{row[0]} {row[1]}\n" if row else "none\n")
        elif u.path == "/raw":
            r = raw()
            r.send(pg_clients.bind("", "get_score", [struct.pack("!i", n)], (1,)) +
                   pg_clients.execute("") + pg_clients.SYNC)
            got = r.until_ready()
            self.reply(f"{got.count(b'D')} rows\n")
        else:
            self.send_error(404)

    def do_POST(self):
        u = urllib.parse.urlparse(self.path)
        n = int(urllib.parse.parse_qs(u.query)["id"][0])
        length = int(self.headers.get("Content-Length", "0"))
        self.rfile.read(length)
        cur = pg().cursor()
        cur.execute("INSERT INTO items (id, name, score) VALUES (%s, %s, %s)",
                    (n, f"item-{n}", n * 1.5))
        pg().commit()
        self.reply("added\n")

    def log_message(self, *args):
        pass


class Server(http.server.HTTPServer):
    """A pool of 4 threads that live as long as the server (each with its
    DB connections), as most servers keep theirs."""
    allow_reuse_address = True
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=4)

    def process_request(self, request, client_address):
        self.pool.submit(self.serve_one, request, client_address)

    def serve_one(self, request, client_address):
        try:
            self.finish_request(request, client_address)
        finally:
            self.shutdown_request(request)


srv = Server(("127.0.0.1", listen), Handler)
signal.signal(signal.SIGTERM, lambda *a: threading.Thread(target=srv.shutdown).start())
print("listening", flush=True)
srv.serve_forever()
