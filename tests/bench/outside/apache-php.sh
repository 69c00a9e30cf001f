#!/usr/bin/env bash
# apache-php.sh - measures the work outside requests (docs/accuracy.md,
# "Work outside requests") on apache2 prefork + mod_php: a small PHP page
# (a CPU loop, a file read, Content-Length) under CLIENTS concurrent
# keep-alive clients, starting from ONE prefork worker so that apache
# spawns workers under load, as WordPress's prefork did in the accuracy
# benchmark. Records apache with `preplay record`, analyzes, and prints
# analyze's "outside requests" line and the opcode-cache warm-up: the
# response time of each worker's first request against the median of the
# rest (blocks TSV). Not a ctest (apache's spawn timing is the kernel's and
# apache's); run by hand: PREPLAY_BIN=build/release/preplay
# tests/bench/outside/apache-php.sh [CLIENTS] [ROUNDS]. Leaves nothing
# running; KEEP=1 keeps the work directory.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${PREPLAY_BIN:?PREPLAY_BIN not set}
clients=${1:-8}
rounds=${2:-300}
work=$(mktemp -d /tmp/preplay-outside-apache.XXXXXX)
chmod 755 "$work"
rec=
cleanup() {
    [ -n "$rec" ] && kill -TERM "$rec" 2>/dev/null && wait "$rec" 2>/dev/null || true
    [ -n "${KEEP:-}" ] && { echo "kept $work" >&2; return; }
    rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -f /usr/lib/apache2/modules/libphp8.2.so ] || fail "mod_php missing (apt-get install libapache2-mod-php8.2)"
port=$(/usr/bin/python3 "$here/../../common/free_port.py")
m=/usr/lib/apache2/modules
mkdir -p "$work/www" "$work/apache"
cat >"$work/www/page.php" <<'PHP'
<?php
ob_start();
$n = 0;
for ($i = 0; $i < 200000; $i++) { $n += $i % 7; }
$me = file_get_contents(__FILE__);
echo "page ", $n, " ", strlen($me), "\n";
header("Content-Length: " . ob_get_length());
ob_end_flush();
PHP
chmod -R a+rX "$work/www"
cat >"$work/apache/httpd.conf" <<CONF
ServerRoot $work/apache
ServerName preplay-outside
Listen 127.0.0.1:$port
PidFile $work/apache/apache.pid
ErrorLog $work/apache/error.log
LogLevel warn
Mutex file:$work/apache default
LoadModule mpm_prefork_module $m/mod_mpm_prefork.so
LoadModule authz_core_module $m/mod_authz_core.so
LoadModule mime_module $m/mod_mime.so
LoadModule php_module $m/libphp8.2.so
TypesConfig /etc/mime.types
User www-data
Group www-data
StartServers 1
MinSpareServers 1
MaxSpareServers 2
ServerLimit 16
MaxRequestWorkers 16
MaxConnectionsPerChild 0
KeepAlive On
MaxKeepAliveRequests 0
KeepAliveTimeout 20
DocumentRoot $work/www
<Directory $work/www>
    Require all granted
</Directory>
<FilesMatch "\.php\$">
    SetHandler application/x-httpd-php
</FilesMatch>
CONF
# in its own session: apache's parent signals its whole process group when
# it stops
"$bin" record -q --no-cpu-scores -o "$work/trace" -c apache -- setsid /usr/sbin/apache2 -DFOREGROUND \
    -f "$work/apache/httpd.conf" </dev/null >"$work/apache/out.log" 2>&1 &
rec=$!
for ((i = 0; i < 100; i++)); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    sleep 0.1
done
sleep 1 # apache settles at StartServers 1 before the load
/usr/bin/python3 "$here/../../analyze/keepalive_load.py" "$port" "$clients" "$rounds" \
    "$work/load.tsv" "GET /page.php" || fail "load: $(tail -3 "$work/apache/error.log")"
kill -TERM "$rec"
wait "$rec" || true
rec=
"$bin" analyze "$work/trace" -o "$work/plan" --blocks "$work/blocks.tsv" >"$work/analyze.out" \
    2>"$work/analyze.err" || fail "analyze: $(cat "$work/analyze.err")"
cat "$work/analyze.out"
echo "apache processes traced: $(ls "$work/trace" | grep -c '\.trace$')"
# warm-up: each worker's (pid's) first block against the median of the others
/usr/bin/python3 - "$work/blocks.tsv" <<'PY'
import statistics, sys
first, rest, seen = [], [], set()
for line in open(sys.argv[1]):
    p = line.rstrip("\n").split("\t")
    if p[0] != "B":
        continue
    ms = (int(p[6]) - int(p[5])) / 1e6
    (rest if p[3] in seen else first).append(ms)
    seen.add(p[3])
print("warm-up: %d workers' first requests median %.2f ms (max %.2f), the other %d requests "
      "median %.2f ms" % (len(first), statistics.median(first), max(first), len(rest),
                          statistics.median(rest)))
PY
