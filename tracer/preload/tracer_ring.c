/* tracer_ring.c - the general path of writing a record (tracer_ring.h):
 * padding at the ring's end, back-pressure (waiting for the collector to
 * drain, with the busy mark down), dropping when it does not, and appending
 * to ring 0 for the process's definitions.
 *
 * Runs inside the app: raw syscalls only, errno kept, never an allocation;
 * a collector that stops draining makes the process count losses, never
 * hang. */
#include "tracer_ring.h"

#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int tracer_drop_local; /* collector stopped draining: drop from now on */

static void tracer_futex_wait(_Atomic uint32_t *word, uint32_t val, long ns)
{
    struct timespec ts = {.tv_sec = 0, .tv_nsec = ns};
    syscall(SYS_futex, word, FUTEX_WAIT, val, &ts, NULL, 0);
}

static void tracer_futex_wake(_Atomic uint32_t *word)
{
    syscall(SYS_futex, word, FUTEX_WAKE, 1, NULL, NULL, 0);
}

/* Waits for `need` bytes of room in ring r (back-pressure). Returns 0 when
 * room is there, -1 when the collector does not drain (then this process
 * switches to counting losses rather than hanging the app). */
static int tracer_wait_room(struct tracer_ring *r, uint64_t head, uint64_t need)
{
    struct tracer_control *ctl = tracer_global.control;
    uint64_t last_tail = atomic_load_explicit(&r->tail, memory_order_acquire);
    int stalled_ms = 0;
    int saved_errno = errno; /* the futex calls must not show through (lock wrappers) */
    for (;;) {
        uint64_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
        if (TRACER_RING_DATA_BYTES - (head - tail) >= need) {
            errno = saved_errno;
            return 0;
        }
        if (tail != last_tail) {
            last_tail = tail;
            stalled_ms = 0;
        }
        if (stalled_ms >= TRACER_COLLECTOR_PATIENCE_MS) {
            errno = saved_errno;
            return -1;
        }
        atomic_store_explicit(&r->producer_waiting, 1, memory_order_seq_cst);
        atomic_store_explicit(&ctl->collector_wake, 1, memory_order_release);
        tracer_futex_wake(&ctl->collector_wake);
        tracer_futex_wait(&r->producer_waiting, 1, 1000000);
        stalled_ms++;
    }
}

/* Reserves a record of `event_bytes` of struct trace_event (a prefix: the
 * common fields and the union member the type uses) plus `extra` bytes in
 * ring r. `cached_tail` (per-thread rings only) avoids re-reading the
 * collector's tail while the last known free space suffices. The record's
 * size is returned in *size for the commit. */
static struct trace_event *tracer_reserve_in(struct tracer_ring *r, size_t event_bytes,
                                             size_t extra, uint64_t *cpu_slot,
                                             uint64_t *cached_tail, uint32_t *size,
                                             uint64_t *wait_for, int zero)
{
    size_t need = (sizeof(struct tracer_record_header) + event_bytes + extra + 7) & ~(size_t)7;
    if (need > TRACER_RING_DATA_BYTES / 4)
        return NULL;
    uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    uint64_t pos = head % TRACER_RING_DATA_BYTES;
    uint64_t pad = TRACER_RING_DATA_BYTES - pos < need ? TRACER_RING_DATA_BYTES - pos : 0;
    uint64_t tail = cached_tail ? *cached_tail : 0;
    if (!cached_tail || TRACER_RING_DATA_BYTES - (head - tail) < need + pad) {
        tail = atomic_load_explicit(&r->tail, memory_order_acquire);
        if (cached_tail)
            *cached_tail = tail;
    }
    if (TRACER_RING_DATA_BYTES - (head - tail) < need + pad) {
        if (wait_for && !tracer_global.control->drop_when_full && !tracer_drop_local) {
            *wait_for = need + pad; /* the caller waits, then tries again */
            return NULL;
        }
        if (tracer_global.control->drop_when_full || tracer_drop_local ||
            tracer_wait_room(r, head, need + pad) < 0) {
            if (!tracer_global.control->drop_when_full)
                tracer_drop_local = 1;
            atomic_fetch_add_explicit(&r->lost, 1, memory_order_relaxed);
            return NULL;
        }
        if (cached_tail)
            *cached_tail = atomic_load_explicit(&r->tail, memory_order_acquire);
    }
    if (pad) {
        struct tracer_record_header *ph = (struct tracer_record_header *)(r->data + pos);
        ph->size = (uint32_t)pad;
        ph->kind = TRACER_REC_PAD;
        head += pad;
        atomic_store_explicit(&r->head, head, memory_order_release);
        pos = 0;
    }
    unsigned char *rec = r->data + pos;
    struct tracer_record_header *h = (struct tracer_record_header *)rec;
    tracer_record_header_set(h, (uint32_t)need, TRACER_REC_EVENT, cpu_slot ? *cpu_slot : 0);
    if (cpu_slot)
        *cpu_slot = 0;
    *size = (uint32_t)need;
    struct trace_event *ev = (struct trace_event *)(rec + sizeof *h);
    if (zero)
        memset(ev, 0, event_bytes);
    return ev;
}

/* A full thread ring is waited for with the busy mark down: nothing of the
 * record is written yet, so a signal handler's call during the wait (which
 * lasts until the collector drains, milliseconds under back-pressure) is
 * recorded normally instead of being counted as lost; the reservation then
 * starts over from the ring's new head. */
static struct trace_event *tracer_reserve_thread(struct tracer_thread *t, size_t event_bytes,
                                                 size_t extra, int zero)
{
    if (!t->ring)
        return NULL;
    for (;;) {
        uint64_t wait_for = 0;
        tracer_busy_enter(t);
        struct trace_event *ev =
            tracer_reserve_in(t->ring, event_bytes, extra, &t->pending_cpu, &t->cached_tail,
                              &t->pending_size, &wait_for, zero);
        if (ev)
            return ev;
        tracer_busy_leave(t);
        if (!wait_for || !t->ring)
            return NULL;
        struct tracer_ring *r = t->ring;
        if (tracer_wait_room(r, atomic_load_explicit(&r->head, memory_order_relaxed), wait_for) <
            0) {
            /* the collector does not drain: count losses from now on */
            tracer_drop_local = 1;
            atomic_fetch_add_explicit(&r->lost, 1, memory_order_relaxed);
            return NULL;
        }
        t->cached_tail = atomic_load_explicit(&r->tail, memory_order_acquire);
    }
}

struct trace_event *tracer_reserve_bytes(struct tracer_thread *t, size_t event_bytes, size_t extra)
{
    return tracer_reserve_thread(t, event_bytes, extra, 1);
}

struct trace_event *tracer_reserve_uninit(struct tracer_thread *t, size_t event_bytes)
{
    return tracer_reserve_thread(t, event_bytes, 0, 0);
}

struct trace_event *tracer_reserve(struct tracer_thread *t, size_t extra)
{
    return tracer_reserve_bytes(t, sizeof(struct trace_event), extra);
}

int tracer_ring0_append(const struct trace_event *src, const void *data, size_t len)
{
    struct tracer_ring *r0 = tracer_region_ring(tracer_global.region, 0);
    uint32_t size;
    struct trace_event *ev =
        tracer_reserve_in(r0, sizeof(struct trace_event), len, NULL, NULL, &size, NULL, 0);
    if (!ev)
        return -1;
    *ev = *src; /* the whole event: nothing to zero first */
    ev->data = NULL;
    if (len)
        memcpy((unsigned char *)(ev + 1), data, len);
    uint64_t head = atomic_load_explicit(&r0->head, memory_order_relaxed);
    atomic_store_explicit(&r0->head, head + size, memory_order_release);
    return 0;
}

void tracer_ring_after_fork(void)
{
    tracer_drop_local = 0;
}
