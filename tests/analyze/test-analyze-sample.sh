#!/usr/bin/env bash
# test-analyze-sample.sh - `preplay analyze` on the sample app (tests/apps)
# recorded under `preplay record`, in both load modes: every front-end and
# app-tier request of the side logs is exactly one block with the right
# thread, label, schedule membership and nesting (check-blocks.py). Then bad
# input: an empty directory, two recordings mixed, a truncated trace (and
# --salvage on it), a missing tier (calls become external, warning), a
# recording filtered with --only/--port (warning).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=${PREPLAY_SOURCE_DIR:-$(cd "$here/../.." && pwd)}
bin=${PREPLAY_BIN:?PREPLAY_BIN not set}
export PREPLAY_BUILD_DIR=${PREPLAY_BUILD_DIR:-$(dirname "$bin")}
work=$(mktemp -d /tmp/preplay-analyze-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

run_mode() { # name loadgen-args...
    local name=$1; shift
    local d=$work/$name
    mkdir -p "$d"
    # --no-cpu-scores: the CPU kernels (~1.5 s per tier, ~7 s under ASan)
    # are not what this test checks (tests/replayer/test_calibrate_cli.sh is).
    # --ring-clock monotonic: check-blocks compares block bounds with the
    # side logs' clock_gettime to the nanosecond (a receive's end is often
    # <1 us before the app's clock read), so the trace must be timed with
    # that clock, not with the TSC conversion (within ~0.1 us of it,
    # docs/cpu-time.md; tracer_cpu and test_cpuclock cover the TSC)
    PREFIX="$bin record --no-cpu-scores --ring-clock monotonic -o $d/trace/{tier} -c {tier} --" \
        timeout 120 "$src/tests/apps/run-sample.sh" --dir "$d/run" --keep --timeout 60 -- \
        sh -c "\$SAMPLE_BIN_DIR/loadgen --port \$SAMPLE_PORT $* --csv \$SAMPLE_DIR/load.csv --quiet" \
        >"$d/run.out" 2>&1 || { cat "$d/run.out"; fail "$name: sample app run failed"; }
    "$bin" analyze "$d/trace/frontend" "$d/trace/apptier" -o "$d/plan" --blocks "$d/blocks.tsv" \
        >"$d/analyze.out" 2>"$d/analyze.err" || { cat "$d/analyze.err"; fail "$name: analyze failed"; }
    cat "$d/analyze.out"
    ! grep -F "clock went backwards" "$d/analyze.err" ||
        fail "$name: the recording's clock went backwards (record said: $(grep -h '^preplay' "$d/run/logs/"*.err))"
    python3 "$here/check-blocks.py" "$d/blocks.tsv" "$d/run/logs/frontend.sidelog" \
        "$d/run/logs/apptier.sidelog" || {
        grep -h '^preplay' "$d/run/logs/"*.err >&2 # the recorders' notes (clock, losses)
        fail "$name: blocks differ from the side logs"
    }
    local want
    want=$(($(wc -l <"$d/run/load.csv") - 1))
    grep -q ": $want requests," "$d/analyze.out" || fail "$name: expected $want requests"
    grep -q " 0 unmatched bytes, 0 violations" "$d/analyze.out" || fail "$name: unmatched bytes or violations"
    [ -s "$d/plan" ] || fail "$name: no plan written"
}

run_mode open --rate 40 --duration 3
run_mode session --mode session --sessions 4 --duration 3

# --- bad input ---
expect_error() { # expected-substring command...
    local want=$1; shift
    local out
    if out=$("$@" 2>&1); then fail "succeeded: $* ($out)"; fi
    echo "$out" | grep -qF -- "$want" || fail "expected '$want', got: $out"
    echo "ok: $out"
}
mkdir -p "$work/empty"
expect_error "$work/empty: no trace files (*.trace) in this directory" \
    "$bin" analyze "$work/empty" -o "$work/x.plan"
[ ! -e "$work/x.plan" ] || fail "a plan was written for bad input"

# two recordings in one directory
mkdir -p "$work/mixed"
cp "$work/open/trace/frontend/"*.trace "$work/open/trace/apptier/"*.trace "$work/mixed/"
fe=$(ls "$work/mixed/"frontend-*.trace); ap=$(ls "$work/mixed/"apptier-*.trace)
expect_error "traces of two different recordings mixed in one directory: $ap (recording" \
    "$bin" analyze "$work/mixed" -o "$work/x.plan"

# truncated trace: error names the file; --salvage keeps what is valid
mkdir -p "$work/trunc"
f=$(ls "$work/open/trace/frontend/"*.trace)
size=$(stat -c %s "$f")
head -c $((size * 2 / 3)) "$f" >"$work/trunc/$(basename "$f")"
expect_error "$work/trunc/$(basename "$f")" "$bin" analyze "$work/trunc" "$work/open/trace/apptier" -o "$work/x.plan"
"$bin" analyze --salvage "$work/trunc" "$work/open/trace/apptier" -o "$work/salv.plan" \
    >"$work/salv.out" 2>"$work/salv.err" || { cat "$work/salv.err"; fail "--salvage failed"; }
grep -q "salvaged: " "$work/salv.err" || fail "--salvage did not say what it dropped"
n=$(sed -n 's/.*: \([0-9]*\) requests,.*/\1/p' "$work/salv.out")
[ "$n" -gt 0 ] && [ "$n" -lt "$(($(wc -l <"$work/open/run/load.csv") - 1))" ] ||
    fail "--salvage: expected some but not all requests, got $n"
echo "ok: salvage kept $n requests"

# missing tier: only the front end; fanout calls become external calls
"$bin" analyze "$work/open/trace/frontend" -o "$work/fe.plan" >"$work/fe.out" 2>"$work/fe.err" ||
    fail "front end alone failed: $(cat "$work/fe.err")"
grep -q "calls went to untraced peers and became external calls (if a peer is a tier you meant to trace, its trace is missing)" \
    "$work/fe.err" || fail "no missing-tier warning: $(cat "$work/fe.err")"
grep -q " 0 calls, [1-9][0-9]* external calls" "$work/fe.out" || fail "fanouts not external: $(cat "$work/fe.out")"
# a recording in which no request was answered has no front end
mkdir -p "$work/nofe"
head -c 800 "$f" >"$work/nofe/$(basename "$f")"
expect_error "no front end: no traced component answered a request from an untraced client" \
    "$bin" analyze --salvage "$work/nofe" -o "$work/x.plan"
# a recording filtered with --only: analyze says so, before the "no front end" it explains
"$bin" record -q --no-cpu-scores --only file,cpu --port 80 -o "$work/only" -- /bin/true ||
    fail "record --only file,cpu of /bin/true failed"
expect_error "was recorded with '--only file,cpu --port 80': what those options left out is not in the plan" \
    "$bin" analyze "$work/only" -o "$work/x.plan"
echo "PASS"
