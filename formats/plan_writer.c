/* plan_writer.c - streams a replay plan to disk in the layout of PLAN.md:
 * a header frame, then zstd frames of records (strings, components, files,
 * locks, DB endpoints, blocks, requests, summary) ended by an END record.
 *
 * The analyzer calls it as it finishes each block, so its memory is one
 * frame of records (plus the largest single record), the component table
 * and the string dedup table (every distinct string's bytes + ~50 bytes per
 * string, PLAN.md §6) - never the blocks or requests already written. Every
 * reference is checked with the same code the reader uses (plan_codec.c),
 * so it never writes a plan the reader would refuse. The file appears only
 * at plan_writer_close (temp file in the same directory + fsync + rename);
 * a failed write removes the temp file and never leaves a partial plan
 * under the final name. */
#include "grow_array.h"
#include "out_file.h"
#include "plan.h"
#include "plan_codec.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#define PLAN_WRITER_MIN_FRAME 64u
#define PLAN_REQUEST_BOUND (1u + 10u + 6u * 10u)

struct plan_writer_string {
    uint64_t offset; /* into arena */
    uint32_t len;
    uint32_t next; /* next id with the same hash, or 0 */
};

struct plan_writer {
    int fd; /* out.fd while the plan is being written */
    int failed;
    char *path;
    struct out_file out; /* the temporary file renamed into place at the end */
    char err[1024];
    ZSTD_CCtx *cctx;
    uint8_t *raw; /* the frame being filled */
    size_t raw_len, raw_cap, frame_bytes;
    uint8_t *body; /* scratch for one record body */
    size_t body_cap;
    uint8_t *zbuf;
    size_t zcap;
    uint32_t seq, frame_records;
    uint64_t offset, prev_arrival;
    struct plan_defined d;
    uint64_t nrequests;
    /* string dedup (PLAN.md §6) */
    struct trace_u64map string_index; /* hash -> first id with that hash */
    struct plan_writer_string *strings;
    size_t cap_strings;
    char *arena;
    size_t arena_len, arena_cap;
    /* components, for updates and the DB connection check at close */
    struct plan_component *components;
    uint64_t *db_conns_used; /* per component: highest DB connection index used + 1 */
    size_t cap_components;
};

static int plan_writer_fail(struct plan_writer *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int plan_writer_fail(struct plan_writer *w, const char *fmt, ...)
{
    if (w->failed)
        return -1; /* keep the first reason */
    int n = snprintf(w->err, sizeof w->err, "%s: ", w->path);
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof w->err)
        vsnprintf(w->err + n, sizeof w->err - (size_t)n, fmt, ap);
    va_end(ap);
    w->failed = 1;
    return -1;
}

/* A byte buffer with room for need bytes (4096 at first, doubling). */
static int plan_writer_grow(uint8_t **buf, size_t *cap, size_t need)
{
    return grow_array((void **)buf, cap, need, 1, 4096);
}

static int plan_writer_write_all(struct plan_writer *w, const uint8_t *buf, size_t len)
{
    while (len) {
        ssize_t n = write(w->fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return plan_writer_fail(w, "write failed at offset %llu: %s",
                                    (unsigned long long)w->offset, strerror(errno));
        buf += n;
        len -= (size_t)n;
        w->offset += (uint64_t)n;
    }
    return 0;
}

/* ---- frames (PLAN.md §3) --------------------------------------------------- */

static int plan_writer_flush_frame(struct plan_writer *w)
{
    if (!w->frame_records)
        return 0;
    size_t bound = ZSTD_compressBound(w->raw_len) + 8 + PLAN_CHUNK_PAYLOAD;
    if (plan_writer_grow(&w->zbuf, &w->zcap, bound) != 0)
        return plan_writer_fail(w, "out of memory for a %zu-byte frame", w->raw_len);
    uint8_t *z = w->zbuf + 8 + PLAN_CHUNK_PAYLOAD;
    size_t zlen = ZSTD_compress2(w->cctx, z, w->zcap - 8 - PLAN_CHUNK_PAYLOAD, w->raw, w->raw_len);
    if (ZSTD_isError(zlen))
        return plan_writer_fail(w, "zstd compression failed: %s", ZSTD_getErrorName(zlen));
    struct plan_chunk_header h = {w->seq, (uint32_t)zlen, (uint32_t)w->raw_len, w->frame_records};
    trace_put_le32(w->zbuf, PLAN_CHUNK_FRAME_MAGIC);
    trace_put_le32(w->zbuf + 4, PLAN_CHUNK_PAYLOAD);
    plan_chunk_header_pack(w->zbuf + 8, &h);
    if (plan_writer_write_all(w, w->zbuf, 8 + PLAN_CHUNK_PAYLOAD + zlen) != 0)
        return -1;
    w->seq++;
    w->raw_len = 0;
    w->frame_records = 0;
    w->prev_arrival = 0;
    return 0;
}

/* Makes room for `need` more bytes in the frame, ending the frame first when
 * they would take a non-empty frame past frame_bytes. */
static int plan_writer_make_room(struct plan_writer *w, size_t need)
{
    if (w->frame_records && w->raw_len + need > w->frame_bytes && plan_writer_flush_frame(w) != 0)
        return -1;
    if (plan_writer_grow(&w->raw, &w->raw_cap, w->raw_len + need) != 0)
        return plan_writer_fail(w, "out of memory for the frame buffer");
    return 0;
}

/* Appends a record (type, length, body) to the current frame. */
static int plan_writer_emit(struct plan_writer *w, uint8_t type, const uint8_t *body, size_t len)
{
    if (len + 11 > PLAN_FRAME_MAX_RAW)
        return plan_writer_fail(w, "a %s record of %zu bytes exceeds the %u-byte frame limit",
                                plan_record_name(type), len, PLAN_FRAME_MAX_RAW);
    if (plan_writer_make_room(w, 1 + 10 + len) != 0)
        return -1;
    uint8_t *out = w->raw + w->raw_len;
    out[0] = type;
    size_t n = 1 + trace_put_varint(out + 1, len);
    if (len)
        memcpy(out + n, body, len);
    w->raw_len += n + len;
    w->frame_records++;
    return 0;
}

static uint8_t *plan_writer_scratch(struct plan_writer *w, size_t bound)
{
    if (plan_writer_grow(&w->body, &w->body_cap, bound) != 0) {
        plan_writer_fail(w, "out of memory for a %zu-byte record", bound);
        return NULL;
    }
    return w->body;
}

/* ---- header (PLAN.md §2) ----------------------------------------------------- */

static size_t plan_header_put_field(uint8_t *out, uint16_t tag, const void *data, uint32_t len)
{
    trace_put_le16(out, tag);
    trace_put_le32(out + 2, len);
    if (len)
        memcpy(out + 6, data, len);
    return 6 + (size_t)len;
}

static int plan_writer_header(struct plan_writer *w, const char *recording_id,
                              const struct trace_cpu_score *scores, uint32_t nscores)
{
    uint8_t buf[8 + 16 + 6 + PLAN_RECORDING_ID_MAX + TRACE_MAX_CPU_SCORES * (6 + 32) + 4];
    size_t n = 8;
    memcpy(buf + n, PLAN_FILE_MAGIC, 8);
    trace_put_le16(buf + n + 8, PLAN_FORMAT_MAJOR);
    trace_put_le16(buf + n + 10, PLAN_FORMAT_MINOR);
    trace_put_le32(buf + n + 12, 0);
    n += 16;
    n += plan_header_put_field(buf + n, PLAN_HDR_RECORDING_ID, recording_id,
                               (uint32_t)strlen(recording_id));
    for (uint32_t i = 0; i < nscores; i++) {
        uint8_t v[32];
        memset(v, 0, sizeof v);
        memcpy(v, scores[i].name, strnlen(scores[i].name, 23));
        uint64_t bits;
        memcpy(&bits, &scores[i].seconds, 8);
        trace_put_le64(v + 24, bits);
        n += plan_header_put_field(buf + n, PLAN_HDR_CPU_SCORE, v, 32);
    }
    trace_put_le32(buf + n, trace_crc32(buf + 8, n - 8));
    n += 4;
    trace_put_le32(buf, PLAN_HEADER_FRAME_MAGIC);
    trace_put_le32(buf + 4, (uint32_t)(n - 8));
    return plan_writer_write_all(w, buf, n);
}

/* ---- public API ---------------------------------------------------------------- */

static void plan_writer_free(struct plan_writer *w)
{
    if (w->out.dirfd >= 0)
        out_file_abort(&w->out);
    ZSTD_freeCCtx(w->cctx);
    trace_u64map_free(&w->string_index);
    free(w->strings);
    free(w->arena);
    free(w->components);
    free(w->db_conns_used);
    free(w->raw);
    free(w->body);
    free(w->zbuf);
    free(w->path);
    free(w);
}

static void plan_copy_err(char *err, size_t errlen, const char *msg)
{
    if (err && errlen)
        snprintf(err, errlen, "%s", msg);
}

struct plan_writer *plan_writer_open(const char *path, const char *recording_id,
                                     const struct trace_cpu_score *scores, uint32_t nscores,
                                     char *err, size_t errlen)
{
    struct plan_writer *w = calloc(1, sizeof *w);
    if (!w || !(w->path = strdup(path))) {
        if (err && errlen)
            snprintf(err, errlen, "%s: out of memory", path);
        free(w);
        return NULL;
    }
    w->fd = w->out.fd = w->out.dirfd = -1;
    w->frame_bytes = PLAN_FRAME_DEFAULT_RAW;
    w->d.strings = 1; /* id 0 is "" */
    trace_u64map_init(&w->string_index);
    if (!recording_id)
        recording_id = "";
    if (strlen(recording_id) > PLAN_RECORDING_ID_MAX) {
        plan_writer_fail(w, "recording id is longer than %u bytes", PLAN_RECORDING_ID_MAX);
        goto fail;
    }
    if (nscores > TRACE_MAX_CPU_SCORES) {
        plan_writer_fail(w, "%u CPU scores (at most %u)", nscores, TRACE_MAX_CPU_SCORES);
        goto fail;
    }
    /* mode 0600: plans hold SQL and paths */
    char oerr[768];
    if (out_file_begin(&w->out, path, 0600, oerr, sizeof oerr) != 0) {
        snprintf(w->err, sizeof w->err, "%s", oerr);
        w->failed = 1;
        goto fail;
    }
    w->fd = w->out.fd;
    w->cctx = ZSTD_createCCtx();
    if (!w->cctx || ZSTD_isError(ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_checksumFlag, 1)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_contentSizeFlag, 1))) {
        plan_writer_fail(w, "cannot set up zstd");
        goto fail;
    }
    if (plan_writer_header(w, recording_id, scores, nscores) != 0)
        goto fail;
    return w;
fail:
    plan_copy_err(err, errlen, w->err);
    plan_writer_free(w);
    return NULL;
}

int plan_writer_set_frame_bytes(struct plan_writer *w, size_t bytes)
{
    if (bytes < PLAN_WRITER_MIN_FRAME || bytes > PLAN_FRAME_MAX_RAW)
        return plan_writer_fail(w, "frame size %zu is outside [%u, %u]", bytes,
                                PLAN_WRITER_MIN_FRAME, PLAN_FRAME_MAX_RAW);
    w->frame_bytes = bytes;
    return 0;
}

const char *plan_writer_error(const struct plan_writer *w)
{
    return w->err[0] ? w->err : NULL;
}

/* A 64-bit hash of the string's bytes (for the dedup table only; equality
 * is always confirmed on the bytes). */
static uint64_t plan_hash(const char *s, size_t len)
{
    uint64_t h = 0x9E3779B97F4A7C15ull ^ len;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t v;
        memcpy(&v, s + i, 8);
        h = (h ^ v) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    uint64_t tail = 0;
    memcpy(&tail, s + i, len - i);
    h = (h ^ tail) * 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 29);
}

uint32_t plan_writer_string(struct plan_writer *w, const char *s, size_t len)
{
    if (w->failed)
        return UINT32_MAX;
    if (len == 0)
        return 0;
    if (len > PLAN_STRING_MAX) {
        plan_writer_fail(w, "a string of %zu bytes exceeds the %u-byte limit", len,
                         PLAN_STRING_MAX);
        return UINT32_MAX;
    }
    uint64_t h = plan_hash(s, len);
    uint32_t *head = trace_u64map_find(&w->string_index, h);
    for (uint32_t id = head ? *head : 0; id; id = w->strings[id].next)
        if (w->strings[id].len == len && !memcmp(w->arena + w->strings[id].offset, s, len))
            return id;
    char why[160];
    if (plan_check_room(&w->d, PLAN_REC_STRING, 0, why, sizeof why) != 0) {
        plan_writer_fail(w, "%s", why);
        return UINT32_MAX;
    }
    uint32_t id = w->d.strings;
    if (grow_array((void **)&w->strings, &w->cap_strings, (size_t)id + 1, sizeof *w->strings,
                   1024) != 0) {
        plan_writer_fail(w, "out of memory for the string table");
        return UINT32_MAX;
    }
    if (plan_writer_grow((uint8_t **)&w->arena, &w->arena_cap, w->arena_len + len) != 0) {
        plan_writer_fail(w, "out of memory for the string table");
        return UINT32_MAX;
    }
    int inserted;
    uint32_t *slot = trace_u64map_upsert(&w->string_index, h, id, &inserted);
    if (!slot) {
        plan_writer_fail(w, "out of memory for the string table");
        return UINT32_MAX;
    }
    w->strings[id] = (struct plan_writer_string){w->arena_len, (uint32_t)len, inserted ? 0 : *slot};
    *slot = id;
    memcpy(w->arena + w->arena_len, s, len);
    w->arena_len += len;
    uint8_t *b = plan_writer_scratch(w, 10 + len);
    if (!b)
        return UINT32_MAX;
    size_t n = trace_put_varint(b, len);
    memcpy(b + n, s, len);
    if (plan_writer_emit(w, PLAN_REC_STRING, b, n + len) != 0)
        return UINT32_MAX;
    w->d.strings++;
    return id;
}

static int plan_writer_check(struct plan_writer *w, int rc, const char *what, const char *why)
{
    if (rc != 0)
        plan_writer_fail(w, "%s: %s", what, why);
    return rc;
}

uint32_t plan_writer_component(struct plan_writer *w, const struct plan_component *c)
{
    char why[256];
    if (w->failed || plan_writer_check(w, plan_check_component(&w->d, c, why, sizeof why),
                                       "component", why) != 0)
        return UINT32_MAX;
    if (plan_writer_check(w, plan_check_room(&w->d, PLAN_REC_COMPONENT, 0, why, sizeof why),
                          "component", why) != 0)
        return UINT32_MAX;
    uint32_t id = w->d.components;
    if (id >= w->cap_components) {
        size_t ncap = w->cap_components ? w->cap_components * 2 : 16;
        void *a = realloc(w->components, ncap * sizeof *w->components);
        if (a)
            w->components = a;
        void *b = realloc(w->db_conns_used, ncap * sizeof *w->db_conns_used);
        if (b)
            w->db_conns_used = b;
        if (!a || !b) {
            plan_writer_fail(w, "out of memory for the component table");
            return UINT32_MAX;
        }
        w->cap_components = ncap;
    }
    uint8_t *b = plan_writer_scratch(w, plan_component_bound());
    if (!b || plan_writer_emit(w, PLAN_REC_COMPONENT, b, plan_encode_component(b, c)) != 0)
        return UINT32_MAX;
    w->components[id] = *c;
    w->db_conns_used[id] = 0;
    w->d.components++;
    return id;
}

int plan_writer_update_component(struct plan_writer *w, uint32_t id, const struct plan_component *c)
{
    char why[256];
    if (w->failed)
        return -1;
    if (id >= w->d.components)
        return plan_writer_fail(w, "component update: component %u is not defined (%u so far)", id,
                                w->d.components);
    if (plan_writer_check(w, plan_check_component(&w->d, c, why, sizeof why), "component update",
                          why) != 0)
        return -1;
    uint8_t *b = plan_writer_scratch(w, 10 + plan_component_bound());
    if (!b)
        return -1;
    size_t n = trace_put_varint(b, id);
    n += plan_encode_component(b + n, c);
    if (plan_writer_emit(w, PLAN_REC_COMPONENT_UPDATE, b, n) != 0)
        return -1;
    w->components[id] = *c;
    return 0;
}

uint32_t plan_writer_file(struct plan_writer *w, const struct plan_file *f)
{
    char why[256];
    if (w->failed ||
        plan_writer_check(w, plan_check_file(f, &w->d, why, sizeof why), "file", why) != 0 ||
        plan_writer_check(w, plan_check_room(&w->d, PLAN_REC_FILE, 0, why, sizeof why), "file",
                          why) != 0)
        return UINT32_MAX;
    uint8_t b[20];
    size_t n = trace_put_varint(b, f->path);
    n += trace_put_varint(b + n, f->initial_size);
    if (plan_writer_emit(w, PLAN_REC_FILE, b, n) != 0)
        return UINT32_MAX;
    return w->d.files++;
}

uint32_t plan_writer_lock(struct plan_writer *w, const struct plan_lock *l)
{
    char why[160];
    if (w->failed || plan_writer_check(w, plan_check_room(&w->d, PLAN_REC_LOCK, 0, why, sizeof why),
                                       "lock", why) != 0)
        return UINT32_MAX;
    uint8_t b[12];
    b[0] = l->kind;
    size_t n = 1 + trace_put_varint(b + 1, l->recorded_id);
    if (plan_writer_emit(w, PLAN_REC_LOCK, b, n) != 0)
        return UINT32_MAX;
    return w->d.locks++;
}

uint32_t plan_writer_db_endpoint(struct plan_writer *w, const struct plan_db_endpoint *e)
{
    char why[256];
    if (w->failed ||
        plan_writer_check(w, plan_check_string(&w->d, "address", e->address, why, sizeof why),
                          "DB endpoint", why) != 0 ||
        plan_writer_check(w, plan_check_room(&w->d, PLAN_REC_DB_ENDPOINT, 0, why, sizeof why),
                          "DB endpoint", why) != 0)
        return UINT32_MAX;
    uint8_t b[10];
    size_t n = trace_put_varint(b, e->address);
    if (plan_writer_emit(w, PLAN_REC_DB_ENDPOINT, b, n) != 0)
        return UINT32_MAX;
    return w->d.db_endpoints++;
}

uint32_t plan_writer_block(struct plan_writer *w, const struct plan_block *b,
                           const struct plan_op *ops, const struct plan_segment *segs,
                           uint32_t nsegs)
{
    char why[256];
    if (w->failed)
        return UINT32_MAX;
    if (plan_writer_check(w, plan_check_room(&w->d, PLAN_REC_BLOCK, 0, why, sizeof why), "block",
                          why) != 0)
        return UINT32_MAX;
    /* the block's name is formatted only for a refusal (formatting it for
     * every block was 5% of analyze's instructions) */
    if (plan_check_block(&w->d, b, ops, segs, nsegs, why, sizeof why) != 0) {
        plan_writer_fail(w, "block %u: %s", w->d.blocks, why);
        return UINT32_MAX;
    }
    uint64_t *used = &w->db_conns_used[b->component];
    for (uint32_t i = 0; i < b->nops; i++)
        if (ops[i].kind == PLAN_OP_DB && (uint64_t)ops[i].a.db.conn + 1 > *used)
            *used = (uint64_t)ops[i].a.db.conn + 1;
    uint8_t *body = plan_writer_scratch(w, plan_block_bound(b->nops, nsegs));
    if (!body || plan_writer_emit(w, PLAN_REC_BLOCK, body,
                                  plan_encode_block(body, b, ops, segs, nsegs)) != 0)
        return UINT32_MAX;
    w->d.ops += b->nops;
    w->d.segments += nsegs;
    return w->d.blocks++;
}

int plan_writer_request(struct plan_writer *w, const struct plan_request *r)
{
    char why[256];
    if (w->failed)
        return -1;
    if (plan_writer_check(w, plan_check_request(&w->d, r, why, sizeof why), "request", why) != 0 ||
        plan_writer_check(w,
                          plan_check_room(&w->d, PLAN_REC_REQUEST, w->nrequests, why, sizeof why),
                          "request", why) != 0)
        return -1;
    /* The arrival is predicted from the previous request of the frame: make
     * room first so the frame cannot end between prediction and append. */
    if (plan_writer_make_room(w, PLAN_REQUEST_BOUND) != 0)
        return -1;
    uint8_t b[PLAN_REQUEST_BOUND];
    size_t n = trace_put_varint(b, trace_zigzag(r->arrival_ns - w->prev_arrival));
    n += trace_put_varint(b + n, r->block);
    n += trace_put_varint(b + n, r->label);
    n += trace_put_varint(b + n, r->session);
    n += trace_put_varint(b + n, r->connection);
    n += trace_put_varint(b + n, r->think_ns);
    if (plan_writer_emit(w, PLAN_REC_REQUEST, b, n) != 0)
        return -1;
    w->prev_arrival = r->arrival_ns;
    w->nrequests++;
    return 0;
}

int plan_writer_summary(struct plan_writer *w, double coverage, uint64_t unmatched_bytes,
                        uint32_t nviolations, const char *violations_text)
{
    if (w->failed)
        return -1;
    if (!(coverage >= 0.0 && coverage <= 1.0))
        return plan_writer_fail(w, "summary: coverage %g is not within [0, 1]", coverage);
    uint32_t text =
        violations_text ? plan_writer_string(w, violations_text, strlen(violations_text)) : 0;
    if (text == UINT32_MAX)
        return -1;
    uint8_t b[8 + 30];
    uint64_t bits;
    memcpy(&bits, &coverage, 8);
    trace_put_le64(b, bits);
    size_t n = 8;
    n += trace_put_varint(b + n, unmatched_bytes);
    n += trace_put_varint(b + n, nviolations);
    n += trace_put_varint(b + n, text);
    return plan_writer_emit(w, PLAN_REC_SUMMARY, b, n);
}

void plan_writer_abort(struct plan_writer *w)
{
    if (w)
        plan_writer_free(w);
}

/* fsync of the directory so the rename survives a crash (best effort: some
 * file systems refuse to sync a directory). */
static void plan_sync_dir(const char *path)
{
    char *copy = strdup(path);
    if (!copy)
        return;
    int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
    free(copy);
}

int plan_writer_close(struct plan_writer *w, char *err, size_t errlen)
{
    int rc = -1;
    if (w->failed)
        goto out;
    for (uint32_t c = 0; c < w->d.components; c++)
        if (w->db_conns_used[c] > w->components[c].db_conns) {
            plan_writer_fail(w,
                             "component %u: blocks use DB connection %u, but the component "
                             "has db_conns = %u",
                             c, (unsigned)(w->db_conns_used[c] - 1), w->components[c].db_conns);
            goto out;
        }
    uint8_t b[9 * 10];
    size_t n = 0;
    n += trace_put_varint(b + n, w->d.strings);
    n += trace_put_varint(b + n, w->d.components);
    n += trace_put_varint(b + n, w->d.files);
    n += trace_put_varint(b + n, w->d.locks);
    n += trace_put_varint(b + n, w->d.db_endpoints);
    n += trace_put_varint(b + n, w->d.blocks);
    n += trace_put_varint(b + n, w->d.ops);
    n += trace_put_varint(b + n, w->d.segments);
    n += trace_put_varint(b + n, w->nrequests);
    if (plan_writer_emit(w, PLAN_REC_END, b, n) != 0 || plan_writer_flush_frame(w) != 0)
        goto out;
    w->fd = -1;
    char oerr[768];
    if (out_file_commit(&w->out, oerr, sizeof oerr) != 0) { /* syncs, closes, renames */
        snprintf(w->err, sizeof w->err, "%s", oerr);
        w->failed = 1;
        goto out;
    }
    plan_sync_dir(w->path);
    rc = 0;
out:
    if (rc != 0)
        plan_copy_err(err, errlen, w->err);
    plan_writer_free(w);
    return rc;
}

/* ---- whole plans ------------------------------------------------------------------ */

static const char *plan_str_bytes(const struct plan *p, uint32_t id, size_t *len)
{
    const char *s = p->strings[id] ? p->strings[id] : "";
    *len = p->string_lens ? p->string_lens[id] : strlen(s);
    return s;
}

int plan_write(const struct plan *p, const char *path, char *err, size_t errlen)
{
    struct plan_writer *w = plan_writer_open(
        path, p->recording_id, p->cpu_scores,
        p->ncpu_scores < TRACE_MAX_CPU_SCORES ? p->ncpu_scores : TRACE_MAX_CPU_SCORES, err, errlen);
    if (!w)
        return -1;
    uint32_t *ids = calloc(p->nstrings ? p->nstrings : 1, sizeof *ids);
    struct plan_op *ops = NULL;
    size_t cap_ops = 0;
    if (!ids) {
        plan_writer_fail(w, "out of memory");
        goto out;
    }
    /* Ids are remapped: the writer deduplicates strings, so a plan holding
     * the same string twice comes back with one id for both. */
#define PLAN_SID(x) ((x) < p->nstrings ? ids[(x)] : (x)) /* dangling: the writer says so */
    for (uint32_t i = 1; i < p->nstrings && !w->failed; i++) {
        size_t len;
        const char *s = plan_str_bytes(p, i, &len);
        ids[i] = plan_writer_string(w, s, len);
    }
    for (uint32_t i = 0; i < p->ncomponents && !w->failed; i++) {
        struct plan_component c = p->components[i];
        c.name = PLAN_SID(c.name);
        c.host = PLAN_SID(c.host);
        plan_writer_component(w, &c);
    }
    for (uint32_t i = 0; i < p->nfiles && !w->failed; i++) {
        struct plan_file f = p->files[i];
        f.path = PLAN_SID(f.path);
        plan_writer_file(w, &f);
    }
    for (uint32_t i = 0; i < p->nlocks && !w->failed; i++)
        plan_writer_lock(w, &p->locks[i]);
    for (uint32_t i = 0; i < p->ndb_endpoints && !w->failed; i++) {
        struct plan_db_endpoint e = p->db_endpoints[i];
        e.address = PLAN_SID(e.address);
        plan_writer_db_endpoint(w, &e);
    }
    for (uint32_t bi = 0; bi < p->nblocks && !w->failed; bi++) {
        struct plan_block b = p->blocks[bi];
        if ((uint64_t)b.first_op + b.nops > p->nops) {
            plan_writer_fail(w, "block %u: ops [%u, +%u) run past the plan's %llu ops", bi,
                             b.first_op, b.nops, (unsigned long long)p->nops);
            break;
        }
        if (b.nops > cap_ops) {
            free(ops);
            cap_ops = b.nops;
            ops = malloc(cap_ops * sizeof *ops);
        }
        /* The block's segments: the span its CALL ops cover, kept as it is
         * (so a plan read back is written back unchanged). */
        uint64_t seg_lo = UINT64_MAX, seg_hi = 0;
        for (uint32_t i = 0; i < b.nops; i++) {
            const struct plan_op *o = &p->ops[b.first_op + i];
            if (o->kind != PLAN_OP_CALL || !o->a.call.nsegments)
                continue;
            uint64_t first = o->a.call.first_segment, end = first + o->a.call.nsegments;
            if (end > p->nsegments) {
                plan_writer_fail(w,
                                 "block %u: op %u (CALL): segments [%llu, +%u) run past the "
                                 "plan's %llu segments",
                                 bi, i, (unsigned long long)first, o->a.call.nsegments,
                                 (unsigned long long)p->nsegments);
                break;
            }
            seg_lo = first < seg_lo ? first : seg_lo;
            seg_hi = end > seg_hi ? end : seg_hi;
        }
        if (w->failed)
            break;
        if (seg_lo == UINT64_MAX)
            seg_lo = seg_hi = 0;
        if (seg_hi - seg_lo > UINT32_MAX) {
            plan_writer_fail(w, "block %u: too many segments", bi);
            break;
        }
        if (b.nops && !ops) {
            plan_writer_fail(w, "out of memory");
            break;
        }
        for (uint32_t i = 0; i < b.nops; i++) {
            struct plan_op o = p->ops[b.first_op + i];
            if (o.kind == PLAN_OP_DB) {
                o.a.db.sql = PLAN_SID(o.a.db.sql);
                o.a.db.params = PLAN_SID(o.a.db.params);
            } else if (o.kind == PLAN_OP_EXTERNAL) {
                o.a.external.host = PLAN_SID(o.a.external.host);
            } else if (o.kind == PLAN_OP_CALL && o.a.call.nsegments) {
                o.a.call.first_segment -= (uint32_t)seg_lo;
            }
            ops[i] = o;
        }
        b.label = PLAN_SID(b.label);
        plan_writer_block(w, &b, ops, p->segments + seg_lo, (uint32_t)(seg_hi - seg_lo));
    }
    for (uint64_t i = 0; i < p->nrequests && !w->failed; i++) {
        struct plan_request r = p->requests[i];
        r.label = PLAN_SID(r.label);
        plan_writer_request(w, &r);
    }
    if (!w->failed) {
        const char *text = NULL;
        size_t len = 0;
        if (p->violations_text >= p->nstrings)
            plan_writer_fail(w,
                             "summary: violations text names string %u, but only %u strings "
                             "are defined",
                             p->violations_text, p->nstrings);
        else if (p->violations_text)
            text = plan_str_bytes(p, p->violations_text, &len);
        if (!w->failed)
            plan_writer_summary(w, p->coverage, p->unmatched_bytes, p->nviolations, text);
    }
#undef PLAN_SID
out:
    free(ids);
    free(ops);
    if (w->failed) {
        plan_copy_err(err, errlen, w->err);
        plan_writer_abort(w);
        return -1;
    }
    return plan_writer_close(w, err, errlen);
}
