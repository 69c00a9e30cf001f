#!/usr/bin/env bash
# test_run_secrets.sh - `preplay run` with a password-protected DB keeps the
# run token and the DB password off every command line (issue 24 item 5):
# while it runs, /proc/PID/cmdline of the run and every process under it
# (replayers, mariadb-dump, mariadb) is read every few ms and must hold
# neither the password nor any 16-hex-digit token; the scan must have seen
# a replayer and a mariadb client, and the DB work must succeed (so the
# password did reach them). Three ways to give the password:
#   A  --db-password-file (a password with " \ # and a space in it)
#   B  PREPLAY_DB_PASSWORD
#   C  in the URL: still works, warns that ps showed it until the run
#      started; the run overwrites it in its own argv while parsing its
#      options, before it forks anything, so once the run has a child
#      neither the run's command line nor any child's (one between its
#      fork and its exec shows the run's) holds it.
set -euo pipefail
: "${PREPLAY_BIN:?}" "${PREPLAY_BUILD_DIR:?}" "${PREPLAY_SOURCE_DIR:?}"
work=$(mktemp -d /tmp/rsec-XXXXXX)
apps="$PREPLAY_SOURCE_DIR/tests/apps"
trap '"$apps/db-stop.sh" "$work/db" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
"$apps/db-start.sh" "$work/db" 2>/dev/null
sock="$work/db/mariadb.sock"
pw_hard="Pw \"q\\ #$(od -An -tx1 -N6 /dev/urandom | tr -d ' \n')"
pw_url="Url$(od -An -tx1 -N6 /dev/urandom | tr -d ' \n')"
printf '%s\n' "$pw_hard" >"$work/pw"
chmod 600 "$work/pw"
sql_pw=$(printf '%s' "$pw_hard" | sed -e 's/\\/\\\\/g' -e "s/'/\\\\'/g")
mariadb --no-defaults --socket="$sock" -uroot -e "
  CREATE DATABASE rt; CREATE TABLE rt.t (id INT PRIMARY KEY, name VARCHAR(20));
  INSERT INTO rt.t VALUES (1,'a'),(2,'b');
  CREATE USER 'pphard'@'localhost' IDENTIFIED BY '$sql_pw';
  CREATE USER 'ppurl'@'localhost' IDENTIFIED BY '$pw_url';
  GRANT ALL ON rt.* TO 'pphard'@'localhost'; GRANT ALL ON rt.* TO 'ppurl'@'localhost';"
"$PREPLAY_BUILD_DIR/tests/replay/replay_make_plan" db "$work/plan" rt
# the run's mariadb clients live for milliseconds: these shims (first on
# the run's PATH) keep each visible to the scan for 0.2 s with the
# arguments the run gave, then exec the real client
mkdir "$work/shim"
for tool in mariadb mariadb-dump; do
  real=$(command -v "$tool")
  printf '#!/bin/sh\nsleep 0.2\nexec %s "$@"\n' "$real" >"$work/shim/$tool"
  chmod +x "$work/shim/$tool"
done

# run_watched NAME PASSWORD ARGS...: runs `preplay run ARGS` (env as set)
# and scans command lines while it runs; the scan's verdict in NAME.scan
run_watched() {
  local name=$1 pw=$2
  shift 2
  PATH="$work/shim:$PATH" "$PREPLAY_BIN" run "$work/plan" --max-intervals 2 --interval 1s --cpu-ratio 1 \
    -o "$work/$name.json" "$@" 2>"$work/$name.err" &
  local run=$!
  python3 - "$run" "$pw" >"$work/$name.scan" <<'PY' || true
import os, re, sys, time
run, pw = int(sys.argv[1]), sys.argv[2].encode()
hexrun = re.compile(rb"(?<![0-9a-fA-F])[0-9a-fA-F]{16}(?![0-9a-fA-F])")
seen, bad, scans = set(), {}, 0

def parent(pid):
    try:
        return int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return -1

def running(pid):
    # the shell reaps the run when it ends: its /proc entry can go between
    # any two reads (a FileNotFoundError here lost a whole scan's result)
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False

while running(run):
    scans += 1
    try:  # read each scan: the first may come before the run's exec
        runcmd = open(f"/proc/{run}/cmdline", "rb").read()
    except OSError:
        runcmd = None
    children = 0
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        pid = int(d)
        try:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read()
        except OSError:
            continue
        # the run and everything under it
        p, mine = pid, False
        for _ in range(8):
            if p == run:
                mine = True
                break
            p = parent(p)
            if p <= 1:
                break
        if not mine:
            continue
        args = cmd.split(b"\0")
        if pid != run:
            children += 1
            seen.add(os.path.basename(args[0]).decode() + (" " + args[1].decode() if len(args) > 1 else ""))
            if pw in cmd:
                bad[(pid, "password")] = cmd
        m = hexrun.search(cmd)
        if m:
            bad[(pid, "token-like " + m.group().decode())] = cmd
    # the run itself: from the exec to its option parsing (before any fork)
    # its argv is the user's; once it has had a child the password is gone
    # (read again now: a child was seen before this read)
    if children:
        try:
            runcmd = open(f"/proc/{run}/cmdline", "rb").read()
        except OSError:
            runcmd = b""
        if pw in runcmd:
            bad[(run, "password (the run's own, after it forked)")] = runcmd
    time.sleep(0.005)
print("scans", scans)
print("seen", sorted(seen))
for (pid, what), cmd in bad.items():
    print(f"BAD {what} in pid {pid}: {cmd!r}")
PY
  wait "$run" || fail "$name: run failed: $(tail -3 "$work/$name.err")"
  cat "$work/$name.scan"
  grep -q '^BAD' "$work/$name.scan" && fail "$name: a secret on a command line"
  grep -q "preplay replay" "$work/$name.scan" || fail "$name: the scan never saw the replayer"
  grep -Eq "mariadb(-dump)?[ ']" "$work/$name.scan" || fail "$name: the scan never saw a mariadb client"
  python3 - "$work/$name.json" <<'PY' || fail "$name: DB work failed"
import json, sys
d = json.load(open(sys.argv[1]))
assert [(i["requests"], i["failed"]) for i in d["intervals"]] == [(100, 0), (100, 0)], d["intervals"]
codes = {e["code"] for e in d["db_errors"]}
assert codes <= {1062, 1064}, d["db_errors"]  # no 1045 access denied
assert d["resources"]["dbapp"]["GET /select"]["db_s"] > 0
PY
  ! grep -q "visible to every user" "$work/$name.err" || [ "$name" = url ] ||
    fail "$name: warned about a password that is not on the command line"
}

# URLs the run cannot keep: refused with the reason, exit status 2
long="mysql://u:p@localhost/$(printf 'd%.0s' $(seq 4100))"
st=0; "$PREPLAY_BIN" run "$work/plan" -o "$work/long.json" --db "$long" 2>"$work/long.err" || st=$?
[ "$st" = 2 ] && grep -q "^run: a DB URL longer than 4095 bytes$" "$work/long.err" ||
  fail "a 4.1 kB URL: status $st, said: $(cat "$work/long.err")"
u="mysql://u@localhost/rt"
st=0; "$PREPLAY_BIN" run "$work/plan" -o "$work/many.json" --db "$u" --db "$u" --db "$u" --db "$u" --db "$u" \
  2>"$work/many.err" || st=$?
[ "$st" = 2 ] && grep -q "^run: more than 4 DB URLs on the command line$" "$work/many.err" ||
  fail "five --db: status $st, said: $(cat "$work/many.err")"

run_watched file "$pw_hard" --db "mysql://pphard@localhost/rt?socket=$sock" --db-password-file "$work/pw"
PREPLAY_DB_PASSWORD="$pw_hard" run_watched env "$pw_hard" --db "mysql://pphard@localhost/rt?socket=$sock"
run_watched url "$pw_url" --db "mysql://ppurl:$pw_url@localhost/rt?socket=$sock"
grep -q "run: warning: the DB password in --db was visible to every user (ps) until run started" "$work/url.err" ||
  fail "url: no warning: $(cat "$work/url.err")"
echo "run secrets ok"
