/* results_writer.h - builds the results JSON (results.h, formats/RESULTS.md)
 * for `preplay drive` and `preplay run`: every object of the format, keys
 * in their order, and the atomic save. Never computes a statistic. */
#ifndef PREPLAY_RESULTS_WRITER_H
#define PREPLAY_RESULTS_WRITER_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "results.h"

/* Functions returning json_t * return NULL on allocation failure; json_t *
 * members of the structs below are stolen by the function they go to. */

/* A label summary: "count", "mean_s", "median_s", "p95_s", "p99_s",
 * "min_s", "max_s", and with has_band "median_ci_s", "p95_ci_s",
 * "p99_ci_s" as [low, high] (band[0..2] = median, p95, p99). */
struct results_summary {
    size_t count;
    double mean_s, median_s, p95_s, p99_s, min_s, max_s;
    int has_band;
    double band[3][2];
};
json_t *results_summary_json(const struct results_summary *s);

/* Appends {"label", "sent_s", "response_s", "late_s", "ok"[, "failure"]
 * [, "interval"]} to samples: failure NULL for an answered request (ok
 * true), else why it failed (ok false); interval 0 leaves "interval" out.
 * 0 or -1. */
int results_sample_append(json_t *samples, const char *label, double sent_s, double response_s,
                          double late_s, const char *failure, long interval);

/* {"median_s", "p99_s", "max_s"} of the sends' lateness. */
json_t *results_lateness_json(double median_s, double p99_s, double max_s);

/* One entry of a run's "intervals". Not fed: only "p": null after
 * "lateness"; fed: "p" (null unless compared), "action", "held_open_by".
 * schedule_from_s/to_s: the part of the repeating schedule it sent, in
 * recorded seconds (from in [0, one pass), to beyond a pass: it wrapped). */
struct results_interval {
    long interval;
    size_t requests;
    uint64_t failed;
    double length_s, schedule_from_s, schedule_to_s;
    json_t *lateness;
    int fed, compared;
    double p;
    const char *action, *held_open_by;
};
json_t *results_interval_json(struct results_interval *iv);

/* Adds a replayer's STATS answer (its "labels" per-kind times, summed into
 * resources[component][label], its "db_errors", appended to db_errors
 * with "component", and its "db_cut", added to *db_cut). Text that is not
 * JSON is ignored. */
void results_resources_add(json_t *resources, json_t *db_errors, uint64_t *db_cut,
                           const char *component, const char *stats_text);

/* hosts[component] = {"host", "address", "controller_address", "dir"}. */
void results_host_set(json_t *hosts, const char *component, const char *host, const char *address,
                      const char *controller_address, const char *dir);

/* Appends {"interval", "files_s", "db_s"} to a run's per-interval restores. */
void results_restore_append(json_t *restores, long interval, double files_s, double db_s);

/* The whole document of `preplay drive`. */
struct results_drive {
    const char *plan, *recording_id, *target, *mode;
    double speed, duration_s, elapsed_s;
    uint64_t requests, failed;
    int connections;
    json_t *lateness, *labels, *samples;
};
json_t *results_drive_json(struct results_drive *d);

/* "placement" of a run: where its clients (the controller's driver) and
 * its database were. NULL strings are written as null; the tristates are
 * 1 true, 0 false, -1 null (unknown). has_db 0 writes "db": null. */
struct results_placement {
    const char *emulated_type; /* tools/emulate's PREPLAY_EMU_TYPE; NULL outside */
    const char *client_host, *client_cpu_cgroup;
    int client_in_type; /* the driver shared the front-end replayer's CPU */
    int has_db;
    const char *db_address, *db_transport, *db_where, *db_cpu_cgroup;
    int db_in_type; /* the DB server shared the replayers' CPU */
};
json_t *results_placement_json(const struct results_placement *pl);

/* "counters" of a run (since 2.2): counter values per time window
 * (formats/RESULTS.md). The environment's NULL strings and cpus <= 0 /
 * memory_bytes NAN are written as null. */
struct results_environment {
    const char *host, *cpu_model, *kernel, *emulated_type;
    long cpus;
    double memory_bytes;
};
/* One window: {"interval", "start_s", "length_s", "values"}; values[i]
 * NAN is written as null (nothing to measure in that window). */
json_t *results_counter_window_json(long interval, double start_s, double length_s,
                                    const double *values, size_t nvalues);
/* {"window_s", "tick_s", "environment", "names", "windows"}; names (an
 * array of strings) and windows (of results_counter_window_json) are
 * stolen. */
json_t *results_counters_json(double window_s, double tick_s, const struct results_environment *env,
                              json_t *names, json_t *windows);

/* The whole document of `preplay run`. price NAN and error NULL are
 * written as null; hosts NULL leaves "hosts" out; "cpu_ratio_ci" is
 * written only when 0 < cpu_ratio_lo <= cpu_ratio <= cpu_ratio_hi (left
 * zero: no interval), and with it "cpu_ratio_in_bands": false until
 * results_widen_ratio_bands (results_bands.h) widens the bands. */
struct results_run {
    const char *plan, *recording_id, *instance, *mode, *scale, *error;
    double price, speed, cpu_ratio, p0;
    double cpu_ratio_lo, cpu_ratio_hi; /* 95 % interval of cpu_ratio */
    double schedule_s;                 /* one pass of the plan's schedule, recorded seconds */
    uint64_t schedule_requests;        /* the plan's requests in one pass */
    int no_deps, stopped;
    json_t *hosts, *labels, *intervals, *resources, *db_errors, *samples;
    json_t *placement; /* results_placement_json; NULL leaves it out */
    json_t *counters;  /* results_counters_json; NULL leaves it out */
    uint64_t db_cut;   /* statements recorded cut, replayed as waits */
    const char *db_method;
    double db_dump_s;
    json_t *restores;
    /* run --warmup: the load driven before the first interval, its
     * responses not counted; "warmup" is written only when warmup_s > 0 */
    double warmup_s;
    uint64_t warmup_requests, warmup_failed;
};
json_t *results_run_json(struct results_run *r);

/* Writes root to path, mode 0600 (out_file.h: temp file + rename, never a
 * partial file, never through a planted link). 0 or -1 with err. */
int results_save(json_t *root, const char *path, char *err, size_t errlen);

#endif
