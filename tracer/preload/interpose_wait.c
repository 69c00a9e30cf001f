/* interpose_wait.c - the readiness waits: poll, ppoll, select, pselect,
 * epoll_wait, epoll_pwait, epoll_pwait2 (and the fortified __poll_chk,
 * __ppoll_chk). A server waits in them for its next request (a keep-alive
 * connection's poll, an event loop's epoll_wait); a replayer waits its own
 * way, so the wait's own CPU (entering the kernel, the wait queues, the
 * switch and the wake-up) must not be replayed as the app's work. No event
 * is recorded: the wait ends one CPU segment and the next begins after it,
 * the CPU before the wait carried on (tracer_cpu_wait_begin/_end).
 *
 * Never changes what the call returns or its errno, and never records a
 * wait as an event (the replay has nothing to re-issue for it). */
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/select.h>

#include "io_events.h"

TRACER_REAL(int, poll, (struct pollfd *, nfds_t, int))
TRACER_REAL(int, __poll_chk, (struct pollfd *, nfds_t, int, size_t))
TRACER_REAL(int, ppoll, (struct pollfd *, nfds_t, const struct timespec *, const sigset_t *))
TRACER_REAL(int, __ppoll_chk,
            (struct pollfd *, nfds_t, const struct timespec *, const sigset_t *, size_t))
TRACER_REAL(int, select, (int, fd_set *, fd_set *, fd_set *, struct timeval *))
TRACER_REAL(int, pselect,
            (int, fd_set *, fd_set *, fd_set *, const struct timespec *, const sigset_t *))
TRACER_REAL(int, epoll_wait, (int, struct epoll_event *, int, int))
TRACER_REAL(int, epoll_pwait, (int, struct epoll_event *, int, int, const sigset_t *))
TRACER_REAL(int, epoll_pwait2,
            (int, struct epoll_event *, int, const struct timespec *, const sigset_t *))

/* The body of every wrapper: the real call between the two halves of the
 * CPU mark's wait, errno as the call left it. */
#define TRACER_WAIT_BODY(realcall)                                                                 \
    struct tracer_thread *t = tracer_enter(TRACER_ONLY_CPU);                                       \
    if (!t)                                                                                        \
        return realcall;                                                                           \
    struct tracer_cpu_wait wait_mark = tracer_cpu_wait_begin(t);                                   \
    int rc = realcall;                                                                             \
    int err = errno;                                                                               \
    tracer_cpu_wait_end(t, wait_mark);                                                             \
    errno = err;                                                                                   \
    return rc

TRACER_EXPORT int poll(struct pollfd *fds, nfds_t n, int timeout)
{
    TRACER_WAIT_BODY(tracer_real_poll()(fds, n, timeout));
}

TRACER_EXPORT int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen)
{
    TRACER_WAIT_BODY(tracer_real___poll_chk()(fds, n, timeout, fdslen));
}

TRACER_EXPORT int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *timeout,
                        const sigset_t *mask)
{
    TRACER_WAIT_BODY(tracer_real_ppoll()(fds, n, timeout, mask));
}

TRACER_EXPORT int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *timeout,
                              const sigset_t *mask, size_t fdslen)
{
    TRACER_WAIT_BODY(tracer_real___ppoll_chk()(fds, n, timeout, mask, fdslen));
}

TRACER_EXPORT int select(int nfds, fd_set *r, fd_set *w, fd_set *e, struct timeval *timeout)
{
    TRACER_WAIT_BODY(tracer_real_select()(nfds, r, w, e, timeout));
}

TRACER_EXPORT int pselect(int nfds, fd_set *r, fd_set *w, fd_set *e, const struct timespec *timeout,
                          const sigset_t *mask)
{
    TRACER_WAIT_BODY(tracer_real_pselect()(nfds, r, w, e, timeout, mask));
}

TRACER_EXPORT int epoll_wait(int epfd, struct epoll_event *events, int max, int timeout)
{
    TRACER_WAIT_BODY(tracer_real_epoll_wait()(epfd, events, max, timeout));
}

TRACER_EXPORT int epoll_pwait(int epfd, struct epoll_event *events, int max, int timeout,
                              const sigset_t *mask)
{
    TRACER_WAIT_BODY(tracer_real_epoll_pwait()(epfd, events, max, timeout, mask));
}

TRACER_EXPORT int epoll_pwait2(int epfd, struct epoll_event *events, int max,
                               const struct timespec *timeout, const sigset_t *mask)
{
    TRACER_WAIT_BODY(tracer_real_epoll_pwait2()(epfd, events, max, timeout, mask));
}
