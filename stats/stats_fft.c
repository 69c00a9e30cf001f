/* stats_fft.c - an in-place iterative radix-2 complex FFT with precomputed
 * twiddles and bit-reversal permutation, for the binned KDE's convolution.
 * Sizes are powers of two; the caller owns the buffers. It never allocates
 * per transform (the bootstrap runs thousands of them). */
#include <math.h>
#include <stdlib.h>

#include "stats_internal.h"

int stats_fft_init(struct stats_fft *f, size_t n)
{
    f->n = n;
    f->cos_table = malloc(sizeof(double) * (n / 2 + 1));
    f->sin_table = malloc(sizeof(double) * (n / 2 + 1));
    f->bitrev = malloc(sizeof(size_t) * n);
    if (!f->cos_table || !f->sin_table || !f->bitrev) {
        stats_fft_free(f);
        return -1;
    }
    for (size_t k = 0; k < n / 2; k++) {
        double angle = -2.0 * M_PI * (double)k / (double)n;
        f->cos_table[k] = cos(angle);
        f->sin_table[k] = sin(angle);
    }
    int bits = 0;
    while (((size_t)1 << bits) < n)
        bits++;
    for (size_t i = 0; i < n; i++) {
        size_t r = 0;
        for (int b = 0; b < bits; b++)
            if (i & ((size_t)1 << b))
                r |= (size_t)1 << (bits - 1 - b);
        f->bitrev[i] = r;
    }
    return 0;
}

void stats_fft_free(struct stats_fft *f)
{
    free(f->cos_table);
    free(f->sin_table);
    free(f->bitrev);
    f->cos_table = f->sin_table = NULL;
    f->bitrev = NULL;
}

void stats_fft_run(const struct stats_fft *f, double *re, double *im, int inverse)
{
    size_t n = f->n;
    for (size_t i = 0; i < n; i++) {
        size_t j = f->bitrev[i];
        if (j > i) {
            double t = re[i];
            re[i] = re[j];
            re[j] = t;
            t = im[i];
            im[i] = im[j];
            im[j] = t;
        }
    }
    double sign = inverse ? -1.0 : 1.0;
    for (size_t len = 2; len <= n; len <<= 1) {
        size_t halflen = len / 2, step = n / len;
        for (size_t start = 0; start < n; start += len) {
            for (size_t k = 0; k < halflen; k++) {
                double wr = f->cos_table[k * step], wi = sign * f->sin_table[k * step];
                size_t a = start + k, b = a + halflen;
                double tr = re[b] * wr - im[b] * wi;
                double ti = re[b] * wi + im[b] * wr;
                re[b] = re[a] - tr;
                im[b] = im[a] - ti;
                re[a] += tr;
                im[a] += ti;
            }
        }
    }
}
