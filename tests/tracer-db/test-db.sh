#!/usr/bin/env bash
# tests/tracer-db/test-db.sh - DB event capture end to end: starts a private
# MariaDB server (tests/apps/db-start.sh) in a temporary directory, records
# known statements from eleven clients (fourteen connections) and checks each trace exactly with
# check-db-trace.py:
#   mysqldb       /usr/bin/python3 + MySQLdb (libmariadb.so: C API wrappers)
#   c-dynamic     our db_client linked with libmariadb.so (prepared statements)
#   c-static      the same client linked with libmariadb.a (wire parser only)
#   pymysql-tcp   pymysql over 127.0.0.1:PORT (wire parser)
#   pymysql-unix  pymysql over the unix socket (wire parser)
#   cli           the `mariadb` command-line client (static client library)
#   php           PHP's mysqli (mysqlnd speaks the protocol itself: wire
#                 parser), db_client.c's statements from db_client.php
#   java          JDBC with MariaDB Connector/J (Java speaks the protocol
#                 itself: wire parser), db_client.c's statements from
#                 db_client.java, plus two batches the driver pipelines
#   pipeline      db_pipeline.py, our own protocol client: commands sent in
#                 one write with the login, behind unrecorded ones, EXECUTEs
#                 of "the last statement prepared", LOAD DATA LOCAL INFILE,
#                 a cursor, BULK_EXECUTE
#   deprecate-eof db_deprecate_eof.py, ours too, logged in with
#                 CLIENT_DEPRECATE_EOF as MySQL 8 era clients are: result
#                 sets end with an OK packet, a cursor likewise
#   node          Node.js with the mysql module (mysqljs speaks the protocol
#                 in JavaScript over libuv's sockets: wire parser),
#                 db_clients.py's statements from db_client.js
# and three of them again over TCP with TLS (pymysql-tls, php-tls, cli-tls:
# Python's ssl, PHP's openssl streams, the CLI's libssl): the same events,
# from the plaintext the SSL_write/SSL_read wrappers see; the server's
# Ssl_accepts counter proves each connection was encrypted.
# Works in the ASan build too: the traced programs are not sanitized (see
# CMakeLists.txt), only preplay itself is.
set -euo pipefail
: "${PREPLAY_BIN:?set by ctest}" "${PREPLAY_BUILD_DIR:?}" "${PREPLAY_SOURCE_DIR:?}"
here="$PREPLAY_SOURCE_DIR/tests/tracer-db"
apps="$PREPLAY_SOURCE_DIR/tests/apps"
bin="$PREPLAY_BUILD_DIR/tests/tracer-db"
py=/usr/bin/python3
for need in "$bin/db_client_dynamic" "$bin/db_client_static"; do
  [ -x "$need" ] || { echo "test-db: $need was not built (libmariadb-dev missing?)" >&2; exit 1; }
done
"$py" -c 'import MySQLdb, pymysql' ||
  { echo "test-db: /usr/bin/python3 lacks MySQLdb or pymysql (apt-get install python3-mysqldb python3-pymysql)" >&2; exit 1; }
command -v mariadb >/dev/null || { echo "test-db: mariadb client not found (apt-get install mariadb-client)" >&2; exit 1; }
php -r 'exit(function_exists("mysqli_init") ? 0 : 1);' ||
  { echo "test-db: php with mysqli not found (apt-get install php8.2-cli php8.2-mysql)" >&2; exit 1; }
connector_j=/usr/share/java/mariadb-java-client.jar
command -v javac >/dev/null && [ -r "$connector_j" ] ||
  { echo "test-db: a JDK or $connector_j is missing (apt-get install default-jdk-headless libmariadb-java)" >&2; exit 1; }
# Debian's node modules live in /usr/share/nodejs, which a nodejs from
# elsewhere (NodeSource) does not search by itself
export NODE_PATH=/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}
node -e 'require("mysql")' ||
  { echo "test-db: node or its mysql module is missing (apt-get install nodejs node-mysql)" >&2; exit 1; }

# short path: the server's unix socket lives in it
work=$(mktemp -d /tmp/preplay-db.XXXXXX)
cleanup() {
  "$apps/db-stop.sh" "$work/db" || true
  rm -rf "$work"
}
trap cleanup EXIT
port=$("$py" "$PREPLAY_SOURCE_DIR/tests/common/free_port.py")
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/key.pem" -out "$work/cert.pem" -days 1 \
  -subj /CN=127.0.0.1 >/dev/null 2>&1 || { echo "test-db: openssl could not make a certificate" >&2; exit 1; }
"$apps/db-start.sh" "$work/db" "$port" -- --ssl-cert="$work/cert.pem" --ssl-key="$work/key.pem"
sock="$work/db/mariadb.sock"
# db-start.sh names the socket mariadb.sock (not the default mysqld.sock).
rec=("$PREPLAY_BIN" record -q --no-cpu-scores --db-port "$port" --db-socket mariadb.sock)

failed=0
ssl_accepts() { # the server's count of TLS connections accepted
  mariadb --no-defaults --skip-ssl -S "$sock" -uroot -N -e "SHOW GLOBAL STATUS LIKE 'Ssl_accepts'" |
    awk '{print $2}'
}
check() { # SCENARIO NAME
  if ! "$py" "$here/check-db-trace.py" "$PREPLAY_BIN" "$work/$1" "$1" "$2" "$sock" "$port"; then
    failed=$((failed + 1))
  fi
}
run() { # SCENARIO NAME CMD... : records CMD, fails the test when it fails
  local scenario=$1 name=$2
  shift 2
  if ! "${rec[@]}" -o "$work/$scenario" -- "$@"; then
    echo "test-db: $scenario: the client failed under preplay record" >&2
    failed=$((failed + 1))
    return
  fi
  check "$scenario" "$name"
}

run mysqldb m "$py" "$here/db_clients.py" mysqldb "$sock" m
run c-dynamic cd "$bin/db_client_dynamic" "$sock" dbt_cd
run c-static cs "$bin/db_client_static" "$sock" dbt_cs
run pymysql-tcp pt "$py" "$here/db_clients.py" pymysql-tcp "$port" pt
run pymysql-unix pu "$py" "$here/db_clients.py" pymysql-unix "$sock" pu
run php php php "$here/db_client.php" "$sock" dbt_php
run java java java -cp "$connector_j" "$here/db_client.java" "$port" dbt_java
run pipeline pipe "$py" "$here/db_pipeline.py" "$port" dbt_pipe
run deprecate-eof deof "$py" "$here/db_deprecate_eof.py" "$port" dbt_deof
"$py" "$here/db_clients.py" json node >"$work/node-statements.json"
run node node node "$here/db_client.js" "$port" "$work/node-statements.json"
# The server offers TLS (for the *-tls runs below), which the CLI takes
# unasked: --skip-ssl keeps this run in plaintext. The CLI stops at the
# first error with -e even under --force; read from
# stdin in batch mode it goes on (the syntax error is one of the statements).
# Its exit status reflects that error: check its stderr instead.
tls_before_cli=$(ssl_accepts)
"$py" "$here/db_clients.py" sql cli |
  "${rec[@]}" -o "$work/cli" -- mariadb --no-defaults --force --skip-ssl -S "$sock" -uroot \
    >"$work/cli.out" 2>"$work/cli.err" || true
if ! grep -q "ERROR 1064" "$work/cli.err"; then
  echo "test-db: cli: expected the client to report ERROR 1064; its stderr:" >&2
  cat "$work/cli.err" >&2
  failed=$((failed + 1))
fi
[ "$(ssl_accepts)" -eq "$tls_before_cli" ] || { echo "test-db: cli: took TLS" >&2; failed=$((failed + 1)); }
check cli cli

# The TLS runs record NET and DB only: OpenSSL 3 takes ~1.7 M locks while
# a client loads the CA bundle, which would only slow the checks down.
rec+=(--only net,db)
run_tls() { # SCENARIO NAME CMD... : run, and the server must have accepted one more TLS connection
  local before
  before=$(ssl_accepts)
  run "$@"
  [ "$(ssl_accepts)" -gt "$before" ] || {
    echo "test-db: $1: the server accepted no TLS connection: the test proves nothing" >&2
    failed=$((failed + 1))
  }
}
run_tls pymysql-tls ptls "$py" "$here/db_clients.py" pymysql-tls "$port" ptls
run_tls php-tls phptls php "$here/db_client.php" "tls:$port" dbt_phptls
before=$(ssl_accepts)
"$py" "$here/db_clients.py" sql clitls |
  "${rec[@]}" -o "$work/cli-tls" -- mariadb --no-defaults --force -h 127.0.0.1 -P "$port" -uroot \
    --ssl --ssl-verify-server-cert=0 >"$work/cli-tls.out" 2>"$work/cli-tls.err" || true
grep -q "ERROR 1064" "$work/cli-tls.err" || {
  echo "test-db: cli-tls: expected the client to report ERROR 1064; its stderr:" >&2
  cat "$work/cli-tls.err" >&2
  failed=$((failed + 1))
}
[ "$(ssl_accepts)" -gt "$before" ] || { echo "test-db: cli-tls: no TLS connection" >&2; failed=$((failed + 1)); }
check cli-tls clitls

if [ "$failed" -ne 0 ]; then
  echo "test-db: $failed checks of 14 client runs failed" >&2
  exit 1
fi
echo "test-db: all 14 client runs recorded exactly (3 of them over TLS)"
