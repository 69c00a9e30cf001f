#!/usr/bin/env bash
# tests/apps/db-load.sh DIR [SQL] - loads the sample schema and data (default
# schema.sql next to this script) into the server db-start.sh started for DIR,
# through its socket as root. Deterministic: the same rows on every load.
set -euo pipefail
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: db-load.sh DIR [SQL]" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
sql=${2:-$here/schema.sql}
[ -r "$sql" ] || { echo "db-load: cannot read $sql" >&2; exit 1; }
sock="$1/mariadb.sock"
[ -S "$sock" ] || { echo "db-load: no server socket at $sock (run db-start.sh $1 first)" >&2; exit 1; }
if ! out=$(mariadb --no-defaults --socket="$sock" -uroot --batch <"$sql" 2>&1); then
  echo "db-load: loading $sql failed: $out" >&2
  exit 1
fi
counts=$(mariadb --no-defaults --socket="$sock" -uroot --batch --skip-column-names sample \
  -e "SELECT (SELECT COUNT(*) FROM customers), (SELECT COUNT(*) FROM products), (SELECT COUNT(*) FROM orders)")
echo "db-load: loaded $sql (customers products orders: $counts)" >&2
