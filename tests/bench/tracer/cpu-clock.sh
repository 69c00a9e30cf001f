#!/usr/bin/env bash
# tests/bench/tracer/cpu-clock.sh [--reps N] [BUILD_DIR] - the CPU clocks of
# `preplay record --cpu-clock` head to head (issue 23, direction 1), every
# figure against a baseline measured in the same run, the load average
# printed beside each row:
#   1. added ns per traced call (pipe ping-pong round trip, 64-byte write,
#      mutex lock+unlock with --no-lock-folding) for gap, bpf and thread:
#      untraced and traced runs alternate, the added cost is the median of
#      the paired differences;
#   2. the machine-wide cost: an UNTRACED ping-pong while a recording of
#      something else (a sleep) is running with each clock, against the
#      same ping-pong with no recording (bpf's sched_switch program runs on
#      every context switch of the machine; gap has no such hook);
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
    -h | --help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
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

# ---- 2. machine-wide cost on an untraced process --------------------------
echo
echo "== 2. an UNTRACED ping-pong round trip while a recording of 'sleep' runs with each clock, vs none: median of $reps pairs =="
printf '%-8s %12s %12s %18s %s\n' clock none with added "load avg"
for clock in "${clocks[@]}"; do
  bases="" withs="" adds=""
  for _ in $(seq "$reps"); do
    b=$(median_of "$(timeout 120 "$loops" loop pingpong 20000 5 "$work")")
    "$preplay" record -q --no-cpu-scores --cpu-clock "$clock" -o "$work/s" -- sleep 30 &
    recpid=$!
    sleep 1.5 # the BPF program is attached once record has started its command
    w=$(median_of "$(timeout 120 "$loops" loop pingpong 20000 5 "$work")")
    kill -TERM "$recpid" 2>/dev/null || true
    wait "$recpid" 2>/dev/null || true
    rm -rf "$work/s"
    bases+=" $b" withs+=" $w" adds+=" $(calc "$w - $b" 1)"
  done
  printf '%-8s %12s %12s %18s %s\n' "$clock" "$(median <<<"$bases")" "$(median <<<"$withs")" \
    "$(median <<<"$adds") ($(range <<<"$adds"))" "$(load)"
done

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
  printf '%-8s %-40s %8s %s\n' "$clock" "$errs" "$(tr ' ' '\n' | grep . | sort -g | tail -1 <<<"$errs")" "$(load)"
done
echo "(target: <= 2% in every run)"
