/* compare_verdict.c - the statistics and the decision of `preplay compare`.
 *
 * Every number that needs statistics comes from stats/ (bootstrap
 * percentile bands, PT4Cloud p); nothing is reimplemented here. The rules
 * (docs/preplay-compare.md):
 *  - a type meets the SLOs when, for every SLO and every label it applies
 *    to, the pessimistic (upper) edge of the metric's confidence band is
 *    within the limit; a label with no successful request fails;
 *  - requests per hour = successful requests / driving time * 3600, cost
 *    per million requests = price per hour / requests per hour * 1e6;
 *  - two types are equivalent when, on every label, either their samples
 *    are alike (PT4Cloud p >= equivalent_p) or the bands of median, p95
 *    and p99 all overlap; equivalent types share a performance tier;
 *  - the recommendation is the cheapest type that meets the SLOs;
 *  - a type whose replay failed takes part in neither unless
 *    --allow-failed (compare_trust.c decides which);
 *  - a band also holds what the CPU ratio's own 95% interval could move
 *    (results_widen_ratio_bands, applied when a file is loaded). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "stats.h"

void compare_options_default(struct compare_options *o)
{
    memset(o, 0, sizeof *o);
    o->equivalent_p = 0.9;
}

int compare_check_consistent(const struct compare_run *runs, size_t nruns,
                             const struct compare_recording *rec, char *err, size_t errlen)
{
    for (size_t i = 0; i < nruns; i++) {
        for (size_t j = 0; j < i; j++) {
            /* an empty id (results written before recording_id existed) is unknown */
            if (runs[i].recording_id[0] && runs[j].recording_id[0] &&
                strcmp(runs[i].recording_id, runs[j].recording_id)) {
                snprintf(err, errlen,
                         "%s and %s come from different recordings (%s vs %s): compare runs of "
                         "one plan",
                         runs[j].path, runs[i].path, runs[j].recording_id, runs[i].recording_id);
                return -1;
            }
            if (!strcmp(runs[i].instance, runs[j].instance)) {
                snprintf(err, errlen,
                         "%s and %s both name instance '%s' (give each run its own --instance)",
                         runs[j].path, runs[i].path, runs[i].instance);
                return -1;
            }
        }
        if (rec && runs[i].recording_id[0] && strcmp(runs[i].recording_id, rec->recording_id)) {
            snprintf(err, errlen, "%s comes from recording %s, but plan %s is recording %s",
                     runs[i].path, runs[i].recording_id, rec->path, rec->recording_id);
            return -1;
        }
    }
    return 0;
}

static int compare_overlap(const struct compare_stat *a, const struct compare_stat *b)
{
    return a->lo <= b->hi && b->lo <= a->hi;
}

/* PT4Cloud p of two sample sets with the default KDE options; -1 when it
 * cannot be computed. */
static int compare_similarity_p(const double *a, size_t na, const double *b, size_t nb, double *p)
{
    struct stats_kde_options ko;
    stats_kde_options_default(&ko);
    struct stats_similarity sim;
    char err[STATS_ERR_LEN];
    if (stats_similarity_compute(a, na, b, nb, &ko, &sim, err))
        return -1;
    *p = sim.p;
    stats_similarity_free(&sim);
    return 0;
}

/* 1 when labels a and b differ only by noise. */
static int compare_label_equivalent(const struct compare_label *a, const struct compare_label *b,
                                    double equivalent_p)
{
    int bands = 1;
    for (int m = 0; m < COMPARE_NMETRICS; m++)
        bands &= compare_overlap(&a->stat[m], &b->stat[m]);
    if (bands)
        return 1;
    if (a->nsamples < 2 || b->nsamples < 2)
        return 0;
    double p;
    if (compare_similarity_p(a->samples, a->nsamples, b->samples, b->nsamples, &p))
        return 0;
    return p >= equivalent_p;
}

static int compare_fill_bands(struct compare_label *l)
{
    int need = 0;
    for (int m = 0; m < COMPARE_NMETRICS; m++)
        need |= !l->stat[m].has_band;
    if (!need || l->nsamples < 2)
        return 0;
    static const double pct[COMPARE_NMETRICS] = {50, 95, 99};
    double value[COMPARE_NMETRICS], lo[COMPARE_NMETRICS], hi[COMPARE_NMETRICS];
    struct stats_band_options bo;
    stats_band_options_default(&bo);
    char err[STATS_ERR_LEN];
    if (stats_percentile_ci(l->samples, l->nsamples, pct, COMPARE_NMETRICS, &bo, value, lo, hi,
                            err))
        return -1;
    for (int m = 0; m < COMPARE_NMETRICS; m++)
        if (!l->stat[m].has_band) {
            /* the band is about the file's value: widen it to hold it */
            l->stat[m].lo = fmin(lo[m], l->stat[m].value);
            l->stat[m].hi = fmax(hi[m], l->stat[m].value);
            l->stat[m].has_band = 1;
        }
    return 0;
}

static int compare_add_label(struct compare_verdict *v, const char *name)
{
    for (size_t i = 0; i < v->nlabels; i++)
        if (!strcmp(v->labels[i], name))
            return 0;
    char **nl = realloc(v->labels, (v->nlabels + 1) * sizeof *nl);
    if (!nl)
        return -1;
    v->labels = nl;
    size_t n = strlen(name) + 1;
    if (!(v->labels[v->nlabels] = malloc(n)))
        return -1;
    memcpy(v->labels[v->nlabels++], name, n);
    return 0;
}

static int compare_slo_applies(const struct compare_options *opt, const char *label)
{
    if (!opt->nslo_labels)
        return 1;
    for (size_t i = 0; i < opt->nslo_labels; i++)
        if (!strcmp(opt->slo_labels[i], label))
            return 1;
    return 0;
}

static int compare_check_slos(struct compare_run *r, const struct compare_verdict *v,
                              const struct compare_options *opt)
{
    char why[256] = "";
    r->meets_slo = 1;
    for (size_t s = 0; s < opt->nslos && r->meets_slo; s++) {
        const struct compare_slo *slo = &opt->slos[s];
        for (size_t l = 0; l < v->nlabels && r->meets_slo; l++) {
            if (!compare_slo_applies(opt, v->labels[l]))
                continue;
            const struct compare_label *lab = compare_run_label(r, v->labels[l]);
            if (!lab || !lab->count) {
                snprintf(why, sizeof why, "%s: no successful requests", v->labels[l]);
                r->meets_slo = 0;
            } else if (!compare_slo_met(slo, &lab->stat[slo->metric])) {
                snprintf(why, sizeof why, "%s: %s up to %.4g ms, SLO %s", v->labels[l],
                         compare_metric_names[slo->metric],
                         fmax(lab->stat[slo->metric].hi, lab->stat[slo->metric].value) * 1e3,
                         slo->text);
                r->meets_slo = 0;
            }
        }
    }
    size_t n = strlen(why) + 1;
    free(r->slo_failure); /* from an earlier analysis of the same runs */
    if (!(r->slo_failure = malloc(n)))
        return -1;
    memcpy(r->slo_failure, why, n);
    return 0;
}

/* qsort_r comparator: run indices by score (NAN last) */
static int compare_score_cmp(const void *a, const void *b, void *ctx)
{
    const struct compare_run *runs = ctx;
    double x = runs[*(const size_t *)a].score, y = runs[*(const size_t *)b].score;
    if (isnan(x) || isnan(y))
        return isnan(x) - isnan(y);
    return x < y ? -1 : x > y;
}

/* The union of the runs' labels, in order of first appearance. */
static int compare_collect_labels(const struct compare_run *runs, size_t nruns,
                                  struct compare_verdict *v)
{
    for (size_t i = 0; i < nruns; i++)
        for (size_t l = 0; l < runs[i].nlabels; l++)
            if (compare_add_label(v, runs[i].labels[l].name))
                return -1;
    return 0;
}

/* Every --slo-label must name a label of the results. */
static int compare_check_slo_labels(const struct compare_options *opt,
                                    const struct compare_verdict *v, char *err, size_t errlen)
{
    for (size_t s = 0; s < opt->nslo_labels; s++) {
        size_t l = 0;
        while (l < v->nlabels && strcmp(v->labels[l], opt->slo_labels[s]))
            l++;
        if (l == v->nlabels) {
            snprintf(err, errlen, "--slo-label '%s': no results have this label",
                     opt->slo_labels[s]);
            return -1;
        }
    }
    return 0;
}

/* lab->p_recording: how alike the replayed and the recorded response times
 * are (PT4Cloud p), when both have two samples or more. */
static void compare_recording_p(struct compare_label *lab, const struct compare_recording *rec)
{
    size_t rl = rec ? compare_recording_label(rec, lab->name) : (size_t)-1;
    if (rl == (size_t)-1 || lab->nsamples < 2 || rec->nrecorded[rl] < 2)
        return;
    compare_similarity_p(rec->recorded_s[rl], rec->nrecorded[rl], lab->samples, lab->nsamples,
                         &lab->p_recording);
}

/* One run's numbers: every label's bands and p against the recording, the
 * score (geometric mean of the rank metric over its labels), requests per
 * hour and cost per million requests. -1 with err when a bootstrap failed. */
static int compare_score_run(struct compare_run *r, const struct compare_recording *rec,
                             enum compare_metric rank_metric, char *err, size_t errlen)
{
    double logsum = 0;
    size_t nlog = 0;
    for (size_t l = 0; l < r->nlabels; l++) {
        struct compare_label *lab = &r->labels[l];
        if (compare_fill_bands(lab)) {
            snprintf(err, errlen, "%s: label \"%s\": bootstrap of the percentiles failed", r->path,
                     lab->name);
            return -1;
        }
        compare_recording_p(lab, rec);
        if (lab->count && lab->stat[rank_metric].value > 0) {
            logsum += log(lab->stat[rank_metric].value);
            nlog++;
        }
    }
    r->score = nlog ? exp(logsum / (double)nlog) : NAN;
    r->requests_per_hour = r->elapsed_s > 0 ? (double)r->requests_ok / r->elapsed_s * 3600.0 : NAN;
    r->cost_per_million = r->requests_per_hour > 0 && !isnan(r->price_per_hour)
                              ? r->price_per_hour / r->requests_per_hour * 1e6
                              : NAN;
    return 0;
}

/* v->equivalent[i * nruns + j]: runs i and j are alike on every label (a
 * label without successful requests on both sides counts as alike). */
static void compare_equivalence(const struct compare_run *runs, size_t nruns,
                                const struct compare_options *opt, struct compare_verdict *v)
{
    for (size_t i = 0; i < nruns; i++) {
        v->equivalent[i * nruns + i] = 1;
        for (size_t j = i + 1; j < nruns; j++) {
            int same = 1;
            for (size_t l = 0; l < v->nlabels && same; l++) {
                const struct compare_label *a = compare_run_label(&runs[i], v->labels[l]);
                const struct compare_label *b = compare_run_label(&runs[j], v->labels[l]);
                if (!a || !b || !a->count || !b->count)
                    same = (!a || !a->count) && (!b || !b->count);
                else
                    same = compare_label_equivalent(a, b, opt->equivalent_p);
            }
            v->equivalent[i * nruns + j] = v->equivalent[j * nruns + i] = same;
        }
    }
}

/* Tiers of the ranked runs (the others get tier 0): by score, a type joins
 * the current tier when it is equivalent to the tier's fastest member.
 * order has room for nruns indices. */
static void compare_tiers(struct compare_run *runs, size_t nruns, struct compare_verdict *v,
                          size_t *order)
{
    size_t n = 0;
    for (size_t i = 0; i < nruns; i++) {
        runs[i].tier = 0;
        if (runs[i].ranked)
            order[n++] = i;
    }
    v->nranked = n;
    qsort_r(order, n, sizeof *order, compare_score_cmp, runs);
    int tier = 0;
    size_t leader = 0;
    for (size_t k = 0; k < n; k++) {
        size_t i = order[k];
        if (!k || !v->equivalent[leader * nruns + i]) {
            tier++;
            leader = i;
        }
        runs[i].tier = tier;
    }
}

/* Nothing priced: the fastest tier among those that meet the SLOs is the
 * recommendation if it has one member. */
static void compare_recommend_fastest(const struct compare_run *runs, size_t nruns,
                                      struct compare_verdict *v)
{
    int best = 0;
    size_t pick = (size_t)-1, in_best = 0;
    for (size_t i = 0; i < nruns; i++)
        if (runs[i].ranked && runs[i].meets_slo && (!best || runs[i].tier < best))
            best = runs[i].tier;
    for (size_t i = 0; i < nruns; i++)
        if (runs[i].ranked && runs[i].meets_slo && runs[i].tier == best) {
            pick = i;
            in_best++;
        }
    if (in_best == 1) {
        v->recommended = pick;
        snprintf(v->reason, sizeof v->reason,
                 "no prices (run with --price): %s meets the SLOs and is the fastest",
                 runs[pick].instance);
    } else
        snprintf(v->reason, sizeof v->reason,
                 "no prices (run with --price): %zu types meet the SLOs and are equivalent "
                 "within noise (tier %d)",
                 in_best, best);
}

/* v->recommended and v->reason: the cheapest type that meets the SLOs. */
static void compare_recommend(const struct compare_run *runs, size_t nruns,
                              const struct compare_options *opt, struct compare_verdict *v)
{
    size_t nmeet = 0, npriced = 0;
    if (!v->nranked) {
        snprintf(v->reason, sizeof v->reason,
                 "no instance type could be ranked: every replay failed");
        return;
    }
    for (size_t i = 0; i < nruns; i++) {
        if (!runs[i].ranked || !runs[i].meets_slo)
            continue;
        nmeet++;
        if (isnan(runs[i].cost_per_million))
            continue;
        npriced++;
        if (v->recommended == (size_t)-1 ||
            runs[i].cost_per_million < runs[v->recommended].cost_per_million)
            v->recommended = i;
    }
    char slos[160] = "";
    for (size_t s = 0; s < opt->nslos; s++)
        snprintf(slos + strlen(slos), sizeof slos - strlen(slos), "%s%s", s ? ", " : "",
                 opt->slos[s].text);
    if (!nmeet)
        snprintf(v->reason, sizeof v->reason, "no %sinstance type meets %s for every label",
                 v->nranked < nruns ? "ranked " : "", slos);
    else if (v->recommended != (size_t)-1) {
        const struct compare_run *r = &runs[v->recommended];
        int n = snprintf(v->reason, sizeof v->reason,
                         "%s %s and is the cheapest at $%.4g per "
                         "million requests",
                         r->instance, opt->nslos ? "meets every SLO" : "has no SLO to meet",
                         r->cost_per_million);
        if (npriced < nmeet && n > 0 && (size_t)n < sizeof v->reason)
            snprintf(v->reason + n, sizeof v->reason - (size_t)n,
                     " (%zu type(s) meeting the SLOs have no price)", nmeet - npriced);
    } else {
        compare_recommend_fastest(runs, nruns, v);
    }
}

int compare_analyze(struct compare_run *runs, size_t nruns, const struct compare_recording *rec,
                    const struct compare_options *opt, struct compare_verdict *v, char *err,
                    size_t errlen)
{
    memset(v, 0, sizeof *v);
    v->recommended = (size_t)-1;
    v->nruns = nruns;
    size_t *order = NULL;
    if (compare_collect_labels(runs, nruns, v))
        goto oom;
    if (compare_check_slo_labels(opt, v, err, errlen))
        goto fail;
    v->meets = calloc(nruns ? nruns : 1, sizeof *v->meets);
    v->equivalent = calloc(nruns * nruns + 1, sizeof *v->equivalent);
    order = malloc((nruns ? nruns : 1) * sizeof *order);
    if (!v->meets || !v->equivalent || !order)
        goto oom;
    enum compare_metric rank_metric = opt->nslos ? opt->slos[0].metric : COMPARE_P95;
    for (size_t i = 0; i < nruns; i++) {
        if (compare_score_run(&runs[i], rec, rank_metric, err, errlen))
            goto fail;
        if (compare_check_slos(&runs[i], v, opt))
            goto oom;
        v->meets[i] = runs[i].meets_slo;
    }
    if (compare_trust_runs(runs, nruns, rec, opt, v))
        goto oom;
    compare_equivalence(runs, nruns, opt, v);
    compare_tiers(runs, nruns, v, order);
    compare_recommend(runs, nruns, opt, v);
    if (compare_trust_caveats(runs, nruns, rec, opt, v))
        goto oom;
    free(order);
    return 0;
oom:
    snprintf(err, errlen, "out of memory");
fail:
    free(order);
    compare_verdict_free(v);
    return -1;
}

void compare_verdict_free(struct compare_verdict *v)
{
    for (size_t i = 0; i < v->nlabels; i++)
        free(v->labels[i]);
    free(v->labels);
    free(v->meets);
    free(v->equivalent);
    free(v->caveats);
    memset(v, 0, sizeof *v);
}
