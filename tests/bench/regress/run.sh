#!/usr/bin/env bash
# tests/bench/regress/run.sh - evaluation of `preplay regress` (issue 25,
# Foo's thesis ch. 5-6 Table 6-4): faults injected the thesis's way into
# replays of the hand-built two-tier plan, each with its expected
# problematic counters written below before any run, and precision,
# recall and F (Eq. 6-4, 6-5) per scenario and method, printed as a table.
#   normal     another normal run                     expected: nothing
#   cpu_hog    4 busy processes per CPU beside the run expected: response times, run queue up
#   busy_loop  every block's CPU x3 (--cpu-ratio 3:   expected: response times, run's CPU up
#              a busy loop in every request)
#   cpu_quota  inside tools/emulate, 1 CPU at a 5%    expected: response times up
#              CFS quota (a type too slow for the load; needs root)
# Baselines: two normal runs. Methods: the thesis's (single 3-level, single
# equal-width, bagging and stacking equal-width, --alpha 1) and the
# default (stacking 3-level, --alpha 0.001). Usage: run.sh [BUILD_DIR]
# (default build/release); about 3 minutes. Prints the load average.
# --min-windows 5: in the starved type the sampler (inside it too) closes
# fewer, longer windows.
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
build=${1:-$src/build/release}
preplay=$build/preplay
work=$(mktemp -d /tmp/bench-regress-XXXXXX)
hogs=()
cleanup() {
  for p in "${hogs[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
RT='median_s:GET /fast|median_s:POST /slow|p95_s:GET /fast|p95_s:POST /slow'
declare -A expected=(
  [normal]=''
  [cpu_hog]="$RT|run_queue"
  [busy_loop]="$RT|run_cpu"
  [cpu_quota]="$RT"
)
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$build/tests/replay/replay_make_plan" two-tier "$work/plan"
runargs=(--max-intervals 2 --interval 10s --p0 0.99999 --window 1s --cpu-ratio 1)
run() { # name [extra args]
  local name=$1
  shift
  "$preplay" run "$work/plan" "${runargs[@]}" "$@" -o "$work/$name.json" 2>"$work/$name.err" ||
    { tail -3 "$work/$name.err" >&2; exit 1; }
}
run base1
run base2
run normal
for _ in $(seq $((4 * $(nproc)))); do
  sha256sum /dev/zero &
  hogs+=($!)
done
run cpu_hog
for p in "${hogs[@]}"; do kill "$p"; done
hogs=()
run busy_loop --cpu-ratio 3
scenarios=(normal cpu_hog busy_loop)
if [[ $(id -u) == 0 ]]; then
  printf 'regress-slow 0 5 20000 - - - - 1000mbit\n' >"$work/types.conf"
  "$src/tools/emulate" --types "$work/types.conf" --timeout 120 regress-slow -- \
    "$preplay" run "$work/plan" "${runargs[@]}" --instance regress-slow -o "$work/cpu_quota.json" \
    2>"$work/cpu_quota.err" || { tail -3 "$work/cpu_quota.err" >&2; exit 1; }
  scenarios+=(cpu_quota)
else
  echo "cpu_quota skipped: tools/emulate needs root"
fi
methods=("single 3level 1" "single ew 1" "bagging ew 1" "stacking ew 1" "stacking 3level 0.001")
for s in "${scenarios[@]}"; do
  for m in "${methods[@]}"; do
    read -r meth disc alpha <<<"$m"
    "$preplay" regress "$work/base1.json" "$work/base2.json" -- "$work/$s.json" \
      -o "$work/$s.$meth.$disc.$alpha.r.json" --method "$meth" --discretize "$disc" --alpha "$alpha" \
      --min-windows 5 --quiet
  done
  printf '%s\t%s\n' "$s" "${expected[$s]}" >>"$work/expected.tsv"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/python3 "$src/tests/bench/regress/table.py" "$work" "${methods[@]}"
