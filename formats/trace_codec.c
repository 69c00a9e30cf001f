/* trace_codec.c - the record encoding of FORMAT.md §6, written once for both
 * the writer and the reader: per-type field tables, the per-frame prediction
 * state (thread end times, per-descriptor offsets, last lock/connection ids)
 * and the CRC-32 used by the uncompressed structures. Encoding and decoding
 * walk the same tables and update the state through the same function, so
 * they cannot drift apart. No allocation per record: state tables grow
 * amortized and are cleared, not freed, at every frame start. */
#include "trace_codec.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>

#include "grow_array.h"
#include "trace_file.h"

/* ---- CRC-32 ------------------------------------------------------------ */

static uint32_t trace_crc_table[256];
static int trace_crc_ready;

static void trace_crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        trace_crc_table[i] = c;
    }
    trace_crc_ready = 1;
}

uint32_t trace_crc32(const void *data, size_t len)
{
    /* The table is idempotent to build, so a race between threads only
     * computes the same values twice. */
    if (!trace_crc_ready)
        trace_crc_init();
    const uint8_t *p = data;
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < len; i++)
        c = trace_crc_table[(c ^ p[i]) & 0xff] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

/* ---- chunk header and ring index (FORMAT.md §4.1, §5) -------------------- */

void trace_chunk_header_pack(uint8_t out[TRACE_CHUNK_PAYLOAD], const struct trace_chunk_header *c)
{
    memset(out, 0, TRACE_CHUNK_PAYLOAD);
    trace_put_le64(out + 0, c->seq);
    trace_put_le32(out + 8, c->compressed_size);
    trace_put_le32(out + 12, c->raw_size);
    trace_put_le32(out + 16, c->nrecords);
    trace_put_le32(out + 20, c->nevents);
    trace_put_le64(out + 24, c->first_ts);
    trace_put_le64(out + 32, c->last_ts);
    /* bytes 40..43 reserved (zero) */
    trace_put_le32(out + 44, trace_crc32(out, 44));
}

int trace_chunk_header_unpack(const uint8_t in[TRACE_CHUNK_PAYLOAD], struct trace_chunk_header *c)
{
    if (trace_get_le32(in + 44) != trace_crc32(in, 44))
        return -1;
    c->seq = trace_get_le64(in + 0);
    c->compressed_size = trace_get_le32(in + 8);
    c->raw_size = trace_get_le32(in + 12);
    c->nrecords = trace_get_le32(in + 16);
    c->nevents = trace_get_le32(in + 20);
    c->first_ts = trace_get_le64(in + 24);
    c->last_ts = trace_get_le64(in + 32);
    return 0;
}

void trace_ring_index_pack(uint8_t out[TRACE_RING_PAYLOAD], const struct trace_ring_index *r)
{
    memset(out, 0, TRACE_RING_PAYLOAD);
    trace_put_le64(out + 0, r->oldest_offset);
    trace_put_le64(out + 8, r->oldest_seq);
    trace_put_le64(out + 16, r->head_offset);
    trace_put_le64(out + 24, r->lap_end);
    trace_put_le64(out + 32, r->dropped_events);
    trace_put_le64(out + 40, r->dropped_from_ns);
    trace_put_le64(out + 48, r->dropped_to_ns);
    trace_put_le32(out + 56, r->dropped_chunks);
    trace_put_le32(out + 60, trace_crc32(out, 60));
}

int trace_ring_index_unpack(const uint8_t in[TRACE_RING_PAYLOAD], struct trace_ring_index *r)
{
    if (trace_get_le32(in + 60) != trace_crc32(in, 60))
        return -1;
    r->oldest_offset = trace_get_le64(in + 0);
    r->oldest_seq = trace_get_le64(in + 8);
    r->head_offset = trace_get_le64(in + 16);
    r->lap_end = trace_get_le64(in + 24);
    r->dropped_events = trace_get_le64(in + 32);
    r->dropped_from_ns = trace_get_le64(in + 40);
    r->dropped_to_ns = trace_get_le64(in + 48);
    r->dropped_chunks = trace_get_le32(in + 56);
    return 0;
}

/* ---- field tables (FORMAT.md §6.2) -------------------------------------- */

enum trace_field_flag { TF_SIGNED = 1, TF_BYTES8 = 2 /* 8 bytes of a byte array, LE */ };

enum trace_prediction {
    TP_ZERO,
    TP_MINUS1,
    TP_PREV_TID,
    TP_THREAD_END,
    TP_THREAD_FILE_FD,
    TP_THREAD_NET_FD,
    TP_THREAD_LOCK_KIND,
    TP_THREAD_LOCK_MODE,
    TP_THREAD_LOCK_ID,
    TP_THREAD_DB_SOURCE,
    TP_THREAD_DB_CONN,
    TP_RESULT_NONNEG,
    TP_FD_NEXT_OFFSET,
    TP_FD_FILE_SIZE,
    TP_FD_DEV,
    TP_FD_INO,
    TP_FD_CONN,
    TP_FD_MSG_FLAGS,
    TP_NEXT_STRING_ID,
    TP_NEXT_STACK_ID
};

struct trace_field {
    uint16_t off;
    uint8_t size;
    uint8_t flags;
    uint8_t pred;
};

#define TF(member, fl, pr)                                                                         \
    {                                                                                              \
        offsetof(struct trace_event, member), sizeof(((struct trace_event *)0)->member), fl, pr    \
    }
#define TF_ADDR(member, half, pr)                                                                  \
    {                                                                                              \
        offsetof(struct trace_event, member) + 8 * (half), 8, TF_BYTES8, pr                        \
    }

#define TRACE_COMMON_FIELDS                                                                        \
    TF(tid, 0, TP_PREV_TID), TF(ts_ns, 0, TP_THREAD_END), TF(dur_ns, 0, TP_ZERO),                  \
        TF(flags, 0, TP_ZERO), TF(stack_id, 0, TP_ZERO)

static const struct trace_field trace_fields_thread[] = {TRACE_COMMON_FIELDS,
                                                         TF(u.thread.parent_tid, 0, TP_ZERO)};
static const struct trace_field trace_fields_cpu[] = {TRACE_COMMON_FIELDS};
static const struct trace_field trace_fields_file[] = {
    TRACE_COMMON_FIELDS,
    TF(u.file.fd, TF_SIGNED, TP_THREAD_FILE_FD),
    TF(u.file.result, TF_SIGNED, TP_ZERO),
    TF(u.file.size, 0, TP_RESULT_NONNEG),
    TF(u.file.offset, TF_SIGNED, TP_FD_NEXT_OFFSET),
    TF(u.file.file_size, 0, TP_FD_FILE_SIZE),
    TF(u.file.dev, 0, TP_FD_DEV),
    TF(u.file.ino, 0, TP_FD_INO),
    TF(u.file.path_id, 0, TP_ZERO),
    TF(u.file.open_flags, 0, TP_ZERO),
    TF(u.file.fd2, TF_SIGNED, TP_MINUS1)};
static const struct trace_field trace_fields_net[] = {TRACE_COMMON_FIELDS,
                                                      TF(u.net.fd, TF_SIGNED, TP_THREAD_NET_FD),
                                                      TF(u.net.result, TF_SIGNED, TP_ZERO),
                                                      TF(u.net.size, 0, TP_RESULT_NONNEG),
                                                      TF(u.net.conn_id, 0, TP_FD_CONN),
                                                      TF(u.net.msg_flags, 0, TP_FD_MSG_FLAGS),
                                                      TF(u.net.nmsgs, 0, TP_ZERO),
                                                      TF(u.net.queued_us, 0, TP_ZERO)};
static const struct trace_field trace_fields_conn[] = {TRACE_COMMON_FIELDS,
                                                       TF(u.conn.fd, TF_SIGNED, TP_ZERO),
                                                       TF(u.conn.proto, 0, TP_ZERO),
                                                       TF(u.conn.family, 0, TP_ZERO),
                                                       TF(u.conn.local_port, 0, TP_ZERO),
                                                       TF(u.conn.remote_port, 0, TP_ZERO),
                                                       TF_ADDR(u.conn.local_addr, 0, TP_ZERO),
                                                       TF_ADDR(u.conn.local_addr, 1, TP_ZERO),
                                                       TF_ADDR(u.conn.remote_addr, 0, TP_ZERO),
                                                       TF_ADDR(u.conn.remote_addr, 1, TP_ZERO),
                                                       TF(u.conn.conn_id, 0, TP_ZERO),
                                                       TF(u.conn.unix_inode, 0, TP_ZERO),
                                                       TF(u.conn.unix_peer_inode, 0, TP_ZERO),
                                                       TF(u.conn.result, TF_SIGNED, TP_ZERO)};
static const struct trace_field trace_fields_sockopt[] = {
    TRACE_COMMON_FIELDS,
    TF(u.sockopt.fd, TF_SIGNED, TP_THREAD_NET_FD),
    TF(u.sockopt.level, TF_SIGNED, TP_ZERO),
    TF(u.sockopt.name, TF_SIGNED, TP_ZERO),
    TF(u.sockopt.value, TF_SIGNED, TP_ZERO),
    TF(u.sockopt.conn_id, 0, TP_FD_CONN)};
static const struct trace_field trace_fields_lock[] = {TRACE_COMMON_FIELDS,
                                                       TF(u.lock.kind, 0, TP_THREAD_LOCK_KIND),
                                                       TF(u.lock.mode, 0, TP_THREAD_LOCK_MODE),
                                                       TF(u.lock.result, TF_SIGNED, TP_ZERO),
                                                       TF(u.lock.lock_id, 0, TP_THREAD_LOCK_ID),
                                                       TF(u.lock.start, TF_SIGNED, TP_ZERO),
                                                       TF(u.lock.len, TF_SIGNED, TP_ZERO)};
static const struct trace_field trace_fields_db[] = {TRACE_COMMON_FIELDS,
                                                     TF(u.db.source, 0, TP_THREAD_DB_SOURCE),
                                                     TF(u.db.error, TF_SIGNED, TP_ZERO),
                                                     TF(u.db.db_conn_id, 0, TP_THREAD_DB_CONN),
                                                     TF(u.db.query_id, 0, TP_ZERO),
                                                     TF(u.db.params_id, 0, TP_ZERO),
                                                     TF(u.db.stmt_id, 0, TP_ZERO),
                                                     TF(u.db.rows, 0, TP_ZERO),
                                                     TF(u.db.bytes, 0, TP_ZERO),
                                                     TF(u.db.query_len, 0, TP_ZERO),
                                                     TF(u.db.params_len, 0, TP_ZERO),
                                                     TF(u.db.dialect, 0, TP_ZERO)};
static const struct trace_field trace_fields_label[] = {
    TRACE_COMMON_FIELDS, TF(u.label.conn_id, 0, TP_ZERO), TF(u.label.label_id, 0, TP_ZERO)};
static const struct trace_field trace_fields_loss[] = {
    TRACE_COMMON_FIELDS, TF(u.loss.count, 0, TP_ZERO), TF(u.loss.from_ns, 0, TP_ZERO),
    TF(u.loss.to_ns, 0, TP_ZERO), TF(u.loss.reason, 0, TP_ZERO)};
static const struct trace_field trace_fields_string[] = {
    TRACE_COMMON_FIELDS, TF(u.string.id, 0, TP_NEXT_STRING_ID), TF(u.string.len, 0, TP_ZERO)};
static const struct trace_field trace_fields_stack[] = {
    TRACE_COMMON_FIELDS, TF(u.stack.id, 0, TP_NEXT_STACK_ID), TF(u.stack.nframes, 0, TP_ZERO)};
static const struct trace_field trace_fields_control[] = {TRACE_COMMON_FIELDS,
                                                          TF(u.control.arg0, TF_SIGNED, TP_ZERO),
                                                          TF(u.control.arg1, TF_SIGNED, TP_ZERO)};
static const struct trace_field trace_fields_counters[] = {
    TRACE_COMMON_FIELDS, TF(u.counters.nvalues, 0, TP_ZERO), TF(u.counters.bytes, 0, TP_ZERO),
    TF(u.counters.window_ns, 0, TP_ZERO), TF(u.counters.tick_ns, 0, TP_ZERO)};

struct trace_type_desc {
    const struct trace_field *fields;
    unsigned nfields;
};

#define TD(arr)                                                                                    \
    {                                                                                              \
        arr, sizeof(arr) / sizeof(arr[0])                                                          \
    }
static const struct trace_type_desc trace_types[TRACE_EV_TYPE_COUNT] = {
    [TRACE_EV_THREAD_START] = TD(trace_fields_thread),
    [TRACE_EV_THREAD_EXIT] = TD(trace_fields_thread),
    [TRACE_EV_CPU] = TD(trace_fields_cpu),
    [TRACE_EV_FILE] = TD(trace_fields_file),
    [TRACE_EV_NET] = TD(trace_fields_net),
    [TRACE_EV_CONN] = TD(trace_fields_conn),
    [TRACE_EV_SOCKOPT] = TD(trace_fields_sockopt),
    [TRACE_EV_LOCK] = TD(trace_fields_lock),
    [TRACE_EV_DB] = TD(trace_fields_db),
    [TRACE_EV_LABEL] = TD(trace_fields_label),
    [TRACE_EV_LOSS] = TD(trace_fields_loss),
    [TRACE_EV_STRING] = TD(trace_fields_string),
    [TRACE_EV_STACK] = TD(trace_fields_stack),
    [TRACE_EV_CONTROL] = TD(trace_fields_control),
    [TRACE_EV_COUNTERS] = TD(trace_fields_counters),
};

static uint64_t trace_field_load(const struct trace_event *ev, const struct trace_field *f)
{
    const uint8_t *p = (const uint8_t *)ev + f->off;
    if (f->flags & TF_BYTES8)
        return trace_get_le64(p);
    switch (f->size) {
    case 1:
        return *p;
    case 2: {
        uint16_t v;
        memcpy(&v, p, 2);
        return v;
    }
    case 4: {
        uint32_t v;
        memcpy(&v, p, 4);
        return (f->flags & TF_SIGNED) ? (uint64_t)(int64_t)(int32_t)v : v;
    }
    default: {
        uint64_t v;
        memcpy(&v, p, 8);
        return v;
    }
    }
}

static void trace_field_store(struct trace_event *ev, const struct trace_field *f, uint64_t v)
{
    uint8_t *p = (uint8_t *)ev + f->off;
    if (f->flags & TF_BYTES8) {
        trace_put_le64(p, v);
        return;
    }
    switch (f->size) {
    case 1:
        *p = (uint8_t)v;
        break;
    case 2: {
        uint16_t x = (uint16_t)v;
        memcpy(p, &x, 2);
        break;
    }
    case 4: {
        uint32_t x = (uint32_t)v;
        memcpy(p, &x, 4);
        break;
    }
    default:
        memcpy(p, &v, 8);
    }
}

/* ---- per-frame state ------------------------------------------------------ */

void trace_codec_init(struct trace_codec *c)
{
    memset(c, 0, sizeof *c);
    trace_u64map_init(&c->thread_index);
    trace_u64map_init(&c->fd_index);
    trace_codec_reset(c);
}

void trace_codec_free(struct trace_codec *c)
{
    trace_u64map_free(&c->thread_index);
    trace_u64map_free(&c->fd_index);
    free(c->threads);
    free(c->fds);
    free(c->stack_frames);
    memset(c, 0, sizeof *c);
}

void trace_codec_reset(struct trace_codec *c)
{
    trace_u64map_clear(&c->thread_index);
    trace_u64map_clear(&c->fd_index);
    memset(c->small_fd_slot, 0, sizeof c->small_fd_slot);
    c->nthreads = c->nfds = 0;
    c->prev_tid = c->prev_string_id = c->prev_stack_id = 0;
    c->cached_thread = NULL;
    c->cached_fdstate = NULL;
}

/* Lookups of the per-frame states: the one-entry cache is checked inline
 * (consecutive records are mostly of one thread and one descriptor), the
 * map only on a miss. */
static struct trace_codec_thread *trace_codec_thread_state_lookup(struct trace_codec *c,
                                                                  uint64_t tid)
{
    int inserted;
    uint32_t *slot = trace_u64map_upsert(&c->thread_index, tid, (uint32_t)c->nthreads, &inserted);
    if (!slot)
        return NULL;
    if (inserted) {
        if (grow_array((void **)&c->threads, &c->cap_threads, c->nthreads + 1, sizeof *c->threads,
                       16) != 0)
            return NULL;
        memset(&c->threads[c->nthreads++], 0, sizeof *c->threads);
    }
    c->cached_tid = tid;
    c->cached_thread = &c->threads[*slot];
    return c->cached_thread;
}

static struct trace_codec_fd *trace_codec_fd_state_lookup(struct trace_codec *c, uint64_t fd)
{
    /* descriptors below TRACE_CODEC_SMALL_FDS (nearly all) index a table,
     * the rest go through the map */
    uint32_t index = (uint32_t)c->nfds, *slot = NULL;
    int inserted;
    if (fd < TRACE_CODEC_SMALL_FDS) {
        inserted = c->small_fd_slot[fd] == 0;
        if (!inserted)
            index = c->small_fd_slot[fd] - 1;
    } else {
        if (!(slot = trace_u64map_upsert(&c->fd_index, fd, index, &inserted)))
            return NULL;
        index = *slot;
    }
    if (inserted) {
        if (grow_array((void **)&c->fds, &c->cap_fds, c->nfds + 1, sizeof *c->fds, 16) != 0)
            return NULL;
        memset(&c->fds[c->nfds++], 0, sizeof *c->fds);
        if (fd < TRACE_CODEC_SMALL_FDS)
            c->small_fd_slot[fd] = index + 1;
    }
    c->cached_fd = fd;
    c->cached_fdstate = &c->fds[index];
    return c->cached_fdstate;
}

static inline struct trace_codec_thread *trace_codec_thread_state(struct trace_codec *c,
                                                                  uint64_t tid)
{
    if (c->cached_thread && c->cached_tid == tid)
        return c->cached_thread;
    return trace_codec_thread_state_lookup(c, tid);
}

static inline struct trace_codec_fd *trace_codec_fd_state(struct trace_codec *c, uint64_t fd)
{
    if (c->cached_fdstate && c->cached_fd == fd)
        return c->cached_fdstate;
    return trace_codec_fd_state_lookup(c, fd);
}

uint64_t trace_codec_thread_end(struct trace_codec *c, uint64_t tid)
{
    if (c->cached_thread && c->cached_tid == tid)
        return c->cached_thread->end_ts;
    uint32_t *slot = trace_u64map_find(&c->thread_index, tid);
    return slot ? c->threads[*slot].end_ts : 0;
}

/* The descriptor whose state a FILE/NET/SOCKOPT/CONN event predicts from. */
static uint64_t trace_event_fd_key(const struct trace_event *ev)
{
    switch (ev->type) {
    case TRACE_EV_FILE:
        return (uint32_t)ev->u.file.fd;
    case TRACE_EV_NET:
        return (uint32_t)ev->u.net.fd;
    case TRACE_EV_SOCKOPT:
        return (uint32_t)ev->u.sockopt.fd;
    default:
        return (uint32_t)ev->u.conn.fd;
    }
}

/* Lookups done at most once per record. */
struct trace_codec_cursor {
    struct trace_codec_thread *thread;
    struct trace_codec_fd *fd;
};

/* Returns 0 and the prediction for field f of the (partly filled) ev, or -1
 * when state memory runs out. Fields are predicted in table order, so a
 * prediction only reads fields that come earlier in the table. */
static int trace_codec_predict(struct trace_codec *c, const struct trace_event *ev,
                               const struct trace_field *f, struct trace_codec_cursor *cur,
                               uint64_t *pred)
{
    if (f->pred >= TP_THREAD_END && f->pred <= TP_THREAD_DB_CONN && !cur->thread) {
        if (!(cur->thread = trace_codec_thread_state(c, ev->tid)))
            return -1;
    }
    if (f->pred >= TP_FD_NEXT_OFFSET && f->pred <= TP_FD_MSG_FLAGS && !cur->fd) {
        if (!(cur->fd = trace_codec_fd_state(c, trace_event_fd_key(ev))))
            return -1;
    }
    switch (f->pred) {
    case TP_ZERO:
        *pred = 0;
        break;
    case TP_MINUS1:
        *pred = UINT64_MAX;
        break;
    case TP_PREV_TID:
        *pred = c->prev_tid;
        break;
    case TP_THREAD_END:
        *pred = cur->thread->end_ts;
        break;
    case TP_THREAD_FILE_FD:
        *pred = cur->thread->file_fd;
        break;
    case TP_THREAD_NET_FD:
        *pred = cur->thread->net_fd;
        break;
    case TP_THREAD_LOCK_KIND:
        *pred = cur->thread->lock_kind;
        break;
    case TP_THREAD_LOCK_MODE:
        *pred = cur->thread->lock_mode;
        break;
    case TP_THREAD_LOCK_ID:
        *pred = cur->thread->lock_id;
        break;
    case TP_THREAD_DB_SOURCE:
        *pred = cur->thread->db_source;
        break;
    case TP_THREAD_DB_CONN:
        *pred = cur->thread->db_conn;
        break;
    case TP_RESULT_NONNEG: {
        int64_t r = ev->type == TRACE_EV_FILE ? ev->u.file.result : ev->u.net.result;
        *pred = r >= 0 ? (uint64_t)r : 0;
        break;
    }
    case TP_FD_NEXT_OFFSET:
        *pred = cur->fd->next_offset;
        break;
    case TP_FD_FILE_SIZE:
        *pred = cur->fd->file_size;
        break;
    case TP_FD_DEV:
        *pred = cur->fd->dev;
        break;
    case TP_FD_INO:
        *pred = cur->fd->ino;
        break;
    case TP_FD_CONN:
        *pred = cur->fd->conn_id;
        break;
    case TP_FD_MSG_FLAGS:
        *pred = cur->fd->msg_flags;
        break;
    case TP_NEXT_STRING_ID:
        *pred = c->prev_string_id + 1;
        break;
    default: /* TP_NEXT_STACK_ID */
        *pred = c->prev_stack_id + 1;
        break;
    }
    return 0;
}

/* The state update after a record (FORMAT.md §6.3), identical on both sides. */
static int trace_codec_update(struct trace_codec *c, const struct trace_event *ev,
                              struct trace_codec_cursor *cur)
{
    if (!cur->thread && !(cur->thread = trace_codec_thread_state(c, ev->tid)))
        return -1;
    struct trace_codec_thread *t = cur->thread;
    c->prev_tid = ev->tid;
    t->end_ts = ev->ts_ns + ev->dur_ns;
    int uses_fd = ev->type == TRACE_EV_FILE || ev->type == TRACE_EV_NET ||
                  ev->type == TRACE_EV_SOCKOPT || ev->type == TRACE_EV_CONN;
    if (uses_fd && !cur->fd && !(cur->fd = trace_codec_fd_state(c, trace_event_fd_key(ev))))
        return -1;
    switch (ev->type) {
    case TRACE_EV_FILE: {
        const struct trace_file_event *f = &ev->u.file;
        t->file_fd = (uint64_t)(int64_t)f->fd;
        cur->fd->dev = f->dev;
        cur->fd->ino = f->ino;
        cur->fd->file_size = f->file_size;
        if (f->offset >= 0) {
            uint64_t done = f->result > 0 ? (uint64_t)f->result : 0;
            uint64_t end = (uint64_t)f->offset + done;
            cur->fd->next_offset = end;
            if ((ev->op == TRACE_FILE_WRITE || ev->op == TRACE_FILE_PWRITE) && done &&
                end > f->file_size)
                cur->fd->file_size = end;
        }
        break;
    }
    case TRACE_EV_NET:
        t->net_fd = (uint64_t)(int64_t)ev->u.net.fd;
        cur->fd->conn_id = ev->u.net.conn_id;
        cur->fd->msg_flags = ev->u.net.msg_flags;
        break;
    case TRACE_EV_SOCKOPT:
        t->net_fd = (uint64_t)(int64_t)ev->u.sockopt.fd;
        cur->fd->conn_id = ev->u.sockopt.conn_id;
        break;
    case TRACE_EV_CONN:
        t->net_fd = (uint64_t)(int64_t)ev->u.conn.fd;
        cur->fd->conn_id = ev->u.conn.conn_id;
        break;
    case TRACE_EV_LOCK:
        t->lock_kind = ev->u.lock.kind;
        t->lock_mode = ev->u.lock.mode;
        t->lock_id = ev->u.lock.lock_id;
        break;
    case TRACE_EV_DB:
        t->db_source = ev->u.db.source;
        t->db_conn = ev->u.db.db_conn_id;
        break;
    case TRACE_EV_STRING:
        c->prev_string_id = ev->u.string.id;
        break;
    case TRACE_EV_STACK:
        c->prev_stack_id = ev->u.stack.id;
        break;
    default:
        break;
    }
    return 0;
}

/* ---- encoding ----------------------------------------------------------- */

static int trace_type_known(unsigned type)
{
    return type > TRACE_EV_NONE && type < TRACE_EV_TYPE_COUNT;
}

size_t trace_codec_record_bound(const struct trace_event *ev)
{
    size_t n = TRACE_RECORD_FIXED_MAX;
    if (ev->type == TRACE_EV_STRING)
        n += ev->u.string.len;
    else if (ev->type == TRACE_EV_STACK)
        n += (size_t)ev->u.stack.nframes * 10;
    else if (ev->type == TRACE_EV_COUNTERS)
        n += ev->u.counters.bytes;
    return n;
}

size_t trace_codec_encode_generic(struct trace_codec *c, const struct trace_event *ev, uint8_t *out)
{
    if (!trace_type_known(ev->type))
        return 0;
    const struct trace_type_desc *td = &trace_types[ev->type];
    uint8_t fields[TRACE_RECORD_FIXED_MAX];
    size_t nfield_bytes = 0;
    uint64_t mask = 0;
    struct trace_codec_cursor cur = {0};
    for (unsigned i = 0; i < td->nfields; i++) {
        const struct trace_field *f = &td->fields[i];
        uint64_t pred;
        if (trace_codec_predict(c, ev, f, &cur, &pred) != 0)
            return (size_t)-1;
        uint64_t v = trace_field_load(ev, f);
        if (v != pred) {
            mask |= (uint64_t)1 << i;
            nfield_bytes += trace_put_varint(fields + nfield_bytes, trace_zigzag(v - pred));
        }
    }
    size_t payload = 0;
    const uint64_t *frames = NULL;
    if (ev->type == TRACE_EV_STRING) {
        payload = ev->u.string.len;
    } else if (ev->type == TRACE_EV_COUNTERS) {
        payload = ev->u.counters.bytes;
    } else if (ev->type == TRACE_EV_STACK) {
        frames = ev->data;
        uint8_t tmp[10];
        uint64_t prev = 0;
        for (uint32_t i = 0; i < ev->u.stack.nframes; i++) {
            payload += trace_put_varint(tmp, trace_zigzag(frames[i] - prev));
            prev = frames[i];
        }
    }
    uint8_t maskbuf[10];
    size_t nmask = trace_put_varint(maskbuf, mask);
    size_t len = 1 + nmask + nfield_bytes + payload;
    size_t n = 0;
    out[n++] = ev->type;
    n += trace_put_varint(out + n, len);
    out[n++] = ev->op;
    memcpy(out + n, maskbuf, nmask);
    n += nmask;
    memcpy(out + n, fields, nfield_bytes);
    n += nfield_bytes;
    if ((ev->type == TRACE_EV_STRING || ev->type == TRACE_EV_COUNTERS) && payload) {
        memcpy(out + n, ev->data, payload);
        n += payload;
    } else if (frames) {
        uint64_t prev = 0;
        for (uint32_t i = 0; i < ev->u.stack.nframes; i++) {
            n += trace_put_varint(out + n, trace_zigzag(frames[i] - prev));
            prev = frames[i];
        }
    }
    if (trace_codec_update(c, ev, &cur) != 0)
        return (size_t)-1;
    return n;
}

/* ---- fast encoders for the hot types ------------------------------------- */

/* The collector encodes a CPU event for nearly every other event, and
 * FILE/NET/SOCKOPT/LOCK/LABEL make up the rest of a server's trace: these
 * types are encoded by straight-line code instead of the table walk (which
 * loads and predicts field by field through two switches). Each one writes
 * exactly the bytes trace_codec_encode_generic writes and updates the state
 * exactly as trace_codec_update does; tests/trace_encode compares the two on
 * random event streams. The deltas and the mask are computed first, so the
 * header and then the varints are written once, in place (staging the
 * varints in a buffer and copying them cost a store-forwarding stall per
 * record). */
#define TRACE_FAST_MAX_FIELDS 16

struct trace_fast_rec {
    uint64_t mask;
    uint64_t delta[TRACE_FAST_MAX_FIELDS];
};

static inline void trace_fast_field(struct trace_fast_rec *r, unsigned i, uint64_t v, uint64_t pred)
{
    r->delta[i] = v - pred;
    r->mask |= (uint64_t)(v != pred) << i;
}

/* Common fields 0-4 (FORMAT.md §6.2) and the common state update. */
static inline void trace_fast_common(struct trace_codec *c, struct trace_codec_thread *t,
                                     const struct trace_event *ev, uint16_t or_flags,
                                     struct trace_fast_rec *r)
{
    r->mask = 0;
    trace_fast_field(r, 0, ev->tid, c->prev_tid);
    trace_fast_field(r, 1, ev->ts_ns, t->end_ts);
    trace_fast_field(r, 2, ev->dur_ns, 0);
    trace_fast_field(r, 3, (uint16_t)(ev->flags | or_flags), 0);
    trace_fast_field(r, 4, ev->stack_id, 0);
    c->prev_tid = ev->tid;
    t->end_ts = ev->ts_ns + ev->dur_ns;
}

static inline uint64_t trace_fast_i32(int32_t v)
{
    return (uint64_t)(int64_t)v;
}

static inline uint64_t trace_fast_nonneg(int64_t v)
{
    return v >= 0 ? (uint64_t)v : 0;
}

/* Writes the record: type, length, op, mask, then the varint of every
 * field whose bit is set. The length is written as one byte and moved in
 * the rare case it needs two (only FILE records can reach 128 bytes). */
static inline size_t trace_fast_finish(const struct trace_event *ev, const struct trace_fast_rec *r,
                                       uint8_t *out)
{
    size_t h = 0;
    out[h++] = ev->type;
    size_t len_at = h++;
    out[h++] = ev->op;
    h += trace_put_varint(out + h, r->mask);
    for (uint64_t m = r->mask; m; m &= m - 1)
        h += trace_put_varint(out + h, trace_zigzag(r->delta[__builtin_ctzll(m)]));
    size_t len = h - len_at - 1;
    if (len < 0x80) {
        out[len_at] = (uint8_t)len;
        return h;
    }
    memmove(out + len_at + 2, out + len_at + 1, len);
    out[len_at] = (uint8_t)(len | 0x80);
    out[len_at + 1] = (uint8_t)(len >> 7); /* len < 2^14: at most 15 fields of 10 bytes */
    return h + 1;
}

static size_t trace_fast_cpu(struct trace_codec *c, struct trace_codec_thread *t,
                             const struct trace_event *ev, uint16_t or_flags, uint8_t *out)
{
    struct trace_fast_rec r;
    trace_fast_common(c, t, ev, or_flags, &r);
    return trace_fast_finish(ev, &r, out);
}

static size_t trace_fast_lock(struct trace_codec *c, struct trace_codec_thread *t,
                              const struct trace_event *ev, uint16_t or_flags, uint8_t *out)
{
    struct trace_fast_rec r;
    const struct trace_lock_event *l = &ev->u.lock;
    trace_fast_common(c, t, ev, or_flags, &r);
    trace_fast_field(&r, 5, l->kind, t->lock_kind);
    trace_fast_field(&r, 6, l->mode, t->lock_mode);
    trace_fast_field(&r, 7, trace_fast_i32(l->result), 0);
    trace_fast_field(&r, 8, l->lock_id, t->lock_id);
    trace_fast_field(&r, 9, (uint64_t)l->start, 0);
    trace_fast_field(&r, 10, (uint64_t)l->len, 0);
    t->lock_kind = l->kind;
    t->lock_mode = l->mode;
    t->lock_id = l->lock_id;
    return trace_fast_finish(ev, &r, out);
}

static size_t trace_fast_label(struct trace_codec *c, struct trace_codec_thread *t,
                               const struct trace_event *ev, uint16_t or_flags, uint8_t *out)
{
    struct trace_fast_rec r;
    trace_fast_common(c, t, ev, or_flags, &r);
    trace_fast_field(&r, 5, ev->u.label.conn_id, 0);
    trace_fast_field(&r, 6, ev->u.label.label_id, 0);
    return trace_fast_finish(ev, &r, out);
}

static size_t trace_fast_file(struct trace_codec *c, struct trace_codec_thread *t,
                              struct trace_codec_fd *d, const struct trace_event *ev,
                              uint16_t or_flags, uint8_t *out)
{
    struct trace_fast_rec r;
    const struct trace_file_event *f = &ev->u.file;
    trace_fast_common(c, t, ev, or_flags, &r);
    trace_fast_field(&r, 5, trace_fast_i32(f->fd), t->file_fd);
    trace_fast_field(&r, 6, (uint64_t)f->result, 0);
    trace_fast_field(&r, 7, f->size, trace_fast_nonneg(f->result));
    trace_fast_field(&r, 8, (uint64_t)f->offset, d->next_offset);
    trace_fast_field(&r, 9, f->file_size, d->file_size);
    trace_fast_field(&r, 10, f->dev, d->dev);
    trace_fast_field(&r, 11, f->ino, d->ino);
    trace_fast_field(&r, 12, f->path_id, 0);
    trace_fast_field(&r, 13, f->open_flags, 0);
    trace_fast_field(&r, 14, trace_fast_i32(f->fd2), UINT64_MAX);
    t->file_fd = trace_fast_i32(f->fd);
    d->dev = f->dev;
    d->ino = f->ino;
    d->file_size = f->file_size;
    if (f->offset >= 0) {
        uint64_t done = trace_fast_nonneg(f->result);
        uint64_t end = (uint64_t)f->offset + done;
        d->next_offset = end;
        if ((ev->op == TRACE_FILE_WRITE || ev->op == TRACE_FILE_PWRITE) && done &&
            end > f->file_size)
            d->file_size = end;
    }
    return trace_fast_finish(ev, &r, out);
}

static size_t trace_fast_net(struct trace_codec *c, struct trace_codec_thread *t,
                             struct trace_codec_fd *d, const struct trace_event *ev,
                             uint16_t or_flags, uint8_t *out)
{
    struct trace_fast_rec r;
    const struct trace_net_event *nt = &ev->u.net;
    trace_fast_common(c, t, ev, or_flags, &r);
    trace_fast_field(&r, 5, trace_fast_i32(nt->fd), t->net_fd);
    trace_fast_field(&r, 6, (uint64_t)nt->result, 0);
    trace_fast_field(&r, 7, nt->size, trace_fast_nonneg(nt->result));
    trace_fast_field(&r, 8, nt->conn_id, d->conn_id);
    trace_fast_field(&r, 9, nt->msg_flags, d->msg_flags);
    trace_fast_field(&r, 10, nt->nmsgs, 0);
    trace_fast_field(&r, 11, nt->queued_us, 0);
    t->net_fd = trace_fast_i32(nt->fd);
    d->conn_id = nt->conn_id;
    d->msg_flags = nt->msg_flags;
    return trace_fast_finish(ev, &r, out);
}

static size_t trace_fast_sockopt(struct trace_codec *c, struct trace_codec_thread *t,
                                 struct trace_codec_fd *d, const struct trace_event *ev,
                                 uint16_t or_flags, uint8_t *out)
{
    struct trace_fast_rec r;
    const struct trace_sockopt_event *so = &ev->u.sockopt;
    trace_fast_common(c, t, ev, or_flags, &r);
    trace_fast_field(&r, 5, trace_fast_i32(so->fd), t->net_fd);
    trace_fast_field(&r, 6, trace_fast_i32(so->level), 0);
    trace_fast_field(&r, 7, trace_fast_i32(so->name), 0);
    trace_fast_field(&r, 8, (uint64_t)so->value, 0);
    trace_fast_field(&r, 9, so->conn_id, d->conn_id);
    t->net_fd = trace_fast_i32(so->fd);
    d->conn_id = so->conn_id;
    return trace_fast_finish(ev, &r, out);
}

size_t trace_codec_encode_flagged(struct trace_codec *c, const struct trace_event *ev,
                                  uint16_t or_flags, uint8_t *out)
{
    unsigned type = ev->type;
    if (type != TRACE_EV_CPU && type != TRACE_EV_LOCK && type != TRACE_EV_FILE &&
        type != TRACE_EV_NET && type != TRACE_EV_SOCKOPT && type != TRACE_EV_LABEL) {
        if (!or_flags)
            return trace_codec_encode_generic(c, ev, out);
        struct trace_event flagged = *ev; /* the rare types: a copy is cheap enough */
        flagged.flags |= or_flags;
        return trace_codec_encode_generic(c, &flagged, out);
    }
    struct trace_codec_thread *t = trace_codec_thread_state(c, ev->tid);
    if (!t)
        return (size_t)-1;
    struct trace_codec_fd *d = NULL;
    switch (type) {
    case TRACE_EV_CPU:
        return trace_fast_cpu(c, t, ev, or_flags, out);
    case TRACE_EV_LOCK:
        return trace_fast_lock(c, t, ev, or_flags, out);
    case TRACE_EV_LABEL:
        return trace_fast_label(c, t, ev, or_flags, out);
    case TRACE_EV_FILE:
        if (!(d = trace_codec_fd_state(c, (uint32_t)ev->u.file.fd)))
            return (size_t)-1;
        return trace_fast_file(c, t, d, ev, or_flags, out);
    case TRACE_EV_NET:
        if (!(d = trace_codec_fd_state(c, (uint32_t)ev->u.net.fd)))
            return (size_t)-1;
        return trace_fast_net(c, t, d, ev, or_flags, out);
    default: /* TRACE_EV_SOCKOPT */
        if (!(d = trace_codec_fd_state(c, (uint32_t)ev->u.sockopt.fd)))
            return (size_t)-1;
        return trace_fast_sockopt(c, t, d, ev, or_flags, out);
    }
}

/* ---- decoding ----------------------------------------------------------- */

/* ---- COUNTERS payload (FORMAT.md §9) ------------------------------------ */

/* One entry: u8 name length (1..255), the name, 8 bytes IEEE-754 binary64
 * (LE). 0 with the entry and *p past it, or -1 with why. */
static int trace_counter_entry(const uint8_t **p, const uint8_t *end, struct trace_counter *out,
                               const char **why)
{
    const uint8_t *q = *p;
    if (q >= end) {
        *why = "COUNTERS entry runs past the payload";
        return -1;
    }
    uint32_t len = *q++;
    if (!len) {
        *why = "COUNTERS entry has an empty name";
        return -1;
    }
    if ((size_t)(end - q) < (size_t)len + 8) {
        *why = "COUNTERS entry runs past the payload";
        return -1;
    }
    for (uint32_t i = 0; i < len; i++)
        if (q[i] < 0x20 || q[i] == 0x7f) {
            *why = "COUNTERS name holds a control byte";
            return -1;
        }
    uint64_t bits = trace_get_le64(q + len);
    double v;
    memcpy(&v, &bits, sizeof v);
    if (!isnan(v) && !(v >= 0 && isfinite(v))) {
        *why = "COUNTERS value is negative or infinite";
        return -1;
    }
    *out = (struct trace_counter){.name = (const char *)q, .name_len = len, .value = v};
    *p = q + len + 8;
    return 0;
}

int trace_counters_check(const struct trace_event *ev, const uint8_t *q, const uint8_t *rec_end,
                         const char **why)
{
    if (ev->u.counters.bytes > (uint64_t)(rec_end - q)) {
        *why = "COUNTERS bytes run past the end of the record";
        return -1;
    }
    if (!(ev->dur_ns > 0)) {
        *why = "COUNTERS window has no length (dur_ns 0)";
        return -1;
    }
    const uint8_t *end = q + ev->u.counters.bytes;
    struct trace_counter c;
    for (uint32_t i = 0; i < ev->u.counters.nvalues; i++)
        if (trace_counter_entry(&q, end, &c, why) != 0)
            return -1;
    if (q != end) {
        *why = "COUNTERS bytes hold more than nvalues entries";
        return -1;
    }
    return 0;
}

size_t trace_counters_decode(const struct trace_event *ev, struct trace_counter *out)
{
    const uint8_t *q = ev->data, *end = q + ev->u.counters.bytes;
    const char *why;
    size_t n = 0;
    while (n < ev->u.counters.nvalues && trace_counter_entry(&q, end, &out[n], &why) == 0)
        n++;
    return n;
}

size_t trace_counters_encode(const struct trace_counter *c, size_t n, uint8_t *out, size_t cap)
{
    size_t at = 0;
    if (n > TRACE_MAX_COUNTERS)
        return 0;
    for (size_t i = 0; i < n; i++) {
        double v = c[i].value;
        if (!c[i].name_len || c[i].name_len > TRACE_MAX_COUNTER_NAME ||
            (!isnan(v) && !(v >= 0 && isfinite(v))) || cap - at < 1 + (size_t)c[i].name_len + 8)
            return 0;
        out[at++] = (uint8_t)c[i].name_len;
        memcpy(out + at, c[i].name, c[i].name_len);
        at += c[i].name_len;
        uint64_t bits;
        memcpy(&bits, &v, sizeof bits);
        trace_put_le64(out + at, bits);
        at += 8;
    }
    return at;
}

int trace_codec_decode(struct trace_codec *c, const uint8_t **p, const uint8_t *end,
                       struct trace_event *ev, const char **why)
{
    const uint8_t *q = *p;
    uint64_t len;
    uint8_t type = *q++;
    if (trace_get_varint(&q, end, &len) != 0) {
        *why = "record length is truncated";
        return TRACE_CODEC_DAMAGED;
    }
    if (len > (uint64_t)(end - q)) {
        *why = "record length runs past the end of the frame";
        return TRACE_CODEC_DAMAGED;
    }
    const uint8_t *rec_end = q + len;
    if (type == TRACE_EV_NONE) {
        *why = "record type 0 is reserved";
        return TRACE_CODEC_DAMAGED;
    }
    if (!trace_type_known(type)) {
        *p = rec_end;
        return TRACE_CODEC_SKIPPED;
    }
    memset(ev, 0, sizeof *ev);
    ev->type = type;
    if (q >= rec_end) {
        *why = "record has no operation byte";
        return TRACE_CODEC_DAMAGED;
    }
    ev->op = *q++;
    uint64_t mask;
    if (trace_get_varint(&q, rec_end, &mask) != 0) {
        *why = "record field mask is truncated";
        return TRACE_CODEC_DAMAGED;
    }
    const struct trace_type_desc *td = &trace_types[type];
    struct trace_codec_cursor cur = {0};
    for (unsigned i = 0; i < td->nfields; i++) {
        const struct trace_field *f = &td->fields[i];
        uint64_t pred, delta = 0;
        if (trace_codec_predict(c, ev, f, &cur, &pred) != 0)
            return TRACE_CODEC_NOMEM;
        if (mask & ((uint64_t)1 << i)) {
            if (trace_get_varint(&q, rec_end, &delta) != 0) {
                *why = "record field is truncated";
                return TRACE_CODEC_DAMAGED;
            }
            delta = trace_unzigzag(delta);
        }
        trace_field_store(ev, f, pred + delta);
    }
    /* Fields a later minor version added: one varint per mask bit, skipped. */
    for (unsigned i = td->nfields; i < 64; i++) {
        uint64_t ignored;
        if ((mask >> i) & 1 && trace_get_varint(&q, rec_end, &ignored) != 0) {
            *why = "record field is truncated";
            return TRACE_CODEC_DAMAGED;
        }
    }
    if (type == TRACE_EV_STRING) {
        if (ev->u.string.len > (uint64_t)(rec_end - q)) {
            *why = "string length runs past the end of the record";
            return TRACE_CODEC_DAMAGED;
        }
        ev->data = q;
    } else if (type == TRACE_EV_STACK) {
        uint32_t nframes = ev->u.stack.nframes;
        if (nframes > (uint64_t)(rec_end - q)) {
            *why = "stack frame count runs past the end of the record";
            return TRACE_CODEC_DAMAGED;
        }
        if (nframes > c->stack_cap) {
            size_t ncap = nframes < 64 ? 64 : nframes;
            void *n = realloc(c->stack_frames, ncap * sizeof *c->stack_frames);
            if (!n)
                return TRACE_CODEC_NOMEM;
            c->stack_frames = n;
            c->stack_cap = ncap;
        }
        uint64_t prev = 0;
        for (uint32_t i = 0; i < nframes; i++) {
            uint64_t d;
            if (trace_get_varint(&q, rec_end, &d) != 0) {
                *why = "stack frame is truncated";
                return TRACE_CODEC_DAMAGED;
            }
            prev += trace_unzigzag(d);
            c->stack_frames[i] = prev;
        }
        ev->data = nframes ? c->stack_frames : NULL;
    } else if (type == TRACE_EV_COUNTERS) {
        if (trace_counters_check(ev, q, rec_end, why) != 0)
            return TRACE_CODEC_DAMAGED;
        ev->data = q;
    }
    /* field 1 (ts) predicted from the thread's end: cur.thread is set */
    c->decoded_thread_end = cur.thread ? cur.thread->end_ts : 0;
    if (trace_codec_update(c, ev, &cur) != 0)
        return TRACE_CODEC_NOMEM;
    *p = rec_end;
    return TRACE_CODEC_OK;
}
