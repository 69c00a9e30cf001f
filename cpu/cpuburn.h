/* cpuburn.h - the replayer's calibrated CPU burn: a busy loop whose rate is
 * measured in nanoseconds of the thread's CPU clock, so a replayed CPU event
 * consumes the recorded CPU time however long that takes in wall time (a
 * CFS quota or hypervisor steal shows up as waiting, not as a slower CPU).
 *
 * Calibration pins the calling thread to one core, runs the loop in several
 * rounds, and reads CLOCK_THREAD_CPUTIME_ID and that core's steal counter
 * from /proc/stat around each round (CloudProphet §4). Whether the kernel
 * already leaves steal out of the thread CPU clock is decided by comparing
 * the clocks (see cpuburn_effective_cpu_ns); only steal the clock counted
 * is subtracted.
 *
 * Must never: sleep, allocate or take locks inside cpuburn_run (it runs on
 * replay worker threads, per event). */
#ifndef PREPLAY_CPUBURN_H
#define PREPLAY_CPUBURN_H

#include <stddef.h>
#include <stdint.h>

/* How the calibration treated steal seen on its core. */
enum cpuburn_steal_mode {
    CPUBURN_STEAL_NONE = 0,        /* no steal was seen during calibration */
    CPUBURN_STEAL_EXCLUDED = 1,    /* the thread CPU clock already left it out */
    CPUBURN_STEAL_SUBTRACTED = 2,  /* the clock counted it; we subtracted it */
    CPUBURN_STEAL_WITHIN_TICK = 3, /* only one tick of the steal counter: no
                                    * more certain than none, nothing taken */
};

struct cpuburn_calibration {
    int cpu;                /* core the calibration ran on */
    double loops_per_ns;    /* busy-loop iterations per ns of thread CPU time */
    uint64_t rounds;        /* rounds measured */
    double spread;          /* (max - min) / median of the per-round rates */
    uint64_t cpu_ns;        /* thread CPU time of all rounds (as the clock read) */
    uint64_t wall_ns;       /* wall time of all rounds */
    uint64_t steal_ns;      /* steal on the core during the rounds (/proc/stat) */
    int steal_mode;         /* enum cpuburn_steal_mode */
    uint64_t clock_read_ns; /* CPU cost of one thread-CPU-clock read (median) */
};

/* Pins the calling thread to `cpu` (or, with cpu < 0, to the core it runs
 * on now). Saves the previous mask in *saved (may be NULL) for
 * cpuburn_unpin. Returns the core, or -1 with errno set. */
struct cpuburn_affinity {
    unsigned char mask[128]; /* a cpu_set_t, kept opaque here */
    int valid;
};
int cpuburn_pin(int cpu, struct cpuburn_affinity *saved);
void cpuburn_unpin(const struct cpuburn_affinity *saved);

/* Calibrates on `cpu` (< 0: the current core) for about total_ns of CPU
 * time (0 = default, 300 ms). The thread's affinity is restored afterwards.
 * Returns 0, or -1 with a one-line reason in err. */
int cpuburn_calibrate(struct cpuburn_calibration *out, int cpu, uint64_t total_ns, char *err,
                      size_t errlen);

/* Burns ns nanoseconds of this thread's CPU time: the calibrated number of
 * loop iterations, with no clock read or other syscall in between (the
 * scheduler sees pure user-space work, as it does the recorded code's).
 * Returns ns. */
uint64_t cpuburn_run(const struct cpuburn_calibration *cal, uint64_t ns);

/* The loop itself: n iterations; returns a value the caller may ignore. */
uint64_t cpuburn_spin(uint64_t n);

/* Thread CPU clock in ns. */
uint64_t cpuburn_thread_cpu_ns(void);
uint64_t cpuburn_wall_ns(void);

/* --- pure helpers (unit-tested) --- */

/* Iterations for ns of CPU time at the calibrated rate (rounded, >= 0). */
uint64_t cpuburn_loops_for_ns(const struct cpuburn_calibration *cal, uint64_t ns);

/* CPU time a round really had, given what the clocks said: wall, thread CPU
 * clock and the core's steal (all ns, same interval, thread pinned to that
 * core, idle otherwise), the steal read as the difference of two counters
 * each rounded down to tick_ns (/proc/stat's clock ticks: 10 ms). The steal
 * certainly taken is then steal - tick (one tick read may be a few us of
 * real steal that crossed a tick: on the shared VM 1.5% of 85 ms rounds
 * read one tick with 0.2-3.8 ms missing from the clock, and subtracting
 * the tick timed a burn-chain round 10 ms, 18%, short - the low quantile
 * of cpu_ratio.h then took those rounds, a CPU ratio of 0.84 to itself).
 * If the CPU clock is short of wall by at least half the certain steal,
 * the kernel already excluded steal (paravirt steal accounting): cpu is
 * kept. Otherwise the clock counted the steal and the certain steal is
 * subtracted (never below 0). The reading is within a tick of the real
 * steal either way, so a round whose clock counted steal may keep up to
 * two ticks of it: a slower round, which a low quantile or a median
 * passes over, where a round timed short would be taken. *mode gets the
 * enum cpuburn_steal_mode. */
uint64_t cpuburn_effective_cpu_ns(uint64_t wall_ns, uint64_t cpu_ns, uint64_t steal_ns,
                                  uint64_t tick_ns, int *mode);

/* The steal counter's resolution: one clock tick of /proc/stat, in ns. */
uint64_t cpuburn_steal_tick_ns(void);

/* Median of rates[0..n) (sorted in place); 0 for n == 0. */
double cpuburn_median(double *rates, size_t n);

/* Steal of core `cpu` from the text of /proc/stat, in USER_HZ ticks.
 * Returns 0, or -1 when the line is missing or malformed. */
int cpuburn_parse_steal(const char *proc_stat, int cpu, uint64_t *ticks);

/* Reads /proc/stat and returns the steal of `cpu` in ns (-1 if unreadable). */
int64_t cpuburn_core_steal_ns(int cpu);

const char *cpuburn_steal_mode_name(int mode);

#endif
