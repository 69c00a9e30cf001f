#!/usr/bin/python3
"""db_clients.py - the known statements of the DB tracer test and the Python
clients that run them: MySQLdb (links libmariadb.so: the C API wrappers see
it) and pymysql (speaks the protocol itself: only the wire parser sees it).
check-db-trace.py imports STATEMENTS to know what the trace must hold.

usage: db_clients.py mysqldb SOCKET NAME
       db_clients.py pymysql-tcp PORT NAME | pymysql-unix SOCKET NAME
       db_clients.py pymysql-tls PORT NAME  (TCP with TLS, no certificate check)
       db_clients.py sql NAME        (print the statements for `mariadb -e`)
       db_clients.py json NAME       (print them as JSON for db_client.js)
Runs under /usr/bin/python3 (Debian's MySQLdb and pymysql)."""
import json
import sys

SYNTAX_ERROR = 1064


def statements(name):
    """(sql, affected_rows, result_rows, error) in the order they run; the
    database is dbt_NAME so parallel runs never collide."""
    db = "dbt_" + name
    return [
        ("CREATE DATABASE %s" % db, 1, None, 0),
        ("CREATE TABLE %s.t (id INT PRIMARY KEY, name VARCHAR(32))" % db, 0, None, 0),
        ("INSERT INTO %s.t VALUES (1, 'abc'), (2, 'O''Brien'), (3, NULL)" % db, 3, None, 0),
        ("SELECT id, name FROM %s.t ORDER BY id" % db, 0, 3, 0),
        ("UPDATE %s.t SET name = 'z' WHERE id <= 2" % db, 2, None, 0),
        ("SELEC oops", 0, None, SYNTAX_ERROR),
        ("DROP DATABASE %s" % db, 1, None, 0),
    ]


def run(conn, name):
    cur = conn.cursor()
    for sql, _affected, result_rows, error in statements(name):
        try:
            cur.execute(sql)
        except Exception as e:  # the driver's error class differs per driver
            if e.args[0] != error:
                sys.exit("db_clients: %s failed with %r, expected error %d" % (sql, e.args, error))
            continue
        if error:
            sys.exit("db_clients: %s succeeded, expected error %d" % (sql, error))
        if result_rows is not None and len(cur.fetchall()) != result_rows:
            sys.exit("db_clients: %s did not return %d rows" % (sql, result_rows))
    cur.close()
    conn.close()


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "sql":
        print("; ".join(s[0] for s in statements(sys.argv[2])))
        return
    if len(sys.argv) == 3 and sys.argv[1] == "json":
        print(json.dumps(statements(sys.argv[2])))
        return
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    kind, where, name = sys.argv[1:]
    if kind == "mysqldb":
        import MySQLdb
        run(MySQLdb.connect(unix_socket=where, user="root"), name)
    elif kind == "pymysql-tcp":
        import pymysql
        run(pymysql.connect(host="127.0.0.1", port=int(where), user="root"), name)
    elif kind == "pymysql-unix":
        import pymysql
        run(pymysql.connect(unix_socket=where, user="root"), name)
    elif kind == "pymysql-tls":
        import ssl
        import pymysql
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        conn = pymysql.connect(host="127.0.0.1", port=int(where), user="root", ssl=ctx)
        if not isinstance(conn._sock, ssl.SSLSocket):
            sys.exit("db_clients: pymysql-tls: the connection is not encrypted")
        run(conn, name)
    else:
        sys.exit("db_clients: unknown client %r" % kind)


if __name__ == "__main__":
    main()
