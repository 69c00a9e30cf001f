#!/usr/bin/env bash
# test_duet_ab.sh - `preplay duet A B` detects a slower B: B is the
# two-tier plan with every CPU op 50% longer (duet_plan_scale_cpu, through
# the plan codec: no special case in duet). Both labels carry enough
# samples (about 17 and 8 per 1 s iteration); on each and overall the
# interval must lie above 1 ("B slower", equal false) and the gms must be
# plausible for the blocks' CPU share. The 5% step of issue 25 is not
# reliably detectable in a test this short on this shared 2-core machine
# (A/A widths of 3-9% under load averages of 6-11): it is in the benchmark,
# tests/bench/duet/run.sh. 30% with 5 runs failed once under ASan at load
# 12: one run where A's core was the busier one pulled the percentile
# bootstrap's lower end below 1 (and 50% over 8 runs once more, at load
# 12 under ASan); 50% over 10 runs keeps the lower end above 1 with one
# such run (B/A 0.8) drawn up to five times in ten. Two such runs in ten
# can still fail it: on this shared machine that is the load, not duet. Then
# the oracle redoes the statistics, and `preplay compare` on the file must
# print "slower" with the interval above 1, overall and per label.
# Under ASan+UBSan (PREPLAY_SANITIZE=1) times say nothing and the test is
# there for memory errors in the code it drives: 2 runs (1 each way round)
# instead of 10, the same code paths (two plans, the oracle, compare), and
# `preplay compare` must print each label's row and the verdict as the
# file has them; "B slower" is a timing verdict, checked in the release
# test only (10 runs there cost ~25 s of ASan's 38; 4 runs ~5 s of its 15).
set -euo pipefail
: "${PREPLAY_BIN:?}" "${PREPLAY_BUILD_DIR:?}" "${PREPLAY_SOURCE_DIR:?}"
work=$(mktemp -d /tmp/duet-ab-XXXXXX)
trap 'rm -rf "$work"' EXIT
"$PREPLAY_BUILD_DIR/tests/replay/replay_make_plan" two-tier "$work/a.plan"
"$PREPLAY_BUILD_DIR/tests/duet/duet_plan_scale_cpu" "$work/a.plan" "$work/b.plan" 1.5
runs=10 timed=1
[ "${PREPLAY_SANITIZE:-0}" = 1 ] && runs=2 timed=0
"$PREPLAY_BIN" duet "$work/a.plan" "$work/b.plan" --runs $runs --iterations 2 -o "$work/ab.json" \
  2>"$work/err" || { cat "$work/err"; exit 1; }
cat "$work/err"
python3 - "$work/ab.json" $runs $timed <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
R, timed = int(sys.argv[2]), sys.argv[3] == "1"
assert d["runs"] == R and d["iterations"] == 2, (d["runs"], d["iterations"])
assert d["aa"] is False and d["plan_a"] != d["plan_b"] and d["same_recording"] is True
assert d["failed_a"] == 0 and d["failed_b"] == 0
assert set(d["labels"]) == {"GET /fast", "POST /slow"}, d["labels"].keys()
for name, m in [("(overall)", d["overall"])] + list(d["labels"].items()):
    print(f"{name}: B/A {m['gms']:.4f} [{m['ci_low']:.4f}, {m['ci_high']:.4f}]")
    assert m["runs"] == R and m["iterations"] == 2 * R and len(m["ratios"]) == R, name
    if not timed:
        continue
    assert m["equal"] is False and m["ci_low"] > 1, (name, m["ci_low"], m["ci_high"])
    # CPU is 40-65% of these blocks' time: 50% more CPU, 20-33% slower on a
    # quiet machine (no upper bound: under load the slower side's queueing
    # grows faster than its CPU; 1.98 was seen at load 12)
    assert m["gms"] > 1.1, (name, m["gms"])
PY
[ $timed = 0 ] || grep -Eq '^  POST /slow +B/A 1\.[0-9]{4} \[1\.[0-9]{4}, 1\.[0-9]{4}\] \(99%, width [0-9.]+%\) B slower$' "$work/err"
/usr/bin/python3 "$PREPLAY_SOURCE_DIR/tests/duet/oracle.py" "$work/ab.json"
# `preplay compare` reads the same file (formats/duet_reader.h) and says
# slower, with the interval above 1, overall and on both labels
"$PREPLAY_BIN" compare "$work/ab.json" >"$work/cmp" || { cat "$work/cmp"; exit 1; }
cat "$work/cmp"
if [ $timed = 0 ]; then
  python3 - "$work/ab.json" "$work/cmp" $runs <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
out = open(sys.argv[2]).read().splitlines()
R = int(sys.argv[3])
def verdict(m):
    return "equal" if m["equal"] else "slower" if m["gms"] > 1 else "faster"
for name, m in [("(overall)", d["overall"])] + list(d["labels"].items()):
    row = "%-24s %7.4f  [%.4f, %.4f] %6.2f%%  %-7s  %d (%d x 2)" % (
        name, m["gms"], m["ci_low"], m["ci_high"], 100 * m["ci_width"], verdict(m), 2 * R, R)
    assert any(l.startswith(row) for l in out), (row, out)  # then the A/A width column
o = d["overall"]
head = ("=> B and A are equal: B/A %.4f, 99%% interval [%.4f, %.4f] contains 1" % (o["gms"], o["ci_low"], o["ci_high"])
        if o["equal"] else "=> B is %s than A: B/A %.4f, 99%% interval [%.4f, %.4f] %s 1" % (
            verdict(o), o["gms"], o["ci_low"], o["ci_high"], "above" if o["gms"] > 1 else "below"))
n = [sum(verdict(m) == v for m in d["labels"].values()) for v in ("slower", "equal", "faster")]
line = head + " (labels: %d slower, %d equal, %d faster)" % tuple(n)
assert line in out, (line, out)
PY
  echo "duet A/B (sanitizer build: no timing verdict): ok"
  exit 0
fi
for name in '(overall)' 'GET /fast' 'POST /slow'; do
  grep -Eq "^$(printf '%s' "$name" | sed 's/[()]/\\&/g') +[1-9]\.[0-9]{4}  \[[1-9]\.[0-9]{4}, [1-9]\.[0-9]{4}\] +[0-9.]+%  slower   20 \(10 x 2\)" "$work/cmp" \
    || { echo "compare: no 'slower' row above 1 for $name" >&2; exit 1; }
done
grep -Eq '^=> B is slower than A: B/A [1-9]\.[0-9]{4}, 99% interval \[[1-9]\.[0-9]{4}, [1-9]\.[0-9]{4}\] above 1 \(labels: 2 slower, 0 equal, 0 faster\)$' "$work/cmp"
echo "duet A/B: ok"
