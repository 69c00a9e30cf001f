/* lock_fold.c - folding uncontended pthread locks (see lock_fold.h): a
 * table of the locks the process took, each with the first thread that
 * took it and what has been seen of it, and each thread's folded holds.
 *
 * The table is open-addressed on the lock's address, entries are claimed
 * with one compare-and-swap and never freed (a lock destroyed and another
 * made at its address inherits its entry: at worst that lock is recorded
 * when it could have been folded). Everything here runs inside the app's
 * lock calls: atomics only, no allocation, no syscall, never a wait. */
#include "lock_fold.h"

#include <stdatomic.h>
#include <string.h>

#include "tracer_ring.h"

/* what has been seen of a lock */
enum {
    TRACER_FOLD_EXCLUSIVE = 1,      /* taken exclusively at least once */
    TRACER_FOLD_SHARED_BY_MANY = 2, /* taken by a thread other than its first */
    TRACER_FOLD_RECORD = 4          /* contended, or both of the above: recorded from now on */
};

#define TRACER_FOLD_SLOTS 8192u /* a power of two; 128 KiB */
#define TRACER_FOLD_PROBES 16u

struct tracer_fold_slot {
    _Atomic uint64_t id; /* 0: free */
    _Atomic uint32_t first_tid;
    _Atomic uint32_t state;
};

static struct tracer_fold_slot tracer_fold_table[TRACER_FOLD_SLOTS];

static inline uint32_t tracer_fold_hash(uint64_t id)
{
    return (uint32_t)((id * 0x9e3779b97f4a7c15ull) >> 40) & (TRACER_FOLD_SLOTS - 1);
}

/* The slot of lock `id`: claimed for it (first taker `tid`) when `claim`
 * and it has none; NULL when it has none (or the table has no room near
 * its place: the lock is then recorded). */
static struct tracer_fold_slot *tracer_fold_slot(uint64_t id, uint32_t tid, int claim)
{
    uint32_t at = tracer_fold_hash(id);
    for (uint32_t i = 0; i < TRACER_FOLD_PROBES; i++) {
        struct tracer_fold_slot *s = &tracer_fold_table[(at + i) & (TRACER_FOLD_SLOTS - 1)];
        uint64_t cur = atomic_load_explicit(&s->id, memory_order_acquire);
        if (cur == id)
            return s;
        if (cur != 0)
            continue;
        if (!claim)
            return NULL;
        /* the first taker is written before the id is published: a thread
         * that finds the id reads the right one (0 only from a slot being
         * claimed by another thread, which then is not its first taker) */
        atomic_store_explicit(&s->first_tid, tid, memory_order_relaxed);
        uint64_t expect = 0;
        if (atomic_compare_exchange_strong_explicit(&s->id, &expect, id, memory_order_acq_rel,
                                                    memory_order_acquire))
            return s;
        if (expect == id)
            return s;
    }
    return NULL;
}

/* Counts a folded hold in the thread's ring (the collector reports it). */
static inline void tracer_fold_count(struct tracer_thread *t, int shared)
{
    struct tracer_ring *r = t->ring;
    atomic_store_explicit(&r->folded_holds,
                          atomic_load_explicit(&r->folded_holds, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    if (shared)
        atomic_store_explicit(&r->folded_shared,
                              atomic_load_explicit(&r->folded_shared, memory_order_relaxed) + 1,
                              memory_order_relaxed);
}

static int tracer_fold_acquire(struct tracer_thread *t, uint64_t id, uint32_t record_kind,
                               int exclusive)
{
    struct tracer_fold_slot *s = tracer_fold_slot(id, t->tid, 1);
    if (!s)
        return 0;
    uint32_t state = atomic_load_explicit(&s->state, memory_order_acquire);
    if (state & TRACER_FOLD_RECORD)
        return 0;
    uint32_t seen = (exclusive ? TRACER_FOLD_EXCLUSIVE : 0u) |
                    (atomic_load_explicit(&s->first_tid, memory_order_relaxed) != t->tid
                         ? TRACER_FOLD_SHARED_BY_MANY
                         : 0u);
    if ((state | seen) != state)
        state = atomic_fetch_or_explicit(&s->state, seen, memory_order_acq_rel) | seen;
    if ((state & (TRACER_FOLD_EXCLUSIVE | TRACER_FOLD_SHARED_BY_MANY)) ==
        (TRACER_FOLD_EXCLUSIVE | TRACER_FOLD_SHARED_BY_MANY)) {
        /* a second thread where exclusive holds happen: someone may wait
         * from now on (the holds of others in progress are written at
         * their releases) */
        atomic_fetch_or_explicit(&s->state, TRACER_FOLD_RECORD, memory_order_acq_rel);
        return 0;
    }
    if (t->nfolded < TRACER_FOLDED_HOLDS_MAX) {
        struct tracer_folded_hold *h = &t->folded[t->nfolded++];
        h->id = id;
        h->slot = s;
        h->ts = t->cpu.raw; /* 0 after a mark reset: dated at the release then */
        h->head = atomic_load_explicit(&t->ring->head, memory_order_relaxed);
        h->record_kind = record_kind;
        h->shared = !exclusive;
    }
    return 1;
}

/* The thread's folded holds and its ring's counters are written with the
 * busy mark up: a signal handler's lock call meanwhile is counted as lost
 * (tracer_enter_slow) instead of editing them under our feet. */
int tracer_lock_fold_acquire(struct tracer_thread *t, uint64_t id, uint32_t record_kind,
                             int exclusive)
{
    tracer_busy_enter(t);
    int folded = tracer_fold_acquire(t, id, record_kind, exclusive);
    tracer_busy_leave(t);
    return folded;
}

/* The index of the thread's latest folded hold of `id`, or -1. */
static inline int tracer_fold_find(const struct tracer_thread *t, uint64_t id)
{
    for (int i = (int)t->nfolded - 1; i >= 0; i--)
        if (t->folded[i].id == id)
            return i;
    return -1;
}

static void tracer_fold_remove(struct tracer_thread *t, int i)
{
    t->nfolded--;
    if ((uint32_t)i < t->nfolded) /* not the latest (locks released out of order) */
        memmove(&t->folded[i], &t->folded[i + 1],
                (t->nfolded - (uint32_t)i) * sizeof(struct tracer_folded_hold));
}

static enum tracer_lock_fold_release tracer_fold_release(struct tracer_thread *t, uint64_t id)
{
    int i = tracer_fold_find(t, id);
    if (i >= 0) {
        const struct tracer_fold_slot *held = t->folded[i].slot;
        if (atomic_load_explicit(&held->state, memory_order_acquire) & TRACER_FOLD_RECORD)
            return TRACER_LOCK_RELEASE_LATE;
        tracer_fold_count(t, (int)t->folded[i].shared);
        tracer_fold_remove(t, i);
        return TRACER_LOCK_RELEASE_FOLDED;
    }
    /* no hold kept: a lock never folded (or the table had no room) is
     * recorded; one still folded had its acquire folded (a hold past
     * TRACER_FOLDED_HOLDS_MAX) or untraced (before tracing was on) */
    struct tracer_fold_slot *s = tracer_fold_slot(id, 0, 0);
    if (!s || (atomic_load_explicit(&s->state, memory_order_acquire) & TRACER_FOLD_RECORD))
        return TRACER_LOCK_RELEASE_RECORD;
    tracer_fold_count(t, 0);
    return TRACER_LOCK_RELEASE_FOLDED;
}

enum tracer_lock_fold_release tracer_lock_fold_release(struct tracer_thread *t, uint64_t id)
{
    tracer_busy_enter(t);
    enum tracer_lock_fold_release what = tracer_fold_release(t, id);
    tracer_busy_leave(t);
    return what;
}

int tracer_lock_fold_take(struct tracer_thread *t, uint64_t id, struct tracer_folded_hold *out)
{
    tracer_busy_enter(t);
    int i = tracer_fold_find(t, id);
    if (i >= 0) {
        *out = t->folded[i];
        tracer_fold_remove(t, i);
    }
    tracer_busy_leave(t);
    return i >= 0 ? 0 : -1;
}

void tracer_lock_fold_contended(uint64_t id)
{
    struct tracer_fold_slot *s = tracer_fold_slot(id, 0, 1);
    if (s)
        atomic_fetch_or_explicit(&s->state, TRACER_FOLD_RECORD, memory_order_acq_rel);
}

void tracer_lock_fold_after_fork(void)
{
    memset(tracer_fold_table, 0, sizeof tracer_fold_table);
}
