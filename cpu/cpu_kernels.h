/* cpu_kernels.h - a fixed set of single-thread CPU benchmark kernels
 * (compression, hashing, sorting, floating point) whose thread-CPU times
 * characterize a machine's single-thread speed. `preplay record` stores
 * them in every trace header; the replayer runs them on the target and
 * scales recorded CPU events by the geometric mean of the per-kernel time
 * ratios (CloudProphet §3.1.1, "single-thread performance ratio").
 *
 * Every kernel does a fixed amount of work on a fixed, generated input, so
 * scores from different machines are comparable. A round runs every kernel
 * once (~60-80 ms each on an idle development VM) in the thread's CPU time
 * on one pinned core, with that core's steal handled as in cpuburn
 * (cpuburn_effective_cpu_ns); cpu_kernels_sample keeps every round. A score
 * of cpu_kernels_run is the median of CPU_KERNELS_ROUNDS rounds (~1.4 s for
 * the set) and cpu_kernels_ratio their equal-weight ratio; cpu_ratio.h
 * builds the ratio with its uncertainty from the rounds instead.
 * tests/bench/replayer/bench_cpu_ratio.c measures the spread of both on one
 * machine.
 *
 * Must never: change the kernels' work or inputs without renaming them
 * (old traces would be compared against different work). */
#ifndef PREPLAY_CPU_KERNELS_H
#define PREPLAY_CPU_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "trace_file.h" /* struct trace_cpu_score */

#define CPU_KERNELS_COUNT 5
/* The last "kernel" is the replay's burn loop itself, run as fixed work:
 * timed with the others, never averaged into a ratio with them (cpu_ratio.h
 * says when it sets the ratio alone). */
#define CPU_KERNELS_CHAIN "burn-chain"
#define CPU_KERNELS_ROUNDS 5      /* default rounds per score set */
#define CPU_KERNELS_MAX_ROUNDS 63 /* cap on rounds per sample (and pool) */

enum cpu_kernels_statistic { CPU_KERNELS_MEDIAN = 0, CPU_KERNELS_MIN = 1 };

struct cpu_kernels_options {
    int cpu;          /* core to pin to; < 0 = the current one */
    int rounds;       /* <= 0: CPU_KERNELS_ROUNDS */
    int statistic;    /* enum cpu_kernels_statistic over the rounds */
    int back_to_back; /* run each kernel's rounds in a row (the pre-rounds
                       * method, kept as the benchmark's baseline) instead of
                       * interleaving rounds across kernels */
};

/* Every timed round of every kernel: ns[k][r] is kernel k's effective CPU
 * time (steal removed) in round r, switches[k][r] how often the thread was
 * switched out meanwhile. */
struct cpu_kernels_sample {
    int kernels, rounds;
    char names[CPU_KERNELS_COUNT][24];
    uint64_t ns[CPU_KERNELS_COUNT][CPU_KERNELS_MAX_ROUNDS];
    uint32_t switches[CPU_KERNELS_COUNT][CPU_KERNELS_MAX_ROUNDS]; /* context switches */
};

/* Runs the kernels as `opt` says (NULL: defaults), the first min(max,
 * CPU_KERNELS_COUNT) of them, pinned to one core (affinity restored
 * afterwards), and keeps every round's time. Returns 0, or -1 with the
 * reason in err. */
int cpu_kernels_sample(const struct cpu_kernels_options *opt, uint32_t max,
                       struct cpu_kernels_sample *out, char *err, size_t errlen);

/* Scores every kernel as `opt` says (NULL: defaults), pinned to one core
 * (affinity restored afterwards). Returns the number of scores written, or
 * -1 with the reason in err. */
int cpu_kernels_run_opts(const struct cpu_kernels_options *opt, struct trace_cpu_score *out,
                         uint32_t max, char *err, size_t errlen);
/* Scores every kernel (median of CPU_KERNELS_ROUNDS interleaved rounds),
 * pinned to the core the thread is on (affinity is restored afterwards),
 * and fills out[0..min(max, CPU_KERNELS_COUNT)).
 * Returns the number of scores written, or -1 if a kernel failed its own
 * result check or could not run (reason from cpu_kernels_error()). */
int cpu_kernels_run(struct trace_cpu_score *out, uint32_t max);
/* Same on a chosen core (cpu < 0: the current one), reason into err. */
int cpu_kernels_run_on(int cpu, struct trace_cpu_score *out, uint32_t max, char *err,
                       size_t errlen);
const char *cpu_kernels_error(void);

/* The CPU scaling ratio: geometric mean over kernels present in both sets
 * (matched by name; the chain, non-positive or non-finite times skipped) of
 * target.seconds / recorded.seconds. > 1 means the target is slower, so a
 * recorded CPU event of d ns is replayed as d * ratio. NAN when the sets
 * have no usable kernel in common. */
double cpu_kernels_ratio(const struct trace_cpu_score *recorded, uint32_t n,
                         const struct trace_cpu_score *target, uint32_t m);

/* SHA-256 as used by the hashing kernel (exposed for its test vectors). */
void cpu_kernels_sha256(const void *data, size_t len, uint8_t digest[32]);

#endif
