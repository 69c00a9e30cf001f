#!/usr/bin/env bash
# test_agent.sh - `preplay remote-agent` without ssh (test_agent.py drives
# its session protocol) on the two-tier plan of tests/replay.
set -euo pipefail
: "${PREPLAY_BIN:?}" "${PREPLAY_BUILD_DIR:?}"
work=$(mktemp -d /tmp/replay-agent-XXXXXX)
trap 'rm -rf "$work"' EXIT
"$PREPLAY_BUILD_DIR/tests/replay/replay_make_plan" two-tier "$work/plan"
python3 "$(dirname "$0")/test_agent.py" "$PREPLAY_BIN" "$work/plan" "$work" || {
  tail -n 5 "$work"/*.log >&2
  exit 1
}
# the agents' and replayers' stderr (in the ASan build: any report there)
if grep -l "Sanitizer" "$work"/*.log; then
  cat "$work"/*.log >&2
  exit 1
fi
