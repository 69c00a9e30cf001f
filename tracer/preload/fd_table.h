/* fd_table.h - what the tracer knows about each descriptor of the process:
 * file identity and our tracked offset and size, or the connection behind a
 * socket. Indexed by fd in a lazily-touched mmap'd array; descriptors beyond
 * TRACER_FD_MAX are traced without identity.
 *
 * Offsets and sizes are tracked from the calls we see (an lseek or fstat per
 * event would cost a syscall). Descriptors dup'd in this process share one
 * open file description, hence one offset: they are linked in a ring and an
 * update of one is copied to all (tracer_fd_sync_shared). What stays a
 * documented limit: descriptors shared with another process (inherited
 * across fork, passed over SCM_RIGHTS) and independent opens of the same
 * file do not see each other's offsets and sizes. Descriptors we never saw
 * being created are classified on first use with one fstat. */
#ifndef PREPLAY_TRACER_FD_TABLE_H
#define PREPLAY_TRACER_FD_TABLE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define TRACER_FD_MAX 65536

enum tracer_fd_kind {
    TRACER_FD_UNKNOWN = 0, /* not classified yet */
    TRACER_FD_FILE,        /* regular file or block device */
    TRACER_FD_SOCKET,
    TRACER_FD_OTHER, /* pipe, FIFO, char device, eventfd... */
};

#define TRACER_FDF_ACCEPTED 0x01   /* the process accepted this connection */
#define TRACER_FDF_DB 0x02         /* peer is a database endpoint */
#define TRACER_FDF_APPEND 0x04     /* opened O_APPEND */
#define TRACER_FDF_EXPECT_REQ 0x08 /* next bytes received start a request */
#define TRACER_FDF_IDENT_DONE 0x10 /* CONN identity emitted */
#define TRACER_FDF_LISTENING 0x20
/* datagram socket with no connected peer: each call's own address (sendto,
 * recvfrom, msg_name) names its peer (io_events.c, datagram peers) */
#define TRACER_FDF_PEERLESS 0x40
/* just opened, its OPEN record deferred until its identity is known
 * (tracer_open_settle); kind stays UNKNOWN until then */
#define TRACER_FDF_OPEN_PENDING 0x80
/* an IPv4/IPv6 socket whose ports are all outside `record --port`: its
 * connection is not traced (io_events.c, tracer_conn_ensure) */
#define TRACER_FDF_NET_FILTERED 0x100
/* an accepted connection that opened with a TLS handshake record: its
 * request lines are read from what SSL_read returns (interpose_tls.c),
 * not from the encrypted bytes (io_events.c, request labels) */
#define TRACER_FDF_TLS 0x200
/* an accepted connection that opened with the HTTP/2 client preface: what
 * it receives goes to its HTTP/2 parser (h2, h2_label.c) for the labels */
#define TRACER_FDF_H2 0x400
/* a stream connection the process connect()ed, not known as a DB
 * connection by its peer's port or socket name: its first bytes received
 * (gathered in label_buf) say whether the server is MySQL/MariaDB
 * (io_events.c, tracer_db_probe; db_greeting.c) */
#define TRACER_FDF_DB_PROBE 0x800
/* ... and its first send was a PostgreSQL StartupMessage (resp. an SSL or
 * GSS encryption request, one byte answers it): its first bytes received
 * say whether the server is PostgreSQL (pg_greeting.c) */
#define TRACER_FDF_PG_STARTUP 0x1000
#define TRACER_FDF_PG_ENCREQ 0x2000
/* ... and it sent something that no PostgreSQL client sends first */
#define TRACER_FDF_PG_NOT 0x4000

struct tracer_h2;

#define TRACER_DB_DIALECT_UNKNOWN 0xff

struct tracer_fd {
    uint8_t kind;
    uint8_t proto; /* enum trace_conn_proto for sockets */
    uint16_t flags;
    uint32_t path_id;
    uint64_t dev, ino;
    int64_t offset;
    uint64_t size;
    uint64_t conn_id;
    /* the fields above are the descriptor's identity (what a CLOSE record
     * needs); below, the state of parsing what goes through it */
    /* start of a request being received (HTTP line); on a connection the
     * process made, with TRACER_FDF_DB_PROBE: its first bytes received */
    char label_buf[96];
    uint8_t label_len; /* bytes of label_buf gathered */
    /* MySQL wire parsing state for DB connections (db_wire.c): framing of
     * what the client sends, and bytes parsed before a send that did not
     * send them (the app sends them again) */
    uint32_t db_pkt_remaining;
    uint8_t db_hdr_have;
    uint8_t db_hdr[4];
    uint32_t db_skip;
    /* TRACER_FDF_DB: the server's language (enum trace_db_dialect), and
     * TRACER_DB_DIALECT_UNKNOWN until a port- or socket-named connection's
     * first bytes tell (a PostgreSQL client speaks first, a MySQL server
     * does); PostgreSQL: where the conversation stood when the connection
     * became a DB connection (TRACER_PG_INIT_*, pg_wire.h) */
    uint8_t db_dialect;
    uint8_t db_pg_init;
    int32_t dup_next_plus1; /* next fd (+1) sharing the open file description, 0 = none */
    /* with TRACER_FDF_H2: the parser's state, this entry's own (a dup'd
     * entry does not share it; tracer_h2_state_get) */
    struct tracer_h2 *h2;
    uint32_t open_owner; /* with TRACER_FDF_OPEN_PENDING: tid of the thread whose OPEN waits */
};

/* The table once mapped (the hot path's view: NULL until the first
 * tracer_fd_get maps it, which the slow path does). */
extern struct tracer_fd *tracer_fds;
extern _Atomic int tracer_fds_state; /* 0 unmapped, 1 mapping, 2 ready, -1 failed */

/* tracer_fd_get when the table is not mapped yet: maps it. */
struct tracer_fd *tracer_fd_get_mapping(int fd);

/* The leading fields of struct tracer_fd that say what a descriptor is. */
#define TRACER_FD_IDENTITY_BYTES offsetof(struct tracer_fd, label_buf)

/* Entry for fd, or NULL when fd is out of range or the table is
 * unavailable. Inline: several calls per traced I/O. */
static inline struct tracer_fd *tracer_fd_get(int fd)
{
    if ((unsigned)fd >= TRACER_FD_MAX)
        return NULL;
    if (__builtin_expect(atomic_load_explicit(&tracer_fds_state, memory_order_acquire) == 2, 1))
        return &tracer_fds[fd];
    return tracer_fd_get_mapping(fd);
}

/* tracer_fd_get without mapping: the entry when the table is ready. */
static inline struct tracer_fd *tracer_fd_peek(int fd)
{
    if ((unsigned)fd >= TRACER_FD_MAX ||
        atomic_load_explicit(&tracer_fds_state, memory_order_acquire) != 2)
        return NULL;
    return &tracer_fds[fd];
}
/* tracer_fd_classify for an entry still unknown: one fstat. */
struct tracer_fd *tracer_fd_classify_unknown(int fd, struct tracer_fd *f);

/* Entry for fd, classified (one fstat when it was unknown). */
static inline struct tracer_fd *tracer_fd_classify(int fd)
{
    struct tracer_fd *f = tracer_fd_get(fd);
    if (!f || __builtin_expect(f->kind != TRACER_FD_UNKNOWN, 1))
        return f;
    return tracer_fd_classify_unknown(fd, f);
}
/* tracer_fd_classify after a transfer of `done` bytes (a write when
 * `wrote`; at its explicit offset `at`, or -1 when it used and moved the
 * descriptor's offset): an entry classified only now read its offset and
 * size after the transfer, so they are set back to before it (the size
 * estimated for a write that reached the end of the file). A descriptor
 * the process made where we could not see (glibc's internal opens: mkstemp,
 * fopen; a raw syscall) is classified this way at its first transfer. */
struct tracer_fd *tracer_fd_classify_after_unknown(int fd, struct tracer_fd *f, int wrote,
                                                   int64_t at, int64_t done);
static inline struct tracer_fd *tracer_fd_classify_after(int fd, int wrote, int64_t at,
                                                         int64_t done)
{
    struct tracer_fd *f = tracer_fd_get(fd);
    if (!f || __builtin_expect(f->kind != TRACER_FD_UNKNOWN, 1))
        return f;
    return tracer_fd_classify_after_unknown(fd, f, wrote, at, done);
}
/* Forget everything about fd (it was closed). */
void tracer_fd_reset(int fd);
/* Empties an entry, giving its HTTP/2 parser state back. */
void tracer_fd_clear(struct tracer_fd *f);
/* A state for an HTTP/2 parser (h2_label.c), to be initialized; NULL when
 * no memory can be mapped. tracer_fd_clear gives it back. */
struct tracer_h2 *tracer_h2_state_get(void);
/* In a fork child, once it is registered: the sockets it inherited write
 * their CONN identity again at their first use (the CONN records are in the
 * parent's trace), with op ACCEPT for one the parent accepted, as the child
 * now serves it; the files it inherited have their paths interned again in
 * its own string table. */
void tracer_fd_after_fork(void);
/* Record a regular file just opened; fills identity and size with fstat. */
struct tracer_fd *tracer_fd_opened_file(int fd, uint32_t path_id, int append);
/* The same without the fstat: the entry stays unclassified and marked
 * TRACER_FDF_OPEN_PENDING, owned by thread `owner`, until
 * tracer_fd_settle_open. */
struct tracer_fd *tracer_fd_opened_deferred(int fd, uint32_t path_id, int append, uint32_t owner);
struct stat;
/* Completes the deferred open of thread `owner` from `st`, the fstat of
 * the descriptor (NULL: it failed), when nothing classified it meanwhile,
 * O_TRUNC (`trunc`) making its size 0. NULL when the entry is no longer
 * that open's: another thread closed the descriptor (and maybe opened
 * another file on it), or it was closed where we could not see
 * (close_range, a raw syscall: the fstat failed). */
struct tracer_fd *tracer_fd_settle_open(int fd, const struct stat *st, int trunc, uint32_t owner);
/* Copy state for dup/dup2/dup3/F_DUPFD. */
void tracer_fd_dup(int oldfd, int newfd);
/* Copies f's offset and size to every descriptor dup'd from it. */
void tracer_fd_sync_shared(struct tracer_fd *f);

#endif
