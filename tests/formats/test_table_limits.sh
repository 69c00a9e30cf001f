#!/usr/bin/env bash
# test_table_limits.sh - `preplay info` and `preplay analyze` keep their
# tables of threads and connections within their 1 GiB budgets (issue 24
# item 1): a trace naming 900000 distinct tids (2 MB on disk) made info
# hold 3.8 GB and analyze 4 GB, 900000 connections info 1.3 GB. Each now
# says one line naming the file, the key, the table and the limit and
# exits 1; info still prints its summary with every event in the totals.
# (Both limits are within 900000: info's at about 230000 threads and
# 800000 connections, analyze's at about 790000 threads.)
# The analyzer's other tables, and a budget that frees, are unit-tested
# (tests/analyze/test_analyze_tables.c). ~8 s (~25 s under ASan).
set -euo pipefail
: "${PREPLAY_BIN:?}" "${TRACE_GEN:?}"
dir=$(mktemp -d /tmp/preplay-table-limits.XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail() { echo "test_table_limits: $*"; exit 1; }
# max RSS in KB of the last run, bounded when no sanitizer inflates it
rss_below() { # WHAT KB
    local rss
    rss=$(tail -1 "$dir/rss")
    if [ "${PREPLAY_SANITIZE:-0}" != 1 ] && [ "$rss" -ge "$2" ]; then
        fail "$1: max RSS ${rss} KB, want < $2"
    fi
    return 0
}
run() { # OUT ERR CMD...: runs CMD under time, its exit status in $rc
    local out=$1 err=$2
    shift 2
    set +e
    /usr/bin/time -f %M -o "$dir/rss" "$@" > "$out" 2> "$err"
    rc=$?
    set -e
}

mkdir "$dir/tids" "$dir/conns"
"$TRACE_GEN" many "$dir/tids/many-4244.trace" tids 900000
"$TRACE_GEN" many "$dir/conns/many-4244.trace" conns 900000
lim=1073741824

run "$dir/out" "$dir/err" "$PREPLAY_BIN" info "$dir/tids"
[ "$rc" -eq 1 ] || fail "info of 900k tids: exit $rc, want 1"
[ "$(wc -l < "$dir/err")" -eq 1 ] || fail "info of 900k tids: not one line: $(cat "$dir/err")"
grep -Eq "^preplay: $dir/tids/many-4244.trace: tid [0-9]+: the thread table \([0-9]+ entries\) would pass info's limit of $lim bytes for its tables; later ones count in the totals only\$" "$dir/err" ||
    fail "info of 900k tids said: $(cat "$dir/err")"
grep -Eq '^1 process, [0-9]+ threads' "$dir/out" || fail "info of 900k tids: no summary"
grep -q 'events: cpu=900000$' "$dir/out" || fail "info of 900k tids: the totals lost events"
rss_below "info of 900k tids" 1500000

run "$dir/out.json" "$dir/err" "$PREPLAY_BIN" info --json "$dir/conns"
[ "$rc" -eq 1 ] || fail "info of 900k connections: exit $rc, want 1"
grep -Eq "^preplay: $dir/conns/many-4244.trace: conn_id [0-9]+: the connection table \([0-9]+ entries\) would pass info's limit of $lim bytes" "$dir/err" ||
    fail "info of 900k connections said: $(cat "$dir/err")"
python3 - "$dir/out.json" <<'PY' || fail "info --json of 900k connections: wrong summary"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["events"]["conn"] == 900000 and j["events"]["net"] == 900000, j["events"]
n = len(j["process_list"][0]["connections"])
assert 0 < n < 900000, n
PY
rss_below "info of 900k connections" 1500000

run "$dir/out" "$dir/err" "$PREPLAY_BIN" analyze "$dir/tids" -o "$dir/p.plan"
[ "$rc" -eq 1 ] || fail "analyze of 900k tids: exit $rc, want 1"
grep -Eq "^preplay analyze: $dir/tids/many-4244.trace: tid [0-9]+('s event queue)?: the thread table \([0-9]+ threads\) would pass the analyzer's limit of $lim bytes for its tables\$" "$dir/err" ||
    fail "analyze of 900k tids said: $(cat "$dir/err")"
[ ! -e "$dir/p.plan" ] || fail "analyze of 900k tids left a plan"
rss_below "analyze of 900k tids" 1500000
echo "test_table_limits: ok"
