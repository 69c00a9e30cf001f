/* replay_results.c - the numbers of the results the driver and the run
 * controller write: per-label sample sets, percentiles, bootstrap bands,
 * lateness. Summaries are computed from the same samples that are
 * written, so a reader can recompute every number. The JSON shape is the
 * results writer's (formats/results.h); never builds an object itself. */
#include "replay_results.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "results_writer.h"
#include "stats.h"

static int replay_double_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double replay_percentile(const double *sorted, size_t n, double q)
{
    if (!n)
        return NAN;
    double pos = q / 100.0 * (double)(n - 1);
    size_t lo = (size_t)pos;
    if (lo >= n - 1)
        return sorted[n - 1];
    double frac = pos - (double)lo;
    return sorted[lo] + (sorted[lo + 1] - sorted[lo]) * frac;
}

static int replay_push(double **v, size_t *n, size_t *cap, double x)
{
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 64;
        double *nv = realloc(*v, c * sizeof *nv);
        if (!nv)
            return -1;
        *v = nv;
        *cap = c;
    }
    (*v)[(*n)++] = x;
    return 0;
}

int replay_label_set_add(struct replay_label_set *ls, const struct replay_sample *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!s[i].ok)
            continue;
        size_t l = 0;
        while (l < ls->nlabels && ls->label_ids[l] != s[i].label)
            l++;
        if (l == ls->nlabels) {
            size_t k = ls->nlabels + 1;
            uint32_t *ids = realloc(ls->label_ids, k * sizeof *ids);
            if (ids)
                ls->label_ids = ids;
            double **vals = realloc(ls->values, k * sizeof *vals);
            if (vals)
                ls->values = vals;
            size_t *counts = realloc(ls->counts, k * sizeof *counts);
            if (counts)
                ls->counts = counts;
            size_t *caps = realloc(ls->caps, k * sizeof *caps);
            if (caps)
                ls->caps = caps;
            if (!ids || !vals || !counts || !caps)
                return -1;
            ls->label_ids[l] = s[i].label;
            ls->values[l] = NULL;
            ls->counts[l] = ls->caps[l] = 0;
            ls->nlabels = k;
        }
        if (replay_push(&ls->values[l], &ls->counts[l], &ls->caps[l], s[i].response_s) ||
            replay_push(&ls->all, &ls->nall, &ls->capall, s[i].response_s))
            return -1;
    }
    return 0;
}

void replay_label_set_free(struct replay_label_set *ls)
{
    for (size_t l = 0; l < ls->nlabels; l++)
        free(ls->values[l]);
    free(ls->label_ids);
    free(ls->values);
    free(ls->counts);
    free(ls->caps);
    free(ls->all);
    memset(ls, 0, sizeof *ls);
}

/* The summary of one label's values (any order): count, mean, median,
 * p95, p99, min, max, and with bands the 99% bootstrap intervals of the
 * three percentiles when the statistics library gives them. */
static json_t *replay_summary(const double *values, size_t n, int bands)
{
    double *v = malloc((n ? n : 1) * sizeof *v);
    if (!v)
        return NULL;
    memcpy(v, values, n * sizeof *v);
    qsort(v, n, sizeof *v, replay_double_cmp);
    static const double q[3] = {50, 95, 99};
    struct results_summary s = {.count = n};
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += v[i];
    s.mean_s = n ? sum / (double)n : 0;
    s.median_s = replay_percentile(v, n, q[0]);
    s.p95_s = replay_percentile(v, n, q[1]);
    s.p99_s = replay_percentile(v, n, q[2]);
    s.min_s = n ? v[0] : 0;
    s.max_s = n ? v[n - 1] : 0;
    if (bands && n >= 2) {
        struct stats_band_options bo;
        stats_band_options_default(&bo);
        double value[3], lo[3], hi[3];
        char err[STATS_ERR_LEN];
        if (!stats_percentile_ci(v, n, q, 3, &bo, value, lo, hi, err)) {
            s.has_band = 1;
            for (int i = 0; i < 3; i++) {
                s.band[i][0] = lo[i];
                s.band[i][1] = hi[i];
            }
        }
    }
    free(v);
    return results_summary_json(&s);
}

json_t *replay_results_labels(const struct plan *p, const struct replay_label_set *ls, int bands)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    for (size_t l = 0; l < ls->nlabels; l++) {
        const char *name = plan_string(p, ls->label_ids[l]);
        json_t *s = replay_summary(ls->values[l], ls->counts[l], bands);
        if (!s) {
            json_decref(o);
            return NULL;
        }
        json_object_set_new(o, name[0] ? name : "(unlabelled)", s);
    }
    return o;
}

int replay_results_samples(json_t *arr, const struct plan *p, const struct replay_sample *s,
                           size_t n, int interval)
{
    for (size_t i = 0; i < n; i++)
        if (results_sample_append(arr, plan_string(p, s[i].label), s[i].sent_s, s[i].response_s,
                                  s[i].late_s, s[i].ok ? NULL : replay_fail_name(s[i].fail),
                                  interval))
            return -1;
    return 0;
}

json_t *replay_results_lateness(const struct replay_sample *s, size_t n)
{
    double *v = malloc((n ? n : 1) * sizeof *v);
    if (!v)
        return NULL;
    for (size_t i = 0; i < n; i++)
        v[i] = s[i].late_s;
    qsort(v, n, sizeof *v, replay_double_cmp);
    json_t *o = results_lateness_json(n ? replay_percentile(v, n, 50) : 0.0,
                                      n ? replay_percentile(v, n, 99) : 0.0, n ? v[n - 1] : 0.0);
    free(v);
    return o;
}
