/* interpose_tls.c - request labels of HTTPS servers. On a TLS connection
 * the bytes recv() returns are encrypted, so the request line an HTTP
 * server reads is only visible in what OpenSSL's SSL_read/SSL_read_ex hand
 * back: those plaintext bytes go to the same request-line parser as a
 * plain connection's (io_events.c), on the descriptor SSL_get_rfd names.
 * The NET events stay those of the encrypted bytes on the wire (what the
 * replay must move). Servers built on OpenSSL through its shared library
 * (nginx, apache2's mod_ssl, HAProxy, CPython's ssl) are covered; a TLS
 * library linked in statically (node) or another one (GnuTLS) is not:
 * their connections get no labels. The library never links libssl: the
 * real functions are found when first called (tracer_resolve_loaded). */
#include <stddef.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "io_events.h"

typedef struct ssl_st SSL;
typedef int (*tls_read_fn)(SSL *, void *, int);
typedef int (*tls_read_ex_fn)(SSL *, void *, size_t, size_t *);
typedef int (*tls_get_rfd_fn)(const SSL *);

static tls_read_fn tls_real_read;
static tls_read_ex_fn tls_real_read_ex;
static tls_get_rfd_fn tls_real_get_rfd;

/* Our wrapper was called, so the app has libssl loaded; a function it
 * defines that we cannot find leaves nothing sane to call. */
static void *tls_resolve(const char *name)
{
    void *p = tracer_resolve_loaded(name);
    if (!p) {
        static const char msg[] =
            "preplay: cannot find the OpenSSL function the app called; aborting\n";
        syscall(SYS_write, 2, msg, sizeof msg - 1);
        abort();
    }
    return p;
}

/* After a read that returned n > 0 plaintext bytes into buf. */
static void tls_received(struct tracer_thread *t, SSL *s, const void *buf, size_t n)
{
    int err = errno;
    if (!tls_real_get_rfd)
        tls_real_get_rfd = (tls_get_rfd_fn)tls_resolve("SSL_get_rfd");
    int fd = tls_real_get_rfd(s); /* -1 for a memory BIO: no descriptor */
    if (fd >= 0) {
        /* a LABEL, if any, is an event of its own: it carries the CPU
         * since the previous record (the decryption), like a recv would */
        uint64_t now = tracer_event_begin(t);
        tracer_tls_plaintext(t, fd, buf, n, now);
        tracer_event_end(t, now);
    }
    errno = err;
}

TRACER_EXPORT int SSL_read(SSL *s, void *buf, int num)
{
    if (TRACER_UNLIKELY(!tls_real_read))
        tls_real_read = (tls_read_fn)tls_resolve("SSL_read");
    int r = tls_real_read(s, buf, num);
    struct tracer_thread *t;
    if (r > 0 && (t = tracer_enter(TRACER_ONLY_NET)))
        tls_received(t, s, buf, (size_t)r);
    return r;
}

TRACER_EXPORT int SSL_read_ex(SSL *s, void *buf, size_t num, size_t *got)
{
    if (TRACER_UNLIKELY(!tls_real_read_ex))
        tls_real_read_ex = (tls_read_ex_fn)tls_resolve("SSL_read_ex");
    int r = tls_real_read_ex(s, buf, num, got);
    struct tracer_thread *t;
    if (r == 1 && got && *got && (t = tracer_enter(TRACER_ONLY_NET)))
        tls_received(t, s, buf, *got);
    return r;
}
