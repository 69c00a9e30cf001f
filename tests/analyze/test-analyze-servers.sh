#!/usr/bin/env bash
# test-analyze-servers.sh - `preplay analyze` on real servers nobody here
# wrote. (1) apache2, worker MPM (threads), reverse-proxying with
# mod_proxy_http (keepalive=On, enablereuse) to a threaded Python backend
# (backend.py, HTTP/1.1 keep-alive), both under `preplay record`, under a
# bounded curl load (3 clients, each one keep-alive connection): zero
# violations, coverage >= 99% (in-request definition, docs/preplay-analyze.md),
# front-end requests per label = what curl sent, every front-end block calls
# exactly one backend block, and blocks carry workers within the component's
# worker count; the plan then replays with `preplay run` (every label back,
# one block per request on each tier, the recorded Nagle/delayed-ACK
# stalls reproduced where they were and only there); (1c) the same plan
# checks with a forking backend (a child process per connection, which
# inherits the accepted socket). (2) nginx (event-driven: one worker
# thread interleaves connections): taken as an event loop (named on
# stderr, marked in the plan), its events attributed by descriptor: no
# violation, no block flagged, one block per request of the right size
# (tests/analyze/test-analyze-event-loop.sh has the concurrent cases). (3) the LEMP stack: nginx -> php-fpm (FastCGI
# over a unix socket, two prefork workers) -> MariaDB (PHP's mysqlnd speaks
# the protocol itself), one client at a time: every request one nginx block
# calling one php-fpm block, three DB operations each (a prepared SELECT's
# PREPARE and EXECUTE, a plain query), zero violations. (4) a Java tier
# (item_server.java: the JDK's HttpServer, 2 handler threads, JDBC with
# MariaDB Connector/J) on the same MariaDB: each request one block with
# its 8 DB operations, including the 3 INSERTs of a batch the driver
# pipelines and whose answers a driver thread reads; zero violations and
# no event out of its thread's time order.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${PREPLAY_BIN:?PREPLAY_BIN not set}
work=$(mktemp -d /tmp/preplay-analyze-servers.XXXXXX)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    sleep 0.5
    for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
for tool in /usr/sbin/apache2 /usr/sbin/nginx /usr/bin/curl /usr/bin/python3; do
    [ -x "$tool" ] || fail "$tool missing (tools/install-deps installs apache2, nginx-light, curl)"
done
# every recording: --no-cpu-scores (the CPU kernels take ~1.5 s, ~7 s under
# ASan, before the server starts; the replay below uses --cpu-ratio 1)
. "$here/../common/lemp.sh" # nginx -> php-fpm -> MariaDB, part (3)
free_port() { lemp_free_port; }
wait_port() { lemp_wait_port "$@"; }
stop() { # pid: SIGTERM through preplay record, bounded wait
    local i
    kill -TERM "$1" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done
    fail "process $1 did not stop after SIGTERM"
}
# curl_load PORT CLIENTS ROUNDS PATH... : each client fetches ROUNDS x PATHs on
# one keep-alive connection; checks every status; prints "PATH count" lines.
curl_load() {
    local port=$1 clients=$2 rounds=$3; shift 3
    local args=() c r p
    for ((r = 0; r < rounds; r++)); do
        for p in "$@"; do args+=(-o /dev/null "http://127.0.0.1:$port$p"); done
    done
    local curls=()
    for ((c = 0; c < clients; c++)); do
        timeout 60 curl -s --max-time 50 ${curl_extra:-} -w '%{http_code} %{num_connects}\n' "${args[@]}" \
            >"$work/curl.$port.$c" &
        curls+=($!)
    done
    wait "${curls[@]}" || true # statuses are checked below
    for ((c = 0; c < clients; c++)); do
        [ "$(grep -c '^200 ' "$work/curl.$port.$c")" -eq $((rounds * $#)) ] ||
            fail "client $c on port $port: not every request answered 200"
        [ "$(awk '{s += $2} END {print s}' "$work/curl.$port.$c")" -eq 1 ] ||
            fail "client $c on port $port: curl did not keep one connection alive"
    done
}

# apache_conf DIR FRONT_PORT BACKEND_PORT: apache2, worker MPM, proxying all
# to the backend with kept-alive, reused connections
apache_conf() {
    local dir=$1 fport=$2 bport=$3 mods=/usr/lib/apache2/modules
    mkdir -p "$dir"
    cat >"$dir/httpd.conf" <<CONF
ServerRoot $dir
ServerName 127.0.0.1
Listen 127.0.0.1:$fport
PidFile $dir/apache.pid
ErrorLog $dir/error.log
LogLevel warn
Mutex file:$dir default
LoadModule mpm_worker_module $mods/mod_mpm_worker.so
LoadModule authz_core_module $mods/mod_authz_core.so
LoadModule proxy_module $mods/mod_proxy.so
LoadModule proxy_http_module $mods/mod_proxy_http.so
User www-data
Group www-data
StartServers 1
ServerLimit 1
ThreadLimit 4
ThreadsPerChild 4
MaxRequestWorkers 4
MinSpareThreads 1
MaxSpareThreads 4
KeepAlive On
KeepAliveTimeout 10
MaxKeepAliveRequests 0
ProxyPass "/" "http://127.0.0.1:$bport/" keepalive=On enablereuse=on
ProxyPassReverse "/" "http://127.0.0.1:$bport/"
CONF
}

# start_tiers PREFIX APACHE_DIR FRONT_PORT BACKEND_PORT [BACKEND_ARGS...]:
# records backend.py (traces in $work/trace/PREFIXbackend) and apache2
# configured in APACHE_DIR (traces in $work/trace/PREFIXfrontend), waits
# for both ports; sets be and fe to the two recorders' pids
start_tiers() {
    local p=$1 adir=$work/$2 fport=$3 bport=$4
    shift 4
    "$bin" record -q --no-cpu-scores -o "$work/trace/${p}backend" -c backend -- /usr/bin/python3 \
        "$here/backend.py" "$bport" "$@" >"$work/${p}backend.out" 2>"$work/${p}backend.err" &
    pids+=($!); be=$!
    "$bin" record -q --no-cpu-scores -o "$work/trace/${p}frontend" -c frontend -- /usr/sbin/apache2 \
        -DFOREGROUND -f "$adir/httpd.conf" >"$adir.out" 2>"$adir.err" &
    pids+=($!); fe=$!
    wait_port "$bport" 30 || fail "backend.py $* not listening: $(cat "$work/${p}backend.err")"
    wait_port "$fport" 30 || fail "apache2 not listening: $(cat "$adir.err" "$adir/error.log")"
}

# ---- (1) apache2 worker MPM -> mod_proxy_http -> threaded Python ----
fport=$(free_port); bport=$(free_port)
while [ "$bport" = "$fport" ]; do bport=$(free_port); done
apache_conf "$work/apache" "$fport" "$bport"
start_tiers "" apache "$fport" "$bport"
rounds=15
curl_load "$fport" 3 "$rounds" /small /medium /large
stop "$fe"; stop "$be"
"$bin" analyze "$work/trace/frontend" "$work/trace/backend" -o "$work/apache.plan" \
    --blocks "$work/apache.tsv" >"$work/apache.analyze" 2>"$work/apache.analyze.err" ||
    fail "analyze apache: $(cat "$work/apache.analyze.err")"
cat "$work/apache.analyze"
"$bin" info --json "$work/apache.plan" >"$work/apache.json"
# check_plan.py INFO_JSON BLOCKS_TSV ROUNDS NAME: the apache2 -> backend plan
cat >"$work/check_plan.py" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
rounds = int(sys.argv[3])
tag = sys.argv[4]
want = {"GET /small": 3 * rounds, "GET /medium": 3 * rounds, "GET /large": 3 * rounds}
errors = []
if j["labels"] != want:
    errors.append("labels %s, curl sent %s" % (j["labels"], want))
if j["requests"] != 9 * rounds:
    errors.append("requests %d, curl sent %d" % (j["requests"], 9 * rounds))
if j["violations"] != 0:
    errors.append("violations %d: %s" % (j["violations"], j.get("violations_text")))
if j["coverage"] < 0.99:
    errors.append("coverage %.4f < 0.99" % j["coverage"])
comps = {c["name"]: c for c in j["components"]}
if sorted(comps) != ["backend", "frontend"] or not comps["frontend"]["frontend"]:
    errors.append("components %s" % j["components"])
blocks = {}
for line in open(sys.argv[2]):
    p = line.rstrip("\n").split("\t")
    if p[0] == "B":
        blocks[int(p[1])] = dict(comp=p[2], tid=int(p[4]), flags=int(p[7]),
                                 callees=[] if p[8] == "-" else [int(x) for x in p[8].split(",")],
                                 label=p[9], worker=int(p[10]))
sched = [int(l.split("\t")[1]) for l in open(sys.argv[2]) if l.startswith("R\t")]
fe = [b for b in blocks.values() if b["comp"] == "frontend"]
be = [i for i, b in blocks.items() if b["comp"] == "backend"]
if len(fe) != 9 * rounds or len(be) != 9 * rounds:
    errors.append("%d front-end and %d backend blocks, want %d each" % (len(fe), len(be), 9 * rounds))
if sorted(sched) != sorted(i for i, b in blocks.items() if b["comp"] == "frontend"):
    errors.append("the schedule is not the front-end blocks")
called = sorted(c for b in fe for c in b["callees"])
if called != sorted(be):
    errors.append("front-end blocks do not call each backend block exactly once")
if any(len(b["callees"]) != 1 for b in fe):
    errors.append("a front-end block without exactly one call")
for i, b in blocks.items():
    if b["comp"] == "backend" and b["label"] != blocks[next(k for k, f in blocks.items() if i in f["callees"])]["label"]:
        errors.append("backend block %d label %s differs from its caller's" % (i, b["label"]))
        break
for name in ("frontend", "backend"):
    ws = {b["worker"] for b in blocks.values() if b["comp"] == name}
    if not ws or max(ws) >= comps[name]["workers"]:
        errors.append("%s: block workers %s, component has %d" % (name, sorted(ws), comps[name]["workers"]))
if any(b["flags"] for b in blocks.values()):
    errors.append("blocks flagged")
print("%s: %d requests %s, coverage %.4f, %d+%d blocks, workers fe=%d be=%d" %
      (tag, j["requests"], j["labels"], j["coverage"], len(fe), len(be),
       comps["frontend"]["workers"], comps["backend"]["workers"]))
for e in errors:
    print("%s: %s" % (tag, e))
sys.exit(1 if errors else 0)
PY
/usr/bin/python3 "$work/check_plan.py" "$work/apache.json" "$work/apache.tsv" "$rounds" apache2+python ||
    fail "apache2 + Python plan"

# ---- (1b) the apache2 + Python plan replays: `preplay run` on it ----
# Both replayers locally, two short intervals, session mode (curl's clients
# were closed loop: each sent its next request when the answer came, and
# open-loop arrivals at their recorded times would queue behind the 40 ms
# stalls below). The Python backend answers headers and body in two sends
# without TCP_NODELAY, so /small and /medium wait ~40 ms on Nagle and
# apache2's delayed ACK, while /large (full segments) does not: the replay,
# sending send by send with the recorded options, must show the same stall
# where it was and no stall where it was not. Also: every label comes back,
# nothing fails, each tier ran exactly one block per request.
"$bin" run "$work/apache.plan" --interval 3s --max-intervals 2 --p0 0.99999 --cpu-ratio 1 \
    --mode session -o "$work/apache.results.json" >"$work/apache.run.out" 2>"$work/apache.run.err" ||
    fail "run on the apache2 + Python plan: $(tail -5 "$work/apache.run.err")"
/usr/bin/python3 - "$work/apache.results.json" "$work/apache.tsv" <<'PY' || fail "apache2 + Python replay"
import json, statistics, sys
d = json.load(open(sys.argv[1]))
recorded = {}
for line in open(sys.argv[2]):
    f = line.rstrip("\n").split("\t")
    if f[0] == "B" and f[2] == "frontend":
        recorded.setdefault(f[9], []).append((int(f[6]) - int(f[5])) / 1e9)
errors = []
labels = d["labels"]
if set(labels) != {"GET /small", "GET /medium", "GET /large"}:
    errors.append("labels %s" % sorted(labels))
iv = d["intervals"]
if len(iv) != 2 or any(i["failed"] for i in iv) or any(i["requests"] < 10 for i in iv):
    errors.append("intervals %s" % iv)
R = d["resources"]
for name, l in sorted(labels.items()):
    if l["count"] != sum(1 for x in d["samples"] if x["label"] == name and x["ok"]):
        errors.append("%s: count %d vs samples" % (name, l["count"]))
    for comp in ("frontend", "backend"):
        got = R.get(comp, {}).get(name, {}).get("blocks")
        if got != l["count"]:
            errors.append("%s: %s blocks %s, requests %d" % (comp, name, got, l["count"]))
    rec = statistics.median(recorded[name])
    rep = l["median_s"]
    stall = rec > 0.030
    print("apache2+python replay: %-11s recorded median %7.2f ms, replayed %7.2f ms (%d requests)"
          % (name, rec * 1e3, rep * 1e3, l["count"]))
    if stall and not (rep > 0.030 and abs(rep - rec) <= 0.25 * rec):
        errors.append("%s: the recorded %.1f ms stall is not reproduced (%.1f ms)" % (name, rec * 1e3, rep * 1e3))
    if not stall and rep > 0.020:
        errors.append("%s: %.1f ms replayed, recorded %.1f ms without a stall" % (name, rep * 1e3, rec * 1e3))
if not any(statistics.median(v) > 0.030 for v in recorded.values()):
    errors.append("no label stalled in the recording: the test lost its point")
for e in errors:
    print("apache2+python replay: " + e)
sys.exit(1 if errors else 0)
PY

# ---- (1c) the same with a forking backend: the parent accepts, a child per
# connection answers (socketserver.ForkingMixIn). The child's trace names
# the connection it inherited (an ACCEPT of its own, docs/tracer.md), so
# its requests are blocks the front end's calls pair with, as above ----
fport=$(free_port); bport=$(free_port)
while [ "$bport" = "$fport" ]; do bport=$(free_port); done
apache_conf "$work/apache-fork" "$fport" "$bport"
start_tiers f apache-fork "$fport" "$bport" --fork
curl_load "$fport" 3 "$rounds" /small /medium /large
stop "$fe"; stop "$be"
[ "$(ls "$work/trace/fbackend"/*.trace | wc -l)" -ge 2 ] || fail "the forking backend's children were not traced"
"$bin" analyze "$work/trace/ffrontend" "$work/trace/fbackend" -o "$work/fork.plan" \
    --blocks "$work/fork.tsv" >"$work/fork.analyze" 2>"$work/fork.analyze.err" ||
    fail "analyze apache2 + forking Python: $(cat "$work/fork.analyze.err")"
"$bin" info --json "$work/fork.plan" >"$work/fork.json"
/usr/bin/python3 "$work/check_plan.py" "$work/fork.json" "$work/fork.tsv" "$rounds" apache2+forking-python ||
    fail "apache2 + forking Python plan"

# ---- (2) nginx: event-driven, taken as an event loop ----
nport=$(free_port)
mkdir -p "$work/nginx/www"
head -c 16000000 /dev/urandom >"$work/nginx/www/big.bin" # > loopback socket buffers
echo small >"$work/nginx/www/small.txt"
cat >"$work/nginx/nginx.conf" <<CONF
daemon off;
master_process on;
worker_processes 1;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log;
user root;
events { worker_connections 64; }
http {
    access_log off;
    sendfile off;
    client_body_temp_path $work/nginx/body;
    proxy_temp_path $work/nginx/proxy;
    fastcgi_temp_path $work/nginx/fcgi;
    uwsgi_temp_path $work/nginx/uwsgi;
    scgi_temp_path $work/nginx/scgi;
    server {
        listen 127.0.0.1:$nport;
        root $work/nginx/www;
        keepalive_timeout 10;
        keepalive_requests 10000;
    }
}
CONF
"$bin" record -q --no-cpu-scores -o "$work/trace/nginx" -c web -- /usr/sbin/nginx -c "$work/nginx/nginx.conf" \
    -p "$work/nginx" >"$work/nginx.out" 2>"$work/nginx.err" &
pids+=($!); ng=$!
wait_port "$nport" 30 || fail "nginx not listening: $(cat "$work/nginx.err")"
# clients that read slowly fill nginx's socket buffers: it writes what fits,
# serves the other connections and comes back, one thread for all of them
curl_extra="--limit-rate 8M" curl_load "$nport" 3 1 /big.bin /small.txt
stop "$ng"
"$bin" analyze "$work/trace/nginx" -o "$work/nginx.plan" --blocks "$work/nginx.tsv" \
    >"$work/nginx.analyze" 2>"$work/nginx.analyze.err" ||
    fail "analyze nginx: $(cat "$work/nginx.analyze.err")"
cat "$work/nginx.analyze"
grep -E "^preplay analyze: component web \(pid [0-9]+\) thread [0-9]+ is an event loop \(took up another open request [1-9][0-9]* times\)" \
    "$work/nginx.analyze.err" || fail "nginx not taken as an event loop: $(cat "$work/nginx.analyze.err")"
"$bin" info --json "$work/nginx.plan" >"$work/nginx.json"
/usr/bin/python3 - "$work/nginx.json" "$work/nginx.tsv" <<'PY' || fail "nginx plan"
import json, sys
j = json.load(open(sys.argv[1]))
B = [l.rstrip("\n").split("\t") for l in open(sys.argv[2]) if l.startswith("B\t")]
flagged = sum(1 for b in B if int(b[7]) & 1)
errors = []
if j["violations"] != 0 or j["violation_blocks"] != 0 or flagged:
    errors.append("violations %d, %d blocks flagged: %s" % (j["violations"], flagged, j.get("violations_text")))
if not all(c["event_loop"] for c in j["components"]):
    errors.append("components %s: not marked as an event loop" % j["components"])
# 3 clients x (16 MB file, small.txt): one block per request, each its own bytes
sizes = sorted(int(b[15]) for b in B)
if j["requests"] != 6 or len(sizes) != 6 or any(s > 1000 for s in sizes[:3]) or \
        any(s < 16000000 for s in sizes[3:]):
    errors.append("%d requests, response bytes %s" % (j["requests"], sizes))
print("nginx: %d requests, %d violations, %d of %d blocks flagged" %
      (j["requests"], j["violations"], flagged, j["blocks"]))
for e in errors:
    print("nginx: " + e)
sys.exit(1 if errors else 0)
PY

# ---- (3) nginx -> php-fpm -> MariaDB ----
for tool in /usr/sbin/php-fpm8.2 /usr/sbin/mariadbd; do
    [ -x "$tool" ] || fail "$tool missing (tools/install-deps installs php8.2-fpm, mariadb-server)"
done
lemp=$work/lemp
mkdir -p "$lemp/www"
dbport=$(free_port)
lemp_db_start "$lemp" "$dbport"
stop_db() { lemp_db_stop "$lemp"; }
trap 'stop_db; cleanup' EXIT
lemp_sql "$lemp" "CREATE DATABASE app;
    CREATE TABLE app.items (id INT PRIMARY KEY, name VARCHAR(40));
    INSERT INTO app.items VALUES (1, 'one'), (2, 'two'), (3, 'three');
    CREATE TABLE app.visits (item INT, n INT);
    CREATE USER 'web'@'127.0.0.1' IDENTIFIED BY 'pw'; GRANT ALL ON app.* TO 'web'@'127.0.0.1';" ||
    fail "creating the LEMP test's database"
cat >"$lemp/www/item.php" <<PHP
<?php
\$db = new mysqli("127.0.0.1", "web", "pw", "app", $dbport);
\$id = intval(\$_GET["id"] ?? 1);
\$st = \$db->prepare("SELECT name FROM items WHERE id = ?");
\$st->bind_param("i", \$id);
\$st->execute();
\$row = \$st->get_result()->fetch_assoc();
\$n = \$db->query("SELECT COUNT(*) AS n FROM items")->fetch_assoc()["n"];
echo "item \$id: " . (\$row["name"] ?? "none") . " of \$n\n";
PHP
lemp_fpm_conf "$lemp" 2
lport=$(free_port)
LEMP_ACCESS_LOG=$lemp/access.log lemp_nginx_conf "$lemp" "$lport"
lemp_start_fpm "$lemp" "$bin" record -q --no-cpu-scores --db-port "$dbport" -o "$work/trace/php" -c php --
fpm=${pids[-1]}
lemp_start_nginx "$lemp" "$bin" record -q --no-cpu-scores -o "$work/trace/web" -c web --
web=${pids[-1]}
lemp_wait "$lemp" "$lport"
lemp_requests=12
args=()
for ((r = 0; r < lemp_requests; r++)); do args+=("http://127.0.0.1:$lport/item.php?id=$((r % 3 + 1))"); done
timeout 60 curl -s --max-time 50 "${args[@]}" >"$lemp/curl.out" || fail "curl through nginx and php-fpm"
[ "$(grep -c '^item [123]: \(one\|two\|three\) of 3$' "$lemp/curl.out")" -eq "$lemp_requests" ] ||
    fail "LEMP answers: $(head -5 "$lemp/curl.out")"
stop "$web"; stop "$fpm"
"$bin" analyze "$work/trace/web" "$work/trace/php" -o "$work/lemp.plan" --blocks "$work/lemp.tsv" \
    >"$work/lemp.analyze" 2>"$work/lemp.analyze.err" ||
    fail "analyze LEMP: $(cat "$work/lemp.analyze.err")"
cat "$work/lemp.analyze"
grep -q ": $lemp_requests requests, $((2 * lemp_requests)) blocks, $lemp_requests calls, 0 external calls, $((3 * lemp_requests)) DB ops;" \
    "$work/lemp.analyze" || fail "LEMP plan: requests, blocks, calls or DB ops (expected $lemp_requests requests)"
"$bin" info --json "$work/lemp.plan" >"$work/lemp.json"
/usr/bin/python3 - "$work/lemp.json" "$work/lemp.tsv" "$lemp_requests" <<'PY' || fail "LEMP plan"
import json, sys
j = json.load(open(sys.argv[1]))
n = int(sys.argv[3])
errors = []
if j["labels"] != {"GET /item.php": n}:
    errors.append("labels %s" % j["labels"])
if j["violations"] != 0:
    errors.append("violations %d: %s" % (j["violations"], j.get("violations_text")))
comps = {c["name"]: c for c in j["components"]}
if not comps.get("web", {}).get("frontend") or comps.get("php", {}).get("workers") != 2 or \
        not comps["php"]["prefork"] or comps["php"]["db_conns"] != n:
    errors.append("components %s" % j["components"])
blocks = {}
for line in open(sys.argv[2]):
    p = line.rstrip("\n").split("\t")
    if p[0] == "B":
        blocks[int(p[1])] = (p[2], [] if p[8] == "-" else [int(x) for x in p[8].split(",")])
web = [c for comp, c in blocks.values() if comp == "web"]
php = sorted(i for i, (comp, _) in blocks.items() if comp == "php")
if len(web) != n or any(len(c) != 1 for c in web) or sorted(x for c in web for x in c) != php:
    errors.append("each nginx block calls exactly one php-fpm block: %s / %s" % (web, php))
if j["resources_by_label"]["GET /item.php"]["db_s"] <= 0:
    errors.append("no DB time in the plan")
print("LEMP: %d requests, %d+%d blocks, coverage %.4f, php-fpm workers %d" %
      (j["requests"], len(web), len(php), j["coverage"], comps.get("php", {}).get("workers", 0)))
for e in errors:
    print("LEMP: " + e)
sys.exit(1 if errors else 0)
PY

# ---- (4) a Java tier: JDK HttpServer + Connector/J -> MariaDB ----
connector_j=/usr/share/java/mariadb-java-client.jar
command -v java >/dev/null && [ -r "$connector_j" ] ||
    fail "java or $connector_j missing (tools/install-deps installs default-jdk-headless, libmariadb-java)"
jport=$(free_port)
"$bin" record -q --no-cpu-scores --db-port "$dbport" -o "$work/trace/java" -c java -- \
    java -cp "$connector_j" "$here/item_server.java" "$jport" "$dbport" >"$work/java.out" 2>&1 &
pids+=($!); java_tier=$!
wait_port "$jport" 60 || fail "the Java tier is not listening: $(cat "$work/java.out")"
java_requests=12
args=()
for ((r = 0; r < java_requests; r++)); do args+=("http://127.0.0.1:$jport/item?id=$((r % 3 + 1))"); done
timeout 60 curl -s --max-time 50 "${args[@]}" >"$work/java.curl" || fail "curl to the Java tier"
[ "$(grep -c '^item [123]: \(one\|two\|three\)$' "$work/java.curl")" -eq "$java_requests" ] ||
    fail "Java tier answers: $(head -5 "$work/java.curl")"
stop "$java_tier"
"$bin" analyze "$work/trace/java" -o "$work/java.plan" --blocks "$work/java.tsv" \
    >"$work/java.analyze" 2>"$work/java.analyze.err" ||
    fail "analyze the Java tier: $(cat "$work/java.analyze.err")"
cat "$work/java.analyze"
# per request: Connector/J's 2 session queries, PREPARE + EXECUTE of the
# SELECT, PREPARE + 3 EXECUTEs of the batch
grep -q ": $java_requests requests, $java_requests blocks, 0 calls, 0 external calls, $((8 * java_requests)) DB ops;" \
    "$work/java.analyze" || fail "Java plan: requests, blocks or DB ops (expected $java_requests requests, 8 DB ops each)"
! grep -q "went backwards" "$work/java.analyze.err" ||
    fail "Java tier: events out of their thread's time order: $(cat "$work/java.analyze.err")"
"$bin" info --json "$work/java.plan" >"$work/java.json"
/usr/bin/python3 - "$work/java.json" "$java_requests" <<'PY' || fail "Java plan"
import json, sys
j = json.load(open(sys.argv[1]))
n = int(sys.argv[2])
errors = []
if j["labels"] != {"GET /item": n}:
    errors.append("labels %s" % j["labels"])
if j["violations"] != 0:
    errors.append("violations %d: %s" % (j["violations"], j.get("violations_text")))
comps = {c["name"]: c for c in j["components"]}
if comps.get("java", {}).get("workers") != 2 or comps["java"]["db_conns"] != n:
    errors.append("components %s" % j["components"])
if j["resources_by_label"]["GET /item"]["db_s"] <= 0:
    errors.append("no DB time in the plan")
print("Java tier: %d requests, coverage %.4f, workers %d" %
      (j["requests"], j["coverage"], comps.get("java", {}).get("workers", 0)))
for e in errors:
    print("Java tier: " + e)
sys.exit(1 if errors else 0)
PY
echo PASS
