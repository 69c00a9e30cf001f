#!/usr/bin/env bash
# test_run_e2e.sh - `preplay run` end to end on a hand-built two-tier plan
# (web calling app): 3 intervals of 2 s, then checks the results JSON: both
# labels with plausible medians (the blocks' CPU + external time), bands
# around them, 3 intervals of 100 requests, p from interval 2 on, resource
# time per label for both components, and that the replayers are gone.
set -euo pipefail
: "${PREPLAY_BIN:?}" "${PREPLAY_BUILD_DIR:?}"
work=$(mktemp -d /tmp/replay-e2e-XXXXXX)
trap 'rm -rf "$work"' EXIT
"$PREPLAY_BUILD_DIR/tests/replay/replay_make_plan" two-tier "$work/plan"
# --p0 0.99999: all three intervals must run (with the default 0.9 the stop
# rule may, rightly, stop after two when the machine is quiet)
"$PREPLAY_BIN" run "$work/plan" --max-intervals 3 --interval 2s --instance local --price 0.1 \
  --p0 0.99999 -o "$work/out.json" 2>"$work/err"
cat "$work/err"
grep -q '^interval 3: 100 requests (0 failed), p ' "$work/err"
python3 - "$work/out.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["kind"] == "run" and d["instance"] == "local" and d["price"] == 0.1, d["instance"]
assert isinstance(d["stopped"], bool)
iv = d["intervals"]
assert [i["requests"] for i in iv] == [100, 100, 100], iv
assert iv[0]["p"] is None and all(0 <= i["p"] <= 1 for i in iv[1:]), iv
L = d["labels"]
assert set(L) == {"GET /fast", "POST /slow"}, L.keys()
fast, slow = L["GET /fast"], L["POST /slow"]
assert fast["count"] + slow["count"] == 300
# GET /fast: 0.3 ms CPU + call (0.2 ms CPU) ; POST /slow: 1 ms CPU + 1 ms external + call (1 ms CPU)
assert 0.0005 <= fast["median_s"] <= 0.004, fast
assert 0.003 <= slow["median_s"] <= 0.012, slow
for s in (fast, slow):
    lo, hi = s["median_ci_s"]
    assert lo <= s["median_s"] <= hi, s
    assert s["median_s"] <= s["p95_s"] <= s["p99_s"]
samples = d["samples"]
assert len(samples) == 300 and all(x["ok"] for x in samples)
assert {x["interval"] for x in samples} == {1, 2, 3}
R = d["resources"]
assert R["web"]["POST /slow"]["blocks"] == slow["count"]
assert R["app"]["app:slow"]["blocks"] == slow["count"]
# 1 ms of recorded CPU per slow block on web, replayed at ratio 1
cpu = R["web"]["POST /slow"]["cpu_s"] / slow["count"]
assert 0.0009 <= cpu <= 0.0015, cpu
assert R["web"]["POST /slow"]["external_s"] / slow["count"] >= 0.001
assert R["app"]["app:slow"]["file_s"] > 0
assert d["state_restore"]["per_interval"][2]["interval"] == 3
print("e2e ok: fast median %.3f ms, slow median %.3f ms" % (fast["median_s"] * 1e3, slow["median_s"] * 1e3))
PY
# no replayer left behind
if pgrep -f "preplay replay $work/plan" >/dev/null; then
  echo "a replayer survived the run" >&2
  exit 1
fi
