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
set -euo pipefail
: "${PREPLAY_BIN:?}" "${PREPLAY_BUILD_DIR:?}" "${PREPLAY_SOURCE_DIR:?}"
work=$(mktemp -d /tmp/duet-ab-XXXXXX)
trap 'rm -rf "$work"' EXIT
"$PREPLAY_BUILD_DIR/tests/replay/replay_make_plan" two-tier "$work/a.plan"
"$PREPLAY_BUILD_DIR/tests/duet/duet_plan_scale_cpu" "$work/a.plan" "$work/b.plan" 1.5
"$PREPLAY_BIN" duet "$work/a.plan" "$work/b.plan" --runs 10 --iterations 2 -o "$work/ab.json" \
  2>"$work/err" || { cat "$work/err"; exit 1; }
cat "$work/err"
python3 - "$work/ab.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["aa"] is False and d["plan_a"] != d["plan_b"] and d["same_recording"] is True
assert d["failed_a"] == 0 and d["failed_b"] == 0
assert set(d["labels"]) == {"GET /fast", "POST /slow"}, d["labels"].keys()
for name, m in [("(overall)", d["overall"])] + list(d["labels"].items()):
    print(f"{name}: B/A {m['gms']:.4f} [{m['ci_low']:.4f}, {m['ci_high']:.4f}]")
    assert m["equal"] is False and m["ci_low"] > 1, (name, m["ci_low"], m["ci_high"])
    # CPU is 40-65% of these blocks' time: 50% more CPU, 20-33% slower on a
    # quiet machine (no upper bound: under load the slower side's queueing
    # grows faster than its CPU; 1.98 was seen at load 12)
    assert m["gms"] > 1.1, (name, m["gms"])
PY
grep -Eq '^  POST /slow +B/A 1\.[0-9]{4} \[1\.[0-9]{4}, 1\.[0-9]{4}\] \(99%, width [0-9.]+%\) B slower$' "$work/err"
/usr/bin/python3 "$PREPLAY_SOURCE_DIR/tests/duet/oracle.py" "$work/ab.json"
# `preplay compare` reads the same file (formats/duet_reader.h) and says
# slower, with the interval above 1, overall and on both labels
"$PREPLAY_BIN" compare "$work/ab.json" >"$work/cmp" || { cat "$work/cmp"; exit 1; }
cat "$work/cmp"
for name in '(overall)' 'GET /fast' 'POST /slow'; do
  grep -Eq "^$(printf '%s' "$name" | sed 's/[()]/\\&/g') +[1-9]\.[0-9]{4}  \[[1-9]\.[0-9]{4}, [1-9]\.[0-9]{4}\] +[0-9.]+%  slower   20 \(10 x 2\)" "$work/cmp" \
    || { echo "compare: no 'slower' row above 1 for $name" >&2; exit 1; }
done
grep -Eq '^=> B is slower than A: B/A [1-9]\.[0-9]{4}, 99% interval \[[1-9]\.[0-9]{4}, [1-9]\.[0-9]{4}\] above 1 \(labels: 2 slower, 0 equal, 0 faster\)$' "$work/cmp"
echo "duet A/B: ok"
