/* bench_cpuburn.c - fidelity of the replayer's calibrated CPU burn: for
 * burns of d = 50 us .. 10 ms on one pinned core, the distribution of the
 * wall time and thread CPU time a cpuburn_run(d) takes, relative to d
 * (target: d +- 2% for d >= 50 us on an idle core), and the per-burn
 * overhead against the bare loop measured in the same run (baseline).
 *
 * usage: bench_cpuburn [--quick] [--cpu N]
 * Prints one line per d and exits 1 if the median wall time is off by more
 * than 2% (never run the full bench on a loaded machine and trust it).
 * --quick (what ctest runs) judges what a loaded machine cannot blur: the
 * median thread CPU time a burn consumed, which must be within
 * BENCH_QUICK_CPU_TOL of d for every d (measured under load average ~5 on
 * this 2-core VM: 0.964 .. 1.004 in 10 runs of 5 sizes; a calibration or a
 * loop 1.5x off lands far outside). Wall time is printed, not judged there:
 * on a shared core it is 1 .. 3.5x d. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_sanitizer.h"
#include "cpuburn.h"

/* --quick: |median thread CPU time per burn / d - 1| must not exceed this
 * (ASan build: 0.89 .. 1.11 in 6 runs, the instrumented calibration loop
 * and burn differ; still far inside what a 1.5x error gives) */
#define BENCH_QUICK_CPU_TOL (BENCH_SANITIZED ? 0.25 : 0.10)

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double pct(const double *sorted, int n, double p)
{
    int i = (int)(p * (n - 1) + 0.5);
    return sorted[i];
}

int main(int argc, char **argv)
{
    int quick = 0, cpu = -1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else if (!strcmp(argv[i], "--cpu") && i + 1 < argc)
            cpu = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_cpuburn [--quick] [--cpu N]\n");
            return 2;
        }
    }
    struct cpuburn_calibration cal;
    char err[256];
    if (cpuburn_calibrate(&cal, cpu, quick ? 60000000ull : 500000000ull, err, sizeof err)) {
        fprintf(stderr, "bench_cpuburn: %s\n", err);
        return 1;
    }
    struct cpuburn_affinity saved;
    if (cpuburn_pin(cal.cpu, &saved) < 0) {
        perror("bench_cpuburn: pin");
        return 1;
    }
    printf("calibration: cpu %d, %.4f loops/ns, spread %.2f%%, steal %.1f ms (%s), clock read "
           "%llu ns\n",
           cal.cpu, cal.loops_per_ns, cal.spread * 100, (double)cal.steal_ns / 1e6,
           cpuburn_steal_mode_name(cal.steal_mode), (unsigned long long)cal.clock_read_ns);

    /* per-burn overhead: cpuburn_run(0) and cpuburn_run(d) - spin(loops(d)) */
    enum { OVH = 20000 };
    uint64_t t0 = cpuburn_wall_ns();
    for (int i = 0; i < OVH; i++)
        cpuburn_run(&cal, 0);
    double empty_ns = (double)(cpuburn_wall_ns() - t0) / OVH;
    printf("per-burn overhead: cpuburn_run(0) %.1f ns\n", empty_ns);

    const uint64_t ds[] = {50000, 100000, 500000, 1000000, 10000000};
    int fails = 0;
    printf("%-9s %5s %9s %9s %9s %9s %9s %8s %9s %12s\n", "d", "n", "wall/d p5", "median", "p95",
           "cpu/d med", "bare/d", "in+-2%", quick ? "cpu ok?" : "wall ok?", "run-bare ns");
    for (size_t k = 0; k < sizeof ds / sizeof ds[0]; k++) {
        uint64_t d = ds[k];
        int n = (int)(quick ? 3000000 / d + 5 : 60000000 / d + 20);
        if (n > 2000)
            n = 2000;
        double *wall = malloc(sizeof(double) * (size_t)n);
        double *cpu_r = malloc(sizeof(double) * (size_t)n);
        double *bare = malloc(sizeof(double) * (size_t)n);
        if (!wall || !cpu_r || !bare)
            return 1;
        uint64_t loops = cpuburn_loops_for_ns(&cal, d);
        for (int i = 0; i < n; i++) {
            /* baseline: the bare loop for the same d, no wrapper */
            uint64_t b0 = cpuburn_wall_ns();
            cpuburn_spin(loops);
            bare[i] = (double)(cpuburn_wall_ns() - b0) / (double)d;
            uint64_t w0 = cpuburn_wall_ns();
            cpuburn_run(&cal, d);
            wall[i] = (double)(cpuburn_wall_ns() - w0) / (double)d;
        }
        for (int i = 0; i < n; i++) {
            uint64_t c0 = cpuburn_thread_cpu_ns();
            cpuburn_run(&cal, d);
            cpu_r[i] = (double)(cpuburn_thread_cpu_ns() - c0 - cal.clock_read_ns) / (double)d;
        }
        qsort(wall, (size_t)n, sizeof *wall, cmp_double);
        qsort(cpu_r, (size_t)n, sizeof *cpu_r, cmp_double);
        qsort(bare, (size_t)n, sizeof *bare, cmp_double);
        int within = 0;
        for (int i = 0; i < n; i++)
            within += wall[i] >= 0.98 && wall[i] <= 1.02;
        double med = pct(wall, n, 0.5), cpu_med = pct(cpu_r, n, 0.5);
        int ok = med >= 0.98 && med <= 1.02;
        if (quick) {
            /* the judged figure under load: CPU time, not wall time */
            ok = cpu_med >= 1 - BENCH_QUICK_CPU_TOL && cpu_med <= 1 + BENCH_QUICK_CPU_TOL;
        }
        fails += !ok;
        printf("%-9.3g %5d %9.4f %9.4f %9.4f %9.4f %9.4f %7.1f%% %9s %12.0f\n", (double)d / 1e9, n,
               pct(wall, n, 0.05), med, pct(wall, n, 0.95), cpu_med, pct(bare, n, 0.5),
               100.0 * within / n, ok ? "ok" : "OFF", (med - pct(bare, n, 0.5)) * (double)d);
        free(wall);
        free(cpu_r);
        free(bare);
    }
    cpuburn_unpin(&saved);
    if (quick)
        printf("quick verdict (median cpu/d within +-%.0f%% for every d): %s\n",
               100 * BENCH_QUICK_CPU_TOL, fails ? "FAIL" : "PASS");
    return fails ? 1 : 0;
}
