/* fuzz_http_label.c - libFuzzer target for the HTTP request-line label
 * parser (tracer/preload/http_label.c), which reads the first bytes a traced server
 * receives on each connection, inside that server. Input: a flags byte
 * (bit 0: keep the query string; the rest picks the room the caller has,
 * 0..127 bytes), then the received bytes. Checks what the callers rely on:
 * a label lies within the bytes given, starts with a method and a space,
 * holds no CR, and keeps its '?' only when asked; "more" only while there
 * is room for more. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http_label.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int keep_query = data[0] & 1;
    size_t cap = (size_t)(data[0] >> 1);
    size_t n = size - 1 < cap ? size - 1 : cap; /* the callers never pass more than cap */
    /* a copy of exactly n bytes, so ASan sees any read past them */
    char *s = malloc(n ? n : 1);
    if (!s)
        return 0;
    memcpy(s, data + 1, n);
    long len = tracer_http_label(s, n, cap, keep_query);
    if (len < TRACER_LABEL_NOT_HTTP || len > (long)n)
        abort();
    if (len == TRACER_LABEL_MORE && n >= cap && memchr(s, ' ', n))
        abort(); /* no room left, yet it waits for more */
    if (len > 0) {
        const char *sp = memchr(s, ' ', (size_t)len);
        if (!sp || sp == s || memchr(s, '\r', (size_t)len) ||
            (!keep_query && memchr(sp, '?', (size_t)(s + len - sp))))
            abort();
    }
    free(s);
    return 0;
}
