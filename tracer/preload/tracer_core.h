/* tracer_core.h - the shared core every interposer of libpreplay_trace.so
 * stands on: resolving the real functions, per-thread state, timing, and
 * writing one event into the thread's shared-memory ring.
 *
 * The hot path must never allocate, take a lock the app could hold, change
 * errno or the result of the wrapped call, or crash: when anything is off
 * (no collector, tracing switched off, re-entered from our own code), the
 * wrappers call the real function and do nothing else. */
#ifndef PREPLAY_TRACER_CORE_H
#define PREPLAY_TRACER_CORE_H

#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <string.h>
#include <time.h>

#include "cpu_time.h"
#include "cpuclock.h"
#include "shm_layout.h"
#include "trace_event.h"

#define TRACER_EXPORT __attribute__((visibility("default")))
#define TRACER_LIKELY(x) __builtin_expect(!!(x), 1)
#define TRACER_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* Declares `real_NAME`, a pointer to the definition of NAME `resolver`
 * finds on first use (wrappers can run before our constructor), and
 * tracer_real_NAME() to read it. */
#define TRACER_REAL_VIA(resolver, ret, name, params)                                               \
    typedef ret(*tracer_##name##_fn) params;                                                       \
    static tracer_##name##_fn real_##name;                                                         \
    static inline tracer_##name##_fn tracer_real_##name(void)                                      \
    {                                                                                              \
        if (TRACER_UNLIKELY(!real_##name))                                                         \
            real_##name = (tracer_##name##_fn)resolver(#name);                                     \
        return real_##name;                                                                        \
    }

/* A libc function: the next definition after ours. */
#define TRACER_REAL(ret, name, params) TRACER_REAL_VIA(tracer_resolve, ret, name, params)

/* A function of a library the app brought (libmariadb, libssl), maybe
 * loaded RTLD_LOCAL: tracer_resolve_loaded, which must find it. */
#define TRACER_REAL_LOADED(ret, name, params)                                                      \
    TRACER_REAL_VIA(tracer_resolve_loaded_required, ret, name, params)

/* Where a thread's CPU time stands between its records, in ring clock units
 * (tracer_ring_now). While the BPF slot's switch count still equals `seq`
 * and now is in [raw, until], the thread has not been switched out since
 * `raw`, so the CPU time no record carries yet is exactly now - raw: the
 * hot path reads one word of the slot and subtracts (tracer_cpu_mark_holds).
 * Otherwise tracer_cpu_begin_slow/end_slow read the clock (cpuclock_thread_now)
 * and move the mark. `raw` may lie before the last exact read (a "virtual"
 * mark: an exact read found CPU time no record carried yet, and the mark is
 * placed that much earlier), so the next record still carries it. `until`
 * is 0 when the fast path must not be used (no BPF slot, the CPU family
 * off, a read the slot could not vouch for). */
struct tracer_cpu_mark {
    const _Atomic uint32_t *seq_word; /* the slot's switch count (read only when until != 0) */
    uint32_t seq;
    uint64_t raw;
    uint64_t until;
    /* The last exact read: the thread's CPU clock was anchor_cpu_ns at ring
     * time anchor_raw (0: none). Holds with the mark's seq. */
    uint64_t anchor_raw;
    uint64_t anchor_cpu_ns;
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
    /* the process has a DB connection: from then on, sends on sockets call
     * tracer_db_wire_before_send before they go out (io_events.h) */
    int db_wire_in_use;
};

extern struct tracer_state tracer_global;

void *tracer_resolve(const char *name);
/* A function of a library the app loaded, also one dlopen'ed RTLD_LOCAL
 * that dlsym(RTLD_NEXT) does not search; NULL when no loaded object other
 * than ours defines it. Not for the hot path. */
void *tracer_resolve_loaded(const char *name);
/* tracer_resolve_loaded for a function whose wrapper the app just called:
 * its library is loaded, so not finding it aborts, naming the function. */
void *tracer_resolve_loaded_required(const char *name);

/* The calling thread's state (initial-exec TLS: one %fs-relative access). */
extern __thread struct tracer_thread tracer_tls __attribute__((tls_model("initial-exec")));

struct tracer_thread *tracer_enter_slow(struct tracer_thread *t, uint32_t family);

/* Writes the OPEN record the thread deferred (tracer_thread.open_pending),
 * with the file's identity and size from `st` (the app's own fstat of the
 * descriptor, which most programs make right after open) or, when NULL,
 * from an fstat of ours; and puts the thread's window back. An open costs
 * the app no syscall of ours when its fstat comes first. Called first
 * thing at the thread's next traced call (tracer_enter_slow), at its exit,
 * from the fstat wrappers, and before a fork or a dup2 onto the descriptor.
 * interpose_file.c */
void tracer_open_settle(struct tracer_thread *t, const struct stat *st);

/* Flushes, and records, what the app's stdio streams still buffer, for the
 * library destructor: exit() flushes them only after destructors ran, where
 * the tracer no longer sees them. interpose_stdio.c */
void tracer_stdio_exit_flush(void);

/* tracer_open_settle when the thread's deferred open is descriptor `fd`
 * (-1: whichever it is), unless we are inside the tracer already. */
static inline void tracer_open_settle_if(struct tracer_thread *t, int fd, const struct stat *st)
{
    if (TRACER_UNLIKELY(t->open_pending.active) && (fd < 0 || t->open_pending.fd == fd) && !t->busy)
        tracer_open_settle(t, st);
}

/* tracer_enter's fast test, shared with the leaf paths that skip it: the
 * thread claimed a ring in this generation, is not inside the tracer, the
 * family is traced and the thread is in the current tracing window. */
static inline __attribute__((always_inline)) int tracer_thread_ready(const struct tracer_thread *t,
                                                                     uint32_t family)
{
    return t->claimed_gen == tracer_global.generation && !t->busy &&
           (tracer_global.only_mask & family) &&
           atomic_load_explicit(&tracer_global.control->enabled, memory_order_relaxed) == t->window;
}

/* Returns the calling thread's state if an event of `family` (TRACER_ONLY_*)
 * should be traced now, else NULL. Claims a ring on first use. Inline: it
 * runs before every wrapped call. A ring claimed in the current region
 * generation (never 0 in TLS: generations start at 1 and a released ring
 * zeroes its claimed_gen) implies a registered process and a mapped control
 * page, so the common answer is a few loads from two lines of our own and
 * one of the control page (the tracing window's number); everything else
 * is tracer_enter_slow's, including a new tracing window (tracing was
 * switched off and on since this thread's last entry). */
static inline struct tracer_thread *tracer_enter(uint32_t family)
{
    struct tracer_thread *t = &tracer_tls;
    if (TRACER_LIKELY(tracer_thread_ready(t, family)))
        return t;
    return tracer_enter_slow(t, family);
}

/* Now in the ring clock (shm_layout.h): rdtsc when the process converts
 * TSC with the collector's calibration (the collector converts what the
 * records carry), else CLOCK_MONOTONIC ns from the vDSO. */
static inline uint64_t tracer_ring_now(void)
{
    if (TRACER_LIKELY(tracer_global.ring_clock_tsc))
        return cpuclock_rdtsc();
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Does the thread's CPU mark hold at ring time `now` (no switch since)?
 * `until` first: it is 0 whenever seq_word may not be read. */
static inline __attribute__((always_inline)) int
tracer_cpu_mark_holds(const struct tracer_cpu_mark *m, uint64_t now)
{
    return now <= m->until && now >= m->raw &&
           atomic_load_explicit(m->seq_word, memory_order_relaxed) == m->seq;
}

/* The slow sides of the CPU mark (tracer_core.c): an exact read. begin
 * returns the CPU time (ring clock) since the last record and leaves the
 * mark so that the next record still carries it if this event writes
 * none; end moves the mark to `now` after a record. */
uint64_t tracer_cpu_begin_slow(struct tracer_thread *t, uint64_t now);
void tracer_cpu_end_slow(struct tracer_thread *t, uint64_t now);
/* Forgets the mark (a new ring, a forked child): the next read is exact. */
void tracer_cpu_mark_reset(struct tracer_thread *t);

/* Stamps an event's start: returns now (ring clock) and, in *cpu, the CPU
 * time the thread used since its previous record's event ended. */
static inline __attribute__((always_inline)) uint64_t tracer_stamp(struct tracer_thread *t,
                                                                   uint64_t *cpu)
{
    uint64_t now = tracer_ring_now();
    if (TRACER_LIKELY(tracer_cpu_mark_holds(&t->cpu, now)))
        *cpu = now - t->cpu.raw;
    else
        *cpu = tracer_cpu_begin_slow(t, now);
    return now;
}

/* Starts an event: its stamp, with the CPU time since the previous record
 * in pending_cpu (the next record carries it). Returns the event's start
 * (ring clock). */
static inline __attribute__((always_inline)) uint64_t tracer_event_begin(struct tracer_thread *t)
{
    uint64_t now = tracer_stamp(t, &t->pending_cpu);
    t->begin_ns = now;
    t->recorded = 0;
    return now;
}

/* After a record: the next CPU segment starts at `end`. */
static inline __attribute__((always_inline)) void tracer_cpu_mark_move(struct tracer_thread *t,
                                                                       uint64_t end)
{
    if (TRACER_LIKELY(tracer_cpu_mark_holds(&t->cpu, end)))
        t->cpu.raw = end;
    else
        tracer_cpu_end_slow(t, end);
}

/* Ends an event. When the call produced a record, the next CPU segment
 * starts at `end_ns`; when it produced none (e.g. EAGAIN), the segment
 * simply continues: the next record carries the time from the previous
 * record on (the mark stays), and what begin computed is dropped. */
static inline __attribute__((always_inline)) void tracer_event_end(struct tracer_thread *t,
                                                                   uint64_t end_ns)
{
    t->pending_cpu = 0;
    if (!t->recorded)
        return;
    t->recorded = 0;
    if (end_ns == t->begin_ns)
        t->cpu.raw = end_ns; /* the CPU clock at begin is known: no second look */
    else
        tracer_cpu_mark_move(t, end_ns);
}

/* Reserves room for an event with `extra` trailing bytes in the thread's
 * ring and returns the zero-filled event to fill in, or NULL (drop mode and
 * full, or no ring). Must be followed by tracer_commit when non-NULL. */
struct trace_event *tracer_reserve(struct tracer_thread *t, size_t extra);

/* Publishes the record reserved last (the collector may read it now). */
static inline void tracer_commit(struct tracer_thread *t)
{
    struct tracer_ring *r = t->ring;
    uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    atomic_store_explicit(&r->head, head + t->pending_size, memory_order_release);
    t->recorded = 1;
    tracer_busy_leave(t);
}
/* Same, reserving only the first event_bytes of struct trace_event. */
struct trace_event *tracer_reserve_bytes(struct tracer_thread *t, size_t event_bytes, size_t extra);
/* Same, not zero-filled: for a caller that knows event_bytes at compile
 * time and zeroes it inline (cheaper than the memset call). */
struct trace_event *tracer_reserve_uninit(struct tracer_thread *t, size_t event_bytes);

/* Fast path for a small record of `need` bytes (a multiple of 8) in the
 * thread's ring, for callers that hold the busy mark: the record's place
 * when it fits before the ring's end in the free space last seen, else NULL
 * (the caller takes the general path, which waits, pads or drops). The ring
 * head the record starts at comes back in *head: the inline fast paths
 * publish the record themselves (tracer_publish) and move the CPU mark
 * themselves. The ring size is a power of two: the modulo is a mask. */
static inline void *tracer_reserve_fast_at(struct tracer_thread *t, uint32_t need, uint64_t *head)
{
    struct tracer_ring *r = t->ring;
    uint64_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
    *head = h;
    if (TRACER_UNLIKELY(h + need > t->fast_limit)) {
        /* the next ring boundary after head, or a full ring past the tail */
        uint64_t ring_end = (h | (TRACER_RING_DATA_BYTES - 1)) + 1;
        uint64_t tail_end = t->cached_tail + TRACER_RING_DATA_BYTES;
        t->fast_limit = ring_end < tail_end ? ring_end : tail_end;
        if (h + need > t->fast_limit)
            return NULL;
    }
    return r->data + (h & (TRACER_RING_DATA_BYTES - 1));
}

/* Writes a record's header: its size, `kind`, and `cpu` (ring clock
 * before the event). */
static inline __attribute__((always_inline)) void
tracer_record_header_set(struct tracer_record_header *h, uint32_t need, uint32_t kind, uint64_t cpu)
{
    h->size = need;
    h->kind = kind;
    h->cpu_before_ns = cpu;
}

/* The start every inline fast path shares: sets the busy mark, reserves a
 * record of `need` bytes (a multiple of 8) with tracer_reserve_fast_at and
 * writes its header: size, `kind`, `cpu` (ring clock before the event). The
 * caller fills the rest, publishes up to *head + need and clears the busy
 * mark. NULL, busy mark cleared, when the ring has no room at once (the
 * caller takes the general path). */
static inline __attribute__((always_inline)) struct tracer_record_header *
tracer_record_reserve_fast(struct tracer_thread *t, uint32_t need, uint32_t kind, uint64_t cpu,
                           uint64_t *head)
{
    tracer_busy_set(t);
    struct tracer_record_header *h = tracer_reserve_fast_at(t, need, head);
    if (TRACER_UNLIKELY(!h)) {
        tracer_busy_clear(t);
        return NULL;
    }
    tracer_record_header_set(h, need, kind, cpu);
    return h;
}

/* The same for an EVENT record: the event to fill, after the header. */
static inline __attribute__((always_inline)) struct trace_event *
tracer_event_reserve_fast(struct tracer_thread *t, uint32_t need, uint64_t cpu, uint64_t *head)
{
    struct tracer_record_header *h =
        tracer_record_reserve_fast(t, need, TRACER_REC_EVENT, cpu, head);
    return h ? (struct trace_event *)(h + 1) : NULL;
}

/* Publishes the records up to ring position `end` (the collector may read
 * them now). */
static inline void tracer_publish(struct tracer_thread *t, uint64_t end)
{
    atomic_store_explicit(&t->ring->head, end, memory_order_release);
}

/* Ends an event record reserved with tracer_record_reserve_fast: publishes
 * the ring up to `end`, leaves the busy mark, and the next CPU segment
 * starts at end_ns (the event is over). */
static inline __attribute__((always_inline)) void
tracer_record_publish_fast(struct tracer_thread *t, uint64_t end, uint64_t end_ns)
{
    tracer_publish(t, end);
    tracer_busy_clear(t);
    tracer_cpu_mark_move(t, end_ns);
}

/* Reserves an event record of the first `bytes` of struct trace_event,
 * not zero-filled, carrying pending_cpu; to be committed with
 * tracer_commit. When the record fits at once (the common case) it is
 * reserved inline, with tracer_reserve_fast_at; else the general path
 * waits, pads or drops (tracer_reserve_uninit). NULL: no ring, or dropped.
 * Not tracer_record_reserve_fast: callers may hold the busy mark already
 * (tracer_open_settle), so the mark is nested here, not set and cleared. */
static inline __attribute__((always_inline)) struct trace_event *
tracer_event_reserve(struct tracer_thread *t, size_t bytes)
{
    uint32_t need = (uint32_t)((sizeof(struct tracer_record_header) + bytes + 7) & ~(size_t)7);
    uint64_t head;
    if (TRACER_LIKELY(t->ring != NULL)) {
        tracer_busy_enter(t); /* tracer_commit leaves */
        struct tracer_record_header *h = tracer_reserve_fast_at(t, need, &head);
        if (TRACER_LIKELY(h != NULL)) {
            tracer_record_header_set(h, need, TRACER_REC_EVENT, t->pending_cpu);
            t->pending_cpu = 0;
            t->pending_size = need;
            return (struct trace_event *)(h + 1);
        }
        tracer_busy_leave(t);
    }
    return tracer_reserve_uninit(t, bytes);
}

/* --stacks: id of the calling thread's current stack (0: none). stacks.c */
uint32_t tracer_stack_id(uint32_t depth);
void tracer_stacks_after_fork(void);
/* In a fork child: no thread of the parent holds a DB connection's parser
 * state any more (db_wire.c) */
void tracer_db_wire_after_fork(void);

/* Zero-fills the first `bytes` of an event (a FILE event's fd2 is -1, no
 * second descriptor) and writes its common fields. */
static inline __attribute__((always_inline)) void
tracer_event_head_set(struct trace_event *ev, size_t bytes, const struct tracer_thread *t,
                      uint8_t type, uint8_t op, uint64_t begin_ns, uint64_t end_ns)
{
    memset(ev, 0, bytes); /* constant size at each call site: inline stores */
    if (type == TRACE_EV_FILE)
        ev->u.file.fd2 = -1; /* no second descriptor (FORMAT.md predicts -1) */
    ev->type = type;
    ev->op = op;
    ev->tid = t->tid;
    ev->ts_ns = begin_ns;
    ev->dur_ns = end_ns > begin_ns ? end_ns - begin_ns : 0;
}

/* Convenience for the common case: reserve, fill the common fields.
 * Always inline: `type` is constant at each call site, so the record's size
 * and its zero-fill fold into a few stores (outlined, it was a call, a
 * size lookup and a variable-length memset: ~80 instructions a record). */
static inline __attribute__((always_inline)) struct trace_event *
tracer_event_new(struct tracer_thread *t, uint8_t type, uint8_t op, uint64_t begin_ns,
                 uint64_t end_ns)
{
    uint32_t stack = 0;
    if (TRACER_UNLIKELY(tracer_global.stack_depth) && !t->busy) {
        tracer_busy_enter(t); /* libunwind and dladdr call (traced) pthread locks */
        t->internal++;
        stack = tracer_stack_id(tracer_global.stack_depth);
        t->internal--;
        tracer_busy_leave(t);
    }
    size_t bytes = tracer_event_bytes(type);
    struct trace_event *ev = tracer_event_reserve(t, bytes);
    if (!ev)
        return NULL;
    tracer_event_head_set(ev, bytes, t, type, op, begin_ns, end_ns);
    ev->stack_id = stack;
    return ev;
}

/* Interns a string into the process string table (a STRING event in ring 0
 * the first time) and returns its id, or 0 when it cannot (never fails the
 * caller). */
uint32_t tracer_intern(const char *s, size_t len);

/* Writes a definition event (CONN...) into the process ring 0. `fill` gets
 * the zeroed event. Returns 0 on success. */
int tracer_emit_definition(const struct trace_event *ev);
/* Same with trailing bytes (STRING/STACK payload). */
int tracer_emit_definition_data(const struct trace_event *ev, const void *data, size_t len);

/* Next connection id for this process. */
uint64_t tracer_next_conn_id(void);
/* The process's lock over ring 0 and the tables its threads share (string
 * table, datagram peers): spins, then yields. 0 when taken, -1 when this
 * thread holds it already (a signal handler nested in our own code: never
 * deadlock, the caller does without) or the process has no region. */
int tracer_process_lock(void);
void tracer_process_unlock(void);
/* The tracer's in-memory hash (string table, datagram peers). Never 0. */
uint64_t tracer_hash(const char *s, size_t len);

uint32_t tracer_gettid(void);
void tracer_set_parent_tid(uint32_t parent);
/* Called first thing in a thread the app created (its start routine's
 * trampoline): notes when it started (see tracer_thread.started_raw). */
void tracer_note_thread_start(void);

/* Set while a MySQL C API wrapper runs, so the wire parser does not count
 * the same query twice. */
extern __thread int tracer_in_db_capi;

/* Called by the process interposer after fork in the child / before exec. */
void tracer_after_fork_child(void);
void tracer_before_exec(const char *path);
int tracer_collector_env_present(void);

#endif
