/* plan_reader.c - loads a replay plan (PLAN.md) into a struct plan for the
 * replayer and `preplay info`: reads frame by frame (one frame in memory
 * besides the plan itself), verifies the header, frame header CRCs, zstd
 * content checksums and record counts, and checks every reference against
 * what was defined before it with the writer's own checks (plan_codec.c).
 * Any damage gives NULL and one line naming the file, the frame's byte
 * offset and the record (index in the frame, type and id). It must never
 * trust a size read from the file before checking it against the file size
 * and the format's limits, and never return a plan with a dangling id. */
#include "plan.h"
#include "plan_codec.h"
#include "mem_budget.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>
#include <zstd_errors.h>

struct plan_load {
    const char *path;
    char *err;
    size_t errlen;
    int fd;
    uint64_t file_size, pos;
    struct plan *p;
    size_t cap_strings, cap_components, cap_files, cap_locks, cap_endpoints, cap_blocks;
    size_t cap_ops, cap_segments, cap_requests, cap_string_lens, cap_conn_use;
    struct plan_defined d;
    int have_end;
    uint32_t expected_seq;
    /* the record being decoded, for messages */
    uint64_t frame_offset;
    uint32_t record_index;
    uint64_t prev_arrival;
    ZSTD_DCtx *dctx;
    uint8_t *zbuf, *raw;
    size_t zcap, raw_cap;
    /* per component: highest DB connection used + 1, and where */
    struct plan_conn_use {
        uint64_t used, frame_offset;
        uint32_t record_index, block, op;
    } * conn_use;
    /* memory the plan takes (its arrays and strings) and the most it may:
     * a plan of 150 KB once decoded to 3.5 GB (2^26 ops of 48 bytes) */
    struct mem_budget mem;
    char oom[160]; /* why an allocation failed, for messages */
};

static int plan_fail(struct plan_load *L, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int plan_fail(struct plan_load *L, const char *fmt, ...)
{
    if (!L->err || !L->errlen)
        return -1;
    int n = snprintf(L->err, L->errlen, "%s: ", L->path);
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < L->errlen)
        vsnprintf(L->err + n, L->errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

/* "frame at offset N, record K (TYPE #id): why" */
static int plan_record_fail(struct plan_load *L, unsigned type, int64_t id, const char *why)
{
    char idbuf[32] = "";
    if (id >= 0)
        snprintf(idbuf, sizeof idbuf, " #%lld", (long long)id);
    return plan_fail(L, "frame at offset %llu, record %u (%s%s): %s",
                     (unsigned long long)L->frame_offset, L->record_index, plan_record_name(type),
                     idbuf, why);
}

static int plan_pread_full(int fd, void *buf, size_t len, uint64_t off)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        done += (size_t)n;
    }
    return 0;
}

/* Counts `bytes` more against the plan's memory; -1 with L->oom when
 * they would take it beyond L->mem.max. */
static int plan_charge(struct plan_load *L, uint64_t bytes)
{
    if (mem_budget_charge(&L->mem, bytes) != 0) {
        snprintf(L->oom, sizeof L->oom, "the plan needs more memory than the %.0f MB available",
                 mem_budget_mb(&L->mem));
        return -1;
    }
    return 0;
}

/* Grows array *v (element size `size`) so index n fits, within the
 * plan's memory (doubling, or only as far as that allows). */
static int plan_reserve(struct plan_load *L, void **v, size_t *cap, uint64_t n, size_t size)
{
    if (n < *cap)
        return 0;
    uint64_t ncap = *cap ? *cap * 2 : 64;
    while (ncap <= n)
        ncap *= 2;
    if (L->mem.used + (ncap - *cap) * size > L->mem.max)
        ncap = n + 1 + n / 16; /* near the limit: a smaller step */
    if (plan_charge(L, (ncap - *cap) * size) != 0 &&
        (ncap = n + 1, plan_charge(L, (ncap - *cap) * size) != 0))
        return -1;
    void *a = realloc(*v, (size_t)ncap * size);
    if (!a) {
        snprintf(L->oom, sizeof L->oom, "out of memory");
        return -1;
    }
    *v = a;
    *cap = (size_t)ncap;
    return 0;
}
#define PLAN_PUSH(L, arr, cap, n) plan_reserve((L), (void **)&(arr), &(L)->cap, (n), sizeof *(arr))

/* ---- header (PLAN.md §2) --------------------------------------------------------- */

static int plan_read_header(struct plan_load *L)
{
    uint8_t pre[24];
    if (L->file_size < 24 || plan_pread_full(L->fd, pre, 24, 0) != 0) {
        if (!L->file_size)
            return plan_fail(L, "not a preplay plan (empty file)");
        return plan_fail(L, "not a preplay plan (%llu bytes, too short)",
                         (unsigned long long)L->file_size);
    }
    if (trace_get_le32(pre) != PLAN_HEADER_FRAME_MAGIC || memcmp(pre + 8, PLAN_FILE_MAGIC, 8)) {
        if (trace_get_le32(pre) == TRACE_HEADER_FRAME_MAGIC &&
            !memcmp(pre + 8, TRACE_FILE_MAGIC, 8))
            return plan_fail(L, "not a preplay plan (this is a trace file; `preplay analyze` "
                                "turns traces into a plan)");
        return plan_fail(L, "not a preplay plan (bad magic)");
    }
    struct plan *p = L->p;
    p->version_major = trace_get_le16(pre + 16);
    p->version_minor = trace_get_le16(pre + 18);
    if (p->version_major != PLAN_FORMAT_MAJOR)
        return plan_fail(L, "unknown format major version %u (this preplay reads %u)",
                         p->version_major, PLAN_FORMAT_MAJOR);
    uint32_t size = trace_get_le32(pre + 4);
    if (size < 20 || size > PLAN_HEADER_MAX_PAYLOAD)
        return plan_fail(L, "header size %u is out of range", size);
    if ((uint64_t)size + 8 > L->file_size)
        return plan_fail(L, "truncated header (%u bytes announced, file has %llu)", size,
                         (unsigned long long)L->file_size);
    uint8_t *pl = malloc(size);
    if (!pl || plan_pread_full(L->fd, pl, size, 8) != 0) {
        free(pl);
        return plan_fail(L, "cannot read the header: %s", pl ? strerror(errno) : "out of memory");
    }
    int rc = -1;
    if (trace_get_le32(pl + size - 4) != trace_crc32(pl, size - 4)) {
        plan_fail(L, "header checksum mismatch");
        goto out;
    }
    for (size_t at = 16; at < size - 4;) {
        if (size - 4 - at < 6) {
            plan_fail(L, "header field at offset %zu is truncated", 8 + at);
            goto out;
        }
        uint16_t tag = trace_get_le16(pl + at);
        uint32_t len = trace_get_le32(pl + at + 2);
        const uint8_t *v = pl + at + 6;
        if (len > size - 4 - at - 6) {
            plan_fail(L, "header field %u at offset %zu runs past the header", tag, 8 + at);
            goto out;
        }
        int bad = 0;
        if (tag == PLAN_HDR_RECORDING_ID) {
            bad = len > PLAN_RECORDING_ID_MAX;
            if (!bad) {
                memcpy(p->recording_id, v, len);
                p->recording_id[len] = '\0';
            }
        } else if (tag == PLAN_HDR_CPU_SCORE) {
            bad = len < 32;
            if (!bad && p->ncpu_scores < TRACE_MAX_CPU_SCORES) {
                struct trace_cpu_score *s = &p->cpu_scores[p->ncpu_scores++];
                memcpy(s->name, v, 23);
                s->name[23] = '\0';
                uint64_t bits = trace_get_le64(v + 24);
                memcpy(&s->seconds, &bits, 8);
            }
        } /* other tags: a later minor version; skipped */
        if (bad) {
            plan_fail(L, "header field %u at offset %zu has a bad length (%u bytes)", tag, 8 + at,
                      len);
            goto out;
        }
        at += 6 + (size_t)len;
    }
    L->pos = 8 + (uint64_t)size;
    rc = 0;
out:
    free(pl);
    return rc;
}

/* ---- records (PLAN.md §4-§5) ------------------------------------------------------- */

static int plan_add_string(struct plan_load *L, const uint8_t *s, uint32_t len)
{
    struct plan *p = L->p;
    if (PLAN_PUSH(L, p->strings, cap_strings, p->nstrings) != 0)
        return -1;
    if (PLAN_PUSH(L, p->string_lens, cap_string_lens, p->nstrings) != 0)
        return -1;
    if (plan_charge(L, (uint64_t)len + 1) != 0) /* malloc's overhead: in the slack */
        return -1;
    char *c = malloc((size_t)len + 1);
    if (!c) {
        snprintf(L->oom, sizeof L->oom, "out of memory");
        return -1;
    }
    if (len)
        memcpy(c, s, len);
    c[len] = '\0';
    p->strings[p->nstrings] = c;
    p->string_lens[p->nstrings] = len;
    p->nstrings++;
    L->d.strings = p->nstrings;
    return 0;
}

static int plan_decode_block(struct plan_load *L, struct plan_cursor *c)
{
    struct plan *p = L->p;
    uint32_t id = L->d.blocks;
    char why[320];
    struct plan_block b;
    uint32_t nsegs;
    memset(&b, 0, sizeof b);
    if (plan_decode_block_head(c, &b, &nsegs) != 0)
        return plan_record_fail(L, PLAN_REC_BLOCK, id, "truncated block header");
    if (plan_check_block_counts(&L->d, b.nops, nsegs, why, sizeof why) != 0)
        return plan_record_fail(L, PLAN_REC_BLOCK, id, why);
    /* Each op takes at least 2 bytes, each segment 3: refuse counts the record cannot hold
     * before allocating for them. */
    if ((uint64_t)b.nops * 2 + (uint64_t)nsegs * 3 > (uint64_t)(c->end - c->p)) {
        snprintf(why, sizeof why, "%u ops and %u segments do not fit in the record", b.nops, nsegs);
        return plan_record_fail(L, PLAN_REC_BLOCK, id, why);
    }
    if ((b.nops && PLAN_PUSH(L, p->ops, cap_ops, L->d.ops + b.nops - 1) != 0) ||
        (nsegs && PLAN_PUSH(L, p->segments, cap_segments, L->d.segments + nsegs - 1) != 0) ||
        PLAN_PUSH(L, p->blocks, cap_blocks, id) != 0)
        return plan_record_fail(L, PLAN_REC_BLOCK, id, L->oom);
    struct plan_op *ops = p->ops + L->d.ops;
    struct plan_segment *segs = p->segments + L->d.segments;
    for (uint32_t i = 0; i < b.nops; i++) {
        char w2[256];
        if (plan_decode_op(c, &ops[i], w2, sizeof w2) != 0) {
            snprintf(why, sizeof why, "op %u: %s", i, w2);
            return plan_record_fail(L, PLAN_REC_BLOCK, id, why);
        }
    }
    for (uint32_t i = 0; i < nsegs; i++)
        if (plan_decode_segment(c, &segs[i]) != 0) {
            snprintf(why, sizeof why, "segment %u: truncated", i);
            return plan_record_fail(L, PLAN_REC_BLOCK, id, why);
        }
    if (plan_decode_block_tail(c, &b) != 0)
        return plan_record_fail(L, PLAN_REC_BLOCK, id, "worker or start_ns (1.1) damaged");
    if (plan_check_block(&L->d, &b, ops, segs, nsegs, why, sizeof why) != 0)
        return plan_record_fail(L, PLAN_REC_BLOCK, id, why);
    struct plan_conn_use *u = &L->conn_use[b.component];
    for (uint32_t i = 0; i < b.nops; i++) {
        if (ops[i].kind == PLAN_OP_CALL)
            ops[i].a.call.first_segment += (uint32_t)L->d.segments;
        if (ops[i].kind == PLAN_OP_DB && (uint64_t)ops[i].a.db.conn + 1 > u->used)
            *u = (struct plan_conn_use){(uint64_t)ops[i].a.db.conn + 1, L->frame_offset,
                                        L->record_index, id, i};
    }
    b.first_op = (uint32_t)L->d.ops;
    p->blocks[id] = b;
    L->d.ops += b.nops;
    L->d.segments += nsegs;
    L->d.blocks++;
    p->nblocks = L->d.blocks;
    p->nops = L->d.ops;
    p->nsegments = L->d.segments;
    return 0;
}

static int plan_decode_end(struct plan_load *L, struct plan_cursor *c)
{
    uint64_t want[9],
        have[9] = {L->d.strings, L->d.components, L->d.files,    L->d.locks,     L->d.db_endpoints,
                   L->d.blocks,  L->d.ops,        L->d.segments, L->p->nrequests};
    static const char *const names[9] = {"strings", "components",   "files",
                                         "locks",   "DB endpoints", "blocks",
                                         "ops",     "segments",     "requests"};
    for (int i = 0; i < 9; i++)
        want[i] = plan_cursor_varint(c);
    if (c->bad)
        return plan_record_fail(L, PLAN_REC_END, -1, "truncated");
    for (int i = 0; i < 9; i++)
        if (want[i] != have[i]) {
            char why[160];
            snprintf(why, sizeof why, "the plan has %llu %s, END says %llu",
                     (unsigned long long)have[i], names[i], (unsigned long long)want[i]);
            return plan_record_fail(L, PLAN_REC_END, -1, why);
        }
    L->have_end = 1;
    return 0;
}

static int plan_decode_record(struct plan_load *L, unsigned type, struct plan_cursor *c)
{
    struct plan *p = L->p;
    char why[320];
    if (L->have_end)
        return plan_record_fail(L, type, -1, "record after the END record");
    if (plan_check_room(&L->d, type, p->nrequests, why, sizeof why) != 0)
        return plan_record_fail(L, type, -1, why);
    switch (type) {
    case PLAN_REC_STRING: {
        uint64_t len = plan_cursor_varint(c);
        if (!c->bad && plan_check_limit("length", len, PLAN_MAX_STRING_BYTES, why, sizeof why))
            return plan_record_fail(L, type, p->nstrings, why);
        if (c->bad || len > (uint64_t)(c->end - c->p))
            return plan_record_fail(L, type, p->nstrings, "string runs past the record");
        if (p->nstrings == UINT32_MAX || plan_add_string(L, c->p, (uint32_t)len) != 0)
            return plan_record_fail(L, type, p->nstrings, L->oom);
        return 0;
    }
    case PLAN_REC_COMPONENT:
    case PLAN_REC_COMPONENT_UPDATE: {
        struct plan_component comp;
        uint32_t id = type == PLAN_REC_COMPONENT ? L->d.components : plan_cursor_u32v(c);
        if (plan_decode_component(c, &comp) != 0)
            return plan_record_fail(L, type, id, "truncated or out-of-range field");
        if (type == PLAN_REC_COMPONENT_UPDATE && id >= L->d.components) {
            snprintf(why, sizeof why, "component %u is not defined (%u so far)", id,
                     L->d.components);
            return plan_record_fail(L, type, -1, why);
        }
        if (plan_check_component(&L->d, &comp, why, sizeof why) != 0)
            return plan_record_fail(L, type, id, why);
        if (type == PLAN_REC_COMPONENT) {
            if (L->d.components == UINT32_MAX - 1 ||
                PLAN_PUSH(L, p->components, cap_components, id) != 0 ||
                PLAN_PUSH(L, L->conn_use, cap_conn_use, id) != 0)
                return plan_record_fail(L, type, id, L->oom);
            memset(&L->conn_use[id], 0, sizeof *L->conn_use);
            p->ncomponents = ++L->d.components;
        }
        p->components[id] = comp;
        return 0;
    }
    case PLAN_REC_FILE: {
        struct plan_file f;
        f.path = plan_cursor_u32v(c);
        f.initial_size = plan_cursor_varint(c);
        if (c->bad)
            return plan_record_fail(L, type, L->d.files, "truncated or out-of-range field");
        if (plan_check_file(&f, &L->d, why, sizeof why) != 0)
            return plan_record_fail(L, type, L->d.files, why);
        if (L->d.files == UINT32_MAX - 1 || PLAN_PUSH(L, p->files, cap_files, L->d.files) != 0)
            return plan_record_fail(L, type, L->d.files, L->oom);
        p->files[L->d.files] = f;
        p->nfiles = ++L->d.files;
        return 0;
    }
    case PLAN_REC_LOCK: {
        struct plan_lock l;
        l.kind = plan_cursor_u8(c);
        l.recorded_id = plan_cursor_varint(c);
        if (c->bad)
            return plan_record_fail(L, type, L->d.locks, "truncated");
        if (L->d.locks == UINT32_MAX - 1 || PLAN_PUSH(L, p->locks, cap_locks, L->d.locks) != 0)
            return plan_record_fail(L, type, L->d.locks, L->oom);
        p->locks[L->d.locks] = l;
        p->nlocks = ++L->d.locks;
        return 0;
    }
    case PLAN_REC_DB_ENDPOINT: {
        struct plan_db_endpoint e;
        e.address = plan_cursor_u32v(c);
        if (c->bad)
            return plan_record_fail(L, type, L->d.db_endpoints, "truncated");
        if (plan_check_string(&L->d, "address", e.address, why, sizeof why) != 0)
            return plan_record_fail(L, type, L->d.db_endpoints, why);
        if (L->d.db_endpoints == UINT32_MAX - 1 ||
            PLAN_PUSH(L, p->db_endpoints, cap_endpoints, L->d.db_endpoints) != 0)
            return plan_record_fail(L, type, L->d.db_endpoints, L->oom);
        p->db_endpoints[L->d.db_endpoints] = e;
        p->ndb_endpoints = ++L->d.db_endpoints;
        return 0;
    }
    case PLAN_REC_BLOCK:
        if (L->d.blocks == UINT32_MAX - 1)
            return plan_record_fail(L, type, L->d.blocks, "too many blocks");
        return plan_decode_block(L, c);
    case PLAN_REC_REQUEST: {
        struct plan_request r;
        int64_t id = (int64_t)p->nrequests;
        r.arrival_ns = L->prev_arrival + trace_unzigzag(plan_cursor_varint(c));
        r.block = plan_cursor_u32v(c);
        r.label = plan_cursor_u32v(c);
        r.session = plan_cursor_u32v(c);
        r.connection = plan_cursor_u32v(c);
        r.think_ns = plan_cursor_varint(c);
        if (c->bad)
            return plan_record_fail(L, type, id, "truncated or out-of-range field");
        if (plan_check_request(&L->d, &r, why, sizeof why) != 0)
            return plan_record_fail(L, type, id, why);
        if (PLAN_PUSH(L, p->requests, cap_requests, p->nrequests) != 0)
            return plan_record_fail(L, type, id, L->oom);
        p->requests[p->nrequests++] = r;
        L->prev_arrival = r.arrival_ns;
        return 0;
    }
    case PLAN_REC_SUMMARY: {
        uint8_t bits[8];
        for (int i = 0; i < 8; i++)
            bits[i] = plan_cursor_u8(c);
        uint64_t u = trace_get_le64(bits);
        double coverage;
        memcpy(&coverage, &u, 8);
        uint64_t unmatched = plan_cursor_varint(c);
        uint32_t nviol = plan_cursor_u32v(c);
        uint32_t text = plan_cursor_u32v(c);
        if (c->bad)
            return plan_record_fail(L, type, -1, "truncated or out-of-range field");
        if (!(coverage >= 0.0 && coverage <= 1.0)) {
            snprintf(why, sizeof why, "coverage %g is not within [0, 1]", coverage);
            return plan_record_fail(L, type, -1, why);
        }
        if (plan_check_string(&L->d, "violations text", text, why, sizeof why) != 0)
            return plan_record_fail(L, type, -1, why);
        p->coverage = coverage;
        p->unmatched_bytes = unmatched;
        p->nviolations = nviol;
        p->violations_text = text;
        return 0;
    }
    case PLAN_REC_END:
        return plan_decode_end(L, c);
    default: /* a record type of a later minor version */
        p->skipped_records++;
        return 0;
    }
}

static int plan_decode_frame(struct plan_load *L, const uint8_t *q, const uint8_t *end,
                             uint32_t nrecords)
{
    L->prev_arrival = 0;
    for (L->record_index = 0; q < end; L->record_index++) {
        unsigned type = *q++;
        uint64_t len;
        if (type == 0)
            return plan_fail(L, "frame at offset %llu, record %u: record type 0",
                             (unsigned long long)L->frame_offset, L->record_index);
        if (trace_get_varint(&q, end, &len) != 0 || len > (uint64_t)(end - q))
            return plan_fail(L, "frame at offset %llu, record %u (%s): length runs past the frame",
                             (unsigned long long)L->frame_offset, L->record_index,
                             plan_record_name(type));
        struct plan_cursor c = {q, q + len, 0};
        if (plan_decode_record(L, type, &c) != 0)
            return -1;
        q += len; /* bytes a later minor appended to the record are skipped */
    }
    if (L->record_index != nrecords)
        return plan_fail(L, "frame at offset %llu: %u records, frame header says %u",
                         (unsigned long long)L->frame_offset, L->record_index, nrecords);
    return 0;
}

/* ---- frames (PLAN.md §3) ---------------------------------------------------------- */

static int plan_grow(uint8_t **buf, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    uint8_t *n = realloc(*buf, need);
    if (!n)
        return -1;
    *buf = n;
    *cap = need;
    return 0;
}

/* Reads the frame at L->pos. 1 = decoded a frame, 0 = skipped a frame,
 * -1 = damage. */
static int plan_read_frame(struct plan_load *L)
{
    uint64_t at = L->pos;
    L->frame_offset = at;
    uint8_t fh[8 + PLAN_CHUNK_PAYLOAD];
    if (L->file_size - at < 8 || plan_pread_full(L->fd, fh, 8, at) != 0)
        return plan_fail(L, "truncated frame at offset %llu (file ends after %llu bytes)",
                         (unsigned long long)at, (unsigned long long)L->file_size);
    uint32_t magic = trace_get_le32(fh), size = trace_get_le32(fh + 4);
    if (magic != PLAN_CHUNK_FRAME_MAGIC) {
        if (magic >= TRACE_SKIPPABLE_MAGIC_MIN && magic <= TRACE_SKIPPABLE_MAGIC_MAX &&
            magic != PLAN_HEADER_FRAME_MAGIC) {
            if ((uint64_t)size > L->file_size - at - 8)
                return plan_fail(L, "truncated frame at offset %llu (file ends after %llu bytes)",
                                 (unsigned long long)at, (unsigned long long)L->file_size);
            L->pos = at + 8 + size; /* a frame a later minor version added */
            return 0;
        }
        if (magic == TRACE_ZSTD_FRAME_MAGIC)
            return plan_fail(L, "frame at offset %llu: zstd frame without a frame header",
                             (unsigned long long)at);
        return plan_fail(L, "frame at offset %llu: bad frame magic 0x%08x", (unsigned long long)at,
                         magic);
    }
    if (L->have_end)
        return plan_fail(L, "frame at offset %llu: data after the END record",
                         (unsigned long long)at);
    if (size < PLAN_CHUNK_PAYLOAD || size > PLAN_CHUNK_MAX_PAYLOAD)
        return plan_fail(L, "frame at offset %llu: bad frame header size %u",
                         (unsigned long long)at, size);
    if (L->file_size - at - 8 < size || plan_pread_full(L->fd, fh + 8, PLAN_CHUNK_PAYLOAD, at + 8))
        return plan_fail(L, "truncated frame at offset %llu (file ends after %llu bytes)",
                         (unsigned long long)at, (unsigned long long)L->file_size);
    struct plan_chunk_header h;
    if (plan_chunk_header_unpack(fh + 8, &h) != 0)
        return plan_fail(L, "frame at offset %llu: frame header checksum mismatch",
                         (unsigned long long)at);
    if (h.seq != L->expected_seq)
        return plan_fail(L, "frame at offset %llu: frame sequence %u, expected %u",
                         (unsigned long long)at, h.seq, L->expected_seq);
    if (h.raw_size > PLAN_FRAME_MAX_RAW)
        return plan_fail(L, "frame at offset %llu: frame of %u bytes exceeds the %u-byte limit",
                         (unsigned long long)at, h.raw_size, PLAN_FRAME_MAX_RAW);
    uint64_t zoff = at + 8 + size;
    if (h.compressed_size > L->file_size - zoff)
        return plan_fail(L, "truncated frame at offset %llu (file ends after %llu bytes)",
                         (unsigned long long)at, (unsigned long long)L->file_size);
    size_t zlen = h.compressed_size;
    if (plan_grow(&L->zbuf, &L->zcap, zlen + 1) != 0 ||
        plan_grow(&L->raw, &L->raw_cap, (size_t)h.raw_size + 1) != 0)
        return plan_fail(L, "frame at offset %llu: out of memory", (unsigned long long)at);
    if (plan_pread_full(L->fd, L->zbuf, zlen, zoff) != 0)
        return plan_fail(L, "read error at offset %llu: %s", (unsigned long long)zoff,
                         strerror(errno));
    /* RFC 8878 §3.1.1.1.1: bit 2 of the frame header descriptor is the
     * Content_Checksum_flag; plans always carry one. */
    if (zlen < 5 || trace_get_le32(L->zbuf) != TRACE_ZSTD_FRAME_MAGIC)
        return plan_fail(L, "frame at offset %llu: not a zstd frame", (unsigned long long)at);
    if (!(L->zbuf[4] & 0x04))
        return plan_fail(L, "frame at offset %llu: no content checksum", (unsigned long long)at);
    size_t fsize = ZSTD_findFrameCompressedSize(L->zbuf, zlen);
    if (ZSTD_isError(fsize) || fsize != zlen)
        return plan_fail(L,
                         "frame at offset %llu: zstd frame size does not match the frame "
                         "header",
                         (unsigned long long)at);
    size_t got = ZSTD_decompressDCtx(L->dctx, L->raw, h.raw_size, L->zbuf, zlen);
    if (ZSTD_isError(got)) {
        if (ZSTD_getErrorCode(got) == ZSTD_error_checksum_wrong)
            return plan_fail(L, "frame at offset %llu: checksum mismatch", (unsigned long long)at);
        return plan_fail(L, "frame at offset %llu: corrupt zstd frame (%s)", (unsigned long long)at,
                         ZSTD_getErrorName(got));
    }
    if (got != h.raw_size)
        return plan_fail(L, "frame at offset %llu: %zu bytes decoded, frame header says %u",
                         (unsigned long long)at, got, h.raw_size);
    L->pos = zoff + zlen;
    L->expected_seq++;
    if (plan_decode_frame(L, L->raw, L->raw + got, h.nrecords) != 0)
        return -1;
    return 1;
}

/* After END: every DB connection a block used exists in its component. */
static int plan_check_conns(struct plan_load *L)
{
    for (uint32_t c = 0; c < L->d.components; c++) {
        const struct plan_conn_use *u = &L->conn_use[c];
        if (u->used > L->p->components[c].db_conns) {
            char why[256];
            L->frame_offset = u->frame_offset;
            L->record_index = u->record_index;
            snprintf(why, sizeof why,
                     "op %u (DB): connection %llu, but component %u has db_conns = %u", u->op,
                     (unsigned long long)(u->used - 1), c, L->p->components[c].db_conns);
            return plan_record_fail(L, PLAN_REC_BLOCK, u->block, why);
        }
    }
    return 0;
}

struct plan *plan_read(const char *path, char *err, size_t errlen)
{
    return plan_read_within(path, mem_budget_available(), err, errlen);
}

struct plan *plan_read_within(const char *path, uint64_t max_bytes, char *err, size_t errlen)
{
    struct plan_load L;
    memset(&L, 0, sizeof L);
    L.mem = (struct mem_budget){0, max_bytes, 0};
    snprintf(L.oom, sizeof L.oom, "out of memory");
    L.path = path;
    L.err = err;
    L.errlen = errlen;
    L.fd = open(path, O_RDONLY | O_CLOEXEC);
    L.p = calloc(1, sizeof *L.p);
    struct stat st;
    if (!L.p) {
        plan_fail(&L, "out of memory");
        goto fail;
    }
    if (L.fd < 0 || fstat(L.fd, &st) != 0) {
        plan_fail(&L, "cannot open: %s", strerror(errno));
        goto fail;
    }
    if (!S_ISREG(st.st_mode)) {
        plan_fail(&L, "not a regular file");
        goto fail;
    }
    L.file_size = (uint64_t)st.st_size;
    if (plan_add_string(&L, (const uint8_t *)"", 0) != 0 || !(L.dctx = ZSTD_createDCtx())) {
        plan_fail(&L, "%s", L.oom);
        goto fail;
    }
    if (plan_read_header(&L) != 0)
        goto fail;
    while (L.pos < L.file_size)
        if (plan_read_frame(&L) < 0)
            goto fail;
    if (!L.have_end) {
        plan_fail(&L, "truncated plan: no END record (file ends after %llu bytes)",
                  (unsigned long long)L.file_size);
        goto fail;
    }
    if (plan_check_conns(&L) != 0)
        goto fail;
    close(L.fd);
    ZSTD_freeDCtx(L.dctx);
    free(L.zbuf);
    free(L.raw);
    free(L.conn_use);
    return L.p;
fail:
    if (L.fd >= 0)
        close(L.fd);
    ZSTD_freeDCtx(L.dctx);
    free(L.zbuf);
    free(L.raw);
    free(L.conn_use);
    plan_free(L.p);
    return NULL;
}

void plan_free(struct plan *p)
{
    if (!p)
        return;
    for (uint32_t i = 0; i < p->nstrings; i++)
        free(p->strings[i]);
    free(p->strings);
    free(p->string_lens);
    free(p->components);
    free(p->files);
    free(p->locks);
    free(p->db_endpoints);
    free(p->blocks);
    free(p->ops);
    free(p->segments);
    free(p->requests);
    free(p);
}

const char *plan_string(const struct plan *p, uint32_t id)
{
    return id < p->nstrings ? p->strings[id] : NULL;
}

int plan_file_probe(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    uint8_t b[16];
    int rc = plan_pread_full(fd, b, sizeof b, 0) == 0 &&
             trace_get_le32(b) == PLAN_HEADER_FRAME_MAGIC && !memcmp(b + 8, PLAN_FILE_MAGIC, 8);
    close(fd);
    return rc;
}
