/* test_cpuburn_math.c - unit tests of the replayer's CPU calibration math
 * (steal handling, loop counts, medians, /proc/stat parsing), the CPU
 * scaling ratio and the SHA-256 of the hashing kernel; plus a functional
 * check that a burn consumes thread CPU time (wide margins: accuracy is
 * measured by tests/bench/replayer, not here). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "cpu_kernels.h"
#include "cpuburn.h"

static void test_effective_cpu(void **state)
{
    (void)state;
    int mode = -1;
    /* no steal: the CPU clock is taken as is */
    assert_int_equal(cpuburn_effective_cpu_ns(1000, 900, 0, 10, &mode), 900);
    assert_int_equal(mode, CPUBURN_STEAL_NONE);
    /* 200 of steal read in ticks of 10: at least 190 certain, and the
     * clock is 100 short of wall: the kernel excluded it */
    assert_int_equal(cpuburn_effective_cpu_ns(1000, 900, 200, 10, &mode), 900);
    assert_int_equal(mode, CPUBURN_STEAL_EXCLUDED);
    /* exactly half the certain steal missing still counts as excluded */
    assert_int_equal(cpuburn_effective_cpu_ns(1000, 905, 200, 10, &mode), 905);
    assert_int_equal(mode, CPUBURN_STEAL_EXCLUDED);
    /* clock equals wall although 200 were read: the certain 190 go */
    assert_int_equal(cpuburn_effective_cpu_ns(1000, 1000, 200, 10, &mode), 810);
    assert_int_equal(mode, CPUBURN_STEAL_SUBTRACTED);
    /* steal larger than the clock: clamps at 0 */
    assert_int_equal(cpuburn_effective_cpu_ns(5, 5, 30000000, 10000000, &mode), 0);
    assert_int_equal(mode, CPUBURN_STEAL_SUBTRACTED);
    /* clock ahead of wall (different clocks' granularity): no gap */
    assert_int_equal(cpuburn_effective_cpu_ns(1000, 1010, 210, 10, NULL), 810);
    /* one tick of /proc/stat (10 ms) in an 86.74 ms round whose clock
     * missed 0.84 ms (measured on the shared VM): the reading may be a few
     * us of steal that crossed a tick, nothing is subtracted - subtracting
     * it timed the round 75.9 ms, 12% short */
    assert_int_equal(cpuburn_effective_cpu_ns(86740000, 85900000, 10000000, 10000000, &mode),
                     85900000);
    assert_int_equal(mode, CPUBURN_STEAL_WITHIN_TICK);
    /* two ticks: one is certain; a clock that missed less than half of it
     * counted it, and only the certain tick goes */
    assert_int_equal(cpuburn_effective_cpu_ns(86740000, 86700000, 20000000, 10000000, &mode),
                     76700000);
    assert_int_equal(mode, CPUBURN_STEAL_SUBTRACTED);
    assert_int_equal(cpuburn_effective_cpu_ns(86740000, 81000000, 20000000, 10000000, &mode),
                     81000000);
    assert_int_equal(mode, CPUBURN_STEAL_EXCLUDED);
    assert_string_equal(cpuburn_steal_mode_name(CPUBURN_STEAL_WITHIN_TICK), "within-one-tick");
}

static void test_loops_for_ns(void **state)
{
    (void)state;
    struct cpuburn_calibration cal = {.loops_per_ns = 0.9};
    assert_int_equal(cpuburn_loops_for_ns(&cal, 1000), 900);
    assert_int_equal(cpuburn_loops_for_ns(&cal, 1), 1); /* 0.9 rounds to 1 */
    assert_int_equal(cpuburn_loops_for_ns(&cal, 0), 0);
    cal.loops_per_ns = 2.5;
    assert_int_equal(cpuburn_loops_for_ns(&cal, 3), 8); /* 7.5 rounds up */
    assert_true(cpuburn_loops_for_ns(&cal, UINT64_MAX) == UINT64_MAX);
    cal.loops_per_ns = 0;
    assert_int_equal(cpuburn_loops_for_ns(&cal, 1000), 0);
    cal.loops_per_ns = NAN;
    assert_int_equal(cpuburn_loops_for_ns(&cal, 1000), 0);
    assert_int_equal(cpuburn_loops_for_ns(NULL, 1000), 0);
}

static void test_median(void **state)
{
    (void)state;
    double odd[] = {5, 1, 3};
    assert_true(cpuburn_median(odd, 3) == 3);
    double even[] = {4, 1, 3, 2};
    assert_true(cpuburn_median(even, 4) == 2.5);
    assert_true(cpuburn_median(NULL, 0) == 0);
}

static void test_parse_steal(void **state)
{
    (void)state;
    const char *stat = "cpu  106310 0 42464 481823 1504 0 3493 1502 0 0\n"
                       "cpu0 44755 0 20284 250519 257 0 1630 798 0 0\n"
                       "cpu1 61555 0 22179 231303 1246 0 1863 704 0 0\n"
                       "cpu10 1 2 3 4 5 6 7 99 0 0\n"
                       "cpu11 1 2 3\n"
                       "intr 5788363 0 0\n";
    uint64_t t = 0;
    assert_int_equal(cpuburn_parse_steal(stat, 0, &t), 0);
    assert_int_equal(t, 798);
    assert_int_equal(cpuburn_parse_steal(stat, 1, &t), 0);
    assert_int_equal(t, 704); /* not cpu10's line */
    assert_int_equal(cpuburn_parse_steal(stat, 10, &t), 0);
    assert_int_equal(t, 99);
    assert_int_equal(cpuburn_parse_steal(stat, 11, &t), -1); /* truncated line */
    assert_int_equal(cpuburn_parse_steal(stat, 2, &t), -1);  /* no such core */
    assert_int_equal(cpuburn_parse_steal(stat, -1, &t), -1);
    assert_int_equal(cpuburn_parse_steal("", 0, &t), -1);
    /* the live file has a line for the core we run on */
    assert_true(cpuburn_core_steal_ns(0) >= 0);
}

static struct trace_cpu_score score(const char *name, double seconds)
{
    struct trace_cpu_score s;
    memset(&s, 0, sizeof s);
    snprintf(s.name, sizeof s.name, "%s", name);
    s.seconds = seconds;
    return s;
}

static void test_ratio(void **state)
{
    (void)state;
    struct trace_cpu_score rec[] = {score("a", 1.0), score("b", 0.5), score("c", 0.2)};
    /* target: a twice as slow, b 8x; c missing; d extra */
    struct trace_cpu_score tgt[] = {score("d", 9.0), score("b", 4.0), score("a", 2.0)};
    assert_float_equal(cpu_kernels_ratio(rec, 3, tgt, 3), 4.0, 1e-12); /* sqrt(2*8) */
    /* symmetric: the other direction is the inverse */
    assert_float_equal(cpu_kernels_ratio(tgt, 3, rec, 3), 0.25, 1e-12);
    /* identical sets: 1 */
    assert_float_equal(cpu_kernels_ratio(rec, 3, rec, 3), 1.0, 1e-12);
    /* three kernels: cube root of the product */
    struct trace_cpu_score t3[] = {score("a", 3.0), score("b", 0.5), score("c", 0.2 * 9)};
    assert_float_equal(cpu_kernels_ratio(rec, 3, t3, 3), 3.0, 1e-12);
    /* unusable times are skipped, not averaged in */
    struct trace_cpu_score bad[] = {score("a", 0.0), score("b", NAN), score("c", 0.4)};
    assert_float_equal(cpu_kernels_ratio(rec, 3, bad, 3), 2.0, 1e-12);
    assert_float_equal(cpu_kernels_ratio(bad, 3, rec, 3), 0.5, 1e-12);
    /* nothing in common */
    struct trace_cpu_score other[] = {score("x", 1.0)};
    assert_true(isnan(cpu_kernels_ratio(rec, 3, other, 1)));
    assert_true(isnan(cpu_kernels_ratio(rec, 0, rec, 3)));
}

static void hex(const uint8_t d[32], char out[65])
{
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void test_sha256_vectors(void **state)
{
    (void)state;
    uint8_t d[32];
    char h[65];
    cpu_kernels_sha256("", 0, d);
    hex(d, h);
    assert_string_equal(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    cpu_kernels_sha256("abc", 3, d);
    hex(d, h);
    assert_string_equal(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *m448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    cpu_kernels_sha256(m448, strlen(m448), d); /* padding spills into a second block */
    hex(d, h);
    assert_string_equal(h, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    static char million[1000000];
    memset(million, 'a', sizeof million);
    cpu_kernels_sha256(million, sizeof million, d);
    hex(d, h);
    assert_string_equal(h, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

static void test_kernels_run(void **state)
{
    (void)state;
    struct trace_cpu_score s[CPU_KERNELS_COUNT + 2];
    memset(s, 0, sizeof s);
    int n = cpu_kernels_run(s, CPU_KERNELS_COUNT + 2);
    assert_int_equal(n, CPU_KERNELS_COUNT);
    const char *names[] = {"zstd3-compress", "sha256", "qsort-int", "nbody-fp", CPU_KERNELS_CHAIN};
    for (int i = 0; i < n; i++) {
        assert_string_equal(s[i].name, names[i]);
        assert_true(s[i].seconds > 0.001 && s[i].seconds < 30);
    }
    assert_string_equal(s[n].name, ""); /* nothing written past the count */
    /* max bounds the output */
    struct trace_cpu_score two[2];
    assert_int_equal(cpu_kernels_run(two, 2), 2);
    assert_string_equal(two[1].name, "sha256");
    /* the ratio of a machine against itself is about 1 */
    double r = cpu_kernels_ratio(s, (uint32_t)n, s, (uint32_t)n);
    assert_float_equal(r, 1.0, 1e-12);
}

static void test_burn_consumes_cpu_time(void **state)
{
    (void)state;
    struct cpuburn_calibration cal;
    char err[256];
    assert_int_equal(cpuburn_calibrate(&cal, -1, 60000000ull, err, sizeof err), 0);
    assert_true(cal.loops_per_ns > 0.01 && cal.loops_per_ns < 100);
    assert_int_equal(cal.rounds, 6);
    /* about the 60 ms asked: the rounds' loop counts come from the warm-up's
     * rate, and this VM's speed moves by 20% within seconds (one ASan run
     * spent 48 ms), so only a gross miss fails */
    assert_true(cal.cpu_ns >= 36000000ull);
    /* a long (chunked) and a short (trusted) burn each use about the CPU
     * time asked for; wide margins, this is a functional check */
    uint64_t asks[] = {20000000ull, 200000ull};
    for (int i = 0; i < 2; i++) {
        uint64_t c0 = cpuburn_thread_cpu_ns();
        cpuburn_run(&cal, asks[i]);
        uint64_t used = cpuburn_thread_cpu_ns() - c0;
        assert_true(used > asks[i] * 7 / 10);
        assert_true(used < asks[i] * 15 / 10 + 100000);
    }
    /* pinning to a core that does not exist fails with a reason */
    assert_int_equal(cpuburn_calibrate(&cal, 4095, 0, err, sizeof err), -1);
    assert_non_null(strstr(err, "cannot pin to CPU 4095"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_effective_cpu), cmocka_unit_test(test_loops_for_ns),
        cmocka_unit_test(test_median),        cmocka_unit_test(test_parse_steal),
        cmocka_unit_test(test_ratio),         cmocka_unit_test(test_sha256_vectors),
        cmocka_unit_test(test_kernels_run),   cmocka_unit_test(test_burn_consumes_cpu_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
