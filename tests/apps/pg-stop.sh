#!/usr/bin/env bash
# tests/apps/pg-stop.sh DIR - stops the PostgreSQL server pg-start.sh started
# for DIR (pg_ctl stop -m fast: only the postmaster of DIR/data). Quiet and
# successful when none runs.
set -uo pipefail
if [ $# -ne 1 ]; then
  echo "usage: pg-stop.sh DIR" >&2
  exit 2
fi
[ -f "$1/data/postmaster.pid" ] || exit 0
as_pg=()
[ "$(id -u)" -eq 0 ] && as_pg=(runuser -u postgres --)
"${as_pg[@]}" /usr/lib/postgresql/15/bin/pg_ctl -D "$1/data" -m fast -w stop >/dev/null
