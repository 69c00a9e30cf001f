/* app_net.c - socket and clock helpers for the sample application (see app_net.h).
 * Never prints, never exits: errors are returned to the caller. */
#include "app_net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

uint64_t app_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int app_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0 && errno == ENOTSOCK)
            n = write(fd, p, len);
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

int app_read_full(int fd, void *buf, size_t len)
{
    char *p = buf;
    size_t got = 0;
    while (got < len) {
        ssize_t n = read(fd, p + got, len - got);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (n == 0) {
            if (got == 0)
                return 0;
            errno = EPIPE;
            return -1;
        }
        got += (size_t)n;
    }
    return 1;
}

static int app_resolve(const char *host, unsigned port, int passive, struct addrinfo **out)
{
    struct addrinfo hints;
    char port_text[16];
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
    snprintf(port_text, sizeof port_text, "%u", port);
    int rc = getaddrinfo(host, port_text, &hints, out);
    if (rc != 0) {
        errno = rc == EAI_SYSTEM ? errno : EADDRNOTAVAIL;
        return -1;
    }
    return 0;
}

int app_listen_tcp(const char *host, unsigned port, unsigned *bound_port)
{
    struct addrinfo *res = NULL;
    if (app_resolve(host, port, 1, &res) < 0)
        return -1;
    int fd = -1;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0)
            continue;
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 512) == 0)
            break;
        int saved = errno;
        close(fd);
        errno = saved;
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0)
        return -1;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0) {
        close(fd);
        return -1;
    }
    if (ss.ss_family == AF_INET)
        *bound_port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
    else
        *bound_port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return fd;
}

int app_connect_tcp(const char *host, unsigned port)
{
    struct addrinfo *res = NULL;
    if (app_resolve(host, port, 0, &res) < 0)
        return -1;
    int fd = -1;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0)
            continue;
        int rc;
        do
            rc = connect(fd, ai->ai_addr, ai->ai_addrlen);
        while (rc < 0 && errno == EINTR);
        if (rc == 0)
            break;
        int saved = errno;
        close(fd);
        errno = saved;
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd >= 0) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    return fd;
}

int app_resolve_tcp(const char *host, unsigned port, struct sockaddr_storage *addr, socklen_t *len)
{
    struct addrinfo *res = NULL;
    if (app_resolve(host, port, 0, &res) < 0)
        return -1;
    int rc = -1;
    if (res && res->ai_addrlen <= sizeof *addr) {
        memcpy(addr, res->ai_addr, res->ai_addrlen);
        *len = res->ai_addrlen;
        rc = 0;
    } else {
        errno = EADDRNOTAVAIL;
    }
    freeaddrinfo(res);
    return rc;
}

int app_connect_tcp_start(const struct sockaddr *addr, socklen_t len, int *in_progress)
{
    int fd = socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    int rc;
    do
        rc = connect(fd, addr, len);
    while (rc < 0 && errno == EINTR);
    *in_progress = rc < 0 && errno == EINPROGRESS;
    if (rc < 0 && !*in_progress) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

int app_parse_host_port(const char *text, char *host_out, size_t host_cap, unsigned *port)
{
    const char *colon = strrchr(text, ':');
    if (!colon || colon == text)
        return -1;
    const char *host = text;
    size_t host_len = (size_t)(colon - text);
    if (host[0] == '[' && host_len >= 2 && host[host_len - 1] == ']') {
        host++;
        host_len -= 2;
    }
    if (host_len == 0 || host_len >= host_cap)
        return -1;
    unsigned long long p;
    if (app_parse_uint(colon + 1, 1, 65535, &p) < 0)
        return -1;
    memcpy(host_out, host, host_len);
    host_out[host_len] = '\0';
    *port = (unsigned)p;
    return 0;
}

int app_parse_uint(const char *text, unsigned long long min, unsigned long long max,
                   unsigned long long *out)
{
    if (!text || *text < '0' || *text > '9')
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || *end != '\0' || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

int app_write_port_file(const char *path, unsigned port)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    char line[16];
    int n = snprintf(line, sizeof line, "%u\n", port);
    if (app_write_all(fd, line, (size_t)n) < 0 || close(fd) < 0) {
        int saved = errno;
        unlink(tmp);
        errno = saved;
        return -1;
    }
    return rename(tmp, path);
}
