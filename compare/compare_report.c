/* compare_report.c - the self-contained HTML report of `preplay compare`:
 * the verdict, per-label tables, and inline SVG charts (distributions with
 * bootstrap bands, normalized medians and p95 per label as CloudProphet's
 * Figures 9-10, time per resource per label as its Figure 12, the stop
 * rule's p per interval, the recording's requests per label over time).
 * Densities and bands come from stats/. The file never references
 * anything outside itself (no scripts, fonts, images or links to load),
 * and every label is escaped. Written to a temp file, then renamed. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compare.h"
#include "compare_placement.h"
#include "out_file.h"
#include "stats.h"
#include "report_duet.h"
#include "report_plan.h"
#include "report_regress.h"
#include "report_svg.h"
#include "report_time.h"

#define REPORT_PLOT_POINTS 300 /* polyline vertices per density (of the grid's strips) */

struct report_ctx {
    FILE *f;
    int next_id;
    const struct compare_run *runs;
    size_t nruns;
    const struct compare_recording *rec;
    const struct compare_options *opt;
    const struct compare_verdict *v;
    const struct compare_duet *duets;
    size_t nduets;
    const struct compare_regress *regress;
    size_t nregress;
};

static void report_note(FILE *f, const char *text)
{
    fprintf(f, "<p class=\"note\">");
    report_escape(f, text);
    fprintf(f, "</p>\n");
}

/* A density (per second of samples) drawn in ms as a path over [x0, x1] ms. */
static void report_density_path(struct report_chart *c, const struct stats_grid *g, const double *d,
                                double x1_ms, const char *attrs)
{
    int step = g->strips / REPORT_PLOT_POINTS > 1 ? g->strips / REPORT_PLOT_POINTS : 1;
    fprintf(c->f, "<path fill=\"none\" %s d=\"", attrs);
    int first = 1;
    for (int i = 0; i < g->strips; i += step) {
        double x = stats_grid_x(g, i) * 1e3;
        if (x > x1_ms)
            break;
        fprintf(c->f, "%c%.1f,%.1f ", first ? 'M' : 'L', report_chart_x(c, x),
                report_chart_y(c, d[i] / 1e3));
        first = 0;
    }
    fprintf(c->f, "\"/>\n");
}

static void report_band_path(struct report_chart *c, const struct stats_grid *g, const double *lo,
                             const double *hi, double x1_ms, const char *color)
{
    int step = g->strips / REPORT_PLOT_POINTS > 1 ? g->strips / REPORT_PLOT_POINTS : 1;
    int last = 0;
    fprintf(c->f, "<path fill=\"%s\" fill-opacity=\"0.22\" stroke=\"none\" d=\"", color);
    for (int i = 0; i < g->strips && stats_grid_x(g, i) * 1e3 <= x1_ms; i += step) {
        fprintf(c->f, "%c%.1f,%.1f ", i ? 'L' : 'M', report_chart_x(c, stats_grid_x(g, i) * 1e3),
                report_chart_y(c, hi[i] / 1e3));
        last = i;
    }
    for (int i = last; i >= 0; i -= step)
        fprintf(c->f, "L%.1f,%.1f ", report_chart_x(c, stats_grid_x(g, i) * 1e3),
                report_chart_y(c, lo[i] / 1e3));
    fprintf(c->f, "Z\"/>\n");
}

/* One label's response-time distributions on one grid: a band per run
 * and, last (index nruns), the recording's density. */
struct report_dist {
    struct stats_kde_options ko;
    struct stats_band_options bo;
    struct stats_band *bands; /* [nruns] */
    int *have;                /* [nruns + 1]: drawn */
    double *rec_density;
    const double *recs; /* the recording's response times of the label */
    size_t nrecs;
    double lo, hi, h; /* the union's range and widest bandwidth */
    double view;      /* the x range worth showing (s) */
    double ymax;
    struct stats_grid g;
};

/* Which distributions can be drawn (two samples or more, a bandwidth) and
 * what they span; 1 when at least one run has samples. */
static int report_dist_range(struct report_ctx *x, const char *label, struct report_dist *dd)
{
    char err[STATS_ERR_LEN];
    for (size_t i = 0; i <= x->nruns; i++) {
        const double *s;
        size_t ns;
        if (i < x->nruns) {
            const struct compare_label *l = compare_run_label(&x->runs[i], label);
            if (!l || l->nsamples < 2)
                continue;
            s = l->samples;
            ns = l->nsamples;
            dd->view = fmax(dd->view, l->stat[COMPARE_P99].hi);
        } else {
            if (dd->nrecs < 2)
                continue;
            s = dd->recs;
            ns = dd->nrecs;
        }
        double hh;
        if (stats_bandwidth(s, ns, &dd->ko, &hh, err))
            continue;
        dd->h = fmax(dd->h, hh);
        for (size_t k = 0; k < ns; k++) {
            dd->lo = fmin(dd->lo, s[k]);
            dd->hi = fmax(dd->hi, s[k]);
        }
        dd->have[i] = 1;
    }
    int any = 0;
    for (size_t i = 0; i < x->nruns; i++)
        any |= dd->have[i];
    return any;
}

/* Each run's density and band on the common grid (a run whose band fails
 * is left out). */
static void report_dist_bands(struct report_ctx *x, const char *label, struct report_dist *dd)
{
    char err[STATS_ERR_LEN];
    for (size_t i = 0; i < x->nruns; i++) {
        if (!dd->have[i])
            continue;
        const struct compare_label *l = compare_run_label(&x->runs[i], label);
        if (stats_band_compute(l->samples, l->nsamples, &dd->g, &dd->ko, &dd->bo, &dd->bands[i],
                               err)) {
            dd->have[i] = 0;
            continue;
        }
        for (int k = 0; k < dd->g.strips; k++)
            dd->ymax = fmax(dd->ymax, dd->bands[i].high[k]);
    }
}

/* The recording's density on the common grid (it has no band); -1 when out
 * of memory. */
static int report_dist_recording(struct report_ctx *x, struct report_dist *dd)
{
    char err[STATS_ERR_LEN];
    double rh;
    dd->rec_density = malloc((size_t)dd->g.strips * sizeof *dd->rec_density);
    if (!dd->rec_density)
        return -1;
    /* a recording with one response time everywhere borrows the common bandwidth */
    if (stats_bandwidth(dd->recs, dd->nrecs, &dd->ko, &rh, err) ||
        stats_density(dd->recs, dd->nrecs, rh > 0 ? rh : dd->h, &dd->g, dd->ko.method,
                      dd->rec_density, err)) {
        dd->have[x->nruns] = 0;
        return 0;
    }
    for (int k = 0; k < dd->g.strips; k++)
        dd->ymax = fmax(dd->ymax, dd->rec_density[k]);
    double p99 = dd->recs[0];
    for (size_t k = 0; k < dd->nrecs; k++)
        p99 = fmax(p99, dd->recs[k]); /* the recording has no band: show up to its max */
    dd->view = fmax(dd->view, fmin(p99, dd->view * 2));
    return 0;
}

/* The chart: per run its band and density, the recording dashed in black,
 * a legend. */
static void report_dist_draw(struct report_ctx *x, const char *label, const struct report_dist *dd)
{
    const struct stats_grid *g = &dd->g;
    double x1 = fmin(dd->view * 1.25, dd->hi + 3 * dd->h) * 1e3;
    struct report_chart c;
    char title[300];
    snprintf(title, sizeof title, "Response time of %s: density per instance type (band: 99%%)",
             label);
    report_chart_begin(&c, x->f, x->next_id++, title, "response time (ms)", "density (1/ms)",
                       g->lo * 1e3, x1, 0, dd->ymax / 1e3 * 1.08, 0);
    const char *names[REPORT_NSTYLES + 1];
    const struct report_style *styles[REPORT_NSTYLES + 1];
    char kinds[REPORT_NSTYLES + 2] = "";
    size_t nl = 0;
    for (size_t i = 0; i < x->nruns; i++) {
        if (!dd->have[i])
            continue;
        const struct report_style *st = report_style(i);
        char attrs[160];
        report_band_path(&c, g, dd->bands[i].low, dd->bands[i].high, x1, st->color);
        snprintf(attrs, sizeof attrs, "stroke=\"%s\" stroke-width=\"2\" stroke-dasharray=\"%s\"",
                 st->color, st->dash);
        report_density_path(&c, g, dd->bands[i].density, x1, attrs);
        if (nl < REPORT_NSTYLES) {
            names[nl] = x->runs[i].instance;
            styles[nl] = st;
            kinds[nl++] = 'l';
        }
    }
    if (dd->have[x->nruns]) {
        static const struct report_style rec_style = {"#000000", "3 2 8 2", 0};
        report_density_path(&c, g, dd->rec_density, x1,
                            "stroke=\"#000\" stroke-width=\"1.5\" stroke-dasharray=\"3 2 8 2\"");
        names[nl] = "on-premise (recorded)";
        styles[nl] = &rec_style;
        kinds[nl++] = 'l';
    }
    report_chart_legend(&c, names, styles, kinds, nl);
    report_chart_end(&c);
}

/* Figure: response-time densities of one label on every type, with bands,
 * and the recording's density when the plan was given. */
static int report_distribution(struct report_ctx *x, const char *label)
{
    size_t n = x->nruns + 1;
    struct report_dist dd = {.lo = INFINITY, .hi = -INFINITY};
    dd.bands = calloc(n, sizeof *dd.bands);
    dd.have = calloc(n, sizeof *dd.have);
    int rc = -1;
    if (!dd.bands || !dd.have)
        goto out;
    stats_kde_options_default(&dd.ko);
    stats_band_options_default(&dd.bo);
    size_t rl = x->rec ? compare_recording_label(x->rec, label) : (size_t)-1;
    dd.recs = rl != (size_t)-1 ? x->rec->recorded_s[rl] : NULL;
    dd.nrecs = rl != (size_t)-1 ? x->rec->nrecorded[rl] : 0;
    if (!report_dist_range(x, label, &dd)) {
        report_note(x->f, "No samples in the results files for this label: the results carry "
                          "summaries only, so no distribution can be drawn.");
        rc = 0;
        goto out;
    }
    /* one grid for all: the union's range, widest bandwidth */
    if (!(dd.h > 0))
        dd.h = fmax(dd.hi * 1e-3, 1e-6);
    dd.g = (struct stats_grid){.lo = fmax(0, dd.lo - 3 * dd.h), .strips = dd.ko.strips};
    dd.g.width = (dd.hi + 3 * dd.h - dd.g.lo) / dd.g.strips;
    report_dist_bands(x, label, &dd);
    if (dd.have[x->nruns] && report_dist_recording(x, &dd))
        goto out;
    report_dist_draw(x, label, &dd);
    rc = 0;
out:
    for (size_t i = 0; dd.bands && i < n; i++)
        if (dd.have && dd.have[i] && i < x->nruns)
            stats_band_free(&dd.bands[i]);
    free(dd.bands);
    free(dd.have);
    free(dd.rec_density);
    return rc;
}

/* Figures 9-10: one metric per label across types, normalized per label to
 * the slowest, with the band as an error bar. */
static void report_normalized(struct report_ctx *x, enum compare_metric m)
{
    size_t nl = x->v->nlabels, nr = x->nruns;
    struct report_chart c;
    char title[160], ylabel[160];
    snprintf(title, sizeof title, "%s response time per label, normalized to the slowest type",
             m == COMPARE_MEDIAN ? "Median" : "95th percentile");
    snprintf(ylabel, sizeof ylabel, "%s / slowest %s (1 = slowest)", compare_metric_names[m],
             compare_metric_names[m]);
    double ymax = 1.0;
    for (size_t l = 0; l < nl; l++) {
        double worst = 0;
        for (size_t i = 0; i < nr; i++) {
            const struct compare_label *lab = compare_run_label(&x->runs[i], x->v->labels[l]);
            if (lab && lab->count)
                worst = fmax(worst, lab->stat[m].value);
        }
        for (size_t i = 0; i < nr; i++) {
            const struct compare_label *lab = compare_run_label(&x->runs[i], x->v->labels[l]);
            if (lab && lab->count && worst > 0)
                ymax = fmax(ymax, lab->stat[m].hi / worst);
        }
    }
    /* the category axis: labels horizontal when they fit their slot,
     * vertical (and shortened past the axis' room) when not */
    report_chart_begin_categories(&c, x->f, x->next_id++, title, "request label", ylabel,
                                  (const char *const *)x->v->labels, nl, 0, 0, ymax * 1.25);
    double gw = (c.right - c.left) / (double)(nl ? nl : 1);
    double bw = gw * 0.8 / (double)(nr ? nr : 1);
    for (size_t l = 0; l < nl; l++) {
        double worst = 0;
        for (size_t i = 0; i < nr; i++) {
            const struct compare_label *lab = compare_run_label(&x->runs[i], x->v->labels[l]);
            if (lab && lab->count)
                worst = fmax(worst, lab->stat[m].value);
        }
        double gx = c.left + gw * (double)l + gw * 0.1;
        for (size_t i = 0; i < nr && worst > 0; i++) {
            const struct compare_label *lab = compare_run_label(&x->runs[i], x->v->labels[l]);
            if (!lab || !lab->count)
                continue;
            char fill[64];
            report_fill(&c, report_style(i), fill, sizeof fill);
            double bx = gx + bw * (double)i, y0 = report_chart_y(&c, 0);
            double y = report_chart_y(&c, lab->stat[m].value / worst);
            fprintf(x->f,
                    "<path d=\"M%.1f,%.1f V%.1f H%.1f V%.1f Z\" fill=\"%s\" stroke=\"#000\" "
                    "stroke-width=\"0.6\"><title>",
                    bx, y0, y, bx + bw * 0.92, y0, fill);
            report_escape(x->f, x->runs[i].instance);
            fprintf(x->f, " %.4g ms [%.4g, %.4g]</title></path>\n", lab->stat[m].value * 1e3,
                    lab->stat[m].lo * 1e3, lab->stat[m].hi * 1e3);
            double cx = bx + bw * 0.46, ylo = report_chart_y(&c, lab->stat[m].lo / worst),
                   yhi = report_chart_y(&c, lab->stat[m].hi / worst);
            fprintf(x->f,
                    "<path d=\"M%.1f,%.1f V%.1f M%.1f,%.1f h6 M%.1f,%.1f h6\" stroke=\"#000\" "
                    "stroke-width=\"1.2\"/>\n",
                    cx, ylo, yhi, cx - 3, ylo, cx - 3, yhi);
        }
        report_chart_category(&c, l, x->v->labels[l]);
    }
    const char *names[REPORT_NSTYLES];
    const struct report_style *styles[REPORT_NSTYLES];
    char kinds[REPORT_NSTYLES + 1] = "";
    size_t n = nr < REPORT_NSTYLES ? nr : REPORT_NSTYLES;
    for (size_t i = 0; i < n; i++) {
        names[i] = x->runs[i].instance;
        styles[i] = report_style(i);
        kinds[i] = 'b';
    }
    report_chart_legend(&c, names, styles, kinds, n);
    report_chart_end(&c);
}

/* The stop rule's p per interval, one line per run, and each run's p0. */
static void report_convergence(struct report_ctx *x)
{
    size_t maxn = 0;
    for (size_t i = 0; i < x->nruns; i++)
        maxn = x->runs[i].nintervals > maxn ? x->runs[i].nintervals : maxn;
    if (!maxn) {
        report_note(x->f, "No stop-rule history: these results come from `preplay drive`.");
        return;
    }
    struct report_chart c;
    report_chart_begin(&c, x->f, x->next_id++, "PT4Cloud stop rule: p per interval",
                       "interval (number)", "p (similarity to the previous distribution)", 0.5,
                       (double)maxn + 0.5, 0, 1.05, REPORT_X_INTEGER);
    const char *names[REPORT_NSTYLES];
    const struct report_style *styles[REPORT_NSTYLES];
    char kinds[REPORT_NSTYLES + 1] = "";
    size_t nl = 0;
    double p0 = x->runs[0].p0;
    for (size_t i = 0; i < x->nruns; i++) {
        const struct compare_run *r = &x->runs[i];
        const struct report_style *st = report_style(i);
        fprintf(x->f,
                "<path fill=\"none\" stroke=\"%s\" stroke-width=\"2\" stroke-dasharray=\"%s\" "
                "d=\"",
                st->color, st->dash);
        int pen = 0;
        for (size_t k = 0; k < r->nintervals; k++) {
            if (isnan(r->intervals[k].p)) {
                pen = 0;
                continue;
            }
            fprintf(x->f, "%c%.1f,%.1f ", pen ? 'L' : 'M', report_chart_x(&c, (double)k + 1),
                    report_chart_y(&c, r->intervals[k].p));
            pen = 1;
        }
        fprintf(x->f, "\"/>\n");
        for (size_t k = 0; k < r->nintervals; k++)
            if (!isnan(r->intervals[k].p)) {
                double px = report_chart_x(&c, (double)k + 1),
                       py = report_chart_y(&c, r->intervals[k].p);
                fprintf(x->f,
                        "<path d=\"M%.1f,%.1f h6 v6 h-6 Z\" fill=\"%s\" stroke=\"#000\" "
                        "stroke-width=\"0.5\"><title>",
                        px - 3, py - 3, st->color);
                report_escape(x->f, r->instance);
                fprintf(x->f, " interval %zu: p = %.3f, %zu requests</title></path>\n", k + 1,
                        r->intervals[k].p, r->intervals[k].requests);
            }
        if (nl < REPORT_NSTYLES) {
            names[nl] = r->instance;
            styles[nl] = st;
            kinds[nl++] = 'l';
        }
    }
    fprintf(x->f,
            "<path d=\"M%.1f,%.1f H%.1f\" stroke=\"#c00\" stroke-dasharray=\"6 3\"/>"
            "<text x=\"%.1f\" y=\"%.1f\" fill=\"#c00\">p0 = %.2f</text>\n",
            c.left, report_chart_y(&c, p0), c.right, c.left + 6, report_chart_y(&c, p0) - 4, p0);
    report_chart_legend(&c, names, styles, kinds, nl);
    report_chart_end(&c);
}

/* The recording: requests per second per label over time, from the plan. */
static int report_recording(struct report_ctx *x)
{
    const struct compare_recording *rec = x->rec;
    if (!rec || !rec->nrequests) {
        report_note(x->f, rec ? "The plan holds no requests."
                              : "Run compare with --plan PLAN to see the recording's requests "
                                "per label over time and p against it.");
        return 0;
    }
    size_t bins = rec->nrequests < 600 ? 20 : 60;
    double span = rec->span_s > 0 ? rec->span_s : 1, bw = span / (double)bins;
    size_t nl = rec->nlabels < REPORT_NSTYLES ? rec->nlabels : REPORT_NSTYLES;
    double *count = calloc(nl * bins, sizeof *count);
    if (!count)
        return -1;
    for (size_t r = 0; r < rec->nrequests; r++) {
        size_t l = rec->request_label[r];
        if (l >= nl)
            continue;
        size_t b = (size_t)(rec->arrival_s[r] / bw);
        count[l * bins + (b < bins ? b : bins - 1)] += 1;
    }
    double ymax = 0;
    for (size_t k = 0; k < nl * bins; k++)
        ymax = fmax(ymax, count[k] / bw);
    struct report_chart c;
    report_chart_begin(
        &c, x->f, x->next_id++, "The recording: requests per label over time (on-premise)",
        "time since the first request (s)", "requests per second", 0, span, 0, ymax * 1.3, 0);
    const char *names[REPORT_NSTYLES];
    const struct report_style *styles[REPORT_NSTYLES];
    char kinds[REPORT_NSTYLES + 1] = "";
    for (size_t l = 0; l < nl; l++) {
        const struct report_style *st = report_style(l);
        fprintf(x->f,
                "<path fill=\"none\" stroke=\"%s\" stroke-width=\"2\" stroke-dasharray=\"%s\" "
                "d=\"",
                st->color, st->dash);
        for (size_t b = 0; b < bins; b++)
            fprintf(x->f, "%c%.1f,%.1f ", b ? 'L' : 'M', report_chart_x(&c, ((double)b + 0.5) * bw),
                    report_chart_y(&c, count[l * bins + b] / bw));
        fprintf(x->f, "\"/>\n");
        names[l] = rec->label_names[l];
        styles[l] = st;
        kinds[l] = 'l';
    }
    report_chart_legend(&c, names, styles, kinds, nl);
    report_chart_end(&c);
    if (rec->nlabels > nl)
        report_note(x->f, "Only the first labels are drawn; the table lists all of them.");
    free(count);
    return 0;
}

static void report_fmt_ms(FILE *f, const struct compare_stat *s)
{
    fprintf(f, "<td>%.4g <span class=\"band\">[%.4g, %.4g]</span></td>", s->value * 1e3,
            s->lo * 1e3, s->hi * 1e3);
}

/* How each run was made: its CPU ratio (and interval), where the DB and
 * the clients ran when the results say. */
static void report_runs(struct report_ctx *x)
{
    FILE *f = x->f;
    fprintf(f, "<h3>How the runs were made</h3>\n<table class=\"runs\"><tr><th>instance "
               "type</th><th>cpu_ratio (95%% interval)</th><th>database</th><th>clients</th>"
               "</tr>\n");
    for (size_t i = 0; i < x->nruns; i++) {
        const struct compare_run *r = &x->runs[i];
        fprintf(f, "<tr><td>");
        report_escape(f, r->instance);
        if (isnan(r->cpu_ratio))
            fprintf(f, "</td><td>not in the results");
        else
            fprintf(f, "</td><td>%.3f", r->cpu_ratio);
        if (!isnan(r->cpu_ratio_lo))
            fprintf(f, " [%.3f, %.3f]", r->cpu_ratio_lo, r->cpu_ratio_hi);
        else if (!isnan(r->cpu_ratio))
            fprintf(f, " (no interval in the results)");
        char db[1024], cl[1024];
        fprintf(f, "</td><td class=\"placement\">");
        report_escape(f, compare_placement_db_text(&r->placement, db, sizeof db));
        fprintf(f, "</td><td class=\"placement\">");
        report_escape(f, compare_placement_client_text(&r->placement, cl, sizeof cl));
        fprintf(f, "</td></tr>\n");
    }
    fprintf(f, "</table>\n<p class=\"note\">cpu_ratio: the recorded CPU time was multiplied by "
               "it (this machine's CPU score against the recording host's); a ratio measured on "
               "the recording host itself should be 1, so its distance from 1 there is its "
               "error. database and clients: where <code>preplay run</code> found them; a "
               "prediction and a truth compare only when both put them on the same side of the "
               "type.</p>\n");
    if (!compare_placement_alike(x->runs, x->nruns))
        fprintf(f, "<p class=\"warn\">These runs did not place their database or their "
                   "clients alike (see the table): part of their difference is where those "
                   "ran, not the instance type.</p>\n");
}

/* What the plan could and could not explain: coverage, flagged blocks,
 * interleaving threads, emulated external calls, DB endpoints, hosts. */
static void report_plan_quality(struct report_ctx *x)
{
    const struct report_plan_facts *fa = x->rec ? x->rec->facts : NULL;
    FILE *f = x->f;
    if (!fa)
        return;
    fprintf(f,
            "<div class=\"plan-quality\"><h3>The plan behind these numbers</h3>\n<ul>"
            "<li>coverage: <strong>%.1f%%</strong> of the serving threads' events belong to a "
            "block</li>\n<li>flagged blocks: <strong>%llu</strong> of %llu built by the "
            "fallback for threads that interleaved connections (%u threads)</li>\n"
            "<li>network bytes not matched to a peer: %llu</li>\n",
            fa->coverage * 100, (unsigned long long)fa->nflagged, (unsigned long long)fa->nblocks,
            fa->nviolations, (unsigned long long)fa->unmatched_bytes);
    fprintf(f, "<li>external calls (untraced peers, replayed as their recorded duration): %s",
            fa->nexternal ? "" : "none");
    for (size_t e = 0; e < fa->nexternal; e++) {
        fprintf(f, "%s<span class=\"external\">", e ? ", " : "");
        report_escape(f, fa->external[e].address[0] ? fa->external[e].address
                                                    : "(address not recorded)");
        fprintf(f, " &times; %llu (%.4g s recorded)</span>",
                (unsigned long long)fa->external[e].calls, fa->external[e].recorded_s);
    }
    fprintf(f, "</li>\n<li>database when recorded: %s", fa->ndb_endpoints ? "" : "none");
    for (size_t e = 0; e < fa->ndb_endpoints; e++) {
        fprintf(f, "%s", e ? ", " : "");
        report_escape(f, fa->db_endpoints[e]);
    }
    fprintf(f, "</li>\n<li>components when recorded: ");
    for (size_t c = 0; c < fa->ncomponents; c++) {
        fprintf(f, "%s", c ? ", " : "");
        report_escape(f, fa->components[c].name);
        fprintf(f, " on ");
        report_escape(f, fa->components[c].host[0] ? fa->components[c].host : "(host unknown)");
        fprintf(f, " (%u workers%s)", fa->components[c].workers,
                fa->components[c].frontend ? ", front end" : "");
    }
    fprintf(f, "</li></ul></div>\n");
}

/* The recording's row of a label: median, p95, p99 of the front-end
 * blocks' recorded response times, with bootstrap bands. */
static void report_recorded_row(struct report_ctx *x, const char *label)
{
    size_t rl = x->rec ? compare_recording_label(x->rec, label) : (size_t)-1;
    if (rl == (size_t)-1)
        return;
    const double *s = x->rec->recorded_s[rl];
    size_t n = x->rec->nrecorded[rl];
    static const double pct[COMPARE_NMETRICS] = {50, 95, 99};
    double value[COMPARE_NMETRICS], lo[COMPARE_NMETRICS], hi[COMPARE_NMETRICS];
    struct stats_band_options bo;
    stats_band_options_default(&bo);
    char err[STATS_ERR_LEN];
    fprintf(x->f, "<tr class=\"recorded\"><td>");
    report_escape(x->f, label);
    fprintf(x->f, "</td><td>recorded (server side)</td><td>%zu</td>", n);
    double top = 0;
    for (size_t k = 0; k < n; k++)
        top = fmax(top, s[k]);
    if (!(top > 0)) {
        fprintf(x->f, "<td colspan=\"3\">the plan holds no recorded times</td><td>-</td></tr>\n");
        return;
    }
    if (n < 2 || stats_percentile_ci(s, n, pct, COMPARE_NMETRICS, &bo, value, lo, hi, err)) {
        fprintf(x->f, "<td colspan=\"3\">too few recorded requests</td><td>-</td></tr>\n");
        return;
    }
    for (int m = 0; m < COMPARE_NMETRICS; m++)
        report_fmt_ms(x->f, &(struct compare_stat){value[m], lo[m], hi[m], 1});
    fprintf(x->f, "<td>-</td></tr>\n");
}

static void report_tables(struct report_ctx *x)
{
    FILE *f = x->f;
    fprintf(f, "<h2>Verdict</h2>\n<p class=\"verdict\"><strong>");
    report_escape(f, x->v->reason);
    fprintf(f, "</strong></p>\n<p>SLOs: ");
    if (!x->opt->nslos)
        fprintf(f, "none given");
    for (size_t s = 0; s < x->opt->nslos; s++) {
        fprintf(f, "%s", s ? ", " : "");
        report_escape(f, x->opt->slos[s].text);
    }
    if (x->opt->nslo_labels) {
        fprintf(f, " on labels ");
        for (size_t s = 0; s < x->opt->nslo_labels; s++) {
            fprintf(f, "%s", s ? ", " : "");
            report_escape(f, x->opt->slo_labels[s]);
        }
    }
    fprintf(f,
            ", checked against the pessimistic (upper) edge of each 99%% band. Types in the "
            "same tier differ only by noise (bands overlap or p &ge; %.2f on every label) and "
            "are not ranked against each other.</p>\n",
            x->opt->equivalent_p);
    fprintf(f, "<table><tr><th>instance type</th><th>$/hour</th><th>requests/hour</th>"
               "<th>$ per million requests</th><th>stop rule</th><th>tier</th><th>SLO</th></tr>\n");
    for (size_t i = 0; i < x->nruns; i++) {
        const struct compare_run *r = &x->runs[i];
        fprintf(f, "<tr%s><td>", i == x->v->recommended ? " class=\"pick\"" : "");
        report_escape(f, r->instance);
        if (isnan(r->price_per_hour))
            fprintf(f, "</td><td>-");
        else
            fprintf(f, "</td><td>%.4g", r->price_per_hour);
        fprintf(f, "</td><td>%.0f</td><td>", r->requests_per_hour);
        if (isnan(r->cost_per_million))
            fprintf(f, "-");
        else
            fprintf(f, "%.4g", r->cost_per_million);
        if (!r->has_stop_rule)
            fprintf(f, "</td><td>n/a (drive)");
        else
            fprintf(f, "</td><td>%s after %zu intervals", r->stopped ? "met" : "cut short",
                    r->nintervals);
        if (r->ranked)
            fprintf(f, "</td><td>%d", r->tier);
        else
            fprintf(f, "</td><td>- (not ranked)");
        fprintf(f, "</td><td>%s", r->meets_slo ? "meets" : "fails: ");
        report_escape(f, r->meets_slo ? "" : r->slo_failure);
        fprintf(f, "</td></tr>\n");
    }
    fprintf(f, "</table>\n<p>Requests per hour are the successful requests of the run divided "
               "by its driving time; under the default open-loop replay this is the recorded "
               "arrival rate (times --speed) when the type keeps up.</p>\n");
    report_runs(x);
    report_plan_quality(x);
    fprintf(f,
            "<h2>Response times per label</h2>\n<p>Milliseconds, value [99%% bootstrap "
            "band].%s</p>\n<table><tr><th>label</th><th>instance type</th><th>requests</th>"
            "<th>median</th><th>p95</th><th>p99</th>%s</tr>\n",
            x->rec ? " p: PT4Cloud similarity of the type's distribution to the on-premise "
                     "recording (1 = the same). The <em>recorded (server side)</em> row is the "
                     "on-premise baseline: the front end's recorded time from receiving a request "
                     "to sending its response. The replays are measured at the client (first byte "
                     "sent to last byte received), so they also hold network and connection time "
                     "the recorded row does not."
                   : "",
            x->rec ? "<th>p vs recording</th>" : "");
    for (size_t l = 0; l < x->v->nlabels; l++)
        for (size_t i = 0; i < x->nruns; i++) {
            if (!i)
                report_recorded_row(x, x->v->labels[l]);
            const struct compare_label *lab = compare_run_label(&x->runs[i], x->v->labels[l]);
            fprintf(f, "<tr><td>");
            report_escape(f, x->v->labels[l]);
            fprintf(f, "</td><td>");
            report_escape(f, x->runs[i].instance);
            if (!lab) {
                fprintf(f, "</td><td colspan=\"4\">no requests</td></tr>\n");
                continue;
            }
            fprintf(f, "</td><td>%zu</td>", lab->count);
            for (int m = 0; m < COMPARE_NMETRICS; m++)
                report_fmt_ms(f, &lab->stat[m]);
            if (x->rec && isnan(lab->p_recording))
                fprintf(f, "<td>-</td>");
            else if (x->rec)
                fprintf(f, "<td>%.3f</td>", lab->p_recording);
            fprintf(f, "</tr>\n");
        }
    fprintf(f, "</table>\n");
}

/* The first screen, above every table and chart: the replays that failed
 * (one line each, and whether they are ranked) and what the verdict did
 * not judge (v->caveats); a one-line all-clear otherwise. */
static void report_trust_box(struct report_ctx *x)
{
    FILE *f = x->f;
    int any = x->v->caveats && x->v->caveats[0];
    fprintf(f, "<div class=\"trust%s\" id=\"trust\">\n", any ? " warn" : "");
    if (!any) {
        fprintf(f, "<p>Every replay completed without failed requests, DB errors or missing "
                   "labels, and the stop rule judged every label.</p>\n</div>\n");
        return;
    }
    fprintf(f, "<h2>Before the numbers: what this verdict does not vouch for</h2>\n");
    int nfailed = 0;
    for (size_t i = 0; i < x->nruns; i++) {
        char *line = compare_trust_problem_line(&x->runs[i]);
        if (!line)
            continue;
        fprintf(f, "%s<li>", nfailed++ ? "" : "<ul class=\"problems\">\n");
        report_escape(f, line);
        fprintf(f, "</li>\n");
        free(line);
    }
    if (nfailed)
        fprintf(f, "</ul>\n");
    fprintf(f, "<p class=\"caveats\">");
    report_escape(f, x->v->caveats);
    fprintf(f,
            "</p>\n<p class=\"note\">A label is judged by the stop rule when its last "
            "comparison had %zu samples or more; it does not resemble the recording when "
            "PT4Cloud's p against it is below %.2g with %zu samples or more on both "
            "sides.</p>\n</div>\n",
            compare_trust_min_samples(), COMPARE_RESEMBLE_P, compare_trust_min_samples());
}

/* The sections on instance types (results files). */
static int report_types(struct report_ctx *x)
{
    FILE *f = x->f;
    report_trust_box(x);
    report_tables(x);
    fprintf(f, "<h2>Response-time distributions</h2>\n<p>Kernel density estimates of each "
               "type's response times, with the 99%% bootstrap band shaded; the x axis is cut "
               "a little past the slowest p99.</p>\n");
    for (size_t l = 0; l < x->v->nlabels; l++)
        if (report_distribution(x, x->v->labels[l]))
            return -1;
    fprintf(f, "<h2>Across instance types, per label</h2>\n<p>Each label's value on each type "
               "divided by the slowest type's (CloudProphet Fig. 9-10); whiskers are the "
               "99%% bands.</p>\n");
    report_normalized(x, COMPARE_MEDIAN);
    report_normalized(x, COMPARE_P95);
    fprintf(f, "<h2>Where the time goes</h2>\n<p>Mean time per front-end request spent by the "
               "front end on CPU, files, network (request/response transfer and untraced peers), "
               "locks and the database, and waiting for each inner tier, shown as that tier "
               "(CloudProphet Fig. 12): a bottleneck that shifts between types shows here.</p>\n");
    if (report_time_write(f, &x->next_id, x->runs, x->nruns, x->rec, x->v))
        return -1;
    fprintf(f, "<h2>Did the runs converge?</h2>\n<p>PT4Cloud compares each interval's "
               "distribution with the previous one; a run stops when p reaches p0. A run "
               "that was cut short (max intervals, an error) is flagged in the verdict "
               "table.</p>\n");
    report_convergence(x);
    fprintf(f, "<h2>The recording</h2>\n");
    return report_recording(x);
}

static int report_body(struct report_ctx *x)
{
    FILE *f = x->f;
    fprintf(f,
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
            "<title>preplay compare report</title>\n<style>\n"
            "body{font-family:sans-serif;max-width:900px;margin:2em auto;color:#111}\n"
            "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #bbb;"
            "padding:3px 8px;text-align:left}tr.pick{background:#e8f0e0;font-weight:bold}\n"
            "tr.recorded{background:#f1f1f1;font-style:italic}.band{color:#555;font-size:90%%}."
            "note{color:#444;font-style:italic}\n"
            ".plan-quality{border:1px solid #999;padding:0 1em;background:#fafafa}\n"
            "svg.chart{display:block;margin:1em 0;border:1px solid #eee}\n"
            ".trust{border:2px solid #8a8;padding:0 1em;margin:1em 0}"
            ".trust.warn{border-color:#b00;background:#fff4f0}p.warn{color:#b00}\n"
            "</style></head><body>\n<h1>%s preplay compare</h1>\n<p>",
            x->nruns    ? "Which instance type?"
            : x->nduets ? "Is version B slower?"
                        : "Why is this type slower?");
    for (size_t i = 0; i < x->nruns; i++) {
        fprintf(f, "%s", i ? ", " : "Results compared: ");
        report_escape(f, x->runs[i].path);
        fprintf(f, " (");
        report_escape(f, x->runs[i].instance);
        fprintf(f, ")");
    }
    for (size_t i = 0; i < x->nduets; i++) {
        fprintf(f, "%s", i ? ", " : x->nruns ? ". Duet files: " : "Duet files: ");
        report_escape(f, x->duets[i].path);
    }
    for (size_t i = 0; i < x->nregress; i++) {
        fprintf(f, "%s",
                i                       ? ", "
                : x->nruns || x->nduets ? ". Regress files: "
                                        : "Regress files: ");
        report_escape(f, x->regress[i].path);
    }
    fprintf(f, ".");
    if (x->rec) {
        fprintf(f, " Recording: ");
        report_escape(f, x->rec->path);
        fprintf(f, " (%zu requests over %.1f s, recording ", x->rec->nrequests, x->rec->span_s);
        report_escape(f, x->rec->recording_id);
        fprintf(f, ").");
    }
    fprintf(f, "</p>\n");
    if (x->nruns && report_types(x))
        return -1;
    if (x->nduets && report_duet_write(f, &x->next_id, x->duets, x->nduets))
        return -1;
    if (x->nregress && report_regress_write(f, &x->next_id, x->regress, x->nregress))
        return -1;
    fprintf(f, "<p class=\"note\">Generated by preplay compare; see docs/preplay-compare.md "
               "for how every number is derived.</p>\n</body></html>\n");
    return 0;
}

int compare_report_write(const char *path, const struct compare_report_inputs *in,
                         const struct compare_recording *rec, const struct compare_options *opt,
                         const struct compare_verdict *v, char *err, size_t errlen)
{
    struct out_file o; /* never through a planted link (out_file.h) */
    if (out_file_begin(&o, path, 0644, err, errlen))
        return -1;
    FILE *f = out_file_stream(&o, err, errlen);
    if (!f) {
        out_file_abort(&o);
        return -1;
    }
    struct report_ctx x = {.f = f,
                           .next_id = 1,
                           .runs = in->runs,
                           .nruns = in->nruns,
                           .rec = rec,
                           .opt = opt,
                           .v = v,
                           .duets = in->duets,
                           .nduets = in->nduets,
                           .regress = in->regress,
                           .nregress = in->nregress};
    if (report_body(&x) || ferror(f)) {
        snprintf(err, errlen, "%s: cannot write the report (out of memory or disk full)", path);
        out_file_abort(&o);
        return -1;
    }
    return out_file_commit(&o, err, errlen);
}
