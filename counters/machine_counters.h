/* machine_counters.h - the machine and process counters `preplay run`
 * (replayer/run_counters.c) and the collector of `record`/`collect`
 * (tracer/collector/collector_counters.c) sample per time window, read
 * from /proc once here so that a recording's windows and a run's carry the
 * same counters under the same names (formats/RESULTS.md "counters",
 * formats/FORMAT.md §9). A snapshot holds cumulative values; a window's
 * values are the rates between two snapshots. Never prints, never fails:
 * what cannot be read is NAN. */
#ifndef PREPLAY_MACHINE_COUNTERS_H
#define PREPLAY_MACHINE_COUNTERS_H

#include <stddef.h>
#include <sys/types.h>

/* The counters a snapshot pair gives, in this order at the start of every
 * window of a run and of a recording (RESULTS.md lists their meaning). */
enum machine_counter {
    MC_CPU_USER,
    MC_CPU_SYSTEM,
    MC_RUN_QUEUE,
    MC_CPU_PRESSURE,
    MC_CTX,
    MC_DISK_RB,
    MC_DISK_WB,
    MC_DISK_RIOPS,
    MC_DISK_WIOPS,
    MC_NET_RX,
    MC_NET_TX,
    MC_PROC_CPU, /* "run_cpu": CPUs used by the run's / the recorded process tree */
    MACHINE_COUNTERS_N
};
extern const char *const machine_counters_names[MACHINE_COUNTERS_N];

/* Counters that come from the replayers' accounting in a run and from the
 * recorded events in a recording, and the per-label ones (name prefix +
 * label): one spelling for both. */
#define COUNTERS_LOCK_WAIT "lock_wait"
#define COUNTERS_DB_TIME "db_time"
#define COUNTERS_DB_QPS "db_queries_per_s"
#define COUNTERS_UNLABELLED "(unlabelled)"
extern const char *const counters_label_prefix[3]; /* throughput, median, p95 */

/* The most a window's value of counter `name` can be, where a bound has a
 * meaning (issue 24 item 2): cpu_user and cpu_system are shares of the
 * CPU's jiffies (1), cpu_pressure a share of the window's time stalled
 * (1, and 10% for the PSI total and the clock being read apart),
 * run_queue a mean count of runnable tasks (PID_MAX_LIMIT, 4194304), a
 * label's median_s and p95_s a response time (RESULTS_MAX_SECONDS, 31
 * days). INFINITY for rates and the rest (the readers keep them finite
 * and >= 0). *why: what the bound is, for messages. */
double machine_counters_max(const char *name, const char **why);

/* Run's and record's window bounds (`--window`): 0.1 s to 24 h. */
#define COUNTERS_MIN_WINDOW_S 0.1
#define COUNTERS_MAX_WINDOW_S 86400.0
#define COUNTERS_MAX_DISKS 64

/* The whole disks found once (not partitions, loop, ram, zram, dm-). */
struct machine_counters {
    char disks[COUNTERS_MAX_DISKS][32];
    int ndisks;
};

/* Cumulative values at one moment; NAN: could not be read. */
struct machine_snap {
    double t;                            /* CLOCK_MONOTONIC seconds */
    double cpu_user, cpu_sys, cpu_total; /* jiffies */
    double ctxt, psi_us;
    double rd_ios, rd_sect, wr_ios, wr_sect;
    double net_rx, net_tx;
    double proc_ticks; /* the caller's process tree; NAN until it sets it */
};

void machine_counters_init(struct machine_counters *m);
/* Every machine-wide counter now (proc_ticks left NAN). */
void machine_counters_snapshot(const struct machine_counters *m, struct machine_snap *s);
/* /proc/stat's procs_running now; NAN when unreadable. */
double machine_counters_running(void);
/* utime + stime (clock ticks) of pid (0: this process); -1 when gone. */
double machine_counters_proc_ticks(pid_t pid);
/* The window [a, b]'s MACHINE_COUNTERS_N values into v; rq_mean: the mean
 * of its procs_running ticks (NAN: none). */
void machine_counters_rates(const struct machine_snap *a, const struct machine_snap *b,
                            double rq_mean, double *v);
/* (b - a) / secs, NAN when either is unknown or it went backwards. */
double machine_counters_rate(double a, double b, double secs);
/* `--window T` of run, record and collect: "0" (no counters: *seconds 0)
 * or a duration (N, Ns, Nms, Nm, Nh) within the bounds above. 0, or -1
 * (the callers say: expected 0 (no counters) or 0.1s..24h, e.g. 10s). */
int counters_parse_window(const char *text, double *seconds);
/* How often to tick for window_s: a tenth of it, 50 ms to 1 s. */
double machine_counters_tick(double window_s);
double machine_counters_now(void);

#endif
