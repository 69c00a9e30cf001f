/* cpuclock_accuracy.c - measures per-segment accuracy of the CPU clock against
 * CLOCK_THREAD_CPUTIME_ID (the oracle, read around every segment) with N busy
 * threads pinned to C cores doing work segments of log-uniform length between
 * cheap "events", some of which block briefly. Exits non-zero when the 95th
 * percentile of error/allowance exceeds 1, the allowance being max(F, 5% of
 * the segment's true CPU time) with F = 2 us for the BPF clock and the
 * threshold T for the fallback (whose estimates are wrong by the off-CPU time
 * inside a gap shorter than T: a 5 us wake-up of another thread inside a
 * 15 us segment, which under a busy CI machine put 5-6% of segments past
 * 2 us), when the worst thread's summed segments are more than 2% off its
 * summed truth (the fallback's estimates are absorbed at the next precise
 * read, so the sum is exact), or when the mode cannot be set up (BPF needs
 * root: it says so, never skips). The verdict is the median over R rounds
 * (default 3) so one burst of host noise (steal) cannot decide it. Used by ctest
 * and by the benchmark.
 *
 *   cpuclock_accuracy --mode bpf|fallback [--threads N] [--cpus C]
 *                     [--segments S] [--rounds R] [--min-us A] [--max-us B] [--threshold-ns T]
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cpuclock_loader.h"

struct accuracy_options {
    int use_bpf;
    int threads;
    int cpus;
    int segments;
    double min_us;
    double max_us;
    uint64_t threshold_ns;
    int rounds;
};

#define ACCURACY_MAX_ROUNDS 9
/* A thread's summed segments against its summed truth: the estimates'
 * errors are absorbed at the next precise read, so the sum is exact but
 * for the last one (issue 23's bound for the recorded CPU: 2%). */
#define ACCURACY_TOTAL_BOUND 0.02

struct accuracy_worker {
    const struct accuracy_options *options;
    const struct cpuclock_table *table;
    const struct cpuclock_tsc *tsc;
    unsigned seed;
    double *ratios; /* error / allowance per segment */
    double *errors_ns;
    uint64_t estimated;
    uint64_t repairs;
    uint64_t resyncs;
    double truth_ns, measured_ns; /* the thread's segments summed */
    int mode_ok;
};

static double accuracy_loops_per_ns;

static uint64_t accuracy_clock_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static volatile uint64_t accuracy_sink;

static void accuracy_burn(uint64_t loops)
{
    uint64_t sum = 0;
    for (uint64_t i = 0; i < loops; i++) {
        sum += i * 2654435761u;
        __asm__ __volatile__("" : "+r"(sum)); /* keep the loop: it is the work */
    }
    accuracy_sink += sum;
}

static void accuracy_calibrate_burn(void)
{
    uint64_t loops = 1000000;
    uint64_t start = accuracy_clock_ns(CLOCK_THREAD_CPUTIME_ID);
    accuracy_burn(loops);
    uint64_t spent = accuracy_clock_ns(CLOCK_THREAD_CPUTIME_ID) - start;
    accuracy_loops_per_ns = (double)loops / (double)(spent ? spent : 1);
}

static void *accuracy_worker_main(void *argument)
{
    struct accuracy_worker *worker = argument;
    const struct accuracy_options *options = worker->options;
    struct cpuclock_thread th;
    enum cpuclock_mode mode =
        cpuclock_thread_claim(worker->table, &th, (uint32_t)syscall(SYS_gettid));
    worker->mode_ok = mode == (options->use_bpf ? CPUCLOCK_MODE_BPF : CPUCLOCK_MODE_FALLBACK);
    if (!worker->mode_ok)
        return NULL;
    if (options->threshold_ns)
        th.threshold_ns = options->threshold_ns;
    /* An estimate is off by at most the off-CPU time inside a gap shorter
     * than the threshold: that is the fallback's per-segment promise. */
    double floor_ns = worker->options->use_bpf ? 2000.0 : fmax(2000.0, (double)th.threshold_ns);
    double log_min = log(options->min_us), log_max = log(options->max_us);
    for (int segment = 0; segment < options->segments; segment++) {
        double length_us = exp(log_min + (log_max - log_min) * rand_r(&worker->seed) / RAND_MAX);
        uint64_t oracle_start = accuracy_clock_ns(CLOCK_THREAD_CPUTIME_ID);
        uint64_t clock_start = cpuclock_thread_now(&th, cpuclock_tsc_mono_now(worker->tsc), NULL);
        accuracy_burn((uint64_t)(length_us * 1000.0 * accuracy_loops_per_ns));
        uint64_t oracle_end = accuracy_clock_ns(CLOCK_THREAD_CPUTIME_ID);
        unsigned flags = 0;
        uint64_t clock_end = cpuclock_thread_now(&th, cpuclock_tsc_mono_now(worker->tsc), &flags);
        if (flags & CPUCLOCK_ESTIMATED)
            worker->estimated++;
        double truth = (double)(oracle_end - oracle_start);
        double measured = (double)clock_end - (double)clock_start;
        double error = fabs(measured - truth);
        double allowance = fmax(floor_ns, 0.05 * truth);
        worker->truth_ns += truth;
        worker->measured_ns += measured;
        if (getenv("CPUCLOCK_ACCURACY_DEBUG") && error > 100000.0)
            fprintf(stderr,
                    "segment %d: truth %.0f measured %.0f start %llu end %llu oracle %llu slot "
                    "seq %u total %llu on %llu off %llu mono %llu real %llu\n",
                    segment, truth, measured, (unsigned long long)clock_start,
                    (unsigned long long)clock_end, (unsigned long long)oracle_end,
                    th.slot ? atomic_load(&th.slot->seq) : 0,
                    th.slot ? (unsigned long long)atomic_load(&th.slot->total_ns) : 0,
                    th.slot ? (unsigned long long)atomic_load(&th.slot->on_cpu_since_ns) : 0,
                    th.slot ? (unsigned long long)atomic_load(&th.slot->off_cpu_since_ns) : 0,
                    (unsigned long long)cpuclock_tsc_mono_now(worker->tsc),
                    (unsigned long long)accuracy_clock_ns(CLOCK_MONOTONIC));
        worker->errors_ns[segment] = error;
        worker->ratios[segment] = error / allowance;
        /* a blocking "event" now and then: its time is not part of a segment */
        if (segment % 7 == 3) {
            struct timespec pause = {0, 50000};
            nanosleep(&pause, NULL);
        }
    }
    worker->repairs = th.repairs;
    worker->resyncs = th.resyncs;
    cpuclock_thread_release(&th);
    return NULL;
}

static int accuracy_compare(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double accuracy_quantile(const double *sorted, size_t count, double q)
{
    size_t index = (size_t)(q * (double)(count - 1) + 0.5);
    return sorted[index < count ? index : count - 1];
}

static int accuracy_parse(int argc, char **argv, struct accuracy_options *options)
{
    *options = (struct accuracy_options){1, 4, 2, 300, 10.0, 10000.0, 0, 3};
    for (int i = 1; i < argc; i += 2) {
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (!value) {
            fprintf(stderr, "cpuclock_accuracy: %s needs a value\n", argv[i]);
            return -1;
        }
        if (strcmp(argv[i], "--mode") == 0) {
            if (strcmp(value, "bpf") != 0 && strcmp(value, "fallback") != 0) {
                fprintf(stderr, "cpuclock_accuracy: --mode is bpf or fallback, not '%s'\n", value);
                return -1;
            }
            options->use_bpf = strcmp(value, "bpf") == 0;
        } else if (strcmp(argv[i], "--threads") == 0) {
            options->threads = atoi(value);
        } else if (strcmp(argv[i], "--cpus") == 0) {
            options->cpus = atoi(value);
        } else if (strcmp(argv[i], "--segments") == 0) {
            options->segments = atoi(value);
        } else if (strcmp(argv[i], "--min-us") == 0) {
            options->min_us = atof(value);
        } else if (strcmp(argv[i], "--max-us") == 0) {
            options->max_us = atof(value);
        } else if (strcmp(argv[i], "--rounds") == 0) {
            options->rounds = atoi(value);
        } else if (strcmp(argv[i], "--threshold-ns") == 0) {
            options->threshold_ns = strtoull(value, NULL, 10);
        } else {
            fprintf(stderr, "cpuclock_accuracy: unknown option '%s'\n", argv[i]);
            return -1;
        }
    }
    if (options->threads < 1 || options->threads > 64 || options->cpus < 1 ||
        options->segments < 10 || options->rounds < 1 || options->rounds > ACCURACY_MAX_ROUNDS ||
        options->min_us <= 0 || options->max_us < options->min_us) {
        fprintf(stderr, "cpuclock_accuracy: bad --threads/--cpus/--segments/--min-us/--max-us\n");
        return -1;
    }
    return 0;
}

/* One round: all threads, all segments. Prints its line; returns the 95th
 * percentile of error/allowance, or -1 when the round could not run, and
 * the worst thread's |sum measured / sum true - 1| in *worst_total. */
static double accuracy_round(const struct accuracy_options *options,
                             const struct cpuclock_table *table, const struct cpuclock_tsc *tsc,
                             int round, double *worst_total)
{
    double result = -1.0;
    size_t total = (size_t)options->threads * (size_t)options->segments;
    double *ratios = calloc(total, sizeof *ratios);
    double *errors = calloc(total, sizeof *errors);
    struct accuracy_worker *workers = calloc((size_t)options->threads, sizeof *workers);
    pthread_t *threads = calloc((size_t)options->threads, sizeof *threads);
    int started = 0;
    if (!ratios || !errors || !workers || !threads) {
        fprintf(stderr, "cpuclock_accuracy: out of memory\n");
        goto free_all;
    }
    uint64_t wall_start = accuracy_clock_ns(CLOCK_MONOTONIC);
    for (int i = 0; i < options->threads; i++) {
        workers[i] =
            (struct accuracy_worker){.options = options,
                                     .table = options->use_bpf ? table : NULL,
                                     .tsc = tsc,
                                     .seed = (unsigned)(12345 + i * 7919 + round * 104729),
                                     .ratios = ratios + (size_t)i * (size_t)options->segments,
                                     .errors_ns = errors + (size_t)i * (size_t)options->segments};
        if (pthread_create(&threads[i], NULL, accuracy_worker_main, &workers[i]) != 0) {
            fprintf(stderr, "cpuclock_accuracy: cannot start thread %d\n", i);
            break;
        }
        started++;
    }
    uint64_t estimated = 0, repairs = 0, resyncs = 0;
    int modes_ok = started == options->threads;
    *worst_total = 0;
    for (int i = 0; i < started; i++) {
        pthread_join(threads[i], NULL);
        double off = workers[i].truth_ns > 0
                         ? fabs(workers[i].measured_ns / workers[i].truth_ns - 1.0)
                         : 1.0;
        *worst_total = fmax(*worst_total, off);
        estimated += workers[i].estimated;
        repairs += workers[i].repairs;
        resyncs += workers[i].resyncs;
        modes_ok &= workers[i].mode_ok;
    }
    double wall_s = (double)(accuracy_clock_ns(CLOCK_MONOTONIC) - wall_start) / 1e9;
    if (!modes_ok) {
        fprintf(stderr, "cpuclock_accuracy: FAIL: a thread could not get the %s clock\n",
                options->use_bpf ? "BPF" : "fallback");
        goto free_all;
    }
    qsort(ratios, total, sizeof *ratios, accuracy_compare);
    qsort(errors, total, sizeof *errors, accuracy_compare);
    size_t within = 0;
    for (size_t i = 0; i < total; i++)
        within += ratios[i] <= 1.0;
    result = accuracy_quantile(ratios, total, 0.95);
    printf("mode=%s threads=%d cpus=%d round=%d segments=%zu wall_s=%.2f err_ns_p50=%.0f "
           "err_ns_p95=%.0f err_ns_p99=%.0f err_ns_max=%.0f within_target=%.1f%% "
           "p95_err_over_allowance=%.3f worst_thread_total_err=%.2f%% estimated=%llu repairs=%llu "
           "resyncs=%llu\n",
           options->use_bpf ? "bpf" : "fallback", options->threads, options->cpus, round, total,
           wall_s, accuracy_quantile(errors, total, 0.5), accuracy_quantile(errors, total, 0.95),
           accuracy_quantile(errors, total, 0.99), errors[total - 1],
           100.0 * (double)within / (double)total, result, 100.0 * *worst_total,
           (unsigned long long)estimated, (unsigned long long)repairs, (unsigned long long)resyncs);
free_all:
    free(ratios);
    free(errors);
    free(workers);
    free(threads);
    return result;
}

int main(int argc, char **argv)
{
    struct accuracy_options options;
    struct cpuclock_table table = {0};
    struct cpuclock_tsc own_tsc;
    const struct cpuclock_tsc *tsc = &own_tsc;
    char err[512];
    int status = 1;
    if (accuracy_parse(argc, argv, &options) != 0)
        return 2;
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    for (int cpu = 0; cpu < options.cpus; cpu++)
        CPU_SET(cpu, &cpus);
    if (sched_setaffinity(0, sizeof cpus, &cpus) != 0) {
        fprintf(stderr, "cpuclock_accuracy: cannot pin to %d cpus: %s\n", options.cpus,
                strerror(errno));
        return 1;
    }
    if (options.use_bpf) {
        if (!cpuclock_bpf_load(err, sizeof err)) {
            fprintf(stderr, "cpuclock_accuracy: FAIL: BPF mode needs the BPF program: %s\n", err);
            return 1;
        }
        int fd = dup(cpuclock_bpf_map_fd());
        if (cpuclock_attach(fd, &table, err, sizeof err) != 0) {
            fprintf(stderr, "cpuclock_accuracy: FAIL: %s\n", err);
            goto done;
        }
        close(fd);
        tsc = &table.header->tsc;
    } else {
        memset(&own_tsc, 0, sizeof own_tsc);
        if (cpuclock_tsc_calibrate(&own_tsc, 10000000u) != 0) {
            fprintf(stderr, "cpuclock_accuracy: FAIL: TSC calibration: %s\n", strerror(errno));
            return 1;
        }
    }
    accuracy_calibrate_burn();

    double p95_ratios[ACCURACY_MAX_ROUNDS], totals[ACCURACY_MAX_ROUNDS];
    for (int round = 0; round < options.rounds; round++) {
        p95_ratios[round] = accuracy_round(&options, &table, tsc, round, &totals[round]);
        if (p95_ratios[round] < 0)
            goto done;
    }
    qsort(p95_ratios, (size_t)options.rounds, sizeof p95_ratios[0], accuracy_compare);
    qsort(totals, (size_t)options.rounds, sizeof totals[0], accuracy_compare);
    double median = p95_ratios[options.rounds / 2], median_total = totals[options.rounds / 2];
    printf("mode=%s threads=%d median_p95_err_over_allowance=%.3f "
           "median_worst_thread_total_err=%.2f%% over %d rounds\n",
           options.use_bpf ? "bpf" : "fallback", options.threads, median, 100.0 * median_total,
           options.rounds);
    if (median > 1.0) {
        fprintf(stderr,
                "cpuclock_accuracy: FAIL: median over %d rounds of the 95th percentile error is "
                "%.2fx the allowance max(%s, 5%%)\n",
                options.rounds, median, options.use_bpf ? "2 us" : "2 us, the threshold");
        goto done;
    }
    if (median_total > ACCURACY_TOTAL_BOUND) {
        fprintf(stderr,
                "cpuclock_accuracy: FAIL: median over %d rounds of the worst thread's total CPU "
                "error is %.2f%% (bound %.0f%%)\n",
                options.rounds, 100.0 * median_total, 100.0 * ACCURACY_TOTAL_BOUND);
        goto done;
    }
    status = 0;
done:
    cpuclock_detach(&table);
    cpuclock_bpf_unload();
    return status;
}
