/* trace_counters.c - a .counters file's COUNTERS records into memory
 * (trace_counters.h). The trace reader checks each record (FORMAT.md
 * §9); here: the counts bounded (windows, names), one window length
 * throughout, windows in time order. Never prints; keeps nothing of a
 * file it refuses. */
#include "trace_counters.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void trace_counters_file_free(struct trace_counters_file *f)
{
    for (size_t i = 0; i < f->nnames; i++)
        free(f->names[i]);
    free(f->names);
    for (size_t w = 0; w < f->nwindows; w++)
        free(f->windows[w].values);
    free(f->windows);
    memset(f, 0, sizeof *f);
}

long trace_counters_index(const struct trace_counters_file *f, const char *name)
{
    for (size_t i = 0; i < f->nnames; i++)
        if (!strcmp(f->names[i], name))
            return (long)i;
    return -1;
}

/* The column of c, added (and every earlier window given NAN in it) when
 * new; -1 out of memory, -2 over the limit. */
static long trace_counters_column(struct trace_counters_file *f, const struct trace_counter *c)
{
    for (size_t i = 0; i < f->nnames; i++)
        if (strlen(f->names[i]) == c->name_len && !memcmp(f->names[i], c->name, c->name_len))
            return (long)i;
    if (f->nnames >= TRACE_COUNTERS_MAX_NAMES)
        return -2;
    char **n = realloc(f->names, (f->nnames + 1) * sizeof *n);
    if (!n)
        return -1;
    f->names = n;
    if (!(n[f->nnames] = strndup(c->name, c->name_len)))
        return -1;
    for (size_t w = 0; w < f->nwindows; w++) {
        double *v = realloc(f->windows[w].values, (f->nnames + 1) * sizeof *v);
        if (!v)
            return -1; /* the name stays: nnames is not raised, freed with the rest */
        v[f->nnames] = NAN;
        f->windows[w].values = v;
    }
    return (long)f->nnames++;
}

/* Adds the window of ev (its entries in c, n of them). 0, or -1 with err. */
static int trace_counters_add(struct trace_counters_file *f, const struct trace_event *ev,
                              const struct trace_counter *c, size_t n, const char *path, char *err,
                              size_t errlen)
{
    size_t w = f->nwindows;
    if (w >= TRACE_COUNTERS_MAX_WINDOWS) {
        snprintf(err, errlen, "%s: COUNTERS windows %zu exceed the limit %u", path, w + 1,
                 TRACE_COUNTERS_MAX_WINDOWS);
        return -1;
    }
    if (!w) {
        f->window_s = (double)ev->u.counters.window_ns / 1e9;
        f->tick_s = (double)ev->u.counters.tick_ns / 1e9;
    } else if ((double)ev->u.counters.window_ns / 1e9 != f->window_s) {
        snprintf(err, errlen, "%s: window %zu: window_ns %llu differs from the first window's %.0f",
                 path, w, (unsigned long long)ev->u.counters.window_ns, f->window_s * 1e9);
        return -1;
    } else if (ev->ts_ns < f->windows[w - 1].start_ns + f->windows[w - 1].length_ns) {
        snprintf(err, errlen, "%s: window %zu starts at %llu ns, before the previous one ended",
                 path, w, (unsigned long long)ev->ts_ns);
        return -1;
    }
    if (!(f->window_s > 0)) {
        snprintf(err, errlen, "%s: window %zu: window_ns 0 (the window length asked for)", path, w);
        return -1;
    }
    struct trace_counters_window *nw = realloc(f->windows, (w + 1) * sizeof *nw);
    if (!nw)
        goto oom;
    f->windows = nw;
    nw[w] = (struct trace_counters_window){.start_ns = ev->ts_ns, .length_ns = ev->dur_ns};
    long col[TRACE_MAX_COUNTERS];
    for (size_t i = 0; i < n; i++)
        if ((col[i] = trace_counters_column(f, &c[i])) < 0) {
            if (col[i] == -1)
                goto oom;
            snprintf(err, errlen, "%s: window %zu: counter names exceed the limit %u", path, w,
                     TRACE_COUNTERS_MAX_NAMES);
            return -1;
        }
    if (!(nw[w].values = malloc((f->nnames ? f->nnames : 1) * sizeof(double))))
        goto oom;
    f->nwindows++;
    for (size_t i = 0; i < f->nnames; i++)
        nw[w].values[i] = NAN;
    for (size_t i = 0; i < n; i++)
        nw[w].values[col[i]] = c[i].value;
    return 0;
oom:
    snprintf(err, errlen, "%s: out of memory", path);
    return -1;
}

int trace_counters_read(const char *path, struct trace_counters_file *f, char *err, size_t errlen)
{
    memset(f, 0, sizeof *f);
    struct trace_reader_options o = {0};
    struct trace_reader *r = trace_reader_open(path, &o, err, errlen);
    if (!r)
        return -1;
    const struct trace_header *h = trace_reader_header(r);
    snprintf(f->host, sizeof f->host, "%s", h->host);
    snprintf(f->recording_id, sizeof f->recording_id, "%s", h->recording_id);
    snprintf(f->record_options, sizeof f->record_options, "%s", h->record_options);
    f->mono_anchor_ns = h->mono_anchor_ns;
    f->real_anchor_ns = h->real_anchor_ns;
    struct trace_counter *c = malloc(TRACE_MAX_COUNTERS * sizeof *c);
    struct trace_event ev;
    int rc = 0, got = 0;
    if (!c) {
        snprintf(err, errlen, "%s: out of memory", path);
        rc = -1;
    }
    while (!rc && (got = trace_reader_next(r, &ev)) == 1)
        if (ev.type == TRACE_EV_COUNTERS && ev.op == TRACE_COUNTERS_WINDOW)
            rc = trace_counters_add(f, &ev, c, trace_counters_decode(&ev, c), path, err, errlen);
    if (!rc && got < 0) {
        snprintf(err, errlen, "%s", trace_reader_error(r));
        rc = -1;
    }
    free(c);
    trace_reader_close(r);
    if (rc < 0)
        trace_counters_file_free(f);
    return rc < 0 ? -1 : 0;
}
