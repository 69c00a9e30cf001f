#!/usr/bin/python3
"""db_deprecate_eof.py - a MySQL-protocol client of our own for test-db.sh's
"deprecate-eof" scenario: it logs in with CLIENT_DEPRECATE_EOF, as MySQL 8
era clients do (MySQL Connector/J 8, mysql-connector-python), so no EOF
packet follows column definitions and every result set ends with an OK
packet whose header is 0xfe. Over one connection:

  1. a text query with a result set, and an INSERT;
  2. a PREPARE (its definitions without an EOF) and an EXECUTE that returns
     binary rows;
  3. an EXECUTE that opens a read-only cursor (answered by the definitions
     and an OK that says "cursor exists"), two STMT_FETCHes of up to 2 rows
     and a query, all in one write;
  4. DROP DATABASE, then QUIT.

Every answer is read and checked here (so the server did what the trace
must say); check-db-trace.py's deprecate_eof_events lists the events.
usage: db_deprecate_eof.py PORT DBNAME   (root without a password on 127.0.0.1)"""
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from db_pipeline import (CLIENT_MULTI_RESULTS, CLIENT_PLUGIN_AUTH, CLIENT_PROTOCOL_41,  # noqa: E402
                         CLIENT_SECURE_CONNECTION, CLIENT_TRANSACTIONS,
                         CURSOR_TYPE_READ_ONLY, SERVER_STATUS_CURSOR_EXISTS,
                         SERVER_STATUS_LAST_ROW_SENT, Conn, command, die, lenenc_int, log_in)

CLIENT_DEPRECATE_EOF = 1 << 24


def ok_status(p):
    """The server status of an OK packet (header 0x00 or 0xfe)."""
    _, pos = lenenc_int(p, 1)  # affected rows
    _, pos = lenenc_int(p, pos)  # last insert id
    return struct.unpack("<H", p[pos:pos + 2])[0]


def is_end(p):
    return p[:1] == b"\xfe" and len(p) < 0xFFFFFF


def definitions(c, what):
    """A result's column count and definitions (no EOF after them)."""
    s, p = c.read_packet()
    if s != 1 or p[:1] in (b"\x00", b"\xff", b"\xfe"):
        die("%s: expected a result set, got %r" % (what, p[:60]))
    for _ in range(lenenc_int(p, 0)[0]):
        c.read_packet()


def rows_until_end(c, what):
    """Rows up to the OK (0xfe) that ends them; returns (rows, status)."""
    rows = []
    while True:
        _, p = c.read_packet()
        if is_end(p):
            return rows, ok_status(p)
        if p[:1] == b"\xff":
            die("%s: error %r" % (what, p[:60]))
        rows.append(p)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    port, db = int(sys.argv[1]), sys.argv[2].encode()
    c = Conn(port)
    log_in(c, CLIENT_PROTOCOL_41 | CLIENT_TRANSACTIONS | CLIENT_SECURE_CONNECTION |
           CLIENT_MULTI_RESULTS | CLIENT_PLUGIN_AUTH | CLIENT_DEPRECATE_EOF)
    c.ok("login", seq=2)
    # 1
    c.sock.sendall(command(b"\x03CREATE DATABASE " + db))
    c.ok("CREATE DATABASE")
    c.sock.sendall(command(b"\x02" + db))
    c.ok("INIT_DB")
    c.sock.sendall(command(b"\x03CREATE TABLE t (id INT PRIMARY KEY)"))
    c.ok("CREATE TABLE")
    c.sock.sendall(command(b"\x03INSERT INTO t VALUES (1), (2), (3)"))
    if c.ok("INSERT") != 3:
        die("INSERT: expected 3 rows")
    c.sock.sendall(command(b"\x03SELECT id FROM t ORDER BY id"))
    definitions(c, "SELECT id")
    if len(rows_until_end(c, "SELECT id")[0]) != 3:
        die("SELECT id: expected 3 rows")
    # 2
    c.sock.sendall(command(b"\x16SELECT id FROM t WHERE id > 1"))
    s, p = c.read_packet()
    if s != 1 or p[:1] != b"\x00":
        die("PREPARE: expected its OK, got %r" % p[:60])
    stmt, columns, params = struct.unpack("<IHH", p[1:9])
    for _ in range(columns + params):  # no EOF after either list
        c.read_packet()
    c.sock.sendall(command(b"\x17" + struct.pack("<IBI", stmt, 0, 1)))
    definitions(c, "EXECUTE")
    if len(rows_until_end(c, "EXECUTE")[0]) != 2:
        die("EXECUTE: expected 2 rows")
    # 3
    fetch = command(b"\x1c" + struct.pack("<II", stmt, 2))
    c.sock.sendall(command(b"\x17" + struct.pack("<IBI", stmt, CURSOR_TYPE_READ_ONLY, 1)) +
                   fetch + fetch + command(b"\x03SELECT COUNT(*) FROM t"))
    definitions(c, "EXECUTE with a cursor")
    rows, status = rows_until_end(c, "EXECUTE with a cursor")
    if rows or not status & SERVER_STATUS_CURSOR_EXISTS:
        die("EXECUTE with a cursor: expected no rows and a cursor, got %d rows, status 0x%x"
            % (len(rows), status))
    if len(rows_until_end(c, "FETCH 1")[0]) != 2:
        die("FETCH 1: expected 2 rows")
    rows, status = rows_until_end(c, "FETCH 2")
    if len(rows) != 0 or not status & SERVER_STATUS_LAST_ROW_SENT:
        die("FETCH 2: expected no row and the last-row flag, got %d, status 0x%x"
            % (len(rows), status))
    definitions(c, "SELECT COUNT(*)")
    if len(rows_until_end(c, "SELECT COUNT(*)")[0]) != 1:
        die("SELECT COUNT(*): expected 1 row")
    # 4
    c.drop_and_quit(db)


if __name__ == "__main__":
    main()
