/* replay_loop.c - an event-loop component's replay (replay_loop.h): one
 * thread per recorded loop, one epoll set each; a connection is read for
 * its header, then its block runs on the loop (replay_block_step) until it
 * is over, waits for a socket (the connection, or a nested call's: armed
 * one-shot in the set) or reaches an op the loop cannot wait for in epoll
 * (an external call, a DB op not recorded as blocking: queued to the helper
 * threads, which hand the connection back through the loop's done queue
 * and eventfd).
 * Control requests (STATS, RESET) are answered by a helper too: STATS
 * waits for blocks in flight, which only the loop can finish. Must never
 * block a loop on a client or a peer, and never touch a connection while a
 * helper has it. */
#include "replay_loop.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "replay_proto.h"

/* How often a loop looks for connections past their I/O deadline. */
#define REPLAY_LOOP_TICK_MS 100

enum replay_conn_state {
    CONN_HEADER,  /* waiting for (the rest of) a request header */
    CONN_BLOCK,   /* its block runs or waits for the connection */
    CONN_HELPER,  /* a helper runs its current op */
    CONN_CONTROL, /* a helper answers its control request */
};

struct replay_loop;

struct replay_conn {
    struct replay_loop *loop;
    int fd;
    enum replay_conn_state state;
    unsigned char head[REPLAY_HEADER_SIZE];
    size_t have;                     /* header bytes so far */
    uint32_t control;                /* CONN_CONTROL: the control block */
    int keep;                        /* a helper's verdict on the connection */
    uint64_t deadline_ns;            /* 0, or when a wait on the connection fails */
    struct replay_thread *t;         /* its own: cached files, DB connection, locks */
    struct replay_block_run run;     /* CONN_BLOCK, CONN_HELPER */
    struct replay_conn *prev, *next; /* the loop's connections */
    struct replay_conn *qnext;       /* helper queue, done queue */
};

struct replay_loop {
    struct replay_loops *all;
    pthread_t thread;
    int started;
    int epfd, wake_fd;  /* wake_fd: an eventfd, written when done has entries */
    pthread_mutex_t mu; /* conns (the gate adds) and the done queue */
    struct replay_conn *conns;
    struct replay_conn *done, *done_tail;
    uint32_t with_helper; /* connections a helper has: waited for at stop */
};

struct replay_loops {
    struct replay_server *s;
    struct replay_engine *e;
    int stop_fd, io_timeout_s;
    uint32_t nloops;
    _Atomic uint32_t next_loop;
    struct replay_loop *loops;
    pthread_t *helpers;
    int nhelpers, started_helpers;
    pthread_mutex_t hmu;
    pthread_cond_t hcv;
    struct replay_conn *queue, *queue_tail;
    int helpers_stop;
};

/* epoll data of the two descriptors every loop waits on besides its
 * connections */
static char replay_loop_stop_tag, replay_loop_wake_tag;

static uint64_t replay_loop_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Waits for fd (the connection's, or its nested call's) once. A call's
 * connection joins the set at its first wait and stays, disarmed, when it
 * goes back to the pool: one-shot never fires again until re-armed, and
 * the loop that takes it next re-arms it for itself (close removes it). */
static void replay_conn_arm_fd(struct replay_conn *c, int fd, uint32_t events)
{
    struct epoll_event ev = {.events = events | EPOLLONESHOT, .data.ptr = c};
    if (epoll_ctl(c->loop->epfd, EPOLL_CTL_MOD, fd, &ev) && errno == ENOENT)
        epoll_ctl(c->loop->epfd, EPOLL_CTL_ADD, fd, &ev);
}

static void replay_conn_arm(struct replay_conn *c, uint32_t events)
{
    replay_conn_arm_fd(c, c->fd, events);
}

static void replay_conn_close(struct replay_conn *c)
{
    struct replay_loop *lp = c->loop;
    pthread_mutex_lock(&lp->mu);
    if (c->prev)
        c->prev->next = c->next;
    else
        lp->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    pthread_mutex_unlock(&lp->mu);
    close(c->fd);
    replay_thread_free(c->t);
    free(c);
}

/* ---- helpers ------------------------------------------------------------ */

/* Appends c to a queue (the caller holds the queue's mutex). */
static void replay_conn_enqueue(struct replay_conn **head, struct replay_conn **tail,
                                struct replay_conn *c)
{
    c->qnext = NULL;
    if (*tail)
        (*tail)->qnext = c;
    else
        *head = c;
    *tail = c;
}

static void replay_loops_to_helper(struct replay_loops *l, struct replay_conn *c)
{
    c->loop->with_helper++;
    pthread_mutex_lock(&l->hmu);
    replay_conn_enqueue(&l->queue, &l->queue_tail, c);
    pthread_cond_signal(&l->hcv);
    pthread_mutex_unlock(&l->hmu);
}

static void *replay_loops_help(void *arg)
{
    struct replay_loops *l = arg;
    for (;;) {
        pthread_mutex_lock(&l->hmu);
        while (!l->queue && !l->helpers_stop)
            pthread_cond_wait(&l->hcv, &l->hmu);
        struct replay_conn *c = l->queue;
        if (!c) {
            pthread_mutex_unlock(&l->hmu);
            return NULL;
        }
        l->queue = c->qnext;
        if (!l->queue)
            l->queue_tail = NULL;
        pthread_mutex_unlock(&l->hmu);
        if (c->state == CONN_CONTROL)
            c->keep = replay_server_control(l->s, c->fd, c->control) == 0;
        else
            replay_block_offloop(c->t, &c->run);
        struct replay_loop *lp = c->loop;
        pthread_mutex_lock(&lp->mu);
        replay_conn_enqueue(&lp->done, &lp->done_tail, c);
        pthread_mutex_unlock(&lp->mu);
        uint64_t one = 1;
        if (write(lp->wake_fd, &one, sizeof one) < 0) { /* the counter is saturated: awake anyway */
        }
    }
}

/* ---- a loop ------------------------------------------------------------- */

/* The connection's block went as far as it can now: on, waiting, or over. */
static void replay_conn_continue(struct replay_conn *c)
{
    struct replay_loops *l = c->loop->all;
    enum replay_step st = replay_block_step(c->t, &c->run, 1);
    if (st == REPLAY_STEP_WANT_READ || st == REPLAY_STEP_WANT_WRITE) {
        c->deadline_ns = replay_loop_now_ns() + (uint64_t)l->io_timeout_s * 1000000000u;
        replay_conn_arm_fd(c, c->run.wait_fd, st == REPLAY_STEP_WANT_READ ? EPOLLIN : EPOLLOUT);
        return;
    }
    c->deadline_ns = 0;
    if (st == REPLAY_STEP_OFFLOOP) {
        c->state = CONN_HELPER;
        replay_loops_to_helper(l, c);
        return;
    }
    char err[256];
    if (replay_block_end(c->t, &c->run, st == REPLAY_STEP_FAILED, err, sizeof err)) {
        replay_server_log(l->s, c->fd, err);
        replay_conn_close(c);
        return;
    }
    replay_server_count_served(l->s);
    c->state = CONN_HEADER;
    c->have = 0;
    replay_conn_arm(c, EPOLLIN);
}

/* Reads what of the header (and, with its first bytes, of the request) has
 * arrived; starts the request once the header is whole. */
static void replay_conn_read_header(struct replay_conn *c)
{
    static _Thread_local unsigned char buf[REPLAY_HEADER_SIZE + REPLAY_SERVER_PREREAD];
    struct replay_loops *l = c->loop->all;
    size_t cap = c->have ? REPLAY_HEADER_SIZE - c->have : sizeof buf;
    ssize_t n;
    do
        n = recv(c->fd, buf, cap, MSG_DONTWAIT);
    while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        replay_conn_arm(c, EPOLLIN);
        return;
    }
    if (n <= 0) {
        if (n == 0 && c->have) /* the client closed within a header */
            replay_server_log(l->s, c->fd, "truncated request header");
        replay_conn_close(c); /* n == 0 at a request's start: a normal end */
        return;
    }
    size_t head_part =
        (size_t)n < REPLAY_HEADER_SIZE - c->have ? (size_t)n : REPLAY_HEADER_SIZE - c->have;
    memcpy(c->head + c->have, buf, head_part);
    c->have += head_part;
    if (c->have < REPLAY_HEADER_SIZE) { /* the rest of the header is still on its way */
        c->deadline_ns = replay_loop_now_ns() + (uint64_t)l->io_timeout_s * 1000000000u;
        replay_conn_arm(c, EPOLLIN);
        return;
    }
    c->deadline_ns = 0;
    uint64_t preread = (uint64_t)n - head_part;
    struct replay_header h;
    if (replay_server_check(l->s, c->fd, c->head, preread, &h)) {
        replay_conn_close(c);
        return;
    }
    if (h.block == REPLAY_BLOCK_STATS || h.block == REPLAY_BLOCK_RESET) {
        c->state = CONN_CONTROL;
        c->control = h.block;
        replay_loops_to_helper(l, c);
        return;
    }
    char err[256];
    if (replay_block_begin(c->t, &c->run, h.block, c->fd, h.request_bytes, preread,
                           h.response_bytes, err, sizeof err)) {
        replay_server_log(l->s, c->fd, err);
        replay_conn_close(c);
        return;
    }
    c->state = CONN_BLOCK;
    replay_conn_continue(c);
}

/* Connections a helper gave back: on with their block, or their control
 * request answered. */
static void replay_loop_take_done(struct replay_loop *lp)
{
    uint64_t n;
    if (read(lp->wake_fd, &n, sizeof n) < 0) { /* EAGAIN: nothing new */
    }
    pthread_mutex_lock(&lp->mu);
    struct replay_conn *c = lp->done;
    lp->done = lp->done_tail = NULL;
    pthread_mutex_unlock(&lp->mu);
    while (c) {
        struct replay_conn *next = c->qnext;
        lp->with_helper--;
        if (c->state == CONN_CONTROL) {
            c->state = CONN_HEADER;
            c->have = 0;
            if (c->keep)
                replay_conn_arm(c, EPOLLIN);
            else
                replay_conn_close(c);
        } else {
            c->state = CONN_BLOCK;
            replay_conn_continue(c);
        }
        c = next;
    }
}

/* The loop's connection after c (the first when c is NULL). Only the
 * loop removes connections; the gate adds at the head, so a walk from a
 * snapshot may close the one it stands on once it has its successor. */
static struct replay_conn *replay_loop_conn_after(struct replay_loop *lp, struct replay_conn *c)
{
    pthread_mutex_lock(&lp->mu);
    struct replay_conn *n = c ? c->next : lp->conns;
    pthread_mutex_unlock(&lp->mu);
    return n;
}

/* A wait on a connection that outlived the I/O timeout fails its request
 * (a stalled client must not hold anything forever). */
static void replay_loop_expire(struct replay_loop *lp, uint64_t now)
{
    for (struct replay_conn *c = replay_loop_conn_after(lp, NULL), *next; c; c = next) {
        next = replay_loop_conn_after(lp, c);
        if (c->deadline_ns && now >= c->deadline_ns &&
            (c->state == CONN_BLOCK || c->state == CONN_HEADER)) {
            char err[256];
            if (c->state == CONN_BLOCK) {
                c->run.failed_errno = ETIMEDOUT;
                replay_block_end(c->t, &c->run, 1, err, sizeof err);
                replay_server_log(lp->all->s, c->fd, err);
            } else {
                replay_server_log(lp->all->s, c->fd, "request header: timed out");
            }
            replay_conn_close(c);
        }
    }
}

/* At stop: connections no helper has are closed (a block cut short counts
 * as failed); those a helper has, once it gives them back. */
static void replay_loop_close_idle(struct replay_loop *lp)
{
    for (struct replay_conn *c = replay_loop_conn_after(lp, NULL), *next; c; c = next) {
        next = replay_loop_conn_after(lp, c);
        if (c->state == CONN_BLOCK) {
            char err[256];
            c->run.failed_errno = ECANCELED;
            replay_block_end(c->t, &c->run, 1, err, sizeof err);
        }
        if (c->state == CONN_BLOCK || c->state == CONN_HEADER)
            replay_conn_close(c);
    }
}

static void *replay_loop_run(void *arg)
{
    struct replay_loop *lp = arg;
    struct epoll_event evs[64];
    int stopping = 0;
    uint64_t next_tick = 0;
    for (;;) {
        if (stopping) {
            replay_loop_close_idle(lp);
            if (!lp->with_helper)
                break;
        }
        int n = epoll_wait(lp->epfd, evs, 64, REPLAY_LOOP_TICK_MS);
        if (n < 0 && errno != EINTR)
            break;
        for (int i = 0; i < n; i++) {
            void *tag = evs[i].data.ptr;
            if (tag == &replay_loop_stop_tag) {
                stopping = 1; /* level-triggered and never read: out of the set */
                epoll_ctl(lp->epfd, EPOLL_CTL_DEL, lp->all->stop_fd, NULL);
            } else if (tag == &replay_loop_wake_tag) {
                replay_loop_take_done(lp);
            } else if (!stopping) {
                struct replay_conn *c = tag;
                if (c->state == CONN_HEADER)
                    replay_conn_read_header(c);
                else if (c->state == CONN_BLOCK)
                    replay_conn_continue(c);
            }
        }
        uint64_t now = replay_loop_now_ns();
        if (now >= next_tick) {
            replay_loop_expire(lp, now);
            next_tick = now + (uint64_t)REPLAY_LOOP_TICK_MS * 1000000u;
        }
    }
    return NULL;
}

void replay_loops_admit(struct replay_loops *l, int fd)
{
    struct replay_loop *lp = &l->loops[atomic_fetch_add(&l->next_loop, 1) % l->nloops];
    struct replay_conn *c = calloc(1, sizeof *c);
    if (c)
        c->t = replay_thread_new(l->e);
    if (!c || !c->t) {
        replay_server_log(l->s, fd, "out of memory taking a connection");
        if (c)
            free(c);
        close(fd);
        return;
    }
    c->loop = lp;
    c->fd = fd;
    c->state = CONN_HEADER;
    pthread_mutex_lock(&lp->mu);
    c->next = lp->conns;
    if (lp->conns)
        lp->conns->prev = c;
    lp->conns = c;
    pthread_mutex_unlock(&lp->mu);
    struct epoll_event ev = {.events = EPOLLIN | EPOLLONESHOT, .data.ptr = c};
    if (epoll_ctl(lp->epfd, EPOLL_CTL_ADD, fd, &ev)) { /* the loop never saw it */
        replay_server_log(l->s, fd, "could not add a connection to its loop");
        replay_conn_close(c);
    }
}

static int replay_loop_init(struct replay_loops *l, struct replay_loop *lp, char *err,
                            size_t errlen)
{
    lp->epfd = epoll_create1(EPOLL_CLOEXEC);
    lp->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    struct epoll_event sev = {.events = EPOLLIN, .data.ptr = &replay_loop_stop_tag};
    struct epoll_event wev = {.events = EPOLLIN, .data.ptr = &replay_loop_wake_tag};
    if (lp->epfd < 0 || lp->wake_fd < 0 || epoll_ctl(lp->epfd, EPOLL_CTL_ADD, l->stop_fd, &sev) ||
        epoll_ctl(lp->epfd, EPOLL_CTL_ADD, lp->wake_fd, &wev)) {
        snprintf(err, errlen, "starting an event loop: %s", strerror(errno));
        return -1;
    }
    return 0;
}

struct replay_loops *replay_loops_start(struct replay_server *s, struct replay_engine *e,
                                        uint32_t nloops, int helpers, int stop_fd, char *err,
                                        size_t errlen)
{
    struct replay_loops *l = calloc(1, sizeof *l);
    if (!l) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    l->s = s;
    l->e = e;
    l->stop_fd = stop_fd;
    l->io_timeout_s = replay_engine_config(e)->io_timeout_s;
    l->nloops = nloops ? nloops : 1;
    l->nhelpers = helpers > 0 ? helpers : 1;
    pthread_mutex_init(&l->hmu, NULL);
    pthread_cond_init(&l->hcv, NULL);
    l->loops = calloc(l->nloops, sizeof *l->loops);
    l->helpers = calloc((size_t)l->nhelpers, sizeof *l->helpers);
    if (!l->loops || !l->helpers) {
        snprintf(err, errlen, "out of memory");
        free(l->loops);
        free(l->helpers);
        pthread_mutex_destroy(&l->hmu);
        pthread_cond_destroy(&l->hcv);
        free(l);
        return NULL;
    }
    for (uint32_t i = 0; i < l->nloops; i++) {
        l->loops[i].all = l;
        l->loops[i].epfd = l->loops[i].wake_fd = -1;
        pthread_mutex_init(&l->loops[i].mu, NULL);
    }
    for (uint32_t i = 0; i < l->nloops; i++)
        if (replay_loop_init(l, &l->loops[i], err, errlen))
            goto fail;
    for (int i = 0; i < l->nhelpers; i++) {
        if (pthread_create(&l->helpers[i], NULL, replay_loops_help, l)) {
            snprintf(err, errlen, "starting helper thread %d: %s", i, strerror(errno));
            goto fail;
        }
        l->started_helpers++;
    }
    for (uint32_t i = 0; i < l->nloops; i++) {
        if (pthread_create(&l->loops[i].thread, NULL, replay_loop_run, &l->loops[i])) {
            snprintf(err, errlen, "starting event loop %u: %s", i, strerror(errno));
            goto fail;
        }
        l->loops[i].started = 1;
    }
    return l;
fail:
    /* started loops stop once stop_fd is written: the server does that */
    {
        uint64_t one = 1;
        if (write(stop_fd, &one, sizeof one) < 0) { /* nothing else to do */
        }
    }
    replay_loops_stop(l);
    return NULL;
}

void replay_loops_stop(struct replay_loops *l)
{
    if (!l)
        return;
    for (uint32_t i = 0; l->loops && i < l->nloops; i++)
        if (l->loops[i].started)
            pthread_join(l->loops[i].thread, NULL);
    pthread_mutex_lock(&l->hmu);
    l->helpers_stop = 1;
    pthread_cond_broadcast(&l->hcv);
    pthread_mutex_unlock(&l->hmu);
    for (int i = 0; i < l->started_helpers; i++)
        pthread_join(l->helpers[i], NULL);
    for (uint32_t i = 0; l->loops && i < l->nloops; i++) {
        struct replay_loop *lp = &l->loops[i];
        while (lp->conns) /* connections admitted after the loop stopped */
            replay_conn_close(lp->conns);
        if (lp->epfd >= 0)
            close(lp->epfd);
        if (lp->wake_fd >= 0)
            close(lp->wake_fd);
        pthread_mutex_destroy(&lp->mu);
    }
    free(l->loops);
    free(l->helpers);
    pthread_mutex_destroy(&l->hmu);
    pthread_cond_destroy(&l->hcv);
    free(l);
}
