/* tt_cpuburn.c - CPU time under oversubscription: THREADS threads (more
 * than the cores) each alternate known busy work with a write() to
 * /dev/null, then read their own CLOCK_THREAD_CPUTIME_ID and make one
 * last write so the trace covers that moment. Prints "tid cpu_ns" per
 * thread. test_cpu.py compares the trace's CPU events per thread with
 * these numbers. The busy loop must never call anything traced.
 *
 * Between the writes each round also makes a call that leaves no record
 * (a read of an empty non-blocking pipe: EAGAIN), takes and releases a
 * mutex of its own (compact lock records), and every tenth round sleeps
 * 2 ms after the EAGAIN read: the CPU time before the unrecorded call must
 * reach the next record, and the sleep must not. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define THREADS 4
#define ROUNDS 100
#define WORK 1600000
#define SLEEP_EVERY 10

static int devnull;
static volatile unsigned long sink;

struct result {
    long tid;
    unsigned long long cpu_ns;
};

static unsigned long burn(unsigned long x, int n)
{
    for (int i = 0; i < n; i++)
        x = x * 6364136223846793005ul + 1442695040888963407ul;
    sink = x;
    return x;
}

static void *burner(void *arg)
{
    struct result *r = arg;
    r->tid = (long)syscall(SYS_gettid);
    unsigned long x = (unsigned long)r->tid;
    int empty[2];
    if (pipe2(empty, O_NONBLOCK) != 0)
        exit(1);
    pthread_mutex_t own = PTHREAD_MUTEX_INITIALIZER;
    for (int round = 0; round < ROUNDS; round++) {
        x = burn(x, WORK / 2);
        char byte;
        if (read(empty[0], &byte, 1) != -1)
            exit(1);
        if (round % SLEEP_EVERY == 0) {
            struct timespec nap = {.tv_sec = 0, .tv_nsec = 2000000};
            nanosleep(&nap, NULL);
        }
        x = burn(x, WORK / 4);
        pthread_mutex_lock(&own);
        x = burn(x, WORK / 8);
        pthread_mutex_unlock(&own);
        x = burn(x, WORK / 8);
        if (write(devnull, &x, 1) != 1)
            exit(1);
    }
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    r->cpu_ns = (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
    if (write(devnull, &x, 1) != 1)
        exit(1);
    return NULL;
}

int main(void)
{
    devnull = open("/dev/null", O_WRONLY);
    if (devnull < 0)
        return 1;
    pthread_t th[THREADS];
    struct result res[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&th[i], NULL, burner, &res[i]);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < THREADS; i++)
        printf("%ld %llu\n", res[i].tid, res[i].cpu_ns);
    return 0;
}
