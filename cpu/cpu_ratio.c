/* cpu_ratio.c - the CPU scaling ratio and its 95% interval (see
 * cpu_ratio.h): scores from pooled kernel rounds, their trace-header list,
 * and the precision-weighted estimate.
 *
 * Must never: print, exit, or time anything but the kernels' rounds. */
#include "cpu_ratio.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpuburn.h"

/* Asymptotic standard error of a normal sample's CPU_RATIO_QUANTILE, in
 * units of sigma / sqrt(n): sqrt(0.1 * 0.9) / phi(z_0.1). */
#define CPU_RATIO_QUANTILE_SE 1.709

static int cpu_ratio_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double cpu_ratio_quantile(double *v, int n, double p)
{
    if (n <= 0 || !(p >= 0 && p <= 1))
        return NAN;
    qsort(v, (size_t)n, sizeof *v, cpu_ratio_cmp_double);
    double x = p * (n - 1);
    int i = (int)x;
    double f = x - i;
    return i + 1 < n ? v[i] * (1 - f) + v[i + 1] * f : v[i];
}

double cpu_ratio_robust_sd(const double *v, int n)
{
    double tmp[CPU_KERNELS_MAX_ROUNDS];
    if (n <= 0 || n > CPU_KERNELS_MAX_ROUNDS)
        return NAN;
    memcpy(tmp, v, (size_t)n * sizeof *v);
    double med = cpuburn_median(tmp, (size_t)n);
    for (int i = 0; i < n; i++)
        tmp[i] = fabs(v[i] - med);
    return 1.4826 * cpuburn_median(tmp, (size_t)n);
}

int cpu_ratio_measure(int cpu, int rounds, struct cpu_kernels_sample *pool, char *err,
                      size_t errlen)
{
    struct cpu_kernels_options opt = {.cpu = cpu, .rounds = rounds > 0 ? rounds : CPU_RATIO_ROUNDS};
    struct cpu_kernels_sample s;
    if (cpu_kernels_sample(&opt, CPU_KERNELS_COUNT, &s, err, errlen))
        return -1;
    if (pool->rounds <= 0) {
        pool->rounds = 0;
        pool->kernels = s.kernels;
        memcpy(pool->names, s.names, sizeof pool->names);
    }
    int take = CPU_KERNELS_MAX_ROUNDS - pool->rounds;
    if (take > s.rounds)
        take = s.rounds;
    for (int k = 0; k < pool->kernels; k++)
        for (int r = 0; r < take; r++) {
            pool->ns[k][pool->rounds + r] = s.ns[k][r];
            pool->switches[k][pool->rounds + r] = s.switches[k][r];
        }
    pool->rounds += take;
    return 0;
}

void cpu_ratio_scores_of(const struct cpu_kernels_sample *pool, struct cpu_ratio_scores *out)
{
    memset(out, 0, sizeof *out);
    int n = pool->rounds < CPU_KERNELS_MAX_ROUNDS ? pool->rounds : CPU_KERNELS_MAX_ROUNDS;
    out->rounds = n;
    if (n <= 0)
        return;
    for (int k = 0; k < pool->kernels && k < CPU_KERNELS_COUNT; k++) {
        double logs[CPU_KERNELS_MAX_ROUNDS], sorted[CPU_KERNELS_MAX_ROUNDS];
        for (int r = 0; r < n; r++)
            sorted[r] = logs[r] = log((double)(pool->ns[k][r] ? pool->ns[k][r] : 1));
        double se = CPU_RATIO_UNKNOWN_SE;
        if (n >= 3) {
            se = CPU_RATIO_QUANTILE_SE * cpu_ratio_robust_sd(logs, n) / sqrt((double)n);
            se = se > CPU_RATIO_SE_FLOOR ? se : CPU_RATIO_SE_FLOOR;
        }
        memcpy(out->name[k], pool->names[k], sizeof out->name[k]);
        out->name[k][sizeof out->name[k] - 1] = 0;
        out->seconds[k] = exp(cpu_ratio_quantile(sorted, n, CPU_RATIO_QUANTILE)) / 1e9;
        out->log_se[k] = se;
        out->n = k + 1;
    }
}

static void cpu_ratio_se_name(const char *kernel, char name[24])
{
    snprintf(name, 24, "%.20s%s", kernel, CPU_RATIO_SE_SUFFIX);
}

uint32_t cpu_ratio_header_scores(const struct cpu_ratio_scores *s, struct trace_cpu_score *out,
                                 uint32_t max)
{
    uint32_t at = 0;
    for (int k = 0; k < s->n && at < max; k++, at++) {
        memset(&out[at], 0, sizeof out[at]);
        snprintf(out[at].name, sizeof out[at].name, "%s", s->name[k]);
        out[at].seconds = s->seconds[k];
    }
    for (int k = 0; k < s->n && at < max; k++, at++) {
        memset(&out[at], 0, sizeof out[at]);
        cpu_ratio_se_name(s->name[k], out[at].name);
        out[at].seconds = s->seconds[k] * s->log_se[k];
    }
    return at;
}

int cpu_ratio_record(struct trace_cpu_score *out, uint32_t max, char *err, size_t errlen)
{
    struct cpu_kernels_sample pool;
    struct cpu_ratio_scores s;
    memset(&pool, 0, sizeof pool);
    if (cpu_ratio_measure(-1, CPU_RATIO_ROUNDS, &pool, err, errlen))
        return -1;
    cpu_ratio_scores_of(&pool, &s);
    return (int)cpu_ratio_header_scores(&s, out, max);
}

static const struct trace_cpu_score *cpu_ratio_find(const struct trace_cpu_score *list, uint32_t n,
                                                    const char *name)
{
    for (uint32_t i = 0; i < n; i++)
        if (!strncmp(list[i].name, name, sizeof list[i].name))
            return &list[i];
    return NULL;
}

/* The recorded side's log error of kernel `name` (score `seconds`): its
 * "~se" entry, or -1 when the recording has none. */
static double cpu_ratio_recorded_se(const struct trace_cpu_score *recorded, uint32_t n,
                                    const char *name, double seconds)
{
    char se_name[24];
    cpu_ratio_se_name(name, se_name);
    const struct trace_cpu_score *e = cpu_ratio_find(recorded, n, se_name);
    if (!e || !(e->seconds > 0) || !isfinite(e->seconds))
        return -1;
    double se = e->seconds / seconds;
    return se > CPU_RATIO_SE_FLOOR ? se : CPU_RATIO_SE_FLOOR;
}

/* Two-sided 95% quantile of Student's t with k - 1 degrees of freedom: the
 * spread of k kernels is itself estimated from those k (z for k == 1). */
static double cpu_ratio_t95(int k)
{
    static const double t[] = {1.960, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365};
    return k >= 1 && k <= (int)(sizeof t / sizeof t[0]) ? t[k - 1] : 1.960;
}

int cpu_ratio_estimate(const struct trace_cpu_score *recorded, uint32_t n,
                       const struct cpu_ratio_scores *target, struct cpu_ratio_estimate *est)
{
    double d[CPU_KERNELS_COUNT], w[CPU_KERNELS_COUNT];
    int k = 0, with_se = 0;
    memset(est, 0, sizeof *est);
    est->ratio = est->lo = est->hi = est->log_se = NAN;
    for (int t = 0; t < target->n && t < CPU_KERNELS_COUNT; t++) {
        const struct trace_cpu_score *r = cpu_ratio_find(recorded, n, target->name[t]);
        if (!r || !(r->seconds > 0) || !isfinite(r->seconds) || !(target->seconds[t] > 0) ||
            !isfinite(target->seconds[t]))
            continue;
        double rse = cpu_ratio_recorded_se(recorded, n, target->name[t], r->seconds);
        with_se += rse > 0;
        double se = hypot(rse > 0 ? rse : target->log_se[t], target->log_se[t]);
        d[k] = log(target->seconds[t] / r->seconds);
        w[k] = 1 / (se * se);
        k++;
    }
    if (!k)
        return 0;
    double sw = 0, swd = 0, q = 0;
    for (int i = 0; i < k; i++) {
        sw += w[i];
        swd += w[i] * d[i];
    }
    double m = swd / sw;
    for (int i = 0; i < k; i++)
        q += w[i] * (d[i] - m) * (d[i] - m);
    est->spread = k > 1 && q / (k - 1) > 1 ? sqrt(q / (k - 1)) : 1;
    est->log_se = hypot(est->spread / sqrt(sw), CPU_RATIO_DRIFT);
    est->ratio = exp(m);
    est->lo = exp(m - cpu_ratio_t95(k) * est->log_se);
    est->hi = exp(m + cpu_ratio_t95(k) * est->log_se);
    est->kernels = k;
    est->recorded_se = with_se == k;
    return k;
}
