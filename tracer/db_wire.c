/* db_wire.c - DB events for clients that speak the MySQL protocol
 * themselves (PHP mysqlnd, pymysql, Java, Go, the statically linked
 * `mariadb` client): parses the command packets a process sends on a
 * connection to a DB endpoint (peer port in --db-port, default 3306, or a
 * socket path ending in mysqld.sock).
 *
 * Client packets are [3-byte length][sequence][payload]; a command starts
 * a new exchange with sequence 0 and its first payload byte names it. We
 * record COM_QUERY and COM_STMT_PREPARE with their SQL text, COM_STMT_EXECUTE
 * with its statement id, and COM_QUIT. The reply is not parsed: its bytes are
 * the NET receives that follow on the same connection, from which the
 * analyzer derives duration and size. Text split across sends is truncated
 * to what the first send held (flagged nowhere else: the length is kept). */
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
    MYSQL_COM_STMT_CLOSE = 0x19,
};

#define DB_WIRE_TEXT_MAX 8192

static void db_wire_command(struct tracer_thread *t, struct tracer_fd *f, const unsigned char *p,
                            size_t have, uint32_t pkt_len, uint64_t begin, uint64_t end)
{
    if (have < 1)
        return;
    uint8_t cmd = p[0];
    uint8_t op;
    switch (cmd) {
    case MYSQL_COM_QUERY:
        op = TRACE_DB_QUERY;
        break;
    case MYSQL_COM_STMT_PREPARE:
        op = TRACE_DB_PREPARE;
        break;
    case MYSQL_COM_STMT_EXECUTE:
        op = TRACE_DB_EXECUTE;
        break;
    case MYSQL_COM_QUIT:
        op = TRACE_DB_CLOSE;
        break;
    default:
        return;
    }
    uint32_t text_id = 0;
    uint64_t stmt = 0;
    if (op == TRACE_DB_QUERY || op == TRACE_DB_PREPARE) {
        size_t len = have - 1;
        if (len > DB_WIRE_TEXT_MAX)
            len = DB_WIRE_TEXT_MAX;
        /* MariaDB 10.x query attributes are not used by these clients; a
         * COM_QUERY payload is the SQL text itself. */
        text_id = tracer_intern((const char *)p + 1, len);
    } else if (op == TRACE_DB_EXECUTE && have >= 5) {
        stmt = (uint64_t)p[1] | (uint64_t)p[2] << 8 | (uint64_t)p[3] << 16 | (uint64_t)p[4] << 24;
    }
    struct trace_event *ev = tracer_event_new(t, TRACE_EV_DB, op, begin, end);
    if (!ev)
        return;
    ev->u.db.source = TRACE_DB_WIRE;
    ev->u.db.db_conn_id = f->conn_id;
    ev->u.db.query_id = text_id;
    ev->u.db.stmt_id = stmt;
    ev->u.db.bytes = pkt_len;
    tracer_commit(t);
}

void tracer_db_wire_sent(struct tracer_thread *t, struct tracer_fd *f, const struct iovec *iov,
                         int iovcnt, size_t nbytes, uint64_t begin_ns, uint64_t end_ns)
{
    if (tracer_in_db_capi || !iov)
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
                size_t c = want - got < s ? want - got : s;
                memcpy(buf + got, (const unsigned char *)iov[vi].iov_base + voff, c);
                got += c;
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
            db_wire_command(t, f, buf, got, len, begin_ns, end_ns);
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
