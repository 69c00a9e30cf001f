/* cpu_kernels.c - the single-thread benchmark kernels behind the CPU
 * scaling ratio (see cpu_kernels.h). Inputs are generated from fixed seeds
 * before the timed part; each kernel checks its own result so a broken
 * build cannot produce a fast, meaningless score.
 *
 * Must never: time input generation, or depend on anything but the seed. */
#include "cpu_kernels.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <zstd.h>

#include "cpuburn.h"

static _Thread_local char cpu_kernels_last_error[256];

const char *cpu_kernels_error(void)
{
    return cpu_kernels_last_error;
}

static uint64_t cpu_kernels_splitmix(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* ---------------------------------------------------------------- SHA-256 */

static const uint32_t sha256_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

static uint32_t sha256_rotr(uint32_t x, int n)
{
    return (x >> n) | (x << (32 - n));
}

static void sha256_block(uint32_t h[8], const uint8_t *p)
{
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = sha256_rotr(w[i - 15], 7) ^ sha256_rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = sha256_rotr(w[i - 2], 17) ^ sha256_rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t s1 = sha256_rotr(e, 6) ^ sha256_rotr(e, 11) ^ sha256_rotr(e, 25);
        uint32_t ch = (e & f) ^ (~e & g);
        uint32_t t1 = hh + s1 + ch + sha256_k[i] + w[i];
        uint32_t s0 = sha256_rotr(a, 2) ^ sha256_rotr(a, 13) ^ sha256_rotr(a, 22);
        uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
        uint32_t t2 = s0 + maj;
        hh = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
    h[5] += f;
    h[6] += g;
    h[7] += hh;
}

void cpu_kernels_sha256(const void *data, size_t len, uint8_t digest[32])
{
    uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                     0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    const uint8_t *p = data;
    size_t full = len / 64;
    for (size_t i = 0; i < full; i++)
        sha256_block(h, p + 64 * i);
    uint8_t tail[128];
    size_t rest = len - full * 64;
    memcpy(tail, p + full * 64, rest);
    tail[rest] = 0x80;
    size_t tail_len = rest + 1 + 8 <= 64 ? 64 : 128;
    memset(tail + rest + 1, 0, tail_len - rest - 1);
    uint64_t bits = (uint64_t)len * 8;
    for (int i = 0; i < 8; i++)
        tail[tail_len - 1 - i] = (uint8_t)(bits >> (8 * i));
    sha256_block(h, tail);
    if (tail_len == 128)
        sha256_block(h, tail + 64);
    for (int i = 0; i < 8; i++) {
        digest[4 * i] = (uint8_t)(h[i] >> 24);
        digest[4 * i + 1] = (uint8_t)(h[i] >> 16);
        digest[4 * i + 2] = (uint8_t)(h[i] >> 8);
        digest[4 * i + 3] = (uint8_t)h[i];
    }
}

/* ---------------------------------------------------------------- kernels */

/* Each kernel: prepare (untimed), then per round reset (untimed) and run
 * (timed), then check (untimed). Rounds are interleaved across kernels
 * (round r runs every kernel once) so a disturbance lasting a fraction of a
 * second - the other tier or a database starting next to `preplay record` -
 * hits one round of every kernel instead of every run of one kernel, and
 * the per-kernel median over rounds drops it. */
struct cpu_kernel_ctx {
    void *a, *b;
    size_t na, nb;
    double result;
};

struct cpu_kernel {
    const char *name;
    int (*prepare)(struct cpu_kernel_ctx *);
    void (*reset)(struct cpu_kernel_ctx *); /* restore the input; NULL if run keeps it */
    int (*run)(struct cpu_kernel_ctx *);
    int (*check)(struct cpu_kernel_ctx *, char *err, size_t errlen);
};

/* zstd level 3 on 16 MB of generated text: words drawn with a skewed
 * distribution from a generated vocabulary, so it compresses ~3x and the
 * match finder does real work. */
#define ZSTD_KERNEL_BYTES (16u << 20)

static int zstd_prepare(struct cpu_kernel_ctx *k)
{
    k->na = ZSTD_KERNEL_BYTES;
    k->a = malloc(k->na);
    k->nb = ZSTD_compressBound(k->na);
    k->b = malloc(k->nb);
    if (!k->a || !k->b)
        return -1;
    memset(k->b, 0, k->nb); /* fault the output pages in now, not while timed */
    char vocab[512][12];
    uint64_t s = 1;
    for (int i = 0; i < 512; i++) {
        int len = 2 + (int)(cpu_kernels_splitmix(&s) % 9);
        for (int j = 0; j < len; j++)
            vocab[i][j] = (char)('a' + cpu_kernels_splitmix(&s) % 26);
        vocab[i][len] = 0;
    }
    char *p = k->a;
    size_t at = 0;
    while (at < k->na) {
        uint64_t r = cpu_kernels_splitmix(&s);
        /* skewed: the product of two uniforms favours low indices */
        size_t w = (size_t)(((r & 0xffff) * ((r >> 16) & 0xffff)) >> 23) % 512;
        for (const char *c = vocab[w]; *c && at < k->na; c++)
            p[at++] = *c;
        if (at < k->na)
            p[at++] = (r >> 40) % 13 == 0 ? '\n' : ' ';
    }
    return 0;
}

static int zstd_run(struct cpu_kernel_ctx *k)
{
    size_t n = ZSTD_compress(k->b, k->nb, k->a, k->na, 3);
    if (ZSTD_isError(n))
        return -1;
    k->result = (double)n;
    return 0;
}

static int zstd_check(struct cpu_kernel_ctx *k, char *err, size_t errlen)
{
    size_t csize = (size_t)k->result;
    char *back = malloc(k->na);
    if (!back) {
        snprintf(err, errlen, "zstd kernel: out of memory");
        return -1;
    }
    size_t n = ZSTD_decompress(back, k->na, k->b, csize);
    int ok = !ZSTD_isError(n) && n == k->na && !memcmp(back, k->a, k->na);
    free(back);
    if (!ok || csize * 2 > k->na) {
        snprintf(err, errlen, "zstd kernel: round trip failed or ratio < 2 (%zu -> %zu bytes)",
                 k->na, csize);
        return -1;
    }
    return 0;
}

/* SHA-256 over 20 MB of generated bytes, in one call. */
#define SHA_KERNEL_BYTES (20u << 20)

static int sha_prepare(struct cpu_kernel_ctx *k)
{
    k->na = SHA_KERNEL_BYTES;
    k->a = malloc(k->na);
    k->b = malloc(32);
    if (!k->a || !k->b)
        return -1;
    uint64_t s = 2;
    for (size_t i = 0; i < k->na / 8; i++) {
        uint64_t v = cpu_kernels_splitmix(&s);
        memcpy((char *)k->a + 8 * i, &v, 8);
    }
    return 0;
}

static int sha_run(struct cpu_kernel_ctx *k)
{
    cpu_kernels_sha256(k->a, k->na, k->b);
    return 0;
}

static int sha_check(struct cpu_kernel_ctx *k, char *err, size_t errlen)
{
    /* The implementation must give the FIPS 180-2 digest of "abc". */
    static const uint8_t abc[32] = {0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea,
                                    0x41, 0x41, 0x40, 0xde, 0x5d, 0xae, 0x22, 0x23,
                                    0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17, 0x7a, 0x9c,
                                    0xb4, 0x10, 0xff, 0x61, 0xf2, 0x00, 0x15, 0xad};
    static const uint8_t zero[32];
    uint8_t d[32];
    cpu_kernels_sha256("abc", 3, d);
    if (memcmp(d, abc, 32) || !memcmp(k->b, zero, 32)) {
        snprintf(err, errlen, "sha256 kernel: wrong digest (of \"abc\" or all zero)");
        return -1;
    }
    return 0;
}

/* qsort of 700 k random ints through a comparison function. */
#define SORT_KERNEL_INTS 700000u

static int sort_prepare(struct cpu_kernel_ctx *k)
{
    k->na = SORT_KERNEL_INTS;
    k->a = malloc(k->na * sizeof(int));
    k->b = malloc(k->na * sizeof(int)); /* the pristine input */
    if (!k->a || !k->b)
        return -1;
    uint64_t s = 3;
    int *v = k->b;
    for (size_t i = 0; i < k->na; i++)
        v[i] = (int)(cpu_kernels_splitmix(&s) >> 33) - (1 << 30);
    return 0;
}

static void sort_reset(struct cpu_kernel_ctx *k)
{
    memcpy(k->a, k->b, k->na * sizeof(int));
}

static int sort_cmp(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static int sort_run(struct cpu_kernel_ctx *k)
{
    qsort(k->a, k->na, sizeof(int), sort_cmp);
    return 0;
}

static int sort_check(struct cpu_kernel_ctx *k, char *err, size_t errlen)
{
    const int *v = k->a;
    for (size_t i = 1; i < k->na; i++)
        if (v[i - 1] > v[i]) {
            snprintf(err, errlen, "qsort kernel: result not sorted at index %zu", i);
            return -1;
        }
    return 0;
}

/* N-body: 700 bodies, 40 leapfrog steps, softened gravity (sqrt and
 * division in the inner loop). The check is energy conservation. */
#define NBODY_N 700
#define NBODY_STEPS 40

struct nbody_state {
    double x[NBODY_N], y[NBODY_N], z[NBODY_N];
    double vx[NBODY_N], vy[NBODY_N], vz[NBODY_N], m[NBODY_N];
    double energy0;
};

static double nbody_energy(const struct nbody_state *s)
{
    double e = 0;
    for (int i = 0; i < NBODY_N; i++) {
        e += 0.5 * s->m[i] * (s->vx[i] * s->vx[i] + s->vy[i] * s->vy[i] + s->vz[i] * s->vz[i]);
        for (int j = i + 1; j < NBODY_N; j++) {
            double dx = s->x[i] - s->x[j], dy = s->y[i] - s->y[j], dz = s->z[i] - s->z[j];
            e -= s->m[i] * s->m[j] / sqrt(dx * dx + dy * dy + dz * dz + 0.01);
        }
    }
    return e;
}

static int nbody_prepare(struct cpu_kernel_ctx *k)
{
    struct nbody_state *s = calloc(1, sizeof *s);
    if (!s)
        return -1;
    k->a = s;
    uint64_t seed = 4;
    for (int i = 0; i < NBODY_N; i++) {
        double u[7];
        for (int j = 0; j < 7; j++)
            u[j] = (double)(cpu_kernels_splitmix(&seed) >> 11) / 9007199254740992.0;
        s->x[i] = u[0] * 2 - 1;
        s->y[i] = u[1] * 2 - 1;
        s->z[i] = u[2] * 2 - 1;
        s->vx[i] = (u[3] - 0.5) * 0.1;
        s->vy[i] = (u[4] - 0.5) * 0.1;
        s->vz[i] = (u[5] - 0.5) * 0.1;
        s->m[i] = (0.5 + u[6]) / NBODY_N;
    }
    s->energy0 = nbody_energy(s);
    k->b = malloc(sizeof *s); /* the pristine initial state */
    if (!k->b)
        return -1;
    memcpy(k->b, s, sizeof *s);
    return 0;
}

static void nbody_reset(struct cpu_kernel_ctx *k)
{
    memcpy(k->a, k->b, sizeof(struct nbody_state));
}

static int nbody_run(struct cpu_kernel_ctx *k)
{
    struct nbody_state *s = k->a;
    const double dt = 0.001;
    for (int step = 0; step < NBODY_STEPS; step++) {
        for (int i = 0; i < NBODY_N; i++) {
            double ax = 0, ay = 0, az = 0;
            for (int j = 0; j < NBODY_N; j++) {
                double dx = s->x[j] - s->x[i], dy = s->y[j] - s->y[i], dz = s->z[j] - s->z[i];
                double r2 = dx * dx + dy * dy + dz * dz + 0.01;
                double inv = s->m[j] / (r2 * sqrt(r2));
                ax += dx * inv;
                ay += dy * inv;
                az += dz * inv;
            }
            s->vx[i] += ax * dt;
            s->vy[i] += ay * dt;
            s->vz[i] += az * dt;
        }
        for (int i = 0; i < NBODY_N; i++) {
            s->x[i] += s->vx[i] * dt;
            s->y[i] += s->vy[i] * dt;
            s->z[i] += s->vz[i] * dt;
        }
    }
    return 0;
}

static int nbody_check(struct cpu_kernel_ctx *k, char *err, size_t errlen)
{
    struct nbody_state *s = k->a;
    double e = nbody_energy(s);
    double drift = fabs((e - s->energy0) / s->energy0);
    if (!isfinite(e) || drift > 0.01) {
        snprintf(err, errlen, "nbody kernel: energy drifted by %.3g (from %g to %g)", drift,
                 s->energy0, e);
        return -1;
    }
    return 0;
}

/* The replay's own burn (cpuburn_spin: a dependent multiply-add chain that
 * stays in registers) for a fixed number of iterations. It is not one of
 * the kernels averaged into the ratio (CPU_KERNELS_CHAIN, cpu_ratio.h): a
 * chain does not feel what other tenants do to caches and shared cores,
 * which is what it is kept for. The check skips the same linear
 * congruential generator ahead in O(log n) and compares. */
#define CHAIN_LOOPS 40000000ull
#define CHAIN_MULT 6364136223846793005ull
#define CHAIN_PLUS 1442695040888963407ull

static int chain_prepare(struct cpu_kernel_ctx *k)
{
    k->result = 0;
    return 0;
}

static int chain_run(struct cpu_kernel_ctx *k)
{
    uint64_t x = cpuburn_spin(CHAIN_LOOPS);
    memcpy(&k->result, &x, sizeof x);
    return 0;
}

static int chain_check(struct cpu_kernel_ctx *k, char *err, size_t errlen)
{
    uint64_t mult = 1, plus = 0, step_mult = CHAIN_MULT, step_plus = CHAIN_PLUS;
    for (uint64_t n = CHAIN_LOOPS; n; n >>= 1) {
        if (n & 1) {
            mult *= step_mult;
            plus = plus * step_mult + step_plus;
        }
        step_plus = (step_mult + 1) * step_plus;
        step_mult *= step_mult;
    }
    uint64_t want = mult * (CHAIN_LOOPS | 1) + plus, got;
    memcpy(&got, &k->result, sizeof got);
    if (got != want) {
        snprintf(err, errlen, "%s kernel: result %016llx, expected %016llx", CPU_KERNELS_CHAIN,
                 (unsigned long long)got, (unsigned long long)want);
        return -1;
    }
    return 0;
}

static const struct cpu_kernel cpu_kernels[CPU_KERNELS_COUNT] = {
    {"zstd3-compress", zstd_prepare, NULL, zstd_run, zstd_check},
    {"sha256", sha_prepare, NULL, sha_run, sha_check},
    {"qsort-int", sort_prepare, sort_reset, sort_run, sort_check},
    {"nbody-fp", nbody_prepare, nbody_reset, nbody_run, nbody_check},
    {CPU_KERNELS_CHAIN, chain_prepare, NULL, chain_run, chain_check},
};

static int cpu_kernels_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Context switches of the calling thread so far (voluntary and not). */
static uint64_t cpu_kernels_switches(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru))
        return 0;
    return (uint64_t)ru.ru_nvcsw + (uint64_t)ru.ru_nivcsw;
}

/* One timed run of a prepared kernel: its effective CPU ns (steal removed). */
static int cpu_kernels_time_one(const struct cpu_kernel *kern, struct cpu_kernel_ctx *k, int core,
                                uint64_t *ns, uint32_t *switches)
{
    if (kern->reset)
        kern->reset(k);
    uint64_t sw0 = cpu_kernels_switches();
    int64_t s0 = cpuburn_core_steal_ns(core);
    uint64_t w0 = cpuburn_wall_ns(), c0 = cpuburn_thread_cpu_ns();
    int failed = kern->run(k);
    uint64_t c1 = cpuburn_thread_cpu_ns(), w1 = cpuburn_wall_ns();
    int64_t s1 = cpuburn_core_steal_ns(core);
    uint64_t steal = s0 >= 0 && s1 > s0 ? (uint64_t)(s1 - s0) : 0;
    *ns = cpuburn_effective_cpu_ns(w1 - w0, c1 - c0, steal, cpuburn_steal_tick_ns(), NULL);
    *switches = (uint32_t)(cpu_kernels_switches() - sw0);
    return failed;
}

/* Runs the prepared kernels' rounds (interleaved or back to back) into
 * out->ns; the caller has pinned the thread to `core`. */
static int cpu_kernels_time_rounds(const struct cpu_kernels_options *opt, int core,
                                   struct cpu_kernel_ctx *ctx, struct cpu_kernels_sample *out,
                                   char *err, size_t errlen)
{
    int back_to_back = opt && opt->back_to_back;
    int nk = out->kernels, rounds = out->rounds;
    /* interleaved: round-major; back to back (the old way, kept for the
     * benchmark's baseline): kernel-major */
    for (int outer = 0; outer < (back_to_back ? nk : rounds); outer++)
        for (int inner = 0; inner < (back_to_back ? rounds : nk); inner++) {
            int i = back_to_back ? outer : inner;
            int r = back_to_back ? inner : outer;
            if (cpu_kernels_time_one(&cpu_kernels[i], &ctx[i], core, &out->ns[i][r],
                                     &out->switches[i][r])) {
                snprintf(err, errlen, "%s kernel: failed to run", cpu_kernels[i].name);
                return -1;
            }
        }
    for (int i = 0; i < nk; i++)
        if (cpu_kernels[i].check(&ctx[i], err, errlen))
            return -1;
    return 0;
}

int cpu_kernels_sample(const struct cpu_kernels_options *opt, uint32_t max,
                       struct cpu_kernels_sample *out, char *err, size_t errlen)
{
    int rounds = opt && opt->rounds > 0 ? opt->rounds : CPU_KERNELS_ROUNDS;
    if (rounds > CPU_KERNELS_MAX_ROUNDS)
        rounds = CPU_KERNELS_MAX_ROUNDS;
    memset(out, 0, sizeof *out);
    out->kernels = (int)(max < CPU_KERNELS_COUNT ? max : CPU_KERNELS_COUNT);
    out->rounds = rounds;
    struct cpu_kernel_ctx ctx[CPU_KERNELS_COUNT];
    memset(ctx, 0, sizeof ctx);
    struct cpuburn_affinity saved;
    int core = cpuburn_pin(opt ? opt->cpu : -1, &saved);
    if (core < 0) {
        snprintf(err, errlen, "cannot pin to CPU %d: %s", opt ? opt->cpu : -1, strerror(errno));
        return -1;
    }
    int rc = -1;
    for (int i = 0; i < out->kernels; i++) {
        snprintf(out->names[i], sizeof out->names[i], "%s", cpu_kernels[i].name);
        if (cpu_kernels[i].prepare(&ctx[i])) {
            snprintf(err, errlen, "%s kernel: out of memory preparing its input",
                     cpu_kernels[i].name);
            goto out;
        }
    }
    rc = cpu_kernels_time_rounds(opt, core, ctx, out, err, errlen);
out:
    for (int i = 0; i < out->kernels; i++) {
        free(ctx[i].a);
        free(ctx[i].b);
    }
    cpuburn_unpin(&saved);
    return rc;
}

int cpu_kernels_run_opts(const struct cpu_kernels_options *opt, struct trace_cpu_score *out,
                         uint32_t max, char *err, size_t errlen)
{
    struct cpu_kernels_sample s;
    if (cpu_kernels_sample(opt, max, &s, err, errlen))
        return -1;
    int use_min = opt && opt->statistic == CPU_KERNELS_MIN;
    for (int i = 0; i < s.kernels; i++) {
        uint64_t *t = s.ns[i];
        int rounds = s.rounds;
        qsort(t, (size_t)rounds, sizeof t[0], cpu_kernels_cmp_u64);
        double ns = use_min      ? (double)t[0]
                    : rounds % 2 ? (double)t[rounds / 2]
                                 : ((double)t[rounds / 2 - 1] + (double)t[rounds / 2]) / 2;
        memset(&out[i], 0, sizeof out[i]);
        snprintf(out[i].name, sizeof out[i].name, "%s", s.names[i]);
        out[i].seconds = ns / 1e9;
    }
    return s.kernels;
}

int cpu_kernels_run_on(int cpu, struct trace_cpu_score *out, uint32_t max, char *err, size_t errlen)
{
    struct cpu_kernels_options opt = {.cpu = cpu, .rounds = CPU_KERNELS_ROUNDS};
    return cpu_kernels_run_opts(&opt, out, max, err, errlen);
}

int cpu_kernels_run(struct trace_cpu_score *out, uint32_t max)
{
    cpu_kernels_last_error[0] = 0;
    return cpu_kernels_run_on(-1, out, max, cpu_kernels_last_error, sizeof cpu_kernels_last_error);
}

double cpu_kernels_ratio(const struct trace_cpu_score *recorded, uint32_t n,
                         const struct trace_cpu_score *target, uint32_t m)
{
    double log_sum = 0;
    uint32_t used = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (!(recorded[i].seconds > 0) || !isfinite(recorded[i].seconds) ||
            !strncmp(recorded[i].name, CPU_KERNELS_CHAIN, sizeof recorded[i].name))
            continue;
        for (uint32_t j = 0; j < m; j++) {
            if (strncmp(recorded[i].name, target[j].name, sizeof recorded[i].name))
                continue;
            if (target[j].seconds > 0 && isfinite(target[j].seconds)) {
                log_sum += log(target[j].seconds / recorded[i].seconds);
                used++;
            }
            break;
        }
    }
    return used ? exp(log_sum / used) : NAN;
}
