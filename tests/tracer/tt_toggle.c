/* tt_toggle.c - steady work for test_toggle.py, which switches tracing off
 * and on while this runs: THREADS threads each repeat a known busy loop
 * followed by an 8-byte write() to /dev/null until SECONDS (argv[1]) of
 * wall time have passed. The busy loop calls nothing traced, so every CPU
 * event of a thread is one loop's worth, unless the tracer carries CPU
 * time run while tracing was off into the first event after it is back on. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define THREADS 2
#define WORK 200000 /* ~0.3 ms of CPU here */

static int devnull;
static double seconds;
static volatile unsigned long sink;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *worker(void *arg)
{
    unsigned long x = (unsigned long)(uintptr_t)arg;
    double end = now_s() + seconds;
    while (now_s() < end) {
        for (int i = 0; i < WORK; i++)
            x = x * 6364136223846793005ul + 1442695040888963407ul;
        sink = x;
        if (write(devnull, &x, sizeof x) != sizeof x)
            exit(1);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 2 || (seconds = atof(argv[1])) <= 0) {
        fprintf(stderr, "usage: tt_toggle SECONDS\n");
        return 2;
    }
    devnull = open("/dev/null", O_WRONLY);
    if (devnull < 0)
        return 1;
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)(i + 1));
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    return 0;
}
