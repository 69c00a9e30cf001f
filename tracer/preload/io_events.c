/* io_events.c - the one place a data transfer becomes a FILE or NET event
 * (see io_events.h): offsets for files, connection identity, HTTP request
 * labels on accepted connections, and the hand-off to the DB wire parser.
 * Never changes the call's result or errno (callers restore errno). */
#include "io_events.h"
#include "db_greeting.h"
#include "pg_greeting.h"
#include "pg_wire.h"
#include "h2_label.h"
#include "http_label.h"

#include <arpa/inet.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* Peer inode of an AF_UNIX socket via sock_diag (one netlink round trip per
 * connection); 0 when the kernel does not say. */
static uint64_t tracer_unix_peer_inode(uint64_t ino)
{
    int nl = (int)syscall(SYS_socket, AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (nl < 0)
        return 0;
    struct {
        struct nlmsghdr nlh;
        struct unix_diag_req req;
    } msg;
    memset(&msg, 0, sizeof msg);
    msg.nlh.nlmsg_len = sizeof msg;
    msg.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    msg.nlh.nlmsg_flags = NLM_F_REQUEST;
    msg.req.sdiag_family = AF_UNIX;
    msg.req.udiag_states = -1;
    msg.req.udiag_ino = (uint32_t)ino;
    msg.req.udiag_show = UDIAG_SHOW_PEER;
    msg.req.udiag_cookie[0] = msg.req.udiag_cookie[1] = (uint32_t)-1; /* INET_DIAG_NOCOOKIE */
    struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
    uint64_t peer = 0;
    if (syscall(SYS_sendto, nl, &msg, sizeof msg, 0, &sa, sizeof sa) == (long)sizeof msg) {
        union {
            char buf[1024];
            struct nlmsghdr align;
        } u;
        long n = syscall(SYS_recvfrom, nl, u.buf, sizeof u.buf, 0, NULL, NULL);
        struct nlmsghdr *h = (struct nlmsghdr *)u.buf;
        if (n > 0 && NLMSG_OK(h, (unsigned)n) && h->nlmsg_type == SOCK_DIAG_BY_FAMILY) {
            struct unix_diag_msg *m = NLMSG_DATA(h);
            int len = (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof *m));
            struct rtattr *a = (struct rtattr *)(m + 1);
            for (; RTA_OK(a, len); a = RTA_NEXT(a, len))
                if (a->rta_type == UNIX_DIAG_PEER)
                    peer = *(uint32_t *)RTA_DATA(a);
        }
    }
    syscall(SYS_close, nl);
    return peer;
}

static void tracer_conn_fill_addr(const struct sockaddr_storage *ss, uint8_t *addr, uint16_t *port)
{
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)ss;
        memcpy(addr, &in->sin_addr, 4);
        *port = ntohs(in->sin_port);
    } else if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;
        memcpy(addr, &in6->sin6_addr, 16);
        *port = ntohs(in6->sin6_port);
    }
}

/* Is `port` a DB endpoint's (`record --db-port`)? */
static int tracer_db_port(uint16_t port)
{
    const struct tracer_control *ctl = tracer_global.control;
    for (uint32_t i = 0; i < ctl->ndb_ports && i < 8; i++)
        if (port == ctl->db_ports[i])
            return 1;
    return 0;
}

/* f is a DB connection from now on: what it sends and receives goes to the
 * wire parser (db_wire.c; pg_wire.c for PostgreSQL), whether its peer's
 * port or socket name said so (--db-port, --db-socket: the dialect is told
 * by its first bytes, TRACER_DB_DIALECT_UNKNOWN) or its server's greeting
 * did (tracer_db_probe). pg_init: TRACER_PG_INIT_* for PostgreSQL. */
static void tracer_conn_mark_db(struct tracer_fd *f, uint8_t dialect, uint8_t pg_init)
{
    /* a connection identified again (a non-blocking connect's first send)
     * keeps the dialect its first bytes told */
    if (!(f->flags & TRACER_FDF_DB) || dialect != TRACER_DB_DIALECT_UNKNOWN) {
        f->db_dialect = dialect;
        f->db_pg_init = pg_init;
    }
    f->flags |= TRACER_FDF_DB;
    f->flags &= (uint16_t) ~(TRACER_FDF_DB_PROBE | TRACER_FDF_PG_STARTUP | TRACER_FDF_PG_ENCREQ |
                             TRACER_FDF_PG_NOT);
    tracer_global.db_wire_in_use = 1;
}

static int tracer_is_db_endpoint(const struct trace_conn_event *c, const struct sockaddr_un *peer,
                                 socklen_t peer_len)
{
    const struct tracer_control *ctl = tracer_global.control;
    if (c->family == AF_UNIX) {
        size_t slen = strnlen(ctl->db_socket_suffix, sizeof ctl->db_socket_suffix);
        if (!slen || peer_len <= offsetof(struct sockaddr_un, sun_path))
            return 0;
        size_t plen = strnlen(peer->sun_path, peer_len - offsetof(struct sockaddr_un, sun_path));
        return plen >= slen && !memcmp(peer->sun_path + plen - slen, ctl->db_socket_suffix, slen);
    }
    return tracer_db_port(c->remote_port);
}

/* `record --port`: is `port` one of the listed ports? */
static int tracer_port_listed(uint16_t port)
{
    const struct tracer_control *ctl = tracer_global.control;
    for (uint32_t i = 0; i < ctl->nnet_ports && i < TRACER_NET_PORTS_MAX; i++)
        if (ctl->net_ports[i] == port)
            return 1;
    return 0;
}

/* `record --port`: is a connection between these ports left out? Never
 * when no port is listed, when either port is listed, or when the peer is
 * a DB endpoint (its bytes carry the DB events). */
static int tracer_ports_filtered(uint16_t local_port, uint16_t peer_port)
{
    return tracer_global.control->nnet_ports && !tracer_port_listed(local_port) &&
           !tracer_port_listed(peer_port) && !tracer_db_port(peer_port);
}

/* The port of an IPv4/IPv6 address (0 for any other family or a short one). */
static uint16_t tracer_addr_port(const struct sockaddr *sa, socklen_t len)
{
    if (!sa)
        return 0;
    if (sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in))
        return ntohs(((const struct sockaddr_in *)sa)->sin_port);
    if (sa->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6))
        return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
    return 0;
}

/* The common head of a CONN event (lifecycle and identity alike). */
static void tracer_conn_event_init(struct trace_event *ev, const struct tracer_thread *t,
                                   uint8_t op, uint64_t begin_ns, uint64_t end_ns)
{
    memset(ev, 0, sizeof *ev);
    ev->type = TRACE_EV_CONN;
    ev->op = op;
    ev->tid = t->tid;
    ev->ts_ns = begin_ns;
    ev->dur_ns = end_ns - begin_ns;
}

static uint64_t tracer_conn_identify(struct tracer_thread *t, int fd, struct tracer_fd *f,
                                     uint8_t op, uint64_t begin_ns, uint64_t end_ns, int64_t result,
                                     uint16_t connect_port)
{
    if (!f || f->kind != TRACER_FD_SOCKET)
        return 0;
    if ((f->flags & TRACER_FDF_IDENT_DONE) && op == TRACE_CONN_IDENT)
        return f->conn_id;
    /* a connection a forking server's parent accepted, first used by the
     * child (tracer_fd_after_fork): the child serves it */
    if (op == TRACE_CONN_IDENT && (f->flags & TRACER_FDF_ACCEPTED))
        op = TRACE_CONN_ACCEPT;
    struct trace_event ev;
    tracer_conn_event_init(&ev, t, op, begin_ns, end_ns);
    struct trace_conn_event *c = &ev.u.conn;
    c->fd = fd;
    c->result = result;
    struct sockaddr_storage local, remote;
    socklen_t llen = sizeof local, rlen = sizeof remote;
    memset(&local, 0, sizeof local);
    memset(&remote, 0, sizeof remote);
    int have_local = syscall(SYS_getsockname, fd, &local, &llen) == 0;
    int have_remote = syscall(SYS_getpeername, fd, &remote, &rlen) == 0;
    int type = 0;
    socklen_t tlen = sizeof type;
    syscall(SYS_getsockopt, fd, SOL_SOCKET, SO_TYPE, &type, &tlen);
    c->family = (uint8_t)(have_local ? local.ss_family : (have_remote ? remote.ss_family : 0));
    if (c->family == AF_UNIX) {
        c->proto = type == SOCK_STREAM ? TRACE_PROTO_UNIX_STREAM : TRACE_PROTO_UNIX_DGRAM;
        struct stat st;
        if (syscall(SYS_fstat, fd, &st) == 0) {
            c->unix_inode = st.st_ino;
            c->unix_peer_inode = tracer_unix_peer_inode(st.st_ino);
        }
    } else {
        c->proto = type == SOCK_DGRAM ? TRACE_PROTO_UDP : TRACE_PROTO_TCP;
        if (have_local)
            tracer_conn_fill_addr(&local, c->local_addr, &c->local_port);
        if (have_remote)
            tracer_conn_fill_addr(&remote, c->remote_addr, &c->remote_port);
    }
    if (!f->conn_id)
        f->conn_id = tracer_next_conn_id();
    c->conn_id = f->conn_id;
    f->proto = c->proto;
    if (have_remote || op == TRACE_CONN_CONNECT || op == TRACE_CONN_ACCEPT)
        f->flags |= TRACER_FDF_IDENT_DONE;
    /* A datagram socket with no peer yet: written once (not at every
     * call); its calls' own addresses name their peers. connect() on it
     * writes the identity again (op CONNECT), with the peer. */
    if (have_remote)
        f->flags &= (uint16_t)~TRACER_FDF_PEERLESS;
    else if (type == SOCK_DGRAM && (c->family == AF_INET || c->family == AF_INET6))
        f->flags |= TRACER_FDF_IDENT_DONE | TRACER_FDF_PEERLESS;
    if (have_remote && tracer_is_db_endpoint(c, (struct sockaddr_un *)&remote, rlen))
        tracer_conn_mark_db(f, TRACER_DB_DIALECT_UNKNOWN, 0);
    else if (op == TRACE_CONN_CONNECT && !(f->flags & TRACER_FDF_DB) &&
             (c->proto == TRACE_PROTO_TCP || c->proto == TRACE_PROTO_UNIX_STREAM)) {
        /* its first bytes will tell (its server's, or its own) */
        f->flags &= (uint16_t) ~(TRACER_FDF_PG_STARTUP | TRACER_FDF_PG_ENCREQ | TRACER_FDF_PG_NOT);
        f->flags |= TRACER_FDF_DB_PROBE;
        f->label_len = 0;
    }
    /* --port: decided once the peer is known (connected, accepted, or the
     * address a connect in progress goes to) or there is none to know (a
     * datagram socket whose every call names its peer: those calls to or
     * from a listed port are traced, tracer_io_record); a re-identification
     * (connect) decides again */
    f->flags &= (uint16_t)~TRACER_FDF_NET_FILTERED;
    uint16_t peer_port = have_remote ? c->remote_port : connect_port;
    if ((c->family == AF_INET || c->family == AF_INET6) &&
        (peer_port || (f->flags & TRACER_FDF_PEERLESS)) &&
        tracer_ports_filtered(c->local_port, peer_port)) {
        f->flags |= TRACER_FDF_NET_FILTERED;
        return f->conn_id;
    }
    tracer_emit_definition(&ev);
    return f->conn_id;
}

uint64_t tracer_conn_ensure(struct tracer_thread *t, int fd, struct tracer_fd *f, uint8_t op,
                            uint64_t begin_ns, uint64_t end_ns, int64_t result)
{
    return tracer_conn_identify(t, fd, f, op, begin_ns, end_ns, result, 0);
}

uint64_t tracer_conn_connected(struct tracer_thread *t, int fd, struct tracer_fd *f,
                               uint64_t begin_ns, uint64_t end_ns, int64_t result,
                               const struct sockaddr *to, socklen_t to_len)
{
    return tracer_conn_identify(t, fd, f, TRACE_CONN_CONNECT, begin_ns, end_ns, result,
                                tracer_addr_port(to, to_len));
}

/* ---- datagram peers ------------------------------------------------------
 * A UDP socket with no connected peer names the peer in each call. Every
 * (socket, peer) pair gets a CONN identity of its own (remote address and
 * port: the 4-tuple), written the first time the pair is seen; this table
 * maps the pair to its conn id so a peer seen again keeps its id. A pair
 * pushed out by another (more than TRACER_PEER_SLOTS pairs hashing alike)
 * gets a new id and identity when seen again: the same peer under two ids,
 * never a wrong one. Shared by the process's threads under the process
 * lock (tracer_process_lock). */
#define TRACER_PEER_SLOTS 1024u
static struct {
    uint64_t key;
    uint64_t conn_id;
} tracer_peers[TRACER_PEER_SLOTS];

void tracer_datagram_peers_reset(void)
{
    memset(tracer_peers, 0, sizeof tracer_peers);
}

/* The conn id of the pair (socket f, peer), writing its identity when new;
 * the socket's own conn id for an address that is not IPv4/IPv6. */
static uint64_t tracer_datagram_peer(struct tracer_thread *t, int fd, struct tracer_fd *f,
                                     const struct sockaddr *peer, socklen_t peer_len,
                                     uint64_t begin_ns)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    if (peer_len > sizeof ss)
        peer_len = sizeof ss;
    memcpy(&ss, peer, peer_len);
    uint8_t addr[16] = {0};
    uint16_t port = 0;
    if (!((ss.ss_family == AF_INET && peer_len >= sizeof(struct sockaddr_in)) ||
          (ss.ss_family == AF_INET6 && peer_len >= sizeof(struct sockaddr_in6))))
        return f->conn_id;
    tracer_conn_fill_addr(&ss, addr, &port);
    /* the socket (its inode: an fd number is reused) and the peer; the
     * hash is never 0, which marks a free slot */
    struct {
        uint64_t socket;
        uint8_t addr[16];
        uint16_t port, family;
    } pair = {f->ino ? f->ino : (uint64_t)fd, {0}, port, ss.ss_family};
    memcpy(pair.addr, addr, sizeof addr);
    uint64_t key = tracer_hash((const char *)&pair, offsetof(__typeof__(pair), family) + 2);
    unsigned slot = (unsigned)(key >> 40) % TRACER_PEER_SLOTS;
    if (tracer_process_lock() != 0)
        return f->conn_id;
    uint64_t conn = tracer_peers[slot].key == key ? tracer_peers[slot].conn_id : 0;
    int fresh = !conn;
    if (fresh) {
        conn = tracer_next_conn_id();
        tracer_peers[slot].key = key;
        tracer_peers[slot].conn_id = conn;
    }
    tracer_process_unlock();
    if (!fresh)
        return conn; /* its identity is written */
    struct trace_event ev;
    tracer_conn_event_init(&ev, t, TRACE_CONN_IDENT, begin_ns, begin_ns);
    struct trace_conn_event *c = &ev.u.conn;
    c->fd = fd;
    c->conn_id = conn;
    c->family = (uint8_t)ss.ss_family;
    c->proto = TRACE_PROTO_UDP;
    memcpy(c->remote_addr, addr, sizeof addr);
    c->remote_port = port;
    struct sockaddr_storage local;
    socklen_t llen = sizeof local;
    if (syscall(SYS_getsockname, fd, &local, &llen) == 0)
        tracer_conn_fill_addr(&local, c->local_addr, &c->local_port);
    tracer_emit_definition(&ev);
    return conn;
}

void tracer_conn_lifecycle(struct tracer_thread *t, int fd, uint64_t conn_id, uint8_t proto,
                           uint8_t op, int64_t result, uint64_t begin_ns, uint64_t end_ns)
{
    struct trace_event ev;
    tracer_conn_event_init(&ev, t, op, begin_ns, end_ns);
    ev.u.conn.fd = fd;
    ev.u.conn.conn_id = conn_id;
    ev.u.conn.proto = proto;
    ev.u.conn.result = result;
    tracer_emit_definition(&ev);
}

/* A FILE record with no data on fd (fd2: the other descriptor, -1 none),
 * with f's identity. */
static void tracer_file_nodata(struct tracer_thread *t, int fd, int fd2, const struct tracer_fd *f,
                               uint8_t op, int64_t result, uint64_t begin_ns, uint64_t end_ns)
{
    struct trace_event *ev = tracer_event_new(t, TRACE_EV_FILE, op, begin_ns, end_ns);
    if (!ev)
        return;
    ev->u.file.fd = fd;
    ev->u.file.fd2 = fd2;
    ev->u.file.offset = -1;
    ev->u.file.result = result;
    if (result < 0)
        ev->flags |= TRACE_F_ERROR;
    tracer_file_identity(&ev->u.file, f);
    tracer_commit(t);
}

void tracer_file_simple(struct tracer_thread *t, int fd, struct tracer_fd *f, uint8_t op,
                        int64_t result, uint64_t begin_ns, uint64_t end_ns)
{
    tracer_file_nodata(t, fd, -1, f, op, result, begin_ns, end_ns);
}

void tracer_dup_done(struct tracer_thread *t, int oldfd, int rc, int err, uint64_t begin)
{
    uint64_t end = t ? tracer_ring_now() : 0;
    if (rc >= 0)
        tracer_fd_dup(oldfd, rc);
    if (!t)
        return;
    struct tracer_fd *f = tracer_fd_get(oldfd);
    if (f && (f->flags & TRACER_FDF_OPEN_PENDING))
        f = tracer_fd_classify(oldfd); /* another thread's open, identity not taken yet */
    if (f && (f->kind == TRACER_FD_FILE || f->kind == TRACER_FD_OTHER) && !tracer_path_filtered(f))
        tracer_file_nodata(t, oldfd, rc >= 0 ? rc : -1, f, TRACE_FILE_DUP, rc >= 0 ? rc : -err,
                           begin, end);
    tracer_event_end(t, end);
}

/* Copies up to cap bytes from the front of an iovec. */
static size_t tracer_iov_peek(const struct iovec *iov, int iovcnt, size_t avail, char *out,
                              size_t cap)
{
    size_t got = 0;
    for (int i = 0; i < iovcnt && got < cap && got < avail; i++) {
        size_t n = iov[i].iov_len;
        if (n > cap - got)
            n = cap - got;
        if (n > avail - got)
            n = avail - got;
        memcpy(out + got, iov[i].iov_base, n);
        got += n;
    }
    return got;
}

/* Do the first bytes received on an accepted connection start a TLS
 * handshake record (content type 22, version 3.x)? A request line never
 * does: HTTP methods are ASCII letters. */
static int tracer_tls_record_start(const struct tracer_io *io)
{
    unsigned char b[3];
    if (tracer_iov_peek(io->iov, io->iovcnt, (size_t)io->result, (char *)b, sizeof b) < sizeof b)
        return 0;
    return b[0] == 0x16 && b[1] == 0x03 && b[2] <= 0x04;
}

/* Writes a LABEL: request `label` on connection f, received at `at`. */
static void tracer_label_write(struct tracer_thread *t, const struct tracer_fd *f,
                               const char *label, size_t len, uint64_t at)
{
    uint32_t id = tracer_intern(label, len);
    struct trace_event *ev = tracer_event_new(t, TRACE_EV_LABEL, 0, at, at);
    if (!ev)
        return;
    ev->u.label.conn_id = f->conn_id;
    ev->u.label.label_id = id;
    tracer_commit(t);
}

/* An HTTP/2 connection's labels: h2_label.c finds one per request. */
struct tracer_h2_labels {
    struct tracer_thread *t;
    const struct tracer_fd *f;
    uint64_t at;
};

static void tracer_h2_label(void *ctx, const char *label, size_t len)
{
    const struct tracer_h2_labels *c = ctx;
    tracer_label_write(c->t, c->f, label, len, c->at);
}

/* Feeds what io received to the connection's HTTP/2 parser (one that can
 * no longer follow the connection ignores it: h2_label.c). */
static void tracer_h2_received(struct tracer_thread *t, struct tracer_fd *f,
                               const struct tracer_io *io)
{
    struct tracer_h2_labels c = {.t = t, .f = f, .at = io->begin_ns};
    size_t left = (size_t)io->result;
    for (int i = 0; i < io->iovcnt && left; i++) {
        size_t n = io->iov[i].iov_len < left ? io->iov[i].iov_len : left;
        if (tracer_h2_feed(f->h2, io->iov[i].iov_base, n, tracer_h2_label, &c) != 0)
            return; /* the state ignores the rest; given back at close */
        left -= n;
    }
}

/* Does an accepted connection open with the HTTP/2 preface? Then its
 * parser is set up and fed (1). The first four bytes decide ("PRI " is no
 * HTTP/1 method); a first read shorter than that is taken as HTTP/1. */
static int tracer_h2_start(struct tracer_thread *t, struct tracer_fd *f, const struct tracer_io *io)
{
    char first[4];
    if (tracer_iov_peek(io->iov, io->iovcnt, (size_t)io->result, first, sizeof first) <
            sizeof first ||
        tracer_h2_preface(first, sizeof first) < 0)
        return 0;
    struct tracer_h2 *state = tracer_h2_state_get();
    f->flags &= (uint16_t)~TRACER_FDF_EXPECT_REQ;
    if (!state)
        return 1; /* no labels for it */
    f->h2 = state;
    f->flags |= TRACER_FDF_H2;
    tracer_h2_init(f->h2, tracer_global.control->keep_query);
    tracer_h2_received(t, f, io);
    return 1;
}

/* Collects the request line of an HTTP request arriving on an accepted
 * connection and emits a LABEL "METHOD /path" (query string dropped unless
 * keep_query). A line that arrives whole in the call's first buffer (the
 * usual case) is read where it is; one that arrives in pieces is gathered
 * in the descriptor's label_buf. Gives up on connections that do not speak
 * HTTP. A connection that opens with a TLS handshake is marked TLS: its
 * encrypted bytes are skipped, and the request lines come from the
 * plaintext SSL_read returned (tls_plaintext, tracer_tls_label). */
static void tracer_label_received(struct tracer_thread *t, struct tracer_fd *f,
                                  const struct tracer_io *io, int tls_plaintext)
{
    char *buf = f->label_buf;
    size_t cap = sizeof f->label_buf - 1;
    int keep_query = tracer_global.control->keep_query;
    const char *line = buf;
    long len = TRACER_LABEL_MORE;
    if (f->flags & TRACER_FDF_TLS) {
        if (!tls_plaintext) { /* encrypted bytes: the SSL_read wrapper reads the line */
            t->tls_recv_fd_plus1 = io->fd + 1;
            return;
        }
    } else if (f->label_len == 0 && io->iovcnt > 0 && tracer_tls_record_start(io)) {
        f->flags |= TRACER_FDF_TLS; /* a handshake, not a request line */
        t->tls_recv_fd_plus1 = io->fd + 1;
        return;
    }
    if (f->flags & TRACER_FDF_H2) {
        tracer_h2_received(t, f, io);
        return;
    }
    if (f->label_len == 0 && io->iovcnt > 0 && tracer_h2_start(t, f, io))
        return;
    if (f->label_len == 0 && io->iovcnt > 0) {
        size_t n =
            io->iov[0].iov_len < (size_t)io->result ? io->iov[0].iov_len : (size_t)io->result;
        line = io->iov[0].iov_base;
        len = tracer_http_label(line, n < cap ? n : cap, cap, keep_query);
    }
    if (len == TRACER_LABEL_MORE) {
        size_t have = f->label_len;
        have += tracer_iov_peek(io->iov, io->iovcnt, (size_t)io->result, buf + have, cap - have);
        f->label_len = (uint8_t)have;
        line = buf;
        len = tracer_http_label(buf, have, cap, keep_query);
        if (len == TRACER_LABEL_MORE)
            return; /* wait for more bytes */
    }
    f->flags &= (uint16_t)~TRACER_FDF_EXPECT_REQ;
    f->label_len = 0;
    if (len == TRACER_LABEL_NOT_HTTP)
        return; /* not HTTP: stop looking */
    tracer_label_write(t, f, line, (size_t)len, io->begin_ns);
}

/* How long (µs) the bytes a receive that ended at end_ns returned had
 * waited in the kernel before that end, at least: TCP_INFO's time since
 * data last arrived on fd (milliseconds counted in kernel ticks) less one
 * tick and less the time since end_ns, so never more than the truth; 0
 * when under a tick or not known. One getsockopt, made only on the
 * receive that begins a request: a server busy with earlier requests
 * reads the next one late, and its arrival is the kernel's, not the
 * read's (FORMAT.md, NET queued_us). */
static uint32_t tracer_tcp_queued_us(int fd, uint64_t end_ns)
{
    static _Atomic int64_t tick_ns; /* the kernel tick; 0 until read */
    int64_t tick = atomic_load_explicit(&tick_ns, memory_order_relaxed);
    if (!tick) {
        struct timespec res;
        tick = syscall(SYS_clock_getres, CLOCK_MONOTONIC_COARSE, &res) == 0
                   ? (int64_t)res.tv_sec * 1000000000 + res.tv_nsec
                   : 0;
        if (tick <= 0 || tick > 100000000)
            tick = 10000000; /* HZ 100, the coarsest */
        atomic_store_explicit(&tick_ns, tick, memory_order_relaxed);
    }
    struct tcp_info ti;
    socklen_t len = sizeof ti;
    if (syscall(SYS_getsockopt, fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0 ||
        len < offsetof(struct tcp_info, tcpi_last_data_recv) + sizeof ti.tcpi_last_data_recv)
        return 0;
    uint64_t now = tracer_ring_now(); /* after the call: a preemption since the
                                         receive is not counted as waiting */
    int64_t since = now > end_ns ? (int64_t)(now - end_ns) : 0;
    int64_t us = ((int64_t)ti.tcpi_last_data_recv * 1000000 - tick - since) / 1000;
    return us <= 0 ? 0 : us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
}

/* A connection the process made (TRACER_FDF_DB_PROBE) sends: is it a
 * PostgreSQL client's opening (pg_greeting.c)? Only the first send counts
 * (and the one after the server declined encryption); a client that sends
 * something else first, or after bytes came in, is not PostgreSQL's. */
static void tracer_pg_probe_send(struct tracer_fd *f, const struct tracer_io *io)
{
    if (f->flags & (TRACER_FDF_PG_STARTUP | TRACER_FDF_PG_ENCREQ | TRACER_FDF_PG_NOT))
        return;
    unsigned char first[8];
    int opening = TRACER_PG_OPEN_NO;
    if (!f->label_len && io->iov &&
        tracer_iov_peek(io->iov, io->iovcnt, (size_t)io->result, (char *)first, sizeof first) ==
            sizeof first)
        opening = tracer_pg_opening(first, sizeof first);
    f->flags |= opening == TRACER_PG_OPEN_STARTUP ? TRACER_FDF_PG_STARTUP
                : opening == TRACER_PG_OPEN_NO    ? TRACER_FDF_PG_NOT
                                                  : TRACER_FDF_PG_ENCREQ;
}

/* The one byte that answers a PostgreSQL client's encryption request: 'N'
 * (go on in clear: the StartupMessage comes next, probed as a first send),
 * 'S' (TLS: a PostgreSQL connection whose plaintext the SSL wrappers
 * give), anything else (GSSAPI encryption, noise): no DB connection we
 * can read. */
static void tracer_pg_probe_encreq(struct tracer_fd *f, const struct tracer_io *io)
{
    char b[2];
    size_t n = io->iov ? tracer_iov_peek(io->iov, io->iovcnt, (size_t)io->result, b, sizeof b) : 0;
    f->flags &= (uint16_t)~TRACER_FDF_PG_ENCREQ;
    if (n == 1 && b[0] == 'N')
        return; /* still probing */
    if (n == 1 && b[0] == 'S')
        tracer_conn_mark_db(f, TRACE_DB_POSTGRESQL, TRACER_PG_INIT_TLS);
    f->flags &= (uint16_t) ~(TRACER_FDF_DB_PROBE | TRACER_FDF_PG_STARTUP);
}

/* The bytes a connection the process made receives first (it is
 * TRACER_FDF_DB_PROBE): gathered in label_buf until they tell whether its
 * server greets like MySQL/MariaDB (db_greeting.c) or, after the client's
 * StartupMessage, answers like PostgreSQL (pg_greeting.c), which makes it a
 * DB connection from there on. The bytes gathered from earlier receives
 * then go to the wire parser ahead of this receive's (all of which the
 * caller hands it), so it reads the whole conversation, as it does on a
 * connection known by its port. Asked once per connection: whatever the
 * answer, the flag goes. A receive with MSG_PEEK leaves the bytes to the
 * next one; one whose bytes are not given (no iovec) ends the question. */
static void tracer_db_probe(struct tracer_thread *t, struct tracer_fd *f,
                            const struct tracer_io *io)
{
    if (io->msg_flags & MSG_PEEK)
        return;
    if (f->flags & TRACER_FDF_PG_ENCREQ) {
        tracer_pg_probe_encreq(f, io);
        return;
    }
    int pg = (f->flags & TRACER_FDF_PG_STARTUP) != 0;
    size_t before = f->label_len, cap = sizeof f->label_buf;
    int verdict = TRACER_DB_GREETING_NO;
    if (io->iov) {
        size_t have = before + tracer_iov_peek(io->iov, io->iovcnt, (size_t)io->result,
                                               f->label_buf + before, cap - before);
        const unsigned char *got = (const unsigned char *)f->label_buf;
        verdict = pg ? tracer_pg_answer(got, have, cap) : tracer_db_greeting(got, have, cap);
        if (verdict == TRACER_DB_GREETING_MORE) {
            f->label_len = (uint8_t)have;
            return;
        }
    }
    f->flags &= (uint16_t)~TRACER_FDF_DB_PROBE;
    if (verdict == TRACER_DB_GREETING_YES) {
        tracer_conn_mark_db(f, pg ? TRACE_DB_POSTGRESQL : TRACE_DB_MYSQL,
                            pg ? TRACER_PG_INIT_STARTED : 0);
        if (before && (tracer_global.only_mask & TRACER_ONLY_DB)) {
            struct iovec earlier = {.iov_base = f->label_buf, .iov_len = before};
            tracer_db_wire_received(t, f, &earlier, 1, before, io->begin_ns, io->begin_ns, 0);
        }
    }
    f->label_len = 0;
}

void tracer_tls_label(struct tracer_thread *t, struct tracer_fd *f, int fd, const void *buf,
                      size_t n, uint64_t now)
{
    struct iovec iov = {.iov_base = (void *)buf, .iov_len = n};
    struct tracer_io io = {.fd = fd,
                           .dir = TRACER_IO_IN,
                           .size = n,
                           .result = (int64_t)n,
                           .iov = &iov,
                           .iovcnt = 1,
                           .begin_ns = now,
                           .end_ns = now};
    tracer_label_received(t, f, &io, 1);
}

void tracer_io_record(struct tracer_thread *t, const struct tracer_io *io)
{
    struct tracer_fd *f =
        tracer_fd_classify_after(io->fd, io->dir == TRACER_IO_OUT, io->explicit_offset, io->result);
    int is_socket = f && f->kind == TRACER_FD_SOCKET;
    int64_t err = io->result < 0 ? -io->result : 0;
    /* A non-blocking call that found nothing to do is no event: the
     * thread's CPU segment simply continues. */
    if (err == EAGAIN || err == EWOULDBLOCK)
        return;

    if (is_socket) {
        if (!(tracer_global.only_mask & (TRACER_ONLY_NET | TRACER_ONLY_DB)))
            return;
        uint64_t conn =
            tracer_conn_ensure(t, io->fd, f, TRACE_CONN_IDENT, io->begin_ns, io->begin_ns, 0);
        int datagram_peer = (f->flags & TRACER_FDF_PEERLESS) && io->peer && io->result >= 0 &&
                            io->peer_len >= sizeof(sa_family_t);
        /* --port: a left-out connection writes nothing; a datagram socket
         * left out for its own port still writes its calls with a listed
         * peer port */
        if (tracer_net_filtered(f) &&
            (!datagram_peer || tracer_ports_filtered(0, tracer_addr_port(io->peer, io->peer_len))))
            return;
        if (datagram_peer)
            conn = tracer_datagram_peer(t, io->fd, f, io->peer, io->peer_len, io->begin_ns);
        if ((f->flags & TRACER_FDF_DB_PROBE) && io->dir == TRACER_IO_OUT && io->result > 0)
            tracer_pg_probe_send(f, io);
        if ((f->flags & TRACER_FDF_DB_PROBE) && io->dir == TRACER_IO_IN && io->result > 0)
            tracer_db_probe(t, f, io);
        if ((f->flags & TRACER_FDF_DB) && io->dir == TRACER_IO_OUT && io->result > 0 &&
            !io->db_parsed && (tracer_global.only_mask & TRACER_ONLY_DB))
            tracer_db_wire_sent(t, f, io->iov, io->iovcnt, (size_t)io->result, io->begin_ns,
                                io->end_ns);
        if ((f->flags & TRACER_FDF_DB) && io->dir == TRACER_IO_IN && io->result > 0 &&
            (tracer_global.only_mask & TRACER_ONLY_DB))
            tracer_db_wire_received(t, f, io->iov, io->iovcnt, (size_t)io->result, io->begin_ns,
                                    io->end_ns, 0);
        if (!(tracer_global.only_mask & TRACER_ONLY_NET))
            return;
        /* the first bytes of a request on an accepted TCP connection */
        uint32_t queued_us = 0;
        if (io->dir == TRACER_IO_IN && io->result > 0 && f->proto == TRACE_PROTO_TCP &&
            (f->flags & (TRACER_FDF_ACCEPTED | TRACER_FDF_EXPECT_REQ)) ==
                (TRACER_FDF_ACCEPTED | TRACER_FDF_EXPECT_REQ) &&
            f->label_len == 0)
            queued_us = tracer_tcp_queued_us(io->fd, io->end_ns);
        if (io->dir == TRACER_IO_IN && io->result > 0 &&
            (f->flags & (TRACER_FDF_EXPECT_REQ | TRACER_FDF_H2)) && io->iov)
            tracer_label_received(t, f, io, 0);
        if (io->dir == TRACER_IO_OUT && (f->flags & TRACER_FDF_ACCEPTED) && io->result > 0) {
            f->flags |= TRACER_FDF_EXPECT_REQ; /* a response went out: next bytes in are
                                                  a new request */
            f->label_len = 0;
        }
        /* the request line is parsed and the identity written: what is
         * left is the record tracer_io_fast writes (as for sendfile's
         * socket side), which moves the CPU mark itself */
        if (!io->event_flags && !queued_us &&
            tracer_io_fast(t, io->fd, io->dir, -1, io->size, io->result, io->msg_flags, io->nmsgs,
                           io->begin_ns, io->end_ns))
            return;
        struct trace_event *ev = tracer_event_new(
            t, TRACE_EV_NET, io->dir == TRACER_IO_OUT ? TRACE_NET_SEND : TRACE_NET_RECV,
            io->begin_ns, io->end_ns);
        if (!ev)
            return;
        ev->u.net.fd = io->fd;
        ev->u.net.conn_id = conn;
        ev->u.net.size = io->size;
        ev->u.net.result = io->result;
        ev->u.net.msg_flags = io->msg_flags;
        ev->u.net.nmsgs = io->nmsgs;
        ev->u.net.queued_us = queued_us;
        ev->flags |= io->event_flags;
        if (io->result < 0)
            ev->flags |= TRACE_F_ERROR;
        if (io->msg_flags & MSG_MORE)
            ev->flags |= TRACE_F_MSG_MORE;
        tracer_commit(t);
        return;
    }

    if (!(tracer_global.only_mask & TRACER_ONLY_FILE))
        return;
    if (tracer_path_filtered(f))
        return;
    /* a descriptor classified since the caller's own try (its first
     * transfer), or a caller with no inline try (sendfile, stdio) */
    if (!io->event_flags &&
        tracer_io_fast(t, io->fd, io->dir, io->explicit_offset, io->size, io->result, io->msg_flags,
                       io->nmsgs, io->begin_ns, io->end_ns))
        return;
    struct trace_event *ev = tracer_event_new(
        t, TRACE_EV_FILE,
        io->explicit_offset >= 0 ? (io->dir == TRACER_IO_OUT ? TRACE_FILE_PWRITE : TRACE_FILE_PREAD)
                                 : (io->dir == TRACER_IO_OUT ? TRACE_FILE_WRITE : TRACE_FILE_READ),
        io->begin_ns, io->end_ns);
    if (!ev)
        return;
    struct trace_file_event *fe = &ev->u.file;
    fe->fd = io->fd;
    fe->size = io->size;
    fe->result = io->result;
    ev->flags |= io->event_flags;
    if (io->result < 0)
        ev->flags |= TRACE_F_ERROR;
    tracer_file_identity(fe, f);
    if (f) {
        if (f->kind == TRACER_FD_FILE) {
            int64_t off = io->explicit_offset;
            if (off < 0) {
                if (io->dir == TRACER_IO_OUT && (f->flags & TRACER_FDF_APPEND))
                    f->offset = (int64_t)f->size;
                off = f->offset;
                if (io->result > 0)
                    f->offset += io->result;
            }
            fe->offset = off;
            if (io->dir == TRACER_IO_OUT && io->result > 0 &&
                (uint64_t)(off + io->result) > f->size)
                f->size = (uint64_t)(off + io->result);
            tracer_fd_sync_shared(f);
        } else {
            fe->offset = -1;
        }
    } else {
        fe->offset = io->explicit_offset;
    }
    tracer_commit(t);
}
