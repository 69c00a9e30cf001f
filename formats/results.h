/* results.h - the results JSON of `preplay drive` and `preplay run`
 * (formats/RESULTS.md) is owned by this module and nowhere else: its
 * writer (results_writer.h) builds every object with its keys in their
 * order, its reader (results_reader.h) bounds and validates a file from
 * anywhere and lists the keys it knows, and both share the format's name
 * and version here. Statistics are computed by the callers (the
 * replayer); nothing in the module prints or exits: errors come back as
 * one line naming the file and key. Linked as preplay_results (jansson);
 * the trace and plan codecs of preplay_formats stay free of it. */
#ifndef PREPLAY_RESULTS_H
#define PREPLAY_RESULTS_H

#define RESULTS_FORMAT "preplay-results"
/* 2: response_s counts from the scheduled arrival (late_s is part of it);
 * in version 1 it counted from the first byte sent. The reader refuses 1
 * saying so (formats/RESULTS.md). */
#define RESULTS_VERSION 2
/* Minor versions only add keys an older reader ignores; the writer says
 * which in "version_minor" (absent: 0). 1: "placement" (where a run's
 * database and clients were). 2: "counters" (machine and replay counters
 * per time window, for `preplay regress`). 3: a failed sample's "failure".
 * 4: "cpu_ratio_in_bands" and a label's "cpu_share": the bands hold the
 * CPU ratio's interval (results_bands.h). 5: "warmup" (run --warmup: the
 * load driven before the first interval, not counted). */
#define RESULTS_VERSION_MINOR 5

#endif
