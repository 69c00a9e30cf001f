/* h2_label.c - request labels of HTTP/2 connections. An HTTP/2 request has
 * no request line: its method and path are the :method and :path fields
 * of the HEADERS frame (and CONTINUATION frames) that opens its stream,
 * compressed with HPACK (RFC 7541) - against a dynamic table the client's
 * encoder builds over the whole connection, and with strings often
 * Huffman-coded. So the parser follows every byte the server receives
 * after the preface: frame headers, the header blocks (decoded in full,
 * every field, to keep the table in step), and skips every other frame.
 * One connection's state is one mapping (io_events.c); no allocation, no
 * system call, no global state: fuzzed on its own
 * (tests/tracer/fuzz_h2_label.c). */
#include "h2_label.h"

#include <stdint.h>
#include <string.h>

/* A header block (HEADERS and its CONTINUATIONs) up to the default largest
 * frame: a larger one stops the parser. */
#define H2_BLOCK_MAX 16384
/* The dynamic table the client may use: the protocol's default is 4096
 * bytes; a server may allow more (SETTINGS_HEADER_TABLE_SIZE), and the
 * client then says so with a size update, which the parser follows up to
 * this. */
#define H2_TABLE_MAX 65536
#define H2_ENTRY_OVERHEAD 32 /* RFC 7541 4.1: an entry's size is name + value + 32 */
#define H2_TABLE_ENTRIES (H2_TABLE_MAX / H2_ENTRY_OVERHEAD)
/* A decoded string: Huffman codes take at least 5 bits a byte. */
#define H2_STRING_MAX (H2_BLOCK_MAX * 8 / 5 + 8)
#define H2_METHOD_MAX 16

enum { H2_FRAME_HEADERS = 0x1, H2_FRAME_CONTINUATION = 0x9 };
enum { H2_FLAG_END_HEADERS = 0x4, H2_FLAG_PADDED = 0x8, H2_FLAG_PRIORITY = 0x20 };

struct h2_entry {
    uint32_t off, name_len, value_len; /* bytes in the arena: name then value */
};

struct tracer_h2 {
    int keep_query, failed;
    int busy; /* a thread is feeding it (two at once: the second gives up the connection) */
    uint32_t preface_seen; /* bytes of the preface matched so far */
    unsigned char head[9]; /* the frame header being read */
    uint32_t head_have;    /* its bytes read so far */
    uint32_t payload_left; /* bytes of the current frame's payload still to come */
    uint8_t type, flags;   /* of the current frame */
    int in_block;          /* a HEADERS came without END_HEADERS: CONTINUATIONs follow */
    uint32_t frame_start;  /* where the current frame's payload starts in block */
    uint32_t block_len;    /* header block fragments gathered (and the frame being read) */
    unsigned char block[H2_BLOCK_MAX];
    /* the dynamic table, oldest entry first; the arena holds the entries'
     * names and values in the same order */
    uint32_t nentries, table_size, table_max, arena_len;
    struct h2_entry entries[H2_TABLE_ENTRIES];
    char arena[H2_TABLE_MAX];
    char strings[2][H2_STRING_MAX]; /* a field's name and value, Huffman-decoded */
    /* the canonical Huffman code, by length: first code, count, and where
     * its symbols start in syms (sorted by length, then value) */
    uint32_t huff_first[31], huff_count[31], huff_offset[31];
    uint16_t huff_syms[257];
};

/* RFC 7541 Appendix B: the Huffman code's length for each symbol (256 is
 * EOS). The code is canonical - codes of one length are consecutive, in
 * symbol order - so the lengths define it. */
static const uint8_t h2_huffman_lengths[257] = {
    13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 30, 28,
    28, 28, 28, 28, 28, 28, 28, 28, 6,  10, 10, 12, 13, 6,  8,  11, 10, 10, 8,  11, 8,  6,  6,  6,
    5,  5,  5,  6,  6,  6,  6,  6,  6,  6,  7,  8,  15, 6,  12, 10, 13, 6,  7,  7,  7,  7,  7,  7,
    7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  8,  7,  8,  13, 19, 13, 14, 6,
    15, 5,  6,  5,  6,  5,  6,  6,  6,  5,  7,  7,  6,  6,  6,  5,  6,  7,  6,  5,  5,  6,  7,  7,
    7,  7,  7,  15, 11, 14, 13, 28, 20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23,
    24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, 22, 21, 20, 22, 22, 23, 23, 21,
    23, 22, 22, 24, 21, 22, 23, 23, 21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23,
    26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, 19, 21, 26, 27, 27, 26, 27, 24,
    21, 21, 26, 26, 28, 27, 27, 27, 20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23,
    26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26, 30,
};

/* RFC 7541 Appendix A: the static table (index 1-61). */
static const char *const h2_static[61][2] = {
    {":authority", ""},
    {":method", "GET"},
    {":method", "POST"},
    {":path", "/"},
    {":path", "/index.html"},
    {":scheme", "http"},
    {":scheme", "https"},
    {":status", "200"},
    {":status", "204"},
    {":status", "206"},
    {":status", "304"},
    {":status", "400"},
    {":status", "404"},
    {":status", "500"},
    {"accept-charset", ""},
    {"accept-encoding", "gzip, deflate"},
    {"accept-language", ""},
    {"accept-ranges", ""},
    {"accept", ""},
    {"access-control-allow-origin", ""},
    {"age", ""},
    {"allow", ""},
    {"authorization", ""},
    {"cache-control", ""},
    {"content-disposition", ""},
    {"content-encoding", ""},
    {"content-language", ""},
    {"content-length", ""},
    {"content-location", ""},
    {"content-range", ""},
    {"content-type", ""},
    {"cookie", ""},
    {"date", ""},
    {"etag", ""},
    {"expect", ""},
    {"expires", ""},
    {"from", ""},
    {"host", ""},
    {"if-match", ""},
    {"if-modified-since", ""},
    {"if-none-match", ""},
    {"if-range", ""},
    {"if-unmodified-since", ""},
    {"last-modified", ""},
    {"link", ""},
    {"location", ""},
    {"max-forwards", ""},
    {"proxy-authenticate", ""},
    {"proxy-authorization", ""},
    {"range", ""},
    {"referer", ""},
    {"refresh", ""},
    {"retry-after", ""},
    {"server", ""},
    {"set-cookie", ""},
    {"strict-transport-security", ""},
    {"transfer-encoding", ""},
    {"user-agent", ""},
    {"vary", ""},
    {"via", ""},
    {"www-authenticate", ""},
};

size_t tracer_h2_state_size(void)
{
    return sizeof(struct tracer_h2);
}

void tracer_h2_init(struct tracer_h2 *h, int keep_query)
{
    h->keep_query = keep_query;
    h->failed = h->busy = 0;
    h->preface_seen = h->head_have = h->payload_left = 0;
    h->in_block = 0;
    h->block_len = h->frame_start = 0;
    h->nentries = h->table_size = h->arena_len = 0;
    h->table_max = 4096;
    memset(h->huff_count, 0, sizeof h->huff_count);
    for (int s = 0; s < 257; s++)
        h->huff_count[h2_huffman_lengths[s]]++;
    uint32_t code = 0, offset = 0;
    for (int len = 1; len <= 30; len++) {
        h->huff_first[len] = code;
        h->huff_offset[len] = offset;
        code = (code + h->huff_count[len]) << 1;
        offset += h->huff_count[len];
    }
    uint32_t fill[31];
    memcpy(fill, h->huff_offset, sizeof fill);
    for (int s = 0; s < 257; s++)
        h->huff_syms[fill[h2_huffman_lengths[s]]++] = (uint16_t)s;
}

int tracer_h2_preface(const char *s, size_t n)
{
    size_t m = n < TRACER_H2_PREFACE_LEN ? n : TRACER_H2_PREFACE_LEN;
    if (memcmp(s, TRACER_H2_PREFACE, m) != 0)
        return -1;
    return m == TRACER_H2_PREFACE_LEN;
}

/* An HPACK integer with an N-bit prefix at *p (RFC 7541 5.1); -1 when it
 * runs past end or beyond what any table or string here could need. */
static int64_t h2_integer(const unsigned char **p, const unsigned char *end, int prefix)
{
    if (*p >= end)
        return -1;
    uint32_t max = (1u << prefix) - 1;
    int64_t v = **p & max;
    (*p)++;
    if (v < max)
        return v;
    for (int shift = 0; shift <= 28; shift += 7) {
        if (*p >= end)
            return -1;
        unsigned char b = *(*p)++;
        v += (int64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
    }
    return -1;
}

/* A string literal at *p (5.2) into out (room H2_STRING_MAX): its length,
 * or -1. A plain one is pointed at where it is. */
static int64_t h2_string(struct tracer_h2 *h, const unsigned char **p, const unsigned char *end,
                         char *out, const char **str)
{
    if (*p >= end)
        return -1;
    int huffman = **p & 0x80;
    int64_t len = h2_integer(p, end, 7);
    if (len < 0 || len > end - *p)
        return -1;
    const unsigned char *s = *p;
    *p += len;
    if (!huffman) {
        *str = (const char *)s;
        return len;
    }
    uint32_t code = 0, bits = 0;
    int64_t n = 0;
    for (int64_t i = 0; i < len; i++) {
        for (int b = 7; b >= 0; b--) {
            code = (code << 1) | ((s[i] >> b) & 1);
            bits++;
            if (h->huff_count[bits] && code - h->huff_first[bits] < h->huff_count[bits]) {
                uint16_t sym = h->huff_syms[h->huff_offset[bits] + code - h->huff_first[bits]];
                if (sym == 256 || n >= H2_STRING_MAX)
                    return -1; /* EOS inside a string is an error */
                out[n++] = (char)sym;
                code = bits = 0;
            } else if (bits >= 30) {
                return -1;
            }
        }
    }
    /* padding: at most 7 bits, the most significant ones of EOS (all 1) */
    if (bits > 7 || code != (1u << bits) - 1)
        return -1;
    *str = out;
    return n;
}

/* The table entry at index i (2.3.3): name and value; 0, or -1. */
static int h2_entry_at(const struct tracer_h2 *h, int64_t i, const char **name, size_t *nl,
                       const char **value, size_t *vl)
{
    if (i >= 1 && i <= 61) {
        *name = h2_static[i - 1][0];
        *value = h2_static[i - 1][1];
        *nl = strlen(*name);
        *vl = strlen(*value);
        return 0;
    }
    if (i < 62 || i - 62 >= h->nentries)
        return -1;
    const struct h2_entry *e = &h->entries[h->nentries - 1 - (i - 62)]; /* 62: the newest */
    *name = h->arena + e->off;
    *nl = e->name_len;
    *value = h->arena + e->off + e->name_len;
    *vl = e->value_len;
    return 0;
}

/* Drops the oldest entries until the table holds at most max bytes. */
static void h2_evict(struct tracer_h2 *h, uint32_t max)
{
    uint32_t drop = 0, bytes = 0;
    while (drop < h->nentries && h->table_size > max) {
        const struct h2_entry *e = &h->entries[drop++];
        bytes += e->name_len + e->value_len;
        h->table_size -= e->name_len + e->value_len + H2_ENTRY_OVERHEAD;
    }
    if (!drop)
        return;
    memmove(h->arena, h->arena + bytes, h->arena_len - bytes);
    h->arena_len -= bytes;
    memmove(h->entries, h->entries + drop, (h->nentries - drop) * sizeof h->entries[0]);
    h->nentries -= drop;
    for (uint32_t i = 0; i < h->nentries; i++)
        h->entries[i].off -= bytes;
}

/* Adds a field to the table (4.4): an entry larger than the table empties
 * it and is not added. name and value must not point into the arena. */
static void h2_insert(struct tracer_h2 *h, const char *name, size_t nl, const char *value,
                      size_t vl)
{
    size_t size = nl + vl + H2_ENTRY_OVERHEAD;
    if (size > h->table_max) {
        h2_evict(h, 0);
        return;
    }
    h2_evict(h, (uint32_t)(h->table_max - size));
    /* room: the arena holds at most table_max - 32 per entry bytes */
    struct h2_entry *e = &h->entries[h->nentries++];
    e->off = h->arena_len;
    e->name_len = (uint32_t)nl;
    e->value_len = (uint32_t)vl;
    memcpy(h->arena + h->arena_len, name, nl);
    memcpy(h->arena + h->arena_len + nl, value, vl);
    h->arena_len += (uint32_t)(nl + vl);
    h->table_size += (uint32_t)size;
}

/* Could these be a request's :method and :path (the part kept)? A method
 * is a token (RFC 9110 5.6.2), a path starts with '/' or is '*', and
 * neither holds a space or a control character. A server refuses anything
 * else, and a label must stay "METHOD /path". */
static int h2_label_fields_valid(const char *method, size_t ml, const char *path, size_t pl)
{
    if (!ml || !pl || (path[0] != '/' && !(pl == 1 && path[0] == '*')))
        return 0;
    for (size_t i = 0; i < ml; i++) {
        unsigned char c = (unsigned char)method[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              (c && strchr("!#$%&'*+-.^_`|~", c))))
            return 0;
    }
    for (size_t i = 0; i < pl; i++)
        if ((unsigned char)path[i] <= ' ' || (unsigned char)path[i] == 0x7f)
            return 0;
    return 1;
}

/* Decodes a whole header block (6); emits the label of a request's. */
static int h2_decode_block(struct tracer_h2 *h, tracer_h2_label_fn emit, void *ctx)
{
    const unsigned char *p = h->block, *end = h->block + h->block_len;
    char method[H2_METHOD_MAX], path[TRACER_H2_LABEL_MAX];
    size_t method_len = 0, path_len = 0;
    int have_method = 0, have_path = 0;
    while (p < end) {
        unsigned char b = *p;
        const char *name, *value;
        size_t nl, vl;
        if ((b & 0xe0) == 0x20) { /* 001: dynamic table size update */
            int64_t max = h2_integer(&p, end, 5);
            if (max < 0 || max > H2_TABLE_MAX)
                return -1;
            h->table_max = (uint32_t)max;
            h2_evict(h, h->table_max);
            continue;
        }
        int indexing = (b & 0xc0) == 0x40; /* 01: literal with incremental indexing */
        int64_t index = h2_integer(&p, end, (b & 0x80) ? 7 : indexing ? 6 : 4);
        if (index < 0)
            return -1;
        if (b & 0x80) { /* 1: indexed field */
            if (h2_entry_at(h, index, &name, &nl, &value, &vl) != 0)
                return -1;
        } else {
            if (index) {
                const char *unused;
                size_t ul;
                if (h2_entry_at(h, index, &name, &nl, &unused, &ul) != 0)
                    return -1;
                if (index >= 62) { /* in the arena, which the insert may move */
                    memcpy(h->strings[0], name, nl);
                    name = h->strings[0];
                }
            } else {
                int64_t n = h2_string(h, &p, end, h->strings[0], &name);
                if (n < 0)
                    return -1;
                nl = (size_t)n;
            }
            int64_t n = h2_string(h, &p, end, h->strings[1], &value);
            if (n < 0)
                return -1;
            vl = (size_t)n;
        }
        if (nl == 7 && !memcmp(name, ":method", 7)) {
            method_len = vl < sizeof method ? vl : sizeof method;
            memcpy(method, value, method_len);
            have_method = 1;
        } else if (nl == 5 && !memcmp(name, ":path", 5)) {
            path_len = vl < sizeof path ? vl : sizeof path;
            memcpy(path, value, path_len);
            have_path = 1;
        }
        if (indexing && !(b & 0x80))
            h2_insert(h, name, nl, value, vl);
    }
    if (have_method && have_path && h2_label_fields_valid(method, method_len, path, path_len)) {
        char label[TRACER_H2_LABEL_MAX];
        const char *query = h->keep_query ? NULL : memchr(path, '?', path_len);
        size_t pl = query ? (size_t)(query - path) : path_len;
        size_t len = method_len + 1 + pl;
        if (len > sizeof label)
            len = sizeof label;
        memcpy(label, method, method_len);
        label[method_len] = ' ';
        memcpy(label + method_len + 1, path, len - method_len - 1);
        emit(ctx, label, len);
    }
    return 0;
}

/* The current frame's payload is all there. */
static int h2_frame_done(struct tracer_h2 *h, tracer_h2_label_fn emit, void *ctx)
{
    if (h->type != H2_FRAME_HEADERS && h->type != H2_FRAME_CONTINUATION)
        return 0;
    uint32_t off = h->frame_start, end = h->block_len, pad = 0;
    if (h->type == H2_FRAME_HEADERS) {
        if (h->flags & H2_FLAG_PADDED) {
            if (off >= end)
                return -1;
            pad = h->block[off++];
        }
        if (h->flags & H2_FLAG_PRIORITY)
            off += 5; /* stream dependency and weight */
        if (off > end || pad > end - off)
            return -1;
    }
    uint32_t fragment = end - pad - off;
    memmove(h->block + h->frame_start, h->block + off, fragment);
    h->block_len = h->frame_start + fragment;
    h->in_block = 1;
    if (!(h->flags & H2_FLAG_END_HEADERS))
        return 0;
    int rc = h2_decode_block(h, emit, ctx);
    h->in_block = 0;
    h->block_len = 0;
    return rc;
}

int tracer_h2_feed(struct tracer_h2 *h, const unsigned char *p, size_t n, tracer_h2_label_fn emit,
                   void *ctx)
{
    /* two threads receiving on one connection at once: neither order of
     * their bytes can be trusted, and the state must not be written by
     * both */
    if (__atomic_exchange_n(&h->busy, 1, __ATOMIC_ACQUIRE)) {
        __atomic_store_n(&h->failed, 1, __ATOMIC_RELAXED);
        return -1;
    }
    while (n && !__atomic_load_n(&h->failed, __ATOMIC_RELAXED)) {
        if (h->preface_seen < TRACER_H2_PREFACE_LEN) {
            size_t take = TRACER_H2_PREFACE_LEN - h->preface_seen;
            if (take > n)
                take = n;
            static const char preface[] = TRACER_H2_PREFACE;
            if (memcmp(p, preface + h->preface_seen, take) != 0)
                h->failed = 1;
            h->preface_seen += (uint32_t)take;
            p += take;
            n -= take;
            continue;
        }
        if (h->head_have < sizeof h->head) {
            size_t take = sizeof h->head - h->head_have;
            if (take > n)
                take = n;
            memcpy(h->head + h->head_have, p, take);
            h->head_have += (uint32_t)take;
            p += take;
            n -= take;
            if (h->head_have < sizeof h->head)
                break;
            h->payload_left =
                (uint32_t)h->head[0] << 16 | (uint32_t)h->head[1] << 8 | (uint32_t)h->head[2];
            h->type = h->head[3];
            h->flags = h->head[4];
            int block_frame = h->type == H2_FRAME_HEADERS || h->type == H2_FRAME_CONTINUATION;
            /* a header block's frames come back to back, CONTINUATION only
             * after a HEADERS without END_HEADERS (RFC 9113 6.10) */
            if (h->in_block != (h->type == H2_FRAME_CONTINUATION) ||
                (block_frame && h->payload_left > H2_BLOCK_MAX - h->block_len)) {
                h->failed = 1;
                break;
            }
            h->frame_start = h->block_len;
        } else {
            size_t take = h->payload_left < n ? h->payload_left : n;
            if (h->type == H2_FRAME_HEADERS || h->type == H2_FRAME_CONTINUATION) {
                memcpy(h->block + h->block_len, p, take);
                h->block_len += (uint32_t)take;
            }
            h->payload_left -= (uint32_t)take;
            p += take;
            n -= take;
        }
        if (h->payload_left == 0) {
            h->head_have = 0;
            if (h2_frame_done(h, emit, ctx) != 0)
                h->failed = 1;
        }
    }
    int rc = h->failed ? -1 : 0;
    __atomic_store_n(&h->busy, 0, __ATOMIC_RELEASE);
    return rc;
}
