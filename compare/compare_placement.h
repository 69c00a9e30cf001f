/* compare_placement.h - where each compared run had its database and its
 * clients (compare_placement.c): words for the report, JSON for --json,
 * and whether the runs placed them alike. Never prints. */
#ifndef PREPLAY_COMPARE_PLACEMENT_H
#define PREPLAY_COMPARE_PLACEMENT_H

#include <jansson.h>
#include <stddef.h>

#include "compare.h"

/* One line on the run's database ("127.0.0.1:3306 (TCP), on this machine,
 * sharing the candidate's CPU"); buf holds it when it is built, else a
 * constant string is returned. */
const char *compare_placement_db_text(const struct results_placement_read *pl, char *buf,
                                      size_t len);
/* The same for its clients (the driver of `preplay run`). */
const char *compare_placement_client_text(const struct results_placement_read *pl, char *buf,
                                          size_t len);
/* {"emulated_type", "client", "db"} as in the results, or null when the
 * results did not say. NULL on allocation failure. */
json_t *compare_placement_json(const struct results_placement_read *pl);
/* 0 when two runs that say where they were placed their DB or clients on
 * different sides of the type (or one had a DB and the other none). */
int compare_placement_alike(const struct compare_run *runs, size_t nruns);

#endif
