/* bench_cpuclock.c - cost of one CPU-time read: the BPF slot read with a TSC
 * timestamp and the fallback's amortised read, against
 * clock_gettime(CLOCK_THREAD_CPUTIME_ID) (the syscall it avoids) and the vDSO
 * CLOCK_MONOTONIC, measured in the same run; and the TSC conversion's error
 * against clock_gettime over time, with and without recalibration.
 * Prints medians of repeated batches and ratios. A benchmark: asserts nothing
 * about speed, fails only when it cannot measure (BPF needs root).
 *
 *   bench_cpuclock [--drift-seconds S]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cpuclock_loader.h"

#define BENCH_BATCHES 31
#define BENCH_BATCH_READS 20000

static uint64_t bench_clock_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int bench_compare(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

enum bench_kind {
    BENCH_THREAD_CPUTIME,
    BENCH_MONOTONIC,
    BENCH_RDTSC,
    BENCH_TSC_MONO,
    BENCH_SLOT_READ,
    BENCH_FALLBACK_READ,
};

static volatile uint64_t bench_sink;

static double bench_median_ns(enum bench_kind kind, struct cpuclock_thread *bpf_thread,
                              struct cpuclock_thread *fallback_thread,
                              const struct cpuclock_tsc *tsc)
{
    double per_read[BENCH_BATCHES];
    for (int batch = 0; batch < BENCH_BATCHES; batch++) {
        uint64_t sum = 0;
        uint64_t start = bench_clock_ns(CLOCK_MONOTONIC);
        for (int i = 0; i < BENCH_BATCH_READS; i++) {
            switch (kind) {
            case BENCH_THREAD_CPUTIME:
                sum += bench_clock_ns(CLOCK_THREAD_CPUTIME_ID);
                break;
            case BENCH_MONOTONIC:
                sum += bench_clock_ns(CLOCK_MONOTONIC);
                break;
            case BENCH_RDTSC:
                sum += cpuclock_rdtsc();
                break;
            case BENCH_TSC_MONO:
                sum += cpuclock_tsc_mono_now(tsc);
                break;
            case BENCH_SLOT_READ:
                sum += cpuclock_thread_now(bpf_thread, cpuclock_tsc_mono_now(tsc), NULL);
                break;
            case BENCH_FALLBACK_READ:
                sum += cpuclock_thread_now(fallback_thread, cpuclock_tsc_mono_now(tsc), NULL);
                break;
            }
        }
        bench_sink += sum;
        per_read[batch] =
            (double)(bench_clock_ns(CLOCK_MONOTONIC) - start) / (double)BENCH_BATCH_READS;
    }
    qsort(per_read, BENCH_BATCHES, sizeof per_read[0], bench_compare);
    return per_read[BENCH_BATCHES / 2];
}

/* Error of the TSC conversion against clock_gettime each 100 ms for `seconds`,
 * one block left alone after calibration, one recalibrated every second. */
static void bench_drift(int seconds)
{
    struct cpuclock_tsc fixed, tracked;
    memset(&fixed, 0, sizeof fixed);
    memset(&tracked, 0, sizeof tracked);
    if (cpuclock_tsc_calibrate(&fixed, 10000000u) != 0 ||
        cpuclock_tsc_calibrate(&tracked, 10000000u) != 0) {
        printf("tsc drift: calibration failed: %s\n", strerror(errno));
        return;
    }
    printf("\nTSC -> CLOCK_MONOTONIC error (conversion - clock_gettime, ns)\n");
    printf("%8s %14s %18s\n", "t_s", "calibrated_once", "recalibrated_1s");
    uint64_t start = bench_clock_ns(CLOCK_MONOTONIC);
    for (int step = 1; step <= seconds * 10; step++) {
        struct timespec pause = {0, 100000000};
        nanosleep(&pause, NULL);
        if (step % 10 == 0)
            cpuclock_tsc_recalibrate(&tracked, 1000000000u);
        int64_t best_fixed = INT64_MAX, best_tracked = INT64_MAX;
        for (int attempt = 0; attempt < 20; attempt++) {
            uint64_t before = bench_clock_ns(CLOCK_MONOTONIC);
            uint64_t cycles = cpuclock_rdtsc();
            uint64_t after = bench_clock_ns(CLOCK_MONOTONIC);
            if (after - before > 200)
                continue;
            uint64_t middle = before + (after - before) / 2;
            int64_t error_fixed = (int64_t)(cpuclock_tsc_to_mono(&fixed, cycles) - middle);
            int64_t error_tracked = (int64_t)(cpuclock_tsc_to_mono(&tracked, cycles) - middle);
            if (llabs(error_fixed) < llabs(best_fixed))
                best_fixed = error_fixed;
            if (llabs(error_tracked) < llabs(best_tracked))
                best_tracked = error_tracked;
        }
        if (step % 10 == 0 || step == 1)
            printf("%8.1f %14lld %18lld\n", (double)(bench_clock_ns(CLOCK_MONOTONIC) - start) / 1e9,
                   (long long)best_fixed, (long long)best_tracked);
    }
}

int main(int argc, char **argv)
{
    int drift_seconds = 10;
    char err[512];
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--drift-seconds") == 0 && i + 1 < argc) {
            drift_seconds = atoi(argv[++i]);
        } else {
            fprintf(stderr, "bench_cpuclock: unknown option '%s' (use --drift-seconds S)\n",
                    argv[i]);
            return 2;
        }
    }
    if (!cpuclock_bpf_load(err, sizeof err)) {
        fprintf(stderr, "bench_cpuclock: %s\n", err);
        return 1;
    }
    struct cpuclock_table table;
    int fd = dup(cpuclock_bpf_map_fd());
    if (cpuclock_attach(fd, &table, err, sizeof err) != 0) {
        fprintf(stderr, "bench_cpuclock: %s\n", err);
        cpuclock_bpf_unload();
        return 1;
    }
    close(fd);
    const struct cpuclock_tsc *tsc = &table.header->tsc;
    struct cpuclock_thread bpf_thread, fallback_thread;
    uint32_t tid = (uint32_t)syscall(SYS_gettid);
    if (cpuclock_thread_claim(&table, &bpf_thread, tid) != CPUCLOCK_MODE_BPF) {
        fprintf(stderr, "bench_cpuclock: cannot claim a BPF slot\n");
        return 1;
    }
    cpuclock_thread_claim(NULL, &fallback_thread, tid);

    double thread_cputime = bench_median_ns(BENCH_THREAD_CPUTIME, NULL, NULL, tsc);
    double monotonic = bench_median_ns(BENCH_MONOTONIC, NULL, NULL, tsc);
    double rdtsc = bench_median_ns(BENCH_RDTSC, NULL, NULL, tsc);
    double tsc_mono = bench_median_ns(BENCH_TSC_MONO, NULL, NULL, tsc);
    double slot_read = bench_median_ns(BENCH_SLOT_READ, &bpf_thread, NULL, tsc);
    double fallback_read = bench_median_ns(BENCH_FALLBACK_READ, NULL, &fallback_thread, tsc);

    printf("ns per read, median of %d batches of %d (ratio = clock_gettime(THREAD_CPUTIME) / "
           "this)\n",
           BENCH_BATCHES, BENCH_BATCH_READS);
    printf("%-52s %8s %8s\n", "read", "ns", "ratio");
    printf("%-52s %8.1f %8.1f\n", "clock_gettime(CLOCK_THREAD_CPUTIME_ID) [baseline]",
           thread_cputime, 1.0);
    printf("%-52s %8.1f %8.1f\n", "clock_gettime(CLOCK_MONOTONIC) (vDSO)", monotonic,
           thread_cputime / monotonic);
    printf("%-52s %8.1f %8.1f\n", "rdtsc", rdtsc, thread_cputime / rdtsc);
    printf("%-52s %8.1f %8.1f\n", "cpuclock_tsc_mono_now (rdtsc -> mono)", tsc_mono,
           thread_cputime / tsc_mono);
    printf("%-52s %8.1f %8.1f\n", "cpuclock_thread_now, BPF slot (incl. tsc_mono_now)", slot_read,
           thread_cputime / slot_read);
    printf("%-52s %8.1f %8.1f\n", "cpuclock_thread_now, fallback back-to-back (amortised)",
           fallback_read, thread_cputime / fallback_read);
    printf("fallback: %llu precise reads, %llu estimates in the back-to-back loop\n",
           (unsigned long long)fallback_thread.precise_reads,
           (unsigned long long)fallback_thread.estimated_reads);
    cpuclock_thread_release(&bpf_thread);
    cpuclock_thread_release(&fallback_thread);
    cpuclock_detach(&table);
    cpuclock_bpf_unload();
    if (drift_seconds > 0)
        bench_drift(drift_seconds);
    return 0;
}
