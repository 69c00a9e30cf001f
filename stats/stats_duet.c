/* stats_duet.c - duet measurement statistics (stats_duet.h): geometric
 * means, §IV.A winsorization, and the §III.D bootstrap percentile interval
 * of the ratio of execution times. Must never print or keep state between
 * calls; the only randomness is the seeded stats_rng. */
#include "stats_duet.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "stats.h"
#include "stats_internal.h"

double stats_duet_gm(const double *x, size_t n)
{
    if (!n)
        return NAN;
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        if (!(x[i] > 0) || !isfinite(x[i]))
            return NAN;
        sum += log(x[i]);
    }
    return exp(sum / (double)n);
}

long stats_duet_winsorize(double *x, size_t n, double pct)
{
    if (n < 3 || !(pct > 0))
        return -1;
    size_t imin = 0, imax = 0;
    for (size_t i = 1; i < n; i++) {
        if (x[i] < x[imin])
            imin = i;
        if (x[i] > x[imax])
            imax = i;
    }
    /* the range of the others: second smallest and second largest */
    double lo2 = INFINITY, hi2 = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        if (i != imin && x[i] < lo2)
            lo2 = x[i];
        if (i != imax && x[i] > hi2)
            hi2 = x[i];
    }
    double f = pct / 100.0;
    /* how far out each extreme is, relative to the bound it is beyond */
    double out_hi = hi2 > 0 ? (x[imax] - hi2) / hi2 : 0;
    double out_lo = lo2 > 0 ? (lo2 - x[imin]) / lo2 : 0;
    if (out_hi > f && out_hi >= out_lo) {
        x[imax] = hi2;
        return (long)imax;
    }
    if (out_lo > f) {
        x[imin] = lo2;
        return (long)imin;
    }
    return -1;
}

static int stats_duet_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* numpy.percentile(..., method="linear") of sorted v at q in [0, 1]. */
static double stats_duet_quantile(const double *v, size_t n, double q)
{
    double pos = q * (double)(n - 1);
    size_t i = (size_t)floor(pos);
    if (i + 1 >= n)
        return v[n - 1];
    double t = pos - (double)i;
    return v[i] + t * (v[i + 1] - v[i]);
}

int stats_duet_interval(const double *run_gms, size_t nruns, int replicates, double cl,
                        uint64_t seed, struct stats_duet_ci *out, char *err)
{
    if (nruns < 2) {
        snprintf(err, STATS_ERR_LEN, "%zu run gms: the bootstrap needs at least 2", nruns);
        return -1;
    }
    if (replicates < 100 || !(cl > 0 && cl < 1)) {
        snprintf(err, STATS_ERR_LEN, "replicates %d, confidence %g: need >= 100 and 0 < cl < 1",
                 replicates, cl);
        return -1;
    }
    double *logs = malloc(nruns * sizeof *logs);
    double *rep = malloc((size_t)replicates * sizeof *rep);
    if (!logs || !rep) {
        free(logs);
        free(rep);
        snprintf(err, STATS_ERR_LEN, "out of memory for %d replicates", replicates);
        return -1;
    }
    for (size_t i = 0; i < nruns; i++) {
        if (!(run_gms[i] > 0) || !isfinite(run_gms[i])) {
            snprintf(err, STATS_ERR_LEN, "run gm %zu is %g: ratios must be positive", i,
                     run_gms[i]);
            free(logs);
            free(rep);
            return -1;
        }
        logs[i] = log(run_gms[i]);
    }
    out->gms = stats_duet_gm(run_gms, nruns);
    struct stats_rng rng;
    stats_rng_seed(&rng, seed);
    for (int r = 0; r < replicates; r++) {
        double sum = 0;
        for (size_t i = 0; i < nruns; i++)
            sum += logs[stats_rng_index(&rng, nruns)];
        rep[r] = exp(sum / (double)nruns);
    }
    qsort(rep, (size_t)replicates, sizeof *rep, stats_duet_cmp);
    out->low = stats_duet_quantile(rep, (size_t)replicates, (1 - cl) / 2);
    out->high = stats_duet_quantile(rep, (size_t)replicates, (1 + cl) / 2);
    out->equal = out->low <= 1.0 && out->high >= 1.0;
    free(logs);
    free(rep);
    return 0;
}

void stats_duet_coins(uint64_t seed, unsigned char *out, size_t n)
{
    struct stats_rng rng;
    stats_rng_seed(&rng, seed);
    for (size_t i = 0; i < n; i++)
        out[i] = (unsigned char)(stats_rng_next(&rng) >> 63);
}

void stats_duet_balanced(uint64_t seed, unsigned char *out, size_t n)
{
    struct stats_rng rng;
    stats_rng_seed(&rng, seed);
    for (size_t i = 0; i < n; i++)
        out[i] = i < n / 2 ? 1 : 0;
    if (n % 2)
        out[n - 1] = (unsigned char)(stats_rng_next(&rng) >> 63);
    for (size_t i = n; i > 1; i--) { /* Fisher-Yates */
        size_t j = stats_rng_index(&rng, i);
        unsigned char t = out[i - 1];
        out[i - 1] = out[j];
        out[j] = t;
    }
}
