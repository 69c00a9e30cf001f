/* tracer_cpu_mark.c - the slow sides of the CPU mark (tracer_cpu_mark.h):
 * an exact read of the thread's CPU clock when the inline test finds the
 * thread was switched out (or the mark was never set), and the arithmetic
 * between the ring clock (rdtsc ticks or CLOCK_MONOTONIC ns) and CPU ns.
 *
 * Runs inside a wrapped call: no allocation, no lock, no syscall beyond
 * the CPU clock's own read, never a change to errno the app can see. */
#include "tracer_cpu_mark.h"

#include <string.h>

#include "cpu_time.h"
#include "shm_layout.h"
#include "tracer_thread.h"

/* The ring clock's relation to CLOCK_MONOTONIC, read once per slow read. */
struct tracer_clock_scale {
    int tsc;
    struct cpuclock_tsc_segment segment; /* when tsc */
    double ticks_per_ns;                 /* when tsc: 2^32 / rate */
};

static void tracer_clock_scale_read(struct tracer_clock_scale *s)
{
    s->tsc = tracer_global.ring_clock_tsc && tracer_cpu_time_tsc;
    if (s->tsc) {
        cpuclock_tsc_read(tracer_cpu_time_tsc, &s->segment);
        s->ticks_per_ns = s->segment.rate ? 4294967296.0 / (double)s->segment.rate : 0;
    }
}

static uint64_t tracer_clock_to_mono(const struct tracer_clock_scale *s, uint64_t raw)
{
    return s->tsc ? cpuclock_tsc_segment_to_mono(&s->segment, raw) : raw;
}

static uint64_t tracer_clock_span_ns(const struct tracer_clock_scale *s, uint64_t raw_span)
{
    return s->tsc ? cpuclock_tsc_segment_span_ns(&s->segment, raw_span) : raw_span;
}

/* ns -> ring clock ticks. A double multiply, not a 128-bit division (this
 * runs after every blocking call): exact to a tick below 2^53 ns. */
static uint64_t tracer_clock_span_raw(const struct tracer_clock_scale *s, uint64_t ns)
{
    if (!s->tsc)
        return ns;
    double raw = (double)ns * s->ticks_per_ns;
    return raw >= 9.2e18 ? UINT64_MAX / 2 : (uint64_t)raw;
}

void tracer_cpu_mark_reset(struct tracer_thread *t)
{
    memset(&t->cpu, 0, sizeof t->cpu);
    t->pending_cpu = 0;
}

/* The gap clock's constant switch count: its mark never sees a switch. */
static const _Atomic uint32_t tracer_cpu_gap_seq;

/* The CPU clock the thread's records imply at ring time `at` (>= the last
 * exact read): that read moved by the running time since (the fast path
 * charged every span since it as running). 0 when there was none. */
static uint64_t tracer_cpu_implied(const struct tracer_cpu_mark *m,
                                   const struct tracer_clock_scale *scale, uint64_t at)
{
    if (!m->anchor_cpu_ns)
        return 0;
    return at >= m->anchor_raw ? m->anchor_cpu_ns + tracer_clock_span_ns(scale, at - m->anchor_raw)
                               : m->anchor_cpu_ns - tracer_clock_span_ns(scale, m->anchor_raw - at);
}

/* With rseq, the longest the gap clock trusts "no switch since the last
 * read" before it reads again: a vCPU stall is no switch (its steal time
 * is not the thread's CPU time), so one such stall costs at most this
 * much, as CPUCLOCK_BPF_VERIFY_NS bounds the BPF clock's. */
#define TRACER_CPU_VERIFY_NS 2000000u

/* The gap clock's read (also --cpu-clock thread, and a BPF-mode thread
 * without a slot), at ring time `now` on the slow path:
 *  - rseq still armed since the last slow path: no switch since, the last
 *    value moved by the wall time, exact;
 *  - without rseq, a gap since the thread's previous stamp (its mark or
 *    its last slow path) no longer than T: that estimate, flagged;
 *  - else, or when the clock was last read more than TRACER_CPU_VERIFY_NS
 *    ago, CLOCK_THREAD_CPUTIME_ID (one syscall).
 * With rseq the slow path means the thread was switched out: it is read,
 *    never estimated. An estimate runs the clock the records imply at wall
 *    speed, also across the events in the gap, whose own time no record
 *    carries; when such an event held the switch (a short blocking round
 *    trip), its off-CPU part stayed in that clock and the next exact read
 *    took it from the records as an overcharge (tracer_cpu_begin_slow's
 *    floor): tt_cpuping recorded 8-10% less CPU than it used, and this is
 *    the mechanism found for WordPress's 14-17% less than bpf on a quiet
 *    machine (docs/cpu-time.md, "Short switched calls"). A read per
 *    switch costs ~0.5 us where the switch itself costs several. Without
 *    rseq the same loss remains (tt_cpuping: -9%).
 * Then arms rseq and the fast path: without rseq, spans up to T charged as
 * wall time (flagged); with it, any span with no switch in it (exact). */
static uint64_t tracer_cpu_gap_read(struct tracer_cpu_mark *m,
                                    const struct tracer_clock_scale *scale, uint64_t now,
                                    unsigned *flags)
{
    if (tracer_global.cpu_clock == TRACER_CPU_CLOCK_THREAD)
        return cpuclock_thread_read_ns();
    uint64_t gap = tracer_clock_span_raw(scale, tracer_global.cpu_gap_ns);
    uint64_t verify = tracer_clock_span_raw(scale, TRACER_CPU_VERIFY_NS);
    _Atomic uint64_t *rseq = tracer_rseq_word();
    uint64_t armed = tracer_rseq_armed();
    int unswitched = rseq && atomic_load_explicit(rseq, memory_order_relaxed) == armed &&
                     m->seq_word == (const _Atomic uint32_t *)(const void *)rseq;
    uint64_t last = m->raw > m->anchor_raw ? m->raw : m->anchor_raw;
    int recent = m->anchor_cpu_ns && m->read_raw && now >= m->read_raw &&
                 now - m->read_raw <= verify && now >= m->anchor_raw;
    /* Armed before the clock is read: a switch from here on (the read's
     * return to user space is where a thread past its slice is switched
     * out) clears it, and the fast path then does not extend this value
     * across the off-CPU time. */
    if (rseq) {
        atomic_store_explicit(rseq, armed, memory_order_relaxed);
        atomic_signal_fence(memory_order_seq_cst);
    }
    uint64_t cpu;
    if (recent && unswitched) {
        cpu = tracer_cpu_implied(m, scale, now);
    } else if (!rseq && recent && now >= last && now - last <= gap) {
        *flags = CPUCLOCK_ESTIMATED;
        cpu = tracer_cpu_implied(m, scale, now);
    } else {
        cpu = cpuclock_thread_read_ns();
        m->read_raw = now;
    }
    if (rseq) {
        m->seq_word = (const _Atomic uint32_t *)(const void *)rseq; /* the low half */
        m->seq = (uint32_t)armed;
        m->gap = INT64_MAX;
        m->est = 0;
        m->until = m->read_raw + verify;
    } else {
        m->seq_word = &tracer_cpu_gap_seq;
        m->seq = 0;
        m->gap = gap;
        m->est = TRACER_CPU_ESTIMATED_BIT;
        m->until = UINT64_MAX;
    }
    return cpu;
}

/* The thread's CPU clock (ns) at ring time `now`, 0 when unknown; *flags
 * gets CPUCLOCK_ESTIMATED when it was estimated, not read. Sets the mark's
 * fast-path validity: with the BPF clock only after a plain read of a slot
 * that no switch wrote meanwhile, and only until the slot's own trust limit
 * (on_cpu_since + CPUCLOCK_BPF_VERIFY_NS, when the read asks the kernel);
 * with the gap clock for spans up to T. */
static uint64_t tracer_cpu_exact(struct tracer_thread *t, const struct tracer_clock_scale *scale,
                                 uint64_t now, unsigned *flags)
{
    *flags = CPUCLOCK_EXACT;
    struct tracer_cpu_mark *m = &t->cpu;
    m->until = 0;
    if (!(tracer_global.only_mask & TRACER_ONLY_CPU))
        return 0;
    struct cpuclock_thread *th = &tracer_cpu_thread;
    if (tracer_global.cpu_clock == TRACER_CPU_CLOCK_BPF && th->mode == CPUCLOCK_MODE_NONE)
        tracer_cpu_time_claim_thread(tracer_gettid());
    if (tracer_global.cpu_clock != TRACER_CPU_CLOCK_BPF || th->mode != CPUCLOCK_MODE_BPF)
        return tracer_cpu_gap_read(m, scale, now, flags);
    uint64_t mono = tracer_clock_to_mono(scale, now);
    struct cpuclock_slot *slot = th->slot;
    uint32_t seq = atomic_load_explicit(&slot->seq, memory_order_acquire);
    uint64_t slow_reads = th->repairs + th->resyncs;
    uint64_t cpu = cpuclock_thread_now(th, mono, NULL);
    uint64_t on_since = atomic_load_explicit(&slot->on_cpu_since_ns, memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    if (cpu != 0 && th->repairs + th->resyncs == slow_reads &&
        seq == atomic_load_explicit(&slot->seq, memory_order_relaxed) &&
        on_since + CPUCLOCK_BPF_VERIFY_NS > mono) {
        m->seq_word = &slot->seq;
        m->seq = seq;
        m->gap = INT64_MAX;
        m->est = 0;
        m->until = now + tracer_clock_span_raw(scale, on_since + CPUCLOCK_BPF_VERIFY_NS - mono);
    }
    return cpu;
}

/* Does the gap clock keep what its estimates charged beyond the clock
 * (tracer_cpu_begin_slow) instead of forgetting it? */
static int tracer_cpu_gap_floors(void)
{
    return tracer_global.cpu_clock == TRACER_CPU_CLOCK_GAP;
}

uint64_t tracer_cpu_begin_slow(struct tracer_thread *t, uint64_t now)
{
    struct tracer_cpu_mark *m = &t->cpu;
    struct tracer_clock_scale scale;
    tracer_clock_scale_read(&scale);
    uint64_t until_before = m->until;
    unsigned flags;
    uint64_t cpu = tracer_cpu_exact(t, &scale, now, &flags);
    if (cpu == 0) {
        m->anchor_cpu_ns = 0;
        m->raw = now;
        return 0;
    }
    uint64_t carried_ns = 0;
    /* the CPU clock at the mark: the last exact read moved by the running
     * time between it and the mark (BPF: no switch in between; gap: what
     * the estimates charged) */
    uint64_t at_mark = tracer_cpu_implied(m, &scale, m->raw);
    if (m->anchor_cpu_ns)
        carried_ns = cpu > at_mark ? cpu - at_mark : 0;
    uint64_t carried = tracer_clock_span_raw(&scale, carried_ns);
    m->anchor_raw = now;
    /* gap clock: estimates that charged more than the thread ran (off-CPU
     * time inside a short gap) are taken back from what follows, not
     * forgotten, so the records' total stays the clock's */
    m->anchor_cpu_ns = tracer_cpu_gap_floors() && until_before && at_mark > cpu ? at_mark : cpu;
    m->raw = now > carried ? now - carried : 0;
    /* an estimate is corrected by the next exact read, so only a slice
     * ending in an estimate is one */
    return (now - m->raw) | (flags & CPUCLOCK_ESTIMATED ? TRACER_CPU_ESTIMATED_BIT : 0);
}

void tracer_cpu_end_slow(struct tracer_thread *t, uint64_t now)
{
    struct tracer_cpu_mark *m = &t->cpu;
    struct tracer_clock_scale scale;
    tracer_clock_scale_read(&scale);
    uint64_t until_before = m->until;
    /* gap clock: what the records charged up to the event's start */
    uint64_t begin = t->begin_ns < now ? t->begin_ns : now;
    uint64_t charged =
        m->est && until_before && begin >= m->anchor_raw ? tracer_cpu_implied(m, &scale, begin) : 0;
    unsigned flags;
    uint64_t cpu = tracer_cpu_exact(t, &scale, now, &flags);
    m->anchor_cpu_ns = cpu && charged > cpu ? charged : cpu;
    m->anchor_raw = now;
    m->raw = now;
}
