#!/usr/bin/python3
"""tests/tracer-db/pg_clients.py MODE HOST PORT TABLE - PostgreSQL clients
test-pg.sh records: each runs known statements against a private server
(pg-start.sh: user preplay, password preplay-pw) on table TABLE, so
check-pg-trace.py can require exactly their DB events.

  psycopg2   /usr/bin/python3's psycopg2 (libpq; parameters are
             interpolated by psycopg2 into the text: simple Query only),
             with a syntax error, COPY in and out, LISTEN/NOTIFY and a
             multi-statement query
  raw        our own frontend speaking the protocol through a socket:
             the extended protocol with a named statement and portal,
             binary and NULL parameters, Describe, Close, a batch whose
             Parse fails (what follows up to Sync is skipped by the
             server), a message split over sends, a long statement in
             several sends, an empty query and an asynchronous
             NotificationResponse in the middle of an answer.
  late       the raw frontend as Rails' PostgreSQL adapter talks: a
             statement prepared, then (TABLE is a directory: TABLE/ready
             made, TABLE/go awaited: the test turns tracing on between)
             40 statements prepared by name (Parse, Sync) and each then
             executed by its name (Bind, Execute, Sync), so the recorder
             meets the connection mid-conversation and must remember
             more than 16 statements; then, 0.3 s later, a SELECT that
             returns no row (its FETCH must take no time).

HOST is a socket directory (starts with /) or an IP address."""
import hashlib
import base64
import hmac
import os
import socket
import struct
import sys


def psycopg2_client(host, port, table):
    import psycopg2

    conn = psycopg2.connect(host=host, port=port, user="preplay", password="preplay-pw",
                            dbname="postgres")
    conn.autocommit = True
    cur = conn.cursor()
    cur.execute(f"DROP TABLE IF EXISTS {table}")
    cur.execute(f"CREATE TABLE {table} (id int, name text, score float8)")
    cur.execute(f"INSERT INTO {table} VALUES (%s, %s, %s)", (1, "abc", 2.5))
    cur.execute(f"INSERT INTO {table} VALUES (%s, %s, %s)", (2, "O'Brien", None))
    cur.execute(f"UPDATE {table} SET score = 1 WHERE id <= %s", (2,))
    cur.execute(f"SELECT id, name FROM {table} ORDER BY id")
    assert cur.fetchall() == [(1, "abc"), (2, "O'Brien")]
    try:
        cur.execute("SELEC 1")
        raise SystemExit("the syntax error was accepted")
    except psycopg2.errors.SyntaxError:
        pass
    import io
    cur.copy_expert(f"COPY {table} FROM STDIN", io.StringIO("3\tc\t1.5\n4\td\t2.5\n5\te\t3.5\n"))
    out = io.StringIO()
    cur.copy_expert(f"COPY {table} TO STDOUT", out)
    assert len(out.getvalue().splitlines()) == 5
    cur.execute("LISTEN pgq")
    cur.execute("NOTIFY pgq, 'hello'")
    cur.execute(f"SELECT 1; DELETE FROM {table} WHERE id = 5")
    conn.close()


# ---- raw protocol ----

def msg(t, body):
    return t + struct.pack("!i", len(body) + 4) + body


def cstr(s):
    return s.encode() + b"\0"


class Raw:
    def __init__(self, host, port):
        if host.startswith("/"):
            self.s = socket.socket(socket.AF_UNIX)
            self.s.connect(f"{host}/.s.PGSQL.{port}")
        else:
            self.s = socket.create_connection((host, int(port)))
        self.buf = b""

    def send(self, b):
        self.s.sendall(b)

    def read_msg(self):
        while True:
            if len(self.buf) >= 5:
                n = struct.unpack("!i", self.buf[1:5])[0]
                if len(self.buf) >= n + 1:
                    m, self.buf = self.buf[: n + 1], self.buf[n + 1:]
                    return m[:1], m[5:]
            d = self.s.recv(65536)
            if not d:
                raise SystemExit("raw: the server closed the connection")
            self.buf += d

    def until_ready(self):
        got = []
        while True:
            t, b = self.read_msg()
            if t == b"E" and not got_error_expected(b):
                raise SystemExit(f"raw: unexpected error {b!r}")
            got.append(t)
            if t == b"Z":
                return got

    def login(self, db="postgres"):
        params = cstr("user") + cstr("preplay") + cstr("database") + cstr(db) + b"\0"
        self.send(struct.pack("!ii", len(params) + 8, 196608) + params)
        while True:
            t, b = self.read_msg()
            if t == b"R":
                code = struct.unpack("!i", b[:4])[0]
                if code == 10:
                    self.scram()
                elif code not in (0, 12):  # 12: SASLFinal, then Ok
                    raise SystemExit(f"raw: authentication {code} not handled")
            elif t == b"E":
                raise SystemExit(f"raw: login refused {b!r}")
            elif t == b"Z":
                return

    def scram(self):
        nonce = base64.b64encode(os.urandom(18)).decode()
        first_bare = f"n=,r={nonce}"
        first = ("n,," + first_bare).encode()
        self.send(msg(b"p", cstr("SCRAM-SHA-256") + struct.pack("!i", len(first)) + first))
        t, b = self.read_msg()
        server_first = b[4:].decode()
        attrs = dict(kv.split("=", 1) for kv in server_first.split(","))
        salted = hashlib.pbkdf2_hmac("sha256", b"preplay-pw", base64.b64decode(attrs["s"]),
                                     int(attrs["i"]))
        ckey = hmac.new(salted, b"Client Key", "sha256").digest()
        skey = hashlib.sha256(ckey).digest()
        final_bare = f"c=biws,r={attrs['r']}"
        auth = f"{first_bare},{server_first},{final_bare}".encode()
        sig = hmac.new(skey, auth, "sha256").digest()
        proof = base64.b64encode(bytes(a ^ b for a, b in zip(ckey, sig))).decode()
        self.send(msg(b"p", f"{final_bare},p={proof}".encode()))


expected_errors = set()


def got_error_expected(body):
    fields = dict((f[:1], f[1:]) for f in body.split(b"\0") if f)
    return fields.get(b"C", b"").decode() in expected_errors


def parse(name, sql, oids=()):
    return msg(b"P", cstr(name) + cstr(sql) + struct.pack("!h", len(oids)) +
               b"".join(struct.pack("!i", o) for o in oids))


def bind(portal, stmt, values, formats=()):
    body = cstr(portal) + cstr(stmt) + struct.pack("!h", len(formats))
    body += b"".join(struct.pack("!h", f) for f in formats)
    body += struct.pack("!h", len(values))
    for v in values:
        body += struct.pack("!i", -1) if v is None else struct.pack("!i", len(v)) + v
    return msg(b"B", body + struct.pack("!h", 0))


def execute(portal, maxrows=0):
    return msg(b"E", cstr(portal) + struct.pack("!i", maxrows))


SYNC = msg(b"S", b"")


def raw_client(host, port, table):
    r = Raw(host, port)
    r.login()
    q = lambda sql: msg(b"Q", cstr(sql))
    r.send(q(f"DROP TABLE IF EXISTS {table}; CREATE TABLE {table} (id int8, name text, "
             "score float8, ok bool, data bytea)"))
    r.until_ready()
    # a named statement with types: binary int8, float8, bool, bytea; text and NULL
    r.send(parse("ins", f"INSERT INTO {table} VALUES ($1, $2, $3, $4, $5)", (20, 25, 701, 16, 17)) +
           msg(b"D", b"S" + cstr("ins")) + SYNC)
    assert r.until_ready() == [b"1", b"t", b"n", b"Z"]
    r.send(bind("", "ins", [struct.pack("!q", 7), b"seven", struct.pack("!d", 0.5), b"\1",
                            b"\0\1\xff"], (1, 0, 1, 1, 1)) + execute("") + SYNC)
    r.send(bind("", "ins", [b"8", b"it's", None, b"f", None]) + execute("") + SYNC)
    r.until_ready()
    r.until_ready()
    # a named portal read 2 rows at a time (PortalSuspended), inside a transaction
    r.send(q("BEGIN"))
    r.until_ready()
    r.send(parse("sel", f"SELECT id, name FROM {table} WHERE id >= $1 ORDER BY id") +
           bind("cur", "sel", [b"0"]) + msg(b"D", b"P" + cstr("cur")) + execute("cur", 1) +
           execute("cur", 1) + execute("cur", 1) + msg(b"C", b"P" + cstr("cur")) +
           msg(b"C", b"S" + cstr("sel")) + SYNC)
    r.until_ready()
    r.send(q("COMMIT"))
    r.until_ready()
    # a batch whose Parse fails: Bind/Execute up to Sync are skipped
    expected_errors.add("42601")
    r.send(parse("", "SELEC 2") + bind("", "", []) + execute("") + SYNC +
           parse("", f"SELECT count(*) FROM {table}") + bind("", "", []) + execute("") + SYNC)
    r.until_ready()
    r.until_ready()
    # a message split over sends (the header, then its body in two)
    m = q(f"SELECT name FROM {table} WHERE id = 7")
    r.send(m[:3])
    r.send(m[3:9])
    r.send(m[9:])
    r.until_ready()
    # a long statement in several sends
    long_sql = "SELECT '" + "x" * 20000 + "' AS long_text"
    m = q(long_sql)
    for i in range(0, len(m), 7000):
        r.send(m[i:i + 7000])
    r.until_ready()
    # an empty query; then a notification arrives in the middle of an answer
    r.send(q(""))
    r.until_ready()
    r.send(q("LISTEN rawq"))
    r.until_ready()
    r.send(q(f"NOTIFY rawq, 'x'; UPDATE {table} SET ok = true WHERE id = 8"))
    r.until_ready()
    r.send(msg(b"X", b""))
    r.s.close()


def late_client(host, port, sync_dir):
    import time

    r = Raw(host, port)
    r.login()
    r.send(parse("early", "SELECT $1::int + 100") + SYNC)
    r.until_ready()
    open(os.path.join(sync_dir, "ready"), "w").close()
    for _ in range(600):
        if os.path.exists(os.path.join(sync_dir, "go")):
            break
        time.sleep(0.05)
    else:
        raise SystemExit("late: no go")
    n = 40
    for i in range(1, n + 1):
        r.send(parse(f"a{i}", f"SELECT $1::int + {i}") + SYNC)
        r.until_ready()
    for i in range(1, n + 1):
        r.send(bind("", f"a{i}", [str(i).encode()]) + execute("") + SYNC)
        r.until_ready()
    # a SELECT without rows through Execute (no RowDescription comes: the
    # Describe is not sent), a while after the last result's rows
    time.sleep(0.3)
    r.send(parse("", "SELECT 1 AS none WHERE $1::int < 0") + bind("", "", [b"1"]) + execute("") + SYNC)
    r.until_ready()
    r.send(msg(b"X", b""))
    r.s.close()


def main():
    if len(sys.argv) != 5:
        raise SystemExit("usage: pg_clients.py MODE HOST PORT TABLE")
    mode, host, port, table = sys.argv[1:]
    {"psycopg2": psycopg2_client, "raw": raw_client, "late": late_client}[mode](host, port, table)


if __name__ == "__main__":
    main()
