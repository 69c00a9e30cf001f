/* regress_output.h - regress.json (formats/REGRESS.md) and the summary
 * table `preplay regress` prints, from an analysis (regress.h). Builds
 * and prints only; never computes a number. */
#ifndef PREPLAY_REGRESS_OUTPUT_H
#define PREPLAY_REGRESS_OUTPUT_H

#include <jansson.h>
#include <stdio.h>

#include "regress.h"
#include "regress_reader.h" /* REGRESS_FORMAT, REGRESS_VERSION(_MINOR) */

/* The whole document; at most max_rules rules (the most changed first).
 * NULL out of memory. */
json_t *regress_output_json(const struct regress_table *t, const struct regress_options *o,
                            const struct regress_result *res, double window_s, size_t max_rules);
/* "N rules ..., M counters flagged" and one line per flagged counter. */
void regress_output_print(FILE *out, const struct regress_table *t,
                          const struct regress_result *res);

#endif
