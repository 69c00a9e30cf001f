/* fault_accept.c - an LD_PRELOAD fault for the run tests: in the replayer
 * of component $FAULT_ACCEPT_COMPONENT (its `--component NAME` argument)
 * every $FAULT_ACCEPT_EVERY-th connection that brings a request (not a
 * RESET/STATS control request), the first included, is shut down as soon
 * as its header arrived, as a replayer that drops a connection would. The
 * driver sees the connection closed before the whole answer: a failed
 * request of its label. Test code: harmless in every other process (it
 * only looks, then calls the real accept4). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int fault_is_target(void)
{
    static int answer = -1;
    if (answer >= 0)
        return answer;
    const char *want = getenv("FAULT_ACCEPT_COMPONENT");
    char buf[8192];
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    if (fd >= 0)
        close(fd);
    answer = 0;
    for (ssize_t i = 0; want && n > 0 && i < n;) {
        const char *arg = buf + i;
        size_t len = strnlen(arg, (size_t)(n - i));
        if (!strcmp(arg, "--component") && i + (ssize_t)len + 1 < n && !strcmp(arg + len + 1, want))
            answer = 1;
        i += (ssize_t)len + 1;
    }
    return answer;
}

/* The request's block from its header (formats/REPLAY-PROTOCOL.md), once
 * it arrived; UINT32_MAX when it did not within a second. */
static uint32_t fault_peek_block(int fd)
{
    unsigned char h[24];
    for (int tries = 0; tries < 100; tries++) {
        struct pollfd p = {fd, POLLIN, 0};
        poll(&p, 1, 10);
        if (recv(fd, h, sizeof h, MSG_PEEK | MSG_DONTWAIT) == (ssize_t)sizeof h)
            return (uint32_t)h[4] | (uint32_t)h[5] << 8 | (uint32_t)h[6] << 16 |
                   (uint32_t)h[7] << 24;
    }
    return UINT32_MAX;
}

int accept4(int sockfd, struct sockaddr *addr, socklen_t *addrlen, int flags)
{
    static int (*real)(int, struct sockaddr *, socklen_t *, int);
    static _Atomic unsigned long data_conns;
    if (!real)
        real = (int (*)(int, struct sockaddr *, socklen_t *, int))dlsym(RTLD_NEXT, "accept4");
    int fd = real(sockfd, addr, addrlen, flags);
    const char *every_text = getenv("FAULT_ACCEPT_EVERY");
    unsigned long every = every_text ? strtoul(every_text, NULL, 10) : 0;
    if (fd < 0 || !every || !fault_is_target())
        return fd;
    uint32_t block = fault_peek_block(fd);
    if (block >= 0xFFFFFFF0u) /* control requests, or no header */
        return fd;
    if (atomic_fetch_add(&data_conns, 1) % every == 0)
        shutdown(fd, SHUT_RDWR);
    return fd;
}
