#!/usr/bin/env bash
# test_wide_plan.sh - what a replay worker costs does not grow with the
# plan's files and locks (issue 24 item 1): a plan with 2^20 files and 2^20
# locks (plan.h's limits, a 1 MB file) made each of its workers fill a
# 4 MB descriptor table before listening, 16 GB for 4096 workers. The same
# plan replayed with --workers 1 and --workers 1024: the 1023 more workers
# must cost under 256 KB each (a thread alone costs ~75 KB here; the
# filled table cost 4 MB, a calloc'd one ~300 KB). ~10 s.
set -euo pipefail
: "${PREPLAY_BIN:?}" "${PREPLAY_BUILD_DIR:?}"
dir=$(mktemp -d /tmp/preplay-wide-plan.XXXXXX)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$PREPLAY_BUILD_DIR/tests/replay/replay_make_plan" wide "$dir/wide.plan" 1024

# resident KB of a replayer of WORKERS workers once every worker runs
resident_kb() {
    local workers=$1 threads rss=
    "$PREPLAY_BIN" replay "$dir/wide.plan" --component web --listen 127.0.0.1:0 \
        --token 0123456789abcdef --cpu-ratio 1 --workers "$workers" >"$dir/out" 2>"$dir/err" &
    pid=$!
    for _ in $(seq 300); do
        kill -0 "$pid" 2>/dev/null || fail "replay --workers $workers exited: $(cat "$dir/err")"
        threads=$(awk '/^Threads:/ {print $2}' /proc/$pid/status)
        # the workers, the accept thread and the main thread, then a
        # moment for the last ones to set up their state
        if grep -q listening "$dir/out" && [ "$threads" -ge $((workers + 2)) ]; then
            sleep 1
            rss=$(awk '/^VmRSS:/ {print $2}' /proc/$pid/status)
            break
        fi
        sleep 0.1
    done
    kill -TERM "$pid"
    wait "$pid" || fail "replay --workers $workers: exit $?"
    pid=
    [ -n "$rss" ] || fail "replay --workers $workers never ran all its workers: $(cat "$dir/err")"
    echo "$rss"
}
one=$(resident_kb 1)
many=$(resident_kb 1024)
per=$(( (many - one) / 1023 ))
echo "resident: 1 worker ${one} KB, 1024 workers ${many} KB: ${per} KB per worker"
[ "$per" -lt 256 ] || fail "each worker of a plan with 2^20 files and locks costs ${per} KB (limit 256)"
echo ok
