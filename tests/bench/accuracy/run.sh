#!/usr/bin/env bash
# tests/bench/accuracy/run.sh - the accuracy benchmark of issue 5: how well
# `preplay run` predicts the sample application's response times on an
# emulated instance type, with and without dependency extraction.
#
#   1. record: the sample app (tests/apps/run-sample.sh) traced unconstrained
#      (the "on-premise" machine) under a fixed open-loop load (loadgen,
#      fixed seed);
#   2. truth: the real app, untraced, inside each emulated type
#      (tools/emulate TYPE) under the same load (same seed, rate, duration);
#   3. prediction: `preplay analyze`, then `preplay run` inside each type
#      (and `preplay run --no-deps`);
#   4. compare.py: per label, median and p95 relative error and
#      p(predicted, real) from `preplay stats similarity`.
# With --levels, the same at 30/50/70% of the app's maximum throughput on
# the small type (measured first with a closed loop without think time).
#
# Placement (the same for truth and prediction): inside the emulated type
# run the whole application - MariaDB, app tier, front end - and the client
# (loadgen for the truth, the `preplay run` controller + driver + both
# replayers for the prediction); the prediction's MariaDB is a fresh copy
# started and loaded by the sample app's own scripts (db-start.sh,
# db-load.sh). The CPU ratio is measured, never pinned: `record` scores the
# recording host and `run` the emulated type (cpu/cpu_ratio.h), as they
# would on two real machines (docs/accuracy.md).
#
# With --repeat-truth, the real app runs a second time on each type and a
# "truth vs truth" table (label suffixed "(2nd real run)") shows how much
# two runs of the real app disagree: the noise floor of every error above.
#
# usage: run.sh [--app sample|wordpress|redmine] [--short] [--types "small medium large"] [--rate R]
#               [--duration S] [--levels] [--out DIR] [--no-nodeps]
#               [--repeat-truth]
#   --short     (first option) the short benchmark, short.sh: the
#               prediction judged per label against >= 3 real runs in the
#               same run (what ctest runs; its options follow --short)
#   --out DIR   keep everything there (default: a temp dir, removed)
# Needs root (tools/emulate). Must never leave a server running: every
# phase runs under run-sample.sh or its own trap.
# With --app wordpress or --app redmine (first option), everything after
# it goes to apps/app-bench.sh: WordPress or Redmine from Debian
# (apps/wordpress.sh, apps/redmine.sh), recorded, replayed and compared
# against >= 3 real runs, unconstrained or on an emulated type (see there);
# Redmine on PostgreSQL instead of MariaDB with --db postgresql.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ "${1:-}" = --short ] && { shift; exec "$here/short.sh" "$@"; }
if [ "${1:-}" = --app ]; then
  case ${2:-} in
    sample) shift 2 ;;
    wordpress | redmine) exec "$here/apps/app-bench.sh" "$@" ;;
    *) echo "accuracy: --app sample|wordpress|redmine" >&2; exit 2 ;;
  esac
fi
src=${PREPLAY_SOURCE_DIR:-$(cd "$here/../../.." && pwd)}
bin=${PREPLAY_BIN:-}
if [ -z "$bin" ]; then
  for b in "${PREPLAY_BUILD_DIR:-}/preplay" "$src/build/release/preplay"; do
    [ -x "$b" ] && { bin=$b; break; }
  done
fi
[ -x "$bin" ] || { echo "accuracy: no preplay binary (set PREPLAY_BIN)" >&2; exit 2; }
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
export PREPLAY_BUILD_DIR=${PREPLAY_BUILD_DIR:-$(dirname "$bin")}
apps=$src/tests/apps
emulate=$src/tools/emulate

types="small medium large" rate=40 duration=20 levels=0 out="" nodeps=1 repeat=0
mix="cpu,file,log,db,fanout,static" seed=7 intervals=3
while [ $# -gt 0 ]; do
  case $1 in
    --types) types=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --levels) levels=1; shift ;;
    --out) out=$2; shift 2 ;;
    --no-nodeps) nodeps=0; shift ;;
    --repeat-truth) repeat=1; shift ;;
    -h | --help) sed -n '2,43p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "accuracy: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" -eq 0 ] || { echo "accuracy: needs root (tools/emulate)" >&2; exit 1; }

if [ -z "$out" ]; then
  work=$(mktemp -d /tmp/preplay-accuracy.XXXXXX) || exit 1
  trap 'rm -rf "$work"' EXIT
else
  mkdir -p "$out" && work=$(cd "$out" && pwd) || exit 1
fi
log() { echo "accuracy: $*" >&2; }
fail() { echo "accuracy: FAIL: $*" >&2; exit 1; }

# loadgen_cmd RATE CSV: the fixed load, as a shell command for run-sample.sh
loadgen_cmd() {
  echo "\$SAMPLE_BIN_DIR/loadgen --port \$SAMPLE_PORT --rate $1 --duration $duration --seed $seed --mix $mix --csv $2 --quiet"
}

# record NAME RATE: trace the app unconstrained, analyze -> $work/NAME/plan
record() {
  local d=$work/$1
  mkdir -p "$d"
  log "$1: recording at $2/s for $duration s"
  PREFIX="$bin record -o $d/trace/{tier} -c {tier} --db-socket mariadb.sock --" \
    timeout 300 "$apps/run-sample.sh" --dir "$d/app" --timeout 120 -- \
    sh -c "$(loadgen_cmd "$2" "$d/recorded.csv")" >"$d/record.log" 2>&1 ||
    { tail -20 "$d/record.log" >&2; fail "$1: recording the sample app failed"; }
  "$bin" analyze "$d/trace/frontend" "$d/trace/apptier" -o "$d/plan" >"$d/analyze.log" 2>&1 ||
    { cat "$d/analyze.log" >&2; fail "$1: analyze failed"; }
  rm -rf "$d/app/db"
}

# truth NAME TYPE RATE [SUFFIX]: the real app inside TYPE -> $work/NAME/truth-TYPE[SUFFIX].csv
truth() {
  local d=$work/$1 t=$2${4:-}
  local try
  for try in 1 2; do # a second try: MariaDB's first start is occasionally refused
    log "$1: real app on $2 at $3/s${4:+ (run $4)}"
    rm -rf "$d/truth-$t-app"
    timeout 300 "$emulate" --data-dir "$d" "$2" -- \
      "$apps/run-sample.sh" --dir "$d/truth-$t-app" --timeout 120 -- \
      sh -c "$(loadgen_cmd "$3" "$d/truth-$t.csv")" >"$d/truth-$t.log" 2>&1 &&
      { rm -rf "$d/truth-$t-app/db"; return 0; }
    tail -20 "$d/truth-$t.log" >&2
  done
  fail "$1: real app on $2 failed"
}

# predict NAME TYPE [--no-deps]: preplay run inside TYPE -> $work/NAME/pred-TYPE[-nodeps].json
predict() {
  local d=$work/$1 type=$2 flag=${3:-} suffix=""
  [ -n "$flag" ] && suffix=-nodeps
  log "$1: preplay run $flag on $type"
  local db=$d/db-$type$suffix
  rm -rf "$db"
  timeout 600 "$emulate" --data-dir "$d" "$type" -- bash -c '
      db=$1; shift
      "'"$apps"'/db-start.sh" "$db" >/dev/null || exit 1
      trap "\"'"$apps"'/db-stop.sh\" \"$db\" >/dev/null" EXIT
      "'"$apps"'/db-load.sh" "$db" >/dev/null || exit 1
      "$@" --db "mysql://sample@localhost/sample?socket=$db/mariadb.sock"' _ "$db" \
    "$bin" run "$d/plan" --instance "$type" \
    --max-intervals "$intervals" --dir "$d/files-$type" $flag -o "$d/pred-$type$suffix.json" \
    >"$d/pred-$type$suffix.log" 2>&1 ||
    { tail -20 "$d/pred-$type$suffix.log" >&2; fail "$1: preplay run $flag on $type failed"; }
  rm -rf "$db" "$d/files-$type"
}

# table NAME TYPE LEVEL [check args...]: rows of the accuracy table
table() {
  local d=$work/$1 type=$2 level=$3
  shift 3
  local nd=()
  [ $nodeps -eq 1 ] && nd=(--pred-nodeps "$d/pred-$type-nodeps.json")
  python3 "$here/compare.py" --preplay "$bin" --real "$d/truth-$type.csv" \
    --pred "$d/pred-$type.json" "${nd[@]}" --type "$type" --level "$level" \
    --json "$d/compare-$type.json" "$@"
}

# one_case NAME RATE TYPES LEVEL: record once, then truth + prediction per type
one_case() {
  local name=$1 r=$2 level=$4 t
  record "$name" "$r"
  for t in $3; do
    truth "$name" "$t" "$r"
    predict "$name" "$t"
    [ $nodeps -eq 1 ] && predict "$name" "$t" --no-deps
    [ $repeat -eq 1 ] && truth "$name" "$t" "$r" -2
  done
  return 0
}

status=0
header=--header
table_file=$work/table.md
: >"$table_file"
one_case base "$rate" "$types" "${rate}/s"
for t in $types; do
  check=(--check-median 0.10 --check-p95 0.15)
  table base "$t" "${rate}/s" $header "${check[@]}" | tee -a "$table_file" || status=1
  header=""
done
if [ $repeat -eq 1 ]; then
  for t in $types; do # the noise floor: the real app against itself
    python3 "$here/compare.py" --preplay "$bin" --real "$work/base/truth-$t.csv" \
      --pred "$work/base/truth-$t-2.csv" --type "$t" --level "${rate}/s (2nd real run)" |
      tee -a "$table_file"
  done
fi

if [ $levels -eq 1 ]; then
  # maximum throughput on small: closed loop, 16 users, no think time
  mkdir -p "$work/max"
  timeout 300 "$emulate" --data-dir "$work/max" small -- "$apps/run-sample.sh" --timeout 120 -- \
    sh -c "\$SAMPLE_BIN_DIR/loadgen --port \$SAMPLE_PORT --mode session --sessions 16 --think fixed:0 --duration $duration --seed $seed --mix $mix --quiet" \
    >"$work/max/max.log" 2>&1 || { tail "$work/max/max.log" >&2; fail "measuring the maximum throughput"; }
  max=$(sed -n 's/.* requests in \([0-9.]*\) s (\([0-9.]*\)\/s).*/\2/p' "$work/max/max.log" | tail -1)
  [ -n "$max" ] || fail "no throughput in $work/max/max.log"
  log "maximum throughput on small: $max requests/s"
  echo "maximum throughput on small: $max requests/s" >>"$work/levels.txt"
  for pct in 30 50 70; do
    r=$(awk -v m="$max" -v p="$pct" 'BEGIN { printf "%.1f", m * p / 100 }')
    one_case "level$pct" "$r" small "$pct% ($r/s)"
    table "level$pct" small "$pct% ($r/s)" | tee -a "$table_file"
  done
fi
log "table: $table_file"
exit $status
