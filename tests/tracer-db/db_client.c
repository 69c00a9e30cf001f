/* db_client.c - a MySQL C API client with known queries for the tracer's DB
 * tests: plain queries (stored, unbuffered, send+read), prepared statements
 * with known parameters (stored and unbuffered fetch, and through a
 * read-only cursor), and one syntax error of each kind. Built twice: linked with libmariadb.so (the
 * C API wrappers see it) and with libmariadb.a (only the wire parser sees it), so both capture
 * paths are checked against the same expectations in check-db-trace.py. Exits non-zero with a
 * reason when any step does not do what the test expects; it never leaves the schema it creates
 * behind.
 *
 * usage: db_client SOCKET DATABASE */
#include <mysql.h>
#include <stdio.h>
#include <string.h>

#define CHECK(cond, what)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "db_client: %s failed: %s\n", what, mysql_error(db));                  \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)

static int db_client_query_rows(MYSQL *db, const char *sql, int unbuffered, long expect_rows)
{
    if (mysql_query(db, sql))
        return -1;
    MYSQL_RES *res = unbuffered ? mysql_use_result(db) : mysql_store_result(db);
    if (!res)
        return -1;
    long rows = 0;
    while (mysql_fetch_row(res))
        rows++;
    mysql_free_result(res);
    if (rows != expect_rows) {
        fprintf(stderr, "db_client: %s gave %ld rows, expected %ld\n", sql, rows, expect_rows);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: db_client SOCKET DATABASE\n");
        return 2;
    }
    MYSQL *db = mysql_init(NULL);
    MYSQL_STMT *ins = NULL, *sel = NULL, *cur = NULL, *bad = NULL;
    if (!db)
        return 1;
    CHECK(mysql_real_connect(db, NULL, "root", NULL, NULL, 0, argv[1], 0), "connect");
    char sql[256];
    snprintf(sql, sizeof sql, "CREATE DATABASE IF NOT EXISTS %s", argv[2]);
    CHECK(mysql_query(db, sql) == 0, "create database");
    CHECK(mysql_select_db(db, argv[2]) == 0, "select db");
    CHECK(mysql_query(db, "CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(32), score DOUBLE)") ==
              0,
          "create table");

    /* prepared INSERT, executed three times with known parameters */
    ins = mysql_stmt_init(db);
    CHECK(ins, "stmt init");
    const char *ins_sql = "INSERT INTO t (id, name, score) VALUES (?, ?, ?)";
    CHECK(mysql_stmt_prepare(ins, ins_sql, strlen(ins_sql)) == 0, "prepare insert");
    int id = 0;
    char name[32];
    unsigned long name_len = 0;
    double score = 0;
    my_bool name_null = 0, score_null = 0;
    MYSQL_BIND b[3];
    memset(b, 0, sizeof b);
    b[0].buffer_type = MYSQL_TYPE_LONG;
    b[0].buffer = &id;
    b[1].buffer_type = MYSQL_TYPE_STRING;
    b[1].buffer = name;
    b[1].buffer_length = sizeof name;
    b[1].length = &name_len;
    b[1].is_null = &name_null;
    b[2].buffer_type = MYSQL_TYPE_DOUBLE;
    b[2].buffer = &score;
    b[2].is_null = &score_null;
    CHECK(mysql_stmt_bind_param(ins, b) == 0, "bind insert");
    static const struct {
        int id;
        const char *name; /* NULL: SQL NULL */
        double score;
        int score_null;
    } rows[] = {{1, "abc", 2.5, 0}, {2, "O'Brien", 0, 1}, {3, NULL, -1.25, 0}};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        id = rows[i].id;
        name_null = rows[i].name == NULL;
        if (rows[i].name) {
            name_len = strlen(rows[i].name);
            memcpy(name, rows[i].name, name_len);
        }
        score = rows[i].score;
        score_null = (my_bool)rows[i].score_null;
        CHECK(mysql_stmt_execute(ins) == 0, "execute insert");
    }

    /* prepared SELECT: stored result, then unbuffered */
    sel = mysql_stmt_init(db);
    CHECK(sel, "stmt init");
    const char *sel_sql = "SELECT id, name FROM t WHERE id >= ?";
    CHECK(mysql_stmt_prepare(sel, sel_sql, strlen(sel_sql)) == 0, "prepare select");
    long long min_id = 2;
    MYSQL_BIND p;
    memset(&p, 0, sizeof p);
    p.buffer_type = MYSQL_TYPE_LONGLONG;
    p.buffer = &min_id;
    CHECK(mysql_stmt_bind_param(sel, &p) == 0, "bind select");
    CHECK(mysql_stmt_execute(sel) == 0, "execute select");
    CHECK(mysql_stmt_store_result(sel) == 0, "store select");
    int n = 0;
    while (mysql_stmt_fetch(sel) == 0)
        n++;
    CHECK(n == 2, "2 rows with id >= 2");
    min_id = 1;
    CHECK(mysql_stmt_execute(sel) == 0, "execute select again");
    n = 0;
    while (mysql_stmt_fetch(sel) == 0)
        n++; /* unbuffered */
    CHECK(n == 3, "3 rows with id >= 1");

    /* plain queries: stored, unbuffered, send + read */
    CHECK(db_client_query_rows(db, "SELECT id FROM t ORDER BY id", 0, 3) == 0, "stored select");
    CHECK(db_client_query_rows(db, "SELECT name FROM t WHERE name IS NOT NULL", 1, 2) == 0,
          "unbuffered select");
    const char *upd = "UPDATE t SET score = 0 WHERE id <= 2";
    CHECK(mysql_send_query(db, upd, strlen(upd)) == 0, "send update");
    CHECK(mysql_read_query_result(db) == 0, "read update");
    CHECK(mysql_affected_rows(db) == 2, "2 rows updated");

    /* a read-only cursor: the server keeps the rows, which come 2 at a time
     * (COM_STMT_FETCH) */
    cur = mysql_stmt_init(db);
    CHECK(cur, "stmt init");
    const char *cur_sql = "SELECT id FROM t ORDER BY id DESC";
    CHECK(mysql_stmt_prepare(cur, cur_sql, strlen(cur_sql)) == 0, "prepare cursor select");
    unsigned long cursor_type = CURSOR_TYPE_READ_ONLY, prefetch = 2;
    CHECK(mysql_stmt_attr_set(cur, STMT_ATTR_CURSOR_TYPE, &cursor_type) == 0 &&
              mysql_stmt_attr_set(cur, STMT_ATTR_PREFETCH_ROWS, &prefetch) == 0,
          "cursor attributes");
    CHECK(mysql_stmt_execute(cur) == 0, "execute cursor select");
    n = 0;
    while (mysql_stmt_fetch(cur) == 0)
        n++;
    CHECK(n == 3, "3 rows through the cursor");

    /* errors: a text query and a prepare with syntax errors (1064) */
    CHECK(mysql_query(db, "SELEC broken") != 0 && mysql_errno(db) == 1064, "syntax error");
    bad = mysql_stmt_init(db);
    CHECK(bad, "stmt init");
    CHECK(mysql_stmt_prepare(bad, "SELEC ?", 7) != 0 && mysql_stmt_errno(bad) == 1064,
          "prepare syntax error");

    mysql_stmt_close(bad);
    mysql_stmt_close(cur);
    mysql_stmt_close(sel);
    mysql_stmt_close(ins);
    snprintf(sql, sizeof sql, "DROP DATABASE %s", argv[2]);
    CHECK(mysql_query(db, sql) == 0, "drop database");
    mysql_close(db);
    return 0;
fail:
    if (bad)
        mysql_stmt_close(bad);
    if (cur)
        mysql_stmt_close(cur);
    if (sel)
        mysql_stmt_close(sel);
    if (ins)
        mysql_stmt_close(ins);
    mysql_close(db);
    return 1;
}
