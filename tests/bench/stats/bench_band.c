/* bench_band.c - times the statistics library on the benchmark's data:
 * reads N numbers (one per line), then times (1) the default-path KDE on
 * 1000 strips, (2) the similarity p of the two halves, (3) the bootstrap band
 * with R resamples, and prints one JSON line of seconds. Built and run by
 * bench_stats.sh; never part of the test suite (timings are not asserted). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "stats.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: bench_band FILE RESAMPLES\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "r");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    size_t cap = 1 << 20, n = 0;
    double *x = malloc(sizeof(double) * cap), v;
    while (fscanf(f, "%lf", &v) == 1) {
        if (n == cap)
            x = realloc(x, sizeof(double) * (cap *= 2));
        x[n++] = v;
    }
    fclose(f);
    char err[STATS_ERR_LEN];
    struct stats_kde_options ko;
    stats_kde_options_default(&ko);
    struct stats_band_options bo;
    stats_band_options_default(&bo);
    bo.resamples = atoi(argv[2]);
    double h;
    struct stats_grid g;
    double *d = malloc(sizeof(double) * 1000);
    double t0 = now();
    if (stats_bandwidth(x, n, &ko, &h, err) || stats_grid_for(x, n, NULL, 0, h, 1000, &g, err) ||
        stats_density(x, n, h, &g, ko.method, d, err))
        goto fail;
    double t1 = now();
    struct stats_similarity s;
    if (stats_similarity_compute(x, n / 2, x, n, &ko, &s, err))
        goto fail;
    double t2 = now();
    struct stats_band b;
    if (stats_band_compute(x, n, NULL, &ko, &bo, &b, err))
        goto fail;
    double t3 = now();
    printf("{\"n\": %zu, \"density_s\": %.6f, \"similarity_s\": %.6f, \"band_s\": %.6f, "
           "\"p\": %.9f, \"band_mid\": [%.9g, %.9g, %.9g]}\n",
           n, t1 - t0, t2 - t1, t3 - t2, s.p, b.low[500], b.density[500], b.high[500]);
    stats_similarity_free(&s);
    stats_band_free(&b);
    free(d);
    free(x);
    return 0;
fail:
    fprintf(stderr, "bench_band: %s\n", err);
    return 1;
}
