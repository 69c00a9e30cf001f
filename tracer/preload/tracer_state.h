/* tracer_state.h - the state every part of libpreplay_trace.so shares: the
 * process's (tracer_global, tracer_core.c) and each thread's (tracer_tls,
 * threads.c), and the busy mark that keeps a signal handler out of a record
 * half-written. Types, globals and inline marks only: no function of a .c
 * file is declared here.
 *
 * Nothing here may allocate, lock or touch errno: every inline below runs
 * on the hot path of each wrapped call. */
#ifndef PREPLAY_TRACER_STATE_H
#define PREPLAY_TRACER_STATE_H

#include <stdatomic.h>
#include <stdint.h>

#include "shm_layout.h"
#include "trace_event.h"

#define TRACER_EXPORT __attribute__((visibility("default")))
#define TRACER_LIKELY(x) __builtin_expect(!!(x), 1)
#define TRACER_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* Where a thread's CPU time stands between its records, in ring clock units
 * (tracer_ring_now, cpu_mark.h). While now is in [raw, raw + gap] and
 * [.., until] and *seq_word still equals `seq`, the CPU time no record
 * carries yet is taken as now - raw: the hot path reads one word and
 * subtracts (tracer_cpu_mark_holds). With the BPF clock seq_word is the
 * slot's switch count (no switch since `raw`: exact), gap is unbounded and
 * until the slot's trust limit. With the gap clock (--cpu-clock gap) and
 * rseq, seq_word is the low half of the thread's rseq_cs, which the kernel
 * clears at a switch (no switch since: exact), gap unbounded and until the
 * last read plus TRACER_CPU_VERIFY_NS; without rseq, seq_word is a
 * constant, until unbounded and gap the threshold T: a gap no longer than T
 * is charged as running wall time, flagged `est`.
 * Otherwise tracer_cpu_begin_slow/end_slow read the clock and move the
 * mark. `raw` may lie before the last exact read (a "virtual"
 * mark: an exact read found CPU time no record carried yet, and the mark is
 * placed that much earlier), so the next record still carries it. `until`
 * is 0 when the fast path must not be used (the CPU family off, a read the
 * slot could not vouch for, --cpu-clock thread). */
struct tracer_cpu_mark {
    const _Atomic uint32_t *seq_word; /* the slot's switch count (read only when until != 0) */
    uint32_t seq;
    uint64_t raw;
    uint64_t until;
    uint64_t gap;      /* longest span the fast path charges (ring clock) */
    uint64_t est;      /* TRACER_CPU_ESTIMATED_BIT when the fast path estimates, else 0 */
    uint64_t read_raw; /* gap clock: when the thread's CPU clock was last read */
    /* The last exact read: the thread's CPU clock was anchor_cpu_ns at ring
     * time anchor_raw (0: none). Holds with the mark's seq. With the gap
     * clock, the CPU clock the records imply there (never less than read). */
    uint64_t anchor_raw;
    uint64_t anchor_cpu_ns;
};

/* A lock hold lock_fold.c folded (counted, not recorded), kept until its
 * release so that the hold can still be written if its lock becomes
 * contended meanwhile. */
#define TRACER_FOLDED_HOLDS_MAX 8
struct tracer_folded_hold {
    uint64_t id;          /* the lock */
    void *slot;           /* its entry in lock_fold.c's table */
    uint64_t ts;          /* the CPU mark at the acquire (ring time, <= the acquire's) */
    uint64_t head;        /* the thread's ring head then (unchanged: nothing recorded since) */
    uint32_t record_kind; /* the acquire's compact record kind (shm_layout.h) */
    uint32_t shared;      /* taken shared */
};

/* Per-thread tracer state (thread-local, initial-exec TLS). */
struct tracer_thread {
    struct tracer_ring *ring; /* NULL: no ring (not claimed yet or none free) */
    uint32_t tid;
    uint32_t busy;        /* nonzero while we touch the ring or our tables */
    uint32_t claimed_gen; /* region generation the ring belongs to */
    uint32_t parent_tid;
    uint32_t recorded;     /* a record was committed since tracer_event_begin */
    uint32_t pending_size; /* size of the record reserved, for its commit */
    uint64_t begin_ns;     /* start of the current event (ring clock) */
    uint64_t cached_tail;  /* collector's tail as last read (free space known) */
    uint32_t internal;     /* nonzero while our own code calls into other libraries */
    /* The tracing window (the control page's nonzero `enabled`) of this
     * thread's last traced entry; 0 before its first. */
    uint32_t window;
    /* CPU time (ring clock) the next record carries (its cpu_before_ns): set
     * by tracer_event_begin, taken (zeroed) by the record that carries it. */
    uint64_t pending_cpu;
    /* The ring head up to which records fit without a look at the
     * collector's tail or the ring's end (tracer_reserve_fast_at). */
    uint64_t fast_limit;
    struct tracer_cpu_mark cpu;
    /* When a thread we saw created started (ring clock) and the tracing
     * window then (0: none, or not yet known); its THREAD_START, written
     * at its first traced call, is dated here and its first record
     * carries all its CPU time, when tracing was on all along. */
    uint64_t started_raw;
    uint32_t started_window;
    /* An OPEN record waiting for its file's identity (see
     * tracer_open_settle); while `active`, the thread's `window` is
     * TRACER_WINDOW_RESERVED so that its next traced call takes the slow
     * path, and the real window is kept here. */
    struct tracer_open_pending {
        uint32_t active;
        int32_t fd;
        uint32_t window;
        uint32_t path_id;
        uint32_t open_flags;
        uint64_t begin, end;
        uint64_t cpu; /* CPU time (ring clock) before the open, for its record */
        /* its record, staged in the ring unpublished (tracer_open_stage),
         * and the head that publishes it; NULL when not staged */
        struct trace_event *staged;
        uint64_t staged_end;
    } open_pending;
    /* 1 + the accepted TLS connection whose encrypted request bytes this
     * thread received last (0: none): the descriptor an SSL_read reads
     * from when its SSL object has no socket of its own (apache2's mod_ssl
     * reads through its own BIO), interpose_tls.c */
    int32_t tls_recv_fd_plus1;
    /* The holds of this thread lock_fold.c folded, not yet released (at
     * most TRACER_FOLDED_HOLDS_MAX; one more is folded but not kept). */
    uint32_t nfolded;
    struct tracer_folded_hold folded[TRACER_FOLDED_HOLDS_MAX];
    /* Its THREAD_EXIT is written and its ring given back: a traced call it
     * still makes (past every hook we have, tracer_thread.c) is counted as
     * untraced, never recorded after its end in a second ring. */
    uint32_t ended;
    /* Rounds of thread-key destructors our key has seen (tracer_thread.c). */
    uint32_t key_rounds;
};

/* The busy mark tells a signal handler running on this thread that we are
 * in the middle of a record: the compiler must not move ring accesses
 * across it (a plain increment may be sunk past them), hence the fences. */
static inline void tracer_busy_enter(struct tracer_thread *t)
{
    t->busy++;
    atomic_signal_fence(memory_order_seq_cst);
}

static inline void tracer_busy_leave(struct tracer_thread *t)
{
    atomic_signal_fence(memory_order_seq_cst);
    t->busy--;
}

/* The same for the inline fast paths, which start with the mark down
 * (tracer_enter checked it) and never nest: one store each way. */
static inline void tracer_busy_set(struct tracer_thread *t)
{
    t->busy = 1;
    atomic_signal_fence(memory_order_seq_cst);
}

static inline void tracer_busy_clear(struct tracer_thread *t)
{
    atomic_signal_fence(memory_order_seq_cst);
    t->busy = 0;
}

/* Global state of the library in this process. */
struct tracer_state {
    void *region;          /* mapped shared region, NULL when inactive */
    uint32_t thread_rings; /* thread rings mapped (tracer_region_bytes): 1 .. thread_rings */
    struct tracer_control *control;
    uint32_t generation; /* bumped at each registration (fork): starts at 1 */
    uint32_t pid;
    int active;
    int ring_clock_tsc; /* records carry rdtsc ticks (TRACER_RING_CLOCK_TSC) */
    /* Copies of the control page's settings, which the collector writes
     * once before handing the region over: the hot path reads them from
     * this line instead of two more lines of shared memory. */
    uint32_t only_mask;   /* TRACER_ONLY_* */
    uint32_t stack_depth; /* --stacks N, 0 = off */
    int path_filter_set;  /* control->path_filter is not empty */
    int lock_fold;        /* uncontended locks are counted, not recorded (lock_fold.h) */
    uint32_t cpu_clock;   /* enum tracer_cpu_clock (shm_layout.h) */
    uint32_t cpu_gap_ns;  /* the gap clock's threshold T */
    /* the process has a DB connection: from then on, sends on sockets call
     * tracer_db_wire_before_send before they go out (io_events.h) */
    int db_wire_in_use;
};

extern struct tracer_state tracer_global;

/* The calling thread's state (initial-exec TLS: one %fs-relative access),
 * defined in threads.c. */
extern __thread struct tracer_thread tracer_tls __attribute__((tls_model("initial-exec")));

#endif
