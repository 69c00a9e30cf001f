#!/usr/bin/env bash
# test-analyze-event-loop.sh - event-loop front ends (issue 27, item 1): one
# nginx worker thread serves several keep-alive clients at once, so its
# events of different requests interleave. (1) nginx -> php-fpm (FastCGI
# over a unix socket, 4 prefork workers) -> MariaDB (mysqli), with a
# static file next to the PHP pages; (2) nginx reverse-proxying to a
# threaded Python upstream (backend.py) over kept-alive upstream
# connections, GETs and a POST whose body outgrows nginx's 1 KB header
# buffer. Both under a bounded concurrent load (keepalive_load.py: 4
# clients, each one keep-alive connection). The analyzer must take the
# nginx worker as an event loop: no violation, no flagged block, coverage
# >= 99%, and each request's events in its own block: the bytes every
# front-end block received and sent are, as a multiset, what the clients
# sent and received, and each PHP/upstream request is called by exactly
# one nginx block of the same label. The plan marks the nginx component
# as an event loop. (3) Each plan replays as the real stack runs, judged
# against the real stack measured in the same run: the real stack
# untraced and the replay (`preplay replay` of each component, as `preplay
# run` starts them) in turn, real, replay, ..., real (4 real runs, 3
# replays), each driven by the same client under the same load
# (keepalive_load.py, 32 rounds after one warm-up round, with one client
# and with 4; for the replay the recorded sessions' front-end blocks with
# their recorded sizes over the replay protocol, of the recording's second
# run: its first met a cold stack). Per label, the replayed
# median must be within max(10%, floor) of the real runs' pooled median
# and the p95 within max(15%, floor), the floor being the real runs'
# spread (check-event-loop.py --replay): a busy machine slows the real
# runs around the replay as much as the replay, so load moves the floor
# and the references, not the verdict. Judged one way only (a slower
# replay fails, a faster one is printed), each for a cause named where it
# is checked: PHP's labels (MariaDB connect per request) and the proxy's
# under 4 clients (the upstream's Python GIL). `preplay run` also runs
# each plan once (one 3 s interval): every request answered, every label
# back.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${PREPLAY_BIN:?PREPLAY_BIN not set}
work=$(mktemp -d /tmp/preplay-event-loop.XXXXXX)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    sleep 0.5
    for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
    [ -n "${KEEP:-}" ] && { echo "kept $work" >&2; return; }
    rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
for tool in /usr/sbin/nginx /usr/sbin/php-fpm8.2 /usr/sbin/mariadbd /usr/bin/python3; do
    [ -x "$tool" ] || fail "$tool missing (tools/install-deps installs nginx-light, php8.2-fpm, mariadb-server)"
done
. "$here/../common/lemp.sh"
free_port() { lemp_free_port; }
wait_port() { lemp_wait_port "$@"; }
stop() { # pid: SIGTERM through preplay record, bounded wait
    local i
    kill -TERM "$1" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done
    fail "process $1 did not stop after SIGTERM"
}
# load PORT ROUNDS DIR NAME REQ...: the clients' load while recording,
# twice, one run after the other (DIR/load.1.tsv, DIR/load.2.tsv), and
# both in DIR/load.tsv
load() {
    local port=$1 rounds=$2 dir=$3 name=$4 run
    shift 4
    for run in 1 2; do
        /usr/bin/python3 "$here/keepalive_load.py" "$port" "$clients" "$rounds" "$dir/load.$run.tsv" "$@" ||
            fail "load through $name (run $run)"
    done
    cat "$dir/load.1.tsv" "$dir/load.2.tsv" >"$dir/load.tsv"
}
check() { /usr/bin/python3 "$here/check-event-loop.py" "$@"; }
# replay_run NAME PLAN DIR [RUN_OPTION...]: `preplay run`, session mode
# (the clients were closed loop on kept-alive connections), one 3 s
# interval: it completes, no request failed, every recorded label came back
replay_run() {
    local name=$1 plan=$2 dir=$3
    shift 3
    "$bin" run "$plan" --interval 3s --max-intervals 1 --cpu-ratio 1 --mode session \
        "$@" -o "$dir/results.json" >"$dir/run.out" 2>"$dir/run.err" ||
        fail "run on the $name plan: $(tail -5 "$dir/run.err")"
    /usr/bin/python3 - "$dir/results.json" "$dir/load.tsv" <<'PY' || fail "$name: preplay run"
import json, sys
d = json.load(open(sys.argv[1]))
rec = {l.split("\t")[1] for l in open(sys.argv[2]) if l.strip()}
bad = [i["failed"] for i in d["intervals"] if i["failed"]]
if bad or set(d["labels"]) != rec:
    sys.exit("failed %s, labels %s, recorded %s" % (bad, sorted(d["labels"]), sorted(rec)))
PY
}
# replayer DIR PLAN COMPONENT PORT [OPTION...]: `preplay replay` of one
# component in the background (cpu ratio 1: the recording host itself;
# the plan's dummy files in DIR/files), ready when it says 'listening'
od -An -N8 -tx8 /dev/urandom | tr -d ' \n' >"$work/token"
replayer() {
    local dir=$1 plan=$2 comp=$3 port=$4 i p
    shift 4
    [ -d "$dir/files" ] || "$bin" prepare "$plan" --dir "$dir/files" >/dev/null ||
        fail "preplay prepare $plan"
    "$bin" replay "$plan" --component "$comp" --listen "127.0.0.1:$port" --token-file "$work/token" \
        --cpu-ratio 1 --dir "$dir/files" "$@" >"$dir/replay-$comp.out" 2>"$dir/replay-$comp.err" &
    p=$!
    pids+=($p)
    for ((i = 0; i < 100; i++)); do
        grep -q '^listening' "$dir/replay-$comp.out" && return 0
        kill -0 "$p" 2>/dev/null || break
        sleep 0.1
    done
    fail "preplay replay of $comp: $(cat "$dir/replay-$comp.err")"
}
# real_vs_replay NAME DIR TSV REAL_PORT REPLAY_PORT CLIENTS CHECK_OPTION
# REQ...: the real stack (REAL_PORT) and the replay (REPLAY_PORT, the
# plan's front-end blocks from the --blocks TSV) in turn, real first and
# last: real, replay, real, replay, real, replay, real, CLIENTS clients x
# $measured rounds each after one warm-up round, so a slow phase of this
# shared machine falls on both; checked against each other
# (check-event-loop.py --replay, with CHECK_OPTION unless ""). 32 rounds,
# not 8: with 8, a label asked once a round had 8 requests a run with one
# client (24 replayed), so its p95 was the run's slowest request, the
# first on the run's new connection, or one scheduling spike (2-5 ms on
# this shared VM); with 32 the pooled p95 is the 5th-10th highest and a
# single spike no longer decides it. Judging 7 runs resampled from one
# test run's 4 real runs (each client's first round from a real run's
# first, each later round from any real run's later ones; 3 of them as
# the replay), over 8 test runs: a label's margin above 1 summed to 13%
# over the labels with 8 rounds, 4.7% with 32 (GET /small with 4 clients
# 4.6% -> 0.4%, POST /order.php with one 1.6% -> 0).
measured=32
real_vs_replay() {
    local name=$1 dir=$2/c$6 tsv=$3 rport=$4 pport=$5 nc=$6 how=$7 k
    shift 7
    mkdir -p "$dir"
    # the replay's clients replay the sessions of the recording's second
    # run (--skip: the first run's $clients sessions met a cold stack, their
    # first GET /item.php 2.5 ms in php-fpm against 1.0 ms in the second
    # run's, medians of 60, and replaying them put that cold start into
    # every replay run's first request, on a new connection: 2.0 ms replayed
    # against 1.3 real, medians of 21 and 28, and with one client that
    # request is item.php's p95), each replay run another of them
    # (--offset), as each real run is another sample
    local lo=(/usr/bin/python3 "$here/keepalive_load.py") rp=(--replay "$(cat "$work/token")" "$tsv" --skip $clients)
    "${lo[@]}" "$rport" "$nc" 1 "$dir/warm.tsv" "$@" || fail "$name: warming the real stack up"
    "${lo[@]}" "${rp[@]}" "$pport" "$nc" 1 "$dir/warm.tsv" "$@" || fail "$name: warming the replay up"
    cat /proc/loadavg >"$dir/loadavg"
    local reals=() replays=()
    for k in 1 2 3 4; do
        "${lo[@]}" "$rport" "$nc" $measured "$dir/real.$k.tsv" "$@" || fail "$name: real run $k"
        reals+=("$dir/real.$k.tsv")
        [ $k -eq 4 ] && break
        "${lo[@]}" "${rp[@]}" --offset $(((k - 1) * nc)) "$pport" "$nc" $measured "$dir/replay.$k.tsv" "$@" ||
            fail "$name: replay run $k"
        replays+=("$dir/replay.$k.tsv")
    done
    cat "${replays[@]}" >"$dir/replay.tsv"
    echo "$name, $nc clients: load average $(cut -d' ' -f1-3 "$dir/loadavg") -> $(cut -d' ' -f1-3 /proc/loadavg)"
    check --replay "$name ($nc clients)" ${how:+"$how"} "$dir/replay.tsv" "${reals[@]}" ||
        fail "$name replay ($nc clients)"
}
clients=4

# ---- (1) nginx -> php-fpm -> MariaDB, concurrent keep-alive clients ----
lemp=$work/lemp
mkdir -p "$lemp/www"
dbport=$(free_port)
lemp_db_start "$lemp" "$dbport"
trap 'lemp_db_stop "$lemp"; cleanup' EXIT
lemp_orders_app "$lemp" "$dbport"
lemp_fpm_conf "$lemp" 4
lport=$(free_port)
lemp_nginx_conf "$lemp" "$lport"
lemp_start_fpm "$lemp" "$bin" record -q --no-cpu-scores --db-port "$dbport" -o "$work/trace/php" -c php --
fpm=${pids[-1]}
lemp_start_nginx "$lemp" "$bin" record -q --no-cpu-scores -o "$work/trace/web" -c web --
web=${pids[-1]}
lemp_wait "$lemp" "$lport"
load "$lport" 8 "$lemp" "nginx and php-fpm" \
    "GET /item.php?id=1" "POST /order.php 300" "GET /static.bin" "GET /item.php?id=3"
stop "$web"; stop "$fpm"
"$bin" analyze "$work/trace/web" "$work/trace/php" -o "$work/lemp.plan" --blocks "$work/lemp.tsv" \
    >"$work/lemp.analyze" 2>"$work/lemp.analyze.err" ||
    fail "analyze LEMP: $(cat "$work/lemp.analyze.err")"
cat "$work/lemp.analyze"
# 2 runs x 4 clients x 8 rounds x 4 requests: 256, 192 through php-fpm; DB ops:
# item.php PREPARE + EXECUTE, order.php PREPARE + EXECUTE + a query
grep -q ": 256 requests, 448 blocks, 192 calls, 0 external calls, 448 DB ops;" "$work/lemp.analyze" ||
    fail "LEMP plan: requests, blocks, calls or DB ops"
grep -q "component web (pid [0-9]*) thread [0-9]* is an event loop" "$work/lemp.analyze.err" ||
    fail "LEMP: nginx not taken as an event loop: $(cat "$work/lemp.analyze.err")"
"$bin" info --json "$work/lemp.plan" >"$work/lemp.json"
# coverage >= 99% (check-event-loop.py's default): php-fpm writes 6 bytes
# to its stderr (/dev/null) after closing each FastCGI connection and
# before accepting the next; that is the post-response tail of the request
# it served (97.1% when no block owned it), so no serving thread's work is
# left between requests: the summary's post-response count is 0
check LEMP "$work/lemp.json" "$work/lemp.tsv" "$lemp/load.tsv" web php || fail "LEMP plan"
grep -q "^outside requests: .*: post-response [0-9.]* ms/0, accept [0-9.]* ms/0," "$work/lemp.analyze" ||
    fail "LEMP: work between requests left outside blocks: $(grep '^outside' "$work/lemp.analyze")"
db_url="mysql://root@localhost/app?socket=$lemp/db/mariadb.sock"
replay_run LEMP "$work/lemp.plan" "$lemp" --db "$db_url"
# the real stack untraced (new ports), the replayers beside it
lport=$(free_port)
lemp_nginx_conf "$lemp" "$lport"
lemp_start_fpm "$lemp"
lemp_start_nginx "$lemp"
lemp_wait "$lemp" "$lport"
rphp=$(free_port); rweb=$(free_port)
while [ "$rweb" = "$rphp" ]; do rweb=$(free_port); done
replayer "$lemp" "$work/lemp.plan" php "$rphp" --db "$db_url"
echo "php 127.0.0.1:$rphp" >"$lemp/peers"
replayer "$lemp" "$work/lemp.plan" web "$rweb" --peers "$lemp/peers"
# PHP's labels, at any concurrency: the replay has no MariaDB connect per
# request (php's `new mysqli` opens one, 1 ms median and 8 ms p95 of its
# blocks' 4 and 15 here, while the replayer queries over pooled
# connections), so they come back faster than the real stack; only a
# slower replay fails them
lemp_reqs=("GET /item.php?id=1" "POST /order.php 300" "GET /static.bin" "GET /item.php?id=3")
for nc in 1 $clients; do
    real_vs_replay LEMP "$lemp" "$work/lemp.tsv" "$lport" "$rweb" $nc \
        "--one-sided=GET /item.php,POST /order.php" "${lemp_reqs[@]}"
done

# ---- (2) nginx reverse proxy -> threaded Python upstream ----
prox=$work/proxy
mkdir -p "$prox/www"
pport=$(free_port); bport=$(free_port)
while [ "$bport" = "$pport" ]; do bport=$(free_port); done
lemp_nginx_conf "$prox" "$pport" "upstream be { server 127.0.0.1:$bport; keepalive 8; }" "location / {
            proxy_pass http://be;
            proxy_http_version 1.1;
            proxy_set_header Connection \"\";
        }"
"$bin" record -q --no-cpu-scores -o "$work/trace/backend" -c backend -- /usr/bin/python3 \
    "$here/backend.py" "$bport" --nodelay >"$prox/backend.out" 2>"$prox/backend.err" &
pids+=($!); be=$!
lemp_start_nginx "$prox" "$bin" record -q --no-cpu-scores -o "$work/trace/proxy" -c proxy --
px=${pids[-1]}
wait_port "$bport" 30 || fail "backend.py not listening: $(cat "$prox/backend.err")"
wait_port "$pport" 30 || fail "nginx (proxy) not listening: $(cat "$prox/nginx.out" "$prox/nginx.err")"
# the POST's 3 KB body: nginx reads the request in two receives (its 1 KB
# header buffer, then the rest) of bytes the client wrote at once; a driver
# that wrote them as two sends met Nagle and the replayer's delayed ACK, a
# 40 ms stall the recording did not have (PLAN_RECV_FULL)
load "$pport" 8 "$prox" "the nginx proxy" "GET /small" "GET /medium" "GET /large" "POST /echo 3000"
stop "$px"; stop "$be"
"$bin" analyze "$work/trace/proxy" "$work/trace/backend" -o "$work/proxy.plan" --blocks "$work/proxy.tsv" \
    >"$work/proxy.analyze" 2>"$work/proxy.analyze.err" ||
    fail "analyze the proxy: $(cat "$work/proxy.analyze.err")"
cat "$work/proxy.analyze"
grep -q ": 256 requests, 512 blocks, 256 calls, 0 external calls, 0 DB ops;" "$work/proxy.analyze" ||
    fail "proxy plan: requests, blocks or calls"
grep -q "component proxy (pid [0-9]*) thread [0-9]* is an event loop" "$work/proxy.analyze.err" ||
    fail "proxy: nginx not taken as an event loop: $(cat "$work/proxy.analyze.err")"
"$bin" info --json "$work/proxy.plan" >"$work/proxy.json"
check proxy "$work/proxy.json" "$work/proxy.tsv" "$prox/load.tsv" proxy backend || fail "proxy plan"
replay_run proxy "$work/proxy.plan" "$prox"
pport=$(free_port); bport=$(free_port)
while [ "$bport" = "$pport" ]; do bport=$(free_port); done
lemp_nginx_conf "$prox" "$pport" "upstream be { server 127.0.0.1:$bport; keepalive 8; }" "location / {
            proxy_pass http://be;
            proxy_http_version 1.1;
            proxy_set_header Connection \"\";
        }"
/usr/bin/python3 "$here/backend.py" "$bport" --nodelay >"$prox/backend.out" 2>"$prox/backend.err" &
pids+=($!)
lemp_start_nginx "$prox"
wait_port "$bport" 30 || fail "backend.py (untraced) not listening: $(cat "$prox/backend.err")"
wait_port "$pport" 30 || fail "nginx (proxy, untraced) not listening: $(cat "$prox/nginx.out" "$prox/nginx.err")"
rbe=$(free_port); rpx=$(free_port)
while [ "$rpx" = "$rbe" ]; do rpx=$(free_port); done
replayer "$prox" "$work/proxy.plan" backend "$rbe"
echo "backend 127.0.0.1:$rbe" >"$prox/peers"
replayer "$prox" "$work/proxy.plan" proxy "$rpx" --peers "$prox/peers"
# one client: every label both ways; 4 clients: one way only. backend.py
# runs its handler threads' Python under the interpreter's lock (the GIL:
# a flag under a mutex and a condition variable, not a lock the trace
# holds), so 4 concurrent requests queue for it in the real stack and
# not in the replay, which comes back faster (0.42 against 0.63 ms
# medians for GET /small in one run; the same with one client: 0.22
# against 0.21)
proxy_reqs=("GET /small" "GET /medium" "GET /large" "POST /echo 3000")
real_vs_replay proxy "$prox" "$work/proxy.tsv" "$pport" "$rpx" 1 "" "${proxy_reqs[@]}"
real_vs_replay proxy "$prox" "$work/proxy.tsv" "$pport" "$rpx" $clients \
    "--one-sided=GET /small,GET /medium,GET /large,POST /echo" "${proxy_reqs[@]}"
echo PASS
