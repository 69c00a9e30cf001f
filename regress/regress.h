/* regress.h - counter-based performance regression detection (Foo's
 * thesis, ch. 5 and 6): discretize counter windows (3 levels around the
 * baseline's median +/- 1 standard deviation, or equal-width bins), mine
 * association rules with Apriori over the baseline windows, measure each
 * rule's confidence change on the target (cosine distance, Eq. 5-1) and
 * flag the counters in the consequents of the changed rules, ranked by
 * severity (Eq. 5-4); with several baselines, one model per baseline
 * combined by bagging (majority vote) or stacking (votes weighted by
 * environment similarity, Eq. 6-3). The library reads nothing and prints
 * nothing: the CLI (regress_cli.c) loads results files into a
 * regress_table and writes regress.json (formats/REGRESS.md). */
#ifndef PREPLAY_REGRESS_H
#define PREPLAY_REGRESS_H

#include <stddef.h>

#define REGRESS_ERR_LEN 1024

/* Counter windows of one test: values[w * ncounters + c], NAN missing. */
struct regress_test {
    const char *name; /* for messages and the output: its file */
    size_t nwindows;
    double *values;
    /* environment attributes for stacking (NULL: unknown) */
    const char *env[8];
};
#define REGRESS_NENV 7 /* host, cpus, memory, cpu_model, kernel, emulated_type, instance */
#define REGRESS_ENV_INSTANCE 6

/* The counters common to every test, baselines first, the target last. */
struct regress_table {
    size_t ncounters;
    const char *const *names;
    struct regress_test *tests;
    size_t ntests; /* baselines: ntests - 1; target: tests[ntests - 1] */
};

enum regress_discretization { REGRESS_3LEVEL, REGRESS_EQUAL_WIDTH };

/* Levels of one counter, from the pooled baseline windows. 3-level: 0
 * low (< lo), 1 medium, 2 high (> hi). Equal width: 0 below the
 * baseline's minimum, 1..k the bins of width (max - min) / k, k + 1
 * above the maximum; levels are ordered, so a higher level is a higher
 * value. */
struct regress_bins {
    enum regress_discretization how;
    double lo, hi; /* 3-level: median -/+ 1 sd; equal width: min, max */
    int k;         /* equal width: the number of bins (Eq. 6-2) */
    int nlevels;   /* 3, or k + 2 */
    /* the baseline's range and median, whichever the scheme (NAN: nothing
     * measured): what the compare report draws the target against */
    double min, median, max;
};

/* Fits one counter's levels on its baseline values x (NAN skipped). */
void regress_bins_fit(struct regress_bins *b, enum regress_discretization how, const double *x,
                      size_t n);
/* The level of value v, or -1 for NAN. */
int regress_level(const struct regress_bins *b, double v);
/* "low"/"medium"/"high", or "[lo, hi)", "<min", ">max"; into buf. */
const char *regress_level_name(const struct regress_bins *b, int level, char *buf, size_t len);

/* An item: counter c at level l. An itemset: sorted items. */
struct regress_item {
    int counter, level;
};

/* One association rule premise -> consequent (one item), with its support
 * and confidence on the windows it was mined from. */
struct regress_rule {
    struct regress_item *premise;
    int npremise;
    struct regress_item consequent;
    double support, confidence;
};

/* Discretized windows: level[w * ncounters + c], -1 missing. */
struct regress_levels {
    size_t nwindows, ncounters;
    int *level;
};

/* Apriori (Agrawal & Srikant) over the windows: every rule with a single
 * consequent, at most max_len items in all, support >= min_support
 * (fraction of windows holding every item) and confidence >= min_confidence.
 * 0 with *rules (malloc'ed, free with regress_rules_free), or -1 with err
 * (out of memory, or more than max_itemsets frequent itemsets: raise the
 * support). */
int regress_apriori(const struct regress_levels *lv, double min_support, double min_confidence,
                    int max_len, size_t max_itemsets, struct regress_rule **rules, size_t *nrules,
                    char *err, size_t errlen);
void regress_rules_free(struct regress_rule *rules, size_t n);
/* Support count of the rule's premise alone and with the consequent in
 * lv, over the windows where the consequent's counter is measured (a
 * window missing it neither keeps nor breaks the rule, as Apriori's
 * confidences count it): the rule's confidence there is both / premise
 * (NAN when 0; *premise_windows: that premise count). */
double regress_confidence(const struct regress_rule *r, const struct regress_levels *lv,
                          size_t *premise_windows);
/* Eq. 5-1..5-3: cosine distance of (c1, 1 - c1) and (c2, 1 - c2), in
 * [0, 1]: 0 unchanged, 1 completely different. */
double regress_confidence_change(double c1, double c2);

/* Two-sided Fisher exact test of the 2x2 table [[a, b], [c, d]]: the
 * probability of a table at least as extreme given the margins. */
double regress_fisher_p(size_t a, size_t b, size_t c, size_t d);

/* Two-sided Mann-Whitney rank-sum test of x against y (NAN skipped):
 * normal approximation with tie and continuity corrections, as scipy's
 * mannwhitneyu(method="asymptotic"). NAN when either side is empty. */
double regress_rank_sum_p(const double *x, size_t nx, const double *y, size_t ny);

/* Options of one analysis. */
enum regress_method { REGRESS_SINGLE, REGRESS_BAGGING, REGRESS_STACKING };
struct regress_options {
    enum regress_method method;
    enum regress_discretization discretization;
    double min_support, min_confidence, min_change;
    /* below 1: a rule is flagged only when its baseline and target
     * confidences also differ at this level (Fisher exact test on the
     * windows where its premise holds), and a counter only when its own
     * values moved at this level (rank-sum test, baselines against the
     * target); 1: off, the thesis's rules alone */
    double alpha;
    int max_len;
    size_t max_itemsets;
};

/* A rule as evaluated on the target by one model. */
struct regress_rule_result {
    int model; /* baseline index (SINGLE: 0, all baselines pooled) */
    struct regress_rule rule;
    double target_confidence; /* NAN: its premise never held on the target */
    double change;            /* NAN with it */
    double p;                 /* Fisher's p of the change; NAN without a target confidence */
    int flagged;              /* change >= min_change */
};

/* A counter flagged by the combined models. */
struct regress_flag {
    int counter;
    double severity;          /* share of target windows that violate a flagged rule of it */
    int up, down;             /* violating windows above / below the expected level */
    int votes;                /* models that flagged it */
    double weight;            /* their summed weights (stacking; bagging: votes / models) */
    double shift_p;           /* rank-sum p of its values, baselines against the target */
    unsigned char *violating; /* per target window: 1 when violating */
};

struct regress_result {
    int nmodels;
    double *weights;           /* per model */
    struct regress_bins *bins; /* per counter */
    struct regress_rule_result *rules;
    size_t nrules;
    struct regress_flag *flags; /* ordered by severity, then weight */
    size_t nflags;
};

/* The whole analysis of t (baselines, target) with o. 0, or -1 with err. */
int regress_analyze(const struct regress_table *t, const struct regress_options *o,
                    struct regress_result *res, char *err, size_t errlen);
void regress_result_free(struct regress_result *res);
/* "up", "down" or "mixed" for a flag. */
const char *regress_direction(const struct regress_flag *f);
/* The stacking weights of the baselines by environment similarity to
 * the target (Eq. 6-3's w_i): |similarity vector| over their sum; equal
 * weights when no attribute matches anywhere. */
void regress_stacking_weights(const struct regress_table *t, double *w);

#endif
