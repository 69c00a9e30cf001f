/* tt_lockstorm.c - lock folding (tracer/preload/lock_fold.h), for
 * test_lock_fold.py: an uncontended read-lock storm (STORM rdlock/unlock
 * pairs on one thread, as OpenSSL 3 takes them), a mutex only the main
 * thread takes (SOLO pairs), a rwlock two threads only ever read together
 * (READS pairs each), and a mutex that becomes contended mid-run: the main
 * thread takes it PREFIX times alone, then holds it for HOLD_MS while a
 * second thread blocks on it, then both take it POUND times each. Phases
 * are sequenced with atomics and sleeps only (never a traced lock), so the
 * locks above are the only lock operations. Prints the locks' addresses
 * and the counts as one JSON line. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define STORM 1000000
#define SOLO 100000
#define READS 10000
#define PREFIX 1000
#define POUND 1000
#define HOLD_MS 40

static pthread_rwlock_t storm = PTHREAD_RWLOCK_INITIALIZER;
static pthread_mutex_t solo = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t readers = PTHREAD_RWLOCK_INITIALIZER;
static pthread_mutex_t late = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int stage;
static _Atomic int readers_started;
static long counter;

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static void wait_stage(int s)
{
    for (int i = 0; i < 20000 && atomic_load(&stage) < s; i++)
        sleep_ms(1);
    if (atomic_load(&stage) < s) {
        fprintf(stderr, "tt_lockstorm: stage %d never came\n", s);
        exit(1);
    }
}

static void *reader(void *arg)
{
    (void)arg;
    atomic_fetch_add(&readers_started, 1);
    while (atomic_load(&readers_started) < 2) /* both read at the same time */
        ;
    volatile long reads = 0;
    for (int i = 0; i < READS; i++) {
        pthread_rwlock_rdlock(&readers);
        reads++;
        pthread_rwlock_unlock(&readers);
    }
    return NULL;
}

/* The second thread of the mutex that becomes contended: blocks on it
 * while the main thread holds it, then pounds it. */
static void *contender(void *arg)
{
    (void)arg;
    wait_stage(1);
    atomic_store(&stage, 2);
    pthread_mutex_lock(&late); /* waits ~HOLD_MS */
    pthread_mutex_unlock(&late);
    for (int i = 0; i < POUND; i++) {
        pthread_mutex_lock(&late);
        counter++;
        pthread_mutex_unlock(&late);
    }
    return NULL;
}

int main(void)
{
    for (int i = 0; i < STORM; i++) {
        pthread_rwlock_rdlock(&storm);
        pthread_rwlock_unlock(&storm);
    }
    for (int i = 0; i < SOLO; i++) {
        pthread_mutex_lock(&solo);
        counter++;
        pthread_mutex_unlock(&solo);
    }
    pthread_t r[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&r[i], NULL, reader, NULL);
    for (int i = 0; i < 2; i++)
        pthread_join(r[i], NULL);

    for (int i = 0; i < PREFIX; i++) {
        pthread_mutex_lock(&late);
        counter++;
        pthread_mutex_unlock(&late);
    }
    pthread_t c;
    pthread_create(&c, NULL, contender, NULL);
    pthread_mutex_lock(&late);
    atomic_store(&stage, 1);
    wait_stage(2);
    sleep_ms(HOLD_MS); /* the contender blocks meanwhile */
    pthread_mutex_unlock(&late);
    for (int i = 0; i < POUND; i++) {
        pthread_mutex_lock(&late);
        counter++;
        pthread_mutex_unlock(&late);
    }
    pthread_join(c, NULL);
    printf("{\"storm\":%lu,\"solo\":%lu,\"readers\":%lu,\"late\":%lu,\"n_storm\":%d,"
           "\"n_solo\":%d,\"n_reads\":%d,\"prefix\":%d,\"pound\":%d,\"hold_ms\":%d}\n",
           (unsigned long)(uintptr_t)&storm, (unsigned long)(uintptr_t)&solo,
           (unsigned long)(uintptr_t)&readers, (unsigned long)(uintptr_t)&late, STORM, SOLO, READS,
           PREFIX, POUND, HOLD_MS);
    return counter == SOLO + PREFIX + 2 * POUND ? 0 : 1;
}
