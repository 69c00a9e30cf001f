/* lock_fold.h - folding uncontended pthread locks (lock_fold.c): a lock
 * that only one thread has taken, or that has only ever been taken shared,
 * cannot have made anyone wait, so its holds are counted instead of
 * recorded (OpenSSL 3 takes a read lock on every hash and cipher call:
 * node's start-up alone is ~800 000 lock events). A lock is recorded from
 * the moment a second thread takes it while it was ever taken exclusively,
 * or anyone waits for it, tries it in vain or times out on it, or uses it
 * in a condition wait; a hold that was folded when its lock became
 * recorded is written at its release (its acquire first), so every
 * recorded release has its acquire and the contention is whole.
 *
 * Only pthread mutexes of the normal and adaptive kinds (their unlock
 * cannot fail) and rwlocks, never process-shared ones (another process's
 * holds are not in this table); semaphores and file locks are always
 * recorded. Runs on the hot path of every lock call: no allocation, no
 * lock, no syscall; a lock the table has no room for is recorded. */
#ifndef PREPLAY_TRACER_LOCK_FOLD_H
#define PREPLAY_TRACER_LOCK_FOLD_H

#include <stdint.h>

#include "tracer_state.h"

/* An acquire of lock `id` succeeded at once (`record_kind`: its compact
 * record's kind, kept in case the hold must be written later;
 * `exclusive`: its mode). 1: folded (the hold is counted, nothing to
 * record); 0: record it. Reads no clock: a folded hold is dated, if it
 * is ever written, from the thread's CPU mark (the end of its previous
 * record), which is at or before the acquire and after every record of
 * the thread. */
int tracer_lock_fold_acquire(struct tracer_thread *t, uint64_t id, uint32_t record_kind,
                             int exclusive);

/* What a release of lock `id` by this thread must do. */
enum tracer_lock_fold_release {
    TRACER_LOCK_RELEASE_RECORD = 0, /* record it */
    TRACER_LOCK_RELEASE_FOLDED,     /* nothing: the hold was counted */
    TRACER_LOCK_RELEASE_LATE        /* the lock was recorded during a folded hold: write the
                                       hold's acquire (tracer_lock_fold_take), then the release */
};
enum tracer_lock_fold_release tracer_lock_fold_release(struct tracer_thread *t, uint64_t id);

/* A folded hold of lock `id` by this thread, taken out of its list for its
 * late record (after tracer_lock_fold_release said LATE): 0, or -1 when
 * there is none. */
struct tracer_folded_hold;
int tracer_lock_fold_take(struct tracer_thread *t, uint64_t id, struct tracer_folded_hold *out);

/* Lock `id` is contended (a wait, a failed try, a timed call, a
 * condition wait): it is recorded from now on. */
void tracer_lock_fold_contended(uint64_t id);

/* In a fork child: the parent's locks are its own business (the child's
 * single thread keeps the holds it inherited). */
void tracer_lock_fold_after_fork(void);

#endif
