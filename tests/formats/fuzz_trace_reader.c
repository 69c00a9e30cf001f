/* fuzz_trace_reader.c - libFuzzer target for the streaming trace reader:
 * any byte string, opened as a trace (through a memfd, since the reader
 * takes a path), read to the end with and without salvage, looking up every
 * string id seen, every COUNTERS window's entries decoded (2.5), within
 * the machine's memory budget and an explicit 8 MB one, and the
 * same bytes through the counters file reader (trace_counters.h). The
 * reader must never crash, hang or read out of bounds. */
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "trace_counters.h"
#include "trace_file.h"
#include "../fuzz/fuzz_input_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64], err[512];
    int fd = fuzz_input_file(data, size, "fuzz_trace", path, sizeof path);
    if (fd < 0)
        return 0;
    for (int salvage = 0; salvage < 2; salvage++) {
        /* with salvage, an explicit memory budget (8 MB) as well as the
         * machine's: both ways of refusing a string table */
        struct trace_reader_options o = {.salvage = salvage, .max_bytes = salvage ? 8u << 20 : 0};
        struct trace_reader *r = trace_reader_open(path, &o, err, sizeof err);
        if (!r)
            continue;
        struct trace_event ev;
        int rc, n = 0;
        while ((rc = trace_reader_next(r, &ev)) == 1 && n++ < 1000000) {
            uint32_t len;
            if (ev.type == TRACE_EV_FILE)
                (void)trace_reader_string(r, ev.u.file.path_id, &len);
            if (ev.type == TRACE_EV_COUNTERS) {
                static struct trace_counter c[TRACE_MAX_COUNTERS];
                size_t k = trace_counters_decode(&ev, c);
                for (size_t i = 0; i < k; i++) {
                    volatile char last = c[i].name[c[i].name_len - 1];
                    (void)last;
                }
            }
            if (ev.type == TRACE_EV_STRING && ev.u.string.len) {
                volatile char c = ((const char *)ev.data)[ev.u.string.len - 1];
                (void)c;
            }
        }
        (void)trace_reader_error(r);
        (void)trace_reader_warning(r);
        trace_reader_close(r);
    }
    struct trace_counters_file cf;
    if (trace_counters_read(path, &cf, err, sizeof err) == 0)
        trace_counters_file_free(&cf);
    close(fd);
    return 0;
}
