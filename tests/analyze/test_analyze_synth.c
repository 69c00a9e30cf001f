/* test_analyze_synth.c - dependency extraction on small synthetic
 * recordings written with the trace writer (synth_trace.h), each checked
 * op by op in the plan: stream offsets (3 sends arriving as 2 receives),
 * AF_UNIX pairing by inode, keep-alive connections serving requests in
 * turn, a worker's post-response tail after closing a connection, nested calls and external calls,
 * clock skew of +-3 s between hosts, a recording whose clock went backwards (the warning), an event
 * loop interleaving three requests and an upstream call (each request's events in its own block,
 * nothing flagged), a worker that becomes a loop after its first upstream call (a later call on
 * that pooled connection, the rest of a streamed upstream answer after reading another request:
 * each the request it belongs to), and the violation report of a request two threads served.
 * Timestamps are chosen by hand so every expected number is known exactly; nothing here depends on
 * the machine's speed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plan.h"
#include "preplay_analyze.h"
#include "synth_trace.h"

#define US 1000ull
#define MS 1000000ull
#define T0 2000000000ull /* every recording starts here (monotonic ns) */

struct fx {
    char dir[64];
    char fe[96], app[96], planfile[96];
    struct plan *plan;
    struct analyze_result r;
    char *warnings;
    size_t warnings_len;
    char err[1024];
};

static int fx_rm(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static int fx_setup(void **state)
{
    struct fx *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    strcpy(f->dir, "/tmp/preplay-analyze-synth.XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    snprintf(f->fe, sizeof f->fe, "%s/fe", f->dir);
    snprintf(f->app, sizeof f->app, "%s/app", f->dir);
    snprintf(f->planfile, sizeof f->planfile, "%s/out.plan", f->dir);
    mkdir(f->fe, 0755);
    mkdir(f->app, 0755);
    *state = f;
    return 0;
}

static int fx_teardown(void **state)
{
    struct fx *f = *state;
    plan_free(f->plan);
    free(f->warnings);
    nftw(f->dir, fx_rm, 8, FTW_DEPTH | FTW_PHYS);
    free(f);
    return 0;
}

/* Runs the analyzer on the given directories; 0 or -1 (f->err). The plan is
 * read back into f->plan, warnings into f->warnings. */
static int fx_analyze(struct fx *f, int salvage, int ndirs, ...)
{
    const char *dirs[4];
    va_list ap;
    va_start(ap, ndirs);
    for (int i = 0; i < ndirs && i < 4; i++)
        dirs[i] = va_arg(ap, const char *);
    va_end(ap);
    free(f->warnings);
    f->warnings = NULL;
    FILE *w = open_memstream(&f->warnings, &f->warnings_len);
    assert_non_null(w);
    struct analyze_options o = {.salvage = salvage, .warnings = w};
    int rc = analyze_run(dirs, ndirs, f->planfile, &o, &f->r, f->err, sizeof f->err);
    fclose(w);
    if (rc != 0)
        return -1;
    char perr[512];
    plan_free(f->plan);
    f->plan = plan_read(f->planfile, perr, sizeof perr);
    if (!f->plan)
        fail_msg("plan_read: %s", perr);
    return 0;
}

static const struct plan_op *fx_ops(const struct fx *f, uint32_t block)
{
    assert_true(block < f->plan->nblocks);
    return &f->plan->ops[f->plan->blocks[block].first_op];
}

/* Asserts the kinds of a block's ops, e.g. "RCKS" = RECV, CPU, CALL, SEND. */
static void fx_expect_kinds(const struct fx *f, uint32_t block, const char *kinds)
{
    static const char letters[] = "?CFLDKXRSO"; /* by enum plan_op_kind (K = CALL) */
    const struct plan_block *b = &f->plan->blocks[block];
    char got[128];
    uint32_t n = b->nops < sizeof got - 1 ? b->nops : (uint32_t)sizeof got - 1;
    for (uint32_t i = 0; i < n; i++) {
        uint8_t k = f->plan->ops[b->first_op + i].kind;
        got[i] = k < sizeof letters - 1 ? letters[k] : '!';
    }
    got[n] = 0;
    assert_string_equal(got, kinds);
}

static const char *fx_component(const struct fx *f, uint32_t block)
{
    return plan_string(f->plan, f->plan->components[f->plan->blocks[block].component].name);
}

static const struct synth_addr fe_addr = {{10, 0, 0, 1}, 80};
static const struct synth_addr app_addr = {{10, 0, 0, 2}, 9000};

/* An untraced client's connection to the front end, accepted by the
 * dispatcher (tid 100) at time `at`. */
static void fx_accept_client(struct synth_proc *p, uint64_t conn, uint16_t port, uint64_t at)
{
    struct synth_thread d;
    synth_thread_init(&d, p, 100, at);
    struct synth_addr client = {{192, 168, 7, 7}, port};
    synth_conn_tcp(&d, TRACE_CONN_ACCEPT, conn, 9, &fe_addr, &client);
}

/* ---- 3 sends that arrive as 2 receives still pair ---- */

static void test_stream_offsets(void **state)
{
    struct fx *f = *state;
    struct synth_proc fe, app;
    synth_open(&fe, f->fe, "web", "h1", "rec-fe", 100, 0);
    synth_open(&app, f->app, "api", "h1", "rec-app", 200, 0);
    fx_accept_client(&fe, 1, 50000, T0);
    struct synth_thread w, a;
    synth_thread_init(&w, &fe, 101, T0 + 10 * US);
    synth_thread_init(&a, &app, 201, T0);
    struct synth_addr fe_out = {{10, 0, 0, 1}, 40000};
    synth_conn_tcp(&w, TRACE_CONN_CONNECT, 2, 11, &fe_out, &app_addr);
    synth_conn_tcp(&a, TRACE_CONN_ACCEPT, 1, 12, &app_addr, &fe_out);
    /* request 1: the call goes out as 100 + 50 + 30 bytes ... */
    w.now = T0 + 1 * MS;
    synth_net(&w, TRACE_NET_RECV, 1, 100, 5 * US);
    synth_cpu(&w, 10 * US);
    synth_net(&w, TRACE_NET_SEND, 2, 100, 4 * US);
    synth_net(&w, TRACE_NET_SEND, 2, 50, 4 * US);
    synth_net(&w, TRACE_NET_SEND, 2, 30, 4 * US);
    uint64_t call_t0 = T0 + 1 * MS + 15 * US;
    /* ... and arrives as 120 + 60 */
    a.now = T0 + 1 * MS + 25 * US;
    synth_net(&a, TRACE_NET_RECV, 1, 120, 2 * US);
    synth_net(&a, TRACE_NET_RECV, 1, 60, 3 * US);
    synth_cpu(&a, 20 * US);
    synth_net(&a, TRACE_NET_SEND, 1, 500, 4 * US);
    synth_net(&w, TRACE_NET_RECV, 2, 500, a.now + 5 * US - w.now);
    uint64_t call_t1 = w.now;
    synth_cpu(&w, 7 * US);
    synth_net(&w, TRACE_NET_SEND, 1, 1000, 6 * US);
    /* request 2 on the same keep-alive connections: 70 + 30 arrive as 100 */
    w.now = T0 + 5 * MS;
    synth_net(&w, TRACE_NET_RECV, 1, 80, 5 * US);
    synth_net(&w, TRACE_NET_SEND, 2, 70, 4 * US);
    synth_net(&w, TRACE_NET_SEND, 2, 30, 4 * US);
    a.now = T0 + 5 * MS + 30 * US;
    synth_net(&a, TRACE_NET_RECV, 1, 100, 2 * US);
    synth_cpu(&a, 9 * US);
    synth_net(&a, TRACE_NET_SEND, 1, 64, 4 * US);
    synth_net(&w, TRACE_NET_RECV, 2, 64, a.now + 5 * US - w.now);
    synth_net(&w, TRACE_NET_SEND, 1, 200, 6 * US);
    synth_close(&fe);
    synth_close(&app);

    assert_int_equal(fx_analyze(f, 0, 2, f->fe, f->app), 0);
    assert_int_equal(f->r.requests, 2);
    assert_int_equal(f->r.blocks, 4);
    assert_int_equal(f->r.calls, 2);
    assert_int_equal(f->r.externals, 0);
    assert_int_equal(f->r.unmatched_bytes, 0);
    assert_int_equal(f->r.violations, 0);
    assert_int_equal(f->plan->nrequests, 2);
    /* request 1: RECV, CPU, CALL (3 sends + 1 receive) to the callee's block */
    uint32_t b1 = f->plan->requests[0].block;
    assert_string_equal(fx_component(f, b1), "web");
    fx_expect_kinds(f, b1, "RCKCS");
    const struct plan_op *op = fx_ops(f, b1);
    assert_int_equal(op[0].a.net.bytes, 100);
    assert_int_equal(op[1].a.cpu_ns, 10 * US);
    assert_int_equal(op[2].recorded_ns, call_t1 - call_t0);
    assert_int_equal(op[2].a.call.nsegments, 4);
    const struct plan_segment *sg = &f->plan->segments[op[2].a.call.first_segment];
    uint32_t want_bytes[] = {100, 50, 30, 500};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(sg[i].dir, i == 3 ? 1 : 0);
        assert_int_equal(sg[i].bytes, want_bytes[i]);
    }
    assert_int_equal(op[4].a.net.bytes, 1000);
    uint32_t callee = op[2].a.call.callee_block;
    assert_string_equal(fx_component(f, callee), "api");
    fx_expect_kinds(f, callee, "RRCS");
    op = fx_ops(f, callee);
    assert_int_equal(op[0].a.net.bytes, 120);
    assert_int_equal(op[1].a.net.bytes, 60);
    assert_int_equal(op[2].a.cpu_ns, 20 * US);
    assert_int_equal(op[3].a.net.bytes, 500);
    /* request 2: its call starts at stream offset 180 and matches the
     * callee block that received from offset 180 */
    uint32_t b2 = f->plan->requests[1].block;
    fx_expect_kinds(f, b2, "RKS");
    op = fx_ops(f, b2);
    assert_int_equal(op[1].a.call.nsegments, 3);
    uint32_t callee2 = op[1].a.call.callee_block;
    assert_int_not_equal(callee2, callee);
    fx_expect_kinds(f, callee2, "RCS");
    op = fx_ops(f, callee2);
    assert_int_equal(op[0].a.net.bytes, 100);
    assert_int_equal(op[1].a.cpu_ns, 9 * US);
    assert_int_equal(op[2].a.net.bytes, 64);
}

/* ---- AF_UNIX: the two ends pair by inode and peer inode. The connecting
 * end may not know its peer's inode: the kernel gives the accepted socket
 * its inode only at accept, so a CONNECT says peer 0 (the tracer's sock_diag
 * query at connect); the accepting end names the connector's inode, and
 * the accept comes first here ---- */

static void fx_unix_pairing(void **state, uint64_t connect_peer_inode)
{
    struct fx *f = *state;
    struct synth_proc fe, app;
    synth_open(&fe, f->fe, "web", "h1", "rec-fe", 100, 0);
    synth_open(&app, f->app, "api", "h1", "rec-app", 200, 0);
    fx_accept_client(&fe, 1, 50001, T0);
    struct synth_thread w, a, a2;
    synth_thread_init(&w, &fe, 101, T0 + 10 * US);
    synth_thread_init(&a, &app, 201, T0);
    synth_thread_init(&a2, &app, 202, T0);
    /* the app also serves an untraced local client on another socket pair
     * (inodes 8001/8002): its request must become a front-end request of
     * the app, not a callee of the web tier */
    synth_conn_unix(&w, TRACE_CONN_CONNECT, 2, 11, 7001, connect_peer_inode);
    synth_conn_unix(&a, TRACE_CONN_ACCEPT, 1, 12, 7002, 7001);
    synth_conn_unix(&a2, TRACE_CONN_ACCEPT, 2, 13, 8002, 8001);
    w.now = T0 + 1 * MS;
    synth_net(&w, TRACE_NET_RECV, 1, 90, 5 * US);
    synth_net(&w, TRACE_NET_SEND, 2, 40, 4 * US);
    a.now = T0 + 1 * MS + 20 * US;
    synth_net(&a, TRACE_NET_RECV, 1, 40, 2 * US);
    synth_cpu(&a, 33 * US);
    synth_net(&a, TRACE_NET_SEND, 1, 77, 4 * US);
    synth_net(&w, TRACE_NET_RECV, 2, 77, a.now + 5 * US - w.now);
    synth_net(&w, TRACE_NET_SEND, 1, 300, 6 * US);
    a2.now = T0 + 2 * MS;
    synth_net(&a2, TRACE_NET_RECV, 2, 40, 2 * US);
    synth_cpu(&a2, 44 * US);
    synth_net(&a2, TRACE_NET_SEND, 2, 55, 4 * US);
    synth_close(&fe);
    synth_close(&app);

    assert_int_equal(fx_analyze(f, 0, 2, f->fe, f->app), 0);
    assert_int_equal(f->r.calls, 1);
    assert_int_equal(f->r.externals, 0);
    assert_int_equal(f->r.unmatched_bytes, 0);
    assert_int_equal(f->plan->nrequests, 2);
    uint32_t web = f->plan->requests[0].block, local = f->plan->requests[1].block;
    assert_string_equal(fx_component(f, web), "web");
    fx_expect_kinds(f, web, "RKS");
    uint32_t callee = fx_ops(f, web)[1].a.call.callee_block;
    fx_expect_kinds(f, callee, "RCS");
    assert_int_equal(fx_ops(f, callee)[1].a.cpu_ns, 33 * US);
    /* the untraced local client's request */
    assert_string_equal(fx_component(f, local), "api");
    fx_expect_kinds(f, local, "RCS");
    assert_int_equal(fx_ops(f, local)[1].a.cpu_ns, 44 * US);
}

static void test_unix_pairing(void **state)
{
    fx_unix_pairing(state, 7002);
}

static void test_unix_pairing_connect_without_peer(void **state)
{
    fx_unix_pairing(state, 0);
}

/* ---- a keep-alive connection serves several requests in turn ---- */

static void test_keepalive(void **state)
{
    struct fx *f = *state;
    struct synth_proc fe;
    synth_open(&fe, f->fe, "web", "h1", "rec-fe", 100, 0);
    uint32_t labels[3] = {synth_string(&fe, "GET /a"), synth_string(&fe, "GET /b"),
                          synth_string(&fe, "POST /c")};
    fx_accept_client(&fe, 1, 50002, T0);
    struct synth_thread w;
    synth_thread_init(&w, &fe, 101, T0 + 100 * US);
    /* the worker blocks in recv between requests (keep-alive idle) */
    const uint64_t at[3] = {T0 + 1 * MS, T0 + 11 * MS, T0 + 31 * MS};
    const int64_t req[3] = {120, 340, 560}, resp[3] = {1000, 2000, 3000};
    const uint64_t cpu[3] = {15 * US, 25 * US, 35 * US};
    uint64_t start[3], end[3];
    for (int i = 0; i < 3; i++) {
        synth_net(&w, TRACE_NET_RECV, 1, req[i], at[i] - w.now); /* blocked since the last reply */
        start[i] = w.now;
        synth_label(&w, 1, labels[i]);
        synth_cpu(&w, cpu[i]);
        synth_net(&w, TRACE_NET_SEND, 1, resp[i], 6 * US);
        end[i] = w.now;
    }
    synth_net(&w, TRACE_NET_RECV, 1, 0, 40 * MS); /* the client closes */
    synth_conn_end(&w, TRACE_CONN_CLOSE, 1, 9);
    synth_close(&fe);

    assert_int_equal(fx_analyze(f, 0, 1, f->fe), 0);
    assert_int_equal(f->r.requests, 3);
    assert_int_equal(f->r.blocks, 3);
    assert_int_equal(f->plan->nrequests, 3);
    const char *const names[3] = {"GET /a", "GET /b", "POST /c"};
    for (int i = 0; i < 3; i++) {
        const struct plan_request *rq = &f->plan->requests[i];
        fx_expect_kinds(f, rq->block, "RCS");
        const struct plan_op *op = fx_ops(f, rq->block);
        assert_int_equal(op[0].a.net.bytes, req[i]);
        /* the block starts when its receive returns: the idle wait before
         * (1-20 ms here) is not the block's time */
        assert_int_equal(op[0].recorded_ns, 0);
        assert_int_equal(op[1].a.cpu_ns, cpu[i]);
        assert_int_equal(op[2].a.net.bytes, resp[i]);
        assert_int_equal(op[2].recorded_ns, 6 * US);
        assert_string_equal(plan_string(f->plan, rq->label), names[i]);
        assert_string_equal(plan_string(f->plan, f->plan->blocks[rq->block].label), names[i]);
        assert_int_equal(f->plan->blocks[rq->block].recorded_ns, end[i] - start[i]);
        assert_int_equal(rq->arrival_ns, start[i] - start[0]);
        assert_int_equal(rq->connection, f->plan->requests[0].connection);
        assert_int_equal(rq->session, f->plan->requests[0].session);
        assert_int_equal(rq->think_ns, i ? start[i] - end[i - 1] : 0);
    }
    assert_int_not_equal(f->plan->requests[0].connection, 0);
}

/* ---- work a worker does after closing a connection and before accepting
 * the next (php-fpm logs to its stderr there) is the post-response tail of
 * the request it served: in its block, after the last SEND, not delaying
 * the response; what a worker does between accept and the request's first
 * read is its accept path; the last block's tail after its close is cut
 * (shutdown) ---- */

static void test_post_close_tail(void **state)
{
    struct fx *f = *state;
    struct synth_proc fe;
    synth_open(&fe, f->fe, "fpm", "h1", "rec-fe", 100, 0);
    uint32_t log = synth_string(&fe, "/var/log/fpm.log");
    /* one worker (the process's only thread) accepts each connection itself */
    struct synth_thread w;
    synth_thread_init(&w, &fe, 100, T0);
    uint64_t send_end[2], tail_end = 0;
    for (int i = 0; i < 2; i++) {
        struct synth_addr client = {{192, 168, 7, 7}, (uint16_t)(50100 + i)};
        synth_conn_tcp(&w, TRACE_CONN_ACCEPT, 1 + (uint64_t)i, 9, &fe_addr, &client);
        if (i == 1) { /* the accept path: a lock before the first read */
            synth_lock(&w, TRACE_LOCK_ACQUIRE, 0x7400, 0, 1 * US);
            synth_lock(&w, TRACE_LOCK_RELEASE, 0x7400, 0, 1 * US);
        }
        synth_net(&w, TRACE_NET_RECV, 1 + (uint64_t)i, 200, 1 * MS);
        synth_cpu(&w, 30 * US);
        synth_net(&w, TRACE_NET_SEND, 1 + (uint64_t)i, 900, 5 * US);
        send_end[i] = w.now;
        synth_net(&w, TRACE_NET_RECV, 1 + (uint64_t)i, 0, 100 * US); /* the client's EOF */
        synth_conn_end(&w, TRACE_CONN_CLOSE, 1 + (uint64_t)i, 9);
        synth_file(&w, TRACE_FILE_WRITE, log, 77, -1, 6, 0, 2 * US); /* the log line */
        synth_cpu(&w, 20 * US);
        if (i == 0)
            tail_end = w.now;
        synth_idle(&w, 5 * MS);
    }
    synth_close(&fe);

    assert_int_equal(fx_analyze(f, 0, 1, f->fe), 0);
    assert_int_equal(f->r.requests, 2);
    assert_int_equal(f->r.blocks, 2);
    const struct plan_block *b0 = &f->plan->blocks[f->plan->requests[0].block];
    const struct plan_block *b1 = &f->plan->blocks[f->plan->requests[1].block];
    /* the first request's log write and CPU after its close are its tail,
     * after the SEND: the response's recorded time does not include them */
    fx_expect_kinds(f, f->plan->requests[0].block, "RCSFC");
    assert_true(f->plan->ops[b0->first_op + 4].a.cpu_ns == 20 * US);
    assert_true(b0->tail_ns == tail_end - send_end[0]);
    /* the last one's tail after its close may be shutdown work: cut */
    fx_expect_kinds(f, f->plan->requests[1].block, "RCS");
    assert_true(b1->tail_ns == 0); /* cut where the EOF read finished it */
    /* covered: both requests' RECV, SEND, EOF read and the first's log
     * write (7); in the window, the accept path's two lock events too */
    assert_int_equal(f->r.covered_events, 7);
    assert_int_equal(f->r.window_events, 9);
    assert_int_equal(f->r.tail_events, 3);
    assert_true(f->r.tail_cpu_ns == 20 * US);
    assert_int_equal(f->r.outside.events[ANALYZE_OUT_ACCEPT], 2);
    assert_int_equal(f->r.outside.events[ANALYZE_OUT_POST], 0);
    assert_int_equal(f->r.outside.events[ANALYZE_OUT_SHUTDOWN], 1);
    assert_true(f->r.outside.cpu_ns[ANALYZE_OUT_SHUTDOWN] == 20 * US);
    assert_true(f->r.in_cpu_ns == 80 * US);
    char line[1024];
    analyze_outside_format(&f->r, line, sizeof line);
    assert_non_null(strstr(line, "outside requests: 0.0 ms CPU (0.0%) in 2 events (22.2%): "
                                 "post-response 0.0 ms/0, accept 0.0 ms/2,"));
}

/* ---- a worker that exits after its last request (php-fpm's
 * pm.max_requests): what it did after that request's finish may be its
 * shutdown, cut like a tail at the end of the recording, even when the
 * recording goes on long enough (65536 events, 2 s) for the tail to be
 * sealed as idle ---- */

static void test_tail_thread_exit(void **state)
{
    struct fx *f = *state;
    struct synth_proc fe;
    synth_open(&fe, f->fe, "fpm", "h1", "rec-fe", 100, 0);
    uint32_t log = synth_string(&fe, "/var/log/fpm.log");
    struct synth_thread a, b;
    synth_thread_init(&a, &fe, 101, T0);
    synth_thread_init(&b, &fe, 102, T0 + 5 * MS);
    struct synth_addr c1 = {{192, 168, 7, 7}, 50201}, c2 = {{192, 168, 7, 7}, 50202};
    synth_conn_tcp(&a, TRACE_CONN_ACCEPT, 1, 9, &fe_addr, &c1);
    synth_net(&a, TRACE_NET_RECV, 1, 200, 1 * MS);
    synth_cpu(&a, 30 * US);
    synth_net(&a, TRACE_NET_SEND, 1, 900, 5 * US);
    synth_net(&a, TRACE_NET_RECV, 1, 0, 10 * US);
    synth_conn_end(&a, TRACE_CONN_CLOSE, 1, 9);
    synth_file(&a, TRACE_FILE_WRITE, log, 77, -1, 6, 0, 2 * US);
    synth_cpu(&a, 500 * US); /* module shutdown */
    struct trace_event exit_ev = synth_event(&a, TRACE_EV_THREAD_EXIT, 0, 0);
    synth_emit(&a, &exit_ev);
    /* another worker serves one long request: 70000 CPU events over 3.5 s */
    synth_conn_tcp(&b, TRACE_CONN_ACCEPT, 2, 10, &fe_addr, &c2);
    synth_net(&b, TRACE_NET_RECV, 2, 200, 1 * MS);
    for (int i = 0; i < 70000; i++) {
        synth_cpu(&b, 40 * US);
        synth_idle(&b, 10 * US);
        if (i % 4096 == 0)
            synth_flush(&fe, b.now);
    }
    synth_net(&b, TRACE_NET_SEND, 2, 900, 5 * US);
    synth_close(&fe);

    assert_int_equal(fx_analyze(f, 0, 1, f->fe), 0);
    assert_int_equal(f->r.requests, 2);
    fx_expect_kinds(f, f->plan->requests[0].block, "RCS"); /* no log write, no shutdown CPU */
    assert_int_equal(f->r.outside.events[ANALYZE_OUT_SHUTDOWN], 1);
    assert_true(f->r.outside.cpu_ns[ANALYZE_OUT_SHUTDOWN] == 500 * US);
}

/* ---- events the recording lost (LOSS records) are counted and analyze
 * says where: the requests around them are incomplete ---- */

static void test_lost_events(void **state)
{
    struct fx *f = *state;
    struct synth_proc fe;
    synth_open(&fe, f->fe, "web", "h1", "rec-fe", 100, 0);
    fx_accept_client(&fe, 1, 50006, T0);
    struct synth_thread w;
    synth_thread_init(&w, &fe, 101, T0 + 100 * US);
    synth_net(&w, TRACE_NET_RECV, 1, 120, 1 * MS);
    synth_cpu(&w, 15 * US);
    /* the ring was full (--drop): 40 events of this thread were not kept */
    struct trace_event loss = synth_event(&w, TRACE_EV_LOSS, 0, 0);
    loss.u.loss.count = 40;
    loss.u.loss.reason = TRACE_LOSS_BUFFER_FULL;
    synth_emit(&w, &loss);
    synth_net(&w, TRACE_NET_SEND, 1, 1000, 6 * US);
    synth_idle(&w, 1000 * MS); /* the client keeps the connection a second */
    synth_lock(&w, TRACE_LOCK_ACQUIRE, 0x7400, 0, 1 * US);
    synth_lock(&w, TRACE_LOCK_RELEASE, 0x7400, 0, 1 * US);
    synth_flush(&fe, UINT64_MAX);
    /* 3 calls of a thread that found no ring, since the start: written a
     * second after they began, as the collector notes them (not "late") */
    loss.tid = 0;
    loss.ts_ns = loss.u.loss.from_ns = T0;
    loss.u.loss.to_ns = w.now;
    loss.u.loss.count = 3;
    loss.u.loss.reason = TRACE_LOSS_NO_RING;
    synth_write(&fe, &loss);
    synth_net(&w, TRACE_NET_RECV, 1, 0, 1 * MS);
    synth_conn_end(&w, TRACE_CONN_CLOSE, 1, 9);
    synth_close(&fe);

    assert_int_equal(fx_analyze(f, 0, 1, f->fe), 0);
    assert_int_equal(f->r.requests, 1);
    assert_int_equal(f->r.lost_events, 43);
    assert_int_equal(f->r.late_events, 0);
    assert_non_null(f->warnings);
    const char *w_lost = strstr(f->warnings, "the recording lost 43 events in 1 trace file (most: "
                                             "40 in ");
    assert_non_null(w_lost);
    assert_non_null(strstr(w_lost, "web-100.trace, buffer_full): requests served around the "
                                   "losses are incomplete or missing in the plan"));
}

/* ---- a request whose body comes in a later receive: that wait is the
 * block's (the client was still sending), the wait before its head is not ---- */

static void test_request_in_two_receives(void **state)
{
    struct fx *f = *state;
    struct synth_proc fe;
    synth_open(&fe, f->fe, "web", "h1", "rec-fe", 100, 0);
    fx_accept_client(&fe, 1, 50005, T0);
    struct synth_thread w;
    synth_thread_init(&w, &fe, 101, T0 + 100 * US);
    synth_net(&w, TRACE_NET_RECV, 1, 200, 30 * MS); /* idle, then the head */
    synth_cpu(&w, 5 * US);
    synth_net(&w, TRACE_NET_RECV, 1, 4000, 2 * MS); /* the body, 2 ms later */
    synth_cpu(&w, 20 * US);
    synth_net(&w, TRACE_NET_SEND, 1, 500, 7 * US);
    synth_net(&w, TRACE_NET_RECV, 1, 0, 10 * MS); /* the client closes */
    synth_conn_end(&w, TRACE_CONN_CLOSE, 1, 9);
    synth_close(&fe);

    assert_int_equal(fx_analyze(f, 0, 1, f->fe), 0);
    assert_int_equal(f->plan->nrequests, 1);
    uint32_t b = f->plan->requests[0].block;
    fx_expect_kinds(f, b, "RCRCS");
    const struct plan_op *op = fx_ops(f, b);
    assert_int_equal(op[0].a.net.bytes, 200);
    assert_int_equal(op[0].recorded_ns, 0);
    assert_int_equal(op[2].a.net.bytes, 4000);
    assert_int_equal(op[2].recorded_ns, 2 * MS);
    assert_int_equal(f->plan->blocks[b].recorded_ns, 5 * US + 2 * MS + 20 * US + 7 * US);
}

/* ---- a recording whose clock went backwards: the merge keeps each
 * thread's order, and the analyzer says where ---- */

static void test_clock_backwards(void **state)
{
    struct fx *f = *state;
    struct synth_proc fe;
    synth_open(&fe, f->fe, "web", "h1", "rec-fe", 100, 0);
    fx_accept_client(&fe, 1, 50003, T0);
    struct synth_thread w;
    synth_thread_init(&w, &fe, 101, T0 + 100 * US);
    synth_net(&w, TRACE_NET_RECV, 1, 120, T0 + 5 * MS - w.now);
    synth_cpu(&w, 15 * US);
    synth_net(&w, TRACE_NET_SEND, 1, 1000, 6 * US);
    synth_flush(&fe, UINT64_MAX); /* in the file before what follows */
    /* the clock steps back 3 ms: the next request's receive and reply end
     * before the first reply did (the CPU event between them is keyed by
     * its start and is not counted) */
    w.now -= 3 * MS;
    synth_net(&w, TRACE_NET_RECV, 1, 340, 10 * US);
    synth_cpu(&w, 25 * US);
    synth_net(&w, TRACE_NET_SEND, 1, 2000, 6 * US);
    synth_flush(&fe, UINT64_MAX);
    w.now = T0 + 30 * MS;
    synth_net(&w, TRACE_NET_RECV, 1, 0, 1 * US); /* the client closes */
    synth_conn_end(&w, TRACE_CONN_CLOSE, 1, 9);
    synth_close(&fe);

    assert_int_equal(fx_analyze(f, 0, 1, f->fe), 0);
    assert_int_equal(f->r.requests, 2);
    assert_non_null(f->warnings);
    assert_non_null(strstr(f->warnings, "2 events ended more than 1 ms before an earlier event "
                                        "of their own thread (worst "));
    assert_non_null(strstr(f->warnings, "thread 101 in "));
    /* it points to the command that recorded, whichever of the two it was */
    assert_non_null(strstr(f->warnings, "(see what preplay record or preplay collect printed "
                                        "when it stopped)"));
    /* the second request is served after the first, with its own ops */
    fx_expect_kinds(f, f->plan->requests[1].block, "RCS");
    assert_int_equal(fx_ops(f, f->plan->requests[1].block)[2].a.net.bytes, 2000);
}

/* ---- a DB event written by another thread (a driver thread read the
 * answer: tracer/preload/db_wire.c) comes after its own thread's later events in
 * the file; it takes its place in time, in its request, with no warning ---- */
static void test_db_event_written_late(void **state)
{
    struct fx *f = *state;
    struct synth_proc fe;
    synth_open(&fe, f->fe, "web", "h1", "rec-fe", 100, 0);
    fx_accept_client(&fe, 1, 50003, T0);
    struct synth_thread w;
    synth_thread_init(&w, &fe, 101, T0 + 100 * US);
    synth_net(&w, TRACE_NET_RECV, 1, 120, T0 + 5 * MS - w.now);
    synth_cpu(&w, 15 * US);
    /* the query goes out and its answer comes 2 ms later, read by another
     * thread, which writes the event; this one waits for that thread */
    struct trace_event query = synth_event(&w, TRACE_EV_DB, TRACE_DB_QUERY, 2 * MS);
    query.u.db.source = TRACE_DB_WIRE;
    query.u.db.db_conn_id = 5;
    query.u.db.query_id = synth_string(&fe, "SELECT 1");
    w.now = query.ts_ns + 10 * US;
    synth_lock(&w, TRACE_LOCK_ACQUIRE, 7, 0, 2100 * US);
    synth_lock(&w, TRACE_LOCK_RELEASE, 7, 0, 1 * US);
    synth_cpu(&w, 10 * US);
    synth_net(&w, TRACE_NET_SEND, 1, 1000, 6 * US);
    synth_flush(&fe, UINT64_MAX);
    synth_write(&fe, &query); /* in the file after the reply */
    w.now = T0 + 30 * MS;
    synth_net(&w, TRACE_NET_RECV, 1, 0, 1 * US); /* the client closes */
    synth_conn_end(&w, TRACE_CONN_CLOSE, 1, 9);
    synth_close(&fe);

    assert_int_equal(fx_analyze(f, 0, 1, f->fe), 0);
    assert_int_equal(f->r.requests, 1);
    assert_true(!f->warnings || !strstr(f->warnings, "before an earlier event"));
    fx_expect_kinds(f, f->plan->requests[0].block, "RCDLLCS");
    assert_int_equal(fx_ops(f, f->plan->requests[0].block)[2].recorded_ns, 2 * MS);
    /* parsed from the wire: its thread may have gone on, not a blocking call */
    assert_int_equal(fx_ops(f, f->plan->requests[0].block)[2].flags & PLAN_DB_BLOCKING, 0);
}

/* ---- a DB event from the client library (source CAPI) was a call its
 * thread sat in: the plan's op says so (PLAN_DB_BLOCKING), so an event
 * loop making it is replayed held through it ---- */
static void test_db_capi_blocking(void **state)
{
    struct fx *f = *state;
    struct synth_proc fe;
    synth_open(&fe, f->fe, "web", "h1", "rec-fe", 100, 0);
    fx_accept_client(&fe, 1, 50003, T0);
    struct synth_thread w;
    synth_thread_init(&w, &fe, 101, T0 + 100 * US);
    synth_net(&w, TRACE_NET_RECV, 1, 120, T0 + 5 * MS - w.now);
    synth_cpu(&w, 15 * US);
    struct trace_event query = synth_event(&w, TRACE_EV_DB, TRACE_DB_QUERY, 2 * MS);
    query.u.db.source = TRACE_DB_CAPI;
    query.u.db.db_conn_id = 5;
    query.u.db.query_id = synth_string(&fe, "SELECT 1");
    synth_emit(&w, &query);
    synth_cpu(&w, 10 * US);
    synth_net(&w, TRACE_NET_SEND, 1, 1000, 6 * US);
    w.now = T0 + 30 * MS;
    synth_net(&w, TRACE_NET_RECV, 1, 0, 1 * US); /* the client closes */
    synth_conn_end(&w, TRACE_CONN_CLOSE, 1, 9);
    synth_close(&fe);

    assert_int_equal(fx_analyze(f, 0, 1, f->fe), 0);
    assert_int_equal(f->r.requests, 1);
    fx_expect_kinds(f, f->plan->requests[0].block, "RCDCS");
    const struct plan_op *db = &fx_ops(f, f->plan->requests[0].block)[2];
    assert_int_equal(db->flags & PLAN_DB_BLOCKING, PLAN_DB_BLOCKING);
    assert_int_equal(db->flags & PLAN_DB_CUT, 0);
}

/* ---- events a file holds back beyond the merge window are analysed out
 * of time order, and a warning counts them ---- */

static void test_late_events(void **state)
{
    struct fx *f = *state;
    struct synth_proc fe;
    synth_open(&fe, f->fe, "web", "h1", "rec-fe", 100, 0);
    fx_accept_client(&fe, 1, 50003, T0);
    struct synth_thread w, other;
    synth_thread_init(&w, &fe, 101, T0 + 100 * US);
    synth_thread_init(&other, &fe, 102, T0 + 1000 * MS);
    /* thread 102's lock pairs, a second after the request and half a
     * second apart (more than any merge window), are in the file before
     * the request's events: the first is analysed before those are read */
    synth_lock(&other, TRACE_LOCK_ACQUIRE, 0x7000, 0, 2 * US);
    synth_lock(&other, TRACE_LOCK_RELEASE, 0x7000, 0, 1 * US);
    other.now += 500 * MS;
    synth_lock(&other, TRACE_LOCK_ACQUIRE, 0x7000, 0, 2 * US);
    synth_lock(&other, TRACE_LOCK_RELEASE, 0x7000, 0, 1 * US);
    synth_flush(&fe, UINT64_MAX);
    synth_net(&w, TRACE_NET_RECV, 1, 120, T0 + 5 * MS - w.now);
    synth_cpu(&w, 15 * US);
    synth_net(&w, TRACE_NET_SEND, 1, 1000, 6 * US);
    synth_net(&w, TRACE_NET_RECV, 1, 0, 1 * US); /* the client closes */
    synth_conn_end(&w, TRACE_CONN_CLOSE, 1, 9);
    synth_close(&fe);

    assert_int_equal(fx_analyze(f, 0, 1, f->fe), 0);
    assert_non_null(f->warnings);
    const char *w_late = strstr(f->warnings, " events came after later events of other threads");
    assert_non_null(w_late);
    assert_true(f->r.late_events >= 4);
    char count[32];
    snprintf(count, sizeof count, "%llu", (unsigned long long)f->r.late_events);
    assert_memory_equal(w_late - strlen(count), count, strlen(count));
}

/* ---- a file with nothing queued before a key is still read past it: an
 * idle tier's next drain round may hold, after a later event, one that
 * ends before events of the other tier that are due to be analysed ---- */

static void test_idle_file_read_ahead(void **state)
{
    struct fx *f = *state;
    struct synth_proc fe, app;
    synth_open(&fe, f->fe, "web", "h1", "rec-fe", 100, 0);
    synth_open(&app, f->app, "api", "h1", "rec-app", 200, 0);
    fx_accept_client(&fe, 1, 50004, T0);
    struct synth_thread w, busy, a1, a2;
    synth_thread_init(&w, &fe, 101, T0 + 100 * US);
    synth_net(&w, TRACE_NET_RECV, 1, 120, T0 + 5 * MS - w.now);
    synth_cpu(&w, 15 * US);
    synth_net(&w, TRACE_NET_SEND, 1, 1000, 6 * US);
    /* the front end is busy for 2 s: a lock pair every millisecond */
    synth_thread_init(&busy, &fe, 102, T0 + 10 * MS);
    for (int i = 0; i < 2000; i++) {
        synth_lock(&busy, TRACE_LOCK_ACQUIRE, 0x7100, 0, 1 * US);
        synth_lock(&busy, TRACE_LOCK_RELEASE, 0x7100, 0, 1 * US);
        synth_idle(&busy, 1 * MS);
    }
    synth_net(&w, TRACE_NET_RECV, 1, 0, 1 * US); /* the client closes */
    synth_conn_end(&w, TRACE_CONN_CLOSE, 1, 9);
    synth_close(&fe);
    /* the app tier is idle until 1 s, then one drain round writes thread
     * 201's pair (ending at 1000 ms) before thread 202's (ending at 990 ms:
     * 10 ms of disorder, within any merge window) */
    synth_thread_init(&a1, &app, 201, T0 + 1000 * MS);
    synth_lock(&a1, TRACE_LOCK_ACQUIRE, 0x7200, 0, 1 * US);
    synth_lock(&a1, TRACE_LOCK_RELEASE, 0x7200, 0, 1 * US);
    synth_flush(&app, UINT64_MAX);
    synth_thread_init(&a2, &app, 202, T0 + 990 * MS);
    synth_lock(&a2, TRACE_LOCK_ACQUIRE, 0x7300, 0, 1 * US);
    synth_lock(&a2, TRACE_LOCK_RELEASE, 0x7300, 0, 1 * US);
    synth_close(&app);

    assert_int_equal(fx_analyze(f, 0, 2, f->fe, f->app), 0);
    /* analysed in time order: thread 202's pair before the front end's
     * events of 990-1000 ms */
    assert_int_equal(f->r.late_events, 0);
    assert_null(f->warnings ? strstr(f->warnings, "came after later events") : NULL);
}

/* ---- a nested call resolves to the callee's block; an untraced peer
 * becomes an EXTERNAL op with its sizes and duration ---- */

static void test_nested_and_external(void **state)
{
    struct fx *f = *state;
    struct synth_proc fe, app;
    synth_open(&fe, f->fe, "web", "h1", "rec-fe", 100, 0);
    synth_open(&app, f->app, "api", "h2", "rec-app", 200, 0);
    fx_accept_client(&fe, 1, 50003, T0);
    struct synth_thread w, a;
    synth_thread_init(&w, &fe, 101, T0 + 10 * US);
    synth_thread_init(&a, &app, 201, T0);
    struct synth_addr fe_out = {{10, 0, 0, 1}, 40001}, fe_out2 = {{10, 0, 0, 1}, 40002};
    struct synth_addr cache = {{10, 9, 9, 9}, 6379};
    synth_conn_tcp(&w, TRACE_CONN_CONNECT, 2, 11, &fe_out, &app_addr);
    synth_conn_tcp(&w, TRACE_CONN_CONNECT, 3, 12, &fe_out2, &cache);
    synth_conn_tcp(&a, TRACE_CONN_ACCEPT, 1, 12, &app_addr, &fe_out);
    w.now = T0 + 1 * MS;
    synth_net(&w, TRACE_NET_RECV, 1, 150, 5 * US);
    synth_lock(&w, TRACE_LOCK_ACQUIRE, 0x7000, 0, 2 * US);
    synth_lock(&w, TRACE_LOCK_RELEASE, 0x7000, 0, 1 * US);
    synth_net(&w, TRACE_NET_SEND, 2, 60, 4 * US);
    a.now = w.now + 20 * US;
    synth_net(&a, TRACE_NET_RECV, 1, 60, 2 * US);
    synth_file(&a, TRACE_FILE_PREAD, 0, 4242, 4096, 512, 65536, 9 * US);
    /* a copy_file_range to another file: its read side, then its write */
    synth_file(&a, TRACE_FILE_COPY_RANGE, 0, 4242, 0, 256, 65536, 6 * US);
    synth_file(&a, TRACE_FILE_WRITE, 0, 4343, 0, 256, 0, 0);
    synth_net(&a, TRACE_NET_SEND, 1, 700, 4 * US);
    synth_net(&w, TRACE_NET_RECV, 2, 700, a.now + 5 * US - w.now);
    synth_net(&w, TRACE_NET_RECV, 2, 0, 2 * US); /* the api closed: EOF, the request's */
    /* the cache: 40 bytes out, 300 back in two receives, 250 us in all */
    uint64_t ext_t0 = w.now;
    synth_net(&w, TRACE_NET_SEND, 3, 40, 3 * US);
    synth_net(&w, TRACE_NET_RECV, 3, 200, 240 * US);
    synth_net(&w, TRACE_NET_RECV, 3, 100, 7 * US);
    uint64_t ext_t1 = w.now;
    synth_net(&w, TRACE_NET_SEND, 1, 900, 6 * US);
    synth_close(&fe);
    synth_close(&app);

    assert_int_equal(fx_analyze(f, 0, 2, f->fe, f->app), 0);
    assert_int_equal(f->r.requests, 1);
    assert_int_equal(f->r.calls, 1);
    assert_int_equal(f->r.externals, 1);
    assert_int_equal(f->r.unmatched_bytes, 0);
    /* every event of both serving threads is in a block, the EOF included */
    assert_int_equal(f->r.covered_events, f->r.window_events);
    uint32_t b = f->plan->requests[0].block;
    fx_expect_kinds(f, b, "RLLKXS");
    const struct plan_op *op = fx_ops(f, b);
    assert_int_equal(op[1].op, PLAN_LOCK_ACQUIRE);
    assert_int_equal(op[2].op, PLAN_LOCK_RELEASE);
    assert_int_equal(op[1].a.lock.lock, op[2].a.lock.lock);
    uint32_t callee = op[3].a.call.callee_block;
    assert_true(callee < b); /* callees first */
    assert_string_equal(fx_component(f, callee), "api");
    fx_expect_kinds(f, callee, "RFFFS");
    const struct plan_op *cop = fx_ops(f, callee);
    assert_int_equal(cop[1].op, PLAN_FILE_READ);
    assert_int_equal(cop[1].a.file.offset, 4096);
    assert_int_equal(cop[1].a.file.size, 512);
    assert_int_equal(f->plan->files[cop[1].a.file.file].initial_size, 65536);
    /* the copy reads its source and writes its destination */
    assert_int_equal(cop[2].op, PLAN_FILE_READ);
    assert_int_equal(cop[2].a.file.file, cop[1].a.file.file);
    assert_int_equal(cop[2].a.file.size, 256);
    assert_int_equal(cop[3].op, PLAN_FILE_WRITE);
    assert_int_not_equal(cop[3].a.file.file, cop[1].a.file.file);
    assert_int_equal(cop[3].a.file.size, 256);
    assert_string_equal(plan_string(f->plan, op[4].a.external.host), "10.9.9.9:6379");
    assert_int_equal(op[4].a.external.sent, 40);
    assert_int_equal(op[4].a.external.received, 300);
    assert_int_equal(op[4].recorded_ns, ext_t1 - ext_t0);
    assert_int_equal(op[5].a.net.bytes, 900);
    assert_non_null(strstr(f->warnings, "1 calls went to untraced peers and became external"));
    /* its connect() is in the trace: the tracer saw no DB greeting there */
    assert_null(strstr(f->warnings, "--db-port"));
}

/* ---- untraced peers named in the warning, most calls first; a
 * connection the trace does not hold from its connect() on (made before
 * the trace began) is one whose DB greeting the tracer could not see:
 * only its peer gets the --db-port/--db-socket hint ---- */

static void test_external_peers_named(void **state)
{
    struct fx *f = *state;
    struct synth_proc fe;
    synth_open(&fe, f->fe, "web", "h1", "rec-fe", 100, 0);
    fx_accept_client(&fe, 1, 50006, T0);
    struct synth_thread w;
    synth_thread_init(&w, &fe, 101, T0 + 10 * US);
    struct synth_addr out1 = {{10, 0, 0, 1}, 40011}, out2 = {{10, 0, 0, 1}, 40012};
    struct synth_addr cache = {{10, 9, 9, 9}, 6379}, db = {{10, 9, 9, 8}, 3307};
    synth_conn_tcp(&w, TRACE_CONN_CONNECT, 2, 11, &out1, &cache);
    synth_conn_tcp(&w, TRACE_CONN_IDENT, 3, 12, &out2, &db); /* connected before tracing */
    w.now = T0 + 1 * MS;
    synth_net(&w, TRACE_NET_RECV, 1, 150, 5 * US);
    for (int i = 0; i < 2; i++) { /* two calls to the cache */
        synth_net(&w, TRACE_NET_SEND, 2, 40, 3 * US);
        synth_net(&w, TRACE_NET_RECV, 2, 100, 50 * US);
    }
    synth_net(&w, TRACE_NET_SEND, 3, 30, 3 * US); /* one to the DB on 3307 */
    synth_net(&w, TRACE_NET_RECV, 3, 70, 80 * US);
    synth_net(&w, TRACE_NET_SEND, 1, 900, 6 * US);
    synth_close(&fe);

    assert_int_equal(fx_analyze(f, 0, 1, f->fe), 0);
    assert_int_equal(f->r.externals, 3);
    assert_non_null(f->warnings);
    assert_non_null(strstr(f->warnings, "preplay analyze: the 3 external calls went to "
                                        "10.9.9.9:6379 (2), 10.9.9.8:3307 (1)\n"
                                        "preplay analyze: the connections to 10.9.9.8:3307 "
                                        "began before their trace did, so the tracer could not "
                                        "tell a DB server by its greeting there: if one is a "
                                        "MySQL/MariaDB server, record with --db-port PORT or "
                                        "--db-socket NAME\n"));
}

/* ---- clock skew between two hosts, corrected ----
 * The app host's realtime clock is off by `error` (its anchor maps its
 * events that far off on the common timeline). The front end opens a new
 * connection to the app per request (as a client without a pool does), for
 * 10 s, enough events for the analyzer's periodic peer decisions to run
 * while the two hosts' views of each connection are 3 s apart. */
static void fx_skew_run(void **state, int64_t error)
{
    struct fx *f = *state;
    struct synth_proc fe, app;
    synth_open(&fe, f->fe, "web", "web-host", "rec-fe", 100, 0);
    synth_open(&app, f->app, "api", "app-host", "rec-app", 200, error);
    fx_accept_client(&fe, 1, 50004, T0);
    struct synth_thread w, a;
    synth_thread_init(&w, &fe, 101, T0 + 10 * US);
    synth_thread_init(&a, &app, 201, T0);
    const uint32_t n = 5000;
    for (uint32_t i = 0; i < n; i++) {
        struct synth_addr out = {{10, 0, 0, 1}, (uint16_t)(20000 + i)};
        uint64_t conn = 2 + i;
        w.now = T0 + 1 * MS + (uint64_t)i * 2 * MS;
        synth_net(&w, TRACE_NET_RECV, 1, 100, 5 * US);
        synth_cpu(&w, 20 * US);
        synth_conn_tcp(&w, TRACE_CONN_CONNECT, conn, 11, &out, &app_addr);
        a.now = w.now + 10 * US;
        synth_conn_tcp(&a, TRACE_CONN_ACCEPT, conn, 12, &app_addr, &out);
        synth_net(&w, TRACE_NET_SEND, conn, 64, 4 * US);
        a.now = w.now + 30 * US;
        synth_net(&a, TRACE_NET_RECV, conn, 64, 2 * US);
        synth_cpu(&a, 100 * US);
        synth_net(&a, TRACE_NET_SEND, conn, 256, 4 * US);
        synth_net(&a, TRACE_NET_RECV, conn, 0, 20 * US);
        synth_conn_end(&a, TRACE_CONN_CLOSE, conn, 12);
        synth_net(&w, TRACE_NET_RECV, conn, 256, a.now - 15 * US - w.now);
        synth_conn_end(&w, TRACE_CONN_CLOSE, conn, 11);
        synth_cpu(&w, 10 * US);
        synth_net(&w, TRACE_NET_SEND, 1, 512, 6 * US);
        if (i % 64 == 63) { /* keep the writers' heaps small */
            synth_flush(&fe, w.now - 1 * MS);
            synth_flush(&app, w.now - 1 * MS);
        }
    }
    synth_close(&fe);
    synth_close(&app);

    assert_int_equal(fx_analyze(f, 0, 2, f->fe, f->app), 0);
    assert_int_equal(f->r.requests, n);
    assert_int_equal(f->r.blocks, 2 * n);
    assert_int_equal(f->r.calls, n);
    assert_int_equal(f->r.externals, 0);
    assert_int_equal(f->r.unmatched_bytes, 0);
    /* the correction reported: app-host runs `error` from web-host, within
     * the slack a call leaves (the callee's block lies inside the call) */
    const char *line = strstr(f->warnings, "clock skew: host app-host runs ");
    assert_non_null(line);
    double ms = strtod(line + strlen("clock skew: host app-host runs "), NULL);
    assert_true(ms > (double)error / 1e6 - 0.1 && ms < (double)error / 1e6 + 0.1);
    /* after the first pairs, every callee block lies within its caller's
     * call on the corrected timeline */
    uint32_t checked = 0;
    for (uint64_t i = 100; i < f->plan->nrequests; i++) {
        const struct plan_block *cb = &f->plan->blocks[f->plan->requests[i].block];
        const struct plan_op *op = &f->plan->ops[cb->first_op];
        assert_int_equal(op[2].kind, PLAN_OP_CALL);
        const struct plan_block *callee = &f->plan->blocks[op[2].a.call.callee_block];
        assert_true(callee->start_ns >= cb->start_ns);
        assert_true(callee->start_ns + callee->recorded_ns <= cb->start_ns + cb->recorded_ns);
        checked++;
    }
    assert_int_equal(checked, n - 100);
}

static void test_clock_skew_ahead(void **state)
{
    fx_skew_run(state, 3000000000ll);
}

static void test_clock_skew_behind(void **state)
{
    fx_skew_run(state, -3000000000ll);
}

/* ---- an event loop: one thread interleaving connections is attributed
 * by descriptor (issue 27): each request's receive, CPU, upstream call and
 * send in its own block, nothing flagged ---- */

static void test_event_loop(void **state)
{
    struct fx *f = *state;
    struct synth_proc fe;
    synth_open(&fe, f->fe, "evloop", "h1", "rec-fe", 100, 0);
    fx_accept_client(&fe, 1, 50010, T0);
    fx_accept_client(&fe, 2, 50011, T0 + 5 * US);
    fx_accept_client(&fe, 3, 50012, T0 + 9 * US);
    struct synth_thread w;
    synth_thread_init(&w, &fe, 101, T0 + 100 * US);
    struct synth_addr out = {{10, 0, 0, 1}, 40010}, cache = {{10, 9, 9, 9}, 6379};
    synth_conn_tcp(&w, TRACE_CONN_CONNECT, 5, 11, &out, &cache);
    /* one thread reads three requests before answering any; request 1's
     * upstream answer comes back after requests 2 and 3 arrived */
    w.now = T0 + 1 * MS;
    synth_net(&w, TRACE_NET_RECV, 1, 100, 3 * US);
    synth_cpu(&w, 5 * US);
    synth_net(&w, TRACE_NET_SEND, 5, 40, 2 * US);
    synth_net(&w, TRACE_NET_RECV, 2, 110, 3 * US);
    synth_cpu(&w, 6 * US);
    synth_net(&w, TRACE_NET_RECV, 3, 120, 3 * US);
    synth_cpu(&w, 7 * US);
    synth_net(&w, TRACE_NET_RECV, 5, -11, 1 * US); /* EAGAIN: request 1's call, not yet */
    synth_net(&w, TRACE_NET_RECV, 5, 300, 2 * US);
    synth_cpu(&w, 8 * US); /* handling request 1's upstream answer */
    synth_net(&w, TRACE_NET_SEND, 1, 1000, 3 * US);
    synth_net(&w, TRACE_NET_SEND, 2, 1100, 3 * US);
    synth_net(&w, TRACE_NET_SEND, 3, 1200, 3 * US);
    /* a well-behaved worker in the same process */
    fx_accept_client(&fe, 4, 50013, T0 + 2 * MS);
    struct synth_thread good;
    synth_thread_init(&good, &fe, 102, T0 + 3 * MS);
    synth_net(&good, TRACE_NET_RECV, 4, 90, 3 * US);
    synth_cpu(&good, 50 * US);
    synth_net(&good, TRACE_NET_SEND, 4, 900, 3 * US);
    synth_close(&fe);

    assert_int_equal(fx_analyze(f, 0, 1, f->fe), 0);
    assert_int_equal(f->r.violations, 0);
    assert_int_equal(f->plan->nviolations, 0);
    assert_int_equal(f->plan->nrequests, 4);
    assert_int_equal(f->r.externals, 1);
    assert_true(f->r.coverage == 1.0);
    assert_int_equal(f->plan->ncomponents, 1);
    assert_int_equal(f->plan->components[0].event_loop, 1);
    /* each block by its request bytes: what it received, CPU, sent */
    static const uint64_t req[4] = {100, 110, 120, 90}, resp[4] = {1000, 1100, 1200, 900};
    static const uint64_t cpu[4] = {5 * US, 6 * US, 7 * US, 50 * US};
    uint32_t seen = 0;
    for (uint32_t i = 0; i < f->plan->nblocks; i++) {
        const struct plan_block *b = &f->plan->blocks[i];
        const struct plan_op *op = fx_ops(f, i);
        assert_int_equal(b->flags, 0);
        uint32_t k = 0;
        while (k < 4 && req[k] != op[0].a.net.bytes)
            k++;
        assert_true(k < 4);
        seen |= 1u << k;
        if (k == 0) {
            fx_expect_kinds(f, i, "RCXCS");
            assert_int_equal(op[2].a.external.sent, 40);
            assert_int_equal(op[2].a.external.received, 300);
            assert_int_equal(op[3].a.cpu_ns, 8 * US);
        } else {
            fx_expect_kinds(f, i, "RCS");
        }
        assert_int_equal(op[1].a.cpu_ns, cpu[k]);
        assert_int_equal(op[b->nops - 1].a.net.bytes, resp[k]);
    }
    assert_int_equal(seen, 15);
    assert_non_null(strstr(f->warnings, "component evloop (pid 100) thread 101 is an event loop"));
}

/* ---- a worker becomes a loop after its first upstream call (issue 27's
 * flaky proxy check): nginx reads request A, connects to its upstream and
 * sends A's call while still one request in, then reads B (a loop from
 * here). Once A is answered, C's call goes out on A's pooled upstream
 * connection: it is C's, never A's (the connection's opener names its
 * first call only), though A's block is still open (its client has not
 * sent its next request yet) ---- */

/* The api side of one upstream connection: accepted by its own thread
 * (a thread per connection), answering each `req`-byte call with `resp`. */
static void fx_api_accept(struct synth_thread *a, uint64_t conn, const struct synth_addr *peer,
                          uint64_t at)
{
    a->now = at;
    synth_conn_tcp(a, TRACE_CONN_ACCEPT, conn, 12, &app_addr, peer);
}

/* The api answers on conn: its receive returns `after`, then 10 us of CPU
 * and the answer. */
static void fx_api_answer(struct synth_thread *a, uint64_t conn, int64_t req, int64_t resp,
                          uint64_t after)
{
    synth_net(a, TRACE_NET_RECV, conn, req, after - a->now);
    synth_cpu(a, 10 * US);
    synth_net(a, TRACE_NET_SEND, conn, resp, 2 * US);
}

/* The front-end block whose first receive took `bytes` (the request). */
static uint32_t fx_block_by_request(const struct fx *f, const char *component, uint64_t bytes)
{
    for (uint32_t i = 0; i < f->plan->nblocks; i++)
        if (!strcmp(fx_component(f, i), component) && fx_ops(f, i)[0].kind == PLAN_OP_RECV &&
            fx_ops(f, i)[0].a.net.bytes == bytes)
            return i;
    fail_msg("no %s block received %llu bytes first", component, (unsigned long long)bytes);
    return 0;
}

/* ---- a request's think time is its client's pause after the previous
 * response on its connection, whatever order the blocks are finished in:
 * nginx -> php-fpm, where php's post-response tail (closing its DB
 * connection, the request's shutdown) holds the nginx block that called
 * it until the tail ends, while the client already had its answer and
 * sent the next request (a static file, no call) that finished first.
 * Its think time was taken from the response before the held one, so
 * static files after a POST showed the POST's whole time as think (LEMP:
 * 35% of each recorded session's span, replayed as idle clients) ---- */

static void test_think_after_held_block(void **state)
{
    struct fx *f = *state;
    struct synth_proc fe, app;
    synth_open(&fe, f->fe, "web", "h1", "rec-fe", 100, 0);
    synth_open(&app, f->app, "php", "h1", "rec-app", 200, 0);
    fx_accept_client(&fe, 1, 50030, T0);
    struct synth_thread w, a;
    synth_thread_init(&w, &fe, 101, T0 + 1 * MS);
    synth_thread_init(&a, &app, 201, T0);
    struct synth_addr up = {{10, 0, 0, 1}, 40030};
    uint64_t start[4], send_end[4];
    /* X: answered by the front end itself */
    synth_net(&w, TRACE_NET_RECV, 1, 50, 3 * US);
    start[0] = w.now;
    synth_cpu(&w, 20 * US);
    synth_net(&w, TRACE_NET_SEND, 1, 500, 3 * US);
    send_end[0] = w.now;
    /* A, 40 us later: a call to php, whose worker goes on after answering */
    synth_net(&w, TRACE_NET_RECV, 1, 100, 40 * US);
    start[1] = w.now;
    synth_conn_tcp(&w, TRACE_CONN_CONNECT, 5, 11, &up, &app_addr);
    fx_api_accept(&a, 1, &up, w.now + 1 * US);
    synth_net(&w, TRACE_NET_SEND, 5, 33, 2 * US);
    fx_api_answer(&a, 1, 33, 216, w.now + 20 * US);
    w.now = a.now + 10 * US;
    synth_net(&w, TRACE_NET_RECV, 5, 216, 2 * US);
    synth_conn_end(&w, TRACE_CONN_CLOSE, 5, 11);
    synth_net(&w, TRACE_NET_SEND, 1, 226, 3 * US);
    send_end[1] = w.now;
    /* php reads the EOF and works on (its tail, to the recording's end) */
    synth_net(&a, TRACE_NET_RECV, 1, 0, w.now - a.now);
    synth_conn_end(&a, TRACE_CONN_CLOSE, 1, 12);
    synth_cpu(&a, 2 * MS);
    /* B, 30 us after A's answer, served and answered while php's tail runs */
    synth_net(&w, TRACE_NET_RECV, 1, 60, 30 * US);
    start[2] = w.now;
    synth_cpu(&w, 20 * US);
    synth_net(&w, TRACE_NET_SEND, 1, 600, 3 * US);
    send_end[2] = w.now;
    /* C, 25 us later: B is over and written while A waits for php */
    synth_net(&w, TRACE_NET_RECV, 1, 70, 25 * US);
    start[3] = w.now;
    synth_cpu(&w, 20 * US);
    synth_net(&w, TRACE_NET_SEND, 1, 700, 3 * US);
    send_end[3] = w.now;
    synth_net(&w, TRACE_NET_RECV, 1, 0, 10 * US); /* the client closes */
    synth_conn_end(&w, TRACE_CONN_CLOSE, 1, 9);
    synth_close(&fe);
    synth_close(&app);

    assert_int_equal(fx_analyze(f, 0, 2, f->fe, f->app), 0);
    assert_int_equal(f->r.requests, 4);
    assert_int_equal(f->r.calls, 1);
    assert_int_equal(f->plan->nrequests, 4);
    static const uint64_t req[4] = {50, 100, 60, 70};
    for (int i = 0; i < 4; i++) {
        uint32_t b = fx_block_by_request(f, "web", req[i]);
        const struct plan_request *rq = NULL;
        for (uint64_t r = 0; r < f->plan->nrequests; r++)
            if (f->plan->requests[r].block == b)
                rq = &f->plan->requests[r];
        assert_non_null(rq);
        assert_int_equal(rq->session, f->plan->requests[0].session);
        assert_int_equal(rq->arrival_ns, start[i] - start[0]);
        /* 0, 40, 30, 25 us: never B's 30 us plus A's whole time */
        assert_int_equal(rq->think_ns, i ? start[i] - send_end[i - 1] : 0);
    }
    /* A called php (whose tail, running to the recording's end, held it) */
    fx_expect_kinds(f, fx_block_by_request(f, "web", 100), "RKS");
}

static void test_loop_pooled_upstream(void **state)
{
    struct fx *f = *state;
    struct synth_proc fe, app;
    synth_open(&fe, f->fe, "web", "h1", "rec-fe", 100, 0);
    synth_open(&app, f->app, "api", "h1", "rec-app", 200, 0);
    fx_accept_client(&fe, 1, 50020, T0);
    fx_accept_client(&fe, 2, 50021, T0 + 5 * US);
    fx_accept_client(&fe, 3, 50022, T0 + 9 * US);
    struct synth_thread w, a1, a2;
    synth_thread_init(&w, &fe, 101, T0 + 1 * MS);
    synth_thread_init(&a1, &app, 201, T0);
    synth_thread_init(&a2, &app, 202, T0);
    struct synth_addr up1 = {{10, 0, 0, 1}, 40021}, up2 = {{10, 0, 0, 1}, 40022};
    synth_net(&w, TRACE_NET_RECV, 1, 100, 3 * US); /* A */
    synth_conn_tcp(&w, TRACE_CONN_CONNECT, 5, 11, &up1, &app_addr);
    fx_api_accept(&a1, 1, &up1, w.now + 1 * US);
    synth_net(&w, TRACE_NET_SEND, 5, 33, 2 * US); /* A's call, one request in */
    fx_api_answer(&a1, 1, 33, 216, w.now + 20 * US);
    synth_net(&w, TRACE_NET_RECV, 2, 110, 3 * US); /* B: A is unanswered, a loop now */
    synth_conn_tcp(&w, TRACE_CONN_CONNECT, 6, 12, &up2, &app_addr);
    fx_api_accept(&a2, 2, &up2, w.now + 1 * US);
    synth_net(&w, TRACE_NET_SEND, 6, 34, 2 * US);       /* B's call */
    fx_api_answer(&a2, 2, 34, 20000, w.now + 500 * US); /* B's answer takes a while */
    w.now = a1.now + 10 * US;
    synth_net(&w, TRACE_NET_RECV, 5, 216, 2 * US);
    synth_net(&w, TRACE_NET_SEND, 1, 226, 3 * US); /* A answered, its block still open */
    synth_net(&w, TRACE_NET_RECV, 3, 120, 3 * US); /* C */
    synth_net(&w, TRACE_NET_SEND, 5, 35, 2 * US);  /* C's call on A's pooled connection */
    fx_api_answer(&a1, 1, 35, 50000, w.now + 20 * US);
    w.now = a1.now + 10 * US;
    synth_net(&w, TRACE_NET_RECV, 5, 50000, 2 * US);
    synth_net(&w, TRACE_NET_SEND, 3, 50010, 3 * US);
    w.now = a2.now + 10 * US;
    synth_net(&w, TRACE_NET_RECV, 6, 20000, 2 * US);
    synth_net(&w, TRACE_NET_SEND, 2, 20010, 3 * US);
    synth_net(&w, TRACE_NET_RECV, 1, 105, 3 * US); /* A's client's next request: A is over */
    synth_net(&w, TRACE_NET_SEND, 1, 300, 3 * US);
    synth_close(&fe);
    synth_close(&app);

    assert_int_equal(fx_analyze(f, 0, 2, f->fe, f->app), 0);
    assert_int_equal(f->r.violations, 0);
    assert_int_equal(f->r.requests, 4);
    assert_int_equal(f->r.calls, 3);
    assert_int_equal(f->r.externals, 0);
    assert_int_equal(f->r.unmatched_bytes, 0);
    assert_int_equal(f->plan->components[0].event_loop, 1);
    /* each request's own call, answered by the api block its bytes name */
    static const uint64_t req[3] = {100, 110, 120}, call[3] = {33, 34, 35};
    for (int i = 0; i < 3; i++) {
        uint32_t b = fx_block_by_request(f, "web", req[i]);
        fx_expect_kinds(f, b, "RKS");
        uint32_t callee = fx_ops(f, b)[1].a.call.callee_block;
        assert_string_equal(fx_component(f, callee), "api");
        assert_int_equal(fx_ops(f, callee)[0].a.net.bytes, call[i]);
    }
    fx_expect_kinds(f, fx_block_by_request(f, "web", 105), "RS");
}

/* ---- a worker that answered part of a response (nginx streaming a large
 * upstream body) reads the next request on another connection, then more
 * of the first one's upstream answer: those bytes continue the first
 * request's call (the thread multiplexes: a loop from there), not a call
 * of the new request that no callee answers (an external with unmatched
 * bytes, issue 27's flaky proxy check) ---- */

static void test_loop_after_partial_answer(void **state)
{
    struct fx *f = *state;
    struct synth_proc fe, app;
    synth_open(&fe, f->fe, "web", "h1", "rec-fe", 100, 0);
    synth_open(&app, f->app, "api", "h1", "rec-app", 200, 0);
    fx_accept_client(&fe, 1, 50030, T0);
    fx_accept_client(&fe, 2, 50031, T0 + 5 * US);
    struct synth_thread w, a1, a2;
    synth_thread_init(&w, &fe, 101, T0 + 1 * MS);
    synth_thread_init(&a1, &app, 201, T0);
    synth_thread_init(&a2, &app, 202, T0);
    struct synth_addr up1 = {{10, 0, 0, 1}, 40031}, up2 = {{10, 0, 0, 1}, 40032};
    synth_net(&w, TRACE_NET_RECV, 1, 100, 3 * US); /* A */
    synth_conn_tcp(&w, TRACE_CONN_CONNECT, 5, 11, &up1, &app_addr);
    fx_api_accept(&a1, 1, &up1, w.now + 1 * US);
    synth_net(&w, TRACE_NET_SEND, 5, 33, 2 * US);
    fx_api_answer(&a1, 1, 33, 3000, w.now + 20 * US);
    w.now = a1.now + 10 * US;
    synth_net(&w, TRACE_NET_RECV, 5, 1000, 2 * US);
    synth_net(&w, TRACE_NET_SEND, 1, 800, 3 * US); /* part of A's answer */
    synth_net(&w, TRACE_NET_RECV, 2, 110, 3 * US); /* B, A answered in part */
    synth_conn_tcp(&w, TRACE_CONN_CONNECT, 6, 12, &up2, &app_addr);
    fx_api_accept(&a2, 2, &up2, w.now + 1 * US);
    synth_net(&w, TRACE_NET_SEND, 6, 34, 2 * US); /* B's call */
    fx_api_answer(&a2, 2, 34, 216, w.now + 20 * US);
    synth_net(&w, TRACE_NET_RECV, 5, 2000, 2 * US); /* the rest of A's upstream answer */
    synth_net(&w, TRACE_NET_SEND, 1, 2200, 3 * US);
    w.now = a2.now + 10 * US;
    synth_net(&w, TRACE_NET_RECV, 6, 216, 2 * US);
    synth_net(&w, TRACE_NET_SEND, 2, 226, 3 * US);
    synth_net(&w, TRACE_NET_RECV, 1, 105, 3 * US); /* A's client's next request */
    synth_net(&w, TRACE_NET_SEND, 1, 300, 3 * US);
    synth_close(&fe);
    synth_close(&app);

    assert_int_equal(fx_analyze(f, 0, 2, f->fe, f->app), 0);
    assert_int_equal(f->r.violations, 0);
    assert_int_equal(f->r.requests, 3);
    assert_int_equal(f->r.calls, 2);
    assert_int_equal(f->r.externals, 0);
    assert_int_equal(f->r.unmatched_bytes, 0);
    assert_int_equal(f->plan->components[0].event_loop, 1);
    fx_expect_kinds(f, fx_block_by_request(f, "web", 100), "RKSS");
    fx_expect_kinds(f, fx_block_by_request(f, "web", 110), "RKS");
    fx_expect_kinds(f, fx_block_by_request(f, "web", 105), "RS");
}

/* ---- what no descriptor settles stays a violation: a request read by one
 * thread and answered by another is flagged ---- */

static void test_shared_request_violation(void **state)
{
    struct fx *f = *state;
    struct synth_proc fe;
    synth_open(&fe, f->fe, "evloop", "h1", "rec-fe", 100, 0);
    fx_accept_client(&fe, 1, 50010, T0);
    struct synth_thread a, b;
    synth_thread_init(&a, &fe, 101, T0 + 100 * US);
    synth_thread_init(&b, &fe, 102, T0 + 100 * US);
    a.now = T0 + 1 * MS;
    synth_net(&a, TRACE_NET_RECV, 1, 100, 3 * US);
    synth_cpu(&a, 5 * US);
    b.now = a.now + 10 * US;
    synth_net(&b, TRACE_NET_SEND, 1, 1000, 3 * US);
    synth_close(&fe);

    assert_int_equal(fx_analyze(f, 0, 1, f->fe), 0);
    assert_int_equal(f->r.violations, 2);
    assert_int_equal(f->plan->nrequests, 1);
    assert_true(f->plan->blocks[0].flags & PLAN_BLOCK_VIOLATION);
    assert_int_equal(f->plan->components[0].event_loop, 0);
    assert_non_null(strstr(f->warnings, "model violation: component evloop (pid 100) thread 101 "
                                        "switched between open requests"));
    assert_non_null(strstr(plan_string(f->plan, f->plan->violations_text),
                           "model violation: component evloop (pid 100) thread 10"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_stream_offsets, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_unix_pairing, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_unix_pairing_connect_without_peer, fx_setup,
                                        fx_teardown),
        cmocka_unit_test_setup_teardown(test_keepalive, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_think_after_held_block, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_post_close_tail, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_tail_thread_exit, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_clock_backwards, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_db_event_written_late, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_db_capi_blocking, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_late_events, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_idle_file_read_ahead, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_request_in_two_receives, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_lost_events, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_nested_and_external, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_external_peers_named, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_clock_skew_ahead, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_clock_skew_behind, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_event_loop, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_loop_pooled_upstream, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_loop_after_partial_answer, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_shared_request_violation, fx_setup, fx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
