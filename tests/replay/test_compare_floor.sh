#!/usr/bin/env bash
# test_compare_floor.sh - tests/bench/accuracy/compare.py --floor, the
# table apps/app-bench.sh prints for WordPress and Redmine: two real runs
# judged against each other give the floor JSON, then a prediction 5 %
# slow on label a (within the 10 % goal) and 50 % slow on label b (beyond
# the goal and b's floor) is judged with it. Must never pass on a table
# that was not printed (a Python error once left only its title line).
# Then floor_table.sh, which both benchmarks judge with, on three real runs.
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

# floor_table.sh (app-bench.sh and matrix.sh): the same table from three
# real runs, each against the others for the floor; the JSON rows carry
# the floors beside the verdicts
python3 - "$work" <<'PY'
import sys
w = sys.argv[1]
with open(f"{w}/real3.csv", "w") as f:
    f.write("label,start_ns,response_ns,status,request_id,session,think_ns\n")
    for i in range(100):
        for label in ("a", "b"):
            f.write(f"{label},{i},{int((10 + i % 10) * 1e6 * 0.99)},200,{i},0,0\n")
PY
mkdir "$work/ft"
# shellcheck source=tests/bench/accuracy/floor_table.sh
. "$PREPLAY_SOURCE_DIR/tests/bench/accuracy/floor_table.sh"
floor_table "$PREPLAY_BIN" "$work/ft" t 10 "" "title" "$work/pred.json" \
  "$work/real1.csv" "$work/real2.csv" "$work/real3.csv"
cat "$work/ft/table.md"
[ "$(head -1 "$work/ft/table.md")" = title ] || { echo "floor_table: no title line" >&2; exit 1; }
python3 - "$work/ft/compare.json" <<'PY'
import json, sys
rows = {r["label"]: r for r in json.load(open(sys.argv[1]))["rows"]}
a, b = rows["a"], rows["b"]
# the floor: the largest error of one real run against the other two
# pooled; real2 is 2 % slow, real3 1 % fast: between 1 % and 3 %
assert 0.01 < a["floor_p50"] < 0.03, a
assert a["verdict"] == "ok" and b["verdict"].startswith("MISS p50"), (a["verdict"], b["verdict"])
print("floor_table: floors", a["floor_p50"], a["floor_p95"], "verdicts", a["verdict"], b["verdict"])
PY
