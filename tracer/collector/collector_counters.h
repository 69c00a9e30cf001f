/* collector_counters.h - the counter windows of a recording: while
 * `record`/`collect` runs, a thread samples the machine's counters and the
 * CPU of the traced processes (counters/machine_counters.h, the ones
 * `preplay run` measures) and writes one COUNTERS record per window into
 * DIR/machine-PID.counters (FORMAT.md §9), flushed at each window so a
 * killed collector keeps every finished one. */
#ifndef PREPLAY_COLLECTOR_COUNTERS_H
#define PREPLAY_COLLECTOR_COUNTERS_H

#include <stdint.h>
#include <stddef.h>

struct trace_header;
struct collector_counters;

/* Creates DIR/machine-PID.counters with hdr (its pid, exe and argv are
 * replaced by the collector's) and starts sampling every window_s
 * (COUNTERS_MIN_WINDOW_S..COUNTERS_MAX_WINDOW_S). NULL with err on
 * failure. */
struct collector_counters *collector_counters_start(const char *dir, double window_s,
                                                    const struct trace_header *hdr, char *err,
                                                    size_t errlen);
/* pid is traced from now on: its CPU counts in run_cpu. */
void collector_counters_add_pid(struct collector_counters *cc, uint32_t pid);
/* Closes the last window (kept when at least half a window long), the
 * file, and frees; NULL is fine. *bytes gets the file's size on disk (0
 * for NULL), so the collector's total counts it. 0, or -1 with err (a
 * write failed). */
int collector_counters_stop(struct collector_counters *cc, uint64_t *bytes, char *err,
                            size_t errlen);

#endif
