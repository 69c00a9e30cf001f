#!/usr/bin/env bash
# tests/apps/pg-start.sh DIR PORT - starts a private PostgreSQL 15 server
# (Debian's postgresql-15) with its data directory, unix socket
# (DIR/.s.PGSQL.PORT), log and pid file all inside DIR; initializes the
# data directory on first use (under ctest: a copy of one made per build
# tree, see below). It listens on 127.0.0.1:PORT too, unless
# PG_START_SOCKET_ONLY=1 (then the socket alone, as db-start.sh's MariaDB:
# any PORT, 5432 too, cannot collide with another server). Superuser
# `preplay` with password `preplay-pw`: unix socket connections are trusted
# (AuthenticationOk at once), TCP ones use SCRAM-SHA-256 (a SASL exchange),
# so both openings are exercised. PostgreSQL refuses to run as root: the
# server runs as the `postgres` system user the package made, DIR is given
# to it. Never touches a system cluster or /etc/postgresql.
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: pg-start.sh DIR PORT" >&2
  exit 2
fi
dir=$(realpath -m "$1")
port=$2
bin=/usr/lib/postgresql/15/bin
[ -x "$bin/initdb" ] && [ -x "$bin/pg_ctl" ] ||
  { echo "pg-start: $bin/initdb or pg_ctl not found (apt-get install postgresql)" >&2; exit 1; }
id postgres >/dev/null 2>&1 || { echo "pg-start: no postgres user (apt-get install postgresql)" >&2; exit 1; }
listen=127.0.0.1
[ "${PG_START_SOCKET_ONLY:-0}" = 1 ] && listen="''"
as_pg=()
[ "$(id -u)" -eq 0 ] && as_pg=(runuser -u postgres --)
mkdir -p "$dir"
if [ "$(id -u)" -eq 0 ]; then
  chown postgres: "$dir"
  # the server must reach DIR: its parent (a test's mktemp -d, 0700) gets
  # o+x, enough to pass through, not to list
  chmod o+x "$(dirname "$dir")"
fi
chmod 700 "$dir"
init_db() { # DATADIR (inside DIR): a fresh data directory, as on first use
  printf 'preplay-pw\n' > "$dir/pw"
  [ "$(id -u)" -eq 0 ] && chown postgres: "$dir/pw"
  "${as_pg[@]}" "$bin/initdb" -D "$1" -U preplay --pwfile="$dir/pw" -A trust \
    --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 ||
    { echo "pg-start: initdb failed: $(tail -n 3 "$dir/initdb.log")" >&2; return 1; }
}
# initdb is most of a first start here and its result depends only on the
# server's version: as db-start.sh, under ctest (PREPLAY_BUILD_DIR set) it
# runs once per build tree and version into PREPLAY_BUILD_DIR/test-cache
# (root only: the copies keep the postgres owner), and each first start
# gets a copy of that stopped, fresh data directory.
# PREPLAY_DB_NO_TEMPLATE=1 runs initdb every time, as without ctest.
if [ ! -f "$dir/data/PG_VERSION" ]; then
  cache=${PREPLAY_BUILD_DIR:+$PREPLAY_BUILD_DIR/test-cache}
  { [ "${PREPLAY_DB_NO_TEMPLATE:-0}" = 1 ] || [ "$(id -u)" -ne 0 ]; } && cache=""
  if [ -n "$cache" ] && mkdir -p "$cache"; then
    template=$cache/pg-datadir-$("$bin/postgres" --version | md5sum | cut -c1-12)
    (
      flock 9
      if [ ! -f "$template/PG_VERSION" ]; then
        rm -rf "$template" "$dir/template"
        init_db "$dir/template" && cp -a "$dir/template" "$template.new" && mv "$template.new" "$template"
        rm -rf "$dir/template"
      fi
      [ -f "$template/PG_VERSION" ] && cp -a "$template" "$dir/data" ||
        { echo "pg-start: no fresh data directory in $template to copy" >&2; exit 1; }
    ) 9>"$cache/pg-datadir.lock" || exit 1
  else
    init_db "$dir/data" || exit 1
  fi
fi
"${as_pg[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
  -o "-p $port -k $dir -c listen_addresses=$listen -c fsync=off -c shared_buffers=16MB" \
  start >/dev/null ||
  { echo "pg-start: the server did not start: $(tail -n 5 "$dir/server.log")" >&2; exit 1; }
