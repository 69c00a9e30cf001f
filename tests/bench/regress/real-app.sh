#!/usr/bin/env bash
# tests/bench/regress/real-app.sh - evaluation of `preplay regress` (issue
# 25) on a real application nobody here wrote: WordPress from Debian
# (apache2 prefork + mod_php, MariaDB; set up, started and loaded by
# tests/bench/accuracy/apps/wordpress.sh), with baselines and targets that
# are RECORDINGS (`preplay record --window 1s`: DIR/machine-PID.counters,
# the response times, DB and lock counters from the traced events).
# Every recording runs inside tools/emulate (the app, MariaDB and the load
# client, all on the host's CPUs, no quota), so the namespace's network
# counters see the app's traffic only, and the disk fault is a type.
# Faults, each with its expected problematic counters written below
# before any run (labels: post, page, search, comment, login):
#   normal         a third normal recording        expected: nothing
#   cpu_plugin     a CPU-heavy plugin: an `init`   expected: every label's median
#                  action hashing 16 MB of data    and p95 up, run_cpu, cpu_user
#                  with SHA-256 per request (PHP's
#                  auto_prepend_file registers it)
#   small_bufpool  MariaDB's buffer pool shrunk    expected: db_time, search's median
#                  from 128 MB to 6 MB (wp_posts   and p95, disk reads (bytes, IOPS)
#                  is 10 MB: every search's scan
#                  reads it from disk, O_DIRECT)
#   disk_throttle  blkio on the data's disk: 10    expected: db_time, comment's and
#                  write IOPS, 1 MB/s (a commit's  login's median and p95 (both
#                  redo log write waits)           commit: a comment, a session token)
#   disk_slow      the same at 2 write IOPS        expected: as disk_throttle
#                  (added after the first run: at 10 IOPS, above the ~2 commits/s
#                  of the load, only 3 comments of 57 waited; expectations unchanged)
# Baselines: two normal recordings. Methods as run.sh: the thesis's (single
# 3-level, single equal-width, bagging and stacking equal-width, --alpha 1)
# and the default (stacking 3-level, --alpha 0.001); table.py prints
# precision, recall and F per scenario and method and their average.
#
# usage: real-app.sh [--out DIR] [--rate R] [--duration S] [--build DIR] [--redo-analysis]
#   --out DIR    keep everything there, the installed WordPress too
#                (DIR/base, reused by the next run; default: a temp dir)
#   --redo-analysis  keep DIR/runs' recordings of an earlier run, redo
#                `preplay regress` and the table (a new regress judged on
#                the same recordings)
#   --rate R     requests per second (default 8), --duration S seconds of
#                load per recording (default 60: 60 windows)
# About 11 minutes (7 recordings). Needs root (tools/emulate, packages).
# Prints the load average: the machine may be shared. Must never leave a
# server, cgroup or namespace behind (app_one_run stops what it starts,
# tools/emulate removes its cgroups), nor touch the system's services.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/../../.." && pwd)
apps=$src/tests/bench/accuracy/apps
# shellcheck source=/dev/null # wordpress.sh (over app-common.sh)
. "$apps/wordpress.sh"

# --inside OUT RUN CSV TRACE RATE DURATION BIN: one recording, run by
# tools/emulate inside the type (the fault's settings come in the
# environment: APP_MARIADBD_OPTS, WP_APACHE_EXTRA)
if [ "${1:-}" = --inside ]; then
  shift
  out=$1 run=$2 csv=$3 trace=$4 rate=$5 duration=$6 bin=$7
  # shellcheck disable=SC2046 # app_db_record_flags: two words
  app_one_run "$out" "$run" "$rate" "$duration" 7 "$csv" "$bin" record -q --off --window 1s -o "$trace" \
    -c frontend $(app_db_record_flags) "${APP_LABELS[@]}" -- || exit 1
  rm -rf "$run/db"
  exit 0
fi

out="" rate=8 duration=60 build=$src/build/release redo=0
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --redo-analysis) redo=1; shift ;;
    -h | --help) sed -n '2,42p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "real-app: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
bin=$build/preplay
[ -x "$bin" ] || { echo "real-app: no $bin (build first, or --build DIR)" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "real-app: needs root (tools/emulate, packages)" >&2; exit 1; }
if [ -z "$out" ]; then
  out=$(mktemp -d /tmp/bench-regress-wp-XXXXXX) || exit 1
  trap 'rm -rf "$out"' EXIT
else
  mkdir -p "$out" && out=$(cd "$out" && pwd) || exit 1
fi
log() { echo "real-app: $*" >&2; }
fail() { echo "real-app: FAIL: $*" >&2; exit 1; }
w=$out/runs
if [ $redo -eq 1 ]; then
  [ -d "$w/base1.rec" ] || fail "--redo-analysis: no recordings in $w"
  rm -f "$w"/*.r.json "$w/expected.tsv"
else
  rm -rf "$w"
  mkdir -p "$w"
  chmod 755 "$out" "$w"
fi

labels=(post page search comment login)
rt() { local l; for l in "$@"; do printf '|median_s:%s|p95_s:%s' "$l" "$l"; done; }
declare -A expected=(
  [normal]=''
  [cpu_plugin]="$(rt "${labels[@]}" | cut -c2-)|run_cpu|cpu_user"
  [small_bufpool]="db_time$(rt search)|disk_read_iops|disk_read_bytes_per_s"
  [disk_throttle]="db_time$(rt comment login)"
  [disk_slow]="db_time$(rt comment login)"
)
scenarios=(normal cpu_plugin small_bufpool disk_throttle disk_slow)

cpus=0-$(($(nproc) - 1))
cat >"$w/types.conf" <<EOF
regress-host $cpus - 10000 - - - - 1000mbit
regress-disk $cpus - 10000 - 1m - 10 1000mbit
regress-disk-slow $cpus - 10000 - 1m - 2 1000mbit
EOF
cat >"$w/cpu-plugin.php" <<'PHP'
<?php
/* tests/bench/regress/real-app.sh's CPU-heavy plugin: an `init` action
   (WP_Hook's pre-initialized form, as WordPress's own config uses) that
   hashes 16 x 1 MB with SHA-256 on every request */
$GLOBALS['wp_filter']['init'][10]['preplay_regress_hash'] = array(
    'function' => function () {
        $d = str_repeat('preplay regress ', 65536);
        $h = '';
        for ($i = 0; $i < 16; $i++) {
            $h = hash('sha256', $h . $d);
        }
        header('X-Preplay-Hash: ' . substr($h, 0, 8));
    },
    'accepted_args' => 0);
PHP

# record NAME TYPE [VAR=VALUE...]: one recording inside tools/emulate TYPE
# -> $w/NAME.rec (the recording), $w/NAME.csv (the client's view)
record() {
  local name=$1 type=$2
  shift 2
  log "$name: recording WordPress at $rate/s for $duration s on $type${*:+ ($*)}"
  env "$@" timeout 900 "$src/tools/emulate" --types "$w/types.conf" --data-dir "$w" "$type" -- \
    "$here/real-app.sh" --inside "$out" "$w/$name" "$w/$name.csv" "$w/$name.rec" "$rate" "$duration" "$bin" \
    >"$w/$name.log" 2>&1 || { tail -20 "$w/$name.log" >&2; fail "$name: recording failed"; }
  echo "load average $name: $(awk '{ printf "%s%s %s %s", (NR > 1 ? " -> " : ""), $1, $2, $3 }' "$w/$name.loadavg")"
}

if [ $redo -eq 0 ]; then
  log "setting up WordPress in $out/base"
  wp_setup "$out" || fail "WordPress setup"
  echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
  record base1 regress-host
  record base2 regress-host
  record normal regress-host
  record cpu_plugin regress-host "WP_APACHE_EXTRA=php_admin_value auto_prepend_file $w/cpu-plugin.php"
  record small_bufpool regress-host APP_MARIADBD_OPTS=--innodb-buffer-pool-size=6M
  record disk_throttle regress-disk
  record disk_slow regress-disk-slow
  echo "load average after the recordings: $(cut -d' ' -f1-3 /proc/loadavg)"
fi

methods=("single 3level 1" "single ew 1" "bagging ew 1" "stacking ew 1" "stacking 3level 0.001")
for s in "${scenarios[@]}"; do
  for m in "${methods[@]}"; do
    read -r meth disc alpha <<<"$m"
    "$bin" regress "$w/base1.rec" "$w/base2.rec" -- "$w/$s.rec" \
      -o "$w/$s.$meth.$disc.$alpha.r.json" --method "$meth" --discretize "$disc" --alpha "$alpha" \
      --quiet 2>"$w/$s.regress.err" || { cat "$w/$s.regress.err" >&2; fail "$s: regress ($m)"; }
  done
  printf '%s\t%s\n' "$s" "${expected[$s]}" >>"$w/expected.tsv"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
# what each fault did, as the load client saw it (did it take?)
python3 - "$w" base1 base2 "${scenarios[@]}" <<'PY'
import csv, statistics, sys
print("client's median / p95 ms per label:")
for name in sys.argv[2:]:
    by = {}
    for r in csv.DictReader(open("%s/%s.csv" % (sys.argv[1], name))):
        by.setdefault(r["label"], []).append(int(r["response_ns"]) / 1e6)
    cells = ("%s %.0f/%.0f" % (l, statistics.median(v), sorted(v)[int(0.95 * (len(v) - 1))]) for l, v in sorted(by.items()))
    print("  %-14s %s" % (name, "  ".join(cells)))
PY
python3 "$here/table.py" "$w" "${methods[@]}"
