/* db_greeting.h - does a connection's first bytes received come from a
 * MySQL/MariaDB server (db_greeting.c)? The server speaks first: its
 * initial handshake packet (HandshakeV10), or an ERR packet when it refuses
 * the client. What io_events.c asks of each client connection that is not
 * known as a DB connection by its port or socket name.
 *
 * It reads bytes any server sent: it must never read past them, never
 * allocate, and never say YES to what another protocol (HTTP, Redis,
 * PostgreSQL, TLS) or noise sends first. */
#ifndef PREPLAY_TRACER_DB_GREETING_H
#define PREPLAY_TRACER_DB_GREETING_H

#include <stddef.h>

enum {
    TRACER_DB_GREETING_NO = -1,  /* not a MySQL/MariaDB server's first packet */
    TRACER_DB_GREETING_MORE = 0, /* so far like one: needs more bytes (n < cap) */
    TRACER_DB_GREETING_YES = 1,  /* a HandshakeV10 or a refusing ERR packet */
};

/* What the first n bytes a client received on a connection, p[0..n), say.
 * cap: the most bytes the caller can ever gather; a greeting that needs
 * more than cap bytes to be told is NO (so MORE implies n < cap). */
int tracer_db_greeting(const unsigned char *p, size_t n, size_t cap);

#endif
