#!/usr/bin/env bash
# test_compare_cli.sh - `preplay compare` on hand-made results files: the
# verdict table (recommended type, equivalence, a run cut short), --json
# keys and values, and bad input with the exact one-line messages and exit
# codes (missing file, wrong results version, runs of different
# recordings, a plan of another recording, bad SLO, not JSON); a refused
# comparison writes no report.
set -euo pipefail
: "${PREPLAY_BIN:?}" "${PREPLAY_BUILD_DIR:?}" "${PREPLAY_SOURCE_DIR:?}"
work=$(mktemp -d /tmp/compare-cli-XXXXXX)
trap 'rm -rf "$work"' EXIT
mk="$PREPLAY_SOURCE_DIR/tests/compare/make_results.py"
fail() { echo "FAIL: $*" >&2; exit 1; }

# expect_error EXIT_CODE MESSAGE ARGS...: stderr must be exactly MESSAGE
expect_error() {
  local want_rc=$1 want_msg=$2
  shift 2
  local rc=0
  "$PREPLAY_BIN" compare "$@" >"$work/out" 2>"$work/err" || rc=$?
  [ "$rc" -eq "$want_rc" ] || fail "compare $* exited $rc, want $want_rc ($(cat "$work/err"))"
  [ "$(cat "$work/err")" = "$want_msg" ] || fail "compare $*: stderr '$(cat "$work/err")', want '$want_msg'"
  [ ! -s "$work/out" ] || fail "compare $* printed a verdict on bad input"
}

/usr/bin/python3 "$mk" "$work/small.json" small 0.05 2.0 hand-built
/usr/bin/python3 "$mk" "$work/medium.json" medium 0.10 1.0 hand-built --seed 2
/usr/bin/python3 "$mk" "$work/large.json" large 0.20 0.97 hand-built --seed 3 --stopped 0

"$PREPLAY_BIN" compare "$work/small.json" "$work/medium.json" "$work/large.json" \
  --slo 'p95<15ms' >"$work/table" 2>"$work/err"
cat "$work/table"
# 800 requests over 3 intervals of 10 s = 96000 per hour; 0.10 $/h -> 1.042 $ per million
grep -qx '=> medium meets every SLO and is the cheapest at \$1.042 per million requests' "$work/table" \
  || fail "verdict line"
grep -q '^small .* fails: POST /slow: p95 up to [0-9.]* ms, SLO p95 < 15 ms$' "$work/table" || fail "small fails"
grep -q '^medium .* meets  (equivalent to large)  <= recommended$' "$work/table" || fail "medium line"
grep -q '^large .*CUT SHORT (3 int.) .* meets  (equivalent to medium)$' "$work/table" || fail "large line"
grep -q '^medium .* 96000 *1.042 ' "$work/table" || fail "cost columns"

"$PREPLAY_BIN" compare "$work/small.json" "$work/medium.json" "$work/large.json" \
  --slo 'p95<15ms' --slo 'median<=20ms' --json >"$work/json"
python3 - "$work/json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert {"instances", "labels", "verdict"} <= set(d), d.keys()
assert d["labels"] == ["GET /fast", "POST /slow"], d["labels"]
v = d["verdict"]
assert v["recommended"] == "medium", v
assert v["meeting"] == ["medium", "large"], v["meeting"]
assert [s["slo"] for s in v["slos"]] == ["p95 < 15 ms", "median <= 20 ms"], v["slos"]
assert v["tiers"][-1] == ["small"] and sorted(v["tiers"][0]) == ["large", "medium"], v["tiers"]
inst = {i["name"]: i for i in d["instances"]}
m = inst["medium"]
assert m["stop_rule"]["met"] is True and inst["large"]["stop_rule"]["met"] is False
assert abs(m["requests_per_hour"] - 96000) < 1e-6 and abs(m["cost_per_million"] / (0.1 / 96000 * 1e6) - 1) < 1e-6
for name, lab in m["labels"].items():
    for k in ("median", "p95", "p99"):
        lo, hi = lab[k + "_ci_s"]
        assert lo <= lab[k + "_s"] <= hi, (name, k, lab)
    assert lab["p_recording"] is None  # no --plan
# web blocks: cpu 0.5 * base, network = net 0.05 + call 0.1 (per block)
r = m["resource_s_per_block"]["web: POST /slow"]
assert abs(r["CPU"] - 0.004) < 1e-12 and abs(r["network"] - 0.0012) < 1e-12, r
assert abs(r["DB"] - 0.0016) < 1e-12 and abs(r["file"] - 0.0008) < 1e-12, r
print("json ok")
PY

# bad input: exact messages, nothing written
/usr/bin/python3 "$mk" "$work/v3.json" v3 0.1 1.0 hand-built --version 3
/usr/bin/python3 "$mk" "$work/v1.json" v1 0.1 1.0 hand-built --version 1
/usr/bin/python3 "$mk" "$work/other.json" other 0.1 1.0 other-recording
printf '{"format": "preplay-results", "version": 2,' >"$work/trunc.json"
expect_error 1 "compare: $work/missing.json: cannot open (No such file or directory)" \
  "$work/small.json" "$work/missing.json" -o "$work/r.html"
expect_error 1 "compare: $work/v3.json: results version 3 is not supported (this preplay reads 2)" \
  "$work/v3.json" -o "$work/r.html"
expect_error 1 "compare: $work/v1.json: results version 1 is not supported (this preplay reads 2): its response_s counts from the first byte sent, not from the scheduled arrival; replay again (or add late_s to every response_s)" \
  "$work/v1.json" -o "$work/r.html"
expect_error 1 "compare: $work/small.json and $work/other.json come from different recordings (hand-built vs other-recording): compare runs of one plan" \
  "$work/small.json" "$work/other.json" -o "$work/r.html"
expect_error 1 "compare: $work/small.json and $work/small.json both name instance 'small' (give each run its own --instance)" \
  "$work/small.json" "$work/small.json"
expect_error 1 "compare: $work/trunc.json: line 1 column 43: not valid JSON (string or '}' expected near end of file)" \
  "$work/trunc.json"
expect_error 2 "compare: --slo: SLO 'p95<200': missing unit after 200 (use us, ms or s)" \
  "$work/small.json" --slo 'p95<200'
expect_error 2 "compare: --slo-label 'GET /nope': no results have this label" \
  "$work/small.json" --slo 'p95<1s' --slo-label 'GET /nope'
expect_error 2 "compare: needs at least one RESULTS file (see --help)" --slo 'p95<1s'
expect_error 2 "compare: --equivalent-p '2': expected a number in (0, 1]" "$work/small.json" --equivalent-p 2
if [ -x "$PREPLAY_BUILD_DIR/tests/replay/replay_make_plan" ]; then
  "$PREPLAY_BUILD_DIR/tests/replay/replay_make_plan" two-tier "$work/plan"
  expect_error 1 "compare: $work/other.json comes from recording other-recording, but plan $work/plan is recording hand-built" \
    "$work/other.json" --plan "$work/plan"
  printf 'not a plan' >"$work/bad.plan"
  rc=0
  "$PREPLAY_BIN" compare "$work/small.json" --plan "$work/bad.plan" 2>"$work/err" >/dev/null || rc=$?
  [ "$rc" -eq 1 ] && grep -q "^compare: --plan: .*bad.plan" "$work/err" || fail "bad plan: $(cat "$work/err")"
else
  fail "replay_make_plan not built (tests/replay): cannot check --plan"
fi
[ ! -e "$work/r.html" ] || fail "a refused comparison wrote a report"
ls "$work" | grep -q 'r.html.tmp' && fail "temp report left behind"
echo "compare cli ok"
