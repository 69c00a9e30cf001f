/* fuzz_h2_label.c - libFuzzer target for the HTTP/2 request-label parser
 * (tracer/preload/h2_label.c), which follows, inside a traced server, every byte
 * an HTTP/2 client sends: frame headers, HPACK header blocks against the
 * client's dynamic table, Huffman-coded strings. Input: a flags byte (bit
 * 0: keep the query string; bits 1-7: the size of the pieces the bytes are
 * fed in, 1..128, as recv() may cut them anywhere), then the received
 * bytes. Checks what the caller relies on: each label is 1..95 bytes, a
 * method, a space and a path, without its query unless asked; once the
 * parser gives up it stays given up; the same bytes fed in one piece give
 * the same labels. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "h2_label.h"

struct labels {
    int keep_query;
    size_t count;
    unsigned char digest[32]; /* a running mix of the labels, to compare two feeds */
};

static void check_label(void *ctx, const char *label, size_t len)
{
    struct labels *l = ctx;
    const char *sp = memchr(label, ' ', len);
    if (len == 0 || len > TRACER_H2_LABEL_MAX || !sp || sp == label ||
        (!l->keep_query && memchr(sp, '?', (size_t)(label + len - sp))))
        abort();
    for (size_t i = 0; i < len; i++)
        l->digest[(l->count + i) % sizeof l->digest] ^= (unsigned char)(label[i] + i);
    l->count++;
}

static int feed(struct tracer_h2 *h, const uint8_t *data, size_t size, size_t piece,
                struct labels *l)
{
    int rc = 0;
    for (size_t off = 0; off < size; off += piece) {
        size_t n = size - off < piece ? size - off : piece;
        int r = tracer_h2_feed(h, data + off, n, check_label, l);
        if (rc && !r)
            abort(); /* given up, then going again */
        rc = r;
    }
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct tracer_h2 *a, *b;
    if (!a && (!(a = malloc(tracer_h2_state_size())) || !(b = malloc(tracer_h2_state_size()))))
        abort();
    if (size < 1)
        return 0;
    struct labels la = {.keep_query = data[0] & 1}, lb = la;
    size_t piece = (size_t)(data[0] >> 1) + 1;
    tracer_h2_init(a, la.keep_query);
    tracer_h2_init(b, la.keep_query);
    int ra = feed(a, data + 1, size - 1, piece, &la);
    int rb = feed(b, data + 1, size - 1, size, &lb);
    if (ra != rb || la.count != lb.count || memcmp(la.digest, lb.digest, sizeof la.digest))
        abort(); /* the pieces changed what was parsed */
    return 0;
}
