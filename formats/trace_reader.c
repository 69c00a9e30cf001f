/* trace_reader.c - streaming reader of preplay trace files (FORMAT.md).
 *
 * Holds at most one frame in memory (its compressed and decompressed bytes)
 * plus the string table, reads chunks with pread so a ring-mode file can be
 * followed across its wrap point, and reports damage precisely: the file,
 * the offset of the chunk and the index of the record. With salvage it stops
 * at the first damage, delivers everything valid before it (including the
 * complete records of a truncated last frame) and ends with a LOSS event of
 * reason SALVAGE. It must never trust a size read from the file before
 * checking it against the file size and the format's limits. */
#include "trace_codec.h"
#include "trace_file.h"
#include "mem_budget.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>
#include <zstd_errors.h>

struct trace_reader_string_slot {
    uint64_t offset; /* into arena */
    uint32_t len;
};

struct trace_reader {
    int fd;
    int salvage;
    char *path;
    char err[768], warn[768];
    struct trace_header hdr;
    uint64_t file_size, pos, expected_seq;
    ZSTD_DCtx *dctx;
    struct trace_codec codec;
    uint8_t *zbuf, *raw;
    size_t zcap, raw_cap;
    /* current frame */
    const uint8_t *p, *end;
    int in_frame, frame_truncated;
    uint64_t chunk_offset;
    uint32_t record_index, events_in_frame;
    struct trace_chunk_header chunk;
    /* ring */
    int ring, wrapped;
    uint64_t ring_base;
    struct trace_ring_index index;
    /* events made up by the reader (ring drop, salvage loss) */
    struct trace_event synth[3];
    int nsynth, synth_pos;
    /* the event of a TRACE_F_AFTER_CPU record, delivered after its CPU slice */
    struct trace_event after_cpu;
    int have_after_cpu;
    int state; /* 0 reading, 1 clean end, -1 damaged */
    uint64_t skipped;
    /* string table */
    struct trace_u64map string_index;
    struct trace_reader_string_slot *strings;
    size_t nstrings, cap_strings;
    char *arena;
    size_t arena_len, arena_cap;
    char limit_why[160]; /* the reason trace_reader_check_limits gave */
    /* what the string table (ids, slots, bytes) takes and the most it may:
     * 256 STRINGs of 16 MiB of zeros compress to ~130 KB and made `info`
     * hold 4 GiB */
    struct mem_budget mem;
};

static void trace_reader_format(char *buf, size_t cap, const char *path, const char *fmt,
                                va_list ap)
{
    int n = snprintf(buf, cap, "%s: ", path);
    if (n > 0 && (size_t)n < cap)
        vsnprintf(buf + n, cap - (size_t)n, fmt, ap);
}

static void trace_open_fail(char *err, size_t errlen, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void trace_open_fail(char *err, size_t errlen, const char *path, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (err && errlen)
        trace_reader_format(err, errlen, path, fmt, ap);
    va_end(ap);
}

static int trace_pread_full(int fd, void *buf, size_t len, uint64_t off)
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

/* Damage: with salvage, queue the SALVAGE loss event and end cleanly after it;
 * without, fail. Returns what trace_reader_next should return. */
static int trace_reader_damage(struct trace_reader *r, struct trace_event *ev, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int trace_reader_damage(struct trace_reader *r, struct trace_event *ev, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    trace_reader_format(r->salvage ? r->warn : r->err, sizeof r->err, r->path, fmt, ap);
    va_end(ap);
    r->in_frame = 0;
    if (!r->salvage) {
        r->state = -1;
        return -1;
    }
    r->state = 1;
    memset(ev, 0, sizeof *ev);
    ev->type = TRACE_EV_LOSS;
    ev->u.loss.reason = TRACE_LOSS_SALVAGE;
    if (r->chunk_offset) {
        uint32_t n = r->chunk.nevents;
        ev->u.loss.count = n > r->events_in_frame ? n - r->events_in_frame : 0;
        ev->u.loss.from_ns = r->chunk.first_ts;
        ev->u.loss.to_ns = r->chunk.last_ts;
        ev->ts_ns = r->chunk.first_ts;
    }
    return 1;
}

/* A STRING or STACK within the limits of trace_file.h, and room for a new
 * string in the table. 0, or -1 with why (a static or r-owned message). */
static int trace_reader_check_limits(struct trace_reader *r, const struct trace_event *ev,
                                     const char **why)
{
    if (ev->type == TRACE_EV_STACK && ev->u.stack.nframes > TRACE_MAX_STACK_FRAMES) {
        snprintf(r->limit_why, sizeof r->limit_why, "STACK nframes %u exceeds the limit %u",
                 ev->u.stack.nframes, TRACE_MAX_STACK_FRAMES);
        *why = r->limit_why;
        return -1;
    }
    if (ev->type == TRACE_EV_COUNTERS && ev->u.counters.nvalues > TRACE_MAX_COUNTERS) {
        snprintf(r->limit_why, sizeof r->limit_why, "COUNTERS nvalues %u exceeds the limit %u",
                 ev->u.counters.nvalues, TRACE_MAX_COUNTERS);
        *why = r->limit_why;
        return -1;
    }
    if (ev->type != TRACE_EV_STRING)
        return 0;
    if (ev->u.string.len > TRACE_MAX_STRING_BYTES)
        snprintf(r->limit_why, sizeof r->limit_why, "STRING len %u exceeds the limit %u",
                 ev->u.string.len, TRACE_MAX_STRING_BYTES);
    else if (trace_u64map_find(&r->string_index, ev->u.string.id))
        return 0; /* a repeat (ring mode) adds nothing */
    else if (r->nstrings + 1 > TRACE_MAX_STRINGS)
        snprintf(r->limit_why, sizeof r->limit_why, "strings %zu exceeds the limit %u",
                 r->nstrings + 1, TRACE_MAX_STRINGS);
    else if (r->arena_len + ev->u.string.len + 1 > TRACE_MAX_STRING_TABLE_BYTES)
        snprintf(r->limit_why, sizeof r->limit_why,
                 "string table bytes %llu exceeds the limit %llu",
                 (unsigned long long)(r->arena_len + ev->u.string.len + 1),
                 (unsigned long long)TRACE_MAX_STRING_TABLE_BYTES);
    else
        return 0;
    *why = r->limit_why;
    return -1;
}

/* Capacities that hold one more string of len bytes: the slots, the arena
 * (doubling, or only what is needed when doubling would pass the budget)
 * and the id map's table (trace_u64map grows at half full). Charges what
 * they add to the budget: 0, or -1 with r->limit_why. */
static int trace_reader_charge_string(struct trace_reader *r, uint32_t id, size_t len,
                                      size_t *slots_cap, size_t *arena_cap)
{
    uint64_t add = 0;
    *slots_cap = r->cap_strings;
    if (r->nstrings == r->cap_strings) {
        *slots_cap = r->cap_strings ? r->cap_strings * 2 : 256;
        add += (uint64_t)(*slots_cap - r->cap_strings) * sizeof *r->strings;
    }
    const struct trace_u64map *m = &r->string_index;
    if ((m->count + 1) * 2 > m->cap)
        add += (uint64_t)(m->cap ? m->cap : 64) * sizeof *m->slots;
    uint64_t need = (uint64_t)r->arena_len + len + 1, ncap = r->arena_cap;
    if (need > r->arena_cap) {
        ncap = r->arena_cap ? r->arena_cap : 4096;
        while (ncap < need)
            ncap *= 2;
    }
    *arena_cap = (size_t)ncap;
    if (mem_budget_charge(&r->mem, add + (ncap - r->arena_cap)) == 0)
        return 0;
    /* near the budget: only what this string needs */
    if (need > r->arena_cap && ncap > need &&
        mem_budget_charge(&r->mem, add + (need - r->arena_cap)) == 0) {
        *arena_cap = (size_t)need;
        return 0;
    }
    snprintf(r->limit_why, sizeof r->limit_why,
             "STRING id %u: the string table (%zu strings, %zu bytes) needs more memory than "
             "the %.0f MB available",
             id, r->nstrings + 1, r->arena_len + len + 1, mem_budget_mb(&r->mem));
    return -1;
}

/* Keeps a STRING in the table (a repeat, in ring mode, adds nothing):
 * 0, or -1 with r->limit_why (beyond the budget, or out of memory). */
static int trace_reader_keep_string(struct trace_reader *r, const struct trace_event *ev)
{
    if (trace_u64map_find(&r->string_index, ev->u.string.id))
        return 0; /* ring mode repeats strings; the first copy stays */
    size_t len = ev->u.string.len, slots_cap, arena_cap;
    if (trace_reader_charge_string(r, ev->u.string.id, len, &slots_cap, &arena_cap) != 0)
        return -1;
    snprintf(r->limit_why, sizeof r->limit_why, "out of memory for the string table");
    if (slots_cap != r->cap_strings) {
        void *n = realloc(r->strings, slots_cap * sizeof *r->strings);
        if (!n)
            return -1;
        r->strings = n;
        r->cap_strings = slots_cap;
    }
    if (arena_cap != r->arena_cap) {
        char *n = realloc(r->arena, arena_cap);
        if (!n)
            return -1;
        r->arena = n;
        r->arena_cap = arena_cap;
    }
    int inserted;
    if (!trace_u64map_upsert(&r->string_index, ev->u.string.id, (uint32_t)r->nstrings, &inserted))
        return -1;
    if (len)
        memcpy(r->arena + r->arena_len, ev->data, len);
    r->arena[r->arena_len + len] = '\0';
    r->strings[r->nstrings++] = (struct trace_reader_string_slot){r->arena_len, (uint32_t)len};
    r->arena_len += len + 1;
    return 0;
}

/* ---- header (FORMAT.md §2) ------------------------------------------------ */

static int trace_header_copy_str(char *dst, size_t cap, const uint8_t *v, uint32_t len)
{
    if (len >= cap)
        return -1;
    memcpy(dst, v, len);
    dst[len] = '\0';
    return 0;
}

static int trace_reader_parse_header(struct trace_reader *r, const uint8_t *pl, size_t n, char *err,
                                     size_t errlen)
{
    struct trace_header *h = &r->hdr;
    size_t at = 16;
    while (at < n - 4) {
        if (n - 4 - at < 6) {
            trace_open_fail(err, errlen, r->path, "header field at offset %zu is truncated",
                            8 + at);
            return -1;
        }
        uint16_t tag = trace_get_le16(pl + at);
        uint32_t len = trace_get_le32(pl + at + 2);
        const uint8_t *v = pl + at + 6;
        if (len > n - 4 - at - 6) {
            trace_open_fail(err, errlen, r->path,
                            "header field %u at offset %zu runs past the header", tag, 8 + at);
            return -1;
        }
        int bad = 0;
        switch (tag) {
        case TRACE_HDR_HOST:
            bad = trace_header_copy_str(h->host, sizeof h->host, v, len);
            break;
        case TRACE_HDR_COMPONENT:
            bad = trace_header_copy_str(h->component, sizeof h->component, v, len);
            break;
        case TRACE_HDR_RECORDING_ID:
            bad = trace_header_copy_str(h->recording_id, sizeof h->recording_id, v, len);
            break;
        case TRACE_HDR_TRACER_VERSION:
            bad = trace_header_copy_str(h->tracer_version, sizeof h->tracer_version, v, len);
            break;
        case TRACE_HDR_EXE:
            bad = trace_header_copy_str(h->exe, sizeof h->exe, v, len);
            break;
        case TRACE_HDR_RECORD_OPTIONS:
            bad = trace_header_copy_str(h->record_options, sizeof h->record_options, v, len);
            break;
        case TRACE_HDR_ARGV:
            free(h->argv_joined);
            h->argv_joined = malloc(len + 1u);
            if (!h->argv_joined) {
                trace_open_fail(err, errlen, r->path, "out of memory");
                return -1;
            }
            memcpy(h->argv_joined, v, len);
            h->argv_joined[len] = '\0';
            h->argv_len = len;
            break;
        case TRACE_HDR_PID:
        case TRACE_HDR_PPID:
            bad = len < 4;
            if (!bad)
                *(tag == TRACE_HDR_PID ? &h->pid : &h->ppid) = trace_get_le32(v);
            break;
        case TRACE_HDR_MONO_ANCHOR:
        case TRACE_HDR_REAL_ANCHOR:
            bad = len < 8;
            if (!bad)
                *(tag == TRACE_HDR_MONO_ANCHOR ? &h->mono_anchor_ns : &h->real_anchor_ns) =
                    trace_get_le64(v);
            break;
        case TRACE_HDR_CPU_SCORE:
            bad = len < 32;
            if (!bad && h->ncpu_scores < TRACE_MAX_CPU_SCORES) {
                struct trace_cpu_score *s = &h->cpu_scores[h->ncpu_scores++];
                memcpy(s->name, v, 23);
                s->name[23] = '\0';
                uint64_t bits = trace_get_le64(v + 24);
                memcpy(&s->seconds, &bits, 8);
            }
            break;
        default: /* a field from a later minor version */
            break;
        }
        if (bad) {
            trace_open_fail(err, errlen, r->path,
                            "header field %u at offset %zu has a bad length (%u bytes)", tag,
                            8 + at, len);
            return -1;
        }
        at += 6 + (size_t)len;
    }
    return 0;
}

static int trace_reader_read_header(struct trace_reader *r, char *err, size_t errlen)
{
    uint8_t pre[8];
    if (r->file_size < 8 || trace_pread_full(r->fd, pre, 8, 0) != 0) {
        trace_open_fail(err, errlen, r->path,
                        r->file_size ? "not a preplay trace (%llu bytes, too short)"
                                     : "not a preplay trace (empty file)",
                        (unsigned long long)r->file_size);
        return -1;
    }
    uint32_t size = trace_get_le32(pre + 4);
    uint8_t first[16];
    if (trace_get_le32(pre) != TRACE_HEADER_FRAME_MAGIC || r->file_size < 24 ||
        trace_pread_full(r->fd, first, 16, 8) != 0 || memcmp(first, TRACE_FILE_MAGIC, 8) != 0) {
        trace_open_fail(err, errlen, r->path, "not a preplay trace (bad magic)");
        return -1;
    }
    r->hdr.version_major = trace_get_le16(first + 8);
    r->hdr.version_minor = trace_get_le16(first + 10);
    if (r->hdr.version_major < TRACE_FORMAT_MAJOR_OLDEST ||
        r->hdr.version_major > TRACE_FORMAT_MAJOR) {
        trace_open_fail(err, errlen, r->path,
                        "unknown format major version %u (this preplay reads %u to %u)",
                        r->hdr.version_major, TRACE_FORMAT_MAJOR_OLDEST, TRACE_FORMAT_MAJOR);
        return -1;
    }
    if (size < 20 || size > TRACE_HEADER_MAX_PAYLOAD) {
        trace_open_fail(err, errlen, r->path, "header size %u is out of range", size);
        return -1;
    }
    if ((uint64_t)size + 8 > r->file_size) {
        trace_open_fail(err, errlen, r->path,
                        "truncated header (%u bytes announced, file has %llu)", size,
                        (unsigned long long)r->file_size);
        return -1;
    }
    uint8_t *pl = malloc(size);
    if (!pl || trace_pread_full(r->fd, pl, size, 8) != 0) {
        trace_open_fail(err, errlen, r->path, "cannot read the header: %s",
                        pl ? strerror(errno) : "out of memory");
        free(pl);
        return -1;
    }
    int rc = -1;
    uint32_t flags = trace_get_le32(pl + 12);
    if (trace_get_le32(pl + size - 4) != trace_crc32(pl, size - 4)) {
        trace_open_fail(err, errlen, r->path, "header checksum mismatch");
        goto out;
    }
    if (trace_reader_parse_header(r, pl, size, err, errlen) != 0)
        goto out;
    r->pos = 8 + (uint64_t)size;
    r->ring = (flags & TRACE_HEADER_FLAG_RING) != 0;
    if (r->ring) {
        uint8_t rf[8 + TRACE_RING_PAYLOAD];
        uint64_t at = r->pos;
        if (trace_pread_full(r->fd, rf, sizeof rf, at) != 0) {
            trace_open_fail(err, errlen, r->path, "truncated ring index at offset %llu",
                            (unsigned long long)at);
            goto out;
        }
        uint32_t rsize = trace_get_le32(rf + 4);
        if (trace_get_le32(rf) != TRACE_RING_FRAME_MAGIC || rsize < TRACE_RING_PAYLOAD ||
            rsize > 4096) {
            trace_open_fail(err, errlen, r->path, "bad ring index frame at offset %llu",
                            (unsigned long long)at);
            goto out;
        }
        if (trace_ring_index_unpack(rf + 8, &r->index) != 0) {
            trace_open_fail(err, errlen, r->path, "ring index at offset %llu: checksum mismatch",
                            (unsigned long long)at);
            goto out;
        }
        r->ring_base = at + 8 + rsize;
        struct trace_ring_index *x = &r->index;
        if (x->oldest_offset < r->ring_base || x->head_offset < r->ring_base ||
            (x->lap_end && x->lap_end < r->ring_base)) {
            trace_open_fail(err, errlen, r->path,
                            "ring index at offset %llu points outside the data region",
                            (unsigned long long)at);
            goto out;
        }
        r->pos = x->oldest_offset;
        r->expected_seq = x->oldest_seq;
        if (x->dropped_chunks) {
            struct trace_event *w = &r->synth[r->nsynth++];
            memset(w, 0, sizeof *w);
            w->type = TRACE_EV_CONTROL;
            w->op = TRACE_CTL_RING_WRAP;
            w->ts_ns = x->dropped_from_ns;
            w->u.control.arg0 = (int64_t)x->dropped_from_ns;
            w->u.control.arg1 = (int64_t)x->dropped_to_ns;
            struct trace_event *l = &r->synth[r->nsynth++];
            memset(l, 0, sizeof *l);
            l->type = TRACE_EV_LOSS;
            l->ts_ns = x->dropped_from_ns;
            l->u.loss.count = x->dropped_events;
            l->u.loss.from_ns = x->dropped_from_ns;
            l->u.loss.to_ns = x->dropped_to_ns;
            l->u.loss.reason = TRACE_LOSS_RING_OVERWRITE;
        }
    }
    rc = 0;
out:
    free(pl);
    return rc;
}

/* ---- chunks (FORMAT.md §4) ------------------------------------------------ */

/* Grows a frame buffer to need bytes, charged to the reader's budget
 * (frames are at most TRACE_FRAME_MAX_RAW, but two of them count). */
static int trace_reader_grow(struct trace_reader *r, uint8_t **buf, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    if (mem_budget_charge(&r->mem, need - *cap) != 0)
        return -1;
    uint8_t *n = realloc(*buf, need);
    if (!n)
        return -1;
    *buf = n;
    *cap = need;
    return 0;
}

/* Whether the reader stands at the end of the chunks (a ring-mode file
 * ends at its head, after following the lap end back to the data start). */
static int trace_reader_at_end(struct trace_reader *r)
{
    if (r->ring) {
        if (!r->wrapped && r->index.lap_end && r->pos == r->index.lap_end) {
            r->pos = r->ring_base;
            r->wrapped = 1;
        }
        return r->pos == r->index.head_offset;
    }
    return r->pos == r->file_size;
}

static int trace_reader_skippable_magic(uint32_t magic)
{
    return magic >= TRACE_SKIPPABLE_MAGIC_MIN && magic <= TRACE_SKIPPABLE_MAGIC_MAX &&
           magic != TRACE_HEADER_FRAME_MAGIC && magic != TRACE_RING_FRAME_MAGIC;
}

/* Reads the frame header at `at`. 1 a chunk frame (*size its chunk header
 * size), 0 a skippable frame a later minor version added (r->pos moved past
 * it), otherwise *damage and the value trace_reader_damage returned. */
static int trace_reader_frame_header(struct trace_reader *r, struct trace_event *ev, uint64_t at,
                                     uint32_t *size, int *damage)
{
    uint8_t fh[8];
    if (at > r->file_size || r->file_size - at < 8) {
        *damage = 1;
        return trace_reader_damage(r, ev, "truncated frame at offset %llu (record 0)",
                                   (unsigned long long)at);
    }
    if (trace_pread_full(r->fd, fh, 8, at) != 0) {
        *damage = 1;
        return trace_reader_damage(r, ev, "read error at offset %llu: %s", (unsigned long long)at,
                                   strerror(errno));
    }
    uint32_t magic = trace_get_le32(fh);
    *size = trace_get_le32(fh + 4);
    if (magic == TRACE_CHUNK_FRAME_MAGIC)
        return 1;
    if (trace_reader_skippable_magic(magic) && (uint64_t)*size <= r->file_size - at - 8) {
        r->pos = at + 8 + *size; /* a frame a later minor version added */
        return 0;
    }
    *damage = 1;
    if (magic == TRACE_ZSTD_FRAME_MAGIC)
        return trace_reader_damage(r, ev, "frame at offset %llu: no chunk header",
                                   (unsigned long long)at);
    if (trace_reader_skippable_magic(magic))
        return trace_reader_damage(r, ev, "truncated frame at offset %llu (record 0)",
                                   (unsigned long long)at);
    return trace_reader_damage(r, ev, "frame at offset %llu: bad frame magic 0x%08x",
                               (unsigned long long)at, magic);
}

/* Reads and checks the chunk header (size bytes after the frame header at
 * `at`) into r->chunk: its checksum, sequence number and frame sizes.
 * 0 valid, otherwise *damage and the value trace_reader_damage returned. */
static int trace_reader_chunk_header(struct trace_reader *r, struct trace_event *ev, uint64_t at,
                                     uint32_t size, int *damage)
{
    uint8_t ch[TRACE_CHUNK_PAYLOAD];
    if (size < TRACE_CHUNK_PAYLOAD || size > 4096) {
        *damage = 1;
        return trace_reader_damage(r, ev, "frame at offset %llu: bad chunk header size %u",
                                   (unsigned long long)at, size);
    }
    if (r->file_size - at - 8 < size || trace_pread_full(r->fd, ch, sizeof ch, at + 8) != 0) {
        *damage = 1;
        return trace_reader_damage(r, ev, "truncated frame at offset %llu (record 0)",
                                   (unsigned long long)at);
    }
    if (trace_chunk_header_unpack(ch, &r->chunk) != 0) {
        *damage = 1;
        return trace_reader_damage(r, ev, "frame at offset %llu: chunk header checksum mismatch",
                                   (unsigned long long)at);
    }
    r->chunk_offset = at;
    r->events_in_frame = 0;
    r->record_index = 0;
    const struct trace_chunk_header *c = &r->chunk;
    if (c->seq != r->expected_seq) {
        *damage = 1;
        return trace_reader_damage(r, ev,
                                   "frame at offset %llu: chunk sequence %llu, expected %llu",
                                   (unsigned long long)at, (unsigned long long)c->seq,
                                   (unsigned long long)r->expected_seq);
    }
    if (c->raw_size > TRACE_FRAME_MAX_RAW || c->compressed_size > TRACE_FRAME_MAX_RAW) {
        *damage = 1;
        return trace_reader_damage(r, ev,
                                   "frame at offset %llu: frame of %u bytes exceeds the %u "
                                   "byte limit",
                                   (unsigned long long)at, c->raw_size, TRACE_FRAME_MAX_RAW);
    }
    return 0;
}

/* Reads the chunk's zstd frame at zoff into r->zbuf: *zlen bytes, fewer
 * than the chunk header says when the file ends first. 0, otherwise
 * *damage and the value trace_reader_damage returned. */
static int trace_reader_read_frame(struct trace_reader *r, struct trace_event *ev, uint64_t at,
                                   uint64_t zoff, size_t *zlen, int *damage)
{
    const struct trace_chunk_header *c = &r->chunk;
    uint64_t avail = r->file_size - zoff;
    *zlen = c->compressed_size < avail ? c->compressed_size : (size_t)avail;
    if (trace_reader_grow(r, &r->zbuf, &r->zcap, *zlen + 1) != 0 ||
        trace_reader_grow(r, &r->raw, &r->raw_cap, (size_t)c->raw_size + 1) != 0) {
        *damage = 1;
        return trace_reader_damage(r, ev,
                                   "frame at offset %llu: a frame of %u bytes needs more memory "
                                   "than the %.0f MB available",
                                   (unsigned long long)at, c->raw_size, mem_budget_mb(&r->mem));
    }
    if (trace_pread_full(r->fd, r->zbuf, *zlen, zoff) != 0) {
        *damage = 1;
        return trace_reader_damage(r, ev, "read error at offset %llu: %s", (unsigned long long)zoff,
                                   strerror(errno));
    }
    return 0;
}

/* How many complete records (type byte, varint length, body) lie at the
 * start of raw[0, len). */
static uint32_t trace_reader_complete_records(const uint8_t *raw, size_t len)
{
    uint32_t k = 0;
    const uint8_t *q = raw, *end = raw + len;
    uint64_t rlen;
    while (q < end) {
        const uint8_t *l = q + 1;
        if (trace_get_varint(&l, end, &rlen) != 0 || rlen > (uint64_t)(end - l))
            break;
        q = l + rlen;
        k++;
    }
    return k;
}

/* A frame cut short by the end of the file: decodes the prefix that is
 * there into r->raw (*got bytes); its complete records are delivered with
 * salvage, then the damage. Without salvage, unverified bytes are not
 * delivered: *damage, naming the first record the cut destroyed. */
static int trace_reader_decode_truncated(struct trace_reader *r, struct trace_event *ev,
                                         uint64_t at, size_t zlen, size_t *got, int *damage)
{
    ZSTD_DCtx_reset(r->dctx, ZSTD_reset_session_only);
    ZSTD_inBuffer in = {r->zbuf, zlen, 0};
    ZSTD_outBuffer out = {r->raw, r->chunk.raw_size, 0};
    while (in.pos < in.size && out.pos < out.size) {
        size_t z = ZSTD_decompressStream(r->dctx, &out, &in);
        if (ZSTD_isError(z) || (out.pos == 0 && in.pos == in.size))
            break;
    }
    *got = out.pos;
    r->frame_truncated = 1;
    if (!r->salvage) {
        *damage = 1;
        return trace_reader_damage(r, ev, "truncated frame at offset %llu (record %u)",
                                   (unsigned long long)at,
                                   trace_reader_complete_records(r->raw, *got));
    }
    return 0;
}

/* A whole frame: checks it is one zstd frame with a content checksum that
 * fills the chunk exactly, and decodes it into r->raw (*got bytes, the
 * chunk's raw size). 0, otherwise *damage and the value trace_reader_damage
 * returned. */
static int trace_reader_decode_frame(struct trace_reader *r, struct trace_event *ev, uint64_t at,
                                     size_t zlen, size_t *got, int *damage)
{
    const struct trace_chunk_header *c = &r->chunk;
    size_t fsize = ZSTD_findFrameCompressedSize(r->zbuf, zlen);
    if (zlen < 5 || trace_get_le32(r->zbuf) != TRACE_ZSTD_FRAME_MAGIC) {
        *damage = 1;
        return trace_reader_damage(r, ev, "frame at offset %llu: not a zstd frame",
                                   (unsigned long long)at);
    }
    /* RFC 8878 §3.1.1.1.1: bit 2 of the frame header descriptor is the
     * Content_Checksum_flag. */
    if (!(r->zbuf[4] & 0x04)) {
        *damage = 1;
        return trace_reader_damage(r, ev, "frame at offset %llu: no content checksum",
                                   (unsigned long long)at);
    }
    if (ZSTD_isError(fsize) || fsize != zlen) {
        *damage = 1;
        return trace_reader_damage(
            r, ev, "frame at offset %llu: zstd frame size does not match the chunk header",
            (unsigned long long)at);
    }
    *got = ZSTD_decompressDCtx(r->dctx, r->raw, c->raw_size, r->zbuf, zlen);
    if (ZSTD_isError(*got)) {
        *damage = 1;
        if (ZSTD_getErrorCode(*got) == ZSTD_error_checksum_wrong)
            return trace_reader_damage(r, ev, "frame at offset %llu: checksum mismatch",
                                       (unsigned long long)at);
        return trace_reader_damage(r, ev, "frame at offset %llu: corrupt zstd frame (%s)",
                                   (unsigned long long)at, ZSTD_getErrorName(*got));
    }
    if (*got != c->raw_size) {
        *damage = 1;
        return trace_reader_damage(r, ev,
                                   "frame at offset %llu: %zu bytes decoded, chunk header "
                                   "says %u",
                                   (unsigned long long)at, *got, c->raw_size);
    }
    r->frame_truncated = 0;
    return 0;
}

/* Loads the next chunk into the frame buffers: frame header, chunk header,
 * the compressed frame, decoded whole or (truncated) as far as it goes.
 * 1 loaded, 0 clean end, otherwise *damage and the value
 * trace_reader_damage returned (ev filled). */
static int trace_reader_load_chunk(struct trace_reader *r, struct trace_event *ev, int *damage)
{
    *damage = 0;
    for (;;) {
        if (trace_reader_at_end(r))
            return 0;
        uint64_t at = r->pos;
        r->chunk_offset = 0;
        uint32_t size;
        int rc = trace_reader_frame_header(r, ev, at, &size, damage);
        if (*damage)
            return rc;
        if (rc == 0)
            continue; /* skipped */
        rc = trace_reader_chunk_header(r, ev, at, size, damage);
        if (*damage)
            return rc;
        uint64_t zoff = at + 8 + size;
        size_t zlen, got;
        rc = trace_reader_read_frame(r, ev, at, zoff, &zlen, damage);
        if (*damage)
            return rc;
        if (zlen < r->chunk.compressed_size)
            rc = trace_reader_decode_truncated(r, ev, at, zlen, &got, damage);
        else
            rc = trace_reader_decode_frame(r, ev, at, zlen, &got, damage);
        if (*damage)
            return rc;
        r->p = r->raw;
        r->end = r->raw + got;
        r->in_frame = 1;
        r->pos = zoff + r->chunk.compressed_size;
        r->expected_seq = r->chunk.seq + 1;
        trace_codec_reset(&r->codec);
        return 1;
    }
}

/* ---- public API ------------------------------------------------------------ */

struct trace_reader *trace_reader_open(const char *path, const struct trace_reader_options *opt,
                                       char *err, size_t errlen)
{
    struct trace_reader *r = calloc(1, sizeof *r);
    if (!r || !(r->path = strdup(path))) {
        trace_open_fail(err, errlen, path, "out of memory");
        free(r);
        return NULL;
    }
    r->salvage = opt ? opt->salvage : 0;
    mem_budget_init(&r->mem, opt ? opt->max_bytes : 0);
    trace_codec_init(&r->codec);
    trace_u64map_init(&r->string_index);
    r->fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (r->fd < 0 || fstat(r->fd, &st) != 0) {
        trace_open_fail(err, errlen, path, "cannot open: %s", strerror(errno));
        goto fail;
    }
    if (!S_ISREG(st.st_mode)) {
        trace_open_fail(err, errlen, path, "not a regular file");
        goto fail;
    }
    r->file_size = (uint64_t)st.st_size;
    if (!(r->dctx = ZSTD_createDCtx())) {
        trace_open_fail(err, errlen, path, "out of memory");
        goto fail;
    }
    if (trace_reader_read_header(r, err, errlen) != 0)
        goto fail;
    return r;
fail:
    trace_reader_close(r);
    return NULL;
}

const struct trace_header *trace_reader_header(const struct trace_reader *r)
{
    return &r->hdr;
}

/* A 2.0 record with TRACE_F_AFTER_CPU holds two events (FORMAT.md §6.4):
 * ev becomes the CPU slice from where its thread stood before the record
 * to ev's start, and ev itself is delivered by the next call. Returns 0,
 * or -1 with why when the record cannot hold a slice. */
static int trace_reader_split_after_cpu(struct trace_reader *r, struct trace_event *ev,
                                        const char **why)
{
    uint64_t from = r->codec.decoded_thread_end;
    if (ev->type == TRACE_EV_CPU || ev->type == TRACE_EV_STRING || ev->type == TRACE_EV_STACK) {
        *why = "a CPU, STRING or STACK record carries the after-CPU flag";
        return -1;
    }
    if (!from) {
        *why = "after-CPU flag on its thread's first record in the frame (the slice has no start)";
        return -1;
    }
    if (from > ev->ts_ns) {
        *why = "after-CPU flag on a record that starts before its thread's previous one ended";
        return -1;
    }
    r->after_cpu = *ev;
    r->after_cpu.flags &= (uint16_t)~TRACE_F_AFTER_CPU;
    r->have_after_cpu = 1;
    memset(ev, 0, sizeof *ev);
    ev->type = TRACE_EV_CPU;
    ev->tid = r->after_cpu.tid;
    ev->ts_ns = from;
    ev->dur_ns = r->after_cpu.ts_ns - from;
    return 0;
}

/* A 2.2 DB record cut at --db-max-statement (TRACE_F_CUT) says how long
 * what was cut really was; the flag means nothing elsewhere (FORMAT.md
 * §6.2). Returns 0, or -1 with why. */
static int trace_reader_check_cut(const struct trace_event *ev, const char **why)
{
    int cut = (ev->flags & TRACE_F_CUT) != 0;
    if (ev->type != TRACE_EV_DB) {
        if (cut) {
            *why = "a record that is not DB carries the cut flag";
            return -1;
        }
        return 0;
    }
    if (cut && !ev->u.db.query_len && !ev->u.db.params_len) {
        *why = "a DB record carries the cut flag without query_len or params_len";
        return -1;
    }
    if (!cut && (ev->u.db.query_len || ev->u.db.params_len)) {
        *why = "a DB record has query_len or params_len without the cut flag";
        return -1;
    }
    return 0;
}

int trace_reader_next(struct trace_reader *r, struct trace_event *ev)
{
    if (r->have_after_cpu) {
        *ev = r->after_cpu;
        r->have_after_cpu = 0;
        return 1;
    }
    if (r->synth_pos < r->nsynth) {
        *ev = r->synth[r->synth_pos++];
        return 1;
    }
    if (r->state)
        return r->state < 0 ? -1 : 0;
    for (;;) {
        if (r->in_frame && r->p < r->end) {
            const char *why = "";
            int rc = trace_codec_decode(&r->codec, &r->p, r->end, ev, &why);
            if (rc == TRACE_CODEC_OK && (trace_reader_check_cut(ev, &why) != 0 ||
                                         trace_reader_check_limits(r, ev, &why) != 0))
                rc = TRACE_CODEC_DAMAGED;
            if (rc == TRACE_CODEC_OK && (ev->flags & TRACE_F_AFTER_CPU) &&
                r->hdr.version_major >= 2) {
                if (trace_reader_split_after_cpu(r, ev, &why) != 0)
                    return trace_reader_damage(r, ev, "frame at offset %llu: record %u: %s",
                                               (unsigned long long)r->chunk_offset, r->record_index,
                                               why);
                r->record_index++;
                r->events_in_frame += 2;
                return 1;
            }
            if (rc == TRACE_CODEC_OK) {
                r->record_index++;
                if (ev->type == TRACE_EV_STRING) {
                    if (trace_reader_keep_string(r, ev) != 0)
                        return trace_reader_damage(r, ev, "frame at offset %llu: record %u: %s",
                                                   (unsigned long long)r->chunk_offset,
                                                   r->record_index - 1, r->limit_why);
                } else if (ev->type != TRACE_EV_STACK) {
                    r->events_in_frame++;
                }
                return 1;
            }
            if (rc == TRACE_CODEC_SKIPPED) {
                r->record_index++;
                r->skipped++;
                continue;
            }
            if (r->frame_truncated)
                return trace_reader_damage(r, ev, "truncated frame at offset %llu (record %u)",
                                           (unsigned long long)r->chunk_offset, r->record_index);
            if (rc == TRACE_CODEC_NOMEM)
                return trace_reader_damage(r, ev, "frame at offset %llu: record %u: out of memory",
                                           (unsigned long long)r->chunk_offset, r->record_index);
            return trace_reader_damage(r, ev, "frame at offset %llu: record %u: %s",
                                       (unsigned long long)r->chunk_offset, r->record_index, why);
        }
        if (r->in_frame) {
            r->in_frame = 0;
            if (r->frame_truncated)
                return trace_reader_damage(r, ev, "truncated frame at offset %llu (record %u)",
                                           (unsigned long long)r->chunk_offset, r->record_index);
            if (r->record_index != r->chunk.nrecords)
                return trace_reader_damage(
                    r, ev, "frame at offset %llu: %u records, chunk header says %u",
                    (unsigned long long)r->chunk_offset, r->record_index, r->chunk.nrecords);
        }
        int damage;
        int rc = trace_reader_load_chunk(r, ev, &damage);
        if (damage)
            return rc;
        if (rc == 0) {
            r->state = 1;
            return 0;
        }
    }
}

const char *trace_reader_error(const struct trace_reader *r)
{
    return r->err[0] ? r->err : NULL;
}

const char *trace_reader_warning(const struct trace_reader *r)
{
    return r->warn[0] ? r->warn : NULL;
}

const char *trace_reader_string(const struct trace_reader *r, uint32_t id, uint32_t *len)
{
    uint32_t *i = trace_u64map_find(&r->string_index, id);
    if (!i)
        return NULL;
    if (len)
        *len = r->strings[*i].len;
    return r->arena + r->strings[*i].offset;
}

uint64_t trace_reader_skipped(const struct trace_reader *r)
{
    return r->skipped;
}

uint64_t trace_reader_file_bytes(const struct trace_reader *r)
{
    return r->file_size;
}

void trace_reader_close(struct trace_reader *r)
{
    if (!r)
        return;
    if (r->fd >= 0)
        close(r->fd);
    ZSTD_freeDCtx(r->dctx);
    trace_codec_free(&r->codec);
    trace_u64map_free(&r->string_index);
    mem_budget_release(&r->mem);
    free(r->hdr.argv_joined);
    free(r->strings);
    free(r->arena);
    free(r->zbuf);
    free(r->raw);
    free(r->path);
    free(r);
}
