/* test_nodeps_unit.c - the --no-deps worker sequences (replayer/replay_nodeps):
 * blocks grouped by recorded worker in start order, an early request held
 * until the blocks before it were taken, a lost block skipped after the hold
 * time, reset back to the first block, unreachable blocks left out, stop
 * waking a waiting worker. Uses pipes as stand-in connections (never read). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <pthread.h>

#include "replay_fixture.h"
#include "replay_nodeps.h"

/* frontend with 2 workers: worker 0 served blocks a (t=10) then c (t=30),
 * worker 1 served b (t=20); d is never requested. */
static struct plan *nodeps_plan(uint32_t *a, uint32_t *b, uint32_t *c, uint32_t *d)
{
    struct plan *p = fixture_plan_new();
    p->version_major = 1;
    p->version_minor = 1;
    uint32_t fe = fixture_component(p, "fe", 2, 1);
    *c = fixture_block(p, fe, "GET /c");
    *a = fixture_block(p, fe, "GET /a");
    *b = fixture_block(p, fe, "GET /b");
    *d = fixture_block(p, fe, "GET /d");
    p->blocks[*a].worker = 0, p->blocks[*a].start_ns = 10;
    p->blocks[*b].worker = 1, p->blocks[*b].start_ns = 20;
    p->blocks[*c].worker = 0, p->blocks[*c].start_ns = 30;
    p->blocks[*d].worker = 1, p->blocks[*d].start_ns = 40;
    fixture_request(p, *a, 10, 0, 0);
    fixture_request(p, *b, 20, 0, 0);
    fixture_request(p, *c, 30, 0, 0);
    return p;
}

static int nodeps_fd(void)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    close(fds[1]);
    return fds[0];
}

static void test_order_and_hold(void **state)
{
    (void)state;
    uint32_t a, b, c, d;
    struct plan *p = nodeps_plan(&a, &b, &c, &d);
    char err[256];
    struct replay_nodeps *n = replay_nodeps_new(p, 0, 0.3, err, sizeof err);
    assert_non_null(n);
    assert_int_equal(replay_nodeps_workers(n), 2);
    assert_int_equal(replay_nodeps_offer(n, d, 99, 0, 0), 0); /* unreachable: not held */
    /* c arrives before a: worker 0 must take a first */
    int fc = nodeps_fd(), fa = nodeps_fd(), fb = nodeps_fd();
    assert_int_equal(replay_nodeps_offer(n, c, fc, 3, 4), 1);
    assert_int_equal(replay_nodeps_offer(n, a, fa, 1, 2), 1);
    assert_int_equal(replay_nodeps_offer(n, b, fb, 5, 6), 1);
    uint32_t blk, rq, rs;
    int fd;
    assert_int_equal(replay_nodeps_next(n, 0, &blk, &fd, &rq, &rs), 0);
    assert_int_equal(blk, a);
    assert_int_equal(fd, fa);
    assert_int_equal(rq, 1);
    assert_int_equal(rs, 2);
    assert_int_equal(replay_nodeps_next(n, 0, &blk, &fd, &rq, &rs), 0);
    assert_int_equal(blk, c);
    assert_int_equal(fd, fc);
    assert_int_equal(replay_nodeps_next(n, 1, &blk, &fd, &rq, &rs), 0);
    assert_int_equal(blk, b);
    assert_int_equal(rs, 6);
    /* the sequence wraps: worker 0 waits for a again; c held, a never comes:
     * skipped after the hold time (0.3 s), not before */
    int fc2 = nodeps_fd();
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(replay_nodeps_offer(n, c, fc2, 0, 0), 1);
    assert_int_equal(replay_nodeps_next(n, 0, &blk, &fd, &rq, &rs), 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double waited = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    assert_int_equal(blk, c);
    assert_int_equal(fd, fc2);
    assert_true(waited >= 0.29 && waited < 2.0);
    assert_int_equal(replay_nodeps_skipped(n), 1);
    /* reset: worker 0 is back at a; c is held again until a comes */
    replay_nodeps_reset(n);
    int fc3 = nodeps_fd(), fa3 = nodeps_fd();
    assert_int_equal(replay_nodeps_offer(n, c, fc3, 0, 0), 1);
    assert_int_equal(replay_nodeps_offer(n, a, fa3, 0, 0), 1);
    assert_int_equal(replay_nodeps_next(n, 0, &blk, &fd, &rq, &rs), 0);
    assert_int_equal(blk, a);
    assert_int_equal(replay_nodeps_skipped(n), 1);
    close(fa);
    close(fb);
    close(fc);
    close(fc2);
    close(fa3);
    replay_nodeps_free(n); /* closes the still held fc3 */
    fixture_plan_free(p);
}

static void *nodeps_waiter(void *arg)
{
    uint32_t blk, rq, rs;
    int fd;
    return (void *)(intptr_t)replay_nodeps_next(arg, 1, &blk, &fd, &rq, &rs);
}

static void test_stop_wakes(void **state)
{
    (void)state;
    uint32_t a, b, c, d;
    struct plan *p = nodeps_plan(&a, &b, &c, &d);
    char err[256];
    struct replay_nodeps *n = replay_nodeps_new(p, 0, 5, err, sizeof err);
    assert_non_null(n);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, nodeps_waiter, n), 0);
    usleep(100000);
    replay_nodeps_stop(n);
    void *rv;
    pthread_join(th, &rv);
    assert_int_equal((intptr_t)rv, -1);
    replay_nodeps_free(n);
    fixture_plan_free(p);
}

static void test_no_blocks(void **state)
{
    (void)state;
    uint32_t a, b, c, d;
    struct plan *p = nodeps_plan(&a, &b, &c, &d);
    uint32_t other = fixture_component(p, "db-less", 1, 0);
    char err[256] = "";
    assert_null(replay_nodeps_new(p, other, 5, err, sizeof err));
    assert_string_equal(err, "--no-deps: component 1 has no block the schedule reaches");
    fixture_plan_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_and_hold),
        cmocka_unit_test(test_stop_wakes),
        cmocka_unit_test(test_no_blocks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
