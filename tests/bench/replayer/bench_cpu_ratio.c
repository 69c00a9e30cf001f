/* bench_cpu_ratio.c - spread of the CPU scaling ratio measured on one
 * machine against itself (ideal: exactly 1.0). Each pair is a "record" score
 * set and a "target" score set taken one after the other, as `preplay
 * record` and `preplay replay` would on the same machine; the ratio is
 * cpu_kernels_ratio(record, target). Three methods, pairs interleaved so
 * all see the same machine load:
 *   before:      each kernel run 3 times back to back, fastest run kept;
 *   median of 5: CPU_KERNELS_ROUNDS rounds interleaved across kernels,
 *                the median round per kernel;
 *   min of 5:    the same rounds, the fastest round per kernel.
 * With --noise the record side runs next to a co-runner on the same core
 * (a thread streaming through 32 MiB, busy ~half the time): the situation
 * of `preplay record` while the other tier and MariaDB start.
 * Prints min / median / max of |ratio| per method and the time per set.
 *
 * usage: bench_cpu_ratio [--pairs N] [--noise] [--quick]
 * Must never: be a timed unit test (it is a benchmark; ctest runs --quick,
 * which checks only that every ratio is finite and positive, and skips the
 * baseline method). */
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu_kernels.h"

static atomic_int bench_noise_on, bench_noise_stop;

static double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int bench_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The co-runner: pinned to `cpu`, alternates 20 ms of streaming writes
 * over 32 MiB with 20 ms of sleep while bench_noise_on is set. */
static void *bench_noise(void *arg)
{
    int cpu = *(int *)arg;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    size_t len = 32u << 20;
    unsigned char *buf = malloc(len);
    if (!buf)
        return NULL;
    unsigned char v = 1;
    while (!atomic_load(&bench_noise_stop)) {
        if (!atomic_load(&bench_noise_on)) {
            nanosleep(&(struct timespec){0, 2000000}, NULL);
            continue;
        }
        double t0 = bench_now();
        while (bench_now() - t0 < 0.020)
            for (size_t i = 0; i < len; i += 4096)
                memset(buf + i, v++, 256);
        nanosleep(&(struct timespec){0, 20000000}, NULL);
    }
    free(buf);
    return NULL;
}

static int bench_set(const struct cpu_kernels_options *o, struct trace_cpu_score *out, double *secs)
{
    char err[256];
    double t0 = bench_now();
    int n = cpu_kernels_run_opts(o, out, CPU_KERNELS_COUNT, err, sizeof err);
    *secs = bench_now() - t0;
    if (n != CPU_KERNELS_COUNT)
        fprintf(stderr, "bench_cpu_ratio: kernels failed: %s\n", err);
    return n;
}

static void bench_report(const char *name, double *r, int n, double set_s)
{
    qsort(r, (size_t)n, sizeof *r, bench_cmp);
    double med = n % 2 ? r[n / 2] : (r[n / 2 - 1] + r[n / 2]) / 2;
    double worst = fabs(r[0] - 1) > fabs(r[n - 1] - 1) ? fabs(r[0] - 1) : fabs(r[n - 1] - 1);
    printf("  %-44s min %.3f  median %.3f  max %.3f  worst |r-1| %5.1f%%  (%.2f s per set)\n", name,
           r[0], med, r[n - 1], 100 * worst, set_s);
}

int main(int argc, char **argv)
{
    int pairs = 10, noise = 0, quick = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--pairs") && i + 1 < argc)
            pairs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--noise"))
            noise = 1;
        else if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else {
            fprintf(stderr, "usage: bench_cpu_ratio [--pairs N] [--noise] [--quick]\n");
            return 2;
        }
    }
    if (quick)
        pairs = 1;
    if (pairs < 1 || pairs > 100) {
        fprintf(stderr, "bench_cpu_ratio: --pairs must be 1..100\n");
        return 2;
    }
    int cpu = sched_getcpu();
    if (cpu < 0)
        cpu = 0;
    pthread_t noise_thread;
    int have_noise = noise && !pthread_create(&noise_thread, NULL, bench_noise, &cpu);
    struct cpu_kernels_options before = {
        .cpu = cpu, .rounds = 3, .statistic = CPU_KERNELS_MIN, .back_to_back = 1};
    /* --quick: one round, a smoke test of the path (the ASan build runs the
     * kernels ~10x slower) */
    struct cpu_kernels_options median = {.cpu = cpu, .rounds = quick ? 1 : CPU_KERNELS_ROUNDS};
    struct cpu_kernels_options fastest = {
        .cpu = cpu, .rounds = CPU_KERNELS_ROUNDS, .statistic = CPU_KERNELS_MIN};
    enum { NMETHODS = 3 };
    const struct cpu_kernels_options *methods[NMETHODS] = {&before, &median, &fastest};
    static const char *const names[NMETHODS] = {"before: best of 3 back to back",
                                                "median of 5 interleaved rounds",
                                                "min of 5 interleaved rounds"};
    double *ratios[NMETHODS];
    double set_s[NMETHODS] = {0};
    int status = 0;
    for (int m = 0; m < NMETHODS; m++)
        if (!(ratios[m] = calloc((size_t)pairs, sizeof(double))))
            return 1;
    for (int p = 0; p < pairs && !status; p++)
        for (int m = quick ? 1 : 0; m < (quick ? 2 : NMETHODS) && !status; m++) {
            struct trace_cpu_score rec[CPU_KERNELS_COUNT], tgt[CPU_KERNELS_COUNT];
            double s1, s2;
            atomic_store(&bench_noise_on, have_noise);
            int n1 = bench_set(methods[m], rec, &s1);
            atomic_store(&bench_noise_on, 0);
            int n2 = bench_set(methods[m], tgt, &s2);
            if (n1 != CPU_KERNELS_COUNT || n2 != CPU_KERNELS_COUNT) {
                status = 1;
                break;
            }
            ratios[m][p] = cpu_kernels_ratio(rec, (uint32_t)n1, tgt, (uint32_t)n2);
            set_s[m] += (s1 + s2) / 2 / pairs;
            if (!(ratios[m][p] > 0) || !isfinite(ratios[m][p])) {
                fprintf(stderr, "bench_cpu_ratio: pair %d: ratio %g is not a positive number\n", p,
                        ratios[m][p]);
                status = 1;
            }
        }
    if (have_noise) {
        atomic_store(&bench_noise_stop, 1);
        pthread_join(noise_thread, NULL);
    }
    if (!status) {
        printf("CPU ratio of this machine to itself, %d pairs per method, core %d%s:\n", pairs, cpu,
               have_noise ? ", record side next to a co-runner" : "");
        for (int m = quick ? 1 : 0; m < (quick ? 2 : NMETHODS); m++)
            bench_report(names[m], ratios[m], pairs, set_s[m]);
    }
    for (int m = 0; m < NMETHODS; m++)
        free(ratios[m]);
    return status;
}
