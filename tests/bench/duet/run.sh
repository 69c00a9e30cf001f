#!/usr/bin/env bash
# tests/bench/duet/run.sh [RUNS] [ITERATIONS] [--unpinned] - duet against
# sequential measurement on this machine under a synthetic noisy neighbour
# (hog.py: a CPU and memory hog switching on and off at random, one worker
# pinned per CPU unless --unpinned), Bulej et al.'s Table I question:
# which procedure gives the narrower interval?
#   1. A/A, duet and --sequential (randomized interleaving), same runs,
#      iterations and seed: the 99% interval width per label and overall,
#      and the ratio sequential / duet (> 1: duet is narrower);
#   2. A/B with B = A with 5% more CPU per block (duet_plan_scale_cpu),
#      both procedures: B/A, the interval, and whether B was found slower;
#   3. the same A/B duet without the hog (only this machine's own load).
# The two-tier hand-built plan (tests/replay/make_plan.c). The load
# average is printed before and after: other work on this shared machine
# is noise too. Needs a release build in build/release (or BUILD=dir).
# Defaults: 10 runs of 5 iterations (about 14 minutes in all).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
build=${BUILD:-$root/build/release}
runs=${1:-10} iters=${2:-5} hogopt=${3:-}
preplay=$build/preplay
work=$(mktemp -d /tmp/bench-duet-XXXXXX)
hog_pid=
cleanup() {
  [ -n "$hog_pid" ] && kill "$hog_pid" 2>/dev/null && wait "$hog_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
"$build/tests/replay/replay_make_plan" two-tier "$work/a.plan"
"$build/tests/duet/duet_plan_scale_cpu" "$work/a.plan" "$work/b.plan" 1.05 >/dev/null
echo "duet benchmark: $runs runs x $iters iterations (+1 warm-up) each, two-tier plan, $(nproc) CPUs, hog ${hogopt:-pinned one per CPU}"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

one() { # NAME ARGS... : a duet under the hog (no hog for NAME *-quiet)
  local name=$1
  shift
  if [ "${name%-quiet}" = "$name" ]; then
    /usr/bin/python3 "$here/hog.py" 3600 7 $hogopt >"$work/$name.hog" &
    hog_pid=$!
  fi
  local t0=$SECONDS
  "$preplay" duet "$@" --runs "$runs" --iterations "$iters" --seed 11 -o "$work/$name.json" \
    2>"$work/$name.err" || { cat "$work/$name.err" >&2; exit 1; }
  if [ -n "$hog_pid" ]; then
    kill "$hog_pid"
    wait "$hog_pid" 2>/dev/null || true
    hog_pid=
  fi
  echo "$name: $((SECONDS - t0)) s" >>"$work/times"
}
one aa-duet "$work/a.plan" --aa
one aa-seq "$work/a.plan" --aa --sequential
one ab-duet "$work/a.plan" "$work/b.plan"
one ab-seq "$work/a.plan" "$work/b.plan" --sequential
one ab-duet-quiet "$work/a.plan" "$work/b.plan"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
sed 's/^/took: /' "$work/times"
python3 - "$work" <<'PY'
import json, sys
w = sys.argv[1]
doc = {n: json.load(open(f"{w}/{n}.json")) for n in ("aa-duet", "aa-seq", "ab-duet", "ab-seq", "ab-duet-quiet")}
names = ["(overall)"] + sorted(doc["aa-duet"]["labels"])
def m(d, name):
    return d["overall"] if name == "(overall)" else d["labels"].get(name)
print("\nA/A: 99% interval width of B/A (lower is better)\n")
print("| metric | duet | sequential | sequential / duet |")
print("|---|---|---|---|")
for n in names:
    a, s = m(doc["aa-duet"], n), m(doc["aa-seq"], n)
    print(f"| {n} | {100 * a['ci_width']:.2f}% | {100 * s['ci_width']:.2f}% | {s['ci_width'] / a['ci_width']:.2f} |")
print("\nA/B, B with 5% more CPU per block: B/A [99% interval]\n")
print("| metric | duet | found slower | sequential | found slower |")
print("|---|---|---|---|---|")
for n in names:
    a, s = m(doc["ab-duet"], n), m(doc["ab-seq"], n)
    f = lambda x: f"{x['gms']:.4f} [{x['ci_low']:.4f}, {x['ci_high']:.4f}]"
    print(f"| {n} | {f(a)} | {'yes' if a['ci_low'] > 1 else 'no'} | {f(s)} | {'yes' if s['ci_low'] > 1 else 'no'} |")
print("\nA/B, 5% more CPU, duet without the hog\n")
print("| metric | duet | found slower |")
print("|---|---|---|")
for n in names:
    q = m(doc["ab-duet-quiet"], n)
    print(f"| {n} | {q['gms']:.4f} [{q['ci_low']:.4f}, {q['ci_high']:.4f}] | {'yes' if q['ci_low'] > 1 else 'no'} |")
PY
