/* compare_regress.c - the regress files (`preplay regress`,
 * formats/REGRESS.md) that `preplay compare` was given: "why is this type
 * slower?" as text and JSON. Per file, the flagged counters by severity
 * with their direction, the baselines' range (min, median, max and the
 * usual level's bounds) against the target's windows (how many were
 * measured, above the range, below it) and the rule each broke. Only
 * formatting and counting: every number comes from the file through
 * regress_file_read (formats/), which validated it; nothing here
 * recomputes a level, a rule or a severity. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"

/* The most changed flagged rule whose consequent is counter (the file
 * keeps rules most changed first), or NULL. */
static const struct regress_file_rule *compare_regress_rule(const struct regress_file *rf,
                                                            const char *counter)
{
    for (size_t i = 0; i < rf->nrules; i++)
        if (rf->rules[i].flagged && !strcmp(rf->rules[i].consequent.counter, counter))
            return &rf->rules[i];
    return NULL;
}

int compare_regress_load_json(const json_t *root, const char *path, struct compare_regress *r,
                              char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    if (regress_file_read_json(root, path, &r->rf, err, errlen))
        return -1;
    r->path = strdup(path);
    r->rule = calloc(r->rf.nflagged + 1, sizeof *r->rule);
    if (!r->path || !r->rule) {
        compare_regress_free(r);
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    for (size_t i = 0; i < r->rf.nflagged; i++)
        r->rule[i] = compare_regress_rule(&r->rf, r->rf.flagged[i].counter);
    return 0;
}

void compare_regress_free(struct compare_regress *r)
{
    free(r->path);
    free(r->rule);
    regress_file_free(&r->rf);
    memset(r, 0, sizeof *r);
}

static int compare_regress_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void compare_regress_range(const struct regress_file_flag *f, struct compare_regress_range *r)
{
    memset(r, 0, sizeof *r);
    r->target_median = NAN;
    const struct regress_file_level *l = f->level;
    if (!f->target_values || isnan(l->min))
        return;
    size_t n = 0, nw = f->nvalues;
    double *v = malloc((nw + 1) * sizeof *v);
    for (size_t i = 0; i < nw; i++) {
        double x = f->target_values[i];
        if (isnan(x))
            continue;
        r->above += x > l->max;
        r->below += x < l->min;
        if (v)
            v[n] = x;
        n++;
    }
    r->measured = n;
    if (v && n) {
        qsort(v, n, sizeof *v, compare_regress_cmp);
        r->target_median =
            n % 2 ? v[n / 2]
                  : v[n / 2 - 1] + (v[n / 2] - v[n / 2 - 1]) / 2; /* sorted: never past 1e308 */
    }
    free(v);
}

/* "local (base.json)", or the path alone when the file names no instance. */
static void compare_regress_input(FILE *out, const struct regress_file_input *in)
{
    if (in->instance && *in->instance)
        fprintf(out, "%s (%s)", in->instance, in->path);
    else
        fprintf(out, "%s", in->path);
}

/* "a=high, b=medium -> c=medium" */
static void compare_regress_rule_text(FILE *out, const struct regress_file_rule *r)
{
    for (size_t k = 0; k < r->npremise; k++)
        fprintf(out, "%s%s=%s", k ? ", " : "", r->premise[k].counter, r->premise[k].level);
    fprintf(out, " -> %s=%s", r->consequent.counter, r->consequent.level);
}

static size_t compare_regress_changed(const struct regress_file *rf)
{
    size_t n = 0;
    for (size_t i = 0; i < rf->nrules; i++)
        n += (size_t)rf->rules[i].flagged;
    return n;
}

/* The three lines under a flagged counter's row. */
static void compare_regress_detail(FILE *out, const struct compare_regress *r, size_t i)
{
    const struct regress_file_flag *f = &r->rf.flagged[i];
    const struct regress_file_level *l = f->level;
    struct compare_regress_range g;
    compare_regress_range(f, &g);
    if (isnan(l->min))
        fprintf(out, "          baselines: no range in this file (regress.json before 1.1, or "
                     "never measured)");
    else
        fprintf(out, "          baselines: median %.4g, range [%.4g, %.4g]", l->median, l->min,
                l->max);
    if (!r->rf.equal_width && !isnan(l->low))
        fprintf(out, ", medium [%.4g, %.4g]", l->low, l->high);
    fprintf(out, "\n          target:    ");
    if (!f->target_values)
        fprintf(out, "no per-window values (regress.json before 1.1)\n");
    else if (!g.measured)
        fprintf(out, "never measured\n");
    else if (isnan(l->min))
        fprintf(out, "median %.4g over %zu measured windows\n", g.target_median, g.measured);
    else
        fprintf(out, "median %.4g; %zu of %zu windows above the range, %zu below\n",
                g.target_median, g.above, g.measured, g.below);
    const struct regress_file_rule *rule = r->rule[i];
    if (!rule) {
        fprintf(out, "          rule broken: not among the %zu rules written (--max-rules)\n",
                r->rf.nrules);
        return;
    }
    fprintf(out, "          rule broken: ");
    compare_regress_rule_text(out, rule);
    fprintf(out, ": confidence %.2f on the baselines, %.2f on the target\n",
            rule->baseline_confidence, rule->target_confidence);
}

void compare_regress_print(FILE *out, const struct compare_regress *r, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const struct regress_file *rf = &r[i].rf;
        fprintf(out, "Why is this type slower? %s: target ", r[i].path);
        compare_regress_input(out, &rf->target);
        fprintf(out, ", %zu windows of %g s, against ", rf->target.windows, rf->window_s);
        for (size_t b = 0; b < rf->nbaselines; b++) {
            fprintf(out, "%s", b ? ", " : "");
            compare_regress_input(out, &rf->baselines[b]);
        }
        fprintf(out, "; %s, %s levels; %llu rules", regress_file_method_name(rf->method),
                rf->equal_width ? "equal-width" : "3", (unsigned long long)rf->rules_total);
        if (rf->rules_total > rf->nrules)
            fprintf(out, " (%zu written)", rf->nrules);
        fprintf(out, ", %zu %s changed on the target\n", compare_regress_changed(rf),
                rf->rules_total > rf->nrules ? "of those" : "of them");
        if (rf->nflagged)
            fprintf(out, "%-8s  %-9s  %-10s  %s\n", "severity", "direction", "windows", "counter");
        for (size_t k = 0; k < rf->nflagged; k++) {
            const struct regress_file_flag *f = &rf->flagged[k];
            char w[32];
            snprintf(w, sizeof w, "%zu of %zu", f->nviolating, rf->target.windows);
            fprintf(out, "%8.2f  %-9s  %-10s  %s\n", f->severity, f->direction, w, f->counter);
            compare_regress_detail(out, &r[i], k);
        }
        fprintf(out, "=> ");
        if (!rf->nflagged)
            fprintf(out, "no counter flagged: the target's counters keep the company they keep "
                         "on the baselines\n");
        else {
            fprintf(out, "the target differs from its baselines in %zu counter%s:", rf->nflagged,
                    rf->nflagged == 1 ? "" : "s");
            for (size_t k = 0; k < rf->nflagged; k++)
                fprintf(out, "%s %s (%s)", k ? "," : "", rf->flagged[k].counter,
                        rf->flagged[k].direction);
            fprintf(out, "\n");
        }
        if (i + 1 < n)
            fprintf(out, "\n");
    }
}

static json_t *compare_regress_num(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

static json_t *compare_regress_input_json(const struct regress_file_input *in, int weight)
{
    json_t *o = json_pack("{s:s, s:o, s:I}", "path", in->path, "instance",
                          in->instance ? json_string(in->instance) : json_null(), "windows",
                          (json_int_t)in->windows);
    if (o && weight)
        json_object_set_new(o, "weight", compare_regress_num(in->weight));
    return o;
}

static json_t *compare_regress_item_json(const struct regress_file_item *it)
{
    return json_pack("{s:s, s:s}", "counter", it->counter, "level", it->level);
}

static json_t *compare_regress_rule_json(const struct regress_file_rule *r)
{
    if (!r)
        return json_null();
    json_t *prem = json_array();
    for (size_t k = 0; prem && k < r->npremise; k++)
        json_array_append_new(prem, compare_regress_item_json(&r->premise[k]));
    return json_pack("{s:o, s:o, s:f, s:f, s:f, s:f}", "premise", prem, "consequent",
                     compare_regress_item_json(&r->consequent), "baseline_confidence",
                     r->baseline_confidence, "target_confidence", r->target_confidence, "change",
                     r->change, "p", r->p);
}

static json_t *compare_regress_flag_json(const struct compare_regress *r, size_t i)
{
    const struct regress_file_flag *f = &r->rf.flagged[i];
    const struct regress_file_level *l = f->level;
    struct compare_regress_range g;
    compare_regress_range(f, &g);
    json_t *viol = json_array(), *values = f->target_values ? json_array() : json_null();
    for (size_t k = 0; viol && k < f->nviolating; k++)
        json_array_append_new(viol, json_integer((json_int_t)f->violating[k]));
    for (size_t k = 0; values && f->target_values && k < f->nvalues; k++)
        json_array_append_new(values, compare_regress_num(f->target_values[k]));
    json_t *base =
        json_pack("{s:o, s:o, s:o, s:o, s:o}", "min", compare_regress_num(l->min), "median",
                  compare_regress_num(l->median), "max", compare_regress_num(l->max), "low",
                  compare_regress_num(l->low), "high", compare_regress_num(l->high));
    if (base && r->rf.equal_width)
        json_object_set_new(base, "bins", json_integer(l->bins));
    json_t *target =
        json_pack("{s:o, s:I, s:I, s:I, s:o}", "median", compare_regress_num(g.target_median),
                  "measured", (json_int_t)g.measured, "above", (json_int_t)g.above, "below",
                  (json_int_t)g.below, "values", values);
    return json_pack("{s:s, s:f, s:s, s:I, s:f, s:o, s:o, s:o, s:o, s:o}", "counter", f->counter,
                     "severity", f->severity, "direction", f->direction, "votes",
                     (json_int_t)f->votes, "weight", f->weight, "shift_p",
                     compare_regress_num(f->shift_p), "violating_windows", viol, "baseline", base,
                     "target", target, "rule", compare_regress_rule_json(r->rule[i]));
}

json_t *compare_regress_json(const struct compare_regress *r, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++) {
        const struct regress_file *rf = &r[i].rf;
        json_t *bases = json_array(), *flags = json_array();
        for (size_t b = 0; bases && b < rf->nbaselines; b++)
            json_array_append_new(bases, compare_regress_input_json(&rf->baselines[b], 1));
        for (size_t k = 0; flags && k < rf->nflagged; k++)
            json_array_append_new(flags, compare_regress_flag_json(&r[i], k));
        json_array_append_new(
            a,
            json_pack("{s:s, s:o, s:o, s:s, s:s, s:f, s:I, s:I, s:I, s:o}", "file", r[i].path,
                      "target", compare_regress_input_json(&rf->target, 0), "baselines", bases,
                      "method", regress_file_method_name(rf->method), "discretization",
                      rf->equal_width ? "ew" : "3level", "window_s", rf->window_s, "rules_total",
                      (json_int_t)rf->rules_total, "rules_written", (json_int_t)rf->nrules,
                      "rules_changed", (json_int_t)compare_regress_changed(rf), "flagged", flags));
    }
    return a;
}
