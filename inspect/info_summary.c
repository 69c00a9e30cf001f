/* info_summary.c - what `preplay info DIR` says first: per component
 * (processes, threads, events, CPU, bytes) and per request label (LABEL
 * events per component), summed from the per-process JSON objects info.c
 * builds, so text and --json show the same numbers. It must never print or
 * change a process's own data: the detail that follows is info.c's. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "info_summary.h"

static const char *info_summary_component_name(json_t *proc)
{
    const char *c = json_string_value(json_object_get(proc, "component"));
    return c && *c ? c : "(no component)";
}

static void info_summary_add(json_t *to, const char *key, json_t *from)
{
    json_object_set_new(to, key,
                        json_integer(json_integer_value(json_object_get(to, key)) +
                                     json_integer_value(json_object_get(from, key))));
}

/* Events of a process: every type but the trace's own metadata (STRING,
 * STACK). */
static json_int_t info_summary_events(json_t *proc)
{
    const char *type;
    json_t *v;
    json_int_t n = 0;
    json_object_foreach(json_object_get(proc, "events"), type, v)
    {
        if (strcmp(type, "string") != 0 && strcmp(type, "stack") != 0)
            n += json_integer_value(v);
    }
    return n;
}

static int info_summary_cmp_component(const void *a, const void *b)
{
    return strcmp(json_string_value(json_object_get(*(json_t *const *)a, "component")),
                  json_string_value(json_object_get(*(json_t *const *)b, "component")));
}

static int info_summary_cmp_label(const void *a, const void *b)
{
    json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    int c = info_summary_cmp_component(a, b);
    if (c)
        return c;
    json_int_t nx = json_integer_value(json_object_get(x, "count"));
    json_int_t ny = json_integer_value(json_object_get(y, "count"));
    if (nx != ny)
        return nx < ny ? 1 : -1;
    return strcmp(json_string_value(json_object_get(x, "label")),
                  json_string_value(json_object_get(y, "label")));
}

/* The values of object o (each with a "component" key) as a sorted array. */
static json_t *info_summary_sorted(json_t *o, int (*cmp)(const void *, const void *))
{
    size_t n = json_object_size(o), i = 0;
    json_t **v = n ? calloc(n, sizeof *v) : NULL;
    json_t *a = json_array();
    const char *key;
    json_t *x;
    if (n && !v)
        return a;
    json_object_foreach(o, key, x) v[i++] = x;
    if (n) /* qsort's pointer must not be NULL, even for no elements */
        qsort(v, n, sizeof *v, cmp);
    for (i = 0; i < n; i++)
        json_array_append(a, v[i]);
    free(v);
    return a;
}

json_t *info_summary_components(json_t *process_list)
{
    json_t *by = json_object(), *proc;
    size_t i;
    json_array_foreach(process_list, i, proc)
    {
        const char *name = info_summary_component_name(proc);
        json_t *c = json_object_get(by, name);
        if (!c) {
            c = json_object();
            json_object_set_new(c, "component", json_string(name));
            json_object_set_new(c, "bytes", json_object());
            json_object_set_new(by, name, c);
        }
        json_object_set_new(c, "processes",
                            json_integer(json_integer_value(json_object_get(c, "processes")) + 1));
        json_object_set_new(
            c, "threads",
            json_integer(json_integer_value(json_object_get(c, "threads")) +
                         (json_int_t)json_array_size(json_object_get(proc, "threads"))));
        json_object_set_new(c, "events",
                            json_integer(json_integer_value(json_object_get(c, "events")) +
                                         info_summary_events(proc)));
        static const char *const sums[] = {"cpu_ns", "lock_wait_ns", "lost_events",
                                           "bytes_on_disk"};
        for (size_t k = 0; k < sizeof sums / sizeof sums[0]; k++)
            info_summary_add(c, sums[k], proc);
        const char *key;
        json_t *v;
        json_object_foreach(json_object_get(proc, "bytes"), key, v)
            info_summary_add(json_object_get(c, "bytes"), key, json_object_get(proc, "bytes"));
        json_int_t labelled = 0;
        json_object_foreach(json_object_get(proc, "labels"), key, v) labelled +=
            json_integer_value(v);
        json_object_set_new(
            c, "labelled_requests",
            json_integer(json_integer_value(json_object_get(c, "labelled_requests")) + labelled));
    }
    json_t *a = info_summary_sorted(by, info_summary_cmp_component);
    json_decref(by);
    return a;
}

json_t *info_summary_labels(json_t *process_list)
{
    json_t *by = json_object(), *proc;
    size_t i;
    json_array_foreach(process_list, i, proc)
    {
        const char *comp = info_summary_component_name(proc), *label;
        json_t *n;
        json_object_foreach(json_object_get(proc, "labels"), label, n)
        {
            /* component, newline, label: one entry per pair */
            size_t cl = strlen(comp), ll = strlen(label);
            char *key = malloc(cl + ll + 2);
            if (!key)
                continue;
            memcpy(key, comp, cl);
            key[cl] = '\n';
            memcpy(key + cl + 1, label, ll + 1);
            json_t *e = json_object_get(by, key);
            if (!e) {
                e = json_object();
                json_object_set_new(e, "component", json_string(comp));
                json_object_set_new(e, "label", json_string(label));
                json_object_set_new(by, key, e);
            }
            json_object_set_new(e, "count",
                                json_integer(json_integer_value(json_object_get(e, "count")) +
                                             json_integer_value(n)));
            free(key);
        }
    }
    json_t *a = info_summary_sorted(by, info_summary_cmp_label);
    json_decref(by);
    return a;
}

static int64_t info_summary_int(json_t *o, const char *key)
{
    return (int64_t)json_integer_value(json_object_get(o, key));
}

void info_summary_print(json_t *process_list)
{
    json_t *comps = info_summary_components(process_list);
    json_t *labels = info_summary_labels(process_list);
    json_t *c;
    size_t i;
    printf("by component:\n");
    json_array_foreach(comps, i, c)
    {
        json_t *b = json_object_get(c, "bytes");
        printf("  %-14s %" PRId64 " process%s, %" PRId64 " threads, %" PRId64
               " events, cpu %.3f s, %" PRId64 " bytes on disk; file read %" PRId64
               " B, written %" PRId64 " B; net sent %" PRId64 " B, received %" PRId64 " B; %" PRId64
               " labelled requests, %" PRId64 " lost\n",
               json_string_value(json_object_get(c, "component")), info_summary_int(c, "processes"),
               info_summary_int(c, "processes") == 1 ? "" : "es", info_summary_int(c, "threads"),
               info_summary_int(c, "events"), (double)info_summary_int(c, "cpu_ns") / 1e9,
               info_summary_int(c, "bytes_on_disk"), info_summary_int(b, "file_read"),
               info_summary_int(b, "file_written"), info_summary_int(b, "net_sent"),
               info_summary_int(b, "net_received"), info_summary_int(c, "labelled_requests"),
               info_summary_int(c, "lost_events"));
    }
    if (json_array_size(labels))
        printf("by request label (LABEL events: requests each component received):\n");
    json_array_foreach(labels, i, c)
    {
        printf("  %-14s %-40s %8" PRId64 "\n", json_string_value(json_object_get(c, "component")),
               json_string_value(json_object_get(c, "label")), info_summary_int(c, "count"));
    }
    json_decref(comps);
    json_decref(labels);
}
