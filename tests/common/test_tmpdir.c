/* test_tmpdir.c - the unit tests' temporary directory (see test_tmpdir.h). */
#define _XOPEN_SOURCE 700
#include "test_tmpdir.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char test_tmpdir_name[256];

int test_tmpdir_setup(void **state)
{
    (void)state;
    snprintf(test_tmpdir_name, sizeof test_tmpdir_name, "/tmp/preplay-test-XXXXXX");
    return mkdtemp(test_tmpdir_name) ? 0 : -1;
}

static int test_tmpdir_remove_one(const char *path, const struct stat *st, int type,
                                  struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    return type == FTW_DP ? rmdir(path) : unlink(path);
}

int test_tmpdir_teardown(void **state)
{
    (void)state;
    if (!test_tmpdir_name[0])
        return 0;
    return nftw(test_tmpdir_name, test_tmpdir_remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

const char *test_tmpdir(void)
{
    return test_tmpdir_name;
}

const char *test_tmpdir_path(const char *name)
{
    static char buf[4][512];
    static int i;
    i = (i + 1) % 4;
    snprintf(buf[i], sizeof buf[i], "%s/%s", test_tmpdir_name, name);
    return buf[i];
}
