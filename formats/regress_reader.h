/* regress_reader.h - reads a regress.json of `preplay regress`
 * (formats/REGRESS.md) from anywhere into struct regress_file: every
 * count and length bounded by the REGRESS_MAX_* limits below before it is
 * used, every number finite and in range, the flagged counters consistent
 * with themselves (severity = violating windows / target windows,
 * direction as windows_up and windows_down say, window indexes inside
 * the target) and with the levels and rules naming only counters the file
 * has levels for; errors are one line naming the file and the key path;
 * keys it does not know are ignored. It never computes the analysis
 * (regress/ does; regress/regress_output.c is the only writer). */
#ifndef PREPLAY_REGRESS_READER_H
#define PREPLAY_REGRESS_READER_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define REGRESS_FORMAT "preplay-regress"
#define REGRESS_VERSION 1
/* 1.1 adds target_values per flagged counter, min/median/max per level
 * and instance per baseline and target (REGRESS.md) */
#define REGRESS_VERSION_MINOR 1

/* Limits (REGRESS.md "Limits"), in one place: counters and windows as
 * the results reader bounds them (RESULTS_MAX_COUNTER_*), rules as
 * `preplay regress --max-rules` and --max-len allow them. */
#define REGRESS_MAX_COUNTERS 4096u   /* "levels" entries; "flagged" entries */
#define REGRESS_MAX_NAME_BYTES 512u  /* a counter name */
#define REGRESS_MAX_LEVEL_BYTES 96u  /* a level name ("[0.1, 0.2)") */
#define REGRESS_MAX_PATH_BYTES 4096u /* a path or instance name */
#define REGRESS_MAX_BASELINES 4096u  /* "baselines" entries */
#define REGRESS_MAX_WINDOWS 1000000u /* windows of one file */
#define REGRESS_MAX_RULES 1000000u   /* "rules" entries */
#define REGRESS_MAX_RULES_TOTAL (1ull << 40)
#define REGRESS_MAX_LEN 8     /* items per rule, consequent included */
#define REGRESS_MAX_BINS 1000 /* equal-width bins of one counter */
/* severity is written from a division: it may differ from violating
 * windows / target windows by this */
#define REGRESS_ROUNDING 1e-9

enum regress_file_method { REGRESS_FILE_SINGLE, REGRESS_FILE_BAGGING, REGRESS_FILE_STACKING };

struct regress_file_input {
    char *path;
    char *instance; /* NULL: null, or a file before 1.1 */
    size_t windows;
    double weight; /* NAN: null (single) */
};

/* One counter's levels and the baseline's range (NAN: null or absent). */
struct regress_file_level {
    char *counter;
    double low, high;
    int bins; /* equal width: k; 3-level: 0 */
    double min, median, max;
};

struct regress_file_flag {
    char *counter;
    double severity;
    const char *direction; /* "up", "down" or "mixed" (static) */
    long votes;
    double weight, shift_p; /* shift_p NAN: null */
    size_t windows_up, windows_down;
    size_t *violating; /* windows_up + windows_down indexes, increasing */
    size_t nviolating;
    double *target_values; /* nvalues (target.windows) of them, NAN null; NULL before 1.1 */
    size_t nvalues;
    const struct regress_file_level *level;
};

struct regress_file_item {
    char *counter, *level;
};

struct regress_file_rule {
    long model;
    struct regress_file_item *premise;
    size_t npremise;
    struct regress_file_item consequent;
    double support, baseline_confidence;
    double target_confidence, change, p; /* NAN: null (its premise never held) */
    int flagged;
};

struct regress_file {
    int version_minor;
    enum regress_file_method method;
    int equal_width; /* "discretization": "ew"; 0 "3level" */
    double min_support, min_confidence, min_change, alpha, window_s;
    long max_len;
    struct regress_file_input *baselines;
    size_t nbaselines;
    struct regress_file_input target;
    struct regress_file_level *levels; /* in the file's order */
    size_t nlevels;
    struct regress_file_flag *flagged; /* by severity, as the file has them */
    size_t nflagged;
    uint64_t rules_total;
    struct regress_file_rule *rules;
    size_t nrules;
};

/* Reads and validates one regress file. 0, or -1 with a one-line err
 * ("PATH: flagged[0].severity: ...") and nothing left allocated. */
int regress_file_read(const char *path, struct regress_file *rf, char *err, size_t errlen);
/* The same from a parsed document (the caller keeps root); path names it
 * in errors. */
int regress_file_read_json(const json_t *root, const char *path, struct regress_file *rf, char *err,
                           size_t errlen);
void regress_file_free(struct regress_file *rf);
/* 1 when root says it is a regress document ("format": REGRESS_FORMAT). */
int regress_file_is_regress(const json_t *root);
const struct regress_file_level *regress_file_level(const struct regress_file *rf,
                                                    const char *counter);
/* "single", "bagging" or "stacking". */
const char *regress_file_method_name(enum regress_file_method m);

#endif
