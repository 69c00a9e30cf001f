/* cpuclock.h - per-thread CPU time at every traced event without a syscall per event.
 *
 * The tracer needs each thread's CPU time at every event. CLOCK_THREAD_CPUTIME_ID
 * is a ~390 ns syscall here, so this module offers two cheaper sources behind one
 * read function (docs/cpu-time.md has the design and the measurements):
 *
 *   BPF mode   A BPF program on sched_switch (loaded by the collector, which runs
 *              as root: cpuclock_loader.h) writes, for every thread that claimed a
 *              slot of a shared mmap-able array, its scheduler CPU time at the last
 *              switch and the CLOCK_MONOTONIC time it was switched in. The thread
 *              reads total + (now - on_cpu_since) under a sequence check: exact at
 *              every context switch, a few ns per read, no syscall.
 *   fallback   Without the BPF table (no root, no BPF, other pid namespace) the
 *              thread reads CLOCK_THREAD_CPUTIME_ID only when the wall time since
 *              the last precise read exceeds a threshold and estimates shorter
 *              segments as running wall time (flagged CPUCLOCK_ESTIMATED).
 *
 * Both give the thread's CPU clock (same origin as CLOCK_THREAD_CPUTIME_ID), so
 * segment CPU time is the difference of two reads. "now" is CLOCK_MONOTONIC
 * nanoseconds; cpuclock_tsc_to_mono() turns an rdtsc value into it in ~ns using a
 * seqlock-protected parameter block one process calibrates and many read.
 *
 * The read path (cpuclock_thread_now, cpuclock_tsc_*_now/_to_mono) is async-signal-
 * safe: no locks, no allocation, no syscalls in BPF mode (the fallback makes one
 * clock_gettime when its threshold is exceeded). This header must never grow
 * anything that blocks or allocates on that path. The app side (this header and
 * the preplay_cpuclock library) never needs libbpf.
 */
#ifndef PREPLAY_CPUCLOCK_H
#define PREPLAY_CPUCLOCK_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- shared table layout (must match cpuclock_sched_switch.bpf.c) ---- */

#define CPUCLOCK_SLOT_COUNT 65536u /* slots indexed by tid & (COUNT - 1) */
#define CPUCLOCK_HEADER_ENTRIES 4u /* array entries after the slots holding the header */
/* After the header: one bit per slot, set while the slot is claimed (8 KiB,
 * 256 entries of 256 bits). The BPF program tests the bit before it touches
 * the slot, so a context switch of an untraced task reads two words of a
 * small, cache-resident bitmap instead of two lines of the 2 MiB slot array. */
#define CPUCLOCK_BITMAP_ENTRIES (CPUCLOCK_SLOT_COUNT / 256u)
#define CPUCLOCK_MAGIC 0x4b4c4343u /* "CCLK" */
#define CPUCLOCK_VERSION 3u

/* One thread's slot. Written by the BPF program at each switch of the thread
 * whose tid is in `tid`, and by that thread itself when it claims the slot. */
struct cpuclock_slot {
    _Atomic uint32_t tid;              /* owner thread (kernel tid), 0 = free */
    _Atomic uint32_t seq;              /* +1 after every kernel update */
    _Atomic uint64_t total_ns;         /* scheduler CPU time at the last switch */
    _Atomic uint64_t on_cpu_since_ns;  /* CLOCK_MONOTONIC of the last switch-in */
    _Atomic uint64_t off_cpu_since_ns; /* CLOCK_MONOTONIC of the last switch-out */
};

/* TSC -> CLOCK_MONOTONIC conversion parameters, seqlock-protected: one writer
 * (cpuclock_tsc_calibrate/recalibrate), any number of readers in any process
 * that maps the block. For tsc >= base_tsc:
 *   mono = base_mono + (min(d, slew_cycles) * mult + max(d - slew_cycles, 0) * rate) >> 32
 * with d = tsc - base_tsc: `mult` (the rate plus a slew toward clock_gettime)
 * holds for slew_cycles, then the plain rate does, so a late recalibration
 * never overshoots. Durations convert with `rate`. */
struct cpuclock_tsc {
    _Atomic uint32_t seq;          /* odd while the writer updates */
    _Atomic uint32_t valid;        /* 1 once calibrated */
    _Atomic uint64_t mult;         /* ns per cycle while slewing, 32.32 fixed point */
    _Atomic uint64_t base_tsc;     /* conversion origin */
    _Atomic uint64_t base_mono_ns; /* CLOCK_MONOTONIC at base_tsc */
    _Atomic uint64_t rate;         /* ns per cycle estimated, 32.32 fixed point */
    _Atomic uint64_t slew_cycles;  /* cycles after base_tsc during which `mult` holds */
    /* Writer-only state (long-baseline frequency estimate). */
    _Atomic uint64_t anchor_tsc;
    _Atomic uint64_t anchor_mono_ns;
    _Atomic uint64_t calibrations;
    _Atomic uint64_t
        last_offset_error_ns; /* |conversion - clock_gettime| seen at the last recalibration */
};

/* Header stored in the array entries after the slots (written by the loader). */
struct cpuclock_header {
    uint32_t magic;
    uint32_t version;
    uint32_t slot_count;
    uint32_t flags; /* CPUCLOCK_HEADER_TSC_VALID: `tsc` is maintained by the loader */
    uint64_t pidns_dev;
    uint64_t pidns_ino; /* pid namespace of the loader: tids are only meaningful there */
    struct cpuclock_tsc tsc;
};
#define CPUCLOCK_HEADER_TSC_VALID 1u

#define CPUCLOCK_SLOT_SIZE 32u
#define CPUCLOCK_MAP_ENTRIES                                                                       \
    (CPUCLOCK_SLOT_COUNT + CPUCLOCK_HEADER_ENTRIES + CPUCLOCK_BITMAP_ENTRIES)
_Static_assert(sizeof(struct cpuclock_slot) == CPUCLOCK_SLOT_SIZE, "slot layout is ABI");
_Static_assert(sizeof(struct cpuclock_header) <= CPUCLOCK_HEADER_ENTRIES * CPUCLOCK_SLOT_SIZE,
               "header must fit its entries");

/* ---- TSC clock ---- */

static inline uint64_t cpuclock_rdtsc(void)
{
    uint32_t lo, hi;
    __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
}

/* Calibrates `tsc` from scratch: two (tsc, CLOCK_MONOTONIC) pairs `span_ns` apart
 * (the calling thread busy-waits). 10 ms gives ~1 ppm. Returns 0, or -1 with errno
 * (ENOTSUP when the TSC is not usable as a clock: no constant_tsc/nonstop_tsc). */
int cpuclock_tsc_calibrate(struct cpuclock_tsc *tsc, uint64_t span_ns);

/* 1 when the kernel keeps time with the TSC (its clocksource is "tsc"), or
 * when it cannot be told; else 0 with the reason in why. A kernel on another
 * clocksource (kvm-clock, hpet) has found the TSC unfit or untrusted, e.g.
 * not in step across CPUs: then raw TSC values from different CPUs cannot be
 * compared, and traces must not be timed with them. */
int cpuclock_tsc_kernel_uses_it(char *why, size_t whylen);

/* The most the conversion may be behind clock_gettime before it steps. */
#define CPUCLOCK_TSC_STEP_NS 1000000u
/* Ahead, the conversion slews over at least this many times its offset (so
 * its rate is at most 1/CPUCLOCK_TSC_SLEW_MIN_SPAN slower than the estimate). */
#define CPUCLOCK_TSC_SLEW_MIN_SPAN 10u

/* Recalibrates without a jump: the rate is re-estimated over the whole baseline
 * since the first calibration and the current offset to clock_gettime is slewed
 * away over `slew_ns` (the expected interval to the next call, e.g. 1 s), then
 * the plain rate holds. The conversion never goes backwards (event times come
 * from it): it steps forward when it is more than 1 ms behind, and when it is
 * ahead it slews, at most 10% slower than the rate. slew_ns 0 steps to
 * clock_gettime either way. Call it periodically from one thread of one
 * process. Returns 0 or -1 with errno. */
int cpuclock_tsc_recalibrate(struct cpuclock_tsc *tsc, uint64_t slew_ns);

/* The conversions one writer published, kept by a consumer that converts
 * TSC values some time after they were taken (the collector converts the
 * rings' raw timestamps). A value taken while a conversion was in force
 * converts with it: the newest kept one whose base_tsc is <= the value
 * (recalibration publishes with base_tsc = the TSC at that moment), so the
 * consumer gets the number the producer would have got converting at once,
 * across slews and steps. Older values than the oldest kept conversion use
 * it. Not thread-safe: one consumer thread notes and converts. */
#define CPUCLOCK_TSC_HISTORY 64u
struct cpuclock_tsc_segment {
    uint64_t base_tsc, base_mono_ns, mult, rate, slew_cycles;
};
struct cpuclock_tsc_history {
    struct cpuclock_tsc_segment segment[CPUCLOCK_TSC_HISTORY];
    uint32_t count;  /* kept, <= CPUCLOCK_TSC_HISTORY */
    uint32_t newest; /* index of the newest */
};

/* Notes the conversion `tsc` holds now (call after every (re)calibration;
 * a repeat of the newest is ignored). Returns 0, or -1 if `tsc` is not
 * calibrated. */
int cpuclock_tsc_history_note(struct cpuclock_tsc_history *h, const struct cpuclock_tsc *tsc);

static inline uint64_t cpuclock_tsc_segment_to_mono(const struct cpuclock_tsc_segment *s,
                                                    uint64_t cycles)
{
    __extension__ typedef unsigned __int128 cpuclock_u128;
    if (cycles < s->base_tsc)
        return s->base_mono_ns -
               (uint64_t)(((cpuclock_u128)(s->base_tsc - cycles) * s->rate) >> 32);
    uint64_t d = cycles - s->base_tsc;
    if (d <= s->slew_cycles)
        return s->base_mono_ns + (uint64_t)(((cpuclock_u128)d * s->mult) >> 32);
    return s->base_mono_ns + (uint64_t)(((cpuclock_u128)s->slew_cycles * s->mult) >> 32) +
           (uint64_t)(((cpuclock_u128)(d - s->slew_cycles) * s->rate) >> 32);
}

/* A span of `cycles` TSC ticks in ns, at the estimated rate (not slewed). */
static inline uint64_t cpuclock_tsc_segment_span_ns(const struct cpuclock_tsc_segment *s,
                                                    uint64_t cycles)
{
    __extension__ typedef unsigned __int128 cpuclock_u128;
    return (uint64_t)(((cpuclock_u128)cycles * s->rate) >> 32);
}

/* The segment in force when `cycles` was taken (NULL when none is kept). */
static inline const struct cpuclock_tsc_segment *
cpuclock_tsc_history_segment(const struct cpuclock_tsc_history *h, uint64_t cycles)
{
    if (h->count == 0)
        return NULL;
    uint32_t i = h->newest;
    for (uint32_t n = 1; n < h->count && cycles < h->segment[i].base_tsc; n++)
        i = (i + CPUCLOCK_TSC_HISTORY - 1) % CPUCLOCK_TSC_HISTORY;
    return &h->segment[i];
}

/* CLOCK_MONOTONIC ns of a TSC value, with the conversion in force when it was
 * taken (0 when nothing is kept). */
static inline uint64_t cpuclock_tsc_history_to_mono(const struct cpuclock_tsc_history *h,
                                                    uint64_t cycles)
{
    const struct cpuclock_tsc_segment *s = cpuclock_tsc_history_segment(h, cycles);
    return s ? cpuclock_tsc_segment_to_mono(s, cycles) : 0;
}

/* The conversion `tsc` holds now, read under its seqlock (lock-free). */
static inline void cpuclock_tsc_read(const struct cpuclock_tsc *tsc,
                                     struct cpuclock_tsc_segment *out)
{
    uint32_t seq;
    do {
        seq = atomic_load_explicit(&tsc->seq, memory_order_acquire);
        out->mult = atomic_load_explicit(&tsc->mult, memory_order_relaxed);
        out->base_tsc = atomic_load_explicit(&tsc->base_tsc, memory_order_relaxed);
        out->base_mono_ns = atomic_load_explicit(&tsc->base_mono_ns, memory_order_relaxed);
        out->rate = atomic_load_explicit(&tsc->rate, memory_order_relaxed);
        out->slew_cycles = atomic_load_explicit(&tsc->slew_cycles, memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
    } while ((seq & 1u) || seq != atomic_load_explicit(&tsc->seq, memory_order_relaxed));
}

/* Converts a TSC value to CLOCK_MONOTONIC ns. Lock-free seqlock read. */
static inline uint64_t cpuclock_tsc_to_mono(const struct cpuclock_tsc *tsc, uint64_t cycles)
{
    struct cpuclock_tsc_segment segment;
    cpuclock_tsc_read(tsc, &segment);
    return cpuclock_tsc_segment_to_mono(&segment, cycles);
}

/* rdtsc converted: CLOCK_MONOTONIC now, ~2x cheaper than the vDSO here. */
static inline uint64_t cpuclock_tsc_mono_now(const struct cpuclock_tsc *tsc)
{
    return cpuclock_tsc_to_mono(tsc, cpuclock_rdtsc());
}

/* ---- the table (app side) ---- */

/* An attached table: the BPF map mmapped into this process. */
struct cpuclock_table {
    struct cpuclock_slot *slots;    /* CPUCLOCK_SLOT_COUNT slots */
    struct cpuclock_header *header; /* after the slots */
    _Atomic uint64_t *claimed;      /* after the header: bit i set while slot i is claimed */
    size_t map_bytes;
};

/* The claimed-bitmap of a mapping that starts with the slots. */
static inline _Atomic uint64_t *cpuclock_table_bitmap(void *map)
{
    return (_Atomic uint64_t *)((char *)map +
                                (size_t)(CPUCLOCK_SLOT_COUNT + CPUCLOCK_HEADER_ENTRIES) *
                                    CPUCLOCK_SLOT_SIZE);
}

/* Maps the table whose BPF map fd the collector sent. The fd may be closed
 * afterwards (the mapping keeps the map alive). Checks magic, version, size and
 * that this process is in the loader's pid namespace (tids must agree with the
 * kernel's). Returns 0, or -1 with a one-line reason in err. */
int cpuclock_attach(int map_fd, struct cpuclock_table *table, char *err, size_t errlen);
void cpuclock_detach(struct cpuclock_table *table);

/* The clock page: without the BPF clock the collector still shares its TSC
 * calibration, as a one-page memfd holding a header with no slots
 * (slot_count 0, cpuclock_clock_page_create in cpuclock_loader.h). Maps it
 * into `table` (header only, slots NULL). Returns 0, or -1 with a one-line
 * reason in err. */
#define CPUCLOCK_PAGE_BYTES 4096u
_Static_assert(sizeof(struct cpuclock_header) <= CPUCLOCK_PAGE_BYTES, "header fits the page");
int cpuclock_attach_page(int fd, struct cpuclock_table *table, char *err, size_t errlen);

/* The calling thread's CLOCK_THREAD_CPUTIME_ID in ns (one syscall), errno
 * left as it was; 0 when it cannot be read. */
uint64_t cpuclock_thread_read_ns(void);

/* ---- per-thread clock ---- */

enum cpuclock_mode {
    CPUCLOCK_MODE_NONE = 0,     /* not claimed */
    CPUCLOCK_MODE_BPF = 1,      /* slot in the BPF table */
    CPUCLOCK_MODE_FALLBACK = 2, /* thread clock syscall + wall-time estimates */
};

/* Flags returned by cpuclock_thread_now. */
#define CPUCLOCK_EXACT 1u     /* kernel-accounted (BPF slot or a precise read now) */
#define CPUCLOCK_ESTIMATED 2u /* fallback: wall time since the last precise read */

/* Default fallback threshold: wall time after which the fallback reads the
 * precise clock (docs/cpu-time.md: the measured trade-off). */
#define CPUCLOCK_FALLBACK_THRESHOLD_NS 20000u

/* Longest span a BPF-mode read extrapolates as running (total + (now -
 * on_since)) on the slot's word alone. The slot is only as right as the
 * switches the kernel recorded: a switch-out and switch-in the program never
 * saw, or a vCPU stall the guest scheduler never saw (steal time, excluded
 * from CLOCK_THREAD_CPUTIME_ID), make that extrapolation count off-CPU time,
 * and the tracer keeps whatever a read overshoots. Past this span the read
 * asks the kernel once (CLOCK_THREAD_CPUTIME_ID) and re-anchors the slot, so
 * one such incident costs at most this much. At most one syscall per span of
 * a thread's running time: <= 0.04% at 2 ms (docs/cpu-time.md). */
#define CPUCLOCK_BPF_VERIFY_NS 2000000u

/* A thread's clock state; lives in the thread's own (thread-local) storage and is
 * only used by that thread. */
struct cpuclock_thread {
    struct cpuclock_slot *slot; /* BPF mode */
    _Atomic uint64_t *claimed;  /* BPF mode: the table's claimed-bitmap */
    uint32_t tid;
    uint32_t mode;             /* enum cpuclock_mode */
    uint64_t threshold_ns;     /* fallback: precise read when the wall gap exceeds this */
    uint64_t precise_mono_ns;  /* fallback: mono time of the last precise read */
    uint64_t reported_cpu_ns;  /* fallback: last value returned */
    uint64_t reported_mono_ns; /* fallback: mono time of the last value returned */
    uint64_t precise_reads;    /* statistics: syscalls made */
    uint64_t estimated_reads;  /* statistics: reads answered by estimate */
    uint64_t repairs;          /* statistics: BPF slots found "switched out" while running */
    uint64_t
        resyncs; /* statistics: BPF slots re-anchored (mono_now not within VERIFY after on_since) */
};

/* Claims this thread's slot in `table` (NULL: go straight to the fallback) and
 * initialises `th`. `tid` is gettid(). Claiming takes a free slot, a slot left by
 * a dead thread, or a stale slot of this very tid, with compare-and-swap, then
 * writes the current CPU time/switch-in time under the sequence check so a
 * context switch in the middle cannot leave stale values. If the slot is owned
 * by another live thread (tids colliding modulo CPUCLOCK_SLOT_COUNT), the thread
 * uses the fallback. Returns the mode chosen. One or two syscalls; call it at
 * thread start, not on a hot path. */
enum cpuclock_mode cpuclock_thread_claim(const struct cpuclock_table *table,
                                         struct cpuclock_thread *th, uint32_t tid);

/* Gives the slot back (thread exit). Safe to call in any mode. */
void cpuclock_thread_release(struct cpuclock_thread *th);

/* BPF slow path (internal to the inline read), taken when the slot cannot be
 * trusted as it stands: it says the thread is switched out while it runs (a
 * switch-in the program did not record, about once per 1000 preemptions here:
 * th->repairs), or it says the thread has run since more than
 * CPUCLOCK_BPF_VERIFY_NS before mono_now, or since after it (th->resyncs). Reads
 * CLOCK_THREAD_CPUTIME_ID once, rewrites the slot with the claim protocol and answers for mono_now.
 */
uint64_t cpuclock_slot_repair(struct cpuclock_thread *th, uint64_t mono_now, unsigned *flags);

/* Fallback slow path: reads CLOCK_THREAD_CPUTIME_ID (internal to the inline read). */
uint64_t cpuclock_fallback_precise(struct cpuclock_thread *th, uint64_t mono_now, unsigned *flags);

/* Value of a BPF slot at `mono_now` from one consistent snapshot. If the caller's
 * timestamp predates the last switch-in (the thread was preempted between taking
 * `mono_now` and this read), the CPU time is taken back to the switch-out. */
static inline uint64_t cpuclock_slot_value(uint64_t total, uint64_t on_since, uint64_t off_since,
                                           uint64_t mono_now)
{
    if (mono_now >= on_since)
        return total + (mono_now - on_since);
    if (mono_now >= off_since || off_since > on_since)
        return total;
    return off_since - mono_now < total ? total - (off_since - mono_now) : 0;
}

/* The thread's CPU time (ns, CLOCK_THREAD_CPUTIME_ID origin) at CLOCK_MONOTONIC
 * `mono_now`, which the caller took just before (e.g. cpuclock_tsc_mono_now).
 * Only the owning thread may call it. `flags` (may be NULL) gets CPUCLOCK_EXACT
 * or CPUCLOCK_ESTIMATED. Async-signal-safe. */
static inline uint64_t cpuclock_thread_now(struct cpuclock_thread *th, uint64_t mono_now,
                                           unsigned *flags)
{
    if (th->mode == CPUCLOCK_MODE_BPF) {
        struct cpuclock_slot *slot = th->slot;
        uint64_t total, on_since, off_since;
        uint32_t seq;
        /* The kernel writes the slot only while this thread is switched out, so
         * a changed seq means we were preempted mid-read: read again. Three
         * preemptions within a few ns do not happen; the bound keeps it wait-free. */
        for (int attempt = 0;; attempt++) {
            seq = atomic_load_explicit(&slot->seq, memory_order_acquire);
            total = atomic_load_explicit(&slot->total_ns, memory_order_relaxed);
            on_since = atomic_load_explicit(&slot->on_cpu_since_ns, memory_order_relaxed);
            off_since = atomic_load_explicit(&slot->off_cpu_since_ns, memory_order_relaxed);
            atomic_thread_fence(memory_order_acquire);
            if (seq == atomic_load_explicit(&slot->seq, memory_order_relaxed) || attempt == 3)
                break;
        }
        /* The slot is taken as it stands only for 0 <= mono_now - on_since
         * <= VERIFY (one unsigned compare). A caller's timestamp older than
         * the switch-in (preempted between taking it and this read) goes to
         * the slow path too: its answer is right, and a caller that extends
         * a read by wall time (the tracer's cached-read shortcut, which
         * stops trusting a read that took the slow path) never extends one
         * across the off-CPU gap before the switch-in. */
        if (off_since > on_since || mono_now - on_since > CPUCLOCK_BPF_VERIFY_NS)
            return cpuclock_slot_repair(th, mono_now, flags);
        if (flags)
            *flags = CPUCLOCK_EXACT;
        return cpuclock_slot_value(total, on_since, off_since, mono_now);
    }
    if (th->mode == CPUCLOCK_MODE_FALLBACK && mono_now >= th->reported_mono_ns &&
        mono_now - th->precise_mono_ns < th->threshold_ns) {
        th->reported_cpu_ns += mono_now - th->reported_mono_ns;
        th->reported_mono_ns = mono_now;
        th->estimated_reads++;
        if (flags)
            *flags = CPUCLOCK_ESTIMATED;
        return th->reported_cpu_ns;
    }
    return cpuclock_fallback_precise(th, mono_now, flags);
}

#ifdef __cplusplus
}
#endif
#endif
