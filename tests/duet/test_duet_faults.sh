#!/usr/bin/env bash
# test_duet_faults.sh - a side that fails stops the duet: a replayer of
# one side killed (SIGKILL) in the middle of run 1 makes duet exit 1 with
# the dead replayer named and "run 1 failed", no result written, and
# nothing left running (the other side stopped at its barrier or drive);
# then Ctrl-C (SIGINT to the controller) ends it with 130, nothing left.
set -euo pipefail
: "${PREPLAY_BIN:?}" "${PREPLAY_BUILD_DIR:?}"
work=$(mktemp -d /tmp/duet-faults-XXXXXX)
trap 'rm -rf "$work"' EXIT
"$PREPLAY_BUILD_DIR/tests/replay/replay_make_plan" two-tier "$work/plan"
replayers() { pgrep -f "preplay replay $work/plan" || true; }
wait_replayers() { # N: until N replayers run (30 s at most)
  for _ in $(seq 300); do
    [ "$(replayers | wc -l)" -ge "$1" ] && return 0
    sleep 0.1
  done
  echo "replayers did not start" >&2
  exit 1
}
gone() { # nothing of this duet left running
  for _ in $(seq 50); do
    [ -z "$(replayers)" ] && return 0
    sleep 0.1
  done
  echo "left running: $(replayers | xargs -r ps -o pid,args -p)" >&2
  exit 1
}

"$PREPLAY_BIN" duet "$work/plan" --aa --runs 2 --iterations 20 --seed 1 -o "$work/out.json" \
  2>"$work/err" &
duet=$!
wait_replayers 4 # two components per side
sleep 2
kill -9 "$(replayers | head -1)"
st=0
wait "$duet" || st=$?
cat "$work/err"
[ "$st" = 1 ] || { echo "status $st, want 1" >&2; exit 1; }
grep -Eq "^run: the replayer for component '(web|app)' killed by signal 9 during interval [0-9]+" "$work/err"
grep -qx "duet: run 1 failed (the side's reason above): no result written" "$work/err"
# the failed side's logs are kept and named, once; the other side's removed
kept=$(sed -n 's/^run: replayer logs kept in //p' "$work/err")
[ "$(wc -l <<<"$kept")" = 1 ] && [ -f "$kept/replay-0.log" ] || { echo "kept: '$kept'" >&2; exit 1; }
rm -rf "$kept"
test ! -e "$work/out.json"
gone

"$PREPLAY_BIN" duet "$work/plan" --aa --runs 2 --iterations 20 --seed 1 -o "$work/out.json" \
  2>"$work/err" &
duet=$!
wait_replayers 4
sleep 1
kill -INT "$duet"
st=0
wait "$duet" || st=$?
cat "$work/err"
[ "$st" = 130 ] || { echo "status $st after SIGINT, want 130" >&2; exit 1; }
grep -qx "duet: interrupted by signal 2 during run 1: no result written" "$work/err"
! grep -q "logs kept" "$work/err"
test ! -e "$work/out.json"
gone
echo "duet faults: ok"
