/* stats_duet.h - the statistics of duet measurements (Bulej et al.,
 * MASCOTS 2019, §III.D and §IV.A): per-run winsorization of the
 * per-iteration ratios, the geometric mean per run (gms_r) and over runs
 * (gms), and the non-parametric bootstrap percentile interval of gms drawn
 * from the run gms. Used by `preplay duet` (replayer/duet_*.c).
 *
 * Like the rest of the library it never prints, never exits and keeps no
 * global state; randomness comes from the library's seeded generator, so
 * one seed gives the same interval on every machine. */
#ifndef PREPLAY_STATS_DUET_H
#define PREPLAY_STATS_DUET_H

#include <stddef.h>
#include <stdint.h>

/* Geometric mean of n > 0 positive finite values (exp of the mean of the
 * logs, summed in index order); NAN when n is 0 or a value is not > 0. */
double stats_duet_gm(const double *x, size_t n);

/* §IV.A: "replacing at most one observation in a run with its nearest
 * neighbor when that observation is further than 20% away from the
 * min-max range of the remaining observations". With pct = 20: of the
 * smallest and the largest value, the one further out (relative to the
 * range [lo, hi] of the others: x > hi * (1 + pct/100) or x < lo * (1 -
 * pct/100), distance measured relative to the bound) is replaced by its
 * nearest neighbour (hi or lo). Needs n >= 3. Returns the index replaced,
 * or -1 (nothing replaced, pct <= 0, n < 3). */
long stats_duet_winsorize(double *x, size_t n, double pct);

struct stats_duet_ci {
    double gms;       /* geometric mean of the run gms */
    double low, high; /* bootstrap percentile interval at cl */
    int equal;        /* the interval contains 1 */
};

/* The interval of gms from the R run gms: `replicates` bootstrap samples
 * of R run gms drawn with replacement, the gm of each, and their
 * (1-cl)/2 and (1+cl)/2 percentiles (linear interpolation between order
 * statistics, numpy's default). Needs R >= 2, replicates >= 100, 0 < cl <
 * 1; else -1 with err (STATS_ERR_LEN). */
int stats_duet_interval(const double *run_gms, size_t nruns, int replicates, double cl,
                        uint64_t seed, struct stats_duet_ci *out, char *err);

/* n random bits (0/1) from seed into out, reproducible. */
void stats_duet_coins(uint64_t seed, unsigned char *out, size_t n);
/* n bits in random order with as many 1s as 0s (n odd: the extra one a
 * coin flip): the controller's per-run core assignment and per-iteration
 * order of --sequential. Independent coins can put most runs one way
 * round (7 of 10 in a bench run here); where one core is busier than the
 * other, that biased an A/A gms by 40%. Balanced, a multiplicative core
 * effect cancels in the gm over runs (c^k * c^-k) and only widens the
 * interval, as it should. */
void stats_duet_balanced(uint64_t seed, unsigned char *out, size_t n);

#endif
