/* io_events.h - turns one completed read/write-like call into a FILE or NET
 * event, shared by every data-path interposer (read, recv, readv, pread,
 * sendmsg, ...), so the file/socket decision, offset tracking, connection
 * identity, request labels and DB wire parsing are written once. */
#ifndef PREPLAY_TRACER_IO_EVENTS_H
#define PREPLAY_TRACER_IO_EVENTS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "db_wire.h"
#include "fd_table.h"
#include "interpose_file.h"
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
    /* a datagram's own peer address (sendto's, recvfrom's, msg_name), or NULL */
    const struct sockaddr *peer;
    socklen_t peer_len;
    uint64_t begin_ns, end_ns;
    /* DB connection: tracer_db_wire_before_send parsed the bytes already */
    int db_parsed;
};

/* --path-prefix: file-family events on a descriptor with no path under
 * the prefix (a file or device outside it, a pipe, a descriptor inherited
 * without a path) are left out. Sockets are never filtered by path. */
static inline int tracer_path_filtered(const struct tracer_fd *f)
{
    return tracer_global.path_filter_set && f &&
           (f->kind == TRACER_FD_FILE || f->kind == TRACER_FD_OTHER) && !f->path_id;
}

/* Forgets the datagram peers' connection ids (a fork child: its trace has
 * none of its parent's CONN definitions). */
void tracer_datagram_peers_reset(void);

/* Records the call described by io (thread t has already begun the event). */
void tracer_io_record(struct tracer_thread *t, const struct tracer_io *io);

/* n bytes of plaintext an SSL_read returned at ring time `now` on the TLS
 * connection f (descriptor fd), for which tracer_tls_wants_label holds:
 * they give its LABEL (interpose_tls.c). */
void tracer_tls_label(struct tracer_thread *t, struct tracer_fd *f, int fd, const void *buf,
                      size_t n, uint64_t now);

_Static_assert(sizeof(struct trace_file_event) == 64 &&
                   offsetof(struct trace_file_event, fd2) == 60,
               "tracer_io_fast stores every field of a FILE record: update it with the struct");
_Static_assert(offsetof(struct trace_net_event, nmsgs) == 32 &&
                   offsetof(struct trace_net_event, queued_us) == 36 &&
                   sizeof(struct trace_net_event) == 40,
               "tracer_io_fast stores every field of a NET record: update it with the struct");

/* The common transfers, written inline with no call: a successful read or
 * write of a descriptor already known as a file, pipe or character device,
 * or as a socket whose identity was written and that needs no request label
 * or DB parsing now, with no stacks wanted and room in the ring. Returns 1
 * when the record was written and the CPU mark moved to end_ns (the event
 * is over), 0 when the caller must take tracer_io_record (which covers
 * everything, these cases included, and writes the same record). Touches
 * neither errno nor any lock. */
static inline __attribute__((always_inline)) int
tracer_io_fast(struct tracer_thread *t, int fd, enum tracer_io_dir dir, int64_t explicit_offset,
               uint64_t size, int64_t result, uint32_t msg_flags, uint32_t nmsgs, uint64_t begin_ns,
               uint64_t end_ns)
{
    struct tracer_fd *f = tracer_fd_peek(fd);
    if (TRACER_UNLIKELY(result < 0 || !f))
        return 0;
    if (TRACER_UNLIKELY(tracer_global.stack_depth))
        return 0;
    struct trace_event *ev;
    uint64_t head;
    if (f->kind == TRACER_FD_SOCKET) {
        /* the first transfer writes the identity; request starts, DB
         * connections, a client connection's first bytes received (a DB
         * server's greeting?) and its first send until one was looked at
         * (a PostgreSQL client's StartupMessage?) take the general path */
        if (TRACER_UNLIKELY(
                (f->flags & (TRACER_FDF_IDENT_DONE | TRACER_FDF_DB | TRACER_FDF_PEERLESS |
                             TRACER_FDF_NET_FILTERED)) != TRACER_FDF_IDENT_DONE ||
                (dir == TRACER_IO_IN &&
                 (f->flags & (TRACER_FDF_EXPECT_REQ | TRACER_FDF_DB_PROBE))) ||
                (f->flags & (TRACER_FDF_DB_PROBE | TRACER_FDF_PG_STARTUP | TRACER_FDF_PG_ENCREQ |
                             TRACER_FDF_PG_NOT)) == TRACER_FDF_DB_PROBE ||
                !(tracer_global.only_mask & TRACER_ONLY_NET)))
            return 0;
        enum { NEED = TRACER_EVENT_RECORD_BYTES(net) };
        ev = tracer_event_reserve_fast(t, NEED, t->pending_cpu, &head);
        if (TRACER_UNLIKELY(!ev))
            return 0;
        head += NEED;
        t->pending_cpu = 0;
        ev->type = TRACE_EV_NET;
        ev->op = dir == TRACER_IO_OUT ? TRACE_NET_SEND : TRACE_NET_RECV;
        ev->flags = (msg_flags & MSG_MORE) ? TRACE_F_MSG_MORE : 0;
        /* every byte of the record is stored (no memset: field stores are
         * cheaper than its call or rep-stos); the struct's tail padding too */
        memset((char *)&ev->u.net.nmsgs, 0,
               sizeof ev->u.net - offsetof(struct trace_net_event, nmsgs));
        ev->u.net.fd = fd;
        ev->u.net.conn_id = f->conn_id;
        ev->u.net.size = size;
        ev->u.net.result = result;
        ev->u.net.msg_flags = msg_flags;
        ev->u.net.nmsgs = nmsgs;
        if (dir == TRACER_IO_OUT && (f->flags & TRACER_FDF_ACCEPTED) && result > 0) {
            f->flags |= TRACER_FDF_EXPECT_REQ; /* the next bytes in start a request */
            f->label_len = 0;
        }
    } else if (f->kind == TRACER_FD_FILE || f->kind == TRACER_FD_OTHER) {
        if (TRACER_UNLIKELY(!(tracer_global.only_mask & TRACER_ONLY_FILE) || f->dup_next_plus1 ||
                            tracer_path_filtered(f)))
            return 0;
        enum { NEED = TRACER_EVENT_RECORD_BYTES(file) };
        ev = tracer_event_reserve_fast(t, NEED, t->pending_cpu, &head);
        if (TRACER_UNLIKELY(!ev))
            return 0;
        head += NEED;
        t->pending_cpu = 0;
        ev->type = TRACE_EV_FILE;
        ev->flags = 0;
        struct trace_file_event *fe = &ev->u.file;
        fe->open_flags = 0;
        fe->fd2 = -1;
        fe->fd = fd;
        fe->size = size;
        fe->result = result;
        fe->dev = f->dev;
        fe->ino = f->ino;
        fe->path_id = f->path_id;
        fe->file_size = f->size;
        int64_t off = explicit_offset;
        if (off >= 0) {
            ev->op = dir == TRACER_IO_OUT ? TRACE_FILE_PWRITE : TRACE_FILE_PREAD;
        } else {
            ev->op = dir == TRACER_IO_OUT ? TRACE_FILE_WRITE : TRACE_FILE_READ;
            if (f->kind == TRACER_FD_FILE) {
                if (dir == TRACER_IO_OUT && (f->flags & TRACER_FDF_APPEND))
                    f->offset = (int64_t)f->size;
                off = f->offset;
                f->offset += result;
            }
        }
        if (f->kind == TRACER_FD_FILE) {
            fe->offset = off;
            if (dir == TRACER_IO_OUT && result > 0 && (uint64_t)(off + result) > f->size)
                f->size = (uint64_t)(off + result);
        } else {
            fe->offset = -1;
        }
    } else {
        return 0; /* not classified yet: the general path asks fstat once */
    }
    ev->tid = t->tid;
    ev->ts_ns = begin_ns;
    ev->dur_ns = end_ns > begin_ns ? end_ns - begin_ns : 0;
    memset((char *)&ev->stack_id, 0,
           offsetof(struct trace_event, u) - offsetof(struct trace_event, stack_id));
    tracer_record_publish_fast(t, head, end_ns);
    return 1;
}

/* Emits the CONN event for a socket (identity via getsockname/getpeername)
 * if not done yet, and returns its conn_id (0 if not a socket). With
 * `record --port`, an IPv4/IPv6 connection none of whose ports is listed
 * (nor a DB endpoint's) is marked TRACER_FDF_NET_FILTERED instead: no CONN
 * event, and nothing else is written for it (tracer_net_filtered). */
uint64_t tracer_conn_ensure(struct tracer_thread *t, int fd, struct tracer_fd *f, uint8_t op,
                            uint64_t begin_ns, uint64_t end_ns, int64_t result);
/* The same for connect(): `to` (the address connected to) decides the
 * filter while a non-blocking connect has no peer yet. */
uint64_t tracer_conn_connected(struct tracer_thread *t, int fd, struct tracer_fd *f,
                               uint64_t begin_ns, uint64_t end_ns, int64_t result,
                               const struct sockaddr *to, socklen_t to_len);

/* A socket `record --port` leaves out (its records are not written). */
static inline int tracer_net_filtered(const struct tracer_fd *f)
{
    return f && (f->flags & TRACER_FDF_NET_FILTERED);
}

/* Is f an accepted TLS connection whose next plaintext starts a request,
 * with request labels traced? (the SSL_read wrapper's one test) */
static inline int tracer_tls_wants_label(const struct tracer_fd *f)
{
    return f && f->kind == TRACER_FD_SOCKET && (f->flags & TRACER_FDF_TLS) &&
           (f->flags & (TRACER_FDF_EXPECT_REQ | TRACER_FDF_H2)) && !tracer_net_filtered(f) &&
           (tracer_global.only_mask & TRACER_ONLY_NET);
}

/* A CONN event for a connection that already has its identity (close,
 * shutdown): written to the process ring like every CONN event. */
void tracer_conn_lifecycle(struct tracer_thread *t, int fd, uint64_t conn_id, uint8_t proto,
                           uint8_t op, int64_t result, uint64_t begin_ns, uint64_t end_ns);

/* After dup/dup2/dup3/F_DUPFD returned rc (errno err) for oldfd: the new
 * descriptor shares oldfd's entry (tracer_fd_dup), and when t is tracing
 * files and oldfd is a file, a DUP record says so (fd: oldfd; fd2 and
 * result: the new descriptor, or fd2 -1 and result -errno), so that every
 * CLOSE in a trace pairs with the OPEN or DUP that made its descriptor.
 * A socket's dup writes none: its records name the connection. t may be
 * NULL (not tracing: only the table is kept); else begin is
 * tracer_event_begin's and the event is ended here. */
void tracer_dup_done(struct tracer_thread *t, int oldfd, int rc, int err, uint64_t begin);

/* The thread a dup of fd is recorded for, or NULL. A dup of the calling
 * thread's own open still waiting for its identity (tracer_open_settle)
 * writes no DUP record: taking the identity now would cost an fstat the
 * app's own, coming next, makes unnecessary. */
static inline struct tracer_thread *tracer_dup_enter(int fd)
{
    if (TRACER_UNLIKELY(tracer_tls.open_pending.active) && tracer_tls.open_pending.fd == fd)
        return NULL;
    return tracer_enter(TRACER_ONLY_FILE);
}

/* A FILE record's identity from the descriptor's entry (none when f is
 * NULL): device, inode, path and the size before the operation. */
static inline void tracer_file_identity(struct trace_file_event *fe, const struct tracer_fd *f)
{
    if (f) {
        fe->dev = f->dev;
        fe->ino = f->ino;
        fe->path_id = f->path_id;
        fe->file_size = f->size;
    }
}

/* A record with no data (fsync, close, ...) on a descriptor. */
void tracer_file_simple(struct tracer_thread *t, int fd, struct tracer_fd *f, uint8_t op,
                        int64_t result, uint64_t begin_ns, uint64_t end_ns);

/* A one-element iovec for a wrapper's (buf, n), for struct tracer_io. */
#define TRACER_ONE_IOV(b, n) (&(struct iovec){.iov_base = (void *)(b), .iov_len = (n)})

/* The body of a wrapper of one transfer call (read/write and their kin:
 * TRACER_IO_BODY, interpose_file.c; send/recv and their kin:
 * TRACER_SOCK_BODY, interpose_net.c), on a parameter named fd: realcall
 * makes the call, of type RTYPE; OFFSET is pread/pwrite's or -1; FLAGS,
 * NMSGS, PEER and PEERLEN a socket call's (0, 0, NULL, 0 for the others).
 * The common transfers are recorded by tracer_io_fast, the rest by
 * tracer_io_record. Once the process has a DB connection, an outgoing
 * transfer's bytes go to tracer_db_wire_before_send first (DB_PARSED is
 * what it parsed); otherwise DB_PARSED is a constant 0, and the common
 * path costs one test of a flag. */
#define TRACER_TRANSFER_FINISH(realcall, RTYPE, DIR, OFFSET, SIZE, IOV, IOVCNT, FLAGS, NMSGS,      \
                               PEER, PEERLEN, DB_PARSED)                                           \
    {                                                                                              \
        RTYPE r = realcall;                                                                        \
        uint64_t end = tracer_ring_now();                                                          \
        if (TRACER_UNLIKELY((DB_PARSED)))                                                          \
            tracer_db_wire_after_send(fd, (DB_PARSED), (int64_t)r);                                \
        if (TRACER_LIKELY(tracer_io_fast(t, fd, DIR, (OFFSET), (SIZE), (int64_t)r,                 \
                                         (uint32_t)(FLAGS), (NMSGS), begin, end))) {               \
            return r; /* recorded, CPU mark moved */                                               \
        }                                                                                          \
        int err = errno;                                                                           \
        struct tracer_io io = {.fd = fd,                                                           \
                               .dir = DIR,                                                         \
                               .explicit_offset = (OFFSET),                                        \
                               .size = (SIZE),                                                     \
                               .result = r >= 0 ? (int64_t)r : -err,                               \
                               .msg_flags = (uint32_t)(FLAGS),                                     \
                               .nmsgs = (NMSGS),                                                   \
                               .iov = (IOV),                                                       \
                               .iovcnt = (IOVCNT),                                                 \
                               .peer = (PEER),                                                     \
                               .peer_len = (PEERLEN),                                              \
                               .begin_ns = begin,                                                  \
                               .end_ns = end,                                                      \
                               .db_parsed = (DB_PARSED) != 0};                                     \
        tracer_io_record(t, &io);                                                                  \
        tracer_event_end(t, end);                                                                  \
        errno = err;                                                                               \
        return r;                                                                                  \
    }

#define TRACER_TRANSFER_BODY(realcall, RTYPE, DIR, OFFSET, SIZE, IOV, IOVCNT, FLAGS, NMSGS, PEER,  \
                             PEERLEN)                                                              \
    struct tracer_thread *t = tracer_enter(TRACER_ONLY_FILE | TRACER_ONLY_NET | TRACER_ONLY_DB);   \
    if (!t)                                                                                        \
        return realcall;                                                                           \
    uint64_t begin = tracer_event_begin(t);                                                        \
    if ((DIR) == TRACER_IO_OUT && TRACER_UNLIKELY(tracer_global.db_wire_in_use)) {                 \
        size_t db_parsed = tracer_db_wire_before_send(t, fd, (IOV), (IOVCNT), (SIZE), begin, 0);   \
        TRACER_TRANSFER_FINISH(realcall, RTYPE, DIR, OFFSET, SIZE, IOV, IOVCNT, FLAGS, NMSGS,      \
                               PEER, PEERLEN, db_parsed)                                           \
    }                                                                                              \
    TRACER_TRANSFER_FINISH(realcall, RTYPE, DIR, OFFSET, SIZE, IOV, IOVCNT, FLAGS, NMSGS, PEER,    \
                           PEERLEN, 0)

#endif
