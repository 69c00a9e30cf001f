/* test_dummy_files.c - dummy files for replay: names, generated content
 * (random access, incompressible), creation at the manifest's sizes, and
 * restore after replayed writes (tracked ranges rewritten exactly, grown
 * files truncated, shrunk files re-extended, missing files recreated). */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "test_tmpdir.h"
#include <zstd.h>

#include "dummy_files.h"

/* The file's bytes equal the generated content of file i at full length. */
static void assert_pristine(const char *path, uint32_t i, uint64_t size)
{
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    assert_int_equal((uint64_t)st.st_size, size);
    unsigned char *got = malloc(size + 1), *want = malloc(size + 1);
    assert_int_equal(pread(fd, got, size, 0), (ssize_t)size);
    dummy_files_content(i, 0, want, size);
    assert_memory_equal(got, want, size);
    free(got);
    free(want);
    close(fd);
}

static void test_content(void **state)
{
    (void)state;
    enum { N = 1 << 20 };
    unsigned char *all = malloc(N), *part = malloc(N);
    dummy_files_content(3, 0, all, N);
    /* any range, aligned or not, is the same slice of the whole */
    const uint64_t offs[] = {0, 1, 7, 8, 9, 4095, 65537};
    const size_t lens[] = {1, 3, 8, 15, 4096, 100001};
    for (size_t a = 0; a < sizeof offs / sizeof offs[0]; a++)
        for (size_t b = 0; b < sizeof lens / sizeof lens[0]; b++) {
            dummy_files_content(3, offs[a], part, lens[b]);
            assert_memory_equal(part, all + offs[a], lens[b]);
        }
    /* files differ from each other */
    dummy_files_content(4, 0, part, 4096);
    assert_memory_not_equal(part, all, 4096);
    /* incompressible: zstd cannot shrink it */
    size_t cap = ZSTD_compressBound(N);
    void *z = malloc(cap);
    size_t zn = ZSTD_compress(z, cap, all, N, 3);
    assert_false(ZSTD_isError(zn));
    assert_true(zn >= N);
    free(z);
    free(all);
    free(part);
}

static void test_names_and_create(void **state)
{
    (void)state;
    struct dummy_file_spec specs[] = {{"/var/lib/app/orders.db", 300000},
                                      {"/tmp/we ird$name", 10},
                                      {"", 0},
                                      {"/srv/..", 5},
                                      {"/var/log/app/orders.db", 4097}};
    char err[512];
    char sub[300];
    snprintf(sub, sizeof sub, "%s/a/b", test_tmpdir()); /* created with parents */
    struct dummy_files *d = dummy_files_open(sub, specs, 5, err, sizeof err);
    assert_non_null(d);
    assert_int_equal(dummy_files_count(d), 5);
    const char *want[] = {"00000-orders.db", "00001-we_ird_name", "00002-file", "00003-file",
                          "00004-orders.db"};
    for (uint32_t i = 0; i < 5; i++) {
        char p[400];
        snprintf(p, sizeof p, "%s/%s", sub, want[i]);
        assert_string_equal(dummy_files_path(d, i), p);
    }
    assert_null(dummy_files_path(d, 5));
    assert_int_equal(dummy_files_total_bytes(d), 300000 + 10 + 0 + 5 + 4097);
    assert_int_equal(dummy_files_check_space(d, err, sizeof err), 0);
    struct dummy_files_stats st;
    assert_int_equal(dummy_files_create(d, &st, err, sizeof err), 0);
    assert_int_equal(st.files, 5);
    assert_int_equal(st.bytes_written, 300000 + 10 + 0 + 5 + 4097);
    for (uint32_t i = 0; i < 5; i++)
        assert_pristine(dummy_files_path(d, i), i, specs[i].initial_size);
    /* allocated, not sparse */
    struct stat sb;
    assert_int_equal(stat(dummy_files_path(d, 0), &sb), 0);
    assert_true((uint64_t)sb.st_blocks * 512 >= 300000);
    /* the fadvise eviction works on them */
    assert_int_equal(dummy_files_drop_cache(d, DUMMY_CACHE_FADVISE, err, sizeof err),
                     DUMMY_CACHE_FADVISE);
    dummy_files_close(d);

    /* a directory that is a file */
    char file[300];
    snprintf(file, sizeof file, "%s/plainfile", test_tmpdir());
    close(open(file, O_CREAT | O_WRONLY, 0644));
    assert_null(dummy_files_open(file, specs, 1, err, sizeof err));
    char want_err[400];
    snprintf(want_err, sizeof want_err, "%s: not a directory", file);
    assert_string_equal(err, want_err);
}

static void scribble(const char *path, uint64_t off, size_t len)
{
    int fd = open(path, O_WRONLY);
    assert_true(fd >= 0);
    char *junk = malloc(len);
    memset(junk, 'X', len);
    assert_int_equal(pwrite(fd, junk, len, (off_t)off), (ssize_t)len);
    free(junk);
    close(fd);
}

static void test_restore(void **state)
{
    (void)state;
    struct dummy_file_spec specs[] = {{"a", 1 << 20}, {"b", 100000}, {"c", 50000}, {"d", 8192}};
    char err[512];
    struct dummy_files *d = dummy_files_open(test_tmpdir(), specs, 4, err, sizeof err);
    assert_non_null(d);
    assert_int_equal(dummy_files_create(d, NULL, err, sizeof err), 0);

    /* a: two overlapping writes, one adjacent sequential pair, one far */
    scribble(dummy_files_path(d, 0), 100, 50);
    dummy_files_note_write(d, 0, 100, 50);
    scribble(dummy_files_path(d, 0), 120, 100);
    dummy_files_note_write(d, 0, 120, 100);
    scribble(dummy_files_path(d, 0), 5000, 10);
    dummy_files_note_write(d, 0, 5000, 10);
    scribble(dummy_files_path(d, 0), 5010, 10);
    dummy_files_note_write(d, 0, 5010, 10);
    scribble(dummy_files_path(d, 0), 900000, 1000);
    dummy_files_note_write(d, 0, 900000, 1000);
    /* b: appended past its end (grew by 7000) */
    scribble(dummy_files_path(d, 1), 99000, 8000);
    dummy_files_note_write(d, 1, 99000, 8000);
    /* c: truncated by replay to 20000 */
    assert_int_equal(truncate(dummy_files_path(d, 2), 20000), 0);
    /* d: deleted */
    assert_int_equal(unlink(dummy_files_path(d, 3)), 0);

    struct dummy_files_stats st;
    assert_int_equal(dummy_files_restore(d, 0, &st, err, sizeof err), 0);
    /* a: [100,220) + [5000,5020) + [900000,901000); b: [99000,100000);
     * c: [20000,50000); d: 8192 whole */
    assert_int_equal(st.bytes_written, 120 + 20 + 1000 + 1000 + 30000 + 8192);
    assert_int_equal(st.bytes_truncated, 7000);
    assert_int_equal(st.files_recreated, 1);
    assert_int_equal(st.files, 4);
    for (uint32_t i = 0; i < 4; i++)
        assert_pristine(dummy_files_path(d, i), i, specs[i].initial_size);

    /* nothing noted since: a restore writes nothing */
    assert_int_equal(dummy_files_restore(d, 0, &st, err, sizeof err), 0);
    assert_int_equal(st.bytes_written, 0);
    assert_int_equal(st.bytes_truncated, 0);

    /* many scattered writes (more than the range table holds, so it
     * collapses them into one range): still exact */
    for (uint64_t k = 0; k < 70000; k++) {
        uint64_t off = k * 14 % (1 << 20);
        if (k % 5000 == 0)
            scribble(dummy_files_path(d, 0), off, 3);
        dummy_files_note_write(d, 0, off, 3);
    }
    assert_int_equal(dummy_files_restore(d, 0, &st, err, sizeof err), 0);
    assert_pristine(dummy_files_path(d, 0), 0, 1 << 20);

    /* untracked change: full restore rewrites every byte */
    scribble(dummy_files_path(d, 1), 42, 42);
    assert_int_equal(dummy_files_restore(d, 1, &st, err, sizeof err), 0);
    assert_int_equal(st.bytes_written, (1 << 20) + 100000 + 50000 + 8192);
    assert_pristine(dummy_files_path(d, 1), 1, 100000);
    dummy_files_close(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_content),
        cmocka_unit_test_setup_teardown(test_names_and_create, test_tmpdir_setup,
                                        test_tmpdir_teardown),
        cmocka_unit_test_setup_teardown(test_restore, test_tmpdir_setup, test_tmpdir_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
