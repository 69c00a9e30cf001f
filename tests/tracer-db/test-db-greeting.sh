#!/usr/bin/env bash
# tests/tracer-db/test-db-greeting.sh - a DB server is told by its greeting,
# wherever it listens (issue 21 item 6). A private MariaDB server listens on
# a port from free_port.py and on a socket named q7.sk (neither is a default);
# clients nobody here wrote are recorded with NO --db-port/--db-socket, and
# check-db-trace.py must find exactly their statements as DB events:
#   pymysql-tcp, pymysql-unix  pymysql (speaks the protocol itself)
#   mysqldb                    /usr/bin/python3 + MySQLdb (libmariadb)
#   php                        PHP mysqli over the socket (mysqlnd)
#   pymysql-tls                TLS: the greeting comes in clear before it
# then a front end (`php -S` with PDO over TCP) serves requests, and its plan
# must have DB ops and no external calls. Negative: db_greeting_peer.py's
# server sends first bytes that start like a greeting but are not one (a
# nonzero filler, protocol 9, a version without a digit) or an HTTP
# response, and the client's MySQL-shaped query must stay bytes; the same
# script with a good greeting (whole or split in 1-byte sends) must give the
# query as a DB event, so the negatives can fail.
set -euo pipefail
: "${PREPLAY_BIN:?set by ctest}" "${PREPLAY_SOURCE_DIR:?}"
here="$PREPLAY_SOURCE_DIR/tests/tracer-db"
apps="$PREPLAY_SOURCE_DIR/tests/apps"
py=/usr/bin/python3
"$py" -c 'import MySQLdb, pymysql' ||
  { echo "test-db-greeting: /usr/bin/python3 lacks MySQLdb or pymysql (apt-get install python3-mysqldb python3-pymysql)" >&2; exit 1; }
php -r 'exit(function_exists("mysqli_init") && class_exists("PDO") && in_array("mysql", PDO::getAvailableDrivers()) ? 0 : 1);' ||
  { echo "test-db-greeting: php with mysqli and pdo_mysql not found (apt-get install php8.2-cli php8.2-mysql)" >&2; exit 1; }
command -v jq >/dev/null || { echo "test-db-greeting: jq not found" >&2; exit 1; }

work=$(mktemp -d /tmp/preplay-dbg.XXXXXX)
front=
cleanup() {
  [ -n "$front" ] && kill -TERM "$front" 2>/dev/null || true
  "$apps/db-stop.sh" "$work/db" || true
  rm -rf "$work"
}
trap cleanup EXIT
failed=0
fail() { echo "test-db-greeting: $*" >&2; failed=$((failed + 1)); }
port=$("$py" "$PREPLAY_SOURCE_DIR/tests/common/free_port.py")
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/key.pem" -out "$work/cert.pem" -days 1 \
  -subj /CN=127.0.0.1 >/dev/null 2>&1 || { echo "test-db-greeting: openssl could not make a certificate" >&2; exit 1; }
PREPLAY_DB_SOCKET_NAME=q7.sk "$apps/db-start.sh" "$work/db" "$port" -- \
  --ssl-cert="$work/cert.pem" --ssl-key="$work/key.pem"
sock="$work/db/q7.sk"
rec=("$PREPLAY_BIN" record -q --no-cpu-scores) # no --db-port, no --db-socket

run() { # SCENARIO NAME CMD...
  local scenario=$1 name=$2
  shift 2
  if ! "${rec[@]}" -o "$work/$scenario" -- "$@"; then
    fail "$scenario: the client failed under preplay record"
    return
  fi
  "$py" "$here/check-db-trace.py" "$PREPLAY_BIN" "$work/$scenario" "$scenario" "$name" "$sock" "$port" ||
    failed=$((failed + 1))
}
run pymysql-tcp pt "$py" "$here/db_clients.py" pymysql-tcp "$port" pt
run pymysql-unix pu "$py" "$here/db_clients.py" pymysql-unix "$sock" pu
run mysqldb m "$py" "$here/db_clients.py" mysqldb "$sock" m
run php php php "$here/db_client.php" "$sock" dbt_php
run pymysql-tls ptls "$py" "$here/db_clients.py" pymysql-tls "$port" ptls

# ---- the plan: a front end whose DB is on the unusual port ----
fport=$("$py" "$PREPLAY_SOURCE_DIR/tests/common/free_port.py")
DB_PORT=$port "${rec[@]}" -o "$work/front" -- php -S "127.0.0.1:$fport" "$here/db_greeting_app.php" \
  >"$work/front.log" 2>&1 &
front=$!
requests=5
for _ in $(seq 1 100); do
  "$py" -c "import socket; socket.create_connection(('127.0.0.1', $fport)).close()" 2>/dev/null && break
  sleep 0.1
done
for _ in $(seq 1 "$requests"); do
  "$py" -c "import urllib.request as u; b = u.urlopen('http://127.0.0.1:$fport/').read(); assert b.startswith(b'rows ')" ||
    fail "front end: a request failed ($(tail -n 3 "$work/front.log"))"
done
kill -TERM "$front"
wait "$front" || true
front=
if "$PREPLAY_BIN" analyze "$work/front" -o "$work/front.plan" >"$work/analyze.out" 2>"$work/analyze.err"; then
  # 2 statements per request
  grep -qE ": $requests requests, .* 0 external calls, $((2 * requests)) DB ops;" "$work/analyze.out" ||
    fail "plan: want $requests requests, 0 external calls, $((2 * requests)) DB ops: $(cat "$work/analyze.out" "$work/analyze.err")"
  ! grep -q "untraced peers" "$work/analyze.err" || fail "plan: external calls: $(cat "$work/analyze.err")"
else
  fail "analyze: $(cat "$work/analyze.err")"
fi

# ---- what is not a greeting never makes a DB connection ----
peer() { # MODE WANT: the number of DB events the run must show
  local out=$work/peer-$1
  if ! "${rec[@]}" -o "$out" -- "$py" "$here/db_greeting_peer.py" "$1"; then
    fail "peer $1: the script failed under preplay record"
    return
  fi
  local n
  n=$("$PREPLAY_BIN" dump --json "$out"/*.trace | jq -s '[.[] | select(.type == "db")] | length')
  [ "$n" = "$2" ] || fail "peer $1: $n DB events, want $2"
}
peer good 1
peer split 1
for mode in filler proto9 noversion http; do peer "$mode" 0; done
# a real HTTP server and client (python's http.server, urllib): no DB events
hport=$("$py" "$PREPLAY_SOURCE_DIR/tests/common/free_port.py")
"${rec[@]}" -o "$work/http" -- "$py" -c "
import http.server, threading, urllib.request
s = http.server.HTTPServer(('127.0.0.1', $hport), http.server.SimpleHTTPRequestHandler)
threading.Thread(target=s.serve_forever, daemon=True).start()
for _ in range(3):
    urllib.request.urlopen('http://127.0.0.1:$hport/').read()
s.shutdown()" >/dev/null 2>&1 || fail "http: the script failed under preplay record"
n=$("$PREPLAY_BIN" dump --json "$work"/http/*.trace | jq -s '[.[] | select(.type == "db")] | length')
[ "$n" = 0 ] || fail "http: $n DB events, want 0"

[ "$failed" = 0 ] || { echo "test-db-greeting: $failed failures" >&2; exit 1; }
echo "test-db-greeting: ok (5 clients, the plan, 7 peers told apart; no --db-port/--db-socket)"
