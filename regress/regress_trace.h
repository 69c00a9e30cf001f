/* regress_trace.h - a recording (a `preplay record`/`collect` directory,
 * one of its .trace files, or its .counters file) as a baseline or target
 * of `preplay regress`: its counter windows (FORMAT.md §9) with the
 * counters only the recorded events know added per window (lock wait, DB
 * time and queries, per-label throughput and response times), in the
 * form results files give (results_reader.h "counters"), under the names
 * `preplay run` uses. Never prints: errors are one line naming the path
 * and what is missing. */
#ifndef PREPLAY_REGRESS_TRACE_H
#define PREPLAY_REGRESS_TRACE_H

#include <stddef.h>

#include "results_reader.h"

/* 1 when path is a recording rather than a results file: a directory, or
 * a file ending in .trace or .counters. */
int regress_trace_is_recording(const char *path);
/* Reads the recording at path into rf (counters, labels; free with
 * results_file_free). role ("baseline"/"target") names it in errors. 0,
 * or -1 with err and nothing left to free. */
int regress_trace_load(const char *path, const char *role, struct results_file *rf, char *err,
                       size_t errlen);

#endif
