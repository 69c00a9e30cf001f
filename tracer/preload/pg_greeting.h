/* pg_greeting.h - is a connection the process made talking to a
 * PostgreSQL server (pg_greeting.c)? The client speaks first: a
 * StartupMessage (protocol 3.0), or an SSLRequest / GSSENCRequest the
 * server answers with one byte; the server then answers the StartupMessage
 * with an Authentication message, or an ErrorResponse when it refuses the
 * client. What io_events.c asks of a client connection not known as a DB
 * connection by its port or socket name, as it asks db_greeting.c for
 * MySQL's greeting.
 *
 * It reads bytes a client or server sent: it must never read past them,
 * never allocate, and never say YES to what another protocol (HTTP, Redis,
 * MySQL, TLS) or noise sends. */
#ifndef PREPLAY_TRACER_PG_GREETING_H
#define PREPLAY_TRACER_PG_GREETING_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* What a client's first message says (tracer_pg_opening). */
enum {
    TRACER_PG_OPEN_NO = 0,  /* not a PostgreSQL frontend's opening */
    TRACER_PG_OPEN_STARTUP, /* StartupMessage, protocol 3.x */
    TRACER_PG_OPEN_SSL,     /* SSLRequest: one byte answers, 'S' or 'N' */
    TRACER_PG_OPEN_GSS,     /* GSSENCRequest: one byte answers, 'G' or 'N' */
};
#define TRACER_PG_CODE_SSL 80877103u
#define TRACER_PG_CODE_GSS 80877104u
#define TRACER_PG_CODE_CANCEL 80877102u

/* The first n bytes of what a client sent first on a connection. Needs 8
 * bytes (fewer: NO). */
int tracer_pg_opening(const unsigned char *p, size_t n);

/* The verdicts of tracer_pg_answer, db_greeting.h's values. */
enum {
    TRACER_PG_ANSWER_NO = -1,
    TRACER_PG_ANSWER_MORE = 0, /* so far like one: needs more bytes (n < cap) */
    TRACER_PG_ANSWER_YES = 1,
};

/* What the first n bytes a server sent after a StartupMessage say: an
 * Authentication request ('R'), an ErrorResponse ('E') or a
 * NegotiateProtocolVersion ('v'). cap: the most bytes the caller can
 * gather; MORE implies n < cap. */
int tracer_pg_answer(const unsigned char *p, size_t n, size_t cap);

/* Are the n bytes in iov (what one send of a client carried) whole
 * messages a started PostgreSQL frontend sends, back to back: a known
 * type byte and a length of at least 4 each, ending exactly at n? What
 * tells the dialect of a DB connection named by --db-port/--db-socket
 * whose opening came before tracing did (`record --off`): a MySQL
 * packet's little-endian length never frames like this (its 4-byte
 * big-endian reading is under 4 for a short packet and 16 MB or more for
 * a long one). 1 or 0; at most PG_FRONTEND_RUN_MAX messages. */
int tracer_pg_frontend_run(const struct iovec *iov, int iovcnt, size_t n);

static inline uint32_t tracer_pg_be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

#endif
