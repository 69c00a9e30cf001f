#!/usr/bin/env bash
# test_hostile_clients.sh - a replayer stays usable while clients without
# the token misbehave (issue 24 item 4). One replayer (4 workers) under
# RLIMIT_NOFILE 64, then:
#   slow-loris  20 connections (more than the workers) send one byte each:
#               a client with the token is still served at once, and the
#               replayer closes the 20 within its header deadline (2 s);
#   flood       200 connections without the token (more than the descriptor
#               limit): a client with the token is still served;
#   exhaustion  connections with the token until accept(2) fails with
#               EMFILE: the replayer does not spin (CPU over 2 s measured
#               from /proc/PID/stat), a connection it has keeps being
#               served, and the waiting ones are served once some close.
# CPU bounds are loose (a spinning replayer takes ~2 CPU-s per second here).
set -euo pipefail
: "${PREPLAY_BIN:?}" "${PREPLAY_BUILD_DIR:?}"
work=$(mktemp -d /tmp/replay-hostile-XXXXXX)
pid=
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [ -f "$work/replay.log" ] && tail -5 "$work/replay.log" >&2; exit 1; }
"$PREPLAY_BUILD_DIR/tests/replay/replay_make_plan" two-tier "$work/plan" || fail "make_plan"
token=0123456789abcdef
printf '%s\n' "$token" >"$work/token"
prlimit --nofile=64:64 "$PREPLAY_BIN" replay "$work/plan" --component web --listen 127.0.0.1:0 \
  --token-file "$work/token" --workers 4 --cpu-ratio 1 >"$work/listen" 2>"$work/replay.log" &
pid=$!
for _ in $(seq 1 200); do grep -q listening "$work/listen" 2>/dev/null && break; sleep 0.1; done
addr=$(sed -n 's/^listening //p' "$work/listen")
[ -n "$addr" ] || fail "replayer did not start: $(cat "$work/replay.log")"

python3 - "$addr" "$token" "$pid" <<'PY' || fail "hostile clients"
import os, socket, struct, sys, time
host, port = sys.argv[1].rsplit(":", 1)
token = int(sys.argv[2], 16)
pid = int(sys.argv[3])
HZ = os.sysconf("SC_CLK_TCK")

def cpu():
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / HZ  # utime + stime

def connect():
    return socket.create_connection((host, int(port)), timeout=5)

def stats_request(s):
    # control request REPLAY_BLOCK_STATS: answered with a length and JSON
    s.sendall(struct.pack("<IIQII", 0x31505250, 0xFFFFFFFF, token, 0, 0))

def stats_answer(s, timeout):
    s.settimeout(timeout)
    n = struct.unpack("<I", s.recv(4, socket.MSG_WAITALL))[0]
    body = s.recv(n, socket.MSG_WAITALL) if n else b""
    assert len(body) == n and body.startswith(b"{"), body[:40]

def served_within(bound, what):
    t0 = time.monotonic()
    s = connect()
    stats_request(s)
    try:
        stats_answer(s, bound)
    except (socket.timeout, struct.error, AssertionError) as e:
        sys.exit(f"{what}: a client with the token was not served within {bound} s ({e!r})")
    dt = time.monotonic() - t0
    print(f"{what}: served in {dt * 1000:.1f} ms")
    return s

def check_cpu(c0, t0, limit, what):
    used, wall = cpu() - c0, time.monotonic() - t0
    print(f"{what}: {used:.2f} CPU-s in {wall:.1f} s")
    if used > limit:
        sys.exit(f"{what}: the replayer used {used:.2f} CPU-s in {wall:.1f} s (limit {limit})")

# 1. slow-loris: one byte each, more connections than workers
c0, t0 = cpu(), time.monotonic()
loris = []
for _ in range(20):
    s = connect()
    s.send(b"P")
    loris.append(s)
time.sleep(0.3)
served_within(1.5, "slow-loris").close()
closed = 0
deadline = time.monotonic() + 4.5
for s in loris:
    s.settimeout(max(0.05, deadline - time.monotonic()))
    try:
        closed += s.recv(1) == b""
    except ConnectionResetError:
        closed += 1
    except socket.timeout:
        pass
    s.close()
if closed != len(loris):
    sys.exit(f"slow-loris: {len(loris) - closed} of {len(loris)} connections still open after 4.5 s")
check_cpu(c0, t0, 1.0, "slow-loris")

# 2. flood: more connections without the token than the replayer has descriptors
c0, t0 = cpu(), time.monotonic()
flood = []
for i in range(200):
    s = connect()
    s.send(b"P" if i % 2 else b"")
    flood.append(s)
time.sleep(0.3)
served_within(2.0, "flood").close()
for s in flood:
    s.close()
check_cpu(c0, t0, 1.0, "flood")
time.sleep(0.5)

# 3. exhaustion: connections with the token until the replayer has no descriptor left
held = []
for _ in range(90):
    s = connect()
    stats_request(s)
    held.append(s)
answered, waiting = [], []
for s in held:
    try:
        stats_answer(s, 0.3 if not waiting else 0.02)
        answered.append(s)
    except socket.timeout:
        waiting.append(s)
print(f"exhaustion: {len(answered)} connections served, {len(waiting)} waiting")
if not waiting or len(answered) < 20:
    sys.exit(f"exhaustion: expected the descriptor limit to stop accepting "
             f"({len(answered)} served, {len(waiting)} waiting)")
c0, t0 = cpu(), time.monotonic()
time.sleep(2.0)
check_cpu(c0, t0, 0.5, "exhaustion")
# a connection the replayer already has is served
t1 = time.monotonic()
stats_request(answered[0])
stats_answer(answered[0], 1.0)
print(f"exhaustion: held connection served in {(time.monotonic() - t1) * 1000:.1f} ms")
# freeing descriptors lets the waiting ones in
for s in answered[1:len(waiting) + 10]:
    s.close()
for s in waiting:
    try:
        stats_answer(s, 3.0)
    except socket.timeout:
        sys.exit("exhaustion: a waiting connection was not served after descriptors were freed")
print("hostile clients ok")
PY
grep -q "no request header within" "$work/replay.log" || fail "slow-loris not logged"
grep -q "out of descriptors" "$work/replay.log" || fail "descriptor exhaustion not logged"
kill -0 "$pid" || fail "replayer died"
echo "hostile clients ok"
