/* loadgen.c - load generator for the sample application (and any HTTP/1.1
 * server). Two modes:
 *   open:    Poisson arrivals at --rate; each arrival goes to an idle keep-alive
 *            connection (last used first, so few connections stay open), or to a
 *            new one up to --connections; response time counts from the
 *            scheduled arrival, so a slow server cannot slow the arrivals down.
 *   session: --sessions users, each a sequence of --session-length requests on
 *            one keep-alive connection with think times between them.
 * Both are bounded by --count and --duration. Prints a per-label summary and can
 * write one CSV line per request (README.md). It must never retry a request the
 * server may have seen: only a reused connection that closed before sending any
 * response byte is retried. Arrivals leave when due: its timers run at 1 ns
 * slack, and the open loop is one thread that sends and reads as preplay's
 * driver does. */
#include "app_net.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define LG_MAX_LABELS 32
#define LG_HEAD_MAX 8192

struct lg_label {
    char path[200];  /* what is requested, with any query string */
    char label[220]; /* "GET /path" without the query: what the server logs */
    double weight;
};

enum lg_think_kind { LG_THINK_EXP, LG_THINK_FIXED, LG_THINK_UNIFORM };

struct lg_options {
    const char *host;
    unsigned port;
    int session_mode;
    double rate;
    unsigned max_connections;
    unsigned sessions;
    unsigned session_length;
    enum lg_think_kind think_kind;
    double think_a_ms, think_b_ms;
    unsigned long long count;
    double duration_s;
    int duration_set;
    const char *csv_path;
    unsigned long long seed;
    unsigned timeout_ms;
    unsigned idle_close_ms;
    int quiet;
};

struct lg_record {
    unsigned label;
    int status; /* HTTP status, 0 when the exchange failed */
    uint64_t start_ns, response_ns, request_id, session, think_ns;
    uint64_t late_ns; /* open loop: from the scheduled arrival until it was started */
};

struct lg_http {
    int fd;
    char buf[LG_HEAD_MAX + 1];
};

struct lg_job {
    unsigned label;
    uint64_t arrival_ns;
};

struct lg_state {
    struct lg_options opt;
    struct lg_label labels[LG_MAX_LABELS];
    unsigned label_count;
    double weight_total;
    uint64_t t0, deadline;
    atomic_ullong issued;
    atomic_int stop;
    atomic_ullong next_session;

    pthread_mutex_t records_mutex;
    struct lg_record *records;
    size_t record_count, record_cap;
    int records_oom;

    /* open loop (lg_run_open) */
    unsigned long long client_delayed;
    unsigned max_open;
    int realtime; /* the loop ran at real-time priority */
};

static uint64_t lg_rng_next(uint64_t *s)
{
    /* xorshift64*: fast, deterministic per seed */
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545f4914f6cdd1dull;
}

static double lg_rng_unit(uint64_t *s)
{
    return (double)(lg_rng_next(s) >> 11) / 9007199254740992.0;
}

static uint64_t lg_rng_seed(unsigned long long seed, unsigned long long stream)
{
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + stream * 0xbf58476d1ce4e5b9ull + 1;
    for (int i = 0; i < 4; i++)
        lg_rng_next(&s);
    return s ? s : 1;
}

static unsigned lg_pick_label(const struct lg_state *st, uint64_t *rng)
{
    double x = lg_rng_unit(rng) * st->weight_total;
    for (unsigned i = 0; i < st->label_count; i++) {
        if (x < st->labels[i].weight)
            return i;
        x -= st->labels[i].weight;
    }
    return st->label_count - 1;
}

static uint64_t lg_draw_think_ns(const struct lg_options *o, uint64_t *rng)
{
    double ms;
    switch (o->think_kind) {
    case LG_THINK_FIXED:
        ms = o->think_a_ms;
        break;
    case LG_THINK_UNIFORM:
        ms = o->think_a_ms + (o->think_b_ms - o->think_a_ms) * lg_rng_unit(rng);
        break;
    default:
        ms = -log(1.0 - lg_rng_unit(rng)) * o->think_a_ms;
        break;
    }
    return (uint64_t)(ms * 1e6);
}

static void lg_sleep_until(uint64_t t_ns)
{
    struct timespec ts = {.tv_sec = (time_t)(t_ns / 1000000000ull),
                          .tv_nsec = (long)(t_ns % 1000000000ull)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

static void lg_http_close(struct lg_http *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
}

/* Parses a response head (NUL-terminated, without its blank line): the
 * status, X-Request-Id (0 when none), whether the server closes the
 * connection, Content-Length (0 when none). 0, or -1 when no status line. */
static int lg_http_parse_head(char *head, int *status, uint64_t *request_id, int *server_closes,
                              unsigned long long *content_length)
{
    if (sscanf(head, "HTTP/1.%*d %d", status) != 1)
        return -1;
    *content_length = 0;
    *request_id = 0;
    *server_closes = 0;
    for (char *line = strstr(head, "\r\n"); line; line = strstr(line, "\r\n")) {
        line += 2;
        if (strncasecmp(line, "Content-Length:", 15) == 0)
            *content_length = strtoull(line + 15, NULL, 10);
        else if (strncasecmp(line, "X-Request-Id:", 13) == 0)
            *request_id = strtoull(line + 13, NULL, 10);
        else if (strncasecmp(line, "Connection:", 11) == 0) {
            const char *v = line + 11;
            while (*v == ' ')
                v++;
            if (strncasecmp(v, "close", 5) == 0)
                *server_closes = 1;
        }
    }
    return 0;
}

/* Reads one response: 1 done, 0 closed before any byte, -1 error. */
static int lg_http_read_response(struct lg_http *c, int *status, uint64_t *request_id,
                                 int *server_closes)
{
    size_t have = 0;
    char *head_end = NULL;
    while (!(head_end = memmem(c->buf, have, "\r\n\r\n", 4))) {
        if (have == LG_HEAD_MAX)
            return -1;
        ssize_t n = recv(c->fd, c->buf + have, LG_HEAD_MAX - have, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && have == 0 && errno == ECONNRESET)
            return 0;
        if (n <= 0)
            return n == 0 && have == 0 ? 0 : -1;
        have += (size_t)n;
    }
    *head_end = '\0';
    unsigned long long content_length;
    if (lg_http_parse_head(c->buf, status, request_id, server_closes, &content_length) < 0)
        return -1;
    size_t head_len = (size_t)(head_end - c->buf) + 4;
    unsigned long long body_have = have - head_len;
    if (body_have > content_length)
        return -1; /* more than one response: this client never pipelines */
    unsigned long long left = content_length - body_have;
    while (left > 0) {
        ssize_t n = recv(c->fd, c->buf, left < LG_HEAD_MAX ? left : LG_HEAD_MAX, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        left -= (unsigned long long)n;
    }
    return 1;
}

/* The request line and headers of a GET of path: its length (< cap). */
static size_t lg_http_request(const struct lg_options *o, const char *path, char *buf, size_t cap)
{
    int len =
        snprintf(buf, cap, "GET %s HTTP/1.1\r\nHost: %s:%u\r\nUser-Agent: preplay-loadgen\r\n\r\n",
                 path, o->host, o->port);
    return len < 0 ? 0 : (size_t)len < cap ? (size_t)len : cap - 1;
}

/* One GET on c (connecting when needed). Fills status (0 on failure) and id. */
static void lg_http_get(struct lg_state *st, struct lg_http *c, const char *path, int *status,
                        uint64_t *request_id)
{
    const struct lg_options *o = &st->opt;
    char request[512];
    size_t len = lg_http_request(o, path, request, sizeof request);
    *status = 0;
    *request_id = 0;
    for (int attempt = 0; attempt < 2; attempt++) {
        int reused = c->fd >= 0;
        if (!reused) {
            c->fd = app_connect_tcp(o->host, o->port);
            if (c->fd < 0) {
                if (!o->quiet)
                    fprintf(stderr, "loadgen: connect %s:%u: %s\n", o->host, o->port,
                            strerror(errno));
                return;
            }
            struct timeval tv = {.tv_sec = o->timeout_ms / 1000,
                                 .tv_usec = (o->timeout_ms % 1000) * 1000};
            setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
            setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        }
        int server_closes = 0;
        int rc = app_write_all(c->fd, request, len) == 0 ? 1 : 0;
        if (rc == 1)
            rc = lg_http_read_response(c, status, request_id, &server_closes);
        if (rc == 1) {
            if (server_closes)
                lg_http_close(c);
            return;
        }
        int saved = errno;
        lg_http_close(c);
        *status = 0;
        /* A kept-alive connection the server closed while idle: it never saw the
         * request, so sending it again on a new connection is safe. */
        if (reused && rc == 0)
            continue;
        if (!o->quiet)
            fprintf(stderr, "loadgen: GET %s: %s\n", path,
                    rc == 0 ? "connection closed before a response" : strerror(saved));
        return;
    }
}

static void lg_record(struct lg_state *st, const struct lg_record *r)
{
    pthread_mutex_lock(&st->records_mutex);
    if (st->record_count == st->record_cap) {
        size_t cap = st->record_cap ? st->record_cap * 2 : 4096;
        struct lg_record *grown = realloc(st->records, cap * sizeof *grown);
        if (!grown) {
            st->records_oom = 1;
            pthread_mutex_unlock(&st->records_mutex);
            return;
        }
        st->records = grown;
        st->record_cap = cap;
    }
    st->records[st->record_count++] = *r;
    pthread_mutex_unlock(&st->records_mutex);
}

/* Doubles the ring *q (count jobs from *head) into a new array from 0. */
static int lg_backlog_grow(struct lg_job **q, size_t *head, size_t count, size_t *cap)
{
    size_t grown_cap = *cap ? *cap * 2 : 1024;
    struct lg_job *grown = malloc(grown_cap * sizeof *grown);
    if (!grown)
        return -1;
    for (size_t i = 0; i < count; i++)
        grown[i] = (*q)[(*head + i) % *cap];
    free(*q);
    *q = grown;
    *head = 0;
    *cap = grown_cap;
    return 0;
}

/* ---- open loop ----
 * One thread, as preplay's driver: it sleeps in epoll until the next arrival
 * or an answer, sends each request when due on an idle kept-alive connection
 * (last used first) or a new one, and reads the answers as they come. No
 * thread hand-off lies inside a measured response time, so this client wakes
 * as often as the driver does (one timer and one answer per request): on a
 * VM whose idle CPUs are slow to wake, a hand-off to a second thread was
 * ~35 us of every real response time that the replay did not carry. */

enum lg_conn_state { LG_CONN_IDLE, LG_CONN_CONNECTING, LG_CONN_SENDING, LG_CONN_READING };

struct lg_conn {
    int fd; /* -1: closed */
    enum lg_conn_state state;
    int reused;  /* the request went out on a kept-alive connection */
    int retried; /* the request was already sent again on a fresh one */
    struct lg_job job;
    uint64_t deadline_ns, idle_since_ns, late_ns;
    char request[512];
    size_t request_len, request_off;
    char buf[LG_HEAD_MAX + 1]; /* the answer's head, then scratch for its body */
    size_t have;
    int head_done, server_closes, status;
    unsigned long long body_left;
    uint64_t request_id;
};

struct lg_open {
    struct lg_state *st;
    int epfd;
    struct sockaddr_storage addr; /* the server's, resolved once */
    socklen_t addr_len;
    struct lg_conn *conns;
    unsigned nconns; /* slots used so far (a closed one is used again) */
    unsigned nopen;  /* connections open now */
    unsigned *idle;  /* stack of idle connections: last used on top */
    unsigned nidle;
    unsigned busy;
};

static void lg_conn_close(struct lg_open *o, struct lg_conn *c)
{
    if (c->fd >= 0) {
        epoll_ctl(o->epfd, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
        o->nopen--;
    }
    c->fd = -1;
}

static void lg_idle_remove(struct lg_open *o, unsigned index)
{
    for (unsigned i = 0; i < o->nidle; i++)
        if (o->idle[i] == index) {
            memmove(o->idle + i, o->idle + i + 1, (o->nidle - i - 1) * sizeof *o->idle);
            o->nidle--;
            return;
        }
}

/* The request is over (status 0: failed); the connection goes idle, or
 * closes when the server said so or the exchange failed. */
static void lg_conn_finish(struct lg_open *o, struct lg_conn *c, int status, uint64_t now)
{
    struct lg_record r = {.label = c->job.label,
                          .status = status,
                          .start_ns = c->job.arrival_ns,
                          .response_ns = now - c->job.arrival_ns,
                          .request_id = status ? c->request_id : 0,
                          .late_ns = c->late_ns};
    lg_record(o->st, &r);
    if (!status && !o->st->opt.quiet)
        fprintf(stderr, "loadgen: GET %s: %s\n", o->st->labels[c->job.label].path,
                c->have || c->head_done ? "bad or cut response" : "no response");
    if (!status || c->server_closes)
        lg_conn_close(o, c);
    c->state = LG_CONN_IDLE;
    c->idle_since_ns = now;
    o->busy--;
    if (c->fd >= 0) {
        o->idle[o->nidle++] = (unsigned)(c - o->conns);
        epoll_ctl(o->epfd, EPOLL_CTL_MOD, c->fd,
                  &(struct epoll_event){.events = EPOLLIN, .data.ptr = c});
    }
}

/* Sends what is left of the request; arms the connection for the rest or
 * for the answer. 0, or -1 when the connection failed. */
static int lg_conn_send(struct lg_open *o, struct lg_conn *c)
{
    while (c->request_off < c->request_len) {
        ssize_t n =
            send(c->fd, c->request + c->request_off, c->request_len - c->request_off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            c->state = LG_CONN_SENDING;
            return epoll_ctl(o->epfd, EPOLL_CTL_MOD, c->fd,
                             &(struct epoll_event){.events = EPOLLOUT, .data.ptr = c});
        }
        if (n < 0)
            return -1;
        c->request_off += (size_t)n;
    }
    c->state = LG_CONN_READING;
    return epoll_ctl(o->epfd, EPOLL_CTL_MOD, c->fd,
                     &(struct epoll_event){.events = EPOLLIN, .data.ptr = c});
}

static void lg_connect_failed(const struct lg_open *o, int err)
{
    const struct lg_options *opt = &o->st->opt;
    if (!opt->quiet)
        fprintf(stderr, "loadgen: connect %s:%u: %s\n", opt->host, opt->port, strerror(err));
}

/* Opens a fresh connection for c (closing any old one) and sends c's request
 * on it once connected: the connect never blocks the loop (a server whose
 * backlog is full would hold every other arrival). 0, or -1 (the request
 * failed). */
static int lg_conn_fresh(struct lg_open *o, struct lg_conn *c)
{
    lg_conn_close(o, c);
    c->reused = 0;
    int in_progress = 0;
    c->fd = app_connect_tcp_start((const struct sockaddr *)&o->addr, o->addr_len, &in_progress);
    if (c->fd < 0) {
        lg_connect_failed(o, errno);
        return -1;
    }
    if (++o->nopen > o->st->max_open)
        o->st->max_open = o->nopen;
    c->state = LG_CONN_CONNECTING;
    if (epoll_ctl(o->epfd, EPOLL_CTL_ADD, c->fd,
                  &(struct epoll_event){.events = EPOLLOUT, .data.ptr = c}) < 0) {
        lg_conn_close(o, c);
        return -1;
    }
    c->request_off = 0;
    return in_progress ? 0 : lg_conn_send(o, c);
}

/* A kept-alive connection closed before any byte of the answer: the server
 * never saw the request (it closed while the connection was idle), so it
 * goes out again, once, on a fresh connection. */
static void lg_conn_retry_or_fail(struct lg_open *o, struct lg_conn *c, uint64_t now)
{
    if (c->reused && !c->retried && !c->have && !c->head_done) {
        c->retried = 1;
        if (lg_conn_fresh(o, c) == 0)
            return;
    }
    lg_conn_finish(o, c, 0, now);
}

/* Starts job on an idle connection (last used first) or a new one; the
 * caller checked that fewer than --connections requests are in flight. */
static void lg_open_start(struct lg_open *o, const struct lg_job *job, uint64_t now)
{
    struct lg_state *st = o->st;
    struct lg_conn *c;
    if (o->nidle > 0) {
        c = &o->conns[o->idle[--o->nidle]];
    } else {
        unsigned i = 0;
        while (i < o->nconns && o->conns[i].fd >= 0) /* a closed one first */
            i++;
        if (i == o->nconns)
            o->nconns++;
        c = &o->conns[i];
        c->fd = -1;
    }
    c->job = *job;
    c->late_ns = now > job->arrival_ns ? now - job->arrival_ns : 0;
    c->deadline_ns = now + (uint64_t)st->opt.timeout_ms * 1000000ull;
    c->request_len =
        lg_http_request(&st->opt, st->labels[job->label].path, c->request, sizeof c->request);
    c->request_off = 0;
    c->have = 0;
    c->head_done = 0;
    c->server_closes = 0;
    c->retried = 0;
    c->request_id = 0;
    o->busy++;
    if (c->fd >= 0) {
        c->reused = 1;
        if (lg_conn_send(o, c) < 0)
            lg_conn_retry_or_fail(o, c, now);
    } else if (lg_conn_fresh(o, c) < 0) {
        lg_conn_finish(o, c, 0, now);
    }
}

/* Reads what has come of c's answer; finishes the request when it is whole. */
static void lg_conn_read(struct lg_open *o, struct lg_conn *c, uint64_t now)
{
    for (;;) {
        if (!c->head_done) {
            if (c->have == LG_HEAD_MAX) {
                lg_conn_finish(o, c, 0, now);
                return;
            }
            ssize_t n = recv(c->fd, c->buf + c->have, LG_HEAD_MAX - c->have, 0);
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                return;
            if (n <= 0) {
                lg_conn_retry_or_fail(o, c, now);
                return;
            }
            c->have += (size_t)n;
            char *head_end = memmem(c->buf, c->have, "\r\n\r\n", 4);
            if (!head_end)
                continue;
            unsigned long long content_length;
            size_t head_len = (size_t)(head_end - c->buf) + 4;
            *head_end = '\0';
            if (lg_http_parse_head(c->buf, &c->status, &c->request_id, &c->server_closes,
                                   &content_length) < 0 ||
                c->have - head_len > content_length) /* this client never pipelines */
            {
                lg_conn_finish(o, c, 0, now);
                return;
            }
            c->head_done = 1;
            c->body_left = content_length - (c->have - head_len);
        } else if (c->body_left > 0) {
            ssize_t n =
                recv(c->fd, c->buf, c->body_left < LG_HEAD_MAX ? c->body_left : LG_HEAD_MAX, 0);
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                return;
            if (n <= 0) {
                lg_conn_finish(o, c, 0, now);
                return;
            }
            c->body_left -= (unsigned long long)n;
        }
        if (c->head_done && c->body_left == 0) {
            lg_conn_finish(o, c, c->status, now);
            return;
        }
    }
}

static void lg_conn_event(struct lg_open *o, struct lg_conn *c, uint32_t events, uint64_t now)
{
    if (c->state == LG_CONN_IDLE) {
        /* an idle connection readable: the server closed it (or sent what
         * nobody asked for); either way it is not used again */
        lg_idle_remove(o, (unsigned)(c - o->conns));
        lg_conn_close(o, c);
    } else if (c->state == LG_CONN_CONNECTING) {
        int err = 0;
        socklen_t len = sizeof err;
        if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
            err = errno;
        if (err)
            lg_connect_failed(o, err);
        if (err || lg_conn_send(o, c) < 0)
            lg_conn_finish(o, c, 0, now);
    } else if (c->state == LG_CONN_SENDING) {
        if (lg_conn_send(o, c) < 0)
            lg_conn_retry_or_fail(o, c, now);
    } else if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
        lg_conn_read(o, c, now);
    }
}

/* Requests past their --timeout-ms fail; connections idle past
 * --idle-close-ms close (before the server's keep-alive timeout would).
 * Returns the earliest time either can happen next. */
static uint64_t lg_open_sweep(struct lg_open *o, uint64_t now)
{
    const struct lg_options *opt = &o->st->opt;
    uint64_t next = UINT64_MAX;
    for (unsigned i = 0; i < o->nconns; i++) {
        struct lg_conn *c = &o->conns[i];
        if (c->fd < 0 && c->state == LG_CONN_IDLE)
            continue;
        if (c->state != LG_CONN_IDLE) {
            if (now >= c->deadline_ns) {
                lg_conn_finish(o, c, 0, now);
                continue;
            }
            next = c->deadline_ns < next ? c->deadline_ns : next;
        } else if (opt->idle_close_ms) {
            uint64_t close_at = c->idle_since_ns + (uint64_t)opt->idle_close_ms * 1000000ull;
            if (now >= close_at) {
                lg_idle_remove(o, i);
                lg_conn_close(o, c);
                continue;
            }
            next = close_at < next ? close_at : next;
        }
    }
    return next;
}

/* The loop thread runs at the lowest real-time priority where allowed, as
 * the driver's does: a due send preempts ordinary work on this host. */
static int lg_open_priority_raise(void)
{
    struct sched_param rt = {.sched_priority = 1};
    return pthread_setschedparam(pthread_self(), SCHED_FIFO, &rt) == 0;
}

static int lg_run_open(struct lg_state *st)
{
    struct lg_open o = {.st = st, .epfd = epoll_create1(EPOLL_CLOEXEC)};
    o.conns = calloc(st->opt.max_connections, sizeof *o.conns);
    o.idle = calloc(st->opt.max_connections, sizeof *o.idle);
    struct lg_job *backlog = NULL;
    size_t backlog_head = 0, backlog_count = 0, backlog_cap = 0;
    int rc = 0;
    if (o.epfd < 0 || !o.conns || !o.idle) {
        fprintf(stderr, "loadgen: %s\n", o.epfd < 0 ? strerror(errno) : "out of memory");
        rc = -1;
        goto out;
    }
    if (app_resolve_tcp(st->opt.host, st->opt.port, &o.addr, &o.addr_len) < 0) {
        fprintf(stderr, "loadgen: %s:%u: %s\n", st->opt.host, st->opt.port, strerror(errno));
        rc = -1;
        goto out;
    }
    for (unsigned i = 0; i < st->opt.max_connections; i++)
        o.conns[i].fd = -1;
    st->realtime = lg_open_priority_raise();
    uint64_t rng = lg_rng_seed(st->opt.seed, 0);
    uint64_t t = st->t0;
    int generating = 1;
    struct lg_job next = {0};
    struct epoll_event evs[64];
    for (;;) {
        if (generating && !next.arrival_ns) {
            t += (uint64_t)(-log(1.0 - lg_rng_unit(&rng)) / st->opt.rate * 1e9);
            if (t >= st->deadline || atomic_load(&st->issued) >= st->opt.count)
                generating = 0;
            else
                next = (struct lg_job){.label = lg_pick_label(st, &rng), .arrival_ns = t};
        }
        uint64_t now = app_now_ns();
        while (backlog_count && o.busy < st->opt.max_connections) {
            lg_open_start(&o, &backlog[backlog_head], now);
            backlog_head = (backlog_head + 1) % backlog_cap;
            backlog_count--;
        }
        if (generating && next.arrival_ns <= now) {
            atomic_fetch_add(&st->issued, 1);
            if (o.busy < st->opt.max_connections) {
                lg_open_start(&o, &next, now);
            } else {
                /* Every connection is busy: the client is the bottleneck; say so at the end. */
                if (backlog_count == backlog_cap &&
                    lg_backlog_grow(&backlog, &backlog_head, backlog_count, &backlog_cap) < 0) {
                    fprintf(stderr, "loadgen: out of memory\n");
                    rc = -1;
                    break;
                }
                backlog[(backlog_head + backlog_count) % backlog_cap] = next;
                backlog_count++;
                st->client_delayed++;
            }
            next.arrival_ns = 0;
            continue;
        }
        uint64_t wake = lg_open_sweep(&o, now);
        if (!generating && !o.busy && !backlog_count)
            break;
        if (generating && next.arrival_ns < wake)
            wake = next.arrival_ns;
        uint64_t wait = wake > now ? wake - now : 0;
        struct timespec ts = {.tv_sec = (time_t)(wait / 1000000000ull),
                              .tv_nsec = (long)(wait % 1000000000ull)};
        int ne = epoll_pwait2(o.epfd, evs, 64, wake == UINT64_MAX ? NULL : &ts, NULL);
        if (ne < 0 && errno != EINTR) {
            fprintf(stderr, "loadgen: epoll: %s\n", strerror(errno));
            rc = -1;
            break;
        }
        now = app_now_ns();
        for (int i = 0; i < ne; i++)
            lg_conn_event(&o, evs[i].data.ptr, evs[i].events, now);
    }
out:
    for (unsigned i = 0; i < o.nconns; i++)
        if (o.conns[i].fd >= 0)
            close(o.conns[i].fd);
    if (o.epfd >= 0)
        close(o.epfd);
    free(o.conns);
    free(o.idle);
    free(backlog);
    return rc;
}

/* ---- sessions ---- */

struct lg_user {
    struct lg_state *state;
    unsigned index;
    pthread_t thread;
    struct lg_http http;
};

static void *lg_session_user(void *arg)
{
    struct lg_user *u = arg;
    struct lg_state *st = u->state;
    uint64_t rng = lg_rng_seed(st->opt.seed, 1000 + u->index);
    while (!atomic_load(&st->stop)) {
        uint64_t session = atomic_fetch_add(&st->next_session, 1);
        uint64_t think = 0;
        for (unsigned k = 0; k < st->opt.session_length && !atomic_load(&st->stop); k++) {
            if (app_now_ns() >= st->deadline || atomic_fetch_add(&st->issued, 1) >= st->opt.count) {
                atomic_store(&st->stop, 1);
                break;
            }
            struct lg_record r = {.label = lg_pick_label(st, &rng),
                                  .session = session,
                                  .think_ns = think,
                                  .start_ns = app_now_ns()};
            lg_http_get(st, &u->http, st->labels[r.label].path, &r.status, &r.request_id);
            r.response_ns = app_now_ns() - r.start_ns;
            lg_record(st, &r);
            if (k + 1 == st->opt.session_length)
                break;
            think = lg_draw_think_ns(&st->opt, &rng);
            uint64_t wake = app_now_ns() + think;
            if (wake >= st->deadline) {
                atomic_store(&st->stop, 1);
                break;
            }
            lg_sleep_until(wake);
        }
        lg_http_close(&u->http); /* a session ends with its connection */
    }
    return NULL;
}

static int lg_run_sessions(struct lg_state *st)
{
    struct lg_user *users = calloc(st->opt.sessions, sizeof *users);
    if (!users) {
        fprintf(stderr, "loadgen: out of memory\n");
        return -1;
    }
    atomic_init(&st->next_session, 1);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    unsigned started = 0;
    int rc = 0;
    for (; started < st->opt.sessions; started++) {
        users[started].state = st;
        users[started].index = started;
        users[started].http.fd = -1;
        int err = pthread_create(&users[started].thread, &attr, lg_session_user, &users[started]);
        if (err != 0) {
            fprintf(stderr, "loadgen: starting user %u: %s\n", started, strerror(err));
            atomic_store(&st->stop, 1);
            rc = -1;
            break;
        }
    }
    pthread_attr_destroy(&attr);
    for (unsigned i = 0; i < started; i++)
        pthread_join(users[i].thread, NULL);
    free(users);
    return rc;
}

/* ---- output ---- */

static int lg_compare_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static double lg_percentile_ms(const uint64_t *sorted, size_t n, double q)
{
    if (n == 0)
        return 0;
    size_t i = (size_t)ceil(q * (double)n);
    i = i == 0 ? 0 : i - 1;
    return (double)sorted[i < n ? i : n - 1] / 1e6;
}

static void lg_print_row(const char *label, uint64_t *rt, size_t n, size_t errors)
{
    qsort(rt, n, sizeof *rt, lg_compare_u64);
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += (double)rt[i];
    printf("%-24s %7zu %6zu %9.3f %9.3f %9.3f %9.3f %9.3f\n", label, n, errors,
           n ? sum / (double)n / 1e6 : 0.0, lg_percentile_ms(rt, n, 0.5),
           lg_percentile_ms(rt, n, 0.9), lg_percentile_ms(rt, n, 0.99),
           n ? (double)rt[n - 1] / 1e6 : 0.0);
}

static size_t lg_summary(struct lg_state *st, double elapsed_s)
{
    uint64_t *rt = malloc((st->record_count + 1) * sizeof *rt);
    if (!rt) {
        fprintf(stderr, "loadgen: out of memory for the summary\n");
        return st->record_count;
    }
    printf("%-24s %7s %6s %9s %9s %9s %9s %9s\n", "label", "count", "errors", "mean_ms", "p50_ms",
           "p90_ms", "p99_ms", "max_ms");
    size_t total_errors = 0;
    for (unsigned l = 0; l < st->label_count; l++) {
        size_t n = 0, errors = 0;
        for (size_t i = 0; i < st->record_count; i++) {
            if (st->records[i].label != l)
                continue;
            if (st->records[i].status != 200)
                errors++;
            rt[n++] = st->records[i].response_ns;
        }
        lg_print_row(st->labels[l].label, rt, n, errors);
        total_errors += errors;
    }
    for (size_t i = 0; i < st->record_count; i++)
        rt[i] = st->records[i].response_ns;
    lg_print_row("all", rt, st->record_count, total_errors);
    free(rt);
    printf("loadgen: %s mode, %zu requests in %.2f s (%.1f/s), %zu errors",
           st->opt.session_mode ? "session" : "open", st->record_count, elapsed_s,
           elapsed_s > 0 ? (double)st->record_count / elapsed_s : 0.0, total_errors);
    if (st->opt.session_mode)
        printf(", %llu sessions\n", (unsigned long long)atomic_load(&st->next_session) - 1);
    else
        printf(", %u connections at most, %llu arrivals waited for a free connection, %s\n",
               st->max_open, st->client_delayed,
               st->realtime ? "real-time priority" : "normal priority (real-time not allowed)");
    return total_errors;
}

static int lg_write_csv(struct lg_state *st)
{
    FILE *f = fopen(st->opt.csv_path, "w");
    if (!f) {
        fprintf(stderr, "loadgen: %s: %s\n", st->opt.csv_path, strerror(errno));
        return -1;
    }
    fprintf(f, "label,start_ns,response_ns,status,request_id,session,think_ns,late_ns\n");
    for (size_t i = 0; i < st->record_count; i++) {
        const struct lg_record *r = &st->records[i];
        fprintf(f, "%s,%llu,%llu,%d,%llu,%llu,%llu,%llu\n", st->labels[r->label].label,
                (unsigned long long)r->start_ns, (unsigned long long)r->response_ns, r->status,
                (unsigned long long)r->request_id, (unsigned long long)r->session,
                (unsigned long long)r->think_ns, (unsigned long long)r->late_ns);
    }
    if (ferror(f) | (fclose(f) != 0)) {
        fprintf(stderr, "loadgen: writing %s failed\n", st->opt.csv_path);
        return -1;
    }
    return 0;
}

/* ---- options ---- */

static int lg_parse_mix(struct lg_state *st, const char *text)
{
    static const char *const names[] = {"cpu", "file", "log", "db", "fanout", "static"};
    char *copy = strdup(text);
    if (!copy)
        return -1;
    st->label_count = 0;
    st->weight_total = 0;
    int rc = 0;
    char *save = NULL;
    for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *eq = strrchr(item, '=');
        double weight = 1;
        if (eq) {
            *eq = '\0';
            char *end;
            weight = strtod(eq + 1, &end);
            if (*end || !(weight >= 0) || weight > 1e9) {
                fprintf(stderr, "loadgen: --mix: bad weight '%s' for '%s'\n", eq + 1, item);
                rc = -1;
                break;
            }
        }
        const char *path = NULL;
        char built[200];
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
            if (strcmp(item, names[i]) == 0) {
                snprintf(built, sizeof built, "/%s", names[i]);
                path = built;
            }
        if (!path && item[0] == '/' && strlen(item) < sizeof built && !strpbrk(item, " \t\r\n"))
            path = item;
        if (!path || st->label_count == LG_MAX_LABELS) {
            fprintf(stderr,
                    "loadgen: --mix: '%s' is not one of cpu,file,log,db,fanout,static "
                    "or a /path (at most %d entries)\n",
                    item, LG_MAX_LABELS);
            rc = -1;
            break;
        }
        struct lg_label *l = &st->labels[st->label_count++];
        snprintf(l->path, sizeof l->path, "%s", path);
        snprintf(l->label, sizeof l->label, "GET %.*s", (int)strcspn(path, "?"), path);
        l->weight = weight;
        st->weight_total += weight;
    }
    free(copy);
    if (rc == 0 && (st->label_count == 0 || !(st->weight_total > 0))) {
        fprintf(stderr, "loadgen: --mix needs at least one entry with a positive weight\n");
        rc = -1;
    }
    return rc;
}

static int lg_parse_think(struct lg_options *o, const char *text)
{
    double a = 0, b = 0;
    char extra;
    if (sscanf(text, "exp:%lf%c", &a, &extra) == 1 && a >= 0)
        o->think_kind = LG_THINK_EXP;
    else if (sscanf(text, "fixed:%lf%c", &a, &extra) == 1 && a >= 0)
        o->think_kind = LG_THINK_FIXED;
    else if (sscanf(text, "uniform:%lf:%lf%c", &a, &b, &extra) == 2 && a >= 0 && b >= a)
        o->think_kind = LG_THINK_UNIFORM;
    else
        return -1;
    if (a > 3.6e6 || b > 3.6e6)
        return -1;
    o->think_a_ms = a;
    o->think_b_ms = b;
    return 0;
}

static const char lg_usage[] =
    "usage: loadgen --port PORT [options]\n"
    "  --host HOST            server address (default 127.0.0.1)\n"
    "  --mode open|session    Poisson arrivals, or users with think times (default open)\n"
    "  --rate R               open: mean arrivals per second (default 50)\n"
    "  --connections N        open: most connections at once (default 256)\n"
    "  --sessions N           session: concurrent users (default 4)\n"
    "  --session-length N     session: requests per session (default 10)\n"
    "  --think exp:MS|fixed:MS|uniform:LO:HI  think time in ms (default exp:50)\n"
    "  --mix NAME[=W],...     request mix: cpu,file,log,db,fanout,static or /path with\n"
    "                         weights (default: all six pages, equal weights)\n"
    "  --count N              stop after N requests\n"
    "  --duration S           stop issuing after S seconds (default 10; 3600 with --count)\n"
    "  --csv FILE             one line per request: label,start_ns,response_ns,status,\n"
    "                         request_id,session,think_ns,late_ns\n"
    "  --seed N               random seed (default 1)\n"
    "  --timeout-ms N         open: a request fails after this long without its whole\n"
    "                         answer; session: a send or receive waiting this long\n"
    "                         (default 10000)\n"
    "  --idle-close-ms N      open: close connections idle this long (default 500)\n"
    "  --quiet                no per-error messages\n";

static int lg_parse_args(struct lg_state *st, int argc, char **argv)
{
    static const struct option options[] = {
        {"host", required_argument, NULL, 'H'},
        {"port", required_argument, NULL, 'p'},
        {"mode", required_argument, NULL, 'm'},
        {"rate", required_argument, NULL, 'r'},
        {"connections", required_argument, NULL, 'c'},
        {"sessions", required_argument, NULL, 's'},
        {"session-length", required_argument, NULL, 'l'},
        {"think", required_argument, NULL, 't'},
        {"mix", required_argument, NULL, 'x'},
        {"count", required_argument, NULL, 'n'},
        {"duration", required_argument, NULL, 'd'},
        {"csv", required_argument, NULL, 'o'},
        {"seed", required_argument, NULL, 'S'},
        {"timeout-ms", required_argument, NULL, 'T'},
        {"idle-close-ms", required_argument, NULL, 'i'},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct lg_options *o = &st->opt;
    int opt, index = 0;
    unsigned long long v;
    char *end;
    while ((opt = getopt_long(argc, argv, "", options, &index)) != -1) {
        int ok = 1;
        switch (opt) {
        case 'H':
            o->host = optarg;
            break;
        case 'p':
            ok = app_parse_uint(optarg, 1, 65535, &v) == 0;
            o->port = (unsigned)v;
            break;
        case 'm':
            ok = !strcmp(optarg, "open") || !strcmp(optarg, "session");
            o->session_mode = !strcmp(optarg, "session");
            break;
        case 'r':
            o->rate = strtod(optarg, &end);
            ok = !*end && o->rate > 0 && o->rate <= 1e6;
            break;
        case 'c':
            ok = app_parse_uint(optarg, 1, 10000, &v) == 0;
            o->max_connections = (unsigned)v;
            break;
        case 's':
            ok = app_parse_uint(optarg, 1, 10000, &v) == 0;
            o->sessions = (unsigned)v;
            break;
        case 'l':
            ok = app_parse_uint(optarg, 1, 1000000, &v) == 0;
            o->session_length = (unsigned)v;
            break;
        case 't':
            ok = lg_parse_think(o, optarg) == 0;
            break;
        case 'x':
            if (lg_parse_mix(st, optarg) < 0)
                return -1;
            break;
        case 'n':
            ok = app_parse_uint(optarg, 1, 100000000, &o->count) == 0;
            break;
        case 'd':
            o->duration_s = strtod(optarg, &end);
            ok = !*end && o->duration_s > 0 && o->duration_s <= 86400;
            o->duration_set = 1;
            break;
        case 'o':
            o->csv_path = optarg;
            break;
        case 'S':
            ok = app_parse_uint(optarg, 0, ~0ull, &o->seed) == 0;
            break;
        case 'T':
            ok = app_parse_uint(optarg, 1, 3600000, &v) == 0;
            o->timeout_ms = (unsigned)v;
            break;
        case 'i':
            ok = app_parse_uint(optarg, 0, 3600000, &v) == 0;
            o->idle_close_ms = (unsigned)v;
            break;
        case 'q':
            o->quiet = 1;
            break;
        case 'h':
            fputs(lg_usage, stdout);
            exit(0);
        default:
            fputs(lg_usage, stderr);
            return -1;
        }
        if (!ok) {
            fprintf(stderr, "loadgen: bad value for --%s: '%s'\n", options[index].name, optarg);
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "loadgen: unexpected argument '%s'\n", argv[optind]);
        return -1;
    }
    if (!o->duration_set && o->count != ~0ull)
        o->duration_s = 3600; /* --count alone: the count bounds the run, an hour at most */
    if (!o->port) {
        fprintf(stderr, "loadgen: --port is required\n");
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    static struct lg_state st;
    st.opt = (struct lg_options){
        .host = "127.0.0.1",
        .rate = 50,
        .max_connections = 256,
        .sessions = 4,
        .session_length = 10,
        .think_kind = LG_THINK_EXP,
        .think_a_ms = 50,
        .count = ~0ull,
        .duration_s = 10,
        .seed = 1,
        .timeout_ms = 10000,
        .idle_close_ms = 500,
    };
    if (lg_parse_mix(&st, "cpu,file,log,db,fanout,static") < 0 ||
        lg_parse_args(&st, argc, argv) < 0)
        return 2;
    signal(SIGPIPE, SIG_IGN);
    /* Arrivals leave when due, as preplay's driver sends them (its timers
     * run at 1 ns slack): with the default 50 us slack each sleep to an
     * arrival could end that much late, and response times count from the
     * scheduled arrival, so the real app was measured up to 50 us slower
     * than its replay (a quarter of the sample app's GET /static). Set
     * before any thread starts: they inherit it. */
    prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0);
    pthread_mutex_init(&st.records_mutex, NULL);
    atomic_init(&st.issued, 0);
    atomic_init(&st.stop, 0);
    st.t0 = app_now_ns();
    st.deadline = st.t0 + (uint64_t)(st.opt.duration_s * 1e9);
    int rc = st.opt.session_mode ? lg_run_sessions(&st) : lg_run_open(&st);
    double elapsed = (double)(app_now_ns() - st.t0) / 1e9;
    size_t errors = lg_summary(&st, elapsed);
    if (st.opt.csv_path && lg_write_csv(&st) < 0)
        rc = -1;
    if (st.records_oom) {
        fprintf(stderr, "loadgen: out of memory: some requests were not recorded\n");
        rc = -1;
    }
    free(st.records);
    pthread_mutex_destroy(&st.records_mutex);
    return rc < 0 ? 2 : errors ? 1 : 0;
}
