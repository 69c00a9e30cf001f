/* replay_proto.c - header coding, tokens, addresses and exact-length socket
 * I/O for the replayer wire protocol (formats/REPLAY-PROTOCOL.md). Never
 * merges two logical sends into one send(2), never splits one unless it is
 * larger than the filler buffer (1 MiB; then MSG_MORE joins the pieces). */
#include "replay_proto.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#define REPLAY_FILLER_SIZE (1u << 20)
/* Zero bytes sent as payload: never written, so it stays shared zero pages. */
static char replay_filler[REPLAY_FILLER_SIZE];
static _Thread_local char replay_sink[1u << 16];

static void put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const unsigned char *p)
{
    return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

void replay_header_encode(const struct replay_header *h, unsigned char out[REPLAY_HEADER_SIZE])
{
    put32(out, REPLAY_MAGIC);
    put32(out + 4, h->block);
    put64(out + 8, h->token);
    put32(out + 16, h->request_bytes);
    put32(out + 20, h->response_bytes);
}

int replay_header_decode(const unsigned char in[REPLAY_HEADER_SIZE], struct replay_header *h)
{
    if (get32(in) != REPLAY_MAGIC)
        return -1;
    h->block = get32(in + 4);
    h->token = get64(in + 8);
    h->request_bytes = get32(in + 16);
    h->response_bytes = get32(in + 20);
    return 0;
}

int replay_token_parse(const char *text, uint64_t *token)
{
    if (!text || strlen(text) != 16)
        return -1;
    uint64_t v = 0;
    for (int i = 0; i < 16; i++) {
        char c = text[i];
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0)
            return -1;
        v = v << 4 | (uint64_t)d;
    }
    *token = v;
    return 0;
}

void replay_token_format(uint64_t token, char out[17])
{
    snprintf(out, 17, "%016llx", (unsigned long long)token);
}

uint64_t replay_token_random(void)
{
    uint64_t t = 0;
    while (getrandom(&t, sizeof t, 0) != (ssize_t)sizeof t || t == 0)
        ;
    return t;
}

int replay_addr_parse(const char *text, struct sockaddr_storage *ss, socklen_t *len, char *err,
                      size_t errlen)
{
    char host[256];
    const char *colon = strrchr(text, ':');
    if (!colon || colon == text || !colon[1]) {
        snprintf(err, errlen, "address '%s': expected HOST:PORT", text);
        return -1;
    }
    size_t hl = (size_t)(colon - text);
    if (text[0] == '[' && hl >= 2 && text[hl - 1] == ']') {
        text++;
        hl -= 2;
    }
    if (hl >= sizeof host) {
        snprintf(err, errlen, "address '%s': host too long", text);
        return -1;
    }
    memcpy(host, text, hl);
    host[hl] = 0;
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end || port < 0 || port > 65535) {
        snprintf(err, errlen, "address '%s': bad port '%s'", text, colon + 1);
        return -1;
    }
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV}, *res;
    int rc = getaddrinfo(host, colon + 1, &hints, &res);
    if (rc) {
        snprintf(err, errlen, "address '%s': %s", text, gai_strerror(rc));
        return -1;
    }
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    *len = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

void replay_addr_format(const struct sockaddr *sa, char *out, size_t outlen)
{
    char host[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
        port = ntohs(in->sin_port);
        snprintf(out, outlen, "%s:%u", host, port);
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
        port = ntohs(in6->sin6_port);
        snprintf(out, outlen, "[%s]:%u", host, port);
    } else {
        snprintf(out, outlen, "(family %d)", sa->sa_family);
    }
}

int replay_listen(const char *text, char *err, size_t errlen)
{
    struct sockaddr_storage ss;
    socklen_t len;
    if (replay_addr_parse(text, &ss, &len, err, errlen))
        return -1;
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, errlen, "listen %s: socket: %s", text, strerror(errno));
        return -1;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&ss, len)) {
        snprintf(err, errlen, "listen %s: %s", text,
                 errno == EADDRINUSE ? "port in use" : strerror(errno));
        close(fd);
        return -1;
    }
    if (listen(fd, 4096)) {
        snprintf(err, errlen, "listen %s: %s", text, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

int replay_connect(const char *text, int nodelay, char *err, size_t errlen)
{
    struct sockaddr_storage ss;
    socklen_t len;
    if (replay_addr_parse(text, &ss, &len, err, errlen))
        return -1;
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, errlen, "connect %s: socket: %s", text, strerror(errno));
        return -1;
    }
    while (connect(fd, (struct sockaddr *)&ss, len)) {
        if (errno == EINTR)
            continue;
        snprintf(err, errlen, "connect %s: %s", text, strerror(errno));
        close(fd);
        return -1;
    }
    if (nodelay) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    return fd;
}

int replay_send_exact(int fd, const void *buf, size_t len, int flags)
{
    const char *p = buf;
    while (len) {
        ssize_t n = send(fd, p, len, flags | MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int replay_send_filler(int fd, uint64_t len, int flags)
{
    while (len) {
        ssize_t n = replay_xfer_once(fd, 1, len, flags, 0);
        if (n <= 0)
            return -1;
        len -= (uint64_t)n;
    }
    return 0;
}

ssize_t replay_xfer_once(int fd, int send_dir, uint64_t len, int flags, int dontwait)
{
    int dw = dontwait ? MSG_DONTWAIT : 0;
    for (;;) {
        ssize_t n;
        if (send_dir) {
            size_t k = len > REPLAY_FILLER_SIZE ? REPLAY_FILLER_SIZE : (size_t)len;
            int f = len > REPLAY_FILLER_SIZE ? flags | MSG_MORE : flags;
            n = send(fd, replay_filler, k, f | MSG_NOSIGNAL | dw);
        } else {
            size_t k = len < sizeof replay_sink ? (size_t)len : sizeof replay_sink;
            n = recv(fd, replay_sink, k, dw);
            if (n == 0) {
                errno = 0; /* the peer closed */
                return -1;
            }
        }
        if (n < 0 && errno == EINTR)
            continue;
        return n;
    }
}

ssize_t replay_send_head_once(int fd, const void *head, size_t hlen, uint64_t len, int flags,
                              int dontwait)
{
    size_t k = len > REPLAY_FILLER_SIZE ? REPLAY_FILLER_SIZE : (size_t)len;
    struct iovec iov[2] = {{(void *)head, hlen}, {replay_filler, k}};
    struct msghdr m = {.msg_iov = iov, .msg_iovlen = k ? 2 : 1};
    int f = (len > REPLAY_FILLER_SIZE ? flags | MSG_MORE : flags) | MSG_NOSIGNAL |
            (dontwait ? MSG_DONTWAIT : 0);
    ssize_t n;
    do
        n = sendmsg(fd, &m, f);
    while (n < 0 && errno == EINTR);
    return n;
}

int replay_send_head_filler(int fd, const void *head, size_t hlen, uint64_t len, int flags)
{
    const char *h = head;
    while (hlen) { /* the header, with as much of the filler as goes along */
        ssize_t n = replay_send_head_once(fd, h, hlen, len, flags, 0);
        if (n <= 0)
            return -1;
        size_t took = (size_t)n < hlen ? (size_t)n : hlen;
        h += took;
        hlen -= took;
        len -= (uint64_t)n - took;
    }
    return replay_send_filler(fd, len, flags);
}

int replay_recv_exact(int fd, void *buf, size_t len)
{
    char *p = buf;
    while (len) {
        ssize_t n = recv(fd, p, len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int replay_recv_discard(int fd, uint64_t len)
{
    while (len) {
        ssize_t n = replay_xfer_once(fd, 0, len, 0, 0);
        if (n <= 0)
            return -1;
        len -= (uint64_t)n;
    }
    return 0;
}

int replay_precise_timers_begin(void)
{
    int saved = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
    prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0);
    return saved;
}

void replay_precise_timers_end(int saved)
{
    if (saved > 0)
        prctl(PR_SET_TIMERSLACK, (unsigned long)saved, 0, 0, 0);
}
