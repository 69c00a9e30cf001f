/* test_replay_restore.c - the state replayed file writes change is restored
 * between intervals by the replayer itself (replay_engine_restore_files):
 * only the ranges its writes touched are rewritten (positioned writes and
 * writes at the descriptor's position alike), grown files are cut back by
 * the controller's size restore, cached descriptors are reopened so a
 * position-relative write lands where it did in the first interval, and a
 * file the plan reads at offsets is at least as large as those reads. */
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

#include "dummy_files.h"
#include "replay_exec.h"
#include "replay_fixture.h"

enum { FILE_SIZE = 65536, READ_END = 100000 + 4096 };

/* Bytes of [off, off+len) of the file equal (want_pristine) or differ from
 * the generated content of file i. */
static void check_range(const char *path, uint32_t i, uint64_t off, size_t len, int want_pristine)
{
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    unsigned char *got = malloc(len), *want = malloc(len);
    assert_int_equal(pread(fd, got, len, (off_t)off), (ssize_t)len);
    dummy_files_content(i, off, want, len);
    if (want_pristine)
        assert_memory_equal(got, want, len);
    else
        assert_memory_not_equal(got, want, len);
    free(got);
    free(want);
    close(fd);
}

static uint64_t file_size(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return (uint64_t)st.st_size;
}

static void test_restore_between_intervals(void **state)
{
    (void)state;
    struct plan *p = fixture_plan_new();
    uint32_t c = fixture_component(p, "frontend", 1, 1);
    uint32_t data = fixture_file(p, FILE_SIZE);
    uint32_t input = fixture_file(p, 0); /* filled before the first request */
    fixture_block(p, c, "GET /file");
    fixture_op(p, fixture_fileop(PLAN_FILE_READ, input, 100000, 4096));
    fixture_op(p, fixture_fileop(PLAN_FILE_WRITE, data, 8192, 4096));
    fixture_op(p, fixture_fileop(PLAN_FILE_WRITE, data, -1, 100));         /* at the position: 0 */
    fixture_op(p, fixture_fileop(PLAN_FILE_WRITE, data, FILE_SIZE, 1000)); /* grows it */
    fixture_op(p, fixture_fileop(PLAN_FILE_FSYNC, data, -1, 0));

    char err[512];
    struct dummy_files *ctl = dummy_files_open_plan(test_tmpdir(), p, err, sizeof err);
    assert_non_null(ctl);
    assert_int_equal(dummy_files_initial_size(ctl, input), READ_END);
    assert_int_equal(dummy_files_initial_size(ctl, data), FILE_SIZE);
    assert_int_equal(dummy_files_create(ctl, NULL, err, sizeof err), 0);
    const char *path = dummy_files_path(ctl, data);

    struct replay_config cfg = {.plan = p, .component = c, .dir = test_tmpdir(), .cpu_ratio = 1};
    struct replay_engine *e = replay_engine_new(&cfg, err, sizeof err);
    assert_non_null(e);
    struct replay_thread *t = replay_thread_new(e);
    assert_non_null(t);
    for (int interval = 0; interval < 2; interval++) {
        assert_int_equal(replay_exec_block(t, 0, -1, 0, 0, err, sizeof err), 0);
        assert_int_equal(replay_exec_block(t, 0, -1, 0, 0, err, sizeof err), 0);
        /* the written ranges changed: 0..200 (two writes at the position),
         * 8192..12288, and the file grew by 1000 */
        check_range(path, data, 0, 200, 0);
        check_range(path, data, 8192, 4096, 0);
        check_range(path, data, 200, 8192 - 200, 1);
        assert_int_equal(file_size(path), FILE_SIZE + 1000);
        /* the input file was readable where the plan reads */
        check_range(dummy_files_path(ctl, input), input, 100000, 4096, 1);

        /* controller: sizes; replayer: the ranges it wrote, then syncfs */
        struct dummy_files_stats st;
        assert_int_equal(dummy_files_restore(ctl, 0, &st, err, sizeof err), 0);
        assert_int_equal(st.bytes_truncated, 1000);
        assert_int_equal(st.bytes_written, 0);
        double seconds = -1;
        assert_int_equal(replay_engine_restore_files(e, &seconds, err, sizeof err), 0);
        assert_true(seconds >= 0);
        check_range(path, data, 0, FILE_SIZE, 1);
        assert_int_equal(file_size(path), FILE_SIZE);
    }
    replay_thread_free(t);
    replay_engine_free(e);
    dummy_files_close(ctl);
    fixture_plan_free(p);
}

static void test_settle_error_names_dir(void **state)
{
    (void)state;
    char dir[300], err[512] = "";
    snprintf(dir, sizeof dir, "%s/gone", test_tmpdir());
    struct dummy_file_spec spec = {"x.dat", 10};
    struct dummy_files *d = dummy_files_open(dir, &spec, 1, err, sizeof err);
    assert_non_null(d);
    assert_int_equal(dummy_files_settle(d, err, sizeof err), 0);
    assert_int_equal(rmdir(dir), 0);
    assert_int_equal(dummy_files_settle(d, err, sizeof err), -1);
    assert_non_null(strstr(err, dir));
    dummy_files_close(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_restore_between_intervals, test_tmpdir_setup,
                                        test_tmpdir_teardown),
        cmocka_unit_test_setup_teardown(test_settle_error_names_dir, test_tmpdir_setup,
                                        test_tmpdir_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
