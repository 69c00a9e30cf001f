#!/usr/bin/env bash
# test_replay_hostile_plan.sh - `preplay replay` on a plan that says
# 1,000,000 workers refuses within a second with one line naming the field
# and its limit (before the limit it started threads until the machine
# choked); `info` refuses it the same way; a plan at the limit (4096
# workers) starts, listens and stops on SIGTERM, and writes its --stats
# JSON with mode 0600 (it can hold query text: db_errors), whatever the
# umask.
set -euo pipefail
: "${PREPLAY_BIN:?}" "${PLAN_HOSTILE:?}"
dir=$(mktemp -d /tmp/preplay-hostile-plan.XXXXXX)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$PLAN_HOSTILE" "$dir/plan.pplan" 1000000
start=$(date +%s%N)
set +e
timeout 10 "$PREPLAY_BIN" replay "$dir/plan.pplan" --component frontend --listen 127.0.0.1:0 --token 0123456789abcdef --cpu-ratio 1 \
    >"$dir/out" 2>"$dir/err"
rc=$?
set -e
elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "replay exit $rc on a 1,000,000-worker plan"
[ "$elapsed_ms" -lt 1000 ] || fail "replay took ${elapsed_ms} ms to refuse (limit 1000)"
[ "$(wc -l <"$dir/err")" -eq 1 ] || fail "not one line: $(cat "$dir/err")"
grep -q 'plan.pplan: .*workers 1000000 exceeds the limit 4096' "$dir/err" ||
    fail "message: $(cat "$dir/err")"
! grep -q listening "$dir/out" || fail "replay listened"

set +e
"$PREPLAY_BIN" info "$dir/plan.pplan" >/dev/null 2>"$dir/err"
rc=$?
set -e
[ "$rc" -eq 1 ] || fail "info exit $rc"
grep -q 'workers 1000000 exceeds the limit 4096' "$dir/err" || fail "info: $(cat "$dir/err")"

# at the limit: a bounded start
"$PLAN_HOSTILE" "$dir/ok.pplan" 4096
umask 022
echo stale >"$dir/stats.json"
chmod 0644 "$dir/stats.json"
"$PREPLAY_BIN" replay "$dir/ok.pplan" --component frontend --listen 127.0.0.1:0 --token 0123456789abcdef --cpu-ratio 1 \
    --stats "$dir/stats.json" >"$dir/out" 2>"$dir/err" &
pid=$!
for _ in $(seq 100); do
    grep -q listening "$dir/out" && break
    kill -0 "$pid" 2>/dev/null || fail "replay at the limit exited: $(cat "$dir/err")"
    sleep 0.1
done
grep -q listening "$dir/out" || fail "replay at the limit did not listen: $(cat "$dir/err")"
grep -q '4096 workers' "$dir/err" || fail "replay at the limit: $(cat "$dir/err")"
kill -TERM "$pid"
wait "$pid" || fail "replay at the limit: exit $?"
pid=
[ "$(stat -c %a "$dir/stats.json")" = 600 ] || fail "--stats file mode $(stat -c %a "$dir/stats.json"), want 600"
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$dir/stats.json" || fail "--stats: not JSON"
echo "ok"
