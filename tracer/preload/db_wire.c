/* db_wire.c - DB events for clients that speak the MySQL protocol
 * themselves (pymysql, PHP mysqlnd, Java's Connector/J, the statically
 * linked `mariadb` client): parses the packets a process exchanges with a DB
 * endpoint (a server that greeted like MySQL/MariaDB, db_greeting.c; or a
 * peer port in --db-port, default 3306, or an AF_UNIX path ending in
 * --db-socket, default mysqld.sock: io_events.c). Parameters are rendered with the
 * renderer both DB capture paths share (db_common.c).
 *
 * Packets are [3-byte length][sequence][payload]. A command starts an
 * exchange with sequence 0; its first byte names it. We record
 *   COM_QUERY         -> QUERY (text), COM_STMT_PREPARE -> PREPARE (text,
 *   stmt_id = the server's statement id), COM_STMT_EXECUTE -> EXECUTE
 *   (stmt_id, the prepared text, parameters decoded from the binary
 *   protocol), COM_QUIT -> CLOSE,
 * and follow the server's answer on the same connection: the command's event
 * is written when the answer's first packet arrives (duration = from the
 * send to that receive, error code from an ERR packet, affected rows from an
 * OK packet), and a FETCH event when a result set ends (rows, bytes = the
 * row packets' payload bytes). Framing is by length only. Commands sent
 * before the answers to earlier ones (pipelining: Connector/J's batches,
 * execute_direct) wait in a queue per connection and take the answers in
 * order; a command is parsed before its send goes out, so an answer read by
 * another thread finds it (tracer_db_wire_before_send).
 *
 * TLS: when the client's handshake asks for it, the parser stops reading
 * the socket's (encrypted) bytes and reads the plaintext OpenSSL's
 * SSL_write/SSL_read pass (interpose_tls.c); a client whose TLS is not
 * OpenSSL through its shared library leaves only NET events.
 * Limits: compressed connections are opaque after the handshake
 * (only their NET events remain); CLIENT_DEPRECATE_EOF and MariaDB's
 * metadata caching are taken from the client's handshake response (the
 * server offered them or the client would not ask); a command whose answer
 * never arrives (connection dropped) is recorded without it when the
 * descriptor gets a new connection, or not at all; descriptors >=
 * DB_WIRE_FDS get send-time events without answer data. Never called while
 * a C API wrapper runs (tracer_in_db_capi), so a query is never recorded
 * twice. */
#include "db_wire.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "db_common.h"
#include "io_events.h"
#include "pg_greeting.h"
#include "pg_wire.h"

__thread int tracer_in_db_capi __attribute__((tls_model("initial-exec")));

enum {
    MYSQL_COM_QUIT = 0x01,
    MYSQL_COM_QUERY = 0x03,
    MYSQL_COM_STMT_PREPARE = 0x16,
    MYSQL_COM_STMT_EXECUTE = 0x17,
    MYSQL_COM_STMT_SEND_LONG_DATA = 0x18,
    MYSQL_COM_STMT_CLOSE = 0x19,
    MYSQL_COM_FIELD_LIST = 0x04,
    MYSQL_COM_PROCESS_INFO = 0x0a,
    MYSQL_COM_CHANGE_USER = 0x11,
    MYSQL_COM_BINLOG_DUMP = 0x12,
    MYSQL_COM_TABLE_DUMP = 0x13,
    MYSQL_COM_STMT_FETCH = 0x1c,
    MYSQL_COM_BINLOG_DUMP_GTID = 0x1e,
    MYSQL_COM_STMT_BULK_EXECUTE = 0xfa, /* MariaDB */
};

#define CLIENT_MYSQL 0x1u /* set by MySQL clients; MariaDB's ext caps live elsewhere then */
#define CLIENT_COMPRESS 0x20u
#define CLIENT_PROTOCOL_41 0x200u
#define CLIENT_SSL 0x800u
#define CLIENT_DEPRECATE_EOF (1u << 24)
#define MARIADB_CLIENT_CACHE_METADATA (1u << 4) /* in the extended capabilities */
#define SERVER_MORE_RESULTS_EXIST 0x0008u
/* an EXECUTE opened a cursor: no rows now, STMT_FETCH brings them */
#define SERVER_STATUS_CURSOR_EXISTS 0x0040u

/* A command payload up to this long that one send brings whole is parsed
 * from a per-thread copy; a longer one, or one spread over several sends
 * or packets, is gathered in the connection's mapping (db_wire_gather). */
#define DB_WIRE_INLINE_MAX 8192
#define DB_WIRE_PKT_MAX 0xffffffu /* a packet this long is continued by the next */
/* A gathering mapping that held more than this is given back after its
 * command (the next big one maps again), so a connection that once sent a
 * big statement does not keep its pages. */
#define DB_WIRE_GATHER_KEEP (32u * 1024u)
#define DB_WIRE_FDS 1024
#define DB_WIRE_STMTS 16
#define DB_WIRE_QUEUE 128 /* pipelined commands followed per connection */
#define DB_WIRE_LAST_PREPARED 0xffffffffu
#define DB_WIRE_TYPES_KEPT 32
#define DB_WIRE_PEEK 40 /* first payload bytes of a received packet we look at */

enum db_wire_state {
    DB_WIRE_IDLE = 0,
    DB_WIRE_FIRST,     /* waiting for the answer's first packet */
    DB_WIRE_SKIP_DEFS, /* prepare answer: parameter and column definitions */
    DB_WIRE_COLDEFS,   /* result set: column definitions */
    DB_WIRE_ROWS,      /* result set: rows until EOF / final OK */
    DB_WIRE_AUTH,      /* change_user: until OK or ERR */
    DB_WIRE_FIELDS,    /* field_list: until EOF or ERR */
};

/* A statement prepared on this connection (server id -> text, types). */
struct db_wire_stmt {
    uint32_t server_id;
    uint32_t query_id;
    uint64_t query_len; /* the text's real length when it was cut, else 0 */
    uint32_t used;      /* LRU clock */
    uint16_t nparams;
    uint8_t have_types;
    uint8_t types[2 * DB_WIRE_TYPES_KEPT]; /* type, flags (0x80 = unsigned) */
};

/* What the answer to a command looks like, so the parser knows where it
 * ends (and the next command's answer begins) without recording it. */
enum db_wire_answer {
    DB_WIRE_ANSWER_RESULT = 0, /* OK, ERR, a result set, or LOCAL INFILE */
    DB_WIRE_ANSWER_PREPARE,    /* OK with definitions, or ERR */
    DB_WIRE_ANSWER_ONE,        /* one packet (ping, init_db, statistics, ...) */
    DB_WIRE_ANSWER_AUTH,       /* change_user: auth switches until OK or ERR */
    DB_WIRE_ANSWER_FIELDS,     /* field_list: definitions until EOF or ERR */
    DB_WIRE_ANSWER_ROWS,       /* stmt_fetch: binary rows until EOF or ERR */
};

/* A command the client sent, from its send until its answer ends. */
struct db_wire_cmd {
    uint64_t stmt_id, begin_ns, cmd_bytes;
    uint32_t query_id, prep_query_id, params_id;
    uint32_t tid;   /* the thread that sent it: its events are that thread's */
    uint8_t op;     /* TRACE_DB_*, or 0: a command we do not record */
    uint8_t answer; /* enum db_wire_answer */
    struct db_cut cut;
};

/* A command gathered across sends and packets (a statement longer than
 * one send brings, or than DB_WIRE_INLINE_MAX): its payload, up to the cap
 * and a little more (the real length is counted on), in an anonymous
 * mapping of the connection made at the first such command. */
struct db_wire_gather {
    unsigned char *buf; /* NULL, or a mapping of `mapped` bytes */
    size_t mapped, have;
    uint64_t total; /* payload bytes of the command so far */
    uint64_t begin_ns;
    uint8_t active;  /* a command is being gathered */
    uint8_t in_pkt;  /* ... and the current packet's rest comes in later sends */
    uint8_t pkt_max; /* ... whose length is DB_WIRE_PKT_MAX: another packet follows */
};

/* What we follow of one DB connection (indexed by descriptor). */
struct db_wire_conn {
    uint64_t conn_id; /* entry valid for this connection only */
    uint32_t client_caps, ext_caps;
    int caps_known, opaque;
    /* the client asked for TLS: its packets travel encrypted from the
     * handshake on, and the parser reads the plaintext the SSL_read and
     * SSL_write wrappers hand over (interpose_tls.c) */
    int tls;
    /* receive framing */
    uint8_t hdr[4];
    uint32_t hdr_have;
    uint32_t pkt_len, pkt_left, peek_have, pkt_seen;
    uint8_t peek[DB_WIRE_PEEK];
    /* the command whose answer is awaited or being read */
    struct db_wire_cmd cmd;
    uint8_t state;
    int in_result;
    int any_seq; /* the answer goes on after a LOCAL INFILE exchange */
    uint64_t defs_left, rows, bytes, fetch_begin_ns;
    /* commands sent after it, before its answer ended (pipelining: the
     * server answers them in order) */
    struct db_wire_cmd queue[DB_WIRE_QUEUE];
    uint32_t queue_head, queue_len;
    /* the statement last sent to be prepared, for an EXECUTE of statement
     * id 0xffffffff ("the last one prepared", sent before its answer) */
    uint32_t last_prep_query_id;
    uint64_t last_prep_query_len;
    uint16_t last_prep_nparams;
    uint32_t last_prep_server_id;
    uint32_t prep_sent, prep_answered; /* PREPAREs sent and answered */
    struct db_wire_stmt stmts[DB_WIRE_STMTS];
    uint32_t lru;
    struct db_wire_gather g; /* unmapped before the entry is cleared */
};
static struct db_wire_conn db_wire_conns[DB_WIRE_FDS];
/* The tid of the thread parsing each connection, 0 = none: one thread may
 * send on a connection while another reads its answers (Connector/J: the
 * calling thread sends a batch, a driver thread reads the answers), and the
 * queue and the answer's state are one. Kept apart from db_wire_conns,
 * which a new connection clears. */
static _Atomic uint32_t db_wire_owner[DB_WIRE_FDS];

static uint64_t db_wire_le(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* Length-encoded integer at p (have bytes). Returns bytes used, 0 if short. */
static size_t db_wire_lenenc(const unsigned char *p, size_t have, uint64_t *v)
{
    if (!have)
        return 0;
    if (p[0] < 0xfb) {
        *v = p[0];
        return 1;
    }
    int n = p[0] == 0xfc ? 2 : p[0] == 0xfd ? 3 : p[0] == 0xfe ? 8 : 0;
    if (!n || have < (size_t)n + 1)
        return 0;
    *v = db_wire_le(p + 1, n);
    return (size_t)n + 1;
}

/* Writes a DB event of the thread `tid` that sent the command. When
 * another thread read the answer (t: Connector/J's batches), the event is
 * written in t's records but is the sender's: it carries none of t's CPU,
 * and t's next record still does. */
void tracer_db_wire_event(struct tracer_thread *t, uint32_t tid, uint8_t dialect, uint64_t conn_id,
                          uint8_t op, int32_t error, uint32_t query_id, uint32_t params_id,
                          uint64_t stmt_id, uint64_t rows, uint64_t bytes, uint64_t begin,
                          uint64_t end, const struct db_cut *cut)
{
    int other = tid && tid != t->tid;
    uint64_t pending_cpu = t->pending_cpu;
    uint32_t recorded = t->recorded;
    if (other)
        t->pending_cpu = 0;
    struct trace_event *ev = tracer_event_new(t, TRACE_EV_DB, op, begin, end);
    if (!ev) {
        if (other)
            t->pending_cpu = pending_cpu;
        return;
    }
    if (other)
        ev->tid = tid;
    ev->u.db.source = TRACE_DB_WIRE;
    ev->u.db.dialect = dialect;
    ev->u.db.error = error;
    ev->u.db.db_conn_id = conn_id;
    ev->u.db.query_id = query_id;
    ev->u.db.params_id = params_id;
    ev->u.db.stmt_id = stmt_id;
    ev->u.db.rows = rows;
    ev->u.db.bytes = bytes;
    if (error)
        ev->flags |= TRACE_F_ERROR;
    db_cut_apply(ev, cut);
    tracer_commit(t);
    if (other) {
        t->pending_cpu = pending_cpu;
        t->recorded = recorded;
    }
}

static void db_wire_event(struct tracer_thread *t, uint32_t tid, uint64_t conn_id, uint8_t op,
                          int32_t error, uint32_t query_id, uint32_t params_id, uint64_t stmt_id,
                          uint64_t rows, uint64_t bytes, uint64_t begin, uint64_t end,
                          const struct db_cut *cut)
{
    tracer_db_wire_event(t, tid, TRACE_DB_MYSQL, conn_id, op, error, query_id, params_id, stmt_id,
                         rows, bytes, begin, end, cut);
}

/* Makes `cmd` the command whose answer comes next. */
static void db_wire_start(struct db_wire_conn *c, const struct db_wire_cmd *cmd)
{
    c->cmd = *cmd;
    c->state = DB_WIRE_FIRST;
    c->in_result = 0;
    c->any_seq = 0;
    c->rows = c->bytes = 0;
}

/* The current command's answer ended: the oldest pipelined command's
 * answer comes next, if there is one. */
static void db_wire_next(struct db_wire_conn *c)
{
    c->cmd.op = 0;
    c->state = DB_WIRE_IDLE;
    c->in_result = 0;
    if (c->queue_len) {
        db_wire_start(c, &c->queue[c->queue_head]);
        c->queue_head = (c->queue_head + 1) % DB_WIRE_QUEUE;
        c->queue_len--;
    }
}

/* Writes the current command's event with what is known (its answer not
 * seen, or cut short) and moves on to the next command. */
static void db_wire_flush_pending(struct tracer_thread *t, struct db_wire_conn *c, uint64_t end)
{
    if (c->cmd.op && c->state == DB_WIRE_FIRST && !c->in_result)
        db_wire_event(t, c->cmd.tid, c->conn_id, c->cmd.op, 0,
                      c->cmd.op == TRACE_DB_PREPARE ? c->cmd.prep_query_id : c->cmd.query_id,
                      c->cmd.params_id, c->cmd.stmt_id, 0, c->cmd.cmd_bytes, c->cmd.begin_ns, end,
                      &c->cmd.cut);
    else if (c->cmd.op && c->in_result)
        db_wire_event(t, c->cmd.tid, c->conn_id, TRACE_DB_FETCH, 0, c->cmd.query_id, 0,
                      c->cmd.stmt_id, c->rows, c->bytes, c->fetch_begin_ns, end, NULL);
    db_wire_next(c);
}

static void db_wire_gather_drop(struct db_wire_conn *c);

/* Takes the parser's state for the connection on descriptor f (NULL beyond
 * DB_WIRE_FDS, or when this thread already holds it: a signal handler's DB
 * I/O inside our own parsing, which cannot wait for itself and is not
 * parsed). Release with db_wire_release. A new connection on a reused
 * descriptor first writes what the old one still owed (commands whose
 * answers never came). */
static struct db_wire_conn *db_wire_acquire(struct tracer_thread *t, struct tracer_fd *f)
{
    struct tracer_fd *base = tracer_fd_get(0);
    if (!base || f < base || f - base >= DB_WIRE_FDS)
        return NULL;
    size_t i = (size_t)(f - base);
    if (db_fd_slot_lock(&db_wire_owner[i], t))
        return NULL;
    struct db_wire_conn *c = &db_wire_conns[i];
    if (c->conn_id != f->conn_id) {
        while (c->state != DB_WIRE_IDLE)
            db_wire_flush_pending(t, c, c->cmd.begin_ns);
        db_wire_gather_drop(c);
        memset(c, 0, sizeof *c);
        c->conn_id = f->conn_id;
    }
    return c;
}

static void db_wire_release(struct db_wire_conn *c)
{
    if (c)
        atomic_store_explicit(&db_wire_owner[c - db_wire_conns], 0, memory_order_release);
}

void tracer_db_wire_after_fork(void)
{
    tracer_pg_wire_after_fork();
    /* a parent thread that was parsing a connection at the fork does not
     * exist here: its hold must not make this process wait forever */
    for (size_t i = 0; i < DB_WIRE_FDS; i++)
        atomic_store_explicit(&db_wire_owner[i], 0, memory_order_relaxed);
}

static struct db_wire_stmt *db_wire_stmt_find(struct db_wire_conn *c, uint32_t server_id)
{
    for (int i = 0; i < DB_WIRE_STMTS; i++)
        if (c->stmts[i].server_id == server_id && c->stmts[i].used) {
            c->stmts[i].used = ++c->lru;
            return &c->stmts[i];
        }
    return NULL;
}

static struct db_wire_stmt *db_wire_stmt_add(struct db_wire_conn *c, uint32_t server_id)
{
    struct db_wire_stmt *s = &c->stmts[0];
    for (int i = 1; i < DB_WIRE_STMTS; i++)
        if (c->stmts[i].used < s->used)
            s = &c->stmts[i];
    memset(s, 0, sizeof *s);
    s->server_id = server_id;
    s->used = ++c->lru;
    return s;
}

/* The parameters of a COM_STMT_EXECUTE payload, for db_intern_params:
 * the statement, the payload (p[0] is the command, `have` bytes of it),
 * where the values start and the NULL bitmap. */
struct db_wire_params {
    const struct db_wire_stmt *s;
    const unsigned char *p, *nulls;
    size_t have, pos;
};

/* Renders the values of an EXECUTE from the binary protocol (a
 * db_render_fn): a value beyond the bytes kept cuts the list. */
static void db_wire_render_params(struct db_render *r, const void *ctx)
{
    const struct db_wire_params *x = ctx;
    const struct db_wire_stmt *s = x->s;
    const unsigned char *p = x->p;
    size_t have = x->have, pos = x->pos;
    unsigned i = 0;
    for (; i < s->nparams; i++) {
        if (i >= DB_WIRE_TYPES_KEPT) {
            db_render_cut(r);
            return;
        }
        if (x->nulls[i / 8] & (1u << (i % 8))) {
            db_render_null(r);
            continue;
        }
        unsigned type = s->types[2 * i];
        int is_unsigned = (s->types[2 * i + 1] & 0x80) != 0;
        size_t w = 0;
        switch (type) {
        case DB_TYPE_TINY:
            w = 1;
            break;
        case DB_TYPE_SHORT:
        case DB_TYPE_YEAR:
            w = 2;
            break;
        case DB_TYPE_LONG:
        case DB_TYPE_INT24:
        case DB_TYPE_FLOAT:
            w = 4;
            break;
        case DB_TYPE_LONGLONG:
        case DB_TYPE_DOUBLE:
            w = 8;
            break;
        default:
            w = 0;
        }
        if (type == DB_TYPE_NULL) {
            db_render_null(r);
            continue;
        }
        if (w) {
            if (have < pos + w)
                break;
            uint64_t v = db_wire_le(p + pos, (int)w);
            pos += w;
            if (type == DB_TYPE_FLOAT) {
                float f;
                uint32_t u = (uint32_t)v;
                memcpy(&f, &u, 4);
                db_render_double(r, f, 1);
            } else if (type == DB_TYPE_DOUBLE) {
                double d;
                memcpy(&d, &v, 8);
                db_render_double(r, d, 0);
            } else if (is_unsigned) {
                db_render_uint(r, v);
            } else {
                int shift = 64 - 8 * (int)w;
                db_render_int(r, (int64_t)(v << shift) >> shift);
            }
            continue;
        }
        if (type == DB_TYPE_DATE || type == DB_TYPE_DATETIME || type == DB_TYPE_TIMESTAMP ||
            type == DB_TYPE_TIME) {
            if (have < pos + 1)
                break;
            size_t len = p[pos++];
            if (have < pos + len)
                break;
            const unsigned char *d = p + pos;
            pos += len;
            if (type == DB_TYPE_TIME) {
                unsigned long days = len >= 8 ? (unsigned long)db_wire_le(d + 1, 4) : 0;
                db_render_temporal(r, type, 0, 0, 0, (unsigned)(days * 24 + (len >= 8 ? d[5] : 0)),
                                   len >= 8 ? d[6] : 0, len >= 8 ? d[7] : 0,
                                   len >= 12 ? (unsigned long)db_wire_le(d + 8, 4) : 0,
                                   len >= 1 && d[0]);
            } else {
                db_render_temporal(r, type == DB_TYPE_DATE ? DB_TYPE_DATE : DB_TYPE_DATETIME,
                                   len >= 4 ? (unsigned)db_wire_le(d, 2) : 0, len >= 4 ? d[2] : 0,
                                   len >= 4 ? d[3] : 0, len >= 7 ? d[4] : 0, len >= 7 ? d[5] : 0,
                                   len >= 7 ? d[6] : 0,
                                   len >= 11 ? (unsigned long)db_wire_le(d + 7, 4) : 0, 0);
            }
            continue;
        }
        /* strings, blobs, decimals, everything else: length-encoded bytes */
        uint64_t len;
        size_t used = db_wire_lenenc(p + pos, have - pos, &len);
        if (!used)
            break;
        pos += used;
        size_t avail = have - pos;
        size_t take = len < avail ? (size_t)len : avail;
        db_render_text(r, (const char *)p + pos, take,
                       type != DB_TYPE_DECIMAL && type != DB_TYPE_NEWDECIMAL);
        if (take < len)
            break;
        pos += take;
    }
    if (i < s->nparams)
        db_render_cut(r); /* the packet went on beyond the bytes we have */
}

/* Decodes the parameters of a COM_STMT_EXECUTE payload (p[0] is the
 * command) into a params string id (cut: the real length in *params_len). */
static uint32_t db_wire_exec_params(struct db_wire_stmt *s, const unsigned char *p, size_t have,
                                    uint64_t *params_len)
{
    unsigned n = s->nparams;
    if (!n)
        return 0;
    size_t pos = 10; /* command, statement id, flags, iteration count */
    size_t nullmap = (n + 7) / 8;
    if (have < pos + nullmap + 1)
        return 0;
    const unsigned char *nulls = p + pos;
    pos += nullmap;
    int bound = p[pos++];
    if (bound) {
        if (have < pos + 2 * (size_t)n)
            return 0;
        size_t keep = n < DB_WIRE_TYPES_KEPT ? n : DB_WIRE_TYPES_KEPT;
        memcpy(s->types, p + pos, 2 * keep);
        s->have_types = 1;
        pos += 2 * (size_t)n;
    }
    if (!s->have_types)
        return 0;
    struct db_wire_params x = {.s = s, .p = p, .nulls = nulls, .have = have, .pos = pos};
    return db_intern_params(db_wire_render_params, &x, params_len);
}

/* Placeholders (?) in a statement's text outside quotes and comments: the
 * parameter count of a statement whose PREPARE answer has not come yet. */
static uint16_t db_wire_placeholders(const unsigned char *p, size_t n)
{
    unsigned count = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = p[i];
        if (ch == '\'' || ch == '"' || ch == '`') {
            for (i++; i < n && p[i] != ch; i++)
                if (p[i] == '\\' && ch != '`')
                    i++;
        } else if (ch == '#' || (ch == '-' && i + 2 < n && p[i + 1] == '-' &&
                                 (p[i + 2] == ' ' || p[i + 2] == '\t' || p[i + 2] == '\n'))) {
            while (i < n && p[i] != '\n')
                i++;
        } else if (ch == '/' && i + 1 < n && p[i + 1] == '*') {
            for (i += 2; i + 1 < n && !(p[i] == '*' && p[i + 1] == '/'); i++)
                ;
            i++;
        } else if (ch == '?') {
            count++;
        }
    }
    return count > UINT16_MAX ? UINT16_MAX : (uint16_t)count;
}

/* The statement an EXECUTE names: a known server id, or "the last one
 * prepared" (MariaDB: id 0xffffffff, sent right behind its PREPARE, so
 * perhaps before the server gave it an id; then `scratch` describes it
 * from the PREPARE's text). NULL when unknown. */
static struct db_wire_stmt *db_wire_exec_stmt(struct db_wire_conn *c, uint32_t id,
                                              struct db_wire_stmt *scratch)
{
    if (id != DB_WIRE_LAST_PREPARED)
        return db_wire_stmt_find(c, id);
    if (!c->last_prep_query_id)
        return NULL;
    if (c->prep_answered == c->prep_sent) {
        struct db_wire_stmt *s = db_wire_stmt_find(c, c->last_prep_server_id);
        if (s)
            return s;
    }
    memset(scratch, 0, sizeof *scratch);
    scratch->query_id = c->last_prep_query_id;
    scratch->query_len = c->last_prep_query_len;
    scratch->nparams = c->last_prep_nparams;
    return scratch;
}

/* The statement a statement command (EXECUTE, BULK_EXECUTE, STMT_FETCH)
 * names by the id after its command byte: sets the command's stmt_id and
 * query_id and returns it (NULL: unknown, or the packet is cut short). */
static struct db_wire_stmt *db_wire_cmd_stmt(struct db_wire_conn *c, struct db_wire_cmd *nc,
                                             const unsigned char *p, size_t have,
                                             struct db_wire_stmt *scratch)
{
    if (have < 5)
        return NULL;
    nc->stmt_id = db_wire_le(p + 1, 4);
    struct db_wire_stmt *s = c ? db_wire_exec_stmt(c, (uint32_t)nc->stmt_id, scratch) : NULL;
    if (s) {
        nc->query_id = s->query_id;
        nc->cut.query_len = s->query_len;
    }
    return s;
}

/* A command packet (sequence 0) the client sent: p holds `have` bytes of its
 * `pkt_len`-byte payload (of all its packets, when gathered). It is
 * followed until its answer ends; a command sent before the answers to
 * earlier ones (pipelining) waits in the connection's queue, as the server
 * answers in order. A text or parameters longer than what p holds, or than
 * the cap, are recorded cut, with their real length. */
static void db_wire_command(struct tracer_thread *t, struct tracer_fd *f, struct db_wire_conn *c,
                            const unsigned char *p, size_t have, uint64_t pkt_len, uint64_t begin,
                            uint64_t end)
{
    if (have < 1)
        return;
    uint8_t cmd = p[0];
    if (cmd == MYSQL_COM_STMT_SEND_LONG_DATA || cmd == MYSQL_COM_STMT_CLOSE) {
        /* no answer follows */
        if (c && cmd == MYSQL_COM_STMT_CLOSE && have >= 5) {
            struct db_wire_stmt *s = db_wire_stmt_find(c, (uint32_t)db_wire_le(p + 1, 4));
            if (s)
                s->used = 0;
        }
        return;
    }
    struct db_wire_cmd nc = {.begin_ns = begin, .cmd_bytes = pkt_len, .tid = t->tid};
    switch (cmd) {
    case MYSQL_COM_QUERY:
    case MYSQL_COM_STMT_PREPARE: {
        size_t len = have - 1;
        /* the payload after the command byte is the SQL text itself */
        uint32_t text_id = db_intern_statement((const char *)p + 1, len, &nc.cut.query_len);
        /* the SQL text's length, as the C API path records it */
        nc.cmd_bytes = pkt_len - 1;
        if (len < nc.cmd_bytes || nc.cut.query_len)
            nc.cut.query_len = nc.cmd_bytes; /* cut: the real length */
        if (cmd == MYSQL_COM_QUERY) {
            nc.op = TRACE_DB_QUERY;
            nc.query_id = text_id;
            break;
        }
        nc.op = TRACE_DB_PREPARE;
        nc.answer = DB_WIRE_ANSWER_PREPARE;
        nc.prep_query_id = text_id;
        if (c) {
            c->last_prep_query_id = text_id;
            c->last_prep_query_len = nc.cut.query_len;
            c->last_prep_nparams = db_wire_placeholders(p + 1, len);
            c->prep_sent++;
        }
        break;
    }
    case MYSQL_COM_STMT_EXECUTE:
    case MYSQL_COM_STMT_BULK_EXECUTE: { /* recorded without its rows of parameters */
        nc.op = TRACE_DB_EXECUTE;
        struct db_wire_stmt scratch;
        struct db_wire_stmt *s = db_wire_cmd_stmt(c, &nc, p, have, &scratch);
        if (s && cmd == MYSQL_COM_STMT_EXECUTE)
            nc.params_id = db_wire_exec_params(s, p, have, &nc.cut.params_len);
        break;
    }
    case MYSQL_COM_QUIT:
        db_wire_event(t, t->tid, f->conn_id, TRACE_DB_CLOSE, 0, 0, 0, 0, 0, pkt_len, begin, end,
                      NULL);
        return;
    /* commands we do not record: follow their answers to stay in step */
    case MYSQL_COM_PROCESS_INFO:
        break;
    case MYSQL_COM_FIELD_LIST:
        nc.answer = DB_WIRE_ANSWER_FIELDS;
        break;
    case MYSQL_COM_CHANGE_USER:
        nc.answer = DB_WIRE_ANSWER_AUTH;
        break;
    case MYSQL_COM_STMT_FETCH: {
        /* a cursor's next rows (binary rows up to an EOF): a FETCH event of
         * its statement, as the rows of a result set give */
        nc.op = TRACE_DB_FETCH;
        nc.answer = DB_WIRE_ANSWER_ROWS;
        struct db_wire_stmt scratch;
        (void)db_wire_cmd_stmt(c, &nc, p, have, &scratch);
        break;
    }
    case MYSQL_COM_BINLOG_DUMP:
    case MYSQL_COM_TABLE_DUMP:
    case MYSQL_COM_BINLOG_DUMP_GTID:
        /* a replication stream, not an application's queries */
        if (c)
            c->opaque = 1;
        return;
    default: /* ping, init_db, statistics, reset, ...: one packet answers */
        nc.answer = DB_WIRE_ANSWER_ONE;
    }
    if (!c || c->opaque) {
        if (nc.op)
            db_wire_event(t, t->tid, f->conn_id, nc.op, 0,
                          nc.op == TRACE_DB_PREPARE ? nc.prep_query_id : nc.query_id, nc.params_id,
                          nc.stmt_id, 0, nc.cmd_bytes, begin, end, &nc.cut);
        return;
    }
    if (c->state == DB_WIRE_IDLE) {
        db_wire_start(c, &nc);
    } else if ((c->state == DB_WIRE_FIRST && !c->in_result) || c->queue_len) {
        /* pipelined: no answer read yet, so this one's comes after them */
        if (c->queue_len == DB_WIRE_QUEUE)
            db_wire_flush_pending(t, c, begin); /* the oldest waits no longer */
        c->queue[(c->queue_head + c->queue_len) % DB_WIRE_QUEUE] = nc;
        c->queue_len++;
    } else {
        /* sent in the middle of an answer the client already reads: the
         * parser lost step with this connection; the new command resets it */
        db_wire_flush_pending(t, c, begin);
        db_wire_start(c, &nc);
    }
}

/* A packet sent with sequence != 0: the handshake response tells the
 * capabilities the rest of the conversation uses. */
static void db_wire_client_packet(struct db_wire_conn *c, const unsigned char *p, size_t have,
                                  uint8_t seq)
{
    if (!c || c->caps_known || seq != 1 || have < 4)
        return;
    c->caps_known = 1;
    c->client_caps = (uint32_t)db_wire_le(p, 4);
    if (!(c->client_caps & CLIENT_MYSQL) && have >= 32)
        c->ext_caps = (uint32_t)db_wire_le(p + 28, 4);
    if (c->client_caps & CLIENT_COMPRESS)
        c->opaque = 1;
    else if (c->client_caps & CLIENT_SSL)
        c->tls = 1;
}

/* Is this call's view of the connection the one the parser reads? Before a
 * TLS handshake the bytes on the socket; after it, the plaintext only. */
static int db_wire_view(const struct db_wire_conn *c, int tls_plaintext)
{
    if (c && c->opaque)
        return 0;
    return tls_plaintext ? c && c->tls : !(c && c->tls);
}

/* The byte at the cursor (there is one: the caller knows bytes are left). */
static unsigned db_wire_peek_byte(const struct db_iov_cursor *cur)
{
    int vi = cur->vi;
    size_t voff = cur->voff;
    while (vi < cur->iovcnt && voff == cur->iov[vi].iov_len) {
        vi++;
        voff = 0;
    }
    return vi < cur->iovcnt ? ((const unsigned char *)cur->iov[vi].iov_base)[voff] : 0;
}

/* Gives back the connection's gathering mapping. */
static void db_wire_gather_drop(struct db_wire_conn *c)
{
    if (c->g.buf)
        syscall(SYS_munmap, c->g.buf, c->g.mapped);
    memset(&c->g, 0, sizeof c->g);
}

/* Starts gathering a command on c, mapping room for the cap (and the few
 * bytes before an EXECUTE's values) when c has no mapping. -1: none could
 * be made (the command is parsed from what one send brings, and cut). */
static int db_wire_gather_start(struct db_wire_conn *c, uint64_t begin_ns)
{
    size_t want = db_statement_cap() + 16;
    if (c->g.buf && c->g.mapped != want)
        db_wire_gather_drop(c);
    if (!c->g.buf) {
        void *m = (void *)syscall(SYS_mmap, NULL, want, PROT_READ | PROT_WRITE,
                                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            return -1;
        c->g.buf = m;
        c->g.mapped = want;
    }
    c->g.have = 0;
    c->g.total = 0;
    c->g.begin_ns = begin_ns;
    c->g.active = 1;
    return 0;
}

/* The gathered command is whole (or another began): parsed now. */
static void db_wire_gather_end(struct tracer_thread *t, struct tracer_fd *f, struct db_wire_conn *c,
                               uint64_t end_ns)
{
    c->g.active = 0;
    c->g.in_pkt = 0;
    db_wire_command(t, f, c, c->g.buf, c->g.have, c->g.total, c->g.begin_ns, end_ns);
    if (c->g.have > DB_WIRE_GATHER_KEEP)
        db_wire_gather_drop(c);
}

/* Adds what this send brings of the current packet (`take` of its `left`
 * bytes) to the gathered command; the packet's rest comes in later sends
 * (f->db_pkt_remaining). The command ends with its last packet: one
 * shorter than DB_WIRE_PKT_MAX. */
static void db_wire_gather_add(struct tracer_thread *t, struct tracer_fd *f, struct db_wire_conn *c,
                               struct db_iov_cursor *cur, size_t take, size_t left, uint64_t end_ns)
{
    c->g.have += db_iov_take(cur, take, c->g.buf + c->g.have, c->g.mapped - c->g.have);
    c->g.total += take;
    f->db_pkt_remaining = (uint32_t)(left - take);
    c->g.in_pkt = f->db_pkt_remaining != 0;
    if (!c->g.in_pkt && !c->g.pkt_max)
        db_wire_gather_end(t, f, c, end_ns);
}

/* Should the command packet at the cursor (`len` bytes of payload, `avail`
 * of them in this send) be gathered? A statement (QUERY, PREPARE, EXECUTE)
 * that this send does not bring whole, or that is longer than the inline
 * copy, is; so is a command whose first byte is not here yet. */
static int db_wire_gather_wanted(const struct db_iov_cursor *cur, uint32_t len, size_t avail)
{
    if (!avail)
        return len > 0;
    if (avail == len && len <= DB_WIRE_INLINE_MAX)
        return 0;
    unsigned cmd = db_wire_peek_byte(cur);
    return cmd == MYSQL_COM_QUERY || cmd == MYSQL_COM_STMT_PREPARE || cmd == MYSQL_COM_STMT_EXECUTE;
}

/* Skips what must not be parsed again or is the rest of a packet begun in
 * an earlier send (gathered, when a command is). Returns the bytes gone
 * past, 0 when nothing was to skip. */
static size_t db_wire_skip(struct tracer_thread *t, struct tracer_fd *f, struct db_wire_conn *c,
                           struct db_iov_cursor *cur, size_t left, uint64_t end_ns)
{
    if (f->db_skip) {
        /* bytes parsed for an earlier send that did not send them */
        size_t n = f->db_skip < left ? f->db_skip : left;
        f->db_skip -= (uint32_t)n;
        db_iov_take(cur, n, NULL, 0);
        return n;
    }
    if (!f->db_pkt_remaining)
        return 0;
    size_t n = f->db_pkt_remaining < left ? f->db_pkt_remaining : left;
    if (c && c->g.active && c->g.in_pkt) {
        db_wire_gather_add(t, f, c, cur, n, f->db_pkt_remaining, end_ns);
    } else {
        f->db_pkt_remaining -= (uint32_t)n;
        db_iov_take(cur, n, NULL, 0);
    }
    return n;
}

static void db_wire_sent(struct tracer_thread *t, struct tracer_fd *f, struct db_wire_conn *c,
                         const struct iovec *iov, int iovcnt, size_t nbytes, uint64_t begin_ns,
                         uint64_t end_ns, int tls_plaintext)
{
    if (!db_wire_view(c, tls_plaintext))
        return;
    /* Flatten at most what we need from the front of each packet. */
    static __thread unsigned char buf[DB_WIRE_INLINE_MAX + 16];
    struct db_iov_cursor cur = {.iov = iov, .iovcnt = iovcnt};
    size_t pos = 0; /* position in the logical stream of this send */
    while (pos < nbytes && cur.vi < iovcnt) {
        size_t skipped = db_wire_skip(t, f, c, &cur, nbytes - pos, end_ns);
        if (skipped) {
            pos += skipped;
            continue;
        }
        /* gather the 4-byte header (it may straddle sends) */
        while (f->db_hdr_have < 4 && pos < nbytes && cur.vi < iovcnt) {
            if (cur.voff == iov[cur.vi].iov_len) {
                cur.vi++;
                cur.voff = 0;
                continue;
            }
            f->db_hdr[f->db_hdr_have++] = ((const unsigned char *)iov[cur.vi].iov_base)[cur.voff++];
            pos++;
        }
        if (f->db_hdr_have < 4)
            return;
        f->db_hdr_have = 0;
        uint32_t len =
            (uint32_t)f->db_hdr[0] | (uint32_t)f->db_hdr[1] << 8 | (uint32_t)f->db_hdr[2] << 16;
        uint8_t seq = f->db_hdr[3];
        size_t avail = nbytes - pos;
        size_t take_total = len < avail ? len : avail;
        if (c && c->g.active) {
            if (c->g.pkt_max && seq != 0) { /* the next packet of a long command */
                c->g.pkt_max = len == DB_WIRE_PKT_MAX;
                db_wire_gather_add(t, f, c, &cur, take_total, len, end_ns);
                pos += take_total;
                continue;
            }
            db_wire_gather_end(t, f, c, begin_ns); /* its last packet never came */
        }
        if (seq == 0 && c && db_wire_gather_wanted(&cur, len, take_total) &&
            db_wire_gather_start(c, begin_ns) == 0) {
            c->g.pkt_max = len == DB_WIRE_PKT_MAX;
            db_wire_gather_add(t, f, c, &cur, take_total, len, end_ns);
            pos += take_total;
            if (c->opaque)
                return;
            continue;
        }
        /* copy the payload part present in this send */
        size_t want = len < DB_WIRE_INLINE_MAX + 8 ? len : DB_WIRE_INLINE_MAX + 8;
        size_t got = db_iov_take(&cur, take_total, buf, want);
        pos += take_total;
        f->db_pkt_remaining = len - (uint32_t)take_total;
        if (seq == 0)
            db_wire_command(t, f, c, buf, got, len, begin_ns, end_ns);
        else
            db_wire_client_packet(c, buf, got, seq);
        if (c && c->opaque)
            return;
        if (c && c->tls && !tls_plaintext) {
            f->db_pkt_remaining = 0; /* what follows the TLS request is TLS */
            return;
        }
    }
}

/* The end of a result set (EOF or final OK): FETCH event, or the next
 * result of a multi-result answer. `status` = server status flags. */
static void db_wire_result_end(struct tracer_thread *t, struct db_wire_conn *c, unsigned status,
                               int32_t error, uint64_t end)
{
    if (status & SERVER_MORE_RESULTS_EXIST) {
        c->state = DB_WIRE_FIRST; /* another result header follows */
        return;
    }
    /* An EXECUTE that opened a cursor ends at its column definitions: its
     * rows are STMT_FETCH's, each a FETCH event of its own. */
    if ((status & SERVER_STATUS_CURSOR_EXISTS) && c->cmd.op == TRACE_DB_EXECUTE && !c->rows) {
        db_wire_next(c);
        return;
    }
    if (c->cmd.op)
        db_wire_event(t, c->cmd.tid, c->conn_id, TRACE_DB_FETCH, error, c->cmd.query_id, 0,
                      c->cmd.stmt_id, c->rows, c->bytes, c->fetch_begin_ns, end, NULL);
    db_wire_next(c);
}

/* Server status flags of an OK packet (p[0] = 0x00 or 0xfe), 0 if cut. */
static unsigned db_wire_ok_status(const unsigned char *p, size_t have, uint64_t *affected)
{
    uint64_t ins;
    size_t used = db_wire_lenenc(p + 1, have - 1, affected);
    size_t used2 = used ? db_wire_lenenc(p + 1 + used, have - 1 - used, &ins) : 0;
    return used2 && have >= 1 + used + used2 + 2 ? (unsigned)db_wire_le(p + 1 + used + used2, 2)
                                                 : 0;
}

/* A packet of a result set's rows, or the EOF/OK/ERR that ends them. */
static void db_wire_row_packet(struct tracer_thread *t, struct db_wire_conn *c, uint64_t end)
{
    const unsigned char *p = c->peek;
    size_t have = c->peek_have;
    int deprecate_eof = (c->client_caps & CLIENT_DEPRECATE_EOF) != 0;
    uint64_t affected = 0;
    if (have >= 1 && p[0] == 0xff)
        db_wire_result_end(t, c, 0, have >= 3 ? (int32_t)db_wire_le(p + 1, 2) : -1, end);
    else if (have >= 1 && p[0] == 0xfe && c->pkt_len < 9 && !deprecate_eof)
        db_wire_result_end(t, c, have >= 5 ? (unsigned)db_wire_le(p + 3, 2) : 0, 0, end);
    else if (have >= 1 && p[0] == 0xfe && deprecate_eof && c->pkt_len < 0xffffff)
        db_wire_result_end(t, c, db_wire_ok_status(p, have, &affected), 0, end);
    else {
        c->rows++;
        c->bytes += c->pkt_len;
    }
}

/* An answer we follow without recording it that ends at a packet whose
 * first byte is `last` or `err` (CHANGE_USER: OK or ERR after the
 * authentication exchange; FIELD_LIST: EOF or ERR after the definitions):
 * the next command's answer comes after this packet. */
static void db_wire_until(struct db_wire_conn *c, uint8_t last, uint8_t err)
{
    if (c->peek_have >= 1 && (c->peek[0] == last || c->peek[0] == err))
        db_wire_next(c);
}

static void db_wire_server_packet(struct tracer_thread *t, struct db_wire_conn *c, uint8_t seq,
                                  uint64_t end);

/* The commands whose answer is not read as an OK, ERR or result set
 * header (c->cmd.answer): 1 when c's command is one of them (its answer
 * is done, or followed in a state of its own from this packet on), 0 when
 * this packet is the first of an ordinary answer. */
static int db_wire_answer_own_state(struct tracer_thread *t, struct db_wire_conn *c, uint8_t seq,
                                    uint64_t end)
{
    switch (c->cmd.answer) {
    case DB_WIRE_ANSWER_ONE:
        db_wire_next(c);
        return 1;
    case DB_WIRE_ANSWER_AUTH:
        c->state = DB_WIRE_AUTH;
        break;
    case DB_WIRE_ANSWER_FIELDS:
        c->state = DB_WIRE_FIELDS;
        break;
    case DB_WIRE_ANSWER_ROWS: /* STMT_FETCH: timed from its send */
        c->in_result = 1;
        c->rows = c->bytes = 0;
        c->fetch_begin_ns = c->cmd.begin_ns;
        c->state = DB_WIRE_ROWS;
        break;
    default:
        return 0;
    }
    db_wire_server_packet(t, c, seq, end);
    return 1;
}

/* Reads the first packet of an answer: an ERR (*error), a PREPARE's OK
 * (the statement, and the definitions that follow), an OK (*rows
 * affected), a LOCAL INFILE request or a result set's header
 * (*result_set, and the definitions that follow). 1 when the packet
 * needs nothing more (a later result's end, the first of several results,
 * LOCAL INFILE), else 0: db_wire_first_done goes on. */
static int db_wire_first_read(struct tracer_thread *t, struct db_wire_conn *c, uint64_t end,
                              int32_t *error, uint64_t *rows, int *result_set)
{
    const unsigned char *p = c->peek;
    size_t have = c->peek_have;
    uint32_t len = c->pkt_len;
    int deprecate_eof = (c->client_caps & CLIENT_DEPRECATE_EOF) != 0;
    if (p[0] == 0xff) {
        *error = have >= 3 ? (int32_t)db_wire_le(p + 1, 2) : -1;
        if (c->cmd.op == TRACE_DB_PREPARE)
            c->last_prep_server_id = 0; /* no statement to execute */
    } else if (p[0] == 0x00 && c->cmd.op == TRACE_DB_PREPARE) {
        if (have >= 9) {
            uint32_t sid = (uint32_t)db_wire_le(p + 1, 4);
            uint16_t ncols = (uint16_t)db_wire_le(p + 5, 2);
            uint16_t nparams = (uint16_t)db_wire_le(p + 7, 2);
            struct db_wire_stmt *s = db_wire_stmt_add(c, sid);
            s->query_id = c->cmd.prep_query_id;
            s->query_len = c->cmd.cut.query_len;
            s->nparams = nparams;
            c->cmd.stmt_id = sid;
            c->last_prep_server_id = sid;
            c->defs_left =
                (uint64_t)ncols + nparams + (deprecate_eof ? 0 : (ncols != 0) + (nparams != 0));
        }
    } else if (p[0] == 0x00 || (p[0] == 0xfe && len < 0xffffff && c->in_result)) {
        unsigned status = db_wire_ok_status(p, have, rows);
        if (c->in_result) { /* a later result of a multi-result answer */
            db_wire_result_end(t, c, status, 0, end);
            return 1;
        }
        if (status & SERVER_MORE_RESULTS_EXIST) {
            /* first of several results: record the command now */
            db_wire_event(t, c->cmd.tid, c->conn_id, c->cmd.op, 0, c->cmd.query_id,
                          c->cmd.params_id, c->cmd.stmt_id, *rows, c->cmd.cmd_bytes,
                          c->cmd.begin_ns, end, &c->cmd.cut);
            c->in_result = 1;
            c->fetch_begin_ns = end;
            return 1;
        }
    } else if (p[0] == 0xfb) {
        /* LOCAL INFILE request: the client sends the file, then the
         * final OK/ERR comes, its sequence number past 1 */
        c->any_seq = 1;
        return 1;
    } else {
        uint64_t ncols = 0;
        size_t used = db_wire_lenenc(p, have, &ncols);
        *result_set = 1;
        int metadata = 1;
        if ((c->ext_caps & MARIADB_CLIENT_CACHE_METADATA) && used && have > used)
            metadata = p[used] != 0;
        c->defs_left = (metadata ? ncols : 0) + (deprecate_eof ? 0 : 1);
    }
    return 0;
}

/* After an answer's first packet was read (db_wire_first_read): the
 * command's event, and what the connection expects next. */
static void db_wire_first_done(struct tracer_thread *t, struct db_wire_conn *c, int32_t error,
                               uint64_t rows, int result_set, uint64_t end)
{
    if (c->in_result) { /* header of a later result: keep counting */
        if (error) {
            db_wire_result_end(t, c, 0, error, end);
            return;
        }
        c->state = c->defs_left ? DB_WIRE_COLDEFS : DB_WIRE_ROWS;
        return;
    }
    if (c->cmd.op) {
        uint32_t qid = c->cmd.op == TRACE_DB_PREPARE ? c->cmd.prep_query_id : c->cmd.query_id;
        db_wire_event(t, c->cmd.tid, c->conn_id, c->cmd.op, error, qid, c->cmd.params_id,
                      c->cmd.stmt_id, rows, c->cmd.cmd_bytes, c->cmd.begin_ns, end, &c->cmd.cut);
    }
    if (error || (!result_set && c->cmd.op != TRACE_DB_PREPARE)) {
        db_wire_next(c);
    } else if (c->cmd.op == TRACE_DB_PREPARE) {
        if (c->defs_left)
            c->state = DB_WIRE_SKIP_DEFS;
        else
            db_wire_next(c);
    } else {
        c->in_result = 1;
        c->fetch_begin_ns = end;
        c->rows = c->bytes = 0;
        c->state = c->defs_left ? DB_WIRE_COLDEFS : DB_WIRE_ROWS;
    }
}

/* The first packet of a command's answer (state FIRST). */
static void db_wire_first_packet(struct tracer_thread *t, struct db_wire_conn *c, uint8_t seq,
                                 uint64_t end)
{
    if (c->peek_have < 1)
        return;
    /* An answer begins with sequence 1. Before it, a client that sent
     * its first command right behind its handshake response sees the
     * rest of the handshake (the OK to its login, sequence 2 on). */
    if (!c->in_result && !c->any_seq && seq != 1)
        return;
    if (db_wire_answer_own_state(t, c, seq, end))
        return;
    if (c->cmd.op == TRACE_DB_EXECUTE && c->cmd.stmt_id == DB_WIRE_LAST_PREPARED &&
        c->prep_answered == c->prep_sent)
        c->cmd.stmt_id = c->last_prep_server_id; /* its PREPARE was answered first */
    int32_t error = 0;
    uint64_t rows = 0;
    int result_set = 0;
    if (c->cmd.op == TRACE_DB_PREPARE)
        c->prep_answered++;
    if (db_wire_first_read(t, c, end, &error, &rows, &result_set))
        return;
    db_wire_first_done(t, c, error, rows, result_set, end);
}

/* A column definition of a result set (state COLDEFS): after the last,
 * its rows; or, when a cursor holds them, the result's end. */
static void db_wire_coldef_packet(struct tracer_thread *t, struct db_wire_conn *c, uint64_t end)
{
    const unsigned char *p = c->peek;
    int deprecate_eof = (c->client_caps & CLIENT_DEPRECATE_EOF) != 0;
    if (c->defs_left)
        c->defs_left--;
    if (c->defs_left)
        return;
    /* the EOF after the definitions (without CLIENT_DEPRECATE_EOF) says
     * whether rows follow or a cursor holds them */
    if (!deprecate_eof && c->peek_have >= 5 && p[0] == 0xfe && c->pkt_len < 9 &&
        (db_wire_le(p + 3, 2) & SERVER_STATUS_CURSOR_EXISTS)) {
        db_wire_result_end(t, c, (unsigned)db_wire_le(p + 3, 2), 0, end);
        return;
    }
    c->state = DB_WIRE_ROWS;
}

/* One received packet of the answer: the first min(len, DB_WIRE_PEEK)
 * payload bytes are in c->peek, `seq` is its sequence number. */
static void db_wire_server_packet(struct tracer_thread *t, struct db_wire_conn *c, uint8_t seq,
                                  uint64_t end)
{
    switch (c->state) {
    case DB_WIRE_IDLE:
        return;
    case DB_WIRE_FIRST:
        db_wire_first_packet(t, c, seq, end);
        return;
    case DB_WIRE_SKIP_DEFS:
        if (c->defs_left)
            c->defs_left--;
        if (!c->defs_left)
            db_wire_next(c);
        return;
    case DB_WIRE_COLDEFS:
        db_wire_coldef_packet(t, c, end);
        return;
    case DB_WIRE_ROWS:
        db_wire_row_packet(t, c, end);
        return;
    case DB_WIRE_AUTH:
        db_wire_until(c, 0x00, 0xff);
        return;
    case DB_WIRE_FIELDS:
        db_wire_until(c, 0xfe, 0xff);
        return;
    }
}

static void db_wire_received(struct tracer_thread *t, struct db_wire_conn *c,
                             const struct iovec *iov, int iovcnt, size_t nbytes, uint64_t end_ns,
                             int tls_plaintext)
{
    if (!c || !db_wire_view(c, tls_plaintext))
        return;
    size_t left = nbytes;
    for (int vi = 0; vi < iovcnt && left; vi++) {
        const unsigned char *b = iov[vi].iov_base;
        size_t n = iov[vi].iov_len < left ? iov[vi].iov_len : left;
        left -= n;
        size_t i = 0;
        while (i < n) {
            if (c->hdr_have < 4) {
                c->hdr[c->hdr_have++] = b[i++];
                if (c->hdr_have == 4) {
                    c->pkt_len = (uint32_t)db_wire_le(c->hdr, 3);
                    c->pkt_left = c->pkt_len;
                    c->peek_have = 0;
                    c->pkt_seen = 0;
                }
                if (c->hdr_have < 4 || c->pkt_left)
                    continue;
            }
            size_t take = c->pkt_left < n - i ? c->pkt_left : n - i;
            if (c->peek_have < DB_WIRE_PEEK) {
                size_t cp = DB_WIRE_PEEK - c->peek_have < take ? DB_WIRE_PEEK - c->peek_have : take;
                memcpy(c->peek + c->peek_have, b + i, cp);
                c->peek_have += (uint32_t)cp;
            }
            c->pkt_left -= (uint32_t)take;
            i += take;
            int peek_ready = c->peek_have == DB_WIRE_PEEK || c->pkt_left == 0;
            if (peek_ready && !c->pkt_seen) {
                c->pkt_seen = 1;
                db_wire_server_packet(t, c, c->hdr[3], end_ns);
            }
            if (c->pkt_left == 0)
                c->hdr_have = 0; /* next packet */
        }
    }
}

/* The dialect of DB connection f. One known by its port or socket name
 * (--db-port, --db-socket) is told by its first bytes: a PostgreSQL client
 * speaks first, with a StartupMessage or an encryption request; a MySQL
 * server greets before its client says anything. A connection opened
 * before tracing began (`record --off`) is seen first mid-conversation:
 * a PostgreSQL client's send is then whole typed messages
 * (tracer_pg_frontend_run), its StartupMessage long gone. */
static uint8_t db_wire_dialect(struct tracer_fd *f, const struct iovec *iov, int iovcnt,
                               size_t nbytes, int sending)
{
    if (f->db_dialect != TRACER_DB_DIALECT_UNKNOWN)
        return f->db_dialect;
    unsigned char first[8] = {0};
    size_t have = 0;
    for (int i = 0; sending && i < iovcnt && have < sizeof first && have < nbytes; i++) {
        size_t n = iov[i].iov_len < sizeof first - have ? iov[i].iov_len : sizeof first - have;
        if (n > nbytes - have)
            n = nbytes - have;
        memcpy(first + have, iov[i].iov_base, n);
        have += n;
    }
    int pg = sending && tracer_pg_opening(first, have) != TRACER_PG_OPEN_NO;
    int started = !pg && sending && tracer_pg_frontend_run(iov, iovcnt, nbytes);
    f->db_dialect = pg || started ? TRACE_DB_POSTGRESQL : TRACE_DB_MYSQL;
    f->db_pg_init = started ? TRACER_PG_INIT_STARTED : 0;
    return f->db_dialect;
}

size_t tracer_db_wire_before_send(struct tracer_thread *t, int fd, const struct iovec *iov,
                                  int iovcnt, size_t size, uint64_t begin_ns, int tls_plaintext)
{
    if (tracer_in_db_capi || !iov || !size || !(tracer_global.only_mask & TRACER_ONLY_DB))
        return 0;
    struct tracer_fd *f = tracer_fd_peek(fd);
    if (!f || f->kind != TRACER_FD_SOCKET || !(f->flags & TRACER_FDF_DB))
        return 0;
    int err = errno;
    if (db_wire_dialect(f, iov, iovcnt, size, 1) == TRACE_DB_POSTGRESQL) {
        size_t parsed =
            tracer_pg_wire_before_send(t, f, iov, iovcnt, size, begin_ns, tls_plaintext);
        errno = err;
        return parsed;
    }
    /* an event written now (a COM_QUIT's CLOSE) ends where it begins: the
     * send has not happened yet */
    struct db_wire_conn *c = db_wire_acquire(t, f);
    size_t parsed = 0;
    if (db_wire_view(c, tls_plaintext)) {
        db_wire_sent(t, f, c, iov, iovcnt, size, begin_ns, begin_ns, tls_plaintext);
        parsed = size;
    }
    db_wire_release(c);
    errno = err;
    return parsed;
}

void tracer_db_wire_after_send(int fd, size_t parsed, int64_t result)
{
    struct tracer_fd *f = tracer_fd_peek(fd);
    size_t sent = result > 0 ? (size_t)result : 0;
    if (f && sent < parsed)
        f->db_skip += (uint32_t)(parsed - sent);
}

void tracer_db_wire_sent(struct tracer_thread *t, struct tracer_fd *f, const struct iovec *iov,
                         int iovcnt, size_t nbytes, uint64_t begin_ns, uint64_t end_ns)
{
    if (tracer_in_db_capi || !iov)
        return;
    if (db_wire_dialect(f, iov, iovcnt, nbytes, 1) == TRACE_DB_POSTGRESQL) {
        tracer_pg_wire_sent(t, f, iov, iovcnt, nbytes, begin_ns, end_ns);
        return;
    }
    struct db_wire_conn *c = db_wire_acquire(t, f);
    db_wire_sent(t, f, c, iov, iovcnt, nbytes, begin_ns, end_ns, 0);
    db_wire_release(c);
}

void tracer_db_wire_received(struct tracer_thread *t, struct tracer_fd *f, const struct iovec *iov,
                             int iovcnt, size_t nbytes, uint64_t begin_ns, uint64_t end_ns,
                             int tls_plaintext)
{
    (void)begin_ns;
    if (tracer_in_db_capi || !iov)
        return;
    if (db_wire_dialect(f, iov, iovcnt, nbytes, 0) == TRACE_DB_POSTGRESQL) {
        tracer_pg_wire_received(t, f, iov, iovcnt, nbytes, end_ns, tls_plaintext);
        return;
    }
    struct db_wire_conn *c = db_wire_acquire(t, f);
    db_wire_received(t, c, iov, iovcnt, nbytes, end_ns, tls_plaintext);
    db_wire_release(c);
}
