#!/usr/bin/env bash
# tests/replay/test-pg-replay.sh - a two-tier app on PostgreSQL recorded,
# analyzed and replayed end to end (issue 26): pg_app.py (http.server with
# psycopg2, and our own extended-protocol client for /raw) against a
# private PostgreSQL 15 (tests/apps/pg-start.sh) is recorded serving GETs
# and INSERTs; `preplay analyze` must give one request each and PostgreSQL
# DB ops; `preplay run --db postgresql://...` (password from
# PREPLAY_DB_PASSWORD, never on a command line) replays two intervals of
# the whole recording each against the database reset to its starting
# state before each (pg_dump, pg_restore --clean): no DB error (the
# INSERTs' primary keys would collide in the second interval if the state
# were not restored before it), and the server's statement log shows the
# replay's sessions (application_name preplay-replay) sending every
# statement text the app sent, /raw's as an execute of the statement it
# prepared once per connection.
set -euo pipefail
: "${PREPLAY_BIN:?set by ctest}" "${PREPLAY_SOURCE_DIR:?}"
here="$PREPLAY_SOURCE_DIR/tests/replay"
apps="$PREPLAY_SOURCE_DIR/tests/apps"
py=/usr/bin/python3
pgbin=/usr/lib/postgresql/15/bin
"$py" -c 'import psycopg2' ||
  { echo "test-pg-replay: /usr/bin/python3 lacks psycopg2 (apt-get install python3-psycopg2)" >&2; exit 1; }
command -v pg_dump >/dev/null && command -v pg_restore >/dev/null ||
  { echo "test-pg-replay: pg_dump/pg_restore not found (apt-get install postgresql-client)" >&2; exit 1; }
work=$(mktemp -d /tmp/preplay-pgr.XXXXXX)
app=
cleanup() {
  [ -n "$app" ] && kill -TERM "$app" 2>/dev/null || true
  "$apps/pg-stop.sh" "$work/db" || true
  [ -n "${KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "test-pg-replay: $*" >&2; exit 1; }
port=$("$py" "$PREPLAY_SOURCE_DIR/tests/common/free_port.py")
"$apps/pg-start.sh" "$work/db" "$port"
export PGHOST=$work/db PGPORT=$port PGUSER=preplay
psql() { "$pgbin/psql" -X -q -v ON_ERROR_STOP=1 "$@"; }
psql -d postgres -c "CREATE DATABASE appdb"
reset_db() {
  psql -d appdb -c "DROP TABLE IF EXISTS items" \
    -c "CREATE TABLE items (id int PRIMARY KEY, name text, score float8)" \
    -c "INSERT INTO items SELECT g, 'item-' || g, g * 1.5 FROM generate_series(1, 10) g"
}
reset_db

lport=$("$py" "$PREPLAY_SOURCE_DIR/tests/common/free_port.py")
"$PREPLAY_BIN" record -q --no-cpu-scores -o "$work/rec" -c app -- \
  "$py" "$here/pg_app.py" 127.0.0.1 "$port" appdb "$lport" >"$work/app.out" 2>&1 &
app=$!
for _ in $(seq 1 100); do grep -q listening "$work/app.out" 2>/dev/null && break; sleep 0.1; done
grep -q listening "$work/app.out" || fail "the app did not start: $(cat "$work/app.out")"
get() { curl -sf --max-time 30 "$@" || fail "request $* failed: $(tail -n 5 "$work/app.out")"; }
requests=0
for i in 1 2 3 4; do
  [ "$(get "http://127.0.0.1:$lport/item?id=$i")" = "item-$i $((i * 3 / 2))$([ $((i % 2)) = 1 ] && echo .5 || echo .0)" ] ||
    fail "/item?id=$i answered wrong"
  [ "$(get "http://127.0.0.1:$lport/raw?id=$i")" = "1 rows" ] || fail "/raw?id=$i answered wrong"
  [ "$(get -X POST -d x "http://127.0.0.1:$lport/add?id=$((100 + i))")" = added ] || fail "/add"
  requests=$((requests + 3))
done
kill -TERM "$app"
wait "$app" || true
app=
"$PREPLAY_BIN" analyze "$work/rec" -o "$work/plan" >"$work/analyze.out" 2>&1 ||
  fail "analyze: $(cat "$work/analyze.out")"
grep -q ": $requests requests," "$work/analyze.out" || fail "analyze: $(cat "$work/analyze.out")"
# what the app sent: every statement text of its query and execute events
"$PREPLAY_BIN" dump --json "$work/rec" |
  jq -r 'select(.type == "db" and (.op == "query" or .op == "execute") and .dialect == "postgresql") | .query' |
  sort -u >"$work/recorded.txt"
grep -qx 'SELECT score FROM items WHERE id = $1' "$work/recorded.txt" ||
  fail "the trace lacks /raw's prepared statement: $(cat "$work/recorded.txt")"
[ "$(grep -c . "$work/recorded.txt")" -ge 10 ] || fail "few statements recorded: $(cat "$work/recorded.txt")"

reset_db
psql -d postgres -c "ALTER SYSTEM SET log_statement = 'all'" \
  -c "ALTER SYSTEM SET log_line_prefix = '%a|'" -c "SELECT pg_reload_conf()" >/dev/null
: >"$work/db/server.log"
PREPLAY_DB_PASSWORD=preplay-pw "$PREPLAY_BIN" run "$work/plan" \
  --db "postgresql://preplay@127.0.0.1:$port/appdb" --max-intervals 2 \
  --cpu-ratio 1 -o "$work/out.json" 2>"$work/run.err" || fail "run: $(cat "$work/run.err")"
"$py" - "$work/out.json" "$port" <<'PY' || fail "replay results: $(cat "$work/run.err")"
import json, sys
d = json.load(open(sys.argv[1]))
errs = d["db_errors"]
if errs:
    sys.exit("DB errors on replay: %s" % [(e["code"], e["message"][:100]) for e in errs])
reqs = sum(i["requests"] for i in d["intervals"])
if len(d["intervals"]) < 2 or not reqs:
    sys.exit("%d intervals, %d requests" % (len(d["intervals"]), reqs))
if "pg_restore" not in d["state_restore"]["db_method"]:
    sys.exit("db_method %r" % d["state_restore"]["db_method"])
db = d["placement"]["db"]
if (db["address"], db["transport"], db["where"]) != ("127.0.0.1:" + sys.argv[2], "tcp", "local"):
    sys.exit("placement.db %r" % db)
print("replay: %d intervals, %d requests, no DB error" % (len(d["intervals"]), reqs))
PY
# what the replay sent, as the server logged it
sed -n 's/^preplay-replay|LOG:  statement: //p; s/^preplay-replay|LOG:  execute [^:]*: //p' \
  "$work/db/server.log" | sort -u >"$work/replayed.txt"
missing=$(comm -23 "$work/recorded.txt" "$work/replayed.txt")
[ -z "$missing" ] || fail "statements the app sent that the replay did not: $missing"
grep -q '^preplay-replay|LOG:  execute preplay_0: SELECT score FROM items WHERE id = \$1' \
  "$work/db/server.log" || fail "/raw was not replayed as an execute of its prepared statement"
# the same database through its socket directory (libpq's ?host=DIR, as
# Debian's Redmine and the accuracy bench give it): the run's placement
# names that socket, not MariaDB's
PREPLAY_DB_PASSWORD=preplay-pw "$PREPLAY_BIN" run "$work/plan" \
  --db "postgresql://preplay@/appdb?host=$work/db&port=$port" --max-intervals 1 \
  --cpu-ratio 1 -o "$work/sock.json" 2>"$work/sock.err" || fail "run by socket: $(cat "$work/sock.err")"
jq -e --arg a "$work/db/.s.PGSQL.$port" \
  '.placement.db | .address == $a and .transport == "unix" and .where == "local" and .cpu_cgroup != null' \
  "$work/sock.json" >/dev/null || fail "placement by socket: $(jq -c .placement.db "$work/sock.json")"
echo "test-pg-replay: ok ($(grep -c . "$work/recorded.txt") statements recorded, all replayed)"
