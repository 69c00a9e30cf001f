/* collector_waker.c - lets a traced thread whose ring is full wake the
 * collector at once, so the collector can sleep long between drains.
 *
 * A producer that finds no room sets its region's `collector_wake` word and
 * FUTEX_WAKEs it (tracer_ring.c: tracer_wait_room). The collector sleeps in
 * ppoll (registrations, process exits), which cannot wait on a futex, so
 * one thread here waits on every watched word at once with futex_waitv
 * (Linux 5.16) and turns a wake into a readable eventfd in the collector's
 * poll set. The app holds no descriptor for this: its fd-closing loops
 * cannot break it. After the collector drained, collector_waker_rearm puts
 * the words back to 0 and the thread waits again; until then it waits only
 * for the rearm, so a word left at 1 never makes it spin.
 *
 * It must never block the collector: the main thread only takes the mutex
 * to swap the watched list, and a kernel without futex_waitv (ENOSYS) just
 * means no waker (collector_waker_start fails with a reason; the collector
 * then polls every 2 ms as before). */
#include "collector_waker.h"

#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449
#endif

struct collector_waker {
    pthread_t thread;
    int thread_started;
    int event_fd;
    pthread_mutex_t lock;
    _Atomic uint32_t *words[COLLECTOR_WAKER_MAX_WORDS]; /* under lock */
    size_t nwords;                                      /* under lock */
    int stop;                                           /* under lock */
    /* Bumped (and woken) by the main thread when the list changes, after a
     * drain, and to stop: the thread always waits on it too. */
    _Atomic uint32_t rearm;
    _Atomic int failed; /* the thread could not wait and ended */
};

static long collector_waker_waitv(struct futex_waitv *v, unsigned n)
{
    return syscall(SYS_futex_waitv, v, n, 0, NULL, 0);
}

static void collector_waker_futex_wake(_Atomic uint32_t *word)
{
    syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void collector_waker_poke(struct collector_waker *w)
{
    uint64_t one = 1;
    ssize_t n = write(w->event_fd, &one, sizeof one);
    (void)n; /* EAGAIN: the counter is already non-zero, the collector will look */
}

static void *collector_waker_main(void *arg)
{
    struct collector_waker *w = arg;
    struct futex_waitv v[COLLECTOR_WAKER_MAX_WORDS + 1];
    for (;;) {
        uint32_t seen = atomic_load_explicit(&w->rearm, memory_order_acquire);
        pthread_mutex_lock(&w->lock);
        if (w->stop) {
            pthread_mutex_unlock(&w->lock);
            return NULL;
        }
        unsigned n = 0;
        int raised = 0;
        for (size_t i = 0; i < w->nwords; i++) {
            if (atomic_load_explicit(w->words[i], memory_order_acquire))
                raised = 1;
            /* the regions are MAP_SHARED with their apps: shared futexes */
            v[n++] =
                (struct futex_waitv){.val = 0, .uaddr = (uintptr_t)w->words[i], .flags = FUTEX_32};
        }
        pthread_mutex_unlock(&w->lock);
        v[n++] = (struct futex_waitv){
            .val = seen, .uaddr = (uintptr_t)&w->rearm, .flags = FUTEX_32 | FUTEX_PRIVATE_FLAG};
        if (!raised) {
            long r = collector_waker_waitv(v, n);
            /* EFAULT: a word's page went away after the list was copied
             * (the list no longer has it: look again) */
            if (r < 0 && errno != EAGAIN && errno != EINTR && errno != EFAULT) {
                atomic_store(&w->failed, 1); /* the collector's short naps remain */
                return NULL;
            }
            /* woken by a producer (or a word already non-zero: EAGAIN), or
             * by a rearm: which one, the next lap's scan of the words says */
            continue;
        }
        collector_waker_poke(w);
        /* until the collector drained and rearmed */
        syscall(SYS_futex, &w->rearm, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
    }
}

struct collector_waker *collector_waker_start(char *err, size_t errlen)
{
    /* is futex_waitv there? A wait on a word that does not match returns
     * EAGAIN at once; ENOSYS means an older kernel */
    _Atomic uint32_t probe = 1;
    struct futex_waitv v = {
        .val = 0, .uaddr = (uintptr_t)&probe, .flags = FUTEX_32 | FUTEX_PRIVATE_FLAG};
    if (collector_waker_waitv(&v, 1) < 0 && errno != EAGAIN) {
        snprintf(err, errlen, "futex_waitv unavailable (%s)", strerror(errno));
        return NULL;
    }
    struct collector_waker *w = calloc(1, sizeof *w);
    if (!w) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&w->lock, NULL);
    w->event_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (w->event_fd < 0) {
        snprintf(err, errlen, "eventfd: %s", strerror(errno));
        goto fail;
    }
    sigset_t all, old;
    sigfillset(&all);
    /* the thread takes no signal: record/collect handle theirs in the main thread */
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&w->thread, NULL, collector_waker_main, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        snprintf(err, errlen, "cannot start the waker thread: %s", strerror(rc));
        goto fail;
    }
    w->thread_started = 1;
    return w;
fail:
    if (w->event_fd >= 0)
        close(w->event_fd);
    pthread_mutex_destroy(&w->lock);
    free(w);
    return NULL;
}

int collector_waker_fd(const struct collector_waker *w)
{
    return w ? w->event_fd : -1;
}

int collector_waker_ok(struct collector_waker *w)
{
    return w && !atomic_load_explicit(&w->failed, memory_order_relaxed);
}

static void collector_waker_bump(struct collector_waker *w)
{
    atomic_fetch_add_explicit(&w->rearm, 1, memory_order_release);
    collector_waker_futex_wake(&w->rearm);
}

int collector_waker_watch(struct collector_waker *w, _Atomic uint32_t *const *words, size_t n)
{
    if (!collector_waker_ok(w))
        return -1;
    int all = n <= COLLECTOR_WAKER_MAX_WORDS;
    if (!all)
        n = COLLECTOR_WAKER_MAX_WORDS;
    pthread_mutex_lock(&w->lock);
    memcpy(w->words, words, n * sizeof words[0]);
    w->nwords = n;
    pthread_mutex_unlock(&w->lock);
    collector_waker_bump(w);
    return all ? 0 : -1;
}

int collector_waker_consume(struct collector_waker *w)
{
    uint64_t count = 0;
    return w && read(w->event_fd, &count, sizeof count) == (ssize_t)sizeof count && count > 0;
}

void collector_waker_rearm(struct collector_waker *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->lock);
    for (size_t i = 0; i < w->nwords; i++)
        atomic_store_explicit(w->words[i], 0, memory_order_release);
    pthread_mutex_unlock(&w->lock);
    collector_waker_bump(w);
}

void collector_waker_stop(struct collector_waker *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->lock);
    w->stop = 1;
    w->nwords = 0;
    pthread_mutex_unlock(&w->lock);
    collector_waker_bump(w);
    if (w->thread_started)
        pthread_join(w->thread, NULL);
    close(w->event_fd);
    pthread_mutex_destroy(&w->lock);
    free(w);
}
