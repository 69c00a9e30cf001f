#!/usr/bin/env bash
# test_run_schedule.sh - `preplay run` replays the whole recording, never a
# silent prefix. The burst plan (make_plan.c) is 3.5 s of "GET /page" with
# its 81 "POST /order" only after 2.6 s. By default every interval is one
# pass of it (151 requests, orders included); with --interval 1.5s the run
# says so once and each interval continues where the last stopped (0-1.5,
# 1.5-3.0, then 3.0-4.5 s, wrapping into the next pass). The progress lines
# ("interval i of MAX", the coverage, p and the holding label's p), the final
# summary line and the results' coverage keys are checked.
set -euo pipefail
: "${PREPLAY_BIN:?}" "${PREPLAY_BUILD_DIR:?}"
work=$(mktemp -d /tmp/replay-schedule-XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
"$PREPLAY_BUILD_DIR/tests/replay/replay_make_plan" burst "$work/plan"

# 1. default interval: the whole recording, every interval
"$PREPLAY_BIN" run "$work/plan" --max-intervals 2 --p0 0.99999 --cpu-ratio 1 \
  -o "$work/whole.json" 2>"$work/whole.err" || fail "default run: $(cat "$work/whole.err")"
cat "$work/whole.err"
grep -qx 'interval 1 of 2: 151 requests (0 failed), schedule 0.0-3.5 s of 3.5 s, p n/a' \
  "$work/whole.err" || fail "interval 1 line"
grep -Eqx 'interval 2 of 2: 151 requests \(0 failed\), schedule 0\.0-3\.5 s of 3\.5 s, p [01]\.[0-9]{3}(, held open by (\(overall\)|(GET /page|POST /order) \(p [01]\.[0-9]{3}\)))?' \
  "$work/whole.err" || fail "interval 2 line"
tail -1 "$work/whole.err" | grep -Eqx "(not stable after 2 intervals: (label GET /page|label POST /order|overall) p=[01]\.[0-9]{3}|stable after 2 intervals, [0-2] of 2 labels judged), wrote $work/whole.json" ||
  fail "summary line: $(tail -1 "$work/whole.err")"
grep -q 'shorter than one pass' "$work/whole.err" && fail "default interval called short"
python3 - "$work/whole.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schedule_requests"] == 151, d["schedule_requests"]
# span 3.48 s plus one mean gap (3.48 / 150)
assert abs(d["schedule_s"] - 3.5032) < 1e-9, d["schedule_s"]
for iv in d["intervals"]:
    assert iv["requests"] == 151 and iv["schedule_from_s"] == 0, iv
    assert abs(iv["schedule_to_s"] - 3.5032) < 1e-6 and abs(iv["length_s"] - 3.5032) < 1e-6, iv
for n in (1, 2):
    orders = [s for s in d["samples"] if s["interval"] == n and s["label"] == "POST /order"]
    assert len(orders) == 81, (n, len(orders))
print("whole ok")
PY

# 2. --interval 1.5s: shorter than the recording, so the schedule continues
"$PREPLAY_BIN" run "$work/plan" --max-intervals 3 --interval 1.5s --p0 0.99999 --cpu-ratio 1 \
  -o "$work/cont.json" 2>"$work/cont.err" || fail "continued run: $(cat "$work/cont.err")"
cat "$work/cont.err"
grep -qx 'run: --interval 1.5s is shorter than one pass of the recording (3.5 s at speed 1): each interval continues the schedule where the last stopped' \
  "$work/cont.err" || fail "no note on the short interval"
grep -qx 'interval 1 of 3: 30 requests (0 failed), schedule 0.0-1.5 s of 3.5 s, p n/a' \
  "$work/cont.err" || fail "interval 1 line"
grep -q '^interval 2 of 3: 67 requests (0 failed), schedule 1.5-3.0 s of 3.5 s, p ' \
  "$work/cont.err" || fail "interval 2 line"
grep -q '^interval 3 of 3: 74 requests (0 failed), schedule 3.0-4.5 s of 3.5 s, p ' \
  "$work/cont.err" || fail "interval 3 line"
python3 - "$work/cont.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
cov = [(i["schedule_from_s"], i["schedule_to_s"]) for i in d["intervals"]]
want = [(0, 1.5), (1.5, 3.0), (3.0, 4.5)]
assert all(abs(a - c) < 1e-9 and abs(b - e) < 1e-9 for (a, b), (c, e) in zip(cov, want)), cov
def count(n, label):
    return sum(1 for s in d["samples"] if s["interval"] == n and s["label"] == label)
# pages every 50 ms; orders from 2.6 s every 11 ms; interval 3 wraps into
# the next pass's first 0.997 s (20 pages)
assert [count(n, "GET /page") for n in (1, 2, 3)] == [30, 30, 30]
assert [count(n, "POST /order") for n in (1, 2, 3)] == [0, 37, 44]
print("continued ok: every order replayed once")
PY

# 3. --warmup 1s: the first second of the schedule (20 pages, one every
# 50 ms) driven before interval 1 and thrown away; interval 1 still
# replays the whole pass from its start; the results say what the warm-up
# sent (formats/RESULTS.md "warmup"), none of it among the samples
"$PREPLAY_BIN" run "$work/plan" --max-intervals 1 --warmup 1s --p0 0.99999 --cpu-ratio 1 \
  -o "$work/warm.json" 2>"$work/warm.err" || fail "warm-up run: $(cat "$work/warm.err")"
cat "$work/warm.err"
grep -Eqx 'run: warm-up: 20 requests \(0 failed\) in [0-9.]+ s, not counted' "$work/warm.err" ||
  fail "warm-up line"
grep -qx 'interval 1 of 1: 151 requests (0 failed), schedule 0.0-3.5 s of 3.5 s, p n/a' \
  "$work/warm.err" || fail "interval 1 after the warm-up"
python3 - "$work/warm.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
w = d["warmup"]
assert w["requests"] == 20 and w["failed"] == 0 and 0.9 <= w["length_s"] < 3, w
assert len(d["samples"]) == 151 and {s["interval"] for s in d["samples"]} == {1}, len(d["samples"])
assert d["labels"]["GET /page"]["count"] == 70, d["labels"]["GET /page"]["count"]
print("warm-up ok")
PY
# no warm-up asked: no "warmup" key; a bad one: exit 2 with the option named
python3 -c 'import json, sys; assert "warmup" not in json.load(open(sys.argv[1]))' "$work/whole.json"
for bad in -1s 25h 5x; do
  st=0
  "$PREPLAY_BIN" run "$work/plan" --warmup "$bad" -o "$work/bad.json" 2>"$work/bad.err" || st=$?
  [ "$st" = 2 ] && grep -q -- "--warmup '$bad'" "$work/bad.err" || fail "--warmup $bad: exit $st, $(cat "$work/bad.err")"
done
echo "bad --warmup values refused"
