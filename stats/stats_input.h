/* stats_input.h - reads samples for `preplay stats`: CSV (value plus interval
 * index or timestamp, optional label) or one number per line. Bad records are
 * reported one line each (file:line: what) and skipped; what is valid is
 * kept. Pure parsing: no statistics, no files opened here (the CLI reads the
 * file, the fuzz target feeds bytes). */
#ifndef PREPLAY_STATS_INPUT_H
#define PREPLAY_STATS_INPUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum stats_time_kind {
    STATS_TIME_NONE,      /* one number per line: time = record number */
    STATS_TIME_INDEX,     /* an interval index column (integer >= 0) */
    STATS_TIME_TIMESTAMP, /* a timestamp column in seconds */
};

struct stats_input {
    double *value;
    double *time;       /* record number, interval index or timestamp */
    uint32_t *label_id; /* index into labels, UINT32_MAX when none */
    size_t n, cap;
    char **labels;
    size_t nlabels;
    enum stats_time_kind time_kind;
    size_t bad; /* records rejected */
};

#define STATS_INPUT_MAX_LABELS 4096
#define STATS_NO_LABEL UINT32_MAX

#define STATS_INPUT_TIMESTAMPS 1 /* the second CSV column is a timestamp */
#define STATS_INPUT_POSITIVE 2   /* reject values <= 0 (the log scale) */

/* Parse `len` bytes named `name`. A header line names the columns (value,
 * interval, timestamp/time, label); without one, CSV columns are value,
 * interval (or timestamp with STATS_INPUT_TIMESTAMPS in flags), label. Messages about
 * rejected records go to diag (NULL: silent), at most max_messages of them.
 * Returns -1 with err only when nothing can be read at all (e.g. a header
 * without a value column, out of memory). */
int stats_input_parse(const char *buf, size_t len, const char *name, int flags, FILE *diag,
                      size_t max_messages, struct stats_input *in, char *err);
void stats_input_free(struct stats_input *in);

/* "90s", "12h", "7d", "1w", "30m", "1.5h" or plain seconds; -1 on error. */
double stats_parse_duration(const char *s);

#endif
