/* regress_detect.c - the analysis of regress.h: levels fitted on the
 * pooled baseline windows (ch. 6.1.2: boundaries from every prior test
 * together), one rule set per model (SINGLE: every baseline pooled, the
 * thesis's ch. 5; BAGGING and STACKING: one per baseline, ch. 6.1.3),
 * each rule's confidence on the target and its change (Eq. 5-1), the
 * counters of the changed rules' consequents flagged per model with the
 * target windows that violate them (the premise holds, the counter is at
 * another level: Eq. 5-4's "flagged values"), then the models combined:
 * a counter is kept when the weights of the models flagging it reach half
 * (bagging: each model 1/n, a majority vote; stacking: environment
 * similarity, Eq. 6-3; the thesis's "> 0.5" for stacking is ">= 0.5" here
 * so that stacking equals bagging when every environment is the same, as
 * the thesis says it does). Must never flag a counter no target window
 * violates. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "regress.h"

static int regress_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

struct regress_ranked {
    double v;
    int second; /* from y */
};

static int regress_cmp_ranked(const void *a, const void *b)
{
    return regress_cmp_double(&((const struct regress_ranked *)a)->v,
                              &((const struct regress_ranked *)b)->v);
}

double regress_rank_sum_p(const double *x, size_t nx, const double *y, size_t ny)
{
    struct regress_ranked *r = malloc((nx + ny + 1) * sizeof *r);
    size_t n1 = 0, n = 0;
    for (size_t i = 0; r && i < nx; i++)
        if (isfinite(x[i])) {
            r[n++] = (struct regress_ranked){x[i], 0};
            n1++;
        }
    for (size_t i = 0; r && i < ny; i++)
        if (isfinite(y[i]))
            r[n++] = (struct regress_ranked){y[i], 1};
    size_t n2 = n - n1;
    if (!r || !n1 || !n2) {
        free(r);
        return NAN;
    }
    qsort(r, n, sizeof *r, regress_cmp_ranked);
    double r1 = 0, ties = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && r[j].v == r[i].v)
            j++;
        double rank = (double)(i + 1 + j) / 2, t = (double)(j - i); /* average of ranks i+1..j */
        for (size_t k = i; k < j; k++)
            r1 += r[k].second ? 0 : rank;
        ties += t * t * t - t;
        i = j;
    }
    free(r);
    double a = (double)n1, b = (double)n2, N = a + b;
    double u = r1 - a * (a + 1) / 2, mu = a * b / 2;
    double var = a * b / 12 * ((N + 1) - ties / (N * (N - 1)));
    if (!(var > 0))
        return 1;
    double z = (fabs(u - mu) - 0.5) / sqrt(var);
    if (z < 0)
        z = 0;
    return erfc(z / sqrt(2));
}

/* Levels of test t's windows (or, pooled, of every baseline's). */
static int regress_levels_of(const struct regress_table *t, const struct regress_bins *bins,
                             size_t first, size_t last, struct regress_levels *lv)
{
    size_t n = 0, nc = t->ncounters;
    for (size_t i = first; i < last; i++)
        n += t->tests[i].nwindows;
    lv->nwindows = n;
    lv->ncounters = nc;
    lv->level = malloc((n * nc + 1) * sizeof *lv->level);
    if (!lv->level)
        return -1;
    size_t row = 0;
    for (size_t i = first; i < last; i++)
        for (size_t w = 0; w < t->tests[i].nwindows; w++, row++)
            for (size_t c = 0; c < nc; c++)
                lv->level[row * nc + c] = regress_level(&bins[c], t->tests[i].values[w * nc + c]);
    return 0;
}

void regress_stacking_weights(const struct regress_table *t, double *w)
{
    size_t nb = t->ntests - 1;
    const struct regress_test *target = &t->tests[nb];
    double sum = 0;
    for (size_t i = 0; i < nb; i++) {
        int same = 0;
        for (int a = 0; a < REGRESS_NENV; a++)
            same +=
                t->tests[i].env[a] && target->env[a] && !strcmp(t->tests[i].env[a], target->env[a]);
        w[i] = sqrt((double)same);
        sum += w[i];
    }
    for (size_t i = 0; i < nb; i++)
        w[i] = sum > 0 ? w[i] / sum : 1.0 / (double)nb;
}

/* Per model: which counters it flags, and their violating windows
 * (+1 above, -1 below the expected level, 0 not violating). */
struct regress_model_flags {
    signed char *viol; /* ncounters x ntarget */
    unsigned char *flagged;
};

/* Evaluates model m's rules on the target; appends them to res->rules. */
static int regress_eval_model(const struct regress_options *o, int m, struct regress_rule *rules,
                              size_t nrules, const struct regress_levels *train,
                              const struct regress_levels *target, struct regress_model_flags *mf,
                              struct regress_result *res)
{
    struct regress_rule_result *rr = realloc(res->rules, (res->nrules + nrules + 1) * sizeof *rr);
    if (!rr)
        return -1;
    res->rules = rr;
    size_t nw = target->nwindows, nc = target->ncounters;
    for (size_t i = 0; i < nrules; i++) {
        struct regress_rule_result *x = &res->rules[res->nrules++];
        x->model = m;
        x->rule = rules[i];
        size_t tp, bp;
        x->target_confidence = regress_confidence(&rules[i], target, &tp);
        x->change = regress_confidence_change(rules[i].confidence, x->target_confidence);
        x->p = NAN;
        if (tp) {
            /* the rule's windows on its training set: premise, and with the consequent */
            bp = (size_t)llround(rules[i].support * (double)train->nwindows / rules[i].confidence);
            size_t bboth = (size_t)llround(rules[i].support * (double)train->nwindows);
            size_t tboth = (size_t)llround(x->target_confidence * (double)tp);
            x->p = regress_fisher_p(bboth, bp - bboth, tboth, tp - tboth);
        }
        x->flagged = isfinite(x->change) && x->change >= o->min_change &&
                     (o->alpha >= 1 || x->p <= o->alpha);
        if (!x->flagged)
            continue;
        int c = rules[i].consequent.counter, want = rules[i].consequent.level;
        for (size_t w = 0; w < nw; w++) {
            const int *row = target->level + w * nc;
            int holds = row[c] >= 0 && row[c] != want;
            for (int p = 0; holds && p < rules[i].npremise; p++)
                holds = row[rules[i].premise[p].counter] == rules[i].premise[p].level;
            if (holds) {
                mf->viol[(size_t)c * nw + w] = row[c] > want ? 1 : -1;
                mf->flagged[c] = 1;
            }
        }
    }
    free(rules); /* the premises now belong to res->rules */
    return 0;
}

static int regress_cmp_flags(const void *a, const void *b)
{
    const struct regress_flag *x = a, *y = b;
    if (x->severity != y->severity)
        return x->severity < y->severity ? 1 : -1;
    if (x->weight != y->weight)
        return x->weight < y->weight ? 1 : -1;
    return x->counter - y->counter;
}

/* Rank-sum p of counter c: every baseline window against the target's. */
static double regress_shift_p(const struct regress_table *t, size_t c)
{
    size_t nb = t->ntests - 1, nc = t->ncounters, n = 0;
    for (size_t i = 0; i < nb; i++)
        n += t->tests[i].nwindows;
    const struct regress_test *tg = &t->tests[nb];
    double *x = malloc((n + 1) * sizeof *x), *y = malloc((tg->nwindows + 1) * sizeof *y);
    double p = NAN;
    if (x && y) {
        size_t k = 0;
        for (size_t i = 0; i < nb; i++)
            for (size_t w = 0; w < t->tests[i].nwindows; w++)
                x[k++] = t->tests[i].values[w * nc + c];
        for (size_t w = 0; w < tg->nwindows; w++)
            y[w] = tg->values[w * nc + c];
        p = regress_rank_sum_p(x, n, y, tg->nwindows);
    }
    free(x);
    free(y);
    return p;
}

/* Combines the models' flags into res->flags. */
static int regress_combine(const struct regress_table *t, const struct regress_options *o,
                           struct regress_model_flags *mf, size_t nw, struct regress_result *res)
{
    size_t nc = t->ncounters;
    res->flags = calloc(nc ? nc : 1, sizeof *res->flags);
    if (!res->flags)
        return -1;
    for (size_t c = 0; c < nc; c++) {
        struct regress_flag f = {.counter = (int)c};
        for (int m = 0; m < res->nmodels; m++)
            if (mf[m].flagged[c]) {
                f.votes++;
                f.weight += res->weights[m];
            }
        int keep = o->method == REGRESS_SINGLE ? f.votes > 0 : f.weight >= 0.5 - 1e-9;
        if (!keep)
            continue;
        f.shift_p = regress_shift_p(t, c);
        if (o->alpha < 1 && !(f.shift_p <= o->alpha))
            continue; /* its own values did not move: it broke rules because others did */
        if (!(f.violating = calloc(nw ? nw : 1, 1)))
            return -1;
        size_t nviol = 0;
        for (size_t w = 0; w < nw; w++) {
            int dir = 0;
            for (int m = 0; m < res->nmodels; m++)
                if (mf[m].flagged[c] && mf[m].viol[c * nw + w])
                    dir = mf[m].viol[c * nw + w];
            if (dir) {
                f.violating[w] = 1;
                nviol++;
                f.up += dir > 0;
                f.down += dir < 0;
            }
        }
        f.severity = nw ? (double)nviol / (double)nw : 0;
        res->flags[res->nflags++] = f;
    }
    qsort(res->flags, res->nflags, sizeof *res->flags, regress_cmp_flags);
    return 0;
}

static int regress_cmp_rules(const void *a, const void *b)
{
    const struct regress_rule_result *x = a, *y = b;
    double cx = isfinite(x->change) ? x->change : -1, cy = isfinite(y->change) ? y->change : -1;
    if (cx != cy)
        return cx < cy ? 1 : -1;
    return x->rule.confidence < y->rule.confidence   ? 1
           : x->rule.confidence > y->rule.confidence ? -1
                                                     : 0;
}

/* Mines and evaluates every model. */
static int regress_models(const struct regress_table *t, const struct regress_options *o,
                          const struct regress_levels *target, struct regress_model_flags *mf,
                          struct regress_result *res, char *err, size_t errlen)
{
    size_t nb = t->ntests - 1;
    for (int m = 0; m < res->nmodels; m++) {
        struct regress_levels train = {0};
        size_t first = o->method == REGRESS_SINGLE ? 0 : (size_t)m;
        size_t last = o->method == REGRESS_SINGLE ? nb : (size_t)m + 1;
        if (regress_levels_of(t, res->bins, first, last, &train)) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        struct regress_rule *rules;
        size_t nrules;
        int rc = regress_apriori(&train, o->min_support, o->min_confidence, o->max_len,
                                 o->max_itemsets, &rules, &nrules, err, errlen);
        if (rc) {
            free(train.level);
            return -1;
        }
        rc = regress_eval_model(o, m, rules, nrules, &train, target, &mf[m], res);
        free(train.level);
        if (rc) {
            regress_rules_free(rules, nrules);
            snprintf(err, errlen, "out of memory");
            return -1;
        }
    }
    return 0;
}

int regress_analyze(const struct regress_table *t, const struct regress_options *o,
                    struct regress_result *res, char *err, size_t errlen)
{
    memset(res, 0, sizeof *res);
    size_t nb = t->ntests - 1, nc = t->ncounters;
    if (t->ntests < 2) {
        snprintf(err, errlen, "needs at least one baseline and a target");
        return -1;
    }
    res->nmodels = o->method == REGRESS_SINGLE ? 1 : (int)nb;
    res->weights = calloc((size_t)res->nmodels, sizeof *res->weights);
    res->bins = calloc(nc ? nc : 1, sizeof *res->bins);
    struct regress_model_flags *mf = calloc((size_t)res->nmodels, sizeof *mf);
    struct regress_levels target = {0};
    size_t nw = t->tests[nb].nwindows, pooled = 0;
    for (size_t i = 0; i < nb; i++)
        pooled += t->tests[i].nwindows;
    double *x = malloc((pooled ? pooled : 1) * sizeof *x);
    int rc = -1;
    if (!res->weights || !res->bins || !mf || !x)
        goto oom;
    for (size_t c = 0; c < nc; c++) {
        size_t n = 0;
        for (size_t i = 0; i < nb; i++)
            for (size_t w = 0; w < t->tests[i].nwindows; w++)
                x[n++] = t->tests[i].values[w * nc + c];
        regress_bins_fit(&res->bins[c], o->discretization, x, n);
    }
    if (o->method == REGRESS_STACKING)
        regress_stacking_weights(t, res->weights);
    else
        for (int m = 0; m < res->nmodels; m++)
            res->weights[m] = 1.0 / res->nmodels;
    if (regress_levels_of(t, res->bins, nb, nb + 1, &target))
        goto oom;
    for (int m = 0; m < res->nmodels; m++)
        if (!(mf[m].viol = calloc(nc * nw + 1, 1)) || !(mf[m].flagged = calloc(nc ? nc : 1, 1)))
            goto oom;
    if (regress_models(t, o, &target, mf, res, err, errlen))
        goto out;
    if (regress_combine(t, o, mf, nw, res))
        goto oom;
    qsort(res->rules, res->nrules, sizeof *res->rules, regress_cmp_rules);
    rc = 0;
    goto out;
oom:
    snprintf(err, errlen, "out of memory");
out:
    for (int m = 0; mf && m < res->nmodels; m++) {
        free(mf[m].viol);
        free(mf[m].flagged);
    }
    free(mf);
    free(x);
    free(target.level);
    if (rc)
        regress_result_free(res);
    return rc;
}

void regress_result_free(struct regress_result *res)
{
    for (size_t i = 0; i < res->nrules; i++)
        free(res->rules[i].rule.premise);
    free(res->rules);
    for (size_t i = 0; i < res->nflags; i++)
        free(res->flags[i].violating);
    free(res->flags);
    free(res->weights);
    free(res->bins);
    memset(res, 0, sizeof *res);
}

const char *regress_direction(const struct regress_flag *f)
{
    return f->up > f->down ? "up" : f->down > f->up ? "down" : "mixed";
}
