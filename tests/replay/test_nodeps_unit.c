/* test_nodeps_unit.c - the --no-deps worker sequences (replayer/replay_nodeps):
 * blocks grouped by recorded worker in start order, an early request held
 * until the blocks before it were taken, a lost block skipped after the hold
 * time, reset back to the first block, unreachable blocks left out, stop
 * waking a waiting worker, blocks shared by several requests and calls (once
 * per use, schedule order), the limit on uses, a worker with nothing to
 * replay. Uses pipes as stand-in connections (never read). */
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

/* --no-deps starts one thread per recorded worker: a block naming worker
 * 1048575 (plan.h's limit) once meant 2^20 threads; at most PLAN_MAX_WORKERS
 * recorded workers are taken (issue 24 item 1), and exactly that many
 * still are. */
static void test_too_many_workers(void **state)
{
    (void)state;
    for (int over = 0; over < 2; over++) {
        struct plan *p = fixture_plan_new();
        uint32_t fe = fixture_component(p, "fe", 1, 1);
        uint32_t blk = fixture_block(p, fe, "GET /");
        p->blocks[blk].worker = over ? PLAN_MAX_WORKER_INDEX : PLAN_MAX_WORKERS - 1;
        fixture_request(p, blk, 0, 0, 0);
        char err[256] = "";
        struct replay_nodeps *n = replay_nodeps_new(p, fe, 0.1, err, sizeof err);
        if (over) {
            assert_null(n);
            assert_string_equal(err, "--no-deps: component 0's blocks name 1048576 recorded "
                                     "workers, more than the limit 4096 (one thread each)");
        } else {
            if (!n)
                fail_msg("%s", err);
            assert_int_equal(replay_nodeps_workers(n), PLAN_MAX_WORKERS);
            replay_nodeps_free(n);
        }
        fixture_plan_free(p);
    }
}

/* Takes worker w's next block and checks it is `want`. */
static void nodeps_expect(struct replay_nodeps *n, uint32_t w, uint32_t want)
{
    uint32_t blk, rq, rs;
    int fd;
    assert_int_equal(replay_nodeps_next(n, w, &blk, &fd, &rq, &rs), 0);
    assert_int_equal(blk, want);
    close(fd);
}

/* A hand-built plan names one block from several requests and calls, and
 * leaves worker and start_ns 0: each worker's sequence holds a block once
 * per time one pass replays it, in schedule order. With one entry per block
 * the third x below waited for a y that never came (test_run_e2e.sh's
 * --no-deps run lost a third of its requests). */
static void test_shared_blocks(void **state)
{
    (void)state;
    struct plan *p = fixture_plan_new();
    uint32_t fe = fixture_component(p, "fe", 2, 1);
    uint32_t app = fixture_component(p, "app", 2, 0);
    uint32_t c1 = fixture_block(p, app, "c1");
    uint32_t c2 = fixture_block(p, app, "c2");
    static const int32_t segs[] = {10, -10};
    uint32_t x = fixture_block(p, fe, "GET /x"); /* calls c1 then c2 */
    fixture_call(p, c1, segs, 2, 0, 0);
    fixture_call(p, c2, segs, 2, 0, 0);
    uint32_t y = fixture_block(p, fe, "GET /y"); /* calls c2 */
    fixture_call(p, c2, segs, 2, 0, 0);
    fixture_request(p, y, 0, 0, 0);
    fixture_request(p, x, 10, 0, 0);
    fixture_request(p, x, 20, 0, 0);
    char err[256];
    struct replay_nodeps *n = replay_nodeps_new(p, fe, 0.2, err, sizeof err);
    assert_non_null(n);
    assert_int_equal(replay_nodeps_workers(n), 1);
    /* both x arrive first: y still goes first, then the two x */
    assert_int_equal(replay_nodeps_offer(n, x, nodeps_fd(), 0, 0), 1);
    assert_int_equal(replay_nodeps_offer(n, x, nodeps_fd(), 0, 0), 1);
    assert_int_equal(replay_nodeps_offer(n, y, nodeps_fd(), 0, 0), 1);
    nodeps_expect(n, 0, y);
    nodeps_expect(n, 0, x);
    nodeps_expect(n, 0, x);
    replay_nodeps_free(n);
    /* app replays c2 (y), c1 c2 (x), c1 c2 (x): every call served, none skipped */
    n = replay_nodeps_new(p, app, 0.2, err, sizeof err);
    assert_non_null(n);
    for (int i = 0; i < 2; i++)
        assert_int_equal(replay_nodeps_offer(n, c1, nodeps_fd(), 0, 0), 1);
    for (int i = 0; i < 3; i++)
        assert_int_equal(replay_nodeps_offer(n, c2, nodeps_fd(), 0, 0), 1);
    const uint32_t want[] = {c2, c1, c2, c1, c2};
    for (int i = 0; i < 5; i++)
        nodeps_expect(n, 0, want[i]);
    assert_int_equal(replay_nodeps_skipped(n), 0);
    replay_nodeps_free(n);
    fixture_plan_free(p);
}

/* Block k calls block k-1 twice: one request on the last of 28 replays
 * block 0 2^27 times a pass, over the limit: refused with one line instead
 * of building the sequence. */
static void test_too_many_uses(void **state)
{
    (void)state;
    struct plan *p = fixture_plan_new();
    uint32_t fe = fixture_component(p, "fe", 1, 1);
    static const int32_t segs[] = {1, -1};
    uint32_t prev = fixture_block(p, fe, "leaf");
    for (int k = 1; k < 28; k++) {
        uint32_t b = fixture_block(p, fe, "node");
        fixture_call(p, prev, segs, 2, 0, 0);
        fixture_call(p, prev, segs, 2, 0, 0);
        prev = b;
    }
    fixture_request(p, prev, 0, 0, 0);
    char err[256] = "";
    assert_null(replay_nodeps_new(p, fe, 5, err, sizeof err));
    assert_string_equal(err, "--no-deps: one pass of the schedule replays blocks more than "
                             "67108864 times, the limit (one sequence entry each; the plan's "
                             "requests and calls share blocks)");
    fixture_plan_free(p);
}

static void *nodeps_waiter0(void *arg)
{
    uint32_t blk, rq, rs;
    int fd;
    return (void *)(intptr_t)replay_nodeps_next(arg, 0, &blk, &fd, &rq, &rs);
}

/* Recorded worker 0 served only a block the schedule never reaches, worker
 * 1 the requested one: worker 0's thread has an empty sequence and must
 * only wait for stop (it read past its empty sequence before). */
static void test_empty_worker(void **state)
{
    (void)state;
    struct plan *p = fixture_plan_new();
    uint32_t fe = fixture_component(p, "fe", 2, 1);
    uint32_t unused = fixture_block(p, fe, "GET /unused");
    uint32_t used = fixture_block(p, fe, "GET /used");
    p->blocks[unused].worker = 0;
    p->blocks[used].worker = 1;
    fixture_request(p, used, 0, 0, 0);
    char err[256];
    struct replay_nodeps *n = replay_nodeps_new(p, fe, 0.1, err, sizeof err);
    assert_non_null(n);
    assert_int_equal(replay_nodeps_workers(n), 2);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, nodeps_waiter0, n), 0);
    assert_int_equal(replay_nodeps_offer(n, used, nodeps_fd(), 0, 0), 1);
    nodeps_expect(n, 1, used);
    usleep(200000); /* past the hold time: worker 0 must still be waiting */
    replay_nodeps_stop(n);
    void *rv;
    pthread_join(th, &rv);
    assert_int_equal((intptr_t)rv, -1);
    replay_nodeps_free(n);
    fixture_plan_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_and_hold), cmocka_unit_test(test_stop_wakes),
        cmocka_unit_test(test_no_blocks),      cmocka_unit_test(test_shared_blocks),
        cmocka_unit_test(test_too_many_uses),  cmocka_unit_test(test_too_many_workers),
        cmocka_unit_test(test_empty_worker),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
