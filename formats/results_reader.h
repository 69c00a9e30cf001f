/* results_reader.h - reads a results file (results.h, formats/RESULTS.md)
 * from anywhere into struct results_file: bounded and validated, errors
 * naming file and key, unknown keys ignored; and the list of keys the
 * reader knows per object, which the writer must match
 * (tests/formats/test_results.c). */
#ifndef PREPLAY_RESULTS_READER_H
#define PREPLAY_RESULTS_READER_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "results.h"

#define RESULTS_ERR_LEN 512

/* Limits (RESULTS.md "Limits"), in one place: the reader refuses a file
 * with more labels, intervals, samples or resources than these, a count
 * beyond RESULTS_MAX_COUNT, or a time outside [0, RESULTS_MAX_SECONDS],
 * naming the key and the limit. */
#define RESULTS_MAX_LABELS 65536u
#define RESULTS_MAX_INTERVALS 65536u
#define RESULTS_MAX_SAMPLES (1u << 26)
#define RESULTS_MAX_RESOURCES 65536u
#define RESULTS_MAX_DB_ERRORS 65536u
#define RESULTS_MAX_COUNT (1ull << 40)       /* requests, failed, count, blocks */
#define RESULTS_MAX_SECONDS (31.0 * 86400.0) /* any time: response, elapsed, interval */
#define RESULTS_MAX_PRICE 1e6                /* "price", USD per hour */
#define RESULTS_MAX_COUNTERS 4096u           /* "counters" names */
#define RESULTS_MAX_COUNTER_NAME 512u        /* bytes of one counter name */
#define RESULTS_MAX_COUNTER_WINDOWS 1000000u /* "counters" windows */

enum results_metric { RESULTS_MEDIAN, RESULTS_P95, RESULTS_P99, RESULTS_NMETRICS };

struct results_label {
    char *name;
    size_t count;
    double value[RESULTS_NMETRICS], lo[RESULTS_NMETRICS], hi[RESULTS_NMETRICS];
    int has_band[RESULTS_NMETRICS]; /* lo == hi == value without one */
    double *samples;                /* successful response times, from "samples" */
    uint32_t *sample_interval;      /* per sample, its "interval" (0: not given) */
    size_t nsamples;
};

struct results_interval_read {
    size_t requests;
    double p;        /* NAN: not compared */
    double length_s; /* NAN: absent */
    size_t failed;   /* 0 when absent */
    /* the part of the repeating schedule sent (recorded seconds); NAN:
     * absent */
    double schedule_from_s, schedule_to_s;
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

/* One "db_errors" entry: a query text that failed in one interval. */
struct results_db_error {
    char *component, *query, *message; /* "" when absent */
    uint64_t count;
    long long code;
};

/* "placement" (since 2.1): where a run's clients and database were.
 * present 0: the file does not say (a 2.0 file, or a drive). NULL
 * strings: null; tristates 1 true, 0 false, -1 null (unknown). */
struct results_placement_read {
    int present;
    char *emulated_type, *client_host, *client_cpu_cgroup;
    int client_in_type;
    int has_db; /* "db" is an object, not null */
    char *db_address, *db_transport, *db_where, *db_cpu_cgroup;
    int db_in_type;
};

/* "counters" (since 2.2): counter values per time window. present 0:
 * the file has none (before 2.2, a drive, or a run that measured none). */
struct results_counter_window_read {
    long interval;
    double start_s, length_s;
    double *values; /* ncounters of them; NAN: null (nothing measured) */
};
struct results_counters_read {
    int present;
    double window_s, tick_s;
    /* environment: NULL strings null; cpus 0 and memory_bytes NAN null */
    char *host, *cpu_model, *kernel, *emulated_type;
    long cpus;
    double memory_bytes;
    char **names;
    size_t nnames;
    struct results_counter_window_read *windows;
    size_t nwindows;
};

struct results_file {
    int is_run;         /* "kind": "run" (has a stop rule) or "drive" */
    int version_minor;  /* "version_minor"; 0 when absent */
    char *instance;     /* NULL: absent */
    double price;       /* NAN: absent or null */
    char *recording_id; /* "" when absent */
    char *plan;         /* "" when absent */
    int stopped;
    char *error;                       /* "" when absent or null */
    double p0;                         /* NAN: absent or outside (0, 1] */
    double elapsed_s, failed;          /* NAN: absent */
    double cpu_ratio;                  /* NAN: absent or null */
    double cpu_ratio_lo, cpu_ratio_hi; /* "cpu_ratio_ci"; NAN: absent */
    double schedule_s;                 /* one pass of the schedule (run); NAN: absent */
    double schedule_requests;          /* the plan's requests in one pass; NAN: absent */
    double db_cut; /* statements recorded cut and replayed as waits; NAN: absent */
    struct results_label *labels;
    size_t nlabels;
    struct results_interval_read *intervals;
    size_t nintervals;
    int has_intervals;
    struct results_resource *resources;
    size_t nresources;
    struct results_db_error *db_errors;
    size_t ndb_errors;
    struct results_placement_read placement;
    struct results_counters_read counters;
};

/* Reads and validates one results file: what it reads must have the right
 * type and bounds (an error names path and key); keys it does not know
 * are ignored. 0, or -1 with err and nothing left allocated. */
int results_read(const char *path, struct results_file *rf, char *err, size_t errlen);
/* The same from a parsed document (the caller keeps root; `preplay
 * compare` parses a file once and reads it as results or duet by its
 * "format"); path names it in errors. */
int results_read_json(json_t *root, const char *path, struct results_file *rf, char *err,
                      size_t errlen);
/* Parses the JSON file at path (duplicate keys refused); NULL with
 * "PATH: cannot open (...)" or "PATH: line L column C: not valid JSON
 * (...)" in err. The one loader of the results and duet readers. */
json_t *results_json_load(const char *path, char *err, size_t errlen);
void results_file_free(struct results_file *rf);
/* Frees a placement's strings and leaves it "not present" (a caller that
 * took it out of a results_file frees it with this). */
void results_placement_free(struct results_placement_read *pl);
/* Frees counters and leaves them "not present". */
void results_counters_free(struct results_counters_read *c);
/* Index of counter name in c, or -1. */
long results_counter_index(const struct results_counters_read *c, const char *name);
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
    RESULTS_OBJ_PLACEMENT,
    RESULTS_OBJ_PLACEMENT_CLIENT,
    RESULTS_OBJ_PLACEMENT_DB,
    RESULTS_OBJ_COUNTERS,
    RESULTS_OBJ_ENVIRONMENT,
    RESULTS_OBJ_COUNTER_WINDOW,
    RESULTS_OBJ_WARMUP, /* a run's "warmup" */
    RESULTS_NOBJECTS
};
const char *const *results_known_keys(enum results_object o);

#endif
