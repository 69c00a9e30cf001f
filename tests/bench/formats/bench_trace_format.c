/* bench_trace_format.c - speed and size of the trace format on a synthetic
 * realistic mix (small file writes, send/recv, lock pairs, CPU slices over
 * 8 threads): events/s for writing (encode + zstd + write) and reading, and
 * compressed bytes per event, against a baseline measured in the same run:
 * the raw fixed-size struct trace_event compressed with zstd at the same
 * level and frame size. Prints one line per run; run_bench.sh takes medians.
 * Never part of the default test suite (timing). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "trace_file.h"
#include "trace_test_events.h"

static double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 2000000;
    const char *path = argc > 2 ? argv[2] : "/tmp/preplay-bench.trace";
    struct trace_event *evs = malloc(n * sizeof *evs);
    struct trace_test_mix m;
    trace_test_mix_init(&m, 8, 42);
    size_t k = trace_test_mix_preamble(&m, evs);
    while (k < n)
        trace_test_mix_next(&m, &evs[k++]);

    /* ours */
    struct trace_header h;
    trace_test_header(&h, 1, "bench");
    char err[512];
    double t0 = bench_now();
    struct trace_writer *w = trace_writer_open(path, &h, NULL, err, sizeof err);
    if (!w) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    for (size_t i = 0; i < n; i++)
        if (trace_writer_append(w, &evs[i]) != 0) {
            fprintf(stderr, "%s\n", trace_writer_error(w));
            return 1;
        }
    if (trace_writer_close(w, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    double t_write = bench_now() - t0;
    struct stat st;
    stat(path, &st);
    double bytes = (double)st.st_size;

    t0 = bench_now();
    struct trace_reader *r = trace_reader_open(path, NULL, err, sizeof err);
    struct trace_event ev;
    size_t got = 0;
    uint64_t sum = 0;
    while (trace_reader_next(r, &ev) == 1)
        got++, sum += ev.dur_ns;
    double t_read = bench_now() - t0;
    trace_reader_close(r);
    if (got != n) {
        fprintf(stderr, "read %zu of %zu events\n", got, n);
        return 1;
    }

    /* baseline: raw structs, same frame size and zstd level, written */
    size_t frame = 256 << 10, per = frame / sizeof *evs;
    ZSTD_CCtx *c = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, 3);
    ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
    size_t zcap = ZSTD_compressBound(per * sizeof *evs);
    void *z = malloc(zcap);
    FILE *f = fopen(path, "wb");
    double base_bytes = 0;
    t0 = bench_now();
    for (size_t i = 0; i < n; i += per) {
        size_t cnt = n - i < per ? n - i : per;
        size_t zl = ZSTD_compress2(c, z, zcap, &evs[i], cnt * sizeof *evs);
        fwrite(z, 1, zl, f);
        base_bytes += (double)zl;
    }
    fclose(f);
    double t_base = bench_now() - t0;
    unlink(path);
    printf("events %zu write_eps %.0f read_eps %.0f bytes_per_event %.3f "
           "baseline_write_eps %.0f baseline_bytes_per_event %.3f checksum %llu\n",
           n, n / t_write, n / t_read, bytes / n, n / t_base, base_bytes / n,
           (unsigned long long)(sum & 0xff));
    ZSTD_freeCCtx(c);
    free(z);
    free(evs);
    return 0;
}
