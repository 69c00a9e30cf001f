/* results.h - the results JSON of `preplay drive` and `preplay run`
 * (formats/RESULTS.md), owned here and nowhere else: the writer
 * (results_writer.c) builds every object of it with its keys in their
 * order, the reader (results_reader.c) bounds and validates a file from
 * anywhere, and both share RESULTS_VERSION and the list of known keys.
 * Statistics are computed by the callers (the replayer); nothing here
 * prints or exits: errors come back as one line naming the file and key.
 * Linked as preplay_results (jansson); the trace and plan codecs of
 * preplay_formats stay free of it. */
#ifndef PREPLAY_RESULTS_H
#define PREPLAY_RESULTS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define RESULTS_FORMAT "preplay-results"
#define RESULTS_VERSION 1

/* ---- writer (results_writer.c) ------------------------------------------
 * Functions returning json_t * return NULL on allocation failure; json_t *
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

/* Appends {"label", "sent_s", "response_s", "late_s", "ok"[, "interval"]}
 * to samples; interval 0 leaves "interval" out. 0 or -1. */
int results_sample_append(json_t *samples, const char *label, double sent_s, double response_s,
                          double late_s, int ok, long interval);

/* {"median_s", "p99_s", "max_s"} of the sends' lateness. */
json_t *results_lateness_json(double median_s, double p99_s, double max_s);

/* One entry of a run's "intervals". Not fed: only "p": null after
 * "lateness"; fed: "p" (null unless compared), "action", "held_open_by". */
struct results_interval {
    long interval;
    size_t requests;
    uint64_t failed;
    double length_s;
    json_t *lateness;
    int fed, compared;
    double p;
    const char *action, *held_open_by;
};
json_t *results_interval_json(struct results_interval *iv);

/* Adds a replayer's STATS answer (its "labels" per-kind times, summed into
 * resources[component][label], and its "db_errors", appended to db_errors
 * with "component"). Text that is not JSON is ignored. */
void results_resources_add(json_t *resources, json_t *db_errors, const char *component,
                           const char *stats_text);

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

/* The whole document of `preplay run`. price NAN and error NULL are
 * written as null; hosts NULL leaves "hosts" out. */
struct results_run {
    const char *plan, *recording_id, *instance, *mode, *scale, *error;
    double price, speed, cpu_ratio, p0;
    int no_deps, stopped;
    json_t *hosts, *labels, *intervals, *resources, *db_errors, *samples;
    const char *db_method;
    double db_dump_s;
    json_t *restores;
};
json_t *results_run_json(struct results_run *r);

/* Writes root to path (temp file + rename, never a partial file). 0 or -1
 * with err. */
int results_save(json_t *root, const char *path, char *err, size_t errlen);

/* ---- reader (results_reader.c) ------------------------------------------ */

#define RESULTS_ERR_LEN 512

enum results_metric { RESULTS_MEDIAN, RESULTS_P95, RESULTS_P99, RESULTS_NMETRICS };

struct results_label {
    char *name;
    size_t count;
    double value[RESULTS_NMETRICS], lo[RESULTS_NMETRICS], hi[RESULTS_NMETRICS];
    int has_band[RESULTS_NMETRICS]; /* lo == hi == value without one */
    double *samples;                /* successful response times, from "samples" */
    size_t nsamples;
};

struct results_interval_read {
    size_t requests;
    double p;        /* NAN: not compared */
    double length_s; /* NAN: absent */
};

/* The replayer's kinds of time ("cpu_s", ...), as in "resources". */
enum results_kind {
    RESULTS_CPU,
    RESULTS_FILE,
    RESULTS_NET,
    RESULTS_EXTERNAL,
    RESULTS_CALL,
    RESULTS_LOCK,
    RESULTS_DB,
    RESULTS_NKINDS
};
extern const char *const results_kind_keys[RESULTS_NKINDS];

struct results_resource {
    char *component, *label;
    uint64_t blocks;
    double s[RESULTS_NKINDS]; /* NAN: absent */
};

struct results_file {
    int is_run;         /* "kind": "run" (has a stop rule) or "drive" */
    char *instance;     /* NULL: absent */
    double price;       /* NAN: absent or null */
    char *recording_id; /* "" when absent */
    char *plan;         /* "" when absent */
    int stopped;
    char *error;              /* "" when absent or null */
    double p0;                /* NAN: absent or outside (0, 1] */
    double elapsed_s, failed; /* NAN: absent */
    struct results_label *labels;
    size_t nlabels;
    struct results_interval_read *intervals;
    size_t nintervals;
    int has_intervals;
    struct results_resource *resources;
    size_t nresources;
};

/* Reads and validates one results file: what it reads must have the right
 * type and bounds (an error names path and key); keys it does not know
 * are ignored. 0, or -1 with err and nothing left allocated. */
int results_read(const char *path, struct results_file *rf, char *err, size_t errlen);
void results_file_free(struct results_file *rf);
struct results_label *results_file_label(const struct results_file *rf, const char *name);

/* Every key the reader knows, per object of the format: NULL-terminated.
 * The writer emits exactly these (tests/formats/test_results.c checks). */
enum results_object {
    RESULTS_OBJ_DRIVE, /* the root of a drive document */
    RESULTS_OBJ_RUN,   /* the root of a run document */
    RESULTS_OBJ_LABEL,
    RESULTS_OBJ_SAMPLE,
    RESULTS_OBJ_LATENESS,
    RESULTS_OBJ_INTERVAL,
    RESULTS_OBJ_HOST,
    RESULTS_OBJ_RESOURCE,
    RESULTS_OBJ_DB_ERROR,
    RESULTS_OBJ_STATE_RESTORE,
    RESULTS_OBJ_RESTORE,
    RESULTS_NOBJECTS
};
const char *const *results_known_keys(enum results_object o);

#endif
