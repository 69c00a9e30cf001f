#!/usr/bin/env bash
# tests/apps/run-sample.sh - starts the whole sample application in one
# directory: MariaDB (db-start.sh + db-load.sh), the app tier and the front end,
# then runs COMMAND (if given) with the SAMPLE_* variables below set, and tears
# everything down on exit, however it exits (trap). Bounded in time: COMMAND gets
# --timeout seconds; without a COMMAND the application runs that long (or until
# Ctrl-C). It never kills anything it did not start.
#
# usage: run-sample.sh [--dir DIR] [--keep] [--timeout S] [--workers N]
#                      [--app-workers N] [--app-conns N] [--db-port PORT] [-- COMMAND...]
#
#   --dir DIR       put everything in DIR (kept afterwards); default a temp dir,
#                   removed on exit unless --keep
#   --db-port PORT  MariaDB also listens on 127.0.0.1:PORT (tiers still use the socket)
#
# Environment:
#   SAMPLE_BIN_DIR  where frontend/apptier/loadgen are (default
#                   $PREPLAY_BUILD_DIR/tests/apps, else build/release/tests/apps)
#   PREFIX          words put before each tier's command, "{tier}" replaced by
#                   frontend or apptier, e.g.
#                   PREFIX="preplay record -o /tmp/trace/{tier} -c {tier} --"
#   PREFIX_FRONTEND, PREFIX_APPTIER   the same for one tier (override PREFIX)
#
# COMMAND sees: SAMPLE_DIR, SAMPLE_PORT (front end), SAMPLE_APPTIER_PORT,
# SAMPLE_DB_SOCKET, SAMPLE_BIN_DIR, SAMPLE_FRONTEND_LOG, SAMPLE_APPTIER_LOG
# (side logs, complete only after teardown), SAMPLE_SHARED_LOG (/log's file).
# Exit status: COMMAND's, or 1 when a tier failed to start or exited non-zero
# at teardown (an ASan report, for instance).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)

dir="" keep=0 timeout=300 workers=8 app_workers=4 app_conns=4 db_port=""
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) dir=$2; keep=1; shift 2 ;;
    --keep) keep=1; shift ;;
    --timeout) timeout=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    --app-workers) app_workers=$2; shift 2 ;;
    --app-conns) app_conns=$2; shift 2 ;;
    --db-port) db_port=$2; shift 2 ;;
    --) shift; break ;;
    -h | --help) sed -n '2,31p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run-sample: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case "$timeout" in '' | *[!0-9]*) echo "run-sample: --timeout needs whole seconds" >&2; exit 2 ;; esac

bin=${SAMPLE_BIN_DIR:-}
if [ -z "$bin" ]; then
  if [ -n "${PREPLAY_BUILD_DIR:-}" ]; then bin=$PREPLAY_BUILD_DIR/tests/apps; else bin=$top/build/release/tests/apps; fi
fi
for b in frontend apptier loadgen; do
  [ -x "$bin/$b" ] || { echo "run-sample: $bin/$b not found (build the tree, or set SAMPLE_BIN_DIR)" >&2; exit 1; }
done
bin=$(cd "$bin" && pwd)

if [ -z "$dir" ]; then
  dir=$(mktemp -d /tmp/preplay-sample.XXXXXX) || exit 1
else
  mkdir -p "$dir" || exit 1
fi
dir=$(cd "$dir" && pwd)
mkdir -p "$dir/frontend" "$dir/apptier" "$dir/logs"

frontend_pid="" apptier_pid="" db_started=0 status=0

stop_tier() { # stop_tier NAME PID: SIGTERM, wait up to 20 s, then SIGKILL; sets tier_status
  local name=$1 pid=$2
  tier_status=0
  [ -n "$pid" ] || return 0
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    if kill -0 "$pid" 2>/dev/null; then
      echo "run-sample: $name (pid $pid) ignored SIGTERM for 20 s, killing it" >&2
      kill -KILL "$pid" 2>/dev/null
    fi
  fi
  wait "$pid" 2>/dev/null
  tier_status=$?
  if [ "$tier_status" -ne 0 ]; then
    echo "run-sample: $name exited with status $tier_status; last lines of $dir/logs/$name.err:" >&2
    tail -n 30 "$dir/logs/$name.err" >&2
  fi
}

teardown() {
  trap - EXIT INT TERM HUP
  stop_tier frontend "$frontend_pid"; [ "$tier_status" -ne 0 ] && status=1
  stop_tier apptier "$apptier_pid"; [ "$tier_status" -ne 0 ] && status=1
  [ $db_started -eq 1 ] && "$here/db-stop.sh" "$dir/db"
  if [ $keep -eq 0 ]; then rm -rf "$dir"; fi
  exit $status
}
trap teardown EXIT
trap 'status=130; exit' INT TERM HUP

prefix_for() { # prefix_for TIER: prints the prefix words, one per line
  local var="PREFIX_${1^^}" words
  local text=${!var:-${PREFIX:-}}
  text=${text//\{tier\}/$1}
  read -ra words <<<"$text"
  [ ${#words[@]} -gt 0 ] && printf '%s\n' "${words[@]}"
}

wait_port() { # wait_port NAME PID FILE: waits up to 60 s for the port file
  for _ in $(seq 1 300); do
    [ -s "$3" ] && return 0
    if ! kill -0 "$2" 2>/dev/null; then
      echo "run-sample: $1 exited during startup; its log:" >&2
      tail -n 30 "$dir/logs/$1.err" >&2
      return 1
    fi
    sleep 0.2
  done
  echo "run-sample: $1 did not start listening within 60 s (log: $dir/logs/$1.err)" >&2
  return 1
}

"$here/db-start.sh" "$dir/db" $db_port || { status=1; exit; }
db_started=1
"$here/db-load.sh" "$dir/db" || { status=1; exit; }
db=(--db-socket "$dir/db/mariadb.sock" --db-user sample --db-name sample)

mapfile -t prefix < <(prefix_for apptier)
"${prefix[@]}" "$bin/apptier" --port 0 --port-file "$dir/apptier.port" --workers "$app_workers" \
  --data-dir "$dir/apptier" --side-log "$dir/logs/apptier.sidelog" "${db[@]}" \
  </dev/null >"$dir/logs/apptier.err" 2>&1 &
apptier_pid=$!
wait_port apptier "$apptier_pid" "$dir/apptier.port" || { status=1; exit; }
apptier_port=$(cat "$dir/apptier.port")

mapfile -t prefix < <(prefix_for frontend)
"${prefix[@]}" "$bin/frontend" --port 0 --port-file "$dir/frontend.port" --workers "$workers" \
  --app-tier "127.0.0.1:$apptier_port" --app-conns "$app_conns" --data-dir "$dir/frontend" \
  --side-log "$dir/logs/frontend.sidelog" "${db[@]}" \
  </dev/null >"$dir/logs/frontend.err" 2>&1 &
frontend_pid=$!
wait_port frontend "$frontend_pid" "$dir/frontend.port" || { status=1; exit; }

export SAMPLE_DIR=$dir SAMPLE_PORT=$(cat "$dir/frontend.port") SAMPLE_APPTIER_PORT=$apptier_port
export SAMPLE_DB_SOCKET=$dir/db/mariadb.sock SAMPLE_BIN_DIR=$bin
export SAMPLE_FRONTEND_LOG=$dir/logs/frontend.sidelog SAMPLE_APPTIER_LOG=$dir/logs/apptier.sidelog
export SAMPLE_SHARED_LOG=$dir/frontend/shared.log
echo "run-sample: front end on 127.0.0.1:$SAMPLE_PORT (pid $frontend_pid), app tier on" \
  "127.0.0.1:$apptier_port (pid $apptier_pid), files in $dir" >&2

if [ $# -gt 0 ]; then
  timeout --kill-after=10 "$timeout" "$@"
  status=$?
  [ $status -eq 124 ] && echo "run-sample: '$*' did not finish within $timeout s" >&2
else
  echo "run-sample: running for $timeout s (Ctrl-C stops earlier)" >&2
  sleep "$timeout" &
  wait $!
fi
exit
