/* trace_cli.c - `preplay info` (summary of a trace file or directory, or of
 * a replay plan: requests and time per resource per label, coverage,
 * violations) and `preplay dump` (every event, one per line). Both stream
 * the trace through the reader, so they work on traces larger than memory;
 * info keeps only per-thread/file/connection/lock/query aggregates (a plan
 * is loaded whole, as the replayer loads it). Exit status: 0 ok,
 * 1 damaged or unreadable trace, 2 usage, 3 damaged but salvaged (output is
 * complete up to the damage). They must never print a partial summary as if
 * it were complete: damage is always reported on stderr. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "commands.h"
#include "plan.h"
#include "trace_file.h"
#include "trace_u64map.h"

#define CLI_EXIT_DAMAGED 1
#define CLI_EXIT_USAGE 2
#define CLI_EXIT_SALVAGED 3
#define CLI_TOP 10

/* ---- aggregates ---------------------------------------------------------- */

struct cli_counts {
    uint64_t by_type[TRACE_EV_TYPE_COUNT];
    uint64_t file_read, file_written, net_sent, net_received;
    uint64_t cpu_ns, lock_wait_ns, lost;
    uint64_t first_ts, last_ts;
};

#define CLI_MAX_EXECS 8

struct cli_thread {
    uint32_t tid;
    struct cli_counts c;
};

struct cli_file {
    uint64_t dev, ino;
    uint32_t path_id;
    uint64_t read, written, ops;
    char *path;
};

struct cli_conn {
    uint64_t conn_id;
    int have_ident;
    struct trace_conn_event ident;
    uint64_t sent, received, sends, recvs;
};

struct cli_lock {
    uint64_t lock_id;
    uint8_t kind;
    uint64_t acquires, contended, wait_ns, max_wait_ns;
};

struct cli_query {
    uint32_t query_id;
    uint64_t count;    /* executions: QUERY and EXECUTE events */
    uint64_t prepares; /* PREPARE events of the same text */
    uint64_t total_ns, rows, errors;
    char *text;
};

/* A growable array of T plus a u64 -> index map. */
#define CLI_TABLE(T)                                                                               \
    struct {                                                                                       \
        T *v;                                                                                      \
        size_t n, cap;                                                                             \
        struct trace_u64map index;                                                                 \
    }

struct cli_process {
    char *path;
    struct trace_header hdr;
    char *argv_copy;
    uint64_t bytes_on_disk, skipped;
    char *warning;
    struct cli_counts c;
    CLI_TABLE(struct cli_thread) threads;
    CLI_TABLE(struct cli_file) files;
    CLI_TABLE(struct cli_conn) conns;
    CLI_TABLE(struct cli_lock) locks;
    CLI_TABLE(struct cli_query) queries;
    /* images the process exec'd (CONTROL EXEC's path string ids), in order;
     * past CLI_MAX_EXECS the last slot keeps the newest */
    uint32_t exec_ids[CLI_MAX_EXECS];
    char *execs[CLI_MAX_EXECS];
    size_t nexecs;
};

static void *cli_xalloc(void *p)
{
    if (!p) {
        fprintf(stderr, "preplay: out of memory\n");
        exit(1);
    }
    return p;
}

/* Finds or adds the entry for key in table t (element type T, zeroed when
 * new); `match` decides when two entries share a hash key. */
#define CLI_TABLE_GET(t, key, out)                                                                 \
    do {                                                                                           \
        int ins_;                                                                                  \
        uint32_t *slot_ =                                                                          \
            cli_xalloc(trace_u64map_upsert(&(t)->index, (key), (uint32_t)(t)->n, &ins_));          \
        if (ins_) {                                                                                \
            if ((t)->n == (t)->cap) {                                                              \
                (t)->cap = (t)->cap ? (t)->cap * 2 : 16;                                           \
                (t)->v = cli_xalloc(realloc((t)->v, (t)->cap * sizeof *(t)->v));                   \
            }                                                                                      \
            memset(&(t)->v[(t)->n], 0, sizeof *(t)->v);                                            \
            (t)->n++;                                                                              \
        }                                                                                          \
        (out) = &(t)->v[*slot_];                                                                   \
    } while (0)

/* FILE ops whose result is bytes read from the file: sendfile's and
 * copy_file_range's records are their read side (the write is a record of
 * its own: a NET send, or a FILE write on the destination). */
static int cli_file_op_reads(uint8_t op)
{
    return op == TRACE_FILE_READ || op == TRACE_FILE_PREAD || op == TRACE_FILE_SENDFILE ||
           op == TRACE_FILE_COPY_RANGE;
}

static uint64_t cli_file_key(uint64_t dev, uint64_t ino)
{
    return ino * 0x9E3779B97F4A7C15ULL ^ dev;
}

/* Process p's entry of file (dev, ino), or NULL (probing as cli_aggregate
 * inserts). */
static const struct cli_file *cli_file_find(const struct cli_process *p, uint64_t dev, uint64_t ino)
{
    for (uint64_t key = cli_file_key(dev, ino);; key++) {
        const uint32_t *slot = trace_u64map_find(&p->files.index, key);
        if (!slot)
            return NULL;
        const struct cli_file *e = &p->files.v[*slot];
        if (e->dev == dev && e->ino == ino)
            return e;
    }
}

static void cli_count(struct cli_counts *c, const struct trace_event *ev)
{
    c->by_type[ev->type < TRACE_EV_TYPE_COUNT ? ev->type : 0]++;
    if (ev->type != TRACE_EV_STRING && ev->type != TRACE_EV_STACK && ev->ts_ns) {
        if (!c->first_ts || ev->ts_ns < c->first_ts)
            c->first_ts = ev->ts_ns;
        if (ev->ts_ns + ev->dur_ns > c->last_ts)
            c->last_ts = ev->ts_ns + ev->dur_ns;
    }
    switch (ev->type) {
    case TRACE_EV_CPU:
        c->cpu_ns += ev->dur_ns;
        break;
    case TRACE_EV_FILE:
        if (ev->u.file.result > 0) {
            if (cli_file_op_reads(ev->op))
                c->file_read += (uint64_t)ev->u.file.result;
            else if (ev->op == TRACE_FILE_WRITE || ev->op == TRACE_FILE_PWRITE)
                c->file_written += (uint64_t)ev->u.file.result;
        }
        break;
    case TRACE_EV_NET:
        if (ev->u.net.result > 0) {
            if (ev->op == TRACE_NET_SEND)
                c->net_sent += (uint64_t)ev->u.net.result;
            else if (ev->op == TRACE_NET_RECV)
                c->net_received += (uint64_t)ev->u.net.result;
        }
        break;
    case TRACE_EV_LOCK:
        if (ev->op != TRACE_LOCK_RELEASE)
            c->lock_wait_ns += ev->dur_ns;
        break;
    case TRACE_EV_LOSS:
        c->lost += ev->u.loss.count;
        break;
    default:
        break;
    }
}

static void cli_add_counts(struct cli_counts *to, const struct cli_counts *from)
{
    for (int i = 0; i < TRACE_EV_TYPE_COUNT; i++)
        to->by_type[i] += from->by_type[i];
    to->file_read += from->file_read;
    to->file_written += from->file_written;
    to->net_sent += from->net_sent;
    to->net_received += from->net_received;
    to->cpu_ns += from->cpu_ns;
    to->lock_wait_ns += from->lock_wait_ns;
    to->lost += from->lost;
    if (from->first_ts && (!to->first_ts || from->first_ts < to->first_ts))
        to->first_ts = from->first_ts;
    if (from->last_ts > to->last_ts)
        to->last_ts = from->last_ts;
}

static void cli_aggregate(struct cli_process *p, const struct trace_event *ev)
{
    cli_count(&p->c, ev);
    /* the tracer's record of an exec names the new image (the collector's,
     * when the image registered, has arg0 -1) */
    if (ev->type == TRACE_EV_CONTROL && ev->op == TRACE_CTL_EXEC && ev->u.control.arg0 > 0 &&
        ev->u.control.arg0 <= UINT32_MAX)
        p->exec_ids[p->nexecs < CLI_MAX_EXECS ? p->nexecs++ : CLI_MAX_EXECS - 1] =
            (uint32_t)ev->u.control.arg0;
    if (ev->type != TRACE_EV_STRING && ev->type != TRACE_EV_STACK && ev->type != TRACE_EV_LOSS &&
        !(ev->type == TRACE_EV_CONTROL && ev->op == TRACE_CTL_RING_WRAP)) {
        struct cli_thread *t;
        CLI_TABLE_GET(&p->threads, ev->tid, t);
        t->tid = ev->tid;
        cli_count(&t->c, ev);
    }
    switch (ev->type) {
    case TRACE_EV_FILE: {
        const struct trace_file_event *f = &ev->u.file;
        if (!f->dev && !f->ino)
            break;
        /* Probe past hash collisions: the key mixes dev and ino. */
        uint64_t key = cli_file_key(f->dev, f->ino);
        struct cli_file *e;
        for (;; key++) {
            CLI_TABLE_GET(&p->files, key, e);
            if ((!e->dev && !e->ino) || (e->dev == f->dev && e->ino == f->ino))
                break;
        }
        e->dev = f->dev;
        e->ino = f->ino;
        e->ops++;
        if (f->path_id && !e->path_id)
            e->path_id = f->path_id;
        if (f->result > 0 && cli_file_op_reads(ev->op))
            e->read += (uint64_t)f->result;
        if (f->result > 0 && (ev->op == TRACE_FILE_WRITE || ev->op == TRACE_FILE_PWRITE))
            e->written += (uint64_t)f->result;
        break;
    }
    case TRACE_EV_CONN: {
        struct cli_conn *c;
        if (!ev->u.conn.conn_id)
            break;
        CLI_TABLE_GET(&p->conns, ev->u.conn.conn_id, c);
        c->conn_id = ev->u.conn.conn_id;
        if (!c->have_ident && (ev->op == TRACE_CONN_ACCEPT || ev->op == TRACE_CONN_CONNECT ||
                               ev->op == TRACE_CONN_IDENT)) {
            c->ident = ev->u.conn;
            c->have_ident = 1;
        }
        break;
    }
    case TRACE_EV_NET: {
        struct cli_conn *c;
        CLI_TABLE_GET(&p->conns, ev->u.net.conn_id, c);
        c->conn_id = ev->u.net.conn_id;
        uint64_t done = ev->u.net.result > 0 ? (uint64_t)ev->u.net.result : 0;
        if (ev->op == TRACE_NET_SEND)
            c->sent += done, c->sends++;
        else
            c->received += done, c->recvs++;
        break;
    }
    case TRACE_EV_LOCK: {
        if (ev->op == TRACE_LOCK_RELEASE)
            break;
        struct cli_lock *l;
        CLI_TABLE_GET(&p->locks, ev->u.lock.lock_id, l);
        l->lock_id = ev->u.lock.lock_id;
        l->kind = ev->u.lock.kind;
        l->acquires++;
        l->wait_ns += ev->dur_ns;
        if (ev->dur_ns > l->max_wait_ns)
            l->max_wait_ns = ev->dur_ns;
        break;
    }
    case TRACE_EV_DB: {
        if (!ev->u.db.query_id ||
            (ev->op != TRACE_DB_QUERY && ev->op != TRACE_DB_EXECUTE && ev->op != TRACE_DB_PREPARE))
            break;
        struct cli_query *q;
        CLI_TABLE_GET(&p->queries, ev->u.db.query_id, q);
        q->query_id = ev->u.db.query_id;
        if (ev->op == TRACE_DB_PREPARE)
            q->prepares++;
        else
            q->count++;
        q->total_ns += ev->dur_ns;
        q->rows += ev->u.db.rows;
        q->errors += ev->u.db.error != 0;
        break;
    }
    default:
        break;
    }
}

static char *cli_strdup_or_null(const char *s)
{
    return s ? cli_xalloc(strdup(s)) : NULL;
}

/* Reads one trace into p. Returns 0, or CLI_EXIT_* on damage. */
static int cli_read_process(const char *path, int salvage, struct cli_process *p)
{
    memset(p, 0, sizeof *p);
    p->path = cli_xalloc(strdup(path));
    trace_u64map_init(&p->threads.index);
    trace_u64map_init(&p->files.index);
    trace_u64map_init(&p->conns.index);
    trace_u64map_init(&p->locks.index);
    trace_u64map_init(&p->queries.index);
    char err[1024];
    struct trace_reader_options o = {.salvage = salvage};
    struct trace_reader *r = trace_reader_open(path, &o, err, sizeof err);
    if (!r) {
        fprintf(stderr, "preplay: %s\n", err);
        return CLI_EXIT_DAMAGED;
    }
    p->hdr = *trace_reader_header(r);
    if (p->hdr.argv_joined) {
        p->argv_copy = cli_xalloc(malloc(p->hdr.argv_len + 1u));
        memcpy(p->argv_copy, p->hdr.argv_joined, p->hdr.argv_len + 1u);
    }
    p->hdr.argv_joined = p->argv_copy;
    p->bytes_on_disk = trace_reader_file_bytes(r);
    struct trace_event ev;
    int rc;
    while ((rc = trace_reader_next(r, &ev)) == 1)
        cli_aggregate(p, &ev);
    p->skipped = trace_reader_skipped(r);
    for (size_t i = 0; i < p->files.n; i++)
        p->files.v[i].path =
            cli_strdup_or_null(trace_reader_string(r, p->files.v[i].path_id, NULL));
    for (size_t i = 0; i < p->queries.n; i++)
        p->queries.v[i].text =
            cli_strdup_or_null(trace_reader_string(r, p->queries.v[i].query_id, NULL));
    for (size_t i = 0; i < p->nexecs; i++)
        p->execs[i] = cli_strdup_or_null(trace_reader_string(r, p->exec_ids[i], NULL));
    int status = 0;
    if (rc < 0) {
        fprintf(stderr, "preplay: %s\n", trace_reader_error(r));
        status = CLI_EXIT_DAMAGED;
    } else if (trace_reader_warning(r)) {
        p->warning = cli_xalloc(strdup(trace_reader_warning(r)));
        fprintf(stderr, "preplay: warning: %s (salvaged: events before the damage are kept)\n",
                p->warning);
        status = CLI_EXIT_SALVAGED;
    }
    trace_reader_close(r);
    return status;
}

/* A file one process opened and another used through an inherited
 * descriptor (nginx's access log: the master opens it, the worker writes
 * it) has its path only in the opener's trace: the others take it from
 * there (same host, device and inode). */
static void cli_paths_from_other_processes(struct cli_process *procs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < procs[i].files.n; k++) {
            struct cli_file *f = &procs[i].files.v[k];
            for (size_t j = 0; j < n && !f->path; j++) {
                if (j == i || strcmp(procs[j].hdr.host, procs[i].hdr.host) != 0)
                    continue;
                const struct cli_file *o = cli_file_find(&procs[j], f->dev, f->ino);
                if (o && o->path)
                    f->path = cli_xalloc(strdup(o->path));
            }
        }
    }
}

static void cli_free_process(struct cli_process *p)
{
    for (size_t i = 0; i < p->files.n; i++)
        free(p->files.v[i].path);
    for (size_t i = 0; i < p->queries.n; i++)
        free(p->queries.v[i].text);
    free(p->threads.v);
    free(p->files.v);
    free(p->conns.v);
    free(p->locks.v);
    free(p->queries.v);
    trace_u64map_free(&p->threads.index);
    trace_u64map_free(&p->files.index);
    trace_u64map_free(&p->conns.index);
    trace_u64map_free(&p->locks.index);
    trace_u64map_free(&p->queries.index);
    free(p->argv_copy);
    for (size_t i = 0; i < p->nexecs; i++)
        free(p->execs[i]);
    free(p->warning);
    free(p->path);
}

/* ---- sorting ------------------------------------------------------------- */

/* qsort that accepts an empty, NULL array (qsort itself must not get NULL). */
static void cli_sort(void *v, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    if (n > 1)
        qsort(v, n, size, cmp);
}

static int cli_cmp_u64_desc(uint64_t a, uint64_t b)
{
    return a < b ? 1 : a > b ? -1 : 0;
}
static int cli_cmp_thread(const void *a, const void *b)
{
    const struct cli_thread *x = a, *y = b;
    return x->tid < y->tid ? -1 : x->tid > y->tid;
}
static int cli_cmp_file(const void *a, const void *b)
{
    const struct cli_file *x = a, *y = b;
    int c = cli_cmp_u64_desc(x->read + x->written, y->read + y->written);
    return c ? c : cli_cmp_u64_desc(x->ops, y->ops);
}
static int cli_cmp_conn(const void *a, const void *b)
{
    const struct cli_conn *x = a, *y = b;
    int c = cli_cmp_u64_desc(x->sent + x->received, y->sent + y->received);
    return c ? c : (x->conn_id < y->conn_id ? -1 : x->conn_id > y->conn_id);
}
static int cli_cmp_lock(const void *a, const void *b)
{
    const struct cli_lock *x = a, *y = b;
    int c = cli_cmp_u64_desc(x->wait_ns, y->wait_ns);
    return c ? c : cli_cmp_u64_desc(x->acquires, y->acquires);
}
static int cli_cmp_query_time(const void *a, const void *b)
{
    const struct cli_query *x = a, *y = b;
    int c = cli_cmp_u64_desc(x->total_ns, y->total_ns);
    return c ? c : cli_cmp_u64_desc(x->count, y->count);
}
static int cli_cmp_query_count(const void *a, const void *b)
{
    const struct cli_query *x = a, *y = b;
    int c = cli_cmp_u64_desc(x->count, y->count);
    return c ? c : cli_cmp_u64_desc(x->total_ns, y->total_ns);
}

/* ---- rendering ------------------------------------------------------------- */

static const char *cli_proto_name(unsigned proto)
{
    static const char *const names[] = {"?", "tcp", "udp", "unix_stream", "unix_dgram"};
    return proto < 5 ? names[proto] : "?";
}

/* "1.2.3.4:80" / "[::1]:80" for the conn's family; "" when not IP. */
static void cli_format_endpoint(char *buf, size_t cap, unsigned family, const uint8_t addr[16],
                                uint16_t port)
{
    char a[INET6_ADDRSTRLEN] = "";
    if (family == AF_INET && inet_ntop(AF_INET, addr, a, sizeof a))
        snprintf(buf, cap, "%s:%u", a, port);
    else if (family == AF_INET6 && inet_ntop(AF_INET6, addr, a, sizeof a))
        snprintf(buf, cap, "[%s]:%u", a, port);
    else
        buf[0] = '\0';
}

static json_t *cli_json_str(const char *s)
{
    json_t *j = s ? json_string(s) : NULL;
    return j ? j : json_null();
}

static json_t *cli_json_counts_events(const struct cli_counts *c)
{
    json_t *o = json_object();
    for (unsigned t = 1; t < TRACE_EV_TYPE_COUNT; t++)
        json_object_set_new(o, trace_event_type_name(t), json_integer((json_int_t)c->by_type[t]));
    return o;
}

static void cli_json_counts(json_t *o, const struct cli_counts *c)
{
    json_object_set_new(o, "events", cli_json_counts_events(c));
    json_t *b = json_object();
    json_object_set_new(b, "file_read", json_integer((json_int_t)c->file_read));
    json_object_set_new(b, "file_written", json_integer((json_int_t)c->file_written));
    json_object_set_new(b, "net_sent", json_integer((json_int_t)c->net_sent));
    json_object_set_new(b, "net_received", json_integer((json_int_t)c->net_received));
    json_object_set_new(o, "bytes", b);
    json_object_set_new(
        o, "duration_ns",
        json_integer((json_int_t)(c->last_ts > c->first_ts ? c->last_ts - c->first_ts : 0)));
    json_object_set_new(o, "cpu_ns", json_integer((json_int_t)c->cpu_ns));
    json_object_set_new(o, "lock_wait_ns", json_integer((json_int_t)c->lock_wait_ns));
    json_object_set_new(o, "lost_events", json_integer((json_int_t)c->lost));
}

static json_t *cli_json_process(struct cli_process *p)
{
    json_t *o = json_object();
    const struct trace_header *h = &p->hdr;
    json_object_set_new(o, "file", cli_json_str(p->path));
    json_object_set_new(o, "pid", json_integer(h->pid));
    json_object_set_new(o, "ppid", json_integer(h->ppid));
    json_object_set_new(o, "exe", cli_json_str(h->exe));
    json_t *execs = json_array(); /* the trace keeps the first image's name */
    for (size_t i = 0; i < p->nexecs; i++)
        json_array_append_new(execs, cli_json_str(p->execs[i] ? p->execs[i] : "?"));
    json_object_set_new(o, "exec", execs);
    json_t *argv = json_array();
    for (uint32_t i = 0; h->argv_joined && i < h->argv_len;
         i += (uint32_t)strlen(h->argv_joined + i) + 1)
        json_array_append_new(argv, cli_json_str(h->argv_joined + i));
    json_object_set_new(o, "argv", argv);
    json_object_set_new(o, "component", cli_json_str(h->component));
    json_object_set_new(o, "host", cli_json_str(h->host));
    json_object_set_new(o, "recording_id", cli_json_str(h->recording_id));
    json_object_set_new(o, "tracer_version", cli_json_str(h->tracer_version));
    json_object_set_new(o, "format_version",
                        json_integer(h->version_major * 1000 + h->version_minor));
    json_object_set_new(o, "record_options", cli_json_str(h->record_options));
    json_object_set_new(o, "bytes_on_disk", json_integer((json_int_t)p->bytes_on_disk));
    json_object_set_new(o, "skipped_records", json_integer((json_int_t)p->skipped));
    json_object_set_new(o, "warning", cli_json_str(p->warning));
    cli_json_counts(o, &p->c);

    json_t *threads = json_array();
    cli_sort(p->threads.v, p->threads.n, sizeof *p->threads.v, cli_cmp_thread);
    for (size_t i = 0; i < p->threads.n; i++) {
        json_t *t = json_object();
        json_object_set_new(t, "tid", json_integer(p->threads.v[i].tid));
        cli_json_counts(t, &p->threads.v[i].c);
        json_array_append_new(threads, t);
    }
    json_object_set_new(o, "threads", threads);

    json_t *files = json_array();
    cli_sort(p->files.v, p->files.n, sizeof *p->files.v, cli_cmp_file);
    for (size_t i = 0; i < p->files.n && i < CLI_TOP; i++) {
        const struct cli_file *f = &p->files.v[i];
        json_t *j = json_object();
        json_object_set_new(j, "path", cli_json_str(f->path));
        json_object_set_new(j, "dev", json_integer((json_int_t)f->dev));
        json_object_set_new(j, "ino", json_integer((json_int_t)f->ino));
        json_object_set_new(j, "bytes_read", json_integer((json_int_t)f->read));
        json_object_set_new(j, "bytes_written", json_integer((json_int_t)f->written));
        json_object_set_new(j, "ops", json_integer((json_int_t)f->ops));
        json_array_append_new(files, j);
    }
    json_object_set_new(o, "top_files", files);

    json_t *conns = json_array();
    cli_sort(p->conns.v, p->conns.n, sizeof *p->conns.v, cli_cmp_conn);
    for (size_t i = 0; i < p->conns.n; i++) {
        const struct cli_conn *c = &p->conns.v[i];
        json_t *j = json_object();
        char ep[80];
        json_object_set_new(j, "conn_id", json_integer((json_int_t)c->conn_id));
        json_object_set_new(
            j, "proto", c->have_ident ? json_string(cli_proto_name(c->ident.proto)) : json_null());
        cli_format_endpoint(ep, sizeof ep, c->ident.family, c->ident.local_addr,
                            c->ident.local_port);
        json_object_set_new(j, "local", ep[0] ? json_string(ep) : json_null());
        cli_format_endpoint(ep, sizeof ep, c->ident.family, c->ident.remote_addr,
                            c->ident.remote_port);
        json_object_set_new(j, "remote", ep[0] ? json_string(ep) : json_null());
        if (c->ident.family == AF_UNIX) {
            json_object_set_new(j, "unix_inode", json_integer((json_int_t)c->ident.unix_inode));
            json_object_set_new(j, "unix_peer_inode",
                                json_integer((json_int_t)c->ident.unix_peer_inode));
        }
        json_object_set_new(j, "bytes_sent", json_integer((json_int_t)c->sent));
        json_object_set_new(j, "bytes_received", json_integer((json_int_t)c->received));
        json_object_set_new(j, "sends", json_integer((json_int_t)c->sends));
        json_object_set_new(j, "recvs", json_integer((json_int_t)c->recvs));
        json_array_append_new(conns, j);
    }
    json_object_set_new(o, "connections", conns);

    json_t *locks = json_array();
    cli_sort(p->locks.v, p->locks.n, sizeof *p->locks.v, cli_cmp_lock);
    for (size_t i = 0; i < p->locks.n && i < CLI_TOP; i++) {
        const struct cli_lock *l = &p->locks.v[i];
        json_t *j = json_object();
        json_object_set_new(j, "lock_id", json_integer((json_int_t)l->lock_id));
        json_object_set_new(j, "kind", json_integer(l->kind));
        json_object_set_new(j, "acquires", json_integer((json_int_t)l->acquires));
        json_object_set_new(j, "wait_ns", json_integer((json_int_t)l->wait_ns));
        json_object_set_new(j, "max_wait_ns", json_integer((json_int_t)l->max_wait_ns));
        json_array_append_new(locks, j);
    }
    json_object_set_new(o, "locks", locks);

    for (int pass = 0; pass < 2; pass++) {
        json_t *qs = json_array();
        cli_sort(p->queries.v, p->queries.n, sizeof *p->queries.v,
                 pass ? cli_cmp_query_count : cli_cmp_query_time);
        for (size_t i = 0; i < p->queries.n && i < CLI_TOP; i++) {
            const struct cli_query *q = &p->queries.v[i];
            json_t *j = json_object();
            json_object_set_new(j, "query", cli_json_str(q->text));
            json_object_set_new(j, "count", json_integer((json_int_t)q->count));
            json_object_set_new(j, "prepares", json_integer((json_int_t)q->prepares));
            json_object_set_new(j, "total_ns", json_integer((json_int_t)q->total_ns));
            json_object_set_new(j, "rows", json_integer((json_int_t)q->rows));
            json_object_set_new(j, "errors", json_integer((json_int_t)q->errors));
            json_array_append_new(qs, j);
        }
        json_object_set_new(o, pass ? "queries_by_count" : "queries_by_time", qs);
    }
    return o;
}

static void cli_print_counts(const char *indent, const struct cli_counts *c)
{
    printf("%sevents:", indent);
    for (unsigned t = 1; t < TRACE_EV_TYPE_COUNT; t++)
        if (c->by_type[t])
            printf(" %s=%" PRIu64, trace_event_type_name(t), c->by_type[t]);
    printf("\n%sduration %.3f s, cpu %.3f s, lock wait %.3f ms, lost %" PRIu64 "\n", indent,
           (c->last_ts > c->first_ts ? c->last_ts - c->first_ts : 0) / 1e9, c->cpu_ns / 1e9,
           c->lock_wait_ns / 1e6, c->lost);
    printf("%sfile read %" PRIu64 " B, written %" PRIu64 " B; net sent %" PRIu64
           " B, received %" PRIu64 " B\n",
           indent, c->file_read, c->file_written, c->net_sent, c->net_received);
}

static void cli_print_process(json_t *pj)
{
    /* Text rendering reads back the JSON so both views show the same data. */
    printf("%s: pid %" JSON_INTEGER_FORMAT " (ppid %" JSON_INTEGER_FORMAT ") %s",
           json_string_value(json_object_get(pj, "file")),
           json_integer_value(json_object_get(pj, "pid")),
           json_integer_value(json_object_get(pj, "ppid")),
           json_string_value(json_object_get(pj, "exe")));
    json_t *v;
    size_t i;
    json_array_foreach(json_object_get(pj, "exec"), i, v) printf(" -> %s", json_string_value(v));
    const char *comp = json_string_value(json_object_get(pj, "component"));
    if (comp && *comp)
        printf(" [%s]", comp);
    printf(" on %s, %" JSON_INTEGER_FORMAT " bytes on disk\n",
           json_string_value(json_object_get(pj, "host")),
           json_integer_value(json_object_get(pj, "bytes_on_disk")));
    const char *opts = json_string_value(json_object_get(pj, "record_options"));
    if (opts && *opts) /* what was left out of the trace */
        printf("  recorded with %s\n", opts);
}

static void cli_print_details(const struct cli_process *p, json_t *pj)
{
    cli_print_counts("  ", &p->c);
    for (size_t i = 0; i < p->threads.n; i++) {
        printf("  thread %u\n", p->threads.v[i].tid);
        cli_print_counts("    ", &p->threads.v[i].c);
    }
    json_t *a, *v;
    size_t i;
    if (json_array_size(a = json_object_get(pj, "top_files")))
        printf("  top files (by bytes):\n");
    json_array_foreach(a, i, v)
    {
        const char *path = json_string_value(json_object_get(v, "path"));
        printf("    %-40s read %" JSON_INTEGER_FORMAT " B, written %" JSON_INTEGER_FORMAT
               " B, %" JSON_INTEGER_FORMAT " ops\n",
               path ? path : "(path not in trace)",
               json_integer_value(json_object_get(v, "bytes_read")),
               json_integer_value(json_object_get(v, "bytes_written")),
               json_integer_value(json_object_get(v, "ops")));
    }
    if (json_array_size(a = json_object_get(pj, "connections")))
        printf("  connections:\n");
    json_array_foreach(a, i, v)
    {
        const char *l = json_string_value(json_object_get(v, "local"));
        const char *r = json_string_value(json_object_get(v, "remote"));
        const char *proto = json_string_value(json_object_get(v, "proto"));
        printf("    #%" JSON_INTEGER_FORMAT " %s",
               json_integer_value(json_object_get(v, "conn_id")), proto ? proto : "?");
        if (l || r)
            printf(" %s -> %s", l ? l : "?", r ? r : "?");
        if (json_object_get(v, "unix_inode"))
            printf(" inode %" JSON_INTEGER_FORMAT " peer %" JSON_INTEGER_FORMAT,
                   json_integer_value(json_object_get(v, "unix_inode")),
                   json_integer_value(json_object_get(v, "unix_peer_inode")));
        printf(": sent %" JSON_INTEGER_FORMAT " B, received %" JSON_INTEGER_FORMAT " B\n",
               json_integer_value(json_object_get(v, "bytes_sent")),
               json_integer_value(json_object_get(v, "bytes_received")));
    }
    if (json_array_size(a = json_object_get(pj, "locks")))
        printf("  locks (by time waited):\n");
    json_array_foreach(a, i, v)
    {
        printf("    0x%" PRIx64 ": %" JSON_INTEGER_FORMAT
               " acquires, waited %.3f ms (max %.3f ms)\n",
               (uint64_t)json_integer_value(json_object_get(v, "lock_id")),
               json_integer_value(json_object_get(v, "acquires")),
               json_integer_value(json_object_get(v, "wait_ns")) / 1e6,
               json_integer_value(json_object_get(v, "max_wait_ns")) / 1e6);
    }
    if (json_array_size(a = json_object_get(pj, "queries_by_time")))
        printf("  queries (by total time):\n");
    json_array_foreach(a, i, v)
    {
        const char *q = json_string_value(json_object_get(v, "query"));
        json_int_t prepares = json_integer_value(json_object_get(v, "prepares"));
        printf("    %6" JSON_INTEGER_FORMAT " x %9.3f ms  %.80s",
               json_integer_value(json_object_get(v, "count")),
               json_integer_value(json_object_get(v, "total_ns")) / 1e6, q ? q : "?");
        if (prepares)
            printf("  (prepared %" JSON_INTEGER_FORMAT "x)", prepares);
        printf("\n");
    }
}

/* ---- arguments ------------------------------------------------------------- */

struct cli_args {
    int json, salvage;
    const char *target;
};

static int cli_parse(int argc, char **argv, struct cli_args *a, const char *usage)
{
    memset(a, 0, sizeof *a);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            a->json = 1;
        else if (!strcmp(argv[i], "--salvage"))
            a->salvage = 1;
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("%s", usage);
            return 0;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "preplay %s: unknown option '%s' (see --help)\n", argv[0], argv[i]);
            return CLI_EXIT_USAGE;
        } else if (a->target) {
            fprintf(stderr, "preplay %s: one trace at a time ('%s' and '%s')\n", argv[0], a->target,
                    argv[i]);
            return CLI_EXIT_USAGE;
        } else
            a->target = argv[i];
    }
    if (!a->target) {
        fprintf(stderr, "preplay %s: missing trace (see --help)\n", argv[0]);
        return CLI_EXIT_USAGE;
    }
    return -1;
}

static int cli_cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The *.trace files of a directory (sorted), or the file itself. */
static char **cli_list_traces(const char *target, size_t *n, int *is_dir)
{
    struct stat st;
    *n = 0;
    *is_dir = 0;
    if (stat(target, &st) != 0) {
        fprintf(stderr, "preplay: %s: %s\n", target, strerror(errno));
        return NULL;
    }
    char **v = NULL;
    if (!S_ISDIR(st.st_mode)) {
        v = cli_xalloc(malloc(sizeof *v));
        v[(*n)++] = cli_xalloc(strdup(target));
        return v;
    }
    *is_dir = 1;
    DIR *d = opendir(target);
    if (!d) {
        fprintf(stderr, "preplay: %s: %s\n", target, strerror(errno));
        return NULL;
    }
    struct dirent *e;
    size_t cap = 0;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len <= 6 || strcmp(e->d_name + len - 6, ".trace") != 0)
            continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            v = cli_xalloc(realloc(v, cap * sizeof *v));
        }
        size_t plen = strlen(target) + len + 2;
        v[*n] = cli_xalloc(malloc(plen));
        snprintf(v[*n], plen, "%s/%s", target, e->d_name);
        (*n)++;
    }
    closedir(d);
    if (!*n) {
        fprintf(stderr, "preplay: %s: no *.trace files in this directory\n", target);
        free(v);
        return NULL;
    }
    cli_sort(v, *n, sizeof *v, cli_cmp_str);
    return v;
}

/* ---- info on a replay plan ------------------------------------------------- */

/* Time per resource type of a block, in ns (docs/preplay-info.md):
 * cpu = CPU ops' cpu_ns; file, lock, db = recorded_ns of those ops;
 * net = recorded_ns of RECV, SEND, SOCKOPT and EXTERNAL ops, plus for each
 * CALL the part of its recorded time not explained by the callee block's
 * recorded response time (max(0, call - callee)): the callee's own work is
 * counted through the callee block itself. */
enum { CLI_RES_CPU, CLI_RES_FILE, CLI_RES_NET, CLI_RES_LOCK, CLI_RES_DB, CLI_RES_COUNT };
static const char *const cli_res_keys[CLI_RES_COUNT] = {"cpu_s", "file_s", "net_s", "lock_s",
                                                        "db_s"};
static const char *const cli_res_names[CLI_RES_COUNT] = {"cpu", "file", "net", "lock", "db"};

struct cli_label {
    uint32_t label; /* string id */
    uint64_t requests;
    double ns[CLI_RES_COUNT];
};

static int cli_cmp_label(const void *a, const void *b)
{
    const struct cli_label *x = a, *y = b;
    if (x->requests != y->requests)
        return x->requests < y->requests ? 1 : -1;
    return x->label < y->label ? -1 : x->label > y->label;
}

/* Per block, the time of its own ops plus (recursively) of its callee
 * blocks. Callees always precede their callers (PLAN.md), so one forward
 * pass computes it. */
static double *cli_plan_block_resources(const struct plan *p)
{
    double *res = cli_xalloc(calloc((size_t)p->nblocks * CLI_RES_COUNT + 1, sizeof *res));
    for (uint32_t b = 0; b < p->nblocks; b++) {
        double *r = res + (size_t)b * CLI_RES_COUNT;
        const struct plan_block *blk = &p->blocks[b];
        for (uint32_t i = 0; i < blk->nops; i++) {
            const struct plan_op *o = &p->ops[blk->first_op + i];
            switch (o->kind) {
            case PLAN_OP_CPU:
                r[CLI_RES_CPU] += (double)o->a.cpu_ns;
                break;
            case PLAN_OP_FILE:
                r[CLI_RES_FILE] += (double)o->recorded_ns;
                break;
            case PLAN_OP_LOCK:
                r[CLI_RES_LOCK] += (double)o->recorded_ns;
                break;
            case PLAN_OP_DB:
                r[CLI_RES_DB] += (double)o->recorded_ns;
                break;
            case PLAN_OP_CALL: {
                uint32_t c = o->a.call.callee_block;
                const double *cr = res + (size_t)c * CLI_RES_COUNT;
                for (int k = 0; k < CLI_RES_COUNT; k++)
                    r[k] += cr[k];
                uint64_t callee = p->blocks[c].recorded_ns;
                if (o->recorded_ns > callee)
                    r[CLI_RES_NET] += (double)(o->recorded_ns - callee);
                break;
            }
            default: /* RECV, SEND, SOCKOPT, EXTERNAL */
                r[CLI_RES_NET] += (double)o->recorded_ns;
                break;
            }
        }
    }
    return res;
}

static const char *cli_plan_label(const struct plan *p, uint32_t id)
{
    return id ? plan_string(p, id) : "(no label)";
}

static json_t *cli_json_resources(const double ns[CLI_RES_COUNT], double divide)
{
    json_t *o = json_object();
    for (int k = 0; k < CLI_RES_COUNT; k++)
        json_object_set_new(o, cli_res_keys[k], json_real(divide > 0 ? ns[k] / 1e9 / divide : 0));
    return o;
}

static int cli_info_plan(const char *path, int as_json)
{
    char err[1024];
    struct plan *p = plan_read(path, err, sizeof err);
    if (!p) {
        fprintf(stderr, "preplay: %s\n", err);
        return CLI_EXIT_DAMAGED;
    }
    double *res = cli_plan_block_resources(p);
    uint32_t *slot = cli_xalloc(calloc(p->nstrings, sizeof *slot)); /* label id -> index + 1 */
    struct cli_label *labels = NULL;
    size_t nlabels = 0;
    for (uint64_t i = 0; i < p->nrequests; i++) {
        const struct plan_request *r = &p->requests[i];
        if (!slot[r->label]) {
            labels = cli_xalloc(realloc(labels, (nlabels + 1) * sizeof *labels));
            memset(&labels[nlabels], 0, sizeof *labels);
            labels[nlabels].label = r->label;
            slot[r->label] = (uint32_t)++nlabels;
        }
        struct cli_label *l = &labels[slot[r->label] - 1];
        l->requests++;
        for (int k = 0; k < CLI_RES_COUNT; k++)
            l->ns[k] += res[(size_t)r->block * CLI_RES_COUNT + k];
    }
    cli_sort(labels, nlabels, sizeof *labels, cli_cmp_label);
    uint32_t flagged = 0;
    for (uint32_t b = 0; b < p->nblocks; b++)
        flagged += (p->blocks[b].flags & PLAN_BLOCK_VIOLATION) != 0;
    const char *vtext = plan_string(p, p->violations_text);
    if (as_json) {
        json_t *o = json_object();
        json_object_set_new(o, "file", json_string(path));
        json_object_set_new(o, "format_version",
                            json_integer(p->version_major * 1000 + p->version_minor));
        json_object_set_new(o, "recording_id", cli_json_str(p->recording_id));
        json_object_set_new(o, "requests", json_integer((json_int_t)p->nrequests));
        json_object_set_new(o, "blocks", json_integer(p->nblocks));
        json_object_set_new(o, "ops", json_integer((json_int_t)p->nops));
        json_object_set_new(o, "violation_blocks", json_integer(flagged));
        json_t *lj = json_object(), *rj = json_object(), *mj = json_object();
        for (size_t i = 0; i < nlabels; i++) {
            const char *name = cli_plan_label(p, labels[i].label);
            json_object_set_new(lj, name, json_integer((json_int_t)labels[i].requests));
            json_object_set_new(rj, name, cli_json_resources(labels[i].ns, 1));
            json_object_set_new(mj, name,
                                cli_json_resources(labels[i].ns, (double)labels[i].requests));
        }
        json_object_set_new(o, "labels", lj);
        json_object_set_new(o, "coverage", json_real(p->coverage));
        json_object_set_new(o, "unmatched_bytes", json_integer((json_int_t)p->unmatched_bytes));
        json_object_set_new(o, "violations", json_integer(p->nviolations));
        json_object_set_new(o, "violations_text", json_string(vtext ? vtext : ""));
        json_object_set_new(o, "resources_by_label", rj);
        json_object_set_new(o, "resources_per_request_by_label", mj);
        json_t *cj = json_array();
        for (uint32_t i = 0; i < p->ncomponents; i++) {
            const struct plan_component *c = &p->components[i];
            json_t *x = json_object();
            json_object_set_new(x, "name", json_string(plan_string(p, c->name)));
            json_object_set_new(x, "host", json_string(plan_string(p, c->host)));
            json_object_set_new(x, "workers", json_integer(c->workers));
            json_object_set_new(x, "db_conns", json_integer(c->db_conns));
            json_object_set_new(x, "listen_port", json_integer(c->listen_port));
            json_object_set_new(x, "prefork", json_boolean(c->prefork));
            json_object_set_new(x, "frontend", json_boolean(c->is_frontend));
            json_array_append_new(cj, x);
        }
        json_object_set_new(o, "components", cj);
        json_object_set_new(o, "skipped_records", json_integer((json_int_t)p->skipped_records));
        json_dumpf(o, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        printf("\n");
        json_decref(o);
    } else {
        printf("plan %s: format %u.%u, recording %s\n", path, p->version_major, p->version_minor,
               p->recording_id[0] ? p->recording_id : "(none)");
        printf("%" PRIu64 " requests, %u blocks (%u flagged as violations), %" PRIu64
               " ops, %u components\n",
               p->nrequests, p->nblocks, flagged, p->nops, p->ncomponents);
        for (uint32_t i = 0; i < p->ncomponents; i++) {
            const struct plan_component *c = &p->components[i];
            printf("  %-16s on %s: %u %s, %u DB connections, port %u%s\n", plan_string(p, c->name),
                   plan_string(p, c->host), c->workers,
                   c->prefork ? "worker processes" : "worker threads", c->db_conns, c->listen_port,
                   c->is_frontend ? ", front end" : "");
        }
        printf("coverage %.2f%%, unmatched bytes %" PRIu64 ", violations %u\n", p->coverage * 100,
               p->unmatched_bytes, p->nviolations);
        if (nlabels)
            printf("time per resource by label: total seconds (mean ms per request)\n");
        for (size_t i = 0; i < nlabels; i++) {
            printf("  %-24s %8" PRIu64 " req", cli_plan_label(p, labels[i].label),
                   labels[i].requests);
            for (int k = 0; k < CLI_RES_COUNT; k++)
                printf("  %s %.6f (%.3f)", cli_res_names[k], labels[i].ns[k] / 1e9,
                       labels[i].ns[k] / 1e6 / (double)labels[i].requests);
            printf("\n");
        }
        if (vtext && vtext[0]) {
            printf("violations:\n  ");
            for (const char *c = vtext; *c; c++) { /* indent every line */
                if (*c != '\n')
                    putchar(*c);
                else if (c[1])
                    fputs("\n  ", stdout);
            }
            printf("\n");
        }
        if (p->skipped_records)
            printf("%" PRIu64 " records of a newer format minor version were skipped\n",
                   p->skipped_records);
    }
    free(labels);
    free(slot);
    free(res);
    plan_free(p);
    if (fflush(stdout) != 0)
        return CLI_EXIT_DAMAGED;
    return 0;
}

static const char cli_info_usage[] =
    "usage: preplay info [--json] [--salvage] TRACE|DIR|PLAN\n"
    "Summarize a trace file, or every *.trace file of a trace directory: per process\n"
    "and thread event counts by type, bytes, durations, losses, top files,\n"
    "connections, locks and queries. For a replay plan (from preplay analyze):\n"
    "requests and time per resource (cpu, file, net, lock, db) per label,\n"
    "coverage, unmatched bytes and model violations.\n"
    "  --json     machine-readable output (see docs/preplay-info.md)\n"
    "  --salvage  on damage, summarize what precedes it (exit status 3) instead of failing\n"
    "Exit: 0 ok, 1 damaged/unreadable trace, 2 usage, 3 damaged but salvaged.\n";

int cmd_info(int argc, char **argv)
{
    struct cli_args a;
    int rc = cli_parse(argc, argv, &a, cli_info_usage);
    if (rc >= 0)
        return rc;
    if (plan_file_probe(a.target) == 1) {
        if (a.salvage) {
            fprintf(stderr, "preplay info: --salvage applies to traces, not to plans\n");
            return CLI_EXIT_USAGE;
        }
        return cli_info_plan(a.target, a.json);
    }
    size_t n;
    int is_dir;
    char **files = cli_list_traces(a.target, &n, &is_dir);
    if (!files)
        return CLI_EXIT_DAMAGED;
    struct cli_process *procs = cli_xalloc(calloc(n, sizeof *procs));
    int status = 0;
    for (size_t i = 0; i < n; i++) {
        int s = cli_read_process(files[i], a.salvage, &procs[i]);
        if (s == CLI_EXIT_DAMAGED)
            status = CLI_EXIT_DAMAGED;
        else if (s && !status)
            status = s;
    }
    if (status == CLI_EXIT_DAMAGED) {
        if (!a.salvage)
            fprintf(stderr, "preplay info: damaged trace (use --salvage to keep what precedes "
                            "the damage)\n");
        goto out;
    }
    cli_paths_from_other_processes(procs, n);
    struct cli_counts total;
    memset(&total, 0, sizeof total);
    uint64_t on_disk = 0, nthreads = 0, skipped = 0;
    json_t *list = json_array();
    for (size_t i = 0; i < n; i++) {
        cli_add_counts(&total, &procs[i].c);
        on_disk += procs[i].bytes_on_disk;
        nthreads += procs[i].threads.n;
        skipped += procs[i].skipped;
        json_array_append_new(list, cli_json_process(&procs[i]));
    }
    if (a.json) {
        json_t *o = json_object();
        json_object_set_new(o, "processes", json_integer((json_int_t)n));
        json_object_set_new(o, "threads", json_integer((json_int_t)nthreads));
        json_object_set_new(o, "bytes_on_disk", json_integer((json_int_t)on_disk));
        json_object_set_new(o, "skipped_records", json_integer((json_int_t)skipped));
        cli_json_counts(o, &total);
        json_object_set_new(o, "process_list", list);
        json_dumpf(o, stdout, JSON_INDENT(2));
        printf("\n");
        json_decref(o);
    } else {
        printf("%zu process%s, %" PRIu64 " threads, %" PRIu64 " bytes on disk\n", n,
               n == 1 ? "" : "es", nthreads, on_disk);
        if (n > 1)
            cli_print_counts("", &total);
        for (size_t i = 0; i < n; i++) {
            json_t *pj = json_array_get(list, i);
            cli_print_process(pj);
            cli_print_details(&procs[i], pj);
        }
        json_decref(list);
    }
out:
    for (size_t i = 0; i < n; i++) {
        cli_free_process(&procs[i]);
        free(files[i]);
    }
    free(procs);
    free(files);
    if (fflush(stdout) != 0 && !status)
        return CLI_EXIT_DAMAGED;
    return status;
}

/* ---- dump ---------------------------------------------------------------- */

#define J_INT(o, k, v) json_object_set_new(o, k, json_integer((json_int_t)(v)))

static void cli_set_string(json_t *o, const char *key, const char *s, uint32_t len)
{
    json_t *j = json_stringn(s, len);
    if (j) {
        json_object_set_new(o, key, j);
        return;
    }
    /* not UTF-8: hex so the line stays valid JSON */
    char *hex = cli_xalloc(malloc(2 * (size_t)len + 1));
    for (uint32_t i = 0; i < len; i++)
        snprintf(hex + 2 * i, 3, "%02x", (unsigned char)s[i]);
    char k[64];
    snprintf(k, sizeof k, "%s_hex", key);
    json_object_set_new(o, k, json_string(hex));
    free(hex);
}

static void cli_resolve(json_t *o, const char *key, struct trace_reader *r, uint32_t id)
{
    uint32_t len;
    const char *s = id ? trace_reader_string(r, id, &len) : NULL;
    if (s)
        cli_set_string(o, key, s, len);
}

static json_t *cli_event_json(const struct trace_event *ev, struct trace_reader *r)
{
    json_t *o = json_object();
    J_INT(o, "ts", ev->ts_ns);
    J_INT(o, "tid", ev->tid);
    json_object_set_new(o, "type", json_string(trace_event_type_name(ev->type)));
    const char *op = trace_event_op_name(ev->type, ev->op);
    if (op)
        json_object_set_new(o, "op", json_string(op));
    else if (ev->op)
        J_INT(o, "op", ev->op);
    J_INT(o, "dur", ev->dur_ns);
    if (ev->flags) {
        json_t *f = json_array();
        for (unsigned b = 0; b < 16; b++) {
            if (!(ev->flags & (1u << b)))
                continue;
            const char *name = trace_event_flag_name(b);
            if (name)
                json_array_append_new(f, json_string(name));
            else
                json_array_append_new(f, json_integer(1 << b));
        }
        json_object_set_new(o, "flags", f);
    }
    if (ev->stack_id)
        J_INT(o, "stack_id", ev->stack_id);
    char ep[80];
    switch (ev->type) {
    case TRACE_EV_THREAD_START:
    case TRACE_EV_THREAD_EXIT:
        if (ev->u.thread.parent_tid)
            J_INT(o, "parent_tid", ev->u.thread.parent_tid);
        break;
    case TRACE_EV_FILE: {
        const struct trace_file_event *f = &ev->u.file;
        J_INT(o, "fd", f->fd);
        if (f->path_id) {
            J_INT(o, "path_id", f->path_id);
            cli_resolve(o, "path", r, f->path_id);
        }
        J_INT(o, "dev", f->dev);
        J_INT(o, "ino", f->ino);
        J_INT(o, "offset", f->offset);
        J_INT(o, "size", f->size);
        J_INT(o, "result", f->result);
        J_INT(o, "file_size", f->file_size);
        if (f->open_flags)
            J_INT(o, "open_flags", f->open_flags);
        if (f->fd2 != -1)
            J_INT(o, "fd2", f->fd2);
        break;
    }
    case TRACE_EV_NET:
        J_INT(o, "fd", ev->u.net.fd);
        J_INT(o, "conn_id", ev->u.net.conn_id);
        J_INT(o, "size", ev->u.net.size);
        J_INT(o, "result", ev->u.net.result);
        if (ev->u.net.msg_flags)
            J_INT(o, "msg_flags", ev->u.net.msg_flags);
        if (ev->u.net.nmsgs)
            J_INT(o, "nmsgs", ev->u.net.nmsgs);
        break;
    case TRACE_EV_CONN: {
        const struct trace_conn_event *c = &ev->u.conn;
        J_INT(o, "fd", c->fd);
        J_INT(o, "conn_id", c->conn_id);
        json_object_set_new(o, "proto", json_string(cli_proto_name(c->proto)));
        J_INT(o, "family", c->family);
        cli_format_endpoint(ep, sizeof ep, c->family, c->local_addr, c->local_port);
        if (ep[0])
            json_object_set_new(o, "local", json_string(ep));
        cli_format_endpoint(ep, sizeof ep, c->family, c->remote_addr, c->remote_port);
        if (ep[0])
            json_object_set_new(o, "remote", json_string(ep));
        if (c->unix_inode || c->unix_peer_inode) {
            J_INT(o, "unix_inode", c->unix_inode);
            J_INT(o, "unix_peer_inode", c->unix_peer_inode);
        }
        J_INT(o, "result", c->result);
        break;
    }
    case TRACE_EV_SOCKOPT:
        J_INT(o, "fd", ev->u.sockopt.fd);
        J_INT(o, "level", ev->u.sockopt.level);
        J_INT(o, "name", ev->u.sockopt.name);
        J_INT(o, "value", ev->u.sockopt.value);
        J_INT(o, "conn_id", ev->u.sockopt.conn_id);
        break;
    case TRACE_EV_LOCK: {
        static const char *const kinds[] = {"?",     "mutex", "rwlock",   "flock",
                                            "fcntl", "ofd",   "semaphore"};
        const struct trace_lock_event *l = &ev->u.lock;
        json_object_set_new(
            o, "kind", json_string(l->kind < sizeof kinds / sizeof *kinds ? kinds[l->kind] : "?"));
        json_object_set_new(o, "mode",
                            json_string(l->mode == TRACE_LOCK_SHARED      ? "shared"
                                        : l->mode == TRACE_LOCK_EXCLUSIVE ? "exclusive"
                                                                          : "?"));
        J_INT(o, "lock_id", l->lock_id);
        J_INT(o, "result", l->result);
        if (l->start || l->len) {
            J_INT(o, "start", l->start);
            J_INT(o, "len", l->len);
        }
        break;
    }
    case TRACE_EV_DB: {
        const struct trace_db_event *d = &ev->u.db;
        json_object_set_new(o, "source",
                            json_string(d->source == TRACE_DB_CAPI   ? "capi"
                                        : d->source == TRACE_DB_WIRE ? "wire"
                                                                     : "?"));
        J_INT(o, "db_conn_id", d->db_conn_id);
        if (d->query_id) {
            J_INT(o, "query_id", d->query_id);
            cli_resolve(o, "query", r, d->query_id);
        }
        if (d->params_id) {
            J_INT(o, "params_id", d->params_id);
            cli_resolve(o, "params", r, d->params_id);
        }
        if (d->stmt_id)
            J_INT(o, "stmt_id", d->stmt_id);
        J_INT(o, "rows", d->rows);
        J_INT(o, "bytes", d->bytes);
        J_INT(o, "error", d->error);
        break;
    }
    case TRACE_EV_LABEL:
        J_INT(o, "conn_id", ev->u.label.conn_id);
        J_INT(o, "label_id", ev->u.label.label_id);
        cli_resolve(o, "label", r, ev->u.label.label_id);
        break;
    case TRACE_EV_LOSS: {
        J_INT(o, "count", ev->u.loss.count);
        J_INT(o, "from_ns", ev->u.loss.from_ns);
        J_INT(o, "to_ns", ev->u.loss.to_ns);
        json_object_set_new(o, "reason", json_string(trace_loss_reason_name(ev->u.loss.reason)));
        break;
    }
    case TRACE_EV_STRING:
        J_INT(o, "id", ev->u.string.id);
        J_INT(o, "len", ev->u.string.len);
        cli_set_string(o, "value", ev->data ? ev->data : "", ev->u.string.len);
        break;
    case TRACE_EV_STACK: {
        J_INT(o, "id", ev->u.stack.id);
        json_t *frames = json_array();
        const uint64_t *f = ev->data;
        for (uint32_t i = 0; i < ev->u.stack.nframes; i++) {
            char hex[24];
            snprintf(hex, sizeof hex, "0x%" PRIx64, f[i]);
            json_array_append_new(frames, json_string(hex));
        }
        json_object_set_new(o, "frames", frames);
        break;
    }
    case TRACE_EV_CONTROL:
        J_INT(o, "arg0", ev->u.control.arg0);
        J_INT(o, "arg1", ev->u.control.arg1);
        if (ev->op == TRACE_CTL_EXEC && ev->u.control.arg0 > 0 && ev->u.control.arg0 <= UINT32_MAX)
            cli_resolve(o, "path", r, (uint32_t)ev->u.control.arg0);
        break;
    default:
        break;
    }
    return o;
}

/* Text line: "ts tid type op k=v ..." built from the same JSON object. */
static void cli_print_event_text(json_t *o)
{
    printf("%" JSON_INTEGER_FORMAT " %" JSON_INTEGER_FORMAT " %s",
           json_integer_value(json_object_get(o, "ts")),
           json_integer_value(json_object_get(o, "tid")),
           json_string_value(json_object_get(o, "type")));
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v)
    {
        if (!strcmp(key, "ts") || !strcmp(key, "tid") || !strcmp(key, "type"))
            continue;
        if (json_is_integer(v)) {
            printf(" %s=%" JSON_INTEGER_FORMAT, key, json_integer_value(v));
        } else if (json_is_string(v)) {
            const char *s = json_string_value(v);
            if (!strcmp(key, "op"))
                printf(" %s", s);
            else if (strpbrk(s, " \t\n\"\\") || !*s) {
                json_t *q = json_string(s);
                char *enc = json_dumps(q, JSON_ENCODE_ANY);
                printf(" %s=%s", key, enc ? enc : "?");
                free(enc);
                json_decref(q);
            } else
                printf(" %s=%s", key, s);
        } else {
            char *enc = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
            printf(" %s=%s", key, enc ? enc : "?");
            free(enc);
        }
    }
    printf("\n");
}

/* --stacks: frames per stack id and a symbol per address, from the STACK
 * records seen so far, so dump can print each event's stack by name. Memory
 * grows with distinct stacks and addresses, not with events. */
struct cli_stacks {
    struct trace_u64map symbol_of; /* address -> string id of its symbol */
    struct trace_u64map index_of;  /* stack id -> index into frames/nframes */
    uint64_t **frames;
    uint32_t *nframes;
    size_t n, cap;
};

static void cli_stacks_note(struct cli_stacks *st, const struct trace_event *ev)
{
    const uint64_t *f = ev->data;
    if (ev->type != TRACE_EV_STACK || !f || !ev->u.stack.nframes)
        return;
    int inserted;
    if (ev->op == TRACE_STACK_SYMBOL) {
        uint32_t *v = trace_u64map_upsert(&st->symbol_of, f[0], ev->u.stack.id, &inserted);
        if (v)
            *v = ev->u.stack.id;
        return;
    }
    uint32_t *idx = trace_u64map_upsert(&st->index_of, ev->u.stack.id, (uint32_t)st->n, &inserted);
    if (!idx || !inserted)
        return;
    if (st->n == st->cap) {
        st->cap = st->cap ? st->cap * 2 : 64;
        st->frames = cli_xalloc(realloc(st->frames, st->cap * sizeof *st->frames));
        st->nframes = cli_xalloc(realloc(st->nframes, st->cap * sizeof *st->nframes));
    }
    st->frames[st->n] = cli_xalloc(malloc(ev->u.stack.nframes * sizeof(uint64_t)));
    memcpy(st->frames[st->n], f, ev->u.stack.nframes * sizeof(uint64_t));
    st->nframes[st->n] = ev->u.stack.nframes;
    st->n++;
}

/* Adds "stack": ["symbol+0xoff (lib)", ...] to an event that has one. */
static void cli_stacks_resolve(const struct cli_stacks *st, json_t *o, const struct trace_event *ev,
                               struct trace_reader *r)
{
    if (!ev->stack_id || ev->type == TRACE_EV_STACK)
        return;
    uint32_t *idx = trace_u64map_find(&st->index_of, ev->stack_id);
    if (!idx)
        return;
    json_t *names = json_array();
    for (uint32_t i = 0; i < st->nframes[*idx]; i++) {
        uint64_t addr = st->frames[*idx][i];
        uint32_t *sid = trace_u64map_find(&st->symbol_of, addr);
        uint32_t len = 0;
        const char *name = sid ? trace_reader_string(r, *sid, &len) : NULL;
        if (name) {
            json_array_append_new(names, json_stringn(name, len));
        } else {
            char hex[24];
            snprintf(hex, sizeof hex, "0x%" PRIx64, addr);
            json_array_append_new(names, json_string(hex));
        }
    }
    json_object_set_new(o, "stack", names);
}

static void cli_stacks_free(struct cli_stacks *st)
{
    for (size_t i = 0; i < st->n; i++)
        free(st->frames[i]);
    free(st->frames);
    free(st->nframes);
    trace_u64map_free(&st->symbol_of);
    trace_u64map_free(&st->index_of);
}

static const char cli_dump_usage[] =
    "usage: preplay dump [--json] [--salvage] TRACE\n"
    "Print every event of a trace file, one per line, with names for types,\n"
    "operations and flags and interned strings resolved.\n"
    "  --json     one JSON object per line (see docs/preplay-dump.md)\n"
    "  --salvage  on damage, print what precedes it and exit 3 instead of 1\n"
    "Exit: 0 ok, 1 damaged/unreadable trace, 2 usage, 3 damaged but salvaged.\n";

int cmd_dump(int argc, char **argv)
{
    struct cli_args a;
    int rc = cli_parse(argc, argv, &a, cli_dump_usage);
    if (rc >= 0)
        return rc;
    char err[1024];
    struct trace_reader_options o = {.salvage = a.salvage};
    struct trace_reader *r = trace_reader_open(a.target, &o, err, sizeof err);
    if (!r) {
        fprintf(stderr, "preplay: %s\n", err);
        return CLI_EXIT_DAMAGED;
    }
    struct trace_event ev;
    struct cli_stacks stacks = {0};
    trace_u64map_init(&stacks.symbol_of);
    trace_u64map_init(&stacks.index_of);
    while ((rc = trace_reader_next(r, &ev)) == 1) {
        cli_stacks_note(&stacks, &ev);
        json_t *j = cli_event_json(&ev, r);
        cli_stacks_resolve(&stacks, j, &ev, r);
        if (a.json) {
            json_dumpf(j, stdout, JSON_COMPACT);
            putchar('\n');
        } else {
            cli_print_event_text(j);
        }
        json_decref(j);
    }
    int status = 0;
    fflush(stdout);
    if (rc < 0) {
        fprintf(stderr, "preplay: %s\n", trace_reader_error(r));
        status = CLI_EXIT_DAMAGED;
    } else if (trace_reader_warning(r)) {
        fprintf(stderr, "preplay: warning: %s (salvaged: events before the damage were printed)\n",
                trace_reader_warning(r));
        status = CLI_EXIT_SALVAGED;
    }
    if (trace_reader_skipped(r))
        fprintf(stderr,
                "preplay: note: %" PRIu64 " records of types this preplay does not know were "
                "skipped (trace written by a newer minor version)\n",
                trace_reader_skipped(r));
    trace_reader_close(r);
    cli_stacks_free(&stacks);
    if (ferror(stdout) && !status)
        status = CLI_EXIT_DAMAGED;
    return status;
}
