/* trace_event.h - the decoded form of one trace event: the contract between
 * the tracer (which produces events), the trace writer/reader (which encode
 * them on disk, see FORMAT.md) and every later stage (which consumes them).
 *
 * Identities are interned: a connection is described once by a CONN event
 * (its 4-tuple or AF_UNIX inodes) and later events name it by conn_id; paths,
 * queries, labels and parameters are STRING events and later events name
 * them by string id; stacks likewise by stack id. Ids are per process (per
 * trace file), assigned by the tracer in increasing order starting at 1;
 * 0 means "none". This struct must never hold pointers the tracer's shared
 * memory could not carry, except `data` which the reader/writer own. */
#ifndef PREPLAY_TRACE_EVENT_H
#define PREPLAY_TRACE_EVENT_H

#include <stdint.h>

enum trace_event_type {
    TRACE_EV_NONE = 0,
    TRACE_EV_THREAD_START = 1, /* a traced thread begins (also the main thread) */
    TRACE_EV_THREAD_EXIT = 2,
    TRACE_EV_CPU = 3,     /* on-CPU time of a thread between two non-CPU events */
    TRACE_EV_FILE = 4,    /* a file operation (not on a socket) */
    TRACE_EV_NET = 5,     /* bytes sent or received on a connection */
    TRACE_EV_CONN = 6,    /* connection lifecycle and identity */
    TRACE_EV_SOCKOPT = 7, /* a socket option that changes timing */
    TRACE_EV_LOCK = 8,
    TRACE_EV_DB = 9,
    TRACE_EV_LABEL = 10,   /* request label (e.g. "GET /cart") seen on a connection */
    TRACE_EV_LOSS = 11,    /* events the tracer or collector could not keep */
    TRACE_EV_STRING = 12,  /* string table entry: id -> bytes */
    TRACE_EV_STACK = 13,   /* stack table entry: id -> frames (addresses) */
    TRACE_EV_CONTROL = 14, /* tracing switched on/off, process fork/exec markers */
    /* 2.5: one time window of machine and process counters, written by the
     * collector into the recording's .counters file (FORMAT.md §9) */
    TRACE_EV_COUNTERS = 15,
    TRACE_EV_TYPE_COUNT
};

/* TRACE_EV_FILE ops */
enum trace_file_op {
    TRACE_FILE_OPEN = 1,
    TRACE_FILE_CLOSE,
    TRACE_FILE_READ,
    TRACE_FILE_WRITE,
    TRACE_FILE_PREAD,
    TRACE_FILE_PWRITE,
    TRACE_FILE_FSYNC,
    TRACE_FILE_FDATASYNC,
    TRACE_FILE_DUP,
    TRACE_FILE_SENDFILE,
    TRACE_FILE_COPY_RANGE,
    TRACE_FILE_SEEK,
    TRACE_FILE_TRUNCATE,
    /* 2.1: offset, size = length, open_flags = mode (posix_fallocate: 0) */
    TRACE_FILE_FALLOCATE,
    /* 2.1: sync_file_range: offset, size = bytes, open_flags = its flags */
    TRACE_FILE_SYNC_RANGE,
    TRACE_FILE_SYNCFS /* 2.1: syncfs of the descriptor's file system */
};

/* TRACE_EV_NET ops */
enum trace_net_op { TRACE_NET_SEND = 1, TRACE_NET_RECV };

/* TRACE_EV_CONN ops */
enum trace_conn_op {
    TRACE_CONN_ACCEPT = 1, /* this process accepted it (or, a fork child, its parent did) */
    TRACE_CONN_CONNECT,    /* this process connected out */
    TRACE_CONN_IDENT,      /* identity learned later (e.g. socket inherited or first use) */
    TRACE_CONN_SHUTDOWN,
    TRACE_CONN_CLOSE,
    TRACE_CONN_LISTEN
};

enum trace_conn_proto {
    TRACE_PROTO_TCP = 1,
    TRACE_PROTO_UDP,
    TRACE_PROTO_UNIX_STREAM,
    TRACE_PROTO_UNIX_DGRAM
};

/* TRACE_EV_LOCK ops and kinds */
enum trace_lock_op {
    TRACE_LOCK_ACQUIRE = 1, /* blocking acquire; dur_ns is the time waited */
    TRACE_LOCK_TRY,         /* trylock; result 0 = acquired */
    TRACE_LOCK_TIMED,       /* timedlock; result 0 = acquired */
    TRACE_LOCK_RELEASE
};
enum trace_lock_kind {
    TRACE_LOCK_MUTEX = 1,
    TRACE_LOCK_RWLOCK,
    TRACE_LOCK_FLOCK,
    TRACE_LOCK_FCNTL,
    TRACE_LOCK_OFD,
    TRACE_LOCK_SEMAPHORE /* 2.1: sem_wait.. acquire, sem_post releases (mode exclusive) */
};
enum trace_lock_mode { TRACE_LOCK_EXCLUSIVE = 1, TRACE_LOCK_SHARED };

/* TRACE_EV_DB ops */
enum trace_db_op {
    TRACE_DB_CONNECT = 1,
    TRACE_DB_QUERY,
    TRACE_DB_PREPARE,
    TRACE_DB_EXECUTE,
    TRACE_DB_FETCH, /* result fetching: rows/bytes delivered to the app */
    TRACE_DB_CLOSE
};
enum trace_db_source { TRACE_DB_CAPI = 1, TRACE_DB_WIRE };
/* Format 2.3: which server's language a DB event speaks (u.db.dialect);
 * absent in older traces, which are all MySQL. */
enum trace_db_dialect { TRACE_DB_MYSQL = 0, TRACE_DB_POSTGRESQL = 1 };

/* TRACE_EV_CONTROL ops */
enum trace_control_op {
    TRACE_CTL_TRACING_ON = 1,
    TRACE_CTL_TRACING_OFF,
    TRACE_CTL_FORK,
    TRACE_CTL_EXEC,
    TRACE_CTL_RING_WRAP, /* --max-size dropped the span [a, b] of older chunks */
    /* (2.3) the thread's lock holds the tracer folded since its previous
     * such record: arg0 holds (an acquire and its release each), arg1 of
     * them taken shared */
    TRACE_CTL_LOCKS_FOLDED
};

/* TRACE_EV_COUNTERS ops */
enum trace_counters_op { TRACE_COUNTERS_WINDOW = 1 };

/* TRACE_EV_STACK ops */
enum trace_stack_op {
    TRACE_STACK_FRAMES = 0, /* id = stack id; data = nframes return addresses, innermost first */
    TRACE_STACK_SYMBOL = 1  /* id = string id of "symbol+0xoff (library)"; data = the address */
};

/* TRACE_EV_LOSS reasons */
enum trace_loss_reason {
    TRACE_LOSS_BUFFER_FULL = 1,
    TRACE_LOSS_RING_OVERWRITE,
    TRACE_LOSS_SALVAGE,
    TRACE_LOSS_SIGNAL_NESTED, /* a signal handler's call interrupted the tracer mid-record */
    TRACE_LOSS_NO_RING        /* calls of threads that found every thread ring taken (tid 0) */
};

/* flags (any type) */
#define TRACE_F_ERROR 0x0001         /* the call failed; result holds -errno */
#define TRACE_F_NONBLOCK 0x0002      /* descriptor was non-blocking */
#define TRACE_F_STDIO 0x0004         /* attributed from buffered stdio */
#define TRACE_F_MSG_MORE 0x0008      /* send with MSG_MORE */
#define TRACE_F_CPU_ESTIMATED 0x0010 /* CPU time estimated, not measured */
/* Format 2.0, in the encoded record only: the thread's CPU time from the end
 * of its previous record in the frame to this record's start precedes this
 * record (FORMAT.md §6.4). Writers set it (trace_writer_append_after_cpu),
 * readers deliver the CPU event and clear it: no event a reader returns or
 * a writer is given carries it. */
#define TRACE_F_AFTER_CPU 0x0020
/* Format 2.2, DB events only: the statement's text or its parameters were
 * cut at the recording's --db-max-statement (the strings hold a prefix);
 * u.db.query_len / params_len give the real lengths. A cut statement must
 * never be replayed as SQL (FORMAT.md §6.2). */
#define TRACE_F_CUT 0x0040

struct trace_file_event {
    int32_t fd;
    uint32_t path_id; /* string id of the path (open) or 0 */
    uint64_t dev, ino;
    int64_t offset;     /* offset the operation used; -1 when not applicable */
    uint64_t size;      /* requested bytes */
    int64_t result;     /* bytes done, new fd, or -errno */
    uint64_t file_size; /* size of the file before the operation */
    uint32_t open_flags;
    int32_t fd2; /* DUP: the new fd; SENDFILE/COPY_RANGE: the other fd; else -1 */
};

struct trace_net_event {
    int32_t fd;
    uint32_t msg_flags;
    uint64_t conn_id;
    uint64_t size;  /* requested bytes */
    int64_t result; /* bytes moved or -errno */
    uint32_t nmsgs; /* sendmmsg/recvmmsg: messages done; 0 for every other call */
    /* (2.7) a receive that began a request on an accepted TCP connection:
     * how long its bytes had waited in the kernel before it, in µs, at
     * least (TCP_INFO's time since data last arrived, less one kernel
     * tick); 0 when not measured or under a tick. The request arrived this
     * long before the receive: a busy server reads it late. */
    uint32_t queued_us;
};

struct trace_conn_event {
    int32_t fd;
    uint8_t proto;  /* enum trace_conn_proto */
    uint8_t family; /* AF_INET, AF_INET6, AF_UNIX */
    uint16_t local_port, remote_port;
    uint8_t local_addr[16], remote_addr[16]; /* IPv4 in the first 4 bytes */
    uint64_t conn_id;
    uint64_t unix_inode, unix_peer_inode;
    int64_t result;
};

struct trace_sockopt_event {
    int32_t fd;
    int32_t level, name;
    int64_t value;
    uint64_t conn_id;
};

struct trace_lock_event {
    uint8_t kind, mode;
    int32_t result;
    uint64_t lock_id;   /* address for pthread locks; dev^ino^range hash for file locks */
    int64_t start, len; /* file locks: byte range */
};

struct trace_db_event {
    uint8_t source; /* enum trace_db_source */
    /* server error code, 0 = success; PostgreSQL: the SQLSTATE packed
     * as the server packs it (6 bits a character, trace_db_sqlstate) */
    int32_t error;
    uint64_t db_conn_id;
    uint32_t query_id;  /* string id of the SQL text */
    uint32_t params_id; /* string id of the bound parameters, rendered as text */
    uint64_t stmt_id;
    uint64_t rows, bytes;
    /* 2.2, with TRACE_F_CUT only (else 0): the real length in bytes of the
     * SQL text / of the rendered parameters, when that one was cut */
    uint64_t query_len, params_len;
    uint8_t dialect; /* 2.3: enum trace_db_dialect */
};

struct trace_label_event {
    uint64_t conn_id;
    uint32_t label_id; /* string id of "METHOD /path" */
};

struct trace_loss_event {
    uint64_t count; /* events lost */
    uint64_t from_ns, to_ns;
    uint32_t reason;
};

struct trace_string_event {
    uint32_t id;
    uint32_t len;
};

struct trace_stack_event {
    uint32_t id;
    uint32_t nframes;
};

struct trace_control_event {
    int64_t arg0, arg1;
};

/* 2.5: a window [ts_ns, ts_ns + dur_ns) of counters; data: `bytes` bytes
 * holding nvalues entries (FORMAT.md §9), read with trace_counters_decode
 * (trace_file.h) */
struct trace_counters_event {
    uint32_t nvalues;
    uint32_t bytes;
    uint64_t window_ns; /* the window length asked for (`--window`) */
    uint64_t tick_ns;   /* how often the run queue was read */
};

struct trace_thread_event {
    uint32_t parent_tid; /* creating thread, or 0 */
};

struct trace_event {
    uint8_t type; /* enum trace_event_type */
    uint8_t op;
    uint16_t flags;
    uint32_t tid;
    uint64_t ts_ns;  /* CLOCK_MONOTONIC at start */
    uint64_t dur_ns; /* wall duration; for CPU events the on-CPU time */
    uint32_t stack_id;
    union {
        struct trace_file_event file;
        struct trace_net_event net;
        struct trace_conn_event conn;
        struct trace_sockopt_event sockopt;
        struct trace_lock_event lock;
        struct trace_db_event db;
        struct trace_label_event label;
        struct trace_loss_event loss;
        struct trace_string_event string;
        struct trace_stack_event stack;
        struct trace_control_event control;
        struct trace_thread_event thread;
        struct trace_counters_event counters;
    } u;
    /* STRING: the bytes (u.string.len of them); STACK: u.stack.nframes
     * uint64_t addresses; COUNTERS: u.counters.bytes encoded entries. Owned by whoever filled the
     * event; valid until the next call on that reader. NULL for other types. */
    const void *data;
};

/* Name of a type, e.g. "file"; "unknown" for values out of range. */
const char *trace_event_type_name(unsigned type);
/* Name of an operation of a type, e.g. "write" for (TRACE_EV_FILE,
 * TRACE_FILE_WRITE); NULL when the pair has no name (print the number). */
const char *trace_event_op_name(unsigned type, unsigned op);
/* Names of the flag bits (TRACE_F_*), indexed by bit number; NULL past the
 * last. */
const char *trace_event_flag_name(unsigned bit);
/* PostgreSQL's SQLSTATE (5 characters of [0-9A-Z]) as a DB event's
 * error: each character's (c - '0') & 0x3f in 6 bits, the first lowest
 * (the server's own MAKE_SQLSTATE). trace_db_sqlstate_text writes the 5
 * characters and a NUL back into out. Inline: the tracer library packs
 * without linking the formats library. */
/* (2.7) How long (ns) the bytes of a NET receive had waited in the kernel
 * before it ended (queued_us); 0 for any other event. A request's arrival
 * is that receive's end less this (analyze's schedule, regress). */
static inline uint64_t trace_net_queued_ns(const struct trace_event *ev)
{
    return ev->type == TRACE_EV_NET && ev->op == TRACE_NET_RECV
               ? (uint64_t)ev->u.net.queued_us * 1000
               : 0;
}

static inline int32_t trace_db_sqlstate(const char *s)
{
    uint32_t v = 0;
    for (int i = 0; i < 5; i++)
        v |= (uint32_t)(((unsigned char)s[i] - '0') & 0x3f) << (6 * i);
    return (int32_t)v;
}
static inline void trace_db_sqlstate_text(int32_t error, char out[6])
{
    uint32_t v = (uint32_t)error;
    for (int i = 0; i < 5; i++)
        out[i] = (char)(((v >> (6 * i)) & 0x3f) + '0');
    out[5] = 0;
}
/* "mysql" or "postgresql" ("?" for values out of range). */
const char *trace_db_dialect_name(unsigned dialect);

/* Name of a LOSS reason (enum trace_loss_reason), e.g. "buffer_full"; "?"
 * for values out of range. */
const char *trace_loss_reason_name(unsigned reason);

#endif
