/* deps_input.c - opening a recording's trace files and merging them by
 * time (see deps_input.h for the ordering argument). Never reads a whole
 * file: each reader holds one frame and the FIFOs hold the window. */
#include "deps_input.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "grow_array.h"

static int deps_input_cmpstr(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static uint32_t deps_input_host_index(struct deps_input *in, const struct trace_header *h)
{
    for (uint32_t i = 0; i < in->nhosts; i++)
        if (!strcmp(in->hosts[i].name, h->host))
            return i;
    struct deps_input_host *nh = realloc(in->hosts, (in->nhosts + 1) * sizeof *nh);
    if (!nh)
        return UINT32_MAX;
    in->hosts = nh;
    struct deps_input_host *x = &in->hosts[in->nhosts];
    x->name = strdup(h->host);
    if (!x->name)
        return UINT32_MAX;
    /* CLOCK_MONOTONIC differs per host (boot time): map onto the first
     * host's monotonic clock through the realtime anchors. */
    x->anchor_ns = (int64_t)(h->real_anchor_ns - h->mono_anchor_ns);
    x->offset_ns = in->nhosts ? x->anchor_ns - in->hosts[0].anchor_ns : 0;
    x->corrected_ns = 0;
    x->presync_pairs = 0;
    x->presync_ref = 0;
    return in->nhosts++;
}

static int deps_input_add_file(struct deps_input *in, const char *path, int salvage,
                               const char **first_in_dir)
{
    char rerr[1024];
    struct trace_reader_options o = {.salvage = salvage};
    struct trace_reader *r = trace_reader_open(path, &o, rerr, sizeof rerr);
    if (!r) {
        snprintf(in->err, sizeof in->err, "%s", rerr);
        return -2; /* the file alone is unreadable */
    }
    const struct trace_header *h = trace_reader_header(r);
    if (*first_in_dir) {
        const struct deps_input_file *f0 = NULL;
        for (uint32_t i = 0; i < in->nfiles; i++)
            if (!strcmp(in->files[i].path, *first_in_dir))
                f0 = &in->files[i];
        if (f0 && strcmp(f0->hdr->recording_id, h->recording_id)) {
            snprintf(in->err, sizeof in->err,
                     "traces of two different recordings mixed in one directory: %s (recording "
                     "%s) and %s (recording %s)",
                     f0->path, f0->hdr->recording_id, path, h->recording_id);
            trace_reader_close(r);
            return -1;
        }
    }
    struct deps_input_file *nf = realloc(in->files, (in->nfiles + 1) * sizeof *nf);
    if (!nf) {
        trace_reader_close(r);
        snprintf(in->err, sizeof in->err, "out of memory");
        return -1;
    }
    in->files = nf;
    struct deps_input_file *f = &in->files[in->nfiles];
    memset(f, 0, sizeof *f);
    f->path = strdup(path);
    f->reader = r;
    f->hdr = h;
    f->bytes = trace_reader_file_bytes(r);
    deps_map_init(&f->fifos);
    in->nfiles++;
    if (!f->path || (f->host = deps_input_host_index(in, h)) == UINT32_MAX) {
        snprintf(in->err, sizeof in->err, "out of memory");
        return -1;
    }
    if (!*first_in_dir)
        *first_in_dir = f->path;
    return 0;
}

/* Moves the reason in in->err to in->skipped. 0, or -1 out of memory. */
static int deps_input_skip(struct deps_input *in)
{
    char **v = realloc(in->skipped, (in->nskipped + 1) * sizeof *v);
    if (!v)
        return -1;
    in->skipped = v;
    if (!(v[in->nskipped] = strdup(in->err))) {
        snprintf(in->err, sizeof in->err, "out of memory");
        return -1;
    }
    in->nskipped++;
    in->err[0] = '\0';
    return 0;
}

static int deps_input_add_dir(struct deps_input *in, const char *dir, int salvage)
{
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(in->err, sizeof in->err, "%s: %s", dir, strerror(errno));
        return -1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    int rc = 0;
    while ((de = readdir(d))) {
        size_t len = strlen(de->d_name);
        if (len < 7 || strcmp(de->d_name + len - 6, ".trace"))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            char **nn = realloc(names, cap * sizeof *nn);
            if (!nn) {
                rc = -1;
                break;
            }
            names = nn;
        }
        size_t plen = strlen(dir) + len + 2;
        names[n] = malloc(plen);
        if (!names[n]) {
            rc = -1;
            break;
        }
        snprintf(names[n], plen, "%s/%s", dir, de->d_name);
        n++;
    }
    closedir(d);
    if (rc != 0)
        snprintf(in->err, sizeof in->err, "out of memory");
    else if (n == 0) {
        snprintf(in->err, sizeof in->err, "%s: no trace files (*.trace) in this directory", dir);
        rc = -1;
    }
    if (rc == 0) {
        qsort(names, n, sizeof *names, deps_input_cmpstr);
        const char *first = NULL;
        uint32_t before = in->nfiles, skipped = 0;
        for (size_t i = 0; i < n && rc == 0; i++) {
            rc = deps_input_add_file(in, names[i], salvage, &first);
            if (rc == -2 && salvage) { /* keep the valid ones */
                rc = deps_input_skip(in);
                skipped++;
            }
        }
        if (rc == 0 && in->nfiles == before) {
            snprintf(in->err, sizeof in->err,
                     "%s: none of its %u trace files could be read (the first: %s)", dir, skipped,
                     in->skipped[in->nskipped - skipped]);
            rc = -1;
        }
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return rc;
}

/* --- clock pre-alignment from connection establishment ---
 * The merge needs the hosts' clocks roughly aligned before it starts: an
 * end whose peer appears later than the grace time is taken as untraced,
 * and a connection that closes before its peer's end appears cannot be
 * paired at all. The realtime anchors are only as good as the hosts'
 * NTP. So before the merge, the first events of every file (2^20 in all,
 * 2^12..2^16 per file) are scanned for TCP/UDP connects and accepts; each
 * connect whose reversed 4-tuple was accepted on another host says when
 * the same handshake completed on both clocks (to within a round trip).
 * The median per host pair shifts hosts (breadth first from the first
 * host) when it exceeds 1 ms; the call-pair estimate (deps_call_skew_note in
 * deps_call.c) refines what remains. */

#define DEPS_PRESYNC_EVENTS (1u << 20)   /* in all files together ... */
#define DEPS_PRESYNC_FILE_MIN (1u << 12) /* ... but at least this per file */
#define DEPS_PRESYNC_FILE_MAX (1u << 16) /* ... and at most this */
#define DEPS_PRESYNC_SAMPLES 4096u       /* per host pair */
#define DEPS_PRESYNC_MIN_NS 1000000ll    /* smaller: left to the call-pair estimate */

struct deps_presync_end {
    uint32_t host;
    uint8_t accepted;
    int64_t t; /* end of the connect/accept on the anchor-aligned timeline */
};

struct deps_presync_pair {
    uint32_t accept_host, connect_host;
    int64_t *d; /* accept time - connect time */
    uint32_t n;
};

static int deps_presync_is_loopback(const uint8_t *a, uint8_t family)
{
    static const uint8_t v6_loop[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    return family == AF_INET6 ? !memcmp(a, v6_loop, 16) : a[0] == 127;
}

static uint64_t deps_presync_key(const struct trace_conn_event *c, int reversed)
{
    const uint8_t *la = reversed ? c->remote_addr : c->local_addr;
    const uint8_t *ra = reversed ? c->local_addr : c->remote_addr;
    uint16_t lp = reversed ? c->remote_port : c->local_port;
    uint16_t rp = reversed ? c->local_port : c->remote_port;
    uint64_t k = deps_map_mix(c->proto, (uint64_t)lp << 16 | rp), a, b;
    memcpy(&a, la, 8);
    memcpy(&b, la + 8, 8);
    k = deps_map_mix(deps_map_mix(k, a), b);
    memcpy(&a, ra, 8);
    memcpy(&b, ra + 8, 8);
    return deps_map_mix(deps_map_mix(k, a), b) | 1;
}

static int deps_presync_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static void deps_presync_sample(struct deps_presync_pair **pairs, uint32_t *npairs,
                                const struct deps_presync_end *acc,
                                const struct deps_presync_end *con)
{
    struct deps_presync_pair *p = NULL;
    for (uint32_t i = 0; i < *npairs; i++)
        if ((*pairs)[i].accept_host == acc->host && (*pairs)[i].connect_host == con->host)
            p = &(*pairs)[i];
    if (!p) {
        struct deps_presync_pair *np = realloc(*pairs, (*npairs + 1) * sizeof *np);
        if (!np)
            return;
        *pairs = np;
        p = &np[(*npairs)++];
        p->accept_host = acc->host;
        p->connect_host = con->host;
        p->n = 0;
        p->d = malloc(DEPS_PRESYNC_SAMPLES * sizeof *p->d);
        if (!p->d) {
            (*npairs)--;
            return;
        }
    }
    if (p->n < DEPS_PRESYNC_SAMPLES)
        p->d[p->n++] = acc->t - con->t;
}

static void deps_input_presync(struct deps_input *in, int salvage)
{
    if (in->nhosts < 2)
        return;
    struct deps_map ends;
    deps_map_init(&ends);
    struct deps_presync_pair *pairs = NULL;
    uint32_t npairs = 0;
    /* a bounded prefix: the decode cost must stay small next to the merge's */
    uint32_t per_file = DEPS_PRESYNC_EVENTS / in->nfiles;
    if (per_file < DEPS_PRESYNC_FILE_MIN)
        per_file = DEPS_PRESYNC_FILE_MIN;
    if (per_file > DEPS_PRESYNC_FILE_MAX)
        per_file = DEPS_PRESYNC_FILE_MAX;
    for (uint32_t f = 0; f < in->nfiles; f++) {
        char err[512];
        struct trace_reader_options o = {.salvage = salvage};
        struct trace_reader *r = trace_reader_open(in->files[f].path, &o, err, sizeof err);
        if (!r)
            continue; /* the merge reports it */
        uint32_t host = in->files[f].host;
        int64_t off = in->hosts[host].offset_ns;
        struct trace_event ev;
        for (uint32_t n = 0; n < per_file && trace_reader_next(r, &ev) > 0; n++) {
            const struct trace_conn_event *c = &ev.u.conn;
            if (ev.type != TRACE_EV_CONN ||
                (ev.op != TRACE_CONN_ACCEPT && ev.op != TRACE_CONN_CONNECT) ||
                (c->family != AF_INET && c->family != AF_INET6) || !c->remote_port ||
                deps_presync_is_loopback(c->local_addr, c->family))
                continue;
            struct deps_presync_end *e = malloc(sizeof *e);
            if (!e)
                break;
            e->host = host;
            e->accepted = ev.op == TRACE_CONN_ACCEPT;
            e->t = (int64_t)(ev.ts_ns + ev.dur_ns) + off;
            struct deps_presync_end *o2 = deps_map_get(&ends, deps_presync_key(c, 1));
            if (o2 && o2->host != host && o2->accepted != e->accepted)
                deps_presync_sample(&pairs, &npairs, e->accepted ? e : o2, e->accepted ? o2 : e);
            struct deps_presync_end *old = deps_map_get(&ends, deps_presync_key(c, 0));
            if (deps_map_put(&ends, deps_presync_key(c, 0), e) != 0)
                free(e);
            else
                free(old); /* a reused tuple: the newer connection */
        }
        trace_reader_close(r);
    }
    for (size_t j = 0; j < ends.cap; j++)
        free(ends.slots[j].value);
    deps_map_free(&ends);
    /* medians, applied breadth first from host 0 */
    uint8_t *fixed = calloc(in->nhosts, 1);
    if (fixed) {
        fixed[0] = 1;
        for (uint32_t round = 0; round < in->nhosts; round++)
            for (uint32_t i = 0; i < npairs; i++) {
                struct deps_presync_pair *p = &pairs[i];
                if (fixed[p->accept_host] == fixed[p->connect_host])
                    continue;
                qsort(p->d, p->n, sizeof *p->d, deps_presync_cmp);
                int64_t m = p->d[p->n / 2];
                uint32_t h = fixed[p->accept_host] ? p->connect_host : p->accept_host;
                fixed[h] = 1;
                if (m > DEPS_PRESYNC_MIN_NS || m < -DEPS_PRESYNC_MIN_NS) {
                    /* the accept side runs m ahead of the connect side */
                    deps_input_correct_host(in, h, h == p->accept_host ? m : -m);
                    in->hosts[h].presync_pairs = p->n;
                    in->hosts[h].presync_ref =
                        h == p->accept_host ? p->connect_host : p->accept_host;
                }
            }
        free(fixed);
    }
    for (uint32_t i = 0; i < npairs; i++)
        free(pairs[i].d);
    free(pairs);
}

int deps_input_open(struct deps_input *in, const char *const *inputs, int ninputs, int salvage,
                    uint64_t window_ns, uint64_t max_table_bytes)
{
    memset(in, 0, sizeof *in);
    in->window_ns = window_ns;
    mem_budget_init(&in->tables, max_table_bytes ? max_table_bytes : DEPS_MAX_TABLE_BYTES);
    for (int i = 0; i < ninputs; i++) {
        struct stat st;
        if (stat(inputs[i], &st) != 0) {
            snprintf(in->err, sizeof in->err, "%s: %s", inputs[i], strerror(errno));
            return -1;
        }
        const char *first = NULL;
        int rc = S_ISDIR(st.st_mode) ? deps_input_add_dir(in, inputs[i], salvage)
                                     : deps_input_add_file(in, inputs[i], salvage, &first);
        if (rc != 0) /* a file named on its own is never skipped */
            return -1;
    }
    if (!in->nfiles) {
        snprintf(in->err, sizeof in->err, "no trace files given");
        return -1;
    }
    deps_input_presync(in, salvage);
    /* the common timeline starts at the earliest host: no offset below 0,
     * so no early event of a host behind the others maps before time 0 */
    int64_t lowest = 0;
    for (uint32_t h = 0; h < in->nhosts; h++)
        if (in->hosts[h].offset_ns < lowest)
            lowest = in->hosts[h].offset_ns;
    for (uint32_t h = 0; h < in->nhosts; h++)
        in->hosts[h].offset_ns -= lowest;
    return 0;
}

/* ts on the common timeline, saturating at 0 (a host corrected backwards
 * must not wrap to the far future) */
static uint64_t deps_input_shift(uint64_t ts, int64_t offset_ns)
{
    int64_t k = (int64_t)ts + offset_ns;
    return k < 0 ? 0 : (uint64_t)k;
}

uint64_t deps_input_common(const struct deps_input *in, uint32_t f, uint64_t ts)
{
    return deps_input_shift(ts, in->hosts[in->files[f].host].offset_ns);
}

void deps_input_correct_host(struct deps_input *in, uint32_t h, int64_t delta_ns)
{
    in->hosts[h].offset_ns -= delta_ns;
    in->hosts[h].corrected_ns -= delta_ns;
    in->all_read_until = 0; /* its unread events' keys moved */
}

uint64_t deps_input_total_bytes(const struct deps_input *in)
{
    uint64_t t = 0;
    for (uint32_t i = 0; i < in->nfiles; i++)
        t += in->files[i].bytes;
    return t;
}

/* --- heap of FIFOs keyed by their head's key ---
 * Each entry carries its FIFO's head key, so sifting compares adjacent
 * memory instead of chasing heap -> FIFO -> slot for every comparison (the
 * merge pops every event: this is the analyzer's innermost loop). */

static void deps_heap_up(struct deps_input *in, uint32_t i)
{
    struct deps_heap_entry x = in->heap[i];
    while (i > 0) {
        uint32_t p = (i - 1) / 2;
        if (in->heap[p].key <= x.key)
            break;
        in->heap[i] = in->heap[p];
        i = p;
    }
    in->heap[i] = x;
}

static void deps_heap_down(struct deps_input *in, uint32_t i)
{
    struct deps_heap_entry x = in->heap[i];
    for (;;) {
        uint32_t l = 2 * i + 1, r = l + 1, m = i;
        uint64_t mk = x.key;
        if (l < in->nheap && in->heap[l].key < mk) {
            m = l;
            mk = in->heap[l].key;
        }
        if (r < in->nheap && in->heap[r].key < mk)
            m = r;
        if (m == i)
            break;
        in->heap[i] = in->heap[m];
        i = m;
    }
    in->heap[i] = x;
}

static int deps_heap_push(struct deps_input *in, struct deps_fifo *q, uint64_t key)
{
    if (grow_array((void **)&in->heap, &in->capheap, (size_t)in->nheap + 1, sizeof *in->heap, 64) !=
        0)
        return -1;
    in->heap[in->nheap].key = key;
    in->heap[in->nheap].q = q;
    in->nheap++;
    deps_heap_up(in, in->nheap - 1);
    return 0;
}

static void deps_heap_remove_top(struct deps_input *in)
{
    in->nheap--;
    if (in->nheap) {
        in->heap[0] = in->heap[in->nheap];
        deps_heap_down(in, 0);
    }
}

int deps_input_charge(struct deps_input *in, uint32_t file, const char *table, uint64_t entries,
                      const char *key, uint64_t bytes)
{
    if (mem_budget_charge(&in->tables, bytes) == 0)
        return 0;
    const char *path = file < in->nfiles && in->files[file].path ? in->files[file].path : "?";
    snprintf(in->err, sizeof in->err,
             "%s: %s: the %s table (%" PRIu64 " %ss) would pass the analyzer's limit of %llu "
             "bytes for its tables",
             path, key, table, entries, table, (unsigned long long)in->tables.max);
    return -1;
}

static struct deps_fifo *deps_input_fifo(struct deps_input *in, uint32_t fi, uint64_t id)
{
    struct deps_input_file *f = &in->files[fi];
    struct deps_fifo *q = deps_map_get(&f->fifos, id);
    if (q)
        return q;
    char key[32];
    if (id)
        snprintf(key, sizeof key, "tid %" PRIu64, id - 1);
    else
        snprintf(key, sizeof key, "connection definitions");
    if (deps_input_charge(in, fi, "thread", f->nall + 1u, key,
                          sizeof *q + sizeof *f->all + DEPS_MAP_ENTRY_BYTES) != 0)
        return NULL;
    q = calloc(1, sizeof *q);
    if (!q)
        return NULL;
    q->file = fi;
    q->id = id;
    if (grow_array((void **)&f->all, &f->capall, (size_t)f->nall + 1, sizeof *f->all, 16) != 0) {
        free(q);
        return NULL;
    }
    f->all[f->nall++] = q;
    if (deps_map_put(&f->fifos, id, q) != 0)
        return NULL;
    return q;
}

static int deps_fifo_push(struct deps_input *in, struct deps_fifo *q, uint64_t key,
                          const struct trace_event *ev)
{
    if (q->n == q->cap) {
        uint32_t nc = q->cap ? q->cap * 2 : 8;
        char what[48];
        if (q->id)
            snprintf(what, sizeof what, "tid %" PRIu64 "'s event queue", q->id - 1);
        else
            snprintf(what, sizeof what, "the connection definitions' queue");
        if (deps_input_charge(in, q->file, "thread", in->files[q->file].nall, what,
                              (uint64_t)(nc - q->cap) * sizeof *q->q) != 0)
            return -1;
        struct deps_queued *nq = malloc(nc * sizeof *nq);
        if (!nq)
            return -1;
        for (uint32_t i = 0; i < q->n; i++)
            nq[i] = q->q[(q->head + i) & (q->cap - 1)];
        free(q->q);
        q->q = nq;
        q->cap = nc;
        q->head = 0;
    }
    if (key < q->last_key && ev->type == TRACE_EV_DB && q->n > 1 &&
        q->q[q->head & (q->cap - 1)].key <= key) {
        /* A DB event whose answer another thread read (MariaDB
         * Connector/J's batches: tracer/preload/db_wire.c) is the sender's but was
         * written by the reader, so it comes after the sender's later
         * events: put it in its place among the events still queued
         * (after the FIFO's head, whose key the heap holds) */
        uint32_t i = q->n;
        while (i > 1 && q->q[(q->head + i - 1) & (q->cap - 1)].key > key) {
            q->q[(q->head + i) & (q->cap - 1)] = q->q[(q->head + i - 1) & (q->cap - 1)];
            i--;
        }
        struct deps_queued *slot = &q->q[(q->head + i) & (q->cap - 1)];
        slot->key = key;
        slot->ev = *ev;
        slot->ev.data = NULL;
        q->n++;
        return 0;
    }
    if (key < q->last_key) {
        /* keep each FIFO sorted. A CPU event is keyed by its start, which
         * may lie before the previous event's end (CPU carried over);
         * connection definitions (one FIFO for all threads) come from the
         * process ring in definition order */
        if (ev->type != TRACE_EV_CPU && ev->type != TRACE_EV_CONN &&
            q->last_key - key > DEPS_BACKWARDS_NS) {
            in->backwards++;
            if (q->last_key - key > in->backwards_worst_ns) {
                in->backwards_worst_ns = q->last_key - key;
                in->backwards_file = q->file;
                in->backwards_tid = ev->tid;
            }
        }
        key = q->last_key;
    }
    q->last_key = key;
    struct deps_queued *slot = &q->q[(q->head + q->n) & (q->cap - 1)]; /* cap: a power of 2 */
    slot->key = key;
    slot->ev = *ev;
    slot->ev.data = NULL;
    q->n++;
    if (q->n == 1)
        return deps_heap_push(in, q, key);
    return 0;
}

/* Reads events of file fi until its max key reaches `until` or it ends. */
static int deps_input_fill(struct deps_input *in, uint32_t fi, uint64_t until)
{
    struct deps_input_file *f = &in->files[fi];
    struct trace_event ev;
    int64_t off = in->hosts[f->host].offset_ns;
    uint64_t last_qid = 0;
    struct deps_fifo *last_q = NULL;
    while (!f->eof && f->max_key < until) {
        int rc = trace_reader_next(f->reader, &ev);
        if (rc < 0) {
            snprintf(in->err, sizeof in->err, "%s", trace_reader_error(f->reader));
            return -1;
        }
        if (rc == 0) {
            f->eof = 1;
            break;
        }
        if (ev.type == TRACE_EV_STRING || ev.type == TRACE_EV_STACK)
            continue; /* the reader keeps the tables; events name them by id */
        uint64_t key = deps_input_shift(ev.ts_ns, off);
        if (ev.type != TRACE_EV_CPU)
            key += ev.dur_ns;
        if (!f->first_key)
            f->first_key = key;
        if (key > f->max_key)
            f->max_key = key;
        else if (f->max_key - key > f->max_lag)
            f->max_lag = f->max_key - key;
        uint64_t qid = ev.type == TRACE_EV_CONN ? 0 : (uint64_t)ev.tid + 1;
        /* a thread's events come in runs (one drain round): skip the lookup */
        struct deps_fifo *q = qid == last_qid && last_q ? last_q : deps_input_fifo(in, fi, qid);
        last_qid = qid;
        last_q = q;
        if (!q || deps_fifo_push(in, q, key, &ev) != 0) {
            if (!in->err[0]) /* else the table limit's reason */
                snprintf(in->err, sizeof in->err, "out of memory");
            return -1;
        }
    }
    return 0;
}

/* The reading-ahead this file needs: a few times the worst disorder seen in
 * it so far (the collector's drain rounds: a few ms), never below
 * DEPS_WINDOW_FLOOR_NS nor above the configured window. Holding the whole
 * configured window (200 ms of events, tens of MB at a busy server's
 * rate) would make every queued event a cache miss twice. Until the file
 * has shown DEPS_WINDOW_LEARN_NS of events there is no "so far": the
 * whole window is held. The first requests (whose start is the plan's
 * origin) come then, and the first drain rounds are not the later ones: a
 * slow recorder's (ASan, a loaded machine) lag by more than the floor, and
 * the collector's early ones come close together (TSC recalibrations)
 * where later, after an idle gap, a round covers its whole 100 ms nap.
 * Learned from the first 200 ms only, the window was too small by then:
 * the first request of one tier came after a later one of the other, and
 * the origin moved by 6-7 ms (analyze_sample). The price: a busy file's
 * first window is queued whole, and the queues keep that size, so the
 * analyze benchmark's peak RSS went from 49 back to 77 MB (the fixed
 * window's figure; still bounded by the window, not by trace length). */
#define DEPS_WINDOW_FLOOR_NS 20000000ull
#define DEPS_WINDOW_LEARN_NS 2000000000ull
#define DEPS_WINDOW_LAG_FACTOR 4u

static uint64_t deps_input_window(const struct deps_input *in, const struct deps_input_file *f)
{
    if (f->max_key - f->first_key < DEPS_WINDOW_LEARN_NS)
        return in->window_ns;
    uint64_t w = f->max_lag * DEPS_WINDOW_LAG_FACTOR;
    if (w < DEPS_WINDOW_FLOOR_NS)
        w = DEPS_WINDOW_FLOOR_NS;
    return w < in->window_ns ? w : in->window_ns;
}

/* Before key k pops, every file must be read as far past k as its window
 * says, not only the file k came from: a file whose queued events all lie
 * beyond k (an idle tier, a thread that waited) may still hold unread
 * events that end before k, written after a later one by the same drain
 * round. Checked only when k passes in->all_read_until, the point up to
 * which every file was last known to be read far enough. Returns 1 when a
 * file was read (the heap may have a new minimum), 0, or -1 on damage. */
static int deps_input_fill_others(struct deps_input *in, uint64_t k)
{
    int filled = 0;
    uint64_t ready = UINT64_MAX;
    for (uint32_t i = 0; i < in->nfiles; i++) {
        struct deps_input_file *g = &in->files[i];
        if (g->eof)
            continue;
        uint64_t w = deps_input_window(in, g);
        if (g->max_key < k + w) {
            /* an eighth of a window more, so the next check is that far
             * off instead of at the next key (an O(files) loop per event) */
            if (deps_input_fill(in, i, k + w + w / 8) != 0)
                return -1;
            filled = 1;
            if (g->eof)
                continue;
        }
        uint64_t g_ready = g->max_key > w ? g->max_key - w : 0;
        if (g_ready < ready)
            ready = g_ready;
    }
    in->all_read_until = ready;
    return filled;
}

int deps_input_next(struct deps_input *in, uint32_t *file, struct deps_queued **out)
{
    if (!in->events && !in->nheap) {
        for (uint32_t i = 0; i < in->nfiles; i++)
            if (deps_input_fill(in, i, in->window_ns) != 0)
                return -1;
    }
    for (;;) {
        if (!in->nheap) {
            int any = 0;
            for (uint32_t i = 0; i < in->nfiles; i++) {
                if (in->files[i].eof)
                    continue;
                any = 1;
                if (deps_input_fill(in, i, in->files[i].max_key + in->window_ns) != 0)
                    return -1;
            }
            if (!any && !in->nheap)
                return 0;
            continue;
        }
        struct deps_fifo *q = in->heap[0].q;
        struct deps_input_file *f = &in->files[q->file];
        uint64_t k = in->heap[0].key;
        uint64_t window = deps_input_window(in, f);
        if (!f->eof && f->max_key < k + window) {
            if (deps_input_fill(in, q->file, k + window) != 0)
                return -1;
            continue; /* the heap may have a new minimum */
        }
        if (k > in->all_read_until) {
            int filled = deps_input_fill_others(in, k);
            if (filled < 0)
                return -1;
            if (filled)
                continue;
        }
        /* the slot stays valid until the next call (fills happen there) */
        struct deps_queued *cur = &q->q[q->head];
        q->head = (q->head + 1) & (q->cap - 1);
        q->n--;
        if (q->n) {
            in->heap[0].key = q->q[q->head].key;
            /* this FIFO's next slot is read when it comes up again: queued
             * events are far apart in memory (the reading-ahead holds
             * megabytes), so fetch it now instead of stalling then */
            if (q->n > 1) {
                const char *next = (const char *)&q->q[(q->head + 1) & (q->cap - 1)];
                __builtin_prefetch(next);
                __builtin_prefetch(next + 64);
            }
            deps_heap_down(in, 0);
        } else
            deps_heap_remove_top(in);
        /* A CPU event is keyed by its start but written at its end (the
         * thread's next event), so after a long run or an untraced wait it
         * comes behind other threads' events by nature; only its place in
         * its own thread matters (it joins the thread's current block). A
         * LOSS is keyed by the start of the span it covers. */
        if (cur->ev.type != TRACE_EV_CPU && cur->ev.type != TRACE_EV_LOSS) {
            if (cur->key < in->last_key)
                in->late++;
            else
                in->last_key = cur->key;
        }
        in->events++;
        *file = q->file;
        *out = cur;
        return 1;
    }
}

void deps_input_close(struct deps_input *in)
{
    for (uint32_t i = 0; i < in->nfiles; i++) {
        struct deps_input_file *f = &in->files[i];
        for (uint32_t j = 0; j < f->nall; j++) {
            free(f->all[j]->q);
            free(f->all[j]);
        }
        free(f->all);
        deps_map_free(&f->fifos);
        if (f->reader)
            trace_reader_close(f->reader);
        free(f->path);
    }
    for (uint32_t i = 0; i < in->nhosts; i++)
        free(in->hosts[i].name);
    for (uint32_t i = 0; i < in->nskipped; i++)
        free(in->skipped[i]);
    free(in->skipped);
    free(in->files);
    free(in->hosts);
    free(in->heap);
    memset(in, 0, sizeof *in);
}
