/* replay_results.h - the numbers in the results of `preplay drive` and
 * `preplay run` (formats/RESULTS.md): per-request samples, per-label
 * summaries (count, median, p95, p99, with bootstrap bands from the stats
 * library), lateness, handed to the results writer (formats/results.h)
 * as its objects. Shared by both commands so the two files agree. */
#ifndef PREPLAY_REPLAY_RESULTS_H
#define PREPLAY_REPLAY_RESULTS_H

#include <jansson.h>
#include <stddef.h>

#include "plan.h"
#include "replay_drive.h"

/* Percentile q (0..100) of sorted[0..n), linear interpolation (numpy's default). */
double replay_percentile(const double *sorted, size_t n, double q);

/* One label's successful response times grouped: labels[i] is a string id,
 * values its samples. Built from samples of any number of drives. */
struct replay_label_set {
    uint32_t *label_ids;
    double **values;
    size_t *counts, *caps;
    size_t nlabels;
    double *all;
    size_t nall, capall;
};
int replay_label_set_add(struct replay_label_set *ls, const struct replay_sample *s, size_t n);
void replay_label_set_free(struct replay_label_set *ls);

/* {"LABEL": {"count", "median_s", "p95_s", "p99_s", and with bands=1
 * "median_ci_s": [lo, hi], "p95_ci_s", "p99_ci_s" (99% bootstrap, R=1000)}}.
 * NULL on allocation failure. */
json_t *replay_results_labels(const struct plan *p, const struct replay_label_set *ls, int bands);
/* [{"label", "sent_s", "response_s", "late_s", "ok"[, "interval"]}, ...] appended to arr. */
int replay_results_samples(json_t *arr, const struct plan *p, const struct replay_sample *s,
                           size_t n, int interval);
/* {"median_s", "p99_s", "max_s"} of the lateness of the sends. */
json_t *replay_results_lateness(const struct replay_sample *s, size_t n);

#endif
