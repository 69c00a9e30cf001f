/* test_replay_unit.c - the replayer's protocol and block execution on
 * hand-built plans: header bytes, exact request/response bytes per
 * segment, nested-call segments as a callee sees them, pooled versus
 * per-call connections, lock semantics (exclusive, shared, failed try,
 * locks left held), file offsets and sizes on the dummy files, EXECUTE
 * parameter rendering, a driver run against an in-process server
 * (good token and bad token), a send made late counted in its response
 * time, an event-loop server (every request's own work on the loop's one
 * thread, waits overlapping, no client holding the loop up), a worker's memory bounded whatever the
 * plan's files, locks and FILE op sizes, and FILE writes never through a link planted among the
 * dummy files. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "dummy_files.h"
#include "replay_db_pg.h"
#include "replay_drive.h"
#include "replay_exec.h"
#include "replay_fixture.h"
#include "replay_proto.h"
#include "replay_server.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A connected TCP pair on loopback: *a is the client end, *b the server end. */
static void tcp_pair(int *a, int *b)
{
    char err[256];
    int l = replay_listen("127.0.0.1:0", err, sizeof err);
    assert_true(l >= 0);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    assert_int_equal(getsockname(l, (struct sockaddr *)&ss, &sl), 0);
    char addr[64];
    replay_addr_format((struct sockaddr *)&ss, addr, sizeof addr);
    *a = replay_connect(addr, 1, err, sizeof err);
    assert_true(*a >= 0);
    *b = accept(l, NULL, NULL);
    assert_true(*b >= 0);
    close(l);
}

static void test_header_bytes(void **state)
{
    (void)state;
    struct replay_header h = {.block = 0x01020304,
                              .token = 0x1122334455667788ull,
                              .request_bytes = 10,
                              .response_bytes = 0x10000};
    unsigned char b[REPLAY_HEADER_SIZE];
    replay_header_encode(&h, b);
    static const unsigned char want[REPLAY_HEADER_SIZE] = {
        'P',  'R',  'P',  '1',  0x04, 0x03, 0x02, 0x01, 0x88, 0x77, 0x66, 0x55,
        0x44, 0x33, 0x22, 0x11, 10,   0,    0,    0,    0,    0,    1,    0};
    assert_memory_equal(b, want, sizeof want);
    struct replay_header d;
    assert_int_equal(replay_header_decode(b, &d), 0);
    assert_int_equal(d.block, h.block);
    assert_true(d.token == h.token);
    assert_int_equal(d.request_bytes, 10);
    assert_int_equal(d.response_bytes, 0x10000);
    b[0] = 'G'; /* "GET /" is not a replay client */
    assert_int_equal(replay_header_decode(b, &d), -1);

    uint64_t t;
    assert_int_equal(replay_token_parse("00ff00ff00ff00fF", &t), 0);
    assert_true(t == 0x00ff00ff00ff00ffull);
    char text[17];
    replay_token_format(t, text);
    assert_string_equal(text, "00ff00ff00ff00ff");
    assert_int_equal(replay_token_parse("00ff00ff00ff00f", &t), -1);
    assert_int_equal(replay_token_parse("00ff00ff00ff00fg", &t), -1);
    assert_true(replay_token_random() != replay_token_random());

    char err[256];
    assert_int_equal(replay_listen("127.0.0.1:99999", err, sizeof err), -1);
    assert_non_null(strstr(err, "bad port"));
    int l = replay_listen("127.0.0.1:0", err, sizeof err);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    getsockname(l, (struct sockaddr *)&ss, &sl);
    char addr[64];
    replay_addr_format((struct sockaddr *)&ss, addr, sizeof addr);
    assert_int_equal(replay_listen(addr, err, sizeof err), -1);
    assert_non_null(strstr(err, "port in use"));
    close(l);
}

/* RECV 10, RECV 6, SEND 5 (MSG_MORE), CPU, SEND 7: exact bytes both ways,
 * and bytes after the request stay unread for the next request. */
static void test_block_net_bytes(void **state)
{
    (void)state;
    struct plan *p = fixture_plan_new();
    uint32_t c = fixture_component(p, "front", 1, 1);
    uint32_t b = fixture_block(p, c, "GET /a");
    fixture_op(p, fixture_net(0, 10, 0));
    fixture_op(p, fixture_net(0, 6, 0));
    fixture_op(p, fixture_net(1, 5, PLAN_SEG_MORE));
    fixture_op(p, fixture_cpu(1000));
    fixture_op(p, fixture_net(1, 7, 0));
    uint64_t rq, rs;
    replay_block_bytes(p, b, &rq, &rs);
    assert_int_equal(rq, 16);
    assert_int_equal(rs, 12);

    char err[256];
    struct replay_config cfg = {.plan = p, .component = c, .cpu_ratio = 1};
    struct replay_engine *e = replay_engine_new(&cfg, err, sizeof err);
    assert_non_null(e);
    struct replay_thread *t = replay_thread_new(e);
    int cl, sv;
    tcp_pair(&cl, &sv);
    char req[19];
    memset(req, 'x', 16);
    memcpy(req + 16, "NXT", 3);
    assert_int_equal(replay_send_exact(cl, req, sizeof req, 0), 0);
    assert_int_equal(replay_exec_block(t, b, sv, 16, 12, err, sizeof err), 0);
    char resp[12];
    assert_int_equal(replay_recv_exact(cl, resp, 12), 0);
    for (int i = 0; i < 12; i++)
        assert_int_equal(resp[i], 0);
    char next[3];
    assert_int_equal(recv(sv, next, 3, MSG_DONTWAIT), 3);
    assert_memory_equal(next, "NXT", 3);
    /* nothing more was sent than the header asked for */
    char extra;
    assert_int_equal(recv(cl, &extra, 1, MSG_DONTWAIT), -1);

    /* a caller whose header says other sizes still gets exactly what it asked */
    char big[40] = {0};
    assert_int_equal(replay_send_exact(cl, big, 40, 0), 0);
    assert_int_equal(replay_exec_block(t, b, sv, 40, 3, err, sizeof err), 0);
    assert_int_equal(replay_recv_exact(cl, resp, 3), 0);
    assert_int_equal(recv(cl, &extra, 1, MSG_DONTWAIT), -1);
    assert_int_equal(recv(sv, &extra, 1, MSG_DONTWAIT), -1);

    /* the client went away: a clear error naming the block */
    close(cl);
    assert_int_equal(replay_exec_block(t, b, sv, 16, 12, err, sizeof err), -1);
    assert_non_null(strstr(err, "block 0"));
    close(sv);

    char *json = replay_engine_stats_json(e);
    assert_non_null(strstr(json, "\"GET /a\":{\"blocks\":3"));
    free(json);
    replay_thread_free(t);
    replay_engine_free(e);
    fixture_plan_free(p);
}

/* Request bytes already read with the header (the server's one recv):
 * the RECV ops take those first and read only the rest, so the next
 * request's bytes stay in the socket. */
static void test_exec_preread(void **state)
{
    (void)state;
    struct plan *p = fixture_plan_new();
    uint32_t c = fixture_component(p, "front", 1, 1);
    uint32_t b = fixture_block(p, c, "GET /a");
    fixture_op(p, fixture_net(0, 10, 0));
    fixture_op(p, fixture_net(0, 6, 0));
    fixture_op(p, fixture_net(1, 5, 0));
    char err[256];
    struct replay_config cfg = {.plan = p, .component = c, .cpu_ratio = 1};
    struct replay_engine *e = replay_engine_new(&cfg, err, sizeof err);
    assert_non_null(e);
    struct replay_thread *t = replay_thread_new(e);
    int cl, sv;
    tcp_pair(&cl, &sv);
    struct timeval tv = {2, 0}; /* a block that reads too much fails, not hangs */
    setsockopt(sv, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char req[19];
    memset(req, 'x', 16);
    memcpy(req + 16, "NXT", 3);
    for (uint64_t pre = 0; pre <= 16; pre += 4) {
        assert_int_equal(replay_send_exact(cl, req, sizeof req, 0), 0);
        char got[16];
        if (pre)
            assert_int_equal(replay_recv_exact(sv, got, (size_t)pre), 0);
        assert_int_equal(replay_exec_block_preread(t, b, sv, 16, pre, 5, err, sizeof err), 0);
        char resp[5], next[3];
        assert_int_equal(replay_recv_exact(cl, resp, 5), 0);
        assert_int_equal(recv(sv, next, 3, MSG_DONTWAIT), 3);
        assert_memory_equal(next, "NXT", 3);
    }
    close(cl);
    close(sv);
    replay_thread_free(t);
    replay_engine_free(e);
    fixture_plan_free(p);
}

/* A raw client of the server: header and payload in one send, requests one
 * after the other on one connection, a header split over two sends; a
 * second request sent before the first was answered (outside the protocol)
 * is refused with a log line, not half read. */
static void test_server_one_recv(void **state)
{
    (void)state;
    struct plan *p = fixture_plan_new();
    uint32_t c = fixture_component(p, "front", 1, 1);
    uint32_t b = fixture_block(p, c, "GET /a");
    fixture_op(p, fixture_net(0, 10, 0));
    fixture_op(p, fixture_net(0, 6, 0));
    fixture_op(p, fixture_net(1, 700, 0));
    char err[256];
    struct replay_config cfg = {.plan = p, .component = c, .token = 9, .cpu_ratio = 1};
    struct replay_engine *e = replay_engine_new(&cfg, err, sizeof err);
    int l = replay_listen("127.0.0.1:0", err, sizeof err);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    getsockname(l, (struct sockaddr *)&ss, &sl);
    char addr[64];
    replay_addr_format((struct sockaddr *)&ss, addr, sizeof addr);
    char logbuf[4096] = "";
    FILE *log = fmemopen(logbuf, sizeof logbuf, "w");
    setvbuf(log, NULL, _IONBF, 0);
    struct replay_server *s = replay_server_start(e, l, 1, log, err, sizeof err);
    assert_non_null(s);
    int fd = replay_connect(addr, 1, err, sizeof err);
    assert_true(fd >= 0);
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    unsigned char msg[2 * (REPLAY_HEADER_SIZE + 16)] = {0};
    struct replay_header h = {.block = b, .token = 9, .request_bytes = 16, .response_bytes = 700};
    replay_header_encode(&h, msg);
    memcpy(msg + REPLAY_HEADER_SIZE + 16, msg, REPLAY_HEADER_SIZE);
    char resp[700], extra;
    for (int i = 0; i < 3; i++) { /* one send each */
        assert_int_equal(replay_send_exact(fd, msg, REPLAY_HEADER_SIZE + 16, 0), 0);
        assert_int_equal(replay_recv_exact(fd, resp, sizeof resp), 0);
        usleep(20000);
        assert_int_equal(recv(fd, &extra, 1, MSG_DONTWAIT), -1);
    }
    /* the header in two pieces, the payload after a pause */
    assert_int_equal(replay_send_exact(fd, msg, 10, 0), 0);
    usleep(20000);
    assert_int_equal(replay_send_exact(fd, msg + 10, REPLAY_HEADER_SIZE - 10, 0), 0);
    usleep(20000);
    assert_int_equal(replay_send_exact(fd, msg + REPLAY_HEADER_SIZE, 16, 0), 0);
    assert_int_equal(replay_recv_exact(fd, resp, sizeof resp), 0);
    for (int i = 0; i < 100 && replay_server_served(s) < 4; i++)
        usleep(10000);
    assert_int_equal(replay_server_served(s), 4);
    /* two requests in one send: refused, the connection closed */
    assert_int_equal(replay_send_exact(fd, msg, sizeof msg, 0), 0);
    assert_true(recv(fd, resp, sizeof resp, 0) <= 0);
    close(fd);
    replay_server_stop(s);
    fclose(log);
    assert_non_null(strstr(logbuf, "more bytes than the request header announced"));
    replay_engine_free(e);
    fixture_plan_free(p);
}

/* A fake callee: reads the header and the caller's segments phase by phase. */
struct callee_script {
    int listen_fd;
    int conns, requests;
    unsigned char header[REPLAY_HEADER_SIZE];
    int phases[8]; /* positive: bytes to read, negative: bytes to send */
    int nphases;
    int ok;
};

static void *callee_main(void *arg)
{
    struct callee_script *cs = arg;
    cs->ok = 1;
    int fd = -1;
    for (int r = 0; r < cs->requests; r++) {
        if (fd < 0) {
            fd = accept(cs->listen_fd, NULL, NULL);
            cs->conns++;
        }
        if (replay_recv_exact(fd, cs->header, REPLAY_HEADER_SIZE)) {
            close(fd);
            fd = -1;
            r--;
            continue;
        }
        for (int i = 0; i < cs->nphases; i++) {
            int n = cs->phases[i];
            char buf[256];
            if (n > 0)
                cs->ok &= replay_recv_exact(fd, buf, (size_t)n) == 0;
            else
                cs->ok &= replay_send_filler(fd, (uint64_t)-n, 0) == 0;
        }
        if (r == cs->requests - 1) { /* nothing beyond the segments was sent */
            char extra;
            usleep(20000);
            cs->ok &= recv(fd, &extra, 1, MSG_DONTWAIT) <= 0; /* EAGAIN or EOF */
        }
    }
    if (fd >= 0)
        close(fd);
    return NULL;
}

/* A client of the replay protocol: one request for `block` on its own
 * connection; sends `req` request bytes (after `stall_ms`, the first 10 of
 * them at once), reads `resp` (after `read_after_ms`). */
struct loop_client {
    const char *addr;
    uint32_t block, req, resp;
    int stall_ms, read_after_ms;
    int rc;
    double done_at;
};

static void *loop_client_main(void *arg)
{
    struct loop_client *c = arg;
    char err[256];
    c->rc = -1;
    int fd = replay_connect(c->addr, 1, err, sizeof err);
    if (fd < 0)
        return NULL;
    struct replay_header h = {
        .block = c->block, .token = 42, .request_bytes = c->req, .response_bytes = c->resp};
    unsigned char hb[REPLAY_HEADER_SIZE];
    replay_header_encode(&h, hb);
    uint32_t first = c->stall_ms && c->req > 10 ? 10 : c->req;
    int bad = replay_send_head_filler(fd, hb, sizeof hb, first, 0);
    if (!bad && first < c->req) {
        nanosleep(&(struct timespec){c->stall_ms / 1000, (c->stall_ms % 1000) * 1000000L}, NULL);
        bad = replay_send_filler(fd, c->req - first, 0);
    }
    if (!bad && c->read_after_ms)
        nanosleep(&(struct timespec){0, c->read_after_ms * 1000000L}, NULL);
    if (!bad && !replay_recv_discard(fd, c->resp))
        c->rc = 0;
    c->done_at = now_s();
    close(fd);
    return NULL;
}

static struct replay_server *loop_server_peers(struct plan *p, uint32_t c, uint32_t event_loops,
                                               const char *peers, struct replay_engine **e,
                                               char addr[64])
{
    char err[256];
    p->components[c].event_loop = event_loops > 0;
    struct replay_config cfg = {.plan = p,
                                .component = c,
                                .token = 42,
                                .cpu_ratio = 1,
                                .event_loops = event_loops,
                                .peers_path = peers,
                                .pool = 4};
    *e = replay_engine_new(&cfg, err, sizeof err);
    assert_non_null(*e);
    int l = replay_listen("127.0.0.1:0", err, sizeof err);
    assert_true(l >= 0);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    getsockname(l, (struct sockaddr *)&ss, &sl);
    replay_addr_format((struct sockaddr *)&ss, addr, 64);
    /* 4 workers, or 4 helpers beside the loops */
    struct replay_server *s = replay_server_start(*e, l, 4, NULL, err, sizeof err);
    assert_non_null(s);
    return s;
}

static struct replay_server *loop_server(struct plan *p, uint32_t c, uint32_t event_loops,
                                         struct replay_engine **e, char addr[64])
{
    return loop_server_peers(p, c, event_loops, NULL, e, addr);
}

/* loop: the calls made by an event-loop server (a step at a time, waiting
 * in its epoll set), driven by a client; else by replay_exec_block */
static void run_call_test(int pool, int expect_conns, int loop)
{
    struct plan *p = fixture_plan_new();
    uint32_t front = fixture_component(p, "front", 1, 1);
    uint32_t back = fixture_component(p, "back", 1, 0);
    uint32_t cb = fixture_block(p, back, "back-op");
    fixture_op(p, fixture_net(0, 150, 0));
    fixture_op(p, fixture_net(1, 60, 0));
    uint32_t fb = fixture_block(p, front, "GET /call");
    static const int32_t segs[] = {100, -50, 30, 20, -10};
    fixture_call(p, cb, segs, 5, 1u << 2 /* the 30 had MSG_MORE */, REPLAY_CALL_NODELAY);
    (void)fb;

    char err[256];
    struct callee_script cs = {.requests = 3, .phases = {100, -50, 50, -10}, .nphases = 4};
    cs.listen_fd = replay_listen("127.0.0.1:0", err, sizeof err);
    assert_true(cs.listen_fd >= 0);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    getsockname(cs.listen_fd, (struct sockaddr *)&ss, &sl);
    char addr[64], peers[] = "/tmp/replay-peers-XXXXXX";
    replay_addr_format((struct sockaddr *)&ss, addr, sizeof addr);
    int pf = mkstemp(peers);
    dprintf(pf, "# component address\nback %s\n", addr);
    close(pf);
    pthread_t th;
    pthread_create(&th, NULL, callee_main, &cs);

    struct replay_config cfg = {.plan = p,
                                .component = front,
                                .peers_path = peers,
                                .token = 0xabcdef0123456789ull,
                                .pool = pool,
                                .cpu_ratio = 1};
    struct replay_engine *e = NULL;
    struct replay_thread *t = NULL;
    struct replay_server *s = NULL;
    if (loop) {
        char faddr[64];
        s = loop_server_peers(p, front, 1, peers, &e, faddr);
        /* loop_server_peers runs with token 42 and a pool of 4 */
        assert_int_equal(pool, 4);
        for (int i = 0; i < 3; i++) {
            struct loop_client c = {.addr = faddr, .block = 1, .resp = 1};
            loop_client_main(&c);
            assert_int_equal(c.rc, 0);
        }
    } else {
        e = replay_engine_new(&cfg, err, sizeof err);
        assert_non_null(e);
        t = replay_thread_new(e);
        for (int i = 0; i < 3; i++)
            assert_int_equal(replay_exec_block(t, 1, -1, 0, 0, err, sizeof err), 0);
    }
    pthread_join(th, NULL);
    assert_true(cs.ok);
    assert_int_equal(cs.conns, expect_conns);
    struct replay_header h;
    assert_int_equal(replay_header_decode(cs.header, &h), 0);
    assert_int_equal(h.block, cb);
    assert_true(h.token == (loop ? 42 : 0xabcdef0123456789ull));
    assert_int_equal(h.request_bytes, 150);
    assert_int_equal(h.response_bytes, 60);
    char *json = replay_engine_stats_json(e);
    assert_non_null(strstr(json, "\"call_errors\":0"));
    free(json);
    replay_thread_free(t);
    replay_server_stop(s);
    replay_engine_free(e);
    close(cs.listen_fd);
    unlink(peers);
    fixture_plan_free(p);
}

static void test_call_segments_pooled(void **state)
{
    (void)state;
    run_call_test(4, 1, 0);
    run_call_test(4, 1, 1);
}

static void test_call_segments_per_call(void **state)
{
    (void)state;
    run_call_test(0, 3, 0);
}

struct lock_run {
    struct replay_engine *e;
    uint32_t block;
};

static void *lock_worker(void *arg)
{
    struct lock_run *lr = arg;
    struct replay_thread *t = replay_thread_new(lr->e);
    char err[256];
    replay_exec_block(t, lr->block, -1, 0, 0, err, sizeof err);
    replay_thread_free(t);
    return NULL;
}

static double run_pair(struct replay_engine *e, uint32_t block)
{
    struct lock_run lr = {e, block};
    pthread_t a, b;
    double t0 = now_s();
    pthread_create(&a, NULL, lock_worker, &lr);
    pthread_create(&b, NULL, lock_worker, &lr);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    return now_s() - t0;
}

static void test_lock_semantics(void **state)
{
    (void)state;
    struct plan *p = fixture_plan_new();
    uint32_t c = fixture_component(p, "front", 2, 1);
    uint32_t lk = fixture_lock(p);
    uint32_t excl = fixture_block(p, c, "excl");
    fixture_op(p, fixture_lockop(PLAN_LOCK_ACQUIRE, lk, PLAN_LOCK_EXCLUSIVE));
    fixture_op(p, fixture_external(100000000));
    fixture_op(p, fixture_lockop(PLAN_LOCK_RELEASE, lk, PLAN_LOCK_EXCLUSIVE));
    uint32_t shared = fixture_block(p, c, "shared");
    fixture_op(p, fixture_lockop(PLAN_LOCK_ACQUIRE, lk, PLAN_LOCK_SHARED));
    fixture_op(p, fixture_external(100000000));
    fixture_op(p, fixture_lockop(PLAN_LOCK_RELEASE, lk, PLAN_LOCK_SHARED));
    uint32_t leaves = fixture_block(p, c, "leaves-held");
    fixture_op(p, fixture_lockop(PLAN_LOCK_ACQUIRE, lk, PLAN_LOCK_EXCLUSIVE));
    uint32_t tryb = fixture_block(p, c, "try");
    fixture_op(p, fixture_lockop(PLAN_LOCK_TRY, lk, PLAN_LOCK_EXCLUSIVE));
    fixture_op(p, fixture_lockop(PLAN_LOCK_RELEASE, lk, PLAN_LOCK_EXCLUSIVE));

    char err[256];
    struct replay_config cfg = {.plan = p, .component = c, .cpu_ratio = 1};
    struct replay_engine *e = replay_engine_new(&cfg, err, sizeof err);
    assert_non_null(e);
    double te = run_pair(e, excl);
    double ts = run_pair(e, shared);
    /* exclusive holders run one after the other, shared ones together */
    assert_true(te >= 0.195);
    assert_true(ts < 0.190);
    assert_true(ts >= 0.095);

    /* a block that ends holding the lock releases it; a later one gets it */
    struct replay_thread *t = replay_thread_new(e);
    assert_int_equal(replay_exec_block(t, leaves, -1, 0, 0, err, sizeof err), 0);
    assert_int_equal(replay_exec_block(t, tryb, -1, 0, 0, err, sizeof err), 0);
    char *json = replay_engine_stats_json(e);
    assert_non_null(strstr(json, "\"locks_left_held\":1"));
    assert_non_null(strstr(json, "\"lock_try_failed\":0"));
    assert_non_null(strstr(json, "\"lock_bad_release\":0"));
    free(json);
    /* held by another thread: the try fails, its release is not performed */
    /* another thread holds the lock for 150 ms while this one tries */
    uint32_t hold = fixture_block(p, c, "hold");
    fixture_op(p, fixture_lockop(PLAN_LOCK_ACQUIRE, lk, PLAN_LOCK_EXCLUSIVE));
    fixture_op(p, fixture_external(150000000));
    fixture_op(p, fixture_lockop(PLAN_LOCK_RELEASE, lk, PLAN_LOCK_EXCLUSIVE));
    replay_thread_free(t);
    replay_engine_free(e);
    /* a new engine sees the new block (its label table is built at start) */
    e = replay_engine_new(&cfg, err, sizeof err);
    struct lock_run lr = {e, hold};
    pthread_t th;
    pthread_create(&th, NULL, lock_worker, &lr);
    usleep(50000);
    t = replay_thread_new(e);
    assert_int_equal(replay_exec_block(t, tryb, -1, 0, 0, err, sizeof err), 0);
    pthread_join(th, NULL);
    json = replay_engine_stats_json(e);
    assert_non_null(strstr(json, "\"lock_try_failed\":1"));
    assert_non_null(strstr(json, "\"lock_bad_release\":1"));
    assert_non_null(strstr(json, "\"locks_left_held\":0"));
    assert_non_null(strstr(json, "\"hold\":{\"blocks\":1"));
    free(json);
    replay_thread_free(t);
    replay_engine_free(e);
    fixture_plan_free(p);
}

static void test_file_offsets(void **state)
{
    (void)state;
    char dir[] = "/tmp/replay-files-XXXXXX";
    assert_non_null(mkdtemp(dir));
    struct plan *p = fixture_plan_new();
    uint32_t c = fixture_component(p, "front", 1, 1);
    uint32_t f0 = fixture_file(p, 0);
    uint32_t f1 = fixture_file(p, 0);
    uint32_t b = fixture_block(p, c, "io");
    fixture_op(p, fixture_fileop(PLAN_FILE_OPEN, f0, 0, 0));
    fixture_op(p, fixture_fileop(PLAN_FILE_WRITE, f0, 4096, 100));
    fixture_op(p, fixture_fileop(PLAN_FILE_READ, f0, 0, 10));
    fixture_op(p, fixture_fileop(PLAN_FILE_FSYNC, f0, 0, 0));
    fixture_op(p, fixture_fileop(PLAN_FILE_WRITE, f1, 0, 50));
    fixture_op(p, fixture_fileop(PLAN_FILE_TRUNCATE, f1, 0, 8192));
    fixture_op(p, fixture_fileop(PLAN_FILE_CLOSE, f0, 0, 0));
    char err[256];
    struct replay_config cfg = {.plan = p, .component = c, .dir = dir, .cpu_ratio = 1};
    struct replay_engine *e = replay_engine_new(&cfg, err, sizeof err);
    struct replay_thread *t = replay_thread_new(e);
    assert_int_equal(replay_exec_block(t, b, -1, 0, 0, err, sizeof err), 0);
    char path[256];
    struct stat st;
    struct dummy_files *df = dummy_files_open_plan(dir, p, err, sizeof err);
    assert_non_null(df);
    snprintf(path, sizeof path, "%s", dummy_files_path(df, f0));
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_size, 4196);
    unsigned char buf[4196];
    int fd = open(path, O_RDONLY);
    assert_int_equal(read(fd, buf, sizeof buf), 4196);
    close(fd);
    for (int i = 0; i < 4096; i++)
        assert_int_equal(buf[i], 0); /* a hole before the write's offset */
    int nonzero = 0;
    for (int i = 4096; i < 4196; i++)
        nonzero += buf[i] != 0;
    assert_true(nonzero > 90); /* written bytes are incompressible, not zeros */
    snprintf(path, sizeof path, "%s", dummy_files_path(df, f1));
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_size, 8192);
    /* the descriptor is cached: the same thread writes at the same offset again */
    assert_int_equal(replay_exec_block(t, b, -1, 0, 0, err, sizeof err), 0);
    snprintf(path, sizeof path, "%s", dummy_files_path(df, f0));
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_size, 4196);
    char *json = replay_engine_stats_json(e);
    assert_non_null(strstr(json, "\"file_errors\":0"));
    free(json);
    dummy_files_close(df);
    replay_thread_free(t);
    replay_engine_free(e);
    fixture_plan_free(p);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* Resident bytes of this process (/proc/self/statm). */
static uint64_t resident_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long long size = 0, res = 0;
    assert_non_null(f);
    assert_int_equal(fscanf(f, "%llu %llu", &size, &res), 2);
    fclose(f);
    return (uint64_t)res * (uint64_t)sysconf(_SC_PAGESIZE);
}

struct thread_new_arg {
    struct replay_engine *e;
    struct replay_thread *t;
};

static void *thread_new_in(void *arg)
{
    struct thread_new_arg *a = arg;
    a->t = replay_thread_new(a->e);
    return NULL;
}

/* A worker's state does not grow with the plan's files and locks (issue
 * 24 item 1): 4096 workers of a plan with 2^20 files (a 1.3 KB plan, every
 * count within plan.h) took 4 MB each at start, 16 GB in all, before any
 * request came. 64 workers here must stay under 64 MB together (they took
 * 256 MB), and a 64 MiB FILE write and read go through a bounded buffer
 * (they took a 64 MiB buffer per worker, 4096 x 2 GiB at the format's
 * limit), with every byte still written and read. */
static void test_worker_state_bounded(void **state)
{
    (void)state;
    char dir[] = "/tmp/replay-bounded-XXXXXX";
    assert_non_null(mkdtemp(dir));
    struct plan *p = fixture_plan_new();
    uint32_t c = fixture_component(p, "front", 64, 1);
    for (uint32_t i = 0; i < (1u << 20); i++) {
        fixture_file(p, 0);
        fixture_lock(p);
    }
    uint32_t last = p->nfiles - 1;
    uint32_t b = fixture_block(p, c, "io");
    fixture_op(p, fixture_fileop(PLAN_FILE_WRITE, last, 0, 64u << 20));
    fixture_op(p, fixture_fileop(PLAN_FILE_READ, last, 0, 64u << 20));
    char err[256];
    struct replay_config cfg = {.plan = p, .component = c, .dir = dir, .cpu_ratio = 1};
    struct replay_engine *e = replay_engine_new(&cfg, err, sizeof err);
    assert_non_null(e);
    struct replay_thread *t[64];
    pthread_t th[64];
    struct thread_new_arg args[64];
    uint64_t before = resident_bytes();
    /* each from its own thread, as the server starts them: a thread's
     * allocations come from its own malloc arena, where calloc clears */
    for (int i = 0; i < 64; i++) {
        args[i].e = e;
        assert_int_equal(pthread_create(&th[i], NULL, thread_new_in, &args[i]), 0);
    }
    for (int i = 0; i < 64; i++) {
        assert_int_equal(pthread_join(th[i], NULL), 0);
        assert_non_null(t[i] = args[i].t);
    }
    uint64_t grew = resident_bytes() - before;
    if (grew > (64u << 20))
        fail_msg("64 workers of a plan with 2^20 files took %.1f MB", grew / 1e6);
    before = resident_bytes();
    assert_int_equal(replay_exec_block(t[0], b, -1, 0, 0, err, sizeof err), 0);
    grew = resident_bytes() - before;
    if (grew > (16u << 20))
        fail_msg("a 64 MiB FILE write and read took %.1f MB", grew / 1e6);
    struct stat st;
    struct dummy_files *df = dummy_files_open_plan(dir, p, err, sizeof err);
    assert_non_null(df);
    assert_int_equal(stat(dummy_files_path(df, last), &st), 0);
    assert_int_equal(st.st_size, 64 << 20);
    assert_true(st.st_blocks * 512 >= (64 << 20)); /* written, not a hole */
    char *json = replay_engine_stats_json(e);
    assert_non_null(strstr(json, "\"file_errors\":0"));
    free(json);
    dummy_files_close(df);
    for (int i = 0; i < 64; i++)
        replay_thread_free(t[i]);
    replay_engine_free(e);
    fixture_plan_free(p);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* The replayer's own writes to the dummy files never go through a link
 * planted among them after they were made (issue 24 item 2: they used to
 * follow one, as root): a symlink, then a hard link, put at a dummy file's
 * name that reach a file elsewhere; a FILE write to it is counted as a
 * file error and the file elsewhere keeps its content. */
static void test_file_write_links(void **state)
{
    (void)state;
    char dir[] = "/tmp/replay-links-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char victim[300];
    snprintf(victim, sizeof victim, "%s.victim", dir);
    struct plan *p = fixture_plan_new();
    uint32_t c = fixture_component(p, "front", 1, 1);
    uint32_t f = fixture_file(p, 4096);
    uint32_t b = fixture_block(p, c, "io");
    fixture_op(p, fixture_fileop(PLAN_FILE_WRITE, f, 0, 100));
    char err[256], path[400];
    for (int hard = 0; hard < 2; hard++) {
        FILE *v = fopen(victim, "w");
        assert_non_null(v);
        fputs("precious\n", v);
        fclose(v);
        struct replay_config cfg = {.plan = p, .component = c, .dir = dir, .cpu_ratio = 1};
        struct replay_engine *e = replay_engine_new(&cfg, err, sizeof err);
        assert_non_null(e);
        struct dummy_files *df = dummy_files_open_plan(dir, p, err, sizeof err);
        assert_non_null(df);
        snprintf(path, sizeof path, "%s", dummy_files_path(df, f));
        dummy_files_close(df);
        unlink(path); /* made by prepare, or not yet */
        assert_int_equal(hard ? link(victim, path) : symlink(victim, path), 0);
        struct replay_thread *t = replay_thread_new(e);
        assert_int_equal(replay_exec_block(t, b, -1, 0, 0, err, sizeof err), 0);
        char *json = replay_engine_stats_json(e);
        if (!strstr(json, "\"file_errors\":1"))
            fail_msg("%s link: %s", hard ? "hard" : "symbolic", json);
        free(json);
        char got[32] = "";
        v = fopen(victim, "r");
        assert_non_null(v);
        assert_non_null(fgets(got, sizeof got, v));
        fclose(v);
        if (strcmp(got, "precious\n"))
            fail_msg("a write through a %s link reached the file elsewhere",
                     hard ? "hard" : "symbolic");
        replay_thread_free(t);
        replay_engine_free(e);
        unlink(path);
    }
    fixture_plan_free(p);
    unlink(victim);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

static void test_db_render(void **state)
{
    (void)state;
    char *s = replay_db_render("INSERT INTO t VALUES (?, ?, ?)", "1, 'a,b', NULL");
    assert_string_equal(s, "INSERT INTO t VALUES (1, 'a,b', NULL)");
    free(s);
    s = replay_db_render("SELECT '?' , ? FROM t WHERE n = ?", "'O''Brien', 2.5");
    assert_string_equal(s, "SELECT '?' , 'O''Brien' FROM t WHERE n = 2.5");
    free(s);
    s = replay_db_render("SELECT ?", "");
    assert_string_equal(s, "SELECT NULL");
    free(s);
}

/* A PostgreSQL op's rendered Bind values back as libpq text parameters. */
static void test_db_pg_params(void **state)
{
    (void)state;
    char **v;
    int n = replay_db_pg_params("7, 'it''s', NULL, X'0001FF', -2.5, 'a, b', 't'", &v);
    assert_int_equal(n, 7);
    assert_string_equal(v[0], "7");
    assert_string_equal(v[1], "it's");
    assert_null(v[2]);
    assert_string_equal(v[3], "\\x0001FF");
    assert_string_equal(v[4], "-2.5");
    assert_string_equal(v[5], "a, b");
    assert_string_equal(v[6], "t");
    free(v);
    assert_int_equal(replay_db_pg_params(NULL, &v), 0);
    assert_null(v);
    assert_int_equal(replay_db_pg_params("NULLS", &v), 1); /* a bare word, not NULL */
    assert_string_equal(v[0], "NULLS");
    free(v);
}

static void test_server_and_driver(void **state)
{
    (void)state;
    struct plan *p = fixture_plan_new();
    uint32_t c = fixture_component(p, "front", 2, 1);
    uint32_t ba = fixture_block(p, c, "GET /a");
    fixture_op(p, fixture_net(0, 200, 0));
    fixture_op(p, fixture_external(2000000));
    fixture_op(p, fixture_net(1, 3000, 0));
    uint32_t bb = fixture_block(p, c, "GET /b");
    fixture_op(p, fixture_net(0, 50, 0));
    fixture_op(p, fixture_net(1, 100000, 0));
    for (int i = 0; i < 40; i++)
        fixture_request(p, i % 4 ? ba : bb, (uint64_t)i * 5000000, 0, 0);
    char err[256];
    struct replay_config cfg = {.plan = p, .component = c, .token = 42, .cpu_ratio = 1};
    struct replay_engine *e = replay_engine_new(&cfg, err, sizeof err);
    int l = replay_listen("127.0.0.1:0", err, sizeof err);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    getsockname(l, (struct sockaddr *)&ss, &sl);
    char addr[64];
    replay_addr_format((struct sockaddr *)&ss, addr, sizeof addr);
    char logbuf[4096] = "";
    FILE *log = fmemopen(logbuf, sizeof logbuf, "w");
    struct replay_server *s = replay_server_start(e, l, 2, log, err, sizeof err);
    assert_non_null(s);

    struct replay_drive_options o = {
        .plan = p, .target = addr, .token = 42, .mode = REPLAY_DRIVE_INDEPENDENT, .speed = 1};
    struct replay_drive_result r;
    double t0 = now_s();
    assert_int_equal(replay_drive_run(&o, &r, err, sizeof err), 0);
    double took = now_s() - t0;
    assert_int_equal(r.nsamples, 40);
    assert_int_equal(r.failed, 0);
    assert_true(took >= 0.195); /* 40 arrivals 5 ms apart: open loop */
    int na = 0;
    for (size_t i = 0; i < r.nsamples; i++) {
        assert_true(r.samples[i].ok);
        if (r.samples[i].label == p->blocks[ba].label) {
            na++;
            assert_true(r.samples[i].response_s >= 0.002); /* the external op */
        }
    }
    assert_int_equal(na, 30);
    for (int i = 0; i < 100 && replay_server_served(s) < 40; i++)
        usleep(10000); /* the worker counts after its last send */
    assert_int_equal(replay_server_served(s), 40);
    replay_drive_result_free(&r);

    /* a window of the repeating schedule (period 200 ms): from 100 ms for
     * 150 ms sends requests 20..39, then 0..9 of the next pass */
    o.schedule_from_s = 0.1;
    o.duration_s = 0.15;
    assert_int_equal(replay_drive_run(&o, &r, err, sizeof err), 0);
    assert_int_equal(r.nsamples, 30);
    assert_true(fabs(r.schedule_from_s - 0.1) < 1e-9 && fabs(r.schedule_to_s - 0.25) < 1e-9);
    assert_true(fabs(r.schedule_s - 0.2) < 1e-9);
    int nb = 0;
    for (size_t i = 0; i < r.nsamples; i++)
        nb += r.samples[i].label == p->blocks[bb].label;
    assert_int_equal(nb, 8); /* i % 4 == 0: 20..36 and 0, 4, 8 */
    replay_drive_result_free(&r);
    o.schedule_from_s = 0;
    o.duration_s = 0;

    /* double speed: half the time; sessions: closed loop with think times */
    o.speed = 2;
    t0 = now_s();
    assert_int_equal(replay_drive_run(&o, &r, err, sizeof err), 0);
    assert_true(now_s() - t0 < 0.190);
    replay_drive_result_free(&r);

    /* a wrong token: every request refused, one log line per connection */
    o.token = 43;
    o.speed = 4;
    assert_int_equal(replay_drive_run(&o, &r, err, sizeof err), 0);
    assert_int_equal(r.failed, 40);
    assert_true(replay_server_rejected(s) >= 1);
    replay_drive_result_free(&r);
    replay_server_stop(s);
    fclose(log);
    assert_non_null(strstr(logbuf, "rejected: bad token"));
    replay_engine_free(e);
    fixture_plan_free(p);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A one-worker replay server for component c of p on a free loopback
 * port (token 42), its address in addr. */
static struct replay_server *start_local_server(struct plan *p, uint32_t c,
                                                struct replay_engine **e, char addr[64])
{
    char err[256];
    struct replay_config cfg = {.plan = p, .component = c, .token = 42, .cpu_ratio = 1};
    *e = replay_engine_new(&cfg, err, sizeof err);
    assert_non_null(*e);
    int l = replay_listen("127.0.0.1:0", err, sizeof err);
    assert_true(l >= 0);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    getsockname(l, (struct sockaddr *)&ss, &sl);
    replay_addr_format((struct sockaddr *)&ss, addr, 64);
    struct replay_server *s = replay_server_start(*e, l, 1, NULL, err, sizeof err);
    assert_non_null(s);
    return s;
}

static void *slack_of_thread(void *arg)
{
    *(int *)arg = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
    return NULL;
}

/* the driver thread's timer slack and scheduling policy, from its abort check */
static int drive_slack_seen, drive_policy_seen;
static int slack_abort_check(void *arg)
{
    (void)arg;
    drive_slack_seen = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
    drive_policy_seen = sched_getscheduler(0);
    return 0;
}

/* Whether this thread may take real-time priority (root, and a cgroup with
 * real-time time): tried and undone. */
static int realtime_permitted(void)
{
    struct sched_param rt = {.sched_priority = 1}, normal = {.sched_priority = 0};
    if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &rt) != 0)
        return 0;
    pthread_setschedparam(pthread_self(), SCHED_OTHER, &normal);
    return 1;
}

/* The replayer's threads and the driver's loop sleep with a timer slack of
 * 1 ns (the default 50 us fired sleeps up to that late: 30-50 us more
 * lateness per request, a sixth of nginx's static file), and the driver's
 * loop runs at real-time priority where allowed; the caller's own slack
 * and policy are back afterwards. */
static void test_precise_timers(void **state)
{
    (void)state;
    prctl(PR_SET_TIMERSLACK, 50000, 0, 0, 0);
    int saved = replay_precise_timers_begin();
    assert_int_equal(saved, 50000);
    int child = 0;
    pthread_t th;
    pthread_create(&th, NULL, slack_of_thread, &child);
    pthread_join(th, NULL);
    assert_int_equal(child, 1); /* inherited by the threads it starts */
    replay_precise_timers_end(saved);
    assert_int_equal(prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0), 50000);

    struct plan *p = fixture_plan_new();
    uint32_t c = fixture_component(p, "front", 1, 1);
    uint32_t b = fixture_block(p, c, "GET /t");
    fixture_op(p, fixture_net(0, 10, 0));
    fixture_op(p, fixture_net(1, 10, 0));
    fixture_request(p, b, 0, 0, 0);
    fixture_request(p, b, 120000000, 0, 0); /* the abort check runs every 50 ms */
    char err[256], addr[64];
    struct replay_engine *e;
    struct replay_server *s = start_local_server(p, c, &e, addr);
    assert_int_equal(prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0), 50000);
    struct replay_drive_options o = {.plan = p,
                                     .target = addr,
                                     .token = 42,
                                     .mode = REPLAY_DRIVE_INDEPENDENT,
                                     .speed = 1,
                                     .should_abort = slack_abort_check};
    struct replay_drive_result r;
    drive_slack_seen = 0;
    assert_int_equal(replay_drive_run(&o, &r, err, sizeof err), 0);
    assert_int_equal(r.nsamples, 2);
    /* 1 ns, or none at all: the kernel gives real-time threads no slack */
    assert_true(drive_slack_seen == 1 ||
                (drive_policy_seen == SCHED_FIFO && drive_slack_seen == 0));
    assert_int_equal(prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0), 50000);
    /* its loop at real-time priority where that is allowed, said in the
     * result; the caller's policy back afterwards */
    int permitted = realtime_permitted();
    assert_int_equal(r.realtime, permitted);
    assert_int_equal(drive_policy_seen, permitted ? SCHED_FIFO : SCHED_OTHER);
    assert_int_equal(sched_getscheduler(0), SCHED_OTHER);
    fprintf(stderr, "driver at real-time priority: %s\n", permitted ? "yes" : "not permitted here");
    replay_drive_result_free(&r);
    replay_server_stop(s);
    replay_engine_free(e);
    fixture_plan_free(p);
}

/* A request the client wrote in two pieces (headers, then a form body:
 * Python's http.client, curl and browsers write a POST that way, with
 * TCP_NODELAY) comes as two RECV segments; the driver sends them as two
 * sends, as recorded. Without TCP_NODELAY on the driver's connections the
 * second waited for the ACK of the first, which the replayer's kernel
 * delays (it has nothing to send before the whole request): 40 ms on a
 * reused connection, where WordPress's login and comment POSTs took 13 ms
 * (their replay came out 52-140% slow). Requests 50 ms apart on one
 * worker reuse one connection: each must take well under the delayed ACK. */
static void test_drive_split_request_no_delay(void **state)
{
    (void)state;
    struct plan *p = fixture_plan_new();
    uint32_t c = fixture_component(p, "front", 1, 1);
    uint32_t b = fixture_block(p, c, "POST /login");
    fixture_op(p, fixture_net(0, 171, 0));
    fixture_op(p, fixture_net(0, 42, 0));
    fixture_op(p, fixture_net(1, 1050, 0));
    for (int i = 0; i < 25; i++)
        fixture_request(p, b, (uint64_t)i * 50000000, 0, 0);
    char err[256], addr[64];
    struct replay_engine *e;
    struct replay_server *s = start_local_server(p, c, &e, addr);
    struct replay_drive_options o = {
        .plan = p, .target = addr, .token = 42, .mode = REPLAY_DRIVE_INDEPENDENT, .speed = 1};
    struct replay_drive_result r;
    assert_int_equal(replay_drive_run(&o, &r, err, sizeof err), 0);
    assert_int_equal(r.nsamples, 25);
    assert_int_equal(r.failed, 0);
    assert_true(r.connections_opened <= 3); /* one connection, reused */
    double rt[25];
    for (size_t i = 0; i < r.nsamples; i++)
        rt[i] = r.samples[i].response_s;
    qsort(rt, 25, sizeof rt[0], cmp_double);
    /* the median: a stall is 40 ms (the kernel's minimum delayed ACK);
     * a loaded machine delays a trivial request by far less than 20 ms
     * on most of 25 tries */
    fprintf(stderr, "split request: median %.2f ms, max %.2f ms, %d connection(s)\n", rt[12] * 1e3,
            rt[24] * 1e3, r.connections_opened);
    assert_true(rt[12] < 0.020);
    replay_drive_result_free(&r);
    replay_server_stop(s);
    replay_engine_free(e);
    fixture_plan_free(p);
}

/* A block's post-response tail (its ops after the last SEND: php-fpm's log
 * line after closing the connection) runs after the answer, so it does not
 * delay that response, but it keeps the worker: with one worker the next
 * request waits for it, as on the recorded server. */
static void test_post_response_tail(void **state)
{
    (void)state;
    struct plan *p = fixture_plan_new();
    uint32_t c = fixture_component(p, "front", 1, 1);
    uint32_t b = fixture_block(p, c, "GET /t");
    fixture_op(p, fixture_net(0, 100, 0));
    fixture_op(p, fixture_net(1, 200, 0));
    fixture_op(p, fixture_external(100000000)); /* a 100 ms tail */
    p->blocks[b].tail_ns = 100000000;
    fixture_request(p, b, 0, 0, 0);
    fixture_request(p, b, 10000000, 0, 0); /* 10 ms later, on another connection */
    char err[256];
    struct replay_config cfg = {.plan = p, .component = c, .token = 7, .cpu_ratio = 1};
    struct replay_engine *e = replay_engine_new(&cfg, err, sizeof err);
    assert_non_null(e);
    int l = replay_listen("127.0.0.1:0", err, sizeof err);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    getsockname(l, (struct sockaddr *)&ss, &sl);
    char addr[64];
    replay_addr_format((struct sockaddr *)&ss, addr, sizeof addr);
    struct replay_server *s = replay_server_start(e, l, 1, stderr, err, sizeof err);
    assert_non_null(s);
    struct replay_drive_options o = {
        .plan = p, .target = addr, .token = 7, .mode = REPLAY_DRIVE_INDEPENDENT, .speed = 1};
    struct replay_drive_result r;
    assert_int_equal(replay_drive_run(&o, &r, err, sizeof err), 0);
    assert_int_equal(r.nsamples, 2);
    assert_int_equal(r.failed, 0);
    double first = r.samples[0].response_s, second = r.samples[1].response_s;
    if (first > second) { /* samples in completion order or not: the earlier arrival is faster */
        double x = first;
        first = second;
        second = x;
    }
    assert_true(first < 0.1);     /* answered before its tail ran */
    assert_true(second >= 0.089); /* waited for the first one's tail (ends at 100 ms) */
    replay_drive_result_free(&r);
    replay_server_stop(s);
    replay_engine_free(e);
    fixture_plan_free(p);
}

static void test_session_mode(void **state)
{
    (void)state;
    struct plan *p = fixture_plan_new();
    uint32_t c = fixture_component(p, "front", 4, 1);
    uint32_t b = fixture_block(p, c, "step");
    fixture_op(p, fixture_net(0, 10, 0));
    fixture_op(p, fixture_external(20000000)); /* 20 ms of service */
    fixture_op(p, fixture_net(1, 10, 0));
    /* two sessions of 4 requests, 10 ms think time, all "arriving" at 0 */
    for (uint32_t s = 1; s <= 2; s++)
        for (int i = 0; i < 4; i++)
            fixture_request(p, b, 0, s, i ? 10000000 : 0);
    char err[256];
    struct replay_config cfg = {.plan = p, .component = c, .token = 7, .cpu_ratio = 1};
    struct replay_engine *e = replay_engine_new(&cfg, err, sizeof err);
    int l = replay_listen("127.0.0.1:0", err, sizeof err);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    getsockname(l, (struct sockaddr *)&ss, &sl);
    char addr[64];
    replay_addr_format((struct sockaddr *)&ss, addr, sizeof addr);
    struct replay_server *s = replay_server_start(e, l, 4, NULL, err, sizeof err);
    struct replay_drive_options o = {
        .plan = p, .target = addr, .token = 7, .mode = REPLAY_DRIVE_SESSION, .speed = 1};
    struct replay_drive_result r;
    double t0 = now_s();
    assert_int_equal(replay_drive_run(&o, &r, err, sizeof err), 0);
    double took = now_s() - t0;
    assert_int_equal(r.nsamples, 8);
    assert_int_equal(r.failed, 0);
    /* per session: 4 x 20 ms service + 3 x 10 ms think = 110 ms, sessions in parallel */
    assert_true(took >= 0.108);
    assert_true(took < 0.200);
    replay_drive_result_free(&r);

    /* two passes of the schedule (period 1 ms): each pass starts every
     * session once, and each runs to its end */
    o.duration_s = 0.0015;
    assert_int_equal(replay_drive_run(&o, &r, err, sizeof err), 0);
    assert_int_equal(r.nsamples, 16);
    assert_int_equal(r.failed, 0);
    replay_drive_result_free(&r);
    replay_server_stop(s);
    replay_engine_free(e);
    fixture_plan_free(p);
}

/* A request the driver sends late counts from its scheduled arrival: one
 * connection, three requests due at 0 with 20 ms of service each, so the
 * second goes out ~20 ms late and the third ~40 ms; each response_s is at
 * least its late_s plus the service. */
static void test_late_send_counts(void **state)
{
    (void)state;
    struct plan *p = fixture_plan_new();
    uint32_t c = fixture_component(p, "front", 4, 1);
    uint32_t b = fixture_block(p, c, "slow");
    fixture_op(p, fixture_net(0, 10, 0));
    fixture_op(p, fixture_external(20000000));
    fixture_op(p, fixture_net(1, 10, 0));
    for (int i = 0; i < 3; i++)
        fixture_request(p, b, 0, 0, 0);
    char err[256];
    struct replay_config cfg = {.plan = p, .component = c, .token = 9, .cpu_ratio = 1};
    struct replay_engine *e = replay_engine_new(&cfg, err, sizeof err);
    int l = replay_listen("127.0.0.1:0", err, sizeof err);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    getsockname(l, (struct sockaddr *)&ss, &sl);
    char addr[64];
    replay_addr_format((struct sockaddr *)&ss, addr, sizeof addr);
    struct replay_server *s = replay_server_start(e, l, 4, NULL, err, sizeof err);
    struct replay_drive_options o = {.plan = p,
                                     .target = addr,
                                     .token = 9,
                                     .mode = REPLAY_DRIVE_INDEPENDENT,
                                     .speed = 1,
                                     .max_connections = 1};
    struct replay_drive_result r;
    assert_int_equal(replay_drive_run(&o, &r, err, sizeof err), 0);
    assert_int_equal(r.nsamples, 3);
    double max_late = 0;
    for (size_t i = 0; i < r.nsamples; i++) {
        assert_true(r.samples[i].ok);
        assert_true(r.samples[i].response_s >= r.samples[i].late_s + 0.019);
        max_late = r.samples[i].late_s > max_late ? r.samples[i].late_s : max_late;
    }
    assert_true(max_late >= 0.039); /* the third waited for two services */
    replay_drive_result_free(&r);
    replay_server_stop(s);
    replay_engine_free(e);
    fixture_plan_free(p);
}

/* ---- event loops: one thread per loop runs every request's own work
 * (the scheduler sees one busy thread, as it saw the recorded loop), its
 * waits overlap, and no client holds it up ---- */

static _Atomic int loop_inside, loop_most, loop_nthreads;
static _Atomic long loop_threads[16];

static void loop_burn(uint64_t ns)
{
    int n = atomic_fetch_add(&loop_inside, 1) + 1;
    int m = atomic_load(&loop_most);
    while (n > m && !atomic_compare_exchange_weak(&loop_most, &m, n))
        ;
    long me = (long)gettid();
    int k, seen = 0, nt = atomic_load(&loop_nthreads);
    for (k = 0; k < nt; k++)
        seen |= atomic_load(&loop_threads[k]) == me;
    if (!seen && nt < 16)
        atomic_store(&loop_threads[atomic_fetch_add(&loop_nthreads, 1)], me);
    struct timespec ts = {0, (long)ns};
    nanosleep(&ts, NULL);
    atomic_fetch_sub(&loop_inside, 1);
}

/* 4 requests at once, each CPU 5 ms, WAIT (60 ms), CPU 5 ms and a 1-byte
 * answer: wall time, the most CPU ops running at once, and on how many
 * threads they ran */
static double loop_run(uint32_t event_loops, struct plan_op wait, int *most, int *threads)
{
    struct plan *p = fixture_plan_new();
    uint32_t c = fixture_component(p, "front", 1, 1);
    uint32_t b = fixture_block(p, c, "GET /a");
    fixture_op(p, fixture_cpu(5000000));
    fixture_op(p, wait);
    fixture_op(p, fixture_cpu(5000000));
    struct replay_engine *e;
    char addr[64];
    struct replay_server *s = loop_server(p, c, event_loops, &e, addr);
    replay_cpu_burn_fn saved = replay_cpu_burn;
    replay_cpu_burn = loop_burn;
    atomic_store(&loop_most, 0);
    atomic_store(&loop_nthreads, 0);
    pthread_t th[4];
    struct loop_client cl[4];
    double t0 = now_s();
    for (int i = 0; i < 4; i++) {
        cl[i] = (struct loop_client){.addr = addr, .block = b, .resp = 1};
        assert_int_equal(pthread_create(&th[i], NULL, loop_client_main, &cl[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(cl[i].rc, 0);
    }
    double wall = now_s() - t0;
    replay_cpu_burn = saved;
    *most = atomic_load(&loop_most);
    *threads = atomic_load(&loop_nthreads);
    replay_server_stop(s);
    replay_engine_free(e);
    fixture_plan_free(p);
    return wall;
}

/* a DB op of 60 ms replayed as a wait (PLAN_DB_CUT: no database needed) */
static struct plan_op loop_db(uint16_t flags)
{
    struct plan_op o = {.kind = PLAN_OP_DB,
                        .op = PLAN_DB_QUERY,
                        .flags = PLAN_DB_CUT | flags,
                        .recorded_ns = 60000000};
    return o;
}

static void test_event_loop(void **state)
{
    (void)state;
    int most, threads;
    double wall = loop_run(1, fixture_external(60000000), &most, &threads);
    assert_int_equal(most, 1);    /* one loop: one request's work at a time */
    assert_int_equal(threads, 1); /* ... on one thread, whichever request */
    /* the waits overlap: at least one block's 70 ms, far less than 4 x 70
     * ms in a row */
    assert_true(wall >= 0.068 && wall < 0.250);
    /* two loops: two threads */
    loop_run(2, fixture_external(60000000), &most, &threads);
    assert_int_equal(threads, 2);
    loop_run(0, fixture_external(60000000), &most, &threads);
    assert_true(most > 1); /* a worker pool: CPU ops of several requests at once */
    /* a wire-parsed DB op (no PLAN_DB_BLOCKING) is a wait like the external */
    wall = loop_run(1, loop_db(0), &most, &threads);
    assert_int_equal(most, 1);
    assert_int_equal(threads, 1);
    assert_true(wall >= 0.068 && wall < 0.250);
    /* a client-library DB op held the recorded loop (thin running Rails):
     * the four blocks run one after another, 4 x 70 ms */
    wall = loop_run(1, loop_db(PLAN_DB_BLOCKING), &most, &threads);
    assert_int_equal(most, 1);
    assert_true(wall >= 0.278);
}

/* A loop never waits for one client: a request whose bytes stall for 300
 * ms, and one whose 8 MiB answer is not read for 300 ms, do not hold up a
 * request that arrives meanwhile; both finish whole afterwards. */
static void test_event_loop_slow_clients(void **state)
{
    (void)state;
    struct plan *p = fixture_plan_new();
    uint32_t c = fixture_component(p, "front", 1, 1);
    uint32_t slow_in = fixture_block(p, c, "POST /upload");
    fixture_op(p, fixture_net(0, 100000, 0));
    fixture_op(p, fixture_net(1, 1, 0));
    uint32_t slow_out = fixture_block(p, c, "GET /big");
    fixture_op(p, fixture_net(0, 100, 0));
    fixture_op(p, fixture_net(1, 8u << 20, 0));
    uint32_t quick = fixture_block(p, c, "GET /a");
    fixture_op(p, fixture_cpu(1000000));
    fixture_op(p, fixture_net(1, 10, 0));
    struct replay_engine *e;
    char addr[64];
    struct replay_server *s = loop_server(p, c, 1, &e, addr);
    struct loop_client cl[3] = {
        {.addr = addr, .block = slow_in, .req = 100000, .resp = 1, .stall_ms = 300},
        {.addr = addr, .block = slow_out, .req = 100, .resp = 8u << 20, .read_after_ms = 300},
        {.addr = addr, .block = quick, .resp = 10}};
    pthread_t th[3];
    double t0 = now_s();
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&th[i], NULL, loop_client_main, &cl[i]), 0);
    nanosleep(&(struct timespec){0, 50000000}, NULL); /* both are stalled now */
    assert_int_equal(pthread_create(&th[2], NULL, loop_client_main, &cl[2]), 0);
    for (int i = 0; i < 3; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(cl[i].rc, 0);
    }
    assert_true(cl[2].done_at - t0 < 0.250);
    assert_true(cl[0].done_at - t0 >= 0.300 && cl[1].done_at - t0 >= 0.300);
    assert_int_equal(replay_server_served(s), 3);
    replay_server_stop(s);
    replay_engine_free(e);
    fixture_plan_free(p);
}

/* A loop's nested calls wait in its epoll set: 4 requests at once, each
 * CPU 1 ms, a call to a worker-pool component that takes 60 ms, CPU 1 ms:
 * the calls overlap (well under 4 x 62 ms), every CPU op runs on the
 * loop's one thread, and the pooled connections carry the calls whole. */
static void test_event_loop_calls(void **state)
{
    (void)state;
    struct plan *p = fixture_plan_new();
    uint32_t front = fixture_component(p, "front", 1, 1);
    uint32_t back = fixture_component(p, "back", 4, 0);
    uint32_t cb = fixture_block(p, back, "back-op");
    fixture_op(p, fixture_net(0, 150, 0));
    fixture_op(p, fixture_external(60000000));
    fixture_op(p, fixture_net(1, 60000, 0));
    uint32_t fb = fixture_block(p, front, "GET /call");
    fixture_op(p, fixture_cpu(1000000));
    static const int32_t segs[] = {150, -60000};
    fixture_call(p, cb, segs, 2, 0, REPLAY_CALL_NODELAY);
    fixture_op(p, fixture_cpu(1000000));
    struct replay_engine *be, *fe;
    char baddr[64], faddr[64], peers[] = "/tmp/replay-peers-XXXXXX";
    struct replay_server *bs = loop_server(p, back, 0, &be, baddr);
    int pf = mkstemp(peers);
    dprintf(pf, "back %s\n", baddr);
    close(pf);
    struct replay_server *fs = loop_server_peers(p, front, 1, peers, &fe, faddr);
    replay_cpu_burn_fn saved = replay_cpu_burn;
    replay_cpu_burn = loop_burn;
    atomic_store(&loop_most, 0);
    atomic_store(&loop_nthreads, 0);
    pthread_t th[4];
    struct loop_client cl[4];
    double t0 = now_s();
    for (int round = 0; round < 2; round++) { /* the second on pooled connections */
        for (int i = 0; i < 4; i++) {
            cl[i] = (struct loop_client){.addr = faddr, .block = fb, .resp = 1};
            assert_int_equal(pthread_create(&th[i], NULL, loop_client_main, &cl[i]), 0);
        }
        for (int i = 0; i < 4; i++) {
            pthread_join(th[i], NULL);
            assert_int_equal(cl[i].rc, 0);
        }
    }
    double wall = now_s() - t0;
    replay_cpu_burn = saved;
    assert_true(wall >= 0.120 && wall < 0.400); /* 2 rounds of ~62 ms, not 8 x 62 */
    assert_int_equal(atomic_load(&loop_most), 1);
    assert_int_equal(atomic_load(&loop_nthreads), 1);
    assert_int_equal(replay_server_served(bs), 8);
    char *json = replay_engine_stats_json(fe);
    assert_non_null(strstr(json, "\"call_errors\":0"));
    /* at most one connection per call in flight, kept for the next round */
    const char *cc = strstr(json, "\"calls_connections\":");
    assert_non_null(cc);
    unsigned long opened = strtoul(cc + strlen("\"calls_connections\":"), NULL, 10);
    assert_true(opened >= 1 && opened <= 4);
    free(json);
    replay_server_stop(fs);
    replay_server_stop(bs);
    replay_engine_free(fe);
    replay_engine_free(be);
    unlink(peers);
    fixture_plan_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_header_bytes),
        cmocka_unit_test(test_block_net_bytes),
        cmocka_unit_test(test_exec_preread),
        cmocka_unit_test(test_server_one_recv),
        cmocka_unit_test(test_call_segments_pooled),
        cmocka_unit_test(test_call_segments_per_call),
        cmocka_unit_test(test_lock_semantics),
        cmocka_unit_test(test_file_offsets),
        cmocka_unit_test(test_worker_state_bounded),
        cmocka_unit_test(test_file_write_links),
        cmocka_unit_test(test_db_render),
        cmocka_unit_test(test_db_pg_params),
        cmocka_unit_test(test_server_and_driver),
        cmocka_unit_test(test_drive_split_request_no_delay),
        cmocka_unit_test(test_precise_timers),
        cmocka_unit_test(test_post_response_tail),
        cmocka_unit_test(test_session_mode),
        cmocka_unit_test(test_event_loop),
        cmocka_unit_test(test_event_loop_slow_clients),
        cmocka_unit_test(test_event_loop_calls),
        cmocka_unit_test(test_late_send_counts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
