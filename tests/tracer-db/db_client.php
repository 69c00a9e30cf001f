<?php
// db_client.php - the statements of db_client.c through PHP's mysqli, whose
// mysqlnd driver speaks the MySQL protocol itself (no C client library to
// wrap: only the wire parser sees it), for test-db.sh's "php" scenario.
// usage: php db_client.php SOCKET DBNAME
//        php db_client.php tls:PORT DBNAME  (TCP with TLS, no certificate check)
mysqli_report(MYSQLI_REPORT_OFF); // the two statements that must fail return false
if ($argc != 3) {
    fwrite(STDERR, "usage: php db_client.php SOCKET|tls:PORT DBNAME\n");
    exit(2);
}
[, $where, $name] = $argv;

function check($ok, $what)
{
    if (!$ok) {
        fwrite(STDERR, "db_client.php: $what failed\n");
        exit(1);
    }
}

$db = mysqli_init();
if (str_starts_with($where, "tls:")) {
    $db->ssl_set(null, null, null, null, null);
    check($db->real_connect("127.0.0.1", "root", null, null, (int)substr($where, 4), null,
                            MYSQLI_CLIENT_SSL | MYSQLI_CLIENT_SSL_DONT_VERIFY_SERVER_CERT),
          "connect with TLS");
} else {
    check($db->real_connect(null, "root", null, null, 0, $where), "connect");
}
check($db->query("CREATE DATABASE IF NOT EXISTS $name"), "create database");
check($db->select_db($name), "select db");
check($db->query("CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(32), score DOUBLE)"),
      "create table");

$ins = $db->prepare("INSERT INTO t (id, name, score) VALUES (?, ?, ?)");
check($ins, "prepare insert");
$id = 0;
$nm = null;
$score = null;
check($ins->bind_param("isd", $id, $nm, $score), "bind insert");
foreach ([[1, "abc", 2.5], [2, "O'Brien", null], [3, null, -1.25]] as [$id, $nm, $score]) {
    check($ins->execute() && $ins->affected_rows == 1, "execute insert $id");
}

$sel = $db->prepare("SELECT id, name FROM t WHERE id >= ?");
check($sel, "prepare select");
$min = 2;
check($sel->bind_param("i", $min), "bind select");
check($sel->execute() && $sel->store_result() && $sel->num_rows == 2, "2 rows with id >= 2");
$sel->free_result();
$min = 1;
check($sel->execute() && $sel->store_result() && $sel->num_rows == 3, "3 rows with id >= 1");
$sel->free_result();

$r = $db->query("SELECT id FROM t ORDER BY id");
check($r && $r->num_rows == 3, "stored select");
$r->free();
$r = $db->query("SELECT name FROM t WHERE name IS NOT NULL", MYSQLI_USE_RESULT);
check($r, "unbuffered select");
$n = 0;
while ($r->fetch_row()) {
    $n++;
}
check($n == 2, "2 names");
$r->free();
check($db->query("UPDATE t SET score = 0 WHERE id <= 2") && $db->affected_rows == 2,
      "2 rows updated");
// a read-only cursor: the server keeps the rows, which come one at a time
// (mysqlnd has no MYSQLI_STMT_ATTR_PREFETCH_ROWS)
$cur = $db->prepare("SELECT id FROM t ORDER BY id DESC");
check($cur, "prepare cursor select");
check($cur->attr_set(MYSQLI_STMT_ATTR_CURSOR_TYPE, MYSQLI_CURSOR_TYPE_READ_ONLY),
      "cursor attribute");
check($cur->execute(), "execute cursor select");
$cid = 0;
check($cur->bind_result($cid), "bind cursor result");
$n = 0;
while ($cur->fetch()) {
    $n++;
}
check($n == 3, "3 rows through the cursor");
$cur->close();
check(!$db->query("SELEC broken") && $db->errno == 1064, "syntax error");
check(!$db->prepare("SELEC ?") && $db->errno == 1064, "prepare syntax error");
$ins->close();
$sel->close();
check($db->query("DROP DATABASE $name"), "drop database");
$db->close();
