#!/usr/bin/env bash
# tests/bench/tracer-db/run.sh BUILD_A BUILD_B [REPS] - the tracer's cost per
# DB statement with two builds' `preplay record` and preload library (e.g.
# main's and this tree's) and untraced, interleaved in the same run:
# bench_db_loop (from BUILD_B) through the C API wrappers (libmariadb.so)
# and the wire parser (libmariadb.a), small statements (`DO 1`, 4 threads x
# 5000) and ~11 KB INSERTs (4 threads x 1000). Prints the median wall and
# CPU ns per statement and peak RSS (KiB) of each, REPS runs each (default
# 7), and the load average before and after. A private MariaDB
# (tests/apps/db-start.sh) serves them; nothing is asserted.
set -euo pipefail
a=${1:?usage: run.sh BUILD_A BUILD_B [REPS]} b=${2:?usage: run.sh BUILD_A BUILD_B [REPS]}
reps=${3:-7}
here=$(cd "$(dirname "$0")" && pwd)
apps="$here/../../apps"
work=$(mktemp -d /tmp/preplay-bdb.XXXXXX)
trap '"$apps/db-stop.sh" "$work/db" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
"$apps/db-start.sh" "$work/db" >/dev/null 2>&1
sock="$work/db/mariadb.sock"
mariadb --no-defaults -S "$sock" -uroot -e "CREATE DATABASE bw; CREATE TABLE bw.t (id INT AUTO_INCREMENT PRIMARY KEY, v LONGTEXT)"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
run() { # variant build|- prog n threads kind -> "wall cpu rss"
  local build=$1; shift
  if [ "$build" = - ]; then
    "$@"
  else
    "$build/preplay" record -q --no-cpu-scores --db-socket mariadb.sock -o "$work/tr" -- "$@"
    rm -rf "$work/tr"
  fi | awk '{print $2, $4, $6}'
}
printf "%-8s %-6s %-10s %12s %12s %10s\n" path size tracer wall_ns cpu_ns rss_kib
for prog in dynamic static; do
  for kind in small big; do
    if [ $kind = small ]; then n=5000; else n=1000; fi
    for v in untraced A B; do : >"$work/$v"; done
    for ((r = 0; r < reps; r++)); do
      run - "$b/tests/bench/tracer-db/bench_db_loop_$prog" "$sock" $n 4 $kind >>"$work/untraced"
      run "$a" "$b/tests/bench/tracer-db/bench_db_loop_$prog" "$sock" $n 4 $kind >>"$work/A"
      run "$b" "$b/tests/bench/tracer-db/bench_db_loop_$prog" "$sock" $n 4 $kind >>"$work/B"
    done
    for v in untraced A B; do
      med() { sort -n | awk '{x[NR] = $1} END {print x[int((NR + 1) / 2)]}'; }
      printf "%-8s %-6s %-10s %12s %12s %10s\n" "$([ $prog = dynamic ] && echo capi || echo wire)" \
        $kind $v "$(cut -d' ' -f1 "$work/$v" | med)" "$(cut -d' ' -f2 "$work/$v" | med)" \
        "$(cut -d' ' -f3 "$work/$v" | med)"
    done
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "A = $a, B = $b"
