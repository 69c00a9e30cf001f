/* report_duet.h - "Versions (duet)" of the HTML report: per duet file a
 * table and a chart of B/A per label with its interval around 1, and the
 * A/A interval behind it when compare has the A/A file. */
#ifndef PREPLAY_REPORT_DUET_H
#define PREPLAY_REPORT_DUET_H

#include <stdio.h>

#include "compare.h"

/* Writes the section; *next_id numbers the charts. 0, or -1 when out of
 * memory. */
int report_duet_write(FILE *f, int *next_id, const struct compare_duet *d, size_t n);

#endif
