/* bench_plan_restore.c - what restoring a plan's dummy files between
 * intervals costs, before (every file rewritten whole, `full = 1`, as
 * `preplay run` did) and after (only the ranges the interval's writes
 * touched, `full = 0`, as each replayer now does at RESET), plus the
 * write-back wait (syncfs) an interval now starts after. Each repetition
 * replays one interval's worth of the plan's file writes (every WRITE op:
 * at its offset, or at the file's running position for offset -1), notes
 * them, and restores; the two methods alternate so both see the same disk.
 *
 * usage: bench_plan_restore PLAN DIR [REPS]   (default 5 repetitions)
 * Must never: write outside DIR. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dummy_files.h"
#include "plan.h"

static double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int bench_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* One interval's file writes; returns bytes written or -1. */
static long long bench_interval_writes(const struct plan *p, struct dummy_files *d)
{
    uint64_t *pos = calloc(p->nfiles ? p->nfiles : 1, sizeof *pos);
    int *fds = malloc((p->nfiles ? p->nfiles : 1) * sizeof *fds);
    static char junk[1 << 16];
    long long total = 0;
    if (!pos || !fds)
        return -1;
    for (uint32_t i = 0; i < p->nfiles; i++)
        fds[i] = open(dummy_files_path(d, i), O_RDWR | O_CLOEXEC);
    for (uint32_t o = 0; o < p->nops && total >= 0; o++) {
        const struct plan_op *op = &p->ops[o];
        if (op->kind != PLAN_OP_FILE || op->op != PLAN_FILE_WRITE || op->a.file.file >= p->nfiles)
            continue;
        uint32_t f = op->a.file.file;
        uint64_t off = op->a.file.offset >= 0 ? (uint64_t)op->a.file.offset : pos[f];
        uint64_t left = op->a.file.size, at = off;
        while (left) {
            size_t n = left < sizeof junk ? (size_t)left : sizeof junk;
            if (fds[f] < 0 || pwrite(fds[f], junk, n, (off_t)at) != (ssize_t)n) {
                total = -1;
                break;
            }
            at += n;
            left -= n;
        }
        if (op->a.file.offset < 0)
            pos[f] = at;
        dummy_files_note_write(d, f, off, op->a.file.size);
        total += (long long)op->a.file.size;
    }
    for (uint32_t i = 0; i < p->nfiles; i++)
        if (fds[i] >= 0) {
            fdatasync(fds[i]);
            close(fds[i]);
        }
    free(pos);
    free(fds);
    return total;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench_plan_restore PLAN DIR [REPS]\n");
        return 2;
    }
    int reps = argc > 3 ? atoi(argv[3]) : 5;
    if (reps < 1 || reps > 50) {
        fprintf(stderr, "bench_plan_restore: REPS must be 1..50\n");
        return 2;
    }
    char err[512];
    struct plan *p = plan_read(argv[1], err, sizeof err);
    if (!p) {
        fprintf(stderr, "bench_plan_restore: %s\n", err);
        return 1;
    }
    struct dummy_files *d = dummy_files_open_plan(argv[2], p, err, sizeof err);
    struct dummy_files_stats st;
    if (!d || dummy_files_check_space(d, err, sizeof err) ||
        dummy_files_create(d, &st, err, sizeof err)) {
        fprintf(stderr, "bench_plan_restore: %s\n", err);
        return 1;
    }
    printf("%s: %u dummy files, %.1f MB, created in %.3f s\n", argv[1], dummy_files_count(d),
           (double)dummy_files_total_bytes(d) / 1e6, st.seconds);
    double *full = calloc((size_t)reps, sizeof(double)),
           *ranged = calloc((size_t)reps, sizeof(double));
    double *settle = calloc((size_t)reps, sizeof(double));
    long long written = 0;
    uint64_t full_bytes = 0, ranged_bytes = 0;
    if (!full || !ranged || !settle)
        return 1;
    for (int r = 0; r < reps; r++) {
        for (int method = 0; method < 2; method++) {
            written = bench_interval_writes(p, d);
            if (written < 0) {
                fprintf(stderr, "bench_plan_restore: replaying the writes failed\n");
                return 1;
            }
            if (dummy_files_restore(d, method == 0, &st, err, sizeof err)) {
                fprintf(stderr, "bench_plan_restore: %s\n", err);
                return 1;
            }
            double t0 = bench_now();
            if (dummy_files_settle(d, err, sizeof err)) {
                fprintf(stderr, "bench_plan_restore: %s\n", err);
                return 1;
            }
            if (method == 0) {
                full[r] = st.seconds;
                full_bytes = st.bytes_written;
            } else {
                ranged[r] = st.seconds;
                ranged_bytes = st.bytes_written;
                settle[r] = bench_now() - t0;
            }
        }
    }
    double f = bench_median(full, reps), g = bench_median(ranged, reps);
    printf("one interval's writes: %lld bytes; median of %d alternating repetitions:\n", written,
           reps);
    printf("  restore, full (before)     %8.1f MB rewritten  %.4f s\n", (double)full_bytes / 1e6,
           f);
    printf("  restore, ranges (after)    %8.3f MB rewritten  %.4f s  (%.3fx before)\n",
           (double)ranged_bytes / 1e6, g, f > 0 ? g / f : 0);
    printf("  then syncfs (after)                            %.4f s\n", bench_median(settle, reps));
    free(full);
    free(ranged);
    free(settle);
    dummy_files_close(d);
    plan_free(p);
    return 0;
}
