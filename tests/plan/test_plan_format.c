/* test_plan_format.c - unit tests of the replay-plan format (formats/PLAN.md):
 * a round trip of every op kind and field at its extremes (bounded fields at
 * their plan.h limits; tests/plan/test_plan_limits.c goes past them) through the
 * streaming writer and through plan_write, a plan of many blocks across
 * many frames, and damage of every kind with its exact message: truncation
 * at every byte of the last frame, flipped bytes, wrong magic, unknown
 * major, a higher minor whose unknown records/fields/frames are skipped,
 * dangling references (in crafted files and refused by the writer), the
 * writer's atomic output and a write error (file size limit) naming the
 * path. Every test asserts on decoded contents. */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "plan.h"
#include "plan_codec.h"
#include "plan_craft.h"
#include "test_tmpdir.h"

/* Number of entries in the test directory (to see no temp file is left). */
static int dir_entries(void)
{
    DIR *d = opendir(test_tmpdir());
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++;
    closedir(d);
    return n;
}

static void assert_op_equal(const struct plan_op *a, const struct plan_op *b)
{
    assert_int_equal(a->kind, b->kind);
    assert_int_equal(a->op, b->op);
    assert_int_equal(a->flags, b->flags);
    assert_true(a->recorded_ns == b->recorded_ns);
    switch (a->kind) {
    case PLAN_OP_CPU:
        assert_true(a->a.cpu_ns == b->a.cpu_ns);
        break;
    case PLAN_OP_FILE:
        assert_int_equal(a->a.file.file, b->a.file.file);
        assert_true(a->a.file.offset == b->a.file.offset);
        assert_true(a->a.file.size == b->a.file.size);
        break;
    case PLAN_OP_LOCK:
        assert_int_equal(a->a.lock.lock, b->a.lock.lock);
        assert_int_equal(a->a.lock.mode, b->a.lock.mode);
        break;
    case PLAN_OP_DB:
        assert_int_equal(a->a.db.conn, b->a.db.conn);
        assert_int_equal(a->a.db.sql, b->a.db.sql);
        assert_int_equal(a->a.db.params, b->a.db.params);
        assert_true(a->a.db.rows == b->a.db.rows);
        assert_int_equal(a->a.db.error, b->a.db.error);
        break;
    case PLAN_OP_CALL:
        assert_int_equal(a->a.call.callee_block, b->a.call.callee_block);
        assert_int_equal(a->a.call.first_segment, b->a.call.first_segment);
        assert_int_equal(a->a.call.nsegments, b->a.call.nsegments);
        break;
    case PLAN_OP_EXTERNAL:
        assert_int_equal(a->a.external.host, b->a.external.host);
        assert_true(a->a.external.sent == b->a.external.sent);
        assert_true(a->a.external.received == b->a.external.received);
        break;
    case PLAN_OP_RECV:
    case PLAN_OP_SEND:
        assert_true(a->a.net.bytes == b->a.net.bytes);
        break;
    case PLAN_OP_SOCKOPT:
        assert_int_equal(a->a.sockopt.level, b->a.sockopt.level);
        assert_int_equal(a->a.sockopt.name, b->a.sockopt.name);
        assert_true(a->a.sockopt.value == b->a.sockopt.value);
        break;
    default:
        fail_msg("unexpected op kind %u", a->kind);
    }
}

/* Deep equality of two plans, field by field. */
static void assert_plan_equal(const struct plan *a, const struct plan *b)
{
    assert_int_equal(a->version_major, b->version_major);
    assert_string_equal(a->recording_id, b->recording_id);
    assert_int_equal(a->ncpu_scores, b->ncpu_scores);
    for (uint32_t i = 0; i < a->ncpu_scores; i++) {
        assert_string_equal(a->cpu_scores[i].name, b->cpu_scores[i].name);
        assert_true(a->cpu_scores[i].seconds == b->cpu_scores[i].seconds);
    }
    assert_int_equal(a->nstrings, b->nstrings);
    for (uint32_t i = 0; i < a->nstrings; i++) {
        assert_int_equal(a->string_lens[i], b->string_lens[i]);
        assert_memory_equal(a->strings[i], b->strings[i], a->string_lens[i] + 1);
    }
    assert_int_equal(a->ncomponents, b->ncomponents);
    for (uint32_t i = 0; i < a->ncomponents; i++) {
        const struct plan_component *x = &a->components[i], *y = &b->components[i];
        assert_int_equal(x->name, y->name);
        assert_int_equal(x->host, y->host);
        assert_int_equal(x->workers, y->workers);
        assert_int_equal(x->db_conns, y->db_conns);
        assert_int_equal(x->listen_port, y->listen_port);
        assert_int_equal(x->prefork, y->prefork);
        assert_int_equal(x->is_frontend, y->is_frontend);
        assert_int_equal(x->event_loop, y->event_loop);
    }
    assert_int_equal(a->nfiles, b->nfiles);
    for (uint32_t i = 0; i < a->nfiles; i++) {
        assert_int_equal(a->files[i].path, b->files[i].path);
        assert_true(a->files[i].initial_size == b->files[i].initial_size);
    }
    assert_int_equal(a->nlocks, b->nlocks);
    for (uint32_t i = 0; i < a->nlocks; i++) {
        assert_int_equal(a->locks[i].kind, b->locks[i].kind);
        assert_true(a->locks[i].recorded_id == b->locks[i].recorded_id);
    }
    assert_int_equal(a->ndb_endpoints, b->ndb_endpoints);
    for (uint32_t i = 0; i < a->ndb_endpoints; i++)
        assert_int_equal(a->db_endpoints[i].address, b->db_endpoints[i].address);
    assert_int_equal(a->nblocks, b->nblocks);
    for (uint32_t i = 0; i < a->nblocks; i++) {
        const struct plan_block *x = &a->blocks[i], *y = &b->blocks[i];
        assert_int_equal(x->component, y->component);
        assert_int_equal(x->label, y->label);
        assert_int_equal(x->first_op, y->first_op);
        assert_int_equal(x->nops, y->nops);
        assert_int_equal(x->flags, y->flags);
        assert_true(x->recorded_ns == y->recorded_ns);
        assert_int_equal(x->worker, y->worker);
        assert_true(x->start_ns == y->start_ns);
        assert_true(x->tail_ns == y->tail_ns);
    }
    assert_true(a->nops == b->nops);
    for (uint64_t i = 0; i < a->nops; i++)
        assert_op_equal(&a->ops[i], &b->ops[i]);
    assert_true(a->nsegments == b->nsegments);
    for (uint64_t i = 0; i < a->nsegments; i++) {
        assert_int_equal(a->segments[i].dir, b->segments[i].dir);
        assert_int_equal(a->segments[i].flags, b->segments[i].flags);
        assert_int_equal(a->segments[i].bytes, b->segments[i].bytes);
    }
    assert_true(a->nrequests == b->nrequests);
    for (uint64_t i = 0; i < a->nrequests; i++) {
        const struct plan_request *x = &a->requests[i], *y = &b->requests[i];
        assert_true(x->arrival_ns == y->arrival_ns);
        assert_int_equal(x->block, y->block);
        assert_int_equal(x->label, y->label);
        assert_int_equal(x->session, y->session);
        assert_int_equal(x->connection, y->connection);
        assert_true(x->think_ns == y->think_ns);
    }
    assert_true(a->coverage == b->coverage);
    assert_true(a->unmatched_bytes == b->unmatched_bytes);
    assert_int_equal(a->nviolations, b->nviolations);
    assert_int_equal(a->violations_text, b->violations_text);
}

/* ---- the sample: every op kind and field at its extremes ------------------- */

static const char sql_with_nul[] = "SELECT ?\0binary";

/* Writes the sample through the streaming API, interleaving definitions
 * and blocks as the analyzer does; returns the path. */
static const char *write_sample(const char *name, size_t frame_bytes)
{
    const char *path = test_tmpdir_path(name);
    struct trace_cpu_score scores[2] = {{"zstd-compress", 0.125}, {"sha256", 1e-300}};
    char err[512] = "";
    struct plan_writer *w = plan_writer_open(path, "rec-0123456789abcdef0123456789abcdef012",
                                             scores, 2, err, sizeof err);
    assert_non_null(w);
    if (frame_bytes)
        assert_int_equal(plan_writer_set_frame_bytes(w, frame_bytes), 0);
    uint32_t s_app = plan_writer_string(w, "app", 3);
    uint32_t s_host = plan_writer_string(w, "host-a", 6);
    assert_int_equal(s_app, 1);
    assert_int_equal(s_host, 2);
    assert_int_equal(plan_writer_string(w, "app", 3), 1); /* deduplicated */
    assert_int_equal(plan_writer_string(w, "", 0), 0);
    struct plan_component app = {s_app, s_host, 0, 0, 0, 0, 0, 1};
    assert_int_equal(plan_writer_component(w, &app), 0);
    struct plan_op a_ops[4];
    memset(a_ops, 0, sizeof a_ops);
    a_ops[0] = (struct plan_op){.kind = PLAN_OP_RECV,
                                .flags = PLAN_RECV_FULL,
                                .recorded_ns = 1,
                                .a.net.bytes = PLAN_MAX_NET_BYTES};
    a_ops[1] = (struct plan_op){.kind = PLAN_OP_CPU,
                                .flags = UINT16_MAX,
                                .recorded_ns = PLAN_MAX_NS,
                                .a.cpu_ns = PLAN_MAX_NS};
    a_ops[2] = (struct plan_op){
        .kind = PLAN_OP_SOCKOPT, .op = 255, .a.sockopt = {INT32_MIN, INT32_MAX, INT64_MIN}};
    a_ops[3] = (struct plan_op){.kind = PLAN_OP_SEND, .a.net.bytes = 0};
    struct plan_block ab = {0, 0, 12345, 4, 0, 0, 0, 0, 0};
    assert_int_equal(plan_writer_block(w, &ab, a_ops, NULL, 0), 0);
    uint32_t s_fe = plan_writer_string(w, "frontend", 8);
    uint32_t s_label = plan_writer_string(w, "GET /cart", 9);
    uint32_t s_sql = plan_writer_string(w, sql_with_nul, sizeof sql_with_nul - 1);
    uint32_t s_par = plan_writer_string(w, "1, 'x'", 6);
    uint32_t s_db = plan_writer_string(w, "127.0.0.1:3306", 14);
    uint32_t s_ext = plan_writer_string(w, "[::1]:443", 9);
    uint32_t s_path = plan_writer_string(w, "/srv/data.bin", 13);
    struct plan_component fe = {s_fe, s_host, 1, 3, UINT16_MAX, 1, 1, 0};
    assert_int_equal(plan_writer_component(w, &fe), 1);
    struct plan_file f = {s_path, PLAN_MAX_FILE_BYTES};
    assert_int_equal(plan_writer_file(w, &f), 0);
    struct plan_file f0 = {0, 0};
    assert_int_equal(plan_writer_file(w, &f0), 1);
    struct plan_lock l = {255, UINT64_MAX};
    assert_int_equal(plan_writer_lock(w, &l), 0);
    struct plan_db_endpoint e = {s_db};
    assert_int_equal(plan_writer_db_endpoint(w, &e), 0);
    struct plan_op f_ops[9];
    memset(f_ops, 0, sizeof f_ops);
    f_ops[0] = (struct plan_op){.kind = PLAN_OP_FILE,
                                .op = PLAN_FILE_TRUNCATE,
                                .a.file = {0, INT64_MIN, PLAN_MAX_FILE_BYTES}};
    f_ops[1] = (struct plan_op){
        .kind = PLAN_OP_FILE, .op = PLAN_FILE_READ, .recorded_ns = 77, .a.file = {1, -1, 0}};
    f_ops[2] = (struct plan_op){
        .kind = PLAN_OP_LOCK, .op = PLAN_LOCK_ACQUIRE, .a.lock = {0, PLAN_LOCK_SHARED}};
    f_ops[3] = (struct plan_op){.kind = PLAN_OP_DB,
                                .op = PLAN_DB_EXECUTE,
                                .recorded_ns = 5000,
                                .a.db = {2, s_sql, s_par, UINT64_MAX, INT32_MIN}};
    f_ops[4] = (struct plan_op){.kind = PLAN_OP_CALL, .recorded_ns = 20000, .a.call = {0, 1, 3}};
    f_ops[5] = (struct plan_op){.kind = PLAN_OP_CALL, .a.call = {0, 0, 1}};
    f_ops[6] = (struct plan_op){
        .kind = PLAN_OP_EXTERNAL, .recorded_ns = 3, .a.external = {s_ext, PLAN_MAX_NET_BYTES, 1}};
    f_ops[7] = (struct plan_op){
        .kind = PLAN_OP_LOCK, .op = PLAN_LOCK_RELEASE, .a.lock = {0, PLAN_LOCK_EXCLUSIVE}};
    f_ops[8] = (struct plan_op){
        .kind = PLAN_OP_DB, .op = PLAN_DB_QUERY, .a.db = {0, s_sql, 0, 0, INT32_MAX}};
    struct plan_segment segs[4] = {
        {1, 0, 7}, {0, PLAN_SEG_MORE, UINT32_MAX}, {0, 0, 0}, {1, 0xff, 1}};
    struct plan_block fb = {
        1,           s_label,    999, 9, PLAN_BLOCK_VIOLATION, PLAN_MAX_NS, PLAN_MAX_WORKER_INDEX,
        PLAN_MAX_NS, PLAN_MAX_NS};
    assert_int_equal(plan_writer_block(w, &fb, f_ops, segs, 4), 1);
    struct plan_request r[3] = {{0, 1, s_label, 0, 0, 0},
                                {PLAN_MAX_NS, 1, s_label, UINT32_MAX, UINT32_MAX, PLAN_MAX_NS},
                                {5, 0, 0, 1, 2, 3}};
    for (int i = 0; i < 3; i++)
        assert_int_equal(plan_writer_request(w, &r[i]), 0);
    fe.workers = PLAN_MAX_WORKERS; /* learned late */
    assert_int_equal(plan_writer_update_component(w, 1, &fe), 0);
    assert_int_equal(plan_writer_summary(w, 0.987654321, UINT64_MAX, UINT32_MAX,
                                         "thread 7 of frontend interleaved 2 connections"),
                     0);
    assert_null(plan_writer_error(w));
    assert_int_equal(plan_writer_close(w, err, sizeof err), 0);
    return path;
}

static void check_sample(const struct plan *p)
{
    assert_int_equal(p->version_major, 1);
    assert_int_equal(p->version_minor, PLAN_FORMAT_MINOR);
    assert_int_equal(p->version_minor, 6);
    assert_string_equal(p->recording_id, "rec-0123456789abcdef0123456789abcdef012");
    assert_int_equal(p->ncpu_scores, 2);
    assert_string_equal(p->cpu_scores[0].name, "zstd-compress");
    assert_true(p->cpu_scores[0].seconds == 0.125);
    assert_true(p->cpu_scores[1].seconds == 1e-300);
    assert_int_equal(p->nstrings, 11);
    assert_string_equal(plan_string(p, 0), "");
    assert_string_equal(plan_string(p, 1), "app");
    assert_string_equal(plan_string(p, 4), "GET /cart");
    assert_int_equal(p->string_lens[5], sizeof sql_with_nul - 1);
    assert_memory_equal(p->strings[5], sql_with_nul, sizeof sql_with_nul);
    assert_string_equal(plan_string(p, 10), "thread 7 of frontend interleaved 2 connections");
    assert_null(plan_string(p, 11));
    assert_int_equal(p->ncomponents, 2);
    assert_int_equal(p->components[0].name, 1);
    assert_int_equal(p->components[0].workers, 0);
    assert_int_equal(p->components[0].event_loop, 1);
    assert_int_equal(p->components[1].workers, PLAN_MAX_WORKERS);
    assert_int_equal(p->components[1].db_conns, 3);
    assert_int_equal(p->components[1].listen_port, UINT16_MAX);
    assert_int_equal(p->components[1].prefork, 1);
    assert_int_equal(p->components[1].is_frontend, 1);
    assert_int_equal(p->components[1].event_loop, 0);
    assert_int_equal(p->nfiles, 2);
    assert_true(p->files[0].initial_size == PLAN_MAX_FILE_BYTES);
    assert_int_equal(p->files[0].path, 9);
    assert_int_equal(p->nlocks, 1);
    assert_int_equal(p->locks[0].kind, 255);
    assert_true(p->locks[0].recorded_id == UINT64_MAX);
    assert_int_equal(p->ndb_endpoints, 1);
    assert_string_equal(plan_string(p, p->db_endpoints[0].address), "127.0.0.1:3306");
    assert_int_equal(p->nblocks, 2);
    assert_int_equal(p->blocks[1].first_op, 4);
    assert_int_equal(p->blocks[1].nops, 9);
    assert_int_equal(p->blocks[1].flags, PLAN_BLOCK_VIOLATION);
    assert_true(p->blocks[1].recorded_ns == PLAN_MAX_NS);
    assert_int_equal(p->blocks[1].worker, PLAN_MAX_WORKER_INDEX); /* 1.1 fields at their limits */
    assert_true(p->blocks[1].start_ns == PLAN_MAX_NS);
    assert_true(p->blocks[1].tail_ns == PLAN_MAX_NS); /* 1.5 */
    assert_int_equal(p->blocks[0].worker, 0);
    assert_true(p->blocks[0].start_ns == 0);
    assert_true(p->blocks[0].tail_ns == 0);
    assert_int_equal(p->blocks[1].label, 4);
    assert_true(p->nops == 13);
    const struct plan_op *o = p->ops;
    assert_true(o[0].a.net.bytes == PLAN_MAX_NET_BYTES);
    assert_true(o[1].a.cpu_ns == PLAN_MAX_NS && o[1].recorded_ns == PLAN_MAX_NS);
    assert_int_equal(o[1].flags, UINT16_MAX);
    assert_int_equal(o[2].op, 255);
    assert_int_equal(o[2].a.sockopt.level, INT32_MIN);
    assert_int_equal(o[2].a.sockopt.name, INT32_MAX);
    assert_true(o[2].a.sockopt.value == INT64_MIN);
    assert_true(o[4].a.file.offset == INT64_MIN && o[4].a.file.size == PLAN_MAX_FILE_BYTES);
    assert_true(o[5].a.file.offset == -1);
    assert_int_equal(o[6].a.lock.mode, PLAN_LOCK_SHARED);
    assert_int_equal(o[7].a.db.error, INT32_MIN);
    assert_true(o[7].a.db.rows == UINT64_MAX);
    assert_int_equal(o[7].a.db.conn, 2);
    /* CALL segments renumbered into the plan's segment array */
    assert_int_equal(o[8].a.call.first_segment, 1);
    assert_int_equal(o[8].a.call.nsegments, 3);
    assert_int_equal(o[9].a.call.first_segment, 0);
    assert_true(o[10].a.external.sent == PLAN_MAX_NET_BYTES);
    assert_int_equal(o[12].a.db.error, INT32_MAX);
    assert_true(p->nsegments == 4);
    assert_int_equal(p->segments[1].bytes, UINT32_MAX);
    assert_int_equal(p->segments[1].flags, PLAN_SEG_MORE);
    assert_int_equal(p->segments[3].flags, 0xff);
    assert_true(p->nrequests == 3);
    assert_true(p->requests[1].arrival_ns == PLAN_MAX_NS);
    assert_true(p->requests[1].think_ns == PLAN_MAX_NS);
    assert_int_equal(p->requests[1].session, UINT32_MAX);
    assert_true(p->requests[2].arrival_ns == 5);
    assert_int_equal(p->requests[2].block, 0);
    assert_true(p->coverage == 0.987654321);
    assert_true(p->unmatched_bytes == UINT64_MAX);
    assert_int_equal(p->nviolations, UINT32_MAX);
    assert_int_equal(p->violations_text, 10);
    assert_true(p->skipped_records == 0);
}

static void test_round_trip_every_op(void **state)
{
    (void)state;
    char err[512] = "";
    const char *path = write_sample("sample.plan", 0);
    struct plan *p = plan_read(path, err, sizeof err);
    if (!p)
        fail_msg("%s", err);
    check_sample(p);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    /* plan_write of what was read reads back identical */
    const char *copy = test_tmpdir_path("copy.plan");
    assert_int_equal(plan_write(p, copy, err, sizeof err), 0);
    struct plan *q = plan_read(copy, err, sizeof err);
    if (!q)
        fail_msg("%s", err);
    assert_plan_equal(p, q);
    plan_free(q);
    /* tiny frames: one record per frame is still the same plan */
    const char *tiny = write_sample("tiny.plan", 64);
    q = plan_read(tiny, err, sizeof err);
    if (!q)
        fail_msg("%s", err);
    assert_plan_equal(p, q);
    plan_free(q);
    plan_free(p);
    assert_int_equal(dir_entries(), 3); /* no temporary file left behind */
}

/* Walks the frames of a plan file: count, offset of the last one. */
static int count_frames(const char *path, long *last_offset, long *size)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static uint8_t buf[1 << 22];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    size_t pos = 8 + trace_get_le32(buf + 4);
    int frames = 0;
    while (pos < n) {
        assert_int_equal(trace_get_le32(buf + pos), PLAN_CHUNK_FRAME_MAGIC);
        *last_offset = (long)pos;
        pos += 8 + PLAN_CHUNK_PAYLOAD + trace_get_le32(buf + pos + 12);
        frames++;
    }
    assert_int_equal(pos, n);
    *size = (long)n;
    return frames;
}

static void test_many_blocks_many_frames(void **state)
{
    (void)state;
    enum { NBLOCKS = 6000, NREQ = 20000 };
    const char *path = test_tmpdir_path("many.plan");
    char err[512];
    struct plan_writer *w = plan_writer_open(path, "many", NULL, 0, err, sizeof err);
    assert_non_null(w);
    assert_int_equal(plan_writer_set_frame_bytes(w, 8192), 0);
    uint32_t name = plan_writer_string(w, "tier", 4);
    struct plan_component c = {name, 0, 4, 0, 80, 0, 1, 0};
    assert_int_equal(plan_writer_component(w, &c), 0);
    for (uint32_t b = 0; b < NBLOCKS; b++) {
        char label[32];
        snprintf(label, sizeof label, "GET /p/%u", b % 50);
        struct plan_op ops[2];
        memset(ops, 0, sizeof ops);
        ops[0] = (struct plan_op){.kind = PLAN_OP_CPU, .recorded_ns = b, .a.cpu_ns = b * 3ull};
        ops[1] = (struct plan_op){.kind = PLAN_OP_CALL, .a.call = {b ? b - 1 : 0, 0, 1}};
        struct plan_segment seg = {0, 0, b};
        struct plan_block blk = {0,     plan_writer_string(w, label, strlen(label)),
                                 0,     b ? 2 : 1,
                                 0,     b * 10ull,
                                 b % 4, b * 1000003ull,
                                 0};
        assert_int_equal(plan_writer_block(w, &blk, ops, &seg, b ? 1 : 0), b);
    }
    for (uint32_t i = 0; i < NREQ; i++) {
        struct plan_request r = {i * 1000ull + (i % 7), i % NBLOCKS, 0, i % 13, i % 5, i};
        assert_int_equal(plan_writer_request(w, &r), 0);
    }
    assert_int_equal(plan_writer_close(w, err, sizeof err), 0);
    long last, size;
    int frames = count_frames(path, &last, &size);
    assert_true(frames > 20);
    struct plan *p = plan_read(path, err, sizeof err);
    if (!p)
        fail_msg("%s", err);
    assert_int_equal(p->nblocks, NBLOCKS);
    assert_int_equal(p->nstrings, 52);
    assert_true(p->nops == 2 * NBLOCKS - 1);
    assert_true(p->nsegments == NBLOCKS - 1);
    for (uint32_t b = 0; b < NBLOCKS; b++) {
        const struct plan_block *blk = &p->blocks[b];
        char label[32];
        snprintf(label, sizeof label, "GET /p/%u", b % 50);
        assert_string_equal(plan_string(p, blk->label), label);
        assert_true(blk->recorded_ns == b * 10ull);
        assert_int_equal(blk->worker, b % 4);
        assert_true(blk->start_ns == b * 1000003ull);
        assert_int_equal(blk->first_op, b ? 2 * b - 1 : 0);
        const struct plan_op *o = &p->ops[blk->first_op];
        assert_true(o[0].a.cpu_ns == b * 3ull && o[0].recorded_ns == b);
        if (b) {
            assert_int_equal(o[1].a.call.callee_block, b - 1);
            assert_int_equal(o[1].a.call.first_segment, b - 1);
            assert_int_equal(p->segments[b - 1].bytes, b);
        }
    }
    assert_true(p->nrequests == NREQ);
    for (uint32_t i = 0; i < NREQ; i++) {
        assert_true(p->requests[i].arrival_ns == i * 1000ull + (i % 7));
        assert_int_equal(p->requests[i].block, i % NBLOCKS);
        assert_int_equal(p->requests[i].session, i % 13);
        assert_true(p->requests[i].think_ns == i);
    }
    plan_free(p);
}

/* ---- damage ------------------------------------------------------------------ */

static uint8_t *slurp(const char *path, long *size)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *size = ftell(f);
    rewind(f);
    uint8_t *b = malloc((size_t)*size + 1);
    assert_int_equal(fread(b, 1, (size_t)*size, f), (size_t)*size);
    fclose(f);
    return b;
}

static void spit(const char *path, const uint8_t *b, long size)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, (size_t)size, f), (size_t)size);
    fclose(f);
}

/* plan_read must fail with exactly `want` (printf format, path prepended). */
static void expect_error(const char *path, const char *fmt, ...)
{
    char want[1024], err[1024] = "";
    int n = snprintf(want, sizeof want, "%s: ", path);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(want + n, sizeof want - (size_t)n, fmt, ap);
    va_end(ap);
    struct plan *p = plan_read(path, err, sizeof err);
    if (p) {
        plan_free(p);
        fail_msg("read succeeded, expected: %s", want);
    }
    assert_string_equal(err, want);
}

static void test_truncation_every_byte_of_last_frame(void **state)
{
    (void)state;
    const char *path = write_sample("trunc-src.plan", 256);
    long last, size;
    int frames = count_frames(path, &last, &size);
    assert_true(frames >= 3);
    uint8_t *b = slurp(path, &size);
    const char *cut = test_tmpdir_path("trunc.plan");
    for (long len = last; len < size; len++) {
        spit(cut, b, len);
        if (len == last)
            expect_error(cut, "truncated plan: no END record (file ends after %ld bytes)", len);
        else
            expect_error(cut, "truncated frame at offset %ld (file ends after %ld bytes)", last,
                         len);
    }
    /* and in the header */
    spit(cut, b, 30);
    expect_error(cut, "truncated header (%u bytes announced, file has 30)", trace_get_le32(b + 4));
    spit(cut, b, 10);
    expect_error(cut, "not a preplay plan (10 bytes, too short)");
    spit(cut, b, 0);
    expect_error(cut, "not a preplay plan (empty file)");
    free(b);
}

static void test_flipped_bytes(void **state)
{
    (void)state;
    const char *path = write_sample("flip-src.plan", 512);
    char err[1024];
    struct plan *orig = plan_read(path, err, sizeof err);
    assert_non_null(orig);
    long size, last;
    count_frames(path, &last, &size);
    uint8_t *b = slurp(path, &size);
    const char *bad = test_tmpdir_path("flip.plan");
    uint32_t hsize = trace_get_le32(b + 4);
    long first = 8 + (long)hsize;
    /* exact messages for flips in each protected part */
    b[8 + 20] ^= 0x01; /* recording id */
    spit(bad, b, size);
    expect_error(bad, "header checksum mismatch");
    b[8 + 20] ^= 0x01;
    b[first + 8] ^= 0x01; /* frame header: seq */
    spit(bad, b, size);
    expect_error(bad, "frame at offset %ld: frame header checksum mismatch", first);
    b[first + 8] ^= 0x01;
    long zend = first + 8 + PLAN_CHUNK_PAYLOAD + (long)trace_get_le32(b + first + 12);
    b[zend - 1] ^= 0x80; /* the zstd content checksum itself */
    spit(bad, b, size);
    expect_error(bad, "frame at offset %ld: checksum mismatch", first);
    b[zend - 1] ^= 0x80;
    b[first + 3] ^= 0x01; /* frame magic */
    spit(bad, b, size);
    expect_error(bad, "frame at offset %ld: bad frame magic 0x194d2a5c", first);
    b[first + 3] ^= 0x01;
    /* every single-bit flip anywhere: refused with a message naming the file,
     * or (a flip zstd cannot see, e.g. in its window descriptor) the same plan */
    int refused = 0, same = 0;
    for (long i = 0; i < size; i++) {
        b[i] ^= 0x10;
        spit(bad, b, size);
        err[0] = '\0';
        struct plan *p = plan_read(bad, err, sizeof err);
        if (p) {
            assert_plan_equal(orig, p);
            plan_free(p);
            same++;
        } else {
            assert_memory_equal(err, bad, strlen(bad));
            refused++;
        }
        b[i] ^= 0x10;
    }
    assert_true(refused > size * 9 / 10);
    assert_int_equal(refused + same, size);
    plan_free(orig);
    free(b);
}

static void test_wrong_magic_and_unknown_major(void **state)
{
    (void)state;
    const char *path = write_sample("magic-src.plan", 0);
    long size;
    uint8_t *b = slurp(path, &size);
    const char *bad = test_tmpdir_path("magic.plan");
    b[8] = 'X';
    spit(bad, b, size);
    expect_error(bad, "not a preplay plan (bad magic)");
    memcpy(b + 8, "PREPLAYT", 8);
    spit(bad, b, size);
    expect_error(bad, "not a preplay plan (this is a trace file; `preplay analyze` turns traces "
                      "into a plan)");
    memcpy(b + 8, "PREPLAYP", 8);
    trace_put_le16(b + 16, 2); /* checked before the checksum */
    spit(bad, b, size);
    expect_error(bad, "unknown format major version 2 (this preplay reads 1)");
    free(b);
    expect_error(test_tmpdir_path("missing.plan"), "cannot open: No such file or directory");
    expect_error(test_tmpdir(), "not a regular file");
}

/* A base crafted plan: string 1 "a", component 0, block 0 (one CPU op),
 * request 0; the caller adds records before END. */
static void craft_base(struct plan_craft *c, uint16_t minor)
{
    plan_craft_header(c, 1, minor, "crafted");
    plan_craft_string(c, "a");
    plan_craft_varints(c, PLAN_REC_COMPONENT, 6, 1ull, 0ull, 2ull, 1ull, 80ull, 2ull);
    /* block: component 0, label 1, flags 0, recorded 100, 1 op, 0 segs; op CPU len 4 */
    uint8_t blk[] = {0, 1, 0, 100, 1, 0, PLAN_OP_CPU, 4, 0, 0, 9, 7};
    plan_craft_record(c, PLAN_REC_BLOCK, blk, sizeof blk);
}

static void craft_end(struct plan_craft *c, uint64_t nstrings, uint64_t nblocks, uint64_t nops,
                      uint64_t nsegs, uint64_t nreq)
{
    plan_craft_varints(c, PLAN_REC_END, 9, nstrings, 1ull, 0ull, 0ull, 0ull, nblocks, nops, nsegs,
                       nreq);
    plan_craft_frame(c);
}

static void test_higher_minor_skips_unknown(void **state)
{
    (void)state;
    struct plan_craft c;
    craft_base(&c, 7);
    uint8_t unknown[] = {1, 2, 3, 4, 5};
    plan_craft_record(&c, 42, unknown, sizeof unknown); /* a record type of minor 7 */
    plan_craft_frame(&c);
    plan_craft_skippable(&c, 0x184D2A5E, 16); /* a frame of minor 7 */
    /* a request with two fields appended by minor 7, and a block whose CPU op
     * carries an extra field inside its length */
    plan_craft_varints(&c, PLAN_REC_REQUEST, 8, 10ull, 0ull, 1ull, 3ull, 4ull, 5ull, 99ull, 98ull);
    uint8_t blk[] = {0, 0, 0, 50, 1, 0, PLAN_OP_CPU, 5, 0, 0, 8, 6, 0x55};
    plan_craft_record(&c, PLAN_REC_BLOCK, blk, sizeof blk);
    craft_end(&c, 2, 2, 2, 0, 1);
    const char *path = test_tmpdir_path("minor.plan");
    assert_int_equal(plan_craft_save(&c, path), 0);
    char err[512];
    struct plan *p = plan_read(path, err, sizeof err);
    if (!p)
        fail_msg("%s", err);
    assert_int_equal(p->version_minor, 7);
    assert_true(p->skipped_records == 1);
    assert_string_equal(p->recording_id, "crafted");
    assert_int_equal(p->nblocks, 2);
    assert_true(p->ops[0].a.cpu_ns == 7 && p->ops[0].recorded_ns == 9);
    assert_true(p->ops[1].a.cpu_ns == 6 && p->ops[1].recorded_ns == 8);
    assert_true(p->nrequests == 1);
    assert_true(p->requests[0].arrival_ns == 5); /* zigzag 10 = +5 */
    assert_int_equal(p->requests[0].label, 1);
    assert_int_equal(p->requests[0].session, 3);
    assert_true(p->requests[0].think_ns == 5);
    assert_int_equal(p->components[0].workers, 2);
    assert_int_equal(p->components[0].is_frontend, 1);
    plan_free(p);
}

/* 1.1 block fields: a 1.0 block (body ends after its segments) reads as
 * worker 0, start_ns 0; a 1.1-1.4 block (ends after start_ns) as tail_ns 0
 * (1.5); a 1.5 block with a later minor's bytes after tail_ns keeps its
 * fields; a damaged tail is named. */
static void test_block_worker_fields(void **state)
{
    (void)state;
    const char *path = test_tmpdir_path("tail.plan");
    struct plan_craft c;
    craft_base(&c, 7); /* block 0: a 1.0 body */
    /* block 1: CPU op, worker 3, start_ns 300 (varint 0xac 0x02), tail_ns
     * 85 (1.5), then a byte of minor 7 */
    uint8_t blk[] = {0, 0, 0, 50, 1, 0, PLAN_OP_CPU, 4, 0, 0, 8, 6, 3, 0xac, 0x02, 0x55, 0x66};
    plan_craft_record(&c, PLAN_REC_BLOCK, blk, sizeof blk);
    /* block 2: a 1.4 body (worker 4, start_ns 5, no tail_ns) */
    uint8_t b13[] = {0, 0, 0, 50, 1, 0, PLAN_OP_CPU, 4, 0, 0, 8, 6, 4, 5};
    plan_craft_record(&c, PLAN_REC_BLOCK, b13, sizeof b13);
    craft_end(&c, 2, 3, 3, 0, 0);
    assert_int_equal(plan_craft_save(&c, path), 0);
    char err[512];
    struct plan *p = plan_read(path, err, sizeof err);
    if (!p)
        fail_msg("%s", err);
    assert_int_equal(p->nblocks, 3);
    assert_int_equal(p->blocks[0].worker, 0);
    assert_true(p->blocks[0].start_ns == 0);
    assert_true(p->blocks[0].tail_ns == 0);
    assert_int_equal(p->blocks[1].worker, 3);
    assert_true(p->blocks[1].start_ns == 300);
    assert_true(p->blocks[1].tail_ns == 85);
    assert_int_equal(p->blocks[2].worker, 4);
    assert_true(p->blocks[2].start_ns == 5);
    assert_true(p->blocks[2].tail_ns == 0);
    assert_true(p->ops[1].a.cpu_ns == 6);
    plan_free(p);
    /* worker present but start_ns cut mid-varint */
    craft_base(&c, 1);
    uint8_t cut[] = {0, 0, 0, 50, 1, 0, PLAN_OP_CPU, 4, 0, 0, 8, 6, 3, 0xac};
    plan_craft_record(&c, PLAN_REC_BLOCK, cut, sizeof cut);
    craft_end(&c, 2, 2, 2, 0, 0);
    assert_int_equal(plan_craft_save(&c, path), 0);
    char where[64];
    snprintf(where, sizeof where, "frame at offset %llu", (unsigned long long)c.last_frame_offset);
    expect_error(path, "%s, record 3 (BLOCK #1): worker or start_ns (1.1) damaged", where);
    /* a worker that does not fit 32 bits */
    craft_base(&c, 1);
    uint8_t big[] = {0, 0, 0, 50,   1,    0,    PLAN_OP_CPU, 4,    0,
                     0, 8, 6, 0x80, 0x80, 0x80, 0x80,        0x10, 0};
    plan_craft_record(&c, PLAN_REC_BLOCK, big, sizeof big);
    craft_end(&c, 2, 2, 2, 0, 0);
    assert_int_equal(plan_craft_save(&c, path), 0);
    snprintf(where, sizeof where, "frame at offset %llu", (unsigned long long)c.last_frame_offset);
    expect_error(path, "%s, record 3 (BLOCK #1): worker or start_ns (1.1) damaged", where);
}

static void test_dangling_references(void **state)
{
    (void)state;
    const char *path = test_tmpdir_path("dangling.plan");
    struct plan_craft c;
    char where[64];
#define FRAME_AT(c)                                                                                \
    snprintf(where, sizeof where, "frame at offset %llu", (unsigned long long)(c).last_frame_offset)
    /* CALL to a block not defined before (itself) */
    craft_base(&c, 0);
    uint8_t call[] = {0, 1, 0, 100, 1, 0, PLAN_OP_CALL, 6, 0, 0, 0, 1, 0, 0};
    plan_craft_record(&c, PLAN_REC_BLOCK, call, sizeof call);
    craft_end(&c, 2, 2, 2, 0, 0);
    plan_craft_save(&c, path);
    FRAME_AT(c);
    expect_error(path,
                 "%s, record 3 (BLOCK #1): op 0 (CALL): callee block 1 is not defined "
                 "before block 1",
                 where);
    /* CALL with a segment range past the block's segments */
    craft_base(&c, 0);
    uint8_t segs[] = {0, 1, 0, 100, 1, 1, PLAN_OP_CALL, 6, 0, 0, 0, 0, 1, 1, 0, 0, 64};
    plan_craft_record(&c, PLAN_REC_BLOCK, segs, sizeof segs);
    craft_end(&c, 2, 2, 2, 1, 0);
    plan_craft_save(&c, path);
    FRAME_AT(c);
    expect_error(path,
                 "%s, record 3 (BLOCK #1): op 0 (CALL): segments [1, +1) run past the "
                 "block's 1 segments",
                 where);
    /* a string id never defined */
    craft_base(&c, 0);
    uint8_t db[] = {0, 0, 0, 1, 1, 0, PLAN_OP_DB, 8, PLAN_DB_QUERY, 0, 0, 0, 9, 0, 0, 0};
    plan_craft_record(&c, PLAN_REC_BLOCK, db, sizeof db);
    craft_end(&c, 2, 2, 2, 0, 0);
    plan_craft_save(&c, path);
    FRAME_AT(c);
    expect_error(path,
                 "%s, record 3 (BLOCK #1): op 0 (DB) sql names string 9, but only 2 "
                 "strings are defined",
                 where);
    /* a FILE op on an undefined file; an op range past the record */
    craft_base(&c, 0);
    uint8_t file[] = {0, 0, 0, 1, 1, 0, PLAN_OP_FILE, 6, PLAN_FILE_READ, 0, 0, 0, 0, 0};
    plan_craft_record(&c, PLAN_REC_BLOCK, file, sizeof file);
    craft_end(&c, 2, 2, 2, 0, 0);
    plan_craft_save(&c, path);
    FRAME_AT(c);
    expect_error(path,
                 "%s, record 3 (BLOCK #1): op 0 (FILE): file 0 is not defined (0 files "
                 "so far)",
                 where);
    craft_base(&c, 0);
    uint8_t many[] = {0, 0, 0, 1, 4, 0, PLAN_OP_CPU, 4, 0, 0, 1, 1};
    plan_craft_record(&c, PLAN_REC_BLOCK, many, sizeof many);
    craft_end(&c, 2, 2, 4, 0, 0);
    plan_craft_save(&c, path);
    FRAME_AT(c);
    expect_error(path, "%s, record 3 (BLOCK #1): 4 ops and 0 segments do not fit in the record",
                 where);
    /* an unknown op kind within a known major */
    craft_base(&c, 0);
    uint8_t kind[] = {0, 0, 0, 1, 1, 0, 77, 3, 0, 0, 0};
    plan_craft_record(&c, PLAN_REC_BLOCK, kind, sizeof kind);
    craft_end(&c, 2, 2, 2, 0, 0);
    plan_craft_save(&c, path);
    FRAME_AT(c);
    expect_error(path, "%s, record 3 (BLOCK #1): op 0: unknown op kind 77", where);
    /* a request naming a block never defined; a component update of an undefined component */
    craft_base(&c, 0);
    plan_craft_varints(&c, PLAN_REC_REQUEST, 6, 0ull, 1ull, 0ull, 0ull, 0ull, 0ull);
    craft_end(&c, 2, 1, 1, 0, 1);
    plan_craft_save(&c, path);
    FRAME_AT(c);
    expect_error(path, "%s, record 3 (REQUEST #0): block 1 is not defined (1 blocks so far)",
                 where);
    craft_base(&c, 0);
    plan_craft_varints(&c, PLAN_REC_COMPONENT_UPDATE, 7, 4ull, 1ull, 0ull, 2ull, 1ull, 80ull, 2ull);
    craft_end(&c, 2, 1, 1, 0, 0);
    plan_craft_save(&c, path);
    FRAME_AT(c);
    expect_error(path, "%s, record 3 (COMPONENT_UPDATE): component 4 is not defined (1 so far)",
                 where);
    /* a DB connection beyond the component's db_conns (checked at the end) */
    craft_base(&c, 0);
    uint8_t conn[] = {0, 0, 0, 1, 1, 0, PLAN_OP_DB, 8, PLAN_DB_QUERY, 0, 0, 1, 1, 0, 0, 0};
    plan_craft_record(&c, PLAN_REC_BLOCK, conn, sizeof conn);
    craft_end(&c, 2, 2, 2, 0, 0);
    plan_craft_save(&c, path);
    FRAME_AT(c);
    expect_error(path,
                 "%s, record 3 (BLOCK #1): op 0 (DB): connection 1, but component 0 has "
                 "db_conns = 1",
                 where);
    /* END counts that disagree; a record after END; a record of type 0 */
    craft_base(&c, 0);
    craft_end(&c, 2, 1, 1, 0, 5);
    plan_craft_save(&c, path);
    FRAME_AT(c);
    expect_error(path, "%s, record 3 (END): the plan has 0 requests, END says 5", where);
    craft_base(&c, 0);
    plan_craft_varints(&c, PLAN_REC_END, 9, 2ull, 1ull, 0ull, 0ull, 0ull, 1ull, 1ull, 0ull, 0ull);
    plan_craft_string(&c, "late");
    plan_craft_frame(&c);
    plan_craft_save(&c, path);
    FRAME_AT(c);
    expect_error(path, "%s, record 4 (STRING): record after the END record", where);
    craft_base(&c, 0);
    plan_craft_record(&c, 0, (const uint8_t *)"", 0);
    craft_end(&c, 2, 1, 1, 0, 0);
    plan_craft_save(&c, path);
    FRAME_AT(c);
    expect_error(path, "%s, record 3: record type 0", where);
#undef FRAME_AT
}

static void test_writer_refuses_dangling(void **state)
{
    (void)state;
    int before = dir_entries();
    const char *path = test_tmpdir_path("refused.plan");
    char err[512] = "";
    struct plan_writer *w = plan_writer_open(path, "r", NULL, 0, err, sizeof err);
    assert_non_null(w);
    struct plan_component c = {0, 0, 1, 0, 0, 0, 1, 0};
    assert_int_equal(plan_writer_component(w, &c), 0);
    struct plan_op op = {.kind = PLAN_OP_CALL, .a.call = {5, 0, 0}};
    struct plan_block b = {0, 0, 0, 1, 0, 0, 0, 0, 0};
    assert_int_equal(plan_writer_block(w, &b, &op, NULL, 0), UINT32_MAX);
    char want[600];
    snprintf(want, sizeof want,
             "%s: block 0: op 0 (CALL): callee block 5 is not defined before block 0", path);
    assert_string_equal(plan_writer_error(w), want);
    /* the writer stays failed with the first reason */
    assert_int_equal(plan_writer_string(w, "x", 1), UINT32_MAX);
    assert_int_equal(plan_writer_close(w, err, sizeof err), -1);
    assert_string_equal(err, want);
    assert_int_equal(dir_entries(), before);
    /* a DB connection beyond db_conns is refused at close */
    w = plan_writer_open(path, "r", NULL, 0, err, sizeof err);
    assert_int_equal(plan_writer_component(w, &c), 0);
    struct plan_op dbop = {.kind = PLAN_OP_DB, .op = PLAN_DB_QUERY, .a.db = {3, 0, 0, 0, 0}};
    assert_int_equal(plan_writer_block(w, &b, &dbop, NULL, 0), 0);
    assert_int_equal(plan_writer_close(w, err, sizeof err), -1);
    snprintf(want, sizeof want,
             "%s: component 0: blocks use DB connection 3, but the component has db_conns = 0",
             path);
    assert_string_equal(err, want);
    assert_int_equal(dir_entries(), before);
    /* bad requests, summaries and open arguments */
    w = plan_writer_open(path, "r", NULL, 0, err, sizeof err);
    struct plan_request r = {0, 0, 0, 0, 0, 0};
    assert_int_equal(plan_writer_request(w, &r), -1);
    snprintf(want, sizeof want, "%s: request: block 0 is not defined (0 blocks so far)", path);
    assert_string_equal(plan_writer_error(w), want);
    plan_writer_abort(w);
    w = plan_writer_open(path, "r", NULL, 0, err, sizeof err);
    assert_int_equal(plan_writer_summary(w, 1.5, 0, 0, NULL), -1);
    snprintf(want, sizeof want, "%s: summary: coverage 1.5 is not within [0, 1]", path);
    assert_string_equal(plan_writer_error(w), want);
    plan_writer_abort(w);
    assert_null(plan_writer_open(path, "0123456789012345678901234567890123456789", NULL, 0, err,
                                 sizeof err));
    snprintf(want, sizeof want, "%s: recording id is longer than 39 bytes", path);
    assert_string_equal(err, want);
    assert_null(plan_writer_open("/nonexistent-dir/x.plan", "r", NULL, 0, err, sizeof err));
    assert_string_equal(err, "/nonexistent-dir/x.plan: cannot create a temporary file next to "
                             "it: No such file or directory");
    assert_int_equal(dir_entries(), before);
}

/* A write error (here the file size limit, as a full disk would) names the
 * path, and neither the plan nor its temp file is left. */
static void test_write_error_names_path(void **state)
{
    (void)state;
    int before = dir_entries();
    const char *path = test_tmpdir_path("full.plan");
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {20000, 20000};
        setrlimit(RLIMIT_FSIZE, &rl);
        char err[512] = "";
        struct plan_writer *w = plan_writer_open(path, "r", NULL, 0, err, sizeof err);
        int rc = w ? 0 : -1;
        uint64_t x = 88172645463325252ull; /* incompressible strings */
        for (int i = 0; w && rc == 0 && i < 100000; i++) {
            char s[64];
            for (int k = 0; k < 63; k++) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                s[k] = (char)(33 + x % 90);
            }
            if (plan_writer_string(w, s, 63) == UINT32_MAX)
                rc = -1;
        }
        if (w && plan_writer_close(w, err, sizeof err) == 0)
            snprintf(err, sizeof err, "no error");
        (void)!write(pfd[1], err, strlen(err) + 1);
        _exit(0);
    }
    close(pfd[1]);
    char msg[512] = "";
    (void)!read(pfd[0], msg, sizeof msg - 1);
    close(pfd[0]);
    waitpid(pid, NULL, 0);
    char prefix[600];
    snprintf(prefix, sizeof prefix, "%s: write failed at offset ", path);
    assert_memory_equal(msg, prefix, strlen(prefix));
    assert_non_null(strstr(msg, ": File too large"));
    assert_int_equal(dir_entries(), before);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_every_op),
        cmocka_unit_test(test_many_blocks_many_frames),
        cmocka_unit_test(test_truncation_every_byte_of_last_frame),
        cmocka_unit_test(test_flipped_bytes),
        cmocka_unit_test(test_wrong_magic_and_unknown_major),
        cmocka_unit_test(test_higher_minor_skips_unknown),
        cmocka_unit_test(test_block_worker_fields),
        cmocka_unit_test(test_dangling_references),
        cmocka_unit_test(test_writer_refuses_dangling),
        cmocka_unit_test(test_write_error_names_path),
    };
    return cmocka_run_group_tests(tests, test_tmpdir_setup, test_tmpdir_teardown);
}
