/* cpuburn.c - calibrated busy loop (see cpuburn.h). The loop is a chain of
 * dependent multiply-adds the compiler cannot fold or vectorize, so its
 * cost per iteration is fixed by the core's multiplier latency and does not
 * touch memory (no cache or bandwidth effects, same under ASan).
 *
 * Must never: sleep, allocate or take a lock in cpuburn_run. */
#include "cpuburn.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CPUBURN_DEFAULT_TOTAL_NS 300000000ull /* 300 ms of calibration */
#define CPUBURN_ROUNDS 6

_Static_assert(sizeof(cpu_set_t) <= sizeof(((struct cpuburn_affinity *)0)->mask),
               "cpuburn_affinity.mask must hold a cpu_set_t");

__attribute__((noinline)) uint64_t cpuburn_spin(uint64_t n)
{
    uint64_t x = n | 1;
    for (uint64_t i = 0; i < n; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        __asm__ volatile("" : "+r"(x)); /* keep every iteration, in order */
    }
    return x;
}

static uint64_t cpuburn_clock(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t cpuburn_thread_cpu_ns(void)
{
    return cpuburn_clock(CLOCK_THREAD_CPUTIME_ID);
}
uint64_t cpuburn_wall_ns(void)
{
    return cpuburn_clock(CLOCK_MONOTONIC);
}

uint64_t cpuburn_loops_for_ns(const struct cpuburn_calibration *cal, uint64_t ns)
{
    if (!cal || !(cal->loops_per_ns > 0))
        return 0;
    double loops = (double)ns * cal->loops_per_ns + 0.5;
    return loops >= 1.8e19 ? UINT64_MAX : (uint64_t)loops;
}

uint64_t cpuburn_run(const struct cpuburn_calibration *cal, uint64_t ns)
{
    /* The calibrated loop count, spun without a clock read, however long
     * the burn: a thread-CPU-clock read is a syscall that updates the
     * scheduler's accounting, and a burn that read it every 0.5 ms gave up
     * the core at its slice's end where the application's own code (pure
     * user-space work between two recorded events) runs on to the next
     * tick. On one core that made a 3.3 ms CPU request's p95 30-39% high
     * and the short requests' beside it 25-44% low (docs/preplay-calibrate.md
     * "Running a burn"). Time throttled, preempted or stolen does not
     * advance the loop, so it is waited out, as it is for the real code. */
    cpuburn_spin(cpuburn_loops_for_ns(cal, ns));
    return ns;
}

uint64_t cpuburn_effective_cpu_ns(uint64_t wall_ns, uint64_t cpu_ns, uint64_t steal_ns,
                                  uint64_t tick_ns, int *mode)
{
    if (steal_ns == 0) {
        if (mode)
            *mode = CPUBURN_STEAL_NONE;
        return cpu_ns;
    }
    uint64_t certain = steal_ns > tick_ns ? steal_ns - tick_ns : 0;
    if (certain == 0) {
        if (mode)
            *mode = CPUBURN_STEAL_WITHIN_TICK;
        return cpu_ns;
    }
    uint64_t gap = wall_ns > cpu_ns ? wall_ns - cpu_ns : 0;
    if (gap * 2 >= certain) {
        /* The thread was not credited for at least half the steal: the
         * kernel keeps steal out of the task clock (paravirt steal time). */
        if (mode)
            *mode = CPUBURN_STEAL_EXCLUDED;
        return cpu_ns;
    }
    if (mode)
        *mode = CPUBURN_STEAL_SUBTRACTED;
    return cpu_ns > certain ? cpu_ns - certain : 0;
}

static int cpuburn_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double cpuburn_median(double *rates, size_t n)
{
    if (!n)
        return 0;
    qsort(rates, n, sizeof *rates, cpuburn_cmp_double);
    return n % 2 ? rates[n / 2] : (rates[n / 2 - 1] + rates[n / 2]) / 2;
}

int cpuburn_parse_steal(const char *text, int cpu, uint64_t *ticks)
{
    if (!text || cpu < 0)
        return -1;
    char want[32];
    int wl = snprintf(want, sizeof want, "cpu%d ", cpu);
    for (const char *line = text; line && *line;) {
        if (!strncmp(line, want, (size_t)wl)) {
            /* user nice system idle iowait irq softirq steal */
            unsigned long long v[8];
            if (sscanf(line + wl, "%llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
                       &v[3], &v[4], &v[5], &v[6], &v[7]) != 8)
                return -1;
            *ticks = v[7];
            return 0;
        }
        line = strchr(line, '\n');
        if (line)
            line++;
    }
    return -1;
}

int64_t cpuburn_core_steal_ns(int cpu)
{
    /* /proc/stat of a 2-core VM is a few KB; a larger machine's is bigger
     * but the per-core lines come first. */
    char buf[16384];
    int fd = open("/proc/stat", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t have = 0;
    while (have < sizeof buf - 1) {
        ssize_t n = read(fd, buf + have, sizeof buf - 1 - have);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        have += (size_t)n;
    }
    close(fd);
    buf[have] = 0;
    uint64_t ticks;
    if (cpuburn_parse_steal(buf, cpu, &ticks))
        return -1;
    return (int64_t)(ticks * cpuburn_steal_tick_ns());
}

uint64_t cpuburn_steal_tick_ns(void)
{
    long hz = sysconf(_SC_CLK_TCK);
    if (hz <= 0)
        hz = 100;
    return 1000000000ull / (uint64_t)hz;
}

const char *cpuburn_steal_mode_name(int mode)
{
    switch (mode) {
    case CPUBURN_STEAL_NONE:
        return "none";
    case CPUBURN_STEAL_EXCLUDED:
        return "excluded-by-kernel";
    case CPUBURN_STEAL_SUBTRACTED:
        return "subtracted";
    case CPUBURN_STEAL_WITHIN_TICK:
        return "within-one-tick";
    default:
        return "unknown";
    }
}

int cpuburn_pin(int cpu, struct cpuburn_affinity *saved)
{
    cpu_set_t old, set;
    if (sched_getaffinity(0, sizeof old, &old))
        return -1;
    if (cpu < 0)
        cpu = sched_getcpu();
    if (cpu < 0 || cpu >= CPU_SETSIZE) {
        errno = EINVAL;
        return -1;
    }
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set))
        return -1;
    if (saved) {
        memcpy(saved->mask, &old, sizeof old);
        saved->valid = 1;
    }
    return cpu;
}

void cpuburn_unpin(const struct cpuburn_affinity *saved)
{
    if (saved && saved->valid) {
        cpu_set_t old;
        memcpy(&old, saved->mask, sizeof old);
        sched_setaffinity(0, sizeof old, &old);
    }
}

static int cpuburn_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* CPU cost of one clock read: median of back-to-back differences. */
static uint64_t cpuburn_measure_clock_read(void)
{
    uint64_t d[101];
    uint64_t prev = cpuburn_thread_cpu_ns();
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++) {
        uint64_t now = cpuburn_thread_cpu_ns();
        d[i] = now - prev;
        prev = now;
    }
    qsort(d, sizeof d / sizeof d[0], sizeof d[0], cpuburn_cmp_u64);
    return d[sizeof d / sizeof d[0] / 2];
}

int cpuburn_calibrate(struct cpuburn_calibration *out, int cpu, uint64_t total_ns, char *err,
                      size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!total_ns)
        total_ns = CPUBURN_DEFAULT_TOTAL_NS;
    struct cpuburn_affinity saved;
    int core = cpuburn_pin(cpu, &saved);
    if (core < 0) {
        snprintf(err, errlen, "cannot pin to CPU %d: %s", cpu, strerror(errno));
        return -1;
    }
    if (cpuburn_core_steal_ns(core) < 0) {
        snprintf(err, errlen, "/proc/stat has no steal counter for cpu%d", core);
        cpuburn_unpin(&saved);
        return -1;
    }
    out->cpu = core;
    out->clock_read_ns = cpuburn_measure_clock_read();

    /* First guess of the rate, and warm-up (frequency, caches, TLB). */
    uint64_t guess_loops = 1u << 20;
    double rate = 0;
    for (int i = 0; i < 8 && !(rate > 0); i++) {
        uint64_t c0 = cpuburn_thread_cpu_ns();
        cpuburn_spin(guess_loops);
        uint64_t c1 = cpuburn_thread_cpu_ns();
        if (c1 - c0 < 5000000ull) /* < 5 ms: too short to time, grow */
            guess_loops *= 4;
        else
            rate = (double)guess_loops / (double)(c1 - c0);
    }
    if (!(rate > 0)) {
        snprintf(err, errlen, "the thread CPU clock does not advance while spinning");
        cpuburn_unpin(&saved);
        return -1;
    }

    double rates[CPUBURN_ROUNDS];
    double per_round_ns = (double)total_ns / CPUBURN_ROUNDS;
    int any_excluded = 0, any_subtracted = 0, any_within_tick = 0;
    uint64_t tick = cpuburn_steal_tick_ns();
    for (int r = 0; r < CPUBURN_ROUNDS; r++) {
        uint64_t loops = (uint64_t)(per_round_ns * rate);
        int64_t s0 = cpuburn_core_steal_ns(core);
        uint64_t w0 = cpuburn_wall_ns(), c0 = cpuburn_thread_cpu_ns();
        cpuburn_spin(loops);
        uint64_t c1 = cpuburn_thread_cpu_ns(), w1 = cpuburn_wall_ns();
        int64_t s1 = cpuburn_core_steal_ns(core);
        uint64_t steal = s1 > s0 ? (uint64_t)(s1 - s0) : 0;
        int mode;
        uint64_t eff = cpuburn_effective_cpu_ns(w1 - w0, c1 - c0, steal, tick, &mode);
        any_excluded |= mode == CPUBURN_STEAL_EXCLUDED;
        any_subtracted |= mode == CPUBURN_STEAL_SUBTRACTED;
        any_within_tick |= mode == CPUBURN_STEAL_WITHIN_TICK;
        out->cpu_ns += c1 - c0;
        out->wall_ns += w1 - w0;
        out->steal_ns += steal;
        rates[r] = eff ? (double)loops / (double)eff : 0;
    }
    cpuburn_unpin(&saved);
    out->rounds = CPUBURN_ROUNDS;
    out->steal_mode = any_subtracted    ? CPUBURN_STEAL_SUBTRACTED
                      : any_excluded    ? CPUBURN_STEAL_EXCLUDED
                      : any_within_tick ? CPUBURN_STEAL_WITHIN_TICK
                                        : CPUBURN_STEAL_NONE;
    out->loops_per_ns = cpuburn_median(rates, CPUBURN_ROUNDS);
    if (!(out->loops_per_ns > 0)) {
        snprintf(err, errlen, "calibration measured no CPU time (steal took it all?)");
        return -1;
    }
    out->spread = (rates[CPUBURN_ROUNDS - 1] - rates[0]) / out->loops_per_ns;
    return 0;
}
