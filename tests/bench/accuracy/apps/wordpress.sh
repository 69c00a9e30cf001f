#!/usr/bin/env bash
# tests/bench/accuracy/apps/wordpress.sh - WordPress (Debian's `wordpress`,
# apache2 prefork + mod_php 8.2, MariaDB through mysqlnd) for the accuracy
# benchmark: setup, start, stop and load of a private instance. Sourced by
# app-bench.sh --app wordpress (functions wp_*, over app-common.sh), or run as
#   wordpress.sh setup DIR | start DIR PORT | stop DIR | load HOST PORT RATE DURATION SEED CSV
#                | warmup PORT [HOST] | fresh DIR RUN | serve DIR PORT real|replay [BIN PLAN]
# Everything lives in DIR: the MariaDB datadir and socket (tests/apps/
# db-start.sh), apache2's config, pid, logs. The only file outside it is
# /etc/wordpress/config-preplay-accuracy.php (Debian's per-site config,
# chosen by apache's SetEnv WORDPRESS_CONFIG), which reads its database
# socket from apache's environment, so one file serves every instance.
# Must never touch the system apache2 or MariaDB services, never leave a
# server running (wp_stop stops both), and never be non-deterministic in
# content (wp_content.py, fixed seed).
wp_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$wp_here/app-common.sh"
APP_PREFIX=wp APP_LAUNCHER=apache/launcher.pid
WP_POSTS=${WP_POSTS:-300} WP_PAGES=${WP_PAGES:-100} WP_COMMENTS=${WP_COMMENTS:-1500}
# a fixed phpass hash of `reader-pass` (random salt made once: content must
# be the same bytes on every setup)
WP_READER_HASH='$P$BaYrJkFUY/ck4FMVL.2wJGkRjCPDYp0'
# the request labels (docs/preplay-record.md "Request labels")
APP_LABELS=(--label 'search=^GET /(index\.php)?\?(.*&)?s=' --label 'post=^GET /(index\.php)?\?(.*&)?p=[0-9]'
  --label 'page=^GET /(index\.php)?\?(.*&)?page_id=[0-9]' --label 'comment=^POST /wp-comments-post\.php'
  --label 'login=^POST /wp-login\.php')

wp_log() { echo "wordpress: $*" >&2; }

# wp_site_config: the one per-site Debian config (socket from the environment)
wp_site_config() {
  local f=/etc/wordpress/config-preplay-accuracy.php
  mkdir -p /etc/wordpress
  cat >"$f.tmp" <<'PHP'
<?php
/* written by preplay tests/bench/accuracy/apps/wordpress.sh: the accuracy
   benchmark's private instances (the socket comes from apache's SetEnv) */
define('DB_NAME', 'wordpress');
define('DB_USER', 'wp');
define('DB_PASSWORD', 'wp-pass');
define('DB_HOST', 'localhost:' . $_SERVER['PREPLAY_WP_SOCKET']);
define('DB_CHARSET', 'utf8mb4');
define('WP_HOME', 'http://preplay-wordpress');
define('WP_SITEURL', 'http://preplay-wordpress');
define('DISABLE_WP_CRON', true);
define('AUTOMATIC_UPDATER_DISABLED', true);
define('WP_HTTP_BLOCK_EXTERNAL', true);
define('AUTH_KEY', 'preplay'); define('SECURE_AUTH_KEY', 'preplay'); define('LOGGED_IN_KEY', 'preplay');
define('NONCE_KEY', 'preplay'); define('AUTH_SALT', 'preplay'); define('SECURE_AUTH_SALT', 'preplay');
define('LOGGED_IN_SALT', 'preplay'); define('NONCE_SALT', 'preplay');
$table_prefix = 'wp_';
/* the load posts many comments from one address: no flood check (a
   filter pre-registered before WordPress loads, WP_Hook's preinit form) */
$GLOBALS['wp_filter']['comment_flood_filter'][99]['preplay'] =
    array('function' => '__return_false', 'accepted_args' => 1);
PHP
  mv "$f.tmp" "$f"
}

# wp_apache_conf DIR PORT: DIR/apache/httpd.conf, prefork + mod_php,
# listening on APP_LISTEN (default 127.0.0.1; inside tools/emulate the
# namespace's own address, for a client on the host); WP_APACHE_EXTRA, when
# set, is appended as configuration lines (e.g. a php_admin_value
# auto_prepend_file: tests/bench/regress/real-app.sh's CPU-heavy plugin)
wp_apache_conf() {
  local d=$1/apache port=$2 m=/usr/lib/apache2/modules
  mkdir -p "$d"
  cat >"$d/httpd.conf" <<CONF
ServerRoot $d
ServerName preplay-wordpress
Listen ${APP_LISTEN:-127.0.0.1}:$port
PidFile $d/apache.pid
ErrorLog $d/error.log
LogLevel warn
Mutex file:$d default
LoadModule mpm_prefork_module $m/mod_mpm_prefork.so
LoadModule authz_core_module $m/mod_authz_core.so
LoadModule dir_module $m/mod_dir.so
LoadModule mime_module $m/mod_mime.so
LoadModule env_module $m/mod_env.so
LoadModule php_module $m/libphp8.2.so
TypesConfig /etc/mime.types
User www-data
Group www-data
StartServers 8
MinSpareServers 8
MaxSpareServers 16
ServerLimit 16
MaxRequestWorkers 16
MaxConnectionsPerChild 0
KeepAlive Off
DocumentRoot /usr/share/wordpress
DirectoryIndex index.php
SetEnv WORDPRESS_CONFIG preplay-accuracy
SetEnv PREPLAY_WP_SOCKET $1/db/mariadb.sock
<Directory /usr/share/wordpress>
    Require all granted
</Directory>
<FilesMatch "\.php\$">
    SetHandler application/x-httpd-php
</FilesMatch>
${WP_APACHE_EXTRA:-}
CONF
}

# wp_start DIR PORT [PREFIX...]: MariaDB, then apache2 (under PREFIX, e.g.
# `preplay record ... --`) in its own session; returns once it listens
wp_start() {
  local dir=$1 port=$2
  shift 2
  app_db_start "$dir" || return 1
  wp_apache_conf "$dir" "$port"
  "$@" setsid /usr/sbin/apache2 -DFOREGROUND -f "$dir/apache/httpd.conf" \
    </dev/null >"$dir/apache/out.log" 2>&1 &
  echo $! >"$dir/apache/launcher.pid"
  app_wait_port "$port" 60 || { wp_log "apache2 not listening: $(tail -5 "$dir/apache/error.log" "$dir/apache/out.log")"; wp_stop "$dir"; return 1; }
}

# wp_stop DIR: SIGTERM to what wp_start started (the recorder forwards it),
# bounded wait, then the database
wp_stop() { app_stop "$1" apache/launcher.pid apache/apache.pid; }

# wp_setup DIR: packages, an installed WordPress with content in DIR/base
# (a stopped MariaDB datadir to copy per run). Idempotent: kept when done.
wp_setup() {
  local dir=$1 port
  app_packages || return 1
  wp_site_config
  [ -f "$dir/base/done" ] && return 0
  rm -rf "$dir/base"
  mkdir -p "$dir/base"
  chmod 755 "$dir"
  port=$(python3 "$app_apps/../common/free_port.py")
  app_db_start "$dir/base" || return 1
  app_db_sql "$dir/base" <<SQL || { wp_stop "$dir/base"; return 1; }
CREATE DATABASE wordpress CHARACTER SET utf8mb4;
CREATE USER 'wp'@'localhost' IDENTIFIED BY 'wp-pass';
GRANT ALL ON wordpress.* TO 'wp'@'localhost';
SQL
  wp_start "$dir/base" "$port" || return 1
  local code
  code=$(curl -s -o "$dir/base/install.html" -w '%{http_code}' -H 'Host: preplay-wordpress' \
    --data-urlencode 'weblog_title=preplay accuracy' --data-urlencode 'user_name=admin' \
    --data-urlencode 'admin_password=admin-pass' --data-urlencode 'admin_password2=admin-pass' \
    --data-urlencode 'pw_weak=1' --data-urlencode 'admin_email=admin@example.org' \
    --data-urlencode 'blog_public=0' "http://127.0.0.1:$port/wp-admin/install.php?step=2")
  if [ "$code" != 200 ] || ! grep -q 'Success' "$dir/base/install.html"; then
    wp_log "install.php answered $code (see $dir/base/install.html)"
    wp_stop "$dir/base"
    return 1
  fi
  python3 "$wp_here/wp_content.py" --posts "$WP_POSTS" --pages "$WP_PAGES" --comments "$WP_COMMENTS" \
    --reader-hash "$WP_READER_HASH" | app_db_sql "$dir/base" wordpress ||
    { wp_stop "$dir/base"; return 1; }
  code=$(curl -s -o /dev/null -w '%{http_code}' -H 'Host: preplay-wordpress' "http://127.0.0.1:$port/?p=1000")
  wp_stop "$dir/base"
  [ "$code" = 200 ] || { wp_log "GET /?p=1000 answered $code after setup"; return 1; }
  touch "$dir/base/done"
}

# wp_load HOST PORT RATE DURATION SEED CSV: the fixed open-loop load
wp_load() {
  python3 "$wp_here/wp_load.py" --host "$1" --port "$2" --rate "$3" --duration "$4" \
    --seed "$5" --csv "$6" --posts "$WP_POSTS" --pages "$WP_PAGES"
}

# wp_db_url DIR: the replay's database (DIR's MariaDB, WordPress's user)
wp_db_url() { echo "mysql://wp:wp-pass@localhost/wordpress?socket=$1/db/mariadb.sock"; }

# wp_warmup PORT [HOST]: WP_WARMUP (default 40) requests one after another,
# outside the measured load (wp_load.py --warmup: opcache's cold start)
wp_warmup() {
  python3 "$wp_here/wp_load.py" --host "${2:-127.0.0.1}" --port "$1" --rate 1 --duration 0 \
    --csv /dev/null --posts "$WP_POSTS" --pages "$WP_PAGES" --warmup "${WP_WARMUP:-40}"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -uo pipefail
  app_main "wordpress.sh setup DIR | start DIR PORT | stop DIR | load HOST PORT RATE DURATION SEED CSV | warmup PORT [HOST] | fresh DIR RUN | serve DIR PORT real|replay [BIN PLAN]" "$@"
fi
