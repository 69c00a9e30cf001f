/* duet_barrier.c - a futex barrier in shared memory for the two sides of
 * `preplay duet` (duet_barrier.h). Must never block without a way out: a
 * wait wakes every 100 ms to look at the abort flag. */
#include "duet_barrier.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

struct duet_barrier *duet_barrier_map(unsigned parties)
{
    void *m = mmap(NULL, sizeof(struct duet_barrier), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    struct duet_barrier *b = m;
    atomic_init(&b->count, 0);
    atomic_init(&b->generation, 0);
    atomic_init(&b->abort, 0);
    b->parties = parties;
    return b;
}

void duet_barrier_unmap(struct duet_barrier *b)
{
    if (b)
        munmap(b, sizeof *b);
}

static void duet_futex_wait(atomic_uint *word, unsigned expected)
{
    struct timespec ts = {0, 100 * 1000 * 1000};
    /* shared (not FUTEX_PRIVATE): the waiters are different processes */
    syscall(SYS_futex, word, FUTEX_WAIT, expected, &ts, NULL, 0);
}

static void duet_futex_wake(atomic_uint *word)
{
    syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

int duet_barrier_wait(struct duet_barrier *b, int (*should_stop)(void *), void *arg)
{
    unsigned gen = atomic_load(&b->generation);
    if (atomic_load(&b->abort))
        return -1;
    if (atomic_fetch_add(&b->count, 1) + 1 == b->parties) {
        atomic_store(&b->count, 0);
        atomic_fetch_add(&b->generation, 1);
        duet_futex_wake(&b->generation);
        return 0;
    }
    while (atomic_load(&b->generation) == gen) {
        if (atomic_load(&b->abort) || (should_stop && should_stop(arg))) {
            duet_barrier_abort(b);
            return -1;
        }
        duet_futex_wait(&b->generation, gen);
    }
    return 0;
}

void duet_barrier_abort(struct duet_barrier *b)
{
    atomic_store(&b->abort, 1);
    duet_futex_wake(&b->generation);
}
