/* duet_reader.h - reads a duet.json of `preplay duet` (formats/DUET.md)
 * from anywhere into struct duet_file: every count and length bounded by
 * the DUET_MAX_* limits below before it is used, every number finite and
 * in range, each metric consistent (ci_low <= gms <= ci_high, "equal" as
 * the interval says); errors are one line naming the file and the key
 * path; keys it does not know are ignored. It never computes statistics
 * (replayer/duet_report.c does, tests/duet/oracle.py checks them). */
#ifndef PREPLAY_DUET_READER_H
#define PREPLAY_DUET_READER_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define DUET_FORMAT "preplay-duet"
#define DUET_VERSION 1

/* Limits (DUET.md "Limits"), in one place: runs, iterations, warm-up and
 * replicates as `preplay duet` accepts them (duet_config.c), a count
 * (failed, samples) up to DUET_MAX_COUNT, every ratio (gms, bounds, run
 * gms, per-iteration ratios) in [1/DUET_MAX_RATIO, DUET_MAX_RATIO]. */
#define DUET_MAX_LABELS 65536u       /* "labels" and "labels_skipped", each */
#define DUET_MAX_LABEL_BYTES 4096u   /* one label name, one skip reason */
#define DUET_MAX_RUNS 100000u        /* "runs"; --runs 2..100000 */
#define DUET_MAX_ITERATIONS 1000000u /* "iterations", "warmup" per run */
#define DUET_MAX_REPLICATES 10000000u
#define DUET_MAX_COUNT (1ull << 40) /* failed_a/b, samples_a/b */
#define DUET_MAX_RATIO 1e9
/* Reals are written with 9 significant digits: "equal" may disagree with
 * the rounded interval when a bound is within this of 1, and ci_width with
 * ci_high - ci_low by this times ci_high. */
#define DUET_ROUNDING 1e-8

/* One metric (a label, or every label together). present 0: the file
 * gives only the reason there is none (skipped). */
struct duet_metric_read {
    int present;
    char *skipped; /* NULL when present */
    double gms, ci_low, ci_high, ci_width;
    int equal;
    long runs, iterations;
    uint64_t samples_a, samples_b;
    double *run_gms; /* runs of them */
};

struct duet_label_read {
    char *name;
    struct duet_metric_read m;
};

struct duet_skipped_read {
    char *name, *why;
};

struct duet_file {
    int version_minor;
    char *plan_a, *plan_b, *recording_a, *recording_b;
    int aa, same_recording;
    int sequential; /* "procedure": "sequential"; 0 "duet" */
    int median;     /* "statistic": "median"; 0 "mean" */
    long runs, iterations, warmup, replicates;
    double confidence, winsorize_pct;
    uint64_t failed_a, failed_b;
    struct duet_metric_read overall;
    struct duet_label_read *labels; /* in the file's order */
    size_t nlabels;
    struct duet_skipped_read *skipped;
    size_t nskipped;
};

/* Reads and validates one duet file. 0, or -1 with a one-line err
 * ("PATH: labels."GET /".ci_low: ...") and nothing left allocated. */
int duet_read(const char *path, struct duet_file *df, char *err, size_t errlen);
/* The same from a parsed document (the caller keeps root); path names it
 * in errors. */
int duet_read_json(const json_t *root, const char *path, struct duet_file *df, char *err,
                   size_t errlen);
void duet_file_free(struct duet_file *df);
/* 1 when root says it is a duet document ("format": DUET_FORMAT). */
int duet_is_duet(const json_t *root);
/* The verdict word of a metric: "equal", "slower" (B/A above 1) or
 * "faster"; NULL when it has none. */
const char *duet_verdict(const struct duet_metric_read *m);
const struct duet_label_read *duet_file_label(const struct duet_file *df, const char *name);

#endif
