/* test_regress_unit.c - the regress library (regress/regress.h) against
 * hand-computed cases: 3-level and equal-width levels, Apriori on a small
 * table, the confidence change (Eq. 5-1), Fisher's exact test, the
 * thesis's own stacking-weight example (Table 6-3), and a whole analysis
 * whose flagged counter, severity and direction are known. The random
 * cases against an independent oracle are test_apriori_oracle.py. */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "regress.h"

static void test_three_levels(void **state)
{
    (void)state;
    /* median 3, sample sd sqrt(2.5) = 1.5811: medium [1.4189, 4.5811] */
    const double x[] = {5, 1, 3, 2, 4, NAN};
    struct regress_bins b;
    regress_bins_fit(&b, REGRESS_3LEVEL, x, 6);
    assert_true(fabs(b.lo - (3 - sqrt(2.5))) < 1e-12 && fabs(b.hi - (3 + sqrt(2.5))) < 1e-12);
    assert_int_equal(regress_level(&b, 1), 0);
    assert_int_equal(regress_level(&b, 1.42), 1);
    assert_int_equal(regress_level(&b, 4.58), 1);
    assert_int_equal(regress_level(&b, 4.59), 2);
    assert_int_equal(regress_level(&b, NAN), -1);
    char buf[32];
    assert_string_equal(regress_level_name(&b, 2, buf, sizeof buf), "high");
}

static void test_equal_width(void **state)
{
    (void)state;
    /* 10 distinct values: k = floor(2 ln 10) = 4 bins of 9 / 4 = 2.25 */
    double x[10];
    for (int i = 0; i < 10; i++)
        x[i] = i;
    struct regress_bins b;
    regress_bins_fit(&b, REGRESS_EQUAL_WIDTH, x, 10);
    assert_int_equal(b.k, 4);
    assert_int_equal(b.nlevels, 6);
    assert_int_equal(regress_level(&b, 0), 1);
    assert_int_equal(regress_level(&b, 2.24), 1);
    assert_int_equal(regress_level(&b, 2.25), 2);
    assert_int_equal(regress_level(&b, 6.75), 4);
    assert_int_equal(regress_level(&b, 9), 4); /* the maximum is in the last bin */
    assert_int_equal(regress_level(&b, -0.1), 0);
    assert_int_equal(regress_level(&b, 9.1), 5);
    char buf[64];
    assert_string_equal(regress_level_name(&b, 2, buf, sizeof buf), "[2.25, 4.5)");
    assert_string_equal(regress_level_name(&b, 5, buf, sizeof buf), ">9");
    /* one distinct value: one bin, anything else is below or above */
    const double one[3] = {7, 7, 7};
    regress_bins_fit(&b, REGRESS_EQUAL_WIDTH, one, 3);
    assert_int_equal(b.k, 1);
    assert_int_equal(regress_level(&b, 7), 1);
    assert_int_equal(regress_level(&b, 8), 2);
}

/* Values near DBL_MAX (finite, as a hostile file may hold; issue 24 item
 * 2): the same levels as the values scaled down, never NAN or infinite
 * (their sum overflowed, and the counter read as never measured). */
static void test_three_levels_huge(void **state)
{
    (void)state;
    const double small[] = {5, 1, 3, 2, 4, 5, 5};
    double huge[7];
    for (int i = 0; i < 7; i++)
        huge[i] = small[i] * 3e307;
    struct regress_bins b, s;
    regress_bins_fit(&s, REGRESS_3LEVEL, small, 7);
    regress_bins_fit(&b, REGRESS_3LEVEL, huge, 7);
    assert_true(isfinite(b.lo) && isfinite(b.hi) && isfinite(b.median));
    assert_true(fabs(b.lo / 3e307 - s.lo) < 1e-9 && fabs(b.hi / 3e307 - s.hi) < 1e-9);
    for (int i = 0; i < 7; i++)
        assert_int_equal(regress_level(&b, huge[i]), regress_level(&s, small[i]));
    assert_int_equal(regress_level(&b, DBL_MAX), 2);
    assert_int_equal(regress_level(&b, 0), 0);
    /* two values whose median + sd passes DBL_MAX: the levels stay finite */
    const double two[] = {DBL_MAX, DBL_MAX / 4};
    regress_bins_fit(&b, REGRESS_3LEVEL, two, 2);
    assert_true(isfinite(b.lo) && isfinite(b.hi) && b.hi == DBL_MAX);
    /* denormals and zeros */
    const double tiny[] = {0, 4.9e-324, 9.9e-324, 0, 4.9e-324};
    regress_bins_fit(&b, REGRESS_3LEVEL, tiny, 5);
    assert_true(isfinite(b.lo) && isfinite(b.hi) && b.lo <= b.median && b.median <= b.hi);
}

/* A: 1 1 1 1 0, B: 1 1 1 0 0; support >= 0.4 (2 windows), confidence
 * >= 0.6: {A1, B1} (3 windows) is the only frequent pair, so A1 -> B1
 * (3/4) and B1 -> A1 (3/3). */
static void test_apriori_small(void **state)
{
    (void)state;
    int lv[10] = {1, 1, 1, 1, 1, 1, 1, 0, 0, 0};
    struct regress_levels l = {.nwindows = 5, .ncounters = 2, .level = lv};
    struct regress_rule *r;
    size_t n;
    char err[REGRESS_ERR_LEN];
    assert_int_equal(regress_apriori(&l, 0.4, 0.6, 2, 1000, &r, &n, err, sizeof err), 0);
    assert_int_equal(n, 2);
    int seen = 0;
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(r[i].npremise, 1);
        assert_true(fabs(r[i].support - 0.6) < 1e-12);
        if (r[i].consequent.counter == 1) {
            assert_true(r[i].premise[0].counter == 0 && r[i].premise[0].level == 1);
            assert_true(fabs(r[i].confidence - 0.75) < 1e-12);
            seen |= 1;
        } else {
            assert_true(r[i].premise[0].counter == 1 && r[i].premise[0].level == 1);
            assert_true(r[i].confidence == 1);
            seen |= 2;
        }
        size_t pw;
        assert_true(regress_confidence(&r[i], &l, &pw) == r[i].confidence);
        assert_int_equal(pw, r[i].consequent.counter == 1 ? 4 : 3);
    }
    assert_int_equal(seen, 3);
    regress_rules_free(r, n);
    /* a cap on itemsets is an error that says what to change */
    assert_int_equal(regress_apriori(&l, 0.2, 0.6, 2, 2, &r, &n, err, sizeof err), -1);
    assert_non_null(strstr(err, "raise --support"));
}

/* A: 1 1 1 1 1 1, B: 1 1 1 1 - - (B missing in the last two windows, a
 * label with no request there): A1 -> B1 holds in every window that
 * measures B, confidence 4/4, not 4/6; on a target where B is missing but
 * once at level 0, 0/1 (the missing windows count for neither side). */
static void test_confidence_missing(void **state)
{
    (void)state;
    int lv[12] = {1, 1, 1, 1, 1, 1, 1, 1, 1, -1, 1, -1};
    struct regress_levels l = {.nwindows = 6, .ncounters = 2, .level = lv};
    struct regress_rule *r;
    size_t n;
    char err[REGRESS_ERR_LEN];
    assert_int_equal(regress_apriori(&l, 0.5, 0.8, 2, 1000, &r, &n, err, sizeof err), 0);
    int seen = 0;
    for (size_t i = 0; i < n; i++)
        if (r[i].consequent.counter == 1) {
            assert_true(r[i].confidence == 1);
            assert_true(fabs(r[i].support - 4.0 / 6) < 1e-12);
            size_t pw;
            assert_true(regress_confidence(&r[i], &l, &pw) == 1);
            assert_int_equal(pw, 4);
            int tv[6] = {1, 0, 1, -1, 1, -1};
            struct regress_levels t = {.nwindows = 3, .ncounters = 2, .level = tv};
            assert_true(regress_confidence(&r[i], &t, &pw) == 0);
            assert_int_equal(pw, 1);
            seen = 1;
        }
    assert_int_equal(seen, 1);
    regress_rules_free(r, n);
}

static void test_confidence_change(void **state)
{
    (void)state;
    /* 0.9 -> 0.2: cos = (0.18 + 0.08) / (sqrt(0.82) sqrt(0.68)) */
    double want = 1 - 0.26 / (sqrt(0.82) * sqrt(0.68));
    assert_true(fabs(regress_confidence_change(0.9, 0.2) - want) < 1e-12);
    assert_true(fabs(want - 0.65178) < 1e-4);
    assert_true(regress_confidence_change(0.7, 0.7) < 1e-12);
    assert_true(fabs(regress_confidence_change(1, 0) - 1) < 1e-12);
    assert_true(isnan(regress_confidence_change(0.5, NAN)));
}

static void test_fisher(void **state)
{
    (void)state;
    /* R: fisher.test(matrix(c(1, 11, 9, 3), 2))$p.value = 0.002759456 */
    assert_true(fabs(regress_fisher_p(1, 9, 11, 3) - 0.002759456) < 1e-8);
    /* identical rows: p = 1 */
    assert_true(fabs(regress_fisher_p(5, 5, 5, 5) - 1) < 1e-9);
    /* 10/10 against 6/10: p = 2 C(10,4)... = 0.08669 (scipy) */
    assert_true(fabs(regress_fisher_p(10, 0, 6, 4) - 0.0866873) < 1e-6);
}

static void test_rank_sum(void **state)
{
    (void)state;
    /* scipy.stats.mannwhitneyu(x, y, method="asymptotic").pvalue */
    const double x[] = {1, 2, 3, 4, 5, 6, 7, 8}, y[] = {5, 6, 7, 8, 9, 10, 11, 12, NAN};
    assert_true(fabs(regress_rank_sum_p(x, 8, y, 9) - 0.013313003) < 1e-8);
    const double same[] = {3, 3, 3};
    assert_true(regress_rank_sum_p(same, 3, same, 3) == 1);
    assert_true(isnan(regress_rank_sum_p(x, 8, y + 8, 1)));
}

/* Table 6-3: T1 shares CPU, memory and DB version with T5 (length
 * sqrt 3), T2 CPU and OS (sqrt 2): w1 = 1.7 / (1.7 + 1.4) = 0.55. */
static void test_stacking_weights(void **state)
{
    (void)state;
    struct regress_test t[3] = {
        {.env = {"2GHz2c", "2GB", "db1", "32bit"}},
        {.env = {"2GHz2c", "1GB", "db2", "64bit"}},
        {.env = {"2GHz2c", "2GB", "db1", "64bit"}},
    };
    struct regress_table tab = {.tests = t, .ntests = 3};
    double w[2];
    regress_stacking_weights(&tab, w);
    assert_true(fabs(w[0] - sqrt(3) / (sqrt(3) + sqrt(2))) < 1e-12);
    assert_true(fabs(w[0] - 0.5505) < 1e-4 && fabs(w[0] + w[1] - 1) < 1e-12);
}

/* Baseline: A = 10, B = 20 in every window (A=medium <-> B=medium, conf
 * 1). Target: B = 30 in 4 of 10 windows: A=medium -> B=medium drops to
 * 0.6 (change 0.168); B is flagged, severity 0.4, up; A is not. */
static void test_analyze_known(void **state)
{
    (void)state;
    double base[20], target[20];
    for (int w = 0; w < 10; w++) {
        base[w * 2] = target[w * 2] = 10;
        base[w * 2 + 1] = 20;
        target[w * 2 + 1] = w < 4 ? 30 : 20;
    }
    const char *names[2] = {"A", "B"};
    struct regress_test t[3] = {{.name = "b1", .nwindows = 10, .values = base},
                                {.name = "b2", .nwindows = 10, .values = base},
                                {.name = "t", .nwindows = 10, .values = target}};
    struct regress_options o = {.method = REGRESS_SINGLE,
                                .discretization = REGRESS_3LEVEL,
                                .min_support = 0.2,
                                .min_confidence = 0.8,
                                .min_change = 0.1,
                                .alpha = 1,
                                .max_len = 3,
                                .max_itemsets = 1000};
    for (int method = REGRESS_SINGLE; method <= REGRESS_STACKING; method++) {
        struct regress_table tab = {.ncounters = 2, .names = names, .tests = t, .ntests = 3};
        struct regress_result res;
        char err[REGRESS_ERR_LEN];
        o.method = (enum regress_method)method;
        assert_int_equal(regress_analyze(&tab, &o, &res, err, sizeof err), 0);
        assert_int_equal(res.nflags, 1);
        assert_int_equal(res.flags[0].counter, 1);
        assert_true(fabs(res.flags[0].severity - 0.4) < 1e-12);
        assert_string_equal(regress_direction(&res.flags[0]), "up");
        assert_int_equal(res.flags[0].votes, method == REGRESS_SINGLE ? 1 : 2);
        assert_true(fabs(res.flags[0].weight - 1) < 1e-12);
        int flagged_rules = 0;
        for (size_t i = 0; i < res.nrules; i++)
            if (res.rules[i].flagged) {
                flagged_rules++;
                assert_true(fabs(res.rules[i].target_confidence - 0.6) < 1e-12);
                assert_true(fabs(res.rules[i].change - regress_confidence_change(1, 0.6)) < 1e-12);
            }
        assert_int_equal(flagged_rules, method == REGRESS_SINGLE ? 1 : 2);
        regress_result_free(&res);
    }
    /* at alpha 0.005 the drop 20/20 (the two baselines pooled) -> 6/10
     * (p 0.0077, scipy) is not enough */
    o.method = REGRESS_SINGLE;
    o.alpha = 0.005;
    struct regress_table tab = {.ncounters = 2, .names = names, .tests = t, .ntests = 3};
    struct regress_result res;
    char err[REGRESS_ERR_LEN];
    assert_int_equal(regress_analyze(&tab, &o, &res, err, sizeof err), 0);
    assert_int_equal(res.nflags, 0);
    regress_result_free(&res);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_three_levels),      cmocka_unit_test(test_three_levels_huge),
        cmocka_unit_test(test_equal_width),       cmocka_unit_test(test_apriori_small),
        cmocka_unit_test(test_confidence_change), cmocka_unit_test(test_fisher),
        cmocka_unit_test(test_stacking_weights),  cmocka_unit_test(test_analyze_known),
        cmocka_unit_test(test_rank_sum),          cmocka_unit_test(test_confidence_missing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
