# shellcheck shell=bash
# tests/common/type_client.sh - sourced (bash) by the accuracy benchmarks
# that run an app, or its replay, inside an emulated type (tools/emulate)
# while the load client stays outside the type's CPU, as users on other
# machines are (tests/bench/accuracy/short.sh, lemp-verdict.sh). Inside the
# type `ip netns exec` hides the cgroup file systems, so the process inside
# asks the script outside to move it. Defines these functions and nothing
# else; must never move anything but the process named to it, nor leave a
# type running after its command ended.
#
# type_run DIR TIMEOUT EMULATE_ARGS...: `timeout TIMEOUT tools/emulate
#   EMULATE_ARGS...` (outside), moving the process whose pid appears in
#   DIR/move-me, all its threads, out of the type's cpu cgroup (into the
#   host's: no quota) and onto the host's CPUs the type does not have (a
#   cpuset of its own, preplay-clients-PID under the cpuset root, removed
#   when emulate ends; the host's whole cpuset when the type has every
#   CPU); its network namespace stays. A client
#   merely let out of the type's cpuset stays on the CPU it ran on, which
#   is the type's: measured, `preplay run`'s driver (real-time priority)
#   stayed on the type's one CPU for a whole run, so each request's
#   replayer woke on an already awake CPU while the real app's woke a
#   halted one (40 .. 70 us on this VM; the sample app's GET /static came
#   back 33 .. 38 % fast). The exit status is emulate's.
# type_client_leave PID DIR (inside): asks for PID to be moved and waits
#   until it is (15 s at most; status 1 if not).
# type_client_outside PID CMD... (outside): runs CMD (a command or a shell
#   function) on the host's CPUs that PID's cpuset lacks (PID: a process
#   inside the type), in a cpuset of its own removed afterwards; for a
#   client started on the host, which is otherwise free to run on the
#   type's CPUs. The exit status is CMD's. A caller that may be stopped
#   meanwhile calls type_client_cleanup from its exit trap (removes that
#   cpuset, with whatever is left in it moved out).
# type_run_controller_leave DIR CMD... (inside): runs CMD (`preplay run`)
#   and, once it has forked its replayers (inside the type; they are forked
#   after the CPU ratio was measured here), moves CMD itself, the
#   controller with its driver, out; the exit status is CMD's. CMD's pid
#   is in type_client_run_pid while it runs, for the caller's trap (once
#   moved, the type's end no longer stops it).
# type_cpu_used_ns PID (outside): the CPU time (ns) the processes of PID's
#   type have used so far (its cpuacct group's cpuacct.usage: tools/emulate
#   makes one when the host mounts cpuacct); nothing printed, status 1,
#   when PID is in no type's cpuacct group (the root's figure would count
#   the whole host).
type_client_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# type_client_cpus LIST: the CPUs of the cpuset list LIST ("0-1,3"), one per line
type_client_cpus() {
    local part
    for part in ${1//,/ }; do
        if [[ $part == *-* ]]; then seq "${part%-*}" "${part#*-}"; else echo "$part"; fi
    done
}

type_cpu_used_ns() {
    local rel
    rel=$(awk -F: '$2 ~ /(^|,)cpuacct(,|$)/ { print $3 }' "/proc/$1/cgroup" 2>/dev/null)
    case $rel in /preplay-emu-*) ;; *) return 1 ;; esac
    cat "/sys/fs/cgroup/cpuacct$rel/cpuacct.usage" 2>/dev/null
}

# type_client_cpuset PID: a cpuset cgroup (path under the cpuset root, ""
# for the root) holding the host's CPUs that PID's current cpuset lacks
type_client_cpuset() {
    local root=/sys/fs/cgroup/cpuset rel mine free name
    rel=$(awk -F: '$2 ~ /(^|,)cpuset(,|$)/ { print $3 }' "/proc/$1/cgroup")
    mine=$(type_client_cpus "$(cat "$root$rel/cpuset.cpus")")
    free=$(type_client_cpus "$(cat "$root/cpuset.cpus")" | grep -vxF -e "${mine:-none}" | paste -sd, -)
    [ -n "$free" ] || { echo ""; return; }
    name=preplay-clients-$$
    if ! { mkdir -p "$root/$name" && echo "$free" >"$root/$name/cpuset.cpus" &&
        cat "$root/cpuset.mems" >"$root/$name/cpuset.mems"; }; then
        echo "type_run: no cpuset of CPUs $free for the clients; they may share the type's CPUs" >&2
        rmdir "$root/$name" 2>/dev/null
        echo ""
        return
    fi
    echo "/$name"
}

type_run() {
    local d=$1 limit=$2 e pid set="" status
    shift 2
    mkdir -p "$d"
    timeout "$limit" "$type_client_root/tools/emulate" "$@" &
    e=$!
    while kill -0 "$e" 2>/dev/null; do
        if [ -s "$d/move-me" ]; then
            pid=$(cat "$d/move-me")
            [ -n "$set" ] || set=$(type_client_cpuset "$pid")
            echo "$pid" >/sys/fs/cgroup/cpu/cgroup.procs
            echo "$pid" >"/sys/fs/cgroup/cpuset$set/cgroup.procs"
            mv "$d/move-me" "$d/moved"
        fi
        sleep 0.05
    done
    wait "$e"
    status=$?
    [ -n "$set" ] && type_client_cpuset_remove "$set"
    return $status
}

# type_client_cpuset_remove SET: removes the clients' cpuset SET (from
# type_client_cpuset), whatever is left in it moved to the root first
type_client_cpuset_remove() {
    local t
    while read -r t; do
        echo "$t" >/sys/fs/cgroup/cpuset/tasks 2>/dev/null
    done <"/sys/fs/cgroup/cpuset$1/tasks"
    rmdir "/sys/fs/cgroup/cpuset$1" 2>/dev/null ||
        echo "type_client: could not remove the clients' cpuset $1" >&2
}

type_client_outside() {
    local pid=$1 set status
    shift
    set=$(type_client_cpuset "$pid")
    type_client_outside_set=$set # for the caller's trap: type_client_cleanup
    (
        if [ -n "$set" ] && ! echo "$BASHPID" >"/sys/fs/cgroup/cpuset$set/cgroup.procs"; then
            echo "type_client_outside: cannot move the client into cpuset $set" >&2
            exit 125
        fi
        "$@"
    )
    status=$?
    type_client_cleanup
    return $status
}

type_client_cleanup() {
    [ -n "${type_client_outside_set:-}" ] && type_client_cpuset_remove "$type_client_outside_set"
    type_client_outside_set=""
}

type_client_leave() {
    local i
    echo "$1" >"$2/move-me"
    for ((i = 0; i < 300; i++)); do
        [ -e "$2/moved" ] && [ ! -e "$2/move-me" ] &&
            awk -F: '$2 ~ /(^|,)cpu(,|$)/ && $3 == "/" { ok = 1 } END { exit !ok }' "/proc/$1/cgroup" &&
            { rm -f "$2/moved"; return 0; }
        sleep 0.05
    done
    echo "type_client_leave: process $1 was not moved out of the type in 15 s" >&2
    return 1
}

type_run_controller_leave() {
    local d=$1 run i n
    shift
    "$@" &
    run=$!
    # shellcheck disable=SC2034 # the caller's trap reads it
    type_client_run_pid=$run
    for ((i = 0; i < 600; i++)); do
        n=$(pgrep -P "$run" -c -f replay)
        [ "${n:-0}" -ge 2 ] && break
        kill -0 "$run" 2>/dev/null || break
        sleep 0.05
    done
    if kill -0 "$run" 2>/dev/null && ! type_client_leave "$run" "$d"; then
        kill -TERM "$run" 2>/dev/null
        wait "$run"
        type_client_run_pid=""
        return 1
    fi
    wait "$run"
    i=$?
    # shellcheck disable=SC2034
    type_client_run_pid=""
    return $i
}
