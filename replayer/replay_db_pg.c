/* replay_db_pg.c - DB ops recorded on PostgreSQL connections, replayed
 * through libpq against --db postgresql://user@host:port/db (or any
 * conninfo URI libpq takes, e.g. postgresql:///db?host=/run/dir&port=5433
 * for a unix socket). A shared pool of connections, as replay_db.c's for
 * MySQL; each keeps the statements it prepared: a PREPARE is a PQprepare
 * of a statement named for this connection, once per text (a text the app
 * parsed again, as an unnamed statement each time, is parsed again as the
 * unnamed statement), an EXECUTE runs the prepared one with the recorded
 * parameters (PQexecPrepared), or PQexecParams when this connection never
 * prepared it. A QUERY is PQexec. COPY FROM STDIN runs with no rows (the
 * recorded data is not kept), COPY TO STDOUT is read and dropped. Never
 * retries a failed statement (the error, its SQLSTATE packed, is the
 * replayed outcome) and never prints. The password never comes from a
 * command line: the caller passes it (--db-password-file,
 * PREPLAY_DB_PASSWORD). */
#include "replay_db_pg.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow_array.h"
#include "trace_event.h"

int replay_db_pg_url(const char *url)
{
    return url && (!strncmp(url, "postgresql://", 13) || !strncmp(url, "postgres://", 11));
}

/* The values of a rendered parameter list (`7, 'it''s', NULL, X'00FF'`)
 * as libpq's text-format parameters: NULL pointers for NULL, quoted text
 * unquoted, X'hex' as bytea's \x hex input, numbers as they are. *out is
 * one allocation holding the pointers and the values (free it). Returns
 * the count, -1 when out of memory. */
int replay_db_pg_params(const char *params, char ***out)
{
    *out = NULL;
    if (!params || !*params)
        return 0;
    size_t len = strlen(params), n = 1;
    for (const char *s = params; *s; s++)
        n += *s == ',';
    char **vals = malloc(n * sizeof *vals + len + 3 * n + 1); /* \\x and a NUL each */
    if (!vals)
        return -1;
    char *o = (char *)(vals + n);
    int count = 0;
    const char *p = params;
    while (*p) {
        while (*p == ' ')
            p++;
        if (!*p)
            break;
        if (!strncmp(p, "NULL", 4) && (p[4] == ',' || !p[4])) {
            vals[count++] = NULL;
            p += 4;
        } else if (*p == '\'' || ((*p == 'X' || *p == 'x') && p[1] == '\'')) {
            int hex = *p != '\'';
            vals[count++] = o;
            p += hex ? 2 : 1;
            if (hex) {
                *o++ = '\\';
                *o++ = 'x';
            }
            for (; *p; p++) {
                if (*p == '\'' && p[1] == '\'' && !hex)
                    p++;
                else if (*p == '\'')
                    break;
                *o++ = *p;
            }
            *o++ = 0;
            if (*p == '\'')
                p++;
        } else {
            vals[count++] = o;
            while (*p && *p != ',')
                *o++ = *p++;
            while (o > vals[count - 1] && o[-1] == ' ')
                o--;
            *o++ = 0;
        }
        while (*p && *p != ',')
            p++;
        if (*p == ',')
            p++;
    }
    *out = vals;
    return count;
}

#ifdef PREPLAY_HAVE_LIBPQ
#include <libpq-fe.h>

/* Statements one connection prepared under names of its own; past this,
 * statements are parsed with each execute (PQexecParams). */
#define REPLAY_PG_STMTS 256

struct replay_pg_conn {
    PGconn *c;
    char *sql[REPLAY_PG_STMTS]; /* sql[i] is prepared as "preplay_i" */
    size_t nsql;
    const char *unnamed; /* the text the unnamed statement holds (a plan string) */
};

struct replay_db_pg_pool {
    char *url, *password;
    pthread_mutex_t mu;
    struct replay_pg_conn **idle;
    size_t nidle, cap;
};

struct replay_db_pg_pool *replay_db_pg_pool_new(const char *url, const char *password, char *err,
                                                size_t errlen)
{
    struct replay_db_pg_pool *pool = calloc(1, sizeof *pool);
    if (!pool || !(pool->url = strdup(url)) || (password && !(pool->password = strdup(password)))) {
        snprintf(err, errlen, "out of memory parsing --db");
        replay_db_pg_pool_free(pool);
        return NULL;
    }
    /* libpq checks the URI itself: a bad one is said now, not per worker */
    char *perr = NULL;
    PQconninfoOption *opts = PQconninfoParse(url, &perr);
    if (!opts) {
        snprintf(err, errlen, "--db '%s': %s", url, perr ? perr : "not a PostgreSQL URI");
        PQfreemem(perr);
        replay_db_pg_pool_free(pool);
        return NULL;
    }
    PQconninfoFree(opts);
    pthread_mutex_init(&pool->mu, NULL);
    return pool;
}

static void replay_pg_conn_free(struct replay_pg_conn *pc)
{
    if (!pc)
        return;
    PQfinish(pc->c);
    for (size_t i = 0; i < pc->nsql; i++)
        free(pc->sql[i]);
    free(pc);
}

void replay_db_pg_pool_free(struct replay_db_pg_pool *pool)
{
    if (!pool)
        return;
    for (size_t i = 0; i < pool->nidle; i++)
        replay_pg_conn_free(pool->idle[i]);
    free(pool->idle);
    free(pool->url);
    free(pool->password);
    if (pool->url)
        pthread_mutex_destroy(&pool->mu);
    free(pool);
}

void *replay_db_pg_acquire(struct replay_db_pg_pool *pool, char *err, size_t errlen)
{
    pthread_mutex_lock(&pool->mu);
    struct replay_pg_conn *pc = pool->nidle ? pool->idle[--pool->nidle] : NULL;
    pthread_mutex_unlock(&pool->mu);
    if (pc)
        return pc;
    pc = calloc(1, sizeof *pc);
    if (!pc) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    /* the server's logs and pg_stat_activity tell the replay's sessions
     * (an application_name in the URL wins: it comes later) */
    const char *keys[] = {"application_name", "dbname", "password", NULL};
    const char *vals[] = {"preplay-replay", pool->url, pool->password, NULL};
    pc->c = PQconnectdbParams(keys, vals, 1);
    if (!pc->c || PQstatus(pc->c) != CONNECTION_OK) {
        const char *why = pc->c ? PQerrorMessage(pc->c) : "out of memory";
        size_t n = strlen(why);
        while (n && (why[n - 1] == '\n' || why[n - 1] == ' '))
            n--;
        snprintf(err, errlen, "connect to %s: %.*s", pool->url, (int)n, why);
        replay_pg_conn_free(pc);
        return NULL;
    }
    return pc;
}

void replay_db_pg_release(struct replay_db_pg_pool *pool, void *conn)
{
    if (!pool || !conn)
        return;
    pthread_mutex_lock(&pool->mu);
    if (grow_array((void **)&pool->idle, &pool->cap, pool->nidle + 1, sizeof *pool->idle, 16) !=
        0) {
        pthread_mutex_unlock(&pool->mu);
        replay_pg_conn_free(conn);
        return;
    }
    pool->idle[pool->nidle++] = conn;
    pthread_mutex_unlock(&pool->mu);
}

/* The outcome of a result (freed here): 0, or the SQLSTATE packed and the
 * message in err. A COPY's data is not the replay's: COPY FROM STDIN is
 * ended with no rows, COPY TO STDOUT read to its end. */
static int replay_pg_result(PGconn *c, PGresult *r, char *err, size_t errlen)
{
    int rc = 0;
    for (; r; r = PQgetResult(c)) {
        ExecStatusType st = PQresultStatus(r);
        if (st == PGRES_COPY_IN) {
            PQputCopyEnd(c, NULL);
        } else if (st == PGRES_COPY_OUT) {
            char *buf;
            while (PQgetCopyData(c, &buf, 0) > 0)
                PQfreemem(buf);
        } else if (st == PGRES_FATAL_ERROR || st == PGRES_BAD_RESPONSE ||
                   st == PGRES_NONFATAL_ERROR) {
            const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
            const char *msg = PQresultErrorMessage(r);
            size_t n = strlen(msg);
            while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
                n--;
            if (!rc) {
                rc = state && strlen(state) == 5 ? trace_db_sqlstate(state) : -1;
                snprintf(err, errlen, "%.*s", (int)n, msg);
            }
        }
        PQclear(r);
        if (PQstatus(c) != CONNECTION_OK) {
            if (!rc) {
                rc = -1;
                snprintf(err, errlen, "%s", PQerrorMessage(c));
            }
            break;
        }
    }
    return rc;
}

/* This connection's name for a statement text it prepared: its index, -1
 * when it has not. */
static long replay_pg_find(const struct replay_pg_conn *pc, const char *sql)
{
    for (size_t i = 0; i < pc->nsql; i++)
        if (!strcmp(pc->sql[i], sql))
            return (long)i;
    return -1;
}

static int replay_pg_prepare(struct replay_pg_conn *pc, const char *sql, char *err, size_t errlen)
{
    char name[32] = "";
    if (replay_pg_find(pc, sql) < 0 && pc->nsql < REPLAY_PG_STMTS) {
        char *copy = strdup(sql);
        if (!copy) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        snprintf(name, sizeof name, "preplay_%zu", pc->nsql);
        PGresult *r = PQprepare(pc->c, name, sql, 0, NULL);
        int rc = replay_pg_result(pc->c, r, err, errlen);
        if (rc)
            free(copy);
        else
            pc->sql[pc->nsql++] = copy;
        return rc;
    }
    /* parsed again by the app: the unnamed statement, parsed each time */
    pc->unnamed = sql;
    int rc = replay_pg_result(pc->c, PQprepare(pc->c, "", sql, 0, NULL), err, errlen);
    if (rc)
        pc->unnamed = NULL;
    return rc;
}

static int replay_pg_execute(struct replay_pg_conn *pc, const char *sql, const char *params,
                             char *err, size_t errlen)
{
    char **vals;
    int n = replay_db_pg_params(params, &vals);
    if (n < 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    const char *const *v = (const char *const *)vals;
    PGresult *r;
    long i;
    if (pc->unnamed && !strcmp(pc->unnamed, sql)) {
        r = PQexecPrepared(pc->c, "", n, v, NULL, NULL, 0);
    } else if ((i = replay_pg_find(pc, sql)) >= 0) {
        char name[32];
        snprintf(name, sizeof name, "preplay_%ld", i);
        r = PQexecPrepared(pc->c, name, n, v, NULL, NULL, 0);
    } else {
        r = PQexecParams(pc->c, sql, n, NULL, v, NULL, NULL, 0);
        pc->unnamed = NULL; /* it used the unnamed statement */
    }
    free(vals);
    return replay_pg_result(pc->c, r, err, errlen);
}

int replay_db_pg_run(void *conn, const struct plan_op *op, const struct plan *p, char *err,
                     size_t errlen)
{
    struct replay_pg_conn *pc = conn;
    if (!(op->flags & PLAN_DB_POSTGRESQL)) {
        snprintf(err, errlen, "a MySQL statement, but --db is PostgreSQL");
        return -1;
    }
    const char *sql = plan_string(p, op->a.db.sql);
    switch (op->op) {
    case PLAN_DB_PREPARE:
        return replay_pg_prepare(pc, sql, err, errlen);
    case PLAN_DB_EXECUTE:
        return replay_pg_execute(pc, sql, op->a.db.params ? plan_string(p, op->a.db.params) : NULL,
                                 err, errlen);
    default:
        pc->unnamed = NULL; /* a simple Query drops the unnamed statement */
        return replay_pg_result(pc->c, PQexec(pc->c, sql), err, errlen);
    }
}

#else /* without libpq: a postgresql:// --db is refused up front */

struct replay_db_pg_pool *replay_db_pg_pool_new(const char *url, const char *password, char *err,
                                                size_t errlen)
{
    (void)password;
    snprintf(err, errlen, "--db '%s': this build has no libpq (apt-get install libpq-dev)", url);
    return NULL;
}
void replay_db_pg_pool_free(struct replay_db_pg_pool *pool)
{
    (void)pool;
}
void *replay_db_pg_acquire(struct replay_db_pg_pool *pool, char *err, size_t errlen)
{
    (void)pool;
    snprintf(err, errlen, "no PostgreSQL support in this build");
    return NULL;
}
void replay_db_pg_release(struct replay_db_pg_pool *pool, void *conn)
{
    (void)pool;
    (void)conn;
}
int replay_db_pg_run(void *conn, const struct plan_op *op, const struct plan *p, char *err,
                     size_t errlen)
{
    (void)conn;
    (void)op;
    (void)p;
    snprintf(err, errlen, "no PostgreSQL support in this build");
    return -1;
}
#endif
