/* report_duet.c - "Versions (duet)" of the HTML report: per duet file
 * (`preplay duet`, formats/DUET.md) a table and a chart of B/A per label
 * and overall, each gms with its bootstrap interval as a whisker around
 * the line at 1 (no difference), the A/A file's interval of the same
 * label behind it as a hatched box when there is one. Drawn with the
 * report's chart kit (report_svg.h) on its category axis; every label is
 * escaped. Only drawing: the numbers and verdicts are the file's. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report_duet.h"
#include "report_svg.h"

/* The most categories a chart draws: a file may hold 65536 labels of 4 KB
 * names, and a category per label (its name three times, escaped) made a
 * chart of gigabytes nobody could read. Past it the chart shows overall
 * and the labels furthest from 1, and says so; the table has them all. */
#define REPORT_DUET_MAX_CATS 64u

/* The metrics a chart shows: overall first, then the labels with one (at
 * most REPORT_DUET_MAX_CATS in all; of: how many there were). */
struct report_duet_cats {
    const char **names;
    const struct duet_metric_read **m, **aa;
    size_t n, of;
};

static int report_duet_cmp_desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

/* How far a metric is from "equal": |log gms| (gms > 0, reader-checked). */
static double report_duet_distance(const struct duet_metric_read *m)
{
    return fabs(log(m->gms));
}

/* Keeps the first category (overall, when there) and the max - 1 others
 * furthest from 1, in their order. */
static void report_duet_cats_keep(struct report_duet_cats *c, size_t max)
{
    c->of = c->n;
    if (c->n <= max)
        return;
    size_t first = c->names[0] && !strcmp(c->names[0], "(overall)") ? 1 : 0, keep = max - first;
    /* the distance the keep-th furthest has: a selection by repeated
     * passes would be quadratic; sort a copy of the distances */
    double *d = malloc((c->n - first) * sizeof *d);
    double cut = 0;
    if (d) {
        for (size_t i = first; i < c->n; i++)
            d[i - first] = report_duet_distance(c->m[i]);
        qsort(d, c->n - first, sizeof *d, report_duet_cmp_desc);
        cut = d[keep - 1];
        free(d);
    }
    size_t n = first;
    for (size_t i = first; i < c->n && n < max; i++)
        if (!d || report_duet_distance(c->m[i]) >= cut) {
            c->names[n] = c->names[i];
            c->m[n] = c->m[i];
            c->aa[n++] = c->aa[i];
        }
    c->n = n;
}

static int report_duet_cats(const struct compare_duet *d, struct report_duet_cats *c)
{
    size_t cap = d->df.nlabels + 1;
    c->n = 0;
    c->names = calloc(cap, sizeof *c->names);
    c->m = calloc(cap, sizeof *c->m);
    c->aa = calloc(cap, sizeof *c->aa);
    if (!c->names || !c->m || !c->aa)
        return -1;
    if (d->df.overall.present) {
        c->names[c->n] = "(overall)";
        c->aa[c->n] = compare_duet_aa_metric(d, NULL);
        c->m[c->n++] = &d->df.overall;
    }
    for (size_t l = 0; l < d->df.nlabels; l++)
        if (d->df.labels[l].m.present) {
            c->names[c->n] = d->df.labels[l].name;
            c->aa[c->n] = compare_duet_aa_metric(d, d->df.labels[l].name);
            c->m[c->n++] = &d->df.labels[l].m;
        }
    report_duet_cats_keep(c, REPORT_DUET_MAX_CATS);
    return 0;
}

static void report_duet_cats_free(struct report_duet_cats *c)
{
    free(c->names);
    free(c->m);
    free(c->aa);
}

/* One category: the A/A box, the interval whisker and the gms marker
 * (filled: the interval excludes 1; hollow: equal). */
static void report_duet_mark(struct report_chart *c, size_t i, const char *name,
                             const struct duet_metric_read *m, const struct duet_metric_read *aa)
{
    FILE *f = c->f;
    double slot = (c->right - c->left) / (double)c->ncats;
    double cx = c->left + slot * ((double)i + 0.5), half = fmin(slot * 0.3, 40);
    if (aa) {
        char fill[64];
        report_fill(c, report_style(5), fill, sizeof fill);
        fprintf(f,
                "<path d=\"M%.1f,%.1f V%.1f H%.1f V%.1f Z\" fill=\"%s\" stroke=\"#555\" "
                "stroke-width=\"0.6\"><title>",
                cx - half, report_chart_y(c, aa->ci_low), report_chart_y(c, aa->ci_high), cx + half,
                report_chart_y(c, aa->ci_low), fill);
        report_escape(f, name);
        fprintf(f, " A/A [%.4f, %.4f]</title></path>\n", aa->ci_low, aa->ci_high);
    }
    double ylo = report_chart_y(c, m->ci_low), yhi = report_chart_y(c, m->ci_high);
    fprintf(f,
            "<path d=\"M%.1f,%.1f V%.1f M%.1f,%.1f h14 M%.1f,%.1f h14\" stroke=\"%s\" "
            "stroke-width=\"2\"/>\n",
            cx, ylo, yhi, cx - 7, ylo, cx - 7, yhi, report_style(0)->color);
    fprintf(f,
            "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"%s\" stroke=\"%s\" "
            "stroke-width=\"2\"><title>",
            cx, report_chart_y(c, m->gms), m->equal ? "#fff" : report_style(0)->color,
            report_style(0)->color);
    report_escape(f, name);
    fprintf(f, " B/A %.4f [%.4f, %.4f] %s</title></circle>\n", m->gms, m->ci_low, m->ci_high,
            duet_verdict(m));
}

static void report_duet_chart(FILE *f, int id, const struct compare_duet *d,
                              const struct report_duet_cats *k)
{
    double lo = 1, hi = 1;
    for (size_t i = 0; i < k->n; i++) {
        lo = fmin(lo, k->m[i]->ci_low);
        hi = fmax(hi, k->m[i]->ci_high);
        if (k->aa[i]) {
            lo = fmin(lo, k->aa[i]->ci_low);
            hi = fmax(hi, k->aa[i]->ci_high);
        }
    }
    double pad = fmax((hi - lo) * 0.1, 0.005);
    /* room above for the legend */
    double ymin = lo - pad, ymax = hi + pad + (hi - lo + 2 * pad) * 0.45;
    char title[256];
    snprintf(title, sizeof title, "%s per label, with %g%% intervals",
             d->df.aa ? "A/A: A against itself" : "Version B against A", d->df.confidence * 100);
    struct report_chart c;
    report_chart_begin_categories(&c, f, id, title, "request label",
                                  "B/A response time (1 = equal, above: B slower)", k->names, k->n,
                                  0, ymin, ymax);
    const struct report_style *ref = report_style(6);
    fprintf(f,
            "<path d=\"M%.1f,%.1f H%.1f\" stroke=\"%s\" stroke-width=\"1.5\" "
            "stroke-dasharray=\"%s\"/>\n",
            c.left, report_chart_y(&c, 1), c.right, ref->color, ref->dash);
    for (size_t i = 0; i < k->n; i++) {
        report_duet_mark(&c, i, k->names[i], k->m[i], k->aa[i]);
        report_chart_category(&c, i, k->names[i]);
    }
    char gms_name[96], aa_name[96];
    snprintf(gms_name, sizeof gms_name, "B/A (gms), %g%% interval", d->df.confidence * 100);
    snprintf(aa_name, sizeof aa_name, "A/A interval");
    const char *names[3] = {gms_name, "1: no difference", aa_name};
    const struct report_style *styles[3] = {report_style(0), ref, report_style(5)};
    report_chart_legend(&c, names, styles, "llb", d->aa ? 3 : 2);
    report_chart_end(&c);
}

static void report_duet_row(FILE *f, const struct compare_duet *d, const char *name,
                            const struct duet_metric_read *m, const struct duet_metric_read *aa)
{
    fprintf(f, "<tr><td>");
    report_escape(f, name);
    if (!m->present) {
        fprintf(f, "</td><td colspan=\"5\">skipped: ");
        report_escape(f, m->skipped);
        fprintf(f, "</td></tr>\n");
        return;
    }
    fprintf(f,
            "</td><td>%.4f <span class=\"band\">[%.4f, %.4f]</span></td><td>%s</td>"
            "<td>%ld (%ld &#215; %ld)</td><td>%.2f%%</td><td>",
            m->gms, m->ci_low, m->ci_high, duet_verdict(m), m->iterations, d->df.runs,
            d->df.iterations, m->ci_width * 100);
    if (aa)
        fprintf(f, "%.2f%%", aa->ci_width * 100);
    else
        fprintf(f, "-");
    fprintf(f, "</td></tr>\n");
}

static void report_duet_table(FILE *f, const struct compare_duet *d)
{
    const struct duet_file *df = &d->df;
    fprintf(f, "<h3>");
    report_escape(f, d->path);
    fprintf(f, "</h3>\n<p>");
    if (df->aa) {
        fprintf(f, "A/A: ");
        report_escape(f, df->plan_a);
        fprintf(f, " against itself");
    } else {
        fprintf(f, "B = ");
        report_escape(f, df->plan_b);
        fprintf(f, " against A = ");
        report_escape(f, df->plan_a);
    }
    fprintf(f,
            "; %s procedure, %ld runs &#215; %ld iterations, the %s response time per "
            "iteration, %g%% bootstrap intervals of the geometric mean over runs",
            df->sequential ? "sequential" : "duet", df->runs, df->iterations,
            df->median ? "median" : "mean", df->confidence * 100);
    if (d->aa) {
        fprintf(f, "; A/A context: ");
        report_escape(f, d->aa->path);
    }
    fprintf(f, ".</p>\n");
    if (df->failed_a || df->failed_b)
        fprintf(f,
                "<p class=\"warn\">Failed requests: %llu in A, %llu in B (left out of the "
                "ratios).</p>\n",
                (unsigned long long)df->failed_a, (unsigned long long)df->failed_b);
    fprintf(f, "<table class=\"duet\"><tr><th>label</th><th>B/A [interval]</th><th>verdict</th>"
               "<th>ratios (runs &#215; iterations)</th><th>width</th><th>A/A width</th></tr>\n");
    report_duet_row(f, d, "(overall)", &df->overall, compare_duet_aa_metric(d, NULL));
    for (size_t l = 0; l < df->nlabels; l++)
        report_duet_row(f, d, df->labels[l].name, &df->labels[l].m,
                        compare_duet_aa_metric(d, df->labels[l].name));
    for (size_t l = 0; l < df->nskipped; l++) {
        fprintf(f, "<tr><td>");
        report_escape(f, df->skipped[l].name);
        fprintf(f, "</td><td colspan=\"5\">skipped: ");
        report_escape(f, df->skipped[l].why);
        fprintf(f, "</td></tr>\n");
    }
    fprintf(f, "</table>\n");
}

int report_duet_write(FILE *f, int *next_id, const struct compare_duet *d, size_t n)
{
    fprintf(f, "<h2 id=\"duet\">Versions (duet)</h2>\n<p>Each file is from <code>preplay "
               "duet</code>: A and B "
               "replayed at the same time on two cores of one machine, so interference hits "
               "both alike and cancels in the ratio B/A (Bulej et al.). Per label, the geometric "
               "mean of the per-iteration ratios over runs, with its bootstrap interval: "
               "<b>equal</b> when the interval contains 1, <b>slower</b> when it lies above "
               "(B takes longer), <b>faster</b> when below. An A/A file (A against itself) "
               "shows how wide the interval is when nothing changed.</p>\n");
    for (size_t i = 0; i < n; i++) {
        report_duet_table(f, &d[i]);
        struct report_duet_cats k;
        int rc = report_duet_cats(&d[i], &k);
        if (!rc && k.n)
            report_duet_chart(f, (*next_id)++, &d[i], &k);
        if (!rc && k.of > k.n)
            fprintf(f,
                    "<p class=\"note\">The chart shows %zu of the %zu: overall and the labels "
                    "furthest from 1 (B/A); the table above has them all.</p>\n",
                    k.n, k.of);
        report_duet_cats_free(&k);
        if (rc)
            return -1;
    }
    return 0;
}
