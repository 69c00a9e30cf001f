/* pg_wire.h - the PostgreSQL frontend/backend protocol parser (pg_wire.c):
 * DB events from the bytes a process exchanges with a PostgreSQL server,
 * whatever client library speaks it (libpq's psql, pgbench and psycopg2,
 * or a driver of its own). Called through db_wire.c's entry points for a
 * DB connection whose dialect is PostgreSQL (tracer_fd.db_dialect).
 *
 * It reads whatever bytes the app moves: it must never read past them,
 * never allocate (anonymous mappings through raw syscalls only, as
 * db_wire.c), and keep errno. */
#ifndef PREPLAY_TRACER_PG_WIRE_H
#define PREPLAY_TRACER_PG_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "tracer_state.h"

struct tracer_fd;

/* tracer_fd.db_pg_init: where the conversation stood when the descriptor
 * became a PostgreSQL DB connection. */
#define TRACER_PG_INIT_STARTED 0x1 /* the StartupMessage went out already */
#define TRACER_PG_INIT_TLS 0x2     /* the server accepted SSL: plaintext only */

/* Bytes the client sends (parsed before they go out, or after: sent),
 * bytes it receives. tls_plaintext as in db_wire.h. before_send returns
 * the bytes parsed (size), 0 when this call's view is not the parser's. */
size_t tracer_pg_wire_before_send(struct tracer_thread *t, struct tracer_fd *f,
                                  const struct iovec *iov, int iovcnt, size_t size,
                                  uint64_t begin_ns, int tls_plaintext);
void tracer_pg_wire_sent(struct tracer_thread *t, struct tracer_fd *f, const struct iovec *iov,
                         int iovcnt, size_t nbytes, uint64_t begin_ns, uint64_t end_ns);
void tracer_pg_wire_received(struct tracer_thread *t, struct tracer_fd *f, const struct iovec *iov,
                             int iovcnt, size_t nbytes, uint64_t end_ns, int tls_plaintext);

/* In a fork child: no thread of the parent holds a connection's state. */
void tracer_pg_wire_after_fork(void);

#endif
