#!/usr/bin/env bash
# test-dump-dir.sh - `preplay dump DIR` merges every trace of a directory by
# time. A real recording: a python3 parent and its forked child play
# ping-pong over two pipes (the parent reads the pongs in a second thread,
# so its own trace is not in time order across its threads), 150 rounds.
# The merged dump must hold every line of the per-file dumps, each event
# with its process's pid, times never going back, and the pings and pongs
# alternating parent, child, parent... as they happened (a concatenation of
# the files, or a merge without the reordering window, breaks that). A
# damaged trace in the directory is reported by name and exit 1, the
# others still printed.
set -euo pipefail
bin=${PREPLAY_BIN:?}
fail() { echo "FAIL: $*" >&2; exit 1; }
tmp=$(mktemp -d /tmp/preplay-dump-dir.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/pingpong.py" <<'PY'
import os, sys, threading, time
rounds = int(sys.argv[1])
a_r, a_w = os.pipe()
b_r, b_w = os.pipe()
child = os.fork()
if child == 0:
    for i in range(rounds):
        os.read(a_r, 5)
        os.write(b_w, b"pong.")
    os._exit(0)
got = threading.Semaphore(0)
def reader():
    for i in range(rounds):
        os.read(b_r, 5)
        got.release()
t = threading.Thread(target=reader)
t.start()
for i in range(rounds):
    os.write(a_w, b"ping.")
    got.acquire()
    time.sleep(0.001)
t.join()
os.waitpid(child, 0)
print(os.getpid(), child)
PY
pids=$("$bin" record -q --no-cpu-scores -o "$tmp/trace" -- /usr/bin/python3 "$tmp/pingpong.py" 150)
read -r parent child <<<"$pids"
[ "$(ls "$tmp"/trace/*.trace | wc -l)" -eq 2 ] || fail "want 2 traces: $(ls "$tmp/trace")"

"$bin" dump --json "$tmp/trace" >"$tmp/merged.jsonl" || fail "dump DIR exit $?"
"$bin" dump "$tmp/trace" >"$tmp/merged.txt" || fail "dump DIR (text) exit $?"
for f in "$tmp"/trace/*.trace; do "$bin" dump --json "$f"; done >"$tmp/files.jsonl"
python3 - "$tmp" "$parent" "$child" <<'PY'
import json, sys
tmp, parent, child = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
merged = [json.loads(l) for l in open(f"{tmp}/merged.jsonl")]
files = [json.loads(l) for l in open(f"{tmp}/files.jsonl")]
def fail(msg):
    sys.exit("FAIL: " + msg)
# the same events, each once, with its pid
strip = lambda e: json.dumps({k: v for k, v in e.items() if k != "pid"}, sort_keys=True)
if sorted(map(strip, merged)) != sorted(map(strip, files)):
    fail(f"merged dump has {len(merged)} events, the files {len(files)}, or not the same ones")
pids = {e.get("pid") for e in merged}
if pids != {parent, child}:
    fail(f"pids in the merged dump: {pids}, want {{{parent}, {child}}}")
n_text = sum(1 for _ in open(f"{tmp}/merged.txt"))
if n_text != len(merged):
    fail(f"text dump has {n_text} lines, JSON {len(merged)}")
# time never goes back (strings and stacks have no time)
last = 0
for i, e in enumerate(merged):
    if e["ts"] and e["ts"] < last:
        fail(f"event {i} at {e['ts']} after one at {last}: {e}")
    last = max(last, e["ts"])
# the pings and pongs as they happened
writes = [e["pid"] for e in merged if e["type"] == "file" and e.get("op") == "write"
          and e.get("size") == 5 and e["fd"] > 2]  # not the pids printed on stdout
want = [parent, child] * 150
if writes != want:
    bad = next(i for i, (a, b) in enumerate(zip(writes + [0] * 300, want)) if a != b)
    fail(f"{len(writes)} ping/pong writes; write {bad} is by {writes[bad:bad+1]}, want {want[bad]}")
# how out of order the parent's own trace was (information, not a check)
lastf, late = 0, 0
for e in files:
    if e["ts"] and e["ts"] < lastf:
        late += 1
    lastf = e["ts"] or lastf
print(f"ok: {len(merged)} events merged; {late} were out of time order in their files")
PY

# a damaged trace beside good ones: named, exit 1, the others still printed
first=$(ls "$tmp"/trace/*.trace | awk "NR == 1")
head -c 100 "$first" >"$tmp/trace/zz-cut.trace"
set +e
"$bin" dump "$tmp/trace" >"$tmp/out" 2>"$tmp/err"
rc=$?
set -e
[ "$rc" -eq 1 ] || fail "dump of a dir with a damaged trace: exit $rc, want 1"
grep -q "zz-cut.trace" "$tmp/err" || fail "the damaged trace is not named: $(cat "$tmp/err")"
[ "$(wc -l <"$tmp/out")" -ge "$(wc -l <"$tmp/merged.txt")" ] ||
    fail "the good traces were not all printed beside the damaged one"

# an empty directory, a directory of no traces
mkdir "$tmp/empty"
set +e
"$bin" dump "$tmp/empty" 2>"$tmp/err"
rc=$?
set -e
[ "$rc" -eq 1 ] && grep -q "no \*.trace files" "$tmp/err" || fail "empty dir: exit $rc, $(cat "$tmp/err")"
