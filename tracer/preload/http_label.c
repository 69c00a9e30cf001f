/* http_label.c - the request label of an HTTP/1.x request line ("GET
 * /path"), read inside the traced program from the first bytes a server
 * receives on a connection it accepted (io_events.c) or from SSL_read's
 * plaintext (interpose_tls.c). No state, no allocation: fuzzed on its own
 * (tests/tracer/fuzz_http_label.c). */
#include "http_label.h"

#include <string.h>

static int tracer_http_method(const char *s, size_t n)
{
    static const char *const methods[] = {"GET ",     "POST ",  "PUT ",   "DELETE ", "HEAD ",
                                          "OPTIONS ", "PATCH ", "TRACE ", "CONNECT "};
    if (n >= 4 && !memcmp(s, "GET ", 4))
        return 1; /* most requests: one 4-byte compare, no call */
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++) {
        size_t ml = strlen(methods[i]);
        if (n >= ml ? !memcmp(s, methods[i], ml) : !memcmp(s, methods[i], n))
            return 1;
    }
    return 0;
}

long tracer_http_label(const char *s, size_t n, size_t cap, int keep_query)
{
    if (!tracer_http_method(s, n))
        return TRACER_LABEL_NOT_HTTP;
    const char *sp1 = memchr(s, ' ', n);
    if (!sp1)
        return TRACER_LABEL_MORE; /* the method itself is still arriving */
    const char *target = sp1 + 1, *end = memchr(target, ' ', (size_t)(s + n - target));
    const char *cr = memchr(target, '\r', (size_t)((end ? end : s + n) - target));
    if (cr)
        end = cr; /* no HTTP version: "GET /path\r\n" */
    if (!end) {
        if (n < cap)
            return TRACER_LABEL_MORE;
        end = s + n; /* a very long target: what fits */
    }
    const char *query = keep_query ? NULL : memchr(target, '?', (size_t)(end - target));
    return (long)((query ? query : end) - s);
}
