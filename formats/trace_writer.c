/* trace_writer.c - encodes trace events into the on-disk format of
 * FORMAT.md: a header frame, then chunks (a chunk header skippable frame +
 * one zstd frame with a content checksum). With max_bytes the data region is
 * a ring of chunks that overwrites the oldest; the ring index frame records
 * where the live chunks are and what was dropped.
 *
 * Used by the collector on its hot path: appending an event never mallocs
 * (buffers grow only for oversized strings/stacks and are reused), and every
 * syscall is per chunk, not per event. It must never write a byte the reader
 * could not account for: a failed write leaves the writer failed, not
 * half-consistent. */
#include "grow_array.h"
#include "out_file.h"
#include "trace_codec.h"
#include "trace_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <zstd.h>

#define TRACE_WRITER_DEFAULT_FRAME (256u << 10)
#define TRACE_WRITER_MAX_FRAME (16u << 20)
#define TRACE_WRITER_MAX_STRING TRACE_MAX_STRING_BYTES
#define TRACE_WRITER_MAX_FRAMES_PER_STACK TRACE_MAX_STACK_FRAMES
#define TRACE_WRITER_RETAIN_BYTES (64u << 20)

/* A live chunk of the ring (FORMAT.md §5). */
struct trace_ring_chunk {
    uint64_t offset, size, seq, nevents, first_ts, last_ts;
};

/* An identity record kept for re-emission in ring mode (FORMAT.md §5.3). */
struct trace_writer_entry {
    struct trace_event ev;
    void *data;
    uint64_t emitted_in; /* chunk seq + 1 of the chunk it was last written to */
};

struct trace_writer {
    int fd;
    int failed;
    char *path;
    char err[512];
    ZSTD_CCtx *cctx;
    struct trace_codec codec;
    uint8_t *raw;
    size_t raw_len, raw_cap, frame_bytes;
    uint8_t *zbuf;
    size_t zcap;
    struct trace_chunk_header chunk; /* stats of the chunk being filled */
    uint64_t seq, bytes_written, append_offset;
    /* ring mode */
    int ring;
    uint64_t max_bytes, ring_index_offset, ring_base, head;
    struct trace_ring_index index;
    struct trace_ring_chunk *live;
    size_t live_first, live_count, live_cap;
    struct trace_u64map table_index, conn_index;
    struct trace_writer_entry *entries;
    size_t nentries, cap_entries, retained_bytes;
};

static int trace_writer_fail(struct trace_writer *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int trace_writer_fail(struct trace_writer *w, const char *fmt, ...)
{
    int n = snprintf(w->err, sizeof w->err, "%s: ", w->path);
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof w->err)
        vsnprintf(w->err + n, sizeof w->err - (size_t)n, fmt, ap);
    va_end(ap);
    w->failed = 1;
    return -1;
}

static int trace_writer_pwrite(struct trace_writer *w, const struct iovec *iov, int iovcnt,
                               uint64_t offset)
{
    struct iovec v[2];
    for (int i = 0; i < iovcnt; i++)
        v[i] = iov[i];
    int i = 0;
    while (i < iovcnt) {
        ssize_t n = pwritev(w->fd, v + i, iovcnt - i, (off_t)offset);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return trace_writer_fail(w, "write at offset %llu failed: %s",
                                     (unsigned long long)offset, strerror(errno));
        }
        offset += (uint64_t)n;
        while (i < iovcnt && (size_t)n >= v[i].iov_len)
            n -= (ssize_t)v[i++].iov_len;
        if (i < iovcnt) {
            v[i].iov_base = (char *)v[i].iov_base + n;
            v[i].iov_len -= (size_t)n;
        }
    }
    return 0;
}

/* ---- header (FORMAT.md §2) ------------------------------------------------ */

static size_t trace_header_put_field(uint8_t *out, uint16_t tag, const void *data, uint32_t len)
{
    if (out) {
        trace_put_le16(out, tag);
        trace_put_le32(out + 2, len);
        if (len)
            memcpy(out + 6, data, len);
    }
    return 6 + (size_t)len;
}

static size_t trace_header_put_str(uint8_t *out, uint16_t tag, const char *s, size_t cap)
{
    return trace_header_put_field(out, tag, s, (uint32_t)strnlen(s, cap));
}

/* Serializes the header frame into out (NULL: only measure). */
static size_t trace_header_build(uint8_t *out, const struct trace_header *h, uint32_t flags)
{
    size_t n = 8 + 8 + 2 + 2 + 4;
    uint8_t num[32];
#define AT(o) (out ? out + (o) : NULL)
    n += trace_header_put_str(AT(n), TRACE_HDR_HOST, h->host, sizeof h->host);
    n += trace_header_put_str(AT(n), TRACE_HDR_COMPONENT, h->component, sizeof h->component);
    n += trace_header_put_str(AT(n), TRACE_HDR_RECORDING_ID, h->recording_id,
                              sizeof h->recording_id);
    n += trace_header_put_str(AT(n), TRACE_HDR_TRACER_VERSION, h->tracer_version,
                              sizeof h->tracer_version);
    n += trace_header_put_str(AT(n), TRACE_HDR_EXE, h->exe, sizeof h->exe);
    n += trace_header_put_field(AT(n), TRACE_HDR_ARGV, h->argv_joined,
                                h->argv_joined ? h->argv_len : 0);
    trace_put_le32(num, h->pid);
    n += trace_header_put_field(AT(n), TRACE_HDR_PID, num, 4);
    trace_put_le32(num, h->ppid);
    n += trace_header_put_field(AT(n), TRACE_HDR_PPID, num, 4);
    trace_put_le64(num, h->mono_anchor_ns);
    n += trace_header_put_field(AT(n), TRACE_HDR_MONO_ANCHOR, num, 8);
    trace_put_le64(num, h->real_anchor_ns);
    n += trace_header_put_field(AT(n), TRACE_HDR_REAL_ANCHOR, num, 8);
    for (uint32_t i = 0; i < h->ncpu_scores && i < TRACE_MAX_CPU_SCORES; i++) {
        memset(num, 0, sizeof num);
        memcpy(num, h->cpu_scores[i].name, strnlen(h->cpu_scores[i].name, 23));
        uint64_t bits;
        memcpy(&bits, &h->cpu_scores[i].seconds, 8);
        trace_put_le64(num + 24, bits);
        n += trace_header_put_field(AT(n), TRACE_HDR_CPU_SCORE, num, 32);
    }
    if (h->record_options[0])
        n += trace_header_put_str(AT(n), TRACE_HDR_RECORD_OPTIONS, h->record_options,
                                  sizeof h->record_options);
#undef AT
    n += 4; /* CRC */
    if (out) {
        trace_put_le32(out, TRACE_HEADER_FRAME_MAGIC);
        trace_put_le32(out + 4, (uint32_t)(n - 8));
        memcpy(out + 8, TRACE_FILE_MAGIC, 8);
        trace_put_le16(out + 16, TRACE_FORMAT_MAJOR);
        trace_put_le16(out + 18, TRACE_FORMAT_MINOR);
        trace_put_le32(out + 20, flags);
        trace_put_le32(out + n - 4, trace_crc32(out + 8, n - 12));
    }
    return n;
}

/* ---- ring (FORMAT.md §5) --------------------------------------------------- */

static int trace_writer_write_index(struct trace_writer *w)
{
    uint8_t buf[8 + TRACE_RING_PAYLOAD];
    trace_put_le32(buf, TRACE_RING_FRAME_MAGIC);
    trace_put_le32(buf + 4, TRACE_RING_PAYLOAD);
    trace_ring_index_pack(buf + 8, &w->index);
    struct iovec v = {buf, sizeof buf};
    return trace_writer_pwrite(w, &v, 1, w->ring_index_offset);
}

static struct trace_ring_chunk *trace_ring_front(struct trace_writer *w)
{
    return w->live_count ? &w->live[w->live_first] : NULL;
}

static void trace_ring_drop_front(struct trace_writer *w)
{
    struct trace_ring_chunk *c = trace_ring_front(w);
    struct trace_ring_index *x = &w->index;
    if (x->dropped_chunks == 0 || c->first_ts < x->dropped_from_ns)
        x->dropped_from_ns = c->first_ts;
    if (c->last_ts > x->dropped_to_ns)
        x->dropped_to_ns = c->last_ts;
    x->dropped_chunks++;
    x->dropped_events += c->nevents;
    w->live_first = (w->live_first + 1) % w->live_cap;
    w->live_count--;
}

static int trace_ring_push(struct trace_writer *w, const struct trace_ring_chunk *c)
{
    if (w->live_count == w->live_cap) {
        size_t ncap = w->live_cap ? w->live_cap * 2 : 64;
        struct trace_ring_chunk *n = malloc(ncap * sizeof *n);
        if (!n)
            return trace_writer_fail(w, "out of memory for the ring chunk list");
        for (size_t i = 0; i < w->live_count; i++)
            n[i] = w->live[(w->live_first + i) % w->live_cap];
        free(w->live);
        w->live = n;
        w->live_cap = ncap;
        w->live_first = 0;
    }
    w->live[(w->live_first + w->live_count) % w->live_cap] = *c;
    w->live_count++;
    return 0;
}

/* Picks where a chunk of `size` bytes goes, dropping the chunks it will
 * overwrite, and records the drop on disk before the overwrite happens. */
static int trace_ring_place(struct trace_writer *w, uint64_t size, uint64_t *offset)
{
    if (size > w->max_bytes - w->ring_base)
        return trace_writer_fail(w,
                                 "a %llu-byte chunk does not fit in the %llu-byte ring "
                                 "(raise max_bytes)",
                                 (unsigned long long)size,
                                 (unsigned long long)(w->max_bytes - w->ring_base));
    uint64_t at = w->head;
    if (at + size > w->max_bytes) {
        /* Wrap: chunks still beyond `at` are the oldest of the previous lap. */
        while (trace_ring_front(w) && trace_ring_front(w)->offset >= at)
            trace_ring_drop_front(w);
        w->index.lap_end = at;
        at = w->ring_base;
    }
    struct trace_ring_chunk *f;
    while ((f = trace_ring_front(w)) && f->offset >= at && f->offset < at + size)
        trace_ring_drop_front(w);
    f = trace_ring_front(w);
    if (!f || f->offset < at)
        w->index.lap_end = 0; /* no chunk of the previous lap is left */
    w->index.oldest_offset = f ? f->offset : at;
    w->index.oldest_seq = f ? f->seq : w->seq;
    w->index.head_offset = at;
    *offset = at;
    return trace_writer_write_index(w);
}

/* ---- chunks ---------------------------------------------------------------- */

static int trace_writer_flush_frame(struct trace_writer *w)
{
    if (w->failed)
        return -1;
    if (w->raw_len == 0)
        return 0;
    size_t z = ZSTD_compress2(w->cctx, w->zbuf, w->zcap, w->raw, w->raw_len);
    if (ZSTD_isError(z))
        return trace_writer_fail(w, "zstd compression failed: %s", ZSTD_getErrorName(z));
    w->chunk.seq = w->seq;
    w->chunk.compressed_size = (uint32_t)z;
    w->chunk.raw_size = (uint32_t)w->raw_len;
    uint8_t hdr[8 + TRACE_CHUNK_PAYLOAD];
    trace_put_le32(hdr, TRACE_CHUNK_FRAME_MAGIC);
    trace_put_le32(hdr + 4, TRACE_CHUNK_PAYLOAD);
    trace_chunk_header_pack(hdr + 8, &w->chunk);
    uint64_t size = sizeof hdr + z, offset = w->append_offset;
    if (w->ring && trace_ring_place(w, size, &offset) != 0)
        return -1;
    struct iovec v[2] = {{hdr, sizeof hdr}, {w->zbuf, z}};
    if (trace_writer_pwrite(w, v, 2, offset) != 0)
        return -1;
    if (w->ring) {
        struct trace_ring_chunk c = {
            offset, size, w->seq, w->chunk.nevents, w->chunk.first_ts, w->chunk.last_ts};
        if (trace_ring_push(w, &c) != 0)
            return -1;
        w->head = offset + size;
        w->index.head_offset = w->head;
        w->index.oldest_offset = trace_ring_front(w)->offset;
        w->index.oldest_seq = trace_ring_front(w)->seq;
        if (trace_writer_write_index(w) != 0)
            return -1;
    } else {
        w->append_offset += size;
    }
    w->bytes_written += size;
    w->seq++;
    w->raw_len = 0;
    memset(&w->chunk, 0, sizeof w->chunk);
    trace_codec_reset(&w->codec);
    return 0;
}

/* Makes room for `need` more raw bytes in the current chunk, ending it first
 * when it would grow past frame_bytes. Returns 1 when a new chunk began. */
static int trace_writer_reserve(struct trace_writer *w, size_t need)
{
    int began = 0;
    if (w->raw_len && w->raw_len + need > w->frame_bytes) {
        if (trace_writer_flush_frame(w) != 0)
            return -1;
        began = 1;
    }
    if (w->raw_len + need > w->raw_cap) {
        size_t ncap = w->raw_len + need;
        uint8_t *n = realloc(w->raw, ncap);
        if (!n)
            return trace_writer_fail(w, "out of memory for a %zu-byte record", need);
        w->raw = n;
        w->raw_cap = ncap;
        size_t zb = ZSTD_compressBound(ncap);
        if (zb > w->zcap) {
            uint8_t *zn = realloc(w->zbuf, zb);
            if (!zn)
                return trace_writer_fail(w, "out of memory for a compressed frame");
            w->zbuf = zn;
            w->zcap = zb;
        }
    }
    return began;
}

/* Encodes ev, its flags or'ed with or_flags, into the current chunk; room
 * was reserved. The record holds `events` events (FORMAT.md §4.1 nevents:
 * what a drop of this chunk loses; not the string and stack tables, not
 * identities repeated from earlier chunks) from first_ts on. */
static int trace_writer_encode(struct trace_writer *w, const struct trace_event *ev,
                               uint16_t or_flags, uint64_t first_ts, uint32_t events)
{
    size_t n = trace_codec_encode_flagged(&w->codec, ev, or_flags, w->raw + w->raw_len);
    if (n == (size_t)-1)
        return trace_writer_fail(w, "out of memory in the record encoder");
    if (n == 0)
        return trace_writer_fail(w, "event type %u is not a trace event type", ev->type);
    w->raw_len += n;
    uint64_t end = ev->ts_ns + ev->dur_ns;
    if (w->chunk.nrecords == 0 || first_ts < w->chunk.first_ts)
        w->chunk.first_ts = first_ts;
    if (end > w->chunk.last_ts)
        w->chunk.last_ts = end;
    w->chunk.nrecords++;
    w->chunk.nevents += events;
    return 0;
}

static int trace_writer_put(struct trace_writer *w, const struct trace_event *ev, int repeated)
{
    int table = ev->type == TRACE_EV_STRING || ev->type == TRACE_EV_STACK;
    return trace_writer_encode(w, ev, 0, ev->ts_ns, table || repeated ? 0 : 1);
}

/* Puts the CPU event cpu and then ev (room for both was reserved; the pair
 * passed trace_writer_pair_fits): one record with TRACE_F_AFTER_CPU when the
 * thread's previous record in this chunk ended where cpu starts (FORMAT.md
 * §6.4), else the two records. */
static int trace_writer_put_after_cpu(struct trace_writer *w, const struct trace_event *cpu,
                                      const struct trace_event *ev)
{
    if (cpu->ts_ns && trace_codec_thread_end(&w->codec, ev->tid) == cpu->ts_ns)
        return trace_writer_encode(w, ev, TRACE_F_AFTER_CPU, cpu->ts_ns, 2);
    if (trace_writer_put(w, cpu, 0) != 0)
        return -1;
    return trace_writer_put(w, ev, 0);
}

/* Can ev carry cpu (TRACE_F_AFTER_CPU)? cpu must be a plain CPU slice of
 * ev's thread ending where ev starts, and ev a valid event of a thread. */
static int trace_writer_pair_fits(const struct trace_event *cpu, const struct trace_event *ev)
{
    return cpu->type == TRACE_EV_CPU && !cpu->op && !cpu->flags && !cpu->stack_id &&
           cpu->tid == ev->tid && cpu->ts_ns + cpu->dur_ns == ev->ts_ns &&
           ev->type != TRACE_EV_NONE && ev->type < TRACE_EV_TYPE_COUNT &&
           ev->type != TRACE_EV_CPU && ev->type != TRACE_EV_STRING && ev->type != TRACE_EV_STACK &&
           ev->type != TRACE_EV_COUNTERS && !(ev->flags & TRACE_F_AFTER_CPU);
}

/* ---- ring-mode identity re-emission (FORMAT.md §5.3) ------------------------ */

static struct trace_writer_entry *trace_writer_entry_find(struct trace_writer *w,
                                                          struct trace_u64map *map, uint64_t key)
{
    uint32_t *i = trace_u64map_find(map, key);
    return i ? &w->entries[*i] : NULL;
}

static uint64_t trace_table_key(unsigned type, uint32_t id)
{
    return (uint64_t)type << 32 | id;
}

static int trace_writer_retain(struct trace_writer *w, const struct trace_event *ev)
{
    size_t bytes = ev->type == TRACE_EV_STRING  ? ev->u.string.len
                   : ev->type == TRACE_EV_STACK ? (size_t)ev->u.stack.nframes * 8
                                                : 0;
    struct trace_u64map *map = ev->type == TRACE_EV_CONN ? &w->conn_index : &w->table_index;
    uint64_t key =
        ev->type == TRACE_EV_CONN ? ev->u.conn.conn_id : trace_table_key(ev->type, ev->u.string.id);
    struct trace_writer_entry *e = trace_writer_entry_find(w, map, key);
    if (!e) {
        if (w->retained_bytes + bytes + sizeof *e > TRACE_WRITER_RETAIN_BYTES)
            return 0; /* over budget: not repeated (FORMAT.md §5.3) */
        if (grow_array((void **)&w->entries, &w->cap_entries, w->nentries + 1, sizeof *w->entries,
                       64) != 0)
            return trace_writer_fail(w, "out of memory retaining identity records");
        if (!trace_u64map_upsert(map, key, (uint32_t)w->nentries, NULL))
            return trace_writer_fail(w, "out of memory retaining identity records");
        e = &w->entries[w->nentries++];
        memset(e, 0, sizeof *e);
        w->retained_bytes += sizeof *e;
    } else {
        w->retained_bytes -= e->ev.type == TRACE_EV_STRING  ? e->ev.u.string.len
                             : e->ev.type == TRACE_EV_STACK ? (size_t)e->ev.u.stack.nframes * 8
                                                            : 0;
        free(e->data);
        e->data = NULL;
    }
    e->ev = *ev;
    e->ev.data = NULL;
    if (bytes) {
        if (!(e->data = malloc(bytes)))
            return trace_writer_fail(w, "out of memory retaining identity records");
        memcpy(e->data, ev->data, bytes);
        e->ev.data = e->data;
        w->retained_bytes += bytes;
    }
    if (e->ev.type == TRACE_EV_CONN)
        e->ev.op = TRACE_CONN_IDENT;
    e->emitted_in = w->seq + 1;
    return 0;
}

/* Identity records ev refers to that the current chunk lacks. */
static size_t trace_writer_missing(struct trace_writer *w, const struct trace_event *ev,
                                   struct trace_writer_entry **out, size_t *bytes)
{
    uint64_t keys[5];
    struct trace_u64map *maps[5];
    size_t nk = 0, n = 0;
    if (ev->stack_id)
        maps[nk] = &w->table_index, keys[nk++] = trace_table_key(TRACE_EV_STACK, ev->stack_id);
    switch (ev->type) {
    case TRACE_EV_FILE:
        if (ev->u.file.path_id)
            maps[nk] = &w->table_index,
            keys[nk++] = trace_table_key(TRACE_EV_STRING, ev->u.file.path_id);
        break;
    case TRACE_EV_DB:
        if (ev->u.db.query_id)
            maps[nk] = &w->table_index,
            keys[nk++] = trace_table_key(TRACE_EV_STRING, ev->u.db.query_id);
        if (ev->u.db.params_id)
            maps[nk] = &w->table_index,
            keys[nk++] = trace_table_key(TRACE_EV_STRING, ev->u.db.params_id);
        break;
    case TRACE_EV_LABEL:
        if (ev->u.label.label_id)
            maps[nk] = &w->table_index,
            keys[nk++] = trace_table_key(TRACE_EV_STRING, ev->u.label.label_id);
        if (ev->u.label.conn_id)
            maps[nk] = &w->conn_index, keys[nk++] = ev->u.label.conn_id;
        break;
    case TRACE_EV_NET:
        if (ev->u.net.conn_id)
            maps[nk] = &w->conn_index, keys[nk++] = ev->u.net.conn_id;
        break;
    case TRACE_EV_SOCKOPT:
        if (ev->u.sockopt.conn_id)
            maps[nk] = &w->conn_index, keys[nk++] = ev->u.sockopt.conn_id;
        break;
    default:
        break;
    }
    *bytes = 0;
    for (size_t i = 0; i < nk; i++) {
        struct trace_writer_entry *e = trace_writer_entry_find(w, maps[i], keys[i]);
        if (e && e->emitted_in != w->seq + 1) {
            out[n++] = e;
            *bytes += trace_codec_record_bound(&e->ev);
        }
    }
    return n;
}

/* Reserves room and puts ev, after the CPU event cpu when not NULL
 * (trace_writer_put_after_cpu); in ring mode, first the identities ev
 * refers to that the chunk lacks (§5.3), which then go between cpu and ev
 * (each has its own tid and times), and ev's own identity is retained. */
static int trace_writer_reserve_put(struct trace_writer *w, const struct trace_event *cpu,
                                    const struct trace_event *ev)
{
    size_t need = trace_codec_record_bound(ev) + (cpu ? trace_codec_record_bound(cpu) : 0);
    struct trace_writer_entry *missing[5];
    size_t extra = 0, nmissing = w->ring ? trace_writer_missing(w, ev, missing, &extra) : 0;
    int began = trace_writer_reserve(w, need + extra);
    if (began < 0)
        return -1;
    if (began && w->ring) { /* a new chunk: everything it refers to must be repeated */
        nmissing = trace_writer_missing(w, ev, missing, &extra);
        if (trace_writer_reserve(w, need + extra) < 0)
            return -1;
    }
    if (cpu && nmissing && trace_writer_put(w, cpu, 0) != 0)
        return -1;
    for (size_t i = 0; i < nmissing; i++) {
        if (trace_writer_put(w, &missing[i]->ev, 1) != 0)
            return -1;
        missing[i]->emitted_in = w->seq + 1;
    }
    int rc = cpu && !nmissing ? trace_writer_put_after_cpu(w, cpu, ev) : trace_writer_put(w, ev, 0);
    if (rc != 0)
        return -1;
    if (w->ring && (ev->type == TRACE_EV_STRING || ev->type == TRACE_EV_STACK ||
                    (ev->type == TRACE_EV_CONN && ev->u.conn.conn_id &&
                     (ev->op == TRACE_CONN_ACCEPT || ev->op == TRACE_CONN_CONNECT ||
                      ev->op == TRACE_CONN_IDENT))))
        return trace_writer_retain(w, ev);
    return 0;
}

/* ---- public API ------------------------------------------------------------ */

struct trace_writer *trace_writer_open(const char *path, const struct trace_header *hdr,
                                       const struct trace_writer_options *opt, char *err,
                                       size_t errlen)
{
    struct trace_writer_options o = {0};
    if (opt)
        o = *opt;
    struct trace_writer *w = calloc(1, sizeof *w);
    uint8_t *hbuf = NULL;
    if (!w || !(w->path = strdup(path))) {
        snprintf(err, errlen, "%s: out of memory", path);
        free(w);
        return NULL;
    }
    w->fd = -1;
    trace_codec_init(&w->codec);
    trace_u64map_init(&w->table_index);
    trace_u64map_init(&w->conn_index);
    w->frame_bytes = o.frame_bytes ? o.frame_bytes : TRACE_WRITER_DEFAULT_FRAME;
    if (w->frame_bytes < 1024)
        w->frame_bytes = 1024;
    if (w->frame_bytes > TRACE_WRITER_MAX_FRAME)
        w->frame_bytes = TRACE_WRITER_MAX_FRAME;
    if (hdr->argv_len && !hdr->argv_joined) {
        trace_writer_fail(w, "header argv_len is %u but argv_joined is NULL", hdr->argv_len);
        goto fail;
    }
    if (hdr->argv_len > TRACE_HEADER_MAX_PAYLOAD / 2) {
        trace_writer_fail(w, "argv of %u bytes is too long for the header", hdr->argv_len);
        goto fail;
    }
    w->ring = o.max_bytes != 0;
    size_t hlen = trace_header_build(NULL, hdr, 0);
    w->max_bytes = o.max_bytes;
    w->ring_index_offset = hlen;
    w->ring_base = hlen + 8 + TRACE_RING_PAYLOAD;
    if (w->ring) {
        uint64_t min =
            w->ring_base + 4 * (8 + TRACE_CHUNK_PAYLOAD +
                                ZSTD_compressBound(w->frame_bytes + TRACE_RECORD_FIXED_MAX));
        if (o.max_bytes < min) {
            trace_writer_fail(w,
                              "max_bytes %llu is too small for %zu-byte frames (need at "
                              "least %llu)",
                              (unsigned long long)o.max_bytes, w->frame_bytes,
                              (unsigned long long)min);
            goto fail;
        }
    }
    w->raw_cap = w->frame_bytes + TRACE_RECORD_FIXED_MAX;
    w->zcap = ZSTD_compressBound(w->raw_cap);
    w->raw = malloc(w->raw_cap);
    w->zbuf = malloc(w->zcap);
    w->cctx = ZSTD_createCCtx();
    hbuf = malloc(hlen);
    if (!w->raw || !w->zbuf || !w->cctx || !hbuf) {
        trace_writer_fail(w, "out of memory");
        goto fail;
    }
    int level = o.compression_level ? o.compression_level : 3;
    size_t r = ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, level);
    if (!ZSTD_isError(r))
        r = ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_checksumFlag, 1);
    if (!ZSTD_isError(r))
        r = ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_contentSizeFlag, 1);
    if (ZSTD_isError(r)) {
        trace_writer_fail(w, "zstd setup failed: %s", ZSTD_getErrorName(r));
        goto fail;
    }
    /* a fresh file, never a planted link's target (out_file.h) */
    char cerr[512];
    w->fd = out_file_create(path, O_WRONLY, 0600, cerr, sizeof cerr);
    if (w->fd < 0) {
        snprintf(w->err, sizeof w->err, "%s", cerr);
        w->failed = 1;
        goto fail;
    }
    trace_header_build(hbuf, hdr, w->ring ? TRACE_HEADER_FLAG_RING : 0);
    struct iovec v = {hbuf, hlen};
    if (trace_writer_pwrite(w, &v, 1, 0) != 0)
        goto fail;
    w->append_offset = hlen;
    w->bytes_written = hlen;
    if (w->ring) {
        w->head = w->ring_base;
        w->index.oldest_offset = w->ring_base;
        w->index.head_offset = w->ring_base;
        if (trace_writer_write_index(w) != 0)
            goto fail;
        w->bytes_written += 8 + TRACE_RING_PAYLOAD;
    }
    free(hbuf);
    return w;
fail:
    snprintf(err, errlen, "%s", w->err);
    free(hbuf);
    trace_writer_close(w, NULL, 0);
    return NULL;
}

/* 1 when a COUNTERS event would not read back (FORMAT.md §9). */
static int trace_writer_counters_bad(const struct trace_event *ev)
{
    const char *why;
    const uint8_t *p = ev->data;
    return ev->u.counters.nvalues > TRACE_MAX_COUNTERS || (ev->u.counters.bytes && !p) ||
           trace_counters_check(ev, p, p + ev->u.counters.bytes, &why) != 0;
}

int trace_writer_append(struct trace_writer *w, const struct trace_event *ev)
{
    if (w->failed)
        return -1;
    /* The collector's common case, one call per event: a fixed-size record
     * in a plain file whose chunk has room (what trace_writer_reserve would
     * find without doing anything). */
    if (!w->ring && ev->type != TRACE_EV_NONE && ev->type < TRACE_EV_TYPE_COUNT &&
        ev->type != TRACE_EV_STRING && ev->type != TRACE_EV_STACK &&
        ev->type != TRACE_EV_COUNTERS && !(ev->flags & TRACE_F_AFTER_CPU) &&
        w->raw_len + TRACE_RECORD_FIXED_MAX <= w->frame_bytes)
        return trace_writer_put(w, ev, 0);
    if (ev->type == TRACE_EV_NONE || ev->type >= TRACE_EV_TYPE_COUNT)
        return trace_writer_fail(w, "event type %u is not a trace event type", ev->type);
    if (ev->flags & TRACE_F_AFTER_CPU)
        return trace_writer_fail(w,
                                 "event of type %u carries flag 0x%x, which only the format "
                                 "itself sets (trace_writer_append_after_cpu)",
                                 ev->type, TRACE_F_AFTER_CPU);
    if (ev->type == TRACE_EV_STRING &&
        (ev->u.string.len > TRACE_WRITER_MAX_STRING || (ev->u.string.len && !ev->data)))
        return trace_writer_fail(w, "string %u: %u bytes (limit %u, data must not be NULL)",
                                 ev->u.string.id, ev->u.string.len, TRACE_WRITER_MAX_STRING);
    if (ev->type == TRACE_EV_STACK && (ev->u.stack.nframes > TRACE_WRITER_MAX_FRAMES_PER_STACK ||
                                       (ev->u.stack.nframes && !ev->data)))
        return trace_writer_fail(w, "stack %u: %u frames (limit %u, data must not be NULL)",
                                 ev->u.stack.id, ev->u.stack.nframes,
                                 TRACE_WRITER_MAX_FRAMES_PER_STACK);
    if (ev->type == TRACE_EV_COUNTERS && trace_writer_counters_bad(ev))
        return trace_writer_fail(w,
                                 "counters at %llu ns: %u values in %u bytes that do not "
                                 "decode (limit %u values, names 1-%u bytes, values NAN or "
                                 "finite >= 0, dur_ns > 0)",
                                 (unsigned long long)ev->ts_ns, ev->u.counters.nvalues,
                                 ev->u.counters.bytes, TRACE_MAX_COUNTERS, TRACE_MAX_COUNTER_NAME);
    return trace_writer_reserve_put(w, NULL, ev);
}

int trace_writer_append_after_cpu(struct trace_writer *w, const struct trace_event *cpu,
                                  const struct trace_event *ev)
{
    if (w->failed)
        return -1;
    if (!trace_writer_pair_fits(cpu, ev))
        return trace_writer_append(w, cpu) != 0 ? -1 : trace_writer_append(w, ev);
    /* the collector's common case, as in trace_writer_append */
    if (!w->ring && w->raw_len + 2 * TRACE_RECORD_FIXED_MAX <= w->frame_bytes)
        return trace_writer_put_after_cpu(w, cpu, ev);
    return trace_writer_reserve_put(w, cpu, ev);
}

int trace_writer_flush(struct trace_writer *w)
{
    return trace_writer_flush_frame(w);
}

const char *trace_writer_error(const struct trace_writer *w)
{
    return w->err[0] ? w->err : NULL;
}

uint64_t trace_writer_bytes(const struct trace_writer *w)
{
    return w->bytes_written;
}

int trace_writer_close(struct trace_writer *w, char *err, size_t errlen)
{
    if (!w)
        return 0;
    int rc = 0;
    if (w->fd >= 0) {
        if (trace_writer_flush_frame(w) != 0)
            rc = -1;
        if (close(w->fd) != 0 && rc == 0) {
            trace_writer_fail(w, "close failed: %s", strerror(errno));
            rc = -1;
        }
    }
    if (w->failed)
        rc = -1;
    if (err && errlen)
        snprintf(err, errlen, "%s", w->err);
    for (size_t i = 0; i < w->nentries; i++)
        free(w->entries[i].data);
    free(w->entries);
    trace_u64map_free(&w->table_index);
    trace_u64map_free(&w->conn_index);
    free(w->live);
    ZSTD_freeCCtx(w->cctx);
    trace_codec_free(&w->codec);
    free(w->raw);
    free(w->zbuf);
    free(w->path);
    free(w);
    return rc;
}
