# shellcheck shell=bash
# tests/bench/accuracy/apps/app-common.sh - what the accuracy benchmark's
# real applications (wordpress.sh, redmine.sh) share: Debian packages,
# the private MariaDB of a run directory, waiting for a port, stopping
# what a run started, fresh database copies, and serving the app or its
# replay inside tools/emulate. Sourced, never run.
#
# A module NAME.sh sources this file and sets APP_PREFIX (say `rm`), then
# defines ${APP_PREFIX}_setup OUT, _start DIR PORT [PREFIX...], _stop DIR,
# _warmup PORT [HOST], _load HOST PORT RATE DURATION SEED CSV and
# _db_url DIR (what `preplay replay --db` gets), plus APP_LABELS (the
# `--label` rules), APP_LAUNCHER (DIR's pid file of what _start launched:
# SIGUSR1 to it turns recording on); the database socket is DIR/db/mariadb.sock.
# APP_DB (exported: the modules run as scripts inside tools/emulate too)
# picks the database server: mariadb (default) or postgresql (a module
# that speaks it lists it in APP_DBS); with postgresql DIR/db is a private
# PostgreSQL 15 (tests/apps/pg-start.sh, socket only: DIR/db/.s.PGSQL.5432,
# superuser `preplay` trusted on the socket) and the installed database is
# OUT/base-postgresql instead of OUT/base.
# Must never touch the system's services (apache2, MariaDB, thin) nor
# leave a server running: every start has its stop.
app_common_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
app_apps=$(cd "$app_common_here/../../../apps" && pwd)

# app_packages: the real applications' Debian packages, installed when
# missing (tools/install-deps --accuracy-apps: the one list of packages;
# services kept from starting there, the benchmark starts its own)
app_packages() {
  "$app_common_here/../../../../tools/install-deps" --accuracy-apps
}

APP_DB=${APP_DB:-mariadb}
APP_PG_PORT=5432 # socket only (PG_START_SOCKET_ONLY): the port names the socket, no TCP
case $APP_DB in
  mariadb) APP_BASE=base ;;
  postgresql) APP_BASE=base-postgresql ;;
  *) echo "accuracy: APP_DB '$APP_DB' is neither mariadb nor postgresql" >&2; exit 2 ;;
esac

# app_db_record_flags: the recorder's override naming the DB's socket
# (its connections open during the untraced warm-up: --off)
app_db_record_flags() {
  if [ "$APP_DB" = postgresql ]; then echo "--db-socket .s.PGSQL.$APP_PG_PORT"; else echo "--db-socket mariadb.sock"; fi
}

# app_db_fresh_sessions DIR: before tracing turns on (SIGUSR1 after the
# untraced warm-up), PostgreSQL's server ends the app's sessions so the app
# reconnects and prepares its statements again where the recording sees
# them (Rails names each statement once per connection: one prepared
# during the warm-up would be executed by a name whose text no trace
# has); the first traced request pays the reconnection. MariaDB: nothing
# (mysql2 prepares nothing).
app_db_fresh_sessions() {
  [ "$APP_DB" = postgresql ] || return 0
  echo "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE usename <> 'preplay' AND backend_type = 'client backend';" |
    app_db_sql "$1"
}

# app_wait_port PORT SECONDS: until something listens on APP_LISTEN:PORT
app_wait_port() {
  local i
  for ((i = 0; i < $2 * 10; i++)); do
    (exec 3<>"/dev/tcp/${APP_LISTEN:-127.0.0.1}/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

# app_db_start DIR: the private MariaDB in DIR/db (socket DIR/db/mariadb.sock),
# or PostgreSQL (APP_DB=postgresql: socket DIR/db/.s.PGSQL.5432); MariaDB
# gets the words of APP_MARIADBD_OPTS as options when set (e.g.
# --innodb-buffer-pool-size=6M: tests/bench/regress/real-app.sh's faults)
app_db_start() {
  if [ "$APP_DB" = postgresql ]; then
    [ -f "$1/db/data/postmaster.pid" ] && [ -S "$1/db/.s.PGSQL.$APP_PG_PORT" ] && return 0
    chmod 755 "$1"
    PG_START_SOCKET_ONLY=1 "$app_apps/pg-start.sh" "$1/db" "$APP_PG_PORT" >/dev/null
    return
  fi
  [ -f "$1/db/mariadbd.pid" ] && kill -0 "$(cat "$1/db/mariadbd.pid")" 2>/dev/null && return 0
  # shellcheck disable=SC2086 # APP_MARIADBD_OPTS: words for mariadbd
  "$app_apps/db-start.sh" "$1/db" ${APP_MARIADBD_OPTS:+-- $APP_MARIADBD_OPTS} >/dev/null || return 1
  chmod 755 "$1" "$1/db"
}

# app_db_sql DIR [DATABASE]: SQL on stdin to DIR's database server as its
# superuser (MariaDB's root, PostgreSQL's preplay), stopping at an error
app_db_sql() {
  if [ "$APP_DB" = postgresql ]; then
    psql -X -q -v ON_ERROR_STOP=1 -h "$1/db" -p "$APP_PG_PORT" -U preplay -d "${2:-postgres}" >/dev/null
  else
    mariadb --no-defaults -S "$1/db/mariadb.sock" -uroot ${2:+"$2"}
  fi
}

# app_db_stop DIR: DIR's database server, quiet when none runs
app_db_stop() {
  if [ "$APP_DB" = postgresql ]; then
    "$app_apps/pg-stop.sh" "$1/db" >/dev/null
  else
    "$app_apps/db-stop.sh" "$1/db" >/dev/null
  fi
}

# app_stop DIR PIDFILE...: SIGTERM to each pid (a recorder forwards it),
# bounded wait (15 s), SIGKILL if still there; then DIR's MariaDB
app_stop() {
  local dir=$1 f pid i
  shift
  for f in "$@"; do
    [ -f "$dir/$f" ] || continue
    pid=$(cat "$dir/$f")
    kill -TERM "$pid" 2>/dev/null
    for ((i = 0; i < 150; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && { echo "accuracy: pid $pid did not stop, SIGKILL" >&2; kill -KILL "$pid"; }
    rm -f "$dir/$f"
  done
  app_db_stop "$dir"
}

# the clients (the app's load client, preplay drive) stand for users on
# other machines: the load client runs under client_prio (drive takes the
# same priority itself)
# shellcheck source=tests/common/client_prio.sh
. "$app_common_here/../../../common/client_prio.sh"

# app_one_run OUT RUN RATE DURATION SEED CSV [PREFIX...]: one run of the app
# on a fresh copy of OUT's database in RUN (under PREFIX, e.g. `preplay
# record --off ... --`): start, the untraced warm-up, tracing on (SIGUSR1
# to the launcher, when PREFIX is given), the fixed load (CSV, the client
# at real-time priority: client_prio), stop. The
# host's load average before/after the load in RUN.loadavg, the load
# client's messages in RUN.load.log. The app listens on APP_LISTEN
# (default 127.0.0.1), the load client comes from there too.
app_one_run() {
  local out=$1 run=$2 rate=$3 duration=$4 seed=$5 csv=$6 port
  shift 6
  port=$(python3 "$app_apps/../common/free_port.py")
  app_fresh "$out" "$run"
  "${APP_PREFIX}_start" "$run" "$port" "$@" || return 1
  "${APP_PREFIX}_warmup" "$port" "${APP_LISTEN:-127.0.0.1}"
  [ $# -gt 0 ] && { app_db_fresh_sessions "$run"; kill -USR1 "$(cat "$run/$APP_LAUNCHER")"; sleep 0.5; }
  cat /proc/loadavg >"$run.loadavg"
  client_prio "${APP_PREFIX}_load" "${APP_LISTEN:-127.0.0.1}" "$port" "$rate" "$duration" "$seed" "$csv" 2>"$run.load.log"
  cat /proc/loadavg >>"$run.loadavg"
  "${APP_PREFIX}_stop" "$run"
  cat "$run.load.log" >&2
}

# app_fresh OUT RUN: RUN/db, a fresh copy of the installed database
# OUT/$APP_BASE/db (a stopped server's files)
app_fresh() {
  rm -rf "$2"
  mkdir -p "$2"
  chmod 755 "$2"
  cp -a "$1/$APP_BASE/db" "$2/db"
  rm -f "$2/db/mariadbd.pid" "$2/db/mariadb.sock" "$2/db/data/postmaster.pid" "$2/db"/.s.PGSQL.*
}

# app_serve DIR PORT real|replay [BIN PLAN]: what runs inside tools/emulate
# (the type's CPU cgroup and network namespace), listening on the
# namespace's address (PREPLAY_EMU_ADDR) for a client on the host: the
# app (MariaDB + ${APP_PREFIX}_start), or MariaDB + `preplay replay` of
# the plan's front end (its dummy files made by `preplay prepare`; warmed
# up by 8 s of the schedule driven from inside, unmeasured: against a
# fresh MariaDB's cold buffer pool WordPress's first 0.6 s of requests
# took 0.3-0.6 s on small). Writes DIR/addr once it listens, stops
# everything when DIR/stop appears (at most 10 min).
app_serve() {
  local dir=$1 port=$2 mode=$3 bin=${4:-} plan=${5:-} rp="" i
  export APP_LISTEN=${PREPLAY_EMU_ADDR:-127.0.0.1}
  if [ "$mode" = real ]; then
    "${APP_PREFIX}_start" "$dir" "$port" || return 1
  else
    app_db_start "$dir" || return 1
    "$bin" prepare "$plan" --dir "$dir/files" >/dev/null || { "${APP_PREFIX}_stop" "$dir"; return 1; }
    "$bin" replay "$plan" --component frontend --listen "$APP_LISTEN:$port" --token 0123456789abcdef \
      --db "$("${APP_PREFIX}_db_url" "$dir")" --dir "$dir/files" --stats "$dir/replay-stats.json" \
      >"$dir/replay.out" 2>"$dir/replay.log" &
    rp=$!
    app_wait_port "$port" 60 || { kill -TERM "$rp"; "${APP_PREFIX}_stop" "$dir"; return 1; }
    "$bin" drive "$plan" --target "$APP_LISTEN:$port" --token 0123456789abcdef --duration 8s \
      -o "$dir/warmup.json" >"$dir/warmup.log" 2>&1
  fi
  echo "$$" >"$dir/inside.pid" # a process inside the type (the client's CPUs are the others)
  echo "$APP_LISTEN" >"$dir/addr"
  for ((i = 0; i < 6000; i++)); do [ -e "$dir/stop" ] && break; sleep 0.1; done
  if [ -n "$rp" ]; then kill -TERM "$rp"; wait "$rp"; fi
  "${APP_PREFIX}_stop" "$dir"
}

# app_main USAGE "$@": a module run as a script: its subcommand
app_main() {
  local usage=$1 cmd=${2:-}
  shift 2 || shift $#
  case $cmd in
    setup | start | stop | load | warmup) "${APP_PREFIX}_$cmd" "$@" ;;
    fresh) app_fresh "$@" ;;
    serve) app_serve "$@" ;;
    *) echo "usage: $usage" >&2; return 2 ;;
  esac
}
