/* pg_wire.c - DB events from the PostgreSQL frontend/backend protocol
 * (version 3) on a DB connection whose server answered a StartupMessage
 * (pg_greeting.c), or whose port or socket name --db-port / --db-socket
 * list and whose client spoke first. Every client is seen this way: libpq
 * (psql, pgbench, psycopg2) as much as drivers that speak the protocol
 * themselves, since the tracer sees the socket I/O.
 *
 * Client messages are [type][int32 length][body] after the startup
 * exchange (untyped [int32 length][int32 code][body]: StartupMessage,
 * SSLRequest, GSSENCRequest, CancelRequest). We record
 *   'Q' Query     -> QUERY (text), written at the first answer message;
 *                    each result set's rows a FETCH at its CommandComplete
 *   'P' Parse     -> PREPARE (text; stmt_id = our number for this Parse on
 *                    the connection), written at ParseComplete / error
 *   'B' Bind      -> the portal's parameters, rendered like MySQL's
 *   'E' Execute   -> EXECUTE (the portal's statement text, stmt_id and
 *                    parameters), written at its first answer; its rows a
 *                    FETCH at CommandComplete / PortalSuspended
 *   'X' Terminate -> CLOSE,
 * and follow Describe, Sync, Close, FunctionCall and the COPY sub-protocol
 * so answers pair with the commands that asked for them: the server
 * answers in order, so every client message that expects an answer waits
 * in a queue per connection. After an error in the extended protocol the
 * server skips everything up to the next Sync: those messages did not run
 * and are not recorded. CommandComplete's tag gives the rows affected
 * ("INSERT 0 3", "UPDATE 2") of a command without a result set; a result
 * set's rows are its DataRows (bytes: their bodies). ErrorResponse's
 * SQLSTATE is the event's error (trace_db_sqlstate). COPY is a QUERY (or
 * EXECUTE) whose FETCH carries the rows from its "COPY n" tag and the
 * CopyData bytes either way. Asynchronous messages (NoticeResponse,
 * ParameterStatus, NotificationResponse of LISTEN) are skipped.
 *
 * TLS: after the server accepts an SSLRequest ('S'), the parser reads the
 * plaintext OpenSSL's SSL_write/SSL_read pass (interpose_tls.c). GSSAPI
 * encryption and replication (CopyBoth) make a connection opaque.
 * Descriptors >= PG_WIRE_FDS are not parsed. */
#include "pg_wire.h"

#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "db_common.h"
#include "db_wire.h"
#include "io_events.h"
#include "pg_greeting.h"

#define PG_WIRE_FDS 1024
#define PG_WIRE_QUEUE 64  /* messages awaiting their answers */
#define PG_WIRE_STMTS 256 /* prepared statements remembered (LRU): Rails keeps up to 1000 */
#define PG_WIRE_PORTALS 4 /* portals remembered (LRU) */
#define PG_WIRE_OIDS_KEPT 32
#define PG_WIRE_PEEK 64 /* first body bytes of a server message we look at */
/* A message up to this long that one send brings whole is parsed from a
 * per-thread copy; a longer one, or one spread over sends, is gathered in
 * the connection's mapping (the cap and PG_WIRE_GATHER_EXTRA in size). */
#define PG_WIRE_INLINE_MAX 8192
#define PG_WIRE_GATHER_EXTRA 4096 /* statement names, type oids, formats */
#define PG_WIRE_GATHER_KEEP (32u * 1024u)

/* A client message whose answer is awaited. */
struct pg_wire_cmd {
    uint64_t stmt_id, begin_ns, cmd_bytes;
    uint32_t query_id, params_id, tid;
    struct db_cut cut;
    uint8_t kind; /* the message type: 'Q', 'P', 'B', 'D', 'E', 'S', 'C', 'F' */
    uint8_t op;   /* TRACE_DB_* to write at its answer, or 0 */
};

struct pg_wire_stmt {
    uint64_t name_hash, stmt_id, query_len;
    uint32_t query_id, used;
    uint16_t noids;
    uint32_t oids[PG_WIRE_OIDS_KEPT];
};

struct pg_wire_portal {
    uint64_t name_hash, stmt_id, bind_bytes;
    struct db_cut cut;
    uint32_t query_id, params_id, used;
};

struct pg_wire_conn {
    uint64_t conn_id;
    uint8_t started, tls, opaque;
    uint8_t ssl_wait; /* the server's next byte answers an SSL ('S') or GSS ('G') request */
    /* client framing */
    uint8_t chdr[5], chdr_have;
    uint32_t cleft; /* body bytes of the current client message still to come */
    uint8_t ctype;  /* its type (0: untyped startup message) */
    uint8_t gathering;
    unsigned char *gbuf;
    size_t gmapped, ghave;
    uint64_t gtotal, gbegin_ns;
    /* server framing */
    uint8_t shdr[5], shdr_have, seen;
    uint32_t slen, sleft, peek_have;
    unsigned char peek[PG_WIRE_PEEK];
    /* answers */
    struct pg_wire_cmd queue[PG_WIRE_QUEUE];
    uint32_t head, len;
    uint8_t answered;  /* the head's command event was written */
    uint8_t in_result; /* DataRows are being counted for a FETCH */
    uint8_t copy;      /* in a COPY: CopyData bytes count */
    uint8_t skip_to_sync;
    uint64_t rows, bytes, fetch_begin_ns;
    uint64_t next_stmt_id;
    uint32_t lru;
    struct pg_wire_stmt stmts[PG_WIRE_STMTS];
    struct pg_wire_portal portals[PG_WIRE_PORTALS];
    uint32_t slot; /* its index in pg_wire_conns */
};
/* One state per descriptor, mapped when the descriptor first carries a
 * PostgreSQL conversation (~45 KB with 256 statements) and kept for it:
 * a static array of them was 48 MB of address space in every traced
 * process, and a program under a small RLIMIT_AS could no longer load the
 * tracer. Touched only by the holder of pg_wire_owner[i]. */
static struct pg_wire_conn *pg_wire_conns[PG_WIRE_FDS];
static _Atomic uint32_t pg_wire_owner[PG_WIRE_FDS];

static uint64_t pg_wire_hash(const unsigned char *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

static void pg_wire_event(struct tracer_thread *t, const struct pg_wire_conn *c,
                          const struct pg_wire_cmd *cmd, uint8_t op, int32_t error, uint64_t rows,
                          uint64_t bytes, uint64_t begin, uint64_t end)
{
    int fetch = op == TRACE_DB_FETCH;
    tracer_db_wire_event(t, cmd->tid, TRACE_DB_POSTGRESQL, c->conn_id, op, error, cmd->query_id,
                         fetch ? 0 : cmd->params_id, cmd->stmt_id, rows, bytes, begin, end,
                         fetch ? NULL : &cmd->cut);
}

static struct pg_wire_cmd *pg_wire_head(struct pg_wire_conn *c)
{
    return c->len ? &c->queue[c->head] : NULL;
}

/* The head's answer ended: the next message's answer comes next. */
static void pg_wire_pop(struct pg_wire_conn *c)
{
    if (!c->len)
        return;
    c->head = (c->head + 1) % PG_WIRE_QUEUE;
    c->len--;
    c->answered = c->in_result = c->copy = 0;
    c->rows = c->bytes = 0;
}

/* Writes what the head still owes (its answer did not come, or came in
 * part) and pops it. */
static void pg_wire_flush_head(struct tracer_thread *t, struct pg_wire_conn *c, uint64_t end)
{
    struct pg_wire_cmd *h = pg_wire_head(c);
    if (!h)
        return;
    if (h->op && !c->answered)
        pg_wire_event(t, c, h, h->op, 0, 0, h->cmd_bytes, h->begin_ns, end);
    else if (h->op && (c->in_result || c->copy))
        pg_wire_event(t, c, h, TRACE_DB_FETCH, 0, c->rows, c->bytes, c->fetch_begin_ns, end);
    pg_wire_pop(c);
}

static void pg_wire_gather_drop(struct pg_wire_conn *c)
{
    if (c->gbuf)
        syscall(SYS_munmap, c->gbuf, c->gmapped);
    c->gbuf = NULL;
    c->gmapped = c->ghave = 0;
    c->gathering = 0;
}

static void pg_wire_init(struct pg_wire_conn *c, const struct tracer_fd *f)
{
    c->conn_id = f->conn_id;
    c->started = (f->db_pg_init & TRACER_PG_INIT_STARTED) != 0;
    c->tls = (f->db_pg_init & TRACER_PG_INIT_TLS) != 0;
}

/* Takes the parser's state of f's connection (NULL beyond PG_WIRE_FDS, or
 * when this thread holds it already: a signal handler's DB I/O inside our
 * own parsing). A new connection on the descriptor first writes what the
 * old one owed. */
static struct pg_wire_conn *pg_wire_acquire(struct tracer_thread *t, struct tracer_fd *f)
{
    struct tracer_fd *base = tracer_fd_get(0);
    if (!base || f < base || f - base >= PG_WIRE_FDS)
        return NULL;
    size_t i = (size_t)(f - base);
    if (db_fd_slot_lock(&pg_wire_owner[i], t))
        return NULL;
    struct pg_wire_conn *c = pg_wire_conns[i];
    if (!c) { /* raw mmap: no malloc inside the app's calls */
        void *m = (void *)syscall(SYS_mmap, NULL, sizeof *c, PROT_READ | PROT_WRITE,
                                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) {
            atomic_store_explicit(&pg_wire_owner[i], 0, memory_order_release);
            return NULL; /* not parsed, as a descriptor beyond PG_WIRE_FDS */
        }
        c = pg_wire_conns[i] = m;
        c->slot = (uint32_t)i;
        pg_wire_init(c, f);
    }
    if (c->conn_id != f->conn_id) {
        while (c->len)
            pg_wire_flush_head(t, c, c->queue[c->head].begin_ns);
        pg_wire_gather_drop(c);
        memset(c, 0, sizeof *c);
        c->slot = (uint32_t)i;
        pg_wire_init(c, f);
    }
    return c;
}

static void pg_wire_release(struct pg_wire_conn *c)
{
    if (c)
        atomic_store_explicit(&pg_wire_owner[c->slot], 0, memory_order_release);
}

void tracer_pg_wire_after_fork(void)
{
    for (size_t i = 0; i < PG_WIRE_FDS; i++)
        atomic_store_explicit(&pg_wire_owner[i], 0, memory_order_relaxed);
}

/* ---- statements and portals ---- */

static struct pg_wire_stmt *pg_wire_stmt_find(struct pg_wire_conn *c, uint64_t h)
{
    for (int i = 0; i < PG_WIRE_STMTS; i++)
        if (c->stmts[i].used && c->stmts[i].name_hash == h) {
            c->stmts[i].used = ++c->lru;
            return &c->stmts[i];
        }
    return NULL;
}

static struct pg_wire_stmt *pg_wire_stmt_add(struct pg_wire_conn *c, uint64_t h)
{
    struct pg_wire_stmt *s = pg_wire_stmt_find(c, h);
    if (!s) {
        s = &c->stmts[0];
        for (int i = 1; i < PG_WIRE_STMTS; i++)
            if (c->stmts[i].used < s->used)
                s = &c->stmts[i];
    }
    memset(s, 0, sizeof *s);
    s->name_hash = h;
    s->used = ++c->lru;
    return s;
}

static struct pg_wire_portal *pg_wire_portal_find(struct pg_wire_conn *c, uint64_t h)
{
    for (int i = 0; i < PG_WIRE_PORTALS; i++)
        if (c->portals[i].used && c->portals[i].name_hash == h) {
            c->portals[i].used = ++c->lru;
            return &c->portals[i];
        }
    return NULL;
}

static struct pg_wire_portal *pg_wire_portal_add(struct pg_wire_conn *c, uint64_t h)
{
    struct pg_wire_portal *p = pg_wire_portal_find(c, h);
    if (!p) {
        p = &c->portals[0];
        for (int i = 1; i < PG_WIRE_PORTALS; i++)
            if (c->portals[i].used < p->used)
                p = &c->portals[i];
    }
    memset(p, 0, sizeof *p);
    p->name_hash = h;
    p->used = ++c->lru;
    return p;
}

/* A NUL-ended string at p[*pos] within have bytes: its length, *pos past
 * its NUL; -1 when the NUL is not within the bytes. */
static long pg_wire_cstr(const unsigned char *p, size_t have, size_t *pos)
{
    const unsigned char *nul = *pos < have ? memchr(p + *pos, 0, have - *pos) : NULL;
    if (!nul)
        return -1;
    long n = (long)(nul - (p + *pos));
    *pos += (size_t)n + 1;
    return n;
}

/* ---- Bind parameters ---- */

enum {
    PG_OID_BOOL = 16,
    PG_OID_INT8 = 20,
    PG_OID_INT2 = 21,
    PG_OID_INT4 = 23,
    PG_OID_OID = 26,
    PG_OID_FLOAT4 = 700,
    PG_OID_FLOAT8 = 701,
    PG_OID_NUMERIC = 1700,
};

/* A Bind's parameters, for db_intern_params: the body (have bytes kept),
 * where the format codes and the values start, the statement's types. */
struct pg_wire_bind {
    const unsigned char *p;
    size_t have, fmt_pos, val_pos;
    unsigned nfmt, nparams;
    const struct pg_wire_stmt *s;
};

static unsigned pg_wire_be16(const unsigned char *p)
{
    return (unsigned)p[0] << 8 | p[1];
}

/* Text that is a number as SQL writes it renders bare; anything else
 * quoted. */
static int pg_wire_numeric_text(const unsigned char *v, size_t n)
{
    if (!n || n > 64)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((v[i] >= '0' && v[i] <= '9') || v[i] == '.' || v[i] == '-' || v[i] == '+' ||
              v[i] == 'e' || v[i] == 'E'))
            return 0;
    return (v[0] >= '0' && v[0] <= '9') || v[0] == '-' || v[0] == '.';
}

/* A binary-format value of type oid. */
static void pg_wire_render_binary(struct db_render *r, uint32_t oid, const unsigned char *v,
                                  size_t n)
{
    uint64_t u = 0;
    for (size_t i = 0; i < n && i < 8; i++)
        u = u << 8 | v[i];
    if ((oid == PG_OID_INT2 && n == 2) || (oid == PG_OID_INT4 && n == 4) ||
        (oid == PG_OID_INT8 && n == 8)) {
        int shift = 64 - 8 * (int)n;
        db_render_int(r, (int64_t)(u << shift) >> shift);
    } else if (oid == PG_OID_OID && n == 4) {
        db_render_uint(r, u);
    } else if (oid == PG_OID_FLOAT4 && n == 4) {
        float f;
        uint32_t w = (uint32_t)u;
        memcpy(&f, &w, 4);
        db_render_double(r, f, 1);
    } else if (oid == PG_OID_FLOAT8 && n == 8) {
        double d;
        memcpy(&d, &u, 8);
        db_render_double(r, d, 0);
    } else if (oid == PG_OID_BOOL && n == 1) {
        db_render_text(r, v[0] ? "t" : "f", 1, 1);
    } else {
        db_render_text(r, (const char *)v, n, 2);
    }
}

/* Renders a Bind's values (a db_render_fn): NULL, numbers bare, text
 * quoted, binary values of types it cannot read as X'hex'. */
static void pg_wire_render_params(struct db_render *r, const void *ctx)
{
    const struct pg_wire_bind *b = ctx;
    size_t pos = b->val_pos;
    unsigned i = 0;
    for (; i < b->nparams; i++) {
        if (b->have < pos + 4)
            break;
        uint32_t len = tracer_pg_be32(b->p + pos);
        pos += 4;
        if (len == 0xffffffffu) {
            db_render_null(r);
            continue;
        }
        unsigned fmt = 0;
        if (b->nfmt == 1)
            fmt = pg_wire_be16(b->p + b->fmt_pos);
        else if (b->nfmt > i)
            fmt = pg_wire_be16(b->p + b->fmt_pos + 2 * (size_t)i);
        uint32_t oid = b->s && i < b->s->noids && i < PG_WIRE_OIDS_KEPT ? b->s->oids[i] : 0;
        size_t avail = b->have - pos, take = len < avail ? len : avail;
        const unsigned char *v = b->p + pos;
        if (take < len) { /* the value goes on beyond the bytes kept */
            db_render_text(r, (const char *)v, take, fmt ? 2 : 1);
            break;
        }
        if (fmt)
            pg_wire_render_binary(r, oid, v, len);
        else
            db_render_text(r, (const char *)v, len, pg_wire_numeric_text(v, len) ? 0 : 1);
        pos += len;
    }
    if (i < b->nparams)
        db_render_cut(r);
}

/* A Bind message (body_len bytes): the portal gets its statement and
 * rendered values. */
static void pg_wire_bind(struct pg_wire_conn *c, const unsigned char *p, size_t have,
                         uint64_t body_len)
{
    size_t pos = 0;
    long pn = pg_wire_cstr(p, have, &pos);
    if (pn < 0)
        return;
    uint64_t portal_hash = pg_wire_hash(p, (size_t)pn);
    size_t sname = pos;
    long sn = pg_wire_cstr(p, have, &pos);
    if (sn < 0)
        return;
    struct pg_wire_stmt *s = pg_wire_stmt_find(c, pg_wire_hash(p + sname, (size_t)sn));
    struct pg_wire_portal *po = pg_wire_portal_add(c, portal_hash);
    po->bind_bytes = body_len;
    if (s) {
        po->stmt_id = s->stmt_id;
        po->query_id = s->query_id;
        po->cut.query_len = s->query_len;
    }
    if (have < pos + 2)
        return;
    struct pg_wire_bind b = {.p = p, .have = have, .s = s};
    b.nfmt = pg_wire_be16(p + pos);
    b.fmt_pos = pos + 2;
    pos = b.fmt_pos + 2 * (size_t)b.nfmt;
    if (have < pos + 2)
        return;
    b.nparams = pg_wire_be16(p + pos);
    b.val_pos = pos + 2;
    if (b.nparams)
        po->params_id = db_intern_params(pg_wire_render_params, &b, &po->cut.params_len);
}

/* ---- client messages ---- */

/* Queues a message whose answer comes later (after an error, up to the
 * next Sync the server skips what it is sent: not recorded). */
static void pg_wire_push(struct tracer_thread *t, struct pg_wire_conn *c,
                         const struct pg_wire_cmd *cmd)
{
    if (c->skip_to_sync && cmd->kind != 'S' && cmd->kind != 'Q')
        return;
    if (c->len == PG_WIRE_QUEUE)
        pg_wire_flush_head(t, c, cmd->begin_ns); /* the oldest waits no longer */
    c->queue[(c->head + c->len) % PG_WIRE_QUEUE] = *cmd;
    c->len++;
}

/* An untyped message of the startup phase (p: its body, from the code). */
static void pg_wire_startup(struct pg_wire_conn *c, const unsigned char *p, size_t have)
{
    if (have < 4)
        return;
    uint32_t code = tracer_pg_be32(p);
    if (code >> 16 == 3)
        c->started = 1;
    else if (code == TRACER_PG_CODE_SSL)
        c->ssl_wait = 'S';
    else if (code == TRACER_PG_CODE_GSS)
        c->ssl_wait = 'G';
    else
        c->opaque = 1; /* CancelRequest, or not a client we know */
}

/* Parse: PREPARE of the text, the statement remembered by its name. */
static void pg_wire_parse(struct pg_wire_conn *c, struct pg_wire_cmd *nc, const unsigned char *p,
                          size_t have, uint64_t body_len)
{
    size_t pos = 0;
    long nn = pg_wire_cstr(p, have, &pos);
    if (nn < 0)
        return;
    size_t text = pos;
    long tn = pg_wire_cstr(p, have, &pos);
    size_t len = tn < 0 ? have - text : (size_t)tn;
    nc->op = TRACE_DB_PREPARE;
    nc->stmt_id = ++c->next_stmt_id;
    nc->query_id = db_intern_statement((const char *)p + text, len, &nc->cut.query_len);
    /* cut by the bytes kept: the real length is the body's rest, at least */
    if (tn < 0)
        nc->cut.query_len = body_len - text > len ? body_len - text - 1 : len;
    nc->cmd_bytes = tn < 0 ? nc->cut.query_len : len;
    struct pg_wire_stmt *s = pg_wire_stmt_add(c, pg_wire_hash(p, (size_t)nn));
    s->stmt_id = nc->stmt_id;
    s->query_id = nc->query_id;
    s->query_len = nc->cut.query_len;
    if (tn >= 0 && have >= pos + 2) {
        unsigned n = pg_wire_be16(p + pos);
        pos += 2;
        for (unsigned i = 0; i < n && i < PG_WIRE_OIDS_KEPT && have >= pos + 4; i++, pos += 4)
            s->oids[s->noids++] = tracer_pg_be32(p + pos);
    }
}

/* Query: QUERY of its text (NUL-ended). */
static void pg_wire_query(struct pg_wire_cmd *nc, const unsigned char *p, size_t have,
                          uint64_t body_len)
{
    const unsigned char *nul = memchr(p, 0, have);
    size_t len = nul ? (size_t)(nul - p) : have;
    nc->op = TRACE_DB_QUERY;
    nc->query_id = db_intern_statement((const char *)p, len, &nc->cut.query_len);
    nc->cmd_bytes = body_len ? body_len - 1 : 0; /* the text's length */
    if (!nul && body_len > have)
        nc->cut.query_len = nc->cmd_bytes;
}

/* Execute: EXECUTE of the portal's statement, with its parameters. */
static void pg_wire_execute(struct pg_wire_conn *c, struct pg_wire_cmd *nc, const unsigned char *p,
                            size_t have)
{
    size_t pos = 0;
    long pn = pg_wire_cstr(p, have, &pos);
    nc->op = TRACE_DB_EXECUTE;
    struct pg_wire_portal *po = pn < 0 ? NULL : pg_wire_portal_find(c, pg_wire_hash(p, (size_t)pn));
    if (po) {
        nc->cmd_bytes += po->bind_bytes; /* its parameters came with the Bind */
        nc->stmt_id = po->stmt_id;
        nc->query_id = po->query_id;
        nc->params_id = po->params_id;
        nc->cut = po->cut;
    }
}

/* Close: the statement or portal is forgotten. */
static void pg_wire_close(struct pg_wire_conn *c, const unsigned char *p, size_t have)
{
    size_t pos = 1;
    long n = have >= 1 ? pg_wire_cstr(p, have, &pos) : -1;
    if (n < 0)
        return;
    uint64_t h = pg_wire_hash(p + 1, (size_t)n);
    if (p[0] == 'S') {
        struct pg_wire_stmt *s = pg_wire_stmt_find(c, h);
        if (s)
            s->used = 0;
    } else {
        struct pg_wire_portal *po = pg_wire_portal_find(c, h);
        if (po)
            po->used = 0;
    }
}

/* A whole client message (or its first `have` bytes of body_len). */
static void pg_wire_client_message(struct tracer_thread *t, struct tracer_fd *f,
                                   struct pg_wire_conn *c, uint8_t type, const unsigned char *p,
                                   size_t have, uint64_t body_len, uint64_t begin, uint64_t end)
{
    if (!type) {
        pg_wire_startup(c, p, have);
        return;
    }
    struct pg_wire_cmd nc = {.begin_ns = begin, .cmd_bytes = body_len, .tid = t->tid, .kind = type};
    switch (type) {
    case 'Q':
        pg_wire_query(&nc, p, have, body_len);
        break;
    case 'P':
        pg_wire_parse(c, &nc, p, have, body_len);
        break;
    case 'B':
        pg_wire_bind(c, p, have, body_len);
        break;
    case 'E':
        pg_wire_execute(c, &nc, p, have);
        break;
    case 'C':
        pg_wire_close(c, p, have);
        break;
    case 'D': /* Describe, Sync, FunctionCall: answered, not recorded */
    case 'S':
    case 'F':
        break;
    case 'X':
        tracer_db_wire_event(t, t->tid, TRACE_DB_POSTGRESQL, f->conn_id, TRACE_DB_CLOSE, 0, 0, 0, 0,
                             0, body_len, begin, end, NULL);
        return;
    case 'd': /* COPY FROM STDIN: the data goes with the COPY's rows */
        if (c->copy)
            c->bytes += body_len;
        return;
    default: /* Flush, CopyDone, CopyFail, password / SASL: no answer of their own */
        return;
    }
    pg_wire_push(t, c, &nc);
}

/* ---- server messages ---- */

/* The rows a CommandComplete tag counts ("INSERT 0 3", "UPDATE 2",
 * "SELECT 5", "COPY 7"): its last number, 0 when none. */
static uint64_t pg_wire_tag_rows(const unsigned char *p, size_t have, int *selects)
{
    size_t n = 0;
    while (n < have && p[n])
        n++;
    *selects = (n >= 6 && !memcmp(p, "SELECT", 6)) || (n >= 5 && !memcmp(p, "FETCH", 5));
    size_t i = n;
    while (i > 0 && p[i - 1] >= '0' && p[i - 1] <= '9')
        i--;
    if (i == n || (i > 0 && p[i - 1] != ' '))
        return 0;
    uint64_t v = 0;
    for (; i < n; i++)
        v = v * 10 + (uint64_t)(p[i] - '0');
    return v;
}

/* An ErrorResponse's SQLSTATE (field 'C'), packed; -1 when not within the
 * bytes looked at. */
static int32_t pg_wire_sqlstate(const unsigned char *p, size_t have)
{
    size_t pos = 0;
    while (pos < have && p[pos]) {
        uint8_t field = p[pos++];
        size_t start = pos;
        long n = pg_wire_cstr(p, have, &pos);
        if (n < 0)
            break;
        if (field == 'C' && n == 5)
            return trace_db_sqlstate((const char *)p + start);
    }
    return -1;
}

/* The first answer to the head (Q or E) arrived: its event. */
static void pg_wire_answer(struct tracer_thread *t, struct pg_wire_conn *c, struct pg_wire_cmd *h,
                           int32_t error, uint64_t rows, uint64_t end)
{
    if (c->answered || !h->op)
        return;
    c->answered = 1;
    pg_wire_event(t, c, h, h->op, error, rows, h->cmd_bytes, h->begin_ns, end);
}

static void pg_wire_fetch_end(struct tracer_thread *t, struct pg_wire_conn *c,
                              struct pg_wire_cmd *h, int32_t error, uint64_t rows, uint64_t end)
{
    if (h->op)
        pg_wire_event(t, c, h, TRACE_DB_FETCH, error, rows, c->bytes, c->fetch_begin_ns, end);
    c->in_result = c->copy = 0;
    c->rows = c->bytes = 0;
}

static void pg_wire_result_begin(struct pg_wire_conn *c, uint64_t end)
{
    c->in_result = 1;
    c->rows = c->bytes = 0;
    c->fetch_begin_ns = end;
}

/* ErrorResponse: the head's error. In the extended protocol the server
 * then skips to the next Sync: what was queued before it did not run. */
static void pg_wire_error(struct tracer_thread *t, struct pg_wire_conn *c, struct pg_wire_cmd *h,
                          uint64_t end)
{
    int32_t error = pg_wire_sqlstate(c->peek, c->peek_have);
    if (c->in_result || c->copy)
        pg_wire_fetch_end(t, c, h, error, c->rows, end);
    else if (!c->answered && h->op)
        pg_wire_answer(t, c, h, error, 0, end);
    c->answered = 1;
    if (h->kind == 'Q' || h->kind == 'S' || h->kind == 'F')
        return; /* its ReadyForQuery ends it */
    pg_wire_pop(c);
    while (c->len && c->queue[c->head].kind != 'S')
        pg_wire_pop(c);
    if (!c->len)
        c->skip_to_sync = 1; /* the rest of the batch is still to be sent */
}

/* DataRow, CommandComplete, EmptyQueryResponse, PortalSuspended and the
 * COPY responses: the answer to a Query or an Execute. */
static void pg_wire_result_message(struct tracer_thread *t, struct pg_wire_conn *c,
                                   struct pg_wire_cmd *h, uint8_t type, uint64_t end)
{
    int selects = 0;
    uint64_t tag_rows;
    switch (type) {
    case 'D':
        if (!c->in_result) {
            pg_wire_answer(t, c, h, 0, 0, end);
            pg_wire_result_begin(c, end);
        }
        c->rows++;
        c->bytes += c->slen - 4;
        return;
    case 'C':
        tag_rows = pg_wire_tag_rows(c->peek, c->peek_have, &selects);
        if (c->copy) {
            pg_wire_fetch_end(t, c, h, 0, tag_rows, end);
        } else if (c->in_result) {
            pg_wire_fetch_end(t, c, h, 0, c->rows, end);
        } else if (!c->answered) {
            pg_wire_answer(t, c, h, 0, selects ? 0 : tag_rows, end);
            if (selects) { /* a result set without rows: its fetch took no time */
                pg_wire_result_begin(c, end);
                pg_wire_fetch_end(t, c, h, 0, 0, end);
            }
        }
        break;
    case 's':
        if (c->in_result)
            pg_wire_fetch_end(t, c, h, 0, c->rows, end);
        break;
    case 'G': /* CopyIn, CopyOut: the data is the result */
    case 'H':
        pg_wire_answer(t, c, h, 0, 0, end);
        c->copy = 1;
        c->rows = c->bytes = 0;
        c->fetch_begin_ns = end;
        return;
    case 'W': /* CopyBoth: replication, not an application's queries */
        c->opaque = 1;
        return;
    case 'I':
    default:
        pg_wire_answer(t, c, h, 0, 0, end);
        break;
    }
    if (h->kind == 'E') /* a Query goes on to its ReadyForQuery */
        pg_wire_pop(c);
}

/* One server message: its type, length and first body bytes (c->peek). */
static void pg_wire_server_message(struct tracer_thread *t, struct pg_wire_conn *c, uint8_t type,
                                   uint64_t end)
{
    struct pg_wire_cmd *h = pg_wire_head(c);
    if (type == 'd' && c->copy) {
        c->bytes += c->slen - 4;
        return;
    }
    if (!h)
        return; /* authentication, parameters, notices, notifications */
    switch (type) {
    case 'Z': /* ReadyForQuery ends a Query, a Sync, a FunctionCall */
        while (c->len) {
            uint8_t k = c->queue[c->head].kind;
            pg_wire_flush_head(t, c, end);
            if (k == 'S' || k == 'Q' || k == 'F')
                break;
        }
        c->skip_to_sync = 0;
        return;
    case 'E':
        pg_wire_error(t, c, h, end);
        return;
    case '1': /* ParseComplete */
        if (h->kind == 'P') {
            pg_wire_answer(t, c, h, 0, 0, end);
            pg_wire_pop(c);
        }
        return;
    case '2': /* BindComplete, CloseComplete */
    case '3':
        if (h->kind == 'B' || h->kind == 'C')
            pg_wire_pop(c);
        return;
    case 'n': /* NoData, RowDescription: the end of a Describe */
    case 'T':
        if (h->kind == 'D')
            pg_wire_pop(c);
        else if (type == 'T' && h->kind == 'Q') {
            pg_wire_answer(t, c, h, 0, 0, end);
            pg_wire_result_begin(c, end);
        }
        return;
    case 'D':
    case 'C':
    case 'I':
    case 's':
    case 'G':
    case 'H':
    case 'W':
        if (h->kind == 'Q' || h->kind == 'E')
            pg_wire_result_message(t, c, h, type, end);
        return;
    default: /* 't', 'V', 'c', 'N', 'S', 'A', 'K', 'R' */
        return;
    }
}

static void pg_wire_received_bytes(struct tracer_thread *t, struct pg_wire_conn *c,
                                   const unsigned char *b, size_t n, uint64_t end)
{
    size_t i = 0;
    while (i < n && !c->opaque) {
        if (c->ssl_wait) { /* one byte: 'S' / 'G' yes, 'N' no */
            uint8_t want = c->ssl_wait, got = b[i++];
            c->ssl_wait = 0;
            if (got == 'S' && want == 'S')
                c->tls = 1;
            else if (got != 'N')
                c->opaque = 1; /* GSSAPI encryption, or an old server's error */
            return;            /* what follows is the TLS handshake, or nothing */
        }
        if (c->shdr_have < 5) {
            c->shdr[c->shdr_have++] = b[i++];
            if (c->shdr_have < 5)
                continue;
            c->slen = tracer_pg_be32(c->shdr + 1);
            if (c->slen < 4) {
                c->opaque = 1; /* lost step with the server */
                return;
            }
            c->sleft = c->slen - 4;
            c->peek_have = 0;
            c->seen = 0;
        }
        size_t take = c->sleft < n - i ? c->sleft : n - i;
        if (c->peek_have < PG_WIRE_PEEK) {
            size_t cp = PG_WIRE_PEEK - c->peek_have < take ? PG_WIRE_PEEK - c->peek_have : take;
            memcpy(c->peek + c->peek_have, b + i, cp);
            c->peek_have += (uint32_t)cp;
        }
        c->sleft -= (uint32_t)take;
        i += take;
        if (!c->seen && (c->peek_have == PG_WIRE_PEEK || !c->sleft)) {
            c->seen = 1;
            pg_wire_server_message(t, c, c->shdr[0], end);
        }
        if (!c->sleft)
            c->shdr_have = 0;
    }
}

/* ---- client framing ---- */

/* Starts gathering a message body in c's mapping. -1: none to be had. */
static int pg_wire_gather_start(struct pg_wire_conn *c, uint64_t begin_ns)
{
    size_t want = db_statement_cap() + PG_WIRE_GATHER_EXTRA;
    if (c->gbuf && c->gmapped != want)
        pg_wire_gather_drop(c);
    if (!c->gbuf) {
        void *m = (void *)syscall(SYS_mmap, NULL, want, PROT_READ | PROT_WRITE,
                                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            return -1;
        c->gbuf = m;
        c->gmapped = want;
    }
    c->ghave = 0;
    c->gtotal = 0;
    c->gbegin_ns = begin_ns;
    c->gathering = 1;
    return 0;
}

/* The body of the current message: `n` of its bytes at the cursor. */
static void pg_wire_body(struct tracer_thread *t, struct tracer_fd *f, struct pg_wire_conn *c,
                         struct db_iov_cursor *cur, size_t n, uint64_t end_ns)
{
    if (c->gathering) {
        c->ghave += db_iov_take(cur, n, c->gbuf + c->ghave, c->gmapped - c->ghave);
        c->gtotal += n;
    } else {
        db_iov_take(cur, n, NULL, 0);
    }
    c->cleft -= (uint32_t)n;
    if (!c->cleft && c->gathering) {
        c->gathering = 0;
        pg_wire_client_message(t, f, c, c->ctype, c->gbuf, c->ghave, c->gtotal, c->gbegin_ns,
                               end_ns);
        if (c->ghave > PG_WIRE_GATHER_KEEP)
            pg_wire_gather_drop(c);
    }
}

/* A message header was read (c->chdr): its body follows, `avail` bytes of
 * it in this send. Parsed from a per-thread copy when this send holds it
 * whole and it is short, else gathered (statements) or skipped (COPY
 * data, passwords: only their length matters). Returns the body bytes
 * taken from the cursor now (the rest: pg_wire_body, as they come). */
static size_t pg_wire_header(struct tracer_thread *t, struct tracer_fd *f, struct pg_wire_conn *c,
                             struct db_iov_cursor *cur, size_t avail, uint64_t begin_ns,
                             uint64_t end_ns)
{
    static __thread unsigned char buf[PG_WIRE_INLINE_MAX];
    c->ctype = c->started ? c->chdr[0] : 0;
    uint32_t len = tracer_pg_be32(c->started ? c->chdr + 1 : c->chdr);
    if (len < 4) {
        c->opaque = 1; /* not the protocol: stop reading this connection */
        return 0;
    }
    c->cleft = len - 4;
    if (c->ctype == 'd' || c->ctype == 'p') {
        pg_wire_client_message(t, f, c, c->ctype, NULL, 0, c->cleft, begin_ns, end_ns);
        return 0; /* the body is skipped */
    }
    if (c->cleft <= avail && c->cleft <= PG_WIRE_INLINE_MAX) {
        size_t body = c->cleft;
        db_iov_take(cur, body, buf, sizeof buf);
        c->cleft = 0;
        pg_wire_client_message(t, f, c, c->ctype, buf, body, body, begin_ns, end_ns);
        return body;
    }
    /* no mapping to be had: the body is skipped, the message not parsed */
    if (pg_wire_gather_start(c, begin_ns) == 0 && !c->cleft)
        pg_wire_body(t, f, c, cur, 0, end_ns);
    return 0;
}

static void pg_wire_sent_bytes(struct tracer_thread *t, struct tracer_fd *f, struct pg_wire_conn *c,
                               const struct iovec *iov, int iovcnt, size_t nbytes,
                               uint64_t begin_ns, uint64_t end_ns)
{
    struct db_iov_cursor cur = {.iov = iov, .iovcnt = iovcnt};
    size_t pos = 0;
    while (pos < nbytes && cur.vi < iovcnt && !c->opaque) {
        size_t left = nbytes - pos;
        if (f->db_skip) { /* parsed for an earlier send that did not send them */
            size_t n = f->db_skip < left ? f->db_skip : left;
            f->db_skip -= (uint32_t)n;
            db_iov_take(&cur, n, NULL, 0);
            pos += n;
            continue;
        }
        if (c->cleft) {
            size_t n = c->cleft < left ? c->cleft : left;
            pg_wire_body(t, f, c, &cur, n, end_ns);
            pos += n;
            continue;
        }
        size_t need = c->started ? 5 : 4;
        size_t got = db_iov_take(&cur, need - c->chdr_have < left ? need - c->chdr_have : left,
                                 c->chdr + c->chdr_have, need - c->chdr_have);
        c->chdr_have += (uint8_t)got;
        pos += got;
        if (!got)
            break;
        if (c->chdr_have < need)
            return;
        c->chdr_have = 0;
        pos += pg_wire_header(t, f, c, &cur, nbytes - pos, begin_ns, end_ns);
    }
}

/* Is this call's view of the connection the one the parser reads? */
static int pg_wire_view(const struct pg_wire_conn *c, int tls_plaintext)
{
    if (!c || c->opaque)
        return 0;
    return tls_plaintext ? c->tls : !c->tls;
}

size_t tracer_pg_wire_before_send(struct tracer_thread *t, struct tracer_fd *f,
                                  const struct iovec *iov, int iovcnt, size_t size,
                                  uint64_t begin_ns, int tls_plaintext)
{
    struct pg_wire_conn *c = pg_wire_acquire(t, f);
    size_t parsed = 0;
    if (pg_wire_view(c, tls_plaintext)) {
        pg_wire_sent_bytes(t, f, c, iov, iovcnt, size, begin_ns, begin_ns);
        parsed = size;
    }
    pg_wire_release(c);
    return parsed;
}

void tracer_pg_wire_sent(struct tracer_thread *t, struct tracer_fd *f, const struct iovec *iov,
                         int iovcnt, size_t nbytes, uint64_t begin_ns, uint64_t end_ns)
{
    struct pg_wire_conn *c = pg_wire_acquire(t, f);
    if (pg_wire_view(c, 0))
        pg_wire_sent_bytes(t, f, c, iov, iovcnt, nbytes, begin_ns, end_ns);
    pg_wire_release(c);
}

void tracer_pg_wire_received(struct tracer_thread *t, struct tracer_fd *f, const struct iovec *iov,
                             int iovcnt, size_t nbytes, uint64_t end_ns, int tls_plaintext)
{
    struct pg_wire_conn *c = pg_wire_acquire(t, f);
    if (pg_wire_view(c, tls_plaintext)) {
        size_t left = nbytes;
        for (int vi = 0; vi < iovcnt && left && pg_wire_view(c, tls_plaintext); vi++) {
            size_t n = iov[vi].iov_len < left ? iov[vi].iov_len : left;
            left -= n;
            pg_wire_received_bytes(t, c, iov[vi].iov_base, n, end_ns);
        }
    }
    pg_wire_release(c);
}
