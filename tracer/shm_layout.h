/* shm_layout.h - the shared-memory region between a traced process and the
 * collector. The collector creates one region (a memfd) per traced process
 * and hands it over at registration; the process writes events into it and
 * the collector drains it, so events written before a SIGKILL still reach
 * the trace. Both sides include this header; nothing else crosses.
 *
 * Layout: one control page, then TRACER_RING_COUNT rings. Ring 0 is the
 * process ring, holding definitions (strings, connection identities) under
 * a spinlock; rings 1.. belong to one thread each (single producer). The
 * collector drains a round as: snapshot the heads of all thread rings, drain
 * ring 0 completely, then drain each thread ring up to its snapshot; so a
 * definition always reaches the trace before any event that refers to it.
 *
 * A ring record is a tracer_record_header followed by a prefix of struct
 * trace_event (the common fields and the type's union member) and, for
 * STRING/STACK events, its bytes; or a compact LOCK record (struct
 * tracer_lock_record, thread rings only). Records are 8-byte aligned and
 * never wrap: a PAD record fills the end of the ring instead.
 *
 * Times in records (ts_ns, dur_ns, cpu_before_ns, despite the names) are in
 * the region's ring clock (tracer_control.ring_clock): TSC ticks when the
 * process converts rdtsc with the collector's calibration, else
 * CLOCK_MONOTONIC ns. The collector converts them to ns as it drains, with
 * the calibration in force when each was taken: the app pays one rdtsc per
 * timestamp and no conversion. */
#ifndef PREPLAY_SHM_LAYOUT_H
#define PREPLAY_SHM_LAYOUT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "trace_event.h"

#define TRACER_SHM_MAGIC 0x70726570u /* "prep" */
/* 5: `enabled` holds the tracing window's number, cpu_before_ns carries
 * TRACER_CPU_ESTIMATED_BIT, rings_in_use in the control page;
 * 6: net_ports (--port), the ring's staged_head; 7: 1024 thread rings,
 * untraced_calls instead of lost_events (which nothing read); 8:
 * db_max_statement, STRING pieces (TRACER_STRING_OP_MORE), DB events'
 * query_len/params_len; 9: lock folding (control lock_fold, the rings'
 * folded_holds and folded_shared); 10: cpu_clock and cpu_gap_ns (--cpu-clock),
 * the register reply's clock_fd kind */
#define TRACER_SHM_VERSION 10u
#define TRACER_NET_PORTS_MAX 16

/* How long a process waits for the collector to take its registration
 * (connect) and answer it, and how long a traced thread waits for room in
 * a full ring (lossless mode) before its process counts losses instead:
 * a stopped or hung collector must never hold the application. */
#define TRACER_COLLECTOR_PATIENCE_MS 5000

/* Ring 0 + 1024 thread rings: a Java server's 200 request threads and its
 * JVM's own fit. The region is a sparse memfd: a ring costs memory only
 * for the pages its thread has written (up to its 1 MiB), so unused rings
 * cost nothing but address space. */
#define TRACER_RING_COUNT 1025u
/* A ring is its 64-byte header and 1 MiB of data: a power of two, so a
 * record's place is head & (size - 1) on the hot path, not a division. */
#define TRACER_RING_BYTES (1024u * 1024u + 64u)
#define TRACER_CONTROL_BYTES 4096u

enum tracer_ring_state {
    TRACER_RING_FREE = 0,   /* unused; a thread may claim it */
    TRACER_RING_ACTIVE = 1, /* owned by a live thread */
    TRACER_RING_EXITED = 2  /* its thread ended; collector drains then frees */
};

/* The unit of the times in a region's records (tracer_control.ring_clock). */
enum tracer_ring_clock {
    TRACER_RING_CLOCK_MONO = 0, /* CLOCK_MONOTONIC ns (no calibrated TSC) */
    TRACER_RING_CLOCK_TSC = 1   /* rdtsc ticks; the collector's TSC calibration converts */
};

/* How traced threads measure their CPU time (tracer_control.cpu_clock,
 * `record --cpu-clock`, docs/cpu-time.md). */
enum tracer_cpu_clock {
    /* The thread's CPU clock (CLOCK_THREAD_CPUTIME_ID) is read only when the
     * wall time since the thread's CPU mark (its previous record) exceeds
     * cpu_gap_ns; a shorter gap is charged as running wall time, and each
     * read corrects what the estimates charged. No machine-wide hook. */
    TRACER_CPU_CLOCK_GAP = 0,
    /* The BPF sched_switch clock (a slot per thread, exact at every switch). */
    TRACER_CPU_CLOCK_BPF = 1,
    /* CLOCK_THREAD_CPUTIME_ID read at every stamp: exact, a syscall each. */
    TRACER_CPU_CLOCK_THREAD = 2
};
#define TRACER_CPU_GAP_DEFAULT_NS 20000u
#define TRACER_CPU_GAP_MAX_NS 1000000u

/* Bits of tracer_control.only_mask: which families are traced. */
#define TRACER_ONLY_FILE 0x01u
#define TRACER_ONLY_NET 0x02u
#define TRACER_ONLY_LOCK 0x04u
#define TRACER_ONLY_DB 0x08u
#define TRACER_ONLY_CPU 0x10u
#define TRACER_ONLY_ALL 0x1fu

/* The name `--only` gives family `bit` (one TRACER_ONLY_* bit), or NULL. */
static inline const char *tracer_family_name(uint32_t bit)
{
    switch (bit) {
    case TRACER_ONLY_FILE:
        return "file";
    case TRACER_ONLY_NET:
        return "net";
    case TRACER_ONLY_LOCK:
        return "lock";
    case TRACER_ONLY_DB:
        return "db";
    case TRACER_ONLY_CPU:
        return "cpu";
    default:
        return NULL;
    }
}

/* A window number the collector never hands out: a thread sets it as its
 * own window to send its next traced call down the slow path
 * (tracer_state.h, the deferred OPEN record). */
#define TRACER_WINDOW_RESERVED UINT32_MAX

/* --db-max-statement: DB statement text and rendered parameters are kept
 * whole up to this many bytes (default), never more than the maximum (a
 * trace frame holds 64 MiB raw, and the collector reassembles a string in
 * memory), never less than the minimum. */
#define TRACER_DB_STATEMENT_DEFAULT (1024u * 1024u)
#define TRACER_DB_STATEMENT_MIN 64u
#define TRACER_DB_STATEMENT_MAX (32u * 1024u * 1024u)

/* A string longer than one ring record may be (a quarter of a ring) goes
 * to ring 0 as consecutive STRING records of at most this many bytes, all
 * with its id, under one hold of the process lock (so nothing comes between
 * them): every piece but the last has op TRACER_STRING_OP_MORE, the last op
 * 0, and the collector joins them into one STRING event. A piece the ring
 * could not take (the collector stopped draining, or --drop and ring 0
 * full) ends the string: its last piece never comes, the collector drops
 * the pieces, and the interning caller gets no id (0). */
#define TRACER_STRING_PIECE_BYTES (128u * 1024u)
#define TRACER_STRING_OP_MORE 1u

struct tracer_control {
    uint32_t magic, version;
    uint32_t ring_count, ring_bytes;
    /* 0: tracing off. Otherwise on, and the number of this tracing window
     * (the collector counts them: 1, 2, ...): a thread whose last entry
     * was in another window knows tracing was off since, even if it made
     * no call meanwhile, and starts its CPU accounting afresh. Never
     * TRACER_WINDOW_RESERVED. */
    _Atomic uint32_t enabled;
    uint32_t only_mask;          /* TRACER_ONLY_* */
    _Atomic uint32_t ring_clock; /* enum tracer_ring_clock: set by the process at registration */
    _Atomic uint32_t drop_when_full; /* 1: count and mark losses; 0: wait for the collector */
    uint32_t keep_query;             /* keep the query string in HTTP labels */
    uint32_t stack_depth;            /* --stacks N (0 = off) */
    uint32_t ndb_ports;
    uint16_t db_ports[8];               /* peer ports that are MySQL endpoints (wire parsing) */
    char db_socket_suffix[64];          /* AF_UNIX paths ending in this are DB endpoints */
    _Atomic uint32_t process_ring_lock; /* spinlock for ring 0 */
    _Atomic uint32_t collector_wake;    /* futex: producers waiting for space */
    _Atomic uint64_t next_string_id;
    _Atomic uint64_t next_conn_id;
    /* Thread rings the process mapped: TRACER_RING_COUNT - 1, fewer when
     * its address space is limited (RLIMIT_AS: tracer_register maps a
     * smaller prefix of the region), 0 while it has not mapped it. The
     * collector says so when a process never did (it ran untraced). */
    _Atomic uint32_t mapped_rings;
    /* Traced calls of threads that found every thread ring taken: they
     * run untraced, and the collector writes these as LOSS (NO_RING).
     * (Losses of a thread with a ring are counted in its ring.) */
    _Atomic uint64_t untraced_calls;
    /* Bit i-1 set while thread ring i is not FREE: a thread sets it when it
     * claims the ring, the collector clears it before it frees the ring, so
     * a drain round looks at the rings in use instead of all 1024 (each a
     * page and a cache line of its own: 8% of the collector's CPU on nginx). */
    _Atomic uint64_t rings_in_use[(TRACER_RING_COUNT - 1 + 63) / 64];
    char path_filter[256]; /* only trace files whose path starts with this */
    uint32_t nnet_ports;   /* 0: every connection; else only those with a port here */
    uint16_t net_ports[TRACER_NET_PORTS_MAX];
    uint32_t db_max_statement; /* --db-max-statement, bytes (TRACER_DB_STATEMENT_*) */
    uint32_t lock_fold;        /* 1: fold uncontended locks; 0: --no-lock-folding */
    uint32_t cpu_clock;        /* enum tracer_cpu_clock (a BPF clock that failed to load: GAP) */
    uint32_t cpu_gap_ns;       /* GAP: the wall gap above which the thread clock is read */
};

struct tracer_ring {
    _Atomic uint32_t state;
    uint32_t tid;
    _Atomic uint64_t head;             /* bytes ever produced (producer writes) */
    _Atomic uint64_t tail;             /* bytes ever consumed (collector writes) */
    _Atomic uint32_t producer_waiting; /* futex word */
    /* Lock holds the thread folded (counted instead of recorded,
     * tracer/preload/lock_fold.h), of which taken shared; the producer
     * writes them, the collector turns what they gained into CONTROL
     * LOCKS_FOLDED records. folded_shared wraps (read as a difference). */
    _Atomic uint32_t folded_shared;
    _Atomic uint64_t lost; /* events dropped in this ring (drop mode) */
    _Atomic uint64_t folded_holds;
    _Atomic uint64_t lost_nested; /* calls a signal handler made while we wrote a record */
    /* 1 + the head at which a complete record waits unpublished (a deferred
     * OPEN, interpose_file.c: tracer_open_stage), else 0 or a stale value
     * (head has moved on). The collector takes that record only from a
     * process that is gone. */
    _Atomic uint64_t staged_head;
    unsigned char data[]; /* TRACER_RING_BYTES - sizeof(struct tracer_ring) usable */
};

#define TRACER_RING_DATA_BYTES (TRACER_RING_BYTES - sizeof(struct tracer_ring))
_Static_assert(sizeof(struct tracer_control) <= TRACER_CONTROL_BYTES,
               "the control block fits its page");
_Static_assert(sizeof(struct tracer_ring) == 64, "ring header is one cache line");
_Static_assert((TRACER_RING_DATA_BYTES & (TRACER_RING_DATA_BYTES - 1)) == 0,
               "ring data size must be a power of two");
/* The bytes of a region prefix holding the control page, ring 0 and
 * `thread_rings` thread rings. */
static inline uint64_t tracer_region_bytes(uint32_t thread_rings)
{
    return (uint64_t)TRACER_CONTROL_BYTES + (uint64_t)(thread_rings + 1) * TRACER_RING_BYTES;
}
#define TRACER_REGION_BYTES tracer_region_bytes(TRACER_RING_COUNT - 1)

enum tracer_record_kind {
    TRACER_REC_EVENT = 1,
    TRACER_REC_PAD = 2,
    TRACER_REC_LOCK = 3 /* compact LOCK event: struct tracer_lock_record */
};

struct tracer_record_header {
    uint32_t size; /* whole record, header included, multiple of 8 */
    uint32_t kind; /* enum tracer_record_kind */
    /* On-CPU time of this thread since its previous record's event ended
     * (ring clock units; 0 if none or not measured): the collector turns it
     * into a TRACE_EV_CPU event ending where this event starts, so the hot
     * path writes one record, not two. Its top bit is
     * TRACER_CPU_ESTIMATED_BIT. */
    uint64_t cpu_before_ns;
};

/* Set in cpu_before_ns when the thread's CPU time at this record was
 * estimated as running wall time instead of read (the gap clock's short
 * gaps, or the fallback of a BPF clock, docs/cpu-time.md); the collector flags the CPU event
 * TRACE_F_CPU_ESTIMATED. No CPU time comes near 2^63 ticks. */
#define TRACER_CPU_ESTIMATED_BIT (1ull << 63)

/* The common lock event in 32 bytes instead of 80: a pthread lock operation
 * that succeeded at once (no wait, result 0, no byte range, no stack). The
 * thread is the ring's, the wait time is 0; operation, lock kind and mode
 * ride in the upper bytes of the header's kind, so the record is four
 * stores. Anything else (a wait, an error, a file lock) is a full EVENT. */
struct tracer_lock_record {
    struct tracer_record_header h; /* kind = TRACER_REC_LOCK | op << 8 | lock kind << 16 |
                                      mode << 24 */
    uint64_t ts_ns;
    uint64_t lock_id;
};

static inline uint32_t tracer_lock_record_kind(uint8_t op, uint8_t lock_kind, uint8_t mode)
{
    return TRACER_REC_LOCK | (uint32_t)op << 8 | (uint32_t)lock_kind << 16 | (uint32_t)mode << 24;
}

static inline struct tracer_control *tracer_region_control(void *region)
{
    return (struct tracer_control *)region;
}

static inline struct tracer_ring *tracer_region_ring(void *region, unsigned i)
{
    return (struct tracer_ring *)((char *)region + TRACER_CONTROL_BYTES +
                                  (uint64_t)i * TRACER_RING_BYTES);
}

/* Bytes of struct trace_event an event with union member `member` uses:
 * the common fields and that member (records in the ring are that long,
 * not the full union). A constant: fixed-size copies of it are inlined. */
#define TRACER_EVENT_BYTES(member)                                                                 \
    (offsetof(struct trace_event, u) + sizeof(((struct trace_event *)0)->u.member))

/* The ring record of such an event: header and event, 8-aligned. */
#define TRACER_EVENT_RECORD_BYTES(member)                                                          \
    ((sizeof(struct tracer_record_header) + TRACER_EVENT_BYTES(member) + 7) & ~(size_t)7)

/* The same for an event of `type` (the whole struct for the types whose
 * records hold it whole). */
static inline size_t tracer_event_bytes(uint8_t type)
{
    switch (type) {
    case TRACE_EV_FILE:
        return TRACER_EVENT_BYTES(file);
    case TRACE_EV_NET:
        return TRACER_EVENT_BYTES(net);
    case TRACE_EV_LOCK:
        return TRACER_EVENT_BYTES(lock);
    case TRACE_EV_DB:
        return TRACER_EVENT_BYTES(db);
    case TRACE_EV_LABEL:
        return TRACER_EVENT_BYTES(label);
    case TRACE_EV_SOCKOPT:
        return TRACER_EVENT_BYTES(sockopt);
    case TRACE_EV_CONTROL:
        return TRACER_EVENT_BYTES(control);
    default:
        return sizeof(struct trace_event);
    }
}

/* The rings_in_use word and bit of thread ring i (1 .. TRACER_RING_COUNT-1),
 * and back: ring 1 + w * 64 + b for bit b of word w. */
static inline unsigned tracer_ring_in_use_word(unsigned i)
{
    return (i - 1) / 64;
}

static inline uint64_t tracer_ring_in_use_bit(unsigned i)
{
    return 1ull << ((i - 1) % 64);
}

static inline unsigned tracer_ring_of_in_use_bit(unsigned word, unsigned bit)
{
    return 1 + word * 64 + bit;
}

/* Registration message a process sends to the collector (SOCK_SEQPACKET),
 * followed by exe and argv bytes. The reply carries the region memfd and,
 * when available, the CPU-clock map fd as SCM_RIGHTS. */
#define TRACER_REGISTER_MAGIC 0x72656731u
struct tracer_register_request {
    uint32_t magic;
    uint32_t pid, ppid, tid;
    uint32_t is_exec; /* registered from a new image after exec */
    uint32_t exe_len, argv_len;
    char component[64];
};

struct tracer_register_reply {
    uint32_t magic;
    int32_t status;    /* 0 ok, else errno-like */
    uint32_t nfds;     /* 1 (region) or 2 (region, cpu clock map) */
    uint32_t clock_fd; /* enum tracer_clock_fd: what the second descriptor is */
};

/* The second descriptor of a register reply: the BPF clock's table (slots,
 * header with the TSC block), or the collector's clock page (the header
 * alone, cpuclock_clock_page_create) when no BPF clock is loaded. */
enum tracer_clock_fd { TRACER_CLOCK_FD_BPF_TABLE = 0, TRACER_CLOCK_FD_PAGE = 1 };

#endif
