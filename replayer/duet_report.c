/* duet_report.c - from the sides' iterations to duet.json (formats/DUET.md):
 * per label and overall, the per-iteration ratio B/A of the iteration's
 * mean (or --median) successful response time, winsorized per run
 * (§IV.A), the geometric mean per run and over runs and the bootstrap
 * percentile interval of the latter (§III.D, stats_duet.h). The raw
 * ratios go into the document too, so an independent oracle can redo the
 * arithmetic (tests/duet/oracle.py). Overall: with one recording the
 * ratio of the iteration's statistic over all requests; with two (a
 * different mix of requests) the geometric mean of the iteration's label
 * ratios. Never prints (duet_report_print formats a finished document). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "duet.h"
#include "stats.h"
#include "stats_duet.h"

/* One metric (a label or overall): its ratios per run. */
struct duet_metric {
    double **ratios;
    size_t *n;
    long runs;
    uint64_t samples_a, samples_b;
};

static int duet_metric_init(struct duet_metric *m, long runs, long iterations)
{
    memset(m, 0, sizeof *m);
    m->runs = runs;
    m->ratios = calloc((size_t)runs, sizeof *m->ratios);
    m->n = calloc((size_t)runs, sizeof *m->n);
    if (!m->ratios || !m->n)
        return -1;
    for (long r = 0; r < runs; r++)
        if (!(m->ratios[r] = malloc((size_t)iterations * sizeof **m->ratios)))
            return -1;
    return 0;
}

static void duet_metric_free(struct duet_metric *m)
{
    for (long r = 0; m->ratios && r < m->runs; r++)
        free(m->ratios[r]);
    free(m->ratios);
    free(m->n);
}

/* The iteration statistic of one summary {"n", "mean_s", "median_s"};
 * 0 when it has no successful sample. */
static double duet_stat(const json_t *sum, int median, uint64_t *n)
{
    json_int_t k = json_integer_value(json_object_get(sum, "n"));
    if (k <= 0)
        return 0;
    *n = (uint64_t)k;
    return json_real_value(json_object_get(sum, median ? "median_s" : "mean_s"));
}

/* ratio of summaries b/a into m's run r; 1 when there was one. */
static int duet_metric_add(struct duet_metric *m, long r, const json_t *a, const json_t *b,
                           int median, double *ratio)
{
    uint64_t na = 0, nb = 0;
    double sa = duet_stat(a, median, &na), sb = duet_stat(b, median, &nb);
    if (!(sa > 0) || !(sb > 0))
        return 0;
    *ratio = sb / sa;
    m->ratios[r][m->n[r]++] = *ratio;
    m->samples_a += na;
    m->samples_b += nb;
    return 1;
}

static json_t *duet_array(const double *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++)
        json_array_append_new(a, json_real(v[i]));
    return a;
}

/* The metric's object, or a reason it has none (into why). */
static json_t *duet_metric_json(const struct duet_config *c, const struct duet_metric *m,
                                uint64_t seed, char *why, size_t whylen)
{
    double *gms = malloc((size_t)m->runs * sizeof *gms);
    json_t *ratios = json_array(), *wins = json_array(), *o = NULL;
    size_t total = 0;
    for (long r = 0; gms && r < m->runs; r++) {
        if (!m->n[r]) {
            snprintf(why, whylen, "no iteration of run %ld had it on both sides", r + 1);
            goto out;
        }
        double *w = malloc(m->n[r] * sizeof *w);
        if (!w)
            goto out;
        memcpy(w, m->ratios[r], m->n[r] * sizeof *w);
        long wi = stats_duet_winsorize(w, m->n[r], c->winsor_pct);
        gms[r] = stats_duet_gm(w, m->n[r]);
        free(w);
        json_array_append_new(ratios, duet_array(m->ratios[r], m->n[r]));
        json_array_append_new(wins, json_integer(wi));
        total += m->n[r];
    }
    char err[STATS_ERR_LEN];
    struct stats_duet_ci ci;
    if (!gms || stats_duet_interval(gms, (size_t)m->runs, c->replicates, c->cl, seed, &ci, err)) {
        snprintf(why, whylen, "%s", gms ? err : "out of memory");
        goto out;
    }
    o = json_pack("{s:f, s:f, s:f, s:f, s:b, s:I, s:I, s:I, s:I, s:o, s:O, s:O}", "gms", ci.gms,
                  "ci_low", ci.low, "ci_high", ci.high, "ci_width", ci.high - ci.low, "equal",
                  ci.equal, "runs", (json_int_t)m->runs, "iterations", (json_int_t)total,
                  "samples_a", (json_int_t)m->samples_a, "samples_b", (json_int_t)m->samples_b,
                  "run_gms", duet_array(gms, (size_t)m->runs), "ratios", ratios, "winsorized",
                  wins);
out:
    json_decref(ratios);
    json_decref(wins);
    free(gms);
    return o;
}

/* Every label side k served, in first-seen order, into names. */
static void duet_label_names(json_t *(*sides)[2], long runs, int k, json_t *names)
{
    for (long r = 0; r < runs; r++) {
        size_t i;
        json_t *it;
        json_array_foreach(json_object_get(sides[r][k], "iterations"), i, it)
        {
            const char *l;
            json_t *v;
            json_object_foreach(json_object_get(it, "labels"), l, v)
                json_object_set_new(names, l, json_true());
        }
    }
}

/* Fills label metrics (same order as names) and the overall one. */
static int duet_collect(const struct duet_config *c, json_t *(*sides)[2], json_t *names,
                        struct duet_metric *lm, struct duet_metric *all, uint64_t failed[2])
{
    for (long r = 0; r < c->runs; r++) {
        json_t *ia = json_object_get(sides[r][0], "iterations");
        json_t *ib = json_object_get(sides[r][1], "iterations");
        if (json_array_size(ia) != json_array_size(ib))
            return -1;
        for (size_t i = (size_t)c->warmup; i < json_array_size(ia); i++) {
            json_t *a = json_array_get(ia, i), *b = json_array_get(ib, i);
            failed[0] += (uint64_t)json_integer_value(json_object_get(a, "failed"));
            failed[1] += (uint64_t)json_integer_value(json_object_get(b, "failed"));
            size_t l = 0, got = 0;
            double sum = 0, ratio;
            const char *k;
            json_t *v;
            json_object_foreach(names, k, v)
            {
                if (duet_metric_add(&lm[l], r, json_object_get(json_object_get(a, "labels"), k),
                                    json_object_get(json_object_get(b, "labels"), k), c->median,
                                    &ratio))
                    sum += log(ratio), got++;
                l++;
            }
            if (got)
                all->ratios[r][all->n[r]++] = exp(sum / (double)got);
        }
    }
    return 0;
}

static json_t *duet_assignments(const struct duet_plans *pl, const unsigned char *assign, long runs)
{
    json_t *a = json_array();
    for (long r = 0; a && r < runs; r++)
        json_array_append_new(a, json_pack("{s:i, s:i}", "a_cpu", pl->cpus[assign[r]], "b_cpu",
                                           pl->cpus[!assign[r]]));
    return a;
}

/* The document's fixed part: what was run and how. */
static json_t *duet_header(const struct duet_config *c, const struct duet_plans *pl,
                           const unsigned char *assign, const uint64_t failed[2])
{
    json_t *doc = json_pack(
        "{s:s, s:s, s:i, s:i, s:s, s:s, s:s, s:s, s:b, s:b, s:s, s:s, s:I, s:I, s:I, s:I, s:f, "
        "s:f, s:f, s:f, s:f, s:f, s:I, s:I, s:o}",
        "format", "preplay-duet", "kind", "duet", "version", 1, "version_minor", 0, "plan_a",
        c->plan_a, "plan_b", c->plan_b, "recording_a", pl->recording_a, "recording_b",
        pl->recording_b, "aa", c->aa, "same_recording", pl->same_recording, "procedure",
        c->sequential ? "sequential" : "duet", "statistic", c->median ? "median" : "mean", "seed",
        (json_int_t)c->seed, "runs", (json_int_t)c->runs, "iterations", (json_int_t)c->iterations,
        "warmup", (json_int_t)c->warmup, "confidence", c->cl, "winsorize_pct", c->winsor_pct,
        "slice_from_s", c->slice_from, "slice_length_s", c->slice_len, "cpu_ratio_a", pl->ratio_a,
        "cpu_ratio_b", pl->ratio_b, "failed_a", (json_int_t)failed[0], "failed_b",
        (json_int_t)failed[1], "assignments", duet_assignments(pl, assign, c->runs));
    if (doc) {
        json_object_set_new(doc, "replicates", json_integer(c->replicates));
    }
    return doc;
}

json_t *duet_report_build(const struct duet_config *c, const struct duet_plans *pl,
                          json_t *(*sides)[2], const unsigned char *assign, char *err,
                          size_t errlen)
{
    json_t *names = json_object(), *b_names = json_object(), *doc = NULL;
    duet_label_names(sides, c->runs, 0, names);
    duet_label_names(sides, c->runs, 1, b_names);
    size_t nl = json_object_size(names);
    struct duet_metric *lm = calloc(nl + 1, sizeof *lm), all;
    uint64_t failed[2] = {0, 0};
    int bad = !names || !lm || duet_metric_init(&all, c->runs, c->iterations);
    for (size_t l = 0; !bad && l < nl; l++)
        bad = duet_metric_init(&lm[l], c->runs, c->iterations);
    if (bad || duet_collect(c, sides, names, lm, &all, failed)) {
        snprintf(err, errlen, "out of memory, or sides with different iteration counts");
        goto out;
    }
    doc = duet_header(c, pl, assign, failed);
    json_t *labels = json_object(), *skipped = json_object();
    char why[256];
    json_t *o = duet_metric_json(c, &all, c->seed, why, sizeof why);
    json_object_set_new(doc, "overall", o ? o : json_pack("{s:s}", "skipped", why));
    size_t l = 0;
    const char *k;
    json_t *v;
    json_object_foreach(names, k, v)
    {
        o = duet_metric_json(c, &lm[l], c->seed + l + 1, why, sizeof why);
        if (o)
            json_object_set_new(labels, k, o);
        else
            json_object_set_new(skipped, k, json_string(why));
        l++;
    }
    json_object_foreach(b_names, k, v) if (!json_object_get(names, k))
        json_object_set_new(skipped, k, json_string("served by B only"));
    json_object_set_new(doc, "labels", labels);
    json_object_set_new(doc, "labels_skipped", skipped);
out:
    for (size_t i = 0; lm && i < nl; i++)
        duet_metric_free(&lm[i]);
    if (lm)
        duet_metric_free(&all);
    free(lm);
    json_decref(names);
    json_decref(b_names);
    return doc;
}

static void duet_print_metric(FILE *out, const char *name, const json_t *m, double cl)
{
    if (!json_object_get(m, "gms")) {
        fprintf(out, "  %-24s skipped: %s\n", name,
                json_string_value(json_object_get(m, "skipped")));
        return;
    }
    double lo = json_real_value(json_object_get(m, "ci_low"));
    double hi = json_real_value(json_object_get(m, "ci_high"));
    fprintf(out, "  %-24s B/A %.4f [%.4f, %.4f] (%g%%, width %.2f%%) %s\n", name,
            json_real_value(json_object_get(m, "gms")), lo, hi, cl * 100, (hi - lo) * 100,
            json_is_true(json_object_get(m, "equal")) ? "equal"
            : hi < 1                                  ? "B faster"
                                                      : "B slower");
}

void duet_report_print(const json_t *doc, FILE *out)
{
    json_int_t fa = json_integer_value(json_object_get(doc, "failed_a"));
    json_int_t fb = json_integer_value(json_object_get(doc, "failed_b"));
    if (fa || fb)
        fprintf(out, "duet: FAILED requests: %lld in A, %lld in B (left out of the ratios)\n",
                (long long)fa, (long long)fb);
    double cl = json_real_value(json_object_get(doc, "confidence"));
    fprintf(out, "duet: %s, %lld runs x %lld iterations, %s per iteration:\n",
            json_string_value(json_object_get(doc, "procedure")),
            (long long)json_integer_value(json_object_get(doc, "runs")),
            (long long)json_integer_value(json_object_get(doc, "iterations")),
            json_string_value(json_object_get(doc, "statistic")));
    duet_print_metric(out, "(overall)", json_object_get(doc, "overall"), cl);
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)json_object_get(doc, "labels"), k, v)
        duet_print_metric(out, k, v, cl);
    json_object_foreach((json_t *)json_object_get(doc, "labels_skipped"), k, v)
        fprintf(out, "  %-24s skipped: %s\n", k, json_string_value(v));
}
