/* test_cpu_ratio.c - unit tests of the CPU scaling ratio with its interval
 * (cpu/cpu_ratio.h): quantile and robust spread, scores of a pool of
 * rounds, the trace-header list and its "~se" entries, the weighted
 * estimate (a noisy kernel is outweighed, a recording without errors
 * borrows the target's), the CPU identity and the chain's ratio on the
 * same CPU, and pooling measured rounds. Accuracy on a real
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
    static const char *const names[] = {"zstd3-compress", "sha256", "qsort-int", "nbody-fp",
                                        CPU_KERNELS_CHAIN};
    memset(p, 0, sizeof *p);
    p->kernels = CPU_KERNELS_COUNT;
    p->rounds = rounds;
    for (int k = 0; k < CPU_KERNELS_COUNT; k++) {
        snprintf(p->names[k], sizeof p->names[k], "%s", names[k]);
        for (int r = 0; r < rounds; r++)
            p->ns[k][r] = (uint64_t)(base[k] * (1 + jitter * ((r * 7 + k) % 11 - 5) / 5.0));
    }
}

/* The scores of 11 rounds of `base` (jitter 1%), with the identity of
 * `cpuinfo` (NULL: none). */
static void scores_for(const double *base, const char *cpuinfo, struct cpu_ratio_scores *out)
{
    struct cpu_kernels_sample p;
    fill_pool(&p, 11, base, 0.01);
    cpu_ratio_scores_of(&p, out);
    if (cpuinfo)
        cpu_ratio_identity_of(cpuinfo, out->cpu_id);
}

static void test_scores_of_pool(void **state)
{
    (void)state;
    const double base[] = {1e8, 7e7, 8e7, 7.5e7, 5.5e7};
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
    const double base[] = {1e8, 7e7, 8e7, 7.5e7, 5.5e7};
    struct cpu_kernels_sample p;
    struct cpu_ratio_scores s;
    struct trace_cpu_score h[TRACE_MAX_CPU_SCORES];
    fill_pool(&p, 11, base, 0.1);
    cpu_ratio_scores_of(&p, &s);
    assert_int_equal(cpu_ratio_header_scores(&s, h, TRACE_MAX_CPU_SCORES), 10);
    assert_string_equal(h[0].name, "zstd3-compress");
    assert_string_equal(h[4].name, CPU_KERNELS_CHAIN);
    assert_string_equal(h[5].name, "zstd3-compress~se");
    assert_string_equal(h[9].name, CPU_KERNELS_CHAIN "~se");
    assert_float_equal(h[6].seconds, s.seconds[1] * s.log_se[1], 1e-15);
    /* no room: the scores first, errors only as far as they fit */
    assert_int_equal(cpu_ratio_header_scores(&s, h, 6), 6);
    assert_string_equal(h[5].name, "zstd3-compress~se");
    /* with an identity: last, seconds 0 */
    snprintf(s.cpu_id, sizeof s.cpu_id, "%s0123456789abcdef", CPU_RATIO_ID_PREFIX);
    assert_int_equal(cpu_ratio_header_scores(&s, h, TRACE_MAX_CPU_SCORES), 11);
    assert_string_equal(h[10].name, "cpu-id:0123456789abcdef");
    assert_float_equal(h[10].seconds, 0, 0);
    /* the old ratio ignores the error and identity entries (no kernel has
     * their names) and the chain */
    struct trace_cpu_score t[CPU_KERNELS_COUNT];
    assert_int_equal(cpu_ratio_header_scores(&s, t, CPU_KERNELS_COUNT), 5);
    t[4].seconds *= 2;
    assert_float_equal(cpu_kernels_ratio(h, 11, t, 5), 1.0, 1e-12);
}

static void test_estimate(void **state)
{
    (void)state;
    const double base[] = {1e8, 7e7, 8e7, 7.5e7, 5.5e7};
    const double slower[] = {1.2e8, 8.4e7, 9.6e7, 9e7, 6.6e7};
    struct cpu_ratio_scores rec, tgt;
    struct trace_cpu_score h[TRACE_MAX_CPU_SCORES];
    struct cpu_ratio_estimate e;
    scores_for(base, NULL, &rec);
    uint32_t nh = cpu_ratio_header_scores(&rec, h, TRACE_MAX_CPU_SCORES);
    /* against itself: exactly 1, inside its interval */
    assert_int_equal(cpu_ratio_estimate(h, nh, &rec, &e), 4);
    assert_int_equal(e.basis, CPU_RATIO_BASIS_KERNELS); /* no identity on either side */
    assert_int_equal(e.kernels, 4);                     /* the chain is not a kernel */
    assert_float_equal(e.ratio, 1.0, 1e-12);
    assert_true(e.lo < 1 && e.hi > 1 && e.hi < 1.05);
    assert_int_equal(e.recorded_se, 1);
    assert_float_equal(e.spread, 1.0, 0);
    /* 1.2x slower everywhere: 1.2 */
    scores_for(slower, NULL, &tgt);
    cpu_ratio_estimate(h, nh, &tgt, &e);
    assert_float_equal(e.ratio, 1.2, 1e-9);
    /* a recording without errors (older traces) borrows the target's */
    cpu_ratio_estimate(h, 5, &tgt, &e);
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

static const char cpuinfo_epyc[] = "processor\t: 0\nvendor_id\t: AuthenticAMD\n"
                                   "cpu family\t: 25\nmodel\t\t: 1\nmodel name\t: AMD EPYC\n"
                                   "stepping\t: 1\nmicrocode\t: 0x1000065\ncpu MHz\t\t: 2445.406\n"
                                   "\nprocessor\t: 1\nvendor_id\t: GenuineIntel\n";

static void test_identity(void **state)
{
    (void)state;
    char a[24], b[24];
    cpu_ratio_identity_of(cpuinfo_epyc, a);
    assert_int_equal(strlen(a), strlen(CPU_RATIO_ID_PREFIX) + 16);
    assert_memory_equal(a, CPU_RATIO_ID_PREFIX, strlen(CPU_RATIO_ID_PREFIX));
    /* the clock, microcode and later processors do not count */
    cpu_ratio_identity_of("vendor_id : AuthenticAMD\ncpu family : 25\nmodel : 1\n"
                          "model name : AMD EPYC\nstepping : 1\ncpu MHz : 3000\n",
                          b);
    assert_string_equal(a, b);
    /* another model, or the same digits under "model name" first: different */
    cpu_ratio_identity_of("vendor_id : AuthenticAMD\ncpu family : 25\nmodel : 17\n"
                          "model name : AMD EPYC\nstepping : 1\n",
                          b);
    assert_string_not_equal(a, b);
    cpu_ratio_identity_of("model name : 1\nvendor_id : AuthenticAMD\ncpu family : 25\n"
                          "stepping : 1\n",
                          b);
    assert_string_not_equal(a, b);
    /* too little to tell (no vendor, family, model): unknown */
    cpu_ratio_identity_of("processor : 0\nmodel name : x\n", b);
    assert_string_equal(b, "");
    cpu_ratio_identity_of("", b);
    assert_string_equal(b, "");
}

/* Same CPU: the chain sets the ratio, the kernels' stays beside it;
 * another CPU or no identity in the recording: the kernels'. */
static void test_estimate_same_cpu(void **state)
{
    (void)state;
    const double base[] = {1e8, 7e7, 8e7, 7.5e7, 5.5e7};
    /* other tenants slow the kernels by 20%, the chain by 1% */
    const double busy[] = {1.2e8, 8.4e7, 9.6e7, 9e7, 5.555e7};
    struct cpu_ratio_scores rec, tgt;
    struct trace_cpu_score h[TRACE_MAX_CPU_SCORES];
    struct cpu_ratio_estimate e;
    scores_for(base, cpuinfo_epyc, &rec);
    uint32_t nh = cpu_ratio_header_scores(&rec, h, TRACE_MAX_CPU_SCORES);
    scores_for(busy, cpuinfo_epyc, &tgt);
    assert_true(cpu_ratio_estimate(h, nh, &tgt, &e) != 0);
    assert_int_equal(e.basis, CPU_RATIO_BASIS_CHAIN);
    assert_float_equal(e.ratio, 1.01, 1e-9);
    assert_true(e.lo < 1.01 && e.hi > 1.01 && e.hi < 1.05);
    assert_float_equal(e.kernels_ratio, 1.2, 1e-9);
    assert_int_equal(e.kernels, 4);
    /* another CPU */
    cpu_ratio_identity_of("vendor_id : GenuineIntel\ncpu family : 6\nmodel : 106\n", tgt.cpu_id);
    cpu_ratio_estimate(h, nh, &tgt, &e);
    assert_int_equal(e.basis, CPU_RATIO_BASIS_KERNELS);
    assert_float_equal(e.ratio, 1.2, 1e-9);
    /* a target that cannot tell its CPU */
    tgt.cpu_id[0] = 0;
    cpu_ratio_estimate(h, nh, &tgt, &e);
    assert_int_equal(e.basis, CPU_RATIO_BASIS_KERNELS);
    /* a recording without the identity (before 2.6) */
    cpu_ratio_identity_of(cpuinfo_epyc, tgt.cpu_id);
    cpu_ratio_estimate(h, nh - 1, &tgt, &e);
    assert_int_equal(e.basis, CPU_RATIO_BASIS_KERNELS);
    assert_float_equal(e.ratio, 1.2, 1e-9);
    /* the same identity but no chain in the recording: the kernels' */
    struct trace_cpu_score no_chain[TRACE_MAX_CPU_SCORES];
    uint32_t m = 0;
    for (uint32_t i = 0; i < nh; i++)
        if (strncmp(h[i].name, CPU_KERNELS_CHAIN, strlen(CPU_KERNELS_CHAIN)))
            no_chain[m++] = h[i];
    assert_int_equal(m, nh - 2);
    cpu_ratio_estimate(no_chain, m, &tgt, &e);
    assert_int_equal(e.basis, CPU_RATIO_BASIS_KERNELS);
    /* only the chain in common: still a ratio */
    struct trace_cpu_score only[] = {h[4], h[9], h[10]};
    assert_string_equal(only[2].name, rec.cpu_id);
    assert_true(cpu_ratio_estimate(only, 3, &tgt, &e) != 0);
    assert_int_equal(e.basis, CPU_RATIO_BASIS_CHAIN);
    assert_int_equal(e.kernels, 0);
    assert_true(isnan(e.kernels_ratio));
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
        cmocka_unit_test(test_quantile_and_spread),
        cmocka_unit_test(test_scores_of_pool),
        cmocka_unit_test(test_header_list),
        cmocka_unit_test(test_estimate),
        cmocka_unit_test(test_identity),
        cmocka_unit_test(test_estimate_same_cpu),
        cmocka_unit_test(test_measure_pools_rounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
