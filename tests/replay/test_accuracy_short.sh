#!/usr/bin/env bash
# test_accuracy_short.sh - the short accuracy benchmark in ctest
# (tests/bench/accuracy/run.sh --short, i.e. short.sh): the sample app
# recorded, then on the emulated type >= 3 real runs (the noise floor) and
# the prediction, judged per label by judge.py in one run - no retry, no
# miss forgiven by overlapping intervals. Then asserts on what it measured:
# judge.json says at least 5 of the mix's 6 labels were judged (a label
# whose real runs disagree by more than 50% / 100% cannot be) and none of
# them failed, and the prediction is complete (no failed request, every
# label there).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=${PREPLAY_SOURCE_DIR:-$(cd "$here/../.." && pwd)}
work=$(mktemp -d /tmp/preplay-accuracy-short.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
status=0
"$src/tests/bench/accuracy/run.sh" --short --out "$work" || status=$?
[ -s "$work/judge.json" ] || fail "the benchmark judged nothing (exit $status)"
python3 - "$work/judge.json" "$work/pred.json" "$status" <<'PY' || fail "the judgement"
import json, sys
j, pred, status = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), int(sys.argv[3])
want = {"GET /cpu", "GET /db", "GET /fanout", "GET /file", "GET /log", "GET /static"}
labels = j["labels"]
assert set(labels) == want, f"labels of the real runs: {sorted(labels)}"
verdicts = {L: r["verdict"] for L, r in labels.items()}
print("verdicts:", verdicts)
assert j["judged"] >= 5, f"{j['judged']} of {len(want)} labels judged (at least 5)"
bad = {L: labels[L]["why"] for L, v in verdicts.items() if v == "FAIL"}
assert not bad, f"labels that failed: {bad}"
assert j["ok"] and status == 0, f"judge said ok={j['ok']}, benchmark exit {status}"
assert pred["intervals"] and all(i["failed"] == 0 for i in pred["intervals"]), "failed requests"
assert {s["label"] for s in pred["samples"]} == want, "a label missing from the prediction"
judged = [L for L, v in verdicts.items() if v == "pass"]
print("ok: %d labels judged and passed; smallest margin %.1f points" % (
    len(judged), 100 * min(labels[L][q]["margin"] for L in judged for q in ("median", "p95"))))
PY
echo PASS
