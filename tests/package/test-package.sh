#!/usr/bin/env bash
# test-package.sh - the .deb CPack builds is a working preplay on its own:
# built from this build tree, its Depends name the package of every shared
# library the binaries link (checked against objdump, not a list), it
# unpacks to bin/, lib/preplay/, man pages for every command, the bash
# completion and the docs; and, with the build and source trees hidden
# (a private mount namespace with empty tmpfs over both), the unpacked
# preplay records a real HTTP server through its installed tracer library,
# then runs info, dump, analyze, --version and help. The completion's flags
# are compared with each command's --help. Never installs into the real
# system: everything lives in a temp dir. ~20 s.
set -euo pipefail
build=${PREPLAY_BUILD_DIR:?} src=${PREPLAY_SOURCE_DIR:?}
here=$(cd "$(dirname "$0")" && pwd)
fail() { echo "FAIL: $*" >&2; exit 1; }
for tool in cpack dpkg-deb dpkg-shlibdeps objdump unshare curl python3 man; do
    command -v "$tool" >/dev/null || fail "$tool missing (tools/install-deps)"
done
tmp=$(mktemp -d /tmp/preplay-package.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# ---- the package ----
cpack -G DEB --config "$build/CPackConfig.cmake" -B "$tmp/cpack" >"$tmp/cpack.log" 2>&1 ||
    fail "cpack: $(tail -5 "$tmp/cpack.log")"
deb=$(ls "$tmp"/cpack/preplay_*.deb)
[ "$(dpkg-deb -f "$deb" Package)" = preplay ] || fail "$deb: Package is not preplay"
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"

root=$tmp/root
dpkg-deb -x "$deb" "$root"
bin=$root/usr/bin/preplay lib=$root/usr/lib/preplay/libpreplay_trace.so
[ -x "$bin" ] || fail "no usr/bin/preplay in the package"
[ -f "$lib" ] || fail "no usr/lib/preplay/libpreplay_trace.so in the package"
[ -z "$(find "$root" -name '*.so' -not -path "$root/usr/lib/preplay/*")" ] ||
    fail "a shared library outside usr/lib/preplay: $(find "$root" -name '*.so')"

# every library the binaries need comes from a package the .deb depends on
for f in "$bin" "$lib"; do
    if objdump -p "$f" | grep -E 'R(UN)?PATH' | grep -Eq "$build|$src"; then
        fail "$f has a run path into the build tree"
    fi
    for soname in $(objdump -p "$f" | awk '$1 == "NEEDED" { print $2 }'); do
        path=$(ldconfig -p | awk -v s="$soname" '$1 == s && /x86-64|x86_64/ && !p { p = $NF } END { print p }')
        [ -n "$path" ] || fail "$soname (needed by $f) not found by ldconfig"
        # (whole outputs read: a reader that stops early fails the writer under pipefail)
        pkg=$(dpkg -S "$(readlink -f "$path")" 2>/dev/null | awk -F: 'NR == 1 { print $1 }') ||
            pkg=$(dpkg -S "$path" | awk -F: 'NR == 1 { print $1 }')
        [ -n "$pkg" ] || fail "no package owns $path ($soname)"
        grep -Eq "(^|, )$pkg( |,|$)" <<<"$depends" || fail "Depends lacks $pkg (for $soname of $f)"
    done
done
for pkg in libzstd1 libjansson4; do
    grep -Eq "(^|, )$pkg( |,|$)" <<<"$depends" || fail "Depends lacks $pkg"
done

# --version names the commit this tree is at (a tree outside git: "unknown")
version=$("$bin" --version)
if head=$(git -C "$src" rev-parse --short=12 HEAD 2>/dev/null); then
    grep -Eq "^preplay [0-9.]+ \(commit $head(-dirty)?\)$" <<<"$version" ||
        fail "preplay --version: '$version', want commit $head"
fi
mkdir "$tmp/nogit"
cmake -DSOURCE_DIR="$tmp/nogit" -DOUTPUT="$tmp/nogit/info.h" -DVERSION=9.9.9 \
    -P "$src/cmake/preplay_build_info.cmake"
grep -q '^#define PREPLAY_BUILD_COMMIT "unknown"$' "$tmp/nogit/info.h" ||
    fail "outside git the commit is not 'unknown': $(cat "$tmp/nogit/info.h")"

# man pages for preplay and every command, the completion, the docs
commands=$("$bin" --help | awk '/^commands:/ { f = 1; next } f && NF == 0 { f = 0 } f { print $1 }')
[ "$(wc -w <<<"$commands")" -ge 10 ] || fail "preplay --help lists too few commands: $commands"
man1=$root/usr/share/man/man1
for page in preplay $(sed 's/^/preplay-/' <<<"$commands"); do
    [ -f "$man1/$page.1" ] || fail "no man page $page(1) in the package"
    out=$(MANWIDTH=80 man --warnings -l "$man1/$page.1" 2>"$tmp/man.err")
    grep -q "^NAME" <<<"$out" || fail "$page.1 has no NAME section"
    [ ! -s "$tmp/man.err" ] || fail "$page.1 at 80 columns: troff says: $(cat "$tmp/man.err")"
done
completion=$root/usr/share/bash-completion/completions/preplay
[ -f "$completion" ] || fail "no bash completion in the package"
for doc in README.md copyright user-guide.md preplay-record.md FORMAT.md PLAN.md RESULTS.md; do
    [ -f "$root/usr/share/doc/preplay/$doc" ] || fail "no usr/share/doc/preplay/$doc"
done

# ---- the completion: commands, and each command's flags as its --help names them ----
complete_words() { # words of the command line; the last is completed
    bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _preplay
             printf "%s\n" "${COMPREPLY[@]}" | sort' _ "$completion" "$@"
}
[ "$(complete_words preplay dum)" = dump ] || fail "completing 'preplay dum': $(complete_words preplay dum)"
got=$(complete_words preplay '' | tr '\n' ' ')
for c in $commands help; do
    grep -qw -- "$c" <<<"$got" || fail "completing 'preplay ': no $c in $got"
done
for c in $commands; do
    help=$("$bin" "$c" --help 2>&1)
    comp=$(complete_words preplay "$c" -)
    # every flag an option line of --help starts with is completed ...
    for f in $(grep -oE '^ +(-[A-Za-z], )?--?[A-Za-z][A-Za-z0-9-]*' <<<"$help" | grep -oE -- '--?[A-Za-z][A-Za-z0-9-]*$'); do
        grep -qx -- "$f" <<<"$comp" || fail "completion of 'preplay $c -' lacks $f (in its --help)"
    done
    # ... and every completed flag is one --help names
    for f in $comp; do
        grep -qE -- "(^|[^A-Za-z0-9-])$f([^A-Za-z0-9-]|$)" <<<"$help" ||
            [ "$f" = --help ] || fail "completion of 'preplay $c -' offers $f, not in its --help"
    done
done
[ "$(complete_words preplay dump --s)" = --salvage ] || fail "completing 'preplay dump --s'"
[ "$(complete_words preplay stats p)" = pt4cloud ] || fail "completing 'preplay stats p'"

# ---- the unpacked preplay, with the build and source trees out of reach ----
port=$(python3 "$here/../common/free_port.py")
mkdir -p "$tmp/www" && echo hello >"$tmp/www/index.html"
cat >"$tmp/inside.sh" <<'EOF'
set -euo pipefail
fail() { echo "FAIL: $*" >&2; exit 1; }
for d in "$BUILD" "$SRC"; do
    [ -d "$d" ] && mount -t tmpfs -o size=1m preplay-hidden "$d"
done
[ ! -e "$BUILD/CMakeCache.txt" ] && [ ! -e "$SRC/CMakeLists.txt" ] ||
    fail "the build or source tree is still visible"
unset PREPLAY_TRACE_LIB PREPLAY_BIN PREPLAY_BUILD_DIR PREPLAY_SOURCE_DIR
export PATH=$ROOT/usr/bin:/usr/bin:/bin
[ "$(command -v preplay)" = "$ROOT/usr/bin/preplay" ] || fail "preplay on PATH is $(command -v preplay)"

# (outputs are taken whole before grep: grep -q closing the pipe early
# would fail the command with EPIPE under pipefail)
out=$(preplay --version)
grep -Eq '^preplay [0-9]+\.[0-9]+\.[0-9]+ \(commit ([0-9a-f]{12}(-dirty)?|unknown)\)$' <<<"$out" ||
    fail "preplay --version: $out"
out=$(MANWIDTH=80 preplay help dump)
grep -q "PREPLAY-DUMP(1)" <<<"$out" || fail "preplay help dump shows no man page"
# without man: the page's text
out=$(PATH=$ROOT/usr/bin preplay help record)
grep -q "^# preplay record" <<<"$out" ||
    fail "preplay help record without man does not print docs/preplay-record.md"

# record finds the installed library by itself, and it is what the app
# preloads, even with a stray copy beside the binary (the build tree's place)
installed=$(readlink -f "$ROOT/usr/lib/preplay/libpreplay_trace.so")
cp "$installed" "$ROOT/usr/bin/libpreplay_trace.so"
out=$(preplay record -q --no-cpu-scores -o "$TMP/t0" -- sh -c 'echo "$LD_PRELOAD"')
[ "$out" = "$installed" ] || fail "record preloaded '$out', not the installed library"
# PREPLAY_TRACE_LIB overrides; one that cannot be read is named
mv "$ROOT/usr/bin/libpreplay_trace.so" "$TMP/other.so"
out=$(PREPLAY_TRACE_LIB=$TMP/other.so preplay record -q --no-cpu-scores -o "$TMP/t1" -- sh -c 'echo "$LD_PRELOAD"')
[ "$out" = "$TMP/other.so" ] || fail "PREPLAY_TRACE_LIB=$TMP/other.so: record preloaded '$out'"
if out=$(PREPLAY_TRACE_LIB=$TMP/none.so preplay record -q -o "$TMP/t2" -- true 2>&1); then
    fail "record with an unreadable PREPLAY_TRACE_LIB succeeded"
fi
[ "$out" = "preplay record: PREPLAY_TRACE_LIB=$TMP/none.so: cannot read it" ] ||
    fail "unreadable PREPLAY_TRACE_LIB: '$out'"

# a real server, a few requests
preplay record -q --no-cpu-scores -o "$TMP/trace" -c web -- \
    python3 -m http.server --bind 127.0.0.1 "$PORT" --directory "$TMP/www" >/dev/null 2>&1 &
rec=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/" >/dev/null 2>&1 && break; sleep 0.1; done
for i in 1 2 3 4 5; do curl -sf "http://127.0.0.1:$PORT/?n=$i" >/dev/null || fail "request $i"; done
kill -INT "$rec"
wait "$rec" || true
ls "$TMP"/trace/*.trace >/dev/null || fail "record wrote no trace"
out=$(preplay info "$TMP/trace")
grep -q "^1 process, " <<<"$out" || fail "info: $out"
out=$(preplay dump "$TMP/trace")
[ "$(grep -c " label " <<<"$out")" -ge 6 ] || fail "dump: fewer than 6 request labels"
preplay analyze "$TMP/trace" -o "$TMP/app.plan" -q || fail "analyze failed"
preplay info --json "$TMP/app.plan" >"$TMP/plan.json" || fail "info on the plan failed"
python3 -c 'import json,sys; n=json.load(open(sys.argv[1]))["requests"]; sys.exit(0 if n >= 6 else f"plan holds {n} requests, want >= 6")' "$TMP/plan.json"
echo inside-ok
EOF
out=$(BUILD=$build SRC=$src ROOT=$root TMP=$tmp PORT=$port \
    unshare -m --propagation private bash "$tmp/inside.sh" 2>&1) || fail "installed preplay: $out"
grep -q inside-ok <<<"$out" || fail "installed preplay: $out"
echo "ok: $(basename "$deb") ($(du -k "$deb" | cut -f1) KB) works from its installed paths alone"
