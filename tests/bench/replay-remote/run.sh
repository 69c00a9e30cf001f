#!/usr/bin/env bash
# tests/bench/replay-remote/run.sh - what running components over ssh costs `preplay run`:
# paired, interleaved runs of the two-tier plan (one interval of 1 s, CPU
# ratio given) all local versus app on a loopback sshd versus web in a
# network namespace (sshd_fixture.sh); prints per-variant medians of the
# whole run's wall time and of the per-interval file restore, and ratios
# against the all-local baseline measured in the same run. Not in ctest
# (numbers, not pass/fail); docs/preplay-run.md quotes it.
# usage: run.sh [PAIRS]   (needs root; PREPLAY_BIN, PREPLAY_BUILD_DIR
#                                   or a build dir in $BUILD, default build/release)
set -uo pipefail
pairs=${1:-5}
src=$(cd "$(dirname "$0")/../../.." && pwd)
build=${PREPLAY_BUILD_DIR:-${BUILD:-$src/build/release}}
bin=${PREPLAY_BIN:-$build/preplay}
fail() { echo "bench replay-remote: $*" >&2; exit 1; }
[ -x "$bin" ] || fail "no preplay at $bin (set PREPLAY_BIN)"
[ "$(id -u)" = 0 ] || fail "needs root"
work=$(mktemp -d /tmp/bench-remote-XXXXXX)
chmod 755 "$work"
. "$src/tests/replay-remote/sshd_fixture.sh"
trap 'fixture_cleanup; rm -rf "$work"' EXIT
"$build/tests/replay/replay_make_plan" two-tier "$work/plan" || fail "make_plan"
fixture_keys
port=$(fixture_free_port)
fixture_sshd lo 127.0.0.1 "$port"
fixture_netns
fixture_sshd ns "$ns_ip" 22 ip netns exec "$fixture_ns"
printf 'app root@127.0.0.1:%s\n' "$port" >"$work/hosts-lo"
printf 'web root@%s\n' "$ns_ip" >"$work/hosts-ns"

one() { # VARIANT [run options...]: "wall_s files_s"
  local v=$1
  shift
  local t0 t1
  t0=$(date +%s.%N)
  "$bin" run "$work/plan" --cpu-ratio 1 --max-intervals 1 --interval 1s -o "$work/$v.json" "$@" \
    2>"$work/$v.err" || fail "$v: $(cat "$work/$v.err")"
  t1=$(date +%s.%N)
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(float(sys.argv[3])-float(sys.argv[2]), d['state_restore']['per_interval'][0]['files_s'])" \
    "$work/$v.json" "$t0" "$t1"
}
echo "load before: $(uptime)"
: >"$work/samples"
for i in $(seq 1 "$pairs"); do
  echo "local $(one local)" >>"$work/samples"
  echo "loopback-ssh $(one lo --hosts "$work/hosts-lo" --ssh-opts "$ssh_opts")" >>"$work/samples"
  echo "netns-ssh $(one ns --hosts "$work/hosts-ns" --ssh-opts "$ssh_opts")" >>"$work/samples"
done
echo "load after:  $(uptime)"
python3 - "$work/samples" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    v, wall, files = line.split()
    rows.setdefault(v, []).append((float(wall), float(files)))
base = statistics.median(w for w, _ in rows["local"])
base_f = statistics.median(f for _, f in rows["local"])
print("%-13s %5s %12s %8s %16s %8s" % ("variant", "runs", "run median", "ratio", "restore median", "ratio"))
for v in ("local", "loopback-ssh", "netns-ssh"):
    w = statistics.median(x for x, _ in rows[v])
    f = statistics.median(y for _, y in rows[v])
    print("%-13s %5d %10.2f s %8.2f %13.3f ms %8.1f" % (v, len(rows[v]), w, w / base, f * 1e3, f / base_f if base_f else float("nan")))
PY
