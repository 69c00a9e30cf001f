#!/usr/bin/env bash
# tests/tracer-db/test-pg.sh - PostgreSQL DB events from the wire
# (tracer/preload/pg_wire.c, issue 26): a private PostgreSQL 15 server
# (tests/apps/pg-start.sh: a free port, its socket in a temp dir) and
# clients nobody here wrote, recorded with no --db-port/--db-socket (the
# server is told by its answer to the StartupMessage), each checked by
# check-pg-trace.py on its statement texts, parameters, rows and SQLSTATEs:
#   psql              the CLI over TCP (SSLRequest declined, SCRAM login)
#   psql-port         the same told by --db-port instead (dialect from the
#                     client's first bytes)
#   psycopg2          /usr/bin/python3 + psycopg2 (libpq) over the socket
#   raw, raw-tcp      pg_clients.py's own protocol client: extended protocol
#   jdbc              the PostgreSQL JDBC driver (Java speaks the protocol)
#   pgbench-prepared  pgbench -M prepared over TCP, pgbench -M extended over
#   pgbench-extended  the socket (pgbench is libpq's C client)
#   pgbench-pipeline  a \startpipeline script: libpq's pipeline mode
#   psql-tls          psql over TLS (sslmode=require): the SSLRequest accepted,
#                     the plaintext from OpenSSL's SSL_read/SSL_write
# then pg_greeting_peer.py: a server whose answer to a StartupMessage is not
# PostgreSQL's must leave the client's query as bytes (and a good answer
# must not, so the negatives can fail).
# PART (the first argument): `clients` runs psql to jdbc, `bench` pgbench,
# TLS and the negatives (two ctests, each under a minute); none: all.
set -euo pipefail
: "${PREPLAY_BIN:?set by ctest}" "${PREPLAY_SOURCE_DIR:?}"
part=${1:-all}
case "$part" in all | clients | bench) ;; *) echo "usage: test-pg.sh [clients|bench]" >&2; exit 2 ;; esac
here="$PREPLAY_SOURCE_DIR/tests/tracer-db"
apps="$PREPLAY_SOURCE_DIR/tests/apps"
py=/usr/bin/python3
pgbin=/usr/lib/postgresql/15/bin
"$py" -c 'import psycopg2' ||
  { echo "test-pg: /usr/bin/python3 lacks psycopg2 (apt-get install python3-psycopg2)" >&2; exit 1; }
for tool in psql pgbench; do
  [ -x "$pgbin/$tool" ] || { echo "test-pg: $pgbin/$tool not found (apt-get install postgresql-client postgresql)" >&2; exit 1; }
done

work=$(mktemp -d /tmp/preplay-pg.XXXXXX)
cleanup() {
  "$apps/pg-stop.sh" "$work/db" || true
  rm -rf "$work"
}
trap cleanup EXIT
failed=0
fail() { echo "test-pg: $*" >&2; failed=$((failed + 1)); }
port=$("$py" "$PREPLAY_SOURCE_DIR/tests/common/free_port.py")
"$apps/pg-start.sh" "$work/db" "$port"
sock="$work/db"
export PGPASSWORD=preplay-pw PGUSER=preplay PGDATABASE=postgres
rec=("$PREPLAY_BIN" record -q --no-cpu-scores)

run() { # SCENARIO TABLE CHECK_ARG... -- CMD...
  local scenario=$1 table=$2 extra=()
  shift 2
  while [ "$1" != "--" ]; do extra+=("$1"); shift; done
  shift
  if ! "${rec[@]}" -o "$work/$scenario" -- "$@" >"$work/$scenario.out" 2>&1; then
    fail "$scenario: the client failed under preplay record: $(tail -n 3 "$work/$scenario.out")"
    return
  fi
  "$py" "$here/check-pg-trace.py" "$PREPLAY_BIN" "$work/$scenario" "$scenario" "$table" \
    "${extra[@]}" || failed=$((failed + 1))
}
psql_script() { # TABLE
  echo "CREATE TABLE $1 (a int, b text);"
  echo "INSERT INTO $1 VALUES (1, 'x'), (2, 'y'), (3, 'z');"
  echo "SELECT * FROM $1 WHERE a > 1;"
  echo "DELETE FROM $1;"
  echo "SELEC 1;"
}
if [ "$part" != bench ]; then
psql_script pq1 >"$work/pq1.sql"
psql_script pq2 >"$work/pq2.sql"
run psql pq1 -- "$pgbin/psql" -X -q -h 127.0.0.1 -p "$port" -f "$work/pq1.sql"
rec+=(--db-port "$port")
run psql-port pq2 -- "$pgbin/psql" -X -q -h 127.0.0.1 -p "$port" -f "$work/pq2.sql"
unset 'rec[-1]' 'rec[-1]'
run psycopg2 tp2 -- "$py" "$here/pg_clients.py" psycopg2 "$sock" "$port" tp2
run raw traw -- "$py" "$here/pg_clients.py" raw "$sock" "$port" traw
run raw-tcp trawt -- "$py" "$here/pg_clients.py" raw 127.0.0.1 "$port" trawt
jdbc=/usr/share/java/postgresql.jar
[ -f "$jdbc" ] && command -v java >/dev/null ||
  { echo "test-pg: $jdbc or java not found (apt-get install libpostgresql-jdbc-java default-jdk-headless)" >&2; exit 1; }
run jdbc tjdbc -- java -cp "$jdbc" "$here/pg_client.java" "$port" tjdbc
fi
if [ "$part" != clients ]; then
"$pgbin/pgbench" -h "$sock" -p "$port" -i -s 1 -q >"$work/pgbench-init.out" 2>&1 ||
  fail "pgbench -i failed: $(tail -n 3 "$work/pgbench-init.out")"
run pgbench-prepared - 5 -- "$pgbin/pgbench" -h 127.0.0.1 -p "$port" -n -c 1 -t 5 -M prepared
run pgbench-extended - 3 -- "$pgbin/pgbench" -h "$sock" -p "$port" -n -c 1 -t 3 -M extended
printf '%s\n' '\set aid random(1, 100000)' '\startpipeline' \
  'SELECT abalance FROM pgbench_accounts WHERE aid = :aid;' \
  'UPDATE pgbench_branches SET bbalance = bbalance + 1 WHERE bid = 1;' '\endpipeline' \
  >"$work/pipeline.sql"
run pgbench-pipeline - 4 -- "$pgbin/pgbench" -h 127.0.0.1 -p "$port" -n -c 1 -t 4 -M prepared \
  -f "$work/pipeline.sql"

# ---- TLS: the SSLRequest accepted, the conversation read from SSL_read/SSL_write ----
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/db/key.pem" -out "$work/db/cert.pem" \
  -days 1 -subj /CN=127.0.0.1 >/dev/null 2>&1 || fail "openssl could not make a certificate"
[ "$(id -u)" -eq 0 ] && chown postgres: "$work/db/key.pem" "$work/db/cert.pem"
chmod 600 "$work/db/key.pem"
"$pgbin/psql" -X -q -h "$sock" -p "$port" -c "ALTER SYSTEM SET ssl = on" \
  -c "ALTER SYSTEM SET ssl_cert_file = '$work/db/cert.pem'" \
  -c "ALTER SYSTEM SET ssl_key_file = '$work/db/key.pem'" -c "SELECT pg_reload_conf()" >/dev/null
sleep 0.5
psql_script pq3 >"$work/pq3.sql"
# sslmode=require: libpq gives up rather than talk in clear
run psql-tls pq3 -- env PGSSLMODE=require "$pgbin/psql" -X -q -h 127.0.0.1 -p "$port" -f "$work/pq3.sql"

# ---- negatives: answers to a StartupMessage that are not PostgreSQL's ----
for answer in ok http badauth badlen; do
  if ! "${rec[@]}" -o "$work/peer-$answer" -- "$py" "$here/pg_greeting_peer.py" "$answer"; then
    fail "pg_greeting_peer.py $answer failed under preplay record"
    continue
  fi
  n=$("$PREPLAY_BIN" dump --json "$work/peer-$answer" | jq -s '[.[] | select(.type == "db" and .op == "query" and .query == "SELECT 42" and .rows == 0)] | length')
  want=0
  [ "$answer" = ok ] && want=1
  [ "$n" = "$want" ] || fail "peer $answer: $n query events for SELECT 42, want $want"
done

fi

if [ "$failed" -ne 0 ]; then
  echo "test-pg: $failed failures" >&2
  exit 1
fi
echo "test-pg: ok"
