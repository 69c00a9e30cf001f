/* cpuclock_tsc.c - calibration of the TSC -> CLOCK_MONOTONIC conversion block.
 *
 * The writer side of struct cpuclock_tsc (the readers are inline in cpuclock.h).
 * One thread of one process writes a block; any number of readers in any
 * process read it through the seqlock. Never called on a tracing hot path:
 * calibration busy-waits for its span.
 */
#include "cpuclock.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static uint64_t cpuclock_tsc_clock_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The TSC is only a clock when it ticks at a constant rate in every P-state
 * and C-state; the kernel says so in /proc/cpuinfo. */
static int cpuclock_tsc_is_invariant(void)
{
    FILE *cpuinfo = fopen("/proc/cpuinfo", "r");
    char line[4096];
    int constant = 0, nonstop = 0;
    if (!cpuinfo)
        return 1; /* cannot tell: trust it, the offset check below still bounds the error */
    while (fgets(line, sizeof line, cpuinfo)) {
        if (strncmp(line, "flags", 5) != 0)
            continue;
        constant = strstr(line, " constant_tsc") != NULL;
        nonstop = strstr(line, " nonstop_tsc") != NULL;
        break;
    }
    fclose(cpuinfo);
    return constant && nonstop;
}

int cpuclock_tsc_kernel_uses_it(char *why, size_t whylen)
{
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
    char name[64] = "";
    if (!f)
        return 1; /* cannot tell (no sysfs): the recalibration still bounds the error */
    int got = fgets(name, sizeof name, f) != NULL;
    fclose(f);
    if (!got)
        return 1;
    name[strcspn(name, "\n")] = '\0';
    if (!strcmp(name, "tsc"))
        return 1;
    snprintf(why, whylen, "the kernel's clocksource is %s, not tsc", name);
    return 0;
}

/* One (tsc, mono) pair: the clock read bracketed by the tightest rdtsc pair of
 * a few tries, the TSC taken at the middle of the bracket. */
static void cpuclock_tsc_pair(uint64_t *tsc_out, uint64_t *mono_out)
{
    uint64_t best_width = UINT64_MAX;
    for (int attempt = 0; attempt < 16; attempt++) {
        uint64_t before = cpuclock_rdtsc();
        uint64_t mono = cpuclock_tsc_clock_mono();
        uint64_t after = cpuclock_rdtsc();
        if (after - before < best_width) {
            best_width = after - before;
            *tsc_out = before + (after - before) / 2;
            *mono_out = mono;
        }
    }
}

/* Publishes a conversion: `mult` for slew_cycles after base_tsc, then `rate`. */
static void cpuclock_tsc_publish(struct cpuclock_tsc *tsc, uint64_t mult, uint64_t rate,
                                 uint64_t slew_cycles, uint64_t base_tsc, uint64_t base_mono)
{
    uint32_t seq = atomic_load_explicit(&tsc->seq, memory_order_relaxed);
    atomic_store_explicit(&tsc->seq, seq + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&tsc->mult, mult, memory_order_relaxed);
    atomic_store_explicit(&tsc->base_tsc, base_tsc, memory_order_relaxed);
    atomic_store_explicit(&tsc->base_mono_ns, base_mono, memory_order_relaxed);
    atomic_store_explicit(&tsc->rate, rate, memory_order_relaxed);
    atomic_store_explicit(&tsc->slew_cycles, slew_cycles, memory_order_relaxed);
    atomic_store_explicit(&tsc->valid, 1, memory_order_relaxed);
    atomic_store_explicit(&tsc->seq, seq + 2, memory_order_release);
}

/* ns per cycle in 32.32 fixed point from two points `cycles` and `ns` apart. */
__extension__ typedef unsigned __int128 cpuclock_tsc_u128;
__extension__ typedef __int128 cpuclock_tsc_s128;

static uint64_t cpuclock_tsc_mult(uint64_t cycles, uint64_t ns)
{
    typedef cpuclock_tsc_u128 u128;
    return (uint64_t)((((u128)ns << 32) + cycles / 2) / cycles);
}

int cpuclock_tsc_calibrate(struct cpuclock_tsc *tsc, uint64_t span_ns)
{
    uint64_t tsc0 = 0, mono0 = 0, tsc1 = 0, mono1 = 0;
    if (!cpuclock_tsc_is_invariant()) {
        errno = ENOTSUP;
        return -1;
    }
    if (span_ns < 1000000u)
        span_ns = 1000000u;
    cpuclock_tsc_pair(&tsc0, &mono0);
    do
        cpuclock_tsc_pair(&tsc1, &mono1);
    while (mono1 - mono0 < span_ns);
    if (tsc1 <= tsc0) {
        errno = ERANGE; /* TSC went backwards: not a usable clock */
        return -1;
    }
    atomic_store_explicit(&tsc->anchor_tsc, tsc0, memory_order_relaxed);
    atomic_store_explicit(&tsc->anchor_mono_ns, mono0, memory_order_relaxed);
    atomic_store_explicit(&tsc->calibrations, 1, memory_order_relaxed);
    atomic_store_explicit(&tsc->last_offset_error_ns, 0, memory_order_relaxed);
    uint64_t rate = cpuclock_tsc_mult(tsc1 - tsc0, mono1 - mono0);
    cpuclock_tsc_publish(tsc, rate, rate, 0, tsc1, mono1);
    return 0;
}

int cpuclock_tsc_recalibrate(struct cpuclock_tsc *tsc, uint64_t slew_ns)
{
    uint64_t now_tsc = 0, now_mono = 0;
    if (!atomic_load_explicit(&tsc->valid, memory_order_relaxed))
        return cpuclock_tsc_calibrate(tsc, 10000000u);
    cpuclock_tsc_pair(&now_tsc, &now_mono);
    uint64_t anchor_tsc = atomic_load_explicit(&tsc->anchor_tsc, memory_order_relaxed);
    uint64_t anchor_mono = atomic_load_explicit(&tsc->anchor_mono_ns, memory_order_relaxed);
    if (now_tsc <= anchor_tsc || now_mono <= anchor_mono) {
        errno = ERANGE;
        return -1;
    }
    /* Where the current conversion puts now: continuing from there avoids a jump. */
    uint64_t converted = cpuclock_tsc_to_mono(tsc, now_tsc);
    int64_t offset = (int64_t)(converted - now_mono); /* >0: conversion is ahead */
    uint64_t magnitude = offset < 0 ? (uint64_t)-offset : (uint64_t)offset;
    atomic_store_explicit(&tsc->last_offset_error_ns, magnitude, memory_order_relaxed);
    uint64_t rate = cpuclock_tsc_mult(now_tsc - anchor_tsc, now_mono - anchor_mono);
    if (slew_ns == 0 || offset < -(int64_t)CPUCLOCK_TSC_STEP_NS) {
        /* Far behind (suspend, a clock step) or asked to: restart from the
         * truth. Forward only, unless the caller asked for the step. */
        cpuclock_tsc_publish(tsc, rate, rate, 0, now_tsc, now_mono);
    } else {
        /* Slew: over the next span, run slower/faster by the offset. Ahead,
         * a step would send event times backwards: slew however far ahead,
         * over a span long enough to keep the clock running forward. */
        uint64_t span_ns = slew_ns;
        if (offset > 0 && magnitude > span_ns / CPUCLOCK_TSC_SLEW_MIN_SPAN)
            span_ns = magnitude * CPUCLOCK_TSC_SLEW_MIN_SPAN;
        uint64_t slew_cycles = (uint64_t)(((cpuclock_tsc_u128)span_ns << 32) / rate);
        if (slew_cycles == 0)
            slew_cycles = 1;
        int64_t correction =
            (int64_t)(((cpuclock_tsc_s128)-offset * 4294967296) / (cpuclock_tsc_s128)slew_cycles);
        cpuclock_tsc_publish(tsc, (uint64_t)((int64_t)rate + correction), rate, slew_cycles,
                             now_tsc, converted);
    }
    atomic_fetch_add_explicit(&tsc->calibrations, 1, memory_order_relaxed);
    return 0;
}

int cpuclock_tsc_history_note(struct cpuclock_tsc_history *h, const struct cpuclock_tsc *tsc)
{
    struct cpuclock_tsc_segment s;
    cpuclock_tsc_read(tsc, &s);
    if (!atomic_load_explicit(&tsc->valid, memory_order_relaxed) || s.mult == 0)
        return -1;
    if (h->count) {
        const struct cpuclock_tsc_segment *last = &h->segment[h->newest];
        if (last->base_tsc == s.base_tsc && last->mult == s.mult &&
            last->base_mono_ns == s.base_mono_ns && last->rate == s.rate &&
            last->slew_cycles == s.slew_cycles)
            return 0;
        h->newest = (h->newest + 1) % CPUCLOCK_TSC_HISTORY;
    } else {
        h->newest = 0;
    }
    h->segment[h->newest] = s;
    if (h->count < CPUCLOCK_TSC_HISTORY)
        h->count++;
    return 0;
}
