#!/usr/bin/env bash
# tests/bench/analyze/run.sh - throughput and memory of `preplay analyze`
# from compressed trace to plan, on synthetic two-tier recordings
# (analyze_bench_gen: a front end with a worker pool on several hundred
# keep-alive connections, nested calls to an app tier, file, lock, DB, CPU
# and external calls in every request) at two lengths, N and 4N events.
#
# Per length, REPS interleaved repetitions (pinned to one core with
# taskset) of: the baseline (decode-only: every event of the same files
# through the trace reader, nothing else), then `preplay analyze`. Prints
# medians of events/s, the analyze/decode time ratio, and peak RSS; the
# 4N run's RSS must stay ~ the N run's (memory bounded by open connections
# and in-flight blocks, not by trace length). Also checks each plan's
# summary against what the generator wrote (requests, blocks, calls...).
#
#   tests/bench/analyze/run.sh [--build DIR] [--events N] [--reps R] [--cpu C] [--keep]
#
# Long (minutes): run by hand, results in docs/bench-analyze.md. The short
# version that runs in ctest is tests/analyze/test-analyze-bench-short.sh.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../../.." && pwd)
build=$src/build/release
events=20000000
reps=3
cpu=1
keep=0
while [ $# -gt 0 ]; do
    case $1 in
    --build) build=$2; shift 2 ;;
    --events) events=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --cpu) cpu=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    *) echo "usage: $0 [--build DIR] [--events N] [--reps R] [--cpu C] [--keep]" >&2; exit 2 ;;
    esac
done
bin=$build/preplay
gen=$build/tests/bench/analyze/analyze_bench_gen
for x in "$bin" "$gen"; do
    [ -x "$x" ] || { echo "run.sh: $x missing (cmake --build $build)" >&2; exit 1; }
done
command -v taskset >/dev/null || { echo "run.sh: taskset missing (util-linux)" >&2; exit 1; }
work=$(mktemp -d /tmp/preplay-bench-analyze.XXXXXX)
[ $keep -eq 1 ] || trap 'rm -rf "$work"' EXIT

median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
field() { # name line -> the value after "name "
    awk -v k="$1" '{for (i = 1; i < NF; i++) if ($i == k) print $(i + 1)}' <<<"$2"
}

echo "# preplay analyze benchmark: $(date -u +%FT%TZ), $(nproc) cores, pinned to CPU $cpu"
echo "# load before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-6s %11s %9s %12s %12s %12s %7s %12s\n' length events trace_MB decode_ev/s analyze_ev/s analyze_wall ratio peak_RSS_MB
for mult in 1 4; do
    n=$((events * mult))
    d=$work/n$mult
    expect=$("$gen" gen "$d" --events "$n")
    want_events=$(field events "$expect")
    mb=$(du -sm "$d" | cut -f1)
    dec=() ana=() wall=() rss=() ratio=()
    for ((r = 0; r < reps; r++)); do
        "$gen" rusage taskset -c "$cpu" "$gen" decode "$d/frontend" "$d/apptier" >"$d/decode.out" 2>"$d/decode.err"
        [ "$(field events "$(cat "$d/decode.out")")" = "$want_events" ] ||
            { echo "decode: $(cat "$d/decode.out" "$d/decode.err"), expected $want_events events" >&2; exit 1; }
        ru=$(grep '^wall_s' "$d/decode.err")
        dsec=$(awk -v u="$(field user_s "$ru")" -v s="$(field sys_s "$ru")" 'BEGIN {print u + s}')
        "$gen" rusage taskset -c "$cpu" "$bin" analyze "$d/frontend" "$d/apptier" -o "$d/plan" \
            >"$d/analyze.out" 2>"$d/analyze.err" || { cat "$d/analyze.err" >&2; exit 1; }
        ru=$(grep '^wall_s' "$d/analyze.err")
        asec=$(awk -v u="$(field user_s "$ru")" -v s="$(field sys_s "$ru")" 'BEGIN {print u + s}')
        wall+=("$(awk -v e="$want_events" -v s="$(field wall_s "$ru")" 'BEGIN {printf "%.0f", e / s}')")
        dec+=("$(awk -v e="$want_events" -v s="$dsec" 'BEGIN {printf "%.0f", e / s}')")
        ana+=("$(awk -v e="$want_events" -v s="$asec" 'BEGIN {printf "%.0f", e / s}')")
        ratio+=("$(awk -v a="$asec" -v s="$dsec" 'BEGIN {printf "%.2f", a / s}')")
        rss+=("$(field maxrss_kb "$ru")")
    done
    # the plan is what the generator wrote
    sum=$(cat "$d/analyze.out")
    want=": $(field requests "$expect") requests, $(field blocks "$expect") blocks, $(field calls "$expect") calls, $(field externals "$expect") external calls, $(field db_ops "$expect") DB ops; coverage 100.00%"
    grep -qF -- "$want" <<<"$sum" && grep -qF " 0 unmatched bytes, 0 violations ($want_events events)" <<<"$sum" ||
        { echo "plan differs from the generator ($expect): $sum" >&2; exit 1; }
    printf '%-6s %11s %9s %12s %12s %12s %7s %12s\n' "${mult}N" "$want_events" "$mb" \
        "$(printf '%s\n' "${dec[@]}" | median)" "$(printf '%s\n' "${ana[@]}" | median)" \
        "$(printf '%s\n' "${wall[@]}" | median)" \
        "$(printf '%s\n' "${ratio[@]}" | median)" \
        "$(printf '%s\n' "${rss[@]}" | median | awk '{printf "%.1f", $1 / 1024}')"
    rm -rf "$d/frontend" "$d/apptier"
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# medians of $reps, interleaved; events/s from CPU time (user+sys) of the pinned process"
echo "# (analyze_wall: from wall time, includes waiting for the core); ratio = analyze CPU"
echo "# time / decode-only CPU time on the same files (the baseline: reading them at all)"
echo "# target (issue #3): >= 3 M events/s on one core; 4N peak RSS ~ N peak RSS"
