#!/usr/bin/env bash
# tests/apps/pg-start.sh DIR PORT - starts a private PostgreSQL 15 server
# (Debian's postgresql-15) with its data directory, unix socket
# (DIR/.s.PGSQL.PORT), log and pid file all inside DIR; initializes the
# data directory on first use. It listens on 127.0.0.1:PORT too, unless
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
if [ ! -f "$dir/data/PG_VERSION" ]; then
  printf 'preplay-pw\n' > "$dir/pw"
  [ "$(id -u)" -eq 0 ] && chown postgres: "$dir/pw"
  "${as_pg[@]}" "$bin/initdb" -D "$dir/data" -U preplay --pwfile="$dir/pw" -A trust \
    --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 ||
    { echo "pg-start: initdb failed: $(tail -n 3 "$dir/initdb.log")" >&2; exit 1; }
fi
"${as_pg[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
  -o "-p $port -k $dir -c listen_addresses=$listen -c fsync=off -c shared_buffers=16MB" \
  start >/dev/null ||
  { echo "pg-start: the server did not start: $(tail -n 5 "$dir/server.log")" >&2; exit 1; }
