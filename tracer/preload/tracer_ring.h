/* tracer_ring.h - writing records into a thread's shared-memory ring: the
 * inline fast paths (a record that fits at once is reserved, filled and
 * published with a few stores) and the general path (tracer_ring.c), which
 * pads at the ring's end, waits for the collector or drops.
 *
 * The inlines here are the hot path of every wrapped call: they must stay
 * inline, never allocate, and hold the busy mark while a record is half
 * written, so that a signal handler's traced call records nothing then. */
#ifndef PREPLAY_TRACER_RING_H
#define PREPLAY_TRACER_RING_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "stacks.h"
#include "tracer_cpu_mark.h"
#include "tracer_state.h"

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

/* Appends a whole event `src` and `len` trailing bytes to ring 0, the
 * process's ring (definitions and strings). The caller holds the process
 * lock (tracer_process_lock). 0, or -1 when the record is dropped. */
int tracer_ring0_append(const struct trace_event *src, const void *data, size_t len);

/* In a fork child: the collector drains the child's new rings, so it
 * starts waiting again instead of dropping. */
void tracer_ring_after_fork(void);

#endif
