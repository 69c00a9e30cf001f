#!/usr/bin/env bash
# test_prepare_cli.sh - `preplay prepare`: dummy files at the manifest's
# sizes with incompressible content, --cold evicting them from the page
# cache (checked with fincore), and exact one-line errors for a missing
# plan, a wrong plan version, a trace given as plan, an unwritable or full
# directory and bad options. Needs root (mounts small tmpfs directories).
set -euo pipefail
: "${PREPLAY_BIN:?}" "${PLAN_GEN:?}"
if [[ $(id -u) != 0 ]]; then echo "test_prepare_cli: needs root (mounts tmpfs)"; exit 1; fi
work=$(mktemp -d /tmp/preplay-prepare-test.XXXXXX)
cleanup() {
    for m in "$work/ro" "$work/small"; do mountpoint -q "$m" 2>/dev/null && umount "$m"; done
    rm -rf "$work"
}
trap cleanup EXIT

"$PLAN_GEN" "$work/app.plan" /var/lib/app/orders.db:3000000 /var/log/app.log:0 \
    "/etc/app conf:1234"
d="$work/dummy"
"$PREPLAY_BIN" prepare "$work/app.plan" --dir "$d" --json > "$work/out.json"
/usr/bin/python3 - "$work/out.json" "$d" <<'PY'
import json, os, sys, zlib
j = json.load(open(sys.argv[1])); d = sys.argv[2]
want = [("/var/lib/app/orders.db", "00000-orders.db", 3000000),
        ("/var/log/app.log", "00001-app.log", 0),
        ("/etc/app conf", "00002-app_conf", 1234)]
got = [(f["recorded_path"], os.path.basename(f["path"]), f["size"]) for f in j["files"]]
if got != want: sys.exit(f"prepare --json files: {got}")
if j["bytes"] != 3001234 or j["cold"] is not None or j["dir"] != d:
    sys.exit(f"prepare --json summary: {j}")
for rec, name, size in want:
    p = os.path.join(d, name)
    st = os.stat(p)
    if st.st_size != size: sys.exit(f"{p}: size {st.st_size}, want {size}")
    if st.st_blocks * 512 < size: sys.exit(f"{p}: sparse ({st.st_blocks} blocks)")
data = open(os.path.join(d, "00000-orders.db"), "rb").read()
if len(zlib.compress(data, 6)) < len(data): sys.exit("orders.db compresses: not incompressible")
if len(set(data[i:i + 4096] for i in range(0, len(data), 4096))) != (len(data) + 4095) // 4096:
    sys.exit("orders.db repeats a 4 KiB block")
PY
if [[ $(ls "$d" | wc -l) != 3 ]]; then echo "prepare made other files: $(ls "$d")"; exit 1; fi

resident() { fincore --bytes --noheadings --output RES "$1" | tr -d ' '; }
# warm: the pages just written stay cached
"$PREPLAY_BIN" prepare "$work/app.plan" --dir "$d" > "$work/out.txt"
grep -Eq "^prepared 3 dummy files \(3\.0 MB\) in $d in [0-9.]+ s$" "$work/out.txt" ||
    { echo "text summary: $(cat "$work/out.txt")"; exit 1; }
if [[ $(resident "$d/00000-orders.db") == 0 ]]; then echo "no page cached after a warm prepare"; exit 1; fi
for method in auto fadvise; do
    args=(--cold)
    [[ $method == fadvise ]] && args=(--cold-method fadvise)
    "$PREPLAY_BIN" prepare "$work/app.plan" --dir "$d" "${args[@]}" > "$work/out.txt"
    want_method=$([[ $method == auto ]] && echo drop_caches || echo fadvise)
    grep -q "; page cache dropped ($want_method)$" "$work/out.txt" ||
        { echo "--cold $method: $(cat "$work/out.txt")"; exit 1; }
    res=$(resident "$d/00000-orders.db")
    if [[ $res != 0 ]]; then echo "--cold ($method): $res bytes still cached"; exit 1; fi
done

expect_error() { # expect_error STATUS MESSAGE ARGS...
    local want_status=$1 want=$2
    shift 2
    local status=0
    "$PREPLAY_BIN" prepare "$@" > "$work/stdout" 2> "$work/stderr" || status=$?
    if [[ $status != "$want_status" || "$(cat "$work/stderr")" != "$want" || -s "$work/stdout" ]]; then
        echo "prepare $*: exit $status, stderr '$(cat "$work/stderr")'; want $want_status, '$want'"
        exit 1
    fi
}
expect_error 1 "preplay prepare: $work/missing.plan: cannot open: No such file or directory" \
    "$work/missing.plan" --dir "$d"
# wrong major version: bytes 16-17 of the header frame (PLAN.md §2)
cp "$work/app.plan" "$work/v9.plan"
printf '\x09\x00' | dd of="$work/v9.plan" bs=1 seek=16 conv=notrunc status=none
expect_error 1 "preplay prepare: $work/v9.plan: unknown format major version 9 (this preplay reads 1)" \
    "$work/v9.plan" --dir "$d"
: > "$work/empty.plan"
expect_error 1 "preplay prepare: $work/empty.plan: not a preplay plan (empty file)" \
    "$work/empty.plan" --dir "$d"
mkdir "$work/ro"
mount -t tmpfs -o ro,size=1m preplay-ro "$work/ro"
expect_error 1 "preplay prepare: $work/ro: directory not writable: Read-only file system" \
    "$work/app.plan" --dir "$work/ro"
expect_error 1 "preplay prepare: $work/ro/sub: cannot create directory: Read-only file system" \
    "$work/app.plan" --dir "$work/ro/sub"
mkdir "$work/small"
mount -t tmpfs -o size=1m preplay-small "$work/small"
expect_error 1 "preplay prepare: $work/small: the 3 dummy files need 3.0 MB more, only 1.0 MB free" \
    "$work/app.plan" --dir "$work/small"
if [[ -n $(ls "$work/small") ]]; then echo "a full directory got partial files"; exit 1; fi
expect_error 2 "preplay prepare: --dir D is required" "$work/app.plan"
expect_error 2 "preplay prepare: no plan given (preplay prepare PLAN --dir D)" --dir "$d"
expect_error 2 "preplay prepare: unexpected argument 'extra'" "$work/app.plan" extra --dir "$d"
expect_error 2 "preplay prepare: bad --cold-method 'sometimes' (auto, drop_caches, fadvise)" \
    "$work/app.plan" --dir "$d" --cold-method sometimes
"$PREPLAY_BIN" prepare --help | grep -q '^usage: preplay prepare PLAN --dir D'
echo "prepare CLI: ok"
