#!/usr/bin/env bash
# tests/apps/db-start.sh DIR [PORT] [-- MARIADBD_OPTION...] - starts a
# private MariaDB server for the sample application with its datadir, socket
# (DIR/mariadb.sock, or DIR/$PREPLAY_DB_SOCKET_NAME), pid file and error log all inside DIR; initializes the
# datadir on first use (under ctest: a copy of one made per build tree, see
# below). Without PORT the server has no networking (socket
# only); with PORT it listens on 127.0.0.1:PORT. Options after -- go to
# mariadbd as they are (e.g. --ssl-cert/--ssl-key). Runs as root with
# --user=root. Never touches a system MariaDB service or /etc/mysql settings
# (--no-defaults everywhere).
set -euo pipefail
usage() { echo "usage: db-start.sh DIR [PORT] [-- MARIADBD_OPTION...]" >&2; exit 2; }
args=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do args+=("$1"); shift; done
[ $# -gt 0 ] && shift # the --
extra=("$@")
if [ ${#args[@]} -lt 1 ] || [ ${#args[@]} -gt 2 ]; then
  usage
fi
dir=$(realpath -m "${args[0]}")
port=${args[1]:-}
for tool in mariadbd mariadb-install-db mariadb-admin; do
  command -v "$tool" >/dev/null 2>&1 || [ -x "/usr/sbin/$tool" ] ||
    { echo "db-start: $tool not found (apt-get install mariadb-server mariadb-client)" >&2; exit 1; }
done
mariadbd=$(command -v mariadbd || echo /usr/sbin/mariadbd)
sock="$dir/${PREPLAY_DB_SOCKET_NAME:-mariadb.sock}" # the name: a test may pick another
if [ ${#sock} -gt 100 ]; then
  echo "db-start: socket path $sock is too long for a unix socket; use a shorter DIR" >&2
  exit 1
fi
mkdir -p "$dir"
if [ -f "$dir/mariadbd.pid" ] && kill -0 "$(cat "$dir/mariadbd.pid")" 2>/dev/null; then
  echo "db-start: a server is already running for $dir (pid $(cat "$dir/mariadbd.pid"))" >&2
  exit 1
fi
# its temporary files in DIR, never the shared /tmp: a test's cleanup of
# /tmp beside it once took a file from under mariadb-install-db
mkdir -p "$dir/tmp"
install_db() { # DATADIR: a fresh datadir, as on first use
  if ! mariadb-install-db --no-defaults --datadir="$1" --tmpdir="$dir/tmp" --user=root \
      --auth-root-authentication-method=normal --skip-test-db --skip-name-resolve \
      >"$dir/install.log" 2>&1; then
    echo "db-start: mariadb-install-db failed for $1; its log:" >&2
    tail -n 20 "$dir/install.log" >&2
    return 1
  fi
}
# mariadb-install-db is most of a first start (3 .. 13 s here, a restart
# takes 1 s) and its result depends only on the server's version: under
# ctest (PREPLAY_BUILD_DIR set) it runs once per build tree and version,
# into PREPLAY_BUILD_DIR/test-cache, and each first start gets a copy of
# that stopped, fresh datadir (the same files a fresh install writes).
# PREPLAY_DB_NO_TEMPLATE=1 installs every time, as without ctest.
if [ ! -d "$dir/data/mysql" ]; then
  cache=${PREPLAY_BUILD_DIR:+$PREPLAY_BUILD_DIR/test-cache}
  [ "${PREPLAY_DB_NO_TEMPLATE:-0}" = 1 ] && cache=""
  if [ -n "$cache" ] && mkdir -p "$cache"; then
    version=$("$mariadbd" --version | md5sum | cut -c1-12)
    template=$cache/mariadb-datadir-$version
    (
      flock 9
      if [ ! -d "$template/mysql" ]; then
        rm -rf "$template" "$template.new"
        install_db "$template.new" && mv "$template.new" "$template"
      fi
      [ -d "$template/mysql" ] && cp -a "$template" "$dir/data" ||
        { echo "db-start: no fresh datadir in $template to copy" >&2; exit 1; }
    ) 9>"$cache/mariadb-datadir.lock" || exit 1
  else
    install_db "$dir/data" || exit 1
  fi
fi
if [ -n "$port" ]; then
  net=(--port="$port" --bind-address=127.0.0.1)
else
  net=(--skip-networking)
fi
# Small buffers and relaxed durability: this is a test database started and
# thrown away in seconds, on a 2-core machine shared with the app.
setsid "$mariadbd" --no-defaults --datadir="$dir/data" --tmpdir="$dir/tmp" --socket="$sock" \
  --pid-file="$dir/mariadbd.pid" --log-error="$dir/mariadbd.err" --user=root \
  --skip-name-resolve --innodb-buffer-pool-size=64M --innodb-log-file-size=16M \
  --innodb-flush-log-at-trx-commit=2 --skip-log-bin --max-connections=200 \
  "${net[@]}" ${extra[@]+"${extra[@]}"} </dev/null >>"$dir/mariadbd.out" 2>&1 &
server=$!
echo "$server" >"$dir/mariadbd.pid"
for _ in $(seq 1 300); do
  if ! kill -0 "$server" 2>/dev/null; then
    echo "db-start: mariadbd exited during startup; last lines of $dir/mariadbd.err:" >&2
    tail -n 20 "$dir/mariadbd.err" >&2 || true
    exit 1
  fi
  if mariadb-admin --no-defaults --socket="$sock" -uroot --connect-timeout=2 ping >/dev/null 2>&1; then
    echo "db-start: mariadbd pid $server ready on $sock${port:+ and 127.0.0.1:$port}" >&2
    exit 0
  fi
  sleep 0.2
done
echo "db-start: mariadbd did not answer within 60 s; stopping it (log: $dir/mariadbd.err)" >&2
kill -KILL "$server" 2>/dev/null || true
exit 1
