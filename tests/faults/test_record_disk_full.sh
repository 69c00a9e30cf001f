#!/usr/bin/env bash
# test_record_disk_full.sh - `preplay record` when the trace's disk fills up
# mid-recording (a 64 KiB tmpfs): the traced program (coreutils dd) must run
# to its end with its own output, never held by back-pressure from a
# collector that cannot write (the rest is counted as lost); record exits 1 with one line naming the trace file and
# the cause; `preplay info` refuses the damaged file with its offset, and
# `--salvage` keeps every event before the damage. Then the same for
# `preplay analyze -o` onto a full disk: one line naming the plan, exit 1, no
# partial plan left behind. Needs root (mounts tmpfs).
# Both recordings pass --no-cpu-scores: the CPU kernels `record` runs
# before the app (~1.5 s, ~7 s under ASan, each) are not what this test
# checks (scores are tested by tests/replayer/test_calibrate_cli.sh); the
# disk fills from dd's events either way.
set -euo pipefail
: "${PREPLAY_BIN:?}"
if [[ $(id -u) != 0 ]]; then echo "test_record_disk_full: needs root (mounts tmpfs)"; exit 1; fi
work=$(mktemp -d /tmp/preplay-diskfull-test.XXXXXX)
cleanup() {
    mountpoint -q "$work/full" 2>/dev/null && umount "$work/full"
    rm -rf "$work"
}
trap cleanup EXIT
mkdir "$work/full"
mount -t tmpfs -o size=64k tmpfs "$work/full"

# 1. record onto a disk that fills up.
set +e
timeout 120 "$PREPLAY_BIN" record --no-cpu-scores -o "$work/full/t" -- \
    dd if=/dev/zero of=/dev/null bs=64 count=300000 >"$work/app.out" 2>"$work/record.err"
rc=$?
set -e
cat "$work/record.err" >&2
if [[ $rc != 1 ]]; then echo "record on a full disk: exit $rc, want 1"; exit 1; fi
grep -q "300000+0 records out" "$work/record.err" ||
    { echo "dd did not run to its end under a collector that cannot write"; exit 1; }
trace=$(ls "$work"/full/t/*.trace)
[[ $(ls "$work"/full/t/*.trace | wc -l) == 1 ]] || { echo "want one trace file"; exit 1; }
line=$(grep -c "No space left on device" "$work/record.err" || true)
[[ $line == 1 ]] || { echo "want exactly one 'No space left on device' line, got $line"; exit 1; }
grep "No space left on device" "$work/record.err" | grep -qF "$trace" ||
    { echo "the disk-full line does not name $trace"; exit 1; }
# Events after the failure were discarded, and record says so.
grep -q "some events were lost" "$work/record.err" || { echo "record does not report the loss"; exit 1; }
# The file name appears once in that line (no doubled prefix).
n=$(grep "No space left on device" "$work/record.err" | grep -oF "$(basename "$trace")" | wc -l)
[[ $n == 1 ]] || { echo "disk-full line names the file $n times"; exit 1; }

set +e
"$PREPLAY_BIN" info "$trace" >"$work/info.out" 2>"$work/info.err"
rc=$?
set -e
if [[ $rc == 0 ]]; then echo "info accepted a trace cut by a full disk"; exit 1; fi
grep -qE "truncated frame at offset [0-9]+" "$work/info.err" ||
    { echo "info: no offset in: $(cat "$work/info.err")"; exit 1; }
set +e
"$PREPLAY_BIN" info --salvage --json "$trace" >"$work/salvage.json" 2>"$work/salvage.err"
rc=$?
set -e
# 3 = summarized, but the file was damaged (docs/preplay-info.md)
if [[ $rc != 3 ]]; then echo "info --salvage: exit $rc, want 3"; exit 1; fi
/usr/bin/python3 - "$work/salvage.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
ev = j["events"]
# dd: one read and one write per block; what was flushed before the disk
# filled must be there, and nothing invented: at most 2 file events per block.
if not 1000 <= ev["file"] <= 2 * 300000 + 100:
    sys.exit(f"salvaged file events: {ev['file']}")
if j["processes"] != 1:
    sys.exit(f"salvaged processes: {j['processes']}")
PY

# 2. analyze -o onto a full disk (a valid small recording first).
"$PREPLAY_BIN" record --no-cpu-scores -o "$work/ok" -- dd if=/dev/zero of=/dev/null bs=64 count=2000 2>/dev/null
dd if=/dev/zero of="$work/full/filler" bs=4k count=64 2>/dev/null || true
set +e
"$PREPLAY_BIN" analyze "$work/ok" -o "$work/full/app.plan" >"$work/an.out" 2>"$work/an.err"
rc=$?
set -e
cat "$work/an.err" >&2
if [[ $rc == 0 ]]; then echo "analyze wrote a plan onto a full disk?"; exit 1; fi
grep -qF "$work/full/app.plan" "$work/an.err" || { echo "analyze error does not name the plan"; exit 1; }
if ls "$work"/full/app.plan* >/dev/null 2>&1; then echo "partial plan left: $(ls "$work"/full)"; exit 1; fi
echo "test_record_disk_full: ok"
