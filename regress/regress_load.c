/* regress_load.c - results files into the table `preplay regress`
 * analyzes (regress_load.h). Refuses, naming the file and what is
 * missing: a file without counters (before results 2.2, a drive, or
 * `run --window 0`), fewer windows than the analysis needs, window
 * lengths that differ (counters over 10 s and 2 s windows do not vary
 * alike), a target with no label in common with a baseline (results of
 * different apps). A recording (regress_trace.h) reads like a results
 * file. Keeps the counters every file has. Never prints. */
#include "regress_load.h"
#include "machine_counters.h"
#include "regress_trace.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 1 when a and b share a label (files without labels share anything). */
static int regress_share_label(const struct results_file *a, const struct results_file *b)
{
    if (!a->nlabels || !b->nlabels)
        return 1;
    for (size_t i = 0; i < a->nlabels; i++)
        if (results_file_label(b, a->labels[i].name))
            return 1;
    return 0;
}

/* Reads and checks file i. */
static int regress_load_one(const char *path, size_t i, size_t n, size_t min_windows,
                            struct regress_input *in, char *err, size_t errlen)
{
    struct results_file *rf = &in->files[i];
    char rerr[RESULTS_ERR_LEN];
    const char *role = i + 1 == n ? "target" : "baseline";
    int recording = regress_trace_is_recording(path);
    if (recording ? regress_trace_load(path, role, rf, rerr, sizeof rerr)
                  : results_read(path, rf, rerr, sizeof rerr)) {
        snprintf(err, errlen, "%s", rerr);
        return -1;
    }
    in->nfiles++;
    if (!rf->counters.present) {
        snprintf(err, errlen,
                 "%s: %s has no counters (results before 2.2, a drive, or run --window 0): "
                 "replay it with preplay run",
                 path, role);
        return -1;
    }
    if (rf->counters.nwindows < min_windows) {
        snprintf(err, errlen,
                 "%s: %s has %zu counter windows, regress needs at least %zu (%s longer, a "
                 "smaller %s --window, or --min-windows)",
                 path, role, rf->counters.nwindows, min_windows, recording ? "record" : "run",
                 recording ? "record" : "run");
        return -1;
    }
    double w0 = in->files[0].counters.window_s, w = rf->counters.window_s;
    if (fabs(w - w0) > 1e-6 * w0) {
        snprintf(err, errlen, "%s: window_s %g differs from %s's %g: run both with one --window",
                 path, w, in->table.tests[0].name, w0);
        return -1;
    }
    if (i + 1 == n)
        for (size_t b = 0; b + 1 < n; b++)
            if (!regress_share_label(rf, &in->files[b])) {
                snprintf(err, errlen,
                         "%s: target has no label in common with baseline %s: results of "
                         "different apps?",
                         path, in->table.tests[b].name);
                return -1;
            }
    return 0;
}

/* The counters of file 0 that every file has, in file 0's order. */
static int regress_common_names(struct regress_input *in, char *err, size_t errlen)
{
    const struct results_counters_read *c0 = &in->files[0].counters;
    in->names = calloc(c0->nnames ? c0->nnames : 1, sizeof *in->names);
    if (!in->names) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    size_t nc = 0;
    for (size_t k = 0; k < c0->nnames; k++) {
        int everywhere = 1;
        for (size_t f = 1; everywhere && f < in->nfiles; f++)
            everywhere = results_counter_index(&in->files[f].counters, c0->names[k]) >= 0;
        if (everywhere)
            in->names[nc++] = c0->names[k];
    }
    if (!nc) {
        snprintf(err, errlen, "%s: no counter is in every file", in->table.tests[0].name);
        return -1;
    }
    in->table.ncounters = nc;
    in->table.names = (const char *const *)in->names;
    return 0;
}

/* File f's windows, its columns picked by name; its environment. 0, or -1
 * with err: out of memory, or a value past its counter's bound
 * (machine_counters_max: a hostile 1e308 for a share of the CPU). */
static int regress_fill_test(struct regress_input *in, size_t f, char *err, size_t errlen)
{
    const struct results_counters_read *c = &in->files[f].counters;
    struct regress_test *t = &in->table.tests[f];
    size_t nc = in->table.ncounters;
    t->nwindows = c->nwindows;
    t->values = malloc((c->nwindows * nc + 1) * sizeof *t->values);
    if (!t->values) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t k = 0; k < nc; k++) {
        long col = results_counter_index(c, in->names[k]);
        const char *why;
        double max = machine_counters_max(in->names[k], &why);
        for (size_t w = 0; w < c->nwindows; w++) {
            double v = c->windows[w].values[col];
            if (v > max) {
                snprintf(err, errlen, "%s: window %zu: %s is %.6g, above its bound %.6g (%s)",
                         t->name, w, in->names[k], v, max, why);
                return -1;
            }
            t->values[w * nc + k] = v;
        }
    }
    snprintf(in->num_env[f][0], sizeof in->num_env[f][0], "%ld", c->cpus);
    snprintf(in->num_env[f][1], sizeof in->num_env[f][1], "%.0f", c->memory_bytes);
    const char *env[REGRESS_NENV] = {c->host,
                                     c->cpus > 0 ? in->num_env[f][0] : NULL,
                                     isfinite(c->memory_bytes) ? in->num_env[f][1] : NULL,
                                     c->cpu_model,
                                     c->kernel,
                                     c->emulated_type,
                                     in->files[f].instance};
    memcpy(t->env, env, sizeof env);
    return 0;
}

int regress_load(const char *const *paths, size_t n, size_t min_windows, struct regress_input *in,
                 char *err, size_t errlen)
{
    memset(in, 0, sizeof *in);
    in->files = calloc(n, sizeof *in->files);
    in->table.tests = calloc(n, sizeof *in->table.tests);
    in->num_env = calloc(n, sizeof *in->num_env);
    if (!in->files || !in->table.tests || !in->num_env) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    in->table.ntests = n;
    for (size_t i = 0; i < n; i++)
        in->table.tests[i].name = paths[i];
    for (size_t i = 0; i < n; i++)
        if (regress_load_one(paths[i], i, n, min_windows, in, err, errlen))
            goto fail;
    if (regress_common_names(in, err, errlen))
        goto fail;
    for (size_t f = 0; f < n; f++)
        if (regress_fill_test(in, f, err, errlen))
            goto fail;
    return 0;
fail:
    regress_input_free(in);
    return -1;
}

void regress_input_free(struct regress_input *in)
{
    for (size_t i = 0; in->table.tests && i < in->table.ntests; i++)
        free(in->table.tests[i].values);
    free(in->table.tests);
    for (size_t i = 0; i < in->nfiles; i++)
        results_file_free(&in->files[i]);
    free(in->files);
    free(in->names);
    free(in->num_env);
    memset(in, 0, sizeof *in);
}
