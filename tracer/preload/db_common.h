/* db_common.h - what the two DB capture paths of libpreplay_trace.so share:
 * the MySQL C API interposer (interpose_db.c) and the wire-protocol parser
 * (db_wire.c) both render statement parameters as SQL-like text (`1, 'abc',
 * NULL`) for TRACE_DB_EXECUTE events, with the same quoting and limits, so a
 * statement looks the same in a trace whichever way it was captured. The
 * two wire parsers (db_wire.c for MySQL, pg_wire.c for PostgreSQL) walk a
 * send's iovecs with one cursor (db_iov_take).
 *
 * Rendering writes into a caller-provided buffer: it never allocates and
 * never fails (values that do not fit are cut and marked with `...`).
 * Statement text and parameters are kept whole up to the recording's
 * --db-max-statement (db_statement_cap); what is longer is cut there and
 * the event says so (TRACE_F_CUT with the real lengths): a parameter list
 * longer than the small per-thread buffer is rendered again into an
 * anonymous mapping of the cap, unmapped after (raw syscalls, no malloc). */
#ifndef PREPLAY_TRACER_DB_COMMON_H
#define PREPLAY_TRACER_DB_COMMON_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

#include "trace_event.h"
#include "tracer_state.h"
#include "tracer_strings.h"

/* Where a wire parser (db_wire.c, pg_wire.c) stands in the bytes of one
 * send or receive. */
struct db_iov_cursor {
    const struct iovec *iov;
    int iovcnt, vi;
    size_t voff;
};

/* Moves the cursor over n bytes, copying the first `room` of them to dst
 * (NULL: none). Returns the bytes copied. */
static inline __attribute__((always_inline)) size_t db_iov_take(struct db_iov_cursor *cur, size_t n,
                                                                unsigned char *dst, size_t room)
{
    size_t kept = 0;
    while (n && cur->vi < cur->iovcnt) {
        size_t in = cur->iov[cur->vi].iov_len - cur->voff;
        size_t s = n < in ? n : in;
        if (dst && kept < room) {
            size_t cp = room - kept < s ? room - kept : s;
            memcpy(dst + kept, (const unsigned char *)cur->iov[cur->vi].iov_base + cur->voff, cp);
            kept += cp;
        }
        cur->voff += s;
        n -= s;
        if (cur->voff == cur->iov[cur->vi].iov_len) {
            cur->vi++;
            cur->voff = 0;
        }
    }
    return kept;
}

/* The per-thread buffer a parameter list is rendered into first: longer
 * lists are rendered again into a mapping of the cap. */
#define DB_PARAMS_TEXT_MAX 4096

/* MySQL column / parameter types (enum enum_field_types, the same numbers
 * in MariaDB Connector/C, libmysqlclient and on the wire). */
enum db_field_type {
    DB_TYPE_DECIMAL = 0,
    DB_TYPE_TINY = 1,
    DB_TYPE_SHORT = 2,
    DB_TYPE_LONG = 3,
    DB_TYPE_FLOAT = 4,
    DB_TYPE_DOUBLE = 5,
    DB_TYPE_NULL = 6,
    DB_TYPE_TIMESTAMP = 7,
    DB_TYPE_LONGLONG = 8,
    DB_TYPE_INT24 = 9,
    DB_TYPE_DATE = 10,
    DB_TYPE_TIME = 11,
    DB_TYPE_DATETIME = 12,
    DB_TYPE_YEAR = 13,
    DB_TYPE_NEWDATE = 14,
    DB_TYPE_VARCHAR = 15,
    DB_TYPE_BIT = 16,
    DB_TYPE_JSON = 245,
    DB_TYPE_NEWDECIMAL = 246,
    DB_TYPE_ENUM = 247,
    DB_TYPE_SET = 248,
    DB_TYPE_TINY_BLOB = 249,
    DB_TYPE_MEDIUM_BLOB = 250,
    DB_TYPE_LONG_BLOB = 251,
    DB_TYPE_BLOB = 252,
    DB_TYPE_VAR_STRING = 253,
    DB_TYPE_STRING = 254,
    DB_TYPE_GEOMETRY = 255,
};

struct db_render {
    char *buf;
    size_t cap; /* bytes of buf usable for text (one more holds the NUL) */
    size_t len;
    unsigned count; /* values rendered so far */
    int full;       /* the list was cut: later values are dropped */
    size_t want;    /* the length the whole list would have */
    unsigned seen;  /* values given so far (rendered or not) */
};

/* What of a DB event was cut at the cap: the real lengths (0: whole). */
struct db_cut {
    uint64_t query_len, params_len;
};

/* The recording's --db-max-statement in bytes (the default when the region
 * does not say). Inline: every statement asks. */
static inline size_t db_statement_cap(void)
{
    uint32_t cap = tracer_global.control ? tracer_global.control->db_max_statement : 0;
    if (!cap)
        return TRACER_DB_STATEMENT_DEFAULT;
    if (cap < TRACER_DB_STATEMENT_MIN)
        return TRACER_DB_STATEMENT_MIN;
    return cap < TRACER_DB_STATEMENT_MAX ? cap : TRACER_DB_STATEMENT_MAX;
}

/* db_intern_statement for a text that is cut or could not be written. */
uint32_t db_intern_statement_cut(const char *s, size_t len, uint64_t *query_len);

/* Interns a statement's text, whole up to the cap: its string id; when it
 * is longer, its first cap bytes and *query_len = len (else untouched).
 * A text that could not be written (the collector stopped draining, --drop
 * and ring 0 full) gets id 0 and counts as cut too. Inline: a short text
 * that interns costs one test more than tracer_intern. */
static inline uint32_t db_intern_statement(const char *s, size_t len, uint64_t *query_len)
{
    if (len <= db_statement_cap()) {
        uint32_t id = tracer_intern(s, len);
        if (id || !len)
            return id;
    }
    return db_intern_statement_cut(s, len, query_len);
}

/* Renders a parameter list with fn(r, ctx) and interns it: first into a
 * per-thread buffer of DB_PARAMS_TEXT_MAX, and again into a mapping of the
 * cap when that was too small. fn must render the same list each time.
 * When the list is cut (longer than the cap, or fn said db_render_cut),
 * *params_len is the length it would have had, at least (else untouched). */
/* Takes slot i of a wire parser's per-descriptor owner table for thread t
 * (spinning, then yielding, while another thread holds it). Returns 0, or
 * -1 when t holds it already: a signal handler's DB I/O inside our own
 * parsing, which cannot wait for itself. Shared by db_wire.c and
 * pg_wire.c; release with an atomic store of 0. */
int db_fd_slot_lock(_Atomic uint32_t *owner, const struct tracer_thread *t);

typedef void (*db_render_fn)(struct db_render *r, const void *ctx);
uint32_t db_intern_params(db_render_fn fn, const void *ctx, uint64_t *params_len);

/* Marks ev (a DB event) with what was cut, if anything. */
static inline void db_cut_apply(struct trace_event *ev, const struct db_cut *cut)
{
    if (!cut || (!cut->query_len && !cut->params_len))
        return;
    ev->flags |= TRACE_F_CUT;
    ev->u.db.query_len = cut->query_len;
    ev->u.db.params_len = cut->params_len;
}

void db_render_init(struct db_render *r, char *buf, size_t bufsize);
void db_render_null(struct db_render *r);
void db_render_int(struct db_render *r, int64_t v);
void db_render_uint(struct db_render *r, uint64_t v);
void db_render_double(struct db_render *r, double v, int is_float);
/* Text or bytes: quoted with '' doubling; bytes outside printable ASCII and
 * UTF-8 turn the value into X'hex'. `quoted` 0 renders digits as they are
 * (DECIMAL values arrive as text); 2 renders X'hex' whatever the bytes (a
 * binary value of a type the renderer cannot read). */
void db_render_text(struct db_render *r, const char *s, size_t len, int quoted);
/* Values the caller cannot give (not kept, or beyond the bytes it has):
 * the list ends with `...` and counts as cut. */
void db_render_cut(struct db_render *r);
/* DATE / DATETIME / TIMESTAMP / TIME (for TIME, days are folded into hour). */
void db_render_temporal(struct db_render *r, int type, unsigned year, unsigned month, unsigned day,
                        unsigned hour, unsigned minute, unsigned second, unsigned long micro,
                        int negative);

#endif
