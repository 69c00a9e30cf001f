#!/usr/bin/env bash
# test_regress_e2e.sh - `preplay run` counters and `preplay regress` end to
# end on the hand-built two-tier plan: two normal runs are the baselines;
# the target runs beside a CPU hog this test starts (four busy processes
# per CPU, so that it shows above the other jobs of a shared machine: the
# thesis's injected CPU-heavy fault). The counters the fault
# should move are written below before any run: the response times of
# both labels (median and p95) and the run queue, all up. Checks that the
# run wrote counters per 1 s window, that regress flags at least 3 of the
# 5 expected counters, up, with the top one expected, and that a normal
# run against a normal baseline flags at most 3 counters, none in more
# than 60 % of its windows.
set -euo pipefail
: "${PREPLAY_BIN:?}" "${PREPLAY_BUILD_DIR:?}"
expected='median_s:GET /fast|median_s:POST /slow|p95_s:GET /fast|p95_s:POST /slow|run_queue'
work=$(mktemp -d /tmp/regress-e2e-XXXXXX)
hogs=()
cleanup() {
  for p in "${hogs[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
"$PREPLAY_BUILD_DIR/tests/replay/replay_make_plan" two-tier "$work/plan"
run() { # name
  "$PREPLAY_BIN" run "$work/plan" --max-intervals 2 --interval 6s --p0 0.99999 --window 1s \
    -o "$work/$1.json" 2>"$work/$1.err" || { cat "$work/$1.err" >&2; exit 1; }
}
run base1
run base2
for _ in $(seq $((4 * $(nproc)))); do
  sha256sum /dev/zero &
  hogs+=($!)
done
run hog
for p in "${hogs[@]}"; do kill "$p"; done
hogs=()
/usr/bin/python3 - "$work/base1.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))["counters"]
assert c["window_s"] == 1 and c["environment"]["cpus"] >= 1, c["environment"]
# two intervals of 6 s in 1 s windows: 6 each (a last one shorter than half a window is dropped)
assert 10 <= len(c["windows"]) <= 12, len(c["windows"])
names = c["names"]
for n in ("cpu_user", "run_queue", "ctx_switches_per_s", "net_rx_bytes_per_s", "run_cpu",
          "lock_wait", "db_time", "throughput_per_s:GET /fast", "p95_s:POST /slow"):
    assert n in names, n
i = names.index("throughput_per_s:GET /fast")
# 25 GET /fast per second in the plan's schedule
tp = sorted(w["values"][i] for w in c["windows"])
assert 15 <= tp[len(tp) // 2] <= 35, tp
assert all(0 <= w["values"][names.index("cpu_user")] <= 1 for w in c["windows"])
print("counters ok: %d windows, %d counters" % (len(c["windows"]), len(names)))
PY
"$PREPLAY_BIN" regress "$work/base1.json" "$work/base2.json" -- "$work/hog.json" -o "$work/hog-r.json"
"$PREPLAY_BIN" regress "$work/base1.json" -- "$work/base2.json" -o "$work/aa-r.json"
/usr/bin/python3 - "$work/hog-r.json" "$work/aa-r.json" "$expected" <<'PY'
import json, sys
hog, aa, expected = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), set(sys.argv[3].split("|"))
got = {f["counter"]: f for f in hog["flagged"]}
hit = [c for c in expected if c in got and got[c]["direction"] == "up"]
tp, fp = len(hit), len(set(got) - expected)
p = tp / len(got) if got else 1.0
print("CPU hog: flagged %s; expected %d/%d, precision %.2f, recall %.2f" % (
    [(f["counter"], round(f["severity"], 2), f["direction"]) for f in hog["flagged"]],
    tp, len(expected), p, tp / len(expected)))
assert tp >= 3, "the CPU hog's counters were not flagged"
assert hog["flagged"][0]["counter"] in expected, hog["flagged"][0]
print("normal vs normal: flagged %s" % [(f["counter"], round(f["severity"], 2)) for f in aa["flagged"]])
# machine-wide counters of a shared machine do move between two runs a
# minute apart (other jobs' disk and loopback traffic): a few, rarely
# violated, are tolerated; the thesis's rule alone flags 8 to 18 here
assert len(aa["flagged"]) <= 3 and all(f["severity"] <= 0.6 for f in aa["flagged"]), aa["flagged"]
PY
echo "regress e2e ok"
