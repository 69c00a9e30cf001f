#!/usr/bin/env bash
# tests/bench/accuracy/matrix.sh - issue 21's whole accuracy matrix in one
# command: for each application (WordPress, Redmine: apps/app-bench.sh) and
# each emulated type, the type's knee (app-bench.sh --find-knee), then
# three load levels up to it (percentages of the knee's rate), each a full
# app-bench.sh run on that type: recording unconstrained, >= 3 real runs on
# the type, the prediction on the type, the clients on the host's CPUs the
# type does not have. Then one table of every (app, type, level, label)
# row with its errors, floors and the goal's verdict (compare.py's), and a
# count of the rows that missed. Needs root; hours for the whole matrix.
# Must never leave a server or a type running (app-bench.sh stops what it
# starts) and never judge a row it did not measure: a run that fails is a
# FAILED line in the table, and the script exits 1.
#
# usage: matrix.sh --out DIR [--apps "wordpress redmine"] [--types "small medium large"]
#                  [--levels "30 60 90"] [--duration S] [--real-runs N] [--seed N]
#                  [--knee-seconds S]
#   --levels     percentages of each type's knee rate (default 30 60 90)
#   --duration   seconds of load per run (default 30); --real-runs (default 3)
# Results: DIR/APP/... (app-bench.sh's directories, kept across runs: the
# installed bases are reused), DIR/matrix.md (the table), DIR/matrix.log.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
apps="wordpress redmine" types="small medium large" levels="30 60 90" duration=30 runs=3 seed=7
knee_secs=10 out=""
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
    -h | --help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "matrix: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "$out" ] || { echo "matrix: --out DIR is required" >&2; exit 2; }
for l in $levels; do
  [[ $l =~ ^[0-9]+$ ]] && [ "$l" -ge 1 ] && [ "$l" -le 100 ] ||
    { echo "matrix: --levels: percentages 1..100 of the knee, not '$l'" >&2; exit 2; }
done
for a in $apps; do
  case $a in wordpress | redmine) ;; *) echo "matrix: --apps: wordpress, redmine, not '$a'" >&2; exit 2 ;; esac
done
mkdir -p "$out" && out=$(cd "$out" && pwd) || exit 1
log() { echo "matrix: $*" | tee -a "$out/matrix.log" >&2; }
bench=$here/apps/app-bench.sh
cells=() failed=0
for app in $apps; do
  for type in $types; do
    log "$app on $type: finding the knee ($(cut -d' ' -f1-3 /proc/loadavg))"
    k=$("$bench" --app "$app" --out "$out/$app" --type "$type" --find-knee --knee-seconds "$knee_secs" \
      --seed "$seed" 2>>"$out/matrix.log" | sed -n 's/^knee //p')
    if [ -z "$k" ]; then
      log "$app on $type: FAILED finding the knee (see $out/matrix.log)"
      cells+=("$app $type - - FAILED")
      failed=1
      continue
    fi
    log "$app on $type: knee $k/s"
    for l in $levels; do
      rate=$(awk -v k="$k" -v l="$l" 'BEGIN { r = k * l / 100; printf "%g", r < 0.5 ? 0.5 : int(r * 10 + 0.5) / 10 }')
      log "$app on $type at $l% of the knee: $rate/s ($(cut -d' ' -f1-3 /proc/loadavg))"
      if "$bench" --app "$app" --out "$out/$app" --type "$type" --rate "$rate" --duration "$duration" \
        --real-runs "$runs" --seed "$seed" >>"$out/matrix.log" 2>&1; then
        cells+=("$app $type $l $rate $out/$app/$type-r$rate-d$duration-s$seed/compare.json")
      else
        log "$app on $type at $rate/s: FAILED (see $out/matrix.log)"
        cells+=("$app $type $l $rate FAILED")
        failed=1
      fi
    done
  done
done
python3 - "$out/matrix.md" "${cells[@]}" <<'PY'
import json, sys
out, cells = sys.argv[1], sys.argv[2:]
lines = ["| app | type | level (% of knee) | rate /s | label | p50 err (floor) | p95 err (floor) | p | verdict |",
         "|---|---|---|---|---|---|---|---|---|"]
rows = missed = 0
pc = lambda v: "-" if v is None else "%.1f%%" % (100 * v)
for c in cells:
    app, typ, lvl, rate, where = c.split(" ", 4)
    if where == "FAILED":
        lines.append("| %s | %s | %s | %s | - | - | - | - | FAILED |" % (app, typ, lvl, rate))
        continue
    for r in json.load(open(where))["rows"]:
        rows += 1
        missed += r["verdict"] != "ok"
        fl = lambda q: pc(r.get("floor_" + q))
        lines.append("| %s | %s | %s | %s | %s | %s (%s) | %s (%s) | %.3f | %s |" % (
            app, typ, lvl, rate, r["label"], pc(r["median_err"]), fl("p50"), pc(r["p95_err"]), fl("p95"),
            r["p"], r["verdict"]))
lines.append("")
lines.append("%d rows, %d missed the goal (median within max(10%%, floor), p95 within max(20%%, floor))" % (rows, missed))
open(out, "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
log "table: $out/matrix.md"
exit $failed
