/* interpose_net.c - wrappers for the socket API: socket, accept/accept4,
 * connect, listen, shutdown, setsockopt (the options that change timing),
 * and send/recv/sendto/recvfrom/sendmsg/recvmsg/sendmmsg/recvmmsg (plus the
 * fortified __recv_chk forms). Data transfers go through io_events like
 * read/write, so a socket used with read() and with recv() looks the same. */
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "io_events.h"

TRACER_REAL(int, socket, (int, int, int))
TRACER_REAL(int, accept, (int, struct sockaddr *, socklen_t *))
TRACER_REAL(int, accept4, (int, struct sockaddr *, socklen_t *, int))
TRACER_REAL(int, connect, (int, const struct sockaddr *, socklen_t))
TRACER_REAL(int, listen, (int, int))
TRACER_REAL(int, shutdown, (int, int))
TRACER_REAL(int, setsockopt, (int, int, int, const void *, socklen_t))
TRACER_REAL(ssize_t, send, (int, const void *, size_t, int))
TRACER_REAL(ssize_t, recv, (int, void *, size_t, int))
TRACER_REAL(ssize_t, __recv_chk, (int, void *, size_t, size_t, int))
TRACER_REAL(ssize_t, sendto, (int, const void *, size_t, int, const struct sockaddr *, socklen_t))
TRACER_REAL(ssize_t, recvfrom, (int, void *, size_t, int, struct sockaddr *, socklen_t *))
TRACER_REAL(ssize_t, __recvfrom_chk,
            (int, void *, size_t, size_t, int, struct sockaddr *, socklen_t *))
TRACER_REAL(ssize_t, sendmsg, (int, const struct msghdr *, int))
TRACER_REAL(ssize_t, recvmsg, (int, struct msghdr *, int))
TRACER_REAL(int, sendmmsg, (int, struct mmsghdr *, unsigned, int))
TRACER_REAL(int, recvmmsg, (int, struct mmsghdr *, unsigned, int, struct timespec *))

static struct tracer_fd *tracer_socket_fd(int fd)
{
    struct tracer_fd *f = tracer_fd_get(fd);
    if (f) {
        tracer_fd_clear(f);
        f->kind = TRACER_FD_SOCKET;
    }
    return f;
}

TRACER_EXPORT int socket(int domain, int type, int proto)
{
    int fd = tracer_real_socket()(domain, type, proto);
    int err = errno;
    if (fd >= 0)
        tracer_socket_fd(fd);
    errno = err;
    return fd;
}

/* Linux hands an accepted TCP socket the listener's TCP_NODELAY, and
 * servers rely on it (apache2 sets it once on the listening socket). The
 * replay needs the option on the connection itself, so an accepted socket
 * that has it gets a SOCKOPT event as if it had been set there (one
 * getsockopt per accept; the default, off, is not recorded). */
static void tracer_accepted_inherited_opts(struct tracer_thread *t, int fd,
                                           const struct tracer_fd *f, uint64_t now)
{
    if (f->proto != TRACE_PROTO_TCP || tracer_net_filtered(f))
        return;
    int on = 0;
    socklen_t len = sizeof on;
    if (syscall(SYS_getsockopt, fd, IPPROTO_TCP, TCP_NODELAY, &on, &len) != 0 || !on)
        return;
    struct trace_event *ev = tracer_event_new(t, TRACE_EV_SOCKOPT, 0, now, now);
    if (!ev)
        return;
    ev->u.sockopt.fd = fd;
    ev->u.sockopt.level = IPPROTO_TCP;
    ev->u.sockopt.name = TCP_NODELAY;
    ev->u.sockopt.value = on;
    ev->u.sockopt.conn_id = f->conn_id;
    tracer_commit(t);
}

static int tracer_accepted(struct tracer_thread *t, int lfd, int fd, int err, uint64_t begin)
{
    uint64_t end = tracer_ring_now();
    (void)lfd;
    if (fd >= 0) {
        struct tracer_fd *f = tracer_socket_fd(fd);
        if (f) {
            f->flags |= TRACER_FDF_ACCEPTED | TRACER_FDF_EXPECT_REQ;
            tracer_conn_ensure(t, fd, f, TRACE_CONN_ACCEPT, begin, end, fd);
            tracer_accepted_inherited_opts(t, fd, f, end);
        }
    } else {
        (void)err; /* failed accepts (EAGAIN on non-blocking listeners) are no event */
    }
    tracer_event_end(t, end);
    return fd;
}

TRACER_EXPORT int accept(int lfd, struct sockaddr *addr, socklen_t *len)
{
    struct tracer_thread *t = tracer_enter(TRACER_ONLY_NET | TRACER_ONLY_DB);
    if (!t) {
        int fd = tracer_real_accept()(lfd, addr, len);
        int err = errno;
        if (fd >= 0) {
            struct tracer_fd *f = tracer_socket_fd(fd);
            if (f)
                f->flags |= TRACER_FDF_ACCEPTED | TRACER_FDF_EXPECT_REQ;
        }
        errno = err;
        return fd;
    }
    uint64_t begin = tracer_event_begin(t);
    int fd = tracer_real_accept()(lfd, addr, len);
    int err = errno;
    tracer_accepted(t, lfd, fd, err, begin);
    errno = err;
    return fd;
}

TRACER_EXPORT int accept4(int lfd, struct sockaddr *addr, socklen_t *len, int flags)
{
    struct tracer_thread *t = tracer_enter(TRACER_ONLY_NET | TRACER_ONLY_DB);
    if (!t) {
        int fd = tracer_real_accept4()(lfd, addr, len, flags);
        int err = errno;
        if (fd >= 0) {
            struct tracer_fd *f = tracer_socket_fd(fd);
            if (f)
                f->flags |= TRACER_FDF_ACCEPTED | TRACER_FDF_EXPECT_REQ;
        }
        errno = err;
        return fd;
    }
    uint64_t begin = tracer_event_begin(t);
    int fd = tracer_real_accept4()(lfd, addr, len, flags);
    int err = errno;
    tracer_accepted(t, lfd, fd, err, begin);
    errno = err;
    return fd;
}

TRACER_EXPORT int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
    struct tracer_thread *t = tracer_enter(TRACER_ONLY_NET | TRACER_ONLY_DB);
    if (!t)
        return tracer_real_connect()(fd, addr, len);
    uint64_t begin = tracer_event_begin(t);
    int rc = tracer_real_connect()(fd, addr, len);
    int err = errno;
    uint64_t end = tracer_ring_now();
    struct tracer_fd *f = tracer_fd_classify(fd);
    if (f && f->kind == TRACER_FD_SOCKET && (rc == 0 || err == EINPROGRESS)) {
        f->flags &= (uint16_t)~TRACER_FDF_IDENT_DONE;
        tracer_conn_connected(t, fd, f, begin, end, rc == 0 ? 0 : -err, addr, len);
        if (err == EINPROGRESS) /* peer address known; identity complete on first use */
            f->flags &= (uint16_t)~TRACER_FDF_IDENT_DONE;
    }
    tracer_event_end(t, end);
    errno = err;
    return rc;
}

TRACER_EXPORT int listen(int fd, int backlog)
{
    int rc = tracer_real_listen()(fd, backlog);
    int err = errno;
    struct tracer_fd *f = tracer_fd_classify(fd);
    if (rc == 0 && f)
        f->flags |= TRACER_FDF_LISTENING;
    errno = err;
    return rc;
}

TRACER_EXPORT int shutdown(int fd, int how)
{
    struct tracer_thread *t = tracer_enter(TRACER_ONLY_NET);
    if (!t)
        return tracer_real_shutdown()(fd, how);
    uint64_t begin = tracer_event_begin(t);
    int rc = tracer_real_shutdown()(fd, how);
    int err = errno;
    uint64_t end = tracer_ring_now();
    struct tracer_fd *f = tracer_fd_classify(fd);
    if (f && f->kind == TRACER_FD_SOCKET) {
        uint64_t conn = tracer_conn_ensure(t, fd, f, TRACE_CONN_IDENT, begin, begin, 0);
        if (!tracer_net_filtered(f))
            tracer_conn_lifecycle(t, fd, conn, f->proto, TRACE_CONN_SHUTDOWN, rc == 0 ? how : -err,
                                  begin, end);
    }
    tracer_event_end(t, end);
    errno = err;
    return rc;
}

static int tracer_sockopt_matters(int level, int name)
{
    if (level == IPPROTO_TCP)
        return name == TCP_NODELAY || name == TCP_CORK || name == TCP_QUICKACK;
    if (level == SOL_SOCKET)
        return name == SO_SNDBUF || name == SO_RCVBUF || name == SO_LINGER;
    return 0;
}

/* The SOCKOPT record of a socket already known, inline (nginx sets
 * TCP_CORK on and off around every response): 1 when written and the CPU
 * mark moved to end_ns (the event is over), 0 when the general path must.
 * Touches neither errno nor any lock. */
static inline int tracer_sockopt_fast(struct tracer_thread *t, int fd, int level, int name,
                                      int64_t value, uint64_t begin_ns, uint64_t end_ns)
{
    struct tracer_fd *f = tracer_fd_peek(fd);
    if (TRACER_UNLIKELY(!f || f->kind != TRACER_FD_SOCKET || tracer_global.stack_depth ||
                        tracer_net_filtered(f)))
        return 0;
    enum { NEED = TRACER_EVENT_RECORD_BYTES(sockopt) };
    uint64_t head;
    struct trace_event *ev = tracer_event_reserve_fast(t, NEED, t->pending_cpu, &head);
    if (TRACER_UNLIKELY(!ev))
        return 0;
    t->pending_cpu = 0;
    memset(ev, 0, TRACER_EVENT_BYTES(sockopt));
    ev->type = TRACE_EV_SOCKOPT;
    ev->tid = t->tid;
    ev->ts_ns = begin_ns;
    ev->dur_ns = end_ns > begin_ns ? end_ns - begin_ns : 0;
    ev->u.sockopt.fd = fd;
    ev->u.sockopt.level = level;
    ev->u.sockopt.name = name;
    ev->u.sockopt.value = value;
    ev->u.sockopt.conn_id = f->conn_id;
    tracer_record_publish_fast(t, head + NEED, end_ns);
    return 1;
}

/* An option that changes timing is a timed event carrying the CPU time
 * before it, like a transfer: switching TCP_CORK off sends what it held,
 * so the work done before it is part of the response's time. */
TRACER_EXPORT int setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
    struct tracer_thread *t =
        tracer_sockopt_matters(level, name) ? tracer_enter(TRACER_ONLY_NET) : NULL;
    if (!t)
        return tracer_real_setsockopt()(fd, level, name, val, len);
    uint64_t begin = tracer_event_begin(t);
    int rc = tracer_real_setsockopt()(fd, level, name, val, len);
    int err = errno;
    uint64_t end = tracer_ring_now();
    int64_t value = val && len >= sizeof(int) ? *(const int *)val : 0;
    if (rc == 0 && tracer_sockopt_fast(t, fd, level, name, value, begin, end)) {
        errno = err;
        return rc;
    }
    if (rc == 0) {
        struct tracer_fd *f = tracer_fd_classify(fd);
        struct trace_event *ev =
            tracer_net_filtered(f) ? NULL : tracer_event_new(t, TRACE_EV_SOCKOPT, 0, begin, end);
        if (ev) {
            ev->u.sockopt.fd = fd;
            ev->u.sockopt.level = level;
            ev->u.sockopt.name = name;
            ev->u.sockopt.value = value;
            ev->u.sockopt.conn_id = f ? f->conn_id : 0;
            tracer_commit(t);
        }
    }
    tracer_event_end(t, end);
    errno = err;
    return rc;
}

#define TRACER_SOCK_BODY(realcall, DIR, SIZE, IOV, IOVCNT, FLAGS, NMSGS, RTYPE, PEER, PEERLEN)     \
    TRACER_TRANSFER_BODY(realcall, RTYPE, DIR, -1, SIZE, IOV, IOVCNT, FLAGS, NMSGS, PEER, PEERLEN)

static size_t tracer_msg_total(const struct msghdr *m)
{
    size_t n = 0;
    for (size_t i = 0; m && i < m->msg_iovlen; i++)
        n += m->msg_iov[i].iov_len;
    return n;
}

TRACER_EXPORT ssize_t send(int fd, const void *buf, size_t n, int flags)
{
    TRACER_SOCK_BODY(tracer_real_send()(fd, buf, n, flags), TRACER_IO_OUT, n,
                     TRACER_ONE_IOV(buf, n), 1, flags, 0, ssize_t, NULL, 0);
}

TRACER_EXPORT ssize_t recv(int fd, void *buf, size_t n, int flags)
{
    TRACER_SOCK_BODY(tracer_real_recv()(fd, buf, n, flags), TRACER_IO_IN, n,
                     (flags & MSG_PEEK) ? NULL : TRACER_ONE_IOV(buf, n), 1, flags, 0, ssize_t, NULL,
                     0);
}

TRACER_EXPORT ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags)
{
    TRACER_SOCK_BODY(tracer_real___recv_chk()(fd, buf, n, buflen, flags), TRACER_IO_IN, n,
                     (flags & MSG_PEEK) ? NULL : TRACER_ONE_IOV(buf, n), 1, flags, 0, ssize_t, NULL,
                     0);
}

TRACER_EXPORT ssize_t sendto(int fd, const void *buf, size_t n, int flags,
                             const struct sockaddr *to, socklen_t tolen)
{
    TRACER_SOCK_BODY(tracer_real_sendto()(fd, buf, n, flags, to, tolen), TRACER_IO_OUT, n,
                     TRACER_ONE_IOV(buf, n), 1, flags, 0, ssize_t, to, to ? tolen : 0);
}

TRACER_EXPORT ssize_t recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *from,
                               socklen_t *fromlen)
{
    TRACER_SOCK_BODY(tracer_real_recvfrom()(fd, buf, n, flags, from, fromlen), TRACER_IO_IN, n,
                     (flags & MSG_PEEK) ? NULL : TRACER_ONE_IOV(buf, n), 1, flags, 0, ssize_t, from,
                     from && fromlen ? *fromlen : 0);
}

TRACER_EXPORT ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags,
                                     struct sockaddr *from, socklen_t *fromlen)
{
    TRACER_SOCK_BODY(tracer_real___recvfrom_chk()(fd, buf, n, buflen, flags, from, fromlen),
                     TRACER_IO_IN, n, (flags & MSG_PEEK) ? NULL : TRACER_ONE_IOV(buf, n), 1, flags,
                     0, ssize_t, from, from && fromlen ? *fromlen : 0);
}

TRACER_EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
    TRACER_SOCK_BODY(tracer_real_sendmsg()(fd, msg, flags), TRACER_IO_OUT, tracer_msg_total(msg),
                     msg ? msg->msg_iov : NULL, msg ? (int)msg->msg_iovlen : 0, flags, 0, ssize_t,
                     msg ? msg->msg_name : NULL, msg && msg->msg_name ? msg->msg_namelen : 0);
}

TRACER_EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
    TRACER_SOCK_BODY(tracer_real_recvmsg()(fd, msg, flags), TRACER_IO_IN, tracer_msg_total(msg),
                     (msg && !(flags & MSG_PEEK)) ? msg->msg_iov : NULL,
                     msg ? (int)msg->msg_iovlen : 0, flags, 0, ssize_t, msg ? msg->msg_name : NULL,
                     msg && msg->msg_name ? msg->msg_namelen : 0);
}

/* For the mmsg calls the event's result is the total bytes over the
 * messages done and nmsgs their count. */
static int64_t tracer_mmsg_bytes(const struct mmsghdr *v, int n)
{
    int64_t b = 0;
    for (int i = 0; i < n; i++)
        b += v[i].msg_len;
    return b;
}

static uint64_t tracer_mmsg_requested(const struct mmsghdr *v, unsigned n)
{
    uint64_t b = 0;
    for (unsigned i = 0; i < n; i++)
        b += tracer_msg_total(&v[i].msg_hdr);
    return b;
}

static int tracer_mmsg(int fd, struct mmsghdr *v, unsigned n, int flags, struct timespec *tmo,
                       int out)
{
    struct tracer_thread *t = tracer_enter(TRACER_ONLY_NET | TRACER_ONLY_DB);
    if (!t)
        return out ? tracer_real_sendmmsg()(fd, v, n, flags)
                   : tracer_real_recvmmsg()(fd, v, n, flags, tmo);
    uint64_t begin = tracer_event_begin(t);
    int r = out ? tracer_real_sendmmsg()(fd, v, n, flags)
                : tracer_real_recvmmsg()(fd, v, n, flags, tmo);
    int err = errno;
    struct tracer_io io = {.fd = fd,
                           .dir = out ? TRACER_IO_OUT : TRACER_IO_IN,
                           .explicit_offset = -1,
                           .size = tracer_mmsg_requested(v, n),
                           .result = r >= 0 ? tracer_mmsg_bytes(v, r) : -err,
                           .msg_flags = (uint32_t)flags,
                           .nmsgs = r >= 0 ? (uint32_t)r : 0,
                           /* one event for the batch: the first message's peer */
                           .peer = n ? v[0].msg_hdr.msg_name : NULL,
                           .peer_len = n && v[0].msg_hdr.msg_name ? v[0].msg_hdr.msg_namelen : 0,
                           .begin_ns = begin,
                           .end_ns = tracer_ring_now()};
    tracer_io_record(t, &io);
    tracer_event_end(t, io.end_ns);
    errno = err;
    return r;
}

TRACER_EXPORT int sendmmsg(int fd, struct mmsghdr *v, unsigned n, int flags)
{
    return tracer_mmsg(fd, v, n, flags, NULL, 1);
}

TRACER_EXPORT int recvmmsg(int fd, struct mmsghdr *v, unsigned n, int flags, struct timespec *tmo)
{
    return tracer_mmsg(fd, v, n, flags, tmo, 0);
}
