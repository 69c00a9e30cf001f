/* bench_cpu_ratio.c - the CPU scaling ratio of one machine to itself
 * (ideal: exactly 1.0), the way `preplay record` and `preplay run` measure
 * it, before and after cpu_ratio.h:
 *   before: each side the median of CPU_KERNELS_ROUNDS (5) interleaved
 *           rounds per kernel, cpu_kernels_ratio (equal-weight geometric
 *           mean);
 *   now:    each side cpu_ratio_measure (CPU_RATIO_ROUNDS rounds, lower
 *           quantile and its error per kernel), the recording's list as
 *           cpu_ratio_header_scores writes it, cpu_ratio_estimate.
 *
 *   bench_cpu_ratio [--pairs N] [--quick]   N record/target pairs in this
 *       process; prints min / median / max, how many within +-3% and how
 *       often the 95% interval holds 1, with the load average; exits 1 when
 *       a ratio of the current method is off by more than 3% (--quick: one
 *       pair of full sets, 3-round sets under a sanitizer; fails only on a
 *       broken ratio or interval, or one off by more than 10% when not
 *       built with a sanitizer)
 *   bench_cpu_ratio record FILE   score this machine as a recording would
 *   bench_cpu_ratio target FILE   score it as a target against FILE and
 *       print "before R now R lo LO hi HI basis chain|kernels
 *       kernels-ratio K  kernels NAME T/R+-SE..." (now: the chain's on the
 *       same CPU, K the four kernels' beside it; the
 *       per-kernel ratios of the current scores; run-cpu-ratio-bench runs
 *       this inside tools/emulate)
 *   bench_cpu_ratio target FILE POOL ROUNDS   the current method only, with
 *       ROUNDS more rounds pooled with those kept in the file POOL (a
 *       target re-measured between intervals; before prints nan)
 *
 * Must never: be a timed unit test (ctest runs --quick only). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_sanitizer.h"
#include "cpu_kernels.h"
#include "cpu_ratio.h"

#define BENCH_MAX_PAIRS 100

/* Under a sanitizer (BENCH_SANITIZED) the kernels' times say nothing about
 * the CPU (ASan's quarantine hands zstd fresh pages on every call): --quick
 * then checks only that the ratio and its interval are well formed. */

/* One side's scores by both methods. */
struct bench_side {
    struct trace_cpu_score before[CPU_KERNELS_COUNT];
    int nbefore;
    struct trace_cpu_score now[TRACE_MAX_CPU_SCORES]; /* header list */
    int nnow;
    struct cpu_ratio_scores scores;
};

struct bench_result {
    double before, now, lo, hi;
    double kernels; /* the four kernels' ratio (now, when the basis is the chain) */
    int basis;      /* enum cpu_ratio_basis of now */
};

static int bench_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Scores this machine: the current method in `rounds` rounds, and the
 * before method too when with_before. */
static int bench_measure(struct bench_side *s, int rounds, int with_before)
{
    char err[256];
    memset(s, 0, sizeof *s);
    if (with_before) {
        s->nbefore = cpu_kernels_run_on(-1, s->before, CPU_KERNELS_COUNT, err, sizeof err);
        if (s->nbefore != CPU_KERNELS_COUNT)
            goto fail;
    }
    if (cpu_ratio_measure_here(-1, rounds, &s->scores, err, sizeof err))
        goto fail;
    s->nnow = (int)cpu_ratio_header_scores(&s->scores, s->now, TRACE_MAX_CPU_SCORES);
    return 0;
fail:
    fprintf(stderr, "bench_cpu_ratio: kernels failed: %s\n", err);
    return -1;
}

static void bench_compare(const struct bench_side *rec, const struct bench_side *tgt,
                          struct bench_result *out)
{
    struct cpu_ratio_estimate est;
    out->before = rec->nbefore ? cpu_kernels_ratio(rec->before, (uint32_t)rec->nbefore, tgt->before,
                                                   (uint32_t)tgt->nbefore)
                               : NAN;
    cpu_ratio_estimate(rec->now, (uint32_t)rec->nnow, &tgt->scores, &est);
    out->now = est.ratio;
    out->lo = est.lo;
    out->hi = est.hi;
    out->kernels = est.kernels_ratio;
    out->basis = est.basis;
}

/* Prints one method's line; returns how many ratios are within +-3%. */
static int bench_report(const char *name, double *r, int n, int covered)
{
    int within = 0;
    for (int i = 0; i < n; i++)
        within += fabs(r[i] - 1) <= 0.03;
    qsort(r, (size_t)n, sizeof *r, bench_cmp);
    double med = n % 2 ? r[n / 2] : (r[n / 2 - 1] + r[n / 2]) / 2;
    printf("  %-34s min %.3f  median %.3f  max %.3f  within +-3%% %2d/%d", name, r[0], med,
           r[n - 1], within, n);
    if (covered >= 0)
        printf("  95%% interval holds 1: %d/%d", covered, n);
    printf("\n");
    return within;
}

static int bench_pairs(int pairs, int quick)
{
    static struct bench_result res[BENCH_MAX_PAIRS];
    double before[BENCH_MAX_PAIRS], now[BENCH_MAX_PAIRS], kernels[BENCH_MAX_PAIRS], load[3] = {0};
    /* --quick holds the ratio to 10%, so it measures as record and run do
     * (CPU_RATIO_ROUNDS rounds a side, ~7 s): with 3 rounds a kernel whose
     * rounds happened to agree took nearly all the weight, and one
     * clean-clone check got 0.688 on an idle machine. Sanitized builds only
     * check the form, and keep 3. */
    int rounds = quick && BENCH_SANITIZED ? 3 : CPU_RATIO_ROUNDS, covered = 0, status = 0;
    for (int p = 0; p < pairs; p++) {
        struct bench_side rec, tgt;
        if (bench_measure(&rec, rounds, !quick) || bench_measure(&tgt, rounds, !quick))
            return 1;
        bench_compare(&rec, &tgt, &res[p]);
        before[p] = res[p].before;
        now[p] = res[p].now;
        kernels[p] = res[p].kernels;
        covered += res[p].lo <= 1 && 1 <= res[p].hi;
        if (!(res[p].now > 0) || !isfinite(res[p].now) || !(res[p].lo <= res[p].now) ||
            !(res[p].now <= res[p].hi)) {
            fprintf(stderr, "bench_cpu_ratio: pair %d: ratio %g, interval [%g, %g] is broken\n", p,
                    res[p].now, res[p].lo, res[p].hi);
            status = 1;
        }
    }
    getloadavg(load, 3);
    printf("CPU ratio of this machine to itself, %d pairs, load average %.2f %.2f %.2f:\n", pairs,
           load[0], load[1], load[2]);
    if (!quick)
        bench_report("before: median of 5, equal weights", before, pairs, -1);
    int within = bench_report(res[0].basis == CPU_RATIO_BASIS_CHAIN
                                  ? "now: cpu_ratio_estimate (same CPU: chain)"
                                  : "now: cpu_ratio_estimate (kernels)",
                              now, pairs, covered);
    if (res[0].basis == CPU_RATIO_BASIS_CHAIN)
        bench_report("  the four kernels beside it", kernels, pairs, -1);
    if (quick && !BENCH_SANITIZED && fabs(now[0] - 1) > 0.10) {
        fprintf(stderr, "bench_cpu_ratio: ratio %.3f is off by more than 10%%\n", now[0]);
        status = 1;
    }
    if (!quick)
        printf("verdict: %s (%d of %d within +-3%%)\n", within == pairs ? "PASS" : "FAIL", within,
               pairs);
    return status || (!quick && within != pairs);
}

static int bench_record(const char *path)
{
    struct bench_side s;
    if (bench_measure(&s, CPU_RATIO_ROUNDS, 1))
        return 1;
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        return 1;
    }
    for (int i = 0; i < s.nbefore; i++)
        fprintf(f, "before %s %.9g\n", s.before[i].name, s.before[i].seconds);
    for (int i = 0; i < s.nnow; i++)
        fprintf(f, "now %s %.9g\n", s.now[i].name, s.now[i].seconds);
    return fclose(f) ? 1 : 0;
}

static int bench_load(const char *path, struct bench_side *s)
{
    char method[16], name[64];
    double sec;
    FILE *f = fopen(path, "r");
    if (!f) {
        perror(path);
        return -1;
    }
    memset(s, 0, sizeof *s);
    while (fscanf(f, "%15s %63s %lf", method, name, &sec) == 3) {
        int now = !strcmp(method, "now");
        struct trace_cpu_score *e = now ? &s->now[s->nnow] : &s->before[s->nbefore];
        if ((now ? s->nnow : s->nbefore) >= (now ? TRACE_MAX_CPU_SCORES : CPU_KERNELS_COUNT))
            break;
        snprintf(e->name, sizeof e->name, "%s", name);
        e->seconds = sec;
        *(now ? &s->nnow : &s->nbefore) += 1;
    }
    fclose(f);
    return 0;
}

static void bench_print_target(const struct bench_side *rec, const struct bench_side *tgt)
{
    struct bench_result r;
    bench_compare(rec, tgt, &r);
    printf("before %.4f now %.4f lo %.4f hi %.4f basis %s kernels-ratio %.4f  kernels", r.before,
           r.now, r.lo, r.hi, r.basis == CPU_RATIO_BASIS_CHAIN ? "chain" : "kernels", r.kernels);
    for (int k = 0; k < tgt->scores.n && k < rec->nnow; k++) /* target / recorded, +- error */
        printf(" %s %.3f+-%.3f", tgt->scores.name[k], tgt->scores.seconds[k] / rec->now[k].seconds,
               tgt->scores.log_se[k]);
    printf("\n");
}

static int bench_target(const char *path)
{
    struct bench_side rec, tgt;
    if (bench_load(path, &rec) || bench_measure(&tgt, CPU_RATIO_ROUNDS, 1))
        return 1;
    bench_print_target(&rec, &tgt);
    return 0;
}

/* The current method only, `rounds` more rounds pooled with those kept in
 * pool_path (created on first use): a target re-measured over time. */
static int bench_target_pooled(const char *path, const char *pool_path, int rounds)
{
    struct bench_side rec, tgt;
    struct cpu_kernels_sample pool;
    char err[256];
    memset(&pool, 0, sizeof pool);
    memset(&tgt, 0, sizeof tgt);
    if (bench_load(path, &rec))
        return 1;
    FILE *f = fopen(pool_path, "rb");
    if (f) {
        if (fread(&pool, sizeof pool, 1, f) != 1)
            memset(&pool, 0, sizeof pool);
        fclose(f);
    }
    if (cpu_ratio_measure(-1, rounds, &pool, err, sizeof err)) {
        fprintf(stderr, "bench_cpu_ratio: kernels failed: %s\n", err);
        return 1;
    }
    if (!(f = fopen(pool_path, "wb")) || fwrite(&pool, sizeof pool, 1, f) != 1) {
        perror(pool_path);
        if (f)
            fclose(f);
        return 1;
    }
    fclose(f);
    cpu_ratio_scores_of(&pool, &tgt.scores);
    cpu_ratio_identify(&tgt.scores);
    rec.nbefore = 0; /* no before: it has no pooled form */
    bench_print_target(&rec, &tgt);
    return 0;
}

int main(int argc, char **argv)
{
    int pairs = 10, quick = 0;
    if (argc == 3 && !strcmp(argv[1], "record"))
        return bench_record(argv[2]);
    if (argc == 3 && !strcmp(argv[1], "target"))
        return bench_target(argv[2]);
    if (argc == 5 && !strcmp(argv[1], "target"))
        return bench_target_pooled(argv[2], argv[3], atoi(argv[4]));
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--pairs") && i + 1 < argc)
            pairs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else {
            fprintf(stderr, "usage: bench_cpu_ratio [--pairs N] [--quick] | record FILE | "
                            "target FILE [POOL ROUNDS]\n");
            return 2;
        }
    }
    if (quick)
        pairs = 1;
    if (pairs < 1 || pairs > BENCH_MAX_PAIRS) {
        fprintf(stderr, "bench_cpu_ratio: --pairs must be 1..%d\n", BENCH_MAX_PAIRS);
        return 2;
    }
    return bench_pairs(pairs, quick);
}
