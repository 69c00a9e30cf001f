#!/usr/bin/env bash
# test-analyze-synthetic.sh - `preplay analyze` on a small synthetic
# two-tier recording (analyze_bench_gen, the benchmark's generator: front
# end with a worker pool on keep-alive connections, nested calls, file,
# lock, DB, CPU and external calls). (1) The short version of the
# benchmark: the plan holds exactly what the generator wrote (requests,
# blocks, calls, external calls, DB ops, coverage, no unmatched bytes, no
# violations), every front-end block calls exactly one app-tier block and
# every app-tier block is called once. No timing is asserted (that is
# tests/bench/analyze/run.sh). (2) Bad input, each with its exact message:
# a missing tier, two recordings mixed in one directory, a truncated trace
# and a truncated header (and --salvage on the truncated trace: what is
# valid, with the unclaimed callee blocks counted as unmatched bytes).
set -euo pipefail
bin=${PREPLAY_BIN:?PREPLAY_BIN not set}
gen=${ANALYZE_BENCH_GEN:?ANALYZE_BENCH_GEN not set (tests/bench/analyze builds analyze_bench_gen)}
work=$(mktemp -d /tmp/preplay-analyze-synthetic.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
field() { awk -v k="$1" '{for (i = 1; i < NF; i++) if ($i == k) print $(i + 1)}' <<<"$2"; }

# ---- (1) the plan is what the generator wrote ----
d=$work/rec
expect=$("$gen" gen "$d" --events 60000 --conns 80 --workers 6)
echo "generator: $expect"
req=$(field requests "$expect"); blocks=$(field blocks "$expect"); calls=$(field calls "$expect")
ext=$(field externals "$expect"); db=$(field db_ops "$expect"); events=$(field events "$expect")
"$bin" analyze "$d/frontend" "$d/apptier" -o "$work/plan" --blocks "$work/blocks.tsv" \
    >"$work/out" 2>"$work/err" || fail "analyze: $(cat "$work/err")"
cat "$work/out"
grep -qF "$work/plan: $req requests, $blocks blocks, $calls calls, $ext external calls, $db DB ops; coverage 100.00%" "$work/out" ||
    fail "summary differs from the generator"
grep -qF " 0 unmatched bytes, 0 violations ($events events)" "$work/out" || fail "unmatched bytes, violations or event count"
grep -qxF "preplay analyze: $ext calls went to untraced peers and became external calls (if a peer is a tier you meant to trace, its trace is missing)" \
    "$work/err" || fail "external-call warning: $(cat "$work/err")"
# the header names the columns of both line kinds (docs/preplay-analyze.md)
[ "$(head -2 "$work/blocks.tsv")" = "$(printf '# B\tid\tcomponent\tpid\ttid\tstart_ns\tend_ns\tflags\tcallees\tlabel\tworker\tplan_start_ns\tsockopts\tnodelay_calls\trecv_bytes\tsend_bytes\ttail_ns\n# R\tblock\tarrival_ns\tsession\tthink_ns')" ] ||
    fail "--blocks header: $(head -2 "$work/blocks.tsv")"
# nesting: B id component pid tid start end flags callees ...
awk -F'\t' '
    $1 == "B" && $3 == "frontend" { fe++; if ($9 == "-" || $9 ~ /,/) bad++; called[$9]++ }
    $1 == "B" && $3 == "apptier" { app[$2] = 1; napp++; if ($9 != "-") bad++ }
    $1 == "R" { r++; if (!($2 in seen)) seen[$2] = 1; else dup++ }
    END {
        for (b in app) if (called[b] != 1) { bad++; break }
        printf "%d %d %d %d %d\n", fe, napp, r, bad + 0, dup + 0
    }' "$work/blocks.tsv" >"$work/nest"
read -r fe napp r bad dup <"$work/nest"
[ "$fe" = "$req" ] && [ "$napp" = "$req" ] && [ "$r" = "$req" ] && [ "$bad" = 0 ] && [ "$dup" = 0 ] ||
    fail "nesting: $fe front-end blocks, $napp app-tier blocks, $r requests (want $req each), $bad bad, $dup duplicate"
"$bin" info --json "$work/plan" >"$work/info.json" || fail "preplay info --json"
jq -e --argjson r "$req" --argjson b "$blocks" \
    '.requests == $r and .blocks == $b and .coverage == 1 and .unmatched_bytes == 0 and .violations == 0 and
     ([.labels[]] | add) == $r' "$work/info.json" >/dev/null || fail "info --json: $(head -c 400 "$work/info.json")"
echo "ok: $req requests, each one front-end block calling one app-tier block"

# ---- (2) bad input ----
expect_error() { # exact-message command...
    local want=$1; shift
    local out
    if out=$("$@" 2>&1); then fail "succeeded: $* ($out)"; fi
    [ "$out" = "$want" ] || fail "expected '$want', got: $out"
    [ ! -e "$work/x.plan" ] || fail "a plan was written for bad input"
    echo "ok: $out"
}
# a missing tier: the calls become external calls, and the warning says so
"$bin" analyze "$d/frontend" -o "$work/fe.plan" >"$work/fe.out" 2>"$work/fe.err" || fail "front end alone: $(cat "$work/fe.err")"
grep -qxF "preplay analyze: $((calls + ext)) calls went to untraced peers and became external calls (if a peer is a tier you meant to trace, its trace is missing)" \
    "$work/fe.err" || fail "missing tier: $(cat "$work/fe.err")"
# ... and names them: the generator's app tier 10.0.0.2:9000 and cache 10.0.0.9:11211
grep -qxF "preplay analyze: the $((calls + ext)) external calls went to 10.0.0.2:9000 ($calls), 10.0.0.9:11211 ($ext)" \
    "$work/fe.err" || fail "missing tier: external calls by peer: $(cat "$work/fe.err")"
grep -qF ": $req requests, $req blocks, 0 calls, $((calls + ext)) external calls, 0 DB ops;" "$work/fe.out" ||
    fail "missing tier: $(cat "$work/fe.out")"
echo "ok: missing tier -> $((calls + ext)) external calls, warned"
# two recordings in one directory
mkdir "$work/mixed"
cp "$d/frontend/frontend-100.trace" "$d/apptier/apptier-200.trace" "$work/mixed/"
expect_error "preplay analyze: traces of two different recordings mixed in one directory: $work/mixed/apptier-200.trace (recording bench-app) and $work/mixed/frontend-100.trace (recording bench-web)" \
    "$bin" analyze "$work/mixed" -o "$work/x.plan"
# a truncated trace: the reader's message (file, offset, record); --salvage
# keeps the valid part
mkdir "$work/trunc"
f=$d/frontend/frontend-100.trace
head -c $(($(stat -c %s "$f") / 2)) "$f" >"$work/trunc/frontend-100.trace"
out=$("$bin" analyze "$work/trunc" "$d/apptier" -o "$work/x.plan" 2>&1) && fail "truncated trace accepted"
[[ $out =~ ^preplay\ analyze:\ $work/trunc/frontend-100\.trace:\ truncated\ frame\ at\ offset\ [0-9]+\ \(record\ [0-9]+\)$ ]] ||
    fail "truncated: $out"
[ ! -e "$work/x.plan" ] || fail "a plan was written for a truncated trace"
echo "ok: $out"
"$bin" analyze --salvage "$work/trunc" "$d/apptier" -o "$work/salv.plan" >"$work/salv.out" 2>"$work/salv.err" ||
    fail "--salvage: $(cat "$work/salv.err")"
grep -qxF "preplay analyze: salvaged: ${out#preplay analyze: }" "$work/salv.err" || fail "--salvage: $(cat "$work/salv.err")"
n=$(sed -n 's/.*: \([0-9]*\) requests,.*/\1/p' "$work/salv.out")
u=$(sed -n 's/.*, \([0-9]*\) unmatched bytes.*/\1/p' "$work/salv.out")
[ "$n" -gt 0 ] && [ "$n" -lt "$req" ] && [ "$u" -gt 0 ] ||
    fail "--salvage: expected some requests and the unclaimed app-tier blocks as unmatched bytes: $(cat "$work/salv.out")"
echo "ok: --salvage kept $n of $req requests; $u bytes of app-tier blocks nobody called are unmatched"
head -c 100 "$f" >"$work/trunc/frontend-100.trace"
expect_error "preplay analyze: $work/trunc/frontend-100.trace: truncated header (208 bytes announced, file has 100)" \
    "$bin" analyze "$work/trunc" "$d/apptier" -o "$work/x.plan"
# --salvage on a directory with unreadable trace files beside a valid one:
# each is skipped with a warning naming it, the valid one is analyzed whole;
# without --salvage the first is an error naming it; a directory with
# nothing readable is an error even with --salvage
mkdir "$work/junk"
cp "$d/frontend/frontend-100.trace" "$work/junk/"
: >"$work/junk/aa-empty.trace"
printf 'not a trace at all, really not' >"$work/junk/zz-junk.trace"
expect_error "preplay analyze: $work/junk/aa-empty.trace: not a preplay trace (empty file)" \
    "$bin" analyze "$work/junk" "$d/apptier" -o "$work/x.plan"
"$bin" analyze --salvage "$work/junk" "$d/apptier" -o "$work/junk.plan" >"$work/junk.out" 2>"$work/junk.err" ||
    fail "--salvage over junk trace files: $(cat "$work/junk.err")"
grep -qxF "preplay analyze: warning: skipped $work/junk/aa-empty.trace: not a preplay trace (empty file) (--salvage)" \
    "$work/junk.err" || fail "--salvage junk: $(cat "$work/junk.err")"
grep -qxF "preplay analyze: warning: skipped $work/junk/zz-junk.trace: not a preplay trace (bad magic) (--salvage)" \
    "$work/junk.err" || fail "--salvage junk: $(cat "$work/junk.err")"
n=$(sed -n 's/.*: \([0-9]*\) requests,.*/\1/p' "$work/junk.out")
[ "$n" -eq "$req" ] || fail "--salvage junk: $n requests, want all $req: $(cat "$work/junk.out")"
echo "ok: --salvage skipped 2 junk trace files and kept all $n requests"
expect_error "preplay analyze: $work/trunc: none of its 1 trace files could be read (the first: $work/trunc/frontend-100.trace: truncated header (208 bytes announced, file has 100))" \
    "$bin" analyze --salvage "$work/trunc" "$d/apptier" -o "$work/x.plan"
echo "PASS"
