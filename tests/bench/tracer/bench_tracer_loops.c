/* bench_tracer_loops.c - the workloads of the tracer benchmark
 * (tests/bench/tracer/run.sh): tight loops of one traced call each, timed
 * inside the program so the same binary can run bare, under `preplay
 * record`, under strace and under ltrace; a many-thread event generator that
 * measures the collector's CPU time; and busy threads for the CPU-time
 * fidelity check. Prints `key=value` lines for the script. Asserts nothing
 * about speed: it fails only when it cannot measure (bad arguments, a failed
 * call), naming what failed.
 *
 *   bench_tracer_loops loop write|pingpong|pread|mutex ITERS RUNS [DIR [BURST]]
 *
 * With BURST > 0 a run is ITERS/BURST bursts of BURST calls with a pause of
 * BENCH_BURST_PAUSE_NS between them, only the bursts timed: the ring never
 * fills, so a traced run shows the app-side cost of an event alone, not
 * the collector's drain rate (which bounds a sustained tight loop). It
 * also prints burst_median_ns, the median over every burst of every run,
 * which preemptions on a loaded machine barely move.
 *   bench_tracer_loops collector THREADS ITERS
 *   bench_tracer_loops fidelity THREADS CPUS MILLISECONDS
 *   bench_tracer_loops clock MILLISECONDS GAP_US BUSY_THREADS OUT
 *
 * clock: for MILLISECONDS, a 1-byte write to /dev/null every GAP_US, and
 * right after each one the thread's CLOCK_MONOTONIC, one line per write in
 * OUT, while BUSY_THREADS spin (the collector's clock reads then compete for
 * the cores): the script compares each with the write's end in the trace.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define BENCH_MAX_RUNS 101
#define BENCH_MAX_THREADS 64
#define BENCH_BURST_PAUSE_NS 3000000

static uint64_t bench_clock_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int bench_compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void bench_die(const char *what)
{
    fprintf(stderr, "bench_tracer_loops: %s: %s\n", what, strerror(errno));
    exit(1);
}

static long bench_parse(const char *s, const char *name, long min, long max)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < min || v > max) {
        fprintf(stderr, "bench_tracer_loops: %s must be an integer in [%ld, %ld], got '%s'\n", name,
                min, max, s);
        exit(2);
    }
    return v;
}

/* ---- loop: one traced call per iteration --------------------------------- */

struct bench_pingpong {
    int to_peer[2];   /* main -> peer */
    int from_peer[2]; /* peer -> main */
    long rounds;
};

static void *bench_pingpong_peer(void *arg)
{
    struct bench_pingpong *pp = arg;
    char byte;
    for (long i = 0; i < pp->rounds; i++) {
        if (read(pp->to_peer[0], &byte, 1) != 1)
            bench_die("pingpong peer read");
        if (write(pp->from_peer[1], &byte, 1) != 1)
            bench_die("pingpong peer write");
    }
    return NULL;
}

/* One run of `iters` iterations of `mode`; returns ns per iteration. */
static double bench_loop_run(const char *mode, long iters, int fd)
{
    static char buf[64];
    uint64_t start = 0, end = 0;
    if (!strcmp(mode, "write")) {
        start = bench_clock_ns(CLOCK_MONOTONIC);
        for (long i = 0; i < iters; i++)
            if (write(fd, buf, sizeof buf) != (ssize_t)sizeof buf)
                bench_die("write to /dev/null");
        end = bench_clock_ns(CLOCK_MONOTONIC);
    } else if (!strcmp(mode, "pread")) {
        start = bench_clock_ns(CLOCK_MONOTONIC);
        for (long i = 0; i < iters; i++)
            if (pread(fd, buf, sizeof buf, (off_t)((i & 63) * 64)) != (ssize_t)sizeof buf)
                bench_die("pread of the cached file");
        end = bench_clock_ns(CLOCK_MONOTONIC);
    } else if (!strcmp(mode, "mutex")) {
        static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
        start = bench_clock_ns(CLOCK_MONOTONIC);
        for (long i = 0; i < iters; i++) {
            pthread_mutex_lock(&m);
            pthread_mutex_unlock(&m);
        }
        end = bench_clock_ns(CLOCK_MONOTONIC);
    } else if (!strcmp(mode, "pingpong")) {
        struct bench_pingpong pp = {.rounds = iters};
        /* both threads on one core: a round trip is two context switches
         * (lmbench's lat_pipe), not two cross-core wake-ups, whose cost
         * varies by tens of microseconds in a VM */
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(0, &one);
        if (sched_setaffinity(0, sizeof one, &one) != 0)
            bench_die("sched_setaffinity");
        if (pipe(pp.to_peer) != 0 || pipe(pp.from_peer) != 0)
            bench_die("pipe");
        pthread_t peer;
        if (pthread_create(&peer, NULL, bench_pingpong_peer, &pp) != 0)
            bench_die("pthread_create");
        char byte = 'x';
        start = bench_clock_ns(CLOCK_MONOTONIC);
        for (long i = 0; i < iters; i++) {
            if (write(pp.to_peer[1], &byte, 1) != 1)
                bench_die("pingpong write");
            if (read(pp.from_peer[0], &byte, 1) != 1)
                bench_die("pingpong read");
        }
        end = bench_clock_ns(CLOCK_MONOTONIC);
        pthread_join(peer, NULL);
        close(pp.to_peer[0]);
        close(pp.to_peer[1]);
        close(pp.from_peer[0]);
        close(pp.from_peer[1]);
    } else {
        fprintf(stderr, "bench_tracer_loops: unknown loop '%s' (write|pingpong|pread|mutex)\n",
                mode);
        exit(2);
    }
    return (double)(end - start) / (double)iters;
}

static int bench_loop(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: bench_tracer_loops loop MODE ITERS RUNS [DIR]\n");
        return 2;
    }
    const char *mode = argv[2];
    long iters = bench_parse(argv[3], "ITERS", 1, 100000000);
    long runs = bench_parse(argv[4], "RUNS", 1, BENCH_MAX_RUNS);
    const char *dir = argc > 5 ? argv[5] : "/tmp";
    int fd = -1;
    char path[4096];
    path[0] = 0;
    if (!strcmp(mode, "write")) {
        fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
        if (fd < 0)
            bench_die("open /dev/null");
    } else if (!strcmp(mode, "pread")) {
        snprintf(path, sizeof path, "%s/bench-pread-%d.dat", dir, (int)getpid());
        fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0) {
            fprintf(stderr, "bench_tracer_loops: cannot create %s: %s\n", path, strerror(errno));
            return 1;
        }
        static char block[4096];
        memset(block, 'p', sizeof block);
        if (write(fd, block, sizeof block) != (ssize_t)sizeof block)
            bench_die("write of the pread file");
    }
    /* one discarded run: page cache, lazy binding, the tracer's ring claim */
    bench_loop_run(mode, iters < 1000 ? iters : 1000, fd);
    long burst = argc > 6 ? bench_parse(argv[6], "BURST", 0, iters) : 0;
    double per_iter[BENCH_MAX_RUNS];
    /* Every burst's ns per call, over all runs: their median is robust to
     * the preemptions a loaded machine inflicts on a few bursts. */
    long max_bursts = burst ? runs * (iters / burst) : 0;
    double *per_burst = max_bursts ? calloc((size_t)max_bursts, sizeof *per_burst) : NULL;
    long nbursts = 0;
    if (max_bursts && !per_burst)
        bench_die("allocating the burst table");
    for (long r = 0; r < runs; r++) {
        if (!burst) {
            per_iter[r] = bench_loop_run(mode, iters, fd);
            continue;
        }
        double sum_ns = 0;
        long done = 0;
        for (; done + burst <= iters; done += burst) {
            struct timespec pause = {.tv_sec = 0, .tv_nsec = BENCH_BURST_PAUSE_NS};
            nanosleep(&pause, NULL);
            double ns = bench_loop_run(mode, burst, fd);
            sum_ns += ns * (double)burst;
            per_burst[nbursts++] = ns;
        }
        per_iter[r] = sum_ns / (double)done;
    }
    if (fd >= 0)
        close(fd);
    if (path[0])
        unlink(path);
    printf("mode=%s iters=%ld runs=%ld burst=%ld", mode, iters, runs, burst);
    printf(" per_run_ns=");
    for (long r = 0; r < runs; r++)
        printf("%s%.2f", r ? "," : "", per_iter[r]);
    qsort(per_iter, (size_t)runs, sizeof per_iter[0], bench_compare_double);
    printf(" median_ns=%.2f", per_iter[runs / 2]);
    if (nbursts) {
        qsort(per_burst, (size_t)nbursts, sizeof per_burst[0], bench_compare_double);
        printf(" bursts=%ld burst_median_ns=%.2f", nbursts, per_burst[nbursts / 2]);
    }
    printf("\n");
    free(per_burst);
    return 0;
}

/* ---- collector: many cheap events from several threads ------------------- */

struct bench_collector_thread {
    long iters;
    pthread_mutex_t mutex;
};

static void *bench_collector_worker(void *arg)
{
    struct bench_collector_thread *w = arg;
    for (long i = 0; i < w->iters; i++) {
        pthread_mutex_lock(&w->mutex);
        pthread_mutex_unlock(&w->mutex);
    }
    return NULL;
}

/* utime+stime of process pid in ns, or -1. */
static long long bench_proc_cpu_ns(pid_t pid, char *comm, size_t comm_cap)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = 0;
    char *open_paren = strchr(buf, '('), *close_paren = strrchr(buf, ')');
    if (!open_paren || !close_paren)
        return -1;
    if (comm) {
        size_t len = (size_t)(close_paren - open_paren - 1);
        if (len >= comm_cap)
            len = comm_cap - 1;
        memcpy(comm, open_paren + 1, len);
        comm[len] = 0;
    }
    /* fields after ")": state(3) ... utime(14) stime(15) */
    unsigned long long utime = 0, stime = 0;
    if (sscanf(close_paren + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime,
               &stime) != 2)
        return -1;
    long hz = sysconf(_SC_CLK_TCK);
    return (long long)((utime + stime) * (1000000000ull / (unsigned long long)hz));
}

/* The CPU time of every thread of process pid in ns, from each thread's
 * schedstat (the scheduler's own ns count; /proc/PID/stat counts 10 ms
 * ticks, and a quick run's collector works less than one: CI read 0 and
 * the benchmark failed), or -1 when the kernel has no schedstat. */
static long long bench_proc_threads_cpu_ns(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d)
        return -1;
    long long sum = 0;
    int found = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        char spath[300];
        snprintf(spath, sizeof spath, "/proc/%d/task/%s/schedstat", (int)pid, e->d_name);
        FILE *f = fopen(spath, "r");
        unsigned long long ns;
        if (f && fscanf(f, "%llu", &ns) == 1) {
            sum += (long long)ns;
            found = 1;
        }
        if (f)
            fclose(f);
    }
    closedir(d);
    return found ? sum : -1;
}

/* The collector's CPU time in ns: per thread in ns where the kernel says,
 * else its ticks. */
static long long bench_collector_cpu_ns(pid_t collector)
{
    long long ns = bench_proc_threads_cpu_ns(collector);
    return ns >= 0 ? ns : bench_proc_cpu_ns(collector, NULL, 0);
}

/* Waits until the collector's CPU time stops growing (it has drained what
 * we wrote: less than 1% of a core over 20 ms, three times in a row; an
 * idle collector still wakes now and then), at most 10 s. */
static long long bench_wait_collector_idle(pid_t collector)
{
    long long last = bench_collector_cpu_ns(collector);
    int stable = 0;
    for (int i = 0; i < 500 && stable < 3; i++) {
        struct timespec ts = {.tv_sec = 0, .tv_nsec = 20000000};
        nanosleep(&ts, NULL);
        long long now = bench_collector_cpu_ns(collector);
        stable = now - last < 200000 ? stable + 1 : 0;
        last = now;
    }
    return last;
}

static int bench_collector(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: bench_tracer_loops collector THREADS ITERS\n");
        return 2;
    }
    long nthreads = bench_parse(argv[2], "THREADS", 1, BENCH_MAX_THREADS);
    long iters = bench_parse(argv[3], "ITERS", 1, 100000000);
    pid_t collector = getppid();
    char comm[64];
    if (bench_proc_cpu_ns(collector, comm, sizeof comm) < 0 || strcmp(comm, "preplay") != 0) {
        fprintf(stderr,
                "bench_tracer_loops: collector mode must run as the direct child of `preplay "
                "record` (parent %d is '%s')\n",
                (int)collector, comm);
        return 1;
    }
    long long cpu_before = bench_wait_collector_idle(collector);
    struct bench_collector_thread workers[BENCH_MAX_THREADS];
    pthread_t tids[BENCH_MAX_THREADS];
    uint64_t start = bench_clock_ns(CLOCK_MONOTONIC);
    for (long i = 0; i < nthreads; i++) {
        workers[i].iters = iters;
        pthread_mutex_init(&workers[i].mutex, NULL);
        if (pthread_create(&tids[i], NULL, bench_collector_worker, &workers[i]) != 0)
            bench_die("pthread_create");
    }
    for (long i = 0; i < nthreads; i++)
        pthread_join(tids[i], NULL);
    uint64_t app_ns = bench_clock_ns(CLOCK_MONOTONIC) - start;
    long long cpu_after = bench_wait_collector_idle(collector);
    printf("threads=%ld lock_ops=%ld app_wall_ns=%llu collector_cpu_ns=%lld\n", nthreads,
           nthreads * iters * 2, (unsigned long long)app_ns, cpu_after - cpu_before);
    return 0;
}

/* ---- fidelity: busy threads sharing fewer cores --------------------------- */

struct bench_fidelity_thread {
    uint64_t deadline_ns;
    int devnull;
    uint32_t tid;
    uint64_t cpu_ns;
    uint64_t events;
};

static volatile uint64_t bench_sink;

static void *bench_fidelity_worker(void *arg)
{
    struct bench_fidelity_thread *w = arg;
    w->tid = (uint32_t)syscall(SYS_gettid);
    char byte = 0;
    uint64_t x = w->tid;
    /* busy work cut into segments of varying length by traced writes, so
     * the trace's CPU time is the sum of many short segments */
    for (uint64_t seg = 0; bench_clock_ns(CLOCK_MONOTONIC) < w->deadline_ns; seg++) {
        uint64_t spin = 2000 + (seg * 7919) % 60000;
        for (uint64_t i = 0; i < spin; i++)
            x = x * 6364136223846793005ull + 1442695040888963407ull;
        if (write(w->devnull, &byte, 1) != 1)
            bench_die("write to /dev/null");
        w->events++;
    }
    bench_sink += x;
    /* the last thing the thread does: the trace's THREAD_EXIT carries the
     * segment up to here */
    w->cpu_ns = bench_clock_ns(CLOCK_THREAD_CPUTIME_ID);
    return NULL;
}

static int bench_fidelity(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: bench_tracer_loops fidelity THREADS CPUS MILLISECONDS\n");
        return 2;
    }
    long nthreads = bench_parse(argv[2], "THREADS", 1, BENCH_MAX_THREADS);
    long ncpus = bench_parse(argv[3], "CPUS", 1, CPU_SETSIZE);
    long ms = bench_parse(argv[4], "MILLISECONDS", 1, 600000);
    cpu_set_t set;
    CPU_ZERO(&set);
    for (long c = 0; c < ncpus; c++)
        CPU_SET((int)c, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0)
        bench_die("sched_setaffinity");
    int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (devnull < 0)
        bench_die("open /dev/null");
    struct bench_fidelity_thread workers[BENCH_MAX_THREADS];
    pthread_t tids[BENCH_MAX_THREADS];
    uint64_t deadline = bench_clock_ns(CLOCK_MONOTONIC) + (uint64_t)ms * 1000000u;
    for (long i = 0; i < nthreads; i++) {
        memset(&workers[i], 0, sizeof workers[i]);
        workers[i].deadline_ns = deadline;
        workers[i].devnull = devnull;
        if (pthread_create(&tids[i], NULL, bench_fidelity_worker, &workers[i]) != 0)
            bench_die("pthread_create");
    }
    for (long i = 0; i < nthreads; i++)
        pthread_join(tids[i], NULL);
    close(devnull);
    for (long i = 0; i < nthreads; i++)
        printf("tid=%u cpu_ns=%llu events=%llu\n", workers[i].tid,
               (unsigned long long)workers[i].cpu_ns, (unsigned long long)workers[i].events);
    return 0;
}

static void *bench_clock_spinner(void *arg)
{
    const uint64_t *deadline = arg;
    uint64_t x = 0;
    while (bench_clock_ns(CLOCK_MONOTONIC) < *deadline)
        for (int i = 0; i < 100000; i++)
            x += (uint64_t)i * 2654435761u;
    bench_sink += x;
    return NULL;
}

static int bench_clock(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: bench_tracer_loops clock MILLISECONDS GAP_US BUSY_THREADS OUT\n");
        return 2;
    }
    long ms = bench_parse(argv[2], "MILLISECONDS", 1, 600000);
    long gap_us = bench_parse(argv[3], "GAP_US", 1, 1000000);
    long nbusy = bench_parse(argv[4], "BUSY_THREADS", 0, BENCH_MAX_THREADS);
    FILE *out = fopen(argv[5], "w");
    if (!out)
        bench_die(argv[5]);
    int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (devnull < 0)
        bench_die("open /dev/null");
    uint64_t deadline = bench_clock_ns(CLOCK_MONOTONIC) + (uint64_t)ms * 1000000u;
    pthread_t busy[BENCH_MAX_THREADS];
    for (long i = 0; i < nbusy; i++)
        if (pthread_create(&busy[i], NULL, bench_clock_spinner, &deadline) != 0)
            bench_die("pthread_create");
    struct timespec gap = {.tv_sec = gap_us / 1000000, .tv_nsec = (gap_us % 1000000) * 1000};
    long writes = 0;
    for (uint64_t now = 0; now < deadline; writes++) {
        if (write(devnull, "x", 1) != 1)
            bench_die("write /dev/null");
        now = bench_clock_ns(CLOCK_MONOTONIC);
        fprintf(out, "%llu\n", (unsigned long long)now);
        nanosleep(&gap, NULL);
    }
    for (long i = 0; i < nbusy; i++)
        pthread_join(busy[i], NULL);
    if (fclose(out) != 0)
        bench_die(argv[5]);
    close(devnull);
    printf("writes=%ld\n", writes);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "loop"))
        return bench_loop(argc, argv);
    if (argc >= 2 && !strcmp(argv[1], "collector"))
        return bench_collector(argc, argv);
    if (argc >= 2 && !strcmp(argv[1], "fidelity"))
        return bench_fidelity(argc, argv);
    if (argc >= 2 && !strcmp(argv[1], "clock"))
        return bench_clock(argc, argv);
    fprintf(stderr,
            "usage: bench_tracer_loops loop|collector|fidelity|clock ... (see the source)\n");
    return 2;
}
