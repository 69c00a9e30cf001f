#!/usr/bin/env bash
# test_accuracy_short.sh - the short accuracy benchmark in ctest
# (tests/bench/accuracy/run.sh --short: the sample app recorded, then real vs
# predicted on the emulated small type, with and without dependencies). Then
# asserts on the table: a row per label, the no-deps columns filled, and the
# --no-deps results marked as such.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=${PREPLAY_SOURCE_DIR:-$(cd "$here/../.." && pwd)}
work=$(mktemp -d /tmp/preplay-accuracy-short.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
"$src/tests/bench/accuracy/run.sh" --short --out "$work" || fail "accuracy run or its check failed"
table=$work/table.md
cat "$table"
for label in "GET /cpu" "GET /db" "GET /fanout" "GET /file" "GET /log" "GET /static" "(all)"; do
  grep -q "| small | .* | $label | " "$table" || fail "no row for $label"
done
# every row has numbers in the no-deps columns (not empty cells)
awk -F'|' '/^\| small/ && $13 !~ /%/ { bad = 1 } END { exit bad }' "$table" ||
  fail "a row without --no-deps numbers"
python3 - "$work/base/pred-small-nodeps.json" "$work/base/pred-small.json" <<'PY' || fail "results"
import json, sys
nd, d = (json.load(open(f)) for f in sys.argv[1:])
assert nd["no_deps"] is True and d["no_deps"] is False, "no_deps flags"
for r in (nd, d):
    assert r["intervals"] and all(i["failed"] == 0 for i in r["intervals"]), "failed requests"
print("ok: both runs complete,", sum(i["requests"] for i in d["intervals"]), "and",
      sum(i["requests"] for i in nd["intervals"]), "requests")
PY
echo PASS
