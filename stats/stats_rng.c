/* stats_rng.c - the statistics library's only source of randomness:
 * xoshiro256** seeded through splitmix64, so a seed gives the same bootstrap
 * on every machine. Poisson and normal variates for the bootstrap and the
 * tests. Never reads the clock or /dev/urandom: reproducibility first. */
#include <math.h>

#include "stats_internal.h"

static uint64_t stats_splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void stats_rng_seed(struct stats_rng *r, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++)
        r->s[i] = stats_splitmix64(&x);
}

static inline uint64_t stats_rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t stats_rng_next(struct stats_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = stats_rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = stats_rotl(s[3], 45);
    return result;
}

double stats_rng_uniform(struct stats_rng *r)
{
    return (double)(stats_rng_next(r) >> 11) * 0x1.0p-53;
}

size_t stats_rng_index(struct stats_rng *r, size_t n)
{
    /* Lemire's multiply-shift with rejection: unbiased for any n. */
    uint64_t x = stats_rng_next(r);
    __uint128_t m = (__uint128_t)x * n;
    uint64_t low = (uint64_t)m;
    if (low < n) {
        uint64_t threshold = -(uint64_t)n % n;
        while (low < threshold) {
            x = stats_rng_next(r);
            m = (__uint128_t)x * n;
            low = (uint64_t)m;
        }
    }
    return (size_t)(m >> 64);
}

double stats_rng_normal(struct stats_rng *r)
{
    double u1 = stats_rng_uniform(r), u2 = stats_rng_uniform(r);
    if (u1 <= 0)
        u1 = 0x1.0p-53;
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

/* Poisson: multiplication (inversion) for small means, Hormann's PTRS
 * transformed rejection for lambda >= 10 (the same algorithm numpy uses). */
double stats_rng_poisson(struct stats_rng *r, double lambda)
{
    if (lambda <= 0)
        return 0;
    if (lambda < 10) {
        double limit = exp(-lambda), prod = stats_rng_uniform(r);
        double k = 0;
        while (prod > limit) {
            prod *= stats_rng_uniform(r);
            k += 1;
        }
        return k;
    }
    double slam = sqrt(lambda), loglam = log(lambda);
    double b = 0.931 + 2.53 * slam;
    double a = -0.059 + 0.02483 * b;
    double invalpha = 1.1239 + 1.1328 / (b - 3.4);
    double vr = 0.9277 - 3.6224 / (b - 2);
    for (;;) {
        double u = stats_rng_uniform(r) - 0.5;
        double v = stats_rng_uniform(r);
        double us = 0.5 - fabs(u);
        double k = floor((2 * a / us + b) * u + lambda + 0.43);
        if (us >= 0.07 && v <= vr)
            return k;
        if (k < 0 || (us < 0.013 && v > us))
            continue;
        if (log(v) + log(invalpha) - log(a / (us * us) + b) <= -lambda + k * loglam - lgamma(k + 1))
            return k;
    }
}
