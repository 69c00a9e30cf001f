/* report_time.h - "Where the time goes" of the HTML report: per front-end
 * label, the front end's own time per resource and its wait for each inner
 * tier (named as that tier), with the recording as a bar of its own; then
 * the inner tiers' time attributed to the front-end labels they served. */
#ifndef PREPLAY_REPORT_TIME_H
#define PREPLAY_REPORT_TIME_H

#include <stdio.h>

#include "compare.h"

/* Writes the section's charts and table; *next_id numbers the charts. 0,
 * or -1 when out of memory. */
int report_time_write(FILE *f, int *next_id, const struct compare_run *runs, size_t nruns,
                      const struct compare_recording *rec, const struct compare_verdict *v);

#endif
