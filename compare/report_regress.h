/* report_regress.h - "Why is this type slower?" of the HTML report: per
 * regress file (`preplay regress`) a table of the flagged counters by
 * severity and, per flagged counter, a chart of the target's windows
 * against the baselines' range and usual level. */
#ifndef PREPLAY_REPORT_REGRESS_H
#define PREPLAY_REPORT_REGRESS_H

#include <stdio.h>

#include "compare.h"

/* Writes the section; *next_id numbers the charts. 0, or -1 when out of
 * memory. */
int report_regress_write(FILE *f, int *next_id, const struct compare_regress *r, size_t n);

#endif
