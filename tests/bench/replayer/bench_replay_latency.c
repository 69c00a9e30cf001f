/* bench_replay_latency.c - the replayer's fixed cost on the shortest
 * request (issue 5: `GET /static` predicted ~30 us slow). One keep-alive
 * connection sends the /static shape - a 24-byte replay header + 76 request
 * bytes, 2063 response bytes, no other work - one request at a time with an
 * idle gap between requests (the server's threads go to sleep, as at 40
 * requests/s). Paired, interleaved rounds against a baseline measured in the
 * same run: a thread blocked in recv on the connection that answers the
 * same bytes (what the sample app's worker does on a keep-alive
 * connection). Prints the median round trip of each and the difference:
 * the replayer's added latency.
 *
 * usage: bench_replay_latency [--rounds N] [--requests N] [--gap-us N]
 *                             [--workers N] [--quick]
 * Exits 1 when a request was not answered in full, or when the median of
 * the rounds' paired ratios (replay / baseline median round trip) is above
 * BENCH_MAX_RATIO: a server that doubles the round trip (issue 5's 30 us on
 * a ~30 us trip) crosses it, a loaded machine does not (measured below).
 * --quick (what ctest runs): 7 rounds of 40 requests, ~1.3 s.
 * Must never: be a timed unit test (the bound is a same-run ratio). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "replay_exec.h"
#include "replay_fixture.h"
#include "replay_proto.h"
#include "replay_server.h"

enum { REQUEST_BYTES = 76, RESPONSE_BYTES = 2063 };

/* Bound on the median paired ratio. Measured on this 2-core VM, --quick,
 * load average 9.4 .. 10.3, 25 runs (5 or 7 rounds): 1.05 .. 1.35; with a
 * 30 us busy wait per request in the server: 2.07 .. 2.20. */
#define BENCH_MAX_RATIO 1.6

static uint64_t bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int bench_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The baseline server: accepts one connection, answers each request from a
 * thread blocked in recv. */
static void *bench_baseline(void *arg)
{
    int lfd = *(int *)arg;
    int fd = accept(lfd, NULL, NULL);
    if (fd < 0)
        return NULL;
    unsigned char buf[REPLAY_HEADER_SIZE + REQUEST_BYTES];
    for (;;) {
        if (replay_recv_exact(fd, buf, sizeof buf))
            break;
        if (replay_send_filler(fd, RESPONSE_BYTES, 0))
            break;
    }
    close(fd);
    return NULL;
}

/* Sends `requests` requests on a new connection to addr, one at a time,
 * gap_us apart; fills lat (us) and returns 0 if every answer was whole. */
static int bench_client(const char *addr, uint32_t block, uint64_t token, int requests, int gap_us,
                        double *lat)
{
    char err[256];
    int fd = replay_connect(addr, 1, err, sizeof err);
    if (fd < 0) {
        fprintf(stderr, "bench_replay_latency: %s\n", err);
        return -1;
    }
    struct replay_header h = {.block = block,
                              .token = token,
                              .request_bytes = REQUEST_BYTES,
                              .response_bytes = RESPONSE_BYTES};
    unsigned char msg[REPLAY_HEADER_SIZE + REQUEST_BYTES] = {0}, resp[RESPONSE_BYTES];
    replay_header_encode(&h, msg);
    int rc = 0;
    for (int i = 0; i < requests && !rc; i++) {
        struct timespec gap = {0, (long)gap_us * 1000};
        nanosleep(&gap, NULL);
        uint64_t t0 = bench_now_ns();
        if (replay_send_exact(fd, msg, sizeof msg, 0) || replay_recv_exact(fd, resp, sizeof resp))
            rc = -1;
        lat[i] = (double)(bench_now_ns() - t0) / 1e3;
    }
    close(fd);
    return rc;
}

int main(int argc, char **argv)
{
    int rounds = 7, requests = 400, gap_us = 2000, workers = 8, quick = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--requests") && i + 1 < argc)
            requests = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--gap-us") && i + 1 < argc)
            gap_us = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--workers") && i + 1 < argc)
            workers = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else {
            fprintf(stderr, "usage: bench_replay_latency [--rounds N] [--requests N] "
                            "[--gap-us N] [--workers N] [--quick]\n");
            return 2;
        }
    }
    if (quick)
        rounds = 7, requests = 40;
    if (rounds < 1 || rounds > 99 || requests < 1 || requests > 100000 || gap_us < 0 ||
        gap_us > 1000000 || workers < 1 || workers > 64) {
        fprintf(stderr, "bench_replay_latency: option out of range\n");
        return 2;
    }
    struct plan *p = fixture_plan_new();
    uint32_t c = fixture_component(p, "frontend", (uint32_t)workers, 1);
    uint32_t block = fixture_block(p, c, "GET /static");
    fixture_op(p, fixture_net(0, REQUEST_BYTES, 0));
    fixture_op(p, fixture_net(1, RESPONSE_BYTES, 0));
    char err[256];
    uint64_t token = 0x1234abcd5678ef00ull;
    struct replay_config cfg = {.plan = p, .component = c, .cpu_ratio = 1, .token = token};
    struct replay_engine *e = replay_engine_new(&cfg, err, sizeof err);
    if (!e) {
        fprintf(stderr, "bench_replay_latency: %s\n", err);
        return 1;
    }
    double *lat = calloc((size_t)requests, sizeof *lat);
    double *base_med = calloc((size_t)rounds, sizeof(double));
    double *repl_med = calloc((size_t)rounds, sizeof(double));
    double *diff = calloc((size_t)rounds, sizeof(double));
    double *ratio = calloc((size_t)rounds, sizeof(double));
    if (!lat || !base_med || !repl_med || !diff || !ratio)
        return 1;
    int status = 0;
    for (int r = 0; r < rounds && !status; r++) {
        /* baseline */
        int lfd = replay_listen("127.0.0.1:0", err, sizeof err);
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        char addr[128];
        if (lfd < 0 || getsockname(lfd, (struct sockaddr *)&ss, &sl)) {
            fprintf(stderr, "bench_replay_latency: listen: %s\n", err);
            return 1;
        }
        replay_addr_format((struct sockaddr *)&ss, addr, sizeof addr);
        pthread_t th;
        pthread_create(&th, NULL, bench_baseline, &lfd);
        status |= bench_client(addr, block, token, requests, gap_us, lat);
        pthread_join(th, NULL);
        close(lfd);
        base_med[r] = bench_median(lat, requests);
        /* the replay server */
        lfd = replay_listen("127.0.0.1:0", err, sizeof err);
        sl = sizeof ss;
        if (lfd < 0 || getsockname(lfd, (struct sockaddr *)&ss, &sl)) {
            fprintf(stderr, "bench_replay_latency: listen: %s\n", err);
            return 1;
        }
        replay_addr_format((struct sockaddr *)&ss, addr, sizeof addr);
        struct replay_server *s = replay_server_start(e, lfd, workers, NULL, err, sizeof err);
        if (!s) {
            fprintf(stderr, "bench_replay_latency: %s\n", err);
            return 1;
        }
        status |= bench_client(addr, block, token, requests, gap_us, lat);
        /* the counter moves just after the last answer is sent */
        uint64_t served = 0;
        for (int w = 0; w < 1000 && (served = replay_server_served(s)) < (uint64_t)requests; w++)
            nanosleep(&(struct timespec){0, 1000000}, NULL);
        replay_server_stop(s);
        if (served != (uint64_t)requests) {
            fprintf(stderr, "bench_replay_latency: served %llu of %d requests\n",
                    (unsigned long long)served, requests);
            status = 1;
        }
        repl_med[r] = bench_median(lat, requests);
        diff[r] = repl_med[r] - base_med[r];
        ratio[r] = repl_med[r] / base_med[r];
    }
    if (status) {
        fprintf(stderr, "bench_replay_latency: a request was not answered in full\n");
    } else {
        double b = bench_median(base_med, rounds), rp = bench_median(repl_med, rounds);
        printf("round trip of the /static shape (%d+%d bytes), %d requests %d us apart, "
               "median of %d rounds:\n",
               REQUEST_BYTES, RESPONSE_BYTES, requests, gap_us, rounds);
        printf("  baseline (thread blocked in recv)   %7.1f us\n", b);
        printf("  replay server (%2d workers)          %7.1f us  (ratio %.2f, added %.1f us; "
               "median of paired differences %.1f us)\n",
               workers, rp, rp / b, rp - b, bench_median(diff, rounds));
        double q = bench_median(ratio, rounds);
        printf("  median of paired ratios %.2f (bound %.2f): %s\n", q, BENCH_MAX_RATIO,
               q <= BENCH_MAX_RATIO ? "PASS" : "FAIL");
        if (!(q <= BENCH_MAX_RATIO)) {
            fprintf(stderr,
                    "bench_replay_latency: the replay server's round trip is %.2fx the "
                    "baseline's (bound %.2fx)\n",
                    q, BENCH_MAX_RATIO);
            status = 1;
        }
    }
    free(lat);
    free(base_med);
    free(repl_med);
    free(diff);
    free(ratio);
    replay_engine_free(e);
    fixture_plan_free(p);
    return status;
}
