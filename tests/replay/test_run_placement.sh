#!/usr/bin/env bash
# test_run_placement.sh - results "placement" (formats/RESULTS.md, 2.1):
# where a run's database and clients were, as `preplay run` found them,
# and how compare shows it. A private MariaDB on a free port (listening on
# every address) and the DB fixture plan, replayed three ways:
#   tcp   --db 127.0.0.1:PORT: a local TCP DB whose CPU cgroup is the
#         server process's (read from /proc here as the oracle)
#   unix  --db ...?socket=: the same server by its unix socket
#   small inside tools/emulate small, the DB on the host at
#         $PREPLAY_EMU_HOST_ADDR: the clients inside the type's CPU cgroup,
#         the DB outside it ("host")
#   inside inside tools/emulate small with the DB inside too, the
#         controller moved out to the host's cgroups once its replayers
#         run: the DB is in the type, the client not
# then `compare --json` carries each run's placement, the report's run
# table names the DB address and the type's cgroup and warns that the runs
# placed their DB differently, and a 2.0 results file (no placement)
# still compares, said to be "not in the results" (--allow-failed: the
# fixture plan fails some queries on purpose). Needs root (emulate).
set -euo pipefail
: "${PREPLAY_BIN:?}" "${PREPLAY_BUILD_DIR:?}" "${PREPLAY_SOURCE_DIR:?}"
[ "$(id -u)" = 0 ] || { echo "test_run_placement: needs root (tools/emulate)" >&2; exit 1; }
work=$(mktemp -d /tmp/rplace-XXXXXX)
apps="$PREPLAY_SOURCE_DIR/tests/apps"
trap '"$apps/db-stop.sh" "$work/db" >/dev/null 2>&1 || true; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
port=$(/usr/bin/python3 "$PREPLAY_SOURCE_DIR/tests/common/free_port.py")
"$apps/db-start.sh" "$work/db" "$port" -- --bind-address=0.0.0.0 2>/dev/null ||
    fail "MariaDB did not start"
sock="$work/db/mariadb.sock"
mariadb --no-defaults --socket="$sock" -uroot -e \
    "CREATE DATABASE rt; CREATE TABLE rt.t (id INT PRIMARY KEY, name VARCHAR(20));
     CREATE USER 'rp'@'%' IDENTIFIED BY 'pw'; GRANT ALL ON rt.* TO 'rp'@'%';"
"$PREPLAY_BUILD_DIR/tests/replay/replay_make_plan" db "$work/plan" rt
run() { # NAME RUN_ARGS...: one 1 s interval
    local name=$1
    shift
    "$PREPLAY_BIN" run "$work/plan" --max-intervals 1 --interval 1s --cpu-ratio 1 \
        --instance "$name" -o "$work/$name.json" "$@" >"$work/$name.out" 2>&1 ||
        fail "run $name: $(tail -3 "$work/$name.out")"
}
run tcp --db "mysql://rp:pw@127.0.0.1:$port/rt"
run unix --db "mysql://root@localhost/rt?socket=$sock"
"$PREPLAY_SOURCE_DIR/tools/emulate" --timeout 60 small -- sh -c '"$0" run "$1" --max-intervals 1 \
    --interval 1s --cpu-ratio 1 --instance small -o "$2" \
    --db "mysql://rp:pw@$PREPLAY_EMU_HOST_ADDR:$3/rt"' "$PREPLAY_BIN" "$work/plan" \
    "$work/small.json" "$port" >"$work/small.out" 2>&1 ||
    fail "run inside emulate small: $(tail -3 "$work/small.out")"
# inside: the DB inside the type beside the replayers, and the controller
# with its driver moved out to the host's cgroups once the replayers run
# (a client outside the instance, as the accuracy benchmarks place it): the
# DB is still in the type (it was said to be outside: compared with the
# controller's cgroup, not the replayers'). run's mariadb-dump is slowed
# by 1 s (a shim first on run's PATH) so that the move is due while run
# has a child that is not its replayer: a host side that moved run then
# left the replayer to start in the host's cgroups (ASan did so by chance)
port2=$(/usr/bin/python3 "$PREPLAY_SOURCE_DIR/tests/common/free_port.py")
mkdir "$work/slow-dump"
printf '#!/bin/sh\nsleep 1\nexec %s "$@"\n' "$(command -v mariadb-dump)" >"$work/slow-dump/mariadb-dump"
chmod +x "$work/slow-dump/mariadb-dump"
"$PREPLAY_SOURCE_DIR/tools/emulate" --timeout 90 small -- sh -c '
    "$0/db-start.sh" "$1/dbin" "$2" >/dev/null 2>&1 || exit 1
    PATH=$1/slow-dump:$PATH
    export PATH
    mariadb --no-defaults --socket="$1/dbin/mariadb.sock" -uroot -e \
        "CREATE DATABASE rt; CREATE TABLE rt.t (id INT PRIMARY KEY, name VARCHAR(20));"
    "$3" run "$4" --max-intervals 1 --interval 4s --cpu-ratio 1 --instance inside \
        -o "$1/inside.json" --db "mysql://root@localhost/rt?socket=$1/dbin/mariadb.sock" \
        >"$1/inside.out" 2>&1 &
    run=$!
    i=0
    # the replayer (its command line has --component; the plan has one
    # component), not any child: run forks mariadb-dump first
    while [ $i -lt 400 ] && [ "$(pgrep -c -f -P $run -- --component)" -lt 1 ]; do sleep 0.05; i=$((i + 1)); done
    echo $run >"$1/move-me.tmp" && mv "$1/move-me.tmp" "$1/move-me"
    wait $run; rc=$?
    "$0/db-stop.sh" "$1/dbin" >/dev/null 2>&1
    exit $rc' "$apps" "$work" "$port2" "$PREPLAY_BIN" "$work/plan" >"$work/inside.emu" 2>&1 &
emu=$!
for ((i = 0; i < 1200; i++)); do # the host side: moves the controller out of the type
    if [ -s "$work/move-me" ]; then
        for c in cpu cpuset; do cat "$work/move-me" >"/sys/fs/cgroup/$c/cgroup.procs"; done
        rm "$work/move-me"
        break
    fi
    kill -0 "$emu" 2>/dev/null || break
    sleep 0.05
done
wait "$emu" || fail "run inside emulate small with its DB: $(tail -3 "$work/inside.out" "$work/inside.emu")"
/usr/bin/python3 - "$work/inside.json" <<'PY'
import json, sys
pl = json.load(open(sys.argv[1]))["placement"]
if pl["client"]["cpu_cgroup"] != "/" or pl["client"]["in_type"] is not False:
    sys.exit("FAIL: inside: the controller was not moved out: %r" % pl["client"])
if not (pl["db"]["cpu_cgroup"] or "").startswith("/preplay-emu-small-") or pl["db"]["in_type"] is not True:
    sys.exit("FAIL: inside: the DB beside the replayers is not in the type: %r" % pl["db"])
PY

# a 2.0 file: the tcp run without what 2.1 added
/usr/bin/python3 - "$work/tcp.json" "$work/old.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
del d["version_minor"], d["placement"]
d["instance"] = "old"
json.dump(d, open(sys.argv[2], "w"))
PY
dbpid=$(cat "$work/db/mariadbd.pid")
"$PREPLAY_BIN" compare "$work/tcp.json" "$work/unix.json" "$work/small.json" "$work/old.json" --allow-failed \
    --json >"$work/compare.json" || fail "compare --json"
"$PREPLAY_BIN" compare "$work/tcp.json" "$work/unix.json" "$work/small.json" "$work/old.json" --allow-failed \
    -o "$work/report.html" >/dev/null || fail "compare -o"
/usr/bin/python3 - "$work" "$port" "$sock" "$dbpid" "$(hostname)" <<'PY'
import json, sys
work, port, sock, dbpid, host = sys.argv[1:6]

def cpu_cgroup(pid):
    for line in open("/proc/%s/cgroup" % pid):
        n, ctl, path = line.rstrip("\n").split(":", 2)
        if "cpu" in ctl.split(","):
            return path

def check(what, got, want):
    if got != want:
        sys.exit("FAIL: %s: %r, expected %r" % (what, got, want))

mine, db_cg = cpu_cgroup("self"), cpu_cgroup(dbpid)
runs = {n: json.load(open("%s/%s.json" % (work, n))) for n in ("tcp", "unix", "small")}
for n, d in runs.items():
    check(n + " version_minor", d["version_minor"], 5)  # 2.1 placement, 2.2 counters, 2.3 failure, 2.4 bands, 2.5 warmup
    check(n + " client.host", d["placement"]["client"]["host"], host)
    check(n + " client.in_type", d["placement"]["client"]["in_type"], True)
tcp, unix, small = (runs[n]["placement"] for n in ("tcp", "unix", "small"))
check("tcp", tcp["db"], {"address": "127.0.0.1:" + port, "transport": "tcp", "where": "local",
                         "cpu_cgroup": db_cg, "in_type": True})
check("tcp emulated_type", tcp["emulated_type"], None)
check("tcp client cgroup", tcp["client"]["cpu_cgroup"], mine)
check("unix", unix["db"], {"address": sock, "transport": "unix", "where": "local",
                           "cpu_cgroup": db_cg, "in_type": True})
check("small emulated_type", small["emulated_type"], "small")
cg = small["client"]["cpu_cgroup"] or ""
if not cg.startswith("/preplay-emu-small-"):
    sys.exit("FAIL: small client cgroup %r is not the emulated type's" % cg)
check("small db where", small["db"]["where"], "host")
check("small db in_type", small["db"]["in_type"], False)
if not small["db"]["address"].startswith("10.213.") or not small["db"]["address"].endswith(":" + port):
    sys.exit("FAIL: small db address %r" % small["db"]["address"])
cmp = {i["name"]: i for i in json.load(open(work + "/compare.json"))["instances"]}
for n in ("tcp", "unix", "small"):
    check("compare --json " + n, cmp[n]["placement"], runs[n]["placement"])
check("compare --json old", cmp["old"]["placement"], None)
html = open(work + "/report.html").read()
for want in ("127.0.0.1:%s (TCP), on this machine, sharing the candidate&#39;s CPU" % port,
             "(TCP), on the host, outside the emulated type (its veth address), outside the "
             "emulated type&#39;s CPU cgroup",
             "in emulated type small, CPU cgroup /preplay-emu-small-",
             "not in the results (written before results 2.1)",
             "did not place their database or their clients alike"):
    w = want.replace("&#39;", "'")
    if want not in html and w not in html:
        sys.exit("FAIL: report lacks %r" % want)
print("placement ok:", json.dumps(small))
PY
