#!/usr/bin/env bash
# test_compare_duet.sh - `preplay compare` on duet files (`preplay duet`,
# formats/DUET.md), hand-made by make_duet.py: the exact text for an A/B
# file (slower, equal and faster labels, a skipped one, failed requests)
# with its A/A file as context and for the A/A file alone; duet files
# beside results files (both outputs, --json's "duet"); the report's
# "Versions (duet)" section; and refusals with their exact one-line
# messages: a damaged file (the key named), two A/A files of one
# recording, results-only options with duet files only. Real duet files
# from `preplay duet` are compared in tests/duet (test_duet_aa.sh,
# test_duet_ab.sh).
set -euo pipefail
: "${PREPLAY_BIN:?}" "${PREPLAY_BUILD_DIR:?}" "${PREPLAY_SOURCE_DIR:?}"
work=$(mktemp -d /tmp/compare-duet-XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"
mk="$PREPLAY_SOURCE_DIR/tests/compare/make_duet.py"
fail() { echo "FAIL: $*" >&2; exit 1; }

. "$PREPLAY_SOURCE_DIR/tests/compare/expect_error.sh"

/usr/bin/python3 "$mk" ab.json --overall 1.03:1.01:1.05 --label "GET /fast=1.06:1.04:1.08" \
  --label "POST /slow=1.0:0.98:1.02" --label "GET /s=0.9:0.85:0.95" \
  --skipped "GET /new=served by B only" --failed-b 2
/usr/bin/python3 "$mk" aa.json --aa --overall 1.0:0.99:1.012 --label "GET /fast=1.001:0.985:1.015" \
  --label "POST /slow=0.999:0.98:1.02"

"$PREPLAY_BIN" compare ab.json aa.json -o report.html >table 2>err || fail "compare ab aa: $(cat err)"
cat table
diff -u - table <<'TXT' || fail "A/B with A/A context: text differs"
Versions (duet): ab.json: B = b.plan against A = a.plan (recording hand-built), duet, 10 runs x 10 iterations, median per iteration, 99% intervals; A/A context: aa.json (duet)
FAILED requests: 0 in A, 2 in B (left out of the ratios)
label                        B/A  interval             width  verdict  ratios (runs x it.)  A/A width
(overall)                 1.0300  [1.0100, 1.0500]   4.00%  slower   100 (10 x 10)        2.20%
GET /fast                 1.0600  [1.0400, 1.0800]   4.00%  slower   100 (10 x 10)        3.00%
POST /slow                1.0000  [0.9800, 1.0200]   4.00%  equal    100 (10 x 10)        4.00%
GET /s                    0.9000  [0.8500, 0.9500]  10.00%  faster   100 (10 x 10)        -
GET /new                  skipped: served by B only
=> B is slower than A: B/A 1.0300, 99% interval [1.0100, 1.0500] above 1; A/A width 2.20% (labels: 1 slower, 1 equal, 1 faster)

Versions (duet): aa.json: A/A, a.plan against itself (recording hand-built), duet, 10 runs x 10 iterations, median per iteration, 99% intervals
label                        B/A  interval             width  verdict  ratios (runs x it.)
(overall)                 1.0000  [0.9900, 1.0120]   2.20%  equal    100 (10 x 10)
GET /fast                 1.0010  [0.9850, 1.0150]   3.00%  equal    100 (10 x 10)
POST /slow                0.9990  [0.9800, 1.0200]   4.00%  equal    100 (10 x 10)
=> A/A: equal, as A against itself should be: B/A 1.0000, 99% interval [0.9900, 1.0120] contains 1; its width 2.20% is what this machine cannot tell apart
TXT
[ "$(cat err)" = "compare: report written to report.html" ] || fail "stderr: $(cat err)"

# the report: the section, one chart per file, the A/A box only with context
grep -q '<h2 id="duet">Versions (duet)</h2>' report.html || fail "no duet section"
[ "$(grep -c '<svg class="chart"' report.html)" -eq 2 ] || fail "want 2 charts"
grep -q '<title>Version B against A per label, with 99% intervals</title>' report.html || fail "A/B chart"
grep -q '<title>A/A: A against itself per label, with 99% intervals</title>' report.html || fail "A/A chart"
[ "$(grep -c ' A/A \[' report.html)" -eq 3 ] || fail "A/A boxes: want overall, GET /fast, POST /slow"
grep -q '<title>GET /s B/A 0.9000 \[0.8500, 0.9500\] faster</title>' report.html || fail "GET /s mark"
if grep -q 'Which instance type' report.html; then fail "a duet-only report titled for types"; fi

# an A/B whose overall B is faster, and no A/A of its recording
/usr/bin/python3 "$mk" fast.json --recording other --overall 0.95:0.93:0.97 --label "GET /=0.95:0.93:0.97"
"$PREPLAY_BIN" compare fast.json aa.json >table2
grep -qx '=> B is faster than A: B/A 0.9500, 99% interval \[0.9300, 0.9700\] below 1 (labels: 0 slower, 0 equal, 1 faster)' table2 \
  || fail "faster verdict: $(cat table2)"
grep -qx 'GET /                     0.9500  \[0.9300, 0.9700\]   4.00%  faster   100 (10 x 10)        -' table2 \
  || fail "no A/A width without an A/A file of the recording"

# beside results files: the instance-type verdict first, then the duet block
mkr="$PREPLAY_SOURCE_DIR/tests/compare/make_results.py"
/usr/bin/python3 "$mkr" small.json small 0.05 2.0 hand-built
/usr/bin/python3 "$mkr" medium.json medium 0.10 1.0 hand-built --seed 2
"$PREPLAY_BIN" compare small.json ab.json medium.json --slo 'p95<15ms' >mixed
grep -qx '=> medium meets every SLO and is the cheapest at \$1.042 per million requests' mixed || fail "mixed: verdict"
grep -q '^Versions (duet): ab.json: ' mixed || fail "mixed: duet block"
"$PREPLAY_BIN" compare small.json ab.json aa.json --json >mixed.json
python3 - mixed.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert [i["name"] for i in d["instances"]] == ["small"], d["instances"]
ab, aa = d["duet"]
assert ab["file"] == "ab.json" and ab["aa"] is False and ab["aa_file"] == "aa.json"
assert ab["overall"]["verdict"] == "slower" and abs(ab["overall"]["aa_width"] - 0.022) < 1e-9
assert ab["labels"]["POST /slow"]["verdict"] == "equal" and ab["labels"]["GET /s"]["aa_width"] is None
assert ab["labels_skipped"] == {"GET /new": "served by B only"} and ab["failed_b"] == 2
assert aa["aa"] is True and aa["aa_file"] is None and aa["overall"]["verdict"] == "equal"
PY

# refusals
python3 - ab.json bad.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["labels"]["GET /fast"]["equal"] = True
json.dump(d, open(sys.argv[2], "w"))
PY
expect_error 1 'compare: bad.json: labels."GET /fast".equal: true, but the interval [1.04, 1.08] does not contain 1' \
  bad.json aa.json -o bad.html
[ ! -e bad.html ] || fail "a report from a refused duet file"
cp aa.json aa2.json
expect_error 1 'compare: aa.json and aa2.json are both A/A runs of recording hand-built: give one (it is the context of the A/B verdicts)' \
  ab.json aa.json aa2.json
expect_error 2 'compare: --plan, --slo, --equivalent-p and --allow-failed apply to results files; only duet files were given' \
  ab.json --slo 'p95<1s'
echo "compare duet: ok"
