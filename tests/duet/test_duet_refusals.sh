#!/usr/bin/env bash
# test_duet_refusals.sh - bad input to `preplay duet` fails with one line
# naming what is wrong, exit status 2 (usage) or 1, before any replayer
# starts: plans with DB work without a database per side, the same
# database twice, two plans with no label in common, one CPU only, --aa
# with two plans, bad numbers; and labels only one side has are named,
# not compared; --slice replays the part of the schedule it names.
set -euo pipefail
: "${PREPLAY_BIN:?}" "${PREPLAY_BUILD_DIR:?}"
work=$(mktemp -d /tmp/duet-refuse-XXXXXX)
trap 'rm -rf "$work"' EXIT
mk="$PREPLAY_BUILD_DIR/tests/replay/replay_make_plan"
"$mk" two-tier "$work/plan"
"$mk" db "$work/db.plan" duetdb
"$mk" burst "$work/burst.plan"
fails() { # STATUS EXPECTED-LINE ARGS...
  local want=$1 line=$2
  shift 2
  local st=0
  "$PREPLAY_BIN" duet "$@" -o "$work/out.json" 2>"$work/err" || st=$?
  if [ "$st" != "$want" ] || [ "$(wc -l <"$work/err")" != 1 ] || ! grep -qF -- "$line" "$work/err"; then
    echo "duet $*: status $st (want $want), said:" >&2
    cat "$work/err" >&2
    exit 1
  fi
  test ! -e "$work/out.json"
}
fails 1 "duet: $work/db.plan has DB work: give each side its own database with --db-a URL --db-b URL (two replays must not share one)" "$work/db.plan" --aa
fails 1 "duet: --db-a and --db-b name the same database (mysql://u@h/d): each side needs its own copy" \
  "$work/db.plan" --aa --db-a mysql://u:x@h/d --db-b mysql://u@h/d
fails 2 "duet: --db-a and --db-b go together: each side needs its own DB" "$work/db.plan" --aa --db-a mysql://u@h/d
fails 1 "duet: $work/plan and $work/burst.plan have no request label in common: nothing to compare" \
  "$work/plan" "$work/burst.plan"
fails 2 "duet: --aa replays A against itself: give one plan, not two" "$work/plan" "$work/plan" --aa
fails 2 "duet: needs B.PLAN to compare with A.PLAN (or --aa for A/A)" "$work/plan"
fails 2 "duet: --runs '1': expected 2..100000" "$work/plan" --aa --runs 1
fails 2 "duet: --slice '3': expected FROM:LEN in seconds, LEN > 0" "$work/plan" --aa --slice 3
fails 2 "duet: --seed '-1': expected an integer 0..2^63-1" "$work/plan" --aa --seed -1
fails 2 "duet: --cpus '1,1': expected two different CPU numbers X,Y" "$work/plan" --aa --cpus 1,1
# one CPU only: taskset gives the process a single core
if command -v taskset >/dev/null; then
  st=0
  taskset -c 0 "$PREPLAY_BIN" duet "$work/plan" --aa -o "$work/out.json" 2>"$work/err" || st=$?
  [ "$st" = 1 ] && grep -qx "duet: needs two CPUs to pin A and B to; this process may use 1" "$work/err" ||
    { echo "one CPU: status $st: $(cat "$work/err")" >&2; exit 1; }
  st=0
  taskset -c 0 "$PREPLAY_BIN" duet "$work/plan" --aa --cpus 0,1 -o "$work/out.json" 2>"$work/err" || st=$?
  [ "$st" = 1 ] && grep -qx "duet: --cpus: this process may not run on CPU 1" "$work/err" ||
    { echo "--cpus 0,1 on one CPU: status $st: $(cat "$work/err")" >&2; exit 1; }
fi
# a label of A that B renamed: compared on the label they share, the
# other two named with the reason (one short run: 2 runs of 1 iteration)
"$PREPLAY_BUILD_DIR/tests/duet/duet_plan_scale_cpu" "$work/plan" "$work/renamed.plan" 1 \
  "POST /slow=POST /slower" >/dev/null
# --slice 0.5:0.3: requests 25-39 of the 50 (one per 20 ms), 10 of them GET /fast
"$PREPLAY_BIN" duet "$work/plan" "$work/renamed.plan" --runs 2 --iterations 1 --warmup 0 \
  --slice 0.5:0.3 -o "$work/out.json" 2>"$work/err" || { cat "$work/err"; exit 1; }
grep -qx "  POST /slow               skipped: no iteration of run 1 had it on both sides" "$work/err"
grep -qx "  POST /slower             skipped: served by B only" "$work/err"
python3 - "$work/out.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert list(d["labels"]) == ["GET /fast"], d["labels"].keys()
assert d["labels_skipped"] == {"POST /slow": "no iteration of run 1 had it on both sides",
                               "POST /slower": "served by B only"}, d["labels_skipped"]
assert d["overall"]["iterations"] == 2
assert d["slice_from_s"] == 0.5 and d["slice_length_s"] == 0.3
fast = d["labels"]["GET /fast"]
assert fast["samples_a"] == 20 and fast["samples_b"] == 20, (fast["samples_a"], fast["samples_b"])
PY
echo "duet refusals: ok"
