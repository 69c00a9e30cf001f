/* cpu_ratio.c - the CPU scaling ratio and its 95% interval (see
 * cpu_ratio.h): scores from pooled kernel rounds, their trace-header list,
 * and the precision-weighted estimate.
 *
 * Must never: print, exit, or time anything but the kernels' rounds. */
#include "cpu_ratio.h"

#include <math.h>
#include <stddef.h>
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

/* The value of "key\t: value" in the first processor block of cpuinfo
 * (the text up to its first empty line), trimmed, into out. */
static void cpu_ratio_cpuinfo_field(const char *cpuinfo, const char *key, char *out, size_t outlen)
{
    out[0] = 0;
    size_t klen = strlen(key);
    for (const char *line = cpuinfo; line && *line && *line != '\n';) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        const char *colon = memchr(line, ':', len);
        if (colon && colon > line + klen && !strncmp(line, key, klen) &&
            strspn(line + klen, " \t") == (size_t)(colon - line - (ptrdiff_t)klen)) {
            const char *v = colon + 1;
            while (v < line + len && *v == ' ')
                v++;
            size_t vlen = (size_t)(line + len - v);
            while (vlen && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t'))
                vlen--;
            snprintf(out, outlen, "%.*s", (int)vlen, v);
            return;
        }
        line = end ? end + 1 : NULL;
    }
}

void cpu_ratio_identity_of(const char *cpuinfo, char out[24])
{
    static const char *const keys[] = {"vendor_id", "cpu family", "model", "stepping",
                                       "model name"};
    uint64_t h = 14695981039346656037ull; /* FNV-1a 64 */
    int known = 0;
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        char v[256];
        cpu_ratio_cpuinfo_field(cpuinfo, keys[k], v, sizeof v);
        known += v[0] != 0;
        for (const char *c = v;; c++) { /* the value and its terminating NUL */
            h = (h ^ (uint8_t)*c) * 1099511628211ull;
            if (!*c)
                break;
        }
    }
    out[0] = 0;
    if (known >= 3) /* at least 3 of the 5 fields: else unknown */
        snprintf(out, 24, "%s%016llx", CPU_RATIO_ID_PREFIX, (unsigned long long)h);
}

void cpu_ratio_identify(struct cpu_ratio_scores *s)
{
    s->cpu_id[0] = 0;
    FILE *f = fopen("/proc/cpuinfo", "re");
    if (!f)
        return;
    char text[16384];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    cpu_ratio_identity_of(text, s->cpu_id);
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
    if (s->cpu_id[0] && at < max) {
        memset(&out[at], 0, sizeof out[at]);
        snprintf(out[at].name, sizeof out[at].name, "%s", s->cpu_id);
        at++;
    }
    return at;
}

int cpu_ratio_measure_here(int cpu, int rounds, struct cpu_ratio_scores *out, char *err,
                           size_t errlen)
{
    struct cpu_kernels_sample pool;
    memset(&pool, 0, sizeof pool);
    memset(out, 0, sizeof *out);
    if (cpu_ratio_measure(cpu, rounds, &pool, err, errlen))
        return -1;
    cpu_ratio_scores_of(&pool, out);
    cpu_ratio_identify(out);
    return 0;
}

int cpu_ratio_record(struct trace_cpu_score *out, uint32_t max, char *err, size_t errlen)
{
    struct cpu_ratio_scores s;
    if (cpu_ratio_measure_here(-1, CPU_RATIO_ROUNDS, &s, err, errlen))
        return -1;
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

/* The chain's log ratio and its standard error when both sides carry it
 * and the same CPU identity; 0 otherwise. */
static int cpu_ratio_chain(const struct trace_cpu_score *recorded, uint32_t n,
                           const struct cpu_ratio_scores *target, double *d, double *se)
{
    if (!target->cpu_id[0] || !cpu_ratio_find(recorded, n, target->cpu_id))
        return 0;
    for (int t = 0; t < target->n && t < CPU_KERNELS_COUNT; t++) {
        if (strcmp(target->name[t], CPU_KERNELS_CHAIN))
            continue;
        const struct trace_cpu_score *r = cpu_ratio_find(recorded, n, CPU_KERNELS_CHAIN);
        if (!r || !(r->seconds > 0) || !isfinite(r->seconds) || !(target->seconds[t] > 0) ||
            !isfinite(target->seconds[t]))
            return 0;
        double rse = cpu_ratio_recorded_se(recorded, n, CPU_KERNELS_CHAIN, r->seconds);
        *d = log(target->seconds[t] / r->seconds);
        *se = hypot(rse > 0 ? rse : target->log_se[t], target->log_se[t]);
        return 1;
    }
    return 0;
}

int cpu_ratio_estimate(const struct trace_cpu_score *recorded, uint32_t n,
                       const struct cpu_ratio_scores *target, struct cpu_ratio_estimate *est)
{
    double d[CPU_KERNELS_COUNT], w[CPU_KERNELS_COUNT];
    int k = 0, with_se = 0;
    memset(est, 0, sizeof *est);
    est->ratio = est->lo = est->hi = est->log_se = NAN;
    est->kernels_ratio = est->kernels_lo = est->kernels_hi = NAN;
    for (int t = 0; t < target->n && t < CPU_KERNELS_COUNT; t++) {
        if (!strcmp(target->name[t], CPU_KERNELS_CHAIN))
            continue;
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
    if (k) {
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
        est->ratio = est->kernels_ratio = exp(m);
        est->lo = est->kernels_lo = exp(m - cpu_ratio_t95(k) * est->log_se);
        est->hi = est->kernels_hi = exp(m + cpu_ratio_t95(k) * est->log_se);
        est->kernels = k;
        est->recorded_se = with_se == k;
    }
    double cd, cse;
    if (cpu_ratio_chain(recorded, n, target, &cd, &cse)) {
        est->basis = CPU_RATIO_BASIS_CHAIN;
        est->log_se = hypot(cse, CPU_RATIO_CHAIN_DRIFT);
        est->ratio = exp(cd);
        est->lo = exp(cd - 1.960 * est->log_se);
        est->hi = exp(cd + 1.960 * est->log_se);
        if (!k)
            est->spread = 1;
        return 1;
    }
    return k;
}
