/* regress_load.h - results files (formats/RESULTS.md "counters") into a
 * regress_table (regress.h) for `preplay regress`: every file read and
 * checked (counters present, enough windows, one window length, the
 * target sharing labels with each baseline), the counters common to all
 * of them. Never prints: errors are one line naming the file and what is
 * missing. */
#ifndef PREPLAY_REGRESS_LOAD_H
#define PREPLAY_REGRESS_LOAD_H

#include <stddef.h>

#include "regress.h"
#include "results_reader.h"

struct regress_input {
    struct results_file *files; /* baselines, then the target */
    size_t nfiles;
    char **names;
    char (*num_env)[2][32]; /* per file: its cpus and memory_bytes as text */
    struct regress_table table;
};

/* Loads paths[0..n-2] as baselines and paths[n-1] as the target; needs
 * min_windows windows in each. 0, or -1 with err (nothing left to free). */
int regress_load(const char *const *paths, size_t n, size_t min_windows, struct regress_input *in,
                 char *err, size_t errlen);
void regress_input_free(struct regress_input *in);

#endif
