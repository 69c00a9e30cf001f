/* regress_apriori.c - association rules over discretized counter windows
 * (regress.h): the Apriori algorithm (Agrawal & Srikant 1994, as the
 * thesis uses through Weka), level by level: frequent single items, then
 * candidates of k items joined from frequent (k-1)-itemsets sharing their
 * first k-2 items and pruned when a (k-1)-subset is not frequent, counted
 * over the windows. Rules have one item as consequent (the thesis flags
 * the consequent's counter). An item is (counter, level) encoded as
 * counter * nlevels + level, so a sorted itemset is sorted by counter and
 * never holds two levels of one counter. Known limit: support counting
 * scans every window per candidate (O(candidates x windows x k)); runs
 * have hundreds of windows, so this is milliseconds. Must never return a
 * rule below the thresholds, nor loop without bound: max_itemsets caps
 * the work. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow_array.h"
#include "regress.h"

/* The frequent itemsets of one size: items[i * k ..], counts[i]; sorted
 * lexicographically (generated in that order). */
struct regress_level_sets {
    int k;
    size_t n, cap;
    int *items;
    size_t *counts;
};

static int regress_sets_push(struct regress_level_sets *s, const int *items, size_t count)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        int *it = realloc(s->items, cap * (size_t)s->k * sizeof *it);
        if (!it)
            return -1;
        s->items = it;
        size_t *c = realloc(s->counts, cap * sizeof *c);
        if (!c)
            return -1;
        s->counts = c;
        s->cap = cap;
    }
    memcpy(s->items + s->n * (size_t)s->k, items, (size_t)s->k * sizeof *items);
    s->counts[s->n++] = count;
    return 0;
}

static int regress_cmp_items(const int *a, const int *b, int k)
{
    for (int i = 0; i < k; i++)
        if (a[i] != b[i])
            return a[i] < b[i] ? -1 : 1;
    return 0;
}

/* Index of items in s (binary search), or -1. */
static long regress_sets_find(const struct regress_level_sets *s, const int *items)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = regress_cmp_items(s->items + mid * (size_t)s->k, items, s->k);
        if (!c)
            return (long)mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

/* Windows of lv holding every item (encoded with nlev levels per counter). */
static size_t regress_count(const struct regress_levels *lv, int nlev, const int *items, int k)
{
    size_t n = 0;
    for (size_t w = 0; w < lv->nwindows; w++) {
        const int *row = lv->level + w * lv->ncounters;
        int all = 1;
        for (int i = 0; all && i < k; i++)
            all = row[items[i] / nlev] == items[i] % nlev;
        n += (size_t)all;
    }
    return n;
}

/* 1 when every (k-1)-subset of cand (k items) is in prev. */
static int regress_subsets_frequent(const struct regress_level_sets *prev, const int *cand, int k)
{
    int sub[64];
    for (int drop = 0; drop < k - 2; drop++) { /* the last two: the joined sets themselves */
        for (int i = 0, j = 0; i < k; i++)
            if (i != drop)
                sub[j++] = cand[i];
        if (regress_sets_find(prev, sub) < 0)
            return 0;
    }
    return 1;
}

/* Frequent k-itemsets from the frequent (k-1)-itemsets prev. */
static int regress_next_level(const struct regress_levels *lv, int nlev, size_t min_count,
                              const struct regress_level_sets *prev,
                              struct regress_level_sets *next, size_t *total, size_t max_itemsets)
{
    int k = prev->k + 1, cand[64];
    next->k = k;
    for (size_t a = 0; a < prev->n; a++) {
        const int *ia = prev->items + a * (size_t)prev->k;
        for (size_t b = a + 1; b < prev->n; b++) {
            const int *ib = prev->items + b * (size_t)prev->k;
            if (k > 2 && regress_cmp_items(ia, ib, k - 2))
                break; /* sorted: no later b shares the prefix */
            if (ia[k - 2] / nlev == ib[k - 2] / nlev)
                continue; /* two levels of one counter never co-occur */
            memcpy(cand, ia, (size_t)(k - 1) * sizeof *cand);
            cand[k - 1] = ib[k - 2];
            if (!regress_subsets_frequent(prev, cand, k))
                continue;
            size_t c = regress_count(lv, nlev, cand, k);
            if (c < min_count)
                continue;
            if (++*total > max_itemsets)
                return 1;
            if (regress_sets_push(next, cand, c))
                return -1;
        }
    }
    return 0;
}

void regress_rules_free(struct regress_rule *rules, size_t n)
{
    for (size_t i = 0; rules && i < n; i++)
        free(rules[i].premise);
    free(rules);
}

/* Windows of lv holding every item of prem (k of them) where counter is
 * measured: a rule's confidence is measured where its consequent is. */
static size_t regress_count_measured(const struct regress_levels *lv, int nlev, const int *prem,
                                     int k, int counter)
{
    size_t n = 0;
    for (size_t w = 0; w < lv->nwindows; w++) {
        const int *row = lv->level + w * lv->ncounters;
        int all = row[counter] >= 0;
        for (int i = 0; all && i < k; i++)
            all = row[prem[i] / nlev] == prem[i] % nlev;
        n += (size_t)all;
    }
    return n;
}

/* Rules of the itemsets of sets[k - 1] (k items): each item as the
 * consequent of the others. Confidence: the windows holding every item
 * over those holding the premise with the consequent's counter measured
 * (a window missing it, a label with no request, neither keeps nor
 * breaks the rule; missing[c]: counter c has such windows). */
static int regress_rules_of(const struct regress_levels *lv, const unsigned char *missing,
                            const struct regress_level_sets *sets, int k, int nlev,
                            double min_confidence, struct regress_rule **rules, size_t *n,
                            size_t *cap)
{
    size_t nwindows = lv->nwindows;
    const struct regress_level_sets *s = &sets[k - 1], *p = &sets[k - 2];
    int prem[64];
    for (size_t i = 0; i < s->n; i++) {
        const int *it = s->items + i * (size_t)k;
        for (int c = 0; c < k; c++) {
            for (int a = 0, j = 0; a < k; a++)
                if (a != c)
                    prem[j++] = it[a];
            long pi = regress_sets_find(p, prem);
            if (pi < 0 || !p->counts[pi])
                continue; /* cannot happen: subsets of frequent sets are frequent */
            size_t measured = missing[it[c] / nlev]
                                  ? regress_count_measured(lv, nlev, prem, k - 1, it[c] / nlev)
                                  : p->counts[pi];
            double conf = (double)s->counts[i] / (double)measured;
            if (conf < min_confidence)
                continue;
            if (grow_array((void **)rules, cap, *n + 1, sizeof **rules, 64) != 0)
                return -1;
            struct regress_rule *r = &(*rules)[*n];
            if (!(r->premise = malloc((size_t)(k - 1) * sizeof *r->premise)))
                return -1;
            (*n)++;
            for (int a = 0; a < k - 1; a++)
                r->premise[a] = (struct regress_item){prem[a] / nlev, prem[a] % nlev};
            r->npremise = k - 1;
            r->consequent = (struct regress_item){it[c] / nlev, it[c] % nlev};
            r->support = (double)s->counts[i] / (double)nwindows;
            r->confidence = conf;
        }
    }
    return 0;
}

/* The largest level + 1 in lv (items' encoding base). */
static int regress_nlev(const struct regress_levels *lv)
{
    int m = 1;
    for (size_t i = 0; i < lv->nwindows * lv->ncounters; i++)
        if (lv->level[i] + 1 > m)
            m = lv->level[i] + 1;
    return m;
}

/* Frequent single items, in item order. */
static int regress_first_level(const struct regress_levels *lv, int nlev, size_t min_count,
                               struct regress_level_sets *s)
{
    s->k = 1;
    for (int item = 0; item < (int)lv->ncounters * nlev; item++) {
        size_t c = regress_count(lv, nlev, &item, 1);
        if (c >= min_count && regress_sets_push(s, &item, c))
            return -1;
    }
    return 0;
}

int regress_apriori(const struct regress_levels *lv, double min_support, double min_confidence,
                    int max_len, size_t max_itemsets, struct regress_rule **rules, size_t *nrules,
                    char *err, size_t errlen)
{
    *rules = NULL;
    *nrules = 0;
    if (max_len < 2 || max_len > 64 || !lv->nwindows) {
        snprintf(err, errlen, "apriori: needs windows and 2 <= max_len <= 64");
        return -1;
    }
    struct regress_level_sets *sets = calloc((size_t)max_len, sizeof *sets);
    size_t cap = 0, total = 0;
    size_t min_count = (size_t)ceil(min_support * (double)lv->nwindows - 1e-9);
    if (min_count < 1)
        min_count = 1;
    unsigned char *missing = calloc(lv->ncounters ? lv->ncounters : 1, 1);
    for (size_t i = 0; missing && i < lv->nwindows * lv->ncounters; i++)
        if (lv->level[i] < 0)
            missing[i % lv->ncounters] = 1;
    int nlev = regress_nlev(lv),
        rc = sets && missing ? regress_first_level(lv, nlev, min_count, &sets[0]) : -1;
    total = sets ? sets[0].n : 0;
    for (int k = 2; !rc && k <= max_len && sets[k - 2].n; k++) {
        rc = regress_next_level(lv, nlev, min_count, &sets[k - 2], &sets[k - 1], &total,
                                max_itemsets);
        if (!rc)
            rc = regress_rules_of(lv, missing, sets, k, nlev, min_confidence, rules, nrules, &cap);
    }
    if (rc > 0)
        snprintf(err, errlen,
                 "apriori: more than %zu frequent itemsets at support %.3g: raise --support or "
                 "lower --max-len",
                 max_itemsets, min_support);
    else if (rc < 0)
        snprintf(err, errlen, "apriori: out of memory");
    for (int k = 0; sets && k < max_len; k++) {
        free(sets[k].items);
        free(sets[k].counts);
    }
    free(sets);
    free(missing);
    if (rc) {
        regress_rules_free(*rules, *nrules);
        *rules = NULL;
        *nrules = 0;
        return -1;
    }
    return 0;
}

double regress_confidence(const struct regress_rule *r, const struct regress_levels *lv,
                          size_t *premise_windows)
{
    size_t p = 0, both = 0;
    for (size_t w = 0; w < lv->nwindows; w++) {
        const int *row = lv->level + w * lv->ncounters;
        int all = 1;
        for (int i = 0; all && i < r->npremise; i++)
            all = row[r->premise[i].counter] == r->premise[i].level;
        if (!all || row[r->consequent.counter] < 0)
            continue; /* a window missing the consequent neither keeps nor breaks the rule */
        p++;
        both += row[r->consequent.counter] == r->consequent.level;
    }
    if (premise_windows)
        *premise_windows = p;
    return p ? (double)both / (double)p : NAN;
}

double regress_confidence_change(double c1, double c2)
{
    double a0 = c1, a1 = 1 - c1, b0 = c2, b1 = 1 - c2;
    double na = sqrt(a0 * a0 + a1 * a1), nb = sqrt(b0 * b0 + b1 * b1);
    if (!(na > 0) || !(nb > 0))
        return NAN;
    double cosv = (a0 * b0 + a1 * b1) / (na * nb);
    if (cosv > 1)
        cosv = 1;
    return 1 - cosv;
}

/* log of C(n, k) */
static double regress_lchoose(double n, double k)
{
    return lgamma(n + 1) - lgamma(k + 1) - lgamma(n - k + 1);
}

double regress_fisher_p(size_t a, size_t b, size_t c, size_t d)
{
    /* the hypergeometric law of the top-left cell given the margins; the
     * two-sided p sums every table no more likely than the observed one */
    double r1 = (double)(a + b), c1 = (double)(a + c), n = (double)(a + b + c + d);
    double lo = c1 - (n - r1) > 0 ? c1 - (n - r1) : 0, hi = r1 < c1 ? r1 : c1;
    double base = regress_lchoose(n, c1);
    double obs = regress_lchoose(r1, (double)a) + regress_lchoose(n - r1, c1 - (double)a) - base;
    double p = 0;
    for (double x = lo; x <= hi; x++) {
        double lp = regress_lchoose(r1, x) + regress_lchoose(n - r1, c1 - x) - base;
        if (lp <= obs + 1e-7)
            p += exp(lp);
    }
    return p > 1 ? 1 : p;
}
