#!/usr/bin/python3
"""db_big.py - the long statements of the whole-statement test
(test-db-whole.sh), sent by real client libraries nobody here wrote:
MySQLdb (libmariadb: the tracer's C API wrappers) or pymysql (Python
speaks the protocol itself: the wire parser).

  db_big.py client MOD SOCKET OUT   sends an ~11 KB INSERT, an ~11 KB
      REPLACE and a ~2 MB INSERT (the saves of a PHP app that were recorded
      cut) on one connection and writes each statement's length and sha256
      to OUT, one "LEN SHA256 SHA256_OF_FIRST_4096_BYTES" line each
  db_big.py server MOD SOCKET PORT  a threaded HTTP server: POST /save does
      the same three statements (a fresh id each time); writes
      'listening PORT' when ready, stops on SIGTERM

MOD: mysqldb | pymysql. The tables (db bw): t (id INT AUTO_INCREMENT
PRIMARY KEY, v LONGTEXT), r (k INT PRIMARY KEY, v LONGTEXT)."""
import hashlib
import http.server
import signal
import sys
import threading


def connect(mod, sock):
    if mod == "mysqldb":
        import MySQLdb
        return MySQLdb.connect(unix_socket=sock, user="root", db="bw", autocommit=True)
    import pymysql
    return pymysql.connect(unix_socket=sock, user="root", database="bw", autocommit=True)


def statements(n):
    """Three statements, different on every n (so none repeats a string)."""
    filler = "".join(chr(ord("a") + (i * 7 + n) % 26) for i in range(64))
    return [
        "INSERT INTO t (v) VALUES ('%s')" % (filler * 171)[:10950],
        "REPLACE INTO r (k, v) VALUES (%d, '%s')" % (n % 3, (filler * 172)[:10990]),
        "INSERT INTO t (v) VALUES ('%s')" % (filler * 31250)[:1999960],
    ]


def client(mod, sock, out):
    c = connect(mod, sock)
    cur = c.cursor()
    with open(out, "w") as f:
        for sql in statements(0):
            cur.execute(sql)
            b = sql.encode()
            f.write("%d %s %s\n" % (len(b), hashlib.sha256(b).hexdigest(),
                                    hashlib.sha256(b[:4096]).hexdigest()))
    c.close()


def server(mod, sock, port):
    local = threading.local()
    counter = [0]
    lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            n = int(self.headers.get("Content-Length", 0))
            if n:
                self.rfile.read(n)
            if not getattr(local, "conn", None):
                local.conn = connect(mod, sock)
            with lock:
                counter[0] += 1
                k = counter[0]
            cur = local.conn.cursor()
            for sql in statements(k):
                cur.execute(sql)
            body = b"saved\n"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=httpd.shutdown).start())
    print("listening %d" % port, flush=True)
    httpd.serve_forever()


if __name__ == "__main__":
    if sys.argv[1] == "client":
        client(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        server(sys.argv[2], sys.argv[3], int(sys.argv[4]))
