/* interpose_tls.c - what TLS hides from the socket. On a TLS connection the
 * bytes recv() and send() move are encrypted, so two things the tracer
 * reads from them are only visible in the plaintext OpenSSL's SSL_read,
 * SSL_read_ex, SSL_write and SSL_write_ex pass:
 *   - the request line of an HTTPS request (its LABEL), on an accepted
 *     connection that opened with a TLS handshake (io_events.c);
 *   - the MySQL protocol on a DB connection whose client asked for TLS
 *     (db_wire.c).
 * Those plaintext bytes go to the same parsers as a plain connection's, on
 * the descriptor SSL_get_rfd/SSL_get_wfd names (for a request line read
 * through a BIO of the server's own, as apache2's mod_ssl does: the TLS
 * connection the thread last received encrypted request bytes on). The NET events stay those
 * of the encrypted bytes on the wire (what the replay must move). Programs
 * that use OpenSSL through its shared library (nginx, apache2's mod_ssl,
 * HAProxy, CPython's ssl, PHP, the mariadb client) are covered; a TLS
 * library linked in statically (node) or another one (GnuTLS) is not. The
 * library never links libssl: the real functions are found when first
 * called (TRACER_REAL_LOADED). */
#include <errno.h>
#include <stddef.h>

#include "io_events.h"

typedef struct ssl_st SSL;

TRACER_REAL_LOADED(int, SSL_read, (SSL *, void *, int))
TRACER_REAL_LOADED(int, SSL_read_ex, (SSL *, void *, size_t, size_t *))
TRACER_REAL_LOADED(int, SSL_write, (SSL *, const void *, int))
TRACER_REAL_LOADED(int, SSL_write_ex, (SSL *, const void *, size_t, size_t *))
TRACER_REAL_LOADED(int, SSL_get_rfd, (const SSL *))
TRACER_REAL_LOADED(int, SSL_get_wfd, (const SSL *))

/* n > 0 plaintext bytes at buf, read by a call that began at ring time
 * begin. (What SSL_write sends is parsed before it goes out:
 * tls_before_write.) */
static void tls_plaintext_read(struct tracer_thread *t, SSL *s, const void *buf, size_t n,
                               uint64_t begin)
{
    int err = errno;
    int fd = tracer_real_SSL_get_rfd()(s);
    /* no socket of its own (a memory or filter BIO, as apache2's mod_ssl
     * reads through): the TLS connection this thread last received
     * encrypted request bytes on, for a request line */
    if (fd < 0)
        fd = t->tls_recv_fd_plus1 - 1;
    struct tracer_fd *f = fd >= 0 ? tracer_fd_peek(fd) : NULL;
    int db = f && f->kind == TRACER_FD_SOCKET && (f->flags & TRACER_FDF_DB) &&
             (tracer_global.only_mask & TRACER_ONLY_DB);
    int label = tracer_tls_wants_label(f); /* DB connections are never accepted */
    if (db || label) {
        /* a LABEL or DB event is a record of its own: it carries the CPU
         * since the previous record (the decryption), as after a recv */
        uint64_t now = tracer_event_begin(t);
        struct iovec iov = {.iov_base = (void *)buf, .iov_len = n};
        if (label)
            tracer_tls_label(t, f, fd, buf, n, now);
        else
            tracer_db_wire_received(t, f, &iov, 1, n, begin, now, 1);
        tracer_event_end(t, now);
    }
    errno = err;
}

TRACER_EXPORT int SSL_read(SSL *s, void *buf, int num)
{
    struct tracer_thread *t = tracer_enter(TRACER_ONLY_NET | TRACER_ONLY_DB);
    uint64_t begin = t ? tracer_ring_now() : 0;
    int r = tracer_real_SSL_read()(s, buf, num);
    if (r > 0 && t)
        tls_plaintext_read(t, s, buf, (size_t)r, begin);
    return r;
}

TRACER_EXPORT int SSL_read_ex(SSL *s, void *buf, size_t num, size_t *got)
{
    struct tracer_thread *t = tracer_enter(TRACER_ONLY_NET | TRACER_ONLY_DB);
    uint64_t begin = t ? tracer_ring_now() : 0;
    int r = tracer_real_SSL_read_ex()(s, buf, num, got);
    if (r == 1 && got && *got && t)
        tls_plaintext_read(t, s, buf, *got, begin);
    return r;
}

/* Before SSL_write sends n > 0 plaintext bytes: on a DB connection they
 * are parsed now, as a plain socket's before its send
 * (tracer_db_wire_before_send). Returns the bytes parsed, 0 for any other
 * connection; *fd gets the socket. */
static size_t tls_before_write(struct tracer_thread *t, SSL *s, const void *buf, size_t n, int *fd)
{
    *fd = -1;
    if (!tracer_global.db_wire_in_use)
        return 0;
    int err = errno;
    *fd = tracer_real_SSL_get_wfd()(s);
    size_t parsed = 0;
    if (*fd >= 0) {
        uint64_t now = tracer_event_begin(t);
        struct iovec iov = {.iov_base = (void *)buf, .iov_len = n};
        parsed = tracer_db_wire_before_send(t, *fd, &iov, 1, n, now, 1);
        tracer_event_end(t, now);
    }
    errno = err;
    return parsed;
}

TRACER_EXPORT int SSL_write(SSL *s, const void *buf, int num)
{
    struct tracer_thread *t = tracer_enter(TRACER_ONLY_NET | TRACER_ONLY_DB);
    int fd;
    size_t parsed = t && num > 0 ? tls_before_write(t, s, buf, (size_t)num, &fd) : 0;
    int r = tracer_real_SSL_write()(s, buf, num);
    if (parsed)
        tracer_db_wire_after_send(fd, parsed, r);
    return r;
}

TRACER_EXPORT int SSL_write_ex(SSL *s, const void *buf, size_t num, size_t *written)
{
    struct tracer_thread *t = tracer_enter(TRACER_ONLY_NET | TRACER_ONLY_DB);
    int fd;
    size_t parsed = t && num ? tls_before_write(t, s, buf, num, &fd) : 0;
    int r = tracer_real_SSL_write_ex()(s, buf, num, written);
    if (parsed)
        tracer_db_wire_after_send(fd, parsed, r == 1 && written ? (int64_t)*written : -1);
    return r;
}
