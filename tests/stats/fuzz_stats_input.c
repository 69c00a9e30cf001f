/* fuzz_stats_input.c - libFuzzer target for the `preplay stats` sample
 * reader (stats/stats_input.c) and the duration parser: any bytes
 * must parse without reading out of bounds, and every record kept must be a
 * finite, non-negative value (positive under the log scale's flag) with a
 * valid label id. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"
#include "stats_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct stats_input in;
    char err[STATS_ERR_LEN];
    int flags = size > 0 ? data[0] & (STATS_INPUT_TIMESTAMPS | STATS_INPUT_POSITIVE) : 0;
    if (stats_input_parse((const char *)data, size, "fuzz", flags, NULL, 0, &in, err) == 0) {
        for (size_t i = 0; i < in.n; i++) {
            if (!isfinite(in.value[i]) || in.value[i] < 0 || !isfinite(in.time[i]))
                abort();
            if ((flags & STATS_INPUT_POSITIVE) && !(in.value[i] > 0))
                abort();
            if (in.label_id[i] != STATS_NO_LABEL && in.label_id[i] >= in.nlabels)
                abort();
        }
        stats_input_free(&in);
    }
    char text[32];
    size_t n = size < sizeof text - 1 ? size : sizeof text - 1;
    memcpy(text, data, n);
    text[n] = 0;
    double d = stats_parse_duration(text);
    if (d != -1 && !(d > 0))
        abort();
    return 0;
}
