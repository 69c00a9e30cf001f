/* compare.h - `preplay compare`: reads the results files `preplay run`
 * writes (formats/RESULTS.md), optionally the replay plan they came from
 * (the on-premise recording), and decides which candidate instance types
 * meet a service-level objective and which of those is cheapest.
 *
 * Layers, each usable alone (tests build on them):
 *   compare_run_load      one results file -> struct compare_run
 *   compare_input_load    a results, duet or regress file, by its "format"
 *   compare_duet_*        duet files (`preplay duet`): B/A per label
 *                         with its interval, the A/A file as context
 *   compare_regress_*     regress files (`preplay regress`): "why is this
 *                         type slower?", the flagged counters against
 *                         the baselines' range
 *   compare_recording_load the plan's recorded response times per label
 *   compare_slo_parse     'p95<200ms' -> struct compare_slo
 *   compare_analyze       statistics (through stats/, never
 *                         reimplemented here) and the verdict
 *   compare_trust_*       what the verdict cannot vouch for: failed
 *                         replays (not ranked) and labels it did not judge
 *   compare_json / compare_print_table / compare_report_write  outputs
 *
 * Never exits or prints from the library: errors come back as one line in
 * the caller's buffer, naming the file and the key or record at fault. */
#ifndef PREPLAY_COMPARE_H
#define PREPLAY_COMPARE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "duet_reader.h"
#include "regress_reader.h"
#include "results_reader.h"

#define COMPARE_ERR_LEN 512

struct report_plan_facts;

/* A label "does not resemble the recording" when PT4Cloud's p between its
 * replayed and recorded response times is below this, with at least the
 * stop rule's sample minimum (stats_config min_samples, 30) on both sides. */
#define COMPARE_RESEMBLE_P 0.05

/* Resource kinds of the report's time-per-resource chart (CloudProphet
 * Fig. 12). The replayer's kinds map onto them: cpu, file, lock, db as is;
 * net (request/response bytes), external (untraced peers) and call
 * (waiting for a nested component) are "network". */
enum compare_resource {
    COMPARE_RES_CPU,
    COMPARE_RES_FILE,
    COMPARE_RES_NET,
    COMPARE_RES_LOCK,
    COMPARE_RES_DB,
    COMPARE_NRES
};
extern const char *const compare_resource_names[COMPARE_NRES];

/* A statistic with its confidence band; lo == hi == value when the results
 * file gave no band and there were too few samples to compute one. */
struct compare_stat {
    double value, lo, hi;
    int has_band;
};

enum compare_metric { COMPARE_MEDIAN, COMPARE_P95, COMPARE_P99, COMPARE_NMETRICS };
extern const char *const compare_metric_names[COMPARE_NMETRICS];

struct compare_label {
    char *name;
    size_t count; /* successful requests */
    struct compare_stat stat[COMPARE_NMETRICS];
    double *samples;           /* successful response times (s), from "samples" */
    uint32_t *sample_interval; /* per sample, its interval (0: the file does not say) */
    size_t nsamples;
    double p_recording; /* PT4Cloud p against the recording; NAN = not computed */
    /* filled by compare_analyze (compare_trust_labels) */
    size_t stop_rule_n;   /* samples the stop rule's last comparison had (its d1) */
    int judged;           /* 1 the stop rule judged it, 0 too few samples, -1 unknown/no rule */
    int unlike_recording; /* p_recording < COMPARE_RESEMBLE_P with enough samples */
};

/* Time per resource of one component's blocks of one label, mean per block. */
struct compare_resources {
    char *group; /* "component: label" */
    double s[COMPARE_NRES];
    char *component, *label; /* as the results file names them (label may be "") */
    size_t blocks;
    double call_s; /* mean per block waiting for nested components (inside s[COMPARE_RES_NET]) */
};

struct compare_interval {
    size_t requests, failed;
    double p; /* NAN when the interval was not compared */
    double length_s;
};

/* Queries that failed on the database in one interval (results' db_errors). */
struct compare_db_error {
    char *component, *message;
    uint64_t count;
};

struct compare_run {
    char *path;
    char *instance;
    double price_per_hour; /* NAN when not priced */
    char *recording_id;    /* "" when the file does not say */
    char *plan;            /* plan path as written at run time (informative) */
    int has_stop_rule;     /* a `run` file (a `drive` file has no stop rule) */
    int stopped;           /* PT4Cloud said stable */
    double p0;             /* objective probability of the run (0.9 when absent) */
    char *stop_note;       /* why it ended, when the file says */
    double elapsed_s;      /* time spent driving requests */
    size_t requests_ok, failed;
    double cpu_ratio;                  /* recorded CPU time was multiplied by this; NAN: unknown */
    double cpu_ratio_lo, cpu_ratio_hi; /* its 95 % interval; NAN: none */
    struct results_placement_read placement; /* where its DB and clients were */
    struct compare_label *labels;
    size_t nlabels;
    struct compare_interval *intervals;
    size_t nintervals;
    struct compare_resources *resources;
    size_t nresources;
    struct compare_db_error *db_errors;
    size_t ndb_errors;
    uint64_t db_cut; /* DB statements recorded cut, replayed as waits (results' db_cut) */
    /* filled by compare_analyze */
    char **problems; /* why the replay cannot be trusted ("3 requests failed"), one per kind */
    size_t nproblems;
    int ranked;               /* takes part in tiers and the recommendation */
    double requests_per_hour; /* successful requests / elapsed_s * 3600 */
    double cost_per_million;  /* price_per_hour / requests_per_hour * 1e6; NAN if unpriced */
    int meets_slo;
    char *slo_failure; /* first failing check, "" when it meets */
    int tier;          /* performance tier (1 = fastest); equivalent types share a tier */
    double score;      /* geometric mean over labels of the ranking metric (s) */
};

/* Loads one results file. 0, or -1 with a one-line reason in err and
 * nothing left allocated in run. */
int compare_run_load(const char *path, struct compare_run *run, char *err, size_t errlen);
/* The same from a parsed results document (compare_input_load). */
int compare_run_load_json(json_t *root, const char *path, struct compare_run *run, char *err,
                          size_t errlen);
void compare_run_free(struct compare_run *run);
const struct compare_label *compare_run_label(const struct compare_run *run, const char *name);

/* The on-premise recording, from the plan: per label the front-end
 * blocks' recorded response times, and every request's arrival. */
struct compare_recording {
    char *path;
    char recording_id[40];
    size_t nlabels;
    char **label_names;
    double **recorded_s; /* per label, response times as recorded (s) */
    size_t *nrecorded;
    size_t nrequests;
    double *arrival_s;               /* per request, from the first request */
    size_t *request_label;           /* per request, index into label_names */
    double span_s;                   /* last arrival */
    struct report_plan_facts *facts; /* coverage, external calls, tiers (report_plan.h) */
    /* blocks the analyzer built by its fallback (PLAN_BLOCK_VIOLATION), per block label */
    size_t nflagged_labels;
    char **flagged_labels;
    size_t *nflagged;
};
int compare_recording_load(const char *path, struct compare_recording *rec, char *err,
                           size_t errlen);
void compare_recording_free(struct compare_recording *rec);
/* Label index, or (size_t)-1 */
size_t compare_recording_label(const struct compare_recording *rec, const char *name);

/* A service-level objective: METRIC OP NUMBER UNIT, e.g. p95<200ms. */
struct compare_slo {
    enum compare_metric metric;
    int inclusive; /* <= rather than < */
    double limit_s;
    char text[64]; /* normalized, e.g. "p95 < 200 ms" */
};
int compare_slo_parse(const char *text, struct compare_slo *slo, char *err, size_t errlen);
/* 1 when `s` meets the SLO with the pessimistic (upper) edge of its band. */
int compare_slo_met(const struct compare_slo *slo, const struct compare_stat *s);

struct compare_options {
    const struct compare_slo *slos;
    size_t nslos;
    const char *const *slo_labels; /* NULL/0: every label */
    size_t nslo_labels;
    double equivalent_p; /* p at or above which two types' label distributions are the same */
    int allow_failed;    /* rank types whose replay failed (--allow-failed) */
};
void compare_options_default(struct compare_options *o);

struct compare_verdict {
    size_t nlabels; /* union of labels over runs, in first-seen order */
    char **labels;
    int *meets; /* per run */
    /* equivalent[i * nruns + j]: runs i and j differ only by noise on every label */
    int *equivalent;
    size_t recommended; /* run index, or (size_t)-1 */
    char reason[256];   /* one sentence for people */
    size_t nruns;
    size_t nranked; /* runs that took part in the ranking */
    char *caveats;  /* what the verdict did not rank or judge, "" when nothing */
};

/* Statistics (missing bands, p against the recording), costs, SLO checks,
 * tiers and the recommendation. rec may be NULL. 0 or -1 with err. */
int compare_analyze(struct compare_run *runs, size_t nruns, const struct compare_recording *rec,
                    const struct compare_options *opt, struct compare_verdict *v, char *err,
                    size_t errlen);
void compare_verdict_free(struct compare_verdict *v);
/* Checks the runs belong together (same recording, also the plan's) and
 * that instance names are distinct. 0 or -1 with err. */
int compare_check_consistent(const struct compare_run *runs, size_t nruns,
                             const struct compare_recording *rec, char *err, size_t errlen);

/* What the verdict cannot vouch for (compare_trust.c), called by
 * compare_analyze: per run its problems (failed requests, DB errors,
 * labels never replayed; expected labels are the plan's, else every run's)
 * and whether it is ranked; per label whether the stop rule judged it and
 * whether it resembles the recording; and v->caveats, the sentence the
 * verdict line ends with. 0 or -1 (out of memory). */
int compare_trust_runs(struct compare_run *runs, size_t nruns, const struct compare_recording *rec,
                       const struct compare_options *opt, const struct compare_verdict *v);
int compare_trust_caveats(const struct compare_run *runs, size_t nruns,
                          const struct compare_recording *rec, const struct compare_options *opt,
                          struct compare_verdict *v);
/* The stop rule's sample minimum per label (stats_config_default). */
size_t compare_trust_min_samples(void);
/* The problem line of a run, "small.json: 3 requests failed, ..."; NULL
 * when it has none or out of memory (the caller frees it). */
char *compare_trust_problem_line(const struct compare_run *r);

json_t *compare_json(const struct compare_run *runs, size_t nruns,
                     const struct compare_recording *rec, const struct compare_options *opt,
                     const struct compare_verdict *v);
void compare_print_table(FILE *out, const struct compare_run *runs, size_t nruns,
                         const struct compare_recording *rec, const struct compare_options *opt,
                         const struct compare_verdict *v);
/* A duet.json (formats/DUET.md) given to compare. */
struct compare_duet {
    char *path;
    struct duet_file df;
    /* the A/A file of this A/B file's recording (A's, else B's): its
     * interval widths are the context of the verdicts; NULL: none */
    const struct compare_duet *aa;
};
/* A regress.json (formats/REGRESS.md) given to compare. */
struct compare_regress {
    char *path;
    struct regress_file rf;
    /* per flagged counter: the most changed flagged rule with it as
     * consequent among the file's rules (NULL: none written) */
    const struct regress_file_rule **rule;
};

/* What one counter's target windows did against the baselines' range
 * (the chart's numbers, in words): NAN/0 when the file has no values. */
struct compare_regress_range {
    double target_median;          /* of its measured windows; NAN: none */
    size_t measured, above, below; /* windows measured, above the baselines' max, below the min */
};
void compare_regress_range(const struct regress_file_flag *f, struct compare_regress_range *r);

enum compare_input_kind { COMPARE_INPUT_RESULTS, COMPARE_INPUT_DUET, COMPARE_INPUT_REGRESS };
/* Reads path once and loads it by its "format": a duet file into duet, a
 * regress file into regress, anything else as results into run (the
 * results reader refuses what is none of them); *kind says which. 0, or
 * -1 with err and nothing left allocated. */
int compare_input_load(const char *path, struct compare_run *run, struct compare_duet *duet,
                       struct compare_regress *regress, enum compare_input_kind *kind, char *err,
                       size_t errlen);
void compare_duet_free(struct compare_duet *d);
/* Sets each A/B file's aa; refuses two A/A files of one recording. */
int compare_duet_match(struct compare_duet *d, size_t n, char *err, size_t errlen);
/* The A/A metric of label (NULL: overall) in d's A/A context, or NULL. */
const struct duet_metric_read *compare_duet_aa_metric(const struct compare_duet *d,
                                                      const char *label);
/* Per file: a header line, one row per label and overall (B/A, interval,
 * width, equal/slower/faster, ratios as runs x iterations, A/A width) and
 * a verdict line. */
void compare_duet_print(FILE *out, const struct compare_duet *d, size_t n);
json_t *compare_duet_json(const struct compare_duet *d, size_t n);

/* A parsed regress document into r (compare_input_load). 0 or -1 with
 * err and nothing left allocated. */
int compare_regress_load_json(const json_t *root, const char *path, struct compare_regress *r,
                              char *err, size_t errlen);
void compare_regress_free(struct compare_regress *r);
/* Per file: a header line (target, baselines, method), one row per
 * flagged counter by severity (direction, violating windows) with the
 * baselines' range against the target's windows and the rule that broke,
 * and a line that names the flagged counters. */
void compare_regress_print(FILE *out, const struct compare_regress *r, size_t n);
json_t *compare_regress_json(const struct compare_regress *r, size_t n);

/* What the report shows: the inputs compare was given. */
struct compare_report_inputs {
    const struct compare_run *runs;
    size_t nruns;
    const struct compare_duet *duets;
    size_t nduets;
    const struct compare_regress *regress;
    size_t nregress;
};
/* The self-contained HTML report: the instance types' sections when nruns
 * (v then non-NULL), the "Versions (duet)" section when nduets, "Why is
 * this type slower?" when nregress. 0 or -1 with err. */
int compare_report_write(const char *path, const struct compare_report_inputs *in,
                         const struct compare_recording *rec, const struct compare_options *opt,
                         const struct compare_verdict *v, char *err, size_t errlen);

#endif
