/* frontend.c - the sample application's front end: an HTTP/1.1 server in the
 * dispatcher/worker model (worker_pool.c) whose pages each stress a different
 * resource mix: /cpu, /file, /log, /db, /fanout (two app-tier calls), /static.
 * It assigns every request an id (sent back as X-Request-Id), forwards ids to the
 * app tier, and writes one side-log line per served request (README.md).
 * It must never serve two connections on one worker thread at once: the analyzer
 * tests rely on worker = thread. */
#include "app_client.h"
#include "app_db.h"
#include "app_net.h"
#include "app_work.h"
#include "side_log.h"
#include "worker_pool.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <mysql.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define FRONTEND_HEAD_MAX 8192
#define FRONTEND_BODY_MAX (1u << 20) /* request bodies larger than this are refused */
#define FRONTEND_RESPONSE_ROOM 512   /* bytes kept before a response body for its head */
#define FRONTEND_RESPONSE_MAX (128 * 1024)
#define FRONTEND_INPUT_SIZE (4u << 20)
#define FRONTEND_FILE_BLOCK 16384
#define FRONTEND_OUT_BLOCKS 16
#define FRONTEND_CUSTOMERS 2000 /* rows in schema.sql */

struct frontend_worker {
    struct app_db_conn *db;
    int out_fd; /* data-dir/out-W.dat, written by /file */
    unsigned long long file_writes;
    char response[FRONTEND_RESPONSE_ROOM + FRONTEND_RESPONSE_MAX];
};

struct frontend {
    const char *data_dir;
    const char *bind_host;
    unsigned port;
    const char *port_file;
    unsigned workers;
    unsigned keepalive_ms;
    unsigned max_keepalive_requests;
    unsigned cpu_ms;
    unsigned log_cpu_us;
    char app_host[256];
    unsigned app_port;
    unsigned app_conns;
    struct app_db_config db;
    struct app_client_pool *app;
    struct side_log *side_log;
    int input_fd;
    int shared_log_fd;
    pthread_mutex_t shared_log_mutex;
    unsigned long long shared_log_seq;
    char *static_page;
    size_t static_len;
    atomic_ullong next_id;
    struct frontend_worker *worker_state;
};

struct frontend_request {
    char method[16];
    char path[256];
    char query[256];
    char label[300];
    int keep_alive;
    unsigned long long content_length;
};

/* A response being built in the worker's buffer. */
struct frontend_reply {
    int status;
    char *body;
    size_t len;
    unsigned nested_count;
    uint64_t nested_ids[SIDE_LOG_MAX_NESTED];
};

static void frontend_reply_printf(struct frontend_reply *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void frontend_reply_printf(struct frontend_reply *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(r->body + r->len, FRONTEND_RESPONSE_MAX - r->len, fmt, ap);
    va_end(ap);
    if (n > 0)
        r->len = r->len + (size_t)n < FRONTEND_RESPONSE_MAX ? r->len + (size_t)n
                                                            : FRONTEND_RESPONSE_MAX - 1;
}

static const char *frontend_status_text(int status)
{
    switch (status) {
    case 200:
        return "OK";
    case 400:
        return "Bad Request";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 413:
        return "Content Too Large";
    case 431:
        return "Request Header Fields Too Large";
    case 500:
        return "Internal Server Error";
    case 501:
        return "Not Implemented";
    case 503:
        return "Service Unavailable";
    default:
        return "Error";
    }
}

/* Value of name=NUMBER in a query string, or def. */
static unsigned long long frontend_query_number(const char *query, const char *name,
                                                unsigned long long max, unsigned long long def)
{
    size_t nl = strlen(name);
    for (const char *p = query; p && *p;) {
        if (strncmp(p, name, nl) == 0 && p[nl] == '=') {
            char text[24];
            size_t i = 0;
            for (const char *v = p + nl + 1; *v && *v != '&' && i + 1 < sizeof text; v++)
                text[i++] = *v;
            text[i] = '\0';
            unsigned long long value;
            return app_parse_uint(text, 0, max, &value) == 0 ? value : def;
        }
        p = strchr(p, '&');
        p = p ? p + 1 : NULL;
    }
    return def;
}

static void frontend_page_cpu(struct frontend *fe, const struct frontend_request *rq, uint64_t id,
                              struct frontend_reply *r)
{
    unsigned long long ms = frontend_query_number(rq->query, "ms", 1000, fe->cpu_ms);
    uint64_t result = app_work_cpu(id, ms * APP_WORK_ITERATIONS_PER_MS);
    frontend_reply_printf(r, "cpu ms=%llu result=%016llx\n", ms, (unsigned long long)result);
}

static void frontend_page_file(struct frontend *fe, struct frontend_worker *w, uint64_t id,
                               struct frontend_reply *r)
{
    char block[FRONTEND_FILE_BLOCK];
    off_t in_off = (off_t)(id % (FRONTEND_INPUT_SIZE / FRONTEND_FILE_BLOCK)) * FRONTEND_FILE_BLOCK;
    ssize_t got = pread(fe->input_fd, block, sizeof block, in_off);
    if (got != (ssize_t)sizeof block) {
        r->status = 500;
        frontend_reply_printf(r, "input.dat: read at offset %lld: %s\n", (long long)in_off,
                              got < 0 ? strerror(errno) : "short read");
        return;
    }
    uint64_t sum = app_work_checksum(block, sizeof block);
    for (size_t i = 0; i < sizeof block; i++) /* the written block depends on the read one */
        block[i] = (char)(block[i] ^ (char)(sum >> (8 * (i % 8))));
    off_t out_off = (off_t)(w->file_writes++ % FRONTEND_OUT_BLOCKS) * FRONTEND_FILE_BLOCK;
    if (pwrite(w->out_fd, block, sizeof block, out_off) != (ssize_t)sizeof block ||
        fsync(w->out_fd) != 0) {
        r->status = 500;
        frontend_reply_printf(r, "out file: write/fsync at offset %lld: %s\n", (long long)out_off,
                              strerror(errno));
        return;
    }
    frontend_reply_printf(r, "file read=%zu@%lld wrote=%zu@%lld checksum=%016llx\n", sizeof block,
                          (long long)in_off, sizeof block, (long long)out_off,
                          (unsigned long long)sum);
}

static void frontend_page_log(struct frontend *fe, unsigned worker, uint64_t id,
                              struct frontend_reply *r)
{
    char line[160];
    /* The critical section does real work (a hash of the entry) and the append, so
     * concurrent /log requests contend on this mutex. */
    pthread_mutex_lock(&fe->shared_log_mutex);
    unsigned long long seq = ++fe->shared_log_seq;
    uint64_t digest =
        app_work_cpu(seq, (uint64_t)fe->log_cpu_us * APP_WORK_ITERATIONS_PER_MS / 1000);
    int n = snprintf(line, sizeof line, "seq=%llu request=%llu worker=%u digest=%016llx\n", seq,
                     (unsigned long long)id, worker, (unsigned long long)digest);
    ssize_t wrote = write(fe->shared_log_fd, line, (size_t)n);
    pthread_mutex_unlock(&fe->shared_log_mutex);
    if (wrote != n) {
        r->status = 500;
        frontend_reply_printf(r, "shared.log: append: %s\n", wrote < 0 ? strerror(errno) : "short");
        return;
    }
    frontend_reply_printf(r, "%s", line);
}

static void frontend_page_db(struct frontend_worker *w, const struct frontend_request *rq,
                             uint64_t id, struct frontend_reply *r)
{
    unsigned long long key =
        frontend_query_number(rq->query, "key", FRONTEND_CUSTOMERS, id % FRONTEND_CUSTOMERS + 1);
    if (key == 0)
        key = 1;
    char sql[3][512];
    snprintf(sql[0], sizeof sql[0], "SELECT id, name, region FROM customers WHERE id = %llu", key);
    snprintf(sql[1], sizeof sql[1],
             "SELECT COUNT(*), COALESCE(SUM(amount), 0) FROM orders WHERE customer_id = %llu", key);
    /* The slow one: a three-way join over every order with grouping, no index helps. */
    snprintf(sql[2], sizeof sql[2],
             "SELECT c.region, p.category, COUNT(*), SUM(o.amount), MAX(o.quantity) "
             "FROM orders o JOIN customers c ON c.id = o.customer_id "
             "JOIN products p ON p.id = o.product_id "
             "WHERE (o.id + %llu) %% 3 <> 0 GROUP BY c.region, p.category "
             "ORDER BY c.region, p.category",
             key);
    char err[512];
    for (int i = 0; i < 3; i++) {
        size_t len = r->len;
        long rows =
            app_db_query(w->db, sql[i], r->body, FRONTEND_RESPONSE_MAX, &len, err, sizeof err);
        if (rows < 0) {
            r->status = 500;
            r->len = 0;
            frontend_reply_printf(r, "%s\n", err);
            return;
        }
        r->len = len;
    }
}

static void frontend_page_fanout(struct frontend *fe, const struct frontend_request *rq,
                                 uint64_t id, struct frontend_reply *r)
{
    if (!fe->app) {
        r->status = 503;
        frontend_reply_printf(r, "no app tier configured (--app-tier)\n");
        return;
    }
    unsigned long long key = frontend_query_number(rq->query, "key", 0xffffffffull, id);
    static const uint8_t ops[2] = {APP_OP_LOOKUP, APP_OP_RENDER};
    for (int i = 0; i < 2; i++) {
        struct app_proto_request call = {
            .op = ops[i],
            .request_id = atomic_fetch_add(&fe->next_id, 1),
            .parent_id = id,
            .key = (uint32_t)key,
        };
        char payload[APP_PROTO_MAX_PAYLOAD + 1];
        size_t len = 0;
        char err[512];
        r->nested_ids[r->nested_count++] = call.request_id;
        if (app_client_call(fe->app, &call, payload, sizeof payload, &len, err, sizeof err) < 0) {
            r->status = 502;
            r->len = 0;
            frontend_reply_printf(r, "%s\n", err);
            return;
        }
        frontend_reply_printf(r, "%s %llu: %s", app_proto_op_name(ops[i]),
                              (unsigned long long)call.request_id, payload);
    }
}

/* Parses the head in buf[0..head_len); 0, or an HTTP status to answer with. */
static int frontend_parse_head(char *buf, size_t head_len, struct frontend_request *rq)
{
    memset(rq, 0, sizeof *rq);
    buf[head_len - 2] = '\0'; /* head ends "\r\n\r\n": cut before the last CRLF */
    char *line_end = strstr(buf, "\r\n");
    if (line_end)
        *line_end = '\0';
    char *method = buf, *target = strchr(buf, ' ');
    if (!target)
        return 400;
    *target++ = '\0';
    char *version = strchr(target, ' ');
    if (!version)
        return 400;
    *version++ = '\0';
    if (strlen(method) >= sizeof rq->method || strlen(target) >= 500 || target[0] != '/')
        return 400;
    if (strcmp(version, "HTTP/1.1") == 0)
        rq->keep_alive = 1;
    else if (strcmp(version, "HTTP/1.0") != 0)
        return 400;
    snprintf(rq->method, sizeof rq->method, "%s", method);
    char *q = strchr(target, '?');
    if (q) {
        *q++ = '\0';
        snprintf(rq->query, sizeof rq->query, "%s", q);
    }
    snprintf(rq->path, sizeof rq->path, "%s", target);
    snprintf(rq->label, sizeof rq->label, "%s %s", rq->method, rq->path);

    for (char *h = line_end ? line_end + 2 : NULL; h && *h;) {
        char *next = strstr(h, "\r\n");
        if (next) {
            *next = '\0';
            next += 2;
        }
        char *colon = strchr(h, ':');
        if (colon) {
            *colon = '\0';
            char *value = colon + 1;
            while (*value == ' ' || *value == '\t')
                value++;
            if (strcasecmp(h, "Content-Length") == 0) {
                if (app_parse_uint(value, 0, ~0ull, &rq->content_length) < 0)
                    return 400;
                if (rq->content_length > FRONTEND_BODY_MAX)
                    return 413;
            } else if (strcasecmp(h, "Transfer-Encoding") == 0) {
                return 501;
            } else if (strcasecmp(h, "Connection") == 0) {
                if (strcasestr(value, "close"))
                    rq->keep_alive = 0;
                else if (strcasestr(value, "keep-alive"))
                    rq->keep_alive = 1;
            }
        }
        h = next;
    }
    return 0;
}

static void frontend_route(struct frontend *fe, unsigned worker, const struct frontend_request *rq,
                           uint64_t id, struct frontend_reply *r)
{
    struct frontend_worker *w = &fe->worker_state[worker];
    const char *p = rq->path;
    int known = !strcmp(p, "/cpu") || !strcmp(p, "/file") || !strcmp(p, "/log") ||
                !strcmp(p, "/db") || !strcmp(p, "/fanout") || !strcmp(p, "/static");
    if (!known) {
        r->status = 404;
        frontend_reply_printf(r, "no page %s\n", p);
    } else if (strcmp(rq->method, "GET") != 0) {
        r->status = 405;
        frontend_reply_printf(r, "only GET is served\n");
    } else if (!strcmp(p, "/cpu"))
        frontend_page_cpu(fe, rq, id, r);
    else if (!strcmp(p, "/file"))
        frontend_page_file(fe, w, id, r);
    else if (!strcmp(p, "/log"))
        frontend_page_log(fe, worker, id, r);
    else if (!strcmp(p, "/db"))
        frontend_page_db(w, rq, id, r);
    else if (!strcmp(p, "/fanout"))
        frontend_page_fanout(fe, rq, id, r);
    else {
        memcpy(r->body, fe->static_page, fe->static_len);
        r->len = fe->static_len;
    }
}

/* Sends head + body from the worker's buffer in one write. *end_ns is taken just
 * before that write, so the client's receive is causally after it (README.md). */
static int frontend_send(int fd, struct frontend_reply *r, uint64_t id, int keep_alive,
                         uint64_t *end_ns)
{
    char head[FRONTEND_RESPONSE_ROOM];
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                     "X-Request-Id: %llu\r\nConnection: %s\r\n\r\n",
                     r->status, frontend_status_text(r->status),
                     r->status == 200 && r->len && r->body[0] == '<' ? "text/html" : "text/plain",
                     r->len, (unsigned long long)id, keep_alive ? "keep-alive" : "close");
    char *start = r->body - n;
    memcpy(start, head, (size_t)n);
    if (end_ns)
        *end_ns = app_now_ns();
    return app_write_all(fd, start, (size_t)n + r->len);
}

static void frontend_serve(int fd, unsigned worker, void *ctx)
{
    struct frontend *fe = ctx;
    struct frontend_worker *w = &fe->worker_state[worker];
    char buf[FRONTEND_HEAD_MAX + 1];
    size_t have = 0;
    /* Reads inside a request must not hang a worker forever on a stalled client. */
    struct timeval tv = {.tv_sec = 10};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);

    for (unsigned served = 0;; served++) {
        if (have == 0) {
            /* Idle keep-alive connection: wait for the next request, bounded. */
            struct pollfd pfd = {.fd = fd, .events = POLLIN};
            int ready;
            do
                ready = poll(&pfd, 1, (int)fe->keepalive_ms);
            while (ready < 0 && errno == EINTR);
            if (ready <= 0)
                return;
        }
        uint64_t start_ns = have ? app_now_ns() : 0;
        char *head_end;
        while (!(head_end = memmem(buf, have, "\r\n\r\n", 4))) {
            if (have == FRONTEND_HEAD_MAX) {
                struct frontend_reply r = {.status = 431,
                                           .body = w->response + FRONTEND_RESPONSE_ROOM};
                frontend_reply_printf(&r, "request head longer than %d bytes\n", FRONTEND_HEAD_MAX);
                frontend_send(fd, &r, 0, 0, NULL);
                return;
            }
            ssize_t n = recv(fd, buf + have, FRONTEND_HEAD_MAX - have, 0);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                return; /* closed (between requests or mid-head), or timed out */
            if (!start_ns)
                start_ns = app_now_ns();
            have += (size_t)n;
        }
        size_t head_len = (size_t)(head_end - buf) + 4;
        struct frontend_request rq;
        struct frontend_reply r = {.status = 200, .body = w->response + FRONTEND_RESPONSE_ROOM};
        int bad = frontend_parse_head(buf, head_len, &rq);

        /* Discard a request body: pages take no input beyond the query string. */
        size_t body_have =
            have - head_len < rq.content_length ? have - head_len : (size_t)rq.content_length;
        unsigned long long body_left = bad ? 0 : rq.content_length - body_have;
        size_t consumed = head_len + (bad ? 0 : body_have);
        memmove(buf, buf + consumed, have - consumed);
        have -= consumed;
        while (body_left > 0) {
            char sink[4096];
            ssize_t n = recv(fd, sink, body_left < sizeof sink ? body_left : sizeof sink, 0);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                return;
            body_left -= (unsigned long long)n;
        }

        uint64_t id = atomic_fetch_add(&fe->next_id, 1);
        int keep_alive = !bad && rq.keep_alive && served + 1 < fe->max_keepalive_requests;
        if (bad) {
            r.status = bad;
            snprintf(rq.label, sizeof rq.label, "BAD -");
            frontend_reply_printf(&r, "malformed request (%s)\n", frontend_status_text(bad));
        } else {
            frontend_route(fe, worker, &rq, id, &r);
        }
        uint64_t end_ns = 0;
        int sent = frontend_send(fd, &r, id, keep_alive, &end_ns);
        struct side_log_entry entry = {.id = id,
                                       .label = rq.label,
                                       .start_ns = start_ns,
                                       .end_ns = end_ns,
                                       .nested_count = r.nested_count};
        memcpy(entry.nested_ids, r.nested_ids, sizeof entry.nested_ids);
        if (sent == 0)
            side_log_record(fe->side_log, worker, &entry);
        if (sent < 0 || !keep_alive)
            return;
    }
}

static void frontend_thread_start(unsigned worker, void *ctx)
{
    (void)worker;
    (void)ctx;
    mysql_thread_init();
}

static void frontend_thread_stop(unsigned worker, void *ctx)
{
    struct frontend *fe = ctx;
    app_db_conn_free(fe->worker_state[worker].db);
    fe->worker_state[worker].db = NULL;
    mysql_thread_end();
}

static const char frontend_usage[] =
    "usage: frontend --data-dir DIR [options]\n"
    "  --port N              TCP port (default 8080, 0 = any free port)\n"
    "  --bind HOST           address to listen on (default 127.0.0.1)\n"
    "  --port-file FILE      write the bound port to FILE once listening\n"
    "  --workers N           worker threads (default 8)\n"
    "  --app-tier HOST:PORT  app tier for /fanout\n"
    "  --app-conns N         pooled connections to the app tier (default 4)\n"
    "  --data-dir DIR        files for /file, /log and /static (created when missing)\n"
    "  --side-log FILE       write one line per served request to FILE\n"
    "  --cpu-ms N            default CPU time of /cpu in milliseconds (default 3)\n"
    "  --log-cpu-us N        CPU time inside the /log critical section (default 200)\n"
    "  --keepalive-ms N      close idle keep-alive connections after N ms (default 2000)\n"
    "  --max-keepalive-requests N  requests per connection before closing (default 1000)\n";

static int frontend_parse_args(struct frontend *fe, int argc, char **argv, const char **side_log)
{
    static const struct option options[] = {
        {"port", required_argument, NULL, 'p'},
        {"bind", required_argument, NULL, 'b'},
        {"port-file", required_argument, NULL, 'P'},
        {"workers", required_argument, NULL, 'w'},
        {"app-tier", required_argument, NULL, 'a'},
        {"app-conns", required_argument, NULL, 'c'},
        {"data-dir", required_argument, NULL, 'd'},
        {"side-log", required_argument, NULL, 's'},
        {"cpu-ms", required_argument, NULL, 'C'},
        {"log-cpu-us", required_argument, NULL, 'L'},
        {"keepalive-ms", required_argument, NULL, 'k'},
        {"max-keepalive-requests", required_argument, NULL, 'm'},
        {"db-socket", required_argument, NULL, 0},
        {"db-host", required_argument, NULL, 0},
        {"db-port", required_argument, NULL, 0},
        {"db-user", required_argument, NULL, 0},
        {"db-password", required_argument, NULL, 0},
        {"db-name", required_argument, NULL, 0},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int opt, index;
    unsigned long long v;
    while ((opt = getopt_long(argc, argv, "", options, &index)) != -1) {
        const char *name = opt == 0 ? options[index].name : NULL;
        int ok = 1;
        switch (opt) {
        case 0:
            ok = app_db_config_option(&fe->db, name, optarg) == 1;
            break;
        case 'p':
            ok = app_parse_uint(optarg, 0, 65535, &v) == 0;
            fe->port = (unsigned)v;
            break;
        case 'b':
            fe->bind_host = optarg;
            break;
        case 'P':
            fe->port_file = optarg;
            break;
        case 'w':
            ok = app_parse_uint(optarg, 1, 1024, &v) == 0;
            fe->workers = (unsigned)v;
            break;
        case 'a':
            ok = app_parse_host_port(optarg, fe->app_host, sizeof fe->app_host, &fe->app_port) == 0;
            break;
        case 'c':
            ok = app_parse_uint(optarg, 1, 256, &v) == 0;
            fe->app_conns = (unsigned)v;
            break;
        case 'd':
            fe->data_dir = optarg;
            break;
        case 's':
            *side_log = optarg;
            break;
        case 'C':
            ok = app_parse_uint(optarg, 0, 1000, &v) == 0;
            fe->cpu_ms = (unsigned)v;
            break;
        case 'L':
            ok = app_parse_uint(optarg, 0, 1000000, &v) == 0;
            fe->log_cpu_us = (unsigned)v;
            break;
        case 'k':
            ok = app_parse_uint(optarg, 1, 3600000, &v) == 0;
            fe->keepalive_ms = (unsigned)v;
            break;
        case 'm':
            ok = app_parse_uint(optarg, 1, 1000000000, &v) == 0;
            fe->max_keepalive_requests = (unsigned)v;
            break;
        case 'h':
            fputs(frontend_usage, stdout);
            fputs(app_db_usage, stdout);
            exit(0);
        default:
            fprintf(stderr, "%s%s", frontend_usage, app_db_usage);
            return -1;
        }
        if (!ok) {
            fprintf(stderr, "frontend: bad value for --%s: '%s'\n",
                    name ? name : options[index].name, optarg);
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "frontend: unexpected argument '%s'\n", argv[optind]);
        return -1;
    }
    if (!fe->data_dir) {
        fprintf(stderr, "frontend: --data-dir is required\n");
        return -1;
    }
    return 0;
}

/* Opens the data files (creating deterministic ones when missing). */
static int frontend_open_data(struct frontend *fe, char *err, size_t err_cap)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/input.dat", fe->data_dir);
    if (app_work_ensure_file(path, FRONTEND_INPUT_SIZE, err, err_cap) < 0)
        return -1;
    fe->input_fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fe->input_fd < 0) {
        snprintf(err, err_cap, "%s: %s", path, strerror(errno));
        return -1;
    }
    snprintf(path, sizeof path, "%s/shared.log", fe->data_dir);
    fe->shared_log_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fe->shared_log_fd < 0) {
        snprintf(err, err_cap, "%s: %s", path, strerror(errno));
        return -1;
    }
    /* The static page: fixed markup, the same bytes on every run. */
    size_t cap = 8192;
    fe->static_page = malloc(cap);
    if (!fe->static_page) {
        snprintf(err, err_cap, "static page: out of memory");
        return -1;
    }
    size_t len = (size_t)snprintf(fe->static_page, cap,
                                  "<!doctype html>\n<html><head><title>preplay sample</title>"
                                  "</head><body>\n<h1>preplay sample application</h1>\n<ul>\n");
    for (int i = 1; i <= 40; i++)
        len += (size_t)snprintf(fe->static_page + len, cap - len,
                                "<li><a href=\"/db?key=%d\">customer %d</a></li>\n", i, i);
    len += (size_t)snprintf(fe->static_page + len, cap - len, "</ul>\n</body></html>\n");
    fe->static_len = len;
    for (unsigned i = 0; i < fe->workers; i++) {
        struct frontend_worker *w = &fe->worker_state[i];
        snprintf(path, sizeof path, "%s/out-%u.dat", fe->data_dir, i);
        w->out_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (w->out_fd < 0) {
            snprintf(err, err_cap, "%s: %s", path, strerror(errno));
            return -1;
        }
        w->db = app_db_conn_new(&fe->db);
        if (!w->db) {
            snprintf(err, err_cap, "db connection state: out of memory");
            return -1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct frontend fe = {
        .bind_host = "127.0.0.1",
        .port = 8080,
        .workers = 8,
        .keepalive_ms = 2000,
        .max_keepalive_requests = 1000,
        .cpu_ms = 3,
        .log_cpu_us = 200,
        .app_conns = 4,
        .input_fd = -1,
        .shared_log_fd = -1,
    };
    const char *side_log_path = NULL;
    char err[8192];
    int status = 1;
    atomic_init(&fe.next_id, 1);
    pthread_mutex_init(&fe.shared_log_mutex, NULL);
    if (frontend_parse_args(&fe, argc, argv, &side_log_path) < 0)
        return 2;
    if (mysql_library_init(0, NULL, NULL) != 0) {
        fprintf(stderr, "frontend: mysql_library_init failed\n");
        return 1;
    }
    fe.worker_state = calloc(fe.workers, sizeof *fe.worker_state);
    if (!fe.worker_state) {
        fprintf(stderr, "frontend: out of memory\n");
        goto out;
    }
    for (unsigned i = 0; i < fe.workers; i++)
        fe.worker_state[i].out_fd = -1;
    if (frontend_open_data(&fe, err, sizeof err) < 0) {
        fprintf(stderr, "frontend: %s\n", err);
        goto out;
    }
    if (side_log_path) {
        fe.side_log = side_log_open(side_log_path, "frontend", fe.workers, err, sizeof err);
        if (!fe.side_log) {
            fprintf(stderr, "frontend: %s\n", err);
            goto out;
        }
    }
    if (fe.app_port) {
        fe.app = app_client_pool_new(fe.app_host, fe.app_port, fe.app_conns);
        if (!fe.app) {
            fprintf(stderr, "frontend: app tier pool: out of memory\n");
            goto out;
        }
    }

    struct worker_pool_hooks hooks = {.serve = frontend_serve,
                                      .thread_start = frontend_thread_start,
                                      .thread_stop = frontend_thread_stop,
                                      .ctx = &fe};
    if (worker_pool_serve("frontend", fe.bind_host, fe.port, fe.port_file, fe.workers, &hooks) < 0)
        goto out;
    fprintf(stderr, "frontend: served %llu requests\n",
            (unsigned long long)atomic_load(&fe.next_id) - 1);
    status = 0;
out:
    app_client_pool_free(fe.app);
    if (side_log_close(fe.side_log) < 0) {
        fprintf(stderr, "frontend: writing side log %s failed\n", side_log_path);
        status = 1;
    }
    for (unsigned i = 0; fe.worker_state && i < fe.workers; i++) {
        app_db_conn_free(fe.worker_state[i].db);
        if (fe.worker_state[i].out_fd >= 0)
            close(fe.worker_state[i].out_fd);
    }
    free(fe.worker_state);
    free(fe.static_page);
    if (fe.input_fd >= 0)
        close(fe.input_fd);
    if (fe.shared_log_fd >= 0)
        close(fe.shared_log_fd);
    pthread_mutex_destroy(&fe.shared_log_mutex);
    mysql_library_end();
    return status;
}
