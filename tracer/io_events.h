/* io_events.h - turns one completed read/write-like call into a FILE or NET
 * event, shared by every data-path interposer (read, recv, readv, pread,
 * sendmsg, ...), so the file/socket decision, offset tracking, connection
 * identity, request labels and DB wire parsing are written once. */
#ifndef PREPLAY_TRACER_IO_EVENTS_H
#define PREPLAY_TRACER_IO_EVENTS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "fd_table.h"
#include "tracer_core.h"

enum tracer_io_dir { TRACER_IO_IN = 0, TRACER_IO_OUT = 1 };

struct tracer_io {
    int fd;
    enum tracer_io_dir dir;
    int64_t explicit_offset; /* pread/pwrite offset, or -1 to use the tracked one */
    uint64_t size;           /* requested bytes */
    int64_t result;          /* bytes moved, or -errno */
    uint32_t msg_flags;
    uint32_t nmsgs;
    uint16_t event_flags;    /* TRACE_F_* added to the event (e.g. TRACE_F_STDIO) */
    const struct iovec *iov; /* the data (for labels / DB parsing); may be NULL */
    int iovcnt;
    uint64_t begin_ns, end_ns;
};

/* Records the call described by io (thread t has already begun the event). */
void tracer_io_record(struct tracer_thread *t, const struct tracer_io *io);

/* Emits the CONN event for a socket (identity via getsockname/getpeername)
 * if not done yet, and returns its conn_id (0 if not a socket). */
uint64_t tracer_conn_ensure(struct tracer_thread *t, int fd, struct tracer_fd *f, uint8_t op,
                            uint64_t begin_ns, uint64_t end_ns, int64_t result);

/* A CONN event for a connection that already has its identity (close,
 * shutdown): written to the process ring like every CONN event. */
void tracer_conn_lifecycle(struct tracer_thread *t, int fd, uint64_t conn_id, uint8_t proto,
                           uint8_t op, int64_t result, uint64_t begin_ns, uint64_t end_ns);

/* A record with no data (fsync, close, ...) on a descriptor. */
void tracer_file_simple(struct tracer_thread *t, int fd, struct tracer_fd *f, uint8_t op,
                        int64_t result, uint64_t begin_ns, uint64_t end_ns);

/* MySQL wire-protocol parsing of bytes sent on / received from a DB
 * connection (db_wire.c): commands are recorded when their answer arrives. */
void tracer_db_wire_sent(struct tracer_thread *t, struct tracer_fd *f, const struct iovec *iov,
                         int iovcnt, size_t nbytes, uint64_t begin_ns, uint64_t end_ns);
void tracer_db_wire_received(struct tracer_thread *t, struct tracer_fd *f, const struct iovec *iov,
                             int iovcnt, size_t nbytes, uint64_t begin_ns, uint64_t end_ns);

#endif
