/* tt_cpuburn.c - CPU time under oversubscription: THREADS threads (more
 * than the cores) each alternate known busy work with a write() to
 * /dev/null, then read their own CLOCK_THREAD_CPUTIME_ID and make one
 * last write so the trace covers that moment. Prints "tid cpu_ns" per
 * thread. test_cpu.py compares the trace's CPU events per thread with
 * these numbers. The busy loop must never call anything traced. */
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

static int devnull;
static volatile unsigned long sink;

struct result {
    long tid;
    unsigned long long cpu_ns;
};

static void *burner(void *arg)
{
    struct result *r = arg;
    r->tid = (long)syscall(SYS_gettid);
    unsigned long x = (unsigned long)r->tid;
    for (int round = 0; round < ROUNDS; round++) {
        for (int i = 0; i < WORK; i++)
            x = x * 6364136223846793005ul + 1442695040888963407ul;
        sink = x;
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
