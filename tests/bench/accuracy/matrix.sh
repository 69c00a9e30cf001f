#!/usr/bin/env bash
# tests/bench/accuracy/matrix.sh - issue 21's whole accuracy matrix in one
# command: for each application (the sample app: short.sh; WordPress,
# Redmine: apps/app-bench.sh) and each emulated type, the type's knee
# (knee.py over open-loop steps at rising rates: app-bench.sh --find-knee,
# or sample_knee below), then three load levels up to it (percentages of
# the knee's rate), each a whole run on that type: recording
# unconstrained, >= 3 real runs on the type, the prediction on the type,
# the load clients on the host's CPUs the type does not have. Every run
# is judged the same way (floor_table.sh: compare.py's floor, each real run
# against the others, and the goal's verdict per label), and one table
# gathers every (app, type, level, label) row and counts the rows that
# missed. Needs root; hours for the whole matrix.
# Must never leave a server or a type running (app-bench.sh stops what it
# starts) and never judge a row it did not measure: a run that fails is a
# FAILED line in the table, and the script exits 1.
#
# usage: matrix.sh --out DIR [--apps "sample wordpress redmine"] [--types "small medium large"]
#                  [--levels "30 60 90"] [--duration S] [--real-runs N] [--seed N]
#                  [--knee-seconds S] [--min-requests N]
#   --levels     percentages of each type's knee rate (default 30 60 90)
#   --duration   seconds of load per run (default 30); --real-runs (default 3)
#   --knee-seconds  each knee step's length (default: --duration)
#   --min-requests  a level's runs last at least N / rate seconds (default
#                150: ~30 requests of each of 5 labels a run, what a row
#                needs to be judged; Redmine's knee on `small` is 2/s, and
#                at 30 % of it a 40-s run holds 24 requests in all)
# KNEE_RATES (environment) overrides the knee steps' rates (app-bench.sh and
# sample_knee each have their own default).
# Results: DIR/APP/... (app-bench.sh's and short.sh's directories, kept across runs: the
# installed bases are reused), DIR/matrix.md (the table), DIR/matrix.log.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
apps="sample wordpress redmine" types="small medium large" levels="30 60 90" duration=30 runs=3 seed=7
knee_secs="" out="" min_requests=150
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --apps) apps=$2; shift 2 ;;
    --types) types=$2; shift 2 ;;
    --levels) levels=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --real-runs) runs=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --knee-seconds) knee_secs=$2; shift 2 ;;
    --min-requests) min_requests=$2; shift 2 ;;
    -h | --help) sed -n '2,31p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "matrix: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "$out" ] || { echo "matrix: --out DIR is required" >&2; exit 2; }
# each knee step as long as a run: with 10-s steps the sample app's knee on
# medium came out at 320/s, and at 90 % of it (288/s) its 20-s real runs
# timed out requests (113 of 5754)
knee_secs=${knee_secs:-$duration}
[[ $min_requests =~ ^[0-9]+$ ]] || { echo "matrix: --min-requests: a count, not '$min_requests'" >&2; exit 2; }
for l in $levels; do
  [[ $l =~ ^[0-9]+$ ]] && [ "$l" -ge 1 ] && [ "$l" -le 100 ] ||
    { echo "matrix: --levels: percentages 1..100 of the knee, not '$l'" >&2; exit 2; }
done
for a in $apps; do
  case $a in sample | wordpress | redmine) ;; *) echo "matrix: --apps: sample, wordpress, redmine, not '$a'" >&2; exit 2 ;; esac
done
mkdir -p "$out" && out=$(cd "$out" && pwd) || exit 1
log() { echo "matrix: $*" | tee -a "$out/matrix.log" >&2; }
bench=$here/apps/app-bench.sh
src=${PREPLAY_SOURCE_DIR:-$(cd "$here/../../.." && pwd)}
bin=${PREPLAY_BIN:-$src/build/release/preplay}
[ -x "$bin" ] || { echo "matrix: no preplay binary (set PREPLAY_BIN)" >&2; exit 2; }
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
export PREPLAY_BIN=$bin PREPLAY_BUILD_DIR=${PREPLAY_BUILD_DIR:-$(dirname "$bin")}
# shellcheck source=tests/common/type_client.sh
. "$src/tests/common/type_client.sh" # type_run, type_client_leave (sample_knee)
# shellcheck source=tests/bench/accuracy/floor_table.sh
. "$here/floor_table.sh"
sample_mix="cpu,file,log,db,fanout,static"

# sample_knee TYPE: the sample app's knee on TYPE (prints "knee RATE"):
# one start of the app inside the type (tests/apps/run-sample.sh), its
# loadgen leaving the type's CPUs, a 2 s warm-up, then knee.py's steps
# (10 s each by default) until one is past the knee
sample_knee() {
  local type=$1 d=$out/sample/knee-$1 r k=0 steps=""
  rm -rf "$d" && mkdir -p "$d"
  {
    echo ". '$src/tests/common/type_client.sh'"
    echo "type_client_leave \$\$ '$d/moves' || exit 1"
    echo "\$SAMPLE_BIN_DIR/loadgen --port \$SAMPLE_PORT --rate 20 --duration 2 --seed $((seed + 1000)) --mix $sample_mix --quiet || exit 1"
    for r in ${KNEE_RATES:-10 15 20 30 40 60 80 120 160 240 320 480 640 960}; do
      k=$((k + 1))
      steps+=" $r=$d/step-$r.csv"
      echo "\$SAMPLE_BIN_DIR/loadgen --port \$SAMPLE_PORT --rate $r --duration $knee_secs --seed $((seed + k)) --mix $sample_mix --quiet --csv $d/step-$r.csv >/dev/null 2>&1"
      echo "python3 '$here/knee.py'$steps >'$d/knee.txt'; st=\$?; [ \$st -eq 3 ] || exit \$st"
    done
    echo "exit 1"
  } >"$d/load.sh"
  type_run "$d/moves" 900 --data-dir "$d" "$type" -- "$src/tests/apps/run-sample.sh" --dir "$d/app" \
    --timeout 800 -- bash "$d/load.sh" >"$d/knee.log" 2>&1
  rm -rf "$d/app/db"
  cat "$d/knee.txt" >>"$out/matrix.log" 2>/dev/null
  grep '^knee [0-9]' "$d/knee.txt" 2>/dev/null
}

# sample_cell TYPE RATE SECONDS: the sample app at RATE on TYPE (short.sh, clients
# off the type's CPUs, --real-runs real runs), judged by floor_table;
# prints the compare.json's path. short.sh's own verdict (its wider
# bounds) is not the matrix's: only a run that left no results fails.
sample_cell() {
  local type=$1 rate=$2 secs=$3 d=$out/sample/$1-r$2-d$3-s$seed k reals=()
  "$here/short.sh" --out "$d" --type "$type" --rate "$rate" --duration "$secs" --real-runs "$runs" \
    --clients outside >"$d.log" 2>&1
  for ((k = 1; k <= runs; k++)); do
    [ -s "$d/real$k.csv" ] || { echo "matrix: sample on $type at $rate/s: no real run $k" >&2; return 1; }
    reals+=("$d/real$k.csv")
  done
  [ -s "$d/pred.json" ] || { echo "matrix: sample on $type at $rate/s: no prediction" >&2; return 1; }
  floor_table "$bin" "$d" "$type" "$rate" "" \
    "sample on $type at $rate/s, $secs s: prediction vs $runs real runs pooled" "$d/pred.json" "${reals[@]}" &&
    echo "$d/compare.json"
}

cells=() failed=0
for app in $apps; do
  for type in $types; do
    log "$app on $type: finding the knee ($(cut -d' ' -f1-3 /proc/loadavg))"
    if [ "$app" = sample ]; then
      mkdir -p "$out/sample"
      k=$(sample_knee "$type" | sed -n 's/^knee //p')
    else
      k=$("$bench" --app "$app" --out "$out/$app" --type "$type" --find-knee --knee-seconds "$knee_secs" \
        --seed "$seed" 2>>"$out/matrix.log" | sed -n 's/^knee //p')
    fi
    if [ -z "$k" ]; then
      log "$app on $type: FAILED finding the knee (see $out/matrix.log)"
      cells+=("$app $type - - FAILED")
      failed=1
      continue
    fi
    log "$app on $type: knee $k/s"
    for l in $levels; do
      rate=$(awk -v k="$k" -v l="$l" 'BEGIN { r = k * l / 100; printf "%g", r < 0.5 ? 0.5 : int(r * 10 + 0.5) / 10 }')
      # long enough for --min-requests requests a run
      secs=$(awk -v d="$duration" -v n="$min_requests" -v r="$rate" \
        'BEGIN { s = n / r; s = s == int(s) ? s : int(s) + 1; print (s > d ? s : d) }')
      log "$app on $type at $l% of the knee: $rate/s for $secs s ($(cut -d' ' -f1-3 /proc/loadavg))"
      if [ "$app" = sample ]; then
        c=$(sample_cell "$type" "$rate" "$secs" 2>>"$out/matrix.log")
      else
        c=$out/$app/$type-r$rate-d$secs-s$seed/compare.json
        "$bench" --app "$app" --out "$out/$app" --type "$type" --rate "$rate" --duration "$secs" \
          --real-runs "$runs" --seed "$seed" >>"$out/matrix.log" 2>&1 || c=""
      fi
      if [ -n "$c" ] && [ -s "$c" ]; then
        cells+=("$app $type $l $rate $c")
      else
        log "$app on $type at $rate/s: FAILED (see $out/matrix.log)"
        cells+=("$app $type $l $rate FAILED")
        failed=1
      fi
    done
  done
done
python3 - "$out/matrix.md" "${cells[@]}" <<'PY' || { log "could not write the table (above)"; exit 1; }
import json, sys
out, cells = sys.argv[1], sys.argv[2:]
lines = ["| app | type | level (% of knee) | rate /s | label | p50 err (floor) | p95 err (floor) | p | verdict |",
         "|---|---|---|---|---|---|---|---|---|"]
rows = missed = few = 0
pc = lambda v: "-" if v is None else "%.1f%%" % (100 * v)
for c in cells:
    app, typ, lvl, rate, where = c.split(" ", 4)
    if where == "FAILED":
        lines.append("| %s | %s | %s | %s | - | - | - | - | FAILED |" % (app, typ, lvl, rate))
        continue
    for r in json.load(open(where))["rows"]:
        rows += 1
        missed += r["verdict"].startswith("MISS")
        few += r["verdict"] == "few"
        fl = lambda q: pc(r.get("floor_" + q))
        lines.append("| %s | %s | %s | %s | %s | %s (%s) | %s (%s) | %.3f | %s |" % (
            app, typ, lvl, rate, r["label"], pc(r["median_err"]), fl("p50"), pc(r["p95_err"]), fl("p95"),
            r["p"], r["verdict"]))
lines.append("")
lines.append("%d rows: %d missed the goal (median within max(10%%, floor), p95 within max(20%%, floor)), "
             "%d not judged (fewer than 30 samples a side: few), %d met it" % (rows, missed, few, rows - missed - few))
open(out, "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
log "table: $out/matrix.md"
exit $failed
