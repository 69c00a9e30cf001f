/* trace_counters.h - reads a recording's counter windows: the COUNTERS
 * records of a .counters file (FORMAT.md §9) into memory, every window's
 * values under the names of the first window and any later name added
 * as a column. For `preplay info` and `preplay regress`. Never prints:
 * errors are one line naming the file and what is wrong. */
#ifndef PREPLAY_TRACE_COUNTERS_H
#define PREPLAY_TRACE_COUNTERS_H

#include <stddef.h>
#include <stdint.h>

#include "trace_file.h"

/* Bounds of what one file may hold (FORMAT.md §9): the reader refuses
 * more, naming the limit. */
#define TRACE_COUNTERS_MAX_WINDOWS 1000000u
#define TRACE_COUNTERS_MAX_NAMES TRACE_MAX_COUNTERS

struct trace_counters_window {
    uint64_t start_ns, length_ns; /* CLOCK_MONOTONIC of the recording host */
    double *values;               /* nnames of them; NAN: not measured */
};

struct trace_counters_file {
    char host[256];
    char recording_id[40];
    char record_options[512];
    uint64_t mono_anchor_ns, real_anchor_ns;
    double window_s, tick_s; /* of the first window */
    char **names;
    size_t nnames;
    struct trace_counters_window *windows;
    size_t nwindows;
};

/* Reads path. 0, or -1 with err and nothing left to free. */
int trace_counters_read(const char *path, struct trace_counters_file *f, char *err, size_t errlen);
void trace_counters_file_free(struct trace_counters_file *f);
/* Index of name, or -1. */
long trace_counters_index(const struct trace_counters_file *f, const char *name);

#endif
