#!/usr/bin/env bash
# test_output_links.sh - every preplay writer, run as root, against a
# symlink and then a hard link planted at its output name that reach a file
# elsewhere (issue 24, item 2; formats/out_file.h): the trace of `record`,
# the plan and --blocks of `analyze`, the dummy files of `prepare`, the
# results JSON and dummy files of `run`, the --stats JSON of `replay`, the
# --svg of `stats pt4cloud`, the HTML report of `compare` (also at the
# temporary name it used to write first). The replayer's writes to the
# dummy files are tested in tests/replay/test_replay_unit.c
# (test_file_write_links), out_file_open in tests/formats/test_out_file.c. Each time the
# file elsewhere keeps its content and mode, and the output name ends up a
# regular file of its own (one link). Also: an output directory every user
# may write to without the sticky bit is refused with one line naming it.
set -euo pipefail
: "${PREPLAY_BIN:?}" "${PREPLAY_BUILD_DIR:?}" "${PREPLAY_SOURCE_DIR:?}" "${ANALYZE_BENCH_GEN:?}"
if [[ $(id -u) != 0 ]]; then echo "test_output_links: needs root (writers run as root are the risk)"; exit 1; fi
work=$(mktemp -d /tmp/preplay-output-links.XXXXXX)
replayer=
cleanup() {
    [[ -n $replayer ]] && kill -TERM "$replayer" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
failures=0 # every writer is checked, failed or not: one line per failure
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
B=$PREPLAY_BIN
mkdir "$work/elsewhere"
victim=$work/elsewhere/victim
printf 'precious\n' >"$victim"
chmod 0640 "$victim"

plant() { # plant symlink|hardlink PATH...
    local kind=$1 p
    shift
    for p in "$@"; do
        rm -f "$p"
        if [[ $kind == symlink ]]; then ln -s "$victim" "$p"; else ln "$victim" "$p"; fi
    done
}
victim_intact() { # victim_intact WHAT (and restores it for the next writer)
    [[ $(cat "$victim") == precious ]] || fail "$1: the file elsewhere was overwritten"
    [[ $(stat -c %a "$victim") == 640 ]] || fail "$1: the file elsewhere changed mode to $(stat -c %a "$victim")"
    printf 'precious\n' >"$victim"
    chmod 0640 "$victim"
}
own_file() { # own_file WHAT PATH: a regular file with one link, not the victim
    [[ -f $2 && ! -L $2 ]] || fail "$1: $2 is not a regular file of its own"
    [[ $(stat -c %h "$2") == 1 ]] || fail "$1: $2 still has $(stat -c %h "$2") links"
}

# inputs: a two-tier plan with a file op, a synthetic recording to analyze,
# results of one instance type, samples for the stop rule
"$PREPLAY_BUILD_DIR/tests/replay/replay_make_plan" two-tier "$work/two-tier.plan"
"$ANALYZE_BENCH_GEN" gen "$work/rec" --events 3000 --conns 8 --workers 2 >/dev/null
/usr/bin/python3 "$PREPLAY_SOURCE_DIR/tests/compare/make_results.py" "$work/small.json" small 0.05 2.0 hand-built
/usr/bin/python3 -c 'import random; r = random.Random(1); print("\n".join("%.4f" % r.lognormvariate(0, 0.3) for _ in range(300)))' >"$work/samples"

for kind in symlink hardlink; do
    what="record ($kind)"
    out=$work/$kind-trace
    mkdir "$out"
    # in a new pid namespace the app's pid is small: plant every name it may get
    plant "$kind" "$out"/comp-{2..12}.trace
    unshare --pid --fork "$B" record -q --no-cpu-scores -c comp -o "$out" -- /bin/true ||
        fail "$what: record failed"
    victim_intact "$what"
    written=$(find "$out" -name 'comp-*.trace' -type f -links 1 ! -samefile "$victim")
    [[ $(wc -l <<<"$written") == 1 && -n $written ]] || fail "$what: traces written: '$written'"
    [[ $(stat -c %a "$written") == 600 ]] || fail "$what: $written has mode $(stat -c %a "$written")"
    "$B" info "$written" >/dev/null || fail "$what: $written is not a readable trace"

    what="analyze ($kind)"
    plant "$kind" "$work/out.plan" "$work/blocks.tsv"
    "$B" analyze -q "$work/rec/frontend" "$work/rec/apptier" -o "$work/out.plan" \
        --blocks "$work/blocks.tsv" || fail "$what failed"
    victim_intact "$what"
    own_file "$what" "$work/out.plan"
    own_file "$what" "$work/blocks.tsv"

    what="prepare ($kind)"
    dummies=$work/$kind-dummies
    "$B" prepare "$work/two-tier.plan" --dir "$dummies" >/dev/null
    names=("$dummies"/*)
    plant "$kind" "${names[@]}"
    "$B" prepare "$work/two-tier.plan" --dir "$dummies" >/dev/null || fail "$what failed"
    victim_intact "$what"
    for f in "${names[@]}"; do own_file "$what" "$f"; done

    what="run ($kind)"
    plant "$kind" "$work/run.json" "${names[@]}"
    "$B" run "$work/two-tier.plan" --max-intervals 1 --interval 1s --instance local --price 0.1 \
        --dir "$dummies" -o "$work/run.json" 2>"$work/run.err" || fail "$what: $(cat "$work/run.err")"
    victim_intact "$what"
    own_file "$what" "$work/run.json"
    for f in "${names[@]}"; do own_file "$what" "$f"; done

    what="replay --stats ($kind)"
    plant "$kind" "$work/stats.json"
    "$B" replay "$work/two-tier.plan" --component app --listen 127.0.0.1:0 \
        --token 0123456789abcdef --dir "$dummies" --stats "$work/stats.json" \
        >"$work/replay.out" 2>"$work/replay.err" &
    replayer=$!
    for _ in $(seq 100); do grep -q '^listening' "$work/replay.out" && break; sleep 0.1; done
    grep -q '^listening' "$work/replay.out" || fail "$what: no listening line: $(cat "$work/replay.err")"
    kill -TERM "$replayer"
    wait "$replayer" || fail "$what: replay exited $? ($(cat "$work/replay.err"))"
    replayer=
    victim_intact "$what"
    own_file "$what" "$work/stats.json"
    [[ $(stat -c %a "$work/stats.json") == 600 ]] || fail "$what: stats JSON mode $(stat -c %a "$work/stats.json")"

    what="stats pt4cloud --svg ($kind)"
    plant "$kind" "$work/d.svg"
    "$B" stats pt4cloud --per-interval 100 --svg "$work/d.svg" "$work/samples" >/dev/null ||
        fail "$what failed"
    victim_intact "$what"
    own_file "$what" "$work/d.svg"

    what="compare -o ($kind)"
    # also at the temporary name compare once used (REPORT.tmp.PID; pid 1 in
    # a new pid namespace): temporary files are created O_EXCL too
    plant "$kind" "$work/report.html" "$work/report.html.tmp.1"
    unshare --pid --fork "$B" compare "$work/small.json" -o "$work/report.html" >/dev/null ||
        fail "$what failed"
    victim_intact "$what"
    own_file "$what" "$work/report.html"
done

# a directory every user may write to, without the sticky bit: refused
mkdir "$work/open"
chmod 0777 "$work/open"
rc=0
"$B" compare "$work/small.json" -o "$work/open/report.html" >/dev/null 2>"$work/err" || rc=$?
[[ $rc == 1 ]] || fail "world-writable directory: compare exited $rc"
grep -qx "compare: $work/open: directory is writable by every user and has no sticky bit; refusing to write there (chmod o-w or +t)" "$work/err" ||
    fail "world-writable directory: $(cat "$work/err")"
[[ ! -e $work/open/report.html ]] || fail "world-writable directory: a report was written"
[[ $failures == 0 ]] || { echo "$failures check(s) failed" >&2; exit 1; }
echo "output links: every writer replaced the planted links and left the file elsewhere alone"
