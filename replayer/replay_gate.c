/* replay_gate.c - the front door of `preplay replay` (replay_gate.h): one
 * thread with its own epoll set accepts connections (non-blocking) and
 * peeks at each until its 24-byte header is there; a whole header with the
 * run's token hands the connection to the workers, anything else closes it
 * with one log line. Why a thread of its own: a worker that waited for a
 * header could be held by anyone who connects (one byte per connection
 * held all workers for the 60 s I/O timeout). The hand-over costs one
 * thread wake-up per connection, not per request: clients keep their
 * connections (driver and peer pools).
 *
 * Limits on clients without the token: a connection must deliver its whole
 * first header within REPLAY_GATE_HEADER_MS; at most replay_gate_pending_cap()
 * wait at once, the oldest is closed for a new one (a client with the token
 * sends its header with the connection, so it is never the oldest for
 * long). When accept(2) runs out of descriptors the listening socket stays
 * readable: the gate stops watching it for REPLAY_GATE_PAUSE_MS instead of
 * spinning, and the connections wait in the kernel's backlog. Log lines
 * are limited to REPLAY_GATE_LOG_PER_S a second, the rest counted.
 * Must never block, never read what the worker must read. */
#include "replay_gate.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "replay_proto.h"

#define REPLAY_GATE_LOG_PER_S 20
#define REPLAY_GATE_TAG_LISTEN (1ull << 32)
#define REPLAY_GATE_TAG_STOP (2ull << 32)

/* A connection waiting for its header; slots form a list in accept order
 * (oldest first), which is also deadline order. */
struct replay_gate_slot {
    int fd;
    int prev, next; /* -1 ends; free slots chain through next */
    uint64_t deadline_ns;
};

struct replay_gate {
    struct replay_gate_config cfg;
    int epfd;
    pthread_t thread;
    int started;
    struct replay_gate_slot slots[REPLAY_GATE_MAX_PENDING];
    int head, tail, free_head, npending;
    int paused;           /* the listening socket is out of the set */
    uint64_t resume_ns;   /* when it goes back in */
    int exhausted_logged; /* one line per descriptor shortage */
    /* log rate limit */
    time_t log_sec;
    int log_lines;
    uint64_t log_suppressed;
};

static uint64_t replay_gate_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int replay_gate_pending_cap(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY ||
        rl.rlim_cur / 4 >= REPLAY_GATE_MAX_PENDING)
        return REPLAY_GATE_MAX_PENDING;
    return rl.rlim_cur / 4 < 8 ? 8 : (int)(rl.rlim_cur / 4);
}

static void replay_gate_print(struct replay_gate *g, const char *line)
{
    pthread_mutex_lock(g->cfg.log_mu);
    fprintf(g->cfg.log, "replay: %s\n", line);
    fflush(g->cfg.log);
    pthread_mutex_unlock(g->cfg.log_mu);
}

/* Says how many lines the rate limit kept back, once it has. */
static void replay_gate_log_flush(struct replay_gate *g)
{
    if (!g->log_suppressed)
        return;
    char line[96];
    snprintf(line, sizeof line, "(%llu more rejected connections not logged)",
             (unsigned long long)g->log_suppressed);
    g->log_suppressed = 0;
    replay_gate_print(g, line);
}

/* One line about the client on fd, within the rate limit. */
static void replay_gate_log(struct replay_gate *g, int fd, const char *what)
{
    time_t sec = time(NULL);
    if (sec != g->log_sec) {
        replay_gate_log_flush(g);
        g->log_sec = sec;
        g->log_lines = 0;
    }
    if (g->log_lines >= REPLAY_GATE_LOG_PER_S) {
        g->log_suppressed++;
        return;
    }
    g->log_lines++;
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    char peer[128] = "?", line[320];
    if (!getpeername(fd, (struct sockaddr *)&ss, &len))
        replay_addr_format((struct sockaddr *)&ss, peer, sizeof peer);
    snprintf(line, sizeof line, "%s: %s", peer, what);
    replay_gate_print(g, line);
}

static void replay_gate_reject(struct replay_gate *g, int fd, const char *why)
{
    atomic_fetch_add(g->cfg.rejected, 1);
    replay_gate_log(g, fd, why);
    close(fd);
}

static void replay_gate_unlink(struct replay_gate *g, int i)
{
    struct replay_gate_slot *sl = &g->slots[i];
    if (sl->prev >= 0)
        g->slots[sl->prev].next = sl->next;
    else
        g->head = sl->next;
    if (sl->next >= 0)
        g->slots[sl->next].prev = sl->prev;
    else
        g->tail = sl->prev;
    sl->fd = -1;
    sl->next = g->free_head;
    g->free_head = i;
    g->npending--;
}

/* Takes slot i out of the gate's set (its connection handed over or
 * closed by the caller afterwards). */
static void replay_gate_release(struct replay_gate *g, int i)
{
    epoll_ctl(g->epfd, EPOLL_CTL_DEL, g->slots[i].fd, NULL);
    replay_gate_unlink(g, i);
}

/* The client on fd (waiting in `slot`, or -1 when just accepted): 1 when
 * done with it (handed over or closed, its slot freed), 0 when its header
 * is not all there yet. `hup`: the client sent all it will. */
static int replay_gate_try(struct replay_gate *g, int fd, int slot, int hup)
{
    unsigned char hb[REPLAY_HEADER_SIZE];
    ssize_t n = recv(fd, hb, sizeof hb, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        n = hup ? 0 : -2;
    if (n == -2 || (n > 0 && n < (ssize_t)sizeof hb && !hup))
        return 0;
    if (slot >= 0) /* out of the gate's set before it is handed over */
        replay_gate_release(g, slot);
    if (n <= 0) { /* closed before a byte: a port probe, nothing to say */
        close(fd);
        return 1;
    }
    struct replay_header h;
    if (n < (ssize_t)sizeof hb) {
        replay_gate_reject(g, fd, "truncated request header");
        return 1;
    }
    if (replay_header_decode(hb, &h)) {
        replay_gate_reject(g, fd, "rejected: not a replay client (bad magic)");
        return 1;
    }
    if (h.token != g->cfg.token) {
        replay_gate_reject(g, fd, "rejected: bad token");
        return 1;
    }
    /* workers use blocking I/O with a timeout, so no replay hangs forever */
    int off = 0;
    ioctl(fd, FIONBIO, &off);
    struct timeval tv = {g->cfg.io_timeout_s, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    g->cfg.handoff(g->cfg.handoff_arg, fd);
    return 1;
}

/* A new connection waits in a slot; the oldest makes room when full. */
static void replay_gate_hold(struct replay_gate *g, int fd, uint64_t now)
{
    if (g->npending >= replay_gate_pending_cap() || g->free_head < 0) {
        int old = g->head, ofd = g->slots[old].fd;
        replay_gate_release(g, old);
        replay_gate_reject(g, ofd, "closed: too many connections without a request header");
    }
    int i = g->free_head;
    struct replay_gate_slot *sl = &g->slots[i];
    g->free_head = sl->next;
    *sl = (struct replay_gate_slot){fd, g->tail, -1, now + REPLAY_GATE_HEADER_MS * 1000000ull};
    if (g->tail >= 0)
        g->slots[g->tail].next = i;
    else
        g->head = i;
    g->tail = i;
    g->npending++;
    struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | EPOLLET, .data.u64 = (uint64_t)i};
    if (epoll_ctl(g->epfd, EPOLL_CTL_ADD, fd, &ev)) {
        replay_gate_unlink(g, i);
        close(fd);
    }
}

/* accept(2) is out of descriptors: stop watching the listening socket
 * (it stays readable) for a while; the backlog keeps the clients. */
static void replay_gate_pause(struct replay_gate *g, int err, uint64_t now)
{
    struct epoll_event ev = {.events = 0, .data.u64 = REPLAY_GATE_TAG_LISTEN};
    epoll_ctl(g->epfd, EPOLL_CTL_MOD, g->cfg.listen_fd, &ev);
    g->paused = 1;
    g->resume_ns = now + REPLAY_GATE_PAUSE_MS * 1000000ull;
    if (!g->exhausted_logged) {
        char line[192];
        snprintf(line, sizeof line,
                 "out of descriptors (accept: %s): accepting paused %d ms at a time until "
                 "connections close; raise the limit (ulimit -n)",
                 strerror(err), REPLAY_GATE_PAUSE_MS);
        replay_gate_print(g, line);
        g->exhausted_logged = 1;
    }
}

static void replay_gate_accept(struct replay_gate *g)
{
    for (int k = 0; k < 64; k++) {
        int c = accept4(g->cfg.listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        uint64_t now = replay_gate_now();
        if (c < 0) {
            if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO || errno == EPERM)
                continue;
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
                replay_gate_pause(g, errno, now);
            return; /* EAGAIN: the backlog is empty */
        }
        g->exhausted_logged = 0;
        /* a client with the token sent its header with the connection */
        if (!replay_gate_try(g, c, -1, 0))
            replay_gate_hold(g, c, now);
    }
}

/* Closes the connections whose header deadline passed (the oldest first). */
static void replay_gate_expire(struct replay_gate *g, uint64_t now)
{
    while (g->head >= 0 && g->slots[g->head].deadline_ns <= now) {
        int i = g->head, fd = g->slots[i].fd;
        replay_gate_release(g, i);
        char why[80];
        snprintf(why, sizeof why, "closed: no request header within %.1f s",
                 REPLAY_GATE_HEADER_MS / 1000.0);
        replay_gate_reject(g, fd, why);
    }
}

/* epoll_wait's timeout: until the oldest deadline or the end of a pause. */
static int replay_gate_timeout_ms(const struct replay_gate *g, uint64_t now)
{
    uint64_t next = UINT64_MAX;
    if (g->head >= 0)
        next = g->slots[g->head].deadline_ns;
    if (g->paused && g->resume_ns < next)
        next = g->resume_ns;
    if (next == UINT64_MAX)
        return -1;
    return next <= now ? 0 : (int)((next - now) / 1000000u + 1);
}

static void *replay_gate_run(void *arg)
{
    struct replay_gate *g = arg;
    struct epoll_event evs[64];
    for (;;) {
        int n = epoll_wait(g->epfd, evs, 64, replay_gate_timeout_ms(g, replay_gate_now()));
        if (n < 0 && errno != EINTR)
            break;
        int listen_ready = 0;
        /* waiting clients first: a new connection may take the oldest slot */
        for (int i = 0; i < n; i++) {
            uint64_t tag = evs[i].data.u64;
            if (tag == REPLAY_GATE_TAG_STOP)
                return NULL;
            if (tag == REPLAY_GATE_TAG_LISTEN) {
                listen_ready = 1;
                continue;
            }
            int slot = (int)tag, fd = g->slots[slot].fd;
            if (fd < 0)
                continue; /* closed earlier in this batch */
            int hup = (evs[i].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0;
            replay_gate_try(g, fd, slot, hup);
        }
        uint64_t now = replay_gate_now();
        if (g->paused && now >= g->resume_ns) {
            struct epoll_event ev = {.events = EPOLLIN, .data.u64 = REPLAY_GATE_TAG_LISTEN};
            epoll_ctl(g->epfd, EPOLL_CTL_MOD, g->cfg.listen_fd, &ev);
            g->paused = 0;
            listen_ready = 1;
        }
        if (listen_ready && !g->paused)
            replay_gate_accept(g);
        replay_gate_expire(g, replay_gate_now());
    }
    return NULL;
}

struct replay_gate *replay_gate_start(const struct replay_gate_config *cfg, char *err,
                                      size_t errlen)
{
    struct replay_gate *g = calloc(1, sizeof *g);
    if (!g) {
        close(cfg->listen_fd);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    g->cfg = *cfg;
    g->head = g->tail = -1;
    for (int i = 0; i < REPLAY_GATE_MAX_PENDING; i++) {
        g->slots[i].fd = -1;
        g->slots[i].next = i + 1 < REPLAY_GATE_MAX_PENDING ? i + 1 : -1;
    }
    g->free_head = 0;
    int on = 1;
    ioctl(cfg->listen_fd, FIONBIO, &on);
    g->epfd = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event lev = {.events = EPOLLIN, .data.u64 = REPLAY_GATE_TAG_LISTEN};
    struct epoll_event sev = {.events = EPOLLIN, .data.u64 = REPLAY_GATE_TAG_STOP};
    if (g->epfd < 0 || epoll_ctl(g->epfd, EPOLL_CTL_ADD, cfg->listen_fd, &lev) ||
        epoll_ctl(g->epfd, EPOLL_CTL_ADD, cfg->stop_fd, &sev)) {
        snprintf(err, errlen, "epoll: %s", strerror(errno));
        replay_gate_stop(g);
        return NULL;
    }
    int rc = pthread_create(&g->thread, NULL, replay_gate_run, g);
    if (rc) {
        snprintf(err, errlen, "starting the accept thread: %s", strerror(rc));
        replay_gate_stop(g);
        return NULL;
    }
    g->started = 1;
    return g;
}

void replay_gate_stop(struct replay_gate *g)
{
    if (!g)
        return;
    if (g->started)
        pthread_join(g->thread, NULL);
    replay_gate_log_flush(g);
    while (g->head >= 0) {
        int fd = g->slots[g->head].fd;
        replay_gate_unlink(g, g->head);
        close(fd);
    }
    close(g->cfg.listen_fd);
    if (g->epfd >= 0)
        close(g->epfd);
    free(g);
}
