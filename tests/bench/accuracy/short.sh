#!/usr/bin/env bash
# tests/bench/accuracy/short.sh - the short accuracy benchmark (run.sh
# --short; what ctest's replay_accuracy_short runs): the sample app recorded
# unconstrained, then on the emulated type in the same run
#   1. the real app, untraced, --real-runs times (>= 3) under the same load
#      (same seed) one after another in one start of the app, after a short
#      warm-up load: their spread is each label's noise floor;
#   2. the prediction: `preplay run` (CPU ratio measured) on a fresh MariaDB;
#   3. judge.py: per label, the prediction's median within max(25%, floor)
#      and p95 within max(50%, floor) of the real runs' pooled center; the
#      floor is the spread (max - min) of the runs' median (p95). Both
#      bounds are wider than the benchmark's 10%/20% goal on purpose, and
#      stated. The real runs share one start of the app, so their spread
#      leaves out start-to-start variation that the separately started
#      prediction carries: on a quiet machine (load 1.6) GET /cpu's seven
#      medians spanned 4.4% while the prediction landed +19.7% (CPU ratio
#      1.006), in the run before within the goal. For the p95:
#      a short label's p95 here is ~85 samples a run of CPU queueing on the
#      type's core; the full benchmark (run.sh) judges the 20% goal. A 2x
#      tail error fails.
# One run decides: no retry, no forgiving by overlapping intervals. Real
# runs the shared machine stalled (every label > 1.5x slower than in the
# typical run; seen: 2 .. 4 runs of 7 at 2 .. 6x) are set aside, which can
# only narrow the floor; with fewer than 5 left nothing is judged. A label
# with fewer than --min-count samples in a real run or the prediction, or
# whose error is beyond the bound and whose real runs are more than 50%
# (median) / 100% (p95) apart, is NOT JUDGED (never passed), and the
# benchmark fails when fewer than --min-judged labels (default 4 of the 6)
# were judged. Under ASan+UBSan (PREPLAY_SANITIZE=1)
# times say nothing: every label must be predicted with samples and no
# request may fail, nothing more (and 3 real runs of 3 s there, not 7 of 5).
#
# Why these numbers (measured on this 2-core VM at load average 5 .. 11,
# docs/accuracy.md): medium (one core) reaches ~340 requests/s on the sample
# app; 100/s (~30%) keeps it below the knee and gives ~85 samples per label
# in 5 s. The real runs go back to back in one start of the app (MariaDB
# alone takes 5 .. 13 s to start), so 7 of them cost 35 s: with 3, a
# prediction exactly as good as a real run would still land outside the
# real runs' spread on one of 12 checks in ~9 runs of 10 (their range is a
# poor estimate of the spread); with 7, in ~1 of 7 at worst (every check
# floor-bound, Gaussian), fewer where the goal's 10% / 20% is wider. The
# prediction pools 2 intervals (2 x 5 s). The floor is then run-to-run noise
# of the machine and the warm app, not of the app's start.
#
# Where the clients run (--clients): both clients - loadgen for the real
# runs, `preplay run`'s controller with its driver for the prediction -
# have the same mechanics (one thread sleeping in epoll, sending when due,
# 1 ns timer slack). `inside` (the default, what ctest runs) keeps them in
# the type with the app: every request's client and server share the
# type's CPU. `outside` moves them off the type's CPUs and cgroups
# (tests/common/type_client.sh), as users on other machines are and as
# docs/accuracy.md judges. Measured (stop 34, 4 runs): outside, the short
# labels' medians come within -5 .. +19 %, but the replay queues short
# requests behind long CPU work half as often as the real app (GET /log,
# /static: 4.5 % vs 9 % of requests over 1 ms), so their p95 came 59 .. 75 %
# low in runs where the real runs agreed with each other: the open miss of
# issue 21 that keeps `outside` out of ctest until it is fixed.
#
# usage: short.sh [--out DIR] [--type T] [--rate R] [--duration S]
#                 [--real-runs N] [--intervals N] [--min-count N] [--min-judged N]
#                 [--clients inside|outside]
# Needs root (tools/emulate). Must never leave a server running: every phase
# runs under run-sample.sh or its own trap.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=${PREPLAY_SOURCE_DIR:-$(cd "$here/../../.." && pwd)}
bin=${PREPLAY_BIN:-}
if [ -z "$bin" ]; then
  for b in "${PREPLAY_BUILD_DIR:-}/preplay" "$src/build/release/preplay"; do
    [ -x "$b" ] && { bin=$b; break; }
  done
fi
[ -x "$bin" ] || { echo "short: no preplay binary (set PREPLAY_BIN)" >&2; exit 2; }
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
export PREPLAY_BUILD_DIR=${PREPLAY_BUILD_DIR:-$(dirname "$bin")}
apps=$src/tests/apps

out="" type=medium rate=100 duration=5 runs=7 intervals=2 min_count=40 min_judged=4 clients=inside
mix="cpu,file,log,db,fanout,static" seed=7 runs_given=0 duration_given=0
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --type) type=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --duration) duration=$2 duration_given=1; shift 2 ;;
    --real-runs) runs=$2 runs_given=1; shift 2 ;;
    --intervals) intervals=$2; shift 2 ;;
    --min-count) min_count=$2; shift 2 ;;
    --min-judged) min_judged=$2; shift 2 ;;
    --clients) clients=$2; shift 2 ;;
    -h | --help) sed -n '2,63p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "short: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case $clients in inside | outside) ;; *) echo "short: --clients must be inside or outside, not '$clients'" >&2; exit 2 ;; esac
[ "$runs" -ge 3 ] 2>/dev/null || { echo "short: --real-runs must be at least 3 (the noise floor)" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "short: needs root (tools/emulate)" >&2; exit 1; }
sanitize=${PREPLAY_SANITIZE:-0}
# under ASan+UBSan the app is ~5x slower: a lighter load, and labels with
# >= 10 samples count as predicted (nothing is timed). The recording skips
# its CPU scores there (the ratio is then 1): ASan's kernels took the
# traced tiers past run-sample.sh's 60 s start limit at load average 9.
# The real runs there are 3, the least judge.py takes, none set aside as
# stalled: they run the untraced app (no preplay code) and only give the
# judge its labels and sample counts; the recording, analyze and the
# prediction, which ASan is there for, are the same as in the release test
# (7 real runs cost 35 s of the ASan test's 66). The load lasts 3 s there,
# not 5 (recording, each real run and so each interval of the prediction,
# one pass of the recording): at 40/s ~20 samples per label and real run,
# twice the 10 that count as predicted (the seed makes them the same each
# time), the same code paths, 12 s less.
record_opts=()
judge_runs=()
[ "$sanitize" = 1 ] && {
  rate=40 min_count=10 record_opts=(--no-cpu-scores)
  [ "$runs_given" = 1 ] || runs=3
  [ "$duration_given" = 1 ] || duration=3
  judge_runs=(--min-runs 3 --stall-factor 1e9)
}
if [ -z "$out" ]; then
  w=$(mktemp -d /tmp/preplay-accuracy-short.XXXXXX) || exit 1
  trap 'rm -rf "$w"' EXIT
else
  mkdir -p "$out" && w=$(cd "$out" && pwd) || exit 1
fi
log() { echo "short: $(date +%T) $*" >&2; }
fail() { echo "short: FAIL: $*" >&2; exit 1; }
loadgen() { # RATE DURATION SEED [CSV]: the open-loop load as a command for run-sample.sh
  echo "\$SAMPLE_BIN_DIR/loadgen --port \$SAMPLE_PORT --rate $1 --duration $2 --seed $3 --mix $mix --quiet${4:+ --csv $4}"
}
# the type's runs, the clients leaving it (type_run, type_client_leave,
# type_run_controller_leave)
. "$src/tests/common/type_client.sh"
t0=$(date +%s)

# 1. record unconstrained (the "on-premise" machine), analyze
log "recording at $rate/s for $duration s"
PREFIX="$bin record ${record_opts[*]} -o $w/trace/{tier} -c {tier} --db-socket mariadb.sock --" \
  timeout 300 "$apps/run-sample.sh" --dir "$w/rec-app" --timeout 120 -- \
  sh -c "$(loadgen "$rate" "$duration" "$seed" "$w/recorded.csv")" >"$w/record.log" 2>&1 ||
  { tail -20 "$w/record.log" >&2; fail "recording the sample app failed"; }
rm -rf "$w/rec-app/db"
"$bin" analyze "$w/trace/frontend" "$w/trace/apptier" -o "$w/plan" >"$w/analyze.log" 2>&1 ||
  { cat "$w/analyze.log" >&2; fail "analyze failed"; }

# 2. the real app on the type: a 2 s warm-up, then the runs back to back;
# with --clients outside the load client first leaves the type's CPU (as
# the prediction's driver does, below)
script="$(loadgen "$rate" 2 $((seed + 1000)))"
for ((k = 1; k <= runs; k++)); do
  script+=" && cat /proc/loadavg >$w/real$k.loadavg && $(loadgen "$rate" "$duration" "$seed" "$w/real$k.csv")"
done
moves=$w/moves
if [ "$clients" = outside ]; then
  printf '%s\n' ". '$src/tests/common/type_client.sh'" "type_client_leave \$\$ '$moves' || exit 1" \
    "sh -c '$script'" >"$w/real-load.sh"
else
  printf '%s\n' "sh -c '$script'" >"$w/real-load.sh"
fi
for try in 1 2; do # a second try only when the app did not start (no run began)
  log "real app on $type: $runs runs at $rate/s for $duration s (start $try)"
  rm -rf "$w/real-app" "$w"/real*.csv
  type_run "$moves" 300 --data-dir "$w" "$type" -- "$apps/run-sample.sh" --dir "$w/real-app" \
    --timeout 200 -- bash "$w/real-load.sh" >"$w/real.log" 2>&1 && break
  tail -20 "$w/real.log" >&2
  [ -e "$w/real1.loadavg" ] && fail "the real app failed during its runs"
  [ "$try" = 2 ] && fail "the real app on $type did not start"
done
rm -rf "$w/real-app/db"

# 3. the prediction on the type, fresh database
log "preplay run on $type ($intervals interval(s))"
db=$w/pred-db
cat /proc/loadavg >"$w/pred.loadavg"
# its replayers stay in the type; with --clients outside the controller
# with its driver leaves
type_run "$moves" 300 --data-dir "$w" "$type" -- bash -c '
    db=$1; apps=$2; moves=$3; clients=$4; shift 4
    . "$apps/../common/type_client.sh"
    "$apps/db-start.sh" "$db" >/dev/null || exit 1
    type_client_run_pid=""
    trap "kill -TERM \$type_client_run_pid 2>/dev/null; \"$apps/db-stop.sh\" \"$db\" >/dev/null" EXIT
    "$apps/db-load.sh" "$db" >/dev/null || exit 1
    set -- "$@" --db "mysql://sample@localhost/sample?socket=$db/mariadb.sock"
    if [ "$clients" = outside ]; then type_run_controller_leave "$moves" "$@"; else "$@"; fi' \
  _ "$db" "$apps" "$moves" "$clients" \
  "$bin" run "$w/plan" --instance "$type" --max-intervals "$intervals" --dir "$w/pred-files" \
  -o "$w/pred.json" >"$w/pred.log" 2>&1 ||
  { tail -20 "$w/pred.log" >&2; fail "preplay run on $type failed"; }
rm -rf "$db" "$w/pred-files"
grep '^run: CPU ratio' "$w/pred.log" >&2

# 4. judge
reals=()
for ((k = 1; k <= runs; k++)); do reals+=(--real "$w/real$k.csv"); done
loads=""
for ((k = 1; k <= runs; k++)); do loads+=" $k: $(cut -d' ' -f1 "$w/real$k.loadavg"),"; done
echo "load average (1 min) before real run$loads before the prediction: $(cut -d' ' -f1 "$w/pred.loadavg")"
status=0
if [ "$sanitize" = 1 ]; then
  # every label predicted, nothing failed; no timing verdict
  python3 "$here/judge.py" "${reals[@]}" --pred "$w/pred.json" --min-count "$min_count" \
    --median-tol 1e9 --p95-tol 1e9 --max-floor-median 1e9 --max-floor-p95 1e9 \
    --min-judged "$min_judged" "${judge_runs[@]}" --json "$w/judge.json" \
    --title "$type, $rate/s, $duration s (sanitizer build: completeness only)" || status=1
else
  python3 "$here/judge.py" "${reals[@]}" --pred "$w/pred.json" --min-count "$min_count" \
    --median-tol 0.25 --p95-tol 0.5 --min-judged "$min_judged" --json "$w/judge.json" \
    --title "$type, $rate/s, $duration s, $runs real runs vs the prediction" || status=1
fi
log "done in $(($(date +%s) - t0)) s: $([ $status = 0 ] && echo PASS || echo FAIL)"
exit $status
