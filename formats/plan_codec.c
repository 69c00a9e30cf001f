/* plan_codec.c - the record encoding of a replay plan (PLAN.md §4-§5) and
 * the reference checks shared by the writer and the reader: a plan the
 * writer accepts is exactly a plan the reader accepts. Pure functions over
 * buffers; nothing here allocates or touches a file. */
#include "plan_codec.h"

#include <stdio.h>

static const char *const plan_record_names[PLAN_REC_TYPE_COUNT] = {
    "UNKNOWN",     "STRING", "COMPONENT", "COMPONENT_UPDATE", "FILE", "LOCK",
    "DB_ENDPOINT", "BLOCK",  "REQUEST",   "SUMMARY",          "END"};

const char *plan_record_name(unsigned type)
{
    return type < PLAN_REC_TYPE_COUNT ? plan_record_names[type] : "UNKNOWN";
}

static const char *const plan_op_names[] = {"?",    "CPU",      "FILE", "LOCK", "DB",
                                            "CALL", "EXTERNAL", "RECV", "SEND", "SOCKOPT"};

const char *plan_op_kind_name(unsigned kind)
{
    return kind < sizeof plan_op_names / sizeof *plan_op_names ? plan_op_names[kind] : "?";
}

void plan_chunk_header_pack(uint8_t out[PLAN_CHUNK_PAYLOAD], const struct plan_chunk_header *c)
{
    trace_put_le32(out, c->seq);
    trace_put_le32(out + 4, c->compressed_size);
    trace_put_le32(out + 8, c->raw_size);
    trace_put_le32(out + 12, c->nrecords);
    trace_put_le32(out + 16, 0);
    trace_put_le32(out + 20, trace_crc32(out, 20));
}

int plan_chunk_header_unpack(const uint8_t in[PLAN_CHUNK_PAYLOAD], struct plan_chunk_header *c)
{
    if (trace_get_le32(in + 20) != trace_crc32(in, 20))
        return -1;
    c->seq = trace_get_le32(in);
    c->compressed_size = trace_get_le32(in + 4);
    c->raw_size = trace_get_le32(in + 8);
    c->nrecords = trace_get_le32(in + 12);
    return 0;
}

/* ---- checks ---------------------------------------------------------------- */

int plan_check_limit(const char *field, uint64_t value, uint64_t limit, char *why, size_t len)
{
    if (value <= limit)
        return 0;
    snprintf(why, len, "%s %llu exceeds the limit %llu", field, (unsigned long long)value,
             (unsigned long long)limit);
    return -1;
}

int plan_check_room(const struct plan_defined *d, unsigned type, uint64_t nrequests, char *why,
                    size_t len)
{
    switch (type) {
    case PLAN_REC_STRING:
        return plan_check_limit("strings", (uint64_t)d->strings + 1, PLAN_MAX_STRINGS, why, len);
    case PLAN_REC_COMPONENT:
        return plan_check_limit("components", (uint64_t)d->components + 1, PLAN_MAX_COMPONENTS, why,
                                len);
    case PLAN_REC_FILE:
        return plan_check_limit("files", (uint64_t)d->files + 1, PLAN_MAX_FILES, why, len);
    case PLAN_REC_LOCK:
        return plan_check_limit("locks", (uint64_t)d->locks + 1, PLAN_MAX_LOCKS, why, len);
    case PLAN_REC_DB_ENDPOINT:
        return plan_check_limit("DB endpoints", (uint64_t)d->db_endpoints + 1,
                                PLAN_MAX_DB_ENDPOINTS, why, len);
    case PLAN_REC_BLOCK:
        return plan_check_limit("blocks", (uint64_t)d->blocks + 1, PLAN_MAX_BLOCKS, why, len);
    case PLAN_REC_REQUEST:
        return plan_check_limit("requests", nrequests + 1, PLAN_MAX_REQUESTS, why, len);
    default:
        return 0;
    }
}

int plan_check_file(const struct plan_file *f, const struct plan_defined *d, char *why, size_t len)
{
    if (plan_check_string(d, "path", f->path, why, len) != 0)
        return -1;
    return plan_check_limit("initial_size", f->initial_size, PLAN_MAX_FILE_BYTES, why, len);
}

int plan_check_string(const struct plan_defined *d, const char *field, uint32_t id, char *why,
                      size_t len)
{
    if (id < d->strings)
        return 0;
    snprintf(why, len, "%s names string %u, but only %u strings are defined", field, id,
             d->strings);
    return -1;
}

int plan_check_component(const struct plan_defined *d, const struct plan_component *c, char *why,
                         size_t len)
{
    if (plan_check_string(d, "name", c->name, why, len) != 0 ||
        plan_check_string(d, "host", c->host, why, len) != 0)
        return -1;
    if (plan_check_limit("workers", c->workers, PLAN_MAX_WORKERS, why, len) != 0 ||
        plan_check_limit("db_conns", c->db_conns, PLAN_MAX_DB_CONNS, why, len) != 0)
        return -1;
    if (c->prefork > 1 || c->is_frontend > 1 || c->event_loop > 1) {
        snprintf(why, len, "prefork/is_frontend/event_loop must be 0 or 1 (%u, %u, %u)", c->prefork,
                 c->is_frontend, c->event_loop);
        return -1;
    }
    return 0;
}

/* The sizes and times an op carries, against the limits of plan.h. */
static int plan_op_limit_fail(uint32_t i, const struct plan_op *op, const char *name,
                              uint64_t value, uint64_t limit, char *why, size_t len)
{
    char field[64];
    snprintf(field, sizeof field, "op %u (%s) %s", i, plan_op_kind_name(op->kind), name);
    return plan_check_limit(field, value, limit, why, len);
}

static int plan_check_op_sizes(uint32_t i, const struct plan_op *op, char *why, size_t len)
{
    /* the op's name is formatted only for a refusal: this runs per op */
#define PLAN_OP_LIMIT(name, value, limit)                                                          \
    ((value) <= (limit) ? 0 : plan_op_limit_fail(i, op, name, (value), (limit), why, len))
    if (PLAN_OP_LIMIT("recorded_ns", op->recorded_ns, PLAN_MAX_NS) != 0)
        return -1;
    switch (op->kind) {
    case PLAN_OP_CPU:
        return PLAN_OP_LIMIT("cpu_ns", op->a.cpu_ns, PLAN_MAX_NS);
    case PLAN_OP_FILE: {
        /* a negative offset means "at the current position" */
        uint64_t off = op->a.file.offset > 0 ? (uint64_t)op->a.file.offset : 0;
        int io = op->op == PLAN_FILE_READ || op->op == PLAN_FILE_WRITE;
        if (PLAN_OP_LIMIT("size", op->a.file.size, io ? PLAN_MAX_IO_BYTES : PLAN_MAX_FILE_BYTES) ||
            PLAN_OP_LIMIT("offset", off, PLAN_MAX_FILE_BYTES) ||
            PLAN_OP_LIMIT("offset + size", off + op->a.file.size, PLAN_MAX_FILE_BYTES))
            return -1;
        return 0;
    }
    case PLAN_OP_EXTERNAL:
        return PLAN_OP_LIMIT("sent", op->a.external.sent, PLAN_MAX_NET_BYTES) ||
                       PLAN_OP_LIMIT("received", op->a.external.received, PLAN_MAX_NET_BYTES)
                   ? -1
                   : 0;
    case PLAN_OP_RECV:
    case PLAN_OP_SEND:
        return PLAN_OP_LIMIT("bytes", op->a.net.bytes, PLAN_MAX_NET_BYTES);
    default:
        return 0;
    }
#undef PLAN_OP_LIMIT
}

static int plan_check_op(const struct plan_defined *d, uint32_t block_id, uint32_t i,
                         const struct plan_op *op, uint32_t nsegs, char *why, size_t len)
{
    char field[64];
    if (plan_check_op_sizes(i, op, why, len) != 0)
        return -1;
    switch (op->kind) {
    case PLAN_OP_CPU:
    case PLAN_OP_RECV:
    case PLAN_OP_SEND:
    case PLAN_OP_SOCKOPT:
        return 0;
    case PLAN_OP_FILE:
        if (op->op < PLAN_FILE_READ || op->op > PLAN_FILE_TRUNCATE) {
            snprintf(why, len, "op %u (FILE): unknown file operation %u", i, op->op);
            return -1;
        }
        if (op->a.file.file >= d->files) {
            snprintf(why, len, "op %u (FILE): file %u is not defined (%u files so far)", i,
                     op->a.file.file, d->files);
            return -1;
        }
        return 0;
    case PLAN_OP_LOCK:
        if (op->op < PLAN_LOCK_ACQUIRE || op->op > PLAN_LOCK_TRY || op->a.lock.mode > 2) {
            snprintf(why, len, "op %u (LOCK): unknown lock operation %u or mode %u", i, op->op,
                     op->a.lock.mode);
            return -1;
        }
        if (op->a.lock.lock >= d->locks) {
            snprintf(why, len, "op %u (LOCK): lock %u is not defined (%u locks so far)", i,
                     op->a.lock.lock, d->locks);
            return -1;
        }
        return 0;
    case PLAN_OP_DB:
        if (op->op < PLAN_DB_QUERY || op->op > PLAN_DB_EXECUTE) {
            snprintf(why, len, "op %u (DB): unknown DB operation %u", i, op->op);
            return -1;
        }
        snprintf(field, sizeof field, "op %u (DB) sql", i);
        if (plan_check_string(d, field, op->a.db.sql, why, len) != 0)
            return -1;
        snprintf(field, sizeof field, "op %u (DB) params", i);
        return plan_check_string(d, field, op->a.db.params, why, len);
    case PLAN_OP_CALL:
        if (op->a.call.callee_block >= block_id) {
            snprintf(why, len, "op %u (CALL): callee block %u is not defined before block %u", i,
                     op->a.call.callee_block, block_id);
            return -1;
        }
        if ((uint64_t)op->a.call.first_segment + op->a.call.nsegments > nsegs) {
            snprintf(why, len, "op %u (CALL): segments [%u, +%u) run past the block's %u segments",
                     i, op->a.call.first_segment, op->a.call.nsegments, nsegs);
            return -1;
        }
        return 0;
    case PLAN_OP_EXTERNAL:
        snprintf(field, sizeof field, "op %u (EXTERNAL) host", i);
        return plan_check_string(d, field, op->a.external.host, why, len);
    default:
        snprintf(why, len, "op %u: unknown op kind %u", i, op->kind);
        return -1;
    }
}

int plan_check_block_counts(const struct plan_defined *d, uint32_t nops, uint32_t nsegs, char *why,
                            size_t len)
{
    return plan_check_limit("nops", nops, PLAN_MAX_BLOCK_OPS, why, len) != 0 ||
                   plan_check_limit("nsegs", nsegs, PLAN_MAX_BLOCK_SEGMENTS, why, len) != 0 ||
                   plan_check_limit("ops", d->ops + nops, PLAN_MAX_OPS, why, len) != 0 ||
                   plan_check_limit("segments", d->segments + nsegs, PLAN_MAX_SEGMENTS, why, len) !=
                       0
               ? -1
               : 0;
}

int plan_check_block(const struct plan_defined *d, const struct plan_block *b,
                     const struct plan_op *ops, const struct plan_segment *segs, uint32_t nsegs,
                     char *why, size_t len)
{
    if (b->component >= d->components) {
        snprintf(why, len, "component %u is not defined (%u components so far)", b->component,
                 d->components);
        return -1;
    }
    if (plan_check_string(d, "label", b->label, why, len) != 0)
        return -1;
    if (plan_check_block_counts(d, b->nops, nsegs, why, len) != 0 ||
        plan_check_limit("worker", b->worker, PLAN_MAX_WORKER_INDEX, why, len) != 0 ||
        plan_check_limit("recorded_ns", b->recorded_ns, PLAN_MAX_NS, why, len) != 0 ||
        plan_check_limit("start_ns", b->start_ns, PLAN_MAX_NS, why, len) != 0 ||
        plan_check_limit("tail_ns", b->tail_ns, PLAN_MAX_NS, why, len) != 0)
        return -1;
    for (uint32_t i = 0; i < b->nops; i++)
        if (plan_check_op(d, d->blocks, i, &ops[i], nsegs, why, len) != 0)
            return -1;
    for (uint32_t i = 0; i < nsegs; i++)
        if (segs[i].dir > 1) {
            snprintf(why, len, "segment %u: direction %u (0 = send, 1 = receive)", i, segs[i].dir);
            return -1;
        }
    return 0;
}

int plan_check_request(const struct plan_defined *d, const struct plan_request *r, char *why,
                       size_t len)
{
    if (r->block >= d->blocks) {
        snprintf(why, len, "block %u is not defined (%u blocks so far)", r->block, d->blocks);
        return -1;
    }
    if (plan_check_limit("arrival_ns", r->arrival_ns, PLAN_MAX_NS, why, len) != 0 ||
        plan_check_limit("think_ns", r->think_ns, PLAN_MAX_NS, why, len) != 0)
        return -1;
    return plan_check_string(d, "label", r->label, why, len);
}

/* ---- encoding ---------------------------------------------------------------- */

#define PLAN_OP_BOUND 64u     /* kind + length + the largest op body (< 128) */
#define PLAN_SEGMENT_BOUND 8u /* dir + flags + varint u32 */
#define PLAN_BLOCK_HEAD_BOUND 48u
#define PLAN_BLOCK_TAIL_BOUND 30u /* 1.1: worker, start_ns; 1.5: tail_ns */

size_t plan_component_bound(void)
{
    return 5 * 10 + 1;
}

size_t plan_encode_component(uint8_t *out, const struct plan_component *c)
{
    size_t n = 0;
    n += trace_put_varint(out + n, c->name);
    n += trace_put_varint(out + n, c->host);
    n += trace_put_varint(out + n, c->workers);
    n += trace_put_varint(out + n, c->db_conns);
    n += trace_put_varint(out + n, c->listen_port);
    out[n++] = (uint8_t)((c->prefork ? 1 : 0) | (c->is_frontend ? 2 : 0) | (c->event_loop ? 4 : 0));
    return n;
}

size_t plan_block_bound(uint32_t nops, uint32_t nsegs)
{
    return PLAN_BLOCK_HEAD_BOUND + PLAN_BLOCK_TAIL_BOUND + (size_t)nops * PLAN_OP_BOUND +
           (size_t)nsegs * PLAN_SEGMENT_BOUND;
}

static size_t plan_put_zigzag(uint8_t *out, int64_t v)
{
    return trace_put_varint(out, trace_zigzag((uint64_t)v));
}

static size_t plan_encode_op_body(uint8_t *out, const struct plan_op *op)
{
    size_t n = 0;
    out[n++] = op->op;
    n += trace_put_varint(out + n, op->flags);
    n += trace_put_varint(out + n, op->recorded_ns);
    switch (op->kind) {
    case PLAN_OP_CPU:
        n += trace_put_varint(out + n, op->a.cpu_ns);
        break;
    case PLAN_OP_FILE:
        n += trace_put_varint(out + n, op->a.file.file);
        n += plan_put_zigzag(out + n, op->a.file.offset);
        n += trace_put_varint(out + n, op->a.file.size);
        break;
    case PLAN_OP_LOCK:
        n += trace_put_varint(out + n, op->a.lock.lock);
        out[n++] = op->a.lock.mode;
        break;
    case PLAN_OP_DB:
        n += trace_put_varint(out + n, op->a.db.conn);
        n += trace_put_varint(out + n, op->a.db.sql);
        n += trace_put_varint(out + n, op->a.db.params);
        n += trace_put_varint(out + n, op->a.db.rows);
        n += plan_put_zigzag(out + n, op->a.db.error);
        break;
    case PLAN_OP_CALL:
        n += trace_put_varint(out + n, op->a.call.callee_block);
        n += trace_put_varint(out + n, op->a.call.first_segment);
        n += trace_put_varint(out + n, op->a.call.nsegments);
        break;
    case PLAN_OP_EXTERNAL:
        n += trace_put_varint(out + n, op->a.external.host);
        n += trace_put_varint(out + n, op->a.external.sent);
        n += trace_put_varint(out + n, op->a.external.received);
        break;
    case PLAN_OP_RECV:
    case PLAN_OP_SEND:
        n += trace_put_varint(out + n, op->a.net.bytes);
        break;
    case PLAN_OP_SOCKOPT:
        n += plan_put_zigzag(out + n, op->a.sockopt.level);
        n += plan_put_zigzag(out + n, op->a.sockopt.name);
        n += plan_put_zigzag(out + n, op->a.sockopt.value);
        break;
    }
    return n;
}

size_t plan_encode_block(uint8_t *out, const struct plan_block *b, const struct plan_op *ops,
                         const struct plan_segment *segs, uint32_t nsegs)
{
    size_t n = 0;
    n += trace_put_varint(out + n, b->component);
    n += trace_put_varint(out + n, b->label);
    n += trace_put_varint(out + n, b->flags);
    n += trace_put_varint(out + n, b->recorded_ns);
    n += trace_put_varint(out + n, b->nops);
    n += trace_put_varint(out + n, nsegs);
    for (uint32_t i = 0; i < b->nops; i++) {
        out[n] = ops[i].kind;
        size_t body = plan_encode_op_body(out + n + 2, &ops[i]);
        out[n + 1] = (uint8_t)body; /* < 128: a one-byte varint */
        n += 2 + body;
    }
    for (uint32_t i = 0; i < nsegs; i++) {
        out[n++] = segs[i].dir;
        out[n++] = segs[i].flags;
        n += trace_put_varint(out + n, segs[i].bytes);
    }
    /* 1.1: after the segments, where a 1.0 reader skips them */
    n += trace_put_varint(out + n, b->worker);
    n += trace_put_varint(out + n, b->start_ns);
    n += trace_put_varint(out + n, b->tail_ns); /* 1.5 */
    return n;
}

/* ---- decoding ---------------------------------------------------------------- */

uint64_t plan_cursor_varint(struct plan_cursor *c)
{
    uint64_t v;
    if (c->bad || trace_get_varint(&c->p, c->end, &v) != 0) {
        c->bad = 1;
        return 0;
    }
    return v;
}

uint8_t plan_cursor_u8(struct plan_cursor *c)
{
    if (c->bad || c->p >= c->end) {
        c->bad = 1;
        return 0;
    }
    return *c->p++;
}

uint32_t plan_cursor_u32v(struct plan_cursor *c)
{
    uint64_t v = plan_cursor_varint(c);
    if (v > UINT32_MAX) {
        c->bad = 1;
        return 0;
    }
    return (uint32_t)v;
}

static int64_t plan_cursor_zigzag(struct plan_cursor *c)
{
    return (int64_t)trace_unzigzag(plan_cursor_varint(c));
}

static int32_t plan_cursor_zigzag32(struct plan_cursor *c)
{
    int64_t v = plan_cursor_zigzag(c);
    if (v < INT32_MIN || v > INT32_MAX) {
        c->bad = 1;
        return 0;
    }
    return (int32_t)v;
}

int plan_decode_component(struct plan_cursor *c, struct plan_component *out)
{
    out->name = plan_cursor_u32v(c);
    out->host = plan_cursor_u32v(c);
    out->workers = plan_cursor_u32v(c);
    out->db_conns = plan_cursor_u32v(c);
    uint32_t port = plan_cursor_u32v(c);
    uint8_t flags = plan_cursor_u8(c);
    if (port > UINT16_MAX)
        c->bad = 1;
    out->listen_port = (uint16_t)port;
    out->prefork = flags & 1;
    out->is_frontend = (flags >> 1) & 1;
    out->event_loop = (flags >> 2) & 1;
    return c->bad ? -1 : 0;
}

int plan_decode_block_head(struct plan_cursor *c, struct plan_block *b, uint32_t *nsegs)
{
    b->component = plan_cursor_u32v(c);
    b->label = plan_cursor_u32v(c);
    b->flags = plan_cursor_u32v(c);
    b->recorded_ns = plan_cursor_varint(c);
    b->nops = plan_cursor_u32v(c);
    *nsegs = plan_cursor_u32v(c);
    return c->bad ? -1 : 0;
}

int plan_decode_block_tail(struct plan_cursor *c, struct plan_block *b)
{
    b->worker = 0;
    b->start_ns = 0;
    b->tail_ns = 0;
    if (c->bad || c->p >= c->end)
        return c->bad ? -1 : 0; /* a 1.0 block: no tail */
    b->worker = plan_cursor_u32v(c);
    b->start_ns = plan_cursor_varint(c);
    if (!c->bad && c->p < c->end) /* 1.5 */
        b->tail_ns = plan_cursor_varint(c);
    return c->bad ? -1 : 0;
}

int plan_decode_op(struct plan_cursor *c, struct plan_op *op, char *why, size_t len)
{
    memset(op, 0, sizeof *op);
    op->kind = plan_cursor_u8(c);
    uint64_t body = plan_cursor_varint(c);
    if (c->bad || body > (uint64_t)(c->end - c->p)) {
        c->bad = 1;
        snprintf(why, len, "op runs past the end of the record");
        return -1;
    }
    struct plan_cursor b = {c->p, c->p + body, 0};
    c->p += body;
    op->op = plan_cursor_u8(&b);
    uint64_t flags = plan_cursor_varint(&b);
    if (flags > UINT16_MAX)
        b.bad = 1;
    op->flags = (uint16_t)flags;
    op->recorded_ns = plan_cursor_varint(&b);
    switch (op->kind) {
    case PLAN_OP_CPU:
        op->a.cpu_ns = plan_cursor_varint(&b);
        break;
    case PLAN_OP_FILE:
        op->a.file.file = plan_cursor_u32v(&b);
        op->a.file.offset = plan_cursor_zigzag(&b);
        op->a.file.size = plan_cursor_varint(&b);
        break;
    case PLAN_OP_LOCK:
        op->a.lock.lock = plan_cursor_u32v(&b);
        op->a.lock.mode = plan_cursor_u8(&b);
        break;
    case PLAN_OP_DB:
        op->a.db.conn = plan_cursor_u32v(&b);
        op->a.db.sql = plan_cursor_u32v(&b);
        op->a.db.params = plan_cursor_u32v(&b);
        op->a.db.rows = plan_cursor_varint(&b);
        op->a.db.error = plan_cursor_zigzag32(&b);
        break;
    case PLAN_OP_CALL:
        op->a.call.callee_block = plan_cursor_u32v(&b);
        op->a.call.first_segment = plan_cursor_u32v(&b);
        op->a.call.nsegments = plan_cursor_u32v(&b);
        break;
    case PLAN_OP_EXTERNAL:
        op->a.external.host = plan_cursor_u32v(&b);
        op->a.external.sent = plan_cursor_varint(&b);
        op->a.external.received = plan_cursor_varint(&b);
        break;
    case PLAN_OP_RECV:
    case PLAN_OP_SEND:
        op->a.net.bytes = plan_cursor_varint(&b);
        break;
    case PLAN_OP_SOCKOPT:
        op->a.sockopt.level = plan_cursor_zigzag32(&b);
        op->a.sockopt.name = plan_cursor_zigzag32(&b);
        op->a.sockopt.value = plan_cursor_zigzag(&b);
        break;
    default:
        snprintf(why, len, "unknown op kind %u", op->kind);
        return -1;
    }
    if (b.bad) {
        snprintf(why, len, "%s op: field missing or out of range", plan_op_kind_name(op->kind));
        return -1;
    }
    return 0;
}

int plan_decode_segment(struct plan_cursor *c, struct plan_segment *s)
{
    s->dir = plan_cursor_u8(c);
    s->flags = plan_cursor_u8(c);
    s->bytes = plan_cursor_u32v(c);
    return c->bad ? -1 : 0;
}
