/* replay_results.c - the JSON the driver and the run controller write
 * (formats/RESULTS.md). Summaries are computed from the same samples that
 * are written, so a reader can recompute every number. Never writes a
 * partial file: temp file + rename. */
#include "replay_results.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

static json_t *replay_summary(const double *values, size_t n, int bands)
{
    double *v = malloc((n ? n : 1) * sizeof *v);
    if (!v)
        return NULL;
    memcpy(v, values, n * sizeof *v);
    qsort(v, n, sizeof *v, replay_double_cmp);
    json_t *o = json_object();
    json_object_set_new(o, "count", json_integer((json_int_t)n));
    json_object_set_new(o, "mean_s", json_real(0));
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += v[i];
    json_object_set_new(o, "mean_s", json_real(n ? sum / (double)n : 0));
    static const double q[3] = {50, 95, 99};
    static const char *const names[3] = {"median_s", "p95_s", "p99_s"};
    static const char *const ci_names[3] = {"median_ci_s", "p95_ci_s", "p99_ci_s"};
    for (int i = 0; i < 3; i++)
        json_object_set_new(o, names[i], json_real(replay_percentile(v, n, q[i])));
    json_object_set_new(o, "min_s", json_real(n ? v[0] : 0));
    json_object_set_new(o, "max_s", json_real(n ? v[n - 1] : 0));
    if (bands && n >= 2) {
        struct stats_band_options bo;
        stats_band_options_default(&bo);
        double value[3], lo[3], hi[3];
        char err[STATS_ERR_LEN];
        if (!stats_percentile_ci(v, n, q, 3, &bo, value, lo, hi, err))
            for (int i = 0; i < 3; i++) {
                json_t *a = json_array();
                json_array_append_new(a, json_real(lo[i]));
                json_array_append_new(a, json_real(hi[i]));
                json_object_set_new(o, ci_names[i], a);
            }
    }
    free(v);
    return o;
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
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_pack("{s:s, s:f, s:f, s:f, s:b}", "label", plan_string(p, s[i].label),
                              "sent_s", s[i].sent_s, "response_s", s[i].response_s, "late_s",
                              s[i].late_s, "ok", s[i].ok);
        if (!o)
            return -1;
        if (interval > 0)
            json_object_set_new(o, "interval", json_integer(interval));
        json_array_append_new(arr, o);
    }
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
    json_t *o =
        json_pack("{s:f, s:f, s:f}", "median_s", n ? replay_percentile(v, n, 50) : 0.0, "p99_s",
                  n ? replay_percentile(v, n, 99) : 0.0, "max_s", n ? v[n - 1] : 0.0);
    free(v);
    return o;
}

int replay_results_save(json_t *root, const char *path, char *err, size_t errlen)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    if (json_dump_file(root, tmp, JSON_INDENT(1) | JSON_REAL_PRECISION(9))) {
        snprintf(err, errlen, "%s: cannot write", tmp);
        unlink(tmp);
        return -1;
    }
    if (rename(tmp, path)) {
        snprintf(err, errlen, "%s: cannot rename into place", path);
        unlink(tmp);
        return -1;
    }
    return 0;
}
