/* plan_craft.h - builds replay-plan files byte by byte (header frame, record
 * frames, skippable frames), for tests and the fuzz seed corpus that need
 * files the writer would refuse to produce: dangling references, unknown
 * record types of a later minor version, wrong versions. Header-only; test
 * code only, never linked into preplay. */
#ifndef PREPLAY_PLAN_CRAFT_H
#define PREPLAY_PLAN_CRAFT_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "plan_codec.h"

struct plan_craft {
    uint8_t file[1 << 16];
    size_t len;
    uint8_t frame[1 << 14];
    size_t frame_len;
    uint32_t frame_records, seq;
    uint64_t last_frame_offset;
};

static inline void plan_craft_header(struct plan_craft *c, uint16_t major, uint16_t minor,
                                     const char *recording_id)
{
    memset(c, 0, sizeof *c);
    uint8_t *b = c->file;
    size_t n = 8;
    memcpy(b + n, PLAN_FILE_MAGIC, 8);
    trace_put_le16(b + n + 8, major);
    trace_put_le16(b + n + 10, minor);
    trace_put_le32(b + n + 12, 0);
    n += 16;
    trace_put_le16(b + n, PLAN_HDR_RECORDING_ID);
    trace_put_le32(b + n + 2, (uint32_t)strlen(recording_id));
    memcpy(b + n + 6, recording_id, strlen(recording_id));
    n += 6 + strlen(recording_id);
    /* a header field of a later minor version: skipped by readers */
    trace_put_le16(b + n, 99);
    trace_put_le32(b + n + 2, 3);
    memcpy(b + n + 6, "xyz", 3);
    n += 9;
    trace_put_le32(b + n, trace_crc32(b + 8, n - 8));
    n += 4;
    trace_put_le32(b, PLAN_HEADER_FRAME_MAGIC);
    trace_put_le32(b + 4, (uint32_t)(n - 8));
    c->len = n;
}

/* Appends one record (type, length, body) to the frame being built. */
static inline void plan_craft_record(struct plan_craft *c, uint8_t type, const uint8_t *body,
                                     size_t len)
{
    c->frame[c->frame_len++] = type;
    c->frame_len += trace_put_varint(c->frame + c->frame_len, len);
    memcpy(c->frame + c->frame_len, body, len);
    c->frame_len += len;
    c->frame_records++;
}

/* Record bodies made of varints: plan_craft_varints(c, type, n, v0, v1, ...). */
static inline void plan_craft_varints(struct plan_craft *c, uint8_t type, int n, ...)
{
    uint8_t body[256];
    size_t len = 0;
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++)
        len += trace_put_varint(body + len, va_arg(ap, uint64_t));
    va_end(ap);
    plan_craft_record(c, type, body, len);
}

static inline void plan_craft_string(struct plan_craft *c, const char *s)
{
    uint8_t body[256];
    size_t n = trace_put_varint(body, strlen(s));
    memcpy(body + n, s, strlen(s));
    plan_craft_record(c, PLAN_REC_STRING, body, n + strlen(s));
}

/* Ends the frame: frame header + zstd frame with a content checksum. */
static inline void plan_craft_frame(struct plan_craft *c)
{
    ZSTD_CCtx *z = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(z, ZSTD_c_checksumFlag, 1);
    uint8_t *out = c->file + c->len + 8 + PLAN_CHUNK_PAYLOAD;
    size_t zlen = ZSTD_compress2(z, out, sizeof c->file - c->len - 64, c->frame, c->frame_len);
    ZSTD_freeCCtx(z);
    if (ZSTD_isError(zlen))
        abort();
    struct plan_chunk_header h = {c->seq++, (uint32_t)zlen, (uint32_t)c->frame_len,
                                  c->frame_records};
    trace_put_le32(c->file + c->len, PLAN_CHUNK_FRAME_MAGIC);
    trace_put_le32(c->file + c->len + 4, PLAN_CHUNK_PAYLOAD);
    plan_chunk_header_pack(c->file + c->len + 8, &h);
    c->last_frame_offset = c->len;
    c->len += 8 + PLAN_CHUNK_PAYLOAD + zlen;
    c->frame_len = 0;
    c->frame_records = 0;
}

static inline void plan_craft_skippable(struct plan_craft *c, uint32_t magic, uint32_t size)
{
    trace_put_le32(c->file + c->len, magic);
    trace_put_le32(c->file + c->len + 4, size);
    memset(c->file + c->len + 8, 0xAB, size);
    c->len += 8 + size;
}

static inline int plan_craft_save(const struct plan_craft *c, const char *path)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    int ok = fwrite(c->file, 1, c->len, f) == c->len;
    return fclose(f) == 0 && ok ? 0 : -1;
}

#endif
