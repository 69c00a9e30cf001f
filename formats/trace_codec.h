/* trace_codec.h - internal to formats/: the byte layout constants of a trace
 * file (FORMAT.md sections 2-5), little-endian and varint helpers, CRC-32,
 * and the record codec shared by the writer and the reader so the encoding
 * is written exactly once. Nothing outside formats/ includes this header;
 * the public contract is trace_file.h. The codec never allocates per record:
 * its per-frame state lives in tables that are cleared, not freed. */
#ifndef PREPLAY_TRACE_CODEC_H
#define PREPLAY_TRACE_CODEC_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "trace_event.h"
#include "trace_u64map.h"

/* File layout (FORMAT.md §2-§4). Every structure is a zstd skippable frame
 * (magic 0x184D2A5?, u32 payload size) except the compressed record frames. */
#define TRACE_SKIPPABLE_MAGIC_MIN 0x184D2A50u
#define TRACE_SKIPPABLE_MAGIC_MAX 0x184D2A5Fu
#define TRACE_HEADER_FRAME_MAGIC 0x184D2A50u
#define TRACE_RING_FRAME_MAGIC 0x184D2A51u
#define TRACE_CHUNK_FRAME_MAGIC 0x184D2A5Cu
#define TRACE_ZSTD_FRAME_MAGIC 0xFD2FB528u
#define TRACE_FILE_MAGIC "PREPLAYT" /* 8 bytes at file offset 8 */
#define TRACE_HEADER_FLAG_RING 0x1u
#define TRACE_HEADER_MAX_PAYLOAD (16u << 20)
#define TRACE_RING_PAYLOAD 64u
#define TRACE_CHUNK_PAYLOAD 48u
#define TRACE_FRAME_MAX_RAW (64u << 20) /* readers refuse bigger frames */

/* Header field tags (FORMAT.md §2.2). */
enum trace_header_tag {
    TRACE_HDR_HOST = 1,
    TRACE_HDR_COMPONENT = 2,
    TRACE_HDR_RECORDING_ID = 3,
    TRACE_HDR_TRACER_VERSION = 4,
    TRACE_HDR_EXE = 5,
    TRACE_HDR_ARGV = 6,
    TRACE_HDR_PID = 7,
    TRACE_HDR_PPID = 8,
    TRACE_HDR_MONO_ANCHOR = 9,
    TRACE_HDR_REAL_ANCHOR = 10,
    TRACE_HDR_CPU_SCORE = 11,
    TRACE_HDR_RECORD_OPTIONS = 12 /* 1.1 */
};

/* Chunk header payload (FORMAT.md §4.1), decoded. */
struct trace_chunk_header {
    uint64_t seq;
    uint32_t compressed_size, raw_size;
    uint32_t nrecords, nevents;
    uint64_t first_ts, last_ts;
};

/* Ring index payload (FORMAT.md §5), decoded. */
struct trace_ring_index {
    uint64_t oldest_offset, oldest_seq, head_offset, lap_end;
    uint64_t dropped_events, dropped_from_ns, dropped_to_ns;
    uint32_t dropped_chunks;
};

static inline void trace_put_le16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static inline void trace_put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static inline void trace_put_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint16_t trace_get_le16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}
static inline uint32_t trace_get_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t trace_get_le64(const uint8_t *p)
{
    return (uint64_t)trace_get_le32(p) | (uint64_t)trace_get_le32(p + 4) << 32;
}

/* LEB128 unsigned varint: at most 10 bytes. Returns bytes written. */
static inline size_t trace_put_varint(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}
/* Reads a varint from [*p, end). 0 on success, -1 when truncated or longer
 * than 10 bytes / 64 bits. */
static inline int trace_get_varint(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
    uint64_t v = 0;
    const uint8_t *q = *p;
    for (unsigned shift = 0; shift < 70; shift += 7) {
        if (q >= end)
            return -1;
        uint8_t b = *q++;
        if (shift == 63 && b > 1)
            return -1;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *p = q;
            *out = v;
            return 0;
        }
    }
    return -1;
}
static inline uint64_t trace_zigzag(uint64_t v)
{
    return (v << 1) ^ (0 - (v >> 63));
}
static inline uint64_t trace_unzigzag(uint64_t v)
{
    return (v >> 1) ^ (0 - (v & 1));
}

/* CRC-32 (IEEE 802.3, as zlib's crc32()). */
uint32_t trace_crc32(const void *data, size_t len);

void trace_chunk_header_pack(uint8_t out[TRACE_CHUNK_PAYLOAD], const struct trace_chunk_header *c);
/* 0, or -1 when the stored CRC does not match. */
int trace_chunk_header_unpack(const uint8_t in[TRACE_CHUNK_PAYLOAD], struct trace_chunk_header *c);
void trace_ring_index_pack(uint8_t out[TRACE_RING_PAYLOAD], const struct trace_ring_index *r);
int trace_ring_index_unpack(const uint8_t in[TRACE_RING_PAYLOAD], struct trace_ring_index *r);

/* Per-frame prediction state (FORMAT.md §6.3). Reset at every frame start. */
struct trace_codec_thread {
    uint64_t end_ts; /* ts + dur of this thread's previous record */
    uint64_t file_fd, net_fd, lock_kind, lock_mode, lock_id, db_source, db_conn;
};
struct trace_codec_fd {
    uint64_t next_offset, file_size, dev, ino, conn_id, msg_flags;
};
#define TRACE_CODEC_SMALL_FDS 1024u
struct trace_codec {
    struct trace_u64map thread_index, fd_index; /* fd_index: descriptors >= TRACE_CODEC_SMALL_FDS */
    uint32_t small_fd_slot[TRACE_CODEC_SMALL_FDS]; /* descriptor -> index in fds + 1, 0 = none */
    struct trace_codec_thread *threads;
    struct trace_codec_fd *fds;
    size_t nthreads, cap_threads, nfds, cap_fds;
    uint64_t prev_tid, prev_string_id, prev_stack_id;
    /* one-entry caches in front of the maps */
    uint64_t cached_tid, cached_fd;
    struct trace_codec_thread *cached_thread;
    struct trace_codec_fd *cached_fdstate;
    uint64_t *stack_frames; /* decoded STACK addresses (reader side) */
    size_t stack_cap;
    /* Reader side: where the decoded record's thread stood before it (its
     * previous record's end in the frame, 0 for its first): the start of
     * the CPU slice a TRACE_F_AFTER_CPU record carries. */
    uint64_t decoded_thread_end;
};

/* Largest encoded record without its STRING/STACK payload. */
#define TRACE_RECORD_FIXED_MAX 256u

void trace_codec_init(struct trace_codec *c);
void trace_codec_free(struct trace_codec *c);
void trace_codec_reset(struct trace_codec *c); /* at every frame start */

/* Bytes the record for ev will take at most (tag, length, fields, payload). */
size_t trace_codec_record_bound(const struct trace_event *ev);
/* Encodes ev, its flags or'ed with or_flags (the writer's TRACE_F_AFTER_CPU),
 * at out (room for trace_codec_record_bound bytes). Returns the bytes
 * written, 0 when ev is invalid (unknown type), or (size_t)-1 when memory
 * runs out. */
size_t trace_codec_encode_flagged(struct trace_codec *c, const struct trace_event *ev,
                                  uint16_t or_flags, uint8_t *out);
/* The same with ev's flags as they are. */
static inline size_t trace_codec_encode(struct trace_codec *c, const struct trace_event *ev,
                                        uint8_t *out)
{
    return trace_codec_encode_flagged(c, ev, 0, out);
}
/* Where thread tid's previous record in the frame ended (FORMAT.md §6.3
 * `end`), 0 when it has none: the writer's test for TRACE_F_AFTER_CPU. */
uint64_t trace_codec_thread_end(struct trace_codec *c, uint64_t tid);
/* The table-driven encoder every type falls back to; trace_codec_encode
 * takes straight-line paths for the hot types (CPU, FILE, NET, SOCKOPT,
 * LOCK, LABEL) that must write the same bytes. Exposed for the tests that
 * hold the two to that. */
size_t trace_codec_encode_generic(struct trace_codec *c, const struct trace_event *ev,
                                  uint8_t *out);

/* A COUNTERS record's payload at [q, rec_end) against its fields (FORMAT.md
 * §9): 0, or -1 with why (static). */
int trace_counters_check(const struct trace_event *ev, const uint8_t *q, const uint8_t *rec_end,
                         const char **why);

enum trace_codec_result {
    TRACE_CODEC_OK = 0,
    TRACE_CODEC_SKIPPED = 1, /* a record of a type this reader does not know */
    TRACE_CODEC_DAMAGED = -1,
    TRACE_CODEC_NOMEM = -2
};
/* Decodes the record at *p (< end) into ev (data points into the record) and
 * advances *p. On DAMAGED, why names the problem. */
int trace_codec_decode(struct trace_codec *c, const uint8_t **p, const uint8_t *end,
                       struct trace_event *ev, const char **why);

#endif
