/* fuzz_results_reader.c - libFuzzer target for the results-file reader
 * `preplay compare` uses on files from other machines (compare_run_load):
 * any byte string, through a memfd since the loader takes a path. It must
 * never crash, hang or read out of bounds; a file it accepts must be
 * internally consistent: every label reachable by name, every sample a
 * finite number >= 0 (what the loader promises compare_analyze). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "compare.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = memfd_create("fuzz_results", MFD_CLOEXEC);
    if (fd < 0)
        return 0;
    if (write(fd, data, size) != (ssize_t)size) {
        close(fd);
        return 0;
    }
    char path[64], err[COMPARE_ERR_LEN];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    struct compare_run run;
    if (compare_run_load(path, &run, err, sizeof err) == 0) {
        for (size_t i = 0; i < run.nlabels; i++) {
            const struct compare_label *l = &run.labels[i];
            if (compare_run_label(&run, l->name) == NULL)
                abort();
            for (size_t j = 0; j < l->nsamples; j++)
                if (!isfinite(l->samples[j]) || l->samples[j] < 0)
                    abort();
        }
        compare_run_free(&run);
    } else if (!err[0]) {
        abort(); /* a refusal must say why */
    }
    close(fd);
    return 0;
}
