#!/usr/bin/env bash
# tests/apps/db-stop.sh DIR - stops the MariaDB server db-start.sh started for
# DIR: SIGTERM, then SIGKILL after 30 s. Quiet and successful when none runs.
# Never kills anything but the pid recorded in DIR/mariadbd.pid.
set -uo pipefail
if [ $# -ne 1 ]; then
  echo "usage: db-stop.sh DIR" >&2
  exit 2
fi
pidfile="$1/mariadbd.pid"
[ -f "$pidfile" ] || exit 0
pid=$(cat "$pidfile")
case "$pid" in '' | *[!0-9]*) echo "db-stop: $pidfile holds no pid" >&2; exit 1 ;; esac
if kill -0 "$pid" 2>/dev/null && grep -q mariadbd "/proc/$pid/comm" 2>/dev/null; then
  kill -TERM "$pid"
  for _ in $(seq 1 150); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.2
  done
  if kill -0 "$pid" 2>/dev/null; then
    echo "db-stop: mariadbd $pid did not stop within 30 s, killing it" >&2
    kill -KILL "$pid" 2>/dev/null || true
  fi
fi
rm -f "$pidfile"
