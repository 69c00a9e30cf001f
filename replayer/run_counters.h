/* run_counters.h - the counters `preplay run` measures per time window
 * while it drives (results "counters", formats/RESULTS.md): machine-wide
 * /proc counters, the run's process tree, its CPU cgroup inside an
 * emulated type, the replayers' own lock/DB accounting and each label's
 * throughput and response times. A sampler thread reads /proc every tick
 * and closes a window every window_s; the interval loop brackets each
 * drive with begin/end. Never prints, never stops the run: a counter it
 * cannot read is null in its windows. */
#ifndef PREPLAY_RUN_COUNTERS_H
#define PREPLAY_RUN_COUNTERS_H

#include <jansson.h>
#include <stddef.h>
#include <sys/types.h>

#include "plan.h"
#include "replay_drive.h"

struct run_counters;

/* The replayers' cumulative lock wait, DB time (seconds) and DB
 * statements since their last RESET, summed over every replayer; -1 when
 * none answered. Called from the sampler thread. */
typedef int (*run_counters_stats_fn)(void *arg, double *lock_s, double *db_s, double *db_queries);

/* window_s > 0; pids: the local processes of the run besides this one
 * (replayers), copied. NULL on allocation or thread failure. */
struct run_counters *run_counters_new(double window_s, const pid_t *pids, size_t npids,
                                      run_counters_stats_fn stats, void *stats_arg);
/* The drive of interval iv starts now (the replayers were just RESET). */
void run_counters_begin(struct run_counters *rc, long iv);
/* It ended: closes the last window (dropped when shorter than half a
 * window) and adds each label's throughput, median and p95 from the
 * drive's samples to the interval's windows. 0, or -1 out of memory. */
int run_counters_end(struct run_counters *rc, const struct plan *p,
                     const struct replay_sample *samples, size_t nsamples);
/* results_counters_json of everything measured; NULL out of memory. */
json_t *run_counters_json(struct run_counters *rc);
/* Stops the thread and frees; NULL is fine. */
void run_counters_free(struct run_counters *rc);

#endif
