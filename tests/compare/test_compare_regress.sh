#!/usr/bin/env bash
# test_compare_regress.sh - `preplay compare` on regress files (`preplay
# regress`, formats/REGRESS.md) made from hand-made counters
# (tests/regress/make_counters.py: a target whose disk writes triple in
# its second half, and a normal one): the exact text of the "why" block
# (flagged counter, severity, direction, the baselines' range against the
# target's windows, the rule it broke) and of a file that flags nothing;
# beside a results file (both outputs); --json's "regress" (the target's
# values and the windows above the range checked against the file); the
# report's "Why is this type slower?" section with one time-series chart
# per flagged counter, its violating windows marked; a 1.0 file (no
# per-window values) read with a note instead of the chart; and refusals
# with their exact one-line messages. The real regress.json of a replay
# is compared in tests/regress/test_regress_e2e.sh.
set -euo pipefail
: "${PREPLAY_BIN:?}" "${PREPLAY_BUILD_DIR:?}" "${PREPLAY_SOURCE_DIR:?}"
work=$(mktemp -d /tmp/compare-regress-XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"
mk="$PREPLAY_SOURCE_DIR/tests/regress/make_counters.py"
fail() { echo "FAIL: $*" >&2; exit 1; }

. "$PREPLAY_SOURCE_DIR/tests/compare/expect_error.sh"

/usr/bin/python3 "$mk" base.json --seed 1
/usr/bin/python3 "$mk" base2.json --seed 2
/usr/bin/python3 "$mk" same.json --seed 3
/usr/bin/python3 "$mk" disk.json --seed 4 --shift disk_write_bytes_per_s=3
"$PREPLAY_BIN" regress base.json base2.json -- disk.json -o r.json --quiet
"$PREPLAY_BIN" regress base.json base2.json -- same.json -o n.json --quiet

"$PREPLAY_BIN" compare r.json n.json -o report.html >table 2>err || fail "compare r n: $(cat err)"
cat table
diff -u - table <<'TXT' || fail "why block: text differs"
Why is this type slower? r.json: target local (disk.json), 40 windows of 10 s, against local (base.json), local (base2.json); stacking, 3 levels; 300 rules, 20 of them changed on the target
severity  direction  windows     counter
    0.20  up         8 of 40     disk_write_bytes_per_s
          baselines: median 1.005e+06, range [7.79e+05, 1.232e+06], medium [8.541e+05, 1.156e+06]
          target:    median 1.804e+06; 20 of 40 windows above the range, 1 below
          rule broken: cpu_user=medium -> disk_write_bytes_per_s=medium: confidence 1.00 on the baselines, 0.38 on the target
=> the target differs from its baselines in 1 counter: disk_write_bytes_per_s (up)

Why is this type slower? n.json: target local (same.json), 40 windows of 10 s, against local (base.json), local (base2.json); stacking, 3 levels; 300 rules, 0 of them changed on the target
=> no counter flagged: the target's counters keep the company they keep on the baselines
TXT
[ "$(cat err)" = "compare: report written to report.html" ] || fail "stderr: $(cat err)"

# the report: the section, one chart (the flagged counter), its 8
# violating windows filled among the 40 marks, the bands, no chart for n.json
grep -q '<h1>Why is this type slower? preplay compare</h1>' report.html || fail "title"
grep -q '<h2 id="why">Why is this type slower?</h2>' report.html || fail "no why section"
[ "$(grep -c '<svg class="chart"' report.html)" -eq 1 ] || fail "want 1 chart"
grep -q '<title>disk_write_bytes_per_s (severity 0.20, up)</title>' report.html || fail "chart title"
[ "$(grep -c '<circle .*<title>window [0-9]* (from' report.html)" -eq 40 ] || fail "want 40 window marks"
[ "$(grep -c ', violates a rule</title>' report.html)" -eq 8 ] || fail "want 8 violating marks"
grep -q '<title>window 21 (from 210 s): 2.999e+06, violates a rule</title>' report.html || fail "window 21"
grep -q '<title>baselines&#39; range \[7.79e+05, 1.232e+06\]</title>' report.html || fail "range band"
grep -q '<title>usual level (medium) \[8.541e+05, 1.156e+06\]</title>' report.html || fail "medium band"
grep -q '<td>0.20</td><td>up</td><td>8 of 40</td><td>disk_write_bytes_per_s</td>' report.html || fail "table row"
grep -q '<p>No counter flagged: ' report.html || fail "n.json: no 'no counter flagged'"

# beside a results file: the instance-type verdict first, then the why block; --json
mkr="$PREPLAY_SOURCE_DIR/tests/compare/make_results.py"
/usr/bin/python3 "$mkr" small.json small 0.05 2.0 hand-built
"$PREPLAY_BIN" compare small.json r.json --slo 'p95<15ms' >mixed
grep -qx '=> no instance type meets p95 < 15 ms for every label' mixed || fail "mixed: verdict"
grep -q '^Why is this type slower? r.json: ' mixed || fail "mixed: why block"
"$PREPLAY_BIN" compare small.json r.json n.json --json >mixed.json
/usr/bin/python3 - mixed.json r.json <<'PY'
import json, sys
d, r = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert [i["name"] for i in d["instances"]] == ["small"], d["instances"]
w, n = d["regress"]
assert w["file"] == "r.json" and w["target"] == {"path": "disk.json", "instance": "local", "windows": 40}
assert w["method"] == "stacking" and w["discretization"] == "3level" and w["rules_changed"] == 20
(f,) = w["flagged"]
rf = r["flagged"][0]
assert f["counter"] == "disk_write_bytes_per_s" and f["direction"] == "up" and f["severity"] == 0.2
assert f["violating_windows"] == rf["violating_windows"]
lv = r["levels"]["disk_write_bytes_per_s"]
# the baselines' range and median are the pooled baseline windows' (regress.json 1.1)
pooled = []
for b in ("base.json", "base2.json"):
    c = json.load(open(b))["counters"]
    i = c["names"].index("disk_write_bytes_per_s")
    pooled += [w["values"][i] for w in c["windows"]]
import statistics
for k, want in (("min", min(pooled)), ("max", max(pooled)), ("median", statistics.median(pooled))):
    assert abs(lv[k] - want) <= 1e-8 * want, (k, lv[k], want)
t = json.load(open("disk.json"))["counters"]
ti = t["names"].index("disk_write_bytes_per_s")
assert all(abs(a - w["values"][ti]) <= 1e-8 * a for a, w in zip(r["flagged"][0]["target_values"], t["windows"]))
assert f["baseline"] == {k: lv[k] for k in ("min", "median", "max", "low", "high")}, f["baseline"]
vals = rf["target_values"]
assert f["target"]["values"] == vals and f["target"]["measured"] == 40
assert f["target"]["above"] == sum(v > lv["max"] for v in vals) == 20
assert f["target"]["below"] == sum(v < lv["min"] for v in vals) == 1
rule = f["rule"]
assert rule["consequent"] == {"counter": "disk_write_bytes_per_s", "level": "medium"}
assert rule["premise"] == [{"counter": "cpu_user", "level": "medium"}] and rule["target_confidence"] < 0.5
assert n["flagged"] == [] and n["rules_changed"] == 0
PY

# a 1.0 file (before target_values, min/median/max, instance): read, no chart
/usr/bin/python3 - r.json old.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
del d["version_minor"]
for f in d["flagged"]:
    del f["target_values"]
for lv in d["levels"].values():
    for k in ("min", "median", "max"):
        del lv[k]
for b in d["baselines"] + [d["target"]]:
    del b["instance"]
json.dump(d, open(sys.argv[2], "w"))
PY
"$PREPLAY_BIN" compare old.json -o old.html >old.txt 2>/dev/null
grep -qx 'Why is this type slower? old.json: target disk.json, 40 windows of 10 s, against base.json, base2.json; stacking, 3 levels; 300 rules, 20 of them changed on the target' old.txt \
  || fail "1.0 header: $(head -1 old.txt)"
grep -qx '          baselines: no range in this file (regress.json before 1.1, or never measured), medium \[8.541e+05, 1.156e+06\]' old.txt \
  || fail "1.0 baselines line: $(cat old.txt)"
grep -qx '          target:    no per-window values (regress.json before 1.1)' old.txt || fail "1.0 target line"
if grep -q '<svg class="chart"' old.html; then fail "a chart from a 1.0 file"; fi
grep -q 'disk_write_bytes_per_s: no per-window values in this file (regress.json before 1.1)' old.html \
  || fail "1.0 note"

# a run without --instance ("" in its results): null in regress.json, the path alone in compare
/usr/bin/python3 -c "
import json; d = json.load(open('disk.json')); d['instance'] = ''; json.dump(d, open('anon.json', 'w'))"
"$PREPLAY_BIN" regress base.json base2.json -- anon.json -o anon-r.json --quiet
/usr/bin/python3 -c "
import json; d = json.load(open('anon-r.json')); assert d['target']['instance'] is None, d['target']"
# (to a file first: under pipefail `compare | head -1` fails when head exits
# before compare's last write)
"$PREPLAY_BIN" compare anon-r.json >anon.txt
head -1 anon.txt | grep -q '^Why is this type slower? anon-r.json: target anon.json, 40 windows' \
  || fail "a target without instance: $(head -1 anon.txt)"

# refusals
/usr/bin/python3 - r.json bad.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["flagged"][0]["severity"] = 0.5
json.dump(d, open(sys.argv[2], "w"))
PY
expect_error 1 'compare: bad.json: flagged[0].severity: expected 8 violating of 40 target windows (0.2)' \
  small.json bad.json -o bad.html
[ ! -e bad.html ] || fail "a report from a refused regress file"
expect_error 2 'compare: --plan, --slo, --equivalent-p and --allow-failed apply to results files; only regress files were given' \
  r.json --slo 'p95<1s'
echo "compare regress: ok"
