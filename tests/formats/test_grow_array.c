/* test_grow_array.c - unit tests of formats/grow_array.h, the doubling
 * growth every module's arrays use: the first room, doubling until what
 * is needed fits, nothing done when it already fits, a size that would
 * pass SIZE_MAX refused before realloc sees it, and a failed realloc
 * (injected through the linker's --wrap) leaving the old array, its room
 * and its contents as they were. Never leaks what it allocates. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "grow_array.h"

/* realloc as the helper sees it (-Wl,--wrap=realloc): counts the calls and
 * fails the next one when told to. */
void *__real_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n);
static int realloc_calls, realloc_fail_next;
static size_t realloc_last_size;

void *__wrap_realloc(void *p, size_t n)
{
    realloc_calls++;
    realloc_last_size = n;
    if (realloc_fail_next) {
        realloc_fail_next = 0;
        return NULL;
    }
    return __real_realloc(p, n);
}

static int setup(void **state)
{
    (void)state;
    realloc_calls = realloc_fail_next = 0;
    realloc_last_size = 0;
    return 0;
}

static void test_first_capacity(void **state)
{
    (void)state;
    int *v = NULL;
    size_t cap = 0;
    assert_int_equal(grow_array((void **)&v, &cap, 1, sizeof *v, 64), 0);
    assert_non_null(v);
    assert_int_equal(cap, 64);
    assert_int_equal(realloc_last_size, 64 * sizeof *v);
    v[63] = 7; /* the whole room is usable (ASan checks) */
    free(v);

    /* first 0 means 1; a need past first doubles from first */
    v = NULL;
    cap = 0;
    assert_int_equal(grow_array((void **)&v, &cap, 1, sizeof *v, 0), 0);
    assert_int_equal(cap, 1);
    free(v);
    v = NULL;
    cap = 0;
    assert_int_equal(grow_array((void **)&v, &cap, 100, sizeof *v, 16), 0);
    assert_int_equal(cap, 128);
    v[99] = 1;
    free(v);
}

static void test_doubling_keeps_contents(void **state)
{
    (void)state;
    int *v = NULL;
    size_t cap = 0, n = 0;
    size_t caps_seen[8], ncaps = 0;
    for (int i = 0; i < 1000; i++) {
        if (n == cap) {
            assert_int_equal(grow_array((void **)&v, &cap, n + 1, sizeof *v, 8), 0);
            assert_true(ncaps < 8);
            caps_seen[ncaps++] = cap;
        }
        v[n++] = i * 3;
    }
    size_t want[] = {8, 16, 32, 64, 128, 256, 512, 1024};
    assert_int_equal(ncaps, 8);
    for (size_t i = 0; i < ncaps; i++)
        assert_int_equal(caps_seen[i], want[i]);
    for (int i = 0; i < 1000; i++)
        assert_int_equal(v[i], i * 3);
    free(v);
}

static void test_fits_does_nothing(void **state)
{
    (void)state;
    int *v = malloc(10 * sizeof *v), *was = v;
    assert_non_null(v);
    size_t cap = 10;
    assert_int_equal(grow_array((void **)&v, &cap, 10, sizeof *v, 64), 0);
    assert_int_equal(grow_array((void **)&v, &cap, 0, sizeof *v, 64), 0);
    assert_ptr_equal(v, was);
    assert_int_equal(cap, 10);
    assert_int_equal(realloc_calls, 0);
    free(v);
}

/* A doubled size in bytes past SIZE_MAX is refused before realloc: the
 * array and its room stay as they were. */
static void test_overflow_refused(void **state)
{
    (void)state;
    unsigned char *v = malloc(16);
    assert_non_null(v);
    memset(v, 0xab, 16);
    unsigned char *was = v;
    /* a room claimed to be half of what elem 8 can ever reach */
    size_t elem = 8, cap = SIZE_MAX / elem / 2 + 1;
    size_t cap_was = cap;
    assert_int_equal(grow_array((void **)&v, &cap, cap + 1, elem, 64), -1);
    assert_ptr_equal(v, was);
    assert_int_equal(cap, cap_was);
    assert_int_equal(realloc_calls, 0);
    /* the largest room that still doubles is allowed through to realloc */
    cap = SIZE_MAX / elem / 2;
    realloc_fail_next = 1; /* do not really ask for it */
    assert_int_equal(grow_array((void **)&v, &cap, cap + 1, elem, 64), -1);
    assert_int_equal(realloc_calls, 1);
    assert_int_equal(realloc_last_size, (SIZE_MAX / elem / 2) * 2 * elem);
    /* a need no doubling reaches, from nothing: refused, never wraps to small */
    unsigned char *none = NULL;
    size_t c0 = 0;
    assert_int_equal(grow_array((void **)&none, &c0, SIZE_MAX, 2, 64), -1);
    assert_null(none);
    assert_int_equal(c0, 0);
    /* a first room past SIZE_MAX in bytes, and elem 0 */
    assert_int_equal(grow_array((void **)&none, &c0, 1, 16, SIZE_MAX / 8), -1);
    assert_int_equal(grow_array((void **)&none, &c0, 1, 0, 64), -1);
    assert_int_equal(realloc_calls, 1);
    for (int i = 0; i < 16; i++)
        assert_int_equal(v[i], 0xab);
    free(v);
}

/* realloc fails: -1, the old array (same pointer, same room) still holds
 * what it held, and growing again later works. */
static void test_failure_keeps_old(void **state)
{
    (void)state;
    long *v = NULL;
    size_t cap = 0;
    assert_int_equal(grow_array((void **)&v, &cap, 4, sizeof *v, 4), 0);
    for (long i = 0; i < 4; i++)
        v[i] = 100 + i;
    long *was = v;
    realloc_fail_next = 1;
    assert_int_equal(grow_array((void **)&v, &cap, 5, sizeof *v, 4), -1);
    assert_ptr_equal(v, was);
    assert_int_equal(cap, 4);
    for (long i = 0; i < 4; i++)
        assert_int_equal(v[i], 100 + i);
    assert_int_equal(grow_array((void **)&v, &cap, 5, sizeof *v, 4), 0);
    assert_int_equal(cap, 8);
    for (long i = 0; i < 4; i++)
        assert_int_equal(v[i], 100 + i);
    free(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_first_capacity, setup),
        cmocka_unit_test_setup(test_doubling_keeps_contents, setup),
        cmocka_unit_test_setup(test_fits_does_nothing, setup),
        cmocka_unit_test_setup(test_overflow_refused, setup),
        cmocka_unit_test_setup(test_failure_keeps_old, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
