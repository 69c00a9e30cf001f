# tests/common/lemp.sh - the nginx -> php-fpm -> MariaDB ("LEMP") stack the
# tests and benchmarks set up, sourced (bash): a private MariaDB on a port
# of its own (tests/apps/db-start.sh), php-fpm (prefork, a unix socket) and
# one nginx worker process (one event loop) serving DIR/www, PHP through
# FastCGI. Each user writes its own schema and PHP pages; this file holds
# what they share, once. Every file and socket lives under the DIR it is
# given; it never starts anything it does not report in the `pids` array
# or stops through lemp_db_stop, and never prints on success.
#
#   lemp_free_port                     a free TCP port (tests/common/free_port.py)
#   lemp_wait_port PORT SECONDS        0 once something accepts on 127.0.0.1:PORT
#   lemp_db_start DIR PORT             MariaDB in DIR/db (socket DIR/db/mariadb.sock)
#   lemp_db_stop DIR                   stops it (never fails)
#   lemp_sql DIR SQL                   runs SQL as root over the socket
#   lemp_fpm_conf DIR WORKERS          DIR/fpm.conf: static pool, socket DIR/fpm.sock
#   lemp_nginx_conf DIR PORT [HTTP [SERVER]]  DIR/nginx.conf; SERVER defaults
#                                      to the PHP location (lemp_php_location)
#   lemp_start_fpm DIR [PREFIX...]     php-fpm (under PREFIX, e.g. preplay
#                                      record ... --), its pid appended to pids
#   lemp_start_nginx DIR [PREFIX...]   nginx the same way
#   lemp_wait DIR PORT                 php-fpm's socket and nginx's port ready
#   lemp_orders_app DIR DBPORT         the orders app: database `app` (user web,
#                                      password pw, over TCP), DIR/www/item.php
#                                      (a prepared SELECT), order.php (a POST
#                                      body INSERTed, then a COUNT), static.bin
#                                      (30 KB); every answer has Content-Length
# LEMP_ACCESS_LOG: nginx's access_log (default off; a path logs there).
# LEMP_WAIT_S: how long lemp_wait waits for each (default 30 s; `preplay
# record` scores the CPU before it starts the server: seconds, more on a
# busy machine).
# Callers define fail() (one line, exit 1).

lemp_common=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

lemp_free_port() { /usr/bin/python3 "$lemp_common/free_port.py"; }

lemp_wait_port() { # port seconds
    local i
    for ((i = 0; i < $2 * 10; i++)); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}

lemp_db_start() { # dir port
    "$lemp_common/../apps/db-start.sh" "$1/db" "$2" 2>"$1/db-start.err" ||
        fail "MariaDB did not start: $(cat "$1/db-start.err")"
}

lemp_db_stop() { "$lemp_common/../apps/db-stop.sh" "$1/db" >/dev/null 2>&1 || true; }

lemp_sql() { mariadb --no-defaults -S "$1/db/mariadb.sock" -uroot -e "$2"; }

lemp_fpm_conf() { # dir workers
    cat >"$1/fpm.conf" <<FPM
[global]
pid = $1/fpm.pid
error_log = $1/fpm.err
daemonize = no
[www]
user = root
group = root
listen = $1/fpm.sock
pm = static
pm.max_children = $2
FPM
}

# The PHP location: FastCGI to DIR/fpm.sock, pages from DIR/www.
lemp_php_location() { # dir
    cat <<LOC
location ~ \.php\$ {
            fastcgi_pass unix:$1/fpm.sock;
            fastcgi_param SCRIPT_FILENAME $1/www\$fastcgi_script_name;
            fastcgi_param QUERY_STRING \$query_string;
            fastcgi_param REQUEST_METHOD \$request_method;
            fastcgi_param CONTENT_TYPE \$content_type;
            fastcgi_param CONTENT_LENGTH \$content_length;
        }
LOC
}

lemp_nginx_conf() { # dir port [http-level directives [server-level directives]]
    local server=${4-$(lemp_php_location "$1")}
    cat >"$1/nginx.conf" <<CONF
daemon off;
master_process on;
worker_processes 1;
pid $1/nginx.pid;
error_log $1/nginx.err;
user root;
events { worker_connections 128; }
http {
    access_log ${LEMP_ACCESS_LOG:-off};
    client_body_temp_path $1/body;
    proxy_temp_path $1/proxy;
    fastcgi_temp_path $1/fcgi;
    uwsgi_temp_path $1/uwsgi;
    scgi_temp_path $1/scgi;
    keepalive_timeout 20;
    keepalive_requests 10000;
    ${3:-}
    server {
        listen ${LEMP_LISTEN_ADDR:-127.0.0.1}:$2;
        root $1/www;
        $server
    }
}
CONF
}

lemp_start_fpm() { # dir [prefix...]
    local d=$1
    shift
    rm -f "$d/fpm.sock"
    "$@" /usr/sbin/php-fpm8.2 -R -F -y "$d/fpm.conf" >"$d/fpm.out" 2>&1 &
    pids+=($!)
}

lemp_start_nginx() { # dir [prefix...]
    local d=$1
    shift
    "$@" /usr/sbin/nginx -c "$d/nginx.conf" -p "$d" >"$d/nginx.out" 2>&1 &
    pids+=($!)
}

lemp_wait() { # dir port
    local i
    for ((i = 0; i < ${LEMP_WAIT_S:-30} * 10; i++)); do [ -S "$1/fpm.sock" ] && break; sleep 0.1; done
    [ -S "$1/fpm.sock" ] || fail "php-fpm not listening: $(cat "$1/fpm.out" "$1/fpm.err" 2>/dev/null)"
    lemp_wait_port "$2" "${LEMP_WAIT_S:-30}" || fail "nginx not listening: $(cat "$1/nginx.out" "$1/nginx.err" 2>/dev/null)"
}

lemp_orders_app() { # dir dbport
    mkdir -p "$1/www"
    lemp_sql "$1" "CREATE DATABASE app;
        CREATE TABLE app.items (id INT PRIMARY KEY, name VARCHAR(40));
        INSERT INTO app.items VALUES (1, 'one'), (2, 'two'), (3, 'three');
        CREATE TABLE app.orders (id INT AUTO_INCREMENT PRIMARY KEY, item INT, body VARCHAR(400));
        CREATE USER 'web'@'127.0.0.1' IDENTIFIED BY 'pw'; GRANT ALL ON app.* TO 'web'@'127.0.0.1';" ||
        fail "creating the orders database"
    # every answer carries Content-Length (the load client counts bytes exactly)
    cat >"$1/www/item.php" <<PHP
<?php
ob_start();
\$db = new mysqli("127.0.0.1", "web", "pw", "app", $2);
\$id = intval(\$_GET["id"] ?? 1);
\$st = \$db->prepare("SELECT name FROM items WHERE id = ?");
\$st->bind_param("i", \$id);
\$st->execute();
\$row = \$st->get_result()->fetch_assoc();
echo "item \$id: " . (\$row["name"] ?? "none") . "\n";
header("Content-Length: " . ob_get_length());
ob_end_flush();
PHP
    cat >"$1/www/order.php" <<PHP
<?php
ob_start();
\$db = new mysqli("127.0.0.1", "web", "pw", "app", $2);
\$body = file_get_contents("php://input");
\$st = \$db->prepare("INSERT INTO orders (item, body) VALUES (?, ?)");
\$item = 2;
\$st->bind_param("is", \$item, \$body);
\$st->execute();
\$n = \$db->query("SELECT COUNT(*) AS n FROM orders")->fetch_assoc()["n"];
echo "order " . \$db->insert_id . " of \$n (" . strlen(\$body) . " bytes)\n";
header("Content-Length: " . ob_get_length());
ob_end_flush();
PHP
    head -c 30000 /dev/urandom >"$1/www/static.bin"
}
