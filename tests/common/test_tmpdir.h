/* test_tmpdir.h - a per-run temporary directory for cmocka unit tests: made
 * by the group setup, removed with everything in it by the group teardown,
 * and paths inside it. Shared by the format, plan and compare unit tests so
 * none of them carries its own copy. Never touches anything outside the
 * directory it made. */
#ifndef TEST_TMPDIR_H
#define TEST_TMPDIR_H

/* cmocka group setup/teardown: make /tmp/preplay-test-XXXXXX, remove it. */
int test_tmpdir_setup(void **state);
int test_tmpdir_teardown(void **state);

/* The directory made by test_tmpdir_setup. */
const char *test_tmpdir(void);

/* DIR/name in one of 4 rotating static buffers (so a few can be held at
 * once, e.g. a source and a destination path). */
const char *test_tmpdir_path(const char *name);

#endif
