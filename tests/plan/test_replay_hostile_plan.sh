#!/usr/bin/env bash
# test_replay_hostile_plan.sh - `preplay replay` on a plan that says
# 1,000,000 workers refuses within a second with one line naming the field
# and its limit (before the limit it started threads until the machine
# choked); `info` refuses it the same way; `run` refuses more workers in
# all than one machine may start; `replay` refuses dummy files larger than
# the free space of --dir; a plan at the limit (4096
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

# `run` starts a replayer per component: 5 components of 4096 workers each
# (each within the limit) are refused together on one machine
"$PLAN_HOSTILE" "$dir/five.pplan" 4096 5
set +e
timeout 10 "$PREPLAY_BIN" run "$dir/five.pplan" -o "$dir/r.json" --cpu-ratio 1 --dir "$dir/run" \
    >"$dir/out" 2>"$dir/err"
rc=$?
set -e
[ "$rc" -eq 1 ] || fail "run on 5 x 4096 workers: exit $rc: $(cat "$dir/err")"
grep -q 'five.pplan: workers of the components replayed here 20480 exceeds the limit 16384' "$dir/err" ||
    fail "run: $(cat "$dir/err")"
[ ! -e "$dir/r.json" ] || fail "run wrote results"

# a dummy file larger than the free space of --dir (1 TiB, the format's
# limit): replay refuses before writing anything
"$PLAN_HOSTILE" "$dir/big.pplan" 1 1 1099511627776
mkdir "$dir/files"
set +e
timeout 20 "$PREPLAY_BIN" replay "$dir/big.pplan" --component frontend --listen 127.0.0.1:0 \
    --token 0123456789abcdef --cpu-ratio 1 --dir "$dir/files" >"$dir/out" 2>"$dir/err"
rc=$?
set -e
[ "$rc" -eq 1 ] || fail "replay with a 1 TiB dummy file: exit $rc: $(cat "$dir/err")"
grep -q "files: the 1 dummy files need 1099511.6 MB more, only .* MB free" "$dir/err" ||
    fail "replay with a 1 TiB dummy file: $(cat "$dir/err")"
[ -z "$(ls -A "$dir/files")" ] || fail "replay wrote into --dir: $(ls "$dir/files")"

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
