/* db_wire.c - DB events for clients that speak the MySQL protocol
 * themselves (pymysql, PHP mysqlnd, Java, Go, the statically linked
 * `mariadb` client): parses the packets a process exchanges with a DB
 * endpoint (peer port in --db-port, default 3306, or an AF_UNIX path ending
 * in --db-socket, default mysqld.sock). Also home of the parameter renderer
 * both DB capture paths share (db_common.h).
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
 * row packets' payload bytes). Framing is by length only, so the state
 * machine that interprets packets can lose its way only within one
 * exchange: every command resets it.
 *
 * TLS: when the client's handshake asks for it, the parser stops reading
 * the socket's (encrypted) bytes and reads the plaintext OpenSSL's
 * SSL_write/SSL_read pass (interpose_tls.c); a client whose TLS is not
 * OpenSSL through its shared library leaves only NET events.
 * Limits: compressed connections are opaque after the handshake
 * (only their NET events remain); CLIENT_DEPRECATE_EOF and MariaDB's
 * metadata caching are taken from the client's handshake response (the
 * server offered them or the client would not ask); a command whose answer
 * never arrives (connection dropped) is recorded when the next command is
 * sent or not at all; descriptors >= DB_WIRE_FDS get send-time events
 * without answer data. Never called while a C API wrapper runs
 * (tracer_in_db_capi), so a query is never recorded twice. */
#include <stdio.h>
#include <string.h>

#include "db_common.h"
#include "io_events.h"

__thread int tracer_in_db_capi __attribute__((tls_model("initial-exec")));

enum {
    MYSQL_COM_QUIT = 0x01,
    MYSQL_COM_QUERY = 0x03,
    MYSQL_COM_STMT_PREPARE = 0x16,
    MYSQL_COM_STMT_EXECUTE = 0x17,
    MYSQL_COM_STMT_SEND_LONG_DATA = 0x18,
    MYSQL_COM_STMT_CLOSE = 0x19,
};

#define CLIENT_MYSQL 0x1u /* set by MySQL clients; MariaDB's ext caps live elsewhere then */
#define CLIENT_COMPRESS 0x20u
#define CLIENT_PROTOCOL_41 0x200u
#define CLIENT_SSL 0x800u
#define CLIENT_DEPRECATE_EOF (1u << 24)
#define MARIADB_CLIENT_CACHE_METADATA (1u << 4) /* in the extended capabilities */
#define SERVER_MORE_RESULTS_EXIST 0x0008u

#define DB_WIRE_TEXT_MAX 8192
#define DB_WIRE_FDS 1024
#define DB_WIRE_STMTS 16
#define DB_WIRE_TYPES_KEPT 32
#define DB_WIRE_PEEK 40 /* first payload bytes of a received packet we look at */

enum db_wire_state {
    DB_WIRE_IDLE = 0,
    DB_WIRE_FIRST,     /* waiting for the answer's first packet */
    DB_WIRE_SKIP_DEFS, /* prepare answer: parameter and column definitions */
    DB_WIRE_COLDEFS,   /* result set: column definitions */
    DB_WIRE_ROWS,      /* result set: rows until EOF / final OK */
};

/* A statement prepared on this connection (server id -> text, types). */
struct db_wire_stmt {
    uint32_t server_id;
    uint32_t query_id;
    uint32_t used; /* LRU clock */
    uint16_t nparams;
    uint8_t have_types;
    uint8_t types[2 * DB_WIRE_TYPES_KEPT]; /* type, flags (0x80 = unsigned) */
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
    /* the command waiting for (or reading) its answer */
    uint8_t op; /* TRACE_DB_*, or 0: a command we do not record */
    uint8_t state;
    int in_result;
    uint32_t query_id, params_id;
    uint64_t stmt_id, begin_ns, cmd_bytes;
    uint64_t defs_left, rows, bytes, fetch_begin_ns;
    uint32_t prep_query_id;
    struct db_wire_stmt stmts[DB_WIRE_STMTS];
    uint32_t lru;
};
static struct db_wire_conn db_wire_conns[DB_WIRE_FDS];

static struct db_wire_conn *db_wire_conn_of(struct tracer_fd *f)
{
    struct tracer_fd *base = tracer_fd_get(0);
    if (!base || f < base || f - base >= DB_WIRE_FDS)
        return NULL;
    struct db_wire_conn *c = &db_wire_conns[f - base];
    if (c->conn_id != f->conn_id) { /* a new connection on a reused descriptor */
        memset(c, 0, sizeof *c);
        c->conn_id = f->conn_id;
    }
    return c;
}

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

static void db_wire_event(struct tracer_thread *t, uint64_t conn_id, uint8_t op, int32_t error,
                          uint32_t query_id, uint32_t params_id, uint64_t stmt_id, uint64_t rows,
                          uint64_t bytes, uint64_t begin, uint64_t end)
{
    struct trace_event *ev = tracer_event_new(t, TRACE_EV_DB, op, begin, end);
    if (!ev)
        return;
    ev->u.db.source = TRACE_DB_WIRE;
    ev->u.db.error = error;
    ev->u.db.db_conn_id = conn_id;
    ev->u.db.query_id = query_id;
    ev->u.db.params_id = params_id;
    ev->u.db.stmt_id = stmt_id;
    ev->u.db.rows = rows;
    ev->u.db.bytes = bytes;
    if (error)
        ev->flags |= TRACE_F_ERROR;
    tracer_commit(t);
}

/* Writes the pending command's event with what is known (no answer seen). */
static void db_wire_flush_pending(struct tracer_thread *t, struct db_wire_conn *c, uint64_t end)
{
    if (c->op && c->state == DB_WIRE_FIRST)
        db_wire_event(t, c->conn_id, c->op, 0,
                      c->op == TRACE_DB_PREPARE ? c->prep_query_id : c->query_id, c->params_id,
                      c->stmt_id, 0, c->cmd_bytes, c->begin_ns, end);
    else if (c->op && c->in_result)
        db_wire_event(t, c->conn_id, TRACE_DB_FETCH, 0, c->query_id, 0, c->stmt_id, c->rows,
                      c->bytes, c->fetch_begin_ns, end);
    c->op = 0;
    c->state = DB_WIRE_IDLE;
    c->in_result = 0;
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

/* Decodes the parameters of a COM_STMT_EXECUTE payload (p[0] is the
 * command) into a params string id. */
static uint32_t db_wire_exec_params(struct db_wire_stmt *s, const unsigned char *p, size_t have,
                                    uint32_t pkt_len)
{
    unsigned n = s->nparams;
    if (!n)
        return 0;
    static __thread char text[DB_PARAMS_TEXT_MAX + 1];
    struct db_render r;
    db_render_init(&r, text, sizeof text);
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
    for (unsigned i = 0; i < n; i++) {
        if (i >= DB_WIRE_TYPES_KEPT) {
            db_render_text(&r, "...", 3, 0);
            break;
        }
        if (nulls[i / 8] & (1u << (i % 8))) {
            db_render_null(&r);
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
            db_render_null(&r);
            continue;
        }
        if (w) {
            if (have < pos + w)
                goto cut;
            uint64_t v = db_wire_le(p + pos, (int)w);
            pos += w;
            if (type == DB_TYPE_FLOAT) {
                float f;
                uint32_t u = (uint32_t)v;
                memcpy(&f, &u, 4);
                db_render_double(&r, f, 1);
            } else if (type == DB_TYPE_DOUBLE) {
                double d;
                memcpy(&d, &v, 8);
                db_render_double(&r, d, 0);
            } else if (is_unsigned) {
                db_render_uint(&r, v);
            } else {
                int shift = 64 - 8 * (int)w;
                db_render_int(&r, (int64_t)(v << shift) >> shift);
            }
            continue;
        }
        if (type == DB_TYPE_DATE || type == DB_TYPE_DATETIME || type == DB_TYPE_TIMESTAMP ||
            type == DB_TYPE_TIME) {
            if (have < pos + 1)
                goto cut;
            size_t len = p[pos++];
            if (have < pos + len)
                goto cut;
            const unsigned char *d = p + pos;
            pos += len;
            if (type == DB_TYPE_TIME) {
                unsigned long days = len >= 8 ? (unsigned long)db_wire_le(d + 1, 4) : 0;
                db_render_temporal(&r, type, 0, 0, 0, (unsigned)(days * 24 + (len >= 8 ? d[5] : 0)),
                                   len >= 8 ? d[6] : 0, len >= 8 ? d[7] : 0,
                                   len >= 12 ? (unsigned long)db_wire_le(d + 8, 4) : 0,
                                   len >= 1 && d[0]);
            } else {
                db_render_temporal(&r, type == DB_TYPE_DATE ? DB_TYPE_DATE : DB_TYPE_DATETIME,
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
            goto cut;
        pos += used;
        size_t avail = have - pos;
        size_t take = len < avail ? (size_t)len : avail;
        db_render_text(&r, (const char *)p + pos, take,
                       type != DB_TYPE_DECIMAL && type != DB_TYPE_NEWDECIMAL);
        if (take < len)
            goto cut;
        pos += take;
    }
    return tracer_intern(text, r.len);
cut: /* the packet went on beyond what we copied */
    (void)pkt_len;
    db_render_text(&r, "...", 3, 0);
    return tracer_intern(text, r.len);
}

/* A command packet (sequence 0) the client sent: p holds `have` bytes of its
 * `pkt_len`-byte payload. */
static void db_wire_command(struct tracer_thread *t, struct tracer_fd *f, struct db_wire_conn *c,
                            const unsigned char *p, size_t have, uint32_t pkt_len, uint64_t begin,
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
    if (c)
        db_wire_flush_pending(t, c, begin);
    uint8_t op = 0;
    uint32_t text_id = 0, params_id = 0;
    uint64_t stmt = 0;
    switch (cmd) {
    case MYSQL_COM_QUERY:
    case MYSQL_COM_STMT_PREPARE: {
        op = cmd == MYSQL_COM_QUERY ? TRACE_DB_QUERY : TRACE_DB_PREPARE;
        size_t len = have - 1;
        if (len > DB_WIRE_TEXT_MAX)
            len = DB_WIRE_TEXT_MAX;
        /* the payload after the command byte is the SQL text itself */
        text_id = tracer_intern((const char *)p + 1, len);
        break;
    }
    case MYSQL_COM_STMT_EXECUTE:
        op = TRACE_DB_EXECUTE;
        if (have >= 5) {
            stmt = db_wire_le(p + 1, 4);
            struct db_wire_stmt *s = c ? db_wire_stmt_find(c, (uint32_t)stmt) : NULL;
            if (s) {
                text_id = s->query_id;
                params_id = db_wire_exec_params(s, p, have, pkt_len);
            }
        }
        break;
    case MYSQL_COM_QUIT:
        db_wire_event(t, f->conn_id, TRACE_DB_CLOSE, 0, 0, 0, 0, 0, pkt_len, begin, end);
        return;
    default:
        op = 0; /* ping, init_db, ...: follow the answer, record nothing */
    }
    if (!c || c->opaque) {
        if (op)
            db_wire_event(t, f->conn_id, op, 0, text_id, params_id, stmt, 0, pkt_len, begin, end);
        return;
    }
    c->op = op;
    c->state = DB_WIRE_FIRST;
    c->in_result = 0;
    c->query_id = op == TRACE_DB_PREPARE ? 0 : text_id;
    c->prep_query_id = op == TRACE_DB_PREPARE ? text_id : 0;
    c->params_id = params_id;
    c->stmt_id = stmt;
    c->begin_ns = begin;
    /* QUERY/PREPARE: the SQL text's length, as the C API path records it */
    c->cmd_bytes = op == TRACE_DB_QUERY || op == TRACE_DB_PREPARE ? pkt_len - 1 : pkt_len;
    c->rows = c->bytes = 0;
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

void tracer_db_wire_sent(struct tracer_thread *t, struct tracer_fd *f, const struct iovec *iov,
                         int iovcnt, size_t nbytes, uint64_t begin_ns, uint64_t end_ns,
                         int tls_plaintext)
{
    if (tracer_in_db_capi || !iov)
        return;
    struct db_wire_conn *c = db_wire_conn_of(f);
    if (!db_wire_view(c, tls_plaintext))
        return;
    /* Flatten at most what we need from the front of each packet. */
    static __thread unsigned char buf[DB_WIRE_TEXT_MAX + 16];
    size_t pos = 0; /* position in the logical stream of this send */
    int vi = 0;
    size_t voff = 0;
    while (pos < nbytes && vi < iovcnt) {
        if (f->db_pkt_remaining) {
            /* skip the rest of a packet begun in an earlier send */
            size_t skip = f->db_pkt_remaining;
            size_t left = nbytes - pos;
            if (skip > left)
                skip = left;
            f->db_pkt_remaining -= (uint32_t)skip;
            pos += skip;
            while (skip && vi < iovcnt) {
                size_t in = iov[vi].iov_len - voff;
                size_t s = skip < in ? skip : in;
                voff += s;
                skip -= s;
                if (voff == iov[vi].iov_len) {
                    vi++;
                    voff = 0;
                }
            }
            continue;
        }
        /* gather the 4-byte header (it may straddle sends) */
        while (f->db_hdr_have < 4 && pos < nbytes && vi < iovcnt) {
            if (voff == iov[vi].iov_len) {
                vi++;
                voff = 0;
                continue;
            }
            f->db_hdr[f->db_hdr_have++] = ((const unsigned char *)iov[vi].iov_base)[voff++];
            pos++;
        }
        if (f->db_hdr_have < 4)
            return;
        f->db_hdr_have = 0;
        uint32_t len =
            (uint32_t)f->db_hdr[0] | (uint32_t)f->db_hdr[1] << 8 | (uint32_t)f->db_hdr[2] << 16;
        uint8_t seq = f->db_hdr[3];
        /* copy the payload part present in this send */
        size_t want = len < DB_WIRE_TEXT_MAX + 8 ? len : DB_WIRE_TEXT_MAX + 8;
        size_t got = 0;
        size_t avail = nbytes - pos;
        size_t take_total = len < avail ? len : avail;
        size_t remaining = take_total;
        while (remaining && vi < iovcnt) {
            size_t in = iov[vi].iov_len - voff;
            size_t s = remaining < in ? remaining : in;
            if (got < want) {
                size_t cp = want - got < s ? want - got : s;
                memcpy(buf + got, (const unsigned char *)iov[vi].iov_base + voff, cp);
                got += cp;
            }
            voff += s;
            remaining -= s;
            if (voff == iov[vi].iov_len) {
                vi++;
                voff = 0;
            }
        }
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
    if (c->op)
        db_wire_event(t, c->conn_id, TRACE_DB_FETCH, error, c->query_id, 0, c->stmt_id, c->rows,
                      c->bytes, c->fetch_begin_ns, end);
    c->op = 0;
    c->state = DB_WIRE_IDLE;
    c->in_result = 0;
}

/* One received packet of the answer: the first min(len, DB_WIRE_PEEK)
 * payload bytes are in c->peek. */
static void db_wire_server_packet(struct tracer_thread *t, struct db_wire_conn *c, uint64_t end)
{
    const unsigned char *p = c->peek;
    size_t have = c->peek_have;
    uint32_t len = c->pkt_len;
    int deprecate_eof = (c->client_caps & CLIENT_DEPRECATE_EOF) != 0;
    int is_eof = have >= 1 && p[0] == 0xfe && len < 9;
    int is_final_ok = have >= 1 && p[0] == 0xfe && deprecate_eof && len < 0xffffff;
    switch (c->state) {
    case DB_WIRE_IDLE:
        return;
    case DB_WIRE_FIRST: {
        if (have < 1)
            return;
        int32_t error = 0;
        uint64_t rows = 0;
        int result_set = 0;
        if (p[0] == 0xff) {
            error = have >= 3 ? (int32_t)db_wire_le(p + 1, 2) : -1;
        } else if (p[0] == 0x00 && c->op == TRACE_DB_PREPARE) {
            if (have >= 9) {
                uint32_t sid = (uint32_t)db_wire_le(p + 1, 4);
                uint16_t ncols = (uint16_t)db_wire_le(p + 5, 2);
                uint16_t nparams = (uint16_t)db_wire_le(p + 7, 2);
                struct db_wire_stmt *s = db_wire_stmt_add(c, sid);
                s->query_id = c->prep_query_id;
                s->nparams = nparams;
                c->stmt_id = sid;
                c->defs_left =
                    (uint64_t)ncols + nparams + (deprecate_eof ? 0 : (ncols != 0) + (nparams != 0));
            }
        } else if (p[0] == 0x00 || (p[0] == 0xfe && len < 0xffffff && c->in_result)) {
            uint64_t v = 0;
            size_t used = db_wire_lenenc(p + 1, have - 1, &v);
            if (used)
                rows = v;
            uint64_t ins;
            size_t used2 = used ? db_wire_lenenc(p + 1 + used, have - 1 - used, &ins) : 0;
            unsigned status = used2 && have >= 1 + used + used2 + 2
                                  ? (unsigned)db_wire_le(p + 1 + used + used2, 2)
                                  : 0;
            if (c->in_result) { /* a later result of a multi-result answer */
                db_wire_result_end(t, c, status, 0, end);
                return;
            }
            if (status & SERVER_MORE_RESULTS_EXIST) {
                /* first of several results: record the command now */
                db_wire_event(t, c->conn_id, c->op, 0, c->query_id, c->params_id, c->stmt_id, rows,
                              c->cmd_bytes, c->begin_ns, end);
                c->in_result = 1;
                c->fetch_begin_ns = end;
                return;
            }
        } else if (p[0] == 0xfb) {
            return; /* LOCAL INFILE request: the final OK/ERR comes later */
        } else {
            uint64_t ncols = 0;
            size_t used = db_wire_lenenc(p, have, &ncols);
            result_set = 1;
            int metadata = 1;
            if ((c->ext_caps & MARIADB_CLIENT_CACHE_METADATA) && used && have > used)
                metadata = p[used] != 0;
            c->defs_left = (metadata ? ncols : 0) + (deprecate_eof ? 0 : 1);
        }
        if (c->in_result) { /* header of a later result: keep counting */
            if (error) {
                db_wire_result_end(t, c, 0, error, end);
                return;
            }
            c->state = c->defs_left ? DB_WIRE_COLDEFS : DB_WIRE_ROWS;
            return;
        }
        if (c->op) {
            uint32_t qid = c->op == TRACE_DB_PREPARE ? c->prep_query_id : c->query_id;
            db_wire_event(t, c->conn_id, c->op, error, qid, c->params_id, c->stmt_id, rows,
                          c->cmd_bytes, c->begin_ns, end);
        }
        if (error || (!result_set && c->op != TRACE_DB_PREPARE)) {
            c->op = 0;
            c->state = DB_WIRE_IDLE;
        } else if (c->op == TRACE_DB_PREPARE) {
            c->state = c->defs_left ? DB_WIRE_SKIP_DEFS : DB_WIRE_IDLE;
            if (!c->defs_left)
                c->op = 0;
        } else {
            c->in_result = 1;
            c->fetch_begin_ns = end;
            c->rows = c->bytes = 0;
            c->state = c->defs_left ? DB_WIRE_COLDEFS : DB_WIRE_ROWS;
        }
        return;
    }
    case DB_WIRE_SKIP_DEFS:
        if (c->defs_left)
            c->defs_left--;
        if (!c->defs_left) {
            c->op = 0;
            c->state = DB_WIRE_IDLE;
        }
        return;
    case DB_WIRE_COLDEFS:
        if (c->defs_left)
            c->defs_left--;
        if (!c->defs_left)
            c->state = DB_WIRE_ROWS;
        return;
    case DB_WIRE_ROWS:
        if (have >= 1 && p[0] == 0xff) {
            db_wire_result_end(t, c, 0, have >= 3 ? (int32_t)db_wire_le(p + 1, 2) : -1, end);
        } else if (is_eof && !deprecate_eof) {
            db_wire_result_end(t, c, have >= 5 ? (unsigned)db_wire_le(p + 3, 2) : 0, 0, end);
        } else if (is_final_ok) {
            uint64_t v, ins;
            size_t u1 = db_wire_lenenc(p + 1, have - 1, &v);
            size_t u2 = u1 ? db_wire_lenenc(p + 1 + u1, have - 1 - u1, &ins) : 0;
            unsigned status =
                u2 && have >= 1 + u1 + u2 + 2 ? (unsigned)db_wire_le(p + 1 + u1 + u2, 2) : 0;
            db_wire_result_end(t, c, status, 0, end);
        } else {
            c->rows++;
            c->bytes += len;
        }
        return;
    }
}

void tracer_db_wire_received(struct tracer_thread *t, struct tracer_fd *f, const struct iovec *iov,
                             int iovcnt, size_t nbytes, uint64_t begin_ns, uint64_t end_ns,
                             int tls_plaintext)
{
    (void)begin_ns;
    if (tracer_in_db_capi || !iov)
        return;
    struct db_wire_conn *c = db_wire_conn_of(f);
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
                db_wire_server_packet(t, c, end_ns);
            }
            if (c->pkt_left == 0)
                c->hdr_have = 0; /* next packet */
        }
    }
}

/* ---- parameter rendering (shared with interpose_db.c, see db_common.h) --- */

void db_render_init(struct db_render *r, char *buf, size_t bufsize)
{
    r->buf = buf;
    r->cap = bufsize ? bufsize - 1 : 0;
    r->len = 0;
    r->count = 0;
    r->full = 0;
    if (bufsize)
        buf[0] = 0;
}

static void db_render_put(struct db_render *r, const char *s, size_t n)
{
    if (r->len + n > r->cap) {
        n = r->cap - r->len;
        r->full = 1;
    }
    memcpy(r->buf + r->len, s, n);
    r->len += n;
    r->buf[r->len] = 0;
}

/* Starts a value: the separator, or "..." once the list is cut. Returns 0
 * when the value must be dropped. */
static int db_render_begin(struct db_render *r)
{
    if (r->full)
        return 0;
    /* keep room for ", ..." so a cut list always says it was cut */
    if (r->len + 2 + 5 > r->cap) {
        r->full = 1;
        if (r->len + 5 <= r->cap)
            db_render_put(r, r->count ? ", ..." : "...", r->count ? 5 : 3);
        return 0;
    }
    if (r->count++)
        db_render_put(r, ", ", 2);
    return 1;
}

/* Room a value may take, so one value never crowds out the rest. */
static size_t db_render_room(const struct db_render *r)
{
    size_t left = r->cap - r->len;
    left = left > 5 ? left - 5 : 0;
    return left < DB_PARAM_VALUE_MAX ? left : DB_PARAM_VALUE_MAX;
}

void db_render_null(struct db_render *r)
{
    if (db_render_begin(r))
        db_render_put(r, "NULL", 4);
}

void db_render_int(struct db_render *r, int64_t v)
{
    char tmp[32];
    int n = snprintf(tmp, sizeof tmp, "%lld", (long long)v);
    if (db_render_begin(r))
        db_render_put(r, tmp, (size_t)n);
}

void db_render_uint(struct db_render *r, uint64_t v)
{
    char tmp[32];
    int n = snprintf(tmp, sizeof tmp, "%llu", (unsigned long long)v);
    if (db_render_begin(r))
        db_render_put(r, tmp, (size_t)n);
}

void db_render_double(struct db_render *r, double v, int is_float)
{
    char tmp[48];
    int n = snprintf(tmp, sizeof tmp, is_float ? "%.9g" : "%.17g", v);
    if (db_render_begin(r))
        db_render_put(r, tmp, (size_t)n);
}

/* Printable ASCII plus well-formed UTF-8 sequences count as text. */
static int db_render_is_text(const unsigned char *s, size_t len)
{
    for (size_t i = 0; i < len;) {
        unsigned c = s[i];
        if (c >= 0x20 && c < 0x7f) {
            i++;
            continue;
        }
        if (c == '\t' || c == '\n' || c == '\r') {
            i++;
            continue;
        }
        size_t more = c >= 0xc2 && c <= 0xdf   ? 1
                      : c >= 0xe0 && c <= 0xef ? 2
                      : c >= 0xf0 && c <= 0xf4 ? 3
                                               : 0;
        if (!more || i + more >= len)
            return 0;
        for (size_t k = 1; k <= more; k++)
            if ((s[i + k] & 0xc0) != 0x80)
                return 0;
        i += more + 1;
    }
    return 1;
}

void db_render_text(struct db_render *r, const char *s, size_t len, int quoted)
{
    if (!db_render_begin(r))
        return;
    size_t room = db_render_room(r);
    const unsigned char *u = (const unsigned char *)s;
    if (!quoted) {
        db_render_put(r, s, len < room ? len : room);
        return;
    }
    static const char hex[] = "0123456789ABCDEF";
    int text = db_render_is_text(u, len);
    db_render_put(r, text ? "'" : "X'", text ? 1 : 2);
    size_t used = text ? 1 : 2;
    size_t i = 0;
    for (; i < len; i++) {
        char tmp[2];
        size_t n;
        if (text) {
            tmp[0] = s[i];
            tmp[1] = '\'';
            n = s[i] == '\'' ? 2 : 1;
        } else {
            tmp[0] = hex[u[i] >> 4];
            tmp[1] = hex[u[i] & 15];
            n = 2;
        }
        if (used + n + 4 > room)
            break; /* keep room for "'..." */
        db_render_put(r, tmp, n);
        used += n;
    }
    db_render_put(r, "'", 1);
    if (i < len)
        db_render_put(r, "...", 3);
}

void db_render_temporal(struct db_render *r, int type, unsigned year, unsigned month, unsigned day,
                        unsigned hour, unsigned minute, unsigned second, unsigned long micro,
                        int negative)
{
    char tmp[64];
    int n;
    if (type == DB_TYPE_DATE)
        n = snprintf(tmp, sizeof tmp, "'%04u-%02u-%02u'", year, month, day);
    else if (type == DB_TYPE_TIME)
        n = snprintf(tmp, sizeof tmp, "'%s%02u:%02u:%02u", negative ? "-" : "", hour, minute,
                     second);
    else
        n = snprintf(tmp, sizeof tmp, "'%04u-%02u-%02u %02u:%02u:%02u", year, month, day, hour,
                     minute, second);
    if (n < 0)
        return;
    if (type != DB_TYPE_DATE) {
        if (micro && (size_t)n < sizeof tmp)
            n += snprintf(tmp + n, sizeof tmp - (size_t)n, ".%06lu", micro % 1000000);
        if ((size_t)n < sizeof tmp - 1)
            tmp[n++] = '\'';
    }
    if (db_render_begin(r))
        db_render_put(r, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}
