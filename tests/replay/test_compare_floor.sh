#!/usr/bin/env bash
# test_compare_floor.sh - tests/bench/accuracy/compare.py --floor, the
# table apps/app-bench.sh prints for WordPress and Redmine: two real runs
# judged against each other give the floor JSON, then a prediction 5 %
# slow on label a (within the 10 % goal) and 50 % slow on label b (beyond
# the goal and b's floor) is judged with it. Must never pass on a table
# that was not printed (a Python error once left only its title line).
set -euo pipefail
: "${PREPLAY_BIN:?}" "${PREPLAY_SOURCE_DIR:?}"
work=$(mktemp -d /tmp/cmpfloor-XXXXXX)
trap 'rm -rf "$work"' EXIT
cmp=$PREPLAY_SOURCE_DIR/tests/bench/accuracy/compare.py
python3 - "$work" <<'PY'
import json, sys
w = sys.argv[1]
def csv(name, scale):
    with open(f"{w}/{name}.csv", "w") as f:
        f.write("label,start_ns,response_ns,status,request_id,session,think_ns\n")
        for i in range(100):
            for label in ("a", "b"):
                f.write(f"{label},{i},{int((10 + i % 10) * 1e6 * scale)},200,{i},0,0\n")
csv("real1", 1.0)
csv("real2", 1.02)
samples = [{"label": L, "ok": True, "response_s": (10 + i % 10) * 1e-3 * s}
           for i in range(100) for L, s in (("a", 1.05), ("b", 1.5))]
json.dump({"samples": samples}, open(f"{w}/pred.json", "w"))
PY
python3 "$cmp" --preplay "$PREPLAY_BIN" --real "$work/real1.csv" --pred "$work/real2.csv" \
  --type t --json "$work/floor.json" --header >/dev/null
python3 "$cmp" --preplay "$PREPLAY_BIN" --real "$work/real1.csv" --pred "$work/pred.json" \
  --type t --floor "$work/floor.json" --header >"$work/table.md"
cat "$work/table.md"
grep -Eq '^\| a \|.*\| ok \|$' "$work/table.md" || { echo "label a: no 'ok' row" >&2; exit 1; }
grep -Eq '^\| b \|.*MISS p50' "$work/table.md" || { echo "label b: no 'MISS p50' row" >&2; exit 1; }
