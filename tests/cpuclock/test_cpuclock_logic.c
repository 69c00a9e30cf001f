/* test_cpuclock_logic.c - unit tests of the CPU clock's user-side logic without
 * BPF: slot value computation, the sequence-checked read and claim against a
 * simulated kernel (a signal handler interrupting the thread is exactly how a
 * context switch interleaves with the thread's own code), slot ownership, the
 * fallback's estimates, the TSC conversion block, and attach's refusals.
 * Never needs root.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cpuclock.h"

static uint64_t test_clock_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint32_t test_gettid(void)
{
    return (uint32_t)syscall(SYS_gettid);
}

/* The claimed bit of tid's slot (what the BPF program tests first). */
static int test_claimed_bit(const struct cpuclock_table *table, uint32_t tid)
{
    uint32_t index = tid & (CPUCLOCK_SLOT_COUNT - 1);
    return (int)((atomic_load(&table->claimed[index >> 6]) >> (index & 63u)) & 1u);
}

/* A table in ordinary memory, laid out like the BPF map. */
static struct cpuclock_table test_table_new(void)
{
    struct cpuclock_table table;
    table.map_bytes = (size_t)CPUCLOCK_MAP_ENTRIES * CPUCLOCK_SLOT_SIZE;
    table.slots = calloc(1, table.map_bytes);
    assert_non_null(table.slots);
    table.header = (struct cpuclock_header *)(table.slots + CPUCLOCK_SLOT_COUNT);
    table.claimed = cpuclock_table_bitmap(table.slots);
    return table;
}

static void test_slot_value_cases(void **state)
{
    (void)state;
    /* running since 1000 with 500 accumulated */
    assert_int_equal(cpuclock_slot_value(500, 1000, 900, 1300), 800);
    /* caller's time between switch-out (900) and switch-in (1000): off CPU */
    assert_int_equal(cpuclock_slot_value(500, 1000, 900, 950), 500);
    /* caller's time before the switch-out: ran from 850 to 900 after it */
    assert_int_equal(cpuclock_slot_value(500, 1000, 900, 850), 450);
    /* never below zero */
    assert_int_equal(cpuclock_slot_value(10, 1000, 900, 100), 0);
}

/* Simulated kernel: each "switch" writes total and on_since so that
 * total - on_since == test_invariant, bumping seq like the BPF program.
 * on_since cycles through [1 ms, 2 ms) so that a read at 2 ms stays within
 * CPUCLOCK_BPF_VERIFY_NS of it: the fast path, never the re-anchoring one. */
static struct cpuclock_slot *test_simulated_slot;
static volatile sig_atomic_t test_switches;
static const uint64_t test_invariant = 123456789u;
static const uint64_t test_read_now_ns = 2000000u;

static void test_simulated_switch(int signal_number)
{
    (void)signal_number;
    struct cpuclock_slot *slot = test_simulated_slot;
    if (!slot)
        return;
    uint64_t on = atomic_load_explicit(&slot->on_cpu_since_ns, memory_order_relaxed) + 1000;
    if (on >= test_read_now_ns)
        on = 1000000u;
    atomic_store_explicit(&slot->off_cpu_since_ns, on - 10, memory_order_relaxed);
    atomic_store_explicit(&slot->total_ns, on + test_invariant, memory_order_relaxed);
    atomic_fetch_add_explicit(&slot->seq, 1, memory_order_relaxed);
    atomic_store_explicit(&slot->on_cpu_since_ns, on, memory_order_relaxed);
    atomic_fetch_add_explicit(&slot->seq, 1, memory_order_relaxed);
    test_switches++;
}

static void test_start_switch_timer(struct cpuclock_slot *slot)
{
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = test_simulated_switch;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    assert_int_equal(sigaction(SIGALRM, &action, NULL), 0);
    test_simulated_slot = slot;
    test_switches = 0;
    struct itimerval every = {{0, 20}, {0, 20}};
    assert_int_equal(setitimer(ITIMER_REAL, &every, NULL), 0);
}

static void test_stop_switch_timer(void)
{
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    test_simulated_slot = NULL;
}

static void test_read_is_consistent_under_switches(void **state)
{
    (void)state;
    struct cpuclock_table table = test_table_new();
    struct cpuclock_thread th;
    uint32_t tid = test_gettid();
    assert_int_equal(cpuclock_thread_claim(&table, &th, tid), CPUCLOCK_MODE_BPF);
    /* establish the invariant before the switches begin */
    atomic_store(&th.slot->on_cpu_since_ns, 1000000u);
    atomic_store(&th.slot->total_ns, 1000000u + test_invariant);
    atomic_store(&th.slot->off_cpu_since_ns, 1000000u - 10u);
    test_start_switch_timer(th.slot);
    uint64_t reads = 0, inconsistent = 0;
    uint64_t deadline = test_clock_ns(CLOCK_MONOTONIC) + 300000000u;
    while (test_clock_ns(CLOCK_MONOTONIC) < deadline || test_switches < 100) {
        /* after every simulated switch-in: the value is in the "running" branch */
        uint64_t now = test_read_now_ns;
        unsigned flags = 0;
        uint64_t value = cpuclock_thread_now(&th, now, &flags);
        assert_int_equal(flags, CPUCLOCK_EXACT);
        if (value != now + test_invariant)
            inconsistent++;
        reads++;
    }
    test_stop_switch_timer();
    fprintf(stderr, "reads %llu, simulated switches %d, inconsistent %llu\n",
            (unsigned long long)reads, (int)test_switches, (unsigned long long)inconsistent);
    assert_true(test_switches >= 100);
    assert_int_equal(inconsistent, 0);
    assert_int_equal(th.repairs, 0); /* consistent slots never take the slow path */
    assert_int_equal(th.resyncs, 0);
    cpuclock_thread_release(&th);
    free(table.slots);
}

/* Claim while the simulated kernel keeps switching the thread: each switch
 * stores its own time as on_cpu_since. The claim's sequence check must never
 * leave older values (read before a switch, stored after it) in the slot. */
static struct cpuclock_slot *test_switching_slot;
static volatile uint64_t test_last_switch_ns;

static void test_switch_now(int signal_number)
{
    (void)signal_number;
    struct cpuclock_slot *slot = test_switching_slot;
    if (!slot || atomic_load_explicit(&slot->tid, memory_order_relaxed) == 0)
        return;
    uint64_t now = test_clock_ns(CLOCK_MONOTONIC);
    atomic_store_explicit(&slot->total_ns, test_clock_ns(CLOCK_THREAD_CPUTIME_ID),
                          memory_order_relaxed);
    atomic_store_explicit(&slot->on_cpu_since_ns, now, memory_order_relaxed);
    atomic_fetch_add_explicit(&slot->seq, 1, memory_order_relaxed);
    test_last_switch_ns = now;
}

static void test_claim_retries_across_switches(void **state)
{
    (void)state;
    struct cpuclock_table table = test_table_new();
    uint32_t tid = test_gettid();
    struct cpuclock_slot *slot = &table.slots[tid & (CPUCLOCK_SLOT_COUNT - 1)];
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = test_switch_now;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    assert_int_equal(sigaction(SIGALRM, &action, NULL), 0);
    test_switching_slot = slot;
    test_last_switch_ns = 0;
    struct itimerval every = {{0, 30}, {0, 30}};
    assert_int_equal(setitimer(ITIMER_REAL, &every, NULL), 0);
    int claims = 0, interrupted = 0;
    for (; claims < 3000; claims++) {
        struct cpuclock_thread th;
        sigset_t block, old;
        uint32_t seq_before = atomic_load(&slot->seq);
        enum cpuclock_mode mode = cpuclock_thread_claim(&table, &th, tid);
        sigemptyset(&block);
        sigaddset(&block, SIGALRM);
        pthread_sigmask(SIG_BLOCK, &block, &old); /* hold the "kernel" off */
        assert_int_equal(mode, CPUCLOCK_MODE_BPF);
        if (atomic_load(&slot->seq) != seq_before)
            interrupted++;
        assert_true(atomic_load(&slot->on_cpu_since_ns) >= test_last_switch_ns);
        cpuclock_thread_release(&th);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    test_switching_slot = NULL;
    fprintf(stderr, "%d claims, %d with switches during the claim\n", claims, interrupted);
    assert_true(interrupted > 0);
    free(table.slots);
}

static void test_claim_ownership(void **state)
{
    (void)state;
    struct cpuclock_table table = test_table_new();
    uint32_t me = test_gettid();
    uint32_t colliding = me + CPUCLOCK_SLOT_COUNT; /* same slot, another tid */
    struct cpuclock_thread mine, other;

    /* a free slot is taken, and holds our tid and our CPU time */
    assert_int_equal(cpuclock_thread_claim(&table, &mine, me), CPUCLOCK_MODE_BPF);
    struct cpuclock_slot *slot = mine.slot;
    assert_ptr_equal(slot, &table.slots[me & (CPUCLOCK_SLOT_COUNT - 1)]);
    assert_int_equal(atomic_load(&slot->tid), me);
    assert_int_equal(test_claimed_bit(&table, me), 1); /* the BPF program looks at it first */
    uint64_t cpu = test_clock_ns(CLOCK_THREAD_CPUTIME_ID);
    uint64_t now = test_clock_ns(CLOCK_MONOTONIC);
    uint64_t value = cpuclock_thread_now(&mine, now, NULL);
    assert_true(value <= cpu + 1000000u && value + 1000000u >= cpu);

    /* a live owner (this thread) keeps its slot: the colliding tid falls back */
    assert_int_equal(cpuclock_thread_claim(&table, &other, colliding), CPUCLOCK_MODE_FALLBACK);
    assert_int_equal(atomic_load(&slot->tid), me);
    cpuclock_thread_release(&other);
    assert_int_equal(atomic_load(&slot->tid), me);
    assert_int_equal(test_claimed_bit(&table, me), 1);

    /* release frees it and lowers its bit, and no other bit was ever raised */
    cpuclock_thread_release(&mine);
    assert_int_equal(atomic_load(&slot->tid), 0);
    assert_int_equal(test_claimed_bit(&table, me), 0);
    for (uint32_t w = 0; w < CPUCLOCK_SLOT_COUNT / 64; w++)
        assert_int_equal(atomic_load(&table.claimed[w]), 0);

    /* a slot left behind by a dead thread is taken over */
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0)
        _exit(0);
    assert_int_equal(waitpid(child, NULL, 0), child);
    struct cpuclock_slot *dead_slot = &table.slots[(uint32_t)child & (CPUCLOCK_SLOT_COUNT - 1)];
    atomic_store(&dead_slot->tid, (uint32_t)child);
    uint32_t heir = (uint32_t)child + CPUCLOCK_SLOT_COUNT;
    assert_int_equal(cpuclock_thread_claim(&table, &other, heir), CPUCLOCK_MODE_BPF);
    assert_int_equal(atomic_load(&dead_slot->tid), heir);
    assert_int_equal(test_claimed_bit(&table, heir), 1);
    cpuclock_thread_release(&other);
    assert_int_equal(test_claimed_bit(&table, heir), 0);

    /* no table: fallback */
    assert_int_equal(cpuclock_thread_claim(NULL, &other, me), CPUCLOCK_MODE_FALLBACK);
    assert_null(other.slot);
    free(table.slots);
}

/* Issue 2 regression: the slot says the thread has been running for 50 ms
 * while it ran 1 ms of them (the BPF program missed a switch-out and the
 * switch-in after it, or the vCPU was stalled: neither moves seq). The read
 * used to extrapolate total + 50 ms, 49 ms of off-CPU time the tracer then
 * kept as CPU (tracer_cpu: one thread 5-11% high). Past CPUCLOCK_BPF_VERIFY_NS
 * of extrapolation it must ask the kernel and re-anchor the slot instead;
 * within it, it must stay on the syscall-free path. */
static void test_stale_slot_is_resynced(void **state)
{
    (void)state;
    struct cpuclock_table table = test_table_new();
    struct cpuclock_thread th;
    uint32_t tid = test_gettid();
    assert_int_equal(cpuclock_thread_claim(&table, &th, tid), CPUCLOCK_MODE_BPF);
    struct cpuclock_slot *slot = th.slot;

    uint64_t now = test_clock_ns(CLOCK_MONOTONIC);
    uint64_t cpu = test_clock_ns(CLOCK_THREAD_CPUTIME_ID);
    assert_true(cpu > 1000000u && now > 100000000u);
    atomic_store(&slot->total_ns, cpu - 1000000u);
    atomic_store(&slot->on_cpu_since_ns, now - 50000000u);
    atomic_store(&slot->off_cpu_since_ns, now - 51000000u);
    now = test_clock_ns(CLOCK_MONOTONIC);
    uint64_t value = cpuclock_thread_now(&th, now, NULL);
    uint64_t exact = test_clock_ns(CLOCK_THREAD_CPUTIME_ID);
    fprintf(stderr, "stale slot: read %llu ns, CLOCK_THREAD_CPUTIME_ID after it %llu ns\n",
            (unsigned long long)value, (unsigned long long)exact);
    assert_true(value <= exact); /* no off-CPU time counted (was exact + ~49 ms) */
    /* and the CPU time it did use is there (the slack only covers a real
     * preemption of this test between its clock reads) */
    assert_true(value + 20000000u >= exact);
    assert_int_equal(th.resyncs, 1);
    assert_int_equal(th.repairs, 0);
    /* re-anchored on the kernel's word (the stale total was cpu - 1 ms) */
    uint64_t anchor_total = atomic_load(&slot->total_ns);
    uint64_t anchor_on = atomic_load(&slot->on_cpu_since_ns);
    assert_true(anchor_total >= cpu && anchor_total <= exact);
    assert_true(anchor_on >= now);
    assert_true(atomic_load(&slot->off_cpu_since_ns) <= anchor_on);

    /* the next read extrapolates from the new anchor, without a syscall */
    uint64_t later = anchor_on + 1000u;
    uint64_t next = cpuclock_thread_now(&th, later, NULL);
    assert_int_equal(next, anchor_total + 1000u);
    assert_true(next >= value);
    assert_int_equal(th.resyncs, 1);

    /* within the span the slot's word is taken as it is: exactly total + (now - on_since) */
    atomic_store(&slot->total_ns, 777000000u);
    atomic_store(&slot->on_cpu_since_ns, later - (CPUCLOCK_BPF_VERIFY_NS - 1000u));
    atomic_store(&slot->off_cpu_since_ns, later - CPUCLOCK_BPF_VERIFY_NS);
    assert_int_equal(cpuclock_thread_now(&th, later, NULL),
                     777000000u + CPUCLOCK_BPF_VERIFY_NS - 1000u);
    assert_int_equal(th.resyncs, 1);

    /* a slot that says "switched out" while the thread runs is a repair */
    atomic_store(&slot->off_cpu_since_ns, later - 1000u);
    atomic_store(&slot->on_cpu_since_ns, later - 2000u);
    value = cpuclock_thread_now(&th, test_clock_ns(CLOCK_MONOTONIC), NULL);
    exact = test_clock_ns(CLOCK_THREAD_CPUTIME_ID);
    assert_true(value <= exact && value + 20000000u >= exact);
    assert_int_equal(th.repairs, 1);
    assert_int_equal(th.resyncs, 1);
    cpuclock_thread_release(&th);
    free(table.slots);
}

/* Issue 2: the slow path used to answer with its own late syscall read
 * taken back to the caller's timestamp as if the thread had run all along. When the thread was off
 * CPU in between (preempted, typically at the exit of that very syscall once its slice is used up),
 * that took the off-CPU time away from the thread's CPU time: 6-46% low per thread with 8 busy
 * threads on 2 cores. Here the thread sleeps between its timestamp and the read of a stale slot:
 * the answer must be the CPU time it has, not 30 ms less. */
static void test_slow_read_keeps_cpu_across_off_cpu_time(void **state)
{
    (void)state;
    struct cpuclock_table table = test_table_new();
    struct cpuclock_thread th;
    assert_int_equal(cpuclock_thread_claim(&table, &th, test_gettid()), CPUCLOCK_MODE_BPF);
    struct cpuclock_slot *slot = th.slot;
    uint64_t stamp = test_clock_ns(CLOCK_MONOTONIC);
    /* stale: "running" since 10 ms before the caller's timestamp */
    atomic_store(&slot->total_ns, test_clock_ns(CLOCK_THREAD_CPUTIME_ID));
    atomic_store(&slot->on_cpu_since_ns, stamp - 10000000u);
    atomic_store(&slot->off_cpu_since_ns, stamp - 11000000u);
    struct timespec pause = {0, 30000000};
    nanosleep(&pause, NULL); /* off CPU: CPU time stands still, wall time moves */
    uint64_t before = test_clock_ns(CLOCK_THREAD_CPUTIME_ID);
    uint64_t value = cpuclock_thread_now(&th, stamp, NULL);
    uint64_t after = test_clock_ns(CLOCK_THREAD_CPUTIME_ID);
    fprintf(stderr, "slow read after 30 ms off CPU: %llu ns, thread clock %llu..%llu ns\n",
            (unsigned long long)value, (unsigned long long)before, (unsigned long long)after);
    assert_int_equal(th.resyncs, 1);
    assert_true(value >= before && value <= after);

    /* the same through a repair: the switch-in after the sleep went
     * unrecorded (the original issue 2 path: an end-of-call read whose
     * timestamp predates a preemption, answered ~a time slice low, so the
     * next CPU segment came out that much high) */
    stamp = test_clock_ns(CLOCK_MONOTONIC);
    atomic_store(&slot->on_cpu_since_ns, stamp - 2000000u);
    atomic_store(&slot->off_cpu_since_ns, stamp - 1000000u);
    nanosleep(&pause, NULL);
    before = test_clock_ns(CLOCK_THREAD_CPUTIME_ID);
    value = cpuclock_thread_now(&th, stamp, NULL);
    after = test_clock_ns(CLOCK_THREAD_CPUTIME_ID);
    assert_int_equal(th.repairs, 1);
    assert_true(value >= before && value <= after);

    /* a timestamp older than a recorded switch-in (preempted between taking
     * it and the read) is answered by the slow path too, so a caller that
     * extends reads by wall time never extends this one across the gap */
    stamp = test_clock_ns(CLOCK_MONOTONIC);
    nanosleep(&pause, NULL);
    uint64_t switched_in = test_clock_ns(CLOCK_MONOTONIC);
    atomic_store(&slot->off_cpu_since_ns, stamp + 1000u);
    atomic_store(&slot->on_cpu_since_ns, switched_in);
    atomic_store(&slot->total_ns, test_clock_ns(CLOCK_THREAD_CPUTIME_ID));
    atomic_fetch_add(&slot->seq, 2);
    before = test_clock_ns(CLOCK_THREAD_CPUTIME_ID);
    value = cpuclock_thread_now(&th, stamp, NULL);
    after = test_clock_ns(CLOCK_THREAD_CPUTIME_ID);
    assert_int_equal(th.resyncs, 2);
    assert_true(value >= before && value <= after);
    cpuclock_thread_release(&th);
    free(table.slots);
}

static void test_spin_cpu(uint64_t ns)
{
    uint64_t end = test_clock_ns(CLOCK_THREAD_CPUTIME_ID) + ns;
    while (test_clock_ns(CLOCK_THREAD_CPUTIME_ID) < end) {
    }
}

static void test_fallback_estimates_and_syncs(void **state)
{
    (void)state;
    struct cpuclock_thread th;
    assert_int_equal(cpuclock_thread_claim(NULL, &th, test_gettid()), CPUCLOCK_MODE_FALLBACK);
    unsigned flags = 0;
    uint64_t start_mono = test_clock_ns(CLOCK_MONOTONIC);
    uint64_t first = cpuclock_thread_now(&th, start_mono, &flags);
    /* within the threshold of the claim's precise read: an estimate */
    if (start_mono - th.precise_mono_ns < th.threshold_ns)
        assert_int_equal(flags, CPUCLOCK_ESTIMATED);
    /* a long gap forces a precise read, matching the syscall */
    test_spin_cpu(2000000u);
    uint64_t mono = test_clock_ns(CLOCK_MONOTONIC);
    uint64_t precise = cpuclock_thread_now(&th, mono, &flags);
    uint64_t truth = test_clock_ns(CLOCK_THREAD_CPUTIME_ID);
    assert_int_equal(flags, CPUCLOCK_EXACT);
    assert_true(precise <= truth && truth - precise < 200000u);
    assert_true(precise - first >= 2000000u);
    /* a short gap right after is estimated as running wall time */
    uint64_t later = cpuclock_thread_now(&th, mono + 5000u, &flags);
    assert_int_equal(flags, CPUCLOCK_ESTIMATED);
    assert_int_equal(later - precise, 5000u);
    /* the value never goes back even if estimates ran ahead of the truth */
    th.reported_cpu_ns += 10000000u;
    uint64_t ahead = th.reported_cpu_ns;
    uint64_t synced = cpuclock_thread_now(&th, mono + 10u * th.threshold_ns, &flags);
    assert_int_equal(flags, CPUCLOCK_EXACT);
    assert_int_equal(synced, ahead);
    assert_true(th.precise_reads >= 3 && th.estimated_reads >= 1);
    cpuclock_thread_release(&th);
    assert_int_equal(th.mode, CPUCLOCK_MODE_NONE);
}

static void test_tsc_conversion(void **state)
{
    (void)state;
    struct cpuclock_tsc tsc;
    memset(&tsc, 0, sizeof tsc);
    assert_int_equal(cpuclock_tsc_calibrate(&tsc, 10000000u), 0);
    assert_int_equal(atomic_load(&tsc.valid), 1);
    uint64_t worst = 0;
    for (int i = 0; i < 1000; i++) {
        uint64_t before = test_clock_ns(CLOCK_MONOTONIC);
        uint64_t converted = cpuclock_tsc_mono_now(&tsc);
        uint64_t after = test_clock_ns(CLOCK_MONOTONIC);
        uint64_t error = converted < before  ? before - converted
                         : converted > after ? converted - after
                                             : 0;
        if (error > worst)
            worst = error;
    }
    fprintf(stderr, "TSC conversion: worst error right after calibration %llu ns\n",
            (unsigned long long)worst);
    assert_true(worst < 2000u);
    /* recalibration continues from the current conversion: no jump */
    uint64_t t = cpuclock_rdtsc();
    uint64_t before = cpuclock_tsc_to_mono(&tsc, t);
    assert_int_equal(cpuclock_tsc_recalibrate(&tsc, 1000000000u), 0);
    uint64_t after = cpuclock_tsc_to_mono(&tsc, t);
    uint64_t jump = after > before ? after - before : before - after;
    assert_true(jump < 1000u);
    assert_int_equal(atomic_load(&tsc.calibrations), 2);
    /* conversion of a TSC before the base goes backwards, not to 2^64 */
    assert_true(cpuclock_tsc_to_mono(&tsc, atomic_load(&tsc.base_tsc) - 1000u) <
                atomic_load(&tsc.base_mono_ns));
}

/* Moves the published conversion by `delta_ns` at the TSC now, as a clock
 * disagreement (a paused VM, a clock step) would leave it. */
static void test_tsc_shift(struct cpuclock_tsc *tsc, int64_t delta_ns)
{
    uint64_t now_tsc = cpuclock_rdtsc();
    uint64_t now_mono = cpuclock_tsc_to_mono(tsc, now_tsc);
    atomic_store(&tsc->seq, atomic_load(&tsc->seq) + 1);
    atomic_store(&tsc->base_tsc, now_tsc);
    atomic_store(&tsc->base_mono_ns, (uint64_t)((int64_t)now_mono + delta_ns));
    atomic_store(&tsc->mult, atomic_load(&tsc->rate));
    atomic_store(&tsc->slew_cycles, 0);
    atomic_store(&tsc->seq, atomic_load(&tsc->seq) + 1);
}

/* Recalibration never sends the conversion backwards. Ahead, it slews: the
 * same TSC converts the same before and after, successive values convert in
 * order, the offset is gone at the slew's end, and the rate is at most 10%
 * slow (5 ms ahead: over the 1 s asked; 300 ms ahead: over 3 s). Behind by
 * more than 1 ms, it steps forward to clock_gettime. */
static void test_tsc_slew_ahead(struct cpuclock_tsc *tsc, uint64_t shift_ns)
{
    test_tsc_shift(tsc, (int64_t)shift_ns);
    uint64_t t = cpuclock_rdtsc();
    uint64_t before = cpuclock_tsc_to_mono(tsc, t);
    assert_int_equal(cpuclock_tsc_recalibrate(tsc, 1000000000u), 0);
    struct cpuclock_tsc_segment seg;
    cpuclock_tsc_read(tsc, &seg);
    uint64_t after = cpuclock_tsc_to_mono(tsc, t);
    assert_true(after >= before && after - before < 1000u);
    /* ahead by the shift, plus what an earlier slew had left */
    uint64_t ahead_ns = atomic_load(&tsc->last_offset_error_ns);
    assert_true(ahead_ns >= shift_ns - 100000u && ahead_ns < shift_ns + 10000000u);
    uint64_t want_span_ns = ahead_ns * 10u > 1000000000u ? ahead_ns * 10u : 1000000000u;
    assert_true(seg.mult < seg.rate);
    assert_true(seg.mult >= seg.rate - seg.rate / 10u - 1u);
    uint64_t span = cpuclock_tsc_segment_span_ns(&seg, seg.slew_cycles);
    fprintf(stderr, "%llu ns ahead: slewed over %llu ns at %.4f of the rate\n",
            (unsigned long long)ahead_ns, (unsigned long long)span,
            (double)seg.mult / (double)seg.rate);
    assert_true(span > want_span_ns - want_span_ns / 50u &&
                span < want_span_ns + want_span_ns / 50u);
    uint64_t last = 0;
    for (uint64_t cycles = t - 1000000u; cycles < t + 1000000u; cycles += 997u) {
        uint64_t mono = cpuclock_tsc_to_mono(tsc, cycles);
        assert_true(mono >= last);
        last = mono;
    }
    uint64_t end_mono = cpuclock_tsc_segment_to_mono(&seg, seg.base_tsc + seg.slew_cycles);
    uint64_t expect = seg.base_mono_ns + span - ahead_ns;
    uint64_t miss = end_mono > expect ? end_mono - expect : expect - end_mono;
    assert_true(miss < 200000u);
}

static void test_tsc_recalibration_is_monotone(void **state)
{
    (void)state;
    struct cpuclock_tsc tsc;
    memset(&tsc, 0, sizeof tsc);
    assert_int_equal(cpuclock_tsc_calibrate(&tsc, 10000000u), 0);
    test_tsc_slew_ahead(&tsc, 5000000u);
    test_tsc_slew_ahead(&tsc, 300000000u);
    assert_int_equal(cpuclock_tsc_calibrate(&tsc, 10000000u), 0); /* back on the clock */
    test_tsc_shift(&tsc, -5000000);
    uint64_t t = cpuclock_rdtsc();
    uint64_t before = cpuclock_tsc_to_mono(&tsc, t);
    assert_int_equal(cpuclock_tsc_recalibrate(&tsc, 1000000000u), 0);
    uint64_t after = cpuclock_tsc_to_mono(&tsc, t);
    assert_true(after > before + 4000000u && after < before + 6000000u);
    uint64_t behind = atomic_load(&tsc.last_offset_error_ns);
    assert_true(behind > 4900000u && behind < 5100000u);
}

/* The slew holds for its span, then the plain rate does: a recalibration
 * that comes late (a starved collector) finds the offset removed, not
 * overshot ten times. */
static void test_tsc_slew_ends(void **state)
{
    (void)state;
    const uint64_t rate = 1ull << 31; /* 0.5 ns per cycle */
    struct cpuclock_tsc_segment seg = {.base_tsc = 1000,
                                       .base_mono_ns = 5000,
                                       .rate = rate,
                                       .mult = rate + (rate >> 10),
                                       .slew_cycles = 2000000000u};
    /* 1 s of cycles after the base: 1 s + 1/1024 of it */
    assert_int_equal(cpuclock_tsc_segment_to_mono(&seg, 1000 + 2000000000u),
                     5000 + 1000000000u + 976562u);
    /* 10 s: the slew's 976562 ns once, then the rate */
    assert_int_equal(cpuclock_tsc_segment_to_mono(&seg, 1000 + 20000000000u),
                     5000 + 10000000000u + 976562u);
    /* before the base: backwards at the rate */
    assert_int_equal(cpuclock_tsc_segment_to_mono(&seg, 0), 4500u);
    assert_int_equal(cpuclock_tsc_segment_span_ns(&seg, 20000000000u), 10000000000u);
}

/* A consumer converting later with the history gets, for every value, what
 * a reader converting at once got, across slews and a step; older values
 * than the oldest kept conversion use it; repeats are not kept twice. */
static void test_tsc_history(void **state)
{
    (void)state;
    struct cpuclock_tsc tsc;
    memset(&tsc, 0, sizeof tsc);
    static struct cpuclock_tsc_history history;
    memset(&history, 0, sizeof history);
    assert_int_equal(cpuclock_tsc_history_note(&history, &tsc), -1); /* not calibrated */
    assert_int_equal(cpuclock_tsc_calibrate(&tsc, 2000000u), 0);
    enum { ROUNDS = 80, PER_ROUND = 5 };
    static uint64_t raw[ROUNDS * PER_ROUND], at_once[ROUNDS * PER_ROUND];
    int n = 0;
    for (int round = 0; round < ROUNDS; round++) {
        if (round == 40) {
            /* a step, published as recalibration does (base_tsc = now):
             * the conversion restarts 5 ms ahead */
            test_tsc_shift(&tsc, 5000000);
        } else if (round > 0) {
            assert_int_equal(cpuclock_tsc_recalibrate(&tsc, 1000000u), 0);
        }
        assert_int_equal(cpuclock_tsc_history_note(&history, &tsc), 0);
        assert_int_equal(cpuclock_tsc_history_note(&history, &tsc), 0); /* a repeat */
        for (int i = 0; i < PER_ROUND; i++, n++) {
            raw[n] = cpuclock_rdtsc();
            at_once[n] = cpuclock_tsc_to_mono(&tsc, raw[n]);
        }
    }
    assert_int_equal(history.count, CPUCLOCK_TSC_HISTORY);
    /* the last CPUCLOCK_TSC_HISTORY rounds are kept: exact there */
    int first_kept = (ROUNDS - (int)CPUCLOCK_TSC_HISTORY) * PER_ROUND;
    for (int i = first_kept; i < n; i++)
        assert_int_equal(cpuclock_tsc_history_to_mono(&history, raw[i]), at_once[i]);
    /* older values: the oldest kept conversion */
    const struct cpuclock_tsc_segment *oldest = cpuclock_tsc_history_segment(&history, raw[0]);
    assert_non_null(oldest);
    assert_int_equal(cpuclock_tsc_history_to_mono(&history, raw[0]),
                     cpuclock_tsc_segment_to_mono(oldest, raw[0]));
    assert_true(oldest->base_tsc > raw[0]);
}

static struct cpuclock_tsc test_shared_tsc;
static atomic_int test_writer_stop;

static void *test_tsc_writer(void *argument)
{
    (void)argument;
    while (!atomic_load(&test_writer_stop))
        cpuclock_tsc_recalibrate(&test_shared_tsc, 1000000u);
    return NULL;
}

static void test_tsc_reader_during_recalibration(void **state)
{
    (void)state;
    memset(&test_shared_tsc, 0, sizeof test_shared_tsc);
    assert_int_equal(cpuclock_tsc_calibrate(&test_shared_tsc, 5000000u), 0);
    pthread_t writer;
    atomic_store(&test_writer_stop, 0);
    assert_int_equal(pthread_create(&writer, NULL, test_tsc_writer, NULL), 0);
    uint64_t worst = 0;
    /* until the writer has recalibrated often enough (bounded: 10 s) */
    uint64_t deadline = test_clock_ns(CLOCK_MONOTONIC) + 10000000000u;
    for (int i = 0; i < 200000 || (atomic_load(&test_shared_tsc.calibrations) <= 10 &&
                                   test_clock_ns(CLOCK_MONOTONIC) < deadline);
         i++) {
        uint64_t before = test_clock_ns(CLOCK_MONOTONIC);
        uint64_t converted = cpuclock_tsc_mono_now(&test_shared_tsc);
        uint64_t after = test_clock_ns(CLOCK_MONOTONIC);
        uint64_t error = converted < before  ? before - converted
                         : converted > after ? converted - after
                                             : 0;
        if (error > worst)
            worst = error;
    }
    atomic_store(&test_writer_stop, 1);
    pthread_join(writer, NULL);
    fprintf(stderr, "TSC conversion during %llu recalibrations: worst error %llu ns\n",
            (unsigned long long)atomic_load(&test_shared_tsc.calibrations),
            (unsigned long long)worst);
    assert_true(atomic_load(&test_shared_tsc.calibrations) > 10);
    /* a torn read would be off by seconds; preemption between reads by up to ms */
    assert_true(worst < 50000000u);
}

static void test_attach_refuses_other_fds(void **state)
{
    (void)state;
    struct cpuclock_table table;
    char err[256];
    int fd = memfd_create("not-a-table", 0);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t)CPUCLOCK_MAP_ENTRIES * CPUCLOCK_SLOT_SIZE + 4096), 0);
    assert_int_equal(cpuclock_attach(fd, &table, err, sizeof err), -1);
    assert_non_null(strstr(err, "is not a CPU clock table"));
    assert_null(table.slots);
    close(fd);
    assert_int_equal(cpuclock_attach(-1, &table, err, sizeof err), -1);
    assert_non_null(strstr(err, "cannot map the CPU clock table (fd -1)"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slot_value_cases),
        cmocka_unit_test(test_read_is_consistent_under_switches),
        cmocka_unit_test(test_claim_retries_across_switches),
        cmocka_unit_test(test_claim_ownership),
        cmocka_unit_test(test_stale_slot_is_resynced),
        cmocka_unit_test(test_slow_read_keeps_cpu_across_off_cpu_time),
        cmocka_unit_test(test_fallback_estimates_and_syncs),
        cmocka_unit_test(test_tsc_conversion),
        cmocka_unit_test(test_tsc_reader_during_recalibration),
        cmocka_unit_test(test_tsc_history),
        cmocka_unit_test(test_tsc_recalibration_is_monotone),
        cmocka_unit_test(test_tsc_slew_ends),
        cmocka_unit_test(test_attach_refuses_other_fds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
