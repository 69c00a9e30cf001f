/* h2_label.h - request labels of an HTTP/2 connection (h2_label.c): the
 * ":method :path" of each request the server receives, read from the
 * client's frames and HPACK header blocks. */
#ifndef PREPLAY_H2_LABEL_H
#define PREPLAY_H2_LABEL_H

#include <stddef.h>

/* The client connection preface every HTTP/2 connection starts with. */
#define TRACER_H2_PREFACE "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
#define TRACER_H2_PREFACE_LEN 24

/* Longest label written (as an HTTP/1 request line's label). */
#define TRACER_H2_LABEL_MAX 95

struct tracer_h2;

/* Bytes a connection's parser state takes (one mapping per connection). */
size_t tracer_h2_state_size(void);

/* Sets up the state of a connection whose first bytes are yet to come
 * (the preface included). */
void tracer_h2_init(struct tracer_h2 *h, int keep_query);

/* Called with each request's label "METHOD /path" (query dropped unless
 * keep_query, at most TRACER_H2_LABEL_MAX bytes). */
typedef void (*tracer_h2_label_fn)(void *ctx, const char *label, size_t len);

/* Feeds n bytes the server received, in order. Returns 0, or -1 once the
 * bytes are not (or no longer) an HTTP/2 client's that the parser can
 * follow - no preface, a header block too large, a malformed HPACK block,
 * two threads feeding it at once: the state then ignores everything
 * after. */
int tracer_h2_feed(struct tracer_h2 *h, const unsigned char *p, size_t n, tracer_h2_label_fn emit,
                   void *ctx);

/* Does s[0..n) start the preface (1: all of it is there, 0: a prefix of
 * it, -1: no)? */
int tracer_h2_preface(const char *s, size_t n);

#endif
