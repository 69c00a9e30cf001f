/* compare_duet.c - the duet files (`preplay duet`, formats/DUET.md) that
 * `preplay compare` was given (compare_input_load, compare_load.c, tells
 * them from results by their "format"): matching each A/B file to the A/A file of its
 * recording (the A/A interval width is the context of its verdicts), and
 * the text and JSON outputs: per label and overall B/A (gms) with its
 * interval, equal / slower / faster, runs x iterations. Only formatting:
 * every number comes from the file through duet_read (formats/), which
 * validated it; nothing here recomputes an interval or a verdict. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "duet_reader.h"
#include "results_reader.h"

void compare_duet_free(struct compare_duet *d)
{
    free(d->path);
    duet_file_free(&d->df);
    memset(d, 0, sizeof *d);
}

int compare_duet_match(struct compare_duet *d, size_t n, char *err, size_t errlen)
{
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            if (d[i].df.aa && d[j].df.aa && !strcmp(d[i].df.recording_a, d[j].df.recording_a)) {
                snprintf(err, errlen,
                         "%s and %s are both A/A runs of recording %s: give one (it is the "
                         "context of the A/B verdicts)",
                         d[i].path, d[j].path, d[i].df.recording_a);
                return -1;
            }
    for (size_t i = 0; i < n; i++) {
        d[i].aa = NULL;
        for (int side = 0; !d[i].df.aa && side < 2 && !d[i].aa; side++)
            for (size_t j = 0; j < n; j++)
                if (d[j].df.aa &&
                    !strcmp(d[j].df.recording_a, side ? d[i].df.recording_b : d[i].df.recording_a))
                    d[i].aa = &d[j];
    }
    return 0;
}

const struct duet_metric_read *compare_duet_aa_metric(const struct compare_duet *d,
                                                      const char *label)
{
    if (!d->aa)
        return NULL;
    if (!label)
        return d->aa->df.overall.present ? &d->aa->df.overall : NULL;
    const struct duet_label_read *l = duet_file_label(&d->aa->df, label);
    return l && l->m.present ? &l->m : NULL;
}

/* One row: label, B/A, interval, width, verdict, ratios (runs x it.), A/A width. */
static void compare_duet_row(FILE *out, const struct compare_duet *d, const char *name,
                             const struct duet_metric_read *m, const struct duet_metric_read *aa)
{
    if (!m->present) {
        fprintf(out, "%-24s  skipped: %s\n", name, m->skipped);
        return;
    }
    char ratios[64], aaw[32] = "-";
    long full = d->df.runs * d->df.iterations;
    if (m->iterations == full)
        snprintf(ratios, sizeof ratios, "%ld (%ld x %ld)", m->iterations, d->df.runs,
                 d->df.iterations);
    else
        snprintf(ratios, sizeof ratios, "%ld of %ld x %ld", m->iterations, d->df.runs,
                 d->df.iterations);
    if (aa)
        snprintf(aaw, sizeof aaw, "%.2f%%", aa->ci_width * 100);
    fprintf(out, "%-24s %7.4f  [%.4f, %.4f] %6.2f%%  %-7s  ", name, m->gms, m->ci_low, m->ci_high,
            m->ci_width * 100, duet_verdict(m));
    if (d->df.aa) /* no A/A context column: no padding at the end */
        fprintf(out, "%s\n", ratios);
    else
        fprintf(out, "%-19s  %s\n", ratios, aaw);
}

/* The line that ends a file's block. */
static void compare_duet_verdict_line(FILE *out, const struct compare_duet *d)
{
    const struct duet_metric_read *o = &d->df.overall;
    size_t count[3] = {0, 0, 0}; /* equal, slower, faster */
    for (size_t l = 0; l < d->df.nlabels; l++) {
        const char *v = duet_verdict(&d->df.labels[l].m);
        if (v)
            count[v[0] == 'e' ? 0 : v[0] == 's' ? 1 : 2]++;
    }
    double pct = d->df.confidence * 100;
    if (!o->present) {
        fprintf(out, "=> no overall ratio: %s\n", o->skipped);
        return;
    }
    const char *v = duet_verdict(o);
    if (d->df.aa) {
        fprintf(out,
                "=> A/A: %s: B/A %.4f, %g%% interval [%.4f, %.4f] %s 1; its width %.2f%% is what "
                "this machine cannot tell apart%s\n",
                o->equal ? "equal, as A against itself should be"
                         : "NOT equal although both sides "
                           "ran A",
                o->gms, pct, o->ci_low, o->ci_high, o->equal ? "contains" : "excludes",
                o->ci_width * 100,
                o->equal ? ""
                         : " (the two sides were not treated alike: A/B verdicts here are "
                           "suspect)");
        return;
    }
    const struct duet_metric_read *aa = compare_duet_aa_metric(d, NULL);
    char ctx[96] = "";
    if (aa)
        snprintf(ctx, sizeof ctx, "; A/A width %.2f%%", aa->ci_width * 100);
    if (o->equal)
        fprintf(out, "=> B and A are equal: B/A %.4f, %g%% interval [%.4f, %.4f] contains 1%s",
                o->gms, pct, o->ci_low, o->ci_high, ctx);
    else
        fprintf(out, "=> B is %s than A: B/A %.4f, %g%% interval [%.4f, %.4f] %s 1%s", v, o->gms,
                pct, o->ci_low, o->ci_high, o->gms > 1 ? "above" : "below", ctx);
    fprintf(out, " (labels: %zu slower, %zu equal, %zu faster)\n", count[1], count[0], count[2]);
}

void compare_duet_print(FILE *out, const struct compare_duet *d, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const struct duet_file *df = &d[i].df;
        if (df->aa)
            fprintf(out, "Versions (duet): %s: A/A, %s against itself", d[i].path, df->plan_a);
        else
            fprintf(out, "Versions (duet): %s: B = %s against A = %s", d[i].path, df->plan_b,
                    df->plan_a);
        fprintf(out,
                " (recording %s%s%s), %s, %ld runs x %ld iterations, %s per iteration, %g%% "
                "intervals",
                df->recording_a, df->same_recording ? "" : " and ",
                df->same_recording ? "" : df->recording_b, df->sequential ? "sequential" : "duet",
                df->runs, df->iterations, df->median ? "median" : "mean", df->confidence * 100);
        if (d[i].aa)
            fprintf(out, "; A/A context: %s (%s)", d[i].aa->path,
                    d[i].aa->df.sequential ? "sequential" : "duet");
        fprintf(out, "\n");
        if (df->failed_a || df->failed_b)
            fprintf(out, "FAILED requests: %llu in A, %llu in B (left out of the ratios)\n",
                    (unsigned long long)df->failed_a, (unsigned long long)df->failed_b);
        fprintf(out, "%-24s %7s  %-18s %7s  %-7s  %-19s%s\n", "label", "B/A", "interval", "width",
                "verdict", "ratios (runs x it.)", df->aa ? "" : "  A/A width");
        compare_duet_row(out, &d[i], "(overall)", &df->overall,
                         compare_duet_aa_metric(&d[i], NULL));
        for (size_t l = 0; l < df->nlabels; l++)
            compare_duet_row(out, &d[i], df->labels[l].name, &df->labels[l].m,
                             compare_duet_aa_metric(&d[i], df->labels[l].name));
        for (size_t l = 0; l < df->nskipped; l++)
            fprintf(out, "%-24s  skipped: %s\n", df->skipped[l].name, df->skipped[l].why);
        compare_duet_verdict_line(out, &d[i]);
        if (i + 1 < n)
            fprintf(out, "\n");
    }
}

static json_t *compare_duet_json_metric(const struct duet_metric_read *m,
                                        const struct duet_metric_read *aa)
{
    if (!m->present)
        return json_pack("{s:s}", "skipped", m->skipped);
    return json_pack("{s:f, s:f, s:f, s:f, s:s, s:I, s:I, s:o}", "gms", m->gms, "ci_low", m->ci_low,
                     "ci_high", m->ci_high, "ci_width", m->ci_width, "verdict", duet_verdict(m),
                     "runs", (json_int_t)m->runs, "iterations", (json_int_t)m->iterations,
                     "aa_width", aa ? json_real(aa->ci_width) : json_null());
}

json_t *compare_duet_json(const struct compare_duet *d, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++) {
        const struct duet_file *df = &d[i].df;
        json_t *labels = json_object(), *skipped = json_object();
        for (size_t l = 0; l < df->nlabels; l++)
            json_object_set_new(
                labels, df->labels[l].name,
                compare_duet_json_metric(&df->labels[l].m,
                                         compare_duet_aa_metric(&d[i], df->labels[l].name)));
        for (size_t l = 0; l < df->nskipped; l++)
            json_object_set_new(skipped, df->skipped[l].name, json_string(df->skipped[l].why));
        json_array_append_new(
            a,
            json_pack("{s:s, s:b, s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:f, s:I, s:I, "
                      "s:o, s:o, s:o, s:o}",
                      "file", d[i].path, "aa", df->aa, "plan_a", df->plan_a, "plan_b", df->plan_b,
                      "recording_a", df->recording_a, "recording_b", df->recording_b, "procedure",
                      df->sequential ? "sequential" : "duet", "statistic",
                      df->median ? "median" : "mean", "runs", (json_int_t)df->runs, "iterations",
                      (json_int_t)df->iterations, "confidence", df->confidence, "failed_a",
                      (json_int_t)df->failed_a, "failed_b", (json_int_t)df->failed_b, "aa_file",
                      d[i].aa ? json_string(d[i].aa->path) : json_null(), "overall",
                      compare_duet_json_metric(&df->overall, compare_duet_aa_metric(&d[i], NULL)),
                      "labels", labels, "labels_skipped", skipped));
    }
    return a;
}
