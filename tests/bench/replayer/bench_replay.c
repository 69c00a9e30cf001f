/* bench_replay.c - replayer speed targets (issue 5): per-event replay
 * overhead (<= 1 us) and empty-block requests per second one replayer
 * serves on one core (>= 20,000). Prints medians of several rounds and the
 * ratio against a baseline measured in the same run:
 *   overhead: replaying a block of N ops versus doing the same work directly
 *             (uncontended rwlock pairs; no-op SOCKOPT ops = pure dispatch);
 *   throughput: the replay server (dispatcher + 1 worker, pinned to core 0)
 *             versus a minimal single-thread epoll server answering the same
 *             24-byte header with 1 byte, both driven by 32 closed-loop
 *             connections from core 1.
 * `--quick` runs short rounds (what ctest runs). Both modes exit 1 when a
 * ratio against its same-run baseline is past a bound a broken replayer
 * would cross and a loaded machine does not (BENCH_MAX_* below); the
 * absolute targets are printed as met / NOT MET, never judged (a shared
 * core moves them by 2x). In a sanitizer build only the throughput ratio
 * is judged (the per-op ratios move 12 .. 55x there). */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bench_sanitizer.h"
#include "replay_exec.h"
#include "replay_fixture.h"
#include "replay_proto.h"
#include "replay_server.h"

/* Bounds on same-run ratios (measured on this 2-core VM at load average 6 .. 8,
 * --quick, 10 runs: replayed no-op / direct rwlock pair 6.9 .. 7.2, replayed
 * LOCK op / direct 8.5 .. 9.0, replay server / epoll server requests/s,
 * median of 5 paired rounds, 0.72 .. 0.87). A replayer twice as slow per
 * event or per request crosses them. */
#define BENCH_MAX_NOOP_RATIO 12.0
#define BENCH_MAX_LOCK_RATIO 14.0
#define BENCH_MIN_THROUGHPUT_RATIO 0.50

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void pin(int cpu)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    pthread_setaffinity_np(pthread_self(), sizeof s, &s);
}

/* ---- per-event overhead ------------------------------------------------ */

/* Returns the number of ratios past their bound (0 or more). */
static int bench_overhead(int nops, int rounds)
{
    struct plan *p = fixture_plan_new();
    uint32_t c = fixture_component(p, "bench", 1, 1);
    uint32_t lk = fixture_lock(p);
    uint32_t locks = fixture_block(p, c, "locks");
    for (int i = 0; i < nops / 2; i++) {
        fixture_op(p, fixture_lockop(PLAN_LOCK_ACQUIRE, lk, PLAN_LOCK_EXCLUSIVE));
        fixture_op(p, fixture_lockop(PLAN_LOCK_RELEASE, lk, PLAN_LOCK_EXCLUSIVE));
    }
    uint32_t noop = fixture_block(p, c, "sockopt");
    for (int i = 0; i < nops; i++) {
        struct plan_op o = {.kind = PLAN_OP_SOCKOPT};
        fixture_op(p, o);
    }
    char err[256];
    struct replay_config cfg = {.plan = p, .component = c, .cpu_ratio = 1};
    struct replay_engine *e = replay_engine_new(&cfg, err, sizeof err);
    struct replay_thread *t = replay_thread_new(e);
    pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
    double *base = calloc((size_t)rounds, sizeof *base),
           *lock = calloc((size_t)rounds, sizeof *lock),
           *disp = calloc((size_t)rounds, sizeof *disp);
    for (int r = 0; r < rounds; r++) {
        double t0 = now_s();
        for (int i = 0; i < nops / 2; i++) {
            pthread_rwlock_wrlock(&rw);
            pthread_rwlock_unlock(&rw);
        }
        base[r] = (now_s() - t0) / nops * 1e9;
        t0 = now_s();
        replay_exec_block(t, locks, -1, 0, 0, err, sizeof err);
        lock[r] = (now_s() - t0) / nops * 1e9;
        t0 = now_s();
        replay_exec_block(t, noop, -1, 0, 0, err, sizeof err);
        disp[r] = (now_s() - t0) / nops * 1e9;
    }
    double b = median(base, rounds), l = median(lock, rounds), d = median(disp, rounds);
    printf("per-event overhead (%d ops, median of %d rounds):\n", nops, rounds);
    printf("  baseline rwlock op, direct      %8.1f ns\n", b);
    printf("  replayed LOCK op                %8.1f ns  (overhead %.1f ns, ratio %.2f)\n", l, l - b,
           l / b);
    printf("  replayed no-op (dispatch+clock) %8.1f ns  (ratio %.2f)  target <= 1000 ns: %s\n", d,
           d / b, d <= 1000 && l - b <= 1000 ? "met" : "NOT MET");
    int bad = 0;
    if (BENCH_SANITIZED) {
        /* the replay path is instrumented, the direct rwlock (libc) is not:
         * 12 .. 55x from run to run in the ASan build, nothing to judge */
        printf("  (sanitizer build: per-op ratios printed, not judged)\n");
        goto out;
    }
    if (!(l / b <= BENCH_MAX_LOCK_RATIO)) {
        fprintf(stderr, "bench_replay: replayed LOCK op %.2fx the direct one (bound %.1fx)\n",
                l / b, BENCH_MAX_LOCK_RATIO);
        bad++;
    }
    if (!(d / b <= BENCH_MAX_NOOP_RATIO)) {
        fprintf(stderr, "bench_replay: replayed no-op %.2fx a direct rwlock op (bound %.1fx)\n",
                d / b, BENCH_MAX_NOOP_RATIO);
        bad++;
    }
out:
    free(base);
    free(lock);
    free(disp);
    replay_thread_free(t);
    replay_engine_free(e);
    fixture_plan_free(p);
    return bad;
}

/* ---- throughput ---------------------------------------------------------- */

struct echo_server {
    int lfd, stop;
};

/* Baseline: one thread, epoll, reads a 24-byte header, answers 1 byte. */
static void *echo_main(void *arg)
{
    struct echo_server *es = arg;
    pin(0);
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = es->lfd}, evs[64];
    epoll_ctl(ep, EPOLL_CTL_ADD, es->lfd, &ev);
    while (!__atomic_load_n(&es->stop, __ATOMIC_RELAXED)) {
        int n = epoll_wait(ep, evs, 64, 50);
        for (int i = 0; i < n; i++) {
            int fd = evs[i].data.fd;
            if (fd == es->lfd) {
                int c = accept(es->lfd, NULL, NULL);
                struct epoll_event cev = {.events = EPOLLIN, .data.fd = c};
                epoll_ctl(ep, EPOLL_CTL_ADD, c, &cev);
                continue;
            }
            unsigned char h[REPLAY_HEADER_SIZE];
            if (recv(fd, h, sizeof h, MSG_WAITALL) != (ssize_t)sizeof h) {
                close(fd);
                continue;
            }
            send(fd, "x", 1, MSG_NOSIGNAL);
        }
    }
    close(ep);
    return NULL;
}

/* 32 closed-loop connections for `seconds`; requests per second. */
static double load(const char *addr, uint32_t block, uint64_t token, double seconds)
{
    enum { NCONN = 32 };
    int fds[NCONN], ep = epoll_create1(0);
    char err[256];
    unsigned char h[REPLAY_HEADER_SIZE];
    struct replay_header hd = {.block = block, .token = token, .response_bytes = 1};
    replay_header_encode(&hd, h);
    for (int i = 0; i < NCONN; i++) {
        fds[i] = replay_connect(addr, 1, err, sizeof err);
        struct epoll_event ev = {.events = EPOLLIN, .data.fd = fds[i]};
        epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &ev);
        send(fds[i], h, sizeof h, MSG_NOSIGNAL);
    }
    long done = 0;
    double t0 = now_s(), end = t0 + seconds;
    struct epoll_event evs[NCONN];
    while (now_s() < end) {
        int n = epoll_wait(ep, evs, NCONN, 100);
        for (int i = 0; i < n; i++) {
            char c;
            if (recv(evs[i].data.fd, &c, 1, 0) == 1) {
                done++;
                send(evs[i].data.fd, h, sizeof h, MSG_NOSIGNAL);
            }
        }
    }
    double rate = (double)done / (now_s() - t0);
    for (int i = 0; i < NCONN; i++)
        close(fds[i]);
    close(ep);
    return rate;
}

/* Returns 1 when the replay server's rate against the baseline is below
 * its bound, else 0. */
static int bench_throughput(double seconds, int rounds)
{
    struct plan *p = fixture_plan_new();
    uint32_t c = fixture_component(p, "bench", 1, 1);
    uint32_t empty = fixture_block(p, c, "empty");
    char err[256], addr[64];
    struct replay_config cfg = {.plan = p, .component = c, .token = 99, .cpu_ratio = 1};
    struct replay_engine *e = replay_engine_new(&cfg, err, sizeof err);
    double *rep = calloc((size_t)rounds, sizeof *rep), *base = calloc((size_t)rounds, sizeof *base),
           *ratio = calloc((size_t)rounds, sizeof *ratio);
    for (int r = 0; r < rounds; r++) {
        /* replay server: its threads inherit core 0 from this thread */
        pin(0);
        int l = replay_listen("127.0.0.1:0", err, sizeof err);
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        getsockname(l, (struct sockaddr *)&ss, &sl);
        replay_addr_format((struct sockaddr *)&ss, addr, sizeof addr);
        struct replay_server *s = replay_server_start(e, l, 1, NULL, err, sizeof err);
        pin(1);
        rep[r] = load(addr, empty, 99, seconds);
        replay_server_stop(s);

        struct echo_server es = {.lfd = replay_listen("127.0.0.1:0", err, sizeof err)};
        sl = sizeof ss;
        getsockname(es.lfd, (struct sockaddr *)&ss, &sl);
        replay_addr_format((struct sockaddr *)&ss, addr, sizeof addr);
        pthread_t th;
        pthread_create(&th, NULL, echo_main, &es);
        base[r] = load(addr, 0, 0, seconds);
        __atomic_store_n(&es.stop, 1, __ATOMIC_RELAXED);
        pthread_join(th, NULL);
        close(es.lfd);
        ratio[r] = base[r] > 0 ? rep[r] / base[r] : 0;
    }
    /* paired: each round's ratio, then their median (the load moves both
     * sides of a round alike, not two rounds alike) */
    double rm = median(rep, rounds), bm = median(base, rounds), qm = median(ratio, rounds);
    printf("empty-block requests/s on one core (32 connections, median of %d x %.1f s):\n", rounds,
           seconds);
    printf("  baseline epoll server           %10.0f /s\n", bm);
    printf(
        "  replay server (1 worker)        %10.0f /s  (median paired ratio %.2f)  target >= 20000: "
        "%s\n",
        rm, qm, rm >= 20000 ? "met" : "NOT MET");
    int bad = !(qm >= BENCH_MIN_THROUGHPUT_RATIO);
    if (bad)
        fprintf(stderr,
                "bench_replay: replay server at %.2fx the baseline's requests/s (bound %.2fx)\n",
                qm, BENCH_MIN_THROUGHPUT_RATIO);
    free(rep);
    free(base);
    free(ratio);
    replay_engine_free(e);
    fixture_plan_free(p);
    return bad;
}

int main(int argc, char **argv)
{
    int quick = argc > 1 && !strcmp(argv[1], "--quick");
    printf("load average: ");
    FILE *la = fopen("/proc/loadavg", "r");
    char lbuf[128] = "?";
    if (la && fgets(lbuf, sizeof lbuf, la))
        lbuf[strcspn(lbuf, "\n")] = 0;
    if (la)
        fclose(la);
    printf("%s\n", lbuf);
    /* the overhead rounds are ~1 ms each: many of them make the median
     * load-proof at no cost */
    int bad = bench_overhead(quick ? 20000 : 200000, quick ? 21 : 9);
    bad += bench_throughput(quick ? 0.3 : 2.0, 5);
    printf("verdict: %s\n",
           bad ? "FAIL (a ratio past its bound)" : "PASS (every ratio within its bound)");
    return bad ? 1 : 0;
}
