/* test_analyze_skew.c - the clock skew estimate of the call matching
 * (deps_call_skew_note in deps_call.c) on a bare analyzer state: a callee
 * block must lie within the call that sent its request, so each matched
 * pair bounds the callee host's clock offset from both sides. With a known
 * offset and symmetric network delays one pair finds it exactly; a
 * consistent later pair changes nothing; pairs that narrow the bounds move
 * the estimate to the middle of what all pairs allow; ends on one host
 * never count. Times are chosen by hand so every number is known exactly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "deps_call.h"
#include "deps_fx.h"

#define MS 1000000ll
#define T0 10000000000ll /* the caller's call starts here (10 s, common timeline) */

/* file 0 (the caller) and file 2 on host 0, file 1 (the callee) on host 1 */
static int fx_setup(void **state)
{
    static const uint32_t hosts[] = {0, 1, 0};
    *state = deps_fx_new(3, hosts, 2);
    return *state ? 0 : -1;
}

static int fx_teardown(void **state)
{
    deps_fx_free(*state);
    return 0;
}

/* One matched pair: the caller (file 0) called during [t0, t1]; the callee
 * block of callee_file ran during [start, end], all on the common timeline
 * as the analyzer sees them (the callee's clock as corrected so far). */
static void pair(struct deps_state *s, uint32_t callee_file, int64_t t0, int64_t t1, int64_t start,
                 int64_t end)
{
    struct deps_end caller_end = {.file = 0};
    struct deps_block caller = {.end = &caller_end};
    struct deps_call c = {.t0_c = (uint64_t)t0, .t1_c = (uint64_t)t1};
    struct deps_served sv = {.start_c = (uint64_t)start, .end_c = (uint64_t)end};
    deps_call_skew_note(s, &caller, &c, &sv, callee_file);
}

/* The callee's clock runs `offset` ahead; the request takes 2 ms to get
 * there and the response 2 ms to come back: one pair says offset exactly. */
static void known_offset(void **state, int64_t offset)
{
    struct deps_state *s = ((struct deps_fx *)*state)->s;
    s->in.all_read_until = 12345;
    pair(s, 1, T0, T0 + 20 * MS, T0 + offset + 2 * MS, T0 + offset + 18 * MS);
    assert_int_equal(s->nskews, 1);
    assert_int_equal(s->skews[0].caller_host, 0);
    assert_int_equal(s->skews[0].callee_host, 1);
    assert_int_equal(s->skews[0].pairs, 1);
    assert_int_equal(s->skews[0].applied, offset);
    /* the callee host's events are moved back by it from now on, and the
     * merge re-reads what it had read ahead */
    assert_int_equal(s->in.hosts[1].corrected_ns, -offset);
    assert_int_equal(s->in.hosts[1].offset_ns, -offset);
    assert_int_equal(s->in.hosts[0].corrected_ns, 0);
    assert_int_equal(s->in.all_read_until, 0);
    /* a later pair as the analyzer sees it after the correction (1 ms each
     * way) lies within the bounds: nothing moves */
    s->in.all_read_until = 12345;
    pair(s, 1, T0 + 100 * MS, T0 + 110 * MS, T0 + 101 * MS, T0 + 109 * MS);
    assert_int_equal(s->skews[0].pairs, 2);
    assert_int_equal(s->skews[0].applied, offset);
    assert_int_equal(s->in.hosts[1].corrected_ns, -offset);
    assert_int_equal(s->in.all_read_until, 12345);
    /* what remains: the callee's clock may be 1 ms either way */
    assert_int_equal(s->skews[0].max_lo, -1 * MS);
    assert_int_equal(s->skews[0].min_hi, 1 * MS);
}

static void test_callee_ahead(void **state)
{
    known_offset(state, 3000 * MS);
}

static void test_callee_behind(void **state)
{
    known_offset(state, -3000 * MS);
}

/* Pairs that are not symmetric: each gives an interval for the offset, and
 * the estimate is the middle of their intersection. */
static void test_bounds_narrow(void **state)
{
    struct deps_state *s = ((struct deps_fx *)*state)->s;
    const int64_t d = 500 * MS; /* the true offset */
    /* request 2 ms, response 4 ms: the offset is within [d - 4, d + 2] ms */
    pair(s, 1, T0, T0 + 20 * MS, T0 + d + 2 * MS, T0 + d + 16 * MS);
    assert_int_equal(s->skews[0].applied, d - 1 * MS);
    /* seen after that correction (the callee now looks 1 ms early): request
     * 3 ms, response 0.5 ms, so the offset is within [d - 0.5, d + 3] ms of
     * the truth; together [d - 0.5, d + 2] ms, whose middle is d + 0.75 ms */
    int64_t late = 1 * MS;
    pair(s, 1, T0 + 50 * MS, T0 + 60 * MS, T0 + 50 * MS + late + 3 * MS,
         T0 + 60 * MS + late - MS / 2);
    assert_int_equal(s->skews[0].pairs, 2);
    assert_int_equal(s->skews[0].applied, d + 750000);
    assert_int_equal(s->in.hosts[1].corrected_ns, -(d + 750000));
    assert_int_equal(s->skews[0].max_lo, -1250000);
    assert_int_equal(s->skews[0].min_hi, 1250000);
}

/* A callee block longer than its call (the bounds cross): the lower bound
 * wins, so the callee's end is never after the call's. */
static void test_bounds_cross(void **state)
{
    struct deps_state *s = ((struct deps_fx *)*state)->s;
    const int64_t d = 200 * MS;
    pair(s, 1, T0, T0 + 10 * MS, T0 + d, T0 + d + 12 * MS);
    assert_int_equal(s->skews[0].applied, d + 2 * MS);
    assert_int_equal(s->in.hosts[1].corrected_ns, -(d + 2 * MS));
}

/* Two ends on one host share its clock: no estimate, no correction. */
static void test_same_host(void **state)
{
    struct deps_state *s = ((struct deps_fx *)*state)->s;
    pair(s, 2, T0, T0 + 20 * MS, T0 + 3000 * MS, T0 + 3010 * MS);
    assert_int_equal(s->nskews, 0);
    assert_int_equal(s->in.hosts[0].corrected_ns, 0);
    assert_int_equal(s->in.hosts[1].corrected_ns, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_callee_ahead, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_callee_behind, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_bounds_narrow, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_bounds_cross, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_same_host, fx_setup, fx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
