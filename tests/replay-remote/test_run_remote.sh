#!/usr/bin/env bash
# test_run_remote.sh - `preplay run --hosts`: replayers on other hosts over
# ssh, against sshds this test starts with its own host and client keys
# (sshd_fixture.sh): on loopback, inside a network namespace joined by a
# veth pair (a second "host" at its own address), on IPv6 loopback, and
# one whose /tmp is noexec. Checks:
#   1. the front end (web) in the namespace, app local: results (labels,
#      counts, intervals, resources of both tiers), the remote replayer was a
#      process of the namespace listening on the namespace's address, the
#      token on no command line, the remote temp dir gone afterwards; the
#      same over IPv6 (bracketed addresses both ways) on a host whose login
#      prints to stdout before our commands do; both tiers remote (remote
#      calling remote, at a listen address from the hosts file);
#   2. app on the loopback host, its replayer killed mid-run: the run stops
#      naming the component and host, results so far kept, dir removed;
#   3. Ctrl-C (SIGINT) mid-run: results so far, remote side stopped;
#   4. the ssh connection lost mid-run (message naming component and host),
#      and the controller SIGKILLed: remote replayer and temp dir gone;
#   5. faults, each one line naming the host, in bounded time: a closed
#      port, an address nobody answers (connect timeout), a key the host
#      does not accept, one of two hosts never answering (the other's copy
#      removed), a listen address in use there, a host where the
#      copied binary cannot run (a third sshd whose /tmp is noexec); hosts
#      file errors naming file and line (more in test_hosts_unit.c).
# Never touches root's own ssh files; sshds, namespace and veth are removed
# in the trap (fixture_cleanup).
set -uo pipefail
: "${PREPLAY_BIN:?}" "${PREPLAY_BUILD_DIR:?}"
fail() { echo "FAIL: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || fail "needs root (network namespace, sshd)"
[ -x /usr/sbin/sshd ] || fail "needs /usr/sbin/sshd (openssh-server, tools/install-deps)"
command -v ssh >/dev/null || fail "needs ssh (openssh-client)"

work=$(mktemp -d /tmp/replay-remote-XXXXXX)
chmod 755 "$work"
. "$(dirname "$0")/sshd_fixture.sh"
cleanup() {
  fixture_cleanup
  # logs `preplay run` keeps (and names) after the failures provoked here
  cat "$work"/*.err 2>/dev/null | sed -n 's|^run: replayer logs kept in \(/tmp/preplay-run-[A-Za-z0-9]*\)$|\1|p' |
    xargs -r rm -rf
  rm -rf "$work"
}
trap cleanup EXIT

plan="$work/plan"
"$PREPLAY_BUILD_DIR/tests/replay/replay_make_plan" two-tier "$plan" || fail "make_plan"
fixture_keys

# host 1: loopback
port_lo=$(fixture_free_port)
fixture_sshd lo 127.0.0.1 "$port_lo"
sshd_lo=$fixture_pid
# host 2: a network namespace at $ns_ip, us at $host_ip
fixture_netns
ns=$fixture_ns
n=$fixture_n
ip_in=$ns_ip
ip_out=$host_ip
fixture_sshd ns "$ip_in" 22 ip netns exec "$ns"
# host 3: loopback again, but /tmp is noexec there (its own mount namespace)
port_nx=$(fixture_free_port)
fixture_sshd nx 127.0.0.1 "$port_nx" unshare -m --propagation private sh -c \
  'mount --bind /tmp /tmp && mount -o remount,bind,noexec /tmp && exec "$@"' sh
# host 4: IPv6 loopback, with a chatty login (lines on stdout before any
# command's output, as some login scripts print)
port_v6=$(fixture_free_port ::1)
fixture_extra='ForceCommand echo "Welcome to a chatty host"; eval "$SSH_ORIGINAL_COMMAND"' \
  fixture_sshd v6 ::1 "$port_v6"

# ---- 1. web (front end) in the namespace, app here ----
echo "[$SECONDS s] web (front end) in the namespace, app here"
printf '# component  host  (listen address: the one ssh reached)\nweb root@%s\n' "$ip_in" >"$work/hosts1"
"$PREPLAY_BIN" run "$plan" --hosts "$work/hosts1" --ssh-opts "$ssh_opts" --max-intervals 2 \
  --interval 1s --p0 0.99999 -o "$work/r1.json" 2>"$work/r1.err" &
run=$!
remote_pid=""
for _ in $(seq 1 200); do
  remote_pid=$(fixture_replayer_among $(ip netns pids "$ns")) && break
  kill -0 "$run" 2>/dev/null || break
  sleep 0.1
done
[ -n "$remote_pid" ] || { wait "$run"; fail "no replayer process in the namespace: $(cat "$work/r1.err")"; }
cmdline=$(tr '\0' ' ' <"/proc/$remote_pid/cmdline")
agent_cmdline=$(tr '\0' ' ' <"/proc/$(awk '{print $4}' "/proc/$remote_pid/stat")/cmdline")
wait "$run"
rc=$?
cat "$work/r1.err"
[ $rc = 0 ] || fail "run with a remote front end: exit $rc"
echo "remote replayer: $cmdline"
case "$cmdline" in
*"--token"* | *"--component"*) fail "the remote command line shows the replayer's arguments: $cmdline" ;;
"/tmp/preplay-remote."*"/preplay remote-agent /tmp/preplay-remote."*) ;;
*) fail "unexpected remote command line: $cmdline" ;;
esac
[ "$agent_cmdline" = "$cmdline" ] || fail "replayer's parent is not the agent: $agent_cmdline"
python3 - "$work/r1.json" "$ip_in" "$ip_out" <<'PY' || fail "results of the remote run"
import json, os, sys
d = json.load(open(sys.argv[1]))
ip_in, ip_out = sys.argv[2], sys.argv[3]
assert d["kind"] == "run" and d["error"] is None, d["error"]
h = d["hosts"]
assert list(h) == ["web"], h
assert h["web"]["address"].startswith(ip_in + ":"), h
assert h["web"]["controller_address"] == ip_out, h
assert h["web"]["host"] == "root@" + ip_in, h
assert not os.path.exists(h["web"]["dir"]), "remote temp dir left: " + h["web"]["dir"]
iv = d["intervals"]
assert [i["requests"] for i in iv] == [50, 50] and all(i["failed"] == 0 for i in iv), iv
assert iv[0]["p"] is None and 0 <= iv[1]["p"] <= 1, iv
L = d["labels"]
assert set(L) == {"GET /fast", "POST /slow"}, L.keys()
fast, slow = L["GET /fast"], L["POST /slow"]
assert fast["count"] + slow["count"] == 100, (fast["count"], slow["count"])
# at least the blocks' CPU + external time (tests/replay/test_run_e2e.sh); loose
# above: this checks where things ran, not accuracy, on a shared machine
assert 0.0005 <= fast["median_s"] <= 0.05, fast
assert 0.003 <= slow["median_s"] <= 0.05, slow
R = d["resources"]
# counters from the remote front end and from the local app it called: exact
# (STATS waits for blocks that answered to be counted, replay_exec.c)
def exact(blocks, count):
    return blocks == count
assert exact(R["web"]["POST /slow"]["blocks"], slow["count"]), (R["web"], slow["count"])
assert exact(R["web"]["GET /fast"]["blocks"], fast["count"]), (R["web"], fast["count"])
assert exact(R["app"]["app:slow"]["blocks"], slow["count"]), (R["app"], slow["count"])
assert R["app"]["app:slow"]["file_s"] > 0, R["app"]
print("remote front end ok: fast median %.3f ms, slow %.3f ms, web at %s" %
      (fast["median_s"] * 1e3, slow["median_s"] * 1e3, h["web"]["address"]))
PY
[ -z "$(fixture_replayer_among $(ip netns pids "$ns"))" ] || fail "a replayer survived in the namespace"

# ---- 1b. the same over IPv6: web on [::1], calling app here at [::1];
# that host's login prints a line first ----
echo "[$SECONDS s] web on the IPv6 loopback host"
printf 'web root@[::1]:%s\n' "$port_v6" >"$work/hosts6"
"$PREPLAY_BIN" run "$plan" --hosts "$work/hosts6" --ssh-opts "$ssh_opts" --max-intervals 1 \
  --interval 1s --cpu-ratio 1 -o "$work/r6.json" 2>"$work/r6.err" || fail "IPv6 run: $(cat "$work/r6.err")"
python3 - "$work/r6.json" "$port_v6" <<'PY' || fail "results of the IPv6 run"
import json, os, sys
d = json.load(open(sys.argv[1]))
h = d["hosts"]["web"]
assert h["host"] == "root@[::1]:" + sys.argv[2], h
assert h["address"].startswith("[::1]:") and h["controller_address"] == "::1", h
assert not os.path.exists(h["dir"]), h
iv = d["intervals"]
assert len(iv) == 1 and iv[0]["requests"] == 50 and iv[0]["failed"] == 0, iv
slow = d["labels"]["POST /slow"]["count"]
# the remote web reached the local app (listening on [::]) at [::1]
assert slow == d["resources"]["app"]["app:slow"]["blocks"], (slow, d["resources"]["app"])
print("IPv6 ok: web at %s, %d slow requests through app" % (h["address"], slow))
PY

# ---- 1c. both tiers remote: web in the namespace calling app on the
# loopback host, which listens where the namespace reaches it (the hosts
# file's listen address) ----
echo "[$SECONDS s] both tiers remote"
printf 'web root@%s\napp root@127.0.0.1:%s %s:0 # reachable from the namespace\n' \
  "$ip_in" "$port_lo" "$ip_out" >"$work/hosts-both"
"$PREPLAY_BIN" run "$plan" --hosts "$work/hosts-both" --ssh-opts "$ssh_opts" --max-intervals 1 \
  --interval 1s --cpu-ratio 1 -o "$work/rb.json" 2>"$work/rb.err" || fail "both remote: $(cat "$work/rb.err")"
python3 - "$work/rb.json" "$ip_in" "$ip_out" <<'PY' || fail "results with both tiers remote"
import json, os, sys
d = json.load(open(sys.argv[1]))
h = d["hosts"]
assert sorted(h) == ["app", "web"], h
assert h["web"]["address"].startswith(sys.argv[2] + ":"), h
assert h["app"]["address"].startswith(sys.argv[3] + ":"), h
assert not any(os.path.exists(x["dir"]) for x in h.values()), h
iv = d["intervals"]
assert len(iv) == 1 and iv[0]["requests"] == 50 and iv[0]["failed"] == 0, iv
slow = d["labels"]["POST /slow"]["count"]
assert slow == d["resources"]["app"]["app:slow"]["blocks"], (slow, d["resources"])
print("both remote ok: web at %s -> app at %s" % (h["web"]["address"], h["app"]["address"]))
PY

# ---- 2. app on the loopback host, killed during interval 2 ----
echo "[$SECONDS s] app on the loopback host, killed during interval 2"
printf 'app root@127.0.0.1:%s\n' "$port_lo" >"$work/hosts2"
"$PREPLAY_BIN" run "$plan" --hosts "$work/hosts2" --ssh-opts "$ssh_opts" --max-intervals 5 \
  --interval 2s -o "$work/r2.json" 2>"$work/r2.err" &
run=$!
for _ in $(seq 1 200); do
  grep -q '^interval 1 of 5:' "$work/r2.err" 2>/dev/null && break
  kill -0 "$run" 2>/dev/null || break
  sleep 0.1
done
grep -q '^interval 1 of 5:' "$work/r2.err" || { kill "$run"; wait "$run"; fail "interval 1 did not end: $(cat "$work/r2.err")"; }
victim=$(fixture_replayer_among $(fixture_descendants "$sshd_lo"))
[ -n "$victim" ] || { kill "$run"; wait "$run"; fail "no remote replayer under the loopback sshd"; }
sleep 0.3
kill -9 "$victim"
wait "$run"
rc=$?
cat "$work/r2.err"
[ $rc = 1 ] || fail "run went on (exit $rc) after the remote replayer died"
grep -q "^run: the replayer for component 'app' on root@127.0.0.1:$port_lo killed by signal 9 during interval 2" "$work/r2.err" ||
  fail "no message naming the component and host"
python3 - "$work/r2.json" <<'PY' || fail "results so far not kept"
import json, os, sys
d = json.load(open(sys.argv[1]))
assert d["error"] == "replayer 'app' died", d["error"]
assert len(d["intervals"]) == 1 and d["intervals"][0]["requests"] == 100, d["intervals"]
assert d["labels"]["GET /fast"]["count"] > 0
assert d["hosts"]["app"]["address"].startswith("127.0.0.1:")
dir_ = d["hosts"]["app"]["dir"]
open(sys.argv[1] + ".dir", "w").write(dir_)
PY
dir2=$(cat "$work/r2.json.dir")
for _ in $(seq 1 50); do [ -e "$dir2" ] || break; sleep 0.1; done
[ ! -e "$dir2" ] || fail "remote temp dir $dir2 left after the replayer died"

# ---- 3. Ctrl-C during interval 2 ----
echo "[$SECONDS s] Ctrl-C during interval 2"
"$PREPLAY_BIN" run "$plan" --hosts "$work/hosts2" --ssh-opts "$ssh_opts" --max-intervals 5 \
  --interval 2s -o "$work/r3.json" 2>"$work/r3.err" &
run=$!
for _ in $(seq 1 200); do
  grep -q '^interval 1 of 5:' "$work/r3.err" 2>/dev/null && break
  kill -0 "$run" 2>/dev/null || break
  sleep 0.1
done
sleep 0.3
kill -INT "$run"
wait "$run"
rc=$?
cat "$work/r3.err"
[ $rc = 130 ] || fail "Ctrl-C: exit $rc (expected 130)"
grep -q '^run: interrupted by signal 2 during interval 2: results so far kept' "$work/r3.err" ||
  fail "Ctrl-C: no message"
python3 -c "
import json, os; d = json.load(open('$work/r3.json'))
assert d['error'] == 'interrupted' and len(d['intervals']) == 1, (d['error'], d['intervals'])
assert not os.path.exists(d['hosts']['app']['dir']), 'remote dir left'
" || fail "Ctrl-C: results"
[ -z "$(fixture_replayer_among $(fixture_descendants "$sshd_lo"))" ] || fail "Ctrl-C: a remote replayer survived"

# ---- 4. the ssh connection breaks (its sshd session killed), then the
# controller itself killed: the remote side cleans up after itself ----
echo "[$SECONDS s] connection lost, controller killed"
wait_remote_replayer() { # RUN-PID: pid of the replayer under the loopback sshd
  local v
  for _ in $(seq 1 300); do
    v=$(fixture_replayer_among $(fixture_descendants "$sshd_lo")) && { echo "$v"; return 0; }
    kill -0 "$1" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}
"$PREPLAY_BIN" run "$plan" --hosts "$work/hosts2" --ssh-opts "$ssh_opts" --max-intervals 5 \
  --interval 2s -o "$work/r4.json" 2>"$work/r4.err" &
run=$!
for _ in $(seq 1 200); do
  grep -q '^interval 1 of 5:' "$work/r4.err" 2>/dev/null && break
  kill -0 "$run" 2>/dev/null || break
  sleep 0.1
done
victim=$(wait_remote_replayer "$run") || { wait "$run"; fail "no remote replayer: $(cat "$work/r4.err")"; }
session=""
for p in $(pgrep -P "$sshd_lo"); do
  fixture_descendants "$p" | grep -qx "$victim" && session=$p
done
[ -n "$session" ] || fail "no sshd session above the remote replayer"
sleep 0.3
kill -9 "$session"
wait "$run"
rc=$?
cat "$work/r4.err"
[ $rc = 1 ] || fail "connection lost: exit $rc"
grep -q "^run: the replayer for component 'app' on root@127.0.0.1:$port_lo lost its ssh connection during interval 2" "$work/r4.err" ||
  fail "connection lost: no message naming component and host"
for _ in $(seq 1 50); do kill -0 "$victim" 2>/dev/null || break; sleep 0.1; done
! kill -0 "$victim" 2>/dev/null || fail "connection lost: the remote replayer survived"

before=$(ls -d /tmp/preplay-remote.* 2>/dev/null | wc -l)
"$PREPLAY_BIN" run "$plan" --hosts "$work/hosts2" --ssh-opts "$ssh_opts" --max-intervals 5 \
  --interval 2s -o "$work/r5.json" 2>"$work/r5.err" &
run=$!
victim=$(wait_remote_replayer "$run") || { wait "$run"; fail "no remote replayer: $(cat "$work/r5.err")"; }
# where it keeps its logs: the --peers of its local replayer (web)
killed_dir=""
for _ in $(seq 1 300); do
  for c in $(pgrep -P "$run"); do
    d=$(tr '\0' '\n' <"/proc/$c/cmdline" 2>/dev/null | grep -A1 -x -- --peers | tail -1)
    [ -n "$d" ] && killed_dir=$(dirname "$d")
  done
  [ -n "$killed_dir" ] && break
  sleep 0.1
done
case "$killed_dir" in /tmp/preplay-run-*) ;; *) fail "no local replayer of the run to kill" ;; esac
kill -9 "$run"
wait "$run" 2>/dev/null
for _ in $(seq 1 100); do kill -0 "$victim" 2>/dev/null || break; sleep 0.1; done
! kill -0 "$victim" 2>/dev/null || fail "controller killed: the remote replayer survived"
for _ in $(seq 1 50); do
  [ "$(ls -d /tmp/preplay-remote.* 2>/dev/null | wc -l)" = "$before" ] && break
  sleep 0.1
done
[ "$(ls -d /tmp/preplay-remote.* 2>/dev/null | wc -l)" = "$before" ] || fail "controller killed: remote temp dir left"
rm -rf "$killed_dir" # its local log dir: nobody left to remove it

# ---- 5. faults: one line naming the host, in bounded time ----
echo "[$SECONDS s] faults: one line naming the host, in bounded time"
one_fault() { # NAME HOSTS-LINE EXPECTED-REGEX MAX-SECONDS [SSH-OPTS]
  local name=$1 line=$2 want=$3 max=$4 opts=${5:-$ssh_opts}
  printf '%s\n' "$line" >"$work/hosts-$name"
  local t0=$SECONDS
  "$PREPLAY_BIN" run "$plan" --hosts "$work/hosts-$name" --ssh-opts "$opts" --ssh-timeout 1 \
    --cpu-ratio 1 --max-intervals 1 --interval 1s -o "$work/f.json" 2>"$work/f-$name.err"
  local rc=$? took=$((SECONDS - t0))
  local first
  first=$(head -1 "$work/f-$name.err")
  echo "$name ($took s): $first"
  [ $rc = 1 ] || fail "$name: exit $rc"
  [ "$took" -le "$max" ] || fail "$name: took $took s (max $max)"
  echo "$first" | grep -Eq "$want" || fail "$name: '$first' does not match '$want'"
  ! grep -v '^run: replayer logs kept in ' "$work/f-$name.err" | tail -n +2 | grep -q . ||
    fail "$name: more than one line: $(cat "$work/f-$name.err")"
}
closed=$(fixture_free_port)
one_fault closed "app root@127.0.0.1:$closed" \
  "^run: component 'app': host root@127.0.0.1:$closed: ssh: connect to host 127.0.0.1 port $closed: Connection refused$" 10
one_fault timeout "app root@10.213.$n.3" \
  "^run: component 'app': host root@10.213.$n.3: ssh: connect to host 10.213.$n.3 port 22: (Connection timed out|No route to host)$" 15
one_fault auth "app root@127.0.0.1:$port_lo" \
  "^run: component 'app': host root@127.0.0.1:$port_lo: ssh: .*Permission denied \(publickey\)" 10 \
  "-F /dev/null -i $work/otherkey -o IdentitiesOnly=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"
one_fault busy "app root@127.0.0.1:$port_lo 127.0.0.1:$port_lo" \
  "^run: component 'app': host root@127.0.0.1:$port_lo: the replayer exited with status 1 before listening: replay: listen 127.0.0.1:$port_lo: port in use$" 15
before=$(ls -d /tmp/preplay-remote.* 2>/dev/null | wc -l)
# two hosts copy at once; one never answers: the other's copy is removed
one_fault one-of-two "web root@10.213.$n.3
app root@127.0.0.1:$port_lo" \
  "^run: component 'web': host root@10.213.$n.3: ssh: connect to host 10.213.$n.3 port 22: (Connection timed out|No route to host)$" 15
[ "$(ls -d /tmp/preplay-remote.* 2>/dev/null | wc -l)" = "$before" ] || fail "one-of-two: app's temp dir left"
one_fault noexec "app root@127.0.0.1:$port_nx" \
  "^run: component 'app': host root@127.0.0.1:$port_nx: the copied preplay does not run there: .*/tmp/preplay-remote\.[A-Za-z0-9]+/preplay: Permission denied$" 10
[ "$(ls -d /tmp/preplay-remote.* 2>/dev/null | wc -l)" = "$before" ] || fail "noexec: remote temp dir left"
one_fault unknown-component "nosuch root@127.0.0.1:$port_lo" \
  "^run: --hosts $work/hosts-unknown-component:1: no component 'nosuch' in $plan$" 5
one_fault bad-port "app root@127.0.0.1:99999" \
  "^run: --hosts $work/hosts-bad-port:1: 'root@127.0.0.1:99999': bad ssh port '99999'$" 5
printf 'app root@127.0.0.1:%s\napp root@%s\n' "$port_lo" "$ip_in" >"$work/hosts-dup"
out=$("$PREPLAY_BIN" run "$plan" --hosts "$work/hosts-dup" -o "$work/f.json" 2>&1)
[ $? = 1 ] && [ "$out" = "run: --hosts $work/hosts-dup:2: component 'app' is already on line 1" ] ||
  fail "duplicate component: '$out'"
# the logs the failed runs kept: ssh's and the remote replayers' stderr (in
# the ASan build, a report from either side would be there)
for d in $(cat "$work"/*.err | sed -n 's|^run: replayer logs kept in \(/tmp/preplay-run-[A-Za-z0-9]*\)$|\1|p'); do
  ! grep -s "Sanitizer" "$d"/*.log || fail "sanitizer report in $d"
done
# nothing of ours left on the "hosts"
[ -z "$(fixture_replayer_among $(fixture_descendants "$sshd_lo") $(ip netns pids "$ns"))" ] || fail "replayer left"
echo "run --hosts ok"
