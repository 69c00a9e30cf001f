#!/usr/bin/env bash
# test_run_e2e.sh - `preplay run` end to end on a hand-built two-tier plan
# (web calling app): 3 intervals of 2 s, then checks the results JSON: both
# labels with plausible medians (the blocks' CPU + external time), bands
# around them, 3 intervals of 100 requests (two passes of the 1 s schedule
# each, from its start: the coverage keys and progress lines), the final
# summary line, p from interval 2 on, resource
# time per label for both components, and that the replayers are gone; then
# --log: the stop rule on ln(response time), its p checked against
# `preplay stats similarity --log` on the same samples; then --no-deps: one
# interval with no failed request and every label replayed by both tiers.
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
# two passes of the 1 s schedule per 2 s interval, each interval from its start
grep -q '^interval 3 of 3: 100 requests (0 failed), schedule 0.0-2.0 s of 1.0 s, p ' "$work/err"
# the last line says how it ended: not stable at p0 0.99999 (or, rarely, stable)
tail -1 "$work/err" | grep -Eq "^(not stable after 3 intervals: (label GET /fast|label POST /slow|overall) p=[01]\.[0-9]{3}|stable after 3 intervals, [0-2] of 2 labels judged), wrote $work/out.json\$" ||
  { echo "no summary line: $(tail -1 "$work/err")" >&2; exit 1; }
python3 - "$work/out.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["kind"] == "run" and d["instance"] == "local" and d["price"] == 0.1, d["instance"]
assert isinstance(d["stopped"], bool)
iv = d["intervals"]
assert [i["requests"] for i in iv] == [100, 100, 100], iv
# one pass is the 50 requests' span (0.98 s) plus one mean gap
assert d["schedule_requests"] == 50 and abs(d["schedule_s"] - 1.0) < 1e-9, d["schedule_s"]
assert all(i["schedule_from_s"] == 0 and abs(i["schedule_to_s"] - 2.0) < 1e-9 for i in iv), iv
assert iv[0]["p"] is None and all(0 <= i["p"] <= 1 for i in iv[1:]), iv
L = d["labels"]
assert set(L) == {"GET /fast", "POST /slow"}, L.keys()
fast, slow = L["GET /fast"], L["POST /slow"]
assert fast["count"] + slow["count"] == 300
samples = d["samples"]
# response_s counts from the scheduled arrival, so it holds the send's
# lateness; the server's part (response_s - late_s) is what the blocks cost
# and stays plausible even when a loaded machine makes the driver late.
# GET /fast: 0.3 ms CPU + call (0.2 ms CPU) ; POST /slow: 1 ms CPU + 1 ms external + call (1 ms CPU)
assert all(x["response_s"] >= x["late_s"] for x in samples)
def median(v):
    v = sorted(v)
    k = (len(v) - 1) / 2
    return v[int(k)] + (v[min(int(k) + 1, len(v) - 1)] - v[int(k)]) * (k - int(k))
def served(label):
    return median([x["response_s"] - x["late_s"] for x in samples if x["label"] == label])
assert 0.0005 <= served("GET /fast") <= 0.004, served("GET /fast")
assert 0.003 <= served("POST /slow") <= 0.012, served("POST /slow")
for name, s in (("GET /fast", fast), ("POST /slow", slow)):
    want = median([x["response_s"] for x in samples if x["label"] == name])
    assert abs(s["median_s"] - want) < 1e-8, (s["median_s"], want)
    lo, hi = s["median_ci_s"]
    assert lo <= s["median_s"] <= hi, s
    assert s["median_s"] <= s["p95_s"] <= s["p99_s"]
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
print("e2e ok: fast median %.3f ms (served %.3f), slow median %.3f ms (served %.3f)" % (
    fast["median_s"] * 1e3, served("GET /fast") * 1e3, slow["median_s"] * 1e3, served("POST /slow") * 1e3))
PY
# no replayer left behind
if pgrep -f "preplay replay $work/plan" >/dev/null; then
  echo "a replayer survived the run" >&2
  exit 1
fi
# --log: the stop rule on ln(response time). Interval 2's p must be exactly
# what `preplay stats similarity --log` gives for S1 against S1+S2 of the
# response times the results file lists (the oracle test checks that
# command against scipy).
"$PREPLAY_BIN" run "$work/plan" --max-intervals 2 --interval 1s --p0 0.99999 --log \
  -o "$work/log.json" 2>"$work/log.err" || { cat "$work/log.err"; exit 1; }
python3 - "$work/log.json" "$work" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["scale"] == "log", d.get("scale")
s1 = [x["response_s"] for x in d["samples"] if x["ok"] and x["interval"] == 1]
s2 = [x["response_s"] for x in d["samples"] if x["ok"] and x["interval"] == 2]
for name, vals in (("a", s1), ("b", s1 + s2)):
    with open(f"{sys.argv[2]}/{name}.txt", "w") as f:
        f.write("".join(f"{v!r}\n" for v in vals))
with open(f"{sys.argv[2]}/p2", "w") as f:
    f.write(repr(d["intervals"][1]["p"]))
PY
"$PREPLAY_BIN" stats similarity --log --json --per-interval 1000000 "$work/a.txt" "$work/b.txt" \
  >"$work/sim.json"
python3 - "$work/sim.json" "$work/p2" <<'PY'
import json, sys
want = json.load(open(sys.argv[1]))["p"]
got = float(open(sys.argv[2]).read())
assert abs(got - want) <= 1e-9, (got, want)
print("--log ok: interval 2 p %.6f = stats similarity --log" % got)
PY
# --no-deps (CloudProphet's strawman: each recorded worker replays its blocks
# in recorded order). This plan names one block from many requests and
# leaves every block on worker 0 at start 0, so each replayer has one
# sequence in schedule order: every request must be answered (a sequence
# with one entry per block held a third of GET /fast for a POST /slow that
# never came, failed when the drain ran out) and every label replayed by
# both components as often as the schedule sends it.
"$PREPLAY_BIN" run "$work/plan" --max-intervals 1 --interval 2s --p0 0.99999 --no-deps \
  -o "$work/nodeps.json" 2>"$work/nodeps.err" || { cat "$work/nodeps.err"; exit 1; }
cat "$work/nodeps.err"
grep -q '^interval 1 of 1: 100 requests (0 failed), ' "$work/nodeps.err"
python3 - "$work/nodeps.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["no_deps"] is True, d.get("no_deps")
bad = [x for x in d["samples"] if not x["ok"]]
assert not bad, "%d failed, first %s" % (len(bad), bad[0])
# two passes of the 50 requests: i % 3 == 0 is POST /slow (17 a pass)
want = {"GET /fast": 66, "POST /slow": 34}
assert {k: v["count"] for k, v in d["labels"].items()} == want, d["labels"].keys()
R = d["resources"]
got = {c: {l: r["blocks"] for l, r in v.items()} for c, v in R.items()}
assert got == {"web": want, "app": {"app:fast": 66, "app:slow": 34}}, got
print("--no-deps ok: %d requests, 0 failed" % len(d["samples"]))
PY
