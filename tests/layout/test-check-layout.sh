#!/usr/bin/env bash
# test-check-layout.sh - tools/check-layout passes on the real tree and, on a
# small tree that breaks the dependency rule in each way it can be broken,
# fails with exactly one line per violation (and none for the allowed
# includes beside them).
set -euo pipefail
src=${PREPLAY_SOURCE_DIR:?}
check=$src/tools/check-layout
fail() { echo "FAIL: $*"; exit 1; }

out=$("$check" "$src" 2>&1) || fail "the real tree breaks the rule:"$'\n'"$out"
[ -z "$out" ] || fail "check-layout printed on a clean tree: $out"

tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
mkdir -p "$tree"/{formats,stats,inspect,replayer,tools,tracer/preload,tracer/cpuclock}
touch "$tree"/formats/{plan.h,trace_event.h,trace_file.h} "$tree"/replayer/plan_x.h \
  "$tree"/tracer/shm_layout.h "$tree"/tracer/cpuclock/cpuclock.h "$tree"/stats/stats.h \
  "$tree"/inspect/inspect_cli.h "$tree"/replayer/replay_exec.h
# inspect/info.c: line 12 reaches up into the replayer; its other includes are allowed
{ printf '/* line %d */\n' $(seq 1 9)
  echo '#include <stdio.h>'
  echo '#include "plan.h"'
  echo '#include "plan_x.h"'
  echo '#include "inspect_cli.h"'; } >"$tree"/inspect/info.c
# stats depends on nothing of ours
printf '#include "stats.h"\n#include "trace_file.h"\n' >"$tree"/stats/stats_x.c
# the preload library may use the event header of formats, not the file API
printf '#include "trace_event.h"\n#include "shm_layout.h"\n#include "cpuclock.h"\n#include "trace_file.h"\n' \
  >"$tree"/tracer/preload/core.c
# the dispatcher includes command headers only
printf '#include "inspect_cli.h"\n#include "replay_exec.h"\n' >"$tree"/tools/preplay_main.c
# a link and an include directory the wrong way
cat >"$tree"/replayer/CMakeLists.txt <<'CMAKE'
add_library(preplay_replay_core STATIC replay.c)
CMAKE
cat >"$tree"/inspect/CMakeLists.txt <<'CMAKE'
# a comment naming preplay_replay_core is not a link
add_library(preplay_inspect_cli STATIC info.c)
target_link_libraries(preplay_inspect_cli PUBLIC preplay_replay_core)
target_include_directories(preplay_inspect_cli PRIVATE ${CMAKE_SOURCE_DIR}/formats
  ${CMAKE_CURRENT_SOURCE_DIR}/../replayer)
CMAKE
# a directory no rule knows
mkdir "$tree"/misc && touch "$tree"/misc/new.c

expected='inspect/info.c:12 includes replayer/plan_x.h: inspect may not depend on replayer
misc/new.c: in no module of tools/check-layout (add its directory)
stats/stats_x.c:2 includes formats/trace_file.h: stats may not depend on formats (only formats/out_file.h)
tools/preplay_main.c:2 includes replayer/replay_exec.h: tools may not depend on replayer
tracer/preload/core.c:4 includes formats/trace_file.h: tracer/preload may not depend on formats (only formats/trace_event.h)
inspect/CMakeLists.txt: preplay_inspect_cli links preplay_replay_core: inspect may not depend on replayer
inspect/CMakeLists.txt: preplay_inspect_cli includes directory replayer: inspect may not depend on replayer'
status=0
out=$("$check" "$tree" 2>&1) || status=$?
[ "$status" -eq 1 ] || fail "exit status $status on the violating tree, expected 1; output:"$'\n'"$out"
[ "$out" = "$expected" ] || fail "output differs:"$'\n'"$(diff <(echo "$expected") <(echo "$out"))"
echo "check-layout: clean tree passes, 7 violations reported exactly"
