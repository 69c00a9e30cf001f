/* tt_locks.c - lock pairing and contention with known waits, for
 * test_locks.py: a mutex under contention from several threads, trylock
 * failing on a held mutex, timedlock timing out and then succeeding, an
 * rwlock held exclusively while readers wait and then shared by two
 * readers, a condition wait, flock and F_OFD_SETLKW between threads (each
 * with its own open file description), F_SETLKW (said from offset 5 with
 * SEEK_CUR) against a child process's lockf on the same bytes; an
 * error-checking mutex refusing an unlock by a thread that
 * does not hold it, and a recursive mutex taken twice; the clockid_t forms
 * (pthread_mutex_clocklock, pthread_rwlock_clock*lock, a
 * pthread_cond_clockwait that times out) as C++'s std::timed_mutex and
 * condition_variable::wait_for call them; a POSIX semaphore used as a lock
 * (held while the main thread's sem_trywait fails and its sem_wait waits)
 * and one that times out in sem_timedwait and sem_clockwait. Every
 * contended wait is made >= HOLD_MS by
 * the holder sleeping with the lock held. Prints the lock addresses as one JSON line. It must never
 * synchronise its phases with traced locks (only atomics and sleeps), or the handshakes would show
 * up as extra lock events. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define HOLD_MS 40
#define POUNDERS 4
#define POUND_ITERS 2000

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;  /* contended */
static pthread_mutex_t tm = PTHREAD_MUTEX_INITIALIZER; /* timedlock */
static pthread_mutex_t cm = PTHREAD_MUTEX_INITIALIZER; /* condvar */
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_mutex_t em;                              /* error-checking */
static pthread_mutex_t rm;                              /* recursive */
static pthread_mutex_t km = PTHREAD_MUTEX_INITIALIZER;  /* clocklock */
static pthread_mutex_t kcm = PTHREAD_MUTEX_INITIALIZER; /* clockwait's mutex */
static pthread_cond_t kcv = PTHREAD_COND_INITIALIZER;
static pthread_rwlock_t krw = PTHREAD_RWLOCK_INITIALIZER;
static sem_t sm; /* a semaphore as a lock: initialised to 1 */
static sem_t sz; /* initialised to 0: the timed waits time out */
static _Atomic int stage;
static _Atomic int readers_in;
static int cond_ready;
static long shared_counter;
static const char *lock_path;

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
        fprintf(stderr, "tt_locks: stage %d never came\n", s);
        exit(1);
    }
}

static void die(const char *what, int err)
{
    fprintf(stderr, "tt_locks: %s: %s\n", what, strerror(err));
    exit(1);
}

static void *pounder(void *arg)
{
    (void)arg;
    for (int i = 0; i < POUND_ITERS; i++) {
        pthread_mutex_lock(&m);
        shared_counter++;
        pthread_mutex_unlock(&m);
    }
    return NULL;
}

static void flock_ex(int fd)
{
    if (flock(fd, LOCK_EX) != 0)
        die("flock", errno);
}

static void ofd(int fd, short type, int cmd)
{
    struct flock fl = {.l_type = type, .l_whence = SEEK_SET, .l_start = 100, .l_len = 50};
    if (fcntl(fd, cmd, &fl) != 0)
        die("fcntl ofd", errno);
}

/* The holder: takes each lock, lets the waiter start waiting, sleeps. */
static void *holder(void *arg)
{
    (void)arg;
    /* 1: mutex held while the waiter trylocks (EBUSY) and then blocks */
    pthread_mutex_lock(&m);
    atomic_store(&stage, 1);
    sleep_ms(HOLD_MS);
    pthread_mutex_unlock(&m);
    /* 2: timedlock: held long enough for a 10 ms timeout to expire */
    wait_stage(2);
    pthread_mutex_lock(&tm);
    atomic_store(&stage, 3);
    sleep_ms(HOLD_MS);
    pthread_mutex_unlock(&tm);
    /* 4: rwlock held exclusively while a reader waits */
    wait_stage(4);
    pthread_rwlock_wrlock(&rw);
    atomic_store(&stage, 5);
    sleep_ms(HOLD_MS);
    pthread_rwlock_unlock(&rw);
    /* 6: shared with the waiter: both readers inside at once */
    wait_stage(6);
    pthread_rwlock_rdlock(&rw);
    atomic_fetch_add(&readers_in, 1);
    for (int i = 0; i < 5000 && atomic_load(&readers_in) < 2; i++)
        sleep_ms(1);
    pthread_rwlock_unlock(&rw);
    /* 7: flock on our own open file description */
    wait_stage(7);
    int fd = open(lock_path, O_RDWR);
    if (fd < 0)
        die("open", errno);
    flock_ex(fd);
    atomic_store(&stage, 8);
    sleep_ms(HOLD_MS);
    flock(fd, LOCK_UN);
    /* 9: OFD lock on a byte range */
    wait_stage(9);
    ofd(fd, F_WRLCK, F_OFD_SETLKW);
    atomic_store(&stage, 10);
    sleep_ms(HOLD_MS);
    ofd(fd, F_UNLCK, F_OFD_SETLK);
    close(fd);
    /* 11: condition variable: signal the waiter after a while */
    wait_stage(11);
    sleep_ms(HOLD_MS / 2);
    pthread_mutex_lock(&cm);
    cond_ready = 1;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&cm);
    /* 12: the semaphore held while the main thread tries and waits */
    wait_stage(12);
    sem_wait(&sm);
    atomic_store(&stage, 13);
    sleep_ms(HOLD_MS);
    sem_post(&sm);
    return NULL;
}

/* 1: the holder has m: trylock fails (EBUSY), then lock waits ~HOLD_MS. */
static void contended_mutex(void)
{
    wait_stage(1);
    int rc = pthread_mutex_trylock(&m);
    if (rc != EBUSY)
        die("trylock on a held mutex did not fail", rc);
    pthread_mutex_lock(&m); /* waits ~HOLD_MS */
    pthread_mutex_unlock(&m);
}

/* 2-3: a timedlock times out on the held tm, then one succeeds. */
static void timedlock(void)
{
    atomic_store(&stage, 2);
    wait_stage(3);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 10 * 1000000L;
    if (ts.tv_nsec >= 1000000000L)
        ts.tv_sec++, ts.tv_nsec -= 1000000000L;
    int rc = pthread_mutex_timedlock(&tm, &ts);
    if (rc != ETIMEDOUT)
        die("timedlock did not time out", rc);
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 10;
    rc = pthread_mutex_timedlock(&tm, &ts);
    if (rc != 0)
        die("timedlock", rc);
    pthread_mutex_unlock(&tm);
}

/* 4-6: a reader waits for the writer, then shares rw with the holder. */
static void rwlock_reader(void)
{
    atomic_store(&stage, 4);
    wait_stage(5);
    pthread_rwlock_rdlock(&rw); /* waits for the writer */
    pthread_rwlock_unlock(&rw);
    atomic_store(&stage, 6);
    pthread_rwlock_rdlock(&rw);
    atomic_fetch_add(&readers_in, 1);
    for (int i = 0; i < 5000 && atomic_load(&readers_in) < 2; i++)
        sleep_ms(1);
    pthread_rwlock_unlock(&rw);
}

/* 7-10: flock (LOCK_NB refused, then a wait) and an OFD lock wait, each on
 * our own open file description. */
static void file_locks(int fd)
{
    atomic_store(&stage, 7);
    wait_stage(8);
    if (flock(fd, LOCK_EX | LOCK_NB) == 0 || errno != EWOULDBLOCK)
        die("flock LOCK_NB on a held lock did not fail", errno);
    flock_ex(fd); /* waits */
    flock(fd, LOCK_UN);

    atomic_store(&stage, 9);
    wait_stage(10);
    ofd(fd, F_WRLCK, F_OFD_SETLKW); /* waits */
    ofd(fd, F_UNLCK, F_OFD_SETLK);
}

/* 11: a condition wait the holder signals. */
static void cond_waiter(void)
{
    atomic_store(&stage, 11);
    pthread_mutex_lock(&cm);
    while (!cond_ready)
        pthread_cond_wait(&cv, &cm);
    pthread_mutex_unlock(&cm);
}

/* 12-13: the semaphore held by the holder: sem_trywait fails, sem_wait
 * waits. */
static void semaphore_waiter(void)
{
    atomic_store(&stage, 12);
    wait_stage(13);
    errno = 0;
    if (sem_trywait(&sm) != -1 || errno != EAGAIN)
        die("sem_trywait on a taken semaphore did not fail with EAGAIN", errno);
    if (sem_wait(&sm) != 0) /* waits ~HOLD_MS */
        die("sem_wait", errno);
    sem_post(&sm);
}

/* process-associated record lock: a child holds it, we wait. Returns the
 * child's pid. */
static pid_t record_lock_against_child(int fd)
{
    int ready[2];
    if (pipe(ready) != 0)
        die("pipe", errno);
    pid_t child = fork();
    if (child == 0) {
        /* bytes 0-9 through lockf, on its own open file description (its
         * own offset, 0) */
        int cfd = open(lock_path, O_RDWR);
        if (cfd < 0 || lockf(cfd, F_LOCK, 10) != 0)
            _exit(3);
        if (write(ready[1], "r", 1) != 1)
            _exit(4);
        sleep_ms(HOLD_MS);
        lockf(cfd, F_ULOCK, 10);
        _exit(0);
    }
    char c;
    if (read(ready[0], &c, 1) != 1)
        die("child lock", EIO);
    /* the same bytes 0-9, said from offset 5 */
    if (lseek(fd, 5, SEEK_SET) != 5)
        die("lseek", errno);
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_CUR, .l_start = -5, .l_len = 10};
    if (fcntl(fd, F_SETLKW, &fl) != 0)
        die("F_SETLKW", errno); /* waits for the child */
    fl.l_type = F_UNLCK;
    fcntl(fd, F_SETLK, &fl);
    int status;
    waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        die("child", EIO);
    return child;
}

/* POUNDERS threads contending for m. */
static void pounders(void)
{
    pthread_t p[POUNDERS];
    for (int i = 0; i < POUNDERS; i++)
        pthread_create(&p[i], NULL, pounder, NULL);
    for (int i = 0; i < POUNDERS; i++)
        pthread_join(p[i], NULL);
    if (shared_counter != POUNDERS * POUND_ITERS)
        die("counter", EIO);
}

/* An error-checking mutex refusing an unlock it does not hold, and a
 * recursive mutex taken twice. */
static void mutex_types(void)
{
    int rc;
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ERRORCHECK);
    pthread_mutex_init(&em, &attr);
    /* a pair, then an unlock of a mutex no longer held (refused) right
     * after it, when the tracer's fast path is warm, then a pair again */
    for (int i = 0; i < 3; i++) {
        if (i != 1 && (rc = pthread_mutex_lock(&em)) != 0)
            die("error-checking mutex lock", rc);
        rc = pthread_mutex_unlock(&em);
        if (rc != (i == 1 ? EPERM : 0))
            die("error-checking mutex unlock", rc);
    }
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&rm, &attr);
    for (int i = 0; i < 2; i++)
        if ((rc = pthread_mutex_lock(&rm)) != 0)
            die("recursive mutex lock", rc);
    for (int i = 0; i < 2; i++)
        if ((rc = pthread_mutex_unlock(&rm)) != 0)
            die("recursive mutex unlock", rc);
    pthread_mutexattr_destroy(&attr);
}

/* the clockid_t forms, against CLOCK_MONOTONIC */
static void clock_forms(void)
{
    int rc;
    struct timespec kts;
    clock_gettime(CLOCK_MONOTONIC, &kts);
    kts.tv_sec += 10;
    if ((rc = pthread_mutex_clocklock(&km, CLOCK_MONOTONIC, &kts)) != 0)
        die("pthread_mutex_clocklock", rc);
    pthread_mutex_unlock(&km);
    if ((rc = pthread_rwlock_clockrdlock(&krw, CLOCK_MONOTONIC, &kts)) != 0)
        die("pthread_rwlock_clockrdlock", rc);
    pthread_rwlock_unlock(&krw);
    if ((rc = pthread_rwlock_clockwrlock(&krw, CLOCK_MONOTONIC, &kts)) != 0)
        die("pthread_rwlock_clockwrlock", rc);
    pthread_rwlock_unlock(&krw);
    pthread_mutex_lock(&kcm);
    clock_gettime(CLOCK_MONOTONIC, &kts);
    kts.tv_nsec += HOLD_MS / 2 * 1000000L;
    if (kts.tv_nsec >= 1000000000L)
        kts.tv_sec++, kts.tv_nsec -= 1000000000L;
    while ((rc = pthread_cond_clockwait(&kcv, &kcm, CLOCK_MONOTONIC, &kts)) == 0)
        ; /* nobody signals: a wakeup is spurious */
    if (rc != ETIMEDOUT)
        die("pthread_cond_clockwait", rc);
    pthread_mutex_unlock(&kcm);
}

/* semaphore timeouts, then a clockwait that finds it posted */
static void semaphore_timeouts(void)
{
    struct timespec kts;
    clock_gettime(CLOCK_REALTIME, &kts);
    kts.tv_nsec += 10 * 1000000L;
    if (kts.tv_nsec >= 1000000000L)
        kts.tv_sec++, kts.tv_nsec -= 1000000000L;
    if (sem_timedwait(&sz, &kts) != -1 || errno != ETIMEDOUT)
        die("sem_timedwait did not time out", errno);
    clock_gettime(CLOCK_MONOTONIC, &kts);
    kts.tv_nsec += 10 * 1000000L;
    if (kts.tv_nsec >= 1000000000L)
        kts.tv_sec++, kts.tv_nsec -= 1000000000L;
    if (sem_clockwait(&sz, CLOCK_MONOTONIC, &kts) != -1 || errno != ETIMEDOUT)
        die("sem_clockwait did not time out", errno);
    sem_post(&sz);
    kts.tv_sec += 10;
    if (sem_clockwait(&sz, CLOCK_MONOTONIC, &kts) != 0)
        die("sem_clockwait on a posted semaphore", errno);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: tt_locks LOCKFILE\n");
        return 2;
    }
    lock_path = argv[1];
    int fd = open(lock_path, O_RDWR | O_CREAT, 0644);
    if (fd < 0)
        die("open", errno);

    /* the waiter's side of each of the holder's phases, in stage order */
    pthread_t h;
    if (sem_init(&sm, 0, 1) != 0 || sem_init(&sz, 0, 0) != 0)
        die("sem_init", errno);
    pthread_create(&h, NULL, holder, NULL);
    contended_mutex();
    timedlock();
    rwlock_reader();
    file_locks(fd);
    cond_waiter();
    semaphore_waiter();
    pthread_join(h, NULL);

    pid_t child = record_lock_against_child(fd);
    pounders();
    mutex_types();
    clock_forms();
    semaphore_timeouts();

    printf("{\"m\":%llu,\"tm\":%llu,\"cm\":%llu,\"rw\":%llu,\"em\":%llu,\"rm\":%llu,"
           "\"km\":%llu,\"kcm\":%llu,\"krw\":%llu,\"sm\":%llu,\"sz\":%llu,"
           "\"hold_ms\":%d,\"pounders\":%d,\"iters\":%d,\"child\":%d}\n",
           (unsigned long long)(uintptr_t)&m, (unsigned long long)(uintptr_t)&tm,
           (unsigned long long)(uintptr_t)&cm, (unsigned long long)(uintptr_t)&rw,
           (unsigned long long)(uintptr_t)&em, (unsigned long long)(uintptr_t)&rm,
           (unsigned long long)(uintptr_t)&km, (unsigned long long)(uintptr_t)&kcm,
           (unsigned long long)(uintptr_t)&krw, (unsigned long long)(uintptr_t)&sm,
           (unsigned long long)(uintptr_t)&sz, HOLD_MS, POUNDERS, POUND_ITERS, (int)child);
    return 0;
}
