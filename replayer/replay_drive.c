/* replay_drive.c - the driver's event loop: a schedule (recorded arrivals
 * for independent requests, think times for sessions), a pool of
 * non-blocking connections to the front-end replayer, and one sample per
 * request. Sends each request as the header then one send(2) per recorded
 * RECV segment of the front-end block, except that a segment whose receive
 * filled its buffer (PLAN_RECV_FULL: no client write ended there) rides
 * with the next one (MSG_MORE); reads exactly the response bytes.
 * Response times count from each request's scheduled arrival, so a late
 * send is never hidden (no coordinated omission); how late it was is kept
 * as its own figure. Must never block. */
#include "replay_drive.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "grow_array.h"
#include "replay_exec.h"
#include "replay_proto.h"

#define DRIVE_CHUNK 65536
static char drive_zeros[DRIVE_CHUNK];
static char drive_sink[DRIVE_CHUNK];

enum drive_state { DRIVE_IDLE, DRIVE_CONNECTING, DRIVE_SENDING, DRIVE_RECEIVING };

struct drive_conn {
    int fd;
    enum drive_state state;
    uint32_t req, session; /* session index or UINT32_MAX */
    unsigned char header[REPLAY_HEADER_SIZE];
    uint32_t header_off;
    uint32_t op;       /* next op index within the block while sending */
    uint64_t seg_left; /* bytes left of the current segment */
    int seg_joined;    /* the current segment continues in the next one */
    uint64_t resp_left;
    uint64_t due_ns, sent_ns;
    size_t busy_idx;
};

struct drive_job {
    uint64_t due_ns;
    uint32_t req, session;
};

struct drive {
    const struct replay_drive_options *opt;
    const struct plan *p;
    int epfd;
    struct sockaddr_storage addr;
    socklen_t addrlen;
    struct drive_conn **idle;
    size_t nidle;
    size_t open_conns, max_conns, in_flight;
    struct drive_conn **busy; /* connections with a request in flight */
    size_t nbusy;
    uint64_t refused;
    struct drive_job *heap;
    size_t nheap, heapcap;
    struct replay_drive_result *res;
    size_t samplecap;
    uint64_t start_ns;
    char *err;
    size_t errlen;
    /* The schedule: request indices sorted by arrival (by session first in
     * session mode), each request's position in it, and each session's
     * range order[sess_start[s]..sess_end[s]). */
    uint32_t *order, *pos_of_req, *sess_start, *sess_end;
    size_t nsess;
    size_t ind_lo, ind_hi;        /* independent requests: order[ind_lo..ind_hi) */
    size_t cursor;                /* the next independent request to generate */
    uint64_t iteration;           /* the pass of the schedule the cursor is in */
    uint64_t first_arrival, span; /* the schedule repeats with period span */
    double speed;
    /* The window of the (endlessly repeating) schedule this drive sends, in
     * recorded ns from the first arrival of pass 0: [from, from + window). */
    uint64_t from_ns, window_ns;
};

static uint64_t drive_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int drive_heap_push(struct drive *d, struct drive_job j)
{
    if (grow_array((void **)&d->heap, &d->heapcap, d->nheap + 1, sizeof *d->heap, 256) != 0)
        return -1;
    size_t i = d->nheap++;
    while (i && d->heap[(i - 1) / 2].due_ns > j.due_ns) {
        d->heap[i] = d->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    d->heap[i] = j;
    return 0;
}

static struct drive_job drive_heap_pop(struct drive *d)
{
    struct drive_job top = d->heap[0], last = d->heap[--d->nheap];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= d->nheap)
            break;
        if (c + 1 < d->nheap && d->heap[c + 1].due_ns < d->heap[c].due_ns)
            c++;
        if (d->heap[c].due_ns >= last.due_ns)
            break;
        d->heap[i] = d->heap[c];
        i = c;
    }
    if (d->nheap)
        d->heap[i] = last;
    return top;
}

const char *replay_fail_name(unsigned fail)
{
    static const char *const names[REPLAY_NFAIL] = {"answered",
                                                    "connection refused",
                                                    "connection failed while sending",
                                                    "closed before the whole answer",
                                                    "no answer within the drain time",
                                                    "in flight when the interval was stopped",
                                                    "driver error"};
    return fail < REPLAY_NFAIL ? names[fail] : "unknown";
}

/* ok: REPLAY_FAIL_NONE, else why the request failed */
static int drive_record(struct drive *d, struct drive_conn *c, enum replay_fail why, uint64_t now)
{
    int ok = why == REPLAY_FAIL_NONE;
    struct replay_drive_result *r = d->res;
    if (grow_array((void **)&r->samples, &d->samplecap, r->nsamples + 1, sizeof *r->samples,
                   1024) != 0)
        return -1;
    struct replay_sample *s = &r->samples[r->nsamples++];
    s->request = c->req;
    s->label = d->p->requests[c->req].label;
    s->sent_s = (double)(c->sent_ns - d->start_ns) / 1e9;
    /* from the scheduled arrival, as a user's client would wait: a late
     * send is part of the response time (no coordinated omission) and is
     * also kept apart as late_s */
    s->response_s = ok && now > c->due_ns ? (double)(now - c->due_ns) / 1e9 : 0;
    s->late_s = c->sent_ns > c->due_ns ? (double)(c->sent_ns - c->due_ns) / 1e9 : 0;
    s->ok = ok;
    s->fail = (uint8_t)why;
    if (!ok)
        r->failed++;
    return 0;
}

static void drive_close(struct drive *d, struct drive_conn *c)
{
    close(c->fd);
    d->open_conns--;
    free(c);
}

static int drive_arm(struct drive *d, struct drive_conn *c, uint32_t events)
{
    struct epoll_event ev = {.events = events, .data.ptr = c};
    return epoll_ctl(d->epfd, EPOLL_CTL_MOD, c->fd, &ev);
}

/* Next session job after a request of the session finished (or failed):
 * a session that began in the window runs to its end, so every request of
 * it is sent (drive_sessions_begin starts each pass's sessions). */
static int drive_session_next(struct drive *d, uint32_t session, uint32_t req, uint64_t now)
{
    uint32_t pos = d->pos_of_req[req] + 1;
    if (pos >= d->sess_end[session])
        return 0;
    uint32_t next = d->order[pos];
    uint64_t think = (uint64_t)((double)d->p->requests[next].think_ns / d->speed);
    return drive_heap_push(d, (struct drive_job){now + think, next, session});
}

static int drive_finish(struct drive *d, struct drive_conn *c, enum replay_fail why, uint64_t now)
{
    int ok = why == REPLAY_FAIL_NONE;
    if (drive_record(d, c, why, now))
        return -1;
    d->in_flight--;
    d->busy[c->busy_idx] = d->busy[--d->nbusy];
    d->busy[c->busy_idx]->busy_idx = c->busy_idx;
    uint32_t session = c->session, req = c->req;
    if (ok && c->state == DRIVE_RECEIVING) {
        c->state = DRIVE_IDLE;
        drive_arm(d, c, EPOLLIN);
        d->idle[d->nidle++] = c;
    } else {
        drive_close(d, c);
    }
    if (session != UINT32_MAX)
        return drive_session_next(d, session, req, now);
    return 0;
}

/* 1 when the block has a RECV op at index `from` or later. */
static int drive_recv_after(const struct plan *p, const struct plan_block *b, uint32_t from)
{
    for (uint32_t i = from; i < b->nops; i++)
        if (p->ops[b->first_op + i].kind == PLAN_OP_RECV)
            return 1;
    return 0;
}

/* Sends what it can; 1 when the request is fully out, 0 on EAGAIN, -1 error. */
static int drive_send(struct drive *d, struct drive_conn *c)
{
    const struct plan *p = d->p;
    const struct plan_block *b = &p->blocks[p->requests[c->req].block];
    while (c->header_off < REPLAY_HEADER_SIZE) {
        int more = c->op < b->nops ? MSG_MORE : 0;
        ssize_t n = send(c->fd, c->header + c->header_off, REPLAY_HEADER_SIZE - c->header_off,
                         MSG_DONTWAIT | MSG_NOSIGNAL | more);
        if (n < 0)
            return errno == EAGAIN || errno == EINTR ? 0 : -1;
        c->header_off += (uint32_t)n;
    }
    for (;;) {
        while (!c->seg_left) {
            if (c->op >= b->nops)
                return 1;
            const struct plan_op *op = &p->ops[b->first_op + c->op++];
            if (op->kind == PLAN_OP_RECV) {
                c->seg_left = op->a.net.bytes;
                c->seg_joined = (op->flags & PLAN_RECV_FULL) && drive_recv_after(p, b, c->op);
            }
        }
        size_t want = c->seg_left < DRIVE_CHUNK ? (size_t)c->seg_left : DRIVE_CHUNK;
        int more = c->seg_left > DRIVE_CHUNK || c->seg_joined ? MSG_MORE : 0;
        ssize_t n = send(c->fd, drive_zeros, want, MSG_DONTWAIT | MSG_NOSIGNAL | more);
        if (n < 0)
            return errno == EAGAIN || errno == EINTR ? 0 : -1;
        c->seg_left -= (uint64_t)n;
    }
}

/* Reads what is there; 1 when the whole response arrived, 0 wait, -1 error/EOF. */
static int drive_recv(struct drive_conn *c)
{
    while (c->resp_left) {
        size_t want = c->resp_left < DRIVE_CHUNK ? (size_t)c->resp_left : DRIVE_CHUNK;
        ssize_t n = recv(c->fd, drive_sink, want, MSG_DONTWAIT);
        if (n == 0)
            return -1;
        if (n < 0)
            return errno == EAGAIN || errno == EINTR ? 0 : -1;
        c->resp_left -= (uint64_t)n;
    }
    return 1;
}

static int drive_progress(struct drive *d, struct drive_conn *c, uint64_t now)
{
    if (c->state == DRIVE_SENDING) {
        int r = drive_send(d, c);
        if (r < 0)
            return drive_finish(d, c, REPLAY_FAIL_SEND, now);
        if (r == 0)
            return drive_arm(d, c, EPOLLOUT) ? drive_finish(d, c, REPLAY_FAIL_DRIVER, now) : 0;
        c->state = DRIVE_RECEIVING;
    }
    if (c->state == DRIVE_RECEIVING) {
        int r = drive_recv(c);
        if (r < 0)
            return drive_finish(d, c, REPLAY_FAIL_CLOSED, now);
        if (r == 0)
            return drive_arm(d, c, EPOLLIN) ? drive_finish(d, c, REPLAY_FAIL_DRIVER, now) : 0;
        return drive_finish(d, c, REPLAY_FAIL_NONE, drive_now());
    }
    return 0;
}

static int drive_start(struct drive *d, struct drive_job j, uint64_t now)
{
    struct drive_conn *c;
    int fresh = 0;
    if (d->nidle) {
        c = d->idle[--d->nidle];
    } else {
        c = calloc(1, sizeof *c);
        if (!c)
            return -1;
        c->fd = socket(d->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (c->fd < 0) {
            snprintf(d->err, d->errlen, "socket: %s", strerror(errno));
            free(c);
            return -1;
        }
        /* The driver decides every segment itself (MSG_MORE where the
         * recording joined two), so Nagle only delays: a request the
         * client wrote in two sends (headers, then a POST body) waited for
         * the replayer's delayed ACK, 40 ms. Clients set it too (Python's
         * http.client, curl, browsers). */
        if (d->addr.ss_family == AF_INET || d->addr.ss_family == AF_INET6) {
            int one = 1;
            setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        }
        d->open_conns++;
        d->res->connections_opened++;
        struct epoll_event ev = {.events = EPOLLOUT, .data.ptr = c};
        if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, c->fd, &ev)) {
            snprintf(d->err, d->errlen, "epoll: %s", strerror(errno));
            drive_close(d, c);
            return -1;
        }
        fresh = 1;
    }
    const struct plan *p = d->p;
    uint64_t rq, rs;
    replay_block_bytes(p, p->requests[j.req].block, &rq, &rs);
    struct replay_header h = {p->requests[j.req].block, d->opt->token, (uint32_t)rq, (uint32_t)rs};
    replay_header_encode(&h, c->header);
    c->header_off = 0;
    c->op = 0;
    c->seg_left = 0;
    c->seg_joined = 0;
    c->resp_left = rs;
    c->req = j.req;
    c->session = j.session;
    c->due_ns = j.due_ns;
    c->sent_ns = now;
    c->busy_idx = d->nbusy;
    d->busy[d->nbusy++] = c;
    d->in_flight++;
    if (fresh) {
        c->state = DRIVE_CONNECTING;
        if (connect(c->fd, (struct sockaddr *)&d->addr, d->addrlen) == 0 || errno == EINPROGRESS)
            return 0; /* EPOLLOUT says when it is connected */
        d->refused++;
        return drive_finish(d, c, REPLAY_FAIL_CONNECT, now);
    }
    c->state = DRIVE_SENDING;
    return drive_progress(d, c, now);
}

static int drive_cmp_arrival(const void *a, const void *b, void *arg);

struct drive_sort_ctx {
    const struct plan *p;
    int by_session;
};

static _Thread_local struct drive_sort_ctx drive_sort;

static int drive_cmp(const void *a, const void *b)
{
    return drive_cmp_arrival(a, b, &drive_sort);
}

static int drive_cmp_arrival(const void *a, const void *b, void *arg)
{
    const struct drive_sort_ctx *ctx = arg;
    const struct plan_request *ra = &ctx->p->requests[*(const uint32_t *)a];
    const struct plan_request *rb = &ctx->p->requests[*(const uint32_t *)b];
    if (ctx->by_session && ra->session != rb->session)
        return ra->session < rb->session ? -1 : 1;
    if (ra->arrival_ns != rb->arrival_ns)
        return ra->arrival_ns < rb->arrival_ns ? -1 : 1;
    return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

/* Every request must name a block of the plan, and request indices must
 * fit the uint32 schedule (UINT32_MAX marks "no session"). */
static int drive_check_plan(const struct plan *p, char *err, size_t errlen)
{
    if (!p->nrequests) {
        snprintf(err, errlen, "the plan has no requests to send");
        return -1;
    }
    if (p->nrequests > UINT32_MAX - 1) {
        snprintf(err, errlen, "too many requests in the plan");
        return -1;
    }
    for (uint64_t i = 0; i < p->nrequests; i++)
        if (p->requests[i].block >= p->nblocks) {
            snprintf(err, errlen, "request %llu: block %u out of range", (unsigned long long)i,
                     p->requests[i].block);
            return -1;
        }
    return 0;
}

/* Connections at once: the descriptor limit (raised to its hard limit) less
 * 64 for everything else, capped by --max-connections. */
static size_t drive_max_connections(const struct replay_drive_options *opt)
{
    struct rlimit rl;
    if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    size_t max_conns = rl.rlim_cur > 128 ? (size_t)rl.rlim_cur - 64 : 64;
    if (opt->max_connections > 0 && (size_t)opt->max_connections < max_conns)
        max_conns = (size_t)opt->max_connections;
    return max_conns;
}

/* The schedule arrays, the connection lists and the epoll instance; -1
 * when any of them could not be had (drive_free releases the rest). */
static int drive_alloc(struct drive *d, size_t n)
{
    d->order = malloc(n * sizeof *d->order);
    d->pos_of_req = malloc(n * sizeof *d->pos_of_req);
    d->sess_start = malloc(n * sizeof *d->sess_start);
    d->sess_end = malloc(n * sizeof *d->sess_end);
    d->idle = malloc(d->max_conns * sizeof *d->idle);
    d->busy = malloc(d->max_conns * sizeof *d->busy);
    d->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (!d->order || !d->pos_of_req || !d->sess_start || !d->sess_end || !d->idle || !d->busy ||
        d->epfd < 0)
        return -1;
    return 0;
}

static void drive_free(struct drive *d)
{
    while (d->nidle)
        drive_close(d, d->idle[--d->nidle]);
    if (d->epfd >= 0)
        close(d->epfd);
    free(d->heap);
    while (d->nbusy) {
        struct drive_conn *c = d->busy[--d->nbusy];
        drive_close(d, c);
    }
    free(d->idle);
    free(d->busy);
    free(d->order);
    free(d->pos_of_req);
    free(d->sess_start);
    free(d->sess_end);
}

/* Sorts the requests into d->order and finds the independent range, each
 * session's range, and the span after which the schedule repeats. */
static void drive_schedule_build(struct drive *d, size_t n, int session_mode)
{
    const struct plan *p = d->p;
    for (size_t i = 0; i < n; i++)
        d->order[i] = (uint32_t)i;
    drive_sort.p = p;
    drive_sort.by_session = session_mode;
    qsort(d->order, n, sizeof *d->order, drive_cmp);
    for (size_t i = 0; i < n; i++)
        d->pos_of_req[d->order[i]] = (uint32_t)i;
    /* independent requests: order[ind_lo..ind_hi) (all of them outside session mode) */
    d->ind_lo = 0;
    d->ind_hi = n;
    d->nsess = 0;
    if (session_mode) {
        d->ind_hi = 0;
        while (d->ind_hi < n && p->requests[d->order[d->ind_hi]].session == 0)
            d->ind_hi++;
        for (size_t i = d->ind_hi; i < n;) {
            size_t j = i;
            while (j < n && p->requests[d->order[j]].session == p->requests[d->order[i]].session)
                j++;
            d->sess_start[d->nsess] = (uint32_t)i;
            d->sess_end[d->nsess] = (uint32_t)j;
            d->nsess++;
            i = j;
        }
    }
    d->first_arrival = replay_drive_first_arrival(p);
    d->span = replay_drive_period_ns(p);
}

uint64_t replay_drive_first_arrival(const struct plan *p)
{
    uint64_t first = UINT64_MAX;
    for (uint64_t i = 0; i < p->nrequests; i++)
        first = p->requests[i].arrival_ns < first ? p->requests[i].arrival_ns : first;
    return p->nrequests ? first : 0;
}

uint64_t replay_drive_period_ns(const struct plan *p)
{
    uint64_t first = replay_drive_first_arrival(p), last = 0, n = p->nrequests;
    for (uint64_t i = 0; i < n; i++)
        last = p->requests[i].arrival_ns > last ? p->requests[i].arrival_ns : last;
    if (!n)
        return 1000000;
    /* the schedule repeats with a period of its span plus one mean gap */
    uint64_t span = last - first + (n > 1 ? (last - first) / (n - 1) : 0);
    return span ? span : 1000000;
}

/* Request r's place in pass `iteration` of the repeating schedule, in
 * recorded ns from the first arrival of pass 0. */
static uint64_t drive_sched(const struct drive *d, uint32_t r, uint64_t iteration)
{
    return d->p->requests[r].arrival_ns - d->first_arrival + iteration * d->span;
}

/* Request r's send time from the start of the drive in pass `iteration`
 * (at or after the window's start). */
static uint64_t drive_offset(const struct drive *d, uint32_t r, uint64_t iteration)
{
    return (uint64_t)((double)(drive_sched(d, r, iteration) - d->from_ns) / d->speed);
}

/* Every session whose first request falls in the window, once per pass:
 * at its recorded arrival. */
static int drive_sessions_begin(struct drive *d)
{
    uint64_t end = d->from_ns + d->window_ns;
    for (size_t s = 0; s < d->nsess; s++) {
        uint32_t r = d->order[d->sess_start[s]];
        for (uint64_t k = d->from_ns / d->span; drive_sched(d, r, k) < end; k++) {
            if (drive_sched(d, r, k) < d->from_ns)
                continue;
            struct drive_job j = {d->start_ns + drive_offset(d, r, k), r, (uint32_t)s};
            if (drive_heap_push(d, j))
                return -1;
        }
    }
    return 0;
}

/* The first independent request at or after the window's start. */
static void drive_cursor_begin(struct drive *d)
{
    d->iteration = d->from_ns / d->span;
    d->cursor = d->ind_lo;
    while (d->cursor < d->ind_hi && drive_sched(d, d->order[d->cursor], d->iteration) < d->from_ns)
        d->cursor++;
    if (d->cursor == d->ind_hi && d->ind_lo < d->ind_hi) {
        d->cursor = d->ind_lo;
        d->iteration++;
    }
}

/* Moves the independent requests due within the next 2 ms into the heap;
 * the schedule starts over after each pass until the window ends. */
static int drive_generate(struct drive *d, uint64_t now)
{
    while (d->cursor < d->ind_hi) {
        uint32_t r = d->order[d->cursor];
        if (drive_sched(d, r, d->iteration) >= d->from_ns + d->window_ns) {
            d->cursor = d->ind_hi;
            break;
        }
        uint64_t off = drive_offset(d, r, d->iteration);
        if (d->start_ns + off > now + 2000000)
            break;
        if (drive_heap_push(d, (struct drive_job){d->start_ns + off, r, UINT32_MAX}))
            return -1;
        if (++d->cursor == d->ind_hi) {
            d->cursor = d->ind_lo;
            d->iteration++;
        }
    }
    return 0;
}

/* Starts the due jobs while a connection may be opened for them. */
static int drive_start_due(struct drive *d, uint64_t now)
{
    while (d->nheap && d->heap[0].due_ns <= now && d->in_flight < d->max_conns) {
        struct drive_job j = drive_heap_pop(d);
        if (drive_start(d, j, drive_now()))
            return -1;
    }
    return 0;
}

/* How long to sleep: until the next due request, at most until the next
 * abort check; the next independent request wakes 2 ms early to be
 * generated in time. */
static struct timespec drive_sleep_time(const struct drive *d, uint64_t now,
                                        uint64_t next_abort_check)
{
    uint64_t wake = next_abort_check;
    if (d->nheap && d->heap[0].due_ns < wake && d->in_flight < d->max_conns)
        wake = d->heap[0].due_ns;
    if (d->cursor < d->ind_hi) {
        uint64_t nx = d->start_ns + drive_offset(d, d->order[d->cursor], d->iteration);
        if (nx < wake)
            wake = nx > 2000000 ? nx - 2000000 : 0;
    }
    struct timespec ts = {0, 0};
    if (wake > now) {
        uint64_t dt = wake - now;
        ts.tv_sec = (time_t)(dt / 1000000000u);
        ts.tv_nsec = (long)(dt % 1000000000u);
    }
    return ts;
}

/* One epoll event on c: the replayer closed an idle connection, a connect
 * completed (or failed), or the socket can take or give more bytes. */
static int drive_on_event(struct drive *d, struct drive_conn *c, uint32_t events, uint64_t now)
{
    if (c->state == DRIVE_IDLE) { /* the replayer closed an idle connection */
        for (size_t k = 0; k < d->nidle; k++)
            if (d->idle[k] == c) {
                d->idle[k] = d->idle[--d->nidle];
                break;
            }
        drive_close(d, c);
        return 0;
    }
    if (c->state == DRIVE_CONNECTING) {
        int soerr = 0;
        socklen_t sl = sizeof soerr;
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
        if (soerr || (events & (EPOLLERR | EPOLLHUP))) {
            d->refused++;
            return drive_finish(d, c, REPLAY_FAIL_CONNECT, now);
        }
        c->sent_ns = now; /* lateness includes connecting, as does the response */
        c->state = DRIVE_SENDING;
    }
    return drive_progress(d, c, now);
}

/* The event loop: generate, start what is due, sleep in epoll, progress the
 * connections; ends when nothing is left, the drain time ran out or the
 * caller aborted. -1 with d->err set or empty (out of memory). */
static int drive_loop(struct drive *d)
{
    const struct replay_drive_options *opt = d->opt;
    uint64_t next_abort_check = 0, drain_deadline = 0;
    double drain = opt->drain_s > 0 ? opt->drain_s : 30;
    struct epoll_event evs[256];
    for (;;) {
        uint64_t now = drive_now();
        if (drive_generate(d, now) || drive_start_due(d, now))
            return -1;
        int generating = d->cursor < d->ind_hi || d->nheap;
        if (!generating && !d->in_flight)
            return 0;
        if (!generating && !drain_deadline)
            drain_deadline = now + (uint64_t)(drain * 1e9);
        if (drain_deadline && now >= drain_deadline)
            return 0;
        if (now >= next_abort_check) {
            next_abort_check = now + 50000000;
            if (opt->should_abort && opt->should_abort(opt->abort_arg)) {
                d->res->aborted = 1;
                return 0;
            }
        }
        struct timespec ts = drive_sleep_time(d, now, next_abort_check);
        int ne = epoll_pwait2(d->epfd, evs, 256, &ts, NULL);
        if (ne < 0 && errno != EINTR) {
            snprintf(d->err, d->errlen, "epoll: %s", strerror(errno));
            return -1;
        }
        now = drive_now();
        for (int i = 0; i < ne; i++)
            if (drive_on_event(d, evs[i].data.ptr, evs[i].events, now))
                return -1;
    }
}

/* Whatever is still in flight did not get its answer. */
static int drive_fail_in_flight(struct drive *d)
{
    while (d->nbusy) {
        struct drive_conn *c = d->busy[d->nbusy - 1];
        c->state = DRIVE_CONNECTING; /* finish closes it instead of keeping it */
        c->session = UINT32_MAX;
        if (drive_finish(d, c, d->res->aborted ? REPLAY_FAIL_ABORTED : REPLAY_FAIL_TIMEOUT,
                         drive_now()))
            return -1;
    }
    return 0;
}

/* The part of the schedule the drive covered: the whole window, or up to
 * the time it was aborted at. */
static void drive_coverage(struct drive *d)
{
    struct replay_drive_result *r = d->res;
    double covered = (double)d->window_ns / 1e9;
    if (r->aborted && r->elapsed_s * d->speed < covered)
        covered = r->elapsed_s > 0 ? r->elapsed_s * d->speed : 0;
    r->schedule_from_s = (double)d->from_ns / 1e9;
    r->schedule_to_s = r->schedule_from_s + covered;
    r->schedule_s = (double)d->span / 1e9;
}

/* The driver stands for users on other machines: its own scheduling delay
 * is not the server's. On a shared host (the replayers, the database, other
 * jobs) a due send waited for a CPU: nginx's kept-alive sessions were sent
 * 0.24-0.28 ms late at the median under `run` on an emulated type, half of
 * a static file's replayed response time. Its loop thread runs at the
 * lowest real-time priority when allowed (root; a cgroup with real-time
 * time), so a due send preempts ordinary work; the loop mostly sleeps in
 * epoll, and the kernel's real-time throttling bounds it. Else it runs as
 * it was (res->realtime 0; drive and run say so). */
struct drive_priority {
    int policy;
    struct sched_param param;
    int raised;
};

static void drive_priority_raise(struct drive_priority *p)
{
    p->raised = 0;
    if (pthread_getschedparam(pthread_self(), &p->policy, &p->param) != 0)
        return;
    struct sched_param rt = {.sched_priority = 1};
    p->raised = pthread_setschedparam(pthread_self(), SCHED_FIFO, &rt) == 0;
}

static void drive_priority_restore(const struct drive_priority *p)
{
    if (p->raised)
        pthread_setschedparam(pthread_self(), p->policy, &p->param);
}

int replay_drive_run(const struct replay_drive_options *opt, struct replay_drive_result *res,
                     char *err, size_t errlen)
{
    const struct plan *p = opt->plan;
    memset(res, 0, sizeof *res);
    struct drive d = {.opt = opt, .p = p, .res = res, .err = err, .errlen = errlen, .epfd = -1};
    int rc = -1;
    if (drive_check_plan(p, err, errlen))
        return -1;
    if (replay_addr_parse(opt->target, &d.addr, &d.addrlen, err, errlen))
        return -1;
    d.max_conns = drive_max_connections(opt);
    size_t n = (size_t)p->nrequests;
    if (drive_alloc(&d, n)) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    drive_schedule_build(&d, n, opt->mode == REPLAY_DRIVE_SESSION);
    d.speed = opt->speed > 0 ? opt->speed : 1.0;
    d.from_ns = opt->schedule_from_s > 0 ? (uint64_t)llround(opt->schedule_from_s * 1e9) : 0;
    d.window_ns = opt->duration_s > 0 ? (uint64_t)llround(opt->duration_s * d.speed * 1e9) : d.span;
    d.start_ns = drive_now() + 1000000; /* 1 ms to set up */
    if (drive_sessions_begin(&d))
        goto oom;
    drive_cursor_begin(&d);
    int slack = replay_precise_timers_begin(); /* sends leave when due */
    struct drive_priority prio;
    drive_priority_raise(&prio);
    int loop_rc = drive_loop(&d) || drive_fail_in_flight(&d);
    drive_priority_restore(&prio);
    res->realtime = prio.raised;
    replay_precise_timers_end(slack);
    if (loop_rc)
        goto oom;
    res->elapsed_s = (double)(drive_now() - d.start_ns) / 1e9;
    drive_coverage(&d);
    res->refused = d.refused;
    rc = 0;
    goto out;
oom:
    if (!err[0])
        snprintf(err, errlen, "out of memory driving requests");
out:
    drive_free(&d);
    return rc;
}

void replay_drive_result_free(struct replay_drive_result *res)
{
    free(res->samples);
    memset(res, 0, sizeof *res);
}
