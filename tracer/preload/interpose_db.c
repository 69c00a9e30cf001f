/* interpose_db.c - DB events from the MySQL C API, as exported by MariaDB
 * Connector/C (libmariadb.so.3) and libmysqlclient: connect/close, text
 * queries (mysql_real_query, mysql_query, mysql_send_query +
 * mysql_read_query_result), result fetching (store/use result, fetch_row,
 * free_result), and prepared statements (prepare, bind_param, execute,
 * store_result, fetch) with their parameters rendered as text.
 *
 * Event design (what the analyzer reads, see docs/tracer-db.md):
 *   CONNECT  query_id = "user@host:port/db", error, db_conn_id
 *   QUERY    the command until the server's answer header: query text, error,
 *            rows = affected rows when there is no result set
 *   PREPARE  statement text, stmt_id (ours, per process), error
 *   EXECUTE  stmt_id, statement text, params_id (`1, 'abc', NULL`), error,
 *            rows = affected rows when there is no result set
 *   FETCH    the result set transfer of the latest QUERY/EXECUTE on the same
 *            db_conn_id (same query_id/stmt_id): rows and bytes delivered
 *   CLOSE    mysql_close
 * db_conn_id is the NET conn_id of the client's socket when the library
 * tells us its descriptor (mysql_get_socket), so DB events and the NET
 * events of the same connection share one id; else a fresh id of the same
 * counter. The libraries' own send/recv calls are still traced as NET
 * events nested inside the DB event; the wire parser is switched off while a
 * wrapper runs (tracer_in_db_capi) so a query is never recorded twice.
 *
 * The library never links libmariadb: the real functions are found lazily
 * with tracer_resolve_loaded (dlsym(RTLD_NEXT) and, when the client library
 * was loaded RTLD_LOCAL, as Python loads extension modules, the loaded
 * objects that define them). The
 * bookkeeping tables are lock-free (an object is used by one thread at a
 * time: the MySQL API requires it) and fixed-size; when one is full, the
 * objects beyond it are traced without ids/parameters, never harmed.
 * Wrappers never change a call's result or errno. */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "db_common.h"
#include "fd_table.h"
#include "io_events.h"

/* ---- the MySQL ABI we rely on -------------------------------------------
 * Handles are opaque. MYSQL_BIND and MYSQL_TIME have the same layout in
 * MariaDB Connector/C 3.x and libmysqlclient 5.7/8.x (both x86-64 LP64). */
typedef struct db_mysql MYSQL;
typedef struct db_mysql_res MYSQL_RES;
typedef struct db_mysql_stmt MYSQL_STMT;
typedef char **MYSQL_ROW;
typedef char db_my_bool;

typedef struct db_mysql_bind {
    unsigned long *length;
    db_my_bool *is_null;
    void *buffer;
    db_my_bool *error;
    unsigned char *row_ptr;
    void (*store_param_func)(void *, struct db_mysql_bind *);
    void (*fetch_result)(struct db_mysql_bind *, void *, unsigned char **);
    void (*skip_result)(struct db_mysql_bind *, void *, unsigned char **);
    unsigned long buffer_length;
    unsigned long offset;
    unsigned long length_value;
    unsigned int flags;
    unsigned int pack_length;
    int buffer_type;
    db_my_bool error_value;
    db_my_bool is_unsigned;
    db_my_bool long_data_used;
    db_my_bool is_null_value;
    void *extension;
} MYSQL_BIND;
_Static_assert(sizeof(MYSQL_BIND) == 112, "MYSQL_BIND layout of Connector/C 3.x");

typedef struct db_mysql_time {
    unsigned int year, month, day, hour, minute, second;
    unsigned long second_part;
    db_my_bool neg;
    int time_type;
} MYSQL_TIME;

#define DB_MYSQL_NO_DATA 100
#define DB_MYSQL_DATA_TRUNCATED 101

/* ---- resolving the real functions -------------------------------------- */

TRACER_REAL_LOADED(MYSQL *, mysql_real_connect,
                   (MYSQL *, const char *, const char *, const char *, const char *, unsigned int,
                    const char *, unsigned long))
TRACER_REAL_LOADED(void, mysql_close, (MYSQL *))
TRACER_REAL_LOADED(int, mysql_real_query, (MYSQL *, const char *, unsigned long))
TRACER_REAL_LOADED(int, mysql_query, (MYSQL *, const char *))
TRACER_REAL_LOADED(int, mysql_send_query, (MYSQL *, const char *, unsigned long))
TRACER_REAL_LOADED(int, mysql_read_query_result, (MYSQL *))
TRACER_REAL_LOADED(MYSQL_RES *, mysql_store_result, (MYSQL *))
TRACER_REAL_LOADED(MYSQL_RES *, mysql_use_result, (MYSQL *))
TRACER_REAL_LOADED(MYSQL_ROW, mysql_fetch_row, (MYSQL_RES *))
TRACER_REAL_LOADED(void, mysql_free_result, (MYSQL_RES *))
TRACER_REAL_LOADED(unsigned long *, mysql_fetch_lengths, (MYSQL_RES *))
TRACER_REAL_LOADED(unsigned long long, mysql_num_rows, (MYSQL_RES *))
TRACER_REAL_LOADED(unsigned int, mysql_num_fields, (MYSQL_RES *))
TRACER_REAL_LOADED(void *, mysql_row_tell, (MYSQL_RES *))
TRACER_REAL_LOADED(void *, mysql_row_seek, (MYSQL_RES *, void *))
TRACER_REAL_LOADED(unsigned int, mysql_errno, (MYSQL *))
TRACER_REAL_LOADED(unsigned int, mysql_field_count, (MYSQL *))
TRACER_REAL_LOADED(unsigned long long, mysql_affected_rows, (MYSQL *))
TRACER_REAL_LOADED(MYSQL_STMT *, mysql_stmt_init, (MYSQL *))
TRACER_REAL_LOADED(int, mysql_stmt_prepare, (MYSQL_STMT *, const char *, unsigned long))
TRACER_REAL_LOADED(db_my_bool, mysql_stmt_bind_param, (MYSQL_STMT *, MYSQL_BIND *))
TRACER_REAL_LOADED(int, mysql_stmt_execute, (MYSQL_STMT *))
TRACER_REAL_LOADED(int, mysql_stmt_store_result, (MYSQL_STMT *))
TRACER_REAL_LOADED(int, mysql_stmt_fetch, (MYSQL_STMT *))
TRACER_REAL_LOADED(db_my_bool, mysql_stmt_free_result, (MYSQL_STMT *))
TRACER_REAL_LOADED(db_my_bool, mysql_stmt_close, (MYSQL_STMT *))
TRACER_REAL_LOADED(unsigned int, mysql_stmt_errno, (MYSQL_STMT *))
TRACER_REAL_LOADED(unsigned long, mysql_stmt_param_count, (MYSQL_STMT *))
TRACER_REAL_LOADED(unsigned int, mysql_stmt_field_count, (MYSQL_STMT *))
TRACER_REAL_LOADED(unsigned long long, mysql_stmt_num_rows, (MYSQL_STMT *))
TRACER_REAL_LOADED(unsigned long long, mysql_stmt_affected_rows, (MYSQL_STMT *))

/* mysql_get_socket exists in Connector/C only: optional. */
typedef int (*db_get_socket_fn)(MYSQL *);
static db_get_socket_fn db_get_socket_ptr;
static _Atomic int db_get_socket_looked;

static int db_socket_of(MYSQL *m)
{
    if (!atomic_load_explicit(&db_get_socket_looked, memory_order_acquire)) {
        db_get_socket_ptr = (db_get_socket_fn)tracer_resolve_loaded("mysql_get_socket");
        atomic_store_explicit(&db_get_socket_looked, 1, memory_order_release);
    }
    return db_get_socket_ptr ? db_get_socket_ptr(m) : -1;
}

/* ---- lock-free pointer-keyed tables ------------------------------------ */

#define DB_KEY_EMPTY ((uintptr_t)0)
#define DB_KEY_DEAD ((uintptr_t)1)
#define DB_PROBE_MAX 64

struct db_slot_head {
    _Atomic uintptr_t key;
};

static size_t db_hash_ptr(uintptr_t p)
{
    uint64_t h = (uint64_t)p * 0x9e3779b97f4a7c15ull;
    return (size_t)(h >> 32);
}

/* Finds key's slot; with `create`, claims one (zeroing its payload) when the
 * key is absent. NULL when absent (or no room within DB_PROBE_MAX). */
static void *db_table_slot(void *slots, size_t stride, size_t nslots, const void *ptr, int create)
{
    uintptr_t key = (uintptr_t)ptr;
    if (key <= DB_KEY_DEAD)
        return NULL;
    size_t h = db_hash_ptr(key);
    struct db_slot_head *dead = NULL;
    for (size_t i = 0; i < DB_PROBE_MAX && i < nslots; i++) {
        struct db_slot_head *s =
            (struct db_slot_head *)((char *)slots + ((h + i) & (nslots - 1)) * stride);
        uintptr_t k = atomic_load_explicit(&s->key, memory_order_acquire);
        if (k == key)
            return s;
        if (k == DB_KEY_DEAD) {
            if (!dead)
                dead = s;
            continue;
        }
        if (k != DB_KEY_EMPTY)
            continue;
        if (!create)
            return NULL;
        /* absent: claim the first tombstone seen, else this empty slot */
        if (dead) {
            uintptr_t expect = DB_KEY_DEAD;
            if (atomic_compare_exchange_strong(&dead->key, &expect, key)) {
                memset((char *)dead + sizeof *dead, 0, stride - sizeof *dead);
                return dead;
            }
        }
        uintptr_t expect = DB_KEY_EMPTY;
        if (atomic_compare_exchange_strong(&s->key, &expect, key)) {
            memset((char *)s + sizeof *s, 0, stride - sizeof *s);
            return s;
        }
        if (expect == key)
            return s;
    }
    if (create && dead) {
        uintptr_t expect = DB_KEY_DEAD;
        if (atomic_compare_exchange_strong(&dead->key, &expect, key)) {
            memset((char *)dead + sizeof *dead, 0, stride - sizeof *dead);
            return dead;
        }
    }
    return NULL;
}

static void db_table_release(void *slot)
{
    if (slot)
        atomic_store_explicit(&((struct db_slot_head *)slot)->key, DB_KEY_DEAD,
                              memory_order_release);
}

/* MYSQL* -> what we know of the connection. */
struct db_conn_slot {
    struct db_slot_head head;
    uint64_t conn_id; /* used when the socket's NET conn_id is unknown */
    uint32_t last_query_id;
    uint64_t last_stmt_id;
    /* mysql_send_query waiting for mysql_read_query_result */
    int send_pending;
    uint32_t send_query_id;
    uint64_t send_begin_ns, send_bytes;
};
#define DB_CONN_SLOTS 256
static struct db_conn_slot db_conns[DB_CONN_SLOTS];

/* MYSQL_RES* of an unbuffered (use_result) result being fetched. */
struct db_res_slot {
    struct db_slot_head head;
    MYSQL *mysql;
    uint64_t conn_id;
    uint32_t query_id;
    uint64_t stmt_id;
    uint64_t begin_ns;
    uint64_t rows, bytes;
    int done;
};
#define DB_RES_SLOTS 256
static struct db_res_slot db_results[DB_RES_SLOTS];
static _Atomic uint32_t db_results_live; /* lets fetch_row skip the lookup */

/* A bound parameter, copied at bind time (the library copies the MYSQL_BIND
 * array too, so the app may reuse its own); the buffers it points to must
 * stay valid until execute anyway. */
struct db_param {
    void *buffer;
    unsigned long *length;
    db_my_bool *is_null;
    uint32_t buffer_length;
    uint8_t type, is_unsigned, is_null_value, pad;
};
#define DB_PARAMS_KEPT 32

/* MYSQL_STMT* -> statement identity, bound parameters, unbuffered fetch. */
struct db_stmt_slot {
    struct db_slot_head head;
    MYSQL *mysql;
    uint64_t stmt_id;
    uint32_t query_id;
    uint64_t query_len; /* the text's real length when it was cut, else 0 */
    uint32_t nparams;   /* parameters the statement takes */
    uint32_t nbound;    /* of which we copied the binding */
    int bound;
    int fetch_pending; /* executed with a result set, neither stored nor finished */
    uint64_t fetch_begin_ns, fetch_rows;
    struct db_param params[DB_PARAMS_KEPT];
};
#define DB_STMT_SLOTS 512
static struct db_stmt_slot db_stmts[DB_STMT_SLOTS];
static _Atomic uint64_t db_next_stmt_id;

#define DB_CONN(m, create)                                                                         \
    ((struct db_conn_slot *)db_table_slot(db_conns, sizeof db_conns[0], DB_CONN_SLOTS, (m),        \
                                          (create)))
#define DB_RES(r, create)                                                                          \
    ((struct db_res_slot *)db_table_slot(db_results, sizeof db_results[0], DB_RES_SLOTS, (r),      \
                                         (create)))
#define DB_STMT(s, create)                                                                         \
    ((struct db_stmt_slot *)db_table_slot(db_stmts, sizeof db_stmts[0], DB_STMT_SLOTS, (s),        \
                                          (create)))

/* ---- event helpers ------------------------------------------------------ */

/* The connection id for events on m: the NET conn_id of its socket when we
 * know it (so DB and NET events line up), else an id of our own. */
static uint64_t db_conn_id_of(struct tracer_thread *t, MYSQL *m, struct db_conn_slot *c)
{
    int fd = m ? db_socket_of(m) : -1;
    if (fd >= 0) {
        struct tracer_fd *f = tracer_fd_classify(fd);
        if (f && f->kind == TRACER_FD_SOCKET) {
            uint64_t now = tracer_ring_now();
            uint64_t id = tracer_conn_ensure(t, fd, f, TRACE_CONN_IDENT, now, now, 0);
            if (id) {
                if (c)
                    c->conn_id = id;
                return id;
            }
        }
    }
    if (!c)
        return 0;
    if (!c->conn_id)
        c->conn_id = tracer_next_conn_id();
    return c->conn_id;
}

struct db_fields {
    uint8_t op;
    int32_t error;
    uint64_t conn_id;
    uint32_t query_id, params_id;
    uint64_t stmt_id, rows, bytes;
    struct db_cut cut;
};

static void db_emit(struct tracer_thread *t, const struct db_fields *d, uint64_t begin,
                    uint64_t end)
{
    /* CPU the library used after its last nested NET event goes with this
     * record instead of being dropped by tracer_event_end. */
    tracer_event_begin(t);
    struct trace_event *ev = tracer_event_new(t, TRACE_EV_DB, d->op, begin, end);
    if (ev) {
        ev->u.db.source = TRACE_DB_CAPI;
        ev->u.db.error = d->error;
        ev->u.db.db_conn_id = d->conn_id;
        ev->u.db.query_id = d->query_id;
        ev->u.db.params_id = d->params_id;
        ev->u.db.stmt_id = d->stmt_id;
        ev->u.db.rows = d->rows;
        ev->u.db.bytes = d->bytes;
        if (d->error)
            ev->flags |= TRACE_F_ERROR;
        db_cut_apply(ev, &d->cut);
        tracer_commit(t);
    }
    tracer_event_end(t, end);
}

/* Enters a C API wrapper: NULL when the call is nested in another wrapper
 * (the library calls its own exported functions) or not traced now. The
 * caller must always call db_leave. */
static struct tracer_thread *db_enter(int *nested)
{
    *nested = tracer_in_db_capi > 0;
    tracer_in_db_capi++;
    if (*nested)
        return NULL;
    return tracer_enter(TRACER_ONLY_DB);
}

static void db_leave(void)
{
    tracer_in_db_capi--;
}

/* The shape every C API wrapper that times its call shares, written once:
 * enter; untraced (nested or tracing off): the real call, then UNTRACED (a
 * statement keeping our tables right, or `(void)0`), leave and return;
 * traced: BEFORE (a statement, or `(void)0`), the real call between two
 * timestamps, errno saved. Declares t, nested, begin, RES (the result, of
 * type TYPE), err and end for the wrapper's body, which ends with
 * DB_CALL_END(RES). */
#define DB_CALL_BEGIN(TYPE, RES, realcall, UNTRACED, BEFORE)                                       \
    int nested;                                                                                    \
    struct tracer_thread *t = db_enter(&nested);                                                   \
    if (!t) {                                                                                      \
        TYPE RES = realcall;                                                                       \
        UNTRACED;                                                                                  \
        db_leave();                                                                                \
        return RES;                                                                                \
    }                                                                                              \
    BEFORE;                                                                                        \
    uint64_t begin = tracer_event_begin(t);                                                        \
    TYPE RES = realcall;                                                                           \
    int err = errno;                                                                               \
    uint64_t end = tracer_ring_now()

#define DB_CALL_END(RES)                                                                           \
    db_leave();                                                                                    \
    errno = err;                                                                                   \
    return RES

/* ---- connect / close ---------------------------------------------------- */

TRACER_EXPORT MYSQL *mysql_real_connect(MYSQL *m, const char *host, const char *user,
                                        const char *passwd, const char *db, unsigned int port,
                                        const char *unix_socket, unsigned long flags)
{
    DB_CALL_BEGIN(
        MYSQL *, r,
        tracer_real_mysql_real_connect()(m, host, user, passwd, db, port, unix_socket, flags),
        (void)0, (void)0);
    struct db_conn_slot *c = DB_CONN(m, 1);
    if (c)
        c->conn_id = 0; /* a new connection (MYSQL* reused after close) */
    struct db_fields d = {.op = TRACE_DB_CONNECT};
    d.error = r ? 0 : (int32_t)tracer_real_mysql_errno()(m);
    d.conn_id = r ? db_conn_id_of(t, m, c) : (c ? db_conn_id_of(t, NULL, c) : 0);
    char desc[512];
    int n;
    if (unix_socket && *unix_socket && (!host || !strcmp(host, "localhost")))
        n = snprintf(desc, sizeof desc, "%s@localhost:%s/%s", user ? user : "", unix_socket,
                     db ? db : "");
    else
        n = snprintf(desc, sizeof desc, "%s@%s:%u/%s", user ? user : "", host ? host : "localhost",
                     port, db ? db : "");
    if (n > 0)
        d.query_id = tracer_intern(desc, (size_t)n < sizeof desc ? (size_t)n : sizeof desc - 1);
    db_emit(t, &d, begin, end);
    DB_CALL_END(r);
}

TRACER_EXPORT void mysql_close(MYSQL *m)
{
    int nested;
    struct tracer_thread *t = db_enter(&nested);
    struct db_conn_slot *c = m && !nested ? DB_CONN(m, 0) : NULL;
    if (!t) {
        tracer_real_mysql_close()(m);
        db_table_release(c);
        db_leave();
        return;
    }
    uint64_t begin = tracer_event_begin(t);
    int fd = m ? db_socket_of(m) : -1;
    uint64_t conn = (c || fd >= 0) ? db_conn_id_of(t, m, c) : 0;
    tracer_real_mysql_close()(m);
    int err = errno;
    uint64_t end = tracer_ring_now();
    db_table_release(c);
    if (conn) {
        struct db_fields d = {.op = TRACE_DB_CLOSE, .conn_id = conn};
        db_emit(t, &d, begin, end);
    }
    db_leave();
    errno = err;
}

/* ---- text queries -------------------------------------------------------- */

/* The QUERY event of a finished command on m (rc != 0: failed): bytes is
 * the text's length, so a text longer than the cap was cut
 * (db_intern_statement). */
static void db_query_done(struct tracer_thread *t, MYSQL *m, int rc, uint32_t query_id,
                          uint64_t bytes, uint64_t begin, uint64_t end)
{
    struct db_conn_slot *c = DB_CONN(m, 1);
    struct db_fields d = {.op = TRACE_DB_QUERY, .query_id = query_id, .bytes = bytes};
    if (bytes > db_statement_cap())
        d.cut.query_len = bytes;
    d.conn_id = db_conn_id_of(t, m, c);
    if (rc != 0)
        d.error = (int32_t)tracer_real_mysql_errno()(m);
    else if (tracer_real_mysql_field_count()(m) == 0)
        d.rows = tracer_real_mysql_affected_rows()(m);
    if (c) {
        c->last_query_id = query_id;
        c->last_stmt_id = 0;
    }
    db_emit(t, &d, begin, end);
}

static int db_text_query(MYSQL *m, const char *q, unsigned long len, int use_strlen)
{
    DB_CALL_BEGIN(int, rc,
                  use_strlen ? tracer_real_mysql_query()(m, q)
                             : tracer_real_mysql_real_query()(m, q, len),
                  (void)0, (void)0);
    if (use_strlen)
        len = q ? strlen(q) : 0;
    uint64_t cut_len = 0;
    db_query_done(t, m, rc, q ? db_intern_statement(q, len, &cut_len) : 0, len, begin, end);
    DB_CALL_END(rc);
}

TRACER_EXPORT int mysql_real_query(MYSQL *m, const char *q, unsigned long len)
{
    return db_text_query(m, q, len, 0);
}

TRACER_EXPORT int mysql_query(MYSQL *m, const char *q)
{
    return db_text_query(m, q, 0, 1);
}

/* mysql_send_query + mysql_read_query_result make one QUERY event spanning
 * both (the app may work in between: that time is inside the event). */
TRACER_EXPORT int mysql_send_query(MYSQL *m, const char *q, unsigned long len)
{
    DB_CALL_BEGIN(int, rc, tracer_real_mysql_send_query()(m, q, len), (void)0, (void)0);
    uint64_t cut_len = 0;
    uint32_t qid = q ? db_intern_statement(q, len, &cut_len) : 0;
    struct db_conn_slot *c = DB_CONN(m, 1);
    if (rc != 0 || !c) {
        db_query_done(t, m, rc, qid, len, begin, end);
    } else {
        c->send_pending = 1;
        c->send_query_id = qid;
        c->send_begin_ns = begin;
        c->send_bytes = len;
    }
    DB_CALL_END(rc);
}

TRACER_EXPORT int mysql_read_query_result(MYSQL *m)
{
    DB_CALL_BEGIN(int, rc, tracer_real_mysql_read_query_result()(m), (void)0, (void)0);
    struct db_conn_slot *c = DB_CONN(m, 0);
    if (c && c->send_pending) {
        c->send_pending = 0;
        db_query_done(t, m, rc, c->send_query_id, c->send_bytes, c->send_begin_ns, end);
    } else {
        db_query_done(t, m, rc, 0, 0, begin, end); /* send not seen: text unknown */
    }
    DB_CALL_END(rc);
}

/* ---- result sets ---------------------------------------------------------- */

/* Bytes of row data in a stored result: walks the rows once and puts the
 * cursor back where it was (at the start: nothing was fetched yet). */
static uint64_t db_stored_bytes(MYSQL_RES *res)
{
    unsigned nf = tracer_real_mysql_num_fields()(res);
    void *at = tracer_real_mysql_row_tell()(res);
    uint64_t bytes = 0;
    while (tracer_real_mysql_fetch_row()(res)) {
        unsigned long *len = tracer_real_mysql_fetch_lengths()(res);
        if (!len)
            break;
        for (unsigned i = 0; i < nf; i++)
            bytes += len[i];
    }
    tracer_real_mysql_row_seek()(res, at);
    return bytes;
}

TRACER_EXPORT MYSQL_RES *mysql_store_result(MYSQL *m)
{
    DB_CALL_BEGIN(MYSQL_RES *, r, tracer_real_mysql_store_result()(m), (void)0, (void)0);
    unsigned myerr = r ? 0 : tracer_real_mysql_errno()(m);
    if (r || myerr) { /* NULL without error: the statement had no result set */
        struct db_conn_slot *c = DB_CONN(m, 1);
        struct db_fields d = {.op = TRACE_DB_FETCH, .error = (int32_t)myerr};
        d.conn_id = db_conn_id_of(t, m, c);
        if (c) {
            d.query_id = c->last_query_id;
            d.stmt_id = c->last_stmt_id;
        }
        if (r) {
            d.rows = tracer_real_mysql_num_rows()(r);
            d.bytes = db_stored_bytes(r);
        }
        db_emit(t, &d, begin, end);
    }
    DB_CALL_END(r);
}

TRACER_EXPORT MYSQL_RES *mysql_use_result(MYSQL *m)
{
    DB_CALL_BEGIN(MYSQL_RES *, r, tracer_real_mysql_use_result()(m), (void)0, (void)0);
    struct db_conn_slot *c = DB_CONN(m, 1);
    uint64_t conn = db_conn_id_of(t, m, c);
    struct db_res_slot *s = r ? DB_RES(r, 1) : NULL;
    if (s) {
        s->mysql = m;
        s->conn_id = conn;
        s->query_id = c ? c->last_query_id : 0;
        s->stmt_id = c ? c->last_stmt_id : 0;
        s->begin_ns = begin;
        atomic_fetch_add_explicit(&db_results_live, 1, memory_order_relaxed);
    } else {
        unsigned myerr = r ? 0 : tracer_real_mysql_errno()(m);
        if (r || myerr) { /* untracked result or failure: say what we know now */
            struct db_fields d = {.op = TRACE_DB_FETCH, .error = (int32_t)myerr, .conn_id = conn};
            if (c)
                d.query_id = c->last_query_id;
            db_emit(t, &d, begin, end);
        }
    }
    DB_CALL_END(r);
}

/* The FETCH event of an unbuffered result, once its rows are over. */
static void db_res_finish(struct tracer_thread *t, struct db_res_slot *s, unsigned error,
                          uint64_t end)
{
    if (s->done)
        return;
    s->done = 1;
    struct db_fields d = {.op = TRACE_DB_FETCH,
                          .error = (int32_t)error,
                          .conn_id = s->conn_id,
                          .query_id = s->query_id,
                          .stmt_id = s->stmt_id,
                          .rows = s->rows,
                          .bytes = s->bytes};
    if (t)
        db_emit(t, &d, s->begin_ns, end);
}

TRACER_EXPORT MYSQL_ROW mysql_fetch_row(MYSQL_RES *res)
{
    /* hot path: stored results (the common case) need nothing from us */
    if (TRACER_LIKELY(!atomic_load_explicit(&db_results_live, memory_order_relaxed)) ||
        tracer_in_db_capi)
        return tracer_real_mysql_fetch_row()(res);
    struct db_res_slot *s = DB_RES(res, 0);
    if (!s || s->done)
        return tracer_real_mysql_fetch_row()(res);
    int nested;
    struct tracer_thread *t = db_enter(&nested);
    MYSQL_ROW row = tracer_real_mysql_fetch_row()(res);
    int err = errno;
    if (row) {
        s->rows++;
        unsigned nf = tracer_real_mysql_num_fields()(res);
        unsigned long *len = tracer_real_mysql_fetch_lengths()(res);
        for (unsigned i = 0; len && i < nf; i++)
            s->bytes += len[i];
    } else {
        db_res_finish(t, s, tracer_real_mysql_errno()(s->mysql), tracer_ring_now());
    }
    db_leave();
    errno = err;
    return row;
}

TRACER_EXPORT void mysql_free_result(MYSQL_RES *res)
{
    struct db_res_slot *s = NULL;
    if (atomic_load_explicit(&db_results_live, memory_order_relaxed) && !tracer_in_db_capi)
        s = DB_RES(res, 0);
    if (!s) {
        tracer_real_mysql_free_result()(res);
        return;
    }
    int nested;
    struct tracer_thread *t = db_enter(&nested);
    if (t)
        tracer_event_begin(t);
    tracer_real_mysql_free_result()(res); /* drains unread rows of an unbuffered result */
    int err = errno;
    db_res_finish(t, s, 0, tracer_ring_now());
    db_table_release(s);
    atomic_fetch_sub_explicit(&db_results_live, 1, memory_order_relaxed);
    db_leave();
    errno = err;
}

/* ---- prepared statements --------------------------------------------------- */

TRACER_EXPORT MYSQL_STMT *mysql_stmt_init(MYSQL *m)
{
    MYSQL_STMT *s = tracer_real_mysql_stmt_init()(m);
    int err = errno;
    struct db_stmt_slot *st = s ? DB_STMT(s, 1) : NULL;
    if (st) {
        memset((char *)st + sizeof st->head, 0, sizeof *st - sizeof st->head);
        st->mysql = m;
    }
    errno = err;
    return s;
}

/* A statement prepared while tracing is off keeps ids consistent. */
static void db_stmt_prepared_untraced(MYSQL_STMT *s, int nested)
{
    struct db_stmt_slot *st = nested ? NULL : DB_STMT(s, 0);
    if (st) {
        st->stmt_id = atomic_fetch_add(&db_next_stmt_id, 1) + 1;
        st->query_id = 0;
        st->query_len = 0;
        st->bound = 0;
    }
}

TRACER_EXPORT int mysql_stmt_prepare(MYSQL_STMT *s, const char *q, unsigned long len)
{
    DB_CALL_BEGIN(int, rc, tracer_real_mysql_stmt_prepare()(s, q, len),
                  db_stmt_prepared_untraced(s, nested), (void)0);
    struct db_stmt_slot *st = DB_STMT(s, 1);
    struct db_fields d = {.op = TRACE_DB_PREPARE, .bytes = len};
    d.query_id = q ? db_intern_statement(q, len, &d.cut.query_len) : 0;
    d.stmt_id = atomic_fetch_add(&db_next_stmt_id, 1) + 1;
    if (rc != 0)
        d.error = (int32_t)tracer_real_mysql_stmt_errno()(s);
    if (st) {
        st->stmt_id = d.stmt_id;
        st->query_id = d.query_id;
        st->query_len = d.cut.query_len;
        st->bound = 0;
        st->fetch_pending = 0;
        st->nparams = rc == 0 ? (uint32_t)tracer_real_mysql_stmt_param_count()(s) : 0;
        struct db_conn_slot *c = st->mysql ? DB_CONN(st->mysql, 1) : NULL;
        d.conn_id = db_conn_id_of(t, st->mysql, c);
    }
    db_emit(t, &d, begin, end);
    DB_CALL_END(rc);
}

TRACER_EXPORT db_my_bool mysql_stmt_bind_param(MYSQL_STMT *s, MYSQL_BIND *bind)
{
    db_my_bool rc = tracer_real_mysql_stmt_bind_param()(s, bind);
    int err = errno;
    struct db_stmt_slot *st = rc == 0 && bind && !tracer_in_db_capi ? DB_STMT(s, 0) : NULL;
    if (st) {
        uint32_t n = (uint32_t)tracer_real_mysql_stmt_param_count()(s);
        st->nparams = n;
        st->nbound = n < DB_PARAMS_KEPT ? n : DB_PARAMS_KEPT;
        for (uint32_t i = 0; i < st->nbound; i++) {
            struct db_param *p = &st->params[i];
            p->buffer = bind[i].buffer;
            p->length = bind[i].length;
            p->is_null = bind[i].is_null;
            p->buffer_length =
                bind[i].buffer_length > UINT32_MAX ? UINT32_MAX : (uint32_t)bind[i].buffer_length;
            p->type = (uint8_t)bind[i].buffer_type;
            p->is_unsigned = (uint8_t)bind[i].is_unsigned;
            p->is_null_value = (uint8_t)bind[i].is_null_value;
        }
        st->bound = 1;
    }
    errno = err;
    return rc;
}

/* Renders one bound parameter from the app's buffers (as the library will
 * send it). */
static void db_render_bound(struct db_render *r, const struct db_param *p)
{
    int is_null = p->is_null ? *p->is_null != 0 : p->is_null_value != 0;
    const void *b = p->buffer;
    if (is_null || p->type == DB_TYPE_NULL || !b) {
        db_render_null(r);
        return;
    }
    int u = p->is_unsigned;
    switch (p->type) {
    case DB_TYPE_TINY:
        if (u)
            db_render_uint(r, *(const uint8_t *)b);
        else
            db_render_int(r, *(const int8_t *)b);
        return;
    case DB_TYPE_SHORT:
    case DB_TYPE_YEAR:
        if (u)
            db_render_uint(r, *(const uint16_t *)b);
        else
            db_render_int(r, *(const int16_t *)b);
        return;
    case DB_TYPE_LONG:
    case DB_TYPE_INT24:
        if (u)
            db_render_uint(r, *(const uint32_t *)b);
        else
            db_render_int(r, *(const int32_t *)b);
        return;
    case DB_TYPE_LONGLONG:
        if (u)
            db_render_uint(r, *(const uint64_t *)b);
        else
            db_render_int(r, *(const int64_t *)b);
        return;
    case DB_TYPE_FLOAT:
        db_render_double(r, *(const float *)b, 1);
        return;
    case DB_TYPE_DOUBLE:
        db_render_double(r, *(const double *)b, 0);
        return;
    case DB_TYPE_DATE:
    case DB_TYPE_DATETIME:
    case DB_TYPE_TIMESTAMP:
    case DB_TYPE_TIME: {
        const MYSQL_TIME *tm = b;
        db_render_temporal(r, p->type, tm->year, tm->month, tm->day, tm->hour, tm->minute,
                           tm->second, tm->second_part, tm->neg);
        return;
    }
    default: {
        unsigned long len = p->length ? *p->length : p->buffer_length;
        db_render_text(r, b, len, p->type != DB_TYPE_DECIMAL && p->type != DB_TYPE_NEWDECIMAL);
        return;
    }
    }
}

/* The bound parameters of st, rendered (db_intern_params). */
static void db_stmt_render(struct db_render *r, const void *ctx)
{
    const struct db_stmt_slot *st = ctx;
    for (uint32_t i = 0; i < st->nbound; i++)
        db_render_bound(r, &st->params[i]);
    if (st->nbound < st->nparams)
        db_render_cut(r);
}

/* The string id of st's parameters, whole up to the cap (else cut: the
 * real length in *params_len), 0 when none are bound. */
static uint32_t db_stmt_params_id(const struct db_stmt_slot *st, uint64_t *params_len)
{
    if (!st->bound || !st->nparams)
        return 0;
    return db_intern_params(db_stmt_render, st, params_len);
}

/* The FETCH event of an unbuffered statement result (rows only: binary rows
 * are decoded into the app's buffers, their byte size is not known here). */
static void db_stmt_fetch_finish(struct tracer_thread *t, struct db_stmt_slot *st, unsigned error,
                                 uint64_t end)
{
    if (!st->fetch_pending)
        return;
    st->fetch_pending = 0;
    if (!t)
        return;
    struct db_conn_slot *c = st->mysql ? DB_CONN(st->mysql, 0) : NULL;
    struct db_fields d = {.op = TRACE_DB_FETCH,
                          .error = (int32_t)error,
                          .query_id = st->query_id,
                          .stmt_id = st->stmt_id,
                          .rows = st->fetch_rows};
    d.conn_id = db_conn_id_of(t, st->mysql, c);
    db_emit(t, &d, st->fetch_begin_ns ? st->fetch_begin_ns : end, end);
}

/* Tracing is off: an unbuffered result in progress will not be recorded. */
static void db_stmt_forget_fetch(struct db_stmt_slot *st)
{
    if (st)
        st->fetch_pending = 0;
}

TRACER_EXPORT int mysql_stmt_execute(MYSQL_STMT *s)
{
    /* not nested: the same test db_enter makes */
    struct db_stmt_slot *st = tracer_in_db_capi ? NULL : DB_STMT(s, 0);
    /* untraced: a fetch in progress is forgotten; traced: it ends here */
    DB_CALL_BEGIN(int, rc, tracer_real_mysql_stmt_execute()(s), db_stmt_forget_fetch(st),
                  if (st) db_stmt_fetch_finish(t, st, 0, tracer_ring_now()));
    struct db_fields d = {.op = TRACE_DB_EXECUTE};
    int has_result = tracer_real_mysql_stmt_field_count()(s) != 0;
    if (rc != 0)
        d.error = (int32_t)tracer_real_mysql_stmt_errno()(s);
    else if (!has_result)
        d.rows = tracer_real_mysql_stmt_affected_rows()(s);
    if (st) {
        d.stmt_id = st->stmt_id;
        d.query_id = st->query_id;
        d.cut.query_len = st->query_len;
        d.params_id = db_stmt_params_id(st, &d.cut.params_len);
        struct db_conn_slot *c = st->mysql ? DB_CONN(st->mysql, 1) : NULL;
        d.conn_id = db_conn_id_of(t, st->mysql, c);
        if (c) {
            c->last_query_id = st->query_id;
            c->last_stmt_id = st->stmt_id;
        }
        st->fetch_pending = rc == 0 && has_result;
        st->fetch_begin_ns = 0;
        st->fetch_rows = 0;
    }
    db_emit(t, &d, begin, end);
    DB_CALL_END(rc);
}

TRACER_EXPORT int mysql_stmt_store_result(MYSQL_STMT *s)
{
    struct db_stmt_slot *st = tracer_in_db_capi ? NULL : DB_STMT(s, 0);
    DB_CALL_BEGIN(int, rc, tracer_real_mysql_stmt_store_result()(s), db_stmt_forget_fetch(st),
                  (void)0);
    if (st && st->fetch_pending) {
        st->fetch_pending = 0; /* rows now come from memory */
        struct db_conn_slot *c = st->mysql ? DB_CONN(st->mysql, 0) : NULL;
        struct db_fields d = {
            .op = TRACE_DB_FETCH, .query_id = st->query_id, .stmt_id = st->stmt_id};
        d.conn_id = db_conn_id_of(t, st->mysql, c);
        if (rc != 0)
            d.error = (int32_t)tracer_real_mysql_stmt_errno()(s);
        else
            d.rows = tracer_real_mysql_stmt_num_rows()(s);
        db_emit(t, &d, begin, end);
    }
    DB_CALL_END(rc);
}

TRACER_EXPORT int mysql_stmt_fetch(MYSQL_STMT *s)
{
    if (tracer_in_db_capi)
        return tracer_real_mysql_stmt_fetch()(s);
    struct db_stmt_slot *st = DB_STMT(s, 0);
    if (!st || !st->fetch_pending)
        return tracer_real_mysql_stmt_fetch()(s);
    int nested;
    struct tracer_thread *t = db_enter(&nested);
    uint64_t begin = tracer_ring_now();
    if (!st->fetch_begin_ns)
        st->fetch_begin_ns = begin;
    int rc = tracer_real_mysql_stmt_fetch()(s);
    int err = errno;
    if (rc == 0 || rc == DB_MYSQL_DATA_TRUNCATED)
        st->fetch_rows++;
    else
        db_stmt_fetch_finish(t, st, rc == DB_MYSQL_NO_DATA ? 0 : tracer_real_mysql_stmt_errno()(s),
                             tracer_ring_now());
    db_leave();
    errno = err;
    return rc;
}

TRACER_EXPORT db_my_bool mysql_stmt_free_result(MYSQL_STMT *s)
{
    struct db_stmt_slot *st = tracer_in_db_capi ? NULL : DB_STMT(s, 0);
    if (!st || !st->fetch_pending)
        return tracer_real_mysql_stmt_free_result()(s);
    int nested;
    struct tracer_thread *t = db_enter(&nested);
    db_my_bool rc = tracer_real_mysql_stmt_free_result()(s);
    int err = errno;
    db_stmt_fetch_finish(t, st, 0, tracer_ring_now());
    db_leave();
    errno = err;
    return rc;
}

TRACER_EXPORT db_my_bool mysql_stmt_close(MYSQL_STMT *s)
{
    struct db_stmt_slot *st = tracer_in_db_capi ? NULL : DB_STMT(s, 0);
    int nested;
    struct tracer_thread *t = db_enter(&nested);
    db_my_bool rc = tracer_real_mysql_stmt_close()(s);
    int err = errno;
    if (st) {
        db_stmt_fetch_finish(t, st, 0, tracer_ring_now());
        db_table_release(st);
    }
    db_leave();
    errno = err;
    return rc;
}
