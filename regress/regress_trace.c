/* regress_trace.c - a recording into the counter table `preplay regress`
 * reads (regress_trace.h). The machine and process counters are the
 * collector's COUNTERS windows (.counters file); the others come from the
 * recorded events, put in the window their end falls in:
 *   lock_wait         blocking lock acquires' waits (LOCK acquire/timed
 *                     dur), seconds per second
 *   db_time           time in DB calls (query, prepare, execute, fetch),
 *                     seconds per second
 *   db_queries_per_s  DB queries and executes per second
 *   throughput_per_s:L, median_s:L, p95_s:L
 *                     requests labelled L (a LABEL on a connection) that
 *                     ended in the window, the end being the last byte the
 *                     process sent on that connection before its next
 *                     request (or close); response time from the LABEL
 *                     (the request read) to that end: the server's view,
 *                     where `run` measures at the client
 * A counter of a family the recording did not trace (`--only`) is null.
 * Must never: print, or keep anything of a recording it refuses. */
#include "regress_trace.h"

#include <dirent.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "grow_array.h"
#include "machine_counters.h"
#include "trace_counters.h"
#include "trace_file.h"
#include "trace_u64map.h"

#define RT_MAX_LABELS 4096u

/* One finished request: its label, the window of its end, its time. */
struct rt_request {
    uint32_t label;
    uint32_t window;
    double response_s;
};

/* What the events give per window, and the requests. */
struct rt_acc {
    const struct trace_counters_file *cf;
    double *lock_s, *db_s, *db_q; /* per window */
    char **labels;
    size_t nlabels;
    struct rt_request *req;
    size_t nreq, cap_req;
};

/* An open request on one connection. */
struct rt_open {
    uint32_t label;
    uint64_t start_ns, end_ns; /* end 0: nothing sent yet */
};

static int rt_has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n > k && !strcmp(s + n - k, suffix);
}

int regress_trace_is_recording(const char *path)
{
    struct stat st;
    if (!stat(path, &st) && S_ISDIR(st.st_mode))
        return 1;
    return rt_has_suffix(path, ".trace") || rt_has_suffix(path, ".counters");
}

/* The files of dir ending in suffix, into *out (malloc'ed paths). -1 when
 * the directory cannot be read or memory runs out. */
static int rt_list(const char *dir, const char *suffix, char ***out, size_t *n)
{
    DIR *d = opendir(dir);
    *out = NULL;
    *n = 0;
    if (!d)
        return -1;
    struct dirent *e;
    int rc = 0;
    while (!rc && (e = readdir(d))) {
        if (!rt_has_suffix(e->d_name, suffix))
            continue;
        char **v = realloc(*out, (*n + 1) * sizeof *v);
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        if (!v || !(v[*n] = malloc(len))) {
            if (v)
                *out = v;
            rc = -1;
            break;
        }
        *out = v;
        snprintf(v[(*n)++], len, "%s/%s", dir, e->d_name);
    }
    closedir(d);
    return rc;
}

static void rt_free_list(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

/* The recording's directory and, when path names one trace, that trace. */
static void rt_dir_of(const char *path, char *dir, size_t cap, const char **only_trace)
{
    struct stat st;
    *only_trace = NULL;
    if (!stat(path, &st) && S_ISDIR(st.st_mode)) {
        snprintf(dir, cap, "%s", path);
        return;
    }
    char copy[4096];
    snprintf(copy, sizeof copy, "%s", path);
    snprintf(dir, cap, "%s", dirname(copy));
    if (rt_has_suffix(path, ".trace"))
        *only_trace = path;
}

/* The .counters file of the recording at path into cf. */
static int rt_read_counters(const char *path, const char *dir, const char *role,
                            struct trace_counters_file *cf, char *err, size_t errlen)
{
    if (rt_has_suffix(path, ".counters"))
        return trace_counters_read(path, cf, err, errlen);
    char **files;
    size_t n;
    if (rt_list(dir, ".counters", &files, &n)) {
        snprintf(err, errlen, "%s: cannot read the directory %s", path, dir);
        return -1;
    }
    int rc = -1;
    if (!n)
        snprintf(err, errlen,
                 "%s: %s has no counters (no .counters file in %s: recorded before trace 2.5, "
                 "or with record --window 0): record it again with preplay record --window",
                 path, role, dir);
    else if (n > 1)
        snprintf(err, errlen,
                 "%s: %s has %zu .counters files (several collectors wrote into %s): give one "
                 "of them",
                 path, role, n, dir);
    else
        rc = trace_counters_read(files[0], cf, err, errlen);
    rt_free_list(files, n);
    return rc;
}

/* The window holding t (counters' monotonic ns), or -1. */
static long rt_window(const struct trace_counters_file *cf, uint64_t t)
{
    size_t lo = 0, hi = cf->nwindows;
    while (lo < hi) { /* the first window starting after t */
        size_t mid = (lo + hi) / 2;
        if (cf->windows[mid].start_ns <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (!lo)
        return -1;
    const struct trace_counters_window *w = &cf->windows[lo - 1];
    return t - w->start_ns < w->length_ns ? (long)(lo - 1) : -1;
}

/* The index of label name (added when new); -1 out of memory or over the
 * limit. */
static long rt_label(struct rt_acc *a, const char *name)
{
    for (size_t i = 0; i < a->nlabels; i++)
        if (!strcmp(a->labels[i], name))
            return (long)i;
    if (a->nlabels >= RT_MAX_LABELS)
        return -1;
    char **v = realloc(a->labels, (a->nlabels + 1) * sizeof *v);
    if (!v)
        return -1;
    a->labels = v;
    if (!(v[a->nlabels] = strdup(name)))
        return -1;
    return (long)a->nlabels++;
}

/* The request o ended (when it sent anything): into its end's window. */
static int rt_finish(struct rt_acc *a, const struct rt_open *o)
{
    long w = o->end_ns ? rt_window(a->cf, o->end_ns) : -1;
    if (w < 0)
        return 0;
    if (grow_array((void **)&a->req, &a->cap_req, a->nreq + 1, sizeof *a->req, 1024) != 0)
        return -1;
    a->req[a->nreq++] = (struct rt_request){.label = o->label,
                                            .window = (uint32_t)w,
                                            .response_s = (double)(o->end_ns - o->start_ns) / 1e9};
    return 0;
}

/* Per-file state of the requests: connection id -> index in open + 1. */
struct rt_conns {
    struct trace_u64map map;
    struct rt_open *open;
    size_t n, cap;
};

/* The open request on conn (created empty when new): NULL out of memory. */
static struct rt_open *rt_conn(struct rt_conns *c, uint64_t conn, int create)
{
    uint32_t *slot =
        create ? trace_u64map_upsert(&c->map, conn, 0, NULL) : trace_u64map_find(&c->map, conn);
    if (!slot)
        return NULL;
    if (!*slot) {
        if (grow_array((void **)&c->open, &c->cap, c->n + 1, sizeof *c->open, 64) != 0)
            return NULL;
        c->open[c->n] = (struct rt_open){.label = UINT32_MAX};
        *slot = (uint32_t)++c->n;
    }
    return &c->open[*slot - 1];
}

/* One event of a request's life (LABEL, a send, a close or shutdown),
 * kept to be replayed in time order: a trace file's records are not in
 * time order (the tracer writes a connection's LABEL, receives and sends
 * after its shutdown and close, or before, depending on how its records
 * were batched), and a close read before the send it follows would end
 * the request with nothing sent. */
struct rt_conn_event {
    uint64_t start, end, conn, seq;
    /* a NET receive with queued_us (format 2.7): when its request's bytes
     * arrived, the request's start (as `analyze` takes it); else 0 */
    uint64_t arrived;
    uint32_t label; /* LABEL: the label's index */
    uint8_t type;   /* TRACE_EV_LABEL, TRACE_EV_NET (a send, or a receive with `arrived`),
                       TRACE_EV_CONN (close/shutdown) */
};

struct rt_conn_events {
    struct rt_conn_event *v;
    size_t n, cap;
};

static int rt_push(struct rt_conn_events *e, struct rt_conn_event x)
{
    if (grow_array((void **)&e->v, &e->cap, e->n + 1, sizeof *e->v, 1024) != 0)
        return -1;
    x.seq = e->n;
    e->v[e->n++] = x;
    return 0;
}

static int rt_cmp_conn_event(const void *x, const void *y)
{
    const struct rt_conn_event *a = x, *b = y;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    return (a->seq > b->seq) - (a->seq < b->seq);
}

/* ev (its times shifted into the counters' clock) into a's windows, or,
 * for a request's events, into e. */
static int rt_event(struct rt_acc *a, struct rt_conn_events *e, struct trace_reader *r,
                    const struct trace_event *ev, int64_t shift)
{
    uint64_t start = ev->ts_ns + (uint64_t)shift, end = start + ev->dur_ns;
    long w = rt_window(a->cf, end);
    switch (ev->type) {
    case TRACE_EV_LOCK:
        if (w >= 0 && (ev->op == TRACE_LOCK_ACQUIRE || ev->op == TRACE_LOCK_TIMED))
            a->lock_s[w] += (double)ev->dur_ns / 1e9;
        return 0;
    case TRACE_EV_DB:
        if (w >= 0 && ev->op >= TRACE_DB_QUERY && ev->op <= TRACE_DB_FETCH)
            a->db_s[w] += (double)ev->dur_ns / 1e9;
        if (w >= 0 && (ev->op == TRACE_DB_QUERY || ev->op == TRACE_DB_EXECUTE))
            a->db_q[w]++;
        return 0;
    case TRACE_EV_LABEL: {
        uint32_t len;
        const char *s = trace_reader_string(r, ev->u.label.label_id, &len);
        long l = rt_label(a, s && len ? s : COUNTERS_UNLABELLED);
        if (l < 0)
            return -1;
        return rt_push(e, (struct rt_conn_event){.start = start,
                                                 .end = end,
                                                 .conn = ev->u.label.conn_id,
                                                 .label = (uint32_t)l,
                                                 .type = TRACE_EV_LABEL});
    }
    case TRACE_EV_NET: {
        uint64_t queued = trace_net_queued_ns(ev);
        if (ev->u.net.result > 0 && queued && queued < end)
            return rt_push(e, (struct rt_conn_event){.start = start,
                                                     .end = end,
                                                     .conn = ev->u.net.conn_id,
                                                     .arrived = end - queued,
                                                     .type = TRACE_EV_NET});
        if (ev->op != TRACE_NET_SEND || ev->u.net.result <= 0)
            return 0;
        return rt_push(
            e, (struct rt_conn_event){
                   .start = start, .end = end, .conn = ev->u.net.conn_id, .type = TRACE_EV_NET});
    }
    case TRACE_EV_CONN:
        if (ev->op != TRACE_CONN_CLOSE && ev->op != TRACE_CONN_SHUTDOWN)
            return 0;
        return rt_push(
            e, (struct rt_conn_event){
                   .start = start, .end = end, .conn = ev->u.conn.conn_id, .type = TRACE_EV_CONN});
    default:
        return 0;
    }
}

/* The requests of one file's events e, in time order, into a. */
static int rt_requests(struct rt_acc *a, struct rt_conn_events *e)
{
    if (e->n) /* a file without requests: no array at all */
        qsort(e->v, e->n, sizeof *e->v, rt_cmp_conn_event);
    struct rt_conns c = {0};
    trace_u64map_init(&c.map);
    int rc = 0;
    for (size_t i = 0; !rc && i < e->n; i++) {
        const struct rt_conn_event *x = &e->v[i];
        struct rt_open *o = rt_conn(&c, x->conn, x->type == TRACE_EV_LABEL);
        if (x->type == TRACE_EV_LABEL) {
            if (!o || (o->label != UINT32_MAX && rt_finish(a, o)))
                rc = -1;
            else
                *o = (struct rt_open){.label = x->label, .start_ns = x->start};
        } else if (o && o->label != UINT32_MAX) {
            if (x->type == TRACE_EV_NET && x->arrived) {
                /* the request's bytes had waited in the kernel: it began
                 * when they arrived, not when its label was read */
                if (!o->end_ns && x->arrived < o->start_ns)
                    o->start_ns = x->arrived;
            } else if (x->type == TRACE_EV_NET)
                o->end_ns = x->end;
            else if (rt_finish(a, o))
                rc = -1;
            else
                o->label = UINT32_MAX;
        }
    }
    for (size_t i = 0; !rc && i < c.n; i++)
        if (c.open[i].label != UINT32_MAX && rt_finish(a, &c.open[i]))
            rc = -1;
    trace_u64map_free(&c.map);
    free(c.open);
    return rc;
}

/* The events of one trace file of the recording (another recording's
 * file in the directory is skipped). */
static int rt_events(struct rt_acc *a, const char *path, char *err, size_t errlen)
{
    struct trace_reader_options opt = {0};
    struct trace_reader *r = trace_reader_open(path, &opt, err, errlen);
    if (!r)
        return -1;
    const struct trace_header *h = trace_reader_header(r);
    if (strcmp(h->recording_id, a->cf->recording_id)) {
        trace_reader_close(r);
        return 0;
    }
    /* its CLOCK_MONOTONIC into the counters' one, through the realtime anchors */
    int64_t shift = (int64_t)(h->real_anchor_ns - h->mono_anchor_ns) -
                    (int64_t)(a->cf->real_anchor_ns - a->cf->mono_anchor_ns);
    struct rt_conn_events e = {0};
    struct trace_event ev;
    int got, rc = 0;
    while (!rc && (got = trace_reader_next(r, &ev)) == 1)
        rc = rt_event(a, &e, r, &ev, shift);
    if (rc)
        snprintf(err, errlen, "%s: out of memory (or more than %u labels)", path, RT_MAX_LABELS);
    else if (got < 0) {
        snprintf(err, errlen, "%s", trace_reader_error(r));
        rc = -1;
    } else if (rt_requests(a, &e)) {
        snprintf(err, errlen, "%s: out of memory", path);
        rc = -1;
    }
    free(e.v);
    trace_reader_close(r);
    return rc;
}

static int rt_cmp_request(const void *x, const void *y)
{
    const struct rt_request *a = x, *b = y;
    if (a->label != b->label)
        return a->label < b->label ? -1 : 1;
    if (a->window != b->window)
        return a->window < b->window ? -1 : 1;
    return (a->response_s > b->response_s) - (a->response_s < b->response_s);
}

/* p-th percentile of sorted x[0..n) by linear interpolation (numpy's
 * default, as run's replay_percentile). */
static double rt_percentile(const struct rt_request *x, size_t n, double p)
{
    double pos = p / 100 * (double)(n - 1);
    size_t i = (size_t)pos;
    double f = pos - (double)i;
    return i + 1 < n ? x[i].response_s * (1 - f) + x[i + 1].response_s * f : x[i].response_s;
}

/* 1 when the recording's --only (record_options) left family out. */
static int rt_untraced(const char *record_options, const char *family)
{
    const char *only = strstr(record_options, "--only ");
    if (!only)
        return 0;
    char list[128];
    if (sscanf(only + 7, "%127s", list) != 1)
        return 0;
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ","))
        if (!strcmp(tok, family))
            return 0;
    return 1;
}

/* The names of the table: the file's, the event counters, per label. */
static int rt_names(struct results_counters_read *rc, const struct rt_acc *a)
{
    const struct trace_counters_file *cf = a->cf;
    size_t n = cf->nnames + 3 + 3 * a->nlabels;
    if (!(rc->names = calloc(n, sizeof *rc->names)))
        return -1;
    for (size_t i = 0; i < cf->nnames; i++)
        if (!(rc->names[rc->nnames++] = strdup(cf->names[i])))
            return -1;
    const char *ev[3] = {COUNTERS_LOCK_WAIT, COUNTERS_DB_TIME, COUNTERS_DB_QPS};
    for (int i = 0; i < 3; i++)
        if (!(rc->names[rc->nnames++] = strdup(ev[i])))
            return -1;
    for (size_t l = 0; l < a->nlabels; l++)
        for (int m = 0; m < 3; m++) {
            size_t len = strlen(counters_label_prefix[m]) + strlen(a->labels[l]) + 1;
            if (!(rc->names[rc->nnames] = malloc(len)))
                return -1;
            snprintf(rc->names[rc->nnames++], len, "%s%s", counters_label_prefix[m], a->labels[l]);
        }
    return 0;
}

/* a (its requests sorted) into rf's counters and labels. */
static int rt_fill(struct results_file *rf, struct rt_acc *a)
{
    const struct trace_counters_file *cf = a->cf;
    struct results_counters_read *rc = &rf->counters;
    rc->present = 1;
    rc->window_s = cf->window_s;
    rc->tick_s = cf->tick_s;
    rc->memory_bytes = NAN;
    if (!(rc->host = strdup(cf->host)) || rt_names(rc, a) ||
        !(rc->windows = calloc(cf->nwindows ? cf->nwindows : 1, sizeof *rc->windows)) ||
        !(rf->labels = calloc(a->nlabels ? a->nlabels : 1, sizeof *rf->labels)))
        return -1;
    int no_lock = rt_untraced(cf->record_options, "lock");
    int no_db = rt_untraced(cf->record_options, "db");
    size_t k = 0; /* the next request (sorted by label, window) */
    for (size_t w = 0; w < cf->nwindows; w++) {
        struct results_counter_window_read *out = &rc->windows[w];
        double len = (double)cf->windows[w].length_ns / 1e9;
        out->interval = 1;
        out->start_s = (double)(cf->windows[w].start_ns - cf->windows[0].start_ns) / 1e9;
        out->length_s = len;
        if (!(out->values = malloc(rc->nnames * sizeof *out->values)))
            return -1;
        rc->nwindows++;
        memcpy(out->values, cf->windows[w].values, cf->nnames * sizeof(double));
        double *v = out->values + cf->nnames;
        v[0] = no_lock ? NAN : a->lock_s[w] / len;
        v[1] = no_db ? NAN : a->db_s[w] / len;
        v[2] = no_db ? NAN : a->db_q[w] / len;
        for (size_t l = 0; l < a->nlabels; l++)
            v[3 + 3 * l] = 0, v[4 + 3 * l] = v[5 + 3 * l] = NAN;
    }
    while (k < a->nreq) {
        size_t j = k;
        while (j < a->nreq && a->req[j].label == a->req[k].label &&
               a->req[j].window == a->req[k].window)
            j++;
        double *v = rc->windows[a->req[k].window].values + cf->nnames + 3 + 3 * a->req[k].label;
        v[0] = (double)(j - k) / rc->windows[a->req[k].window].length_s;
        v[1] = rt_percentile(a->req + k, j - k, 50);
        v[2] = rt_percentile(a->req + k, j - k, 95);
        rf->labels[a->req[k].label].count += j - k;
        k = j;
    }
    for (size_t l = 0; l < a->nlabels; l++) {
        rf->labels[l].name = a->labels[l];
        a->labels[l] = NULL;
        rf->nlabels++;
    }
    return 0;
}

static void rt_acc_free(struct rt_acc *a)
{
    free(a->lock_s);
    free(a->db_s);
    free(a->db_q);
    for (size_t i = 0; i < a->nlabels; i++)
        free(a->labels[i]);
    free(a->labels);
    free(a->req);
}

/* Every trace of the recording (or only_trace) through rt_events. */
static int rt_all_events(struct rt_acc *a, const char *dir, const char *only_trace, char *err,
                         size_t errlen)
{
    if (only_trace)
        return rt_events(a, only_trace, err, errlen);
    char **files;
    size_t n;
    int rc = rt_list(dir, ".trace", &files, &n);
    if (rc)
        snprintf(err, errlen, "%s: cannot read the directory", dir);
    for (size_t i = 0; !rc && i < n; i++)
        rc = rt_events(a, files[i], err, errlen);
    rt_free_list(files, n);
    return rc;
}

int regress_trace_load(const char *path, const char *role, struct results_file *rf, char *err,
                       size_t errlen)
{
    memset(rf, 0, sizeof *rf);
    rf->price = rf->p0 = rf->elapsed_s = rf->failed = rf->cpu_ratio = rf->schedule_s =
        rf->schedule_requests = rf->db_cut = NAN;
    char dir[4096];
    const char *only_trace;
    rt_dir_of(path, dir, sizeof dir, &only_trace);
    struct trace_counters_file cf;
    if (rt_read_counters(path, dir, role, &cf, err, errlen))
        return -1;
    struct rt_acc a = {.cf = &cf};
    size_t nw = cf.nwindows ? cf.nwindows : 1;
    int rc = -1;
    if (!(a.lock_s = calloc(nw, sizeof *a.lock_s)) || !(a.db_s = calloc(nw, sizeof *a.db_s)) ||
        !(a.db_q = calloc(nw, sizeof *a.db_q)))
        snprintf(err, errlen, "%s: out of memory", path);
    else if (!rt_all_events(&a, dir, only_trace, err, errlen)) {
        qsort(a.req, a.nreq, sizeof *a.req, rt_cmp_request);
        rc = rt_fill(rf, &a);
        if (rc)
            snprintf(err, errlen, "%s: out of memory", path);
        else if (!(rf->recording_id = strdup(cf.recording_id)) || !(rf->plan = strdup("")) ||
                 !(rf->error = strdup(""))) {
            snprintf(err, errlen, "%s: out of memory", path);
            rc = -1;
        }
    }
    rt_acc_free(&a);
    trace_counters_file_free(&cf);
    if (rc)
        results_file_free(rf);
    return rc;
}
