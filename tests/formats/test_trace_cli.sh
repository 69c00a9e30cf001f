#!/usr/bin/env bash
# test_trace_cli.sh - `preplay info --json` and `preplay dump --json` on a
# directory written by trace_gen (known contents: keep the numbers below in
# sync with trace_gen.c), plus exit codes and messages on damaged traces.
set -euo pipefail
: "${PREPLAY_BIN:?}" "${TRACE_GEN:?}"
dir=$(mktemp -d /tmp/preplay-cli-test.XXXXXX)
trap 'rm -rf "$dir"' EXIT
"$TRACE_GEN" dir "$dir"
echo "not a trace" > "$dir/README.txt" # other files in the directory are ignored

"$PREPLAY_BIN" info --json "$dir" > "$dir/info.json"
python3 - "$dir" <<'PY'
import json, os, sys
d = sys.argv[1]
j = json.load(open(os.path.join(d, "info.json")))
def eq(what, got, want):
    if got != want:
        sys.exit(f"info --json: {what} = {got!r}, want {want!r}")
eq("processes", j["processes"], 2)
eq("threads", j["threads"], 3)
ev = j["events"]
for k, v in {"cpu": 25, "file": 18, "net": 10, "lock": 12, "db": 3, "conn": 3,
             "thread_start": 3, "thread_exit": 3, "string": 3, "label": 1, "loss": 1}.items():
    eq(f"events.{k}", ev[k], v)
size = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d) if f.endswith(".trace"))
eq("bytes_on_disk", j["bytes_on_disk"], size)
eq("lost_events", j["lost_events"], 7)
eq("bytes", j["bytes"], {"file_read": 290, "file_written": 1000, "net_sent": 4020,
                         "net_received": 1200})
procs = {p["pid"]: p for p in j["process_list"]}
eq("pids", sorted(procs), [100, 101])
fe = procs[100]
eq("component", fe["component"], "frontend")
eq("argv", fe["argv"], ["server", "--port", "8080"])
eq("threads of 100", [t["tid"] for t in fe["threads"]], [1000, 1001])
eq("cpu_ns of 100", fe["cpu_ns"], 200000)
eq("lock_wait_ns of 100", fe["lock_wait_ns"], 6000)
eq("top file", fe["top_files"][0], {"path": "/srv/data.bin", "dev": 2049, "ino": 777,
                                     "bytes_read": 250, "bytes_written": 1000, "ops": 17})
c = fe["connections"][0]
eq("conn", (c["proto"], c["local"], c["remote"], c["bytes_sent"], c["bytes_received"]),
   ("tcp", "127.0.0.1:8080", "127.0.0.1:40000", 4000, 1200))
eq("locks", fe["locks"], [{"lock_id": 0xabc0, "kind": 1, "acquires": 6, "wait_ns": 6000,
                           "max_wait_ns": 1000}])
eq("queries", fe["queries_by_count"], [{"query": "SELECT name FROM users WHERE id = 1",
                                        "count": 3, "prepares": 0, "total_ns": 150000,
                                        "rows": 6, "errors": 0}])
be = procs[101]
eq("cpu_ns of 101", be["cpu_ns"], 15000)  # 5 slices, the last carried by a send
eq("unix conn", (be["connections"][0]["unix_inode"], be["connections"][0]["unix_peer_inode"],
                 be["connections"][0]["bytes_sent"]), (5555, 6666, 20))
# a file the backend used without opening it: named from the frontend's trace;
# what sendfile read from it counts as read
eq("backend's top file", be["top_files"], [{"path": "/srv/data.bin", "dev": 2049, "ino": 777,
                                            "bytes_read": 40, "bytes_written": 0, "ops": 1}])
PY

"$PREPLAY_BIN" dump --json "$dir/frontend-100.trace" > "$dir/dump.jsonl"
python3 - "$dir/dump.jsonl" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
def eq(what, got, want):
    if got != want:
        sys.exit(f"dump --json: {what} = {got!r}, want {want!r}")
eq("lines", len(lines), 71)
by = {}
for l in lines:
    by[l["type"]] = by.get(l["type"], 0) + 1
eq("types", by, {"thread_start": 2, "string": 3, "file": 17, "conn": 2, "label": 1, "net": 8,
                 "lock": 12, "cpu": 20, "db": 3, "loss": 1, "thread_exit": 2})
opens = [l for l in lines if l["type"] == "file" and l["op"] == "open"]
eq("open path", opens[0]["path"], "/srv/data.bin")
writes = [l for l in lines if l["type"] == "file" and l["op"] == "write"]
eq("write offsets", [w["offset"] for w in writes], [100 * i for i in range(10)])
eq("label", [l["label"] for l in lines if l["type"] == "label"], ["GET /cart"])
eq("query", {l["query"] for l in lines if l["type"] == "db"}, {"SELECT name FROM users WHERE id = 1"})
eq("loss", [(l["count"], l["reason"]) for l in lines if l["type"] == "loss"], [(7, "buffer_full")])
ts = [l["ts"] for l in lines]
eq("time order", ts, sorted(ts))
PY

# text dump: one line per event
n=$("$PREPLAY_BIN" dump "$dir/backend-101.trace" | wc -l)
[ "$n" -eq 11 ] || { echo "dump text: $n lines, want 11"; exit 1; }

# damage: truncated tail -> exit 1 with the frame offset; --salvage -> exit 3
f="$dir/frontend-100.trace"
size=$(stat -c %s "$f")
head -c $((size - 5)) "$f" > "$dir/cut.trace"
set +e
"$PREPLAY_BIN" info "$dir/cut.trace" > /dev/null 2> "$dir/err"; rc=$?
set -e
[ "$rc" -eq 1 ] || { echo "info on a truncated trace: exit $rc, want 1"; exit 1; }
grep -q "^preplay: $dir/cut.trace: truncated frame at offset [0-9]* (record [0-9]*)$" "$dir/err" ||
    { echo "unexpected error: $(cat "$dir/err")"; exit 1; }
# here --salvage helps (the damage is in the events), so info says so
grep -q "use --salvage to keep what precedes the damage" "$dir/err" ||
    { echo "info on a truncated trace does not suggest --salvage: $(cat "$dir/err")"; exit 1; }
set +e
"$PREPLAY_BIN" info --json --salvage "$dir/cut.trace" > "$dir/salv.json" 2> "$dir/err"; rc=$?
set -e
[ "$rc" -eq 3 ] || { echo "info --salvage on a truncated trace: exit $rc, want 3"; exit 1; }
grep -q "warning: $dir/cut.trace: truncated frame" "$dir/err" || { cat "$dir/err"; exit 1; }
# the cut hits the last frame (3 db queries, the loss marker, 2 thread exits):
# everything before it is kept and its 6 events are counted as lost
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); e=j["events"]; assert (j["processes"], e["cpu"], e["file"], e["net"], e["db"], j["lost_events"]) == (1, 20, 17, 8, 0, 6), j' "$dir/salv.json"
set +e
"$PREPLAY_BIN" dump --salvage "$dir/cut.trace" > /dev/null 2>&1; rc=$?
set -e
[ "$rc" -eq 3 ] || { echo "dump --salvage: exit $rc, want 3"; exit 1; }

# unknown major version: one clear line
cp "$dir/backend-101.trace" "$dir/v3.trace"
printf '\x03' | dd of="$dir/v3.trace" bs=1 seek=16 conv=notrunc status=none
set +e
"$PREPLAY_BIN" dump "$dir/v3.trace" > /dev/null 2> "$dir/err"; rc=$?
set -e
[ "$rc" -eq 1 ] || { echo "dump v3: exit $rc"; exit 1; }
[ "$(cat "$dir/err")" = "preplay: $dir/v3.trace: unknown format major version 3 (this preplay reads 1 to 2)" ] ||
    { echo "unexpected: $(cat "$dir/err")"; exit 1; }
# where --salvage cannot help (no header to start from), info does not
# suggest it: an unknown major version, an empty file; an empty file given
# to info (which takes traces and plans) is called what it is
set +e
"$PREPLAY_BIN" info "$dir/v3.trace" > /dev/null 2> "$dir/err"; rc=$?
set -e
[ "$rc" -eq 1 ] || { echo "info v3: exit $rc"; exit 1; }
[ "$(cat "$dir/err")" = "preplay: $dir/v3.trace: unknown format major version 3 (this preplay reads 1 to 2)" ] ||
    { echo "info v3: $(cat "$dir/err")"; exit 1; }
: > "$dir/empty.pplan"
set +e
"$PREPLAY_BIN" info "$dir/empty.pplan" > /dev/null 2> "$dir/err"; rc=$?
set -e
[ "$rc" -eq 1 ] || { echo "info on an empty file: exit $rc"; exit 1; }
[ "$(cat "$dir/err")" = "preplay: $dir/empty.pplan: empty file (neither a preplay trace nor a plan)" ] ||
    { echo "info on an empty file: $(cat "$dir/err")"; exit 1; }
mkdir "$dir/withempty"
: > "$dir/withempty/a.trace"
set +e
"$PREPLAY_BIN" info "$dir/withempty" > /dev/null 2> "$dir/err"; rc=$?
set -e
[ "$rc" -eq 1 ] || { echo "info on a dir with an empty trace: exit $rc"; exit 1; }
[ "$(cat "$dir/err")" = "preplay: $dir/withempty/a.trace: not a preplay trace (empty file)" ] ||
    { echo "info on a dir with an empty trace: $(cat "$dir/err")"; exit 1; }
set +e
"$PREPLAY_BIN" info --bogus "$dir" > /dev/null 2>&1; rc=$?
set -e
[ "$rc" -eq 2 ] || { echo "usage error: exit $rc, want 2"; exit 1; }
# dump DIR holds at most 64 MiB of events while it merges (issue 24 item
# 1): two traces of 16 STRINGs of 16 MiB each, all at one time (10 KB each
# on disk). The readers keep 2 x 256 MiB of string table; the merge held
# every event's JSON besides (1090 MB max RSS), now at most 64 MiB (631 MB).
mkdir "$dir/wide"
"$TRACE_GEN" big-strings "$dir/wide/a.trace" 16 16777216
"$TRACE_GEN" big-strings "$dir/wide/b.trace" 16 16777216
/usr/bin/time -f %M -o "$dir/rss" "$PREPLAY_BIN" dump "$dir/wide" > "$dir/wide.out"
[ "$(grep -c ' string ' "$dir/wide.out")" -eq 32 ] || { echo "dump of wide: not 32 strings"; exit 1; }
rss=$(tail -1 "$dir/rss")
# a sanitizer's shadow and quarantine make RSS say nothing about the merge
if [ "${PREPLAY_SANITIZE:-0}" != 1 ] && [ "$rss" -ge 900000 ]; then
    echo "dump of wide: max RSS ${rss} KB, want < 900000"
    exit 1
fi
# dump's stack table stays within 256 MiB (issue 24 item 1): 8200 distinct
# STACKs of 4096 frames (18 KB on disk) made it hold 270 MB, 10000 330 MB;
# the 8182nd is refused with one line, the exit status is 1, and every
# event is still printed.
"$TRACE_GEN" big-stacks "$dir/stacks.trace" 8200
set +e
"$PREPLAY_BIN" dump "$dir/stacks.trace" > "$dir/stacks.out" 2> "$dir/err"; rc=$?
set -e
[ "$rc" -eq 1 ] || { echo "dump of 8200 stacks: exit $rc, want 1"; exit 1; }
want="preplay: $dir/stacks.trace: STACK id 8182: the stack table (8182 stacks) would pass its limit of 268435456 bytes; later stacks are not resolved"
[ "$(cat "$dir/err")" = "$want" ] || { echo "dump of 8200 stacks: $(cat "$dir/err")"; exit 1; }
[ "$(grep -c ' stack ' "$dir/stacks.out")" -eq 8200 ] || { echo "dump of 8200 stacks: not 8200 printed"; exit 1; }
echo "test_trace_cli: ok"
