#!/usr/bin/env bash
# test_regress_cli.sh - `preplay regress` on hand-made results files
# (make_counters.py): a target whose disk writes triple in its second half
# has disk_write_bytes_per_s flagged up, in second-half windows only (the
# other counters, whose rules with disk break too but whose own values did
# not move, are not: with --alpha 1, the thesis's rule alone, they are),
# a normal target flags nothing, and regress.json has the documented keys; then
# bad input: a baseline without counters, too few windows, another
# window length, results of another app, usage errors, each one line
# naming the file and what is missing, non-zero exit, no output written.
set -euo pipefail
: "${PREPLAY_BIN:?}" "${PREPLAY_SOURCE_DIR:?}"
work=$(mktemp -d /tmp/regress-cli-XXXXXX)
trap 'rm -rf "$work"' EXIT
mk=$PREPLAY_SOURCE_DIR/tests/regress/make_counters.py
"$mk" "$work/base.json" --seed 1
"$mk" "$work/base2.json" --seed 2
"$mk" "$work/same.json" --seed 3
"$mk" "$work/disk.json" --seed 4 --shift disk_write_bytes_per_s=3
"$PREPLAY_BIN" regress "$work/base.json" "$work/base2.json" -- "$work/disk.json" -o "$work/r.json" \
  --method single >"$work/out"
cat "$work/out"
/usr/bin/python3 - "$work/r.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["format"] == "preplay-regress" and d["version"] == 1
assert d["method"] == "single" and d["discretization"] == "3level", d["method"]
f = d["flagged"]
assert [x["counter"] for x in f] == ["disk_write_bytes_per_s"], f
# second-half windows not at high load (those stay at their high level): about 2/3 of 20
assert 0.2 <= f[0]["severity"] <= 0.5 and f[0]["direction"] == "up", f[0]
assert min(f[0]["violating_windows"]) >= 20, f[0]["violating_windows"]
assert f[0]["shift_p"] <= 0.001
# rules of the other counters change too (their counters are then kept
# out by their own unmoved values): every flagged rule passed both tests
flagged = [r for r in d["rules"] if r["flagged"]]
assert any(r["consequent"]["counter"] == "disk_write_bytes_per_s" for r in flagged)
for r in flagged:
    assert r["baseline_confidence"] >= 0.8 and r["target_confidence"] < r["baseline_confidence"]
    assert r["p"] <= 0.001 and r["change"] >= 0.1
sev = [x["severity"] for x in f]
assert sev == sorted(sev, reverse=True)
print("regress cli: disk writes flagged up, severity %.2f, %d rules" % (f[0]["severity"], d["rules_total"]))
PY
grep -Eq '^    0\.[2-5][0-9]  up             1  disk_write_bytes_per_s$' "$work/out"
# the thesis's rule alone blames every counter correlated with the disk too
"$PREPLAY_BIN" regress "$work/base.json" "$work/base2.json" -- "$work/disk.json" -o "$work/t.json" \
  --method single --alpha 1 --quiet
/usr/bin/python3 -c "
import json; d = json.load(open('$work/t.json'))
assert len(d['flagged']) == 5 and d['alpha'] == 1, d['flagged']"
# the ensembles: stacking (the default with two baselines) flags the same
"$PREPLAY_BIN" regress "$work/base.json" "$work/base2.json" -- "$work/disk.json" -o "$work/s.json" --quiet
/usr/bin/python3 -c "
import json; d = json.load(open('$work/s.json'))
assert d['method'] == 'stacking' and d['discretization'] == '3level', d['method']
assert [x['counter'] for x in d['flagged']] == ['disk_write_bytes_per_s'], d['flagged']
assert [b['weight'] for b in d['baselines']] == [0.5, 0.5], d['baselines']"
# a normal target flags nothing
"$PREPLAY_BIN" regress "$work/base.json" "$work/base2.json" -- "$work/same.json" -o "$work/n.json" --quiet
/usr/bin/python3 -c "import json; d = json.load(open('$work/n.json')); assert d['flagged'] == [], d['flagged']"

expect_error() { # expected-message args...
  local want=$1
  shift
  rm -f "$work/bad.json"
  if "$PREPLAY_BIN" regress "$@" 2>"$work/err"; then
    echo "accepted: $*" >&2
    exit 1
  fi
  [[ $(wc -l <"$work/err") == 1 ]] || { echo "not one line: $(cat "$work/err")" >&2; exit 1; }
  grep -qF -- "$want" "$work/err" || { echo "want '$want', got: $(cat "$work/err")" >&2; exit 1; }
  [[ ! -e $work/bad.json ]] || { echo "wrote output on error" >&2; exit 1; }
}
"$mk" "$work/old.json" --no-counters
"$mk" "$work/short.json" --windows 4
"$mk" "$work/five.json" --window-s 5
"$mk" "$work/other.json" --label "POST /other"
expect_error "$work/old.json: baseline has no counters (results before 2.2, a drive, or run --window 0): replay it with preplay run" \
  "$work/old.json" -- "$work/same.json" -o "$work/bad.json"
expect_error "$work/old.json: target has no counters" "$work/base.json" -- "$work/old.json" -o "$work/bad.json"
expect_error "$work/short.json: baseline has 4 counter windows, regress needs at least 10" \
  "$work/short.json" -- "$work/same.json" -o "$work/bad.json"
expect_error "$work/five.json: window_s 5 differs from $work/base.json's 10: run both with one --window" \
  "$work/base.json" -- "$work/five.json" -o "$work/bad.json"
expect_error "$work/other.json: target has no label in common with baseline $work/base.json: results of different apps?" \
  "$work/base.json" -- "$work/other.json" -o "$work/bad.json"
expect_error "needs BASELINE... -- TARGET -o REGRESS.json" "$work/base.json" "$work/same.json" -o "$work/bad.json"
expect_error "needs BASELINE... -- TARGET -o REGRESS.json" "$work/base.json" -- "$work/same.json"
expect_error "--support '2': expected a number in (0, 1]" "$work/base.json" -- "$work/same.json" -o "$work/bad.json" --support 2
expect_error "--method 'vote': expected single, bagging or stacking" "$work/base.json" -- "$work/same.json" -o "$work/bad.json" --method vote
expect_error "$work/nope.json: cannot open" "$work/nope.json" -- "$work/same.json" -o "$work/bad.json"
# hostile but finite counter values (issue 24 item 2): a share of the CPU
# at 1e308 is refused naming the file, window, counter and bound; disk
# writes near DBL_MAX (no bound has a meaning for a rate) are flagged as
# the same shift at its real scale is (their sum overflowed: the counter's
# levels were NAN, "never measured", and nothing was flagged)
/usr/bin/python3 - "$work" <<'PY'
import json, sys
w = sys.argv[1]
for src, dst, name, f in (("base.json", "cpu.json", "cpu_user", lambda i, v: 1e308 if i == 3 else v),
                          ("base.json", "hbase.json", "disk_write_bytes_per_s", lambda i, v: v * 1e302),
                          ("base2.json", "hbase2.json", "disk_write_bytes_per_s", lambda i, v: v * 1e302),
                          ("disk.json", "hdisk.json", "disk_write_bytes_per_s", lambda i, v: min(v * 1e302, 1.79e308))):
    d = json.load(open(f"{w}/{src}"))
    k = d["counters"]["names"].index(name)
    for i, win in enumerate(d["counters"]["windows"]):
        win["values"][k] = f(i, win["values"][k])
    json.dump(d, open(f"{w}/{dst}", "w"))
PY
expect_error "$work/cpu.json: window 3: cpu_user is 1e+308, above its bound 1 (a share of the CPU time)" \
  "$work/base.json" -- "$work/cpu.json" -o "$work/bad.json"
expect_error "$work/cpu.json: window 3: cpu_user is 1e+308" "$work/cpu.json" -- "$work/base.json" -o "$work/bad.json"
"$PREPLAY_BIN" regress "$work/hbase.json" "$work/hbase2.json" -- "$work/hdisk.json" -o "$work/h.json" \
  --method single --quiet
/usr/bin/python3 - "$work/h.json" <<'PY'
import json, math, sys
d = json.load(open(sys.argv[1]), parse_constant=lambda c: sys.exit(f"regress.json holds {c}"))
assert [x["counter"] for x in d["flagged"]] == ["disk_write_bytes_per_s"], d["flagged"]
lv = d["levels"]["disk_write_bytes_per_s"]
assert all(isinstance(lv[k], float) and math.isfinite(lv[k]) for k in ("low", "high", "min", "median", "max")), lv
PY
echo "regress cli ok"
