#!/usr/bin/env bash
# test_calibrate_cli.sh - `preplay calibrate`: JSON and text output carry a
# positive loops/ns, the steal seen, the kernel scores by name and the
# ratio against the scores `preplay record` stored, as `run` measures it
# (the burn loop's on this same CPU, the kernels' beside it, an interval
# around it); bad options give exact
# one-line messages and exit 2.
set -euo pipefail
: "${PREPLAY_BIN:?}"
dir=$(mktemp -d /tmp/preplay-calibrate-test.XXXXXX)
trap 'rm -rf "$dir"' EXIT

# `preplay record` stores the kernel scores in the trace header; one
# calibrate --json --against that trace checks both the calibration and the
# ratio of this machine to itself, about 1 (wide margins: other load). One
# kernel run fewer than a separate calibrate: each costs ~1.5 s, ~7 s under ASan.
"$PREPLAY_BIN" record -q -o "$dir/rec" -- true
trace=$(ls "$dir"/rec/*.trace | head -1)
"$PREPLAY_BIN" calibrate --json --ms 60 --cpu 0 --against "$trace" > "$dir/cal.json"
python3 - "$dir/cal.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
def check(cond, what):
    if not cond:
        sys.exit(f"calibrate --json: {what}: {j!r}")
check(j["cpu"] == 0, "ran on the core asked for")
check(0.01 < j["loops_per_ns"] < 100, "loops_per_ns plausible")
check(abs(j["ns_per_loop"] * j["loops_per_ns"] - 1) < 1e-6, "ns_per_loop is the inverse")
check(j["rounds"] == 6, "6 rounds")
# the rounds' loop counts come from the warm-up's rate and this VM's speed
# moves by 20% within seconds (an ASan run spent 47 ms): only a gross miss
# fails, as in test_cpuburn_math
check(j["cpu_ns"] >= 36_000_000, "spent about --ms 60 of CPU")
check(j["wall_ns"] >= j["cpu_ns"] * 0.95, "wall time covers CPU time")
check(j["steal_ns"] >= 0 and j["steal_mode"] in ("none", "excluded-by-kernel", "subtracted", "within-one-tick"),
      "steal reported")
check((j["steal_ns"] == 0) == (j["steal_mode"] == "none"), "steal mode matches steal seen")
check(j["clock_read_ns"] > 0, "clock read cost measured")
names = [s["name"] for s in j["scores"]]
check(names == ["zstd3-compress", "sha256", "qsort-int", "nbody-fp", "burn-chain"], "kernel names")
check(all(0.001 < s["seconds"] < 30 for s in j["scores"]), "kernel times plausible")
check(0.5 < j["cpu_ratio"] < 2.0, "cpu_ratio against our own recording about 1")
lo, hi = j["cpu_ratio_ci"]
check(lo <= j["cpu_ratio"] <= hi, "cpu_ratio inside its interval")
# recorded on this machine: the same CPU, so the run's ratio is the burn loop's
check(j["cpu_ratio_basis"] == "chain", "the same CPU's basis")
check(0.5 < j["kernels_ratio"] < 2.0, "the kernels' ratio beside it")
PY

"$PREPLAY_BIN" calibrate --ms 40 --no-kernels > "$dir/cal.txt"
grep -Eq '^cpu [0-9]+: [0-9.]+ loops/ns \([0-9.]+ ns/loop\), median of 6 rounds' "$dir/cal.txt" ||
    { echo "text output: no loops/ns line"; cat "$dir/cal.txt"; exit 1; }
grep -Eq '^calibration: .* steal seen [0-9.]+ ms \((none|excluded-by-kernel|subtracted)\)$' \
    "$dir/cal.txt" || { echo "text output: no steal line"; cat "$dir/cal.txt"; exit 1; }
if grep -q kernels "$dir/cal.txt"; then echo "--no-kernels still ran kernels"; exit 1; fi

"$PREPLAY_BIN" calibrate --help | grep -q '^usage: preplay calibrate'

expect_error() { # expect_error STATUS MESSAGE ARGS...
    local want_status=$1 want=$2
    shift 2
    local status=0
    "$PREPLAY_BIN" calibrate "$@" > "$dir/out" 2> "$dir/err" || status=$?
    if [[ $status != "$want_status" || "$(cat "$dir/err")" != "$want" || -s "$dir/out" ]]; then
        echo "calibrate $*: exit $status, stderr '$(cat "$dir/err")'; want $want_status, '$want'"
        exit 1
    fi
}
expect_error 2 "preplay calibrate: bad --cpu 'abc' (a core number)" --cpu abc
expect_error 2 "preplay calibrate: bad --cpu '-1' (a core number)" --cpu -1
expect_error 2 "preplay calibrate: --cpu 1000: not a core this process may run on" --cpu 1000
expect_error 2 "preplay calibrate: bad --ms '5' (20-60000)" --ms 5
expect_error 2 "preplay calibrate: unexpected argument 'extra'" extra
expect_error 2 "preplay calibrate: --against needs the kernels (drop --no-kernels)" \
    --no-kernels --against "$dir/x.trace"

"$PREPLAY_BIN" record -q --no-cpu-scores -o "$dir/rec2" -- true
trace2=$(ls "$dir"/rec2/*.trace | head -1)
expect_error 1 "preplay calibrate: $trace2: no CPU scores in the trace header (recorded with --no-cpu-scores?)" \
    --against "$trace2"
echo "calibrate CLI: ok"
