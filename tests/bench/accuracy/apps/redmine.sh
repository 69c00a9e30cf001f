#!/usr/bin/env bash
# tests/bench/accuracy/apps/redmine.sh - Redmine (Debian's `redmine` 5.0,
# Rails 6.1 on Ruby 3.1, served by `rails server`, which gets Debian's
# `thin`: one process, one EventMachine reactor thread, one request at a
# time; MariaDB through libmariadb's C API via the mysql2 gem, or with
# APP_DB=postgresql PostgreSQL through libpq via the pg gem, Debian's
# redmine-pgsql) for the accuracy benchmark: setup, start, stop and load
# of a private instance.
# Sourced by app-bench.sh --app redmine (functions rm_*, over
# app-common.sh), or run as
#   redmine.sh setup DIR | start DIR PORT | stop DIR | load HOST PORT RATE DURATION SEED CSV
#              | warmup PORT [HOST] | fresh DIR RUN | serve DIR PORT real|replay [BIN PLAN]
# Everything lives in DIR: the MariaDB datadir and socket (tests/apps/
# db-start.sh), Redmine's instance (DIR/redmine: config/database.yml with
# DIR's socket, secret key, tmp, log, files, pid). Debian's Redmine picks
# an instance by REDMINE_INSTANCE under /var/lib/redmine; the only thing
# written outside DIR is the symlink /var/lib/redmine/preplay-accuracy ->
# DIR/redmine of the instance being started (one instance at a time).
# Must never touch the system's MariaDB or Redmine's `default` instance,
# never leave a server running (rm_stop stops both), and never be
# non-deterministic in content (rm_content.rb, fixed seed).
rm_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$rm_here/app-common.sh"
APP_PREFIX=rm APP_LAUNCHER=redmine/launcher.pid APP_DBS="mariadb postgresql"
RM_ISSUES=${RM_ISSUES:-1000} RM_NOTES=${RM_NOTES:-2000}
RM_INSTANCE=preplay-accuracy
RM_API_KEY=0123456789abcdef0123456789abcdef01234567 # `reporter`'s, for issue creation
# the request labels (docs/preplay-record.md "Request labels"): without
# them every issue id and list page would be its own label
APP_LABELS=(--label 'list=^GET /projects/bench/issues' --label 'view=^GET /issues/[0-9]+'
  --label 'search=^GET /search' --label 'create=^POST /issues\.json')

rm_log() { echo "redmine: $*" >&2; }

# rm_instance DIR: DIR/redmine as Redmine's instance $RM_INSTANCE
# (database DIR/db/mariadb.sock, or PostgreSQL's socket directory DIR/db);
# points the instance symlink at it
rm_instance() {
  local r=$1/redmine
  mkdir -p "$r/config" "$r/tmp" "$r/log" "$r/files" "$r/public"
  if [ "$APP_DB" = postgresql ]; then
    cat >"$r/config/database.yml" <<YML
# written by preplay tests/bench/accuracy/apps/redmine.sh
production:
  adapter: postgresql
  database: redmine
  username: redmine
  password: redmine-pass
  host: $1/db
  port: $APP_PG_PORT
  encoding: utf8
YML
  else
    cat >"$r/config/database.yml" <<YML
# written by preplay tests/bench/accuracy/apps/redmine.sh
production:
  adapter: mysql2
  database: redmine
  username: redmine
  password: redmine-pass
  socket: $1/db/mariadb.sock
  encoding: utf8mb4
YML
  fi
  echo "preplay-accuracy-redmine-secret-0123456789abcdef0123456789abcdef" >"$r/config/secret_key.txt"
  ln -sfn "$r" "/var/lib/redmine/$RM_INSTANCE"
}

# rm_rails CMD...: CMD in /usr/share/redmine for the instance (rm_instance)
rm_rails() {
  (cd /usr/share/redmine && export REDMINE_INSTANCE=$RM_INSTANCE RAILS_ENV=production && exec "$@")
}

# rm_start DIR PORT [PREFIX...]: MariaDB, then `rails server` (thin; under
# PREFIX, e.g. `preplay record ... --`) in its own session; returns once it
# listens (Rails boots in ~10 s unconstrained, longer on small)
rm_start() {
  local dir=$1 port=$2
  shift 2
  app_db_start "$dir" || return 1
  rm_instance "$dir"
  rm -rf "$dir/redmine/tmp/cache" "$dir/redmine/server.pid"
  # one subshell that execs PREFIX: $! is the recorder SIGUSR1 goes to (a
  # function run in the background would put a shell between them)
  (cd /usr/share/redmine && export REDMINE_INSTANCE=$RM_INSTANCE RAILS_ENV=production &&
    exec "$@" setsid ruby bin/rails server -b "${APP_LISTEN:-127.0.0.1}" -p "$port" \
      -P "$dir/redmine/server.pid") </dev/null >"$dir/redmine/out.log" 2>&1 &
  echo $! >"$dir/redmine/launcher.pid"
  app_wait_port "$port" 300 ||
    { rm_log "rails server not listening: $(tail -5 "$dir/redmine/out.log")"; rm_stop "$dir"; return 1; }
}

# rm_stop DIR: SIGTERM to what rm_start started (the recorder forwards it),
# bounded wait, then the database
rm_stop() { app_stop "$1" redmine/launcher.pid redmine/server.pid; }

# rm_create_db DIR: Redmine's database and user on DIR's server
rm_create_db() {
  if [ "$APP_DB" = postgresql ]; then
    app_db_sql "$1" <<SQL
CREATE ROLE redmine LOGIN PASSWORD 'redmine-pass';
CREATE DATABASE redmine OWNER redmine ENCODING 'UTF8';
SQL
  else
    app_db_sql "$1" <<SQL
CREATE DATABASE redmine CHARACTER SET utf8mb4;
CREATE USER 'redmine'@'localhost' IDENTIFIED BY 'redmine-pass';
GRANT ALL ON redmine.* TO 'redmine'@'localhost';
SQL
  fi
}

# rm_setup DIR: packages, a Redmine with content in DIR/$APP_BASE (a
# stopped database server's files to copy per run). Idempotent: kept when done.
rm_setup() {
  local dir=$1 port code b=$1/$APP_BASE
  app_packages || return 1
  [ -f "$b/done" ] && return 0
  rm -rf "$b"
  mkdir -p "$b"
  chmod 755 "$dir"
  app_db_start "$b" || return 1
  rm_create_db "$b" || { rm_stop "$b"; return 1; }
  rm_instance "$b"
  rm_log "setup: rake db:migrate, redmine:load_default_data, content ($RM_ISSUES issues, $RM_NOTES notes)"
  { rm_rails rake db:migrate &&
    rm_rails env REDMINE_LANG=en rake redmine:load_default_data &&
    rm_rails env RM_ISSUES="$RM_ISSUES" RM_NOTES="$RM_NOTES" RM_API_KEY="$RM_API_KEY" \
      ruby bin/rails runner "$rm_here/rm_content.rb"; } >"$b/setup.log" 2>&1 ||
    { tail -20 "$b/setup.log" >&2; rm_stop "$b"; return 1; }
  port=$(python3 "$app_apps/../common/free_port.py")
  rm_start "$b" "$port" || return 1
  code=$(curl -s -o /dev/null -w '%{http_code}' -H 'Host: preplay-redmine' "http://127.0.0.1:$port/issues/1")
  rm_stop "$b"
  [ "$code" = 200 ] || { rm_log "GET /issues/1 answered $code after setup"; return 1; }
  rm -rf "$b/redmine"
  touch "$b/done"
}

# rm_load HOST PORT RATE DURATION SEED CSV: the fixed open-loop load
rm_load() {
  python3 "$rm_here/rm_load.py" --host "$1" --port "$2" --rate "$3" --duration "$4" \
    --seed "$5" --csv "$6" --issues "$RM_ISSUES" --api-key "$RM_API_KEY"
}

# rm_warmup PORT [HOST]: RM_WARMUP (default 30) requests one after another,
# outside the measured load (Rails' first requests fill its caches)
rm_warmup() {
  python3 "$rm_here/rm_load.py" --host "${2:-127.0.0.1}" --port "$1" --rate 1 --duration 0 \
    --csv /dev/null --issues "$RM_ISSUES" --api-key "$RM_API_KEY" --warmup "${RM_WARMUP:-30}"
}

# rm_db_url DIR: the replay's database (DIR's server, Redmine's user;
# PostgreSQL trusts its socket, so the URL carries no password)
rm_db_url() {
  if [ "$APP_DB" = postgresql ]; then
    echo "postgresql://redmine@/redmine?host=$1/db&port=$APP_PG_PORT"
  else
    echo "mysql://redmine:redmine-pass@localhost/redmine?socket=$1/db/mariadb.sock"
  fi
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -uo pipefail
  app_main "redmine.sh setup DIR | start DIR PORT | stop DIR | load HOST PORT RATE DURATION SEED CSV | warmup PORT [HOST] | fresh DIR RUN | serve DIR PORT real|replay [BIN PLAN]" "$@"
fi
