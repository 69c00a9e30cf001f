#!/usr/bin/env bash
# test_unprivileged.sh - preplay's own commands run as an unprivileged user
# (nobody, through setpriv) where that is meant to work (docs/DEVELOPING.md,
# "Who needs root"): info and dump of a trace and a plan, analyze, stats,
# compare with its report, and also record (its CPU clock falls back, and
# it says so), prepare and a local run. Each must exit 0 and write what it
# writes. What needs root says so in one line: tools/emulate (cgroups,
# network namespaces). Starts as root (to become nobody); ~10 s.
set -euo pipefail
: "${PREPLAY_BIN:?}" "${PREPLAY_BUILD_DIR:?}" "${PREPLAY_SOURCE_DIR:?}" "${ANALYZE_BENCH_GEN:?}"
if [[ $(id -u) != 0 ]]; then echo "test_unprivileged: starts as root to become nobody"; exit 1; fi
work=$(mktemp -d /tmp/preplay-unprivileged.XXXXXX)
trap 'rm -rf "$work"' EXIT
chmod 0755 "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
B=$PREPLAY_BIN
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"; }
mine() { # mine WHAT PATH: written, and by nobody
    [[ -s $2 ]] || fail "$1: $2 not written"
    [[ $(stat -c %u "$2") == 65534 ]] || fail "$1: $2 belongs to uid $(stat -c %u "$2")"
}
# the binary must be reachable by nobody (a build under /root would not be)
as_nobody "$B" --help >/dev/null 2>&1 || as_nobody test -x "$B" ||
    fail "nobody cannot run $B (build it where every user can read it)"

# inputs made as root, readable by everyone (as a user would copy them)
"$ANALYZE_BENCH_GEN" gen "$work/rec" --events 3000 --conns 8 --workers 2 >/dev/null
"$PREPLAY_BUILD_DIR/tests/replay/replay_make_plan" two-tier "$work/two-tier.plan"
/usr/bin/python3 "$PREPLAY_SOURCE_DIR/tests/compare/make_results.py" "$work/a.json" small 0.05 2.0 hand-built
/usr/bin/python3 "$PREPLAY_SOURCE_DIR/tests/compare/make_results.py" "$work/b.json" large 0.20 1.0 hand-built --seed 2
/usr/bin/python3 -c 'import random; r = random.Random(1); print("\n".join("%.4f" % r.lognormvariate(0, 0.3) for _ in range(300)))' >"$work/samples"
chmod -R a+rX "$work"
out=$work/out
mkdir "$out"
chown 65534:65534 "$out"
cd "$out"

# record: works; the default CPU clock (gap) needs no privilege, the BPF
# one needs root: asked for, record says the gap clock runs instead
as_nobody "$B" record --no-cpu-scores -o "$out/t" -- /bin/sh -c 'echo hi >/dev/null' 2>"$out/rec.err" ||
    fail "record as nobody: $(cat "$out/rec.err")"
grep -q "cpu-clock" "$out/rec.err" && fail "record as nobody with the gap clock spoke of the CPU clock: $(cat "$out/rec.err")"
as_nobody "$B" record --no-cpu-scores --cpu-clock bpf -o "$out/t-bpf" -- /bin/sh -c 'echo hi >/dev/null' 2>"$out/rec-bpf.err" ||
    fail "record --cpu-clock bpf as nobody: $(cat "$out/rec-bpf.err")"
grep -q "cpu-clock bpf is not available (.*): CPU time per thread uses the gap clock" "$out/rec-bpf.err" ||
    fail "record --cpu-clock bpf as nobody does not say it uses the gap clock: $(cat "$out/rec-bpf.err")"
trace=$(ls "$out"/t/*.trace | head -1)
mine record "$trace"

as_nobody "$B" info "$trace" >"$out/info.txt" || fail "info of a trace as nobody"
grep -q "events" "$out/info.txt" || fail "info said: $(cat "$out/info.txt")"
as_nobody "$B" dump "$trace" >"$out/dump.txt" || fail "dump of a trace as nobody"
[[ -s $out/dump.txt ]] || fail "dump printed nothing"

as_nobody "$B" analyze -q "$work/rec/frontend" "$work/rec/apptier" -o "$out/app.plan" \
    --blocks "$out/blocks.tsv" || fail "analyze as nobody"
mine analyze "$out/app.plan"
mine "analyze --blocks" "$out/blocks.tsv"
as_nobody "$B" info "$out/app.plan" >/dev/null || fail "info of a plan as nobody"

as_nobody "$B" stats pt4cloud --per-interval 100 --svg "$out/d.svg" "$work/samples" >/dev/null ||
    fail "stats pt4cloud as nobody"
mine "stats --svg" "$out/d.svg"
as_nobody "$B" stats similarity "$work/samples" "$work/samples" >/dev/null || fail "stats similarity as nobody"

as_nobody "$B" compare "$work/a.json" "$work/b.json" -o "$out/report.html" >/dev/null ||
    fail "compare as nobody"
mine "compare -o" "$out/report.html"

as_nobody "$B" prepare "$work/two-tier.plan" --dir "$out/dummies" >/dev/null || fail "prepare as nobody"
as_nobody "$B" run "$work/two-tier.plan" --max-intervals 1 --interval 1s --instance local \
    --price 0.1 --dir "$out/dummies" -o "$out/run.json" 2>"$out/run.err" ||
    fail "run as nobody: $(cat "$out/run.err")"
mine run "$out/run.json"

# what needs root says so
rc=0
as_nobody "$PREPLAY_SOURCE_DIR/tools/emulate" small -- /bin/true 2>"$out/emu.err" || rc=$?
[[ $rc != 0 ]] || fail "tools/emulate ran as nobody"
grep -qx "emulate: needs root (cgroups, network namespaces)" "$out/emu.err" ||
    fail "tools/emulate as nobody said: $(cat "$out/emu.err")"
echo "unprivileged: record, info, dump, analyze, stats, compare, prepare, run work as nobody"
