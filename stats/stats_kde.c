/* stats_kde.c - Gaussian kernel density estimates on PT4Cloud's strip grid,
 * exact and binned, plus the KL divergence and the similarity p built on
 * them (PT4Cloud §3, Eq. 1-3).
 *
 * The binned path: samples are binned onto nodes spaced delta <= h/32 apart
 * (an odd number of nodes per strip, so every strip midpoint is a node),
 * then convolved with the Gaussian sampled at node offsets and cut at 9 h
 * (the mass beyond is below 2e-19). Densities use cubic binning: a sample
 * at node j + t puts the four cubic Lagrange weights of t on nodes j-1..j+2,
 * so at every midpoint the binned sum is the exact sum with each kernel
 * replaced by its cubic interpolant through four nodes. The error per unit
 * of mass is at most max|(t+1)t(t-1)(t-2)|/4! * delta^4 * max|K''''| =
 * (9/16)/24 * delta^4 * 3 phi(0)/h^5, i.e. at most 0.0703 (delta/h)^4 <=
 * 6.7e-8 of the largest density a kernel can reach, phi(0)/h. (Linear
 * binning, used before and still by the bootstrap whose node counts must be
 * non-negative, is bounded by delta^2/8 max|K''| = 4.9e-5 of it.) The
 * measured errors against --exact and scipy are in docs/preplay-stats.md.
 * When a very long range forces the node count cap (4M nodes, a range over
 * ~130000 h), delta grows beyond h/32 and the bound grows as (delta/h)^4.
 * The convolution runs as an FFT when that is cheaper than gathering
 * 2*half+1 nodes per strip midpoint. Never allocates per sample. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats_internal.h"

#define STATS_INV_SQRT_2PI 0.39894228040143267794
#define STATS_AUTO_EXACT_WORK 4e6
#define STATS_MAX_NODES ((size_t)1 << 22)

void stats_kde_options_default(struct stats_kde_options *opt)
{
    opt->bandwidth_rule = STATS_BW_SCOTT;
    opt->bandwidth = 0;
    opt->strips = 1000;
    opt->method = STATS_METHOD_AUTO;
    opt->log_scale = 0;
}

int stats_log_copy(const double *x, size_t n, const char *what, double **out, char *err)
{
    *out = NULL;
    double *l = malloc(sizeof(double) * (n ? n : 1));
    if (!l) {
        snprintf(err, STATS_ERR_LEN, "out of memory for the ln of %zu samples", n);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (!(x[i] > 0) || !isfinite(x[i])) {
            snprintf(err, STATS_ERR_LEN, "%s sample %zu is %g: the log scale needs positive values",
                     what, i, x[i]);
            free(l);
            return -1;
        }
        l[i] = log(x[i]);
    }
    *out = l;
    return 0;
}

static int stats_check_finite(const double *x, size_t n, char *err)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i])) {
            snprintf(err, STATS_ERR_LEN, "sample %zu is not a finite number", i);
            return -1;
        }
    return 0;
}

int stats_bandwidth(const double *x, size_t n, const struct stats_kde_options *opt, double *h,
                    char *err)
{
    *h = 0;
    if (n < 2) {
        snprintf(err, STATS_ERR_LEN, "a density needs at least 2 samples, got %zu", n);
        return -1;
    }
    if (stats_check_finite(x, n, err))
        return -1;
    if (opt->bandwidth_rule == STATS_BW_FIXED) {
        if (!(opt->bandwidth > 0) || !isfinite(opt->bandwidth)) {
            snprintf(err, STATS_ERR_LEN, "bandwidth must be a positive number, got %g",
                     opt->bandwidth);
            return -1;
        }
        *h = opt->bandwidth;
        return 0;
    }
    double mean = 0;
    for (size_t i = 0; i < n; i++)
        mean += x[i];
    mean /= (double)n;
    double ss = 0;
    for (size_t i = 0; i < n; i++)
        ss += (x[i] - mean) * (x[i] - mean);
    double sd = sqrt(ss / (double)(n - 1));
    /* Rounding can leave a tiny spread on equal values: treat as zero. */
    if (sd <= 1e-14 * fabs(mean))
        sd = 0;
    double factor = opt->bandwidth_rule == STATS_BW_SILVERMAN ? pow(0.75 * (double)n, -0.2)
                                                              : pow((double)n, -0.2);
    *h = sd * factor;
    return 0;
}

int stats_grid_for(const double *a, size_t na, const double *b, size_t nb, double h, int strips,
                   struct stats_grid *grid, char *err)
{
    if (strips < 2 || strips > 10000000) {
        snprintf(err, STATS_ERR_LEN, "strips must be between 2 and 10000000, got %d", strips);
        return -1;
    }
    if (na == 0 || !(h > 0) || !isfinite(h)) {
        snprintf(err, STATS_ERR_LEN, "a grid needs samples and a positive bandwidth");
        return -1;
    }
    double lo = a[0], hi = a[0];
    for (size_t i = 0; i < na; i++) {
        lo = a[i] < lo ? a[i] : lo;
        hi = a[i] > hi ? a[i] : hi;
    }
    for (size_t i = 0; b && i < nb; i++) {
        lo = b[i] < lo ? b[i] : lo;
        hi = b[i] > hi ? b[i] : hi;
    }
    grid->lo = lo - 3 * h;
    grid->strips = strips;
    grid->width = (hi + 3 * h - grid->lo) / strips;
    return 0;
}

/* ---- binned evaluation ---------------------------------------------------- */

static size_t stats_next_pow2(size_t n)
{
    size_t p = 1;
    while (p < n)
        p <<= 1;
    return p;
}

int stats_binned_init(struct stats_binned *b, const struct stats_grid *grid, double h, char *err)
{
    memset(b, 0, sizeof *b);
    b->grid = *grid;
    b->h = h;
    double want = ceil(STATS_NODES_PER_H * grid->width / h);
    size_t max_sub = STATS_MAX_NODES / (size_t)grid->strips;
    if (max_sub < 1)
        max_sub = 1;
    if (!(want >= 1))
        want = 1;
    size_t sub = want > (double)max_sub ? max_sub : (size_t)want;
    if (sub % 2 == 0)
        sub = sub > 1 && sub == max_sub ? sub - 1 : sub + 1;
    b->sub = (int)sub;
    b->nodes = (size_t)grid->strips * sub;
    b->delta = grid->width / (double)sub;
    double half = ceil(STATS_KERNEL_SIGMAS * h / b->delta);
    if (half > (double)b->nodes)
        half = (double)b->nodes;
    b->half = (size_t)half;
    b->kernel = malloc(sizeof(double) * (b->half + 1));
    if (!b->kernel)
        goto oom;
    for (size_t k = 0; k <= b->half; k++) {
        double z = (double)k * b->delta / h;
        b->kernel[k] = STATS_INV_SQRT_2PI / h * exp(-0.5 * z * z);
    }
    size_t n = stats_next_pow2(b->nodes + b->half + 1);
    double log2n = log2((double)n);
    double fft_cost = 3.0 * (double)n * log2n; /* per vector: half of forward+inverse pair */
    double gather_cost = (double)grid->strips * (double)(2 * b->half + 1);
    b->use_fft = fft_cost < gather_cost;
    if (b->use_fft) {
        if (stats_fft_init(&b->fft, n))
            goto oom;
        b->kernel_hat = calloc(n, sizeof(double));
        b->re = calloc(n, sizeof(double));
        b->im = calloc(n, sizeof(double));
        if (!b->kernel_hat || !b->re || !b->im)
            goto oom;
        b->re[0] = b->kernel[0];
        for (size_t k = 1; k <= b->half; k++)
            b->re[k] = b->re[n - k] = b->kernel[k];
        stats_fft_run(&b->fft, b->re, b->im, 0);
        for (size_t k = 0; k < n; k++)
            b->kernel_hat[k] = b->re[k] / (double)n;
    }
    return 0;
oom:
    stats_binned_free(b);
    snprintf(err, STATS_ERR_LEN, "out of memory for a binned density of %zu nodes", b->nodes);
    return -1;
}

void stats_binned_free(struct stats_binned *b)
{
    free(b->kernel);
    if (b->use_fft)
        stats_fft_free(&b->fft);
    free(b->kernel_hat);
    free(b->re);
    free(b->im);
    b->kernel = b->kernel_hat = b->re = b->im = NULL;
}

void stats_binned_bin(const struct stats_binned *b, enum stats_bin_order order, const double *x,
                      size_t n, double *counts, double *outside, size_t *n_outside)
{
    double lo = b->grid.lo + 0.5 * b->delta, inv = 1.0 / b->delta;
    size_t out = 0, last = b->nodes - 1;
    memset(counts, 0, sizeof(double) * b->nodes);
    if (order == STATS_BIN_CUBIC) {
        /* Nodes j-1, j, j+1, j+2 around pos = j + t; Lagrange weights at t. */
        double first = 1, end = last >= 3 ? (double)(last - 1) : 0;
        for (size_t i = 0; i < n; i++) {
            double pos = (x[i] - lo) * inv;
            if (pos >= first && pos < end) {
                size_t j = (size_t)pos;
                double t = pos - (double)j;
                double tp = t + 1, tm = t - 1, tmm = t - 2;
                counts[j - 1] -= t * tm * tmm * (1.0 / 6);
                counts[j] += tp * tm * tmm * 0.5;
                counts[j + 1] -= tp * t * tmm * 0.5;
                counts[j + 2] += tp * t * tm * (1.0 / 6);
            } else if (outside) {
                outside[out++] = x[i];
            }
        }
        if (n_outside)
            *n_outside = out;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        double pos = (x[i] - lo) * inv;
        if (pos >= 0 && pos < (double)last) {
            size_t j = (size_t)pos;
            double w = pos - (double)j;
            counts[j] += 1 - w;
            counts[j + 1] += w;
        } else if (pos == (double)last) {
            counts[last] += 1;
        } else if (outside) {
            outside[out++] = x[i];
        }
    }
    if (n_outside)
        *n_outside = out;
}

/* The direct convolution, scattered from the nodes that hold mass: each
 * reaches the (2 half + 1) / sub strip midpoints within the kernel's cut, so
 * the cost is nonzero nodes x that, never more than gathering 2 half + 1
 * nodes at every midpoint (and far less for data with long empty stretches:
 * the benchmark's heavy tail fills 6% of its nodes). */
static void stats_binned_gather(const struct stats_binned *b, const double *counts, double *out)
{
    long long center = (b->sub - 1) / 2, sub = b->sub, half = (long long)b->half;
    long long last_strip = b->grid.strips - 1;
    memset(out, 0, sizeof(double) * (size_t)b->grid.strips);
    for (size_t jj = 0; jj < b->nodes; jj++) {
        double c = counts[jj];
        if (c == 0)
            continue;
        long long j = (long long)jj;
        /* Strips i with |i * sub + center - j| <= half. */
        long long from = j - half - center, to = j + half - center;
        from = from <= 0 ? 0 : (from + sub - 1) / sub;
        to = to < 0 ? -1 : to / sub;
        if (to > last_strip)
            to = last_strip;
        for (long long i = from; i <= to; i++) {
            long long d = i * sub + center - j;
            out[i] += c * b->kernel[d < 0 ? -d : d];
        }
    }
}

void stats_binned_smooth(struct stats_binned *b, const double *counts, double *out,
                         const double *counts2, double *out2)
{
    if (!b->use_fft) {
        stats_binned_gather(b, counts, out);
        if (counts2)
            stats_binned_gather(b, counts2, out2);
        return;
    }
    size_t n = b->fft.n;
    memcpy(b->re, counts, sizeof(double) * b->nodes);
    memset(b->re + b->nodes, 0, sizeof(double) * (n - b->nodes));
    if (counts2)
        memcpy(b->im, counts2, sizeof(double) * b->nodes);
    else
        memset(b->im, 0, sizeof(double) * b->nodes);
    memset(b->im + b->nodes, 0, sizeof(double) * (n - b->nodes));
    stats_fft_run(&b->fft, b->re, b->im, 0);
    for (size_t k = 0; k < n; k++) {
        b->re[k] *= b->kernel_hat[k];
        b->im[k] *= b->kernel_hat[k];
    }
    stats_fft_run(&b->fft, b->re, b->im, 1);
    size_t center = (size_t)(b->sub - 1) / 2;
    for (int i = 0; i < b->grid.strips; i++) {
        size_t J = (size_t)i * (size_t)b->sub + center;
        out[i] = b->re[J];
        if (counts2)
            out2[i] = b->im[J];
    }
}

/* ---- exact evaluation ------------------------------------------------------ */

void stats_exact_add(const double *x, size_t n, double h, const struct stats_grid *grid,
                     double *out)
{
    double norm = STATS_INV_SQRT_2PI / h, inv_h = 1.0 / h;
    for (int i = 0; i < grid->strips; i++) {
        double xi = stats_grid_x(grid, i), sum = 0;
        for (size_t k = 0; k < n; k++) {
            double z = (xi - x[k]) * inv_h;
            double z2 = z * z;
            if (z2 < 1500)
                sum += exp(-0.5 * z2);
        }
        out[i] += sum * norm;
    }
}

int stats_floor_normalize(double *d, const struct stats_grid *grid)
{
    double max = 0;
    for (int i = 0; i < grid->strips; i++)
        max = d[i] > max ? d[i] : max;
    if (!(max > 0) || !isfinite(max))
        return -1;
    double floor_value = 1e-12 * max, total = 0;
    for (int i = 0; i < grid->strips; i++) {
        if (d[i] < floor_value)
            d[i] = floor_value;
        total += d[i];
    }
    double scale = 1.0 / (total * grid->width);
    for (int i = 0; i < grid->strips; i++)
        d[i] *= scale;
    return 0;
}

enum stats_method stats_method_resolve(enum stats_method method, size_t n, int strips)
{
    if (method != STATS_METHOD_AUTO)
        return method;
    return (double)n * strips <= STATS_AUTO_EXACT_WORK ? STATS_METHOD_EXACT : STATS_METHOD_BINNED;
}

int stats_density(const double *x, size_t n, double h, const struct stats_grid *grid,
                  enum stats_method method, double *out, char *err)
{
    if (n == 0 || !(h > 0)) {
        snprintf(err, STATS_ERR_LEN, "a density needs samples and a positive bandwidth");
        return -1;
    }
    memset(out, 0, sizeof(double) * (size_t)grid->strips);
    if (stats_method_resolve(method, n, grid->strips) == STATS_METHOD_EXACT) {
        stats_exact_add(x, n, h, grid, out);
    } else {
        struct stats_binned b;
        if (stats_binned_init(&b, grid, h, err))
            return -1;
        double *counts = malloc(sizeof(double) * b.nodes);
        double *outside = malloc(sizeof(double) * n);
        if (!counts || !outside) {
            free(counts);
            free(outside);
            stats_binned_free(&b);
            snprintf(err, STATS_ERR_LEN, "out of memory binning %zu samples", n);
            return -1;
        }
        size_t n_out = 0;
        stats_binned_bin(&b, STATS_BIN_CUBIC, x, n, counts, outside, &n_out);
        stats_binned_smooth(&b, counts, out, NULL, NULL);
        if (n_out)
            stats_exact_add(outside, n_out, h, grid, out);
        free(counts);
        free(outside);
        stats_binned_free(&b);
    }
    if (stats_floor_normalize(out, grid)) {
        snprintf(err, STATS_ERR_LEN, "the density is zero everywhere on the grid");
        return -1;
    }
    return 0;
}

double stats_kl_bits(const double *p, const double *q, const struct stats_grid *grid)
{
    double sum = 0;
    for (int i = 0; i < grid->strips; i++)
        sum += p[i] * log2(p[i] / q[i]);
    return sum * grid->width;
}

/* ---- similarity -------------------------------------------------------------- */

int stats_similarity_compute(const double *a, size_t na, const double *b, size_t nb,
                             const struct stats_kde_options *opt, struct stats_similarity *out,
                             char *err)
{
    memset(out, 0, sizeof *out);
    if (opt->log_scale) {
        /* The same computation on ln(values): KL is invariant under the
         * change of variable, only the estimator differs. */
        double *la = NULL, *lb = NULL;
        struct stats_kde_options linear = *opt;
        linear.log_scale = 0;
        int r = -1;
        if (!stats_log_copy(a, na, "A", &la, err) && !stats_log_copy(b, nb, "B", &lb, err))
            r = stats_similarity_compute(la, na, lb, nb, &linear, out, err);
        free(la);
        free(lb);
        return r;
    }
    double ha, hb;
    if (stats_bandwidth(a, na, opt, &ha, err) || stats_bandwidth(b, nb, opt, &hb, err))
        return -1;
    if (ha == 0 && hb == 0) {
        out->p = a[0] == b[0] ? 1.0 : 0.0;
        out->kl12 = out->kl21 = a[0] == b[0] ? 0.0 : INFINITY;
        out->note = a[0] == b[0] ? "both sets hold one repeated value, the same: identical"
                                 : "both sets hold one repeated value each, different: disjoint";
        return 0;
    }
    if (ha == 0) {
        ha = hb;
        out->note = "the first set has zero variance: it uses the second set's bandwidth";
    } else if (hb == 0) {
        hb = ha;
        out->note = "the second set has zero variance: it uses the first set's bandwidth";
    }
    out->h1 = ha;
    out->h2 = hb;
    double h = ha > hb ? ha : hb;
    if (stats_grid_for(a, na, b, nb, h, opt->strips, &out->grid, err))
        return -1;
    out->d1 = malloc(sizeof(double) * (size_t)opt->strips);
    out->d2 = malloc(sizeof(double) * (size_t)opt->strips);
    if (!out->d1 || !out->d2) {
        stats_similarity_free(out);
        snprintf(err, STATS_ERR_LEN, "out of memory for %d strips", opt->strips);
        return -1;
    }
    if (stats_density(a, na, ha, &out->grid, opt->method, out->d1, err) ||
        stats_density(b, nb, hb, &out->grid, opt->method, out->d2, err)) {
        stats_similarity_free(out);
        return -1;
    }
    out->method1 = stats_method_resolve(opt->method, na, opt->strips);
    out->method2 = stats_method_resolve(opt->method, nb, opt->strips);
    out->kl12 = stats_kl_bits(out->d1, out->d2, &out->grid);
    out->kl21 = stats_kl_bits(out->d2, out->d1, &out->grid);
    out->p = exp2(-out->kl12) * exp2(-out->kl21);
    return 0;
}

void stats_similarity_free(struct stats_similarity *s)
{
    free(s->d1);
    free(s->d2);
    s->d1 = s->d2 = NULL;
}

/* ---- small order statistics helpers ------------------------------------------- */

int stats_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double stats_quantile_sorted(const double *sorted, size_t n, double q)
{
    double pos = q * (double)(n - 1);
    size_t lo = (size_t)floor(pos);
    if (lo >= n - 1)
        return sorted[n - 1];
    double frac = pos - (double)lo;
    return sorted[lo] + frac * (sorted[lo + 1] - sorted[lo]);
}

double stats_select(double *a, size_t n, size_t k)
{
    size_t left = 0, right = n - 1;
    while (right > left) {
        double pivot = a[left + (right - left) / 2];
        size_t i = left, j = right;
        while (i <= j) {
            while (a[i] < pivot)
                i++;
            while (a[j] > pivot)
                j--;
            if (i <= j) {
                double t = a[i];
                a[i] = a[j];
                a[j] = t;
                i++;
                if (j == 0)
                    break;
                j--;
            }
        }
        if (k <= j)
            right = j;
        else if (k >= i)
            left = i;
        else
            return a[k];
    }
    return a[k];
}
