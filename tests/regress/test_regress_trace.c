/* test_regress_trace.c - regress_trace_load (regress/regress_trace.h) on a
 * recording written here through the trace writer: a .counters file of
 * three 1 s windows, one process's trace whose records are in the orders
 * the tracer really wrote them for apache2 (a connection's close before
 * its LABEL and send, or its LABEL, then its shutdown and close, then the
 * send they follow: records are not in time order), and one process that
 * served no request. Every request must be counted with its response
 * time in the window its last send ends in; a request whose bytes had
 * waited in the kernel (the receive's queued_us, format 2.7) from when
 * they arrived. Must never depend on the machine it runs on (no clock,
 * no /proc). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "regress_trace.h"
#include "trace_file.h"

#define S 1000000000ull /* one second in ns */
#define T0 (100 * S)    /* the recording's first window starts here */

static void rt_header(struct trace_header *h, uint32_t pid)
{
    memset(h, 0, sizeof *h);
    strcpy(h->host, "testhost");
    strcpy(h->component, "frontend");
    strcpy(h->recording_id, "rec-regress-trace-test");
    strcpy(h->tracer_version, "synthetic");
    strcpy(h->exe, "/usr/sbin/apache2");
    h->pid = pid;
    h->ppid = 1;
    h->mono_anchor_ns = T0;
    h->real_anchor_ns = 1700000000ull * S;
}

static void rt_write(struct trace_writer *w, struct trace_event ev)
{
    assert_int_equal(trace_writer_append(w, &ev), 0);
}

static void rt_counters(const char *dir)
{
    char path[4096], err[512];
    snprintf(path, sizeof path, "%s/machine-1.counters", dir);
    struct trace_header h;
    rt_header(&h, 1);
    struct trace_writer *w = trace_writer_open(path, &h, NULL, err, sizeof err);
    assert_non_null(w);
    for (int i = 0; i < 3; i++) {
        struct trace_counter c = {.name = "cpu_user", .name_len = 8, .value = 0.25};
        uint8_t payload[64];
        size_t bytes = trace_counters_encode(&c, 1, payload, sizeof payload);
        assert_true(bytes > 0);
        rt_write(w, (struct trace_event){.type = TRACE_EV_COUNTERS,
                                         .op = TRACE_COUNTERS_WINDOW,
                                         .ts_ns = T0 + (uint64_t)i * S,
                                         .dur_ns = S,
                                         .u.counters = {.nvalues = 1,
                                                        .bytes = (uint32_t)bytes,
                                                        .window_ns = S,
                                                        .tick_ns = S / 10},
                                         .data = payload});
    }
    assert_int_equal(trace_writer_close(w, err, sizeof err), 0);
}

static struct trace_event rt_ev(uint8_t type, uint8_t op, uint64_t ts, uint64_t dur)
{
    return (struct trace_event){.type = type, .op = op, .tid = 2, .ts_ns = ts, .dur_ns = dur};
}

/* One request on conn from start to its send's end, written in one of
 * the two orders the tracer wrote apache2's: label_first, LABEL then
 * shutdown and close then the send (a close read before the send it
 * follows); else close, LABEL, send. */
static void rt_request(struct trace_writer *w, uint64_t conn, uint64_t start, uint64_t send_end,
                       int label_first)
{
    struct trace_event label = rt_ev(TRACE_EV_LABEL, 0, start, 0);
    label.u.label = (struct trace_label_event){.conn_id = conn, .label_id = 1};
    struct trace_event e;
    if (label_first) {
        rt_write(w, label);
        e = rt_ev(TRACE_EV_CONN, TRACE_CONN_SHUTDOWN, send_end + 1000, 1000);
        e.u.conn.conn_id = conn;
        rt_write(w, e);
    }
    e = rt_ev(TRACE_EV_CONN, TRACE_CONN_CLOSE, send_end + 5000, 1000);
    e.u.conn.conn_id = conn;
    rt_write(w, e);
    if (!label_first)
        rt_write(w, label);
    e = rt_ev(TRACE_EV_NET, TRACE_NET_SEND, send_end - 20000, 20000);
    e.u.net = (struct trace_net_event){.fd = 8, .conn_id = conn, .size = 447, .result = 447};
    rt_write(w, e);
}

/* The "post" label's string: the first record of each process's file */
static void rt_post_string(struct trace_writer *w)
{
    struct trace_event s = rt_ev(TRACE_EV_STRING, 0, 0, 0);
    s.u.string = (struct trace_string_event){.id = 1, .len = 4};
    s.data = "post";
    rt_write(w, s);
}

/* A recording in a new directory dir (a template, filled in): its
 * .counters file, and process 2's trace opened with the label's string
 * written */
static struct trace_writer *rt_recording(char *dir)
{
    char path[4096], err[512];
    assert_non_null(mkdtemp(dir));
    rt_counters(dir);
    snprintf(path, sizeof path, "%s/frontend-2.trace", dir);
    struct trace_header h;
    rt_header(&h, 2);
    struct trace_writer *w = trace_writer_open(path, &h, NULL, err, sizeof err);
    assert_non_null(w);
    rt_post_string(w);
    return w;
}

/* The recording in dir as regress reads it, into rf */
static void rt_load(const char *dir, struct results_file *rf)
{
    char err[512];
    memset(rf, 0, sizeof *rf);
    int rc = regress_trace_load(dir, "baseline", rf, err, sizeof err);
    if (rc)
        fprintf(stderr, "%s\n", err);
    assert_int_equal(rc, 0);
}

static void rt_remove(const char *dir)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

static void test_out_of_order(void **state)
{
    (void)state;
    char dir[] = "/tmp/test-regress-trace-XXXXXX", path[4096], err[512];
    struct trace_writer *w = rt_recording(dir);
    /* window 0: 10 ms and 30 ms; window 1: 70 ms (its send ends there) */
    rt_request(w, 1, T0 + S / 10, T0 + S / 10 + 10000000, 1);
    rt_request(w, 2, T0 + S / 2, T0 + S / 2 + 30000000, 0);
    rt_request(w, 3, T0 + S - 40000000, T0 + S + 30000000, 1);
    assert_int_equal(trace_writer_close(w, err, sizeof err), 0);
    /* a process that served no request (apache2's launcher): nothing to sort */
    snprintf(path, sizeof path, "%s/frontend-3.trace", dir);
    struct trace_header h;
    rt_header(&h, 3);
    w = trace_writer_open(path, &h, NULL, err, sizeof err);
    assert_non_null(w);
    rt_post_string(w);
    assert_int_equal(trace_writer_close(w, err, sizeof err), 0);

    struct results_file rf;
    rt_load(dir, &rf);
    long tp = -1, med = -1;
    for (size_t i = 0; i < rf.counters.nnames; i++) {
        if (!strcmp(rf.counters.names[i], "throughput_per_s:post"))
            tp = (long)i;
        if (!strcmp(rf.counters.names[i], "median_s:post"))
            med = (long)i;
    }
    assert_true(tp >= 0 && med >= 0);
    assert_int_equal(rf.counters.nwindows, 3);
    double *v0 = rf.counters.windows[0].values, *v1 = rf.counters.windows[1].values,
           *v2 = rf.counters.windows[2].values;
    assert_true(fabs(v0[tp] - 2) < 1e-9);
    assert_true(fabs(v0[med] - 0.020) < 1e-9);
    assert_true(fabs(v1[tp] - 1) < 1e-9);
    assert_true(fabs(v1[med] - 0.070) < 1e-9);
    assert_true(v2[tp] == 0 && isnan(v2[med]));
    results_file_free(&rf);
    rt_remove(dir);
}

/* The median response time of label "post" in window 0 of recording dir */
static double rt_median0(const char *dir)
{
    struct results_file rf;
    rt_load(dir, &rf);
    double med = NAN;
    for (size_t i = 0; i < rf.counters.nnames; i++)
        if (!strcmp(rf.counters.names[i], "median_s:post"))
            med = rf.counters.windows[0].values[i];
    results_file_free(&rf);
    return med;
}

/* A request read 25 ms after its bytes arrived (a busy server): its
 * response time counts from the arrival, as analyze's schedule does */
static void test_queued(void **state)
{
    (void)state;
    char dir[] = "/tmp/test-regress-trace-XXXXXX", err[512];
    struct trace_writer *w = rt_recording(dir);
    uint64_t start = T0 + S / 10;
    struct trace_event label = rt_ev(TRACE_EV_LABEL, 0, start, 0);
    label.u.label = (struct trace_label_event){.conn_id = 1, .label_id = 1};
    rt_write(w, label);
    struct trace_event e = rt_ev(TRACE_EV_NET, TRACE_NET_RECV, start, 100000);
    e.u.net = (struct trace_net_event){
        .fd = 8, .conn_id = 1, .size = 4096, .result = 90, .queued_us = 25000};
    rt_write(w, e);
    e = rt_ev(TRACE_EV_NET, TRACE_NET_SEND, start + 10000000 - 20000, 20000);
    e.u.net = (struct trace_net_event){.fd = 8, .conn_id = 1, .size = 447, .result = 447};
    rt_write(w, e);
    assert_int_equal(trace_writer_close(w, err, sizeof err), 0);
    /* 10 ms from the label to the send's end, and 25 ms of waiting before
     * the receive's end (0.1 ms after the label) */
    assert_true(fabs(rt_median0(dir) - 0.0349) < 1e-9);
    rt_remove(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_out_of_order),
        cmocka_unit_test(test_queued),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
