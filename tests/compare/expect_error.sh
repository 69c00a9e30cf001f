# tests/compare/expect_error.sh - sourced by the compare shell tests: one
# way to check a refusal. Needs $PREPLAY_BIN, $work and fail(); must never
# pass a run that printed to stdout or exited with another code.
#
# expect_error EXIT_CODE MESSAGE ARGS...: `preplay compare ARGS` exits with
# EXIT_CODE, its stderr is exactly MESSAGE, and it prints nothing on stdout
expect_error() {
  local want_rc=$1 want_msg=$2
  shift 2
  local rc=0
  "$PREPLAY_BIN" compare "$@" >"$work/out" 2>"$work/err" || rc=$?
  [ "$rc" -eq "$want_rc" ] || fail "compare $* exited $rc, want $want_rc ($(cat "$work/err"))"
  [ "$(cat "$work/err")" = "$want_msg" ] || fail "compare $*: stderr '$(cat "$work/err")', want '$want_msg'"
  [ ! -s "$work/out" ] || fail "compare $* printed on bad input"
}
