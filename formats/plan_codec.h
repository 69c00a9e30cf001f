/* plan_codec.h - internal to formats/: the byte layout of a replay plan
 * (PLAN.md), its record types, and the encoding and validation of records
 * shared by plan_writer.c and plan_reader.c, so that what the writer refuses
 * and what the reader calls damage are decided by the same code. Nothing
 * outside formats/ includes this header; the public contract is plan.h. It
 * reuses the trace format's primitives (little-endian, varint, zigzag,
 * CRC-32) from trace_codec.h rather than defining them again. */
#ifndef PREPLAY_PLAN_CODEC_H
#define PREPLAY_PLAN_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "plan.h"
#include "trace_codec.h"

/* File layout (PLAN.md §2-§3). */
#define PLAN_FILE_MAGIC "PREPLAYP"                       /* 8 bytes at file offset 8 */
#define PLAN_HEADER_FRAME_MAGIC TRACE_HEADER_FRAME_MAGIC /* 0x184D2A50 */
#define PLAN_CHUNK_FRAME_MAGIC TRACE_CHUNK_FRAME_MAGIC   /* 0x184D2A5C */
#define PLAN_HEADER_MAX_PAYLOAD (1u << 20)
#define PLAN_CHUNK_PAYLOAD 24u
#define PLAN_CHUNK_MAX_PAYLOAD 4096u
#define PLAN_FRAME_MAX_RAW (64u << 20)      /* readers refuse bigger frames */
#define PLAN_FRAME_DEFAULT_RAW (256u << 10) /* the writer's frame target */
#define PLAN_STRING_MAX PLAN_MAX_STRING_BYTES
#define PLAN_RECORDING_ID_MAX 39u

enum plan_header_tag { PLAN_HDR_RECORDING_ID = 1, PLAN_HDR_CPU_SCORE = 2 };

enum plan_record_type {
    PLAN_REC_STRING = 1,
    PLAN_REC_COMPONENT = 2,
    PLAN_REC_COMPONENT_UPDATE = 3,
    PLAN_REC_FILE = 4,
    PLAN_REC_LOCK = 5,
    PLAN_REC_DB_ENDPOINT = 6,
    PLAN_REC_BLOCK = 7,
    PLAN_REC_REQUEST = 8,
    PLAN_REC_SUMMARY = 9,
    PLAN_REC_END = 10,
    PLAN_REC_TYPE_COUNT
};

/* "STRING", "BLOCK", ...; "type N" for unknown types (static buffer-free:
 * unknown types get "UNKNOWN"). */
const char *plan_record_name(unsigned type);
const char *plan_op_kind_name(unsigned kind);

/* Frame header payload (PLAN.md §3.1), decoded. */
struct plan_chunk_header {
    uint32_t seq, compressed_size, raw_size, nrecords;
};
void plan_chunk_header_pack(uint8_t out[PLAN_CHUNK_PAYLOAD], const struct plan_chunk_header *c);
/* 0, or -1 when the CRC does not match. */
int plan_chunk_header_unpack(const uint8_t in[PLAN_CHUNK_PAYLOAD], struct plan_chunk_header *c);

/* How many of each definition exist so far: what a reference may name. */
struct plan_defined {
    uint32_t strings, components, files, locks, db_endpoints, blocks;
    uint64_t ops, segments;
};

/* Validation shared by writer and reader. Each returns 0, or -1 with a
 * reason (no file/offset: the caller adds where) in why. */
/* "FIELD VALUE exceeds the limit LIMIT" in why when value > limit: 0 or -1. */
int plan_check_limit(const char *field, uint64_t value, uint64_t limit, char *why, size_t len);
/* A definition of `type` may be added to what d holds (the plan's counts
 * stay within their limits); nrequests for REQUEST. 0 or -1 with why. */
int plan_check_room(const struct plan_defined *d, unsigned type, uint64_t nrequests, char *why,
                    size_t len);
int plan_check_file(const struct plan_file *f, const struct plan_defined *d, char *why, size_t len);
int plan_check_string(const struct plan_defined *d, const char *field, uint32_t id, char *why,
                      size_t len);
int plan_check_component(const struct plan_defined *d, const struct plan_component *c, char *why,
                         size_t len);
/* A block of nops ops and nsegs segments fits the per-block and whole-plan
 * limits (checked before anything is allocated for it). */
int plan_check_block_counts(const struct plan_defined *d, uint32_t nops, uint32_t nsegs, char *why,
                            size_t len);
int plan_check_block(const struct plan_defined *d, const struct plan_block *b,
                     const struct plan_op *ops, const struct plan_segment *segs, uint32_t nsegs,
                     char *why, size_t len);
int plan_check_request(const struct plan_defined *d, const struct plan_request *r, char *why,
                       size_t len);

/* Encoders: write the record body (without type and length) at out and
 * return its size. The *_bound functions give the most bytes a body takes. */
size_t plan_component_bound(void);
size_t plan_encode_component(uint8_t *out, const struct plan_component *c);
size_t plan_block_bound(uint32_t nops, uint32_t nsegs);
/* ops' CALL first_segment fields are relative to segs. */
size_t plan_encode_block(uint8_t *out, const struct plan_block *b, const struct plan_op *ops,
                         const struct plan_segment *segs, uint32_t nsegs);

/* A cursor over a record body. Reads past the end set `bad` and yield 0. */
struct plan_cursor {
    const uint8_t *p, *end;
    int bad;
};
uint64_t plan_cursor_varint(struct plan_cursor *c);
uint8_t plan_cursor_u8(struct plan_cursor *c);
uint32_t plan_cursor_u32v(struct plan_cursor *c); /* a varint that must fit 32 bits */

int plan_decode_component(struct plan_cursor *c, struct plan_component *out);
/* Decodes a BLOCK body's fixed part: fills b (nops) and *nsegs. */
int plan_decode_block_head(struct plan_cursor *c, struct plan_block *b, uint32_t *nsegs);
/* Decodes the fields 1.1 appended to a BLOCK body after its segments
 * (worker, start_ns); a body that ends before them (a 1.0 writer) leaves
 * both 0. -1 when they are present but damaged. */
int plan_decode_block_tail(struct plan_cursor *c, struct plan_block *b);
/* Decodes one op (kind, length, body). Unknown trailing bytes inside an
 * op's length are skipped. 0 or -1 with why. */
int plan_decode_op(struct plan_cursor *c, struct plan_op *op, char *why, size_t len);
int plan_decode_segment(struct plan_cursor *c, struct plan_segment *s);

#endif
