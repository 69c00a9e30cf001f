#!/usr/bin/env bash
# test_run_db.sh - DB replay and DB state restore: a private MariaDB with
# table t (2 rows), a plan inserting id 1000 once per schedule pass and
# selecting (plus a broken query). 2 intervals of 1 s = 2.5 passes each:
# per interval 1 insert succeeds and 2 hit the duplicate key; the reload
# before interval 2 removes the row, so interval 2 counts the same 2
# duplicates (without the restore it would be 3). Errors are counted per
# query with their codes and summed on stderr; replay goes on (exit 0).
set -euo pipefail
: "${PREPLAY_BIN:?}" "${PREPLAY_BUILD_DIR:?}" "${PREPLAY_SOURCE_DIR:?}"
work=$(mktemp -d /tmp/rdb-XXXXXX)
apps="$PREPLAY_SOURCE_DIR/tests/apps"
trap '"$apps/db-stop.sh" "$work/db" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
"$apps/db-start.sh" "$work/db" 2>/dev/null
sock="$work/db/mariadb.sock"
mariadb --no-defaults --socket="$sock" -uroot -e \
  "CREATE DATABASE rt; CREATE TABLE rt.t (id INT PRIMARY KEY, name VARCHAR(20)); INSERT INTO rt.t VALUES (1,'a'),(2,'b');"
"$PREPLAY_BUILD_DIR/tests/replay/replay_make_plan" db "$work/plan" rt
"$PREPLAY_BIN" run "$work/plan" --db "mysql://root@localhost/rt?socket=$sock" --max-intervals 2 \
  --interval 1s --cpu-ratio 1 -o "$work/out.json" 2>"$work/err"
cat "$work/err"
# the failed statements are said on stderr (2 + 2 duplicates, 97 + 97 broken),
# without failing the run: a replayed statement may fail as it did recorded
grep -qx "run: the replay did not do all the recorded work: 198 DB statements failed (db_errors in the results)" "$work/err"
python3 - "$work/out.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert [(i["requests"], i["failed"]) for i in d["intervals"]] == [(100, 0), (100, 0)], d["intervals"]
errs = d["db_errors"]
dup = [e for e in errs if e["code"] == 1062]
syn = [e for e in errs if e["code"] == 1064]
assert [e["count"] for e in dup] == [2, 2], dup
assert dup[0]["query"] == "INSERT INTO rt.t (id, name) VALUES (?, ?)"
assert [e["count"] for e in syn] == [97, 97] and syn[0]["query"] == "SELEC broken", syn
st = d["state_restore"]
assert st["db_method"].startswith("mariadb-dump") and st["db_dump_s"] > 0
assert all(i["db_s"] > 0 for i in st["per_interval"])
assert d["resources"]["dbapp"]["GET /select"]["db_s"] > 0
print("db ok")
PY
[ "$(mariadb --no-defaults --socket="$sock" -uroot -N -e 'SELECT COUNT(*) FROM rt.t')" = 3 ]
