#!/usr/bin/python3
"""db_pipeline.py - a MySQL-protocol client of our own for test-db.sh's
"pipeline" scenario: it sends commands before the answers to earlier ones
(as MariaDB Connector/J, Connector/C's mariadb_stmt_execute_direct and the
R2DBC driver do), each group below in one write, so the wire parser must
pair every answer with its command in order. It covers what no Debian
client does by default:

  1. the handshake response and a query in one write (the login's OK,
     sequence 2, comes before the query's answer);
  2. commands we do not record, answered by one packet (PING, INIT_DB that
     fails, STATISTICS whose answer is bare text), then a query; then
     CHANGE_USER, answered after an authentication exchange (nothing may
     follow it in the write: the server reads the client's next packet as
     the exchange's), and a query;
  3. INIT_DB, a query, a PREPARE and two EXECUTEs of statement id
     0xffffffff ("the last one prepared", sent before the server named it);
  4. a query, FIELD_LIST (definitions until EOF), a query;
  5. LOAD DATA LOCAL INFILE: the server asks for the file, and the file, its
     end and the next query go in one write (the load's OK has sequence 4);
  6. a read-only cursor: the EXECUTE that opens it is answered by the
     column definitions alone (their EOF says "cursor exists"), then two
     STMT_FETCHes bring the rows, 3 and 1, and a query follows;
  7. MariaDB's BULK_EXECUTE: the INSERT with two rows of parameters in one
     command (the login asked for MARIADB_CLIENT_STMT_BULK_OPERATIONS);
  8. DROP DATABASE, then QUIT.

Every answer is read and checked here too (so the server did what the trace
must say); check-db-trace.py's pipeline_events lists the events the trace
must hold.
usage: db_pipeline.py PORT DBNAME   (root without a password on 127.0.0.1)"""
import socket
import struct
import sys

CLIENT_LOCAL_FILES = 0x80
CLIENT_PROTOCOL_41 = 0x200
CLIENT_TRANSACTIONS = 0x2000
CLIENT_SECURE_CONNECTION = 0x8000
CLIENT_MULTI_RESULTS = 0x20000
CLIENT_PLUGIN_AUTH = 0x80000
TYPE_LONGLONG, TYPE_VAR_STRING = 0x08, 0xFD
MARIADB_CLIENT_STMT_BULK_OPERATIONS = 1 << 2  # extended capabilities (login filler)
SERVER_STATUS_CURSOR_EXISTS, SERVER_STATUS_LAST_ROW_SENT = 0x40, 0x80
CURSOR_TYPE_READ_ONLY = 1
STMT_BULK_FLAG_SEND_TYPES_TO_SERVER = 128


def die(what):
    sys.exit("db_pipeline: " + what)


def packet(seq, payload):
    return struct.pack("<I", len(payload))[:3] + bytes([seq]) + payload


def command(payload):
    return packet(0, payload)


def lenenc_int(b, pos):
    first = b[pos]
    if first < 0xFB:
        return first, pos + 1
    width = {0xFC: 2, 0xFD: 3, 0xFE: 8}[first]
    return int.from_bytes(b[pos + 1:pos + 1 + width], "little"), pos + 1 + width


def lenenc_str(s):
    assert len(s) < 0xFB
    return bytes([len(s)]) + s


class Conn:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.buf = b""

    def read_packet(self):
        while True:
            if len(self.buf) >= 4:
                n = int.from_bytes(self.buf[:3], "little")
                if len(self.buf) >= 4 + n:
                    seq, payload = self.buf[3], self.buf[4:4 + n]
                    self.buf = self.buf[4 + n:]
                    return seq, payload
            more = self.sock.recv(65536)
            if not more:
                die("the server closed the connection")
            self.buf += more

    def drop_and_quit(self, db):
        """Drops the run's database, then QUIT, and closes."""
        self.sock.sendall(command(b"\x03DROP DATABASE " + db))
        self.ok("DROP DATABASE")
        self.sock.sendall(command(b"\x01"))
        self.sock.close()

    def ok(self, what, seq=1):
        """An OK packet with this sequence number; returns affected rows."""
        s, p = self.read_packet()
        if s != seq or p[:1] != b"\x00":
            die("%s: expected OK (sequence %d), got sequence %d %r" % (what, seq, s, p[:60]))
        return lenenc_int(p, 1)[0]

    def err(self, what):
        s, p = self.read_packet()
        if p[:1] != b"\xff":
            die("%s: expected an error, got %r" % (what, p[:60]))
        return struct.unpack("<H", p[1:3])[0]

    def until_eof(self, what):
        """Packets up to an EOF; returns how many came before it."""
        n = 0
        while True:
            _, p = self.read_packet()
            if p[:1] == b"\xfe" and len(p) < 9:
                return n
            if p[:1] == b"\xff":
                die("%s: error %r" % (what, p[:60]))
            n += 1

    def result_set(self, what):
        """A text result set; returns its rows' first fields."""
        s, p = self.read_packet()
        if s != 1 or p[:1] in (b"\x00", b"\xff"):
            die("%s: expected a result set, got sequence %d %r" % (what, s, p[:60]))
        columns = lenenc_int(p, 0)[0]
        if self.until_eof(what) != columns:
            die("%s: column definitions do not match the count %d" % (what, columns))
        rows = []
        while True:
            _, p = self.read_packet()
            if p[:1] == b"\xfe" and len(p) < 9:
                return rows
            length, pos = lenenc_int(p, 0)
            rows.append(p[pos:pos + length].decode())

    def prepared(self, what):
        """A PREPARE's answer; returns (statement id, parameter count)."""
        s, p = self.read_packet()
        if s != 1 or p[:1] != b"\x00":
            die("%s: expected the PREPARE's OK, got %r" % (what, p[:60]))
        stmt, columns, params = struct.unpack("<IHH", p[1:9])
        for count in (params, columns):
            if count and self.until_eof(what) != count:
                die("%s: definitions do not match their count %d" % (what, count))
        return stmt, params

    def eof_status(self, what):
        """An EOF packet; returns its server status."""
        _, p = self.read_packet()
        if p[:1] != b"\xfe" or len(p) >= 9:
            die("%s: expected EOF, got %r" % (what, p[:60]))
        return struct.unpack("<H", p[3:5])[0]

    def cursor_opened(self, what):
        """The answer to an EXECUTE that opens a cursor: the column count
        and definitions, then an EOF with "cursor exists" and no rows."""
        s, p = self.read_packet()
        if s != 1 or p[:1] in (b"\x00", b"\xff"):
            die("%s: expected column definitions, got %r" % (what, p[:60]))
        for _ in range(lenenc_int(p, 0)[0]):
            self.read_packet()
        if not self.eof_status(what) & SERVER_STATUS_CURSOR_EXISTS:
            die("%s: the server opened no cursor" % what)

    def fetched(self, what):
        """A STMT_FETCH's answer: binary rows up to an EOF; returns
        (rows, the EOF's server status)."""
        rows = 0
        while True:
            _, p = self.read_packet()
            if p[:1] == b"\xfe" and len(p) < 9:
                return rows, struct.unpack("<H", p[3:5])[0]
            if p[:1] != b"\x00":
                die("%s: expected a binary row, got %r" % (what, p[:60]))
            rows += 1


def log_in(c, caps, ext_caps=0, behind=b""):
    """Reads the server's greeting and sends the handshake response as root
    without a password (capabilities `caps`, MariaDB's extended ones in the
    filler's last 4 bytes), with `behind` in the same write; the login's OK
    (sequence 2) is the caller's to read."""
    _, greeting = c.read_packet()
    if greeting[0] != 10:
        die("unexpected handshake %r" % greeting[:20])
    login = (struct.pack("<IIB", caps, 1 << 24, 33) + bytes(19) + struct.pack("<I", ext_caps) +
             b"root\x00" + b"\x00" + b"mysql_native_password\x00")
    c.sock.sendall(packet(1, login) + behind)


def execute_last_prepared(row_id, text):
    """COM_STMT_EXECUTE of statement 0xffffffff with (BIGINT, VARCHAR)."""
    return command(b"\x17" + struct.pack("<IBI", 0xFFFFFFFF, 0, 1) + b"\x00" + b"\x01" +
                   bytes([TYPE_LONGLONG, 0, TYPE_VAR_STRING, 0]) + struct.pack("<q", row_id) +
                   lenenc_str(text))


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    port, db = int(sys.argv[1]), sys.argv[2].encode()
    c = Conn(port)
    caps = (CLIENT_LOCAL_FILES | CLIENT_PROTOCOL_41 | CLIENT_TRANSACTIONS |
            CLIENT_SECURE_CONNECTION | CLIENT_MULTI_RESULTS | CLIENT_PLUGIN_AUTH)
    # 1: the login and a query in one write
    log_in(c, caps, MARIADB_CLIENT_STMT_BULK_OPERATIONS, behind=command(b"\x03SELECT 1"))
    c.ok("login", seq=2)
    if c.result_set("SELECT 1") != ["1"]:
        die("SELECT 1 did not return 1")
    # 2: answers of one packet, then a query
    c.sock.sendall(command(b"\x0e") + command(b"\x02" + db) + command(b"\x09") +
                   command(b"\x03CREATE DATABASE " + db))
    c.ok("PING")
    if c.err("INIT_DB of a database not created yet") != 1049:
        die("INIT_DB: expected error 1049")
    _, stats = c.read_packet()
    if not stats.startswith(b"Uptime"):
        die("STATISTICS: %r" % stats[:40])
    c.ok("CREATE DATABASE")
    c.sock.sendall(command(b"\x11root\x00" + b"\x00" + b"\x00" + struct.pack("<H", 33) +
                           b"mysql_native_password\x00"))
    seq, answer = c.read_packet()
    while answer[:1] == b"\xfe":  # an authentication switch: the same empty password
        c.sock.sendall(packet(seq + 1, b""))
        seq, answer = c.read_packet()
    if answer[:1] != b"\x00":
        die("CHANGE_USER: %r" % answer[:60])
    c.sock.sendall(command(b"\x03SELECT 2"))
    if c.result_set("SELECT 2") != ["2"]:
        die("SELECT 2 did not return 2")
    # 3: EXECUTEs of the statement prepared right before them
    c.sock.sendall(command(b"\x02" + db) +
                   command(b"\x03CREATE TABLE t (id BIGINT PRIMARY KEY, v VARCHAR(8))") +
                   command(b"\x16INSERT INTO t VALUES (?, ?)") +
                   execute_last_prepared(1, b"a") + execute_last_prepared(2, b"O'Brien"))
    c.ok("INIT_DB")
    c.ok("CREATE TABLE")
    insert, params = c.prepared("PREPARE")
    if params != 2:
        die("PREPARE: expected 2 parameters")
    if c.ok("EXECUTE 1") != 1 or c.ok("EXECUTE 2") != 1:
        die("EXECUTE: expected 1 row each")
    # 4: FIELD_LIST between two queries
    c.sock.sendall(command(b"\x03SELECT id FROM t ORDER BY id") + command(b"\x04t\x00") +
                   command(b"\x03SELECT v FROM t WHERE id = 2"))
    if c.result_set("SELECT id") != ["1", "2"]:
        die("SELECT id: expected 1, 2")
    if c.until_eof("FIELD_LIST") != 2:
        die("FIELD_LIST: expected 2 fields")
    if c.result_set("SELECT v") != ["O'Brien"]:
        die("SELECT v: expected O'Brien")
    # 5: LOAD DATA LOCAL INFILE, then the next query right behind the file
    c.sock.sendall(command(b"\x03LOAD DATA LOCAL INFILE 'rows.tsv' INTO TABLE t"))
    seq, request = c.read_packet()
    if request[:1] != b"\xfb" or seq != 1:
        die("LOAD DATA LOCAL: expected the file request, got %r" % request[:40])
    c.sock.sendall(packet(2, b"3\tc\n4\td\n") + packet(3, b"") +
                   command(b"\x03SELECT COUNT(*) FROM t"))
    if c.ok("LOAD DATA", seq=4) != 2:
        die("LOAD DATA: expected 2 rows")
    if c.result_set("SELECT COUNT(*)") != ["4"]:
        die("SELECT COUNT(*): expected 4")
    # 6: a cursor, and its rows in two fetches of up to 3
    c.sock.sendall(command(b"\x16SELECT id FROM t ORDER BY id"))
    cursor, _ = c.prepared("PREPARE cursor")
    fetch = command(b"\x1c" + struct.pack("<II", cursor, 3))
    c.sock.sendall(command(b"\x17" + struct.pack("<IBI", cursor, CURSOR_TYPE_READ_ONLY, 1)) +
                   fetch + fetch + command(b"\x03SELECT 3"))
    c.cursor_opened("EXECUTE with a cursor")
    if c.fetched("FETCH 1")[0] != 3:
        die("FETCH 1: expected 3 rows")
    rows, status = c.fetched("FETCH 2")
    if rows != 1 or not status & SERVER_STATUS_LAST_ROW_SENT:
        die("FETCH 2: expected the last row, got %d rows, status 0x%x" % (rows, status))
    if c.result_set("SELECT 3") != ["3"]:
        die("SELECT 3 did not return 3")
    # 7: BULK_EXECUTE of the INSERT with rows (5, 'e') and (6, 'f')
    row = b"\x00%s\x00%s"  # each parameter: indicator 0 (a value), then the value
    c.sock.sendall(command(b"\xfa" + struct.pack("<IH", insert, STMT_BULK_FLAG_SEND_TYPES_TO_SERVER) +
                           bytes([TYPE_LONGLONG, 0, TYPE_VAR_STRING, 0]) +
                           row % (struct.pack("<q", 5), lenenc_str(b"e")) +
                           row % (struct.pack("<q", 6), lenenc_str(b"f"))) +
                   command(b"\x03SELECT COUNT(*) FROM t"))
    if c.ok("BULK_EXECUTE") != 2:
        die("BULK_EXECUTE: expected 2 rows")
    if c.result_set("SELECT COUNT(*)") != ["6"]:
        die("SELECT COUNT(*) after BULK_EXECUTE: expected 6")
    # 8
    c.drop_and_quit(db)


if __name__ == "__main__":
    main()
