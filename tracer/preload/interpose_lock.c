/* interpose_lock.c - wrappers for the locks whose contention the replay
 * must reproduce: pthread mutexes and rwlocks (lock, trylock, timedlock and
 * the clockid_t forms, unlock; condition waits, timed or not, release and
 * re-acquire their mutex), POSIX semaphores (as locks), flock, and
 * fcntl record locks (F_SETLK/F_SETLKW and the F_OFD_* forms, and lockf,
 * which glibc makes one of them). fcntl's
 * F_DUPFD forms are handled here too, as dup.
 *
 * A blocking acquire first tries the lock without blocking: when that
 * succeeds (the common, uncontended case) the event needs one clock read.
 * Uncontended mutexes and rwlocks are folded (counted, not recorded) until
 * they are contended: lock_fold.h says when, the FOLD arguments below
 * which locks. */
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdarg.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "io_events.h"
#include "lock_fold.h"

TRACER_REAL(int, pthread_mutex_lock, (pthread_mutex_t *))
TRACER_REAL(int, pthread_mutex_trylock, (pthread_mutex_t *))
TRACER_REAL(int, pthread_mutex_timedlock, (pthread_mutex_t *, const struct timespec *))
TRACER_REAL(int, pthread_mutex_unlock, (pthread_mutex_t *))
TRACER_REAL(int, pthread_rwlock_rdlock, (pthread_rwlock_t *))
TRACER_REAL(int, pthread_rwlock_wrlock, (pthread_rwlock_t *))
TRACER_REAL(int, pthread_rwlock_tryrdlock, (pthread_rwlock_t *))
TRACER_REAL(int, pthread_rwlock_trywrlock, (pthread_rwlock_t *))
TRACER_REAL(int, pthread_rwlock_timedrdlock, (pthread_rwlock_t *, const struct timespec *))
TRACER_REAL(int, pthread_rwlock_timedwrlock, (pthread_rwlock_t *, const struct timespec *))
TRACER_REAL(int, pthread_rwlock_unlock, (pthread_rwlock_t *))
TRACER_REAL(int, pthread_cond_wait, (pthread_cond_t *, pthread_mutex_t *))
TRACER_REAL(int, pthread_cond_timedwait,
            (pthread_cond_t *, pthread_mutex_t *, const struct timespec *))
/* the clockid_t forms (glibc 2.30): libstdc++'s condition_variable::wait_for
 * and timed_mutex::try_lock_for call them from the app's own code */
TRACER_REAL(int, pthread_cond_clockwait,
            (pthread_cond_t *, pthread_mutex_t *, clockid_t, const struct timespec *))
TRACER_REAL(int, pthread_mutex_clocklock, (pthread_mutex_t *, clockid_t, const struct timespec *))
TRACER_REAL(int, pthread_rwlock_clockrdlock,
            (pthread_rwlock_t *, clockid_t, const struct timespec *))
TRACER_REAL(int, pthread_rwlock_clockwrlock,
            (pthread_rwlock_t *, clockid_t, const struct timespec *))
TRACER_REAL(int, sem_wait, (sem_t *))
TRACER_REAL(int, sem_trywait, (sem_t *))
TRACER_REAL(int, sem_timedwait, (sem_t *, const struct timespec *))
TRACER_REAL(int, sem_clockwait, (sem_t *, clockid_t, const struct timespec *))
TRACER_REAL(int, sem_post, (sem_t *))
TRACER_REAL(int, flock, (int, int))
TRACER_REAL(int, fcntl, (int, int, ...))
TRACER_REAL(int, fcntl64, (int, int, ...))
TRACER_REAL(int, lockf, (int, int, off_t))
TRACER_REAL(int, lockf64, (int, int, off64_t))

/* Any lock event as a full LOCK record (every case tracer_lock_quick's
 * compact record does not cover). */
static __attribute__((noinline)) void
tracer_lock_event_full(struct tracer_thread *t, uint8_t op, uint8_t kind, uint8_t mode, uint64_t id,
                       int result, uint64_t begin, uint64_t end, int64_t start, int64_t len)
{
    struct trace_event *ev = tracer_event_new(t, TRACE_EV_LOCK, op, begin, end);
    if (!ev)
        return;
    ev->u.lock.kind = kind;
    ev->u.lock.mode = mode;
    ev->u.lock.lock_id = id;
    ev->u.lock.result = result;
    ev->u.lock.start = start;
    ev->u.lock.len = len;
    if (result != 0)
        ev->flags |= TRACE_F_ERROR;
    tracer_commit(t);
}

/* The compact 32-byte record of a lock operation that succeeded at `now`
 * (four stores the collector expands), with `cpu` (ring clock) used since
 * the previous record; the event ends where it starts, so the CPU mark
 * moves to `now` with no second look at the clock. 0 when the ring has no
 * room at once: nothing was written. Not with stacks (a compact record
 * has none). */
static inline __attribute__((always_inline)) int tracer_lock_compact(struct tracer_thread *t,
                                                                     uint32_t record_kind,
                                                                     uint64_t id, uint64_t now,
                                                                     uint64_t cpu)
{
    uint64_t head;
    struct tracer_lock_record *lr = (struct tracer_lock_record *)tracer_record_reserve_fast(
        t, sizeof *lr, record_kind, cpu, &head);
    if (TRACER_UNLIKELY(!lr))
        return 0;
    lr->ts_ns = now;
    lr->lock_id = id;
    tracer_publish(t, head + sizeof *lr);
    tracer_busy_clear(t);
    t->cpu.raw = now;
    return 1;
}

/* A pthread lock operation that succeeded at once, stamped `now` with `cpu`
 * used since the previous record: the compact record, inlined into every
 * wrapper, or the full one (stacks, a full ring). */
static inline __attribute__((always_inline)) void tracer_lock_quick(struct tracer_thread *t,
                                                                    uint8_t op, uint8_t kind,
                                                                    uint8_t mode, uint64_t id,
                                                                    uint64_t now, uint64_t cpu)
{
    if (TRACER_LIKELY(!tracer_global.stack_depth) &&
        tracer_lock_compact(t, tracer_lock_record_kind(op, kind, mode), id, now, cpu))
        return;
    t->pending_cpu = cpu;
    t->begin_ns = now;
    t->recorded = 0;
    tracer_lock_event_full(t, op, kind, mode, id, 0, now, now, 0, 0);
    tracer_event_end(t, now);
}

/* Any other outcome (a wait, an error, a timed call): the full record,
 * after tracer_stamp's `begin` and `cpu`. */
static void tracer_lock_slow(struct tracer_thread *t, uint8_t op, uint8_t kind, uint8_t mode,
                             uint64_t id, int result, uint64_t begin, uint64_t cpu, uint64_t end)
{
    t->pending_cpu = cpu;
    t->begin_ns = begin;
    t->recorded = 0;
    tracer_lock_event_full(t, op, kind, mode, id, result, begin, end, 0, 0);
    tracer_event_end(t, end);
}

/* What folding applies to a lock operation (lock_fold.h): none (a
 * semaphore, a mutex whose unlock can fail, a process-shared lock), an
 * acquire in either mode, or a release. */
enum tracer_lock_fold_op {
    TRACER_FOLD_NONE = 0,
    TRACER_FOLD_ACQUIRE_EXCLUSIVE,
    TRACER_FOLD_ACQUIRE_SHARED,
    TRACER_FOLD_RELEASE
};

/* Can this mutex be folded? Its unlock cannot fail (below), and it is
 * not process-shared (glibc's PTHREAD_MUTEX_PSHARED_BIT): another
 * process's holds are not in this process's table. */
static inline int tracer_mutex_foldable(const pthread_mutex_t *m);

static inline int tracer_rwlock_foldable(const pthread_rwlock_t *l)
{
#ifdef __GLIBC__
    return l->__data.__shared == 0;
#else
    (void)l;
    return 0;
#endif
}

/* Writes the acquire of this thread's hold of lock `id` that was folded
 * when the lock became recorded (lock_fold.h: LATE), before its release is
 * recorded: dated at the thread's CPU mark when it took the lock (the end
 * of its previous record: a folded acquire reads no clock, so the hold may
 * start a little early) when the thread recorded nothing since, else now
 * (its records stay in time order), with the CPU time up to it. */
static __attribute__((noinline)) void tracer_lock_write_late(struct tracer_thread *t, uint64_t id)
{
    struct tracer_folded_hold h;
    if (tracer_lock_fold_take(t, id, &h) != 0)
        return;
    uint64_t cpu;
    uint64_t now = tracer_stamp(t, &cpu);
    uint64_t ts = now;
    if (h.head == atomic_load_explicit(&t->ring->head, memory_order_relaxed) && h.ts && h.ts <= now)
        ts = h.ts;
    /* the segment since the previous record is [now - cpu, now] in ring
     * time: the acquire carries its part up to ts, the release the rest */
    uint64_t from = now - (cpu & ~TRACER_CPU_ESTIMATED_BIT);
    uint64_t cpu_before = (ts > from ? ts - from : 0) | (cpu & TRACER_CPU_ESTIMATED_BIT);
    tracer_lock_quick(t, (uint8_t)(h.record_kind >> 8), (uint8_t)(h.record_kind >> 16),
                      (uint8_t)(h.record_kind >> 24), id, ts, cpu_before);
}

/* The whole common case as a leaf (no call, so the wrapper around it keeps
 * nothing in callee-saved registers): tracing on for locks, no stacks, the
 * CPU mark holding, room in the ring. Writes the compact record of a lock
 * operation that succeeded now and returns 1, or folds it (`fold`,
 * lock_fold.h) and returns 1; returns 0 having written nothing, and the
 * caller's general path does everything. */
static inline __attribute__((always_inline)) int
tracer_lock_leaf(uint32_t record_kind, const void *lockp, enum tracer_lock_fold_op fold)
{
    struct tracer_thread *t = &tracer_tls;
    if (TRACER_UNLIKELY(!tracer_thread_ready(t, TRACER_ONLY_LOCK) || tracer_global.stack_depth))
        return 0;
    uint64_t id = (uint64_t)(uintptr_t)lockp;
    if (fold == TRACER_FOLD_RELEASE && tracer_global.lock_fold) {
        enum tracer_lock_fold_release f = tracer_lock_fold_release(t, id);
        if (f == TRACER_LOCK_RELEASE_FOLDED)
            return 1;
        if (f == TRACER_LOCK_RELEASE_LATE)
            return 0;
    } else if (fold != TRACER_FOLD_NONE && tracer_global.lock_fold &&
               tracer_lock_fold_acquire(t, id, record_kind,
                                        fold == TRACER_FOLD_ACQUIRE_EXCLUSIVE)) {
        return 1; /* no clock read: a folded operation costs a table look-up */
    }
    uint64_t now = tracer_ring_now();
    if (TRACER_UNLIKELY(!tracer_cpu_mark_holds(&t->cpu, now)))
        return 0;
    return tracer_lock_compact(t, record_kind, id, now, tracer_cpu_mark_span(&t->cpu, now));
}

/* The fold operation of an acquire in MODE of a lock that `foldable`. */
#define TRACER_FOLD_ACQUIRE_OP(foldable, MODE)                                                     \
    (!(foldable)                      ? TRACER_FOLD_NONE                                           \
     : (MODE) == TRACE_LOCK_EXCLUSIVE ? TRACER_FOLD_ACQUIRE_EXCLUSIVE                              \
                                      : TRACER_FOLD_ACQUIRE_SHARED)

/* Blocking acquire of a pthread lock: try first, block only when busy. The
 * clock is read after the try, so an uncontended acquire is stamped once the
 * lock is ours: stamped before, a thread preempted between the stamp and
 * the try showed a hold overlapping the previous holder's. Defines NAME
 * (the leaf for a lock taken at once) and its general path NAME_rest,
 * which gets the try's result. */
#define TRACER_PTHREAD_ACQUIRE_WRAPPER(NAME, TYPE, real_try, real_block, KIND, MODE, foldable)     \
    static __attribute__((noinline)) int tracer_##NAME##_rest(TYPE *lockp, int rc)                 \
    {                                                                                              \
        TRACER_PTHREAD_ACQUIRE(lockp, rc, real_block, KIND, MODE, EBUSY,                           \
                               TRACER_FOLD_ACQUIRE_OP(foldable(lockp), MODE))                      \
    }                                                                                              \
    TRACER_EXPORT int NAME(TYPE *lockp)                                                            \
    {                                                                                              \
        /* the try first: only lockp lives across the call, and an untraced                        \
         * call that finds the lock busy blocks as the real one would */                           \
        int rc = real_try(lockp);                                                                  \
        if (TRACER_LIKELY(rc == 0) &&                                                              \
            tracer_lock_leaf(tracer_lock_record_kind(TRACE_LOCK_ACQUIRE, KIND, MODE), lockp,       \
                             TRACER_FOLD_ACQUIRE_OP(foldable(lockp), MODE)))                       \
            return 0;                                                                              \
        return tracer_##NAME##_rest(lockp, rc);                                                    \
    }

/* The general path of a blocking acquire, after the try returned rc (BUSY:
 * the try found the lock taken); FOLD: its tracer_lock_fold_op. */
#define TRACER_PTHREAD_ACQUIRE(lockp, rc, real_block, KIND, MODE, BUSY, FOLD)                      \
    struct tracer_thread *t = tracer_enter(TRACER_ONLY_LOCK);                                      \
    if (!t)                                                                                        \
        return rc == (BUSY) ? real_block(lockp) : rc;                                              \
    uint64_t cpu;                                                                                  \
    uint64_t begin = tracer_stamp(t, &cpu);                                                        \
    int fold = (FOLD) != TRACER_FOLD_NONE && tracer_global.lock_fold;                              \
    if (TRACER_LIKELY(rc == 0)) {                                                                  \
        if (fold &&                                                                                \
            tracer_lock_fold_acquire(t, (uint64_t)(uintptr_t)(lockp),                              \
                                     tracer_lock_record_kind(TRACE_LOCK_ACQUIRE, KIND, MODE),      \
                                     (MODE) == TRACE_LOCK_EXCLUSIVE))                              \
            return 0;                                                                              \
        tracer_lock_quick(t, TRACE_LOCK_ACQUIRE, KIND, MODE, (uint64_t)(uintptr_t)(lockp), begin,  \
                          cpu);                                                                    \
        return 0;                                                                                  \
    }                                                                                              \
    uint64_t end = begin;                                                                          \
    if (rc == (BUSY) && fold)                                                                      \
        tracer_lock_fold_contended((uint64_t)(uintptr_t)(lockp));                                  \
    if (rc == (BUSY)) {                                                                            \
        rc = real_block(lockp);                                                                    \
        end = tracer_ring_now();                                                                   \
    }                                                                                              \
    tracer_lock_slow(t, TRACE_LOCK_ACQUIRE, KIND, MODE, (uint64_t)(uintptr_t)(lockp), rc, begin,   \
                     cpu, end);                                                                    \
    return rc;

/* Release, try and timed acquire: stamped before the call (a release must
 * be in the trace before the next holder's acquire). `foldable`: the lock
 * may be folded (lock_fold.h): a release is then folded or written with
 * its hold's late acquire, a try that succeeds is an acquire, one that
 * fails and a timed call make the lock contended. */
#define TRACER_PTHREAD_SIMPLE(call, lockp, OP, KIND, MODE, foldable)                               \
    struct tracer_thread *t = tracer_enter(TRACER_ONLY_LOCK);                                      \
    if (!t)                                                                                        \
        return call;                                                                               \
    uint64_t id = (uint64_t)(uintptr_t)(lockp);                                                    \
    int fold = (foldable) && tracer_global.lock_fold;                                              \
    if (fold && (OP) == TRACE_LOCK_RELEASE) {                                                      \
        enum tracer_lock_fold_release f = tracer_lock_fold_release(t, id);                         \
        if (f == TRACER_LOCK_RELEASE_FOLDED)                                                       \
            return call;                                                                           \
        if (f == TRACER_LOCK_RELEASE_LATE)                                                         \
            tracer_lock_write_late(t, id);                                                         \
    } else if (fold && (OP) == TRACE_LOCK_TIMED) {                                                 \
        tracer_lock_fold_contended(id);                                                            \
    }                                                                                              \
    uint64_t cpu;                                                                                  \
    uint64_t begin = tracer_stamp(t, &cpu);                                                        \
    int rc = call;                                                                                 \
    if (fold && (OP) == TRACE_LOCK_TRY) {                                                          \
        if (rc == 0 && tracer_lock_fold_acquire(t, id, tracer_lock_record_kind(OP, KIND, MODE),    \
                                                (MODE) == TRACE_LOCK_EXCLUSIVE))                   \
            return 0;                                                                              \
        if (rc == EBUSY)                                                                           \
            tracer_lock_fold_contended(id);                                                        \
    }                                                                                              \
    if (TRACER_LIKELY(rc == 0 && (OP) != TRACE_LOCK_TIMED)) {                                      \
        tracer_lock_quick(t, OP, KIND, MODE, (uint64_t)(uintptr_t)(lockp), begin, cpu);            \
        return 0;                                                                                  \
    }                                                                                              \
    uint64_t end = (OP) == TRACE_LOCK_TIMED ? tracer_ring_now() : begin;                           \
    tracer_lock_slow(t, OP, KIND, MODE, (uint64_t)(uintptr_t)(lockp), rc, begin, cpu, end);        \
    return rc;

TRACER_PTHREAD_ACQUIRE_WRAPPER(pthread_mutex_lock, pthread_mutex_t,
                               tracer_real_pthread_mutex_trylock(),
                               tracer_real_pthread_mutex_lock(), TRACE_LOCK_MUTEX,
                               TRACE_LOCK_EXCLUSIVE, tracer_mutex_foldable)

TRACER_EXPORT int pthread_mutex_trylock(pthread_mutex_t *m)
{
    TRACER_PTHREAD_SIMPLE(tracer_real_pthread_mutex_trylock()(m), m, TRACE_LOCK_TRY,
                          TRACE_LOCK_MUTEX, TRACE_LOCK_EXCLUSIVE, tracer_mutex_foldable(m))
}

TRACER_EXPORT int pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *ts)
{
    TRACER_PTHREAD_SIMPLE(tracer_real_pthread_mutex_timedlock()(m, ts), m, TRACE_LOCK_TIMED,
                          TRACE_LOCK_MUTEX, TRACE_LOCK_EXCLUSIVE, tracer_mutex_foldable(m))
}

TRACER_EXPORT
int pthread_mutex_clocklock(pthread_mutex_t *m, clockid_t clock, const struct timespec *ts)
{
    TRACER_PTHREAD_SIMPLE(tracer_real_pthread_mutex_clocklock()(m, clock, ts), m, TRACE_LOCK_TIMED,
                          TRACE_LOCK_MUTEX, TRACE_LOCK_EXCLUSIVE, tracer_mutex_foldable(m))
}

static __attribute__((noinline)) int tracer_mutex_unlock_rest(pthread_mutex_t *m)
{
    TRACER_PTHREAD_SIMPLE(tracer_real_pthread_mutex_unlock()(m), m, TRACE_LOCK_RELEASE,
                          TRACE_LOCK_MUTEX, TRACE_LOCK_EXCLUSIVE, tracer_mutex_foldable(m))
}

/* Can this unlock fail? glibc's normal and adaptive mutexes never check
 * the owner on unlock (POSIX leaves it undefined): for them the release is
 * recorded before the call, by the leaf; error-checking, recursive, robust
 * and priority mutexes can refuse, so their record waits for the result. */
static inline int tracer_mutex_unlock_cannot_fail(const pthread_mutex_t *m)
{
#ifdef __GLIBC__
    int kind = m->__data.__kind & (PTHREAD_MUTEX_ERRORCHECK | PTHREAD_MUTEX_RECURSIVE | 0x70);
    return kind == PTHREAD_MUTEX_NORMAL || kind == PTHREAD_MUTEX_ADAPTIVE_NP;
#else
    (void)m;
    return 0;
#endif
}

static inline int tracer_mutex_foldable(const pthread_mutex_t *m)
{
#ifdef __GLIBC__
    return tracer_mutex_unlock_cannot_fail(m) && !(m->__data.__kind & 128);
#else
    (void)m;
    return 0;
#endif
}

TRACER_EXPORT int pthread_mutex_unlock(pthread_mutex_t *m)
{
    /* the release is in the trace before the next holder's acquire */
    if (TRACER_LIKELY(
            tracer_mutex_unlock_cannot_fail(m) &&
            tracer_lock_leaf(
                tracer_lock_record_kind(TRACE_LOCK_RELEASE, TRACE_LOCK_MUTEX, TRACE_LOCK_EXCLUSIVE),
                m, tracer_mutex_foldable(m) ? TRACER_FOLD_RELEASE : TRACER_FOLD_NONE)))
        return tracer_real_pthread_mutex_unlock()(m);
    return tracer_mutex_unlock_rest(m);
}

TRACER_PTHREAD_ACQUIRE_WRAPPER(pthread_rwlock_rdlock, pthread_rwlock_t,
                               tracer_real_pthread_rwlock_tryrdlock(),
                               tracer_real_pthread_rwlock_rdlock(), TRACE_LOCK_RWLOCK,
                               TRACE_LOCK_SHARED, tracer_rwlock_foldable)

TRACER_PTHREAD_ACQUIRE_WRAPPER(pthread_rwlock_wrlock, pthread_rwlock_t,
                               tracer_real_pthread_rwlock_trywrlock(),
                               tracer_real_pthread_rwlock_wrlock(), TRACE_LOCK_RWLOCK,
                               TRACE_LOCK_EXCLUSIVE, tracer_rwlock_foldable)

TRACER_EXPORT int pthread_rwlock_tryrdlock(pthread_rwlock_t *l)
{
    TRACER_PTHREAD_SIMPLE(tracer_real_pthread_rwlock_tryrdlock()(l), l, TRACE_LOCK_TRY,
                          TRACE_LOCK_RWLOCK, TRACE_LOCK_SHARED, tracer_rwlock_foldable(l))
}

TRACER_EXPORT int pthread_rwlock_trywrlock(pthread_rwlock_t *l)
{
    TRACER_PTHREAD_SIMPLE(tracer_real_pthread_rwlock_trywrlock()(l), l, TRACE_LOCK_TRY,
                          TRACE_LOCK_RWLOCK, TRACE_LOCK_EXCLUSIVE, tracer_rwlock_foldable(l))
}

TRACER_EXPORT int pthread_rwlock_timedrdlock(pthread_rwlock_t *l, const struct timespec *ts)
{
    TRACER_PTHREAD_SIMPLE(tracer_real_pthread_rwlock_timedrdlock()(l, ts), l, TRACE_LOCK_TIMED,
                          TRACE_LOCK_RWLOCK, TRACE_LOCK_SHARED, tracer_rwlock_foldable(l))
}

TRACER_EXPORT int pthread_rwlock_timedwrlock(pthread_rwlock_t *l, const struct timespec *ts)
{
    TRACER_PTHREAD_SIMPLE(tracer_real_pthread_rwlock_timedwrlock()(l, ts), l, TRACE_LOCK_TIMED,
                          TRACE_LOCK_RWLOCK, TRACE_LOCK_EXCLUSIVE, tracer_rwlock_foldable(l))
}

TRACER_EXPORT
int pthread_rwlock_clockrdlock(pthread_rwlock_t *l, clockid_t clock, const struct timespec *ts)
{
    TRACER_PTHREAD_SIMPLE(tracer_real_pthread_rwlock_clockrdlock()(l, clock, ts), l,
                          TRACE_LOCK_TIMED, TRACE_LOCK_RWLOCK, TRACE_LOCK_SHARED,
                          tracer_rwlock_foldable(l))
}

TRACER_EXPORT
int pthread_rwlock_clockwrlock(pthread_rwlock_t *l, clockid_t clock, const struct timespec *ts)
{
    TRACER_PTHREAD_SIMPLE(tracer_real_pthread_rwlock_clockwrlock()(l, clock, ts), l,
                          TRACE_LOCK_TIMED, TRACE_LOCK_RWLOCK, TRACE_LOCK_EXCLUSIVE,
                          tracer_rwlock_foldable(l))
}

TRACER_EXPORT int pthread_rwlock_unlock(pthread_rwlock_t *l)
{
    TRACER_PTHREAD_SIMPLE(tracer_real_pthread_rwlock_unlock()(l), l, TRACE_LOCK_RELEASE,
                          TRACE_LOCK_RWLOCK, TRACE_LOCK_EXCLUSIVE, tracer_rwlock_foldable(l))
}

/* A condition wait releases the mutex and takes it back before returning:
 * recorded as a RELEASE when the wait starts and an ACQUIRE when it ends,
 * so lock pairing in the trace stays exact. */
enum tracer_cond_form { TRACER_COND_WAIT, TRACER_COND_TIMED, TRACER_COND_CLOCK };

static int tracer_cond_call(enum tracer_cond_form form, pthread_cond_t *c, pthread_mutex_t *m,
                            clockid_t clock, const struct timespec *ts)
{
    switch (form) {
    case TRACER_COND_TIMED:
        return tracer_real_pthread_cond_timedwait()(c, m, ts);
    case TRACER_COND_CLOCK:
        return tracer_real_pthread_cond_clockwait()(c, m, clock, ts);
    default:
        return tracer_real_pthread_cond_wait()(c, m);
    }
}

static int tracer_cond(enum tracer_cond_form form, pthread_cond_t *c, pthread_mutex_t *m,
                       clockid_t clock, const struct timespec *ts)
{
    struct tracer_thread *t = tracer_enter(TRACER_ONLY_LOCK);
    if (!t)
        return tracer_cond_call(form, c, m, clock, ts);
    if (tracer_global.lock_fold && tracer_mutex_foldable(m)) {
        /* a condition wait is how threads hand work over: the mutex is
         * recorded from now on (and this thread's folded hold of it,
         * which the wait releases, is written first) */
        uint64_t id = (uint64_t)(uintptr_t)m;
        tracer_lock_fold_contended(id);
        if (tracer_lock_fold_release(t, id) == TRACER_LOCK_RELEASE_LATE)
            tracer_lock_write_late(t, id);
    }
    uint64_t cpu;
    uint64_t begin = tracer_stamp(t, &cpu);
    tracer_lock_quick(t, TRACE_LOCK_RELEASE, TRACE_LOCK_MUTEX, TRACE_LOCK_EXCLUSIVE,
                      (uint64_t)(uintptr_t)m, begin, cpu);
    int rc = tracer_cond_call(form, c, m, clock, ts);
    /* the CPU of the wait itself is the wait's, not work before the
     * re-acquire: the acquire carries none, and the mark moves past it */
    uint64_t end = tracer_stamp(t, &cpu);
    tracer_lock_quick(t, TRACE_LOCK_ACQUIRE, TRACE_LOCK_MUTEX, TRACE_LOCK_EXCLUSIVE,
                      (uint64_t)(uintptr_t)m, end, 0);
    return rc;
}

TRACER_EXPORT int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
    return tracer_cond(TRACER_COND_WAIT, c, m, CLOCK_REALTIME, NULL);
}

TRACER_EXPORT int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m,
                                         const struct timespec *ts)
{
    return tracer_cond(TRACER_COND_TIMED, c, m, CLOCK_REALTIME, ts);
}

TRACER_EXPORT int pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clock,
                                         const struct timespec *ts)
{
    return tracer_cond(TRACER_COND_CLOCK, c, m, clock, ts);
}

/* POSIX semaphores, as the locks they mostly are (CPython's threading.Lock
 * is one, initialised to 1): a wait acquires, sem_post releases, the mode
 * is exclusive. They return -1 and set errno: the code below works in
 * error codes like the pthread calls, and converts at the boundary. */
static inline int tracer_sem_code(int r)
{
    return r == 0 ? 0 : errno;
}

static inline int tracer_sem_return(int code, int saved_errno)
{
    errno = code ? code : saved_errno;
    return code ? -1 : 0;
}

static inline int tracer_sem_trywait_code(sem_t *s)
{
    return tracer_sem_code(tracer_real_sem_trywait()(s));
}

static inline int tracer_sem_wait_code(sem_t *s)
{
    return tracer_sem_code(tracer_real_sem_wait()(s));
}

static __attribute__((noinline)) int tracer_sem_wait_rest(sem_t *s, int rc)
{
    TRACER_PTHREAD_ACQUIRE(s, rc, tracer_sem_wait_code, TRACE_LOCK_SEMAPHORE, TRACE_LOCK_EXCLUSIVE,
                           EAGAIN, TRACER_FOLD_NONE)
}

TRACER_EXPORT int sem_wait(sem_t *s)
{
    int saved = errno;
    int rc = tracer_sem_trywait_code(s);
    if (TRACER_LIKELY(rc == 0) &&
        tracer_lock_leaf(
            tracer_lock_record_kind(TRACE_LOCK_ACQUIRE, TRACE_LOCK_SEMAPHORE, TRACE_LOCK_EXCLUSIVE),
            s, TRACER_FOLD_NONE))
        return tracer_sem_return(0, saved);
    return tracer_sem_return(tracer_sem_wait_rest(s, rc), saved);
}

static int tracer_sem_trywait(sem_t *s)
{
    TRACER_PTHREAD_SIMPLE(tracer_sem_trywait_code(s), s, TRACE_LOCK_TRY, TRACE_LOCK_SEMAPHORE,
                          TRACE_LOCK_EXCLUSIVE, 0)
}

TRACER_EXPORT int sem_trywait(sem_t *s)
{
    int saved = errno;
    return tracer_sem_return(tracer_sem_trywait(s), saved);
}

static int tracer_sem_timedwait(sem_t *s, const struct timespec *ts)
{
    TRACER_PTHREAD_SIMPLE(tracer_sem_code(tracer_real_sem_timedwait()(s, ts)), s, TRACE_LOCK_TIMED,
                          TRACE_LOCK_SEMAPHORE, TRACE_LOCK_EXCLUSIVE, 0)
}

TRACER_EXPORT int sem_timedwait(sem_t *s, const struct timespec *ts)
{
    int saved = errno;
    return tracer_sem_return(tracer_sem_timedwait(s, ts), saved);
}

static int tracer_sem_clockwait(sem_t *s, clockid_t clock, const struct timespec *ts)
{
    TRACER_PTHREAD_SIMPLE(tracer_sem_code(tracer_real_sem_clockwait()(s, clock, ts)), s,
                          TRACE_LOCK_TIMED, TRACE_LOCK_SEMAPHORE, TRACE_LOCK_EXCLUSIVE, 0)
}

TRACER_EXPORT int sem_clockwait(sem_t *s, clockid_t clock, const struct timespec *ts)
{
    int saved = errno;
    return tracer_sem_return(tracer_sem_clockwait(s, clock, ts), saved);
}

/* the release is in the trace before the next holder's acquire */
static int tracer_sem_post(sem_t *s)
{
    TRACER_PTHREAD_SIMPLE(tracer_sem_code(tracer_real_sem_post()(s)), s, TRACE_LOCK_RELEASE,
                          TRACE_LOCK_SEMAPHORE, TRACE_LOCK_EXCLUSIVE, 0)
}

TRACER_EXPORT int sem_post(sem_t *s)
{
    int saved = errno;
    return tracer_sem_return(tracer_sem_post(s), saved);
}

/* A record lock's range in absolute bytes [start, start + len) (len 0: to
 * the end of the file and beyond), whatever the call made it relative to:
 * SEEK_CUR is the descriptor's offset and SEEK_END the file's size, both
 * asked of the kernel (lock calls are rare, and the offset we track is
 * wrong for a descriptor moved where we cannot see), and a negative
 * length counts back from the start. Two processes locking the same
 * bytes so name the same lock, however each said it. */
static void tracer_lock_range(int fd, int whence, int64_t *start, int64_t *len)
{
    int64_t base = 0;
    if (whence == SEEK_CUR) {
        base = (int64_t)syscall(SYS_lseek, fd, 0, SEEK_CUR);
    } else if (whence == SEEK_END) {
        struct stat st;
        base = syscall(SYS_fstat, fd, &st) == 0 ? (int64_t)st.st_size : -1;
    }
    if (base > 0)
        *start += base;
    if (*len < 0) {
        *start += *len;
        *len = -*len;
    }
}

/* Identity of a file lock: the file (dev, ino) mixed with the byte range. */
static uint64_t tracer_file_lock_id(int fd, int64_t start, int64_t len)
{
    struct tracer_fd *f = tracer_fd_classify(fd);
    uint64_t h = 1469598103934665603ull;
    uint64_t parts[4] = {f ? f->dev : (uint64_t)fd, f ? f->ino : 0, (uint64_t)start, (uint64_t)len};
    for (int i = 0; i < 4; i++)
        h = (h ^ parts[i]) * 1099511628211ull;
    return h;
}

TRACER_EXPORT int flock(int fd, int op)
{
    struct tracer_thread *t = tracer_enter(TRACER_ONLY_LOCK);
    if (!t)
        return tracer_real_flock()(fd, op);
    uint64_t begin = tracer_event_begin(t);
    int rc = tracer_real_flock()(fd, op);
    int err = errno;
    uint64_t end = tracer_ring_now();
    int base = op & ~LOCK_NB;
    uint8_t lop = base == LOCK_UN ? TRACE_LOCK_RELEASE
                                  : ((op & LOCK_NB) ? TRACE_LOCK_TRY : TRACE_LOCK_ACQUIRE);
    uint8_t mode = base == LOCK_SH ? TRACE_LOCK_SHARED : TRACE_LOCK_EXCLUSIVE;
    tracer_lock_event_full(t, lop, TRACE_LOCK_FLOCK, mode, tracer_file_lock_id(fd, 0, 0),
                           rc == 0 ? 0 : err, begin, end, 0, 0);
    tracer_event_end(t, end);
    errno = err;
    return rc;
}

static int tracer_fcntl_common(int fd, int cmd, void *arg, int use64)
{
    if (cmd != F_DUPFD && cmd != F_DUPFD_CLOEXEC)
        return use64 ? tracer_real_fcntl64()(fd, cmd, arg) : tracer_real_fcntl()(fd, cmd, arg);
    struct tracer_thread *t = tracer_dup_enter(fd);
    uint64_t begin = t ? tracer_event_begin(t) : 0;
    int rc = use64 ? tracer_real_fcntl64()(fd, cmd, arg) : tracer_real_fcntl()(fd, cmd, arg);
    int err = errno;
    tracer_dup_done(t, fd, rc, err, begin);
    errno = err;
    return rc;
}

static int tracer_fcntl_lock(int fd, int cmd, struct flock *fl, int use64)
{
    struct tracer_thread *t = tracer_enter(TRACER_ONLY_LOCK);
    if (!t || !fl)
        return use64 ? tracer_real_fcntl64()(fd, cmd, fl) : tracer_real_fcntl()(fd, cmd, fl);
    short type = fl->l_type;
    int64_t start = fl->l_start, len = fl->l_len;
    tracer_lock_range(fd, fl->l_whence, &start, &len);
    uint64_t begin = tracer_event_begin(t);
    int rc = use64 ? tracer_real_fcntl64()(fd, cmd, fl) : tracer_real_fcntl()(fd, cmd, fl);
    int err = errno;
    uint64_t end = tracer_ring_now();
    int blocking = cmd == F_SETLKW || cmd == F_OFD_SETLKW;
    uint8_t kind = (cmd == F_OFD_SETLK || cmd == F_OFD_SETLKW) ? TRACE_LOCK_OFD : TRACE_LOCK_FCNTL;
    uint8_t op =
        type == F_UNLCK ? TRACE_LOCK_RELEASE : (blocking ? TRACE_LOCK_ACQUIRE : TRACE_LOCK_TRY);
    uint8_t mode = type == F_RDLCK ? TRACE_LOCK_SHARED : TRACE_LOCK_EXCLUSIVE;
    tracer_lock_event_full(t, op, kind, mode, tracer_file_lock_id(fd, start, len),
                           rc == 0 ? 0 : err, begin, end, start, len);
    tracer_event_end(t, end);
    errno = err;
    return rc;
}

/* lockf(3): glibc makes it an fcntl record lock on len bytes from the
 * descriptor's offset, through an internal call we cannot see. F_TEST only
 * asks, and an unknown command is refused: neither is an event. */
static int tracer_lockf_common(int fd, int cmd, int64_t len, int use64)
{
    struct tracer_thread *t =
        cmd == F_LOCK || cmd == F_TLOCK || cmd == F_ULOCK ? tracer_enter(TRACER_ONLY_LOCK) : NULL;
    if (!t)
        return use64 ? tracer_real_lockf64()(fd, cmd, len) : tracer_real_lockf()(fd, cmd, len);
    int64_t start = 0, span = len;
    tracer_lock_range(fd, SEEK_CUR, &start, &span);
    uint64_t begin = tracer_event_begin(t);
    int rc = use64 ? tracer_real_lockf64()(fd, cmd, len) : tracer_real_lockf()(fd, cmd, len);
    int err = errno;
    uint64_t end = tracer_ring_now();
    uint8_t op = cmd == F_ULOCK   ? TRACE_LOCK_RELEASE
                 : cmd == F_TLOCK ? TRACE_LOCK_TRY
                                  : TRACE_LOCK_ACQUIRE;
    tracer_lock_event_full(t, op, TRACE_LOCK_FCNTL, TRACE_LOCK_EXCLUSIVE,
                           tracer_file_lock_id(fd, start, span), rc == 0 ? 0 : err, begin, end,
                           start, span);
    tracer_event_end(t, end);
    errno = err;
    return rc;
}

TRACER_EXPORT int lockf(int fd, int cmd, off_t len)
{
    return tracer_lockf_common(fd, cmd, len, 0);
}

TRACER_EXPORT int lockf64(int fd, int cmd, off64_t len)
{
    return tracer_lockf_common(fd, cmd, len, 1);
}

static int tracer_is_lock_cmd(int cmd)
{
    return cmd == F_SETLK || cmd == F_SETLKW || cmd == F_OFD_SETLK || cmd == F_OFD_SETLKW;
}

TRACER_EXPORT int fcntl(int fd, int cmd, ...)
{
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    if (tracer_is_lock_cmd(cmd))
        return tracer_fcntl_lock(fd, cmd, arg, 0);
    return tracer_fcntl_common(fd, cmd, arg, 0);
}

TRACER_EXPORT int fcntl64(int fd, int cmd, ...)
{
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    if (tracer_is_lock_cmd(cmd))
        return tracer_fcntl_lock(fd, cmd, arg, 1);
    return tracer_fcntl_common(fd, cmd, arg, 1);
}
