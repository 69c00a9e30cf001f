#!/usr/bin/env bash
# tests/tracer-db/test-pg-late.sh - a PostgreSQL connection the recorder
# meets mid-conversation, as `record --off` then SIGUSR1 does to an app
# that connected during an untraced warm-up (the Redmine accuracy
# benchmark on PostgreSQL): the connection is named by --db-socket, its
# StartupMessage came before tracing, so its dialect must be told from the
# client's typed messages (not taken for MySQL: no DB event at all); and a
# client that prepares 40 named statements before executing each by name,
# as Rails does, must get every EXECUTE's text (the parser remembered 16);
# a SELECT without rows answered to an Execute has a FETCH of no time (it
# took the time since the last result set's start).
# Must fail if either comes back; never leaves the server running.
set -euo pipefail
: "${PREPLAY_BIN:?set by ctest}" "${PREPLAY_SOURCE_DIR:?}"
here="$PREPLAY_SOURCE_DIR/tests/tracer-db"
apps="$PREPLAY_SOURCE_DIR/tests/apps"
py=/usr/bin/python3
work=$(mktemp -d /tmp/preplay-pg-late.XXXXXX)
rp=""
cleanup() {
  [ -n "$rp" ] && kill "$rp" 2>/dev/null
  "$apps/pg-stop.sh" "$work/db" || true
  rm -rf "$work"
}
trap cleanup EXIT
port=$("$py" "$PREPLAY_SOURCE_DIR/tests/common/free_port.py")
PG_START_SOCKET_ONLY=1 "$apps/pg-start.sh" "$work/db" "$port"
mkdir "$work/sync"
"$PREPLAY_BIN" record -q --no-cpu-scores --off --db-socket ".s.PGSQL.$port" -o "$work/trace" -- \
  "$py" "$here/pg_clients.py" late "$work/db" "$port" "$work/sync" >"$work/rec.out" 2>&1 &
rp=$!
for ((i = 0; i < 300; i++)); do [ -e "$work/sync/ready" ] && break; sleep 0.1; done
[ -e "$work/sync/ready" ] || { cat "$work/rec.out" >&2; echo "test-pg-late: the client never got ready" >&2; exit 1; }
kill -USR1 "$rp"
sleep 0.5
touch "$work/sync/go"
wait "$rp" || { rp=""; cat "$work/rec.out" >&2; echo "test-pg-late: the client failed under record" >&2; exit 1; }
rp=""
"$PREPLAY_BIN" dump "$work/trace" >"$work/dump.txt"
failed=0
n=$(grep -c ' db .*dialect=postgresql' "$work/dump.txt" || true)
[ "$n" -gt 0 ] || { echo "test-pg-late: no PostgreSQL DB event (the connection met mid-conversation was not told PostgreSQL)" >&2; failed=1; }
grep -q ' db .*dialect=mysql' "$work/dump.txt" && { echo "test-pg-late: a DB event taken for MySQL" >&2; failed=1; }
grep -F " db execute " "$work/dump.txt" >"$work/executes.txt" || true
for ((i = 1; i <= 40; i++)); do
  grep -qF "query=\"SELECT \$1::int + $i\" " "$work/executes.txt" ||
    { echo "test-pg-late: statement a$i executed without its text" >&2; failed=1; }
done
[ "$(wc -l <"$work/executes.txt")" -eq 41 ] ||
  { echo "test-pg-late: $(wc -l <"$work/executes.txt") executes, not 41 (40 named, the row-less one)" >&2; failed=1; }
# the row-less SELECT's FETCH: no time (it took its start from the last
# result's rows, 0.3 s before: Redmine's recording had 20 s of such FETCH
# time added to its DB ops in 60 s)
grep -F ' db fetch ' "$work/dump.txt" | grep -F 'AS none' >"$work/none.txt" || true
[ "$(wc -l <"$work/none.txt")" -eq 1 ] && grep -q ' dur=0 ' "$work/none.txt" ||
  { echo "test-pg-late: the row-less SELECT's fetch is not one of no time: $(cat "$work/none.txt")" >&2; failed=1; }
[ $failed -eq 0 ] || { grep ' db ' "$work/dump.txt" | head -5 >&2; exit 1; }
echo "test-pg-late: ok ($n PostgreSQL DB events, 40 executes with their text)"
