#!/usr/bin/env bash
# tests/bench/accuracy/apps/app-bench.sh - the accuracy benchmark on a real
# application from Debian (run.sh --app NAME passes its options here;
# NAME.sh is the application's module over app-common.sh: wordpress,
# redmine), unconstrained on this host:
#   1. setup (NAME.sh's setup, kept in --out/base across runs);
#   2. record: the app's server under `preplay record --off` with its
#      label rules, on a fresh copy of the database; warm-up requests
#      untraced (WordPress: opcache's cold start, seconds on `small`;
#      Redmine: Rails' caches), then SIGUSR1 (tracing on) and the fixed
#      open-loop load (NAME's load client, fixed seed); then `preplay
#      analyze`; every real run gets the same warm-up before its load;
#   3. truth: the untraced app, fresh database each time, same load,
#      --real-runs times (at least 3);
#   4. prediction: `preplay run` (CPU ratio measured) against a fresh database;
#   5. compare.py: the noise floor (each real run against the other real
#      runs pooled: DIR/TAG/floor.md), then the prediction against all real
#      runs pooled with p50/p95/p99, the floor beside each error and the
#      goal's verdict per label (DIR/TAG/table.md).
# Placement: MariaDB, the app server and the load client all on the host,
# the same for truth and prediction (the replay's controller/driver is the
# client). MariaDB is not traced (its clients' queries are captured from
# the wire).
# With --type T (tools/emulate), the recording stays unconstrained (the
# "on-premise" machine) while truth and prediction run on T: inside it
# MariaDB and the app server (truth) or MariaDB and `preplay replay` of the
# front end (prediction), listening on the namespace's address; outside
# it, on the host and on the host's CPUs the type does not have (a cpuset
# of its own: type_client_outside), the client: NAME's load client (truth)
# or `preplay drive` (prediction, one pass of the schedule, no PT4Cloud
# intervals).
#
# usage: app-bench.sh --app NAME --out DIR [--rate R] [--duration S] [--real-runs N]
#                     [--seed N] [--intervals N] [--type T] [--redo-prediction]
#                     [--redo-recording] [--db mariadb|postgresql] [--pred-tag NAME]
#        app-bench.sh --app NAME --out DIR --type T --find-knee [--knee-seconds S]
# --find-knee finds the app's knee on type T instead: one start of the
# untraced app inside T (fresh database, warm-up), then NAME's open-loop
# load from the host at rising rates (KNEE_RATES, --knee-seconds each,
# default 10; step K with seed N + K: a WordPress comment repeated is
# refused as a duplicate) until one is past the knee (../knee.py: the
# median response time over 4x, or the p95 over 10x, the lowest of an
# earlier step, or fewer than 95 % of the requests succeeding, or a
# failed share over 1 point above an earlier step's lowest); the knee
# is the last rate before it. Prints "knee RATE" and writes
# DIR/knee-T/knee.txt (knee.py's table of the steps).
# --db picks the database server the app runs on and the replay restores
# and queries (default mariadb; postgresql: a private PostgreSQL 15, the
# app's PostgreSQL driver, `preplay run --db postgresql://...`; the tag
# gets "-postgresql" and the installed base is DIR/base-postgresql).
# --redo-prediction keeps the recording and the real runs of an earlier run
# with the same options and redoes analyze, prediction and tables (a new
# preplay judged against the same truth). --redo-recording records again
# too (a new tracer), the real runs still kept.
# --pred-tag NAME names this prediction's files plan-NAME, pred-NAME.json,
# pred-NAME/ (replay.log: the CPU ratio), table-NAME.md, compare-NAME.json
# instead of plan, pred.json, ..., so an earlier prediction is kept: with
# --redo-prediction and PREPLAY_BIN, an A/B of two preplay builds judged
# against the same recording, real runs and noise floor (docs/accuracy.md).
# Must never leave a server running: every phase stops what it started
# (trap on exit).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ "${1:-}" = --app ] && [ -f "$here/${2:-}.sh" ] && [ "${2:-}" != app-common ] && [ "${2:-}" != app-bench ] ||
  { echo "app-bench: first option --app NAME (wordpress, redmine)" >&2; exit 2; }
app=$2
shift 2
src=${PREPLAY_SOURCE_DIR:-$(cd "$here/../../../.." && pwd)}
bin=${PREPLAY_BIN:-$src/build/release/preplay}
[ -x "$bin" ] || { echo "app-bench: no preplay binary (set PREPLAY_BIN)" >&2; exit 2; }
out="" rate=4 duration=30 runs=3 seed=7 intervals=3 type="" redo=0 db=mariadb ptag="" knee=0 knee_secs=10
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --real-runs) runs=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --intervals) intervals=$2; shift 2 ;;
    --type) type=$2; shift 2 ;;
    --redo-prediction) redo=1; shift ;;
    --redo-recording) redo=2; shift ;;
    --db) db=$2; shift 2 ;;
    --pred-tag) ptag=$2; shift 2 ;;
    --find-knee) knee=1; shift ;;
    --knee-seconds) knee_secs=$2; shift 2 ;;
    -h | --help) sed -n '2,60p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "app-bench: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case $db in
  mariadb | postgresql) export APP_DB=$db ;;
  *) echo "app-bench: --db mariadb|postgresql, not '$db'" >&2; exit 2 ;;
esac
. "$here/$app.sh"
# shellcheck source=tests/common/type_client.sh
. "$src/tests/common/type_client.sh" # type_client_outside (--type)
# shellcheck source=tests/bench/accuracy/floor_table.sh
. "$here/../floor_table.sh" # floor_table
P=$APP_PREFIX
[[ " ${APP_DBS:-mariadb} " == *" $db "* ]] || { echo "app-bench: $app does not run on $db (only ${APP_DBS:-mariadb})" >&2; exit 2; }
case $ptag in
  *[!A-Za-z0-9_.-]* | .*) echo "app-bench: --pred-tag '$ptag': letters, digits, '_', '-', '.' only" >&2; exit 2 ;;
esac
[ -n "$out" ] || { echo "app-bench: --out DIR is required (the installed base is kept there)" >&2; exit 2; }
[ "$runs" -ge 3 ] || { echo "app-bench: --real-runs must be at least 3 (the noise floor)" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "app-bench: needs root (packages, MariaDB as root)" >&2; exit 1; }
mkdir -p "$out" && out=$(cd "$out" && pwd) || exit 1
log() { echo "app-bench $app: $*" >&2; }
fail() { echo "app-bench $app: FAIL: $*" >&2; exit 1; }
active="" epid=""
trap '[ -n "$epid" ] && { kill -TERM "$epid"; wait "$epid"; }; [ -n "$active" ] && "${P}_stop" "$active"; type_client_cleanup' EXIT
[ $knee -eq 0 ] || [ -n "$type" ] || { echo "app-bench: --find-knee needs --type T" >&2; exit 2; }
[[ $knee_secs =~ ^[0-9]+$ ]] && [ "$knee_secs" -ge 3 ] || { echo "app-bench: --knee-seconds: an integer >= 3" >&2; exit 2; }
tag=${type:-host}-r${rate}-d${duration}-s${seed}
[ $knee -eq 1 ] && tag=knee-$type
[ "$db" = mariadb ] || tag=$tag-$db
w=$out/$tag
mkdir -p "$w"
pt=${ptag:+-$ptag} # suffix of this prediction's files (--pred-tag)

"${P}_setup" "$out" || fail "setup"

# one_real NAME [PREFIX...]: fresh DB, app (under PREFIX), load -> $w/NAME.csv
# (the load client at real-time priority: client_prio, tests/common/client_prio.sh)
one_real() {
  local name=$1
  shift
  active=$w/$name
  app_one_run "$out" "$w/$name" "$rate" "$duration" "$seed" "$w/$name.csv" "$@" || fail "$name: starting $app"
  active=""
  rm -rf "$w/$name/db"
}

# on_type NAME MODE CLIENT...: NAME.sh serve MODE inside tools/emulate $type,
# then CLIENT on the host with ADDR and PORT in its words replaced
on_type() {
  local name=$1 mode=$2 d=$w/$1 port addr i a cmd=()
  shift 2
  port=$(python3 "$src/tests/common/free_port.py")
  app_fresh "$out" "$d"
  timeout 900 "$src/tools/emulate" --data-dir "$w" "$type" -- "$here/$app.sh" serve "$d" "$port" \
    "$mode" "$bin" "$w/plan$pt" >"$w/$name.emu.log" 2>&1 &
  epid=$!
  for ((i = 0; i < 3000; i++)); do # Rails boots in minutes on small
    [ -s "$d/addr" ] && break
    kill -0 "$epid" 2>/dev/null || break
    sleep 0.1
  done
  [ -s "$d/addr" ] || { cat "$w/$name.emu.log" >&2; fail "$name: nothing listening inside $type"; }
  addr=$(cat "$d/addr")
  [ "$mode" = real ] && "${P}_warmup" "$port" "$addr"
  for a in "$@"; do a=${a//ADDR/$addr}; cmd+=("${a//PORT/$port}"); done
  cat /proc/loadavg >"$w/$name.loadavg"
  # the CPU the type's processes used during the load, in $w/$name.cpu
  # (ns; none when the host has no cpuacct: type_cpu_used_ns)
  local inside cpu0 cpu1
  inside=$(cat "$d/inside.pid")
  rm -f "$w/$name.cpu"
  cpu0=$(type_cpu_used_ns "$inside") || cpu0=""
  # the client off the type's CPUs too (type_client_outside): merely
  # outside its cgroup, it may run on them (docs/accuracy.md, stop 34)
  type_client_outside "$inside" client_prio "${cmd[@]}" 2>"$w/$name.load.log"
  cat /proc/loadavg >>"$w/$name.loadavg"
  if [ -n "$cpu0" ] && cpu1=$(type_cpu_used_ns "$inside"); then
    echo $((cpu1 - cpu0)) >"$w/$name.cpu"
  fi
  touch "$d/stop"
  wait "$epid" || log "$name: tools/emulate exited $? (see $w/$name.emu.log)"
  epid=""
  cat "$w/$name.load.log" >&2
  rm -rf "$d/db" "$d/files"
}

# knee_steps ADDR PORT: the load at each of KNEE_RATES for knee_secs until
# one is past the knee (knee.py: see the usage); knee.py's table in
# $w/knee.txt, the knee's rate in $w/knee.rate
knee_steps() {
  local addr=$1 port=$2 r k=0 steps=() st
  for r in ${KNEE_RATES:-1 1.5 2 3 4 6 8 12 16 24 32 48 64 96 128 192 256}; do
    k=$((k + 1))
    "${P}_load" "$addr" "$port" "$r" "$knee_secs" "$((seed + k))" "$w/step-$r.csv" || return 1
    steps+=("$r=$w/step-$r.csv")
    python3 "$here/../knee.py" "${steps[@]}" >"$w/knee.txt"
    st=$?
    log "knee on $type: $(tail -2 "$w/knee.txt" | head -1)"
    [ $st -eq 3 ] && continue
    [ $st -eq 0 ] && sed -n 's/^knee //p' "$w/knee.txt" >"$w/knee.rate"
    return $st
  done
  log "knee on $type: not reached at ${r}/s"
  return 1
}

if [ $redo -eq 2 ]; then
  for ((k = 1; k <= runs; k++)); do [ -s "$w/real$k.csv" ] || fail "--redo-recording: no $w/real$k.csv"; done
fi
if [ $knee -eq 1 ]; then
  rm -f "$w/knee.rate"
  on_type real real knee_steps ADDR PORT
  [ -s "$w/knee.rate" ] || fail "knee on $type: not found (see $w/knee.txt, $w/real.load.log)"
  echo "knee $(cat "$w/knee.rate")"
  exit 0
fi
if [ $redo -ne 1 ]; then
  log "record at $rate/s for $duration s"
  rm -rf "$w/trace"
  # shellcheck disable=SC2046 # app_db_record_flags: two words
  one_real rec "$bin" record -q --off -o "$w/trace" -c frontend $(app_db_record_flags) "${APP_LABELS[@]}" --
else # --redo-prediction: this tag's recording and real runs, kept from before
  [ -d "$w/trace" ] || fail "--redo-prediction: no $w/trace"
  for ((k = 1; k <= runs; k++)); do [ -s "$w/real$k.csv" ] || fail "--redo-prediction: no $w/real$k.csv"; done
  log "re-analyzing the kept recording, new prediction against the kept real runs"
fi
[ $redo -eq 2 ] && log "new recording, new prediction against the kept real runs"
"$bin" analyze "$w/trace" -o "$w/plan$pt" >"$w/analyze$pt.log" 2>&1 || { cat "$w/analyze$pt.log" >&2; fail "analyze"; }
for ((k = 1; k <= runs && redo == 0; k++)); do
  log "real run $k of $runs${type:+ on $type}"
  if [ -n "$type" ]; then
    on_type "real$k" real "${P}_load" ADDR PORT "$rate" "$duration" "$seed" "$w/real$k.csv"
  else
    one_real "real$k"
  fi
done
if [ -n "$type" ]; then
  log "preplay replay on $type, preplay drive on the host"
  on_type "pred$pt" replay "$bin" drive "$w/plan$pt" --target ADDR:PORT --token 0123456789abcdef -o "$w/pred$pt.json"
  [ -s "$w/pred$pt.json" ] || fail "pred$pt: preplay drive wrote no results"
else
  log "preplay run"
  app_fresh "$out" "$w/pred$pt"
  active=$w/pred$pt
  app_db_start "$w/pred$pt" || fail "pred$pt: database"
  "$bin" run "$w/plan$pt" --max-intervals "$intervals" \
    --db "$("${P}_db_url" "$w/pred$pt")" \
    -o "$w/pred$pt.json" >"$w/pred$pt.log" 2>&1 || { tail -20 "$w/pred$pt.log" >&2; fail "preplay run"; }
  "${P}_stop" "$w/pred$pt"
  active=""
fi

all=()
for ((k = 1; k <= runs; k++)); do all+=("$w/real$k.csv"); done
floor_table "$bin" "$w" "${type:-host}" "$rate" "$pt" \
  "$app ($db) on ${type:-host} at $rate/s, $duration s: prediction vs $runs real runs pooled (floor: largest error of one real run vs the others)" \
  "$w/pred$pt.json" "${all[@]}" || fail "the tables"
# CPU used inside the type a request (the type's cpuacct over each load
# run: the app server and MariaDB, or the replayer and MariaDB): the
# share of a miss that is CPU the replay spends or leaves out
if [ -n "$type" ]; then
  python3 - "$w" "$pt" "$runs" >>"$w/table$pt.md" <<'PY2' || fail "CPU per request"
import csv, json, os, statistics, sys
w, pt, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
def used(name, requests):
    try:
        with open(os.path.join(w, name + ".cpu")) as f:
            ns = int(f.read())
    except (OSError, ValueError):
        return None
    return ns / 1e6 / requests if requests > 0 else None
real = []
for k in range(1, runs + 1):
    with open(os.path.join(w, "real%d.csv" % k), newline="") as f:
        real.append(used("real%d" % k, sum(1 for _ in csv.DictReader(f))))
with open(os.path.join(w, "pred%s.json" % pt)) as f:
    pred = used("pred" + pt, int(json.load(f).get("requests", 0)))
if pred is None or None in real:
    print("\nCPU used inside the type: not measured (no cpuacct group, tools/emulate)")
else:
    mid = statistics.median(real)
    print("\nCPU used inside the type a request (its cpuacct over the load): real runs %s ms; "
          "prediction %.1f ms, %.2fx the real runs' median"
          % (", ".join("%.1f" % r for r in real), pred, pred / mid))
PY2
fi
cat "$w/floor.md" "$w/table$pt.md"
for f in "$w"/*.loadavg; do # the host's 1/5/15-min load average before/after each load
  echo "load average $(basename "$f" .loadavg): $(awk '{ printf "%s%s %s %s", (NR > 1 ? " -> " : ""), $1, $2, $3 }' "$f")"
done | tee -a "$w/loadavg.txt" >&2
log "table: $w/table$pt.md"
