/* stats_unit_test.c - unit tests of stats/: FFT against a direct DFT,
 * bandwidth rules, binned KDE against exact sums (the stated error bound),
 * similarity edge cases, bootstrap band coverage on a known distribution,
 * the PT4Cloud state machine (standard, short intervals, validation, labels,
 * refusals), hourly sampling and the sample reader. Values are compared with
 * independent computations, never with numbers copied from the code. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "stats.h"
#include "stats_input.h"
#include "stats_internal.h"

static double *normal_samples(uint64_t seed, size_t n, double mean, double sd)
{
    struct stats_rng r;
    stats_rng_seed(&r, seed);
    double *x = malloc(sizeof(double) * n);
    for (size_t i = 0; i < n; i++)
        x[i] = mean + sd * stats_rng_normal(&r);
    return x;
}

static void test_fft_matches_dft(void **state)
{
    (void)state;
    size_t n = 64;
    struct stats_fft f;
    assert_int_equal(stats_fft_init(&f, n), 0);
    double re[64], im[64], re0[64], im0[64];
    struct stats_rng r;
    stats_rng_seed(&r, 7);
    for (size_t i = 0; i < n; i++) {
        re[i] = re0[i] = stats_rng_uniform(&r) - 0.5;
        im[i] = im0[i] = stats_rng_uniform(&r) - 0.5;
    }
    stats_fft_run(&f, re, im, 0);
    for (size_t k = 0; k < n; k++) {
        double sr = 0, si = 0;
        for (size_t t = 0; t < n; t++) {
            double a = -2 * M_PI * (double)(k * t) / (double)n;
            sr += re0[t] * cos(a) - im0[t] * sin(a);
            si += re0[t] * sin(a) + im0[t] * cos(a);
        }
        assert_true(fabs(sr - re[k]) < 1e-12 && fabs(si - im[k]) < 1e-12);
    }
    stats_fft_run(&f, re, im, 1);
    for (size_t i = 0; i < n; i++)
        assert_true(fabs(re[i] / (double)n - re0[i]) < 1e-14);
    stats_fft_free(&f);
}

static void test_bandwidth_rules(void **state)
{
    (void)state;
    double x[] = {1, 2, 3, 4, 5};
    struct stats_kde_options o;
    stats_kde_options_default(&o);
    char err[STATS_ERR_LEN];
    double h;
    assert_int_equal(stats_bandwidth(x, 5, &o, &h, err), 0);
    assert_true(fabs(h - sqrt(2.5) * pow(5, -0.2)) < 1e-15);
    o.bandwidth_rule = STATS_BW_SILVERMAN;
    assert_int_equal(stats_bandwidth(x, 5, &o, &h, err), 0);
    assert_true(fabs(h - sqrt(2.5) * pow(5 * 3.0 / 4, -0.2)) < 1e-15);
    o.bandwidth_rule = STATS_BW_FIXED;
    o.bandwidth = 0.25;
    assert_int_equal(stats_bandwidth(x, 5, &o, &h, err), 0);
    assert_true(h == 0.25);
    o.bandwidth = -1;
    assert_int_equal(stats_bandwidth(x, 5, &o, &h, err), -1);
    assert_non_null(strstr(err, "bandwidth"));
    stats_kde_options_default(&o);
    assert_int_equal(stats_bandwidth(x, 1, &o, &h, err), -1);
    assert_non_null(strstr(err, "at least 2"));
    double same[] = {3, 3, 3};
    assert_int_equal(stats_bandwidth(same, 3, &o, &h, err), 0);
    assert_true(h == 0);
    double bad[] = {1, NAN};
    assert_int_equal(stats_bandwidth(bad, 2, &o, &h, err), -1);
    assert_non_null(strstr(err, "sample 1"));
}

/* Mixture samples that stress the binned path: bimodal and heavy-tailed. */
static double *mixture_samples(uint64_t seed, size_t n)
{
    struct stats_rng r;
    stats_rng_seed(&r, seed);
    double *x = malloc(sizeof(double) * n);
    for (size_t i = 0; i < n; i++) {
        double u = stats_rng_uniform(&r);
        if (u < 0.6)
            x[i] = 10 + stats_rng_normal(&r);
        else if (u < 0.98)
            x[i] = 16 + 0.5 * stats_rng_normal(&r);
        else
            x[i] = 10 * exp(1.5 * stats_rng_normal(&r)); /* rare, far outliers */
    }
    return x;
}

static void test_binned_matches_exact(void **state)
{
    (void)state;
    char err[STATS_ERR_LEN];
    struct stats_kde_options o;
    stats_kde_options_default(&o);
    size_t sizes[] = {50, 3000, 40000};
    for (int s = 0; s < 3; s++) {
        for (int kind = 0; kind < 2; kind++) {
            size_t n = sizes[s];
            double *x = kind ? mixture_samples(11 + (uint64_t)s, n)
                             : normal_samples(5 + (uint64_t)s, n, 100, 7);
            double h;
            struct stats_grid g;
            assert_int_equal(stats_bandwidth(x, n, &o, &h, err), 0);
            assert_int_equal(stats_grid_for(x, n, NULL, 0, h, 1000, &g, err), 0);
            double exact[1000], fast[1000];
            assert_int_equal(stats_density(x, n, h, &g, STATS_METHOD_EXACT, exact, err), 0);
            assert_int_equal(stats_density(x, n, h, &g, STATS_METHOD_BINNED, fast, err), 0);
            double max = 0, maxerr = 0, mass = 0;
            for (int i = 0; i < 1000; i++) {
                max = exact[i] > max ? exact[i] : max;
                double e = fabs(fast[i] - exact[i]);
                maxerr = e > maxerr ? e : maxerr;
                mass += fast[i] * g.width;
            }
            /* The stated bound (stats_kde.c): 6.7e-8 of the largest density
             * a kernel can reach, phi(0)/h; the measured error is smaller
             * still, so also check it against the estimate's own maximum. */
            assert_true(maxerr <= 6.7e-8 * 0.3989422804014327 / h);
            assert_true(maxerr <= 1e-7 * max);
            assert_true(fabs(mass - 1) < 1e-12);
            /* The similarity p of the two halves: binned within 1e-6 of exact
             * (the oracle tolerance). */
            struct stats_kde_options oe = o, ob = o;
            oe.method = STATS_METHOD_EXACT;
            ob.method = STATS_METHOD_BINNED;
            struct stats_similarity se, sb;
            assert_int_equal(
                stats_similarity_compute(x, n / 2, x + n / 2, n - n / 2, &oe, &se, err), 0);
            assert_int_equal(
                stats_similarity_compute(x, n / 2, x + n / 2, n - n / 2, &ob, &sb, err), 0);
            assert_true(se.p > 0.001 && se.p < 1);
            assert_true(fabs(se.p - sb.p) <= 1e-6);
            assert_true(fabs(se.kl12 - sb.kl12) <= 1e-6 && fabs(se.kl21 - sb.kl21) <= 1e-6);
            stats_similarity_free(&se);
            stats_similarity_free(&sb);
            free(x);
        }
    }
}

static void test_similarity_and_edges(void **state)
{
    (void)state;
    char err[STATS_ERR_LEN];
    struct stats_kde_options o;
    stats_kde_options_default(&o);
    struct stats_similarity s, t;
    double *a = normal_samples(1, 400, 10, 1), *b = normal_samples(2, 500, 10.3, 1.2);
    assert_int_equal(stats_similarity_compute(a, 400, a, 400, &o, &s, err), 0);
    assert_true(fabs(s.p - 1) < 1e-15 && s.kl12 == 0);
    stats_similarity_free(&s);
    assert_int_equal(stats_similarity_compute(a, 400, b, 500, &o, &s, err), 0);
    assert_int_equal(stats_similarity_compute(b, 500, a, 400, &o, &t, err), 0);
    assert_true(s.p > 0 && s.p < 1);
    assert_true(fabs(s.p - t.p) < 1e-12);
    assert_true(fabs(s.kl12 - t.kl21) < 1e-12);
    assert_true(fabs(s.p - exp2(-s.kl12 - s.kl21)) < 1e-15);
    /* KL on the grid, recomputed here from the densities. */
    double kl = 0;
    for (int i = 0; i < s.grid.strips; i++)
        kl += s.d1[i] * log(s.d1[i] / s.d2[i]) / log(2) * s.grid.width;
    assert_true(fabs(kl - s.kl12) < 1e-12);
    stats_similarity_free(&s);
    stats_similarity_free(&t);

    double one[] = {5, 5, 5}, other[] = {6, 6}, spread[] = {4, 5, 6, 5.5};
    assert_int_equal(stats_similarity_compute(one, 3, one, 2, &o, &s, err), 0);
    assert_true(s.p == 1 && s.note && !s.d1);
    assert_int_equal(stats_similarity_compute(one, 3, other, 2, &o, &s, err), 0);
    assert_true(s.p == 0 && s.note);
    assert_int_equal(stats_similarity_compute(one, 3, spread, 4, &o, &s, err), 0);
    assert_true(s.note && s.h1 == s.h2 && s.p > 0 && s.p < 1);
    stats_similarity_free(&s);
    assert_int_equal(stats_similarity_compute(one, 1, spread, 4, &o, &s, err), -1);
    assert_non_null(strstr(err, "at least 2"));
    free(a);
    free(b);
}

/* The density of N(0, 1 + h^2) is what a KDE of N(0,1) samples estimates:
 * a band at CL 0.99 should cover it at nearly every strip of the bulk. */
static void test_band_coverage(void **state)
{
    (void)state;
    char err[STATS_ERR_LEN];
    struct stats_kde_options o;
    stats_kde_options_default(&o);
    struct stats_band_options bo;
    stats_band_options_default(&bo);
    bo.resamples = 300;
    size_t covered = 0, total = 0, pct_covered = 0, pct_total = 0;
    double true_pct[STATS_NPCT] = {0, -1.6448536269514722, 1.6448536269514722, 2.3263478740408408};
    for (int rep = 0; rep < 8; rep++) {
        size_t n = rep % 2 ? 3000 : 60000; /* index bootstrap and Poisson bootstrap */
        double *x = normal_samples(100 + (uint64_t)rep, n, 0, 1);
        struct stats_band b;
        bo.seed = (uint64_t)rep;
        assert_int_equal(stats_band_compute(x, n, NULL, &o, &bo, &b, err), 0);
        double sd = sqrt(1 + b.h * b.h), mass = 0;
        double truth[1000];
        for (int i = 0; i < b.grid.strips; i++) {
            double z = stats_grid_x(&b.grid, i) / sd;
            truth[i] = exp(-0.5 * z * z) / (sd * sqrt(2 * M_PI));
            mass += truth[i] * b.grid.width;
        }
        for (int i = 0; i < b.grid.strips; i++) {
            double xi = stats_grid_x(&b.grid, i);
            assert_true(b.low[i] <= b.high[i]);
            if (fabs(xi) > 2.5)
                continue;
            total++;
            double t = truth[i] / mass;
            covered += t >= b.low[i] && t <= b.high[i];
        }
        for (int k = 0; k < STATS_NPCT; k++) {
            pct_total++;
            pct_covered += true_pct[k] >= b.pct_low[k] && true_pct[k] <= b.pct_high[k];
            assert_true(b.pct_low[k] <= b.pct[k] + 0.05 && b.pct[k] - 0.05 <= b.pct_high[k]);
        }
        stats_band_free(&b);
        free(x);
    }
    double coverage = (double)covered / (double)total;
    print_message("band coverage of the smoothed truth: %.4f (%zu strips); percentiles %zu/%zu\n",
                  coverage, total, pct_covered, pct_total);
    assert_true(coverage >= 0.95);
    assert_true(pct_covered >= pct_total - 2);
}

static void test_band_reproducible(void **state)
{
    (void)state;
    char err[STATS_ERR_LEN];
    struct stats_kde_options o;
    stats_kde_options_default(&o);
    struct stats_band_options bo;
    stats_band_options_default(&bo);
    bo.resamples = 50;
    double *x = normal_samples(3, 800, 2, 0.5);
    struct stats_band a, b;
    assert_int_equal(stats_band_compute(x, 800, NULL, &o, &bo, &a, err), 0);
    assert_int_equal(stats_band_compute(x, 800, NULL, &o, &bo, &b, err), 0);
    assert_memory_equal(a.low, b.low, sizeof(double) * 1000);
    assert_memory_equal(a.high, b.high, sizeof(double) * 1000);
    stats_band_free(&b);
    bo.seed = 99;
    assert_int_equal(stats_band_compute(x, 800, NULL, &o, &bo, &b, err), 0);
    assert_true(memcmp(a.low, b.low, sizeof(double) * 1000) != 0);
    stats_band_free(&a);
    stats_band_free(&b);
    double same[] = {2, 2, 2};
    assert_int_equal(stats_band_compute(same, 3, NULL, &o, &bo, &a, err), -1);
    assert_non_null(strstr(err, "zero variance"));
    free(x);
}

static void test_poisson_moments(void **state)
{
    (void)state;
    struct stats_rng r;
    stats_rng_seed(&r, 42);
    double lambdas[] = {0.3, 4, 37.5, 1e4};
    for (int l = 0; l < 4; l++) {
        double sum = 0, sum2 = 0;
        int n = 200000;
        for (int i = 0; i < n; i++) {
            double k = stats_rng_poisson(&r, lambdas[l]);
            assert_true(k >= 0 && k == floor(k));
            sum += k;
            sum2 += k * k;
        }
        double mean = sum / n, var = sum2 / n - mean * mean;
        /* 6 standard errors of the mean and a 3% band on the variance. */
        assert_true(fabs(mean - lambdas[l]) < 6 * sqrt(lambdas[l] / n));
        assert_true(fabs(var / lambdas[l] - 1) < 0.03);
    }
}

/* ---- state machine ------------------------------------------------------------ */

static void test_machine_standard(void **state)
{
    (void)state;
    char err[STATS_ERR_LEN];
    struct stats_config cfg;
    stats_config_default(&cfg);
    struct stats_machine *m = stats_machine_new(&cfg, err);
    assert_non_null(m);
    struct stats_step st;
    /* Intervals whose mean drifts, then settles. */
    double means[] = {10, 13, 10, 11.5, 11.5, 11.5, 11.5, 11.5};
    int stopped_at = 0;
    for (int i = 0; i < 8 && !stopped_at; i++) {
        double *x = normal_samples(200 + (uint64_t)i, 2000, means[i], 1);
        assert_int_equal(stats_machine_feed(m, x, 2000, NULL, 0, &st, err), 0);
        assert_int_equal(st.interval, i + 1);
        if (i == 0) {
            assert_false(st.compared);
            assert_int_equal(st.action, STATS_CONTINUE);
        } else {
            assert_true(st.compared);
            assert_true(st.stable == (st.p >= 0.9));
            assert_int_equal(st.action, st.stable ? STATS_STOP : STATS_CONTINUE);
            if (!st.stable)
                assert_string_equal(st.held_open_by, "(overall)");
        }
        if (i == 1)
            assert_false(st.stable); /* a 3-sigma jump cannot look stable */
        if (st.action == STATS_STOP)
            stopped_at = i + 1;
        free(x);
    }
    assert_true(stopped_at >= 3);
    const double *v;
    size_t n;
    assert_int_equal(stats_machine_final_samples(m, NULL, &v, &n), 0);
    assert_int_equal(n, (size_t)stopped_at * 2000);
    assert_int_equal(stats_machine_reference_samples(m, NULL, &v, &n), 0);
    assert_int_equal(n, (size_t)(stopped_at - 1) * 2000);
    double y = 1;
    assert_int_equal(stats_machine_feed(m, &y, 1, NULL, 0, &st, err), -1);
    assert_non_null(strstr(err, "already stopped"));
    stats_machine_free(m);
}

static void test_machine_labels_hold_open(void **state)
{
    (void)state;
    char err[STATS_ERR_LEN];
    struct stats_config cfg;
    stats_config_default(&cfg);
    cfg.min_samples = 50;
    struct stats_machine *m = stats_machine_new(&cfg, err);
    struct stats_step st;
    /* "fast" dominates the overall distribution and is stationary; "slow"
     * (5% of requests) doubles in its second interval. "rare" never reaches
     * min_samples and is not judged. */
    for (int i = 0; i < 2; i++) {
        double *fast = normal_samples(300 + (uint64_t)i, 3800, 5, 0.5);
        double *slow = normal_samples(400 + (uint64_t)i, 200, i ? 40 : 20, 2);
        double rare[3] = {1, 2, 3};
        double *all = malloc(sizeof(double) * 4003);
        memcpy(all, fast, sizeof(double) * 3800);
        memcpy(all + 3800, slow, sizeof(double) * 200);
        memcpy(all + 4000, rare, sizeof rare);
        struct stats_label_samples labels[] = {
            {"fast", fast, 3800}, {"slow", slow, 200}, {"rare", rare, 3}};
        assert_int_equal(stats_machine_feed(m, all, 4003, labels, 3, &st, err), 0);
        free(fast);
        free(slow);
        free(all);
    }
    assert_true(st.compared);
    assert_int_equal(st.labels_judged, 2);
    assert_false(st.stable);
    assert_string_equal(st.held_open_by, "slow");
    assert_true(st.min_p < st.p);
    const double *v;
    size_t n;
    assert_int_equal(stats_machine_final_samples(m, "slow", &v, &n), 0);
    assert_int_equal(n, 400);
    assert_int_equal(stats_machine_final_samples(m, "nope", &v, &n), -1);
    stats_machine_free(m);
}

static void test_machine_short_intervals(void **state)
{
    (void)state;
    char err[STATS_ERR_LEN];
    struct stats_config cfg;
    stats_config_default(&cfg);
    cfg.short_intervals = 1;
    cfg.interval = 3600;
    cfg.max_interval = 4 * 3600;
    struct stats_machine *m = stats_machine_new(&cfg, err);
    struct stats_step st;
    double *x;
    /* Round 1 (1 h): unstable -> lengthen to 2 h. */
    x = normal_samples(1, 1000, 10, 1);
    assert_int_equal(stats_machine_feed(m, x, 1000, NULL, 0, &st, err), 0);
    assert_int_equal(st.action, STATS_CONTINUE);
    free(x);
    x = normal_samples(2, 1000, 14, 1);
    assert_int_equal(stats_machine_feed(m, x, 1000, NULL, 0, &st, err), 0);
    assert_int_equal(st.action, STATS_LENGTHEN);
    assert_true(st.next_interval_length == 7200 && stats_machine_interval_length(m) == 7200);
    free(x);
    /* Round 2 (2 h): stable -> validate; validation fails -> lengthen to the cap. */
    for (int i = 0; i < 2; i++) {
        x = normal_samples(10 + (uint64_t)i, 2000, 10, 1);
        assert_int_equal(stats_machine_feed(m, x, 2000, NULL, 0, &st, err), 0);
        free(x);
    }
    assert_int_equal(st.action, STATS_VALIDATE);
    for (int i = 0; i < 2; i++) {
        x = normal_samples(20 + (uint64_t)i, 2000, 12, 1);
        assert_int_equal(stats_machine_feed(m, x, 2000, NULL, 0, &st, err), 0);
        free(x);
    }
    assert_true(st.validation && st.compared);
    assert_int_equal(st.action, STATS_LENGTHEN);
    assert_true(stats_machine_interval_length(m) == 4 * 3600);
    /* At the cap: the standard method (stable pair -> stop, no validation). */
    for (int i = 0; i < 2; i++) {
        x = normal_samples(30 + (uint64_t)i, 4000, 11, 1);
        assert_int_equal(stats_machine_feed(m, x, 4000, NULL, 0, &st, err), 0);
        free(x);
    }
    assert_int_equal(st.action, STATS_STOP);
    const double *v;
    size_t n;
    stats_machine_final_samples(m, NULL, &v, &n);
    assert_int_equal(n, 8000); /* the earlier rounds were discarded */
    stats_machine_free(m);

    /* A validated stop reports S1 u S2, compared against S3 u S4. */
    m = stats_machine_new(&cfg, err);
    for (int i = 0; i < 4; i++) {
        x = normal_samples(50 + (uint64_t)i, 1500, 3, 0.2);
        assert_int_equal(stats_machine_feed(m, x, 1500, NULL, 0, &st, err), 0);
        free(x);
        assert_int_equal(st.action, i == 1 ? STATS_VALIDATE : i == 3 ? STATS_STOP : STATS_CONTINUE);
    }
    stats_machine_final_samples(m, NULL, &v, &n);
    assert_int_equal(n, 3000);
    stats_machine_reference_samples(m, NULL, &v, &n);
    assert_int_equal(n, 3000);
    stats_machine_free(m);
}

static void test_machine_refusals_and_hourly(void **state)
{
    (void)state;
    char err[STATS_ERR_LEN];
    struct stats_config cfg;
    stats_config_default(&cfg);
    cfg.p0 = 1.5;
    assert_null(stats_machine_new(&cfg, err));
    assert_non_null(strstr(err, "p0"));
    stats_config_default(&cfg);
    cfg.hourly_portion = 0.5;
    struct stats_machine *m = stats_machine_new(&cfg, err);
    struct stats_step st;
    assert_int_equal(stats_machine_feed(m, NULL, 0, NULL, 0, &st, err), -1);
    assert_non_null(strstr(err, "no samples"));
    double bad[] = {1, -2};
    assert_int_equal(stats_machine_feed(m, bad, 2, NULL, 0, &st, err), -1);
    assert_non_null(strstr(err, "-2"));
    double nan_values[] = {1, NAN};
    assert_int_equal(stats_machine_feed(m, nan_values, 2, NULL, 0, &st, err), -1);
    double ok[] = {1, 2, 3};
    struct stats_label_samples unnamed = {"", ok, 3};
    assert_int_equal(stats_machine_feed(m, ok, 3, &unnamed, 1, &st, err), -1);
    /* Nothing refused was kept: the next good interval is interval 1. */
    assert_int_equal(stats_machine_feed(m, ok, 3, NULL, 0, &st, err), 0);
    assert_int_equal(st.interval, 1);
    assert_true(stats_machine_should_run(m, 0));
    assert_true(stats_machine_should_run(m, 1799));
    assert_false(stats_machine_should_run(m, 1800));
    assert_true(stats_machine_should_run(m, 7200 + 10));
    assert_false(stats_machine_should_run(m, 3 * 3600 - 1));
    stats_machine_free(m);
}

/* ---- sample reader ------------------------------------------------------------- */

static void test_input_csv(void **state)
{
    (void)state;
    const char *text = "# comment\nlabel,value,interval\nlogin,1.5,0\nsearch,2.5,0\n"
                       "login,nan,1\nlogin,-1,1\nsearch,abc,1\nsearch,3,1.5\nlogin,4,1\n"
                       "\nsearch,5\r\n";
    struct stats_input in;
    char err[STATS_ERR_LEN];
    FILE *diag = tmpfile();
    assert_int_equal(stats_input_parse(text, strlen(text), "t.csv", 0, diag, 10, &in, err), 0);
    assert_int_equal(in.n, 3);
    assert_int_equal(in.bad, 5);
    assert_int_equal(in.time_kind, STATS_TIME_INDEX);
    assert_int_equal(in.nlabels, 2);
    assert_true(in.value[2] == 4 && in.time[2] == 1);
    assert_string_equal(in.labels[in.label_id[1]], "search");
    char buf[2048] = {0};
    rewind(diag);
    size_t got = fread(buf, 1, sizeof buf - 1, diag);
    assert_true(got > 0);
    assert_non_null(strstr(buf, "t.csv:5: value 'nan' is not finite"));
    assert_non_null(strstr(buf, "t.csv:6: value -1 is negative"));
    assert_non_null(strstr(buf, "t.csv:8: interval '1.5' is not a whole number"));
    assert_non_null(strstr(buf, "t.csv:11: expected 3 fields, found 2"));
    fclose(diag);
    stats_input_free(&in);

    const char *plain = "1\n2.5\n 3 \n";
    assert_int_equal(stats_input_parse(plain, strlen(plain), "p", 0, NULL, 0, &in, err), 0);
    assert_int_equal(in.n, 3);
    assert_int_equal(in.time_kind, STATS_TIME_NONE);
    assert_true(in.time[2] == 2 && in.value[2] == 3);
    stats_input_free(&in);

    const char *ts = "5,100.5\n6,99\n";
    assert_int_equal(stats_input_parse(ts, strlen(ts), "ts", 1, NULL, 0, &in, err), 0);
    assert_int_equal(in.time_kind, STATS_TIME_TIMESTAMP);
    assert_true(in.time[0] == 100.5);
    stats_input_free(&in);

    const char *nohead = "speed,when\n1,2\n";
    assert_int_equal(stats_input_parse(nohead, strlen(nohead), "h", 0, NULL, 0, &in, err), -1);
    assert_non_null(strstr(err, "h:1: unknown column 'speed'"));

    assert_true(stats_parse_duration("90s") == 90);
    assert_true(stats_parse_duration("12h") == 43200);
    assert_true(stats_parse_duration("7d") == 604800);
    assert_true(stats_parse_duration("1w") == 604800);
    assert_true(stats_parse_duration("1.5m") == 90);
    assert_true(stats_parse_duration("30") == 30);
    assert_true(stats_parse_duration("3y") == -1);
    assert_true(stats_parse_duration("-2h") == -1);
    assert_true(stats_parse_duration("") == -1);
}

/* --log: every quantity equals the linear computation on ln(values) (the
 * same code on transformed samples), percentiles stay in the samples' units,
 * a value that is not positive is refused naming it, and the state machine
 * judges on the log scale when asked. */
static void test_log_scale(void **state)
{
    (void)state;
    char err[STATS_ERR_LEN];
    size_t n = 3000;
    double *la = normal_samples(41, n, 3, 0.3), *lb = normal_samples(42, n, 3.02, 0.31);
    double *a = malloc(sizeof(double) * n), *b = malloc(sizeof(double) * n);
    for (size_t i = 0; i < n; i++) {
        a[i] = exp(la[i]);
        b[i] = exp(lb[i]);
    }
    b[7] = 5000; /* a far outlier: it sets the linear bandwidth, not the log one */
    lb[7] = log(5000);
    struct stats_kde_options lin, lg;
    stats_kde_options_default(&lin);
    lg = lin;
    lg.log_scale = 1;
    struct stats_similarity s_log, s_ref, s_lin;
    assert_int_equal(stats_similarity_compute(a, n, b, n, &lg, &s_log, err), 0);
    assert_int_equal(stats_similarity_compute(la, n, lb, n, &lin, &s_ref, err), 0);
    assert_int_equal(stats_similarity_compute(a, n, b, n, &lin, &s_lin, err), 0);
    assert_true(s_log.p == s_ref.p && s_log.kl12 == s_ref.kl12 && s_log.h1 == s_ref.h1);
    assert_true(s_log.grid.lo == s_ref.grid.lo && s_log.grid.width == s_ref.grid.width);
    for (int i = 0; i < s_log.grid.strips; i++)
        assert_true(s_log.d1[i] == s_ref.d1[i] && s_log.d2[i] == s_ref.d2[i]);
    /* The outlier widens the linear grid ~60-fold: the body falls in a few
     * strips and p drops; on the log scale the two sets stay alike. */
    assert_true(s_log.p > 0.95);
    assert_true(s_lin.p < s_log.p);
    stats_similarity_free(&s_log);
    stats_similarity_free(&s_ref);
    stats_similarity_free(&s_lin);

    double saved = a[11];
    a[11] = 0;
    assert_int_equal(stats_similarity_compute(a, n, b, n, &lg, &s_log, err), -1);
    assert_non_null(strstr(err, "A sample 11 is 0"));
    assert_non_null(strstr(err, "positive"));
    a[11] = saved;

    struct stats_band_options bo;
    stats_band_options_default(&bo);
    bo.resamples = 200;
    struct stats_band band, ref;
    assert_int_equal(stats_band_compute(a, n, NULL, &lg, &bo, &band, err), 0);
    assert_int_equal(stats_band_compute(la, n, NULL, &lin, &bo, &ref, err), 0);
    assert_int_equal(band.log_scale, 1);
    assert_int_equal(ref.log_scale, 0);
    for (int i = 0; i < band.grid.strips; i++)
        assert_true(band.density[i] == ref.density[i] && band.low[i] == ref.low[i] &&
                    band.high[i] == ref.high[i]);
    double *sorted = malloc(sizeof(double) * n);
    memcpy(sorted, a, sizeof(double) * n);
    qsort(sorted, n, sizeof(double), stats_cmp_double);
    for (int k = 0; k < STATS_NPCT; k++) {
        double q = stats_summary_percentiles[k] / 100.0 * (double)(n - 1);
        size_t lo = (size_t)q;
        double want = sorted[lo] + (q - (double)lo) * (sorted[lo + 1] - sorted[lo]);
        assert_true(fabs(band.pct[k] - want) <= 1e-12 * want);
        assert_true(fabs(band.pct_low[k] - exp(ref.pct_low[k])) <= 1e-12 * band.pct_low[k]);
        assert_true(band.pct_low[k] <= band.pct[k] && band.pct[k] <= band.pct_high[k]);
    }
    free(sorted);
    stats_band_free(&band);
    stats_band_free(&ref);

    /* The machine on the log scale: its p is the log-scale similarity. */
    struct stats_config cfg;
    stats_config_default(&cfg);
    cfg.kde.log_scale = 1;
    struct stats_machine *m = stats_machine_new(&cfg, err);
    assert_non_null(m);
    struct stats_step step;
    assert_int_equal(stats_machine_feed(m, a, n / 2, NULL, 0, &step, err), 0);
    assert_int_equal(stats_machine_feed(m, a + n / 2, n - n / 2, NULL, 0, &step, err), 0);
    assert_int_equal(stats_similarity_compute(a, n / 2, a, n, &lg, &s_log, err), 0);
    assert_true(step.compared && step.p == s_log.p);
    stats_similarity_free(&s_log);
    stats_machine_free(m);
    free(a);
    free(b);
    free(la);
    free(lb);
}

/* A tight mode with a long tail: Scott's bandwidth follows the tail's
 * spread and smears the mode, so the smoothed bootstrap's medians centre
 * well right of the sample median. The interval given with a value must
 * still hold it (stats_percentile_ci widens it). */
static void test_percentile_ci_holds_value(void **state)
{
    (void)state;
    double x[150];
    for (int i = 0; i < 100; i++)
        x[i] = 1.0 + 0.0001 * i;
    for (int i = 0; i < 50; i++)
        x[100 + i] = 1.02 + 0.18 * i;
    const double pct[3] = {50, 95, 99};
    double value[3], lo[3], hi[3];
    struct stats_band_options bo;
    stats_band_options_default(&bo);
    char err[STATS_ERR_LEN];
    assert_int_equal(stats_percentile_ci(x, 150, pct, 3, &bo, value, lo, hi, err), 0);
    assert_true(fabs(value[0] - 1.00745) < 1e-12);
    for (int k = 0; k < 3; k++) {
        assert_true(lo[k] <= value[k]);
        assert_true(value[k] <= hi[k]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fft_matches_dft),
        cmocka_unit_test(test_bandwidth_rules),
        cmocka_unit_test(test_binned_matches_exact),
        cmocka_unit_test(test_similarity_and_edges),
        cmocka_unit_test(test_band_coverage),
        cmocka_unit_test(test_band_reproducible),
        cmocka_unit_test(test_poisson_moments),
        cmocka_unit_test(test_machine_standard),
        cmocka_unit_test(test_machine_labels_hold_open),
        cmocka_unit_test(test_machine_short_intervals),
        cmocka_unit_test(test_machine_refusals_and_hourly),
        cmocka_unit_test(test_input_csv),
        cmocka_unit_test(test_log_scale),
        cmocka_unit_test(test_percentile_ci_holds_value),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
