#!/usr/bin/env bash
# tests/bench/accuracy/lemp-verdict.sh - issue 27's acceptance "its verdict
# agrees with the real app on an emulated type", on nginx -> php-fpm ->
# MariaDB (tests/common/lemp.sh: the orders app, PHP's mysqli on a
# non-default port, a static file beside the pages):
#   1. record: the stack on this host under `preplay record` (CPU scores
#      on: the ratio is measured, never pinned), 4 keep-alive clients
#      (tests/analyze/keepalive_load.py) x --rounds rounds of item.php,
#      order.php (a POST), static.bin; then `preplay analyze`;
#   2. per type (tools/emulate TYPE; default small and medium), in turn:
#      real run 1, the prediction, real runs 2..N (N = --real-runs >= 3):
#      - real: inside the type a fresh MariaDB, php-fpm and nginx; the same
#        clients and rounds, warmed up by one round first;
#      - prediction: inside the type a fresh MariaDB with the app's schema,
#        then `preplay run PLAN --instance TYPE --mode session` (the
#        clients were closed loop on kept-alive connections), each interval
#        one pass of the recording (run's default): the 4 sessions once, as
#        a real run has them (a longer --interval repeats the schedule at
#        the recorded pace, so on a type slower than the recording host the
#        next pass's sessions start before the last ones end: more clients
#        than the real runs have, and response times that grew through
#        each 10 s interval from 3 to 42 ms in one trial);
#      placement, the same in both: the database and the servers (or
#      replayers) inside the type; the client (keepalive_load.py, or `run`'s
#      controller and driver once its replayers listen) moved out of the
#      type's cpu and cpuset cgroups into the host's, and left in its network
#      namespace (both reach the front end on loopback: the type's tbf shaping
#      applies to neither);
#   3. `preplay compare --slo SLO` on the predictions: which types meet
#      (SLO: --slo, or by default one where the types differ, chosen from
#      the real runs only: lemp_verdict.py --choose-slo);
#      the real verdict per type: every real run's p95 (per label) below
#      the limit = meets, none = does not, some = undecided (the real app
#      disagrees with itself there: an SLO at the noise floor, choose
#      another); the two must agree on every type;
#   4. the table: per type and label, real (pooled) vs predicted median and
#      p95, the noise floor (the largest difference between two real runs,
#      relative), and the host's load average before/after each phase.
#
# usage: lemp-verdict.sh [--out DIR] [--types "small medium"] [--rounds N]
#                        [--real-runs N] [--slo SLO] [--interval T] [--max-intervals N]
#                        [--reuse DIR]
#   --interval, --max-intervals  for preplay run (default: one pass each, 6)
#   --reuse DIR  take the recording (DIR/trace, DIR/recorded.tsv) and the
#          real runs (DIR/real-TYPE-K.tsv) of an earlier --out DIR instead of
#          making them: analyze that trace with this binary and run only the
#          predictions (two builds judged on one recording and one set of
#          real runs, their predictions interleaved; --out must differ)
#   --slo  METRIC<LIMIT, or auto (default): a p95 limit in the gap between
#          the types' real runs (docs/accuracy.md, "nginx + php-fpm: does
#          the verdict agree?")
# Needs root (tools/emulate). Exit 0 when every type's verdicts agree, 1
# when one disagrees or a phase fails. Never leaves a server running: each
# phase runs under tools/emulate (which kills what is left in its cgroups)
# or this script's trap.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=${PREPLAY_SOURCE_DIR:-$(cd "$here/../../.." && pwd)}
bin=${PREPLAY_BIN:-$src/build/release/preplay}
load_py=$src/tests/analyze/keepalive_load.py
reqs=("GET /item.php?id=1" "POST /order.php 300" "GET /static.bin" "GET /item.php?id=3")
clients=4
fail() { echo "lemp-verdict: FAIL: $*" >&2; exit 1; }
log() { echo "lemp-verdict: $*" >&2; }
. "$src/tests/common/lemp.sh"
# the clients stand for users on other machines: the real ones run under
# client_prio (checked where it runs: a type's cgroup may have no real-time time)
. "$src/tests/common/client_prio.sh"
export LEMP_WAIT_S=180

# the load clients and `preplay run`'s controller leave the type's CPU
# (type_run, type_client_leave, type_run_controller_leave)
. "$src/tests/common/type_client.sh"

# ---- inside the emulated type (tools/emulate runs this script again) ----
if [ "${1:-}" = --inside ]; then
    mode=$2 d=$3 rounds=$4 out=$5 plan=${6:-} type=${7:-} interval=${8:-} maxint=${9:-}
    pids=()
    type_client_run_pid=""
    trap 'for p in "${pids[@]}" $type_client_run_pid; do kill -TERM "$p" 2>/dev/null; done; lemp_db_stop "$d"' EXIT
    mkdir -p "$d"
    dbport=$(lemp_free_port)
    lemp_db_start "$d" "$dbport"
    lemp_orders_app "$d" "$dbport"
    if [ "$mode" = real ]; then
        port=$(lemp_free_port)
        lemp_fpm_conf "$d" 4
        lemp_nginx_conf "$d" "$port"
        lemp_start_fpm "$d"
        lemp_start_nginx "$d"
        lemp_wait "$d" "$port"
        (
            type_client_leave "$BASHPID" "$d" || exit 1
            client_prio /usr/bin/python3 "$load_py" "$port" "$clients" 1 "$d/warm.tsv" "${reqs[@]}" &&
                client_prio /usr/bin/python3 "$load_py" "$port" "$clients" "$rounds" "$out" "${reqs[@]}"
        ) || fail "real run inside $type: the load client failed"
        exit 0
    fi
    type_run_controller_leave "$d" "$bin" run "$plan" --instance "$type" --mode session \
        ${interval:+--interval "$interval"} --max-intervals "$maxint" --dir "$d/files" \
        --db "mysql://root@localhost/app?socket=$d/db/mariadb.sock" -o "$out" >"$d/run.out" 2>"$d/run.err" ||
        fail "preplay run inside $type: $(tail -n 5 "$d/run.err")"
    exit 0
fi

out="" types="small medium" rounds=40 runs=3 slo=auto interval="" maxint=6 reuse=""
while [ $# -gt 0 ]; do
    case $1 in
    --out) out=$2; shift 2 ;;
    --types) types=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --real-runs) runs=$2; shift 2 ;;
    --slo) slo=$2; shift 2 ;;
    --interval) interval=$2; shift 2 ;;
    --max-intervals) maxint=$2; shift 2 ;;
    --reuse) reuse=$2; shift 2 ;;
    -h | --help) sed -n '2,55p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "lemp-verdict: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
done
[ "$runs" -ge 3 ] || { echo "lemp-verdict: --real-runs must be at least 3 (the noise floor)" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "lemp-verdict: needs root (tools/emulate)" >&2; exit 1; }
[ -x "$bin" ] || { echo "lemp-verdict: no preplay binary (set PREPLAY_BIN)" >&2; exit 2; }
for tool in /usr/sbin/nginx /usr/sbin/php-fpm8.2 /usr/sbin/mariadbd; do
    [ -x "$tool" ] || fail "$tool missing (tools/install-deps installs nginx-light, php8.2-fpm, mariadb-server)"
done
if [ -z "$out" ]; then
    w=$(mktemp -d /tmp/preplay-lemp-verdict.XXXXXX) || exit 1
    trap 'rm -rf "$w"' EXIT
else
    mkdir -p "$out" && w=$(cd "$out" && pwd) || exit 1
fi
loadavg() { echo "$1: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$w/loadavg.txt"; }
: >"$w/loadavg.txt"
if [ -n "$reuse" ]; then
    reuse=$(cd "$reuse" && pwd) || exit 2
    [ "$reuse" != "$w" ] || { echo "lemp-verdict: --reuse DIR must not be the --out DIR" >&2; exit 2; }
    [ -d "$reuse/trace" ] && [ -f "$reuse/recorded.tsv" ] ||
        { echo "lemp-verdict: --reuse $reuse: no trace/ or recorded.tsv (not an earlier --out DIR)" >&2; exit 2; }
    for t in $types; do
        for ((k = 1; k <= runs; k++)); do
            [ -f "$reuse/real-$t-$k.tsv" ] ||
                { echo "lemp-verdict: --reuse $reuse: no real-$t-$k.tsv (--types, --real-runs as its run)" >&2; exit 2; }
            cp "$reuse/real-$t-$k.tsv" "$w/"
        done
    done
    grep -v -e prediction -e '^end' "$reuse/loadavg.txt" | sed 's/^/reused /' >>"$w/loadavg.txt"
    rm -rf "$w/trace"
    cp -r "$reuse/trace" "$w/trace" && cp "$reuse/recorded.tsv" "$w/" || exit 1
fi

# ---- 1. record on this host ----
record() {
    log "recording on this host: $clients clients x $rounds rounds"
    rec=$w/rec
    rm -rf "$rec" "$w/trace"
    mkdir -p "$rec"
    pids=()
    trap 'for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done; lemp_db_stop "$rec"' EXIT
    dbport=$(lemp_free_port)
    lemp_db_start "$rec" "$dbport"
    lemp_orders_app "$rec" "$dbport"
    lemp_fpm_conf "$rec" 4
    port=$(lemp_free_port)
    lemp_nginx_conf "$rec" "$port"
    lemp_start_fpm "$rec" "$bin" record -q --db-port "$dbport" -o "$w/trace/php" -c php --
    lemp_start_nginx "$rec" "$bin" record -q -o "$w/trace/web" -c web --
    lemp_wait "$rec" "$port"
    /usr/bin/python3 "$load_py" "$port" "$clients" 1 "$rec/warm.tsv" "${reqs[@]}" || fail "warming up"
    loadavg record
    client_prio /usr/bin/python3 "$load_py" "$port" "$clients" "$rounds" "$w/recorded.tsv" "${reqs[@]}" ||
        fail "recording load"
    for p in "${pids[@]}"; do kill -TERM "$p"; done
    for p in "${pids[@]}"; do wait "$p"; done
    pids=()
    lemp_db_stop "$rec"
    trap - EXIT
    [ -z "$out" ] && trap 'rm -rf "$w"' EXIT
}
[ -n "$reuse" ] || record
"$bin" analyze "$w/trace/web" "$w/trace/php" -o "$w/plan" >"$w/analyze.out" 2>"$w/analyze.err" ||
    fail "analyze: $(cat "$w/analyze.err")"
cat "$w/analyze.out" >&2

# ---- 2. per type: real run 1, the prediction, real runs 2..N ----
for t in $types; do
    for ((k = 1; k <= runs; k++)); do
        [ -z "$reuse" ] || [ $k -eq 1 ] || continue
        [ -n "$reuse" ] || {
            log "$t: real run $k of $runs"
            rm -rf "$w/$t-real$k"
            loadavg "$t real $k"
            type_run "$w/$t-real$k" 900 --data-dir "$w" "$t" -- \
                "$0" --inside real "$w/$t-real$k" "$rounds" "$w/real-$t-$k.tsv" "" "$t" \
                >"$w/$t-real$k.log" 2>&1 || { tail -n 5 "$w/$t-real$k.log" >&2; fail "$t: real run $k"; }
            rm -rf "$w/$t-real$k/db"
        }
        [ $k -eq 1 ] || continue
        log "$t: preplay run"
        rm -rf "$w/$t-pred"
        loadavg "$t prediction"
        type_run "$w/$t-pred" 900 --data-dir "$w" "$t" -- \
            "$0" --inside pred "$w/$t-pred" "$rounds" "$w/pred-$t.json" "$w/plan" "$t" "$interval" "$maxint" \
            >"$w/$t-pred.log" 2>&1 ||
            { tail -n 5 "$w/$t-pred.log" "$w/$t-pred/run.err" >&2; fail "$t: preplay run"; }
        rm -rf "$w/$t-pred/db" "$w/$t-pred/files"
    done
done
loadavg end

# ---- 3. and 4. verdicts and the table ----
if [ "$slo" = auto ]; then
    slo=$(/usr/bin/python3 "$here/lemp_verdict.py" --choose-slo --work "$w" --types "$types" --runs "$runs") ||
        fail "no SLO separates the types' real runs (their p95 ranges overlap): nothing to agree on"
fi
log "SLO $slo"
preds=()
for t in $types; do preds+=("$w/pred-$t.json"); done
"$bin" compare "${preds[@]}" --plan "$w/plan" --slo "$slo" >"$w/compare.txt" 2>&1
"$bin" compare "${preds[@]}" --plan "$w/plan" --slo "$slo" --json >"$w/compare.json" 2>/dev/null ||
    fail "preplay compare: $(cat "$w/compare.txt")"
cat "$w/compare.txt"
/usr/bin/python3 "$here/lemp_verdict.py" --work "$w" --types "$types" --runs "$runs" --slo "$slo" \
    --recorded "$w/recorded.tsv" | tee "$w/table.md"
