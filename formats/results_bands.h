/* results_bands.h - the CPU ratio's uncertainty in a run's response-time
 * bands (formats/RESULTS.md, "cpu_ratio_in_bands"). Every replayed CPU
 * second is a recorded one times cpu_ratio; with the ratio anywhere in its
 * 95 % interval [lo, hi] a request's CPU part would be lo/ratio .. hi/ratio
 * of what it was. With f a label's CPU share of its mean response time,
 * each of its bands (median_ci_s, p95_ci_s, p99_ci_s) is widened to
 * [low x (1 - f (1 - lo/ratio)), high x (1 + f (hi/ratio - 1))]. `run`
 * applies it when it writes a file; `compare` applies it to older files
 * on loading, so the logic lives here once.
 *
 * Must never: widen a file twice, change a value (only band edges), print
 * or exit. */
#ifndef PREPLAY_RESULTS_BANDS_H
#define PREPLAY_RESULTS_BANDS_H

#include <jansson.h>

/* Mean CPU seconds one request of `label` spent over the tiers, from a
 * run's "resources" (component -> label -> totals) and its "labels": the
 * label's own blocks' CPU plus, for the time its blocks waited for nested
 * components (call_s), the CPU share of the blocks no label of `labels`
 * names (the inner tiers, which the results cannot attribute per
 * front-end label). An inner tier whose label equals a front-end label is
 * counted twice: the estimate errs on the wide side. 0 when nothing is
 * known. */
double results_label_cpu_s(json_t *resources, json_t *labels, const char *label);

/* Widens every label's bands of a run's results document `root` by its
 * cpu_ratio_ci, writes each widened label's "cpu_share" (f) and sets
 * "cpu_ratio_in_bands": true. Does nothing when root already says so, has
 * no valid cpu_ratio_ci, or is not an object. Returns the labels widened. */
int results_widen_ratio_bands(json_t *root);

#endif
