/* tracer_thread.c - a thread's life in the tracer (tracer_thread.h):
 * claiming a ring on its first traced call, its THREAD_START and
 * THREAD_EXIT records, entering a new tracing window, and releasing its
 * ring when it ends.
 *
 * Everything here runs inside a wrapped call or a thread's exit: raw
 * syscalls only, no allocation, no lock the app could hold; a thread that
 * finds no free ring stays untraced (and its calls are counted as lost). */
#include "tracer_thread.h"

#include <limits.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cpu_time.h"
#include "interpose_file.h"
#include "tracer_core.h"
#include "tracer_cpu_mark.h"
#include "tracer_ring.h"

__thread struct tracer_thread tracer_tls __attribute__((tls_model("initial-exec")));
static pthread_key_t tracer_thread_key;
static int tracer_key_ready;

uint32_t tracer_gettid(void)
{
    if (TRACER_LIKELY(tracer_tls.tid))
        return tracer_tls.tid;
    tracer_tls.tid = (uint32_t)syscall(SYS_gettid);
    return tracer_tls.tid;
}

static void tracer_thread_release(struct tracer_thread *t)
{
    if (!t->ring || t->claimed_gen != tracer_global.generation)
        return;
    struct tracer_ring *r = t->ring;
    t->ring = NULL;
    t->claimed_gen = 0;
    tracer_cpu_time_release_thread();
    atomic_store_explicit(&r->state, TRACER_RING_EXITED, memory_order_release);
}

/* The thread enters tracing window `window` (the control page's
 * `enabled`): when tracing was off since its last entry, the CPU time it
 * ran meanwhile is no record's (the run since the switch, up to now, is
 * not known), so its CPU accounting starts afresh. */
static void tracer_window_enter(struct tracer_thread *t, uint32_t window)
{
    if (t->window != window) {
        tracer_cpu_mark_reset(t);
        t->window = window;
    }
}

/* Writes THREAD_EXIT for the calling thread; the record carries the CPU
 * time of its last segment (work after its last traced call). */
static void tracer_thread_exit_event(struct tracer_thread *t)
{
    if (!t->ring || !tracer_global.active || t->busy || t->claimed_gen != tracer_global.generation)
        return;
    tracer_open_settle_if(t, -1, NULL);
    /* written even while tracing is off (a thread's end is worth knowing),
     * but never with CPU time run outside the window of its last entry */
    tracer_window_enter(
        t, atomic_load_explicit(&tracer_global.control->enabled, memory_order_relaxed));
    uint64_t now = tracer_event_begin(t);
    struct trace_event *ev = tracer_reserve(t, 0);
    if (ev) {
        ev->type = TRACE_EV_THREAD_EXIT;
        ev->tid = t->tid;
        ev->ts_ns = now;
        tracer_commit(t);
    }
}

void tracer_thread_end(struct tracer_thread *t)
{
    if (t->ended)
        return;
    tracer_thread_exit_event(t);
    tracer_thread_release(t);
    t->ended = 1;
}

/* A thread's end comes after the destructors of every key it set, and
 * those do traced work (a DB client's per-thread connection closed, a log
 * flushed): keys the app created after ours run after ours in a round.
 * So ours re-arms itself for every round glibc (and musl) runs - up to
 * PTHREAD_DESTRUCTOR_ITERATIONS while any destructor set a value - and
 * writes THREAD_EXIT only in the last one, after every destructor that
 * does not itself re-arm through all rounds. Keeps those events, in the
 * thread's one ring, before its end; the alternative, recording nothing
 * after our first call, would drop real work. Cost: three more calls of
 * this function per thread end. */
static void tracer_thread_destructor(void *arg)
{
    (void)arg;
    struct tracer_thread *t = &tracer_tls;
    if (!t->ended && ++t->key_rounds < PTHREAD_DESTRUCTOR_ITERATIONS &&
        pthread_setspecific(tracer_thread_key, (void *)1) == 0)
        return;
    tracer_thread_end(t);
}

/* Claims a free ring for the calling thread and writes THREAD_START. The
 * candidates are the clear bits of rings_in_use (a ring's bit is down at
 * least while it is FREE), so a thread that finds every ring taken - it
 * tries again at each traced call - reads 16 words, not 1024 ring headers
 * a page apart; the state's compare-and-swap decides. */
static struct tracer_ring *tracer_thread_claim(struct tracer_thread *t)
{
    static _Atomic uint32_t hint;
    void *region = tracer_global.region;
    _Atomic uint64_t *in_use = tracer_global.control->rings_in_use;
    uint32_t rings = tracer_global.thread_rings, words = (rings + 63) / 64;
    uint32_t start = atomic_fetch_add_explicit(&hint, 1, memory_order_relaxed);
    for (uint32_t n = 0; n < words; n++) {
        uint32_t w = (start + n) % words;
        uint64_t candidates = ~atomic_load_explicit(&in_use[w], memory_order_relaxed);
        if (w == words - 1 && rings % 64)
            candidates &= (1ull << (rings % 64)) - 1;
        for (; candidates; candidates &= candidates - 1) {
            uint32_t idx = tracer_ring_of_in_use_bit(w, (unsigned)__builtin_ctzll(candidates));
            struct tracer_ring *r = tracer_region_ring(region, idx);
            uint32_t expect = TRACER_RING_FREE;
            if (atomic_load_explicit(&r->state, memory_order_relaxed) != TRACER_RING_FREE ||
                !atomic_compare_exchange_strong(&r->state, &expect, TRACER_RING_ACTIVE))
                continue;
            atomic_fetch_or(&in_use[w], tracer_ring_in_use_bit(idx));
            r->tid = t->tid;
            atomic_store_explicit(&r->staged_head, 0, memory_order_relaxed);
            t->ring = r;
            t->cached_tail = atomic_load_explicit(&r->tail, memory_order_acquire);
            t->fast_limit = 0;
            t->claimed_gen = tracer_global.generation;
            if (tracer_key_ready)
                pthread_setspecific(tracer_thread_key, (void *)1);
            tracer_cpu_time_claim_thread(t->tid);
            return r;
        }
    }
    /* No ring free: this thread stays untraced, and each traced call it
     * makes (it tries again every time) is counted as lost. */
    atomic_fetch_add_explicit(&tracer_global.control->untraced_calls, 1, memory_order_relaxed);
    return NULL;
}

/* The rare cases of tracer_enter (tracer_thread.h): not registered, tracing
 * off or the family not traced, nested in a signal handler, or the thread
 * has no ring of this process generation yet. */
struct tracer_thread *tracer_enter_slow(struct tracer_thread *t, uint32_t family)
{
    if (!tracer_global.active) {
        /* a call made by another library's constructor, before ours ran */
        if (tracer_init_once() != 0 || !tracer_global.active)
            return NULL;
    }
    tracer_open_settle_if(t, -1, NULL); /* the open's record goes before this call's */
    uint32_t window = atomic_load_explicit(&tracer_global.control->enabled, memory_order_relaxed);
    if (!window || !(tracer_global.only_mask & family))
        return NULL;
    if (TRACER_UNLIKELY(t->ended)) {
        /* past its THREAD_EXIT: a call the trace lacks, counted as one of
         * a thread without a ring (LOSS no_ring), never recorded after
         * the thread's end */
        if (!t->internal)
            atomic_fetch_add_explicit(&tracer_global.control->untraced_calls, 1,
                                      memory_order_relaxed);
        return NULL;
    }
    if (TRACER_UNLIKELY(t->busy)) {
        /* A signal handler's traced call interrupted us mid-record: it
         * cannot be written now, so it is counted as lost (the trace says
         * so), never silently missing. Calls our own code makes into other
         * libraries (t->internal) are not the app's and are not counted. */
        if (!t->internal && t->ring && t->claimed_gen == tracer_global.generation)
            atomic_fetch_add_explicit(&t->ring->lost_nested, 1, memory_order_relaxed);
        return NULL;
    }
    if (t->ring && t->claimed_gen == tracer_global.generation) {
        tracer_window_enter(t, window);
        return t;
    }
    tracer_busy_enter(t);
    t->ring = NULL;
    t->claimed_gen = 0;
    tracer_cpu_mark_reset(t);
    tracer_gettid();
    struct tracer_ring *r = tracer_thread_claim(t);
    tracer_busy_leave(t);
    if (!r)
        return NULL;
    t->window = window;
    uint64_t now = tracer_ring_now();
    uint64_t start = now;
    if (t->started_raw && t->started_window == window && t->started_raw <= now) {
        /* A thread created while tracing was on all along: it starts
         * when it did, and since a thread's CPU clock starts at 0 with
         * it, the first record carries all the CPU time it ran (the
         * anchor is "about 0 ns at start": 0 would mean no read). */
        start = t->started_raw;
        t->cpu.raw = start;
        t->cpu.anchor_raw = start;
        t->cpu.anchor_cpu_ns = 1;
    }
    t->started_raw = 0;
    struct trace_event *ev = tracer_reserve(t, 0);
    if (ev) {
        ev->type = TRACE_EV_THREAD_START;
        ev->tid = t->tid;
        ev->ts_ns = start;
        ev->u.thread.parent_tid = t->parent_tid;
        tracer_commit(t);
    }
    return t;
}

void tracer_set_parent_tid(uint32_t parent)
{
    tracer_tls.parent_tid = parent;
}

void tracer_note_thread_start(void)
{
    struct tracer_thread *t = &tracer_tls;
    if (!tracer_global.active)
        return;
    t->started_window = atomic_load_explicit(&tracer_global.control->enabled, memory_order_relaxed);
    t->started_raw = t->started_window ? tracer_ring_now() : 0;
}

void tracer_threads_init(void)
{
    pthread_key_create(&tracer_thread_key, tracer_thread_destructor);
    tracer_key_ready = 1;
}

void tracer_thread_after_fork(void)
{
    struct tracer_thread *t = &tracer_tls;
    t->ring = NULL;
    t->claimed_gen = 0;
    t->tid = (uint32_t)syscall(SYS_gettid);
    t->parent_tid = 0;
    t->window = 0;
    t->open_pending.active = 0; /* the parent writes its own */
    t->started_raw = 0;
    tracer_cpu_mark_reset(t);
    t->busy = 0;
    t->ended = 0; /* a child forked at exit starts afresh */
    t->key_rounds = 0;
}
