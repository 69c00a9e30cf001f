/* run_failures.h - the requests a run failed, per label and why
 * (enum replay_fail), over all its intervals; the line that says so and
 * whether they exceed --max-failed, which makes `preplay run` exit with
 * RUN_EXIT_FAILED (docs/preplay-run.md). Counting and wording only: never
 * prints, and never decides anything but that comparison. */
#ifndef PREPLAY_RUN_FAILURES_H
#define PREPLAY_RUN_FAILURES_H

#include <stddef.h>
#include <stdint.h>

#include "plan.h"
#include "replay_drive.h"

/* the exit status of a run that ended normally with more failed requests
 * than --max-failed allows (its results are written) */
#define RUN_EXIT_FAILED 3

struct run_failures {
    uint64_t sent, failed;
    size_t nlabels, cap;
    uint32_t *labels;                 /* plan string ids of labels with failures */
    uint64_t (*counts)[REPLAY_NFAIL]; /* per label, per reason */
};

/* Counts an interval's samples. 0, or -1 out of memory. */
int run_failures_add(struct run_failures *f, const struct replay_sample *s, size_t n);
/* `--max-failed` text (a count, or a percentage ending in '%') into *max
 * and *pct: 0, or -1 when it is neither (a count is a whole number up to
 * 1e12, a percentage 0..100). The caller words the refusal
 * (RUN_FAILURES_MAX_EXPECTED). */
int run_failures_parse_max(const char *arg, double *max, int *pct);
#define RUN_FAILURES_MAX_EXPECTED                                                                  \
    "expected a count of requests (e.g. 5) or a percentage of those sent, 0..100% (e.g. 0.5%)"
/* More failed than allowed: max is a count, or with pct a percentage of
 * the requests sent. */
int run_failures_exceed(const struct run_failures *f, double max, int pct);
/* "7 of 300 requests failed (2.3%): GET /x 4 (closed before the whole
 * answer 4), POST /y 3 (connection refused 3)": labels by count, at most
 * 8 named; malloc'ed, NULL when none failed or out of memory. */
char *run_failures_text(const struct run_failures *f, const struct plan *p);
void run_failures_free(struct run_failures *f);

#endif
