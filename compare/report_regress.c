/* report_regress.c - "Why is this type slower?" of the HTML report: per
 * regress file (`preplay regress`, formats/REGRESS.md) a table of the
 * flagged counters by severity (direction, violating windows, the
 * baselines' range against the target's windows, the rule that broke)
 * and, per flagged counter, a time-series chart: the target's windows as
 * a line, those that violate a rule marked, over the baselines' min-max
 * band, their usual level (3-level: the medium level's bounds) and their
 * median. Drawn with the report's chart kit (report_svg.h); every name is
 * escaped and the chart's texts are fixed short words or shortened by the
 * kit, so no counter name (a label may be long) overflows a chart. Only
 * drawing: the numbers are the file's (compare_regress.c counts them). */
#include <float.h>
#include <math.h>
#include <string.h>

#include "report_regress.h"
#include "report_svg.h"

/* The y range a chart needs: the baselines' range and usual level and
 * every target value, with room above for the legend. */
static void report_regress_yrange(const struct regress_file *rf, const struct regress_file_flag *fl,
                                  double *ymin, double *ymax)
{
    const struct regress_file_level *l = fl->level;
    double lo = HUGE_VAL, hi = -HUGE_VAL;
    double fixed[5] = {l->min, l->max, l->median, NAN, NAN};
    if (!rf->equal_width) {
        fixed[3] = l->low;
        fixed[4] = l->high;
    }
    for (int k = 0; k < 5; k++)
        if (isfinite(fixed[k])) {
            lo = fmin(lo, fixed[k]);
            hi = fmax(hi, fixed[k]);
        }
    for (size_t i = 0; i < fl->nvalues; i++)
        if (!isnan(fl->target_values[i])) {
            lo = fmin(lo, fl->target_values[i]);
            hi = fmax(hi, fl->target_values[i]);
        }
    if (!(lo <= hi)) {
        lo = 0;
        hi = 1;
    }
    /* in halves and clamped: values near DBL_MAX (finite, as a file may
     * hold them) made the range infinite and every mark one point */
    double span = hi > lo ? hi / 2 - lo / 2 : fmax(fabs(hi), 1e-9) / 2, pad = span * 0.16;
    *ymin = fmax(lo - pad, -DBL_MAX);
    if (lo >= 0 && *ymin < 0)
        *ymin = 0;
    *ymax = fmin(hi + pad + (hi / 2 + pad / 2 - *ymin / 2) * 1.1, DBL_MAX); /* the legend's room */
}

/* A horizontal band between y0 and y1 (clipped to the plot) over the whole x range. */
static void report_regress_band(struct report_chart *c, double y0, double y1, size_t style,
                                const char *what)
{
    if (!isfinite(y0) || !isfinite(y1))
        return;
    char fill[64];
    report_fill(c, report_style(style), fill, sizeof fill);
    double top = report_chart_y(c, fmin(y1, c->ymax)),
           bottom = report_chart_y(c, fmax(y0, c->ymin));
    fprintf(c->f,
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" "
            "fill-opacity=\"0.55\" stroke=\"none\"><title>%s [%.4g, %.4g]</title></rect>\n",
            c->left, top, c->right - c->left, fmax(bottom - top, 1), fill, what, y0, y1);
}

/* The most marks a chart draws: past it, consecutive windows share one
 * (their range, their count of violations). A file may hold 1000000
 * windows: a mark each made an 8 MB regress file a 165 MB report. */
#define REPORT_REGRESS_MAX_MARKS 1000u

/* Windows [from, to): their measured values' min and max (n of them) and
 * how many violate (k: the next violating index, advanced). */
struct report_regress_group {
    double min, max;
    size_t n, violating;
};

static void report_regress_group(const struct regress_file_flag *fl, size_t from, size_t to,
                                 size_t *k, struct report_regress_group *g)
{
    g->min = HUGE_VAL;
    g->max = -HUGE_VAL;
    g->n = g->violating = 0;
    for (size_t i = from; i < to; i++) {
        while (*k < fl->nviolating && fl->violating[*k] < i)
            (*k)++;
        if (*k < fl->nviolating && fl->violating[*k] == i)
            g->violating++;
        double v = fl->target_values[i];
        if (isnan(v))
            continue;
        g->min = fmin(g->min, v);
        g->max = fmax(g->max, v);
        g->n++;
    }
}

/* The target's windows: a line through the measured ones (broken where a
 * window measured nothing), a mark per window, filled when it violates;
 * past REPORT_REGRESS_MAX_MARKS windows, a mark per group of windows, the
 * line through each group's min and max. */
static void report_regress_series(struct report_chart *c, const struct regress_file *rf,
                                  const struct regress_file_flag *fl)
{
    FILE *f = c->f;
    const struct report_style *line = report_style(0), *bad = report_style(4);
    size_t per = (fl->nvalues + REPORT_REGRESS_MAX_MARKS - 1) / REPORT_REGRESS_MAX_MARKS, k = 0;
    if (!per)
        per = 1;
    struct report_regress_group g;
    fprintf(f, "<path fill=\"none\" stroke=\"%s\" stroke-width=\"1.8\" d=\"", line->color);
    int pen = 0;
    for (size_t i = 0; i < fl->nvalues; i += per) {
        report_regress_group(fl, i, fmin(i + per, fl->nvalues), &k, &g);
        if (!g.n) {
            pen = 0;
            continue;
        }
        double x = report_chart_x(c, ((double)i + 0.5 * (double)per) * rf->window_s);
        fprintf(f, "%c%.1f,%.1f ", pen ? 'L' : 'M', x, report_chart_y(c, g.min));
        if (g.max > g.min)
            fprintf(f, "L%.1f,%.1f ", x, report_chart_y(c, g.max));
        pen = 1;
    }
    fprintf(f, "\"/>\n");
    k = 0;
    for (size_t i = 0; i < fl->nvalues; i += per) {
        size_t to = i + per < fl->nvalues ? i + per : fl->nvalues;
        report_regress_group(fl, i, to, &k, &g);
        if (!g.n)
            continue;
        int violates = g.violating > 0;
        fprintf(f,
                "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%s\" fill=\"%s\" stroke=\"%s\" "
                "stroke-width=\"1.5\"><title>",
                report_chart_x(c, ((double)i + 0.5 * (double)(to - i)) * rf->window_s),
                report_chart_y(c, g.max), violates ? "4.5" : "2.5", violates ? bad->color : "#fff",
                violates ? bad->color : line->color);
        if (per == 1)
            fprintf(f, "window %zu (from %g s): %.4g%s", i, (double)i * rf->window_s, g.max,
                    violates ? ", violates a rule" : "");
        else
            fprintf(f, "windows %zu to %zu (from %g s): %.4g to %.4g, %zu violate a rule", i,
                    to - 1, (double)i * rf->window_s, g.min, g.max, g.violating);
        fprintf(f, "</title></circle>\n");
    }
}

static void report_regress_chart(FILE *f, int id, const struct regress_file *rf,
                                 const struct regress_file_flag *fl)
{
    const struct regress_file_level *l = fl->level;
    double ymin, ymax;
    report_regress_yrange(rf, fl, &ymin, &ymax);
    char title[REGRESS_MAX_NAME_BYTES + 64], ylabel[40];
    snprintf(title, sizeof title, "%s (severity %.2f, %s)", fl->counter, fl->severity,
             fl->direction);
    /* the counter's kind (the name before a label): short, so it fits the axis */
    size_t kind = strcspn(fl->counter, ":");
    snprintf(ylabel, sizeof ylabel, "%.*s", (int)(kind < 39 ? kind : 39), fl->counter);
    struct report_chart c;
    report_chart_begin(&c, f, id, title, "target run: window start (s)", ylabel, 0,
                       (double)fl->nvalues * rf->window_s, ymin, ymax, REPORT_X_NUMERIC);
    report_regress_band(&c, l->min, l->max, 5, "baselines&#39; range");
    if (!rf->equal_width)
        report_regress_band(&c, l->low, l->high, 1, "usual level (medium)");
    const struct report_style *med = report_style(6);
    if (isfinite(l->median))
        fprintf(f,
                "<path d=\"M%.1f,%.1f H%.1f\" stroke=\"%s\" stroke-width=\"1.5\" "
                "stroke-dasharray=\"%s\"/>\n",
                c.left, report_chart_y(&c, l->median), c.right, med->color, med->dash);
    report_regress_series(&c, rf, fl);
    const char *names[5] = {"target windows", "violating a rule (filled)", "baselines' median",
                            "baselines' min to max", "usual level (medium)"};
    const struct report_style *styles[5] = {report_style(0), report_style(4), med, report_style(5),
                                            report_style(1)};
    report_chart_legend(&c, names, styles, "lllbb", rf->equal_width ? 4 : 5);
    report_chart_end(&c);
}

/* One table row per flagged counter. */
static void report_regress_row(FILE *f, const struct compare_regress *r, size_t i)
{
    const struct regress_file_flag *fl = &r->rf.flagged[i];
    const struct regress_file_level *l = fl->level;
    struct compare_regress_range g;
    compare_regress_range(fl, &g);
    fprintf(f, "<tr><td>%.2f</td><td>%s</td><td>%zu of %zu</td><td>", fl->severity, fl->direction,
            fl->nviolating, r->rf.target.windows);
    report_escape(f, fl->counter);
    if (isnan(l->min))
        fprintf(f, "</td><td>-");
    else
        fprintf(f, "</td><td>%.4g <span class=\"band\">[%.4g, %.4g]</span>", l->median, l->min,
                l->max);
    if (!fl->target_values)
        fprintf(f, "</td><td>- (before 1.1)");
    else if (!g.measured)
        fprintf(f, "</td><td>never measured");
    else
        fprintf(f, "</td><td>%.4g; %zu above, %zu below", g.target_median, g.above, g.below);
    fprintf(f, "</td><td>");
    const struct regress_file_rule *rule = r->rule[i];
    if (!rule)
        fprintf(f, "not among the %zu rules written (--max-rules)", r->rf.nrules);
    else {
        for (size_t k = 0; k < rule->npremise; k++) {
            fprintf(f, "%s", k ? ", " : "");
            report_escape(f, rule->premise[k].counter);
            fprintf(f, "=");
            report_escape(f, rule->premise[k].level);
        }
        fprintf(f, " &#8594; ");
        report_escape(f, rule->consequent.counter);
        fprintf(f, "=");
        report_escape(f, rule->consequent.level);
        fprintf(f, " <span class=\"band\">%.2f &#8594; %.2f</span>", rule->baseline_confidence,
                rule->target_confidence);
    }
    fprintf(f, "</td></tr>\n");
}

static void report_regress_input(FILE *f, const struct regress_file_input *in)
{
    if (in->instance && *in->instance) {
        report_escape(f, in->instance);
        fprintf(f, " (");
        report_escape(f, in->path);
        fprintf(f, ")");
    } else
        report_escape(f, in->path);
}

static void report_regress_file(FILE *f, int *next_id, const struct compare_regress *r)
{
    const struct regress_file *rf = &r->rf;
    fprintf(f, "<h3>");
    report_escape(f, r->path);
    fprintf(f, "</h3>\n<p>Target ");
    report_regress_input(f, &rf->target);
    fprintf(f, ", %zu windows of %g s, against ", rf->target.windows, rf->window_s);
    for (size_t b = 0; b < rf->nbaselines; b++) {
        fprintf(f, "%s", b ? ", " : "");
        report_regress_input(f, &rf->baselines[b]);
    }
    fprintf(f, "; %s, %s levels; %llu rules mined, %zu written.</p>\n",
            regress_file_method_name(rf->method), rf->equal_width ? "equal-width" : "3",
            (unsigned long long)rf->rules_total, rf->nrules);
    if (!rf->nflagged) {
        fprintf(f, "<p>No counter flagged: the target's counters keep the company they keep on "
                   "the baselines.</p>\n");
        return;
    }
    fprintf(f, "<table class=\"regress\"><tr><th>severity</th><th>direction</th><th>violating "
               "windows</th><th>counter</th><th>baselines: median [min, max]</th><th>target: "
               "median; windows above, below that range</th><th>rule broken (confidence on the "
               "baselines &#8594; on the target)</th></tr>\n");
    for (size_t i = 0; i < rf->nflagged; i++)
        report_regress_row(f, r, i);
    fprintf(f, "</table>\n");
    for (size_t i = 0; i < rf->nflagged; i++) {
        if (rf->flagged[i].target_values)
            report_regress_chart(f, (*next_id)++, rf, &rf->flagged[i]);
        else {
            fprintf(f, "<p class=\"note\">");
            report_escape(f, rf->flagged[i].counter);
            fprintf(f, ": no per-window values in this file (regress.json before 1.1): run "
                       "<code>preplay regress</code> again for its chart.</p>\n");
        }
    }
}

int report_regress_write(FILE *f, int *next_id, const struct compare_regress *r, size_t n)
{
    fprintf(f, "<h2 id=\"why\">Why is this type slower?</h2>\n<p>Each file is from <code>preplay "
               "regress</code>: association rules among the counters of the baseline runs' "
               "windows (CPU, run queue, disk, network, locks, the database, each label's "
               "throughput and response times), their confidence on the target run, and the "
               "counters of the rules that broke, by <b>severity</b> (the share of the target's "
               "windows that violate them; Foo's thesis, ch. 5-6). Each flagged counter's chart "
               "shows the target's windows against the baselines' range (min to max) and usual "
               "level (3 levels: median &#177; one standard deviation); the marked windows violate "
               "a rule. Rules are correlations, not causes: a counter is named when it left the "
               "company it keeps on the baselines.</p>\n");
    for (size_t i = 0; i < n; i++)
        report_regress_file(f, next_id, &r[i]);
    return ferror(f) ? -1 : 0;
}
