/* analyze_bench_gen.c - the analyzer benchmark's helper program:
 *
 *   analyze_bench_gen gen DIR --events N [--conns C] [--workers W] [--seed S]
 *       writes a synthetic two-tier recording with the project's trace
 *       writer: DIR/frontend (host web1) and DIR/apptier (host app1). The
 *       front end has a dispatcher thread and W workers serving C keep-alive
 *       client connections (each closed after 20..200 requests and replaced);
 *       each request reads its request (sometimes in two receives), takes a
 *       session mutex, reads a static file, calls the app tier on the
 *       worker's pooled connection (nested call; the app tier queries the DB,
 *       appends to a log under a mutex, sometimes fsyncs), every fourth
 *       request calls an untraced cache (external call), and answers
 *       (sometimes in two sends). Events are written like the collector
 *       does, in 2 ms drain rounds, thread by thread. Stops after the request during which N
 *       events were reached and prints what the plan must contain:
 *       "requests R blocks B calls C externals X db_ops D events E".
 *   analyze_bench_gen decode DIR...
 *       decodes every *.trace under the directories (the baseline: the
 *       least any analysis of these files costs) and prints
 *       "events E seconds S events_per_s V".
 *   analyze_bench_gen rusage CMD [ARG...]
 *       runs CMD and prints "wall_s W user_s U sys_s S maxrss_kb M" on
 *       stderr after it (peak RSS of CMD from wait4).
 *
 * Deterministic for a seed. It never writes outside DIR. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "synth_trace.h"

#define GEN_MAX_WORKERS 256
#define GEN_LABELS 6
#define GEN_DRAIN_ROUND_NS 2000000ull

static uint64_t gen_rng(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

static uint64_t gen_between(uint64_t *s, uint64_t lo, uint64_t hi)
{
    return lo + gen_rng(s) % (hi - lo + 1);
}

struct gen_client {   /* one client connection slot of the front end */
    uint64_t ready;   /* when its next request arrives */
    uint64_t conn_id; /* 0 = not accepted yet */
    uint32_t left;    /* requests before it closes */
    uint32_t generation;
};

struct gen_state {
    uint64_t rng;
    struct synth_proc fe, app;
    struct synth_thread dispatcher, fw[GEN_MAX_WORKERS], aw[GEN_MAX_WORKERS];
    struct gen_client *clients;
    uint32_t *heap; /* client slots by ready time */
    uint32_t nclients, nworkers;
    uint32_t labels[GEN_LABELS], static_path[GEN_LABELS], log_path, query;
    uint64_t next_fe_conn;
    uint64_t log_size;
    uint64_t requests, externals;
    uint64_t round_end; /* events before this are written */
};

static struct synth_addr gen_addr(uint8_t a, uint8_t b, uint8_t c, uint8_t d, uint16_t port)
{
    struct synth_addr x = {{a, b, c, d}, port};
    return x;
}

/* conn ids in the front end: 1..W app-tier connections, W+1..2W cache
 * connections, then client connections; in the app tier: 1..W callers,
 * W+1..2W DB connections. */
static uint64_t gen_app_conn(uint32_t w)
{
    return 1 + w;
}
static uint64_t gen_aux_conn(const struct gen_state *g, uint32_t w)
{
    return 1 + g->nworkers + w;
}

static void gen_heap_down(struct gen_state *g, uint32_t i)
{
    for (;;) {
        uint32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < g->nclients && g->clients[g->heap[l]].ready < g->clients[g->heap[m]].ready)
            m = l;
        if (r < g->nclients && g->clients[g->heap[r]].ready < g->clients[g->heap[m]].ready)
            m = r;
        if (m == i)
            return;
        uint32_t t = g->heap[i];
        g->heap[i] = g->heap[m];
        g->heap[m] = t;
        i = m;
    }
}

static void gen_setup(struct gen_state *g, const char *dir, uint32_t conns, uint32_t workers)
{
    char fe_dir[4096], app_dir[4096];
    snprintf(fe_dir, sizeof fe_dir, "%s/frontend", dir);
    snprintf(app_dir, sizeof app_dir, "%s/apptier", dir);
    if ((mkdir(dir, 0755) && errno != EEXIST) || (mkdir(fe_dir, 0755) && errno != EEXIST) ||
        (mkdir(app_dir, 0755) && errno != EEXIST)) {
        fprintf(stderr, "analyze_bench_gen: %s: %s\n", dir, strerror(errno));
        exit(1);
    }
    synth_open(&g->fe, fe_dir, "frontend", "web1", "bench-web", 100, 0);
    synth_open(&g->app, app_dir, "apptier", "app1", "bench-app", 200, 0);
    static const char *const pages[GEN_LABELS] = {
        "GET /", "GET /cart", "POST /checkout", "GET /search", "GET /item", "GET /static/logo.png"};
    static const char *const files[GEN_LABELS] = {"/srv/www/index.html",    "/srv/www/cart.html",
                                                  "/srv/www/checkout.html", "/srv/www/search.html",
                                                  "/srv/www/item.html",     "/srv/www/logo.png"};
    for (int i = 0; i < GEN_LABELS; i++) {
        g->labels[i] = synth_string(&g->fe, pages[i]);
        g->static_path[i] = synth_string(&g->fe, files[i]);
    }
    g->log_path = synth_string(&g->app, "/var/log/app/orders.log");
    g->query = synth_string(&g->app, "SELECT id, price FROM items WHERE id = ?");
    g->nworkers = workers;
    g->nclients = conns;
    g->clients = calloc(conns, sizeof *g->clients);
    g->heap = calloc(conns, sizeof *g->heap);
    if (!g->clients || !g->heap)
        synth_die("clients", "out of memory");
    uint64_t t0 = 2000000000ull;
    synth_thread_init(&g->dispatcher, &g->fe, 100, t0);
    struct synth_addr fe_local = gen_addr(10, 0, 0, 1, 0), app = gen_addr(10, 0, 0, 2, 9000);
    struct synth_addr cache = gen_addr(10, 0, 0, 9, 11211), db = gen_addr(10, 0, 0, 3, 3306);
    for (uint32_t w = 0; w < workers; w++) {
        synth_thread_init(&g->fw[w], &g->fe, 101 + w, t0 + 1000 * w);
        synth_thread_init(&g->aw[w], &g->app, 201 + w, t0 + 1000 * w);
        /* the front-end worker's pooled connection to the app tier, served by
         * one app-tier worker (a thread per connection) */
        fe_local.port = (uint16_t)(30000 + w);
        synth_conn_tcp(&g->fw[w], TRACE_CONN_CONNECT, gen_app_conn(w), 20, &fe_local, &app);
        synth_idle(&g->aw[w], 5000);
        synth_conn_tcp(&g->aw[w], TRACE_CONN_ACCEPT, gen_app_conn(w), 20, &app, &fe_local);
        fe_local.port = (uint16_t)(31000 + w);
        synth_conn_tcp(&g->fw[w], TRACE_CONN_CONNECT, gen_aux_conn(g, w), 21, &fe_local, &cache);
        struct synth_addr app_local = gen_addr(10, 0, 0, 2, (uint16_t)(32000 + w));
        synth_conn_tcp(&g->aw[w], TRACE_CONN_CONNECT, gen_aux_conn(g, w), 21, &app_local, &db);
        synth_db(&g->aw[w], TRACE_DB_CONNECT, gen_aux_conn(g, w), 0, 0, 150000);
    }
    g->next_fe_conn = 1 + 2 * (uint64_t)workers;
    for (uint32_t c = 0; c < conns; c++) {
        g->clients[c].ready = t0 + 1000000 + gen_between(&g->rng, 0, 10000000);
        g->clients[c].left = (uint32_t)gen_between(&g->rng, 20, 200);
        g->heap[c] = c;
    }
    for (uint32_t i = conns / 2 + 1; i-- > 0;)
        gen_heap_down(g, i);
}

/* The app tier serves one call of front-end worker w: returns when its
 * response's last byte was sent; *resp_bytes its size. */
static uint64_t gen_app_request(struct gen_state *g, uint32_t w, uint64_t arrives,
                                uint64_t req_bytes, uint64_t *resp_bytes)
{
    struct synth_thread *t = &g->aw[w];
    uint64_t *r = &g->rng;
    if (t->now < arrives)
        synth_idle(t, arrives - t->now);
    synth_net(t, TRACE_NET_RECV, gen_app_conn(w), (int64_t)req_bytes, 3000);
    synth_cpu(t, gen_between(r, 15000, 40000));
    uint64_t db = gen_aux_conn(g, w);
    synth_net(t, TRACE_NET_SEND, db, 96, 4000);
    synth_net(t, TRACE_NET_RECV, db, (int64_t)gen_between(r, 100, 600),
              gen_between(r, 80000, 300000));
    synth_db(t, TRACE_DB_QUERY, db, g->query, 1, 2000);
    synth_db(t, TRACE_DB_FETCH, db, 0, gen_between(r, 1, 20), 1500);
    synth_cpu(t, gen_between(r, 5000, 20000));
    synth_lock(t, TRACE_LOCK_ACQUIRE, 0x7f0000001000ull, 0, gen_between(r, 100, 3000));
    uint64_t n = gen_between(r, 80, 200);
    synth_file(t, TRACE_FILE_PWRITE, g->log_path, 5001, (int64_t)g->log_size, (int64_t)n,
               g->log_size, gen_between(r, 3000, 9000));
    g->log_size += n;
    synth_lock(t, TRACE_LOCK_RELEASE, 0x7f0000001000ull, 0, 200);
    if (gen_rng(r) % 16 == 0)
        synth_file(t, TRACE_FILE_FSYNC, g->log_path, 5001, -1, 0, g->log_size,
                   gen_between(r, 200000, 900000));
    synth_cpu(t, gen_between(r, 5000, 30000));
    *resp_bytes = gen_between(r, 500, 6000);
    synth_net(t, TRACE_NET_SEND, gen_app_conn(w), (int64_t)*resp_bytes, 6000);
    uint64_t end = t->now;
    synth_cpu(t, 2000); /* tail: back to the connection's read */
    return end;
}

static void gen_request(struct gen_state *g)
{
    uint64_t *r = &g->rng;
    uint32_t w = 0;
    for (uint32_t i = 1; i < g->nworkers; i++)
        if (g->fw[i].now < g->fw[w].now)
            w = i;
    struct synth_thread *t = &g->fw[w];
    uint32_t slot = g->heap[0];
    struct gen_client *c = &g->clients[slot];
    uint64_t start = c->ready > t->now ? c->ready : t->now;
    if (start - 100000 >= g->round_end + GEN_DRAIN_ROUND_NS) { /* the collector's 2 ms rounds */
        g->round_end = (start - 100000) / GEN_DRAIN_ROUND_NS * GEN_DRAIN_ROUND_NS;
        synth_flush_round(&g->fe, g->round_end);
        synth_flush_round(&g->app, g->round_end);
    }
    if (!c->conn_id) { /* the dispatcher accepts it just before */
        c->conn_id = g->next_fe_conn++;
        struct synth_addr local = gen_addr(10, 0, 0, 1, 8080);
        struct synth_addr remote = gen_addr(10, 1, (uint8_t)(slot >> 8), (uint8_t)slot,
                                            (uint16_t)(20000 + c->generation % 40000));
        if (g->dispatcher.now < start - 30000)
            synth_idle(&g->dispatcher, start - 30000 - g->dispatcher.now);
        synth_conn_tcp(&g->dispatcher, TRACE_CONN_ACCEPT, c->conn_id, 30, &local, &remote);
    }
    synth_idle(t, start - t->now);
    uint64_t req = gen_between(r, 300, 700);
    if (gen_rng(r) % 8 == 0) { /* the request in two receives */
        synth_net(t, TRACE_NET_RECV, c->conn_id, (int64_t)(req / 3), 3000);
        synth_net(t, TRACE_NET_RECV, c->conn_id, (int64_t)(req - req / 3), 12000);
    } else {
        synth_net(t, TRACE_NET_RECV, c->conn_id, (int64_t)req, 3000);
    }
    uint32_t page = (uint32_t)(gen_rng(r) % GEN_LABELS);
    synth_label(t, c->conn_id, g->labels[page]);
    synth_cpu(t, gen_between(r, 20000, 60000));
    synth_lock(t, TRACE_LOCK_ACQUIRE, 0x7f0000000040ull, 0, gen_between(r, 200, 2000));
    synth_cpu(t, 2000);
    synth_lock(t, TRACE_LOCK_RELEASE, 0x7f0000000040ull, 0, 150);
    synth_file(t, TRACE_FILE_PREAD, g->static_path[page], 1000 + page, 0, 8192, 8192,
               gen_between(r, 5000, 20000));
    synth_cpu(t, gen_between(r, 5000, 15000));
    /* nested call: request to the app tier, response in one or two receives */
    uint64_t call = gen_between(r, 200, 400), resp = 0;
    synth_net(t, TRACE_NET_SEND, gen_app_conn(w), (int64_t)call, 4000);
    uint64_t done = gen_app_request(g, w, t->now + 30000, call, &resp);
    uint64_t wait = done + 30000 - t->now;
    if (resp > 2048) {
        synth_net(t, TRACE_NET_RECV, gen_app_conn(w), 2048, wait);
        synth_net(t, TRACE_NET_RECV, gen_app_conn(w), (int64_t)(resp - 2048), 2000);
    } else {
        synth_net(t, TRACE_NET_RECV, gen_app_conn(w), (int64_t)resp, wait);
    }
    if (g->requests % 4 == 0) { /* an untraced cache: external call */
        synth_net(t, TRACE_NET_SEND, gen_aux_conn(g, w), 60, 3000);
        synth_net(t, TRACE_NET_RECV, gen_aux_conn(g, w), 200, gen_between(r, 50000, 150000));
        g->externals++;
    }
    synth_cpu(t, gen_between(r, 10000, 40000));
    uint64_t answer = gen_between(r, 2000, 16000);
    if (answer > 8192) {
        synth_net(t, TRACE_NET_SEND, c->conn_id, 8192, 8000);
        synth_net(t, TRACE_NET_SEND, c->conn_id, (int64_t)(answer - 8192), 8000);
    } else {
        synth_net(t, TRACE_NET_SEND, c->conn_id, (int64_t)answer, 8000);
    }
    uint64_t answered = t->now;
    synth_cpu(t, 3000); /* tail: access log formatting */
    g->requests++;
    if (--c->left == 0) { /* Connection: close, a new client takes the slot */
        synth_conn_end(t, TRACE_CONN_CLOSE, c->conn_id, 30);
        c->conn_id = 0;
        c->generation++;
        c->left = (uint32_t)gen_between(r, 20, 200);
    }
    c->ready = answered + gen_between(r, 2000000, 12000000);
    gen_heap_down(g, 0);
}

static int gen_main(int argc, char **argv)
{
    const char *dir = NULL;
    uint64_t events = 0, seed = 42;
    uint32_t conns = 400, workers = 16;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--events") && i + 1 < argc)
            events = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--conns") && i + 1 < argc)
            conns = (uint32_t)strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--workers") && i + 1 < argc)
            workers = (uint32_t)strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 10);
        else if (!dir && argv[i][0] != '-')
            dir = argv[i];
        else {
            fprintf(stderr, "analyze_bench_gen gen: unexpected argument '%s'\n", argv[i]);
            return 2;
        }
    }
    if (!dir || !events || !conns || !workers || workers > GEN_MAX_WORKERS) {
        fprintf(stderr, "usage: analyze_bench_gen gen DIR --events N [--conns C (>0)] "
                        "[--workers W (1..256)] [--seed S]\n");
        return 2;
    }
    struct gen_state *g = calloc(1, sizeof *g);
    if (!g)
        synth_die("state", "out of memory");
    g->rng = seed * 0x9e3779b97f4a7c15ull | 1;
    gen_setup(g, dir, conns, workers);
    while (g->fe.written + g->fe.n + g->app.written + g->app.n < events)
        gen_request(g);
    uint64_t total = g->fe.written + g->fe.n + g->app.written + g->app.n;
    synth_close(&g->fe);
    synth_close(&g->app);
    /* the strings are table entries, not events the analyzer counts */
    total -= 2 * GEN_LABELS + 2;
    printf("requests %" PRIu64 " blocks %" PRIu64 " calls %" PRIu64 " externals %" PRIu64
           " db_ops %" PRIu64 " events %" PRIu64 "\n",
           g->requests, 2 * g->requests, g->requests, g->externals, g->requests, total);
    free(g->clients);
    free(g->heap);
    free(g);
    return 0;
}

static int decode_dir(const char *dir, uint64_t *events)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "analyze_bench_gen decode: %s: %s\n", dir, strerror(errno));
        return -1;
    }
    struct dirent *de;
    int rc = 0;
    while (rc == 0 && (de = readdir(d))) {
        size_t len = strlen(de->d_name);
        if (len < 7 || strcmp(de->d_name + len - 6, ".trace"))
            continue;
        char path[4096], err[512];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        struct trace_reader *rd = trace_reader_open(path, NULL, err, sizeof err);
        if (!rd) {
            fprintf(stderr, "analyze_bench_gen decode: %s\n", err);
            rc = -1;
            break;
        }
        struct trace_event ev;
        int n;
        while ((n = trace_reader_next(rd, &ev)) > 0)
            if (ev.type != TRACE_EV_STRING && ev.type != TRACE_EV_STACK)
                (*events)++;
        if (n < 0) {
            fprintf(stderr, "analyze_bench_gen decode: %s\n", trace_reader_error(rd));
            rc = -1;
        }
        trace_reader_close(rd);
    }
    closedir(d);
    return rc;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int decode_main(int argc, char **argv)
{
    uint64_t events = 0;
    double t0 = now_s();
    for (int i = 2; i < argc; i++)
        if (decode_dir(argv[i], &events) != 0)
            return 1;
    double s = now_s() - t0;
    printf("events %" PRIu64 " seconds %.3f events_per_s %.0f\n", events, s,
           s > 0 ? (double)events / s : 0.0);
    return 0;
}

static int rusage_main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: analyze_bench_gen rusage CMD [ARG...]\n");
        return 2;
    }
    double t0 = now_s();
    pid_t pid = fork();
    if (pid < 0) {
        perror("analyze_bench_gen rusage: fork");
        return 1;
    }
    if (pid == 0) {
        execvp(argv[2], argv + 2);
        fprintf(stderr, "analyze_bench_gen rusage: %s: %s\n", argv[2], strerror(errno));
        _exit(127);
    }
    int status = 0;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) < 0) {
        perror("analyze_bench_gen rusage: wait4");
        return 1;
    }
    fprintf(stderr, "wall_s %.3f user_s %.3f sys_s %.3f maxrss_kb %ld\n", now_s() - t0,
            (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6,
            (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6, ru.ru_maxrss);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int main(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "gen"))
        return gen_main(argc, argv);
    if (argc >= 2 && !strcmp(argv[1], "decode"))
        return decode_main(argc, argv);
    if (argc >= 2 && !strcmp(argv[1], "rusage"))
        return rusage_main(argc, argv);
    fprintf(stderr, "usage: analyze_bench_gen gen DIR --events N [...] | decode DIR... | "
                    "rusage CMD [ARG...]\n");
    return 2;
}
