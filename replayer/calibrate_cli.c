/* calibrate_cli.c - `preplay calibrate`: calibrates the CPU burn on one
 * core and runs the CPU benchmark kernels, printing loops/ns, the steal
 * seen and the kernel scores (text, or JSON with --json).
 *
 * Must never: report a rate measured while steal was unaccounted for
 * without saying so (the steal mode is always printed). */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replayer_cli.h"
#include "cpu_kernels.h"
#include "cpu_ratio.h"
#include "cpuburn.h"
#include "trace_file.h"

static const char calibrate_usage[] =
    "usage: preplay calibrate [--json] [--cpu N] [--no-kernels] [--ms MS] [--against TRACE]\n"
    "Calibrates the replayer's CPU burn (busy-loop iterations per ns of thread\n"
    "CPU time) on one core, excluding hypervisor steal on that core, and runs\n"
    "the CPU benchmark kernels whose times give the CPU scaling ratio.\n\n"
    "      --json        machine-readable output\n"
    "      --cpu N       core to run on (default: the current one)\n"
    "      --no-kernels  calibrate only, do not run the benchmark kernels\n"
    "      --ms MS       CPU time spent calibrating (default 300, 20-60000)\n"
    "      --against TRACE  also print the CPU scaling ratio of this machine to the\n"
    "                    one TRACE was recorded on, as `run` measures it (the\n"
    "                    kernels' 0.1 quantiles of 11 rounds; the burn loop on the\n"
    "                    same CPU)\n";

static int calibrate_parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* Kernel scores from a trace header. Returns the count (> 0), or -1 with
 * the reason printed. */
static int calibrate_read_scores(const char *path, struct trace_cpu_score *out)
{
    char err[512];
    struct trace_reader *r = trace_reader_open(path, NULL, err, sizeof err);
    if (!r) {
        fprintf(stderr, "preplay calibrate: %s\n", err);
        return -1;
    }
    const struct trace_header *h = trace_reader_header(r);
    uint32_t n = h->ncpu_scores < TRACE_MAX_CPU_SCORES ? h->ncpu_scores : TRACE_MAX_CPU_SCORES;
    memcpy(out, h->cpu_scores, n * sizeof *out);
    trace_reader_close(r);
    if (!n) {
        fprintf(stderr,
                "preplay calibrate: %s: no CPU scores in the trace header (recorded with "
                "--no-cpu-scores?)\n",
                path);
        return -1;
    }
    return (int)n;
}

/* The ratio to `recorded` as `run` measures it (cpu_ratio.h) on core
 * `cpu`: scores[] gets the 0.1 quantiles (CPU_KERNELS_COUNT). Returns the
 * scores, or -1 with the reason printed. */
static int calibrate_against(int cpu, const char *against, const struct trace_cpu_score *recorded,
                             int nrecorded, struct trace_cpu_score *scores,
                             struct cpu_ratio_estimate *est)
{
    struct cpu_ratio_scores here;
    char err[256];
    if (cpu_ratio_measure_here(cpu, 0, &here, err, sizeof err)) {
        fprintf(stderr, "preplay calibrate: %s\n", err);
        return -1;
    }
    for (int i = 0; i < here.n; i++) {
        memset(&scores[i], 0, sizeof scores[i]);
        snprintf(scores[i].name, sizeof scores[i].name, "%s", here.name[i]);
        scores[i].seconds = here.seconds[i];
    }
    if (!cpu_ratio_estimate(recorded, (uint32_t)nrecorded, &here, est) || !isfinite(est->ratio)) {
        fprintf(stderr, "preplay calibrate: %s: no CPU kernel in common with this build\n",
                against);
        return -1;
    }
    return here.n;
}

/* The ratio's line, or its JSON keys into o. */
static void calibrate_print_ratio(const char *against, const struct cpu_ratio_estimate *est,
                                  json_t *o)
{
    const char *basis = est->basis == CPU_RATIO_BASIS_CHAIN ? "chain" : "kernels";
    if (o) {
        json_object_set_new(o, "cpu_ratio", json_real(est->ratio));
        json_object_set_new(o, "cpu_ratio_ci", json_pack("[f, f]", est->lo, est->hi));
        json_object_set_new(o, "cpu_ratio_basis", json_string(basis));
        if (isfinite(est->kernels_ratio))
            json_object_set_new(o, "kernels_ratio", json_real(est->kernels_ratio));
        return;
    }
    printf("cpu ratio (this machine / %s): %.4f [%.4f, %.4f] (95%%; %s)\n", against, est->ratio,
           est->lo, est->hi,
           est->basis == CPU_RATIO_BASIS_CHAIN ? "the same CPU: the burn loop's" : "the kernels'");
    if (est->basis == CPU_RATIO_BASIS_CHAIN && isfinite(est->kernels_ratio))
        printf("kernels' ratio beside it: %.4f [%.4f, %.4f]\n", est->kernels_ratio, est->kernels_lo,
               est->kernels_hi);
}

int cmd_calibrate(int argc, char **argv)
{
    static const struct option longopts[] = {{"json", no_argument, 0, 'j'},
                                             {"cpu", required_argument, 0, 'c'},
                                             {"no-kernels", no_argument, 0, 'k'},
                                             {"ms", required_argument, 0, 'm'},
                                             {"against", required_argument, 0, 'a'},
                                             {"help", no_argument, 0, 'h'},
                                             {0, 0, 0, 0}};
    int json = 0, kernels = 1;
    long cpu = -1, ms = 300;
    const char *against = NULL;
    int opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'j':
            json = 1;
            break;
        case 'c':
            if (calibrate_parse_long(optarg, 0, CPU_SETSIZE - 1, &cpu)) {
                fprintf(stderr, "preplay calibrate: bad --cpu '%s' (a core number)\n", optarg);
                return 2;
            }
            break;
        case 'k':
            kernels = 0;
            break;
        case 'm':
            if (calibrate_parse_long(optarg, 20, 60000, &ms)) {
                fprintf(stderr, "preplay calibrate: bad --ms '%s' (20-60000)\n", optarg);
                return 2;
            }
            break;
        case 'a':
            against = optarg;
            break;
        case 'h':
            printf("%s", calibrate_usage);
            return 0;
        default:
            fprintf(stderr, "%s", calibrate_usage);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "preplay calibrate: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (cpu >= 0) {
        cpu_set_t allowed;
        if (sched_getaffinity(0, sizeof allowed, &allowed) == 0 && !CPU_ISSET((int)cpu, &allowed)) {
            fprintf(stderr, "preplay calibrate: --cpu %ld: not a core this process may run on\n",
                    cpu);
            return 2;
        }
    }

    if (against && !kernels) {
        fprintf(stderr, "preplay calibrate: --against needs the kernels (drop --no-kernels)\n");
        return 2;
    }
    struct trace_cpu_score recorded[TRACE_MAX_CPU_SCORES];
    int nrecorded = 0;
    if (against && (nrecorded = calibrate_read_scores(against, recorded)) < 0)
        return 1;

    struct cpuburn_calibration cal;
    char err[256];
    if (cpuburn_calibrate(&cal, (int)cpu, (uint64_t)ms * 1000000ull, err, sizeof err)) {
        fprintf(stderr, "preplay calibrate: %s\n", err);
        return 1;
    }
    struct trace_cpu_score scores[CPU_KERNELS_COUNT];
    struct cpu_ratio_estimate est;
    int nscores = 0;
    if (against &&
        (nscores = calibrate_against(cal.cpu, against, recorded, nrecorded, scores, &est)) < 0)
        return 1;
    if (kernels && !against &&
        (nscores = cpu_kernels_run_on(cal.cpu, scores, CPU_KERNELS_COUNT, err, sizeof err)) < 0) {
        fprintf(stderr, "preplay calibrate: %s\n", err);
        return 1;
    }

    if (json) {
        json_t *o = json_object();
        json_object_set_new(o, "cpu", json_integer(cal.cpu));
        json_object_set_new(o, "loops_per_ns", json_real(cal.loops_per_ns));
        json_object_set_new(o, "ns_per_loop", json_real(1.0 / cal.loops_per_ns));
        json_object_set_new(o, "rounds", json_integer((json_int_t)cal.rounds));
        json_object_set_new(o, "spread", json_real(cal.spread));
        json_object_set_new(o, "cpu_ns", json_integer((json_int_t)cal.cpu_ns));
        json_object_set_new(o, "wall_ns", json_integer((json_int_t)cal.wall_ns));
        json_object_set_new(o, "steal_ns", json_integer((json_int_t)cal.steal_ns));
        json_object_set_new(o, "steal_mode", json_string(cpuburn_steal_mode_name(cal.steal_mode)));
        json_object_set_new(o, "clock_read_ns", json_integer((json_int_t)cal.clock_read_ns));
        json_t *arr = json_array();
        for (int i = 0; i < nscores; i++) {
            json_t *s = json_object();
            json_object_set_new(s, "name", json_string(scores[i].name));
            json_object_set_new(s, "seconds", json_real(scores[i].seconds));
            json_array_append_new(arr, s);
        }
        json_object_set_new(o, "scores", arr);
        if (against)
            calibrate_print_ratio(against, &est, o);
        char *text = json_dumps(o, JSON_INDENT(2) | JSON_REAL_PRECISION(9));
        json_decref(o);
        if (!text) {
            fprintf(stderr, "preplay calibrate: out of memory\n");
            return 1;
        }
        printf("%s\n", text);
        free(text);
        return 0;
    }
    printf("cpu %d: %.4f loops/ns (%.4f ns/loop), median of %llu rounds, spread %.2f%%\n", cal.cpu,
           cal.loops_per_ns, 1.0 / cal.loops_per_ns, (unsigned long long)cal.rounds,
           cal.spread * 100);
    printf("calibration: %.1f ms thread CPU, %.1f ms wall, steal seen %.1f ms (%s)\n",
           (double)cal.cpu_ns / 1e6, (double)cal.wall_ns / 1e6, (double)cal.steal_ns / 1e6,
           cpuburn_steal_mode_name(cal.steal_mode));
    printf("thread CPU clock read: %llu ns (a burn reads none)\n",
           (unsigned long long)cal.clock_read_ns);
    if (nscores) {
        printf("kernels (thread CPU seconds on cpu %d, %s):\n", cal.cpu,
               against ? "0.1 quantile of 11 rounds, as run measures" : "median of 5 rounds");
        for (int i = 0; i < nscores; i++)
            printf("  %-16s %.4f\n", scores[i].name, scores[i].seconds);
    }
    if (against)
        calibrate_print_ratio(against, &est, NULL);
    return 0;
}
