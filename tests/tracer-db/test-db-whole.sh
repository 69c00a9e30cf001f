#!/usr/bin/env bash
# tests/tracer-db/test-db-whole.sh - DB statements are captured whole up to
# --db-max-statement and a longer one is marked cut, never replayed as
# broken SQL (issue 21 item 5: a PHP app's ~11 KB saves were recorded cut
# at 8 KiB and failed on replay with syntax errors nobody reported).
# A private MariaDB (tests/apps/db-start.sh); the statements come from
# db_big.py through two client libraries nobody here wrote: MySQLdb
# (libmariadb: the C API wrappers) and pymysql (the wire parser, which
# gathers a statement over the many sends and, above 16 MiB, packets it
# takes). For each library:
#   --db-max-statement 4M  the ~11 KB INSERT and REPLACE and the ~2 MB
#                          INSERT are in the trace whole: same length and
#                          sha256 as what the client sent, no cut flag
#   default (1M)           the 11 KB ones whole, the 2 MB one cut: its
#                          first 1 MiB, flag "cut", query_len its real length
#   --db-max-statement 4k  all three cut: their first 4096 bytes (sha256 of
#                          the client's prefix), query_len the real length
# Then a threaded HTTP server doing those saves per POST (db_big.py
# server, pymysql), recorded with the default cap, analyzed and replayed
# with `preplay run` against a fresh database: no SQL error at all, the
# 2 MB INSERTs counted as `db_cut` (replayed as waits), and run says so.
set -euo pipefail
: "${PREPLAY_BIN:?set by ctest}" "${PREPLAY_SOURCE_DIR:?}"
here="$PREPLAY_SOURCE_DIR/tests/tracer-db"
apps="$PREPLAY_SOURCE_DIR/tests/apps"
py=/usr/bin/python3
"$py" -c 'import MySQLdb, pymysql' ||
  { echo "test-db-whole: /usr/bin/python3 lacks MySQLdb or pymysql (apt-get install python3-mysqldb python3-pymysql)" >&2; exit 1; }
command -v curl >/dev/null || { echo "test-db-whole: curl missing" >&2; exit 1; }
work=$(mktemp -d /tmp/preplay-dbw.XXXXXX)
server_pid=
cleanup() {
  [ -n "$server_pid" ] && kill -TERM "$server_pid" 2>/dev/null || true
  "$apps/db-stop.sh" "$work/db" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
"$apps/db-start.sh" "$work/db" >"$work/db-start.out" 2>&1 ||
  fail "db-start: $(cat "$work/db-start.out")"
sock="$work/db/mariadb.sock"
sql() { mariadb --no-defaults -S "$sock" -uroot -N -e "$1"; }
schema() {
  sql "SET GLOBAL max_allowed_packet = 64 * 1024 * 1024; DROP DATABASE IF EXISTS bw; CREATE DATABASE bw;
       CREATE TABLE bw.t (id INT AUTO_INCREMENT PRIMARY KEY, v LONGTEXT);
       CREATE TABLE bw.r (k INT PRIMARY KEY, v LONGTEXT)"
}
schema
rec=("$PREPLAY_BIN" record -q --no-cpu-scores --db-socket mariadb.sock)

# check TRACE_DIR SENT_FILE CAP: the trace's three INSERT/REPLACE events
# against what the client sent
check() {
  "$PREPLAY_BIN" dump --json "$1"/*.trace | grep '"type":"db"' >"$1.db" || true
  "$py" - "$1.db" "$2" "$3" <<'PY'
import hashlib, json, sys
events = [json.loads(l) for l in open(sys.argv[1])]
sent = [l.split() for l in open(sys.argv[2])]
cap = int(sys.argv[3])
qs = [e for e in events if e.get("query", "").startswith(("INSERT", "REPLACE"))]
errors = []
if len(qs) != len(sent):
    sys.exit("expected %d statements, the trace has %d: %s" % (len(sent), len(qs), qs))
for e, (n, sha, sha4k) in zip(qs, sent):
    n = int(n)
    q = e["query"].encode()
    cut = "cut" in e.get("flags", [])
    if e["error"]:
        errors.append("statement of %d bytes failed when recorded: %d" % (n, e["error"]))
    if n <= cap:
        if cut or "query_len" in e or len(q) != n or hashlib.sha256(q).hexdigest() != sha:
            errors.append("%s of %d bytes (cap %d) not whole: %d bytes, flags %s" %
                          (e["source"], n, cap, len(q), e.get("flags")))
    else:
        want = sha4k if cap == 4096 else None
        if not cut or e.get("query_len") != n or len(q) != cap or \
                (want and hashlib.sha256(q).hexdigest() != want):
            errors.append("%s of %d bytes (cap %d) not marked cut with its length: "
                          "%d bytes kept, flags %s, query_len %s" %
                          (e["source"], n, cap, len(q), e.get("flags"), e.get("query_len")))
for x in errors:
    print(x)
sys.exit(1 if errors else 0)
PY
}
for mod in mysqldb pymysql; do
  for cap in 4M default 4k; do
    d="$work/$mod-$cap"
    opt=()
    [ "$cap" = default ] || opt=(--db-max-statement "$cap")
    "${rec[@]}" "${opt[@]}" -o "$d" -- "$py" "$here/db_big.py" client "$mod" "$sock" "$d.sent"
    bytes=$(case $cap in 4M) echo 4194304 ;; default) echo 1048576 ;; 4k) echo 4096 ;; esac)
    check "$d" "$d.sent" "$bytes" || fail "$mod, --db-max-statement $cap"
    echo "ok: $mod, --db-max-statement $cap"
  done
done

# ---- record a server's saves, replay them against a fresh database ----
schema
port=$("$py" "$PREPLAY_SOURCE_DIR/tests/common/free_port.py")
"${rec[@]}" -o "$work/srv" -c saver -- "$py" "$here/db_big.py" server pymysql "$sock" "$port" \
  >"$work/srv.out" 2>&1 &
server_pid=$!
for ((i = 0; i < 100; i++)); do grep -q listening "$work/srv.out" 2>/dev/null && break; sleep 0.1; done
grep -q listening "$work/srv.out" || fail "the server did not start: $(cat "$work/srv.out")"
saves=6
for ((i = 0; i < saves; i++)); do
  [ "$(curl -s --max-time 30 -X POST -d x "http://127.0.0.1:$port/save")" = saved ] ||
    fail "save $i"
done
kill -TERM "$server_pid"
wait "$server_pid" || true
server_pid=
"$PREPLAY_BIN" analyze "$work/srv" -o "$work/plan" >"$work/analyze.out" 2>&1 ||
  fail "analyze: $(cat "$work/analyze.out")"
grep -q ": $saves requests," "$work/analyze.out" || fail "analyze: $(cat "$work/analyze.out")"
grep -q "warning: $saves DB ops were recorded cut" "$work/analyze.out" ||
  fail "analyze did not warn of the cut statements: $(cat "$work/analyze.out")"
schema # a fresh database: what the recording started from
"$PREPLAY_BIN" run "$work/plan" --db "mysql://root@localhost/bw?socket=$sock" --max-intervals 1 \
  --interval 2s --cpu-ratio 1 -o "$work/out.json" 2>"$work/run.err" ||
  fail "run: $(cat "$work/run.err")"
cat "$work/run.err"
grep -q "^run: [1-9][0-9]* DB statements were recorded cut" "$work/run.err" ||
  fail "run did not say how many statements were cut"
"$py" - "$work/out.json" <<'PY' || fail "replay results"
import json, sys
d = json.load(open(sys.argv[1]))
errors = []
if d["db_errors"]:
    errors.append("SQL errors on replay: %s" % [(e["code"], e["message"][:80]) for e in d["db_errors"]])
reqs = sum(i["requests"] for i in d["intervals"])
if not reqs or d["db_cut"] != reqs:
    errors.append("db_cut %s, expected one per request (%d)" % (d["db_cut"], reqs))
print("replay: %d requests, db_cut %d, %d SQL errors" % (reqs, d["db_cut"], len(d["db_errors"])))
for x in errors:
    print(x)
sys.exit(1 if errors else 0)
PY
echo PASS
