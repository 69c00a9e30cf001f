/* replay_server.c - the worker pool of `preplay replay` (CloudProphet
 * §3.3): a block runs when its request arrives, on the first free worker.
 * New connections come through the gate (replay_gate.c), which hands over
 * only those whose first header carries the run's token, so a client
 * without it never holds a worker. Every worker waits in epoll_wait on the
 * shared descriptor set (each idle connection, one-shot), so the worker the
 * kernel wakes for a request is the one that serves it: no dispatcher
 * thread hands the connection over (that hand-off was a second thread
 * wake-up per request, ~20 us of the shortest request's response time on
 * this VM; bench_replay_latency measures it). A worker reads the header
 * (and, in the same recv, what of the request already arrived), replays,
 * answers, and re-arms the connection. Never blocks on a client
 * without a timeout, never replays a request whose token is wrong. */
#include "replay_server.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "replay_gate.h"
#include "replay_loop.h"
#include "replay_nodeps.h"
#include "replay_proto.h"

struct replay_server {
    struct replay_engine *e;
    const struct replay_config *cfg;
    int listen_fd, epfd, stop_fd; /* listen_fd: until the gate takes it */
    struct replay_gate *gate;
    FILE *log;
    pthread_t *workers;
    int nworkers, started_workers;
    pthread_mutex_t log_mu;
    _Atomic uint64_t served, rejected;
    /* an event-loop component: its loops instead of the workers */
    struct replay_loops *loops;
    /* --no-deps: one thread per recorded worker replays its blocks in order */
    struct replay_nodeps *nodeps;
    pthread_t *seq_threads;
    uint32_t seq_started;
};

struct replay_server_seq_arg {
    struct replay_server *s;
    uint32_t worker;
};

void replay_server_log(struct replay_server *s, int fd, const char *what)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    char peer[128] = "?";
    if (!getpeername(fd, (struct sockaddr *)&ss, &len))
        replay_addr_format((struct sockaddr *)&ss, peer, sizeof peer);
    pthread_mutex_lock(&s->log_mu);
    fprintf(s->log, "replay: %s: %s\n", peer, what);
    fflush(s->log);
    pthread_mutex_unlock(&s->log_mu);
}

/* The gate's hand-over: an authenticated connection joins the set,
 * one-shot (one worker is woken per request), or one of the event loops. */
static void replay_server_admit(void *arg, int fd)
{
    struct replay_server *s = arg;
    if (s->loops) {
        replay_loops_admit(s->loops, fd);
        return;
    }
    struct epoll_event ev = {.events = EPOLLIN | EPOLLONESHOT, .data.fd = fd};
    if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev))
        close(fd);
}

static _Thread_local unsigned char replay_server_inbuf[REPLAY_HEADER_SIZE + REPLAY_SERVER_PREREAD];

/* Reads the header and, in the same recv(2), what of the request already
 * arrived (none with --no-deps: a worker sequence replays it). The bytes
 * read, 0 when the client closed first, -1 on a failure, -2 on a header
 * cut short by the client closing. */
static ssize_t replay_server_read_header(struct replay_server *s, int fd)
{
    size_t cap = s->nodeps ? REPLAY_HEADER_SIZE : sizeof replay_server_inbuf;
    size_t have = 0;
    while (have < REPLAY_HEADER_SIZE) {
        ssize_t n = recv(fd, replay_server_inbuf + have, cap - have, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0)
            return have ? -2 : 0;
        have += (size_t)n;
    }
    return (ssize_t)have;
}

/* Serves one request on fd. 0 = keep the connection, -1 = close it, 1 = handed
 * to a --no-deps worker sequence (which re-arms or closes it). */
static int replay_server_serve(struct replay_server *s, struct replay_thread *t, int fd)
{
    ssize_t got = replay_server_read_header(s, fd);
    if (got == 0)
        return -1; /* the client closed: normal end of a connection */
    if (got < 0) {
        if (got == -2)
            replay_server_log(s, fd, "truncated request header");
        return -1;
    }
    struct replay_header h;
    uint64_t preread = (uint64_t)got - REPLAY_HEADER_SIZE;
    if (replay_server_check(s, fd, replay_server_inbuf, preread, &h))
        return -1;
    if (h.block == REPLAY_BLOCK_STATS || h.block == REPLAY_BLOCK_RESET)
        return replay_server_control(s, fd, h.block);
    if (s->nodeps && replay_nodeps_offer(s->nodeps, h.block, fd, h.request_bytes, h.response_bytes))
        return 1;
    char err[256];
    if (replay_exec_block_preread(t, h.block, fd, h.request_bytes, preread, h.response_bytes, err,
                                  sizeof err)) {
        replay_server_log(s, fd, err);
        return -1;
    }
    atomic_fetch_add(&s->served, 1);
    return 0;
}

int replay_server_check(struct replay_server *s, int fd, const unsigned char *head,
                        uint64_t preread, struct replay_header *h)
{
    const char *why = NULL;
    if (replay_header_decode(head, h))
        why = "rejected: not a replay client (bad magic)";
    else if (h->token != s->cfg->token)
        why = "rejected: bad token";
    else if (preread > h->request_bytes) /* a second request sent before the first was answered */
        why = "rejected: more bytes than the request header announced";
    char msg[96];
    if (!why && h->block != REPLAY_BLOCK_STATS && h->block != REPLAY_BLOCK_RESET &&
        h->block >= s->cfg->plan->nblocks) {
        snprintf(msg, sizeof msg, "rejected: block %u not in the plan (%u blocks)", h->block,
                 s->cfg->plan->nblocks);
        why = msg;
    }
    if (!why)
        return 0;
    atomic_fetch_add(&s->rejected, 1);
    replay_server_log(s, fd, why);
    return -1;
}

int replay_server_control(struct replay_server *s, int fd, uint32_t block)
{
    char *json = block == REPLAY_BLOCK_STATS ? replay_engine_stats_json(s->e) : NULL;
    if (block == REPLAY_BLOCK_RESET) {
        /* a new interval: the dummy-file ranges this replayer wrote are
         * rewritten and write-back settles before the answer, so the
         * controller starts the driver on the same files every time */
        char ferr[256];
        double restore_s;
        if (replay_engine_restore_files(s->e, &restore_s, ferr, sizeof ferr)) {
            pthread_mutex_lock(&s->log_mu);
            fprintf(s->log, "replay: restoring dummy files: %s\n", ferr);
            fflush(s->log);
            pthread_mutex_unlock(&s->log_mu);
        }
        replay_engine_stats_reset(s->e);
        if (s->nodeps)
            replay_nodeps_reset(s->nodeps);
    }
    uint32_t len = json ? (uint32_t)strlen(json) : 0;
    unsigned char lb[4] = {(unsigned char)len, (unsigned char)(len >> 8),
                           (unsigned char)(len >> 16), (unsigned char)(len >> 24)};
    int rc = replay_send_exact(fd, lb, 4, len ? MSG_MORE : 0) ||
             (len && replay_send_exact(fd, json, len, 0));
    free(json);
    return rc ? -1 : 0;
}

void replay_server_count_served(struct replay_server *s)
{
    atomic_fetch_add(&s->served, 1);
}

static void *replay_server_work(void *arg)
{
    struct replay_server *s = arg;
    struct replay_thread *t = replay_thread_new(s->e);
    if (!t) {
        pthread_mutex_lock(&s->log_mu);
        fprintf(s->log, "replay: out of memory starting a worker\n");
        pthread_mutex_unlock(&s->log_mu);
        return NULL;
    }
    /* A lone worker takes every ready connection at once (nobody else could
     * serve them; one epoll_wait for many requests under load). With
     * several, each takes one: a request waiting behind another in one
     * worker's batch while a second worker sleeps would be added latency. */
    struct epoll_event evs[32];
    int batch = s->nworkers == 1 ? 32 : 1, stop = 0;
    while (!stop) {
        int n = epoll_wait(s->epfd, evs, batch, -1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            break;
        for (int i = 0; i < n; i++) {
            int fd = evs[i].data.fd;
            if (fd == s->stop_fd) { /* level-triggered, never read: wakes every worker */
                stop = 1;
                continue; /* connections taken with it are closed below */
            }
            if (stop) {
                close(fd);
                continue;
            }
            /* re-armed at once: a client sends its next request only after
             * the answer (no MSG_PEEK for one already there: a syscall per
             * request that found nothing) */
            int rc = replay_server_serve(s, t, fd), keep = rc == 0;
            if (rc == 1)
                continue; /* a worker sequence owns it now */
            struct epoll_event rev = {.events = EPOLLIN | EPOLLONESHOT, .data.fd = fd};
            if (!keep || epoll_ctl(s->epfd, EPOLL_CTL_MOD, fd, &rev))
                close(fd);
        }
    }
    replay_thread_free(t);
    return NULL;
}

/* --no-deps: recorded worker `w` replays its held requests in recorded order,
 * then gives each connection back to the shared set. */
static void *replay_server_sequence(void *arg)
{
    struct replay_server_seq_arg a = *(struct replay_server_seq_arg *)arg;
    free(arg);
    struct replay_server *s = a.s;
    struct replay_thread *t = replay_thread_new(s->e);
    if (!t) {
        pthread_mutex_lock(&s->log_mu);
        fprintf(s->log, "replay: out of memory starting worker sequence %u\n", a.worker);
        pthread_mutex_unlock(&s->log_mu);
        return NULL;
    }
    uint32_t block, req, resp;
    int fd;
    while (!replay_nodeps_next(s->nodeps, a.worker, &block, &fd, &req, &resp)) {
        char err[256];
        int keep = !replay_exec_block(t, block, fd, req, resp, err, sizeof err);
        if (keep)
            atomic_fetch_add(&s->served, 1);
        else
            replay_server_log(s, fd, err);
        struct epoll_event ev = {.events = EPOLLIN | EPOLLONESHOT, .data.fd = fd};
        if (!keep || epoll_ctl(s->epfd, EPOLL_CTL_MOD, fd, &ev))
            close(fd);
    }
    replay_thread_free(t);
    return NULL;
}

struct replay_server *replay_server_start(struct replay_engine *e, int listen_fd, int workers,
                                          FILE *log, char *err, size_t errlen)
{
    int slack = -1; /* the caller's timer slack, restored before returning */
    struct replay_server *s = calloc(1, sizeof *s);
    if (!s) {
        close(listen_fd);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->e = e;
    s->cfg = replay_engine_config(e);
    s->listen_fd = listen_fd;
    s->log = log ? log : stderr;
    s->nworkers = workers > 0 ? workers : 1;
    s->epfd = epoll_create1(EPOLL_CLOEXEC);
    s->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    s->workers = calloc((size_t)s->nworkers, sizeof *s->workers);
    pthread_mutex_init(&s->log_mu, NULL);
    if (s->epfd < 0 || s->stop_fd < 0 || !s->workers) {
        snprintf(err, errlen, "starting the server: %s", strerror(errno ? errno : ENOMEM));
        goto fail;
    }
    struct epoll_event sev = {.events = EPOLLIN, .data.fd = s->stop_fd};
    if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->stop_fd, &sev)) {
        snprintf(err, errlen, "epoll: %s", strerror(errno));
        goto fail;
    }
    /* every thread started here replays recorded waits with sleeps */
    slack = replay_precise_timers_begin();
    if (s->cfg->no_deps) {
        if (s->cfg->plan->version_major == 1 && s->cfg->plan->version_minor < 1) {
            snprintf(err, errlen,
                     "--no-deps needs the recorded worker of each block: plan format %u.%u has "
                     "none (analyze the trace again)",
                     s->cfg->plan->version_major, s->cfg->plan->version_minor);
            goto fail;
        }
        s->nodeps =
            replay_nodeps_new(s->cfg->plan, s->cfg->component, s->cfg->no_deps_hold_s, err, errlen);
        if (!s->nodeps)
            goto fail;
        uint32_t n = replay_nodeps_workers(s->nodeps);
        s->seq_threads = calloc(n, sizeof *s->seq_threads);
        if (!s->seq_threads) {
            snprintf(err, errlen, "out of memory");
            goto fail;
        }
        for (uint32_t w = 0; w < n; w++) {
            struct replay_server_seq_arg *a = malloc(sizeof *a);
            if (a)
                *a = (struct replay_server_seq_arg){s, w};
            if (!a || pthread_create(&s->seq_threads[w], NULL, replay_server_sequence, a)) {
                free(a);
                snprintf(err, errlen, "starting worker sequence %u: %s", w, strerror(errno));
                goto fail;
            }
            s->seq_started++;
        }
    }
    if (s->cfg->event_loops && !s->nodeps) { /* `workers` threads help its loops */
        s->loops =
            replay_loops_start(s, s->e, s->cfg->event_loops, s->nworkers, s->stop_fd, err, errlen);
        if (!s->loops)
            goto fail;
    }
    for (int i = 0; !s->loops && i < s->nworkers; i++) {
        if (pthread_create(&s->workers[i], NULL, replay_server_work, s)) {
            snprintf(err, errlen, "starting worker %d: %s", i, strerror(errno));
            goto fail;
        }
        s->started_workers++;
    }
    /* last: a connection handed over finds its workers there */
    struct replay_gate_config gc = {.listen_fd = listen_fd,
                                    .stop_fd = s->stop_fd,
                                    .token = s->cfg->token,
                                    .io_timeout_s = s->cfg->io_timeout_s,
                                    .log = s->log,
                                    .log_mu = &s->log_mu,
                                    .rejected = &s->rejected,
                                    .handoff = replay_server_admit,
                                    .handoff_arg = s};
    s->listen_fd = -1; /* the gate owns it now, also when it fails */
    s->gate = replay_gate_start(&gc, err, errlen);
    if (!s->gate)
        goto fail;
    replay_precise_timers_end(slack);
    return s;
fail:
    replay_precise_timers_end(slack);
    replay_server_stop(s);
    return NULL;
}

void replay_server_stop(struct replay_server *s)
{
    if (!s)
        return;
    if (s->stop_fd >= 0) {
        uint64_t one = 1;
        if (write(s->stop_fd, &one, sizeof one) < 0) { /* nothing else to do */
        }
    }
    /* a worker inside a request finishes it (its socket has a timeout);
     * every idle worker and the gate wake on stop_fd */
    replay_gate_stop(s->gate);
    for (int i = 0; i < s->started_workers; i++)
        pthread_join(s->workers[i], NULL);
    replay_loops_stop(s->loops);
    if (s->nodeps) {
        replay_nodeps_stop(s->nodeps);
        for (uint32_t w = 0; w < s->seq_started; w++)
            pthread_join(s->seq_threads[w], NULL);
        uint64_t skipped = replay_nodeps_skipped(s->nodeps);
        if (skipped)
            fprintf(s->log, "replay: --no-deps: %llu blocks skipped after being held %.1f s\n",
                    (unsigned long long)skipped, s->cfg->no_deps_hold_s);
        replay_nodeps_free(s->nodeps);
    }
    free(s->seq_threads);
    if (s->listen_fd >= 0)
        close(s->listen_fd);
    if (s->epfd >= 0)
        close(s->epfd);
    if (s->stop_fd >= 0)
        close(s->stop_fd);
    free(s->workers);
    pthread_mutex_destroy(&s->log_mu);
    free(s);
}

uint64_t replay_server_served(const struct replay_server *s)
{
    return atomic_load(&((struct replay_server *)s)->served);
}

uint64_t replay_server_rejected(const struct replay_server *s)
{
    return atomic_load(&((struct replay_server *)s)->rejected);
}
