#!/usr/bin/env bash
# test_compare_cli.sh - `preplay compare` on hand-made results files: the
# verdict table (recommended type, equivalence, a run cut short), --json
# keys and values, and bad input with the exact one-line messages and exit
# codes (missing file, wrong results version, runs of different
# recordings, a plan of another recording, bad SLO, not JSON); a refused
# comparison writes no report. What the verdict cannot vouch for, with
# exact messages: a failed replay (failed requests, DB errors, a label
# never replayed) is named before any number and not ranked unless
# --allow-failed, exit 3 when nothing could be ranked; labels below the
# stop rule's sample minimum and labels unlike the recording are named.
set -euo pipefail
: "${PREPLAY_BIN:?}" "${PREPLAY_BUILD_DIR:?}" "${PREPLAY_SOURCE_DIR:?}"
work=$(mktemp -d /tmp/compare-cli-XXXXXX)
trap 'rm -rf "$work"' EXIT
mk="$PREPLAY_SOURCE_DIR/tests/compare/make_results.py"
fail() { echo "FAIL: $*" >&2; exit 1; }

. "$PREPLAY_SOURCE_DIR/tests/compare/expect_error.sh"

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

# a failed replay: named before any number, not ranked, stated on the verdict line
/usr/bin/python3 "$mk" "$work/broken.json" broken 0.01 0.5 hand-built --seed 4 --labels 'GET /fast' \
  --failed 3 --db-error 'php:12:You have an error in your SQL syntax near x' \
  --db-error 'php:8:You have an error in your SQL syntax near x'
"$PREPLAY_BIN" compare "$work/broken.json" "$work/small.json" "$work/medium.json" \
  --slo 'p95<15ms' -o "$work/failed.html" >"$work/table" 2>"$work/err"
cat "$work/table"
want_problem="$work/broken.json: 20 DB queries failed (component php: 20 × 'You have an error in your SQL syntax nea…'), 3 requests failed, label 'POST /slow' never replayed successfully"
[ "$(sed -n 1p "$work/table")" = "Replays that failed (not ranked; --allow-failed ranks them):" ] \
  || fail "first line: $(sed -n 1p "$work/table")"
[ "$(sed -n 2p "$work/table")" = "$want_problem" ] || fail "problem line: $(sed -n 2p "$work/table")"
grep -q '^broken .* -  fails: POST /slow: no successful requests  NOT RANKED (replay failed)$' "$work/table" \
  || fail "broken line"
grep -qx '=> medium meets every SLO and is the cheapest at \$1.042 per million requests. Not ranked, the replay failed: broken (--allow-failed ranks them).' \
  "$work/table" || fail "verdict line with a failed replay"
grep -q 'id="trust"' "$work/failed.html" || fail "report lacks the first-screen box"
grep -q '<td>broken</td><td>0.01</td><td>48000</td><td>0.2083</td><td>met after 3 intervals</td><td>- (not ranked)</td>' \
  "$work/failed.html" || fail "report table: tier of a type not ranked"
grep -qF "<li>$want_problem</li>" <(sed "s/&#39;/'/g" "$work/failed.html") || fail "report box lacks the problem line"

"$PREPLAY_BIN" compare "$work/broken.json" "$work/small.json" --allow-failed >"$work/table"
grep -qx 'Replays that failed (ranked anyway, --allow-failed):' "$work/table" || fail "allow-failed header"
grep -qx '=> broken has no SLO to meet and is the cheapest at \$0.2083 per million requests. Ranked although the replay failed (--allow-failed): broken.' \
  "$work/table" || fail "verdict line with --allow-failed"

"$PREPLAY_BIN" compare "$work/broken.json" "$work/small.json" --json >"$work/json"
python3 - "$work/json" "$want_problem" "$work/broken.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
inst = {i["name"]: i for i in d["instances"]}
b = inst["broken"]
assert sys.argv[3] + ": " + ", ".join(b["problems"]) == sys.argv[2], b["problems"]
assert b["ranked"] is False and b["tier"] is None, b
assert b["ranked_reason"] == "the replay failed; --allow-failed ranks it", b["ranked_reason"]
assert b["failed"] == 3, b["failed"]
assert inst["small"]["ranked"] is True and inst["small"]["problems"] == [] and inst["small"]["ranked_reason"] is None
v = d["verdict"]
assert v["not_ranked"] == ["broken"] and v["allow_failed"] is False, v
assert v["recommended"] == "small" and v["tiers"] == [["small"]], v
assert v["caveats"] == "Not ranked, the replay failed: broken (--allow-failed ranks them).", v["caveats"]
assert v["thresholds"] == {"min_samples": 30, "resemble_p": 0.05}, v["thresholds"]
assert v["not_judged"] == [] and v["flagged_blocks"] == [], v
lab = inst["small"]["labels"]["GET /fast"]
assert lab["judged_by_stop_rule"] is True and lab["stop_rule_samples"] == 267, lab
assert lab["resembles_recording"] is None, lab
print("json problems ok")
PY

# nothing could be ranked: everything is printed and written, exit 3
rc=0
"$PREPLAY_BIN" compare "$work/broken.json" -o "$work/none.html" >"$work/table" 2>/dev/null || rc=$?
[ "$rc" -eq 3 ] || fail "no type ranked: exit $rc, want 3"
grep -qx '=> no instance type could be ranked: every replay failed. Not ranked, the replay failed: broken (--allow-failed ranks them).' \
  "$work/table" || fail "verdict line when nothing is ranked"
[ -s "$work/none.html" ] || fail "no report when nothing could be ranked"
"$PREPLAY_BIN" compare "$work/broken.json" --allow-failed >/dev/null || fail "--allow-failed alone: exit $?"

# labels the stop rule never judged: 20 samples over 3 intervals, 14 before the last
/usr/bin/python3 "$mk" "$work/thin.json" thin 0.1 1.0 hand-built --seed 5 --counts 400,20
"$PREPLAY_BIN" compare "$work/thin.json" "$work/small.json" >"$work/table"
grep -qx "=> small has no SLO to meet and is the cheapest at \\\$0.5208 per million requests. Not judged: thin 'POST /slow' (14 samples in the stop rule's last comparison, it judges 30 or more)." \
  "$work/table" || fail "verdict line with an unjudged label: $(tail -1 "$work/table")"

# statements recorded cut were replayed as waits: ranked, but said
/usr/bin/python3 "$mk" "$work/cut.json" cut 0.1 1.0 hand-built --db-cut 3
"$PREPLAY_BIN" compare "$work/cut.json" "$work/small.json" --json >"$work/json"
python3 - "$work/json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
inst = {i["name"]: i for i in d["instances"]}
assert inst["cut"]["ranked"] is True and inst["cut"]["problems"] == [], inst["cut"]
want = ("Approximated: cut replayed 3 DB statements as waits (recorded cut at "
        "--db-max-statement; record with a larger one to replay them).")
assert d["verdict"]["caveats"] == want, d["verdict"]["caveats"]
PY
/usr/bin/python3 "$mk" "$work/cutbad.json" cutbad 0.1 1.0 hand-built --db-cut -1
sed -i 's/"format"/"db_cut": -2, "format"/' "$work/cutbad.json"
expect_error 1 "compare: $work/cutbad.json: db_cut: expected an integer in [0, 1099511627776]" "$work/cutbad.json"

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
expect_error 2 "compare: needs at least one results, duet or regress FILE (see --help)" --slo 'p95<1s'
expect_error 2 "compare: --equivalent-p '2': expected a number in (0, 1]" "$work/small.json" --equivalent-p 2
if [ -x "$PREPLAY_BUILD_DIR/tests/replay/replay_make_plan" ]; then
  "$PREPLAY_BUILD_DIR/tests/replay/replay_make_plan" two-tier "$work/plan"
  expect_error 1 "compare: $work/other.json comes from recording other-recording, but plan $work/plan is recording hand-built" \
    "$work/other.json" --plan "$work/plan"
  # a replay unlike the recording (two-tier: 'GET /fast' recorded 33 times, 'POST /slow' 17, too
  # few to judge); the synthetic samples are far from the recorded times
  "$PREPLAY_BIN" compare "$work/medium.json" --plan "$work/plan" >"$work/table"
  grep -qx "=> medium has no SLO to meet and is the cheapest at \\\$1.042 per million requests. Not judged: medium 'GET /fast' (does not resemble the recording: p < 0.001 with 400 replayed and 33 recorded samples)." \
    "$work/table" || fail "verdict line with a label unlike the recording: $(tail -1 "$work/table")"
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
