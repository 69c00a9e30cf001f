#!/usr/bin/env bash
# test_faults.sh - the replayer's failure modes, each one clear line:
# a replayer killed mid-run (names the component, results so far kept),
# a plan of another major version, a port in use, a target that refuses
# connections, a bad token (driver and replayer log), a bad --token value.
set -uo pipefail
: "${PREPLAY_BIN:?}" "${PREPLAY_BUILD_DIR:?}"
work=$(mktemp -d /tmp/replay-faults-XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; rm -rf "$work"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
"$PREPLAY_BUILD_DIR/tests/replay/replay_make_plan" two-tier "$work/plan" || fail "make_plan"

# 1. the app-tier replayer dies during interval 2
( "$PREPLAY_BIN" run "$work/plan" --max-intervals 5 --interval 2s -o "$work/dead.json" 2>"$work/dead.err"; echo $? >"$work/dead.rc" ) &
runner=$!
for _ in $(seq 1 100); do
  grep -q '^interval 1 of 5:' "$work/dead.err" 2>/dev/null && break
  sleep 0.1
done
grep -q '^interval 1 of 5:' "$work/dead.err" || fail "run did not finish interval 1: $(cat "$work/dead.err")"
# only our own run's replayer (other runs may be going on on this machine):
# runner (subshell) -> preplay run -> preplay replay --component app
run_pid=$(pgrep -P "$runner" -f -- "run $work/plan" | head -1)
app=$( [ -n "$run_pid" ] && pgrep -P "$run_pid" -f -- "--component app" | head -1)
[ -n "$app" ] || fail "no app replayer found"
sleep 0.5
kill -9 "$app"
wait "$runner"
[ "$(cat "$work/dead.rc")" != 0 ] || fail "run exited 0 after a replayer died"
grep -q "run: the replayer for component 'app' killed by signal 9 during interval 2" "$work/dead.err" ||
  fail "no message naming the component: $(cat "$work/dead.err")"
python3 -c "
import json; d = json.load(open('$work/dead.json'))
assert len(d['intervals']) == 1 and d['intervals'][0]['requests'] == 100, d['intervals']
assert d['error'] == \"replayer 'app' died\", d['error']
assert d['labels']['GET /fast']['count'] > 0
" || fail "results so far not kept"

# 2. a plan of an unknown major version
cp "$work/plan" "$work/plan-v9"
python3 - "$work/plan-v9" <<'PY'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
# the major version: LE16 at offset 16 (formats/PLAN.md)
b[16] = 9; b[17] = 0
open(sys.argv[1], "wb").write(b)
PY
out=$("$PREPLAY_BIN" replay "$work/plan-v9" --component web --listen 127.0.0.1:0 --token 0123456789abcdef 2>&1)
rc=$?
[ $rc = 1 ] || fail "wrong version: exit $rc"
[ "$(echo "$out" | wc -l)" = 1 ] && echo "$out" | grep -qi "version" || fail "wrong version: '$out'"

# 3. port in use
python3 -c "import socket,time; s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen(); print(s.getsockname()[1], flush=True); time.sleep(30)" >"$work/port" &
pids+=($!)
for _ in $(seq 1 50); do [ -s "$work/port" ] && break; sleep 0.1; done
port=$(cat "$work/port")
out=$("$PREPLAY_BIN" replay "$work/plan" --component web --listen 127.0.0.1:$port --token 0123456789abcdef --cpu-ratio 1 2>&1)
rc=$?
[ $rc = 1 ] && [ "$out" = "replay: listen 127.0.0.1:$port: port in use" ] || fail "port in use: rc $rc '$out'"

# 4. unreachable target
out=$("$PREPLAY_BIN" drive "$work/plan" --target 127.0.0.1:1 --token 0123456789abcdef --speed 50 -o "$work/d.json" 2>&1)
rc=$?
[ $rc = 1 ] && echo "$out" | grep -q "^drive: 127.0.0.1:1 refused every connection" || fail "unreachable: rc $rc '$out'"

# 5. bad token: the replayer logs a rejection per connection, the driver says so
"$PREPLAY_BIN" replay "$work/plan" --component web --listen 127.0.0.1:0 --token 0123456789abcdef \
  --cpu-ratio 1 >"$work/listen" 2>"$work/replay.log" &
pids+=($!)
for _ in $(seq 1 100); do grep -q listening "$work/listen" 2>/dev/null && break; sleep 0.1; done
addr=$(sed -n 's/^listening //p' "$work/listen")
[ -n "$addr" ] || fail "replayer did not start: $(cat "$work/replay.log")"
out=$("$PREPLAY_BIN" drive "$work/plan" --target "$addr" --token fedcba9876543210 --speed 50 -o "$work/d.json" 2>&1)
rc=$?
[ $rc = 1 ] && echo "$out" | grep -q "every request failed: the replayer closed the connections (wrong --token" ||
  fail "bad token (driver): rc $rc '$out'"
grep -q "rejected: bad token" "$work/replay.log" || fail "bad token not logged by the replayer"
# and the right token works against the same replayer (no peers: calls counted as failed)
"$PREPLAY_BIN" drive "$work/plan" --target "$addr" --token 0123456789abcdef --speed 50 -o "$work/d.json" 2>/dev/null ||
  fail "good token refused"
python3 -c "
import json; d = json.load(open('$work/d.json'))
assert d['requests'] == 50 and d['failed'] == 0, (d['requests'], d['failed'])
assert d['labels']['GET /fast']['count'] + d['labels']['POST /slow']['count'] == 50
" || fail "drive results"

# 6. malformed token text
out=$("$PREPLAY_BIN" replay "$work/plan" --component web --listen 127.0.0.1:0 --token xyz 2>&1)
[ $? = 2 ] && echo "$out" | grep -q "^replay: --token: expected 16 hex digits" || fail "bad token text: '$out'"
echo "faults ok"
