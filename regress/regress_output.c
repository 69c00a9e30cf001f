/* regress_output.c - regress.json (formats/REGRESS.md): the analysis of
 * regress.h as JSON for tools (and the summary `preplay regress` prints).
 * The only writer of the format; keys in the order REGRESS.md lists them.
 * Never computes anything: every number comes from regress_result. */
#include "regress_output.h"

#include <math.h>
#include <stdio.h>

static json_t *regress_num(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

/* A string, or null when there is none (an instance `run` was not given
 * is "" in the results). */
static json_t *regress_str(const char *s)
{
    return s && *s ? json_string(s) : json_null();
}

static json_t *regress_item_json(const struct regress_table *t, const struct regress_result *res,
                                 const struct regress_item *it)
{
    char buf[96];
    return json_pack("{s:s, s:s}", "counter", t->names[it->counter], "level",
                     regress_level_name(&res->bins[it->counter], it->level, buf, sizeof buf));
}

static json_t *regress_rule_json(const struct regress_table *t, const struct regress_result *res,
                                 const struct regress_rule_result *r)
{
    json_t *prem = json_array();
    for (int i = 0; prem && i < r->rule.npremise; i++)
        json_array_append_new(prem, regress_item_json(t, res, &r->rule.premise[i]));
    return json_pack("{s:i, s:o, s:o, s:f, s:f, s:o, s:o, s:o, s:b}", "model", r->model, "premise",
                     prem, "consequent", regress_item_json(t, res, &r->rule.consequent), "support",
                     r->rule.support, "baseline_confidence", r->rule.confidence,
                     "target_confidence", regress_num(r->target_confidence), "change",
                     regress_num(r->change), "p", regress_num(r->p), "flagged", r->flagged);
}

static json_t *regress_flag_json(const struct regress_table *t, const struct regress_flag *f)
{
    const struct regress_test *target = &t->tests[t->ntests - 1];
    json_t *w = json_array(), *values = json_array();
    for (size_t i = 0; w && values && i < target->nwindows; i++) {
        if (f->violating[i])
            json_array_append_new(w, json_integer((json_int_t)i));
        json_array_append_new(values,
                              regress_num(target->values[i * t->ncounters + (size_t)f->counter]));
    }
    return json_pack("{s:s, s:f, s:s, s:i, s:f, s:o, s:i, s:i, s:o, s:o}", "counter",
                     t->names[f->counter], "severity", f->severity, "direction",
                     regress_direction(f), "votes", f->votes, "weight", f->weight, "shift_p",
                     regress_num(f->shift_p), "windows_up", f->up, "windows_down", f->down,
                     "violating_windows", w, "target_values", values);
}

static json_t *regress_levels_json(const struct regress_table *t, const struct regress_result *res)
{
    json_t *o = json_object();
    for (size_t c = 0; o && c < t->ncounters; c++) {
        const struct regress_bins *b = &res->bins[c];
        json_t *e = json_pack("{s:o, s:o, s:o, s:o, s:o}", "low", regress_num(b->lo), "high",
                              regress_num(b->hi), "min", regress_num(b->min), "median",
                              regress_num(b->median), "max", regress_num(b->max));
        if (b->how == REGRESS_EQUAL_WIDTH)
            json_object_set_new(e, "bins", json_integer(b->k));
        json_object_set_new(o, t->names[c], e);
    }
    return o;
}

json_t *regress_output_json(const struct regress_table *t, const struct regress_options *o,
                            const struct regress_result *res, double window_s, size_t max_rules)
{
    static const char *const methods[] = {"single", "bagging", "stacking"};
    size_t nb = t->ntests - 1;
    json_t *root = json_object(), *bases = json_array(), *flags = json_array(),
           *rules = json_array();
    if (!root || !bases || !flags || !rules) {
        json_decref(root);
        json_decref(bases);
        json_decref(flags);
        json_decref(rules);
        return NULL;
    }
    for (size_t i = 0; i < nb; i++)
        json_array_append_new(
            bases,
            json_pack("{s:s, s:o, s:I, s:o}", "path", t->tests[i].name, "instance",
                      regress_str(t->tests[i].env[REGRESS_ENV_INSTANCE]), "windows",
                      (json_int_t)t->tests[i].nwindows, "weight",
                      o->method == REGRESS_SINGLE ? json_null() : json_real(res->weights[i])));
    for (size_t i = 0; i < res->nflags; i++)
        json_array_append_new(flags, regress_flag_json(t, &res->flags[i]));
    for (size_t i = 0; i < res->nrules && i < max_rules; i++)
        json_array_append_new(rules, regress_rule_json(t, res, &res->rules[i]));
    json_object_set_new(root, "format", json_string(REGRESS_FORMAT));
    json_object_set_new(root, "version", json_integer(REGRESS_VERSION));
    json_object_set_new(root, "version_minor", json_integer(REGRESS_VERSION_MINOR));
    json_object_set_new(root, "method", json_string(methods[o->method]));
    json_object_set_new(root, "discretization",
                        json_string(o->discretization == REGRESS_3LEVEL ? "3level" : "ew"));
    json_object_set_new(root, "min_support", json_real(o->min_support));
    json_object_set_new(root, "min_confidence", json_real(o->min_confidence));
    json_object_set_new(root, "min_change", json_real(o->min_change));
    json_object_set_new(root, "max_len", json_integer(o->max_len));
    json_object_set_new(root, "alpha", json_real(o->alpha));
    json_object_set_new(root, "window_s", json_real(window_s));
    json_object_set_new(root, "baselines", bases);
    json_object_set_new(root, "target",
                        json_pack("{s:s, s:o, s:I}", "path", t->tests[nb].name, "instance",
                                  regress_str(t->tests[nb].env[REGRESS_ENV_INSTANCE]), "windows",
                                  (json_int_t)t->tests[nb].nwindows));
    json_object_set_new(root, "levels", regress_levels_json(t, res));
    json_object_set_new(root, "flagged", flags);
    json_object_set_new(root, "rules_total", json_integer((json_int_t)res->nrules));
    json_object_set_new(root, "rules", rules);
    return root;
}

void regress_output_print(FILE *out, const struct regress_table *t,
                          const struct regress_result *res)
{
    size_t nflagged_rules = 0;
    for (size_t i = 0; i < res->nrules; i++)
        nflagged_rules += (size_t)res->rules[i].flagged;
    fprintf(out, "%zu rules from %d model%s, %zu changed on the target; %zu counter%s flagged\n",
            res->nrules, res->nmodels, res->nmodels == 1 ? "" : "s", nflagged_rules, res->nflags,
            res->nflags == 1 ? "" : "s");
    if (res->nflags)
        fprintf(out, "%-8s  %-9s  %-5s  %s\n", "severity", "direction", "votes", "counter");
    for (size_t i = 0; i < res->nflags; i++)
        fprintf(out, "%8.2f  %-9s  %5d  %s\n", res->flags[i].severity,
                regress_direction(&res->flags[i]), res->flags[i].votes,
                t->names[res->flags[i].counter]);
}
