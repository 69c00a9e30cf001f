#!/usr/bin/python3
"""check-db-trace.py - asserts the exact DB events of one recorded client run
of the DB tracer test (test-db.sh): every statement once, in order, with its
text, parameters, affected/returned rows, result bytes, error code and the
capture path (C API or wire); one db_conn_id that is the NET conn_id of the
client's connection to the server; consistent statement ids.

usage: check-db-trace.py PREPLAY TRACE_DIR SCENARIO NAME SOCKET PORT
SCENARIO: mysqldb | pymysql-tcp | pymysql-unix | cli | c-dynamic | c-static | php | java |
          pipeline | deprecate-eof | node, or
          pymysql-tls | cli-tls | php-tls (the same over TCP with TLS)
Prints one line per failed expectation and exits 1; prints a summary line
and exits 0 when everything matches."""
import glob
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from db_clients import statements  # noqa: E402

# Result bytes of "SELECT id, name ... ORDER BY id" over (1,'abc'),
# (2,'O''Brien'),(3,NULL): the C API counts field bytes, the wire parser
# counts row packet payloads (each field's length prefix, 0xfb for NULL).
SELECT_BYTES = {"capi": 1 + 3 + 1 + 7 + 1 + 0, "wire": 2 + 4 + 2 + 8 + 2 + 1}


def ev(op, query=None, rows=0, error=0, bytes_=None, params=None, stmt=None, batch=None):
    """batch: a name shared by statements the client pipelines (sends
    before the answer to the one before it came); the trace must show it
    for at least one of them, or the run proves nothing."""
    return {"op": op, "query": query, "rows": rows, "error": error, "bytes": bytes_,
            "params": params, "stmt": stmt, "batch": batch}


JAVA_BATCH = 20  # db_client.java's BATCH


def statement_events(name, source):
    out = []
    for sql, affected, result_rows, error in statements(name):
        out.append(ev("query", sql, 0 if result_rows is not None or error else affected, error,
                      len(sql)))
        if result_rows is not None:
            out.append(ev("fetch", sql, result_rows, 0, SELECT_BYTES[source]))
    return out


# The rows of each COM_STMT_FETCH of db_client's cursor (3 rows): Connector/C
# asks for 2 at a time; mysqlnd for 1, and reads a last, empty batch.
CURSOR_FETCHES = {"capi": [3], "c-static": [2, 1], "php": [1, 1, 1, 0]}


def c_client_events(name, sock, source, client):
    """db_client.c's statements (and db_client.php's); `client` names the
    cursor's fetches in CURSOR_FETCHES (None: a client without the cursor)."""
    db = "dbt_" + name
    ins = "INSERT INTO t (id, name, score) VALUES (?, ?, ?)"
    sel = "SELECT id, name FROM t WHERE id >= ?"
    capi = source == "capi"
    create, drop = "CREATE DATABASE IF NOT EXISTS " + db, "DROP DATABASE " + db
    out = []
    if capi:
        out.append(ev("connect", "root@localhost:%s/" % sock))
    out += [
        ev("query", create, 1, bytes_=len(create)),
        ev("query", "CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(32), score DOUBLE)", 0,
           bytes_=67),
        ev("prepare", ins, bytes_=len(ins), stmt="ins"),
        ev("execute", ins, 1, params="1, 'abc', 2.5", stmt="ins"),
        ev("execute", ins, 1, params="2, 'O''Brien', NULL", stmt="ins"),
        ev("execute", ins, 1, params="3, NULL, -1.25", stmt="ins"),
        ev("prepare", sel, bytes_=len(sel), stmt="sel"),
        ev("execute", sel, 0, params="2", stmt="sel"),
        ev("fetch", sel, 2, bytes_=0 if capi else 2 * 10, stmt="sel"),
        ev("execute", sel, 0, params="1", stmt="sel"),
        ev("fetch", sel, 3, bytes_=0 if capi else 3 * 10, stmt="sel"),
        ev("query", "SELECT id FROM t ORDER BY id", bytes_=28),
        ev("fetch", "SELECT id FROM t ORDER BY id", 3, bytes_=3 if capi else 6),
        ev("query", "SELECT name FROM t WHERE name IS NOT NULL", bytes_=41),
        ev("fetch", "SELECT name FROM t WHERE name IS NOT NULL", 2, bytes_=10 if capi else 12),
        ev("query", "UPDATE t SET score = 0 WHERE id <= 2", 2, bytes_=36),
    ]
    if client:
        # the execute that opens the cursor has no rows; each fetch brings
        # binary rows of 6 bytes (header, NULL bitmap, INT); through the C
        # API, one fetch event when the rows end, with no bytes counted
        cur = "SELECT id FROM t ORDER BY id DESC"
        out += [ev("prepare", cur, bytes_=len(cur), stmt="cur"),
                ev("execute", cur, 0, stmt="cur")]
        out += [ev("fetch", cur, rows, bytes_=0 if capi else 6 * rows, stmt="cur")
                for rows in CURSOR_FETCHES[client]]
    out += [
        ev("query", "SELEC broken", 0, 1064, bytes_=12),
        # the C API has a statement object even when prepare fails; the wire
        # never got a server statement id
        ev("prepare", "SELEC ?", 0, 1064, bytes_=7, stmt="bad" if capi else None),
        ev("query", drop, 1, bytes_=len(drop)),
    ]
    return out


def java_events(name):
    """db_client.java through MariaDB Connector/J 2.7 (Debian 12's): the
    driver's two session queries, pipelined; db_client.c's statements; a
    prepared batch of INSERTs and a batch of UPDATEs, each pipelined; the
    failing prepared statement, which the driver runs as text ("SELEC 1")
    without a PREPARE."""
    setup = "set autocommit=1, sql_mode = concat(@@sql_mode,',STRICT_TRANS_TABLES')"
    variables = ("SELECT @@max_allowed_packet,@@system_time_zone,@@time_zone,"
                 "@@auto_increment_increment")
    out = [ev("query", setup, bytes_=len(setup), batch="session"),
           ev("query", variables, bytes_=len(variables), batch="session"),
           ev("fetch", variables, 1)]
    statements = c_client_events(name, None, "wire", None)
    update = [e["query"] for e in statements].index("UPDATE t SET score = 0 WHERE id <= 2")
    batch = "INSERT INTO t (id, name) VALUES (?, ?)"
    out += statements[:update + 1]
    out.append(ev("prepare", batch, bytes_=len(batch), stmt="batch"))
    for i in range(JAVA_BATCH):
        out.append(ev("execute", batch, 1, params="%d, 'r%d'" % (4 + i, 4 + i), stmt="batch",
                      batch="inserts"))
    for i in range(JAVA_BATCH):
        update = "UPDATE t SET score = %d WHERE id = %d" % (i, 4 + i)
        out.append(ev("query", update, 1, bytes_=len(update), batch="updates"))
    out += [ev("query", "SELEC broken", 0, 1064, bytes_=12),
            ev("query", "SELEC 1", 0, 1064, bytes_=7),
            statements[-1], ev("close", bytes_=1)]
    return out


def pipeline_events(name):
    """db_pipeline.py: what each of its writes must give (the commands it
    does not record - PING, INIT_DB, STATISTICS, CHANGE_USER, FIELD_LIST -
    give none; STMT_FETCH gives a FETCH)."""
    db = "dbt_" + name
    create_table = "CREATE TABLE t (id BIGINT PRIMARY KEY, v VARCHAR(8))"
    insert = "INSERT INTO t VALUES (?, ?)"
    load = "LOAD DATA LOCAL INFILE 'rows.tsv' INTO TABLE t"
    cursor = "SELECT id FROM t ORDER BY id"
    return [
        ev("query", "SELECT 1", bytes_=8), ev("fetch", "SELECT 1", 1, bytes_=2),
        ev("query", "CREATE DATABASE " + db, 1, bytes_=len("CREATE DATABASE " + db)),
        ev("query", "SELECT 2", bytes_=8), ev("fetch", "SELECT 2", 1, bytes_=2),
        ev("query", create_table, bytes_=len(create_table), batch="prepare-execute"),
        ev("prepare", insert, bytes_=len(insert), stmt="insert", batch="prepare-execute"),
        ev("execute", insert, 1, params="1, 'a'", bytes_=26, stmt="insert",
           batch="prepare-execute"),
        ev("execute", insert, 1, params="2, 'O''Brien'", bytes_=32, stmt="insert",
           batch="prepare-execute"),
        ev("query", "SELECT id FROM t ORDER BY id", bytes_=28),
        ev("fetch", "SELECT id FROM t ORDER BY id", 2, bytes_=4),
        ev("query", "SELECT v FROM t WHERE id = 2", bytes_=28, batch="field-list"),
        ev("fetch", "SELECT v FROM t WHERE id = 2", 1, bytes_=8),
        ev("query", load, 2, bytes_=len(load)),
        ev("query", "SELECT COUNT(*) FROM t", bytes_=22, batch="load"),
        ev("fetch", "SELECT COUNT(*) FROM t", 1, bytes_=2),
        # the cursor: the EXECUTE that opens it has no rows, each STMT_FETCH
        # is a FETCH of its rows (binary rows of 10 bytes: header, NULL
        # bitmap, BIGINT), and the query behind them gets its own answer
        ev("prepare", cursor, bytes_=len(cursor), stmt="cursor"),
        ev("execute", cursor, bytes_=10, stmt="cursor"),
        ev("fetch", cursor, 3, bytes_=30, stmt="cursor"),
        ev("fetch", cursor, 1, bytes_=10, stmt="cursor"),
        ev("query", "SELECT 3", bytes_=8, batch="cursor"), ev("fetch", "SELECT 3", 1, bytes_=2),
        # BULK_EXECUTE: an execute of the INSERT, without its rows of parameters
        ev("execute", insert, 2, bytes_=35, stmt="insert"),
        ev("query", "SELECT COUNT(*) FROM t", bytes_=22, batch="bulk"),
        ev("fetch", "SELECT COUNT(*) FROM t", 1, bytes_=2),
        ev("query", "DROP DATABASE " + db, 1, bytes_=len("DROP DATABASE " + db)),
        ev("close", bytes_=1),
    ]


def deprecate_eof_events(name):
    """db_deprecate_eof.py: result sets that end with an OK packet (0xfe),
    no EOF after definitions, and a cursor under CLIENT_DEPRECATE_EOF."""
    db = "dbt_" + name
    sel, ids = "SELECT id FROM t ORDER BY id", "SELECT id FROM t WHERE id > 1"
    return [
        ev("query", "CREATE DATABASE " + db, 1, bytes_=len("CREATE DATABASE " + db)),
        ev("query", "CREATE TABLE t (id INT PRIMARY KEY)", bytes_=35),
        ev("query", "INSERT INTO t VALUES (1), (2), (3)", 3, bytes_=34),
        ev("query", sel, bytes_=len(sel)), ev("fetch", sel, 3, bytes_=6),
        ev("prepare", ids, bytes_=len(ids), stmt="ids"),
        ev("execute", ids, bytes_=10, stmt="ids"), ev("fetch", ids, 2, bytes_=12, stmt="ids"),
        # the cursor: its execute has no rows; the second fetch finds none left
        ev("execute", ids, bytes_=10, stmt="ids"),
        ev("fetch", ids, 2, bytes_=12, stmt="ids"), ev("fetch", ids, 0, bytes_=0, stmt="ids"),
        ev("query", "SELECT COUNT(*) FROM t", bytes_=22, batch="cursor"),
        ev("fetch", "SELECT COUNT(*) FROM t", 1, bytes_=2),
        ev("query", "DROP DATABASE " + db, 1, bytes_=len("DROP DATABASE " + db)),
        ev("close", bytes_=1),
    ]


def expected(scenario, name, sock):
    if scenario == "mysqldb":
        return "capi", ([ev("connect", "root@localhost:%s/" % sock),
                         ev("query", "SET autocommit=0", bytes_=16)] +
                        statement_events(name, "capi") + [ev("close")])
    if scenario in ("pymysql-tcp", "pymysql-unix"):
        return "wire", ([ev("query", "SET AUTOCOMMIT = 0", bytes_=18)] +
                        statement_events(name, "wire") + [ev("close", bytes_=1)])
    if scenario in ("cli", "node"):  # node: mysqljs sends no session setup
        return "wire", statement_events(name, "wire") + [ev("close", bytes_=1)]
    if scenario == "c-dynamic":
        return "capi", c_client_events(name, sock, "capi", "capi") + [ev("close")]
    if scenario in ("c-static", "php"):  # php: mysqlnd, the same statements
        return "wire", c_client_events(name, sock, "wire", scenario) + [ev("close", bytes_=1)]
    if scenario == "java":
        return "wire", java_events(name)
    if scenario == "pipeline":
        return "wire", pipeline_events(name)
    if scenario == "deprecate-eof":
        return "wire", deprecate_eof_events(name)
    sys.exit("check-db-trace: unknown scenario %r" % scenario)


def load(preplay, trace_dir):
    traces = sorted(glob.glob(os.path.join(trace_dir, "*.trace")))
    if not traces:
        sys.exit("check-db-trace: no trace files in %s" % trace_dir)
    events = []
    for t in traces:
        out = subprocess.run([preplay, "dump", "--json", t], check=True, capture_output=True,
                             text=True).stdout
        for i, line in enumerate(out.splitlines()):
            # only db, conn and send events are read: a TLS client's trace
            # holds ~1.7 M others (OpenSSL 3 takes a lock per lookup while
            # it loads the CA bundle), not worth parsing
            if ('"type":"db"' not in line and '"type":"conn"' not in line and
                    '"op":"send"' not in line):
                continue
            try:
                events.append(json.loads(line))
            except json.JSONDecodeError as e:
                sys.exit("check-db-trace: %s: line %d of the dump is not JSON: %s" % (t, i + 1, e))
    return events


def info_errors(preplay, trace_dir, want):
    """`preplay info` of a run of the C client's statements: a prepared
    statement's executions and its prepares are counted apart. want: query
    text -> (executions, prepares, errors)."""
    out = subprocess.run([preplay, "info", "--json", trace_dir], check=True, capture_output=True,
                         text=True).stdout
    got = {}
    for p in json.loads(out)["process_list"]:
        for q in p["queries_by_count"]:
            got[q["query"]] = (q["count"], q["prepares"], q["errors"])
    return ["info: %r: (executions, prepares, errors) %r, expected %r" % (k, got.get(k), v)
            for k, v in want.items() if got.get(k) != v]


def main():
    if len(sys.argv) != 7:
        sys.exit(__doc__)
    preplay, trace_dir, scenario, name, sock, port = sys.argv[1:]
    # over TLS the parser reads the plaintext of the same protocol
    tls = scenario.endswith("-tls")
    plain = {"pymysql-tls": "pymysql-tcp"}.get(scenario, scenario[:-4] if tls else scenario)
    source, want = expected(plain, name, sock)
    events = load(preplay, trace_dir)
    # In the order the commands were sent: a client that sends from one
    # thread and reads the answers on another (Connector/J's batches) has
    # the sender's DB events in the reader's records, which the trace
    # interleaves with the sender's as the rings drained. A command's time
    # is its send; a FETCH (timed from the answer) goes right after the
    # command recorded before it with the same tid.
    got, last_send = [], {}
    for e in events:
        if e.get("type") != "db":
            continue
        if e.get("op") != "fetch":
            last_send[e.get("tid")] = e.get("ts", 0)
        got.append((last_send.get(e.get("tid"), e.get("ts", 0)), len(got), e))
    got = [e for _, _, e in sorted(got, key=lambda k: k[:2])]
    conns = {}  # conn_id -> its identity (the connect/ident event, not the close)
    for e in events:
        if e.get("type") == "conn" and e.get("op") in ("connect", "ident", "accept"):
            conns.setdefault(e["conn_id"], e)
    errors = []
    if len(got) != len(want):
        errors.append("%d DB events, expected %d" % (len(got), len(want)))
    stmt_ids = {}
    conn_ids = set()
    pipelined = set()  # batches with a statement sent before the answer to the one before
    for i, (g, w) in enumerate(zip(got, want)):
        where = "event %d (%s %r)" % (i, w["op"], w["query"])
        checks = [("op", g.get("op"), w["op"]), ("source", g.get("source"), source),
                  ("query", g.get("query"), w["query"]), ("rows", g.get("rows"), w["rows"]),
                  ("error", g.get("error"), w["error"]), ("params", g.get("params"), w["params"])]
        if w["bytes"] is not None:
            checks.append(("bytes", g.get("bytes"), w["bytes"]))
        for key, have, exp in checks:
            if have != exp:
                errors.append("%s: %s is %r, expected %r" % (where, key, have, exp))
        if w["stmt"]:
            sid = g.get("stmt_id")
            if not sid:
                errors.append("%s: no stmt_id" % where)
            elif stmt_ids.setdefault(w["stmt"], sid) != sid:
                errors.append("%s: stmt_id %r, earlier events of this statement had %r"
                              % (where, sid, stmt_ids[w["stmt"]]))
        if w["op"] in ("query", "prepare", "execute", "connect") and not g.get("dur", 0) > 0:
            errors.append("%s: duration %r, expected > 0" % (where, g.get("dur")))
        # sent before the command before it (not its FETCH) was answered
        before = next((e for e in reversed(got[:i]) if e.get("op") != "fetch"), {})
        sent, answered = before.get("ts", 0), before.get("ts", 0) + before.get("dur", 0)
        if w["batch"] and sent <= g.get("ts", 0) < answered:
            pipelined.add(w["batch"])
        conn_ids.add(g.get("db_conn_id"))
    for b in sorted({w["batch"] for w in want if w["batch"]} - pipelined):
        errors.append("batch %r: every statement was sent after the answer to the one before: "
                      "the client did not pipeline, so this run does not test that" % b)
    if len(set(stmt_ids.values())) != len(stmt_ids):
        errors.append("different statements share a stmt_id: %r" % stmt_ids)
    if len(conn_ids) != 1:
        errors.append("DB events name %d connections (%r), expected 1" % (len(conn_ids), conn_ids))
    else:
        cid = conn_ids.pop()
        c = conns.get(cid)
        if not c:
            errors.append("db_conn_id %r is no connection (CONN event) of the trace" % cid)
        elif scenario in ("pymysql-tcp", "java", "pipeline", "deprecate-eof", "node") or tls:
            if c.get("proto") != "tcp" or not str(c.get("remote", "")).endswith(":" + port):
                errors.append("connection %r is not to 127.0.0.1:%s: %r" % (cid, port, c))
        elif c.get("proto") != "unix_stream" and "unix" not in str(c.get("proto")):
            errors.append("connection %r is not a unix socket: %r" % (cid, c))
        # a DB event is the thread's that sent the command, also when another
        # thread read the answer (Connector/J's batches)
        senders = {e.get("tid") for e in events
                   if e.get("type") == "net" and e.get("op") == "send" and e.get("conn_id") == cid}
        strays = sorted({g.get("tid") for g in got} - senders)
        if senders and strays:
            errors.append("DB events of threads %r, which sent nothing on connection %r (%r did)"
                          % (strays, cid, sorted(senders)))
    prepared = {"INSERT INTO t (id, name, score) VALUES (?, ?, ?)": (3, 1, 0),
                "SELECT id, name FROM t WHERE id >= ?": (2, 1, 0)}
    if plain in ("c-dynamic", "c-static", "php"):
        # info lists the top 10 queries: the failed "SELEC ?" (0 executions)
        # is the 11th; the cursor's fetches are not executions
        errors += info_errors(preplay, trace_dir,
                              dict(prepared, **{"SELECT id FROM t ORDER BY id DESC": (1, 1, 0)}))
    if plain == "java":
        errors += info_errors(preplay, trace_dir, dict(prepared, **{
            "INSERT INTO t (id, name) VALUES (?, ?)": (JAVA_BATCH, 1, 0)}))
    for e in errors:
        print("check-db-trace %s: %s" % (scenario, e))
    if errors:
        print("check-db-trace %s: DB events seen:" % scenario)
        for g in got:
            print("  " + json.dumps({k: g.get(k) for k in ("op", "source", "query", "params",
                                                           "stmt_id", "rows", "bytes", "error")}))
        return 1
    print("check-db-trace %s: %d DB events as expected (%s path, connection %s)"
          % (scenario, len(got), source, c.get("conn_id")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
