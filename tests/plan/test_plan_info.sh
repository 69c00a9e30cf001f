#!/usr/bin/env bash
# test_plan_info.sh - `preplay info [--json] PLAN` on the plan plan_gen
# writes (known contents: keep the numbers below in sync with plan_gen.c):
# requests per label, time per resource per label (totals and means,
# including nested callee blocks and the network part of calls), coverage,
# unmatched bytes, violations; then the text form, and exit status and
# message on a damaged plan.
set -euo pipefail
: "${PREPLAY_BIN:?}" "${PLAN_GEN:?}"
dir=$(mktemp -d /tmp/preplay-plan-info.XXXXXX)
trap 'rm -rf "$dir"' EXIT
"$PLAN_GEN" "$dir/app.plan"

"$PREPLAY_BIN" info --json "$dir/app.plan" > "$dir/info.json"
python3 - "$dir" <<'PY'
import json, math, sys
j = json.load(open(sys.argv[1] + "/info.json"))
def eq(what, got, want):
    if isinstance(want, float):
        ok = isinstance(got, (int, float)) and math.isclose(got, want, rel_tol=1e-12, abs_tol=1e-15)
    else:
        ok = got == want
    if not ok:
        sys.exit(f"info --json PLAN: {what} = {got!r}, want {want!r}")
eq("requests", j["requests"], 5)
eq("blocks", j["blocks"], 3)
eq("ops", j["ops"], 15)
eq("labels", j["labels"], {"GET /cart": 3, "POST /buy": 2})
eq("label order", list(j["labels"]), ["GET /cart", "POST /buy"])
eq("coverage", j["coverage"], 0.995)
eq("unmatched_bytes", j["unmatched_bytes"], 1234)
eq("violations", j["violations"], 1)
eq("violation_blocks", j["violation_blocks"], 1)
eq("violations_text", j["violations_text"],
   "frontend: thread 12 interleaved connections 3 and 4 (17 events)")
eq("recording_id", j["recording_id"], "rec-info-test")
eq("format_version", j["format_version"], 1006)  # 1.6: DB ops may carry PLAN_DB_BLOCKING
want_total = {
    "GET /cart": {"cpu_s": 0.009, "file_s": 0.0012, "net_s": 0.0030945, "lock_s": 0.00015, "db_s": 0.009},
    "POST /buy": {"cpu_s": 0.014, "file_s": 0.002, "net_s": 0.005003, "lock_s": 0.0, "db_s": 0.006},
}
want_mean = {
    "GET /cart": {"cpu_s": 0.003, "file_s": 0.0004, "net_s": 0.0010315, "lock_s": 0.00005, "db_s": 0.003},
    "POST /buy": {"cpu_s": 0.007, "file_s": 0.001, "net_s": 0.0025015, "lock_s": 0.0, "db_s": 0.003},
}
for key, want in (("resources_by_label", want_total), ("resources_per_request_by_label", want_mean)):
    eq(f"{key} labels", sorted(j[key]), sorted(want))
    for label, res in want.items():
        eq(f"{key} keys", sorted(j[key][label]), sorted(res))
        for k, v in res.items():
            eq(f"{key}[{label}][{k}]", j[key][label][k], v)
comps = j["components"]
eq("components", [(c["name"], c["host"], c["workers"], c["db_conns"], c["listen_port"], c["frontend"])
                  for c in comps],
   [("app", "h1", 2, 1, 9000, False), ("frontend", "h1", 4, 0, 8080, True)])
eq("event loops", [c["event_loop"] for c in comps], [True, False])
eq("skipped_records", j["skipped_records"], 0)
PY

"$PREPLAY_BIN" info "$dir/app.plan" > "$dir/info.txt"
expect_line() {
  grep -qxF -- "$1" "$dir/info.txt" || { echo "info PLAN: missing line '$1' in:"; cat "$dir/info.txt"; exit 1; }
}
expect_line "plan $dir/app.plan: format 1.6, recording rec-info-test"
expect_line "5 requests, 3 blocks (1 flagged as violations), 15 ops, 2 components"
expect_line "  frontend         on h1: 4 worker threads, 0 DB connections, port 8080, front end"
expect_line "  app              on h1: 2 event loops, 1 DB connections, port 9000"
expect_line "coverage 99.50%, unmatched bytes 1234, violations 1"
expect_line "  GET /cart                       3 req  cpu 0.009000 (3.000)  file 0.001200 (0.400)  net 0.003095 (1.032)  lock 0.000150 (0.050)  db 0.009000 (3.000)"
expect_line "  POST /buy                       2 req  cpu 0.014000 (7.000)  file 0.002000 (1.000)  net 0.005003 (2.502)  lock 0.000000 (0.000)  db 0.006000 (3.000)"
expect_line "  frontend: thread 12 interleaved connections 3 and 4 (17 events)"

# A damaged plan: one line naming the file and frame, exit 1, nothing on stdout.
size=$(stat -c %s "$dir/app.plan")
head -c $((size - 3)) "$dir/app.plan" > "$dir/cut.plan"
set +e
"$PREPLAY_BIN" info --json "$dir/cut.plan" > "$dir/out" 2> "$dir/err"
rc=$?
set -e
[ "$rc" -eq 1 ] || { echo "exit $rc on a damaged plan, want 1"; exit 1; }
[ ! -s "$dir/out" ] || { echo "output on a damaged plan"; exit 1; }
grep -Eqx "preplay: $dir/cut.plan: truncated frame at offset [0-9]+ \(file ends after $((size - 3)) bytes\)" "$dir/err" \
  || { echo "unexpected message: $(cat "$dir/err")"; exit 1; }
set +e
"$PREPLAY_BIN" info --salvage "$dir/app.plan" 2> "$dir/err"
rc=$?
set -e
[ "$rc" -eq 2 ] || { echo "--salvage on a plan: exit $rc, want 2"; exit 1; }
echo "ok"
