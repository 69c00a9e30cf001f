/* deps_input.c - opening a recording's trace files and merging them by
 * time (see deps_input.h for the ordering argument). Never reads a whole
 * file: each reader holds one frame and the FIFOs hold the window. */
#include "deps_input.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
        return -1;
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
        for (size_t i = 0; i < n && rc == 0; i++)
            rc = deps_input_add_file(in, names[i], salvage, &first);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return rc;
}

int deps_input_open(struct deps_input *in, const char *const *inputs, int ninputs, int salvage,
                    uint64_t window_ns)
{
    memset(in, 0, sizeof *in);
    in->window_ns = window_ns;
    for (int i = 0; i < ninputs; i++) {
        struct stat st;
        if (stat(inputs[i], &st) != 0) {
            snprintf(in->err, sizeof in->err, "%s: %s", inputs[i], strerror(errno));
            return -1;
        }
        const char *first = NULL;
        int rc = S_ISDIR(st.st_mode) ? deps_input_add_dir(in, inputs[i], salvage)
                                     : deps_input_add_file(in, inputs[i], salvage, &first);
        if (rc != 0)
            return -1;
    }
    if (!in->nfiles) {
        snprintf(in->err, sizeof in->err, "no trace files given");
        return -1;
    }
    return 0;
}

uint64_t deps_input_common(const struct deps_input *in, uint32_t f, uint64_t ts)
{
    return ts + (uint64_t)in->hosts[in->files[f].host].offset_ns;
}

void deps_input_correct_host(struct deps_input *in, uint32_t h, int64_t delta_ns)
{
    in->hosts[h].offset_ns -= delta_ns;
    in->hosts[h].corrected_ns -= delta_ns;
}

uint64_t deps_input_total_bytes(const struct deps_input *in)
{
    uint64_t t = 0;
    for (uint32_t i = 0; i < in->nfiles; i++)
        t += in->files[i].bytes;
    return t;
}

/* --- heap of FIFOs keyed by their head's key --- */

static uint64_t deps_fifo_head_key(const struct deps_fifo *q)
{
    return q->q[q->head].key;
}

static void deps_heap_swap(struct deps_input *in, uint32_t a, uint32_t b)
{
    struct deps_fifo *t = in->heap[a];
    in->heap[a] = in->heap[b];
    in->heap[b] = t;
    in->heap[a]->heap_pos = (int)a;
    in->heap[b]->heap_pos = (int)b;
}

static void deps_heap_up(struct deps_input *in, uint32_t i)
{
    while (i > 0) {
        uint32_t p = (i - 1) / 2;
        if (deps_fifo_head_key(in->heap[p]) <= deps_fifo_head_key(in->heap[i]))
            break;
        deps_heap_swap(in, i, p);
        i = p;
    }
}

static void deps_heap_down(struct deps_input *in, uint32_t i)
{
    for (;;) {
        uint32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < in->nheap && deps_fifo_head_key(in->heap[l]) < deps_fifo_head_key(in->heap[m]))
            m = l;
        if (r < in->nheap && deps_fifo_head_key(in->heap[r]) < deps_fifo_head_key(in->heap[m]))
            m = r;
        if (m == i)
            return;
        deps_heap_swap(in, i, m);
        i = m;
    }
}

static int deps_heap_push(struct deps_input *in, struct deps_fifo *q)
{
    if (in->nheap == in->capheap) {
        uint32_t nc = in->capheap ? in->capheap * 2 : 64;
        struct deps_fifo **nh = realloc(in->heap, nc * sizeof *nh);
        if (!nh)
            return -1;
        in->heap = nh;
        in->capheap = nc;
    }
    in->heap[in->nheap] = q;
    q->heap_pos = (int)in->nheap;
    in->nheap++;
    deps_heap_up(in, in->nheap - 1);
    return 0;
}

static void deps_heap_remove_top(struct deps_input *in)
{
    in->heap[0]->heap_pos = -1;
    in->nheap--;
    if (in->nheap) {
        in->heap[0] = in->heap[in->nheap];
        in->heap[0]->heap_pos = 0;
        deps_heap_down(in, 0);
    }
}

static struct deps_fifo *deps_input_fifo(struct deps_input *in, uint32_t fi, uint64_t id)
{
    struct deps_input_file *f = &in->files[fi];
    struct deps_fifo *q = deps_map_get(&f->fifos, id);
    if (q)
        return q;
    q = calloc(1, sizeof *q);
    if (!q)
        return NULL;
    q->heap_pos = -1;
    q->file = fi;
    if (f->nall == f->capall) {
        uint32_t nc = f->capall ? f->capall * 2 : 16;
        struct deps_fifo **na = realloc(f->all, nc * sizeof *na);
        if (!na) {
            free(q);
            return NULL;
        }
        f->all = na;
        f->capall = nc;
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
        uint32_t nc = q->cap ? q->cap * 2 : 64;
        struct deps_queued *nq = malloc(nc * sizeof *nq);
        if (!nq)
            return -1;
        for (uint32_t i = 0; i < q->n; i++)
            nq[i] = q->q[(q->head + i) % (q->cap ? q->cap : 1)];
        free(q->q);
        q->q = nq;
        q->cap = nc;
        q->head = 0;
    }
    if (key < q->last_key)
        key = q->last_key; /* keep each FIFO sorted */
    q->last_key = key;
    struct deps_queued *slot = &q->q[(q->head + q->n) % q->cap];
    slot->key = key;
    slot->ev = *ev;
    slot->ev.data = NULL;
    q->n++;
    if (q->n == 1)
        return deps_heap_push(in, q);
    return 0;
}

/* Reads events of file fi until its max key reaches `until` or it ends. */
static int deps_input_fill(struct deps_input *in, uint32_t fi, uint64_t until)
{
    struct deps_input_file *f = &in->files[fi];
    struct trace_event ev;
    int64_t off = in->hosts[f->host].offset_ns;
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
        uint64_t key = ev.ts_ns + (uint64_t)off;
        if (ev.type != TRACE_EV_CPU)
            key += ev.dur_ns;
        if (key > f->max_key)
            f->max_key = key;
        uint64_t qid = ev.type == TRACE_EV_CONN ? 0 : (uint64_t)ev.tid + 1;
        struct deps_fifo *q = deps_input_fifo(in, fi, qid);
        if (!q || deps_fifo_push(in, q, key, &ev) != 0) {
            snprintf(in->err, sizeof in->err, "out of memory");
            return -1;
        }
    }
    return 0;
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
        struct deps_fifo *q = in->heap[0];
        struct deps_input_file *f = &in->files[q->file];
        uint64_t k = deps_fifo_head_key(q);
        if (!f->eof && f->max_key < k + in->window_ns) {
            if (deps_input_fill(in, q->file, k + in->window_ns) != 0)
                return -1;
            continue; /* the heap may have a new minimum */
        }
        in->current = q->q[q->head];
        q->head = (q->head + 1) % q->cap;
        q->n--;
        if (q->n)
            deps_heap_down(in, (uint32_t)q->heap_pos);
        else
            deps_heap_remove_top(in);
        if (in->current.key < in->last_key)
            in->late++;
        else
            in->last_key = in->current.key;
        in->events++;
        *file = q->file;
        *out = &in->current;
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
    free(in->files);
    free(in->hosts);
    free(in->heap);
    memset(in, 0, sizeof *in);
}
