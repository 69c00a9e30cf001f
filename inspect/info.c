/* info.c - `preplay info`: the summary of a trace file or of every *.trace
 * file of a trace directory (per process and thread event counts by type,
 * bytes, durations, losses, top files, connections, locks and queries), as
 * text or JSON (docs/preplay-info.md); given a replay plan it hands over to
 * info_plan.c. It streams each trace through the reader, so it works on
 * traces larger than memory: only per-thread/file/connection/lock/query
 * aggregates are kept. Exit status: 0 ok, 1 damaged or unreadable trace,
 * 2 usage, 3 damaged but salvaged (output is complete up to the damage). It
 * must never print a partial summary as if it were complete: damage is
 * always reported on stderr. */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "inspect_cli.h"
#include "mem_budget.h"
#include "info_plan.h"
#include "info_counters.h"
#include "info_summary.h"
#include "inspect.h"
#include "plan.h"
#include "trace_file.h"
#include "trace_u64map.h"

#define INFO_TOP 10

/* The most the per-process tables of one `info` run may hold together
 * (threads, files, connections, locks, queries and labels of every trace,
 * with the JSON each becomes; issue 24 item 1): they grow with the
 * distinct tids, inodes, connections and ids a trace names, and 2 million
 * tids (a 4 MB trace) made info hold 8.4 GB. A thread costs about 4.5 KB
 * here (its counts and their JSON), a connection 1.3 KB: 230000 threads or
 * 800000 connections fit, where real recordings have tens to thousands.
 * Beyond, one line per trace names the file, the table and this limit;
 * later entries count in the totals only, the summary is still printed,
 * and the exit status is 1. */
#define INFO_MAX_TABLE_BYTES (1ull << 30)
/* A table entry's share of its index (trace_u64map: 16-byte slots, at
 * most half full, doubling) and of its array (doubling). */
#define INFO_MAP_ENTRY_BYTES 64
/* What an entry's JSON costs (jansson objects of its fields, measured):
 * a thread's counts by type, a connection's endpoints and counts. */
#define INFO_JSON_THREAD_BYTES 4096
#define INFO_JSON_CONN_BYTES 1024

/* ---- aggregates ---------------------------------------------------------- */

struct info_counts {
    uint64_t by_type[TRACE_EV_TYPE_COUNT];
    uint64_t file_read, file_written, net_sent, net_received;
    uint64_t cpu_ns, lock_wait_ns, lost;
    /* lock holds the tracer counted instead of recording (CONTROL
     * LOCKS_FOLDED), and of them taken shared */
    uint64_t locks_folded, locks_folded_shared;
    uint64_t first_ts, last_ts;
};

#define INFO_MAX_EXECS 8

struct info_thread {
    uint32_t tid;
    struct info_counts c;
};

struct info_file {
    uint64_t dev, ino;
    uint32_t path_id;
    uint64_t read, written, ops;
    char *path;
};

struct info_conn {
    uint64_t conn_id;
    int have_ident;
    struct trace_conn_event ident;
    uint64_t sent, received, sends, recvs;
};

struct info_lock {
    uint64_t lock_id;
    uint8_t kind;
    uint64_t acquires, contended, wait_ns, max_wait_ns;
};

struct info_label {
    uint32_t label_id;
    uint64_t count; /* LABEL events: requests seen with this label */
    char *text;
};

struct info_query {
    uint32_t query_id;
    uint64_t count;    /* executions: QUERY and EXECUTE events */
    uint64_t prepares; /* PREPARE events of the same text */
    uint64_t total_ns, rows, errors;
    char *text;
};

/* A growable array of T plus a u64 -> index map. */
#define INFO_TABLE(T)                                                                              \
    struct {                                                                                       \
        T *v;                                                                                      \
        size_t n, cap;                                                                             \
        struct trace_u64map index;                                                                 \
    }

struct info_process {
    char *path;
    struct trace_header hdr;
    char *argv_copy;
    uint64_t bytes_on_disk, skipped;
    char *warning;
    int damaged_events; /* the header read, damage later: what --salvage can keep */
    struct info_counts c;
    INFO_TABLE(struct info_thread) threads;
    INFO_TABLE(struct info_file) files;
    INFO_TABLE(struct info_conn) conns;
    INFO_TABLE(struct info_lock) locks;
    INFO_TABLE(struct info_query) queries;
    INFO_TABLE(struct info_label) labels;
    /* the run's budget for all tables (INFO_MAX_TABLE_BYTES); full: an
     * entry was refused (said once), later new ones are not kept */
    struct mem_budget *tables;
    int tables_full;
    /* images the process exec'd (CONTROL EXEC's path string ids), in order;
     * past INFO_MAX_EXECS the last slot keeps the newest */
    uint32_t exec_ids[INFO_MAX_EXECS];
    char *execs[INFO_MAX_EXECS];
    size_t nexecs;
};

/* Room in p's budget for a new entry of table `name` (its n-th; what:
 * the key, for the message) of `bytes`: 0, or -1 (said once per trace). */
static int info_table_admit(struct info_process *p, const char *name, size_t n, const char *what,
                            uint64_t key, uint64_t bytes)
{
    if (!p->tables_full && mem_budget_charge(p->tables, bytes) == 0)
        return 0;
    if (!p->tables_full)
        fprintf(stderr,
                "preplay: %s: %s %" PRIu64 ": the %s table (%zu entries) would pass info's limit "
                "of %llu bytes for its tables; later ones count in the totals only\n",
                p->path, what, key, name, n, INFO_MAX_TABLE_BYTES);
    p->tables_full = 1;
    return -1;
}

/* Finds or adds the entry for key in process p's table t (element type T,
 * zeroed when new); NULL when a new one would pass the budget (name, what:
 * the table and its key for the message; json: what its JSON costs). */
#define INFO_TABLE_GET(p, t, key, out, name, what, json)                                           \
    do {                                                                                           \
        int ins_;                                                                                  \
        if (!trace_u64map_find(&(t)->index, (key)) &&                                              \
            info_table_admit((p), (name), (t)->n + 1, (what), (key),                               \
                             2 * sizeof *(t)->v + INFO_MAP_ENTRY_BYTES + (json)) != 0) {           \
            (out) = NULL;                                                                          \
            break;                                                                                 \
        }                                                                                          \
        uint32_t *slot_ =                                                                          \
            inspect_xalloc(trace_u64map_upsert(&(t)->index, (key), (uint32_t)(t)->n, &ins_));      \
        if (ins_) {                                                                                \
            if ((t)->n == (t)->cap) {                                                              \
                (t)->cap = (t)->cap ? (t)->cap * 2 : 16;                                           \
                (t)->v = inspect_xalloc(realloc((t)->v, (t)->cap * sizeof *(t)->v));               \
            }                                                                                      \
            memset(&(t)->v[(t)->n], 0, sizeof *(t)->v);                                            \
            (t)->n++;                                                                              \
        }                                                                                          \
        (out) = &(t)->v[*slot_];                                                                   \
    } while (0)

/* FILE ops whose result is bytes read from the file: sendfile's and
 * copy_file_range's records are their read side (the write is a record of
 * its own: a NET send, or a FILE write on the destination). */
static int info_file_op_reads(uint8_t op)
{
    return op == TRACE_FILE_READ || op == TRACE_FILE_PREAD || op == TRACE_FILE_SENDFILE ||
           op == TRACE_FILE_COPY_RANGE;
}

static uint64_t info_file_key(uint64_t dev, uint64_t ino)
{
    return ino * 0x9E3779B97F4A7C15ULL ^ dev;
}

/* Process p's entry of file (dev, ino), or NULL (probing as info_file_get
 * inserts). */
static const struct info_file *info_file_find(const struct info_process *p, uint64_t dev,
                                              uint64_t ino)
{
    for (uint64_t key = info_file_key(dev, ino);; key++) {
        const uint32_t *slot = trace_u64map_find(&p->files.index, key);
        if (!slot)
            return NULL;
        const struct info_file *e = &p->files.v[*slot];
        if (e->dev == dev && e->ino == ino)
            return e;
    }
}

/* Process p's entry of file (dev, ino), added when new (NULL: beyond the
 * budget). */
static struct info_file *info_file_get(struct info_process *p, uint64_t dev, uint64_t ino)
{
    /* Probe past hash collisions: the key mixes dev and ino. */
    uint64_t key = info_file_key(dev, ino);
    struct info_file *e;
    for (;; key++) {
        INFO_TABLE_GET(p, &p->files, key, e, "file", "ino", 0);
        if (!e)
            return NULL;
        if ((!e->dev && !e->ino) || (e->dev == dev && e->ino == ino))
            break;
    }
    e->dev = dev;
    e->ino = ino;
    return e;
}

static void info_count(struct info_counts *c, const struct trace_event *ev)
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
            if (info_file_op_reads(ev->op))
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
    case TRACE_EV_CONTROL:
        if (ev->op == TRACE_CTL_LOCKS_FOLDED) {
            c->locks_folded += (uint64_t)ev->u.control.arg0;
            c->locks_folded_shared += (uint64_t)ev->u.control.arg1;
        }
        break;
    default:
        break;
    }
}

static void info_add_counts(struct info_counts *to, const struct info_counts *from)
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
    to->locks_folded += from->locks_folded;
    to->locks_folded_shared += from->locks_folded_shared;
    if (from->first_ts && (!to->first_ts || from->first_ts < to->first_ts))
        to->first_ts = from->first_ts;
    if (from->last_ts > to->last_ts)
        to->last_ts = from->last_ts;
}

static void info_aggregate(struct info_process *p, const struct trace_event *ev)
{
    info_count(&p->c, ev);
    /* the tracer's record of an exec names the new image (the collector's,
     * when the image registered, has arg0 -1) */
    if (ev->type == TRACE_EV_CONTROL && ev->op == TRACE_CTL_EXEC && ev->u.control.arg0 > 0 &&
        ev->u.control.arg0 <= UINT32_MAX)
        p->exec_ids[p->nexecs < INFO_MAX_EXECS ? p->nexecs++ : INFO_MAX_EXECS - 1] =
            (uint32_t)ev->u.control.arg0;
    if (ev->type != TRACE_EV_STRING && ev->type != TRACE_EV_STACK && ev->type != TRACE_EV_LOSS &&
        !(ev->type == TRACE_EV_CONTROL && ev->op == TRACE_CTL_RING_WRAP)) {
        struct info_thread *t;
        INFO_TABLE_GET(p, &p->threads, ev->tid, t, "thread", "tid", INFO_JSON_THREAD_BYTES);
        if (t) {
            t->tid = ev->tid;
            info_count(&t->c, ev);
        }
    }
    switch (ev->type) {
    case TRACE_EV_FILE: {
        const struct trace_file_event *f = &ev->u.file;
        if (!f->dev && !f->ino)
            break;
        struct info_file *e = info_file_get(p, f->dev, f->ino);
        if (!e)
            break;
        e->ops++;
        if (f->path_id && !e->path_id)
            e->path_id = f->path_id;
        if (f->result > 0 && info_file_op_reads(ev->op))
            e->read += (uint64_t)f->result;
        if (f->result > 0 && (ev->op == TRACE_FILE_WRITE || ev->op == TRACE_FILE_PWRITE))
            e->written += (uint64_t)f->result;
        break;
    }
    case TRACE_EV_CONN: {
        struct info_conn *c;
        if (!ev->u.conn.conn_id)
            break;
        INFO_TABLE_GET(p, &p->conns, ev->u.conn.conn_id, c, "connection", "conn_id",
                       INFO_JSON_CONN_BYTES);
        if (!c)
            break;
        c->conn_id = ev->u.conn.conn_id;
        if (!c->have_ident && (ev->op == TRACE_CONN_ACCEPT || ev->op == TRACE_CONN_CONNECT ||
                               ev->op == TRACE_CONN_IDENT)) {
            c->ident = ev->u.conn;
            c->have_ident = 1;
        }
        break;
    }
    case TRACE_EV_NET: {
        struct info_conn *c;
        INFO_TABLE_GET(p, &p->conns, ev->u.net.conn_id, c, "connection", "conn_id",
                       INFO_JSON_CONN_BYTES);
        if (!c)
            break;
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
        struct info_lock *l;
        INFO_TABLE_GET(p, &p->locks, ev->u.lock.lock_id, l, "lock", "lock", 0);
        if (!l)
            break;
        l->lock_id = ev->u.lock.lock_id;
        l->kind = ev->u.lock.kind;
        l->acquires++;
        l->wait_ns += ev->dur_ns;
        if (ev->dur_ns > l->max_wait_ns)
            l->max_wait_ns = ev->dur_ns;
        break;
    }
    case TRACE_EV_LABEL: {
        struct info_label *l;
        INFO_TABLE_GET(p, &p->labels, ev->u.label.label_id, l, "label", "label id", 0);
        if (!l)
            break;
        l->label_id = ev->u.label.label_id;
        l->count++;
        break;
    }
    case TRACE_EV_DB: {
        if (!ev->u.db.query_id ||
            (ev->op != TRACE_DB_QUERY && ev->op != TRACE_DB_EXECUTE && ev->op != TRACE_DB_PREPARE))
            break;
        struct info_query *q;
        INFO_TABLE_GET(p, &p->queries, ev->u.db.query_id, q, "query", "query id", 0);
        if (!q)
            break;
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

static char *info_strdup_or_null(const char *s)
{
    return s ? inspect_xalloc(strdup(s)) : NULL;
}

/* Reads one trace into p, its tables within `tables`. Returns 0, or
 * INSPECT_EXIT_* on damage (past the budget: 0, p->tables_full set). */
static int info_read_process(const char *path, int salvage, struct mem_budget *tables,
                             struct info_process *p)
{
    memset(p, 0, sizeof *p);
    p->tables = tables;
    p->path = inspect_xalloc(strdup(path));
    trace_u64map_init(&p->threads.index);
    trace_u64map_init(&p->files.index);
    trace_u64map_init(&p->conns.index);
    trace_u64map_init(&p->locks.index);
    trace_u64map_init(&p->queries.index);
    trace_u64map_init(&p->labels.index);
    char err[1024];
    struct trace_reader_options o = {.salvage = salvage};
    struct trace_reader *r = trace_reader_open(path, &o, err, sizeof err);
    if (!r) {
        fprintf(stderr, "preplay: %s\n", err);
        return INSPECT_EXIT_DAMAGED;
    }
    p->hdr = *trace_reader_header(r);
    if (p->hdr.argv_joined) {
        p->argv_copy = inspect_xalloc(malloc(p->hdr.argv_len + 1u));
        memcpy(p->argv_copy, p->hdr.argv_joined, p->hdr.argv_len + 1u);
    }
    p->hdr.argv_joined = p->argv_copy;
    p->bytes_on_disk = trace_reader_file_bytes(r);
    struct trace_event ev;
    int rc;
    while ((rc = trace_reader_next(r, &ev)) == 1)
        info_aggregate(p, &ev);
    p->skipped = trace_reader_skipped(r);
    for (size_t i = 0; i < p->files.n; i++)
        p->files.v[i].path =
            info_strdup_or_null(trace_reader_string(r, p->files.v[i].path_id, NULL));
    for (size_t i = 0; i < p->queries.n; i++)
        p->queries.v[i].text =
            info_strdup_or_null(trace_reader_string(r, p->queries.v[i].query_id, NULL));
    for (size_t i = 0; i < p->nexecs; i++)
        p->execs[i] = info_strdup_or_null(trace_reader_string(r, p->exec_ids[i], NULL));
    for (size_t i = 0; i < p->labels.n; i++)
        p->labels.v[i].text =
            info_strdup_or_null(trace_reader_string(r, p->labels.v[i].label_id, NULL));
    int status = 0;
    if (rc < 0) {
        fprintf(stderr, "preplay: %s\n", trace_reader_error(r));
        p->damaged_events = 1;
        status = INSPECT_EXIT_DAMAGED;
    } else if (trace_reader_warning(r)) {
        p->warning = inspect_xalloc(strdup(trace_reader_warning(r)));
        fprintf(stderr, "preplay: warning: %s (salvaged: events before the damage are kept)\n",
                p->warning);
        status = INSPECT_EXIT_SALVAGED;
    }
    trace_reader_close(r);
    return status;
}

/* A file one process opened and another used through an inherited
 * descriptor (nginx's access log: the master opens it, the worker writes
 * it) has its path only in the opener's trace: the others take it from
 * there (same host, device and inode). */
static void info_paths_from_other_processes(struct info_process *procs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < procs[i].files.n; k++) {
            struct info_file *f = &procs[i].files.v[k];
            for (size_t j = 0; j < n && !f->path; j++) {
                if (j == i || strcmp(procs[j].hdr.host, procs[i].hdr.host) != 0)
                    continue;
                const struct info_file *o = info_file_find(&procs[j], f->dev, f->ino);
                if (o && o->path)
                    f->path = inspect_xalloc(strdup(o->path));
            }
        }
    }
}

static void info_free_process(struct info_process *p)
{
    for (size_t i = 0; i < p->files.n; i++)
        free(p->files.v[i].path);
    for (size_t i = 0; i < p->queries.n; i++)
        free(p->queries.v[i].text);
    for (size_t i = 0; i < p->labels.n; i++)
        free(p->labels.v[i].text);
    free(p->labels.v);
    trace_u64map_free(&p->labels.index);
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

static int info_cmp_u64_desc(uint64_t a, uint64_t b)
{
    return a < b ? 1 : a > b ? -1 : 0;
}
static int info_cmp_thread(const void *a, const void *b)
{
    const struct info_thread *x = a, *y = b;
    return x->tid < y->tid ? -1 : x->tid > y->tid;
}
static int info_cmp_file(const void *a, const void *b)
{
    const struct info_file *x = a, *y = b;
    int c = info_cmp_u64_desc(x->read + x->written, y->read + y->written);
    return c ? c : info_cmp_u64_desc(x->ops, y->ops);
}
static int info_cmp_conn(const void *a, const void *b)
{
    const struct info_conn *x = a, *y = b;
    int c = info_cmp_u64_desc(x->sent + x->received, y->sent + y->received);
    return c ? c : (x->conn_id < y->conn_id ? -1 : x->conn_id > y->conn_id);
}
static int info_cmp_lock(const void *a, const void *b)
{
    const struct info_lock *x = a, *y = b;
    int c = info_cmp_u64_desc(x->wait_ns, y->wait_ns);
    return c ? c : info_cmp_u64_desc(x->acquires, y->acquires);
}
static int info_cmp_query_time(const void *a, const void *b)
{
    const struct info_query *x = a, *y = b;
    int c = info_cmp_u64_desc(x->total_ns, y->total_ns);
    return c ? c : info_cmp_u64_desc(x->count, y->count);
}
static int info_cmp_query_count(const void *a, const void *b)
{
    const struct info_query *x = a, *y = b;
    int c = info_cmp_u64_desc(x->count, y->count);
    return c ? c : info_cmp_u64_desc(x->total_ns, y->total_ns);
}

/* ---- rendering ------------------------------------------------------------- */

static json_t *info_json_counts_events(const struct info_counts *c)
{
    json_t *o = json_object();
    for (unsigned t = 1; t < TRACE_EV_TYPE_COUNT; t++)
        json_object_set_new(o, trace_event_type_name(t), json_integer((json_int_t)c->by_type[t]));
    return o;
}

static void info_json_counts(json_t *o, const struct info_counts *c)
{
    json_object_set_new(o, "events", info_json_counts_events(c));
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
    json_object_set_new(o, "lock_holds_folded", json_integer((json_int_t)c->locks_folded));
    json_object_set_new(o, "lock_holds_folded_shared",
                        json_integer((json_int_t)c->locks_folded_shared));
}

/* Who the process was: the trace header, the images it exec'd, the file. */
static void info_json_identity(json_t *o, const struct info_process *p)
{
    const struct trace_header *h = &p->hdr;
    json_object_set_new(o, "file", inspect_json_str(p->path));
    json_object_set_new(o, "pid", json_integer(h->pid));
    json_object_set_new(o, "ppid", json_integer(h->ppid));
    json_object_set_new(o, "exe", inspect_json_str(h->exe));
    json_t *execs = json_array(); /* the trace keeps the first image's name */
    for (size_t i = 0; i < p->nexecs; i++)
        json_array_append_new(execs, inspect_json_str(p->execs[i] ? p->execs[i] : "?"));
    json_object_set_new(o, "exec", execs);
    json_t *argv = json_array();
    for (uint32_t i = 0; h->argv_joined && i < h->argv_len;
         i += (uint32_t)strlen(h->argv_joined + i) + 1)
        json_array_append_new(argv, inspect_json_str(h->argv_joined + i));
    json_object_set_new(o, "argv", argv);
    json_object_set_new(o, "component", inspect_json_str(h->component));
    json_object_set_new(o, "host", inspect_json_str(h->host));
    json_object_set_new(o, "recording_id", inspect_json_str(h->recording_id));
    json_object_set_new(o, "tracer_version", inspect_json_str(h->tracer_version));
    json_object_set_new(o, "format_version",
                        json_integer(h->version_major * 1000 + h->version_minor));
    json_object_set_new(o, "record_options", inspect_json_str(h->record_options));
    json_object_set_new(o, "bytes_on_disk", json_integer((json_int_t)p->bytes_on_disk));
    json_object_set_new(o, "skipped_records", json_integer((json_int_t)p->skipped));
    json_object_set_new(o, "warning", inspect_json_str(p->warning));
}

/* The tables below sort p's entries in place: the text rendering lists
 * threads in the same order. */
static json_t *info_json_threads(struct info_process *p)
{
    json_t *threads = json_array();
    inspect_sort(p->threads.v, p->threads.n, sizeof *p->threads.v, info_cmp_thread);
    for (size_t i = 0; i < p->threads.n; i++) {
        json_t *t = json_object();
        json_object_set_new(t, "tid", json_integer(p->threads.v[i].tid));
        info_json_counts(t, &p->threads.v[i].c);
        json_array_append_new(threads, t);
    }
    return threads;
}

static json_t *info_json_top_files(struct info_process *p)
{
    json_t *files = json_array();
    inspect_sort(p->files.v, p->files.n, sizeof *p->files.v, info_cmp_file);
    for (size_t i = 0; i < p->files.n && i < INFO_TOP; i++) {
        const struct info_file *f = &p->files.v[i];
        json_t *j = json_object();
        json_object_set_new(j, "path", inspect_json_str(f->path));
        json_object_set_new(j, "dev", json_integer((json_int_t)f->dev));
        json_object_set_new(j, "ino", json_integer((json_int_t)f->ino));
        json_object_set_new(j, "bytes_read", json_integer((json_int_t)f->read));
        json_object_set_new(j, "bytes_written", json_integer((json_int_t)f->written));
        json_object_set_new(j, "ops", json_integer((json_int_t)f->ops));
        json_array_append_new(files, j);
    }
    return files;
}

static json_t *info_json_conn(const struct info_conn *c)
{
    json_t *j = json_object();
    char ep[80];
    json_object_set_new(j, "conn_id", json_integer((json_int_t)c->conn_id));
    json_object_set_new(
        j, "proto", c->have_ident ? json_string(inspect_proto_name(c->ident.proto)) : json_null());
    inspect_format_endpoint(ep, sizeof ep, c->ident.family, c->ident.local_addr,
                            c->ident.local_port);
    json_object_set_new(j, "local", ep[0] ? json_string(ep) : json_null());
    inspect_format_endpoint(ep, sizeof ep, c->ident.family, c->ident.remote_addr,
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
    return j;
}

static json_t *info_json_connections(struct info_process *p)
{
    json_t *conns = json_array();
    inspect_sort(p->conns.v, p->conns.n, sizeof *p->conns.v, info_cmp_conn);
    for (size_t i = 0; i < p->conns.n; i++)
        json_array_append_new(conns, info_json_conn(&p->conns.v[i]));
    return conns;
}

static json_t *info_json_top_locks(struct info_process *p)
{
    json_t *locks = json_array();
    inspect_sort(p->locks.v, p->locks.n, sizeof *p->locks.v, info_cmp_lock);
    for (size_t i = 0; i < p->locks.n && i < INFO_TOP; i++) {
        const struct info_lock *l = &p->locks.v[i];
        json_t *j = json_object();
        json_object_set_new(j, "lock_id", json_integer((json_int_t)l->lock_id));
        json_object_set_new(j, "kind", json_integer(l->kind));
        json_object_set_new(j, "acquires", json_integer((json_int_t)l->acquires));
        json_object_set_new(j, "wait_ns", json_integer((json_int_t)l->wait_ns));
        json_object_set_new(j, "max_wait_ns", json_integer((json_int_t)l->max_wait_ns));
        json_array_append_new(locks, j);
    }
    return locks;
}

/* The top queries in the order cmp says (by time or by count). */
static json_t *info_json_top_queries(struct info_process *p, int (*cmp)(const void *, const void *))
{
    json_t *qs = json_array();
    inspect_sort(p->queries.v, p->queries.n, sizeof *p->queries.v, cmp);
    for (size_t i = 0; i < p->queries.n && i < INFO_TOP; i++) {
        const struct info_query *q = &p->queries.v[i];
        json_t *j = json_object();
        json_object_set_new(j, "query", inspect_json_str(q->text));
        json_object_set_new(j, "count", json_integer((json_int_t)q->count));
        json_object_set_new(j, "prepares", json_integer((json_int_t)q->prepares));
        json_object_set_new(j, "total_ns", json_integer((json_int_t)q->total_ns));
        json_object_set_new(j, "rows", json_integer((json_int_t)q->rows));
        json_object_set_new(j, "errors", json_integer((json_int_t)q->errors));
        json_array_append_new(qs, j);
    }
    return qs;
}

/* label text -> LABEL events (requests seen); one label string id per text
 * in a trace, but two ids of one text would add up */
static json_t *info_json_labels(const struct info_process *p)
{
    json_t *o = json_object();
    for (size_t i = 0; i < p->labels.n; i++) {
        const char *text = p->labels.v[i].text ? p->labels.v[i].text : "(label not in trace)";
        json_int_t had = json_integer_value(json_object_get(o, text));
        json_object_set_new(o, text, json_integer(had + (json_int_t)p->labels.v[i].count));
    }
    return o;
}

static json_t *info_json_process(struct info_process *p)
{
    json_t *o = json_object();
    info_json_identity(o, p);
    info_json_counts(o, &p->c);
    json_object_set_new(o, "threads", info_json_threads(p));
    json_object_set_new(o, "top_files", info_json_top_files(p));
    json_object_set_new(o, "connections", info_json_connections(p));
    json_object_set_new(o, "locks", info_json_top_locks(p));
    json_object_set_new(o, "queries_by_time", info_json_top_queries(p, info_cmp_query_time));
    json_object_set_new(o, "queries_by_count", info_json_top_queries(p, info_cmp_query_count));
    json_object_set_new(o, "labels", info_json_labels(p));
    return o;
}

static void info_print_counts(const char *indent, const struct info_counts *c)
{
    printf("%sevents:", indent);
    for (unsigned t = 1; t < TRACE_EV_TYPE_COUNT; t++)
        if (c->by_type[t])
            printf(" %s=%" PRIu64, trace_event_type_name(t), c->by_type[t]);
    printf("\n%sduration %.3f s, cpu %.3f s, lock wait %.3f ms, lost %" PRIu64 "\n", indent,
           (c->last_ts > c->first_ts ? c->last_ts - c->first_ts : 0) / 1e9, c->cpu_ns / 1e9,
           c->lock_wait_ns / 1e6, c->lost);
    if (c->locks_folded)
        printf("%slock holds folded (uncontended, counted not recorded) %" PRIu64 ", %" PRIu64
               " of them shared\n",
               indent, c->locks_folded, c->locks_folded_shared);
    printf("%sfile read %" PRIu64 " B, written %" PRIu64 " B; net sent %" PRIu64
           " B, received %" PRIu64 " B\n",
           indent, c->file_read, c->file_written, c->net_sent, c->net_received);
}

static void info_print_process(json_t *pj)
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

static void info_print_details(const struct info_process *p, json_t *pj)
{
    info_print_counts("  ", &p->c);
    for (size_t i = 0; i < p->threads.n; i++) {
        printf("  thread %u\n", p->threads.v[i].tid);
        info_print_counts("    ", &p->threads.v[i].c);
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

/* ---- the traces of a target ------------------------------------------------- */

/* ---- the command ----------------------------------------------------------- */

/* The summary of the n processes read: totals, then each process (its
 * table entries sorted for output). */
/* The counter windows of a recording directory's *.counters files, for
 * info_report (an array, maybe empty); a damaged one is said on stderr
 * and makes *status INSPECT_EXIT_DAMAGED. */
static json_t *info_dir_counters(const char *dir, int *status)
{
    size_t n;
    char **files = inspect_list_counters(dir, &n);
    json_t *list = json_array();
    for (size_t i = 0; i < n; i++) {
        char err[512];
        json_t *c = info_counters_json(files[i], err, sizeof err);
        if (c) {
            json_array_append_new(list, c);
        } else {
            fprintf(stderr, "preplay: %s\n", err);
            *status = INSPECT_EXIT_DAMAGED;
        }
        free(files[i]);
    }
    free(files);
    return list;
}

/* `info FILE.counters`: its summary alone. */
static int info_counters_file(const char *path, int as_json)
{
    char err[512];
    json_t *c = info_counters_json(path, err, sizeof err);
    if (!c) {
        fprintf(stderr, "preplay: %s\n", err);
        return INSPECT_EXIT_DAMAGED;
    }
    if (as_json) {
        json_dumpf(c, stdout, JSON_INDENT(2));
        printf("\n");
    } else {
        info_counters_print(c);
    }
    json_decref(c);
    return 0;
}

static void info_report(struct info_process *procs, size_t n, int as_json, json_t *counters)
{
    info_paths_from_other_processes(procs, n);
    struct info_counts total;
    memset(&total, 0, sizeof total);
    uint64_t on_disk = 0, nthreads = 0, skipped = 0;
    json_t *list = json_array();
    for (size_t i = 0; i < n; i++) {
        info_add_counts(&total, &procs[i].c);
        on_disk += procs[i].bytes_on_disk;
        nthreads += procs[i].threads.n;
        skipped += procs[i].skipped;
        json_array_append_new(list, info_json_process(&procs[i]));
    }
    if (as_json) {
        json_t *o = json_object();
        json_object_set_new(o, "processes", json_integer((json_int_t)n));
        json_object_set_new(o, "threads", json_integer((json_int_t)nthreads));
        json_object_set_new(o, "bytes_on_disk", json_integer((json_int_t)on_disk));
        json_object_set_new(o, "skipped_records", json_integer((json_int_t)skipped));
        info_json_counts(o, &total);
        json_object_set_new(o, "by_component", info_summary_components(list));
        json_object_set_new(o, "by_label", info_summary_labels(list));
        json_object_set_new(o, "process_list", list);
        json_object_set_new(o, "counters", counters);
        json_dumpf(o, stdout, JSON_INDENT(2));
        printf("\n");
        json_decref(o);
    } else {
        printf("%zu process%s, %" PRIu64 " threads, %" PRIu64 " bytes on disk\n", n,
               n == 1 ? "" : "es", nthreads, on_disk);
        if (n > 1)
            info_print_counts("", &total);
        info_summary_print(list);
        for (size_t i = 0; i < n; i++) {
            json_t *pj = json_array_get(list, i);
            info_print_process(pj);
            info_print_details(&procs[i], pj);
        }
        size_t i;
        json_t *c;
        json_array_foreach(counters, i, c) info_counters_print(c);
        json_decref(list);
        json_decref(counters);
    }
}

static const char info_usage[] =
    "usage: preplay info [--json] [--salvage] TRACE|DIR|PLAN\n"
    "Summarize a trace file, or every *.trace file of a trace directory: per process\n"
    "and thread event counts by type, bytes, durations, losses, top files,\n"
    "connections, locks and queries. For a replay plan (from preplay analyze):\n"
    "requests and time per resource (cpu, file, net, lock, db) per label,\n"
    "coverage, unmatched bytes and model violations.\n"
    "  --json     machine-readable output (see docs/preplay-info.md)\n"
    "  --salvage  on damage, summarize what precedes it (exit status 3) instead of failing\n"
    "Exit: 0 ok, 1 damaged/unreadable trace or tables past their 1 GiB, 2 usage,\n"
    "3 damaged but salvaged.\n";

int cmd_info(int argc, char **argv)
{
    struct inspect_args a;
    int rc = inspect_parse_args(argc, argv, &a, info_usage);
    if (rc >= 0)
        return rc;
    if (plan_file_probe(a.target) == 1) {
        if (a.salvage) {
            fprintf(stderr, "preplay info: --salvage applies to traces, not to plans\n");
            return INSPECT_EXIT_USAGE;
        }
        return info_plan_print(a.target, a.json);
    }
    /* info takes a trace or a plan: an empty file is neither (the trace
     * reader would only say it is not a trace) */
    struct stat st;
    if (stat(a.target, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0) {
        fprintf(stderr, "preplay: %s: empty file (neither a preplay trace nor a plan)\n", a.target);
        return INSPECT_EXIT_DAMAGED;
    }
    size_t len = strlen(a.target);
    if (len > 9 && !strcmp(a.target + len - 9, ".counters"))
        return info_counters_file(a.target, a.json);
    size_t n;
    int is_dir;
    char **files = inspect_list_traces(a.target, &n, &is_dir);
    if (!files)
        return INSPECT_EXIT_DAMAGED;
    struct info_process *procs = inspect_xalloc(calloc(n, sizeof *procs));
    int status = 0, salvageable = 0, tables_full = 0;
    struct mem_budget tables;
    mem_budget_init(&tables, INFO_MAX_TABLE_BYTES);
    for (size_t i = 0; i < n; i++) {
        int s = info_read_process(files[i], a.salvage, &tables, &procs[i]);
        tables_full |= procs[i].tables_full;
        if (s == INSPECT_EXIT_DAMAGED)
            status = INSPECT_EXIT_DAMAGED;
        else if (s && !status)
            status = s;
        salvageable |= procs[i].damaged_events;
    }
    if (status == INSPECT_EXIT_DAMAGED) {
        /* --salvage keeps the events before damage in the events; a file
         * whose header cannot be read (empty, not a trace, an unknown major
         * version) has nothing it could keep */
        if (!a.salvage && salvageable)
            fprintf(stderr, "preplay info: damaged trace (use --salvage to keep what precedes "
                            "the damage)\n");
        goto out;
    }
    int counters_status = 0;
    info_report(procs, n, a.json,
                is_dir ? info_dir_counters(a.target, &counters_status) : json_array());
    if (counters_status && !status)
        status = counters_status;
    if (tables_full) /* the summary holds what fit, said on stderr */
        status = INSPECT_EXIT_DAMAGED;
out:
    for (size_t i = 0; i < n; i++) {
        info_free_process(&procs[i]);
        free(files[i]);
    }
    free(procs);
    free(files);
    if (fflush(stdout) != 0 && !status)
        return INSPECT_EXIT_DAMAGED;
    return status;
}
