/* fuzz_results_reader.c - libFuzzer target for the results-file reader
 * (results_read, formats/results.h) that `preplay compare` uses on files
 * from other machines, and compare_run_load on top of it: any byte
 * string, through a memfd since the readers take a path. They must never
 * crash, hang or read out of bounds; a file they accept must be
 * internally consistent: every label reachable by name, every sample a
 * finite number >= 0, every band low <= high (what the reader promises
 * compare_analyze); counters (results 2.2, what `preplay regress` reads):
 * names unique and findable, every window's values NAN or finite >= 0. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "compare.h"
#include "results_reader.h"
#include "../fuzz/fuzz_input_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_check_results(const char *path)
{
    char err[RESULTS_ERR_LEN] = "";
    struct results_file rf;
    if (results_read(path, &rf, err, sizeof err)) {
        if (!err[0])
            abort(); /* a refusal must say why */
        return;
    }
    for (size_t i = 0; i < rf.nlabels; i++) {
        const struct results_label *l = &rf.labels[i];
        if (results_file_label(&rf, l->name) == NULL)
            abort();
        for (int m = 0; m < RESULTS_NMETRICS; m++)
            if (!(l->value[m] >= 0) || !(l->lo[m] <= l->hi[m]))
                abort();
        for (size_t j = 0; j < l->nsamples; j++)
            if (!isfinite(l->samples[j]) || l->samples[j] < 0)
                abort();
    }
    const struct results_counters_read *c = &rf.counters;
    if (c->present && !(c->window_s > 0 && c->tick_s > 0))
        abort();
    for (size_t k = 0; k < c->nnames; k++)
        if (results_counter_index(c, c->names[k]) != (long)k)
            abort();
    for (size_t w = 0; w < c->nwindows; w++) {
        if (!(c->windows[w].length_s > 0) || c->windows[w].interval < 1)
            abort();
        for (size_t k = 0; k < c->nnames; k++)
            if (!isnan(c->windows[w].values[k]) &&
                !(isfinite(c->windows[w].values[k]) && c->windows[w].values[k] >= 0))
                abort();
    }
    results_file_free(&rf);
}

static void fuzz_check_compare(const char *path)
{
    char err[COMPARE_ERR_LEN] = "";
    struct compare_run run;
    if (compare_run_load(path, &run, err, sizeof err)) {
        if (!err[0])
            abort();
        return;
    }
    for (size_t i = 0; i < run.nlabels; i++) {
        const struct compare_label *l = &run.labels[i];
        if (compare_run_label(&run, l->name) == NULL)
            abort();
        for (size_t j = 0; j < l->nsamples; j++)
            if (!isfinite(l->samples[j]) || l->samples[j] < 0)
                abort();
    }
    compare_run_free(&run);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    int fd = fuzz_input_file(data, size, "fuzz_results", path, sizeof path);
    if (fd < 0)
        return 0;
    fuzz_check_results(path);
    fuzz_check_compare(path);
    close(fd);
    return 0;
}
