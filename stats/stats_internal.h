/* stats_internal.h - pieces shared inside stats/ and not part of the
 * public API: the seeded random generator, the FFT, and the binned-KDE
 * evaluator that both the plain densities and the bootstrap use. Nothing in
 * here may allocate global state or print. */
#ifndef PREPLAY_STATS_INTERNAL_H
#define PREPLAY_STATS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "stats.h"

/* ---- random numbers: xoshiro256** seeded through splitmix64 ----------- */
struct stats_rng {
    uint64_t s[4];
};
void stats_rng_seed(struct stats_rng *r, uint64_t seed);
uint64_t stats_rng_next(struct stats_rng *r);
double stats_rng_uniform(struct stats_rng *r);         /* [0, 1) with 53 bits */
size_t stats_rng_index(struct stats_rng *r, size_t n); /* uniform in [0, n) */
double stats_rng_poisson(struct stats_rng *r, double lambda);
double stats_rng_normal(struct stats_rng *r);

/* ---- FFT: in-place complex radix-2, n a power of two ------------------ */
struct stats_fft {
    size_t n;
    double *cos_table, *sin_table; /* n/2 twiddles */
    size_t *bitrev;
};
int stats_fft_init(struct stats_fft *f, size_t n);
void stats_fft_free(struct stats_fft *f);
/* inverse = 1 computes the unscaled inverse transform. */
void stats_fft_run(const struct stats_fft *f, double *re, double *im, int inverse);

/* ---- binned KDE ---------------------------------------------------------
 * The grid's strips are split into `sub` (odd) nodes each so that strip
 * midpoints are nodes and the node spacing is at most h / STATS_NODES_PER_H.
 * Samples are linearly binned onto the nodes; the density at a midpoint is
 * the node counts convolved with the Gaussian sampled at node offsets. */
#define STATS_NODES_PER_H 32.0
#define STATS_KERNEL_SIGMAS 9.0

struct stats_binned {
    struct stats_grid grid;
    double h;
    int sub;        /* nodes per strip (odd) */
    size_t nodes;   /* strips * sub */
    double delta;   /* node spacing */
    size_t half;    /* kernel half width in nodes */
    double *kernel; /* kernel[0..half]: phi(k * delta / h) / h */
    int use_fft;
    struct stats_fft fft;
    double *kernel_hat; /* real spectrum of the symmetric kernel (fft.n) */
    double *re, *im;    /* fft work buffers */
};

int stats_binned_init(struct stats_binned *b, const struct stats_grid *grid, double h, char *err);
void stats_binned_free(struct stats_binned *b);
/* How a sample's unit mass is spread over the nodes around it.
 *  - LINEAR: two nodes, weights 1-t and t (non-negative, so node counts can
 *    be resampled: the bootstrap uses it). Error O(delta^2 K'').
 *  - CUBIC: four nodes, the weights of cubic Lagrange interpolation through
 *    them (two may be negative). The smoothed sum then equals the exact sum
 *    up to the interpolation error of the kernel, O(delta^4 K''''): this is
 *    what single densities use (see stats_kde.c for the bound). */
enum stats_bin_order {
    STATS_BIN_LINEAR,
    STATS_BIN_CUBIC,
};

/* Binning of x into counts[nodes]; samples the chosen order cannot place
 * (beyond the nodes, or for CUBIC within one node of the ends) are appended
 * to `outside` (may be NULL when none can occur) and counted in *n_outside:
 * the caller evaluates them exactly. */
void stats_binned_bin(const struct stats_binned *b, enum stats_bin_order order, const double *x,
                      size_t n, double *counts, double *outside, size_t *n_outside);
/* Raw (unnormalized) density sum at the midpoints: out[i] = sum_j counts[j] *
 * kernel(J_i - j). Two count vectors at once when counts2 != NULL (the FFT
 * path transforms both in one complex FFT). */
void stats_binned_smooth(struct stats_binned *b, const double *counts, double *out,
                         const double *counts2, double *out2);

/* Exact raw sum of Gaussians (1/h phi((x_i - s)/h)) of the samples, added to out. */
void stats_exact_add(const double *x, size_t n, double h, const struct stats_grid *grid,
                     double *out);
/* Floor at 1e-12 * max and normalize to integrate to 1; returns -1 when all zero. */
int stats_floor_normalize(double *d, const struct stats_grid *grid);

/* Quantile (numpy "linear", type 7) of sorted data. */
double stats_quantile_sorted(const double *sorted, size_t n, double q);
/* k-th smallest of a (reorders a). */
double stats_select(double *a, size_t n, size_t k);
int stats_cmp_double(const void *a, const void *b);

#endif
