#!/usr/bin/env bash
# test_run_remote_db.sh - `preplay run --hosts --db`: the DB tier's replayer
# on a loopback ssh host (sshd_fixture.sh) against a private MariaDB, as
# tests/replay/test_run_db.sh does locally: the URL reaches the remote
# replayer (never on a command line there), its DB errors come back per
# query through STATS, and the controller's reload between intervals gives
# interval 2 the same duplicate-key count as interval 1. The DB user has a
# password, given with --db-password-file: it reaches the remote replayer on
# the agent's channel and is on no command line there either.
set -uo pipefail
: "${PREPLAY_BIN:?}" "${PREPLAY_BUILD_DIR:?}" "${PREPLAY_SOURCE_DIR:?}"
fail() { echo "FAIL: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || fail "needs root (sshd)"
[ -x /usr/sbin/sshd ] || fail "needs /usr/sbin/sshd (openssh-server, tools/install-deps)"
work=$(mktemp -d /tmp/rrdb-XXXXXX)
chmod 755 "$work"
apps="$PREPLAY_SOURCE_DIR/tests/apps"
. "$(dirname "$0")/sshd_fixture.sh"
trap 'fixture_cleanup; "$apps/db-stop.sh" "$work/db" >/dev/null 2>&1; rm -rf "$work"' EXIT
"$apps/db-start.sh" "$work/db" 2>"$work/db-start.err" || fail "db-start: $(cat "$work/db-start.err")"
sock="$work/db/mariadb.sock"
mariadb --no-defaults --socket="$sock" -uroot -e \
  "CREATE DATABASE rt; CREATE TABLE rt.t (id INT PRIMARY KEY, name VARCHAR(20)); INSERT INTO rt.t VALUES (1,'a'),(2,'b');
   CREATE USER 'pprem'@'localhost' IDENTIFIED BY 'Remote-pw-$$'; GRANT ALL ON rt.* TO 'pprem'@'localhost';" ||
  fail "schema"
printf 'Remote-pw-%s\n' $$ >"$work/pw"
"$PREPLAY_BUILD_DIR/tests/replay/replay_make_plan" db "$work/plan" rt || fail "make_plan"
fixture_keys
port=$(fixture_free_port)
fixture_sshd lo 127.0.0.1 "$port"
sshd_lo=$fixture_pid
printf 'dbapp root@127.0.0.1:%s\n' "$port" >"$work/hosts"
url="mysql://pprem@localhost/rt?socket=$sock"
"$PREPLAY_BIN" run "$work/plan" --hosts "$work/hosts" --ssh-opts "$ssh_opts" --db "$url" \
  --db-password-file "$work/pw" \
  --max-intervals 2 --interval 1s --cpu-ratio 1 -o "$work/out.json" 2>"$work/err" &
run=$!
# while it runs: the URL on no command line under the ssh host
seen=0
for _ in $(seq 1 300); do
  if q=$(fixture_replayer_among $(fixture_descendants "$sshd_lo")); then
    seen=1
    # every process of the session, both ends: the run, its ssh client,
    # the agent and the replayer under sshd (the token too: 16 hex digits)
    for p in "$run" $(fixture_descendants "$run") $(fixture_descendants "$sshd_lo"); do
      c=$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null) || continue
      ! echo "$c" | grep -q "mysql://" || [ "$p" = "$run" ] || fail "DB URL on a command line: $c"
      ! echo "$c" | grep -q "Remote-pw" || fail "DB password on a command line: $c"
      ! echo "$c" | grep -Eq "(^|[^0-9a-fA-F])[0-9a-fA-F]{16}([^0-9a-fA-F]|$)" ||
        fail "a token on a command line: $c"
    done
    break
  fi
  kill -0 "$run" 2>/dev/null || break
  sleep 0.1
done
wait "$run"
rc=$?
cat "$work/err"
[ $rc = 0 ] || fail "run exit $rc"
[ $seen = 1 ] || fail "no remote replayer seen under the ssh host"
python3 - "$work/out.json" <<'PY' || fail "results"
import json, os, sys
d = json.load(open(sys.argv[1]))
assert list(d["hosts"]) == ["dbapp"] and not os.path.exists(d["hosts"]["dbapp"]["dir"]), d["hosts"]
assert [(i["requests"], i["failed"]) for i in d["intervals"]] == [(100, 0), (100, 0)], d["intervals"]
errs = d["db_errors"]
dup = [e for e in errs if e["code"] == 1062]
syn = [e for e in errs if e["code"] == 1064]
# the remote replayer's counts, per interval, the same after the reload
assert [e["count"] for e in dup] == [2, 2], dup
assert all(e["component"] == "dbapp" for e in errs), errs
assert dup[0]["query"] == "INSERT INTO rt.t (id, name) VALUES (?, ?)", dup
assert [e["count"] for e in syn] == [97, 97] and syn[0]["query"] == "SELEC broken", syn
assert all(i["db_s"] > 0 for i in d["state_restore"]["per_interval"])
assert d["resources"]["dbapp"]["GET /select"]["db_s"] > 0
print("remote db ok: duplicates %s per interval" % [e["count"] for e in dup])
PY
[ "$(mariadb --no-defaults --socket="$sock" -uroot -N -e 'SELECT COUNT(*) FROM rt.t')" = 3 ] ||
  fail "the remote replayer's insert did not reach the DB"
