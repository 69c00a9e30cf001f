/* duet.h - `preplay duet` (Bulej et al., MASCOTS 2019): two replays of
 * plans A and B at the same time on one machine, each side (its driver
 * and its replayers) pinned to a core of its own, the core assignment
 * drawn at random per run, the iterations started together by a
 * shared-memory barrier (duet_barrier.h). Pieces:
 *   duet_config.c  the options (parsing only)
 *   duet_cli.c     the controller: checks, CPU ratio, the runs, each a
 *                  fresh pair of side processes
 *   duet_side.c    one side of one run: a run_session (run_session.h)
 *                  with its replayers, then the iterations
 *   duet_report.c  per-iteration ratios -> gms and bootstrap intervals
 *                  (stats_duet.h) -> duet.json (formats/DUET.md)
 * Internal to replayer/: tools/preplay_main.c sees cmd_duet only. */
#ifndef PREPLAY_DUET_H
#define PREPLAY_DUET_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "duet_barrier.h"

struct duet_config {
    const char *plan_a, *plan_b, *out;
    const char *db_a, *db_b, *db_password_file;
    const char *pool;
    long runs, iterations, warmup;
    int replicates;
    double cl, winsor_pct, speed;
    double slice_from, slice_len; /* recorded seconds; slice_len 0: one pass */
    double ratio;                 /* --cpu-ratio; 0: measured */
    int aa, sequential, median;
    int cpus_given, cpus[2];
    uint64_t seed;
    int seed_given;
};

/* 0: go on; -1: exit with *exit_code (2 bad usage, 0 after --help). */
int duet_config_parse(int argc, char **argv, struct duet_config *c, int *exit_code);

/* One side of one run, in its own (forked) process. */
struct duet_side {
    const struct duet_config *cfg;
    const char *plan_path, *db_url;
    const char *name; /* "A" or "B" */
    int role;         /* 0: A, 1: B */
    int cpu;
    double ratio;
    long run;
    const unsigned char *first; /* --sequential: per iteration, which side goes first */
    struct duet_barrier *barrier;
    const char *out_path; /* the side's iterations (JSON) */
};
/* Runs the side and returns its exit status (0, or 1 with the reason
 * printed). Writes {"iterations": [{"requests", "failed", "all": {"n",
 * "mean_s", "median_s"}, "labels": {LABEL: {...}}}]} to out_path. */
int duet_side_main(const struct duet_side *sd);

/* What the report needs of both plans. */
struct duet_plans {
    const char *recording_a, *recording_b;
    int same_recording;
    double ratio_a, ratio_b;
    int cpus[2];
};
/* sides[r][0|1]: the side documents of run r; assign[r]: 1 when A ran on
 * cpus[1]. Builds duet.json (formats/DUET.md); NULL with err. */
json_t *duet_report_build(const struct duet_config *c, const struct duet_plans *pl,
                          json_t *(*sides)[2], const unsigned char *assign, char *err,
                          size_t errlen);
/* One line per label and one overall from a duet.json document: B/A, the
 * interval, equal or not; failures first. */
void duet_report_print(const json_t *doc, FILE *out);

#endif
