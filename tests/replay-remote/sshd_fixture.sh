# sshd_fixture.sh - sourced by the replay-remote test and benchmark: ssh
# "hosts" of our own for `preplay run --hosts`. Generated host and client
# keys in the caller's $work; sshds on loopback (IPv4 or IPv6) or inside a
# network namespace joined by a veth pair (a host at its own address);
# fixture_cleanup stops them and removes namespace and veth. Never touches
# root's own ssh files or any sshd it did not start.
# Needs from the caller: $work (a temp dir it removes), fail().

fixture_pids=()
fixture_ns=""
fixture_veth=""

# keys and the ssh options that use them
fixture_keys() {
  ssh-keygen -q -t ed25519 -N '' -f "$work/hostkey" || fail "ssh-keygen"
  ssh-keygen -q -t ed25519 -N '' -f "$work/clientkey" || fail "ssh-keygen"
  ssh-keygen -q -t ed25519 -N '' -f "$work/otherkey" || fail "ssh-keygen"
  cp "$work/clientkey.pub" "$work/authorized_keys"
  chmod 600 "$work/authorized_keys"
  mkdir -p /run/sshd # privilege separation directory sshd insists on
  # -F /dev/null, IdentitiesOnly: no user ssh config or agent keys get in the way
  ssh_opts="-F /dev/null -i $work/clientkey -o IdentitiesOnly=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"
}

fixture_config() { # NAME LISTEN
  cat >"$work/sshd-$1.conf" <<EOF
ListenAddress $2
HostKey $work/hostkey
PidFile $work/sshd-$1.pid
AuthorizedKeysFile $work/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
MaxStartups 50
LogLevel ERROR
${fixture_extra:-}
EOF
}

fixture_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
fixture_free_port() { # [HOST] (tests/common/free_port.py: below the ephemeral range)
  python3 "$fixture_dir/../common/free_port.py" "${1:-127.0.0.1}"
}

fixture_wait_port() { # HOST PORT
  for _ in $(seq 1 100); do
    timeout 1 bash -c "exec 3<>/dev/tcp/$1/$2" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

# fixture_sshd NAME HOST PORT [COMMAND PREFIX...]: an sshd on HOST:PORT,
# started through the prefix (ip netns exec NS, unshare ...); its pid in
# fixture_pid. $fixture_extra: more sshd_config lines.
fixture_sshd() {
  local name=$1 host=$2 port=$3
  shift 3
  local listen="$host:$port"
  case "$host" in *:*) listen="[$host]:$port" ;; esac
  fixture_config "$name" "$listen"
  "$@" /usr/sbin/sshd -D -f "$work/sshd-$name.conf" -E "$work/sshd-$name.log" &
  fixture_pid=$!
  fixture_pids+=("$fixture_pid")
  fixture_wait_port "$host" "$port" || fail "sshd $name did not start: $(cat "$work/sshd-$name.log")"
}

# a namespace at 10.213.N.2 (ns_ip), us at 10.213.N.1 (host_ip), N free here
fixture_netns() {
  local tag=$$
  fixture_ns="pprm$tag"
  fixture_veth="ppr${tag}a"
  fixture_n=$((tag % 250 + 1))
  for _ in $(seq 1 250); do
    ip -4 addr | grep -q "inet 10\.213\.$fixture_n\." || break
    fixture_n=$((fixture_n % 250 + 1))
  done
  host_ip="10.213.$fixture_n.1"
  ns_ip="10.213.$fixture_n.2"
  ip netns add "$fixture_ns" || fail "ip netns add"
  ip link add "$fixture_veth" type veth peer name "ppr${tag}b" || fail "veth"
  ip link set "ppr${tag}b" netns "$fixture_ns" || fail "veth into namespace"
  ip addr add "$host_ip/24" dev "$fixture_veth" && ip link set "$fixture_veth" up || fail "veth up"
  ip netns exec "$fixture_ns" ip addr add "$ns_ip/24" dev "ppr${tag}b" || fail "namespace address"
  ip netns exec "$fixture_ns" ip link set "ppr${tag}b" up || fail "namespace veth up"
  ip netns exec "$fixture_ns" ip link set lo up || fail "namespace lo up"
}

# pid of the process named preplay-replay (a remote replayer) among some pids
fixture_replayer_among() {
  for p in "$@"; do
    [ "$(cat "/proc/$p/comm" 2>/dev/null)" = preplay-replay ] && { echo "$p"; return 0; }
  done
  return 1
}
fixture_descendants() { # PID: every descendant, depth first
  local c
  for c in $(pgrep -P "$1"); do echo "$c"; fixture_descendants "$c"; done
}

fixture_cleanup() {
  local p
  for p in "${fixture_pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${fixture_pids[@]}"; do
    for _ in $(seq 1 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null
  done
  [ -n "$fixture_veth" ] && ip link del "$fixture_veth" 2>/dev/null
  [ -n "$fixture_ns" ] && ip netns del "$fixture_ns" 2>/dev/null
  return 0
}
