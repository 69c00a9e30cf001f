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
#include <time.h>

#include "cpu_time.h"
#include "cpuclock.h"
#include "shm_layout.h"
#include "trace_event.h"

#define TRACER_EXPORT __attribute__((visibility("default")))
#define TRACER_LIKELY(x) __builtin_expect(!!(x), 1)
#define TRACER_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* Declares `real_NAME`, a pointer to the next definition of NAME, resolved
 * on first use (wrappers can run before our constructor). */
#define TRACER_REAL(ret, name, params)                                                             \
    typedef ret(*tracer_##name##_fn) params;                                                       \
    static tracer_##name##_fn real_##name;                                                         \
    static inline tracer_##name##_fn tracer_real_##name(void)                                      \
    {                                                                                              \
        if (TRACER_UNLIKELY(!real_##name))                                                         \
            real_##name = (tracer_##name##_fn)tracer_resolve(#name);                               \
        return real_##name;                                                                        \
    }

/* Per-thread tracer state (thread-local, initial-exec TLS). */
struct tracer_thread {
    struct tracer_ring *ring; /* NULL: no ring (not claimed yet or none free) */
    uint32_t tid;
    uint32_t busy;            /* nonzero while we touch the ring or our tables */
    uint32_t claimed_gen;     /* region generation the ring belongs to */
    uint64_t cpu_at_last_end; /* thread CPU ns when its previous event ended */
    uint32_t parent_tid;
    uint32_t has_cpu;
    uint32_t recorded;     /* a record was committed since tracer_event_begin */
    uint32_t pending_size; /* size of the record reserved, for its commit */
    uint64_t begin_ns;     /* start of the current event */
    uint64_t cached_tail;  /* collector's tail as last read (free space known) */
    uint32_t internal;     /* nonzero while our own code calls into other libraries */
    /* The last CPU clock read (cpu_at_last_end is its value): when the BPF
     * slot's seq still equals cpu_mark_seq, the thread has not been switched
     * out since, so its CPU time grew exactly as the wall clock did. */
    uint32_t cpu_mark_seq;
    uint32_t cpu_mark_valid;
    uint64_t cpu_mark_mono;
    uint64_t cpu_mark_until; /* the slot's own trust limit (CPUCLOCK_BPF_VERIFY_NS) */
    /* CPU ns the next record carries (its cpu_before_ns), accumulated by
     * tracer_event_begin; the record that takes it zeroes it. */
    uint64_t pending_cpu;
    /* The ring head up to which records fit without a look at the
     * collector's tail or the ring's end (tracer_reserve_fast). */
    uint64_t fast_limit;
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

/* Global state of the library in this process. */
struct tracer_state {
    void *region; /* mapped shared region, NULL when inactive */
    struct tracer_control *control;
    uint32_t generation; /* bumped on re-registration (fork) */
    uint32_t pid;
    int active;
};

extern struct tracer_state tracer_global;

void *tracer_resolve(const char *name);

/* The calling thread's state (initial-exec TLS: one %fs-relative access). */
extern __thread struct tracer_thread tracer_tls __attribute__((tls_model("initial-exec")));

struct tracer_thread *tracer_enter_slow(struct tracer_thread *t);

/* Returns the calling thread's state if an event of `family` (TRACER_ONLY_*)
 * should be traced now, else NULL. Claims a ring on first use. Inline: it
 * runs before every wrapped call, and the common answer takes a few loads. */
static inline struct tracer_thread *tracer_enter(uint32_t family)
{
    if (TRACER_UNLIKELY(!tracer_global.active))
        return NULL;
    struct tracer_control *ctl = tracer_global.control;
    if (!atomic_load_explicit(&ctl->enabled, memory_order_relaxed) || !(ctl->only_mask & family))
        return NULL;
    struct tracer_thread *t = &tracer_tls;
    if (TRACER_LIKELY(!t->busy && t->ring && t->claimed_gen == tracer_global.generation))
        return t;
    return tracer_enter_slow(t);
}

/* CLOCK_MONOTONIC nanoseconds: rdtsc converted with the collector's
 * calibration when there is one (~2x cheaper), else the vDSO. */
static inline uint64_t tracer_now_ns(void)
{
    const struct cpuclock_tsc *tsc = tracer_cpu_time_tsc;
    if (TRACER_LIKELY(tsc != NULL))
        return cpuclock_tsc_mono_now(tsc);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The thread's CPU time at CLOCK_MONOTONIC `now` (0 when unknown), and the
 * mark for the next read. In BPF mode a read with the slot's seq unchanged
 * since the last one is the last value plus the wall time since: the same
 * number the full read gives (total + now - on_cpu_since, with total and
 * on_cpu_since unchanged), for one load instead of five and their checks,
 * and only as long as the full read would trust the slot (until
 * on_cpu_since + CPUCLOCK_BPF_VERIFY_NS, when it asks the kernel). */
static inline __attribute__((always_inline)) uint64_t tracer_cpu_at(struct tracer_thread *t,
                                                                    uint64_t now)
{
    struct cpuclock_thread *th = &tracer_cpu_thread;
    if (TRACER_LIKELY(th->mode == CPUCLOCK_MODE_BPF)) {
        struct cpuclock_slot *slot = th->slot;
        uint32_t seq = atomic_load_explicit(&slot->seq, memory_order_acquire);
        if (TRACER_LIKELY(seq == t->cpu_mark_seq && t->cpu_mark_valid && now >= t->cpu_mark_mono &&
                          now <= t->cpu_mark_until)) {
            uint64_t cpu = t->cpu_at_last_end + (now - t->cpu_mark_mono);
            t->cpu_mark_mono = now;
            return cpu;
        }
        uint64_t slow_reads = th->repairs + th->resyncs;
        uint64_t cpu = cpuclock_thread_now(th, now, NULL);
        uint64_t on_since = atomic_load_explicit(&slot->on_cpu_since_ns, memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
        /* a mark only from a plain read of a slot nobody wrote meanwhile */
        t->cpu_mark_valid = cpu != 0 && th->repairs + th->resyncs == slow_reads &&
                            seq == atomic_load_explicit(&slot->seq, memory_order_relaxed);
        t->cpu_mark_seq = seq;
        t->cpu_mark_mono = now;
        t->cpu_mark_until = on_since + CPUCLOCK_BPF_VERIFY_NS;
        return cpu;
    }
    t->cpu_mark_valid = 0;
    return tracer_cpu_time_now(now);
}

/* Starts an event: remembers the CPU time the thread used since its
 * previous event ended (attached to the next record written). Returns the
 * event's start, CLOCK_MONOTONIC ns. */
static inline __attribute__((always_inline)) uint64_t tracer_event_begin(struct tracer_thread *t)
{
    uint64_t now = tracer_now_ns();
    t->begin_ns = now;
    if (tracer_global.control->only_mask & TRACER_ONLY_CPU) {
        const struct cpuclock_thread *th = &tracer_cpu_thread;
        if (TRACER_LIKELY(th->mode == CPUCLOCK_MODE_BPF &&
                          atomic_load_explicit(&th->slot->seq, memory_order_acquire) ==
                              t->cpu_mark_seq &&
                          t->cpu_mark_valid && now >= t->cpu_mark_mono &&
                          now <= t->cpu_mark_until && t->has_cpu)) {
            /* tracer_cpu_at's shortcut, folded: the segment is the wall time */
            uint64_t ran = now - t->cpu_mark_mono;
            t->pending_cpu += ran;
            t->cpu_at_last_end += ran;
            t->cpu_mark_mono = now;
            return now;
        }
        uint64_t cpu = tracer_cpu_at(t, now);
        if (t->has_cpu && cpu > t->cpu_at_last_end)
            t->pending_cpu += cpu - t->cpu_at_last_end;
        t->cpu_at_last_end = cpu;
        t->has_cpu = cpu != 0;
    }
    return now;
}

/* Ends an event: the next CPU segment starts at `end_ns`. When the call
 * produced no record (e.g. EAGAIN), the CPU segment simply continues: the
 * next record carries the time from tracer_event_begin on. */
static inline __attribute__((always_inline)) void tracer_event_end(struct tracer_thread *t,
                                                                   uint64_t end_ns)
{
    if (!t->recorded)
        return;
    t->recorded = 0;
    /* end == begin (an uncontended lock): the CPU value read at begin holds */
    if (t->has_cpu && end_ns != t->begin_ns)
        t->cpu_at_last_end = tracer_cpu_at(t, end_ns);
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

/* Bytes of struct trace_event an event of `type` uses: the common fields and
 * its union member (records in the ring are that long, not the full union). */
static inline size_t tracer_event_bytes(uint8_t type)
{
#define TRACER_EV_BYTES(member)                                                                    \
    (offsetof(struct trace_event, u) + sizeof(((struct trace_event *)0)->u.member))
    switch (type) {
    case TRACE_EV_FILE:
        return TRACER_EV_BYTES(file);
    case TRACE_EV_NET:
        return TRACER_EV_BYTES(net);
    case TRACE_EV_LOCK:
        return TRACER_EV_BYTES(lock);
    case TRACE_EV_DB:
        return TRACER_EV_BYTES(db);
    case TRACE_EV_LABEL:
        return TRACER_EV_BYTES(label);
    case TRACE_EV_SOCKOPT:
        return TRACER_EV_BYTES(sockopt);
    case TRACE_EV_CONTROL:
        return TRACER_EV_BYTES(control);
    default:
        return sizeof(struct trace_event);
    }
#undef TRACER_EV_BYTES
}

/* Fast path for a small record of `need` bytes (a multiple of 8) in the
 * thread's ring, for callers that hold the busy mark: the record's place
 * when it fits before the ring's end in the free space last seen, else NULL
 * (the caller takes the general path, which waits, pads or drops). Commit
 * with tracer_commit. The ring size is a power of two: the modulo is a mask. */
static inline void *tracer_reserve_fast(struct tracer_thread *t, uint32_t need)
{
    struct tracer_ring *r = t->ring;
    uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    if (TRACER_UNLIKELY(head + need > t->fast_limit)) {
        /* the next ring boundary after head, or a full ring past the tail */
        uint64_t ring_end = (head | (TRACER_RING_DATA_BYTES - 1)) + 1;
        uint64_t tail_end = t->cached_tail + TRACER_RING_DATA_BYTES;
        t->fast_limit = ring_end < tail_end ? ring_end : tail_end;
        if (head + need > t->fast_limit)
            return NULL;
    }
    t->pending_size = need;
    return r->data + (head & (TRACER_RING_DATA_BYTES - 1));
}

/* --stacks: id of the calling thread's current stack (0: none). stacks.c */
uint32_t tracer_stack_id(uint32_t depth);
void tracer_stacks_after_fork(void);

/* Convenience for the common case: reserve, fill the common fields. */
static inline struct trace_event *tracer_event_new(struct tracer_thread *t, uint8_t type,
                                                   uint8_t op, uint64_t begin_ns, uint64_t end_ns)
{
    uint32_t stack = 0;
    if (TRACER_UNLIKELY(tracer_global.control->stack_depth) && !t->busy) {
        tracer_busy_enter(t); /* libunwind and dladdr call (traced) pthread locks */
        t->internal++;
        stack = tracer_stack_id(tracer_global.control->stack_depth);
        t->internal--;
        tracer_busy_leave(t);
    }
    struct trace_event *ev = tracer_reserve_bytes(t, tracer_event_bytes(type), 0);
    if (!ev)
        return NULL;
    ev->stack_id = stack;
    ev->type = type;
    ev->op = op;
    ev->tid = t->tid;
    ev->ts_ns = begin_ns;
    ev->dur_ns = end_ns > begin_ns ? end_ns - begin_ns : 0;
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

uint32_t tracer_gettid(void);
void tracer_set_parent_tid(uint32_t parent);

/* Set while a MySQL C API wrapper runs, so the wire parser does not count
 * the same query twice. */
extern __thread int tracer_in_db_capi;

/* Called by the process interposer after fork in the child / before exec. */
void tracer_after_fork_child(void);
void tracer_before_exec(const char *path);
int tracer_collector_env_present(void);

#endif
