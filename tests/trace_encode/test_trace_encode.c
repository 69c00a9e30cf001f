/* test_trace_encode.c - holds trace_codec_encode's straight-line paths for
 * the hot types (CPU, FILE, NET, SOCKOPT, LOCK, LABEL) to the table-driven
 * trace_codec_encode_generic: on random event streams that mix predicted
 * and unpredicted values (extremes, negative results, fd -1, many threads
 * and descriptors, frame resets, generic types in between) both must write
 * the same bytes record by record, and the bytes must decode back to the
 * events. Never a timing test: speed is in tests/bench/tracer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "trace_codec.h"

/* xorshift64*: a fixed seed per test, so a failure repeats. */
static uint64_t rng_state;
static uint64_t rng_next(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ull;
}
static uint64_t rng_below(uint64_t n)
{
    return rng_next() % n;
}

/* A value that is often the predicted one (small set of values), sometimes
 * near it, sometimes an extreme. */
static uint64_t rng_value(uint64_t likely)
{
    switch (rng_below(8)) {
    case 0:
        return rng_next();
    case 1:
        return UINT64_MAX - rng_below(3);
    case 2:
        return likely + rng_below(300);
    case 3:
        return likely - rng_below(5);
    default:
        return likely;
    }
}

struct stream_state {
    uint64_t now[4];     /* per thread: end of its last event */
    uint64_t offset[8];  /* per fd: next offset */
    uint64_t conn_id[8]; /* per fd */
};

static void make_event(struct stream_state *s, struct trace_event *ev, int allow_generic)
{
    static const uint8_t hot[] = {TRACE_EV_CPU, TRACE_EV_CPU,     TRACE_EV_LOCK, TRACE_EV_FILE,
                                  TRACE_EV_NET, TRACE_EV_SOCKOPT, TRACE_EV_LABEL};
    static const uint8_t cold[] = {TRACE_EV_CONN, TRACE_EV_DB, TRACE_EV_THREAD_START,
                                   TRACE_EV_CONTROL, TRACE_EV_LOSS};
    memset(ev, 0, sizeof *ev);
    unsigned th = (unsigned)rng_below(rng_below(4) == 0 ? 4 : 2);
    unsigned fd = (unsigned)rng_below(rng_below(4) == 0 ? 8 : 2);
    if (allow_generic && rng_below(10) == 0)
        ev->type = cold[rng_below(sizeof cold)];
    else
        ev->type = hot[rng_below(sizeof hot)];
    ev->op = (uint8_t)(rng_below(4) == 0 ? rng_next() : 1 + rng_below(6));
    ev->tid = th == 3 ? (uint32_t)rng_next() : 1000 + th;
    ev->ts_ns = rng_value(s->now[th]);
    ev->dur_ns = rng_below(3) == 0 ? 0 : rng_value(500);
    ev->flags = (uint16_t)(rng_below(6) == 0 ? rng_next() : 0);
    ev->stack_id = (uint32_t)(rng_below(8) == 0 ? rng_next() : 0);
    s->now[th] = ev->ts_ns + ev->dur_ns;
    int64_t result = rng_below(5) == 0   ? -(int64_t)rng_below(140)
                     : rng_below(9) == 0 ? (int64_t)rng_next()
                                         : (int64_t)rng_below(70000);
    int32_t fdv = rng_below(16) == 0 ? -1 : (rng_below(16) == 0 ? INT32_MIN : (int32_t)fd + 3);
    switch (ev->type) {
    case TRACE_EV_LOCK:
        ev->u.lock.kind = (uint8_t)(1 + rng_below(rng_below(5) == 0 ? 255 : 2));
        ev->u.lock.mode = (uint8_t)(1 + rng_below(2));
        ev->u.lock.result = rng_below(8) == 0 ? -(int32_t)rng_below(200) : 0;
        ev->u.lock.lock_id = 0x7f0000001000ull + 64 * rng_below(3);
        ev->u.lock.start = rng_below(8) == 0 ? (int64_t)rng_next() : 0;
        ev->u.lock.len = rng_below(8) == 0 ? -(int64_t)rng_below(9) : 0;
        break;
    case TRACE_EV_FILE:
        ev->u.file.fd = fdv;
        ev->u.file.path_id = (uint32_t)(rng_below(4) == 0 ? rng_below(100) : 0);
        ev->u.file.dev = rng_value(0x803);
        ev->u.file.ino = rng_value(1234567 + fd);
        ev->u.file.offset = rng_below(6) == 0 ? -1 : (int64_t)rng_value(s->offset[fd]);
        ev->u.file.result = result;
        ev->u.file.size = rng_value(result >= 0 ? (uint64_t)result : 0);
        ev->u.file.file_size = rng_value(1 << 20);
        ev->u.file.open_flags = (uint32_t)(rng_below(5) == 0 ? rng_next() : 0);
        ev->u.file.fd2 = rng_below(5) == 0 ? (int32_t)rng_next() : -1;
        if (ev->u.file.offset >= 0)
            s->offset[fd] = (uint64_t)ev->u.file.offset + (result > 0 ? (uint64_t)result : 0);
        break;
    case TRACE_EV_NET:
        ev->u.net.fd = fdv;
        ev->u.net.msg_flags = (uint32_t)(rng_below(6) == 0 ? rng_next() : 0x40);
        ev->u.net.conn_id = rng_value(s->conn_id[fd]);
        ev->u.net.size = rng_value(result >= 0 ? (uint64_t)result : 0);
        ev->u.net.result = result;
        ev->u.net.nmsgs = (uint32_t)(rng_below(6) == 0 ? rng_next() : 0);
        s->conn_id[fd] = ev->u.net.conn_id;
        break;
    case TRACE_EV_SOCKOPT:
        ev->u.sockopt.fd = fdv;
        ev->u.sockopt.level = rng_below(5) == 0 ? -(int32_t)rng_below(9) : 6;
        ev->u.sockopt.name = (int32_t)rng_next();
        ev->u.sockopt.value = rng_below(3) == 0 ? -(int64_t)rng_next() : 1;
        ev->u.sockopt.conn_id = rng_value(s->conn_id[fd]);
        break;
    case TRACE_EV_LABEL:
        ev->u.label.conn_id = rng_value(s->conn_id[fd]);
        ev->u.label.label_id = (uint32_t)rng_value(7);
        break;
    case TRACE_EV_CONN:
        ev->u.conn.fd = fdv;
        ev->u.conn.proto = TRACE_PROTO_TCP;
        ev->u.conn.family = 2;
        ev->u.conn.local_port = 80;
        ev->u.conn.remote_port = (uint16_t)rng_next();
        ev->u.conn.local_addr[0] = 127;
        ev->u.conn.local_addr[3] = 1;
        ev->u.conn.conn_id = rng_below(50);
        s->conn_id[fd] = ev->u.conn.conn_id;
        break;
    case TRACE_EV_DB:
        ev->u.db.source = TRACE_DB_WIRE;
        ev->u.db.db_conn_id = rng_below(3);
        ev->u.db.rows = rng_below(100);
        break;
    case TRACE_EV_THREAD_START:
        ev->u.thread.parent_tid = (uint32_t)rng_below(3);
        break;
    case TRACE_EV_CONTROL:
        ev->u.control.arg0 = -(int64_t)rng_below(4);
        break;
    case TRACE_EV_LOSS:
        ev->u.loss.count = rng_below(1000);
        ev->u.loss.reason = TRACE_LOSS_BUFFER_FULL;
        break;
    default: /* CPU: common fields only */
        break;
    }
}

static size_t first_difference(const uint8_t *a, size_t na, const uint8_t *b, size_t nb)
{
    size_t k = 0;
    while (k < na && k < nb && a[k] == b[k])
        k++;
    return k;
}

/* Encodes n random events with both encoders (resetting every frame_len
 * records), compares every record and decodes the fast bytes back. Returns
 * the number of records whose type took a fast path. */
static size_t check_stream(uint64_t seed, size_t n, size_t frame_len, int allow_generic)
{
    rng_state = seed;
    struct stream_state s;
    memset(&s, 0, sizeof s);
    struct trace_codec fast, generic, dec;
    trace_codec_init(&fast);
    trace_codec_init(&generic);
    trace_codec_init(&dec);
    uint8_t a[TRACE_RECORD_FIXED_MAX], b[TRACE_RECORD_FIXED_MAX];
    size_t nfast = 0;
    for (size_t i = 0; i < n; i++) {
        if (i % frame_len == 0) {
            trace_codec_reset(&fast);
            trace_codec_reset(&generic);
            trace_codec_reset(&dec);
        }
        struct trace_event ev;
        make_event(&s, &ev, allow_generic);
        memset(a, 0xa5, sizeof a);
        memset(b, 0x5a, sizeof b);
        /* every third record as the writer encodes an event that carries
         * the CPU slice before it: its flags or'ed with TRACE_F_AFTER_CPU */
        uint16_t or_flags = i % 3 == 0 ? TRACE_F_AFTER_CPU : 0;
        size_t na = trace_codec_encode_flagged(&fast, &ev, or_flags, a);
        ev.flags |= or_flags;
        size_t nb = trace_codec_encode_generic(&generic, &ev, b);
        if (na != nb || memcmp(a, b, na) != 0)
            fail_msg("seed %llu record %zu (type %u op %u): fast path wrote %zu bytes, table "
                     "encoder %zu, first difference at byte %zu",
                     (unsigned long long)seed, i, ev.type, ev.op, na, nb,
                     first_difference(a, na, b, nb));
        assert_true(na > 3 && na <= TRACE_RECORD_FIXED_MAX);
        const uint8_t *p = a;
        struct trace_event back;
        const char *why = NULL;
        int rc = trace_codec_decode(&dec, &p, a + na, &back, &why);
        if (rc != TRACE_CODEC_OK)
            fail_msg("seed %llu record %zu: decode failed (%d): %s", (unsigned long long)seed, i,
                     rc, why ? why : "?");
        assert_ptr_equal(p, a + na);
        back.data = NULL;
        if (memcmp(&back, &ev, sizeof ev) != 0)
            fail_msg("seed %llu record %zu (type %u): decoded event differs from the written one",
                     (unsigned long long)seed, i, ev.type);
        if (ev.type == TRACE_EV_CPU || ev.type == TRACE_EV_LOCK || ev.type == TRACE_EV_FILE ||
            ev.type == TRACE_EV_NET || ev.type == TRACE_EV_SOCKOPT || ev.type == TRACE_EV_LABEL)
            nfast++;
    }
    trace_codec_free(&fast);
    trace_codec_free(&generic);
    trace_codec_free(&dec);
    return nfast;
}

static void test_hot_types_match_table_encoder(void **state)
{
    (void)state;
    size_t nfast = check_stream(1, 200000, 5000, 0);
    assert_int_equal(nfast, 200000);
}

static void test_mixed_with_generic_types(void **state)
{
    (void)state;
    for (uint64_t seed = 2; seed < 12; seed++) {
        size_t nfast = check_stream(seed * 0x9e3779b97f4a7c15ull, 20000, 1 + seed * 97, 1);
        /* about 1 in 10 records takes the table path */
        assert_in_range(nfast, 16000, 19500);
    }
}

/* The predicted case encodes to the minimum: a CPU event that starts where
 * its thread's last event ended on the same thread is 4 bytes; a lock
 * release of the lock just acquired repeats only its op and timestamp. */
static void test_predicted_records_are_small(void **state)
{
    (void)state;
    struct trace_codec c;
    trace_codec_init(&c);
    uint8_t out[TRACE_RECORD_FIXED_MAX];
    struct trace_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = TRACE_EV_CPU;
    ev.tid = 7;
    ev.ts_ns = 1000;
    ev.dur_ns = 50;
    size_t n = trace_codec_encode(&c, &ev, out);
    /* tid, ts, dur differ from the frame-start predictions */
    assert_int_equal(out[0], TRACE_EV_CPU);
    assert_int_equal(out[1], n - 2);
    assert_int_equal(out[3], 0x07); /* mask: fields 0, 1, 2 */
    memset(&ev, 0, sizeof ev);
    ev.type = TRACE_EV_LOCK;
    ev.op = TRACE_LOCK_ACQUIRE;
    ev.tid = 7;
    ev.ts_ns = 1050;
    ev.u.lock.kind = TRACE_LOCK_MUTEX;
    ev.u.lock.mode = TRACE_LOCK_EXCLUSIVE;
    ev.u.lock.lock_id = 0x1000;
    n = trace_codec_encode(&c, &ev, out);
    uint8_t want_acquire[] = {TRACE_EV_LOCK, 7,   TRACE_LOCK_ACQUIRE, 0x80 | 0x60, 0x02, 2, 2,
                              0x80,          0x40};
    assert_int_equal(n, sizeof want_acquire);
    assert_memory_equal(out, want_acquire, n);
    ev.op = TRACE_LOCK_RELEASE;
    ev.ts_ns = 1060;
    n = trace_codec_encode(&c, &ev, out);
    uint8_t want_release[] = {TRACE_EV_LOCK, 3, TRACE_LOCK_RELEASE, 0x02, 20};
    assert_int_equal(n, sizeof want_release);
    assert_memory_equal(out, want_release, n);
    trace_codec_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hot_types_match_table_encoder),
        cmocka_unit_test(test_mixed_with_generic_types),
        cmocka_unit_test(test_predicted_records_are_small),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
