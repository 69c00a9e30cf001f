/* bench_restore.c - cost of restoring dummy files between replay
 * intervals: creating a set (baseline), restoring after replay wrote a
 * fraction of it (tracked ranges), and a full restore (untracked).
 *
 * usage: bench_restore DIR [MB]   (default 256 MB in 16 files) */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dummy_files.h"

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_restore DIR [MB]\n");
        return 2;
    }
    uint64_t mb = argc > 2 ? strtoull(argv[2], NULL, 10) : 256;
    enum { NFILES = 16 };
    struct dummy_file_spec specs[NFILES];
    char names[NFILES][32];
    for (int i = 0; i < NFILES; i++) {
        snprintf(names[i], sizeof names[i], "/data/table%02d.ibd", i);
        specs[i].recorded_path = names[i];
        specs[i].initial_size = mb * 1024 * 1024 / NFILES;
    }
    char err[512];
    struct dummy_files *d = dummy_files_open(argv[1], specs, NFILES, err, sizeof err);
    if (!d || dummy_files_check_space(d, err, sizeof err)) {
        fprintf(stderr, "bench_restore: %s\n", err);
        return 1;
    }
    struct dummy_files_stats st;
    if (dummy_files_create(d, &st, err, sizeof err)) {
        fprintf(stderr, "bench_restore: %s\n", err);
        return 1;
    }
    double create_s = st.seconds;
    printf("create   %6.1f MB in %.3f s (%.0f MB/s)  [baseline]\n", st.bytes_written / 1e6,
           create_s, st.bytes_written / 1e6 / create_s);
    /* replay-like writes: 4 KiB pages at scattered offsets, 1% of the data,
     * plus appends growing every file by 64 KiB */
    char page[4096];
    memset(page, 'R', sizeof page);
    uint64_t per_file = specs[0].initial_size, pages = per_file / 4096;
    for (int i = 0; i < NFILES; i++) {
        int fd = open(dummy_files_path(d, (uint32_t)i), O_WRONLY);
        for (uint64_t k = 0; k < pages / 100; k++) {
            uint64_t off = (k * 7919 % pages) * 4096;
            if (pwrite(fd, page, sizeof page, (off_t)off) != (ssize_t)sizeof page)
                return 1;
            dummy_files_note_write(d, (uint32_t)i, off, sizeof page);
        }
        for (int k = 0; k < 16; k++) {
            uint64_t off = per_file + (uint64_t)k * 4096;
            if (pwrite(fd, page, sizeof page, (off_t)off) != (ssize_t)sizeof page)
                return 1;
            dummy_files_note_write(d, (uint32_t)i, off, sizeof page);
        }
        close(fd);
    }
    if (dummy_files_restore(d, 0, &st, err, sizeof err)) {
        fprintf(stderr, "bench_restore: %s\n", err);
        return 1;
    }
    printf("restore  %6.1f MB rewritten, %.1f MB truncated in %.3f s (%.3fx create)  "
           "[tracked, 1%% written]\n",
           st.bytes_written / 1e6, st.bytes_truncated / 1e6, st.seconds, st.seconds / create_s);
    if (dummy_files_restore(d, 1, &st, err, sizeof err)) {
        fprintf(stderr, "bench_restore: %s\n", err);
        return 1;
    }
    printf("restore  %6.1f MB rewritten in %.3f s (%.3fx create)  [full, untracked]\n",
           st.bytes_written / 1e6, st.seconds, st.seconds / create_s);
    for (uint32_t i = 0; i < NFILES; i++)
        unlink(dummy_files_path(d, i));
    dummy_files_close(d);
    return 0;
}
