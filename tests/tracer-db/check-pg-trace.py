#!/usr/bin/python3
"""tests/tracer-db/check-pg-trace.py PREPLAY TRACE_DIR SCENARIO TABLE [N] -
checks the PostgreSQL DB events of one client test-pg.sh recorded
(tracer/preload/pg_wire.c): every event of the dialect postgresql from the
wire, on one db_conn_id that is the socket's conn_id, and for SCENARIO the
exact statements, parameters, rows and SQLSTATEs the client caused:

  psql*     the psql CLI's simple queries (-f FILE), a syntax error
  psycopg2  pg_clients.py psycopg2 (text only: psycopg2 interpolates)
  raw*      pg_clients.py raw (extended protocol, binary parameters,
            portals, a failing batch, split and long messages)
  jdbc      pg_client.java with the PostgreSQL JDBC driver (speaks the
            protocol itself): server-named statements from the 5th use,
            a pipelined batch
  pgbench-pipeline  pgbench -t N -M prepared of a \\startpipeline script:
            libpq's pipeline mode (both executes sent before an answer)
  pgbench-prepared / pgbench-extended  pgbench -t N -M prepared/extended:
            the 7 statements of its TPC-B-like script, N times, prepared
            once per connection (prepared) or with each execute (extended),
            their parameters in range and their rows
"""
import json
import re
import subprocess
import sys


def events(preplay, trace):
    out = subprocess.run([preplay, "dump", "--json", trace], check=True, capture_output=True,
                         text=True).stdout
    evs = [json.loads(line) for line in out.splitlines()]
    return evs


def fail(scenario, why):
    print(f"check-pg-trace {scenario}: {why}", file=sys.stderr)
    sys.exit(1)


def simple(e):
    """An event as (op, query, params, rows, sqlstate)."""
    return (e["op"], e.get("query"), e.get("params"), e["rows"], e.get("sqlstate"))


def expect_seq(scenario, got, want):
    got = [simple(e) for e in got]
    if got != want:
        lines = [f"  want {w}\n  got  {g}" for w, g in zip(want + [None] * len(got),
                                                          got + [None] * len(want))
                 if w != g][:6]
        fail(scenario, f"{len(got)} events, {len(want)} wanted; first differences:\n" +
             "\n".join(lines))


def check_psycopg2(scenario, db, t):
    s = "SELECT 1; DELETE FROM %s WHERE id = 5" % t
    expect_seq(scenario, db, [
        ("query", f"DROP TABLE IF EXISTS {t}", None, 0, None),
        ("query", f"CREATE TABLE {t} (id int, name text, score float8)", None, 0, None),
        ("query", f"INSERT INTO {t} VALUES (1, 'abc', 2.5)", None, 1, None),
        ("query", f"INSERT INTO {t} VALUES (2, 'O''Brien', NULL)", None, 1, None),
        ("query", f"UPDATE {t} SET score = 1 WHERE id <= 2", None, 2, None),
        ("query", f"SELECT id, name FROM {t} ORDER BY id", None, 0, None),
        ("fetch", f"SELECT id, name FROM {t} ORDER BY id", None, 2, None),
        ("query", "SELEC 1", None, 0, "42601"),
        ("query", f"COPY {t} FROM STDIN", None, 0, None),
        ("fetch", f"COPY {t} FROM STDIN", None, 3, None),
        ("query", f"COPY {t} TO STDOUT", None, 0, None),
        ("fetch", f"COPY {t} TO STDOUT", None, 5, None),
        ("query", "LISTEN pgq", None, 0, None),
        ("query", "NOTIFY pgq, 'hello'", None, 0, None),
        ("query", s, None, 0, None),
        ("fetch", s, None, 1, None),
        ("close", None, None, 0, None)])
    copy_in = [e for e in db if e["op"] == "fetch" and "FROM STDIN" in e["query"]][0]
    if copy_in["bytes"] != len("3\tc\t1.5\n4\td\t2.5\n5\te\t3.5\n"):
        fail(scenario, f"COPY FROM STDIN carried {copy_in['bytes']} bytes of data")


def check_raw(scenario, db, t):
    ins = f"INSERT INTO {t} VALUES ($1, $2, $3, $4, $5)"
    sel = f"SELECT id, name FROM {t} WHERE id >= $1 ORDER BY id"
    cnt = f"SELECT count(*) FROM {t}"
    one = f"SELECT name FROM {t} WHERE id = 7"
    long_sql = "SELECT '" + "x" * 20000 + "' AS long_text"
    by_time = sorted(db, key=lambda e: e["ts"])  # the portal's fetches come late
    expect_seq(scenario, by_time, [
        ("query", f"DROP TABLE IF EXISTS {t}; CREATE TABLE {t} (id int8, name text, "
         "score float8, ok bool, data bytea)", None, 0, None),
        ("prepare", ins, None, 0, None),
        ("execute", ins, "7, 'seven', 0.5, 't', X'0001FF'", 1, None),
        ("execute", ins, "8, 'it''s', NULL, 'f', NULL", 1, None),
        ("query", "BEGIN", None, 0, None),
        ("prepare", sel, None, 0, None),
        ("execute", sel, "0", 0, None),
        ("execute", sel, "0", 0, None),
        ("execute", sel, "0", 0, None),
        ("fetch", sel, None, 1, None),
        ("fetch", sel, None, 1, None),
        ("fetch", sel, None, 0, None),
        ("query", "COMMIT", None, 0, None),
        ("prepare", "SELEC 2", None, 0, "42601"),
        ("prepare", cnt, None, 0, None),
        ("execute", cnt, None, 0, None),
        ("fetch", cnt, None, 1, None),
        ("query", one, None, 0, None),
        ("fetch", one, None, 1, None),
        ("query", long_sql, None, 0, None),
        ("fetch", long_sql, None, 1, None),
        ("query", "", None, 0, None),
        ("query", "LISTEN rawq", None, 0, None),
        ("query", f"NOTIFY rawq, 'x'; UPDATE {t} SET ok = true WHERE id = 8", None, 0, None),
        ("close", None, None, 0, None)])
    # one statement id per Parse, carried by its executes and fetches
    ids = {}
    for e in db:
        if e["op"] == "prepare":
            ids[e["query"]] = e["stmt_id"]
    for e in db:
        if e["op"] in ("execute", "fetch") and e.get("query") in (ins, sel, cnt):
            if e.get("stmt_id") != ids[e["query"]]:
                fail(scenario, f"{e['op']} of {e['query']!r} has stmt_id {e.get('stmt_id')}, "
                     f"its prepare {ids[e['query']]}")


def check_jdbc(scenario, db, t):
    """pg_client.java: the JDBC driver parses a statement unnamed for its
    first 4 uses and names it on the server at the 5th (prepareThreshold),
    so the 6th is an execute alone; the batch's executes are pipelined."""
    start = next(i for i, e in enumerate(db) if e.get("query", "").startswith("CREATE"))
    ins = f"INSERT INTO {t} VALUES ($1, $2, $3)"
    sel = f"SELECT id, name FROM {t} WHERE id <= $1"
    upd = f"UPDATE {t} SET score = $1 WHERE id = $2"
    create = f"CREATE TABLE {t} (id int, name text, score float8)"
    want = [("prepare", create, None, 0, None), ("execute", create, None, 0, None)]
    values = ["1, 'n1', 1.5", "2, 'O''Brien', 2.5", "3, 'n3', NULL", "4, 'n4', 4.5",
              "5, 'n5', 5.5", "6, 'n6', 6.5"]
    for i, v in enumerate(values):
        if i < 5:
            want.append(("prepare", ins, None, 0, None))
        want.append(("execute", ins, v, 1, None))
    want += [("prepare", sel, None, 0, None), ("execute", sel, "4", 0, None),
             ("fetch", sel, None, 4, None), ("prepare", "SELEC 1", None, 0, "42601"),
             ("prepare", upd, None, 0, None), ("execute", upd, "10, 1", 1, None),
             ("execute", upd, "20, 2", 1, None), ("execute", upd, "30, 3", 1, None),
             ("close", None, None, 0, None)]
    evs = db[start:]
    expect_seq(scenario, evs, want)
    ins_execs = [e for e in evs if e["op"] == "execute" and e["query"] == ins]
    if ins_execs[5]["stmt_id"] != ins_execs[4]["stmt_id"]:
        fail(scenario, "the 6th INSERT did not run the statement the 5th named")
    batch = [e for e in evs if e["op"] == "execute" and e["query"] == upd]
    if len({e["ts"] for e in batch}) != 1:
        fail(scenario, "the batch's executes were not sent together (pipelined)")


def check_psql(scenario, db, t):
    expect_seq(scenario, db, [
        ("query", f"CREATE TABLE {t} (a int, b text);", None, 0, None),
        ("query", f"INSERT INTO {t} VALUES (1, 'x'), (2, 'y'), (3, 'z');", None, 3, None),
        ("query", f"SELECT * FROM {t} WHERE a > 1;", None, 0, None),
        ("fetch", f"SELECT * FROM {t} WHERE a > 1;", None, 2, None),
        ("query", f"DELETE FROM {t};", None, 3, None),
        ("query", "SELEC 1;", None, 0, "42601"),
        ("close", None, None, 0, None)])


PGBENCH = [
    ("BEGIN;", None),
    ("UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2;", r"-?\d+, \d+"),
    ("SELECT abalance FROM pgbench_accounts WHERE aid = $1;", r"\d+"),
    ("UPDATE pgbench_tellers SET tbalance = tbalance + $1 WHERE tid = $2;", r"-?\d+, \d+"),
    ("UPDATE pgbench_branches SET bbalance = bbalance + $1 WHERE bid = $2;", r"-?\d+, 1"),
    ("INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ($1, $2, $3, $4, "
     "CURRENT_TIMESTAMP);", r"\d+, 1, \d+, -?\d+"),
    ("END;", None),
]


def check_pgbench(scenario, db, n):
    conns = {}
    for e in db:
        conns.setdefault(e["db_conn_id"], []).append(e)
    bench = [evs for evs in conns.values() if any(e["op"] == "execute" for e in evs)]
    if len(bench) != 1:
        fail(scenario, f"{len(bench)} connections with executes, 1 wanted")
    evs = [e for e in bench[0] if e["op"] != "close"]
    prepared = scenario.endswith("prepared")
    want_ops = []
    for i in range(n):
        for sql, params in PGBENCH:
            if not prepared or i == 0:
                want_ops.append(("prepare", sql))
            want_ops.append(("execute", sql))
            if sql.startswith("SELECT"):
                want_ops.append(("fetch", sql))
    got_ops = [(e["op"], e.get("query")) for e in evs]
    if got_ops != want_ops:
        fail(scenario, f"operations {got_ops[:10]}... want {want_ops[:10]}... "
             f"({len(got_ops)} vs {len(want_ops)})")
    stmt = {}
    for e in evs:
        sql = e["query"]
        pattern = dict(PGBENCH)[sql]
        if e["op"] == "prepare":
            stmt[sql] = e["stmt_id"]
            continue
        if e["stmt_id"] != stmt[sql]:
            fail(scenario, f"{e['op']} of {sql!r}: stmt_id {e['stmt_id']}, prepared as {stmt[sql]}")
        if e["op"] == "execute":
            if pattern and not re.fullmatch(pattern, e.get("params", "")):
                fail(scenario, f"execute of {sql!r}: params {e.get('params')!r}")
            if not pattern and "params" in e:
                fail(scenario, f"execute of {sql!r} has params {e['params']!r}")
            want_rows = 1 if sql.startswith(("UPDATE", "INSERT")) else 0
            if e["rows"] != want_rows:
                fail(scenario, f"execute of {sql!r}: rows {e['rows']}, want {want_rows}")
        elif e["rows"] != 1:
            fail(scenario, f"fetch of {sql!r}: rows {e['rows']}")
    if prepared and sorted(stmt.values()) != list(range(1, 8)):
        fail(scenario, f"statement ids {sorted(stmt.values())}, want 1..7")


PIPELINE = [("SELECT abalance FROM pgbench_accounts WHERE aid = $1;", r"\d+"),
            ("UPDATE pgbench_branches SET bbalance = bbalance + 1 WHERE bid = 1;", None)]


def check_pipeline(scenario, db, n):
    """pgbench -M prepared running a \\startpipeline script N times: libpq's
    pipeline mode sends both executes before reading an answer."""
    evs = [e for e in db if e["op"] in ("prepare", "execute", "fetch")
           and e["query"] in dict(PIPELINE)]
    prepares = [e["query"] for e in evs if e["op"] == "prepare"]
    if prepares != [q for q, _ in PIPELINE]:
        fail(scenario, f"prepares {prepares}")
    execs = [e for e in evs if e["op"] == "execute"]
    if len(execs) != 2 * n:
        fail(scenario, f"{len(execs)} executes, want {2 * n}")
    for i in range(0, len(execs), 2):
        sel, upd = execs[i], execs[i + 1]
        if (sel["query"], upd["query"]) != tuple(q for q, _ in PIPELINE):
            fail(scenario, f"execute order {sel['query']!r}, {upd['query']!r}")
        if not re.fullmatch(PIPELINE[0][1], sel.get("params", "")) or "params" in upd:
            fail(scenario, f"params {sel.get('params')!r} / {upd.get('params')!r}")
        if upd["rows"] != 1:
            fail(scenario, f"UPDATE rows {upd['rows']}")
        if upd["ts"] - sel["ts"] > sel["dur"]:
            fail(scenario, "the UPDATE was not sent before the SELECT's answer (no pipeline)")
    fetches = [e for e in evs if e["op"] == "fetch"]
    if len(fetches) != n or any(f["rows"] != 1 for f in fetches):
        fail(scenario, f"fetches {[f['rows'] for f in fetches]}")


def main():
    if len(sys.argv) not in (5, 6):
        raise SystemExit("usage: check-pg-trace.py PREPLAY TRACE_DIR SCENARIO TABLE [N]")
    preplay, trace, scenario, table = sys.argv[1:5]
    evs = events(preplay, trace)
    db = [e for e in evs if e["type"] == "db"]
    conn_ids = {e["conn_id"] for e in evs if e["type"] == "conn"}
    if not db:
        fail(scenario, "no db events")
    for e in db:
        if e.get("dialect") != "postgresql" or e["source"] != "wire":
            fail(scenario, f"event not from the PostgreSQL wire parser: {e}")
        if e["db_conn_id"] not in conn_ids:
            fail(scenario, f"db_conn_id {e['db_conn_id']} is no socket's conn_id")
        if e["error"] and e.get("sqlstate") is None:
            fail(scenario, f"an error without a SQLSTATE: {e}")
    if not scenario.startswith("pgbench") and len({e["db_conn_id"] for e in db}) != 1:
        fail(scenario, "events on more than one connection")
    if scenario == "psycopg2":
        check_psycopg2(scenario, db, table)
    elif scenario.startswith("raw"):
        check_raw(scenario, db, table)
    elif scenario.startswith("psql"):
        check_psql(scenario, db, table)
    elif scenario == "jdbc":
        check_jdbc(scenario, db, table)
    elif scenario == "pgbench-pipeline":
        check_pipeline(scenario, db, int(sys.argv[5]))
    elif scenario.startswith("pgbench"):
        check_pgbench(scenario, db, int(sys.argv[5]))
    else:
        raise SystemExit(f"unknown scenario {scenario}")
    print(f"check-pg-trace {scenario}: {len(db)} db events as expected")


if __name__ == "__main__":
    main()
