#!/usr/bin/env bash
# test_knee.sh - tests/bench/accuracy/knee.py, the knee the accuracy matrix
# (matrix.sh, app-bench.sh --find-knee) takes its load levels from, on
# synthetic load steps whose response times are an M/M/1 queue's (service
# 10 ms: the median is 10 ms x ln 2 / (1 - utilization)): the knee is the
# last step before the median passes 4x the lowest, a step with failed
# requests is past it (under 95 % succeeded, or a failed share that rose
# by over a point: not one that stays where it was at low load), and the
# exit status says found (0), not reached
# (3) or nothing to take (1). Must never pass on a table it did not print.
set -euo pipefail
: "${PREPLAY_SOURCE_DIR:?}"
work=$(mktemp -d /tmp/knee-XXXXXX)
trap 'rm -rf "$work"' EXIT
knee=$PREPLAY_SOURCE_DIR/tests/bench/accuracy/knee.py
python3 - "$work" <<'PY'
import math, random, sys
w = sys.argv[1]
rng = random.Random(7)
def step(name, rate, failed=0):
    # 200 requests; response times exponential with mean S / (1 - rho)
    mean = 0.010 / (1 - rate / 100.0)
    with open(f"{w}/{name}.csv", "w") as f:
        f.write("label,start_ns,response_ns,status,request_id,session,think_ns\n")
        for i in range(200):
            status = 503 if i < failed else 200
            f.write(f"x,{i},{int(rng.expovariate(1 / mean) * 1e9)},{status},{i},0,0\n")
for rate in (10, 30, 50, 70, 80, 90):
    step(f"s{rate}", rate)
step("f50", 50, failed=20)
step("g50", 50, failed=8)
step("c10", 10, failed=3)
step("c30", 30, failed=3)
PY
run() { # expected status, then knee.py's arguments
  local want=$1 st=0
  shift
  python3 "$knee" "$@" >"$work/out" || st=$?
  cat "$work/out"
  [ "$st" = "$want" ] || { echo "knee.py $*: exit $st, want $want" >&2; exit 1; }
}
# utilization 10 .. 90 %: the median is 1.1x .. 10x the lowest; 4x is
# passed at 80 % (5x) at the latest, at 70 % (3.3x) maybe not
run 0 10="$work/s10.csv" 30="$work/s30.csv" 50="$work/s50.csv" 70="$work/s70.csv" \
  80="$work/s80.csv" 90="$work/s90.csv"
grep -Eq '^knee (50|70)$' "$work/out" || { echo "knee not at 50 or 70" >&2; exit 1; }
grep -q ' ok$' "$work/out" && grep -q 'past: p50' "$work/out" || { echo "no step table" >&2; exit 1; }
# below the knee all along: "knee" names the last, exit 3
run 3 10="$work/s10.csv" 30="$work/s30.csv"
grep -qx 'knee 30' "$work/out" || { echo "not reached: knee 30 expected" >&2; exit 1; }
# 10 % of the requests failed at 50/s: past the knee whatever the times
run 0 10="$work/s10.csv" 30="$work/s30.csv" 50="$work/f50.csv"
grep -qx 'knee 30' "$work/out" && grep -q 'past: 180 of 200 succeeded' "$work/out" ||
  { echo "failed requests: knee 30 expected" >&2; exit 1; }
# 4 % failed at 50/s, none before: inside the 95 % but a rise of 4
# points, so past the knee (the sample app's 240/s on `large`, 28 Nov)
run 0 10="$work/s10.csv" 30="$work/s30.csv" 50="$work/g50.csv"
grep -qx 'knee 30' "$work/out" && grep -q 'past: 4.0 % failed, 0.0 % at best before' "$work/out" ||
  { echo "a rising failed share: knee 30 expected" >&2; exit 1; }
# 1.5 % failed at every step (an app's own refusals): not a rise, so not
# past; 4 % after 1.5 % is a rise of 2.5 points, past
run 3 10="$work/c10.csv" 30="$work/c30.csv"
grep -qx 'knee 30' "$work/out" || { echo "a steady failed share: knee 30 expected" >&2; exit 1; }
run 0 10="$work/c10.csv" 30="$work/c30.csv" 50="$work/g50.csv"
grep -qx 'knee 30' "$work/out" && grep -q 'past: 4.0 % failed, 1.5 % at best before' "$work/out" ||
  { echo "a failed share rising from 1.5 %: knee 30 expected" >&2; exit 1; }
# the first step past it, a missing file, bad usage
run 1 50="$work/f50.csv"
run 1 10="$work/none.csv"
run 2 "$work/s10.csv"
echo PASS
