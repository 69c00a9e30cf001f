/* test_trace_format.c - unit tests of the trace format: round trips of every
 * event type and field (extremes included), multi-frame files, damage of
 * every kind (truncation at every byte of the last frame, flipped bytes,
 * wrong magic, unknown major version), forward compatibility (higher minor
 * with unknown records, fields and frames), salvage, the max_bytes ring and
 * the file mode. Every test asserts on decoded contents. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <zstd.h>

#include "trace_codec.h"
#include "trace_counters.h"
#include "trace_file.h"
#include "test_tmpdir.h"
#include "trace_test_events.h"

/* Events compare equal when every field matches and their payloads match. */
static void assert_event_equal(const struct trace_event *a, const struct trace_event *b)
{
    struct trace_event x = *a, y = *b;
    x.data = y.data = NULL;
    if (memcmp(&x, &y, sizeof x) != 0)
        fail_msg("event mismatch: type %u/%u op %u/%u tid %u/%u ts %llu/%llu", a->type, b->type,
                 a->op, b->op, a->tid, b->tid, (unsigned long long)a->ts_ns,
                 (unsigned long long)b->ts_ns);
    if (a->type == TRACE_EV_STRING && a->u.string.len)
        assert_memory_equal(a->data, b->data, a->u.string.len);
    if (a->type == TRACE_EV_STACK && a->u.stack.nframes)
        assert_memory_equal(a->data, b->data, a->u.stack.nframes * sizeof(uint64_t));
    if (a->type == TRACE_EV_COUNTERS && a->u.counters.bytes)
        assert_memory_equal(a->data, b->data, a->u.counters.bytes);
}

static struct trace_writer *test_writer_open(const char *path,
                                             const struct trace_writer_options *opt)
{
    struct trace_header h;
    trace_test_header(&h, 4242, "frontend");
    char err[512];
    struct trace_writer *w = trace_writer_open(path, &h, opt, err, sizeof err);
    if (!w)
        fail_msg("%s", err);
    return w;
}

static void test_writer_close(struct trace_writer *w)
{
    char err[512];
    if (trace_writer_close(w, err, sizeof err) != 0)
        fail_msg("%s", err);
}

static void write_trace(const char *path, const struct trace_event *evs, size_t n,
                        const struct trace_writer_options *opt, uint64_t *flush_offsets,
                        size_t flush_every)
{
    struct trace_writer *w = test_writer_open(path, opt);
    for (size_t i = 0; i < n; i++) {
        if (flush_every && i % flush_every == 0) {
            assert_int_equal(trace_writer_flush(w), 0);
            if (flush_offsets)
                flush_offsets[i / flush_every] = trace_writer_bytes(w);
        }
        if (trace_writer_append(w, &evs[i]) != 0)
            fail_msg("%s", trace_writer_error(w));
    }
    test_writer_close(w);
}

/* Reads the whole trace; returns trace_reader_next's final value. */
static int read_all(const char *path, int salvage, struct trace_event *out, size_t cap, size_t *n,
                    char *msg, size_t msglen)
{
    struct trace_reader_options o = {.salvage = salvage};
    struct trace_reader *r = trace_reader_open(path, &o, msg, msglen);
    if (!r)
        return -2;
    static uint8_t payload[1 << 20];
    size_t used = 0;
    int rc;
    struct trace_event ev;
    *n = 0;
    while ((rc = trace_reader_next(r, &ev)) == 1) {
        assert_true(*n < cap);
        if (ev.type == TRACE_EV_STRING || ev.type == TRACE_EV_STACK) {
            size_t len = ev.type == TRACE_EV_STRING ? ev.u.string.len : ev.u.stack.nframes * 8;
            assert_true(used + len <= sizeof payload);
            if (len)
                memcpy(payload + used, ev.data, len);
            ev.data = payload + used;
            used += (len + 7) & ~(size_t)7;
        }
        out[(*n)++] = ev;
    }
    msg[0] = '\0';
    if (rc < 0)
        snprintf(msg, msglen, "%s", trace_reader_error(r));
    else if (trace_reader_warning(r))
        snprintf(msg, msglen, "%s", trace_reader_warning(r));
    trace_reader_close(r);
    return rc;
}

/* 2.2: a statement cut at the cap, its real lengths at their extremes. */
static void make_cut_db_event(struct trace_event *x)
{
    memset(x, 0, sizeof *x);
    x->type = TRACE_EV_DB;
    x->op = TRACE_DB_QUERY;
    x->flags = TRACE_F_CUT | TRACE_F_ERROR;
    x->u.db.error = 1064;
    x->u.db.query_id = 9;
    x->u.db.query_len = UINT64_MAX;
    x->u.db.params_len = 1;
}

/* 2.3: a PostgreSQL statement's error, its SQLSTATE packed. */
static void make_pg_db_event(struct trace_event *x)
{
    memset(x, 0, sizeof *x);
    x->type = TRACE_EV_DB;
    x->op = TRACE_DB_EXECUTE;
    x->flags = TRACE_F_ERROR;
    x->u.db.source = TRACE_DB_WIRE;
    x->u.db.dialect = TRACE_DB_POSTGRESQL;
    x->u.db.error = trace_db_sqlstate("42601");
    x->u.db.stmt_id = 3;
}

/* 2.5: a window of counters, a value not measured, one at 0, a name at
 * the length limit. */
static void make_counters_event(struct trace_event *x)
{
    static char longname[TRACE_MAX_COUNTER_NAME];
    memset(longname, 'n', sizeof longname);
    static const struct trace_counter counters[] = {
        {"cpu_user", 8, 0.25}, {"run_queue", 9, NAN}, {longname, sizeof longname, 0}};
    static uint8_t cpayload[600];
    memset(x, 0, sizeof *x);
    x->type = TRACE_EV_COUNTERS;
    x->op = TRACE_COUNTERS_WINDOW;
    x->ts_ns = 5000000000ULL;
    x->dur_ns = UINT64_MAX;
    x->u.counters.nvalues = 3;
    x->u.counters.bytes = (uint32_t)trace_counters_encode(counters, 3, cpayload, sizeof cpayload);
    x->u.counters.window_ns = 10000000000ULL;
    x->u.counters.tick_ns = UINT64_MAX;
    x->data = cpayload;
}

static size_t make_extreme_events(struct trace_event *e)
{
    static const char path[] = "/data/db/ibdata1";
    static const char binary[] = {'\0', 'x', '\n', (char)0xff};
    static const char query[] = "SELECT * FROM t WHERE id = ?";
    static const uint64_t frames[] = {0x400000, 0x3ff000, UINT64_MAX, 0, 0x7fffffffffff};
    size_t n = 0;
#define NEW(t, o) (memset(&e[n], 0, sizeof e[n]), e[n].type = (t), e[n].op = (o), &e[n++])
    struct trace_event *x;
    x = NEW(TRACE_EV_THREAD_START, 0);
    x->tid = UINT32_MAX;
    x->ts_ns = UINT64_MAX;
    x->u.thread.parent_tid = 1;
    x = NEW(TRACE_EV_THREAD_START, 0);
    x->tid = 1;
    x->ts_ns = 0;
    x = NEW(TRACE_EV_STRING, 0);
    x->tid = 1;
    x->u.string.id = 7;
    x->u.string.len = sizeof path - 1;
    x->data = path;
    x = NEW(TRACE_EV_STRING, 0);
    x->u.string.id = UINT32_MAX;
    x->u.string.len = sizeof binary;
    x->data = binary;
    x = NEW(TRACE_EV_STRING, 0);
    x->u.string.id = 8;
    x->u.string.len = 0;
    x = NEW(TRACE_EV_STRING, 0);
    x->u.string.id = 9;
    x->u.string.len = sizeof query - 1;
    x->data = query;
    x = NEW(TRACE_EV_STACK, 0);
    x->u.stack.id = 3;
    x->u.stack.nframes = 5;
    x->data = frames;
    x = NEW(TRACE_EV_FILE, TRACE_FILE_OPEN);
    x->tid = 1;
    x->ts_ns = 10;
    x->dur_ns = UINT64_MAX;
    x->flags = 0xffff & ~(TRACE_F_AFTER_CPU | TRACE_F_CUT); /* every bit FILE may carry */
    x->stack_id = 3;
    x->u.file.fd = INT32_MAX;
    x->u.file.path_id = 7;
    x->u.file.dev = UINT64_MAX;
    x->u.file.ino = 1;
    x->u.file.offset = -1;
    x->u.file.result = INT64_MIN;
    x->u.file.open_flags = UINT32_MAX;
    x->u.file.fd2 = INT32_MIN;
    x = NEW(TRACE_EV_FILE, TRACE_FILE_PREAD);
    x->tid = 1;
    x->u.file.fd = -1;
    x->u.file.offset = INT64_MIN;
    x->u.file.size = UINT64_MAX;
    x->u.file.result = INT64_MAX;
    x->u.file.file_size = UINT64_MAX;
    x->u.file.fd2 = -1;
    x = NEW(TRACE_EV_FILE, TRACE_FILE_PWRITE);
    x->tid = UINT32_MAX;
    x->ts_ns = 1;
    x->u.file.fd = 5;
    x->u.file.offset = INT64_MAX;
    x->u.file.size = 100;
    x->u.file.result = 100;
    x->u.file.fd2 = 0;
    x = NEW(TRACE_EV_FILE, 200); /* unknown op number: kept as is */
    x->u.file.fd = 5;
    x = NEW(TRACE_EV_CPU, 0);
    x->tid = 2;
    x->ts_ns = 123456789;
    x->dur_ns = 987654321;
    x->flags = TRACE_F_CPU_ESTIMATED;
    x = NEW(TRACE_EV_NET, TRACE_NET_SEND);
    x->tid = 2;
    x->u.net.fd = 9;
    x->u.net.msg_flags = UINT32_MAX;
    x->u.net.conn_id = UINT64_MAX;
    x->u.net.size = UINT64_MAX;
    x->u.net.result = -11;
    x->u.net.nmsgs = UINT32_MAX;
    x->flags = TRACE_F_ERROR | TRACE_F_NONBLOCK;
    x = NEW(TRACE_EV_NET, TRACE_NET_RECV);
    x->tid = 2;
    x->u.net.fd = 9;
    x->u.net.conn_id = 1;
    x->u.net.size = 0;
    x->u.net.result = 0;
    x = NEW(TRACE_EV_CONN, TRACE_CONN_CONNECT);
    x->u.conn.fd = 9;
    x->u.conn.proto = TRACE_PROTO_TCP;
    x->u.conn.family = 10;
    x->u.conn.local_port = 65535;
    x->u.conn.remote_port = 1;
    for (int i = 0; i < 16; i++) {
        x->u.conn.local_addr[i] = (uint8_t)(0xf0 + i);
        x->u.conn.remote_addr[i] = (uint8_t)(255 - i);
    }
    x->u.conn.conn_id = UINT64_MAX;
    x->u.conn.result = INT64_MIN;
    x = NEW(TRACE_EV_CONN, TRACE_CONN_ACCEPT);
    x->u.conn.fd = 11;
    x->u.conn.proto = TRACE_PROTO_UNIX_STREAM;
    x->u.conn.family = 1;
    x->u.conn.conn_id = 2;
    x->u.conn.unix_inode = UINT64_MAX;
    x->u.conn.unix_peer_inode = 4000000000ULL;
    x = NEW(TRACE_EV_SOCKOPT, 0);
    x->u.sockopt.fd = 11;
    x->u.sockopt.level = 6;
    x->u.sockopt.name = 1;
    x->u.sockopt.value = INT64_MIN;
    x->u.sockopt.conn_id = 2;
    x = NEW(TRACE_EV_LOCK, TRACE_LOCK_ACQUIRE);
    x->u.lock.kind = TRACE_LOCK_FCNTL;
    x->u.lock.mode = TRACE_LOCK_SHARED;
    x->u.lock.result = INT32_MIN;
    x->u.lock.lock_id = UINT64_MAX;
    x->u.lock.start = INT64_MIN;
    x->u.lock.len = INT64_MAX;
    x = NEW(TRACE_EV_LOCK, TRACE_LOCK_RELEASE);
    x->u.lock.kind = TRACE_LOCK_FCNTL;
    x->u.lock.mode = TRACE_LOCK_SHARED;
    x->u.lock.lock_id = UINT64_MAX;
    x = NEW(TRACE_EV_DB, TRACE_DB_EXECUTE);
    x->u.db.source = TRACE_DB_WIRE;
    x->u.db.error = INT32_MAX;
    x->u.db.db_conn_id = UINT64_MAX;
    x->u.db.query_id = 9;
    x->u.db.params_id = UINT32_MAX;
    x->u.db.stmt_id = UINT64_MAX;
    x->u.db.rows = UINT64_MAX;
    x->u.db.bytes = 1;
    x = NEW(TRACE_EV_LABEL, 0);
    x->u.label.conn_id = 2;
    x->u.label.label_id = 9;
    x = NEW(TRACE_EV_LOSS, 0);
    x->u.loss.count = UINT64_MAX;
    x->u.loss.from_ns = 1;
    x->u.loss.to_ns = UINT64_MAX;
    x->u.loss.reason = UINT32_MAX;
    x = NEW(TRACE_EV_CONTROL, TRACE_CTL_FORK);
    x->u.control.arg0 = INT64_MIN;
    x->u.control.arg1 = INT64_MAX;
    x = NEW(TRACE_EV_THREAD_EXIT, 0);
    x->tid = UINT32_MAX;
    x->ts_ns = 0;
#undef NEW
    return n;
}

static void test_roundtrip_every_type_and_extreme(void **state)
{
    (void)state;
    struct trace_event evs[64], got[64];
    size_t n = make_extreme_events(evs), m;
    make_cut_db_event(&evs[n++]);
    make_counters_event(&evs[n++]);
    make_pg_db_event(&evs[n++]);
    char sqlstate[6];
    trace_db_sqlstate_text(evs[n - 1].u.db.error, sqlstate);
    assert_string_equal(sqlstate, "42601");
    assert_int_equal(evs[n - 1].u.db.error, 0x01006084); /* FORMAT.md's example */
    unsigned seen[TRACE_EV_TYPE_COUNT] = {0};
    for (size_t i = 0; i < n; i++)
        seen[evs[i].type]++;
    for (unsigned t = 1; t < TRACE_EV_TYPE_COUNT; t++)
        if (!seen[t])
            fail_msg("type %s is not exercised", trace_event_type_name(t));
    const char *p = test_tmpdir_path("extreme.trace");
    write_trace(p, evs, n, NULL, NULL, 0);
    char msg[512];
    assert_int_equal(read_all(p, 0, got, 64, &m, msg, sizeof msg), 0);
    assert_int_equal(m, n);
    for (size_t i = 0; i < n; i++)
        assert_event_equal(&evs[i], &got[i]);

    struct trace_reader *r = trace_reader_open(p, NULL, msg, sizeof msg);
    assert_non_null(r);
    const struct trace_header *h = trace_reader_header(r);
    assert_int_equal(h->version_major, TRACE_FORMAT_MAJOR);
    assert_int_equal(h->version_minor, TRACE_FORMAT_MINOR);
    assert_string_equal(h->host, "testhost");
    assert_string_equal(h->component, "frontend");
    assert_string_equal(h->recording_id, "rec-0001");
    assert_string_equal(h->tracer_version, "0.1.0");
    assert_string_equal(h->exe, "/usr/bin/server");
    assert_int_equal(h->argv_len, 19);
    assert_memory_equal(h->argv_joined, "server\0--port\0008080", 19);
    assert_int_equal(h->pid, 4242);
    assert_int_equal(h->ppid, 1);
    assert_true(h->mono_anchor_ns == 1000000000ULL);
    assert_true(h->real_anchor_ns == 1700000000000000000ULL);
    assert_int_equal(h->ncpu_scores, 2);
    assert_string_equal(h->cpu_scores[1].name, "sha256");
    assert_true(h->cpu_scores[0].seconds == 0.125);
    struct trace_event ev;
    while (trace_reader_next(r, &ev) == 1)
        ;
    uint32_t len;
    const char *s = trace_reader_string(r, 7, &len);
    assert_non_null(s);
    assert_int_equal(len, 16);
    assert_string_equal(s, "/data/db/ibdata1");
    s = trace_reader_string(r, UINT32_MAX, &len);
    assert_int_equal(len, 4);
    assert_memory_equal(s, "\0x\n\xff", 4);
    s = trace_reader_string(r, 8, &len);
    assert_int_equal(len, 0);
    assert_null(trace_reader_string(r, 10, &len));
    assert_int_equal(trace_reader_skipped(r), 0);
    trace_reader_close(r);
}

static struct trace_event mix_events[40000], mix_got[40100];

static size_t make_mix(size_t n, uint64_t seed)
{
    struct trace_test_mix m;
    trace_test_mix_init(&m, 4, seed);
    size_t k = trace_test_mix_preamble(&m, mix_events);
    while (k < n)
        trace_test_mix_next(&m, &mix_events[k++]);
    return k;
}

/* Header tag 12 (1.1): the recording's options round-trip; a header
 * without them (the defaults, or a 1.0 writer) reads as empty. */
static void test_header_record_options(void **state)
{
    (void)state;
    const char *paths[2] = {test_tmpdir_path("opts.trace"), test_tmpdir_path("noopts.trace")};
    const char *want[2] = {"--only net,cpu --port 8080 --path-prefix /srv/data", ""};
    for (int k = 0; k < 2; k++) {
        struct trace_header h;
        trace_test_header(&h, 7, "frontend");
        snprintf(h.record_options, sizeof h.record_options, "%s", want[k]);
        char err[512];
        struct trace_writer *w = trace_writer_open(paths[k], &h, NULL, err, sizeof err);
        assert_non_null(w);
        assert_int_equal(trace_writer_close(w, err, sizeof err), 0);
        struct trace_reader *r = trace_reader_open(paths[k], NULL, err, sizeof err);
        assert_non_null(r);
        assert_string_equal(trace_reader_header(r)->record_options, want[k]);
        assert_int_equal(trace_reader_header(r)->version_major, TRACE_FORMAT_MAJOR);
        assert_int_equal(trace_reader_header(r)->version_minor, TRACE_FORMAT_MINOR);
        trace_reader_close(r);
    }
}

static void test_multi_frame(void **state)
{
    (void)state;
    size_t n = make_mix(40000, 7), m;
    const char *p = test_tmpdir_path("multi.trace");
    struct trace_writer_options o = {.frame_bytes = 4096};
    write_trace(p, mix_events, n, &o, NULL, 0);
    char msg[512];
    assert_int_equal(read_all(p, 0, mix_got, 40100, &m, msg, sizeof msg), 0);
    assert_int_equal(m, n);
    for (size_t i = 0; i < n; i++)
        assert_event_equal(&mix_events[i], &mix_got[i]);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    /* 40000 events of ~5 raw bytes in 4 KiB frames: dozens of frames, and
     * compact: well under 8 bytes per event even with small frames. */
    assert_true(st.st_size < 8 * 40000);
}

/* Writes three frames of the mix; returns the offset of the last chunk. */
static uint64_t write_three_frames(const char *p, size_t *n_out, size_t per_frame)
{
    size_t n = make_mix(3 * per_frame, 11);
    uint64_t offs[4];
    write_trace(p, mix_events, n, NULL, offs, per_frame);
    *n_out = n;
    return offs[2];
}

static void test_truncated_tail_every_byte(void **state)
{
    (void)state;
    size_t n, per_frame = 400;
    const char *p = test_tmpdir_path("three.trace");
    uint64_t last = write_three_frames(p, &n, per_frame);
    FILE *f = fopen(p, "rb");
    assert_non_null(f);
    static uint8_t data[1 << 20];
    size_t size = fread(data, 1, sizeof data, f);
    fclose(f);
    assert_true(size > last + 64);
    const char *t = test_tmpdir_path("cut.trace");
    char want[600], msg[600];
    snprintf(want, sizeof want, "%s: truncated frame at offset %llu (record ", t,
             (unsigned long long)last);
    size_t before = 2 * per_frame;
    for (size_t cut = last; cut < size; cut++) {
        f = fopen(t, "wb");
        assert_int_equal(fwrite(data, 1, cut, f), cut);
        fclose(f);
        size_t m;
        if (cut == last) {
            /* cut exactly at a chunk boundary: a shorter, valid trace */
            assert_int_equal(read_all(t, 0, mix_got, 40100, &m, msg, sizeof msg), 0);
            assert_int_equal(m, before);
            continue;
        }
        assert_int_equal(read_all(t, 0, mix_got, 40100, &m, msg, sizeof msg), -1);
        if (strncmp(msg, want, strlen(want)) != 0)
            fail_msg("cut at %zu: got '%s', want prefix '%s'", cut, msg, want);
        assert_int_equal(m, before);
        assert_int_equal(read_all(t, 1, mix_got, 40100, &m, msg, sizeof msg), 0);
        if (strncmp(msg, want, strlen(want)) != 0)
            fail_msg("salvage cut at %zu: got '%s'", cut, msg);
        /* everything before the damage, a prefix of the last frame, then a
         * SALVAGE loss counting what the damaged frame held beyond it */
        assert_true(m >= before + 1);
        for (size_t i = 0; i + 1 < m; i++)
            assert_event_equal(&mix_events[i], &mix_got[i]);
        const struct trace_event *loss = &mix_got[m - 1];
        assert_int_equal(loss->type, TRACE_EV_LOSS);
        assert_int_equal(loss->u.loss.reason, TRACE_LOSS_SALVAGE);
        size_t recovered = m - 1 - before;
        unsigned k = (unsigned)strtoul(msg + strlen(want), NULL, 10);
        assert_int_equal(k, recovered);
        if (cut - last >= 56) /* chunk header intact: the loss is counted */
            assert_int_equal(loss->u.loss.count, per_frame - recovered);
    }
}

static void test_flipped_bytes(void **state)
{
    (void)state;
    size_t n, per_frame = 300;
    const char *p = test_tmpdir_path("flip.trace");
    (void)write_three_frames(p, &n, per_frame);
    /* the second frame spans [offs1, offs2) */
    uint64_t offs[4];
    write_trace(p, mix_events, n, NULL, offs, per_frame);
    uint64_t start = offs[1], end = offs[2];
    FILE *f = fopen(p, "rb");
    static uint8_t data[1 << 20];
    size_t size = fread(data, 1, sizeof data, f);
    fclose(f);
    const char *t = test_tmpdir_path("flipped.trace");
    char want[600], msg[600];
    snprintf(want, sizeof want, "%s: frame at offset %llu: ", t, (unsigned long long)start);
    size_t checksum_hits = 0;
    for (uint64_t at = start; at < end; at++) {
        data[at] ^= 0x20;
        f = fopen(t, "wb");
        fwrite(data, 1, size, f);
        fclose(f);
        data[at] ^= 0x20;
        size_t m;
        int rc = read_all(t, 0, mix_got, 40100, &m, msg, sizeof msg);
        if (rc == 0) {
            /* a flip zstd tolerates (e.g. an unused window bit) must not
             * change a single decoded event */
            assert_int_equal(m, n);
            for (size_t i = 0; i < n; i++)
                assert_event_equal(&mix_events[i], &mix_got[i]);
            continue;
        }
        assert_int_equal(rc, -1);
        assert_int_equal(m, per_frame); /* the first frame was delivered */
        if (strncmp(msg, want, strlen(want)) != 0 && !strstr(msg, "truncated frame"))
            fail_msg("flip at %llu: '%s'", (unsigned long long)at, msg);
        if (at >= end - 4)
            assert_non_null(strstr(msg, "checksum mismatch"));
        checksum_hits += strstr(msg, "checksum mismatch") != NULL;
        /* salvage: the first frame, then the SALVAGE loss of the second */
        assert_int_equal(read_all(t, 1, mix_got, 40100, &m, msg, sizeof msg), 0);
        assert_int_equal(m, per_frame + 1);
        assert_int_equal(mix_got[per_frame].type, TRACE_EV_LOSS);
        assert_int_equal(mix_got[per_frame].u.loss.reason, TRACE_LOSS_SALVAGE);
    }
    assert_true(checksum_hits >= 4);
}

static void test_wrong_magic_and_unknown_major(void **state)
{
    (void)state;
    struct trace_event evs[64];
    size_t n = make_extreme_events(evs);
    const char *p = test_tmpdir_path("magic.trace");
    write_trace(p, evs, n, NULL, NULL, 0);
    char msg[600], want[600];
    FILE *f = fopen(p, "r+b");
    fseek(f, 16, SEEK_SET);
    fputc(3, f); /* major = 3 */
    fclose(f);
    assert_null(trace_reader_open(p, NULL, msg, sizeof msg));
    snprintf(want, sizeof want, "%s: unknown format major version 3 (this preplay reads 1 to 2)",
             p);
    assert_string_equal(msg, want);

    f = fopen(p, "r+b");
    fseek(f, 16, SEEK_SET);
    fputc(1, f);
    fseek(f, 9, SEEK_SET);
    fputc('X', f); /* "PXEPLAYT" */
    fclose(f);
    assert_null(trace_reader_open(p, NULL, msg, sizeof msg));
    snprintf(want, sizeof want, "%s: not a preplay trace (bad magic)", p);
    assert_string_equal(msg, want);

    f = fopen(p, "wb");
    fputs("hello, world: not a trace at all", f);
    fclose(f);
    assert_null(trace_reader_open(p, NULL, msg, sizeof msg));
    assert_string_equal(msg, want);
    f = fopen(p, "wb");
    fclose(f);
    assert_null(trace_reader_open(p, NULL, msg, sizeof msg));
    snprintf(want, sizeof want, "%s: not a preplay trace (empty file)", p);
    assert_string_equal(msg, want);
}

/* Appends a chunk (header frame + zstd frame of raw) to f. */
static void append_chunk(FILE *f, const uint8_t *raw, size_t len, uint64_t seq, uint32_t nrec)
{
    size_t zcap = ZSTD_compressBound(len);
    uint8_t *z = malloc(zcap);
    ZSTD_CCtx *c = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
    size_t zl = ZSTD_compress2(c, z, zcap, raw, len);
    assert_false(ZSTD_isError(zl));
    struct trace_chunk_header ch = {seq, (uint32_t)zl, (uint32_t)len, nrec, nrec, 0, 0};
    uint8_t hdr[8 + TRACE_CHUNK_PAYLOAD];
    trace_put_le32(hdr, TRACE_CHUNK_FRAME_MAGIC);
    trace_put_le32(hdr + 4, TRACE_CHUNK_PAYLOAD);
    trace_chunk_header_pack(hdr + 8, &ch);
    fwrite(hdr, 1, sizeof hdr, f);
    fwrite(z, 1, zl, f);
    ZSTD_freeCCtx(c);
    free(z);
}

static void test_higher_minor_skips_unknown(void **state)
{
    (void)state;
    const char *p = test_tmpdir_path("minor.trace");
    write_trace(p, NULL, 0, NULL, NULL, 0);
    /* Rewrite the header as minor 7 with an extra unknown field (tag 999). */
    FILE *f = fopen(p, "rb");
    uint8_t hdr[8192];
    size_t hl = fread(hdr, 1, sizeof hdr, f);
    fclose(f);
    uint32_t size = trace_get_le32(hdr + 4);
    assert_int_equal(hl, 8 + size);
    uint8_t extra[6 + 5] = {0};
    trace_put_le16(extra, 999);
    trace_put_le32(extra + 2, 5);
    memcpy(extra + 6, "hello", 5);
    memmove(hdr + 8 + size - 4 + sizeof extra, hdr + 8 + size - 4, 4);
    memcpy(hdr + 8 + size - 4, extra, sizeof extra);
    size += sizeof extra;
    trace_put_le32(hdr + 4, size);
    trace_put_le16(hdr + 18, 7);
    trace_put_le32(hdr + 8 + size - 4, trace_crc32(hdr + 8, size - 4));

    /* A frame: known event, unknown record type 200, a known event carrying
     * an extra field (mask bit 40) a later minor added, then a known event. */
    struct trace_codec codec;
    trace_codec_init(&codec);
    uint8_t raw[1024];
    size_t len = 0;
    struct trace_event e[3];
    memset(e, 0, sizeof e);
    for (int i = 0; i < 3; i++) {
        e[i].type = TRACE_EV_CPU;
        e[i].tid = 77;
        e[i].ts_ns = 1000 + 100 * (uint64_t)i;
        e[i].dur_ns = 50;
    }
    len += trace_codec_encode(&codec, &e[0], raw + len);
    raw[len++] = 200;
    raw[len++] = 3;
    raw[len++] = 1;
    raw[len++] = 2;
    raw[len++] = 3;
    /* hand-encode e[1] with fields tid, ts, dur + unknown bit 40 */
    uint8_t body[64];
    size_t b = 0;
    body[b++] = 0; /* op */
    b += trace_put_varint(body + b, 0x7 | (1ULL << 40));
    b += trace_put_varint(body + b, trace_zigzag(77 - 77));
    b += trace_put_varint(body + b, trace_zigzag(1100 - 1050));
    b += trace_put_varint(body + b, trace_zigzag(50));
    b += trace_put_varint(body + b, 123456); /* the unknown field */
    raw[len++] = TRACE_EV_CPU;
    len += trace_put_varint(raw + len, b);
    memcpy(raw + len, body, b);
    len += b;
    /* the codec's state must follow e[1] before encoding e[2] */
    struct trace_codec shadow;
    trace_codec_init(&shadow);
    uint8_t scratch[512];
    trace_codec_encode(&shadow, &e[0], scratch);
    trace_codec_encode(&shadow, &e[1], scratch);
    len += trace_codec_encode(&shadow, &e[2], raw + len);
    trace_codec_free(&codec);
    trace_codec_free(&shadow);

    f = fopen(p, "wb");
    fwrite(hdr, 1, 8 + size, f);
    /* an unknown skippable frame a later minor might add between chunks */
    uint8_t skip[8 + 3];
    trace_put_le32(skip, 0x184D2A5Au);
    trace_put_le32(skip + 4, 3);
    memcpy(skip + 8, "abc", 3);
    fwrite(skip, 1, sizeof skip, f);
    append_chunk(f, raw, len, 0, 4);
    fclose(f);

    char msg[600];
    struct trace_reader *r = trace_reader_open(p, NULL, msg, sizeof msg);
    if (!r)
        fail_msg("%s", msg);
    assert_int_equal(trace_reader_header(r)->version_minor, 7);
    assert_string_equal(trace_reader_header(r)->host, "testhost");
    struct trace_event ev;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(trace_reader_next(r, &ev), 1);
        assert_event_equal(&e[i], &ev);
    }
    assert_int_equal(trace_reader_next(r, &ev), 0);
    assert_int_equal(trace_reader_skipped(r), 1);
    assert_null(trace_reader_warning(r));
    trace_reader_close(r);
}

static void test_ring_marks_dropped_span(void **state)
{
    (void)state;
    /* the mix with a path string and connections the writer must repeat */
    size_t n = make_mix(39999, 23);
    /* a late reopen of the log: its path string was in a dropped chunk, so
     * the writer must repeat it before this event */
    mix_events[n] = mix_events[1];
    mix_events[n].ts_ns = mix_events[n - 1].ts_ns + 10;
    mix_events[n].tid = mix_events[n - 1].tid;
    n++;
    const char *p = test_tmpdir_path("ring.trace");
    struct trace_writer_options o = {.frame_bytes = 2048, .max_bytes = 48 * 1024};
    write_trace(p, mix_events, n, &o, NULL, 1000);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_true((uint64_t)st.st_size <= o.max_bytes);

    char msg[600];
    struct trace_reader *r = trace_reader_open(p, NULL, msg, sizeof msg);
    if (!r)
        fail_msg("%s", msg);
    struct trace_event ev;
    assert_int_equal(trace_reader_next(r, &ev), 1);
    assert_int_equal(ev.type, TRACE_EV_CONTROL);
    assert_int_equal(ev.op, TRACE_CTL_RING_WRAP);
    uint64_t from = (uint64_t)ev.u.control.arg0, to = (uint64_t)ev.u.control.arg1;
    assert_true(from == mix_events[0].ts_ns);
    assert_int_equal(trace_reader_next(r, &ev), 1);
    assert_int_equal(ev.type, TRACE_EV_LOSS);
    assert_int_equal(ev.u.loss.reason, TRACE_LOSS_RING_OVERWRITE);
    uint64_t lost = ev.u.loss.count;
    assert_true(lost > 0);
    /* What remains is exactly the newest events, with the path string and
     * connection identities repeated so every reference resolves. */
    /* the loss counts events, not string-table entries */
    size_t first = 0;
    for (uint64_t counted = 0; counted < lost; first++)
        counted += mix_events[first].type != TRACE_EV_STRING;
    size_t k = first, idents = 0;
    int conn_known[16] = {0};
    int rc;
    while ((rc = trace_reader_next(r, &ev)) == 1) {
        if (ev.type == TRACE_EV_STRING)
            continue;
        if (ev.type == TRACE_EV_CONN && ev.op == TRACE_CONN_IDENT) {
            assert_true(ev.u.conn.conn_id >= 1 && ev.u.conn.conn_id <= 4);
            assert_int_equal(ev.u.conn.local_port, 8080);
            conn_known[ev.u.conn.conn_id] = 1;
            idents++;
            continue;
        }
        assert_true(k < n);
        assert_event_equal(&mix_events[k], &ev);
        if (ev.type == TRACE_EV_NET)
            assert_true(conn_known[ev.u.net.conn_id]);
        k++;
    }
    assert_int_equal(rc, 0);
    assert_int_equal(k, n); /* nothing after the dropped span is missing */
    assert_true(idents > 0);
    /* the span ends where the surviving events begin */
    assert_true(first > 0 && from <= to);
    for (size_t i = 0; i < first; i++)
        assert_true(mix_events[i].ts_ns + mix_events[i].dur_ns <= to);
    uint32_t len;
    assert_string_equal(trace_reader_string(r, 1, &len), "/var/log/server.log");
    trace_reader_close(r);
}

static void test_ring_too_small_and_bad_event(void **state)
{
    (void)state;
    struct trace_header h;
    trace_test_header(&h, 1, "x");
    char err[600];
    struct trace_writer_options o = {.frame_bytes = 65536, .max_bytes = 4096};
    assert_null(trace_writer_open(test_tmpdir_path("small.trace"), &h, &o, err, sizeof err));
    assert_non_null(strstr(err, "max_bytes 4096 is too small"));
    struct trace_writer *w =
        trace_writer_open(test_tmpdir_path("bad.trace"), &h, NULL, err, sizeof err);
    assert_non_null(w);
    struct trace_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = 99;
    assert_int_equal(trace_writer_append(w, &ev), -1);
    assert_non_null(strstr(trace_writer_error(w), "event type 99 is not a trace event type"));
    assert_int_equal(trace_writer_close(w, err, sizeof err), -1);
    assert_null(trace_writer_open("/nonexistent-dir/x.trace", &h, NULL, err, sizeof err));
    assert_string_equal(err, "/nonexistent-dir/x.trace: cannot create: No such file or directory");
}

/* Sums the chunk headers of a plain (not ring) trace file: records,
 * events and raw bytes (FORMAT.md §4.1) into t[0..2]. */
static void chunk_totals(const char *p, uint64_t t[3])
{
    FILE *f = fopen(p, "rb");
    assert_non_null(f);
    uint8_t b[8 + TRACE_CHUNK_PAYLOAD];
    assert_int_equal(fread(b, 1, 8, f), 8);
    long pos = 8 + (long)trace_get_le32(b + 4);
    t[0] = t[1] = t[2] = 0;
    while (fseek(f, pos, SEEK_SET) == 0 && fread(b, 1, sizeof b, f) == sizeof b) {
        assert_int_equal(trace_get_le32(b), TRACE_CHUNK_FRAME_MAGIC);
        struct trace_chunk_header ch;
        assert_int_equal(trace_chunk_header_unpack(b + 8, &ch), 0);
        t[0] += ch.nrecords;
        t[1] += ch.nevents;
        t[2] += ch.raw_size;
        pos += (long)sizeof b + (long)ch.compressed_size;
    }
    fclose(f);
}

/* A stream as the collector writes it: before most events a CPU slice of
 * the same thread that fills the gap since the thread's previous event,
 * mixed with the slices that cannot share their event's record (a flag, a
 * start after the previous end, an end before the event) and with the
 * mix's own jittered slices. pair[i] says e[i] is a slice to append with
 * e[i + 1] (trace_writer_append_after_cpu). */
static size_t make_after_cpu_stream(struct trace_event *e, int *pair, size_t cap, uint64_t seed)
{
    size_t nmix = make_mix(cap / 2, seed), n = 0;
    uint64_t end[4] = {0}, r = seed;
    for (size_t i = 0; i < nmix && n + 2 <= cap; i++) {
        const struct trace_event *ev = &mix_events[i];
        unsigned t = ev->tid >= 1000 && ev->tid < 1004 ? ev->tid - 1000 : 4;
        r = r * 6364136223846793005ULL + 1442695040888963407ULL;
        if (t < 4 && ev->type != TRACE_EV_CPU && ev->type != TRACE_EV_STRING && end[t] &&
            ev->ts_ns > end[t] + 2 && (r >> 33) % 8 != 0) {
            struct trace_event *c = &e[n];
            memset(c, 0, sizeof *c);
            c->type = TRACE_EV_CPU;
            c->tid = ev->tid;
            c->ts_ns = end[t];
            c->dur_ns = ev->ts_ns - end[t];
            switch ((r >> 40) % 16) {
            case 0:
                c->flags = TRACE_F_CPU_ESTIMATED;
                break;
            case 1: /* starts after the previous end: a switch in between */
                c->ts_ns++, c->dur_ns--;
                break;
            case 2: /* ends before its event starts */
                c->dur_ns--;
                break;
            default:
                break;
            }
            pair[n++] = 1;
        }
        e[n] = *ev;
        pair[n++] = 0;
        if (t < 4)
            end[t] = ev->ts_ns + ev->dur_ns;
    }
    return n;
}

static void write_after_cpu_stream(const char *p, const struct trace_event *e, const int *pair,
                                   size_t n, const struct trace_writer_options *o, int as_pairs)
{
    struct trace_writer *w = test_writer_open(p, o);
    for (size_t i = 0; i < n; i++) {
        int rc = as_pairs && pair[i] && i + 1 < n
                     ? trace_writer_append_after_cpu(w, &e[i], &e[i + 1])
                     : trace_writer_append(w, &e[i]);
        if (rc != 0)
            fail_msg("%s", trace_writer_error(w));
        i += as_pairs && pair[i] && i + 1 < n;
    }
    test_writer_close(w);
}

/* 2.0: a CPU slice rides in the record of the event after it when it fills
 * the gap exactly (FORMAT.md §6.4). Read back, the trace holds exactly the
 * events appended, in order, whether or not each pair shared a record: in
 * small frames (a thread's first record of a frame cannot carry one) and in
 * ring mode (identities repeated between the two); and the shared records
 * make the file smaller. */
static void test_after_cpu_roundtrip(void **state)
{
    (void)state;
    static struct trace_event e[40000];
    static int pair[40000];
    size_t n = make_after_cpu_stream(e, pair, 40000, 31), got;
    size_t paired = 0;
    for (size_t i = 0; i < n; i++)
        paired += pair[i];
    assert_true(paired > n / 4);
    const struct trace_writer_options opts[3] = {
        {0}, {.frame_bytes = 2048}, {.frame_bytes = 4096, .max_bytes = 64u << 20}};
    for (int k = 0; k < 3; k++) {
        const char *pp = test_tmpdir_path("after_cpu.trace");
        const char *ps = test_tmpdir_path("separate.trace");
        write_after_cpu_stream(pp, e, pair, n, &opts[k], 1);
        write_after_cpu_stream(ps, e, pair, n, &opts[k], 0);
        char msg[600];
        assert_int_equal(read_all(pp, 0, mix_got, 40100, &got, msg, sizeof msg), 0);
        size_t j = 0;
        for (size_t i = 0; i < got; i++) {
            if (mix_got[i].type == TRACE_EV_CONN && mix_got[i].op == TRACE_CONN_IDENT &&
                opts[k].max_bytes)
                continue; /* repeated at a chunk start (§5.3) */
            assert_true(j < n);
            assert_event_equal(&e[j], &mix_got[i]);
            j++;
        }
        assert_int_equal(j, n);
        if (opts[k].max_bytes)
            continue;
        /* the same events in fewer records and raw bytes (compressed, a
         * random stream like this one need not shrink; nginx's does) */
        uint64_t rp[3], rs[3];
        chunk_totals(pp, rp);
        chunk_totals(ps, rs);
        assert_int_equal(rp[1], rs[1]);
        assert_true(rp[0] < rs[0] && rp[0] + paired >= rs[0]);
        assert_true(rp[2] < rs[2]);
    }
}

/* Writes a 2.0 trace (or, with major 1, a 1.1 one) holding one chunk of the
 * records `raw`. */
static void write_raw_trace(const char *p, unsigned major, const uint8_t *raw, size_t len,
                            uint32_t nrec)
{
    write_trace(p, NULL, 0, NULL, NULL, 0);
    FILE *f = fopen(p, "rb");
    uint8_t hdr[8192];
    size_t hl = fread(hdr, 1, sizeof hdr, f);
    fclose(f);
    uint32_t size = trace_get_le32(hdr + 4);
    assert_int_equal(hl, 8 + size);
    trace_put_le16(hdr + 16, (uint16_t)major);
    if (major < 2)
        trace_put_le16(hdr + 18, 1);
    trace_put_le32(hdr + 8 + size - 4, trace_crc32(hdr + 8, size - 4));
    f = fopen(p, "wb");
    fwrite(hdr, 1, hl, f);
    append_chunk(f, raw, len, 0, nrec);
    fclose(f);
}

/* The after-CPU flag on a thread's first record in a frame has no slice to
 * start from: the record is damage, named by offset and record index. In a
 * 1.x trace the bit means nothing and the event is delivered as is; a
 * writer refuses an event that carries it. */
static void test_after_cpu_damage_and_1x(void **state)
{
    (void)state;
    struct trace_event ev[2];
    memset(ev, 0, sizeof ev);
    for (int i = 0; i < 2; i++) {
        ev[i].type = TRACE_EV_LOCK;
        ev[i].op = TRACE_LOCK_ACQUIRE;
        ev[i].tid = 5;
        ev[i].ts_ns = 1000 + 500 * (uint64_t)i;
        ev[i].dur_ns = 40;
        ev[i].u.lock.kind = TRACE_LOCK_MUTEX;
        ev[i].u.lock.lock_id = 0x1234;
    }
    struct trace_codec codec;
    trace_codec_init(&codec);
    uint8_t raw[256];
    size_t len = trace_codec_encode(&codec, &ev[0], raw);
    len += trace_codec_encode_flagged(&codec, &ev[1], TRACE_F_AFTER_CPU, raw + len);
    trace_codec_free(&codec);

    /* the second record carries the slice [1040, 1500) */
    const char *p = test_tmpdir_path("after_cpu_ok.trace");
    write_raw_trace(p, 2, raw, len, 2);
    struct trace_event got[8];
    size_t n;
    char msg[600];
    assert_int_equal(read_all(p, 0, got, 8, &n, msg, sizeof msg), 0);
    assert_int_equal(n, 3);
    assert_event_equal(&ev[0], &got[0]);
    assert_int_equal(got[1].type, TRACE_EV_CPU);
    assert_int_equal(got[1].tid, 5);
    assert_int_equal(got[1].ts_ns, 1040);
    assert_int_equal(got[1].dur_ns, 460);
    assert_int_equal(got[1].flags, 0);
    assert_event_equal(&ev[1], &got[2]);

    /* 1.x: the same bytes are two events, the bit kept as a plain flag */
    write_raw_trace(p, 1, raw, len, 2);
    assert_int_equal(read_all(p, 0, got, 8, &n, msg, sizeof msg), 0);
    assert_int_equal(n, 2);
    assert_int_equal(got[1].type, TRACE_EV_LOCK);
    assert_int_equal(got[1].flags, TRACE_F_AFTER_CPU);

    /* the flag on the thread's first record of the frame */
    trace_codec_init(&codec);
    len = trace_codec_encode_flagged(&codec, &ev[1], TRACE_F_AFTER_CPU, raw);
    trace_codec_free(&codec);
    p = test_tmpdir_path("after_cpu_bad.trace");
    write_raw_trace(p, 2, raw, len, 1);
    assert_int_equal(read_all(p, 0, got, 8, &n, msg, sizeof msg), -1);
    assert_int_equal(n, 0);
    assert_non_null(strstr(msg, "record 0: after-CPU flag on its thread's first record"));
    /* salvage keeps what came before and counts the rest as lost */
    assert_int_equal(read_all(p, 1, got, 8, &n, msg, sizeof msg), 0);
    assert_int_equal(n, 1);
    assert_int_equal(got[0].type, TRACE_EV_LOSS);
    assert_int_equal(got[0].u.loss.count, 1);

    /* the flag on a record that starts before its thread's previous one
     * ended, and on a CPU record: record 1 is damage, record 0 delivered */
    struct trace_event bad[2] = {ev[1], ev[1]};
    bad[0].ts_ns = 1020; /* ev[0] ends at 1040 */
    bad[1].type = TRACE_EV_CPU;
    bad[1].op = 0;
    memset(&bad[1].u, 0, sizeof bad[1].u);
    const char *why[2] = {"record 1: after-CPU flag on a record that starts before its thread's "
                          "previous one ended",
                          "record 1: a CPU, STRING or STACK record carries the after-CPU flag"};
    for (int k = 0; k < 2; k++) {
        trace_codec_init(&codec);
        len = trace_codec_encode(&codec, &ev[0], raw);
        len += trace_codec_encode_flagged(&codec, &bad[k], TRACE_F_AFTER_CPU, raw + len);
        trace_codec_free(&codec);
        write_raw_trace(p, 2, raw, len, 2);
        assert_int_equal(read_all(p, 0, got, 8, &n, msg, sizeof msg), -1);
        assert_int_equal(n, 1);
        assert_event_equal(&ev[0], &got[0]);
        if (!strstr(msg, why[k]))
            fail_msg("case %d: %s", k, msg);
    }

    struct trace_header h;
    trace_test_header(&h, 1, "x");
    struct trace_writer *w =
        trace_writer_open(test_tmpdir_path("flag.trace"), &h, NULL, msg, sizeof msg);
    assert_non_null(w);
    ev[0].flags = TRACE_F_AFTER_CPU;
    assert_int_equal(trace_writer_append(w, &ev[0]), -1);
    assert_non_null(strstr(trace_writer_error(w), "carries flag 0x20"));
    assert_int_equal(trace_writer_close(w, msg, sizeof msg), -1);
}

/* The cut flag and its lengths go together, on DB records only (2.2). */
static void test_cut_flag_damage(void **state)
{
    (void)state;
    static const struct {
        uint8_t type;
        uint16_t flags;
        uint64_t query_len;
        const char *why;
    } cases[] = {
        {TRACE_EV_FILE, TRACE_F_CUT, 0, "a record that is not DB carries the cut flag"},
        {TRACE_EV_DB, TRACE_F_CUT, 0, "carries the cut flag without query_len or params_len"},
        {TRACE_EV_DB, 0, 5, "has query_len or params_len without the cut flag"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct trace_event ev[2];
        memset(ev, 0, sizeof ev);
        ev[0].type = TRACE_EV_THREAD_START;
        ev[0].tid = 1;
        ev[1].type = cases[i].type;
        ev[1].op = 1;
        ev[1].tid = 1;
        ev[1].flags = cases[i].flags;
        if (cases[i].type == TRACE_EV_FILE)
            ev[1].u.file.fd2 = -1;
        ev[1].u.db.query_len = cases[i].type == TRACE_EV_DB ? cases[i].query_len : 0;
        const char *p = test_tmpdir_path("cut.trace");
        write_trace(p, ev, 2, NULL, NULL, 0);
        struct trace_event got[4];
        size_t m;
        char msg[512] = "";
        assert_int_equal(read_all(p, 0, got, 4, &m, msg, sizeof msg), -1);
        if (!strstr(msg, cases[i].why) || !strstr(msg, "record 1"))
            fail_msg("case %zu: %s", i, msg);
    }
}

/* A STRING longer than TRACE_MAX_STRING_BYTES or a STACK deeper than
 * TRACE_MAX_STACK_FRAMES (written past the writer, which refuses both) is
 * damage naming the field and the limit; at the limit both read. */
static void test_string_and_stack_limits(void **state)
{
    (void)state;
    const char *p = test_tmpdir_path("limits.trace");
    struct {
        uint8_t type;
        uint32_t n;
        const char *why; /* NULL: reads */
    } cases[] = {
        {TRACE_EV_STRING, TRACE_MAX_STRING_BYTES, NULL},
        {TRACE_EV_STRING, TRACE_MAX_STRING_BYTES + 1,
         "STRING len 16777217 exceeds the limit 16777216"},
        {TRACE_EV_STACK, TRACE_MAX_STACK_FRAMES, NULL},
        {TRACE_EV_STACK, TRACE_MAX_STACK_FRAMES + 1, "STACK nframes 4097 exceeds the limit 4096"},
    };
    uint8_t *data = calloc(TRACE_MAX_STRING_BYTES + 1, 8);
    uint8_t *raw = malloc((size_t)TRACE_MAX_STRING_BYTES * 2);
    assert_non_null(data);
    assert_non_null(raw);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        write_trace(p, NULL, 0, NULL, NULL, 0); /* the header */
        struct trace_event ev;
        memset(&ev, 0, sizeof ev);
        ev.type = cases[i].type;
        ev.tid = 1;
        if (ev.type == TRACE_EV_STRING) {
            ev.u.string.id = 1;
            ev.u.string.len = cases[i].n;
        } else {
            ev.u.stack.id = 1;
            ev.u.stack.nframes = cases[i].n;
        }
        ev.data = data;
        struct trace_codec codec;
        trace_codec_init(&codec);
        size_t len = trace_codec_encode(&codec, &ev, raw);
        trace_codec_free(&codec);
        FILE *f = fopen(p, "ab");
        assert_non_null(f);
        append_chunk(f, raw, len, 0, 1);
        fclose(f);
        char msg[600] = "";
        struct trace_reader *r = trace_reader_open(p, NULL, msg, sizeof msg);
        if (!r)
            fail_msg("%s", msg);
        struct trace_event got;
        int rc = trace_reader_next(r, &got);
        if (!cases[i].why) {
            if (rc != 1)
                fail_msg("case %zu: %s", i, trace_reader_error(r));
            assert_int_equal(got.type, cases[i].type);
        } else {
            assert_int_equal(rc, -1);
            if (!strstr(trace_reader_error(r), cases[i].why))
                fail_msg("case %zu: %s", i, trace_reader_error(r));
        }
        trace_reader_close(r);
    }
    free(data);
    free(raw);
}

/* The string table and the frame buffers stay within the reader's memory
 * budget (issue 24 item 1): 8 distinct STRINGs of 1 MiB (669 bytes on
 * disk, one frame of 8.4 MB) need 8.4 MB of table. Within 4 MB the frame
 * is refused; within 15 MB the seventh string (frame 8.4 + table 7.3 MB);
 * each naming the file, the record or frame and the budget (salvage keeps
 * what came before); within 64 MB and with the machine's budget (0) all
 * read. */
static void test_string_table_budget(void **state)
{
    (void)state;
    const char *p = test_tmpdir_path("big_strings.trace");
    char err[600] = "";
    if (trace_test_write_big_strings(p, 8, 1u << 20, err, sizeof err) != 0)
        fail_msg("%s", err);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_true(st.st_size < 4096); /* a few hundred bytes declare 8 MiB */
    const struct {
        uint64_t budget;
        uint32_t strings;
        const char *why; /* NULL: reads */
    } cases[] = {
        {4000000, 0,
         ": frame at offset 250: a frame of 8388699 bytes needs more memory than the 4 MB "
         "available"},
        {15000000, 6,
         ": frame at offset 250: record 6: STRING id 7: the string table (7 strings, 7340039 "
         "bytes) needs more memory than the 15 MB available"},
        {64000000, 8, NULL},
        {0, 8, NULL},
    };
    for (int salvage = 0; salvage < 2; salvage++)
        for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
            struct trace_reader_options o = {.salvage = salvage, .max_bytes = cases[i].budget};
            struct trace_reader *r = trace_reader_open(p, &o, err, sizeof err);
            if (!r)
                fail_msg("%s", err);
            struct trace_event ev;
            uint32_t strings = 0, len = 0;
            int rc;
            while ((rc = trace_reader_next(r, &ev)) == 1)
                strings += ev.type == TRACE_EV_STRING;
            const char *why = salvage ? trace_reader_warning(r) : trace_reader_error(r);
            if (cases[i].why) {
                assert_int_equal(rc, salvage ? 0 : -1);
                assert_non_null(why);
                char want[600];
                snprintf(want, sizeof want, "%s%s", p, cases[i].why);
                assert_string_equal(why, want);
            } else if (rc != 0 || why) {
                fail_msg("case %zu: %s", i, why ? why : "");
            }
            assert_int_equal(strings, cases[i].strings);
            if (strings) {
                assert_non_null(trace_reader_string(r, strings, &len));
                assert_int_equal(len, 1u << 20);
            }
            assert_null(trace_reader_string(r, strings + 1, NULL));
            trace_reader_close(r);
        }
}

/* A COUNTERS window (2.5) of n entries in payload, at ts 1 s, 1 s long. */
static struct trace_event counters_event(const uint8_t *payload, uint32_t bytes, uint32_t n)
{
    struct trace_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = TRACE_EV_COUNTERS;
    ev.op = TRACE_COUNTERS_WINDOW;
    ev.ts_ns = 1000000000ULL;
    ev.dur_ns = 1000000000ULL;
    ev.u.counters = (struct trace_counters_event){
        .nvalues = n, .bytes = bytes, .window_ns = 1000000000ULL, .tick_ns = 100000000ULL};
    ev.data = payload;
    return ev;
}

/* Writes ev past the writer's checks (raw codec, then cut drop bytes off
 * the end of the record) and expects exactly "PATH: frame at offset N:
 * record 0: why". */
static void expect_counters_damage(const struct trace_event *ev, size_t drop, const char *why)
{
    const char *p = test_tmpdir_path("counters_bad.trace");
    write_trace(p, NULL, 0, NULL, NULL, 0); /* the header */
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    uint8_t *raw = malloc(TRACE_RECORD_FIXED_MAX + ev->u.counters.bytes);
    struct trace_codec codec;
    trace_codec_init(&codec);
    size_t len = trace_codec_encode(&codec, ev, raw);
    trace_codec_free(&codec);
    if (drop) { /* a record shorter than its payload: its length is one varint byte */
        assert_true(raw[1] < 0x80 && raw[1] >= drop);
        raw[1] = (uint8_t)(raw[1] - drop);
        len -= drop;
    }
    FILE *f = fopen(p, "ab");
    append_chunk(f, raw, len, 0, 1);
    fclose(f);
    free(raw);
    char msg[600], want[600];
    struct trace_event got[2];
    size_t n;
    assert_int_equal(read_all(p, 0, got, 2, &n, msg, sizeof msg), -1);
    snprintf(want, sizeof want, "%s: frame at offset %lld: record 0: %s", p, (long long)st.st_size,
             why);
    assert_string_equal(msg, want);
}

/* COUNTERS (2.5): a window reads back entry by entry and through
 * trace_counters_read; the writer refuses one that would not; every
 * damaged record is refused with its exact message, and the count it
 * carries is bounded. */
static void test_counters_records(void **state)
{
    (void)state;
    struct trace_counter in[3] = {{"cpu_user", 8, 0.5}, {"disk_read_iops", 14, NAN}, {"x", 1, 0}};
    uint8_t payload[256];
    uint32_t bytes = (uint32_t)trace_counters_encode(in, 3, payload, sizeof payload);
    assert_int_equal(bytes, 3 * 9 + 8 + 14 + 1);
    struct trace_event ev[2] = {counters_event(payload, bytes, 3), counters_event(payload, 17, 1)};
    ev[1].ts_ns = 2000000000ULL;
    ev[1].dur_ns = 600000000ULL; /* a shorter last window */
    const char *p = test_tmpdir_path("counters.trace");
    write_trace(p, ev, 2, NULL, NULL, 0);
    struct trace_event got[4];
    struct trace_counter out[3];
    size_t n;
    char msg[600];
    assert_int_equal(read_all(p, 0, got, 4, &n, msg, sizeof msg), 0);
    assert_int_equal(n, 2);
    assert_event_equal(&ev[0], &got[0]);
    struct trace_counters_file cf;
    assert_int_equal(trace_counters_read(p, &cf, msg, sizeof msg), 0);
    assert_int_equal(cf.nwindows, 2);
    assert_int_equal(cf.nnames, 3);
    assert_string_equal(cf.names[1], "disk_read_iops");
    assert_true(cf.window_s == 1.0 && cf.tick_s == 0.1);
    assert_true(cf.windows[0].values[0] == 0.5 && isnan(cf.windows[0].values[1]));
    assert_true(cf.windows[1].values[0] == 0.5 && isnan(cf.windows[1].values[1]) &&
                isnan(cf.windows[1].values[2]));
    assert_true(cf.windows[1].length_ns == 600000000ULL);
    trace_counters_file_free(&cf);
    (void)out;

    /* the encoder and the writer refuse what would not read */
    struct trace_counter neg = {"cpu_user", 8, -1};
    assert_int_equal(trace_counters_encode(&neg, 1, payload, sizeof payload), 0);
    struct trace_counter inf = {"cpu_user", 8, INFINITY};
    assert_int_equal(trace_counters_encode(&inf, 1, payload, sizeof payload), 0);
    struct trace_counter empty = {"", 0, 1};
    assert_int_equal(trace_counters_encode(&empty, 1, payload, sizeof payload), 0);
    bytes = (uint32_t)trace_counters_encode(in, 3, payload, sizeof payload);
    struct trace_event bad = counters_event(payload, bytes, 2); /* 3 entries in the bytes */
    struct trace_writer *w = test_writer_open(test_tmpdir_path("counters_w.trace"), NULL);
    assert_int_equal(trace_writer_append(w, &bad), -1);
    assert_non_null(strstr(trace_writer_error(w), "2 values in 50 bytes that do not decode"));
    trace_writer_close(w, NULL, 0);
    /* ... also behind a CPU slice (the collector's path for a ring record;
     * a scribbled one claimed 16 MiB of payload with no data) */
    struct trace_event cpu;
    memset(&cpu, 0, sizeof cpu);
    cpu.type = TRACE_EV_CPU;
    cpu.ts_ns = bad.ts_ns - 1000;
    cpu.dur_ns = 1000;
    struct trace_event scribbled = counters_event(NULL, 16777215, 1);
    w = test_writer_open(test_tmpdir_path("counters_w.trace"), NULL);
    assert_int_equal(trace_writer_append_after_cpu(w, &cpu, &scribbled), -1);
    assert_non_null(strstr(trace_writer_error(w), "1 values in 16777215 bytes that do not decode"));
    trace_writer_close(w, NULL, 0);

    /* damage */
    expect_counters_damage(&bad, 0, "COUNTERS bytes hold more than nvalues entries");
    bad = counters_event(payload, bytes, 4);
    expect_counters_damage(&bad, 0, "COUNTERS entry runs past the payload");
    bad = counters_event(payload, bytes, 3);
    expect_counters_damage(&bad, 5, "COUNTERS bytes run past the end of the record");
    bad.dur_ns = 0;
    expect_counters_damage(&bad, 0, "COUNTERS window has no length (dur_ns 0)");
    uint8_t raw[32] = {0};
    bad = counters_event(raw, 9, 1); /* a name of length 0 */
    expect_counters_damage(&bad, 0, "COUNTERS entry has an empty name");
    raw[0] = 1;
    raw[1] = '\n';
    bad = counters_event(raw, 10, 1);
    expect_counters_damage(&bad, 0, "COUNTERS name holds a control byte");
    raw[1] = 'x';
    double minus = -0.5;
    uint64_t bits;
    memcpy(&bits, &minus, sizeof bits);
    trace_put_le64(raw + 2, bits);
    expect_counters_damage(&bad, 0, "COUNTERS value is negative or infinite");
    /* the count is bounded: at the limit it reads, one more is damage */
    struct trace_counter *many = calloc(TRACE_MAX_COUNTERS + 1, sizeof *many);
    uint8_t *big = malloc((TRACE_MAX_COUNTERS + 1) * 10);
    for (size_t i = 0; i <= TRACE_MAX_COUNTERS; i++)
        many[i] = (struct trace_counter){"c", 1, 1};
    assert_int_equal(trace_counters_encode(many, TRACE_MAX_COUNTERS + 1, big, 50000), 0);
    bytes = (uint32_t)trace_counters_encode(many, TRACE_MAX_COUNTERS, big, 50000);
    memcpy(big + bytes, big, 10);
    bad = counters_event(big, bytes + 10, TRACE_MAX_COUNTERS + 1);
    expect_counters_damage(&bad, 0, "COUNTERS nvalues 4097 exceeds the limit 4096");
    free(many);
    free(big);
}

/* trace_counters_read: one window length throughout, windows in order. */
static void test_counters_file_checks(void **state)
{
    (void)state;
    struct trace_counter in = {"cpu_user", 8, 0.5};
    uint8_t payload[32];
    uint32_t bytes = (uint32_t)trace_counters_encode(&in, 1, payload, sizeof payload);
    struct trace_event ev[2] = {counters_event(payload, bytes, 1),
                                counters_event(payload, bytes, 1)};
    ev[1].ts_ns = 2000000000ULL;
    ev[1].u.counters.window_ns = 2000000000ULL;
    const char *p = test_tmpdir_path("counters_mixed.trace");
    write_trace(p, ev, 2, NULL, NULL, 0);
    struct trace_counters_file cf;
    char msg[600], want[600];
    assert_int_equal(trace_counters_read(p, &cf, msg, sizeof msg), -1);
    snprintf(want, sizeof want,
             "%s: window 1: window_ns 2000000000 differs from the first window's 1000000000", p);
    assert_string_equal(msg, want);
    ev[1].u.counters.window_ns = 1000000000ULL;
    ev[1].ts_ns = 1500000000ULL; /* inside the first */
    write_trace(p, ev, 2, NULL, NULL, 0);
    assert_int_equal(trace_counters_read(p, &cf, msg, sizeof msg), -1);
    snprintf(want, sizeof want,
             "%s: window 1 starts at 1500000000 ns, before the previous one ended", p);
    assert_string_equal(msg, want);
}

static void test_file_mode_0600(void **state)
{
    (void)state;
    const char *p = test_tmpdir_path("mode.trace");
    FILE *f = fopen(p, "w");
    fclose(f);
    assert_int_equal(chmod(p, 0644), 0);
    mode_t old = umask(0);
    write_trace(p, NULL, 0, NULL, NULL, 0);
    umask(old);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    const char *q = test_tmpdir_path("mode2.trace");
    old = umask(0);
    write_trace(q, NULL, 0, NULL, NULL, 0);
    umask(old);
    assert_int_equal(stat(q, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_every_type_and_extreme),
        cmocka_unit_test(test_header_record_options),
        cmocka_unit_test(test_multi_frame),
        cmocka_unit_test(test_truncated_tail_every_byte),
        cmocka_unit_test(test_flipped_bytes),
        cmocka_unit_test(test_wrong_magic_and_unknown_major),
        cmocka_unit_test(test_higher_minor_skips_unknown),
        cmocka_unit_test(test_ring_marks_dropped_span),
        cmocka_unit_test(test_ring_too_small_and_bad_event),
        cmocka_unit_test(test_after_cpu_roundtrip),
        cmocka_unit_test(test_after_cpu_damage_and_1x),
        cmocka_unit_test(test_cut_flag_damage),
        cmocka_unit_test(test_string_and_stack_limits),
        cmocka_unit_test(test_string_table_budget),
        cmocka_unit_test(test_counters_records),
        cmocka_unit_test(test_counters_file_checks),
        cmocka_unit_test(test_file_mode_0600),
    };
    return cmocka_run_group_tests(tests, test_tmpdir_setup, test_tmpdir_teardown);
}
