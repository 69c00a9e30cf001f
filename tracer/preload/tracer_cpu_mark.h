/* tracer_cpu_mark.h - the ring clock, and the CPU time a thread ran between
 * its records (the CPU mark of struct tracer_thread): the inline stamps at
 * every event's start and end, and their slow sides (tracer_cpu_mark.c),
 * which read the thread's CPU clock when the mark no longer holds.
 *
 * The inlines here are the hot path of every wrapped call: they must stay
 * inline, read one word of the BPF slot at most, and never make a syscall
 * (rdtsc, or the vDSO's clock_gettime). */
#ifndef PREPLAY_TRACER_CPU_MARK_H
#define PREPLAY_TRACER_CPU_MARK_H

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "cpuclock.h"
#include "tracer_state.h"

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

/* Does the thread's CPU mark hold at ring time `now` (BPF: no switch
 * since; gap: no more than T since)? `until` before the load: it is 0
 * whenever seq_word may not be read. */
static inline __attribute__((always_inline)) int
tracer_cpu_mark_holds(const struct tracer_cpu_mark *m, uint64_t now)
{
    return now - m->raw <= m->gap && now <= m->until &&
           atomic_load_explicit(m->seq_word, memory_order_relaxed) == m->seq;
}

/* The CPU time a record carries when the mark holds at `now`: the span
 * since the mark, flagged when the clock estimates it. */
static inline __attribute__((always_inline)) uint64_t
tracer_cpu_mark_span(const struct tracer_cpu_mark *m, uint64_t now)
{
    return (now - m->raw) | m->est;
}

/* The slow sides of the CPU mark (tracer_cpu_mark.c): an exact read. begin
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
        *cpu = tracer_cpu_mark_span(&t->cpu, now);
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

/* A readiness wait (poll, select, epoll_wait: interpose_wait.c) is how the
 * app waits for work, which a replayer does its own way (its own epoll):
 * the wait's time, its kernel CPU included, is none of the app's CPU. No
 * record is written for it; wait_begin takes the CPU since the last record
 * (and the mark it was taken at) and wait_end moves the mark past the wait
 * with that CPU still on it, so the next record carries what ran before
 * and after the wait, not the wait. A record written during the wait (a
 * signal handler's traced call) took that CPU already: nothing is carried
 * then. */
struct tracer_cpu_wait {
    uint64_t carried; /* ring clock */
    uint64_t mark;    /* the mark's raw after wait_begin */
};

static inline __attribute__((always_inline)) struct tracer_cpu_wait
tracer_cpu_wait_begin(struct tracer_thread *t)
{
    uint64_t cpu;
    t->begin_ns = tracer_stamp(t, &cpu);
    return (struct tracer_cpu_wait){.carried = cpu & ~TRACER_CPU_ESTIMATED_BIT, .mark = t->cpu.raw};
}

static inline __attribute__((always_inline)) void tracer_cpu_wait_end(struct tracer_thread *t,
                                                                      struct tracer_cpu_wait w)
{
    uint64_t carried = t->cpu.raw == w.mark ? w.carried : 0;
    uint64_t end = tracer_ring_now();
    tracer_cpu_mark_move(t, end);
    t->cpu.raw = end > carried ? end - carried : 0;
}

#endif
