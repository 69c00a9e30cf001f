#!/usr/bin/env bash
# tests/bench/tracer/cpu-clock.sh [--reps N] [BUILD_DIR] - the CPU clocks of
# `preplay record --cpu-clock` head to head (issue 23, direction 1), every
# figure against a baseline measured in the same run, the load average
# printed beside each row:
#   1. added ns per traced call (pipe ping-pong round trip, 64-byte write,
#      mutex lock+unlock with --no-lock-folding) for gap, bpf and thread:
#      untraced and traced runs alternate, the added cost is the median of
#      the paired differences;
#   2. the machine-wide cost: what bpf's sched_switch program costs every
#      context switch of the machine while a recording of a sleep runs
#      (kernel.bpf_stats_enabled: runs and ns per run); gap and thread load
#      no program;
#   3. CPU-time fidelity: 4 busy threads on 2 cores, traced writes every
#      2-60k spins (bench_tracer_loops fidelity), per clock: the worst
#      per-thread error of every run (target <= 2% in every run).
# Never a ctest: it times things. Fails only when it cannot measure.
set -euo pipefail

reps=5
build=
while [ $# -gt 0 ]; do
  case $1 in
    --reps) reps=$2; shift ;;
    -h | --help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "cpu-clock.sh: unknown option '$1'" >&2; exit 2 ;;
    *) build=$1 ;;
  esac
  shift
done
script_dir=$(cd "$(dirname "$0")" && pwd)
build=${build:-$script_dir/../../../build/release}
preplay=$build/preplay
loops=$build/tests/bench/tracer/bench_tracer_loops
fail() { echo "cpu-clock.sh: $*" >&2; exit 1; }
[ -x "$preplay" ] || fail "no preplay at $preplay"
[ -x "$loops" ] || fail "no bench_tracer_loops at $loops"
command -v jq >/dev/null || fail "jq not found"
[ "$(id -u)" = 0 ] || fail "run as root (the bpf clock needs it)"

work=$(mktemp -d /tmp/preplay-cpu-clock.XXXXXX)
trap 'rm -rf "$work"' EXIT
clocks=(gap bpf thread)
load() { cut -d' ' -f1-3 /proc/loadavg; }
median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
range() { tr ' ' '\n' | grep . | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%s..%s", lo, hi }'; }
median_of() { sed -n 's/.* median_ns=\([0-9.]*\).*/\1/p' <<<"$1"; }
calc() { awk "BEGIN { printf \"%.${2:-1}f\", $1 }"; }
rec() { # CLOCK OUT -- CMD...: a quiet recording with that clock
  local clock=$1 out=$2
  shift 3
  timeout 300 "$preplay" record -q --no-cpu-scores --no-lock-folding --cpu-clock "$clock" -o "$out" -- "$@"
}

echo "preplay CPU clocks - $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(uname -r), load average at start: $(load)"

# ---- 1. added ns per traced call ------------------------------------------
echo
echo "== 1. added ns per traced call: median of $reps untraced/traced pairs per clock, each the median of 5 runs =="
printf '%-16s %-8s %10s %12s %18s %s\n' loop clock untraced added "added (range)" "load avg"
for m in pingpong write mutex; do
  iters=200000
  div=1
  case $m in
    pingpong) iters=20000 ;;
    mutex) div=2 ;;
  esac
  for clock in "${clocks[@]}"; do
    bases="" adds=""
    for _ in $(seq "$reps"); do
      b=$(median_of "$(timeout 120 "$loops" loop "$m" "$iters" 5 "$work")")
      t=$(median_of "$(rec "$clock" "$work/t" -- "$loops" loop "$m" "$iters" 5 "$work")")
      rm -rf "$work/t"
      [[ $b =~ ^[0-9.]+$ && $t =~ ^[0-9.]+$ ]] || fail "$m with $clock: no median (untraced '$b', traced '$t')"
      bases+=" $(calc "$b / $div" 1)"
      adds+=" $(calc "($t - $b) / $div" 1)"
    done
    printf '%-16s %-8s %10s %12s %18s %s\n' "$m" "$clock" "$(median <<<"$bases")" \
      "$(median <<<"$adds")" "$(range <<<"$adds")" "$(load)"
  done
done
echo "(ns per call: a ping-pong round trip, a write, a lock or unlock operation)"

# ---- 2. machine-wide cost --------------------------------------------------
# The bpf clock's sched_switch program runs on every context switch of the
# machine, traced or not; kernel.bpf_stats_enabled makes the kernel count
# its runs and their time (switched back off after). The gap and thread
# clocks load no program: their cost is only in the traced threads.
echo
echo "== 2. machine-wide cost: the bpf clock's sched_switch program while 'preplay record --cpu-clock bpf -- sleep' runs, 10 s per sample, $reps samples =="
printf '%-10s %14s %12s %16s %s\n' sample "switches/s" "ns/switch" "CPU ms/s (all)" "load avg"
stats_before=$(sysctl -n kernel.bpf_stats_enabled)
sysctl -qw kernel.bpf_stats_enabled=1
prog_stat() { # PID KEY: the sum of KEY over the BPF programs PID holds
  local f sum=0 v
  for f in /proc/"$1"/fdinfo/*; do
    v=$(awk -v k="$2:" '$1 == "prog_type:" { p = 1 } p && $1 == k { print $2 }' "$f" 2>/dev/null || true)
    [ -n "$v" ] && sum=$((sum + v))
  done
  echo "$sum"
}
per_switch="" per_s=""
for i in $(seq "$reps"); do
  "$preplay" record -q --no-cpu-scores --cpu-clock bpf -o "$work/s" -- sleep 13 &
  recpid=$!
  sleep 1.5
  t0=$(prog_stat "$recpid" run_time_ns) n0=$(prog_stat "$recpid" run_cnt)
  sleep 10
  t1=$(prog_stat "$recpid" run_time_ns) n1=$(prog_stat "$recpid" run_cnt)
  wait "$recpid" || fail "the bpf recording of sleep failed"
  rm -rf "$work/s"
  [ "$n1" -gt "$n0" ] || { sysctl -qw kernel.bpf_stats_enabled="$stats_before"; fail "the sched_switch program did not run (run_cnt $n0 -> $n1)"; }
  ns=$(calc "($t1 - $t0) / ($n1 - $n0)" 1)
  per_switch+=" $ns" per_s+=" $(calc "($n1 - $n0) / 10" 0)"
  printf '%-10s %14s %12s %16s %s\n' "$i" "$(calc "($n1 - $n0) / 10" 0)" "$ns" "$(calc "($t1 - $t0) / 10 / 1e6" 2)" "$(load)"
done
sysctl -qw kernel.bpf_stats_enabled="$stats_before"
echo "median: $(median <<<"$per_s") switches/s, $(median <<<"$per_switch") ns per switch (range $(range <<<"$per_switch")); gap and thread: no program"
echo "(bpf_stats adds its own two clock reads per run to the time it reports)"

# ---- 3. CPU-time fidelity -------------------------------------------------
echo
echo "== 3. CPU-time fidelity: 4 busy threads on 2 cores for 3000 ms, traced writes every 2-60k spins; worst thread per run =="
printf '%-8s %-40s %8s %s\n' clock "worst error per run, %" max "load avg"
for clock in "${clocks[@]}"; do
  errs=""
  for _ in $(seq "$reps"); do
    out=$(rec "$clock" "$work/fid" -- "$loops" fidelity 4 2 3000)
    "$preplay" info --json "$work/fid" | jq -r '.process_list[].threads[] | "\(.tid) \(.cpu_ns)"' >"$work/fid.trace"
    e=$(awk 'NR == FNR { trace[$1] = $2; next }
      { split($1, a, "="); split($2, b, "="); tid = a[2]; truth = b[2]
        if (!(tid in trace) || truth <= 0) { print "missing"; exit }
        r = (trace[tid] - truth) / truth; if (r < 0) r = -r; if (r > m) m = r; n++ }
      END { if (n == 4) printf "%.3f", 100 * m }' "$work/fid.trace" - <<<"$out")
    [[ $e =~ ^[0-9.]+$ ]] || fail "fidelity with $clock: a thread is missing ($out)"
    errs+=" $e"
    rm -rf "$work/fid"
  done
  printf '%-8s %-40s %8s %s\n' "$clock" "$errs" "$(tr ' ' '\n' <<<"$errs" | grep . | sort -g | tail -1)" "$(load)"
done
echo "(target: <= 2% in every run)"
