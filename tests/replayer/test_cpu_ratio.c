/* test_cpu_ratio.c - unit tests of the CPU scaling ratio with its interval
 * (cpu/cpu_ratio.h): quantile and robust spread, scores of a pool of
 * rounds, the trace-header list and its "~se" entries, the weighted
 * estimate (a noisy kernel is outweighed, a recording without errors
 * borrows the target's), and pooling measured rounds. Accuracy on a real
 * machine is measured by tests/bench/replayer/run-cpu-ratio-bench, not
 * here. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "cpu_ratio.h"

static void test_quantile_and_spread(void **state)
{
    (void)state;
    double v[] = {4, 1, 3, 2, 5};
    assert_float_equal(cpu_ratio_quantile(v, 5, 0.25), 2.0, 1e-12);
    double w[] = {1, 2, 3, 4};
    assert_float_equal(cpu_ratio_quantile(w, 4, 0.25), 1.75, 1e-12); /* interpolated */
    assert_true(isnan(cpu_ratio_quantile(w, 0, 0.25)));
    /* of 11 rounds, CPU_RATIO_QUANTILE is the second fastest */
    double r[] = {9, 3, 7, 1, 11, 5, 2, 8, 4, 10, 6};
    assert_float_equal(cpu_ratio_quantile(r, 11, CPU_RATIO_QUANTILE), 2.0, 1e-12);
    /* one wild value does not move the robust spread */
    const double x[] = {1, 2, 3, 4, 100};
    assert_float_equal(cpu_ratio_robust_sd(x, 5), 1.4826, 1e-12);
    assert_float_equal(x[4], 100, 0); /* order kept */
}

/* A pool of `rounds` rounds: kernel k takes base[k] ns x (1 + jitter). */
static void fill_pool(struct cpu_kernels_sample *p, int rounds, const double *base, double jitter)
{
    static const char *const names[] = {"zstd3-compress", "sha256", "qsort-int", "nbody-fp"};
    memset(p, 0, sizeof *p);
    p->kernels = CPU_KERNELS_COUNT;
    p->rounds = rounds;
    for (int k = 0; k < CPU_KERNELS_COUNT; k++) {
        snprintf(p->names[k], sizeof p->names[k], "%s", names[k]);
        for (int r = 0; r < rounds; r++)
            p->ns[k][r] = (uint64_t)(base[k] * (1 + jitter * ((r * 7 + k) % 11 - 5) / 5.0));
    }
}

static void test_scores_of_pool(void **state)
{
    (void)state;
    const double base[] = {1e8, 7e7, 8e7, 7.5e7};
    struct cpu_kernels_sample p;
    struct cpu_ratio_scores s;
    fill_pool(&p, 11, base, 0);
    cpu_ratio_scores_of(&p, &s);
    assert_int_equal(s.n, CPU_KERNELS_COUNT);
    assert_int_equal(s.rounds, 11);
    assert_string_equal(s.name[2], "qsort-int");
    assert_float_equal(s.seconds[0], 0.1, 1e-9);
    assert_float_equal(s.log_se[0], CPU_RATIO_SE_FLOOR, 1e-12); /* steady: the floor */
    fill_pool(&p, 11, base, 0.1);
    cpu_ratio_scores_of(&p, &s);
    assert_true(s.seconds[1] < 0.07); /* a low quantile of +-10% rounds */
    assert_true(s.log_se[1] > 0.01 && s.log_se[1] < 0.1);
    fill_pool(&p, 2, base, 0.1); /* too few rounds to tell: a wide error */
    cpu_ratio_scores_of(&p, &s);
    assert_float_equal(s.log_se[3], CPU_RATIO_UNKNOWN_SE, 0);
}

static void test_header_list(void **state)
{
    (void)state;
    const double base[] = {1e8, 7e7, 8e7, 7.5e7};
    struct cpu_kernels_sample p;
    struct cpu_ratio_scores s;
    struct trace_cpu_score h[TRACE_MAX_CPU_SCORES];
    fill_pool(&p, 11, base, 0.1);
    cpu_ratio_scores_of(&p, &s);
    assert_int_equal(cpu_ratio_header_scores(&s, h, TRACE_MAX_CPU_SCORES), 8);
    assert_string_equal(h[0].name, "zstd3-compress");
    assert_string_equal(h[4].name, "zstd3-compress~se");
    assert_string_equal(h[7].name, "nbody-fp~se");
    assert_float_equal(h[5].seconds, s.seconds[1] * s.log_se[1], 1e-15);
    /* no room: the scores first, errors only as far as they fit */
    assert_int_equal(cpu_ratio_header_scores(&s, h, 5), 5);
    assert_string_equal(h[4].name, "zstd3-compress~se");
    /* the old ratio ignores the error entries (no kernel has their names) */
    struct trace_cpu_score t[CPU_KERNELS_COUNT];
    assert_int_equal(cpu_ratio_header_scores(&s, t, CPU_KERNELS_COUNT), 4);
    assert_float_equal(cpu_kernels_ratio(h, 8, t, 4), 1.0, 1e-12);
}

static void test_estimate(void **state)
{
    (void)state;
    const double base[] = {1e8, 7e7, 8e7, 7.5e7};
    const double slower[] = {1.2e8, 8.4e7, 9.6e7, 9e7};
    struct cpu_kernels_sample p;
    struct cpu_ratio_scores rec, tgt;
    struct trace_cpu_score h[TRACE_MAX_CPU_SCORES];
    struct cpu_ratio_estimate e;
    fill_pool(&p, 11, base, 0.01);
    cpu_ratio_scores_of(&p, &rec);
    uint32_t nh = cpu_ratio_header_scores(&rec, h, TRACE_MAX_CPU_SCORES);
    /* against itself: exactly 1, inside its interval */
    assert_int_equal(cpu_ratio_estimate(h, nh, &rec, &e), 4);
    assert_float_equal(e.ratio, 1.0, 1e-12);
    assert_true(e.lo < 1 && e.hi > 1 && e.hi < 1.05);
    assert_int_equal(e.recorded_se, 1);
    assert_float_equal(e.spread, 1.0, 0);
    /* 1.2x slower everywhere: 1.2 */
    fill_pool(&p, 11, slower, 0.01);
    cpu_ratio_scores_of(&p, &tgt);
    cpu_ratio_estimate(h, nh, &tgt, &e);
    assert_float_equal(e.ratio, 1.2, 1e-9);
    /* a recording without errors (older traces) borrows the target's */
    cpu_ratio_estimate(h, 4, &tgt, &e);
    assert_float_equal(e.ratio, 1.2, 1e-9);
    assert_int_equal(e.recorded_se, 0);
    /* one noisy kernel 1.5x off is outweighed, and widens the interval */
    struct cpu_ratio_scores noisy = rec;
    noisy.seconds[0] *= 1.5;
    noisy.log_se[0] = 0.2;
    cpu_ratio_estimate(h, nh, &noisy, &e);
    assert_true(e.ratio > 1.0 && e.ratio < 1.01);
    assert_true(e.spread > 1 && e.hi > 1.01);
    /* nothing in common: no ratio */
    struct trace_cpu_score other = {"no-such-kernel", 1.0};
    assert_int_equal(cpu_ratio_estimate(&other, 1, &rec, &e), 0);
    assert_true(isnan(e.ratio));
}

static void test_measure_pools_rounds(void **state)
{
    (void)state;
    struct cpu_kernels_sample pool;
    struct cpu_ratio_scores s;
    char err[256];
    memset(&pool, 0, sizeof pool);
    assert_int_equal(cpu_ratio_measure(-1, 1, &pool, err, sizeof err), 0);
    assert_int_equal(cpu_ratio_measure(-1, 1, &pool, err, sizeof err), 0);
    assert_int_equal(pool.rounds, 2);
    assert_int_equal(pool.kernels, CPU_KERNELS_COUNT);
    cpu_ratio_scores_of(&pool, &s);
    for (int k = 0; k < s.n; k++)
        assert_true(s.seconds[k] > 0.001 && s.seconds[k] < 30);
    /* pinning to a core that does not exist fails with a reason */
    assert_int_equal(cpu_ratio_measure(4095, 1, &pool, err, sizeof err), -1);
    assert_non_null(strstr(err, "cannot pin to CPU 4095"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quantile_and_spread),  cmocka_unit_test(test_scores_of_pool),
        cmocka_unit_test(test_header_list),          cmocka_unit_test(test_estimate),
        cmocka_unit_test(test_measure_pools_rounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
