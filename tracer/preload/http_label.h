/* http_label.h - the request label of an HTTP/1.x request line
 * (http_label.c). */
#ifndef PREPLAY_HTTP_LABEL_H
#define PREPLAY_HTTP_LABEL_H

#include <stddef.h>

enum { TRACER_LABEL_MORE = 0, TRACER_LABEL_NOT_HTTP = -1 };

/* The label of the request line at the start of s[0..n): the length of
 * "METHOD /target" (the target ends at a space or CR; up to its '?' unless
 * keep_query), TRACER_LABEL_MORE when the line may still be arriving (n <
 * cap), or TRACER_LABEL_NOT_HTTP. */
long tracer_http_label(const char *s, size_t n, size_t cap, int keep_query);

#endif
