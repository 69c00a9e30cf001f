/* apptier.c - the sample application's app tier: a separate process speaking the
 * length-prefixed protocol of app_proto.h over persistent TCP connections, served
 * by its own dispatcher and worker pool (worker_pool.c). Each request does real
 * work: CPU, a file read and a DB query. It logs one side-log line per request
 * with the id and parent id the front end sent (README.md). It must never invent
 * request ids: they come from the front end only. */
#include "app_db.h"
#include "app_net.h"
#include "app_proto.h"
#include "app_work.h"
#include "side_log.h"
#include "worker_pool.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <mysql.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define APPTIER_INPUT_SIZE (2u << 20)
#define APPTIER_PRODUCTS 500 /* rows in schema.sql */

struct apptier {
    const char *data_dir;
    const char *bind_host;
    unsigned port;
    const char *port_file;
    unsigned workers;
    unsigned lookup_us, render_us;
    struct app_db_config db;
    struct side_log *side_log;
    int input_fd;
    struct app_db_conn **db_conns; /* per worker */
};

/* Does the work of one request; the payload goes into out. 0 or -1 (out holds the
 * reason then). */
static int apptier_handle(struct apptier *at, unsigned worker, const struct app_proto_request *req,
                          char *out, size_t out_cap, size_t *out_len)
{
    int render = req->op == APP_OP_RENDER;
    size_t read_size = render ? 16384 : 4096;
    char block[16384];
    off_t off = (off_t)(req->key % (APPTIER_INPUT_SIZE / read_size)) * (off_t)read_size;
    ssize_t got = pread(at->input_fd, block, read_size, off);
    if (got != (ssize_t)read_size) {
        *out_len = (size_t)snprintf(out, out_cap, "app-input.dat: read at offset %lld: %s",
                                    (long long)off, got < 0 ? strerror(errno) : "short read");
        return -1;
    }
    uint64_t sum = app_work_checksum(block, read_size);
    uint64_t cpu_us = render ? at->render_us : at->lookup_us;
    uint64_t result = app_work_cpu(sum ^ req->key, cpu_us * APP_WORK_ITERATIONS_PER_MS / 1000);

    char sql[256];
    unsigned product = req->key % APPTIER_PRODUCTS + 1;
    if (render)
        snprintf(sql, sizeof sql,
                 "SELECT COUNT(*), COALESCE(SUM(quantity), 0) FROM orders WHERE product_id = %u",
                 product);
    else
        snprintf(sql, sizeof sql, "SELECT id, name, category, price FROM products WHERE id = %u",
                 product);
    size_t len = (size_t)snprintf(out, out_cap,
                                  "key=%u read=%zu@%lld checksum=%016llx "
                                  "cpu=%016llx db=",
                                  req->key, read_size, (long long)off, (unsigned long long)sum,
                                  (unsigned long long)result);
    char err[512];
    if (app_db_query(at->db_conns[worker], sql, out, out_cap, &len, err, sizeof err) < 0) {
        *out_len = (size_t)snprintf(out, out_cap, "%s", err);
        return -1;
    }
    *out_len = len;
    return 0;
}

static void apptier_serve(int fd, unsigned worker, void *ctx)
{
    struct apptier *at = ctx;
    static _Thread_local char payload[APP_PROTO_MAX_PAYLOAD];
    for (;;) {
        struct app_proto_request req;
        uint64_t start_ns = 0;
        int rc = app_proto_read_request(fd, &req, &start_ns);
        if (rc == 0)
            return; /* the front end closed its pooled connection */
        if (rc < 0) {
            if (errno == EPROTO)
                fprintf(stderr, "apptier: malformed frame from the front end, closing\n");
            return;
        }
        const char *label = app_proto_op_name(req.op);
        size_t len = 0;
        int ok;
        if (!label) {
            len = (size_t)snprintf(payload, sizeof payload, "unknown op %u", req.op);
            ok = -1;
            label = "unknown";
        } else {
            ok = apptier_handle(at, worker, &req, payload, sizeof payload, &len);
        }
        uint64_t end_ns = app_now_ns(); /* before the send: see README.md */
        if (app_proto_write_response(fd, ok == 0 ? APP_STATUS_OK : APP_STATUS_ERROR, req.request_id,
                                     payload, len) < 0)
            return;
        struct side_log_entry entry = {.id = req.request_id,
                                       .parent_id = req.parent_id,
                                       .label = label,
                                       .start_ns = start_ns,
                                       .end_ns = end_ns};
        side_log_record(at->side_log, worker, &entry);
    }
}

static void apptier_thread_start(unsigned worker, void *ctx)
{
    (void)worker;
    (void)ctx;
    mysql_thread_init();
}

static void apptier_thread_stop(unsigned worker, void *ctx)
{
    struct apptier *at = ctx;
    app_db_conn_free(at->db_conns[worker]);
    at->db_conns[worker] = NULL;
    mysql_thread_end();
}

static const char apptier_usage[] =
    "usage: apptier --data-dir DIR [options]\n"
    "  --port N              TCP port (default 9090, 0 = any free port)\n"
    "  --bind HOST           address to listen on (default 127.0.0.1)\n"
    "  --port-file FILE      write the bound port to FILE once listening\n"
    "  --workers N           worker threads, at least the front end's --app-conns (default 4)\n"
    "  --data-dir DIR        where app-input.dat lives (created when missing)\n"
    "  --side-log FILE       write one line per served request to FILE\n"
    "  --lookup-us N         CPU time of a lookup in microseconds (default 500)\n"
    "  --render-us N         CPU time of a render in microseconds (default 1500)\n";

static int apptier_parse_args(struct apptier *at, int argc, char **argv, const char **side_log)
{
    static const struct option options[] = {
        {"port", required_argument, NULL, 'p'},
        {"bind", required_argument, NULL, 'b'},
        {"port-file", required_argument, NULL, 'P'},
        {"workers", required_argument, NULL, 'w'},
        {"data-dir", required_argument, NULL, 'd'},
        {"side-log", required_argument, NULL, 's'},
        {"lookup-us", required_argument, NULL, 'l'},
        {"render-us", required_argument, NULL, 'r'},
        {"db-socket", required_argument, NULL, 0},
        {"db-host", required_argument, NULL, 0},
        {"db-port", required_argument, NULL, 0},
        {"db-user", required_argument, NULL, 0},
        {"db-password", required_argument, NULL, 0},
        {"db-name", required_argument, NULL, 0},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int opt, index = 0;
    unsigned long long v;
    while ((opt = getopt_long(argc, argv, "", options, &index)) != -1) {
        int ok = 1;
        switch (opt) {
        case 0:
            ok = app_db_config_option(&at->db, options[index].name, optarg) == 1;
            break;
        case 'p':
            ok = app_parse_uint(optarg, 0, 65535, &v) == 0;
            at->port = (unsigned)v;
            break;
        case 'b':
            at->bind_host = optarg;
            break;
        case 'P':
            at->port_file = optarg;
            break;
        case 'w':
            ok = app_parse_uint(optarg, 1, 1024, &v) == 0;
            at->workers = (unsigned)v;
            break;
        case 'd':
            at->data_dir = optarg;
            break;
        case 's':
            *side_log = optarg;
            break;
        case 'l':
            ok = app_parse_uint(optarg, 0, 1000000, &v) == 0;
            at->lookup_us = (unsigned)v;
            break;
        case 'r':
            ok = app_parse_uint(optarg, 0, 1000000, &v) == 0;
            at->render_us = (unsigned)v;
            break;
        case 'h':
            fputs(apptier_usage, stdout);
            fputs(app_db_usage, stdout);
            exit(0);
        default:
            fprintf(stderr, "%s%s", apptier_usage, app_db_usage);
            return -1;
        }
        if (!ok) {
            fprintf(stderr, "apptier: bad value for an option: '%s'\n", optarg);
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "apptier: unexpected argument '%s'\n", argv[optind]);
        return -1;
    }
    if (!at->data_dir) {
        fprintf(stderr, "apptier: --data-dir is required\n");
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct apptier at = {
        .bind_host = "127.0.0.1",
        .port = 9090,
        .workers = 4,
        .lookup_us = 500,
        .render_us = 1500,
        .input_fd = -1,
    };
    const char *side_log_path = NULL;
    char err[8192];
    int status = 1;
    if (apptier_parse_args(&at, argc, argv, &side_log_path) < 0)
        return 2;
    if (mysql_library_init(0, NULL, NULL) != 0) {
        fprintf(stderr, "apptier: mysql_library_init failed\n");
        return 1;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/app-input.dat", at.data_dir);
    if (app_work_ensure_file(path, APPTIER_INPUT_SIZE, err, sizeof err) < 0) {
        fprintf(stderr, "apptier: %s\n", err);
        goto out;
    }
    at.input_fd = open(path, O_RDONLY | O_CLOEXEC);
    if (at.input_fd < 0) {
        fprintf(stderr, "apptier: %s: %s\n", path, strerror(errno));
        goto out;
    }
    at.db_conns = calloc(at.workers, sizeof *at.db_conns);
    if (!at.db_conns) {
        fprintf(stderr, "apptier: out of memory\n");
        goto out;
    }
    for (unsigned i = 0; i < at.workers; i++)
        if (!(at.db_conns[i] = app_db_conn_new(&at.db))) {
            fprintf(stderr, "apptier: out of memory\n");
            goto out;
        }
    if (side_log_path) {
        at.side_log = side_log_open(side_log_path, "apptier", at.workers, err, sizeof err);
        if (!at.side_log) {
            fprintf(stderr, "apptier: %s\n", err);
            goto out;
        }
    }

    struct worker_pool_hooks hooks = {.serve = apptier_serve,
                                      .thread_start = apptier_thread_start,
                                      .thread_stop = apptier_thread_stop,
                                      .ctx = &at};
    if (worker_pool_serve("apptier", at.bind_host, at.port, at.port_file, at.workers, &hooks) < 0)
        goto out;
    status = 0;
out:
    if (side_log_close(at.side_log) < 0) {
        fprintf(stderr, "apptier: writing side log %s failed\n", side_log_path);
        status = 1;
    }
    for (unsigned i = 0; at.db_conns && i < at.workers; i++)
        app_db_conn_free(at.db_conns[i]);
    free(at.db_conns);
    if (at.input_fd >= 0)
        close(at.input_fd);
    mysql_library_end();
    return status;
}
