#!/usr/bin/env bash
# run_bench.sh - trace format benchmark: median of RUNS runs of
# bench_trace_format (write/read events/s, bytes/event) with ratios against
# the raw-struct + zstd baseline measured in the same runs.
# Usage: run_bench.sh [BUILD_DIR] [EVENTS] [RUNS]
# Targets (issue 2): >= 2 M events/s written on one core, <= 8 bytes/event.
set -euo pipefail
build=${1:-${PREPLAY_BUILD_DIR:-build/release}}
events=${2:-2000000}
runs=${3:-5}
bin="$build/tests/bench/formats/bench_trace_format"
[ -x "$bin" ] || { echo "run_bench.sh: $bin not built (cmake --build $build --target bench_trace_format)" >&2; exit 1; }
out=$(for _ in $(seq "$runs"); do taskset -c 0 "$bin" "$events"; done)
echo "$out" | python3 -c '
import sys, statistics as s
rows = [dict(zip(l.split()[::2], map(float, l.split()[1::2]))) for l in sys.stdin if l.strip()]
med = lambda k: s.median(r[k] for r in rows)
w, r, b = med("write_eps"), med("read_eps"), med("bytes_per_event")
bw, bb = med("baseline_write_eps"), med("baseline_bytes_per_event")
n = int(rows[0]["events"])
print("trace format, %d events, median of %d runs (one core)" % (n, len(rows)))
print("%-24s%14s%14s%10s" % ("", "preplay", "raw+zstd", "ratio"))
print("%-24s%14.0f%14.0f%10.2f" % ("write events/s", w, bw, w / bw))
print("%-24s%14.0f" % ("read events/s", r))
print("%-24s%14.3f%14.3f%10.3f" % ("bytes/event", b, bb, b / bb))
print("targets: write >= 2,000,000 events/s: %s; <= 8 bytes/event: %s"
      % ("met" if w >= 2e6 else "MISSED", "met" if b <= 8 else "MISSED"))
'
