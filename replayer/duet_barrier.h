/* duet_barrier.h - the shared-memory barrier of `preplay duet` (Bulej et
 * al. §III: "the benchmark runs and the task iterations are synchronized
 * using a shared-memory barrier so that they always start at the same
 * time"). It lives in an anonymous MAP_SHARED mapping the controller makes
 * before forking the two sides; waiters sleep on a futex on its generation
 * word. Unlike a process-shared pthread barrier it can be aborted: the
 * controller sets `abort` when one side died, and the survivor's wait
 * returns -1 within 100 ms instead of hanging for ever. */
#ifndef PREPLAY_DUET_BARRIER_H
#define PREPLAY_DUET_BARRIER_H

#include <stdatomic.h>

struct duet_barrier {
    atomic_uint count;      /* arrived in this generation */
    atomic_uint generation; /* bumped (and futex-woken) when all arrived */
    atomic_int abort;       /* non-zero: every wait fails at once */
    unsigned parties;
};

/* An anonymous shared mapping holding a barrier for `parties` processes;
 * NULL with errno on failure. Free with duet_barrier_unmap. */
struct duet_barrier *duet_barrier_map(unsigned parties);
void duet_barrier_unmap(struct duet_barrier *b);
/* Waits until `parties` processes have arrived. 0; -1 when aborted (by
 * duet_barrier_abort or when should_stop(), polled every 100 ms, returns
 * non-zero). */
int duet_barrier_wait(struct duet_barrier *b, int (*should_stop)(void *), void *arg);
void duet_barrier_abort(struct duet_barrier *b);

#endif
