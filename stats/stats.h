/* stats.h - the public face of preplay's statistics library: Gaussian
 * KDE on a reproducible grid, the symmetric KL-divergence probability p of
 * PT4Cloud (Eq. 1-3), bootstrap point-wise confidence bands (PT4Cloud §4),
 * and the PT4Cloud stop rule as a state machine (§2, §6) that the replayer's
 * controller feeds one interval at a time.
 *
 * The library never prints, never exits and never keeps global state: every
 * failure comes back as a non-zero return plus a one-line message in the
 * caller's `err` buffer (STATS_ERR_LEN bytes). The paper is the default:
 * Scott bandwidth, 1000 strips, p0 = 0.9, R = 1000 resamples, CL = 0.99.
 *
 * Typical live use (replayer controller):
 *
 *     struct stats_config cfg;
 *     stats_config_default(&cfg);
 *     struct stats_machine *m = stats_machine_new(&cfg, err);
 *     for (;;) {
 *         run one interval of cfg-sized length (stats_machine_interval_length)
 *         struct stats_label_samples labels[] = {{"login", v1, n1}, {"search", v2, n2}};
 *         struct stats_step step;
 *         if (stats_machine_feed(m, all, n_all, labels, 2, &step, err)) handle err;
 *         if (step.action == STATS_STOP) break;
 *         // STATS_LENGTHEN: the next interval is longer; STATS_VALIDATE: the
 *         // next two intervals validate a stable result (Fig. 7 step 4).
 *     }
 *     stats_machine_final_samples(m, NULL, &values, &n);   // what d2 was made of
 */
#ifndef PREPLAY_STATS_H
#define PREPLAY_STATS_H

#include <stddef.h>
#include <stdint.h>

#define STATS_ERR_LEN 256

/* ---- KDE options ------------------------------------------------------ */

enum stats_bandwidth_rule {
    STATS_BW_SCOTT,     /* h = sd * n^(-1/5), sd with ddof = 1 (scipy gaussian_kde default) */
    STATS_BW_SILVERMAN, /* h = sd * (3n/4)^(-1/5) (scipy's "silverman") */
    STATS_BW_FIXED,     /* h = bandwidth, in the unit of the samples */
};

enum stats_method {
    STATS_METHOD_AUTO,   /* exact when n * strips <= 4e6, else binned */
    STATS_METHOD_EXACT,  /* sum of n Gaussians at every strip midpoint: O(n * strips) */
    STATS_METHOD_BINNED, /* linear binning on a sub-grid + convolution: O(n + G log G) */
};

struct stats_kde_options {
    enum stats_bandwidth_rule bandwidth_rule;
    double bandwidth; /* only for STATS_BW_FIXED */
    int strips;       /* number of equal strips of the grid (1000) */
    enum stats_method method;
    /* 1: estimate on ln(value) instead of value (values must be > 0). Not the
     * paper's default: an option for positive, heavy-tailed data such as
     * response times, where a few far outliers would otherwise set the
     * bandwidth and the grid (docs/stats-accuracy.md). KL divergence is
     * invariant under a monotone change of variable, so p estimates the
     * same quantity; grids and densities are then in ln units. */
    int log_scale;
};

void stats_kde_options_default(struct stats_kde_options *opt);

/* The method a density of n samples on `strips` strips really uses: AUTO
 * resolves to EXACT or BINNED. */
enum stats_method stats_method_resolve(enum stats_method method, size_t n, int strips);

/* The grid: `strips` equal strips of width `width` starting at `lo`; densities
 * are evaluated at the midpoints lo + (i + 0.5) * width. */
struct stats_grid {
    double lo, width;
    int strips;
};

static inline double stats_grid_x(const struct stats_grid *g, int i)
{
    return g->lo + ((double)i + 0.5) * g->width;
}

/* Bandwidth of one sample set by the rule in `opt`. Returns 0 with h = 0 for a
 * set with zero variance (callers decide what that means), -1 with `err` for
 * fewer than 2 samples or non-finite values. */
int stats_bandwidth(const double *x, size_t n, const struct stats_kde_options *opt, double *h,
                    char *err);

/* The default grid for comparing sets a and b (b may be NULL): spans
 * [min - 3h, max + 3h] of their union, h = max(ha, hb). */
int stats_grid_for(const double *a, size_t na, const double *b, size_t nb, double h, int strips,
                   struct stats_grid *grid, char *err);

/* KDE of x with bandwidth h at the grid's midpoints into out[strips], raised to
 * a floor of 1e-12 * max and renormalized to integrate to 1 on the grid. */
int stats_density(const double *x, size_t n, double h, const struct stats_grid *grid,
                  enum stats_method method, double *out, char *err);

/* D_KL(p||q) in bits on the grid: sum p * log2(p / q) * width. */
double stats_kl_bits(const double *p, const double *q, const struct stats_grid *grid);

/* ---- similarity of two sample sets (the paper's p, also its "accuracy") -- */

struct stats_similarity {
    struct stats_grid grid;
    double h1, h2;                      /* bandwidths actually used */
    double kl12, kl21;                  /* D_KL(d1||d2), D_KL(d2||d1) in bits */
    double p;                           /* 2^-kl12 * 2^-kl21 */
    double *d1, *d2;                    /* densities on the grid (grid.strips each), owned */
    enum stats_method method1, method2; /* what d1 and d2 used: EXACT or BINNED */
    const char *note;                   /* non-NULL when an edge case decided the answer */
};

/* p between sample sets a (d1) and b (d2). Zero-variance sets: a set with
 * zero variance borrows the other's bandwidth; two point masses give p = 1
 * when equal and p = 0 otherwise (see docs/preplay-stats.md). */
int stats_similarity_compute(const double *a, size_t na, const double *b, size_t nb,
                             const struct stats_kde_options *opt, struct stats_similarity *out,
                             char *err);
void stats_similarity_free(struct stats_similarity *s);

/* ln of every value into a new array (*out, free()d by the caller), for the
 * log scale. A value that is not > 0 (or not finite) is an error naming it:
 * "<what> sample <i> is <v>: the log scale needs positive values". */
int stats_log_copy(const double *x, size_t n, const char *what, double **out, char *err);

/* ---- bootstrap confidence bands --------------------------------------- */

struct stats_band_options {
    double cl;     /* confidence level (0.99) */
    int resamples; /* R (1000) */
    uint64_t seed; /* same seed, same band */
    int exact;     /* 1: resample indices and evaluate exact KDEs (slow; for tests) */
};

void stats_band_options_default(struct stats_band_options *opt);

#define STATS_NPCT 4
extern const double stats_summary_percentiles[STATS_NPCT]; /* 50, 5, 95, 99 */

struct stats_band {
    struct stats_grid grid;
    double h;
    double *density;                                  /* KDE of the whole set */
    double *low, *high;                               /* point-wise band at cl */
    double pct[STATS_NPCT];                           /* empirical percentiles of the set */
    double pct_low[STATS_NPCT], pct_high[STATS_NPCT]; /* bootstrap percentile interval */
    int log_scale; /* grid, h and densities are in ln units; percentiles are not */
};

/* KDE, point-wise band and percentile summary of x on `grid` (NULL: the
 * default grid of x alone). With kopt->log_scale the estimate is on ln(x)
 * (a given grid is then in ln units); percentiles stay in x's units. */
int stats_band_compute(const double *x, size_t n, const struct stats_grid *grid,
                       const struct stats_kde_options *kopt, const struct stats_band_options *bopt,
                       struct stats_band *out, char *err);
void stats_band_free(struct stats_band *b);

/* Bootstrap interval of arbitrary percentiles (0..100) of x, npct of them,
 * into low/high, with the sample's own percentiles in value: used by the
 * results' bands and the CI-width stop rule the accuracy harness compares
 * against. The interval always contains value (it is widened to it when
 * the smoothed resamples' percentiles all fall to one side). */
int stats_percentile_ci(const double *x, size_t n, const double *pct, int npct,
                        const struct stats_band_options *bopt, double *value, double *low,
                        double *high, char *err);

/* ---- the stop rule as a state machine ----------------------------------- */

enum stats_action {
    STATS_CONTINUE, /* run another interval of the current length */
    STATS_LENGTHEN, /* not stable with short intervals: start over with a longer interval */
    STATS_VALIDATE, /* stable with short intervals: run two validation intervals */
    STATS_STOP,     /* stable: report the final distribution */
};

const char *stats_action_name(enum stats_action a);

struct stats_config {
    double p0;          /* objective probability (0.9) */
    size_t min_samples; /* labels with fewer samples in d1 are not judged (30) */
    struct stats_kde_options kde;
    /* Short intervals (PT4Cloud §6.1, Fig. 7). 0 = the standard method. */
    int short_intervals;
    double interval;        /* length of an interval, any unit (seconds live) */
    double max_interval;    /* the cap at which the standard method takes over (one week) */
    double lengthen_factor; /* interval *= this on LENGTHEN (2) */
    int validate;           /* run the optional validation (Fig. 7 step 4) */
    /* Hourly sampling (§6.2): run tests only in the first `hourly_portion` of
     * each hour; 1 = continuously. Advisory for the controller, see
     * stats_machine_should_run; offline callers filter by timestamp. */
    double hourly_portion;
};

void stats_config_default(struct stats_config *cfg);

struct stats_label_samples {
    const char *label;
    const double *values;
    size_t n;
};

#define STATS_LABEL_LEN 64

/* What one interval fed into the machine decided. */
struct stats_step {
    int interval;           /* 1-based count of intervals fed so far */
    double interval_length; /* length of the interval just fed */
    int compared;           /* 0 when no comparison was due (first interval of a round) */
    int validation;         /* 1 when p is the validation comparison (d3 vs d2) */
    double p;               /* overall p (NAN when !compared) */
    double min_p;           /* lowest p of the judged metrics */
    int stable;             /* every judged metric reached p0 */
    int labels_judged;      /* labels with enough samples */
    char held_open_by[STATS_LABEL_LEN]; /* "" when stable, "(overall)" or the label */
    enum stats_action action;
    double next_interval_length;
};

struct stats_machine;

struct stats_machine *stats_machine_new(const struct stats_config *cfg, char *err);
void stats_machine_free(struct stats_machine *m);

/* Feed one interval: `all` holds every sample of the interval, `labels` the
 * same samples split by request label (may be NULL/0). An empty interval or a
 * non-finite or negative value is refused (-1, err) and leaves the machine
 * unchanged. After STATS_STOP further feeds are refused. */
int stats_machine_feed(struct stats_machine *m, const double *all, size_t n_all,
                       const struct stats_label_samples *labels, size_t nlabels,
                       struct stats_step *step, char *err);

double stats_machine_interval_length(const struct stats_machine *m);
int stats_machine_stopped(const struct stats_machine *m);

/* Whether tests should run at `seconds` since the start of the test under
 * hourly sampling. */
int stats_machine_should_run(const struct stats_machine *m, double seconds);

/* The samples d2 was computed from (the reported distribution), overall
 * (label NULL) or for one label; the pointer stays valid until the next feed. */
int stats_machine_final_samples(const struct stats_machine *m, const char *label,
                                const double **values, size_t *n);

/* The samples d2 was last compared against: d1 (standard and short rounds)
 * or d3 (validation). Same lifetime as stats_machine_final_samples. */
int stats_machine_reference_samples(const struct stats_machine *m, const char *label,
                                    const double **values, size_t *n);

#endif
