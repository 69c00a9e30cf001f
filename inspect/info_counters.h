/* info_counters.h - what `preplay info` says of a recording's counter
 * windows (a .counters file, FORMAT.md §9): how many windows, their
 * length, and each counter's mean, minimum and maximum. Never changes the
 * file; a damaged one is reported, not summarized. */
#ifndef PREPLAY_INFO_COUNTERS_H
#define PREPLAY_INFO_COUNTERS_H

#include <jansson.h>
#include <stddef.h>

/* {file, host, windows, window_s, tick_s, span_s, counters: [{name,
 * measured, mean, min, max}]}; NULL with err (one line) when unreadable. */
json_t *info_counters_json(const char *path, char *err, size_t errlen);
void info_counters_print(json_t *c);

#endif
