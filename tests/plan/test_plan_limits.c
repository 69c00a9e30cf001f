/* test_plan_limits.c - property test of the plan's bounds (plan.h limits,
 * PLAN.md §6.1): for every count, size, index and time a plan carries,
 * plans with the field at 0, at its limit, one past it and at its type's
 * maximum are crafted byte by byte (for the reader) and built in memory
 * (for the writer). At or below the limit both must accept and give the
 * value back; above it both must refuse with one line naming the field,
 * its value and the limit. Whole-plan counts too large to build in a unit
 * test (2^26 blocks) are checked through the shared check both sides call,
 * and components (4096) through a crafted plan. Must never pass without
 * the limits: every refusal is asserted by its message. */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mem_budget.h"
#include "plan.h"
#include "plan_codec.h"
#include "plan_craft.h"
#include "test_tmpdir.h"

/* The bounded fields of the small plan both sides build. */
struct limits_spec {
    uint64_t workers, db_conns, initial_size, block_ns, worker, start_ns, tail_ns;
    uint64_t op_ns, cpu_ns, file_size, file_offset, send_bytes, ext_sent;
    uint64_t arrival_ns, think_ns;
};

struct limits_field {
    const char *name; /* as the refusal names it */
    size_t offset;    /* in struct limits_spec */
    uint64_t limit, max;
};

#define LF(name, member, limit, max)                                                               \
    {                                                                                              \
        name, offsetof(struct limits_spec, member), limit, max                                     \
    }
static const struct limits_field limits_fields[] = {
    LF("workers", workers, PLAN_MAX_WORKERS, UINT32_MAX),
    LF("db_conns", db_conns, PLAN_MAX_DB_CONNS, UINT32_MAX),
    LF("initial_size", initial_size, PLAN_MAX_FILE_BYTES, UINT64_MAX),
    LF("recorded_ns", block_ns, PLAN_MAX_NS, UINT64_MAX),
    LF("worker", worker, PLAN_MAX_WORKER_INDEX, UINT32_MAX),
    LF("start_ns", start_ns, PLAN_MAX_NS, UINT64_MAX),
    LF("tail_ns", tail_ns, PLAN_MAX_NS, UINT64_MAX),
    LF("op 0 (CPU) recorded_ns", op_ns, PLAN_MAX_NS, UINT64_MAX),
    LF("op 0 (CPU) cpu_ns", cpu_ns, PLAN_MAX_NS, UINT64_MAX),
    LF("op 1 (FILE) size", file_size, PLAN_MAX_IO_BYTES, UINT64_MAX),
    LF("op 1 (FILE) offset", file_offset, PLAN_MAX_FILE_BYTES, INT64_MAX),
    LF("op 2 (SEND) bytes", send_bytes, PLAN_MAX_NET_BYTES, UINT64_MAX),
    LF("op 3 (EXTERNAL) sent", ext_sent, PLAN_MAX_NET_BYTES, UINT64_MAX),
    LF("arrival_ns", arrival_ns, PLAN_MAX_NS, UINT64_MAX),
    LF("think_ns", think_ns, PLAN_MAX_NS, UINT64_MAX),
};
#define LIMITS_NFIELDS (sizeof limits_fields / sizeof *limits_fields)

static uint64_t *limits_at(struct limits_spec *s, const struct limits_field *f)
{
    return (uint64_t *)((char *)s + f->offset);
}

static size_t limits_op(uint8_t *out, uint8_t kind, uint8_t op, uint64_t recorded, int n, ...)
{
    uint8_t body[128];
    size_t len = 0;
    body[len++] = op;
    len += trace_put_varint(body + len, 0); /* flags */
    len += trace_put_varint(body + len, recorded);
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++)
        len += trace_put_varint(body + len, va_arg(ap, uint64_t));
    va_end(ap);
    out[0] = kind;
    size_t h = 1 + trace_put_varint(out + 1, len);
    memcpy(out + h, body, len);
    return h + len;
}

/* The spec as a crafted file: strings "a", "h"; file 0; component 0;
 * block 0 (CPU, FILE read, SEND, EXTERNAL); request 0. */
static void limits_craft(const struct limits_spec *s, const char *path)
{
    static struct plan_craft c;
    plan_craft_header(&c, 1, PLAN_FORMAT_MINOR, "limits");
    plan_craft_string(&c, "a");
    plan_craft_string(&c, "h");
    plan_craft_varints(&c, PLAN_REC_FILE, 2, 1ull, s->initial_size);
    plan_craft_varints(&c, PLAN_REC_COMPONENT, 6, 1ull, 0ull, s->workers, s->db_conns, 80ull, 2ull);
    uint8_t blk[512];
    size_t n = 0;
    uint64_t head[] = {0, 1, 0, s->block_ns, 4, 0};
    for (int i = 0; i < 6; i++)
        n += trace_put_varint(blk + n, head[i]);
    n += limits_op(blk + n, PLAN_OP_CPU, 0, s->op_ns, 1, s->cpu_ns);
    n += limits_op(blk + n, PLAN_OP_FILE, PLAN_FILE_READ, 0, 3, 0ull, trace_zigzag(s->file_offset),
                   s->file_size);
    n += limits_op(blk + n, PLAN_OP_SEND, 0, 0, 1, s->send_bytes);
    n += limits_op(blk + n, PLAN_OP_EXTERNAL, 0, 0, 3, 2ull, s->ext_sent, 0ull);
    n += trace_put_varint(blk + n, s->worker);
    n += trace_put_varint(blk + n, s->start_ns);
    n += trace_put_varint(blk + n, s->tail_ns); /* 1.5 */
    plan_craft_record(&c, PLAN_REC_BLOCK, blk, n);
    plan_craft_varints(&c, PLAN_REC_REQUEST, 6, trace_zigzag(s->arrival_ns), 0ull, 1ull, 0ull, 0ull,
                       s->think_ns);
    plan_craft_varints(&c, PLAN_REC_END, 9, 3ull, 1ull, 1ull, 0ull, 0ull, 1ull, 4ull, 0ull, 1ull);
    plan_craft_frame(&c);
    assert_int_equal(plan_craft_save(&c, path), 0);
}

/* The spec through plan_write: 0 or -1 with err. */
static int limits_write(const struct limits_spec *s, const char *path, char *err, size_t errlen)
{
    char *strings[] = {"", "a", "h"};
    struct plan_component comp = {1, 0, (uint32_t)s->workers, (uint32_t)s->db_conns, 80, 0, 1, 0};
    struct plan_file file = {1, s->initial_size};
    struct plan_op ops[4] = {
        {.kind = PLAN_OP_CPU, .recorded_ns = s->op_ns, .a.cpu_ns = s->cpu_ns},
        {.kind = PLAN_OP_FILE,
         .op = PLAN_FILE_READ,
         .a.file = {0, (int64_t)s->file_offset, s->file_size}},
        {.kind = PLAN_OP_SEND, .a.net.bytes = s->send_bytes},
        {.kind = PLAN_OP_EXTERNAL, .a.external = {2, s->ext_sent, 0}},
    };
    struct plan_block block = {0,           1,         0, 4, 0, s->block_ns, (uint32_t)s->worker,
                               s->start_ns, s->tail_ns};
    struct plan_request req = {s->arrival_ns, 0, 1, 0, 0, s->think_ns};
    struct plan p = {.version_major = 1,
                     .strings = strings,
                     .nstrings = 3,
                     .components = &comp,
                     .ncomponents = 1,
                     .files = &file,
                     .nfiles = 1,
                     .blocks = &block,
                     .nblocks = 1,
                     .ops = ops,
                     .nops = 4,
                     .requests = &req,
                     .nrequests = 1};
    strcpy(p.recording_id, "limits");
    return plan_write(&p, path, err, errlen);
}

static void limits_expect_refusal(const char *err, const struct limits_field *f, uint64_t v,
                                  const char *side)
{
    char want[160];
    snprintf(want, sizeof want, "%s %" PRIu64 " exceeds the limit %" PRIu64, f->name, v, f->limit);
    if (!strstr(err, want))
        fail_msg("%s, %s = %" PRIu64 ": expected \"%s\" in \"%s\"", side, f->name, v, want, err);
    if (strchr(err, '\n'))
        fail_msg("%s: not one line: %s", side, err);
}

/* Every field at 0, limit, limit + 1 and its type's maximum, through the
 * reader and the writer. */
static void test_fields_at_extremes(void **state)
{
    (void)state;
    const char *path = test_tmpdir_path("limits.plan");
    const char *wpath = test_tmpdir_path("limits-written.plan");
    for (size_t i = 0; i < LIMITS_NFIELDS; i++) {
        const struct limits_field *f = &limits_fields[i];
        uint64_t values[] = {0, f->limit, f->limit + 1, f->max};
        for (int k = 0; k < 4; k++) {
            struct limits_spec s = {.workers = 1, .db_conns = 0};
            *limits_at(&s, f) = values[k];
            char err[512] = "";
            limits_craft(&s, path);
            struct plan *p = plan_read(path, err, sizeof err);
            int wrc = limits_write(&s, wpath, err + 256, 256);
            if (values[k] <= f->limit) {
                if (!p)
                    fail_msg("reader refused %s = %" PRIu64 ": %s", f->name, values[k], err);
                if (wrc != 0)
                    fail_msg("writer refused %s = %" PRIu64 ": %s", f->name, values[k], err + 256);
                /* the value comes back: a replayer sizes by exactly this */
                assert_true(p->components[0].workers == s.workers);
                assert_true(p->files[0].initial_size == s.initial_size);
                assert_true(p->blocks[0].worker == s.worker);
                assert_true(p->ops[1].a.file.size == s.file_size);
                assert_true(p->requests[0].arrival_ns == s.arrival_ns);
                plan_free(p);
                struct plan *q = plan_read(wpath, err, sizeof err);
                if (!q)
                    fail_msg("reading what the writer wrote (%s = %" PRIu64 "): %s", f->name,
                             values[k], err);
                plan_free(q);
            } else {
                assert_null(p);
                limits_expect_refusal(err, f, values[k], "reader");
                assert_int_equal(wrc, -1);
                limits_expect_refusal(err + 256, f, values[k], "writer");
            }
        }
    }
}

/* Whole-plan and per-block counts: the check the reader and the writer
 * both call before adding a definition, at limit - 1 (room for one more),
 * at the limit and at UINT32_MAX. */
static void test_counts(void **state)
{
    (void)state;
    static const struct {
        unsigned type;
        const char *name;
        size_t offset;
        uint64_t limit;
    } counts[] = {
        {PLAN_REC_STRING, "strings", offsetof(struct plan_defined, strings), PLAN_MAX_STRINGS},
        {PLAN_REC_COMPONENT, "components", offsetof(struct plan_defined, components),
         PLAN_MAX_COMPONENTS},
        {PLAN_REC_FILE, "files", offsetof(struct plan_defined, files), PLAN_MAX_FILES},
        {PLAN_REC_LOCK, "locks", offsetof(struct plan_defined, locks), PLAN_MAX_LOCKS},
        {PLAN_REC_DB_ENDPOINT, "DB endpoints", offsetof(struct plan_defined, db_endpoints),
         PLAN_MAX_DB_ENDPOINTS},
        {PLAN_REC_BLOCK, "blocks", offsetof(struct plan_defined, blocks), PLAN_MAX_BLOCKS},
    };
    char why[160], want[160];
    for (size_t i = 0; i < sizeof counts / sizeof *counts; i++) {
        uint64_t have[] = {0, counts[i].limit - 1, counts[i].limit, UINT32_MAX};
        for (int k = 0; k < 4; k++) {
            struct plan_defined d = {0};
            *(uint32_t *)((char *)&d + counts[i].offset) = (uint32_t)have[k];
            int rc = plan_check_room(&d, counts[i].type, 0, why, sizeof why);
            if (have[k] < counts[i].limit) {
                assert_int_equal(rc, 0);
                continue;
            }
            assert_int_equal(rc, -1);
            snprintf(want, sizeof want, "%s %" PRIu64 " exceeds the limit %" PRIu64, counts[i].name,
                     have[k] + 1, counts[i].limit);
            assert_string_equal(why, want);
        }
    }
    struct plan_defined d = {0};
    uint64_t reqs[] = {0, PLAN_MAX_REQUESTS - 1, PLAN_MAX_REQUESTS, UINT64_MAX - 1};
    for (int k = 0; k < 4; k++)
        assert_int_equal(plan_check_room(&d, PLAN_REC_REQUEST, reqs[k], why, sizeof why),
                         reqs[k] < PLAN_MAX_REQUESTS ? 0 : -1);
    assert_string_equal(why, "requests 18446744073709551615 exceeds the limit 67108864");
    /* per block and whole plan: ops and segments */
    assert_int_equal(
        plan_check_block_counts(&d, PLAN_MAX_BLOCK_OPS, PLAN_MAX_BLOCK_SEGMENTS, why, sizeof why),
        0);
    assert_int_equal(plan_check_block_counts(&d, PLAN_MAX_BLOCK_OPS + 1, 0, why, sizeof why), -1);
    assert_string_equal(why, "nops 1048577 exceeds the limit 1048576");
    assert_int_equal(plan_check_block_counts(&d, 0, UINT32_MAX, why, sizeof why), -1);
    assert_string_equal(why, "nsegs 4294967295 exceeds the limit 1048576");
    d.ops = PLAN_MAX_OPS;
    assert_int_equal(plan_check_block_counts(&d, 0, 0, why, sizeof why), 0);
    assert_int_equal(plan_check_block_counts(&d, 1, 0, why, sizeof why), -1);
    assert_string_equal(why, "ops 268435457 exceeds the limit 268435456");
    d.ops = 0;
    d.segments = PLAN_MAX_SEGMENTS;
    assert_int_equal(plan_check_block_counts(&d, 0, 1, why, sizeof why), -1);
    assert_string_equal(why, "segments 268435457 exceeds the limit 268435456");
}

/* Counts the reader meets in a file: a block claiming more ops than the
 * limit, a string longer than the limit (refused before the record is
 * found too short for it), one component more than the limit. */
static void test_counts_in_files(void **state)
{
    (void)state;
    const char *path = test_tmpdir_path("counts.plan");
    char err[512];
    static struct plan_craft c;
    uint64_t nops[] = {PLAN_MAX_BLOCK_OPS + 1, UINT32_MAX};
    for (int k = 0; k < 2; k++) {
        plan_craft_header(&c, 1, PLAN_FORMAT_MINOR, "counts");
        plan_craft_varints(&c, PLAN_REC_COMPONENT, 6, 0ull, 0ull, 1ull, 0ull, 80ull, 2ull);
        plan_craft_varints(&c, PLAN_REC_BLOCK, 6, 0ull, 0ull, 0ull, 0ull, nops[k], 0ull);
        plan_craft_frame(&c);
        assert_int_equal(plan_craft_save(&c, path), 0);
        assert_null(plan_read(path, err, sizeof err));
        char want[128];
        snprintf(want, sizeof want, "(BLOCK #0): nops %" PRIu64 " exceeds the limit 1048576",
                 nops[k]);
        if (!strstr(err, want))
            fail_msg("expected \"%s\" in \"%s\"", want, err);
    }
    plan_craft_header(&c, 1, PLAN_FORMAT_MINOR, "counts");
    plan_craft_varints(&c, PLAN_REC_STRING, 1, (uint64_t)PLAN_MAX_STRING_BYTES + 1);
    plan_craft_frame(&c);
    assert_int_equal(plan_craft_save(&c, path), 0);
    assert_null(plan_read(path, err, sizeof err));
    if (!strstr(err, "(STRING #1): length 16777217 exceeds the limit 16777216"))
        fail_msg("%s", err);
    /* PLAN_MAX_COMPONENTS components read; one more is refused */
    for (int extra = 0; extra < 2; extra++) {
        plan_craft_header(&c, 1, PLAN_FORMAT_MINOR, "counts");
        for (uint32_t i = 0; i < PLAN_MAX_COMPONENTS + (uint32_t)extra; i++) {
            plan_craft_varints(&c, PLAN_REC_COMPONENT, 6, 0ull, 0ull, 1ull, 0ull, 80ull, 0ull);
            if (c.frame_len > sizeof c.frame - 64)
                plan_craft_frame(&c);
        }
        plan_craft_varints(&c, PLAN_REC_END, 9, 1ull, (uint64_t)PLAN_MAX_COMPONENTS, 0ull, 0ull,
                           0ull, 0ull, 0ull, 0ull, 0ull);
        plan_craft_frame(&c);
        assert_int_equal(plan_craft_save(&c, path), 0);
        struct plan *p = plan_read(path, err, sizeof err);
        if (!extra) {
            if (!p)
                fail_msg("%s", err);
            assert_int_equal(p->ncomponents, PLAN_MAX_COMPONENTS);
            plan_free(p);
        } else {
            assert_null(p);
            if (!strstr(err, "(COMPONENT): components 4097 exceeds the limit 4096"))
                fail_msg("%s", err);
        }
    }
}

/* What a plan decodes to is held within the memory given (plan.h
 * plan_read_within; plan_read gives what the machine has available): a
 * plan of 150 KB within every PLAN_MAX_* limit decoded to 3.5 GB (2^26 ops
 * of 48 bytes), 14 GB at the limits. 20000 blocks of 16 CPU ops take
 * ~17 MB here: refused within 4 MB naming the record, read within 64 MB. */
static void test_memory_budget(void **state)
{
    (void)state;
    const char *path = test_tmpdir_path("wide.plan");
    static struct plan_craft c;
    const uint32_t nblocks = 20000, nops = 16;
    plan_craft_header(&c, 1, PLAN_FORMAT_MINOR, "budget");
    plan_craft_string(&c, "a");
    plan_craft_varints(&c, PLAN_REC_COMPONENT, 6, 1ull, 0ull, 1ull, 0ull, 80ull, 2ull);
    uint8_t blk[256];
    size_t n = 0;
    uint64_t head[] = {0, 1, 0, 100, nops, 0};
    for (int i = 0; i < 6; i++)
        n += trace_put_varint(blk + n, head[i]);
    for (uint32_t i = 0; i < nops; i++)
        n += limits_op(blk + n, PLAN_OP_CPU, 0, 100, 1, 100ull);
    n += trace_put_varint(blk + n, 0); /* worker */
    n += trace_put_varint(blk + n, 0); /* start_ns */
    n += trace_put_varint(blk + n, 0); /* tail_ns */
    for (uint32_t b = 0; b < nblocks; b++) {
        if (c.frame_len + n + 16 > sizeof c.frame)
            plan_craft_frame(&c);
        plan_craft_record(&c, PLAN_REC_BLOCK, blk, n);
    }
    plan_craft_varints(&c, PLAN_REC_REQUEST, 6, 0ull, 0ull, 1ull, 0ull, 0ull, 0ull);
    plan_craft_varints(&c, PLAN_REC_END, 9, 2ull, 1ull, 0ull, 0ull, 0ull, (uint64_t)nblocks,
                       (uint64_t)nblocks * nops, 0ull, 1ull);
    plan_craft_frame(&c);
    assert_int_equal(plan_craft_save(&c, path), 0);
    char err[512];
    assert_null(plan_read_within(path, 4000000, err, sizeof err));
    if (!strstr(err, "(BLOCK #") ||
        !strstr(err, ": the plan needs more memory than the 4 MB available"))
        fail_msg("%s", err);
    struct plan *p = plan_read_within(path, 64000000, err, sizeof err);
    if (!p)
        fail_msg("%s", err);
    assert_int_equal(p->nblocks, nblocks);
    assert_int_equal(p->nops, (uint64_t)nblocks * nops);
    plan_free(p);
    /* what plan_read allows: the machine's, something, not everything */
    uint64_t avail = mem_budget_available();
    assert_true(avail > 0 && avail < UINT64_MAX);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fields_at_extremes),
        cmocka_unit_test(test_counts),
        cmocka_unit_test(test_counts_in_files),
        cmocka_unit_test(test_memory_budget),
    };
    return cmocka_run_group_tests(tests, test_tmpdir_setup, test_tmpdir_teardown);
}
