/* db_wire.h - the MySQL wire-protocol parser (db_wire.c): DB events from
 * the bytes a process exchanges with a DB endpoint, for clients that speak
 * the protocol themselves.
 *
 * It reads whatever bytes the app moves: it must never read past them,
 * never allocate, keep errno, and never record a query the C API
 * interposer records already (tracer_in_db_capi). */
#ifndef PREPLAY_TRACER_DB_WIRE_H
#define PREPLAY_TRACER_DB_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "tracer_state.h"

struct tracer_fd;

/* Set while a MySQL C API wrapper runs, so the wire parser does not count
 * the same query twice. */
extern __thread int tracer_in_db_capi;

/* Parsing of bytes sent on / received from a DB connection: commands are
 * recorded when their answer arrives. tls_plaintext: the bytes are the
 * plaintext of a TLS connection (from the SSL_write/SSL_read wrappers),
 * not what crossed the socket.
 *
 * Parses what a send is about to put on DB connection fd, before it goes
 * out: another thread may read the answer before this one returns from the
 * send (Connector/J: a driver thread reads a batch's answers while the
 * calling thread is still sending it), and the answer must find its
 * command known. Returns the bytes parsed (size), 0 when fd is no DB
 * connection or the bytes are not the ones the parser reads
 * (tls_plaintext: SSL_write's plaintext, else the socket's bytes; nothing
 * done). Keeps errno. */
size_t tracer_db_wire_before_send(struct tracer_thread *t, int fd, const struct iovec *iov,
                                  int iovcnt, size_t size, uint64_t begin_ns, int tls_plaintext);

/* After the send tracer_db_wire_before_send parsed `parsed` bytes of:
 * `result` (bytes sent, or -1) short of them means the app will send the
 * rest again, and those bytes must not be parsed twice. */
void tracer_db_wire_after_send(int fd, size_t parsed, int64_t result);

/* A send the wrapper did not parse before it went out (the process had no
 * DB connection yet when the call began): parsed after it, as socket bytes
 * (TLS plaintext is always parsed before: tracer_db_wire_before_send). */
void tracer_db_wire_sent(struct tracer_thread *t, struct tracer_fd *f, const struct iovec *iov,
                         int iovcnt, size_t nbytes, uint64_t begin_ns, uint64_t end_ns);
void tracer_db_wire_received(struct tracer_thread *t, struct tracer_fd *f, const struct iovec *iov,
                             int iovcnt, size_t nbytes, uint64_t begin_ns, uint64_t end_ns,
                             int tls_plaintext);

struct db_cut;
/* Writes a wire-parsed DB event (of either dialect, enum
 * trace_db_dialect) for the thread `tid` that sent the command: when
 * another thread t read the answer, the event goes into t's records but is
 * the sender's, with none of t's CPU time. */
void tracer_db_wire_event(struct tracer_thread *t, uint32_t tid, uint8_t dialect, uint64_t conn_id,
                          uint8_t op, int32_t error, uint32_t query_id, uint32_t params_id,
                          uint64_t stmt_id, uint64_t rows, uint64_t bytes, uint64_t begin,
                          uint64_t end, const struct db_cut *cut);

/* In a fork child: no thread of the parent holds a DB connection's parser
 * state any more. */
void tracer_db_wire_after_fork(void);

#endif
