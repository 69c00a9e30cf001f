#!/usr/bin/python3
"""check-db-trace.py - asserts the exact DB events of one recorded client run
of the DB tracer test (test-db.sh): every statement once, in order, with its
text, parameters, affected/returned rows, result bytes, error code and the
capture path (C API or wire); one db_conn_id that is the NET conn_id of the
client's connection to the server; consistent statement ids.

usage: check-db-trace.py PREPLAY TRACE_DIR SCENARIO NAME SOCKET PORT
SCENARIO: mysqldb | pymysql-tcp | pymysql-unix | cli | c-dynamic | c-static | php, or
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


def ev(op, query=None, rows=0, error=0, bytes_=None, params=None, stmt=None):
    return {"op": op, "query": query, "rows": rows, "error": error, "bytes": bytes_,
            "params": params, "stmt": stmt}


def statement_events(name, source):
    out = []
    for sql, affected, result_rows, error in statements(name):
        out.append(ev("query", sql, 0 if result_rows is not None or error else affected, error,
                      len(sql)))
        if result_rows is not None:
            out.append(ev("fetch", sql, result_rows, 0, SELECT_BYTES[source]))
    return out


def c_client_events(name, sock, source):
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
        ev("query", "SELEC broken", 0, 1064, bytes_=12),
        # the C API has a statement object even when prepare fails; the wire
        # never got a server statement id
        ev("prepare", "SELEC ?", 0, 1064, bytes_=7, stmt="bad" if capi else None),
        ev("query", drop, 1, bytes_=len(drop)),
    ]
    return out


def expected(scenario, name, sock):
    if scenario == "mysqldb":
        return "capi", ([ev("connect", "root@localhost:%s/" % sock),
                         ev("query", "SET autocommit=0", bytes_=16)] +
                        statement_events(name, "capi") + [ev("close")])
    if scenario in ("pymysql-tcp", "pymysql-unix"):
        return "wire", ([ev("query", "SET AUTOCOMMIT = 0", bytes_=18)] +
                        statement_events(name, "wire") + [ev("close", bytes_=1)])
    if scenario == "cli":
        return "wire", statement_events(name, "wire") + [ev("close", bytes_=1)]
    if scenario == "c-dynamic":
        return "capi", c_client_events(name, sock, "capi") + [ev("close")]
    if scenario in ("c-static", "php"):  # php: mysqlnd, the same statements
        return "wire", c_client_events(name, sock, "wire") + [ev("close", bytes_=1)]
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
            # only db and conn events are checked: a TLS client's trace holds
            # ~1.7 M others (OpenSSL 3 takes a lock per lookup while it
            # loads the CA bundle), not worth parsing
            if '"type":"db"' not in line and '"type":"conn"' not in line:
                continue
            try:
                events.append(json.loads(line))
            except json.JSONDecodeError as e:
                sys.exit("check-db-trace: %s: line %d of the dump is not JSON: %s" % (t, i + 1, e))
    return events


def info_errors(preplay, trace_dir):
    """`preplay info` of a run of the C client's statements: a prepared
    statement's executions and its prepares are counted apart."""
    out = subprocess.run([preplay, "info", "--json", trace_dir], check=True, capture_output=True,
                         text=True).stdout
    got = {}
    for p in json.loads(out)["process_list"]:
        for q in p["queries_by_count"]:
            got[q["query"]] = (q["count"], q["prepares"], q["errors"])
    want = {"INSERT INTO t (id, name, score) VALUES (?, ?, ?)": (3, 1, 0),
            "SELECT id, name FROM t WHERE id >= ?": (2, 1, 0),
            "SELEC ?": (0, 1, 1)}
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
    got = [e for e in events if e.get("type") == "db"]
    conns = {}  # conn_id -> its identity (the connect/ident event, not the close)
    for e in events:
        if e.get("type") == "conn" and e.get("op") in ("connect", "ident", "accept"):
            conns.setdefault(e["conn_id"], e)
    errors = []
    if len(got) != len(want):
        errors.append("%d DB events, expected %d" % (len(got), len(want)))
    stmt_ids = {}
    conn_ids = set()
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
        conn_ids.add(g.get("db_conn_id"))
    if len(set(stmt_ids.values())) != len(stmt_ids):
        errors.append("different statements share a stmt_id: %r" % stmt_ids)
    if len(conn_ids) != 1:
        errors.append("DB events name %d connections (%r), expected 1" % (len(conn_ids), conn_ids))
    else:
        cid = conn_ids.pop()
        c = conns.get(cid)
        if not c:
            errors.append("db_conn_id %r is no connection (CONN event) of the trace" % cid)
        elif scenario == "pymysql-tcp" or tls:
            if c.get("proto") != "tcp" or not str(c.get("remote", "")).endswith(":" + port):
                errors.append("connection %r is not to 127.0.0.1:%s: %r" % (cid, port, c))
        elif c.get("proto") != "unix_stream" and "unix" not in str(c.get("proto")):
            errors.append("connection %r is not a unix socket: %r" % (cid, c))
    if plain in ("c-dynamic", "c-static", "php"):
        errors += info_errors(preplay, trace_dir)
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
