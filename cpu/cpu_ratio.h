/* cpu_ratio.h - the CPU scaling ratio between the recording host and this
 * machine, with its uncertainty. Both sides run the benchmark kernels of
 * cpu_kernels.h in CPU_RATIO_ROUNDS interleaved rounds; a side's score per
 * kernel is a low quantile (CPU_RATIO_QUANTILE: the second fastest of 11)
 * of its rounds and comes with the standard error of its logarithm. The
 * ratio is the precision-weighted geometric mean over kernels of target
 * score / recorded score, and its 95% interval widens when the kernels
 * disagree more than their own errors explain.
 *
 * Why (measured on a shared 2-core VM, docs/preplay-calibrate.md): between
 * two measurements of one machine the memory-bound zstd kernel moved by
 * 0.60-1.68x with what the neighbours did to the shared caches and memory,
 * the compute kernels by 0.94-1.08x; an equal-weight mean of medians
 * carried zstd's swings into every ratio. In heavy phases every kernel runs
 * 20-100% slower for minutes (a register-only loop does not). Contention
 * only adds time, so a low quantile is the steadier score of a kernel: the
 * minimum is steadier still, but one round timed short by a clock or steal
 * glitch would own it.
 *
 * The same CPU on both sides (trace format 2.6): the kernels' phases are
 * contention, not hardware - other tenants slowed every kernel by 15-25%
 * for seconds to minutes on the shared 2-core VM while the replay's own
 * burn loop (CPU_KERNELS_CHAIN, a dependent chain in registers) stayed
 * within 2%. When both sides carry the same CPU identity (vendor, family,
 * model, stepping, model name from /proc/cpuinfo) the per-core speed can
 * only differ by clock frequency, which the chain measures exactly; the
 * ratio is then the chain's (basis CPU_RATIO_BASIS_CHAIN), and the
 * kernels' ratio is kept beside it. Different or unknown CPUs: the
 * kernels' ratio, as before.
 *
 * The trace header keeps its format: a recording stores the kernel scores
 * (the chain among them), one "<kernel>~se" entry per kernel whose seconds
 * are the score's standard error, and one "cpu-id:<16 hex>" entry (seconds
 * 0) naming the CPU. A recording without errors (older traces) borrows the
 * target's for its side; one without the chain or identity gets the
 * kernels' ratio.
 *
 * Must never: print, exit, or change the kernels' work (cpu_kernels.h). */
#ifndef PREPLAY_CPU_RATIO_H
#define PREPLAY_CPU_RATIO_H

#include <stddef.h>
#include <stdint.h>

#include "cpu_kernels.h"
#include "trace_file.h" /* struct trace_cpu_score */

#define CPU_RATIO_ROUNDS 11       /* rounds per side (~3.5 s of CPU) */
#define CPU_RATIO_QUANTILE 0.1    /* a side's score: this quantile of its rounds */
#define CPU_RATIO_SE_SUFFIX "~se" /* header entry "<kernel>~se": a score's error */
#define CPU_RATIO_SE_FLOOR 0.002  /* least log error of one kernel's score */
#define CPU_RATIO_UNKNOWN_SE 0.05 /* log error of a score from < 3 rounds */
/* Log drift between two measurements that the rounds of one cannot show. */
#define CPU_RATIO_DRIFT 0.003

#define CPU_RATIO_ID_PREFIX "cpu-id:" /* header entry naming the CPU */
/* Log drift of the chain's ratio between two measurements of one machine
 * that the rounds of one cannot show: 19 measurements over 3 minutes on
 * the shared VM had a log standard deviation of 0.0097 each (the kernels'
 * 0.081), so sqrt(2) x 0.0097 between two (docs/preplay-calibrate.md). */
#define CPU_RATIO_CHAIN_DRIFT 0.0137

enum cpu_ratio_basis {
    CPU_RATIO_BASIS_KERNELS = 0, /* geometric mean of the kernels */
    CPU_RATIO_BASIS_CHAIN = 1,   /* same CPU: the burn chain alone */
};

/* One machine's kernel scores: CPU_RATIO_QUANTILE of the rounds (seconds)
 * and the standard error of its natural log; cpu_id its identity entry's
 * name ("" unknown: cpu_ratio_identify fills it). */
struct cpu_ratio_scores {
    int n;
    int rounds;
    char name[CPU_KERNELS_COUNT][24];
    double seconds[CPU_KERNELS_COUNT];
    double log_se[CPU_KERNELS_COUNT];
    char cpu_id[24];
};

struct cpu_ratio_estimate {
    double ratio;    /* target / recorded, > 1: this machine is slower; NAN: none */
    double lo, hi;   /* 95% interval of the ratio */
    double log_se;   /* standard error of log(ratio) behind the interval */
    double spread;   /* disagreement of the kernels (Birge ratio, >= 1) */
    int kernels;     /* kernels in common (the chain not counted) */
    int recorded_se; /* 1: the recording carried its errors; 0: borrowed */
    int basis;       /* enum cpu_ratio_basis */
    /* The kernels' own ratio and interval (NAN: none in common); with
     * basis CHAIN the check beside the chain's. */
    double kernels_ratio, kernels_lo, kernels_hi;
};

/* Runs `rounds` more interleaved rounds (<= 0: CPU_RATIO_ROUNDS) of every
 * kernel pinned to `cpu` (< 0: the current core) and appends them to
 * *pool (zeroed before the first call). Re-measuring between replay
 * intervals into the same pool narrows the target's error. Rounds beyond
 * CPU_KERNELS_MAX_ROUNDS are not kept. Returns 0, or -1 with the reason. */
int cpu_ratio_measure(int cpu, int rounds, struct cpu_kernels_sample *pool, char *err,
                      size_t errlen);

/* This machine as `record` and `run` score it: `rounds` (<= 0:
 * CPU_RATIO_ROUNDS) interleaved rounds pinned to `cpu` (< 0: the current
 * core), their scores, and the CPU's identity. 0, or -1 with the reason. */
int cpu_ratio_measure_here(int cpu, int rounds, struct cpu_ratio_scores *out, char *err,
                           size_t errlen);

/* Scores of a pool of rounds (pure). */
void cpu_ratio_scores_of(const struct cpu_kernels_sample *pool, struct cpu_ratio_scores *out);

/* This machine's CPU identity entry name into s->cpu_id ("" when
 * /proc/cpuinfo says too little), and the same from a cpuinfo text
 * (pure; FNV-1a 64 of vendor_id, cpu family, model, stepping and model
 * name of the first processor). */
void cpu_ratio_identify(struct cpu_ratio_scores *s);
void cpu_ratio_identity_of(const char *cpuinfo, char out[24]);

/* The trace header's list for these scores: the scores, then (room
 * permitting) their "<kernel>~se" entries, then the identity entry when
 * s->cpu_id is set. Returns the entries written. */
uint32_t cpu_ratio_header_scores(const struct cpu_ratio_scores *s, struct trace_cpu_score *out,
                                 uint32_t max);

/* What `preplay record` stores: measures this machine (current core,
 * CPU_RATIO_ROUNDS), identifies its CPU and fills the header list.
 * Returns the entries written, or -1 with the reason in err. */
int cpu_ratio_record(struct trace_cpu_score *out, uint32_t max, char *err, size_t errlen);

/* The ratio of `target` to a recorded header list (pure): the chain's
 * when both carry it and the same cpu-id, else the kernels'. Returns
 * non-zero when it estimated one (0: nothing in common, est->ratio NAN). */
int cpu_ratio_estimate(const struct trace_cpu_score *recorded, uint32_t n,
                       const struct cpu_ratio_scores *target, struct cpu_ratio_estimate *est);

/* The ratios a measurement may give: a core 20 times slower or faster
 * than the recording host's is no instance type but damaged or hostile
 * scores in the plan (every burn would be scaled by it). */
#define CPU_RATIO_MIN 0.05
#define CPU_RATIO_MAX 20.0

/* The p-quantile of v[0..n) (sorted in place; linear interpolation; NAN
 * for n <= 0), and the robust standard deviation (1.4826 x median absolute
 * deviation) of v[0..n) (order kept). Exposed for the unit tests. */
double cpu_ratio_quantile(double *v, int n, double p);
double cpu_ratio_robust_sd(const double *v, int n);

#endif
