#!/usr/bin/env bash
# tests/apps/test-sample.sh - integration test of the sample application: starts
# MariaDB, the app tier and the front end (run-sample.sh), checks page contents
# against the database, runs the load generator in open-loop, session and
# count-bounded modes, then checks the side logs against what the clients sent
# (check-sidelog.py). Runs in the Release and the ASan build (PREPLAY_SANITIZE=1:
# the tiers and loadgen are ASan-built, so a leak or error at exit fails the
# teardown). Keeps its directory when it fails and says where.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

if [ "${1:-}" = "--workload" ]; then
  # Runs inside run-sample.sh with SAMPLE_* set; writes CSVs into $SAMPLE_DIR.
  out=$SAMPLE_DIR/client
  mkdir -p "$out"
  base="http://127.0.0.1:$SAMPLE_PORT"
  sql() { mariadb --no-defaults --socket="$SAMPLE_DB_SOCKET" -usample sample --batch --skip-column-names -e "$1"; }
  echo "label,start_ns,response_ns,status,request_id,session,think_ns" >"$out/curl.csv"
  get() { # get PATH [STATUS]: body into $out/body, a CSV row for the side-log check
    local status want=${2:-200}
    status=$(curl -sS --max-time 20 -D "$out/head" -o "$out/body" -w '%{http_code}' "$base$1")
    local id
    id=$(tr -d '\r' <"$out/head" | sed -n 's/^X-Request-Id: //Ip')
    echo "GET ${1%%\?*},0,0,$status,$id,0,0" >>"$out/curl.csv"
    [ "$status" = "$want" ] || { echo "FAIL: GET $1 answered $status, want $want: $(cat "$out/body")"; exit 1; }
  }

  get "/db?key=7"
  want=$(sql "SELECT id, name, region FROM customers WHERE id = 7;
    SELECT COUNT(*), COALESCE(SUM(amount), 0) FROM orders WHERE customer_id = 7;
    SELECT c.region, p.category, COUNT(*), SUM(o.amount), MAX(o.quantity)
    FROM orders o JOIN customers c ON c.id = o.customer_id JOIN products p ON p.id = o.product_id
    WHERE (o.id + 7) % 3 <> 0 GROUP BY c.region, p.category ORDER BY c.region, p.category")
  [ "$(cat "$out/body")" = "$want" ] || { echo "FAIL: /db?key=7 body differs from the database:"; diff <(echo "$want") "$out/body" | head; exit 1; }
  [ "$(echo "$want" | wc -l)" -eq 32 ] || { echo "FAIL: expected 1 + 1 + 30 rows for key 7, got: $want"; exit 1; }
  echo "ok: /db?key=7 matches the database (32 rows)"

  get "/fanout?key=5"
  product=$(sql "SELECT id, name, category, price FROM products WHERE id = 6")
  orders=$(sql "SELECT COUNT(*), COALESCE(SUM(quantity), 0) FROM orders WHERE product_id = 6")
  grep -qF "db=$product" "$out/body" && grep -qF "db=$orders" "$out/body" &&
    [ "$(grep -c '^lookup [0-9]*: key=5 \|^render [0-9]*: key=5 ' "$out/body")" -eq 2 ] ||
    { echo "FAIL: /fanout?key=5 body lacks the app tier's answers ($product / $orders):"; cat "$out/body"; exit 1; }
  echo "ok: /fanout?key=5 carries both app-tier answers"

  get "/static"
  grep -q '<h1>preplay sample application</h1>' "$out/body" || { echo "FAIL: /static body:"; head -5 "$out/body"; exit 1; }
  get "/cpu?ms=1"
  grep -Eq '^cpu ms=1 result=[0-9a-f]{16}$' "$out/body" || { echo "FAIL: /cpu body: $(cat "$out/body")"; exit 1; }
  get "/file"
  grep -Eq '^file read=16384@[0-9]+ wrote=16384@0 checksum=[0-9a-f]{16}$' "$out/body" || { echo "FAIL: /file body: $(cat "$out/body")"; exit 1; }
  get "/log"
  grep -Eq '^seq=1 request=[0-9]+ worker=[0-9]+ digest=[0-9a-f]{16}$' "$out/body" || { echo "FAIL: /log body: $(cat "$out/body")"; exit 1; }
  echo "ok: /static, /cpu, /file, /log bodies"

  # Bad input: each answered with a clear status or message, the servers keep serving.
  get "/nope" 404
  exec 3<>"/dev/tcp/127.0.0.1/$SAMPLE_PORT"
  printf 'NONSENSE\r\n\r\n' >&3
  reply=$(timeout 10 cat <&3 | tr -d '\r')
  exec 3<&-
  echo "$reply" | head -1 | grep -qx 'HTTP/1.1 400 Bad Request' || { echo "FAIL: malformed request got: $reply"; exit 1; }
  bad_id=$(echo "$reply" | sed -n 's/^X-Request-Id: //p')
  echo "BAD -,0,0,400,$bad_id,0,0" >>"$out/curl.csv"
  exec 3<>"/dev/tcp/127.0.0.1/$SAMPLE_APPTIER_PORT"
  printf '\0\0\0\5hello' >&3
  rc=0
  timeout 10 cat <&3 >/dev/null 2>&1 || rc=$? # end of stream or a reset: either closes
  [ $rc -ne 124 ] || { echo "FAIL: app tier kept a connection with a malformed frame open"; exit 1; }
  exec 3<&-
  if "$SAMPLE_BIN_DIR/loadgen" --port "$SAMPLE_PORT" --mix bogus=1 2>"$out/err"; then
    echo "FAIL: loadgen accepted --mix bogus=1"; exit 1
  fi
  grep -q "'bogus' is not one of" "$out/err" || { echo "FAIL: loadgen --mix error: $(cat "$out/err")"; exit 1; }
  echo "ok: bad input (404, malformed HTTP -> 400, malformed app-tier frame closed, bad --mix)"

  lg="$SAMPLE_BIN_DIR/loadgen --port $SAMPLE_PORT --quiet"
  $lg --mode open --rate 40 --duration 3 --seed 1 --csv "$out/open.csv"
  $lg --mode session --sessions 4 --session-length 8 --think exp:20 --duration 3 --seed 2 \
    --csv "$out/session.csv"
  $lg --mode open --rate 200 --count 25 --mix fanout=3,static=1 --seed 3 --csv "$out/count.csv"
  rows=$(($(wc -l <"$out/count.csv") - 1))
  [ "$rows" -eq 25 ] || { echo "FAIL: --count 25 sent $rows requests"; exit 1; }
  # one connection for a burst: arrivals wait for it (the summary counts
  # them), each still answered, in order, and its wait counted as lateness
  $lg --mode open --rate 2000 --count 30 --connections 1 --mix static=1 --seed 4 \
    --csv "$out/one.csv" >"$out/one.out"
  grep -Eq 'connections at most, [1-9][0-9]* arrivals waited' "$out/one.out" ||
    { echo "FAIL: --connections 1 at 2000/s: no arrival waited: $(tail -n 1 "$out/one.out")"; exit 1; }
  /usr/bin/python3 - "$out/one.csv" <<'PY' || exit 1
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 30 and all(r["status"] == "200" for r in rows), "not 30 answered requests"
assert max(int(r["late_ns"]) for r in rows) > 0, "no request was late behind the one connection"
PY
  # a server that accepts (the kernel does) but never answers: each request
  # fails at --timeout-ms, status 0, exit status 1
  /usr/bin/python3 -c 'import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
print(s.getsockname()[1], flush=True); time.sleep(5)' >"$out/mute.port" &
  mute=$!
  for _ in $(seq 50); do [ -s "$out/mute.port" ] && break; sleep 0.1; done
  status=0
  "$SAMPLE_BIN_DIR/loadgen" --port "$(cat "$out/mute.port")" --quiet --rate 100 --count 2 \
    --timeout-ms 200 --mix static=1 --csv "$out/mute.csv" >/dev/null || status=$?
  kill "$mute" 2>/dev/null; wait "$mute" 2>/dev/null || true
  [ "$status" = 1 ] || { echo "FAIL: loadgen against a mute server exited $status, want 1"; exit 1; }
  /usr/bin/python3 - "$out/mute.csv" <<'PY' || exit 1
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 2, f"{len(rows)} rows"
for r in rows:
    assert r["status"] == "0" and 0.2e9 <= int(r["response_ns"]) < 2e9, f"not a 200 ms timeout: {r}"
PY
  # the same port closed: refused at once, each request failed, exit status 1
  status=0
  "$SAMPLE_BIN_DIR/loadgen" --port "$(cat "$out/mute.port")" --quiet --rate 100 --count 2 \
    --mix static=1 --csv "$out/refused.csv" >/dev/null || status=$?
  [ "$status" = 1 ] && [ "$(awk -F, 'NR > 1 && $4 == 0' "$out/refused.csv" | wc -l)" = 2 ] ||
    { echo "FAIL: loadgen against a closed port: exit $status, $(cat "$out/refused.csv")"; exit 1; }
  sessions=$(tail -n +2 "$out/session.csv" | cut -d, -f6 | sort -u | wc -l)
  [ "$sessions" -ge 4 ] || { echo "FAIL: session mode used $sessions sessions, want at least 4"; exit 1; }
  echo "ok: load generator: $(($(wc -l <"$out/open.csv") - 1)) open-loop, $(($(wc -l <"$out/session.csv") - 1)) in $sessions sessions, $rows count-bounded, a burst on one connection, timeouts, refused connections"
  exit 0
fi

for tool in mariadbd mariadb curl; do
  command -v "$tool" >/dev/null 2>&1 || [ -x "/usr/sbin/$tool" ] ||
    { echo "FAIL: $tool is not installed (tools/install-deps installs it)"; exit 1; }
done
: "${PREPLAY_BUILD_DIR:?run through ctest (PREPLAY_BUILD_DIR is not set)}"
export SAMPLE_BIN_DIR=$PREPLAY_BUILD_DIR/tests/apps
if [ "${PREPLAY_SANITIZE:-0}" = 1 ] && ! grep -q __asan_init "$SAMPLE_BIN_DIR/frontend"; then
  echo "FAIL: PREPLAY_SANITIZE=1 but $SAMPLE_BIN_DIR/frontend is not ASan-built"; exit 1
fi
work=$(mktemp -d /tmp/preplay-sample-test.XXXXXX)
keep_on_failure() { echo "test-sample: failed; files kept in $work"; }
trap keep_on_failure ERR

if ! "$here/run-sample.sh" --dir "$work/run" --timeout 120 -- "$here/test-sample.sh" --workload; then
  echo "FAIL: the sample application or its workload failed (files in $work)"
  for f in "$work"/run/logs/*.err; do echo "--- $f"; tail -n 20 "$f"; done
  exit 1
fi
c=$work/run/client
grep -q 'malformed frame' "$work/run/logs/apptier.err" ||
  { echo "FAIL: the app tier did not report the malformed frame"; exit 1; }
if ! /usr/bin/python3 "$here/check-sidelog.py" --frontend "$work/run/logs/frontend.sidelog" \
    --apptier "$work/run/logs/apptier.sidelog" --csv "$c/curl.csv" --csv "$c/open.csv" \
    --csv "$c/session.csv" --csv "$c/count.csv" --csv "$c/one.csv" --shared-log "$work/run/frontend/shared.log" \
    --allow-status 404 --allow-status 400; then
  echo "FAIL: side logs disagree with the clients (files in $work)"
  exit 1
fi
# The checker itself must notice a request missing from the truth.
sed '0,/\tGET \/fanout\t/{/\tGET \/fanout\t/d}' "$work/run/logs/frontend.sidelog" >"$work/broken.sidelog"
if /usr/bin/python3 "$here/check-sidelog.py" --frontend "$work/broken.sidelog" \
    --apptier "$work/run/logs/apptier.sidelog" --csv "$c/open.csv" --csv "$c/session.csv" \
    --csv "$c/count.csv" --csv "$c/one.csv" --csv "$c/curl.csv" --allow-status 404 --allow-status 400 >"$work/broken.out"; then
  echo "FAIL: check-sidelog.py accepted a front-end log with a fanout removed"; exit 1
fi
grep -q 'missing from the front end' "$work/broken.out" && grep -q 'belongs to no fanout' "$work/broken.out" ||
  { echo "FAIL: check-sidelog.py did not name the removed fanout:"; cat "$work/broken.out"; exit 1; }
trap - ERR
rm -rf "$work"
echo "PASS"
