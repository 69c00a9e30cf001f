/* replay_db.c - DB queries for the replayer through MariaDB Connector/C
 * (a postgresql:// --db goes to replay_db_pg.c's libpq pool instead):
 * a shared pool of connections to --db (a worker takes one the first time it
 * needs it and gives it back when it ends, CloudProphet §3.1.2), and the
 * text a recorded query, prepare or execute is replayed as. Never retries a
 * failed query (the error is the replayed outcome) and never prints. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow_array.h"
#include "replay_db_pg.h"
#include "replay_exec.h"

char *replay_db_render(const char *sql, const char *params)
{
    /* each ? becomes a value of params or NULL (4 bytes) */
    size_t cap = 4 * strlen(sql) + (params ? strlen(params) : 0) + 1;
    char *out = malloc(cap), *o = out;
    if (!out)
        return NULL;
    const char *pp = params ? params : "";
    char quote = 0;
    for (const char *s = sql; *s; s++) {
        if (quote) {
            if (*s == quote)
                quote = 0;
            *o++ = *s;
            continue;
        }
        if (*s == '\'' || *s == '"' || *s == '`') {
            quote = *s;
            *o++ = *s;
            continue;
        }
        if (*s != '?') {
            *o++ = *s;
            continue;
        }
        /* next value of params: up to a comma outside quotes */
        while (*pp == ' ')
            pp++;
        const char *v = pp;
        char vq = 0;
        for (; *pp && (vq || *pp != ','); pp++) {
            if (vq && *pp == vq && pp[1] == vq)
                pp++; /* doubled quote inside a string */
            else if (vq && *pp == vq)
                vq = 0;
            else if (!vq && *pp == '\'')
                vq = '\'';
        }
        const char *ve = pp;
        while (ve > v && ve[-1] == ' ')
            ve--;
        if (ve == v) { /* fewer values than markers: NULL keeps it valid SQL */
            memcpy(o, "NULL", 4);
            o += 4;
        } else {
            memcpy(o, v, (size_t)(ve - v));
            o += ve - v;
        }
        if (*pp == ',')
            pp++;
    }
    *o = 0;
    return out;
}

#ifdef PREPLAY_HAVE_MARIADB
#include <mysql.h>

struct replay_db_my_pool;
static void replay_db_my_pool_free(struct replay_db_my_pool *pool);

struct replay_db_my_pool {
    char *host, *user, *password, *db, *socket;
    unsigned port;
    pthread_mutex_t mu;
    MYSQL **idle;
    size_t nidle, cap;
};

static char *replay_db_dup(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = 0;
    }
    return d;
}

/* mysql://user[:password]@host[:port]/db[?socket=/path] (mariadb:// too) */
static struct replay_db_my_pool *replay_db_my_pool_new(const char *url, const char *password,
                                                       char *err, size_t errlen)
{
    const char *s = strstr(url, "://");
    if (!s || (strncmp(url, "mysql", 5) && strncmp(url, "mariadb", 7))) {
        snprintf(err, errlen, "--db '%s': expected mysql://user:password@host:port/db", url);
        return NULL;
    }
    s += 3;
    struct replay_db_my_pool *pool = calloc(1, sizeof *pool);
    if (!pool)
        goto oom;
    pthread_mutex_init(&pool->mu, NULL);
    const char *at = strchr(s, '@');
    if (at) {
        const char *colon = memchr(s, ':', (size_t)(at - s));
        pool->user = replay_db_dup(s, (size_t)((colon ? colon : at) - s));
        pool->password = colon ? replay_db_dup(colon + 1, (size_t)(at - colon - 1)) : NULL;
        s = at + 1;
    }
    if (password) {
        free(pool->password);
        if (!(pool->password = strdup(password)))
            goto oom;
    }
    const char *slash = strchr(s, '/');
    const char *hostend = slash ? slash : s + strlen(s);
    const char *pc = memchr(s, ':', (size_t)(hostend - s));
    pool->host = replay_db_dup(s, (size_t)((pc ? pc : hostend) - s));
    if (pc)
        pool->port = (unsigned)atoi(pc + 1);
    if (slash) {
        const char *q = strchr(slash + 1, '?');
        pool->db = replay_db_dup(slash + 1, q ? (size_t)(q - slash - 1) : strlen(slash + 1));
        if (q && !strncmp(q + 1, "socket=", 7))
            pool->socket = replay_db_dup(q + 8, strlen(q + 8));
    }
    if (!pool->host)
        goto oom;
    return pool;
oom:
    snprintf(err, errlen, "out of memory parsing --db");
    replay_db_my_pool_free(pool);
    return NULL;
}

static void replay_db_my_pool_free(struct replay_db_my_pool *pool)
{
    if (!pool)
        return;
    for (size_t i = 0; i < pool->nidle; i++)
        mysql_close(pool->idle[i]);
    free(pool->idle);
    free(pool->host);
    free(pool->user);
    free(pool->password);
    free(pool->db);
    free(pool->socket);
    pthread_mutex_destroy(&pool->mu);
    free(pool);
}

static void *replay_db_my_acquire(struct replay_db_my_pool *pool, char *err, size_t errlen)
{
    pthread_mutex_lock(&pool->mu);
    MYSQL *m = pool->nidle ? pool->idle[--pool->nidle] : NULL;
    pthread_mutex_unlock(&pool->mu);
    if (m)
        return m;
    m = mysql_init(NULL);
    if (!m) {
        snprintf(err, errlen, "mysql_init: out of memory");
        return NULL;
    }
    if (!mysql_real_connect(m, pool->host, pool->user, pool->password, pool->db, pool->port,
                            pool->socket, CLIENT_MULTI_RESULTS)) {
        snprintf(err, errlen, "connect to %s:%u: %s", pool->host, pool->port, mysql_error(m));
        mysql_close(m);
        return NULL;
    }
    return m;
}

static void replay_db_my_release(struct replay_db_my_pool *pool, void *conn)
{
    if (!pool || !conn)
        return;
    pthread_mutex_lock(&pool->mu);
    if (grow_array((void **)&pool->idle, &pool->cap, pool->nidle + 1, sizeof *pool->idle, 16) !=
        0) {
        pthread_mutex_unlock(&pool->mu);
        mysql_close(conn);
        return;
    }
    pool->idle[pool->nidle++] = conn;
    pthread_mutex_unlock(&pool->mu);
}

static int replay_db_my_run(void *conn, const struct plan_op *op, const struct plan *p, char *err,
                            size_t errlen)
{
    MYSQL *m = conn;
    const char *sql = plan_string(p, op->a.db.sql);
    if (op->op == PLAN_DB_PREPARE) { /* the server parses it; the statement is dropped */
        MYSQL_STMT *st = mysql_stmt_init(m);
        int rc = 0;
        if (!st || mysql_stmt_prepare(st, sql, strlen(sql))) {
            rc = st ? (int)mysql_stmt_errno(st) : -1;
            snprintf(err, errlen, "%s", st ? mysql_stmt_error(st) : "out of memory");
        }
        if (st)
            mysql_stmt_close(st);
        return rc;
    }
    char *text = NULL;
    if (op->op == PLAN_DB_EXECUTE && op->a.db.params) {
        text = replay_db_render(sql, plan_string(p, op->a.db.params));
        if (!text) {
            snprintf(err, errlen, "out of memory rendering a query");
            return -1;
        }
        sql = text;
    }
    int rc = mysql_real_query(m, sql, strlen(sql));
    free(text);
    if (rc) {
        snprintf(err, errlen, "%s", mysql_error(m));
        return (int)mysql_errno(m) ? (int)mysql_errno(m) : -1;
    }
    /* read every result (stored procedures may send several) */
    do {
        MYSQL_RES *res = mysql_store_result(m);
        if (res)
            mysql_free_result(res);
        else if (mysql_field_count(m)) {
            snprintf(err, errlen, "%s", mysql_error(m));
            return (int)mysql_errno(m) ? (int)mysql_errno(m) : -1;
        }
    } while (mysql_next_result(m) == 0);
    if (mysql_errno(m)) {
        snprintf(err, errlen, "%s", mysql_error(m));
        return (int)mysql_errno(m);
    }
    return 0;
}

#else /* without MariaDB Connector/C: a mysql:// --db is refused up front */

struct replay_db_my_pool;

static struct replay_db_my_pool *replay_db_my_pool_new(const char *url, const char *password,
                                                       char *err, size_t errlen)
{
    (void)password;
    snprintf(err, errlen, "--db '%s': this build has no MariaDB Connector/C (libmariadb-dev)", url);
    return NULL;
}
static void replay_db_my_pool_free(struct replay_db_my_pool *pool)
{
    (void)pool;
}
static void *replay_db_my_acquire(struct replay_db_my_pool *pool, char *err, size_t errlen)
{
    (void)pool;
    snprintf(err, errlen, "no DB support in this build");
    return NULL;
}
static void replay_db_my_release(struct replay_db_my_pool *pool, void *conn)
{
    (void)pool;
    (void)conn;
}
static int replay_db_my_run(void *conn, const struct plan_op *op, const struct plan *p, char *err,
                            size_t errlen)
{
    (void)conn;
    (void)op;
    (void)p;
    snprintf(err, errlen, "no DB support in this build");
    return -1;
}
#endif

/* ---- the pool the engine holds: MySQL's, or PostgreSQL's (libpq) ---- */

struct replay_db_pool {
    struct replay_db_my_pool *my;
    struct replay_db_pg_pool *pg;
};

struct replay_db_pool *replay_db_pool_new(const char *url, const char *password, char *err,
                                          size_t errlen)
{
    struct replay_db_pool *pool = calloc(1, sizeof *pool);
    if (!pool) {
        snprintf(err, errlen, "out of memory parsing --db");
        return NULL;
    }
    if (replay_db_pg_url(url))
        pool->pg = replay_db_pg_pool_new(url, password, err, errlen);
    else
        pool->my = replay_db_my_pool_new(url, password, err, errlen);
    if (!pool->pg && !pool->my) {
        free(pool);
        return NULL;
    }
    return pool;
}

void replay_db_pool_free(struct replay_db_pool *pool)
{
    if (!pool)
        return;
    replay_db_my_pool_free(pool->my);
    replay_db_pg_pool_free(pool->pg);
    free(pool);
}

void *replay_db_acquire(struct replay_db_pool *pool, char *err, size_t errlen)
{
    return pool->pg ? replay_db_pg_acquire(pool->pg, err, errlen)
                    : replay_db_my_acquire(pool->my, err, errlen);
}

void replay_db_release(struct replay_db_pool *pool, void *conn)
{
    if (!pool)
        return;
    if (pool->pg)
        replay_db_pg_release(pool->pg, conn);
    else
        replay_db_my_release(pool->my, conn);
}

int replay_db_run(struct replay_db_pool *pool, void *conn, const struct plan_op *op,
                  const struct plan *p, char *err, size_t errlen)
{
    if (pool->pg)
        return replay_db_pg_run(conn, op, p, err, errlen);
    if (op->flags & PLAN_DB_POSTGRESQL) {
        snprintf(err, errlen, "a PostgreSQL statement, but --db is MySQL");
        return -1;
    }
    return replay_db_my_run(conn, op, p, err, errlen);
}
