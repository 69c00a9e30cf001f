/* db_common.c - the parameter renderer both DB capture paths share
 * (db_common.h): the MySQL C API interposer (interpose_db.c) and the
 * wire-protocol parser (db_wire.c) render a statement's parameters as the
 * same SQL-like text.
 *
 * Writes only into the caller's buffer: never allocates, never fails, and
 * never writes past cap + 1 bytes (values that do not fit are cut and
 * marked with `...`). The interning helpers map a buffer of the cap for a
 * long parameter list with a raw mmap and unmap it before they return. */
#include "db_common.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tracer_state.h"
#include "tracer_strings.h"

uint32_t db_intern_statement_cut(const char *s, size_t len, uint64_t *query_len)
{
    size_t cap = db_statement_cap();
    size_t real = len;
    if (len > cap) {
        *query_len = len;
        len = cap;
    }
    uint32_t id = tracer_intern(s, len);
    if (!id && len && tracer_global.active)
        *query_len = real; /* the text could not be written: lost, not whole */
    return id;
}

uint32_t db_intern_params(db_render_fn fn, const void *ctx, uint64_t *params_len)
{
    static __thread char text[DB_PARAMS_TEXT_MAX + 1];
    size_t cap = db_statement_cap();
    struct db_render r;
    db_render_init(&r, text, cap < DB_PARAMS_TEXT_MAX ? cap + 1 : sizeof text);
    fn(&r, ctx);
    if (r.full && cap > DB_PARAMS_TEXT_MAX) {
        /* too long for the small buffer: again into one of the cap */
        int saved = errno;
        void *big = (void *)syscall(SYS_mmap, NULL, cap + 1, PROT_READ | PROT_WRITE,
                                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (big != MAP_FAILED) {
            struct db_render rb;
            db_render_init(&rb, big, cap + 1);
            fn(&rb, ctx);
            uint32_t id = tracer_intern(big, rb.len);
            if (rb.full || (!id && rb.len && tracer_global.active))
                *params_len = rb.want ? rb.want : 1;
            syscall(SYS_munmap, big, cap + 1);
            errno = saved;
            return id;
        }
        errno = saved;
    }
    uint32_t id = tracer_intern(text, r.len);
    if (r.full || (!id && r.len && tracer_global.active))
        *params_len = r.want ? r.want : 1;
    return id;
}

void db_render_init(struct db_render *r, char *buf, size_t bufsize)
{
    r->buf = buf;
    r->cap = bufsize ? bufsize - 1 : 0;
    r->len = 0;
    r->count = 0;
    r->full = 0;
    r->want = 0;
    r->seen = 0;
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

/* Starts a value whose whole rendering is `n` bytes: the separator, or
 * "..." once the list is cut. Returns 0 when the value must be dropped. */
static int db_render_begin(struct db_render *r, size_t n)
{
    r->want += (r->seen++ ? 2 : 0) + n;
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

/* Room a value may take: the rest of the buffer, less room for ", ...". */
static size_t db_render_room(const struct db_render *r)
{
    size_t left = r->cap - r->len;
    return left > 5 ? left - 5 : 0;
}

void db_render_null(struct db_render *r)
{
    if (db_render_begin(r, 4))
        db_render_put(r, "NULL", 4);
}

void db_render_int(struct db_render *r, int64_t v)
{
    char tmp[32];
    int n = snprintf(tmp, sizeof tmp, "%lld", (long long)v);
    if (db_render_begin(r, (size_t)n))
        db_render_put(r, tmp, (size_t)n);
}

void db_render_uint(struct db_render *r, uint64_t v)
{
    char tmp[32];
    int n = snprintf(tmp, sizeof tmp, "%llu", (unsigned long long)v);
    if (db_render_begin(r, (size_t)n))
        db_render_put(r, tmp, (size_t)n);
}

void db_render_double(struct db_render *r, double v, int is_float)
{
    char tmp[48];
    int n = snprintf(tmp, sizeof tmp, is_float ? "%.9g" : "%.17g", v);
    if (db_render_begin(r, (size_t)n))
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

/* The length of a quoted value rendered whole: 'text' with '' doubling,
 * or X'hex'. */
static size_t db_render_quoted_len(const char *s, size_t len, int text)
{
    if (!text)
        return 3 + 2 * len;
    size_t n = 2 + len;
    for (const char *q = s; (q = memchr(q, '\'', len - (size_t)(q - s))) != NULL; q++)
        n++;
    return n;
}

void db_render_text(struct db_render *r, const char *s, size_t len, int quoted)
{
    const unsigned char *u = (const unsigned char *)s;
    int text = quoted == 1 && db_render_is_text(u, len);
    if (!db_render_begin(r, quoted ? db_render_quoted_len(s, len, text) : len))
        return;
    size_t room = db_render_room(r);
    if (!quoted) {
        if (len > room)
            r->full = 1; /* cut: the list says so */
        db_render_put(r, s, len < room ? len : room);
        return;
    }
    static const char hex[] = "0123456789ABCDEF";
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
    if (i < len) {
        db_render_put(r, "...", 3);
        r->full = 1; /* a value cut: the list is */
    }
}

void db_render_cut(struct db_render *r)
{
    db_render_text(r, "...", 3, 0);
    r->full = 1;
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
    size_t len = (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1;
    if (db_render_begin(r, len))
        db_render_put(r, tmp, len);
}

int db_fd_slot_lock(_Atomic uint32_t *owner, const struct tracer_thread *t)
{
    uint32_t self = t->tid ? t->tid : 1;
    for (int spins = 0;; spins++) {
        uint32_t expect = 0;
        if (atomic_compare_exchange_weak_explicit(owner, &expect, self, memory_order_acquire,
                                                  memory_order_relaxed))
            return 0;
        if (expect == self)
            return -1;
        if (spins > 100)
            syscall(SYS_sched_yield);
    }
}
