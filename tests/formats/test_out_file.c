/* test_out_file.c - unit tests of formats/out_file.h, the one way preplay
 * creates output files: a symlink or hard link planted at an output name
 * is replaced (create, begin/commit) or refused (open: the replayer's
 * writes into existing dummy files), never written through; the file it
 * reaches keeps its content and mode; a FIFO does not hang the open; a
 * world-writable directory without the sticky bit is refused, one with it
 * accepted; a read-only or non-directory output directory is named.
 * Never touches anything outside its temporary directory. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "out_file.h"
#include "test_tmpdir.h"

static char victim[4096];

/* A file "elsewhere" (its own directory) with known content and mode. */
static void make_victim(void)
{
    mkdir(test_tmpdir_path("elsewhere"), 0755);
    snprintf(victim, sizeof victim, "%s/elsewhere/victim", test_tmpdir());
    FILE *f = fopen(victim, "w");
    assert_non_null(f);
    fputs("precious\n", f);
    fclose(f);
    assert_int_equal(chmod(victim, 0640), 0);
}

static void assert_victim_intact(void)
{
    char buf[64] = {0};
    FILE *f = fopen(victim, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    assert_int_equal(n, 9);
    assert_string_equal(buf, "precious\n");
    struct stat st;
    assert_int_equal(stat(victim, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0640);
}

static void plant(const char *path, int hard)
{
    unlink(path);
    assert_int_equal(hard ? link(victim, path) : symlink(victim, path), 0);
}

static void assert_own_file(const char *path, mode_t mode)
{
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_nlink, 1);
    assert_int_equal(st.st_mode & 07777, mode);
}

static void test_create_replaces_links(void **state)
{
    (void)state;
    make_victim();
    char err[512];
    for (int hard = 0; hard < 2; hard++) {
        const char *p = test_tmpdir_path("created");
        plant(p, hard);
        int fd = out_file_create(p, O_WRONLY, 0600, err, sizeof err);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, "trace", 5), 5);
        close(fd);
        assert_victim_intact();
        assert_own_file(p, 0600);
    }
}

static void test_commit_replaces_links(void **state)
{
    (void)state;
    make_victim();
    char err[512];
    for (int hard = 0; hard < 2; hard++) {
        const char *p = test_tmpdir_path("whole.json");
        plant(p, hard);
        struct out_file o;
        assert_int_equal(out_file_begin(&o, p, 0644, err, sizeof err), 0);
        FILE *f = out_file_stream(&o, err, sizeof err);
        assert_non_null(f);
        fputs("{}\n", f);
        assert_int_equal(out_file_commit(&o, err, sizeof err), 0);
        assert_victim_intact();
        assert_own_file(p, 0644);
    }
    /* an aborted file leaves nothing behind, not even its temporary */
    struct out_file o;
    assert_int_equal(out_file_begin(&o, test_tmpdir_path("aborted"), 0600, err, sizeof err), 0);
    out_file_abort(&o);
    struct stat st;
    assert_int_equal(lstat(test_tmpdir_path("aborted"), &st), -1);
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s/%s", test_tmpdir(), o.tmp);
    assert_int_equal(lstat(tmp, &st), -1);
}

static void test_open_refuses_links(void **state)
{
    (void)state;
    make_victim();
    char err[512];
    const char *p = test_tmpdir_path("dummy");
    plant(p, 0);
    assert_int_equal(out_file_open(p, O_RDWR, 0644, err, sizeof err), -1);
    assert_non_null(strstr(err, "symlink"));
    plant(p, 1);
    assert_int_equal(out_file_open(p, O_RDWR, 0644, err, sizeof err), -1);
    assert_non_null(strstr(err, "hard link"));
    assert_victim_intact();
    /* a FIFO: refused at once, not waited on */
    unlink(p);
    assert_int_equal(mkfifo(p, 0600), 0);
    assert_int_equal(out_file_open(p, O_WRONLY, 0644, err, sizeof err), -1);
    assert_non_null(strstr(err, "not a regular file"));
    /* missing: created; existing and ours: opened without truncation */
    unlink(p);
    int fd = out_file_open(p, O_RDWR, 0644, err, sizeof err);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "abc", 3), 3);
    close(fd);
    fd = out_file_open(p, O_WRONLY | O_APPEND, 0644, err, sizeof err);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "d", 1), 1);
    close(fd);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_size, 4);
}

static void test_directory_checks(void **state)
{
    (void)state;
    char err[512];
    const char *open_dir = test_tmpdir_path("world");
    mkdir(open_dir, 0755);
    assert_int_equal(chmod(open_dir, 0777), 0);
    char p[4096];
    snprintf(p, sizeof p, "%s/out", open_dir);
    assert_int_equal(out_file_create(p, O_WRONLY, 0600, err, sizeof err), -1);
    assert_non_null(strstr(err, "sticky"));
    assert_int_equal(out_file_check_dir(open_dir, err, sizeof err), -1);
    struct out_file o;
    assert_int_equal(out_file_begin(&o, p, 0600, err, sizeof err), -1);
    assert_int_equal(chmod(open_dir, 01777), 0); /* /tmp's kind: fine */
    assert_int_equal(out_file_check_dir(open_dir, err, sizeof err), 0);
    int fd = out_file_create(p, O_WRONLY, 0600, err, sizeof err);
    assert_true(fd >= 0);
    close(fd);

    const char *plain = test_tmpdir_path("plain");
    FILE *f = fopen(plain, "w");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(out_file_check_dir(plain, err, sizeof err), -1);
    assert_non_null(strstr(err, "not a directory"));
    assert_int_equal(out_file_check_dir(test_tmpdir_path("absent"), err, sizeof err), -1);
    assert_int_equal(out_file_create(test_tmpdir_path("x/"), O_WRONLY, 0600, err, sizeof err), -1);
    assert_non_null(strstr(err, "not a file name"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_replaces_links),
        cmocka_unit_test(test_commit_replaces_links),
        cmocka_unit_test(test_open_refuses_links),
        cmocka_unit_test(test_directory_checks),
    };
    return cmocka_run_group_tests(tests, test_tmpdir_setup, test_tmpdir_teardown);
}
