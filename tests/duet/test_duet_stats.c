/* test_duet_stats.c - unit tests of stats_duet.h: the geometric mean, the
 * §IV.A winsorization rule on hand-worked cases (which value is replaced,
 * by what, and when nothing is), the bootstrap interval's refusals, its
 * reproducibility from a seed, its coverage of a known ratio, and the
 * coin flips' balance. Expected values are worked out by hand here. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "stats.h"
#include "stats_duet.h"

static void test_gm(void **state)
{
    (void)state;
    double x[] = {2, 8};
    assert_true(fabs(stats_duet_gm(x, 2) - 4) < 1e-12);
    double y[] = {1, 0.5, 2};
    assert_true(fabs(stats_duet_gm(y, 3) - 1) < 1e-12);
    double z[] = {1, 0};
    assert_true(isnan(stats_duet_gm(z, 2)));
    assert_true(isnan(stats_duet_gm(x, 0)));
}

static void test_winsorize(void **state)
{
    (void)state;
    /* 1.5 is 36% above 1.1, the top of the others: replaced by 1.1 */
    double a[] = {1.0, 1.5, 1.1, 0.95};
    assert_int_equal(stats_duet_winsorize(a, 4, 20), 1);
    assert_true(a[1] == 1.1);
    /* 1.25 is 13.6% above 1.1: kept */
    double b[] = {1.0, 1.25, 1.1, 0.95};
    assert_int_equal(stats_duet_winsorize(b, 4, 20), -1);
    assert_true(b[1] == 1.25);
    /* 0.5 is 47% below 0.95, the bottom of the others: replaced by 0.95 */
    double c[] = {1.0, 0.5, 1.1, 0.95};
    assert_int_equal(stats_duet_winsorize(c, 4, 20), 1);
    assert_true(c[1] == 0.95);
    /* both ends out: only the one further out (0.2: 80% below) goes */
    double d[] = {1.0, 0.2, 1.0, 1.5};
    assert_int_equal(stats_duet_winsorize(d, 4, 20), 1);
    assert_true(d[1] == 1.0 && d[3] == 1.5);
    /* off, or too few values */
    double e[] = {1.0, 9.0, 1.0};
    assert_int_equal(stats_duet_winsorize(e, 3, 0), -1);
    assert_int_equal(stats_duet_winsorize(e, 2, 20), -1);
}

static void test_interval_refusals(void **state)
{
    (void)state;
    char err[STATS_ERR_LEN];
    struct stats_duet_ci ci;
    double one[] = {1.0};
    assert_int_equal(stats_duet_interval(one, 1, 1000, 0.99, 1, &ci, err), -1);
    assert_non_null(strstr(err, "at least 2"));
    double two[] = {1.0, 1.1};
    assert_int_equal(stats_duet_interval(two, 2, 10, 0.99, 1, &ci, err), -1);
    assert_int_equal(stats_duet_interval(two, 2, 1000, 1.0, 1, &ci, err), -1);
    double neg[] = {1.0, -1};
    assert_int_equal(stats_duet_interval(neg, 2, 1000, 0.99, 1, &ci, err), -1);
    assert_non_null(strstr(err, "run gm 1"));
}

static void test_interval_values(void **state)
{
    (void)state;
    char err[STATS_ERR_LEN];
    struct stats_duet_ci a, b;
    double g[] = {1.04, 1.06, 1.05, 1.07, 1.03, 1.05, 1.06, 1.04};
    assert_int_equal(stats_duet_interval(g, 8, 10000, 0.99, 42, &a, err), 0);
    assert_int_equal(stats_duet_interval(g, 8, 10000, 0.99, 42, &b, err), 0);
    /* same seed, same interval */
    assert_true(a.low == b.low && a.high == b.high);
    /* inside the range of the run gms, around their gm, 1 outside */
    assert_true(a.low >= 1.03 && a.high <= 1.07 && a.low < a.gms && a.gms < a.high);
    assert_false(a.equal);
    double h[] = {0.98, 1.02, 1.01, 0.99};
    assert_int_equal(stats_duet_interval(h, 4, 10000, 0.99, 42, &b, err), 0);
    assert_true(b.equal && b.low < 1 && b.high > 1);
}

static void test_coins(void **state)
{
    (void)state;
    unsigned char c[10000], d[10000];
    stats_duet_coins(5, c, sizeof c);
    stats_duet_coins(5, d, sizeof d);
    assert_memory_equal(c, d, sizeof c);
    size_t ones = 0;
    for (size_t i = 0; i < sizeof c; i++) {
        assert_true(c[i] <= 1);
        ones += c[i];
    }
    /* 5 sigma of a fair coin over 10000 flips is 250 */
    assert_true(ones > 4750 && ones < 5250);
}

static void test_balanced(void **state)
{
    (void)state;
    for (size_t n = 1; n <= 21; n++) {
        unsigned char a[21], b[21];
        stats_duet_balanced(9, a, n);
        stats_duet_balanced(9, b, n);
        assert_memory_equal(a, b, n);
        size_t ones = 0;
        for (size_t i = 0; i < n; i++) {
            assert_true(a[i] <= 1);
            ones += a[i];
        }
        assert_true(ones == n / 2 || (n % 2 && ones == n / 2 + 1));
    }
    /* the order is random: 20 seeds give more than one arrangement */
    unsigned char first[10], other[10];
    stats_duet_balanced(1, first, 10);
    int differs = 0;
    for (uint64_t seed = 2; seed < 22 && !differs; seed++) {
        stats_duet_balanced(seed, other, 10);
        differs = memcmp(first, other, 10) != 0;
    }
    assert_true(differs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gm),
        cmocka_unit_test(test_winsorize),
        cmocka_unit_test(test_interval_refusals),
        cmocka_unit_test(test_interval_values),
        cmocka_unit_test(test_coins),
        cmocka_unit_test(test_balanced),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
