/* report_time.c - "Where the time goes" (report_time.h). The front end's
 * wait for nested components (the results' call_s) is shown as the tier it
 * waited for, never as "network"; with the plan, a front-end label's wait
 * is split over the tiers it called in the proportions recorded, and each
 * inner tier's time per block is attributed to the front-end labels its
 * blocks served (the plan's calls). Only arithmetic on loaded numbers:
 * never reads files; every label is escaped. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report_plan.h"
#include "report_svg.h"
#include "report_time.h"

#define REPORT_TIME_MAXTIERS 3 /* named tier segments; more are summed as "other tiers" */
#define REPORT_TIME_NSEG (COMPARE_NRES + REPORT_TIME_MAXTIERS + 1)

struct report_time {
    FILE *f;
    const struct compare_run *runs;
    size_t nruns;
    const struct compare_recording *rec;
    const struct report_plan_facts *facts; /* NULL without a plan */
    const struct compare_verdict *v;
    const char *fronts[64]; /* front-end component names */
    size_t nfronts;
    const char *tiers[REPORT_TIME_MAXTIERS + 1]; /* inner components, in first-seen order */
    size_t ntiers;                               /* named (<= REPORT_TIME_MAXTIERS) */
    int other_tiers;                             /* more inner components than named */
    char seg_names[REPORT_TIME_NSEG][80];
    size_t nseg;
};

static int report_time_in(const char *const *set, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(set[i], name))
            return 1;
    return 0;
}

static int report_time_is_label(const struct compare_verdict *v, const char *name)
{
    return report_time_in((const char *const *)v->labels, v->nlabels, name);
}

/* Front ends: the plan's, else components whose blocks carry the response
 * labels; inner tiers: every other component. */
static void report_time_components(struct report_time *t)
{
    if (t->facts)
        for (size_t c = 0; c < t->facts->ncomponents && t->nfronts < 64; c++)
            if (t->facts->components[c].frontend)
                t->fronts[t->nfronts++] = t->facts->components[c].name;
    for (size_t i = 0; i < t->nruns && !t->facts; i++)
        for (size_t k = 0; k < t->runs[i].nresources && t->nfronts < 64; k++) {
            const struct compare_resources *r = &t->runs[i].resources[k];
            if (r->component && report_time_is_label(t->v, r->label) &&
                !report_time_in(t->fronts, t->nfronts, r->component))
                t->fronts[t->nfronts++] = r->component;
        }
    for (size_t i = 0; i < t->nruns; i++)
        for (size_t k = 0; k < t->runs[i].nresources; k++) {
            const char *c = t->runs[i].resources[k].component;
            if (!c || report_time_in(t->fronts, t->nfronts, c) ||
                report_time_in(t->tiers, t->ntiers, c))
                continue;
            if (t->ntiers < REPORT_TIME_MAXTIERS)
                t->tiers[t->ntiers++] = c;
            else
                t->other_tiers = 1;
        }
    t->nseg = 0;
    for (int k = 0; k < COMPARE_NRES; k++)
        snprintf(t->seg_names[t->nseg++], sizeof t->seg_names[0], "%s%s", compare_resource_names[k],
                 k == COMPARE_RES_NET ? " (transfer, untraced peers)" : "");
    for (size_t j = 0; j < t->ntiers; j++)
        snprintf(t->seg_names[t->nseg++], sizeof t->seg_names[0], "waiting for %s", t->tiers[j]);
    if (t->other_tiers || !t->ntiers)
        snprintf(t->seg_names[t->nseg++], sizeof t->seg_names[0], "waiting for %s",
                 t->ntiers ? "other tiers" : "nested components");
}

/* Splits a front-end label's wait over the tier segments: the recorded
 * calls' proportions with the plan, else all to the only tier. */
static void report_time_split_wait(const struct report_time *t, size_t rl, double wait, double *seg)
{
    double share[REPORT_TIME_MAXTIERS + 1] = {0}, sum = 0;
    const struct report_plan_facts *f = t->facts;
    for (size_t c = 0; f && rl < f->nlabels && c < f->ncomponents; c++) {
        double s = f->call_s[rl * f->ncomponents + c];
        size_t j = 0;
        while (j < t->ntiers && strcmp(t->tiers[j], f->components[c].name))
            j++;
        share[j] += s; /* j == ntiers: other tiers */
        sum += s;
    }
    if (!(sum > 0)) {
        memset(share, 0, sizeof share);
        share[t->ntiers == 1 && !t->other_tiers ? 0 : t->ntiers] = sum = 1;
    }
    for (size_t j = 0; j <= t->ntiers && COMPARE_NRES + j < t->nseg; j++)
        seg[COMPARE_NRES + j] += wait * share[j] / sum;
}

/* A run's segments (ms per front-end request) for one label; 0 when the
 * run has no front-end time for it. */
static int report_time_run_bar(const struct report_time *t, const struct compare_run *r,
                               const char *label, double *seg)
{
    int any = 0;
    memset(seg, 0, REPORT_TIME_NSEG * sizeof *seg);
    size_t rl = t->rec ? compare_recording_label(t->rec, label) : (size_t)-1;
    for (size_t k = 0; k < r->nresources; k++) {
        const struct compare_resources *g = &r->resources[k];
        if (!g->component || !report_time_in(t->fronts, t->nfronts, g->component) ||
            strcmp(g->label, label))
            continue;
        any = 1;
        for (int q = 0; q < COMPARE_NRES; q++)
            seg[q] += g->s[q] * 1e3;
        seg[COMPARE_RES_NET] -= g->call_s * 1e3;
        report_time_split_wait(t, rl, g->call_s * 1e3, seg);
    }
    return any;
}

/* The recording's segments for one label, from the plan (ms per request). */
static int report_time_recorded_bar(const struct report_time *t, const char *label, double *seg)
{
    memset(seg, 0, REPORT_TIME_NSEG * sizeof *seg);
    size_t rl = t->rec ? compare_recording_label(t->rec, label) : (size_t)-1;
    if (!t->facts || rl == (size_t)-1 || !t->rec->nrecorded[rl])
        return 0;
    double n = (double)t->rec->nrecorded[rl];
    for (int q = 0; q < REPORT_PLAN_NKINDS && q < COMPARE_NRES; q++)
        seg[q] = t->facts->front_s[rl * REPORT_PLAN_NKINDS + (size_t)q] / n * 1e3;
    double wait = 0;
    for (size_t c = 0; c < t->facts->ncomponents; c++)
        wait += t->facts->call_s[rl * t->facts->ncomponents + c];
    report_time_split_wait(t, rl, wait / n * 1e3, seg);
    return 1;
}

static void report_time_bar(const struct report_time *t, struct report_chart *c, double bx,
                            double bw, const double *seg, const char *who)
{
    FILE *f = t->f;
    double acc = 0;
    for (size_t k = 0; k < t->nseg; k++) {
        if (!(seg[k] > 0))
            continue;
        char fill[64];
        report_fill(c, report_style(k), fill, sizeof fill);
        double y0 = report_chart_y(c, acc), y1 = report_chart_y(c, acc + seg[k]);
        fprintf(f,
                "<path d=\"M%.1f,%.1f V%.1f H%.1f V%.1f Z\" fill=\"%s\" stroke=\"#000\" "
                "stroke-width=\"0.5\"><title>",
                bx, y0, y1, bx + bw * 0.9, y0, fill);
        report_escape(f, who);
        fprintf(f, " ");
        report_escape(f, t->seg_names[k]);
        fprintf(f, ": %.4g ms</title></path>\n", seg[k]);
        acc += seg[k];
    }
}

static double report_time_sum(const double *seg)
{
    double s = 0;
    for (size_t k = 0; k < REPORT_TIME_NSEG; k++)
        s += seg[k];
    return s;
}

/* The chart: a group per front-end label, a bar per type (numbered) and
 * one for the recording ("rec"). */
static void report_time_chart(struct report_time *t, int id)
{
    size_t nl = t->v->nlabels, nb = t->nruns + (t->facts ? 1 : 0);
    double seg[REPORT_TIME_NSEG], ymax = 0;
    for (size_t l = 0; l < nl; l++) {
        for (size_t i = 0; i < t->nruns; i++)
            if (report_time_run_bar(t, &t->runs[i], t->v->labels[l], seg))
                ymax = fmax(ymax, report_time_sum(seg));
        if (report_time_recorded_bar(t, t->v->labels[l], seg))
            ymax = fmax(ymax, report_time_sum(seg));
    }
    struct report_chart c;
    report_chart_begin_categories(
        &c, t->f, id, "Time per front-end request, per label and instance type",
        "front-end request label (bars numbered by instance type, "
        "rec = recording; see below)",
        "time per request (ms)", (const char *const *)t->v->labels, nl, 12, 0, ymax * 1.45);
    double gw = (c.right - c.left) / (double)(nl ? nl : 1), bw = gw * 0.8 / (double)nb;
    for (size_t l = 0; l < nl; l++) {
        double gx = c.left + gw * (double)l + gw * 0.1;
        for (size_t i = 0; i < nb; i++) {
            int is_rec = i == t->nruns;
            if (!(is_rec ? report_time_recorded_bar(t, t->v->labels[l], seg)
                         : report_time_run_bar(t, &t->runs[i], t->v->labels[l], seg)))
                continue;
            double bx = gx + bw * (double)i;
            report_time_bar(t, &c, bx, bw, seg, is_rec ? "recorded" : t->runs[i].instance);
            fprintf(t->f,
                    "<text x=\"%.1f\" y=\"%.1f\" font-size=\"9\" "
                    "text-anchor=\"middle\">",
                    bx + bw * 0.45, c.bottom + 10);
            if (is_rec)
                fprintf(t->f, "rec</text>\n");
            else
                fprintf(t->f, "%zu</text>\n", i + 1);
        }
        report_chart_category(&c, l, t->v->labels[l]);
    }
    const char *names[REPORT_TIME_NSEG];
    const struct report_style *styles[REPORT_TIME_NSEG];
    char kinds[REPORT_TIME_NSEG + 1] = "";
    for (size_t k = 0; k < t->nseg; k++) {
        names[k] = t->seg_names[k];
        styles[k] = report_style(k);
        kinds[k] = 'b';
    }
    report_chart_legend(&c, names, styles, kinds, t->nseg);
    report_chart_end(&c);
}

static const struct compare_resources *report_time_find(const struct compare_run *r,
                                                        const char *component, const char *label)
{
    for (size_t k = 0; k < r->nresources; k++)
        if (r->resources[k].component && !strcmp(r->resources[k].component, component) &&
            !strcmp(r->resources[k].label, label))
            return &r->resources[k];
    return NULL;
}

static void report_time_row(FILE *f, const char *label, const char *tier, const char *who,
                            const double *ms, int baseline)
{
    double sum = 0;
    fprintf(f, "<tr%s><td>", baseline ? " class=\"recorded\"" : "");
    report_escape(f, label);
    fprintf(f, "</td><td>");
    report_escape(f, tier);
    fprintf(f, "</td><td>");
    report_escape(f, who);
    fprintf(f, "</td>");
    if (!ms) {
        fprintf(f, "<td colspan=\"6\">no time of these blocks in the results</td></tr>\n");
        return;
    }
    for (int k = 0; k < COMPARE_NRES; k++) {
        fprintf(f, "<td>%.3g</td>", ms[k]);
        sum += ms[k];
    }
    fprintf(f, "<td>%.3g</td></tr>\n", sum);
}

/* With the plan: per front-end label and inner tier, the tier's time per
 * front-end request, recorded and on each type. */
static void report_time_tiers_attributed(const struct report_time *t)
{
    const struct report_plan_facts *fa = t->facts;
    for (size_t l = 0; l < t->v->nlabels; l++) {
        size_t rl = compare_recording_label(t->rec, t->v->labels[l]);
        if (rl == (size_t)-1 || !t->rec->nrecorded[rl])
            continue;
        double n = (double)t->rec->nrecorded[rl];
        for (size_t c = 0; c < fa->ncomponents; c++) {
            double ms[COMPARE_NRES] = {0};
            int any = 0;
            for (size_t e = 0; e < fa->ntiers; e++)
                if (fa->tiers[e].label == rl && fa->tiers[e].component == c) {
                    any = 1;
                    for (int k = 0; k < REPORT_PLAN_NKINDS && k < COMPARE_NRES; k++)
                        ms[k] += fa->tiers[e].recorded_s[k] / n * 1e3;
                }
            if (!any)
                continue;
            report_time_row(t->f, t->v->labels[l], fa->components[c].name, "recorded", ms, 1);
            for (size_t i = 0; i < t->nruns; i++) {
                memset(ms, 0, sizeof ms);
                int found = 0;
                for (size_t e = 0; e < fa->ntiers; e++) {
                    const struct compare_resources *g =
                        fa->tiers[e].label == rl && fa->tiers[e].component == c
                            ? report_time_find(&t->runs[i], fa->components[c].name,
                                               fa->tiers[e].inner_label)
                            : NULL;
                    found |= g != NULL;
                    for (int k = 0; g && k < COMPARE_NRES; k++)
                        ms[k] += (double)fa->tiers[e].blocks / n * g->s[k] * 1e3;
                }
                report_time_row(t->f, t->v->labels[l], fa->components[c].name, t->runs[i].instance,
                                found ? ms : NULL, 0);
            }
        }
    }
}

/* Without the plan: the inner tiers' time per block of their own labels. */
static void report_time_tiers_unattributed(const struct report_time *t)
{
    for (size_t i = 0; i < t->nruns; i++)
        for (size_t k = 0; k < t->runs[i].nresources; k++) {
            const struct compare_resources *g = &t->runs[i].resources[k];
            if (!g->component || report_time_in(t->fronts, t->nfronts, g->component))
                continue;
            double ms[COMPARE_NRES];
            for (int q = 0; q < COMPARE_NRES; q++)
                ms[q] = g->s[q] * 1e3;
            report_time_row(t->f, g->label[0] ? g->label : "(all its blocks)", g->component,
                            t->runs[i].instance, ms, 0);
        }
}

int report_time_write(FILE *f, int *next_id, const struct compare_run *runs, size_t nruns,
                      const struct compare_recording *rec, const struct compare_verdict *v)
{
    struct report_time t = {.f = f, .runs = runs, .nruns = nruns, .rec = rec, .v = v};
    t.facts = rec ? rec->facts : NULL;
    size_t ng = 0;
    for (size_t i = 0; i < nruns; i++)
        ng += runs[i].nresources;
    if (!ng) {
        fprintf(f, "<p class=\"note\">The results files carry no per-resource time, so this "
                   "chart is left out (results of `preplay run` include it).</p>\n");
        return 0;
    }
    report_time_components(&t);
    report_time_chart(&t, (*next_id)++);
    fprintf(f, "<p class=\"note\">Bars in each group, left to right: ");
    for (size_t i = 0; i < nruns; i++) {
        fprintf(f, "%s%zu = ", i ? ", " : "", i + 1);
        report_escape(f, runs[i].instance);
    }
    fprintf(f, "%s. Front end: ",
            t.facts ? ", rec = the recording (the plan's recorded op "
                      "times, server side)"
                    : "");
    for (size_t i = 0; i < t.nfronts; i++) {
        fprintf(f, "%s", i ? ", " : "");
        report_escape(f, t.fronts[i]);
    }
    fprintf(f, "%s.</p>\n", t.nfronts ? "" : "none found");
    fprintf(f,
            "<h3>Inner tiers, per front-end request</h3>\n<p>%s</p>\n<table class=\"tiers\">"
            "<tr><th>front-end label</th><th>tier</th><th>measured</th><th>CPU</th>"
            "<th>file</th><th>network</th><th>lock</th><th>DB</th><th>total (ms)</th></tr>\n",
            t.facts ? "Milliseconds of each inner tier's work per front-end request of the label, "
                      "attributed through the plan's calls: the tier's blocks that served the "
                      "label, times their mean time per block on each type."
                    : "Milliseconds per block of the inner tier's own labels: run compare with "
                      "--plan to attribute them to the front-end labels they served.");
    if (t.facts)
        report_time_tiers_attributed(&t);
    else
        report_time_tiers_unattributed(&t);
    fprintf(f, "</table>\n");
    return 0;
}
