# shellcheck shell=bash
# tests/common/client_prio.sh - client_prio, sourced (bash) by the
# benchmarks whose load clients stand for users on other machines
# (tests/bench/accuracy/lemp-verdict.sh, apps/app-common.sh). Defines that
# one function and nothing else; must never raise anything but the
# command it is given, nor fail where real-time priority is not allowed.
#
# client_prio CMD...: runs CMD (a command or a shell function) in a
# subshell at the lowest real-time priority (SCHED_FIFO 1) where allowed,
# as `preplay run`'s driver takes it itself: a client woken late to read an
# answer counts that in the response time, so neither measures this host's
# other load. Where it is not allowed (no CAP_SYS_NICE, a cgroup with no
# real-time time) CMD runs at its normal priority; its exit status is CMD's.
client_prio() { (chrt -f -p 1 "$BASHPID" 2>/dev/null; "$@"); }
