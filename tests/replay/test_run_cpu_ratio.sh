#!/usr/bin/env bash
# test_run_cpu_ratio.sh - `preplay run` measures the CPU ratio against the
# plan's recorded scores (cpu/cpu_ratio.h): a plan recorded on this CPU
# (make_plan burst OUT CHAIN_S: this machine's identity and a burn-chain
# score) gets the burn loop's ratio, said on stderr and carried in the
# results with its interval; a plan whose score gives a ratio no machine
# has (a 1e-12 s chain: 5e10) is not believed - stderr says why, the run
# goes on at ratio 1 and the results carry 1 without an interval.
# Must never: depend on this machine's speed beyond a factor of 2.
set -euo pipefail
: "${PREPLAY_BIN:?}" "${PREPLAY_BUILD_DIR:?}"
work=$(mktemp -d /tmp/replay-cpu-ratio-XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
make_plan=$PREPLAY_BUILD_DIR/tests/replay/replay_make_plan
run_plan() { # run_plan NAME CHAIN_S: the burst plan with that chain score, one interval
  "$make_plan" burst "$work/$1.plan" "$2"
  "$PREPLAY_BIN" run "$work/$1.plan" --max-intervals 1 --p0 0.99999 -o "$work/$1.json" \
    2>"$work/$1.err" || fail "run $1: $(cat "$work/$1.err")"
}

# this machine's own chain score, as calibrate measures it
"$PREPLAY_BIN" calibrate --json --ms 40 > "$work/cal.json"
chain=$(python3 -c 'import json,sys; print([s["seconds"] for s in json.load(open(sys.argv[1]))["scores"] if s["name"] == "burn-chain"][0])' "$work/cal.json")

# 1. recorded on this CPU: the burn loop's ratio, about 1
run_plan same "$chain"
grep -q "^run: the same CPU as the recording host: the ratio is the replay's burn loop's" \
  "$work/same.err" || fail "no same-CPU line: $(cat "$work/same.err")"
python3 - "$work/same.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
r, (lo, hi) = d["cpu_ratio"], d["cpu_ratio_ci"]
assert 0.5 < r < 2.0 and lo <= r <= hi, (r, lo, hi)
print("same CPU ok:", r, [lo, hi])
PY

# 2. a score no machine has: not believed, ratio 1, said why
run_plan hostile 1e-12
grep -Eq "^run: the plan's CPU scores give a CPU ratio of [0-9.e+]+, outside \[0\.05, 20\]: damaged scores, not a machine: CPU ratio 1 \(use --cpu-ratio\)$" \
  "$work/hostile.err" || fail "no refusal line: $(cat "$work/hostile.err")"
python3 - "$work/hostile.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["cpu_ratio"] == 1 and "cpu_ratio_ci" not in d, (d["cpu_ratio"], d.get("cpu_ratio_ci"))
print("hostile scores ok")
PY
echo "run CPU ratio: ok"
